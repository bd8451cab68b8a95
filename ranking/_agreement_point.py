"""Point statistics of inter-rater agreement: Cohen's kappa, Fleiss' kappa, Krippendorff's alpha.

The conventions (undefined results, the layout of ``ratings``) are described in
:mod:`ranking.agreement`, which re-exports the public names; the bootstrap is in
:mod:`ranking._agreement_resampling`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from ranking._validation import check_same_length
from ranking.errors import DegenerateDataError, InvalidParameterError, ShapeError
from ranking.types import BoolArray, FloatArray, IntArray

__all__ = [
    "AgreementResult",
    "Level",
    "MaskedFloatArray",
    "PairwiseKappaResult",
    "RaterConsensusResult",
    "Weights",
    "cohen_kappa",
    "cohen_kappa_table",
    "fleiss_kappa",
    "krippendorff_alpha",
    "leave_one_out_agreement",
    "pairwise_cohen_matrix",
    "rating_counts",
]

Weights: TypeAlias = Literal["linear", "quadratic"] | npt.ArrayLike | None
Level: TypeAlias = Literal["nominal", "ordinal", "interval", "ratio"]
MaskedFloatArray: TypeAlias = "np.ma.MaskedArray[Any, np.dtype[np.float64]]"

_LEVELS = ("nominal", "ordinal", "interval", "ratio")
_EPS = 1e-12


def _masked(values: npt.ArrayLike, mask: npt.ArrayLike) -> MaskedFloatArray:
    """A float masked array (numpy.ma is untyped; keep the ignore in one place)."""
    out: MaskedFloatArray = np.ma.MaskedArray(  # type: ignore[no-untyped-call, unused-ignore]
        np.asarray(values, dtype=np.float64), mask=np.asarray(mask, dtype=bool)
    )
    return out


def _mask_of(arr: Any) -> BoolArray:
    """The boolean mask of a masked array, full shape."""
    m: BoolArray = np.asarray(np.ma.getmaskarray(arr), dtype=np.bool_)  # type: ignore[no-untyped-call, unused-ignore]
    return m


def _data_of(arr: Any) -> FloatArray:
    """The data under a masked array."""
    d: FloatArray = np.asarray(np.ma.getdata(arr), dtype=np.float64)  # type: ignore[no-untyped-call, unused-ignore]
    return d


@dataclass(frozen=True)
class AgreementResult:
    """A chance-corrected agreement statistic, or the reason it is undefined.

    The statistic is ``1 - observed_disagreement / expected_disagreement``
    (for Cohen's and Fleiss' kappa the disagreements are one minus the
    observed and chance agreement proportions).
    """

    value: float | None
    """The statistic, or ``None`` when it is undefined (see ``reason``)."""
    reason: str | None
    """Why the statistic is undefined; ``None`` when it is defined."""
    method: str
    """What was computed, e.g. ``"cohen_kappa"`` or ``"krippendorff_alpha(ordinal)"``."""
    n_units: int
    """Units (items, subjects, pairs) that entered the statistic."""
    n_raters: int
    """Raters that contributed at least one used rating."""
    observed_disagreement: float | None
    """Observed disagreement D_o (``None`` when there was nothing to compare)."""
    expected_disagreement: float | None
    """Chance-expected disagreement D_e (``None`` when there was nothing to compare)."""

    @classmethod
    def from_reason(
        cls,
        *,
        method: str,
        reason: str,
        n_units: int = 0,
        n_raters: int = 0,
        observed_disagreement: float | None = None,
        expected_disagreement: float | None = None,
    ) -> AgreementResult:
        """An undefined statistic: ``value`` is ``None`` and ``reason`` says why."""
        return cls(
            value=None,
            reason=reason,
            method=method,
            n_units=n_units,
            n_raters=n_raters,
            observed_disagreement=observed_disagreement,
            expected_disagreement=expected_disagreement,
        )

    @property
    def undefined(self) -> bool:
        """True when the statistic could not be computed; ``reason`` says why."""
        return self.value is None

    def __float__(self) -> float:
        """Return ``value``; raise :class:`DegenerateDataError` if undefined."""
        if self.value is None:
            raise DegenerateDataError(f"{self.method} is undefined: {self.reason}")
        return self.value


@dataclass(frozen=True)
class PairwiseKappaResult:
    """Cohen's kappa for every pair of raters (see :func:`pairwise_cohen_matrix`)."""

    values: MaskedFloatArray
    """Masked array of shape (n_raters, n_raters): kappa of rater i with rater j.

    Symmetric. Entries are masked where kappa is undefined: fewer than
    ``min_overlap`` units rated by both, or both raters used one category on
    their shared units. The diagonal is each rater's kappa with itself (1, or
    masked when the rater used only one category)."""
    overlap: IntArray
    """Array of shape (n_raters, n_raters): units rated by both raters."""
    labels: FloatArray
    """Array of shape (n_categories,): the category codes, in weight order."""
    weights: str
    """``"unweighted"``, ``"linear"``, ``"quadratic"`` or ``"custom"``."""
    min_overlap: int
    """Smallest number of shared units for which a kappa was computed."""

    @property
    def defined(self) -> BoolArray:
        """Boolean array of shape (n_raters, n_raters): True where kappa is defined."""
        return ~_mask_of(self.values)

    def mean(self) -> AgreementResult:
        """Mean kappa over the defined pairs of distinct raters (Light's kappa)."""
        n_raters = int(self.values.shape[0])
        # the defined cells above the diagonal, as a boolean matrix (row by row, as
        # triu_indices orders them), not a gather of half a million masked cells
        ok = np.triu(~_mask_of(self.values), k=1)
        if not ok.any():
            return AgreementResult.from_reason(
                reason="no pair of distinct raters has a defined kappa "
                f"(need at least {self.min_overlap} shared units and two categories used)",
                method="mean_pairwise_cohen_kappa",
                n_raters=n_raters,
            )
        # raters in a defined pair: first (a row) or second (a column) of one
        used = ok.any(axis=1) | ok.any(axis=0)
        return AgreementResult(
            value=float(_data_of(self.values)[ok].mean()),
            reason=None,
            method="mean_pairwise_cohen_kappa",
            n_units=int(np.count_nonzero(ok)),
            n_raters=int(np.count_nonzero(used)),
            observed_disagreement=None,
            expected_disagreement=None,
        )


@dataclass(frozen=True)
class RaterConsensusResult:
    """Agreement of each rater with the consensus of the other raters.

    See :func:`leave_one_out_agreement`.
    """

    kappa: MaskedFloatArray
    """Masked array of shape (n_raters,): Cohen's kappa of each rater with the
    plurality of the others, masked where undefined (see ``reasons``)."""
    percent_agreement: MaskedFloatArray
    """Masked array of shape (n_raters,): share of the rater's compared units on
    which the rater's code equals the others' plurality; masked when no unit
    could be compared."""
    n_units: IntArray
    """Array of shape (n_raters,): units compared for each rater."""
    reasons: tuple[str | None, ...]
    """Length n_raters: why each rater's kappa is undefined, or ``None``."""
    labels: FloatArray
    """Array of shape (n_categories,): the category codes, in weight order."""


# ---------------------------------------------------------------------------
# validation helpers


def _as_ratings(x: Any, name: str, *, copy: bool = True, reuse: bool = False) -> FloatArray:
    """Return ``x`` as a 2-D float array with NaN for missing; reject infinities.

    ``copy=False`` returns a float64 input itself (for callers that only read it);
    ``reuse=True`` a C-contiguous float64 input itself, anything else copied as by
    default: for callers that only read it, the very array the copy would be (same values,
    same layout), without the copy (the report's 1,000 x 1,000 ratings, read by five
    functions).
    """
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise InvalidParameterError(
            f"{name} must hold numeric codes (NaN for missing), got dtype {arr.dtype}; "
            "map category names to numbers first"
        )
    if not (reuse and arr.dtype == np.float64 and arr.flags.c_contiguous):
        arr = arr.astype(np.float64, copy=copy)
    if arr.ndim != 2:
        raise ShapeError(
            f"{name} must be 2-D with shape (n_raters, n_units), got {arr.ndim} dimension(s)"
        )
    if np.isinf(arr).any():
        i, j = np.argwhere(np.isinf(arr))[0]
        raise InvalidParameterError(f"{name}[{i}, {j}] is infinite; use NaN for a missing rating")
    return arr


def _as_codes_1d(x: Any, name: str) -> FloatArray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise InvalidParameterError(
            f"{name} must hold numeric codes (NaN for missing), got dtype {arr.dtype}; "
            "map category names to numbers first"
        )
    arr = arr.astype(np.float64)
    if arr.ndim != 1:
        raise ShapeError(f"{name} must be 1-D with shape (n_units,), got {arr.ndim} dimension(s)")
    if np.isinf(arr).any():
        i = int(np.flatnonzero(np.isinf(arr))[0])
        raise InvalidParameterError(f"{name}[{i}] is infinite; use NaN for a missing rating")
    return arr


def _resolve_labels(observed: FloatArray, labels: npt.ArrayLike | None) -> FloatArray:
    """Category codes in weight order; check every observed code is among them.

    With ``labels`` given, the check first counts the observed values equal to each
    label (one pass per label): when they account for every non-NaN value, no code is
    outside the labels, which is all the sorted distinct codes (:func:`numpy.unique`, a
    sort of every rating) would show; otherwise they are made for the message.
    """
    if labels is None:
        return np.unique(observed[~np.isnan(observed)])
    lab = np.asarray(labels)
    if lab.dtype.kind not in "biuf":
        raise InvalidParameterError(f"labels must be numeric codes, got dtype {lab.dtype}")
    lab = lab.astype(np.float64).ravel()
    if lab.size == 0 or not np.isfinite(lab).all():
        raise InvalidParameterError(f"labels must be a non-empty list of finite codes, got {lab!r}")
    if np.unique(lab).size != lab.size:
        raise InvalidParameterError(f"labels must not repeat a code, got {lab.tolist()}")
    # distinct labels: each value equals at most one of them, and NaN none
    matched = sum(np.count_nonzero(observed == c) for c in lab.tolist())
    if matched == observed.size - np.count_nonzero(np.isnan(observed)):
        return lab
    present = np.unique(observed[~np.isnan(observed)])
    missing = np.setdiff1d(present, lab)
    if missing.size:
        raise InvalidParameterError(
            f"ratings hold codes {missing.tolist()} that are not in labels {lab.tolist()}; "
            "add them to labels or recode the ratings"
        )
    return lab


def _weight_matrix(weights: Weights, k: int) -> tuple[FloatArray, str]:
    """Disagreement weights of shape (k, k) and their name."""
    idx = np.arange(k, dtype=np.float64)
    if weights is None:
        return 1.0 - np.eye(k), "unweighted"
    if isinstance(weights, str):
        if weights == "linear":
            return np.abs(idx[:, None] - idx[None, :]), "linear"
        if weights == "quadratic":
            return (idx[:, None] - idx[None, :]) ** 2, "quadratic"
        raise InvalidParameterError(
            f"weights must be None, 'linear', 'quadratic' or a (k, k) matrix, got {weights!r}"
        )
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (k, k):
        raise ShapeError(f"weights must have shape ({k}, {k}) for {k} categories, got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise InvalidParameterError("weights must be finite and non-negative disagreement weights")
    if np.any(np.diag(w) != 0):
        raise InvalidParameterError(
            f"disagreement weights must be 0 on the diagonal, got {np.diag(w).tolist()}; "
            "to use agreement (similarity) weights s, pass 1 - s"
        )
    return w, "custom"


_EXACT32_UNITS = 2**24
"""Most units for which :func:`pairwise_cohen_matrix` counts its tables in float32."""


def _kappa_from_tables(
    tables: FloatArray, w: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, BoolArray]:
    """Vectorised weighted kappa of contingency tables of shape (..., k, k).

    Returns value, observed and expected disagreement, totals, and the mask
    of defined entries (value 0 where undefined, for internal use only).
    """
    n = tables.sum(axis=(-2, -1))
    safe_n = np.where(n > 0, n, 1.0)
    p = tables / safe_n[..., None, None]
    row = p.sum(axis=-1)
    col = p.sum(axis=-2)
    d_o = (p * w).sum(axis=(-2, -1))
    d_e = np.einsum("...i,...j,ij->...", row, col, w)
    scale = max(float(w.max()), 1.0) if w.size else 1.0
    defined = (n > 0) & (d_e > _EPS * scale)
    value = np.where(defined, 1.0 - d_o / np.where(defined, d_e, 1.0), 0.0)
    return value, d_o, d_e, n, defined


_SPARSE_SHARE = 0.05
"""Largest share of ones (or of zeros) of a 0/1 matrix whose products with counts
:class:`_ZeroOne` makes with a sparse matrix of those ones (or zeros) instead of a dense
float32 product (about four times faster at 3%, break-even near 12% on this machine)."""


_EXACT32_SUM = 2**24
"""Row sums of counts below which every partial sum of their products with a 0/1 matrix
is an integer that float32 holds exactly."""


def _sums_exact32(w: npt.NDArray[np.float32]) -> bool:
    """Whether every row of the integer counts ``w`` has an absolute sum below 2**24."""
    if w.size == 0:
        return True
    # a row's absolute sum is at most its length times the largest magnitude: two passes
    # instead of the sums (half the limit: a margin for the rounding of the product)
    top = max(float(w.max()), -float(w.min()))
    if top * w.shape[-1] < _EXACT32_SUM / 2:
        return True
    return float(np.abs(w).sum(axis=1, dtype=np.float64).max()) < _EXACT32_SUM


class _ZeroOne:
    """Products ``w @ M`` of a 0/1 matrix ``M`` (n, k) with integer counts ``w`` (b, n),
    in float32, each exact (so whichever way it is made, the same bits).

    The counts times 0/1 sum to integers at most the row sums of ``w``: below 2**24 every
    product and partial sum is exact in float32 in any order, as in a float32 matrix
    product (:func:`_rater_products`). So ``M`` with few ones is multiplied as a sparse
    matrix of its ones, ``M`` with few zeros as the row sums of ``w`` minus the product
    with a sparse matrix of its zeros (a study where nearly every annotator rates nearly
    every pair), and any other ``M`` as a dense float32 product. Counts whose row sums
    reach 2**24 (never the bootstrap's) get the dense float32 product, as before. The
    result is a C-contiguous float32 array, as a dense product gives it.
    """

    def __init__(self, m: npt.ArrayLike) -> None:
        ones = np.asarray(m, dtype=bool)
        self.ones = ones
        self.shape = ones.shape
        share = float(ones.mean()) if ones.size else 0.0
        self.dense: npt.NDArray[np.float32] | None = None
        self.sparse: Any = None
        self.complement = share > 1.0 - _SPARSE_SHARE
        if share <= _SPARSE_SHARE or self.complement:
            from scipy import sparse

            nz = ~ones if self.complement else ones
            self.sparse = sparse.csr_matrix(nz, dtype=np.float32) if nz.any() else None
        else:
            self.dense = ones.astype(np.float32)

    @property
    def cheap(self) -> bool:
        """Whether a product costs a sparse product (or none) rather than a dense one."""
        return self.dense is None

    def __call__(self, w: npt.ArrayLike) -> npt.NDArray[np.float32]:
        w32 = np.asarray(w, dtype=np.float32)
        if self.dense is not None:
            out: npt.NDArray[np.float32] = w32 @ self.dense
            return out
        if not _sums_exact32(w32):  # pragma: no cover - counts of 16 million draws
            big: npt.NDArray[np.float32] = w32 @ self.ones.astype(np.float32)
            return big
        if self.sparse is None:  # all zeros, or all ones with the complement
            part = np.zeros((w32.shape[0], self.shape[1]), dtype=np.float32)
        else:
            part = np.ascontiguousarray(w32 @ self.sparse, dtype=np.float32)
        if self.complement:
            total = w32.sum(axis=1, dtype=np.float32)[:, None]
            return np.ascontiguousarray(total - part)
        return part


_W2 = 1.0 - np.eye(2)
"""The disagreement weights of two categories (unweighted, linear and quadratic alike)."""


def _pairwise_kappa2(
    data: FloatArray, labels: FloatArray
) -> tuple[FloatArray, FloatArray, BoolArray]:
    """Value, totals and defined mask of :func:`_kappa_from_tables` for the (R, R, 2, 2)
    tables of every pair of raters of ``data`` (R, U) with the two codes ``labels`` and
    weights ``_W2``, as four (R, R) arrays of cells instead of one (R, R, 2, 2) array
    (the planes of :func:`_one_hot`, ``data == code``, made directly).

    The same numbers bit for bit: the cells are counts below 2**24 (exact in float32
    whatever the order of the sums, as in :func:`pairwise_cohen_matrix`), so their total
    is exact; each share ``t / n`` is the same division; a row or column share is one
    addition of two shares; with weights 0 and 1 the observed disagreement is the one
    addition ``p01 + p10`` and the expected one ``r0 c1 + r1 c0`` (the zero-weight terms
    add exact zeros), and a sum of two numbers does not depend on their order.
    """
    x0, x1 = (np.equal(data, code).astype(np.float32) for code in labels.tolist())
    rated = _ZeroOne(((x0 + x1) > 0).T)  # (U, R): who rated each unit
    if rated.cheap:
        # nearly every rater rated nearly every unit: a rater's row times the rated cells
        # is a sparse product (t00 + t01 and t10 + t11), so one dense product is enough
        t00_32 = x0 @ x0.T
        n_u = data.shape[1]
        scale = 1 << max(n_u, 1).bit_length()  # a power of two above any count
        if scale * (n_u + 1) <= _EXACT32_SUM // 2:
            # the two sparse products as one, of x0 + scale * x1 (0, 1 or scale: the codes
            # are distinct), whose counts t0 + scale * t1 are integers below 2**24, exact
            # in float32 in any order; t1 and t0 are then recovered exactly
            both = rated(x0 + np.float32(scale) * x1)
            t11_32 = np.floor(both / np.float32(scale))
            t01_32 = both - np.float32(scale) * t11_32
        else:
            t01_32 = rated(x0)
            t11_32 = rated(x1)
        t01_32 -= t00_32
        t11_32 -= t01_32.T
        t00, t01, t11 = (t.astype(np.float64) for t in (t00_32, t01_32, t11_32))
    else:
        t00 = (x0 @ x0.T).astype(np.float64)
        t01 = (x0 @ x1.T).astype(np.float64)
        t11 = (x1 @ x1.T).astype(np.float64)
    t10 = np.ascontiguousarray(t01.T)
    n = t00 + t01
    n += t10
    n += t11
    # the same operations as p = t / safe_n, d_o = p01 + p10, r0c1 = (p00 + p01) *
    # (p01 + p11), r1c0 = (p10 + p11) * (p00 + p10), d_e = r0c1 + r1c0 and
    # where(defined, 1 - d_o / d_e, 0), each into a buffer no longer needed (fewer
    # (R, R) temporaries at 1,000 raters)
    buf = np.where(n > 0, n, 1.0)  # safe_n
    p00, p01, p10, p11 = (np.divide(t, buf, out=t) for t in (t00, t01, t10, t11))
    d_o = p01 + p10
    r0c1 = p00 + p01
    r0c1 *= np.add(p01, p11, out=buf)
    r1c0 = np.add(p10, p11, out=p11)
    r1c0 *= np.add(p00, p10, out=buf)
    d_e = np.add(r0c1, r1c0, out=r0c1)
    defined = (n > 0) & (d_e > _EPS)
    np.copyto(d_e, 1.0, where=~defined)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.subtract(1.0, np.divide(d_o, d_e, out=d_o), out=d_o)
    np.copyto(value, 0.0, where=~defined)
    return value, n, defined


def _kappa_reason(table: FloatArray, labels: FloatArray) -> str:
    n = table.sum()
    if n <= 0:
        return "no unit was rated by both raters"
    used_a = labels[table.sum(axis=1) > 0]
    used_b = labels[table.sum(axis=0) > 0]
    return (
        "expected disagreement is zero (chance agreement is 1): rater a used only "
        f"{_fmt(used_a)} and rater b only {_fmt(used_b)}"
    )


def _code(c: float) -> str:
    return str(int(c)) if float(c).is_integer() else repr(float(c))


def _fmt(codes: FloatArray) -> str:
    items = [_code(c) for c in codes]
    return "category " + items[0] if len(items) == 1 else "categories " + ", ".join(items)


def _one_hot(ratings: FloatArray, labels: FloatArray) -> FloatArray:
    """One-hot codes of shape ratings.shape + (k,); missing ratings are all zero."""
    present = ~np.isnan(ratings)
    if labels.size == 0:
        return np.zeros((*ratings.shape, 0), dtype=np.float64)
    # labels may be in any (user) order: map codes through a sorted view
    order = np.argsort(labels)
    pos = np.searchsorted(labels[order], np.where(present, ratings, labels[order][0]))
    idx = order[np.clip(pos, 0, labels.size - 1)]
    out = np.zeros((*ratings.shape, labels.size), dtype=np.float64)
    np.put_along_axis(out, idx[..., None], 1.0, axis=-1)
    out *= present[..., None]
    return out


# ---------------------------------------------------------------------------
# Cohen


def cohen_kappa_table(table: npt.ArrayLike, *, weights: Weights = None) -> AgreementResult:
    """Cohen's kappa of a rater-by-rater contingency table.

    Parameters
    ----------
    table : array-like of shape (n_categories, n_categories)
        Counts or proportions: ``table[i, j]`` units that rater a put in
        category ``i`` and rater b in category ``j``. Non-negative, finite.
    weights : None, "linear", "quadratic" or array-like of shape (n_categories, n_categories)
        Disagreement weights. ``None`` gives unweighted kappa (weight 1 off
        the diagonal); ``"linear"`` uses ``|i - j|`` and ``"quadratic"``
        ``(i - j) ** 2`` over category positions (as scikit-learn does). A
        matrix gives custom disagreement weights, non-negative with a zero
        diagonal; for agreement (similarity) weights ``s`` pass ``1 - s``.

    Returns
    -------
    AgreementResult
        ``value`` is kappa ``1 - D_o / D_e``. It is ``None`` (with a
        ``reason``) when the table is empty or ``D_e = 0``. ``n_units`` is
        the table total, or 0 when the table holds proportions.

    Raises
    ------
    ShapeError
        If ``table`` is not square or ``weights`` has the wrong shape.
    InvalidParameterError
        If ``table`` holds negative or non-finite entries, or ``weights`` is invalid.

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales.
    Educational and Psychological Measurement 20(1), 37-46.
    Cohen, J. (1968). Weighted kappa. Psychological Bulletin 70(4), 213-220.

    Examples
    --------
    The SAS PROC FREQ example table (SAS reports kappa 0.4842):

    >>> from ranking.agreement import cohen_kappa_table
    >>> r = cohen_kappa_table([[0, 4, 1], [0, 8, 0], [0, 1, 5]])
    >>> round(r.value, 4)
    0.4842
    >>> cohen_kappa_table([[7, 0], [0, 0]]).reason
    'expected disagreement is zero (chance agreement is 1): rater a used only category 0 and rater b only category 0'
    """  # noqa: E501
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ShapeError(f"table must be square (n_categories, n_categories), got shape {t.shape}")
    if not np.isfinite(t).all() or (t < 0).any():
        raise InvalidParameterError("table must hold non-negative finite counts or proportions")
    w, wname = _weight_matrix(weights, t.shape[0])
    labels = np.arange(t.shape[0], dtype=np.float64)
    integral = bool(np.all(t == np.rint(t)))
    return _cohen_result(t, w, wname, labels, n_units=int(np.rint(t.sum())) if integral else 0)


def _cohen_result(
    t: FloatArray, w: FloatArray, wname: str, labels: FloatArray, *, n_units: int
) -> AgreementResult:
    method = "cohen_kappa" if wname == "unweighted" else f"cohen_kappa({wname})"
    value, d_o, d_e, n, defined = _kappa_from_tables(t, w)
    if n <= 0:
        return AgreementResult.from_reason(reason=_kappa_reason(t, labels), method=method)
    if not bool(defined):
        return AgreementResult.from_reason(
            reason=_kappa_reason(t, labels),
            method=method,
            n_units=n_units,
            n_raters=2,
            observed_disagreement=float(d_o),
            expected_disagreement=float(d_e),
        )
    return AgreementResult(
        value=float(value),
        reason=None,
        method=method,
        n_units=n_units,
        n_raters=2,
        observed_disagreement=float(d_o),
        expected_disagreement=float(d_e),
    )


def cohen_kappa(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    labels: npt.ArrayLike | None = None,
    weights: Weights = None,
) -> AgreementResult:
    """Cohen's kappa between two raters, unweighted or weighted.

    Parameters
    ----------
    a, b : array-like of shape (n_units,)
        Numeric category codes of the two raters for the same units. NaN
        marks a missing rating; units missing in either rater are left out.
    labels : array-like of shape (n_categories,), optional
        The category codes, in the order used by linear and quadratic
        weights. Codes that nobody used may be listed. Default: the sorted
        codes that occur in ``a`` or ``b``. Unlike scikit-learn, a rating
        whose code is not in ``labels`` raises instead of being dropped.
    weights : None, "linear", "quadratic" or array-like of shape (n_categories, n_categories)
        Disagreement weights, as in :func:`cohen_kappa_table`.

    Returns
    -------
    AgreementResult
        ``value`` is kappa, or ``None`` with a ``reason`` when no unit was
        rated by both or when both raters used a single category (then
        chance agreement is 1 and kappa is 0/0).

    Raises
    ------
    ShapeError
        If ``a`` or ``b`` is not 1-D or ``weights`` has the wrong shape.
    LengthMismatchError
        If ``a`` and ``b`` differ in length.
    InvalidParameterError
        For non-numeric or infinite codes, codes outside ``labels``, or bad weights.

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales.
    Educational and Psychological Measurement 20(1), 37-46.
    Cohen, J. (1968). Weighted kappa. Psychological Bulletin 70(4), 213-220.

    Examples
    --------
    >>> import numpy as np
    >>> from ranking.agreement import cohen_kappa
    >>> round(cohen_kappa([1, 1, 2, 2, 1], [1, 2, 2, 2, 1]).value, 4)
    0.6154
    >>> round(cohen_kappa([1, 2, 3, 3], [1, 3, 3, 2], weights="linear").value, 4)
    0.4286
    >>> cohen_kappa([1, np.nan], [np.nan, 2]).reason
    'no unit was rated by both raters'
    """
    x = _as_codes_1d(a, "a")
    y = _as_codes_1d(b, "b")
    check_same_length(a=x, b=y)
    lab = _resolve_labels(np.concatenate([x, y]), labels)
    w, wname = _weight_matrix(weights, lab.size)
    both = ~np.isnan(x) & ~np.isnan(y)
    oh_a = _one_hot(x[both], lab)
    oh_b = _one_hot(y[both], lab)
    table = oh_a.T @ oh_b
    return _cohen_result(table, w, wname, lab, n_units=int(both.sum()))


def pairwise_cohen_matrix(
    ratings: npt.ArrayLike,
    *,
    labels: npt.ArrayLike | None = None,
    weights: Weights = None,
    min_overlap: int = 2,
) -> PairwiseKappaResult:
    """Cohen's kappa for every pair of raters, on the units both rated.

    Parameters
    ----------
    ratings : array-like of shape (n_raters, n_units)
        Numeric category codes; NaN where a rater did not rate a unit.
    labels : array-like of shape (n_categories,), optional
        Category codes in weight order (default: sorted observed codes).
    weights : None, "linear", "quadratic" or array-like of shape (n_categories, n_categories)
        Disagreement weights, as in :func:`cohen_kappa_table`.
    min_overlap : int, default 2
        A pair of raters sharing fewer units than this gets a masked entry.

    Returns
    -------
    PairwiseKappaResult
        ``values`` is a symmetric masked array of shape (n_raters, n_raters)
        with no NaN: undefined pairs (too little overlap, or one category
        used by both) are masked. ``overlap`` counts the shared units and
        :meth:`PairwiseKappaResult.mean` gives the mean over defined pairs.

    Raises
    ------
    ShapeError
        If ``ratings`` is not 2-D.
    InvalidParameterError
        For infinite or non-numeric codes, codes outside ``labels``, bad
        weights or ``min_overlap < 1``.

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales.
    Educational and Psychological Measurement 20(1), 37-46.
    Light, R. J. (1971). Measures of response agreement for qualitative data.
    Psychological Bulletin 76(5), 365-377.

    Examples
    --------
    >>> import numpy as np
    >>> from ranking.agreement import pairwise_cohen_matrix
    >>> r = pairwise_cohen_matrix([[1, 2, 1, 2], [1, 2, 2, 2], [np.nan, np.nan, np.nan, 1]])
    >>> round(float(r.values[0, 1]), 4)
    0.5
    >>> bool(r.defined[0, 2]), int(r.overlap[0, 2])
    (False, 1)
    """
    data = _as_ratings(ratings, "ratings", reuse=True)  # only read below
    if int(min_overlap) != min_overlap or min_overlap < 1:
        raise InvalidParameterError(f"min_overlap must be an integer >= 1, got {min_overlap!r}")
    lab = _resolve_labels(data.ravel(), labels)
    w, wname = _weight_matrix(weights, lab.size)
    tables: FloatArray | None = None
    if lab.size == 2 and np.array_equal(w, _W2) and data.shape[1] <= _EXACT32_UNITS:
        value, n, defined = _pairwise_kappa2(data, lab)
    elif data.shape[1] <= _EXACT32_UNITS:
        oh = _one_hot(data, lab)  # (R, U, K)
        # counts of at most 2**24 units: every partial sum of the 0/1 products is an
        # integer that float32 holds exactly, so single precision gives the float64 tables
        # bit for bit (in their layout: astype keeps it) in half the time
        oh32 = oh.astype(np.float32)
        tables = np.einsum("ruk,sul->rskl", oh32, oh32, optimize=True).astype(np.float64)
    else:  # more than 16 million units
        oh = _one_hot(data, lab)
        tables = np.einsum("ruk,sul->rskl", oh, oh, optimize=True)
    if tables is not None:
        value, _, _, n, defined = _kappa_from_tables(tables, w)
    overlap = np.rint(n).astype(np.int64)
    ok = defined & (overlap >= min_overlap)
    values = _masked(np.where(ok, value, 0.0), mask=~ok)
    return PairwiseKappaResult(
        values=values, overlap=overlap, labels=lab, weights=wname, min_overlap=int(min_overlap)
    )


def leave_one_out_agreement(
    ratings: npt.ArrayLike,
    *,
    labels: npt.ArrayLike | None = None,
    weights: Weights = None,
) -> RaterConsensusResult:
    """Agreement of each rater with the plurality of the other raters.

    For rater ``r`` and unit ``u``, the leave-one-out consensus is the code
    chosen by most of the other raters of ``u``. Units that ``r`` did not
    rate, that no other rater rated, or whose other raters tie for the most
    frequent code are left out of ``r``'s comparison (a tie is not broken by
    guessing). Cohen's kappa and the raw share of agreement are then
    computed between ``r`` and that consensus.

    Parameters
    ----------
    ratings : array-like of shape (n_raters, n_units)
        Numeric category codes; NaN where a rater did not rate a unit.
    labels : array-like of shape (n_categories,), optional
        Category codes in weight order (default: sorted observed codes).
    weights : None, "linear", "quadratic" or array-like of shape (n_categories, n_categories)
        Disagreement weights for the kappa, as in :func:`cohen_kappa_table`.

    Returns
    -------
    RaterConsensusResult
        Per-rater ``kappa`` and ``percent_agreement`` as masked arrays of
        shape (n_raters,), ``n_units`` compared and a ``reasons`` tuple for
        the masked kappas (e.g. a single rater, no comparable unit, or one
        category only).

    Raises
    ------
    ShapeError
        If ``ratings`` is not 2-D.
    InvalidParameterError
        For infinite or non-numeric codes, codes outside ``labels`` or bad weights.

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales.
    Educational and Psychological Measurement 20(1), 37-46.

    Examples
    --------
    >>> from ranking.agreement import leave_one_out_agreement
    >>> r = leave_one_out_agreement([[1, 2, 1, 2], [1, 2, 1, 2], [1, 2, 1, 2], [2, 1, 1, 2]])
    >>> [round(float(k), 2) for k in r.kappa]
    [1.0, 1.0, 1.0, 0.0]
    >>> r.percent_agreement.tolist()
    [1.0, 1.0, 1.0, 0.5]
    """
    data = _as_ratings(ratings, "ratings", reuse=True)  # only read below
    lab = _resolve_labels(data.ravel(), labels)
    n_raters = data.shape[0]
    w, _ = _weight_matrix(weights, lab.size)
    # One (R, U) plane per category rather than an (R, U, K) array: the sums over the
    # categories are then elementwise operations on contiguous planes. Every value is a
    # small integer count, so the tables are the same whatever the order of the sums:
    # made with integers and booleans, each cell counts the units where the rater gave k,
    # the others' unique plurality is j, and the unit is usable.
    oh = [np.equal(data, code) for code in lab.tolist()]  # K x (R, U), bool
    count = np.int32 if n_raters < 2**31 else np.int64
    others = [x.sum(axis=0, dtype=count)[None, :] - x for x in oh]  # K x (R, U)
    top = np.zeros(data.shape, dtype=count)  # no category: nothing usable
    for o in others:
        np.maximum(top, o, out=top)
    is_top = [o == top for o in others]
    n_top = np.zeros(data.shape, dtype=count)
    for t in is_top:
        n_top += t
    usable = (top > 0) & (n_top == 1) & np.logical_or.reduce(oh)
    tables = np.empty((n_raters, lab.size, lab.size))
    for k, x in enumerate(oh):
        mk = x & usable
        for j, t in enumerate(is_top):
            tables[:, k, j] = np.count_nonzero(mk & t, axis=1)
    value, _, _, n, defined = _kappa_from_tables(tables, w)
    n_units = np.rint(n).astype(np.int64)
    agree = np.einsum("rkk->r", tables)
    pct_ok = n_units > 0
    pct = _masked(np.where(pct_ok, agree / np.maximum(n, 1.0), 0.0), mask=~pct_ok)
    reasons: list[str | None] = []
    for r in range(n_raters):
        if defined[r]:
            reasons.append(None)
        elif n_raters < 2:
            reasons.append("only one rater: there is no consensus of others to compare with")
        elif n_units[r] == 0:
            reasons.append(
                "no unit rated by this rater has a unique plurality among the other raters"
            )
        else:
            reasons.append(_kappa_reason(tables[r], lab))
    kappa = _masked(np.where(defined, value, 0.0), mask=~defined)
    return RaterConsensusResult(
        kappa=kappa, percent_agreement=pct, n_units=n_units, reasons=tuple(reasons), labels=lab
    )


# ---------------------------------------------------------------------------
# Fleiss


def rating_counts(
    ratings: npt.ArrayLike, *, labels: npt.ArrayLike | None = None
) -> tuple[IntArray, FloatArray]:
    """Count how many raters put each unit in each category.

    Parameters
    ----------
    ratings : array-like of shape (n_raters, n_units)
        Numeric category codes; NaN where a rater did not rate a unit.
    labels : array-like of shape (n_categories,), optional
        Category codes giving the column order (default: sorted observed codes).

    Returns
    -------
    counts : ndarray of shape (n_units, n_categories)
        ``counts[u, k]`` raters who gave unit ``u`` the code ``labels[k]``;
        the input of :func:`fleiss_kappa`.
    labels : ndarray of shape (n_categories,)
        The category codes of the columns.

    Raises
    ------
    ShapeError, InvalidParameterError
        As :func:`pairwise_cohen_matrix`.

    Examples
    --------
    >>> from ranking.agreement import rating_counts
    >>> counts, labels = rating_counts([[1, 2, 2], [1, 1, 2]])
    >>> counts.tolist(), labels.tolist()
    ([[2, 0], [1, 1], [0, 2]], [1.0, 2.0])
    """
    data = _as_ratings(ratings, "ratings", reuse=True)  # only read below
    lab = _resolve_labels(data.ravel(), labels)
    if lab.size == 0:
        return np.zeros((data.shape[1], 0), dtype=np.int64), lab
    # per code, the raters of each unit who gave it (the sums of _one_hot's planes, as
    # integers: the same counts without the (R, U, K) array)
    counts = np.empty((data.shape[1], lab.size), dtype=np.int64)
    for k, code in enumerate(lab.tolist()):
        np.equal(data, code).sum(axis=0, out=counts[:, k])
    return counts, lab


def fleiss_kappa(counts: npt.ArrayLike) -> AgreementResult:
    """Fleiss' kappa for a fixed number of raters per item.

    Parameters
    ----------
    counts : array-like of shape (n_items, n_categories)
        ``counts[i, k]`` raters who put item ``i`` in category ``k``.
        Non-negative integers; every row must have the same sum (the number
        of ratings per item). Build it from ratings with :func:`rating_counts`.

    Returns
    -------
    AgreementResult
        ``value`` is kappa ``(P_bar - P_e) / (1 - P_e)``; it is ``None``
        with a ``reason`` when there are no items, fewer than two ratings
        per item, or every rating falls in one category (``P_e = 1``).

    Raises
    ------
    ShapeError
        If ``counts`` is not 2-D.
    InvalidParameterError
        For negative, non-integer or non-finite counts, or rows with
        different sums (use :func:`krippendorff_alpha` for missing ratings).

    References
    ----------
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many
    raters. Psychological Bulletin 76(5), 378-382.

    Examples
    --------
    The worked example on Wikipedia's "Fleiss' kappa" page (kappa 0.210):

    >>> from ranking.agreement import fleiss_kappa
    >>> table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
    ...          [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
    ...          [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    >>> round(fleiss_kappa(table).value, 3)
    0.21
    >>> fleiss_kappa([[3, 0], [3, 0]]).reason
    'every rating is in category 0, so chance agreement is 1 and kappa is undefined'
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 2:
        raise ShapeError(
            f"counts must be 2-D with shape (n_items, n_categories), got {c.ndim} dimension(s)"
        )
    if not np.isfinite(c).all() or (c < 0).any() or np.any(c != np.rint(c)):
        raise InvalidParameterError("counts must hold non-negative integer counts")
    n_items = c.shape[0]
    method = "fleiss_kappa"
    if n_items == 0 or c.shape[1] == 0:
        return AgreementResult.from_reason(reason="there are no items to compare", method=method)
    per_item = c.sum(axis=1)
    if per_item.min() != per_item.max():
        raise InvalidParameterError(
            "fleiss_kappa needs the same number of ratings for every item, got between "
            f"{int(per_item.min())} and {int(per_item.max())}; keep only complete items "
            "or use krippendorff_alpha, which allows missing ratings"
        )
    m = float(per_item[0])
    if m < 2:
        return AgreementResult.from_reason(
            reason=f"each item has {int(m)} rating(s); agreement needs at least two per item",
            method=method,
            n_units=n_items,
            n_raters=int(m),
        )
    p_j = c.sum(axis=0) / (n_items * m)
    p_i = ((c * c).sum(axis=1) - m) / (m * (m - 1.0))
    p_bar = float(p_i.mean())
    p_e = float((p_j * p_j).sum())
    d_o, d_e = 1.0 - p_bar, 1.0 - p_e
    if d_e <= _EPS:
        k = int(np.argmax(p_j))
        return AgreementResult.from_reason(
            reason=f"every rating is in category {k}, so chance agreement is 1 and kappa is "
            "undefined",
            method=method,
            n_units=n_items,
            n_raters=int(m),
            observed_disagreement=d_o,
            expected_disagreement=d_e,
        )
    return AgreementResult(
        value=1.0 - d_o / d_e,
        reason=None,
        method=method,
        n_units=n_items,
        n_raters=int(m),
        observed_disagreement=d_o,
        expected_disagreement=d_e,
    )


# ---------------------------------------------------------------------------
# Krippendorff


def krippendorff_alpha(
    reliability_data: npt.ArrayLike, *, level: Level = "nominal"
) -> AgreementResult:
    """Krippendorff's alpha for any number of raters, with missing ratings.

    Parameters
    ----------
    reliability_data : array-like of shape (n_raters, n_units)
        Numeric values; NaN where a rater did not rate a unit. Units with
        fewer than two values are not pairable and are left out.
    level : {"nominal", "ordinal", "interval", "ratio"}, default "nominal"
        Level of measurement, selecting the difference function. Ordinal
        ranks the distinct observed values; ratio needs non-negative values.

    Returns
    -------
    AgreementResult
        ``value`` is ``1 - D_o / D_e`` computed from the coincidence matrix;
        ``n_units`` counts pairable units. ``None`` with a ``reason`` when
        no unit has two values, or when all pairable values are equal
        (``D_e = 0``).

    Raises
    ------
    ShapeError
        If ``reliability_data`` is not 2-D.
    InvalidParameterError
        For an unknown ``level``, infinite or non-numeric values, or
        negative values at the ratio level.

    References
    ----------
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability.
    Annenberg School for Communication, University of Pennsylvania.
    Hayes, A. F. and Krippendorff, K. (2007). Answering the call for a
    standard reliability measure for coding data. Communication Methods and
    Measures 1(1), 77-89.

    Examples
    --------
    Krippendorff's (2011) four coders by twelve units (alpha 0.743 nominal):

    >>> import numpy as np
    >>> from ranking.agreement import krippendorff_alpha
    >>> nan = np.nan
    >>> data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    ...         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    ...         [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    ...         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]
    >>> round(krippendorff_alpha(data).value, 3)
    0.743
    >>> round(krippendorff_alpha(data, level="ordinal").value, 3)
    0.815
    >>> krippendorff_alpha([[1, 1, nan], [1, 1, 2]]).reason
    'every pairable value is 1, so expected disagreement is zero and alpha is undefined'
    """
    if level not in _LEVELS:
        raise InvalidParameterError(f"level must be one of {_LEVELS}, got {level!r}")
    data = _as_ratings(reliability_data, "reliability_data", copy=False)
    method = f"krippendorff_alpha({level})"
    if level == "ratio" and np.nanmin(data, initial=0.0) < 0:
        raise InvalidParameterError("ratio-level alpha needs non-negative values")
    present = ~np.isnan(data)
    m_u = present.sum(axis=0)
    pairable = m_u >= 2
    n_units = int(pairable.sum())
    if n_units == 0:
        return AgreementResult.from_reason(
            reason="no unit has values from two or more raters, so nothing can be compared",
            method=method,
            n_raters=int(present.any(axis=1).sum()),
        )
    m = m_u[pairable].astype(np.float64)
    n_total = float(m.sum())
    if level != "interval" and (fast := _small_code_counts(data, present, m_u, pairable, n_units)):
        # few integer codes: per-unit counts by one comparison per code, no copies
        values, counts = fast
        n_raters = int((present & pairable).any(axis=1).sum())
    else:
        sub = data[:, pairable]
        sub_present = present[:, pairable]
        n_raters = int(sub_present.any(axis=1).sum())
    centre = 0.0
    if level == "interval":
        # closed forms avoid a (V, V) matrix for continuous values
        centre = float(sub[sub_present].mean())
        x = np.where(sub_present, sub - centre, 0.0)
        s1 = x.sum(axis=0)
        s2 = (x * x).sum(axis=0)
        d_o = float((2.0 * (m * s2 - s1 * s1) / (m - 1.0)).sum()) / n_total
        t1, t2 = float(s1.sum()), float(s2.sum())
        d_e = 2.0 * (n_total * t2 - t1 * t1) / (n_total * (n_total - 1.0))
        values = np.unique(sub[sub_present]) - centre
    else:
        if not fast:
            values, counts = _value_counts(sub, sub_present, n_units)
        n_c = counts.sum(axis=0)
        if level == "nominal":
            o_diag = (counts * (counts - 1.0) / (m - 1.0)[:, None]).sum(axis=0)
            d_o = float(n_total - o_diag.sum()) / n_total
            d_e = float(n_total * n_total - (n_c * n_c).sum()) / (n_total * (n_total - 1.0))
        else:
            o = counts.T @ (counts / (m - 1.0)[:, None]) - np.diag(
                (counts / (m - 1.0)[:, None]).sum(axis=0)
            )
            delta = _delta(values, n_c, level)
            d_o = float((o * delta).sum()) / n_total
            d_e = float((np.outer(n_c, n_c) * delta).sum()) / (n_total * (n_total - 1.0))
    if d_e <= _EPS * max(1.0, float(np.abs(values).max()) ** 2):
        return AgreementResult.from_reason(
            reason=f"every pairable value is {_code(values[0] + centre)}, so expected "
            "disagreement is zero and alpha is undefined",
            method=method,
            n_units=n_units,
            n_raters=n_raters,
            observed_disagreement=d_o,
            expected_disagreement=d_e,
        )
    return AgreementResult(
        value=1.0 - d_o / d_e,
        reason=None,
        method=method,
        n_units=n_units,
        n_raters=n_raters,
        observed_disagreement=d_o,
        expected_disagreement=d_e,
    )


_MAX_CODES = 32
"""Integer codes spanning at most this many values are counted code by code."""


def _value_counts(
    sub: FloatArray, sub_present: npt.NDArray[np.bool_], n_units: int
) -> tuple[FloatArray, FloatArray]:
    """Distinct values and per-unit counts (n_units, n_values) of the present ratings."""
    unit_idx = np.nonzero(sub_present.T)[0]
    values, inv = np.unique(sub.T[sub_present.T], return_inverse=True)
    v = values.size
    counts = np.bincount(unit_idx * v + inv, minlength=n_units * v).reshape(n_units, v)
    return values, counts.astype(np.float64)


def _small_code_counts(
    data: FloatArray,
    present: npt.NDArray[np.bool_],
    m_u: npt.NDArray[np.int64],
    pairable: npt.NDArray[np.bool_],
    n_units: int,
) -> tuple[FloatArray, FloatArray] | None:
    """:func:`_value_counts` of the pairable units when every rating is an integer code
    in a range of at most ``_MAX_CODES`` values; None otherwise.

    One ``==`` pass per code over the (raters, units) matrix, summed down each column,
    instead of gathering, sorting (``np.unique``) and scattering every rating: linear,
    and only a boolean temporary of the matrix's size. The counts are the same integers
    (as floats) in the same (unit, value) layout, so every later sum is unchanged.
    Codes seen only in unpairable units are dropped, as :func:`_value_counts` never sees
    them.
    """
    if n_units == 0 or not present.any():
        return None
    lo, hi = float(np.nanmin(data)), float(np.nanmax(data))
    if not (lo.is_integer() and hi.is_integer() and hi - lo < _MAX_CODES):
        return None
    codes = np.arange(lo, hi + 1.0)
    counts = np.empty((n_units, codes.size), dtype=np.float64)
    eq = np.empty(data.shape, dtype=bool)
    total = np.zeros(n_units, dtype=np.int64)
    cols = np.flatnonzero(pairable)
    all_cols = cols.size == data.shape[1]
    for j, c in enumerate(codes):
        np.equal(data, c, out=eq)
        col = eq.sum(axis=0)
        col = col if all_cols else col[cols]
        total += col
        counts[:, j] = col
    if not np.array_equal(total, m_u[cols]):  # some rating is not an integer code
        return None
    keep = counts.sum(axis=0) > 0
    return codes[keep], np.ascontiguousarray(counts[:, keep])


def _delta(values: FloatArray, n_c: FloatArray, level: str) -> FloatArray:
    """Squared difference function of shape (V, V) for ordinal or ratio data."""
    if level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        i = np.arange(values.size)
        lo = np.minimum(i[:, None], i[None, :])
        hi = np.maximum(i[:, None], i[None, :])
        between = cum[hi + 1] - cum[lo]
        d = between - (n_c[:, None] + n_c[None, :]) / 2.0
        out: FloatArray = d * d
        np.fill_diagonal(out, 0.0)
        return out
    # ratio
    s = values[:, None] + values[None, :]
    diff = values[:, None] - values[None, :]
    ratio: FloatArray = np.divide(diff, s, out=np.zeros_like(diff), where=s != 0)
    return ratio * ratio
