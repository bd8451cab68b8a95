"""``annotate report`` computes its verdicts and human scale in a forked child (issue 13;
:class:`annotate.services.report_prefetch.Forked`, ``human_alignment_report(fork=True)``).

The reference of every test is the same report computed without the fork, in worker
threads: the report (timings aside, which its equality leaves out), its files and its
printed text must be exactly equal. A child that raises, dies or is not started (another
thread running, the database open) changes nothing but time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

import annotate.services.monitoring as monitoring
import annotate.services.report as report
from annotate.services import vote_cache
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.json_ready import kept_texts, symmetric_texts
from annotate.services.report import human_alignment_report
from annotate.services.report_prefetch import Forked
from annotate.store.engine import reader_engine
from tests.annotate.test_report import VOTES, cast, make_study

ROOT = Path(__file__).resolve().parents[2]
STUDY = "hand"


def _end_signal_thread() -> None:
    """The monitor's signal thread, left by a snapshot in this process, ended: a fork is
    made only from a process without other threads."""
    while monitoring._POOL:
        monitoring._POOL.pop().shutdown(wait=True)


@pytest.fixture(autouse=True)
def _single_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(vote_cache.ENV, "off")  # no cache writer thread
    _end_signal_thread()


_ENGINES: list[Engine] = []


def _engine(tmp_path: Path, votes: dict[str, dict[str, str]]) -> Engine:
    store = open_store(tmp_path / "v.db")
    import_paths(store, [make_study(tmp_path / "studies")])
    cast(store, STUDY, votes)
    reader = reader_engine(store)
    _ENGINES[:] = [store, reader]
    return reader


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return _engine(tmp_path, VOTES)


FULL = {
    "A1": {"p1": "second", "p2": "first", "p3": "first", "p4": "second", "p5": "first"},
    "A2": {"p1": "second", "p2": "second", "p3": "first", "p4": "second", "p5": "first"},
    "A3": {"p1": "first", "p2": "second", "p3": "first", "p4": "first", "p5": "second"},
}
"""Every annotator votes on every pair, both ways: every pairwise kappa is defined."""


class _Spy:
    """What :meth:`Forked.start` and :meth:`Forked.result` returned during a report."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started: list[bool] = []
        self.results: list[bool] = []
        start, result = Forked.start.__func__, Forked.result  # type: ignore[attr-defined]

        def spy_start(cls: type[Forked], *a: Any) -> Forked | None:
            f: Forked | None = start(cls, *a)
            self.started.append(f is not None)
            return f

        def spy_result(f: Forked) -> tuple[bool, Any]:
            out = result(f)
            self.results.append(out[0])
            return out

        monkeypatch.setattr(Forked, "start", classmethod(spy_start))
        monkeypatch.setattr(Forked, "result", spy_result)


def _report(engine: Engine, fork: bool) -> Any:
    """The report with 50 bootstrap replicates, forked or not, from a process with no
    connection open (the engines reconnect on their next use) and no other thread."""
    for e in _ENGINES:
        e.dispose()
    _end_signal_thread()
    rep = human_alignment_report(engine, STUDY, n_boot=50, fork=fork)
    _end_signal_thread()
    return rep


def test_the_forked_report_equals_the_threaded_one(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = _report(engine, fork=False)
    spy = _Spy(monkeypatch)
    got = _report(engine, fork=True)
    assert spy.started == [True]
    assert spy.results == [True]
    assert got == ref
    assert {s for s, _ in got.timings} == {s for s, _ in ref.timings}
    assert got.verdicts
    assert got.human_scale.fitted


def test_the_pairwise_texts_made_while_waiting_are_the_csvs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside :func:`kept_texts`, the report makes the pairwise-kappa texts while its
    child works; the CSV's call then gets those (the same texts it would make)."""
    engine = _engine(tmp_path, FULL)
    monkeypatch.setattr(Forked, "pending", lambda self: True)
    calls: list[Any] = []
    real = symmetric_texts

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(real(*a, **k))
        return calls[-1]

    monkeypatch.setattr(report, "symmetric_texts", counted)
    with kept_texts():
        rep = _report(engine, fork=True)
        assert len(calls) == 1
        kept = symmetric_texts(rep.agreement.pairwise_kappa, float.__repr__)
    assert kept is not None
    assert kept is calls[0]  # kept, not made again
    assert kept == symmetric_texts(rep.agreement.pairwise_kappa, float.__repr__)
    assert kept == [[float.__repr__(v) for v in row] for row in rep.agreement.pairwise_kappa]


def _raise(*_: Any) -> None:
    raise RuntimeError("no statistics here")


def _die(*_: Any) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _unpicklable(*_: Any) -> Any:
    return lambda: None


@pytest.mark.parametrize("failure", [_raise, _die, _unpicklable])
def test_a_failed_child_gives_the_same_report(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, failure: Any
) -> None:
    """A child that raises, is killed or returns what does not pickle: the parent computes
    the verdicts and the human scale itself, the same numbers."""
    ref = _report(engine, fork=False)
    monkeypatch.setattr(report, "_child_stages", failure)
    spy = _Spy(monkeypatch)
    got = _report(engine, fork=True)
    assert spy.started == [True]
    assert spy.results == [False]
    assert got == ref


def test_no_fork_with_a_thread_running_or_the_database_open(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread beside this one (a fork copies only this one), or the database file held
    open by another engine: nothing is forked and the report is the threaded one."""
    ref = _report(engine, fork=False)
    spy = _Spy(monkeypatch)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        got = human_alignment_report(engine, STUDY, n_boot=50, fork=True)
    finally:
        stop.set()
        t.join()
    _end_signal_thread()
    assert got == ref
    for e in _ENGINES:
        e.dispose()
    other = _ENGINES[0]  # the store's engine, kept connected
    with other.connect():
        got = human_alignment_report(engine, STUDY, n_boot=50, fork=True)
    _end_signal_thread()
    assert got == ref
    assert True not in spy.started


def test_forked_calls() -> None:
    """The result of the child's call, or ``(False, None)``; a child not waited for is
    killed and reaped at once."""
    f = Forked.start(lambda: {"a": [1.5, None]}, None)
    assert f is not None
    assert f.result() == (True, {"a": [1.5, None]})
    assert f.result() == (False, None)  # once only
    f = Forked.start(lambda: time.sleep(60), None)
    assert f is not None
    assert f.pending()
    pid = f._pid
    assert pid is not None
    t = time.monotonic()
    f.close()
    assert time.monotonic() - t < 10
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped
    assert f.result() == (False, None)


_CLI = (
    "import sys\n"
    "import annotate.services.report_prefetch as mr\n"
    "if sys.argv[1] == 'off':\n"
    "    mr.Forked.start = classmethod(lambda cls, *a: None)\n"
    "else:\n"
    "    real = mr.Forked.result\n"
    "    def result(self):\n"
    "        got = real(self)\n"
    "        assert got[0], 'the child failed'\n"
    "        return got\n"
    "    mr.Forked.result = result\n"
    "from annotate.cli import main\n"
    "raise SystemExit(main(sys.argv[2:]))\n"
)


def test_the_report_is_the_same_with_and_without_the_fork(engine: Engine, tmp_path: Path) -> None:
    """``annotate report --study S`` (text and ``--json``), run as a user runs it: the
    files and the printed text are byte-identical with the fork and without it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), vote_cache.ENV: "off"}
    for mode in ("text", "json"):
        outs: dict[str, tuple[bytes, dict[str, bytes]]] = {}
        for fork in ("off", "on"):
            out = tmp_path / f"out-{mode}-{fork}"
            args = ["--db", str(tmp_path / "v.db"), "report", "--study", STUDY, "--no-plots"]
            args += ["--boot", "50", "--out", str(out), *(["--json"] if mode == "json" else [])]
            run = subprocess.run(
                [sys.executable, "-c", _CLI, fork, *args],
                capture_output=True,
                env=env,
                cwd=tmp_path,
                check=False,
            )
            assert run.returncode == 0, run.stderr.decode()
            files = {f.name: f.read_bytes() for f in sorted(out.iterdir())}
            outs[fork] = (run.stdout.replace(bytes(out), b"OUT"), files)
        assert outs["on"] == outs["off"]
        assert len(outs["on"][1]) > 3
