"""Adaptive schedule benchmark (issue 16 item 3): votes needed, and the time to choose.

Run: .venv/bin/python benchmarks/bench_adaptive.py [--quick] [--studies N] [--votes V]

1. Votes needed for the same interval width. Simulated studies
   (``ranking.adaptive.simulate_collection``; Bradley-Terry outcomes from known
   ratings) are collected twice, with the standard schedule (the least-judged item
   next) and with the adaptive one (settled items left out, expected variance
   reduction of the sides still wider than the target, top 4 plus 20% exploration),
   both until the widest 95% rating interval (Bradley-Terry fit with the schedule's
   prior, checked every 25 votes; 50 in the difficulty study) is at most the target:

   * arena: 20 models (ratings ~ N(0, 200) Elo points), every model pair an item,
     target 150 Elo points;
   * difficulty: 60 questions (difficulties ~ N(0, 300)), 120 fixed pairs (a ring
     through the questions in random order plus 60 random chords), target 400.

   Printed per kind: mean (with its Monte-Carlo standard error) and median votes of each
   schedule, the saving of the adaptive one (target: at least 25% fewer) with a paired
   bootstrap 95% interval over the studies, and the bias of the adaptive runs' ratings (plain
   fit and inverse-propensity-weighted fit): the largest |mean error| over items and its
   Monte-Carlo z.
2. Time to choose the next item at 100,000 votes: an adaptive arena study (20 models,
   30,000 battles, overlap 5, target width 5 Elo points so that no battle is settled and
   every draw scores all of them) filled with 100,000 votes by bulk SQL; a VotingSession of a
   new annotator is opened (which reads every vote once), then per key press: another
   annotator's vote arrives, and the session draws the next item
   (``VotingSession._adaptive_choice``: reading the new rows, a refit every 10 votes,
   scoring 30,000 candidates). Also the whole service path of a key press (``vote`` +
   ``current``: the commit, the draw and the reservation). Target: under 20 ms.
3. Opening the session in a fresh process (issue 13), as the app does: a new Python
   process imports the voting service, then (timed apart, once per process) NumPy, SciPy
   and ``ranking`` for the adaptive schedule, then opens the store, a ``VotingSession`` of
   a new annotator and its first item (``current()``: the estimates read every vote, the
   first draw and the reservation). Wall and CPU time of each step, ``--open-runs`` times;
   with ``--baseline DIR`` (a copy of older code: ``git archive 16b8ebc annotate ranking |
   tar -x -C DIR``) the runs alternate between that code and this one on the same
   database. Target: the open (store + session + first item) well under 0.5 s.

``--db PATH`` keeps the 100,000-vote database there (built when missing) for later runs;
``--skip-votes-needed`` leaves out part 1 (minutes).

Prints tables and the load average (the machine is shared: timings vary with load);
asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from ranking.adaptive import simulate_collection


def arena_study(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    n = 20
    truth = rng.normal(0.0, 200.0, n)
    a, b = np.triu_indices(n, 1)
    return truth, a.astype(np.int64), b.astype(np.int64), 150.0


def difficulty_study(
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    n = 60
    truth = rng.normal(0.0, 300.0, n)
    order = rng.permutation(n)
    pairs = {(min(x, y), max(x, y)) for x, y in zip(order, np.roll(order, 1), strict=True)}
    while len(pairs) < 2 * n:
        x, y = rng.choice(n, size=2, replace=False)
        pairs.add((int(min(x, y)), int(max(x, y))))
    p = np.array(sorted(pairs), dtype=np.int64)
    return truth, p[:, 0], p[:, 1], 400.0


def votes_needed(kind: str, studies: int) -> dict[str, Any]:
    make = arena_study if kind == "arena" else difficulty_study
    votes: dict[str, list[int]] = {"uniform": [], "adaptive": []}
    reached = {"uniform": 0, "adaptive": 0}
    errors: dict[str, list[np.ndarray]] = {"fit": [], "ipw": []}
    t0 = time.perf_counter()
    for k in range(studies):
        truth, a, b, target = make(np.random.default_rng(k))
        centred = truth - truth.mean()
        for policy in ("uniform", "adaptive"):
            run = simulate_collection(
                truth, a, b, policy=policy, target_width=target,
                rng=np.random.default_rng(50_000 + k), max_votes=40_000,
                check_every=25 if kind == "arena" else 50,
            )  # fmt: skip
            votes[policy].append(run.votes)
            reached[policy] += int(run.reached)
            if policy == "adaptive" and run.ipw_ratings is not None:
                errors["fit"].append(run.ratings - centred)
                errors["ipw"].append(run.ipw_ratings - centred)
    bias = {}
    for name, errs in errors.items():
        e = np.array(errs)
        se = e.std(axis=0, ddof=1) / np.sqrt(len(errs))
        mean = e.mean(axis=0)
        k = int(np.argmax(np.abs(mean)))
        z = float(abs(mean[k]) / se[k])
        # two-sided t p-value of the largest |z|, times the number of items (Bonferroni)
        p_all = min(1.0, float(2 * stats.t.sf(z, len(errs) - 1)) * e.shape[1])
        bias[name] = (float(mean[k]), z, float(np.abs(e).mean()), p_all)
    return {
        "kind": kind,
        "target": make(np.random.default_rng(0))[3],
        "votes": votes,
        "reached": reached,
        "bias": bias,
        "seconds": time.perf_counter() - t0,
    }


N_MODELS = 20
N_ITEMS = 30_000


def build(db: Path, n_votes: int, seed: int = 0) -> None:
    """An adaptive arena study with ``n_votes`` current votes, written with bulk SQL."""
    from sqlmodel import Session

    from annotate.services.db import open_store
    from annotate.store import repo
    from annotate.study_settings import StudySettings

    rng = np.random.default_rng(seed)
    engine = open_store(db)
    strength = rng.normal(0.0, 1.0, N_MODELS)
    models = [f"model-{i:02d}" for i in range(N_MODELS)]
    settings = StudySettings.from_dict("arena", {"schedule": "adaptive", "target_width": 5})
    with Session(engine) as s, s.begin():
        sid = repo.insert_study(
            s, name="bench", kind="arena", title="bench", description="",
            settings=settings, fingerprint="bench",
        )  # fmt: skip
        pairs = []
        for i in range(N_ITEMS):
            a, b = rng.choice(N_MODELS, size=2, replace=False)
            item = repo.insert_item(s, sid, f"b{i:05d}", i)
            repo.insert_battle(s, item, None, models[a], models[b])
            pairs.append((item, int(a), int(b)))
        n_annotators = -(-n_votes // 400)
        ann = [repo.annotator_id(s, f"ann{k:04d}") for k in range(n_annotators)]
        rows: list[tuple[Any, ...]] = []
        for k in range(n_annotators):
            todo = min(400, n_votes - len(rows))
            for j in rng.choice(N_ITEMS, size=todo, replace=False):
                item, a, b = pairs[int(j)]
                p = 1.0 / (1.0 + np.exp(-(strength[a] - strength[b])))
                choice = "model_a" if rng.random() < p else "model_b"
                rows.append(
                    (str(uuid.uuid4()), sid, ann[k], item, choice, False, 5000, False,
                     "2026-01-01 00:00:00", None)
                )  # fmt: skip
        repo.bulk_insert_votes(s, rows)
    engine.dispose()


def choose_times(db: Path, presses: int) -> dict[str, list[float]]:
    from annotate.services.db import open_store
    from annotate.services.voting import VotingSession

    engine = open_store(db)
    t0 = time.perf_counter()
    me = VotingSession(engine, "bench", "timer")
    first = me.current()
    opened = time.perf_counter() - t0
    other = VotingSession(engine, "bench", "other")
    draw, press, draw_cpu, press_cpu = [], [], [], []
    for k in range(presses):
        other.current()
        other.vote(("a", "b")[k % 2], 4000)  # another annotator's vote arrives
        t, c = time.perf_counter(), time.process_time()
        me._adaptive_choice(me._queue)
        draw.append(time.perf_counter() - t)
        draw_cpu.append(time.process_time() - c)
    assert first is not None
    for k in range(presses):
        t, c = time.perf_counter(), time.process_time()
        me.vote(("a", "b")[k % 2], 4000)
        me.current()
        press.append(time.perf_counter() - t)
        press_cpu.append(time.process_time() - c)
    return {
        "open": [opened],
        "draw": draw,
        "press": press,
        "draw_cpu": draw_cpu,
        "press_cpu": press_cpu,
    }


OPEN_CHILD = """
import json, os, sys, time
def now():
    return time.perf_counter(), time.process_time()
out = {}
t = now()
from annotate.services.db import open_store
from annotate.services.voting import VotingSession
u = now(); out["import voting"] = (u[0] - t[0], u[1] - t[1])
import annotate.services.adaptive
t = now(); out["import numpy, scipy, ranking"] = (t[0] - u[0], t[1] - u[1])
engine = open_store(sys.argv[1])
session = VotingSession(engine, "bench", sys.argv[2])
u = now(); out["open: store + VotingSession()"] = (u[0] - t[0], u[1] - t[1])
assert session.current() is not None
t = now(); out["open: first item (current())"] = (t[0] - u[0], t[1] - u[1])
out["open: total"] = tuple(a + b for a, b in zip(out["open: store + VotingSession()"],
                                                out["open: first item (current())"]))
session.release()
out["code"] = (annotate.services.adaptive.__file__, 0)
print(json.dumps(out))
"""
"""Run in a fresh interpreter: argv = database, annotator. Prints step -> (wall s, CPU s)."""


def fresh_opens(db: Path, runs: int, baseline: Path | None) -> dict[str, dict[str, list[float]]]:
    """Open the session ``runs`` times in fresh processes (alternating with ``baseline``'s
    code when given); per code ("this", "baseline") and step: the wall and CPU times."""
    import json
    import subprocess
    import sys

    here = Path(__file__).resolve().parents[1]
    codes = [("this", here)] + ([("baseline", baseline)] if baseline else [])
    out: dict[str, dict[str, list[float]]] = {}
    for k in range(runs):
        for name, root in codes if k % 2 == 0 else codes[::-1]:
            # run in the code's folder: ``python -c`` puts the working folder first on the path
            env = {**os.environ, "PYTHONPATH": str(root)}
            done = subprocess.run(
                [sys.executable, "-c", OPEN_CHILD, str(db.resolve()), f"fresh-{name}-{k}"],
                env=env, cwd=root, capture_output=True, text=True, check=True,
            )  # fmt: skip
            steps = json.loads(done.stdout.strip().splitlines()[-1])
            assert Path(steps.pop("code")[0]).resolve().parents[2] == Path(root).resolve()
            for step, (wall, cpu) in steps.items():
                out.setdefault(name, {}).setdefault(f"{step}, wall", []).append(wall)
                out[name].setdefault(f"{step}, CPU", []).append(cpu)
    return out


def ms(xs: list[float]) -> str:
    xs = sorted(xs)
    p99 = xs[min(len(xs) - 1, int(0.99 * len(xs)))]
    return f"{1000 * statistics.median(xs):9.1f}{1000 * p99:9.1f}{1000 * xs[-1]:9.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer studies and votes")
    ap.add_argument("--studies", type=int, default=None)
    ap.add_argument("--votes", type=int, default=100_000)
    ap.add_argument("--presses", type=int, default=200)
    ap.add_argument("--open-runs", type=int, default=5, help="fresh-process opens (part 3)")
    ap.add_argument("--baseline", type=Path, default=None, help="older code to alternate with")
    ap.add_argument("--db", type=Path, default=None, help="keep the database here")
    ap.add_argument("--skip-votes-needed", action="store_true", help="leave out part 1")
    args = ap.parse_args()
    studies = args.studies or (4 if args.quick else 40)
    n_votes = 20_000 if args.quick and args.votes == 100_000 else args.votes
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"(2 cores, shared with other engineers' runs)")  # fmt: skip
    if not args.skip_votes_needed:
        print(f"\n1. votes until every 95% interval is at most the target ({studies} studies each)")
        print("   (mean +- its Monte-Carlo standard error over the studies; saving = 1 - adaptive")
        print("   mean / uniform mean, with a 95% percentile bootstrap interval, studies resampled")
        print("   in pairs)")
        print(
            f"{'study':<11}{'target':>7}{'uniform mean':>16}{'median':>8}"
            f"{'adaptive mean':>16}{'median':>8}{'saving':>8}{'95% CI':>16}"
            f"{'reached u/a':>13}{'time s':>8}"
        )
        results = [votes_needed(kind, studies) for kind in ("arena", "difficulty")]
        for r in results:
            u = np.asarray(r["votes"]["uniform"], dtype=float)
            a = np.asarray(r["votes"]["adaptive"], dtype=float)
            saving = 1.0 - a.mean() / u.mean()
            boot = np.random.default_rng(1).integers(0, u.size, (10_000, u.size))
            savings = 1.0 - a[boot].mean(axis=1) / u[boot].mean(axis=1)
            lo, hi = np.percentile(savings, [2.5, 97.5])
            se_u, se_a = u.std(ddof=1) / np.sqrt(u.size), a.std(ddof=1) / np.sqrt(a.size)
            print(
                f"{r['kind']:<11}{r['target']:>7.0f}{u.mean():>10.0f} +-{se_u:<4.0f}"
                f"{np.median(u):>8.0f}{a.mean():>10.0f} +-{se_a:<4.0f}{np.median(a):>8.0f}"
                f"{saving:>8.1%}{f'{lo:.1%} .. {hi:.1%}':>16}"
                f"{r['reached']['uniform']:>6}/{r['reached']['adaptive']:<6}{r['seconds']:>8.1f}"
            )
        print("\n   bias of the adaptive runs' ratings (Elo points; truth centred):")
        print("   (its z: mean error / Monte-Carlo standard error; p: two-sided t test of that")
        print("   largest z, Bonferroni over the items: small p would say biased)")
        print(f"   {'study':<11}{'fit':<5}{'largest |mean error|':>21}{'its z':>8}{'p':>8}"
              f"{'mean |error|':>14}")  # fmt: skip
        for r in results:
            for name, (mean, z, mae, p_all) in r["bias"].items():
                print(
                    f"   {r['kind']:<11}{name:<5}{abs(mean):>21.1f}{z:>8.2f}{p_all:>8.3f}"
                    f"{mae:>14.1f}"
                )
    print(f"\n2. choosing the next item with {n_votes:,} votes (20 models, {N_ITEMS:,} battles)")
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "bench.db"
        if not db.exists():
            t = time.perf_counter()
            build(db, n_votes)
            print(f"   (database built in {time.perf_counter() - t:.1f} s)")
        times = choose_times(db, args.presses)
        print(f"   ({args.presses} draws and {args.presses} key presses; wall time, and CPU time")
        print("   of this process, which other runs on the shared machine inflate less)")
        print(f"   {'case':<52}{'median ms':>10}{'p99 ms':>9}{'max ms':>9}")
        print(f"   {'open the session (reads every vote once), wall':<52}{ms(times['open'])}")
        print(f"   {'draw the next item (after another vote), wall':<52}{ms(times['draw'])}")
        print(f"   {'draw the next item (after another vote), CPU':<52}{ms(times['draw_cpu'])}")
        print(f"   {'key press: vote() + current() (commit, draw), wall':<52}{ms(times['press'])}")
        print(
            f"   {'key press: vote() + current() (commit, draw), CPU':<52}{ms(times['press_cpu'])}"
        )
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"\n3. opening the session in a fresh process ({args.open_runs} runs; load {load})")
        opens = fresh_opens(db, args.open_runs, args.baseline)
        print(f"   {'code':<10}{'step':<46}{'median ms':>10}{'p99 ms':>9}{'max ms':>9}")
        for code, steps in opens.items():
            for step, xs in steps.items():
                print(f"   {code:<10}{step:<46}{ms(xs)}")
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
