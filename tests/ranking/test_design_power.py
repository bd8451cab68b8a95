"""Sample-size planning in ranking.design (issue 16 item 2): McNemar's exact test,
simulated difficulty studies, their interval widths and power, and arena vote counts.

References: scipy.stats.binomtest and statsmodels' exact McNemar for the p-value, the
binomial sum written out; the binomial interval width 2 z sqrt(p (1 - p) / n); the exact
power of McNemar's test summed over the multinomial of discordant counts; the
Bradley-Terry Wald width at equal strengths (expected information 1/4 per vote).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from ranking.design import (
    arena_votes_for_width,
    arena_width,
    arena_width_closed_form,
    difficulty_power,
    mcnemar_exact,
    paired_test,
    simulate_difficulty_study,
)
from ranking.errors import RankingInputError


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 0), (9, 2), (2, 9), (5, 5), (30, 12), (0, 14)])
def test_mcnemar_exact_matches_binomtest_statsmodels_and_the_sum(b: int, c: int) -> None:
    p = mcnemar_exact(b, c)
    n = b + c
    if n:
        assert p == pytest.approx(stats.binomtest(b, n, 0.5).pvalue, rel=1e-12)
        by_hand = min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n)
        assert p == pytest.approx(by_hand, rel=1e-12)
    ref = mcnemar([[10, b], [c, 7]], exact=True).pvalue
    assert p == pytest.approx(ref, rel=1e-12)


def test_paired_test_counts_discordant_items() -> None:
    a = np.array([1, 1, 1, 0, 0, 1, 0, 1], dtype=bool)
    b = np.array([1, 0, 0, 0, 1, 1, 0, 0], dtype=bool)
    t = paired_test(a, b)
    assert (t.n, t.only_first, t.only_second) == (8, 3, 1)
    assert t.difference == pytest.approx(a.mean() - b.mean())
    assert t.p_value == pytest.approx(stats.binomtest(3, 4).pvalue)
    assert paired_test([], []).difference is None
    with pytest.raises(RankingInputError):
        paired_test([1, 0], [1])


def test_simulated_study_has_the_asked_rates() -> None:
    s = simulate_difficulty_study(
        400,
        30,
        annotator_accuracy=0.8,
        reliability_sd=0.0,
        skip_rate=0.2,
        estimator_accuracy=(0.9, 0.6),
        rng=5,
    )
    assert s.pairs.shape == (400, 2)
    assert s.difficulty.shape == (2, 800)
    assert s.vote_code.size == 400 * 30
    assert np.mean(s.vote_code == 0) == pytest.approx(0.2, abs=0.015)
    judged = s.vote_code != 0
    right = s.vote_code[judged] == s.truth[s.vote_pair[judged]]
    assert right.mean() == pytest.approx(0.8, abs=0.015)
    for k, acc in enumerate((0.9, 0.6)):
        says_first = s.difficulty[k, s.pairs[:, 0]] > s.difficulty[k, s.pairs[:, 1]]
        assert np.mean(np.where(says_first, 1, 2) == s.truth) == pytest.approx(acc, abs=0.06)
    with pytest.raises(RankingInputError):
        simulate_difficulty_study(0, 3)
    with pytest.raises(RankingInputError):
        simulate_difficulty_study(3, 3, skip_rate=1.0)


def test_consensus_width_is_the_binomial_width_when_the_consensus_is_the_truth() -> None:
    """Fifteen annotators right 97% of the time agree with the truth on (nearly) every
    pair, so the consensus alignment of an estimator right with probability 0.8 is a
    binomial share over the pairs: its 95% interval is 2 * 1.96 * sqrt(.8 * .2 / n) wide."""
    (row,) = difficulty_power(
        [200],
        [15],
        trials=40,
        n_boot=400,
        annotator_accuracy=0.97,
        reliability_sd=0.0,
        skip_rate=0.0,
        estimator_accuracy=(0.8, 0.7),
        seed=2,
    )
    want = 2 * 1.96 * math.sqrt(0.8 * 0.2 / 200)
    assert row.ci_width_consensus == pytest.approx(want, rel=0.06)
    assert row.consensus == pytest.approx(0.8, abs=0.02)


def test_power_matches_the_exact_power_of_mcnemars_test() -> None:
    """With the consensus equal to the truth, the discordant counts are multinomial:
    b with p = .85 * .35, c with p = .15 * .65 per pair; the exact power is the sum of the
    probabilities of the (b, c) that the exact test rejects."""
    n, pa, pb = 60, 0.85, 0.65
    p_b, p_c = pa * (1 - pb), (1 - pa) * pb
    exact = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            if mcnemar_exact(b, c) < 0.05:
                exact += stats.multinomial.pmf([b, c, n - b - c], n, [p_b, p_c, 1 - p_b - p_c])
    (row,) = difficulty_power(
        [n],
        [15],
        trials=400,
        n_boot=1,
        annotator_accuracy=0.99,
        reliability_sd=0.0,
        skip_rate=0.0,
        estimator_accuracy=(pa, pb),
        seed=4,
    )
    assert abs(row.power - exact) < 3 * math.sqrt(exact * (1 - exact) / 400) + 0.01


def test_more_pairs_narrow_the_intervals_and_raise_the_power() -> None:
    rows = difficulty_power([30, 120], [8], trials=60, n_boot=200, seed=1)
    small, large = rows
    assert large.ci_width_consensus < small.ci_width_consensus  # type: ignore[operator]
    assert large.ci_width_kappa < small.ci_width_kappa  # type: ignore[operator]
    assert large.power > small.power


def test_arena_width_matches_the_closed_form_at_equal_strengths() -> None:
    for m, v in [(2, 100), (5, 40), (8, 25)]:
        mean, _sd, failed = arena_width(m, v, rating_sd=0.0, trials=60, rng=m)
        assert failed == 0
        assert mean == pytest.approx(arena_width_closed_form(m, v), rel=0.03)


def test_arena_votes_for_width_reaches_the_target_with_the_fewest_votes_tried() -> None:
    plan = arena_votes_for_width(5, 120.0, rating_sd=0.0, trials=30, seed=3)
    assert plan.reached
    assert plan.width <= 120.0
    # the closed form's answer: the smallest v with width <= 120
    v = next(v for v in range(1, 1000) if arena_width_closed_form(5, v) <= 120.0)
    assert abs(plan.votes_per_pair - v) <= max(2, 0.1 * v)
    assert plan.total_votes == plan.votes_per_pair * 10
    tried = dict((k, w) for k, w, _ in plan.curve)
    assert all(w > 120.0 for k, w in tried.items() if k < plan.votes_per_pair and k in tried)
