"""Pilot tests of issue 16's quality checks and questionnaire in the app.

The questionnaire is asked once, before the first item, and its hostile prompt and choices
are shown literally; gold items and swapped re-tests look exactly like any other item (the
same widgets, nothing on screen says "gold" or "re-test"), and a re-test shows the two
questions the other way round.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from textual.widget import Widget

from annotate.app import make_app
from annotate.screens.pair import PairScreen
from annotate.screens.questionnaire import QuestionnaireScreen
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from tests.annotate.conftest import press, rows, settle, start
from tests.annotate.test_app_difficulty import shown_texts

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "tests/data/studies/gold-difficulty"
SIZE = (100, 32)


@pytest.fixture
def gold_engine(db_path: Path) -> Engine:
    engine = open_store(db_path)
    import_paths(engine, [GOLD])
    return engine


def screen_text(app: Any) -> str:
    """Everything painted on the screen, as plain text (from the SVG screenshot)."""
    svg = app.export_screenshot()
    text = html.unescape(re.sub(r"<[^>]+>", "", svg.split("</style>", 1)[-1]))
    return text.replace("\xa0", " ")


def form(screen: Widget) -> list[tuple[str, str | None, tuple[str, ...]]]:
    """The shape of a screen: each widget's type, id and classes. (Whether a question's
    choices box is displayed follows the question, and undo is greyed out before the
    first vote: neither depends on the item being gold or a re-test.)"""
    return [
        (type(w).__name__, w.id, tuple(sorted(w.classes - {"-disabled"})))
        for w in screen.walk_children(Widget)
    ]


async def answer_questionnaire(pilot: Any) -> None:
    await press(pilot, "space", "enter")  # field: the first choice
    await press(pilot, "space", "down", "space", "enter")  # subjects: both


async def test_questionnaire_is_asked_once_and_stored(gold_engine: Engine, db_path: Path) -> None:
    app = make_app(engine=gold_engine, annotator="ann", study="gold")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, QuestionnaireScreen)  # before anything else
        text = screen_text(app)
        # the prompt and the choices are shown literally: markup as text, ESC as a picture
        assert "Your field? [bold]not bold[/bold] ␛[31mred␛[0m" in text
        assert "[link=x]Law[/link]" in text
        await answer_questionnaire(pilot)
        await start(pilot)
        assert isinstance(app.screen, PairScreen)
    assert rows(db_path, "SELECT key, answer FROM annotatoranswer ORDER BY id") == [
        ("field", '["Science"]'),
        ("subjects", '["arith", "chem"]'),
    ]
    again = make_app(engine=gold_engine, annotator="ann", study="gold")
    async with again.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert isinstance(again.screen, PairScreen)  # not asked a second time
    assert rows(db_path, "SELECT count(*) FROM annotatoranswer") == [(2,)]


async def test_escape_leaves_the_questionnaire_unanswered(
    gold_engine: Engine, db_path: Path
) -> None:
    app = make_app(engine=gold_engine, annotator="ann", study="gold")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, QuestionnaireScreen)
        await press(pilot, "escape")
        assert not isinstance(app.screen, QuestionnaireScreen | PairScreen)
    assert rows(db_path, "SELECT count(*) FROM annotatoranswer") == [(0,)]


async def test_gold_and_retest_items_look_like_any_other(
    gold_engine: Engine, db_path: Path
) -> None:
    app = make_app(engine=gold_engine, annotator="ann", study="gold")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await answer_questionnaire(pilot)
        await start(pilot)
        seen: list[tuple[str, tuple[str, str], Any, str]] = []
        while isinstance(app.screen, PairScreen) and app.screen.shown is not None:
            screen = app.screen
            assert screen.shown is not None
            seen.append((screen.shown.key, shown_texts(screen), form(screen), screen_text(app)))
            await press(pilot, "1")
    keys = [k for k, *_ in seen]
    assert sorted(keys) == ["p1", "p1", "p2", "p2", "p3", "p3"]  # every item re-tested
    forms = {repr(f) for *_, f, _ in seen}
    assert len(forms) == 1  # gold (p1, p3), plain (p2) and re-tests: one and the same form
    for _, _, _, text in seen:
        low = text.lower()
        assert "gold" not in low
        assert "re-test" not in low
        assert "retest" not in low
    for key in ("p1", "p2", "p3"):
        (a, b), (c, d) = [texts for k, texts, *_ in seen if k == key]
        assert (c, d) == (b, a)  # the re-test shows the other question first
    stored = rows(
        db_path,
        "SELECT i.key, v.choice, v.retest_of IS NOT NULL FROM vote v "
        "JOIN item i ON i.id = v.item_id ORDER BY v.id",
    )
    assert len(stored) == 6
    assert sum(r[2] for r in stored) == 3
    for key in ("p1", "p2", "p3"):  # "1" both times: opposite choices once un-swapped
        choices = {c for k, c, _ in stored if k == key}
        assert choices == {"first", "second"}


def _svg(app: Any) -> str:
    """The screenshot, with the SVG's generated ids made neutral."""
    return re.sub(r"terminal-[0-9a-z-]+", "terminal-x", app.export_screenshot())


async def _screenshots(engine: Engine) -> list[str]:
    app = make_app(engine=engine, annotator="ann", study="gold")
    shots = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await answer_questionnaire(pilot)
        await start(pilot)
        while isinstance(app.screen, PairScreen) and app.screen.shown is not None:
            shots.append(_svg(app))
            await press(pilot, "2")
    return shots


async def test_gold_items_paint_exactly_as_without_gold(tmp_path: Path) -> None:
    """The same study with and without its gold column, in two databases: every screen,
    the re-tests included, is the same picture."""
    plain = tmp_path / "plain"
    shutil.copytree(GOLD, plain)
    (plain / "pairs.csv").write_text(
        "pair_id,first,second\np1,a1,a2\np2,a3,a1\np3,c1,c2\n", encoding="utf-8"
    )
    with_gold = open_store(tmp_path / "gold.db")
    import_paths(with_gold, [GOLD])
    without = open_store(tmp_path / "plain.db")
    import_paths(without, [plain])
    a, b = await _screenshots(with_gold), await _screenshots(without)
    assert len(a) == len(b) == 6
    assert a == b
