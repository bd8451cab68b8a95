"""Tests for the item standard errors of ranking.irt (MML and joint ML).

Where each expected number comes from is said in each test:

* finite differences: central-difference Hessians (written out below; numdifftools is not a
  dependency) of the public ``marginal_log_likelihood`` for the MML fits, and of a slow
  loop-over-entries penalised objective for the JML fits, inverted and compared with the
  analytic standard errors to 1e-4 relative;
* published R ltm output for LSAT6 (tests/ranking/data/irt_lsat_ltm_se.json, which says
  where each value was printed);
* an independent route for the same LSAT6 numbers: the marginal likelihood over the 32
  Bock-Lieberman response patterns integrated with a 101-point physicists' Gauss-Hermite
  rule written out here, maximised with scipy and differentiated by statsmodels'
  ``approx_hess3``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import optimize
from scipy.special import expit

from ranking import (
    InvalidParameterError,
    fit_1pl,
    fit_1pl_mml,
    fit_2pl,
    fit_2pl_mml,
    marginal_log_likelihood,
)
from ranking.irt import (
    _collapse_patterns,
    _jml_2pl_se,
    _marginal,
    _mml_information,
    _mml_standard_errors,
    _quadrature_rule,
)

DATA = Path(__file__).parent / "data"
LTM_SE = json.loads((DATA / "irt_lsat_ltm_se.json").read_text())
FD_RTOL = 1e-4  # analytic vs finite-difference standard errors (the brief's 1e-4 relative)

# ----------------------------------------------------------------------------- helpers


def central_hessian(f: Callable[[np.ndarray], float], x: np.ndarray, h: float) -> np.ndarray:
    """Hessian of ``f`` at ``x`` by central differences of its values.

    Diagonal: the 5-point fourth-order formula; off-diagonal: the 4-point formula. The step
    of coordinate ``i`` is ``h * max(1, |x_i|)``.
    """
    n = x.size
    steps = h * np.maximum(1.0, np.abs(x))
    f0 = f(x)
    H = np.empty((n, n))
    for i in range(n):
        ei = np.zeros(n)
        ei[i] = steps[i]
        H[i, i] = (-f(x + 2 * ei) + 16 * f(x + ei) - 30 * f0 + 16 * f(x - ei) - f(x - 2 * ei)) / (
            12 * steps[i] ** 2
        )
        for j in range(i + 1, n):
            ej = np.zeros(n)
            ej[j] = steps[j]
            H[i, j] = H[j, i] = (
                f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)
            ) / (4 * steps[i] * steps[j])
    return H


def se_from_hessian(H: np.ndarray) -> np.ndarray:
    """Standard errors from the Hessian of a log-likelihood (negative definite)."""
    return np.asarray(np.sqrt(np.diag(np.linalg.inv(-H))), dtype=np.float64)


def simulate(
    n_items: int, n_persons: int, seed: int, *, missing: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """2PL responses, items x persons: P = expit(a theta + d), theta ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.8, 2.0, n_items)
    d = rng.normal(0.0, 0.8, n_items)
    theta = rng.normal(size=n_persons)
    A = (rng.random((n_items, n_persons)) < expit(np.outer(a, theta) + d[:, None])).astype(float)
    if missing:
        A[rng.random(A.shape) < missing] = np.nan
    return A, a, d


def read_lsat6(shared_data: Path) -> np.ndarray:
    """LSAT6 as items x persons."""
    with (shared_data / "lsat_bock_lieberman" / "lsat6.csv").open() as fh:
        rows = list(csv.reader(fh))
    return np.array([[float(v) for v in r] for r in rows[1:]]).T


# ----------------------------------------------------------------------------- MML


class TestMarginalHessian:
    """The analytic Hessian (Louis's identity) against differences of the analytic gradient."""

    @pytest.mark.parametrize("missing", [0.0, 0.25])
    def test_hessian_matches_differences_of_the_gradient(self, missing: float) -> None:
        # at an arbitrary point, not an optimum: the identity holds everywhere
        A, a, d = simulate(6, 300, 5, missing=missing)
        obs = ~np.isnan(A)
        pat = _collapse_patterns(np.where(obs, A, 0.0), obs)
        nodes, logw, *_ = _quadrature_rule("grid", 41, 5.0)
        a, d = a * 0.9, d + 0.1
        n = a.size

        def grad(x: np.ndarray) -> np.ndarray:
            _, ga, gd, _ = _marginal(x[:n], x[n:], pat, nodes, logw)
            return np.concatenate([ga, gd])

        x0 = np.concatenate([a, d])
        h = 1e-5
        fd = np.array([(grad(x0 + h * e) - grad(x0 - h * e)) / (2 * h) for e in np.eye(2 * n)])
        W = _marginal(a, d, pat, nodes, logw)[3]
        info = _mml_information(a, d, pat, nodes, W, fixed_a=False, shared_a=False)
        np.testing.assert_allclose(-info, fd.T, rtol=0, atol=1e-6 * np.abs(fd).max())
        # the reduced layouts are -J^T H J: one shared slope, or the intercepts only
        J = np.zeros((2 * n, n + 1))
        J[:n, 0] = 1.0
        J[n:, 1:] = np.eye(n)
        shared = _mml_information(a, d, pat, nodes, W, fixed_a=False, shared_a=True)
        np.testing.assert_allclose(shared, J.T @ info @ J, rtol=1e-10, atol=1e-9)
        fixed = _mml_information(a, d, pat, nodes, W, fixed_a=True, shared_a=False)
        np.testing.assert_allclose(fixed, info[n:, n:], rtol=1e-12)


MML_CASES = [
    pytest.param("2PL", None, 0.0, id="2pl"),
    pytest.param("2PL", None, 0.2, id="2pl-missing"),
    pytest.param("1PL", None, 0.0, id="1pl-common-a"),
    pytest.param("1PL", None, 0.2, id="1pl-common-a-missing"),
    pytest.param("1PL", 1.3, 0.0, id="1pl-fixed-a"),
    pytest.param("1PL", 1.3, 0.2, id="1pl-fixed-a-missing"),
]


@pytest.mark.parametrize(("model", "fixed_a", "missing"), MML_CASES)
def test_mml_se_match_finite_differences_of_the_log_likelihood(
    model: str, fixed_a: float | None, missing: float
) -> None:
    """Expected: the inverse of a central-difference Hessian of the public
    marginal_log_likelihood at the fitted parameters, taken once in the IRT
    parameterisation (a, b) and once in (a, d); at the maximum, the inverse Hessian in (a, b)
    is the delta-method covariance, so this checks the delta method too. 1e-4 relative."""
    A, _, _ = simulate(6, 500, 11, missing=missing)
    quad: dict[str, Any] = {"quadrature": "grid", "n_quadrature": 41, "grid_limit": 5.0}
    if model == "2PL":
        res = fit_2pl_mml(A, tol=1e-9, **quad)
    else:
        res = fit_1pl_mml(A, discrimination=fixed_a, tol=1e-9, **quad)
    assert res.se_status == "ok"
    n = A.shape[0]

    def unpack(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if model == "2PL":
            return x[:n], x[n:]
        if fixed_a is None:
            return np.full(n, x[0]), x[1:]
        return np.full(n, fixed_a), x

    def pack(a: np.ndarray, second: np.ndarray) -> np.ndarray:
        if model == "2PL":
            return np.concatenate([a, second])
        if fixed_a is None:
            return np.concatenate([[a[0]], second])
        return second.copy()

    def ll_ab(x: np.ndarray) -> float:
        a, b = unpack(x)
        return marginal_log_likelihood(A, a, -a * b, **quad)

    def ll_ad(x: np.ndarray) -> float:
        a, d = unpack(x)
        return marginal_log_likelihood(A, a, d, **quad)

    se_ab = se_from_hessian(central_hessian(ll_ab, pack(res.slope, res.difficulty), 1e-3))
    se_ad = se_from_hessian(central_hessian(ll_ad, pack(res.slope, res.intercept), 1e-3))
    np.testing.assert_allclose(res.difficulty_se, se_ab[-n:], rtol=FD_RTOL)
    np.testing.assert_allclose(res.intercept_se, se_ad[-n:], rtol=FD_RTOL)
    if fixed_a is not None:
        assert np.all(np.isnan(res.slope_se))
        assert np.all(np.isnan(res.discrimination_se))
    else:  # the slope is a coordinate of both parameterisations: same SE from each
        for se in (se_ab, se_ad):
            expected_a = se[:n] if model == "2PL" else np.full(n, se[0])
            np.testing.assert_allclose(res.slope_se, expected_a, rtol=FD_RTOL)
        np.testing.assert_array_equal(res.discrimination_se, res.slope_se)


# ----------------------------------------------------------------------------- published


@pytest.mark.shared_data
@pytest.mark.parametrize("case", LTM_SE["cases"], ids=[c["name"] for c in LTM_SE["cases"]])
def test_lsat6_se_match_ltm(shared_data: Path, case: dict[str, Any]) -> None:
    """Expected: ltm's printed std.err for LSAT6 (irt_lsat_ltm_se.json says where each was
    printed), fitted as ltm does (Gauss-Hermite, 21 points). The point estimates are checked
    first, since the SEs are only comparable at the same estimates: to 1e-3 for the Rasch
    lines; ltm stopped its 2PL fit early (max |grad| 0.024), so its b differ from the
    optimum by up to 0.0023 and its SEs from ours by up to rtol 2e-3 (see the next test for
    the SEs at ltm's own estimates)."""
    A = read_lsat6(shared_data)
    kw: dict[str, Any] = {"quadrature": "gauss-hermite", "n_quadrature": 21, "tol": 1e-9}
    if case["model"] == "2PL":
        res = fit_2pl_mml(A, **kw)
        np.testing.assert_allclose(res.difficulty, case["b"], atol=3e-3)
        np.testing.assert_allclose(res.discrimination, case["a"], atol=1e-3)
        rtol = case["rtol_se_at_our_optimum"]
        np.testing.assert_allclose(res.difficulty_se, case["se_b"], rtol=rtol)
        np.testing.assert_allclose(res.discrimination_se, case["se_a"], rtol=rtol)
    else:
        res = fit_1pl_mml(A, discrimination=case["discrimination"], **kw)
        np.testing.assert_allclose(res.difficulty, case["b"], atol=1e-3)
        np.testing.assert_allclose(res.difficulty_se, case["se_b"], atol=case["atol_se"])
        if "se_a" in case:
            np.testing.assert_allclose(res.discrimination, case["a"], atol=1e-3)
            np.testing.assert_allclose(res.discrimination_se, case["se_a"], atol=case["atol_se"])
        else:
            assert np.all(np.isnan(res.discrimination_se))
    assert res.se_status == "ok"


@pytest.mark.shared_data
def test_lsat6_2pl_information_at_ltm_estimates_gives_ltm_se(shared_data: Path) -> None:
    """Expected: ltm's printed 2PL std.err to its 4 decimals (atol 1e-4) when our observed
    information is evaluated at ltm's own estimates (coef() to 7 decimals), where our
    gradient also reproduces ltm's reported max(|grad|) = 0.024: the two compute the same
    matrix, ltm numerically and ours analytically."""
    case = next(c for c in LTM_SE["cases"] if c["name"] == "lsat6_2pl_ltm")
    A = read_lsat6(shared_data)
    obs = ~np.isnan(A)
    pat = _collapse_patterns(np.where(obs, A, 0.0), obs)
    nodes, logw, *_ = _quadrature_rule("gauss-hermite", 21, 6.0)
    a = np.array(case["ltm_estimates"]["a"])
    d = -a * np.array(case["ltm_estimates"]["b"])
    _, ga, gd, W = _marginal(a, d, pat, nodes, logw)
    assert round(float(np.abs(np.concatenate([ga, gd])).max()), 3) == case["ltm_max_abs_grad"]
    info = _mml_information(a, d, pat, nodes, W, fixed_a=False, shared_a=False)
    se_a, _, se_b, status = _mml_standard_errors(a, d, info, fixed_a=False, shared_a=False)
    assert status == "ok"
    np.testing.assert_allclose(se_b, case["se_b"], atol=case["atol_se"])
    np.testing.assert_allclose(se_a, case["se_a"], atol=case["atol_se"])


_x, _w = np.polynomial.hermite.hermgauss(101)
GH101 = (
    np.sqrt(2.0) * _x,
    _w,
)  # physicists' rule: int f(t) phi(t) dt = sum w f(sqrt(2) x) / sqrt(pi)


def _pattern_loglik_gh101(X: np.ndarray, counts: np.ndarray, a: np.ndarray, d: np.ndarray) -> float:
    """Marginal log-likelihood of response patterns with the 101-point rule GH101."""
    t, w = GH101
    z = np.outer(t, a) + d  # nodes x items
    logp = -np.logaddexp(0.0, -z)
    log1mp = -np.logaddexp(0.0, z)
    ll = X @ logp.T + (1 - X) @ log1mp.T  # patterns x nodes
    m = ll.max(axis=1, keepdims=True)
    lik = (np.exp(ll - m) @ w) / np.sqrt(np.pi)
    return float(counts @ (m[:, 0] + np.log(lik)))


@pytest.mark.shared_data
@pytest.mark.parametrize("model", ["2PL", "1PL", "1PL-a1"])
def test_lsat6_se_by_an_independent_route(shared_data: Path, model: str) -> None:
    """Expected: SEs from the 32 Bock-Lieberman patterns with their section-6 counts,
    integrated by a 101-point Gauss-Hermite rule written here (not the fit's 61-point grid),
    maximised by scipy BFGS, differentiated by statsmodels' approx_hess3 in the IRT
    parameterisation (a, b). Agreement to 1e-4 relative: the two quadratures give the same
    log-likelihood to ~1e-7 on these data, and approx_hess3 is accurate to ~1e-6."""
    numdiff = pytest.importorskip("statsmodels.tools.numdiff")
    with (shared_data / "lsat_bock_lieberman" / "bock_table_patterns.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    X = np.array([[float(r[f"Q{i}"]) for i in range(1, 6)] for r in rows])
    counts = np.array([float(r["Ob6"]) for r in rows])
    n = 5

    def unpack(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if model == "2PL":
            return x[:n], x[n:]
        if model == "1PL":
            return np.full(n, x[0]), x[1:]
        return np.ones(n), x

    def negll(x: np.ndarray) -> float:
        a, b = unpack(x)
        return -_pattern_loglik_gh101(X, counts, a, -a * b)

    x0 = {"2PL": np.r_[np.ones(n), -np.ones(n)], "1PL": np.r_[1.0, -np.ones(n)]}.get(
        model, -np.ones(n)
    )
    x = optimize.minimize(negll, x0, method="BFGS").x
    for _ in range(3):  # polish with Newton steps on the numerical derivatives
        hess = numdiff.approx_hess3(x, negll)
        x = x - np.linalg.solve(hess, numdiff.approx_fprime(x, negll, centered=True))
    assert np.abs(numdiff.approx_fprime(x, negll, centered=True)).max() < 1e-4
    se = np.sqrt(np.diag(np.linalg.inv(numdiff.approx_hess3(x, negll))))

    A = read_lsat6(shared_data)
    if model == "2PL":
        res = fit_2pl_mml(A, tol=1e-9)
        np.testing.assert_allclose(res.discrimination_se, se[:n], rtol=FD_RTOL)
    elif model == "1PL":
        res = fit_1pl_mml(A, tol=1e-9)
        np.testing.assert_allclose(res.discrimination_se, np.full(n, se[0]), rtol=FD_RTOL)
    else:
        res = fit_1pl_mml(A, discrimination=1.0, tol=1e-9)
    np.testing.assert_allclose(res.difficulty, unpack(x)[1], atol=1e-4)
    np.testing.assert_allclose(res.difficulty_se, se[-n:], rtol=FD_RTOL)


# ----------------------------------------------------------------------------- MML properties


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), two_pl=st.booleans())
@example(seed=182790, two_pl=False)  # L-BFGS-B stopped ABNORMAL at tol=1e-9
def test_mml_duplicating_persons_divides_se_by_sqrt2_and_relabelling_permutes(
    seed: int, two_pl: bool
) -> None:
    """Duplicating every person doubles the log-likelihood, so the estimates stay and the
    information doubles: every SE is divided by sqrt(2). Reordering questions reorders them."""
    A, _, _ = simulate(5, 400, seed)
    if np.any(np.nanmean(A, axis=1) % 1 == 0):  # a question solved by all or none
        return
    fit = fit_2pl_mml if two_pl else fit_1pl_mml
    res = fit(A, tol=1e-9)
    double = fit(np.concatenate([A, A], axis=1), tol=1e-9)
    perm = np.random.default_rng(seed).permutation(A.shape[0])
    permuted = fit(A[perm], tol=1e-9)
    for name in ("difficulty_se", "intercept_se", "slope_se"):
        se = getattr(res, name)
        np.testing.assert_allclose(getattr(double, name), se / np.sqrt(2), rtol=1e-4)
        np.testing.assert_allclose(getattr(permuted, name), se[perm], rtol=1e-4)


def test_mml_se_can_be_skipped_and_the_switch_is_validated() -> None:
    A, _, _ = simulate(5, 300, 3)
    res = fit_2pl_mml(A, standard_errors=False)
    assert res.se_status == "not_computed"
    for name in ("slope_se", "intercept_se", "discrimination_se", "difficulty_se"):
        se = getattr(res, name)
        assert se.shape == (5,)
        assert np.all(np.isnan(se))
    with pytest.raises(InvalidParameterError, match="standard_errors"):
        fit_1pl_mml(A, standard_errors="yes")  # type: ignore[arg-type]


def test_mml_information_not_positive_definite_gives_nan_and_a_flag() -> None:
    """Information that is not positive definite (a saddle) gives NaN, never an error."""
    a, d = np.array([1.0, 1.0]), np.array([0.0, 0.5])
    for fixed, shared, k in ((False, False, 4), (False, True, 3), (True, False, 2)):
        info = np.diag(np.r_[-1.0, np.ones(k - 1)])
        se_a, se_d, se_b, status = _mml_standard_errors(a, d, info, fixed, shared)
        assert status == "not_positive_definite"
        assert np.all(np.isnan(np.concatenate([se_a, se_d, se_b])))


# ----------------------------------------------------------------------------- JML


def naive_penalised_item_objective(
    y: np.ndarray, theta: np.ndarray, beta: float, alpha: float, l2: float
) -> float:
    """One question's part of the penalised JML objective, looped over its observed models."""
    total = 0.0
    for yj, tj in zip(y, theta, strict=True):
        if np.isnan(yj):
            continue
        z = alpha * (tj - beta)
        total += np.logaddexp(0.0, z) - yj * z
    return total + l2 * (beta**2 + (alpha - 1.0) ** 2)


def extreme_rows(A: np.ndarray) -> np.ndarray:
    """Questions solved by all or by none of the models that saw them."""
    mean = np.nanmean(A, axis=1)
    return np.asarray((mean == 0) | (mean == 1))


def jml_matrix(seed: int) -> np.ndarray:
    """30 questions x 25 models with missing entries, one question solved by all and one by
    none of the models that saw it."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=25)
    beta = rng.normal(size=30)
    alpha = rng.uniform(0.7, 1.8, 30)
    p = np.asarray(expit(alpha[:, None] * (theta - beta[:, None])), dtype=np.float64)
    A = (rng.random((30, 25)) < p).astype(np.float64)
    A[rng.random(A.shape) < 0.15] = np.nan
    A[0] = np.where(np.isnan(A[0]), np.nan, 1.0)
    A[1] = np.where(np.isnan(A[1]), np.nan, 0.0)
    return A


@pytest.mark.parametrize("l2", [0.01, 0.5])
def test_jml_1pl_se_match_finite_differences(l2: float) -> None:
    """Expected: 1 / sqrt of the second difference of the penalised objective in one
    difficulty with the abilities held at their estimates (the documented conditional SE);
    NaN for the questions solved by all / none; discrimination not estimated (NaN)."""
    A = jml_matrix(0)
    res = fit_1pl(A, l2=l2, tol=1e-9)
    assert res.se_status == "ok"
    extreme = extreme_rows(A)
    assert extreme[:2].all()
    np.testing.assert_array_equal(np.isnan(res.difficulty_se), extreme)
    assert np.isnan(res.discrimination_se).all()
    for i in np.flatnonzero(~extreme).tolist():

        def f(x: np.ndarray, i: int = i) -> float:
            return naive_penalised_item_objective(A[i], res.ability, x[0], 1.0, l2)

        H = central_hessian(f, np.array([res.difficulty[i]]), 1e-3)
        assert res.difficulty_se[i] == pytest.approx(1 / np.sqrt(H[0, 0]), rel=FD_RTOL)


def test_jml_2pl_se_match_finite_differences() -> None:
    """Expected: the inverse of the central-difference 2 x 2 Hessian of the penalised
    objective in (difficulty, discrimination) of each question, abilities held fixed."""
    A = jml_matrix(1)
    l2 = 0.01
    res = fit_2pl(A, l2=l2, tol=1e-9)
    extreme = extreme_rows(A)
    assert np.isnan(res.difficulty_se[extreme]).all()
    assert np.isnan(res.discrimination_se[extreme]).all()
    lo, hi = 0.1, 5.0
    checked = 0
    for i in np.flatnonzero(~extreme).tolist():
        if not lo < res.discrimination[i] < hi or not -5 < res.difficulty[i] < 5:
            continue  # at a bound: covered by the next test

        def f(x: np.ndarray, i: int = i) -> float:
            return naive_penalised_item_objective(A[i], res.ability, x[0], x[1], l2)

        H = central_hessian(f, np.array([res.difficulty[i], res.discrimination[i]]), 1e-3)
        se = np.sqrt(np.diag(np.linalg.inv(H)))
        np.testing.assert_allclose(
            [res.difficulty_se[i], res.discrimination_se[i]], se, rtol=FD_RTOL
        )
        checked += 1
    assert checked >= 20
    assert res.se_status == "ok"


def test_jml_parameters_at_a_bound_have_no_se() -> None:
    """A parameter at its box bound is not an interior maximum: its SE is NaN, and the
    other parameter of that question is conditional on it (1 / sqrt of its own curvature)."""
    A = jml_matrix(2)
    res = fit_2pl(A, discrimination_bounds=(0.5, 1.2), difficulty_bounds=(-1.0, 1.0))
    at_a = np.isclose(res.discrimination, 0.5) | np.isclose(res.discrimination, 1.2)
    at_b = np.isclose(np.abs(res.difficulty), 1.0)
    assert at_a[2:].any()
    assert at_b[2:].any()
    assert np.isnan(res.discrimination_se[at_a]).all()
    assert np.isnan(res.difficulty_se[at_b]).all()
    free = np.flatnonzero(at_a & ~at_b)
    free = free[free >= 2]
    assert free.size
    for i in free.tolist():

        def f(x: np.ndarray, i: int = i) -> float:
            return naive_penalised_item_objective(
                A[i], res.ability, x[0], res.discrimination[i], 0.01
            )

        H = central_hessian(f, np.array([res.difficulty[i]]), 1e-3)
        assert res.difficulty_se[i] == pytest.approx(1 / np.sqrt(H[0, 0]), rel=FD_RTOL)
    res1 = fit_1pl(A, difficulty_bounds=(-1.0, 1.0))
    assert np.isnan(res1.difficulty_se[np.isclose(np.abs(res1.difficulty), 1.0)]).all()


def test_jml_2pl_block_not_positive_definite_gives_nan_and_a_flag() -> None:
    """Away from a minimum the 2 x 2 block can be indefinite (the objective is not convex
    in (beta, alpha)): NaN and the flag, never an error. Here the residual term dominates:
    question 0 is solved by 3 of 4 models but evaluated at difficulty 3 (sum of residuals
    2.6, determinant about -9); question 1 sits at its optimum by symmetry."""
    theta = np.array([-2.0, -1.0, 1.0, 2.0])
    y = np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]])
    observed = np.ones_like(y, dtype=bool)
    se_b, se_a, status = _jml_2pl_se(
        theta, np.array([3.0, 0.0]), np.ones(2), y, observed, 0.0, (-5.0, 5.0), (0.1, 5.0)
    )
    assert status == "not_positive_definite"
    np.testing.assert_array_equal(np.isnan(se_b), [True, False])
    np.testing.assert_array_equal(np.isnan(se_a), [True, False])
