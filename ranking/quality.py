"""Per-annotator quality checks inside a study: gold accuracy and self-consistency.

Both are shares of binary checks per annotator: a vote on a gold item agrees with the
known answer, or a swapped re-test agrees with the annotator's own earlier vote on the
same item (the choices are relative to the item, so comparing them un-swaps the sides).
Each share comes with a Wilson score interval and a one-sided exact binomial test of
"the annotator's rate is below ``threshold``"; a p-value below ``alpha`` raises the
annotator's signal (``low_gold_accuracy`` or ``inconsistent``). The p-values are
unadjusted so that a verdict rule can adjust them across annotators itself.

Outcome codes are those of ``annotate.choices.OUTCOME``: 1 first half (first question /
model A), 2 second half, 0 skip, 3 tie, 4 both bad. A skip is no answer: it is left out
of both checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ranking.errors import InvalidParameterError, LengthMismatchError
from ranking.proportions import _wilson

if TYPE_CHECKING:
    from ranking.arena import Evidence

__all__ = [
    "CONSISTENCY_THRESHOLD",
    "GOLD_THRESHOLD",
    "CheckRates",
    "check_evidence",
    "check_rates",
    "gold_accuracy",
    "quality_reasons",
    "self_consistency",
    "wilson_bounds",
]

GOLD_THRESHOLD = 0.7
"""Default rate below which an annotator's gold accuracy is signalled (tuned, not derived:
above the 0.5 of a random voter on a two-sided pair, below an attentive annotator's)."""
CONSISTENCY_THRESHOLD = 0.7
"""Default rate below which an annotator's agreement with their own re-tests is signalled."""

SKIP = 0


@dataclass(frozen=True)
class CheckRates:
    """Per-annotator rates of one check, each array of shape (n_annotators,).

    ``rate``, ``lower``, ``upper`` and ``p_value`` are NaN for an annotator without checks
    (``n`` 0), whose ``signal`` is False.
    """

    n: npt.NDArray[np.int64]
    hits: npt.NDArray[np.int64]
    rate: npt.NDArray[np.float64]
    lower: npt.NDArray[np.float64]
    upper: npt.NDArray[np.float64]
    p_value: npt.NDArray[np.float64]
    """One-sided exact binomial p-value of H0: rate >= threshold (unadjusted)."""
    signal: npt.NDArray[np.bool_]
    """p_value < alpha: the rate is significantly below ``threshold``."""
    threshold: float
    alpha: float
    confidence: float


def wilson_bounds(
    hits: npt.ArrayLike, n: npt.ArrayLike, confidence: float = 0.95
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Wilson score interval of binomial proportions, elementwise (NaN where ``n`` is 0).

    The formula of :func:`ranking.proportions.wilson_interval`, at least 1-D, without its
    check that ``0 <= hits <= n``.

    References
    ----------
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
    inference. JASA 22(158), 209-212.

    Examples
    --------
    >>> lo, hi = wilson_bounds([5], [10])
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.2366, 0.7634)
    """
    if not 0.0 < confidence < 1.0:
        raise InvalidParameterError(f"confidence must be in (0, 1), got {confidence}")
    k = np.atleast_1d(np.asarray(hits, dtype=np.float64))
    m = np.atleast_1d(np.asarray(n, dtype=np.float64))
    return _wilson(k, m, confidence)


def check_rates(
    annotators: npt.ArrayLike,
    hits: npt.ArrayLike,
    *,
    n_annotators: int,
    threshold: float,
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> CheckRates:
    """Per-annotator share of passed checks, its Wilson interval and the one-sided test.

    Parameters
    ----------
    annotators : array-like of int, shape (n_checks,)
        Annotator index of each check, in ``[0, n_annotators)``.
    hits : array-like of bool, shape (n_checks,)
        Whether each check passed.
    n_annotators : int
    threshold : float
        The rate tested against, in (0, 1).
    alpha : float
        Level of the one-sided test (unadjusted).
    confidence : float
        Coverage of the Wilson interval.

    Returns
    -------
    CheckRates

    Examples
    --------
    >>> r = check_rates([0, 0, 0, 1], [True, True, False, False], n_annotators=3,
    ...                 threshold=0.7)
    >>> r.n.tolist(), r.hits.tolist(), [round(float(x), 3) for x in r.rate[:2]]
    ([3, 1, 0], [2, 0, 0], [0.667, 0.0])
    """
    from ranking._special_dist import binom_cdf

    a = np.asarray(annotators, dtype=np.int64).reshape(-1)
    h = np.asarray(hits, dtype=bool).reshape(-1)
    if a.shape != h.shape:
        raise LengthMismatchError(
            f"annotators and hits must have the same length, got {a.size} and {h.size}"
        )
    if n_annotators < 0 or (a.size and (a.min() < 0 or a.max() >= n_annotators)):
        raise InvalidParameterError(f"annotator indices must be in [0, {n_annotators})")
    if not 0.0 < threshold < 1.0:
        raise InvalidParameterError(f"threshold must be in (0, 1), got {threshold}")
    if not 0.0 < alpha < 1.0:
        raise InvalidParameterError(f"alpha must be in (0, 1), got {alpha}")
    n = np.bincount(a, minlength=n_annotators).astype(np.int64)
    k = np.bincount(a, weights=h.astype(np.float64), minlength=n_annotators).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(n > 0, k / np.maximum(n, 1), np.nan)
    lower, upper = wilson_bounds(k, n, confidence)
    p = np.where(n > 0, binom_cdf(k, np.maximum(n, 1), threshold), np.nan)
    signal = np.where(n > 0, p < alpha, False).astype(bool)
    return CheckRates(n, k, rate, lower, upper, p, signal, threshold, alpha, confidence)


def _code_agreement(
    annotators: npt.ArrayLike,
    first: npt.ArrayLike,
    second: npt.ArrayLike,
    names: tuple[str, str],
    *,
    skip_second: bool,
    n_annotators: int,
    threshold: float,
    alpha: float,
    confidence: float,
) -> CheckRates:
    """:func:`check_rates` of "the outcome code in ``first`` equals the one in ``second``".

    A check whose ``first`` code is a skip is left out, and with ``skip_second`` also one
    whose ``second`` code is. ``names`` are the two arrays' names for the length error.
    """
    a = np.asarray(annotators, dtype=np.int64).reshape(-1)
    x = np.asarray(first, dtype=np.int64).reshape(-1)
    y = np.asarray(second, dtype=np.int64).reshape(-1)
    if not a.size == x.size == y.size:
        raise LengthMismatchError(
            f"annotators, {names[0]} and {names[1]} must have the same length, got {a.size}, "
            f"{x.size} and {y.size}"
        )
    keep = x != SKIP
    if skip_second:
        keep &= y != SKIP
    return check_rates(
        a[keep],
        x[keep] == y[keep],
        n_annotators=n_annotators,
        threshold=threshold,
        alpha=alpha,
        confidence=confidence,
    )


def gold_accuracy(
    annotators: npt.ArrayLike,
    choices: npt.ArrayLike,
    gold: npt.ArrayLike,
    *,
    n_annotators: int,
    threshold: float = GOLD_THRESHOLD,
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> CheckRates:
    """Each annotator's accuracy on the gold items: the share of votes equal to the answer.

    ``choices`` and ``gold`` are outcome codes (1, 2, 3 tie, 4 both bad); skipped votes
    (code 0) are left out. A vote is right only when its code equals the gold code.

    Examples
    --------
    >>> r = gold_accuracy([0, 0, 0, 1], [1, 2, 0, 3], [1, 1, 1, 3], n_annotators=2)
    >>> r.n.tolist(), r.hits.tolist()
    ([2, 1], [1, 1])
    """
    return _code_agreement(
        annotators,
        choices,
        gold,
        ("choices", "gold"),
        skip_second=False,
        n_annotators=n_annotators,
        threshold=threshold,
        alpha=alpha,
        confidence=confidence,
    )


def self_consistency(
    annotators: npt.ArrayLike,
    original: npt.ArrayLike,
    retest: npt.ArrayLike,
    *,
    n_annotators: int,
    threshold: float = CONSISTENCY_THRESHOLD,
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> CheckRates:
    """Each annotator's agreement with their own swapped re-tests.

    ``original`` and ``retest`` are outcome codes relative to the item (as stored), so a
    re-test shown the other way round agrees when its code is the same. Pairs where
    either vote is a skip (0) are left out.

    Examples
    --------
    >>> r = self_consistency([0, 0, 0, 1], [1, 2, 1, 0], [1, 1, 1, 2], n_annotators=2)
    >>> r.n.tolist(), r.hits.tolist()
    ([3, 0], [2, 0])
    """
    return _code_agreement(
        annotators,
        original,
        retest,
        ("original", "retest"),
        skip_second=True,
        n_annotators=n_annotators,
        threshold=threshold,
        alpha=alpha,
        confidence=confidence,
    )


def check_evidence(reason: str, rates: CheckRates) -> Evidence:
    """A check's per-annotator test as evidence for :func:`ranking.stable_arena`.

    The statistic is the rate, the threshold the check's, the p-value the unadjusted
    one-sided exact binomial p-value of "rate >= threshold" (NaN for an annotator
    without checks, who is then not tested); ``stable_arena`` adjusts the p-values across
    the annotators tested with its ``correction`` and flags at its ``alpha``, like its
    per-vote checks. ``reason`` is ``"low_gold_accuracy"`` or ``"inconsistent"`` (the
    names of :func:`quality_reasons`).

    Examples
    --------
    >>> g = check_rates([0] * 20 + [1] * 20, [False] * 20 + [True] * 20, n_annotators=3,
    ...                 threshold=0.7)
    >>> ev = check_evidence("low_gold_accuracy", g)
    >>> ev.reason, [round(float(x), 4) for x in ev.p_value[:2]]
    ('low_gold_accuracy', [0.0, 1.0])
    """
    from ranking.arena import Evidence

    return Evidence(
        reason=reason, statistic=rates.rate, threshold=rates.threshold, p_value=rates.p_value
    )


def quality_reasons(
    n_annotators: int,
    *,
    gold: CheckRates | None = None,
    consistency: CheckRates | None = None,
) -> list[list[str]]:
    """The quality signals of each annotator: ``low_gold_accuracy`` and / or ``inconsistent``.

    The hook a verdict rule can consume as evidence (with each check's ``p_value``).

    Examples
    --------
    >>> g = check_rates([0] * 20, [False] * 20, n_annotators=2, threshold=0.7)
    >>> quality_reasons(2, gold=g)
    [['low_gold_accuracy'], []]
    """
    out: list[list[str]] = [[] for _ in range(n_annotators)]
    for name, rates in (("low_gold_accuracy", gold), ("inconsistent", consistency)):
        if rates is None:
            continue
        for i in np.flatnonzero(rates.signal):
            out[int(i)].append(name)
    return out
