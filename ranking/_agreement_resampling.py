"""Resampling of inter-rater agreement: bootstrap replicates and intervals.

Krippendorff's alpha and Fleiss' kappa on bootstrap replicates over units, over
annotators or both (:func:`agreement_replicates`, :func:`agreement_bootstrap`), and
Fleiss' kappa on the completely rated units. The point statistics are in
:mod:`ranking._agreement_point`; :mod:`ranking.agreement` re-exports the public names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from ranking._agreement_point import (
    _EPS,
    _EXACT32_SUM,
    AgreementResult,
    MaskedFloatArray,
    _as_ratings,
    _masked,
    _resolve_labels,
    _sums_exact32,
    _ZeroOne,
    fleiss_kappa,
    krippendorff_alpha,
    rating_counts,
)
from ranking._validation import make_rng
from ranking.errors import InvalidParameterError, ShapeError
from ranking.types import BoolArray, FloatArray, IntArray, RNGLike

__all__ = [
    "RESAMPLE_SCHEMES",
    "AgreementBootstrapResult",
    "AgreementReplicates",
    "BootstrapDistribution",
    "Resample",
    "agreement_bootstrap",
    "agreement_replicates",
    "fleiss_kappa_complete",
]

Resample: TypeAlias = Literal["units", "annotators", "both"]

RESAMPLE_SCHEMES: tuple[Resample, Resample, Resample] = ("units", "annotators", "both")
"""Bootstrap schemes: over units (raters fixed), over annotators (units fixed), and
both at once (the two-way or pigeonhole bootstrap of Owen, 2007)."""

# ---------------------------------------------------------------------------
# bootstrap of alpha and Fleiss' kappa


@dataclass(frozen=True)
class AgreementReplicates:
    """Nominal Krippendorff's alpha and Fleiss' kappa on bootstrap replicates.

    See :func:`agreement_replicates`.
    """

    alpha: MaskedFloatArray
    """Masked array of shape (n_replicates,): nominal alpha per replicate, masked
    where undefined."""
    fleiss: MaskedFloatArray
    """Masked array of shape (n_replicates,): Fleiss' kappa on the units rated by
    every drawn rater who rated anything, masked where undefined."""
    labels: FloatArray
    """Array of shape (n_categories,): the category codes."""


@dataclass(frozen=True)
class BootstrapDistribution:
    """Bootstrap replicates of one statistic under one resampling scheme."""

    replicates: MaskedFloatArray
    """Masked array of shape (n_boot,): the statistic per replicate, masked where
    undefined."""
    interval: tuple[float, float] | None
    """Percentile interval (numpy's "linear" quantiles) of the defined
    replicates; ``None`` when no replicate is defined."""
    n_valid: int
    """Replicates in which the statistic is defined."""
    scheme: str
    """What was resampled: ``"units"`` (raters fixed), ``"annotators"`` (units
    fixed) or ``"both"`` (units and annotators together, two-way); see
    :data:`RESAMPLE_SCHEMES`."""


@dataclass(frozen=True)
class AgreementBootstrapResult:
    """Alpha and Fleiss' kappa with bootstrap distributions per resampling scheme.

    See :func:`agreement_bootstrap`. A distribution is ``None`` when its
    scheme did not run: it was not asked for or ``n_boot = 0``; units are
    resampled only when at least two units hold a rating (an abstention
    counts), raters only when there are at least two raters and one unit,
    and both only when both conditions hold. Each distribution names its
    ``scheme``; :meth:`distribution` looks one up by statistic and scheme.
    """

    alpha: AgreementResult
    """Nominal Krippendorff's alpha, abstentions as missing."""
    fleiss: AgreementResult
    """Fleiss' kappa on the units rated by every rater (see :func:`fleiss_kappa_complete`),
    abstentions as missing."""
    fleiss_with_abstain: AgreementResult | None
    """Fleiss' kappa with the abstention as one more category; ``None`` without ``abstain``."""
    alpha_over_units: BootstrapDistribution | None
    alpha_over_raters: BootstrapDistribution | None
    fleiss_over_units: BootstrapDistribution | None
    fleiss_over_raters: BootstrapDistribution | None
    fleiss_with_abstain_over_units: BootstrapDistribution | None
    fleiss_with_abstain_over_raters: BootstrapDistribution | None
    n_boot: int
    """Replicates per resampling scheme."""
    confidence: float
    """Coverage of the percentile intervals."""
    labels: FloatArray
    """Array of shape (n_categories,): the category codes (without the abstention)."""
    abstain: float | None
    """The abstention code, or ``None``."""
    alpha_over_both: BootstrapDistribution | None = None
    """Alpha, units and annotators resampled together (two-way)."""
    fleiss_over_both: BootstrapDistribution | None = None
    """Fleiss' kappa, units and annotators resampled together (two-way)."""
    fleiss_with_abstain_over_both: BootstrapDistribution | None = None
    """Fleiss' kappa with the abstention as a category, two-way."""
    schemes: tuple[str, ...] = ("units", "annotators")
    """The schemes asked for, in the order their draws were made."""

    def distribution(self, statistic: str, scheme: str) -> BootstrapDistribution | None:
        """The distribution of ``statistic`` (``"alpha"``, ``"fleiss"`` or
        ``"fleiss_with_abstain"``) under ``scheme`` (one of :data:`RESAMPLE_SCHEMES`)."""
        if statistic not in ("alpha", "fleiss", "fleiss_with_abstain"):
            raise InvalidParameterError(
                f"statistic must be 'alpha', 'fleiss' or 'fleiss_with_abstain', got {statistic!r}"
            )
        if scheme not in RESAMPLE_SCHEMES:
            raise InvalidParameterError(f"scheme must be one of {RESAMPLE_SCHEMES}, got {scheme!r}")
        suffix = {"units": "units", "annotators": "raters", "both": "both"}[scheme]
        out: BootstrapDistribution | None = getattr(self, f"{statistic}_over_{suffix}")
        return out


def _complete_units(ratings: FloatArray) -> tuple[BoolArray, int]:
    """Units rated by every rater who rated anything, and that number of raters."""
    rated = ~np.isnan(ratings)
    raters = rated.any(axis=1)
    if not raters.any():
        return np.zeros(ratings.shape[1], dtype=bool), 0
    return np.asarray(rated[raters].all(axis=0), dtype=np.bool_), int(raters.sum())


def fleiss_kappa_complete(
    ratings: npt.ArrayLike, *, labels: npt.ArrayLike | None = None
) -> AgreementResult:
    """Fleiss' kappa of reliability data, on the units rated by every rater.

    Raters who rated no unit are left out; of the others, only the units
    that all of them rated enter :func:`fleiss_kappa` (which needs the same
    raters on every unit).

    Parameters
    ----------
    ratings : array-like of shape (n_raters, n_units)
        Numeric category codes; NaN where a rater did not rate a unit.
    labels : array-like of shape (n_categories,), optional
        Category codes (default: sorted observed codes).

    Returns
    -------
    AgreementResult
        As :func:`fleiss_kappa` on the complete units. ``value`` is ``None``
        with ``n_units = 0`` when no rater rated anything or no unit was rated
        by all of them.

    Raises
    ------
    ShapeError, InvalidParameterError
        As :func:`rating_counts`.

    References
    ----------
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many
    raters. Psychological Bulletin 76(5), 378-382.

    Examples
    --------
    >>> import numpy as np
    >>> from ranking.agreement import fleiss_kappa_complete
    >>> r = fleiss_kappa_complete([[1, 2, 1, np.nan], [1, 2, 2, 1], [1, 2, 1, 2]])
    >>> round(r.value, 4), r.n_units, r.n_raters
    (0.55, 3, 3)
    >>> fleiss_kappa_complete([[1, np.nan], [np.nan, 2]]).reason
    'no unit is rated by all 2 raters who rated anything; use krippendorff_alpha, which allows missing ratings'
    """  # noqa: E501
    data = _as_ratings(ratings, "ratings", reuse=True)  # only read below
    lab = _resolve_labels(data.ravel(), labels)
    complete, m = _complete_units(data)
    method = "fleiss_kappa"
    if m == 0:
        return AgreementResult.from_reason(reason="no rater rated any unit", method=method)
    if not complete.any():
        return AgreementResult.from_reason(
            reason=f"no unit is rated by all {m} raters who rated anything; use "
            "krippendorff_alpha, which allows missing ratings",
            method=method,
        )
    raters = ~np.isnan(data).all(axis=1)
    # the raters and units kept (the data itself when all are: no copy)
    kept = data if m == data.shape[0] else data[raters]
    if not complete.all():
        kept = kept[:, complete]
    counts, _ = rating_counts(kept, labels=lab)
    return fleiss_kappa(counts)


class _RaterDesign:
    """What the rater bootstrap multiplies by rater draws, for indicators ``F`` (K, A, U)
    (:func:`_indicators`): who rated which unit, and each category's indicator, as
    :class:`_ZeroOne` products made on first use."""

    def __init__(self, F: FloatArray) -> None:
        self.F = F
        rated = F.sum(axis=0) > 0  # (A, U): a cell holds at most one category
        self.rated = rated
        self.everyone = bool(rated.all())
        self.has_any: BoolArray = np.asarray(rated.any(axis=1), dtype=np.bool_)
        self._rated: _ZeroOne | None = None
        self._missing: _ZeroOne | None = None
        self._missed: tuple[IntArray, IntArray] | None = None  # (:meth:`unmissed`)
        # counts and the rated products of their squares (:meth:`_rated_and_squares`)
        self._squares: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]] = []
        self._labels: list[_ZeroOne | None] = [None] * F.shape[0]
        self._derived: int | None = None  # the category made by subtraction (-1: none)

    def rated_products(self, w: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """``w @ rated`` (B, U)."""
        if self._rated is None:
            self._rated = _ZeroOne(self.rated)
        return self._rated(w)

    def missing_products(self, w: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """``w @ (not rated)`` (B, U)."""
        if self._missing is None:
            self._missing = _ZeroOne(~self.rated)
        return self._missing(w)

    def _rated_and_squares(self, w: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """``rated_products(w)`` for counts ``w``; with it, when one product gives both
        exactly, ``rated_products(w * w)``, kept for :meth:`square_products` of the same
        ``w`` (the rater bootstrap needs both, and the rated cells are a sparse product).

        The product of ``w + 2**k w**2`` (``2**k`` above every row sum of ``w``) with the
        0/1 rated cells: every partial sum is an integer below 2**23 (checked from the row
        sums of the non-negative terms), exact in float32 in any order, so its two parts
        are recovered exactly, the integers the two products give."""
        assert self._rated is not None
        if w.size and _counts(w) and self._rated.cheap:
            sq = w * w  # exact: small integer counts
            top = int(w.sum(axis=1, dtype=np.float64).max())
            scale = float(1 << top.bit_length())  # a power of two above every row sum
            top_sq = float(sq.sum(axis=1, dtype=np.float64).max())
            if scale * (top_sq + 1.0) <= _EXACT32_SUM // 2:
                both = self._rated(w + np.float32(scale) * sq)
                squares = np.floor(both / np.float32(scale))
                self._squares = [*self._squares[-1:], (w, squares)]  # the last two
                out: npt.NDArray[np.float32] = both - np.float32(scale) * squares
                return out
        return self._rated(w)

    def square_products(self, w: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """``rated_products(w * w)``, the one :meth:`_rated_and_squares` kept for the same
        counts if it did."""
        for i, (counts, squares) in enumerate(self._squares):
            if counts.shape == w.shape and np.array_equal(counts, w):
                del self._squares[i]
                return squares
        return self.rated_products(w * w)

    def unmissed(self, drawn: BoolArray) -> BoolArray:
        """(B, U): whether no rater drawn in replicate b (``drawn`` (B, A)) missed unit u,
        ``missing_products(drawn) == 0``, without the counts: bits of the replicates
        (64 per word) ORed over the raters who missed each unit (a sparse product in the
        OR semiring, 64 replicates per operation)."""
        n_b, n_u = drawn.shape[0], self.rated.shape[1]
        if self._missed is None:
            # per unit, the raters who missed it (by unit, then rater), and how many
            unit, rater = np.nonzero(~self.rated.T)
            self._missed = (rater, np.bincount(unit, minlength=n_u))
        rater, count = self._missed
        words = -(-n_b // 64)
        bits = np.zeros((drawn.shape[1], words * 8), dtype=np.uint8)
        bits[:, : -(-n_b // 8)] = np.packbits(drawn.T, axis=1, bitorder="little")
        hit = np.zeros((n_u, words), dtype=np.uint64)  # (U, words): a drawn rater missed it
        some = count > 0
        if rater.size:
            start = (np.cumsum(count) - count)[some]  # strictly increasing: no empty segment
            hit[some] = np.bitwise_or.reduceat(bits.view(np.uint64)[rater], start, axis=0)
        missed = np.unpackbits(hit.view(np.uint8), axis=1, count=n_b, bitorder="little")
        out: BoolArray = missed.T == 0
        return out

    def label(self, k: int) -> _ZeroOne:
        z = self._labels[k]
        if z is None:
            z = self._labels[k] = _ZeroOne(self.F[k] > 0)
        return z

    def _derived_label(self) -> int:
        """The category whose product is the rated count minus the others' (-1: none)."""
        n_k = self.F.shape[0]
        if self._rated is None:
            self._rated = _ZeroOne(self.rated)
        if self._derived is None:
            dense = [k for k in range(n_k) if not self.label(k).cheap]
            ok = n_k >= 2 and self._rated.cheap and bool(dense)
            self._derived = max(dense, key=lambda k: int(np.count_nonzero(self.F[k]))) if ok else -1
        return self._derived

    def label_products(
        self, w: npt.ArrayLike, given: dict[int, npt.NDArray[np.float32]] | None = None
    ) -> list[npt.NDArray[np.float32]]:
        """``w @ F[k]`` for each category k. When the products with ``rated`` are cheap
        (nearly every rater rated nearly every unit, :class:`_ZeroOne`), the category
        with the most ones is the rated count minus the others' (exact integers).
        ``given``: products already made (:meth:`label_products_pair`), by category."""
        n_k = self.F.shape[0]
        made = {} if given is None else given

        def product(k: int) -> npt.NDArray[np.float32]:
            return made[k] if k in made else self.label(k)(w)

        d = self._derived_label()
        if d < 0 or not _sums_exact32(np.asarray(w, dtype=np.float32)):
            return [product(k) for k in range(n_k)]
        out: list[npt.NDArray[np.float32] | None] = [
            None if k == d else product(k) for k in range(n_k)
        ]
        rest = self._rated_and_squares(np.asarray(w, dtype=np.float32))
        for k in range(n_k):
            x = out[k]
            if x is not None:
                rest -= x
        out[d] = rest
        return [x for x in out if x is not None]

    def label_products_pair(
        self, w1: npt.ArrayLike, w2: npt.ArrayLike
    ) -> tuple[list[npt.NDArray[np.float32]], list[npt.NDArray[np.float32]]]:
        """:meth:`label_products` of two sets of counts (the rater draws of two bootstrap
        schemes), each dense product made once for both: ``(w1 + 2**k w2) @ F[k]`` with
        ``2**k`` above every row sum of ``w1``, whose terms and partial sums are integers
        at least 0 and below 2**23 (checked from the row sums), exact in float32 in any
        order, so its two parts ``w1 @ F[k]`` and ``w2 @ F[k]`` are recovered exactly."""
        a = np.asarray(w1, dtype=np.float32)
        b = np.asarray(w2, dtype=np.float32)
        d = self._derived_label()
        dense = [k for k in range(self.F.shape[0]) if k != d and not self.label(k).cheap]
        made1: dict[int, npt.NDArray[np.float32]] = {}
        made2: dict[int, npt.NDArray[np.float32]] = {}
        counts = a.size and a.shape == b.shape and _counts(a) and _counts(b)
        if dense and counts:
            scale = float(1 << int(a.sum(axis=1, dtype=np.float64).max()).bit_length())
            if scale * (float(b.sum(axis=1, dtype=np.float64).max()) + 1.0) <= 2.0**23:
                packed = a + np.float32(scale) * b
                for k in dense:
                    both = self.label(k)(packed)
                    made2[k] = np.floor(both / np.float32(scale))
                    made1[k] = both - np.float32(scale) * made2[k]
        return self.label_products(a, made1), self.label_products(b, made2)


def _counts(w: npt.NDArray[np.float32]) -> bool:
    """Whether ``w`` holds non-negative integers."""
    return bool((w >= 0).all() and (w == np.floor(w)).all())


def _indicators(ratings: FloatArray, labels: FloatArray) -> FloatArray:
    """Array of shape (n_categories, n_raters, n_units): indicator of each code."""
    return np.stack([np.equal(ratings, lab).astype(np.float64) for lab in labels])


def _boot_counts(rng: np.random.Generator, n_rep: int, n: int) -> FloatArray:
    """Array of shape (n_rep, n): times each of ``n`` objects is drawn, n draws per row."""
    idx = rng.integers(0, n, size=(n_rep, n))
    idx += (np.arange(n_rep) * n)[:, None]  # row r's draws as r * n + draw: one count
    counts = np.bincount(idx.ravel(), minlength=n_rep * n).reshape(n_rep, n)
    return counts.astype(np.float64)


def _alpha_from_sums(N: FloatArray, o: FloatArray, nc: FloatArray) -> FloatArray:
    """Nominal alpha from pairable values N, observed agreement o and value counts nc."""
    with np.errstate(invalid="ignore", divide="ignore"):
        d_o = (N - o) / N
        d_e = (N * N - (nc * nc).sum(axis=1)) / (N * (N - 1.0))
        out = 1.0 - d_o / d_e
    ok = (N > 1) & (d_e > _EPS)
    return np.where(ok, out, np.nan)


def _fleiss_from(p_bar: FloatArray, p_j: FloatArray, ok: BoolArray) -> FloatArray:
    """Fleiss' kappa from mean unit agreement and category shares; NaN where undefined."""
    with np.errstate(invalid="ignore", divide="ignore"):
        p_e = (p_j * p_j).sum(axis=1)
        out = (p_bar - p_e) / (1.0 - p_e)
    return np.where(ok & (1.0 - p_e > _EPS), out, np.nan)


def _replicates_over_units(F: FloatArray, W: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Alpha and Fleiss' kappa per unit-resample; NaN where undefined (internal sentinel).

    ``F`` has shape (K, A, U) (see :func:`_indicators`), ``W`` shape (B, U).
    """
    rated = F.sum(axis=0)  # (A, U)
    n = F.sum(axis=1).T  # (U, K)
    m = n.sum(axis=1)
    pairable = m >= 2
    s = np.where(pairable, (n * (n - 1.0)).sum(axis=1) / np.maximum(m - 1.0, 1.0), 0.0)
    N = W @ np.where(pairable, m, 0.0)
    o = W @ s
    nc = W @ (n * pairable[:, None])  # (B, K)
    alpha = _alpha_from_sums(N, o, nc)
    raters = rated.any(axis=1)
    n_r = int(raters.sum())
    complete = rated[raters].all(axis=0) if n_r else np.zeros(F.shape[2], dtype=bool)
    if n_r >= 2 and complete.any():
        nu = n[complete]
        p_u = ((nu * nu).sum(axis=1) - n_r) / (n_r * (n_r - 1.0))
        Wc = W[:, complete]
        tot = Wc.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            p_bar = (Wc @ p_u) / tot
            p_j = (Wc @ nu) / (tot * n_r)[:, None]
        kappa = _fleiss_from(p_bar, p_j, tot > 0)
    else:
        kappa = np.full(W.shape[0], np.nan)
    return alpha, kappa


def _replicates_over_raters(
    F: FloatArray,
    rater_weights: FloatArray,
    *,
    need_alpha: bool = True,
    unit_weights: FloatArray | None = None,
    products: list[npt.NDArray[np.float32]] | None = None,
    design: _RaterDesign | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Alpha and Fleiss' kappa per rater-resample; NaN where undefined (internal sentinel).

    ``F`` has shape (K, A, U), ``rater_weights`` shape (B, A). A rater drawn
    twice is two raters whose copies are never paired with each other. Alpha is
    all NaN when ``need_alpha`` is false. With ``unit_weights`` of shape (B, U)
    the units are resampled too (two-way): every sum over units is weighted by
    how often the unit was drawn in that replicate. ``products`` are the K products
    ``W @ F[k]`` of :func:`_rater_products` when the caller has them, ``design`` the
    :class:`_RaterDesign` of ``F``.

    Every product with the rater draws is a count, exact in float32 however it is made
    (:class:`_ZeroOne`); the sums of its squares are made in the same order as
    ``np.add.reduce`` of the list of squares.
    """
    d = _RaterDesign(F) if design is None else design
    # Counts are small integers, exact in float32: the products run in float32 and
    # the sums over units in float64. Per replicate b and unit u: n_k = sum_a w_a
    # x_auk, m = sum_k n_k, s2 = sum_a w_a^2 x_au (pairs of a rater with its own
    # copies). Ordered pairs of values from different raters: m^2 - s2, of which
    # sum_k n_k^2 - s2 agree.
    W = rater_weights.astype(np.float32)
    n = _rater_products(F, rater_weights, d) if products is None else products  # K x (B, U)
    m = n[0].copy()
    sumsq = n[0] * n[0]
    for x in n[1:]:
        m += x
        sumsq += x * x
    n_units = F.shape[2]
    # every rater rated every unit (a complete design, as with the abstention code):
    # each unit's sum is the row sum (exact either way: small integers in float32)
    everyone = d.everyone
    if everyone:
        s2 = np.repeat((W * W).sum(axis=1, dtype=np.float32)[:, None], n_units, axis=1)
    else:
        s2 = d.square_products(W)  # W * W times the rated cells
    pairs_u = m * m - s2
    pairable = pairs_u > 0
    agree = sumsq - s2
    # share = where(pairable, agree / where(pairable, pairs_u, 1), 0), in float32 as
    # before, computed in place
    np.copyto(pairs_u, 1.0, where=~pairable)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.divide(agree, pairs_u, out=agree)
    np.copyto(share, 0.0, where=~pairable)
    uw: FloatArray | float = 1.0 if unit_weights is None else unit_weights

    if need_alpha:
        # N and nc are sums of integer counts, exact in float64 in any order (_count_sums)
        N = _count_sums(m, unit_weights, pairable)
        o = (uw * share * m).sum(axis=1, dtype=np.float64)
        nc = np.stack([_count_sums(x, unit_weights, pairable) for x in n], axis=1)
        alpha = _alpha_from_sums(N, o, nc)
    else:
        alpha = np.full(W.shape[0], np.nan)
    has_any = d.has_any  # (A,)
    drawn = (W > 0) & has_any[None, :]
    # ratings per complete unit (exact integer sums)
    m_b = (W if has_any.all() else W * has_any[None, :]).sum(axis=1, dtype=np.float64)
    enough = (np.count_nonzero(drawn, axis=1) >= 2)[:, None]
    if everyone:  # no rater misses a unit
        complete = np.broadcast_to(enough, (W.shape[0], n_units)).copy()
    else:  # no drawn rater missed the unit
        complete = d.unmissed(drawn) & enough
    if not complete.any():  # no replicate has a complete unit: kappa undefined in each
        return alpha, np.full(W.shape[0], np.nan)
    if unit_weights is None and complete.all():
        # every weight of cw = 1 * complete is 1: cw * share is share in float64, and the
        # sums of the counts are exact integers whichever way they are made
        cnt = np.full(W.shape[0], float(n_units))
        with np.errstate(invalid="ignore", divide="ignore"):
            p_bar = share.astype(np.float64).sum(axis=1) / cnt
            p_j = np.stack([_count_sums(x) for x in n], axis=1) / (cnt * m_b)[:, None]
        return alpha, _fleiss_from(p_bar, p_j, cnt > 0)
    cw = uw * complete if not complete.all() else uw  # (B, U): weight of each complete unit
    cnt = np.asarray(cw).sum(axis=1, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_bar = (cw * share).sum(axis=1, dtype=np.float64) / cnt
        # cw * x: the unit weights times the counts on the complete units (_count_sums)
        mask = None if complete.all() else complete
        p_j = (
            np.stack([_count_sums(x, unit_weights, mask) for x in n], axis=1) / (cnt * m_b)[:, None]
        )
    kappa = _fleiss_from(p_bar, p_j, cnt > 0)
    return alpha, kappa


def _count_sums(
    x: npt.NDArray[np.float32],
    weights: FloatArray | None = None,
    where: BoolArray | None = None,
) -> FloatArray:
    """Row sums of ``weights * x`` over the cells ``where`` (default all), in float64, for
    non-negative integer counts ``x`` (B, U) and weights (B, U): the float64 sums of
    these integers, made in float32 when that is exact.

    Every term and partial sum of non-negative integers is at most its row's total: when
    the float32 totals are below 2**23 (so the exact ones are below 2**24, the float32
    rounding being far smaller than the margin), every partial sum is an integer float32
    holds exactly, whatever the order, and the totals are the exact ones. Otherwise the
    float64 sums, as before."""
    v = x if where is None else np.where(where, x, np.float32(0.0))
    if weights is not None:
        v = v * weights.astype(np.float32)
    total = v.sum(axis=1)
    if total.size == 0 or float(total.max()) < 2.0**23:
        out: FloatArray = total.astype(np.float64)
        return out
    w = 1.0 if weights is None else weights  # pragma: no cover - counts of millions
    exact: FloatArray = (w * (x if where is None else np.where(where, x, 0.0))).sum(
        axis=1, dtype=np.float64
    )
    return exact


def _rater_products(
    F: FloatArray, rater_weights: FloatArray, design: _RaterDesign | None = None
) -> list[npt.NDArray[np.float32]]:
    """``W @ F[k]`` for each category k, in float32 (exact: small integer counts), made as
    :meth:`_RaterDesign.label_products` makes them."""
    d = _RaterDesign(F) if design is None else design
    return d.label_products(rater_weights.astype(np.float32))


def _with_abstain_products(
    Fa: FloatArray,
    F: FloatArray,
    rater_weights: FloatArray,
    label_products: list[npt.NDArray[np.float32]],
    design: _RaterDesign | None = None,
) -> list[npt.NDArray[np.float32]]:
    """:func:`_rater_products` of ``Fa`` (abstention first, then the labels) reusing those
    of ``F`` (the labels): a label's indicator is the same whether abstentions are missing
    or a category, so only the abstention's product is new (checked, unless ``design``,
    the :class:`_RaterDesign` of ``Fa``, is given by a caller that built ``Fa`` from
    ``F``). When every rater rated every unit (abstentions included), it is the drawn
    raters minus the labels' counts (exact integers), without a product."""
    if design is None and not np.array_equal(Fa[1:], F):  # pragma: no cover - by design
        return _rater_products(Fa, rater_weights)
    everyone = design.everyone if design is not None else bool((Fa.sum(axis=0) > 0).all())
    W = rater_weights.astype(np.float32)
    if _sums_exact32(W) and everyone:
        abstained = np.repeat(W.sum(axis=1, dtype=np.float32)[:, None], Fa.shape[2], axis=1)
        for x in label_products:
            abstained -= x
        return [abstained, *label_products]
    return [_rater_products(Fa[:1], rater_weights)[0], *label_products]


def _as_weights(w: npt.ArrayLike, name: str, n: int, what: str) -> FloatArray:
    arr = np.asarray(w, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != n:
        raise ShapeError(
            f"{name} must have shape (n_replicates, {n}) for {n} {what}, got {arr.shape}"
        )
    if not np.isfinite(arr).all() or (arr < 0).any() or np.any(arr != np.rint(arr)):
        raise InvalidParameterError(f"{name} must hold non-negative integer draw counts")
    return arr


def agreement_replicates(
    reliability_data: npt.ArrayLike,
    *,
    unit_weights: npt.ArrayLike | None = None,
    rater_weights: npt.ArrayLike | None = None,
    labels: npt.ArrayLike | None = None,
) -> AgreementReplicates:
    """Nominal alpha and Fleiss' kappa for many bootstrap replicates at once.

    A replicate repeats units, raters, or both (two-way), each weight being
    how many times that unit or rater was drawn. The statistics are computed
    from weighted sums, without building the resampled data.

    A rater drawn twice is two raters, but the copies are never paired with
    each other: only pairs of values from different original raters count as
    agreement (otherwise every duplicate would add perfect self-agreement and
    bias the interval upwards). With unit weights, and with rater weights
    that are all 0 or 1, each replicate equals :func:`krippendorff_alpha` and
    :func:`fleiss_kappa_complete` on the explicitly resampled data.

    Parameters
    ----------
    reliability_data : array-like of shape (n_raters, n_units)
        Numeric category codes; NaN where a rater did not rate a unit.
    unit_weights : array-like of shape (n_replicates, n_units), optional
        Draw counts of the units (raters fixed).
    rater_weights : array-like of shape (n_replicates, n_raters), optional
        Draw counts of the raters (units fixed). Give one of the two, or
        both with the same number of replicates for the two-way bootstrap
        (each replicate equals the rater-weighted replicate on the data whose
        units were repeated by ``unit_weights``).
    labels : array-like of shape (n_categories,), optional
        Category codes (default: sorted observed codes).

    Returns
    -------
    AgreementReplicates
        ``alpha`` and ``fleiss`` as masked arrays of shape (n_replicates,).
        Fleiss' kappa uses the units rated by every drawn rater who rated anything.

    Raises
    ------
    ShapeError
        If ``reliability_data`` is not 2-D or a weight matrix has the wrong shape.
    InvalidParameterError
        For bad codes, neither weight matrix, or weights that are not
        non-negative integers.

    References
    ----------
    Hayes, A. F. and Krippendorff, K. (2007). Answering the call for a
    standard reliability measure for coding data. Communication Methods and
    Measures 1(1), 77-89.
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap.
    Chapman & Hall.
    Owen, A. B. (2007). The pigeonhole bootstrap. Annals of Applied Statistics
    1(2), 386-411 (units and raters resampled together).

    Examples
    --------
    The first replicate keeps every unit once; the second drops the last unit:

    >>> from ranking.agreement import agreement_replicates, krippendorff_alpha
    >>> data = [[1, 2, 1, 2], [1, 2, 2, 2], [1, 2, 1, 1]]
    >>> rep = agreement_replicates(data, unit_weights=[[1, 1, 1, 1], [1, 1, 2, 0]])
    >>> [round(float(a), 4) for a in rep.alpha]
    [0.3889, 0.3714]
    >>> round(krippendorff_alpha([[1, 2, 1, 1], [1, 2, 2, 2], [1, 2, 1, 1]]).value, 4)
    0.3714
    """
    data = _as_ratings(reliability_data, "reliability_data")
    lab = _resolve_labels(data.ravel(), labels)
    F = _indicators(data, lab)
    if unit_weights is not None and rater_weights is None:
        W = _as_weights(unit_weights, "unit_weights", data.shape[1], "units")
        alpha, kappa = _replicates_over_units(F, W)
    elif rater_weights is not None and unit_weights is None:
        W = _as_weights(rater_weights, "rater_weights", data.shape[0], "raters")
        alpha, kappa = _replicates_over_raters(F, W)
    elif rater_weights is not None and unit_weights is not None:
        Wr = _as_weights(rater_weights, "rater_weights", data.shape[0], "raters")
        Wu = _as_weights(unit_weights, "unit_weights", data.shape[1], "units")
        if Wr.shape[0] != Wu.shape[0]:
            raise ShapeError(
                f"unit_weights and rater_weights hold {Wu.shape[0]} and {Wr.shape[0]} "
                "replicates; the two-way bootstrap needs the same number"
            )
        alpha, kappa = _replicates_over_raters(F, Wr, unit_weights=Wu)
    else:
        raise InvalidParameterError(
            "give exactly one of unit_weights (resample units) and rater_weights (resample "
            "raters), or both (resample both, two-way)"
        )
    return AgreementReplicates(alpha=_masked_nan(alpha), fleiss=_masked_nan(kappa), labels=lab)


def _masked_nan(x: FloatArray) -> MaskedFloatArray:
    ok = ~np.isnan(x)
    return _masked(np.where(ok, x, 0.0), mask=~ok)


def _distribution(x: FloatArray, confidence: float, scheme: str) -> BootstrapDistribution:
    """Percentile interval of the defined replicates (NaN = undefined)."""
    v = x[~np.isnan(x)]
    interval = None
    if v.size:
        a = (1.0 - confidence) / 2.0
        lo, hi = np.quantile(v, [a, 1.0 - a])
        interval = (float(lo), float(hi))
    return BootstrapDistribution(
        replicates=_masked_nan(x), interval=interval, n_valid=int(v.size), scheme=scheme
    )


def _check_resample(resample: Resample | tuple[Resample, ...] | list[Resample]) -> tuple[str, ...]:
    """The schemes asked for, as a tuple in the order of :data:`RESAMPLE_SCHEMES`."""
    asked = (resample,) if isinstance(resample, str) else tuple(resample)
    for x in asked:
        if x not in RESAMPLE_SCHEMES:
            raise InvalidParameterError(
                f"resample must be one of {RESAMPLE_SCHEMES} or a sequence of them, got {x!r}"
            )
    return tuple(x for x in RESAMPLE_SCHEMES if x in asked)


def agreement_bootstrap(
    reliability_data: npt.ArrayLike,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    rng: RNGLike = None,
    labels: npt.ArrayLike | None = None,
    abstain: float | None = None,
    resample: Resample | tuple[Resample, ...] | list[Resample] = ("units", "annotators"),
) -> AgreementBootstrapResult:
    """Nominal alpha and Fleiss' kappa with percentile bootstrap intervals.

    Three resampling schemes are offered, each run ``n_boot`` times:

    * ``"units"``: units resampled, raters fixed. Right when the raters are
      the population of interest (this panel's agreement on more items like
      these).
    * ``"annotators"``: raters resampled, units fixed (this item set rated by
      more raters like these).
    * ``"both"``: units and raters resampled independently in each replicate
      (the two-way, crossed or *pigeonhole* bootstrap of Owen, 2007), for a
      crossed random-effects design where both the items and the annotators
      are samples. Right when the result should generalise to other items
      *and* other annotators, as in a crowd study: there each one-way
      interval ignores one source of variance and under-covers (in the
      simulation of ``benchmarks/bench_agreement_coverage.py``, 8 annotators
      drawn from a heterogeneous pool rating 60 pairs, the 95% interval of
      alpha covers the population value about 59% of the time over units
      and 83% over annotators, while the two-way interval covers 92%; 96% with
      5 annotators, 95% with 15). Owen shows the two-way
      bootstrap variance is slightly conservative (it counts the interaction
      variance up to three times), so its coverage errs above nominal.

    Over raters, a rater drawn several times is never paired with its own
    copy (see :func:`agreement_replicates`). Fleiss' kappa uses the units
    rated by every (drawn) rater who rated anything. Each
    :class:`BootstrapDistribution` names its ``scheme``.

    An *abstention* (e.g. a "skip" vote) is a rating without a category: it
    is missing for alpha and Fleiss' kappa, and one more category for
    ``fleiss_with_abstain``. Both statistics share the same draws.

    Parameters
    ----------
    reliability_data : array-like of shape (n_raters, n_units)
        Numeric codes; NaN where a rater did not rate a unit.
    n_boot : int, default 1000
        Replicates per scheme; 0 gives the point estimates only.
    confidence : float, default 0.95
        Coverage of the intervals, in (0, 1).
    rng : numpy.random.Generator, int or None
        Source of the draws, made scheme by scheme in the order ``"units"``,
        ``"annotators"``, ``"both"`` (of those asked for): unit draws of
        shape (n_boot, n_units), rater draws of shape (n_boot, n_raters),
        and for ``"both"`` unit draws then rater draws, each as
        ``rng.integers(0, n, size=(n_boot, n))``.
    labels : array-like of shape (n_categories,), optional
        Category codes, without the abstention (default: sorted observed codes).
    abstain : float, optional
        The code of an abstention.
    resample : {"units", "annotators", "both"} or a sequence of them
        The schemes to run (default the two one-way schemes, as before the
        two-way one was added; pass ``"both"`` for the two-way interval alone).

    Returns
    -------
    AgreementBootstrapResult
        Point estimates and, per statistic and scheme, a
        :class:`BootstrapDistribution` (``None`` when the scheme did not run:
        not asked for; units need at least two units with a rating,
        abstentions included; raters need at least two raters and one unit;
        both need both).

    Raises
    ------
    ShapeError
        If ``reliability_data`` is not 2-D.
    InvalidParameterError
        For bad codes (a code outside ``labels`` and ``abstain``), an
        abstention code among ``labels``, ``n_boot < 0``, ``confidence``
        outside (0, 1) or an unknown scheme.

    References
    ----------
    Hayes, A. F. and Krippendorff, K. (2007). Answering the call for a
    standard reliability measure for coding data. Communication Methods and
    Measures 1(1), 77-89.
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many
    raters. Psychological Bulletin 76(5), 378-382.
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap.
    Chapman & Hall.
    Owen, A. B. (2007). The pigeonhole bootstrap. Annals of Applied Statistics
    1(2), 386-411.
    McCullagh, P. (2000). Resampling and exchangeable arrays. Bernoulli 6(2),
    285-301 (no exact bootstrap exists for crossed designs; two-way
    resampling is the conservative choice).

    Examples
    --------
    Four raters, eight units, code 0 an abstention:

    >>> from ranking.agreement import agreement_bootstrap
    >>> data = [[1, 2, 1, 2, 1, 1, 2, 0],
    ...         [1, 2, 1, 2, 2, 1, 2, 1],
    ...         [1, 2, 2, 2, 1, 1, 0, 1],
    ...         [1, 2, 1, 1, 1, 1, 2, 1]]
    >>> r = agreement_bootstrap(data, n_boot=200, rng=0, labels=[1, 2], abstain=0)
    >>> round(r.alpha.value, 3), round(r.fleiss.value, 3)
    (0.597, 0.467)
    >>> lo, hi = r.alpha_over_units.interval
    >>> bool(lo <= r.alpha.value <= hi), r.alpha_over_units.replicates.shape
    (True, (200,))
    >>> both = agreement_bootstrap(data, n_boot=200, rng=0, labels=[1, 2], abstain=0,
    ...                            resample="both")
    >>> both.alpha_over_both.scheme, both.alpha_over_units is None, both.schemes
    ('both', True, ('both',))
    """
    data = _as_ratings(reliability_data, "reliability_data", reuse=True)  # only read below
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 0:
        raise InvalidParameterError(f"n_boot must be an integer >= 0, got {n_boot!r}")
    conf = float(confidence)
    if not 0.0 < conf < 1.0:
        raise InvalidParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    if abstain is not None and not np.isfinite(float(abstain)):
        raise InvalidParameterError(f"abstain must be a finite code, got {abstain!r}")
    schemes = _check_resample(resample)
    gen = make_rng(rng)
    judged = data if abstain is None else np.where(data == abstain, np.nan, data)
    lab = _resolve_labels(judged.ravel(), labels)
    if abstain is not None and np.any(lab == abstain):
        raise InvalidParameterError(
            f"abstain code {abstain!r} is among labels {lab.tolist()}; an abstention is not a "
            "category"
        )
    lab_all = lab if abstain is None else np.concatenate([[float(abstain)], lab])
    alpha = krippendorff_alpha(judged)
    fleiss = fleiss_kappa_complete(judged, labels=lab)
    fleiss_ab = None if abstain is None else fleiss_kappa_complete(data, labels=lab_all)
    n_raters, n_units = data.shape
    dist: dict[str, BootstrapDistribution | None] = {}
    if n_boot > 0 and n_raters > 0 and n_units > 0:
        Fa = None
        if abstain is None:
            F = _indicators(judged, lab)
        else:  # the labels' indicators are F's (abstentions are NaN there): F is a view
            # of Fa's planes 1..K, made in place (the same 0/1 values in the same C layout
            # as _indicators' stack, not a second array of them)
            Fa = np.empty((lab_all.size, *data.shape))
            Fa[0] = np.equal(data, float(abstain))
            for plane, code in enumerate(lab, start=1):
                Fa[plane] = np.equal(judged, code)
            F = Fa[1:]
        design = _RaterDesign(F)  # the 0/1 matrices of the rater draws' products, once
        design_a: _RaterDesign | None = None  # Fa's, made once when the raters are drawn
        units_ok = int((~np.isnan(data)).any(axis=0).sum()) >= 2
        raters_ok = n_raters >= 2
        if "units" in schemes and units_ok:
            wu = _boot_counts(gen, n_boot, n_units)
            a, k = _replicates_over_units(F, wu)
            dist["alpha_u"] = _distribution(a, conf, "units")
            dist["fleiss_u"] = _distribution(k, conf, "units")
            if Fa is not None:
                k_ab = _replicates_over_units(Fa, wu)[1]
                dist["fleiss_ab_u"] = _distribution(k_ab, conf, "units")
        # the rater draws of both schemes first (in the documented order), so that their
        # products with each category's indicator are made together
        do_raters = "annotators" in schemes and raters_ok
        do_both = "both" in schemes and units_ok and raters_ok
        wr_r = _boot_counts(gen, n_boot, n_raters) if do_raters else None
        wu_b = _boot_counts(gen, n_boot, n_units) if do_both else None
        wr_b = _boot_counts(gen, n_boot, n_raters) if do_both else None
        n_f_r = n_f_b = None
        if wr_r is not None and wr_b is not None:
            n_f_r, n_f_b = design.label_products_pair(
                wr_r.astype(np.float32), wr_b.astype(np.float32)
            )
        if wr_r is not None:
            wr = wr_r
            n_f = _rater_products(F, wr, design) if n_f_r is None else n_f_r
            a, k = _replicates_over_raters(F, wr, products=n_f, design=design)
            dist["alpha_r"] = _distribution(a, conf, "annotators")
            dist["fleiss_r"] = _distribution(k, conf, "annotators")
            if Fa is not None:
                design_a = _RaterDesign(Fa) if design_a is None else design_a
                n_fa = _with_abstain_products(Fa, F, wr, n_f, design_a)
                k_ab = _replicates_over_raters(
                    Fa, wr, need_alpha=False, products=n_fa, design=design_a
                )[1]
                dist["fleiss_ab_r"] = _distribution(k_ab, conf, "annotators")
        if wu_b is not None and wr_b is not None:
            wu, wr = wu_b, wr_b
            n_f = _rater_products(F, wr, design) if n_f_b is None else n_f_b
            a, k = _replicates_over_raters(F, wr, unit_weights=wu, products=n_f, design=design)
            dist["alpha_b"] = _distribution(a, conf, "both")
            dist["fleiss_b"] = _distribution(k, conf, "both")
            if Fa is not None:
                design_a = _RaterDesign(Fa) if design_a is None else design_a
                n_fa = _with_abstain_products(Fa, F, wr, n_f, design_a)
                k_ab = _replicates_over_raters(
                    Fa, wr, need_alpha=False, unit_weights=wu, products=n_fa, design=design_a
                )[1]
                dist["fleiss_ab_b"] = _distribution(k_ab, conf, "both")
    return AgreementBootstrapResult(
        alpha=alpha,
        fleiss=fleiss,
        fleiss_with_abstain=fleiss_ab,
        alpha_over_units=dist.get("alpha_u"),
        alpha_over_raters=dist.get("alpha_r"),
        fleiss_over_units=dist.get("fleiss_u"),
        fleiss_over_raters=dist.get("fleiss_r"),
        fleiss_with_abstain_over_units=dist.get("fleiss_ab_u"),
        fleiss_with_abstain_over_raters=dist.get("fleiss_ab_r"),
        n_boot=int(n_boot),
        confidence=conf,
        labels=lab,
        abstain=None if abstain is None else float(abstain),
        alpha_over_both=dist.get("alpha_b"),
        fleiss_over_both=dist.get("fleiss_b"),
        fleiss_with_abstain_over_both=dist.get("fleiss_ab_b"),
        schemes=schemes,
    )
