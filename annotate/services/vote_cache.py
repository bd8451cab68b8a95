"""An on-disk cache of the monitor's vote rows, validated against the database on load.

A cold :class:`annotate.services.monitoring.StudyMonitor` reads every vote row of its
study (:func:`annotate.store.repo.vote_rows_after`); at a million votes that read is most
of the open (Python's DB-API turns each row into a tuple). Vote rows are never updated
or deleted: a vote, a change of mind and an undo each append a row with a larger id,
and the rows the monitor reads are a pure function of the rows up to a given id. So the
monitor keeps those rows (``N x 8`` int64, the columns of ``vote_rows_after``) in a
file, and a later open loads the file, checks it against the database and reads only
the rows after the file's last id.

Where
    ``$XDG_CACHE_HOME/annotate/monitor`` (else ``~/.cache/annotate/monitor``), one file
    per database and study: the name is a hash of the database (the SQLite file's
    resolved path, or the PostgreSQL URL without its password) and the study's name.
    ``ANNOTATE_CACHE=off`` (or ``0``, ``no``, ``false``) turns the cache off: nothing is
    read or written. An in-memory SQLite database is never cached.

What is checked before a file is used (any failure: the file is ignored, silently, and
the monitor reads every row from the database, as without a cache)
    * the file: its first line, the format version, each array's header (dtype, shape;
      never a pickle: the arrays are read with :func:`numpy.fromfile` after their
      headers are checked), the exact file size, and per-column sums of the rows;
    * the identity: the database, and the study's name, id, kind, fingerprint and
      creation time as stored (a database deleted and recreated at the same path gets
      new creation times);
    * the rows: ids strictly increasing, every column in its range, every item a known
      item of the study;
    * against the database, in the read transaction of the tail: the number of vote rows
      of the study up to the file's last id (counted on the ``(study_id, id)`` index, in
      a thread while the file is read), and the file's first row, last row and
      :data:`SAMPLE` random rows, all eight columns each, compared with the rows the
      database gives for their ids.

    annotate never updates or deletes a vote row (no migration or command does; a study
    is never deleted or renamed), so these checks are about other hands: a deleted or
    added row changes the count, a recreated database the identity, and a row changed in
    place by hand (sqlite3, psql) is caught when it is among the rows compared (every
    row of a study of up to ``SAMPLE + 2`` rows; ``SAMPLE`` new random ones per open of a
    larger one). After such an edit, ``ANNOTATE_CACHE=off`` or deleting the folder is
    the sure way.

When a file is written
    After a read of at least :data:`MIN_ROWS` rows from the database (a cold open without
    a usable file, or a tail that long), and later whenever the rows read since the last
    write reach :data:`MIN_ROWS` and a twentieth of the rows held. The write runs in a
    thread started once the snapshot (or :meth:`current_votes`) is computed, as it
    returns, so it never delays a refresh; it counts the rows in the database first and
    writes nothing if they differ from the rows it holds. Atomic: a temporary file in
    the same folder, then :func:`os.replace`, so two monitors of one study can write at
    once (the last one wins, both files complete). A folder that cannot be created or written is
    skipped silently. Each write deletes the folder's files neither written nor used for
    :data:`KEEP_DAYS` days, and temporary files left by a writer that died.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
from numpy.lib import format as npy_format
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.choices import Outcome
from annotate.services.vote_cache_path import (
    ENV,
    cache_dir,
    cache_file,
    enabled,
    sqlite_database,
)
from annotate.store import repo
from annotate.store.engine import is_postgres

__all__ = [
    "ENV",
    "FORMAT_VERSION",
    "MIN_ROWS",
    "SAMPLE",
    "CacheTarget",
    "cache_dir",
    "enabled",
    "target",
]

FORMAT_VERSION = 1
"""Bumped whenever the file layout or the meaning of a column changes."""

MAGIC = b"annotate monitor vote cache\n"
"""The first line of every cache file."""

MIN_ROWS = 20_000
"""Rows read from the database before a file is (re)written: below this a read costs
tens of milliseconds, less than the file's upkeep is worth."""

RESAVE_SHARE = 20
"""...and a rewrite also waits for a twentieth of the rows held (a long-running monitor
of a million-vote study rewrites its 64 MB file about every 50,000 new rows)."""

KEEP_DAYS = 30
"""A file neither written nor used for this many days (a load that uses it sets its
modification time) is deleted by the next write in its folder."""

SAMPLE = 256
"""Random rows compared with the database on every load, besides the first and the last
(every row of a file with at most this many more)."""

COLUMNS = 8
"""``(id, item_id, annotator_id, choice code, swapped, response_ms or -1, fast,
superseded id or 0)``: the columns of :func:`annotate.store.repo.vote_rows_after`."""

_META = ("format", "rows", "last", "all_rows", "study_id")
"""The first array of a file: these int64 values, then the column sums of the rows."""
_ROWS = np.dtype("<i8")
_META_LEN = len(_META) + COLUMNS
_MAX_IDENT = 1 << 16


def _database_key(engine: Engine) -> str | None:
    """The database as the cache names it; None for a database that cannot be cached."""
    url = engine.url
    if is_postgres(engine):
        return url.set(password=None).render_as_string(hide_password=False)
    return sqlite_database(url.database or "")


@dataclass
class CacheTarget:
    """One study's cache file, and what a file must say to belong to it."""

    engine: Engine
    path: Path
    database: str
    study: repo.StudyRow
    ident: bytes | None = None
    """The identity written in (and required of) the file; set by :meth:`load`."""

    def _identity(self, session: Session) -> bytes | None:
        created = repo.study_created_at(session, self.study.id)
        if created is None:
            return None
        st = self.study
        doc = [FORMAT_VERSION, self.database, st.name, st.id, st.kind, st.fingerprint, created]
        return json.dumps(doc, ensure_ascii=True).encode("ascii")

    def identify(self) -> bytes | None:
        """Read the identity now, in a transaction of its own (what :meth:`load` does in
        the monitor's), so that :meth:`save` may write; returns it."""
        with Session(self.engine) as s:
            self.ident = self._identity(s)
        return self.ident

    # --- loading -------------------------------------------------------------------

    def load(
        self, session: Session, item_pos: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64] | None:
        """The cached rows, checked against the database in ``session``'s transaction
        (see the module's docstring), or None. ``item_pos`` maps item ids to positions
        (-1 for no item of the study). Never raises for a bad file."""
        self.ident = self._identity(session)
        if self.ident is None:
            return None
        count = _Count(session, self.study.id)  # in a thread while the rows are read
        try:
            try:
                got = _read(self.path, self.ident, count.start)
            except (OSError, ValueError, EOFError, UnicodeError, OverflowError, MemoryError):
                got = None
            ok = got is not None and _plausible(got[0], got[1], self.study.id, item_pos)
        finally:
            counted = count.result()  # the session is this thread's again
        if got is None or not ok or counted != int(got[0][3]):
            return None
        rows = got[1]
        n = len(rows)
        if n <= SAMPLE + 2:
            picks = np.arange(n)  # every row
        else:  # the first, the last, and SAMPLE others drawn anew on every load
            drawn = np.random.default_rng().integers(1, n - 1, size=SAMPLE)
            picks = np.unique(np.concatenate([[0, n - 1], drawn]))
        ids = rows[picks, 0]
        stored = repo.vote_rows_at(session, self.study.id, ids.tolist())
        if len(stored) != len(ids):
            return None
        db = np.array(stored, dtype=np.int64).reshape(-1, COLUMNS)
        if not np.array_equal(db, rows[picks]):
            return None
        with contextlib.suppress(OSError):
            os.utime(self.path)  # in use: kept by _tidy
        return rows

    # --- saving ----------------------------------------------------------------------

    def save(self, rows: npt.NDArray[np.int64]) -> bool:
        """Write ``rows`` (the monitor's rows, oldest first; never written to meanwhile)
        if the database still holds exactly these rows up to the last one's id. Runs in
        the writer thread; returns whether a file was written. Never raises."""
        try:
            return self._save(rows)
        except Exception:  # a cache must never break the monitor
            return False

    def _save(self, rows: npt.NDArray[np.int64]) -> bool:
        if self.ident is None or not len(rows):
            return False
        last = int(rows[-1, 0])
        with Session(self.engine) as s:
            all_rows, main_rows = repo.vote_rows_through(s, self.study.id, last)
        if main_rows != len(rows):
            return False  # not the rows of this database (edited under the monitor?)
        meta = np.array(
            [FORMAT_VERSION, len(rows), last, all_rows, self.study.id, *_sums(rows)],
            dtype=_ROWS,
        )
        ident = np.frombuffer(self.ident, dtype=np.uint8)
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=folder)
        except OSError:
            return False
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC)
                for arr in (meta, ident, np.ascontiguousarray(rows, dtype=_ROWS)):
                    npy_format.write_array(fh, arr, allow_pickle=False)
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return False
        _tidy(folder)
        return True


def _tidy(folder: Path) -> None:
    """Delete the files of the folder neither written nor used for :data:`KEEP_DAYS` days
    (studies and databases no longer opened) and temporary files a writer left a day
    ago."""
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        if e.name.endswith(".votes"):
            age = KEEP_DAYS * 86400
        elif e.name.startswith(".") and e.name.endswith(".tmp"):
            age = 86400
        else:
            continue
        with contextlib.suppress(OSError):
            if e.is_file(follow_symlinks=False) and now - e.stat().st_mtime > age:
                os.unlink(e.path)


def target(engine: Engine, study: repo.StudyRow) -> CacheTarget | None:
    """The cache file of ``study`` in the database of ``engine``; None when the cache is
    off (:data:`ENV`) or the database is in memory."""
    if not enabled():
        return None
    database = _database_key(engine)
    path = None if database is None else cache_file(database, study.name)
    if database is None or path is None:
        return None
    return CacheTarget(engine, path, database, study)


def _by_column(ufunc: np.ufunc, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``ufunc.reduce(rows, axis=0)`` for a C-ordered ``N x COLUMNS`` array, five times
    faster: the rows are first reduced in blocks of 64 (a ``N/64 x 512`` view, whose
    reduction runs along contiguous memory), then the 64 partial rows and the rest."""
    block = 64
    m = len(rows) - len(rows) % block
    if not m:
        return ufunc.reduce(rows, axis=0)  # type: ignore[no-any-return]
    head = ufunc.reduce(rows[:m].reshape(-1, block * COLUMNS), axis=0).reshape(block, COLUMNS)
    return ufunc.reduce(np.concatenate([head, rows[m:]]), axis=0)  # type: ignore[no-any-return]


def _sums(rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Per-column sums (integer sums wrap on overflow): a cheap check of the contents."""
    return _by_column(np.add, rows)


def _read_header(fh: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    major, _ = npy_format.read_magic(fh)
    if major == 1:
        return npy_format.read_array_header_1_0(fh, max_header_size=1024)
    if major == 2:
        return npy_format.read_array_header_2_0(fh, max_header_size=1024)
    raise ValueError("unknown .npy version")


def _array(fh: IO[bytes], dtype: np.dtype[Any], shape: tuple[int, ...]) -> npt.NDArray[Any]:
    """The next array of ``fh``, if its header gives exactly ``dtype`` and ``shape`` (C
    order); never reads data before the header is checked, never unpickles."""
    got_shape, fortran, got_dtype = _read_header(fh)
    if fortran or got_dtype != dtype or tuple(got_shape) != shape:
        raise ValueError("unexpected array")
    count = int(np.prod(shape, dtype=np.int64))
    data = np.fromfile(fh, dtype=dtype, count=count)
    if data.size != count:
        raise ValueError("truncated")
    return data.reshape(shape)


class _Count:
    """:func:`repo.vote_count_through` in a thread, on the caller's session, which the
    caller leaves alone until :meth:`result` (one query at a time on its connection)."""

    def __init__(self, session: Session, study_id: int) -> None:
        self.session, self.study_id = session, study_id
        self.thread: threading.Thread | None = None
        self.out: list[int] = []
        self.error: BaseException | None = None

    def start(self, meta: npt.NDArray[np.int64]) -> None:
        last = int(meta[2])

        def run() -> None:
            try:
                self.out.append(repo.vote_count_through(self.session, self.study_id, last))
            except BaseException as err:  # raised again by result(), in the caller's thread
                self.error = err

        self.thread = threading.Thread(target=run, name="monitor-vote-cache-count")
        self.thread.start()

    def result(self) -> int | None:
        """The count (None if never started); a database error is raised here."""
        if self.thread is None:
            return None
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.out[0]


def _read(
    path: Path,
    ident: bytes,
    on_meta: Callable[[npt.NDArray[np.int64]], None] | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """The file's ``(meta, rows)`` if it is whole and says ``ident``; ``on_meta(meta)`` is
    called before the rows are read."""
    # non-blocking: a FIFO put in the file's place must not hang the monitor
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None  # a folder, a device, a FIFO...
    with os.fdopen(fd, "rb") as fh:
        size = info.st_size
        if fh.read(len(MAGIC)) != MAGIC:
            return None
        meta = _array(fh, _ROWS, (_META_LEN,))
        if int(meta[0]) != FORMAT_VERSION:
            return None
        n = int(meta[1])
        if not 0 < n <= size // (COLUMNS * _ROWS.itemsize) or len(ident) > _MAX_IDENT:
            return None
        if _array(fh, np.dtype(np.uint8), (len(ident),)).tobytes() != ident:
            return None
        if on_meta is not None:
            on_meta(meta)
        rows = _array(fh, _ROWS, (n, COLUMNS))
        if fh.tell() != size:
            return None  # trailing bytes: not a file this module wrote
    if not np.array_equal(_sums(rows), meta[len(_META) :]):
        return None
    return meta, rows


def _plausible(
    meta: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    study_id: int,
    item_pos: npt.NDArray[np.int64],
) -> bool:
    """The rows are in order and every column in its range (no database access)."""
    n, last, all_rows, sid = (int(x) for x in meta[1:5])
    if sid != study_id or all_rows < n or int(rows[-1, 0]) != last or int(rows[0, 0]) < 1:
        return False
    ids = rows[:, 0]
    if n > 1 and not (ids[1:] > ids[:-1]).all():
        return False
    lo, hi = _by_column(np.minimum, rows), _by_column(np.maximum, rows)
    bounds = (
        (1, item_pos.size - 1),  # item
        (1, None),  # annotator
        (int(Outcome.RETRACTED), int(max(Outcome))),  # choice code
        (0, 1),  # swapped
        (-1, None),  # response_ms
        (0, 1),  # fast
        (0, last),  # superseded row
    )
    for j, (a, b) in enumerate(bounds, start=1):
        if int(lo[j]) < a or (b is not None and int(hi[j]) > b):
            return False
    return bool((item_pos[rows[:, 1]] >= 0).all())


class Writer:
    """At most one writer thread per monitor; a save asked for while one runs waits for
    the next call (the rows it would write are then older than the monitor's anyway)."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    def start(self, cache: CacheTarget, rows: npt.NDArray[np.int64]) -> bool:
        """Start writing ``rows`` in a thread; False (nothing started) while one runs."""
        if self._thread is not None and self._thread.is_alive():
            return False
        self._thread = threading.Thread(
            target=cache.save, args=(rows,), name="monitor-vote-cache", daemon=False
        )
        self._thread.start()
        return True

    def join(self) -> None:
        """Wait for the write in progress, if any (tests and benchmarks)."""
        if self._thread is not None:
            self._thread.join()
