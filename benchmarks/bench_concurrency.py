"""Many annotator processes voting on one database at once, printed as a table.

Each of P processes (default 20) opens its own engine and VotingSession (the
code path the voting screens use) and casts N votes (default 40, the whole
demo-difficulty study), undoing and re-casting every tenth vote. Afterwards the
database is checked: every receipt a process got is a row, no row is
duplicated, every annotator has exactly one current vote per item it judged,
and ``PRAGMA integrity_check`` is ok. A second run does the same on the arena
demo, whose ``overlap`` cap (5) makes the processes compete for the same battles: no
battle may end over the cap (reservations, issue 9); a third run adds up to ``--think``
seconds of reading time per vote (the arena demo reveals the names, so no undo there).

Run:  .venv/bin/python benchmarks/bench_concurrency.py [--procs 20] [--votes 40] [--think 1]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from annotate.errors import VoteConflictError
from annotate.services.db import open_store
from annotate.services.voting import VotingSession

KEYS = {"demo-difficulty": ("left", "right", "skip"), "demo-arena": ("a", "b", "tie", "both_bad")}


def worker(args: tuple[str, str, str, int, float, float]) -> dict[str, object]:
    db, study, name, n_votes, start_at, think = args
    rng = random.Random(name)
    engine = open_store(Path(db))
    session = VotingSession(engine, study, name)
    keys = KEYS[study]
    while time.time() < start_at:  # start together
        time.sleep(0.001)
    receipts: list[str] = []
    latencies: list[float] = []
    began = time.time()
    undone = conflicts = 0
    for i in range(n_votes):
        if session.current() is None:
            break
        if think:
            time.sleep(rng.uniform(0, think))
        t = time.perf_counter()
        try:
            receipt = session.vote(keys[i % len(keys)], 3000)
        except VoteConflictError:
            conflicts += 1
            continue
        latencies.append((time.perf_counter() - t) * 1000)
        receipts.append(receipt.vote_uuid)
        # undo every tenth vote where the study allows it (not after an arena reveal)
        if i % 10 == 9 and session.can_undo and session.undo():
            undone += 1
            if session.current() is not None:  # in the arena, others may have filled it
                receipts.append(session.vote(keys[0], 3000).vote_uuid)
    ended = time.time()
    session.release()  # as a screen does when the annotator leaves
    engine.dispose()
    return {
        "began": began,
        "ended": ended,
        "name": name,
        "receipts": receipts,
        "latencies": latencies,
        "undone": undone,
        "conflicts": conflicts,
    }


def run(study: str, procs: int, n_votes: int, think: float) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "concurrent.db"
        open_store(db, seed_demo=True).dispose()
        start_at = time.time() + 2.0  # processes that are still importing start late
        jobs = [(str(db), study, f"p{i:02d}", n_votes, start_at, think) for i in range(procs)]
        ctx = mp.get_context("spawn")
        with ctx.Pool(procs) as pool:
            results = pool.map(worker, jobs)
        con = sqlite3.connect(db)
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        rows = con.execute("SELECT uuid FROM vote").fetchall()
        uuids = [r[0] for r in rows]
        dup_current = con.execute(
            "SELECT count(*) FROM (SELECT annotator_id, item_id FROM current_vote "
            "GROUP BY annotator_id, item_id HAVING count(*) > 1)"
        ).fetchone()[0]
        current = con.execute("SELECT count(*) FROM current_vote").fetchone()[0]
        retracts = con.execute("SELECT count(*) FROM vote WHERE choice='retract'").fetchone()[0]
        max_per_item = con.execute(
            "SELECT coalesce(max(n), 0) FROM (SELECT count(*) n FROM current_vote GROUP BY item_id)"
        ).fetchone()[0]
        settings = con.execute("SELECT settings_json FROM study WHERE name = ?", (study,))
        cap = int(json.loads(settings.fetchone()[0]).get("overlap", 0))
        con.close()
    wall = max(float(r["ended"]) for r in results) - min(float(r["began"]) for r in results)  # type: ignore[arg-type]
    receipts = [u for r in results for u in r["receipts"]]  # type: ignore[attr-defined]
    lat = sorted(x for r in results for x in r["latencies"])  # type: ignore[attr-defined]
    undone = sum(int(r["undone"]) for r in results)  # type: ignore[call-overload]
    conflicts = sum(int(r["conflicts"]) for r in results)  # type: ignore[call-overload]
    lost = len(set(receipts) - set(uuids))
    duplicated = len(uuids) - len(set(uuids))
    expected_current = len(receipts) - undone
    writes = len(receipts) + undone
    ok = (
        integrity == "ok"
        and lost == 0
        and duplicated == 0
        and dup_current == 0
        and current == expected_current
        and retracts == undone
        and (cap <= 0 or max_per_item <= cap)
    )
    p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else float("nan")
    return [
        study,
        f"{procs} x {n_votes}" + (f" ({think:g} s)" if think else ""),
        str(writes),
        str(len(uuids)),
        str(lost),
        str(duplicated),
        f"{current}/{expected_current}",
        f"{max_per_item}/{cap}" if cap > 0 else str(max_per_item),
        str(conflicts),
        integrity,
        f"{writes / wall:.0f}",
        f"{statistics.median(lat):.1f}" if lat else "-",
        f"{p99:.1f}",
        "OK" if ok else "FAIL",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--procs", type=int, default=20)
    ap.add_argument("--votes", type=int, default=40)
    ap.add_argument(
        "--think",
        type=float,
        default=1.0,
        help="most reading time per vote (s)",
    )
    args = ap.parse_args()
    header = [
        "study",
        "procs x votes",
        "writes",
        "rows",
        "lost",
        "dup",
        "current",
        "max/cap",
        "conflicts",
        "integrity",
        "writes/s",
        "p50 ms",
        "p99 ms",
        "check",
    ]
    table = [header]
    for study in ("demo-difficulty", "demo-arena"):
        table.append(run(study, args.procs, args.votes, 0.0))
    if args.think:
        table.append(run("demo-arena", args.procs, min(args.votes, 10), args.think))
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for k, r in enumerate(table):
        print("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
        if k == 0:
            print("  ".join("-" * w for w in widths))
    print(
        "\nwrites = votes + undo rows acknowledged to the processes; rows = rows in the vote "
        "table;\nlost = acknowledged but missing; dup = repeated uuids; current = current votes "
        "found/expected;\nmax/cap = most current votes on one item / the study's overlap cap; "
        "conflicts = votes refused\nbecause another process had just filled the item; "
        "p50/p99 = one vote() call."
    )


if __name__ == "__main__":
    main()
