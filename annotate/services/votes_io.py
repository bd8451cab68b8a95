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
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from annotate.choices import LEFT_CHOICES, Choice
from annotate.errors import InputFileError
from annotate.names import (
    STUDY_NAME_RULE,
    InvalidNameError,
    check_study_name,
    normalize_annotator,
    one_line,
)
from annotate.services.textfiles import MAX_LINE_BYTES, describe, read_csv, read_jsonl
from annotate.store.repo import VOTE_COLUMNS

FORMATS = ("csv", "jsonl", "parquet")
REQUIRED = ("vote_id", "study", "annotator", "item_id", "choice")
OPTIONAL = (
    "kind",
    "left",
    "response_ms",
    "fast",
    "created_at",
    "supersedes",
    "study_fingerprint",
    "selection_probability",
)
EXPORT_COLUMNS = (*VOTE_COLUMNS, "study_fingerprint", "selection_probability")
"""Columns of an exported vote file: the stored vote columns, the study's fingerprint, then
the probability with which an adaptive schedule chose the item (empty otherwise)."""
PROBABILITY_EXPECTED = "a probability greater than 0 and at most 1 (a decimal number), or empty"
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
    selection_probability: float | None = None
    """The adaptive schedule's probability of the item (``vote.selection_probability``);
    None when empty or in older files."""


def is_vote_file(columns: set[str]) -> bool:
    return set(REQUIRED) <= columns


def _iso(dt: Any) -> str:
    if isinstance(dt, str):
        dt = datetime.fromisoformat(dt)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return str(dt.astimezone(UTC).isoformat().replace("+00:00", "Z"))


def iso_stamp(value: Any) -> str:
    """A stored ``created_at`` as exports write it: ISO 8601 in UTC with ``Z``."""
    return _iso(value)


def vote_dicts(rows: list[tuple[Any, ...]], fingerprint: str = "") -> list[dict[str, Any]]:
    """Vote rows (``VOTE_COLUMNS`` order) as export records (``EXPORT_COLUMNS``).

    Parameters
    ----------
    rows : list of tuple
        Rows from :func:`annotate.store.repo.vote_records`; with
        ``with_probability=True`` each ends with ``selection_probability`` (else that
        column is left empty).
    fingerprint : str
        The study's fingerprint, written to every row as ``study_fingerprint``
        (empty when unknown).
    """
    out = []
    for r in rows:
        d = dict(zip(VOTE_COLUMNS, r[: len(VOTE_COLUMNS)], strict=True))
        d["created_at"] = _iso(d["created_at"])
        d["study_fingerprint"] = fingerprint or None
        d["selection_probability"] = r[len(VOTE_COLUMNS)] if len(r) > len(VOTE_COLUMNS) else None
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


def read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The records of a CSV, JSON Lines or Parquet file, each with its line (or row) number."""
    return list(_records(path))


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`read_records` one record at a time (CSV and JSON Lines: nothing kept; the
    errors of the file's shape, such as a row with another number of cells, are raised
    when their row is reached)."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        _, rows = read_csv(path)
        return rows
    if suffix == ".jsonl":
        return read_jsonl(path)
    if suffix == ".parquet":
        import pandas as pd

        try:
            df = pd.read_parquet(path)
        except Exception as err:  # pyarrow raises many types for a bad file
            raise InputFileError(path, f"not a readable Parquet file ({err})") from err
        df = df.astype(object).where(df.notna(), None)
        return iter([(i + 1, rec) for i, rec in enumerate(df.to_dict(orient="records"))])
    raise InputFileError(path, f"unknown file type {suffix!r}", expected=".csv, .jsonl or .parquet")


UUID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)
VALID_CHOICES = frozenset(c.value for c in Choice)
VALID_LEFT = frozenset(half.value for halves in LEFT_CHOICES.values() for half in halves)
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


def _probability(path: Path, line: int, raw: Any) -> float | None:
    """A selection probability in (0, 1], or None when empty."""
    text = _opt_str(raw)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 1:  # also refuses nan
        raise InputFileError(
            path,
            describe(raw),
            line=line,
            field="selection_probability",
            expected=PROBABILITY_EXPECTED,
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


@dataclass(frozen=True)
class VoteTable:
    """A vote CSV read column-wise: the fast path of :func:`parse_vote_file`.

    Built only when every row passes the same checks :func:`parse_vote_file` makes,
    so importing it gives exactly what importing the records would. Columns are
    ``pyarrow`` arrays in file order (row ``i`` is on line ``i + 2``); ``None`` in a
    column means the file leaves it empty.
    """

    path: Path
    uuid: Any
    """Vote ids (``pyarrow.StringArray``)."""
    study: Any
    """Study names, stripped (``pyarrow.StringArray``)."""
    annotator: Any
    """Annotator names, normalised (``pyarrow.StringArray``)."""
    item_key: Any
    """Item keys, stripped (``pyarrow.StringArray``)."""
    choice: Any
    """Choices, stripped (``pyarrow.StringArray``)."""
    swapped: Any
    """``left`` is the second question or model B (``pyarrow.BooleanArray``, null when empty)."""
    response_ms: Any
    """``pyarrow.Int64Array``, null when empty."""
    fast: Any
    """``pyarrow.BooleanArray``, null when empty."""
    created_at: Any
    """Naive UTC ``YYYY-MM-DD HH:MM:SS[.ffffff]`` as the store writes it, null when empty."""
    supersedes: Any
    """``pyarrow.StringArray``, null when empty."""
    study_fingerprint: Any
    """``pyarrow.StringArray``, null when empty."""
    selection_probability: Any = None
    """``pyarrow.DoubleArray``, null when empty; None when the file has no such column."""
    supersedes_row: Any = None
    """Row of the vote each row's ``supersedes`` names (``numpy`` int64), -1 where
    ``supersedes`` is empty or names no vote id of this file (:func:`uuid_rows`, found
    by the reader beside its checks)."""

    def __len__(self) -> int:
        return len(self.uuid)


class _NotFastError(Exception):
    """The fast path does not apply (or a row is bad): use the per-row path."""


class _RowsRefusedError(_NotFastError):
    """A plain vote CSV the fast path read, with a row that fails one of its checks."""

    def __init__(self, rows: int) -> None:
        super().__init__(rows)
        self.rows = rows


@dataclass(frozen=True)
class FastRead:
    """What the fast path made of a file (:func:`fast_vote_table`)."""

    table: VoteTable | None
    """The checked columns; None where the fast path does not take the file."""
    refused_rows: int = 0
    """The file's rows, where it is a plain vote CSV with a row that fails a check (most
    often a bad row, which :func:`parse_vote_file` names; sometimes a form only the
    per-row path reads); else 0."""


_PROBABILITY_PATTERN = r"^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$"
_UUID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


def _mapped(col: Any, fn: Any, out_type: Any) -> Any:
    """``fn`` applied to each distinct value of ``col`` (few), spread back over the rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(col)
    distinct = enc.dictionary.to_pylist()
    values = [fn(u) for u in distinct]
    if values == distinct and col.type == out_type:
        return col  # every value its own result (no nulls): the column as it is
    return pc.take(pa.array(values, type=out_type), enc.indices)


def _plain_csv_bytes(path: Path) -> bytes:
    """The bytes of a CSV the fast path can read, BOM dropped; else :class:`_NotFastError`.

    Takes only files that :func:`~annotate.services.textfiles.read_text` accepts and
    in which every record is one line: no quotes or carriage returns (a blank line is
    found by :func:`_parse_vote_table`: the CSV reader skips it, so the rows are fewer
    than the lines).
    """
    try:
        data = path.read_bytes()
    except OSError as err:
        raise _NotFastError from err
    data = data.removeprefix(b"\xef\xbb\xbf")
    if not data or data.isspace() or b"\x00" in data or b'"' in data or b"\r" in data:
        raise _NotFastError
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise _NotFastError from err
    # a line longer than MAX_LINE_BYTES covers a whole aligned window of half that size
    step = MAX_LINE_BYTES // 2
    if any(data.find(b"\n", a, a + step) < 0 for a in range(0, len(data) - step + 1, step)):
        raise _NotFastError
    return data


def _uuid_chars(col: Any) -> Any:
    """The characters of a string column as an ``(n, 36)`` byte matrix, or :class:`_NotFastError`
    unless every value is 36 hex digits and dashes laid out as a UUID."""
    import numpy as np

    n = len(col)
    if col.null_count:
        raise _NotFastError
    offsets = np.frombuffer(col.buffers()[1], dtype=np.int32)[col.offset : col.offset + n + 1]
    if offsets[-1] - offsets[0] != 36 * n or np.any(np.diff(offsets) != 36):
        raise _NotFastError
    raw = np.frombuffer(col.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    chars = raw.reshape(n, 36)
    # each byte's class (1 a hex digit, 2 a dash, 0 anything else) against the layout,
    # a slice of rows at a time (bounded temporaries)
    kind = np.zeros(256, dtype=np.uint8)
    kind[list(b"0123456789abcdefABCDEF")] = 1
    kind[ord("-")] = 2
    layout = np.ones(36, dtype=np.uint8)
    layout[[8, 13, 18, 23]] = 2
    for a in range(0, n, _STAMP_CHUNK):
        if not np.array_equal(
            kind[chars[a : a + _STAMP_CHUNK]],
            np.broadcast_to(layout, (min(n - a, _STAMP_CHUNK), 36)),
        ):
            raise _NotFastError
    return chars


_HASH_MULTIPLIERS = (
    0x9E3779B97F4A7C15,
    0xC2B2AE3D27D4EB4F,
    0x165667B19E3779F9,
    0xD6E8FEB86659FD93,
    0xFF51AFD7ED558CCD,
)
"""Odd 64-bit constants (from xxHash and MurmurHash3) mixing the words of a UUID."""


def _duplicates_possible(chars: Any) -> bool:
    """Whether two UUIDs (an ``(n, 36)`` byte matrix) may be equal: False when 64-bit hashes
    of their 36 bytes all differ (equal values have equal hashes; an exact comparison
    decides when two hashes are equal)."""
    return len(chars) >= 2 and _repeats(_uuid_hashes(chars))


def _repeats(key: Any) -> bool:
    """Whether a value occurs twice in ``key`` (``numpy`` uint64)."""
    return _sorted_hashes(key) is None


def sorted_uuid_hashes(key: Any) -> tuple[Any, Any] | None:
    """:func:`_sorted_hashes` of vote ids' :func:`_uuid_hashes` (the lookup table of
    :func:`uuid_rows`), or None when two hashes are equal."""
    return _sorted_hashes(key)


def _sorted_hashes(key: Any) -> tuple[Any, Any] | None:
    """``key`` (``numpy`` uint64) sorted, with the positions that sort it (``argsort``), or
    None when a value occurs twice: the lookup table of :func:`uuid_rows` (two arrays of
    ``n`` words, less memory than a hash table of ``n`` entries)."""
    import numpy as np

    order = np.argsort(key)
    ordered = key[order]
    if np.any(ordered[1:] == ordered[:-1]):
        return None
    return ordered, order


def _uuid_hashes(chars: Any) -> Any:
    """A 64-bit hash of each row of an ``(n, 36)`` byte matrix (``numpy`` uint64): equal
    rows, equal hashes."""
    import numpy as np

    n = len(chars)
    rows = np.ascontiguousarray(chars)

    def word(at: int, dtype: str) -> Any:
        return np.ndarray((n,), dtype=dtype, buffer=rows, offset=at, strides=(36,))

    words = [word(at, "<u8") for at in (0, 8, 16, 24)] + [word(32, "<u4").astype(np.uint64)]
    key = np.zeros(n, dtype=np.uint64)
    for w, k in zip(words, _HASH_MULTIPLIERS, strict=True):
        key ^= w * np.uint64(k)
        key ^= key >> np.uint64(29)
    return key


def uuid_rows(ids: Any, hashes: Any, values: Any) -> Any:
    """The row of ``ids`` (vote ids, a ``pyarrow`` string array) holding each of ``values``
    (a ``pyarrow`` string array without nulls), -1 where none does (``numpy`` int64):
    what ``pyarrow.compute.index_in(values, value_set=ids)`` gives for distinct ids.

    ``hashes``: :func:`_sorted_hashes` of the ids' :func:`_uuid_hashes` (all distinct), or
    None. With it, UUID-shaped values are matched by their 64-bit
    hashes and every match is confirmed byte for byte: a value equal to an id has that
    id's hash, the only row with it, so a hash that matches a row whose bytes differ
    means no row. Without it (or for other values) the strings are looked up."""
    import numpy as np
    import pyarrow.compute as pc

    if hashes is not None and len(values) and len(hashes[0]):
        try:
            wanted = _uuid_chars(values)
        except _NotFastError:
            wanted = None
        if wanted is not None:
            ordered, order = hashes
            key = _uuid_hashes(wanted)
            at = np.minimum(np.searchsorted(ordered, key), len(ordered) - 1)
            rows = np.where(ordered[at] == key, order[at], -1).astype(np.int64)
            hit = np.flatnonzero(rows >= 0)
            stored = _uuid_chars(ids.take(rows[hit]))
            same = np.all(stored == wanted[hit], axis=1)
            rows[hit[~same]] = -1
            return rows
    found = pc.index_in(values, value_set=ids)
    return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def read_vote_table(path: Path) -> VoteTable | None:
    """The fast path of :func:`parse_vote_file` for a CSV, or None where it does not apply.

    Reads a plain CSV (no quoted cells) column-wise and makes every check of
    :func:`parse_vote_file` in vectorised passes; None for any other file, or when a
    row fails a check (then :func:`parse_vote_file` names it).
    """
    return fast_vote_table(path).table


def fast_vote_table(path: Path) -> FastRead:
    """:func:`read_vote_table`, saying whether a row was refused (:class:`FastRead`)."""
    if path.suffix.lower() != ".csv":
        return FastRead(None)
    import pyarrow as pa

    try:
        return FastRead(_parse_vote_table(path))
    except _RowsRefusedError as err:
        return FastRead(None, err.rows)
    except _NotFastError:
        return FastRead(None)
    finally:
        # the raw columns and the checks' temporaries are freed: hand their pages back to
        # the system now (arrow's allocator keeps them a while, adding to the peak RSS)
        pa.default_memory_pool().release_unused()


def _parse_vote_table(path: Path) -> VoteTable:
    """The columns of a plain vote CSV, or :class:`_NotFastError`."""
    import pyarrow as pa

    data = _plain_csv_bytes(path)
    header = _plain_header(data)
    # one row per line after the header: a blank line (which the reader skips, and the
    # per-row path names) makes them fewer
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    try:  # a plain CSV with a vote header: what is refused from here is in its rows
        table = _read_plain_csv(pa.py_buffer(data), header, header_line=True)
        del data
        n = table.num_rows
        if n == 0 or n != lines - 1:
            raise _NotFastError
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="annotate-read-votes") as pool:
            checked, _ = _checked_vote_columns(path, table, pool, whole=True)
    except _NotFastError:
        raise _RowsRefusedError(lines - 1) from None
    return checked


def _plain_header(data: bytes) -> list[str]:
    """The column names on the first line of ``data`` (a :func:`_plain_csv_bytes` file), or
    :class:`_NotFastError` unless they are distinct known vote fields with the required ones."""
    nl = data.find(b"\n")
    if nl < 0:
        raise _NotFastError
    header = data[:nl].decode("utf-8").split(",")  # whole-file UTF-8 checked already
    if (
        any(h != h.strip() for h in header)
        or len(set(header)) != len(header)
        or not KNOWN_FIELDS.issuperset(header)
        or not set(REQUIRED) <= set(header)
    ):
        raise _NotFastError
    return header


def _read_plain_csv(buf: Any, header: list[str], *, header_line: bool) -> Any:
    """A ``pyarrow`` table of text columns ``header`` from the CSV bytes ``buf`` (a ``pyarrow``
    buffer), whose first line is the header line if ``header_line`` (else every line is a
    row)."""
    import pyarrow as pa
    from pyarrow import csv as pacsv

    try:
        return pacsv.read_csv(
            pa.BufferReader(buf),
            read_options=pacsv.ReadOptions(
                use_threads=True,
                block_size=1 << 24,
                column_names=None if header_line else header,
            ),
            parse_options=pacsv.ParseOptions(
                quote_char=False, double_quote=False, newlines_in_values=False
            ),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(header, pa.string()),
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as err:  # a row with another number of cells
        raise _NotFastError from err


def _checked_vote_columns(
    path: Path, table: Any, pool: ThreadPoolExecutor, *, whole: bool
) -> tuple[VoteTable, Any]:
    """The rows of ``table`` (text columns of a plain vote CSV) checked as
    :func:`parse_vote_file` checks them, as a :class:`VoteTable`; or :class:`_NotFastError`.

    ``whole``: ``table`` is the whole file; its vote ids are checked distinct and each
    ``supersedes`` looked up (``supersedes_row``). Otherwise (a chunk of a file read by
    :func:`read_vote_chunks`) those cross-row checks are the caller's, and the second
    value is the vote ids' :func:`_uuid_hashes` (``numpy`` uint64) for them.
    Two of the checks run in ``pool``'s threads beside the caller's.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows

    def column(name: str) -> Any:
        if name in table.column_names:
            return table.column(name).combine_chunks()
        return pa.array([""], pa.string()).take(pa.array([0] * n))

    def check(mask: Any) -> None:
        if not pc.all(mask).as_py():
            raise _NotFastError

    def empty_as_null(col: Any) -> Any:
        return pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), col)

    def ids_in_worker() -> tuple[Any, Any, Any, Any]:
        """Vote ids and supersedes: numpy and arrow kernels on whole columns, which release
        the GIL (a worker thread runs them beside the Python work, another the stamps)."""
        uuid = column("vote_id")
        key = _uuid_hashes(_uuid_chars(uuid))
        sup = empty_as_null(column("supersedes"))
        check(pc.fill_null(pc.match_substring_regex(sup, _UUID_PATTERN), True))
        if not whole:
            return uuid, sup, None, key
        hashes = _sorted_hashes(key)
        if hashes is None:
            if pc.count_distinct(uuid).as_py() != n:
                raise _NotFastError
            hashes = None  # distinct ids whose hashes collide: looked up as strings
        sup_row = np.full(n, -1, dtype=np.int64)
        child = np.flatnonzero(pc.is_valid(sup).to_numpy(zero_copy_only=False))
        if child.size:
            sup_row[child] = uuid_rows(uuid, hashes, sup.take(pa.array(child)))
        return uuid, sup, sup_row, None

    ids = pool.submit(ids_in_worker)
    stamps = pool.submit(_naive_stamps, column("created_at"))
    try:
        columns = _checked_in_caller(table, column, check, empty_as_null)
    finally:  # the workers are waited for on every exit (a _NotFastError of any side)
        wait([ids, stamps])
    uuid, sup, supersedes_row, key = ids.result()
    created_at = stamps.result()
    study, annotator, item_key, choice, swapped, fp, fast, response_ms, probability = columns
    checked = VoteTable(
        path=path,
        uuid=uuid,
        study=study,
        annotator=annotator,
        item_key=item_key,
        choice=choice,
        swapped=swapped,
        response_ms=response_ms,
        fast=fast,
        created_at=created_at,
        supersedes=sup,
        study_fingerprint=fp,
        selection_probability=probability,
        supersedes_row=supersedes_row,
    )
    return checked, key


@dataclass
class VoteCsvChunks:
    """A plain vote CSV (the fast path's kind) cut into chunks of whole lines, to be
    checked and imported one after the other (:func:`read_vote_chunks`)."""

    path: Path
    data: Any
    """The file's bytes after the header line (a ``pyarrow`` buffer); None once
    :func:`read_vote_chunks` has read the last chunk (the memory is given back then)."""
    header: list[str]
    bounds: list[tuple[int, int]]
    """Byte range of each chunk in ``data`` (whole lines)."""
    lines: list[int]
    """Lines in each chunk (its line ends, plus a last line without one)."""
    rows: int
    """Lines after the header: the rows, if the file is one the fast path takes."""

    def __len__(self) -> int:
        return self.rows


def open_vote_chunks(
    path: Path, chunk_rows: int, first_rows: int | None = None
) -> VoteCsvChunks | None:
    """``path`` cut into chunks of about ``chunk_rows`` lines (whole lines, by bytes at the
    file's mean line length; the first of about ``first_rows`` if given), when its bytes
    and header are those of a file :func:`read_vote_table` may take; else None. The rows
    are not checked yet."""
    import pyarrow as pa

    if path.suffix.lower() != ".csv" or chunk_rows < 1:
        return None
    try:
        raw = _plain_csv_bytes(path)
        header = _plain_header(raw)
    except _NotFastError:
        return None
    body = raw.index(b"\n") + 1
    size = len(raw) - body
    # the mean line length from the first lines (the lines are counted chunk by chunk)
    probe = min(size, _LENGTH_PROBE)
    probe_lines = raw.count(b"\n", body, body + probe)
    step = max(1, probe * chunk_rows // max(probe_lines, 1))
    first = step if first_rows is None else max(1, probe * first_rows // max(probe_lines, 1))
    bounds: list[tuple[int, int]] = []
    lines: list[int] = []
    a = 0
    while a < size:
        nl = raw.find(b"\n", body + min(a + (step if bounds else first), size) - 1)
        b = size if nl < 0 else nl + 1 - body
        bounds.append((a, b))
        # counted here, in place (bytes.count of a range): read_vote_chunks would copy
        # each chunk out of the arrow buffer to count them
        lines.append(raw.count(b"\n", body + a, body + b) + (nl < 0))
        a = b
    rows = sum(lines)
    return VoteCsvChunks(path, pa.py_buffer(raw).slice(body), header, bounds, lines, rows)


_LENGTH_PROBE = 1 << 22
"""Bytes at the start of a vote CSV whose lines give :func:`open_vote_chunks` the mean line
length."""


def read_vote_chunks(
    chunks: VoteCsvChunks,
) -> Iterator[tuple[VoteTable, Any]]:
    """Each chunk of ``chunks`` checked as :func:`read_vote_table` checks a whole file, but
    for the checks across rows (distinct vote ids, what ``supersedes`` names), which are
    the caller's: a :class:`VoteTable` (``supersedes_row`` None) and the vote ids'
    64-bit hashes (:func:`_uuid_hashes`). Raises :class:`_NotFastError` at the first chunk
    the fast path does not take (then :func:`parse_vote_file` names the bad row)."""
    import pyarrow as pa

    if not chunks.rows or chunks.data is None:
        raise _NotFastError
    data, chunks.data = chunks.data, None
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="annotate-read-votes") as pool:
        for (a, b), lines in zip(chunks.bounds, chunks.lines, strict=True):
            chunk = data.slice(a, b - a)
            table = _read_plain_csv(chunk, chunks.header, header_line=False)
            # one row per line: a blank line (skipped by the reader) makes them fewer
            if table.num_rows == 0 or table.num_rows != lines:
                raise _NotFastError
            if b == data.size:
                del (
                    data,
                    chunk,
                )  # the file's bytes: read whole, given back before the last rows go in
            yield _checked_vote_columns(chunks.path, table, pool, whole=False)
            del table
            pa.default_memory_pool().release_unused()


def _checked_in_caller(table: Any, column: Any, check: Any, empty_as_null: Any) -> tuple[Any, ...]:
    """The columns of :func:`_parse_vote_table` checked with Python functions on their
    distinct values (names, keys, choices, flags), and the numbers; or :class:`_NotFastError`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def study_name(raw: str) -> str:
        try:
            return check_study_name(raw.strip())
        except InvalidNameError:
            raise _NotFastError from None

    def annotator_name(raw: str) -> str:
        if not raw.strip():
            raise _NotFastError
        try:
            return normalize_annotator(raw)
        except InvalidNameError:
            raise _NotFastError from None

    def stripped(allowed: frozenset[str] | None) -> Any:
        def fn(raw: str) -> str:
            value = raw.strip()
            if not value or (allowed is not None and value not in allowed):
                raise _NotFastError
            return value

        return fn

    def optional(allowed: frozenset[str] | None, pattern: re.Pattern[str] | None = None) -> Any:
        def fn(raw: str) -> str | None:
            value = _opt_str(raw)
            if value is not None and (
                (allowed is not None and value not in allowed)
                or (pattern is not None and not pattern.match(value))
            ):
                raise _NotFastError
            return value

        return fn

    def fast_value(raw: str) -> bool | None:
        value = _opt_str(raw)
        return None if value is None else value.lower() in ("true", "1", "yes")

    study = _mapped(column("study"), study_name, pa.string())
    annotator = _mapped(column("annotator"), annotator_name, pa.string())
    item_key = _mapped(column("item_id"), stripped(None), pa.string())
    choice = _mapped(column("choice"), stripped(VALID_CHOICES), pa.string())

    def left_value(raw: str) -> bool | None:
        value = optional(VALID_LEFT)(raw)
        return None if value is None else value in ("second", "model_b")

    swapped = _mapped(column("left"), left_value, pa.bool_())
    fp = _mapped(column("study_fingerprint"), optional(None, _FINGERPRINT_RE), pa.string())
    fast = _mapped(column("fast"), fast_value, pa.bool_())
    ms_raw = empty_as_null(column("response_ms"))
    check(pc.fill_null(pc.match_substring_regex(ms_raw, "^[0-9]{1,18}$"), True))
    response_ms = pc.cast(ms_raw, pa.int64())
    probability = None  # no such column (older exports)
    if "selection_probability" in table.column_names:
        prob_raw = empty_as_null(column("selection_probability"))
        # a plain decimal (what float's repr writes): arrow's parser gives float()'s value
        check(pc.fill_null(pc.match_substring_regex(prob_raw, _PROBABILITY_PATTERN), True))
        probability = pc.cast(prob_raw, pa.float64())
        in_range = pc.and_(pc.greater(probability, 0), pc.less_equal(probability, 1))
        check(pc.fill_null(in_range, True))
    return study, annotator, item_key, choice, swapped, fp, fast, response_ms, probability


_STAMP_SUFFIXES = (b"", b"Z", b"+00:00")
"""What may follow the seconds (and their fraction) of a timestamp the fast path takes."""


def _naive_stamps(col: Any) -> Any:
    """ISO timestamps in UTC (``Z``, ``+00:00`` or none) as naive ``YYYY-MM-DD HH:MM:SS[.f]``.

    ``col`` is a ``pyarrow`` string array without nulls, an empty value meaning none (null
    in the result). Exactly what ``datetime.fromisoformat`` and ``isoformat(sep=" ")``
    make of them (a fraction of zero dropped): ``YYYY-MM-DDTHH:MM:SS``, then optionally
    ``.`` and six digits, then optionally ``Z`` or ``+00:00``; any other form, or an
    impossible date or time, is :class:`_NotFastError`. Checked and rewritten as a byte
    matrix (one row per value, 32 bytes wide), not per value.
    """
    import pyarrow as pa

    if len(col) <= _STAMP_CHUNK:
        return _naive_stamp_chunk(col)
    # in slices: the byte matrices of a million values would add ~200 MB at the peak
    return pa.concat_arrays(
        [_naive_stamp_chunk(col.slice(a, _STAMP_CHUNK)) for a in range(0, len(col), _STAMP_CHUNK)]
    )


_STAMP_CHUNK = 1 << 17
"""Timestamps checked at a time by :func:`_naive_stamps`."""


def _naive_stamp_chunk(col: Any) -> Any:
    """:func:`_naive_stamps` of at most :data:`_STAMP_CHUNK` values."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(col)
    offsets = np.frombuffer(col.buffers()[1], dtype=np.int32)[col.offset : col.offset + n + 1]
    size = np.diff(offsets)
    given = np.flatnonzero(size)
    if not given.size:
        return pa.nulls(n, pa.string())
    raw = np.frombuffer(col.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    buf = np.zeros(len(raw) + 32, dtype=np.uint8)  # room to read past the last value
    buf[: len(raw)] = raw
    width = size[given]
    # rows of a sliding window: no (n, 32) index array
    m = np.lib.stride_tricks.sliding_window_view(buf, 32)[offsets[given] - offsets[0]]
    digit = (m >= ord("0")) & (m <= ord("9"))

    def is_text(at: int, text: bytes) -> Any:
        return np.all(m[:, at : at + len(text)] == np.frombuffer(text, dtype=np.uint8), axis=1)

    ok = (
        np.all(digit[:, [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]], axis=1)
        & is_text(4, b"-")
        & is_text(7, b"-")
        & is_text(10, b"T")
        & is_text(13, b":")
        & is_text(16, b":")
    )
    fraction = is_text(19, b".") & np.all(digit[:, 20:26], axis=1)
    form = np.zeros(len(given), dtype=bool)
    for suffix in _STAMP_SUFFIXES:
        form |= (width == 19 + len(suffix)) & ((not suffix) | is_text(19, suffix))
        form |= fraction & (width == 26 + len(suffix)) & ((not suffix) | is_text(26, suffix))
    if not np.all(ok & form):
        raise _NotFastError

    def number(a: int, b: int) -> Any:
        out = np.zeros(len(given), dtype=np.int64)
        for k in range(a, b):
            out = out * 10 + (m[:, k] - ord("0"))
        return out

    year, month, day = number(0, 4), number(5, 7), number(8, 10)
    hour, minute, second = number(11, 13), number(14, 16), number(17, 19)
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    days = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(month, 0, 12)]
    days = days + ((month == 2) & leap)
    if not bool(
        np.all(
            (year >= 1)
            & (month >= 1)
            & (month <= 12)
            & (day >= 1)
            & (day <= days)
            & (hour < 24)
            & (minute < 60)
            & (second < 60)
        )
    ):
        raise _NotFastError
    # the store's form: a space for the T, the fraction kept unless it is .000000
    keep = fraction & ~is_text(19, b".000000")
    out = m[:, :26].copy()
    out[:, 10] = ord(" ")
    out_size = np.zeros(n, dtype=np.int64)
    out_size[given] = np.where(keep, 26, 19)
    data = out[np.arange(26) < out_size[given][:, None]]  # each row's first 19 or 26 bytes
    out_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(out_size, out=out_offsets[1:])
    stamps = pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(out_offsets), pa.py_buffer(data)]
    )
    if len(given) == n:
        return stamps
    return pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), stamps)


def read_votes(path: Path, fast: FastRead | None = None) -> VoteTable | list[VoteRecord]:
    """A vote file for import: a :class:`VoteTable` when the fast path applies.

    The fast path reads a plain CSV (no quoted cells) column-wise and checks every
    row with vectorised passes; a file it does not take, or with a bad row, is read
    by :func:`parse_vote_file`, which raises naming the file, line and field of the
    first bad row.
    """
    fast = fast_vote_table(path) if fast is None else fast
    if fast.table is not None:
        return fast.table
    if fast.refused_rows >= CHECK_FIRST_ROWS:
        check_vote_file(path)
    return parse_vote_file(path)


CHECK_FIRST_ROWS = 50_000
"""From this many rows, a plain vote CSV with a row the fast path refuses is first checked
by :func:`check_vote_file`, which keeps no row: a bad row of a large file is named without
holding the whole file as Python objects (a million rows: ~3.3 GB and ~24 s before)."""


def check_vote_file(path: Path) -> None:
    """Raise the error :func:`parse_vote_file` raises for ``path``, if any, keeping no row.

    The same checks, one pass over the rows (:func:`_checked_records`), so the first
    error is the same one, in bounded memory (the file's text and a set of the vote ids
    seen).
    """
    votes = 0
    for _ in _checked_records(path):
        votes += 1
    if not votes:
        raise InputFileError(path, "no votes", expected="at least one vote row")


def parse_vote_file(path: Path) -> list[VoteRecord]:
    """Read and check a vote export file; raise naming file, line and field.

    Checks the shape of every row: ids are UUIDs, names follow the naming rules
    (study names :func:`~annotate.names.check_study_name`, annotator names are
    normalised with :func:`~annotate.names.normalize_annotator`), numbers and
    timestamps are in range. Whether the ids exist is checked at import.
    """
    out = list(_checked_records(path))
    if not out:
        raise InputFileError(path, "no votes", expected="at least one vote row")
    return out


def check_vote_rows(
    path: Path, rows: Iterator[tuple[int, dict[str, Any]]], seen: dict[str, int]
) -> None:
    """Raise the error :func:`check_vote_file` raises for ``path``, if any, from the rows of
    the file from some line on (``rows``, as :func:`~annotate.services.textfiles.read_csv`
    yields them), when every row before them passes every check and ``seen`` holds their
    vote ids (id -> line). Where no row of ``rows`` is refused, the file holds votes."""
    for _ in _checked_records(path, rows, seen):
        pass


def _checked_records(
    path: Path,
    rows: Iterator[tuple[int, dict[str, Any]]] | None = None,
    seen: dict[str, int] | None = None,
) -> Iterator[VoteRecord]:
    """The votes of ``path`` checked one at a time, none of its rows ever all held (``rows``:
    its records from some line on, ``seen`` the vote ids before them; default: all).

    The first error is the one of reading every row before checking any field: a row's
    shape (another number of cells, a line that is no JSON object) anywhere in the file
    comes before any field error. So after a field error the rows after it are still
    read, and the first shape error among them, if any, is raised instead.
    """
    rows = _records(path) if rows is None else rows
    try:
        yield from _vote_records(path, _shape_marked(rows), seen)
    except _ShapeError as err:  # before any field error: the first error either way
        raise err.error from None
    except InputFileError:  # a field error: a shape error after it comes first
        for _ in rows:
            pass
        raise


class _ShapeError(Exception):
    """A shape error of the rows, told apart from the field errors of their records."""

    def __init__(self, error: InputFileError) -> None:
        super().__init__(str(error))
        self.error = error


def _shape_marked(
    rows: Iterator[tuple[int, dict[str, Any]]],
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``rows`` with their errors as :class:`_ShapeError`; ``rows`` itself is left open
    when this stops (no ``yield from``, which would close it)."""
    while True:
        try:
            item = next(rows)
        except StopIteration:
            return
        except InputFileError as err:
            raise _ShapeError(err) from None
        yield item


def _vote_records(
    path: Path,
    records: Iterator[tuple[int, dict[str, Any]]],
    seen: dict[str, int] | None = None,
) -> Iterator[VoteRecord]:
    """The checked votes of :func:`parse_vote_file`, one at a time (``records``: its rows;
    ``seen``: the vote ids of the rows before them, id -> line, filled as it goes).

    The shape errors of ``records`` come as their row is reached; :func:`_checked_records`
    makes any shape error in the file come before a field error.
    """
    seen = {} if seen is None else seen
    names: dict[str, str] = {}
    """Annotator names as written -> normalised (names repeat on many rows)."""
    studies: set[str] = set()
    for line, rec in records:
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
        probability = _probability(path, line, rec.get("selection_probability"))
        fp = _opt_str(rec.get("study_fingerprint"))
        if fp is not None and not _FINGERPRINT_RE.match(fp):
            raise InputFileError(
                path,
                describe(fp),
                line=line,
                field="study_fingerprint",
                expected="64 lowercase hex digits (SHA-256), or empty",
            )
        yield VoteRecord(
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
            probability,
        )
