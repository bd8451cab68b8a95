"""Monitor benchmark: one refresh (query + fit + signals) of an arena with 100,000 votes.

Run: .venv/bin/python benchmarks/bench_monitor.py [--votes N] [--repeat R]
     [--cases first,cold,live,change,poll] [--keep DB] [--code DIR]

``--votes 1000000 --keep /tmp/m1.db`` is issue 13's million-vote monitor (built once,
about a minute; up to 1,800,000 votes, one per annotator and battle); ``--code DIR``
runs the cases with another checkout's packages (``git archive REV annotate ranking``),
for interleaved before/after runs on one database.

The database is filled with bulk SQL (``repo.bulk_insert_votes``): 20 models,
300 annotators (270 honest with varied discrimination, 15 random, 15 inverted),
each voting on distinct battles drawn from 6,000 model pairs, with ties,
both-bad votes, left/right swaps and response times. Cases:

* ``first``: a new :class:`StudyMonitor` builds the snapshot with no vote cache file
  (reads every vote; :mod:`annotate.services.vote_cache`); the file is written in a
  thread after the snapshot, and that write's time is printed below the table;
* ``cold``: a new :class:`StudyMonitor` builds the snapshot, the vote cache file written
  by an untimed open first (every open after the first: the file, then the rows after
  it);
* ``live``: the monitor already holds the votes, one new vote arrives, refresh
  (what the running monitor does after each vote: reads one row, refits);
* ``change``: as ``live``, the new row a change of mind (every third an undo) of a
  stored vote, which supersedes it;
* ``poll``: the change check run every 0.5 s when nothing happened.

Each case runs in a fresh subprocess, so its peak memory (ru_maxrss) is its own, with
``XDG_CACHE_HOME`` a new temporary folder (the user's ~/.cache is never touched).
"median ms" is wall time; "CPU ms" the process CPU time (both threads), which
depends less on what else the machine runs. The fit and the signals run in
parallel, so the wall time is about query + max(fit, signals).
Targets: a refresh under 200 ms at 100,000 votes (issue "monitor"); at 1,000,000
votes a cold open under 1 s and a refresh under 200 ms (issue 13). Each row prints
the 1-minute load average when the case ended. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
N_MODELS = 20
N_ANNOTATORS = 300
N_ITEMS = 6000


def build(db: Path, n_votes: int, seed: int = 0) -> None:
    """An arena study with ``n_votes`` current votes, written with bulk SQL."""
    import numpy as np
    from sqlmodel import Session

    from annotate.services.db import open_store
    from annotate.store import repo
    from annotate.study_settings import StudySettings

    rng = np.random.default_rng(seed)
    engine = open_store(db)
    strength = np.sort(rng.normal(0.0, 1.0, N_MODELS))[::-1]
    models = [f"model-{i:02d}" for i in range(N_MODELS)]
    with Session(engine) as s, s.begin():
        sid = repo.insert_study(
            s, name="bench", kind="arena", title="bench arena", description="",
            settings=StudySettings.for_kind("arena"), fingerprint="bench",
        )  # fmt: skip
        pairs = []
        for i in range(N_ITEMS):
            a, b = rng.choice(N_MODELS, size=2, replace=False)
            item = repo.insert_item(s, sid, f"b{i:05d}", i)
            repo.insert_battle(s, item, None, models[a], models[b])
            pairs.append((item, int(a), int(b)))
        ann = [repo.annotator_id(s, f"ann{k:03d}") for k in range(N_ANNOTATORS)]
        per = n_votes // N_ANNOTATORS
        extra = n_votes - per * N_ANNOTATORS
        disc = rng.uniform(0.5, 2.0, N_ANNOTATORS)
        disc[:15] = 0.0  # random voters
        disc[15:30] = -1.0  # inverted voters
        item_id = np.array([p[0] for p in pairs], dtype=np.int64)
        pa = np.array([p[1] for p in pairs], dtype=np.int64)
        pb = np.array([p[2] for p in pairs], dtype=np.int64)
        rows: list[tuple[Any, ...]] = []
        for k in range(N_ANNOTATORS):
            n = per + (1 if k < extra else 0)
            if n > N_ITEMS:
                raise SystemExit(f"at most {N_ITEMS * N_ANNOTATORS:,} votes (one per battle)")
            j = rng.permutation(N_ITEMS)[:n]  # distinct battles
            p = 1.0 / (1.0 + np.exp(-disc[k] * (strength[pa[j]] - strength[pb[j]])))
            u = rng.random(n)
            choice = np.where(
                u < 0.08, "tie",
                np.where(u < 0.11, "both_bad", np.where(rng.random(n) < p, "model_a", "model_b")),
            )  # fmt: skip
            ms = rng.lognormal(9.5, 0.6, n).astype(np.int64)
            swapped = rng.random(n) < 0.5
            rows.extend(
                (str(uuid.uuid4()), sid, ann[k], int(i), str(c), bool(sw), int(t), False,
                 "2026-01-01 00:00:00", None)
                for i, c, sw, t in zip(item_id[j], choice, swapped, ms, strict=True)
            )  # fmt: skip
        repo.bulk_insert_votes(s, rows)


def _changes_of_mind(engine: Any, n: int) -> list[tuple[Any, ...]]:
    """``n`` vote rows, each a change of mind (or, every third, an undo) of a stored vote."""
    import numpy as np
    from sqlalchemy import text
    from sqlmodel import Session

    with Session(engine) as s:
        rows = s.execute(
            text(
                "SELECT uuid, study_id, annotator_id, item_id, choice FROM current_vote "
                "ORDER BY id LIMIT 20000"
            )
        ).all()
    rng = np.random.default_rng()
    out = []
    for i, j in enumerate(rng.choice(len(rows), size=n, replace=False)):
        u, sid, aid, item, choice = rows[int(j)]
        new = "retract" if i % 3 == 2 else ("model_b" if choice == "model_a" else "model_a")
        out.append(
            (str(uuid.uuid4()), sid, aid, item, new, False, 4000, False,
             "2026-01-02 00:00:00", u)
        )  # fmt: skip
    return out


def _new_votes(engine: Any, n: int) -> list[tuple[Any, ...]]:
    """``n`` new votes of a new annotator on the first battles (as the app
    stores them; written directly, since a large study may have no battle left to
    schedule)."""
    from sqlalchemy import text
    from sqlmodel import Session

    from annotate.store import repo

    with Session(engine) as s, s.begin():
        sid, first = s.execute(text("SELECT study_id, min(id) FROM item GROUP BY study_id")).one()
        aid = repo.annotator_id(s, f"live-{uuid.uuid4().hex[:8]}")
    return [
        (str(uuid.uuid4()), sid, aid, first + i, "model_a", i % 2 == 0, 9000, False,
         "2026-01-02 00:00:00", None)
        for i in range(n)
    ]  # fmt: skip


def _insert(engine: Any, row: tuple[Any, ...]) -> None:
    from sqlmodel import Session

    from annotate.store import repo

    with Session(engine) as s, s.begin():
        repo.bulk_insert_votes(s, [row])


def _wait(mon: Any, snap_first: bool = False) -> float:
    """Seconds until the monitor's vote cache file is written (0 without a cache)."""
    if snap_first:
        mon.snapshot()
    t0 = time.perf_counter()
    wait = getattr(mon, "wait_for_cache", None)  # absent in checkouts before the cache
    if wait is not None:
        wait()
    return time.perf_counter() - t0


def child(case: str, db: Path, repeat: int) -> dict[str, Any]:
    code = os.environ.get("PYTHONPATH")
    sys.path.insert(0, code or str(ROOT))
    from annotate.services.monitoring import MonitorSource

    source = MonitorSource(__import__("annotate.services.db", fromlist=["x"]).open_store(db))
    times: list[float] = []
    cpu: list[float] = []
    parts: list[tuple[float, float, float]] = []
    writes: list[float] = []
    n = 0
    if case in ("first", "cold"):
        cache = Path(os.environ["XDG_CACHE_HOME"])
        if case == "cold":  # the file every later open finds
            _wait(source.open("bench"), snap_first=True)
        for _ in range(repeat):
            if case == "first":
                shutil.rmtree(cache / "annotate", ignore_errors=True)
            t0, c0 = time.perf_counter(), time.process_time()
            mon = source.open("bench")
            snap = mon.snapshot()
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            parts.append((snap.timings.query_ms, snap.timings.fit_ms, snap.timings.signals_ms))
            n = snap.n_votes
            writes.append(_wait(mon))
    else:
        mon = source.open("bench")
        snap = mon.snapshot()
        changes = _changes_of_mind(source.engine, repeat) if case == "change" else []
        fresh = _new_votes(source.engine, repeat) if case == "live" else []
        for i in range(repeat):
            if case in ("live", "change"):
                _insert(source.engine, (fresh or changes)[i])
            if case in ("live", "change"):
                t0, c0 = time.perf_counter(), time.process_time()
                assert mon.changed()
                snap = mon.snapshot()
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
                parts.append((snap.timings.query_ms, snap.timings.fit_ms, snap.timings.signals_ms))
            else:
                t0, c0 = time.perf_counter(), time.process_time()
                assert not mon.changed()
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
                parts.append((0.0, 0.0, 0.0))
        n = snap.n_votes
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "case": case,
        "write_ms": 1000 * statistics.median(writes) if writes else None,
        "load": os.getloadavg()[0],
        "votes": n,
        "median_ms": 1000 * statistics.median(times),
        "cpu_ms": 1000 * statistics.median(cpu),
        "query_ms": statistics.median(p[0] for p in parts),
        "fit_ms": statistics.median(p[1] for p in parts),
        "signals_ms": statistics.median(p[2] for p in parts),
        "peak_mb": peak,
        "flagged": snap.counts["flagged"],
        "pending": snap.counts["pending"],
        "reliable": snap.counts["reliable"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--votes", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument(
        "--cases", default="first,cold,live,change,poll", help="comma-separated (default: all)"
    )
    ap.add_argument(
        "--keep", type=Path, metavar="DB",
        help="build the database here once and reuse it on later runs (the live and change "
        "cases add a few votes to it)",
    )  # fmt: skip
    ap.add_argument(
        "--code", type=Path, metavar="DIR",
        help="run the cases with the annotate and ranking packages of another checkout "
        "(before/after comparisons)",
    )  # fmt: skip
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.db, args.repeat)))
        return
    sys.path.insert(0, str(ROOT))
    cases = args.cases.split(",")
    env = dict(os.environ)
    if args.code:
        env["PYTHONPATH"] = str(args.code.resolve())
    with tempfile.TemporaryDirectory() as tmp:
        db = args.keep or Path(tmp) / "bench.db"
        if not db.exists():
            t0 = time.perf_counter()
            build(db, args.votes)
            print(
                f"built {args.votes:,} votes ({N_MODELS} models, {N_ANNOTATORS} annotators, "
                f"{N_ITEMS:,} battles) in {time.perf_counter() - t0:.1f} s"
            )
        results = []
        for case in cases:
            with tempfile.TemporaryDirectory() as cache:
                out = subprocess.run(
                    [sys.executable, "-P", __file__,
                     "--child", case, "--db", str(db), "--repeat", str(args.repeat)],
                    capture_output=True, text=True, check=True,
                    env={**env, "XDG_CACHE_HOME": cache},
                )  # fmt: skip
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    head = (
        f"| {'case':<5} | {'votes':>7} | {'median ms':>9} | {'CPU ms':>6} | {'query ms':>8} "
        f"| {'fit ms':>7} "
        f"| {'signals ms':>10} | {'peak MB':>7} | flagged/pending/reliable | load |"
    )
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    for r in results:
        print(
            f"| {r['case']:<5} | {r['votes']:>7,} | {r['median_ms']:>9.1f} | {r['cpu_ms']:>6.1f} "
            f"| {r['query_ms']:>8.1f} "
            f"| {r['fit_ms']:>7.1f} | {r['signals_ms']:>10.1f} | {r['peak_mb']:>7.0f} "
            f"| {r['flagged']}/{r['pending']}/{r['reliable']:<18} | {r['load']:.1f} |"
        )
    for r in results:
        if (r.get("write_ms") or 0) >= 0.5:
            print(f"{r['case']}: vote cache file written {r['write_ms']:.0f} ms after the snapshot")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"target: a refresh under 200 ms at 100,000 votes ({args.repeat} runs per case, median); "
        f"{os.cpu_count()} CPUs, load average {load}"
    )


if __name__ == "__main__":
    main()
