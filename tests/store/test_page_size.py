"""Page size: a new SQLite file gets 16 KiB pages; an existing one keeps its own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession
from annotate.store.engine import PAGE_SIZE

DATA = Path(__file__).resolve().parent.parent / "data"


def _page_size(path: Path) -> int:
    con = sqlite3.connect(path)
    try:
        size: int = con.execute("PRAGMA page_size").fetchone()[0]
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        return size
    finally:
        con.close()


def _vote_twice(path: Path) -> None:
    engine = open_store(path)
    try:
        import_paths(engine, [DATA / "studies" / "tiny-arena"])
        session = VotingSession(engine, "tiny-arena", "ann")
        session.vote("a", 3000)
        session.vote("tie", 3000)
    finally:
        engine.dispose()


@pytest.mark.parametrize("touched", [False, True], ids=["missing", "empty-file"])
def test_new_database_gets_16_kib_pages(tmp_path: Path, touched: bool) -> None:
    db = tmp_path / "new.db"
    if touched:
        db.touch()  # a zero-byte file is an empty database to SQLite
    _vote_twice(db)
    assert PAGE_SIZE == 16384
    assert _page_size(db) == PAGE_SIZE


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_existing_database_keeps_its_page_size(tmp_path: Path, journal: str) -> None:
    # a database written before 16 KiB pages (SQLite's default 4096), in WAL mode as the
    # store leaves it, or in rollback mode as another tool may: no VACUUM behind the
    # user's back, the file keeps its pages and takes votes
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA page_size=4096")
    con.execute(f"PRAGMA journal_mode={journal}")
    con.execute("CREATE TABLE unrelated (x INTEGER)")
    con.execute("INSERT INTO unrelated VALUES (1)")
    con.commit()
    con.close()
    _vote_twice(db)
    assert _page_size(db) == 4096
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM vote").fetchone()[0] == 2
    assert con.execute("SELECT x FROM unrelated").fetchall() == [(1,)]
    con.close()
