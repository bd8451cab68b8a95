"""SQLite file vs PostgreSQL server (issue 17): concurrent voting and the monitor's refresh.

1. Voting: P annotator processes (default 20) each cast N votes (default 500) through
   :class:`VotingSession` (the voting screens' code path) on an uncapped arena study of
   N battles, all starting together; printed per back end: votes per second (all votes
   / wall time from the first start to the last end), median, p99 and slowest vote
   latency, and the check that 0 votes were lost or duplicated.
2. Monitor: an arena study of V votes (default 100,000; ``bench_monitor.build``) on
   each back end; the monitor's cold refresh (reads every vote, fits, signals) and its
   live refresh (one new vote), median of R runs; the PostgreSQL / SQLite ratio
   (target: within 2x).

The PostgreSQL server is a private cluster started with the distribution's initdb and
pg_ctl (``tests/postgres_server.py``: fsync off, as a test server; the SQLite file keeps
``synchronous=FULL``), or ``--pg-url`` / ``ANNOTATE_TEST_POSTGRES_URL``. The load
average is printed beside the results: on a shared machine the numbers move with it.

Run:  .venv/bin/python benchmarks/bench_backends.py [--procs 20] [--votes 500]
          [--monitor-votes 100000] [--repeat 5] [--out benchmarks/results/bench_backends.txt]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

KEYS = ("a", "b", "tie", "both_bad")


def make_arena(folder: Path, n: int) -> Path:
    """An uncapped arena study of ``n`` battles between four models (no reveal)."""
    folder.mkdir(parents=True)
    (folder / "study.toml").write_text(
        'name = "bench-arena"\nkind = "arena"\n\n[settings]\noverlap = 0\nseed = 0\n'
        "min_response_ms = 0\nreveal_models = false\n",
        encoding="utf-8",
    )
    models = ("m0", "m1", "m2", "m3")
    with (folder / "prompts.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"p{i}", "text": f"prompt {i}", "category": "c"}) + "\n")
    with (folder / "responses.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            for m in models:
                fh.write(json.dumps({"prompt_id": f"p{i}", "model": m, "text": f"{m} on {i}"}))
                fh.write("\n")
    with (folder / "battles.csv").open("w", encoding="utf-8") as fh:
        fh.write("battle_id,prompt_id,model_a,model_b\n")
        for i in range(n):
            fh.write(f"b{i},p{i},{models[i % 4]},{models[(i + 1) % 4]}\n")
    return folder


def voter(args: tuple[str, str, int, float]) -> dict[str, Any]:
    from annotate.services.db import open_store
    from annotate.services.voting import VotingSession

    db, name, n, start_at = args
    engine = open_store(db)
    session = VotingSession(engine, "bench-arena", name)
    while time.time() < start_at:
        time.sleep(0.001)
    began = time.time()
    receipts: list[str] = []
    latencies: list[float] = []
    for i in range(n):
        t = time.perf_counter()
        receipts.append(session.vote(KEYS[i % 4], 3000).vote_uuid)
        latencies.append((time.perf_counter() - t) * 1000)
    ended = time.time()
    session.release()
    engine.dispose()
    return {"began": began, "ended": ended, "receipts": receipts, "latencies": latencies}


def run_voting(db: str, procs: int, votes: int, tmp: Path) -> dict[str, Any]:
    from sqlalchemy import text

    from annotate.services.db import open_store
    from annotate.services.importing import import_paths

    engine = open_store(db)
    import_paths(engine, [make_arena(tmp / f"study-{time.time_ns()}", votes)])
    engine.dispose()
    start_at = time.time() + 2.0
    ctx = mp.get_context("fork" if sys.platform == "linux" else "spawn")
    with ctx.Pool(procs) as pool:
        res = pool.map(
            voter, [(db, f"ann{i:02d}", votes, start_at) for i in range(procs)], chunksize=1
        )
    wall = max(r["ended"] for r in res) - min(r["began"] for r in res)
    lat = sorted(x for r in res for x in r["latencies"])
    receipts = [u for r in res for u in r["receipts"]]
    engine = open_store(db)
    with engine.connect() as c:
        stored = [u for (u,) in c.execute(text("SELECT uuid FROM vote"))]
    engine.dispose()
    return {
        "votes": len(lat),
        "per_s": len(lat) / wall,
        "median_ms": statistics.median(lat),
        "p99_ms": lat[min(len(lat) - 1, int(0.99 * len(lat)))],
        "max_ms": lat[-1],
        "lost": len(set(receipts) - set(stored)),
        "duplicated": len(stored) - len(set(stored)),
    }


def run_monitor(db: str, n_votes: int, repeat: int) -> dict[str, Any]:
    from bench_monitor import (  # type: ignore[import-not-found]
        _insert,
        _new_votes,
        build,
    )

    from annotate.services.db import open_store
    from annotate.services.monitoring import MonitorSource

    t0 = time.perf_counter()
    build(db, n_votes)  # type: ignore[arg-type]  # open_store takes a URL too
    built = time.perf_counter() - t0
    engine = open_store(db)
    source = MonitorSource(engine)
    cold: list[float] = []
    query: list[float] = []
    for _ in range(repeat):
        t = time.perf_counter()
        snap = source.open("bench").snapshot()
        cold.append((time.perf_counter() - t) * 1000)
        query.append(snap.timings.query_ms)
    mon = source.open("bench")
    mon.snapshot()
    live: list[float] = []
    fresh = _new_votes(engine, repeat)  # written directly: the built study may have no
    for k in range(repeat):  # battle left for the schedule to offer a new annotator
        _insert(engine, fresh[k])
        t = time.perf_counter()
        assert mon.changed()
        mon.snapshot()
        live.append((time.perf_counter() - t) * 1000)
    engine.dispose()
    return {
        "votes": snap.n_votes,
        "build_s": built,
        "cold_ms": statistics.median(cold),
        "query_ms": statistics.median(query),
        "live_ms": statistics.median(live),
    }


def load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=20)
    ap.add_argument("--votes", type=int, default=500)
    ap.add_argument("--monitor-votes", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pg-url", default=os.environ.get("ANNOTATE_TEST_POSTGRES_URL"))
    ap.add_argument("--skip-voting", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from tests import postgres_server

    if args.pg_url:
        os.environ["ANNOTATE_TEST_POSTGRES_URL"] = args.pg_url
    server = postgres_server.start()
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    say(f"bench_backends: {os.cpu_count()} CPUs, load average at start {load()}")
    try:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            if not args.skip_voting:
                say(
                    f"\n1. voting: {args.procs} annotator processes x {args.votes} votes "
                    "(VotingSession, uncapped arena study)"
                )
                head = (
                    "| back end   | votes  | votes/s | median ms | p99 ms | slowest ms "
                    "| lost | duplicated | load avg |"
                )
                say(head)
                say("|" + "|".join("-" * len(c) for c in head.split("|")[1:-1]) + "|")
                for name in ("sqlite", "postgresql"):
                    db = (
                        str(tmp / f"vote-{time.time_ns()}.db")
                        if name == "sqlite"
                        else server.create_database()
                    )
                    r = run_voting(db, args.procs, args.votes, tmp)
                    say(
                        f"| {name:<10} | {r['votes']:>6,} | {r['per_s']:>7.1f} "
                        f"| {r['median_ms']:>9.1f} | {r['p99_ms']:>6.1f} | {r['max_ms']:>10.1f} "
                        f"| {r['lost']:>4} | {r['duplicated']:>10} | {load():<8} |"
                    )
            say(
                f"\n2. monitor refresh at {args.monitor_votes:,} votes "
                f"(median of {args.repeat}; bench_monitor.build's arena)"
            )
            head = "| back end   | votes   | cold ms | of which query ms | live ms | load avg |"
            say(head)
            say("|" + "|".join("-" * len(c) for c in head.split("|")[1:-1]) + "|")
            out: dict[str, dict[str, Any]] = {}
            for name in ("sqlite", "postgresql"):
                db = (
                    str(tmp / f"mon-{time.time_ns()}.db")
                    if name == "sqlite"
                    else server.create_database()
                )
                r = out[name] = run_monitor(db, args.monitor_votes, args.repeat)
                say(
                    f"| {name:<10} | {r['votes']:>7,} | {r['cold_ms']:>7.1f} "
                    f"| {r['query_ms']:>17.1f} | {r['live_ms']:>7.1f} | {load():<8} |"
                )
            cold = out["postgresql"]["cold_ms"] / out["sqlite"]["cold_ms"]
            live = out["postgresql"]["live_ms"] / out["sqlite"]["live_ms"]
            say(
                f"ratio PostgreSQL / SQLite: cold refresh {cold:.2f}x, live refresh {live:.2f}x "
                f"(target: within 2x: {'met' if max(cold, live) <= 2 else 'NOT met'})"
            )
    finally:
        server.stop()
    say(
        f"load average at end {load()}; the machine is shared with other engineers' builds "
        "and tests, so absolute times move with the load: compare the two back ends within "
        "one run"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
