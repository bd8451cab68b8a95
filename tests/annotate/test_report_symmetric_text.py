"""The report writes its million-cell pairwise kappa matrix (1,000 annotators, issue 13)
by converting each unordered pair of cells once (``symmetric_texts``: the matrix equals its
transpose bit for bit) and joining rows of plain text without the csv module's per-cell
checks. The references are the plain conversions and the standard library itself:
``[[text(v) for v in row] ...]``, ``csv.writer`` and ``json.dumps(indent=2)``."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from annotate.names import one_line
from annotate.services.json_ready import indented_json, symmetric_texts
from annotate.services.report_files import write_csv


def _symmetric(n: int, seed: int = 0) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n)).round(rng.integers(1, 17))
    a = np.triu(a) + np.triu(a, 1).T
    return a.tolist()


@pytest.mark.parametrize("text", [float.__repr__, "{:.2f}".format, "{:.1f}".format])
def test_symmetric_texts_equals_converting_every_cell(text: Any) -> None:
    for n in (1, 2, 7, 64):
        m = _symmetric(n, n)
        assert symmetric_texts(m, text) == [[text(v) for v in row] for row in m]
        as_tuples = tuple(tuple(row) for row in m)
        assert symmetric_texts(as_tuples, text) == [[text(v) for v in row] for row in m]


def test_symmetric_texts_declines_what_it_cannot_mirror() -> None:
    m = _symmetric(5)
    zero = [row[:] for row in m]
    zero[1][3], zero[3][1] = 0.0, -0.0  # equal values, other bits (and other text)
    assert symmetric_texts(zero, repr) is None
    off = [row[:] for row in m]
    off[0][4] = np.nextafter(off[4][0], 9.0)
    assert symmetric_texts(off, repr) is None
    none = [row[:] for row in m]
    none[2][2] = None  # type: ignore[call-overload]
    assert symmetric_texts(none, repr) is None
    assert symmetric_texts([row[:4] for row in m], repr) is None  # not square
    assert symmetric_texts([[1, 2], [2, 1]], repr) is None  # ints
    assert symmetric_texts([], repr) is None
    nan = [row[:] for row in m]
    nan[0][0] = float("nan")
    assert symmetric_texts(nan, repr) == [[repr(v) for v in row] for row in nan]
    assert symmetric_texts(nan, repr, finite=True) is None


def _json_reference(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False, default=str)


def test_indented_json_of_symmetric_matrices_equals_the_standard_encoder() -> None:
    m = _symmetric(40)
    skew = [row[:] for row in m]
    skew[3][5] = 0.5
    docs: list[Any] = [
        m,
        {"kappa": m, "overlap": [[1, 2], [2, 1]], "nested": [{"k": _symmetric(3)}]},
        [m, skew, [[1.0]], [[0.0, -0.0], [-0.0, 0.0]]],
        tuple(tuple(r) for r in _symmetric(4)),
        [[1.5, [2.0]], [[2.0], 1.5]],
    ]
    for doc in docs:
        assert indented_json(doc) == _json_reference(doc)
    bad = [row[:] for row in m]
    bad[0][0] = float("inf")
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        indented_json({"kappa": bad})


def _csv_reference(header: list[str], rows: list[list[object]]) -> str:
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow([one_line(c) for c in header])
    w.writerows([one_line(c) for c in row] for row in rows)
    return buf.getvalue()


def test_write_csv_equals_the_csv_writer_on_random_rows(tmp_path: Path) -> None:
    rng = random.Random(13)
    pieces = ["a", "0.25", "", " ", ",", '"', "\r", "\n", "\r\n", "x,y", "é", "\t", "'", ";"]
    rows: list[list[object]] = [[""], [], [" "], ['"'], [","], ["", ""]]
    for _ in range(3000):
        k = rng.randint(0, 4)
        rows.append(["".join(rng.choices(pieces, k=rng.randint(0, 3))) for _ in range(k)])
    path = write_csv(tmp_path / "r.csv", ["h", "i"], rows)
    assert path.read_bytes().decode("utf-8") == _csv_reference(["h", "i"], rows)


def test_symmetric_texts_kept_results_follow_the_text_and_the_values() -> None:
    m = _symmetric(6, 1)
    other = [[v + 1.0 for v in row] for row in m]
    for _ in range(2):  # the second round answers from the kept results where they match
        for rows in (m, other):
            for text in (float.__repr__, "{:.2f}".format, "{:.3f}".format):
                assert symmetric_texts(rows, text) == [[text(v) for v in row] for row in rows]
