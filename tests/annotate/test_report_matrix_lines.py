"""The report writes its pairwise kappa matrix (a million cells at 1,000 annotators, issue
13) as joined lines made in pyarrow (``matrix_lines``), its Markdown tables a row at a time
when no cell needs escaping (``_md_table``), and converts the matrix once for the CSV and
the view (``float_matrix``). The references are the plain conversions: ``float.__repr__``
of every cell joined by Python, ``csv.writer``, ``md_escape`` of every cell and
``format(x, ".2f")``."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest

from annotate.names import one_line
from annotate.services import json_ready
from annotate.services import json_ready as json_ready_module
from annotate.services.json_ready import float_matrix, kept_texts, matrix_lines
from annotate.services.report_files import _md_table, md_escape, write_pairwise_csv
from annotate.services.report_view import num_row, num_rows
from annotate.views import ReportTable
from tests.annotate.test_json_float_reprs import _values


def _reference(rows: list[list[float | None]], sep: str, none: str) -> list[str]:
    return [sep.join(none if v is None else float.__repr__(v) for v in row) for row in rows]


def _matrices(n: int, seed: int) -> list[list[list[float | None]]]:
    """A matrix of doubles of every kind, its symmetric version, and both with Nones."""
    a = _values(n * n, seed)[: n * n]
    np.random.default_rng(seed).shuffle(a)
    a = a.reshape(n, n)
    with np.errstate(invalid="ignore"):  # inf + -inf below the diagonal: NaN, fine
        s = np.triu(a) + np.triu(a, 1).T
    out: list[list[list[float | None]]] = []
    for m in (a.tolist(), s.tolist()):
        holes: list[list[float | None]] = [list(r) for r in m]
        for i in range(0, n, 3):
            holes[i][(7 * i) % n] = holes[(7 * i) % n][i] = None
        out += [m, holes]
    return out


@pytest.mark.parametrize("arrow_min", [1, json_ready.ARROW_MIN])
def test_matrix_lines_equal_joining_every_repr(
    monkeypatch: pytest.MonkeyPatch, arrow_min: int
) -> None:
    monkeypatch.setattr(json_ready, "ARROW_MIN", arrow_min)  # 1: pyarrow on every size
    for n in (1, 2, 5, 64):
        for m in _matrices(n, n):
            assert matrix_lines(m, ",", "") == _reference(m, ",", "")
            assert matrix_lines(tuple(map(tuple, m)), ",\n  ", "null") == _reference(
                m, ",\n  ", "null"
            )
            finite = all(v is None or np.isfinite(v) for row in m for v in row)
            got = matrix_lines(m, ",", "null", finite=True)
            assert got == (_reference(m, ",", "null") if finite else None)
            with kept_texts():  # the second call answers from the kept texts
                for sep in (",", ", ", ","):
                    assert matrix_lines([list(r) for r in m], sep, "") == _reference(m, sep, "")
    rect = np.random.default_rng(1).uniform(-1, 1, (30, 70)).round(3).tolist()
    assert matrix_lines(rect, ",", "") == _reference(rect, ",", "")


def test_matrix_lines_decline_other_values() -> None:
    assert matrix_lines([[1, 2.0], [2.0, 1.0]], ",", "") is None  # an int
    assert matrix_lines([[np.float64(1.0)]], ",", "") is None
    assert matrix_lines([[1.0, 2.0], [1.0]], ",", "") is None  # ragged
    assert matrix_lines([], ",", "") is None
    assert matrix_lines([[]], ",", "") is None
    assert matrix_lines([[float("nan"), None]], ",", "-") == ["nan,-"]


def test_float_matrix_is_converted_once_in_a_scope() -> None:
    m = tuple(tuple(r) for r in np.eye(3).tolist())
    assert float_matrix(m) is not float_matrix(m)  # outside: nothing kept
    with kept_texts():
        first = float_matrix(m)
        assert first is not None
        assert float_matrix(m) is first
        assert float_matrix(tuple(m)) is first  # the same tuple object
        assert float_matrix([list(r) for r in m]) is first  # the same float objects
        other = [[float(repr(v)) for v in r] for r in m]  # equal values, other objects
        got = float_matrix(other)
        assert got is not None
        assert got is not first
        assert np.array_equal(got[0], first[0])
        zero = [[0.0, -0.0], [-0.0, 0.0]]
        assert float_matrix(zero) is not None
        flipped = [[-0.0, 0.0], [0.0, -0.0]]  # equal cells (==), other bits
        got = float_matrix(flipped)
        assert got is not None
        assert np.signbit(got[0]).tolist() == [[True, False], [False, True]]
        assert float_matrix([1.0, 2.0]) is None  # not rows
    holes = [[0.5, None], [None, float("nan")]]
    got = float_matrix(holes)
    assert got is not None
    assert got[1] is not None
    assert got[1].tolist() == [[False, True], [True, False]]


def test_num_rows_with_none_cells() -> None:
    m = _matrices(20, 3)[3]
    assert num_rows(m, 2) == [num_row(r, 2) for r in m]


def _csv_reference(header: list[str], rows: list[list[str]]) -> bytes:
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow([one_line(c) for c in header])
    w.writerows([one_line(c) for c in row] for row in rows)
    return buf.getvalue().encode("utf-8")


@pytest.mark.parametrize("arrow_min", [1, json_ready.ARROW_MIN])
def test_pairwise_csv_equals_the_csv_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arrow_min: int
) -> None:
    from types import SimpleNamespace

    monkeypatch.setattr(json_ready, "ARROW_MIN", arrow_min)
    names = ["a", "", 'q"uote', "com,ma", "new\nline", "é\x1b[31m", "tab\t", " s "]
    for m in _matrices(len(names), 5):
        g = SimpleNamespace(annotators=tuple(names), pairwise_kappa=tuple(map(tuple, m)))
        path = write_pairwise_csv(tmp_path / "p.csv", ["annotator", *names], g)  # type: ignore[arg-type]
        rows = [
            [a, *("" if v is None else repr(v) for v in row)]
            for a, row in zip(names, m, strict=True)
        ]
        assert path.read_bytes() == _csv_reference(["annotator", *names], rows)


def test_md_table_equals_escaping_every_cell() -> None:
    cells = ["0.25", "—", "", "a|b", "x_y", "*", "[1, 2]", "é", "tab\t", "a\nb", "\u200e", "#"]
    rng = np.random.default_rng(0)
    rows = tuple(tuple(rng.choice(cells, size=4).tolist()) for _ in range(500))
    rows += (("plain", "0.50", "—", "[0.1, 0.2]"), ())
    t = ReportTable("k", "T", ("a", "b", "c", "d"), rows, "note")
    got = _md_table(t)
    body = ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    assert got[4 : 4 + len(rows)] == body


def test_kept_scope_opens_a_scope_only_outside_one() -> None:
    from annotate.services.json_ready import kept_scope

    m = tuple(tuple(r) for r in np.eye(4).tolist())
    with kept_scope():
        first = float_matrix(m)
        assert float_matrix(m) is first  # a scope of its own
    assert float_matrix(m) is not first  # let go at its end
    with kept_texts():
        with kept_scope():  # inside the caller's: its results outlive this block
            inner = float_matrix(m)
        assert float_matrix(m) is inner


def test_indented_json_fast_paths_equal_the_standard_encoder() -> None:
    """Dicts of scalars, dicts of float lists (intervals), int matrices (the overlap),
    joined at once: the text of ``json.dumps(indent=2)``, the reference."""
    import json

    from annotate.services.json_ready import indented_json, int_matrix_lines, json_ready

    rng = np.random.default_rng(7)
    overlap = rng.integers(-(2**40), 2**40, (300, 300)).tolist()  # 90,000 cells: pyarrow
    doc = {
        "scalars": {"a": 1, "b": 0.1, "c": None, "d": True, "e": "é\n\x1b", "f": -0.0},
        "intervals": {f"ann{i}": [float(x), float(x) + 0.5] for i, x in enumerate(range(20))},
        "mixed": {"a": [0.5, 1.0], "b": [], "c": [1e-7, -0.0], "d": [1, 2.0]},
        "overlap": overlap,
        "small": [[1, 2], [3, 4]],
        "bools": [[True, False], [False, True]],
        "keys": {1: "x", 2.5: "y", None: "z", False: 0},
    }
    reference = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
    assert indented_json(doc) == reference
    assert indented_json(json_ready(doc)) == reference
    assert json_ready(doc) == doc
    assert int_matrix_lines(overlap, ",") == [",".join(map(str, r)) for r in overlap]
    assert int_matrix_lines([[2**64, 1], [1, 1]], ",") == [f"{2**64},1", "1,1"]  # Python's
    huge = [row[:] for row in overlap]
    huge[5][7] = 2**64
    assert int_matrix_lines(huge, ",") is None  # beyond int64: the caller's own path
    assert indented_json(huge) == json.dumps(huge, indent=2)
    assert int_matrix_lines([[True, 1], [1, 1]], ",") is None
    bad = {"a": {"x": float("inf"), "y": 1.0}, "b": {"x": [float("nan")]}}
    assert json_ready(bad) == {
        "a": {"x": None, "y": 1.0, "x_reason": "not a finite number for these data"},
        "b": {"x": [None]},
    }
    with pytest.raises(ValueError, match="Out of range float"):
        indented_json({"x": [float("nan"), 1.0]})


@pytest.mark.parametrize(
    "name", ["plain", "del\x7f", "c1\x9b", "bidi\u202e", "sep\u2028", "é", "esc\x1b[31m"]
)
def test_report_json_printed_as_json_text_escapes_it(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``annotate report --json`` prints what :func:`annotate.cli.output.json_text` (the
    reference: ``json.dumps`` then the terminal escapes) prints, ASCII or not."""
    from annotate.cli.output import json_text
    from annotate.cli.report import _print_json

    doc = {"annotator": name, "values": [0.5, None], "matrix": [[1.0, 0.25], [0.25, 1.0]]}
    _print_json(doc)
    assert capsys.readouterr().out == json_text(doc) + "\n"


def test_float_rows_json_equal_joining_every_repr() -> None:
    """:func:`float_rows_json` (pydantic_core's encoder): every cell's ``float.__repr__``
    ("null" for None) joined by Python, the reference, on doubles of every kind; None
    for a matrix holding a NaN or an infinity, or anything but floats and Nones."""
    from annotate.services.json_ready import float_rows_json

    for n in (1, 2, 5, 64):
        for m in _matrices(n, n):
            finite = all(v is None or np.isfinite(v) for row in m for v in row)
            want = [t.encode() for t in _reference(m, ",", "null")] if finite else None
            assert float_rows_json(m) == want
            assert float_rows_json(tuple(map(tuple, m))) == want
    assert float_rows_json([[1, 2.0]]) is None  # an int
    assert float_rows_json([[np.float64(1.0)]]) is None  # a numpy float
    assert float_rows_json([[1.0], [1.0, 2.0]]) is None  # ragged
    assert float_rows_json([]) is None


def test_float_rows_json_on_millions_of_doubles() -> None:
    """Ryu's digits (pydantic_core) are Python's ``repr`` on every finite double of the
    kinds test_json_float_reprs draws, 1.2 million of them."""
    from annotate.services.json_ready import float_rows_json

    v = _values(300_000, 11)
    v = v[np.isfinite(v)]
    v = v[: v.size // 1000 * 1000].reshape(-1, 1000)
    rows = v.tolist()
    assert float_rows_json(rows) == [",".join(map(float.__repr__, r)).encode() for r in rows]


def test_float_rows_json_kept_in_a_scope() -> None:
    from annotate.services.json_ready import float_rows_json

    m = tuple(tuple(r) for r in np.eye(4).tolist())
    copy = [list(r) for r in m]  # the --json document's copy: the same float objects
    with kept_texts():
        first = float_rows_json(m)
        assert float_rows_json(m) is first
        assert float_rows_json(copy) is first
    assert float_rows_json(m) is not first
    assert float_rows_json(m) == first


@pytest.mark.parametrize("encoder", [True, False])
def test_ready_json_text_equals_the_standard_encoder(
    monkeypatch: pytest.MonkeyPatch, encoder: bool
) -> None:
    """:func:`ready_json_text` is ``json.dumps(json_ready(doc), indent=2)`` (the reference)
    with its long matrices written from their rows' texts (ARROW_MIN 1: every matrix),
    and without pydantic_core's encoder (the pyarrow and Python paths)."""
    import json

    from annotate.services.json_ready import json_ready, ready_json_text

    monkeypatch.setattr(json_ready_module, "ARROW_MIN", 1)
    if not encoder:
        monkeypatch.setattr(json_ready_module, "_json_encoder", lambda: None)
    rng = np.random.default_rng(8)
    for n in (2, 5, 30):
        for m in _matrices(n, n + 1):
            ints = rng.integers(-(2**40), 2**40, (n, n)).tolist()
            doc = {
                "kappa": m,
                "nested": {"overlap": ints, "tuple": tuple(map(tuple, m)), "k": [m, ints]},
                "huge": [[2**70, 1], [-3, True]],
                "mixed": [[1, 2.5], [None, 0]],
                "array": np.arange(6.0).reshape(3, 2) / 7,
                "reasons": {"a": 1.0, "b": float("nan"), "c": [], "d": {"e": float("inf")}},
                "rows": [{"v": "é\n", "w": [1, 2], "x": float("-inf")}, {"v": None}],
            }
            want = json.dumps(json_ready(doc), indent=2, ensure_ascii=False, allow_nan=False)
            assert ready_json_text(doc) == want
            with kept_texts():  # kept texts of the tuple matrix serve its list copy
                ready_json_text({"t": tuple(map(tuple, m))})
                assert ready_json_text(doc) == want


def test_json_encoder_is_used_here() -> None:
    """pydantic_core's encoder passes its probe here (else the fast paths are skipped)."""
    from annotate.services.json_ready import _json_encoder

    assert _json_encoder() is not None
