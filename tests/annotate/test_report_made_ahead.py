"""What ``annotate report`` makes ahead, in a thread that would otherwise wait (issue 13):
the texts of the pairwise kappa matrix for the files (``report_files.prepare_pairwise``,
kept for the command's ``kept_texts`` scope by ``json_ready.kept_result``), the quality
checks as a stage, and numpy's test and f2py modules left to load on first use. The
reference of every test is the same report written with nothing made ahead: its files
must be byte-identical."""

from __future__ import annotations

import contextvars
import dataclasses
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine

import annotate.services.report_view as report_view
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.json_ready import kept_active, kept_result, kept_texts
from annotate.services.report import human_alignment_report
from annotate.services.report_files import prepare_pairwise, write_report
from annotate.services.report_model import HumanAlignmentReport
from annotate.store.engine import reader_engine
from tests.annotate.test_report import VOTES, cast, make_study

ROOT = Path(__file__).resolve().parents[2]
STUDY = "hand"


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    store = open_store(tmp_path / "v.db")
    import_paths(store, [make_study(tmp_path / "studies")])
    cast(store, STUDY, VOTES)
    return reader_engine(store)


def _files(folder: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir())}


def test_kept_result_is_made_once_per_source_inside_a_scope_only() -> None:
    made: list[int] = []

    def make() -> list[int]:
        made.append(1)
        return [len(made)]

    a, b = object(), object()
    assert not kept_active()
    assert kept_result("t", a, make) == [1]
    assert kept_result("t", a, make) == [2]  # outside a scope: made each time
    with kept_texts():
        assert kept_active()
        first = kept_result("t", a, make)
        assert kept_result("t", a, make) is first  # kept for the same object
        assert kept_result("u", a, make) is not first  # another tag
        assert kept_result("t", b, make) is not first  # another object: made again
    assert not kept_active()
    assert kept_result("t", a, make) is not first  # the scope let it go
    assert len(made) == 6


def _big(rep: HumanAlignmentReport, n: int = 300) -> HumanAlignmentReport:
    """``rep`` with an n x n pairwise kappa matrix (enough cells for pyarrow's pass),
    symmetric bit for bit, with undefined (None) cells, negative values, values that
    round to a half and integers."""
    rng = np.random.default_rng(7)
    scale = 10.0 ** rng.integers(1, 6, size=(n, n))
    a = np.round(rng.uniform(-1, 1, size=(n, n)) * scale) / scale
    a = np.triu(a) + np.triu(a, 1).T
    np.fill_diagonal(a, 1.0)
    rows = [[float(x) for x in r] for r in a]
    for i, j in [(0, 5), (3, 9), (10, 11), (200, 17)]:
        rows[i][j] = rows[j][i] = None  # type: ignore[call-overload]
    rows[1][2] = rows[2][1] = 0.125  # a tie at two decimals
    g = dataclasses.replace(
        rep.agreement,
        annotators=tuple(f"a{i:03d}" for i in range(n)),
        pairwise_kappa=tuple(tuple(r) for r in rows),
    )
    return dataclasses.replace(rep, agreement=g)


def test_files_are_the_same_with_the_texts_made_ahead(engine: Engine, tmp_path: Path) -> None:
    rep = _big(human_alignment_report(engine, STUDY, n_boot=20))
    report_view._LAST_PRINTED.clear()
    write_report(rep, tmp_path / "plain", plots=False)  # no scope: nothing kept
    plain = _files(tmp_path / "plain")
    report_view._LAST_PRINTED.clear()
    with kept_texts():
        # made in another thread, in this scope's context (as the report's stage does)
        contextvars.copy_context().run(prepare_pairwise, rep.agreement)
        rows = report_view.pairwise_rows(rep.agreement)
        assert report_view.pairwise_rows(rep.agreement) is rows  # kept, not made again
        write_report(rep, tmp_path / "ahead", plots=False)
    assert _files(tmp_path / "ahead") == plain
    assert b"a299" in plain["pairwise_kappa.csv"]
    assert b"a299" in plain["report.md"]


def test_the_report_makes_the_texts_ahead_only_inside_a_scope(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report's three steps run once each, in the caller's scope, the Markdown lines
    after the table's texts; the report is the same as without them."""
    import threading

    calls: list[tuple[str, bool]] = []
    lock = threading.Lock()

    def steps(agreement: Callable[[], object]) -> tuple[Callable[[], None], ...]:
        def step(name: str) -> Callable[[], None]:
            def run() -> None:
                assert agreement() is not None
                with lock:
                    calls.append((name, kept_active()))

            return run

        return step("texts"), step("rows"), step("lines")

    monkeypatch.setattr("annotate.services.report.pairwise_steps", steps)
    rep = human_alignment_report(engine, STUDY, n_boot=20)
    assert calls == []  # outside a scope: nothing to keep the texts for
    with kept_texts():
        ahead = human_alignment_report(engine, STUDY, n_boot=20)
    assert sorted(calls) == [("lines", True), ("rows", True), ("texts", True)]
    assert calls.index(("rows", True)) < calls.index(("lines", True))
    assert dataclasses.replace(ahead, timings=rep.timings) == rep


def test_the_steps_in_two_threads_give_the_same_files(engine: Engine, tmp_path: Path) -> None:
    """The steps as the report runs them: the first two side by side in two threads, each
    in its own copy of the scope's context; the files equal those made without them."""
    from concurrent.futures import ThreadPoolExecutor

    from annotate.services.report_files import pairwise_steps

    rep = _big(human_alignment_report(engine, STUDY, n_boot=20))
    report_view._LAST_PRINTED.clear()
    write_report(rep, tmp_path / "plain", plots=False)
    report_view._LAST_PRINTED.clear()
    with kept_texts():
        context = contextvars.copy_context()
        texts, rows, lines = pairwise_steps(lambda: rep.agreement)
        with ThreadPoolExecutor(max_workers=2) as pool:
            done = [pool.submit(context.copy().run, f) for f in (texts, rows)]
            [f.result() for f in done]
        context.copy().run(lines)
        write_report(rep, tmp_path / "ahead", plots=False)
    assert _files(tmp_path / "ahead") == _files(tmp_path / "plain")


_CLI = (
    "import sys\n"
    "from annotate.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "t = sys.modules['numpy.testing']\n"
    "print('lazy' if type(t).__name__ == '_LazyModule' else 'loaded', file=sys.stderr)\n"
    "import numpy\n"
    "numpy.testing.assert_allclose(1.0, 1.0)  # loaded on first use, the same module\n"
    "assert sys.modules['numpy.testing'] is t and 'unittest' in sys.modules\n"
    "raise SystemExit(code)\n"
)


def test_the_command_leaves_numpy_testing_to_its_first_use(engine: Engine, tmp_path: Path) -> None:
    """In a fresh interpreter ``annotate report`` imports SciPy without numpy.testing and
    numpy.f2py (SciPy's array-API layer looks up every numpy name); its output is that of
    the report run in this process, where they are loaded."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = ["--db", str(engine.url.database), "report", "--study", STUDY, "--no-plots"]
    args += ["--boot", "20", "--out", str(tmp_path / "cli")]
    run = subprocess.run(
        [sys.executable, "-c", _CLI, *args], capture_output=True, env=env, check=False
    )
    assert run.returncode == 0, run.stderr.decode()
    assert run.stderr.split()[-1] == b"lazy"
    from annotate.cli import main

    assert main([*args[:-1], str(tmp_path / "here")]) == 0
    assert _files(tmp_path / "cli") == _files(tmp_path / "here")
