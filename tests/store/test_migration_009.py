"""Migration 009: ``ux_vote_supersedes`` partial (``WHERE supersedes IS NOT NULL``), issue 13.

The rule it enforces is unchanged (a vote is replaced at most once; any number of votes
replace nothing), the lookups by ``supersedes`` still use it, and a database from before
009 (the full index) gets the partial one with its votes kept. The same schema on
PostgreSQL is compared by tests/store/test_backends.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from annotate.services.db import open_store
from annotate.store.migrations import applied

PARTIAL = "CREATE UNIQUE INDEX ux_vote_supersedes ON vote (supersedes) WHERE supersedes IS NOT NULL"


def _index_sql(con: sqlite3.Connection) -> str:
    (sql,) = con.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'ux_vote_supersedes'"
    ).fetchone()
    return " ".join(str(sql).split())


def _vote(con: sqlite3.Connection, uuid: str, supersedes: str | None, annotator: str) -> None:
    con.execute(
        "INSERT OR IGNORE INTO annotator (name, created_at) VALUES (?, '2024-01-01 00:00:00')",
        (annotator,),
    )
    con.execute(
        """INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice, swapped, fast,
                             created_at, supersedes)
           SELECT ?, i.study_id, a.id, i.id, 'first', 0, 0, '2024-01-01 00:00:00', ?
           FROM item i, annotator a WHERE a.name = ? ORDER BY i.id LIMIT 1""",
        (uuid, supersedes, annotator),
    )


def _old_database(tmp_path: Path) -> Path:
    """A database as 008 left it: the full unique index, 009 not recorded, one chain."""
    db = tmp_path / "v.db"
    open_store(db, seed_demo=True).dispose()
    con = sqlite3.connect(db)
    con.execute("DROP INDEX ux_vote_supersedes")
    con.execute("CREATE UNIQUE INDEX ux_vote_supersedes ON vote (supersedes)")
    con.execute("DELETE FROM _migrations WHERE name = '009_partial_supersedes'")
    _vote(con, "u-1", None, "old")
    _vote(con, "u-2", "u-1", "old")
    con.commit()
    con.close()
    return db


def test_fresh_database_has_the_partial_index(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    engine = open_store(db, seed_demo=False)
    assert "009_partial_supersedes" in applied(engine)
    con = sqlite3.connect(db)
    try:
        assert _index_sql(con) == PARTIAL
    finally:
        con.close()


def test_009_makes_an_older_index_partial_and_keeps_the_rule(tmp_path: Path) -> None:
    db = _old_database(tmp_path)
    engine = open_store(db, seed_demo=False)
    assert "009_partial_supersedes" in applied(engine)
    engine.dispose()
    con = sqlite3.connect(db)
    try:
        assert _index_sql(con) == PARTIAL
        assert con.execute("SELECT uuid, supersedes FROM vote ORDER BY id").fetchall() == [
            ("u-1", None),
            ("u-2", "u-1"),
        ]
        # replacing a vote a second time is refused, as before
        with pytest.raises(sqlite3.IntegrityError, match=r"vote\.supersedes"):
            _vote(con, "u-3", "u-1", "other")
        # votes that replace nothing are not limited by it (another item's chain start)
        con.execute("INSERT INTO annotator (name, created_at) VALUES ('b', '2024')")
        con.execute(
            """INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice, swapped, fast,
                                 created_at)
               SELECT 'u-4', i.study_id, a.id, i.id, 'first', 0, 0, '2024' FROM item i,
               annotator a WHERE a.name = 'b' ORDER BY i.id DESC LIMIT 1"""
        )
        # the lookups by supersedes (a vote's replacement, the current_vote view) use it
        for sql in (
            "SELECT id FROM vote WHERE supersedes = 'u-1'",
            "SELECT count(*) FROM current_vote",
        ):
            plan = " ".join(r[3] for r in con.execute("EXPLAIN QUERY PLAN " + sql))
            assert "ux_vote_supersedes (supersedes=?)" in plan, plan
        assert con.execute("SELECT uuid FROM current_vote ORDER BY id").fetchall() == [
            ("u-2",),
            ("u-4",),
        ]
    finally:
        con.close()
