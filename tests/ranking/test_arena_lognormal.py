"""The truncated log-normal likelihood of the ``random`` test (``ranking.arena._lognormal_nll``)
computed in place with its saturated points skipped: the same numbers, bit for bit, as the
plain expression it replaced (written out below from the measurement-error model of
``_truncated_lognormal_fit``, with scipy's own ``norm.pdf`` formula and ``ndtr``), so that
Nelder-Mead takes the same path and the fit the same optimum. The two cut-offs are checked
against numpy's ``exp`` and scipy's ``ndtr`` themselves.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr
from scipy.stats import norm

from ranking.arena import (
    _EXP_ZERO,
    _GH_U,
    _GH_W,
    _NDTR_ONE,
    _lognormal_nll,
    _truncated_lognormal_fit,
)


def _plain_nll(y, s, lo):
    """The likelihood as one expression over the (annotators x 40) grid (the code before)."""

    def nll(par):
        g = np.exp(float(par[0]) + math.exp(float(par[1])) * _GH_U)
        z = (y[:, None] - g[None, :]) / s[:, None]
        dens = np.exp(-(z**2) / 2.0) / np.sqrt(2 * np.pi) @ _GH_W / s
        keep = ndtr((g[None, :] - lo[:, None]) / s[:, None]) @ _GH_W
        return float(-np.sum(np.log(np.maximum(dens, 1e-300)) - np.log(np.maximum(keep, 1e-300))))

    return nll


def _honest(n, votes, rng):
    """Clear honest annotators' ability estimates: log-normal abilities plus noise of
    ``1 / sqrt(votes)`` relative size, kept above 1.645 standard errors."""
    g = np.exp(rng.normal(math.log(0.002), 0.5, n))
    se = g / math.sqrt(votes) * rng.uniform(0.8, 1.2, n)
    y = g + se * rng.normal(size=n)
    keep = y > 1.645 * se
    return y[keep], se[keep], 1.645 * se[keep]


def test_cutoffs_are_exact():
    """exp is exactly 0 below _EXP_ZERO and ndtr exactly 1 from _NDTR_ONE (dense grids and
    far out to the largest floats), and both are not yet there just inside."""
    below = np.concatenate(
        [np.linspace(-800.0, _EXP_ZERO, 200_001)[:-1], -np.geomspace(800.0, 1e308, 10_000)]
    )
    assert np.all(np.exp(below) == 0.0)
    assert np.exp(-745.0) > 0.0
    above = np.concatenate(
        [np.linspace(_NDTR_ONE, 40.0, 200_001), np.geomspace(40.0, 1e308, 10_000)]
    )
    assert np.all(ndtr(above) == 1.0)
    assert ndtr(np.inf) == 1.0
    assert ndtr(8.0) < 1.0
    # ndtr is scipy.stats' normal cdf, and its upper tail at the cut is below half an ulp of 1
    assert norm.sf(_NDTR_ONE) < 2.0**-54


@pytest.mark.parametrize("votes", [30, 100, 1000, 10_000])
def test_same_numbers_as_the_plain_expression(votes):
    """Over a grid of (mu, log sigma) around and far from the optimum, including spreads
    that overflow exp and points with every ndtr saturated, bit for bit."""
    rng = np.random.default_rng(votes)
    y, s, lo = _honest(400, votes, rng)
    fast, plain = _lognormal_nll(y, s, lo), _plain_nll(y, s, lo)
    for mu in np.linspace(math.log(1e-5), math.log(0.5), 9):
        for ls in np.linspace(math.log(1e-4), math.log(50.0), 9):
            par = np.array([mu, ls])
            with np.errstate(all="ignore"):  # exp overflows at the widest spreads, in both
                a, b = fast(par), plain(par)
            assert a == b or (math.isnan(a) and math.isnan(b)), (mu, ls, a, b)


def test_nan_and_infinite_parameters_as_before():
    rng = np.random.default_rng(3)
    y, s, lo = _honest(50, 100, rng)
    fast, plain = _lognormal_nll(y, s, lo), _plain_nll(y, s, lo)
    for par in ([math.nan, 0.0], [0.0, math.nan], [800.0, 0.0], [-800.0, 0.0], [0.0, 7.0]):
        with np.errstate(all="ignore"):  # exp overflows, inf - inf: in both alike
            a, b = fast(np.array(par)), plain(np.array(par))
        assert a == b or (math.isnan(a) and math.isnan(b)), (par, a, b)


def test_fit_unchanged_with_the_plain_likelihood(monkeypatch):
    """The whole fit (Nelder-Mead, the subsample start above 2,000 annotators) gives the
    same optimum with the plain expression swapped in."""
    import ranking.arena as arena

    rng = np.random.default_rng(11)
    for n, votes in ((60, 50), (600, 200), (2500, 100)):
        y, s, lo = _honest(n, votes, rng)
        fast = _truncated_lognormal_fit(y, s, lo)
        with monkeypatch.context() as mp:
            mp.setattr(arena, "_lognormal_nll", _plain_nll)
            plain = _truncated_lognormal_fit(y, s, lo)
        assert fast == plain
