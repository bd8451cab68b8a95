"""Per-pair evaluation of per-vote terms in ranking.arena (``_by_pair``).

``dynamic_delta``'s information terms and the scale bias's cubes depend on each vote only
through the strength difference of its two items, so they are evaluated once per ordered
pair and taken per vote. The reference is the per-vote evaluation itself: the values (and
every sum over them) must be the same numbers, bit for bit, not merely close.
"""

from __future__ import annotations

import numpy as np
import pytest

from ranking.arena import _by_pair, _cube, _delta_terms, _slope_bias


@pytest.mark.parametrize("n_votes", [50, 5_000])  # fewer votes than pairs: per vote
def test_by_pair_gives_the_per_vote_numbers(n_votes: int) -> None:
    rng = np.random.default_rng(7)
    n = 30
    s = rng.normal(0.0, 1.5, n)
    a = rng.integers(0, n, n_votes)
    b = (a + rng.integers(1, n, n_votes)) % n
    x = s[a] - s[b]
    for f, g in ((_delta_terms, 0.83), (_cube, 0.0)):
        got = _by_pair(f, s, g, a, b)
        assert np.array_equal(got, f(x, g))
        assert float(np.mean(got)) == float(np.mean(f(x, g)))


def test_slope_bias_with_the_cubes_given() -> None:
    rng = np.random.default_rng(3)
    n, m, n_votes = 12, 40, 4_000
    s = rng.normal(0.0, 1.0, n)
    a = rng.integers(0, n, n_votes)
    b = (a + rng.integers(1, n, n_votes)) % n
    k = rng.integers(0, m, n_votes)
    g = rng.lognormal(0.0, 0.5, m)
    x = s[a] - s[b]
    ref = _slope_bias(x, g, k)
    assert np.array_equal(_slope_bias(x, g, k, x3=_by_pair(_cube, s, 0.0, a, b)), ref)
