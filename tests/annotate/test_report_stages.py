"""The report's stage scheduling (annotate.services.report._Stages): the agreement and the
human scale run once each, by whichever of the main thread and the verdicts' worker is free
first, in order, with their exceptions passed to the caller."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial

import pytest

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
