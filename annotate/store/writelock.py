"""The writer queue: an OS file lock beside the database that every writer takes first.

SQLite's busy handler polls, so with many processes writing at once one of them can
lose every poll for longer than the busy timeout and fail with "database is locked".
Every writer of this project (votes, undo, reservations, migrations, ``annotate import``)
therefore queues on ``<db>.write-lock`` before it asks SQLite for its write lock. The
lock dies with its process (``kill -9`` leaves nothing held).

Shared folders: the lock file is created with the database file's permission bits and
group (as SQLite does for its ``-wal`` and ``-shm`` files), so every user who may write
the database may also queue. A lock file that exists but is not writable for this user
is opened read-only (``flock`` needs no write access).

A wait ends after :data:`LOCK_TIMEOUT_S` seconds (``ANNOTATE_LOCK_TIMEOUT`` overrides)
with a one-line :class:`WriteLockTimeoutError` naming the process that holds the lock.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

from annotate.store.errors import DatabaseError, database_fault

try:
    import fcntl
except ImportError:  # Windows: SQLite's busy timeout alone
    fcntl = None  # type: ignore[assignment]

LOCK_TIMEOUT_S = 60.0
"""How long a writer waits for the write lock before giving up with a message.

A vote holds the lock for a few milliseconds; an ``annotate import`` of a large file
for seconds. A minute covers a large import without leaving a person staring at a
frozen screen.
"""

LOCK_TIMEOUT_ENV = "ANNOTATE_LOCK_TIMEOUT"
"""Environment variable that overrides :data:`LOCK_TIMEOUT_S` (seconds)."""


class WriteLockTimeoutError(DatabaseError):
    """Another process held the database's write lock for longer than the timeout."""

    def __init__(self, db: str, waited: float, holder: str) -> None:
        who = f"held by {holder}" if holder else "held by another process"
        super().__init__(
            f"the database {db} is busy: its write lock ({db}.write-lock) was {who} for more "
            f"than {waited:.0f} s; wait for that process to finish (or stop it) and try again "
            f"(set {LOCK_TIMEOUT_ENV}=SECONDS to wait longer)",
            title="Database busy",
        )
        self.db = db
        self.holder = holder


def lock_timeout() -> float:
    """The wait limit in seconds: ``ANNOTATE_LOCK_TIMEOUT`` if set and valid, else the default."""
    raw = os.environ.get(LOCK_TIMEOUT_ENV)
    if raw:
        try:
            value = float(raw)
        except ValueError:
            return LOCK_TIMEOUT_S
        if value >= 0 and value == value:  # not NaN
            return value
    return LOCK_TIMEOUT_S


def lock_path(db: Path | str) -> Path:
    """The lock file of the database at ``db``."""
    return Path(f"{db}.write-lock")


def _open_lock(db: Path) -> int | None:
    """Open (creating with the database's mode and group) the lock file; None if impossible."""
    path = lock_path(db)
    try:
        st = os.stat(db)
        mode = stat.S_IMODE(st.st_mode) & 0o666
        gid: int | None = st.st_gid
    except OSError:  # no database file yet: the process's umask decides, as for the db
        mode, gid = 0o666, None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        try:
            return os.open(path, os.O_RDWR)
        except PermissionError:
            try:
                return os.open(path, os.O_RDONLY)
            except OSError:
                return None
        except OSError:
            return None
    except OSError:  # a read-only folder: SQLite reports the write itself
        return None
    # os.open applies the umask; give the file exactly the database's bits and group.
    if gid is not None:
        with contextlib.suppress(OSError):
            os.fchown(fd, -1, gid)
        with contextlib.suppress(OSError):
            os.fchmod(fd, mode)
    return fd


def _holder(fd: int) -> str:
    try:
        raw = os.pread(fd, _NOTE_BYTES, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return "".join(ch if ch.isprintable() else "?" for ch in raw)[:200]


def _note_holder(fd: int) -> None:
    """Write who holds the lock into the lock file (best effort: it may be read-only)."""
    cmd = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(sys.argv[:3]))
    note = f"pid {os.getpid()} on {socket.gethostname()} ({cmd or 'python'})"
    # A fixed-width record overwritten in place: no truncate, so the file's size (and
    # the file system's metadata) does not change at every write.
    raw = note.encode("utf-8", "replace")[:_NOTE_BYTES].ljust(_NOTE_BYTES)
    with contextlib.suppress(OSError):
        os.pwrite(fd, raw, 0)


_NOTE_BYTES = 256


class _Holds(threading.local):
    """The write locks this thread holds: lock key -> (file descriptor, nesting depth)."""

    def __init__(self) -> None:
        self.held: dict[str, tuple[int | None, int]] = {}


_HOLDS = _Holds()


def _key(db: Path | str) -> str:
    return os.path.abspath(os.fspath(db))


def enter_queue(db: Path | str | None, *, timeout: float | None = None) -> None:
    """Take the database's write lock for this thread (re-entrant); see :func:`writer_queue`.

    Every :func:`enter_queue` is paired with one :func:`leave_queue`. Other threads and
    processes wait; the same thread may enter again (a transaction inside a block that
    already holds the lock).
    """
    if fcntl is None or not db or str(db) == ":memory:":
        return
    key = _key(db)
    fd, depth = _HOLDS.held.get(key, (None, 0))
    if depth:
        _HOLDS.held[key] = (fd, depth + 1)
        return
    fd = _open_lock(Path(db))
    if fd is not None:
        try:
            _wait_for(fd, str(db), lock_timeout() if timeout is None else timeout)
        except BaseException:
            os.close(fd)
            raise
    _HOLDS.held[key] = (fd, 1)


def leave_queue(db: Path | str | None) -> None:
    """Release one :func:`enter_queue` of this thread; the last one frees the lock."""
    if fcntl is None or not db or str(db) == ":memory:":
        return
    key = _key(db)
    fd, depth = _HOLDS.held.get(key, (None, 0))
    if depth > 1:
        _HOLDS.held[key] = (fd, depth - 1)
        return
    _HOLDS.held.pop(key, None)
    if fd is not None:
        os.close(fd)  # closing releases the lock


def _wait_for(fd: int, db: str, limit: float) -> None:
    """Take the lock on ``fd``, waiting at most ``limit`` seconds.

    An uncontended lock is taken at once. Otherwise a helper thread blocks in ``flock``
    on a duplicate of the descriptor (the kernel wakes blocked waiters as soon as the
    lock is free, where polling would keep losing to luckier processes) while this
    thread waits for it with the time limit. On timeout the helper is abandoned: if it
    gets the lock later it closes its duplicate, which releases the lock once the
    caller has closed ``fd`` too.
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if not _wait_blocking(fd, limit):
            raise WriteLockTimeoutError(db, limit, _holder(fd)) from None
    _note_holder(fd)


def _wait_blocking(fd: int, limit: float) -> bool:
    dup = os.dup(fd)
    got = threading.Event()
    guard = threading.Lock()
    state = {"abandoned": False}

    def block() -> None:
        try:
            fcntl.flock(dup, fcntl.LOCK_EX)
        except OSError:
            os.close(dup)
            return
        with guard:
            if not state["abandoned"]:
                got.set()
        os.close(dup)  # ``fd`` shares the open file and keeps the lock while it is open

    threading.Thread(target=block, name="annotate-write-lock", daemon=True).start()
    if got.wait(limit):
        return True
    with guard:
        state["abandoned"] = True
        return got.is_set()


@contextmanager
def writer_queue(db: Path | str | None, *, timeout: float | None = None) -> Iterator[None]:
    """Hold the database's write lock for the duration of the block.

    Re-entrant within a thread; other threads and processes wait their turn. The store's
    engines also take it at every ``BEGIN IMMEDIATE`` (see
    :func:`annotate.store.engine.make_engine`), so any transaction on a writer engine
    queues with the voters.

    Parameters
    ----------
    db : path or None
        The database file; None or ``:memory:`` takes no lock.
    timeout : float, optional
        Seconds to wait; default :func:`lock_timeout`.

    Raises
    ------
    WriteLockTimeoutError
        When another process holds the lock for longer than ``timeout``.
    """
    enter_queue(db, timeout=timeout)
    try:
        yield
    finally:
        leave_queue(db)


def engine_db(engine: Engine) -> str | None:
    """The database file of a SQLite engine (None for an in-memory database, and for a
    PostgreSQL server, whose writers queue on the server's advisory lock instead: see
    :func:`annotate.store.engine.make_engine`)."""
    if engine.url.get_backend_name() != "sqlite":
        return None
    path = engine.url.database
    return None if not path or path == ":memory:" else path


@contextmanager
def engine_writer_queue(engine: Engine, *, timeout: float | None = None) -> Iterator[None]:
    """:func:`writer_queue` for the file behind ``engine``."""
    with writer_queue(engine_db(engine), timeout=timeout):
        yield


@contextmanager
def database_faults(engine: Engine, *, keep_locked: bool = False) -> Iterator[None]:
    """Turn database failures (read-only, corrupt, missing, full; on PostgreSQL also an
    unreachable server and a writer lock not granted in time) into one-line DatabaseErrors.

    With ``keep_locked``, "database is locked" passes through unchanged (for callers
    that retry it).
    """
    try:
        yield
    except (DBAPIError, sqlite3.Error) as err:  # raw sqlite3 errors come from raw connections
        if keep_locked and "locked" in str(err):
            raise
        label = (
            engine_db(engine)
            if engine.url.get_backend_name() == "sqlite"
            else engine.url.render_as_string(hide_password=True)
        )
        fault = database_fault(err, label)
        if fault is None:
            raise
        raise fault from err


@contextmanager
def write_session(engine: Engine, *, keep_locked: bool = False) -> Iterator[Session]:
    """One write transaction, queued behind the other writers of the database.

    Takes the writer queue, then ``BEGIN IMMEDIATE`` (the store's engines begin that
    way); commits when the block ends, rolls back on an exception. SQLite failures
    become one-line :class:`DatabaseError` s (see :func:`database_faults`).
    """
    with (
        engine_writer_queue(engine),
        database_faults(engine, keep_locked=keep_locked),
        Session(engine) as s,
        s.begin(),
    ):
        yield s
