"""The shortcuts of issue 13's CPU work on the alignment and agreement bootstraps give the
same results bit for bit. Each test compares against the same function with the shortcut
turned off (the computation as it was), and the count products against numpy's float64
matrix product, an independent reference:

* _ZeroOne: products of counts with a 0/1 matrix made dense, sparse (few ones) or as row
  sums minus a sparse product (few zeros), all exact integers;
* alignment_report: the bootstrap's near-tie weights only for replicates with a near-tie
  (their score only on those pairs), against every replicate's weights;
* every sparse product turned off (``_SPARSE_SHARE = -1``: dense float32, as before) in
  alignment_report, agreement_bootstrap and pairwise_cohen_matrix, on a nearly complete
  design (few skips, where the sparse forms are used) and on a sparse one;
* the percentiles' sort of transposed rows against numpy's sort down each column, zeros
  of both signs included;
* labels checked by counting: the same labels, and the same message for a bad code.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ranking._agreement_point as ap
import ranking.alignment as al
from ranking.agreement import (
    agreement_bootstrap,
    fleiss_kappa_complete,
    leave_one_out_agreement,
    pairwise_cohen_matrix,
)
from ranking.alignment import alignment_report
from ranking.errors import InvalidParameterError
from tests.ranking.bits import bits


def _study(seed: int, *, present: float, skip: float, n_p: int = 60, n_a: int = 25) -> Any:
    """Random votes of ``n_a`` annotators on ``n_p`` pairs: each cell voted with
    probability ``present``, a vote a skip with probability ``skip``."""
    rng = np.random.default_rng(seed)
    n_q = 40
    pairs = np.array([rng.choice(n_q, 2, replace=False) for _ in range(n_p)])
    pair, annotator = (g.ravel() for g in np.meshgrid(np.arange(n_p), np.arange(n_a)))
    keep = rng.random(pair.size) < present
    pair, annotator = pair[keep], annotator[keep]
    vote = rng.choice([0, 1, 2], size=pair.size, p=[skip, (1 - skip) / 2, (1 - skip) / 2])
    difficulty = np.round(rng.normal(size=(4, n_q)), 1)  # rounded: tied predictions
    difficulty[3] = np.round(difficulty[3])  # many ties: a row multiplied on its own pairs
    return difficulty, pairs, pair, annotator, vote, n_a, n_p


def _ratings(pair: Any, annotator: Any, vote: Any, n_a: int, n_p: int) -> np.ndarray:
    r = np.full((n_a, n_p), np.nan)
    r[annotator, pair] = vote
    return r


@pytest.mark.parametrize("share", [0.0, 0.02, 0.5, 0.98, 1.0])
def test_zero_one_products_are_numpys_float64_products(share: float) -> None:
    rng = np.random.default_rng(3)
    m = rng.random((70, 90)) < share
    w = rng.poisson(1.3, size=(40, 70)).astype(np.float64)
    z = ap._ZeroOne(m)
    assert z.cheap == (share <= ap._SPARSE_SHARE or share > 1 - ap._SPARSE_SHARE)
    out = z(w)
    assert out.dtype == np.float32
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out.astype(np.float64), w @ m.astype(np.float64))


@pytest.mark.parametrize(("margin", "near_tie"), [(0.0, "weighted"), (0.25, "weighted")])
def test_near_tie_weights_only_where_needed_give_every_replicates(
    monkeypatch: pytest.MonkeyPatch, margin: float, near_tie: str
) -> None:
    difficulty, pairs, pair, annotator, vote, n_a, _n_p = _study(
        9, present=0.5, skip=0.1, n_p=50, n_a=8
    )
    kwargs: dict[str, Any] = dict(
        n_annotators=n_a,
        near_tie_margin=margin,
        near_tie=near_tie,
        n_boot=400,
        resample=("units", "annotators", "both"),
    )
    rows: dict[str, int] = {}

    def counting(name: str) -> None:
        real = getattr(al, name)

        def counted(votes: Any, *args: Any) -> Any:
            out = real(votes, *args)
            rows[name] = rows.get(name, 0) + out.shape[0]
            return out

        monkeypatch.setattr(al, name, counted)

    for name in ("_near_tie_weights_unweighted", "_near_tie_weights_from_point"):
        counting(name)
    fast = alignment_report(difficulty, pairs, pair, annotator, vote, rng=2, **kwargs)
    # the bootstrap met near-ties (few annotators, wide margin), over annotators and with
    # the pairs resampled
    assert rows["_near_tie_weights_unweighted"] > 100
    assert rows["_near_tie_weights_from_point"] > 100
    batch = al._consensus_batch

    def every_row(*args: Any, **kw: Any) -> Any:
        kw["all_weights"] = True
        return batch(*args, **kw)

    monkeypatch.setattr(al, "_consensus_batch", every_row)
    slow = alignment_report(difficulty, pairs, pair, annotator, vote, rng=2, **kwargs)
    assert bits(fast) == bits(slow)
    assert fast.consensus_alignment[0].both_interval is not None


@pytest.mark.parametrize(("present", "skip"), [(1.0, 0.03), (0.97, 0.0), (0.04, 0.1)])
def test_sparse_count_products_give_the_dense_results(
    monkeypatch: pytest.MonkeyPatch, present: float, skip: float
) -> None:
    difficulty, pairs, pair, annotator, vote, n_a, n_p = _study(
        5, present=present, skip=skip, n_p=80, n_a=60
    )
    kwargs: dict[str, Any] = dict(
        n_annotators=n_a, n_boot=200, resample=("units", "annotators", "both")
    )
    r3 = _ratings(pair, annotator, vote, n_a, n_p)
    r = np.where(r3 == 0, np.nan, r3)
    boot: dict[str, Any] = dict(
        n_boot=200, labels=(1.0, 2.0), abstain=0.0, resample=("units", "annotators", "both")
    )

    def run() -> Any:
        return (
            bits(alignment_report(difficulty, pairs, pair, annotator, vote, rng=4, **kwargs)),
            bits(agreement_bootstrap(r3, rng=6, **boot)),
            bits(pairwise_cohen_matrix(r, labels=[1.0, 2.0])),
        )

    kinds: list[str] = []
    real = ap._ZeroOne.__call__

    def call(self: Any, w: Any) -> Any:
        kinds.append("dense" if self.dense is not None else "sparse")
        return real(self, w)

    monkeypatch.setattr(ap._ZeroOne, "__call__", call)
    fast = run()
    assert "sparse" in kinds  # the shortcut ran
    monkeypatch.setattr(ap, "_SPARSE_SHARE", -1.0)  # every product dense, as before
    assert not ap._ZeroOne(np.ones((3, 3), dtype=bool)).cheap
    assert fast == run()


def test_percentiles_of_transposed_rows_equal_the_column_sort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(12)
    samples = np.round(rng.normal(size=(301, 40)), 1)  # ties, zeros
    samples[rng.random(samples.shape) < 0.05] = np.nan
    samples[:, 3] = -0.0  # a column of negative zeros: sorted down the column as before
    samples[::2, 4] = 0.0
    samples[1::2, 4] = -0.0
    lo, hi, nv = al._interval_block(samples, 0.9)
    # the reference: numpy's sort down each column (the computation before)
    srt = np.sort(samples, axis=0)
    ref, _ = al._percentiles(srt.T, (~np.isnan(samples)).sum(axis=0), 0.9)
    assert lo.tobytes() == ref[0].tobytes()
    assert hi.tobytes() == ref[1].tobytes()
    assert nv.tolist() == (~np.isnan(samples)).sum(axis=0).tolist()
    ok = nv > 0
    q = np.nanquantile(samples[:, ok], [0.05, 0.95], axis=0)  # numpy's own quantiles
    np.testing.assert_allclose(lo[ok], q[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(hi[ok], q[1], rtol=0, atol=1e-12)


def test_labels_checked_by_counting() -> None:
    data = np.array([[1.0, 2.0, np.nan], [2.0, 2.0, 1.0]])
    assert ap._resolve_labels(data.ravel(), [2, 1]).tolist() == [2.0, 1.0]
    assert ap._resolve_labels(data.ravel(), None).tolist() == [1.0, 2.0]
    bad = np.array([[1.0, 3.0, 5.0], [2.0, np.nan, 3.0]])
    with pytest.raises(InvalidParameterError, match=r"codes \[3\.0, 5\.0\] that are not in"):
        ap._resolve_labels(bad.ravel(), [1.0, 2.0])
    with pytest.raises(InvalidParameterError, match="not in labels"):
        fleiss_kappa_complete(bad, labels=[1.0, 2.0])


def test_leave_one_out_tables_by_counting_are_the_float_tables() -> None:
    """The leave-one-out tables counted with integers and booleans equal the float 0/1
    products of the planes (the computation before), written out here."""
    rng = np.random.default_rng(21)
    data = rng.choice([1.0, 2.0, 3.0], size=(12, 40), p=[0.5, 0.3, 0.2])
    data[rng.random(data.shape) < 0.2] = np.nan
    lab = [1.0, 2.0, 3.0]
    res = leave_one_out_agreement(data, labels=lab)
    oh = [np.equal(data, c).astype(np.float64) for c in lab]
    others = [x.sum(axis=0)[None, :] - x for x in oh]
    top = np.maximum.reduce([np.zeros_like(data), *others])
    is_top = [o == top for o in others]
    n_top = np.add.reduce([t.astype(np.int64) for t in is_top])
    usable = (top > 0) & (n_top == 1) & (np.add.reduce(oh) > 0)
    tables = np.empty((data.shape[0], 3, 3))
    for k, x in enumerate(oh):
        for j, t in enumerate(is_top):
            tables[:, k, j] = np.einsum("ru,ru->r", x * usable, np.where(usable, t * 1.0, 0.0))
    value, _, _, n, defined = ap._kappa_from_tables(tables, 1.0 - np.eye(3))
    assert res.n_units.tolist() == np.rint(n).astype(int).tolist()
    assert np.ma.getdata(res.kappa).tobytes() == np.where(defined, value, 0.0).tobytes()


def test_huge_draw_counts_keep_the_dense_products(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rater weights whose rows sum to 2**24 or more (no bootstrap draws them; a caller of
    agreement_replicates may) make float32 sums inexact: then no sparse form and no
    subtraction is used, and the replicates are those of the dense products as before."""
    from ranking.agreement import agreement_replicates

    rng = np.random.default_rng(13)
    data = rng.choice([1.0, 2.0], size=(20, 50))
    data[rng.random(data.shape) < 0.02] = np.nan  # nearly complete: sparse forms apply
    weights = rng.poisson(1.0, size=(30, 20)).astype(np.float64)
    weights[:, 0] = 2.0**24 + 3.0  # every row sums past 2**24
    assert not ap._sums_exact32(weights.astype(np.float32))
    fast = agreement_replicates(data, rater_weights=weights)
    monkeypatch.setattr(ap, "_SPARSE_SHARE", -1.0)
    assert bits(fast) == bits(agreement_replicates(data, rater_weights=weights))


def test_fleiss_over_raters_when_every_unit_is_complete() -> None:
    """Every rater rated every unit (abstentions as a category): with unit weights all 1
    Fleiss' kappa per rater replicate takes a shortcut (the unit weights are ones); it must
    equal the general path's, given those ones explicitly."""
    import ranking._agreement_resampling as ar

    rng = np.random.default_rng(17)
    data = rng.choice([0.0, 1.0, 2.0], size=(15, 40), p=[0.1, 0.5, 0.4])
    Fa = ar._indicators(data, np.array([0.0, 1.0, 2.0]))
    w = ar._boot_counts(np.random.default_rng(2), 300, 15)
    _, fast = ar._replicates_over_raters(Fa, w, need_alpha=False)
    ones = np.ones((300, 40))
    _, general = ar._replicates_over_raters(Fa, w, need_alpha=False, unit_weights=ones)
    assert np.isfinite(fast).sum() > 250
    assert fast.tobytes() == general.tobytes()


@pytest.mark.parametrize("tie_credit", [0.0, 0.5, 1.0])
def test_agreement_plan_rows_are_numpys_float64_products(tie_credit: float) -> None:
    # rows made on their own, from a base (a spanning tree of the rows, some far from
    # every other), and the extra row (the point majority), against numpy's float64
    # products of the bootstrap counts with each row's credits
    difficulty, pairs, pair, annotator, vote, n_a, n_p = _study(
        11, present=0.9, skip=0.05, n_p=70, n_a=30
    )
    votes = al._check_votes(pair, annotator, vote, n_pairs=n_p, n_annotators=n_a)
    rng = np.random.default_rng(12)
    pred = al._predict(difficulty, pairs, 0.0)
    far = rng.choice([0, 1, 2], size=(2, n_p))  # rows unlike the others
    s0 = votes.point_counts(0.0)[1]
    majority = np.where(s0 > 0, 1, np.where(s0 < 0, 2, 0))
    assert (majority == 0).sum() >= 3  # pairs without a majority: a tie credit there
    # a prediction row equal to the majority: the extra row's base, whose credits differ
    # from the extra row's (no tie credit) only where both predict a tie
    distinct, _ = al._distinct_rows(np.vstack([pred, pred[0], far, majority]))
    agree = al._agreement_tensor(votes, distinct, tie_credit, np.float32)
    extra = al._agreement_tensor(votes, majority[None], 0.0, np.float32)[0]
    plan = al._AgreementPlan(votes, distinct, tie_credit, majority)
    assert any(base >= 0 for _, base, _, _ in plan.steps)  # some rows made from a base
    assert sorted(u for u, _, _, _ in plan.steps) == list(range(distinct.shape[0]))
    wp = rng.multinomial(n_p, np.ones(n_p) / n_p, size=50).astype(np.float64)
    made = plan.counts(wp)
    for u in range(distinct.shape[0]):
        np.testing.assert_array_equal(made[:, u], wp @ agree[u].T.astype(np.float64))
    np.testing.assert_array_equal(plan.extra_counts(wp, made), wp @ extra.T.astype(np.float64))


@pytest.mark.parametrize("tie_credit", [0.0, 0.5, 1.0])
def test_credit_sums_by_counting_are_the_summed_credits(tie_credit: float) -> None:
    # the point estimate's credits by two count products against numpy's float64 sum of
    # the credit tensor (and a plain Python count of one annotator's credits)
    difficulty, pairs, pair, annotator, vote, n_a, n_p = _study(
        13, present=0.8, skip=0.1, n_p=60, n_a=20
    )
    votes = al._check_votes(pair, annotator, vote, n_pairs=n_p, n_annotators=n_a)
    pred = al._predict(difficulty, pairs, 0.0)
    assert (pred == al.TIE).any()
    sums = al._credit_sums(votes, pred, tie_credit)
    reference = al._agreement_tensor(votes, pred, tie_credit).sum(axis=2, dtype=np.float64)
    assert bits(sums) == bits(reference)
    code = votes.code[0]
    by_hand = sum(
        (1.0 if c == p else 0.0) if p != al.TIE else (tie_credit if c > 0 else 0.0)
        for c, p in zip(code.tolist(), pred[1].tolist(), strict=True)
    )
    assert sums[1, 0] == by_hand


def test_sums_exact32_bound_gives_the_row_sum_answer() -> None:
    # the cheap bound (length times the largest count) only ever says yes where the row
    # sums are below 2**24; near the limit the sums decide
    limit = ap._EXACT32_SUM
    rng = np.random.default_rng(14)
    cases = [
        rng.poisson(2.0, size=(30, 1000)).astype(np.float32),  # bootstrap counts
        np.full((2, 4), limit / 4 - 1, dtype=np.float32),  # sums just below 2**24
        np.full((2, 4), limit / 4, dtype=np.float32),  # sums at 2**24
        np.array([[limit - 1.0, 0.0], [0.0, 1.0]], dtype=np.float32),  # one big count
        np.array([[-(limit / 2), -(limit / 2)]], dtype=np.float32),  # negative counts
        np.zeros((0, 3), dtype=np.float32),
    ]
    for w in cases:
        expected = w.size == 0 or float(np.abs(w).sum(axis=1, dtype=np.float64).max()) < limit
        assert ap._sums_exact32(w) == expected
