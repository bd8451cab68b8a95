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

Run: ``.venv/bin/python benchmarks/bench_flags_bounds.py`` (a minute or two;
``--ties-only`` for section 3 alone).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib

import numpy as np
from scipy.stats import norm

from ranking.pairwise import ELO_C
from ranking.reliability import adjust_p_values

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_flags import draw_study  # the grid's own studies


def direction_failure(
    n_ann: int, votes: int, sd: float, name: str, ratio: float, reps: int
) -> float:
    """Share of bench_flags' studies in which the annotator count points the wrong way."""
    key = f"{n_ann}-{votes}-{int(sd * 10)}-{name}-{int(ratio * 100)}"
    seed = zlib.crc32(key.encode())
    fail = 0.0
    for r in range(reps):
        sim, pv, _ = draw_study(
            n_ann, votes, sd, ratio, np.random.default_rng([seed, r]), strategy=name
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
    args = p.parse_args()
    t0 = time.perf_counter()
    print(f"load average {os.getloadavg()[0]:.2f}")
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


if __name__ == "__main__":
    main()
