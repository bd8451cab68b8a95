"""``annotate serve`` without a browser: links, migration 006, the server's guard, the
app with a fixed annotator (issue 17 item 2). The browser itself: test_serve_browser.py.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session
from textual.widgets import Input, OptionList

from annotate.app import make_app
from annotate.cli import main
from annotate.errors import AnnotateError
from annotate.services import access
from annotate.services.db import open_store
from annotate.store import repo
from annotate.store.engine import make_engine
from annotate.store.migrations import migrate
from annotate.store.models import AccessToken
from annotate.web import FIXED_ANNOTATOR_ENV, FIXED_STUDY_ENV
from annotate.web.server import AnnotatorAppService, StudyServer, app_command
from tests.annotate.conftest import settle


def test_the_token_hash_is_sha256() -> None:
    # FIPS 180-2, appendix B.1: SHA-256("abc")
    assert access.hash_token("abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_issue_list_revoke(engine: Engine, db_path: Path) -> None:
    link = access.issue_link(engine, " Ada  Lovelace ", url_base="http://10.0.0.5:8000/")
    assert link.annotator == "ada lovelace"
    base, token = link.url.split("/?token=")
    assert base == "http://10.0.0.5:8000"
    assert len(token) == 43  # 32 random bytes, URL-safe base64
    stored = sqlite3.connect(db_path).execute("SELECT token_hash FROM accesstoken").fetchall()
    assert stored == [(hashlib.sha256(token.encode()).hexdigest(),)]  # never the token
    assert access.check_token(engine, token) == repo.TokenHolder("ada lovelace", None)
    with pytest.raises(AnnotateError, match="already has a live link"):
        access.issue_link(engine, "ADA LOVELACE")
    assert access.revoke_link(engine, "Ada Lovelace") == 1
    assert access.check_token(engine, token) is None
    with pytest.raises(AnnotateError, match="no live link"):
        access.revoke_link(engine, "ada lovelace")
    again = access.issue_link(engine, "ada lovelace", study="demo-arena")
    holder = access.check_token(engine, again.url.split("token=")[1])
    assert holder == repo.TokenHolder("ada lovelace", "demo-arena")
    rows = access.links(engine)
    assert [(r.annotator, r.study, r.revoked_at is None) for r in rows] == [
        ("ada lovelace", None, False),
        ("ada lovelace", "demo-arena", True),
    ]


@pytest.mark.parametrize(
    ("name", "study", "url_base", "message"),
    [
        ("", None, access.DEFAULT_URL_BASE, "annotator name"),
        ("x\x1b[31m", None, access.DEFAULT_URL_BASE, "annotator name"),
        ("bob", "nope", access.DEFAULT_URL_BASE, "no study named 'nope'"),
        ("bob", None, "ftp://host", "not a web address"),
        ("bob", None, "http://host:8000/?a=1", "not a web address"),
    ],
)
def test_bad_links_write_nothing(
    engine: Engine, db_path: Path, name: str, study: str | None, url_base: str, message: str
) -> None:
    with pytest.raises(AnnotateError, match=message):
        access.issue_link(engine, name, study=study, url_base=url_base)
    with sqlite3.connect(db_path) as c:
        assert c.execute("SELECT count(*) FROM accesstoken").fetchone() == (0,)
        assert c.execute("SELECT count(*) FROM annotator").fetchone() == (0,)


@pytest.mark.parametrize("token", [None, "", "short", "x" * 43, "a b" * 20, "é" * 43])
def test_unknown_or_malformed_tokens_name_no_one(engine: Engine, token: str | None) -> None:
    access.issue_link(engine, "ada")
    assert access.check_token(engine, token) is None


def test_the_database_allows_one_live_link_per_annotator(engine: Engine) -> None:
    access.issue_link(engine, "ada")
    with Session(engine) as s:
        aid = repo.annotator_id(s, "ada")
        assert aid is not None
        s.add(AccessToken(token_hash="0" * 64, annotator_id=aid))
        with pytest.raises(IntegrityError):
            s.flush()


def test_migration_006_adds_the_table_to_a_005_database(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    e = open_store(db)
    e.dispose()
    with sqlite3.connect(db) as c:  # back to schema 005
        c.execute("DROP TABLE accesstoken")
        c.execute("DELETE FROM _migrations WHERE name = '006_access_token'")
    e = make_engine(db)
    assert migrate(e) == ["006_access_token"]
    with e.connect() as c:
        indexes = {
            r[0]
            for r in c.execute(
                text("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = :t"),
                {"t": "accesstoken"},
            )
        }
    assert {"ux_accesstoken_hash", "ux_accesstoken_live"} <= indexes
    assert access.issue_link(e, "ada").annotator == "ada"
    e.dispose()


def test_cli_annotators(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    open_store(db_path, seed_demo=True).dispose()
    db = ["--db", str(db_path)]
    assert main(["annotators", "add", "Ada", *db, "--url-base", "http://h:1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("http://h:1/?token=")
    assert main(["annotators", "add", "ada", *db]) == 1
    assert "already has a live link" in capsys.readouterr().err
    assert main(["annotators", "list", "--json", *db]) == 0
    import json

    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["annotator"] == "ada"
    assert listed[0]["revoked_at"] is None
    assert main(["annotators", "revoke", "ada", *db]) == 0
    assert main(["annotators", "list", *db]) == 0
    assert "revoked" in capsys.readouterr().out


# --- the server's guard (aiohttp test client; no app process is started) ----------------


async def _client(db: Path, study: str | None = None) -> tuple[TestClient[Any, Any], Any]:
    reader = make_engine(db, immediate=False)
    server = StudyServer(db, reader, study=study)
    client: TestClient[Any, Any] = TestClient(TestServer(await server._make_app()))
    await client.start_server()
    return client, server


async def test_the_guard_checks_the_token_then_the_ticket(engine: Engine, db_path: Path) -> None:
    link = access.issue_link(engine, "ada")
    token = link.url.split("token=")[1]
    client, server = await _client(db_path)
    try:
        for query in ("", "?token=", "?token=" + "x" * 43):
            r = await client.get("/" + query)
            assert r.status == 403
            assert "No access" in await r.text()
        r = await client.get("/?token=" + token)
        assert r.status == 200
        assert r.headers["Referrer-Policy"] == "no-referrer"
        assert "default-src 'none'" in r.headers["Content-Security-Policy"]
        page = await r.text()
        assert "googleapis" not in page
        assert "https://" not in page
        assert "http://" not in page.replace("http://www.w3", "")
        assert token not in page  # the page carries a ticket, not the token
        (ticket,) = server._tickets
        assert f"/ws/{ticket}" in page
        assert server._tickets[ticket].holder == repo.TokenHolder("ada", None)
        # a revoked link's ticket opens no websocket
        access.revoke_link(engine, "ada")
        r = await client.get(f"/ws/{ticket}")
        assert r.status == 403
        assert not server._tickets  # used once
        r = await client.get("/ws/not-a-ticket")
        assert r.status == 403
        for path in ("/download/x", "/nothing"):
            assert (await client.get(path)).status == 404
        assert (await client.get("/static/js/textual.js")).status == 200
    finally:
        await client.close()
        server.reader.dispose()


async def test_a_server_for_one_study_refuses_links_for_another(
    engine: Engine, db_path: Path
) -> None:
    other = access.issue_link(engine, "ada", study="demo-arena").url.split("token=")[1]
    anywhere = access.issue_link(engine, "bob").url.split("token=")[1]
    client, server = await _client(db_path, study="demo-difficulty")
    try:
        assert (await client.get("/?token=" + other)).status == 403
        assert (await client.get("/?token=" + anywhere)).status == 200
        (ticket,) = server._tickets.values()
        assert ticket.holder == repo.TokenHolder("bob", "demo-difficulty")
    finally:
        await client.close()
        server.reader.dispose()


def test_the_app_process_gets_the_name_in_its_environment_only(tmp_path: Path) -> None:
    db = tmp_path / "we ird;$(x).db"
    command = app_command(db, python="/usr/bin/python3")
    assert command == ("/usr/bin/python3 -m annotate app --db '" + str(db) + "' --fixed-annotator")

    async def nothing(*_: Any) -> None:
        return None

    service = AnnotatorAppService(
        command,
        repo.TokenHolder("ada; rm -rf /", "demo-arena"),
        write_bytes=nothing,
        write_str=nothing,
        close=nothing,
        download_manager=None,
    )
    env = service._build_environment(80, 24)
    assert env[FIXED_ANNOTATOR_ENV] == "ada; rm -rf /"
    assert env[FIXED_STUDY_ENV] == "demo-arena"
    assert "ada" not in command


# --- the app with a fixed annotator --------------------------------------------------------


async def test_a_fixed_annotator_cannot_type_another_name(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="ada", fixed_annotator=True)
    async with app.run_test() as pilot:
        await settle(pilot)
        name = app.screen.query_one("#name", Input)
        assert name.disabled
        assert name.value == "ada"
        assert name.suggester is None  # no other annotators' names offered
        assert app.screen.focused is app.screen.query_one("#studies", OptionList)
        await pilot.press("escape", "z", "e", "d")
        await settle(pilot)
        assert app.annotator == "ada"
        assert app.is_running


async def test_a_link_for_one_study_lists_and_opens_only_it(engine: Engine) -> None:
    app = make_app(
        engine=engine, annotator="ada", fixed_annotator=True, only_study="demo-difficulty"
    )
    assert [r.name for r in app.list_studies("ada")] == ["demo-difficulty"]
    async with app.run_test() as pilot:
        await settle(pilot)
        app.open_study("demo-arena")
        await settle(pilot)
        assert type(app.screen).__name__ != "BattleScreen"


def test_fixed_annotator_needs_a_name(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["app", "--db", str(db_path), "--fixed-annotator"]) == 1
    assert FIXED_ANNOTATOR_ENV in capsys.readouterr().err


def test_serve_refuses_a_postgresql_password_before_connecting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # port 1 on localhost: if serve tried to connect first, the user would see a
    # connection error instead of the reason, and the password might be echoed
    url = "postgresql+psycopg://lead:s3cr3t-pw@127.0.0.1:1/study"
    assert main(["serve", "--db", url, "--port", "8123"]) == 1
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1
    assert "~/.pgpass" in err[0]
    assert "s3cr3t-pw" not in captured.err + captured.out
    assert "Traceback" not in captured.err
