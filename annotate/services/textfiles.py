"""Reading user files safely: binary, encoding, size and line-length checks.

Every failure raises :class:`~annotate.errors.InputFileError` naming the file
and line, before anything is written to the database.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.errors import InputFileError

MAX_LINE_BYTES = 4 * 1024 * 1024
"""The longest line accepted in a study or vote file (4 MiB)."""


def read_text(path: Path) -> str:
    """Return the file's text, or raise naming the problem and its line.

    Rejects a missing or empty file, a binary file (NUL bytes), invalid UTF-8
    and any line longer than :data:`MAX_LINE_BYTES`. A UTF-8 byte-order mark is
    dropped.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError as err:
        raise InputFileError(path, "file not found") from err
    except IsADirectoryError as err:
        raise InputFileError(path, "is a folder", expected="a file") from err
    except OSError as err:
        raise InputFileError(path, f"cannot read: {err.strerror}") from err
    if not data.strip():
        raise InputFileError(path, "the file is empty", expected="at least a header or one record")
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise InputFileError(
            path, "binary data (a NUL byte)", line=line, expected="a UTF-8 text file"
        )
    start = 0
    lineno = 1
    n = len(data)
    while start < n:
        end = data.find(b"\n", start)
        if end < 0:
            end = n
        if end - start > MAX_LINE_BYTES:
            raise InputFileError(
                path,
                f"line is {end - start:,} bytes long",
                line=lineno,
                expected=f"lines of at most {MAX_LINE_BYTES:,} bytes",
            )
        start = end + 1
        lineno += 1
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputFileError(
            path,
            f"invalid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start})",
            line=line,
            expected="UTF-8 text",
        ) from err
    return text.removeprefix("\ufeff")


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSON Lines file."""
    text = read_text(path)
    # Split on "\n" only: str.splitlines() also breaks at U+2028, U+0085 and
    # others, which JSON allows raw inside strings.
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputFileError(
                path,
                f"not valid JSON ({err.msg} at column {err.colno})",
                line=lineno,
                expected="one JSON object per line",
            ) from err
        if not isinstance(obj, dict):
            raise InputFileError(
                path,
                f"a JSON {type(obj).__name__}, not an object",
                line=lineno,
                expected="one JSON object per line",
            )
        yield lineno, obj


def read_json_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(record_number, object)`` from a JSON array of objects (1-based records)."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputFileError(
            path, f"not valid JSON ({err.msg})", line=err.lineno, expected="a JSON array of objects"
        ) from err
    if isinstance(data, dict):
        # pandas' orient="columns" layout: {"col": {"0": v, ...}, ...}
        if data and all(isinstance(v, dict) for v in data.values()):
            keys = list(next(iter(data.values())).keys())
            data = [{c: data[c].get(k) for c in data} for k in keys]
        else:
            data = [data]
    if not isinstance(data, list):
        raise InputFileError(path, "not a list of records", expected="a JSON array of objects")
    for i, obj in enumerate(data, start=1):
        if not isinstance(obj, dict):
            raise InputFileError(
                path, f"record {i} is a JSON {type(obj).__name__}", expected="objects"
            )
        yield i, obj


def read_csv(path: Path) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    """Return the header and an iterator of ``(line_number, row)`` of a CSV file.

    Rows with more or fewer cells than the header raise, naming the line.
    """
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except csv.Error as err:
        raise InputFileError(path, f"malformed CSV: {err}", line=1) from err
    header = [h.strip() for h in header]
    if not any(header):
        raise InputFileError(path, "the header row is empty", line=1, expected="column names")
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise InputFileError(
            path, f"duplicate column(s) {', '.join(dupes)}", line=1, expected="unique column names"
        )

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        prev_line = reader.line_num
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as err:
                raise InputFileError(path, f"malformed CSV: {err}", line=prev_line + 1) from err
            lineno = prev_line + 1
            prev_line = reader.line_num
            if not cells or all(not c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise InputFileError(
                    path,
                    f"{len(cells)} cells",
                    line=lineno,
                    expected=f"{len(header)} cells as in the header ({', '.join(header)})",
                )
            yield lineno, dict(zip(header, cells, strict=True))

    return header, rows()


def require_fields(
    path: Path, line: int, record: dict[str, Any], required: list[str], optional: list[str]
) -> None:
    """Raise if ``record`` lacks a required field or has an unknown one."""
    for f in required:
        if f not in record or record[f] is None or (isinstance(record[f], str) and not record[f]):
            raise InputFileError(path, "missing", line=line, field=f, expected="a value")
    allowed = set(required) | set(optional)
    extra = [k for k in record if k not in allowed]
    if extra:
        raise InputFileError(
            path,
            "unknown field",
            line=line,
            field=extra[0],
            expected=f"only {', '.join(sorted(allowed))}",
        )
