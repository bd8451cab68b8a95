"""The bulk import rebuilds ``ux_vote_uuid`` with SQLite's threaded sorter (issue 13).

``repo._threaded_sort`` gives the ``CREATE INDEX`` of the vote ids ``PRAGMA threads`` and
a small sorter run (``cache_size``, with ``cache_spill`` off) for the statement. Here the
run is made tiny (``SORTER_RUN_KIB``) so that sixty thousand vote ids overflow several
runs: the sorter then writes sorted runs from its worker threads and merges them. The
index must be the one a plain build makes (SQLite's ``integrity_check`` compares every
index entry with its row; the ids come back in ``memcmp`` order, checked against
Python's ``sorted`` of the same ASCII strings), a duplicate id must still fail as a
UNIQUE violation and roll back, and the connection's pragmas must be back afterwards.
"""

from __future__ import annotations

import sqlite3
import uuid as uuidlib
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.store import repo

DATA = Path(__file__).resolve().parent.parent / "data"
N = 60_000
"""Rows: ~3.4 MB of sorter records ((uuid, rowid) keys), more than three runs of SQLite's
smallest (250 pages of 4 KiB, ``SQLITE_SORTER_PMASZ``), which a tiny ``SORTER_RUN_KIB``
gives (checked by hand with ``strace -f -e clone``: the build starts worker threads)."""


@pytest.fixture
def base(tmp_path: Path) -> Path:
    path = tmp_path / "base.db"
    engine = open_store(path)
    import_paths(engine, [DATA / "studies" / "tiny-arena"])
    engine.dispose()
    return path


@pytest.fixture(autouse=True)
def small_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repo, "BULK_REINDEX_MIN_ROWS", 0)
    monkeypatch.setattr(repo, "SORTER_RUN_KIB", 8)


def _rows(base: Path, uuids: list[str]) -> list[tuple[Any, ...]]:
    """One chain root per vote id: each annotator votes once on each item of the study."""
    con = sqlite3.connect(base)
    (sid,) = con.execute("SELECT id FROM study WHERE name = 'tiny-arena'").fetchone()
    items = [r[0] for r in con.execute("SELECT id FROM item WHERE study_id = ?", (sid,))]
    con.executemany(
        "INSERT INTO annotator (name, created_at) VALUES (?, '2025-01-01')",
        [(f"a{k}",) for k in range(-(-len(uuids) // len(items)))],
    )
    con.commit()
    ids = [r[0] for r in con.execute("SELECT id FROM annotator WHERE name LIKE 'a%' ORDER BY id")]
    con.close()
    return [
        (u, sid, ids[k // len(items)], items[k % len(items)], "tie", 0, None, 0, "2025-01-01", None)
        for k, u in enumerate(uuids)
    ]


def _pragmas(s: Session) -> tuple[Any, ...]:
    conn = s.connection().connection.dbapi_connection
    assert conn is not None
    return tuple(
        conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("threads", "cache_size", "cache_spill")
    )


def test_threaded_rebuild_makes_the_same_index(base: Path) -> None:
    uuids = [str(uuidlib.UUID(int=k * 0x9E3779B97F4A7C15 % (1 << 128))) for k in range(1, N + 1)]
    rows = _rows(base, uuids)
    engine = open_store(base)
    with Session(engine) as s, s.begin():
        before = _pragmas(s)
        assert repo.bulk_insert_vote_batches(s, [rows], expected=len(rows)) == N
        assert _pragmas(s) == before
    engine.dispose()
    con = sqlite3.connect(base)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        indexed = [
            r[0] for r in con.execute("SELECT uuid FROM vote INDEXED BY ux_vote_uuid ORDER BY uuid")
        ]
        assert indexed == sorted(uuids)
        sql = con.execute("SELECT sql FROM sqlite_master WHERE name = 'ux_vote_uuid'").fetchone()
        assert sql == ("CREATE UNIQUE INDEX ux_vote_uuid ON vote (uuid)",)
    finally:
        con.close()


def test_threaded_rebuild_still_refuses_a_duplicate_id(base: Path) -> None:
    uuids = [str(uuidlib.UUID(int=k * 0x9E3779B97F4A7C15 % (1 << 128))) for k in range(1, N + 1)]
    uuids[-1] = uuids[N // 2]
    rows = _rows(base, uuids)
    con = sqlite3.connect(base)
    votes_before = con.execute("SELECT count(*) FROM vote").fetchone()
    con.close()
    engine = open_store(base)
    seen: dict[str, Any] = {}

    def insert() -> None:
        with Session(engine) as s, s.begin():
            seen["conn"] = s.connection().connection.dbapi_connection
            seen["before"] = _pragmas(s)
            repo.bulk_insert_vote_batches(s, [rows], expected=len(rows))

    with pytest.raises(sqlite3.IntegrityError, match=r"vote\.uuid"):
        insert()
    conn = seen["conn"]
    after = tuple(
        conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("threads", "cache_size", "cache_spill")
    )
    assert after == seen["before"]
    engine.dispose()
    con = sqlite3.connect(base)
    try:
        assert con.execute("SELECT count(*) FROM vote").fetchone() == votes_before
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        assert "ux_vote_uuid" in names
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        con.close()
