"""What no verdict rule can beat on bench_flags' simulated studies (issue 10).

Two oracles, each given more than any rule sees, bound the targets of
``benchmarks/bench_flags.py`` from above:

1. **Direction.** The am-ELO likelihood is unchanged when the ranking is reversed and every
   ability negated (ratings mirrored), so which way the ranking points is decided by
   counting annotators: the side most annotators vote with is the honest one. This oracle
   knows the *true* ranking up to its direction and counts annotators whose net agreement
   with it (agreeing minus disagreeing decisive votes) is positive against those for whom
   it is negative; it fails when the honest side does not win that count (an even split
   counts as half a failure). When the direction is wrong every honest annotator looks
   adversarial, so the false-flag rate of any counting rule is at least about this
   failure rate. It is printed per cell for the studies bench_flags simulates (same seeds).

2. **Detection.** A Neyman-Pearson test of one annotator's votes, with the true ratings
   and the exact vote distributions of an honest annotator (Davidson ties, discrimination
   lognormal with the cell's sd, through its draws) and of the perturbed one known: the
   likelihood ratio at discrimination 1, thresholded at the 95% quantile of honest
   annotators' ratios (5% false flags per annotator, no adjustment across annotators).
   No rule with at most 5% false flags can have a higher recall against that perturbation.

3. **Ties without the tie rate.** Real annotators differ in how often they tie, so a rule
   may not flag on the tie rate alone; section 2's NP oracle knows the honest tie rate
   (0.3). Here honest annotators each have their own tie propensity, uniform in
   [0.05, 0.5], and three numbers per cell show what ties carry once the rate is not
   used: ``tie`` the recall at 5% (unadjusted, no BH) of the tie test of ``stable_arena``
   (rank-sum of the annotator's ties against its decisive votes on the *true* gap:
   ``ranking.arena._tie_gap_z``); ``NPff`` the share of these honest annotators that
   section 2's fixed-rate NP test flags (its threshold set at rate 0.3); ``NPrf`` the recall
   of a rate-free NP oracle: the likelihood ratio with the tie rate and the
   discrimination profiled out (maximised over a grid) under both the honest and the
   perturbed model, thresholded at these honest annotators' 95% quantile.

4. **The gap** (``--gap``): for every cell of bench_flags' grid with at least 50 votes (20,
   42 and 200 annotators; 50, 100, 200 votes; sd 0, 0.5, 1.0; every strategy; 10, 25, 45%),
   ``stable_arena``'s recall over the cell's own studies (bench_flags' seeds; about
   ``--target`` perturbed annotators per cell, at least ``--least`` studies; its standard
   error over studies, which counts the studies' clustering) beside the oracles *of that
   cell*: the oracle test (the score with the true ratings for random, flip, mixed and
   against voters, the decisive-vote count for equal ones, the exact binomial test of the
   left share for position-biased ones, of the fast share for too-fast ones) with
   p-values from its exact honest null at each vote count, adjusted by Benjamini-Hochberg
   at 0.05 over the cell's own annotators and perturbed count (``BH``, 400 simulated
   studies); the unadjusted oracle at 5% (``unadj``; Neyman-Pearson for the outcome
   perturbations); the direction oracle of section 1 on the cell's own studies (at least
   100; ``dirF``); and ``bound = (1 - dirF) BH``. Each cell below 0.9 is classed: (i)
   ``BH < 0.9``, out of reach under the issue's rules even with the true ratings; (i-dir)
   ``BH >= 0.9`` but ``bound < 0.9``, the direction counted one annotator at a time fails
   too often (a heuristic bound: a rule that settles the direction better could do more);
   (ii) ``bound >= 0.9``, reachable and missed by the fitted test. ``--jobs N`` runs cells
   in N processes, ``--json`` keeps the rows. The whole grid is about 25 minutes of CPU.

Run: ``.venv/bin/python benchmarks/bench_flags_bounds.py`` (sections 1-3, a minute or two;
``--ties-only`` for section 3 alone; ``--gap [--jobs 2]`` for section 4 alone).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import time
import zlib
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from ranking.pairwise import ELO_C
from ranking.reliability import adjust_p_values

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_flags import STRATEGIES, draw_study  # the grid's own studies


def direction_failure(
    n_ann: int, votes: int, sd: float, name: str, ratio: float, reps: int
) -> float:
    """Share of bench_flags' studies in which the annotator count points the wrong way."""
    key = f"{n_ann}-{votes}-{int(sd * 10)}-{name}-{int(ratio * 100)}"
    seed = zlib.crc32(key.encode())
    fail = 0.0
    spec = STRATEGIES[name]
    for r in range(reps):
        sim, pv, _ = draw_study(
            n_ann,
            votes,
            sd,
            ratio,
            np.random.default_rng([seed, r]),
            strategy=str(spec["strategy"]),
            left_share=float(spec.get("left_share", 1.0)),
        )
        ls = sim.true_ratings
        w, a, b, k = pv.outcome, sim.model_a, sim.model_b, sim.annotator
        agree = np.sign(w - 0.5) * np.sign(ls[a] - ls[b])
        net = np.bincount(k, weights=agree, minlength=n_ann)
        pos, neg = int((net > 0).sum()), int((net < 0).sum())
        fail += 1.0 if pos < neg else (0.5 if pos == neg else 0.0)
    return fail / reps


def _probs(g: np.ndarray, d: np.ndarray, tie_rate: float = 0.3) -> np.ndarray:
    nu = 2 * tie_rate / (1 - tie_rate)
    h = 0.5 * g * ELO_C * d
    pa, pb = np.exp(h), np.exp(-h)
    t = pa + pb + nu
    return np.stack([pb / t, np.full_like(d, nu) / t, pa / t], -1)  # outcome 0, 0.5, 1


def _perturb(p: np.ndarray, name: str) -> np.ndarray:
    p0, pt, p1 = p[..., 0], p[..., 1], p[..., 2]
    rnd = np.stack([(pt + p1) / 2, (p0 + p1) / 2, (p0 + pt) / 2], -1)
    eq = np.stack([0 * p0, 1 + 0 * p0, 0 * p0], -1)
    fl = np.stack([p1, pt, p0], -1)
    return {"random": rnd, "flip": fl, "mixed": (rnd + eq + fl) / 3}[name]


def _gaps(gen: np.random.Generator, reps: int, n: int) -> np.ndarray:
    """Rating differences of ``reps`` x ``n`` battles between two distinct models of 20 drawn
    at random, the ratings 120 times the normal quantiles (the oracles' arena)."""
    n_models = 20
    r = 120.0 * norm.ppf((np.arange(n_models) + 0.5) / n_models)
    a = gen.integers(0, n_models, (reps, n))
    b = (a + gen.integers(1, n_models, (reps, n))) % n_models
    out: np.ndarray = r[a] - r[b]
    return out


def np_recall(
    n: int, name: str, sd: float, reps: int = 20_000, seed: int = 0
) -> tuple[float, float, float]:
    """Recall at 5% false flags, ``n`` votes per annotator, of the Neyman-Pearson oracle and
    of the oracle ability score (true ratings known, ties as half a win), and of that score
    with Benjamini-Hochberg across 42 annotators of whom 10 are perturbed."""
    gen = np.random.default_rng(seed)
    d = _gaps(gen, reps, n)
    ph = _probs(np.ones(1), d)
    pp = _perturb(ph, name)
    g = np.exp(sd * gen.standard_normal((reps, 1)))

    def draw(p: np.ndarray) -> np.ndarray:
        u = gen.random(d.shape)[..., None]
        return (u > np.cumsum(p, -1)).sum(-1).clip(0, 2)

    def llr(y: np.ndarray) -> np.ndarray:
        idx = y[..., None]
        lp = np.log(np.take_along_axis(pp, idx, -1)) - np.log(np.take_along_axis(ph, idx, -1))
        return lp[..., 0].sum(-1)

    yh, yq = draw(_probs(g, d)), draw(_perturb(_probs(g, d), name))
    lh, lq = llr(yh), llr(yq)
    np_rec = float((lq > np.quantile(lh, 0.95)).mean())
    # the score of the ability model (ties count half): U = sum x (w - 1/2), low when the
    # annotator votes against the ranking; flagged below the 5% quantile of honest ones
    x = ELO_C * d
    uh, uq = (x * (yh / 2.0 - 0.5)).sum(-1), (x * (yq / 2.0 - 0.5)).sum(-1)
    sc_rec = float((uq < np.quantile(uh, 0.05)).mean())
    # the same score with the flags adjusted across the annotators of a study as
    # stable_arena does (Benjamini-Hochberg at 0.05): 42 annotators, 10 of them perturbed
    srt = np.sort(uh)
    caught = 0
    for _ in range(400):
        u = np.concatenate([gen.choice(uh, 32), gen.choice(uq, 10)])
        pv = (np.searchsorted(srt, u, side="right") + 1) / (srt.size + 1)
        caught += int(adjust_p_values(pv, method="bh")[32:].__le__(0.05).sum())
    return np_rec, sc_rec, caught / 4000


def tie_oracle(n: int, name: str, sd: float, reps: int = 4000, seed: int = 1) -> tuple[float, ...]:
    """Section 3: ``(tie, NPff, NPrf)`` at ``n`` votes (see the module docstring)."""
    from scipy.stats import rankdata

    gen = np.random.default_rng(seed)
    d = _gaps(gen, reps, n)
    g = np.exp(sd * gen.standard_normal((reps, 1)))
    rate = gen.uniform(0.05, 0.5, (reps, 1))

    def probs(gg: np.ndarray, nu: np.ndarray | float) -> np.ndarray:
        h = 0.5 * gg * ELO_C * d
        pa, pb = np.exp(h), np.exp(-h)
        t = pa + pb + nu
        return np.stack([pb / t, nu / t + 0.0 * h, pa / t], -1)

    def draw(p: np.ndarray) -> np.ndarray:
        u = gen.random(d.shape)[..., None]
        return (u > np.cumsum(p, -1)).sum(-1).clip(0, 2)

    def ll(y: np.ndarray, p: np.ndarray) -> np.ndarray:
        return np.log(np.take_along_axis(p, y[..., None], -1))[..., 0].sum(-1)

    def tie_z(y: np.ndarray) -> np.ndarray:
        s = (rankdata(np.abs(d), axis=1) - 0.5) / n
        t = (y == 1).astype(np.float64)
        nt = t.sum(1)
        sb = s.mean(1)
        var = nt * (n - nt) / (n * (n - 1)) * ((s - sb[:, None]) ** 2).sum(1)
        ok = (nt >= 5) & (n - nt >= 5) & (var > 0)
        return np.where(ok, ((s * t).sum(1) - nt * sb) / np.sqrt(np.maximum(var, 1e-300)), 0.0)

    nu_h = 2 * rate / (1 - rate)
    nu0 = 2 * 0.3 / 0.7
    yh = draw(probs(g, nu_h))
    yq = draw(_perturb(probs(g, nu0), name))
    tie = float((norm.sf(tie_z(yq)) <= 0.05).mean())
    # section 2's fixed-rate NP statistic, thresholded at honest annotators of rate 0.3
    y30 = draw(probs(g, nu0))
    one = np.ones((reps, 1))

    def fixed(y: np.ndarray) -> np.ndarray:
        return ll(y, _perturb(probs(one, nu0), name)) - ll(y, probs(one, nu0))

    np_ff = float((fixed(yh) > np.quantile(fixed(y30), 0.95)).mean())
    rates = np.linspace(0.02, 0.8, 25)
    gs = np.exp(np.linspace(np.log(0.03), np.log(4.0), 16))

    def profiled(y: np.ndarray) -> np.ndarray:
        lq = np.full(reps, -np.inf)
        lh = np.full(reps, -np.inf)
        for q in rates:
            nu = 2 * q / (1 - q)
            for gg in gs:
                p = probs(np.full((reps, 1), gg), nu)
                lq = np.maximum(lq, ll(y, _perturb(p, name)))
                lh = np.maximum(lh, ll(y, p))
        return lq - lh

    np_rf = float((profiled(yq) > np.quantile(profiled(yh), 0.95)).mean())
    return tie, np_ff, np_rf


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=40, help="studies per cell for the direction")
    p.add_argument("--ties-only", action="store_true", help="section 3 only")
    p.add_argument(
        "--gap",
        action="store_true",
        help="section 4 only: every cell with >= 50 votes, stable_arena's recall beside the "
        "oracles, each cell below 0.9 classed out of reach (i) or missed (ii)",
    )
    p.add_argument("--annotators", type=int, nargs="+", default=list(GAP_ANNOTATORS))
    p.add_argument("--votes", type=int, nargs="+", default=list(GAP_VOTES))
    p.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=list(STRATEGIES))
    p.add_argument(
        "--target", type=int, default=200, help="--gap: perturbed annotators per cell (about)"
    )
    p.add_argument("--least", type=int, default=10, help="--gap: studies per cell, at least")
    p.add_argument("--jobs", type=int, default=1, help="--gap: worker processes")
    p.add_argument("--json", help="--gap: write the rows to this JSON file")
    p.add_argument(
        "--se-at-ability",
        action="store_true",
        help="--gap: the random test's errors at the honest abilities "
        "(ranking.arena._SE_AT_ABILITY = True; off by default)",
    )
    args = p.parse_args()
    t0 = time.perf_counter()
    print(f"load average {os.getloadavg()[0]:.2f}")
    if args.gap:
        if args.se_at_ability:
            import ranking.arena

            ranking.arena._SE_AT_ABILITY = True
        print_gap(args)
        print(f"({time.perf_counter() - t0:.0f} s; load average {os.getloadavg()[0]:.2f})")
        return
    if args.ties_only:
        print_ties()
        print(f"({time.perf_counter() - t0:.0f} s)")
        return
    print()
    print("1. direction oracle (true ranking up to its direction, annotators counted): share of")
    print(f"   studies it gets wrong, {args.reps} studies per cell, the first ones of bench_flags")
    print(f"{'ann':>4} {'votes':>5} {'sd':>4} {'strategy':<8} {'45%':>6} {'25%':>6}")
    for n_ann in (20, 42, 200):
        for votes in (10, 25, 50, 100, 200):
            for sd in (0.0, 0.5, 1.0):
                for name in ("against", "flip"):
                    f45 = direction_failure(n_ann, votes, sd, name, 0.45, args.reps)
                    f25 = direction_failure(n_ann, votes, sd, name, 0.25, args.reps)
                    print(f"{n_ann:>4} {votes:>5} {sd:>4.1f} {name:<8} {f45:6.3f} {f25:6.3f}")
    print()
    print("2. oracle recall at 5% false flags per annotator (no adjustment across annotators):")
    print("   NP = Neyman-Pearson likelihood ratio (uses how ties move), score = the ability")
    print("   model's score with the true ratings (ties count half, as in am-ELO), BH = that")
    print("   score's p-values adjusted by Benjamini-Hochberg over 42 annotators, 10 perturbed")
    votes = (25, 50, 100, 200)
    print(
        f"{'strategy':<8} {'sd':>4} "
        + " ".join(f"{f'NP {v}':>7}" for v in votes)
        + " "
        + " ".join(f"{f'sc {v}':>7}" for v in votes)
        + " "
        + " ".join(f"{f'BH {v}':>7}" for v in votes)
    )
    for name in ("random", "mixed", "flip"):
        for sd in (0.0, 0.5, 1.0):
            rec = [np_recall(v, name, sd) for v in votes]
            print(
                f"{name:<8} {sd:>4.1f} "
                + " ".join(f"{r[0]:7.3f}" for r in rec)
                + " "
                + " ".join(f"{r[1]:7.3f}" for r in rec)
                + " "
                + " ".join(f"{r[2]:7.3f}" for r in rec)
            )
    print_ties()
    print(f"({time.perf_counter() - t0:.0f} s)")


def print_ties() -> None:
    """Section 3's table."""
    print()
    print("3. ties without the tie rate: honest tie propensity uniform in [0.05, 0.5];")
    print("   tie = the tie test's recall at 5% (true gaps, unadjusted), NPff = false flags of")
    print("   section 2's fixed-rate NP on these honest annotators, NPrf = recall of the NP")
    print("   oracle with tie rate and discrimination profiled out (4,000 annotators per cell)")
    votes = (50, 100)
    print(
        f"{'strategy':<8} {'sd':>4} "
        + " ".join(f"{f'{c} {v}':>8}" for c in ("tie", "NPff", "NPrf") for v in votes)
    )
    for name in ("random", "mixed", "flip"):
        for sd in (0.0, 0.5, 1.0):
            res = [tie_oracle(v, name, sd) for v in votes]
            print(
                f"{name:<8} {sd:>4.1f} "
                + " ".join(f"{res[i][c]:8.3f}" for c in range(3) for i in range(len(votes))),
                flush=True,
            )


# ---------------------------------------------------------------------------
# 4. --gap: the fitted recall of stable_arena beside the oracles, cell by cell
# ---------------------------------------------------------------------------

GAP_ANNOTATORS = (20, 42, 200)
GAP_VOTES = (50, 100, 200)
GAP_SDS = (0.0, 0.5, 1.0)
GAP_RATIOS = (0.1, 0.25, 0.45)
_TIE = 0.3  # simulate_arena's default tie rate
_FAST_HONEST, _FAST_PERTURBED = 0.02, 0.8  # perturb_votes' defaults


def n_perturbed(n_ann: int, ratio: float) -> int:
    """Perturbed annotators of a cell, as ``bench_flags.draw_study`` chooses them."""
    return min(max(1, round(ratio * n_ann)), (n_ann - 1) // 2)


def _count_range(votes: int) -> tuple[int, int]:
    """Votes per annotator are uniform on these integers (``simulate_arena``)."""
    lo = max(1, round(0.8 * votes))
    return lo, max(lo, round(1.2 * votes))


def _vote_probs(name: str, ph: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Outcome probabilities (0, tie, 1) of a ``name`` voter whose honest ones are ``ph``."""
    if name == "against":  # always the lower-rated item, never a tie
        lower_b = (d > 0).astype(np.float64)
        return np.stack([lower_b, 0.0 * d, 1.0 - lower_b], -1)
    if name == "equal":
        return np.stack([0.0 * d, 1.0 + 0.0 * d, 0.0 * d], -1)
    if name in ("random", "flip", "mixed"):
        return _perturb(ph, name)
    return ph  # position-biased and too-fast voters keep their outcomes here


@dataclass
class _Pool:
    """Per-annotator oracle statistics of ``size`` simulated annotators for every vote count
    of a cell: ``score`` (the ability score with the true ratings, ties half; low = against
    the ranking), ``llr`` (the Neyman-Pearson log-likelihood ratio, perturbed against honest
    at discrimination 1, tie rate 0.3) and ``decisive`` (non-tie votes)."""

    score: dict[int, np.ndarray]
    llr: dict[int, np.ndarray]
    decisive: dict[int, np.ndarray]


@functools.lru_cache(maxsize=16)
def _pool(votes: int, sd: float, name: str, honest: bool, size: int, seed: int) -> _Pool:
    """Annotators drawn as ``simulate_arena`` draws them (gaps of 20 models 120 Elo apart in
    normal quantiles, discrimination lognormal with sd ``sd``, Davidson ties at 0.3), honest
    or perturbed by ``name``, ``size`` of them for each vote count of the cell."""
    gen = np.random.default_rng([seed, votes, int(sd * 10), zlib.crc32(name.encode()), honest])
    lo, hi = _count_range(votes)
    out = _Pool({}, {}, {})
    # the NP statistic's perturbed model; position and fast voters have none (their oracle
    # is the binomial test of their left or fast votes)
    np_name = name if name in ("random", "flip", "mixed", "against", "equal") else "random"
    for c in range(lo, hi + 1):
        d = _gaps(gen, size, c)
        g = np.exp(sd * gen.standard_normal((size, 1)))
        p = _probs(g, d)
        if not honest:
            p = _vote_probs(name, p, d)
        u = gen.random(d.shape)[..., None]
        y = (u > np.cumsum(p, -1)).sum(-1).clip(0, 2)
        out.score[c] = (ELO_C * d * (y / 2.0 - 0.5)).sum(-1)
        ph1 = _probs(np.ones(1), d)
        pp1 = _vote_probs(np_name, ph1, d)
        idx = y[..., None]
        with np.errstate(divide="ignore"):
            lr = np.log(np.take_along_axis(pp1, idx, -1)) - np.log(np.take_along_axis(ph1, idx, -1))
        out.llr[c] = lr[..., 0].sum(-1)
        out.decisive[c] = (y != 1).sum(-1)
    return out


def _bh_reject(p: np.ndarray, q: float = 0.05) -> np.ndarray:
    """Benjamini-Hochberg at ``q`` on each row of ``p`` (studies x annotators): rejected
    entries, as ``adjust_p_values(row, method="bh") <= q``."""
    m = p.shape[1]
    srt = np.sort(p, axis=1)
    ok = srt <= q * np.arange(1, m + 1) / m
    last = np.where(ok.any(1), m - 1 - np.argmax(ok[:, ::-1], axis=1), -1)
    cut = np.where(last >= 0, srt[np.arange(p.shape[0]), np.maximum(last, 0)], -1.0)
    out: np.ndarray = p <= cut[:, None]
    return out


def oracle_cell(
    n_ann: int, votes: int, sd: float, name: str, ratio: float, studies: int = 400
) -> tuple[float, float]:
    """``(BH, unadjusted)`` oracle recall of a cell at 5% false flags. ``BH``: the oracle test
    with the true ratings, p-values from the exact honest null at the annotator's vote count,
    adjusted by Benjamini-Hochberg at 0.05 over the cell's ``n_ann`` annotators of whom
    ``n_perturbed`` are perturbed (as ``stable_arena`` adjusts each test), over ``studies``
    simulated studies; ``unadjusted``: the per-annotator test at 5% (for random, flip,
    mixed, against and equal voters the Neyman-Pearson test of section 2, which also uses
    the tie rate; for position and fast voters their binomial test). The oracle test is the
    ability score (random, flip, mixed, against, equal), the exact two-sided binomial test
    of the left share of decisive votes (left80, left100: ``stable_arena``'s own test) or
    the one-sided binomial test of the fast share against the honest 2% (too_fast)."""
    from scipy.stats import binom

    n_p = n_perturbed(n_ann, ratio)
    lo, hi = _count_range(votes)
    gen = np.random.default_rng([zlib.crc32(f"gap-{n_ann}-{votes}-{sd}-{name}-{ratio}".encode())])
    counts = gen.integers(lo, hi + 1, (studies, n_ann))
    pert = np.zeros((studies, n_ann), dtype=bool)
    pert[:, :n_p] = True
    size = 2000
    hon_null = _pool(votes, sd, "honest", True, size, 11)
    hon = _pool(votes, sd, "honest", True, size, 12)  # the studies' honest annotators
    pick = gen.integers(0, size, (studies, n_ann))
    if name in ("left80", "left100", "too_fast"):
        if name == "too_fast":
            n_all = counts
            k = gen.binomial(n_all, np.where(pert, _FAST_PERTURBED, _FAST_HONEST))
            pv = binom.sf(k - 1, n_all, _FAST_HONEST)
        else:
            share = 0.8 if name == "left80" else 1.0
            n_dec = np.empty_like(counts)
            for c in range(lo, hi + 1):
                at = counts == c
                n_dec[at] = hon.decisive[c][pick[at]]
            k = gen.binomial(n_dec, np.where(pert, share, 0.5))
            low = np.minimum(k, n_dec - k)
            pv = np.where(k * 2 == n_dec, 1.0, np.minimum(1.0, 2.0 * binom.cdf(low, n_dec, 0.5)))
            pv = np.where(n_dec > 0, pv, 1.0)
        rej = _bh_reject(pv)
        return float(rej[pert].mean()), float((pv[pert] <= 0.05).mean())
    per = _pool(votes, sd, name, False, size, 13)
    pv = np.empty(counts.shape)
    unadj = np.empty(counts.shape, dtype=bool)
    for c in range(lo, hi + 1):
        at = counts == c
        null = np.sort(hon_null.score[c])
        s = np.where(pert[at], per.score[c][pick[at]], hon.score[c][pick[at]])
        pv[at] = (np.searchsorted(null, s, side="right") + 1) / (null.size + 1)
        if name == "equal":  # all ties: the oracle counts decisive votes (few = flagged)
            null = np.sort(hon_null.decisive[c])
            s = np.where(pert[at], per.decisive[c][pick[at]], hon.decisive[c][pick[at]])
            pv[at] = (np.searchsorted(null, s, side="right") + 1) / (null.size + 1)
        lq = np.where(pert[at], per.llr[c][pick[at]], hon.llr[c][pick[at]])
        unadj[at] = lq > np.quantile(hon_null.llr[c], 0.95)
    rej = _bh_reject(pv)
    return float(rej[pert].mean()), float(unadj[pert].mean())


def _gap_cell(
    task: tuple[int, int, float, str, float, int],
) -> dict[str, float | int | str]:
    """One cell of ``--gap``: the fitted recall over ``studies`` of the cell's own studies
    (``bench_flags.run_study``, the grid's seeds), the direction oracle on the same studies
    and the score / binomial oracles."""
    from bench_flags import cell_key, run_study

    n_ann, votes, sd, name, ratio, studies = task
    key = cell_key(n_ann, votes, sd, name, ratio)
    seed = zlib.crc32(key.encode())
    t0 = time.process_time()
    caught, elig = np.zeros(studies), np.zeros(studies)
    ff = honest = crashes = 0
    for r in range(studies):
        one = run_study(n_ann, votes, sd, name, ratio, r, seed)
        caught[r], elig[r] = one.caught, one.eligible
        ff += one.false_flags
        honest += one.honest
        crashes += one.crashes
    t_fit = time.process_time() - t0
    # the direction oracle on the cell's own studies (drawn only, no fit): at least 100
    fail = direction_failure(n_ann, votes, sd, name, ratio, max(studies, 100))
    bh, unadj = oracle_cell(n_ann, votes, sd, name, ratio)
    n_e = elig.sum()
    rec = caught.sum() / n_e if n_e else float("nan")
    # standard error of a ratio over clustered studies (studies resampled, not annotators)
    se = (
        float(np.sqrt(((caught - rec * elig) ** 2).sum() * studies / max(studies - 1, 1)) / n_e)
        if n_e
        else float("nan")
    )
    return {
        "key": key, "n_ann": n_ann, "votes": votes, "sd": sd, "name": name, "ratio": ratio,
        "studies": studies, "eligible": int(n_e), "rec": float(rec), "se": se,
        "ff": ff / max(honest, 1), "crashes": crashes, "dir_fail": fail, "bh": bh,
        "unadj": unadj, "bound": (1.0 - fail) * bh, "cpu_fit": t_fit,
        "cpu_all": time.process_time() - t0,
    }  # fmt: skip


def gap_studies(n_ann: int, ratio: float, target: int, least: int) -> int:
    """Studies per cell for ``--gap``: about ``target`` perturbed annotators, at least
    ``least`` studies."""
    return max(least, math.ceil(target / n_perturbed(n_ann, ratio)))


def print_gap(args: argparse.Namespace) -> None:
    """``--gap``: every cell with at least 50 votes, its fitted recall beside the oracles and
    a class for each cell below 0.9."""
    # grouped by (votes, sd, strategy), whose simulated oracle annotators a process keeps
    tasks = [
        (n_ann, votes, sd, name, ratio, gap_studies(n_ann, ratio, args.target, args.least))
        for votes in args.votes
        for sd in GAP_SDS
        for name in args.strategies
        for n_ann in args.annotators
        for ratio in GAP_RATIOS
    ]
    print(
        f"{len(tasks)} cells; studies per cell max({args.least}, ceil({args.target} / "
        f"perturbed)); oracles from 400 simulated studies per cell, 2,000 simulated "
        f"annotators per vote count; {args.jobs} process(es)"
    )
    print(
        "rec = stable_arena's recall (perturbed with more than delta votes; se over studies), "
        "ff = its false-flag rate; BH = oracle recall at 5% with Benjamini-Hochberg over the "
        "cell's annotators; unadj = the unadjusted oracle at 5% (NP for random/flip/mixed/"
        "against/equal); dirF = share of the studies in which the direction oracle (true "
        "ranking up to its sign, annotators counted) points the wrong way; bound = (1 - dirF) "
        "BH (direction counted at least 100 studies). class: ok = rec >= 0.9; (i) BH < 0.9, "
        "no test under the issue's rules reaches 0.9 even knowing the true ratings; (i-dir) "
        "BH >= 0.9 but bound < 0.9: the counted direction fails too often; (ii) bound >= 0.9, "
        "the fitted test misses; '?' = rec within 2 se of 0.9"
    )
    head = (
        f"{'ann':>4} {'votes':>5} {'sd':>4} {'strategy':<9} {'pct':>3} {'stud':>4} "
        f"{'elig':>5} {'rec':>6} {'se':>5} {'ff':>6} | {'BH':>6} {'unadj':>6} {'dirF':>5} "
        f"{'bound':>6} | class"
    )
    print(head, flush=True)
    rows = []
    if args.jobs > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(args.jobs) as pool:
            it = pool.imap(_gap_cell, tasks)
            for row in it:
                rows.append(row)
                print(_gap_line(row), flush=True)
    else:
        for task in tasks:
            row = _gap_cell(task)
            rows.append(row)
            print(_gap_line(row), flush=True)
    rows.sort(
        key=lambda r: (
            r["n_ann"],
            r["votes"],
            r["sd"],
            list(STRATEGIES).index(str(r["name"])),
            r["ratio"],
        )
    )
    print()
    print("the same rows in grid order")
    print(head)
    for row in rows:
        print(_gap_line(row))
    counts: dict[str, int] = {}
    for row in rows:
        c = _gap_class(row)
        counts[c] = counts.get(c, 0) + 1
    print()
    print(
        "cells: "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        + f" (of {len(rows)}; crashes {sum(int(r['crashes']) for r in rows)}; "
        f"CPU of the fits {sum(float(r['cpu_fit']) for r in rows):.0f} s, "
        f"all {sum(float(r['cpu_all']) for r in rows):.0f} s)"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh)


def _gap_class(row: dict[str, float | int | str]) -> str:
    rec, bound = float(row["rec"]), float(row["bound"])
    if not row["eligible"]:
        return "none eligible"
    if rec >= 0.9:
        return "ok"
    if float(row["bh"]) < 0.9:
        return "(i)"
    return "(i-dir)" if bound < 0.9 else "(ii)"


def _gap_line(row: dict[str, float | int | str]) -> str:
    c = _gap_class(row)
    near = (
        "?"
        if c in ("(i)", "(i-dir)", "(ii)") and float(row["rec"]) + 2 * float(row["se"]) >= 0.9
        else ""
    )
    return (
        f"{row['n_ann']:>4} {row['votes']:>5} {float(row['sd']):>4.1f} {row['name']:<9} "
        f"{round(float(row['ratio']) * 100):>3} {row['studies']:>4} {row['eligible']:>5} "
        f"{float(row['rec']):6.3f} {float(row['se']):5.3f} {float(row['ff']):6.3f} | "
        f"{float(row['bh']):6.3f} {float(row['unadj']):6.3f} {float(row['dir_fail']):5.3f} "
        f"{float(row['bound']):6.3f} | {c}{near}"
    )


if __name__ == "__main__":
    main()
