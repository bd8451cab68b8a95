"""``annotate report`` only reads: it runs while a writer holds the database's write lock
(a voter's or an import's transaction), instead of queueing behind it and holding the
lock itself while it reads every vote, which would stall the annotators' votes.

Before, the report read through the writers' engine (``BEGIN IMMEDIATE``), so with the
lock held it waited and failed after ``ANNOTATE_LOCK_TIMEOUT`` with one line.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import text

from annotate.cli import main
from annotate.services.db import open_store
from annotate.services.voting import VotingSession
from annotate.store.writelock import LOCK_TIMEOUT_ENV, write_session


@pytest.mark.parametrize("study", ["demo-difficulty", "demo-arena"])
def test_report_runs_while_a_writer_holds_the_lock(
    tmp_path: Path, study: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    engine = open_store(db, seed_demo=True)
    for name in ("ann", "bob"):
        voter = VotingSession(engine, study, name)
        for _ in range(6):
            voter.vote("left" if study == "demo-difficulty" else "a", 3000)
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, "1")
    held, release = threading.Event(), threading.Event()

    def writer() -> None:
        with write_session(engine) as s:
            s.execute(text("SELECT count(*) FROM vote"))  # BEGIN IMMEDIATE is taken
            held.set()
            release.wait(60)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert held.wait(30)
        code = main(
            [
                "report",
                "--db",
                str(db),
                "--study",
                study,
                "--boot",
                "20",
                "--no-plots",
                "--out",
                str(tmp_path / "out"),
            ]
        )
    finally:
        release.set()
        t.join()
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "lock" not in captured.err.lower()
    assert (tmp_path / "out" / "report.md").exists()
    engine.dispose()
