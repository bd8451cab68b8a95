"""The consensus that verdicts compare annotators with leaves out annotators already flagged
by a per-vote test (issue 10, bench_flags' false flags with many position-biased or too-fast
annotators). The studies are bench_flags' own (same generator and seeds), where the earlier
rule inverted the ranking or set the random threshold from flagged annotators."""

from __future__ import annotations

import numpy as np

from ranking.arena import _median_disagrees, stable_arena
from tests.ranking.test_verdict_direction import _bench_study


def test_median_leaves_out_annotators_flagged_per_vote() -> None:
    """Six annotators agree with the ranking on 3 of 4 decisive votes (net +0.5); nine
    choose the left item whatever it is and happen to net -0.25 each. Counted with the
    others, the nine hold the median (the 8th of 15 rates) and reverse the ranking; left
    out, the six decide."""
    ls = np.array([1.0, 0.0])  # item 0 is better
    a, b, w, k = [], [], [], []
    for j in range(15):
        wins = [1.0, 1.0, 1.0, 0.0] if j < 6 else [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        a += [0] * len(wins)
        b += [1] * len(wins)
        w += wins
        k += [j] * len(wins)
    arr = (np.asarray(a), np.asarray(b), np.asarray(w), np.asarray(k))
    assert _median_disagrees(ls, *arr, 15)
    skip = np.arange(15) >= 6
    assert not _median_disagrees(ls, *arr, 15, skip)
    # nobody left after skipping: the skip is ignored rather than leaving no one to count
    assert _median_disagrees(ls, *arr, 15, np.ones(15, dtype=bool))


def test_many_position_biased_annotators_do_not_invert_the_ranking() -> None:
    """bench_flags, 20 annotators x 25 votes, discrimination sd 1.0, 9 always choosing the
    left item (repetition 3): the earlier rule put the median among the nine, mirrored the
    fit (ratings correlated -0.90 with the truth) and flagged 6 of the 11 honest annotators
    adversarial or random; now the ratings point the right way and at most one honest
    annotator is flagged (observed: 1)."""
    sim, pv, n_models = _bench_study(
        20, 25, 1.0, "left100", 0.45, 3, strategy="position", left_share=1.0
    )
    res = stable_arena(
        sim.model_a, sim.model_b, sim.annotator, pv.outcome, n_models=n_models,
        n_annotators=20, left_chosen=pv.left_chosen, fast=pv.fast,
    )  # fmt: skip
    assert np.corrcoef(res.ratings, sim.true_ratings)[0, 1] > 0.8
    flagged = np.asarray(res.status) == "flagged"
    assert int((flagged & ~pv.perturbed).sum()) <= 1
    assert all(  # every position-biased annotator with decisive votes is caught
        any(f.reason == "position_bias" for f in res.flags[j]) for j in np.flatnonzero(pv.perturbed)
    )


def test_too_fast_annotators_do_not_set_the_random_threshold() -> None:
    """bench_flags, 20 annotators x 25 votes, sd 1.0, 9 too-fast annotators (repetition
    2): three honest annotators were flagged ``random``; with the too-fast ones left out
    of the clearly honest annotators that set the threshold, none is."""
    sim, pv, n_models = _bench_study(20, 25, 1.0, "too_fast", 0.45, 2, strategy="too_fast")
    res = stable_arena(
        sim.model_a, sim.model_b, sim.annotator, pv.outcome, n_models=n_models,
        n_annotators=20, left_chosen=pv.left_chosen, fast=pv.fast,
    )  # fmt: skip
    flagged = np.asarray(res.status) == "flagged"
    assert int((flagged & ~pv.perturbed).sum()) == 0
