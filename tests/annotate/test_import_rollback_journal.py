"""A large vote import written with a rollback journal (``engine.RollbackJournal``, issue 13).

An import of vote tables that runs with its own foreign-key checks leaves WAL mode for its
transaction when its connection is the only one on the file (the pages are then written
once, not to the WAL and again by the checkpoint), and puts the file back in WAL mode
after. These tests check that it does so only when alone, that the rows are those of an
import in WAL mode, that the file is in WAL mode after (a good import, a refused one, a
reader that opened the file meanwhile), and that a process killed in the middle of such
an import leaves a hot journal that the next opener rolls back (the database unchanged,
integrity ok, back in WAL mode).
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from annotate.errors import AnnotateError
from annotate.services import importing
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.store import repo
from annotate.store.engine import RollbackJournal, make_engine

from .test_import_fast import HEAD, base, row, uid
from .test_import_streamed import CHUNK, body, dump

__all__ = ["base"]  # the fixture (a closed database with the tiny studies)

ROOT = Path(__file__).resolve().parents[2]


def journal_mode(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        con.close()


@pytest.fixture
def large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every vote file counts as large: streamed in small chunks, indexes rebuilt, the
    import's own foreign-key checks (the session that may use a rollback journal)."""
    monkeypatch.setattr(importing, "STREAM_MIN_ROWS", 1)
    monkeypatch.setattr(importing, "STREAM_CHUNK_ROWS", CHUNK)
    monkeypatch.setattr(importing, "OWN_FOREIGN_KEYS_MIN_ROWS", 1)
    monkeypatch.setattr(repo, "BULK_REINDEX_MIN_ROWS", 1)


def import_watching(
    db: Path, csv: Path, monkeypatch: pytest.MonkeyPatch, during: Any = None
) -> tuple[dict[str, Any], list[str]]:
    """The import's report (or error) and the journal modes its bulk inserts ran in;
    ``during(db)`` is called inside the transaction."""
    modes: list[str] = []
    real = repo.bulk_insert_vote_batches

    def spy(session: Any, batches: Any, *, expected: int) -> int:
        modes.append(str(session.connection().exec_driver_sql("PRAGMA journal_mode").scalar()))
        if during is not None:
            during(db)
        return real(session, batches, expected=expected)

    monkeypatch.setattr(repo, "bulk_insert_vote_batches", spy)
    engine = open_store(db)
    try:
        result: dict[str, Any] = {"report": import_paths(engine, [csv]).as_dict()}
    except AnnotateError as err:
        result = {"error": str(err)}
    finally:
        engine.dispose()
        monkeypatch.setattr(repo, "bulk_insert_vote_batches", real)
    return result, modes


def test_alone_on_the_file_the_import_uses_a_rollback_journal(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, large: None
) -> None:
    """Alone: a rollback journal, the same rows as in WAL mode (another connection open),
    the file back in WAL mode with no journal left."""
    csv = tmp_path / "vote_log.csv"
    csv.write_text(HEAD + body(), encoding="utf-8")
    alone, shared = tmp_path / "alone.db", tmp_path / "shared.db"
    shutil.copy(base, alone)
    shutil.copy(base, shared)
    got_alone, modes_alone = import_watching(alone, csv, monkeypatch)
    other = sqlite3.connect(shared)  # an idle reader: SQLite refuses to leave WAL
    try:
        other.execute("SELECT count(*) FROM vote").fetchone()
        got_shared, modes_shared = import_watching(shared, csv, monkeypatch)
    finally:
        other.close()
    assert modes_alone == ["delete"]
    assert modes_shared == ["wal"]
    assert "error" not in got_alone, got_alone
    assert got_alone == got_shared
    assert dump(alone) == dump(shared)
    assert dump(alone)["check"] == "ok"
    for db in (alone, shared):
        assert journal_mode(db) == "wal"
        assert not Path(f"{db}-journal").exists()


def test_an_import_larger_than_the_page_cache_runs_in_wal_mode(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, large: None
) -> None:
    """Over ROLLBACK_JOURNAL_MAX_ROWS rows (pages that would spill into the file before
    COMMIT, locking readers out): WAL mode, as before."""
    monkeypatch.setattr(importing, "ROLLBACK_JOURNAL_MAX_ROWS", body().count("\n") - 1)
    csv = tmp_path / "vote_log.csv"
    csv.write_text(HEAD + body(), encoding="utf-8")
    db = tmp_path / "v.db"
    shutil.copy(base, db)
    got, modes = import_watching(db, csv, monkeypatch)
    assert "error" not in got, got
    assert modes == ["wal"]
    assert journal_mode(db) == "wal"


def test_a_refused_file_leaves_the_database_unchanged_and_in_wal_mode(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, large: None
) -> None:
    csv = tmp_path / "vote_log.csv"
    # the last row repeats the first row's vote id: found only across the whole file
    csv.write_text(
        HEAD + body() + row(1000, "tiny", "ann", "p1", "first", "", "", "", "", ""),
        encoding="utf-8",
    )
    db = tmp_path / "v.db"
    shutil.copy(base, db)
    before = dump(db)
    got, modes = import_watching(db, csv, monkeypatch)
    assert "error" in got, got
    assert "vote_log.csv:" in got["error"]
    assert "delete" in modes  # the streamed attempt, rolled back
    assert dump(db) == before
    assert journal_mode(db) == "wal"
    assert not Path(f"{db}-journal").exists()


def test_a_reader_opening_the_file_during_the_import_reads_the_committed_state(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, large: None
) -> None:
    """A connection of a reader engine opened while the import holds the file in
    rollback-journal mode: its WAL pragma is refused, it still opens and reads the
    committed state, and follows the file back to WAL mode after."""
    csv = tmp_path / "vote_log.csv"
    csv.write_text(HEAD + body(), encoding="utf-8")
    db = tmp_path / "v.db"
    shutil.copy(base, db)
    stored = len(dump(db)["votes"])
    reader = make_engine(db, immediate=False)
    seen: list[Any] = []

    def read(_: Path) -> None:
        with reader.connect() as conn:
            seen.append(conn.exec_driver_sql("PRAGMA journal_mode").scalar())
            seen.append(conn.exec_driver_sql("SELECT count(*) FROM vote").scalar())

    try:
        got, modes = import_watching(db, csv, monkeypatch, during=read)
        with reader.connect() as conn:
            after = conn.exec_driver_sql("SELECT count(*) FROM vote").scalar()
            mode_after = conn.exec_driver_sql("PRAGMA journal_mode").scalar()
    finally:
        reader.dispose()
    assert "error" not in got, got
    assert modes == ["delete"]
    assert seen == ["delete", stored]
    assert after == stored + body().count("\n")
    assert mode_after == "wal"
    assert journal_mode(db) == "wal"


def test_back_to_wal_waits_for_a_reader_then_the_next_connection_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader still in a read transaction when the block ends keeps the file from going
    back to WAL mode (after the wait, ``in_wal`` is False); the next connection an engine
    opens puts it back."""
    monkeypatch.setenv("ANNOTATE_LOCK_TIMEOUT", "0.3")
    db = tmp_path / "j.db"
    open_store(db).dispose()
    raw = sqlite3.connect(db, isolation_level=None)
    reader = sqlite3.connect(db, isolation_level=None, timeout=0.1)
    try:
        journal = RollbackJournal(raw)
        with journal:
            assert journal.active
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM vote").fetchone()
        assert not journal.in_wal
        reader.execute("COMMIT")
    finally:
        reader.close()
        raw.close()
    assert journal_mode(db) == "delete"
    engine = make_engine(db)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()
    assert journal_mode(db) == "wal"


KILLED_IMPORT = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from annotate.services import importing
    from annotate.services.db import open_store
    from annotate.store import repo

    db, csv = Path(sys.argv[1]), Path(sys.argv[2])
    importing.STREAM_MIN_ROWS = 1
    importing.OWN_FOREIGN_KEYS_MIN_ROWS = 1  # the session that may leave WAL
    repo.BULK_CACHE_KIB = 64  # a small page cache: the new pages spill into the file
    importing._journal_fits = lambda *_: True  # (which the page guard would refuse)
    real = repo.bulk_insert_vote_batches

    def killed(session, batches, *, expected):
        mode = session.connection().exec_driver_sql("PRAGMA journal_mode").scalar()
        assert mode == "delete", mode

        def then_die():
            yield from batches
            assert os.path.exists(f"{db}-journal")
            os.kill(os.getpid(), signal.SIGKILL)  # every row inserted, nothing committed

        return real(session, then_die(), expected=expected)

    repo.bulk_insert_vote_batches = killed
    importing.import_paths(open_store(db), [csv])
    """
)


def test_a_process_killed_during_the_import_leaves_the_database_as_it_was(
    tmp_path: Path, base: Path
) -> None:
    """SIGKILL after every row is inserted (pages spilled into the file, a hot journal
    beside it): the next opener rolls the journal back, the database is as before, its
    integrity ok, back in WAL mode."""
    csv = tmp_path / "vote_log.csv"
    lines = [
        row(10_000 + k, "tiny", f"k{k:05d}", "p1", "first", "", k, "", "", "")
        for k in range(20_000)
    ]
    csv.write_text(HEAD + "".join(lines), encoding="utf-8")
    db = tmp_path / "v.db"
    shutil.copy(base, db)
    before = dump(db)
    size = db.stat().st_size
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-P", "-c", KILLED_IMPORT, str(db), str(csv)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert Path(f"{db}-journal").exists()  # hot: the next opener rolls it back
    assert db.stat().st_size > size  # the new pages had reached the file
    engine = open_store(db)
    engine.dispose()
    assert dump(db) == before
    assert journal_mode(db) == "wal"
    assert not Path(f"{db}-journal").exists()
    assert uid(10_000) not in str(before["votes"])


def test_a_reader_holding_a_read_open_through_the_commit_fails_the_import_in_one_line(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, large: None
) -> None:
    """The README's limit of the rollback journal: a read transaction that starts during the
    import and is still open when the import commits (longer than the busy timeout, here
    shortened to 0.2 s) makes the commit fail with one line; the database is unchanged and
    goes back to WAL mode once the reader is gone."""
    from annotate.store import engine as engine_mod

    monkeypatch.setattr(engine_mod, "BUSY_TIMEOUT_MS", 200)
    csv = tmp_path / "vote_log.csv"
    csv.write_text(HEAD + body(), encoding="utf-8")
    db = tmp_path / "v.db"
    shutil.copy(base, db)
    before = dump(db)
    readers: list[sqlite3.Connection] = []

    def hold(path: Path) -> None:
        con = sqlite3.connect(path, isolation_level=None, timeout=0.2)
        con.execute("BEGIN")
        con.execute("SELECT count(*) FROM vote").fetchone()  # a SHARED lock, kept
        readers.append(con)

    try:
        got, modes = import_watching(db, csv, monkeypatch, during=hold)
    finally:
        for con in readers:
            con.close()
    assert modes == ["delete"]
    assert "error" in got, got
    message = got["error"]
    assert "\n" not in message, message
    assert "locked" in message, message
    assert "Traceback" not in message
    engine = open_store(db)  # the next opener: back in WAL mode, nothing written
    engine.dispose()
    assert journal_mode(db) == "wal"
    assert dump(db) == before
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()


def in_use_pages(db: Path) -> tuple[int, int]:
    """Pages the database uses (page_count less freelist_count) and its page size."""
    con = sqlite3.connect(db)
    try:
        pages = con.execute("PRAGMA page_count").fetchone()[0]
        free = con.execute("PRAGMA freelist_count").fetchone()[0]
        return pages - free, con.execute("PRAGMA page_size").fetchone()[0]
    finally:
        con.close()


def cache_kib_for(pages: int, page_size: int) -> int:
    """The bulk cache (KiB) that holds exactly ``pages`` pages for the guard."""
    return -(-pages * (page_size + importing.PAGE_CACHE_OVERHEAD) // 1024)


def test_a_database_larger_than_the_page_cache_keeps_wal_mode(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, large: None
) -> None:
    """The guard counts the pages the database uses, not only the rows: the same import,
    within the row bound, runs with a rollback journal into the small database and in WAL
    mode into the same database holding 64 more pages (here, a table of blobs), with a
    bulk cache that holds the first's pages and the new votes' but not the second's."""
    csv = tmp_path / "vote_log.csv"
    csv.write_text(HEAD + body(), encoding="utf-8")
    rows = body().count("\n")
    small, big = tmp_path / "small.db", tmp_path / "big.db"
    shutil.copy(base, small)
    shutil.copy(base, big)
    con = sqlite3.connect(big)
    try:
        page_size = con.execute("PRAGMA page_size").fetchone()[0]
        con.execute("CREATE TABLE filler (b BLOB)")
        con.executemany("INSERT INTO filler VALUES (zeroblob(?))", [(page_size,)] * 64)
        con.commit()
    finally:
        con.close()
    used, page_size = in_use_pages(small)
    assert in_use_pages(big)[0] >= used + 64
    new = -(-rows * importing.VOTE_BYTES // page_size)
    monkeypatch.setattr(repo, "BULK_CACHE_KIB", cache_kib_for(used + new + 8, page_size))
    got_small, modes_small = import_watching(small, csv, monkeypatch)
    got_big, modes_big = import_watching(big, csv, monkeypatch)
    assert "error" not in got_small, got_small
    assert got_small == got_big
    assert modes_small == ["delete"]
    assert modes_big == ["wal"]
    for db in (small, big):
        assert journal_mode(db) == "wal"
        assert not Path(f"{db}-journal").exists()


@pytest.mark.parametrize("guard", [True, False], ids=["page guard", "row bound only"])
def test_the_page_guard_keeps_an_import_that_would_spill_in_wal_mode(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, guard: bool
) -> None:
    """The case the guard is for: a bulk cache too small for the pages an import changes
    (here 64 KiB). With the row bound only (the guard before), the import leaves WAL, its
    changed pages spill into the file before COMMIT (SQLite's exclusive lock) and a
    program that opens the file then cannot read it ("database is locked"); with the page
    guard it runs in WAL mode and that program reads the last committed state."""
    monkeypatch.setattr(importing, "STREAM_MIN_ROWS", 1)
    monkeypatch.setattr(importing, "OWN_FOREIGN_KEYS_MIN_ROWS", 1)
    monkeypatch.setattr(repo, "BULK_CACHE_KIB", 64)
    if not guard:
        monkeypatch.setattr(importing, "_journal_fits", lambda *_: True)
    csv = tmp_path / "vote_log.csv"
    lines = [
        row(10_000 + k, "tiny", f"k{k:05d}", "p1", "first", "", k, "", "", "")
        for k in range(20_000)
    ]
    csv.write_text(HEAD + "".join(lines), encoding="utf-8")
    db = tmp_path / "v.db"
    shutil.copy(base, db)
    stored = len(dump(db)["votes"])
    size = db.stat().st_size
    seen: list[Any] = []
    real = repo.bulk_insert_vote_batches

    def reading_after_the_inserts(session: Any, batches: Any, *, expected: int) -> int:
        seen.append(session.connection().exec_driver_sql("PRAGMA journal_mode").scalar())

        def then_read() -> Any:
            yield from batches
            seen.append(db.stat().st_size > size)  # pages in the file before COMMIT
            con = sqlite3.connect(db, timeout=0.2)
            try:
                seen.append(con.execute("SELECT count(*) FROM vote").fetchone()[0])
            except sqlite3.OperationalError as err:
                seen.append(str(err))
            finally:
                con.close()

        return real(session, then_read(), expected=expected)

    monkeypatch.setattr(repo, "bulk_insert_vote_batches", reading_after_the_inserts)
    engine = open_store(db)
    try:
        report = import_paths(engine, [csv])
    finally:
        engine.dispose()
    assert report.votes_added == 20_000
    if guard:
        assert seen == ["wal", False, stored]
    else:
        assert seen == ["delete", True, "database is locked"]
    assert journal_mode(db) == "wal"
    assert len(dump(db)["votes"]) == stored + 20_000
