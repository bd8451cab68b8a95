"""Tests for ranking.arena: the Stable Arena loop (Algorithm 3) and its thresholds.

Expected values come from the rules themselves recomputed independently
(scipy fits in the tests), Monte Carlo null annotators, exact equivalences
(an all-tie annotator has ability 0, so leaving it out changes nothing), and
the LLMFAO crowd votes (../shared/data/llmfao_pairwise_crowd).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit

from ranking.arena import (
    ANNOTATOR_STATUSES,
    dynamic_delta,
    null_ability_threshold,
    stable_arena,
)
from ranking.errors import DegenerateDataError, InvalidParameterError
from ranking.pairwise import am_elo, m_elo
from ranking.simulation import perturb_outcomes, simulate_arena
from tests.ranking.test_pairwise import llmfao


@pytest.fixture(scope="module")
def sim():
    return simulate_arena(n_models=10, n_annotators=16, records_per_annotator=100, rng=7)


def test_statuses_and_reasons(sim):
    """Two flipped annotators are flagged, one with 5 votes is pending, one without votes is
    pending, the rest are reliable."""
    keep = ~((sim.annotator == 3) & (np.cumsum(sim.annotator == 3) > 5))
    a, b, k = sim.model_a[keep], sim.model_b[keep], sim.annotator[keep]
    w = perturb_outcomes(sim.outcome[keep], k, [0, 1], strategy="flip")
    res = stable_arena(a, b, k, w, n_annotators=17)
    assert set(res.status) <= set(ANNOTATOR_STATUSES)
    assert res.status[0] == res.status[1] == "flagged"
    assert res.status[3] == "pending"
    assert res.reasons[3].startswith(f"5 vote(s) <= delta = {res.delta}")
    assert res.status[16] == "pending"
    assert res.reasons[16] == "no votes yet"
    assert all(s == "reliable" for s in res.status[4:16])
    assert np.isnan(res.abilities[3])
    assert np.isnan(res.abilities[16])
    assert np.all(res.abilities[:2] < 0)
    assert "warned, kept in the ratings" in res.reasons[0]
    assert res.iterations == 1
    assert res.annotators_with("flagged").tolist() == [0, 1]
    assert len(res.reasons) == len(res.status) == 17


def test_fixed_delta_and_epsilon_are_the_papers(sim):
    """delta and epsilon as fixed numbers: pending iff n <= delta, flagged iff theta <= epsilon."""
    res = stable_arena(sim.model_a, sim.model_b, sim.annotator, sim.outcome, delta=95, epsilon=0.05)
    counts = np.bincount(sim.annotator)
    st = np.asarray(res.status)
    np.testing.assert_array_equal(st == "pending", counts <= 95)
    fitted = counts > 95
    np.testing.assert_array_equal(st[fitted] == "flagged", res.abilities[fitted] <= 0.05)
    assert res.delta_rule == "fixed"
    assert res.epsilon_rule == "fixed"
    np.testing.assert_allclose(res.epsilon[fitted], 0.05)


def test_all_tie_annotator_is_flagged_and_changes_nothing(sim):
    """Expected: an all-tie annotator has ability exactly 0, so the ratings equal am-ELO
    without it."""
    w = perturb_outcomes(sim.outcome, sim.annotator, [2], strategy="equal")
    res = stable_arena(sim.model_a, sim.model_b, sim.annotator, w, delta=10, epsilon=0.0)
    assert res.status[2] == "flagged"
    assert res.abilities[2] == 0.0
    assert "all" in res.reasons[2]
    assert "ties" in res.reasons[2]
    keep = sim.annotator != 2
    k = np.searchsorted(np.flatnonzero(np.bincount(sim.annotator[keep])), sim.annotator[keep])
    ref = am_elo(
        sim.model_a[keep],
        sim.model_b[keep],
        k,
        w[keep],
        ability_prior_sd=2.0,
        rating_prior_sd=1000.0,
    )
    np.testing.assert_allclose(res.ratings, ref.ratings, atol=1e-6)


def test_exclude_refits_without_flagged(sim):
    """action="exclude": the final ratings are am-ELO on the annotators left in the ratings."""
    w = perturb_outcomes(sim.outcome, sim.annotator, [0, 5, 9], strategy="flip")
    res = stable_arena(sim.model_a, sim.model_b, sim.annotator, w, action="exclude")
    assert res.iterations >= 2
    assert {0, 5, 9} <= set(res.annotators_with("flagged").tolist())
    for j in res.annotators_with("flagged"):
        assert res.reasons[j].endswith("excluded from the ratings")
        assert not res.in_ratings[j]
    used = res.in_ratings[sim.annotator]
    ids = np.flatnonzero(res.in_ratings)
    ref = am_elo(
        sim.model_a[used],
        sim.model_b[used],
        np.searchsorted(ids, sim.annotator[used]),
        w[used],
        ability_prior_sd=2.0,
        rating_prior_sd=1000.0,
    )
    np.testing.assert_allclose(res.ratings, ref.ratings, atol=1e-6)
    warn = stable_arena(sim.model_a, sim.model_b, sim.annotator, w, action="warn")
    assert not np.allclose(warn.ratings, res.ratings)


def test_dynamic_delta_rule_recomputed_independently(sim):
    """Expected: delta = ceil(1 / (se_bound^2 * mean(eta^2 p (1 - p)))) with eta = g x, where
    x and g (the median positive discrimination) come from am-ELO over the annotators with at
    least the median vote count; and, without annotators, g = 1 and x from m-ELO."""
    a, b, k, w = sim.model_a, sim.model_b, sim.annotator, sim.outcome
    counts = np.bincount(k)
    big = np.flatnonzero(counts >= np.median(counts))
    sel = np.isin(k, big)
    fit = am_elo(a[sel], b[sel], np.searchsorted(big, k[sel]), w[sel], n_models=sim.n_models)
    s = fit.log_strengths
    g = np.median(fit.discriminations[fit.discriminations > 0])
    eta = g * (s[a] - s[b])
    p = expit(eta)
    expected = math.ceil(1 / (0.5**2 * np.mean(eta**2 * p * (1 - p))))
    assert dynamic_delta(a, b, w, annotator=k) == expected
    assert stable_arena(a, b, k, w).delta == expected
    s = m_elo(a, b, w).log_strengths
    x = s[a] - s[b]
    p = expit(x)
    assert dynamic_delta(a, b, w, se_bound=0.3) == math.ceil(
        1 / (0.3**2 * np.mean(x**2 * p * (1 - p)))
    )


def test_null_threshold_matches_monte_carlo_null(sim):
    """Expected: the 95% quantile of the 1-D MLE ability of permuted (random) votes, by Monte
    Carlo with 2,000 permutations, within 15% of the asymptotic threshold."""
    s = m_elo(sim.model_a, sim.model_b, sim.outcome).log_strengths
    sel = sim.annotator == 4
    x = (s[sim.model_a] - s[sim.model_b])[sel]
    w = sim.outcome[sel]
    thr = null_ability_threshold(x, w, np.zeros(x.size, dtype=int), n_annotators=1, quantile=0.95)[
        0
    ]
    rng = np.random.default_rng(0)
    draws = []
    for _ in range(2000):
        wp = rng.permutation(w)
        t = 0.0
        for _ in range(25):  # Newton for the 1-D logistic MLE
            p = expit(t * x)
            t += np.sum(x * (wp - p)) / np.sum(x * x * p * (1 - p))
        draws.append(t)
    assert np.quantile(draws, 0.95) == pytest.approx(thr, rel=0.15)


def test_unbounded_annotator_gets_a_finite_ability():
    """An annotator whose decisive votes all agree with the ranking (no tie) has no finite
    MLE; the prior on abilities keeps it finite (issue 10: it no longer stays pending
    forever), and 8 votes are not yet enough for a verdict at level 0.05."""
    sim = simulate_arena(n_models=6, n_annotators=8, records_per_annotator=80, rng=3)
    s = m_elo(sim.model_a, sim.model_b, sim.outcome).ratings
    a = np.concatenate([sim.model_a, [0, 1, 2, 3, 4, 0, 1, 2]])
    b = np.concatenate([sim.model_b, [1, 2, 3, 4, 5, 2, 3, 4]])
    w = np.concatenate(
        [sim.outcome, (s[[0, 1, 2, 3, 4, 0, 1, 2]] > s[[1, 2, 3, 4, 5, 2, 3, 4]]).astype(float)]
    )
    k = np.concatenate([sim.annotator, np.full(8, 8)])
    res = stable_arena(a, b, k, w, delta=5)
    assert np.isfinite(res.abilities[8])
    assert res.abilities[8] > 0
    assert np.isfinite(res.ability_standard_errors[8])
    assert res.status[8] in ("pending", "reliable")
    if res.status[8] == "pending":
        assert res.votes_to_verdict[8] is not None
        assert res.votes_to_verdict[8] >= 1


def test_options_validated(sim):
    args = (sim.model_a, sim.model_b, sim.annotator, sim.outcome)
    with pytest.raises(InvalidParameterError, match="action"):
        stable_arena(*args, action="drop")
    with pytest.raises(InvalidParameterError, match="delta"):
        stable_arena(*args, delta=-1)
    with pytest.raises(InvalidParameterError, match="null_quantile"):
        stable_arena(*args, null_quantile=1.0)
    with pytest.raises(DegenerateDataError, match="no annotator can be fitted"):
        stable_arena(*args, delta=10_000)


@pytest.mark.shared_data
def test_llmfao_stable_arena(shared_data, capsys):
    """The whole pipeline on the LLMFAO crowd votes: 124 workers as annotators, winner
    left/right/tie as 1/0/0.5. Prints the flagged workers and the ranking. Expected: every
    worker gets a status, pending workers have at most delta votes or an undecided test and
    a votes-to-verdict estimate, delta is below the median vote count, GPT 4 ranks first
    (SOURCE.md: top of the BT ranking)."""
    d = llmfao(shared_data)
    res = stable_arena(d["a"], d["b"], d["k"], d["w"], action="exclude")
    st = np.asarray(res.status)
    counts = np.bincount(d["k"], minlength=124)
    assert st.size == 124
    pend = st == "pending"
    # pending: too few votes, or fitted but not yet distinguishable from a random voter
    assert np.all((counts[pend] <= res.delta) | np.isfinite(res.abilities[pend]))
    assert all(res.votes_to_verdict[j] is not None for j in np.flatnonzero(pend))
    assert res.delta < np.median(counts[counts > 0])
    with capsys.disabled():
        print(
            f"\nLLMFAO Stable Arena (delta = {res.delta}, dynamic epsilon, exclude): "
            f"{(st == 'reliable').sum()} reliable, {(st == 'flagged').sum()} flagged, "
            f"{(st == 'pending').sum()} pending, {res.iterations} fits"
        )
        for j in res.annotators_with("flagged"):
            print(f"  flagged worker {d['workers'][j]}: {res.reasons[j]}")
        order = np.argsort(-res.ratings)
        for i in order[:10]:
            print(f"  rank {res.ranks[i]:2d}  {d['names'][i]:32s} {res.ratings[i]:7.1f}")
    assert d["names"][int(order[0])] == "GPT 4"
    assert (st == "flagged").sum() >= 1


@pytest.mark.parametrize("n", [6, 1500])
def test_identifies_matches_components_on_every_battle(n: int) -> None:
    """Expected: ranking.graph.connected_components on every battle (scipy's components
    of the full multigraph): identified exactly when every item is in component 0. The
    small n counts the pairs, n = 1500 (pair space above the count limit) sorts them."""
    from ranking.arena import _identifies
    from ranking.graph import connected_components

    rng = np.random.default_rng(n)
    for size in [0, 1, n // 2, n, 2 * n, 20 * n]:
        for _ in range(5):
            a = rng.integers(0, n, size)
            b = rng.integers(0, n, size)
            expected = size > 0 and bool((connected_components(a, b, n) == 0).all())
            assert _identifies(a, b, n) == expected
    chain = np.arange(n - 1)
    assert _identifies(np.repeat(chain, 3), np.repeat(chain + 1, 3), n)
    assert not _identifies(chain[1:], chain[1:] + 1, n)
