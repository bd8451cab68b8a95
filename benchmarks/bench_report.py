"""Benchmark of the human-alignment report (``annotate report``).

A synthetic difficulty study is written to a temporary SQLite database: 500
questions in 5 subjects, 1,000 within-subject pairs (each subject's questions
linked, so the human scale is fitted on 5 groups), a 500 x 12 response matrix
(pools small/medium/large) and 100 annotators who each vote on every pair
(Bradley-Terry votes with per-annotator noise, 3% skips), inserted with
``repo.bulk_insert_votes``. The full report (5 estimators and 2 estimators on
each of 4 pools, alignment with 1,000 bootstrap replicates over pairs and over
annotators, agreement with intervals, the human difficulty scale) is timed
several times; the plots are timed separately.

Usage::

    .venv/bin/python benchmarks/bench_report.py [--annotators 100] [--pairs 1000]
        [--boot 1000] [--repeats 5]
    .venv/bin/python benchmarks/bench_report.py --annotators 1000 --keep /tmp/r1000 \
        --cli 2 [--code DIR]

The second form is issue 13's measurement: ``annotate report --no-plots`` (and with
``--json``) on 1,000 annotators x 1,000 pairs, each run a fresh process as a user runs
it: wall time, CPU time, peak RSS (the children's ``ru_maxrss``, so the largest run so
far) and the load average; ``--code`` runs another checkout (``git archive REV annotate
ranking``), and ``--code BEFORE AFTER`` runs both in turn in each round (interleaved, with
the median CPU time of each); ``ANNOTATE_CACHE=off`` in the environment turns the vote
cache off for the runs. ``--timeline`` adds, per run, when the prefetch child was forked and
when the monitor asked for its rows and had them (seconds after the command started), and
the CPU time of the command's process and of its children (the prefetch child) apart.
Before the runs each tree's ``annotate`` and ``ranking`` are compiled to bytecode
(``compileall``), as ``pip install`` does: with ``PYTHONDONTWRITEBYTECODE=1`` in the
environment (as on the machines this project is developed on) a tree run from source is
otherwise compiled anew by every run, about 0.3 s of CPU that no installed copy pays.
``--bytecode source`` measures that case instead (the trees' ``__pycache__`` folders are
then left as they are: delete them first to measure compilation).

Prints the median time, the stages of the median run, the peak traced memory
(tracemalloc, which numpy reports to) and the process's maximum RSS, with BLAS
limited to one thread (the service's default) and with the library default.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

import numpy as np
from sqlmodel import Session

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotate.services.db import open_store  # noqa: E402
from annotate.services.importing import import_paths  # noqa: E402
from annotate.services.plots import write_plots  # noqa: E402
from annotate.services.report import human_alignment_report  # noqa: E402
from annotate.store import repo  # noqa: E402

POOLS = ["small"] * 4 + ["medium"] * 4 + ["large"] * 4


def build(root: Path, n_q: int, n_pairs: int, n_ann: int, seed: int) -> tuple[object, str]:
    rng = np.random.default_rng(seed)
    folder = root / "bench-study"
    folder.mkdir(parents=True)
    (folder / "study.toml").write_text(
        'name = "bench"\nkind = "difficulty"\ntitle = "Benchmark"\n', encoding="utf-8"
    )
    subjects = [f"s{i % 5}" for i in range(n_q)]
    difficulty = rng.normal(size=n_q)
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n_q):
            fh.write(json.dumps({"id": f"q{i}", "subject": subjects[i], "text": f"q {i}"}) + "\n")
    # within each subject: a random spanning path (so the subject's questions are linked
    # and get a human scale) plus random extra pairs, 1,000 pairs in all
    seen: set[tuple[int, int]] = set()
    pairs: list[tuple[int, int]] = []
    by_subject = [np.flatnonzero(np.array(subjects) == f"s{s}") for s in range(5)]
    for group in by_subject:
        path = rng.permutation(group)
        for a, b in itertools.pairwise(path):
            seen.add((int(a), int(b)))
            pairs.append((int(a), int(b)))
    while len(pairs) < n_pairs:
        group = by_subject[len(pairs) % 5]
        a, b = (int(x) for x in rng.choice(group, 2, replace=False))
        if (a, b) in seen or (b, a) in seen:
            continue
        seen.add((a, b))
        pairs.append((a, b))
    pairs = pairs[:n_pairs]
    (folder / "pairs.csv").write_text(
        "pair_id,first,second\n" + "".join(f"p{k},q{a},q{b}\n" for k, (a, b) in enumerate(pairs)),
        encoding="utf-8",
    )
    ability = np.sort(rng.normal(size=12)) + np.repeat([-1.0, 0.0, 1.0], 4)
    solved = rng.random((n_q, 12)) < 1 / (1 + np.exp(-(ability[None, :] - difficulty[:, None])))
    lines = ["question_id,model,score"] + [
        f"q{i},M{j},{int(solved[i, j])}" for i in range(n_q) for j in range(12)
    ]
    (folder / "responses.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "models.csv").write_text(
        "model,pool\n" + "".join(f"M{j},{POOLS[j]}\n" for j in range(12)), encoding="utf-8"
    )
    engine = open_store(root / "bench.db")
    import_paths(engine, [folder])
    pa = np.array(pairs)
    gap = difficulty[pa[:, 0]] - difficulty[pa[:, 1]]
    with Session(engine) as s, s.begin():
        st = repo.get_study(s, "bench")
        assert st is not None
        items = repo.item_ids(s, st.id)
        rows = []
        for a in range(n_ann):
            aid = repo.annotator_id(s, f"V{a + 1}")
            sharp = rng.uniform(0.3, 3.0)
            p_first = 1 / (1 + np.exp(-sharp * gap))
            first = rng.random(n_pairs) < p_first
            skip = rng.random(n_pairs) < 0.03
            for k in range(n_pairs):
                choice = "skip" if skip[k] else ("first" if first[k] else "second")
                rows.append(
                    (
                        str(uuid.uuid4()),
                        st.id,
                        aid,
                        items[f"p{k}"],
                        choice,
                        False,
                        2500,
                        False,
                        "2026-01-01 00:00:00",
                        None,
                    )
                )
        repo.bulk_insert_votes(s, rows)
    return engine, "bench"


def cli_runs(args: argparse.Namespace) -> int:
    """``annotate report --no-plots [--json]`` in fresh processes on a kept study."""
    import subprocess

    if args.keep is None:
        raise SystemExit("--cli needs --keep DIR (the study is built there once)")
    db = args.keep / "bench.db"
    if not db.exists():
        args.keep.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        build(args.keep, args.questions, args.pairs, args.annotators, args.seed)
        print(f"built {args.annotators} x {args.pairs} in {time.perf_counter() - t:.0f} s")
    codes = [str(c.resolve()) for c in (args.code or [ROOT])]
    several = len(codes) > 1
    if args.bytecode == "compiled":
        import compileall

        for code in codes:
            for package in ("annotate", "ranking"):
                compileall.compile_dir(str(Path(code) / package), quiet=1)
    print(
        f"code: {'; '.join(codes)}; study {args.annotators} annotators x {args.pairs} pairs; "
        f"{args.cli} runs{' each, interleaved' if several else ''}; ANNOTATE_CACHE="
        f"{os.environ.get('ANNOTATE_CACHE', '(unset: on)')}; bytecode {args.bytecode}"
    )
    tree = "| tree " if several else ""
    extra = (
        " fork s | rows asked s | rows in s | parent CPU s | child CPU s |" if args.timeline else ""
    )
    print(f"| run {tree}| mode | wall s | CPU s | peak RSS MiB | load (1 min) |{extra}")
    print(
        "|---|---" + ("|---" if several else "") + "|---|---|---|---|" + "---|" * extra.count("|")
    )
    cpu_by: dict[tuple[str, str], list[float]] = {}
    for i in range(args.cli):
        for k, code in enumerate(codes):
            prog = (
                f"import sys; sys.path.insert(0, {code!r}); {TIMELINE if args.timeline else ''}"
                "from annotate.__main__ import main; sys.argv = ['annotate', *sys.argv[1:]]; main()"
            )
            for mode in ("md", "json"):
                out = args.keep / f"out-{mode}"
                json_flag = ["--json"] if mode == "json" else []
                cmd = [sys.executable, "-P", "-c", prog, "report", "--db", str(db), "--study",
                       "bench", "--no-plots", "--out", str(out), *json_flag]  # fmt: skip
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                env = {**os.environ, "BENCH_T0": repr(time.time())}
                run = subprocess.run(
                    cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
                )
                wall = time.perf_counter() - t
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                cpu_by.setdefault((code, mode), []).append(cpu)
                # ru_maxrss of the children is the largest child so far
                label = f"| {k + 1} " if several else ""
                marks = ""
                if args.timeline:
                    got = dict(
                        w.split("=", 1)
                        for w in run.stderr.decode().split()
                        if "=" in w and w.split("=")[0] in _MARKS
                    )
                    marks = " " + " | ".join(got.get(m, "-") for m in _MARKS) + " |"
                print(
                    f"| {i + 1} {label}| {mode} | {wall:.2f} | {cpu:.2f} | "
                    f"{after.ru_maxrss / 1024:.0f} | {os.getloadavg()[0]:.2f} |{marks}"
                )
    if several:
        for (code, mode), cpus in cpu_by.items():
            med, n = statistics.median(cpus), codes.index(code) + 1
            print(f"median CPU {mode}: {med:.2f} s, tree {n} = {code}")
    print(f"cpus: {os.cpu_count()}; target (issue 13): under 3 s for 1,000 x 1,000 --no-plots")
    return 0


_MARKS = ("fork", "asked", "rows", "parent_cpu", "child_cpu")
"""What ``--timeline`` reads from a run's standard error (:data:`TIMELINE`)."""

TIMELINE = (
    "import os, time, atexit, resource; T0 = float(os.environ['BENCH_T0']); M = {}; "
    "import annotate.services.report_prefetch as P; "
    "_s = P.Prefetch.start.__func__; _t = P.Prefetch.take; "
    "P.Prefetch.start = classmethod(lambda c, *a, **k: "
    "(M.setdefault('fork', time.time() - T0), _s(c, *a, **k))[1]); "
    "P.Prefetch.take = lambda self, i: (M.setdefault('asked', time.time() - T0), _t(self, i), "
    "M.setdefault('rows', time.time() - T0))[1]; "
    "cpu = lambda who: sum(resource.getrusage(who)[:2]); "
    "atexit.register(lambda: sys.stderr.write(' '.join(f'{k}={v:.2f}' for k, v in "
    "{**M, 'parent_cpu': cpu(resource.RUSAGE_SELF), "
    "'child_cpu': cpu(resource.RUSAGE_CHILDREN)}.items()) + chr(10))); "
)
"""Code run before the command with ``--timeline``: the prefetch's fork, the monitor's ask
for the rows and their arrival (seconds after the benchmark started the process), and, at
exit, the CPU time of the process and of its reaped children (the prefetch child)."""


def run(
    engine: object, study: str, n_boot: int, threads: int | None, parallel: bool = True
) -> tuple[float, object]:
    t = time.perf_counter()
    rep = human_alignment_report(
        engine,  # type: ignore[arg-type]
        study,
        n_boot=n_boot,
        threads=threads,
        parallel=parallel,
    )
    return time.perf_counter() - t, rep


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--annotators", type=int, default=100)
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--questions", type=int, default=500)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plots", metavar="DIR", default=None, help="keep the PNGs in DIR")
    ap.add_argument(
        "--keep",
        metavar="DIR",
        type=Path,
        default=None,
        help="build the study in DIR once and reuse it on later runs (1,000 x 1,000 takes "
        "about two minutes to build)",
    )
    ap.add_argument(
        "--cli",
        metavar="N",
        type=int,
        default=0,
        help="instead of the in-process timings: run `annotate report --no-plots` N times "
        "(and N times with --json) as a user does, each in a fresh process, and print wall "
        "and CPU time, peak RSS and the load average of each run",
    )
    ap.add_argument(
        "--code",
        metavar="DIR",
        type=Path,
        nargs="+",
        default=None,
        help="with --cli: run another checkout's annotate and ranking; several DIRs "
        "(before after) are run in turn within each round, interleaved",
    )
    ap.add_argument(
        "--timeline",
        action="store_true",
        help="with --cli: also print when the prefetch child was forked, when the monitor "
        "asked for its rows and had them, and the parent's and the child's CPU time",
    )
    ap.add_argument(
        "--bytecode",
        choices=("compiled", "source"),
        default="compiled",
        help="with --cli: compile each tree to bytecode before the runs, as an installed "
        "copy is (default), or run it as it is",
    )
    args = ap.parse_args()
    if args.cli:
        return cli_runs(args)
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        engine, study = build(Path(tmp), args.questions, args.pairs, args.annotators, args.seed)
        build_s = time.perf_counter() - t
        print(
            f"study: {args.questions} questions, {args.pairs} pairs, {args.annotators} "
            f"annotators x {args.pairs} votes ({args.annotators * args.pairs} rows, built in "
            f"{build_s:.1f} s); bootstrap {args.boot} replicates over pairs and over annotators"
        )
        print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")
        run(engine, study, args.boot, 1)  # warm-up: imports, SQLite cache
        results = []
        configs = (
            (1, True, "BLAS 1 thread, stages in parallel (default)"),
            (1, False, "BLAS 1 thread, stages one after another"),
            (None, True, "BLAS library default, stages in parallel"),
        )
        for threads, parallel, label in configs:
            times, reps = [], []
            for _ in range(args.repeats):
                dt, rep = run(engine, study, args.boot, threads, parallel)
                times.append(dt)
                reps.append(rep)
            med = statistics.median(times)
            stages = reps[times.index(sorted(times)[len(times) // 2])].timings  # type: ignore[attr-defined]
            results.append((label, med, min(times), max(times), stages))
        tracemalloc.start()
        _, rep = run(engine, study, args.boot, 1)
        hs = rep.human_scale  # type: ignore[attr-defined]
        fitted = sum(g.fitted for g in hs.groups)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        t = time.perf_counter()
        plot_dir = Path(args.plots) if args.plots else Path(tmp) / "plots"
        files, _notes = write_plots(rep, plot_dir)  # type: ignore[arg-type]
        plot_s = time.perf_counter() - t
    print()
    print("| configuration | median (s) | min (s) | max (s) | runs |")
    print("|---|---|---|---|---|")
    for label, med, lo, hi, _ in results:
        print(f"| {label} | {med:.3f} | {lo:.3f} | {hi:.3f} | {args.repeats} |")
    print()
    print("stages of the median default run (overlapping: agreement and human scale run beside")
    print("the estimators and the alignment):")
    print("| stage | seconds |")
    print("|---|---|")
    for stage, sec in results[0][4]:
        print(f"| {stage} | {sec:.3f} |")
    print()
    print(f"human scale: fitted on {fitted} of {len(hs.groups)} groups of linked questions")
    print(f"peak traced memory (one report): {peak / 2**20:.1f} MiB")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"max RSS of the process: {rss:.0f} MiB")
    print(f"plots (timed separately): {plot_s:.2f} s for {len(files)} PNGs")
    target = results[0][1] < 2.0
    print(f"target < 2 s: {'met' if target else 'NOT met'} ({results[0][1]:.3f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
