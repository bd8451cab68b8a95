"""Fast paths added for issue 13 give exactly the results of the paths they replace.

References: the previous implementations, kept here verbatim as oracles (the pair
aggregation by ``np.unique`` on the unordered key; Krippendorff's per-unit value counts
by ``np.unique`` and ``bincount``), compared on random inputs with hypothesis, including
ties, empty and single-model cases and weights; the ``krippendorff`` package for alpha.
"""

from __future__ import annotations

from typing import Any

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ranking import _agreement_point as ap
from ranking import pairwise as pw
from ranking.agreement import krippendorff_alpha

# --------------------------------------------------------------------------- pairs


def _pairs_by_unique(a: Any, b: Any, w: Any, n: int) -> tuple[Any, Any, Any, Any]:
    """The aggregation before issue 13: np.unique over the unordered key (the oracle)."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    wl = np.where(a > b, 1.0 - w, w)
    uniq, inv = np.unique(lo * n + hi, return_inverse=True)
    inv = inv.ravel()
    wins = np.bincount(inv, weights=wl, minlength=uniq.size).astype(np.float64)
    cnt = np.bincount(inv, minlength=uniq.size).astype(np.float64)
    return uniq // n, uniq % n, wins, cnt


@st.composite
def battles(draw: Any) -> tuple[Any, Any, Any, int]:
    n = draw(st.integers(2, 12))
    size = draw(st.integers(0, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    w = rng.choice([0.0, 0.5, 1.0], size)
    return a.astype(np.int64), b.astype(np.int64), w, n


@given(battles())
@settings(max_examples=200, deadline=None)
def test_aggregate_pairs_equals_unique(data: tuple[Any, Any, Any, int]) -> None:
    """Dense ordered-pair counting (bincount on a*n+b, folded) == np.unique aggregation,
    bit for bit (outcomes 0, 0.5, 1: every sum is exact), ties and empty input included."""
    a, b, w, n = data
    got = pw._aggregate_pairs(a, b, w, n)
    want = _pairs_by_unique(a, b, w, n)
    for g, x in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, x)
    assert got[0].dtype == got[1].dtype == np.int64
    assert got[2].dtype == got[3].dtype == np.float64


@pytest.mark.parametrize("n", [3000, 2**12])
def test_aggregate_pairs_sparse_path_equals_unique(n: int) -> None:
    """Many models and few battles (n*n above the dense limit): the radix path, same result."""
    rng = np.random.default_rng(n)
    a = rng.integers(0, n, 5000)
    b = (a + rng.integers(1, n, 5000)) % n
    a[:100], b[:100] = a[100:200], b[100:200]  # repeated pairs
    w = rng.choice([0.0, 0.5, 1.0], 5000)
    assert n * n > max(pw._DENSE_KEYS, 4 * a.size)
    for g, x in zip(pw._aggregate_pairs(a, b, w, n), _pairs_by_unique(a, b, w, n), strict=True):
        np.testing.assert_array_equal(g, x)


def test_m_elo_unrated_model_message_unchanged() -> None:
    """The 'no battles' check moved after the aggregation; same error and message."""
    with pytest.raises(pw.DegenerateDataError, match=r"model\(s\) \[2\] have no battles"):
        pw.m_elo([0, 1, 3], [1, 3, 0], [1.0, 0.0, 0.5], n_models=4)


# --------------------------------------------------------------------------- alpha


@st.composite
def ratings(draw: Any) -> Any:
    raters = draw(st.integers(1, 8))
    units = draw(st.integers(0, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["codes", "wide", "negative", "fraction", "one"]))
    if kind == "codes":
        x = rng.integers(1, 6, (raters, units)).astype(float)
    elif kind == "wide":  # more codes than the code-by-code path takes
        x = rng.integers(0, 3, (raters, units)) * 40.0
    elif kind == "negative":
        x = rng.integers(-3, 2, (raters, units)).astype(float)
    elif kind == "fraction":
        x = rng.integers(0, 4, (raters, units)) / 2.0
    else:
        x = np.ones((raters, units))
    x[rng.random((raters, units)) < draw(st.sampled_from([0.0, 0.3, 0.7]))] = np.nan
    return x


def _fields(r: Any) -> tuple[Any, ...]:
    return (r.value, r.reason, r.n_units, r.n_raters, r.observed_disagreement,
            r.expected_disagreement)  # fmt: skip


@given(ratings(), st.sampled_from(["nominal", "ordinal", "ratio"]))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_alpha_code_counts_equal_unique_counts(x: Any, level: str) -> None:
    """Counting integer codes one comparison at a time gives the np.unique path's alpha,
    disagreements, counts of units and raters and reason, bit for bit."""
    if level == "ratio" and np.nanmin(x, initial=0.0) < 0:
        return
    fast = krippendorff_alpha(x, level=level)
    old = ap._MAX_CODES
    try:
        ap._MAX_CODES = 0  # disable the code-by-code path
        slow = krippendorff_alpha(x, level=level)
    finally:
        ap._MAX_CODES = old
    assert _fields(fast) == _fields(slow)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "ratio"])
def test_alpha_codes_match_krippendorff_package(level: str) -> None:
    """Reference: krippendorff.alpha on 30 raters x 500 units of codes 1-5, 20% missing."""
    rng = np.random.default_rng(7)
    x = rng.integers(1, 6, (30, 500)).astype(float)
    x[:, :50] = np.where(rng.random((30, 50)) < 0.5, x[:1, :50], x[:, :50])  # some agreement
    x[rng.random(x.shape) < 0.2] = np.nan
    x[:, 3] = np.nan  # an empty unit
    x[1:, 4] = np.nan  # an unpairable unit
    x[0, 4] = 9.0  # whose code appears nowhere else
    ours = krippendorff_alpha(x, level=level).value
    assert ours == pytest.approx(krippendorff.alpha(x, level_of_measurement=level), abs=1e-9)


def test_alpha_does_not_modify_or_copy_semantics() -> None:
    """krippendorff_alpha reads a float64 input without copying and leaves it unchanged."""
    x = np.array([[1.0, 2.0, np.nan], [1.0, 2.0, 2.0]])
    before = x.copy()
    krippendorff_alpha(x)
    np.testing.assert_array_equal(x, before)


# --------------------------------------------------------------------------- am-ELO


def test_softplus_and_expit_match_numpy_and_scipy() -> None:
    """Reference: np.logaddexp(0, x) and scipy.special.expit over -800..800 and N(0, 25)."""
    from scipy.special import expit

    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-800, 800, 20001), rng.normal(0, 5, 10000), [0.0, -0.0]])
    np.testing.assert_allclose(pw._softplus(x), np.logaddexp(0.0, x), rtol=1e-15, atol=1e-14)
    np.testing.assert_allclose(pw._expit(x), expit(x), rtol=1e-15, atol=0)


@given(battles(), st.integers(1, 5))
@settings(max_examples=100, deadline=None)
def test_triple_diff_equals_gathers(data: tuple[Any, Any, Any, int], m: int) -> None:
    """s[lo] - s[hi] from the pair-level subtraction equals the per-triple one, bit for bit."""
    a, b, w, n = data
    if a.size == 0:
        return
    k = np.arange(a.size) % m
    tr = pw._aggregate_triples(a, b, k, w, n, m)
    s = np.random.default_rng(a.size).normal(size=n)
    np.testing.assert_array_equal(pw._triple_diff(tr, s), s[tr.lo] - s[tr.hi])
    np.testing.assert_array_equal(tr.lo_ann, tr.lo * m + tr.ann)
    np.testing.assert_array_equal(tr.hi_ann, tr.hi * m + tr.ann)


def _sim(n_models: int, n_ann: int, per: int, seed: int) -> Any:
    from ranking.simulation import simulate_arena

    return simulate_arena(
        n_models=n_models,
        n_annotators=n_ann,
        records_per_annotator=per,
        rng=np.random.default_rng(seed),
    )


@pytest.mark.parametrize(("n_models", "n_ann", "per"), [(30, 60, 200), (8, 20, 300)])
def test_am_elo_on_battles_equals_merged_triples(
    monkeypatch: pytest.MonkeyPatch, n_models: int, n_ann: int, per: int
) -> None:
    """am-ELO on unmerged battles (the path taken for 1M+ battles with few repeated
    (pair, annotator) triples) equals the merged fit to rounding: the likelihood is the
    same sum. The second case repeats triples heavily (8 models, 300 votes each)."""
    sim = _sim(n_models, n_ann, per, 3)
    args = (sim.model_a, sim.model_b, sim.annotator, sim.outcome)
    merged = pw.am_elo(*args)
    monkeypatch.setattr(pw, "_TRIPLES_SORT_MIN", 0)
    monkeypatch.setattr(pw, "_TRIPLES_REPEAT_SHARE", np.inf)
    direct = pw.am_elo(*args)
    np.testing.assert_allclose(direct.ratings, merged.ratings, rtol=0, atol=1e-8)
    np.testing.assert_allclose(direct.discriminations, merged.discriminations, atol=1e-10)
    np.testing.assert_allclose(
        direct.rating_standard_errors, merged.rating_standard_errors, rtol=1e-9
    )
    assert direct.log_likelihood == pytest.approx(merged.log_likelihood, rel=1e-12)


def test_battle_triples_only_when_repeats_are_rare(monkeypatch: pytest.MonkeyPatch) -> None:
    """The expected-repeat rule: 8 models x 300 votes per annotator merges (the battles
    repeat their triples); 200 models x 20 votes does not; below the size limit, always."""
    monkeypatch.setattr(pw, "_TRIPLES_SORT_MIN", 0)
    for n_models, per, merged in [(8, 300, True), (200, 20, False)]:
        sim = _sim(n_models, 50, per, 1)
        a, b, k, w = sim.model_a, sim.model_b, sim.annotator, sim.outcome
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        wl = np.where(a > b, 1.0 - w, w)
        got = pw._battle_triples(lo, hi, k, wl, n_models, int(k.max()) + 1)
        assert (got is None) is merged
    monkeypatch.setattr(pw, "_TRIPLES_SORT_MIN", 1 << 20)
    assert pw._battle_triples(lo, hi, k, wl, 200, int(k.max()) + 1) is None


def test_battle_triples_sorted_by_annotator_are_the_battles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The battle path packs (annotator, pair, 2 * outcome) in one key and sorts it: the
    triples are the battles themselves (the same multiset of (lo, hi, annotator, win of lo)
    rows, compared after np.lexsort, the oracle), each annotator's a contiguous segment
    starting at ann_starts, and the cross-information cells annotator-major."""
    monkeypatch.setattr(pw, "_TRIPLES_SORT_MIN", 0)
    sim = _sim(60, 40, 30, 2)
    a, b, k, w = sim.model_a, sim.model_b, sim.annotator, sim.outcome
    n, m = 60, int(k.max()) + 1
    tr = pw._aggregate_triples(a, b, k, w, n, m)
    assert tr.by_annotator
    assert tr.cnt is None
    assert tr.ann_starts is not None
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    wl = np.where(a > b, 1.0 - w, w)
    want = np.stack([k, lo, hi, wl])[:, np.lexsort((wl, hi, lo, k))]
    got = np.stack([tr.ann, tr.lo, tr.hi, tr.wins])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(tr.pair_lo[tr.pair], tr.lo)
    np.testing.assert_array_equal(tr.pair_hi[tr.pair], tr.hi)
    np.testing.assert_array_equal(tr.ann_starts, np.searchsorted(tr.ann, np.arange(m)))
    np.testing.assert_array_equal(tr.lo_ann, tr.ann * n + tr.lo)
    np.testing.assert_array_equal(tr.hi_ann, tr.ann * n + tr.hi)
    np.testing.assert_array_equal(tr.wm, tr.wins - 1.0)
    x = np.random.default_rng(0).normal(size=tr.ann.size)
    # the per-annotator sums and the cross cells against plain bincounts (the oracle)
    np.testing.assert_allclose(
        pw._per_annotator(tr, x, m), np.bincount(tr.ann, x, m), rtol=1e-13, atol=1e-13
    )
    cells = np.zeros((n, m))
    np.add.at(cells, (tr.lo, tr.ann), x)
    np.subtract.at(cells, (tr.hi, tr.ann), x)
    np.testing.assert_allclose(pw._cells(tr, x, n, m), cells, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("merged", [True, False])
@pytest.mark.parametrize("spread", [1.0, 30.0, 400.0, 800.0])
def test_point_loglik_and_probabilities_match_scipy(
    monkeypatch: pytest.MonkeyPatch, merged: bool, spread: float
) -> None:
    """_am_eval's p and log-likelihood (from one exp, the log-likelihood from log(p))
    against scipy.special.expit and log_expit (the reference), on merged triples and on
    battles, with |eta| up to several hundred (beyond 708 p is subnormal or 0 and the
    softplus fallback is taken)."""
    from scipy.special import expit, log_expit

    rng = np.random.default_rng(int(spread))
    n, m, size = 6, 4, 3000
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    k = np.arange(size) % m
    w = rng.choice([0.0, 0.5, 1.0], size)
    if merged:
        tr = pw._aggregate_triples(a, b, k, w, n, m)
    else:
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        wl = np.where(a > b, 1.0 - w, w)
        monkeypatch.setattr(pw, "_TRIPLES_SORT_MIN", 0)
        monkeypatch.setattr(pw, "_TRIPLES_REPEAT_SHARE", np.inf)
        battles = pw._battle_triples(lo, hi, k, wl, n, m)
        assert battles is not None
        assert battles.cnt is None
        tr = battles
    s, th = rng.normal(size=n) * spread, rng.uniform(0.2, 2.0, m)
    pt = pw._am_eval(tr, s, th)
    eta = th[tr.ann] * (s[tr.lo] - s[tr.hi])
    cnt = np.ones(tr.ann.size) if tr.cnt is None else tr.cnt
    np.testing.assert_allclose(pt.p, expit(eta), rtol=1e-15, atol=0)
    ref = float(np.sum(tr.wins * log_expit(eta) + (cnt - tr.wins) * log_expit(-eta)))
    assert pt.loglik() == pytest.approx(ref, rel=1e-13, abs=1e-9)


# --------------------------------------------------------------------------- m-ELO Newton


def _newton_checked(lo: Any, hi: Any, wins: Any, cnt: Any, n: int) -> tuple[Any, float, int]:
    """The Newton loop before issue 13, which evaluates the log-likelihood at every step
    (the oracle for the skipped evaluations)."""
    from scipy.special import expit

    s = np.zeros(n)
    d = s[lo] - s[hi]
    ll = pw._bt_loglik(d, wins, cnt)
    for it in range(1, 101):
        p = expit(d)
        r = wins - cnt * p
        g = pw._bincount(lo, r, n) - pw._bincount(hi, r, n)
        step = pw._solve_laplacian(lo, hi, cnt * p * (1.0 - p), g, n)
        dec = float(g @ step)
        t = 1.0
        while True:
            s_new = s + t * step
            d_new = s_new[lo] - s_new[hi]
            ll_new = pw._bt_loglik(d_new, wins, cnt)
            if ll_new >= ll - 1e-12 * max(1.0, abs(ll)) or t < 1e-10:
                break
            t *= 0.5
        s, d, ll = s_new, d_new, ll_new
        if dec <= 1e-10:
            return s - s.mean(), ll, it
    raise AssertionError("no convergence")


@given(st.integers(3, 12), st.integers(60, 400), st.integers(0, 2**32 - 1), st.floats(0, 3))
@settings(max_examples=60, deadline=None)
def test_newton_skipping_checks_equals_checked(n: int, size: int, seed: int, spread: float) -> None:
    """Newton that skips the log-likelihood where the curvature bound guarantees the full
    step (dec >= sum(cnt / 8 * dstep**2)) gives the checked loop's strengths,
    log-likelihood and iteration count bit for bit (ratings spread up to 3 logits)."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(0, spread, n)
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    p = 1 / (1 + np.exp(-(truth[a] - truth[b])))
    w = np.where(rng.random(size) < 0.1, 0.5, (rng.random(size) < p).astype(float))
    a = np.concatenate([a, np.arange(n), np.arange(n)])  # every model wins and loses once
    b = np.concatenate([b, (np.arange(n) + 1) % n, (np.arange(n) + 1) % n])
    w = np.concatenate([w, np.ones(n), np.zeros(n)])
    lo, hi, wins, cnt = pw._aggregate_pairs(a, b, w, n)
    got = pw._bt_newton(lo, hi, wins, cnt, n, tol=1e-10, max_iter=100)
    want = _newton_checked(lo, hi, wins, cnt, n)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:] == want[1:]


@given(st.integers(2, 15), st.integers(1, 40), st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None)
def test_connected_dense_agrees_with_sparse_check(n: int, size: int, seed: int) -> None:
    """The dense connectivity test says yes exactly when _check_connected raises nothing
    (random sparse battle sets: disconnected, separated and fine ones)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    w = rng.choice([0.0, 0.5, 1.0], size)
    lo, hi, wins, cnt = pw._aggregate_pairs(a, b, w, n)
    for strong in (True, False):
        dense = pw._connected_dense(lo, hi, wins, cnt, n, strong)
        try:
            pw._check_connected(lo, hi, wins, cnt, n, require_mle=strong)
            fine = True
        except pw.DegenerateDataError:
            fine = False
        assert dense == fine


def test_penalised_am_elo_warm_start_reaches_the_same_optimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With rating_prior_sd the fit starts from the m-ELO strengths (when they exist)
    instead of zero: the same penalised optimum (ratings within 1e-7 Elo points,
    abilities and standard errors within 1e-9), in no more iterations."""
    sim = _sim(20, 40, 150, 5)
    args = (sim.model_a, sim.model_b, sim.annotator, sim.outcome)
    opts = {"ability_prior_sd": 2.0, "rating_prior_sd": 1000.0, "information": "observed"}
    warm = pw.am_elo(*args, **opts)  # type: ignore[arg-type]
    monkeypatch.setattr(pw, "_connected_dense", lambda *a, **k: False)
    cold = pw.am_elo(*args, **opts)  # type: ignore[arg-type]
    np.testing.assert_allclose(warm.ratings, cold.ratings, rtol=0, atol=1e-7)
    np.testing.assert_allclose(warm.discriminations, cold.discriminations, atol=1e-9)
    np.testing.assert_allclose(warm.rating_standard_errors, cold.rating_standard_errors, atol=1e-9)
    assert warm.iterations <= cold.iterations


@given(battles())
@settings(max_examples=100, deadline=None)
def test_laplacian_by_scatter_equals_bincount(data: tuple[Any, Any, Any, int]) -> None:
    """The dense Laplacian written cell by cell equals the earlier bincount build
    (off = bincount(lo*n+hi, h); off + off.T) bit for bit on aggregated pairs."""
    a, b, w, n = data
    lo, hi, _, cnt = pw._aggregate_pairs(a, b, w, n)
    h = cnt * np.random.default_rng(a.size).random(cnt.size)
    off = np.bincount(lo * n + hi, weights=h, minlength=n * n).astype(np.float64).reshape(n, n)
    off = off + off.T
    want = -off
    want[np.diag_indices(n)] += off.sum(axis=1)
    np.testing.assert_array_equal(pw._laplacian_dense(lo, hi, h, n), want)


def test_triangle_cells_row_major() -> None:
    """The cached upper-triangle cells are np.triu_indices' in row-major order, read-only."""
    for n in (1, 2, 7, 1025):
        up, low, lo, hi = pw._triangle(n)
        want_lo, want_hi = np.triu_indices(n, 1)
        np.testing.assert_array_equal(lo, want_lo)
        np.testing.assert_array_equal(hi, want_hi)
        np.testing.assert_array_equal(up, want_lo * n + want_hi)
        np.testing.assert_array_equal(low, want_hi * n + want_lo)
        assert np.all(np.diff(up) > 0)
    assert not pw._triangle(7)[0].flags.writeable
