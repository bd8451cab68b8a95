"""Tests for ranking.eip_analyses (the EIP paper's Tables 5, 8-11, 15-18, 20, Fig. 8).

Each test says where its expected number comes from: worked by hand (in the
docstring), or an independent computation (scipy, a direct refit with
``ranking.eip`` written out in the test, or the existing ``ranking.robustness``
function with the same random draws).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ranking.compare import ranks
from ranking.eip import eip
from ranking.eip_analyses import (
    alpha_convergence,
    anchor_questions,
    difficulty_tiers,
    eip_bootstrap,
    family_dominated,
    group_agreement,
    icc1,
    leave_datasets_out,
    leave_one_model_out,
    model_removal,
    pool_difficulty,
    rank_comparison,
    super_model_addition,
    weak_model_inflation,
    wrong_side_shares,
)
from ranking.errors import InvalidParameterError, LengthMismatchError
from ranking.rank_metrics import ordering, rbo_extrapolated
from ranking.robustness import anchor_sampling, leave_models_out


def synthetic(seed: int = 0, n_q: int = 600, n_m: int = 12) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta = np.linspace(-1.5, 1.5, n_m)
    b = rng.normal(0, 1.2, n_q)
    return (rng.random((n_q, n_m)) < 1 / (1 + np.exp(b[:, None] - theta))).astype(np.uint8)


# --- Table 5 / Table 9 -------------------------------------------------------


def test_model_removal_equals_leave_models_out_with_the_same_draws() -> None:
    """Same seed, same draws: the correlations equal ranking.robustness.leave_models_out."""
    A = synthetic()
    ours = model_removal(A, [1, 4], n_trials=6, n_timing=1, rng=3)
    ref = leave_models_out(A, ks=[1, 4], n_trials=6, rng=3)
    np.testing.assert_allclose(ours.question_rho, ref.question_rho, rtol=0, atol=1e-15)
    np.testing.assert_allclose(ours.model_rho, ref.model_rho, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(ours.questions_dropped, ref.questions_dropped)
    assert ours.n_failed.tolist() == [0, 0]
    assert np.all(ours.seconds > 0)
    assert ours.full_seconds > 0
    assert ours.time_reduction.shape == (2,)


def test_model_removal_records_a_failed_refit_as_nan() -> None:
    """Model 2 fails only question 0, which only models 0 and 1 solve: without them,
    question 0 is solved by none and model 2 fails no retained question (F = 0)."""
    A = np.array(
        [[1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 1, 0], [0, 0, 1, 1], [1, 0, 1, 1]], dtype=np.uint8
    )
    # every draw of k=2 from 4 models; some fail
    res = model_removal(A, [2], n_trials=30, n_timing=1, rng=0)
    assert res.n_failed[0] > 0
    assert np.isnan(res.model_rho[0]).sum() >= res.n_failed[0]


def test_model_removal_rejects_k_too_large() -> None:
    with pytest.raises(InvalidParameterError, match="n_models - 2"):
        model_removal(synthetic(n_m=5), [4])


def test_leave_one_model_out_against_direct_refits() -> None:
    """Each LOO rho is scipy's Spearman of a refit written out here."""
    A = synthetic(1, n_q=400, n_m=8)
    res = leave_one_model_out(A, random_k=3, n_random=4, rng=0)
    full = eip(A)
    for j in range(8):
        kept = [i for i in range(8) if i != j]
        sub = eip(A[:, kept])
        rho = stats.spearmanr(full.competency[kept], sub.competency).statistic
        assert res.loo_model_rho[j] == pytest.approx(rho, abs=1e-12)
        both = full.retained & sub.retained
        qrho = stats.spearmanr(full.difficulty[both], sub.difficulty[both]).statistic
        assert res.loo_question_rho[j] == pytest.approx(qrho, abs=1e-12)
        assert res.loo_dropped[j] == np.sum(full.retained & ~sub.retained)
    assert res.random_model_rho.shape == (4,)
    assert res.n_questions == 400


# --- Table 10 ----------------------------------------------------------------


def test_leave_datasets_out_against_direct_refits() -> None:
    A = synthetic(2, n_q=300, n_m=6)
    groups = np.array(["b", "a", "c"] * 100)
    res = leave_datasets_out(A, groups)
    assert res.labels.tolist() == ["a", "b", "c"]
    assert res.n_questions.tolist() == [100, 100, 100]
    full = eip(A)
    for k, lab in enumerate(res.labels):
        sub = eip(A[groups != lab])
        rho = stats.spearmanr(full.competency, sub.competency).statistic
        assert res.model_rho[k] == pytest.approx(rho, abs=1e-12)


def test_leave_datasets_out_needs_one_label_per_question() -> None:
    with pytest.raises(LengthMismatchError):
        leave_datasets_out(synthetic(), ["a", "b"])


# --- Table 8 -----------------------------------------------------------------


def test_alpha_convergence_rows_are_the_fits_deltas() -> None:
    """Each row is EIPResult.deltas of a fit at that alpha; a smaller alpha converges
    in no more iterations (the change shrinks by alpha**2 per iteration, Table 8)."""
    A = synthetic()
    res = alpha_convergence(A, [0.1, 0.5, 0.9], tol=1e-12)
    for i, a in enumerate([0.1, 0.5, 0.9]):
        fit = eip(A, alpha=a, tol=1e-12)
        assert res.iterations[i] == fit.iterations
        np.testing.assert_array_equal(res.deltas[i, : fit.iterations], fit.deltas)
        assert np.all(np.isnan(res.deltas[i, fit.iterations :]))
    assert res.iterations.tolist() == sorted(res.iterations.tolist())


# --- Table 11, Figs. 12-13 ---------------------------------------------------


def test_icc1_hand_case_and_anova() -> None:
    """Hand: pairs (1,2), (2,1), (3,3): MSB = 1.5, MSW = 1/3, ICC = 7/11.
    Independent: ICC(1) = (F - 1) / (F + 1) with F from scipy's one-way ANOVA over items."""
    assert icc1([1, 2, 3], [2, 1, 3]) == pytest.approx(7 / 11, abs=1e-15)
    rng = np.random.default_rng(0)
    x = rng.normal(size=20)
    y = x + rng.normal(scale=0.5, size=20)
    F = stats.f_oneway(*np.column_stack([x, y])).statistic
    assert icc1(x, y) == pytest.approx((F - 1) / (F + 1), abs=1e-12)


def test_rank_comparison_hand_case() -> None:
    """EIP order 0,1,2,3,4; accuracy order 1,0,2,4,3: models 0, 1, 3, 4 move by 1.
    Kendall: 8 concordant, 2 discordant of 10 pairs, tau = 0.6 (as scipy)."""
    eip_scores = [5, 4, 3, 2, 1]
    acc = [4, 5, 3, 1, 2]
    res = rank_comparison(eip_scores, acc, windows=[1, 2])
    assert res.abs_change.tolist() == [1, 1, 0, 1, 1]
    assert res.change_counts.tolist() == [1, 4]
    assert res.kendall_tau == pytest.approx(0.6, abs=1e-12)
    assert res.kendall_tau == pytest.approx(stats.kendalltau(eip_scores, acc).statistic)
    assert res.rbo == pytest.approx(
        rbo_extrapolated(ordering(np.array(eip_scores)), ordering(np.array(acc)), p=0.9)
    )
    assert res.icc1 == pytest.approx(icc1(res.rank_a, res.rank_b))
    # window 1: one model per accuracy rank, in accuracy order: models 1, 0, 2, 4, 3
    np.testing.assert_array_equal(res.windows[1][:, 2], [1, 1, 0, 1, 1])
    # window 2: ranks 1-2 (models 1, 0), 3-4 (models 2, 4), 5 (model 3)
    np.testing.assert_array_equal(res.windows[2][:, :2], [[1, 2], [3, 4], [5, 5]])
    np.testing.assert_array_equal(res.windows[2][:, 2], [1.0, 0.5, 1.0])
    assert np.isnan(res.window_tau[1]).all()
    assert res.window_tau[2][0] == pytest.approx(-1.0)


def test_rank_comparison_identical_scores() -> None:
    res = rank_comparison([3, 2, 1], [30, 20, 10])
    assert res.abs_change.max() == 0
    assert res.kendall_tau == pytest.approx(1.0)
    assert res.icc1 == pytest.approx(1.0)


# --- Fig. 8 ------------------------------------------------------------------


def test_pool_difficulty_counts_and_histogram() -> None:
    """Hand: pool {0,1} solves rows 0 and 3 completely (all), none of row 2;
    the whole pool solves row 3 completely and none of row 2."""
    A = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0], [1, 1, 1], [0, 1, 1]], dtype=np.uint8)
    res = pool_difficulty(A, [[0, 1], [0, 1, 2]], n_bins=4)
    assert res.solved_by_all.tolist() == [0.4, 0.2]
    assert res.solved_by_none.tolist() == [0.2, 0.2]
    assert res.dead.tolist() == [0.6000000000000001, 0.4]
    np.testing.assert_allclose(res.histogram.sum(axis=1), 1.0)
    # the whole pool's histogram is eip's difficulty_100 binned, independently
    counts, _ = np.histogram(eip(A).difficulty_100, bins=[0, 25, 50, 75, 100])
    np.testing.assert_allclose(res.histogram[1], counts / 5)


def test_pool_difficulty_single_model_pool_has_no_histogram() -> None:
    res = pool_difficulty(synthetic(), [[0]])
    assert np.isnan(res.histogram).all()
    assert res.n_models.tolist() == [1]


# --- Tables 15-18 ------------------------------------------------------------


def test_weak_model_inflation_against_a_direct_refit() -> None:
    A = synthetic(3, n_q=500, n_m=10)
    res = weak_model_inflation(A, n_weak=3, copies=2, n_top=5, n_bottom=3)
    full = eip(A)
    weak = np.argsort(full.competency)[:3]
    assert sorted(res.weak.tolist()) == sorted(weak.tolist())
    big = eip(np.concatenate([A, A[:, weak], A[:, weak]], axis=1))
    keep = full.retained
    r = stats.pearsonr(full.difficulty[keep], big.difficulty[keep]).statistic
    assert res.difficulty_pearson == pytest.approx(r, abs=1e-12)
    change = np.abs(ranks(full.competency) - ranks(big.competency[:10]))
    np.testing.assert_array_equal(res.rank_change, change)
    assert 0 <= res.top_unchanged <= 5


def test_wrong_side_shares_reproduce_eq_2() -> None:
    """At the fixed point, pi_q = alpha * sum_m (1 - a_qm) pi_m / F(m) + (1 - alpha) / n_keep
    (eq. 2): rebuild the mass from pi_M and F written out here; each share is its term."""
    A = synthetic(4, n_q=200, n_m=6).astype(np.float64)
    A[3, 2] = np.nan
    fit = eip(A, alpha=0.85, tol=1e-14)
    shares = wrong_side_shares(A, fit)
    keep = fit.retained
    fail = np.nan_to_num(1 - A)
    F = fail[keep].sum(axis=0)
    terms = fail * fit.competency / F
    mass = terms.sum(axis=1)
    np.testing.assert_allclose(
        fit.difficulty[keep], 0.85 * mass[keep] + 0.15 / keep.sum(), rtol=1e-9
    )
    np.testing.assert_allclose(shares[keep], terms[keep] / mass[keep, None], rtol=1e-12)
    np.testing.assert_allclose(shares[keep].sum(axis=1), 1.0)
    assert np.all(shares[~keep] == 0)
    assert shares[3, 2] == 0


def test_family_dominated_hand_cases() -> None:
    """Row 0: family 0 holds 0.95 with two failing members -> 0. Row 1: family 0 holds
    0.95 but one failing member -> -1. Row 2: 0.9 exactly is not more than 0.9 -> -1."""
    s = [[0.5, 0.45, 0.05], [0.95, 0.0, 0.05], [0.45, 0.45, 0.1]]
    f = [[True, True, True], [True, False, True], [True, True, True]]
    assert family_dominated(s, f, [0, 0, 1]).tolist() == [0, -1, -1]
    assert family_dominated(s, f, [0, 0, 1], threshold=0.85).tolist() == [0, -1, 0]


def test_super_model_addition_against_a_direct_refit() -> None:
    """The same draws (seeded generator) rebuild the synthetic column here."""
    A = synthetic(5, n_q=400, n_m=8)
    res = super_model_addition(A, [0.95, 0.8], rng=7)
    gen = np.random.default_rng(7)
    full = eip(A)
    for i, p in enumerate([0.95, 0.8]):
        col = np.zeros(400)
        col[gen.choice(400, size=round(p * 400), replace=False)] = 1
        fit = eip(np.column_stack([A, col]))
        rho = stats.spearmanr(full.competency, fit.competency[:8]).statistic
        assert res.model_rho[i] == pytest.approx(rho, abs=1e-12)
        change = np.abs(ranks(full.competency) - ranks(fit.competency[:8]))
        assert res.max_change[i] == change.max()
        assert res.mean_change[i] == pytest.approx(change.mean())
    assert res.super_rank[0] == 1.0


# --- Table 20 ----------------------------------------------------------------


def test_anchor_questions_is_anchor_samplings_draw() -> None:
    """One trial of ranking.robustness.anchor_sampling with the same seed draws the same
    anchors: the model rho of a refit on them equals its rho."""
    A = synthetic(6, n_q=1000, n_m=8)
    ref = anchor_sampling(A, [0.1], n_trials=1, rng=11)
    rows = anchor_questions(eip(A).difficulty, 0.1, rng=11)
    assert rows.size == ref.n_anchors[0] == 100
    sub = eip(A[rows])
    rho = stats.spearmanr(eip(A).competency, sub.competency).statistic
    assert ref.model_rho[0, 0] == pytest.approx(rho, abs=1e-12)


def test_anchor_questions_rejects_bad_rate() -> None:
    with pytest.raises(InvalidParameterError):
        anchor_questions(np.arange(20.0), 0.0)


# --- Bootstrap ---------------------------------------------------------------


def test_eip_bootstrap_reproduces_its_replicates() -> None:
    """Replicates rebuilt here from the same seed give the same percentile intervals."""
    A = synthetic(7, n_q=300, n_m=6)
    res = eip_bootstrap(A, n_boot=25, level=0.9, rng=2)
    gen = np.random.default_rng(2)
    comp, diffs = [], np.full((25, 300), np.nan)
    for b in range(25):
        idx = gen.integers(0, 300, size=300)
        fit = eip(A[idx])
        comp.append(fit.competency)
        for pos, q in enumerate(idx):
            if np.isnan(diffs[b, q]):
                diffs[b, q] = fit.difficulty_100[pos]
    lo, hi = np.percentile(np.array(comp), [5, 95], axis=0)
    np.testing.assert_allclose(res.competency_low, lo, rtol=1e-12)
    np.testing.assert_allclose(res.competency_high, hi, rtol=1e-12)
    dlo = np.nanpercentile(diffs.astype(np.float32).astype(np.float64), 5, axis=0)
    np.testing.assert_allclose(res.difficulty_low, dlo, rtol=1e-6)
    assert res.n_failed == 0
    assert np.all(res.rank_low <= res.rank_high)


# --- Fig. 6 and Figs. 5 / 11 -------------------------------------------------


def test_group_agreement_against_direct_refits() -> None:
    """Each correlation is scipy's on two refits written out here."""
    A = synthetic(8, n_q=500, n_m=9)
    groups = [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    res = group_agreement(A, groups)
    assert res.pairs.tolist() == [[0, 1], [0, 2], [1, 2]]
    fits = [eip(A[:, g]) for g in groups]
    for p, (i, j) in enumerate(res.pairs):
        both = fits[i].retained & fits[j].retained
        x, y = fits[i].difficulty[both], fits[j].difficulty[both]
        assert res.n_questions[p] == both.sum()
        assert res.spearman[p] == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
        assert res.pearson[p] == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
        assert res.kendall[p] == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)


def test_group_agreement_single_model_group_is_nan() -> None:
    res = group_agreement(synthetic(), [[0], [1, 2, 3]])
    assert res.fitted.tolist() == [False, True]
    assert np.isnan(res.spearman[0])


def test_difficulty_tiers_counts() -> None:
    """The tiers of each model add up to its correct answers and its answered questions
    (counted independently); model 0's tiers match a leave-one-out refit written out here."""
    A = synthetic(9, n_q=301, n_m=6).astype(np.float64)
    A[5, 0] = np.nan
    res = difficulty_tiers(A)
    np.testing.assert_allclose(res.solved.sum(axis=1), np.nansum(A, axis=0))
    np.testing.assert_allclose(res.answered.sum(axis=1), np.sum(~np.isnan(A), axis=0))
    fit = eip(A[:, 1:])
    order = np.argsort(fit.difficulty, kind="stable")
    hard = order[-100:]  # 301 = 101 + 100 + 100 questions
    assert res.solved[0, 2] == np.nansum(A[hard, 0])
    # a stronger model solves a larger share of the hard tier
    assert res.accuracy[5, 2] > res.accuracy[0, 2]
