"""The Stable Arena loop's sums over (annotator, pair, outcome) cells (ranking.arena._VoteCells).

Each cell-based helper is checked against the per-vote computation it replaces in
:func:`ranking.arena.stable_arena` (the reference: the same statistic summed vote by vote,
written out below or the per-vote helper kept for large key spaces), on random vote sets
drawn by hypothesis: integer counts give the same answers exactly, float sums of ``x``
(added in another order) to rounding. A whole ``stable_arena`` run is compared with the
per-vote path (cells switched off) on simulated votes with flipped annotators.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ranking.arena as arena
from ranking.arena import (
    _agreement_labels,
    _flag_counts,
    _identifies,
    _identifies_pairs,
    _median_disagrees,
    _median_disagrees_cells,
    _scale_bias,
    _score_z,
    _score_z_cells,
    _VoteCells,
    stable_arena,
)
from ranking.simulation import perturb_outcomes, simulate_arena


@st.composite
def votes(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    n = draw(st.integers(2, 6))
    m = draw(st.integers(1, 7))
    size = draw(st.integers(0, 80))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    k = rng.integers(0, m, size)
    w = rng.choice(
        [0.0, 0.5, 1.0], size, p=draw(st.sampled_from([(0.4, 0.2, 0.4), (0, 1, 0), (0.5, 0, 0.5)]))
    )
    return a, b, k, w, np.array([n, m])


@settings(max_examples=150, deadline=None)
@given(votes())
def test_cell_counts_are_the_votes_per_annotator_pair_and_outcome(v) -> None:
    """Expected: np.add.at of one per vote into (k, 2 w, a, b)."""
    a, b, k, w, (n, m) = v
    cells = _VoteCells.of(a, b, w, k, int(n), int(m))
    assert cells is not None
    ref = np.zeros((m, 3, n, n), dtype=np.int64)
    np.add.at(ref, (k, (2 * w).astype(int), a, b), 1)
    np.testing.assert_array_equal(cells.counts, ref)
    np.testing.assert_array_equal(cells.per_annotator().sum(axis=1), np.bincount(k, minlength=m))
    who = np.arange(m) % 2 == 0
    pairs = np.zeros((n, n), dtype=bool)
    pairs[a[who[k]], b[who[k]]] = True
    np.testing.assert_array_equal(cells.pairs_of(who), pairs)
    gone = cells.without(who)
    np.testing.assert_array_equal(gone.counts[~who], ref[~who])
    assert not gone.counts[who].any()


@settings(max_examples=150, deadline=None)
@given(votes(), st.integers(0, 2**32 - 1))
def test_score_z_and_median_from_cells_equal_the_per_vote_sums(v, seed) -> None:
    """Expected: the per-vote ``_score_z`` (to rounding: x is summed in another order) and
    ``_median_disagrees`` (integer counts: exactly), for random log-strengths, with and
    without flagged annotators left out of the median."""
    a, b, k, w, (n, m) = v
    rng = np.random.default_rng(seed)
    ls = rng.normal(0.0, 1.0, n)
    ls[rng.integers(0, n)] = ls[0]  # equal strengths: a pair that agrees with neither side
    cells = _VoteCells.of(a, b, w, k, int(n), int(m))
    assert cells is not None
    ref = _score_z(ls[a] - ls[b], w, k, int(m))
    got = _score_z_cells(ls, cells)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)
    for skip in (None, rng.random(m) < 0.3, np.ones(m, dtype=bool)):
        assert _median_disagrees_cells(ls, cells, skip) == _median_disagrees(
            ls, a, b, w, k, int(m), skip
        )


@settings(max_examples=200, deadline=None)
@given(votes())
def test_identifies_from_pairs_equals_identifies_on_every_vote(v) -> None:
    """Expected: ``_identifies`` on the votes themselves (every item seen, one component)."""
    a, b, k, w, (n, m) = v
    cells = _VoteCells.of(a, b, w, k, int(n), int(m))
    assert cells is not None
    for who in (np.ones(m, dtype=bool), np.arange(m) % 2 == 1):
        sel = who[k]
        assert _identifies_pairs(cells.pairs_of(who)) == _identifies(a[sel], b[sel], int(n))


def test_scale_bias_from_cell_counts_equals_the_per_vote_path() -> None:
    """Expected: ``_scale_bias`` counting its own cells from the votes (bit for bit: the same
    cells in the same order)."""
    rng = np.random.default_rng(3)
    n, m, size = 5, 9, 3000
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    k = rng.integers(0, m, size)
    w = rng.choice([0.0, 0.5, 1.0], size)
    fit = SimpleNamespace(discriminations=rng.gamma(4.0, 0.25, m), log_strengths=rng.normal(size=n))
    cells = _VoteCells.of(a, b, w, k, n, m)
    assert cells is not None
    per_cell = cells.per_pair(np.arange(m))
    assert per_cell.sum() == size
    assert _scale_bias(fit, a, b, k, per_cell) == _scale_bias(fit, a, b, k)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(votes(), st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_flag_counts_and_labels_equal_the_per_vote_sums(v, seed, with_left, with_fast) -> None:
    """Expected: the weighted counts of the per-vote flags (decisive votes, decisive votes
    won on the left, fast votes per annotator) and the label rule written with np.where."""
    a, b, k, w, (_, m) = v
    rng = np.random.default_rng(seed)
    left = rng.random(k.size) < 0.5 if with_left else None
    fast = rng.random(k.size) < 0.3 if with_fast else None
    dec = w != 0.5
    counts = _flag_counts(k, int(m), dec, left, fast)
    np.testing.assert_array_equal(counts.sum(axis=1), np.bincount(k, minlength=m))
    n_dec = np.bincount(k[dec], minlength=m)
    np.testing.assert_array_equal(counts[:, [2, 3, 6, 7]].sum(axis=1), n_dec)
    assert not counts[:, [1, 5]].any()  # left is only counted on decisive votes
    if left is not None:
        n_left = np.bincount(k[dec & left], minlength=m)
        np.testing.assert_array_equal(counts[:, [3, 7]].sum(axis=1), n_left)
    else:
        assert not counts[:, 1::2].any()
    if fast is not None:
        np.testing.assert_array_equal(counts[:, 4:].sum(axis=1), np.bincount(k[fast], minlength=m))
    ref = np.where(w == 0.5, 1, np.where((w == 1.0) == (a < b), 0, 2))
    np.testing.assert_array_equal(_agreement_labels(w, dec, a, b), ref)


def test_too_many_cells_fall_back_to_the_votes() -> None:
    """More than two cells per vote, beyond 65,536: the per-vote sums instead (200 items x
    60 annotators x 3 outcomes for 3,000 votes); below, the cells."""
    idx = np.zeros(3000, dtype=np.int64)
    assert _VoteCells.of(idx, idx, np.zeros(3000), idx, 200, 60) is None
    assert _VoteCells.of(idx, idx, np.zeros(3000), idx, 10, 60) is not None


@pytest.mark.parametrize("action", ["warn", "exclude"])
def test_stable_arena_with_cells_equals_the_per_vote_loop(monkeypatch, action) -> None:
    """Expected: the same loop with the cells switched off (every sum over votes): statuses,
    reasons and flags identical, numbers to rounding."""
    sim = simulate_arena(n_models=8, n_annotators=20, records_per_annotator=60, rng=4)
    keep = ~((sim.annotator == 5) & (np.cumsum(sim.annotator == 5) > 4))  # one pending
    a, b, k = sim.model_a[keep], sim.model_b[keep], sim.annotator[keep]
    w = perturb_outcomes(sim.outcome[keep], k, [0, 1, 2], strategy="flip")
    w = perturb_outcomes(w, k, [3], strategy="random", rng=1)
    gen = np.random.default_rng(0)
    left = gen.random(w.size) < 0.5
    fast = gen.random(w.size) < np.where(k == 6, 0.9, 0.05)  # one too fast
    opts = {"n_annotators": 21, "action": action, "left_chosen": left, "fast": fast}
    got = stable_arena(a, b, k, w, **opts)
    monkeypatch.setattr(arena._VoteCells, "of", staticmethod(lambda *args: None))
    ref = stable_arena(a, b, k, w, **opts)
    assert got.status == ref.status
    assert got.reasons == ref.reasons
    assert [[f.reason for f in fl] for fl in got.flags] == [
        [f.reason for f in fl] for fl in ref.flags
    ]
    for fl, rl in zip(got.flags, ref.flags, strict=True):
        for f, r in zip(fl, rl, strict=True):  # p-values from z summed in another order
            assert (f.statistic, f.threshold) == pytest.approx((r.statistic, r.threshold))
            assert f.p_value == pytest.approx(r.p_value, rel=1e-9)
    assert got.votes_to_verdict == ref.votes_to_verdict
    assert {"flagged", "reliable", "pending"} <= set(got.status)
    np.testing.assert_allclose(got.ratings, ref.ratings, rtol=1e-12)
    np.testing.assert_allclose(got.abilities, ref.abilities, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.lower, ref.lower, rtol=1e-12)
    assert got.scale_bias == pytest.approx(ref.scale_bias, rel=1e-12)
