"""The annotator's screen papercuts of issue 12, instructions, and reservations on leaving."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from annotate.app import make_app
from annotate.screens.battle import BattleScreen
from annotate.screens.help import HelpScreen
from annotate.screens.instructions import InstructionsScreen
from annotate.screens.pair import PairScreen
from annotate.screens.subjects import SubjectList, SubjectsScreen
from annotate.screens.welcome import WelcomeScreen
from annotate.services.settings import last_annotator
from annotate.services.voting import VotingSession
from annotate.store import repo
from tests.annotate.conftest import press, record_titled_notifications, settle, start

SIZE = (100, 30)


def held(engine: Engine, study: str, annotator: str) -> tuple[int, float] | None:
    """The annotator's reservation in the study (through the store's function)."""
    with Session(engine) as s:
        st = repo.get_study(s, study)
        aid = repo.annotator_id(s, annotator, create=False)
        assert st is not None
        assert aid is not None
        return repo.reservation_of(s, st.id, aid)


async def test_escape_on_the_welcome_screen(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="esc")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.focused is not None
        assert app.focused.id == "studies"
        await press(pilot, "escape")  # from the list: back to the name
        assert app.focused is not None
        assert app.focused.id == "name"
        footer_keys = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
        assert {"escape", "f1"} <= footer_keys  # the footer shows more than the palette
        await pilot.press("escape")  # from the name: quit
        await pilot.pause()
    assert not app.is_running


async def test_name_is_remembered_and_known_names_offered(engine: Engine) -> None:
    VotingSession(engine, "demo-difficulty", "zoe known")  # an annotator in the database
    app = make_app(engine=engine)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        name = app.screen.query_one("#name")
        assert name.suggester is not None
        assert await name.suggester.get_suggestion("zo") == "zoe known"
        await pilot.press(*"Ada")
        await press(pilot, "enter")
    assert last_annotator() == "Ada"
    again = make_app(engine=engine)
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.screen.query_one("#name").value == "Ada"  # prefilled


async def test_subject_boxes_say_whether_they_are_ticked(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="sub")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        studies = app.screen.query_one("#studies")
        ids = [studies.get_option_at_index(i).id for i in range(studies.option_count)]
        studies.highlighted = ids.index("demo-difficulty")
        await press(pilot, "enter")
        assert isinstance(app.screen, InstructionsScreen)
        assert "two questions" in str(app.screen.query_one(".instructions-text").content)
        await press(pilot, "enter")
        assert isinstance(app.screen, SubjectsScreen)
        subjects = app.screen.query_one(SubjectList)
        before = str(subjects.get_option_at_index(0).prompt)
        await press(pilot, "space")
        after = str(subjects.get_option_at_index(0).prompt)
        assert before.startswith("✓")
        assert "not shown" not in before
        assert after.startswith("✗")
        assert "not shown" in after


async def test_bad_keys_file_is_reported_as_key_settings(engine: Engine) -> None:
    config = Path(os.environ["ANNOTATE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "keys.toml").write_text("nope = 'x'\n", encoding="utf-8")
    app = make_app(engine=engine)
    titles: list[Any] = []
    original = app.notify

    def notify(message: str, **kwargs: Any) -> None:
        titles.append(kwargs.get("title"))
        original(message, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
    assert "Key settings" in titles
    assert "Cannot import" not in titles


async def test_study_flag_shows_the_instructions_then_the_subjects(engine: Engine) -> None:
    """``--study`` goes through the same first steps as the welcome screen (issue 12)."""
    app = make_app(engine=engine, annotator="hint", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, InstructionsScreen)
        assert "two questions" in str(app.screen.query_one(".instructions-text").content)
        assert not any(isinstance(s, PairScreen) for s in app.screen_stack)  # no item yet
        await press(pilot, "enter")
        assert isinstance(app.screen, SubjectsScreen)
        await press(pilot, "enter")
        assert isinstance(app.screen, PairScreen)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        texts = [str(w.content) for w in app.screen.query(".instructions-text")]
        assert texts
        assert "two questions" in texts[0]


async def choose(pilot: Any, study: str) -> None:
    """On the welcome screen's study list: highlight ``study`` and press Enter."""
    studies = pilot.app.screen.query_one("#studies")
    ids = [studies.get_option_at_index(i).id for i in range(studies.option_count)]
    studies.highlighted = ids.index(study)
    await press(pilot, "enter")


async def test_instructions_are_shown_once_per_launch(engine: Engine) -> None:
    """Leaving a study before voting and opening it again goes straight to the item."""
    app = make_app(engine=engine, annotator="once")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await choose(pilot, "demo-arena")
        assert isinstance(app.screen, InstructionsScreen)
        await press(pilot, "enter")
        assert isinstance(app.screen, BattleScreen)
        await press(pilot, "escape")
        assert isinstance(app.screen, WelcomeScreen)
        await choose(pilot, "demo-arena")
        assert isinstance(app.screen, BattleScreen)  # not the instructions again
        await press(pilot, "escape")
        app.open_study("demo-arena")  # the command palette's way in
        await settle(pilot)
        assert isinstance(app.screen, BattleScreen)
    again = make_app(engine=engine, annotator="once", study="demo-arena")
    async with again.run_test(size=SIZE) as pilot:  # a new launch, still no vote: once more
        await settle(pilot)
        assert isinstance(again.screen, InstructionsScreen)


async def test_palette_opens_a_new_study_with_its_instructions(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="pal", study="demo-arena")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert isinstance(app.screen, BattleScreen)
        app.open_study("demo-difficulty")  # what "Open study demo-difficulty" calls
        await settle(pilot)
        assert isinstance(app.screen, InstructionsScreen)
        await press(pilot, "enter")
        assert isinstance(app.screen, SubjectsScreen)


async def test_no_instructions_after_the_first_vote(engine: Engine) -> None:
    VotingSession(engine, "demo-difficulty", "voted").vote("left", 5000)
    app = make_app(engine=engine, annotator="voted", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, PairScreen)  # neither instructions nor subjects
        await press(pilot, "question_mark")
        assert "two questions" in str(app.screen.query_one(".instructions-text").content)


async def test_leaving_a_study_releases_its_reservation(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="res", study="demo-arena")  # overlap 5
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert isinstance(app.screen, BattleScreen)
        assert held(engine, "demo-arena", "res") is not None
        await press(pilot, "escape")
        assert isinstance(app.screen, WelcomeScreen)
        assert held(engine, "demo-arena", "res") is None


async def test_quitting_releases_and_reading_keeps_the_reservation(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="rq", study="demo-arena")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, BattleScreen)
        first = held(engine, "demo-arena", "rq")
        assert first is not None
        screen._keep_reservation()  # what the timer does every KEEP_RESERVATION_S
        await settle(pilot)
        renewed = held(engine, "demo-arena", "rq")
        assert renewed is not None
        assert renewed[1] >= first[1]
        await pilot.press("q")
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert held(engine, "demo-arena", "rq") is None


async def test_undo_is_said_on_the_item_line_not_in_a_toast(engine: Engine) -> None:
    """At 80x24 the undo toast covered the right pane's bottom border ("more below")."""
    app = make_app(engine=engine, annotator="undo-line", study="demo-difficulty")
    notes = record_titled_notifications(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(pilot)
        await press(pilot, "2", "u")
        line = app.screen.query_one("#previous-choice")
        assert line.display
        assert "(undone)" in str(line.content)
    assert "Undo" not in {title for title, _ in notes}


async def test_back_from_a_study_opened_with_study_focuses_the_list(engine: Engine) -> None:
    """Keys typed while the list loads no longer replace the name in the name box."""
    app = make_app(engine=engine, annotator="back", study="demo-arena")
    list_studies = app.list_studies

    def slow(annotator: str | None) -> Any:
        time.sleep(0.5)  # a busy machine: the list takes a while to count the votes
        return list_studies(annotator)

    app.list_studies = slow  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert isinstance(app.screen, BattleScreen)
        await pilot.press("escape")
        await pilot.pause()
        welcome = app.screen
        assert isinstance(welcome, WelcomeScreen)
        assert app.focused is welcome.query_one("#studies")
        assert "Hello back!" in str(welcome.query_one("#step-2").content)
        await pilot.press("j")
        await settle(pilot)
        assert welcome.query_one("#name").value == "back"


async def test_keys_right_after_the_name_move_in_the_study_list(engine: Engine) -> None:
    """Down and Enter typed at once after the name act on the study list.

    The list is already shown when the name is entered; its progress is then reloaded
    for that name in a thread. Before the fix the focus moved to the list only when the
    reload came back, so keys typed meanwhile went into the name box (Enter submitted
    the name again) and were lost: the tmux end-to-end test saw this under load.
    """
    app = make_app(engine=engine)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        studies = app.screen.query_one("#studies")
        assert studies.option_count >= 2
        first, second = (studies.get_option_at_index(i).id for i in range(2))
        welcome = app.screen
        quick = welcome.list_studies

        def slow(annotator: str | None) -> Any:  # a reload that takes a busy machine's time
            time.sleep(0.5)
            return quick(annotator)

        welcome.list_studies = slow
        await pilot.press(*"Ada", "enter")
        assert app.screen.focused is studies  # at once, not after the reload
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, InstructionsScreen)
        assert (first, second) == ("demo-arena", "demo-difficulty")
        assert "two questions" in str(app.screen.query_one(".instructions-text").content)
