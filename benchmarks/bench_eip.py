"""Benchmark ranking.eip against the EIP paper's timings (Table 19 and Table 4).

Run::

    .venv/bin/python benchmarks/bench_eip.py            # full grid, up to 1e6 x 2000
    .venv/bin/python benchmarks/bench_eip.py --quick    # small cases only
    .venv/bin/python benchmarks/bench_eip.py --only 1000000 2000   # one case

Each case runs in its own subprocess, which generates a synthetic uint8 response
matrix (questions x models) from a Rasch model in row blocks, then times
``ranking.eip`` end to end (validation, exclusion, propagation, result). The
table shows the median and the best wall time over the repeats, the iterations,
the peak resident memory of the subprocess (``ru_maxrss``, which includes the uint8
matrix itself) and the extra memory EIP allocates on top of its input
(tracemalloc peak, measured in a separate untimed call). From 2**27 entries the
bit-packed path forks two worker processes; "worker RSS" is the largest peak
RSS of a worker, which counts the pages of the input it read: they are shared
with the parent copy-on-write (only read), so the physical total is about the
parent's peak plus each worker's private part (its half of the packed bits,
1/16 of the input, and small buffers). "total PSS" measures that directly: the
peak of the summed proportional set size (shared pages split between the
processes sharing them) of the subprocess and its workers, sampled every 20 ms
during one more untimed call. The paper's numbers
were measured on an Intel i7; the ratio is ours / paper's (below 1 = faster).

The subprocesses run with ``OPENBLAS_NUM_THREADS=1`` unless ``--blas-threads``
says otherwise: the products are memory-bound matrix-vector products, and on a
small shared machine a threaded BLAS only adds contention. Large 0/1 inputs are
bit-packed and, from 2**27 entries, split between ``ranking.eip``'s two worker
processes.

Timings on a shared machine depend on what else runs: the 1-minute load average
is printed before and after the grid and at the start of each case ("load").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (questions, models, paper total seconds, paper iterations, source)
PAPER_CASES: list[tuple[int, int, float, int, str]] = [
    (35_550, 30, 0.05373, 9, "Table 19 (i7, total)"),
    (1_000_000, 2_000, 5.28, 9, "Table 4"),
    (1_000_000, 1_000, 3.14, 9, "Table 4"),
    (500_000, 1_000, 1.93, 9, "Table 4"),
    (1_000_000, 500, 2.18, 9, "Table 4"),
    (500_000, 500, 1.13, 9, "Table 4"),
    (500_000, 250, 0.64, 9, "Table 4"),
    (250_000, 500, 0.52, 9, "Table 4"),
    (250_000, 250, 0.30, 9, "Table 4"),
]

QUICK_CASES: list[tuple[int, int, float, int, str]] = [
    (35_550, 30, 0.05373, 9, "Table 19 (i7, total)"),
    (250_000, 250, 0.30, 9, "Table 4"),
]


def make_matrix(n_q: int, n_m: int, seed: int = 0):  # type: ignore[no-untyped-def]
    """Rasch-model responses as uint8, generated in row blocks (never float64 whole)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, n_m).astype(np.float32)
    b = rng.normal(0.0, 1.5, n_q).astype(np.float32)
    out = np.empty((n_q, n_m), dtype=np.uint8)
    step = max(1, (1 << 22) // n_m)
    for s in range(0, n_q, step):
        e = min(s + step, n_q)
        p = 1.0 / (1.0 + np.exp(b[s:e, None] - theta[None, :]))
        out[s:e] = rng.random((e - s, n_m), dtype=np.float32) < p
    return out


def run_case(n_q: int, n_m: int, repeats: int) -> dict[str, object]:
    """Time ranking.eip on one synthetic matrix (runs inside the subprocess)."""
    sys.path.insert(0, str(ROOT))
    import ranking

    A = make_matrix(n_q, n_m)
    rss_input = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    res = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = ranking.eip(A)
        times.append(time.perf_counter() - t0)
    assert res is not None
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    tracemalloc.start()
    ranking.eip(A)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    pss_peak = _peak_pss(lambda: ranking.eip(A))
    return {
        "times": times,
        "iterations": res.iterations,
        "last_delta": float(res.deltas[-1]),
        "rss_input_kib": rss_input,
        "rss_peak_kib": rss_peak,
        "rss_workers_kib": rss_workers,
        "pss_total_kib": pss_peak,
        "eip_extra_bytes": traced_peak,
        "input_bytes": int(A.nbytes),
    }


def _pss_kib(pid: int) -> int:
    """Proportional set size of a process (shared pages split between sharers), 0 if unknown."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _peak_pss(call) -> int:  # type: ignore[no-untyped-def]
    """Peak summed PSS of this process and its worker processes while ``call()`` runs (KiB).

    Sampled every 20 ms in a thread, in an untimed call; 0 where /proc is unavailable.
    """
    import multiprocessing
    import threading

    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            pids = [os.getpid()] + [p.pid for p in multiprocessing.active_children() if p.pid]
            peak = max(peak, sum(_pss_kib(pid) for pid in pids))
            done.wait(0.02)

    thread = threading.Thread(target=sample)
    thread.start()
    try:
        call()
    finally:
        done.set()
        thread.join()
    return peak


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small cases only")
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per case")
    parser.add_argument(
        "--only", nargs=2, type=int, metavar=("Q", "M"), help="run only this case of the grid"
    )
    parser.add_argument("--blas-threads", default="1", help="OPENBLAS_NUM_THREADS for cases")
    parser.add_argument("--case", nargs=2, type=int, metavar=("Q", "M"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.case:
        print(json.dumps(run_case(args.case[0], args.case[1], args.repeats or 5)))
        return

    cases = QUICK_CASES if args.quick else PAPER_CASES
    if args.only:
        cases = [c for c in PAPER_CASES if [c[0], c[1]] == args.only]
        if not cases:
            parser.error(f"no case {args.only[0]} x {args.only[1]} in the grid")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.blas_threads))
    print(
        f"ranking.eip benchmark (alpha=0.85, tol=1e-10, uint8 input; "
        f"OPENBLAS_NUM_THREADS={args.blas_threads}; {os.cpu_count()} CPUs)"
    )
    header = (
        f"{'questions':>10} {'models':>6} {'Q x M':>9} {'iter':>4} {'median s':>9} {'best s':>9} "
        f"{'paper s':>8} {'ratio':>6} {'peak RSS':>10} {'worker RSS':>10} {'total PSS':>10} "
        f"{'input':>10} {'EIP extra':>10} {'load':>5}  source"
    )
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(header)
    print("-" * len(header))
    for n_q, n_m, paper_s, _paper_it, source in cases:
        size = n_q * n_m
        repeats = args.repeats or (31 if size <= 2_000_000 else 5)
        load = os.getloadavg()[0]
        proc = subprocess.run(
            [sys.executable, __file__, "--case", str(n_q), str(n_m), "--repeats", str(repeats)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if proc.returncode != 0:
            print(f"{n_q:>10,} {n_m:>6,}  FAILED: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        med = statistics.median(out["times"])
        best = min(out["times"])
        workers = _fmt_bytes(out["rss_workers_kib"] * 1024) if out["rss_workers_kib"] else "-"
        pss = _fmt_bytes(out["pss_total_kib"] * 1024) if out["pss_total_kib"] else "?"
        print(
            f"{n_q:>10,} {n_m:>6,} {size:>9.2e} {out['iterations']:>4} {med:>9.4f} {best:>9.4f} "
            f"{paper_s:>8.4g} {med / paper_s:>6.2f} {_fmt_bytes(out['rss_peak_kib'] * 1024):>10} "
            f"{workers:>10} {pss:>10} "
            f"{_fmt_bytes(out['input_bytes']):>10} {_fmt_bytes(out['eip_extra_bytes']):>10} "
            f"{load:>5.2f}  {source}",
            flush=True,
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
