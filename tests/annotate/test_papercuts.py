"""The annotator's screen papercuts of issue 12, instructions, and reservations on leaving."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from annotate.app import make_app
from annotate.screens.battle import BattleScreen
from annotate.screens.help import HelpScreen
from annotate.screens.instructions import InstructionsScreen
from annotate.screens.subjects import SubjectList, SubjectsScreen
from annotate.screens.welcome import WelcomeScreen
from annotate.services.settings import last_annotator
from annotate.services.voting import VotingSession
from annotate.store import repo
from tests.annotate.conftest import press, settle

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


async def test_study_flag_hints_at_subjects_and_instructions(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="hint", study="demo-difficulty")
    messages: list[str] = []
    original = app.notify

    def notify(message: str, **kwargs: Any) -> None:
        messages.append(message)
        original(message, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert any("s chooses the subjects" in m and "?" in m for m in messages)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        texts = [str(w.content) for w in app.screen.query(".instructions-text")]
        assert texts
        assert "two questions" in texts[0]


async def test_leaving_a_study_releases_its_reservation(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="res", study="demo-arena")  # overlap 5
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, BattleScreen)
        assert held(engine, "demo-arena", "res") is not None
        await press(pilot, "escape")
        assert isinstance(app.screen, WelcomeScreen)
        assert held(engine, "demo-arena", "res") is None


async def test_quitting_releases_and_reading_keeps_the_reservation(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="rq", study="demo-arena")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
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
