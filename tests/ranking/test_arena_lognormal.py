"""The truncated log-normal fit of the ``random`` test (``ranking.arena._truncated_lognormal_fit``).

Its likelihood for Nelder-Mead (``_lognormal_nll``, now the fallback) computed in place with
its saturated points skipped: the same numbers, bit for bit, as the plain expression it
replaced (written out below from the measurement-error model, with scipy's own ``norm.pdf``
formula and ``ndtr``), so that Nelder-Mead takes the same path and the fit the same
optimum. The two cut-offs are checked against numpy's ``exp`` and scipy's ``ndtr``.

The fit itself is projected Newton (``_lognormal_newton``) on the analytic gradient and
Hessian (``_lognormal_derivatives``): those are checked against central differences of the
plain expression, and the optimum against scipy's minimisers (L-BFGS-B and Nelder-Mead
run to tight tolerances on the plain expression), which it must match to 1e-6.
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
    _LOGNORMAL_MIN_SIGMA,
    _NDTR_ONE,
    _lognormal_derivatives,
    _lognormal_nelder_mead,
    _lognormal_newton,
    _lognormal_nll,
    _lognormal_start,
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
    """The Nelder-Mead fallback (with the subsample start above 2,000 annotators) gives the
    same optimum with the plain expression swapped in."""
    import ranking.arena as arena

    rng = np.random.default_rng(11)
    for n, votes in ((60, 50), (600, 200), (2500, 100)):
        y, s, lo = _honest(n, votes, rng)
        start = _lognormal_start(y, s, lo)
        fast = _lognormal_nelder_mead(y, s, lo, start)
        with monkeypatch.context() as mp:
            mp.setattr(arena, "_lognormal_nll", _plain_nll)
            plain = _lognormal_nelder_mead(y, s, lo, start)
        assert fast == plain


def _plain_in_sigma(y, s, lo):
    """The plain likelihood in ``(mu, sigma)`` (the parameters of the Newton fit)."""
    nll = _plain_nll(y, s, lo)
    return lambda par: nll(np.array([par[0], math.log(par[1])]))


def _log_space_nll(y, s, lo):
    """The same likelihood in log space with scipy's ``norm.logpdf``, ``log_ndtr`` and
    ``logsumexp`` (no underflow where every node is far from an annotator, where the plain
    expression clamps its density at 1e-300), in ``(mu, sigma)``."""
    from scipy.special import log_ndtr, logsumexp

    def nll(par):
        g = np.exp(par[0] + par[1] * _GH_U)
        log_dens = logsumexp(norm.logpdf((y[:, None] - g) / s[:, None]), b=_GH_W, axis=1)
        log_keep = logsumexp(log_ndtr((g - lo[:, None]) / s[:, None]), b=_GH_W, axis=1)
        return float(-np.sum(log_dens - np.log(s) - log_keep))

    return nll


@pytest.mark.parametrize("votes", [30, 100, 1000])
def test_derivatives_match_central_differences(votes):
    """Value, gradient and Hessian of ``_lognormal_derivatives`` against the likelihood in
    log space (scipy's ``logsumexp``, ``norm.logpdf`` and ``log_ndtr``) and central
    differences of it (and of the gradient), at the optimum, near it and far from it
    (spreads from 0.01 to 2): value to 1e-12 relative (and equal to the plain expression
    to 1e-12 where that does not clamp), gradient to
    1e-5 of the largest Hessian entry (step 1e-5), Hessian to 1e-6 of its largest entry
    (step 1e-6: the differences' own error, falling as the step squared, is at most 2e-7
    of it here)."""
    rng = np.random.default_rng(votes + 7)
    y, s, lo = _honest(300, votes, rng)
    f = _log_space_nll(y, s, lo)
    plain = _plain_in_sigma(y, s, lo)
    mu0, sd0 = _truncated_lognormal_fit(y, s, lo)
    h = 1e-5
    for mu, sd in ((mu0, sd0), (mu0 + 0.3, sd0 * 1.5), (mu0 - 0.5, 0.2), (mu0, 0.01), (mu0, 2.0)):
        val, grad, hess = _lognormal_derivatives(y, s, lo, mu, sd)
        assert val == pytest.approx(f([mu, sd]), rel=1e-12)
        g = np.exp(mu + sd * _GH_U)
        dens = np.exp(-(((y[:, None] - g) / s[:, None]) ** 2) / 2) @ _GH_W
        if dens.min() > 1e-290:
            assert val == pytest.approx(plain([mu, sd]), rel=1e-12)
        fd = np.array(
            [
                (f([mu + h, sd]) - f([mu - h, sd])) / (2 * h),
                (f([mu, sd + h]) - f([mu, sd - h])) / (2 * h),
            ]
        )
        scale = float(np.abs(hess).max())
        assert np.all(np.abs(grad - fd) <= 1e-5 * scale), (mu, sd, grad, fd)
        k = 1e-6
        col_mu = (
            _lognormal_derivatives(y, s, lo, mu + k, sd)[1]
            - _lognormal_derivatives(y, s, lo, mu - k, sd)[1]
        ) / (2 * k)
        col_sd = (
            _lognormal_derivatives(y, s, lo, mu, sd + k)[1]
            - _lognormal_derivatives(y, s, lo, mu, sd - k)[1]
        ) / (2 * k)
        fd_hess = np.column_stack([col_mu, col_sd])
        assert np.abs(hess - fd_hess).max() <= 1e-6 * scale, (mu, sd, hess, fd_hess)
        assert hess[0, 1] == hess[1, 0]


@pytest.mark.parametrize(("n", "votes", "seed"), [(40, 50, 1), (300, 100, 2), (1000, 200, 3)])
def test_newton_optimum_matches_scipy(n, votes, seed):
    """Newton's optimum (from the usual start) equals scipy's L-BFGS-B and a tight
    Nelder-Mead (xatol 1e-10) on the plain expression in ``(mu, sigma)``, started 0.01 off
    (the likelihood can have several optima, see ``_truncated_lognormal_fit``: the
    references look for the same one), to 1e-6 in both; its likelihood is no worse than
    theirs (to 1e-9), its gradient vanishes there (relative to the Hessian) and the
    Hessian is positive definite (a minimum)."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(seed)
    y, s, lo = _honest(n, votes, rng)
    mu, sd = _lognormal_newton(y, s, lo, *_start(y, s, lo))
    f = _plain_in_sigma(y, s, lo)
    lb = minimize(
        f, [mu + 0.01, sd + 0.01], method="L-BFGS-B", bounds=[(None, None), (1e-4, None)],
        options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10_000},
    )  # fmt: skip
    nm = minimize(
        f, [mu + 0.01, sd + 0.01], method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 10_000, "maxfev": 20_000},
    )  # fmt: skip
    assert np.linalg.eigvalsh(_lognormal_derivatives(y, s, lo, mu, sd)[2]).min() > 0
    for ref in (lb, nm):
        assert abs(ref.x[0] - mu) < 1e-6, (ref.x, mu, sd)
        assert abs(ref.x[1] - sd) < 1e-6, (ref.x, mu, sd)
        assert f([mu, sd]) <= ref.fun + 1e-9
    _, grad, hess = _lognormal_derivatives(y, s, lo, mu, sd)
    assert np.abs(grad).max() < 1e-8 * np.abs(hess).max()


def _start(y, s, lo):
    st = _lognormal_start(y, s, lo)
    return float(st[0]), math.exp(float(st[1]))


def test_newton_agrees_with_the_nelder_mead_fit_it_replaced():
    """On bench_flags-like draws (20 to 2,500 clear annotators, 30 to 1,000 votes, three
    seeds each) the new fit and the Nelder-Mead fit before it (``_lognormal_nelder_mead``:
    xatol 1e-6 in mu and log sigma) agree to 1e-5 in mu and in log sigma (the same local
    optimum where there are several: from 100 votes a pure Newton from the start reached
    another one in some of these draws, 0.06 away in mu), and the new one's likelihood is
    never worse by more than 1e-9 (it is that optimum; Nelder-Mead stops within its
    tolerance)."""
    rng = np.random.default_rng(21)
    polished = 0
    for n, votes in [(n, v) for n in (20, 40, 200, 1000, 2500) for v in (30, 100, 1000)] * 3:
        y, s, lo = _honest(n, votes, rng)
        start = _lognormal_start(y, s, lo)
        rough = _lognormal_nelder_mead(y, s, lo, start, xatol=1e-2, fatol=math.inf)
        mu, sd = _lognormal_newton(y, s, lo, rough[0], math.exp(rough[1]))
        mu_nm, lsd_nm, _ = _lognormal_nelder_mead(y, s, lo, start)
        assert abs(mu - mu_nm) < 1e-5, (n, votes)
        assert abs(math.log(sd) - lsd_nm) < 1e-5, (n, votes)
        nll = _plain_nll(y, s, lo)
        assert nll(np.array([mu, math.log(sd)])) <= nll(np.array([mu_nm, lsd_nm])) + 1e-9
        # the fit: Newton's optimum where it stays near where Nelder-Mead stopped,
        # Nelder-Mead's own otherwise; with the caps on mu (the median of log y) and sigma
        near = max(abs(mu - rough[0]), abs(sd - math.exp(rough[1]))) <= 0.05
        polished += near
        if not near:
            mu, sd = mu_nm, math.exp(lsd_nm)
        med = float(np.median(np.log(y)))
        assert _truncated_lognormal_fit(y, s, lo) == (min(mu, med), min(sd, 3.0))
    assert polished >= 36  # of 45 (44 when written)


def test_newton_stops_at_the_spread_floor_as_a_constrained_optimum():
    """Alike annotators (one ability, noise only): the likelihood rises as sigma falls to
    0, so the optimum is the bound ``_LOGNORMAL_MIN_SIGMA``; there the gradient in sigma
    pushes below it (positive) and the one in mu vanishes (the Karush-Kuhn-Tucker
    conditions), and mu equals the one-dimensional optimum that scipy's bounded scalar
    minimiser finds at that sigma."""
    from scipy.optimize import minimize_scalar

    gen = np.random.default_rng(5)
    se = np.full(150, 0.0014)
    y = 0.005 + gen.normal(0.0, 1.0, size=se.size) * se
    keep = y > 1.645 * se
    y, se = y[keep], se[keep]
    lo = 1.645 * se
    mu, sd = _lognormal_newton(y, se, lo, *_start(y, se, lo))
    assert sd == _LOGNORMAL_MIN_SIGMA
    _, grad, hess = _lognormal_derivatives(y, se, lo, mu, sd)
    assert grad[1] > 0
    assert abs(grad[0]) < 1e-8 * abs(hess[0, 0])
    f = _plain_in_sigma(y, se, lo)
    ref = minimize_scalar(
        lambda m: f([m, sd]), bounds=(mu - 0.1, mu + 0.1), method="bounded",
        options={"xatol": 1e-12},
    )  # fmt: skip
    assert abs(ref.x - mu) < 1e-7


def test_falls_back_to_nelder_mead_when_newton_fails(monkeypatch):
    """Newton that does not converge (here: no derivatives anywhere) is never used
    silently: the fit is then Nelder-Mead's, as before."""
    import ranking.arena as arena

    rng = np.random.default_rng(4)
    y, s, lo = _honest(200, 100, rng)
    monkeypatch.setattr(arena, "_lognormal_derivatives", lambda *a: None)
    mu, sd = _truncated_lognormal_fit(y, s, lo)
    mu_nm, lsd_nm, _ = _lognormal_nelder_mead(y, s, lo, _lognormal_start(y, s, lo))
    assert (mu, sd) == (min(mu_nm, float(np.median(np.log(y)))), min(math.exp(lsd_nm), 3.0))


def test_falls_back_to_nelder_mead_when_newton_leaves_the_basin(monkeypatch):
    """A Newton optimum farther than ``_LOGNORMAL_POLISH_RADIUS`` from where Nelder-Mead
    stopped belongs to another basin than the one the path led to: Nelder-Mead goes on."""
    import ranking.arena as arena

    rng = np.random.default_rng(4)
    y, s, lo = _honest(200, 100, rng)
    monkeypatch.setattr(arena, "_lognormal_newton", lambda y, s, lo, mu, sd: (mu + 0.1, sd))
    mu, sd = _truncated_lognormal_fit(y, s, lo)
    mu_nm, lsd_nm, _ = _lognormal_nelder_mead(y, s, lo, _lognormal_start(y, s, lo))
    assert (mu, sd) == (min(mu_nm, float(np.median(np.log(y)))), min(math.exp(lsd_nm), 3.0))
