"""The monitor's vote arrays kept across refreshes (annotate.services.monitoring._VoteArrays).

Each refresh appends the new rows and drops the superseded ones instead of rebuilding
the fit's and the signals' inputs from every current vote. The reference is that
rebuild: after random sequences of new votes, changes of mind and undos (drawn by
hypothesis), the kept arrays equal the arrays computed from scratch from the current
rows, and the signals computed from the per-annotator counts equal
:func:`ranking.reliability.vote_rates`, :func:`ranking.reliability.position_bias` and
per-vote counts of timed and fast votes on the same votes.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.choices import Outcome
from annotate.services.monitoring import (
    MAJORITY_LABEL,
    WIN_SHARE,
    _Column,
    _removed,
    _signals,
    _VoteArrays,
)
from ranking.reliability import position_bias, vote_rates


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.integers(0, 2**32 - 1), st.floats(0.0, 1.0))
def test_removed_finds_the_dropped_ids(n: int, seed: int, share: float) -> None:
    """Expected: the positions of the ids not kept, by a set difference (np.isin); few
    removals take the comparison path, many the set difference."""
    rng = np.random.default_rng(seed)
    held = np.cumsum(rng.integers(1, 4, n))
    gone = rng.random(n) < share * rng.choice([0.02, 1.0])
    kept = held[~gone]
    got = _removed(held, kept)
    if not gone.any():
        assert got is None
    else:
        assert got is not None
        np.testing.assert_array_equal(got, np.flatnonzero(~np.isin(held, kept)))
    if kept.size:  # not a subset: None
        assert _removed(held, np.append(kept[:-1], held[-1] + 1)) is None


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 200), st.integers(0, 2**32 - 1), st.integers(0, 80))
def test_column_drop_equals_np_delete(n: int, seed: int, n_drop: int) -> None:
    """Expected: np.delete of the same positions."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1000, n)
    col = _Column(np.int64)
    col.append(x[: n // 2])
    col.append(x[n // 2 :])
    pos = np.unique(rng.integers(0, max(n, 1), min(n_drop, n))) if n else np.zeros(0, np.int64)
    col.drop(pos.astype(np.int64))
    np.testing.assert_array_equal(col.view, np.delete(x, pos))


def _rows(rng: np.random.Generator, first_id: int, n: int, n_ann: int) -> np.ndarray:
    """Vote rows as repo.vote_rows_after gives them (supersedes column 0)."""
    rows = np.zeros((n, 8), dtype=np.int64)
    rows[:, 0] = first_id + np.arange(n)
    rows[:, 1] = rng.integers(0, 12, n)  # item id (positions: item_pos below)
    rows[:, 2] = 100 + rng.integers(0, n_ann, n)  # annotator ids
    rows[:, 3] = rng.integers(0, int(max(Outcome)) + 1, n)
    rows[:, 4] = rng.integers(0, 2, n)
    rows[:, 5] = np.where(rng.random(n) < 0.2, -1, rng.integers(100, 9000, n))
    rows[:, 6] = rng.integers(0, 2, n)
    return rows


ITEM_POS = np.arange(12, dtype=np.int64)
ENT_A = np.array([0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3], dtype=np.int64)
ENT_B = (ENT_A + 1 + np.arange(12) % 3) % 5


def _fresh(cur: np.ndarray, lut: np.ndarray, n_ann: int) -> _VoteArrays:
    arrays = _VoteArrays(ITEM_POS)
    arrays.update(cur, lut, ENT_A, ENT_B, n_ann)
    return arrays


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 8))
def test_kept_arrays_equal_a_rebuild_after_votes_changes_and_undos(seed: int, rounds: int) -> None:
    """Expected: _VoteArrays built in one go from the final current rows, and the per-vote
    fields written out here (decided votes: item, entities, win share, both bad, side
    chosen, majority label; every vote: the signal counts by np.add.at)."""
    rng = np.random.default_rng(seed)
    n_ann = 5
    lut = np.full(200, -1, dtype=np.int64)
    lut[100 + np.arange(n_ann)] = rng.permutation(n_ann)
    kept = _VoteArrays(ITEM_POS)
    cur = np.zeros((0, 8), dtype=np.int64)
    next_id = 1
    for _ in range(rounds):
        new = _rows(rng, next_id, int(rng.integers(0, 30)), n_ann)
        next_id += len(new) + int(rng.integers(0, 3))
        if len(cur):  # changes of mind and undos: superseded rows leave the current ones
            gone = rng.random(len(cur)) < rng.choice([0.02, 0.1, 0.6])
            cur = cur[~gone]
        cur = np.concatenate([cur, new])
        kept.update(cur, lut, ENT_A, ENT_B, n_ann)
        ref = _fresh(cur, lut, n_ann)
        for group in ("all", "dec"):
            for name, col in getattr(ref, group).items():
                np.testing.assert_array_equal(getattr(kept, group)[name].view, col.view)
        np.testing.assert_array_equal(kept.signal_counts, ref.signal_counts)
    # the rebuild itself against the fields written out vote by vote
    ref = _fresh(cur, lut, n_ann)
    d = cur[:, 3] != Outcome.SKIP
    ch = cur[d, 3]
    win = np.select([ch == Outcome.FIRST, ch == Outcome.SECOND], [1.0, 0.0], 0.5)
    swapped = cur[d, 4] == 1
    np.testing.assert_array_equal(ref.dec["ids"].view, cur[d, 0])
    np.testing.assert_array_equal(ref.dec["ann"].view, lut[cur[d, 2]])
    np.testing.assert_array_equal(ref.dec["a"].view, ENT_A[cur[d, 1]])
    np.testing.assert_array_equal(ref.dec["b"].view, ENT_B[cur[d, 1]])
    np.testing.assert_array_equal(ref.dec["outcome"].view, win)
    np.testing.assert_array_equal(ref.dec["both_bad"].view, ch == Outcome.BOTH_BAD)
    left = np.where(swapped, ch == Outcome.SECOND, ch == Outcome.FIRST)
    np.testing.assert_array_equal(ref.dec["left"].view, left)
    np.testing.assert_array_equal(ref.dec["label"].view, MAJORITY_LABEL[ch])
    counts = np.zeros((n_ann, 5, 2, 2, 2), dtype=np.int64)
    np.add.at(
        counts,
        (lut[cur[:, 2]], cur[:, 3], cur[:, 4], cur[:, 6], (cur[:, 5] >= 0).astype(int)),
        1,
    )
    np.testing.assert_array_equal(ref.signal_counts, counts.reshape(n_ann, -1))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 72))
def test_signals_from_counts_equal_the_per_vote_signals(seed: int, n: int) -> None:
    """Expected: vote_rates and position_bias on every vote (the monitor's earlier
    per-vote path: win share per choice, left side from the swap), and the timed and
    fast counts by np.bincount; equal exactly (the same counts into the same formulas)."""
    rng = np.random.default_rng(seed)
    n_ann = 6
    rows = _rows(rng, 1, n, n_ann)
    rows[:, 1] = np.arange(n) % 12  # at most one vote per annotator and item: none repeated
    rows[:, 2] = 100 + (np.arange(n) // 12) % n_ann
    lut = np.full(200, -1, dtype=np.int64)
    lut[100 + np.arange(n_ann)] = np.arange(n_ann)
    arrays = _fresh(rows, lut, n_ann)
    names = [f"a{j}" for j in range(n_ann)]
    votes = arrays.votes(names, n, np.arange(n_ann), arrays.signal_counts)
    sig = _signals(votes, np.zeros(12))
    k, ch = rows[:, 2] - 100, rows[:, 3]
    skipped, both_bad = ch == Outcome.SKIP, ch == Outcome.BOTH_BAD
    outcome = WIN_SHARE[ch]
    left = np.where(rows[:, 4] == 1, 1.0 - outcome, outcome)
    rates = vote_rates(k, outcome, both_bad=both_bad, skipped=skipped, n_annotators=n_ann)
    pos = position_bias(k, left, both_bad=both_bad, skipped=skipped, n_annotators=n_ann)
    filled = lambda x: np.ma.filled(np.ma.MaskedArray(x, dtype=float), np.nan)  # noqa: E731
    np.testing.assert_array_equal(sig.tie, filled(rates.tie_rate))
    np.testing.assert_array_equal(sig.both_bad, filled(rates.both_bad_rate))
    np.testing.assert_array_equal(sig.skip, filled(rates.skip_rate))
    np.testing.assert_array_equal(sig.n_votes, rates.n_votes)
    np.testing.assert_array_equal(sig.left, filled(pos.left_share))
    np.testing.assert_array_equal(sig.left_p, filled(pos.p_value))
    np.testing.assert_array_equal(sig.n_decisive, pos.n_decisive)
    timed = rows[:, 5] >= 0
    n_timed = np.bincount(k[timed], minlength=n_ann)
    n_fast = np.bincount(k[timed & (rows[:, 6] == 1)], minlength=n_ann)
    np.testing.assert_array_equal(sig.n_timed, n_timed)
    expected = np.where(n_timed > 0, n_fast / np.maximum(n_timed, 1), np.nan)
    np.testing.assert_array_equal(sig.fast, expected)


def _append_earlier(
    arrays: _VoteArrays, new: np.ndarray, lut: np.ndarray, ent_a: np.ndarray, ent_b: np.ndarray
) -> None:
    """The reference: _VoteArrays._append as it was at commit 988cd38 (each decided
    field by 2-D boolean indexing of the rows, the win share compared for the side)."""
    if not len(new):
        return
    ann = lut[new[:, 2]]
    ch = new[:, 3]
    swapped = new[:, 4].astype(bool)
    fast = new[:, 6].astype(bool)
    key = ch * 8 + swapped * 4 + fast * 2 + (new[:, 5] >= 0)
    for name, col in (("ids", new[:, 0]), ("ann", ann), ("key", key)):
        arrays.all[name].append(col)
    arrays._count(ann, key, 1)
    d = ch != Outcome.SKIP
    it = arrays.item_pos[new[d, 1]]
    outcome = WIN_SHARE[ch[d]]
    fields = {
        "ids": new[d, 0],
        "ann": ann[d],
        "item": it,
        "a": ent_a[it],
        "b": ent_b[it],
        "outcome": outcome,
        "both_bad": ch[d] == Outcome.BOTH_BAD,
        "left": np.where(swapped[d], outcome == 0.0, outcome == 1.0),
        "fast": fast[d],
        "label": MAJORITY_LABEL[ch[d]],
    }
    for name, col in fields.items():
        arrays.dec[name].append(col)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.lists(st.integers(0, 90), min_size=1, max_size=4),
    st.sampled_from([0.0, 0.1, 0.5, 1.0]),
)
def test_appends_equal_the_earlier_appends(seed: int, sizes: list[int], skip_share: float) -> None:
    """Expected: the appends of the earlier implementation (_append_earlier): every
    column (values and dtype) and the signal counts equal, after reads of 0 to 90 rows
    with no skip, some, or only skips, every choice code, swapped or not, timed or not."""
    rng = np.random.default_rng(seed)
    n_ann = 7
    lut = np.full(200, -1, dtype=np.int64)
    lut[100 + np.arange(n_ann)] = rng.permutation(n_ann)
    got, ref = _VoteArrays(ITEM_POS), _VoteArrays(ITEM_POS)
    ref.signal_counts = np.zeros((n_ann, got.signal_counts.shape[1]), dtype=np.int64)
    got.signal_counts = ref.signal_counts.copy()
    first = 1
    for n in sizes:
        new = _rows(rng, first, n, n_ann)
        new[:, 3] = np.where(
            rng.random(n) < skip_share, Outcome.SKIP, rng.integers(1, int(max(Outcome)) + 1, n)
        )
        first += n
        got._append(new, lut, ENT_A, ENT_B)
        _append_earlier(ref, new, lut, ENT_A, ENT_B)
        for group in ("all", "dec"):
            for name, col in getattr(ref, group).items():
                mine = getattr(got, group)[name].view
                assert mine.dtype == col.view.dtype
                np.testing.assert_array_equal(mine, col.view)
        np.testing.assert_array_equal(got.signal_counts, ref.signal_counts)
