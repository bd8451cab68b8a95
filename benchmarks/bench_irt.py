"""Speed and memory of the IRT fits in ranking.irt and ranking.mirt.

Prints one table: median wall time over repeated runs and peak traced memory
(tracemalloc, measured in a separate untimed run) for

* 1PL and 2PL by penalised JML in the EIP paper's configuration (App. H.4) on
  30 models x 35,550 questions, the size of the paper's Table 3 / Table 19,
  against the paper's Intel i7 times (1,782.75 s and 3,787.03 s);
* 2PL by marginal ML on the real GSM8K matrix (5,041 models x 249 items, from
  ../shared/data/metabench_openllm_2pl; synthetic data of the same shape drawn
  from the shipped mirt parameters when that folder is absent);
* 3-dimensional MIRT on a moderate case (30 models x 5,000 questions) and, unless
  --quick, on the paper's 30 x 35,550 (paper: 18.76 s for Multi-IRT 3D).

Synthetic matrices are drawn from the fitted model with a fixed seed. Targets
are printed, never asserted.

BLAS threads: by default the script sets OPENBLAS_NUM_THREADS / OMP_NUM_THREADS /
MKL_NUM_THREADS to 1 before importing numpy. On this 2-core machine, shared with
other jobs, multi-threaded OpenBLAS spin-waits and makes the tall-skinny products
of the Newton steps 10-80x slower (a 35,550 x 30 Gram matrix: 5.6 ms with one
thread, 49-464 ms with two under load). ``--blas-threads 0`` leaves the
environment alone.

Usage::

    .venv/bin/python benchmarks/bench_irt.py            # full run
    .venv/bin/python benchmarks/bench_irt.py --quick    # one repeat, smaller MIRT only
"""

from __future__ import annotations

import argparse
import csv
import gc
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Speed and memory of the IRT fits")
    parser.add_argument(
        "--quick", action="store_true", help="one repeat; MIRT on the moderate case only"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per case (default 3)")
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="BLAS threads to set before numpy is imported (default 1; 0 = leave as is)",
    )
    return parser.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else parse_args([])
if ARGS.blas_threads > 0:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = str(ARGS.blas_threads)

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ranking import fit_1pl, fit_2pl, fit_2pl_mml, fit_mirt  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "metabench_openllm_2pl"
SEED = 20260101


@dataclass
class Case:
    name: str
    shape: str
    run: Callable[[], Any]
    target_s: float | None
    paper_s: float | None
    note: str = ""
    max_repeats: int | None = None


def synthetic_1pl(n_q: int, n_m: int, rng: np.random.Generator) -> np.ndarray:
    theta = rng.normal(size=n_m)
    beta = rng.normal(size=n_q)
    return (rng.random((n_q, n_m)) < expit(theta[None, :] - beta[:, None])).astype(float)


def synthetic_2pl(n_q: int, n_m: int, rng: np.random.Generator) -> np.ndarray:
    theta = rng.normal(size=n_m)
    beta = rng.normal(size=n_q)
    alpha = rng.lognormal(0.0, 0.3, size=n_q)
    p = expit(alpha[:, None] * (theta[None, :] - beta[:, None]))
    return (rng.random(p.shape) < p).astype(float)


def synthetic_mirt(n_q: int, n_m: int, rng: np.random.Generator, dim: int = 3) -> np.ndarray:
    theta = rng.normal(size=(n_m, dim))
    loadings = np.abs(rng.normal(size=(n_q, dim))) * np.linspace(1.5, 0.5, dim)
    d = rng.normal(size=n_q)
    p = expit(loadings @ theta.T + d[:, None])
    return (rng.random(p.shape) < p).astype(float)


def gsm8k(rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """Items x models GSM8K matrix: the real one, or one drawn from mirt's parameters."""
    responses = SHARED / "gsm8k_responses.csv"
    if responses.is_file():
        with responses.open() as fh:
            rows = list(csv.reader(fh))
        A = np.array([[float(v) for v in r[1:]] for r in rows[1:]]).T
        return A, "real (metabench)"
    a = rng.uniform(0.86, 5.07, 249)
    d = rng.uniform(-7.14, 3.04, 249)
    theta = rng.normal(size=5041)
    A = (rng.random((249, 5041)) < expit(np.outer(a, theta) + d[:, None])).astype(float)
    return A, "synthetic (shared data absent)"


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times = []
    out = None
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def peak_memory_mib(fn: Callable[[], Any]) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def main(args: argparse.Namespace) -> None:
    repeats = 1 if args.quick else args.repeats
    rng = np.random.default_rng(SEED)

    A1 = synthetic_1pl(35_550, 30, rng)
    A2 = synthetic_2pl(35_550, 30, rng)
    G, g_src = gsm8k(rng)
    M_mod = synthetic_mirt(5_000, 30, rng)
    cases = [
        Case("1PL JML (H.4)", "35,550 x 30", lambda: fit_1pl(A1), 5.0, 1782.75),
        Case("2PL JML (H.4)", "35,550 x 30", lambda: fit_2pl(A2), 10.0, 3787.03),
        Case("2PL MML, GSM8K", "249 x 5,041", lambda: fit_2pl_mml(G), 10.0, None, g_src),
        Case("MIRT D=3 JML", "5,000 x 30", lambda: fit_mirt(M_mod), None, None),
    ]
    if not args.quick:
        M_full = synthetic_mirt(35_550, 30, rng)
        cases.append(
            Case(
                "MIRT D=3 JML",
                "35,550 x 30",
                lambda: fit_mirt(M_full),
                None,
                18.76,
                "one timed run",
                max_repeats=1,
            )
        )

    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        f"bench_irt: Python {platform.python_version()}, numpy {np.__version__}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average {load}, "
        f"repeats={repeats}, seed={SEED}"
    )
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    print(f"OPENBLAS_NUM_THREADS={blas} (--blas-threads {args.blas_threads})")
    print("shapes are questions (items) x models (persons); times are wall-clock medians\n")
    header = (
        f"{'case':<18} {'shape':<13} {'median s':>9} {'iters':>6} {'peak MiB':>9} "
        f"{'target s':>9} {'met':>4} {'paper s':>9} {'paper/ours':>11}  note"
    )
    print(header)
    print("-" * len(header))
    for case in cases:
        seconds, result = median_time(case.run, min(repeats, case.max_repeats or repeats))
        peak = peak_memory_mib(case.run)
        target = f"{case.target_s:.0f}" if case.target_s else "-"
        met = ("yes" if seconds < case.target_s else "NO") if case.target_s else "-"
        paper = f"{case.paper_s:,.2f}" if case.paper_s else "-"
        ratio = "-"
        if case.paper_s:
            r = case.paper_s / seconds
            ratio = f"{r:,.0f}x" if r >= 10 else f"{r:.2f}x"
        print(
            f"{case.name:<18} {case.shape:<13} {seconds:>9.2f} {result.iterations:>6} "
            f"{peak:>9.1f} {target:>9} {met:>4} {paper:>9} {ratio:>11}  {case.note}",
            flush=True,
        )
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"\nload average at the end: {load} (other processes slow the timings)")
    print(
        "paper times: EIP (ICLR 2026) Table 3 / Table 19, Intel i7 CPU, 30 models x 35,550 "
        "questions;\nits Multi-IRT is VI with Adam (1000 epochs), ours is penalised JML with "
        "Newton + L-BFGS-B."
    )


if __name__ == "__main__":
    main(ARGS)
