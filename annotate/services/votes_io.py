"""Vote files: export (CSV, JSON Lines, Parquet) and lossless re-import.

An export folder holds ``votes.<ext>`` (one row per current vote),
``vote_log.<ext>`` (every row ever written, including superseded votes and
undos), ``items.<ext>`` (the items voted on) and ``studies/<name>/`` (each
study in its own file format), so ``annotate import FOLDER`` on another
machine recreates the studies and merges the votes. Importing the same file
twice adds nothing: votes are identified by their uuid.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from annotate.errors import InputFileError
from annotate.services.textfiles import read_csv, read_jsonl
from annotate.store.repo import ARENA_CHOICES, DIFFICULTY_CHOICES, RETRACT, VOTE_COLUMNS

FORMATS = ("csv", "jsonl", "parquet")
REQUIRED = ("vote_id", "study", "annotator", "item_id", "choice")
OPTIONAL = ("kind", "left", "response_ms", "fast", "created_at", "supersedes")


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
    fast: bool
    created_at: datetime | None
    supersedes: str | None
    path: Path
    line: int


def is_vote_file(columns: set[str]) -> bool:
    return set(REQUIRED) <= columns


def _iso(dt: Any) -> str:
    if isinstance(dt, str):
        dt = datetime.fromisoformat(dt)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return str(dt.astimezone(UTC).isoformat().replace("+00:00", "Z"))


def vote_dicts(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        d = dict(zip(VOTE_COLUMNS, r, strict=True))
        d["created_at"] = _iso(d["created_at"])
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


def parse_vote_file(path: Path) -> list[VoteRecord]:
    """Read and check a vote export file; raise naming file, line and field."""
    out: list[VoteRecord] = []
    seen: dict[str, int] = {}
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
                field=extra[0],
                expected=f"only {', '.join(REQUIRED + OPTIONAL)}",
            )
        vid = str(rec["vote_id"]).strip()
        if not UUID_RE.match(vid):
            raise InputFileError(path, f"{vid!r}", line=line, field="vote_id", expected="a UUID")
        if vid in seen:
            raise InputFileError(
                path,
                f"vote {vid} appears twice (first on line {seen[vid]})",
                line=line,
                field="vote_id",
                expected="unique vote ids",
            )
        seen[vid] = line
        choice = str(rec["choice"]).strip()
        if choice not in VALID_CHOICES:
            raise InputFileError(
                path,
                f"{choice!r}",
                line=line,
                field="choice",
                expected="first, second, skip, model_a, model_b, tie, both_bad or retract",
            )
        left = _opt_str(rec.get("left"))
        if left is not None and left not in VALID_LEFT:
            raise InputFileError(
                path,
                f"{left!r}",
                line=line,
                field="left",
                expected="first, second, model_a or model_b",
            )
        ms_raw = rec.get("response_ms")
        ms: int | None = None
        if _opt_str(ms_raw) is not None:
            try:
                msf = float(str(ms_raw))
            except ValueError as err:
                raise InputFileError(
                    path,
                    f"{ms_raw!r}",
                    line=line,
                    field="response_ms",
                    expected="milliseconds, a whole number >= 0",
                ) from err
            if msf != msf or msf < 0 or msf != int(msf):
                raise InputFileError(
                    path,
                    f"{ms_raw!r}",
                    line=line,
                    field="response_ms",
                    expected="milliseconds, a whole number >= 0",
                )
            ms = int(msf)
        fast_raw = rec.get("fast")
        fast = (
            str(fast_raw).strip().lower() in ("true", "1", "yes") if fast_raw is not None else False
        )
        created: datetime | None = None
        c = _opt_str(rec.get("created_at"))
        if c is not None:
            try:
                created = datetime.fromisoformat(c.replace("Z", "+00:00"))
            except ValueError as err:
                raise InputFileError(
                    path, f"{c!r}", line=line, field="created_at", expected="an ISO 8601 timestamp"
                ) from err
            if created.tzinfo is None:
                created = created.replace(tzinfo=UTC)
        sup = _opt_str(rec.get("supersedes"))
        if sup is not None and not UUID_RE.match(sup):
            raise InputFileError(
                path, f"{sup!r}", line=line, field="supersedes", expected="a vote UUID or empty"
            )
        out.append(
            VoteRecord(
                vid,
                str(rec["study"]).strip(),
                str(rec["annotator"]).strip(),
                str(rec["item_id"]).strip(),
                choice,
                left,
                ms,
                fast,
                created,
                sup,
                path,
                line,
            )
        )
    if not out:
        raise InputFileError(path, "no votes", expected="at least one vote row")
    return out
