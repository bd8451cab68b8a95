"""Fixtures and helpers for the app tests: a fresh database per test, settling."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from textual.pilot import Pilot
from textual.widgets import Input

from annotate.services.db import open_store
from annotate.services.importing import import_paths

ROOT = Path(__file__).resolve().parents[2]
LITERAL_STUDIES = [ROOT / "tests/data/studies/literal", ROOT / "tests/data/studies/literal-arena"]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "v.db"


@pytest.fixture
def engine(db_path: Path) -> Engine:
    """A fresh database holding the embedded demo studies."""
    return open_store(db_path, seed_demo=True)


@pytest.fixture
def literal_engine(engine: Engine) -> Engine:
    """The demo plus the literal-text studies (markup, escapes, control characters)."""
    import_paths(engine, LITERAL_STUDIES)
    return engine


@pytest.fixture(autouse=True)
def _no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs do not blink, so screenshots do not depend on timing."""
    monkeypatch.setattr(Input, "cursor_blink", False)


async def settle(pilot: Pilot[Any], *, rounds: int = 400) -> None:
    """Wait until no worker runs and the screen is idle (the next item is painted)."""
    app = pilot.app
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        busy = getattr(screen, "busy", False)
        loaded = getattr(screen, "loaded", True)
        if not busy and loaded and not any(w.is_running for w in app.workers):
            return
    raise AssertionError(f"the app did not settle on {app.screen!r}")


async def press(pilot: Pilot[Any], *keys: str) -> None:
    """Press each key and wait for the app to settle after it."""
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def rows(db_path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows straight from the SQLite file (not through the app's engine)."""
    con = sqlite3.connect(db_path)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def votes(db_path: Path, study: str | None = None) -> list[tuple[Any, ...]]:
    """``(annotator, item key, choice, swapped, response_ms, fast, supersedes)``, oldest first."""
    where = "WHERE s.name = ?" if study else ""
    return rows(
        db_path,
        f"""SELECT a.name, i.key, v.choice, v.swapped, v.response_ms, v.fast, v.supersedes
            FROM vote v JOIN annotator a ON a.id = v.annotator_id JOIN item i ON i.id = v.item_id
            JOIN study s ON s.id = v.study_id {where} ORDER BY v.id""",
        *([study] if study else []),
    )


def record_notifications(app: Any) -> list[str]:
    """Replace ``app.notify`` with a recorder that still notifies; returns the messages."""
    messages: list[str] = []
    original = app.notify

    def notify(message: str, **kwargs: Any) -> None:
        messages.append(message)
        original(message, **kwargs)

    app.notify = notify
    return messages
