"""Fixtures and helpers for the app tests: a fresh database per test, settling."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from textual.pilot import Pilot
from textual.widgets import Input
from textual.worker import WorkerFailed

from annotate.screens.key_gate import PAINT_LOG_ENV, REPEAT_DEBOUNCE_S
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
        with contextlib.suppress(WorkerFailed):  # the app reports them; tests check how
            await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        busy = getattr(screen, "busy", False)
        loaded = getattr(screen, "loaded", True)
        if not busy and loaded and not any(w.is_running for w in app.workers):
            return
    raise AssertionError(f"the app did not settle on {app.screen!r}")


async def start(pilot: Pilot[Any]) -> None:
    """Settle, then pass the steps before a study's first item (instructions, subjects) with Enter.

    A study opened for an annotator with no vote in it shows its instructions (once per
    launch) and, in a difficulty study with several subjects, the subject chooser; Enter
    goes on from each (all subjects ticked).
    """
    from annotate.screens.instructions import InstructionsScreen
    from annotate.screens.subjects import SubjectsScreen

    await settle(pilot)
    while isinstance(pilot.app.screen, InstructionsScreen | SubjectsScreen):
        await pilot.press("enter")
        await settle(pilot)


_LAST_PRESS: dict[int, tuple[str, float]] = {}


async def press(pilot: Pilot[Any], *keys: str) -> None:
    """Press each key and wait for the app to settle after it.

    A key pressed again right after itself waits out the voting screens' repeat
    debounce first (as a person would: a quicker repeat is a double tap, ignored).
    """
    for key in keys:
        last = _LAST_PRESS.get(id(pilot.app))
        if last is not None and last[0] == key:
            wait = last[1] + REPEAT_DEBOUNCE_S + 0.02 - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
        _LAST_PRESS[id(pilot.app)] = (key, time.monotonic())
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


def record_titled_notifications(app: Any) -> list[tuple[str, str]]:
    """Like :func:`record_notifications`, as ``(title, message)`` pairs."""
    notes: list[tuple[str, str]] = []
    original = app.notify

    def notify(message: str, **kwargs: Any) -> None:
        notes.append((str(kwargs.get("title", "")), message))
        original(message, **kwargs)

    app.notify = notify
    return notes


# --- the installed command under tmux ------------------------------------------

ANNOTATE = Path(sys.executable).parent / "annotate"


def needs_tmux() -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)"
    )


class Tmux:
    """One detached tmux session on a private server socket, running one command."""

    def __init__(
        self,
        name: str,
        command: list[str],
        *,
        size: tuple[int, int] = (100, 32),
        paint_log: Path | None = None,
    ):
        self.socket = f"annotate-test-{os.getpid()}-{name}"
        self.target = name
        self.paint_log = paint_log
        """The app's test-only paint log (ANNOTATE_PAINT_LOG), when given."""
        self._last_vote: tuple[str, float, int] | None = None
        """The last vote key, when its send returned, and how many paints came before it."""
        env = [
            f"-e{k}={v}"
            for k, v in os.environ.items()
            if k.startswith(("ANNOTATE_", "XDG_")) or k in ("HOME", "PATH")
        ]
        if paint_log is not None:
            env.append(f"-e{PAINT_LOG_ENV}={paint_log}")
        self.tmux(
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            str(size[0]),
            "-y",
            str(size[1]),
            *env,
            "exec " + " ".join(shlex.quote(c) for c in command),
        )

    def tmux(self, *args: str) -> str:
        # COLUMNS/LINES (set by some test runners) would override the pane's real size
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        return out.stdout

    def alive(self) -> bool:
        return (
            subprocess.run(
                ["tmux", "-L", self.socket, "has-session", "-t", self.target],
                capture_output=True,
                check=False,
            ).returncode
            == 0
        )

    def screen(self, *, escapes: bool = False) -> str:
        return self.tmux("capture-pane", "-p", *(["-e"] if escapes else []), "-t", self.target)

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.target, *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.target, "-l", text)

    def double_tap(self, key: str, *, gap: float = 0.04) -> None:
        """Send ``key`` twice, ``gap`` seconds apart as the tmux server times them.

        One tmux command: two ``send-keys`` calls would also be spaced by the start
        of a second tmux client, which on a loaded machine can take longer than the
        vote debounce, so the app would read two separate presses, not a double tap.
        """
        t = ["-t", self.target]
        self.tmux("send-keys", *t, key, ";", "run-shell", "-d", str(gap), ";", "send-keys", *t, key)

    def pid(self) -> int:
        return int(self.tmux("display-message", "-p", "-t", self.target, "#{pane_pid}"))

    def wait_for(self, pattern: str, *, timeout: float = 20.0) -> str:
        """Poll the screen until ``pattern`` (a regex) appears; fail with the screen."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            time.sleep(0.03)
        raise AssertionError(f"{pattern!r} did not appear within {timeout} s; screen:\n{screen}")

    def paints(self) -> list[tuple[int, int, int]]:
        """``(item id, monotonic ns, wall ns)`` of every confirmed paint so far."""
        if self.paint_log is None or not self.paint_log.exists():
            return []
        lines = self.paint_log.read_text(encoding="utf-8").splitlines()
        out = []
        for line in lines:
            fields = line.split("\t")
            if len(fields) == 3:  # a line being written is skipped until it is whole
                out.append((int(fields[0]), int(fields[1]), int(fields[2])))
        return out

    def wait_painted(self, count: int, *, timeout: float = 20.0) -> None:
        """Wait until ``count`` item paints are confirmed: keys sent after that act."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.paints()) >= count:
                return
            time.sleep(0.01)
        raise AssertionError(
            f"{count} paints were not confirmed within {timeout} s "
            f"({len(self.paints())} were); screen:\n{self.screen()}"
        )

    FIRST_STEPS = ("Press Enter to start", "Which subjects can you judge?")
    """What the instructions and the subject chooser show (both go on with Enter)."""

    def start(self, *, timeout: float = 30.0) -> None:
        """Press Enter through the steps before a study's first item, until it is painted."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.paints():
            screen = self.screen()
            step = next((s for s in self.FIRST_STEPS if s in screen), None)
            if step is None:
                time.sleep(0.03)
                continue
            self.send("Enter")
            gone = time.monotonic() + 5.0
            while step in self.screen() and time.monotonic() < gone:
                time.sleep(0.03)
        self.wait_painted(1, timeout=max(0.1, deadline - time.monotonic()))

    def vote(self, key: str, *, then_paint: bool = True) -> None:
        """Send a vote key as a person would; with ``then_paint``, wait for the next paint.

        Keys sent before an item's paint is confirmed are dropped, and so is a repeat
        of the same key within the debounce: this waits out the debounce first. The
        app measures it from when it read the last key, which on a loaded machine can
        be well after it was sent; the paint that followed that vote came after the
        read, so the wait runs from that paint (the log's clock is this one) if any.
        """
        if self._last_vote is not None and self._last_vote[0] == key:
            _, sent, painted = self._last_vote
            later = [ns / 1e9 for _, ns, _ in self.paints()[painted : painted + 1]]
            wait = max(sent, *later) + REPEAT_DEBOUNCE_S + 0.05 - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        n = len(self.paints())
        self.send(key)
        self._last_vote = (key, time.monotonic(), n)
        if then_paint:
            self.wait_painted(n + 1)

    def wait_exit(self, *, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return
            time.sleep(0.03)
        raise AssertionError(f"the app did not exit; screen:\n{self.screen()}")

    def close(self) -> None:
        self.tmux("kill-server")


def progress(k: int, n: int) -> str:
    """A regex for "k / n" as the voting screens show it."""
    return rf"(?<!\d){k} / {n}(?!\d)(?! done)"
