"""Driving ``annotate serve`` in headless Chromium with Playwright (issue 17).

Shared by ``tests/annotate/test_serve_browser.py`` and ``benchmarks/bench_serve.py``.
The browser is the distribution's Chromium (``/usr/bin/chromium``: Playwright cannot
download its own here). The terminal in the page is drawn on a canvas, so a page's
"screen" is read from the websocket frames the page receives (the app's terminal
output) with the escape sequences removed: what the annotator's terminal shows, in the
order it was drawn.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

ANNOTATE = Path(sys.executable).parent / "annotate"

ESCAPES = re.compile(
    r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
    r"|\x1bP[^\x1b]*\x1b\\"  # DCS
    r"|\x1b[()][A-Za-z0-9]|\x1b[=>78DEHMc]"
)

FIRST_STEPS = ("Press Enter to start", "Which subjects can you judge")
"""What the instructions and the subject chooser show (both go on with Enter)."""

START_TIMEOUT_S = 180.0
"""An app process starts in 1 to 2 s on an idle machine; 10 at once on a loaded CI box
take far longer."""


def chromium_path() -> str | None:
    """The distribution's Chromium, or None."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def launch(playwright: Any) -> Any:
    """Headless Chromium from the distribution (raises when it cannot start)."""
    path = chromium_path()
    if path is None:
        raise FileNotFoundError("chromium is not installed (apt-get install chromium)")
    return playwright.chromium.launch(
        executable_path=path, headless=True, args=["--no-sandbox", "--disable-gpu"]
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_annotate(*args: str) -> str:
    done = subprocess.run(
        [str(ANNOTATE), *args], capture_output=True, text=True, check=False, timeout=300
    )
    if done.returncode != 0:
        raise AssertionError(f"annotate {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def issue_link(db: Path | str, name: str, port: int, study: str | None = None) -> str:
    """``annotate annotators add``: the link it prints (its last line)."""
    extra = ["--study", study] if study else []
    out = run_annotate(
        "annotators", "add", name, "--db", str(db), "--url-base", f"http://127.0.0.1:{port}", *extra
    )
    return out.strip().splitlines()[-1]


class Served:
    """``annotate serve`` running in its own process group (ended with it)."""

    def __init__(
        self, db: Path | str, port: int, *, study: str | None = None, log: Path | None = None
    ) -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        extra = ["--study", study] if study else []
        if log is None:
            if not isinstance(db, Path):
                raise ValueError("a database URL needs log=PATH for the server's output")
            log = db.with_suffix(".serve.log")
        self.log = log
        self._log_file = self.log.open("w")
        self.proc = subprocess.Popen(
            [str(ANNOTATE), "serve", "--db", str(db), "--port", str(port), *extra],
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"annotate serve exited: {self.log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise AssertionError(f"annotate serve did not listen within {START_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # the app processes it started are in its process group: none may outlive it
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._log_file.close()


@contextmanager
def served(
    db: Path | str, port: int, *, study: str | None = None, log: Path | None = None
) -> Iterator[Served]:
    s = Served(db, port, study=study, log=log)
    try:
        yield s
    finally:
        s.stop()


class Screen:
    """What one page's terminal shows: the websocket's frames, escapes removed."""

    def __init__(self) -> None:
        self.raw: list[bytes] = []
        self.ws_urls: list[str] = []

    def attach(self, page: Any) -> None:
        def on_websocket(ws: Any) -> None:
            self.ws_urls.append(ws.url)
            ws.on("framereceived", self._frame)

        page.on("websocket", on_websocket)

    def _frame(self, payload: Any) -> None:
        if isinstance(payload, bytes):
            self.raw.append(payload)
        else:
            self.raw.append(str(payload).encode("utf-8"))

    def raw_bytes(self) -> bytes:
        return b"".join(self.raw)

    def text(self) -> str:
        return ESCAPES.sub("", self.raw_bytes().decode("utf-8", "replace"))


def progress(k: int, n: int) -> str:
    """A regex for "k / n" as the voting screens show it (not the study list's "done")."""
    return rf"(?<!\d){k} / {n}(?!\d)(?! done)"


class Annotator:
    """One browser page of one annotator."""

    def __init__(self, browser: Any, name: str, link: str) -> None:
        self.name = name
        self.link = link
        self.context = browser.new_context(viewport={"width": 1200, "height": 800})
        self.page = self.context.new_page()
        self.screen = Screen()
        self.screen.attach(self.page)
        self.requests: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("websocket", lambda ws: self.requests.append(ws.url))
        self.mark = 0
        """Where in the screen text the next wait looks from."""
        self._focused = False

    def open(self) -> Any:
        return self.page.goto(self.link)

    def seen(self, pattern: str) -> bool:
        text = self.screen.text()
        return re.search(pattern, text[self.mark :]) is not None

    def wait_for(self, pattern: str, *, timeout: float = START_TIMEOUT_S) -> None:
        """Wait until ``pattern`` is drawn after the mark; the mark moves past it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen.text()
            m = re.search(pattern, text[self.mark :])
            if m:
                self.mark += m.end()
                return
            self.page.wait_for_timeout(50)
        tail = self.screen.text()[-3000:]
        raise AssertionError(f"{self.name}: {pattern!r} not drawn in {timeout} s; last:\n{tail}")

    def press(self, *keys: str) -> None:
        if not self._focused:
            self.focus()
        for key in keys:
            self.page.keyboard.press(key)

    def focus(self) -> None:
        """Keys to the terminal (its input box; a click would reach the app as a click)."""
        self.page.focus("textarea.xterm-helper-textarea")
        self._focused = True

    def start(self, total: int, *, timeout: float = START_TIMEOUT_S) -> None:
        """Enter through the instructions and subjects until the first item ("0 / total")."""
        deadline = time.monotonic() + timeout
        first = progress(0, total)
        while time.monotonic() < deadline:
            text = self.screen.text()[self.mark :]
            if re.search(first, text):
                self.wait_for(first)
                return
            step = next((s for s in FIRST_STEPS if s in text), None)
            if step is not None:
                self.mark += text.index(step) + len(step)
                self.press("Enter")
            self.page.wait_for_timeout(50)
        raise AssertionError(f"{self.name}: the first item did not appear")


_CURRENT_VOTES = (
    "SELECT count(*) FROM current_vote v JOIN annotator a ON a.id = v.annotator_id "
    "JOIN study s ON s.id = v.study_id WHERE a.name = {p} AND s.name = {p}"
)
_PG_READERS: dict[str, Any] = {}


def pg_reader(url: str) -> Any:
    """One autocommit psycopg connection per PostgreSQL URL (reused: polled every 50 ms)."""
    conn = _PG_READERS.get(url)
    if conn is None or conn.closed:
        import psycopg
        from sqlalchemy import make_url

        u = make_url(url)
        conn = psycopg.connect(
            host=u.host or "127.0.0.1",
            port=u.port or 5432,
            user=u.username,
            password=u.password,
            dbname=u.database,
            autocommit=True,
            connect_timeout=10,
        )
        _PG_READERS[url] = conn
    return conn


def current_votes(db: Path | str, name: str, study: str) -> int:
    """The annotator's current votes in the study (read-only, beside the writers): ``db`` a
    SQLite file or a PostgreSQL URL."""
    if isinstance(db, str):
        row = pg_reader(db).execute(_CURRENT_VOTES.format(p="%s"), (name, study)).fetchone()
        return int(row[0])
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as c:
        row = c.execute(_CURRENT_VOTES.format(p="?"), (name, study)).fetchone()
    return int(row[0])


def cast(
    annotators: list[Annotator],
    keys: list[str],
    db: Path | str,
    study: str,
    total: int,
    *,
    retry_s: float = 5.0,
    timeout: float = START_TIMEOUT_S,
    then_progress: bool = True,
) -> dict[str, float]:
    """Each annotator casts one vote (``keys[i]``); returns each one's seconds to the vote.

    A key pressed before the item's paint is confirmed is dropped by the app (it acts
    only on what was seen), so a key is pressed again when no vote arrived within
    ``retry_s``. Each waits until the database holds the vote and (``then_progress``)
    the screen shows the new progress.
    """
    before = {a.name: current_votes(db, a.name, study) for a in annotators}
    pressed = {a.name: time.monotonic() for a in annotators}
    began = dict(pressed)
    for a, key in zip(annotators, keys, strict=True):
        a.press(key)
    took: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(took) < len(annotators):
        if time.monotonic() > deadline:
            raise AssertionError(f"no vote from {sorted(set(pressed) - set(took))}")
        for a, key in zip(annotators, keys, strict=True):
            if a.name in took:
                continue
            if current_votes(db, a.name, study) > before[a.name]:
                took[a.name] = time.monotonic() - began[a.name]
            elif time.monotonic() - pressed[a.name] > retry_s:
                a.press(key)
                pressed[a.name] = time.monotonic()
        annotators[0].page.wait_for_timeout(50)
    if then_progress:
        for a in annotators:
            a.wait_for(progress(current_votes(db, a.name, study), total))
    return took
