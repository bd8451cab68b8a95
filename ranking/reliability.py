"""Per-annotator reliability signals computed from vote arrays.

These are model-free checks that complement the am-ELO ability of
:func:`ranking.stable_arena`. They work for any pairwise vote: an arena
battle (left response vs right response) or a difficulty vote (first
question vs second question); "left" below means the item shown first.

* :func:`too_fast_votes` -- votes cast faster than a reading-time floor that
  grows with the length of the text shown;
* :func:`position_bias` -- the share of decisive votes won by the left item,
  with an exact two-sided binomial test against 1/2;
* :func:`vote_rates` -- tie, both-bad and skip rates;
* :func:`majority_agreement` -- agreement with the leave-one-out majority of
  the other annotators on the same item;
* :func:`annotator_signals` -- all of the above in one result;
* :func:`adjust_p_values` -- Holm or Benjamini-Hochberg adjustment of one
  test's p-values across annotators.

Shares that are undefined for an annotator (no vote of the kind needed) are
masked in the returned :class:`numpy.ma.MaskedArray`, never NaN.

References
----------
Liu, Z. et al. (2025). am-ELO: A Stable Framework for Arena-based LLM
Evaluation. ICML 2025 (annotator reliability in arenas).
Chiang, W.-L. et al. (2024). Chatbot Arena: An Open Platform for Evaluating
LLMs by Human Preference. ICML 2024 (position bias, vote quality checks).
Zheng, L. et al. (2023). Judging LLM-as-a-Judge with MT-Bench and Chatbot
Arena. NeurIPS 2023 Datasets and Benchmarks (position bias).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ranking._validation import as_index_array, check_same_length
from ranking.errors import InvalidParameterError, ShapeError
from ranking.types import BoolArray, FloatArray, IntArray

__all__ = [
    "AnnotatorSignals",
    "MajorityAgreement",
    "PositionBias",
    "TooFastVotes",
    "VoteRates",
    "adjust_p_values",
    "annotator_signals",
    "majority_agreement",
    "position_bias",
    "position_bias_from_counts",
    "too_fast_votes",
    "vote_rates",
    "vote_rates_from_counts",
]

MaskedFloatArray = np.ma.MaskedArray


@dataclass(frozen=True)
class TooFastVotes:
    """Votes cast faster than the reading-time floor."""

    too_fast: BoolArray
    """Per vote, shape (n_votes,): response time below the floor."""
    floor: FloatArray
    """Per vote, shape (n_votes,): the floor in seconds."""
    share: MaskedFloatArray
    """Per annotator, shape (n_annotators,): share of its timed votes that were
    too fast; masked for annotators without timed votes."""
    n_timed: IntArray
    """Per annotator, shape (n_annotators,): votes with a response time."""
    min_seconds: float
    """Fixed part of the floor."""
    chars_per_second: float
    """Reading speed of the floor."""


@dataclass(frozen=True)
class PositionBias:
    """Share of decisive votes won by the left (first) item."""

    left_share: MaskedFloatArray
    """Per annotator, shape (n_annotators,); masked without decisive votes."""
    p_value: MaskedFloatArray
    """Two-sided exact binomial p-value against 1/2, shape (n_annotators,)."""
    n_decisive: IntArray
    """Decisive (non-tie, non-both-bad, non-skip) votes per annotator."""
    n_left: IntArray
    """Decisive votes won by the left item, per annotator."""


@dataclass(frozen=True)
class VoteRates:
    """Tie, both-bad and skip rates per annotator."""

    tie_rate: MaskedFloatArray
    """Ties (both-bad excluded) among non-skipped votes, shape (n_annotators,)."""
    both_bad_rate: MaskedFloatArray
    """Both-bad votes among non-skipped votes, shape (n_annotators,)."""
    skip_rate: MaskedFloatArray
    """Skips among all votes, shape (n_annotators,)."""
    n_votes: IntArray
    """All votes (skips included) per annotator."""


@dataclass(frozen=True)
class MajorityAgreement:
    """Agreement with the leave-one-out majority on shared items."""

    agreement: MaskedFloatArray
    """Share of compared votes equal to the majority of the other annotators,
    shape (n_annotators,); masked for annotators with no compared vote."""
    n_compared: IntArray
    """Votes on items where the other annotators have a unique plurality label."""
    chance: MaskedFloatArray
    """Agreement expected if the annotator voted at random with its own label
    frequencies, shape (n_annotators,): a baseline for ``agreement``."""


@dataclass(frozen=True)
class AnnotatorSignals:
    """All reliability signals for each annotator."""

    n_votes: IntArray
    """Votes per annotator, shape (n_annotators,)."""
    rates: VoteRates
    """Tie, both-bad and skip rates."""
    position: PositionBias
    """Left-side win share and binomial test."""
    too_fast: TooFastVotes | None
    """Fast-vote shares, or None when no response times were given."""
    majority: MajorityAgreement | None
    """Majority agreement, or None when no item ids were given."""


def _masked_ratio(num: npt.NDArray[Any], den: npt.NDArray[Any]) -> MaskedFloatArray:
    den = np.asarray(den, dtype=np.float64)
    out = np.divide(np.asarray(num, dtype=np.float64), den, out=np.zeros(den.shape), where=den > 0)
    return np.ma.MaskedArray(out, mask=den <= 0)


def _as_mask(x: Any, name: str, n: int) -> BoolArray:
    if x is None:
        return np.zeros(n, dtype=bool)
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ShapeError(f"{name} must be 1-D, got {arr.ndim} dimension(s)")
    if arr.size and arr.dtype != np.bool_ and not np.isin(arr, (0, 1)).all():
        raise InvalidParameterError(f"{name} must hold booleans")
    if arr.size != n:
        raise ShapeError(f"{name} has {arr.size} entries, expected one per vote ({n})")
    return arr.astype(bool)


def _annotators(annotator: Any, n_annotators: int | None) -> tuple[IntArray, int]:
    k = as_index_array(annotator, "annotator", n=n_annotators)
    m = int(n_annotators) if n_annotators is not None else (int(k.max()) + 1 if k.size else 0)
    return k, m


def _outcomes(outcome: Any, n: int) -> FloatArray:
    w = np.asarray(outcome, dtype=np.float64)
    if w.ndim != 1 or w.size != n:
        raise ShapeError(f"outcome must be 1-D with one entry per vote ({n}), got shape {w.shape}")
    if not np.isin(w, (0.0, 0.5, 1.0)).all():
        i = int(np.flatnonzero(~np.isin(w, (0.0, 0.5, 1.0)))[0])
        raise InvalidParameterError(
            f"outcome must hold 1 (left won), 0 (right won) or 0.5 (tie); outcome[{i}] is {w[i]!r}"
        )
    return w


def too_fast_votes(
    annotator: npt.ArrayLike,
    response_time: npt.ArrayLike,
    text_length: npt.ArrayLike,
    *,
    n_annotators: int | None = None,
    min_seconds: float = 2.0,
    chars_per_second: float = 50.0,
) -> TooFastVotes:
    """Votes cast faster than a reading-time floor that grows with the text.

    A vote is too fast when ``response_time < min_seconds + text_length /
    chars_per_second``. The default speed, 50 characters a second (about
    600 words a minute), is roughly twice a fast silent reading rate, so
    only votes that cannot have followed the text are counted. Votes with a
    missing (NaN) response time are ignored.

    Parameters
    ----------
    annotator : array-like of int of shape (n_votes,)
        Annotator of each vote.
    response_time : array-like of float of shape (n_votes,)
        Seconds from display to vote (NaN when unknown).
    text_length : array-like of float of shape (n_votes,)
        Characters shown for the vote (prompt plus both responses, or both
        questions).
    n_annotators : int, optional
        Number of annotators.
    min_seconds : float, default 2.0
        Fixed part of the floor.
    chars_per_second : float, default 50.0
        Reading speed of the floor.

    Returns
    -------
    TooFastVotes
        Per-vote flags and floors of shape (n_votes,), per-annotator shares
        of shape (n_annotators,).

    Raises
    ------
    LengthMismatchError, ShapeError, InvalidParameterError
        On malformed input (negative times or lengths, bad parameters).

    References
    ----------
    Rayner, K. et al. (2016). So much to read, so little time: how do we read,
    and can speed reading help? Psychological Science in the Public Interest
    17, 4-34 (reading rates of 200-400 words a minute).

    Examples
    --------
    >>> r = too_fast_votes([0, 0, 1], [1.0, 30.0, 3.0], [500, 500, 20])
    >>> r.too_fast.tolist(), r.share.tolist()
    ([True, False, False], [0.5, 0.0])
    """
    if not (np.isfinite(min_seconds) and min_seconds >= 0):
        raise InvalidParameterError(
            f"min_seconds must be a non-negative number, got {min_seconds!r}"
        )
    if not (np.isfinite(chars_per_second) and chars_per_second > 0):
        raise InvalidParameterError(f"chars_per_second must be positive, got {chars_per_second!r}")
    k, m = _annotators(annotator, n_annotators)
    t = np.asarray(response_time, dtype=np.float64)
    length = np.asarray(text_length, dtype=np.float64)
    check_same_length(annotator=k, response_time=t, text_length=length)
    if t.ndim != 1 or length.ndim != 1:
        raise ShapeError("response_time and text_length must be 1-D")
    if np.any(t[~np.isnan(t)] < 0) or np.isinf(t).any():
        raise InvalidParameterError("response_time must be non-negative seconds (NaN when unknown)")
    if not np.isfinite(length).all() or np.any(length < 0):
        raise InvalidParameterError("text_length must be finite and non-negative")
    floor = min_seconds + length / chars_per_second
    timed = ~np.isnan(t)
    fast = timed & (np.nan_to_num(t, nan=np.inf) < floor)
    n_timed = np.bincount(k, weights=timed.astype(float), minlength=m)
    n_fast = np.bincount(k, weights=fast.astype(float), minlength=m)
    return TooFastVotes(
        too_fast=fast,
        floor=floor,
        share=_masked_ratio(n_fast, n_timed),
        n_timed=n_timed.astype(np.int64),
        min_seconds=float(min_seconds),
        chars_per_second=float(chars_per_second),
    )


def position_bias(
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    both_bad: npt.ArrayLike | None = None,
    skipped: npt.ArrayLike | None = None,
    n_annotators: int | None = None,
) -> PositionBias:
    """Share of decisive votes won by the left item, with a binomial test.

    An unbiased annotator shown items in random left/right order wins the
    left item about half the time. The p-value is the exact two-sided
    binomial test of ``n_left`` successes in ``n_decisive`` trials against
    probability 1/2 (as :func:`scipy.stats.binomtest`), vectorised over
    annotators.

    Parameters
    ----------
    annotator : array-like of int of shape (n_votes,)
        Annotator of each vote.
    outcome : array-like of float of shape (n_votes,)
        1 (left won), 0 (right won) or 0.5 (tie).
    both_bad, skipped : array-like of bool of shape (n_votes,), optional
        Votes that are not decisive whatever their outcome.
    n_annotators : int, optional
        Number of annotators.

    Returns
    -------
    PositionBias
        ``left_share`` and ``p_value`` of shape (n_annotators,), masked
        without decisive votes, and the counts.

    Raises
    ------
    LengthMismatchError, ShapeError, InvalidParameterError
        On malformed input.

    References
    ----------
    Zheng, L. et al. (2023). Judging LLM-as-a-Judge with MT-Bench and Chatbot
    Arena. NeurIPS 2023 (position bias).

    Examples
    --------
    >>> r = position_bias([0] * 10 + [1] * 4, [1] * 10 + [1, 0, 0.5, 1])
    >>> r.left_share.tolist(), round(float(r.p_value[0]), 5)
    ([1.0, 0.6666666666666666], 0.00195)
    """
    k, m = _annotators(annotator, n_annotators)
    w = _outcomes(outcome, k.size)
    nd = ~(_as_mask(both_bad, "both_bad", k.size) | _as_mask(skipped, "skipped", k.size))
    decisive = nd & (w != 0.5)
    n_dec = np.bincount(k, weights=decisive.astype(float), minlength=m).astype(np.int64)
    n_left = np.bincount(k, weights=(decisive & (w == 1.0)).astype(float), minlength=m).astype(
        np.int64
    )
    return position_bias_from_counts(n_left, n_dec)


def position_bias_from_counts(n_left: IntArray, n_dec: IntArray) -> PositionBias:
    """:func:`position_bias` from each annotator's left wins and decisive votes (counts
    kept elsewhere, say updated vote by vote); the same numbers.

    Examples
    --------
    >>> r = position_bias_from_counts(np.array([10, 2]), np.array([10, 3]))
    >>> r.left_share.tolist(), round(float(r.p_value[0]), 5)
    ([1.0, 0.6666666666666666], 0.00195)
    """
    from ranking._special_dist import binom_cdf

    n_left = np.asarray(n_left, dtype=np.int64)
    n_dec = np.asarray(n_dec, dtype=np.int64)
    # two-sided exact test for p = 1/2 (symmetric): 2 * P(X <= min(x, n - x)), capped at 1
    lo = np.minimum(n_left, n_dec - n_left)
    pv = np.where(n_left * 2 == n_dec, 1.0, np.minimum(1.0, 2.0 * binom_cdf(lo, n_dec, 0.5)))
    return PositionBias(
        left_share=_masked_ratio(n_left, n_dec),
        p_value=np.ma.MaskedArray(np.where(n_dec > 0, pv, 1.0), mask=n_dec == 0),
        n_decisive=n_dec,
        n_left=n_left,
    )


def vote_rates(
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    both_bad: npt.ArrayLike | None = None,
    skipped: npt.ArrayLike | None = None,
    n_annotators: int | None = None,
) -> VoteRates:
    """Tie, both-bad and skip rates per annotator.

    ``skip_rate`` is skips over all votes; ``tie_rate`` (ties that are not
    both-bad) and ``both_bad_rate`` are over non-skipped votes. A skipped
    vote's outcome is ignored.

    Parameters
    ----------
    annotator : array-like of int of shape (n_votes,)
        Annotator of each vote.
    outcome : array-like of float of shape (n_votes,)
        1, 0 or 0.5.
    both_bad, skipped : array-like of bool of shape (n_votes,), optional
        Both-bad and skipped votes.
    n_annotators : int, optional
        Number of annotators.

    Returns
    -------
    VoteRates
        Rates of shape (n_annotators,), masked where undefined, and vote counts.

    Raises
    ------
    LengthMismatchError, ShapeError, InvalidParameterError
        On malformed input.

    References
    ----------
    Chiang, W.-L. et al. (2024). Chatbot Arena, ICML 2024 (tie and both-bad votes).

    Examples
    --------
    >>> r = vote_rates([0, 0, 0, 0], [1, 0.5, 0.5, 0], both_bad=[0, 1, 0, 0], skipped=[0, 0, 0, 1])
    >>> r.tie_rate.tolist(), r.both_bad_rate.tolist(), r.skip_rate.tolist()
    ([0.3333333333333333], [0.3333333333333333], [0.25])
    """
    k, m = _annotators(annotator, n_annotators)
    w = _outcomes(outcome, k.size)
    bb = _as_mask(both_bad, "both_bad", k.size)
    sk = _as_mask(skipped, "skipped", k.size)
    n_all = np.bincount(k, minlength=m)
    n_used = np.bincount(k, weights=(~sk).astype(float), minlength=m)
    n_tie = np.bincount(k, weights=(~sk & ~bb & (w == 0.5)).astype(float), minlength=m)
    n_bb = np.bincount(k, weights=(~sk & bb).astype(float), minlength=m)
    n_sk = np.bincount(k, weights=sk.astype(float), minlength=m)
    return vote_rates_from_counts(n_all, n_used, n_tie, n_bb, n_sk)


def vote_rates_from_counts(
    n_all: npt.NDArray[Any],
    n_used: npt.NDArray[Any],
    n_tie: npt.NDArray[Any],
    n_bb: npt.NDArray[Any],
    n_sk: npt.NDArray[Any],
) -> VoteRates:
    """:func:`vote_rates` from each annotator's votes, non-skipped votes, ties (not both
    bad), both-bad votes and skips (counts kept elsewhere); the same numbers.

    Examples
    --------
    >>> r = vote_rates_from_counts(*(np.array([x]) for x in (4, 3, 1, 1, 1)))
    >>> r.tie_rate.tolist(), r.both_bad_rate.tolist(), r.skip_rate.tolist()
    ([0.3333333333333333], [0.3333333333333333], [0.25])
    """
    return VoteRates(
        tie_rate=_masked_ratio(n_tie, n_used),
        both_bad_rate=_masked_ratio(n_bb, n_used),
        skip_rate=_masked_ratio(n_sk, n_all),
        n_votes=n_all.astype(np.int64),
    )


def majority_agreement(
    item: npt.ArrayLike,
    annotator: npt.ArrayLike,
    label: npt.ArrayLike,
    *,
    n_annotators: int | None = None,
) -> MajorityAgreement:
    """Agreement of each annotator with the leave-one-out majority.

    For each vote on an item, the other annotators' votes on that item are
    counted per label; when one label has a unique plurality, the vote is
    compared with it. Votes on items nobody else voted on, or where the
    others are tied, are not compared. ``chance`` is the agreement an
    annotator would reach by drawing its labels at random from its own label
    frequencies against the same majorities.

    Labels are categories (for example 0 left, 1 right, 2 tie); the caller
    must orient them the same way for every annotator of an item (if sides
    were swapped per annotator, map them back first). Each annotator may vote
    at most once per item: pass only the current (latest) vote.

    Parameters
    ----------
    item : array-like of int of shape (n_votes,)
        Item (pair of models or questions) of each vote.
    annotator : array-like of int of shape (n_votes,)
        Annotator of each vote.
    label : array-like of int of shape (n_votes,)
        Non-negative category of each vote.
    n_annotators : int, optional
        Number of annotators.

    Returns
    -------
    MajorityAgreement
        ``agreement`` and ``chance`` of shape (n_annotators,), masked where
        nothing was compared, and ``n_compared``.

    Raises
    ------
    LengthMismatchError, ShapeError, InvalidParameterError
        On malformed input, or when an annotator voted twice on an item.

    References
    ----------
    Snow, R. et al. (2008). Cheap and fast -- but is it good? Evaluating
    non-expert annotations for natural language tasks. EMNLP 2008
    (agreement with the majority of other annotators).

    Examples
    --------
    >>> r = majority_agreement([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [1, 1, 0, 2, 2, 2])
    >>> r.agreement.tolist(), r.n_compared.tolist()
    ([1.0, 1.0, 0.5], [1, 1, 2])
    """
    it = as_index_array(item, "item")
    k, m = _annotators(annotator, n_annotators)
    lab = as_index_array(label, "label")
    check_same_length(item=it, annotator=k, label=lab)
    if it.size == 0:
        z = np.zeros(m, dtype=np.int64)
        empty = np.ma.MaskedArray(np.zeros(m), mask=np.ones(m, dtype=bool))
        return MajorityAgreement(agreement=empty, n_compared=z, chance=empty.copy())
    n_items = int(it.max()) + 1
    key = it * m + k
    # one vote per (item, annotator): a count per key when the key space is small (linear),
    # else a sort; the same first duplicate (smallest key) either way
    if n_items * m <= 8 * key.size + (1 << 20):
        # a byte per key first (a repeat leaves fewer keys marked than votes); the counts,
        # four times the memory to scatter into, only to describe a repeat
        seen = np.zeros(n_items * m, dtype=bool)
        seen[key] = True
        worst, dup_keys = 1, key[:0]
        if np.count_nonzero(seen) < key.size:
            per_key = np.bincount(key, minlength=n_items * m)
            worst = int(per_key.max())
            dup_keys = np.flatnonzero(per_key > 1)
    else:
        uniq, per_key = np.unique(key, return_counts=True)
        dup_keys = uniq[per_key > 1]
        worst = int(per_key.max())
    if dup_keys.size:
        dup = int(dup_keys[0])
        raise InvalidParameterError(
            f"annotator {dup % m} voted {worst} times on item {dup // m}; "
            "pass only each annotator's current vote per item"
        )
    n_lab = int(lab.max()) + 1
    cell = it * n_lab + lab
    counts = np.bincount(cell, minlength=n_items * n_lab)
    # the leave-one-out majority depends only on the vote's (item, label) cell: decide it
    # once per occupied cell, then count votes per (annotator, label, cell majority)
    used = np.flatnonzero(counts)
    others = counts.reshape(n_items, n_lab)[used // n_lab]
    own_lab = used % n_lab
    others[np.arange(used.size), own_lab] -= 1
    top = others.max(axis=1)
    unique_top = (top > 0) & ((others == top[:, None]).sum(axis=1) == 1)
    # cell class: 0 not compared, 1 + l compared with majority label l
    cls = np.zeros(n_items * n_lab, dtype=np.int64)
    cls[used] = np.where(unique_top, others.argmax(axis=1) + 1, 0)
    n_cls = n_lab + 1
    if m * n_lab * n_cls <= 8 * cell.size + (1 << 20):  # few labels: one count, linear
        # (k n_lab + lab) n_cls + cls[cell], with lab n_cls + cls[cell] looked up per cell
        per_cell = (np.arange(cls.size) % n_lab) * n_cls + cls
        key = k * (n_lab * n_cls)
        key += per_cell[cell]
        joint = np.bincount(key, minlength=m * n_lab * n_cls)
        joint = joint.reshape(m, n_lab, n_cls)
        # compared votes per (annotator, majority label)
        by_majority = joint.sum(axis=1)[:, 1:].astype(np.float64)
        n_agree = np.einsum("kll->k", joint[:, :, 1:])
        own = joint.sum(axis=2).astype(np.float64)
    else:  # many labels: per-vote weights instead of an (annotator, label, label) table
        g = cls[cell]
        by_majority = np.zeros((m, n_lab))
        np.add.at(by_majority, (k[g > 0], g[g > 0] - 1), 1.0)
        n_agree = np.bincount(k, weights=(g == lab + 1).astype(np.float64), minlength=m)
        own = np.bincount(k * n_lab + lab, minlength=m * n_lab).reshape(m, n_lab).astype(float)
    n_cmp = by_majority.sum(axis=1)
    # chance: P(own random label == majority) = freq_k(majority label)
    own /= np.maximum(own.sum(axis=1, keepdims=True), 1.0)
    n_chance = (own * by_majority).sum(axis=1)
    return MajorityAgreement(
        agreement=_masked_ratio(n_agree, n_cmp),
        n_compared=n_cmp.astype(np.int64),
        chance=_masked_ratio(n_chance, n_cmp),
    )


def annotator_signals(
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    both_bad: npt.ArrayLike | None = None,
    skipped: npt.ArrayLike | None = None,
    response_time: npt.ArrayLike | None = None,
    text_length: npt.ArrayLike | None = None,
    item: npt.ArrayLike | None = None,
    n_annotators: int | None = None,
    min_seconds: float = 2.0,
    chars_per_second: float = 50.0,
) -> AnnotatorSignals:
    """Every reliability signal for each annotator, in one call.

    The majority label of a vote is its outcome category: left (1), right
    (0), tie (0.5), with both-bad as a fourth category and skips left out.

    Parameters
    ----------
    annotator : array-like of int of shape (n_votes,)
        Annotator of each vote.
    outcome : array-like of float of shape (n_votes,)
        1 (left won), 0 (right won) or 0.5 (tie).
    both_bad, skipped : array-like of bool of shape (n_votes,), optional
        Both-bad and skipped votes.
    response_time, text_length : array-like of float of shape (n_votes,), optional
        For :func:`too_fast_votes`; both or neither.
    item : array-like of int of shape (n_votes,), optional
        For :func:`majority_agreement`.
    n_annotators : int, optional
        Number of annotators.
    min_seconds, chars_per_second : float
        Floor of :func:`too_fast_votes`.

    Returns
    -------
    AnnotatorSignals
        Per-annotator signals of shape (n_annotators,).

    Raises
    ------
    LengthMismatchError, ShapeError, InvalidParameterError
        On malformed input, or only one of ``response_time`` and ``text_length``.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025 (annotator reliability).

    Examples
    --------
    >>> s = annotator_signals([0, 0, 1, 1], [1, 0.5, 1, 1], item=[0, 1, 0, 1])
    >>> s.rates.tie_rate.tolist(), s.majority.n_compared.tolist()
    ([0.5, 0.0], [2, 2])
    """
    k, m = _annotators(annotator, n_annotators)
    w = _outcomes(outcome, k.size)
    rates = vote_rates(k, w, both_bad=both_bad, skipped=skipped, n_annotators=m)
    pos = position_bias(k, w, both_bad=both_bad, skipped=skipped, n_annotators=m)
    fast = None
    if (response_time is None) != (text_length is None):
        raise InvalidParameterError("pass both response_time and text_length, or neither")
    if response_time is not None and text_length is not None:
        fast = too_fast_votes(
            k,
            response_time,
            text_length,
            n_annotators=m,
            min_seconds=min_seconds,
            chars_per_second=chars_per_second,
        )
    maj = None
    if item is not None:
        it = as_index_array(item, "item")
        check_same_length(annotator=k, item=it)
        sk = _as_mask(skipped, "skipped", k.size)
        bb = _as_mask(both_bad, "both_bad", k.size)
        lab = np.where(bb, 3, np.rint(w * 2).astype(np.int64))  # 0 right, 1 tie, 2 left, 3 both bad
        keep = ~sk
        maj = majority_agreement(it[keep], k[keep], lab[keep], n_annotators=m)
    return AnnotatorSignals(
        n_votes=rates.n_votes,
        rates=rates,
        position=pos,
        too_fast=fast,
        majority=maj,
    )


def adjust_p_values(p_values: npt.ArrayLike, *, method: str = "bh") -> FloatArray:
    """Adjust one test's p-values for testing it on many annotators.

    ``"holm"`` is Holm's step-down procedure: flagging where the adjusted
    p-value is at most ``alpha`` keeps the family-wise error rate (the chance
    of flagging any annotator for whom the null holds) at most ``alpha``
    under any dependence. ``"bh"`` is the Benjamini-Hochberg step-up
    procedure: it keeps the false discovery rate (the expected share of
    flagged annotators who are false flags) at most ``alpha`` for independent
    or positively dependent tests, and is more powerful when many annotators
    are affected. NaN entries (annotators not tested) stay NaN and do not
    count as tests.

    Parameters
    ----------
    p_values : array-like of float of shape (n,)
        Unadjusted p-values in [0, 1], NaN where not tested.
    method : {"bh", "holm"}, default "bh"
        The adjustment.

    Returns
    -------
    ndarray of shape (n,)
        Adjusted p-values, monotone in the unadjusted ones, capped at 1.

    Raises
    ------
    ShapeError
        If ``p_values`` is not 1-D.
    InvalidParameterError
        If a p-value is outside [0, 1] or the method is unknown.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    Scandinavian Journal of Statistics 6, 65-70.

    Benjamini, Y. and Hochberg, Y. (1995). Controlling the false discovery
    rate: a practical and powerful approach to multiple testing. JRSS B 57,
    289-300.

    Examples
    --------
    >>> adjust_p_values([0.01, 0.04, 0.03, float("nan")], method="holm").tolist()
    [0.03, 0.06, 0.06, nan]
    >>> adjust_p_values([0.01, 0.04, 0.03], method="bh").round(3).tolist()
    [0.03, 0.04, 0.04]
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ShapeError(f"p_values must be 1-D, got {p.ndim} dimension(s)")
    if method not in ("bh", "holm"):
        raise InvalidParameterError(f"method must be 'bh' or 'holm', got {method!r}")
    ok = ~np.isnan(p)
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise InvalidParameterError("p-values must lie in [0, 1] (NaN where not tested)")
    out = np.full(p.size, np.nan)
    idx = np.flatnonzero(ok)
    n = idx.size
    if n == 0:
        return out
    order = np.argsort(p[idx], kind="stable")
    ps = p[idx][order]
    if method == "holm":
        adj = np.maximum.accumulate(ps * (n - np.arange(n)))
    else:
        adj = np.minimum.accumulate((ps * n / np.arange(1, n + 1))[::-1])[::-1]
    res = np.empty(n)
    res[order] = np.minimum(adj, 1.0)
    out[idx] = res
    return out
