"""Rank correlations and rank displacement between two score vectors.

Scores are "higher is better" (or "higher is harder"); rank 1 is the largest
score. Used to compare EIP with accuracy and to measure robustness.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ranking.errors import DegenerateDataError, InvalidParameterError, ShapeError
from ranking.types import FloatArray

__all__ = ["kendall_tau", "rank_displacement", "ranks", "spearman_rho"]


def _pair(x: Any, y: Any) -> tuple[FloatArray, FloatArray]:
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"scores must be 1-D, got {a.ndim} and {b.ndim} dimension(s)")
    if a.shape != b.shape:
        raise ShapeError(f"scores must have the same length, got {a.size} and {b.size}")
    if a.size < 2:
        raise DegenerateDataError(f"a rank correlation needs at least 2 items, got {a.size}")
    for name, v in (("x", a), ("y", b)):
        if not np.all(np.isfinite(v)):
            i = int(np.flatnonzero(~np.isfinite(v))[0])
            raise InvalidParameterError(f"{name}[{i}] is not finite ({v[i]!r})")
        if np.all(v == v[0]):
            raise DegenerateDataError(
                f"{name} is constant ({v[0]!r} everywhere); a rank correlation is undefined"
            )
    return a, b


def ranks(scores: npt.ArrayLike) -> FloatArray:
    """Rank positions, 1 for the highest score; ties get their average rank.

    Parameters
    ----------
    scores : array-like of shape (n_items,)
        Scores, higher is better.

    Returns
    -------
    ndarray of shape (n_items,)
        Rank of each item (float, because ties are averaged).

    Examples
    --------
    >>> ranks([0.2, 0.9, 0.5, 0.5]).tolist()
    [4.0, 1.0, 2.5, 2.5]
    """
    from scipy import stats

    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ShapeError(f"scores must be 1-D, got {s.ndim} dimension(s)")
    return np.asarray(stats.rankdata(-s), dtype=np.float64)


def spearman_rho(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Spearman rank correlation of two score vectors (scipy.stats.spearmanr).

    Parameters
    ----------
    x, y : array-like of shape (n_items,)
        Scores for the same items.

    Returns
    -------
    float
        Spearman's rho in [-1, 1].

    Raises
    ------
    ShapeError
        If the inputs are not 1-D of equal length.
    DegenerateDataError
        If there are fewer than 2 items or a vector is constant.
    InvalidParameterError
        If a score is not finite.

    References
    ----------
    Spearman, C. (1904). The proof and measurement of association between two
    things. The American Journal of Psychology, 15(1), 72-101.

    Examples
    --------
    >>> round(spearman_rho([1, 2, 3, 4], [10, 20, 40, 30]), 4)
    0.8
    """
    from scipy import stats

    a, b = _pair(x, y)
    return float(stats.spearmanr(a, b).statistic)


def kendall_tau(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Kendall's tau-b between two score vectors (scipy.stats.kendalltau).

    Parameters
    ----------
    x, y : array-like of shape (n_items,)
        Scores for the same items.

    Returns
    -------
    float
        Kendall's tau-b in [-1, 1] (ties handled by the tau-b correction).

    Raises
    ------
    ShapeError
        If the inputs are not 1-D of equal length.
    DegenerateDataError
        If there are fewer than 2 items or a vector is constant.
    InvalidParameterError
        If a score is not finite.

    References
    ----------
    Kendall, M. G. (1938). A new measure of rank correlation. Biometrika,
    30(1/2), 81-93.

    Examples
    --------
    >>> round(kendall_tau([1, 2, 3, 4], [10, 20, 40, 30]), 4)
    0.6667
    """
    from scipy import stats

    a, b = _pair(x, y)
    return float(stats.kendalltau(a, b).statistic)


def rank_displacement(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Mean absolute change of rank position between two score vectors.

    This is the "Avg |Δrank|" of the EIP paper's Table 20 and the "Mean
    Absolute Rank Change" of its Table 11.

    Parameters
    ----------
    x, y : array-like of shape (n_items,)
        Scores for the same items, higher is better.

    Returns
    -------
    float
        ``mean(|rank(x) - rank(y)|)`` with rank 1 for the highest score.

    Raises
    ------
    ShapeError
        If the inputs are not 1-D of equal length.
    DegenerateDataError
        If there are fewer than 2 items or a vector is constant.

    References
    ----------
    EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty, Table 11
    and App. N (Table 20).

    Examples
    --------
    >>> rank_displacement([4, 3, 2, 1], [3, 4, 2, 1])
    0.5
    """
    a, b = _pair(x, y)
    return float(np.mean(np.abs(ranks(a) - ranks(b))))
