"""Vote files: export (CSV, JSON Lines, Parquet) and lossless re-import.

An export folder holds ``votes.<ext>`` (one row per current vote),
``vote_log.<ext>`` (every row ever written, including superseded votes and
undos), ``items.<ext>`` (the items voted on) and ``studies/<name>/`` (each
study in its own file format), so ``annotate import FOLDER`` on another
machine recreates the studies and merges the votes. Importing the same file
twice adds nothing: votes are identified by their uuid.

Every vote row carries ``study_fingerprint``, the SHA-256 of the study's items
(:meth:`~annotate.services.studies.StudySpec.fingerprint`), so that votes for
another study that happens to have the same name are refused at import rather
than merged onto the wrong questions.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from annotate.errors import InputFileError
from annotate.names import (
    STUDY_NAME_RULE,
    InvalidNameError,
    check_study_name,
    normalize_annotator,
    one_line,
)
from annotate.services.textfiles import describe, read_csv, read_jsonl
from annotate.store.repo import ARENA_CHOICES, DIFFICULTY_CHOICES, RETRACT, VOTE_COLUMNS

FORMATS = ("csv", "jsonl", "parquet")
REQUIRED = ("vote_id", "study", "annotator", "item_id", "choice")
OPTIONAL = ("kind", "left", "response_ms", "fast", "created_at", "supersedes", "study_fingerprint")
EXPORT_COLUMNS = (*VOTE_COLUMNS, "study_fingerprint")
"""Columns of an exported vote file: the stored vote columns, then the study's fingerprint."""
MAX_RESPONSE_MS = 2**63 - 1
"""The largest response time SQLite can store (a signed 64-bit integer)."""


@dataclass(frozen=True)
class VoteRecord:
    """One vote read from an export file, validated for shape (not yet for ids)."""

    uuid: str
    study: str
    annotator: str
    item_key: str
    choice: str
    left: str | None
    response_ms: int | None
    fast: bool | None
    """None when the file does not say."""
    created_at: datetime | None
    """Timezone-aware, in UTC; None when the file does not say."""
    supersedes: str | None
    path: Path
    line: int
    study_fingerprint: str | None = None
    """The study's fingerprint as the exporting database had it; None in older files."""


def is_vote_file(columns: set[str]) -> bool:
    return set(REQUIRED) <= columns


def _iso(dt: Any) -> str:
    if isinstance(dt, str):
        dt = datetime.fromisoformat(dt)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return str(dt.astimezone(UTC).isoformat().replace("+00:00", "Z"))


def vote_dicts(rows: list[tuple[Any, ...]], fingerprint: str = "") -> list[dict[str, Any]]:
    """Vote rows (``VOTE_COLUMNS`` order) as export records (``EXPORT_COLUMNS``).

    Parameters
    ----------
    rows : list of tuple
        Rows from :func:`annotate.store.repo.vote_records`.
    fingerprint : str
        The study's fingerprint, written to every row as ``study_fingerprint``
        (empty when unknown).
    """
    out = []
    for r in rows:
        d = dict(zip(VOTE_COLUMNS, r, strict=True))
        d["created_at"] = _iso(d["created_at"])
        d["study_fingerprint"] = fingerprint or None
        out.append(d)
    return out


def write_table(rows: list[dict[str, Any]], columns: list[str], path: Path, fmt: str) -> Path:
    """Write rows to ``path`` (suffix added) as CSV, JSON Lines or Parquet."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=columns)
    for col in ("response_ms", "position"):
        if col in df.columns:
            df[col] = df[col].astype("Int64")  # whole numbers, empty when missing
    target = path.with_suffix(f".{fmt}")
    if fmt == "csv":
        df.to_csv(target, index=False)
    elif fmt == "jsonl":
        with target.open("w", encoding="utf-8") as fh:
            for rec in rows:
                fh.write(json.dumps({c: rec.get(c) for c in columns}, ensure_ascii=False) + "\n")
    elif fmt == "parquet":
        df.to_parquet(target, index=False)
    else:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return target


def _records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        _, rows = read_csv(path)
        return list(rows)
    if suffix == ".jsonl":
        return list(read_jsonl(path))
    if suffix == ".parquet":
        import pandas as pd

        try:
            df = pd.read_parquet(path)
        except Exception as err:  # pyarrow raises many types for a bad file
            raise InputFileError(path, f"not a readable Parquet file ({err})") from err
        df = df.astype(object).where(df.notna(), None)
        return [(i + 1, rec) for i, rec in enumerate(df.to_dict(orient="records"))]
    raise InputFileError(path, f"unknown file type {suffix!r}", expected=".csv, .jsonl or .parquet")


UUID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)
VALID_CHOICES = frozenset((*DIFFICULTY_CHOICES, *ARENA_CHOICES, RETRACT))
VALID_LEFT = frozenset(("first", "second", "model_a", "model_b"))
KNOWN_FIELDS = frozenset(REQUIRED + OPTIONAL)


def _opt_str(v: Any) -> str | None:
    if v is None:
        return None
    s = str(v).strip()
    return s or None


_MS_EXPECTED = "milliseconds, a whole number from 0 to 2**63 - 1"
_FINGERPRINT_RE = re.compile(r"^[0-9a-f]{64}$")


def _response_ms(path: Path, line: int, raw: Any) -> int | None:
    """A response time in whole milliseconds, or None when empty."""
    text = _opt_str(raw)
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        try:
            f = float(text)
        except ValueError as err:
            raise InputFileError(
                path, describe(raw), line=line, field="response_ms", expected=_MS_EXPECTED
            ) from err
        if not math.isfinite(f) or f != math.floor(f):
            raise InputFileError(
                path, describe(raw), line=line, field="response_ms", expected=_MS_EXPECTED
            ) from None
        value = int(f)
    if not 0 <= value <= MAX_RESPONSE_MS:
        raise InputFileError(
            path, describe(raw), line=line, field="response_ms", expected=_MS_EXPECTED
        )
    return value


def _created_at(path: Path, line: int, raw: Any) -> datetime | None:
    """An ISO 8601 timestamp converted to UTC (naive means UTC), or None when empty."""
    c = _opt_str(raw)
    if c is None:
        return None
    expected = "an ISO 8601 timestamp between years 1 and 9999 in UTC"
    try:
        created = datetime.fromisoformat(c.replace("Z", "+00:00"))
    except ValueError as err:
        raise InputFileError(
            path, describe(c), line=line, field="created_at", expected=expected
        ) from err
    if created.tzinfo is None:
        return created.replace(tzinfo=UTC)
    try:
        return created.astimezone(UTC)
    except OverflowError as err:  # 9999-12-31T23:00:00-05:00 is in year 10000 in UTC
        raise InputFileError(
            path, f"{c!r} is out of range in UTC", line=line, field="created_at", expected=expected
        ) from err


def parse_vote_file(path: Path) -> list[VoteRecord]:
    """Read and check a vote export file; raise naming file, line and field.

    Checks the shape of every row: ids are UUIDs, names follow the naming rules
    (study names :func:`~annotate.names.check_study_name`, annotator names are
    normalised with :func:`~annotate.names.normalize_annotator`), numbers and
    timestamps are in range. Whether the ids exist is checked at import.
    """
    out: list[VoteRecord] = []
    seen: dict[str, int] = {}
    names: dict[str, str] = {}
    """Annotator names as written -> normalised (names repeat on many rows)."""
    studies: set[str] = set()
    for line, rec in _records(path):
        for f in REQUIRED:
            if _opt_str(rec.get(f)) is None:
                raise InputFileError(path, "missing", line=line, field=f, expected="a value")
        if not KNOWN_FIELDS.issuperset(rec):
            extra = [k for k in rec if k not in KNOWN_FIELDS]
            raise InputFileError(
                path,
                "unknown field",
                line=line,
                field=one_line(extra[0])[:60],
                expected=f"only {', '.join(REQUIRED + OPTIONAL)}",
            )
        for k, v in rec.items():
            if not isinstance(v, str) and hasattr(v, "__len__"):  # list, dict, array, bytes
                raise InputFileError(
                    path, describe(v), line=line, field=k, expected="text or a number"
                )
        vid = str(rec["vote_id"]).strip()
        if not UUID_RE.match(vid):
            raise InputFileError(path, describe(vid), line=line, field="vote_id", expected="a UUID")
        if vid in seen:
            raise InputFileError(
                path,
                f"vote {vid} appears twice (first on line {seen[vid]})",
                line=line,
                field="vote_id",
                expected="unique vote ids",
            )
        seen[vid] = line
        study = str(rec["study"]).strip()
        try:
            if study not in studies:
                studies.add(check_study_name(study))
        except InvalidNameError:
            raise InputFileError(
                path,
                f"{describe(study)} is not a study name",
                line=line,
                field="study",
                expected=STUDY_NAME_RULE,
            ) from None
        raw_name = str(rec["annotator"])
        try:
            annotator = names.get(raw_name) or names.setdefault(
                raw_name, normalize_annotator(raw_name)
            )
        except InvalidNameError as err:
            raise InputFileError(path, str(err), line=line, field="annotator") from None
        choice = str(rec["choice"]).strip()
        if choice not in VALID_CHOICES:
            raise InputFileError(
                path,
                describe(choice),
                line=line,
                field="choice",
                expected="first, second, skip, model_a, model_b, tie, both_bad or retract",
            )
        left = _opt_str(rec.get("left"))
        if left is not None and left not in VALID_LEFT:
            raise InputFileError(
                path,
                describe(left),
                line=line,
                field="left",
                expected="first, second, model_a or model_b",
            )
        ms = _response_ms(path, line, rec.get("response_ms"))
        fast_raw = _opt_str(rec.get("fast"))
        fast = None if fast_raw is None else fast_raw.lower() in ("true", "1", "yes")
        created = _created_at(path, line, rec.get("created_at"))
        sup = _opt_str(rec.get("supersedes"))
        if sup is not None and not UUID_RE.match(sup):
            raise InputFileError(
                path, describe(sup), line=line, field="supersedes", expected="a vote UUID or empty"
            )
        fp = _opt_str(rec.get("study_fingerprint"))
        if fp is not None and not _FINGERPRINT_RE.match(fp):
            raise InputFileError(
                path,
                describe(fp),
                line=line,
                field="study_fingerprint",
                expected="64 lowercase hex digits (SHA-256), or empty",
            )
        out.append(
            VoteRecord(
                vid,
                study,
                annotator,
                str(rec["item_id"]).strip(),
                choice,
                left,
                ms,
                fast,
                created,
                sup,
                path,
                line,
                fp,
            )
        )
    if not out:
        raise InputFileError(path, "no votes", expected="at least one vote row")
    return out
