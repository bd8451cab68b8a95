"""The report's stage scheduling (annotate.services.report._Stages): the agreement and the
human scale run once each, by whichever of the main thread and the verdicts' worker is free
first, in order, with their exceptions passed to the caller."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import Engine

from annotate.services.report import _Stages


def test_each_stage_runs_once_in_order_across_two_threads() -> None:
    later = _Stages()
    ran: list[tuple[int, str]] = []
    lock = threading.Lock()

    def stage(i: int) -> int:
        with lock:
            ran.append((i, threading.current_thread().name))
        return i * i

    futures = [later.add(partial(stage, i)) for i in range(50)]
    first: Future[None] = Future()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="worker") as pool:
        helper = pool.submit(later.run_after, first)
        first.set_result(None)  # the worker may now take stages too
        later.run()
        helper.result()
    assert [f.result() for f in futures] == [i * i for i in range(50)]
    assert sorted(i for i, _ in ran) == list(range(50))  # each exactly once
    assert [i for i, _ in ran] == sorted(i for i, _ in ran)  # taken in order


def test_the_worker_waits_for_the_first_future() -> None:
    later = _Stages()
    f = later.add(lambda: threading.current_thread().name)
    first: Future[None] = Future()
    with ThreadPoolExecutor(max_workers=1) as pool:
        helper = pool.submit(later.run_after, first)
        later.run()  # the worker is still waiting: this thread runs the stage
        first.set_result(None)
        helper.result()
    assert f.result() == threading.current_thread().name


def test_a_failing_stage_raises_from_its_future_and_the_others_run() -> None:
    later = _Stages()

    def fail() -> None:
        raise ValueError("boom")

    bad = later.add(fail)
    good = later.add(lambda: 1)
    later.run()
    with pytest.raises(ValueError, match="boom"):
        bad.result()
    assert good.result() == 1


def _demo_engine(tmp_path: Path) -> Engine:
    from annotate.services.db import open_store

    return open_store(tmp_path / "v.db", seed_demo=True)


def test_the_votes_are_read_once_by_the_verdicts_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker reads the votes and goes on with the refit; the report's thread takes
    what it read (one read, not two), and the report is the one-thread report's."""
    from annotate.services.monitoring import StudyMonitor
    from annotate.services.report import human_alignment_report

    engine = _demo_engine(tmp_path)
    readers: list[str] = []
    original = StudyMonitor.current_votes

    def spy(self: StudyMonitor) -> object:
        readers.append(threading.current_thread().name)
        return original(self)

    monkeypatch.setattr(StudyMonitor, "current_votes", spy)
    two = human_alignment_report(engine, "demo-difficulty", n_boot=20, parallel=True)
    assert len(readers) == 1
    assert readers[0] != threading.main_thread().name
    one = human_alignment_report(engine, "demo-difficulty", n_boot=20, parallel=False)
    assert len(readers) == 2
    assert two.as_dict() | {"timings": None} == one.as_dict() | {"timings": None}


def test_a_failed_read_in_the_worker_is_raised_by_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's read fails: the report raises that error (it does not wait for votes
    that never come), and the refit is not attempted."""
    import sqlite3

    from annotate.services.monitoring import StudyMonitor
    from annotate.services.report import human_alignment_report

    engine = _demo_engine(tmp_path)
    refits: list[int] = []

    def fail(self: StudyMonitor) -> object:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(StudyMonitor, "current_votes", fail)
    monkeypatch.setattr(StudyMonitor, "snapshot", lambda self: refits.append(1))
    done: list[BaseException] = []

    def run() -> None:
        try:
            human_alignment_report(engine, "demo-difficulty", n_boot=0)
        except BaseException as err:
            done.append(err)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the report waits for votes the worker never read"
    assert len(done) == 1
    assert isinstance(done[0], sqlite3.OperationalError)
    assert "disk I/O error" in str(done[0])
    assert refits == []
