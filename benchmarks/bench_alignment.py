"""Benchmark: human-alignment statistics of a difficulty study.

Synthetic study: ``n_annotators`` annotators each vote on a share of
``n_pairs`` question pairs drawn from ``n_questions`` questions; each vote
follows a Bradley-Terry model with a per-annotator discrimination, and 10% of
votes are skips. Five estimators (noisy copies of the true difficulty, one
coarse "Simple Rank"-like estimator with many ties) are aligned with the votes.

Timed steps (median wall time over ``--repeat`` runs, peak traced memory of
one run):

* ``alignment_report``: predictions, individual and consensus alignment and
  kappa for all estimators, with ``--n-boot`` bootstrap replicates over pairs
  and over annotators;
* ``fleiss_kappa``: on the pair x (first, second, skip) count table of the
  pairs that every annotator saw (skip counted as a category);
* ``krippendorff_alpha``: nominal, annotators x pairs, skips missing;
* ``pairwise_cohen_matrix`` and ``leave_one_out_agreement``;
* ``human_difficulty_scale``: am-ELO over questions, correlations with the
  five estimators;
* ``full report``: all of the above in one go.

Run::

    .venv/bin/python benchmarks/bench_alignment.py            # 100 x 1,000, 1,000 replicates
    .venv/bin/python benchmarks/bench_alignment.py --quick    # small, for a smoke test
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_alignment.py

The matrix products are small (256 replicates x 1,000 pairs x 100
annotators per chunk); on a loaded machine a multi-threaded BLAS can be
several times slower than one thread, so the header prints the thread
setting and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ranking.agreement import (
    fleiss_kappa,
    krippendorff_alpha,
    leave_one_out_agreement,
    pairwise_cohen_matrix,
    rating_counts,
)
from ranking.alignment import (
    FIRST_HARDER,
    SECOND_HARDER,
    SKIP,
    alignment_report,
    human_difficulty_scale,
)


def make_study(
    n_annotators: int, n_pairs: int, n_questions: int, coverage: float, seed: int
) -> dict[str, Any]:
    """Generate a synthetic difficulty study (see the module docstring)."""
    rng = np.random.default_rng(seed)
    true = rng.normal(size=n_questions)
    first = rng.integers(0, n_questions, n_pairs)
    second = (first + rng.integers(1, n_questions, n_pairs)) % n_questions
    pairs = np.stack([first, second], axis=1)
    disc = rng.gamma(4.0, 0.5, n_annotators)
    p_idx, a_idx = np.meshgrid(np.arange(n_pairs), np.arange(n_annotators), indexing="ij")
    p_idx, a_idx = p_idx.ravel(), a_idx.ravel()
    # the first 10% of pairs are seen by everyone (for Fleiss' kappa)
    seen = (rng.random(p_idx.size) < coverage) | (p_idx < n_pairs // 10)
    p_idx, a_idx = p_idx[seen], a_idx[seen]
    diff = true[pairs[p_idx, 0]] - true[pairs[p_idx, 1]]
    p_first = 1.0 / (1.0 + np.exp(-disc[a_idx] * diff))
    vote = np.where(rng.random(p_idx.size) < p_first, FIRST_HARDER, SECOND_HARDER)
    vote[rng.random(p_idx.size) < 0.1] = SKIP
    estimators = np.stack(
        [true + rng.normal(0.0, s, n_questions) for s in (0.2, 0.5, 1.0, 2.0)]
        + [np.round(2 * true)]  # coarse, with many tied difficulties
    )
    ratings = np.full((n_annotators, n_pairs), np.nan)
    ratings[a_idx, p_idx] = np.where(vote == SKIP, np.nan, vote)
    return {
        "pairs": pairs,
        "pair": p_idx,
        "annotator": a_idx,
        "vote": vote,
        "difficulty": estimators,
        "ratings": ratings,
        "codes": np.where(np.isnan(ratings), 0.0, ratings)[:, : n_pairs // 10],
    }


def measure(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Median seconds over ``repeat`` runs and peak traced MiB of one run."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times), peak / 2**20


def main(argv: list[str] | None = None) -> None:
    """Parse options, run the timed steps and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 annotators, 200 pairs, 40 questions")
    ap.add_argument("--annotators", type=int, default=100)
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--questions", type=int, default=400)
    ap.add_argument(
        "--coverage", type=float, default=0.3, help="share of pairs each annotator votes on"
    )
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.quick:
        args.annotators, args.pairs, args.questions = 20, 200, 40
        args.n_boot, args.repeat = 200, 2

    s = make_study(args.annotators, args.pairs, args.questions, args.coverage, args.seed)
    n_votes = s["vote"].size

    def report() -> Any:
        return alignment_report(
            s["difficulty"], s["pairs"], s["pair"], s["annotator"], s["vote"],
            n_annotators=args.annotators, n_boot=args.n_boot, rng=args.seed,
        )  # fmt: skip

    def fleiss() -> Any:
        counts, _ = rating_counts(s["codes"], labels=[0, 1, 2])
        return fleiss_kappa(counts)

    def alpha() -> Any:
        return krippendorff_alpha(s["ratings"], level="nominal")

    def pairwise() -> Any:
        return pairwise_cohen_matrix(s["ratings"], labels=[1, 2])

    def loo() -> Any:
        return leave_one_out_agreement(s["ratings"], labels=[1, 2])

    def scale() -> Any:
        return human_difficulty_scale(
            s["pairs"], s["pair"], s["annotator"], s["vote"], difficulty=s["difficulty"],
            n_annotators=args.annotators,
        )  # fmt: skip

    def full() -> None:
        report()
        fleiss()
        alpha()
        pairwise()
        loo()
        scale()

    steps = [
        (f"alignment_report (5 estimators, {args.n_boot}x2 bootstrap)", report),
        ("fleiss_kappa (pairs seen by all)", fleiss),
        ("krippendorff_alpha nominal", alpha),
        ("pairwise_cohen_matrix", pairwise),
        ("leave_one_out_agreement", loo),
        ("human_difficulty_scale (am_elo)", scale),
        ("full report (all of the above)", full),
    ]
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(
        f"OPENBLAS_NUM_THREADS={threads}, cpus={os.cpu_count()}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"synthetic study: {args.annotators} annotators x {args.pairs} pairs, "
        f"{args.questions} questions, {n_votes} votes (coverage {args.coverage}, 10% skips), "
        f"median of {args.repeat} runs"
    )
    r = report()
    h = scale()
    print(
        "consensus alignment: "
        + ", ".join(f"{e.value:.3f}" for e in r.consensus_alignment)
        + f"; kappa: {', '.join(f'{e.value:.3f}' for e in r.kappa)}"
        + f"; near-ties {r.consensus.n_near_ties} (resolved {r.consensus.n_resolved})"
        + f"; human-scale Spearman: {', '.join(f'{c.value:.3f}' for c in h.spearman)}"
    )
    print(f"{'step':<52} {'median s':>9} {'peak MiB':>9}")
    print("-" * 72)
    for name, fn in steps:
        t, mem = measure(fn, args.repeat)
        print(f"{name:<52} {t:>9.3f} {mem:>9.1f}")


if __name__ == "__main__":
    main()
