"""Wilson intervals and per-model "both bad" shares (issue 16 item 5).

References: statsmodels' ``proportion_confint(method="wilson")`` for the interval, and a
count by hand (a Python loop over the votes) for the shares.
"""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from ranking.errors import RankingInputError
from ranking.proportions import both_bad_shares, wilson_interval


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 10), (3, 10), (10, 10), (17, 250), (1, 3)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(k: int, n: int, confidence: float) -> None:
    lo, hi = wilson_interval(k, n, confidence)
    ref = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert float(lo) == pytest.approx(ref[0], abs=1e-12)
    assert float(hi) == pytest.approx(ref[1], abs=1e-12)


def test_wilson_is_nan_without_trials_and_rejects_bad_counts() -> None:
    lo, hi = wilson_interval([0, 2], [0, 4])
    assert np.isnan(lo[0])
    assert np.isnan(hi[0])
    assert 0 < lo[1] < 0.5 < hi[1]
    with pytest.raises(RankingInputError):
        wilson_interval(5, 4)
    with pytest.raises(RankingInputError):
        wilson_interval(1, 4, confidence=1.0)


def test_both_bad_shares_count_each_models_votes() -> None:
    rng = np.random.default_rng(3)
    n_models, n = 5, 400
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    bad = rng.random(n) < np.where((a == 2) | (b == 2), 0.4, 0.1)
    r = both_bad_shares(a, b, bad, n_models=n_models)
    for m in range(n_models):
        mine = [(x == m or y == m) for x, y in zip(a, b, strict=True)]
        votes = sum(mine)
        k = sum(bool(z) for z, t in zip(bad, mine, strict=True) if t)
        assert r.votes[m] == votes
        assert r.both_bad[m] == k
        assert r.share[m] == pytest.approx(k / votes)
        ref = proportion_confint(k, votes, alpha=0.05, method="wilson")
        assert (r.lower[m], r.upper[m]) == pytest.approx(ref, abs=1e-12)
    assert int(np.argmax(r.share)) == 2


def test_both_bad_shares_model_without_votes_is_nan() -> None:
    r = both_bad_shares([0], [1], [True], n_models=3)
    assert r.votes.tolist() == [1, 1, 0]
    assert np.isnan(r.share[2])
    assert np.isnan(r.lower[2])
    with pytest.raises(RankingInputError):
        both_bad_shares([0], [1, 2], [True], n_models=3)
