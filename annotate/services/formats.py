"""Real formats users already have: Chatbot Arena and MT-bench battles, LLMFAO crowd
votes, lm-evaluation-harness ``--log_samples`` output.

Each parser returns plain data (no database); :mod:`annotate.services.importing`
stores it in one transaction.
"""

from __future__ import annotations

import json
import math
import re
import uuid as uuidlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from annotate.choices import Choice
from annotate.errors import InputFileError
from annotate.names import InvalidNameError, normalize_annotator, one_line
from annotate.services.textfiles import describe, read_csv, read_json_records, read_jsonl

VOTE_NAMESPACE = uuidlib.UUID("6f1d2c52-5a43-4b8e-9c31-7a0c2f3b9e10")
"""Namespace for the deterministic uuids of imported third-party votes, so that
importing the same file twice adds nothing."""

ARENA_WINNERS = {
    "model_a": Choice.MODEL_A,
    "model_b": Choice.MODEL_B,
    "tie": Choice.TIE,
    "tie (bothbad)": Choice.BOTH_BAD,
}
"""A Chatbot Arena ``winner`` as a stored :class:`~annotate.choices.Choice`."""
LLMFAO_WINNERS = {"left": Choice.MODEL_A, "right": Choice.MODEL_B, "tie": Choice.TIE}
"""An LLMFAO ``winner`` as a stored choice."""
MIRRORED = {
    Choice.MODEL_A: Choice.MODEL_B,
    Choice.MODEL_B: Choice.MODEL_A,
    Choice.TIE: Choice.TIE,
    Choice.BOTH_BAD: Choice.BOTH_BAD,
}
"""A choice seen from the other side: the vote of a record listing the pair swapped."""


@dataclass(frozen=True)
class ImportedVote:
    uuid: str
    item_key: str
    annotator: str
    choice: str
    created_at: datetime | None
    line: int
    swapped: bool | None = None
    """True when the record showed the battle's ``model_b`` first (the pair swapped);
    None when the file does not say."""


@dataclass(frozen=True)
class ArenaRecords:
    """Battles and their votes read from a third-party vote file."""

    path: Path
    layout: str
    """``chatbot-arena`` or ``llmfao``."""
    battles: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    """battle key -> (model_a, model_b, first line)."""
    votes: list[ImportedVote] = field(default_factory=list)
    prompts: dict[str, tuple[str, int]] = field(default_factory=dict)
    """prompt key (``question_id#turn``) -> (text: the user turns, first line)."""
    responses: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    """(prompt key, model) -> (text: the model's assistant turns, first line)."""
    battle_prompts: dict[str, str] = field(default_factory=dict)
    """battle key -> prompt key, for battles whose records carry the conversations."""


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        yield from read_jsonl(path)
    elif suffix == ".json":
        yield from read_json_records(path)
    elif suffix == ".csv":
        _, rows = read_csv(path)
        yield from rows
    else:
        raise InputFileError(
            path, f"unknown file type {suffix!r}", expected=".csv, .json or .jsonl"
        )


def sniff_columns(path: Path) -> set[str]:
    """The field names of the first record of a CSV, JSON or JSON Lines file."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        header, _ = read_csv(path)
        return set(header)
    for _, rec in _records(path):
        return set(rec)
    return set()


def _str(path: Path, line: int, rec: dict[str, Any], name: str) -> str:
    v = rec.get(name)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        raise InputFileError(path, "missing", line=line, field=name, expected="a value")
    if isinstance(v, dict | list):
        raise InputFileError(path, describe(v), line=line, field=name, expected="text")
    s = str(v).strip()
    if not s:
        raise InputFileError(path, "empty", line=line, field=name, expected="a value")
    return s


def _annotator(path: Path, line: int, raw: str, fieldname: str) -> str:
    """``raw`` as an annotator name (:func:`~annotate.names.normalize_annotator`)."""
    try:
        return normalize_annotator(raw)
    except InvalidNameError as err:
        raise InputFileError(path, str(err), line=line, field=fieldname) from None


def _tstamp(path: Path, line: int, v: Any) -> datetime | None:
    if v is None or v == "":
        return None
    try:
        return datetime.fromtimestamp(float(v), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError) as err:
        raise InputFileError(
            path, describe(v), line=line, field="tstamp", expected="a Unix timestamp in seconds"
        ) from err


def _add_battle(out: ArenaRecords, path: Path, line: int, key: str, a: str, b: str) -> None:
    if a == b:
        raise InputFileError(
            path,
            f"model {a!r} against itself",
            line=line,
            field="model_b",
            expected="two different models",
        )
    prev = out.battles.get(key)
    if prev is None:
        out.battles[key] = (a, b, line)
    elif prev[:2] != (a, b):
        raise InputFileError(
            path,
            f"battle {describe(key)} is {a!r} vs {b!r} here but {prev[0]!r} vs {prev[1]!r} "
            f"on line {prev[2]}",
            line=line,
            expected="the same two models for every record of a battle",
        )


def _pair_battle(out: ArenaRecords, path: Path, line: int, key: str, a: str, b: str) -> bool:
    """Add battle ``key`` of the unordered pair {a, b}; True if the record lists it swapped."""
    prev = out.battles.get(key)
    if prev is None:
        _add_battle(out, path, line, key, a, b)
        return False
    if prev[:2] == (b, a):
        return True
    _add_battle(out, path, line, key, a, b)  # same order, or a clash it reports
    return False


def _present(v: Any) -> bool:
    return not (v is None or (isinstance(v, float) and math.isnan(v)) or v == "")


def _turns(
    path: Path, line: int, raw: Any, name: str, turn: int | None
) -> tuple[list[str], list[str]]:
    """The user and assistant turns of a conversation, up to ``turn`` user turns."""
    expected = 'a JSON list of {"role", "content"} messages (user, assistant, ...)'
    conv = raw
    if isinstance(raw, str):
        try:
            conv = json.loads(raw)
        except (ValueError, RecursionError):
            raise InputFileError(
                path, describe(raw), line=line, field=name, expected=expected
            ) from None
    if not isinstance(conv, list):
        raise InputFileError(path, describe(conv), line=line, field=name, expected=expected)
    user: list[str] = []
    assistant: list[str] = []
    for msg in conv:
        role = msg.get("role") if isinstance(msg, dict) else None
        content = msg.get("content") if isinstance(msg, dict) else None
        if not isinstance(role, str) or not isinstance(content, str):
            raise InputFileError(path, describe(msg), line=line, field=name, expected=expected)
        if role == "user":
            if turn is not None and len(user) == turn:
                break
            user.append(content)
        elif role == "assistant" and user:
            assistant.append(content)
    if not user or (turn is not None and len(user) < turn) or len(assistant) < len(user):
        want = f"{turn} user turn(s) each answered" if turn else "a user turn and its answer"
        raise InputFileError(
            path,
            f"{len(user)} user turn(s), {len(assistant)} answer(s)",
            line=line,
            field=name,
            expected=f"{want} ({expected})",
        )
    return user, assistant[: len(user)]


def _joined(turns: list[str]) -> str:
    """One turn as it is; several as ``[turn 1]`` ... ``[turn 2]`` ..."""
    if len(turns) == 1:
        return turns[0]
    return "\n\n".join(f"[turn {i}]\n{t}" for i, t in enumerate(turns, 1))


def _keep_text(
    where: tuple[Path, int, str], table: dict[Any, tuple[str, int]], key: Any, body: str, what: str
) -> None:
    path, line, name = where
    prev = table.get(key)
    if prev is None:
        table[key] = (body, line)
    elif prev[0] != body:
        raise InputFileError(
            path,
            f"{what} differs from the one on line {prev[1]}",
            line=line,
            field=name,
            expected="the same text in every record of a question and turn",
        )


def _conversations(
    out: ArenaRecords, line: int, rec: dict[str, Any], keys: tuple[str, str], turn: int | None
) -> None:
    """Keep the prompt and both answers of a record that carries its conversations."""
    path = out.path
    battle, prompt = keys
    a, b = _str(path, line, rec, "model_a"), _str(path, line, rec, "model_b")
    user_a, answers_a = _turns(path, line, rec["conversation_a"], "conversation_a", turn)
    user_b, answers_b = _turns(path, line, rec["conversation_b"], "conversation_b", turn)
    if user_a != user_b:
        raise InputFileError(
            path,
            "the user turns of the two conversations differ",
            line=line,
            field="conversation_b",
            expected="the same user turns as conversation_a",
        )
    where = (path, line, "conversation_a")
    _keep_text(where, out.prompts, prompt, _joined(user_a), f"the prompt of {prompt!r}")
    for model, answers, name in ((a, answers_a, "a"), (b, answers_b, "b")):
        what = f"the answer of {one_line(model)!r} to {prompt!r}"
        where = (path, line, f"conversation_{name}")
        _keep_text(where, out.responses, (prompt, model), _joined(answers), what)
    out.battle_prompts[battle] = prompt


def _turn_number(path: Path, line: int, raw: str) -> int | None:
    try:
        n = int(raw)
    except ValueError:
        return None
    if n < 1:
        raise InputFileError(path, describe(raw), line=line, field="turn", expected="1, 2, ...")
    return n


def parse_chatbot_arena(path: Path, study: str) -> ArenaRecords:
    """Read Chatbot Arena or MT-bench battle records (CSV, JSON or JSON Lines).

    Required fields: ``model_a``, ``model_b``, ``winner`` (``model_a``,
    ``model_b``, ``tie`` or ``tie (bothbad)``) and ``judge``; optional
    ``question_id``, ``turn``, ``tstamp`` and ``conversation_a``/``conversation_b``;
    other fields are ignored.

    A record with a ``question_id`` is a vote on the battle of that question (and
    ``turn``) between the two models, in either order: the battle key is
    ``<question_id>#<turn>:<model>:<model>`` with the models sorted, and a record
    listing the pair the other way round is the same battle, its choice mirrored
    and ``swapped`` set. This is the layout of the MT-bench human judgments, where
    one question is judged across several pairs, in both orders, by several
    judges. A record without one is a battle of its own (``record-<line>``).

    ``conversation_a``/``conversation_b`` (lists of ``{"role", "content"}``, or
    that list as JSON text in a CSV cell) become the battle's texts: the prompt
    ``<question_id>#<turn>`` holds the user turns up to ``turn``, each model's
    response its assistant turns.
    """
    out = ArenaRecords(path, "chatbot-arena")
    seen: dict[tuple[str, str], int] = {}
    for line, rec in _records(path):
        a = _str(path, line, rec, "model_a")
        b = _str(path, line, rec, "model_b")
        raw_judge = _str(path, line, rec, "judge")
        judge = _annotator(path, line, raw_judge, "judge")
        winner = _str(path, line, rec, "winner")
        if winner not in ARENA_WINNERS:
            raise InputFileError(
                path,
                describe(winner),
                line=line,
                field="winner",
                expected="model_a, model_b, tie or tie (bothbad)",
            )
        qid = rec.get("question_id")
        swapped = False
        if _present(qid) and str(qid).strip():
            prompt = _str(path, line, rec, "question_id")
            turn: int | None = None
            if _present(rec.get("turn")) and str(rec["turn"]).strip():
                raw_turn = _str(path, line, rec, "turn")
                turn = _turn_number(path, line, raw_turn)
                prompt = f"{prompt}#{raw_turn}"
            key = ":".join((prompt, *sorted((a, b))))
            swapped = _pair_battle(out, path, line, key, a, b)
            if _present(rec.get("conversation_a")) and _present(rec.get("conversation_b")):
                _conversations(out, line, rec, (key, prompt), turn)
        else:
            key = f"record-{line}"
            _add_battle(out, path, line, key, a, b)
        if (key, judge) in seen:
            raise InputFileError(
                path,
                f"judge {one_line(judge)!r} votes on battle {describe(key)} again "
                f"(first on line {seen[(key, judge)]})",
                line=line,
                field="judge",
                expected="one vote per judge and battle",
            )
        seen[(key, judge)] = line
        # The raw name keeps the ids of files imported before names were normalised.
        vid = str(uuidlib.uuid5(VOTE_NAMESPACE, f"{study}\x1f{key}\x1f{raw_judge}"))
        created = _tstamp(path, line, rec.get("tstamp"))
        choice = ARENA_WINNERS[winner]
        if swapped:
            choice = MIRRORED[choice]
        out.votes.append(ImportedVote(vid, key, judge, choice, created, line, swapped))
    if not out.votes:
        raise InputFileError(path, "no records", expected="at least one battle record")
    return out


def parse_llmfao(path: Path, study: str) -> ArenaRecords:
    """Read LLMFAO crowd votes: ``id,prompt,model_x,model_y,worker,winner,left,right``.

    ``id`` is the battle; ``left``/``right`` are the model names shown (model A
    and B); ``winner`` is ``left``, ``right`` or ``tie``; ``worker`` is the annotator.
    """
    out = ArenaRecords(path, "llmfao")
    seen: dict[tuple[str, str], int] = {}
    for line, rec in _records(path):
        key = _str(path, line, rec, "id")
        a = _str(path, line, rec, "left")
        b = _str(path, line, rec, "right")
        raw_worker = _str(path, line, rec, "worker")
        worker = _annotator(path, line, raw_worker, "worker")
        winner = _str(path, line, rec, "winner")
        if winner not in LLMFAO_WINNERS:
            raise InputFileError(
                path, describe(winner), line=line, field="winner", expected="left, right or tie"
            )
        _add_battle(out, path, line, key, a, b)
        if (key, worker) in seen:
            raise InputFileError(
                path,
                f"worker {one_line(worker)!r} votes on pair {describe(key)} again "
                f"(first on line {seen[(key, worker)]})",
                line=line,
                field="worker",
                expected="one vote per worker and pair",
            )
        seen[(key, worker)] = line
        vid = str(uuidlib.uuid5(VOTE_NAMESPACE, f"{study}\x1f{key}\x1f{raw_worker}"))
        out.votes.append(ImportedVote(vid, key, worker, LLMFAO_WINNERS[winner], None, line))
    if not out.votes:
        raise InputFileError(path, "no records", expected="at least one vote")
    return out


# --- lm-evaluation-harness ----------------------------------------------------

HARNESS_FILE = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d\-.:]+)\.jsonl$")
TEXT_KEYS = ("question", "query", "problem", "input", "prompt", "text", "ctx", "goal", "sentence")
METRIC_PREFERENCE = ("acc", "exact_match", "acc_norm", "pass@1", "em", "f1")


@dataclass(frozen=True)
class HarnessSample:
    task: str
    doc_id: str
    text: str
    choices: tuple[str, ...] | None
    model: str
    score: float
    path: Path
    line: int
    metric: str = ""
    """The metric the score is the value of."""
    filter: str = ""
    """The harness filter of the sample (``none`` when the log names none)."""


def harness_summary(samples: list[HarnessSample]) -> list[str]:
    """One line per task: the metric and filter its scores come from.

    Examples
    --------
    >>> s = HarnessSample("gsm8k", "0", "q", None, "m", 1.0, Path("f"), 1, "exact_match",
    ...                   "strict-match")
    >>> harness_summary([s])
    ["gsm8k: metric 'exact_match', filter 'strict-match' (choose with --metric, --filter)"]
    """
    used: dict[str, dict[tuple[str, str], None]] = {}
    for x in samples:
        used.setdefault(x.task, {})[(x.metric, x.filter)] = None
    return [
        f"{one_line(task)}: "
        + "; ".join(f"metric {m!r}, filter {f!r}" for m, f in combos)
        + " (choose with --metric, --filter)"
        for task, combos in used.items()
    ]


def harness_files(path: Path) -> list[Path]:
    """``samples_<task>_<timestamp>.jsonl`` files at ``path`` (a file or a folder tree)."""
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("samples_*.jsonl") if p.is_file())
    if not files:
        raise InputFileError(
            path,
            "no samples_<task>_<timestamp>.jsonl files",
            expected="an lm-evaluation-harness --output_path folder run with --log_samples",
        )
    return files


def _doc_text(doc: Any) -> tuple[str, tuple[str, ...] | None]:
    if isinstance(doc, str):
        return doc, None
    if not isinstance(doc, dict):
        return json.dumps(doc, ensure_ascii=False), None
    text = next((doc[k] for k in TEXT_KEYS if isinstance(doc.get(k), str) and doc[k]), None)
    if text is None:
        text = json.dumps(doc, ensure_ascii=False, sort_keys=True)
    choices = doc.get("choices")
    if isinstance(choices, dict) and isinstance(choices.get("text"), list):
        choices = choices["text"]
    if isinstance(choices, list) and choices and all(isinstance(c, str) for c in choices):
        return text, tuple(choices)
    return text, None


def parse_harness(
    path: Path,
    *,
    model: str | None = None,
    metric: str | None = None,
    filter_name: str | None = None,
) -> list[HarnessSample]:
    """Read lm-evaluation-harness per-sample logs into response-matrix entries.

    The model is ``model`` or the name of the folder holding each file (the
    harness writes ``<output_path>/<model_name_sanitized>/samples_<task>_<ts>.jsonl``).
    The task comes from the file name. The metric is ``metric``, or the first of
    ``acc``, ``exact_match``, ``acc_norm``, ``pass@1``, ``em``, ``f1`` that the
    sample lists in ``metrics``. When a task logs several filters (for example
    GSM8K's ``strict-match`` and ``flexible-extract``), ``filter_name`` picks one;
    by default the first filter in the file is used. Scores must lie in [0, 1]
    (booleans count as 0 and 1).
    """
    samples: list[HarnessSample] = []
    seen: dict[tuple[str, str, str], tuple[Path, int]] = {}
    for f in harness_files(path):
        m = HARNESS_FILE.match(f.name)
        task = m.group("task") if m else f.stem.removeprefix("samples_")
        mdl = model or f.parent.name
        chosen_filter = filter_name
        for line, rec in read_jsonl(f):
            for req in ("doc_id", "doc", "metrics"):
                if req not in rec:
                    raise InputFileError(
                        f,
                        "missing",
                        line=line,
                        field=req,
                        expected="an lm-evaluation-harness sample (doc_id, doc, metrics, ...)",
                    )
            flt = rec.get("filter", "none")
            if not isinstance(flt, str):
                raise InputFileError(
                    f, describe(flt), line=line, field="filter", expected="a filter name"
                )
            if chosen_filter is None:
                chosen_filter = flt
            if flt != chosen_filter:
                continue
            names = rec["metrics"]
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise InputFileError(
                    f,
                    describe(names),
                    line=line,
                    field="metrics",
                    expected="a list of metric names",
                )
            name = metric or next((n for n in METRIC_PREFERENCE if n in names), None)
            if name is None:
                name = names[0] if names else None
            if name is None or name not in rec:
                raise InputFileError(
                    f,
                    f"no value for metric {describe(name)}",
                    line=line,
                    field=one_line(name or "metrics")[:60],
                    expected=f"one of the logged metrics {one_line(names)[:200]} "
                    "(choose with --metric)",
                )
            v = rec[name]
            if isinstance(v, bool):
                v = float(v)
            if not isinstance(v, int | float) or not 0 <= v <= 1 or not math.isfinite(v):
                raise InputFileError(
                    f,
                    describe(v),
                    line=line,
                    field=one_line(name)[:60],
                    expected="a per-sample score in [0, 1] (choose another with --metric)",
                )
            if isinstance(rec["doc_id"], dict | list):
                raise InputFileError(
                    f, describe(rec["doc_id"]), line=line, field="doc_id", expected="an id"
                )
            doc_id = str(rec["doc_id"])
            k = (task, doc_id, mdl)
            if k in seen:
                pf, pl = seen[k]
                raise InputFileError(
                    f,
                    f"a second sample for {one_line(task)}/{one_line(doc_id)[:60]} of model "
                    f"{one_line(mdl)!r} "
                    f"(first in {pf.name}:{pl})",
                    line=line,
                    field="doc_id",
                    expected="one sample per document and model (pass --filter or one run)",
                )
            seen[k] = (f, line)
            try:
                text, choices = _doc_text(rec["doc"])
            except RecursionError:
                raise InputFileError(
                    f, "nested too deeply", line=line, field="doc", expected="a JSON object"
                ) from None
            samples.append(
                HarnessSample(task, doc_id, text, choices, mdl, float(v), f, line, name, flt)
            )
    if not samples:
        raise InputFileError(
            path,
            f"no samples with filter {describe(filter_name)}",
            expected="a filter the files contain",
        )
    return samples
