"""Engine creation with the pragmas set on every new connection."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlmodel import create_engine

BUSY_TIMEOUT_MS = 5000
"""How long a writer waits for another process's lock before failing."""

CACHE_KIB = 32768
"""Page cache per connection (32 MiB): bulk imports touch many index pages."""


def default_db_path() -> Path:
    """The default database: ``votes.db`` in the per-user data directory.

    ``ANNOTATE_DATA_DIR`` overrides the directory (tests and portable setups);
    otherwise it is platformdirs' user data dir for ``annotate`` (on Linux
    ``~/.local/share/annotate``).
    """
    env = os.environ.get("ANNOTATE_DATA_DIR")
    if env:
        return Path(env) / "votes.db"
    from platformdirs import user_data_path

    return user_data_path("annotate", appauthor=False) / "votes.db"


def _set_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    finally:
        cursor.close()


def _begin_immediate(conn: Any) -> None:
    # Take the write lock at BEGIN so that two writers never deadlock on a
    # read-to-write upgrade; busy_timeout then makes the second one wait.
    conn.exec_driver_sql("BEGIN IMMEDIATE")


def _begin_deferred(conn: Any) -> None:
    conn.exec_driver_sql("BEGIN")


def make_engine(path: Path | str, *, immediate: bool = True) -> Engine:
    """Create an engine for the SQLite file at ``path`` (created if missing).

    Every new connection gets ``journal_mode=WAL``, ``foreign_keys=ON``,
    ``busy_timeout=5000``, ``synchronous=NORMAL`` and a 32 MiB page cache. With ``immediate`` (the
    default, for writers) transactions start with ``BEGIN IMMEDIATE``; readers
    such as the monitor pass ``immediate=False`` and never wait for writers.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        f"sqlite:///{path}",
        connect_args={"check_same_thread": False, "isolation_level": None},
    )
    event.listen(engine, "connect", _set_pragmas)
    event.listen(engine, "begin", _begin_immediate if immediate else _begin_deferred)
    return engine
