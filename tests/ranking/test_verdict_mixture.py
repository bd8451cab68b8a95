"""Regression tests for the mixture rule that settles the direction of the ranking in
``ranking.stable_arena`` (issue 10: recall >= 0.9 where perturbed annotators have 50
votes, false flags <= 5% in every bench_flags cell).

Seeds are bench_flags' (``zlib.crc32`` of the cell key, then the study number), so a
failure here points at a cell of ``benchmarks/results/bench_flags.txt``.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest
from scipy.stats import binom

import ranking.arena as arena
from ranking.arena import (
    StableArenaResult,
    _mixture_majority,
    _poisson_binomial_above,
    _side_probabilities,
    stable_arena,
)
from ranking.simulation import PerturbedVotes, perturb_votes, simulate_arena
from tests.ranking.test_verdict_direction import _bench_study


def _run(
    n_ann: int, votes: int, sd: float, strategy: str, ratio: float, r: int
) -> tuple[StableArenaResult, PerturbedVotes]:
    sim, pv, n_models = _bench_study(n_ann, votes, sd, strategy, ratio, r)
    res = stable_arena(
        sim.model_a,
        sim.model_b,
        sim.annotator,
        pv.outcome,
        n_models=n_models,
        n_annotators=n_ann,
        left_chosen=pv.left_chosen,
        fast=pv.fast,
    )
    return res, pv


def test_poisson_binomial_matches_binomial_and_enumeration() -> None:
    """Equal probabilities: the binomial survival function (scipy.stats.binom.sf);
    unequal ones: the sum over all 2**8 outcomes."""
    for n, q, k in ((20, 0.3, 10.0), (11, 0.93, 10.0), (200, 0.55, 100.0)):
        assert _poisson_binomial_above(np.full(n, q), k) == pytest.approx(
            binom.sf(int(k), n, q), rel=1e-9, abs=1e-15
        )
    p = np.array([0.1, 0.95, 0.5, 0.3, 0.99, 0.7, 0.2, 0.6])
    for k in (0.0, 3.5, 4.0, 7.0):
        want = sum(
            float(np.prod(np.where(bits, p, 1.0 - p)))
            for bits in itertools.product((0, 1), repeat=p.size)
            if sum(bits) > k
        )
        assert _poisson_binomial_above(p, k) == pytest.approx(want, rel=1e-12)


def test_side_probabilities_count_groups_not_noise() -> None:
    """11 annotators with scores 1-4 (most not individually significant at 1.645) and 9
    always against (-5): the agreeing group has 11 members, a majority with probability
    near 1. A null-like group (scores N(-0.8, 1), random voters) is counted for no side,
    and neither is a side whose members sit among the null's."""
    rng = np.random.default_rng(0)
    z = np.r_[np.linspace(1.0, 4.0, 11), np.full(9, -5.0) + rng.normal(0, 0.2, 9)]
    agree, against, n_agree, n_against = _mixture_majority(z)
    assert n_agree == pytest.approx(11, abs=0.5)
    assert n_against == pytest.approx(9, abs=0.1)
    assert agree > 0.95
    assert against == 0.0
    z = np.r_[rng.normal(4.5, 1.0, 11), rng.normal(-0.8, 1.0, 9)]
    _, minus = _side_probabilities(z)
    assert minus.sum() == 0.0
    agree, against, _, _ = _mixture_majority(rng.normal(0.0, 1.0, 50))
    assert agree < 0.05
    assert against < 0.05


def test_a_coherent_honest_majority_settles_the_direction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """bench_flags cell 20 annotators x 50 votes, discrimination sd 0, 9 always against
    (crc32("20-50-0-against-45"), study 0): fewer than 11 of 20 honest annotators are
    individually significant, so the significance count left all 20 pending (recall 0
    in this study); the 11 honest annotators' scores are a coherent group and a majority,
    so now the 9 against-voters are flagged adversarial and no honest annotator is
    flagged."""
    monkeypatch.setattr(arena, "_MIXTURE_DIRECTION", False)
    res, pv = _run(20, 50, 0.0, "against", 0.45, 0)
    assert all(s == "pending" for s in res.status)
    assert "the direction of the ranking is not settled" in res.reasons[0]
    monkeypatch.setattr(arena, "_MIXTURE_DIRECTION", True)
    res, pv = _run(20, 50, 0.0, "against", 0.45, 0)
    st = np.asarray(res.status)
    assert np.all(st[pv.perturbed] == "flagged")
    assert all(res.flags[j][0].reason == "adversarial" for j in np.flatnonzero(pv.perturbed))
    assert not np.any(st[~pv.perturbed] == "flagged")


def test_a_strong_minority_of_against_voters_is_not_taken_for_the_majority() -> None:
    """bench_flags cell 200 annotators x 10 votes, discrimination sd 1.0, 90 always
    against (crc32("200-10-10-against-45"), study 0): the fit comes out mirrored, the
    against-voters' scores are 2.0-3.0 and the 110 honest ones spread from -2.9 to 1.9.
    With each side's spread held at 1 or more, the against group also took in 14 honest
    annotators' noise, claimed a majority with probability 0.98 and 47 of 110 honest
    annotators were flagged; now nobody gets an ability verdict."""
    res, pv = _run(200, 10, 1.0, "against", 0.45, 0)
    st = np.asarray(res.status)
    assert not any(
        f.reason in ("adversarial", "random")
        for j in np.flatnonzero(~pv.perturbed)
        for f in res.flags[j]
    )
    assert not np.any(st[pv.perturbed] == "reliable")


def test_random_voters_leaning_one_way_are_not_a_side() -> None:
    """bench_flags cell 20 x 100 votes, discrimination sd 0.5, 9 random voters
    (crc32("20-100-5-random-45"), study 0): their scores lean negative (mean -0.8) and,
    counted as a side, were a majority against 11 clearly honest annotators: 9 honest
    annotators were flagged adversarial. A side must be individually significant on
    average; now no honest annotator is flagged adversarial."""
    res, pv = _run(20, 100, 0.5, "random", 0.45, 0)
    assert not any(
        f.reason == "adversarial" for j in np.flatnonzero(~pv.perturbed) for f in res.flags[j]
    )


def test_settled_by_the_mixture_only_no_random_verdict() -> None:
    """bench_flags cell 20 x 25 votes, discrimination sd 0, 5 annotators always choosing
    the left item (crc32("20-25-0-left100-25"), study 1; the ratings correlate 0.34 with
    the truth): the count does not settle the direction, the mixture does, and the random
    threshold fitted on the few clearly honest annotators flagged 6 of 15 honest ones
    random. The random verdict now waits for the count; the 5 left-choosers are still
    flagged (position bias), no honest annotator is."""
    key = "20-25-0-left100-25"
    gen = np.random.default_rng([zlib.crc32(key.encode()), 1])
    sim = simulate_arena(
        n_models=20, n_annotators=20, records_per_annotator=25, discrimination_sd=0.0, rng=gen
    )
    ids = gen.choice(20, size=5, replace=False)
    pv = perturb_votes(sim, ids, strategy="position", left_share=1.0, rng=gen)
    res = stable_arena(
        sim.model_a,
        sim.model_b,
        sim.annotator,
        pv.outcome,
        n_models=20,
        n_annotators=20,
        left_chosen=pv.left_chosen,
        fast=pv.fast,
    )
    st = np.asarray(res.status)
    assert not any("not settled" in r for r in res.reasons)
    assert np.all(st[pv.perturbed] == "flagged")
    assert not np.any(st[~pv.perturbed] == "flagged")
