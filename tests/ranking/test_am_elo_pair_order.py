"""am-ELO's sums over pairs in an interleaved order and its two-level triple aggregation
(``ranking.pairwise._pair_order``, ``_pair_sums``, ``_aggregate_triples``): the same
numbers, bit for bit, as ``np.bincount`` over the pairs in their sorted order and as
``np.unique`` of the (pair, annotator) keys, and so the same am-ELO fits."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ranking.pairwise as pw
from ranking.pairwise import (
    _PAIR_ORDER_MAX,
    _PAIR_ORDER_MIN,
    _aggregate_triples,
    _pair_order,
    _pair_sums,
    am_elo,
)
from ranking.simulation import simulate_arena


def _sorted_pairs(sizes):
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)


@pytest.mark.parametrize(
    "sizes",
    [
        [970] * 200,  # a difficulty study's component: 200 pairs of about 970 triples
        list(range(1, 400)),  # unequal, within twice the mean
        [40] * 4950,  # every pair of 100 models
    ],
)
def test_pair_sums_equal_bincount_bit_for_bit(sizes):
    rng = np.random.default_rng(len(sizes))
    pair = _sorted_pairs(sizes)
    order = _pair_order(pair, len(sizes))
    assert order is not None
    perm, pair_of = order
    assert np.array_equal(np.sort(perm), np.arange(pair.size))  # a permutation
    assert np.array_equal(pair_of, pair[perm])
    # within each pair the original order is kept
    for p in (0, len(sizes) // 2, len(sizes) - 1):
        assert np.all(np.diff(perm[pair_of == p]) > 0)
    tr = dataclasses.make_dataclass("T", ["pair", "pair_lo", "pair_order"])
    x = rng.standard_normal(pair.size) * np.exp(rng.uniform(-20, 20, pair.size))
    x[::7] = -0.0
    plain = np.bincount(pair, weights=x, minlength=len(sizes))
    fast = _pair_sums(tr(pair, np.zeros(len(sizes)), order), x)
    assert fast.tobytes() == plain.tobytes()


def test_pair_order_skipped_when_small_large_or_skewed():
    assert _pair_order(np.zeros(_PAIR_ORDER_MIN - 1, dtype=np.int64), 1) is None
    assert _pair_order(np.zeros(_PAIR_ORDER_MAX + 1, dtype=np.int64), 1) is None
    skewed = np.repeat(np.arange(3, dtype=np.int64), [100_000, 10, 10])
    assert _pair_order(skewed, 3) is None


@pytest.mark.parametrize(
    ("n", "m", "size"),
    [(100, 1000, 60_000), (20, 300, 50_000), (300, 50, 100_000), (3000, 20, 50_000)],
)
def test_triples_equal_numpy_unique(n, m, size):
    """The triples (dense two-level path where n * n is at most the votes, the radix sort
    otherwise) against np.unique of the (lo, hi, annotator) keys."""
    rng = np.random.default_rng(n + m)
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    k = rng.integers(0, m, size)
    w = rng.choice([0.0, 0.5, 1.0, 0.25], size)
    tr = _aggregate_triples(a, b, k, w, n, m)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    wl = np.where(a > b, 1.0 - w, w)
    uniq, inv = np.unique((lo * n + hi) * m + k, return_inverse=True)
    assert np.array_equal(tr.ann, uniq % m)
    assert np.array_equal(tr.pair_lo[tr.pair], uniq // m // n)
    assert np.array_equal(tr.pair_hi[tr.pair], uniq // m % n)
    assert np.all(np.diff(tr.pair) >= 0)
    assert np.array_equal(tr.pair_lo * n + tr.pair_hi, np.unique(lo * n + hi))
    assert np.array_equal(tr.wins, np.bincount(inv, weights=wl))
    assert np.array_equal(tr.cnt, np.bincount(inv).astype(np.float64))
    assert np.array_equal(tr.lo_ann, tr.pair_lo[tr.pair] * m + tr.ann)
    assert np.array_equal(tr.hi_ann, tr.pair_hi[tr.pair] * m + tr.ann)


order = _pair_order


def _fit_fields(res):
    return {
        f.name: getattr(res, f.name).tobytes()
        if isinstance(getattr(res, f.name), np.ndarray)
        else getattr(res, f.name)
        for f in dataclasses.fields(res)
    }


@pytest.mark.parametrize("prior", [False, True])
def test_am_elo_unchanged_without_the_pair_order(monkeypatch, prior):
    """The fit with the interleaved pair sums equals the fit with plain bincounts, bit for
    bit (40,000 votes of 30 models: 32,074 triples, above _PAIR_ORDER_MIN)."""
    sim = simulate_arena(n_models=30, n_annotators=200, records_per_annotator=200, rng=5)
    kw = (
        {"ability_prior_sd": 2.0, "rating_prior_sd": 1000.0, "information": "observed"}
        if prior
        else {}
    )
    args = (sim.model_a, sim.model_b, sim.annotator, sim.outcome)
    used = []

    def recorded(pair, n_pairs):
        used.append(order(pair, n_pairs))
        return used[-1]

    with monkeypatch.context() as mp:
        mp.setattr(pw, "_pair_order", recorded)
        fast = am_elo(*args, **kw)
    assert used  # the interleaved sums were used
    assert all(u is not None for u in used)
    with monkeypatch.context() as mp:
        mp.setattr(pw, "_pair_order", lambda pair, n_pairs: None)
        plain = am_elo(*args, **kw)
    assert fast.iterations == plain.iterations
    assert _fit_fields(fast) == _fit_fields(plain)


def test_cell_fit_unchanged_without_the_pair_order(monkeypatch):
    """The vote-cell fit of stable_arena (``_am_elo_cells``, triples in pair-major order)
    with the interleaved pair sums equals the one with plain bincounts, and both the
    per-vote fit, bit for bit (100,243 votes of 20 models by 200 annotators: 35,141 triples)."""
    from ranking.arena import _VoteCells
    from ranking.pairwise import _am_elo_cells, _AmCells

    sim = simulate_arena(n_models=20, n_annotators=200, records_per_annotator=500, rng=9)
    a, b, k, w = sim.model_a, sim.model_b, sim.annotator, sim.outcome
    cells = _VoteCells.of(a, b, w, k, 20, 200)
    assert cells is not None
    assert _AmCells(cells.counts).triples().pair_order is not None
    opts = {"ability_prior_sd": 2.0, "rating_prior_sd": 1000.0, "information": "observed"}
    fast = _am_elo_cells(cells.counts, **opts)
    with monkeypatch.context() as mp:
        mp.setattr(pw, "_pair_order", lambda pair, n_pairs: None)
        plain = _am_elo_cells(cells.counts, **opts)
    assert _fit_fields(fast) == _fit_fields(plain)
    assert _fit_fields(am_elo(a, b, k, w, **opts)) == _fit_fields(fast)
