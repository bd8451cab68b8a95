"""Annotator verdicts of ``stable_arena`` on simulated studies (issue 10).

For a grid of studies (annotators x votes per annotator x honest discrimination sd x
perturbation x share perturbed) it simulates arena votes from known ratings
(:func:`ranking.simulate_arena`, Davidson ties at rate 0.3), perturbs a share of the
annotators (:func:`ranking.perturb_votes`: the paper's random, equal, flip and mixed;
position-biased at 80% and 100% left; too fast; always against the ranking), runs
:func:`ranking.stable_arena` with its defaults (dynamic thresholds, Benjamini-Hochberg at
0.05) and the per-vote inputs ``left_chosen`` and ``fast``, and reports per cell:

* ``ff``: false-flag rate, flagged honest annotators / honest annotators;
* ``rec``: recall, flagged perturbed annotators / perturbed annotators with more than
  ``delta`` votes (``-`` when there are none);
* ``pend``: share of all annotators still pending;
* ``crash``: runs that raised.

``--gold SHARE`` adds gold items: that share of each annotator's votes (at least one), on
its battles with the largest true rating gap, has a known answer (the higher-rated item),
and each annotator's gold accuracy is passed to ``stable_arena`` as evidence (the app's
test: one-sided exact binomial below 70%, adjusted across annotators). The votes and seeds
are the same as without it, so the two tables compare cell by cell.

``--old-random`` uses the earlier ``random`` test (``theta`` significantly below the
threshold, with the honest abilities fitted on the log scale;
``ranking.arena._RANDOM_PREDICTIVE = False``) on the same votes and seeds.

``--cells KEY ...`` reruns only the given cells (keys as seeded:
``annotators-votes-sd10-strategy-percent``, e.g. ``20-100-10-left100-10``) with
``--studies N`` studies from ``--first-study`` (study ``r`` of a cell always draws from
``default_rng([crc32(key), r])``, so the grid's own studies are a prefix of a longer run)
and prints each cell's false-flag rate with its exact 95% interval; ``--log`` keeps each
study's counts and ``--summarize`` merges logs.

``--tie-test {union,fisher,off}`` sets how the tie test (ties on pairs far apart in the
ranking, ``ranking.arena._tie_gap_z``) enters the ``random`` verdict
(``ranking.arena._TIE_TEST``; ``off`` is the rule before it), on the same votes and seeds.
``--tie-rates LO HI`` gives each annotator its own tie propensity, uniform in [LO, HI]
(``simulate_arena(annotator_tie_rates=...)``, drawn from a generator of its own, so the
battles and everything else are those of the same study without it): real annotators
differ in how often they tie, and no verdict may follow the tie rate alone.

``--honest-p STUDIES`` checks that the predictive ``random`` test is valid where its gates
let it run: honest-only studies (``--annotators`` x ``--votes`` x ``--sds``), the pooled
p-values against the uniform (Kolmogorov-Smirnov), no grid.

``--honest-max-noise X`` moves the gate of the ``random`` test's honest-ability fit
(``ranking.arena._HONEST_MAX_NOISE``, default 0.5: at or above that median ``se / theta``
of the clear annotators, no fit, and the test compares with a tenth of the median ability;
0.42 before rec50). ``--predictive-max-noise X`` moves the gate of the predictive test
(``ranking.arena._PREDICTIVE_MAX_NOISE``, 0.5 before rec50).

``--se-at-ability`` makes the predictive ``random`` test read each annotator's standard
error at the honest ability it is compared with (``ranking.arena._SE_AT_ABILITY = True``,
off by default: it raises recall where honest annotators are alike, but its honest p-values
are too small at 50 votes where they differ; benchmarks/results/bench_flags.txt, "rec").

``--count-only`` settles the direction of the ranking by the significance count alone
(``ranking.arena._MIXTURE_DIRECTION = False``, the rule before the mixture of the
annotators' scores) and ``--no-settle`` by the median annotator (the rule before that), on
the same votes and seeds.

Small studies get fewer models (``min(20, max(4, annotators * votes // 15))``) so that
every model has battles. A second table gives the paper's sec. 5.5 detection F1 (42
annotators, 100 votes, ratios 10-40%) at the fixed thresholds ``epsilon = 0`` and
``0.005`` (``delta = 0``), and for the default test.

Targets: 0 crashes; ``ff <= 0.05`` in every cell; ``rec >= 0.9`` where perturbed
annotators have at least 50 votes; paper F1 >= 0.90 at epsilon 0 and >= 0.95 at 0.005.

Run: ``.venv/bin/python benchmarks/bench_flags.py --quick`` (one study per cell, a few
minutes) or without ``--quick`` (3 studies per cell, 10/25/50/100/200 votes).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import zlib
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.stats import binom, binomtest

from ranking.arena import Evidence, stable_arena
from ranking.quality import GOLD_THRESHOLD, check_evidence, gold_accuracy
from ranking.simulation import (
    PerturbedVotes,
    SimulatedArena,
    detection_scores,
    perturb_votes,
    simulate_arena,
)

STRATEGIES: dict[str, dict[str, float | str]] = {
    "random": {"strategy": "random"},
    "equal": {"strategy": "equal"},
    "flip": {"strategy": "flip"},
    "mixed": {"strategy": "mixed"},
    "left80": {"strategy": "position", "left_share": 0.8},
    "left100": {"strategy": "position", "left_share": 1.0},
    "too_fast": {"strategy": "too_fast"},
    "against": {"strategy": "against"},
}


@dataclass
class Cell:
    honest: int = 0
    false_flags: int = 0
    eligible: int = 0
    caught: int = 0
    pending: int = 0
    annotators: int = 0
    crashes: int = 0
    runs: int = 0
    ff_reasons: dict[str, int] = field(default_factory=dict)
    miss_status: dict[str, int] = field(default_factory=dict)


def gold_evidence(
    model_a: np.ndarray,
    model_b: np.ndarray,
    annotator: np.ndarray,
    outcome: np.ndarray,
    true_ratings: np.ndarray,
    n_ann: int,
    share: float,
) -> Evidence:
    """Evidence from gold items: ``share`` of each annotator's votes (at least one) are on
    gold items, taken as the annotator's battles with the largest true rating gap (gold
    items are chosen to be clear); the gold answer is the higher-rated item, and a vote
    passes when it picks it (a tie fails). Tested as the app does
    (:func:`ranking.quality.gold_accuracy`: one-sided exact binomial test of accuracy
    below ``GOLD_THRESHOLD``), adjusted across annotators by ``stable_arena``."""
    gap = np.abs(true_ratings[model_a] - true_ratings[model_b])
    gold = np.zeros(outcome.size, dtype=bool)
    for j in range(n_ann):
        idx = np.flatnonzero(annotator == j)
        if idx.size:
            n_g = max(1, round(share * idx.size))
            gold[idx[np.argsort(-gap[idx], kind="stable")[:n_g]]] = True
    a_better = true_ratings[model_a] > true_ratings[model_b]
    # outcome codes of ranking.quality: 1 first item (model_a), 2 second, 3 tie
    choice = np.where(outcome == 0.5, 3, np.where(outcome == 1.0, 1, 2))[gold]
    answer = np.where(a_better, 1, 2)[gold]
    rates = gold_accuracy(annotator[gold], choice, answer, n_annotators=n_ann)
    return check_evidence("low_gold_accuracy", rates)


def run_cell(
    n_ann: int,
    votes: int,
    sd: float,
    name: str,
    ratio: float,
    reps: int,
    seed: int,
    gold: float = 0.0,
    settle: bool = True,
    first: int = 0,
    log: list[Cell] | None = None,
    tie_rates: tuple[float, float] | None = None,
) -> Cell:
    """Studies ``first, ..., first + reps - 1`` of a cell, pooled. Study ``r`` draws from
    ``default_rng([seed, r])`` alone, so any range of studies gives the same per-study
    results, and the grid's own studies (``0 .. reps - 1``) are a prefix of a longer run.
    ``log`` receives each study's own :class:`Cell`."""
    cell = Cell()
    for r in range(first, first + reps):
        one = run_study(n_ann, votes, sd, name, ratio, r, seed, gold, settle, tie_rates)
        if log is not None:
            log.append(one)
        cell.honest += one.honest
        cell.false_flags += one.false_flags
        cell.eligible += one.eligible
        cell.caught += one.caught
        cell.pending += one.pending
        cell.annotators += one.annotators
        cell.crashes += one.crashes
        cell.runs += one.runs
        for d, o in ((cell.ff_reasons, one.ff_reasons), (cell.miss_status, one.miss_status)):
            for k, v in o.items():
                d[k] = d.get(k, 0) + v
    return cell


def draw_study(
    n_ann: int,
    votes: int,
    sd: float,
    ratio: float,
    gen: np.random.Generator,
    strategy: str,
    left_share: float = 1.0,
    annotator_tie_rates: np.ndarray | None = None,
) -> tuple[SimulatedArena, PerturbedVotes, int]:
    """One study of a cell, drawn from ``gen``: ``n_ann`` annotators of about ``votes``
    votes each over ``min(20, max(4, n_ann votes / 15))`` models (discrimination sd
    ``sd``), a share ``ratio`` of them (at least one, fewer than half) perturbed by
    ``strategy``. Returns the study, its perturbed votes and the number of models."""
    n_models = min(20, max(4, n_ann * votes // 15))
    sim = simulate_arena(
        n_models=n_models,
        n_annotators=n_ann,
        records_per_annotator=votes,
        discrimination_sd=sd,
        rng=gen,
        annotator_tie_rates=annotator_tie_rates,
    )
    n_pert = min(max(1, round(ratio * n_ann)), (n_ann - 1) // 2)
    ids = gen.choice(n_ann, size=n_pert, replace=False) if n_pert else np.array([], int)
    pv = perturb_votes(sim, ids, strategy=strategy, left_share=left_share, rng=gen)
    return sim, pv, n_models


def run_study(
    n_ann: int,
    votes: int,
    sd: float,
    name: str,
    ratio: float,
    r: int,
    seed: int,
    gold: float = 0.0,
    settle: bool = True,
    tie_rates: tuple[float, float] | None = None,
) -> Cell:
    """Study ``r`` of the cell whose seed is ``seed``; ``tie_rates``: each annotator's tie
    propensity uniform in that range (from ``default_rng([seed, r, 7])``, not ``gen``)."""
    cell = Cell()
    spec = STRATEGIES[name]
    rates = (
        None
        if tie_rates is None
        else np.random.default_rng([seed, r, 7]).uniform(tie_rates[0], tie_rates[1], n_ann)
    )
    sim, pv, n_models = draw_study(
        n_ann,
        votes,
        sd,
        ratio,
        np.random.default_rng([seed, r]),
        strategy=str(spec["strategy"]),
        left_share=float(spec.get("left_share", 1.0)),
        annotator_tie_rates=rates,
    )
    cell.runs += 1
    evidence = (
        (
            gold_evidence(
                sim.model_a,
                sim.model_b,
                sim.annotator,
                pv.outcome,
                sim.true_ratings,
                n_ann,
                gold,
            ),
        )
        if gold > 0
        else ()
    )
    try:
        res = stable_arena(
            sim.model_a,
            sim.model_b,
            sim.annotator,
            pv.outcome,
            n_models=n_models,
            n_annotators=n_ann,
            left_chosen=pv.left_chosen,
            fast=pv.fast,
            evidence=evidence,
            settle_direction=settle,
        )
    except Exception:  # a crash is what this benchmark counts
        cell.crashes += 1
        return cell
    st = np.asarray(res.status)
    flagged = st == "flagged"
    honest = ~pv.perturbed
    cell.honest += int(honest.sum())
    cell.false_flags += int((flagged & honest).sum())
    elig = pv.perturbed & (res.n_records > res.delta)
    cell.eligible += int(elig.sum())
    cell.caught += int((flagged & elig).sum())
    cell.pending += int((st == "pending").sum())
    for j in np.flatnonzero(flagged & honest):
        for f in res.flags[j]:
            cell.ff_reasons[f.reason] = cell.ff_reasons.get(f.reason, 0) + 1
    for j in np.flatnonzero(elig & ~flagged):
        cell.miss_status[str(st[j])] = cell.miss_status.get(str(st[j]), 0) + 1
    cell.annotators += n_ann
    return cell


def cell_key(n_ann: int, votes: int, sd: float, name: str, ratio: float) -> str:
    """The cell's name and seed source: ``annotators-votes-sd*10-strategy-percent``."""
    return f"{n_ann}-{votes}-{int(sd * 10)}-{name}-{int(ratio * 100)}"


def parse_key(key: str) -> tuple[int, int, float, str, float]:
    """Inverse of :func:`cell_key` (``20-100-10-left100-10`` is 20 annotators, 100 votes,
    sd 1.0, left100, 10%)."""
    parts = key.split("-")
    if len(parts) != 5 or parts[3] not in STRATEGIES:
        raise SystemExit(
            f"--cells: {key!r}: expected annotators-votes-sd10-strategy-percent, "
            f"e.g. 20-100-10-left100-10, strategy one of {', '.join(STRATEGIES)}"
        )
    try:
        return int(parts[0]), int(parts[1]), int(parts[2]) / 10, parts[3], int(parts[4]) / 100
    except ValueError:
        raise SystemExit(
            f"--cells: {key!r}: annotators, votes, sd10 and percent are integers"
        ) from None


def false_flag_summary(key: str, studies: list[Cell], n_boot: int = 2000) -> str:
    """One line on a cell's false flags: honest annotators and false flags over its
    studies, the rate with its exact (Clopper-Pearson) 95% interval
    (``scipy.stats.binomtest(...).proportion_ci(method="exact")``), the one-sided exact
    binomial p-value that the rate exceeds 5%, a 95% percentile bootstrap interval over
    studies (false flags cluster in studies, e.g. one study with a bimodal honest sample:
    the binomial interval, which counts annotators as independent, is then too narrow),
    the verdict (``above`` when the exact interval lies above 0.05, ``below`` when it
    lies below, else ``undecided``) and the false flags by reason."""
    hon = np.array([c.honest for c in studies])
    ff = np.array([c.false_flags for c in studies])
    n, k = int(hon.sum()), int(ff.sum())
    crashes = sum(c.crashes for c in studies)
    reasons: dict[str, int] = {}
    for c in studies:
        for r, v in c.ff_reasons.items():
            reasons[r] = reasons.get(r, 0) + v
    if not n:
        return f"{key:<24} {len(studies):>6} {n:>7} {k:>5}   -  (no honest annotator)"
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    p_above = binom.sf(k - 1, n, 0.05)
    gen = np.random.default_rng(zlib.crc32(key.encode()))
    idx = gen.integers(0, hon.size, size=(n_boot, hon.size))
    boot = ff[idx].sum(axis=1) / np.maximum(hon[idx].sum(axis=1), 1)
    b_lo, b_hi = np.quantile(boot, [0.025, 0.975])
    verdict = "above" if ci.low > 0.05 else "below" if ci.high < 0.05 else "undecided"
    worst = int(ff.max()) if ff.size else 0
    why = ", ".join(f"{r} {v}" for r, v in sorted(reasons.items()))
    return (
        f"{key:<24} {len(studies):>6} {n:>7} {k:>5} {k / n:7.4f} [{ci.low:.4f}, {ci.high:.4f}] "
        f"{p_above:8.2g} [{b_lo:.4f}, {b_hi:.4f}] {worst:>5} {crashes:>5}  {verdict:<9} {why}"
    )


FF_HEAD = (
    f"{'cell':<24} {'studies':>6} {'honest':>7} {'ff':>5} {'rate':>7} "
    f"{'95% exact (C-P)':<16} {'p(>5%)':>8} {'95% boot/studies':<16} {'worst':>5} "
    f"{'crash':>5}  {'verdict':<9} reasons"
)


def run_cells(args: argparse.Namespace) -> None:
    """``--cells``: the chosen cells only, studies ``--first-study`` onwards (``--studies``
    of them, default the grid's own count), each cell's false-flag rate with its exact
    interval; ``--log`` appends each study's counts as a JSON line (resumable, mergeable
    with ``--summarize``)."""
    for key in args.cells:
        n_ann, votes, sd, name, ratio = parse_key(key)
        seed = zlib.crc32(key.encode())
        reps = args.studies or cell_reps(n_ann, args.reps or 1)
        t0 = time.process_time()
        studies: list[Cell] = []
        run_cell(
            n_ann,
            votes,
            sd,
            name,
            ratio,
            reps,
            seed,
            args.gold,
            not args.no_settle,
            args.first_study,
            studies,
            args.tie_rates,
        )
        if args.log:
            with open(args.log, "a") as fh:
                for r, c in enumerate(studies, start=args.first_study):
                    fh.write(json.dumps({"cell": key, "study": r, **asdict(c)}) + "\n")
        print(FF_HEAD if key == args.cells[0] else "", end="\n" if key == args.cells[0] else "")
        print(
            false_flag_summary(key, studies)
            + f"  ({time.process_time() - t0:.1f} s CPU, load {os.getloadavg()[0]:.2f})",
            flush=True,
        )


def summarize(paths: list[str]) -> None:
    """``--summarize LOG ...``: the false-flag table of ``--log`` files, each study counted
    once (the last line of a repeated cell and study wins)."""
    by_cell: dict[str, dict[int, Cell]] = {}
    for path in paths:
        with open(path) as fh:
            for line in fh:
                d = json.loads(line)
                key, r = d.pop("cell"), d.pop("study")
                by_cell.setdefault(key, {})[r] = Cell(**d)
    print(FF_HEAD)
    for key, studies in by_cell.items():
        rs = sorted(studies)
        gaps = "" if rs == list(range(rs[0], rs[0] + len(rs))) else "  (studies not contiguous)"
        print(
            false_flag_summary(key, [studies[r] for r in rs]) + f"  studies {rs[0]}-{rs[-1]}{gaps}"
        )


def cell_reps(n_ann: int, reps: int) -> int:
    """Studies per cell in the grid: at least ``reps``, and at least 40 honest annotators
    per cell, so one false flag is not 10% of a cell."""
    return max(reps, math.ceil(40 / max(1, n_ann - (n_ann - 1) // 2)))


def paper_f1(reps: int, seed: int) -> list[tuple[str, float, float, float, float]]:
    rows = []
    for name in ("random", "equal", "flip", "mixed"):
        for ratio in (0.1, 0.2, 0.3, 0.4):
            f0: list[float] = []
            f5: list[float] = []
            fd: list[float] = []
            for r in range(reps):
                gen = np.random.default_rng([seed, r, int(ratio * 10)])
                sim = simulate_arena(n_annotators=42, records_per_annotator=100, rng=gen)
                ids = gen.choice(42, size=round(ratio * 42), replace=False)
                pv = perturb_votes(sim, ids, strategy=name, rng=gen)
                args = (sim.model_a, sim.model_b, sim.annotator, pv.outcome)
                for eps, acc in ((0.0, f0), (0.005, f5), (None, fd)):
                    kw = {"delta": 0, "epsilon": eps} if eps is not None else {}
                    res = stable_arena(*args, n_annotators=42, **kw)  # type: ignore[arg-type]
                    acc.append(
                        detection_scores(pv.perturbed, np.asarray(res.status) == "flagged")[2]
                    )
            rows.append((name, ratio, float(np.mean(f0)), float(np.mean(f5)), float(np.mean(fd))))
    return rows


def honest_p_values(n_ann: int, votes: int, sd: float, studies: int) -> str:
    """The predictive ``random`` test's validity in honest-only studies: every p-value of
    the studies where the final fit ran the predictive test, pooled, against the uniform
    (``scipy.stats.kstest``; one-sided ``alternative="greater"``: p-values too small,
    which is what would break Benjamini-Hochberg), the share below 0.05 and 0.01, which
    fit each study's ``random`` test used (predictive, log-scale, none) and the honest
    annotators flagged for any reason. Study ``r`` draws from
    ``default_rng([crc32("unif-A-V-SD"), r])``."""
    from scipy.stats import kstest

    pooled: list[np.ndarray] = []
    kinds = {"predictive": 0, "log-scale": 0, "none": 0}
    flagged = 0
    for r in range(studies):
        gen = np.random.default_rng([zlib.crc32(f"unif-{n_ann}-{votes}-{sd}".encode()), r])
        n_models = min(20, max(4, n_ann * votes // 15))
        sim = simulate_arena(
            n_models=n_models, n_annotators=n_ann, records_per_annotator=votes,
            discrimination_sd=sd, rng=gen,
        )  # fmt: skip
        res = stable_arena(
            sim.model_a, sim.model_b, sim.annotator, sim.outcome,
            n_models=n_models, n_annotators=n_ann,
        )  # fmt: skip
        flagged += int((np.asarray(res.status) == "flagged").sum())
        if not res.random_test:
            continue
        kinds[{"median": "none"}.get(res.random_test, res.random_test)] += 1
        if res.random_test == "predictive":
            p = res.random_p_values
            pooled.append(p[~np.isnan(p)])
    head = f"{n_ann:>4} x {votes:>3} sd {sd:.1f}: fits {kinds}; "
    if not pooled:
        return head + f"no predictive p-values; flagged {flagged} of {n_ann * studies}"
    allp = np.concatenate(pooled)
    two = kstest(allp, "uniform").pvalue
    one = kstest(allp, "uniform", alternative="greater").pvalue
    return head + (
        f"{allp.size} p-values, KS p two-sided {two:.3f}, one-sided (too small) {one:.3f}; "
        f"share < 0.05 {np.mean(allp < 0.05):.3f}, < 0.01 {np.mean(allp < 0.01):.3f}; "
        f"flagged (any reason) {flagged} of {n_ann * studies}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one study per cell, fewer sizes")
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--annotators", type=int, nargs="+", default=[3, 20, 42, 200])
    p.add_argument("--votes", type=int, nargs="+", default=None)
    p.add_argument("--sds", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    p.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=list(STRATEGIES))
    p.add_argument("--ratios", type=float, nargs="+", default=None)
    p.add_argument("--no-paper", action="store_true", help="skip the paper F1 table")
    p.add_argument("--paper-only", action="store_true", help="only the paper F1 table")
    p.add_argument("--why", action="store_true", help="print false-flag reasons and misses")
    p.add_argument(
        "--gold",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of each annotator's votes on gold items (their clearest battles), "
        # argparse %-formats help: the percent sign of 70% is written %%
        f"tested against {GOLD_THRESHOLD * 100:.0f}%% accuracy and passed as evidence (default 0)",
    )
    p.add_argument(
        "--no-settle",
        action="store_true",
        help="stable_arena(settle_direction=False): the median annotator's orientation, "
        "without waiting for a settled direction (the rule before it)",
    )
    p.add_argument(
        "--count-only",
        action="store_true",
        help="settle the direction by the significance count alone, without the mixture "
        "of the annotators' scores (ranking.arena._MIXTURE_DIRECTION = False; the rule "
        "before it)",
    )
    p.add_argument(
        "--tie-test",
        choices=("union", "fisher", "off"),
        default=None,
        help="how the tie test enters the random verdict (ranking.arena._TIE_TEST; default "
        "the library's; off: the rule before it)",
    )
    p.add_argument(
        "--honest-max-noise",
        type=float,
        default=None,
        metavar="X",
        help="median se/theta of the clear annotators at or above which the random test has "
        "no honest-ability fit (ranking.arena._HONEST_MAX_NOISE, default 0.5)",
    )
    p.add_argument(
        "--predictive-max-noise",
        type=float,
        default=None,
        metavar="X",
        help="typical honest annotator's noise (median se of the clear annotators over "
        "exp(mu)) below which the random test is the predictive one "
        "(ranking.arena._PREDICTIVE_MAX_NOISE, default 0.7)",
    )
    p.add_argument(
        "--se-at-ability",
        action="store_true",
        help="the predictive random test reads each annotator's standard error at the honest "
        "ability it is compared with (ranking.arena._SE_AT_ABILITY = True; off by default)",
    )
    p.add_argument(
        "--tie-rates",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        default=None,
        help="each annotator's tie propensity uniform in [LO, HI] (default: 0.3 for all)",
    )
    p.add_argument(
        "--cells",
        nargs="+",
        metavar="KEY",
        help="run only these cells (annotators-votes-sd10-strategy-percent, e.g. "
        "20-100-10-left100-10, as the grid seeds them) and print each one's false-flag rate "
        "with its exact 95%% interval",
    )
    p.add_argument(
        "--studies",
        type=int,
        default=None,
        help="with --cells: studies per cell (default the grid's own count for --reps)",
    )
    p.add_argument(
        "--first-study",
        type=int,
        default=0,
        help="with --cells: index of the first study (study r of a cell always has the same "
        "seed, so 0 repeats the grid's studies and continues them)",
    )
    p.add_argument(
        "--honest-p",
        type=int,
        default=None,
        metavar="STUDIES",
        help="honest-only studies (--annotators x --votes x --sds, STUDIES each): are the "
        "predictive random test's p-values uniform? (KS; no grid)",
    )
    p.add_argument("--log", help="with --cells: append each study's counts to this JSON-lines file")
    p.add_argument(
        "--summarize",
        nargs="+",
        metavar="LOG",
        help="print the false-flag table of --log files and exit (no runs)",
    )
    p.add_argument(
        "--old-random",
        action="store_true",
        help="the earlier random test: theta significantly below the threshold, the honest "
        "abilities fitted on the log scale (ranking.arena._RANDOM_PREDICTIVE = False)",
    )
    args = p.parse_args()
    if args.tie_rates is not None:
        args.tie_rates = (float(args.tie_rates[0]), float(args.tie_rates[1]))
    if args.tie_test is not None:
        import ranking.arena

        ranking.arena._TIE_TEST = args.tie_test
    if args.honest_max_noise is not None:
        import ranking.arena

        ranking.arena._HONEST_MAX_NOISE = args.honest_max_noise
    if args.predictive_max_noise is not None:
        import ranking.arena

        ranking.arena._PREDICTIVE_MAX_NOISE = args.predictive_max_noise
    if args.se_at_ability:
        import ranking.arena

        ranking.arena._SE_AT_ABILITY = True
    if args.old_random:
        import ranking.arena

        ranking.arena._RANDOM_PREDICTIVE = False
    if args.summarize:
        summarize(args.summarize)
        return
    if args.honest_p:
        print(f"load average {os.getloadavg()[0]:.2f}")
        for n_ann in args.annotators:
            for votes in args.votes or (50, 100):
                for sd in args.sds:
                    print(honest_p_values(n_ann, votes, sd, args.honest_p), flush=True)
        return
    if args.count_only:
        import ranking.arena

        ranking.arena._MIXTURE_DIRECTION = False
    if args.cells:
        print(f"load average {os.getloadavg()[0]:.2f}; studies from {args.first_study}")
        run_cells(args)
        return
    reps = args.reps or (1 if args.quick else 3)
    if args.paper_only:
        print(f"load average {os.getloadavg()[0]:.2f}")
        print_paper(args.quick)
        return
    votes_grid = tuple(args.votes or ((10, 50, 200) if args.quick else (10, 25, 50, 100, 200)))
    ratios = tuple(args.ratios or ((0.1, 0.45) if args.quick else (0.1, 0.25, 0.45)))
    t0 = time.perf_counter()

    print(
        f"load average {os.getloadavg()[0]:.2f}; {reps} study(ies) per cell "
        f"({cell_reps(3, reps)} with 3 annotators)"
        + (f"; tie test {args.tie_test}" if args.tie_test else "")
        + (f"; honest max noise {args.honest_max_noise}" if args.honest_max_noise else "")
        + (
            f"; predictive max noise {args.predictive_max_noise}"
            if args.predictive_max_noise
            else ""
        )
        + (f"; tie rates uniform {args.tie_rates}" if args.tie_rates else "")
        + (f"; gold items: {args.gold:.0%} of each annotator's votes" if args.gold else "")
    )
    head = f"{'ann':>4} {'votes':>5} {'sd':>4} {'strategy':<9}"
    for ratio in ratios:
        head += f" | {int(ratio * 100):>2}%: {'ff':>5} {'rec':>5} {'pend':>5}"
    print(head + " | crash")
    worst_ff, worst_rec, crashes = 0.0, 1.0, 0
    by_strategy: dict[tuple[str, int], list[int]] = {}
    why: list[str] = []
    n_ff_cells = n_rec_cells = n_cells = n_rec_total = n_ff_sig = 0
    for n_ann in args.annotators:
        for votes in votes_grid:
            for sd in args.sds:
                for name in args.strategies:
                    line = f"{n_ann:>4} {votes:>5} {sd:>4.1f} {name:<9}"
                    cr = 0
                    for ratio in ratios:
                        # crc32, not hash(): str hashes change between processes
                        key = cell_key(n_ann, votes, sd, name, ratio)
                        seed = zlib.crc32(key.encode())
                        c = run_cell(
                            n_ann,
                            votes,
                            sd,
                            name,
                            ratio,
                            cell_reps(n_ann, reps),
                            seed,
                            args.gold,
                            not args.no_settle,
                            tie_rates=args.tie_rates,
                        )
                        ff = c.false_flags / c.honest if c.honest else float("nan")
                        rec = c.caught / c.eligible if c.eligible else float("nan")
                        pend = c.pending / c.annotators if c.annotators else float("nan")
                        cr += c.crashes
                        n_cells += 1
                        n_ff_cells += int(bool(c.honest) and ff > 0.05)
                        # above 5% beyond noise: one-sided exact binomial p < 0.05
                        n_ff_sig += int(
                            bool(c.honest) and binom.sf(c.false_flags - 1, c.honest, 0.05) < 0.05
                        )
                        if c.eligible and votes >= 50:
                            n_rec_total += 1
                            n_rec_cells += int(rec < 0.9)
                        if args.why and (c.ff_reasons or c.miss_status):
                            why.append(
                                f"{n_ann:>4} {votes:>5} {sd:>4.1f} {name:<9} {int(ratio * 100)}%: "
                                f"false flags {c.ff_reasons} missed {c.miss_status}"
                            )
                        if c.honest:
                            worst_ff = max(worst_ff, ff)
                        if c.eligible and votes >= 50:
                            worst_rec = min(worst_rec, rec)
                        acc = by_strategy.setdefault((name, votes), [0, 0, 0, 0])
                        acc[0] += c.caught
                        acc[1] += c.eligible
                        acc[2] += c.false_flags
                        acc[3] += c.honest
                        rec_s = f"{rec:5.2f}" if c.eligible else "    -"
                        line += f" |      {ff:5.3f} {rec_s} {pend:5.2f}"
                    crashes += cr
                    print(line + f" | {cr}", flush=True)
    print()
    print("recall / false-flag rate by strategy and votes (all cells pooled)")
    print(f"{'strategy':<9}" + "".join(f" | {v:>3} votes: rec   ff  " for v in votes_grid))
    for name in args.strategies:
        line = f"{name:<9}"
        for v in votes_grid:
            cau, eli, fal, hon = by_strategy[(name, v)]
            rec_s = f"{cau / eli:5.2f}" if eli else "    -"
            line += f" |            {rec_s} {fal / max(hon, 1):5.3f}"
        print(line)
    for v in votes_grid:
        tot = np.sum([by_strategy[(name, v)] for name in args.strategies], axis=0)
        print(
            f"{v} votes, all strategies: caught {tot[0]} of {tot[1]}, "
            f"false flags {tot[2]} of {tot[3]}"
        )
    print()
    print(
        f"worst false-flag rate {worst_ff:.3f} (target <= 0.05); worst recall at >= 50 votes "
        f"{worst_rec:.2f} (target >= 0.9); crashes {crashes} (target 0)"
    )
    print(
        f"cells with ff > 0.05: {n_ff_cells} of {n_cells} ({n_ff_sig} significantly, one-sided "
        f"exact binomial p < 0.05 given the cell's honest count); cells with recall < 0.9 at "
        f">= 50 votes: {n_rec_cells} of {n_rec_total}"
    )
    if why:
        print()
        print("false flags of honest annotators by reason, missed perturbed ones by status")
        print("\n".join(why))
    if args.no_paper:
        print(f"({time.perf_counter() - t0:.0f} s)")
        return
    print_paper(args.quick)
    print(f"({time.perf_counter() - t0:.0f} s)")


def print_paper(quick: bool) -> None:
    """The paper's sec. 5.5 F1 table (5 studies per row, 2 with ``--quick``)."""
    print()
    print("paper sec. 5.5 detection F1 (42 annotators, 100 votes, delta = 0 for fixed epsilon)")
    print(f"{'strategy':<8} {'ratio':>5} {'eps=0':>6} {'0.005':>6} {'test':>6}")
    for name, ratio, f0, f5, fd in paper_f1(2 if quick else 5, seed=5):
        print(f"{name:<8} {ratio:5.1f} {f0:6.3f} {f5:6.3f} {fd:6.3f}", flush=True)


if __name__ == "__main__":
    main()
