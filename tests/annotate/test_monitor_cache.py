"""The monitor's on-disk vote cache (issue 13: a cold open at a million votes under 1 s).

:mod:`annotate.services.vote_cache` keeps the vote rows a :class:`StudyMonitor` has read
in a file, and a later open loads them, checks them against the database and reads only
the rows after them. The reference for every test is the same monitor opened with the
cache turned off (``ANNOTATE_CACHE=off``), which reads every row from the database: the
snapshot (timings aside) and the report's votes (:meth:`StudyMonitor.current_votes`)
must be *exactly* equal, field by field. They can be, since a cached open holds the same
rows, fits them cold (no warm start is cached) and goes through the same code.

A cache file that does not hold this database's rows (recreated database, rows edited
by hand, truncated, corrupt, foreign or hostile file) must be ignored silently, and a
cache that cannot be written must cost nothing but the write.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, text

import annotate.services.monitoring as monitoring
from annotate.services import vote_cache
from annotate.services.db import open_store
from annotate.services.monitoring import MonitorSource, StudyMonitor
from annotate.services.voting import VotingSession
from annotate.store import repo
from annotate.views import MonitorSnapshot
from tests.annotate.test_monitoring_service import BOTH, HONEST, vote_arena

ROOT = Path(__file__).resolve().parents[2]
MIN_ROWS = vote_cache.MIN_ROWS
"""The real threshold (the fixture below sets it to 1 for every test)."""
STUDY = "demo-arena"


@pytest.fixture
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    """A fresh database holding the demo studies (SQLite; PostgreSQL for :data:`BOTH`)."""
    if getattr(request, "param", "sqlite") == "postgres":
        return open_store(str(request.getfixturevalue("pg_url")), seed_demo=True)
    return open_store(tmp_path / "v.db", seed_demo=True)


@pytest.fixture(autouse=True)
def _small_studies_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    """Write a file after any read (the real threshold is 20,000 rows)."""
    monkeypatch.setattr(vote_cache, "MIN_ROWS", 1)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ``after_id`` of every :func:`repo.vote_rows_array` call (the monitor's reads):
    0 is a full read, the cached last id a cache hit."""
    seen: list[int] = []
    real = repo.vote_rows_array

    def spy(session: Any, study_id: int, after_id: int) -> Any:
        seen.append(after_id)
        return real(session, study_id, after_id)

    monkeypatch.setattr(repo, "vote_rows_array", spy)
    return seen


def _allow_undo(engine: Engine) -> None:
    from tests.annotate.test_monitor_incremental import _allow_undo as allow

    allow(engine, STUDY)


def _votes(engine: Engine, people: tuple[str, ...] = HONEST, limit: int = 12) -> None:
    for i, name in enumerate(people):
        vote_arena(engine, name, seed=i, limit=limit)


def _open(engine: Engine) -> tuple[StudyMonitor, MonitorSnapshot]:
    """A cold open as the monitor does it (through its reader engine), the cache written."""
    mon = MonitorSource(engine).open(STUDY)
    snap = mon.snapshot()
    mon.wait_for_cache()
    return mon, snap


def _uncached(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> tuple[MonitorSnapshot, Any]:
    """The reference: snapshot and current votes with the cache off (every row read)."""
    with monkeypatch.context() as m:
        m.setenv(vote_cache.ENV, "off")
        mon = MonitorSource(engine).open(STUDY)
        assert mon._cache is None
        return mon.snapshot(), mon.current_votes()


def _assert_same(got: MonitorSnapshot, ref: MonitorSnapshot) -> None:
    """Exactly equal, every field but the timings."""
    assert dataclasses.replace(got, timings=ref.timings) == ref


def _assert_votes(got: Any, ref: Any) -> None:
    assert np.array_equal(got[0], ref[0])
    assert got[1] == ref[1]


def _check(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> StudyMonitor:
    """A cold open equals the uncached reference (snapshot and votes); the monitor."""
    mon, snap = _open(engine)
    ref, ref_votes = _uncached(engine, monkeypatch)
    _assert_same(snap, ref)
    _assert_votes(mon.current_votes(), ref_votes)
    return mon


def _files() -> list[Path]:
    folder = vote_cache.cache_dir()
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _the_file() -> Path:
    files = _files()
    assert len(files) == 1, files
    return files[0]


def _last_id(engine: Engine) -> int:
    with engine.connect() as c:
        return int(c.execute(text("SELECT max(id) FROM vote")).scalar_one())


# --- a cached open equals an uncached one --------------------------------------------


@BOTH
def test_second_open_reads_the_file_and_equals_an_uncached_open(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, reads: list[int]
) -> None:
    """The first open reads every row and writes the file (in the cache folder, not in
    the home's ~/.cache: tests/conftest.py points XDG_CACHE_HOME elsewhere); the second
    reads only after the file's last id, and both equal the uncached open exactly."""
    _allow_undo(engine)
    _votes(engine)
    VotingSession(engine, STUDY, HONEST[0]).undo()
    _, snap1 = _open(engine)
    assert reads == [0]
    path = _the_file()
    assert path.parent == Path(os.environ["XDG_CACHE_HOME"]) / "annotate" / "monitor"
    ref, ref_votes = _uncached(engine, monkeypatch)
    _assert_same(snap1, ref)
    reads.clear()
    second, snap2 = _open(engine)
    assert reads == [_last_id(engine)]  # only the rows after the file's
    _assert_same(snap2, ref)
    _assert_votes(second.current_votes(), ref_votes)
    assert _files() == [path]  # nothing new read: not rewritten


def test_the_report_reads_its_votes_through_the_cache(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, reads: list[int]
) -> None:
    """:meth:`current_votes` (the report's read) writes and uses the file too."""
    _votes(engine)
    mon = MonitorSource(engine).open(STUDY)
    mon.current_votes()
    mon.wait_for_cache()
    assert _files()
    reads.clear()
    again = MonitorSource(engine).open(STUDY)
    got = again.current_votes()
    assert reads == [_last_id(engine)]
    _assert_votes(got, _uncached(engine, monkeypatch)[1])


def test_votes_added_by_another_process_are_read_after_the_file(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: list[int]
) -> None:
    """Votes cast by another process after the file was written: the next open reads the
    file and then exactly those rows (the tail), and equals an uncached open."""
    _votes(engine, HONEST[:2])
    _open(engine)
    cached_last = _last_id(engine)
    code = (
        "import sys\n"
        "from annotate.services.db import open_store\n"
        "from tests.annotate.test_monitoring_service import vote_arena\n"
        "e = open_store(sys.argv[1])\n"
        "for i, who in enumerate(('cyd', 'dee', 'eve')):\n"
        "    vote_arena(e, who, seed=40 + i, limit=9)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "v.db")], check=True, env=env)
    assert _last_id(engine) > cached_last
    reads.clear()
    _check(engine, monkeypatch)
    assert reads[0] == cached_last


@BOTH
def test_changes_of_mind_and_undos_of_cached_votes(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, reads: list[int]
) -> None:
    """Undos and changes of mind after the file was written supersede rows that come from
    the file: the tail drops them as a full read does. Round after round, each open
    equals an uncached one (and the rewritten file keeps up)."""
    _allow_undo(engine)
    _votes(engine, limit=15)
    _open(engine)
    rng = np.random.default_rng(5)
    for round_ in range(4):
        for who in HONEST:
            session = VotingSession(engine, STUDY, who)
            if rng.random() < 0.5:
                assert session.undo()
            elif session.undo() and session.current() is not None:
                session.vote(str(rng.choice(["a", "b", "tie"])), 4000)
        vote_arena(engine, "eve", seed=round_, limit=2)
        reads.clear()
        _check(engine, monkeypatch)
        assert reads[0] > 0, round_  # the file was used


def test_a_running_monitor_rewrites_the_file_after_many_new_rows(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, reads: list[int]
) -> None:
    """A live monitor rewrites the file once the rows read since the last write reach
    MIN_ROWS and a twentieth of the rows held; a later open then reads a short tail."""
    monkeypatch.setattr(vote_cache, "MIN_ROWS", 10)
    _votes(engine, HONEST[:2])
    live, _ = _open(engine)
    vote_arena(engine, "cyd", seed=3, limit=4)
    live.snapshot()  # 4 new rows: below MIN_ROWS, no rewrite
    live.wait_for_cache()
    first_last = _last_id(engine)
    vote_arena(engine, "dee", seed=4, limit=8)
    live.snapshot()  # 12 rows since the write
    live.wait_for_cache()
    reads.clear()
    _check(engine, monkeypatch)
    assert reads[0] == _last_id(engine) > first_last


# --- a file that does not hold this database's rows ------------------------------------


def _recreate(path: Path) -> Engine:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return open_store(path, seed_demo=True)


@pytest.mark.parametrize("same_identity", [False, True])
def test_a_database_recreated_at_the_same_path(
    engine: Engine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reads: list[int],
    same_identity: bool,
) -> None:
    """The database deleted and recreated at the same path, with the same number of
    votes, the same row ids and annotators but other choices: the file is ignored. With
    ``same_identity`` the study's creation time is copied over too (the worst case: only
    the rows differ), and the sampled rows catch it."""
    _votes(engine)
    _open(engine)
    with engine.connect() as c:
        created = c.execute(text("SELECT created_at FROM study WHERE name = :n"), {"n": STUDY})
        created_at = created.scalar_one()
    engine.dispose()
    engine = _recreate(tmp_path / "v.db")
    for i, name in enumerate(HONEST):
        vote_arena(engine, name, seed=100 + i, limit=12, style="contrarian")
    if same_identity:
        with engine.begin() as c:
            c.execute(
                text("UPDATE study SET created_at = :t WHERE name = :n"),
                {"t": created_at, "n": STUDY},
            )
    reads.clear()
    _check(engine, monkeypatch)
    assert reads[0] == 0


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE vote SET choice = CASE choice WHEN 'model_a' THEN 'model_b' ELSE 'model_a' END "
        "WHERE id = (SELECT min(id) + 3 FROM vote)",
        "DELETE FROM vote WHERE id = (SELECT min(id) + 5 FROM vote)",
        "DELETE FROM vote WHERE id = (SELECT max(id) FROM vote)",
        "UPDATE vote SET response_ms = response_ms + 1 WHERE id = (SELECT max(id) FROM vote)",
        "UPDATE vote SET retest_of = uuid WHERE id = (SELECT min(id) + 1 FROM vote)",
    ],
    ids=["choice-changed", "row-deleted", "last-row-deleted", "last-row-changed", "retest"],
)
def test_rows_edited_by_hand_after_the_file(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, reads: list[int], edit: str
) -> None:
    """Votes are append-only for annotate, not for someone with sqlite3: a row changed or
    deleted after the file was written makes the file useless (every row of a small
    study is sampled; a deletion changes the count)."""
    _votes(engine)
    _open(engine)
    with engine.begin() as c:
        c.execute(text("PRAGMA foreign_keys=OFF"))
        c.execute(text(edit))
    reads.clear()
    _check(engine, monkeypatch)
    assert reads[0] == 0


def test_a_row_deleted_and_another_appended(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, reads: list[int]
) -> None:
    """The last row deleted and a different vote appended in its place (SQLite reuses
    the largest row id): same count, same last id, other contents."""
    _votes(engine)
    _open(engine)
    last = _last_id(engine)
    with engine.begin() as c:
        c.execute(text("DELETE FROM vote WHERE id = :i"), {"i": last})
    vote_arena(engine, "zed", seed=9, limit=1)
    assert _last_id(engine) == last
    reads.clear()
    _check(engine, monkeypatch)
    assert reads[0] == 0


class _Boom:
    """Unpickling this runs ``touch MARKER``: a hostile pickle."""

    marker = ""

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def _npy(arr: Any) -> bytes:
    """``arr`` as a .npy file (objects pickled: what a hostile file would hold)."""
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    return buf.getvalue()


def _header(shape: tuple[int, ...], descr: str = "<i8") -> bytes:
    """A .npy header claiming ``shape`` (no data after it)."""
    buf = io.BytesIO()
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue()


@dataclasses.dataclass
class _Parts:
    """A good cache file and its three arrays."""

    data: bytes
    meta: np.ndarray
    ident: bytes
    rows: np.ndarray

    def file(self, meta: Any = None, ident: Any = None, rows: Any = None) -> bytes:
        """A file with some arrays replaced (``rows`` may be raw bytes)."""
        meta = self.meta if meta is None else meta
        ident = np.frombuffer(self.ident, np.uint8) if ident is None else ident
        rows = self.rows if rows is None else rows
        tail = rows if isinstance(rows, bytes) else _npy(rows)
        return vote_cache.MAGIC + _npy(meta) + _npy(ident) + tail


def _bytes(b: bytes) -> np.ndarray:
    return np.frombuffer(b, np.uint8)


def _with(meta: np.ndarray, i: int, value: int) -> np.ndarray:
    out = meta.copy()
    out[i] = value
    return out


def _resummed(p: _Parts, rows: np.ndarray) -> bytes:
    """``rows`` in place of the file's, with matching sums (only the database can tell)."""
    meta = p.meta.copy()
    meta[len(vote_cache._META) :] = vote_cache._sums(rows)
    return p.file(meta=meta, rows=rows)


CORRUPTIONS: dict[str, Callable[[_Parts], bytes]] = {
    "empty": lambda p: b"",
    "truncated-half": lambda p: p.data[: len(p.data) // 2],
    "truncated-one-byte": lambda p: p.data[:-1],
    "trailing-bytes": lambda p: p.data + b"\0" * 64,
    "random-bytes": lambda p: np.random.default_rng(0).bytes(len(p.data)),
    "other-magic": lambda p: b"X" + p.data[1:],
    "flipped-row-byte": lambda p: p.data[:-100] + bytes([p.data[-100] ^ 0x10]) + p.data[-99:],
    "format-version": lambda p: p.file(meta=_with(p.meta, 0, 99)),
    "rows-count-too-big": lambda p: p.file(meta=_with(p.meta, 1, len(p.rows) + 1)),
    "last-id-wrong": lambda p: p.file(meta=_with(p.meta, 2, int(p.meta[2]) - 1)),
    "all-rows-wrong": lambda p: p.file(meta=_with(p.meta, 3, int(p.meta[3]) + 1)),
    "study-id-wrong": lambda p: p.file(meta=_with(p.meta, 4, int(p.meta[4]) + 1)),
    "other-identity": lambda p: p.file(
        ident=np.frombuffer(p.ident.replace(b"demo", b"dema"), np.uint8)
    ),
    "pickle": lambda p: pickle.dumps({"rows": np.zeros((3, 8))}),
    "hostile-pickle": lambda p: pickle.dumps(_Boom()),
    "hostile-pickle-after-magic": lambda p: vote_cache.MAGIC + pickle.dumps(_Boom()),
    "object-meta": lambda p: vote_cache.MAGIC + _npy(np.array([_Boom()] * 13, dtype=object)),
    "object-rows": lambda p: p.file(
        rows=np.array([_Boom()] * p.rows.size, dtype=object).reshape(-1, 8)
    ),
    "int32-rows": lambda p: p.file(rows=p.rows.astype("<i4")),
    "big-endian-rows": lambda p: p.file(rows=p.rows.astype(">i8")),
    "fortran-rows": lambda p: p.file(rows=np.asfortranarray(p.rows)),
    "rows-7-columns": lambda p: p.file(rows=p.rows[:, :7].copy()),
    "rows-header-huge": lambda p: p.file(rows=_header((10**13, 8))),
    "meta-claims-huge": lambda p: p.file(meta=_with(p.meta, 1, 10**13), rows=_header((10**13, 8))),
    "rows-shuffled": lambda p: _resummed(p, p.rows[::-1].copy()),
    "item-out-of-range": lambda p: _resummed(p, _col(p.rows, 1, 10**9)),
    "negative-annotator": lambda p: _resummed(p, _col(p.rows, 2, -5)),
    "choice-out-of-range": lambda p: _resummed(p, _col(p.rows, 3, 17)),
    "choice-changed": lambda p: _resummed(p, _col(p.rows, 3, 3 - int(p.rows[4, 3] == 3))),
}


def _col(rows: np.ndarray, j: int, value: int) -> np.ndarray:
    out = rows.copy()
    out[4, j] = value
    return out


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_a_bad_file_is_ignored_and_replaced(
    engine: Engine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reads: list[int],
    kind: str,
) -> None:
    """Truncated, corrupt, foreign and hostile files (pickles, object arrays: never
    unpickled, the marker file is never created): the open reads every row, equals an
    uncached open, and writes a good file in place of the bad one."""
    _votes(engine)
    _open(engine)
    path = _the_file()
    marker = tmp_path / "unpickled"
    _Boom.marker = str(marker)
    target = vote_cache.target(engine, _study(engine))
    assert target is not None
    assert target.path == path
    ident = target.identify()
    assert ident is not None
    got = vote_cache._read(path, ident)
    assert got is not None
    parts = _Parts(path.read_bytes(), got[0], ident, got[1])
    assert parts.file() == parts.data  # the parts rebuild the file exactly
    path.write_bytes(CORRUPTIONS[kind](parts))
    reads.clear()
    _check(engine, monkeypatch)
    assert reads[0] == 0
    assert not marker.exists()
    reads.clear()
    _check(engine, monkeypatch)  # the file written in its place is used
    assert reads[0] == _last_id(engine)


def test_a_folder_or_a_device_in_place_of_the_file(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, reads: list[int]
) -> None:
    """A folder, then a link to /dev/zero, where the file should be: ignored."""
    _votes(engine)
    _open(engine)
    path = _the_file()
    path.unlink()
    path.mkdir()
    reads.clear()
    _check(engine, monkeypatch)
    assert reads[0] == 0
    path.rmdir()
    if Path("/dev/zero").exists():
        path.symlink_to("/dev/zero")
        reads.clear()
        _check(engine, monkeypatch)
        assert reads[0] == 0


def test_a_database_error_while_checking_the_file_is_raised(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row count runs in a thread beside the file's read: a database error there is
    raised by the open, in the caller's thread, as any read's error is (not lost, and
    not printed by the thread)."""
    _votes(engine, HONEST[:2])
    _open(engine)

    def broken(*_: Any) -> int:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(repo, "vote_count_through", broken)
    with pytest.raises(RuntimeError, match="went away"):
        MonitorSource(engine).open(STUDY).snapshot()


def test_a_fifo_in_place_of_the_file_does_not_hang(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, reads: list[int]
) -> None:
    """A named pipe where the file should be (opening one for reading waits for a
    writer): ignored at once."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    _votes(engine)
    _open(engine)
    path = _the_file()
    path.unlink()
    os.mkfifo(path)
    reads.clear()
    done: list[Any] = []
    t = threading.Thread(target=lambda: done.append(_open(engine)), daemon=True)
    t.start()
    t.join(timeout=60)
    assert done, "the open hangs on a FIFO"
    assert reads == [0]


def test_no_home_folder_no_cache(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither XDG_CACHE_HOME nor a home folder: the monitor works without a cache."""
    monkeypatch.delenv("XDG_CACHE_HOME")

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    _votes(engine, HONEST[:2])
    mon, _ = _open(engine)
    assert mon._cache is None


def test_a_file_of_another_study_or_database(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: list[int]
) -> None:
    """A file copied from another database (or another study) to this one's name is
    ignored: the identity inside it differs."""
    _votes(engine)
    other = open_store(tmp_path / "w.db", seed_demo=True)
    _votes(other)
    _open(other)
    theirs = _the_file()
    mine = vote_cache.target(engine, _study(engine))
    assert mine is not None
    shutil.copyfile(theirs, mine.path)
    reads.clear()
    _check(engine, monkeypatch)
    assert reads[0] == 0


def _study(engine: Engine) -> repo.StudyRow:
    from sqlmodel import Session

    with Session(engine) as s:
        st = repo.get_study(s, STUDY)
    assert st is not None
    return st


# --- writing ----------------------------------------------------------------------------


def test_an_unwritable_cache_folder_costs_nothing(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """XDG_CACHE_HOME under a file (no folder can be made there, even by root), then a
    read-only folder (when not running as root): opens work and equal uncached ones."""
    _votes(engine)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "cache"))
    _check(engine, monkeypatch)
    assert not (blocker / "cache").exists()
    if os.geteuid() == 0:
        return
    ro = tmp_path / "ro"
    (ro / "annotate" / "monitor").mkdir(parents=True)
    (ro / "annotate" / "monitor").chmod(0o500)
    monkeypatch.setenv("XDG_CACHE_HOME", str(ro))
    try:
        _check(engine, monkeypatch)
        assert not list((ro / "annotate" / "monitor").iterdir())
    finally:
        (ro / "annotate" / "monitor").chmod(0o700)


def test_the_folder_is_made_when_missing(engine: Engine, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "new" / "deeper"))
    _votes(engine, HONEST[:1])
    _open(engine)
    assert len(list((tmp_path / "new" / "deeper" / "annotate" / "monitor").iterdir())) == 1


def test_without_xdg_cache_home_the_file_goes_to_dot_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert vote_cache.cache_dir() == tmp_path / "home" / ".cache" / "annotate" / "monitor"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # not absolute: ignored (XDG spec)
    assert vote_cache.cache_dir() == tmp_path / "home" / ".cache" / "annotate" / "monitor"


def test_two_monitors_writing_at_once(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, reads: list[int]
) -> None:
    """Monitors of one study opened and writing at once, and many more writes of
    different lengths racing with loads: every load sees a whole file or none (os.replace
    is atomic), no temporary file is left, and the last file is good."""
    _votes(engine)
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            _open(engine)
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(_files()) == 1
    study = _study(engine)
    mon = StudyMonitor(engine, STUDY)
    mon.current_votes()
    mon.wait_for_cache()
    rows = mon._rows.view.copy()
    targets = [vote_cache.target(engine, study) for _ in range(6)]
    for t in targets:
        assert t is not None
        t.ident = t.identify()
    loader = vote_cache.target(engine, study)
    assert loader is not None
    stop = threading.Event()
    loaded: list[int] = []

    def load_loop() -> None:
        from sqlmodel import Session

        while not stop.is_set():
            with Session(engine) as s:
                got = loader.load(s, mon._item_pos)
            loaded.append(-1 if got is None else len(got))

    def write(t: vote_cache.CacheTarget, k: int) -> None:
        for _ in range(10):
            t.save(rows[: len(rows) - k] if k else rows)

    reader = threading.Thread(target=load_loop)
    reader.start()
    writers = [threading.Thread(target=write, args=(t, k)) for k, t in enumerate(targets)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stop.set()
    reader.join()
    assert loaded
    assert set(loaded) <= {-1, *(len(rows) - k for k in range(6))}
    assert -1 not in loaded  # a file was always there, and always whole
    assert len(_files()) == 1  # no temporary files left
    reads.clear()
    _check(engine, monkeypatch)


def test_a_write_deletes_old_files_and_leftover_temporary_files(engine: Engine) -> None:
    """Files not written for KEEP_DAYS days and temporary files a day old go at the next
    write; newer ones and other files stay."""
    _votes(engine, HONEST[:2])
    folder = vote_cache.cache_dir()
    folder.mkdir(parents=True)
    old = time.time() - (vote_cache.KEEP_DAYS + 1) * 86400
    files = {
        "old.votes": old,
        "new.votes": time.time() - 3600,
        ".x.votes.123.tmp": time.time() - 2 * 86400,
        ".y.votes.456.tmp": time.time() - 60,
        "notes.txt": old,
    }
    for name, t in files.items():
        (folder / name).write_bytes(b"x")
        os.utime(folder / name, (t, t))
    _open(engine)
    left = {p.name for p in folder.iterdir()}
    assert left - {_study_file(engine).name} == {"new.votes", ".y.votes.456.tmp", "notes.txt"}


def test_a_file_in_use_is_kept(engine: Engine, reads: list[int]) -> None:
    """A load that uses the file sets its modification time: a study opened every day
    keeps its file although no write rewrites it."""
    _votes(engine, HONEST[:2])
    _open(engine)
    path = _study_file(engine)
    old = time.time() - (vote_cache.KEEP_DAYS + 1) * 86400
    os.utime(path, (old, old))
    reads.clear()
    _open(engine)
    assert reads == [_last_id(engine)]
    assert time.time() - path.stat().st_mtime < 3600


def _study_file(engine: Engine) -> Path:
    t = vote_cache.target(engine, _study(engine))
    assert t is not None
    assert t.path.exists()
    return t.path


def test_rows_that_are_not_the_database_s_are_not_written(engine: Engine) -> None:
    """The writer counts the database's rows first: rows that differ (one dropped) are
    not written."""
    _votes(engine)
    mon = StudyMonitor(engine, STUDY)
    mon.current_votes()
    mon.wait_for_cache()
    t = vote_cache.target(engine, _study(engine))
    assert t is not None
    t.path.unlink()  # the monitor's own write
    t.identify()
    rows = mon._rows.view
    assert not t.save(np.delete(rows, 2, axis=0))
    assert not t.path.exists()
    assert t.save(rows)
    assert t.path.exists()


def test_a_small_study_writes_nothing_by_default(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below MIN_ROWS rows read, no file: reading them costs less than the file."""
    monkeypatch.setattr(vote_cache, "MIN_ROWS", MIN_ROWS)
    assert vote_cache.MIN_ROWS == 20_000
    _votes(engine)
    _open(engine)
    assert _files() == []


@pytest.mark.parametrize("value", ["off", "OFF", "0", "no", "false"])
def test_the_opt_out(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, reads: list[int], value: str
) -> None:
    """ANNOTATE_CACHE=off: no file is written, and a file already there is not read."""
    _votes(engine)
    monkeypatch.setenv(vote_cache.ENV, value)
    _open(engine)
    assert _files() == []
    monkeypatch.delenv(vote_cache.ENV)
    _open(engine)
    assert _files()
    monkeypatch.setenv(vote_cache.ENV, value)
    reads.clear()
    _open(engine)
    assert reads == [0]


def test_an_in_memory_database_is_not_cached() -> None:
    from annotate.store.engine import make_engine

    mem = make_engine(":memory:")
    assert vote_cache._database_key(mem) is None


def test_the_module_is_in_monitoring() -> None:
    """The monitor module names the cache (the README points here)."""
    assert monitoring.vote_cache is vote_cache


@pytest.fixture(autouse=True)
def _no_leftover_threads() -> Iterator[None]:
    yield
    for t in threading.enumerate():
        if t.name == "monitor-vote-cache":
            t.join(timeout=10)
