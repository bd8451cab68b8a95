"""App latency with a large database, printed as a table (not a timed test).

1. Key press to next item painted: a database gets 100,000 votes from 2,500
   annotators by bulk SQL, then the real app is driven with Pilot; each press
   of ``1`` is timed until the next pair is painted (the moment the screen
   accepts keys again, which is also when response time starts).
2. Service calls behind it at the same size: opening a VotingSession, vote(),
   undo(), the welcome screen's study list.
3. Cold start: ``annotate --annotator x --study demo-difficulty`` (x resuming: one
   vote already, so the study opens on the item, not its instructions) started in a
   fresh process under tmux, timed until the first pair is on screen.

Run:  .venv/bin/python benchmarks/bench_app.py [--votes 100000] [--presses 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from annotate.app import make_app
from annotate.screens.pair import PairScreen
from annotate.services.db import open_store
from annotate.services.voting import VotingSession, study_progress

ANNOTATE = Path(sys.executable).parent / "annotate"


def fill(db: Path, n_votes: int) -> None:
    """Bulk-insert ``n_votes`` current votes on demo-difficulty from many annotators."""
    open_store(db, seed_demo=True).dispose()
    con = sqlite3.connect(db)
    with con:
        (study_id,) = con.execute("SELECT id FROM study WHERE name='demo-difficulty'").fetchone()
        items = [r[0] for r in con.execute("SELECT id FROM item WHERE study_id=?", (study_id,))]
        n_annotators = -(-n_votes // len(items))
        con.executemany(
            "INSERT INTO annotator (name, created_at) VALUES (?, '2026-01-01 00:00:00')",
            [(f"bulk-{i:05d}",) for i in range(n_annotators)],
        )
        ids = [r[0] for r in con.execute("SELECT id FROM annotator WHERE name LIKE 'bulk-%'")]
        rows = []
        for a in ids:
            for k, item in enumerate(items):
                if len(rows) == n_votes:
                    break
                rows.append(
                    (
                        str(uuid.uuid4()),
                        study_id,
                        a,
                        item,
                        ("first", "second", "skip")[k % 3],
                        (a + k) % 2,
                        3000 + k,
                        0,
                    )
                )
        con.executemany(
            """INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice, swapped,
               response_ms, fast, created_at, supersedes)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, '2026-01-01 00:00:00', NULL)""",
            rows,
        )
    con.close()


def prime(db: Path, names: list[str]) -> None:
    """Give each annotator one vote, so the app resumes them on the item.

    A new annotator sees the study's instructions (and, on a difficulty study with
    several subjects, the subject chooser) before the first item; the benchmark
    times the item itself, as it did before those screens existed.
    """
    engine = open_store(db)
    try:
        for name in names:
            VotingSession(engine, "demo-difficulty", name).vote("left", 3000)
    finally:
        engine.dispose()


async def press_to_paint(db: Path, presses: int) -> list[float]:
    app = make_app(db, annotator="bench", study="demo-difficulty")
    out: list[float] = []
    async with app.run_test(size=(100, 32)) as pilot:
        for _ in range(2000):
            await pilot.pause()
            screen = app.screen
            if isinstance(screen, PairScreen) and screen.painted_generation >= 1:
                break
        screen = app.screen
        assert isinstance(screen, PairScreen)
        painted: list[float] = []
        original = screen._painted

        def record(generation: int) -> None:
            before = screen.painted_generation
            original(generation)
            if screen.painted_generation != before:
                painted.append(time.perf_counter())

        screen._painted = record  # type: ignore[method-assign]
        for i in range(presses):
            t0 = time.perf_counter()
            await pilot.press("12"[i % 2])
            while len(painted) <= i:
                await asyncio.sleep(0.0005)
            out.append((painted[i] - t0) * 1000)
    return out


def service_timings(db: Path) -> list[tuple[str, float]]:
    engine = open_store(db)
    t = time.perf_counter()
    s = VotingSession(engine, "demo-difficulty", "svc")
    s.current()
    opened = (time.perf_counter() - t) * 1000
    votes, undos = [], []
    for _ in range(20):
        t = time.perf_counter()
        s.vote("left", 3000)
        s.current()
        votes.append((time.perf_counter() - t) * 1000)
    for _ in range(10):
        t = time.perf_counter()
        s.undo()
        s.current()
        undos.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    study_progress(engine, "svc")
    listing = (time.perf_counter() - t) * 1000
    arena = []
    for k in range(6):  # demo-arena caps each battle at 5 annotators: the reserving path
        a = VotingSession(engine, "demo-arena", f"svc-arena-{k}")
        a.current()
        for _ in range(10):
            if a.current() is None:
                break
            t = time.perf_counter()
            a.vote("a", 3000)
            a.current()
            arena.append((time.perf_counter() - t) * 1000)
    return [
        ("open VotingSession + first item", opened),
        ("vote() + next item, median", statistics.median(votes)),
        ("vote() + next item, overlap study, median", statistics.median(arena)),
        ("undo() + item back, median", statistics.median(undos)),
        ("welcome study list", listing),
    ]


def cold_start(db: Path, runs: int) -> list[float]:
    if shutil.which("tmux") is None:
        return []
    times = []
    for run in range(runs):
        sock = f"bench-cold-{run}"
        t0 = time.perf_counter()
        subprocess.run(
            [
                "tmux",
                "-L",
                sock,
                "new-session",
                "-d",
                "-s",
                "c",
                "-x",
                "100",
                "-y",
                "32",
                f"exec {ANNOTATE} --db {db} --annotator cold{run} --study demo-difficulty",
            ],
            check=True,
        )
        try:
            while True:
                screen = subprocess.run(
                    ["tmux", "-L", sock, "capture-pane", "-p", "-t", "c"],
                    capture_output=True,
                    text=True,
                    check=False,
                ).stdout
                if "subject:" in screen and "1st harder" in screen:
                    times.append((time.perf_counter() - t0) * 1000)
                    break
                if time.perf_counter() - t0 > 30:
                    raise RuntimeError(f"no first item after 30 s:\n{screen}")
                time.sleep(0.005)
        finally:
            subprocess.run(["tmux", "-L", sock, "kill-server"], check=False)
    return times


HEADLESS = """
import asyncio, sys
from annotate.cli import main  # the same imports as the command
from annotate.app import make_app
from annotate.screens.pair import PairScreen

async def run() -> None:
    app = make_app(__import__("pathlib").Path(sys.argv[1]), annotator=sys.argv[2],
                   study="demo-difficulty")
    async with app.run_test(size=(100, 32)):
        while not (isinstance(app.screen, PairScreen) and app.screen.painted_generation >= 1):
            await asyncio.sleep(0.001)
        print("first item", flush=True)

asyncio.run(run())
"""


def cold_start_headless(db: Path, runs: int) -> list[float]:
    """Spawn a fresh interpreter that runs the app headless; time until the first item."""
    times = []
    for run in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", HEADLESS, str(db), f"headless{run}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        times.append((time.perf_counter() - t0) * 1000)
        proc.wait()
        assert line.startswith("first item"), line
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--votes", type=int, default=100_000)
    ap.add_argument("--presses", type=int, default=39)
    ap.add_argument("--cold-runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "big.db"
        t = time.perf_counter()
        fill(db, args.votes)
        fill_s = time.perf_counter() - t
        prime(db, ["bench", *(f"cold{r}" for r in range(args.cold_runs))])
        lat = asyncio.run(press_to_paint(db, args.presses))
        services = service_timings(db)
        small = Path(tmp) / "demo.db"
        open_store(small, seed_demo=True).dispose()
        runs = range(args.cold_runs)
        prime(small, [*(f"cold{r}" for r in runs), *(f"headless{r}" for r in runs)])
        cold_small = cold_start(small, args.cold_runs)
        headless = cold_start_headless(small, args.cold_runs)
        cold_big = cold_start(db, args.cold_runs)
    print(f"database: {args.votes:,} votes on demo-difficulty (filled in {fill_s:.1f} s)\n")
    print(f"{'measure':<48} {'median ms':>10} {'p90 ms':>8} {'max ms':>8} {'n':>4}")
    print("-" * 82)

    def row(name: str, xs: list[float]) -> None:
        if not xs:
            print(f"{name:<48} {'skipped (no tmux)':>10}")
            return
        xs = sorted(xs)
        p90 = xs[min(len(xs) - 1, int(0.9 * len(xs)))]
        print(f"{name:<48} {statistics.median(xs):>10.1f} {p90:>8.1f} {xs[-1]:>8.1f} {len(xs):>4}")

    row("key press -> next pair painted (Pilot)", lat)
    for name, ms in services:
        row(name, [ms])
    row("cold start -> first pair on screen (demo DB)", cold_small)
    row("cold start -> first pair, headless Pilot (demo DB)", headless)
    row(f"cold start -> first pair on screen ({args.votes // 1000}k DB)", cold_big)
    load = os.getloadavg()[0]
    print(f"\nload average during the run: {load:.1f} on {os.cpu_count()} CPUs")
    print("targets: key press -> next item median < 50 ms; cold start < 1500 ms")


if __name__ == "__main__":
    main()
