"""The monitor's first reading of a study's vote rows, done ahead in a child process.

:class:`annotate.services.monitoring.StudyMonitor` reads a study's vote rows
(:func:`annotate.store.repo.vote_rows_after`) as one ``(n, 8)`` int64 array: on its
first read the vote cache's rows (:mod:`annotate.services.vote_cache`) then the rows
after them (:mod:`annotate.services.monitor_rows`).

At a million votes that first read is the longest serial step of ``annotate report``
(about 0.9 s of CPU, :mod:`annotate.store.quick_votes`), while the other core idles:
the rest of the command meanwhile only imports its statistics and reads the study's
contents. :class:`Prefetch` does that first read in a forked child process (its own
interpreter, so it runs beside the parent's imports instead of taking turns with them
for the GIL) and hands the array over in a memory file (``memfd``, mapped by the parent,
not copied through a pipe: the child is done as soon as it has read, whether or not the
parent is ready to take the rows); the monitor then reads the rows written
since, in its own transaction, exactly as after a cache file. It is used by the command
line only (a SQLite file, a fork from a process without other threads and without an
open database connection, on Linux), and any failure of the child leaves the monitor to
read the rows itself.

Without a vote cache file for the study, the command line forks first thing
(``at_once``): the child reads an up-to-date database at once with sqlite3 alone, while
the parent imports the store, opens the database and imports the statistics. With a
cache file, it forks after importing the store and :mod:`annotate.services.monitor_rows`
(which the child then has, without importing them again), and the child loads the file
once the parent has opened (and migrated) the database. This module imports nothing
heavy itself.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import select
import signal
import struct
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

COLUMNS = 8
"""Columns of a vote row (:func:`annotate.store.repo.vote_rows_after`)."""

_HEADER = struct.Struct("<qqq")
"""What the child writes before the rows (little-endian int64, like the rows): the number of
rows, how many of them it read from the database (the rest came from the cache file), and
the study's id."""


class Prefetch:
    """A monitor's first read of a study (:func:`annotate.services.monitor_rows.child_read`,
    or :func:`annotate.store.quick_votes.read_study`), done in a forked child.

    SQLite must not be used across a fork: a connection, and the library's record of the
    locks its process holds on a file, belong to the process that opened them. So the
    child is forked before this process opens the database (:meth:`start`), waits until
    it has been opened and migrated (:meth:`go`), and then opens its own reader
    connection; or, ``at_once``, opens a read-only connection at once and reads only if
    the database is up to date (its opening then migrates nothing). :meth:`take` waits
    for the rows; :meth:`close` lets the child go (a report that ends early, a study
    that is not a difficulty study).
    """

    def __init__(self, study: str, pid: int, go_fd: int | None, done_fd: int, rows_fd: int) -> None:
        self.study = study
        """The study's name (the child checks it exists and is a difficulty study)."""
        self._pid: int | None = pid
        self._go: int | None = go_fd
        self._fd: int | None = done_fd
        """The pipe on which the child says it has written the rows (one byte)."""
        self._rows: int | None = rows_fd
        """The memory file (``memfd``) the child writes the header and the rows to: the
        child finishes without waiting for this process to read a pipe, and this process
        maps the rows instead of copying them."""

    @classmethod
    def start(cls, path: Path, study: str, *, at_once: bool = False) -> Prefetch | None:
        """Fork a child that will read the votes of ``study`` in the SQLite file
        ``path``; call before this process opens that database. None (nothing started)
        off Linux, with other threads running (a fork copies only this one), or when
        this process has the file open already.

        ``at_once``: the child reads at once with sqlite3 alone
        (:func:`annotate.store.quick_votes.read_study`), without waiting for
        :meth:`go`, and only an up-to-date database (one the parent's opening will
        not migrate); it reads no cache file, so the command line asks for it when the
        study has none (:func:`annotate.services.vote_cache_path.sqlite_cache_file`).
        Then nothing of the store needs to be imported before the fork."""
        if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
            return None
        if threading.active_count() > 1 or _has_open(path):
            return None
        try:
            out = os.memfd_create("annotate-report-votes", os.MFD_CLOEXEC)
        except (OSError, AttributeError):
            return None
        go_r, go_w = os.pipe()
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (go_r, go_w, r, w, out):
                os.close(fd)
            return None
        if pid == 0:  # the child: read, write, leave without running the parent's exits
            code = 1
            try:
                os.close(go_w)
                os.close(r)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                if at_once:
                    os.close(go_r)
                    _quick_child(path, study, out)
                    code = 0
                elif os.read(go_r, 1) == b"1":  # nothing (b""): the parent gave up
                    _child(path, study, out)
                    code = 0
                if code == 0:
                    os.write(w, b"1")  # written (a child that failed says nothing)
            except BaseException:  # any failure: the parent reads the rows itself
                code = 1
            finally:
                os._exit(code)
        os.close(go_r)
        os.close(w)
        if at_once:  # nothing to wait for
            os.close(go_w)
            return cls(study, pid, None, r, out)
        return cls(study, pid, go_w, r, out)

    def go(self) -> None:
        """The database is open and migrated: the child may read it."""
        fd, self._go = self._go, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.write(fd, b"1")
                os.close(fd)

    def pending(self) -> bool:
        """Whether the child is still reading (nothing written yet): the parent may do
        meanwhile what it would otherwise do later."""
        if self._fd is None:
            return False
        try:
            ready, _, _ = select.select([self._fd], [], [], 0)
        except (OSError, ValueError):
            return False
        return not ready

    def take(self, study_id: int) -> tuple[npt.NDArray[np.int64], int] | None:
        """The rows the child read of the study with id ``study_id`` and how many came
        from the database; None when it read none, another study or failed (the caller
        then reads them itself). Once only."""
        self.go()
        fd, self._fd = self._fd, None
        out, self._rows = self._rows, None
        if fd is None or out is None:
            return None
        try:
            with os.fdopen(fd, "rb", buffering=0) as f:
                if f.read(1) != b"1":  # the child failed or was killed
                    return None
            size = os.fstat(out).st_size
            head = os.pread(out, _HEADER.size, 0)
            if len(head) != _HEADER.size:
                return None
            n, n_db, sid = _HEADER.unpack(head)
            if n <= 0 or not 0 <= n_db <= n or sid != study_id:
                return None
            if size != _HEADER.size + n * COLUMNS * 8:  # the child writes exactly this
                return None
            import numpy as np  # imported by now (the parent's statistics)

            # a private mapping: no copy, and writable (copy on write) as a read's array
            view = mmap.mmap(out, size, flags=mmap.MAP_PRIVATE)
            rows = np.frombuffer(view, dtype="<i8", count=n * COLUMNS, offset=_HEADER.size)
            rows = rows.reshape(n, COLUMNS)
        except (OSError, ValueError, MemoryError):
            return None
        finally:
            with contextlib.suppress(OSError):
                os.close(out)  # a mapping keeps the memory
            self._reap()
        return rows, int(n_db)

    def close(self) -> None:
        """Let the child go if its rows were not taken (a report that ended early, or
        an arena study's): it is killed, not waited for."""
        go, self._go = self._go, None
        if go is not None:
            with contextlib.suppress(OSError):
                os.close(go)  # the child, waiting, reads nothing and leaves
        out, self._rows = self._rows, None
        if out is not None:
            with contextlib.suppress(OSError):
                os.close(out)
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
            if self._pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(self._pid, signal.SIGKILL)
        self._reap()

    def _reap(self) -> None:
        pid, self._pid = self._pid, None
        if pid is not None:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)


def _has_open(path: Path) -> bool:
    """Whether this process has the database file (or its ``-wal`` / ``-shm``) open, or
    cannot tell: a connection was opened before the fork (see :class:`Prefetch`)."""
    try:
        names = {str(path.resolve()) + end for end in ("", "-wal", "-shm", "-journal")}
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):  # gone meanwhile (the listing's own fd)
                if os.readlink(f"/proc/self/fd/{fd}") in names:
                    return True
    except OSError:
        return True
    return False


def _child(path: Path, study: str, fd: int) -> None:
    from annotate.services.monitor_rows import child_read

    rows, n_db, study_id = child_read(path, study)
    _send(fd, rows, n_db, study_id)


def _quick_child(path: Path, study: str, fd: int) -> None:
    from annotate.store.quick_votes import read_study

    got = read_study(path, study)
    rows, study_id = (None, 0) if got is None else got
    _send(fd, rows, 0 if rows is None else len(rows), study_id)


def _send(fd: int, rows: npt.NDArray[np.int64] | None, n_db: int, study_id: int) -> None:
    """Write the header and the rows (none: a header of zeros), little-endian int64, to
    the memory file ``fd``."""
    import numpy as np

    if rows is None:
        os.write(fd, _HEADER.pack(0, 0, 0))
        return
    rows = np.ascontiguousarray(rows, dtype="<i8")
    os.write(fd, _HEADER.pack(len(rows), n_db, study_id))
    view = rows.data.cast("B")
    while view:
        k = os.write(fd, view)
        view = view[k:]
