"""Ranks from adjusted pairwise tests (ranking.ranks_from_pairwise_tests, issue 10).

References: the raw p-values are recomputed here from the normal distribution, and their
Holm and Benjamini-Hochberg adjustments come from statsmodels' ``multipletests`` (an
independent implementation); the error rates are checked by simulation, with tolerances
of three binomial standard errors of the simulated rate.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

from ranking.arena import stable_arena
from ranking.errors import InvalidParameterError, ShapeError
from ranking.pairwise import ELO_C, ranks_from_pairwise_tests

ALPHA = 0.05


def _random_covariance(rng: np.random.Generator, n: int) -> np.ndarray:
    """A covariance like that of centred ratings: correlated, rank n - 1."""
    x = rng.normal(size=(n, 3 * n))
    v = x @ x.T / (3 * n) * 400.0
    c = np.eye(n) - 1.0 / n
    return c @ v @ c


@pytest.mark.parametrize("method", ["holm", "bh", "none"])
def test_p_values_match_statsmodels(method):
    """Adjusted p-values equal statsmodels' multipletests on p = 2 Phi(-|z|), z computed
    here from the full covariance; ranks follow from them by their definition."""
    rng = np.random.default_rng(3)
    n = 9
    v = _random_covariance(rng, n)
    r = 1000 + rng.normal(0, 25, n)
    res = ranks_from_pairwise_tests(r, v, alpha=ALPHA, method=method)
    iu, ju = np.triu_indices(n, 1)
    z = (r[iu] - r[ju]) / np.sqrt(v[iu, iu] + v[ju, ju] - 2 * v[iu, ju])
    raw = 2 * norm.sf(np.abs(z))
    ref = {"holm": "holm", "bh": "fdr_bh"}
    expected = raw if method == "none" else multipletests(raw, method=ref[method])[1]
    np.testing.assert_allclose(res.p_values[iu, ju], expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(res.p_values[ju, iu], expected, rtol=1e-12, atol=1e-15)
    better = np.zeros((n, n), bool)
    for i in range(n):
        for j in range(n):
            better[i, j] = i != j and r[i] > r[j] and res.p_values[i, j] <= ALPHA
    np.testing.assert_array_equal(res.better, better)
    np.testing.assert_array_equal(res.ranks, 1 + better.sum(axis=0))
    np.testing.assert_array_equal(res.lowest_ranks, n - better.sum(axis=1))
    assert np.all(res.ranks <= res.lowest_ranks)


def test_closed_form_three_models():
    """30 Elo points apart with independent standard errors 10: z = 30 / sqrt(200) = 2.121
    for neighbours (p = 0.0339), z = 4.243 for the ends (p = 2.2e-5); Holm multiplies the
    smallest by 3 and the next by 2, so only the ends are ordered."""
    res = ranks_from_pairwise_tests([1030.0, 1000.0, 970.0], np.eye(3) * 100.0)
    p_end = 2 * norm.sf(60 / np.sqrt(200))
    p_next = 2 * norm.sf(30 / np.sqrt(200))
    assert res.p_values[0, 2] == pytest.approx(3 * p_end)
    assert res.p_values[0, 1] == pytest.approx(2 * p_next)
    assert res.ranks.tolist() == [1, 1, 2]
    assert res.lowest_ranks.tolist() == [2, 3, 3]
    assert res.n_separated == 1
    unadjusted = ranks_from_pairwise_tests(
        [1030.0, 1000.0, 970.0], np.eye(3) * 100.0, method="none"
    )
    assert unadjusted.ranks.tolist() == [1, 2, 3]


def test_covariance_matters():
    """Two ratings with se 10 each but correlation 0.9 differ by 15 points: the difference
    has sd sqrt(200 - 180) = 4.47, z = 3.35, so they are ordered, although their
    marginal 95% intervals (+-19.6) overlap."""
    v = np.array([[100.0, 90.0], [90.0, 100.0]])
    res = ranks_from_pairwise_tests([1015.0, 1000.0], v)
    assert res.p_values[0, 1] == pytest.approx(2 * norm.sf(15 / np.sqrt(20)))
    assert res.ranks.tolist() == [1, 2]


def test_validation():
    with pytest.raises(ShapeError):
        ranks_from_pairwise_tests([1.0, 2.0], np.eye(3))
    with pytest.raises(InvalidParameterError, match="finite"):
        ranks_from_pairwise_tests([1.0, np.nan], np.eye(2))
    with pytest.raises(InvalidParameterError, match="method"):
        ranks_from_pairwise_tests([1.0, 2.0], np.eye(2), method="bonf")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="alpha"):
        ranks_from_pairwise_tests([1.0, 2.0], np.eye(2), alpha=0.0)


def _false_claims(better: np.ndarray, truth: np.ndarray) -> int:
    """Claims 'i above j' whose true ratings are not in that order (ties count as false)."""
    return int((better & (truth[:, None] <= truth[None, :])).sum())


@pytest.mark.parametrize("truth_kind", ["all_equal", "tied_groups"])
def test_error_rates_by_simulation_gaussian(truth_kind):
    """Estimates drawn from N(truth, V) with a correlated V (rank n - 1, as centred
    ratings). Holm: the chance of any false ordering (FWER) is at most 0.05; BH: the mean
    share of false orderings among the orderings made (FDR) is at most 0.05. 4,000
    studies: tolerance 3 binomial standard errors, 3 sqrt(0.05 * 0.95 / 4000) = 0.0103.
    BH must also order more pairs than Holm when many pairs differ (its point)."""
    rng = np.random.default_rng(11)
    n, reps = 10, 4000
    v = _random_covariance(rng, n)
    sd = float(np.sqrt(np.mean(np.diag(v))))
    if truth_kind == "all_equal":
        truth = np.full(n, 1000.0)
    else:  # five tied pairs, neighbouring pairs 2.5 sd apart
        truth = 1000.0 + 2.5 * sd * np.repeat(np.arange(5), 2)
    draws = rng.multivariate_normal(truth, v, size=reps)
    fwer_events, fdp, n_holm, n_bh = 0, [], 0, 0
    for est in draws:
        holm = ranks_from_pairwise_tests(est, v, method="holm")
        bh = ranks_from_pairwise_tests(est, v, method="bh")
        fwer_events += _false_claims(holm.better, truth) > 0
        made = bh.n_separated
        fdp.append(_false_claims(bh.better, truth) / made if made else 0.0)
        n_holm += holm.n_separated
        n_bh += made
    tol = 3 * np.sqrt(ALPHA * (1 - ALPHA) / reps)
    assert fwer_events / reps <= ALPHA + tol
    assert float(np.mean(fdp)) <= ALPHA + tol
    if truth_kind == "tied_groups":
        assert n_bh > n_holm


@pytest.mark.slow
def test_error_rates_by_simulation_am_elo_bootstrap():
    """End to end, as ``annotate rate`` ranks (am-ELO with the bootstrap over annotators):
    8 models in four tied pairs 60 Elo points apart, 30 annotators of equal discrimination
    with 60 votes each, no ties. The ranks use the covariance of the bootstrap replicates.
    The share of false orderings (BH, the default) and the chance of any (Holm) stay at
    most 0.05 within three binomial standard errors of 120 studies,
    3 sqrt(0.05 * 0.95 / 120) = 0.060. (The Wald covariance is too small at 60 votes
    per annotator, see ``benchmarks/bench_coverage.py``: Holm's FWER from it was about
    0.10 there, 0.057 at 200 votes, which is why ``rate`` ranks from the bootstrap.)"""
    rng = np.random.default_rng(2026)
    n, m, votes, reps = 8, 30, 60, 120
    truth = 1000.0 + 60.0 * (np.repeat(np.arange(4), 2) - 1.5)
    fdp, holm_any, made_bh, made_holm = [], 0, 0, 0
    for i in range(reps):
        k = np.repeat(np.arange(m), votes)
        a = rng.integers(0, n, k.size)
        b = (a + rng.integers(1, n, k.size)) % n
        w = (rng.random(k.size) < expit(ELO_C * (truth[a] - truth[b]))).astype(float)
        res = stable_arena(
            a, b, k, w, n_models=n, delta=0, epsilon=0.0, intervals="bootstrap", n_boot=50, rng=i
        )
        assert res.rank_correction == "bh"
        assert res.rank_tests is not None
        assert res.rating_covariance is not None
        made = res.rank_tests.n_separated
        fdp.append(_false_claims(res.rank_tests.better, truth) / made if made else 0.0)
        holm = ranks_from_pairwise_tests(res.ratings, res.rating_covariance, method="holm")
        holm_any += _false_claims(holm.better, truth) > 0
        made_bh += made
        made_holm += holm.n_separated
    tol = 3 * np.sqrt(ALPHA * (1 - ALPHA) / reps)
    assert float(np.mean(fdp)) <= ALPHA + tol
    assert holm_any / reps <= ALPHA + tol
    assert made_bh >= made_holm > 0


@pytest.mark.shared_data
def test_llmfao_rank_rule_separates_more_pairs(shared_data):
    """LLMFAO crowd votes (SOURCE.md: 59 models, 124 workers), ``stable_arena`` with Wald
    covariances (observed information). The former rule (Bonferroni-simultaneous 95%
    intervals that do not overlap) orders 360 of 1,711 pairs and leaves 37 models at rank
    1; BH across pairs orders 884 with 6 at rank 1; Holm 441; unadjusted tests 956. Holm
    orders all but 2 of the pairs the simultaneous intervals order (negatively correlated
    ratings: the difference test is not always the stronger). With the expected
    information, when the rule was changed (issue 10): 380, 37, 903, 6, 464, 974, and Holm
    ordered every pair the intervals order."""
    from tests.ranking.test_pairwise import llmfao

    d = llmfao(shared_data)
    res = stable_arena(d["a"], d["b"], d["k"], d["w"])
    assert res.rank_tests is not None
    assert res.rating_covariance is not None
    n = res.ratings.size
    se = np.sqrt(np.diag(res.rating_covariance))
    z = norm.ppf(1 - 0.05 / (2 * n))
    lo, up = res.ratings - z * se, res.ratings + z * se
    simultaneous = lo[:, None] > up[None, :]
    holm = ranks_from_pairwise_tests(res.ratings, res.rating_covariance, method="holm")
    none = ranks_from_pairwise_tests(res.ratings, res.rating_covariance, method="none")
    assert int(simultaneous.sum()) == 360
    assert int((simultaneous.sum(axis=0) == 0).sum()) == 37
    assert res.rank_tests.n_separated == 884
    assert int((res.ranks == 1).sum()) == 6
    assert holm.n_separated == 441
    assert none.n_separated == 956
    assert int((simultaneous & ~holm.better).sum()) == 2


def test_m_elo_covariance_matches_statsmodels_logit():
    """The covariance behind the rank tests, checked against an independent fit: m-ELO on
    decisive votes is logistic regression on +1/-1 model indicators, so statsmodels' Logit
    (model 0 as the reference level) gives the covariance of the log-strengths; centred
    (T V T' with T = (I - J/n) applied to (0, beta)) and divided by C**2 it is the
    covariance of the ratings."""
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(5)
    n, t = 6, 600
    truth = rng.normal(0, 0.8, n)
    a = rng.integers(0, n, t)
    b = (a + rng.integers(1, n, t)) % n
    w = (rng.random(t) < expit(truth[a] - truth[b])).astype(float)
    x = np.zeros((t, n))
    x[np.arange(t), a] = 1.0
    x[np.arange(t), b] = -1.0
    ref = sm.Logit(w, x[:, 1:]).fit(disp=0, tol=1e-12, maxiter=100)
    embed = np.vstack([np.zeros(n - 1), np.eye(n - 1)])
    centre = np.eye(n) - 1.0 / n
    tmat = centre @ embed
    expected = tmat @ np.asarray(ref.cov_params()) @ tmat.T / ELO_C**2
    from ranking.pairwise import m_elo

    fit = m_elo(a, b, w, n_models=n)
    assert fit.rating_covariance is not None
    np.testing.assert_allclose(fit.rating_covariance, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.rating_covariance)), fit.standard_errors)


def test_am_elo_covariance_with_one_annotator_is_m_elo():
    """With one annotator eq. 7 fixes its discrimination at 1, so am-ELO is m-ELO and its
    rating covariance (under both constraints) must equal m-ELO's, which the statsmodels
    test above checks; the diagonal is the square of the reported standard errors."""
    from ranking.pairwise import am_elo, m_elo

    rng = np.random.default_rng(8)
    n, t = 5, 500
    truth = rng.normal(0, 0.8, n)
    a = rng.integers(0, n, t)
    b = (a + rng.integers(1, n, t)) % n
    w = (rng.random(t) < expit(truth[a] - truth[b])).astype(float)
    am = am_elo(a, b, np.zeros(t, dtype=int), w, n_models=n)
    me = m_elo(a, b, w, n_models=n)
    assert am.rating_covariance is not None
    assert me.rating_covariance is not None
    np.testing.assert_allclose(am.rating_covariance, me.rating_covariance, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.diag(am.rating_covariance), am.rating_standard_errors**2)
