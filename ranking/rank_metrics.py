"""Top-weighted agreement between two rankings: overlap at depth, RBO, SP@K.

A *ranking* here is an ordering: a 1-D sequence of distinct item indices, best
first (``[2, 0, 1]`` puts item 2 first). :func:`ordering` turns a score vector
into one. Kendall's tau-b and Spearman's rho of the same two rankings are in
:mod:`ranking.compare`; :func:`ranking_agreement` computes all of them at once.

These are the evaluation metrics of ReasonerRank (paper App. A.2). The paper's
"RBO" (its eq. 13) is the *average overlap* of Fagin et al., every depth
weighted equally; Webber's rank-biased overlap with persistence ``p`` is its
eq. 12 (:func:`rbo_weighted`), and the extrapolated form is
:func:`rbo_extrapolated`.

References
----------
Webber, W., Moffat, A., & Zobel, J. (2010). A similarity measure for indefinite
rankings. ACM Transactions on Information Systems, 28(4), 20.

Fagin, R., Kumar, R., & Sivakumar, D. (2003). Comparing top k lists. SIAM
Journal on Discrete Mathematics, 17(1), 134-160.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ranking.compare import kendall_tau, spearman_rho
from ranking.errors import DegenerateDataError, InvalidParameterError, ShapeError
from ranking.types import FloatArray, IntArray

__all__ = [
    "RankingAgreement",
    "average_overlap",
    "ordering",
    "overlap_at_depth",
    "random_expectation",
    "ranking_agreement",
    "rbo_extrapolated",
    "rbo_weighted",
    "set_precision_at_k",
]


def ordering(scores: npt.ArrayLike, *, tie_order: npt.ArrayLike | None = None) -> IntArray:
    """Item indices sorted best first (highest score first).

    Parameters
    ----------
    scores : array-like of shape (n_items,)
        Scores, higher is better; must be finite.
    tie_order : array-like of shape (n_items,), optional
        A priority ordering (item indices, best first) that breaks ties between
        equal scores: the item earlier in ``tie_order`` comes first. By default
        ties keep index order.

    Returns
    -------
    ndarray of int64, shape (n_items,)
        The ranking: ``result[0]`` is the best item.

    Examples
    --------
    >>> ordering([0.2, 0.9, 0.5]).tolist()
    [1, 2, 0]
    >>> ordering([1.0, 1.0, 0.0], tie_order=[1, 0, 2]).tolist()
    [1, 0, 2]
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ShapeError(f"scores must be 1-D, got {s.ndim} dimension(s)")
    if not np.all(np.isfinite(s)):
        i = int(np.flatnonzero(~np.isfinite(s))[0])
        raise InvalidParameterError(f"scores[{i}] is not finite ({s[i]!r})")
    if tie_order is None:
        priority = np.arange(s.size)
    else:
        order = _as_ranking(tie_order, "tie_order")
        if order.size != s.size or not np.array_equal(np.sort(order), np.arange(s.size)):
            raise InvalidParameterError(
                f"tie_order must be a permutation of 0..{s.size - 1}, got {order.tolist()[:10]}"
            )
        priority = np.empty(s.size, dtype=np.int64)
        priority[order] = np.arange(s.size)
    return np.lexsort((priority, -s)).astype(np.int64)


def _as_ranking(x: npt.ArrayLike, name: str) -> IntArray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ShapeError(f"{name} must be 1-D, got {arr.ndim} dimension(s)")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise InvalidParameterError(f"{name} must hold integer item indices, got {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if np.unique(arr).size != arr.size:
        raise InvalidParameterError(f"{name} holds an item twice; a ranking lists each item once")
    return arr


def _pair(s: npt.ArrayLike, t: npt.ArrayLike) -> tuple[IntArray, IntArray]:
    a = _as_ranking(s, "s")
    b = _as_ranking(t, "t")
    if a.size != b.size:
        raise ShapeError(f"rankings must have the same length, got {a.size} and {b.size}")
    if a.size == 0:
        raise DegenerateDataError("rankings are empty; an overlap needs at least one item")
    return a, b


def overlap_at_depth(s: npt.ArrayLike, t: npt.ArrayLike) -> FloatArray:
    """Agreement ``A_d = |S[:d] ∩ T[:d]| / d`` for every depth d = 1..n.

    Parameters
    ----------
    s, t : array-like of int, shape (n_items,)
        Two rankings (item indices, best first) of the same length. The items
        need not be the same (a non-conjoint pair simply overlaps less).

    Returns
    -------
    ndarray of shape (n_items,)
        ``result[d - 1]`` is ``A_d`` (ReasonerRank eq. 10).

    References
    ----------
    ReasonerRank, App. A.2.1, eqs. 9-10; Webber et al. (2010), sec. 4.

    Examples
    --------
    >>> overlap_at_depth([0, 1, 2], [1, 0, 2]).tolist()
    [0.0, 1.0, 1.0]
    """
    a, b = _pair(s, t)
    items = np.union1d(a, b)
    pos_a = np.full(items.size, a.size, dtype=np.int64)
    pos_b = np.full(items.size, b.size, dtype=np.int64)
    pos_a[np.searchsorted(items, a)] = np.arange(a.size)
    pos_b[np.searchsorted(items, b)] = np.arange(b.size)
    # an item joins the intersection at depth max(pos_a, pos_b) + 1
    joined = np.maximum(pos_a, pos_b)
    joined = joined[joined < a.size]
    x = np.cumsum(np.bincount(joined, minlength=a.size)).astype(np.float64)
    return x / np.arange(1, a.size + 1)


def average_overlap(s: npt.ArrayLike, t: npt.ArrayLike) -> float:
    """The paper's RBO (ReasonerRank eq. 13): the mean of ``A_d`` over d = 1..n.

    This is Fagin et al.'s average overlap, every depth weighted equally (the
    ``p = 1`` limit of the truncated sum). For a random ranking against a fixed
    one of the same n items its expectation is ``(n + 1) / (2 n)``.

    Parameters
    ----------
    s, t : array-like of int, shape (n_items,)
        Two rankings of the same length, best first.

    Returns
    -------
    float
        In [0, 1]; 1 exactly when the rankings are equal.

    References
    ----------
    ReasonerRank, App. A.2.1, eq. 13 (and eq. 4); Fagin et al. (2003).

    Examples
    --------
    >>> round(average_overlap([0, 1, 2], [1, 0, 2]), 4)
    0.6667
    """
    return float(np.mean(overlap_at_depth(s, t)))


def _check_p(p: float) -> float:
    v = float(p)
    if not np.isfinite(v) or not 0.0 < v < 1.0:
        raise InvalidParameterError(f"p must be in (0, 1), got {p!r}")
    return v


def rbo_weighted(s: npt.ArrayLike, t: npt.ArrayLike, *, p: float = 0.9) -> float:
    """Rank-biased overlap at depth n: ``(1 - p) * sum_d p**(d-1) * A_d`` (eq. 12).

    The sum runs over the depths the rankings have (d = 1..n), so it is
    Webber's RBO truncated at n, a lower bound of the full RBO; identical
    rankings score ``1 - p**n``, not 1. This is the quantity of the ``rbo``
    package's ``RankingSimilarity(S, T).rbo(p=p)``.

    Parameters
    ----------
    s, t : array-like of int, shape (n_items,)
        Two rankings of the same length, best first.
    p : float, default 0.9
        Persistence in (0, 1): the weight of depth d is ``(1 - p) p**(d-1)``.

    Returns
    -------
    float

    References
    ----------
    ReasonerRank, App. A.2.1, eq. 12; Webber et al. (2010), eq. 7.

    Examples
    --------
    >>> round(rbo_weighted([0, 1, 2], [0, 1, 2], p=0.5), 4)
    0.875
    """
    pv = _check_p(p)
    a_d = overlap_at_depth(s, t)
    w = (1.0 - pv) * pv ** np.arange(a_d.size)
    return float(np.sum(w * a_d))


def rbo_extrapolated(s: npt.ArrayLike, t: npt.ArrayLike, *, p: float = 0.9) -> float:
    """Webber's extrapolated RBO for two rankings of the same length (eq. 32).

    ``RBO_ext = A_n p**n + (1 - p) * sum_{d<=n} p**(d-1) A_d``: the truncated sum
    plus the agreement at the last depth carried on to infinity. Identical
    rankings score 1. Equal to the ``rbo`` package's ``rbo(p=p, ext=True)``.

    Parameters
    ----------
    s, t : array-like of int, shape (n_items,)
        Two rankings of the same length, best first.
    p : float, default 0.9
        Persistence in (0, 1).

    Returns
    -------
    float
        In [0, 1].

    References
    ----------
    Webber et al. (2010), eq. 32 (equal lengths: eq. 30).

    Examples
    --------
    >>> rbo_extrapolated([0, 1, 2], [0, 1, 2], p=0.5)
    1.0
    """
    pv = _check_p(p)
    a_d = overlap_at_depth(s, t)
    w = (1.0 - pv) * pv ** np.arange(a_d.size)
    return float(np.sum(w * a_d) + a_d[-1] * pv**a_d.size)


def set_precision_at_k(s: npt.ArrayLike, t: npt.ArrayLike, *, k: int = 3) -> float:
    """SP@K: ``|S[:K] ∩ T[:K]| / K`` (ReasonerRank eq. 5 / 14).

    Parameters
    ----------
    s, t : array-like of int, shape (n_items,)
        Two rankings of the same length, best first.
    k : int, default 3
        Depth, ``1 <= k <= n_items``.

    Returns
    -------
    float
        One of 0, 1/K, ..., 1. For a random ranking its expectation is ``K / n``.

    References
    ----------
    ReasonerRank, sec. 4.1.2, eq. 5; App. A.2.2.

    Examples
    --------
    >>> round(set_precision_at_k([0, 1, 2, 3], [3, 1, 0, 2], k=3), 4)
    0.6667
    """
    a, b = _pair(s, t)
    kk = int(k)
    if kk != k or not 1 <= kk <= a.size:
        raise InvalidParameterError(f"k must be an integer in [1, {a.size}], got {k!r}")
    return float(np.intersect1d(a[:kk], b[:kk]).size / kk)


def random_expectation(n_items: int, *, p: float = 0.9, k: int = 3) -> dict[str, float]:
    """Expected value of each metric for a uniformly random ranking of n items.

    Against any fixed ranking of the same n items, a random permutation has
    ``E[A_d] = d / n`` (the overlap at depth d is hypergeometric with mean
    ``d * d / n``), so every overlap metric is linear in it:

    - ``rbo`` (average overlap, eq. 13): ``(n + 1) / (2 n)``, 0.55 for n = 10;
    - ``rbo_weighted`` (eq. 12): ``(1 - p) sum_{d=1..n} p**(d-1) d / n``;
    - ``rbo_extrapolated``: that plus ``p**n`` (``A_n = 1``);
    - ``sp_at_k``: ``K / n``;
    - ``kendall`` and ``spearman``: 0 (by symmetry).

    Parameters
    ----------
    n_items : int
        Number of items ranked, at least 1.
    p : float, default 0.9
        Persistence of the weighted forms.
    k : int, default 3
        Depth of SP@K, clipped to ``n_items``.

    Returns
    -------
    dict
        Keys ``rbo``, ``rbo_weighted``, ``rbo_extrapolated``, ``sp_at_k``,
        ``kendall``, ``spearman``.

    References
    ----------
    ReasonerRank, sec. 4.3 (an RBO "close to 0.5" is near random).

    Examples
    --------
    >>> random_expectation(10)["rbo"]
    0.55
    """
    n = int(n_items)
    if n != n_items or n < 1:
        raise InvalidParameterError(f"n_items must be a positive integer, got {n_items!r}")
    pv = _check_p(p)
    kk = int(k)
    if kk != k or kk < 1:
        raise InvalidParameterError(f"k must be a positive integer, got {k!r}")
    kk = min(kk, n)
    d = np.arange(1, n + 1, dtype=np.float64)
    weighted = float(np.sum((1.0 - pv) * pv ** (d - 1) * d / n))
    return {
        "rbo": (n + 1) / (2 * n),
        "rbo_weighted": weighted,
        "rbo_extrapolated": weighted + pv**n,
        "sp_at_k": kk / n,
        "kendall": 0.0,
        "spearman": 0.0,
    }


@dataclass(frozen=True)
class RankingAgreement:
    """All agreement metrics between two rankings of the same items."""

    kendall: float | None
    """Kendall's tau-b of the scores (None when a score vector is constant)."""
    spearman: float | None
    """Spearman's rho of the scores (None when a score vector is constant)."""
    rbo: float
    """The paper's RBO, eq. 13 (average overlap)."""
    rbo_weighted: float
    """Eq. 12 at persistence ``p``, truncated at n."""
    rbo_extrapolated: float
    """Webber's extrapolated RBO at persistence ``p``."""
    sp_at_k: float
    """SP@K at depth ``k``."""
    p: float
    k: int
    n_items: int


def ranking_agreement(
    s_scores: npt.ArrayLike,
    t_scores: npt.ArrayLike,
    *,
    p: float = 0.9,
    k: int = 3,
    s_tie_order: npt.ArrayLike | None = None,
    t_tie_order: npt.ArrayLike | None = None,
) -> RankingAgreement:
    """Every metric at once, from two score vectors over the same items.

    Kendall's tau-b and Spearman's rho use the scores (ties handled by tau-b and
    average ranks); the overlap metrics use the orderings
    ``ordering(scores, tie_order=...)``, so ties are broken by the tie orders
    (index order by default).

    Parameters
    ----------
    s_scores, t_scores : array-like of shape (n_items,)
        Scores of the same items, higher is better (for example an estimated
        ranking and a target one).
    p : float, default 0.9
        Persistence of the weighted RBO forms.
    k : int, default 3
        Depth of SP@K, clipped to ``n_items``.
    s_tie_order, t_tie_order : array-like of int, optional
        Priority orders breaking ties in each ranking.

    Returns
    -------
    RankingAgreement

    Examples
    --------
    >>> r = ranking_agreement([3, 2, 1, 0], [3, 2, 0, 1], k=2)
    >>> r.sp_at_k, round(r.rbo, 4)
    (1.0, 0.9167)
    """
    s = ordering(s_scores, tie_order=s_tie_order)
    t = ordering(t_scores, tie_order=t_tie_order)
    if s.size != t.size:
        raise ShapeError(f"score vectors must have the same length, got {s.size} and {t.size}")
    kk = min(int(k), s.size)
    tau: float | None
    rho: float | None
    try:
        tau = kendall_tau(s_scores, t_scores)
        rho = spearman_rho(s_scores, t_scores)
    except DegenerateDataError:
        tau = rho = None
    return RankingAgreement(
        kendall=tau,
        spearman=rho,
        rbo=average_overlap(s, t),
        rbo_weighted=rbo_weighted(s, t, p=p),
        rbo_extrapolated=rbo_extrapolated(s, t, p=p),
        sp_at_k=set_precision_at_k(s, t, k=kk),
        p=float(p),
        k=kk,
        n_items=int(s.size),
    )
