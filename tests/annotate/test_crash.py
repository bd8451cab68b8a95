"""``kill -9`` in the middle of a study loses at most the keystroke in flight.

The installed command runs under tmux. Votes acknowledged on screen (the
progress counter moved) must all be in the database after SIGKILL, the
database must pass ``PRAGMA integrity_check``, and a restart must resume with
exactly the votes that were committed.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
from pathlib import Path

import pytest

from annotate.services.db import open_store
from tests.annotate.conftest import ANNOTATE, Tmux, needs_tmux, progress

pytestmark = [pytest.mark.serial, needs_tmux()]


def check_db(db: Path) -> tuple[int, int]:
    """(current votes, all rows) after checking integrity and the one-current-vote rule."""
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        per_item = con.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM current_vote "
            "GROUP BY annotator_id, item_id)"
        ).fetchone()[0]
        assert per_item in (None, 1)
        current = con.execute("SELECT count(*) FROM current_vote").fetchone()[0]
        total = con.execute("SELECT count(*) FROM vote").fetchone()[0]
        return int(current), int(total)
    finally:
        con.close()


def shown_progress(screen: str) -> int:
    first = screen.splitlines()[0]
    match = re.search(r"(\d+) / 40", first)
    assert match, first
    return int(match.group(1))


@pytest.mark.parametrize("burst", [0, 1, 5])
def test_sigkill_mid_study_keeps_every_acknowledged_vote(tmp_path: Path, burst: int) -> None:
    db = tmp_path / "crash.db"
    open_store(db, seed_demo=True).dispose()
    acknowledged = 0
    for run in range(3):
        t = Tmux(
            f"crash{run}",
            [str(ANNOTATE), "--db", str(db), "--annotator", "k", "--study", "demo-difficulty"],
            paint_log=tmp_path / f"paint{run}.log",
        )
        try:
            t.start()  # the first run: the instructions and subjects, with Enter
            screen = t.wait_for(progress(acknowledged, 40) + r"[\s\S]*1st harder")
            assert shown_progress(screen) == acknowledged  # resumed exactly
            t.wait_painted(1)  # keys act once the item is painted
            for _ in range(4):  # votes we wait to see acknowledged
                t.vote("12"[acknowledged % 2])
                acknowledged += 1
                t.wait_for(progress(acknowledged, 40))
            if run == 1:
                t.vote("u")  # an undo is a committed row too
                acknowledged -= 1
                t.wait_for(progress(acknowledged, 40))
            for i in range(burst):  # keys in flight when the process dies
                t.send("120"[i % 3])
            os.kill(t.pid(), signal.SIGKILL)
            t.wait_exit()
        finally:
            t.close()
        current, _ = check_db(db)
        assert acknowledged <= current <= acknowledged + burst
        acknowledged = current  # what the next run must resume from
    assert acknowledged >= 11
