"""ranking.adaptive: the weighted Bradley-Terry fit against statsmodels, the choice rules
in closed form, and (by simulation) that adaptive collection gives unbiased ratings with
fewer votes than the standard schedule for the same interval width."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from ranking.adaptive import (
    OnlineBradleyTerry,
    expected_information_gain,
    expected_variance_reduction,
    selection_probabilities,
    settled_items,
    simulate_collection,
    weighted_bradley_terry,
)
from ranking.errors import InvalidParameterError
from ranking.pairwise import ELO_C, m_elo


def _votes(seed: int, n: int = 5, size: int = 400) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    s = np.linspace(-1, 1, n)
    y = (rng.random(size) < 1 / (1 + np.exp(-(s[a] - s[b])))).astype(float)
    w = rng.uniform(0.2, 3.0, size)
    return a, b, y, w


def _design(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    x = np.zeros((a.size, n))
    x[np.arange(a.size), a] += 1.0
    x[np.arange(a.size), b] -= 1.0
    return x[:, :-1]  # the last item is the reference (log-strength 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weighted_fit_matches_statsmodels_glm(seed: int) -> None:
    """Reference: statsmodels' binomial GLM on the pairwise design (x = e_a - e_b).

    var_weights with the HC0 covariance is the inverse-propensity-weighted estimating
    equation with its sandwich covariance; freq_weights gives the model covariance.
    Contrasts against the last item are compared (invariant to the centring).
    """
    n = 5
    a, b, y, w = _votes(seed, n)
    x = _design(a, b, n)
    contrast = np.eye(n)[:-1] - np.eye(n)[-1]
    ours = weighted_bradley_terry(a, b, y, weights=w)
    ref = sm.GLM(y, x, family=sm.families.Binomial(), var_weights=w).fit(cov_type="HC0", tol=1e-12)
    beta = np.append(ref.params, 0.0)
    np.testing.assert_allclose(ours.log_strengths, beta - beta.mean(), atol=1e-8)
    cov = contrast @ (ours.covariance * ELO_C**2) @ contrast.T
    np.testing.assert_allclose(cov, ref.cov_params(), atol=1e-9)
    model = weighted_bradley_terry(a, b, y, weights=w, covariance="model")
    ref_f = sm.GLM(y, x, family=sm.families.Binomial(), freq_weights=w).fit(tol=1e-12)
    cov_m = contrast @ (model.covariance * ELO_C**2) @ contrast.T
    np.testing.assert_allclose(cov_m, ref_f.cov_params(), rtol=1e-7)


def test_unit_weights_are_m_elo() -> None:
    a, b, y, _ = _votes(3)
    ours = weighted_bradley_terry(a, b, y, covariance="model")
    ref = m_elo(a, b, y)
    np.testing.assert_allclose(ours.ratings, ref.ratings, atol=1e-8)
    np.testing.assert_allclose(ours.covariance, ref.rating_covariance, atol=1e-8)


def test_prior_fit_is_the_penalised_glm_optimum() -> None:
    """With a prior: the gradient of the penalised log-likelihood vanishes at the fit
    (closed-form optimality condition), and the online fit reaches the same point."""
    a, b, y, _ = _votes(4, n=6, size=60)
    fit = weighted_bradley_terry(a, b, y, n_items=6, prior_sd=300.0, covariance="model")
    s = fit.log_strengths
    p = 1 / (1 + np.exp(-(s[a] - s[b])))
    r = y - p
    grad = np.bincount(a, r, 6) - np.bincount(b, r, 6) - s / (ELO_C * 300.0) ** 2
    np.testing.assert_allclose(grad, 0.0, atol=1e-8)
    items = {(int(i), int(j)) for i, j in zip(a, b, strict=True)}
    keys = sorted(items)
    online = OnlineBradleyTerry([k[0] for k in keys], [k[1] for k in keys], 6, prior_sd=300.0)
    for i, j, out in zip(a, b, y, strict=True):
        online.add(keys.index((int(i), int(j))), float(out))
    for _ in range(10):
        online.refit()
    np.testing.assert_allclose(online.strength, s, atol=1e-7)
    np.testing.assert_allclose(online.variance, np.diag(fit.covariance) * ELO_C**2, rtol=1e-7)


def test_choice_rules_in_closed_form() -> None:
    d = np.array([0.0, 1.5, -3.0])
    v = np.array([0.4, 1.0, 2.0])
    p = 1 / (1 + np.exp(-d))
    info = p * (1 - p)
    # Gaussian entropy falls by 0.5 ln(v / v_post) with v_post = 1 / (1 / v + I)
    np.testing.assert_allclose(
        expected_information_gain(d, v), 0.5 * np.log(v / (1 / (1 / v + info)))
    )
    va, vb = np.array([0.1, 0.5, 0.9]), np.array([0.3, 0.2, 0.05])
    want = (va - 1 / (1 / va + info)) + (vb - 1 / (1 / vb + info))
    np.testing.assert_allclose(expected_variance_reduction(d, va, vb), want)
    only_a = expected_variance_reduction(d, va, vb, wide_a=[True] * 3, wide_b=[False] * 3)
    np.testing.assert_allclose(only_a, va - 1 / (1 / va + info))
    probs = selection_probabilities([0.3, 0.1, 0.9, 0.2, 0.0], exploration=0.25, top=2)
    assert probs.sum() == pytest.approx(1.0)
    assert probs.min() == pytest.approx(0.25 / 5)
    assert probs[2] == probs[0] == pytest.approx(0.75 / 2 + 0.05)
    with pytest.raises(InvalidParameterError):
        selection_probabilities([0.1], exploration=1.5)
    # settled: by width with a target, by a decided outcome without one
    assert settled_items([0.0], [1.0], [10.0], [10.0], target_width=20).tolist() == [True]
    assert settled_items([0.0], [1.0], [10.0], [30.0], target_width=20).tolist() == [False]
    assert settled_items([3.0], [0.25], [99.0], [99.0], target_width=0).tolist() == [True]


def _arena(rng: np.random.Generator, n: int, sd: float) -> tuple[np.ndarray, ...]:
    r = rng.normal(0.0, sd, n)
    a, b = np.triu_indices(n, 1)
    return r, a.astype(np.int64), b.astype(np.int64)


def test_adaptive_collection_is_unbiased_and_needs_fewer_votes() -> None:
    """Simulation (small, bounded): 8 models with ratings of sd 250 Elo points, collection
    until every 95% interval is at most 250 points wide, 24 studies per schedule.

    The ratings of the adaptive runs (the Bradley-Terry fit, whose likelihood the
    adaptive design leaves unchanged, and the inverse-propensity-weighted fit) are
    unbiased: the mean error of every model over the studies, divided by its Monte-Carlo
    standard error (estimated from the same 24 studies, so Student's t with 23 degrees of
    freedom under no bias), is within the two-sided t quantile that 16 tests (8 models x 2
    fits) pass together with probability 0.99 without bias (Bonferroni: 3.96); and
    adaptive collection needs fewer votes on average (the benchmark, bench_adaptive.py,
    measures by how much at full size, with 40 studies per kind).
    """
    n, target, studies = 8, 250.0, 24
    votes = {"uniform": [], "adaptive": []}
    errors: dict[str, list[np.ndarray]] = {"fit": [], "ipw": []}
    for k in range(studies):
        truth, a, b = _arena(np.random.default_rng(k), n, 250.0)
        centred = truth - truth.mean()
        for policy in ("uniform", "adaptive"):
            run = simulate_collection(
                truth,
                a,
                b,
                policy=policy,
                target_width=target,
                rng=np.random.default_rng(10_000 + k),
                max_votes=5000,
            )
            assert run.reached
            votes[policy].append(run.votes)
            if policy == "adaptive":
                assert run.ipw_ratings is not None
                errors["fit"].append(run.ratings - centred)
                errors["ipw"].append(run.ipw_ratings - centred)
                assert np.all(run.probability > 0)
                assert np.all(run.probability <= 1)
    assert np.mean(votes["adaptive"]) < 0.9 * np.mean(votes["uniform"]), votes
    limit = stats.t.ppf(1 - 0.01 / (2 * 2 * n), df=studies - 1)
    assert 3.95 < limit < 3.96
    for name, errs in errors.items():
        e = np.array(errs)
        se = e.std(axis=0, ddof=1) / np.sqrt(studies)
        z = np.abs(e.mean(axis=0)) / se
        assert np.all(z < limit), (name, e.mean(axis=0), se)
