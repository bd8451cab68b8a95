"""Tests for ranking.irt (1PL/2PL by penalised JML and by marginal ML) and ranking.mirt.

Where the expected numbers come from is said in each test: published R ltm output
and curator-verified values for LSAT6/7 (tests/ranking/data/irt_lsat_ltm.json), the
shipped mirt fit of GSM8K (tests/ranking/data/irt_metabench_gsm8k.json), finite
differences, slow reference implementations written out below, or parameters
drawn from the model with a fixed seed.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import optimize, stats
from scipy.special import expit

from ranking import (
    ConvergenceError,
    DegenerateDataError,
    InvalidParameterError,
    ShapeError,
    fit_1pl,
    fit_1pl_mml,
    fit_2pl,
    fit_2pl_mml,
    fit_mirt,
    marginal_log_likelihood,
)
from ranking._irt_joint import _jml_2pl_value
from ranking.irt import (
    _collapse_patterns,
    _jml_1pl_objective,
    _jml_2pl_objective,
    _marginal,
    _quadrature_rule,
)
from ranking.mirt import _mirt_objective

DATA = Path(__file__).parent / "data"
LSAT = json.loads((DATA / "irt_lsat_ltm.json").read_text())
GSM8K = json.loads((DATA / "irt_metabench_gsm8k.json").read_text())

# ----------------------------------------------------------------------------- helpers


def simulate_2pl(
    n_questions: int,
    n_models: int,
    rng: np.random.Generator,
    *,
    missing: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Responses drawn from P = expit(alpha (theta - beta)); questions x models."""
    theta = rng.normal(size=n_models)
    beta = rng.normal(size=n_questions)
    alpha = rng.uniform(0.6, 2.0, size=n_questions)
    p = expit(alpha[:, None] * (theta[None, :] - beta[:, None]))
    A = (rng.random(p.shape) < p).astype(float)
    if missing:
        A[rng.random(A.shape) < missing] = np.nan
    return A, theta, beta, alpha


def naive_jml_objective(
    A: np.ndarray, theta: np.ndarray, beta: np.ndarray, alpha: np.ndarray, l2: float
) -> float:
    """Slow, obvious penalised 2PL negative log-likelihood: a loop over observed entries."""
    total = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if np.isnan(A[i, j]):
                continue
            p = 1.0 / (1.0 + np.exp(-alpha[i] * (theta[j] - beta[i])))
            total -= np.log(p) if A[i, j] == 1 else np.log(1.0 - p)
    pen = np.sum(theta**2) + np.sum(beta**2) + np.sum((alpha - 1.0) ** 2)
    return total + l2 * pen


def naive_marginal_loglik(
    A: np.ndarray, a: np.ndarray, d: np.ndarray, nodes: np.ndarray, weights: np.ndarray
) -> float:
    """Slow, obvious marginal log-likelihood: a loop over persons and nodes."""
    total = 0.0
    for j in range(A.shape[1]):
        lik = 0.0
        for t, w in zip(nodes, weights, strict=True):
            prod = 1.0
            for i in range(A.shape[0]):
                if np.isnan(A[i, j]):
                    continue
                p = 1.0 / (1.0 + np.exp(-(a[i] * t + d[i])))
                prod *= p if A[i, j] == 1 else 1.0 - p
            lik += w * prod
        total += np.log(lik)
    return total


def dense_1pl_fit(A: np.ndarray, l2: float) -> tuple[np.ndarray, np.ndarray]:
    """Reference 1PL JML: plain L-BFGS-B on the ungrouped objective, no preconditioning."""
    n_q, n_m = A.shape
    obs = ~np.isnan(A)
    y = np.where(obs, A, 0.0)

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        th, be = x[:n_m], x[n_m:]
        z = th[None, :] - be[:, None]
        r = np.where(obs, y - expit(z), 0.0)
        f = np.sum(np.where(obs, np.logaddexp(0, z) - y * z, 0.0))
        f += l2 * (th @ th + be @ be)
        g = np.concatenate([-r.sum(0) + 2 * l2 * th, r.sum(1) + 2 * l2 * be])
        return f, g

    res = optimize.minimize(
        fun,
        np.zeros(n_m + n_q),
        jac=True,
        method="L-BFGS-B",
        bounds=[(-5, 5)] * (n_m + n_q),
        options={"maxiter": 20000, "gtol": 1e-10, "ftol": 1e-15},
    )
    return res.x[:n_m], res.x[n_m:]


def read_csv_matrix(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """Header, first-column labels and float matrix of a CSV with a label column."""
    with path.open() as fh:
        rows = list(csv.reader(fh))
    header = rows[0][1:]
    labels = [r[0] for r in rows[1:]]
    values = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    return header, labels, values


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    return float(stats.spearmanr(x, y).statistic)


# ----------------------------------------------------------------------------- gradients


class TestAnalyticGradients:
    """Analytic gradients against finite differences (scipy.optimize.check_grad)."""

    def test_jml_2pl_gradient(self) -> None:
        """Expected: zero difference up to finite-difference error (with missing entries)."""
        rng = np.random.default_rng(0)
        A, *_ = simulate_2pl(15, 7, rng, missing=0.2)
        S = np.where(np.isnan(A), 0.0, 2 * np.nan_to_num(A) - 1)
        n_missing = int(np.isnan(A).sum())
        x = rng.normal(size=7 + 2 * 15)
        x[7 + 15 :] = rng.uniform(0.3, 2, 15)

        def f(v: np.ndarray) -> float:
            return _jml_2pl_objective(v, S, n_missing, 0.01, 7)[0]

        def g(v: np.ndarray) -> np.ndarray:
            return _jml_2pl_objective(v, S, n_missing, 0.01, 7)[1]

        err = optimize.check_grad(f, g, x, epsilon=1e-6)
        assert err < 1e-4 * max(1.0, np.linalg.norm(g(x)))

    def test_jml_2pl_objective_matches_naive_loop(self) -> None:
        """Expected: the slow loop in naive_jml_objective, to 1e-9 relative."""
        rng = np.random.default_rng(1)
        A, *_ = simulate_2pl(9, 6, rng, missing=0.25)
        S = np.where(np.isnan(A), 0.0, 2 * np.nan_to_num(A) - 1)
        theta, beta, alpha = rng.normal(size=6), rng.normal(size=9), rng.uniform(0.2, 3, 9)
        x = np.concatenate([theta, beta, alpha])
        got = _jml_2pl_objective(x, S, int(np.isnan(A).sum()), 0.05, 6)[0]
        want = naive_jml_objective(A, theta, beta, alpha, 0.05)
        np.testing.assert_allclose(got, want, rtol=1e-9)

    def test_jml_1pl_grouped_gradient(self) -> None:
        """Expected: zero difference up to finite-difference error on grouped questions."""
        rng = np.random.default_rng(2)
        n_g, n_m = 6, 5
        M = (rng.random((n_g, n_m)) < 0.8).astype(float)
        counts = rng.integers(1, 5, n_g).astype(float)
        Ysum = np.floor(rng.random((n_g, n_m)) * (counts[:, None] + 1)) * M
        scores = Ysum.sum(1) / counts
        x = rng.normal(size=n_m + n_g)

        def f(v: np.ndarray) -> float:
            return _jml_1pl_objective(v, Ysum, M, counts, scores, 0.01, n_m)[0]

        def g(v: np.ndarray) -> np.ndarray:
            return _jml_1pl_objective(v, Ysum, M, counts, scores, 0.01, n_m)[1]

        assert optimize.check_grad(f, g, x, epsilon=1e-6) < 1e-4 * max(1, np.linalg.norm(g(x)))

    @pytest.mark.parametrize("missing", [0.0, 0.2])
    def test_marginal_gradient(self, missing: float) -> None:
        """Expected: finite differences of the marginal log-likelihood (complete and
        missing-data code paths)."""
        rng = np.random.default_rng(3)
        A, *_ = simulate_2pl(8, 60, rng, missing=missing)
        obs = ~np.isnan(A)
        pat = _collapse_patterns(np.where(obs, A, 0.0), obs)
        nodes, logw, *_ = _quadrature_rule("grid", 31, 6.0)
        a, d = rng.uniform(0.5, 2, 8), rng.normal(size=8)

        def f(v: np.ndarray) -> float:
            return _marginal(v[:8], v[8:], pat, nodes, logw)[0]

        def g(v: np.ndarray) -> np.ndarray:
            _, ga, gd, _ = _marginal(v[:8], v[8:], pat, nodes, logw)
            return np.concatenate([ga, gd])

        x = np.concatenate([a, d])
        assert optimize.check_grad(f, g, x, epsilon=1e-6) < 1e-4 * max(1, np.linalg.norm(g(x)))

    def test_marginal_complete_path_equals_general_path(self) -> None:
        """Expected: the rank-2 shortcut for complete data gives the general formula's values."""
        rng = np.random.default_rng(4)
        A, *_ = simulate_2pl(10, 80, rng)
        obs = ~np.isnan(A)
        pat = _collapse_patterns(A, obs)
        general = type(pat)(pat.X, pat.M, pat.counts, pat.inverse, False, pat.x_counts)
        nodes, logw, *_ = _quadrature_rule("gauss-hermite", 21, 6.0)
        a, d = rng.uniform(0.5, 2, 10), rng.normal(size=10)
        fast = _marginal(a, d, pat, nodes, logw)
        slow = _marginal(a, d, general, nodes, logw)
        for u, v in zip(fast, slow, strict=True):
            np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-10)

    def test_mirt_gradient(self) -> None:
        """Expected: zero difference up to finite-difference error (with missing entries)."""
        rng = np.random.default_rng(5)
        n_q, n_m, dim = 12, 6, 3
        A = (rng.random((n_q, n_m)) < 0.5).astype(float)
        A[rng.random(A.shape) < 0.2] = np.nan
        S = np.where(np.isnan(A), 0.0, 2 * np.nan_to_num(A) - 1)
        x = rng.normal(size=n_m * dim + n_q * dim + n_q)

        def f(v: np.ndarray) -> float:
            return _mirt_objective(v, S, int(np.isnan(A).sum()), 0.5, n_m, dim)[0]

        def g(v: np.ndarray) -> np.ndarray:
            return _mirt_objective(v, S, int(np.isnan(A).sum()), 0.5, n_m, dim)[1]

        assert optimize.check_grad(f, g, x, epsilon=1e-6) < 1e-4 * max(1, np.linalg.norm(g(x)))


# ----------------------------------------------------------------------------- references


class TestReferenceImplementations:
    """Vectorised code against slow, obvious implementations kept in this file."""

    def test_marginal_log_likelihood_matches_naive_loop(self) -> None:
        """Expected: naive_marginal_loglik (loops over persons, nodes and items)."""
        rng = np.random.default_rng(6)
        A, *_ = simulate_2pl(5, 40, rng, missing=0.15)
        a, d = rng.uniform(0.5, 2, 5), rng.normal(size=5)
        nodes, logw, *_ = _quadrature_rule("grid", 21, 5.0)
        want = naive_marginal_loglik(A, a, d, nodes, np.exp(logw))
        got = marginal_log_likelihood(A, a, d, quadrature="grid", n_quadrature=21, grid_limit=5.0)
        np.testing.assert_allclose(got, want, rtol=1e-10)

    @pytest.mark.parametrize("missing", [0.0, 0.1])
    def test_fit_1pl_equals_ungrouped_lbfgsb(self, missing: float) -> None:
        """Expected: dense_1pl_fit (plain L-BFGS-B, no grouping, no preconditioning);
        the penalised 1PL objective is strictly convex, so both find the same point."""
        rng = np.random.default_rng(7)
        A, *_ = simulate_2pl(40, 8, rng, missing=missing)
        A = A[~np.all(np.isnan(A), axis=1)]
        res = fit_1pl(A, tol=1e-9)
        theta, beta = dense_1pl_fit(A, 0.01)
        np.testing.assert_allclose(res.ability, theta, atol=1e-4)
        np.testing.assert_allclose(res.difficulty, beta, atol=1e-4)

    def test_fit_2pl_reaches_the_plain_lbfgsb_optimum(self) -> None:
        """Expected: plain L-BFGS-B from the same start on the same objective (no Newton
        warm start, no preconditioning). fit_2pl must reach an objective at least as low
        and the same estimates on this small, well-conditioned problem."""
        rng = np.random.default_rng(8)
        A, *_ = simulate_2pl(60, 25, rng)
        res = fit_2pl(A)
        S = 2 * A - 1
        n_q, n_m = A.shape
        y = A

        def logit(k: np.ndarray, n: float) -> np.ndarray:
            return np.log((k + 0.5) / (n - k + 0.5))

        th0 = np.clip(logit(y.sum(0), n_q), -5, 5)
        th0 = th0 - th0.mean()
        x0 = np.concatenate([th0, np.clip(-logit(y.sum(1), n_m), -5, 5), np.ones(n_q)])
        ref = optimize.minimize(
            lambda v: _jml_2pl_objective(v, S, 0, 0.01, n_m),
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=[(-5, 5)] * (n_m + n_q) + [(0.1, 5)] * n_q,
            options={"maxiter": 50000, "gtol": 1e-10, "ftol": 1e-15},
        )
        assert res.objective <= ref.fun + 1e-6
        np.testing.assert_allclose(res.ability, ref.x[:n_m], atol=2e-3)
        np.testing.assert_allclose(res.difficulty, ref.x[n_m : n_m + n_q], atol=2e-2)
        naive = naive_jml_objective(A, res.ability, res.difficulty, res.discrimination, 0.01)
        np.testing.assert_allclose(res.objective, naive, rtol=1e-9)


# ----------------------------------------------------------------------------- recovery


class TestRecovery:
    """Recovery of known parameters from data drawn from the model (fixed seeds)."""

    def test_jml_2pl_recovers_parameters(self) -> None:
        """Truth: theta ~ N(0,1), beta ~ N(0,1), alpha ~ U(0.6, 2); 150 models x 400
        questions. Tolerances: correlations 0.97 / 0.95 / 0.6 (alpha is estimated from
        150 responses per question; JML is biased outwards, so no RMSE bound on it)."""
        rng = np.random.default_rng(10)
        A, theta, beta, alpha = simulate_2pl(400, 150, rng)
        res = fit_2pl(A)
        assert np.corrcoef(res.ability, theta)[0, 1] > 0.97
        assert np.corrcoef(res.difficulty, beta)[0, 1] > 0.95
        assert np.corrcoef(res.discrimination, alpha)[0, 1] > 0.6
        assert res.model == "2PL"
        assert res.iterations >= res.newton_iterations

    def test_jml_1pl_recovers_parameters_with_missing_entries(self) -> None:
        """Truth: Rasch data (alpha = 1), 100 models x 300 questions, 30% not administered.
        Tolerances: correlation 0.97 for abilities (about 210 responses each), 0.94 for
        difficulties (about 70 responses each, s.e. ~0.27 against an s.d. of 1, so the
        expected correlation is ~0.965), RMSE 0.35 after aligning the location."""
        rng = np.random.default_rng(11)
        theta, beta = rng.normal(size=100), rng.normal(size=300)
        A = (rng.random((300, 100)) < expit(theta[None, :] - beta[:, None])).astype(float)
        A[rng.random(A.shape) < 0.3] = np.nan
        res = fit_1pl(A)
        assert np.corrcoef(res.ability, theta)[0, 1] > 0.97
        assert np.corrcoef(res.difficulty, beta)[0, 1] > 0.94
        shift = res.ability.mean() - theta.mean()
        assert np.sqrt(np.mean((res.difficulty - shift - beta) ** 2)) < 0.35

    def test_mml_2pl_recovers_item_parameters(self) -> None:
        """Truth: a ~ U(0.7, 2), d ~ N(0,1), theta ~ N(0,1); 20 items x 4000 persons.
        Tolerances: RMSE 0.1 for a and d (standard errors here are about 0.04-0.07);
        EAP correlation with theta above 0.9 and mean posterior SD in (0.2, 0.6)."""
        rng = np.random.default_rng(12)
        a, d, theta = rng.uniform(0.7, 2, 20), rng.normal(size=20), rng.normal(size=4000)
        A = (rng.random((20, 4000)) < expit(np.outer(a, theta) + d[:, None])).astype(float)
        res = fit_2pl_mml(A)
        assert np.sqrt(np.mean((res.slope - a) ** 2)) < 0.1
        assert np.sqrt(np.mean((res.intercept - d) ** 2)) < 0.1
        np.testing.assert_allclose(res.difficulty, -res.intercept / res.slope)
        np.testing.assert_array_equal(res.discrimination, res.slope)
        assert np.corrcoef(res.ability, theta)[0, 1] > 0.9
        assert 0.2 < res.ability_se.mean() < 0.6

    def test_mml_2pl_with_missing_entries(self) -> None:
        """Truth as above with 25% missing; tolerance RMSE 0.15 (fewer responses)."""
        rng = np.random.default_rng(13)
        a, d, theta = rng.uniform(0.7, 2, 15), rng.normal(size=15), rng.normal(size=4000)
        A = (rng.random((15, 4000)) < expit(np.outer(a, theta) + d[:, None])).astype(float)
        A[rng.random(A.shape) < 0.25] = np.nan
        res = fit_2pl_mml(A)
        assert np.sqrt(np.mean((res.slope - a) ** 2)) < 0.15
        assert np.sqrt(np.mean((res.intercept - d) ** 2)) < 0.15

    def test_mirt_recovers_the_ability_space_and_difficulty(self) -> None:
        """Truth: 3-D abilities N(0, I), non-negative loadings with column scales
        (1.5, 0.8, 0.5), intercepts N(0,1); 80 models x 1500 questions. The fitted axes
        are an affine map of the true ones, so each true ability dimension is regressed on
        the fitted ones (R above 0.9), and MDIFF is compared by correlation (above 0.8)."""
        rng = np.random.default_rng(14)
        theta = rng.normal(size=(80, 3))
        L = np.abs(rng.normal(size=(1500, 3))) * np.array([1.5, 0.8, 0.5])
        d = rng.normal(size=1500)
        A = (rng.random((1500, 80)) < expit(L @ theta.T + d[:, None])).astype(float)
        res = fit_mirt(A, dimensions=3)
        X = np.column_stack([res.ability, np.ones(80)])
        coef, *_ = np.linalg.lstsq(X, theta, rcond=None)
        for k in range(3):
            assert np.corrcoef(X @ coef[:, k], theta[:, k])[0, 1] > 0.9
        mdiff = -d / np.linalg.norm(L, axis=1)
        assert np.corrcoef(res.difficulty, mdiff)[0, 1] > 0.8
        # canonical form: centred, whitened, loadings' principal axes in decreasing order
        np.testing.assert_allclose(res.ability.mean(0), 0, atol=1e-10)
        np.testing.assert_allclose(
            np.cov(res.ability, rowvar=False, bias=True), np.eye(3), atol=1e-8
        )
        # axis 0 along the mean loading; the others orthogonal to it, principal axes
        mean = res.loadings.mean(0)
        np.testing.assert_allclose(mean[1:], 0, atol=1e-8 * np.abs(mean).max())
        assert mean[0] > 0
        gram = res.loadings[:, 1:].T @ res.loadings[:, 1:]
        np.testing.assert_allclose(gram[0, 1], 0, atol=1e-6 * gram.max())
        assert res.loading_variance[1] >= res.loading_variance[2]
        z = res.loadings @ res.ability.T + res.intercept[:, None]
        ll = np.sum(A * z - np.logaddexp(0, z))
        np.testing.assert_allclose(res.log_likelihood, ll, rtol=1e-10)

    def test_mirt_rotation_invariance_of_the_fit(self) -> None:
        """Expected: rotating the fitted solution leaves the probabilities unchanged, and
        MDIFF equals -d/||a|| computed from the returned loadings."""
        rng = np.random.default_rng(15)
        A, *_ = simulate_2pl(300, 20, rng)
        res = fit_mirt(A, dimensions=2)
        q, _ = np.linalg.qr(rng.normal(size=(2, 2)))
        z1 = res.loadings @ res.ability.T
        z2 = (res.loadings @ q) @ (res.ability @ q).T
        np.testing.assert_allclose(z1, z2, atol=1e-10)
        np.testing.assert_allclose(
            res.difficulty, -res.intercept / np.linalg.norm(res.loadings, axis=1)
        )


# ----------------------------------------------------------------------------- published


@pytest.mark.shared_data
@pytest.mark.parametrize("case", LSAT["cases"], ids=[c["name"] for c in LSAT["cases"]])
@pytest.mark.parametrize(("quadrature", "n_nodes"), [("grid", 61), ("gauss-hermite", 21)])
def test_lsat_matches_ltm(
    shared_data: Path, case: dict[str, Any], quadrature: str, n_nodes: int
) -> None:
    """Expected: R ltm estimates for LSAT6 (published 2PL output; Rasch lines verified by
    lme4 and a 401-point grid) and curator-computed LSAT7 values, copied from
    ../shared/data/lsat_bock_lieberman/SOURCE.md into irt_lsat_ltm.json, at the
    tolerances stored there (logLik and 1PL b to 3 decimals)."""
    _, _, persons_x_items = read_csv_matrix_no_label(
        shared_data / "lsat_bock_lieberman" / case["file"]
    )
    A = persons_x_items.T  # rows are items (questions), columns are persons
    kw = {"quadrature": quadrature, "n_quadrature": n_nodes}
    if case["model"] == "2PL":
        res = fit_2pl_mml(A, tol=1e-8, **kw)
    else:
        res = fit_1pl_mml(A, discrimination=case["discrimination"], tol=1e-8, **kw)
    assert abs(res.log_likelihood - case["loglik"]) <= case["tol_loglik"]
    np.testing.assert_allclose(res.difficulty, case["b"], atol=case["tol_b"])
    if "a" in case:
        np.testing.assert_allclose(res.discrimination, case["a"], atol=case["tol_a"])


def read_csv_matrix_no_label(path: Path) -> tuple[list[str], None, np.ndarray]:
    with path.open() as fh:
        rows = list(csv.reader(fh))
    return rows[0], None, np.array([[float(v) for v in r] for r in rows[1:]])


@pytest.mark.shared_data
@pytest.mark.slow
def test_gsm8k_2pl_mml_reaches_the_mirt_log_likelihood(shared_data: Path) -> None:
    """Expected (irt_metabench_gsm8k.json, from metabench SOURCE.md): the shipped mirt
    item parameters give logLik -409894.4 on mirt's grid (61 points on [-6, 6], normal
    weights) to 0.1, and -412012.5 with 61-point Gauss-Hermite; a fresh 2PL MML fit on
    the same grid reaches at least -409894.4."""
    folder = shared_data
    items, _, models_x_items = read_csv_matrix(folder / GSM8K["responses"])
    A = models_x_items.T
    with (folder / GSM8K["item_params"]).open() as fh:
        par = {r["item"]: r for r in csv.DictReader(fh)}
    a = np.array([float(par[i]["a1"]) for i in items])
    d = np.array([float(par[i]["d"]) for i in items])
    grid = {
        "quadrature": GSM8K["quadrature"],
        "n_quadrature": GSM8K["n_quadrature"],
        "grid_limit": GSM8K["grid_limit"],
    }
    ll_mirt = marginal_log_likelihood(A, a, d, **grid)
    assert abs(ll_mirt - GSM8K["mirt_loglik"]) <= GSM8K["tol_loglik"]
    ll_gh = marginal_log_likelihood(A, a, d, quadrature="gauss-hermite", n_quadrature=61)
    assert abs(ll_gh - GSM8K["mirt_loglik_gauss_hermite_61"]) <= GSM8K["tol_loglik"]
    res = fit_2pl_mml(A, **grid)
    print(f"GSM8K 2PL MML: ours {res.log_likelihood:.2f}, mirt {ll_mirt:.2f}")
    assert res.log_likelihood >= GSM8K["mirt_loglik"]
    assert res.ability.shape == (5041,)
    assert res.slope.shape == (249,)
    assert np.corrcoef(res.slope, a)[0, 1] > 0.99


@pytest.mark.shared_data
@pytest.mark.slow
def test_chembench_fits_and_ability_accuracy_correlation(shared_data: Path) -> None:
    """Real ChemBench matrix (2,854 questions x 22 models, complete). No published IRT
    fit exists (SOURCE.md), so the check is a sanity one: accuracy from
    model_score_allcorrect.csv; Spearman(ability, accuracy) must be 1 for the 1PL JML
    (ability is monotone in the number correct on a complete matrix), and for the 1PL MML
    EAP (same reason), above 0.7 for the 2PL JML (0.80 observed: with 22 models many
    discriminations sit at the bound 5 and the same optimum is reached from three
    different starts) and above 0.8 for the general MIRT axis (0.87 observed). 2PL MML
    with 22 persons does not converge (diverging slopes) and must raise. Values are
    printed."""
    folder = shared_data / "chembench_llm_binary"
    models, _, A = read_csv_matrix(folder / "binary_matrix.csv")
    with (folder / "model_score_allcorrect.csv").open() as fh:
        score = {r[0]: float(r[1]) for r in list(csv.reader(fh))[1:]}
    acc = np.array([score[m] for m in models])
    np.testing.assert_allclose(A.mean(axis=0), acc, atol=1e-4)
    rho: dict[str, float] = {}
    r1 = fit_1pl(A)
    rho["1PL JML"] = spearman(r1.ability, acc)
    r2 = fit_2pl(A)
    rho["2PL JML"] = spearman(r2.ability, acc)
    rm = fit_mirt(A)
    rho["MIRT-3 JML (general axis)"] = spearman(rm.ability[:, 0], acc)
    rho["MIRT-3 JML (norm, paper)"] = spearman(np.linalg.norm(rm.ability, axis=1), acc)
    informative = (A.sum(axis=1) > 0) & (A.sum(axis=1) < A.shape[1])
    with pytest.raises(DegenerateDataError, match="answered correctly by all or by none"):
        fit_2pl_mml(A)
    # 22 persons cannot pin 2 parameters per question: slopes of questions whose answers
    # are separated along the ability order grow without bound, and the fit says so
    with pytest.raises(ConvergenceError, match="did not converge"):
        fit_2pl_mml(A[informative], max_iter=100)
    r1mml = fit_1pl_mml(A[informative])
    rho["1PL MML (EAP)"] = spearman(r1mml.ability, acc)
    print("ChemBench Spearman(ability, accuracy):", {k: round(v, 4) for k, v in rho.items()})
    assert rho["1PL JML"] == pytest.approx(1.0)
    assert rho["1PL MML (EAP)"] == pytest.approx(1.0)
    assert rho["2PL JML"] > 0.7
    assert rho["MIRT-3 JML (general axis)"] > 0.8
    # the 134 questions no model solves are the hardest under every JML fit
    unsolved = A.sum(axis=1) == 0
    assert unsolved.sum() == 134
    assert r1.difficulty[unsolved].min() >= r1.difficulty[~unsolved].max() - 1e-9
    assert np.all(np.isfinite(r2.difficulty))
    assert np.all(np.abs(r2.difficulty) <= 5)


# ----------------------------------------------------------------------------- degenerate


class TestDegenerateInputs:
    """Degenerate data: clear errors, or the documented handling."""

    def test_jml_extreme_questions_stay_finite_and_extreme(self) -> None:
        """Documented: all-correct / all-wrong questions have infinite unpenalised
        difficulty; the penalty and bounds keep them finite, at the ends of the ranking."""
        rng = np.random.default_rng(20)
        A, *_ = simulate_2pl(30, 10, rng)
        A[0] = 1.0
        A[1] = 0.0
        for fit in (fit_1pl, fit_2pl):
            res = fit(A)
            assert np.all(np.isfinite(res.difficulty))
            assert res.difficulty.min() >= -5
            assert res.difficulty.max() <= 5
        # 1PL: the ordering is by number correct, so they sit at the two ends
        res = fit_1pl(A)
        assert res.difficulty[0] == res.difficulty.min()
        assert res.difficulty[1] == res.difficulty.max()

    def test_jml_model_with_all_correct_is_finite_and_strongest(self) -> None:
        rng = np.random.default_rng(21)
        A, *_ = simulate_2pl(30, 10, rng)
        A[:, 3] = 1.0
        res = fit_1pl(A)
        assert np.argmax(res.ability) == 3
        assert res.ability[3] <= 5

    def test_mml_rejects_items_solved_by_all_or_none(self) -> None:
        A = np.array([[1, 1, 1, 1], [0, 1, 0, 1], [1, 0, 0, 1], [0, 0, 1, 1]], float)
        with pytest.raises(DegenerateDataError, match="row 0, correct for all"):
            fit_2pl_mml(A)
        with pytest.raises(DegenerateDataError, match="infinite"):
            fit_1pl_mml(A, discrimination=1.0)

    @pytest.mark.parametrize("fit", [fit_1pl, fit_2pl, fit_mirt, fit_1pl_mml, fit_2pl_mml])
    def test_one_model_is_an_error(self, fit: Any) -> None:
        with pytest.raises(DegenerateDataError, match="column"):
            fit(np.array([[1.0], [0.0], [1.0], [0.0], [1.0]]))

    @pytest.mark.parametrize("fit", [fit_1pl, fit_2pl, fit_mirt, fit_1pl_mml, fit_2pl_mml])
    def test_empty_is_a_shape_error(self, fit: Any) -> None:
        with pytest.raises(ShapeError, match="empty"):
            fit(np.zeros((0, 5)))

    @pytest.mark.parametrize("fit", [fit_1pl, fit_2pl, fit_mirt])
    def test_all_nan_row_is_an_error(self, fit: Any) -> None:
        A = np.array([[1, 0, 1, 1, 0], [np.nan] * 5, [0, 1, 1, 0, 0], [1, 1, 0, 0, 1]], float)
        with pytest.raises(DegenerateDataError, match="row 1"):
            fit(A)

    def test_too_few_models_for_the_dimensions(self) -> None:
        with pytest.raises(DegenerateDataError, match="at least 5"):
            fit_mirt(np.eye(6)[:, :4], dimensions=3)


class TestSettingsValidation:
    @pytest.mark.parametrize(
        "kwargs",
        [
            {"l2": -1.0},
            {"l2": float("nan")},
            {"tol": 0.0},
            {"max_iter": 0},
            {"max_iter": 2.5},
            {"ability_bounds": (5.0, -5.0)},
            {"difficulty_bounds": (0.0,)},
        ],
    )
    def test_jml_bad_settings(self, kwargs: dict[str, Any]) -> None:
        A = np.array([[1, 0], [0, 1], [1, 1]], float)
        with pytest.raises(InvalidParameterError):
            fit_1pl(A, **kwargs)

    def test_2pl_discrimination_bounds_must_be_positive(self) -> None:
        with pytest.raises(InvalidParameterError, match="positive"):
            fit_2pl(np.array([[1, 0], [0, 1]], float), discrimination_bounds=(0.0, 5.0))

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"quadrature": "simpson"},
            {"n_quadrature": 1},
            {"grid_limit": 0.0},
            {"discrimination": -1.0},
        ],
    )
    def test_mml_bad_settings(self, kwargs: dict[str, Any]) -> None:
        A = np.array([[1, 0, 1], [0, 1, 1], [1, 0, 0]], float)
        with pytest.raises(InvalidParameterError):
            fit_1pl_mml(A, **kwargs)

    @pytest.mark.parametrize("dimensions", [0, -1, 1.5, True])
    def test_mirt_bad_dimensions(self, dimensions: Any) -> None:
        with pytest.raises(InvalidParameterError, match="dimensions"):
            fit_mirt(np.eye(6), dimensions=dimensions)

    def test_marginal_log_likelihood_parameter_shapes(self) -> None:
        A = np.array([[1, 0, 1], [0, 1, 1]], float)
        with pytest.raises(ShapeError, match="slope"):
            marginal_log_likelihood(A, [1.0], [0.0, 0.0])
        with pytest.raises(InvalidParameterError, match="intercept"):
            marginal_log_likelihood(A, [1.0, 1.0], [0.0, np.inf])


class TestConvergenceError:
    """A fit that stops at max_iter raises ConvergenceError with the iteration count."""

    @pytest.mark.parametrize("fit", [fit_1pl, fit_2pl, fit_2pl_mml, fit_mirt])
    def test_iteration_limit_raises(self, fit: Any) -> None:
        rng = np.random.default_rng(30)
        A, *_ = simulate_2pl(40, 200 if fit is fit_2pl_mml else 12, rng)
        with pytest.raises(ConvergenceError, match="did not converge") as info:
            fit(A, max_iter=1)
        assert info.value.iterations >= 1
        assert info.value.tol > 0


# ----------------------------------------------------------------------------- properties


def binary_matrices(min_rows: int = 3, min_cols: int = 3) -> st.SearchStrategy[np.ndarray]:
    """Well-formed response matrices for JML: any 0/1 matrix (extreme rows and columns
    included, which the penalty and bounds handle)."""
    shape = st.tuples(st.integers(min_rows, 8), st.integers(min_cols, 7))
    arrays = shape.flatmap(lambda s: hnp.arrays(np.int8, s, elements=st.integers(0, 1)))
    return arrays.map(lambda a: a.astype(float))


@st.composite
def malformed_matrices(draw: st.DrawFn) -> tuple[np.ndarray, type[Exception]]:
    """Malformed responses and the error they must raise."""
    kind = draw(st.sampled_from(["value", "inf", "ndim1", "ndim3"]))
    if kind == "ndim1":
        return np.zeros(draw(st.integers(1, 5))), ShapeError
    if kind == "ndim3":
        return np.zeros((2, 2, 2)), ShapeError
    A = draw(hnp.arrays(np.float64, (4, 4), elements=st.sampled_from([0.0, 1.0])))
    i, j = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    bad = draw(st.sampled_from([2.0, -1.0, 0.5])) if kind == "value" else np.inf
    A[i, j] = bad
    return A, InvalidParameterError


@settings(max_examples=25, deadline=None)
@given(case=malformed_matrices())
def test_malformed_input_raises(case: tuple[np.ndarray, type[Exception]]) -> None:
    A, error = case
    for fit in (fit_1pl, fit_2pl, fit_2pl_mml, fit_mirt):
        with pytest.raises(error):
            fit(A)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(A=binary_matrices(), seed=st.integers(0, 2**16))
def test_jml_is_equivariant_under_relabelling(A: np.ndarray, seed: int) -> None:
    """Permuting questions and models permutes the 1PL estimates the same way (strictly
    convex objective, unique optimum). The 2PL objective is not convex: symmetric data can
    have mirror-image optima, and sparse data local optima that relabelling can lead the
    fit to (hypothesis found a 6 x 6 matrix with two correct answers: objective 3.3194 vs
    3.0705 after relabelling). So for the 2PL the objective itself must be equivariant:
    each fit's estimates, relabelled, give its objective on the other labelling."""
    rng = np.random.default_rng(seed)
    rows, cols = rng.permutation(A.shape[0]), rng.permutation(A.shape[1])
    base = fit_1pl(A)
    perm = fit_1pl(A[rows][:, cols])
    np.testing.assert_allclose(perm.ability, base.ability[cols], atol=1e-4)
    np.testing.assert_allclose(perm.difficulty, base.difficulty[rows], atol=1e-4)
    assert perm.objective == pytest.approx(base.objective, rel=1e-9, abs=1e-7)
    # standard errors follow their questions; NaN (not estimated) in the same places
    np.testing.assert_allclose(perm.difficulty_se, base.difficulty_se[rows], atol=1e-4)
    base2 = fit_2pl(A)
    perm2 = fit_2pl(A[rows][:, cols])
    back_r, back_c = np.argsort(rows), np.argsort(cols)

    def value(M: np.ndarray, theta: np.ndarray, b: np.ndarray, a: np.ndarray) -> float:
        observed = ~np.isnan(M)
        S = np.where(observed, 2.0 * np.nan_to_num(M) - 1.0, 0.0)
        x = np.concatenate([theta, b, a])
        return _jml_2pl_value(x, S, int((~observed).sum()), 0.01, M.shape[1])

    relabelled = value(
        A[rows][:, cols], base2.ability[cols], base2.difficulty[rows], base2.discrimination[rows]
    )
    assert relabelled == pytest.approx(base2.objective, rel=1e-9, abs=1e-9)
    back = value(A, perm2.ability[back_c], perm2.difficulty[back_r], perm2.discrimination[back_r])
    assert back == pytest.approx(perm2.objective, rel=1e-9, abs=1e-9)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16))
def test_mml_duplicating_every_person_doubles_the_log_likelihood(seed: int) -> None:
    """Pattern collapsing: two copies of every person leave the item estimates unchanged
    and double the marginal log-likelihood; persons are relabelled consistently."""
    rng = np.random.default_rng(seed)
    A, *_ = simulate_2pl(5, 150, rng)
    if np.any(A.sum(1) == 0) or np.any(A.sum(1) == A.shape[1]):
        return
    one = fit_2pl_mml(A, tol=1e-9)
    two = fit_2pl_mml(np.concatenate([A, A], axis=1), tol=1e-9)
    np.testing.assert_allclose(two.slope, one.slope, atol=1e-4)
    np.testing.assert_allclose(two.intercept, one.intercept, atol=1e-4)
    np.testing.assert_allclose(two.log_likelihood, 2 * one.log_likelihood, rtol=1e-9)
    np.testing.assert_allclose(two.ability[:150], one.ability, atol=1e-4)
    perm = rng.permutation(150)
    three = fit_2pl_mml(A[:, perm], tol=1e-9)
    np.testing.assert_allclose(three.ability, one.ability[perm], atol=1e-6)


def test_missing_entries_are_dropped_from_the_likelihood() -> None:
    """A model that was not given a question is the same as that entry not existing:
    NaN entries contribute nothing (checked against the naive loop, which skips them)."""
    rng = np.random.default_rng(40)
    A, *_ = simulate_2pl(20, 8, rng, missing=0.3)
    res = fit_2pl(A)
    naive = naive_jml_objective(A, res.ability, res.difficulty, res.discrimination, 0.01)
    np.testing.assert_allclose(res.objective, naive, rtol=1e-9)
    z = res.discrimination[:, None] * (res.ability[None, :] - res.difficulty[:, None])
    ll = np.nansum(A * z - np.where(np.isnan(A), np.nan, np.logaddexp(0, z)))
    np.testing.assert_allclose(res.log_likelihood, ll, rtol=1e-10)


def test_results_record_settings() -> None:
    rng = np.random.default_rng(41)
    A, *_ = simulate_2pl(30, 10, rng)
    r = fit_2pl(A, l2=0.1, discrimination_bounds=(0.2, 4.0))
    assert (r.l2, r.discrimination_bounds, r.max_iter, r.tol) == (0.1, (0.2, 4.0), 1000, 1e-6)
    A = A[(A.sum(axis=1) > 0) & (A.sum(axis=1) < A.shape[1])]
    m = fit_1pl_mml(A, discrimination=1.0, quadrature="gauss-hermite", n_quadrature=21)
    assert (m.model, m.fixed_discrimination, m.quadrature, m.n_quadrature) == (
        "1PL",
        1.0,
        "gauss-hermite",
        21,
    )
    np.testing.assert_array_equal(m.slope, np.ones(A.shape[0]))
