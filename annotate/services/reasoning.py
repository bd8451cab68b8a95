"""ReasonerRank inputs: structured answers parsed, normalised, embedded and ranked.

The ranking itself is :mod:`ranking.reasoner_rank` (arrays in, arrays out). This
module turns model outputs into those arrays:

- :func:`parse_response` splits a response to the paper's structured prompt
  (App. A.1.3, :data:`PROMPTS`) into its Answer, Reasoning steps, Supporting
  Evidence items and Conclusion;
- :func:`normalize_answer` makes answers comparable (an option letter for a
  multiple-choice question, a number for a numeric one, a canonical string
  otherwise);
- :func:`read_outputs` reads a JSON Lines file of ``{question_id, subset, model,
  text, [gold], [choices]}`` records, or lm-evaluation-harness ``--log_samples``
  files of generation tasks;
- :func:`score_outputs` computes each response's structure penalty, reasoning
  consistency (with an :class:`~annotate.services.text_encoders.Encoder`) and
  answer code;
- :func:`rank_outputs` runs ReasonerRank or a baseline and returns a JSON-ready
  document; :func:`compare_rankings` compares ranking files.

Every text from a file is data: it is parsed with line-anchored patterns (no
backtracking blow-up on long or hostile input), never evaluated, and names are
sanitised where they are printed.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from annotate.errors import AnnotateError, InputFileError
from annotate.names import one_line
from annotate.services.text_encoders import Encoder, block_similarities, default_encoder
from annotate.services.textfiles import describe, read_csv, read_jsonl, read_text

__all__ = [
    "METHODS",
    "PROMPTS",
    "TEMPLATES",
    "ModelOutputs",
    "ParsedResponse",
    "ScoredOutputs",
    "compare_rankings",
    "normalize_answer",
    "parse_response",
    "prompt_for",
    "rank_outputs",
    "read_outputs",
    "read_ranking_file",
    "response_penalty",
    "score_outputs",
    "study_outputs",
    "write_rank_outputs",
]

Template = Literal["fixed", "dynamic"]
TEMPLATES: tuple[Template, ...] = ("fixed", "dynamic")
METHODS = ("reasonerrank", "mca", "selfrank-gtr", "selfrank-ftr")
NO_CATEGORY = "(no category)"
"""The subset of an arena prompt without a category (``rank reasonerrank --study``)."""

FIXED_PROMPT = """\
You are tasked with answering a question and explaining your reasoning in a clear and logical \
format.

Use the following structure to organize your response:

1. Start with the direct answer.
2. Provide a step-by-step reasoning process that leads to your answer, and please limit your \
reasoning in 3 steps.
3. Support your reasoning with evidence, examples, or observations.

Here is the template you should follow:

Answer: [Provide the direct answer.]

Reasoning:

Step 1: [Explain the initial step or assumption.]

Step 2: [Show how this step connects to the next.]

Step 3: [Continue until the reasoning is complete.]

Supporting Evidence:

- [List relevant evidence, facts, or examples.]

Conclusion:

- [One sentence summary of your conclusion.]

Please respond to this question in the specified format: "<question>".

Response:
"""

DYNAMIC_PROMPT = """\
You are tasked with answering a question and explaining your reasoning in a clear and logical \
format.

Use the following structure to organize your response:

1. Start with the direct answer.
2. Provide a step-by-step reasoning process that leads to your answer.
3. Support your reasoning with evidence, examples, or observations.

Here is the template you should follow:

Answer: [Provide the direct answer.]

Reasoning:

- [List reasoning steps.]

Supporting Evidence:

- [List relevant evidence, facts, or examples.]

Conclusion:

- [One sentence summary of your conclusion.]

Please respond to this question in the specified format: "<question>".

Response:
"""

PROMPTS: dict[Template, str] = {"fixed": FIXED_PROMPT, "dynamic": DYNAMIC_PROMPT}
"""The paper's two prompts (App. A.1.3), verbatim; ``<question>`` marks the question."""

FIXED_STEPS = 3
"""Steps the fixed template asks for; only the first three count for consistency."""

_PLACEHOLDERS = {
    "provide the direct answer.",
    "explain the initial step or assumption.",
    "show how this step connects to the next.",
    "continue until the reasoning is complete.",
    "list reasoning steps.",
    "list relevant evidence, facts, or examples.",
    "one sentence summary of your conclusion.",
}
"""Template placeholders (without brackets): a part copied verbatim from the prompt is empty."""


def prompt_for(question: str, template: Template = "fixed") -> str:
    """The prompt to give a model for ``question`` (the paper's A.1.3 template).

    Examples
    --------
    >>> prompt_for("What is 2 + 2?").splitlines()[-3]
    'Please respond to this question in the specified format: "What is 2 + 2?".'
    """
    return PROMPTS[template].replace("<question>", question)


# ----------------------------------------------------------------------------
# parsing
# ----------------------------------------------------------------------------

_SECTION_NAMES = {
    "answer": "answer",
    "final answer": "answer",
    "direct answer": "answer",
    "reasoning": "reasoning",
    "reasoning steps": "reasoning",
    "supporting evidence": "evidence",
    "evidence": "evidence",
    "conclusion": "conclusion",
}
# A header line: optional Markdown decoration, a section name, then a colon with content
# after it, or nothing but decoration. Every quantifier is over a single character class
# with the next token disjoint from it, so matching is linear in the line length.
_HEADER = re.compile(
    r"[#>*_ \t]*(final answer|direct answer|answer|reasoning steps|reasoning|"
    r"supporting evidence|evidence|conclusion)[*_ \t]*(?:[:：](.*))?",
    re.IGNORECASE,
)
_HEADER_START = ("ans", "fin", "dir", "rea", "sup", "evi", "con")
"""First letters of a header: other lines skip the pattern (most lines are not headers)."""
_STEP_MARK = re.compile(
    r"(?:step[ \t]*\d{1,4}[ \t]*[:.)\-–—]?|[-*•+][ \t]|\d{1,4}[.)](?:[ \t]|$))(.*)", re.IGNORECASE
)
_ITEM_MARK = re.compile(r"(?:[-*•+][ \t]|\d{1,4}[.)](?:[ \t]|$))(.*)")
_BULLET = re.compile(r"^[-*•+][ \t]+")
_EMPHASIS = re.compile(r"\*\*")


@dataclass(frozen=True)
class ParsedResponse:
    """The four parts of a structured response; empty strings / tuples where missing."""

    answer: str
    """The Answer section's text (lines joined by spaces, bullets and emphasis removed)."""
    steps: tuple[str, ...]
    """Non-empty reasoning steps, in order."""
    evidence: tuple[str, ...]
    """Non-empty supporting-evidence items, in order."""
    conclusion: str
    """The Conclusion section's text."""


def _clean(text: str) -> str:
    """Bold marks (``**``) removed, whitespace collapsed, a copied placeholder made empty."""
    t = " ".join(_EMPHASIS.sub("", text).split())
    inner = t.removeprefix("[").removesuffix("]")
    if t.startswith("[") and t.endswith("]") and inner.casefold() in _PLACEHOLDERS:
        return ""
    return t


def _split_items(lines: list[str], marker: re.Pattern[str]) -> list[str]:
    """Items of a section: each marked line starts one, unmarked lines continue it.

    Text before the first marker is ignored when there are markers; without any
    marker, each paragraph (lines separated by a blank line) is an item.
    """
    items: list[list[str]] = []
    marked = False
    for raw in lines:
        line = _EMPHASIS.sub("", raw).strip()
        m = marker.fullmatch(line) if line else None
        if m is not None:
            marked = True
            items.append([m.group(1)])
        elif marked and line:
            items[-1].append(line)
    if not marked:
        items = []
        current: list[str] = []
        for raw in lines:
            if raw.strip():
                current.append(raw)
            elif current:
                items.append(current)
                current = []
        if current:
            items.append(current)
    return [" ".join(parts) for parts in items]


def parse_response(text: str) -> ParsedResponse:
    """Split a response to the structured prompt into its parts.

    A section starts at a line holding its header (``Answer:``, ``Reasoning:``,
    ``Supporting Evidence:``, ``Conclusion:``; case-insensitive, Markdown
    decoration such as ``**Answer:**`` or ``## Reasoning`` allowed; ``Final
    answer`` and ``Evidence`` are accepted too) and runs to the next header.
    Only the first header of each section counts; a repeated one is text of the
    section it appears in. Text after a header on the same line belongs to the
    section. Reasoning steps start at ``Step N:``, a bullet (``-``, ``*``,
    ``•``, ``+``) or a number (``1.``, ``1)``); evidence items at a bullet or a
    number; lines without a marker continue the item above. A section without
    any marker has one item per paragraph. An unparseable or missing section is
    empty, and a part that only repeats the template's placeholder is empty.

    Parameters
    ----------
    text : str
        The model's whole response, treated as literal data.

    Returns
    -------
    ParsedResponse

    Examples
    --------
    >>> p = parse_response("Answer: B\\nReasoning:\\nStep 1: x\\nStep 2: y\\n"
    ...                    "Supporting Evidence:\\n- e1\\nConclusion:\\n- so B")
    >>> p.answer, p.steps, p.evidence, p.conclusion
    ('B', ('x', 'y'), ('e1',), 'so B')
    """
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        stripped = raw.strip()
        m = None
        if stripped.lstrip("#>*_ \t")[:3].casefold() in _HEADER_START:
            m = _HEADER.fullmatch(stripped)
        name: str | None = None
        rest = ""
        if m is not None:
            name = _SECTION_NAMES[m.group(1).casefold()]
            rest = m.group(2) or ""
        if name is not None and name not in sections:
            current = sections[name] = []
            rest = rest.strip().strip("*_").strip()
            if rest:
                current.append(rest)
            continue
        if current is not None:
            current.append(raw)

    def whole(name: str) -> str:
        lines = [ln.strip() for ln in sections.get(name, []) if ln.strip()]
        # a one-item bulleted section ("- B"): drop the bullet
        lines = [_BULLET.sub("", ln, count=1) for ln in lines]
        return _clean(" ".join(lines))

    steps = tuple(
        s for s in (_clean(x) for x in _split_items(sections.get("reasoning", []), _STEP_MARK)) if s
    )
    evidence = tuple(
        s for s in (_clean(x) for x in _split_items(sections.get("evidence", []), _ITEM_MARK)) if s
    )
    return ParsedResponse(
        answer=whole("answer"), steps=steps, evidence=evidence, conclusion=whole("conclusion")
    )


def response_penalty(parsed: ParsedResponse) -> float:
    """The structure penalty of one parsed response (paper sec. 3.1.1).

    Examples
    --------
    >>> response_penalty(ParsedResponse("B", ("x",), (), "so B"))
    5.0
    """
    from ranking.reasoner_rank import structure_penalty

    return float(
        structure_penalty(
            bool(parsed.answer), bool(parsed.conclusion), len(parsed.steps), len(parsed.evidence)
        )
    )


# ----------------------------------------------------------------------------
# answer normalisation
# ----------------------------------------------------------------------------

_NUMBER = re.compile(
    r"(?<![\w.])[-−]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])"  # 1,234.5
    r"|(?<![\w.])[-−]?\d+(?:\.\d+)?(?:[ \t]*/[ \t]*\d+)?"  # 18, 0.75, 3/4
)
_LETTER_FORMS = (
    re.compile(r"\(?([A-Z])\)?(?:[.):]|$)(?:.*)", re.S),  # "B", "B.", "(B)", "B) text"
    re.compile(r"\(([a-z])\)(?:.*)", re.S),  # "(b) text"
    re.compile(r"([a-z])(?:[.)])?", re.S),  # "b" or "b." alone
    re.compile(r"(?:option|choice|the answer is)[ \t]*\(?([A-Za-z])\)?(?:\W.*)?", re.S | re.I),
)
_LEAD = re.compile(r"(?:the[ \t]+)?(?:final[ \t]+)?answer[ \t]+is[ \t]*:?[ \t]*", re.I)


def _canonical_text(text: str) -> str:
    quotes = " \t\"'“”‘’"
    t = unicodedata.normalize("NFKC", text).casefold()
    t = " ".join(re.sub(r"[*`]", "", t).split()).strip(quotes)
    t = _LEAD.sub("", t, count=1) if _LEAD.match(t) else t
    return t.strip(quotes).rstrip(".!;:,").strip(quotes)


def _number(text: str) -> str | None:
    """The answer's number as a canonical decimal string, or None.

    With an ``=`` the number after the last ``=`` counts ("7 x 3 = 21"),
    otherwise the first number ("18 dollars").
    """
    t = unicodedata.normalize("NFKC", text).replace("−", "-")
    if "=" in t:
        t = t.rsplit("=", 1)[1]
    m = _NUMBER.search(t)
    if m is None:
        return None
    raw = m.group(0).replace(",", "").replace(" ", "").replace("\t", "")
    try:
        if "/" in raw:
            num, den = raw.split("/", 1)
            d = Decimal(den)
            if d == 0:
                return None
            value = Decimal(num) / d
        else:
            value = Decimal(raw)
    except InvalidOperation:
        return None
    value = round(value, 9).normalize()
    return format(value, "f") if value != 0 else "0"


def _letter(text: str, choices: Sequence[str]) -> str | None:
    t = unicodedata.normalize("NFKC", _EMPHASIS.sub("", text)).strip()
    n = len(choices)
    for form in _LETTER_FORMS:
        m = form.fullmatch(t)
        if m is not None:
            letter = m.group(1).upper()
            if ord(letter) - ord("A") < n:
                return letter
    canon = _canonical_text(t)
    opts = [_canonical_text(c) for c in choices]
    for i, c in enumerate(opts):
        if c and canon == c:
            return chr(ord("A") + i)
    contained = [
        i for i, c in enumerate(opts) if c and re.search(rf"(?<!\w){re.escape(c)}(?!\w)", canon)
    ]
    if len(contained) == 1:
        return chr(ord("A") + contained[0])
    return None


def normalize_answer(
    answer: str,
    *,
    choices: Sequence[str] | None = None,
    kind: Literal["choice", "number", "text"] | None = None,
) -> str:
    """A comparable form of an answer: option letter, number or canonical string.

    - **choice** (``choices`` given): the option letter, from ``B``, ``B.``,
      ``(B)``, ``B) text``, ``Option B``, ``The answer is B``, or from the
      option's text (equal to one option, or naming exactly one); otherwise
      the canonical string.
    - **number**: the number after the last ``=``, else the first number;
      thousands separators dropped, ``3/4`` -> ``0.75``, rounded to 9 decimals
      and written without trailing zeros (``18.0`` -> ``18``); otherwise the
      canonical string.
    - **text**: NFKC, case-folded, emphasis marks and surrounding quotes
      removed, whitespace collapsed, a leading "the answer is" and trailing
      ``.!;:,`` dropped.

    An empty answer stays empty (no answer).

    Parameters
    ----------
    answer : str
        The parsed Answer section.
    choices : sequence of str, optional
        The options of a multiple-choice question, in letter order (A, B, ...).
    kind : {"choice", "number", "text"}, optional
        Force a kind; by default ``choice`` with choices, else ``text``.

    Returns
    -------
    str

    Examples
    --------
    >>> normalize_answer("(c) Paris", choices=["Rome", "Oslo", "Paris"])
    'C'
    >>> normalize_answer("Janet makes $1,234.50 a day", kind="number")
    '1234.5'
    >>> normalize_answer('  "The answer is  Blue whale." ')
    'blue whale'
    """
    if not answer.strip():
        return ""
    k = kind or ("choice" if choices else "text")
    if k == "choice" and choices:
        letter = _letter(answer, choices)
        if letter is not None:
            return letter
    elif k == "number":
        num = _number(answer)
        if num is not None:
            return num
    return _canonical_text(answer)


# ----------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------


@dataclass
class ModelOutputs:
    """Model responses to a set of questions, grouped into subsets."""

    models: list[str]
    """Model names, in first-seen order."""
    questions: list[str]
    """Question ids, in first-seen order."""
    subsets: list[str]
    """Subset of each question (parallel to ``questions``)."""
    texts: dict[tuple[int, int], str]
    """(model index, question index) -> response text; a missing pair is no response."""
    gold: dict[int, str] = field(default_factory=dict)
    """Question index -> gold answer (used only for the evaluation target, never to rank)."""
    choices: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Question index -> options of a multiple-choice question."""
    source: str = ""
    """Where the outputs came from (file names), for the output document."""
    notes: list[str] = field(default_factory=list)
    """Remarks on how the outputs were read, printed with the results."""


_FIELDS_REQUIRED = ("question_id", "subset", "model", "text")
_FIELDS_OPTIONAL = ("gold", "choices")


def _id_field(path: Path, line: int, rec: dict[str, Any], name: str) -> str:
    v = rec.get(name)
    allowed = str | int if name == "question_id" else str
    if isinstance(v, bool) or not isinstance(v, allowed) or (isinstance(v, str) and not v.strip()):
        raise InputFileError(
            path,
            describe(v) if name in rec else "missing",
            line=line,
            field=name,
            expected="a non-empty string" + (" or an integer" if name == "question_id" else ""),
        )
    return str(v)


def _read_jsonl_outputs(path: Path, out: ModelOutputs, index: dict[str, dict[str, int]]) -> None:
    seen: dict[tuple[int, int], int] = {}
    for line, rec in read_jsonl(path):
        extra = [k for k in rec if k not in _FIELDS_REQUIRED + _FIELDS_OPTIONAL]
        if extra:
            raise InputFileError(
                path,
                "unknown field",
                line=line,
                field=one_line(extra[0])[:60],
                expected="only " + ", ".join(_FIELDS_REQUIRED + _FIELDS_OPTIONAL),
            )
        qid = _id_field(path, line, rec, "question_id")
        subset = _id_field(path, line, rec, "subset")
        model = _id_field(path, line, rec, "model")
        if "text" not in rec or not isinstance(rec["text"], str):
            raise InputFileError(
                path,
                describe(rec["text"]) if "text" in rec else "missing",
                line=line,
                field="text",
                expected="the model's response as a string (may be empty)",
            )
        gold = rec.get("gold")
        if gold is not None and (isinstance(gold, bool) or not isinstance(gold, str | int | float)):
            raise InputFileError(
                path, describe(gold), line=line, field="gold", expected="a string or a number"
            )
        if isinstance(gold, float) and not math.isfinite(gold):
            raise InputFileError(
                path, describe(gold), line=line, field="gold", expected="a finite number"
            )
        choices = rec.get("choices")
        if choices is not None and (
            not isinstance(choices, list)
            or not 2 <= len(choices) <= 26
            or not all(isinstance(c, str) for c in choices)
        ):
            raise InputFileError(
                path,
                describe(choices),
                line=line,
                field="choices",
                expected="a list of 2 to 26 option strings (lettered A, B, ...)",
            )
        m = index["model"].setdefault(model, len(out.models))
        if m == len(out.models):
            out.models.append(model)
        q = index["question"].setdefault(qid, len(out.questions))
        if q == len(out.questions):
            out.questions.append(qid)
            out.subsets.append(subset)
        elif out.subsets[q] != subset:
            raise InputFileError(
                path,
                f"question {one_line(qid)[:60]!r} is in subset {one_line(out.subsets[q])[:60]!r} "
                "on an earlier line",
                line=line,
                field="subset",
                expected="one subset per question",
            )
        if (m, q) in seen:
            raise InputFileError(
                path,
                f"a second response of model {one_line(model)[:60]!r} to question "
                f"{one_line(qid)[:60]!r} (first on line {seen[(m, q)]})",
                line=line,
                field="question_id",
                expected="one response per model and question",
            )
        seen[(m, q)] = line
        out.texts[(m, q)] = rec["text"]
        if gold is not None:
            g = str(gold)
            if q in out.gold and out.gold[q] != g:
                raise InputFileError(
                    path,
                    f"gold {one_line(g)[:60]!r} differs from {one_line(out.gold[q])[:60]!r} "
                    "given on an earlier line",
                    line=line,
                    field="gold",
                    expected="one gold answer per question",
                )
            out.gold[q] = g
        if choices is not None:
            c = tuple(choices)
            if q in out.choices and out.choices[q] != c:
                raise InputFileError(
                    path,
                    "choices differ from those given on an earlier line",
                    line=line,
                    field="choices",
                    expected="the same options for every response to a question",
                )
            out.choices[q] = c


def _harness_text(resps: Any) -> str | None:
    """The first generated string of a harness sample's ``resps`` (nested lists)."""
    v = resps
    while isinstance(v, list) and v:
        v = v[0]
    return v if isinstance(v, str) else None


def _read_harness_outputs(
    path: Path, out: ModelOutputs, index: dict[str, dict[str, int]], model: str | None
) -> None:
    from annotate.services.formats import HARNESS_FILE, _doc_text, harness_files

    for f in harness_files(path):
        m_ = HARNESS_FILE.match(f.name)
        task = m_.group("task") if m_ else f.stem.removeprefix("samples_")
        mdl = model or f.parent.name
        mi = index["model"].setdefault(mdl, len(out.models))
        if mi == len(out.models):
            out.models.append(mdl)
        first_filter: str | None = None
        for line, rec in read_jsonl(f):
            for req in ("doc_id", "doc", "resps"):
                if req not in rec:
                    raise InputFileError(
                        f,
                        "missing",
                        line=line,
                        field=req,
                        expected="an lm-evaluation-harness --log_samples record (doc_id, doc, "
                        "resps, ...)",
                    )
            flt = rec.get("filter", "none")
            first_filter = flt if first_filter is None else first_filter
            if flt != first_filter:
                continue  # the same generation logged again under another filter
            text = _harness_text(rec["resps"])
            if text is None:
                text = _harness_text(rec.get("filtered_resps"))
            if text is None:
                raise InputFileError(
                    f,
                    describe(rec["resps"]),
                    line=line,
                    field="resps",
                    expected="generated text (a generation task run with --log_samples)",
                )
            if isinstance(rec["doc_id"], dict | list):
                raise InputFileError(
                    f, describe(rec["doc_id"]), line=line, field="doc_id", expected="an id"
                )
            qid = f"{task}/{rec['doc_id']}"
            qi = index["question"].setdefault(qid, len(out.questions))
            if qi == len(out.questions):
                out.questions.append(qid)
                out.subsets.append(task)
            if (mi, qi) in out.texts:
                raise InputFileError(
                    f,
                    f"a second sample for {one_line(qid)[:80]} of model {one_line(mdl)[:60]!r}",
                    line=line,
                    field="doc_id",
                    expected="one sample per document and model",
                )
            out.texts[(mi, qi)] = text
            target = rec.get("target")
            if isinstance(target, str | int | float) and not isinstance(target, bool):
                out.gold.setdefault(qi, str(target))
            try:
                _text, choices = _doc_text(rec["doc"])
            except RecursionError:
                raise InputFileError(
                    f, "nested too deeply", line=line, field="doc", expected="a JSON object"
                ) from None
            if choices and 2 <= len(choices) <= 26:
                out.choices.setdefault(qi, choices)


def read_outputs(paths: Sequence[Path], *, model: str | None = None) -> ModelOutputs:
    """Read model outputs from JSON Lines files and lm-evaluation-harness logs.

    A ``.jsonl`` file whose first record has ``question_id`` and ``text`` is the
    project's format, one record per response::

        {"question_id": "q1", "subset": "algebra", "model": "m", "text": "Answer: ...",
         "gold": "12", "choices": ["10", "12", "14"]}

    (``gold`` and ``choices`` optional). A folder, or a ``samples_*.jsonl`` file,
    is read as lm-evaluation-harness ``--log_samples`` output: the text is the
    first generation in ``resps`` (``filtered_resps`` if ``resps`` holds none),
    the task is the subset, ``target`` the gold answer and the model the name of
    the folder holding the file (or ``model``).

    Raises
    ------
    InputFileError
        One line naming the file, the line, the field and what was expected.
    """
    out = ModelOutputs(models=[], questions=[], subsets=[], texts={})
    index: dict[str, dict[str, int]] = {"model": {}, "question": {}}
    for p in paths:
        if p.is_dir() or p.name.startswith("samples_"):
            _read_harness_outputs(p, out, index, model)
            continue
        first = _first_record(p)
        if "question_id" in first or "text" in first or "resps" not in first:
            _read_jsonl_outputs(p, out, index)
        else:
            _read_harness_outputs(p, out, index, model)
    if len(out.models) < 2:
        raise InputFileError(
            ", ".join(str(p) for p in paths),
            f"responses of {len(out.models)} model(s)",
            expected="responses of at least 2 models to the same questions",
        )
    out.source = ", ".join(p.name for p in paths)
    return out


def study_outputs(engine: Any, study: str, *, one_subset: bool = False) -> ModelOutputs:
    """The model responses of an arena study in the database, as ReasonerRank outputs.

    Every prompt is a question (its key in the study file). The subsets are the
    prompts' categories (a prompt without one is in ``(no category)``); when no
    prompt has a category, or with ``one_subset``, the whole study is one subset.
    There are no gold answers. The ranking is meaningful when the responses were
    written to the structured prompt (:data:`PROMPTS`); free-form arena answers score
    the full structure penalty.

    Raises
    ------
    StudyNotFoundError
        If there is no such study.
    AnnotateError
        If the study is not an arena study, or holds no response texts.
    """
    from sqlmodel import Session

    from annotate.errors import StudyNotFoundError
    from annotate.store import repo

    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None:
            raise StudyNotFoundError(study, repo.study_names(s))
        if st.kind != "arena":
            raise AnnotateError(
                f"study {one_line(study)!r} is a {st.kind} study; rank reasonerrank --study "
                "needs an arena study (the responses of its models)"
            )
        contents = repo.study_contents(s, st.id)
    if not contents.responses:
        raise AnnotateError(
            f"arena study {one_line(study)!r} holds no response texts (battle records only)"
        )
    category = {key: cat for key, _text, cat in contents.prompts}
    by_category = not one_subset and any(category.values())
    out = ModelOutputs(models=[], questions=[], subsets=[], texts={}, source=f"study {study}")
    models: dict[str, int] = {}
    prompts: dict[str, int] = {}
    for prompt, model, body in contents.responses:
        m = models.setdefault(model, len(out.models))
        if m == len(out.models):
            out.models.append(model)
        q = prompts.setdefault(prompt, len(out.questions))
        if q == len(out.questions):
            out.questions.append(prompt)
            out.subsets.append((category.get(prompt) or NO_CATEGORY) if by_category else study)
        out.texts[(m, q)] = body
    if len(out.models) < 2:
        raise AnnotateError(f"arena study {one_line(study)!r} has responses of one model only")
    if by_category:
        n_sub = len(set(out.subsets))
        out.notes.append(
            f"subsets: the prompts' {n_sub} categories (--one-subset ranks the study as one)"
        )
    return out


def _first_record(path: Path) -> dict[str, Any]:
    for _line, rec in read_jsonl(path):
        return rec
    raise InputFileError(path, "no records", expected="one JSON object per line")


# ----------------------------------------------------------------------------
# scoring
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoredOutputs:
    """Per-response arrays, shape (n_models, n_questions)."""

    outputs: ModelOutputs
    answers: npt.NDArray[np.int64]
    """Answer codes per question (equal codes: equal normalised answers), -1 for none."""
    answer_text: list[list[str]]
    """Per question, the normalised answer of each code (``answer_text[q][code]``)."""
    penalty: npt.NDArray[np.float64]
    c_reason: npt.NDArray[np.float64]
    c_evid: npt.NDArray[np.float64]
    kinds: list[str]
    """Per question: ``choice``, ``number`` or ``text``."""
    template: Template
    encoder: str

    @property
    def quality(self) -> npt.NDArray[np.float64]:
        """``Q = C_reason + C_evid - P`` per response."""
        return self.c_reason + self.c_evid - self.penalty


def _question_kind(answers: Iterable[str], choices: tuple[str, ...] | None) -> str:
    """``choice`` with options; ``number`` when at least half the answers hold a number."""
    if choices:
        return "choice"
    given = [a for a in answers if a]
    with_number = sum(1 for a in given if _NUMBER.search(a) is not None)
    return "number" if given and 2 * with_number >= len(given) else "text"


def score_outputs(
    outputs: ModelOutputs,
    *,
    template: Template = "fixed",
    encoder: Encoder | None = None,
    chunk: int = 2048,
) -> ScoredOutputs:
    """Parse, normalise and embed every response.

    A missing response counts as an empty one (penalty 8, no answer). With the
    fixed template only the first three non-empty steps enter the consistency
    (the prompt limits reasoning to three steps); the dynamic template uses all.
    The gold answers are not used.

    Parameters
    ----------
    outputs : ModelOutputs
    template : {"fixed", "dynamic"}, default "fixed"
    encoder : Encoder, optional
        Default: :func:`~annotate.services.text_encoders.default_encoder` fitted
        on the step and evidence texts.
    chunk : int, default 2048
        Responses embedded at a time.

    Returns
    -------
    ScoredOutputs
    """
    from ranking.reasoner_rank import batch_consistency_from_similarity, structure_penalty

    if template not in TEMPLATES:
        raise AnnotateError(f"unknown template {template!r}; use one of {', '.join(TEMPLATES)}")
    n_m, n_q = len(outputs.models), len(outputs.questions)
    cap = FIXED_STEPS if template == "fixed" else None
    keys = sorted(outputs.texts)
    if encoder is None:
        # IDF from an evenly spaced sample of responses (deterministic)
        stride = max(1, len(keys) // 3000)
        corpus: list[str] = []
        for k in keys[::stride]:
            p = parse_response(outputs.texts[k])
            corpus += [*p.steps[:cap], *p.evidence]
        encoder = default_encoder(corpus)
    has_answer = np.zeros((n_m, n_q), dtype=bool)
    has_concl = np.zeros((n_m, n_q), dtype=bool)
    n_steps = np.zeros((n_m, n_q), dtype=np.int64)
    n_evid = np.zeros((n_m, n_q), dtype=np.int64)
    raw_answer: dict[tuple[int, int], str] = {}
    c_reason = np.zeros((n_m, n_q))
    c_evid = np.zeros((n_m, n_q))
    # parsed and embedded in chunks of responses: only one chunk's parts are held at once
    for lo in range(0, len(keys), chunk):
        block = keys[lo : lo + chunk]
        parsed = [parse_response(outputs.texts[k]) for k in block]
        steps_of = [p.steps[:cap] for p in parsed]
        max_s = max(1, max(len(st) for st in steps_of))
        max_e = max(1, max(len(p.evidence) for p in parsed))
        texts: list[str] = []
        blk: list[int] = []
        slots: list[int] = []
        sm = np.zeros((len(block), max_s), dtype=bool)
        em = np.zeros((len(block), max_e), dtype=bool)
        for i, ((m, q), p, st) in enumerate(zip(block, parsed, steps_of, strict=True)):
            has_answer[m, q] = bool(p.answer)
            has_concl[m, q] = bool(p.conclusion)
            n_steps[m, q] = len(p.steps)
            n_evid[m, q] = len(p.evidence)
            if p.answer:
                raw_answer[(m, q)] = p.answer
            texts += st
            texts += p.evidence
            blk += [i] * (len(st) + len(p.evidence))
            slots += [*range(len(st)), *range(max_s, max_s + len(p.evidence))]
            sm[i, : len(st)] = True
            em[i, : len(p.evidence)] = True
        sim = block_similarities(
            encoder,
            texts,
            np.asarray(blk, dtype=np.int64),
            np.asarray(slots, dtype=np.int64),
            len(block),
            max_s + max_e,
        )
        cr, ce = batch_consistency_from_similarity(
            sim[:, :max_s, :max_s], sim[:, :max_s, max_s:], sm, em
        )
        rows = np.asarray([k[0] for k in block])
        cols = np.asarray([k[1] for k in block])
        c_reason[rows, cols] = cr
        c_evid[rows, cols] = ce
    penalty = structure_penalty(has_answer, has_concl, n_steps, n_evid)

    # answers: one code per distinct normalised answer, per question
    codes = np.full((n_m, n_q), -1, dtype=np.int64)
    texts_by_q: list[list[str]] = []
    kinds: list[str] = []
    for q in range(n_q):
        raw = [raw_answer.get((m, q), "") for m in range(n_m)]
        choices = outputs.choices.get(q)
        kind = _question_kind(raw, choices)
        kinds.append(kind)
        table: dict[str, int] = {}
        for m, a in enumerate(raw):
            norm = normalize_answer(a, choices=choices, kind=kind)  # type: ignore[arg-type]
            if norm:
                codes[m, q] = table.setdefault(norm, len(table))
        texts_by_q.append(list(table))
    return ScoredOutputs(
        outputs=outputs,
        answers=codes,
        answer_text=texts_by_q,
        penalty=penalty,
        c_reason=c_reason,
        c_evid=c_evid,
        kinds=kinds,
        template=template,
        encoder=encoder.name,
    )


# ----------------------------------------------------------------------------
# ranking
# ----------------------------------------------------------------------------


def _accuracy(scored: ScoredOutputs) -> npt.NDArray[np.float64] | None:
    """Correct (1) / wrong (0) per response against the gold answers; NaN without gold."""
    out = scored.outputs
    if not out.gold:
        return None
    n_m, n_q = scored.answers.shape
    correct = np.full((n_m, n_q), np.nan)
    for q, g in out.gold.items():
        kind = scored.kinds[q]
        norm = normalize_answer(g, choices=out.choices.get(q), kind=kind)  # type: ignore[arg-type]
        table = scored.answer_text[q]
        code = table.index(norm) if norm in table else -2
        correct[:, q] = scored.answers[:, q] == code
    return correct


def _evaluation(
    orders: npt.NDArray[np.int64],
    order: npt.NDArray[np.int64],
    acc_subset: npt.NDArray[np.float64],
    acc_order: npt.NDArray[np.int64],
    k: int,
) -> dict[str, Any]:
    from ranking.rank_metrics import average_overlap, rbo_weighted, set_precision_at_k

    kk = min(k, order.size)
    graded = [s for s in range(orders.shape[0]) if not np.isnan(acc_subset[s]).all()]
    per_rbo = [average_overlap(orders[s], _target(acc_subset[s])) for s in graded]
    per_sp = [set_precision_at_k(orders[s], _target(acc_subset[s]), k=kk) for s in graded]
    return {
        "rbo": float(np.mean(per_rbo)),
        "sp_at_k": float(np.mean(per_sp)),
        "subsets_with_gold": len(graded),
        "overall_rbo": average_overlap(order, acc_order),
        "overall_rbo_weighted": rbo_weighted(order, acc_order),
        "overall_sp_at_k": set_precision_at_k(order, acc_order, k=kk),
    }


def _target(acc: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    from ranking.rank_metrics import ordering

    return ordering(np.nan_to_num(acc, nan=-1.0))


def rank_outputs(
    scored: ScoredOutputs,
    *,
    method: str = "reasonerrank",
    k: int | None = None,
    seed: int = 0,
    sp_k: int = 3,
) -> dict[str, Any]:
    """Rank the models of ``scored`` with ReasonerRank or a baseline; a JSON-ready document.

    Parameters
    ----------
    scored : ScoredOutputs
    method : {"reasonerrank", "mca", "selfrank-gtr", "selfrank-ftr"}
    k : int, optional
        ReasonerRank's K (default 4 with at most 10 models, else 6).
    seed : int, default 0
        Seed of SelfRank-GTR's visiting order and judge.
    sp_k : int, default 3
        Depth of SP@K in the evaluation against the gold answers.

    Returns
    -------
    dict
        ``{"method", "k", "template", "encoder", "models": [{"model", "score",
        "initial_rank", "rank", "penalty", "consistency", ...}], "subsets":
        [{"subset", "questions", "models": [...]}], "evaluation", "notes", ...}``;
        models best first. ``evaluation`` compares the ranking with the accuracy
        order on the gold answers (per subset, then averaged, as the paper does)
        and is null without gold answers.
    """
    from ranking.rank_metrics import ordering, random_expectation
    from ranking.reasoner_rank import (
        ReasonerRankResult,
        SubsetRankingResult,
        default_k,
        mca,
        reasoner_rank,
        selfrank_ftr,
        selfrank_gtr,
    )

    if method not in METHODS:
        raise AnnotateError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    out = scored.outputs
    n_m, n_q = scored.answers.shape
    names = sorted(set(out.subsets))
    sub_idx = np.asarray([names.index(s) for s in out.subsets], dtype=np.int64)
    notes: list[str] = list(out.notes)
    initial: ReasonerRankResult | None = None
    if method == "reasonerrank":
        kk = default_k(n_m) if k is None else k
        if not 1 <= kk <= n_m:
            raise AnnotateError(f"--k {kk} is outside 1..{n_m} (the number of models)")
        initial = reasoner_rank(scored.answers, scored.quality, subsets=sub_idx, k=kk)
        result: SubsetRankingResult = initial
    elif method == "mca":
        result = mca(scored.answers, subsets=sub_idx)
    else:
        if n_m < 3:
            raise AnnotateError(f"{method} needs at least 3 models, the outputs have {n_m}")
        if method == "selfrank-gtr":
            result = selfrank_gtr(scored.answers, subsets=sub_idx, rng=seed)
        else:
            result = selfrank_ftr(scored.answers, subsets=sub_idx)
    position = np.empty(n_m, dtype=np.int64)
    position[result.order] = np.arange(1, n_m + 1)
    init_pos = np.empty(n_m, dtype=np.int64)
    if initial is not None:
        init_pos[initial.initial_order] = np.arange(1, n_m + 1)
    correct = _accuracy(scored)
    acc_subset: npt.NDArray[np.float64] | None = None
    if correct is not None:
        acc_subset = np.stack(
            [
                np.nanmean(correct[:, sub_idx == s], axis=1)
                if np.any(~np.isnan(correct[:, sub_idx == s]))
                else np.full(n_m, np.nan)
                for s in range(len(names))
            ]
        )
    answered = (scored.answers >= 0).sum(axis=1)
    models = []
    for m in result.order:
        row: dict[str, Any] = {
            "model": out.models[m],
            "score": float(result.scores[m]),
            "initial_rank": int(init_pos[m]) if initial is not None else None,
            "rank": int(position[m]),
            "initial_score": float(initial.initial_scores[m]) if initial is not None else None,
            "penalty": float(scored.penalty[m].mean()),
            "consistency": float((scored.c_reason[m] + scored.c_evid[m]).mean()),
            "c_reason": float(scored.c_reason[m].mean()),
            "c_evid": float(scored.c_evid[m].mean()),
            "answered": int(answered[m]),
        }
        if acc_subset is not None:
            row["accuracy"] = float(np.nanmean(acc_subset[:, m]))
        models.append(row)
    subsets = []
    for s, name in enumerate(names):
        sp = np.empty(n_m, dtype=np.int64)
        sp[result.subset_orders[s]] = np.arange(1, n_m + 1)
        ip = np.empty(n_m, dtype=np.int64)
        if initial is not None:
            ip[initial.subset_initial_orders[s]] = np.arange(1, n_m + 1)
        subsets.append(
            {
                "subset": name,
                "questions": int((sub_idx == s).sum()),
                "models": [
                    {
                        "model": out.models[m],
                        "rank": int(sp[m]),
                        "score": float(result.subset_scores[s, m]),
                        "initial_rank": int(ip[m]) if initial is not None else None,
                        "initial_score": float(initial.subset_initial_scores[s, m])
                        if initial is not None
                        else None,
                        "accuracy": float(acc_subset[s, m]) if acc_subset is not None else None,
                    }
                    for m in result.subset_orders[s]
                ],
            }
        )
    evaluation: dict[str, Any] | None = None
    if acc_subset is not None:
        if np.isnan(acc_subset).any():
            notes.append("some subsets have no gold answers: they are left out of the evaluation")
        acc_order = ordering(np.nan_to_num(np.nanmean(acc_subset, axis=0), nan=-1.0))
        evaluation = {
            "target": "accuracy on the gold answers (never used by the method)",
            "k": min(sp_k, n_m),
            **_evaluation(result.subset_orders, result.order, acc_subset, acc_order, sp_k),
            "random_expectation": random_expectation(n_m, k=min(sp_k, n_m)),
        }
        if initial is not None:
            evaluation["initial"] = _evaluation(
                initial.subset_initial_orders, initial.initial_order, acc_subset, acc_order, sp_k
            )
    missing = n_m * n_q - len(out.texts)
    if missing:
        notes.append(f"{missing} missing responses count as empty ones (penalty 8, no answer)")
    no_consensus = int((initial.consensus < 0).sum()) if initial is not None else 0
    if no_consensus:
        notes.append(f"{no_consensus} questions had no answer among the top K and were left out")
    return {
        "method": method,
        "k": initial.k if initial is not None else None,
        "template": scored.template,
        "encoder": scored.encoder,
        "source": out.source,
        "questions": n_q,
        "responses": len(out.texts),
        "models": models,
        "subsets": subsets,
        "evaluation": evaluation,
        "notes": notes,
    }


def write_rank_outputs(doc: dict[str, Any], folder: Path) -> list[Path]:
    """Write ``<method>_models.csv`` and ``<method>_subsets.csv`` under ``folder``.

    ``<method>_models.csv`` has ``rank, model, score`` first (the columns
    ``annotate compare`` reads) and then the ReasonerRank parts;
    ``<method>_subsets.csv`` holds one row per subset and model.
    """
    from annotate.services.paths import inside, output_folder
    from annotate.services.report_files import write_csv

    folder = output_folder(folder)
    method = doc["method"]
    cols = [
        "rank",
        "model",
        "score",
        "initial_rank",
        "initial_score",
        "penalty",
        "consistency",
        "c_reason",
        "c_evid",
        "answered",
        "accuracy",
    ]
    rows = [[_cell(r.get(c)) for c in cols] for r in doc["models"]]
    sub_cols = ["subset", "rank", "model", "score", "initial_rank", "initial_score", "accuracy"]
    sub_rows = [
        [_cell(s["subset"])] + [_cell(r.get(c)) for c in sub_cols[1:]]
        for s in doc["subsets"]
        for r in s["models"]
    ]
    return [
        write_csv(inside(folder, f"{method}_models.csv"), cols, rows),
        write_csv(inside(folder, f"{method}_subsets.csv"), sub_cols, sub_rows),
    ]


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


# ----------------------------------------------------------------------------
# comparing ranking files
# ----------------------------------------------------------------------------

SCORE_KEYS = ("score", "rating", "ability", "accuracy", "difficulty", "human_difficulty")
"""Columns / keys read as a higher-is-better score, in this order; else ``rank`` (lower better)."""

ITEM_KEYS = ("model", "question")
"""The column naming what is ranked: models (rank, rate), or questions (the report's human
difficulty scale, ``human_scale.csv``)."""

METRIC_NAMES = ("kendall", "spearman", "rbo", "rbo-weighted", "rbo-ext", "sp@k")


@dataclass(frozen=True)
class RankingFile:
    """Model scores read from a ranking file, in the file's order."""

    name: str
    models: list[str]
    scores: list[float]
    score_key: str


def _scores_from_rows(path: Path, rows: list[tuple[int, dict[str, Any]]]) -> RankingFile:
    if not rows:
        raise InputFileError(path, "no models", expected="at least 2 ranked models")
    keys = rows[0][1].keys()
    key = next((k for k in SCORE_KEYS if k in keys), "rank" if "rank" in keys else None)
    item = next((k for k in ITEM_KEYS if k in keys), None)
    if item is None or key is None:
        raise InputFileError(
            path,
            f"columns {one_line(', '.join(map(str, keys)))[:120]}",
            line=rows[0][0],
            expected="a 'model' (or 'question') column and one of "
            + ", ".join((*SCORE_KEYS, "rank")),
        )
    models: list[str] = []
    scores: list[float] = []
    seen: set[str] = set()
    for line, rec in rows:
        m = rec.get(item)
        if not isinstance(m, str | int) or isinstance(m, bool) or str(m) == "":
            raise InputFileError(
                path, describe(m), line=line, field=item, expected=f"a {item} name"
            )
        v = rec.get(key)
        if v is None or v == "":
            continue  # no value for this one (an excluded question, an undefined score)
        try:
            x = float(v) if not isinstance(v, bool) else math.nan
        except (TypeError, ValueError):
            x = math.nan
        if not math.isfinite(x):
            raise InputFileError(
                path, describe(v), line=line, field=key, expected="a finite number"
            )
        if str(m) in seen:
            raise InputFileError(
                path,
                f"{item} {one_line(m)[:60]!r} twice",
                line=line,
                field=item,
                expected=f"each {item} once",
            )
        seen.add(str(m))
        models.append(str(m))
        scores.append(-x if key == "rank" else x)
    return RankingFile(path.name, models, scores, key)


def read_ranking_file(path: Path) -> RankingFile:
    """Model scores from a file ``annotate`` writes.

    Reads the JSON of ``annotate rank --json`` and ``annotate rate --json`` (an
    object with a ``models`` list, or a list of model objects) and CSVs such as
    ``<method>_models.csv`` from ``rank --out``: a ``model`` column or key (or
    ``question``, as in the report's ``human_scale.csv``) and a score (the first of
    ``score``, ``rating``, ``ability``, ``accuracy``, ``difficulty``,
    ``human_difficulty``, higher is better) or else ``rank`` (lower is better). A row
    without a value is left out.
    """
    if path.suffix.lower() == ".json" or read_text(path).lstrip().startswith(("{", "[")):
        from annotate.services.textfiles import load_json

        data = load_json(path, read_text(path), 0, "a JSON ranking (annotate rank/rate --json)")
        if isinstance(data, dict):
            data = data.get("models")
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise InputFileError(
                path,
                "no 'models' list of objects",
                expected="the JSON of annotate rank --json or annotate rate --json",
            )
        return _scores_from_rows(path, [(i + 1, r) for i, r in enumerate(data)])
    _header, rows = read_csv(path)
    return _scores_from_rows(path, list(rows))


def compare_rankings(
    paths: Sequence[Path],
    *,
    reference: Path | None = None,
    metrics: Sequence[str] | None = None,
    p: float = 0.9,
    k: int = 3,
) -> dict[str, Any]:
    """Compare ranking files pairwise, or each against a reference; a JSON-ready document.

    Each pair is compared on the models both rank (the others are named in
    ``dropped``). Ties in the overlap metrics keep the files' order. ``rbo`` is
    the ReasonerRank paper's eq. 13 (average overlap), ``rbo_weighted`` its eq.
    12 at persistence ``p`` (truncated at the list length), ``rbo_ext`` Webber's
    extrapolated RBO, ``sp_at_k`` SP@K. ``random_expectation`` gives each
    metric's value for a random ranking of the same models.

    Returns
    -------
    dict
        ``{"pairs": [{"a", "b", "n", "kendall", "spearman", "rbo", "rbo_weighted",
        "rbo_ext", "sp_at_k", "dropped", "random_expectation"}], "random_expectation",
        "p", "k", "metrics"}``.
    """
    from ranking.rank_metrics import random_expectation, ranking_agreement

    chosen = list(metrics) if metrics else list(METRIC_NAMES)
    for m in chosen:
        if m not in METRIC_NAMES and not re.fullmatch(r"sp@\d{1,3}", m):
            raise AnnotateError(
                f"unknown metric {one_line(m)!r}; use {', '.join(METRIC_NAMES)} (sp@3, sp@5, ...)"
            )
    sp_depths = [int(m[3:]) for m in chosen if re.fullmatch(r"sp@\d{1,3}", m)] or [k]
    files = [read_ranking_file(p_) for p_ in paths]
    ref = read_ranking_file(reference) if reference is not None else None
    if ref is None and len(files) < 2:
        raise AnnotateError("compare needs two ranking files, or one with --reference FILE")
    pairs_in = (
        [(f, ref) for f in files]
        if ref is not None
        else [(files[i], files[j]) for i in range(len(files)) for j in range(i + 1, len(files))]
    )
    pairs: list[dict[str, Any]] = []
    ns: set[int] = set()
    for a, b in pairs_in:
        assert b is not None
        common = [m for m in a.models if m in set(b.models)]
        if len(common) < 2:
            raise AnnotateError(
                f"{one_line(a.name)} and {one_line(b.name)} rank {len(common)} model(s) in common; "
                "at least 2 are needed (are the model names spelled the same?)"
            )
        sa = dict(zip(a.models, a.scores, strict=True))
        sb = dict(zip(b.models, b.scores, strict=True))
        b_common = [m for m in b.models if m in set(common)]
        x = np.asarray([sa[m] for m in common])
        y = np.asarray([sb[m] for m in common])
        tie_b = np.asarray([common.index(m) for m in b_common])
        r = ranking_agreement(x, y, p=p, k=sp_depths[0], t_tie_order=tie_b)
        row: dict[str, Any] = {"a": a.name, "b": b.name, "n": len(common)}
        if "kendall" in chosen:
            row["kendall"] = r.kendall
        if "spearman" in chosen:
            row["spearman"] = r.spearman
        if "rbo" in chosen:
            row["rbo"] = r.rbo
        if "rbo-weighted" in chosen:
            row["rbo_weighted"] = r.rbo_weighted
        if "rbo-ext" in chosen:
            row["rbo_ext"] = r.rbo_extrapolated
        if any(m.startswith("sp@") for m in chosen):
            row["sp_at_k"] = r.sp_at_k
            for depth in sp_depths[1:]:
                extra = ranking_agreement(x, y, p=p, k=depth, t_tie_order=tie_b)
                row[f"sp_at_{min(depth, len(common))}"] = extra.sp_at_k
        row["dropped"] = sorted((set(a.models) | set(b.models)) - set(common))
        row["random_expectation"] = _expectation(
            random_expectation(len(common), p=p, k=sp_depths[0])
        )
        ns.add(len(common))
        pairs.append(row)
    return {
        "pairs": pairs,
        "random_expectation": pairs[0]["random_expectation"] if len(ns) == 1 else None,
        "p": p,
        "k": k if not any(m.startswith("sp@") for m in chosen) else sp_depths[0],
        "metrics": chosen,
        "notes": []
        if len(ns) == 1
        else ["the pairs rank different numbers of models: see each pair's random_expectation"],
    }


def _expectation(e: dict[str, float]) -> dict[str, float]:
    return {
        "kendall": e["kendall"],
        "spearman": e["spearman"],
        "rbo": e["rbo"],
        "rbo_weighted": e["rbo_weighted"],
        "rbo_ext": e["rbo_extrapolated"],
        "sp_at_k": e["sp_at_k"],
    }
