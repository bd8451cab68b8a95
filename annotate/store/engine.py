"""Engine creation: a SQLite file (pragmas on every new connection) or a PostgreSQL URL.

``--db`` takes either. A SQLite file queues its writers on a file lock beside it
(:mod:`annotate.store.writelock`) and begins every write with ``BEGIN IMMEDIATE``; a
PostgreSQL database serialises its writers with the server's own locking instead: every
transaction of a writer engine first takes one transaction-scoped advisory lock
(:data:`PG_WRITER_LOCK`), which the server releases at COMMIT or ROLLBACK, also when
the client dies. Readers (``immediate=False``) take nothing and see the last committed
state, as in WAL mode.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Engine, event, make_url
from sqlalchemy.exc import ArgumentError
from sqlmodel import create_engine

from annotate.store.errors import DatabaseError
from annotate.store.quick import default_db_path, is_database_url
from annotate.store.writelock import enter_queue, leave_queue, lock_timeout

__all__ = [
    "BUSY_TIMEOUT_MS",
    "CACHE_KIB",
    "PAGE_SIZE",
    "PG_WRITER_LOCK",
    "SYNCHRONOUS",
    "DbTarget",
    "RollbackJournal",
    "database_url",
    "default_db_path",
    "describe_target",
    "is_database_url",
    "is_postgres",
    "make_engine",
    "reader_engine",
]

DbTarget = Path | str
"""What ``--db`` names: a SQLite file (a path) or a database URL (``postgresql+psycopg://...``)."""

PG_WRITER_LOCK = 0x616E6E6F
"""Key of the transaction-scoped advisory lock every PostgreSQL writer takes first ("anno").

One key for the whole database, as SQLite has one write lock: a vote's checks (chain
head, overlap cap, reservations) and its insert run with no other writer in between,
and a long import makes the voters wait (for at most :func:`lock_timeout`, then a
one-line error) instead of interleaving with them.
"""

BUSY_TIMEOUT_MS = 5000
"""How long a writer waits for another process's lock before failing."""

CACHE_KIB = 32768
"""Page cache per connection (32 MiB): bulk imports touch many index pages."""

PAGE_SIZE = 16384
"""Page size in bytes of a SQLite file the store creates (SQLite's default is 4096).

Set on every connection before ``journal_mode=WAL``, it takes effect only in a file
with no page written yet; an existing database keeps its page size (a WAL database
can change it only by leaving WAL for a ``VACUUM``, see the README). 16 KiB pages
make the B-trees of a million-vote study shallower and its bulk import, index builds,
commit and checkpoint faster, its first monitor read a little faster, for ~0.3 ms more
per vote's commit (8 WAL frames of 16 KiB instead of 13 of 4 KiB) and ~0.7 MB more
in an empty database (``benchmarks/results/bench_scale_import_imp2.txt``, section Z).
"""

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
            # page_size before anything writes the file's first page (WAL does)
            cursor.execute(f"PRAGMA page_size={PAGE_SIZE}")
            _set_wal(cursor)
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA synchronous={synchronous}")
            cursor.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        finally:
            cursor.close()

    return set_pragmas


def _set_wal(cursor: Any) -> None:
    """``PRAGMA journal_mode=WAL`` on a new connection, unless the file is held in
    rollback-journal mode by a large import (:func:`rollback_journal`): SQLite refuses
    the change at once ("database is locked") while the importer holds its write lock.
    The connection then reads as readers of a rollback-journal file do (the committed
    state, waiting at most its busy timeout while the import commits) and follows the
    file back to WAL when the import has put it back (SQLite opens the WAL when the
    file's header says WAL)."""
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError as err:
        if "locked" not in str(err):
            raise


class RollbackJournal:
    """A transaction written with a rollback journal instead of the WAL, when its
    connection is the only one on the file (``with RollbackJournal(dbapi_connection)``
    around the transaction, outside it, holding the writer queue).

    For a bulk import into a file of few pages (a vote table filled from empty): in WAL
    mode every page the transaction writes goes to the WAL at COMMIT and is then copied
    into the file by the checkpoint (written and synced twice, ~0.65 s for a million
    votes); with a rollback journal the new pages are written once, and only the pages
    the file had before go to the journal. Crash safety and all-or-nothing are SQLite's
    own (``synchronous`` unchanged, ``FULL``: a crash leaves a hot journal that the next
    opener rolls back; the next connection any engine opens puts the file back in WAL).

    SQLite leaves WAL only when no other connection has the file open (else it refuses
    at once, "database is locked", and the transaction runs in WAL mode as before:
    :attr:`active` False). After the block the file goes back to WAL, waiting for
    readers that opened it meanwhile at most :func:`~annotate.store.writelock.lock_timeout`
    (:attr:`in_wal` False if it could not: the caller discards the connection, and the
    next connection opened puts the file back, :func:`_set_wal`). Not ``enabled``: the
    block runs in WAL mode.
    """

    def __init__(self, dbapi_connection: Any, *, enabled: bool = True) -> None:
        self._conn = dbapi_connection
        self._enabled = enabled
        self.active = False
        """Whether the block runs with a rollback journal."""
        self.in_wal = True
        """Whether the file is (back) in WAL mode."""

    def __enter__(self) -> RollbackJournal:
        if not self._enabled:
            return self
        try:
            mode = self._conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
        except sqlite3.OperationalError as err:
            if "locked" not in str(err):
                raise
            mode = "wal"  # another connection has the file open
        self.active = mode == "delete"
        self.in_wal = mode == "wal"
        return self

    def __exit__(self, *exc: object) -> None:
        if self.active:
            self.in_wal = _back_to_wal(self._conn)


def _back_to_wal(dbapi_connection: Any) -> bool:
    """:class:`RollbackJournal`'s way back: ``journal_mode=WAL``, retried while readers
    that opened the file meanwhile keep it locked; whether the file is in WAL mode."""
    deadline = time.monotonic() + lock_timeout()
    while True:
        try:
            mode = dbapi_connection.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except sqlite3.Error as err:
            if "locked" in str(err) and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            return False
        return bool(mode == "wal")


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


_PG_SCHEMES = ("postgresql", "postgresql+psycopg", "postgres")


def database_url(target: str) -> URL:
    """The SQLAlchemy URL of a ``--db`` database URL (PostgreSQL through psycopg 3).

    ``postgresql://`` and ``postgres://`` mean ``postgresql+psycopg://``; other drivers
    and other databases are refused with one line.

    Raises
    ------
    DatabaseError
        The URL does not parse or names another database or driver.
    """
    try:
        url = make_url(target)
    except ArgumentError as err:
        raise DatabaseError(
            f"--db {_hide_password(target)} is not a database URL ({err}); expected "
            "postgresql+psycopg://USER@HOST[:PORT]/DATABASE or a SQLite file path"
        ) from None
    if url.drivername not in _PG_SCHEMES:
        raise DatabaseError(
            f"--db {url.render_as_string(hide_password=True)}: the {url.drivername!r} database "
            "is not supported; expected postgresql+psycopg://USER@HOST[:PORT]/DATABASE "
            "or a SQLite file path"
        )
    if not url.database:
        raise DatabaseError(
            f"--db {url.render_as_string(hide_password=True)} names no database; expected "
            "postgresql+psycopg://USER@HOST[:PORT]/DATABASE (create it first: createdb NAME)"
        )
    return url.set(drivername="postgresql+psycopg")


def _hide_password(target: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", target)


def describe_target(target: DbTarget | Engine | None) -> str:
    """How messages name a database: the file's path or the URL without its password."""
    if target is None:
        return "the default database"
    if isinstance(target, Engine):
        if target.url.get_backend_name() == "sqlite":
            return target.url.database or "(in memory)"
        return target.url.render_as_string(hide_password=True)
    if isinstance(target, str) and is_database_url(target):
        return _hide_password(target)
    return str(target)


def is_postgres(engine: Engine) -> bool:
    """Whether ``engine`` is on a PostgreSQL server (else a SQLite file)."""
    return engine.url.get_backend_name() == "postgresql"


def _pg_begin_writer(conn: Any) -> None:
    # The first statement of the transaction: wait (at most the connection's
    # lock_timeout, see _make_pg_engine) for the writer lock; the server drops it at
    # COMMIT or ROLLBACK.
    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({PG_WRITER_LOCK})")


def _make_pg_engine(url: URL, *, immediate: bool) -> Engine:
    # timestamps are stored as UTC without a zone, as on SQLite; a writer waits for a
    # lock (the writer lock first of all) at most lock_timeout() seconds
    from annotate.store.models import postgresql_options

    postgresql_options()  # the partial indexes' WHERE, before anything is created
    options = "-c timezone=UTC"
    if immediate:
        options += f" -c lock_timeout={max(1, int(lock_timeout() * 1000))}"
    engine = create_engine(url, connect_args={"options": options, "connect_timeout": 10})
    if immediate:
        event.listen(engine, "begin", _pg_begin_writer)
    return engine


def reader_engine(engine: Engine) -> Engine:
    """A new engine on the same database whose transactions never wait for writers.

    SQLite: the file opened with ``immediate=False`` (no writer queue, plain ``BEGIN``);
    PostgreSQL: the URL without the writer lock. An in-memory database is ``engine``
    itself.
    """
    if is_postgres(engine):
        return _make_pg_engine(engine.url, immediate=False)
    path = engine.url.database
    if not path or path == ":memory:":
        return engine
    return make_engine(Path(path), immediate=False)


def make_engine(
    path: DbTarget, *, immediate: bool = True, synchronous: str = SYNCHRONOUS
) -> Engine:
    """Create an engine for the SQLite file at ``path`` (the file is created if missing).

    A new file gets 16 KiB pages (:data:`PAGE_SIZE`). Every new connection gets
    ``journal_mode=WAL``, ``foreign_keys=ON``,
    ``busy_timeout=5000``, ``synchronous=FULL`` (see :data:`SYNCHRONOUS`; the
    ``synchronous`` parameter exists for the benchmark that prices it) and a 32 MiB
    page cache. With ``immediate`` (the default, for writers) every transaction first
    queues on the database's writer lock (:mod:`annotate.store.writelock`, held until it
    commits or rolls back) and starts with ``BEGIN IMMEDIATE``; readers such as the
    monitor pass ``immediate=False`` and never wait for writers. No folder is created:
    :func:`annotate.services.db.open_store` creates only the default data folder.

    ``path`` may also be a PostgreSQL URL (see :func:`database_url`); ``immediate`` then
    makes every transaction take the writer lock :data:`PG_WRITER_LOCK` first, and
    ``synchronous`` does not apply (the server's ``synchronous_commit`` decides).
    """
    if isinstance(path, str) and is_database_url(path):
        return _make_pg_engine(database_url(path), immediate=immediate)
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
