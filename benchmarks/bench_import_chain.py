"""Import benchmark: one long supersede chain, listed oldest first and newest first.

Run: .venv/bin/python benchmarks/bench_import_chain.py [--votes N] [--repeat R]

One annotator changes their mind ``N`` times on one item: every vote but the
first supersedes the previous one. The same ``vote_log.csv`` is imported into a
fresh database with its rows oldest first and newest first (issue 9 item 10: a
10,000-vote chain took 44 s newest first and 5.6 s oldest first, because the
ordering was quadratic). Prints the median time per order; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from annotate.services.db import open_store
from annotate.services.importing import import_paths

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "tests" / "data" / "studies" / "tiny-difficulty"
HEADER = "vote_id,study,annotator,item_id,choice,left,response_ms,fast,created_at,supersedes\n"


def chain_rows(n: int) -> list[str]:
    """``n`` vote rows of one chain, oldest first."""
    rows: list[str] = []
    prev = ""
    for k in range(n):
        vid = str(uuid.UUID(int=k + 1, version=4))
        choice = ("first", "second", "skip")[k % 3]
        stamp = f"2025-01-01T00:{k // 3600 % 60:02d}:{k // 60 % 60:02d}.{k % 60:06d}Z"
        rows.append(f"{vid},tiny,bench,p1,{choice},first,2500,False,{stamp},{prev}\n")
        prev = vid
    return rows


def run_case(folder: Path, rows: list[str], name: str) -> float:
    path = folder / f"{name}.csv"
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    engine = open_store(folder / f"{name}.db")
    import_paths(engine, [STUDY])
    start = time.perf_counter()
    report = import_paths(engine, [path])
    elapsed = time.perf_counter() - start
    engine.dispose()
    assert report.votes_added == len(rows), report
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = chain_rows(args.votes)
    print(f"supersede chain of {args.votes:,} votes, median of {args.repeat} runs")
    print(f"{'order':<14}{'seconds':>10}{'votes/s':>12}")
    for order, listed in (("oldest first", rows), ("newest first", rows[::-1])):
        times = []
        for r in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                times.append(run_case(Path(tmp), listed, f"{order.split()[0]}-{r}"))
        med = statistics.median(times)
        print(f"{order:<14}{med:>10.3f}{args.votes / med:>12,.0f}")


if __name__ == "__main__":
    main()
