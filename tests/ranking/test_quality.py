"""ranking.quality: gold accuracy and self-consistency per annotator (issue 16).

References: the Wilson interval against statsmodels' ``proportion_confint(method="wilson")``,
the one-sided p-value against scipy's ``binomtest(alternative="less")``, the rates against
hand counts; the signal rule by simulation (its false-signal rate at the threshold is at most
alpha, as an exact test guarantees, and random voters are caught).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ranking.errors import InvalidParameterError, LengthMismatchError
from ranking.quality import (
    check_rates,
    gold_accuracy,
    quality_reasons,
    self_consistency,
    wilson_bounds,
)

proportion = pytest.importorskip("statsmodels.stats.proportion")


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (3, 10), (7, 10), (19, 20), (50, 100)])
def test_wilson_matches_statsmodels(k: int, n: int) -> None:
    lo, hi = wilson_bounds([k], [n])
    ref = proportion.proportion_confint(k, n, alpha=0.05, method="wilson")
    np.testing.assert_allclose([lo[0], hi[0]], ref, atol=1e-12)


def test_wilson_without_trials_is_undefined() -> None:
    lo, hi = wilson_bounds([0], [0])
    assert np.isnan(lo[0])
    assert np.isnan(hi[0])


def test_p_value_is_scipy_binomtest_less() -> None:
    r = check_rates(
        [0] * 10 + [1] * 4, [True] * 5 + [False] * 5 + [True] * 4, n_annotators=2, threshold=0.7
    )
    assert r.n.tolist() == [10, 4]
    assert r.hits.tolist() == [5, 4]
    for i, (k, n) in enumerate([(5, 10), (4, 4)]):
        ref = stats.binomtest(k, n, 0.7, alternative="less").pvalue
        assert r.p_value[i] == pytest.approx(ref, rel=1e-12)


def test_gold_accuracy_by_hand() -> None:
    # annotator 0: right, wrong, skip (left out), right on a tie gold; annotator 1: both-bad gold
    # answered "both bad" (right) and "A" (wrong); annotator 2: no gold votes
    ann = [0, 0, 0, 0, 1, 1]
    choice = [1, 2, 0, 3, 4, 1]
    gold = [1, 1, 2, 3, 4, 4]
    r = gold_accuracy(ann, choice, gold, n_annotators=3)
    assert r.n.tolist() == [3, 2, 0]
    assert r.hits.tolist() == [2, 1, 0]
    np.testing.assert_allclose(r.rate[:2], [2 / 3, 1 / 2])
    assert np.isnan(r.rate[2])
    assert np.isnan(r.p_value[2])
    assert not r.signal[2]


def test_self_consistency_by_hand() -> None:
    # stored choices are relative to the item: the re-test was shown swapped, so an annotator
    # who always presses "left" gives first then second: a disagreement, as it should be
    ann = [0, 0, 0, 1, 1, 1]
    original = [1, 1, 2, 1, 0, 3]
    retest = [1, 2, 2, 1, 1, 3]
    r = self_consistency(ann, original, retest, n_annotators=2)
    assert r.n.tolist() == [3, 2]  # the pair with a skip is left out
    assert r.hits.tolist() == [2, 2]


def test_position_voter_is_inconsistent() -> None:
    # 30 re-tests of an annotator who always presses the left key: the original shown
    # unswapped gives "first", the swapped re-test gives "second"; never consistent
    r = self_consistency([0] * 30, [1] * 30, [2] * 30, n_annotators=1)
    assert r.rate[0] == 0.0
    assert r.signal[0]
    assert quality_reasons(1, consistency=r) == [["inconsistent"]]


def test_bad_input_raises() -> None:
    with pytest.raises(LengthMismatchError):
        gold_accuracy([0, 1], [1], [1, 1], n_annotators=2)
    with pytest.raises(InvalidParameterError):
        check_rates([3], [True], n_annotators=2, threshold=0.7)
    with pytest.raises(InvalidParameterError):
        check_rates([0], [True], n_annotators=1, threshold=1.0)


def test_signal_rule_by_simulation() -> None:
    """At the threshold the exact test signals at most alpha of the annotators; honest
    annotators (90%) almost never; random voters (50%) with 30 checks mostly."""
    rng = np.random.default_rng(16)
    n_ann, n_checks = 4000, 30
    ann = np.repeat(np.arange(n_ann), n_checks)

    def signal_rate(p: float) -> float:
        hits = rng.random(n_ann * n_checks) < p
        return float(check_rates(ann, hits, n_annotators=n_ann, threshold=0.7).signal.mean())

    assert signal_rate(0.7) <= 0.05
    assert signal_rate(0.9) < 0.001
    assert signal_rate(0.5) > 0.5
