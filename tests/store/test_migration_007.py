"""Migration 007: ``vote.selection_probability`` (issue 16 item 3, the adaptive schedule)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from annotate.services.db import open_store
from annotate.store.migrations import applied


def _columns(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return [r[1] for r in con.execute("PRAGMA table_info(vote)")]
    finally:
        con.close()


def test_fresh_database_has_the_column_and_007_is_a_no_op(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    engine = open_store(db, seed_demo=False)
    assert "007_selection_probability" in applied(engine)
    assert _columns(db).count("selection_probability") == 1


def test_007_adds_the_column_to_an_older_database_keeping_votes(tmp_path: Path) -> None:
    """A database from before 007 (the column dropped, 007 not recorded) gets the column
    with ALTER TABLE ADD COLUMN; its votes are kept, with the new column empty."""
    db = tmp_path / "v.db"
    engine = open_store(db, seed_demo=True)
    engine.dispose()
    con = sqlite3.connect(db)
    con.execute("INSERT INTO annotator (name, created_at) VALUES ('old', '2024-01-01 00:00:00')")
    con.execute(
        """INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice, swapped, fast,
                             created_at)
           SELECT 'u-1', i.study_id, a.id, i.id, 'first', 0, 0, '2024-01-01 00:00:00'
           FROM item i, annotator a WHERE a.name = 'old' LIMIT 1"""
    )
    con.execute("ALTER TABLE vote DROP COLUMN selection_probability")
    con.execute("DELETE FROM _migrations WHERE name = '007_selection_probability'")
    con.commit()
    con.close()
    assert "selection_probability" not in _columns(db)
    engine = open_store(db, seed_demo=False)
    assert "007_selection_probability" in applied(engine)
    assert "selection_probability" in _columns(db)
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT uuid, selection_probability FROM vote").fetchall() == [
            ("u-1", None)
        ]
    finally:
        con.close()
