"""Speed and memory of m-ELO and am-ELO (ranking.pairwise), printed as tables.

Two scales:

1. The am-ELO paper's data size (Liu et al., 2025, Table 1): 4,321 battles,
   20 models, 42 annotators. Our m-ELO and am-ELO are timed against the
   published algorithm, implemented here in numpy exactly as the authors'
   code does it (bigdata-ustc/am-ELO, model.py): full-batch optimisation of
   the mean binary cross-entropy, learning rate 0.1, 2,000 epochs, Adam
   updates (torch.optim.Adam defaults), Xavier-uniform start, and for am-ELO
   ``theta = phi / sum(phi)``. Plain gradient ascent with the same learning
   rate, as the paper's text describes it, is also run for the
   log-likelihood column. Both log-likelihoods are printed (eq. 2 / eq. 5,
   natural log, ties as half): ours must be equal or better.
2. 1,000,000 battles, 200 models, 10,000 annotators, with the same data
   through evalica's ``bradley_terry`` (Rust) and arena-rank's
   ``BradleyTerry`` (JAX, L-BFGS) when they are installed.

Data are simulated (ranking.simulation.simulate_arena: Davidson ties,
ratings spread like the 2023 Chatbot Arena). Times are medians over repeats
with ``time.perf_counter``; peak memory is Python-side allocation measured
with ``tracemalloc`` in a separate run (numpy buffers included; memory
allocated inside Rust or JAX is not visible to tracemalloc and shows as n/a).

BLAS runs on one thread unless OPENBLAS_NUM_THREADS is set (see the top of main code).

Run:  .venv/bin/python benchmarks/bench_pairwise.py [--quick]
"""

from __future__ import annotations

import os

# One BLAS thread unless the caller sets it: on a small shared machine multi-threaded
# OpenBLAS spin-waits and turns a 2 ms 200 x 200 inverse into 70 ms. Set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import math
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import log_expit

from ranking.pairwise import ELO_C, am_elo, m_elo
from ranking.simulation import simulate_arena


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time over ``repeats`` runs (seconds) and the last result."""
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def peak_mib(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def loglik(a, b, k, w, ratings, theta=None, scale=ELO_C):
    """eq. 2 (theta None) or eq. 5 with logit = scale * theta_k * (R_a - R_b)."""
    eta = scale * (ratings[a] - ratings[b]) * (1.0 if theta is None else theta[k])
    return float(np.sum(w * log_expit(eta) + (1 - w) * log_expit(-eta)))


def paper_data(rng: np.random.Generator):
    sim = simulate_arena(n_models=20, n_annotators=42, records_per_annotator=110, rng=rng)
    keep = np.sort(rng.permutation(sim.outcome.size)[:4321])
    return sim.model_a[keep], sim.model_b[keep], sim.annotator[keep], sim.outcome[keep]


def xavier(rng: np.random.Generator, n: int) -> np.ndarray:
    bound = math.sqrt(6.0 / (n + 1))  # torch xavier_uniform_ on an (n, 1) embedding
    return rng.uniform(-bound, bound, n)


class Adam:
    """torch.optim.Adam with default betas and eps."""

    def __init__(self, size: int, lr: float) -> None:
        self.m = np.zeros(size)
        self.v = np.zeros(size)
        self.t = 0
        self.lr = lr

    def step(self, x: np.ndarray, grad: np.ndarray) -> None:
        self.t += 1
        self.m = 0.9 * self.m + 0.1 * grad
        self.v = 0.999 * self.v + 0.001 * grad * grad
        mh = self.m / (1 - 0.9**self.t)
        vh = self.v / (1 - 0.999**self.t)
        x -= self.lr * mh / (np.sqrt(vh) + 1e-8)


def published_m_elo(a, b, w, n, *, lr=0.1, epochs=2000, adam=True, seed=0):
    """Authors' m-ELO: logit = C (R_a - R_b), mean BCE, full batch."""
    rng = np.random.default_rng(seed)
    r = xavier(rng, n)
    opt = Adam(n, lr) if adam else None
    t = a.size
    for _ in range(epochs):
        z = ELO_C * (r[a] - r[b])
        g = (1.0 / (1.0 + np.exp(-z)) - w) / t  # d mean-BCE / dz
        grad = ELO_C * (np.bincount(a, g, n) - np.bincount(b, g, n))
        if opt is None:
            r -= lr * grad
        else:
            opt.step(r, grad)
    return r


def published_am_elo(a, b, k, w, n, m, *, lr=0.1, epochs=2000, adam=True, seed=0):
    """Authors' am-ELO: theta = phi / sum(phi), logit = theta_k (R_a - R_b), mean BCE."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([xavier(rng, n), xavier(rng, m)])
    opt = Adam(n + m, lr) if adam else None
    t = a.size
    for _ in range(epochs):
        r, phi = x[:n], x[n:]
        s = phi.sum()
        th = phi / s
        d = r[a] - r[b]
        z = th[k] * d
        g = (1.0 / (1.0 + np.exp(-z)) - w) / t
        gr = np.bincount(a, g * th[k], n) - np.bincount(b, g * th[k], n)
        gd = np.bincount(k, g * d, m)  # d loss / d theta
        gphi = gd / s - (gd @ phi) / s**2
        grad = np.concatenate([gr, gphi])
        if opt is None:
            x -= lr * grad
        else:
            opt.step(x, grad)
    phi = x[n:]
    return x[:n], phi / phi.sum()


def row(name: str, t: float, mem: float | None, ll: float | None, note: str = "") -> str:
    mem_s = f"{mem:9.1f}" if mem is not None else "      n/a"
    ll_s = f"{ll:14.3f}" if ll is not None else "           n/a"
    return f"| {name:50s} | {t * 1000:10.1f} | {mem_s} | {ll_s} | {note}"


HEADER = (
    f"| {'method':50s} | {'median ms':>10s} | {'peak MiB':>9s} | {'log-lik':>14s} | ratio / note\n"
    f"|{'-' * 52}|{'-' * 12}|{'-' * 11}|{'-' * 16}|{'-' * 20}"
)


def bench_paper(repeats: int, epochs: int) -> None:
    rng = np.random.default_rng(2025)
    a, b, k, w = paper_data(rng)
    n, m = 20, 42
    print(f"\n## Paper scale: {a.size} battles, {n} models, {m} annotators (simulated)\n")
    print(HEADER)
    t_m, res_m = timed(lambda: m_elo(a, b, w), repeats)
    mem_m = peak_mib(lambda: m_elo(a, b, w))
    t_pm, r_pm = timed(lambda: published_m_elo(a, b, w, n, epochs=epochs), max(1, repeats // 5))
    t_gm, r_gd = timed(lambda: published_m_elo(a, b, w, n, epochs=epochs, adam=False), 1)
    ll_pm = loglik(a, b, k, w, r_pm)
    print(row("m-ELO (ours: Newton, aggregated pairs)", t_m, mem_m, res_m.log_likelihood))
    print(
        row(
            f"m-ELO published (Adam lr 0.1, {epochs} epochs)",
            t_pm,
            None,
            ll_pm,
            f"{t_pm / t_m:.0f}x slower",
        )
    )
    print(
        row(
            f"m-ELO paper text (GD lr 0.1, {epochs} epochs)",
            t_gm,
            None,
            loglik(a, b, k, w, r_gd),
            f"{t_gm / t_m:.0f}x slower, not converged",
        )
    )
    t_a, res_a = timed(lambda: am_elo(a, b, k, w), repeats)
    mem_a = peak_mib(lambda: am_elo(a, b, k, w))
    t_pa, (r_pa, th_pa) = timed(
        lambda: published_am_elo(a, b, k, w, n, m, epochs=epochs), max(1, repeats // 5)
    )
    t_ga, (r_ga, th_ga) = timed(
        lambda: published_am_elo(a, b, k, w, n, m, epochs=epochs, adam=False), 1
    )
    ll_pa = loglik(a, b, k, w, r_pa, th_pa, scale=1.0)
    print(row("am-ELO (ours: Fisher/Newton, aggregated triples)", t_a, mem_a, res_a.log_likelihood))
    print(
        row(
            f"am-ELO published (Adam lr 0.1, {epochs} epochs)",
            t_pa,
            None,
            ll_pa,
            f"{t_pa / t_a:.0f}x slower",
        )
    )
    print(
        row(
            f"am-ELO paper text (GD lr 0.1, {epochs} epochs)",
            t_ga,
            None,
            loglik(a, b, k, w, r_ga, th_ga, scale=1.0),
            f"{t_ga / t_a:.0f}x slower, not converged",
        )
    )
    print(
        f"\nours - published log-likelihood: m-ELO {res_m.log_likelihood - ll_pm:+.3g}, "
        f"am-ELO {res_a.log_likelihood - ll_pa:+.3g} (>= 0 means ours is equal or better); "
        f"iterations: m-ELO {res_m.iterations}, am-ELO {res_a.iterations}"
    )


def bench_large(n_battles: int, n_models: int, n_annotators: int, repeats: int) -> None:
    rng = np.random.default_rng(7)
    sim = simulate_arena(
        n_models=n_models,
        n_annotators=n_annotators,
        records_per_annotator=max(1, n_battles // n_annotators),
        rng=rng,
    )
    a, b, k, w = sim.model_a, sim.model_b, sim.annotator, sim.outcome
    print(
        f"\n## Large: {a.size:,} battles, {n_models} models, "
        f"{n_annotators:,} annotators (simulated)\n"
    )
    print(HEADER)
    t_m, res_m = timed(lambda: m_elo(a, b, w), repeats)
    mem_m = peak_mib(lambda: m_elo(a, b, w))
    print(row("m-ELO (ours)", t_m, mem_m, res_m.log_likelihood))
    t_a, res_a = timed(lambda: am_elo(a, b, k, w), repeats)
    mem_a = peak_mib(lambda: am_elo(a, b, k, w))
    print(row("am-ELO (ours)", t_a, mem_a, res_a.log_likelihood, f"{res_a.iterations} iterations"))
    try:
        import evalica
    except ImportError:
        print(row("evalica.bradley_terry", float("nan"), None, None, "not installed"))
    else:
        winner = np.array([evalica.Winner.Y, evalica.Winner.Draw, evalica.Winner.X], dtype=object)
        xs, ys, ws = a.tolist(), b.tolist(), winner[(w * 2).astype(int)].tolist()
        t_e, res_e = timed(lambda: evalica.bradley_terry(xs, ys, ws), repeats)
        sc = res_e.scores.sort_index().to_numpy()
        ll_e = loglik(a, b, k, w, np.log(sc) / ELO_C)
        print(
            row(
                "evalica.bradley_terry (defaults, Rust)",
                t_e,
                None,
                ll_e,
                f"{t_e / t_m:.2f}x our m-ELO time",
            )
        )
        t_e2, res_e2 = timed(
            lambda: evalica.bradley_terry(xs, ys, ws, tolerance=1e-10, limit=10_000), 1
        )
        sc2 = res_e2.scores.sort_index().to_numpy()
        print(
            row(
                "evalica.bradley_terry (tolerance 1e-10)",
                t_e2,
                None,
                loglik(a, b, k, w, np.log(sc2) / ELO_C),
                f"{t_e2 / t_m:.2f}x our m-ELO time",
            )
        )
    try:
        import jax.numpy as jnp
        from arena_rank.models.bradley_terry import BradleyTerry
        from arena_rank.utils.data_utils import PairDataset
    except ImportError:
        print(row("arena-rank BradleyTerry", float("nan"), None, None, "not installed"))
    else:

        def fit_arena_rank():
            # aggregate (a, b, outcome) rows as PairDataset.from_pandas does, without pandas
            key = (a * n_models + b) * 3 + (w * 2).astype(int)
            uniq, counts = np.unique(key, return_counts=True)
            pairs = np.stack([uniq // 3 // n_models, uniq // 3 % n_models], axis=1)
            outcomes = (uniq % 3) / 2.0
            ds = PairDataset(
                competitors=[str(i) for i in range(n_models)],
                pairs=jnp.asarray(pairs),
                outcomes=jnp.asarray(outcomes),
                counts=jnp.asarray(counts, dtype=jnp.float64),
                weights=jnp.ones(uniq.size, dtype=jnp.float64),
                opt_weights=jnp.asarray(counts, dtype=jnp.float64),
            )
            model = BradleyTerry(n_competitors=n_models)
            model.fit(ds)
            return np.asarray(model.params["ratings"])

        fit_arena_rank()  # JIT warm-up, not timed
        t_r, r_r = timed(fit_arena_rank, repeats)
        print(
            row(
                "arena-rank BradleyTerry (JAX L-BFGS, warm)",
                t_r,
                None,
                loglik(a, b, k, w, r_r / ELO_C),
                f"{t_r / t_m:.2f}x our m-ELO time",
            )
        )


def main() -> None:
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer repeats, 100,000 battles at the large scale"
    )
    args = parser.parse_args()
    if args.quick:
        bench_paper(repeats=5, epochs=2000)
        bench_large(100_000, 200, 1_000, repeats=1)
    else:
        bench_paper(repeats=20, epochs=2000)
        bench_large(1_000_000, 200, 10_000, repeats=3)


if __name__ == "__main__":
    main()
