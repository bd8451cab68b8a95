"""Pilot tests of a difficulty study: every key and screen, checked in the SQLite file."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import Engine
from textual.widgets import Input, OptionList

from annotate.app import make_app
from annotate.messages import StudyFinished, VoteRecorded, VoteUndone
from annotate.screens.help import HelpScreen
from annotate.screens.instructions import InstructionsScreen
from annotate.screens.pair import PairScreen
from annotate.screens.subjects import SubjectList, SubjectsScreen
from annotate.screens.summary import SummaryScreen
from annotate.screens.welcome import WelcomeScreen
from annotate.services.voting import VotingSession
from annotate.widgets.panes import QuestionCard
from annotate.widgets.progress import StudyProgress
from tests.annotate.conftest import press, record_notifications, rows, settle, start, votes

SIZE = (100, 32)


def shown_texts(screen: PairScreen) -> tuple[str, str]:
    """The two question texts on screen."""
    out = []
    for card_id in ("#first", "#second"):
        body = screen.query_one(card_id, QuestionCard).query_one(".body")
        out.append(str(body.content))
    return out[0], out[1]


def progress_text(screen: PairScreen) -> str:
    return str(screen.query_one(StudyProgress).query_one(".count").content)


async def test_new_user_votes_from_the_welcome_screen(engine: Engine, db_path: Path) -> None:
    seen: list[object] = []
    app = make_app(engine=engine)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, WelcomeScreen)
        assert app.focused is app.screen.query_one("#name", Input)
        await pilot.press(*"Ada Lovelace")
        await press(pilot, "enter")
        studies = app.screen.query_one("#studies", OptionList)
        assert app.focused is studies
        labels = [str(studies.get_option_at_index(i).prompt) for i in range(studies.option_count)]
        assert any("demo-difficulty" in lb and "0 / 40 done" in lb for lb in labels)
        names = [studies.get_option_at_index(i).id for i in range(studies.option_count)]
        for _ in range(names.index("demo-difficulty")):
            await press(pilot, "down")
        await press(pilot, "enter")
        assert isinstance(app.screen, InstructionsScreen)  # the study's instructions first
        await press(pilot, "enter")
        assert isinstance(app.screen, SubjectsScreen)
        await press(pilot, "enter")
        screen = app.screen
        assert isinstance(screen, PairScreen)
        assert progress_text(screen) == "0 / 40"

        expected = VotingSession(engine, "demo-difficulty", "Ada Lovelace")
        first = expected.current()
        assert first is not None
        assert shown_texts(screen) == (first.left.text, first.right.text)

        await press(pilot, "1", "2", "0")
        assert progress_text(screen) == "3 / 40"
    got = votes(db_path, "demo-difficulty")
    assert [(a, c in ("first", "second", "skip")) for a, _, c, *_ in got] == [
        ("ada lovelace", True)  # stored in its normalised form
    ] * 3
    # key 1 = the question shown first is harder; the stored choice is in file terms
    (_, k1, c1, sw1, ms1, *_), (_, _, c2, sw2, *_), (_, _, c3, *_) = got
    assert k1 == first.key
    assert c1 == ("second" if sw1 else "first")
    assert c2 == ("first" if sw2 else "second")
    assert c3 == "skip"
    assert ms1 is not None
    assert ms1 >= 0
    assert sum(isinstance(m, VoteRecorded) for m in seen) == 3


async def test_cli_arguments_open_the_study_directly(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="bo", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert isinstance(app.screen, PairScreen)
        assert app.screen.session.annotator == "bo"


async def test_undo_brings_the_item_back_with_a_superseding_row(
    engine: Engine, db_path: Path
) -> None:
    seen: list[object] = []
    app = make_app(engine=engine, annotator="cy", study="demo-difficulty")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, PairScreen)
        assert screen.check_action("undo", ()) is None  # nothing to undo yet
        before = shown_texts(screen)
        await press(pilot, "2")
        assert shown_texts(screen) != before
        await press(pilot, "u")
        assert shown_texts(screen) == before
        assert progress_text(screen) == "0 / 40"
        await press(pilot, "1")
    got = votes(db_path)
    assert [c for _, _, c, *_ in got][1] == "retract"
    assert got[1][6] is not None  # the retraction supersedes the vote
    assert got[2][6] == rows(db_path, "SELECT uuid FROM vote WHERE id = 2")[0][0]
    assert rows(db_path, "SELECT count(*) FROM current_vote")[0][0] == 1
    assert any(isinstance(m, VoteUndone) for m in seen)


async def test_fast_votes_count_and_are_marked(engine: Engine, db_path: Path) -> None:
    app = make_app(engine=engine, annotator="dee", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await press(pilot, "1")  # a Pilot key press comes well under the 1500 ms floor
    ((_, _, _, _, ms, fast, _),) = votes(db_path)
    assert ms < 1500
    assert fast == 1
    assert rows(db_path, "SELECT count(*) FROM current_vote")[0][0] == 1


async def test_opting_out_of_subjects_hides_their_pairs(engine: Engine, db_path: Path) -> None:
    app = make_app(engine=engine, annotator="eve")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        studies = app.screen.query_one("#studies", OptionList)
        ids = [studies.get_option_at_index(i).id for i in range(studies.option_count)]
        studies.highlighted = ids.index("demo-difficulty")
        await press(pilot, "enter")
        assert isinstance(app.screen, InstructionsScreen)
        await press(pilot, "enter")
        assert isinstance(app.screen, SubjectsScreen)
        subject_list = app.screen.query_one(SubjectList)
        assert subject_list.highlighted == 0  # arithmetic
        await press(pilot, "space", "down", "space")  # untick arithmetic and chemistry
        await press(pilot, "enter")
        screen = app.screen
        assert isinstance(screen, PairScreen)
        assert progress_text(screen) == "0 / 20"
        for _ in range(20):
            card = screen.query_one("#first", QuestionCard)
            subject = str(card.query_one(".subject").content)
            assert "arithmetic" not in subject
            assert "chemistry" not in subject
            await press(pilot, "0")
        assert isinstance(app.screen, SummaryScreen)
        # s on the pair screen reopens the choice: bring chemistry back
        await press(pilot, "escape")  # summary -> studies
        assert isinstance(app.screen, WelcomeScreen)
    excluded = rows(db_path, "SELECT subject, excluded FROM subjectchoice ORDER BY id")
    assert excluded == [("arithmetic", 1), ("chemistry", 1)]
    assert rows(db_path, "SELECT count(*) FROM current_vote")[0][0] == 20


async def test_subjects_key_changes_the_choice_mid_study(engine: Engine, db_path: Path) -> None:
    app = make_app(engine=engine, annotator="fay", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await press(pilot, "s")
        assert isinstance(app.screen, SubjectsScreen)
        await press(pilot, "space", "enter")
        assert isinstance(app.screen, PairScreen)
        assert progress_text(app.screen) == "0 / 30"
        await press(pilot, "s", "escape")  # cancel keeps the choice
        assert progress_text(app.screen) == "0 / 30"


async def test_finishing_shows_the_summary_and_undo_returns(engine: Engine, db_path: Path) -> None:
    seen: list[object] = []
    app = make_app(engine=engine, annotator="gus", study="demo-difficulty")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await start(pilot)
        for i in range(40):
            await press(pilot, "120"[i % 3])
        assert isinstance(app.screen, SummaryScreen)
        text = str(app.screen.query_one("#summary").content)
        assert "40 votes" in text
        assert "14  first question harder" in text
        assert "13  second question harder" in text
        assert "13  could not judge" in text
        assert any(isinstance(m, StudyFinished) for m in seen)
        await press(pilot, "u")
        assert isinstance(app.screen, PairScreen)
        assert progress_text(app.screen) == "39 / 40"
        await press(pilot, "2")
        assert isinstance(app.screen, SummaryScreen)
    assert rows(db_path, "SELECT count(*) FROM current_vote")[0][0] == 40
    assert rows(db_path, "SELECT count(*) FROM vote")[0][0] == 42


async def test_restart_resumes_exactly_where_the_annotator_stopped(
    db_path: Path, engine: Engine
) -> None:
    app = make_app(engine=engine, annotator="hal", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await press(pilot, "1", "2", "1", "0", "u")
        assert isinstance(app.screen, PairScreen)
        left_on_screen = shown_texts(app.screen)
    again = make_app(db_path)  # a new app on the same file, as after a restart
    again.annotator, again.initial_study = "hal", "demo-difficulty"
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(again.screen, PairScreen)
        assert shown_texts(again.screen) == left_on_screen
        assert progress_text(again.screen) == "3 / 40"


async def test_help_escape_and_quit(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="ida", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = help_text(app.screen)
        for line in ("1st harder", "2nd harder", "Can't judge", "Undo", "Quit"):
            assert line in text
        await press(pilot, "escape")
        assert isinstance(app.screen, PairScreen)
        await press(pilot, "1", "escape")
        assert isinstance(app.screen, WelcomeScreen)
        studies = app.screen.query_one("#studies", OptionList)
        labels = [str(studies.get_option_at_index(i).prompt) for i in range(studies.option_count)]
        assert any("demo-difficulty" in lb and "1 / 40 done" in lb for lb in labels)
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running


async def test_empty_name_is_refused(engine: Engine) -> None:
    app = make_app(engine=engine)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "space", "enter")
        assert app.annotator is None
        assert isinstance(app.focused, Input)
        assert any("name" in m for m in notes)  # a warning says what to do


async def test_study_named_on_the_command_line_opens_after_the_name(engine: Engine) -> None:
    app = make_app(engine=engine, study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"jo")
        await press(pilot, "enter")
        assert isinstance(app.screen, InstructionsScreen)  # a first visit: as from the list
        await start(pilot)
        assert isinstance(app.screen, PairScreen)


async def test_unknown_study_is_reported(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="kim", study="nope")
    messages = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert isinstance(app.screen, WelcomeScreen)
        assert any("no study named 'nope'" in m for m in messages)


def help_text(screen: HelpScreen) -> str:
    """The help's key table as plain text."""
    from rich.console import Console

    console = Console(width=120, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    for static in screen.query("Static"):  # the instructions, the keys, the notes
        console.print(static.content)
    return console.export_text()
