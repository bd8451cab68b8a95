"""Issue 12: comments and flags on items (keys, storage, monitor, export and import)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from textual.widgets import Label

from annotate.app import make_app
from annotate.screens.item_note import CommentScreen, FlagScreen
from annotate.screens.vote_base import VoteScreen
from annotate.services.db import open_store
from annotate.services.exporting import export_votes
from annotate.services.importing import import_paths
from annotate.services.monitoring import monitor_snapshot
from annotate.services.notes import FLAG_REASONS, report_lines
from annotate.services.voting import VotingSession
from annotate.store.migrations import MIGRATIONS, migrate
from tests.annotate.conftest import press, record_titled_notifications, rows, settle, start

NOTES_SQL = """SELECT a.name, i.key, n.kind, n.reason, n.text, n.vote_uuid FROM itemnote n
               JOIN annotator a ON a.id = n.annotator_id JOIN item i ON i.id = n.item_id
               ORDER BY n.id"""


async def test_comment_and_flag_keys_store_notes(engine: Engine, db_path: Path) -> None:
    app = make_app(engine=engine, annotator="ada", study="demo-difficulty")
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot)
        first = app.screen.shown
        assert first is not None
        await press(pilot, "c")  # before any vote: a note on the item alone
        assert isinstance(app.screen, CommentScreen)
        await pilot.press(*"odd", "space", "left_square_bracket", *"31m")
        await press(pilot, "enter")
        await press(pilot, "1")
        second = app.screen.shown
        assert second is not None
        await press(pilot, "2", "u")  # voted, then undone: no current vote on it
        assert app.screen.shown is not None
        assert app.screen.shown.item_id == second.item_id
        await press(pilot, "f")
        assert isinstance(app.screen, FlagScreen)
        await press(pilot, "down", "enter")
        await press(pilot, "c", "escape")  # cancelled: nothing stored
    notes = rows(db_path, NOTES_SQL)
    assert [(n[0], n[1], n[2], n[3]) for n in notes] == [
        ("ada", first.key, "comment", ""),
        ("ada", second.key, "flag", FLAG_REASONS[1]),
    ]
    assert notes[0][4] == "odd [31m"  # the escape key is not typed into the box
    assert notes[0][5] is None
    assert notes[1][5] is None


async def test_a_saved_note_is_said_in_the_instruction_row_not_a_toast(engine: Engine) -> None:
    """At 80x24 a toast covered the bottom of the right pane and its "more below"."""
    app = make_app(engine=engine, annotator="said", study="demo-difficulty")
    notes = record_titled_notifications(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, VoteScreen)
        line = screen.query_one("#note-saved", Label)
        assert not line.display
        await press(pilot, "c")
        await pilot.press(*"typo")
        await press(pilot, "enter")
        assert line.display
        assert str(line.content) == "Comment saved."
        assert line.region.y == screen.query_one("#instruction-row").region.y  # one row, no shift
        screen._hide_note_saved()  # what the timer does after NOTE_SAVED_S
        assert not line.display
        await press(pilot, "f", "enter")
        assert str(line.content) == f"Item flagged: {FLAG_REASONS[0]}."
    assert "Note" not in {title for title, _ in notes}


def test_a_note_goes_with_the_annotators_current_vote(engine: Engine, db_path: Path) -> None:
    ada = VotingSession(engine, "demo-difficulty", "ada")
    shown = ada.current()
    assert shown is not None
    receipt = ada.vote("left", 4000)
    ada.add_note(shown.item_id, "comment", "", "exact \x1b]0;x\x07 text\n")
    ((_, _, kind, _, body, vote),) = rows(db_path, NOTES_SQL)
    assert (kind, body, vote) == ("comment", "exact \x1b]0;x\x07 text\n", receipt.vote_uuid)
    with pytest.raises(ValueError, match="note kind"):
        ada.add_note(shown.item_id, "praise", "", "")


async def test_note_keys_act_only_on_a_painted_item(engine: Engine, db_path: Path) -> None:
    app = make_app(engine=engine, annotator="ada", study="demo-difficulty")
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot)
        screen = app.screen
        screen.gate.close()  # as while the next item is being painted
        await pilot.press("c")
        await pilot.press("f")
        await pilot.pause()
        assert app.screen is screen  # both keys dropped
        screen.show_current()  # painted again: keys act
        await settle(pilot)
        await press(pilot, "c")
        assert isinstance(app.screen, CommentScreen)
        await press(pilot, "escape")
    assert rows(db_path, "SELECT count(*) FROM itemnote") == [(0,)]


def test_notes_are_sanitised_in_the_monitor_and_report(engine: Engine) -> None:
    ada = VotingSession(engine, "demo-difficulty", "ada")
    shown = ada.current()
    assert shown is not None
    ada.vote("left", 4000)
    ada.add_note(shown.item_id, "comment", "", "bad \x1b[2J\u202e text")
    ada.add_note(shown.item_id, "flag", "typo", "")
    snap = monitor_snapshot(engine, "demo-difficulty")
    shown_notes = "\n".join(snap.notes)
    assert "Item notes: 1 comment; 1 flag on 1 item (typo 1)" in shown_notes
    assert "\x1b" not in shown_notes
    assert "\u202e" not in shown_notes
    assert "bad ␛[2J⟨U+202E⟩ text" in shown_notes
    lines = report_lines(engine, "demo-difficulty")
    assert lines[0] == "1 comment; 1 flag on 1 item (typo 1)"
    assert not any("\x1b" in line for line in lines)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_notes_round_trip_through_an_export(engine: Engine, tmp_path: Path, fmt: str) -> None:
    ada = VotingSession(engine, "demo-difficulty", "ada")
    shown = ada.current()
    assert shown is not None
    ada.add_note(shown.item_id, "comment", "", 'before, "quoted"\nsecond line \x1b[1m')
    ada.vote("right", 4000)
    ada.add_note(shown.item_id, "flag", "other", "")
    export_votes(engine, fmt=fmt, out=tmp_path / "out")
    assert (tmp_path / "out" / f"item_notes.{fmt}").exists()
    copy = open_store(tmp_path / "copy.db")
    first = import_paths(copy, [tmp_path / "out"])
    again = import_paths(copy, [tmp_path / "out"])  # idempotent by note uuid
    assert any("2 item notes" in n for n in first.notes)
    assert not any("item note" in n for n in again.notes)
    original = rows(engine.url.database, NOTES_SQL.replace("SELECT", "SELECT n.uuid,", 1))
    copied = rows(tmp_path / "copy.db", NOTES_SQL.replace("SELECT", "SELECT n.uuid,", 1))
    assert copied == original


def test_migration_adds_the_item_note_table_to_an_older_database(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    open_store(db).dispose()
    with sqlite3.connect(db) as con:  # as version 003 left it
        con.execute("DROP TABLE itemnote")
        con.execute("DROP TABLE accesstoken")  # added by 006, after 004
        con.execute(  # 004 and every later migration (006, 007, 008, ...) not yet applied
            "DELETE FROM _migrations WHERE name NOT IN "
            "('001_baseline', '002_current_vote_view', '003_reservation')"
        )
    engine = open_store(db)
    with engine.connect() as c:
        names = [r[0] for r in c.execute(text("SELECT name FROM _migrations ORDER BY rowid"))]
        assert c.execute(text("SELECT count(*) FROM itemnote")).scalar() == 0
        indexes = {r[1] for r in c.execute(text("PRAGMA index_list(itemnote)"))}
    assert "ix_itemnote_study_item" in indexes
    assert names == [n for n, _ in MIGRATIONS]
    assert migrate(engine) == []
