"""Coverage of the agreement and alignment bootstrap intervals when annotators are a sample.

Issue 10: the 95% interval of Krippendorff's alpha over pairs covered the population value
only 0.547 of the time when the annotators were themselves drawn from a population. This
benchmark simulates that crossed design and prints, for each resampling scheme of
:func:`ranking.agreement.agreement_bootstrap` (``units``, ``annotators``, ``both``), how often
the interval holds the population value of alpha and of Fleiss' kappa, and the same for the
consensus alignment of :func:`ranking.alignment.alignment_report`.

Agreement model (binary codes): each pair has a true answer (1 or 2, each with probability
1/2) and is *ambiguous* with probability ``amb``, in which case every annotator answers at
random; on a clear pair annotator ``r`` gives the true answer with probability ``p_r``,
drawn from Beta(5.1, 0.9) (mean 0.85, sd 0.135: a heterogeneous crowd). Each rating is
missing with probability 0.1 (Fleiss' kappa uses the complete pairs). The population value,
for infinitely many pairs and annotators, is exact: chance disagreement is 1/2, observed
disagreement ``amb / 2 + (1 - amb) 2 m (1 - m)`` with ``m = E p_r``, so
``alpha = kappa = (1 - amb) (2 m - 1)**2``.

Alignment model: the same votes (none missing, an odd panel so that no pair ties) on pairs
of questions; an estimator that predicts the true answer on a share ``q`` of the clear pairs
and half the ambiguous ones. The consensus of a panel depends on its size, so the target is
the expected consensus alignment of a panel of that size drawn from the population, over
infinitely many pairs (by Monte Carlo, :func:`population_alignment`).

Run: ``.venv/bin/python benchmarks/bench_agreement_coverage.py`` (1000 studies, 500
replicates per scheme) or ``--quick`` (200 studies, 200 replicates). The two-way bootstrap is
slightly conservative by construction (Owen, 2007), so its coverage may sit a little above
0.95.

References
----------
Owen, A. B. (2007). The pigeonhole bootstrap. Annals of Applied Statistics 1(2), 386-411.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ranking.agreement import agreement_bootstrap
from ranking.alignment import alignment_report

BETA = (5.1, 0.9)
MEAN_ACCURACY = BETA[0] / (BETA[0] + BETA[1])


def crossed_ratings(
    gen: np.random.Generator, n_raters: int, n_units: int, amb: float, missing: float = 0.1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ratings (raters, units) in {1, 2} with NaN missing; truth per unit; ambiguous mask."""
    p = gen.beta(*BETA, size=n_raters)
    truth = gen.integers(1, 3, size=n_units)
    ambiguous = gen.random(n_units) < amb
    right = gen.random((n_raters, n_units)) < np.where(ambiguous, 0.5, p[:, None])
    R = np.where(right, truth, 3 - truth).astype(np.float64)
    R[gen.random(R.shape) < missing] = np.nan
    return R, truth, ambiguous


def population_alpha(amb: float) -> float:
    """Alpha (and Fleiss' kappa) for infinitely many pairs and annotators (module docstring)."""
    return (1.0 - amb) * (2.0 * MEAN_ACCURACY - 1.0) ** 2


def _covers(interval: object, value: float) -> float:
    if interval is None:
        return float("nan")
    lo, hi = interval  # type: ignore[misc]
    return float(lo <= value <= hi)


def agreement_coverage(
    n_studies: int, n_boot: int, n_raters: int, n_units: int, amb: float, seed: int
) -> dict[str, dict[str, float]]:
    gen = np.random.default_rng(seed)
    truth_value = population_alpha(amb)
    hits: dict[str, dict[str, list[float]]] = {
        s: {"alpha": [], "fleiss": []} for s in ("units", "annotators", "both")
    }
    for _ in range(n_studies):
        R, _, _ = crossed_ratings(gen, n_raters, n_units, amb)
        res = agreement_bootstrap(
            R, n_boot=n_boot, rng=gen, labels=[1, 2], resample=("units", "annotators", "both")
        )
        for s in hits:
            for stat in ("alpha", "fleiss"):
                d = res.distribution(stat, s)
                hits[s][stat].append(_covers(None if d is None else d.interval, truth_value))
    return {s: {k: float(np.nanmean(v)) for k, v in d.items()} for s, d in hits.items()}


def population_alignment(amb: float, q: float, n_raters: int, seed: int) -> float:
    """Expected consensus alignment of a panel of ``n_raters`` (odd: no ties) drawn from the
    population, over infinitely many pairs, by Monte Carlo.

    The share is linear in the pairs, so its expectation over panels equals the match rate
    when every pair gets a fresh panel; 400,000 pairs give about 0.001 precision.
    """
    gen = np.random.default_rng(seed)
    n_units = 400_000
    p = gen.beta(*BETA, size=(n_units, n_raters))
    ambiguous = gen.random(n_units) < amb
    right = gen.random((n_units, n_raters)) < np.where(ambiguous[:, None], 0.5, p)
    majority_true = right.sum(axis=1) * 2 > n_raters
    pred_true = gen.random(n_units) < np.where(ambiguous, 0.5, q)
    return float(np.mean(pred_true == majority_true))


def alignment_coverage(
    n_studies: int, n_boot: int, n_raters: int, n_units: int, amb: float, q: float, seed: int
) -> dict[str, float]:
    gen = np.random.default_rng(seed)
    target = population_alignment(amb, q, n_raters, seed + 1)
    hits: dict[str, list[float]] = {"units": [], "annotators": [], "both": []}
    for _ in range(n_studies):
        R, truth, ambiguous = crossed_ratings(gen, n_raters, n_units, amb, missing=0.0)
        pred_true = gen.random(n_units) < np.where(ambiguous, 0.5, q)
        pred = np.where(pred_true, truth, 3 - truth)  # 1 = first harder, 2 = second
        # difficulty of (first, second) question per pair so that predict_harder gives pred
        diff = np.zeros((1, 2 * n_units))
        diff[0, 0::2] = np.where(pred == 1, 1.0, 0.0)
        diff[0, 1::2] = np.where(pred == 2, 1.0, 0.0)
        pairs = np.arange(2 * n_units).reshape(n_units, 2)
        a, u = np.nonzero(~np.isnan(R))
        rep = alignment_report(
            diff,
            pairs,
            u,
            a,
            R[a, u].astype(int),
            n_annotators=n_raters,
            n_boot=n_boot,
            rng=gen,
            resample=("units", "annotators", "both"),
        )
        est = rep.consensus_alignment[0]
        for s, iv in (
            ("units", est.pairs_interval),
            ("annotators", est.annotators_interval),
            ("both", est.both_interval),
        ):
            hits[s].append(_covers(None if iv is None else (iv.low, iv.high), target))
    return {s: float(np.nanmean(v)) for s, v in hits.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="200 studies, 200 replicates")
    ap.add_argument("--seed", type=int, default=2007)
    args = ap.parse_args()
    n_studies, n_boot = (200, 200) if args.quick else (1000, 500)
    print(f"load average {os.getloadavg()[0]:.2f}; {n_studies} studies, {n_boot} replicates")
    print("agreement: population alpha = kappa = (1 - amb) (2 m - 1)^2; 95% percentile intervals")
    print(f"{'raters':>6} {'pairs':>5} {'amb':>4} {'value':>6}  {'scheme':<10} alpha  fleiss")
    for n_raters, n_units, amb in ((8, 60, 0.2), (5, 40, 0.2), (15, 80, 0.3)):
        t0 = time.perf_counter()
        cov = agreement_coverage(n_studies, n_boot, n_raters, n_units, amb, args.seed)
        for s, c in cov.items():
            print(
                f"{n_raters:6d} {n_units:5d} {amb:4.1f} {population_alpha(amb):6.3f}  {s:<10} "
                f"{c['alpha']:.3f}  {c['fleiss']:.3f}"
            )
        print(f"  ({time.perf_counter() - t0:.1f} s)")
    print("alignment: consensus alignment of an estimator right on 80% of the clear pairs")
    for n_raters, n_units in ((7, 60), (5, 40)):
        t0 = time.perf_counter()
        cov_a = alignment_coverage(n_studies, n_boot, n_raters, n_units, 0.2, 0.8, args.seed)
        print(
            f"{n_raters:6d} {n_units:5d}  "
            + "  ".join(f"{s} {c:.3f}" for s, c in cov_a.items())
            + f"  ({time.perf_counter() - t0:.1f} s)"
        )


if __name__ == "__main__":
    main()
