"""Shortcuts of the alignment and agreement bootstraps that must give the same bits.

Each shortcut (session 13: counts packed two to a float32 product, complete units by
ORed bits, order statistics by a short tail, integer sums in float32) is checked here
against the direct computation it replaces: dense float64 products and sums, NumPy's
sort, and the plain ``missing_products(drawn) == 0`` test. Equality is bit for bit
(``np.array_equal`` on the bytes), not approximate.
"""

from __future__ import annotations

import numpy as np
import pytest

import ranking._agreement_point as point
from ranking._agreement_point import PairwiseKappaResult, _mask_of
from ranking._agreement_resampling import _count_sums, _RaterDesign
from ranking.alignment import _check_votes, _count_matmul, _select


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _design(rng: np.random.Generator, n_a: int, n_u: int, missing: float) -> np.ndarray:
    """Indicators (2, A, U) of codes 1 and 2, with ``missing`` of the cells unrated."""
    rated = rng.random((n_a, n_u)) >= missing
    first = rated & (rng.random((n_a, n_u)) < 0.5)
    return np.stack([first, rated & ~first]).astype(np.float64)


@pytest.mark.parametrize("seed", range(6))
def test_unmissed_is_the_missing_count_test(seed: int) -> None:
    """Complete units by ORed replicate bits == ``missing_products(drawn) == 0``."""
    rng = np.random.default_rng(seed)
    for n_a, n_u, n_b in [(40, 30, 1), (40, 30, 64), (40, 30, 65), (7, 3, 200), (0, 4, 5)]:
        for missing in (0.0, 0.03, 0.5, 1.0):
            d = _RaterDesign(_design(rng, n_a, n_u, missing))
            drawn = rng.random((n_b, n_a)) < rng.choice([0.05, 0.63, 1.0])
            expected = d.missing_products(drawn.astype(np.float32)) == 0
            assert np.array_equal(d.unmissed(drawn), expected)


@pytest.mark.parametrize("seed", range(4))
def test_rated_products_with_squares_packed(seed: int) -> None:
    """The packed product of w + 2^k w^2 splits into the two separate products."""
    rng = np.random.default_rng(seed)
    F = _design(rng, 60, 80, 0.02)  # nearly complete: the rated products are sparse
    d = _RaterDesign(F)
    w = rng.integers(0, 5, size=(30, 60)).astype(np.float32)
    d.label_products(w)  # makes the rated product and keeps the squares' one
    assert d._squares is not None
    separate = _RaterDesign(F)
    assert _same_bits(d._rated_and_squares(w), separate.rated_products(w))
    assert _same_bits(d.square_products(w), separate.rated_products(w * w))
    # other counts than the kept ones: the direct product
    other = w[::-1].copy()
    assert _same_bits(d.square_products(other), separate.rated_products(other * other))


def test_count_sums_are_the_float64_sums() -> None:
    """Integer row sums in float32 (when below 2**23) == float64 sums; larger ones too."""
    rng = np.random.default_rng(1)
    for top in (10, 3000, 10**5):
        for t in range(12):
            n_b, n_u = int(rng.integers(1, 40)), int(rng.integers(0, 3000))
            x = rng.integers(0, top, size=(n_b, n_u)).astype(np.float32)
            w = rng.integers(0, 9, size=(n_b, n_u)).astype(np.float64) if t % 2 else None
            m = rng.random((n_b, n_u)) < 0.7 if t % 3 else None
            terms = (1.0 if w is None else w) * (x if m is None else np.where(m, x, 0.0))
            assert _same_bits(_count_sums(x, w, m), terms.sum(axis=1, dtype=np.float64))


@pytest.mark.parametrize("seed", range(5))
def test_judged_and_diff_packed(seed: int) -> None:
    """One product of diff + 2^k judged == the judged and the signed products."""
    rng = np.random.default_rng(seed)
    n_a, n_p = int(rng.integers(2, 50)), int(rng.integers(1, 70))
    a, p = np.nonzero(rng.random((n_a, n_p)) < 0.8)
    vote = rng.choice([0, 1, 2], size=a.size, p=[0.1, 0.5, 0.4])
    votes = _check_votes(p, a, vote, n_pairs=n_p, n_annotators=n_a)
    for w in (
        rng.integers(0, 4, size=(9, n_a)).astype(np.float64),  # bootstrap-like counts
        np.full((2, n_a), 2.0**14),  # too large to pack: the two products
    ):
        tot, dif = votes.judged_and_diff(w)
        assert _same_bits(tot, w @ votes.matrix("judged"))
        assert _same_bits(dif, w @ votes.matrix("diff"))
        assert _same_bits(dif, _count_matmul(w, votes.counts("diff")))


def test_select_gives_the_sorted_values() -> None:
    """Order statistics by partitions, argmax and the short tail's argmin == np.sort."""
    rng = np.random.default_rng(2)
    for t in range(400):
        rows, n = int(rng.integers(1, 20)), int(rng.integers(1, 60))
        x = rng.integers(-3, 4, size=(rows, n)) / rng.choice([1.0, 3.0])
        n_valid = int(rng.integers(1, n + 1))
        for row in x:
            row[rng.permutation(n)[: n - n_valid]] = np.nan
        k = int(rng.integers(0, n_valid))
        positions = {k, max(k - 1, 0), int(rng.integers(0, n_valid))}
        if t % 2:  # the interval's four positions, two adjacent pairs
            h = (n_valid - 1) * 0.025, (n_valid - 1) * 0.975
            positions = {int(h[0]), min(int(h[0]) + 1, n_valid - 1)}
            positions |= {int(h[1]), min(int(h[1]) + 1, n_valid - 1)}
        y = x.copy()
        _select(y, positions)
        srt = np.sort(x, axis=1)
        for pos in positions:
            assert np.array_equal(y[:, pos], srt[:, pos])
        assert np.array_equal(np.sort(y, axis=1), srt, equal_nan=True)


def test_pairwise_kappa_packed_product_is_the_dense_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kappa tables from one packed sparse product == from dense float32 products."""
    rng = np.random.default_rng(3)
    labels = np.array([1.0, 2.0])
    for _ in range(25):
        n_r, n_u = int(rng.integers(2, 40)), int(rng.integers(1, 200))
        data = rng.choice(labels, size=(n_r, n_u))
        data[rng.random((n_r, n_u)) < rng.choice([0.0, 0.01, 0.04])] = np.nan
        sparse_path = point._pairwise_kappa2(data, labels)
        monkeypatch.setattr(point, "_SPARSE_SHARE", -1.0)  # every product dense
        dense_path = point._pairwise_kappa2(data, labels)
        monkeypatch.undo()
        for got, expected in zip(sparse_path, dense_path, strict=True):
            assert _same_bits(got, expected)


def test_light_kappa_mean_matches_the_upper_triangle_gather() -> None:
    """mean() by a triangular mask == the gather of the cells above the diagonal."""
    rng = np.random.default_rng(4)
    for n in range(0, 12):
        for share in (0.0, 0.3, 0.9, 1.0):
            values = np.ma.MaskedArray(rng.normal(size=(n, n)), mask=rng.random((n, n)) < share)
            overlap = np.zeros((n, n), np.int64)
            r = PairwiseKappaResult(values, overlap, np.array([1.0, 2.0]), "unweighted", 2)
            iu = np.triu_indices(n, k=1)
            ok = ~_mask_of(values)[iu]
            got = r.mean()
            if not ok.any():
                assert got.value is None
                continue
            used = np.bincount(np.concatenate([iu[0][ok], iu[1][ok]]), minlength=n)
            assert got.value == float(np.ma.getdata(values)[iu][ok].mean())
            assert got.n_units == int(ok.sum())
            assert got.n_raters == int(np.count_nonzero(used))


@pytest.mark.parametrize("missing", [0.0, 0.02, 0.3])
def test_label_products_of_two_draws_at_once(missing: float) -> None:
    """Each category's product with two schemes' rater draws, made as one product of
    w1 + 2^k w2 and split, == the products of each draw on its own."""
    rng = np.random.default_rng(5)
    F = _design(rng, 50, 70, missing)
    w1 = rng.integers(0, 5, size=(20, 50)).astype(np.float32)
    w2 = rng.integers(0, 5, size=(20, 50)).astype(np.float32)
    got1, got2 = _RaterDesign(F).label_products_pair(w1, w2)
    for got, w in ((got1, w1), (got2, w2)):
        expected = _RaterDesign(F).label_products(w)
        assert len(got) == len(expected)
        for k, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert _same_bits(g, e)
            assert np.array_equal(g, w.astype(np.float64) @ F[k])  # the float64 counts


def _report_arrays(r: object) -> list[np.ndarray]:
    """Every array and interval bound of an alignment report, for bitwise comparison."""
    out = [np.asarray(r.predictions)]  # type: ignore[attr-defined]
    for name in ("individual", "individual_low", "individual_high"):
        m = getattr(r, name)
        out += [np.ma.getdata(m), np.ma.getmaskarray(m)]
    for name in ("mean_individual", "consensus_alignment", "kappa"):
        for est in getattr(r, name):
            for iv in (est.pairs_interval, est.annotators_interval, est.both_interval):
                out.append(np.array([np.nan, np.nan] if iv is None else [iv.low, iv.high]))
            out.append(np.array([np.nan if est.value is None else est.value]))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_alignment_bootstrap_two_chunks_at_once(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two chunks of pair draws multiplied as one packed product (w1 + s w2) give the
    report the chunks multiplied one by one give, bit for bit."""
    from ranking import alignment

    rng = np.random.default_rng(seed)
    n_q, n_p, n_a = 12, 40, 25
    pairs = np.array([rng.choice(n_q, 2, replace=False) for _ in range(n_p)])
    a, p = np.nonzero(rng.random((n_a, n_p)) < 0.9)
    vote = rng.choice([0, 1, 2], size=a.size, p=[0.05, 0.5, 0.45])
    d = rng.normal(size=(3, n_q))

    def run() -> object:
        return alignment.alignment_report(
            d, pairs, p, a, vote, n_annotators=n_a, n_boot=700, rng=seed,
            resample=("units", "annotators", "both"),
        )  # fmt: skip

    packed = run()
    monkeypatch.setattr(alignment, "_pair_scale", lambda w1, w2: 0.0)  # one by one
    direct = run()
    for x, y in zip(_report_arrays(packed), _report_arrays(direct), strict=True):
        assert _same_bits(x, y)
