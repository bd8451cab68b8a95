"""ranking.arena_analyses: the am-ELO paper's analyses, each against an independent computation.

AUC and log-loss are checked against scikit-learn (roc_auc_score, log_loss), MSE and Table 1
by hand, the held-out folds by refitting one fold independently, the shuffled Elo against
ranking.pairwise.elo run on each permutation, and the descent against the Fisher-scoring
maximum likelihood of ranking.pairwise.am_elo.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import expit
from sklearn.metrics import log_loss, roc_auc_score

from ranking import arena_analyses as aa
from ranking.pairwise import ELO_C, am_elo, elo, m_elo
from ranking.simulation import simulate_arena


def _arena(seed: int = 3, n_annotators: int = 12, records: int = 80):
    return simulate_arena(
        n_models=8, n_annotators=n_annotators, records_per_annotator=records, rng=seed
    )


def test_roc_auc_equals_sklearn_with_ties() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    s = np.round(rng.random(300) + 0.3 * y, 1)  # rounded: many tied scores
    assert aa.roc_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert math.isnan(aa.roc_auc([1, 1], [0.2, 0.3]))  # one class: undefined


def test_squared_error_by_hand() -> None:
    # (1 - .8)^2 + (0 - .4)^2 + (.5 - .5)^2 = .04 + .16 + 0 = .2, mean .2 / 3
    assert aa.squared_error([1, 0, 0.5], [0.8, 0.4, 0.5]) == pytest.approx(0.2 / 3, abs=1e-15)


def test_vote_log_loss_equals_sklearn_with_ties_as_half_weights() -> None:
    rng = np.random.default_rng(1)
    w = rng.choice([0.0, 0.5, 1.0], 200)
    p = rng.uniform(0.05, 0.95, 200)
    # a tie is half a win and half a loss: two samples of weight 1/2
    y = np.concatenate([np.ones(200), np.zeros(200)])
    sw = np.concatenate([w, 1 - w])
    ref = log_loss(y, np.concatenate([p, p]), sample_weight=sw, normalize=False)
    assert aa.vote_log_loss(w, p).sum() == pytest.approx(ref, rel=1e-12)


def test_annotator_filter_and_table1_by_hand() -> None:
    # annotator 0: 3 votes, 1: 1 vote, 2: 2 votes; keep >= 2
    k = np.array([0, 0, 0, 1, 2, 2])
    keep = aa.annotator_filter(k, 2)
    assert keep.tolist() == [True, True, True, False, True, True]
    a = np.array([0, 1, 2, 0, 3, 0])
    b = np.array([1, 2, 0, 3, 1, 1])
    s = aa.battle_statistics(a[keep], b[keep], k[keep])
    # kept votes: (0,1) (1,2) (2,0) (3,1) (0,1): 4 models, 2 annotators, 5 records,
    # pairs {01, 12, 02, 13} = 4 observed of C(4,2) = 6
    assert (s.annotators, s.models, s.records, s.pairs_observed) == (2, 4, 5, 4)
    assert s.per_annotator == 2.5
    assert s.per_model == 5 / 4
    assert s.per_pair == 5 / 6
    assert s.per_observed_pair == 5 / 4


def test_table1_paper_ratios() -> None:
    """The paper's Table 1 ratios follow from its counts: 4321/42 = 102.88, 4321/20 = 216.05,
    4321/190 = 22.74 (records per model = records / models, per pair = / C(20, 2))."""
    rng = np.random.default_rng(2)
    pairs = list(itertools.combinations(range(20), 2))
    idx = np.concatenate([np.arange(190), rng.integers(0, 190, 4321 - 190)])
    a = np.array([pairs[i][0] for i in idx])
    b = np.array([pairs[i][1] for i in idx])
    k = np.concatenate([np.arange(42), rng.integers(0, 42, 4321 - 42)])
    s = aa.battle_statistics(a, b, k)
    assert (round(s.per_annotator, 2), round(s.per_model, 2), round(s.per_pair, 2)) == (
        102.88,
        216.05,
        22.74,
    )


def test_heldout_fold_equals_an_independent_refit() -> None:
    sim = _arena()
    res = aa.heldout_prediction(
        sim.model_a, sim.model_b, sim.annotator, sim.outcome, folds=4, seed=5, elo_shuffles=3
    )
    n = sim.outcome.size
    fold_of = np.empty(n, dtype=np.int64)
    fold_of[np.random.default_rng(5).permutation(n)] = np.arange(n) % 4
    assert np.bincount(fold_of).tolist() == res.n_test.tolist()  # every model / annotator seen
    te = fold_of == 2
    tr = ~te
    w = sim.outcome
    # m-ELO: refit on the training folds, predict by eq. 1, score by hand and by sklearn
    r = m_elo(sim.model_a[tr], sim.model_b[tr], w[tr], n_models=8).ratings
    p = 1 / (1 + 10 ** ((r[sim.model_b[te]] - r[sim.model_a[te]]) / 400))
    assert res.mse[1, 2] == pytest.approx(np.mean((w[te] - p) ** 2), abs=1e-10)
    dec = w[te] != 0.5
    assert res.auc[1, 2] == pytest.approx(roc_auc_score(w[te][dec] == 1, p[dec]), abs=1e-10)
    # am-ELO: eq. 4 with the voting annotator's discrimination
    fit = am_elo(sim.model_a[tr], sim.model_b[tr], sim.annotator[tr], w[tr], n_models=8)
    ka, kb, kk = sim.model_a[te], sim.model_b[te], sim.annotator[te]
    p2 = expit(fit.discriminations[kk] * ELO_C * (fit.ratings[ka] - fit.ratings[kb]))
    assert res.mse[2, 2] == pytest.approx(np.mean((w[te] - p2) ** 2), abs=1e-10)
    assert res.auc[2, 2] == pytest.approx(roc_auc_score(w[te][dec] == 1, p2[dec]), abs=1e-10)
    summ = res.summary()
    assert summ["m-elo"]["mse_mean"] == pytest.approx(res.mse[1].mean())
    assert summ["m-elo"]["mse_sd"] == pytest.approx(res.mse[1].std(ddof=1))


def test_heldout_am_elo_wins_when_annotators_differ_in_ability() -> None:
    """Decision rule by simulation: with heterogeneous annotators (log-discrimination sd 1)
    am-ELO predicts held-out votes better than m-ELO, as in the paper's Table 2."""
    sim = simulate_arena(
        n_models=10, n_annotators=30, records_per_annotator=120, discrimination_sd=1.0, rng=11
    )
    res = aa.heldout_prediction(
        sim.model_a, sim.model_b, sim.annotator, sim.outcome, folds=5, seed=0, elo_shuffles=5
    )
    s = res.summary()
    assert s["am-elo"]["mse_mean"] < s["m-elo"]["mse_mean"]
    assert s["am-elo"]["auc_mean"] > s["m-elo"]["auc_mean"]


def test_heldout_counts_unseen_votes() -> None:
    # annotator 2 votes once: in the fold holding that vote it has no training vote
    a = np.array([0, 1, 0, 1, 0, 1, 0, 1, 2])
    b = np.array([1, 2, 2, 0, 2, 2, 1, 0, 0])
    k = np.array([0, 0, 1, 1, 0, 1, 0, 1, 2])
    w = np.array([1, 1, 0.5, 0, 1, 0, 1, 1, 0.5])
    res = aa.heldout_prediction(a, b, k, w, folds=3, seed=0, elo_shuffles=2)
    assert res.n_unseen.sum() == 1
    assert res.n_test.sum() == 8


def test_order_dependence_equals_elo_on_each_permutation() -> None:
    sim = _arena(n_annotators=4, records=30)
    od = aa.elo_order_dependence(sim.model_a, sim.model_b, sim.outcome, shuffles=3, rng=9)
    order = np.argsort(np.random.default_rng(9).random((3, sim.outcome.size)), axis=1)
    runs = np.array(
        [
            elo(sim.model_a[o], sim.model_b[o], sim.outcome[o], n_models=8, k=4.0).ratings
            for o in order
        ]
    )
    np.testing.assert_allclose(od.mean, runs.mean(axis=0), atol=1e-9)
    np.testing.assert_allclose(od.sd, runs.std(axis=0, ddof=1), atol=1e-9)
    np.testing.assert_allclose(od.minimum, runs.min(axis=0), atol=1e-9)
    np.testing.assert_allclose(od.maximum, runs.max(axis=0), atol=1e-9)
    ranks = np.argsort(np.argsort(-runs, axis=1), axis=1) + 1
    assert od.best_rank.tolist() == ranks.min(axis=0).tolist()


def test_model_losses_equal_sklearn_log_loss_per_model() -> None:
    sim = _arena()
    ml = aa.model_losses(
        sim.model_a, sim.model_b, sim.annotator, sim.outcome, elo_shuffles=3, rng=0
    )
    assert ml.failures == ()
    r = m_elo(sim.model_a, sim.model_b, sim.outcome).ratings
    p = 1 / (1 + 10 ** ((r[sim.model_b] - r[sim.model_a]) / 400))
    w = sim.outcome
    for i in range(8):
        sel = (sim.model_a == i) | (sim.model_b == i)
        y = np.concatenate([np.ones(sel.sum()), np.zeros(sel.sum())])
        ref = log_loss(
            y, np.concatenate([p[sel], p[sel]]), sample_weight=np.concatenate([w[sel], 1 - w[sel]])
        )
        assert ml.loss[1, i] == pytest.approx(ref, rel=1e-9)
        assert ml.votes[i] == sel.sum()
    fit = am_elo(sim.model_a, sim.model_b, sim.annotator, w)
    assert ml.overall[2] == pytest.approx(-fit.log_likelihood / w.size, rel=1e-9)
    assert ml.overall[2] <= ml.overall[1] + 1e-12  # am-ELO nests m-ELO
    assert np.nanmin(ml.scaled, axis=1).tolist() == [0.0, 0.0, 0.0]
    assert np.nanmax(ml.scaled, axis=1).tolist() == [1.0, 1.0, 1.0]


def test_descent_reaches_the_maximum_likelihood_and_normalisation_fixes_direction() -> None:
    sim = _arena(n_annotators=10, records=100)
    args = (sim.model_a, sim.model_b, sim.annotator, sim.outcome)
    mle = -am_elo(*args).log_likelihood / sim.outcome.size
    with_norm = aa.am_elo_descent(*args, normalise=True, steps=1500, rng=4)
    without = aa.am_elo_descent(*args, normalise=False, steps=1500, rng=4)
    assert with_norm.loss == pytest.approx(np.full(5, mle), abs=2e-4)
    np.testing.assert_allclose(without.loss, with_norm.loss)  # eq. 7 leaves the loss alone
    assert with_norm.consistency == pytest.approx(1.0)
    assert with_norm.reversed_starts == 0
    # without it, starts that end reversed give the paper's count: with r of 5 reversed the
    # consistency is (C(5-r, 2) + C(r, 2)) / C(5, 2)
    r = without.reversed_starts
    assert without.consistency == pytest.approx(
        (math.comb(5 - r, 2) + math.comb(r, 2)) / 10, abs=0.02
    )


def test_perturbed_abilities_flip_annotators_fall_below_zero() -> None:
    """Decision rule by simulation (Fig. 6): flipped annotators get abilities below 0,
    normal ones above."""
    pa = aa.perturbed_abilities(
        strategies=("flip",), ratios=(0.1, 0.3), n_models=10, n_annotators=20,
        records_per_annotator=80, rng=1,
    )  # fmt: skip
    assert pa.failures == ()
    assert np.mean(pa.ability[pa.perturbed] < 0) >= 0.9
    assert np.mean(pa.ability[~pa.perturbed] > 0) >= 0.95
    assert pa.perturbed.sum() == 2 + 6
