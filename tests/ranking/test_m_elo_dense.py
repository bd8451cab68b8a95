"""m-ELO's dense path (issue 13: n x n tables, Cholesky solves) against the pair path.

References: the pair-list code m_elo ran before (``_aggregate_pairs``, ``_bt_newton``,
``_laplacian_pinv``, all unchanged and still used above ``_DENSE_LIMIT`` items and by
am-ELO and stable_arena), kept as the oracle; ``scipy.sparse.csgraph`` for strong
connectivity; ``scipy.special.expit`` / ``log_expit`` for the win probabilities. The
m-ELO estimates themselves are checked against choix, evalica and closed forms in
``test_pairwise.py``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse
from scipy.sparse import csgraph
from scipy.special import expit, log_expit

from ranking import pairwise as pw
from ranking.errors import DegenerateDataError
from ranking.simulation import simulate_arena


def _m_elo_by_pairs(a: Any, b: Any, w: Any, n: int) -> dict[str, Any]:
    """m_elo's fit as computed before the dense path: pair lists, LU solves, inv()."""
    lo, hi, wins, cnt = pw._aggregate_pairs(a, b, w, n)
    pw._check_connected(lo, hi, wins, cnt, n)
    s, ll, it = pw._bt_newton(lo, hi, wins, cnt, n, tol=1e-10, max_iter=100)
    p = expit(s[lo] - s[hi])
    cov = pw._laplacian_pinv(lo, hi, cnt * p * (1 - p), n)
    return {"s": s, "ll": ll, "it": it, "cov": cov}


def _arena(n: int, size: int, seed: int, spread: float) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(seed)
    truth = rng.normal(0, spread, n)
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    p = expit(truth[a] - truth[b])
    w = np.where(rng.random(size) < 0.1, 0.5, (rng.random(size) < p).astype(float))
    ring = np.arange(n)  # every model wins and loses once: the MLE exists
    a = np.concatenate([a, ring, ring])
    b = np.concatenate([b, (ring + 1) % n, (ring + 1) % n])
    w = np.concatenate([w, np.ones(n), np.zeros(n)])
    return a, b, w


@given(st.integers(2, 30), st.integers(0, 400), st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_dense_tables_equal_aggregated_pairs(n: int, size: int, seed: int) -> None:
    """The n x n win and count tables hold _aggregate_pairs' sums cell by cell, bit for
    bit (outcomes 0, 0.5, 1: exact sums), zero elsewhere; _table_pairs gives the pairs
    back in the same (lo, hi) order."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    w = rng.choice([0.0, 0.5, 1.0], size)
    wins, counts = pw._aggregate_dense(a, b, w, n)
    lo, hi, wl, cnt = pw._aggregate_pairs(a, b, w, n)
    want_w = np.zeros((n, n))
    want_w[lo, hi] = wl
    want_w[hi, lo] = cnt - wl
    want_c = np.zeros((n, n))
    want_c[lo, hi] = want_c[hi, lo] = cnt
    np.testing.assert_array_equal(wins, want_w)
    np.testing.assert_array_equal(counts, want_c)
    assert wins.dtype == counts.dtype == np.float64
    for got, want in zip(pw._table_pairs(wins, counts), (lo, hi, wl, cnt), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("n", "size", "seed", "spread"),
    [(3, 40, 0, 0.5), (8, 60, 1, 2.0), (30, 400, 2, 1.0), (120, 3000, 3, 1.5), (200, 8000, 4, 0.3)],
)
def test_m_elo_dense_equals_pair_path(n: int, size: int, seed: int, spread: float) -> None:
    """Ratings, standard errors, covariance and log-likelihood equal the pair path's
    within 1e-9 (relative to the largest value), in the same number of iterations."""
    a, b, w = _arena(n, size, seed, spread)
    got = pw.m_elo(a, b, w, n_models=n)
    want = _m_elo_by_pairs(a, b, w, n)
    np.testing.assert_allclose(got.ratings, 1000.0 + want["s"] / pw.ELO_C, rtol=0, atol=1e-9)
    cov = want["cov"] / pw.ELO_C**2
    assert got.rating_covariance is not None
    scale = np.abs(cov).max()
    np.testing.assert_allclose(got.rating_covariance, cov, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(got.standard_errors, np.sqrt(np.diag(cov)), rtol=1e-9)
    assert got.log_likelihood == pytest.approx(want["ll"], rel=1e-12)
    assert got.iterations == want["it"]
    np.testing.assert_array_equal(got.rating_covariance, got.rating_covariance.T)


def test_m_elo_dense_equals_pair_path_on_simulated_arena() -> None:
    """The benchmark's kind of data (simulate_arena, Davidson ties, 200 models)."""
    sim = simulate_arena(
        n_models=200, n_annotators=10, records_per_annotator=2000, rng=np.random.default_rng(0)
    )
    got = pw.m_elo(sim.model_a, sim.model_b, sim.outcome)
    want = _m_elo_by_pairs(sim.model_a, sim.model_b, sim.outcome, 200)
    np.testing.assert_allclose(got.ratings, 1000.0 + want["s"] / pw.ELO_C, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.standard_errors, np.sqrt(np.diag(want["cov"])) / pw.ELO_C)
    assert got.iterations == want["it"]


@pytest.mark.parametrize(
    ("a", "b", "w"),
    [
        ([0, 1, 2, 3], [1, 0, 3, 2], [1, 0, 1, 0]),  # two components
        ([0, 0, 1], [1, 2, 2], [1, 1, 0.5]),  # model 0 never lost
        ([0, 1, 1, 2, 3], [1, 0, 2, 1, 2], [1, 0, 1, 0, 1]),  # model 3 never lost
    ],
)
def test_m_elo_dense_errors_equal_the_sparse_check(a: Any, b: Any, w: Any) -> None:
    """Data without a unique MLE raises _check_connected's error, word for word."""
    n = max(max(a), max(b)) + 1
    lo, hi, wins, cnt = pw._aggregate_pairs(np.array(a), np.array(b), np.array(w, float), n)
    with pytest.raises(DegenerateDataError) as want:
        pw._check_connected(lo, hi, wins, cnt, n)
    with pytest.raises(DegenerateDataError) as got:
        pw.m_elo(a, b, w)
    assert str(got.value) == str(want.value)


def _strong_by_scipy(beats: Any) -> bool:
    graph = sparse.csr_matrix(beats.astype(float))
    n_strong, _ = csgraph.connected_components(graph, directed=True, connection="strong")
    return bool(n_strong == 1)


@given(st.integers(1, 15), st.integers(0, 60), st.integers(0, 2**32 - 1))
@settings(max_examples=300, deadline=None)
def test_strongly_connected_agrees_with_scipy(n: int, edges: int, seed: int) -> None:
    """The breadth-first test on the dense table == csgraph's strong components (graphs
    of at most 15 items: every path is shorter than _BFS_LEVELS)."""
    rng = np.random.default_rng(seed)
    beats = np.zeros((n, n), dtype=bool)
    beats[rng.integers(0, n, edges), rng.integers(0, n, edges)] = True
    assert pw._strongly_connected(beats) == _strong_by_scipy(beats)


def test_strongly_connected_defers_on_long_paths() -> None:
    """A cycle longer than _BFS_LEVELS is not shown connected by the quick test (False:
    m_elo then asks _check_connected), and m_elo still rates it."""
    n = 3 * pw._BFS_LEVELS
    ring = np.arange(n)
    beats = np.zeros((n, n), dtype=bool)
    beats[ring, (ring + 1) % n] = True
    assert _strong_by_scipy(beats)
    assert not pw._strongly_connected(beats)
    a = np.concatenate([ring, ring])
    b = np.concatenate([(ring + 1) % n, (ring + 1) % n])
    w = np.concatenate([np.ones(n), np.zeros(n)])
    res = pw.m_elo(a, b, w)
    np.testing.assert_allclose(res.ratings, 1000.0, atol=1e-9)  # symmetric: all equal


@pytest.mark.parametrize("spread", [0.0, 3.0, 650.0, 750.0, 2000.0])
def test_dense_point_probabilities_match_expit(spread: float) -> None:
    """p = e_i / (e_i + e_j) from n exponentials equals expit(s_i - s_j) to rounding, and
    ln p equals log_expit, finite in every cell, also beyond _DENSE_SPREAD where the
    exponentials would underflow (then the logistic function runs per cell)."""
    s = np.linspace(-spread / 2, spread / 2, 9)
    pt = pw._DensePoint(s)
    diff = s[:, None] - s[None, :]
    np.testing.assert_allclose(pt.p, expit(diff), rtol=1e-14, atol=1e-300)
    np.testing.assert_array_equal(pt.p.T, expit(-diff) if pt.diff is not None else pt.p.T)
    lp = pt.log_p()
    assert np.isfinite(lp).all()
    np.testing.assert_allclose(lp, log_expit(diff), rtol=1e-12, atol=1e-14)
    assert (pt.diff is not None) == (spread > pw._DENSE_SPREAD)


def test_non_definite_systems_fall_back_to_lu(monkeypatch: pytest.MonkeyPatch) -> None:
    """When Cholesky reports a non-definite matrix, the step is solved by LU and the
    covariance by inv(), as the pair code does: the same fit."""
    a, b, w = _arena(12, 300, 7, 1.0)
    want = pw.m_elo(a, b, w)
    failing = SimpleNamespace(
        dposv=lambda lap, g, **kw: (lap, g, 1), dpotrf=lambda lap, **kw: (lap, 1)
    )
    monkeypatch.setattr(pw, "lapack", failing)
    got = pw.m_elo(a, b, w)
    np.testing.assert_allclose(got.ratings, want.ratings, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.standard_errors, want.standard_errors, rtol=1e-9)
    assert got.iterations == want.iterations


@pytest.mark.parametrize(("n", "size"), [(200, 3000), (200, 100_000), (5, 4)])
def test_dense_loglik_equals_pair_loglik(n: int, size: int) -> None:
    """The log-likelihood summed over the table (into the work table) equals the sum of
    freshly computed logs and the pair code's, to rounding; at a wide spread as well."""
    a, b, w = _arena(n, size, 11, 1.0)
    wins, counts = pw._aggregate_dense(a, b, w, n)
    lo, hi, wl, cnt = pw._aggregate_pairs(a, b, w, n)
    for s in (np.random.default_rng(0).normal(0, 1, n), np.linspace(-500, 500, n)):
        system = pw._DenseSystem(wins, counts)
        pt = system.at(s)
        got = system.loglik(pt)
        whole = float(np.vdot(wins, pt.log_p()))
        want = pw._bt_loglik(s[lo] - s[hi], wl, cnt)
        assert got == pytest.approx(whole, rel=1e-12)
        assert got == pytest.approx(want, rel=1e-12)
