"""Coverage of the m-ELO and am-ELO rating intervals with few votes per annotator (issue 10).

Simulates arena studies from known ratings (:func:`ranking.simulate_arena`: 20 models,
42 annotators, no ties, so that the Bradley-Terry ratings are the true ones) and counts
how often each model's 95% interval holds its true rating:

* m-ELO Wald intervals;
* am-ELO Wald intervals (maximum likelihood, and with the prior on abilities that
  :func:`ranking.stable_arena` uses), from the expected (Fisher) information, the
  default, and from the observed information (``am_elo(..., information="observed")``,
  rows "obs");
* the Wald intervals of :func:`ranking.stable_arena` (rows "bias-aware": the "+prior obs"
  intervals widened for the estimated scale bias of the ratings, the default of
  ``annotate rate --boot 0`` and of the monitor);
* am-ELO bias-corrected percentile intervals from the bootstrap over annotators
  (``stable_arena(..., intervals="bootstrap")``).

With heterogeneous annotators (``--sd``) the true ratings are put on the am-ELO scale of
an average annotator (multiplied by the mean true discrimination).

It also prints the mean scale of the am-ELO ratings against the truth (the least-squares
slope of estimated on true rating deviations; 1 is unbiased): with few votes per
annotator the maximum-likelihood abilities are biased (an incidental-parameter bias),
which the normalisation of eq. 7 turns into ratings spread too far, a bias no
covariance correction removes.

Run: ``.venv/bin/python benchmarks/bench_coverage.py`` (200 studies per size, 200
bootstrap resamples, as ``annotate rate`` draws by default) or ``--quick`` (60 studies, 50
resamples). Target: 0.93-0.97. Percentile intervals need enough resamples for their 2.5%
and 97.5% quantiles: with 100 the bootstrap covered 0.934 at 100 votes per annotator (400
studies), with 200 about 0.944 (80 studies).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ranking.arena import stable_arena
from ranking.pairwise import am_elo, m_elo
from ranking.simulation import simulate_arena


def coverage(
    n_studies: int, votes: int, n_boot: int, sd: float, seed: int
) -> tuple[dict[str, tuple[float, float, int]], float]:
    """Mean and worst-model coverage and number of fits per method; mean am-ELO scale."""
    names = ("m-ELO", "am-ELO", "am-ELO obs", "am-ELO+prior", "+prior obs", "bias-aware")
    hits: dict[str, list[np.ndarray]] = {k: [] for k in names}
    if n_boot:
        hits["am-ELO boot"] = []
    slopes: list[float] = []
    for i in range(n_studies):
        sim = simulate_arena(
            n_models=20,
            n_annotators=42,
            records_per_annotator=votes,
            tie_rate=0.0,
            discrimination_sd=sd,
            rng=seed + i,
        )
        args = (sim.model_a, sim.model_b, sim.annotator, sim.outcome)
        truth_m = sim.true_ratings
        truth = 1000.0 + (sim.true_ratings - 1000.0) * sim.true_discriminations.mean()
        f = m_elo(sim.model_a, sim.model_b, sim.outcome)
        hits["m-ELO"].append((f.lower <= truth_m) & (truth_m <= f.upper))
        for info, key in (("expected", "am-ELO"), ("observed", "am-ELO obs")):
            try:
                g = am_elo(*args, information=info)
            except Exception:
                continue
            hits[key].append((g.lower <= truth) & (truth <= g.upper))
        for info, key in (("expected", "am-ELO+prior"), ("observed", "+prior obs")):
            h = am_elo(*args, ability_prior_sd=2.0, information=info)
            hits[key].append((h.lower <= truth) & (truth <= h.upper))
        sw = stable_arena(*args, delta=0, epsilon=0.0)
        hits["bias-aware"].append((sw.lower <= truth) & (truth <= sw.upper))
        x = truth - truth.mean()
        slopes.append(float(x @ (h.ratings - h.ratings.mean()) / (x @ x)))
        if n_boot:
            r = stable_arena(
                *args, delta=0, epsilon=0.0, intervals="bootstrap", n_boot=n_boot, rng=seed + i
            )
            hits["am-ELO boot"].append((r.lower <= truth) & (truth <= r.upper))
    out = {}
    for k, v in hits.items():
        arr = np.asarray(v, dtype=float)
        out[k] = (float(arr.mean()), float(arr.mean(axis=0).min()), len(v))
    return out, float(np.mean(slopes))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="60 studies, 50 resamples")
    p.add_argument("--studies", type=int, default=None)
    p.add_argument("--boot", type=int, default=None, help="resamples; 0 skips the bootstrap")
    p.add_argument("--sd", type=float, default=0.0, help="annotator discrimination sd")
    p.add_argument("--votes", type=int, nargs="+", default=[40, 100])
    args = p.parse_args()
    n = args.studies or (60 if args.quick else 200)
    b = args.boot if args.boot is not None else (50 if args.quick else 200)
    print(f"load average {os.getloadavg()[0]:.2f}; {n} studies per size, {b} resamples")
    # what an exact 95% interval would show: each model's coverage is Binomial(n, 0.95) / n,
    # and the worst of 20 models falls below 0.95 by chance alone (independent models)
    worst = np.random.default_rng(0).binomial(n, 0.95, size=(20_000, 20)).min(axis=1) / n
    lo, med = np.quantile(worst, [0.05, 0.5])
    half = 1.96 * np.sqrt(0.95 * 0.05 / (n * 20))
    print(
        f"an exact 95% interval over {n} studies: mean 0.950 +- {half:.3f}; "
        f"worst of 20 models median {med:.3f}, 5% quantile {lo:.3f}"
    )
    print(f"{'votes':>5}  {'method':<14} {'mean':>6} {'worst':>6} {'fits':>5}")
    for votes in args.votes:
        t = time.perf_counter()
        res, scale = coverage(n, votes, b, args.sd, seed=10_000 * votes)
        for k, (mean, worst, cnt) in res.items():
            print(f"{votes:>5}  {k:<14} {mean:6.3f} {worst:6.3f} {cnt:5d}")
        print(f"       am-ELO+prior scale (estimated / true spread): {scale:.3f}")
        print(f"       ({time.perf_counter() - t:.0f} s)")


if __name__ == "__main__":
    main()
