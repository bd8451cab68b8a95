"""Scheduling as the screens see it: deterministic order, balanced sides, overlap."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sqlalchemy import Engine

from annotate.services import schedule
from annotate.services.voting import VotingSession
from annotate.store.repo import ItemLoad
from tests.annotate.conftest import rows

ITEMS = [ItemLoad(i, f"p{i:02d}", i, "s", 0) for i in range(40)]


def test_order_and_sides_are_deterministic_per_annotator() -> None:
    def q(name: str, seed: int = 0) -> list[str]:
        return [
            it.key
            for it in schedule.queue(
                "st", name, seed, ITEMS, done=set(), excluded_subjects=set(), overlap=0
            )
        ]

    assert q("ada") == q("ada")
    assert q("ada") != q("bob")
    assert q("ada", 1) != q("ada", 0)
    assert sorted(q("ada")) == sorted(it.key for it in ITEMS)
    sides = [schedule.swapped("st", "ada", 0, it.key) for it in ITEMS]
    assert sides == [schedule.swapped("st", "ada", 0, it.key) for it in ITEMS]


def test_each_item_is_shown_first_about_half_the_time() -> None:
    annotators = [f"annotator-{i}" for i in range(400)]
    swapped = np.array([[schedule.swapped("st", a, 0, it.key) for it in ITEMS] for a in annotators])
    per_item = swapped.mean(axis=0)
    # 400 fair coin flips: the standard error is 0.025; 0.5 +- 0.1 is four of them
    assert np.all(np.abs(per_item - 0.5) < 0.1), per_item
    assert abs(swapped.mean() - 0.5) < 0.02
    # positions are balanced too: each item is first in the queue for about 1/40
    firsts = [
        schedule.queue("st", a, 0, ITEMS, done=set(), excluded_subjects=set(), overlap=0)[0]
        for a in annotators
    ]
    counts = np.bincount([f.item_id for f in firsts], minlength=len(ITEMS))
    assert counts.max() < 30


def test_queue_prefers_items_with_fewest_judgments() -> None:
    loads = [ItemLoad(i, f"b{i}", i, "", votes) for i, votes in enumerate([3, 0, 2, 1, 0, 5])]
    q = schedule.queue("st", "ada", 0, loads, done=set(), excluded_subjects=set(), overlap=5)
    assert [it.votes for it in q] == [0, 0, 1, 2, 3]  # the item at the cap is left out


def test_side_shown_is_stored_with_the_vote(engine: Engine, db_path: Path) -> None:
    s = VotingSession(engine, "demo-difficulty", "ada")
    for _ in range(10):
        cur = s.current()
        assert cur is not None
        s.vote("left", 2000)
    stored = rows(
        db_path,
        "SELECT i.key, v.swapped, v.choice FROM vote v JOIN item i ON i.id = v.item_id",
    )
    for key, swapped, choice in stored:
        assert bool(swapped) == schedule.swapped("demo-difficulty", "ada", 0, key)
        assert choice == ("second" if swapped else "first")


def test_overlap_sends_new_annotators_to_the_least_judged(engine: Engine, db_path: Path) -> None:
    first = VotingSession(engine, "demo-arena", "one")
    judged = set()
    for _ in range(10):
        cur = first.current()
        assert cur is not None
        judged.add(cur.item_id)
        first.vote("tie", 3000)
    second = VotingSession(engine, "demo-arena", "two")
    for _ in range(10):
        cur = second.current()
        assert cur is not None
        assert cur.item_id not in judged  # 86 battles have no judgment yet
        second.vote("tie", 3000)


def test_overlap_is_never_exceeded_by_sequential_annotators(engine: Engine, db_path: Path) -> None:
    for i in range(7):
        s = VotingSession(engine, "demo-arena", f"a{i}")
        while s.current() is not None:
            s.vote("a", 3000)
    counts = [c for (c,) in rows(db_path, "SELECT count(*) FROM current_vote GROUP BY item_id")]
    assert max(counts) == 5  # overlap = 5 in demo-arena
    assert sum(counts) == 96 * 5


def test_one_person_one_schedule_whatever_the_spelling(engine: Engine) -> None:
    """'Alice ' and 'ALICE' are the stored 'alice': same person, same order and sides."""
    first = VotingSession(engine, "demo-difficulty", "Alice ")
    shown = first.current()
    assert shown is not None
    first.vote("left", 1500)
    again = VotingSession(engine, "demo-difficulty", "ALICE")
    assert again.annotator == "alice"
    assert again.annotator_id == first.annotator_id
    assert again.progress().done == 1
    ref = VotingSession(engine, "demo-difficulty", "alice")
    nxt, ref_nxt = again.current(), ref.current()
    assert nxt is not None
    assert ref_nxt is not None
    assert (nxt.item_id, nxt.swapped) == (ref_nxt.item_id, ref_nxt.swapped)
