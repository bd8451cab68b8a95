"""The adaptive schedule's estimates count a large read of vote rows by array operations
(:meth:`AdaptiveEstimates._count_table`, issue 13: the session open of a 100,000-vote
study) to exactly the state the rows counted one by one give (:meth:`_count_rows`, the
code that was the only path before): the same ``counted`` rows, the same counts of the
fit (compared bit for bit), the same number of votes pending a refit, and the same
current-vote counts per item, which are checked against the definition of the
``current_vote`` view (rows neither retracted nor superseded) computed here directly."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from annotate.choices import Outcome
from annotate.services import adaptive

N_ITEMS = 40
PAIRS = {1000 + 3 * i: (f"m{i % 7}", f"m{(i + 1 + i // 7) % 7}") for i in range(N_ITEMS)}
"""Item id -> its two players (never the same one: ``i // 7`` stays below 6)."""
CODES = [int(o) for o in Outcome]


def _rows(rng: np.random.Generator, n: int) -> list[tuple[int, ...]]:
    """``n`` vote rows (the columns of ``repo.vote_outcomes_after``): votes, changes of mind,
    retractions and votes again, skips, an item of another study; ids with gaps."""
    items = sorted(PAIRS)
    rows: list[tuple[int, ...]] = []
    heads: dict[tuple[int, int], int] = {}
    row_id = 10
    for _ in range(n):
        row_id += int(rng.integers(1, 4))
        ann = int(rng.integers(0, 12))
        item = items[int(rng.integers(0, len(items)))] if rng.random() > 0.02 else 7
        code = CODES[int(rng.integers(0, len(CODES)))]
        head = heads.get((ann, item))
        superseded = head if head is not None and rng.random() < 0.7 else 0
        if head is not None and not superseded:
            continue  # one chain per annotator and item
        rows.append((row_id, item, code, superseded))
        heads[(ann, item)] = row_id
    return rows


def _state(est: adaptive.AdaptiveEstimates) -> tuple[object, ...]:
    m = est.model
    return (
        dict(est.counted),
        dict(est._uncounted),
        est._uncounted_per_item.tolist(),
        m.wins.tobytes(),
        m.counts.tobytes(),
        m._pair_wins.tobytes(),
        m._pair_counts.tobytes(),
        m.pending,
        est.last_id,
        est.current_votes(),
    )


def _current(rows: list[tuple[int, ...]]) -> dict[int, int]:
    """Current votes per item straight from the ``current_vote`` view's definition."""
    gone = {r[3] for r in rows if r[3]}
    out: dict[int, int] = {}
    for r in rows:
        if r[0] not in gone and r[2] != int(Outcome.RETRACTED) and r[1] in PAIRS:
            out[r[1]] = out.get(r[1], 0) + 1
    return out


@pytest.mark.parametrize("seed", range(6))
def test_counting_a_table_equals_counting_row_by_row(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = _rows(rng, 3000)
    cuts = sorted({0, len(rows), *rng.integers(0, len(rows), size=4).tolist()})
    one = adaptive.AdaptiveEstimates(1, "arena", PAIRS)
    bulk = adaptive.AdaptiveEstimates(1, "arena", PAIRS)
    for lo, hi in itertools.pairwise(cuts):  # several reads, in order
        if hi == lo:
            continue
        one._count_rows(rows[lo:hi])
        bulk._count_table(np.array(rows[lo:hi], dtype=np.int64))
        assert _state(bulk) == _state(one)
        assert one.current_votes() == _current(rows[:hi])
    assert one.model.pending > len(rows)  # removals counted too
    assert any(r[3] for r in rows)
    assert any(r[2] == int(Outcome.SKIP) for r in rows)
