"""The monitor's current rows after a change of mind or an undo (issue 13).

A read whose new rows supersede a few current ones removes those from the kept current
rows in place instead of rebuilding them from every row read. The reference is the
definition: the current rows are the rows read so far that are still alive (neither
superseded nor a retraction), oldest first, ``rows[alive]``, and they are the rows of the
``current_vote`` view (read through :func:`repo.current_vote_codes`'s columns by
:meth:`StudyMonitor.current_votes` of a monitor opened cold). A view handed out by
``current_votes`` keeps its values through later reads. The arrays behind it
(``_Grow``, ``_Column``) drop entries in place, moving the shorter side; their reference
is ``np.delete``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from annotate.services.db import open_store
from annotate.services.monitoring import StudyMonitor, _Column, _Grow
from annotate.services.voting import VotingSession
from tests.annotate.test_monitor_incremental import _allow_undo
from tests.annotate.test_monitoring_service import HONEST, vote_arena


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return open_store(tmp_path / "v.db", seed_demo=True)


def _check(mon: StudyMonitor, engine: Engine, where: str) -> None:
    rows, alive = mon._rows.view, mon._alive.view
    np.testing.assert_array_equal(mon._current.view, rows[alive], err_msg=where)
    cold, _ = StudyMonitor(engine, "demo-arena").current_votes()
    np.testing.assert_array_equal(mon._current.view[:, 1:7], cold, err_msg=where)


def test_changes_of_mind_and_undos_keep_the_current_rows(engine: Engine, monkeypatch) -> None:
    """Expected: after every read (one or several actions, new votes, undos, changes of
    mind), the kept current rows equal ``rows[alive]`` and a cold monitor's current votes."""
    _allow_undo(engine, "demo-arena")
    for i, name in enumerate(HONEST[:3]):
        vote_arena(engine, name, seed=i, limit=10)
    mon = StudyMonitor(engine, "demo-arena")
    mon.snapshot()
    drops: list[int] = []
    grow_drop = _Grow.drop
    monkeypatch.setattr(
        _Grow, "drop", lambda self, pos: (drops.append(pos.size), grow_drop(self, pos))
    )
    rng = np.random.default_rng(5)
    people = [*HONEST[:3], "eve"]
    undos = changes = 0
    for round_ in range(14):
        for _ in range(int(rng.integers(1, 4))):
            who = people[int(rng.integers(len(people)))]
            action = rng.choice(["vote", "undo", "change"], p=[0.3, 0.3, 0.4])
            session = VotingSession(engine, "demo-arena", who)
            if action == "vote":
                vote_arena(engine, who, seed=int(rng.integers(1 << 30)), limit=2)
            elif action == "undo":
                undos += session.undo()
            elif session.undo() and session.current() is not None:
                session.vote(str(rng.choice(["a", "b", "tie"])), 4000)
                changes += 1
        mon.snapshot()
        _check(mon, engine, f"round {round_}")
    assert undos > 0
    assert changes > 0
    assert drops, "no read removed rows in place"


def test_a_view_handed_out_keeps_its_values(engine: Engine) -> None:
    """Expected: the columns ``current_votes`` returned are unchanged by a later change of
    mind (the next read rebuilds the rows instead of moving them under that view)."""
    _allow_undo(engine, "demo-arena")
    vote_arena(engine, HONEST[0], seed=1, limit=8)
    vote_arena(engine, HONEST[1], seed=2, limit=8)
    mon = StudyMonitor(engine, "demo-arena")
    cols, _ = mon.current_votes()
    before = cols.copy()
    session = VotingSession(engine, "demo-arena", HONEST[0])
    assert session.undo()
    session.vote("b", 4000)
    mon.snapshot()
    np.testing.assert_array_equal(cols, before)
    _check(mon, engine, "after the handed-out view")
    assert not mon._current_shared
    assert session.undo()  # now in place: still the definition
    mon.snapshot()
    _check(mon, engine, "in place")


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.lists(st.tuples(st.booleans(), st.integers(0, 80)), min_size=1, max_size=12),
    st.booleans(),
)
def test_grow_and_column_drop_and_append_equal_numpy(seed, steps, two_d) -> None:
    """Expected: ``np.delete`` and ``np.concatenate`` on a plain array (the reference), after
    every drop (few or many entries, near the start or the end: either side moves) and every
    append (which may reallocate the buffer after the start moved)."""
    rng = np.random.default_rng(seed)
    shape = (0, 3) if two_d else (0,)
    ref = np.zeros(shape, dtype=np.int64)
    grow = _Grow(ref.copy()) if two_d else _Column(np.int64)
    nxt = 0
    for is_drop, size in steps:
        if is_drop and ref.shape[0]:
            k = min(size, ref.shape[0])
            pos = np.sort(rng.choice(ref.shape[0], size=k, replace=False))
            if rng.random() < 0.5:  # a few at one end
                pos = np.arange(min(2, ref.shape[0])) + (
                    0 if rng.random() < 0.5 else max(0, ref.shape[0] - 2)
                )
            grow.drop(pos.astype(np.int64))
            ref = np.delete(ref, pos, axis=0)
        else:
            new = np.arange(nxt, nxt + size * (3 if two_d else 1)).reshape(-1, *shape[1:])
            nxt += new.size
            grow.append(new)
            ref = np.concatenate([ref, new])
        np.testing.assert_array_equal(grow.view, ref)
        assert grow.n == ref.shape[0]
