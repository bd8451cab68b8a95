"""Study folders: parse and validate them completely before anything is stored.

A study is a folder holding ``study.toml`` and data files (see
``question_pairs/README.md`` for the formats). :func:`parse_study` returns a
:class:`StudySpec` or raises :class:`~annotate.errors.InputFileError` naming
the file, the line, the field and what was expected.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from annotate.errors import InputFileError
from annotate.names import STUDY_NAME_RULE, InvalidNameError, check_study_name, one_line
from annotate.services.textfiles import describe, read_csv, read_jsonl, read_text, require_fields
from annotate.study_settings import KINDS, SettingError, StudySettings


@dataclass(frozen=True)
class QuestionSpec:
    key: str
    subject: str
    text: str
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class PairSpec:
    key: str
    first: str
    second: str
    gold: str | None = None
    """The known answer of a gold pair (``first`` or ``second``), never shown."""


@dataclass(frozen=True)
class PromptSpec:
    key: str
    text: str
    category: str = ""


@dataclass(frozen=True)
class ResponseSpec:
    prompt: str
    model: str
    text: str


@dataclass(frozen=True)
class BattleSpec:
    key: str
    prompt: str | None
    model_a: str
    model_b: str
    gold: str | None = None
    """The known answer of a gold battle (``model_a``, ``model_b``, ``tie``, ``both_bad``)."""


GOLD_VALUES = {
    "difficulty": {"1": "first", "first": "first", "2": "second", "second": "second"},
    "arena": {
        "a": "model_a",
        "model_a": "model_a",
        "b": "model_b",
        "model_b": "model_b",
        "tie": "tie",
        "both_bad": "both_bad",
    },
}
"""The optional ``gold`` column of ``pairs.csv`` / ``battles.csv``: value -> stored choice."""


def parse_gold(path: Path, line: int, kind: str, raw: str | None) -> str | None:
    """A ``gold`` cell as a stored choice; empty (or no column) is no gold answer."""
    value = (raw or "").strip()
    if not value:
        return None
    allowed = GOLD_VALUES[kind]
    got = allowed.get(value.lower())
    if got is None:
        raise InputFileError(
            path,
            f"{describe(value)} is not a gold answer",
            line=line,
            field="gold",
            expected=f"empty or one of {', '.join(allowed)}",
        )
    return got


@dataclass(frozen=True)
class StudySpec:
    """A whole study, validated, ready to store."""

    name: str
    kind: str
    title: str = ""
    description: str = ""
    settings: StudySettings = field(default_factory=StudySettings)
    """Validated settings (a difficulty study's defaults unless given)."""
    questions: tuple[QuestionSpec, ...] = ()
    pairs: tuple[PairSpec, ...] = ()
    scores: tuple[tuple[str, str, float], ...] = ()
    """Response matrix entries ``(question key, model, score in [0, 1])``."""
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    prompts: tuple[PromptSpec, ...] = ()
    responses: tuple[ResponseSpec, ...] = ()
    battles: tuple[BattleSpec, ...] = ()

    def fingerprint(self) -> str:
        """SHA-256 over the items' content (not the settings or title)."""
        h = hashlib.sha256()
        h.update(self.kind.encode())
        for q in self.questions:
            h.update(json.dumps([q.key, q.subject, q.text, q.choices]).encode())
        for p in self.pairs:
            gold = [p.gold] if p.gold else []  # studies without gold keep their hash
            h.update(json.dumps([p.key, p.first, p.second, *gold]).encode())
        for sc in sorted(self.scores):
            h.update(json.dumps(list(sc)).encode())
        for pr in self.prompts:
            h.update(json.dumps([pr.key, pr.text]).encode())
        for r in self.responses:
            h.update(json.dumps([r.prompt, r.model, r.text]).encode())
        for b in self.battles:
            gold = [b.gold] if b.gold else []
            h.update(json.dumps([b.key, b.prompt, b.model_a, b.model_b, *gold]).encode())
        return h.hexdigest()


def spec_from_contents(
    name: str, kind: str, title: str, description: str, settings: StudySettings, c: Any
) -> StudySpec:
    """Rebuild a :class:`StudySpec` from :class:`~annotate.store.repo.StudyContents`."""
    return StudySpec(
        name=name,
        kind=kind,
        title=title,
        description=description,
        settings=settings,
        questions=tuple(
            QuestionSpec(k, subj, body, tuple(json.loads(ch)) if ch else None)
            for k, subj, body, ch in c.questions
        ),
        pairs=tuple(PairSpec(k, a, b, c.gold.get(k)) for k, a, b in c.pairs),
        scores=tuple(c.scores),
        models={m: json.loads(meta) for m, meta in c.models},
        prompts=tuple(PromptSpec(*p) for p in c.prompts),
        responses=tuple(ResponseSpec(*r) for r in c.responses),
        battles=tuple(BattleSpec(k, p, a, b, c.gold.get(k)) for k, p, a, b in c.battles),
    )


def is_study_dir(path: Path) -> bool:
    """True when ``path`` is a folder with a ``study.toml``."""
    return path.is_dir() and (path / "study.toml").is_file()


def _key(path: Path, line: int, value: Any, fieldname: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputFileError(
            path,
            f"{describe(value)} is not an id",
            line=line,
            field=one_line(fieldname)[:60],
            expected="a string",
        )
    s = str(value).strip()
    if not s:
        raise InputFileError(
            path, "empty", line=line, field=one_line(fieldname)[:60], expected="a non-empty id"
        )
    return s


def _text(path: Path, line: int, value: Any, fieldname: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputFileError(
            path,
            f"{describe(value)} is not text",
            line=line,
            field=one_line(fieldname)[:60],
            expected="non-empty text",
        )
    return value


def parse_score(path: Path, line: int, raw: str, fieldname: str) -> float | None:
    """Parse a response-matrix cell: a number in [0, 1]; empty or ``NA`` is missing."""
    s = raw.strip()
    if s in ("", "NA", "NaN", "nan"):
        return None
    try:
        v = float(s)
    except ValueError as err:
        raise InputFileError(
            path,
            f"{describe(raw)} is not a number",
            line=line,
            field=one_line(fieldname)[:60],
            expected="a score in [0, 1]",
        ) from err
    if not math.isfinite(v) or not 0.0 <= v <= 1.0:
        raise InputFileError(
            path,
            f"{describe(raw)} is outside [0, 1]",
            line=line,
            field=one_line(fieldname)[:60],
            expected="a score in [0, 1]",
        )
    return v


def parse_settings(path: Path, kind: str, raw: Any) -> StudySettings:
    """Validate a ``[settings]`` table into the kind's :class:`StudySettings`."""
    if raw is None:
        return StudySettings.for_kind(kind)
    if not isinstance(raw, dict):
        raise InputFileError(path, "not a table", field="settings", expected="[settings]")
    try:
        return StudySettings.from_dict(kind, raw)
    except SettingError as err:
        if err.unknown:
            raise InputFileError(
                path,
                "unknown setting",
                field=f"settings.{one_line(err.key)[:60]}",
                expected=err.expected,
            ) from None
        textual = isinstance(getattr(StudySettings.for_kind(kind), err.key, ""), str)
        value = describe(err.value) if textual else f"{err.value!r}"
        raise InputFileError(
            path, value, field=f"settings.{err.key}", expected=err.expected
        ) from None


def parse_response_matrix(path: Path) -> list[tuple[int, str, str, float]]:
    """Read a response matrix in long or wide CSV; return ``(line, question, model, score)``.

    Long: columns exactly ``question_id,model,score``. Wide with one row per
    question: first column ``question_id`` (or unnamed, as pandas writes an
    index), one column per model. Wide with one row per model: first column
    ``model``, one column per question. Empty cells (or ``NA``) are missing and
    left out. Duplicate ``(question, model)`` entries are an error.
    """
    header, rows = read_csv(path)
    out: list[tuple[int, str, str, float]] = []
    seen: dict[tuple[str, str], int] = {}

    def add(line: int, q: str, m: str, v: float | None) -> None:
        if v is None:
            return
        if (q, m) in seen:
            raise InputFileError(
                path,
                f"duplicate score for question {q!r} and model {m!r} "
                f"(first on line {seen[(q, m)]})",
                line=line,
                expected="one score per question and model",
            )
        seen[(q, m)] = line
        out.append((line, q, m, v))

    if header == ["question_id", "model", "score"]:
        for line, row in rows:
            q = _key(path, line, row["question_id"], "question_id")
            m = _key(path, line, row["model"], "model")
            add(line, q, m, parse_score(path, line, row["score"], "score"))
    elif header[0] in ("question_id", "") and len(header) >= 2:
        # wide, one row per question ("" is the index column pandas writes)
        first = header[0]
        models = header[1:]
        if any(not m for m in models):
            raise InputFileError(path, "a model column has no name", line=1, field="header")
        for line, row in rows:
            q = _key(path, line, row[first], first or "question id (first column)")
            for m in models:
                add(line, q, m, parse_score(path, line, row[m], m))
    elif header[0] == "model" and len(header) >= 2:
        # wide, one row per model (the layout of metabench / Open LLM Leaderboard exports)
        questions = header[1:]
        if any(not q for q in questions):
            raise InputFileError(path, "a question column has no name", line=1, field="header")
        for line, row in rows:
            m = _key(path, line, row["model"], "model")
            for q in questions:
                add(line, q, m, parse_score(path, line, row[q], q))
    else:
        raise InputFileError(
            path,
            f"header {','.join(header)!r}",
            line=1,
            expected="'question_id,model,score' (long), 'question_id,<model>,...' (one row per "
            "question) or 'model,<question>,...' (one row per model)",
        )
    return out


def parse_study(folder: Path) -> StudySpec:
    """Parse and validate the study in ``folder``; raise on the first problem."""
    toml_path = folder / "study.toml"
    text = read_text(toml_path)
    try:
        meta = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputFileError(toml_path, f"not valid TOML: {one_line(err)}") from err
    except RecursionError as err:
        raise InputFileError(toml_path, "TOML nested too deeply", expected="a flat table") from err
    allowed = {"name", "kind", "title", "description", "instructions", "settings", "questionnaire"}
    for k in meta:
        if k not in allowed:
            raise InputFileError(
                toml_path,
                "unknown key",
                field=one_line(k)[:60],
                expected=f"only {', '.join(sorted(allowed))}",
            )
    name = meta.get("name")
    try:
        if not isinstance(name, str):
            raise InvalidNameError(f"study name {describe(name)} is not text")
        check_study_name(name)
    except InvalidNameError:
        raise InputFileError(
            toml_path,
            f"{describe(name)} is not a study name",
            field="name",
            expected=STUDY_NAME_RULE,
        ) from None
    kind = meta.get("kind")
    if kind not in KINDS:
        raise InputFileError(
            toml_path, describe(kind), field="kind", expected="difficulty or arena"
        )
    for k in ("title", "description"):
        if k in meta and not isinstance(meta[k], str):
            raise InputFileError(toml_path, describe(meta[k]), field=k, expected="a string")
    raw_settings = meta.get("settings")
    if "instructions" in meta and (raw_settings is None or isinstance(raw_settings, dict)):
        if isinstance(raw_settings, dict) and "instructions" in raw_settings:
            raise InputFileError(
                toml_path,
                "instructions given twice",
                field="instructions",
                expected="either a top-level instructions or settings.instructions",
            )
        raw_settings = {**(raw_settings or {})}
        raw_settings["instructions"] = meta["instructions"]
    if "questionnaire" in meta and (raw_settings is None or isinstance(raw_settings, dict)):
        raw_settings = {**(raw_settings or {}), "questionnaire": meta["questionnaire"]}
    settings = parse_settings(toml_path, kind, raw_settings)
    common = {
        "name": name,
        "kind": kind,
        "title": meta.get("title", ""),
        "description": meta.get("description", ""),
        "settings": settings,
    }
    if kind == "difficulty":
        return _parse_difficulty(folder, common)
    return _parse_arena(folder, common)


def _parse_models(path: Path) -> dict[str, dict[str, Any]]:
    header, rows = read_csv(path)
    if header[0] != "model":
        raise InputFileError(path, f"first column {header[0]!r}", line=1, expected="'model'")
    models: dict[str, dict[str, Any]] = {}
    for line, row in rows:
        m = _key(path, line, row["model"], "model")
        if m in models:
            raise InputFileError(path, f"duplicate model {m!r}", line=line, field="model")
        models[m] = {k: v for k, v in row.items() if k != "model"}
    return models


def _parse_difficulty(folder: Path, common: dict[str, Any]) -> StudySpec:
    qpath = folder / "questions.jsonl"
    questions: dict[str, QuestionSpec] = {}
    for line, rec in read_jsonl(qpath):
        require_fields(qpath, line, rec, ["id", "subject", "text"], ["choices", "answer", "source"])
        key = _key(qpath, line, rec["id"], "id")
        if key in questions:
            raise InputFileError(
                qpath,
                f"duplicate question id {key!r}",
                line=line,
                field="id",
                expected="unique ids",
            )
        choices = rec.get("choices")
        if choices is not None and (
            not isinstance(choices, list) or not all(isinstance(c, str) for c in choices)
        ):
            raise InputFileError(
                qpath,
                describe(choices),
                line=line,
                field="choices",
                expected="a list of strings",
            )
        questions[key] = QuestionSpec(
            key=key,
            subject=_text(qpath, line, rec["subject"], "subject").strip(),
            text=_text(qpath, line, rec["text"], "text"),
            choices=tuple(choices) if choices else None,
        )
    if not questions:
        raise InputFileError(qpath, "no questions", expected="at least two questions")

    ppath = folder / "pairs.csv"
    header, rows = read_csv(ppath) if ppath.exists() else (["pair_id", "first", "second"], iter(()))
    if header not in (["pair_id", "first", "second"], ["pair_id", "first", "second", "gold"]):
        raise InputFileError(
            ppath,
            f"header {','.join(header)!r}",
            line=1,
            expected="'pair_id,first,second' or 'pair_id,first,second,gold'",
        )
    pairs: list[PairSpec] = []
    seen_pairs: dict[str, int] = {}
    seen_qq: dict[frozenset[str], int] = {}
    for line, row in rows:
        key = _key(ppath, line, row["pair_id"], "pair_id")
        if key in seen_pairs:
            raise InputFileError(
                ppath,
                f"duplicate pair id {key!r} (first on line {seen_pairs[key]})",
                line=line,
                field="pair_id",
                expected="unique ids",
            )
        seen_pairs[key] = line
        ids = []
        for f in ("first", "second"):
            q = row[f].strip()
            if q not in questions:
                raise InputFileError(
                    ppath,
                    f"unknown question id {q!r}",
                    line=line,
                    field=f,
                    expected=f"an id from {qpath.name}",
                )
            ids.append(q)
        a, b = ids
        if a == b:
            raise InputFileError(
                ppath,
                f"pairs question {a!r} with itself",
                line=line,
                field="second",
                expected="two different questions",
            )
        if questions[a].subject != questions[b].subject:
            raise InputFileError(
                ppath,
                f"pair across subjects ({a!r} is {questions[a].subject!r}, "
                f"{b!r} is {questions[b].subject!r})",
                line=line,
                field="second",
                expected="two questions of the same subject",
            )
        qq = frozenset((a, b))
        if qq in seen_qq:
            raise InputFileError(
                ppath,
                f"the same two questions as line {seen_qq[qq]}",
                line=line,
                expected="each pair of questions once",
            )
        seen_qq[qq] = line
        pairs.append(PairSpec(key, a, b, parse_gold(ppath, line, "difficulty", row.get("gold"))))
    if not pairs and not (folder / "responses.csv").exists():
        raise InputFileError(
            ppath, "no pairs", expected="at least one pair (or a response matrix only study)"
        )

    scores: list[tuple[str, str, float]] = []
    rpath = folder / "responses.csv"
    if rpath.exists():
        for line, q, m, v in parse_response_matrix(rpath):
            if q not in questions:
                raise InputFileError(
                    rpath,
                    f"unknown question id {q!r}",
                    line=line,
                    field="question_id",
                    expected=f"an id from {qpath.name}",
                )
            scores.append((q, m, v))
    models: dict[str, dict[str, Any]] = {}
    mpath = folder / "models.csv"
    if mpath.exists():
        models = _parse_models(mpath)
    return StudySpec(
        **common,
        questions=tuple(questions.values()),
        pairs=tuple(pairs),
        scores=tuple(scores),
        models=models,
    )


def _parse_arena(folder: Path, common: dict[str, Any]) -> StudySpec:
    ppath = folder / "prompts.jsonl"
    prompts: dict[str, PromptSpec] = {}
    for line, rec in (
        read_jsonl(ppath) if ppath.exists() or not (folder / "battles.csv").exists() else ()
    ):
        require_fields(ppath, line, rec, ["id", "text"], ["category"])
        key = _key(ppath, line, rec["id"], "id")
        if key in prompts:
            raise InputFileError(
                ppath, f"duplicate prompt id {key!r}", line=line, field="id", expected="unique ids"
            )
        cat = rec.get("category", "")
        if not isinstance(cat, str):
            raise InputFileError(ppath, describe(cat), line=line, field="category", expected="text")
        prompts[key] = PromptSpec(key, _text(ppath, line, rec["text"], "text"), cat)
    rpath = folder / "responses.jsonl"
    responses: dict[tuple[str, str], ResponseSpec] = {}
    for line, rec in read_jsonl(rpath) if prompts else ():
        require_fields(rpath, line, rec, ["prompt_id", "model", "text"], [])
        p = _key(rpath, line, rec["prompt_id"], "prompt_id")
        if p not in prompts:
            raise InputFileError(
                rpath,
                f"unknown prompt id {p!r}",
                line=line,
                field="prompt_id",
                expected=f"an id from {ppath.name}",
            )
        m = _key(rpath, line, rec["model"], "model")
        if (p, m) in responses:
            raise InputFileError(
                rpath,
                f"a second response of {m!r} to prompt {p!r}",
                line=line,
                field="model",
                expected="one response per model and prompt",
            )
        responses[(p, m)] = ResponseSpec(p, m, _text(rpath, line, rec["text"], "text"))
    battles: list[BattleSpec] = []
    bpath = folder / "battles.csv"
    if bpath.exists():
        header, rows = read_csv(bpath)
        base = ["battle_id", "prompt_id", "model_a", "model_b"]
        if header not in (base, [*base, "gold"]):
            raise InputFileError(
                bpath,
                f"header {','.join(header)!r}",
                line=1,
                expected="'battle_id,prompt_id,model_a,model_b' (optionally then ',gold')",
            )
        seen: dict[str, int] = {}
        for line, row in rows:
            key = _key(bpath, line, row["battle_id"], "battle_id")
            if key in seen:
                raise InputFileError(
                    bpath,
                    f"duplicate battle id {key!r} (first on line {seen[key]})",
                    line=line,
                    field="battle_id",
                    expected="unique ids",
                )
            seen[key] = line
            p = row["prompt_id"].strip()
            a, b = row["model_a"].strip(), row["model_b"].strip()
            for f, m in (("model_a", a), ("model_b", b)):
                if not m:
                    raise InputFileError(bpath, "empty", line=line, field=f, expected="a model")
            if a == b:
                raise InputFileError(
                    bpath,
                    f"model {a!r} against itself",
                    line=line,
                    field="model_b",
                    expected="two different models",
                )
            if p and p not in prompts:
                raise InputFileError(
                    bpath,
                    f"unknown prompt id {p!r}",
                    line=line,
                    field="prompt_id",
                    expected=f"an id from {ppath.name}, or empty for a battle without text",
                )
            for f, m in (("model_a", a), ("model_b", b)):
                if p and (p, m) not in responses:
                    raise InputFileError(
                        bpath,
                        f"no response of model {m!r} to prompt {p!r}",
                        line=line,
                        field=f,
                        expected=f"a model with a response in {rpath.name}",
                    )
            gold = parse_gold(bpath, line, "arena", row.get("gold"))
            battles.append(BattleSpec(key, p or None, a, b, gold))
    else:
        by_prompt: dict[str, list[str]] = {}
        for p, m in responses:
            by_prompt.setdefault(p, []).append(m)
        for p in prompts:
            for a, b in combinations(sorted(by_prompt.get(p, [])), 2):
                battles.append(BattleSpec(f"{p}:{a}:{b}", p, a, b))
    if not battles:
        raise InputFileError(
            folder / "battles.csv",
            "no battles",
            expected="battles.csv, or prompts answered by at least two models",
        )
    return StudySpec(
        **common,
        prompts=tuple(prompts.values()),
        responses=tuple(responses.values()),
        battles=tuple(battles),
    )
