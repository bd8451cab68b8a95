"""Migration 005: the vote table's UNIQUE (uuid) and UNIQUE (supersedes) constraints
become the named unique indexes ux_vote_uuid and ux_vote_supersedes (issue 13), and the
bulk import drops and rebuilds them inside its transaction."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from annotate.errors import InputFileError
from annotate.services import importing
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.store import repo
from annotate.store.migrations import MIGRATIONS, applied

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
HEAD = "vote_id,study,annotator,item_id,choice,left,response_ms,fast,created_at,supersedes\n"


V004 = (
    "id, uuid, study_id, annotator_id, item_id, choice, swapped, response_ms, fast, "
    "created_at, supersedes"
)
"""The vote columns of schema 004 (later migrations add columns: 008 retest_of)."""


def uid(k: int) -> str:
    return f"00000000-0000-4000-8000-{k:012d}"


def schema(db: Path) -> list[tuple[str, str, str, str]]:
    """sqlite_master, normalised: whitespace collapsed, quotes around names dropped (the
    rebuild's RENAME stores ``CREATE TABLE "vote"``), sorted by name."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    con.close()
    out = []
    for kind, name, tbl, sql in rows:
        norm = re.sub(r"\s+", " ", sql or "").replace('"', "").strip()
        out.append((kind, name, tbl, norm))
    return sorted(out, key=lambda r: (r[1], r[0]))


def old_database(path: Path) -> Path:
    """A database at migration 004 (the schema before 005) holding votes and a note."""
    con = sqlite3.connect(path)
    con.executescript((HERE / "data" / "schema_004.sql").read_text(encoding="utf-8"))
    with con:
        con.execute("PRAGMA foreign_keys=ON")
        con.execute(
            "INSERT INTO study (id, name, kind, title, description, settings_json, fingerprint,"
            " created_at) VALUES (1, 's', 'difficulty', '', '', '{}', '', '2025-01-01')"
        )
        con.executemany(
            "INSERT INTO item (id, study_id, key, position) VALUES (?, 1, ?, ?)",
            [(i, f"p{i}", i) for i in (1, 2)],
        )
        con.executemany(
            "INSERT INTO annotator (id, name, created_at) VALUES (?, ?, '2025-01-01')",
            [(1, "ann"), (2, "bob")],
        )
        votes = [
            (1, uid(1), 1, 1, 1, "first", 0, 1200, 0, "2025-01-01 10:00:00", None),
            (2, uid(2), 1, 1, 2, "second", 1, None, 1, "2025-01-01 10:00:01.500000", None),
            (3, uid(3), 1, 1, 1, "second", 0, 7, 0, "2025-01-01 10:00:02", uid(1)),
            (5, uid(5), 1, 1, 1, "retract", 0, None, 0, "2025-01-01 10:00:03", uid(3)),
            (9, uid(9), 1, 2, 1, "skip", 0, 3, 0, "2025-01-01 10:00:04", None),
        ]
        con.executemany("INSERT INTO vote VALUES (?,?,?,?,?,?,?,?,?,?,?)", votes)
        con.execute(
            "INSERT INTO itemnote (uuid, study_id, item_id, annotator_id, vote_uuid, kind, "
            "reason, text, created_at) VALUES (?, 1, 1, 1, ?, 'flag', 'typo', 'x', "
            "'2025-01-01')",
            (uid(100), uid(1)),
        )
    con.close()
    return path


def test_migrated_database_has_the_schema_of_a_fresh_one(tmp_path: Path) -> None:
    old = old_database(tmp_path / "old.db")
    con = sqlite3.connect(old)
    before = con.execute(f"SELECT {V004} FROM vote ORDER BY id").fetchall()
    current_before = con.execute(f"SELECT {V004} FROM current_vote ORDER BY id").fetchall()
    con.close()
    assert "sqlite_autoindex_vote_1" in [r[1] for r in schema(old)]

    engine = open_store(old)
    assert applied(engine) == [name for name, _ in MIGRATIONS]
    with engine.connect() as c:  # the pragma is back on for the migrating connection's pool
        assert c.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
    engine.dispose()
    fresh_engine = open_store(tmp_path / "fresh.db")
    fresh_engine.dispose()

    assert schema(old) == schema(tmp_path / "fresh.db")
    names = [r[1] for r in schema(old)]
    assert "ux_vote_uuid" in names
    assert "ux_vote_supersedes" in names
    assert not [n for n in names if n.startswith("sqlite_autoindex_vote")]
    con = sqlite3.connect(old)
    assert con.execute(f"SELECT {V004} FROM vote ORDER BY id").fetchall() == before
    assert con.execute(f"SELECT {V004} FROM current_vote ORDER BY id").fetchall() == current_before
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.execute("PRAGMA foreign_keys=ON")
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    # the constraints still hold, now through the named indexes
    dup_uuid = (uid(1), 1, 2, 2, "first", 0, None, 0, "2025-01-02", None)
    dup_sup = (uid(20), 1, 1, 1, "first", 0, None, 0, "2025-01-02", uid(1))
    cols = ", ".join(repo.VOTE_INSERT_COLUMNS)
    for row, column in ((dup_uuid, "uuid"), (dup_sup, "supersedes")):
        with pytest.raises(sqlite3.IntegrityError, match=f"vote.{column}"), con:
            con.execute(f"INSERT INTO vote ({cols}) VALUES (?,?,?,?,?,?,?,?,?,?)", row)
    con.close()

    # running the migrations again changes nothing
    engine = open_store(old)
    engine.dispose()
    assert schema(old) == schema(tmp_path / "fresh.db")


@pytest.fixture
def base(tmp_path: Path) -> Path:
    path = tmp_path / "base.db"
    engine = open_store(path)
    import_paths(engine, [DATA / "studies" / "tiny-difficulty", DATA / "studies" / "tiny-arena"])
    engine.dispose()
    return path


def snapshot(db: Path) -> tuple[Any, ...]:
    con = sqlite3.connect(db)
    try:
        return (
            con.execute(f"SELECT {V004} FROM vote ORDER BY id").fetchall(),
            con.execute("SELECT * FROM annotator ORDER BY id").fetchall(),
            schema(db),
        )
    finally:
        con.close()


def test_bulk_import_duplicate_uuid_at_index_rebuild_is_a_one_line_error(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vote id stored in another study that gets past the checks (here: the stored-id
    check switched off) fails when ux_vote_uuid is rebuilt: file, line, field; rollback."""
    engine = open_store(base)
    first = tmp_path / "first.csv"
    first.write_text(HEAD + f"{uid(7)},tiny-arena,ann,b1,tie,,,,,\n", encoding="utf-8")
    import_paths(engine, [first])
    engine.dispose()
    before = snapshot(base)

    monkeypatch.setattr(repo, "BULK_REINDEX_MIN_ROWS", 0)
    monkeypatch.setattr(importing, "_any_stored", lambda s, uuids, total: False)
    csv = tmp_path / "votes.csv"
    csv.write_text(
        HEAD + f"{uid(1)},tiny,ann,p1,first,,,,,\n{uid(7)},tiny,ann,p2,first,,,,,\n",
        encoding="utf-8",
    )
    engine = open_store(base)
    with pytest.raises(InputFileError) as info:
        import_paths(engine, [csv])
    engine.dispose()
    err = info.value
    assert (err.line, err.field) == (3, "vote_id")
    assert "\n" not in str(err)
    assert uid(7) in str(err)
    assert snapshot(base) == before
    con = sqlite3.connect(base)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()


def _rows(base: Path) -> tuple[int, int, int]:
    con = sqlite3.connect(base)
    (sid,) = con.execute("SELECT id FROM study WHERE name = 'tiny'").fetchone()
    items = [r[0] for r in con.execute("SELECT id FROM item WHERE study_id = ?", (sid,))]
    con.execute("INSERT INTO annotator (name, created_at) VALUES ('ann', '2025-01-01')")
    con.commit()
    (aid,) = con.execute("SELECT id FROM annotator WHERE name = 'ann'").fetchone()
    con.close()
    return sid, aid, items[0]


def test_bulk_insert_double_supersede_fails_at_rebuild_and_rolls_back(base: Path) -> None:
    """Two rows superseding one vote fail the bulk insert (ux_vote_supersedes, kept during
    it: repo.BULK_KEPT_INDEXES); the rollback leaves the database as it was."""
    sid, aid, item = _rows(base)
    before = snapshot(base)
    engine = open_store(base)
    rows = [
        (uid(1), sid, aid, item, "first", 0, None, 0, "2025-01-01 00:00:00", None),
        (uid(2), sid, aid, item, "second", 0, None, 0, "2025-01-01 00:00:01", uid(1)),
        (uid(3), sid, aid, item, "skip", 0, None, 0, "2025-01-01 00:00:02", uid(1)),
    ]
    old = repo.BULK_REINDEX_MIN_ROWS
    repo.BULK_REINDEX_MIN_ROWS = 0
    try:
        with (
            pytest.raises(sqlite3.IntegrityError, match=r"vote\.supersedes"),
            Session(engine) as s,
            s.begin(),
        ):
            repo.bulk_insert_vote_batches(s, [rows], expected=len(rows))
    finally:
        repo.BULK_REINDEX_MIN_ROWS = old
    engine.dispose()
    assert snapshot(base) == before


def test_no_other_writer_while_the_unique_indexes_are_dropped(tmp_path: Path, base: Path) -> None:
    """While the bulk insert runs with ux_vote_uuid dropped, a second connection (not
    queueing on the writer lock file) cannot write a vote, and readers still see the
    committed schema with the index."""
    sid, aid, item = _rows(base)
    engine = open_store(base)
    seen: dict[str, Any] = {}

    def batches() -> Iterator[list[tuple[Any, ...]]]:
        yield [(uid(1), sid, aid, item, "first", 0, None, 0, "2025-01-01 00:00:00", None)]
        other = sqlite3.connect(base, timeout=0.2)
        try:
            seen["names"] = {r[0] for r in other.execute("SELECT name FROM sqlite_master")}
            try:
                other.execute(
                    f"INSERT INTO vote ({', '.join(repo.VOTE_INSERT_COLUMNS)}) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (uid(1), sid, aid, item, "second", 0, None, 0, "2025-01-01", None),
                )
                other.commit()
                seen["write"] = "written"
            except sqlite3.OperationalError as err:
                seen["write"] = str(err)
        finally:
            other.close()

    old = repo.BULK_REINDEX_MIN_ROWS
    repo.BULK_REINDEX_MIN_ROWS = 0
    try:
        with Session(engine) as s, s.begin():
            repo.bulk_insert_vote_batches(s, batches(), expected=1)
    finally:
        repo.BULK_REINDEX_MIN_ROWS = old
    engine.dispose()
    assert seen["write"] == "database is locked"
    assert {"ux_vote_uuid", "ux_vote_supersedes"} <= seen["names"]
    con = sqlite3.connect(base)
    assert con.execute("SELECT count(*) FROM vote").fetchone() == (1,)
    con.close()


def test_migration_needs_foreign_keys_off(tmp_path: Path) -> None:
    """Run inside an ordinary transaction (foreign keys on), 005 refuses."""
    from sqlalchemy import text

    from annotate.store.errors import DatabaseError
    from annotate.store.migrations import _m005_vote_unique_indexes

    old = old_database(tmp_path / "old.db")
    from annotate.store.engine import make_engine

    engine = make_engine(old)
    with engine.begin() as conn:
        conn.execute(text("SELECT 1"))
        with pytest.raises(DatabaseError):
            _m005_vote_unique_indexes(conn)
    engine.dispose()
    assert "sqlite_autoindex_vote_1" in [r[1] for r in schema(old)]
