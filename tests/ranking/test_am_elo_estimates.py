"""``ranking.pairwise._am_elo_estimates``, the preliminary fit of ``dynamic_delta`` without
standard errors: the same estimates as :func:`ranking.am_elo` (whose own values are checked
against references in ``test_pairwise.py``), bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from ranking import am_elo
from ranking.pairwise import _am_elo_estimates


def _votes(seed: int, n: int, m: int, size: int):
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 1.0, n)
    disc = rng.lognormal(0.0, 0.5, m)
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    k = rng.integers(0, m, size)
    p = 1.0 / (1.0 + np.exp(-disc[k] * (s[a] - s[b])))
    u = rng.random(size)
    w = np.where(u < 0.1, 0.5, (u < 0.1 + 0.9 * p).astype(np.float64))
    return a, b, k, w


@pytest.mark.parametrize(("seed", "n", "m", "size"), [(1, 5, 8, 800), (2, 20, 50, 20_000)])
def test_same_estimates_as_am_elo_bit_for_bit(seed, n, m, size):
    a, b, k, w = _votes(seed, n, m, size)
    full = am_elo(a, b, k, w, n_models=n)
    est = _am_elo_estimates(a, b, k, w, n_models=n)
    for field in ("ratings", "abilities", "discriminations", "log_strengths", "n_records"):
        assert np.array_equal(getattr(est, field), getattr(full, field)), field
    assert est.log_likelihood == full.log_likelihood
    assert est.iterations == full.iterations
    assert est.n_battles == full.n_battles
    assert np.all(np.isnan(est.rating_standard_errors))
    assert np.all(np.isnan(est.ability_standard_errors))
    assert est.rating_covariance is None
