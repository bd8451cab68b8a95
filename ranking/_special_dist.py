"""The few ``scipy.stats`` calls the report makes, from ``scipy.special`` alone.

``import scipy.stats`` costs about 0.4 s of CPU where the report would import it (158
modules: scipy.stats, interpolate, integrate, ndimage, ...), while the report needs only
the normal and binomial distribution functions, one non-central chi-square quantile,
ranks and two rank correlations.
Each function here repeats what scipy.stats 1.17 does for its arguments (its argument
checks, support and broadcasting in ``rv_continuous`` / ``rv_discrete``, and the
``scipy.special`` function it calls), so the numbers are the same bit for bit
(tests/ranking/test_special_dist.py compares them with scipy.stats):

- :func:`norm_cdf`, :func:`norm_sf`, :func:`norm_ppf`: ``scipy.stats.norm`` (``ndtr``,
  ``ndtr(-x)``, ``ndtri``);
- :func:`binom_cdf`, :func:`binom_sf`: ``scipy.stats.binom`` (Boost's binomial through
  the private ufuncs ``scipy.special._ufuncs._binom_cdf`` / ``_binom_sf``, as
  scipy.stats; a scipy without them gets scipy.stats itself);
- :func:`ncx2_ppf`: ``scipy.stats.ncx2.ppf`` (``chndtrix``; ``chi2.ppf`` where the
  non-centrality is 0);
- :func:`rankdata`: ``scipy.stats.rankdata`` of a 1-D sample (average ranks);
- :func:`spearmanr`, :func:`kendalltau`: ``scipy.stats.spearmanr`` and
  ``scipy.stats.kendalltau`` (tau-b, ``method='auto'``) of two 1-D samples, two-sided,
  ``nan_policy='propagate'``. Where scipy warns (constant input, too few values) these
  return the same NaNs without the warning.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from scipy import special as sc

try:  # private in scipy: scipy.stats.binom uses them (Boost's binomial)
    from scipy.special._ufuncs import (  # type: ignore[attr-defined,unused-ignore]
        _binom_cdf,
        _binom_sf,
    )
except ImportError:  # pragma: no cover - a scipy without them: scipy.stats itself
    _binom_cdf = _binom_sf = None

FloatArray = npt.NDArray[np.float64]


class RankCorrelation(NamedTuple):
    """A coefficient and its two-sided p-value (the fields of scipy's result)."""

    statistic: float
    pvalue: float


def _out(output: FloatArray) -> Any:
    """A 0-d result as a numpy scalar, as scipy.stats returns it."""
    return output[()] if output.ndim == 0 else output


def norm_cdf(x: npt.ArrayLike) -> Any:
    """``scipy.stats.norm.cdf(x)``: ``ndtr`` (1 at +inf, 0 at -inf, NaN at NaN)."""
    xv = np.asarray(x)
    xv = np.asarray(xv, dtype=np.promote_types(xv.dtype, np.float64))
    return _out(np.asarray(sc.ndtr(xv)))


def norm_sf(x: npt.ArrayLike) -> Any:
    """``scipy.stats.norm.sf(x)``: ``ndtr(-x)``."""
    xv = np.asarray(x)
    xv = np.asarray(xv, dtype=np.promote_types(xv.dtype, np.float64))
    return _out(np.asarray(sc.ndtr(-xv)))


def norm_ppf(q: npt.ArrayLike) -> Any:
    """``scipy.stats.norm.ppf(q)``: ``ndtri(q) + 0`` inside (0, 1) (a -0 quantile is
    +0, as scipy's ``* scale + loc``), -inf at 0, inf at 1, NaN elsewhere."""
    qv = np.asarray(q)
    output = np.full(qv.shape, np.nan)
    output[qv == 0] = -np.inf
    output[qv == 1] = np.inf
    cond = (qv > 0) & (qv < 1)
    if np.any(cond):
        output[cond] = sc.ndtri(qv[cond]) * 1 + 0
    return _out(output)


def _binom_args(
    k: npt.ArrayLike, n: npt.ArrayLike, p: npt.ArrayLike
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any], Any]:
    """``k - loc``, ``n``, ``p`` as arrays and scipy's ``binom._argcheck``."""
    kv = np.asarray(np.asarray(k) - np.asarray(0))
    nv, pv = np.asarray(n), np.asarray(p)
    ok = (nv >= 0) & (nv == np.round(nv)) & (pv >= 0) & (pv <= 1)
    return kv, nv, pv, ok


def _place(
    output: FloatArray, mask: Any, value: float | FloatArray, shape: tuple[int, ...]
) -> None:
    output[np.broadcast_to(mask, shape)] = value


def _good(cond: Any, *args: np.ndarray[Any, Any]) -> list[np.ndarray[Any, Any]]:
    """The arguments where ``cond`` holds (scipy's ``argsreduce``: the same values)."""
    return [np.broadcast_to(a, cond.shape)[cond] for a in args]


def binom_cdf(k: npt.ArrayLike, n: npt.ArrayLike, p: npt.ArrayLike) -> Any:
    """``scipy.stats.binom.cdf(k, n, p)``: ``_binom_cdf(floor(k), n, p)`` clipped to
    [0, 1] for ``0 <= k < n``; 0 below the support, 1 from ``n`` on, NaN where ``n`` is
    not a non-negative integer, ``p`` not in [0, 1] or ``k`` NaN."""
    if _binom_cdf is None:
        from scipy.stats import binom

        return binom.cdf(k, n, p)
    kv, nv, pv, ok = _binom_args(k, n, p)
    cond = ok & ((kv >= 0) & (kv < nv)) & np.isfinite(kv)
    shape = np.shape(cond)
    output = np.zeros(shape, "d")
    _place(output, kv >= nv, 1.0, shape)
    _place(output, np.isneginf(kv), 0.0, shape)
    _place(output, ~ok | np.isnan(kv), np.nan, shape)
    cond = np.broadcast_to(cond, shape)
    if np.any(cond):
        kk, nn, pp = _good(cond, kv, nv, pv)
        output[cond] = np.clip(_binom_cdf(np.floor(kk), nn, pp), 0, 1)
    return _out(output)


def binom_sf(k: npt.ArrayLike, n: npt.ArrayLike, p: npt.ArrayLike) -> Any:
    """``scipy.stats.binom.sf(k, n, p)``: ``_binom_sf(floor(k), n, p)`` clipped to
    [0, 1] for ``0 <= k < n``; 1 below the support, 0 from ``n`` on, NaN as
    :func:`binom_cdf`."""
    if _binom_sf is None:
        from scipy.stats import binom

        return binom.sf(k, n, p)
    kv, nv, pv, ok = _binom_args(k, n, p)
    cond = ok & ((kv >= 0) & (kv < nv)) & np.isfinite(kv)
    shape = np.shape(cond)
    output = np.zeros(shape, "d")
    _place(output, ~ok | np.isnan(kv), np.nan, shape)
    _place(output, ((kv < 0) | np.isneginf(kv)) & ok, 1.0, shape)
    cond = np.broadcast_to(cond, shape)
    if np.any(cond):
        kk, nn, pp = _good(cond, kv, nv, pv)
        output[cond] = np.clip(_binom_sf(np.floor(kk), nn, pp), 0, 1)
    return _out(output)


def ncx2_ppf(q: npt.ArrayLike, df: npt.ArrayLike, nc: npt.ArrayLike) -> Any:
    """``scipy.stats.ncx2.ppf(q, df, nc)``: ``chndtrix(q, df, nc)`` where ``nc != 0``
    and ``chi2.ppf`` (``2 gammaincinv(df / 2, q)``) where ``nc == 0``, for ``0 < q < 1``,
    ``df`` finite and positive, ``nc >= 0``; 0 at ``q = 0``, inf at ``q = 1``, NaN
    elsewhere."""
    qv, dfv, ncv = np.asarray(q), np.asarray(df), np.asarray(nc)
    ok = (dfv > 0) & np.isfinite(dfv) & (ncv >= 0)
    cond = ok & ((qv > 0) & (qv < 1))
    shape = np.shape(cond)
    output = np.full(shape, np.nan)
    _place(output, ok & (qv == 0), 0.0, shape)
    _place(output, ok & (qv == 1), np.inf, shape)
    if np.any(cond):
        qq, dd, nn = _good(cond, qv, dfv, ncv)
        nonzero = nn != 0
        with np.errstate(over="ignore"):  # as scipy (gh-17432)
            t1 = sc.chndtrix(qq[nonzero], dd[nonzero], nn[nonzero])
            zero = ~nonzero
            t2 = 2 * sc.gammaincinv(dd[zero] / 2, qq[zero])
        vals = np.empty(qq.shape, dtype=np.result_type(t1, t2))
        vals[zero] = t2
        vals[nonzero] = t1
        output[cond] = vals * 1 + 0
    return _out(output)


def _average_ranks(x: np.ndarray[Any, Any]) -> FloatArray:
    """Average ranks (1-based) of a 1-D sample: scipy's ``_rankdata(x, 'average')``."""
    size = x.shape[-1]
    j = np.argsort(x, kind="stable")
    y = x[j]
    first = np.concatenate([np.ones(1, dtype=bool), y[:-1] != y[1:]])
    indices = np.flatnonzero(first)
    counts = np.diff(indices, append=np.asarray([size], dtype=indices.dtype))
    ordinal = np.arange(1, size + 1, dtype=np.float64)
    ranks = np.repeat(ordinal[first] + (counts.astype(np.float64) - 1) / 2, counts)
    out = np.empty(size, dtype=np.float64)
    out[j] = ranks
    return out


def rankdata(a: npt.ArrayLike) -> FloatArray:
    """``scipy.stats.rankdata(a)``: average ranks of the flattened sample, every rank
    NaN if a value is NaN."""
    x = np.asarray(a).reshape(-1)
    if x.size == 0:
        return np.empty(0, dtype=np.float64)
    ranks = _average_ranks(x)
    if _has_nan(x):
        ranks[:] = np.nan
    return ranks


def _has_nan(a: np.ndarray[Any, Any]) -> bool:
    """scipy's ``_contains_nan`` of a real array (NaN only in floating arrays)."""
    if a.size == 0 or not np.issubdtype(a.dtype, np.floating):
        return False
    return bool(np.isnan(np.max(a)))


def _samples(x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[Any, Any]:
    xv, yv = np.asarray(x), np.asarray(y)
    if xv.ndim != 1 or yv.ndim != 1 or xv.size != yv.size:
        raise ValueError(f"x and y must be 1-D of one length, got {xv.shape} and {yv.shape}")
    return xv, yv


_NAN = RankCorrelation(np.nan, np.nan)
"""spearmanr's undefined result (Python floats, as scipy's)."""
_NAN64 = RankCorrelation(np.float64(np.nan), np.float64(np.nan))
"""kendalltau's (numpy floats, as scipy's)."""


def spearmanr(x: npt.ArrayLike, y: npt.ArrayLike) -> RankCorrelation:
    """``scipy.stats.spearmanr(x, y)`` of two 1-D samples: Pearson's correlation of
    the average ranks, two-sided p from Student's t with ``n - 2`` degrees of freedom;
    NaN for fewer than 2 values, a constant sample or a NaN."""
    xv, yv = _samples(x, y)
    a = np.column_stack((xv, yv))
    n_obs = a.shape[0]
    if n_obs <= 1:
        return _NAN
    if (a[:, 0][0] == a[:, 0]).all() or (a[:, 1][0] == a[:, 1]).all():
        return _NAN
    if _has_nan(a):
        return _NAN
    # the ranks laid out as scipy's (apply_along_axis), for the same corrcoef sums
    a_ranked = np.apply_along_axis(_average_ranks, 0, a)
    rs = np.corrcoef(a_ranked, rowvar=False)
    dof = n_obs - 2
    with np.errstate(divide="ignore"):
        t = rs * np.sqrt((dof / ((rs + 1.0) * (1.0 - rs))).clip(0))
    prob = 2 * sc.stdtr(dof, -np.abs(t))
    return RankCorrelation(rs[1, 0], prob[1, 0])


def _inversions(v: npt.NDArray[np.intp]) -> int:
    """Pairs ``i < j`` with ``v[i] > v[j]`` (``v`` >= 0): every pair compared for a few
    hundred values, else a bottom-up merge sort, each level counting, for every element
    of a right block, the greater ones of its left block by binary search."""
    n = v.size
    if n <= 256:
        return int(np.count_nonzero(np.triu(v[:, None] > v[None, :], 1)))
    vals = v.astype(np.int64)
    span = int(vals.max()) + 1 if n else 1
    pos = np.arange(n, dtype=np.int64)
    total = 0
    width = 1
    while width < n:
        block = pos // width
        pair = block // 2
        right = (block % 2).astype(bool)
        key = pair * span + vals  # sorted within each block; left blocks in pair order
        left_keys = key[~right]
        at = np.searchsorted(left_keys, key[right], side="right")
        end = np.searchsorted(left_keys, (pair[right] + 1) * span, side="left")
        total += int((end - at).sum())
        vals = np.sort(key) - pair * span  # blocks of 2 width, each sorted
        width *= 2
    return total


def _kendall_p_exact(n: int, c: int) -> Any:
    """scipy's ``_kendall_p_exact(n, c, 'two-sided')`` (Kendall 1970)."""
    c = int(min(c, (n * (n - 1)) // 2 - c))
    if n <= 0:
        raise ValueError(f"n ({n}) must be positive")
    elif c < 0 or 4 * c > n * (n - 1):
        raise ValueError(f"c ({c}) must satisfy 0 <= 4c <= n(n-1) = {n * (n - 1)}.")
    elif n == 1 or n == 2:
        prob: Any = 1.0
    elif c == 0:
        prob = 2.0 / math.factorial(n) if n < 171 else 0.0
    elif c == 1:
        prob = 2.0 / math.factorial(n - 1) if n < 172 else 0.0
    elif 4 * c == n * (n - 1):
        prob = 1.0
    elif n < 171:
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new)
            if j <= c:
                new[j:] -= new[: c + 1 - j]
        prob = 2.0 * np.sum(new) / math.factorial(n)
    else:
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new) / j
            if j <= c:
                new[j:] -= new[: c + 1 - j]
        prob = np.sum(new)
    return np.clip(prob, 0, 1)


def _count_rank_tie(ranks: npt.NDArray[np.intp]) -> tuple[int, int, int]:
    cnt = np.bincount(ranks).astype("int64", copy=False)
    cnt = cnt[cnt > 1]
    return (
        int((cnt * (cnt - 1) // 2).sum()),
        int((cnt * (cnt - 1.0) * (cnt - 2)).sum()),
        int((cnt * (cnt - 1.0) * (2 * cnt + 5)).sum()),
    )


def kendalltau(x: npt.ArrayLike, y: npt.ArrayLike) -> RankCorrelation:
    """``scipy.stats.kendalltau(x, y)`` of two 1-D samples: tau-b, the exact two-sided
    p without ties when ``n <= 33`` or at most one pair is out of order (either way),
    else the normal approximation with the tie-corrected variance; NaN for fewer than
    2 values, a NaN, or a constant sample."""
    xv, yv = _samples(x, y)
    if xv.dtype != yv.dtype:  # scipy promotes the pair to a common type
        common = np.result_type(xv, yv)
        xv, yv = xv.astype(common), yv.astype(common)
    if xv.size <= 1 or _has_nan(xv) or _has_nan(yv):
        return _NAN64
    size = xv.size
    perm = np.argsort(yv)  # sort on y and convert y to dense ranks
    xs, ys = xv[perm], yv[perm]
    yr = np.r_[True, ys[1:] != ys[:-1]].cumsum(dtype=np.intp)
    perm = np.argsort(xs, kind="mergesort")  # stable sort on x, x to dense ranks
    xs, yr = xs[perm], yr[perm]
    xr = np.r_[True, xs[1:] != xs[:-1]].cumsum(dtype=np.intp)
    # discordant pairs: y out of order across x values (sorted by x, then y)
    dis = _inversions(yr)
    obs = np.r_[True, (xr[1:] != xr[:-1]) | (yr[1:] != yr[:-1]), True]
    cnt = np.diff(np.nonzero(obs)[0]).astype("int64", copy=False)
    ntie = int((cnt * (cnt - 1) // 2).sum())  # joint ties
    xtie, x0, x1 = _count_rank_tie(xr)
    ytie, y0, y1 = _count_rank_tie(yr)
    tot = (size * (size - 1)) // 2
    if xtie == tot or ytie == tot:
        return _NAN64
    con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
    tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    tau = np.minimum(1.0, max(-1.0, tau))
    if (xtie == 0 and ytie == 0) and (size <= 33 or min(dis, tot - dis) <= 1):
        pvalue = _kendall_p_exact(size, tot - dis)
    else:
        m = size * (size - 1.0)
        var = (
            (m * (2 * size + 5) - x1 - y1) / 18
            + (2 * xtie * ytie) / m
            + x0 * y0 / (9 * m * (size - 2))
        )
        z = con_minus_dis / np.sqrt(var)
        pvalue = 2 * sc.ndtr(-np.abs(z))
    return RankCorrelation(tau[()], pvalue[()])
