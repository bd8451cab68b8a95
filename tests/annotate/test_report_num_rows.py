"""``num_rows`` formats the report's pairwise kappa table (a million cells at 1,000
annotators, issue 13) in vectorised passes; every cell must be what Python's own
``format(x, ".Nf")`` writes (the reference, :func:`num_row`), ties and signs included."""

from __future__ import annotations

import numpy as np
import pytest

from annotate.services.report_view import num_row, num_rows

_EDGES = [
    0.0, -0.0, 1.0, -1.0, 0.125, -0.125, 0.375, 0.625, 0.005, -0.005, 0.015, 0.025, 0.045,
    0.995, -0.995, 0.9949999999999999, 0.0049999999999999, -0.001, 5e-324, -5e-324, 1e-7,
    0.5, 2.5, -2.5, 1e7, -1e7, 10737418.235, 10737418.24, 1e9, 1e300, -1e300,
    float("nan"), float("inf"), float("-inf"), 1 / 3, -2 / 3,
]  # fmt: skip


@pytest.mark.parametrize("digits", [1, 2, 3])
def test_num_rows_equals_format_on_every_cell(digits: int) -> None:
    rng = np.random.default_rng(digits)
    for scale in (1.0, 1e-3, 1e3, 1e6):
        m = (rng.normal(size=(40, 40)) * scale).tolist()
        m[0][: len(_EDGES)] = _EDGES
        grid = [k / 10**digits + h for k in range(-300, 300) for h in (0.0, 0.5 / 10**digits)]
        m.append(grid[:40])
        m[1][:40] = grid[-40:]
        assert num_rows(m, digits) == [num_row(r, digits) for r in m]


def test_num_rows_falls_back_on_none_and_ragged_rows() -> None:
    rows = [[0.25, None], [None, 0.5]]
    assert num_rows(rows, 2) == [("0.25", "—"), ("—", "0.50")]
    ragged: list[list[float | None]] = [[0.25, 0.5], [0.125]]
    assert num_rows(ragged, 2) == [num_row(r, 2) for r in ragged]
    assert num_rows([], 2) == []
    assert num_rows([[1, 2.0]], 2) == [("1.00", "2.00")]


@pytest.mark.parametrize("block", [1, 7, 40, 41, 10_000])
def test_num_rows_in_blocks_equals_format(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Formatted block by block (a few rows per pass, to bound the passes' memory), with
    None cells and edge values in several blocks: still Python's own text of every cell."""
    import annotate.services.report_view as report_view

    monkeypatch.setattr(report_view, "NUM_ROWS_BLOCK", block)
    rng = np.random.default_rng(block)
    m: list[list[float | None]] = [list(r) for r in rng.uniform(-1, 1, size=(13, 40)).tolist()]
    m[0][: len(_EDGES)] = _EDGES
    m[6][3] = m[12][39] = None
    m[9][: len(_EDGES)] = _EDGES[::-1]
    assert num_rows(m, 2) == [num_row(r, 2) for r in m]
