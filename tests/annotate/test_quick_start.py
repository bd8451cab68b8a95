"""The app's quick start (annotate.services.quick_start): the first item without the full store.

The quick read must give exactly what the full store's VotingSession gives (item, sides,
texts, progress) or step aside (None); a vote cast on the quick item lands on that item;
when the real session disagrees, the item is shown afresh and a vote on the stale one is
refused.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

from annotate.app import make_app
from annotate.errors import VoteConflictError
from annotate.screens.battle import BattleScreen
from annotate.screens.pair import PairScreen
from annotate.screens.welcome import WelcomeScreen
from annotate.services.db import open_store
from annotate.services.quick_start import StartingSession, quick_preview, quick_start
from annotate.services.voting import VotingSession
from tests.annotate.conftest import ROOT, press, settle, votes

SIZE = (100, 32)
STUDY = "demo-difficulty"


def voted(engine: Engine, annotator: str, n: int, study: str = STUDY) -> VotingSession:
    """A session of ``annotator`` after ``n`` votes (alternating keys)."""
    session = VotingSession(engine, study, annotator)
    keys = ("left", "right", "skip") if session.kind == "difficulty" else ("a", "b", "tie")
    for i in range(n):
        session.vote(keys[i % 3], 4000)
    return session


def set_settings(db_path: Path, study: str, **changes: object) -> None:
    """Change stored settings of ``study`` (straight in the SQLite file)."""
    con = sqlite3.connect(db_path)
    with con:
        (raw,) = con.execute("SELECT settings_json FROM study WHERE name = ?", (study,)).fetchone()
        settings = {**json.loads(raw or "{}"), **changes}
        con.execute(
            "UPDATE study SET settings_json = ? WHERE name = ?", (json.dumps(settings), study)
        )
    con.close()


def assert_same_start(db_path: Path, engine: Engine, study: str, annotator: str) -> None:
    """The quick read equals a fresh full session's first answer."""
    preview = quick_preview(db_path, study, annotator)
    assert preview is not None
    full = VotingSession(engine, study, annotator)
    assert preview.shown == full.current()
    assert preview.progress == full.progress()
    assert preview.subjects == full.subjects
    assert set(preview.excluded) == full.excluded_subjects
    assert preview.study == full.study
    assert preview.annotator == full.annotator


@pytest.mark.parametrize("n", [1, 2, 7, 25])
def test_quick_read_equals_the_full_session(engine: Engine, db_path: Path, n: int) -> None:
    voted(engine, "ann", n)
    assert_same_start(db_path, engine, STUDY, "ann")
    assert_same_start(db_path, engine, STUDY, "  ANN ")  # the name is normalised the same way


def test_quick_read_with_excluded_subjects(engine: Engine, db_path: Path) -> None:
    session = voted(engine, "bea", 2)
    session.set_excluded_subjects({session.subjects[0]})
    session.vote("left", 4000)
    assert_same_start(db_path, engine, STUDY, "bea")


def test_quick_read_of_an_arena_study_with_markdown(literal_engine: Engine, db_path: Path) -> None:
    """literal-arena (hostile texts: escapes, markup; rendered as Markdown), names not revealed."""
    set_settings(db_path, "literal-arena", reveal_models=False)
    voted(literal_engine, "cy", 1, study="literal-arena")
    assert_same_start(db_path, literal_engine, "literal-arena", "cy")
    set_settings(db_path, "literal-arena", reveal_models=True)  # undo would be refused
    assert quick_preview(db_path, "literal-arena", "cy") is None


def test_the_full_path_is_taken_when_the_quick_read_could_differ(
    engine: Engine, db_path: Path
) -> None:
    assert quick_preview(db_path, STUDY, "nobody") is None  # not in the database
    VotingSession(engine, STUDY, "new")  # in the database, no vote: instructions come first
    assert quick_preview(db_path, STUDY, "new") is None
    assert quick_preview(db_path, "no-such-study", "new") is None
    assert quick_preview(db_path, STUDY, "bad\x07name") is None
    voted(engine, "arena", 1, study="demo-arena")  # overlap cap: reservations
    assert quick_preview(db_path, "demo-arena", "arena") is None
    session = voted(engine, "undo", 3)
    session.undo()  # the undone item comes back with "You chose: ..."
    assert quick_preview(db_path, STUDY, "undo") is None
    voted(engine, "done", 40)  # finished: the summary
    assert quick_preview(db_path, STUDY, "done") is None
    assert quick_preview(db_path.parent / "missing.db", STUDY, "undo") is None


def test_a_setting_that_shapes_the_schedule_sends_the_study_down_the_full_path(
    engine: Engine, db_path: Path
) -> None:
    voted(engine, "ann", 2)
    assert quick_preview(db_path, STUDY, "ann") is not None
    set_settings(db_path, STUDY, overlap=3)
    assert quick_preview(db_path, STUDY, "ann") is None


def test_an_outdated_database_takes_the_full_path(engine: Engine, db_path: Path) -> None:
    voted(engine, "ann", 2)
    engine.dispose()
    con = sqlite3.connect(db_path)
    with con:
        con.execute("DELETE FROM _migrations WHERE rowid = (SELECT max(rowid) FROM _migrations)")
    con.close()
    assert quick_preview(db_path, STUDY, "ann") is None


def test_a_vote_on_a_stale_preview_is_refused(engine: Engine, db_path: Path) -> None:
    voted(engine, "ann", 2)
    starting = quick_start(db_path, STUDY, "ann", lambda: open_store(db_path))
    assert starting is not None
    other = VotingSession(engine, STUDY, "ann")  # another session of the same annotator
    other.vote("left", 4000)
    before = votes(db_path, STUDY)
    with pytest.raises(VoteConflictError):
        starting.vote("right", 4000)
    assert votes(db_path, STUDY) == before
    assert starting.current() == other.current()  # the screen is then given the real item
    starting.vote("right", 4000)  # and a vote on it counts
    assert len(votes(db_path, STUDY)) == len(before) + 1


def test_the_quick_start_imports_no_sqlalchemy(engine: Engine, db_path: Path) -> None:
    voted(engine, "ann", 2)
    engine.dispose()
    code = (
        "import sys; from annotate.app import make_app; "
        "import annotate.screens.pair, annotate.screens.battle; "
        f"app = make_app({str(db_path)!r}, annotator='ann', study={STUDY!r}, quick=True); "
        "assert app.starting is not None; "
        "print(sorted(m for m in ('sqlalchemy', 'sqlmodel', 'pydantic', 'numpy', 'pandas') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


async def test_quick_start_votes_on_the_painted_item(engine: Engine, db_path: Path) -> None:
    voted(engine, "ann", 3)
    app = make_app(db_path, annotator="ann", study=STUDY, quick=True)
    starting = app.starting
    assert isinstance(starting, StartingSession)
    first = starting.preview.shown
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, PairScreen)
        assert screen.shown == first
        assert not any(isinstance(s, WelcomeScreen) for s in app.screen_stack)
        for _ in range(200):  # the store opens in the background after the paint
            if starting.real is not None:
                break
            await pilot.pause(0.05)
        assert starting.real is not None
        await press(pilot, "1")
        item_key, choice = votes(db_path, STUDY)[-1][1], votes(db_path, STUDY)[-1][2]
        assert item_key == first.key
        assert choice == ("second" if first.swapped else "first")
        assert screen.shown is not None
        assert screen.shown.item_id != first.item_id
        await press(pilot, "escape")  # leaving the study builds the welcome screen now
        assert isinstance(app.screen, WelcomeScreen)
        assert "ann" in str(app.screen.query_one("#step-2").render())


async def test_quick_start_shows_the_real_item_when_it_changed(
    engine: Engine, db_path: Path
) -> None:
    voted(engine, "ann", 3)
    app = make_app(db_path, annotator="ann", study=STUDY, quick=True)
    starting = app.starting
    assert starting is not None
    stale = starting.preview.shown
    VotingSession(engine, STUDY, "ann").vote("skip", 4000)  # meanwhile, elsewhere
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in range(200):
            screen = app.screen
            if isinstance(screen, PairScreen) and screen.shown != stale and not screen.busy:
                break
            await pilot.pause(0.05)
        screen = app.screen
        assert isinstance(screen, PairScreen)
        real = starting.real
        assert real is not None
        shown = screen.shown
        assert shown is not None
        assert shown == real.current()
        assert shown != stale
        n = len(votes(db_path, STUDY))
        await press(pilot, "2")
        after = votes(db_path, STUDY)
        assert len(after) == n + 1
        assert after[-1][1] == shown.key  # the vote went to the item painted afresh


async def test_battle_quick_start(literal_engine: Engine, db_path: Path) -> None:
    set_settings(db_path, "literal-arena", reveal_models=False)
    voted(literal_engine, "cy", 1, study="literal-arena")
    app = make_app(db_path, annotator="cy", study="literal-arena", quick=True)
    assert app.starting is not None
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, BattleScreen)
        assert app.screen.shown == app.starting.preview.shown
