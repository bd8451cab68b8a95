"""Typed study settings (issue 11, item 4): per-kind defaults, one clear error for a bad
value (in ``study.toml`` and in the store), and one overlap rule for every call site."""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.choices import Choice
from annotate.errors import AnnotateError, InputFileError
from annotate.services import schedule
from annotate.services.db import open_store
from annotate.services.exporting import write_study_folder
from annotate.services.importing import import_paths
from annotate.services.studies import parse_study
from annotate.services.voting import VotingSession, study_progress
from annotate.store import repo
from annotate.store.repo import ItemLoad, StudyRow
from annotate.study_settings import (
    ARENA_DEFAULTS,
    DIFFICULTY_DEFAULTS,
    SettingError,
    StudySettings,
    setting_names,
    takes_votes,
)

DATA = Path(__file__).resolve().parent.parent / "data"
TINY_ARENA = DATA / "studies" / "tiny-arena"
TINY_DIFFICULTY = DATA / "studies" / "tiny-difficulty"


# --- per-kind defaults ------------------------------------------------------------------


def test_per_kind_defaults() -> None:
    d, a = StudySettings.for_kind("difficulty"), StudySettings.for_kind("arena")
    assert (d.overlap, d.min_response_ms, d.reveal_models, d.render_markdown) == (
        0,
        1500,
        False,
        False,
    )
    assert (a.overlap, a.min_response_ms, a.reveal_models, a.render_markdown) == (
        5,
        2000,
        True,
        True,
    )
    assert d.seed == a.seed == 0
    assert d.instructions == a.instructions == ""
    assert d.identity_phrases == a.identity_phrases == ()
    assert "identity_phrases" not in setting_names("difficulty")
    assert "identity_phrases" in setting_names("arena")


def test_stored_json_is_the_same_as_before() -> None:
    # the JSON written to study.settings_json keeps the keys (and values) it always had
    assert DIFFICULTY_DEFAULTS.as_dict() == {
        "overlap": 0,
        "seed": 0,
        "file_order": False,
        "min_response_ms": 1500,
        "reveal_models": False,
        "render_markdown": False,
        "instructions": "",
    }
    assert ARENA_DEFAULTS.as_dict() == {
        "overlap": 5,
        "seed": 0,
        "file_order": False,
        "min_response_ms": 2000,
        "reveal_models": True,
        "identity_phrases": [],
        "render_markdown": True,
        "instructions": "",
    }


def test_a_study_file_gives_typed_settings_over_the_kind_defaults() -> None:
    spec = parse_study(TINY_ARENA)  # [settings] overlap = 2 only
    assert spec.settings == replace(ARENA_DEFAULTS, overlap=2)
    assert parse_study(TINY_DIFFICULTY).settings.kind == "difficulty"


def test_the_stored_study_carries_its_settings(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [TINY_ARENA, TINY_DIFFICULTY])
    with Session(engine) as s:
        arena = repo.get_study(s, "tiny-arena")
        diff = repo.get_study(s, "tiny")
    assert arena is not None
    assert diff is not None
    assert isinstance(arena.settings, StudySettings)
    assert arena.settings.overlap == 2
    assert arena.settings.reveal_models is True
    assert diff.settings == replace(DIFFICULTY_DEFAULTS, seed=3)  # its study.toml: seed = 3


def test_a_key_missing_from_the_stored_json_takes_the_kind_default(tmp_path: Path) -> None:
    # voting.py used to read a missing overlap as 0 while the arena default is 5
    db = tmp_path / "v.db"
    engine = open_store(db)
    import_paths(engine, [TINY_ARENA])
    engine.dispose()
    with sqlite3.connect(db) as con:
        con.execute("UPDATE study SET settings_json = '{}' WHERE name = 'tiny-arena'")
    engine = open_store(db)
    with Session(engine) as s:
        st_row = repo.get_study(s, "tiny-arena")
    assert st_row is not None
    assert st_row.settings == ARENA_DEFAULTS
    assert VotingSession(engine, "tiny-arena", "ann").overlap == 5


# --- one clear error for a bad value --------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "field", "expected"),
    [
        ("overlap = -1", "settings.overlap", "a whole number >= 0"),
        ('overlap = "5"', "settings.overlap", "a whole number >= 0"),
        ("overlap = true", "settings.overlap", "a whole number >= 0"),
        ("reveal_models = 1", "settings.reveal_models", "true or false"),
        ('identity_phrases = ["ok", " "]', "settings.identity_phrases", "non-empty strings"),
        ("instructions = 3", "settings.instructions", "a string of at most"),
        ("colour = 3", "settings.colour", "one of overlap, seed"),
    ],
)
def test_a_bad_setting_in_study_toml_is_one_line(
    tmp_path: Path, table: str, field: str, expected: str
) -> None:
    folder = tmp_path / "s"
    shutil.copytree(TINY_ARENA, folder)
    (folder / "study.toml").write_text(
        f'name = "s"\nkind = "arena"\n\n[settings]\n{table}\n', encoding="utf-8"
    )
    with pytest.raises(InputFileError) as info:
        parse_study(folder)
    message = str(info.value)
    assert "\n" not in message
    assert "study.toml" in message
    assert field in message
    assert expected in message


def test_identity_phrases_is_not_a_difficulty_setting() -> None:
    with pytest.raises(SettingError, match="unknown setting identity_phrases"):
        StudySettings.from_dict("difficulty", {"identity_phrases": ["x"]})


@pytest.mark.parametrize(
    ("stored", "words"),
    [
        ('{"overlap": -2}', "overlap = -2: expected a whole number >= 0"),
        ('{"reveal_models": "yes"}', "reveal_models = 'yes': expected true or false"),
        ("[1, 2]", "expected a JSON object"),
        ("{not json", "bad stored settings"),
    ],
)
def test_a_bad_stored_setting_is_one_line(tmp_path: Path, stored: str, words: str) -> None:
    db = tmp_path / "v.db"
    engine = open_store(db)
    import_paths(engine, [TINY_ARENA])
    engine.dispose()
    with sqlite3.connect(db) as con:
        con.execute("UPDATE study SET settings_json = ? WHERE name = 'tiny-arena'", (stored,))
    engine = open_store(db)
    with pytest.raises(AnnotateError) as info:
        VotingSession(engine, "tiny-arena", "ann")
    message = str(info.value)
    assert "\n" not in message
    assert "tiny-arena" in message
    assert words in message


def test_an_unknown_stored_key_is_ignored(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    engine = open_store(db)
    import_paths(engine, [TINY_ARENA])
    engine.dispose()
    with sqlite3.connect(db) as con:
        con.execute(
            "UPDATE study SET settings_json = json_set(settings_json, '$.later', 1) "
            "WHERE name = 'tiny-arena'"
        )
    with Session(open_store(db)) as s:
        row = repo.get_study(s, "tiny-arena")
    assert row is not None
    assert row.settings.overlap == 2


def test_the_exported_study_toml_reimports_as_the_same_settings(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [TINY_ARENA])
    with Session(engine) as s:
        row = repo.get_study(s, "tiny-arena")
        assert row is not None
        write_study_folder(s, row, tmp_path / "out")
    assert parse_study(tmp_path / "out").settings == row.settings


# --- one overlap rule at every call site -----------------------------------------------


def test_takes_votes_semantics() -> None:
    assert takes_votes(0, 0)
    assert takes_votes(0, 99)
    assert takes_votes(2, 1)
    assert not takes_votes(2, 2)
    assert not takes_votes(2, 3)
    assert StudySettings(overlap=1).takes_votes(0)
    assert not StudySettings(overlap=1).takes_votes(1)


ITEMS = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 3), st.booleans(), st.sampled_from("xy")),
    min_size=1,
    max_size=24,
)
"""Per item: (current votes, live reservations of others, done by me, subject)."""


@settings(max_examples=200, deadline=None)
@given(overlap=st.integers(0, 4), items=ITEMS)
def test_schedule_queue_keeps_exactly_the_items_that_take_votes(
    overlap: int, items: list[tuple[int, int, bool, str]]
) -> None:
    loads = [ItemLoad(i, f"k{i}", i, subj, votes) for i, (votes, _, _, subj) in enumerate(items)]
    done = {i for i, (_, _, mine, _) in enumerate(items) if mine}
    queue = schedule.queue(
        "s", "ann", 0, loads, done=done, excluded_subjects={"y"}, overlap=overlap
    )
    assert {it.item_id for it in queue} == {
        it.item_id
        for it in loads
        if it.item_id not in done and it.subject != "y" and takes_votes(overlap, it.votes)
    }


@settings(max_examples=200, deadline=None)
@given(overlap=st.integers(1, 4), items=ITEMS)
def test_pick_and_hold_uses_the_same_rule(
    overlap: int, items: list[tuple[int, int, bool, str]]
) -> None:
    """The live pick (votes plus others' holds) uses the rule the queue and progress use."""
    rules = StudySettings(kind="arena", overlap=overlap)
    session = object.__new__(VotingSession)
    session.settings = rules
    session.overlap = overlap
    session.study = StudyRow(1, "s", "arena", "", "", rules, "")
    session.annotator_id = 1
    session._undone_first = False
    loads = [ItemLoad(i, f"k{i}", i, "", v) for i, (v, _, _, _) in enumerate(items)]
    slots = {i: (v, h) for i, (v, h, _, _) in enumerate(items)}

    def item_slots(
        _s: object, _st: int, _a: int, ids: list[int], _now: float
    ) -> dict[int, tuple[int, int]]:
        return {i: slots[i] for i in ids}

    with (
        mock.patch.object(repo, "item_slots", item_slots),
        mock.patch.object(repo, "reserve"),
        mock.patch.object(repo, "release"),
    ):
        chosen, full = session._pick_and_hold(None, loads, 0.0)  # type: ignore[arg-type]
    assert all(not rules.takes_votes(slots[i][0]) for i in full)
    free = [i for i in slots if rules.takes_votes(sum(slots[i]))]
    if chosen is None:
        assert not free
        assert full == {i for i in slots if not rules.takes_votes(slots[i][0])}
    else:
        assert rules.takes_votes(sum(slots[chosen]))


def _votes(engine: Engine, study: str, counts: list[int]) -> None:
    """Give the study's items (file order) ``counts`` current votes from other annotators."""
    with Session(engine) as s, s.begin():
        row = repo.get_study(s, study)
        assert row is not None
        items = repo.item_keys(s, row.id)
        for (item_id, _), n in zip(items, counts, strict=False):
            for k in range(n):
                aid = repo.annotator_id(s, f"other-{k}")
                assert aid is not None
                repo.insert_vote(
                    s,
                    study_id=row.id,
                    annotator=aid,
                    item_id=item_id,
                    choice=Choice.TIE,
                    swapped=False,
                    response_ms=None,
                    fast=False,
                    supersedes=None,
                )


@pytest.mark.parametrize("overlap", [0, 1, 2, 3, 4])
def test_progress_session_and_rule_agree(tmp_path: Path, overlap: int) -> None:
    """study_progress, the session's queue and the rule count the same open items."""
    db = tmp_path / "v.db"
    engine = open_store(db)
    import_paths(engine, [TINY_ARENA])
    counts = [3, 1, 0]
    _votes(engine, "tiny-arena", counts)
    engine.dispose()
    with sqlite3.connect(db) as con:
        con.execute(
            "UPDATE study SET settings_json = json_set(settings_json, '$.overlap', ?) "
            "WHERE name = 'tiny-arena'",
            (overlap,),
        )
    engine = open_store(db)
    expected = sum(takes_votes(overlap, n) for n in counts)
    (listed,) = [p for p in study_progress(engine, "new-annotator") if p.name == "tiny-arena"]
    session = VotingSession(engine, "tiny-arena", "new-annotator")
    assert listed.total == session.progress().total == expected
