"""alignment_report makes the agreement rows of estimators that predict every pair alike
once (EIP on the whole model pool is EIP; 1PL orders pairs as Simple Rank does) and copies
them (issue 13: 9 estimators x 1,000 annotators x 1,000 pairs). The report must be the one
computed row by row, bit for bit (the reference: the same function with the sharing
turned off)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ranking.alignment as al
from ranking.alignment import alignment_report
from tests.ranking.bits import bits


def _study(seed: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(seed)
    n_q, n_p, n_a = 40, 60, 25
    pairs = np.array([rng.choice(n_q, 2, replace=False) for _ in range(n_p)])
    pair, annotator = (g.ravel() for g in np.meshgrid(np.arange(n_p), np.arange(n_a)))
    keep = rng.random(pair.size) < 0.8
    pair, annotator = pair[keep], annotator[keep]
    vote = rng.choice([0, 1, 2], size=pair.size, p=[0.1, 0.5, 0.4])
    base = np.round(rng.normal(size=(3, n_q)), 1)  # rounded: some tied predictions
    # rows 3 and 5 repeat rows 0 and 1; row 4 orders every pair as row 2 does
    difficulty = np.vstack([base, base[0], 3.0 * base[2] + 1.0, base[1]])
    return difficulty, pairs, pair, annotator, vote, n_a


@pytest.mark.parametrize(("tie_credit", "margin"), [(0.0, 0.0), (0.5, 0.2), (1.0, 0.0)])
def test_shared_rows_give_the_row_by_row_report(
    monkeypatch: pytest.MonkeyPatch, tie_credit: float, margin: float
) -> None:
    difficulty, pairs, pair, annotator, vote, n_a = _study(4)
    kwargs = dict(
        n_annotators=n_a,
        tie_credit=tie_credit,
        near_tie_margin=margin,
        n_boot=300,
        resample=("units", "annotators", "both"),
    )
    distinct, row_of = al._distinct_rows(al._predict(difficulty, pairs, 0.0))
    assert distinct.shape[0] == 3
    assert row_of.tolist() == [0, 1, 2, 0, 2, 1]
    shared = alignment_report(difficulty, pairs, pair, annotator, vote, rng=7, **kwargs)
    monkeypatch.setattr(al, "_distinct_rows", lambda p: (p, np.arange(p.shape[0])))
    row_by_row = alignment_report(difficulty, pairs, pair, annotator, vote, rng=7, **kwargs)
    assert bits(shared) == bits(row_by_row)
    assert shared.kappa[0].both_interval is not None
