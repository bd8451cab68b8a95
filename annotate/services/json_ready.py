"""JSON documents that are valid under every outcome: NaN and infinities become null.

:func:`json_ready` makes a document valid, :func:`check_json` checks it, and
:func:`indented_json` writes it as ``json.dumps(..., indent=2)`` does, in a fraction of
the time on documents with long lists of numbers (a report's 1,000 x 1,000 pairwise
kappa matrix: the standard library's indented encoder is pure Python).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import math
import operator
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

try:  # the C string encoder json.dumps(ensure_ascii=False) uses
    from _json import encode_basestring as _encode_str
except ImportError:  # pragma: no cover - CPython always has _json
    from json.encoder import py_encode_basestring as _encode_str

_R = TypeVar("_R")

_INT_TYPES = frozenset({int, bool, type(None)})
_FLOAT_TYPES = frozenset({float, type(None)})


def json_ready(obj: Any, *, where: str = "", reasons: dict[str, str] | None = None) -> Any:
    """A copy of ``obj`` in which every non-finite number is None.

    Dicts, lists and tuples are walked; numpy scalars become Python numbers. When
    a dict's value ``key`` is a non-finite number and the dict has no
    ``key + "_reason"``, one is added saying the value is undefined, so a
    reader knows why it is null (``reasons`` maps dotted paths to better wording).

    Examples
    --------
    >>> json_ready({"a": float("nan"), "b": [1.0, float("inf")]})
    {'a': None, 'b': [1.0, None], 'a_reason': 'not a finite number for these data'}
    """
    return _ready(obj, where, reasons, False)


def _ready(obj: Any, where: str, reasons: dict[str, str] | None, fast: bool) -> Any:
    """:func:`json_ready`; with ``fast``, a long matrix of plain numbers becomes a
    :class:`_RawMatrix` of its rows' texts (:func:`ready_json_text`)."""
    if isinstance(obj, dict):
        if _plain_scalars(obj.values()):  # what the loop below would copy as it is
            return obj if fast else dict(obj)  # fast: only written, never handed out
        out: dict[str, Any] = {}
        extra: dict[str, str] = {}
        for k, v in obj.items():
            kind = type(v)
            if kind in _SCALAR_TYPES and (kind is not float or math.isfinite(v)):
                out[k] = v  # what the branches below would give
                continue
            # the dotted path, for ``reasons`` only
            path = (f"{where}.{k}" if where else str(k)) if reasons else ""
            if _bad(v):
                why = (reasons or {}).get(path, "not a finite number for these data")
                if f"{k}_reason" not in obj:
                    extra[f"{k}_reason"] = why
                out[k] = None
            else:
                out[k] = _ready(v, path, reasons, fast)
        out.update(extra)
        return out
    if isinstance(obj, list | tuple):
        if fast and len(obj) > 1 and isinstance(obj[0], list | tuple):
            raw = _raw_matrix(obj)
            if raw is not None:
                return raw
        plain = _plain_numbers(obj)
        if plain is not None:
            return plain
        return [None if _bad(v) else _ready(v, where, reasons, fast) for v in obj]
    if isinstance(obj, np.generic):
        return _ready(obj.item(), where, reasons, fast)
    if isinstance(obj, np.ndarray):
        return _ready(obj.tolist(), where, reasons, fast)
    return obj


_SCALAR_TYPES = frozenset({str, int, bool, float, type(None)})


def _plain_scalars(values: Any) -> bool:
    """Whether every one of ``values`` is a str, int, bool, None or finite float (exact
    types: what :func:`json_ready` returns as it is and the encoder writes as a scalar)."""
    types = set(map(type, values))
    if not types <= _SCALAR_TYPES:
        return False
    return float not in types or all(map(math.isfinite, [v for v in values if type(v) is float]))


def _plain_floats(seq: list[Any]) -> bool:
    """Whether every item of ``seq`` is a finite Python float (exact type)."""
    return set(map(type, seq)) <= {float} and all(map(math.isfinite, seq))


def _plain_numbers(seq: list[Any] | tuple[Any, ...]) -> list[Any] | None:
    """``list(seq)`` when every item is a Python int, bool, None or finite float (what
    :func:`json_ready` would return item by item, found in C-speed passes); else None."""
    types = set(map(type, seq))
    if types <= _INT_TYPES:
        return list(seq)
    if types <= _FLOAT_TYPES:
        floats = seq if type(None) not in types else [v for v in seq if v is not None]
        if all(map(math.isfinite, floats)):
            return list(seq)
    return None


def _bad(v: Any) -> bool:
    if isinstance(v, np.generic):
        v = v.item()
    return isinstance(v, float) and not math.isfinite(v)


def check_json(obj: Any) -> Any:
    """``obj`` after :func:`json_ready`, checked with ``json.dumps(allow_nan=False)``.

    Raises
    ------
    ValueError
        If a non-finite number is left (a bug).
    """
    ready = json_ready(obj)
    json.dumps(ready, allow_nan=False, default=str)
    return ready


def indented_json(obj: Any, *, default: Callable[[Any], Any] = str) -> str:
    """``json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False, default=default)``.

    The same text character for character (the tests compare the two on every kind of
    value), written without the standard library's pure-Python indented encoder: lists
    of plain numbers are joined in C-speed passes.

    Raises
    ------
    ValueError
        On a NaN or infinite float, as ``allow_nan=False`` does.

    Examples
    --------
    >>> print(indented_json({"a": [1.5, None], "b": {}}))
    {
      "a": [
        1.5,
        null
      ],
      "b": {}
    }
    """
    if isinstance(obj, str):
        return _encode_str(obj)
    out: list[str] = []
    _encode(obj, 0, out, default)
    return "".join(out)


def _float(v: float) -> str:
    if not math.isfinite(v):
        raise ValueError(f"Out of range float values are not JSON compliant: {v!r}")
    return float.__repr__(v)


def _scalar(v: Any) -> str | None:
    """The JSON of a str, None, bool, int or float as the standard encoder writes it;
    None for anything else."""
    if isinstance(v, str):
        return _encode_str(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return int.__repr__(v)
    if isinstance(v, float):
        return _float(v)
    return None


def _key(k: Any) -> str:
    """A dict key as the standard encoder writes it: a string, or a scalar's JSON quoted."""
    if isinstance(k, str):
        return _encode_str(k)
    text = _scalar(k)
    if text is None:
        raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")
    return _encode_str(text)


def _encode(o: Any, level: int, out: list[str], default: Callable[[Any], Any]) -> None:
    text = _scalar(o)
    if text is not None:
        out.append(text)
        return
    if type(o) is _RawMatrix:
        out += o.texts(level)
        return
    if isinstance(o, list | tuple):
        if not o:
            out.append("[]")
            return
        inner = "\n" + "  " * (level + 1)
        sep = "," + inner
        types = set(map(type, o))
        row_inner = inner + "  "
        matrix = _float_matrix(o, types, "," + row_inner)
        if matrix is not None:  # rows of floats, each written as the branches below do
            out.append("[" + inner + sep.join(["[" + row_inner + t + inner + "]" for t in matrix]))
        elif types <= _INT_TYPES and type(None) not in types and bool not in types:
            out.append("[" + inner + sep.join(map(int.__repr__, o)))
        elif types == {float} and all(map(math.isfinite, o)):
            out.append("[" + inner + sep.join(map(float.__repr__, o)))
        elif types <= _FLOAT_TYPES and all(map(math.isfinite, [v for v in o if v is not None])):
            # repr is float.__repr__ on exact floats and never writes "None" for one
            out.append("[" + inner + sep.join(map(repr, o)).replace("None", "null"))
        else:
            out.append("[" + inner)
            for i, v in enumerate(o):
                if i:
                    out.append(sep)
                _encode(v, level + 1, out, default)
        out.append("\n" + "  " * level + "]")
        return
    if isinstance(o, dict):
        if not o:
            out.append("{}")
            return
        inner = "\n" + "  " * (level + 1)
        if _plain_scalars(o.values()):  # each item as the loop below writes it, joined once
            items = [_key(k) + ": " + _scalar(v) for k, v in o.items()]  # type: ignore[operator]
            out.append("{" + inner + ("," + inner).join(items) + "\n" + "  " * level + "}")
            return
        if set(map(type, o.values())) == {list} and all(map(_plain_floats, o.values())):
            # {annotator: [low, high]}: each list as the list branch above writes it
            close = inner + "]"
            row_sep = "," + inner + "  "
            items = [
                _key(k) + ": " + ("[" + inner + "  " + row_sep.join(map(float.__repr__, v)) + close)
                if v
                else _key(k) + ": []"
                for k, v in o.items()
            ]
            out.append("{" + inner + ("," + inner).join(items) + "\n" + "  " * level + "}")
            return
        out.append("{" + inner)
        first = True
        for k, v in o.items():
            if not first:
                out.append("," + inner)
            first = False
            text = _scalar(v)
            if text is not None:  # what _encode would write
                out.append(_key(k) + ": " + text)
                continue
            out.append(_key(k) + ": ")
            _encode(v, level + 1, out, default)
        out.append("\n" + "  " * level + "}")
        return
    _encode(default(o), level, out, default)


def ready_json_text(obj: Any) -> str:
    """``indented_json(json_ready(obj))``, the same text, with each long matrix of plain
    numbers (at least :data:`ARROW_MIN` cells: a report's pairwise kappa and overlap
    matrices, a million cells each at 1,000 annotators) written from its rows' texts
    (:func:`float_rows_json`, :func:`int_rows_json`) without a Python object per cell:
    neither copied by ``json_ready`` nor converted again by the encoder."""
    return indented_json(_ready(obj, "", None, True))


class _RawMatrix:
    """A matrix of numbers as the texts of its rows (numbers joined by ``,``, ASCII), which
    :func:`indented_json` writes at its place as ``json.dumps(indent=2)`` writes the
    matrix (made by :func:`_ready` with ``fast``; never left in a returned document)."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[bytes]) -> None:
        self.rows = rows

    def texts(self, level: int) -> list[str]:
        """The text of the matrix at indentation ``level``, in pieces."""
        inner = ("\n" + "  " * (level + 1)).encode()
        row_inner = inner + b"  "
        row_sep = b"," + row_inner
        close = inner + b"]"
        body = (b"," + inner).join(
            [b"[" + row_inner + t.replace(b",", row_sep) + close for t in self.rows]
        )
        return ["[", inner.decode(), body.decode("ascii"), "\n" + "  " * level + "]"]


def _raw_matrix(rows: list[Any] | tuple[Any, ...]) -> _RawMatrix | None:
    """``rows`` as a :class:`_RawMatrix` when :func:`json_ready` would leave it as it is (a
    matrix of finite floats, or of ints) and it has at least :data:`ARROW_MIN` cells;
    None otherwise."""
    if len(rows) * len(rows[0]) < ARROW_MIN:
        return None
    texts = float_rows_json(rows)
    if texts is None:
        texts = int_rows_json(rows)
    return None if texts is None else _RawMatrix(texts)


_PROBE = (1.0, -0.0, 0.0, 0.1, 0.30000000000000004, 1 / 3, -2 / 3, 1e-4, 123456789012345.6,
          9999999999999998.0, 1e15, 5e-1, 4906863383089.852, 0, -7, 2**70, 10**25 + 1)  # fmt: skip


@functools.cache
def _json_encoder() -> Callable[[Any], bytes] | None:
    """``pydantic_core.to_json`` (the JSON encoder of pydantic, which SQLModel requires:
    Rust's Ryu for floats, the shortest round-trip digits, as Python's ``repr``), when it
    writes a list of numbers as Python does on probe values; None otherwise (no
    pydantic_core: pydantic 1)."""
    try:
        from pydantic_core import to_json
    except ImportError:  # pragma: no cover - pydantic 2 is SQLModel's
        return None
    try:
        ok = to_json(_PROBE) == ("[" + ",".join(map(repr, _PROBE)) + "]").encode()
    except Exception:  # pragma: no cover - another pydantic_core
        return None
    return to_json if ok else None


def float_rows_json(rows: Sequence[Sequence[Any]]) -> list[bytes] | None:
    """``[",".join("null" if v is None else float.__repr__(v) for v in row).encode() for
    row in rows]`` for a matrix of finite Python floats and Nones (:func:`float_matrix`);
    None for anything else (a NaN or an infinity too), or without pydantic_core's encoder
    (:func:`_json_encoder`).

    The rows are written by pydantic_core's JSON encoder: Ryu's shortest round-trip
    digits, Python's (checked against ``repr`` on millions of doubles,
    test_json_float_reprs.py), at some 70 ns a cell instead of ``repr``'s 700, with no
    array of texts: the million cells of a 1,000-annotator kappa matrix in 0.07 s. A row
    holding a cell Python writes with an exponent (``0 < |x| < 1e-4``, ``|x| >= 1e16``)
    is joined from ``repr``. Inside :func:`kept_texts` the last answer is kept (for the
    same :func:`float_matrix` answer: the report's CSV and its ``--json``); callers must
    not modify it."""
    got = float_matrix(rows)
    if got is None:
        return None
    last = _LAST_ROWS.get()
    if last and last[0][0] is got:
        return last[0][1]
    a, mask = got
    to_json = _json_encoder()
    if to_json is None:  # pragma: no cover - pydantic 2 is SQLModel's
        return None
    with np.errstate(invalid="ignore"):  # a None cell is NaN
        if not (np.isfinite(a) if mask is None else np.isfinite(a) | mask).all():
            return None
        size = np.abs(a)
        odd = ((size < 1e-4) & (a != 0)) | (size >= 1e16)  # Python's exponent form
    odd_rows = set(np.flatnonzero(odd.any(axis=1)).tolist())
    texts = [
        ",".join(["null" if v is None else float.__repr__(v) for v in row]).encode()
        if i in odd_rows
        else to_json(row)[1:-1]
        for i, row in enumerate(rows)
    ]
    if last is not None:
        last[:] = [(got, texts)]
    return texts


def _width(rows: Any) -> int | None:
    """The width of ``rows``, a non-empty list or tuple of lists or tuples all of the same
    non-zero length; None for anything else."""
    if not rows or not isinstance(rows, list | tuple):
        return None
    if not all(isinstance(r, list | tuple) for r in rows):
        return None
    width = len(rows[0])
    if width == 0 or any(len(r) != width for r in rows):
        return None
    return width


def int_rows_json(rows: Sequence[Sequence[Any]]) -> list[bytes] | None:
    """``[",".join(map(int.__repr__, row)).encode() for row in rows]`` for a non-empty
    rectangular matrix of Python ints (not bools: the report's pairwise overlap), written
    by pydantic_core's JSON encoder (:func:`_json_encoder`); None for anything else or
    without it."""
    if _width(rows) is None:
        return None
    if any(set(map(type, r)) != {int} for r in rows):
        return None
    to_json = _json_encoder()
    if to_json is None:  # pragma: no cover - pydantic 2 is SQLModel's
        return None
    return [to_json(r)[1:-1] for r in rows]


def _float_matrix(o: list[Any] | tuple[Any, ...], types: set[type], sep: str) -> list[str] | None:
    """The JSON of the numbers of each row of ``o`` joined by ``sep``, when ``o`` is a
    matrix of finite floats and Nones (:func:`matrix_lines`); None otherwise."""
    if len(o) < 2 or not types <= {list, tuple}:
        return None
    lines = matrix_lines(o, sep, "null", finite=True)
    return lines if lines is not None else int_matrix_lines(o, sep)


def int_matrix_lines(rows: Sequence[Sequence[Any]], sep: str) -> list[str] | None:
    """``[sep.join(map(int.__repr__, row)) for row in rows]`` for a non-empty rectangular
    matrix of Python ints (not bools) within int64 (the report's pairwise overlap, a
    million cells at 1,000 annotators), joined in pyarrow on a long matrix; None for
    anything else."""
    if len(rows) == 0 or not isinstance(rows, list | tuple):
        return None
    width = len(rows[0])
    if width == 0 or any(len(r) != width for r in rows):
        return None
    for r in rows:
        if set(map(type, r)) != {int}:
            return None
    if len(rows) * width < ARROW_MIN:
        return [sep.join(map(int.__repr__, r)) for r in rows]
    try:
        import pyarrow as pa
        import pyarrow.compute as pc

        a = np.array(rows, dtype=np.int64).ravel()
    except (ImportError, OverflowError):  # an int beyond int64
        return None
    texts = pc.cast(_arrow_ints(a), pa.string())  # int64 as text: int.__repr__'s digits
    offsets = np.arange(0, a.size + 1, width, dtype=np.int32)
    lists = pa.ListArray.from_arrays(_arrow_ints(offsets), texts)
    out: list[str] = pc.binary_join(lists, _arrow_text(sep)).to_pylist()
    return out


def symmetric_texts(
    rows: Sequence[Sequence[Any]], text: Callable[[float], str], *, finite: bool = False
) -> list[list[str]] | None:
    """``[[text(v) for v in row] for row in rows]`` for a square matrix of Python floats
    that equals its transpose bit for bit (a pairwise kappa matrix), with ``text`` called
    once per unordered pair of cells; None for anything else (a None or another type, a
    ragged or non-square matrix, a cell whose mirror has other bits; with ``finite`` a NaN
    or an infinity).

    A million-cell matrix of 1,000 annotators then needs half a million conversions, the
    dearest step of writing it (``float.__repr__`` or a ``str.format``). Inside
    :func:`kept_texts` the last result is kept (by ``text`` and the matrix's bytes), so
    the report's CSV and its ``--json`` convert the same matrix once; callers must not
    modify the lists. Outside, nothing is kept."""
    n = len(rows)
    if n == 0 or any(len(r) != n for r in rows):
        return None
    if not all(set(map(type, r)) == {float} for r in rows):
        return None
    a = np.array(rows, dtype=np.float64)
    if finite and not np.isfinite(a).all():
        return None
    bits = a.view(np.int64)
    if not np.array_equal(bits, bits.T):
        return None
    last = _LAST_TEXTS.get()
    key = a.tobytes() if last is not None else b""
    for t, k, kept in last or ():
        if t == text and k == key:
            return kept
    iu = np.triu_indices(n)
    upper = float_reprs(a[iu]) if text is float.__repr__ else list(map(text, a[iu].tolist()))
    out = np.empty((n, n), dtype=object)
    out[iu] = upper
    out[iu[1], iu[0]] = upper
    texts: list[list[str]] = out.tolist()
    if last is not None:
        last[:] = [(text, key, texts)]
    return texts


ARROW_MIN = 50_000
"""Arrays at least this long get :func:`float_reprs`'s vectorised pass."""


def float_reprs(values: npt.NDArray[np.float64]) -> list[str]:
    """``[float.__repr__(x) for x in values]``, the same strings, about three times faster
    on a long array (the 500,500 cells of a 1,000-annotator kappa matrix: 0.09 s instead of
    0.33 s once pyarrow is warm, :func:`warm_float_reprs`).

    pyarrow's cast to text (double-conversion's shortest round trip) gives the digits
    Python's ``repr`` gives (David Gay's shortest, correctly rounded) but writes ``1`` for
    ``1.0`` and uses exponents at other places: ``.0`` is appended to a text without a
    point or an exponent, and Python formats every value whose text differs in form
    (non-finite, ``0 < |x| < 1e-4``, ``|x| >= 1e16``, or an exponent in pyarrow's text).
    Checked equal to ``repr`` on 24 million doubles (random bit patterns, every exponent
    from 1e-6 to 1e18, rounded decimals, ratios of integers; test_json_float_reprs.py).
    Short arrays, or no pyarrow: ``repr`` itself."""
    v = np.ascontiguousarray(values, dtype=np.float64).ravel()
    if v.size < ARROW_MIN:
        return list(map(float.__repr__, v.tolist()))
    try:
        import pyarrow  # noqa: F401
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return list(map(float.__repr__, v.tolist()))
    out: list[str] = _arrow_reprs(v, None).to_pylist()
    return out


_Matrix = tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_] | None]
"""A matrix as floats (None cells NaN) and the mask of its None cells (None: none)."""


def float_matrix(rows: Sequence[Sequence[Any]]) -> _Matrix | None:
    """``rows`` as a 2-d float64 array and the mask of its None cells (None: no None
    cell), for a non-empty rectangular matrix of Python floats and Nones (a None cell is
    NaN in the array); None for anything else (another type: an int, a numpy float; ragged
    rows).

    Inside :func:`kept_texts` the last answer is kept for the same ``rows`` object (the
    report's pairwise kappa matrix, a tuple of tuples, is read by its CSV and by its
    Markdown view: one conversion of its million cells instead of two)."""
    last = _LAST_MATRIX.get()
    if last and (last[0][0] is rows or _same_cells(rows, last[0][0])):
        return last[0][1]
    got = _float_matrix_of(rows)
    if last is not None:
        last[:] = [(rows, got)]
    return got


def _same_cells(rows: Sequence[Sequence[Any]], other: Any) -> bool:
    """Whether ``rows`` holds the very objects of ``other``, cell for cell (the ``--json``
    document's copy of the kappa matrix: lists of the report's own floats), checked in C
    passes that stop at the first other object."""
    if not isinstance(rows, list | tuple) or not isinstance(other, list | tuple):
        return False
    if len(rows) != len(other):
        return False
    try:
        if any(map(operator.ne, map(len, rows), map(len, other))):
            return False
    except TypeError:  # not rows of cells
        return False
    cells = itertools.chain.from_iterable(rows)
    return all(map(operator.is_, cells, itertools.chain.from_iterable(other)))


def _float_matrix_of(rows: Sequence[Sequence[Any]]) -> _Matrix | None:
    width = _width(rows)
    if width is None:
        return None
    types: set[type] = set()
    for r in rows:
        row_types = set(map(type, r))
        if not row_types <= _FLOAT_TYPES:  # an int matrix (the overlap) declined at once
            return None
        types |= row_types
    a = np.array(rows, dtype=np.float64)  # a None is NaN
    if a.shape != (len(rows), width):  # pragma: no cover - rows of floats are rectangular
        return None
    if type(None) not in types:
        return a, None
    mask = np.zeros(a.shape, dtype=bool)
    for i, j in zip(*np.nonzero(np.isnan(a)), strict=True):  # a None, or a NaN float
        mask[i, j] = rows[i][j] is None
    return a, mask


MATRIX_LINES_MAX = 40_000_000
"""Cells of the largest matrix :func:`matrix_lines` joins (its texts, some 20 bytes a
cell, stay below the 2 GiB of a pyarrow string array)."""


def matrix_lines(
    rows: Sequence[Sequence[Any]], sep: str, none: str, *, finite: bool = False
) -> list[str] | None:
    """``[sep.join(none if v is None else float.__repr__(v) for v in row) for row in rows]``
    for a matrix of Python floats and Nones (:func:`float_matrix`); None for anything else,
    with ``finite`` also for a matrix holding a NaN or an infinity, and without pyarrow.

    The texts are those of :func:`float_reprs` (pyarrow's cast, checked against ``repr``),
    made and joined in pyarrow without a Python string per cell: the million cells of a
    1,000-annotator pairwise kappa matrix in about a tenth of a second. A matrix equal to
    its transpose bit for bit converts each unordered pair of cells once. Inside
    :func:`kept_texts` the last matrix's texts are kept (by its bytes), so the report's CSV
    and its ``--json`` (other separators) convert it once."""
    got = float_matrix(rows)
    if got is None:
        return None
    a, mask = got
    if a.size > MATRIX_LINES_MAX:
        return None
    if finite:
        ok = np.isfinite(a) if mask is None else np.isfinite(a) | mask
        if not ok.all():
            return None
    if a.size < ARROW_MIN:  # not worth pyarrow (nor its import)
        return [sep.join([none if v is None else float.__repr__(v) for v in row]) for row in rows]
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return None
    texts = _matrix_texts(a, mask)
    if mask is not None:
        texts = pc.fill_null(texts, _arrow_text(none))
    n, width = a.shape
    offsets = np.arange(0, n * width + 1, width, dtype=np.int32)
    lists = pa.ListArray.from_arrays(_arrow_ints(offsets), texts)
    out: list[str] = pc.binary_join(lists, _arrow_text(sep)).to_pylist()
    return out


def warm_matrix_texts(rows: Sequence[Sequence[Any]]) -> None:
    """Make the texts of ``rows`` the report's CSV and ``--json`` will write, kept for the
    caller's :func:`kept_texts` scope: its rows' texts (:func:`float_rows_json`), else
    the texts :func:`matrix_lines` would make (in pyarrow), without joining them into
    lines; nothing when neither would make them (not a matrix of floats and Nones, too
    small or too large for pyarrow's pass, no pyarrow)."""
    got = float_matrix(rows)
    if got is None or not ARROW_MIN <= got[0].size <= MATRIX_LINES_MAX:
        return
    if float_rows_json(rows) is not None:
        return
    try:
        import pyarrow
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return
    _matrix_texts(*got)
    # the pass's intermediate arrays (some 100 MB for a million cells) are freed into
    # pyarrow's allocator, which keeps them; given back, as the report still computes
    release = getattr(pyarrow.default_memory_pool(), "release_unused", None)
    if release is not None:
        release()


def _matrix_texts(a: npt.NDArray[np.float64], mask: npt.NDArray[np.bool_] | None) -> Any:
    """The pyarrow string array of ``float.__repr__`` of every cell of ``a`` in row order,
    null where ``mask``; kept inside :func:`kept_texts` (by the bytes of ``a`` and
    ``mask``)."""
    last = _LAST_ARROW.get()
    key = a.tobytes() + (b"" if mask is None else mask.tobytes()) if last is not None else b""
    for k, kept in last or ():
        if k == key and len(kept) == a.size:
            return kept
    n, width = a.shape
    bits = a.view(np.int64)
    symmetric = n == width and np.array_equal(bits, bits.T)
    if symmetric and mask is not None:
        symmetric = np.array_equal(mask, mask.T)
    if symmetric:  # each unordered pair once, then every cell taken from its pair's text
        iu = np.triu_indices(n)
        at = np.empty((n, n), dtype=np.int64)
        at[iu] = np.arange(iu[0].size)
        at[iu[1], iu[0]] = at[iu]
        upper = _arrow_reprs(a[iu], None if mask is None else mask[iu])
        texts = upper.take(_arrow_ints(at.ravel()))
    else:
        texts = _arrow_reprs(a.ravel(), None if mask is None else mask.ravel())
    if last is not None:
        last[:] = [(key, texts)]
    return texts


def _arrow_ints(v: npt.NDArray[Any]) -> Any:
    """A pyarrow int32 or int64 array on the buffer of ``v`` (no pandas: see float_reprs)."""
    import pyarrow as pa

    v = np.ascontiguousarray(v)
    kind = {np.dtype(np.int32): pa.int32(), np.dtype(np.int64): pa.int64()}[v.dtype]
    return pa.Array.from_buffers(kind, len(v), [None, pa.py_buffer(v)])


def _arrow_text(text: str) -> Any:
    """``text`` as a pyarrow string scalar, made from buffers (``pa.scalar`` imports pandas)."""
    import pyarrow as pa

    data = text.encode("utf-8")
    offsets = np.array([0, len(data)], dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])[
        0
    ]


def _arrow_strings(texts: Sequence[str]) -> Any:
    """A pyarrow string array of ``texts``, made from buffers."""
    import pyarrow as pa

    data = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    return pa.Array.from_buffers(
        pa.string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    )


def _arrow_reprs(v: npt.NDArray[np.float64], null: npt.NDArray[np.bool_] | None) -> Any:
    """:func:`float_reprs` of the 1-d array ``v`` as a pyarrow string array, null where
    ``null`` (the pass :func:`float_reprs` describes; the cases given to Python put in
    place in pyarrow). Arrays are made from buffers: ``pa.array``, ``pa.scalar`` and
    ``to_numpy`` would import pandas (0.1-0.25 s) to look for its types."""
    import pyarrow as pa
    import pyarrow.compute as pc

    v = np.ascontiguousarray(v, dtype=np.float64)
    valid = None if null is None else pa.py_buffer(np.packbits(~null, bitorder="little"))
    doubles = pa.Array.from_buffers(pa.float64(), len(v), [valid, pa.py_buffer(v)])
    texts = pc.cast(doubles, pa.string())
    exponent = pc.match_substring(texts, "e")
    bare = pc.invert(pc.or_(pc.match_substring(texts, "."), exponent))
    end = 1 << 30  # past the end of every text: the slice is empty, ".0" appended
    texts = pc.if_else(bare, pc.utf8_replace_slice(texts, end, end, ".0"), texts)
    with np.errstate(invalid="ignore"):
        size = np.abs(v)
        python = ~np.isfinite(v) | ((size < 1e-4) & (v != 0)) | (size >= 1e16)
    at = pc.indices_nonzero(exponent)  # uint64, no nulls (a null is not nonzero)
    python[np.frombuffer(at.buffers()[1], np.uint64, len(at), 8 * at.offset)] = True
    if null is not None:
        python &= ~null
    if python.any():
        fixed = [float.__repr__(x) for x in v[python].tolist()]
        flags = pa.py_buffer(np.packbits(python, bitorder="little"))
        where = pa.Array.from_buffers(pa.bool_(), len(v), [None, flags])
        texts = pc.replace_with_mask(texts, where, _arrow_strings(fixed))
    return texts


def warm_float_reprs() -> None:
    """Make ready what the report's pairwise texts will use, while the caller would
    otherwise wait (``annotate report`` while its child reads the votes): pydantic_core's
    encoder (:func:`float_rows_json`), or without it pyarrow's import and first cast
    (0.25 s, once per process)."""
    if _json_encoder() is not None:
        return
    with contextlib.suppress(ImportError):  # pragma: no cover - pydantic 2 is SQLModel's
        float_reprs(np.zeros(ARROW_MIN))


_LAST_TEXTS: ContextVar[list[tuple[Callable[[float], str], bytes, list[list[str]]]] | None] = (
    ContextVar("_LAST_TEXTS", default=None)
)
"""Inside :func:`kept_texts`: the last result of :func:`symmetric_texts` (text, matrix
bytes, texts); None outside."""


_LAST_MATRIX: ContextVar[list[tuple[object, _Matrix | None]] | None] = ContextVar(
    "_LAST_MATRIX", default=None
)
"""Inside :func:`kept_texts`: the last matrix :func:`float_matrix` converted (the rows
object and its answer); None outside."""

_LAST_ARROW: ContextVar[list[tuple[bytes, Any]] | None] = ContextVar("_LAST_ARROW", default=None)
"""Inside :func:`kept_texts`: the last texts of :func:`_matrix_texts` (by the matrix's
bytes and its mask's); None outside."""


_LAST_ROWS: ContextVar[list[tuple[_Matrix, list[bytes]]] | None] = ContextVar(
    "_LAST_ROWS", default=None
)
"""Inside :func:`kept_texts`: the last rows' texts of :func:`float_rows_json` (by the
:func:`float_matrix` answer they were made from); None outside."""


_LAST_RESULTS: ContextVar[dict[str, tuple[object, Any]] | None] = ContextVar(
    "_LAST_RESULTS", default=None
)
"""Inside :func:`kept_texts`: the last result of :func:`kept_result` per tag (the object it
was made from and the result); None outside."""


def kept_result(tag: str, source: object, make: Callable[[], _R]) -> _R:
    """``make()``, kept inside :func:`kept_texts` as the last result under ``tag`` for the
    very object ``source`` it is made from (the report's pairwise kappa matrix, its rows of
    texts): a second call with the same ``source`` returns the kept result (which callers
    must not modify). Outside a scope, ``make()`` each time."""
    last = _LAST_RESULTS.get()
    if last is None:
        return make()
    got = last.get(tag)
    if got is not None and got[0] is source:
        out: _R = got[1]
        return out
    result = make()
    last[tag] = (source, result)
    return result


def kept_active() -> bool:
    """Whether this thread is inside a :func:`kept_texts` scope (results made ahead for
    it, in another thread run in its context, are then used)."""
    return _LAST_MATRIX.get() is not None


def kept_scope() -> contextlib.AbstractContextManager[None]:
    """:func:`kept_texts`, or nothing inside one already (whose kept results then last
    until its end: the report's files, then its ``--json``)."""
    if _LAST_MATRIX.get() is not None:
        return contextlib.nullcontext()
    return kept_texts()


@contextlib.contextmanager
def kept_texts() -> Iterator[None]:
    """Within this block :func:`symmetric_texts` keeps its last result for a repeated call
    (the report's CSV, then its ``--json``); at its end the result is let go.

    A module-level cache kept the last matrix's texts (some 70 MB at 1,000 annotators)
    alive until the next call: in a long-running process (the app) long after the report.
    The scope is per thread (and per asyncio task): a report written in a worker thread
    keeps nothing unless it opens a scope there.
    """
    token = _LAST_TEXTS.set([])
    matrix = _LAST_MATRIX.set([])
    arrow = _LAST_ARROW.set([])
    results = _LAST_RESULTS.set({})
    rows = _LAST_ROWS.set([])
    try:
        yield
    finally:
        _LAST_ROWS.reset(rows)
        _LAST_RESULTS.reset(results)
        _LAST_ARROW.reset(arrow)
        _LAST_MATRIX.reset(matrix)
        _LAST_TEXTS.reset(token)
