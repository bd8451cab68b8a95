"""Store benchmark: insert 100,000 votes, read them back as arrays for analysis.

Run: .venv/bin/python benchmarks/bench_store.py [--votes N] [--repeat R]

Each case runs in a fresh subprocess so its peak memory (ru_maxrss) is its own.
Targets (issue "Foundation", 2-core machine): insert + read-back under 2 s and
under 300 MB. Issue 9: the per-vote commit cost with ``synchronous=NORMAL`` and ``FULL``
(the store's durable setting) measured interleaved; target FULL under 10 ms per vote.
Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_study(folder: Path, n_pairs: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "study.toml").write_text('name = "bench"\nkind = "difficulty"\n', encoding="utf-8")
    with (folder / "questions.jsonl").open("w") as fh:
        for i in range(n_pairs + 1):
            fh.write(json.dumps({"id": f"q{i}", "subject": "s", "text": f"question {i}"}) + "\n")
    with (folder / "pairs.csv").open("w") as fh:
        fh.write("pair_id,first,second\n")
        for i in range(n_pairs):
            fh.write(f"p{i},q{i},q{i + 1}\n")


def make_votes(path: Path, n_votes: int, n_pairs: int) -> None:
    n_ann = max(1, n_votes // n_pairs)
    choices = ("first", "second", "skip")
    with path.open("w") as fh:
        fh.write(
            "vote_id,study,annotator,item_id,choice,left,response_ms,fast,created_at,supersedes\n"
        )
        k = 0
        for a in range(n_ann):
            for p in range(n_pairs):
                if k == n_votes:
                    return
                fh.write(
                    f"{uuid.uuid4()},bench,ann{a},p{p},{choices[(a * 7 + p) % 3]},"
                    f"{'first' if (a + p) % 2 else 'second'},{1500 + (a * p) % 9000},False,"
                    f"2026-01-01T00:00:00Z,\n"
                )
                k += 1


def child(case: str, workdir: Path) -> dict[str, float]:
    sys.path.insert(0, str(ROOT))
    from annotate.services.arrays import vote_arrays
    from annotate.services.db import open_store
    from annotate.services.importing import import_paths

    db = workdir / f"{case}-{time.monotonic_ns()}.db"
    engine = open_store(db)
    import_paths(engine, [workdir / "study"])
    if case == "store":
        return store_case(engine, workdir)
    if case == "durability":
        return durability_case(engine, db)
    t0 = time.perf_counter()
    report = import_paths(engine, [workdir / "votes.csv"])
    t1 = time.perf_counter()
    arrays = vote_arrays(engine, "bench")
    t2 = time.perf_counter()
    assert report.votes_added == len(arrays)
    if case == "interactive":
        from annotate.services.voting import VotingSession

        s = VotingSession(engine, "bench", "interactive-annotator")
        t3 = time.perf_counter()
        for _ in range(200):
            s.vote("left", 2000)
        t4 = time.perf_counter()
        return {
            "per_vote_ms": (t4 - t3) / 200 * 1000,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    return {
        "insert_s": t1 - t0,
        "read_s": t2 - t1,
        "total_s": t2 - t0,
        "votes": float(len(arrays)),
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def store_case(engine, workdir: Path) -> dict[str, float]:
    """The store itself: 100,000 vote rows inserted in one transaction, read back as arrays."""
    from sqlmodel import Session

    from annotate.services.arrays import vote_arrays
    from annotate.store import repo

    with Session(engine) as s, s.begin():
        st = repo.get_study(s, "bench")
        items = list(repo.item_ids(s, st.id).values())
        n = int((workdir / "n_votes").read_text())
        n_ann = max(1, n // len(items))
        ann = [repo.annotator_id(s, f"ann{a}") for a in range(n_ann)]
    choices = ("first", "second", "skip")
    rows = [
        (
            str(uuid.uuid4()),
            st.id,
            ann[k // len(items)],
            items[k % len(items)],
            choices[k % 3],
            k % 2 == 0,
            1500 + k % 9000,
            False,
            "2026-01-01 00:00:00",
            None,
        )
        for k in range(n)
    ]
    t0 = time.perf_counter()
    with Session(engine) as s, s.begin():
        repo.bulk_insert_votes(s, rows)
    t1 = time.perf_counter()
    arrays = vote_arrays(engine, "bench")
    t2 = time.perf_counter()
    assert len(arrays) == n
    return {
        "insert_s": t1 - t0,
        "read_s": t2 - t1,
        "total_s": t2 - t0,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def durability_case(engine, db: Path, rounds: int = 10, block: int = 20) -> dict[str, float]:
    """Per-vote commit cost with ``synchronous=NORMAL`` and ``FULL``, interleaved.

    Two annotators vote through VotingSession (writer lock, BEGIN IMMEDIATE, insert,
    commit) on engines that differ only in ``synchronous``; blocks of ``block`` votes
    alternate so that both settings see the same disk and load.
    """
    import os

    from annotate.services.voting import VotingSession
    from annotate.store.engine import make_engine

    sessions = {
        level: VotingSession(make_engine(db, synchronous=level), "bench", f"durable-{level}")
        for level in ("NORMAL", "FULL")
    }
    times: dict[str, list[float]] = {"NORMAL": [], "FULL": []}
    for _ in range(rounds):
        for level, session in sessions.items():
            for _ in range(block):
                t = time.perf_counter()
                session.vote("left", 2000)
                times[level].append((time.perf_counter() - t) * 1000)
    out: dict[str, float] = {"load": os.getloadavg()[0]}
    for level, xs in times.items():
        xs.sort()
        out[f"{level}_p50"] = statistics.median(xs)
        out[f"{level}_p90"] = xs[int(0.9 * (len(xs) - 1))]
        out[f"{level}_n"] = float(len(xs))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--votes", type=int, default=100_000)
    ap.add_argument("--pairs", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, Path(args.workdir))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        make_study(work / "study", args.pairs)
        make_votes(work / "votes.csv", args.votes, args.pairs)
        (work / "n_votes").write_text(str(args.votes))

        def runs_of(case: str) -> list[dict[str, float]]:
            out = []
            for _ in range(args.repeat):
                res = subprocess.run(
                    [sys.executable, __file__, "--child", case, "--workdir", tmp],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                out.append(json.loads(res.stdout.strip().splitlines()[-1]))
            return out

        durable = runs_of("durability")
        store = runs_of("store")
        runs = runs_of("bulk")
        inter = json.loads(
            subprocess.run(
                [sys.executable, __file__, "--child", "interactive", "--workdir", tmp],
                capture_output=True,
                text=True,
                check=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )

    def med(k: str, rs: list[dict[str, float]] | None = None) -> float:
        return statistics.median(r[k] for r in (runs if rs is None else rs))

    print(
        f"store benchmark: {args.votes:,} votes on {args.pairs:,} pairs, "
        f"{args.repeat} runs (median), each in a fresh process"
    )
    print(f"{'case':<44}{'median':>12}{'target':>12}")
    print(f"{'store: insert votes (one transaction)':<44}{med('insert_s', store):>11.3f}s")
    print(f"{'store: read back as numpy arrays':<44}{med('read_s', store):>11.3f}s")
    print(f"{'store: insert + read back':<44}{med('total_s', store):>11.3f}s{'< 2 s':>12}")
    print(
        f"{'store: peak memory (process max RSS)':<44}{med('rss_mb', store):>10.1f}MB"
        f"{'< 300 MB':>12}"
    )
    print(f"{'import votes CSV (parse, check, one txn)':<44}{med('insert_s'):>11.3f}s{'':>12}")
    print(f"{'read back as numpy arrays':<44}{med('read_s'):>11.3f}s{'':>12}")
    print(f"{'import CSV + read back':<44}{med('total_s'):>11.3f}s")
    print(f"{'import: peak memory (process max RSS)':<44}{med('rss_mb'):>10.1f}MB")
    print(f"{'one vote through VotingSession (commit)':<44}{inter['per_vote_ms']:>10.2f}ms{'':>12}")
    for level in ("NORMAL", "FULL"):
        label = f"vote commit, synchronous={level} (p50)"
        target = "< 10 ms" if level == "FULL" else ""
        print(f"{label:<44}{med(f'{level}_p50', durable):>10.2f}ms{target:>12}")
        label = f"vote commit, synchronous={level} (p90)"
        print(f"{label:<44}{med(f'{level}_p90', durable):>10.2f}ms")
    print(
        f"(durability: {int(durable[0]['FULL_n'])} votes per setting per run, interleaved in "
        f"blocks of 20; load average {med('load', durable):.1f} on {__import__('os').cpu_count()} "
        "CPUs; the store runs FULL)"
    )


if __name__ == "__main__":
    main()
