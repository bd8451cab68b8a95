"""Pair selection for difficulty studies (ranking.design, issue 16 item 1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ranking.design import STRATEGIES, pair_disagreement, select_pairs
from ranking.errors import InvalidParameterError, LengthMismatchError


@st.composite
def problems(draw: st.DrawFn) -> dict[str, object]:
    q = draw(st.integers(2, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    d = rng.random(q)
    if draw(st.booleans()):
        d = np.round(d, 1)  # many tied gaps
    d[rng.random(q) < draw(st.sampled_from([0.0, 0.1]))] = np.nan
    subjects = rng.integers(0, draw(st.integers(1, 4)), q).astype(str)
    return {
        "difficulty": d,
        "subjects": subjects,
        "n": draw(st.integers(1, 60)),
        "strategy": draw(st.sampled_from(STRATEGIES)),
        "seed": draw(st.integers(0, 10**6)),
        "max_per_question": draw(st.integers(1, 5)),
        "estimators": [d, rng.random(q), rng.random(q)],
    }


def _run(p: dict[str, object]):  # type: ignore[no-untyped-def]
    return select_pairs(
        p["difficulty"],  # type: ignore[arg-type]
        p["subjects"],  # type: ignore[arg-type]
        p["n"],  # type: ignore[arg-type]
        strategy=p["strategy"],  # type: ignore[arg-type]
        seed=p["seed"],  # type: ignore[arg-type]
        max_per_question=p["max_per_question"],  # type: ignore[arg-type]
        estimators=p["estimators"],  # type: ignore[arg-type]
    )


@settings(max_examples=150, deadline=None)
@given(problems())
def test_pairs_respect_subjects_cap_sides_and_uniqueness(p: dict[str, object]) -> None:
    d = _run(p)
    subjects = p["subjects"]
    diff = p["difficulty"]
    assert isinstance(subjects, np.ndarray)
    assert isinstance(diff, np.ndarray)
    q = subjects.size
    assert d.n <= p["n"]
    assert (subjects[d.first] == subjects[d.second]).all()
    assert (d.first != d.second).all()
    assert np.isfinite(diff[d.first]).all()
    assert np.isfinite(diff[d.second]).all()
    unordered = {frozenset((int(a), int(b))) for a, b in zip(d.first, d.second, strict=True)}
    assert len(unordered) == d.n
    both = np.bincount(np.concatenate([d.first, d.second]), minlength=q)
    assert both.max(initial=0) <= p["max_per_question"]
    side = np.bincount(d.first, minlength=q) - np.bincount(d.second, minlength=q)
    assert np.abs(side).max(initial=0) <= 1
    np.testing.assert_allclose(d.gap, np.abs(diff[d.first] - diff[d.second]))


@settings(max_examples=60, deadline=None)
@given(problems())
def test_the_seed_determines_the_pairs(p: dict[str, object]) -> None:
    a, b = _run(p), _run(p)
    np.testing.assert_array_equal(a.first, b.first)
    np.testing.assert_array_equal(a.second, b.second)
    np.testing.assert_array_equal(a.stratum, b.stratum)


@settings(max_examples=150, deadline=None)
@given(problems())
def test_strata_are_balanced_within_one_when_feasible(p: dict[str, object]) -> None:
    """Without a binding cap and with enough candidates in every stratum, the stratified
    strategies ask each gap tertile equally often (within one)."""
    if p["strategy"] == "uniform":
        p["strategy"] = "stratified"
    subjects = p["subjects"]
    assert isinstance(subjects, np.ndarray)
    p["max_per_question"] = subjects.size  # the cap never binds
    d = _run(p)
    if 3 * min(d.candidates_per_stratum) < p["n"]:
        return  # infeasible: some stratum runs out; the others fill its share
    assert d.n == p["n"]
    counts = np.bincount(d.stratum, minlength=3)
    assert counts.max() - counts.min() <= 1


def test_strata_follow_the_gap_tertiles() -> None:
    rng = np.random.default_rng(3)
    diff = rng.random(30)
    d = select_pairs(diff, np.zeros(30, dtype=int), 45, max_per_question=30, seed=1)
    lo, hi = d.gap_edges
    assert (d.gap[d.stratum == 0] > hi).all()
    assert ((d.gap[d.stratum == 1] > lo) & (d.gap[d.stratum == 1] <= hi)).all()
    assert (d.gap[d.stratum == 2] <= lo).all()
    assert np.bincount(d.stratum).tolist() == [15, 15, 15]


def test_different_seeds_give_different_pairs() -> None:
    diff = np.linspace(0, 1, 40)
    a = select_pairs(diff, np.zeros(40, dtype=int), 20, seed=0)
    b = select_pairs(diff, np.zeros(40, dtype=int), 20, seed=1)
    assert set(zip(a.first.tolist(), a.second.tolist(), strict=False)) != set(
        zip(b.first.tolist(), b.second.tolist(), strict=False)
    )


def test_disagreement_prefers_pairs_the_estimators_order_differently() -> None:
    rng = np.random.default_rng(0)
    q = 80
    e1 = rng.random(q)
    e2 = e1.copy()
    e3 = e1.copy()
    flip = rng.random(q) < 0.3
    e3[flip] = rng.random(flip.sum())  # estimator 3 disagrees on some questions
    ests = [e1, e2, e3]
    subj = np.zeros(q, dtype=int)
    means = {}
    for strategy in ("stratified", "disagreement"):
        vals = [
            select_pairs(
                e1, subj, 40, strategy=strategy, seed=s, estimators=ests, max_per_question=3
            ).disagreement.mean()  # type: ignore[union-attr]
            for s in range(5)
        ]
        means[strategy] = float(np.mean(vals))
    assert means["disagreement"] > 2 * means["stratified"]


def test_pair_disagreement_values() -> None:
    d = [[0.0, 1.0, 2.0], [0.0, 2.0, 1.0], [np.nan, 0.0, 3.0]]
    out = pair_disagreement(d, [0, 1, 0], [1, 2, 2])
    # pair (0,1): two estimators agree, the third has no value -> 0
    # pair (1,2): signs -1, +1, -1 -> 1 - 1/3
    # pair (0,2): -1, -1 (third NaN) -> 0
    np.testing.assert_allclose(out, [0.0, 2 / 3, 0.0])


def test_large_candidate_sets_are_sampled_deterministically() -> None:
    diff = np.random.default_rng(0).random(500)
    subj = np.zeros(500, dtype=int)
    a = select_pairs(diff, subj, 50, max_candidates=5_000, seed=2)
    b = select_pairs(diff, subj, 50, max_candidates=5_000, seed=2)
    assert a.sampled
    assert a.candidates <= 5_000
    assert a.n == 50
    np.testing.assert_array_equal(a.first, b.first)


def test_nothing_to_pair_gives_no_pairs() -> None:
    d = select_pairs([0.1, 0.2, 0.3], ["a", "b", "c"], 5)
    assert d.n == 0
    assert d.candidates == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"n": 0}, InvalidParameterError, "n must be at least 1"),
        ({"max_per_question": 0}, InvalidParameterError, "max_per_question"),
        ({"strategy": "best"}, InvalidParameterError, "unknown strategy"),
        ({"strategy": "disagreement"}, InvalidParameterError, "at least two estimators"),
        ({"subjects": ["a"]}, LengthMismatchError, "one per question"),
        ({"estimators": [[1.0], [2.0]]}, LengthMismatchError, "one per question"),
    ],
)
def test_bad_input_is_one_line(kwargs: dict[str, object], error: type, text: str) -> None:
    args: dict[str, object] = {"difficulty": [0.1, 0.2], "subjects": ["a", "a"], "n": 1}
    args.update(kwargs)
    with pytest.raises(error, match=text) as info:
        select_pairs(**args)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)
