"""``annotate serve`` in headless Chromium (issue 17 item 2).

A real server (``annotate serve``), real links (``annotate annotators add``) and a real
browser (the distribution's Chromium driven by Playwright): an annotator opens the
link, votes in the difficulty and the arena demo, and the rows are in the database
under the name the link fixes; a missing, wrong or revoked token gets a 403 page and no
app process; every request the page makes goes to 127.0.0.1; model names stay hidden
and study text stays literal on the way through the browser; ten browsers vote at once
and no vote is lost or duplicated. Skipped only when Chromium cannot be found or started.
"""

from __future__ import annotations

import re
import sqlite3
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import sync_playwright

from tests.annotate.browser import (
    Annotator,
    Served,
    cast,
    chromium_path,
    free_port,
    issue_link,
    launch,
    run_annotate,
    served,
)
from tests.annotate.conftest import LITERAL_STUDIES

pytestmark = [pytest.mark.serial, pytest.mark.slow]

CONCURRENT = 10
VOTES_EACH = 3
"""Votes per browser in the concurrent test (bounded for CI; see benchmarks/bench_serve.py)."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if chromium_path() is None:
        pytest.skip("chromium is not installed (apt-get install chromium chromium-driver)")
    with sync_playwright() as p:
        try:
            b = launch(p)
        except Exception as err:
            pytest.skip(f"chromium could not start: {str(err).splitlines()[0]}")
        yield b
        b.close()


@pytest.fixture
def demo_db(tmp_path: Path) -> Path:
    db = tmp_path / "study.db"
    run_annotate("import", "--db", str(db), "--demo")
    return db


def app_processes(server: Served) -> int:
    """Processes in the server's process group besides the server (its app processes)."""
    n = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == server.proc.pid:
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == server.proc.pid and fields[0] != "Z":  # pgrp, state
            n += 1
    return n


def only_local(requests: list[str]) -> list[str]:
    """The requests that went anywhere but 127.0.0.1 (should be none)."""
    return [u for u in requests if urlsplit(u).hostname != "127.0.0.1"]


def test_a_missing_wrong_or_revoked_token_gets_no_app(demo_db: Path, browser: Any) -> None:
    port = free_port()
    link = issue_link(demo_db, "Eve", port)
    token = link.split("token=", 1)[1]
    assert re.fullmatch(rf"http://127\.0\.0\.1:{port}/\?token=[A-Za-z0-9_-]{{43}}", link)
    stored = sqlite3.connect(demo_db).execute("SELECT token_hash FROM accesstoken").fetchall()
    assert token not in str(stored)  # only the hash is stored
    run_annotate("annotators", "revoke", "eve", "--db", str(demo_db))
    with served(demo_db, port) as server:
        for url in (
            server.base + "/",
            server.base + "/?token=",
            server.base + "/?token=" + "x" * 43,
            server.base + "/?token=" + token[:-1] + ("A" if token[-1] != "A" else "B"),
            link,  # revoked
        ):
            page = browser.new_page()
            sockets: list[str] = []
            page.on("websocket", lambda ws, seen=sockets: seen.append(ws.url))
            response = page.goto(url)
            assert response is not None
            assert response.status == 403, url
            assert "No access" in page.content()
            page.wait_for_timeout(500)
            assert sockets == []
            page.close()
        # nor does a websocket without a ticket the page handed out
        for path in ("/ws/x", "/ws/" + token, "/download/x", "/static/"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(server.base + path, timeout=30)
            assert err.value.code in (403, 404), path
        assert app_processes(server) == 0


def test_vote_on_both_study_kinds_in_a_browser(demo_db: Path, browser: Any) -> None:
    port = free_port()
    link = issue_link(demo_db, "Ada", port)
    with sqlite3.connect(demo_db) as c:
        models = {m for (m,) in c.execute("SELECT DISTINCT model FROM modelresponse")}
    assert len(models) >= 2
    with served(demo_db, port):
        ada = Annotator(browser, "ada", link)
        response = ada.open()
        assert response is not None
        assert response.status == 200
        assert response.headers["referrer-policy"] == "no-referrer"
        assert "default-src 'none'" in response.headers["content-security-policy"]
        ada.wait_for(r"Hello ada! Choose a study")
        ada.wait_for(r"demo-difficulty .* 0 / 40 done")
        ada.press("Escape", "z", "e", "d")  # no name box to go back to: typing names no one
        # the difficulty demo: three votes
        ada.press("ArrowDown", "Enter")
        ada.start(40)
        for key in "120":
            cast([ada], [key], demo_db, "demo-difficulty", 40)
        ada.press("Escape")
        ada.wait_for(r"demo-difficulty .* 3 / 40 done")
        # the arena demo: the model names are not shown before the vote
        ada.press("ArrowUp", "Enter")
        ada.start(96)
        before_vote = ada.screen.text()
        assert "Prompt" in before_vote
        for m in models:
            assert m not in before_vote, m
        for key in "ab":
            cast([ada], [key], demo_db, "demo-arena", 96)
        assert ada.page.title() == "annotate"
        for m in models:
            assert m not in ada.page.content()
        ada.press("q")
        ada.page.wait_for_selector("body.-closed", timeout=60_000)
        bad = only_local(ada.requests)
        assert not bad, bad
        assert any(u.startswith(f"ws://127.0.0.1:{port}/ws/") for u in ada.requests)
        assert "token=" not in "".join(ada.screen.ws_urls)  # the socket carries no token
    with sqlite3.connect(demo_db) as c:
        rows = c.execute(
            "SELECT a.name, s.name, v.choice, v.response_ms FROM current_vote v "
            "JOIN annotator a ON a.id = v.annotator_id JOIN study s ON s.id = v.study_id"
        ).fetchall()
        names = {n for (n,) in c.execute("SELECT name FROM annotator")}
    assert names == {"ada"}
    by_study: dict[str, list[str]] = {}
    for name, study, choice, ms in rows:
        assert name == "ada"
        assert ms is not None
        by_study.setdefault(study, []).append(choice)
    # 1 and 2 as shown; stored relative to the file's order (``swapped`` says which was left)
    assert len(by_study["demo-difficulty"]) == 3
    assert "skip" in by_study["demo-difficulty"]
    assert set(by_study["demo-difficulty"]) <= {"first", "second", "skip"}
    assert len(by_study["demo-arena"]) == 2  # A and B as shown (stored as the file's models)
    assert set(by_study["demo-arena"]) <= {"model_a", "model_b"}


def test_study_text_stays_literal_in_the_browser(tmp_path: Path, browser: Any) -> None:
    db = tmp_path / "lit.db"
    run_annotate("import", "--db", str(db), *map(str, LITERAL_STUDIES))
    port = free_port()
    link = issue_link(db, "lit", port, study="literal-text")
    with served(db, port):
        a = Annotator(browser, "lit", link)
        a.open()
        a.start(3)
        for k in range(3):
            cast([a], ["0"], db, "literal-text", 3, then_progress=k < 2)
        a.wait_for("Finished")
        raw = a.screen.raw_bytes()
        assert b"\x1b]0;pwned" not in raw  # no title change reached the browser
        assert b"\x1b]8;" not in raw  # no hyperlink
        assert "␛]0;pwned␇" in a.screen.text()  # shown as typed
        assert a.page.title() == "annotate"
        assert "Literal arena" not in a.screen.text()  # the link is for literal-text only
        assert not only_local(a.requests)


def test_ten_browsers_vote_at_once(demo_db: Path, browser: Any) -> None:
    port = free_port()
    study = "demo-difficulty"
    links = [issue_link(demo_db, f"web{i}", port, study=study) for i in range(CONCURRENT)]
    with served(demo_db, port, study=study):
        people = [Annotator(browser, f"web{i}", link) for i, link in enumerate(links)]
        for a in people:
            a.open()
        for a in people:
            a.start(40)
        for k in range(VOTES_EACH):
            cast(people, ["120"[k % 3]] * len(people), demo_db, study, 40)
        shown = {}  # the progress each screen shows last: the votes the app acknowledged
        for a in people:
            counts = re.findall(r"(?<!\d)(\d+) / 40(?!\d)(?! done)", a.screen.text())
            shown[a.name] = int(counts[-1])
            assert not only_local(a.requests)
    with sqlite3.connect(demo_db) as c:
        dup_rows = c.execute("SELECT count(*) - count(DISTINCT uuid) FROM vote").fetchone()[0]
        per_item = c.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM current_vote "
            "GROUP BY annotator_id, item_id)"
        ).fetchone()[0]
        stored = dict(
            c.execute(
                "SELECT a.name, count(*) FROM current_vote v JOIN annotator a "
                "ON a.id = v.annotator_id GROUP BY a.name"
            ).fetchall()
        )
    assert dup_rows == 0
    assert per_item == 1
    assert stored == shown  # every vote the screens counted is stored: none lost
    assert all(n >= VOTES_EACH for n in stored.values())


def test_serve_over_postgresql(pg_url: str, tmp_path: Path, browser: Any) -> None:
    """The same server on the PostgreSQL store: two browsers vote at once (difficulty)
    while a third votes in the arena (each link fixed to its study, so no screen has to
    navigate between studies); the rows are in the server's database under the links'
    names, one current vote per item, and no request leaves the machine."""
    from tests.annotate.browser import pg_reader

    run_annotate("import", "--db", pg_url, "--demo")
    port = free_port()
    study = "demo-difficulty"
    links = {name: issue_link(pg_url, name, port, study=study) for name in ("ada", "bob")}
    arena_link = issue_link(pg_url, "cy", port, study="demo-arena")
    with served(pg_url, port, log=tmp_path / "serve.log"):
        people = [Annotator(browser, name, link) for name, link in links.items()]
        cy = Annotator(browser, "cy", arena_link)
        for a in (*people, cy):
            a.open()
        for a in people:
            a.start(40)
        cy.start(96)
        for key in "12":
            cast(people, [key] * len(people), pg_url, study, 40)
        cast([cy], ["b"], pg_url, "demo-arena", 96)
        for a in (*people, cy):
            assert not only_local(a.requests), a.name
    c = pg_reader(pg_url)
    rows = c.execute(
        "SELECT a.name, s.name, v.choice FROM current_vote v "
        "JOIN annotator a ON a.id = v.annotator_id JOIN study s ON s.id = v.study_id"
    ).fetchall()
    per_item = c.execute(
        "SELECT max(n) FROM (SELECT count(*) AS n FROM current_vote "
        "GROUP BY annotator_id, item_id) t"
    ).fetchone()[0]
    dup = c.execute("SELECT count(*) - count(DISTINCT uuid) FROM vote").fetchone()[0]
    c.close()
    counts: dict[tuple[str, str], int] = {}
    for name, s, choice in rows:
        counts[(name, s)] = counts.get((name, s), 0) + 1
        assert choice in {"first", "second", "model_a", "model_b"}
    assert counts == {("ada", study): 2, ("bob", study): 2, ("cy", "demo-arena"): 1}
    assert per_item == 1
    assert dup == 0
