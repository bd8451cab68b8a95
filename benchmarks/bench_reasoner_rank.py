"""ReasonerRank against its baselines on simulated model populations, and its cost.

Run::

    .venv/bin/python benchmarks/bench_reasoner_rank.py           # 20 trials, 16 x 10,000 timing
    .venv/bin/python benchmarks/bench_reasoner_rank.py --quick   # 4 trials, 16 x 1,000 timing
    .venv/bin/python benchmarks/bench_reasoner_rank.py --save    # also write results/*.txt

**Accuracy of the rankings** (paper Tables 2, 4, 5 in shape). Each trial draws a
population of ``n`` models (10 and 16) answering 4-option questions in 20 subsets of
50. Model m is right with probability ``acc_m`` (evenly spread over [0.35, 0.9],
shuffled names) and has a reasoning quality ``r_m = acc_m + N(0, 0.08)``. A response's
quality ``Q`` is ``r_m + 0.25 * correct + N(0, 0.35)`` minus a structure penalty (each of
the 8 parts is missing with probability ``0.12 * (1 - r_m)``): the known truth is that
better reasoners write more coherent, complete answers, noisily. Two populations:

- ``independent``: a wrong answer is uniform over the three wrong options;
- ``shared-wrong``: the weaker 60% of the models fall for a "trap" on 45% of the
  questions: there they are right only a fifth as often as elsewhere and otherwise all
  give the same wrong answer, so on those a plain majority is wrong while the minority
  of strong models is right.

Each method ranks every subset on its own; RBO (the paper's eq. 13, average overlap)
and SP@3 against the subset's accuracy order are averaged over subsets, then over
trials (mean and standard error over trials). A random ranking scores RBO
``(n + 1) / 2n`` and SP@3 ``3 / n``.

**Cost.** 16 models x 10,000 questions of generated structured text (three steps,
three evidence items, about 600 bytes a response) go through the whole service path in
a fresh subprocess: read the JSON Lines file, parse, normalise, embed with the default
offline encoder (hashed n-gram TF-IDF) and rank. Wall time per stage and the peak RSS
of the subprocess (VmHWM) are printed, with the CPU time of each stage (on a busy
shared machine the wall time is mostly waiting for a core). The 1-minute load average
is printed: timings move with it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ranking.rank_metrics import average_overlap, ordering, set_precision_at_k  # noqa: E402
from ranking.reasoner_rank import (  # noqa: E402
    default_k,
    mca,
    reasoner_rank,
    selfrank_ftr,
    selfrank_gtr,
)

N_SUBSETS = 20
PER_SUBSET = 50


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def population(
    rng: np.random.Generator, n: int, scenario: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(answers, quality, subsets, correct) of one simulated trial."""
    n_q = N_SUBSETS * PER_SUBSET
    acc = rng.permutation(np.linspace(0.35, 0.9, n))
    r = acc + rng.normal(0, 0.08, n)
    correct = rng.random((n, n_q)) < acc[:, None]
    wrong = rng.integers(1, 4, size=(n, n_q))
    if scenario == "shared-wrong":
        weak = np.argsort(acc)[: round(0.6 * n)]
        trap = rng.random(n_q) < 0.45
        for m in weak:  # they fall for the trap: right only a fifth as often, else answer 1
            correct[m, trap] = rng.random(int(trap.sum())) < acc[m] / 5
            wrong[m, trap] = 1
    answers = np.where(correct, 0, wrong).astype(np.int64)
    missing_p = 0.12 * (1 - np.clip(r, 0, 1))
    penalty = (rng.random((n, n_q, 8)) < missing_p[:, None, None]).sum(axis=2)
    quality = r[:, None] + 0.25 * correct + rng.normal(0, 0.35, (n, n_q)) - penalty
    subsets = np.repeat(np.arange(N_SUBSETS), PER_SUBSET)
    return answers, quality, subsets, correct


def score(orders: np.ndarray, correct: np.ndarray, subsets: np.ndarray) -> tuple[float, float]:
    rbo, sp = [], []
    for s in range(orders.shape[0]):
        target = ordering(correct[:, subsets == s].mean(axis=1))
        rbo.append(average_overlap(orders[s], target))
        sp.append(set_precision_at_k(orders[s], target, k=3))
    return float(np.mean(rbo)), float(np.mean(sp))


def accuracy_table(trials: int, seed: int) -> list[str]:
    lines = []
    methods = ["MCA", "SelfRank-GTR", "SelfRank-FTR", "ReasonerRank initial", "ReasonerRank"]
    sweep: dict[int, list[tuple[float, float]]] = {}
    for n in (10, 16):
        for scenario in ("independent", "shared-wrong"):
            res: dict[str, list[tuple[float, float]]] = {m: [] for m in methods}
            t0 = time.perf_counter()
            for t in range(trials):
                rng = np.random.default_rng([seed, n, t, scenario == "shared-wrong"])
                answers, quality, subsets, correct = population(rng, n, scenario)
                rr = reasoner_rank(answers, quality, subsets=subsets)
                res["ReasonerRank"].append(score(rr.subset_orders, correct, subsets))
                res["ReasonerRank initial"].append(
                    score(rr.subset_initial_orders, correct, subsets)
                )
                res["MCA"].append(
                    score(mca(answers, subsets=subsets).subset_orders, correct, subsets)
                )
                res["SelfRank-GTR"].append(
                    score(
                        selfrank_gtr(answers, subsets=subsets, rng=t).subset_orders,
                        correct,
                        subsets,
                    )
                )
                res["SelfRank-FTR"].append(
                    score(selfrank_ftr(answers, subsets=subsets).subset_orders, correct, subsets)
                )
                if n == 16 and scenario == "shared-wrong":
                    for k in range(1, n + 1):
                        r_k = reasoner_rank(answers, quality, subsets=subsets, k=k)
                        sweep.setdefault(k, []).append(score(r_k.subset_orders, correct, subsets))
            secs = time.perf_counter() - t0
            lines.append(
                f"\n{n} models, {scenario} errors ({trials} trials, {N_SUBSETS} subsets x "
                f"{PER_SUBSET} questions; K = {default_k(n)}; {secs:.1f} s; load {load()})"
            )
            lines.append(f"  {'method':<22} {'RBO':>15} {'SP@3':>15}")
            for m in methods:
                v = np.asarray(res[m])
                se = v.std(axis=0, ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.zeros(2)
                mean = v.mean(axis=0)
                lines.append(
                    f"  {m:<22} {mean[0]:>7.4f} ± {se[0]:.4f} {mean[1]:>7.4f} ± {se[1]:.4f}"
                )
            lines.append(
                f"  {'random ranking':<22} {(n + 1) / (2 * n):>7.4f}          {3 / n:>7.4f}"
            )
    lines.append(
        "\nK sweep: 16 models, shared-wrong errors (K = 16 is MCA with pi_0 breaking ties)"
    )
    lines.append(f"  {'K':>3} {'RBO':>8} {'SP@3':>8}")
    for k, vals in sorted(sweep.items()):
        v = np.asarray(vals)
        mark = "  <- default" if k == default_k(16) else ""
        lines.append(f"  {k:>3} {v[:, 0].mean():>8.4f} {v[:, 1].mean():>8.4f}{mark}")
    return lines


# ---------------------------------------------------------------------------
# cost on generated text
# ---------------------------------------------------------------------------

WORDS = [
    "pressure",
    "temperature",
    "volume",
    "energy",
    "mass",
    "force",
    "velocity",
    "distance",
    "angle",
    "ratio",
    "price",
    "cost",
    "profit",
    "tax",
    "rate",
    "interest",
    "share",
    "total",
    "average",
    "median",
    "sum",
    "product",
    "river",
    "mountain",
    "city",
    "border",
    "climate",
    "harvest",
    "season",
    "rainfall",
    "soil",
    "crop",
]


def write_outputs(path: Path, n_models: int, n_questions: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    acc = np.linspace(0.4, 0.9, n_models)
    with path.open("w", encoding="utf-8") as f:
        for q in range(n_questions):
            topic = rng.choice(WORDS, size=4, replace=False)
            a, b, c, d = (str(x) for x in topic)
            right = bool
            for m in range(n_models):
                right = rng.random() < acc[m]
                ans = "ABCD"[0 if right else int(rng.integers(1, 4))]
                steps = [
                    f"The question asks how the {a} relates to the {b} in this setting.",
                    f"Since the {b} changes with the {c}, the {a} must follow the {c} as well.",
                    f"Comparing the options, only option {ans} keeps the {a} and {d} consistent.",
                ]
                if rng.random() > acc[m]:
                    steps[1] = f"Step two considers something unrelated about the weather {q}."
                ev = [
                    f"The {a} is defined relative to the {b}.",
                    f"Measurements of the {c} show it drives the {b}.",
                    f"Option {ans} mentions the {d} explicitly.",
                ]
                text = (
                    f"Answer: {ans}\n\nReasoning:\n\n"
                    + "\n".join(f"Step {i + 1}: {s}" for i, s in enumerate(steps))
                    + "\n\nSupporting Evidence:\n\n"
                    + "\n".join(f"- {e}" for e in ev)
                    + f"\n\nConclusion:\n\n- The answer is {ans}.\n"
                )
                rec = {
                    "question_id": f"q{q}",
                    "subset": f"s{q % 20}",
                    "model": f"model-{m:02d}",
                    "text": text,
                    "gold": "A",
                    "choices": ["w", "x", "y", "z"],
                }
                f.write(json.dumps(rec) + "\n")


def child(path: str) -> None:
    """Time the service path on ``path``; print one JSON line."""
    t: dict[str, tuple[float, float]] = {}
    t0, c0 = time.perf_counter(), time.process_time()
    from annotate.services.reasoning import rank_outputs, read_outputs, score_outputs

    def lap(stage: str) -> None:
        nonlocal t0, c0
        t[stage] = (time.perf_counter() - t0, time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()

    lap("import")
    out = read_outputs([Path(path)])
    lap("read")
    scored = score_outputs(out)
    lap("parse+embed")
    doc = rank_outputs(scored)
    lap("rank")
    hwm = 0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) // 1024
    print(
        json.dumps(
            {
                "seconds": t,
                "peak_mib": hwm,
                "responses": doc["responses"],
                "rbo": doc["evaluation"]["rbo"],
            }
        )
    )


def cost(n_models: int, n_questions: int, seed: int) -> list[str]:
    lines = [f"\nCost: {n_models} models x {n_questions:,} questions, default encoder"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "outputs.jsonl"
        t0 = time.perf_counter()
        write_outputs(path, n_models, n_questions, seed)
        size = path.stat().st_size / 2**20
        lines.append(
            f"  generated {size:.1f} MiB of JSON Lines in {time.perf_counter() - t0:.1f} s"
        )
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
        before = load()
        t0 = time.perf_counter()
        res = subprocess.run(
            [sys.executable, __file__, "--child", str(path)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        wall = time.perf_counter() - t0
        r = json.loads(res.stdout.strip().splitlines()[-1])
    lines.append(f"  {'stage':<12} {'wall':>9} {'CPU':>9}")
    for stage, (secs, cpu) in r["seconds"].items():
        lines.append(f"  {stage:<12} {secs:8.2f}s {cpu:8.2f}s")
    lines.append(f"  {'total':<12} {wall:8.2f} s (subprocess wall time, load {before} -> {load()})")
    lines.append(f"  peak RSS     {r['peak_mib']:8d} MiB ({r['responses']:,} responses)")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4 trials, 16 x 1,000 timing")
    ap.add_argument("--trials", type=int, default=None)
    ap.add_argument("--seed", type=int, default=2025)
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/*.txt")
    ap.add_argument("--child", metavar="FILE", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    trials = args.trials or (4 if args.quick else 20)
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = [
        "bench_reasoner_rank: ReasonerRank vs MCA and SelfRank on simulated populations; cost",
        f"command: {' '.join([Path(sys.executable).name, *sys.argv])}",
        f"date: {started}; load average (1 min) at start: {load()}; cores: {os.cpu_count()}",
    ]
    for line in head:
        print(line, flush=True)
    body = accuracy_table(trials, args.seed)
    for line in body:
        print(line, flush=True)
    timing = cost(16, 1_000 if args.quick else 10_000, args.seed)
    for line in timing:
        print(line, flush=True)
    tail = [f"\nload average (1 min) at end: {load()}"]
    print(tail[0])
    if args.save:
        out = ROOT / "benchmarks" / "results" / "bench_reasoner_rank.txt"
        out.write_text("\n".join(head + body + timing + tail) + "\n", encoding="utf-8")
        print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
