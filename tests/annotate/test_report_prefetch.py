"""``annotate report`` reads a study's votes in a forked child while it imports its
statistics (issue 13; :class:`annotate.services.report_prefetch.Prefetch`).

The reference of every test is the same monitor without a prefetch, which reads every
row itself: its rows, its current votes, its snapshot (timings aside) and the report's
files and printed text must be exactly equal. Votes cast after the child read, a child
that fails or never answers, the vote cache on or off, and either child (the one that
reads at once with sqlite3 alone, ``at_once``, or the one that waits for the store) must
change nothing but time.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine
from sqlmodel import Session

import annotate.services.monitoring as monitoring
import annotate.services.report_prefetch as report_prefetch
from annotate.services import vote_cache
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.monitoring import StudyMonitor
from annotate.services.report_prefetch import Prefetch
from annotate.services.voting import VotingSession
from annotate.store import repo
from annotate.store.engine import reader_engine
from tests.annotate.test_report import VOTES, cast, make_study

ROOT = Path(__file__).resolve().parents[2]
STUDY = "hand"


def _end_signal_thread() -> None:
    """The monitor's signal thread, left by a snapshot of this process, ended:
    :meth:`Prefetch.start` forks only a process without other threads."""
    while monitoring._POOL:
        monitoring._POOL.pop().shutdown(wait=True)


@pytest.fixture(autouse=True)
def _single_thread() -> None:
    _end_signal_thread()


_ENGINES: list[Engine] = []


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    store = open_store(tmp_path / "v.db")
    import_paths(store, [make_study(tmp_path / "studies")])
    cast(store, STUDY, VOTES)
    reader = reader_engine(store)
    _ENGINES[:] = [store, reader]
    return reader


def _started(engine: Engine, at_once: bool = False) -> Prefetch:
    """A prefetch forked, as the command line does, while this process has no connection
    to the database open (the engines reconnect on their next use), then told to go."""
    for e in _ENGINES:
        e.dispose()
    p = Prefetch.start(Path(str(engine.url.database)), STUDY, at_once=at_once)
    assert p is not None, "declined: another thread, or the database open in this process"
    p.go()
    return p


AT_ONCE = pytest.mark.parametrize("at_once", [False, True], ids=["after-go", "at-once"])
"""Both children: the one that waits for :meth:`Prefetch.go` and reads through the store
(a cache file too), and the one that reads at once with sqlite3 alone."""


def _same_monitor(got: StudyMonitor, ref: StudyMonitor) -> None:
    """The rows read, the current votes, the names and the cache bookkeeping."""
    assert np.array_equal(got._rows.view, ref._rows.view)
    assert np.array_equal(got._current.view, ref._current.view)
    assert got._unsaved == ref._unsaved
    assert got._last == ref._last


def _compare(engine: Engine, p: Prefetch | None) -> None:
    """A monitor given ``p`` equals one that reads its rows itself, then the signal
    thread their snapshots started is ended (:func:`_end_signal_thread`)."""
    got = StudyMonitor(engine, STUDY, p)
    votes = got.current_votes()
    ref = StudyMonitor(engine, STUDY)
    ref_votes = ref.current_votes()
    assert np.array_equal(votes[0], ref_votes[0])
    assert votes[1] == ref_votes[1]
    _same_monitor(got, ref)
    snap, ref_snap = got.snapshot(), ref.snapshot()
    assert dataclasses.replace(snap, timings=ref_snap.timings) == ref_snap
    got.wait_for_cache()
    ref.wait_for_cache()
    _end_signal_thread()


@AT_ONCE
@pytest.mark.parametrize("cache", ["off", "on"])
def test_prefetched_rows_equal_the_monitors_own_read(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, cache: str, at_once: bool
) -> None:
    """The child's rows are the monitor's first read, cache file or not; the first
    monitor (cache on) still writes the file, and the second loads it in the child that
    waits for the store (the one that reads at once reads every row)."""
    monkeypatch.setattr(vote_cache, "MIN_ROWS", 1)
    if cache == "off":
        monkeypatch.setenv(vote_cache.ENV, "off")
    p = _started(engine, at_once)
    rows = p.take(_study_id(engine))
    assert rows is not None
    assert rows[0].shape == (sum(map(len, VOTES.values())), 8)
    assert rows[1] == len(rows[0])  # every row from the database
    _compare(engine, _started(engine, at_once))
    if cache == "on":
        files = list(vote_cache.cache_dir().iterdir())
        assert len(files) == 1  # written by a monitor that took a prefetch
        p = _started(engine, at_once)
        got = p.take(_study_id(engine))
        assert got is not None
        assert got[1] == (len(got[0]) if at_once else 0)
        _compare(engine, _started(engine, at_once))


def _session(engine: Engine, who: str) -> VotingSession:
    """A voting session whose reader engine :func:`_started` closes too."""
    s = VotingSession(engine, STUDY, who)
    _ENGINES.append(s._reader)
    return s


def _study_id(engine: Engine) -> int:
    with Session(engine) as s:
        st = repo.get_study(s, STUDY)
        assert st is not None
        return st.id


def _wait_for_child(p: Prefetch) -> None:
    """Until the child has written its rows and exited (a few hundred bytes fit the pipe)."""
    assert p._pid is not None
    os.waitpid(p._pid, 0)
    p._pid = None


@AT_ONCE
@pytest.mark.parametrize("cache", ["off", "on"])
def test_votes_cast_after_the_child_read_are_read_by_the_monitor(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, cache: str, at_once: bool
) -> None:
    """New votes, a change of mind (superseding a row the child read) and an undo (a
    retraction), all after the child's read: the monitor reads them after the child's
    rows, and equals a monitor that read everything itself."""
    monkeypatch.setattr(vote_cache, "MIN_ROWS", 1)
    if cache == "off":
        monkeypatch.setenv(vote_cache.ENV, "off")
    else:  # a file first, so that the child loads it and reads the rows after it
        mon = StudyMonitor(engine, STUDY)
        mon.current_votes()
        mon.wait_for_cache()
    _session(engine, "B1").vote("left", 4000)
    p = _started(engine, at_once)
    _wait_for_child(p)
    assert not p.pending()  # its rows are written
    cast(engine, STUDY, {"A4": {"p1": "first", "p2": "second", "p5": "skip"}})
    s = _session(engine, "B1")
    s.vote("right", 4000)
    s.undo()
    _session(engine, "B2").vote("skip", 4000)
    _compare(engine, p)


@AT_ONCE
def test_a_failed_child_leaves_the_read_to_the_monitor(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, at_once: bool
) -> None:
    """A child that raises writes nothing: :meth:`Prefetch.take` gives None and the
    monitor reads every row itself."""
    monkeypatch.setenv(vote_cache.ENV, "off")

    def broken(*_: Any) -> None:
        raise RuntimeError("no database")

    monkeypatch.setattr(report_prefetch, "_quick_child" if at_once else "_child", broken)
    p = _started(engine, at_once)
    assert p.take(_study_id(engine)) is None
    _compare(engine, _started(engine, at_once))


@pytest.mark.parametrize("short", [1, 8, 8 * 8 + 1])
def test_a_memory_file_of_another_size_is_not_taken(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, short: int
) -> None:
    """The child's memory file must hold exactly the header and the rows it announces:
    a byte too few or too many, or a missing row, and :meth:`Prefetch.take` gives None
    (the monitor then reads every row itself)."""
    monkeypatch.setenv(vote_cache.ENV, "off")
    sid = _study_id(engine)

    def garbled(path: Path, study: str, fd: int) -> None:
        rows = np.arange(5 * 8, dtype="<i8").reshape(5, 8)
        report_prefetch._send(fd, rows, 5, sid)
        size = os.fstat(fd).st_size
        os.ftruncate(fd, size - short if short != 8 * 8 + 1 else size + 1)

    monkeypatch.setattr(report_prefetch, "_quick_child", garbled)
    p = _started(engine, at_once=True)
    assert p.take(sid) is None
    _compare(engine, _started(engine, at_once=True))


def test_a_database_to_migrate_is_left_to_the_monitor(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The child that reads at once reads only an up-to-date database (its opening may
    migrate one that is not): for a database that lacks a migration, or holds one this
    annotate does not know, it writes no rows, and the monitor reads them itself."""
    monkeypatch.setenv(vote_cache.ENV, "off")
    path = Path(str(engine.url.database))
    for e in _ENGINES:
        e.dispose()
    for change in (
        "DELETE FROM _migrations WHERE rowid = (SELECT max(rowid) FROM _migrations)",
        "INSERT INTO _migrations (name, applied_at) VALUES ('999_future', '')",
    ):
        copy = tmp_path / f"copy-{len(change)}.db"
        shutil.copy(path, copy)
        with sqlite3.connect(copy) as c:
            c.execute(change)
        c.close()
        p = Prefetch.start(copy, STUDY, at_once=True)
        assert p is not None
        assert p.take(_study_id(engine)) is None


@AT_ONCE
def test_an_untaken_child_is_killed_not_waited_for(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, at_once: bool
) -> None:
    """:meth:`Prefetch.close` of a child that never answers (a report that stopped early,
    an arena study's) returns at once and leaves no process behind."""
    name = "_quick_child" if at_once else "_child"
    monkeypatch.setattr(report_prefetch, name, lambda *_: time.sleep(60))
    p = _started(engine, at_once)
    pid = p._pid
    assert pid is not None
    assert p.pending()  # still "reading"
    t = time.monotonic()
    p.close()
    assert time.monotonic() - t < 10
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped
    with pytest.raises(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    assert p.take(_study_id(engine)) is None


@AT_ONCE
def test_another_study_or_none_is_not_taken(engine: Engine, at_once: bool) -> None:
    """The child checks the name: no such study, or rows of another id, are not taken."""
    for e in _ENGINES:
        e.dispose()
    p = Prefetch.start(Path(str(engine.url.database)), "no-such-study", at_once=at_once)
    assert p is not None
    p.go()
    assert p.take(_study_id(engine)) is None
    p = _started(engine, at_once)
    assert p.take(_study_id(engine) + 1) is None


@AT_ONCE
def test_no_prefetch_where_it_is_not_done(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, at_once: bool
) -> None:
    """A thread running beside this one, or the database open in this process: a fork
    would copy the one without the other, or SQLite's record of its locks on the file;
    off Linux (no fork, or not a safe one): nothing is forked."""
    import threading

    path = Path(str(engine.url.database))
    for e in _ENGINES:
        e.dispose()
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert Prefetch.start(path, STUDY, at_once=at_once) is None
    finally:
        stop.set()
        t.join()
    with engine.connect():
        assert Prefetch.start(path, STUDY, at_once=at_once) is None
    engine.dispose()
    with monkeypatch.context() as m:
        m.setattr(report_prefetch.sys, "platform", "darwin")
        assert Prefetch.start(path, STUDY, at_once=at_once) is None
    p = Prefetch.start(path, STUDY, at_once=at_once)
    assert p is not None  # closed again: forked
    p.close()


_CLI = (
    "import sys\n"
    "import annotate.services.report_prefetch as mr\n"
    "if sys.argv[1] == 'off':\n"
    "    mr.Prefetch.start = classmethod(lambda cls, *a, **k: None)\n"
    "else:\n"
    "    real = mr.Prefetch.take\n"
    "    def take(self, study_id):\n"
    "        got = real(self, study_id)\n"
    "        assert got is not None, 'the prefetch was not used'\n"
    "        return got\n"
    "    mr.Prefetch.take = take\n"
    "    start = mr.Prefetch.start.__func__\n"
    "    def logged(cls, path, study, at_once=False):\n"
    "        print(f'at_once={at_once}', file=sys.stderr)\n"
    "        return start(cls, path, study, at_once=at_once)\n"
    "    mr.Prefetch.start = classmethod(logged)\n"
    "if sys.argv[1] == 'early':  # as if the child were still reading: scipy.stats and\n"
    "    mr.Prefetch.pending = lambda self: True  # the estimators before the votes\n"
    "from annotate.cli import main\n"
    "raise SystemExit(main(sys.argv[2:]))\n"
)


@pytest.mark.parametrize("cache", ["off", "on"])
def test_the_report_is_the_same_with_and_without_the_prefetch(
    engine: Engine, tmp_path: Path, cache: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``annotate report --study S`` (text and ``--json``), run as a user runs it: the
    files and the printed text are byte-identical with the prefetch and without it; the
    child reads at once without a cache file, and loads the file once there is one."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if cache == "off":
        env[vote_cache.ENV] = "off"
    for mode in ("text", "json"):
        outs: dict[str, list[tuple[bytes, dict[str, bytes]]]] = {}
        children: list[bytes] = []
        shutil.rmtree(vote_cache.cache_dir(), ignore_errors=True)  # the last mode's file
        for prefetch in ("off", "on", "on", "early"):  # the second "on" loads a cache file
            if cache == "on" and prefetch == "on" and "on" in outs:  # (tiny: written here)
                monkeypatch.setattr(vote_cache, "MIN_ROWS", 1)
                mon = StudyMonitor(engine, STUDY)
                mon.current_votes()
                mon.wait_for_cache()
                _end_signal_thread()
            out = tmp_path / f"out-{mode}-{prefetch}"
            args = ["--db", str(tmp_path / "v.db"), "report", "--study", STUDY, "--no-plots"]
            args += ["--boot", "50", "--out", str(out), *(["--json"] if mode == "json" else [])]
            run = subprocess.run(
                [sys.executable, "-c", _CLI, prefetch, *args],
                capture_output=True,
                env=env,
                cwd=tmp_path,
                check=False,
            )
            assert run.returncode == 0, run.stderr.decode()
            children += [w for w in run.stderr.split() if w.startswith(b"at_once=")]
            files = {f.name: f.read_bytes() for f in sorted(out.iterdir())}
            outs.setdefault(prefetch, []).append((run.stdout.replace(bytes(out), b"OUT"), files))
        assert outs["on"][0] == outs["off"][0]
        assert outs["on"][1] == outs["off"][0]
        assert outs["early"][0] == outs["off"][0]
        files_then = b"at_once=False" if cache == "on" else b"at_once=True"
        assert children == [b"at_once=True", files_then, files_then]


def test_the_collector_is_as_before_after_the_command(engine: Engine, tmp_path: Path) -> None:
    """``annotate report`` turns the cyclic collector off while it imports its modules and
    freezes their objects; a caller that goes on (as here) gets the collector back on,
    nothing frozen, also when the command fails."""
    import gc

    from annotate.cli import main

    db = str(engine.url.database)
    args = ["--db", db, "report", "--study", STUDY, "--no-plots", "--boot", "10"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert main(["--db", db, "report", "--study", "no-such-study", "--no-plots"]) != 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
