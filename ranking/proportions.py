"""Shares with intervals: the Wilson score interval and each model's "both bad" share.

In an arena study a vote may say that *both* responses are bad. Ratings count such a vote
as a tie or drop it; :func:`both_bad_shares` keeps it as its own signal: per model, the
share of the votes on its battles that said "both bad", with a Wilson score interval.

The votes on one model are treated as independent Bernoulli trials. Votes of one
annotator, or on one battle, are correlated in practice, so the interval is a lower bound
on the uncertainty when a few annotators cast most of the votes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ranking._validation import as_index_array
from ranking.errors import InvalidParameterError, LengthMismatchError

__all__ = ["BothBadShares", "both_bad_shares", "wilson_interval"]


def wilson_interval(
    successes: npt.ArrayLike, n: npt.ArrayLike, confidence: float = 0.95
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Wilson score interval of a binomial proportion, elementwise.

    Parameters
    ----------
    successes : array-like of int
        Successes ``k`` (``0 <= k <= n``).
    n : array-like of int
        Trials; where ``n == 0`` both bounds are NaN.
    confidence : float
        Coverage, in (0, 1).

    Returns
    -------
    lower, upper : ndarray of float
        ``(p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)`` with ``p = k/n`` and
        ``z`` the normal quantile of ``(1 + confidence) / 2``, clipped to [0, 1].

    References
    ----------
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
    inference. JASA 22(158), 209-212.

    Examples
    --------
    >>> lo, hi = wilson_interval(5, 10)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.2366, 0.7634)
    """
    if not 0.0 < confidence < 1.0:
        raise InvalidParameterError(f"confidence must be in (0, 1), got {confidence}")
    k = np.asarray(successes, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    if np.any(k < 0) or np.any(k > m):
        raise InvalidParameterError("successes must lie between 0 and n")
    lower, upper = _wilson(k, m, confidence)
    return lower.astype(np.float64), upper.astype(np.float64)


def _wilson(
    k: npt.NDArray[np.float64], m: npt.NDArray[np.float64], confidence: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The Wilson bounds of :func:`wilson_interval` for float ``k`` and ``m`` the caller has
    checked (NaN where ``m`` is 0); also :func:`ranking.quality.wilson_bounds`."""
    from ranking._special_dist import norm_ppf

    z = float(norm_ppf(0.5 + confidence / 2.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / m
        denom = 1.0 + z * z / m
        centre = (p + z * z / (2.0 * m)) / denom
        half = z * np.sqrt(p * (1.0 - p) / m + z * z / (4.0 * m * m)) / denom
    lower = np.where(m > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    upper = np.where(m > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return lower, upper


@dataclass(frozen=True)
class BothBadShares:
    """Per model, the share of the votes on its battles that said "both bad".

    Attributes
    ----------
    share, lower, upper : ndarray of shape (n_models,)
        The share and its Wilson interval (NaN for a model without votes).
    votes : ndarray of int, shape (n_models,)
        Votes on battles the model was in (the denominator).
    both_bad : ndarray of int, shape (n_models,)
        Of those, the votes that said "both bad".
    confidence : float
    """

    share: npt.NDArray[np.float64]
    lower: npt.NDArray[np.float64]
    upper: npt.NDArray[np.float64]
    votes: npt.NDArray[np.int64]
    both_bad: npt.NDArray[np.int64]
    confidence: float


def both_bad_shares(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    both_bad: npt.ArrayLike,
    *,
    n_models: int,
    confidence: float = 0.95,
) -> BothBadShares:
    """Each model's share of "both bad" votes among the votes on its battles.

    Parameters
    ----------
    model_a, model_b : array-like of int, shape (n_votes,)
        The two models of each vote's battle (``0 .. n_models - 1``).
    both_bad : array-like of bool, shape (n_votes,)
        Whether the vote said "both bad".
    n_models : int
    confidence : float

    Returns
    -------
    BothBadShares

    Examples
    --------
    >>> r = both_bad_shares([0, 0, 1], [1, 2, 2], [True, False, False], n_models=3)
    >>> r.share.tolist(), r.votes.tolist()
    ([0.5, 0.5, 0.0], [2, 2, 2])
    """
    a = as_index_array(model_a, "model_a")
    b = as_index_array(model_b, "model_b")
    bad = np.asarray(both_bad, dtype=bool).reshape(-1)
    if not (a.shape == b.shape == bad.shape):
        raise LengthMismatchError("model_a, model_b and both_bad must have the same length")
    if n_models < 0 or (a.size and max(int(a.max()), int(b.max())) >= n_models):
        raise InvalidParameterError("model indices must be below n_models")
    votes = np.bincount(np.concatenate([a, b]), minlength=n_models).astype(np.int64)
    w = np.concatenate([bad, bad]).astype(np.float64)
    k = np.rint(np.bincount(np.concatenate([a, b]), weights=w, minlength=n_models)).astype(np.int64)
    lower, upper = wilson_interval(k, votes, confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(votes > 0, k / np.maximum(votes, 1), np.nan)
    return BothBadShares(share.astype(np.float64), lower, upper, votes, k, confidence)
