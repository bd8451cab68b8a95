"""Issue 12: the history screen (own votes only, changing one) and the undone item's choice."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rich.text import Text
from sqlalchemy import Engine
from textual.widgets import DataTable, Label

from annotate.app import make_app
from annotate.screens.history import HistoryScreen
from annotate.services.voting import VotingSession
from tests.annotate.conftest import press, record_notifications, rows, start


def table_text(screen: HistoryScreen) -> str:
    """Every cell of the history table, one row a line."""
    table = screen.query_one(DataTable)
    out = []
    for r in range(table.row_count):
        cells = table.get_row_at(r)
        out.append(" | ".join(c.plain if isinstance(c, Text) else str(c) for c in cells))
    return "\n".join(out)


def no_reveal(db_path: Path, study: str = "demo-arena") -> None:
    with sqlite3.connect(db_path) as con:
        con.execute(
            "UPDATE study SET settings_json = json_set(settings_json, '$.reveal_models', "
            "json('false')) WHERE name = ?",
            (study,),
        )


async def test_history_lists_only_own_votes_newest_first(engine: Engine, db_path: Path) -> None:
    other = VotingSession(engine, "demo-difficulty", "someone-else")
    for _ in range(5):
        other.vote("left", 4000)
    sql = "SELECT i.key FROM vote v JOIN item i ON i.id = v.item_id"
    other_keys = {r[0] for r in rows(db_path, sql)}
    app = make_app(engine=engine, annotator="ada", study="demo-difficulty")
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot)
        await press(pilot, "1", "2", "0", "h")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        own = [e.key for e in screen.entries]
        stored = [
            k
            for (k,) in rows(
                db_path,
                """SELECT i.key FROM current_vote v JOIN item i ON i.id = v.item_id
                   JOIN annotator a ON a.id = v.annotator_id WHERE a.name = 'ada'
                   ORDER BY v.id DESC""",
            )
        ]
        assert own == stored
        assert len(own) == 3
        chosen = [e.chosen for e in screen.entries]
        assert chosen == [
            "can't judge (skipped)",
            "the second question is harder",
            "the first question is harder",
        ]
        text = table_text(screen)
        assert "someone-else" not in text
        for key in other_keys - set(own):
            assert f"\n{key} |" not in f"\n{text}"


async def test_changing_a_difficulty_vote_writes_one_superseding_row(
    engine: Engine, db_path: Path
) -> None:
    app = make_app(engine=engine, annotator="ada", study="demo-difficulty")
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot)
        await press(pilot, "1", "2", "h")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        target = screen.entries[1]  # the first vote (pressed 1)
        await press(pilot, "down", "2")
        before = rows(db_path, "SELECT count(*) FROM vote")[0][0]
        assert before == 3
        (new,) = rows(
            db_path,
            "SELECT choice, supersedes, swapped FROM vote ORDER BY id DESC LIMIT 1",
        )
        first = rows(db_path, "SELECT uuid, choice, swapped FROM vote ORDER BY id LIMIT 1")[0]
        assert new[1] == first[0]  # supersedes the old vote
        assert new[0] != first[1]
        assert new[0] in ("first", "second")
        current = rows(db_path, "SELECT choice FROM current_vote WHERE item_id = ?", target.item_id)
        assert current == [(new[0],)]
        assert rows(db_path, "SELECT count(*) FROM current_vote")[0][0] == 2
        assert screen.entries[0].item_id == target.item_id  # newest first, cursor follows
        assert screen.entries[0].chosen == "the second question is harder"
        await press(pilot, "escape")
        assert app.screen.__class__.__name__ == "PairScreen"
        assert app.screen.session.progress().done == 2  # the count is unchanged


async def test_history_refuses_changes_in_reveal_arena(engine: Engine, db_path: Path) -> None:
    app = make_app(engine=engine, annotator="ada", study="demo-arena")
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot)
        await press(pilot, "a", "h")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        messages = record_notifications(app)
        text = table_text(screen)
        assert "A is better" in text
        for model in {r[0] for r in rows(db_path, "SELECT model_a FROM battle")} | {
            r[0] for r in rows(db_path, "SELECT model_b FROM battle")
        }:
            assert model not in text  # no model names, even where they were revealed
        await press(pilot, "b", "t", "x")
        assert rows(db_path, "SELECT count(*) FROM vote")[0][0] == 1  # nothing written
        assert any("final" in m for m in messages)
        assert "final" in str(screen.query_one("#history-status", Label).content)


async def test_history_changes_an_arena_vote_where_undo_is_allowed(
    engine: Engine, db_path: Path
) -> None:
    no_reveal(db_path)
    app = make_app(engine=engine, annotator="ada", study="demo-arena")
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot)
        await press(pilot, "a", "h", "t")
        assert [c for (c,) in rows(db_path, "SELECT choice FROM current_vote")] == ["tie"]
        assert rows(db_path, "SELECT count(*) FROM vote")[0][0] == 2


async def test_undone_item_shows_the_earlier_choice(engine: Engine) -> None:
    other = VotingSession(engine, "demo-difficulty", "someone-else")
    for _ in range(3):
        other.vote("right", 4000)
    app = make_app(engine=engine, annotator="ada", study="demo-difficulty")
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot)
        line = app.screen.query_one("#previous-choice", Label)
        assert not line.display  # nothing before an undo (and nothing of others)
        await press(pilot, "2", "u")
        assert line.display
        assert str(line.content) == "You chose: the second question is harder (undone)"
        await press(pilot, "1")
        assert not line.display  # the next item was never undone


def test_undone_choice_is_in_display_terms_and_own_only(engine: Engine) -> None:
    ada = VotingSession(engine, "demo-difficulty", "ada")
    shown = ada.current()
    assert shown is not None
    assert shown.previous is None
    ada.vote("left", 4000)
    ada.undo()
    back = ada.current()
    assert back is not None
    assert back.item_id == shown.item_id
    assert back.previous == "the first question is harder"
    bob = VotingSession(engine, "demo-difficulty", "bob")
    for _ in range(40):
        s = bob.current()
        if s is None:
            break
        assert s.previous is None  # ada's undone vote never shows to bob
        bob.vote("skip", 4000)
