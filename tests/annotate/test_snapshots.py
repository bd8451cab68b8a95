"""Snapshots of every screen at 80x24 and 120x40 (pytest-textual-snapshot).

Each test drives the app in ``run_before`` and waits for it to settle, so the
picture never depends on timing. Fixed annotator names, study seeds and a fresh
database per test keep them deterministic; no clock or response time is shown.
Update with ``pytest tests/annotate/test_snapshots.py --snapshot-update`` after
looking at the report.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import Engine
from textual.pilot import Pilot

from annotate.app import make_app
from annotate.services.voting import VotingSession
from tests.annotate.conftest import press, start

SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def keys(*sequence: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A ``run_before`` that settles, then presses each key and settles after it.

    A study opened with ``study=`` first passes its instructions and subject chooser
    (:func:`start`), as an annotator pressing Enter does.
    """

    async def run(pilot: Pilot[Any]) -> None:
        await start(pilot)
        await press(pilot, *sequence)

    return run


@SIZES
class TestWelcome:
    def test_fresh(self, snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
        assert snap_compare(make_app(engine=engine), terminal_size=size, run_before=keys())

    def test_name_entered(self, snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
        app = make_app(engine=engine)
        assert snap_compare(app, terminal_size=size, run_before=keys(*"Ada", "enter"))

    def test_subjects(self, snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
        app = make_app(engine=engine, annotator="snap")
        assert snap_compare(
            app, terminal_size=size, run_before=keys("down", "enter", "enter", "space")
        )


@SIZES
class TestPair:
    def test_first_pair(self, snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
        app = make_app(engine=engine, annotator="snap", study="demo-difficulty")
        assert snap_compare(app, terminal_size=size, run_before=keys())

    def test_after_votes(self, snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
        app = make_app(engine=engine, annotator="snap", study="demo-difficulty")
        assert snap_compare(app, terminal_size=size, run_before=keys("1", "2", "0"))

    def test_help(self, snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
        app = make_app(engine=engine, annotator="snap", study="demo-difficulty")
        assert snap_compare(app, terminal_size=size, run_before=keys("question_mark"))

    def test_summary(self, snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
        session = VotingSession(engine, "demo-difficulty", "snap")
        for i in range(40):  # fixed response times: the summary counts fast votes
            session.vote(("left", "right", "skip")[i % 3], 1000 if i < 3 else 5000)
        app = make_app(engine=engine, annotator="snap", study="demo-difficulty")
        assert snap_compare(app, terminal_size=size, run_before=keys())

    def test_literal(
        self, snap_compare: Any, literal_engine: Engine, size: tuple[int, int]
    ) -> None:
        app = make_app(engine=literal_engine, annotator="snap", study="literal-text")
        assert snap_compare(app, terminal_size=size, run_before=keys("0"))


@SIZES
class TestBattle:
    def test_first_battle(self, snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
        app = make_app(engine=engine, annotator="snap", study="demo-arena")
        assert snap_compare(app, terminal_size=size, run_before=keys())

    def test_reveal(self, snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
        app = make_app(engine=engine, annotator="snap", study="demo-arena")
        assert snap_compare(app, terminal_size=size, run_before=keys("a"))

    def test_literal(
        self, snap_compare: Any, literal_engine: Engine, size: tuple[int, int]
    ) -> None:
        app = make_app(engine=literal_engine, annotator="snap", study="literal-arena")
        assert snap_compare(app, terminal_size=size, run_before=keys())


@SIZES
class TestHistory:
    """Issue 12: the history screen, and an undone item with its earlier choice."""

    def test_history(self, snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
        app = make_app(engine=engine, annotator="snap", study="demo-difficulty")
        assert snap_compare(app, terminal_size=size, run_before=keys("1", "2", "0", "h"))

    def test_undone(self, snap_compare: Any, engine: Engine, size: tuple[int, int]) -> None:
        app = make_app(engine=engine, annotator="snap", study="demo-difficulty")
        assert snap_compare(app, terminal_size=size, run_before=keys("2", "u"))
