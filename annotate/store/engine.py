"""Engine creation with the pragmas set on every new connection."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlmodel import create_engine

from annotate.store.quick import default_db_path
from annotate.store.writelock import enter_queue, leave_queue

__all__ = ["BUSY_TIMEOUT_MS", "CACHE_KIB", "SYNCHRONOUS", "default_db_path", "make_engine"]

BUSY_TIMEOUT_MS = 5000
"""How long a writer waits for another process's lock before failing."""

CACHE_KIB = 32768
"""Page cache per connection (32 MiB): bulk imports touch many index pages."""

SYNCHRONOUS = "FULL"
"""SQLite ``synchronous`` level of every connection.

``FULL`` syncs the write-ahead log at every commit, so a vote acknowledged on screen
survives a power cut or an OS crash; ``NORMAL`` (what the style guide suggests for WAL)
syncs only at checkpoints and may lose the last commits on power loss. Issue 9 overrides
the style guide: votes arrive at human speed and a few milliseconds per vote buy their
durability (``benchmarks/bench_store.py`` prints the cost per vote of both settings).
"""


def _pragmas(synchronous: str) -> Callable[[Any, Any], None]:
    def set_pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            # busy_timeout first: switching a new file to WAL may wait for another opener.
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA synchronous={synchronous}")
            cursor.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        finally:
            cursor.close()

    return set_pragmas


def _begin_immediate(conn: Any) -> None:
    # Take the write lock at BEGIN so that two writers never deadlock on a
    # read-to-write upgrade. Queue first on the writer lock beside the database
    # (annotate.store.writelock): SQLite's busy handler polls and is not fair, the
    # queue is, and its wait ends with a one-line message.
    db = conn.engine.url.database
    enter_queue(db)
    try:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    except BaseException:
        leave_queue(db)
        raise
    conn.info[_QUEUED] = db


def _end_transaction(conn: Any) -> None:
    if _QUEUED in conn.info:
        leave_queue(conn.info.pop(_QUEUED))


_QUEUED = "annotate_writer_queue"


def _begin_deferred(conn: Any) -> None:
    conn.exec_driver_sql("BEGIN")


def make_engine(
    path: Path | str, *, immediate: bool = True, synchronous: str = SYNCHRONOUS
) -> Engine:
    """Create an engine for the SQLite file at ``path`` (the file is created if missing).

    Every new connection gets ``journal_mode=WAL``, ``foreign_keys=ON``,
    ``busy_timeout=5000``, ``synchronous=FULL`` (see :data:`SYNCHRONOUS`; the
    ``synchronous`` parameter exists for the benchmark that prices it) and a 32 MiB
    page cache. With ``immediate`` (the default, for writers) every transaction first
    queues on the database's writer lock (:mod:`annotate.store.writelock`, held until it
    commits or rolls back) and starts with ``BEGIN IMMEDIATE``; readers such as the
    monitor pass ``immediate=False`` and never wait for writers. No folder is created:
    :func:`annotate.services.db.open_store` creates only the default data folder.
    """
    if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, got {synchronous!r}")
    path = Path(path)
    engine = create_engine(
        f"sqlite:///{path}",
        connect_args={"check_same_thread": False, "isolation_level": None},
    )
    event.listen(engine, "connect", _pragmas(synchronous.upper()))
    event.listen(engine, "begin", _begin_immediate if immediate else _begin_deferred)
    if immediate:
        event.listen(engine, "commit", _end_transaction)
        event.listen(engine, "rollback", _end_transaction)
    return engine
