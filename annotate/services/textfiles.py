"""Reading user files safely: binary, encoding, size and line-length checks.

Every failure raises :class:`~annotate.errors.InputFileError` naming the file
and line, before anything is written to the database.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.errors import InputFileError
from annotate.names import one_line

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
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise InputFileError(
            path,
            "the file is empty (only a byte-order mark)",
            expected="at least a header or one record",
        )
    return text


def describe(value: Any) -> str:
    """A short, one-line, safe description of a value read from a file, for messages.

    Containers are named, not printed: printing a deeply nested list would
    itself recurse too deep. Long strings are cut to 60 characters.

    Examples
    --------
    >>> describe("a" * 100)
    "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'"
    >>> describe([[1]])
    'a JSON array'
    """
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list | tuple):
        return "a JSON array"
    if not isinstance(value, str) and hasattr(value, "__len__"):
        return f"a {type(value).__name__} value"
    if isinstance(value, str) and len(value) > 60:
        return repr(value[:60])[:-1] + "...'"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        return f"a {value.bit_length()}-bit number"
    return repr(value)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")


def _lone_surrogate(obj: Any) -> tuple[str | None, int] | None:
    """The top-level field and code point of the first lone surrogate in ``obj``, if any."""
    stack: list[tuple[str | None, Any]] = [(None, obj)]
    while stack:
        top, cur = stack.pop()
        if isinstance(cur, str):
            bad = _SURROGATE_CHAR.search(cur)
            if bad is not None:
                return top, ord(bad.group())
        elif isinstance(cur, dict):
            for k, v in cur.items():
                name = top if top is not None else str(k)
                stack.append((name, k))
                stack.append((name, v))
        elif isinstance(cur, list):
            stack.extend((top, v) for v in cur)
    return None


_SURROGATE_CHAR = re.compile("[\ud800-\udfff]")


def check_unicode(path: Path, line: int, obj: Any) -> None:
    """Raise :class:`InputFileError` if a string (or key) in ``obj`` holds a lone surrogate.

    JSON can escape half a surrogate pair (``"\\ud800"``); Python decodes it,
    but the text cannot be encoded as UTF-8, so SQLite could not store it.
    """
    found = _lone_surrogate(obj)
    if found is not None:
        fieldname, code = found
        raise InputFileError(
            path,
            f"a lone surrogate \\u{code:04x}",
            line=line or None,
            field=None if fieldname is None else one_line(fieldname)[:60],
            expected="text that is valid Unicode (a \\ud800-\\udfff escape must be half of a pair)",
        )


def load_json(
    path: Path, raw: str, line: int, expected: str, *, check_surrogates: bool = True
) -> Any:
    """``json.loads(raw)``, raising :class:`InputFileError` instead of crashing.

    Refuses invalid JSON, nesting deeper than Python's recursion limit, numbers
    too long to convert (more than 4,300 digits) and lone surrogates (a
    ``\\ud800`` escape without its pair: such text cannot be stored as UTF-8).
    """
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as err:
        raise InputFileError(
            path,
            f"not valid JSON ({err.msg} at column {err.colno})",
            line=line if line else err.lineno,
            expected=expected,
        ) from err
    except RecursionError as err:
        raise InputFileError(
            path, "JSON nested too deeply", line=line or None, expected=expected
        ) from err
    except ValueError as err:  # int("9" * 5000): "Exceeds the limit (4300 digits) ..."
        raise InputFileError(
            path,
            f"a number too long to read ({str(err).split(':')[0]})",
            line=line or None,
            expected=expected,
        ) from err
    if check_surrogates and _SURROGATE_ESCAPE.search(raw):
        check_unicode(path, line, obj)
    return obj


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSON Lines file."""
    text = read_text(path)
    # Split on "\n" only: str.splitlines() also breaks at U+2028, U+0085 and
    # others, which JSON allows raw inside strings.
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        obj = load_json(path, line, lineno, "one JSON object per line")
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
    data = load_json(path, text, 0, "a JSON array of objects", check_surrogates=False)
    surrogates = _SURROGATE_ESCAPE.search(text) is not None
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
        if surrogates:
            check_unicode(path, i, obj)
        yield i, obj


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def text_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` with their ends, as ``io.StringIO(text, newline="")`` gives them
    (split after ``\r\n``, ``\r`` or ``\n``), one at a time.

    What :func:`csv.reader` reads: a ``StringIO`` holds its text as 4 bytes a character (a
    190 MB vote file: 760 MB beside the text itself), these lines only one at a time.
    """
    return (m.group() for m in _LINE.finditer(text))


def read_csv(path: Path) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    """Return the header and an iterator of ``(line_number, row)`` of a CSV file.

    Rows with more or fewer cells than the header raise, naming the line.
    """
    text = read_text(path)
    reader = csv.reader(text_lines(text))
    try:
        header = next(reader)
    except csv.Error as err:
        raise InputFileError(path, f"malformed CSV: {err}", line=1) from err
    except StopIteration as err:
        raise InputFileError(path, "no header row", line=1, expected="column names") from err
    header = [h.strip() for h in header]
    if not any(header):
        raise InputFileError(path, "the header row is empty", line=1, expected="column names")
    counts = Counter(header)
    dupes = sorted(h for h, n in counts.items() if n > 1)
    if dupes:
        raise InputFileError(
            path,
            f"duplicate column(s) {one_line(', '.join(dupes))[:200]}",
            line=1,
            expected="unique column names",
        )
    return header, _csv_rows(path, reader, header, 0)


def csv_rows_from(
    path: Path, text: str, header: list[str], line: int
) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows :func:`read_csv` yields for the lines of ``path`` from line ``line`` on,
    whose text (from the start of that line) is ``text``: the same ``(line_number, row)``
    pairs and the same errors, for a file whose lines before ``line`` each hold one
    whole record (no quoted line break)."""
    return _csv_rows(path, csv.reader(text_lines(text)), header, line - 1)


def _csv_rows(
    path: Path, reader: Any, header: list[str], offset: int
) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows of ``reader`` (a :func:`csv.reader`) after ``header`` as ``(line_number,
    row)``, the line numbers ``offset`` past the reader's own count; blank rows skipped,
    rows with more or fewer cells than the header raise, naming the line."""
    shown = one_line(", ".join(header))[:200]
    prev_line = offset + reader.line_num
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise InputFileError(path, f"malformed CSV: {err}", line=prev_line + 1) from err
        lineno = prev_line + 1
        prev_line = offset + reader.line_num
        if not cells or all(not c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise InputFileError(
                path,
                f"{len(cells)} cells",
                line=lineno,
                expected=f"{len(header)} cells as in the header ({shown})",
            )
        yield lineno, dict(zip(header, cells, strict=True))


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
            field=one_line(extra[0])[:60],
            expected=f"only {', '.join(sorted(allowed))}",
        )
