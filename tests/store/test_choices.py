"""One vocabulary of choices (issue 11, item 5): the enum, its one mapping to outcome
codes, and the SQL generated from it agree everywhere the store hands out codes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlmodel import Session

from annotate.choices import (
    ARENA_CHOICES,
    DIFFICULTY_CHOICES,
    LEFT_CHOICES,
    OUTCOME,
    Choice,
    Outcome,
    choices_for,
    outcome_sql,
)
from annotate.services.arrays import vote_arrays
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.votes_io import VALID_CHOICES, VALID_LEFT
from annotate.store import repo

DATA = Path(__file__).resolve().parent.parent / "data"


def test_every_choice_has_one_outcome() -> None:
    assert set(OUTCOME) == set(Choice)
    assert OUTCOME[Choice.RETRACT] == Outcome.RETRACTED
    for kind in ("difficulty", "arena"):
        first, second = LEFT_CHOICES[kind]
        assert (OUTCOME[first], OUTCOME[second]) == (Outcome.FIRST, Outcome.SECOND)
        codes = [OUTCOME[c] for c in choices_for(kind)]
        assert len(set(codes)) == len(codes)  # a kind's choices are told apart by code
    assert set(DIFFICULTY_CHOICES) | set(ARENA_CHOICES) | {Choice.RETRACT} == set(Choice)
    assert frozenset(c.value for c in Choice) == VALID_CHOICES  # the importers' vocabulary
    assert {c.value for pair in LEFT_CHOICES.values() for c in pair} == VALID_LEFT


@pytest.mark.parametrize("value", [*(c.value for c in Choice), "nonsense", ""])
def test_the_sql_case_is_the_mapping(value: str) -> None:
    con = sqlite3.connect(":memory:")
    (code,) = con.execute(f"SELECT {outcome_sql('?1')}", (value,)).fetchone()
    known = {c.value: int(o) for c, o in OUTCOME.items()}
    assert code == known.get(value, int(Outcome.RETRACTED))


def test_arrays_and_the_monitor_read_the_same_codes(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [DATA / "studies" / "tiny-difficulty", DATA / "studies" / "tiny-arena"])
    for study in ("tiny", "tiny-arena"):
        with Session(engine) as s, s.begin():
            row = repo.get_study(s, study)
            assert row is not None
            items = [i for i, _ in repo.item_keys(s, row.id)]
            choices = choices_for(row.kind)
            stored: list[Choice] = []
            for n, choice in enumerate(choices):
                aid = repo.annotator_id(s, f"ann-{n}")
                assert aid is not None
                vote = repo.insert_vote(
                    s,
                    study_id=row.id,
                    annotator=aid,
                    item_id=items[0],
                    choice=choice,
                    swapped=False,
                    response_ms=None,
                    fast=False,
                    supersedes=None,
                )
                stored.append(choice)
            repo.insert_vote(  # the last vote is withdrawn
                s,
                study_id=row.id,
                annotator=vote.annotator_id,
                item_id=items[0],
                choice=Choice.RETRACT,
                swapped=False,
                response_ms=None,
                fast=False,
                supersedes=vote.uuid,
            )
            log = repo.vote_rows_after(s, row.id, 0)
        arrays = vote_arrays(engine, study)
        assert arrays.choice.tolist() == [OUTCOME[c] for c in stored[:-1]]
        assert [r[3] for r in log] == [*(OUTCOME[c] for c in stored), Outcome.RETRACTED]
