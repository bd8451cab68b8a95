"""Human alignment of question-difficulty estimators (EIP paper, sec. 3.3, App. H.3).

In a difficulty study an annotator sees a pair of questions (first, second)
and votes which one is harder, or skips. This module measures how well
difficulty estimators (EIP, IRT, Simple Rank, ...) agree with those votes.

Input representation
--------------------
Questions are indexed ``0 .. n_questions - 1`` and pairs ``0 .. n_pairs - 1``.

* ``pairs`` : int array of shape (n_pairs, 2), the question shown first and
  second in each pair.
* ``difficulty`` : float array of shape (n_estimators, n_questions) (or
  (n_questions,) for one estimator); higher means harder. Negate easiness
  scores (accuracy, IRT ability-scale easiness) first. ``+inf``/``-inf`` are
  allowed (a question every model failed or solved); NaN is not.
* votes as three parallel int arrays of shape (n_votes,): ``pair`` (pair
  index), ``annotator`` (annotator index) and ``vote`` with the codes
  :data:`SKIP` = 0 ("cannot judge"), :data:`FIRST_HARDER` = 1 and
  :data:`SECOND_HARDER` = 2. At most one vote per (pair, annotator): pass the
  current vote when a vote was revised.

Predictions use the same codes: 1 (first harder), 2 (second harder) and
:data:`TIE` = 0 when the two difficulties are equal within ``atol``. A tie is
reported as a tie and never guessed; ``tie_credit`` sets how much agreement a
tied prediction earns (0 by default: a tie is a miss).

Statistics
----------
* Individual alignment (Table 2, V1..V20): for each annotator, the share of
  their non-skipped votes equal to the estimator's prediction.
* Consensus alignment (eq. 9): the share of consensus pairs whose majority
  vote equals the prediction; and Cohen's kappa between the predictions
  (categories 1, 2 and tie) and the consensus on those pairs.
* Near-tie rule. The paper "resolves near-ties" without saying how. Here a
  pair with ``n1`` first-harder and ``n2`` second-harder votes is *decisive*
  when ``|n1 - n2| / (n1 + n2) > near_tie_margin`` (default 0: only exact
  ties are near-ties) and its consensus is the majority. A near-tie is
  resolved (``near_tie="weighted"``, the default) by a reliability-weighted
  vote: annotator ``a``'s weight is ``max(0, logit p_a)`` with
  ``p_a = (agree_a + 1) / (judged_a + 2)``, the smoothed share of ``a``'s
  votes on decisive pairs that match the majority (the optimal weights for
  independent voters of Nitzan and Paroush, 1982, clipped so that no
  annotator's votes are inverted). A near-tie whose weighted score is
  exactly 0 stays unresolved, and, like every near-tie under
  ``near_tie="exclude"``, is left out of the consensus set Q of eq. 9.
  :class:`ConsensusResult` reports how many pairs the rule touched.
* Intervals: percentile bootstrap over pairs (annotators fixed), over
  annotators (pairs fixed; the consensus, the near-tie weights and every
  statistic are recomputed on each resampled panel), and over both at once
  (``resample="both"``: pairs and annotators drawn independently in each
  replicate, the two-way or pigeonhole bootstrap of Owen, 2007, for a
  study whose pairs and annotators are both samples; each one-way interval
  then ignores a source of variance and under-covers, see
  ``benchmarks/bench_agreement_coverage.py``). Every :class:`Interval` names
  its ``scheme``. All replicates are computed at once with matrix products.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.sparse import csgraph

from ranking._validation import as_index_array, check_in_range, check_same_length, make_rng
from ranking.agreement import (
    RESAMPLE_SCHEMES,
    AgreementResult,
    Resample,
    _check_resample,
    _kappa_from_tables,
    _masked,
    _ZeroOne,
    cohen_kappa_table,
)
from ranking.errors import DegenerateDataError, InvalidParameterError, ShapeError
from ranking.types import BoolArray, FloatArray, IntArray, RNGLike

__all__ = [
    "FIRST_HARDER",
    "SECOND_HARDER",
    "SKIP",
    "TIE",
    "AlignmentReport",
    "ConsensusResult",
    "Correlation",
    "Estimate",
    "HumanScaleResult",
    "Interval",
    "alignment_report",
    "human_difficulty_scale",
    "predict_harder",
    "vote_consensus",
]

SKIP: int = 0
"""Vote code: the annotator could not judge which question is harder."""
FIRST_HARDER: int = 1
"""Vote and prediction code: the first question of the pair is harder."""
SECOND_HARDER: int = 2
"""Vote and prediction code: the second question of the pair is harder."""
TIE: int = 0
"""Prediction code: the estimator gives both questions the same difficulty."""

NearTie: TypeAlias = Literal["weighted", "exclude"]
MaskedFloatArray: TypeAlias = "np.ma.MaskedArray[Any, np.dtype[np.float64]]"

_PointProducts: TypeAlias = "tuple[FloatArray, Callable[[], FloatArray]]"
"""``wp @ judged_t`` and a callable giving ``wp`` times the credits of the votes that
match the point majority (:func:`_consensus_batch`)."""

_CHUNK = 256
_SCORE_EPS = 1e-9
_INTERVAL_BLOCK = 1024
"""Columns of bootstrap replicates sorted at once by :func:`_interval`."""
_EXACT32_MAX = 2**22
"""Largest number of pairs or annotators for which the bootstrap's matrix products of
counts run in float32 (:func:`_count_matmul`)."""


# ---------------------------------------------------------------------------
# result types


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval."""

    low: float
    """Lower bound."""
    high: float
    """Upper bound."""
    n_valid: int
    """Bootstrap replicates in which the statistic was defined (the others are
    left out of the percentiles)."""
    scheme: str | None = None
    """What was resampled: ``"units"`` (pairs), ``"annotators"`` or ``"both"``
    (:data:`ranking.agreement.RESAMPLE_SCHEMES`); ``None`` when not recorded."""


@dataclass(frozen=True)
class Estimate:
    """A statistic with its bootstrap intervals, or the reason it is undefined."""

    value: float | None
    """The statistic on the full data; ``None`` when undefined."""
    reason: str | None
    """Why ``value`` is undefined; ``None`` when it is defined."""
    pairs_interval: Interval | None
    """Bootstrap interval over pairs (annotators fixed). ``None`` when
    ``n_boot = 0``, fewer than two pairs have a non-skipped vote, or no
    replicate gave a defined value."""
    annotators_interval: Interval | None
    """Bootstrap interval over annotators (pairs fixed). ``None`` when
    ``n_boot = 0``, fewer than two annotators have a non-skipped vote, or no
    replicate gave a defined value."""
    both_interval: Interval | None = None
    """Two-way bootstrap interval, pairs and annotators resampled together
    (Owen, 2007). ``None`` when not asked for (``resample``), or when either
    one-way scheme could not run, or no replicate gave a defined value."""

    def interval(self, scheme: str) -> Interval | None:
        """The interval of ``scheme``: ``"units"`` (pairs), ``"annotators"`` or ``"both"``."""
        if scheme not in RESAMPLE_SCHEMES:
            raise InvalidParameterError(f"scheme must be one of {RESAMPLE_SCHEMES}, got {scheme!r}")
        return {
            "units": self.pairs_interval,
            "annotators": self.annotators_interval,
            "both": self.both_interval,
        }[scheme]

    @property
    def undefined(self) -> bool:
        """True when ``value`` could not be computed; ``reason`` says why."""
        return self.value is None


@dataclass(frozen=True)
class ConsensusResult:
    """Majority consensus per pair with the near-tie rule (see the module docs)."""

    consensus: IntArray
    """Shape (n_pairs,): 1 (first harder), 2 (second harder) or 0 when the
    pair has no consensus (no non-skipped vote, or an unresolved near-tie)."""
    n_first: IntArray
    """Shape (n_pairs,): votes saying the first question is harder."""
    n_second: IntArray
    """Shape (n_pairs,): votes saying the second question is harder."""
    n_skip: IntArray
    """Shape (n_pairs,): skipped votes."""
    decisive: BoolArray
    """Shape (n_pairs,): majority margin above ``near_tie_margin``."""
    near_tie: BoolArray
    """Shape (n_pairs,): pairs with votes whose margin is at most ``near_tie_margin``."""
    resolved: BoolArray
    """Shape (n_pairs,): near-ties given a consensus by the weighted vote."""
    annotator_weights: FloatArray
    """Shape (n_annotators,): near-tie weights ``max(0, logit p_a)`` (all 0
    when ``near_tie="exclude"``)."""
    near_tie_margin: float
    """The margin threshold used."""
    near_tie_rule: str
    """``"weighted"`` or ``"exclude"``."""

    @property
    def n_consensus(self) -> int:
        """Pairs with a consensus: the set Q of eq. 9."""
        return int((self.consensus != 0).sum())

    @property
    def n_near_ties(self) -> int:
        """Pairs the near-tie rule touched."""
        return int(self.near_tie.sum())

    @property
    def n_resolved(self) -> int:
        """Near-ties resolved by the weighted vote."""
        return int(self.resolved.sum())

    @property
    def n_excluded(self) -> int:
        """Near-ties left without consensus and so excluded from Q."""
        return int((self.near_tie & ~self.resolved).sum())

    @property
    def n_without_votes(self) -> int:
        """Pairs with no non-skipped vote (not in Q)."""
        return int(((self.n_first + self.n_second) == 0).sum())


@dataclass(frozen=True)
class AlignmentReport:
    """Individual and consensus alignment of estimators with human votes."""

    estimator_names: tuple[str, ...]
    """Length n_estimators."""
    predictions: IntArray
    """Shape (n_estimators, n_pairs): 1, 2 or :data:`TIE` (0)."""
    n_tied_predictions: IntArray
    """Shape (n_estimators,): pairs where the estimator predicts a tie."""
    consensus: ConsensusResult
    """The human consensus and what the near-tie rule did."""
    n_judged: IntArray
    """Shape (n_annotators,): non-skipped votes per annotator."""
    individual: MaskedFloatArray
    """Shape (n_estimators, n_annotators): individual alignment (Table 2),
    masked for annotators without a non-skipped vote."""
    individual_low: MaskedFloatArray
    """Shape (n_estimators, n_annotators): lower bound, bootstrap over pairs;
    masked where undefined or ``n_boot = 0``."""
    individual_high: MaskedFloatArray
    """Shape (n_estimators, n_annotators): upper bound, bootstrap over pairs."""
    mean_individual: tuple[Estimate, ...]
    """Length n_estimators: mean of the defined individual alignments."""
    consensus_alignment: tuple[Estimate, ...]
    """Length n_estimators: eq. 9, the share of Q where prediction = consensus."""
    kappa: tuple[Estimate, ...]
    """Length n_estimators: Cohen's kappa of predictions vs consensus on Q."""
    kappa_detail: tuple[AgreementResult, ...]
    """Length n_estimators: the point kappa with its disagreements."""
    tie_credit: float
    """Agreement credited to a tied prediction."""
    atol: float
    """Difficulty difference at or below which a prediction is a tie."""
    n_boot: int
    """Bootstrap replicates per resampling scheme."""
    confidence: float
    """Coverage of the percentile intervals."""
    schemes: tuple[str, ...] = ("units", "annotators")
    """The bootstrap schemes run (``resample``), in the order of their draws."""


@dataclass(frozen=True)
class Correlation:
    """A rank correlation, or the reason it is undefined."""

    value: float | None
    """The coefficient; ``None`` when undefined."""
    p_value: float | None
    """Two-sided p-value from scipy.stats; ``None`` when undefined."""
    reason: str | None
    """Why the coefficient is undefined (e.g. a constant input)."""
    n: int
    """Questions compared."""

    @property
    def undefined(self) -> bool:
        """True when the coefficient could not be computed; ``reason`` says why."""
        return self.value is None


@dataclass(frozen=True)
class HumanScaleResult:
    """Human difficulty of each question from the votes (am-ELO fit)."""

    difficulty: MaskedFloatArray
    """Shape (n_questions,): human difficulty in Elo points, centred at 0
    over the fitted questions (higher = harder); masked for questions that
    received no non-skipped vote or were excluded as extremes."""
    lower: MaskedFloatArray
    """Shape (n_questions,): lower Wald bound at ``confidence``."""
    upper: MaskedFloatArray
    """Shape (n_questions,): upper Wald bound."""
    standard_errors: MaskedFloatArray
    """Shape (n_questions,): standard errors in Elo points."""
    reliability: MaskedFloatArray
    """Shape (n_annotators,): each annotator's discrimination relative to
    the average annotator (mean 1; 0 is a random voter, negative an inverted
    one); masked for annotators without a non-skipped vote."""
    reliability_standard_errors: MaskedFloatArray
    """Shape (n_annotators,): standard errors of ``reliability``."""
    spearman: tuple[Correlation, ...]
    """Length n_estimators: Spearman's rho of each estimator with ``difficulty``."""
    kendall: tuple[Correlation, ...]
    """Length n_estimators: Kendall's tau-b of each estimator with ``difficulty``."""
    estimator_names: tuple[str, ...]
    """Length n_estimators (empty when no ``difficulty`` was given)."""
    always_harder: BoolArray
    """Shape (n_questions,): questions excluded because they were never voted
    easier than the remaining questions (``extremes="exclude"``)."""
    always_easier: BoolArray
    """Shape (n_questions,): questions excluded because they were never voted
    harder than the remaining questions."""
    n_votes: int
    """Non-skipped votes fitted (after excluding extremes)."""
    n_virtual_ties: int
    """Virtual tie votes added as a prior (``virtual_ties`` per fitted annotator)."""
    iterations: int
    """Iterations of the am-ELO fit."""
    confidence: float
    """Coverage of the Wald intervals."""


# ---------------------------------------------------------------------------
# validation


class _Votes:
    """Checked votes, with their (A, P) matrices made on first use (:meth:`matrix`).

    ``code[a, p]`` is annotator ``a``'s vote on pair ``p`` as int8 (1 first harder,
    2 second harder, 0 skipped or no vote); the 0/1 ``judged`` and -1/0/1 ``diff``
    matrices (and their (P, A) transposes ``judged_t``, ``diff_t``) are built from it in
    the dtype asked for, once. Sums over them are counts of votes, made by counting.
    """

    def __init__(
        self,
        pair: IntArray,
        annotator: IntArray,
        vote: IntArray,
        n_pairs: int,
        n_annotators: int,
        key: IntArray,
    ) -> None:
        self.pair, self.annotator, self.vote = pair, annotator, vote
        self.n_pairs, self.n_annotators = n_pairs, n_annotators
        code = np.zeros(n_annotators * max(n_pairs, 1), dtype=np.int8)
        code[key] = vote  # key = annotator * max(n_pairs, 1) + pair: one 1-D put
        self.code: npt.NDArray[np.int8] = code.reshape(n_annotators, max(n_pairs, 1))[:, :n_pairs]
        # votes per pair and code, and per annotator and code: one count each (codes 0-2)
        by_pair = np.bincount(pair * 3 + vote, minlength=3 * n_pairs).reshape(n_pairs, 3)
        self.n_skip, self.n_first, self.n_second = (by_pair[:, c].copy() for c in range(3))
        self.judged_per_pair = self.n_first + self.n_second  # (P,) int64
        # an annotator's judged votes are its nonzero codes (a pass over the matrix, not a
        # count of every vote by annotator in vote order)
        self.judged_per_annotator = np.count_nonzero(self.code, axis=1).astype(np.int64)
        self._cache: dict[tuple[str, str], npt.NDArray[Any]] = {}
        self._products: dict[str, _ZeroOne] = {}
        self._packed: dict[int, npt.NDArray[np.float32]] = {}  # (:meth:`judged_and_diff`)
        self._point: dict[float, tuple[FloatArray, FloatArray, FloatArray, FloatArray]] = {}

    @property
    def exact32(self) -> bool:
        """Whether products of counts with these matrices are exact in float32."""
        return max(self.n_pairs, self.n_annotators) <= _EXACT32_MAX

    def matrix(self, name: str, dtype: type[np.floating[Any]] = np.float64) -> npt.NDArray[Any]:
        """``judged`` or ``diff`` (A, P), or their C-contiguous transposes ``judged_t``,
        ``diff_t`` (P, A), in ``dtype``; made once."""
        key = (name, np.dtype(dtype).str)
        out = self._cache.get(key)
        if out is None:
            if name.endswith("_t"):
                out = np.ascontiguousarray(self.matrix(name[:-2], dtype).T)
            else:
                table = {"judged": (0, 1, 1), "diff": (0, 1, -1)}[name]  # by code 0, 1, 2
                out = np.asarray(table, dtype=dtype)[self.code]
            self._cache[key] = out
        return out

    def counts(self, name: str) -> npt.NDArray[Any]:
        """The matrix ``name`` in float32 when its products with counts are exact there
        (:attr:`exact32`), else in float64."""
        return self.matrix(name, np.float32 if self.exact32 else np.float64)

    def point_counts(self, margin: float) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """With every vote counted once: the decisive pairs (0/1) and their signed
        majorities (+1 first, -1 second, 0 not decisive), each (P,) in float32, and each
        annotator's judged and signed votes on them (A,) in float64, as
        :func:`_near_tie_weights` counts them; made once per margin."""
        out = self._point.get(margin)
        if out is None:
            tot = self.judged_per_pair.astype(np.float64)
            dif = (self.n_first - self.n_second).astype(np.float64)
            dec = (tot > 0) & (np.abs(dif) > (margin + 1e-12) * tot)
            s0 = np.where(dec, np.where(dif > 0, 1.0, -1.0), 0.0)
            judged = _count_matmul(dec[None].astype(np.float64), self.counts("judged_t"))[0]
            signed = _count_matmul(s0[None], self.counts("diff_t"))[0]
            out = (dec.astype(np.float32), s0.astype(np.float32), judged, signed)
            self._point[margin] = out
        return out

    def judged_products(self, w: FloatArray, *, by_pair: bool = False) -> FloatArray:
        """``w @ judged`` (b, P) for annotator counts ``w`` (b, A), or with ``by_pair``
        ``w @ judged_t`` (b, A) for pair counts (b, P): counts of judged votes, exact in
        float32 (:class:`ranking.agreement._ZeroOne`: a sparse product with the cells
        without a judged vote when nearly every annotator judged nearly every pair)."""
        name = "judged_t" if by_pair else "judged"
        if not self.exact32:
            return _count_matmul(w, self.matrix(name))
        z = self._products.get(name)
        if z is None:
            judged = self.code > 0
            z = self._products[name] = _ZeroOne(judged.T if by_pair else judged)
        return z(w).astype(np.float64)

    def judged_and_diff(self, w: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``w @ judged`` and ``w @ diff`` (b, P) in float64 for annotator counts ``w``
        (b, A): the judged votes on each pair and the first-harder ones minus the others.

        With integer counts whose row sums are at most ``top``, one float32 product
        gives both: ``w @ (diff + s judged)`` for a power of two ``s > 2 top`` (cells 0,
        ``s - 1`` or ``s + 1``) is ``dif + s tot``, its terms and partial sums integers
        at least 0 and below 2**23 (checked), so exact in any order, and
        ``|dif| <= tot <= top < s / 2`` splits it exactly: ``tot`` is its rounded
        quotient by ``s``. Otherwise the two products, each exact (:meth:`judged_products`,
        :func:`_count_matmul`)."""
        if self.exact32 and w.size and bool((w >= 0).all() and (w == np.floor(w)).all()):
            top = int(w.sum(axis=1).max())
            scale = 1 << (2 * top).bit_length()  # a power of two above 2 * top
            if scale * (top + 1) <= 2**23:
                m = self._packed.get(scale)
                if m is None:  # by code 0 (no vote or a skip), 1 (first), 2 (second)
                    table = np.array([0.0, scale + 1.0, scale - 1.0], dtype=np.float32)
                    m = self._packed[scale] = table[self.code]
                both = _count_matmul(w, m)
                tot = np.rint(both / scale)
                dif = both - scale * tot
                return tot, dif
        return self.judged_products(w), _count_matmul(w, self.counts("diff"))


def _count_matmul(w: FloatArray, m: FloatArray | npt.NDArray[np.float32]) -> FloatArray:
    """``w @ m`` for bootstrap counts ``w`` (or counts times 0/1) and a matrix ``m`` of
    small integers or halves; in float32 when ``m`` is float32.

    Every product and every partial sum is then a multiple of 1/2 below 2**23 (the row
    sums of ``w`` are at most ``_EXACT32_MAX`` and ``|m| <= 1``), so float32 represents
    each exactly whatever the summation order, and the result equals the float64 product
    bit for bit, in half the time (single-precision BLAS).
    """
    if m.dtype == np.float32:
        return (w.astype(np.float32) @ m).astype(np.float64)
    return w @ m


def _check_pairs(pairs: npt.ArrayLike, n_questions: int | None) -> IntArray:
    arr = np.asarray(pairs)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ShapeError(
            f"pairs must have shape (n_pairs, 2) (first and second question), got {arr.shape}"
        )
    flat = as_index_array(arr.reshape(-1), "pairs", n=n_questions)
    out = flat.reshape(-1, 2)
    same = np.flatnonzero(out[:, 0] == out[:, 1])
    if same.size:
        raise InvalidParameterError(
            f"pair {int(same[0])} shows question {int(out[same[0], 0])} against itself; "
            "each pair needs two different questions"
        )
    return out


def _check_difficulty(difficulty: npt.ArrayLike) -> FloatArray:
    d = np.asarray(difficulty, dtype=np.float64)
    if d.ndim == 1:
        d = d[None, :]
    if d.ndim != 2:
        raise ShapeError(
            "difficulty must have shape (n_estimators, n_questions) or (n_questions,), "
            f"got {d.ndim} dimension(s)"
        )
    if np.isnan(d).any():
        e, q = np.argwhere(np.isnan(d))[0]
        raise InvalidParameterError(
            f"difficulty[{e}, {q}] is NaN; every question needs a difficulty "
            "(use +inf/-inf for questions every model failed/solved)"
        )
    return d


def _check_votes(
    pair: npt.ArrayLike,
    annotator: npt.ArrayLike,
    vote: npt.ArrayLike,
    *,
    n_pairs: int | None,
    n_annotators: int | None,
) -> _Votes:
    p, a, v, n_p, n_a, key = _check_vote_rows(
        pair, annotator, vote, n_pairs=n_pairs, n_annotators=n_annotators
    )
    return _Votes(p, a, v, n_p, n_a, key)


def _check_vote_rows(
    pair: npt.ArrayLike,
    annotator: npt.ArrayLike,
    vote: npt.ArrayLike,
    *,
    n_pairs: int | None,
    n_annotators: int | None,
) -> tuple[IntArray, IntArray, IntArray, int, int, IntArray]:
    """The checks of :func:`_check_votes` without its (A, P) matrices: pair, annotator and
    vote (int64), the numbers of pairs and annotators, and each vote's ``a * n_p + p``."""
    p = as_index_array(pair, "pair", n=n_pairs)
    a = as_index_array(annotator, "annotator", n=n_annotators)
    v = np.asarray(vote)
    if v.ndim != 1:
        raise ShapeError(f"vote must be 1-D, got {v.ndim} dimension(s)")
    check_same_length(pair=p, annotator=a, vote=v)
    if v.size and not _valid_codes(v):
        bad = v[~np.isin(v, (SKIP, FIRST_HARDER, SECOND_HARDER))][0]
        raise InvalidParameterError(
            f"vote holds code {bad!r}; expected 0 (skip), 1 (first harder) or 2 (second harder)"
        )
    v = v.astype(np.int64, copy=False)  # only read (as p and a, which are not copied)
    n_p = int(n_pairs) if n_pairs is not None else (int(p.max()) + 1 if p.size else 0)
    n_a = int(n_annotators) if n_annotators is not None else (int(a.max()) + 1 if a.size else 0)
    if n_a < 0 or n_p < 0:
        raise InvalidParameterError("n_pairs and n_annotators must be non-negative")
    key = a * max(n_p, 1) + p
    cells = n_a * max(n_p, 1)
    if key.size and cells <= 4 * key.size + 65536:
        # repeats by counting (a sort at a million votes otherwise); the smallest
        # repeated key, as the sorted unique keys give it
        repeated = np.flatnonzero(np.bincount(key, minlength=cells) > 1)
    else:
        uniq, counts = np.unique(key, return_counts=True)
        repeated = uniq[counts > 1]
    if repeated.size:
        k = int(repeated[0])
        raise InvalidParameterError(
            f"annotator {k // max(n_p, 1)} voted on pair {k % max(n_p, 1)} more than once; "
            "pass only each annotator's current vote per pair"
        )
    return p, a, v, n_p, n_a, key


def _valid_codes(v: npt.NDArray[Any]) -> bool:
    """Whether every vote is 0, 1 or 2 (for integer votes by their range: two passes
    instead of :func:`numpy.isin`'s sort at a million votes)."""
    if v.dtype.kind in "iu":
        return bool(v.min() >= SKIP and v.max() <= SECOND_HARDER)
    return bool(np.isin(v, (SKIP, FIRST_HARDER, SECOND_HARDER)).all())


def _check_options(
    *, near_tie_margin: float, near_tie: str, tie_credit: float, atol: float
) -> None:
    check_in_range(near_tie_margin, "near_tie_margin", 0.0, 1.0)
    if near_tie_margin >= 1.0:
        raise InvalidParameterError(
            f"near_tie_margin must be below 1 (1 would make every pair a near-tie), "
            f"got {near_tie_margin!r}"
        )
    if near_tie not in ("weighted", "exclude"):
        raise InvalidParameterError(f"near_tie must be 'weighted' or 'exclude', got {near_tie!r}")
    check_in_range(tie_credit, "tie_credit", 0.0, 1.0)
    if not np.isfinite(atol) or atol < 0:
        raise InvalidParameterError(f"atol must be finite and >= 0, got {atol!r}")


# ---------------------------------------------------------------------------
# predictions and consensus


def predict_harder(
    difficulty: npt.ArrayLike, pairs: npt.ArrayLike, *, atol: float = 0.0
) -> IntArray:
    """Each estimator's prediction of the harder question in each pair.

    Parameters
    ----------
    difficulty : array-like of shape (n_estimators, n_questions) or (n_questions,)
        Estimated difficulty, higher = harder; ``+inf``/``-inf`` allowed.
    pairs : array-like of int of shape (n_pairs, 2)
        Question indices shown first and second.
    atol : float, default 0.0
        Difficulties differing by at most ``atol`` are a tie.

    Returns
    -------
    ndarray of int of shape (n_estimators, n_pairs), or (n_pairs,) for 1-D input
        :data:`FIRST_HARDER` (1), :data:`SECOND_HARDER` (2) or :data:`TIE` (0).
        Two infinite difficulties of the same sign are a tie.

    Raises
    ------
    ShapeError
        If ``difficulty`` or ``pairs`` has the wrong shape.
    InvalidParameterError
        For NaN difficulties, bad question indices, a question paired with
        itself, or a negative ``atol``.

    References
    ----------
    EIP paper (human evaluation, sec. 3.3 and App. H.3): a method's
    prediction for a pair is the question it rates as more difficult.

    Examples
    --------
    >>> from ranking.alignment import predict_harder
    >>> predict_harder([0.2, 0.9, 0.5, 0.5], [[0, 1], [1, 2], [2, 3]]).tolist()
    [2, 1, 0]
    """
    one = np.asarray(difficulty).ndim == 1
    d = _check_difficulty(difficulty)
    pr = _check_pairs(pairs, d.shape[1])
    if not np.isfinite(atol) or atol < 0:
        raise InvalidParameterError(f"atol must be finite and >= 0, got {atol!r}")
    pred = _predict(d, pr, atol)
    return pred[0] if one else pred


def _predict(d: FloatArray, pairs: IntArray, atol: float) -> IntArray:
    d1, d2 = d[:, pairs[:, 0]], d[:, pairs[:, 1]]
    with np.errstate(invalid="ignore"):
        diff = d1 - d2  # inf - inf is NaN: neither comparison holds, so a tie
        first = diff > atol
        second = diff < -atol
    out = np.where(first, FIRST_HARDER, np.where(second, SECOND_HARDER, TIE))
    return out.astype(np.int64)


def _consensus_batch(
    votes: _Votes,
    wp: FloatArray | None,
    wa: FloatArray | None,
    margin: float,
    rule: str,
    *,
    all_weights: bool = True,
    point_products: _PointProducts | None = None,
    with_counts: bool = True,
) -> tuple[IntArray, BoolArray, BoolArray, BoolArray, FloatArray, FloatArray, FloatArray]:
    """Consensus for B replicates at once.

    ``wp`` (B, P) and ``wa`` (B, A) are pair and annotator multiplicities;
    ``None`` means all ones. Returns consensus (B, P), decisive, near-tie and
    resolved masks (B, P), annotator weights (B, A), and first/second counts
    (B, P).

    The annotator weights serve only to resolve near-ties: with ``all_weights`` false
    (the bootstrap, which keeps only the consensus) they are computed for the replicates
    that have a near-tie and are 0 in the others, and each such replicate's weighted
    score only on its near-tie pairs. The weights of a replicate do not depend on the
    others (their counts are exact integers, :func:`_count_matmul`); the score enters
    only through ``|score| > _SCORE_EPS`` and its sign, which a different summation order
    of the same terms (some 1e-16 relative) does not move.

    ``point_products`` (with ``wp``, when the counts are exact in float32): ``wp @
    judged_t`` and a callable giving ``wp`` times the credits of a vote that matches the
    point estimate's majority on its decisive pairs, each (B, A), from which the near-tie
    weights of the replicates are made (:func:`_near_tie_weights_from_point`).
    Without ``with_counts`` (the bootstrap, which keeps only the consensus) the first and
    second counts are not made: empty arrays instead.
    """
    n_b = max(1 if wp is None else wp.shape[0], 1 if wa is None else wa.shape[0])
    shape = (n_b, votes.n_pairs)
    if wa is None:
        tot = votes.judged_per_pair.astype(np.float64)[None, :]
        dif = (votes.n_first - votes.n_second).astype(np.float64)[None, :]
    else:
        tot, dif = votes.judged_and_diff(wa)
    has = tot > 0
    decisive = np.broadcast_to(has & (np.abs(dif) > (margin + 1e-12) * tot), shape)
    near = np.broadcast_to(has, shape) & ~decisive
    first_majority = np.broadcast_to(dif > 0, shape)
    cons = np.where(decisive, np.where(first_majority, FIRST_HARDER, SECOND_HARDER), 0)
    weights = np.zeros((n_b, votes.n_annotators))
    resolved = np.zeros(shape, dtype=bool)
    if rule == "weighted" and all_weights:
        dec_w = decisive.astype(np.float64) if wp is None else wp * decisive
        weights = _near_tie_weights(votes, dec_w, first_majority)
        if near.any():
            score = (weights if wa is None else wa * weights) @ votes.matrix("diff")
            resolved = near & (np.abs(score) > _SCORE_EPS)
            cons = np.where(resolved, np.where(score > 0, FIRST_HARDER, SECOND_HARDER), cons)
    elif rule == "weighted":
        rows = np.flatnonzero(near.any(axis=1))  # replicates with a near-tie
        if rows.size:
            dec_r = decisive[rows]
            if wp is None and votes.exact32:  # annotators resampled, pairs not
                w_r = _near_tie_weights_unweighted(votes, margin, dec_r, first_majority[rows])
            elif wp is not None and point_products is not None and votes.exact32:
                den, agree_majority = point_products
                w_r = _near_tie_weights_from_point(
                    votes,
                    margin,
                    wp[rows],
                    dec_r,
                    first_majority[rows],
                    den[rows],
                    agree_majority()[rows],
                )
            else:
                dec_w = dec_r.astype(np.float64) if wp is None else wp[rows] * dec_r
                w_r = _near_tie_weights(votes, dec_w, first_majority[rows])
            weights[rows] = w_r
            near_r = near[rows]
            cols = np.flatnonzero(near_r.any(axis=0))  # their near-tie pairs
            diff_c = np.ascontiguousarray(votes.matrix("diff")[:, cols])
            score = (w_r if wa is None else wa[rows] * w_r) @ diff_c
            res = near_r[:, cols] & (np.abs(score) > _SCORE_EPS)
            cell = np.ix_(rows, cols)
            resolved[cell] = res
            cons[cell] = np.where(res, np.where(score > 0, FIRST_HARDER, SECOND_HARDER), cons[cell])
    if with_counts:
        n1 = np.broadcast_to(0.5 * (tot + dif), shape)
        n2 = np.broadcast_to(0.5 * (tot - dif), shape)
    else:
        n1 = n2 = np.empty((0, 0))
    return cons.astype(np.int64, copy=False), decisive, near, resolved, weights, n1, n2


def _near_tie_weights(votes: _Votes, dec_w: FloatArray, first_majority: BoolArray) -> FloatArray:
    """(b, A): each annotator's weight ``max(0, logit p_a)`` in each replicate, from the
    pair weights ``dec_w`` (b, P) of the decisive pairs and their majorities (b, P)."""
    judged = votes.judged_products(dec_w, by_pair=True)
    signed = _count_matmul(dec_w * np.where(first_majority, 1.0, -1.0), votes.counts("diff_t"))
    return _weights_from_counts(judged, signed)


def _weights_from_counts(judged: FloatArray, signed: FloatArray) -> FloatArray:
    """``max(0, logit p)`` with ``p = (agree + 1) / (judged + 2)``, ``agree`` the judged
    votes on decisive pairs that match the majority (``(judged + signed) / 2``)."""
    agree = 0.5 * (judged + signed)
    p = (agree + 1.0) / (judged + 2.0)
    out: FloatArray = np.maximum(0.0, np.log(p) - np.log1p(-p))
    return out


def _near_tie_weights_unweighted(
    votes: _Votes, margin: float, decisive: BoolArray, first_majority: BoolArray
) -> FloatArray:
    """:func:`_near_tie_weights` with pair weights ``decisive`` (b, P) as 0/1 (the pairs
    are not resampled), from the point estimate's counts: a replicate's decisive pairs
    and majorities differ from the point estimate's on a few pairs only (those with a
    small margin), so its judged and signed counts are the point estimate's plus a
    sparse product over those pairs. Counts of votes: exact integers either way."""
    dec0, s0, judged0, signed0 = votes.point_counts(margin)
    s_r = np.where(decisive, np.where(first_majority, 1.0, -1.0), 0.0)
    d_dec = sparse.csr_matrix(decisive.astype(np.float32) - dec0)
    d_s = sparse.csr_matrix((s_r - s0).astype(np.float32))
    judged = judged0 + np.asarray(d_dec @ votes.matrix("judged_t", np.float32), np.float64)
    signed = signed0 + np.asarray(d_s @ votes.matrix("diff_t", np.float32), np.float64)
    return _weights_from_counts(judged, signed)


def _near_tie_weights_from_point(
    votes: _Votes,
    margin: float,
    wp: FloatArray,
    decisive: BoolArray,
    first_majority: BoolArray,
    den: FloatArray,
    agree0: FloatArray,
) -> FloatArray:
    """:func:`_near_tie_weights` with pair weights ``wp * decisive`` (b, P) (pairs
    resampled), from ``den = wp @ judged_t`` and ``agree0``, the counts (b, A) of each
    annotator's votes that match the point estimate's majority on its decisive pairs:
    there the point's signed count ``(wp * s0) @ diff_t`` is ``2 agree0 - judged0``
    (a vote for the majority counts +1, one against it -1), so only sparse products are
    left, over the pairs the point leaves undecided and those where the replicate's
    decisive pairs or majorities differ from the point's (a few per replicate). Counts of
    votes: exact integers either way (products in float32, :func:`_count_matmul`)."""
    dec0, s0, _, _ = votes.point_counts(margin)
    w32 = wp.astype(np.float32)
    judged_t = votes.matrix("judged_t", np.float32)
    undecided = sparse.csr_matrix(w32 * (dec0 - np.float32(1.0)))
    judged0 = den + np.asarray(undecided @ judged_t, np.float64)  # (wp * dec0) @ judged_t
    signed0 = 2.0 * agree0 - judged0
    s_r = np.where(decisive, np.where(first_majority, 1.0, -1.0), 0.0).astype(np.float32)
    d_dec = sparse.csr_matrix(w32 * (decisive.astype(np.float32) - dec0))
    d_s = sparse.csr_matrix(w32 * (s_r - s0))
    judged = judged0 + np.asarray(d_dec @ judged_t, np.float64)
    signed = signed0 + np.asarray(d_s @ votes.matrix("diff_t", np.float32), np.float64)
    return _weights_from_counts(judged, signed)


def vote_consensus(
    pair: npt.ArrayLike,
    annotator: npt.ArrayLike,
    vote: npt.ArrayLike,
    *,
    n_pairs: int | None = None,
    n_annotators: int | None = None,
    near_tie_margin: float = 0.0,
    near_tie: NearTie = "weighted",
) -> ConsensusResult:
    """Majority consensus of the non-skipped votes on each pair (eq. 9).

    Parameters
    ----------
    pair, annotator, vote : array-like of int of shape (n_votes,)
        Pair index, annotator index and vote code (0 skip, 1 first harder,
        2 second harder); at most one vote per (pair, annotator).
    n_pairs, n_annotators : int, optional
        Numbers of pairs and annotators (default: largest index + 1).
    near_tie_margin : float in [0, 1), default 0.0
        A pair whose majority margin ``|n1 - n2| / (n1 + n2)`` is at most this
        is a near-tie. 0 makes only exact ties near-ties.
    near_tie : {"weighted", "exclude"}, default "weighted"
        Resolve near-ties by the reliability-weighted vote described in the
        module docstring, or leave them without consensus.

    Returns
    -------
    ConsensusResult
        Per-pair consensus codes, vote counts, the masks of decisive,
        near-tie and resolved pairs, and the annotator weights. Pairs without
        a non-skipped vote get consensus 0; nothing raises when every vote is
        a skip.

    Raises
    ------
    ShapeError, LengthMismatchError, InvalidParameterError
        For malformed votes (unknown codes, repeated (pair, annotator),
        indices out of range) or options.

    References
    ----------
    EIP paper, App. H.3, eq. 9 (consensus by majority, near-ties resolved).
    Nitzan, S. and Paroush, J. (1982). Optimal decision rules in uncertain
    dichotomous choice situations. International Economic Review 23(2), 289-297.

    Examples
    --------
    Pair 0 has a clear majority; pair 1 is split 1-1 and is resolved by the
    annotator who agrees with the majority elsewhere:

    >>> from ranking.alignment import vote_consensus
    >>> pair = [0, 0, 0, 1, 1, 2, 2, 2]
    >>> annotator = [0, 1, 2, 0, 2, 0, 1, 2]
    >>> vote = [1, 1, 2, 1, 2, 2, 2, 1]
    >>> c = vote_consensus(pair, annotator, vote)
    >>> c.consensus.tolist(), c.n_near_ties, c.n_resolved
    ([1, 1, 2], 1, 1)
    >>> vote_consensus(pair, annotator, vote, near_tie="exclude").consensus.tolist()
    [1, 0, 2]
    """
    _check_options(near_tie_margin=near_tie_margin, near_tie=near_tie, tie_credit=0.0, atol=0.0)
    votes = _check_votes(pair, annotator, vote, n_pairs=n_pairs, n_annotators=n_annotators)
    return _consensus_result(votes, float(near_tie_margin), near_tie)


def _consensus_result(votes: _Votes, margin: float, rule: str) -> ConsensusResult:
    cons, dec, near, res, w, n1, n2 = _consensus_batch(votes, None, None, margin, rule)
    return ConsensusResult(
        consensus=cons[0],
        n_first=np.rint(n1[0]).astype(np.int64),
        n_second=np.rint(n2[0]).astype(np.int64),
        n_skip=votes.n_skip.astype(np.int64),
        decisive=dec[0],
        near_tie=near[0],
        resolved=res[0],
        annotator_weights=w[0],
        near_tie_margin=margin,
        near_tie_rule=rule,
    )


# ---------------------------------------------------------------------------
# the report


def _agreement_tensor(
    votes: _Votes, pred: IntArray, tie_credit: float, dtype: type[np.floating[Any]] = np.float64
) -> npt.NDArray[np.floating[Any]]:
    """Shape (E, A, P): credit of each annotator's vote against each prediction (1 when
    the vote says what the prediction says, ``tie_credit`` for a judged vote on a tied
    prediction, else 0), in ``dtype``."""
    code = votes.code[None]  # (1, A, P): 1, 2, or 0 for a skip or no vote
    hit = (pred[:, None, :] == code) & (pred != TIE)[:, None, :]
    out: npt.NDArray[np.floating[Any]] = hit.astype(dtype)
    if tie_credit:
        out[(pred == TIE)[:, None, :] & (code > 0)] = tie_credit
    return out


class _AgreementPlan:
    """``wp @ agree_pa`` of :func:`alignment_report` (bootstrap pair counts times each
    distinct prediction row's agreement credits, shape (b, E_distinct, A)) with less work.

    Two estimators' predictions usually differ on a minority of the pairs, and where they
    agree so do their credits; so a row is the product of another row (its base) plus
    the product of the difference of the credits on the pairs where the two differ, a
    matrix product over those pairs only. Exact, like :func:`_count_matmul` (float32 only):
    counts times credits and credit differences (multiples of 1/2 of at most 1 in size)
    sum to multiples of 1/2 below 2**23 in any order, and the base plus the difference,
    both such numbers whose sum is one too, is exact in float32; so each row equals its
    direct product bit for bit, whatever its base. The bases are a minimum spanning tree
    (Prim's, from a virtual root whose edge to a row is multiplying that row on its own,
    over the pairs where it gives some credit, the others adding exact zeros): each row
    is made from the row it differs from least, or on its own, so that the fewest pairs
    are multiplied in all; the rows are made in the tree's order, a base before the rows
    made from it. A difference on more than ``_DELTA_SHARE`` of the pairs is not used.

    The operands are made from the votes (:func:`_credits`, the credits of
    :func:`_agreement_tensor`, on the pairs multiplied only), with ``tie_credit``.
    ``extra`` (P,), optional: one more prediction row, whose credits have no tie credit,
    made by :meth:`extra_counts` from the products of :meth:`counts` (from the row whose
    prediction differs least from it, or on its own), only when asked for.
    """

    def __init__(
        self,
        votes: _Votes,
        distinct: IntArray,
        tie_credit: float,
        extra: IntArray | None = None,
    ) -> None:
        n_u, n_p = distinct.shape
        self.n_a = votes.n_annotators
        self.code_t = np.ascontiguousarray(votes.code.T)  # (P, A): a pair's votes, a row
        # a row's own product needs only the pairs where it gives some credit (none on a
        # tied prediction with tie_credit 0)
        credited = [self._credited(votes, row, tie_credit) for row in distinct]
        # Prim's algorithm: cost[u] the fewest pairs that make row u from the rows
        # already made (or on its own: base -1), by[u] that base
        cost = np.array([c.size for c in credited], dtype=np.float64)
        by = np.full(n_u, -1, dtype=np.int64)
        done = np.zeros(n_u, dtype=bool)
        # (row, base row or -1, the pairs multiplied or None for all, the operand)
        self.steps: list[tuple[int, int, IntArray | None, npt.NDArray[np.float32]]] = []
        for _ in range(n_u):
            u = int(np.flatnonzero(~done)[np.argmin(cost[~done])])
            done[u] = True
            base = int(by[u])
            # from a base: the same credits where the two predict alike
            cols = credited[u] if base < 0 else np.flatnonzero(distinct[base] != distinct[u])
            m = self._operand(distinct[u], tie_credit, cols, distinct, base, tie_credit)
            self.steps.append((u, base, None if base < 0 and cols.size == n_p else cols, m))
            differ = (distinct != distinct[u]).sum(axis=1)
            closer = ~done & (differ < cost) & (differ <= _DELTA_SHARE * n_p)
            cost[closer] = differ[closer]
            by[closer] = u
        self.extra: tuple[int, IntArray | None, npt.NDArray[np.float32]] | None = None
        if extra is not None:
            own = self._credited(votes, extra, 0.0)
            differ = (distinct != extra).sum(axis=1)
            v = int(np.argmin(differ)) if n_u else -1
            ok = v >= 0 and differ[v] < own.size and differ[v] <= _DELTA_SHARE * n_p
            base = v if ok else -1
            if base < 0:
                cols = own
            else:  # where the predictions differ, and where both predict a tie that
                # the base credits (tie_credit) and the extra row does not
                both_tie = (distinct[base] == TIE) & (extra == TIE) & (votes.judged_per_pair > 0)
                cols = np.flatnonzero(
                    (distinct[base] != extra) | (both_tie if tie_credit else False)
                )
            m = self._operand(extra, 0.0, cols, distinct, base, tie_credit)
            self.extra = (base, None if base < 0 and cols.size == n_p else cols, m)

    @staticmethod
    def _credited(votes: _Votes, pred: IntArray, tie_credit: float) -> IntArray:
        """The pairs where some vote earns a credit against the prediction row ``pred``."""
        some = np.where(
            pred == FIRST_HARDER,
            votes.n_first > 0,
            np.where(pred == SECOND_HARDER, votes.n_second > 0, votes.judged_per_pair > 0),
        )
        if not tie_credit:
            some &= pred != TIE
        return np.flatnonzero(some)

    def _operand(
        self,
        pred: IntArray,
        credit: float,
        cols: IntArray,
        distinct: IntArray,
        base: int,
        base_credit: float,
    ) -> npt.NDArray[np.float32]:
        """The (pairs, A) operand of the row ``pred`` on the pairs ``cols``: its credits,
        minus those of the row ``base`` (``base_credit``) when it has one."""
        code = self.code_t[cols]  # (pairs, A)
        out = _credits(code, pred[cols], credit)
        if base >= 0:
            out -= _credits(code, distinct[base][cols], base_credit)
        return out

    def counts(self, wp: FloatArray) -> npt.NDArray[np.float32]:
        """(b, E_distinct, A) in float32 (a transposed view of (E_distinct, b, A)): each row
        a product, or its base plus a product, all exact in float32 (above)."""
        w32 = wp.astype(np.float32)
        out = np.empty((len(self.steps), wp.shape[0], self.n_a), dtype=np.float32)
        for u, base, cols, m in self.steps:
            np.matmul(w32 if cols is None else w32[:, cols], m, out=out[u])
            if base >= 0:
                out[u] += out[base]
        return out.transpose(1, 0, 2)

    def extra_counts(self, wp: FloatArray, made: npt.NDArray[np.float32]) -> FloatArray:
        """``wp @ extra.T`` (b, A) in float64, from ``made``, what :meth:`counts` gave for
        the same ``wp`` (exact, as above)."""
        assert self.extra is not None
        base, cols, m = self.extra
        w32 = wp.astype(np.float32)
        out: npt.NDArray[np.float32] = np.matmul(w32 if cols is None else w32[:, cols], m)
        if base >= 0:
            out += made[:, base]
        return out.astype(np.float64)


_DELTA_SHARE = 0.6
"""Largest share of pairs on which :class:`_AgreementPlan` multiplies a difference."""


def _credit_sums(votes: _Votes, pred: IntArray, tie_credit: float) -> FloatArray:
    """(E, A) in float64: each annotator's summed credits against each prediction row,
    ``_agreement_tensor(votes, pred, tie_credit).sum(axis=2)``, for a credit of 0, 1/2
    or 1, by counting: a vote matching a prediction of the first (second) question is
    ``(judged + diff) / 2`` (``(judged - diff) / 2``), one on a tied prediction
    ``tie_credit * judged``; so the sums are two products with the (A, P) matrices
    ``judged`` and ``diff``, in multiples of 1/2 below 2**22, exact in float32 (as
    :func:`_count_matmul`) and so equal to the float64 sum of the credits bit for bit."""
    m1 = (pred == FIRST_HARDER).T.astype(np.float64)  # (P, E)
    m2 = (pred == SECOND_HARDER).T.astype(np.float64)
    on_judged = 0.5 * (m1 + m2) + tie_credit * (pred == TIE).T
    on_diff = 0.5 * (m1 - m2)
    judged = _count_matmul(on_judged.T, votes.counts("judged_t"))  # (E, A)
    signed = _count_matmul(on_diff.T, votes.counts("diff_t"))
    out: FloatArray = judged + signed
    return out


def _credits(
    code_t: npt.NDArray[np.int8], pred: IntArray, tie_credit: float
) -> npt.NDArray[np.float32]:
    """(pairs, A) in float32: the credits of :func:`_agreement_tensor` (transposed) of the
    votes ``code_t`` (pairs, A) against the predictions ``pred`` (pairs,)."""
    p = pred[:, None]
    out: npt.NDArray[np.float32] = ((code_t == p) & (p != TIE)).astype(np.float32)
    if tie_credit:
        out[(p == TIE) & (code_t > 0)] = tie_credit
    return out


def _distinct_rows(pred: IntArray) -> tuple[IntArray, IntArray]:
    """The distinct rows of ``pred`` (E, P) in first-seen order, and each row's index
    among them (E,)."""
    seen: dict[bytes, int] = {}
    first: list[int] = []
    row_of = np.empty(pred.shape[0], dtype=np.int64)
    for e, row in enumerate(pred):
        key = row.tobytes()
        k = seen.get(key)
        if k is None:
            k = seen[key] = len(first)
            first.append(e)
        row_of[e] = k
    return pred[first], row_of


def _batch_consensus_stats(
    votes: _Votes,
    pred: IntArray,
    wp: FloatArray | None,
    wa: FloatArray | None,
    margin: float,
    rule: str,
    tie_credit: float,
    point_products: _PointProducts | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Consensus alignment and kappa, shape (B, E) each; NaN where undefined.

    ``None`` weights mean all ones. The NaN are internal sentinels for the
    percentile step and never leave this module. Only the consensus is kept, so the
    bootstrap's near-tie weights are made only where a near-tie needs them
    (:func:`_consensus_batch`); the point estimate is the one :func:`vote_consensus` gives.
    """
    point = wp is None and wa is None
    cons = _consensus_batch(
        votes,
        wp,
        wa,
        margin,
        rule,
        all_weights=point,
        point_products=point_products,
        with_counts=False,
    )[0]
    n_b, n_e = cons.shape[0], pred.shape[0]
    pred_onehot = np.stack([(pred == c).T for c in (FIRST_HARDER, SECOND_HARDER, TIE)], axis=1)
    pred_onehot = pred_onehot.reshape(votes.n_pairs, 3 * n_e).astype(np.float64)  # (P, 3E)
    # tables[b, e, i, j]: predictions i in (1, 2, tie) x consensus j in (1, 2, none)
    tables = np.zeros((n_b, n_e, 3, 3))
    for j, cj in enumerate((FIRST_HARDER, SECOND_HARDER)):
        wj = (cons == cj).astype(np.float64) if wp is None else wp * (cons == cj)
        tables[:, :, :, j] = (wj @ pred_onehot).reshape(n_b, 3, n_e).transpose(0, 2, 1)
    den = tables.sum(axis=(2, 3))[:, 0]  # (B,): weight of the consensus pairs
    agree = tables[:, :, 0, 0] + tables[:, :, 1, 1]
    if tie_credit:
        agree = agree + tie_credit * (tables[:, :, 2, 0] + tables[:, :, 2, 1])
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(den[:, None] > 0, agree / np.where(den > 0, den, 1.0)[:, None], np.nan)
    w = 1.0 - np.eye(3)
    kap, _, _, _, ok = _kappa_from_tables(tables, w)
    kap = np.where(ok, kap, np.nan)
    return share, kap


def _pair_scale(w1: FloatArray, w2: FloatArray) -> float:
    """A power of two ``s`` for which the products of ``w1 + s w2`` with integer credits
    or credit differences (|x| <= 1) split exactly into those of ``w1`` and ``w2``
    (:func:`_split_pair`), or 0 when there is none: non-negative integer counts whose
    row sums are at most ``top``, ``s > 2 top``, and ``s (top + 1) <= 2**23``, so every
    term and partial sum of a product is an integer of magnitude below 2**24, exact in
    float32 in any order (as :func:`_count_matmul`)."""
    for w in (w1, w2):
        if not (w.size and bool((w >= 0).all() and (w == np.floor(w)).all())):
            return 0.0
    top = int(max(w1.sum(axis=1).max(), w2.sum(axis=1).max()))
    scale = 1 << (2 * top).bit_length()
    return float(scale) if scale * (top + 1) <= 2**23 else 0.0


def _padded(w: FloatArray, rows: int) -> FloatArray:
    """``w`` with rows of zeros below it, ``rows`` in all."""
    if w.shape[0] == rows:
        return w
    out = np.zeros((rows, *w.shape[1:]), dtype=w.dtype)
    out[: w.shape[0]] = w
    return out


def _split_pair(
    both: npt.NDArray[np.floating[Any]], scale: float, rows2: int
) -> tuple[npt.NDArray[np.floating[Any]], npt.NDArray[np.floating[Any]]]:
    """The products of ``w1`` and of ``w2`` (its first ``rows2`` rows) from the product of
    ``w1 + scale w2`` (:func:`_pair_scale`): ``x1 + scale x2`` with ``|x1| < scale / 2``,
    so ``x2`` is its rounded quotient by ``scale`` and ``x1`` the rest, both exact (a
    division by a power of two, integers), in the product's dtype; ``both`` is
    overwritten with ``x1``."""
    # x2 = rint(both / s) by the reciprocal (a power of two: the same exact quotient),
    # x1 = both - s x2 into ``both`` (the caller's product, not used after): fewer
    # temporaries of the (b, E, A) products
    second = np.multiply(both, both.dtype.type(1.0 / scale))
    np.rint(second, out=second)
    both -= second * both.dtype.type(scale)
    return both, second[:rows2]


def _boot_counts(rng: np.random.Generator, n_rep: int, n: int) -> FloatArray:
    idx = rng.integers(0, n, size=(n_rep, n))
    idx += (np.arange(n_rep) * n)[:, None]  # row r's draws as r * n + draw: one count
    return np.bincount(idx.ravel(), minlength=n_rep * n).reshape(n_rep, n).astype(np.float64)


def _interval(samples: FloatArray, confidence: float) -> tuple[FloatArray, FloatArray, IntArray]:
    """Percentiles over axis 0 ignoring internal NaN sentinels.

    Vectorised numpy "linear" quantiles: each column uses only its valid
    replicates. Columns without a valid replicate get 0 and ``n_valid = 0``.
    The columns are sorted in blocks of ``_INTERVAL_BLOCK``, so a sorted copy of a
    large array of replicates (1,000 x 9 estimators x 1,000 annotators) is never
    held whole; each column's result does not depend on the blocks.
    """
    cols = samples.shape[1:]
    if samples.shape[0] == 0:
        n_valid = (~np.isnan(samples)).sum(axis=0)
        return np.zeros(cols), np.zeros(cols), n_valid.astype(np.int64)
    flat = samples.reshape(samples.shape[0], -1)
    lows, highs, valid = [], [], []
    for start in range(0, max(flat.shape[1], 1), _INTERVAL_BLOCK):
        lo, hi, nv = _interval_block(flat[:, start : start + _INTERVAL_BLOCK], confidence)
        lows.append(lo)
        highs.append(hi)
        valid.append(nv)
    return (
        np.concatenate(lows).reshape(cols),
        np.concatenate(highs).reshape(cols),
        np.concatenate(valid).reshape(cols),
    )


def _interval_block(
    samples: FloatArray, confidence: float
) -> tuple[FloatArray, FloatArray, IntArray]:
    """:func:`_interval` of a 2-D block of columns.

    The percentiles read only two pairs of order statistics of each column's valid
    replicates (numpy's "linear" rule, :func:`_percentiles`), so each column, as a
    contiguous row of the transposed block, is partitioned around those positions
    (:func:`_select`) instead of sorted: the values there are the sorted column's, NaN
    last as in a sort. Only a zero's sign could depend on how equal values are moved, so
    a column whose percentile takes a zero is sorted in place as before.
    """
    part = np.ascontiguousarray(samples.T)  # (columns, replicates), partitioned in place
    if np.isnan(part.sum()):  # some NaN (a sum is NaN with any NaN term)
        n_valid = part.shape[1] - np.count_nonzero(np.isnan(part), axis=1)
    else:
        n_valid = np.full(part.shape[0], part.shape[1], dtype=np.intp)
    for nv in np.unique(n_valid).tolist():
        if nv == 0:
            continue  # no valid replicate: 0 and n_valid = 0 (_percentiles)
        kth = {k for q in _quantiles(confidence) for k in _order_positions(nv, q)}
        rows = n_valid == nv
        if rows.all():
            _select(part, kth)
        else:
            block = part[rows]
            _select(block, kth)
            part[rows] = block
    bounds, zero = _percentiles(part, n_valid, confidence)
    if zero.any():
        cols = np.flatnonzero(zero)
        redo = _percentiles(np.sort(samples[:, cols], axis=0).T, n_valid[cols], confidence)[0]
        for b, r in zip(bounds, redo, strict=True):
            b[cols] = r
    return bounds[0], bounds[1], n_valid.astype(np.int64)


def _select(rows: FloatArray, positions: set[int]) -> None:
    """Move, in place, the value each row would have at each of ``positions`` in its
    sorted order (NaN last) to that position.

    From the largest position down, with the invariant that the first ``end`` values of
    every row are its ``end`` smallest: a position one below ``end`` takes the largest of
    them (``argmax``, swapped in); two adjacent positions ``k - 1`` and ``k`` with fewer
    values from ``k`` to ``end`` than below ``k``, a partition at ``k - 1`` and the
    smallest of the values from ``k`` on (``argmin``, swapped in: a short tail, where the
    ``argmax`` at ``k - 1`` after a partition at ``k`` would read the long head); any other
    position a partition of the first ``end`` values at it with a single ``kth`` (NumPy's
    vectorised selection; several ``kth`` at once use a much slower path). Every position
    taken is below the row's number of non-NaN values, so no NaN is among the values an
    ``argmax`` sees, and the tail an ``argmin`` sees holds the next value (NaN skipped).
    """
    end = rows.shape[1]
    at = np.arange(rows.shape[0])
    todo = sorted(positions, reverse=True)
    i = 0
    while i < len(todo):
        k = todo[i]
        if k == end - 1:
            j = np.argmax(rows[:, :end], axis=1)
            top = rows[at, j]
            rows[at, j] = rows[:, k]
            rows[:, k] = top
            end, i = k, i + 1
        elif i + 1 < len(todo) and todo[i + 1] == k - 1 and end - k < k:
            rows[:, :end].partition(k - 1, axis=1)
            tail = rows[:, k:end]
            j = k + (np.nanargmin(tail, axis=1) if np.isnan(tail).any() else tail.argmin(axis=1))
            low = rows[at, j]
            rows[at, j] = rows[:, k]
            rows[:, k] = low
            end, i = k - 1, i + 2
        else:
            rows[:, :end].partition(k, axis=1)
            end, i = k, i + 1


def _quantiles(confidence: float) -> tuple[float, float]:
    """The two quantiles of a percentile interval of ``confidence``."""
    alpha = (1.0 - confidence) / 2.0
    return alpha, 1.0 - alpha


def _order_positions(n_valid: int, q: float) -> tuple[int, int]:
    """The two positions among ``n_valid`` sorted values that numpy's "linear"
    ``q``-quantile interpolates between (as :func:`_percentiles` computes them)."""
    h = max(n_valid - 1, 0) * q
    lo = math.floor(h)
    return lo, min(lo + 1, max(n_valid - 1, 0))


def _percentiles(
    srt: FloatArray, n_valid: IntArray, confidence: float
) -> tuple[list[FloatArray], BoolArray]:
    """numpy's "linear" percentiles ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``
    of each row of ``srt`` (sorted, NaN last, or partitioned around the positions read,
    :func:`_order_positions`) over its first ``n_valid`` values; and which rows took a
    zero."""
    bounds = []
    zero = np.zeros(srt.shape[0], dtype=bool)
    for q in _quantiles(confidence):
        h = np.maximum(n_valid - 1, 0) * q
        lo = np.floor(h).astype(np.int64)
        hi = np.minimum(lo + 1, np.maximum(n_valid - 1, 0))
        v_lo = np.take_along_axis(srt, lo[:, None], axis=1)[:, 0]
        v_hi = np.take_along_axis(srt, hi[:, None], axis=1)[:, 0]
        zero |= (v_lo == 0) | (v_hi == 0)
        with np.errstate(invalid="ignore"):
            val = v_lo + (h - lo) * (v_hi - v_lo)
        bounds.append(np.where(n_valid > 0, val, 0.0))
    return bounds, zero


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence numpy's all-NaN slice warning (such slices are marked invalid)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def alignment_report(
    difficulty: npt.ArrayLike,
    pairs: npt.ArrayLike,
    pair: npt.ArrayLike,
    annotator: npt.ArrayLike,
    vote: npt.ArrayLike,
    *,
    n_annotators: int | None = None,
    estimator_names: tuple[str, ...] | list[str] | None = None,
    atol: float = 0.0,
    tie_credit: float = 0.0,
    near_tie_margin: float = 0.0,
    near_tie: NearTie = "weighted",
    n_boot: int = 1000,
    confidence: float = 0.95,
    rng: RNGLike = None,
    resample: Resample | tuple[Resample, ...] | list[Resample] = ("units", "annotators"),
) -> AlignmentReport:
    """Individual and consensus alignment of difficulty estimators with votes.

    Computes, for every estimator: its prediction per pair; each annotator's
    individual alignment (Table 2); the consensus alignment of eq. 9 with
    the near-tie rule of the module docstring; Cohen's kappa between
    predictions and consensus (Figure 7); and percentile bootstrap intervals
    for the mean individual alignment, the consensus alignment and kappa
    under each scheme of ``resample``: over pairs, over annotators, and over
    both together (two-way; the interval to use when the pairs and the
    annotators are both samples of larger populations). Each annotator's own
    alignment has an interval over pairs only.

    Parameters
    ----------
    difficulty : array-like of shape (n_estimators, n_questions) or (n_questions,)
        Difficulty per question for each estimator, higher = harder.
    pairs : array-like of int of shape (n_pairs, 2)
        Question indices shown first and second in each pair.
    pair, annotator, vote : array-like of int of shape (n_votes,)
        One row per vote: pair index, annotator index, code 0 (skip),
        1 (first harder) or 2 (second harder). At most one per (pair, annotator).
    n_annotators : int, optional
        Number of annotators (default: largest index + 1).
    estimator_names : sequence of str of length n_estimators, optional
        Labels for the report (default ``"estimator 0"``, ...).
    atol : float, default 0.0
        Difficulties within ``atol`` are a tied prediction.
    tie_credit : float in [0, 1], default 0.0
        Agreement credited when the prediction is a tie (0.5 = a coin flip's
        expected agreement). Kappa always treats a tie as its own category.
    near_tie_margin : float in [0, 1), default 0.0
        Majority margin at or below which a pair is a near-tie.
    near_tie : {"weighted", "exclude"}, default "weighted"
        How near-ties are handled (see :func:`vote_consensus`).
    n_boot : int, default 1000
        Bootstrap replicates for each resampling scheme; 0 skips the intervals.
    confidence : float, default 0.95
        Coverage of the percentile intervals.
    rng : numpy.random.Generator, int or None
        Source of the bootstrap resampling: the pair draws, then the
        annotator draws, then (for ``"both"``) pair and annotator draws, in
        chunks of 256 replicates.
    resample : {"units", "annotators", "both"} or a sequence of them
        Schemes to run (default the two one-way schemes; ``"units"`` resamples
        pairs). The per-annotator intervals are over pairs and need ``"units"``.

    Returns
    -------
    AlignmentReport
        Predictions, consensus, per-annotator alignment (masked arrays of
        shape (n_estimators, n_annotators)) and per-estimator
        :class:`Estimate` tuples with their intervals. Undefined statistics
        have ``value=None`` and a ``reason``.

    Raises
    ------
    ShapeError, LengthMismatchError, InvalidParameterError
        For malformed inputs or options.
    DegenerateDataError
        If there are no votes, or every vote is a skip.

    References
    ----------
    EIP paper, sec. 3.3, App. H.3 (individual and consensus alignment, eq. 9),
    Table 2 and Figure 7 (consensus and Cohen's kappa).
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap.
    Chapman & Hall.
    Owen, A. B. (2007). The pigeonhole bootstrap. Annals of Applied Statistics
    1(2), 386-411 (the two-way scheme).

    Examples
    --------
    >>> from ranking.alignment import alignment_report
    >>> difficulty = [[0.1, 0.8, 0.5, 0.3], [0.9, 0.2, 0.5, 0.5]]
    >>> pairs = [[0, 1], [2, 3]]
    >>> pair = [0, 0, 0, 1, 1, 1]
    >>> annotator = [0, 1, 2, 0, 1, 2]
    >>> vote = [2, 2, 0, 1, 1, 2]
    >>> r = alignment_report(difficulty, pairs, pair, annotator, vote,
    ...                      estimator_names=["good", "bad"], n_boot=200, rng=0)
    >>> r.predictions.tolist()
    [[2, 1], [1, 0]]
    >>> r.individual.round(2).tolist()
    [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    >>> [e.value for e in r.consensus_alignment]
    [1.0, 0.0]
    >>> r2 = alignment_report(difficulty, pairs, pair, annotator, vote, n_boot=50, rng=0,
    ...                       resample="both")
    >>> r2.schemes, r2.kappa[0].both_interval.scheme, r2.kappa[0].pairs_interval is None
    (('both',), 'both', True)
    """
    _check_options(
        near_tie_margin=near_tie_margin, near_tie=near_tie, tie_credit=tie_credit, atol=atol
    )
    if int(n_boot) != n_boot or n_boot < 0:
        raise InvalidParameterError(f"n_boot must be an integer >= 0, got {n_boot!r}")
    n_boot = int(n_boot)
    schemes = _check_resample(resample)
    check_in_range(confidence, "confidence", 0.0, 1.0)
    if not 0.0 < confidence < 1.0:
        raise InvalidParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    d = _check_difficulty(difficulty)
    pr = _check_pairs(pairs, d.shape[1])
    votes = _check_votes(pair, annotator, vote, n_pairs=pr.shape[0], n_annotators=n_annotators)
    n_e = d.shape[0]
    names = _names(estimator_names, n_e)
    if votes.vote.size == 0:
        raise DegenerateDataError("there are no votes, so alignment cannot be measured")
    if not votes.judged_per_pair.any():
        raise DegenerateDataError(
            f"every one of the {votes.vote.size} votes is a skip, so no pair has a human "
            "judgement to align with; collect non-skipped votes first"
        )
    gen = make_rng(rng)
    margin = float(near_tie_margin)
    pred = _predict(d, pr, float(atol))
    consensus = _consensus_result(votes, margin, near_tie)
    n_a, n_p = votes.n_annotators, votes.n_pairs

    # individual alignment, point estimate
    # the agreement credits are 0, 1 or tie_credit: with a credit of 0, 1/2 or 1 they and
    # their products with bootstrap counts are exact in float32 (_count_matmul)
    exact = votes.exact32 and float(tie_credit) in (0.0, 0.5, 1.0)
    # Estimators with the same prediction on every pair (EIP on the whole model pool and
    # EIP; two estimators that order every pair alike) have the same agreement rows: each
    # distinct row is made and multiplied once, then copied to its estimators (row_of).
    # The products are exact (_count_matmul), so each copy is what its own row gives.
    distinct, row_of = _distinct_rows(pred) if exact else (pred, np.arange(n_e))
    n_u = distinct.shape[0]
    # (E_distinct, A, P) credits: only without exact products (the plan makes its own)
    agree = None if exact else _agreement_tensor(votes, distinct, float(tie_credit))
    n_judged = votes.judged_per_annotator.astype(np.float64)  # (A,)
    has_votes = n_judged > 0
    if agree is None:  # exact sums of halves, made by counting
        credit = _credit_sums(votes, distinct, float(tie_credit))[row_of]
    else:
        credit = agree.sum(axis=2, dtype=np.float64)[row_of]
    ind = np.where(has_votes, credit / np.maximum(n_judged, 1.0), 0.0)  # (E, A)
    individual = _masked(ind, mask=np.broadcast_to(~has_votes, ind.shape).copy())
    mean_ind = ind[:, has_votes].mean(axis=1)

    # consensus alignment and kappa, point estimate
    share, kap = _batch_consensus_stats(
        votes, pred, None, None, margin, near_tie, float(tie_credit)
    )
    kappa_detail = tuple(_kappa_point(pred[e], consensus.consensus) for e in range(n_e))

    # bootstrap over pairs
    pairs_with_votes = int((votes.judged_per_pair > 0).sum())
    annot_with_votes = int(has_votes.sum())
    can_pairs = n_boot > 0 and pairs_with_votes >= 2
    can_annot = n_boot > 0 and annot_with_votes >= 2
    do_pairs = can_pairs and "units" in schemes
    do_annot = can_annot and "annotators" in schemes
    do_both = can_pairs and can_annot and "both" in schemes
    # distinct rows; the loop below writes every replicate
    bp_ind = np.empty((n_boot if do_pairs else 0, n_u, n_a))
    bp_mean = np.full((bp_ind.shape[0], n_e), np.nan)
    bp_share = np.full((bp_ind.shape[0], n_e), np.nan)
    bp_kap = np.full((bp_ind.shape[0], n_e), np.nan)
    plan: _AgreementPlan | None = None
    agree_pa: npt.NDArray[np.floating[Any]] | None = None
    if (do_pairs or do_both) and exact:
        # with near-ties resolved by weights, one more row: the credits of a vote that
        # matches the point majority on its decisive pairs, from which the replicates'
        # near-tie weights are made (_near_tie_weights_from_point), when one has a near-tie
        extra = None
        if near_tie == "weighted":
            s0 = votes.point_counts(margin)[1]
            extra = np.where(s0 > 0, FIRST_HARDER, np.where(s0 < 0, SECOND_HARDER, TIE))
        plan = _AgreementPlan(votes, distinct, float(tie_credit), extra)
    elif do_pairs or do_both:
        assert agree is not None
        agree_pa = agree.transpose(2, 0, 1).reshape(n_p, n_u * n_a)

    def point_products(
        wp: FloatArray, den: FloatArray, num: npt.NDArray[np.floating[Any]]
    ) -> _PointProducts | None:
        """What the replicates' near-tie weights are made from (:func:`_consensus_batch`),
        with the plan's products ``num`` of the same ``wp``."""
        if plan is None or plan.extra is None:
            return None
        made = plan
        return den, lambda: made.extra_counts(wp, np.asarray(num, dtype=np.float32))

    def agreement_counts(wp: FloatArray) -> npt.NDArray[np.floating[Any]]:
        """(b, E_distinct, A): bootstrap-weighted agreement credit of each annotator (exact
        multiples of 1/2, in float32 with a plan)."""
        if plan is not None:
            return plan.counts(wp)
        assert agree_pa is not None
        return _count_matmul(wp, agree_pa).reshape(wp.shape[0], n_u, n_a)

    def pair_counts(
        wps: list[FloatArray],
    ) -> list[tuple[npt.NDArray[np.floating[Any]], FloatArray]]:
        """``agreement_counts(wp)`` and ``wp @ judged_t`` (b, A) of each pair draws ``wp``;
        for two chunks with a plan and integer credits (``tie_credit`` 0), each product
        made once for both, of ``wp1 + s wp2`` (:func:`_split_pair`)."""
        if len(wps) == 2 and plan is not None and not tie_credit:
            s = _pair_scale(wps[0], wps[1])
            if s:
                packed = wps[0] + s * _padded(wps[1], wps[0].shape[0])
                num1, num2 = _split_pair(plan.counts(packed), s, wps[1].shape[0])
                den1, den2 = _split_pair(
                    votes.judged_products(packed, by_pair=True), s, wps[1].shape[0]
                )
                # the counts of judged votes in float64, as judged_products gives them
                return [(num1, np.asarray(den1, np.float64)), (num2, np.asarray(den2, np.float64))]
        return [(agreement_counts(wp), votes.judged_products(wp, by_pair=True)) for wp in wps]

    del agree
    starts = list(range(0, n_boot, _CHUNK))
    if do_pairs:
        for pair_of_starts in (starts[i : i + 2] for i in range(0, len(starts), 2)):
            wps = [_boot_counts(gen, min(_CHUNK, n_boot - t), n_p) for t in pair_of_starts]
            made = pair_counts(wps)
            for start, wp, (num, den) in zip(pair_of_starts, wps, made, strict=True):
                b = wp.shape[0]
                ok = den > 0
                vals = bp_ind[start : start + b]  # (b, E_distinct, A), C-contiguous
                # the exact counts divided in float64, as num / den in float64 would
                np.divide(num, np.maximum(den, 1.0)[:, None, :], out=vals)
                if ok.all():  # no NaN: nanmean's sum over annotators divided by their number
                    bp_mean[start : start + b] = (vals.sum(axis=2) / n_a)[:, row_of]
                else:
                    vals[np.broadcast_to(~ok[:, None, :], vals.shape)] = np.nan
                    with _quiet():  # per distinct row, then copied to its estimators (b, E)
                        bp_mean[start : start + b] = np.nanmean(vals, axis=2)[:, row_of]
                s, k = _batch_consensus_stats(
                    votes,
                    pred,
                    wp,
                    None,
                    margin,
                    near_tie,
                    tie_credit,
                    point_products(wp, den, num),
                )
                bp_share[start : start + b] = s
                bp_kap[start : start + b] = k

    # bootstrap over annotators
    ba_mean = np.full((n_boot if do_annot else 0, n_e), np.nan)
    ba_share = np.full_like(ba_mean, np.nan)
    ba_kap = np.full_like(ba_mean, np.nan)
    if do_annot:
        ind_def = np.where(has_votes, 1.0, 0.0)  # (A,)
        for start in range(0, n_boot, _CHUNK):
            b = min(_CHUNK, n_boot - start)
            wa = _boot_counts(gen, b, n_a)
            wdef = wa * ind_def  # (b, A)
            cnt = wdef.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                ba_mean[start : start + b] = np.where(
                    cnt[:, None] > 0, (wdef @ ind.T) / np.where(cnt > 0, cnt, 1.0)[:, None], np.nan
                )
            s, k = _batch_consensus_stats(votes, pred, None, wa, margin, near_tie, tie_credit)
            ba_share[start : start + b] = s
            ba_kap[start : start + b] = k

    # two-way bootstrap: pairs and annotators drawn independently in each replicate
    bb_mean = np.full((n_boot if do_both else 0, n_e), np.nan)
    bb_share = np.full_like(bb_mean, np.nan)
    bb_kap = np.full_like(bb_mean, np.nan)
    if do_both:
        # one buffer for every chunk's quotients (a fresh one per chunk costs its pages)
        scratch = np.empty((min(_CHUNK, n_boot), n_u, n_a))
        for pair_of_starts in (starts[i : i + 2] for i in range(0, len(starts), 2)):
            draws = []
            for t in pair_of_starts:  # pairs then annotators, chunk by chunk
                wp_t = _boot_counts(gen, min(_CHUNK, n_boot - t), n_p)
                draws.append((wp_t, _boot_counts(gen, wp_t.shape[0], n_a)))
            made = pair_counts([wp_t for wp_t, _ in draws])
            # den: (b, A), judged votes on drawn pairs
            for start, (wp, wa), (num, den) in zip(pair_of_starts, draws, made, strict=True):
                b = wp.shape[0]
                ok = (den > 0) & (wa > 0)
                # (b, E_distinct, A): finite and >= 0, so where ok is false the product with
                # wok below is +0 whatever the value (as with the value set to 0 first)
                vals = scratch[:b]
                np.divide(num, np.maximum(den, 1.0)[:, None, :], out=vals)
                wok = wa * ok  # (b, A): drawn annotators with a judged vote on the drawn pairs
                cnt = wok.sum(axis=1)
                # per distinct row, then copied to its estimators (b, E)
                total = np.einsum("ba,bua->bu", wok, vals)[:, row_of]
                with np.errstate(invalid="ignore", divide="ignore"):
                    bb_mean[start : start + b] = np.where(
                        cnt[:, None] > 0, total / np.where(cnt > 0, cnt, 1.0)[:, None], np.nan
                    )
                s, k = _batch_consensus_stats(
                    votes, pred, wp, wa, margin, near_tie, tie_credit, point_products(wp, den, num)
                )
                bb_share[start : start + b] = s
                bb_kap[start : start + b] = k

    lo_i, hi_i, nv_i = (x[row_of] for x in _interval(bp_ind, confidence))
    ci_mask = ~has_votes[None, :] | (nv_i == 0)
    individual_low = _masked(np.where(ci_mask, 0.0, lo_i), mask=ci_mask)
    individual_high = _masked(np.where(ci_mask, 0.0, hi_i), mask=ci_mask)

    no_q = (
        "no pair has a consensus: every pair lacks a non-skipped vote or is an unresolved near-tie"
    )
    mean_est = _estimates(mean_ind, None, bp_mean, ba_mean, bb_mean, confidence)
    share_est = _estimates(share[0], no_q, bp_share, ba_share, bb_share, confidence)
    kap_reasons = [k.reason for k in kappa_detail]
    kap_est = _estimates(kap[0], kap_reasons, bp_kap, ba_kap, bb_kap, confidence)
    return AlignmentReport(
        estimator_names=names,
        predictions=pred,
        n_tied_predictions=(pred == TIE).sum(axis=1).astype(np.int64),
        consensus=consensus,
        n_judged=np.rint(n_judged).astype(np.int64),
        individual=individual,
        individual_low=individual_low,
        individual_high=individual_high,
        mean_individual=mean_est,
        consensus_alignment=share_est,
        kappa=kap_est,
        kappa_detail=kappa_detail,
        tie_credit=float(tie_credit),
        atol=float(atol),
        n_boot=n_boot,
        confidence=float(confidence),
        schemes=schemes,
    )


def _kappa_point(pred: IntArray, cons: IntArray) -> AgreementResult:
    q = cons != 0
    cats = (FIRST_HARDER, SECOND_HARDER, TIE)
    table = np.zeros((3, 3))
    for i, ci in enumerate(cats):
        for j, cj in enumerate(cats[:2]):
            table[i, j] = np.sum((pred[q] == ci) & (cons[q] == cj))
    res = cohen_kappa_table(table)
    if res.undefined and res.n_units == 0:
        return AgreementResult.from_reason(
            reason="no pair has a consensus to compare the predictions with", method=res.method
        )
    if res.undefined:
        reason = (
            "expected disagreement is zero: the predictions and the consensus each "
            "use a single category on the consensus pairs"
        )
        return AgreementResult.from_reason(
            reason=reason,
            method=res.method,
            n_units=res.n_units,
            n_raters=2,
            observed_disagreement=res.observed_disagreement,
            expected_disagreement=res.expected_disagreement,
        )
    return res


def _estimates(
    point: FloatArray,
    reasons: str | list[str | None] | None,
    boot_pairs: FloatArray,
    boot_annot: FloatArray,
    boot_both: FloatArray,
    confidence: float,
) -> tuple[Estimate, ...]:
    n = point.shape[0]
    per_scheme = []
    for samples, scheme in (
        (boot_pairs, "units"),
        (boot_annot, "annotators"),
        (boot_both, "both"),
    ):
        lo, hi, nv = _interval(samples, confidence)
        per_scheme.append(
            [
                Interval(low=float(lo[e]), high=float(hi[e]), n_valid=int(nv[e]), scheme=scheme)
                if nv[e] > 0
                else None
                for e in range(n)
            ]
        )
    out = []
    for e in range(n):
        v = point[e]
        defined = bool(np.isfinite(v))
        reason = reasons[e] if isinstance(reasons, list) else reasons
        out.append(
            Estimate(
                value=float(v) if defined else None,
                reason=None if defined else (reason or "the statistic is undefined on these votes"),
                pairs_interval=per_scheme[0][e],
                annotators_interval=per_scheme[1][e],
                both_interval=per_scheme[2][e],
            )
        )
    return tuple(out)


def _names(names: tuple[str, ...] | list[str] | None, n: int) -> tuple[str, ...]:
    if names is None:
        return tuple(f"estimator {i}" for i in range(n))
    out = tuple(str(x) for x in names)
    if len(out) != n:
        raise InvalidParameterError(
            f"estimator_names has {len(out)} names but difficulty has {n} estimators (rows)"
        )
    return out


# ---------------------------------------------------------------------------
# human difficulty scale


def human_difficulty_scale(
    pairs: npt.ArrayLike,
    pair: npt.ArrayLike,
    annotator: npt.ArrayLike,
    vote: npt.ArrayLike,
    *,
    difficulty: npt.ArrayLike | None = None,
    estimator_names: tuple[str, ...] | list[str] | None = None,
    n_questions: int | None = None,
    n_annotators: int | None = None,
    extremes: Literal["exclude", "raise"] = "exclude",
    virtual_ties: int = 1,
    confidence: float = 0.95,
) -> HumanScaleResult:
    """Human difficulty of each question, fitted from "which is harder" votes.

    The votes are a Bradley-Terry comparison between questions with one
    discrimination per annotator, fitted by :func:`ranking.pairwise.am_elo`
    (the same implementation that ranks models in arena studies): the first
    question of a pair "wins" when it was voted harder. Skipped votes are
    dropped; questions and annotators without a non-skipped vote are left
    out of the fit and masked in the result.

    Parameters
    ----------
    pairs : array-like of int of shape (n_pairs, 2)
        Question indices shown first and second.
    pair, annotator, vote : array-like of int of shape (n_votes,)
        Votes as in :func:`alignment_report` (0 skip, 1 first harder, 2 second harder).
    difficulty : array-like of shape (n_estimators, n_questions) or (n_questions,), optional
        Estimator difficulties to correlate with the human scale.
    estimator_names : sequence of str of length n_estimators, optional
        Labels for the correlations.
    n_questions : int, optional
        Number of questions (default: from ``difficulty``, else largest index + 1).
    n_annotators : int, optional
        Number of annotators (default: largest index + 1).
    extremes : {"exclude", "raise"}, default "exclude"
        A set of questions that was never voted easier than any question
        outside it (or never harder) has no finite maximum-likelihood
        difficulty. ``"exclude"`` removes such sets repeatedly, reports them
        in ``always_harder``/``always_easier`` and masks them, much as EIP
        gives universally failed or solved questions a conceptual extreme
        difficulty; ``"raise"`` leaves them in so that am-ELO raises.
    virtual_ties : int, default 1
        A prior in the form of virtual draws (as in Coulom's BayesElo and
        Whole-History Rating): each annotator gets this many extra tie votes,
        on the pairs they judged at positions ``(k + j) mod n_k`` of their
        own judged pairs in pair order (annotator ``k``, ``j = 0, 1, ...``,
        ``n_k`` judged pairs). Without it, an annotator who agrees with the
        fitted ranking on every vote has an infinite maximum-likelihood
        discrimination and am-ELO raises; one tie keeps it finite while
        moving the difficulties very little. 0 fits the votes alone.
    confidence : float, default 0.95
        Coverage of the Wald intervals of the fit.

    Returns
    -------
    HumanScaleResult
        ``difficulty`` (n_questions,) in Elo points centred at 0 with Wald
        ``lower``/``upper`` bounds, each annotator's ``reliability``
        (discrimination, mean 1) and Spearman/Kendall correlations of each
        estimator with the human difficulty over the fitted questions.

    Raises
    ------
    ShapeError, LengthMismatchError, InvalidParameterError
        For malformed inputs.
    DegenerateDataError
        If there are no non-skipped votes, or the fit is not identified; the
        message from :func:`ranking.pairwise.am_elo` says why (e.g. the
        comparison graph of questions is not connected, which is the case
        when every pair has its own two questions; or an annotator agrees
        with the ranking on every vote).
    ConvergenceError
        If the am-ELO fit does not converge.

    References
    ----------
    Bradley, R. A. and Terry, M. E. (1952). Rank analysis of incomplete block
    designs: I. The method of paired comparisons. Biometrika 39, 324-345.
    Liu, Z. et al. (2025). am-ELO: A Stable Framework for Arena-based LLM
    Evaluation. ICML 2025.
    Coulom, R. (2008). Whole-history rating: a Bayesian rating system for
    players of time-varying strength. Computers and Games, LNCS 5131,
    113-124 (virtual draws as a prior).

    Examples
    --------
    Five annotators each misjudge one of three pairs:

    >>> from ranking.alignment import human_difficulty_scale
    >>> pairs = [[0, 1], [1, 2], [0, 2]]
    >>> pair = [0, 1, 2] * 5
    >>> annotator = [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]
    >>> vote = [1, 2, 2, 2, 1, 2, 2, 2, 1, 1, 2, 2, 2, 1, 2]
    >>> r = human_difficulty_scale(pairs, pair, annotator, vote, difficulty=[0.1, 0.5, 0.9])
    >>> [int(i) for i in r.difficulty.argsort()]
    [0, 1, 2]
    >>> round(r.spearman[0].value, 3)
    1.0
    """
    from ranking.pairwise import _am_elo_started

    check_in_range(confidence, "confidence", 0.0, 1.0)
    if not 0.0 < confidence < 1.0:
        raise InvalidParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    d = _check_difficulty(difficulty) if difficulty is not None else np.zeros((0, 0))
    if difficulty is not None:
        if n_questions is not None and int(n_questions) != d.shape[1]:
            raise InvalidParameterError(
                f"n_questions={n_questions} but difficulty has {d.shape[1]} questions (columns)"
            )
        n_questions = d.shape[1]
    pr = _check_pairs(pairs, n_questions)
    n_q = int(n_questions) if n_questions is not None else (int(pr.max()) + 1 if pr.size else 0)
    p, a, v, _, n_a, _ = _check_vote_rows(
        pair, annotator, vote, n_pairs=pr.shape[0], n_annotators=n_annotators
    )
    names = _names(estimator_names, d.shape[0]) if difficulty is not None else ()
    if extremes not in ("exclude", "raise"):
        raise InvalidParameterError(f"extremes must be 'exclude' or 'raise', got {extremes!r}")
    if int(virtual_ties) != virtual_ties or virtual_ties < 0:
        raise InvalidParameterError(f"virtual_ties must be an integer >= 0, got {virtual_ties!r}")
    keep = v != SKIP
    if not keep.any():
        raise DegenerateDataError(
            "there are no non-skipped votes, so no question has a human difficulty"
        )
    p, a, v = p[keep], a[keep], v[keep]
    qa, qb = pr[p, 0], pr[p, 1]
    always_harder = np.zeros(n_q, dtype=bool)
    always_easier = np.zeros(n_q, dtype=bool)
    if extremes == "exclude":
        harder = np.where(v == FIRST_HARDER, qa, qb)
        easier = np.where(v == FIRST_HARDER, qb, qa)
        kept = _drop_extremes(harder, easier, n_q, always_harder, always_easier)
        if not kept.any():
            raise DegenerateDataError(
                "every question was always voted harder or always voted easier than the "
                "questions it was compared with, so no finite human scale exists; collect "
                "more votes on pairs of similar difficulty"
            )
        p, a, v, qa, qb = p[kept], a[kept], v[kept], qa[kept], qb[kept]
    # the sorted distinct indices (np.unique's), by counting
    used_q = np.flatnonzero(np.bincount(qa, minlength=n_q) + np.bincount(qb, minlength=n_q))
    used_a = np.flatnonzero(np.bincount(a, minlength=n_a))
    q_index = np.full(n_q, -1, dtype=np.int64)
    q_index[used_q] = np.arange(used_q.size)
    a_index = np.full(n_a, -1, dtype=np.int64)
    a_index[used_a] = np.arange(used_a.size)
    outcome = (v == FIRST_HARDER).astype(np.float64)
    fa, fb, fk = q_index[qa], q_index[qb], a_index[a]
    if virtual_ties:
        rows = _virtual_ties(p, a, int(virtual_ties))
        fa, fb, fk = np.r_[fa, fa[rows]], np.r_[fb, fb[rows]], np.r_[fk, fk[rows]]
        outcome = np.r_[outcome, np.full(rows.size, 0.5)]
    try:
        # am_elo from the ability step's start: its optimum to the fit's tolerance, in
        # fewer iterations (ranking.pairwise._am_elo_started)
        fit = _am_elo_started(
            fa,
            fb,
            fk,
            outcome,
            n_models=int(used_q.size),
            n_annotators=int(used_a.size),
            initial=0.0,
            confidence=confidence,
        )
    except DegenerateDataError as err:
        raise DegenerateDataError(
            f"the human difficulty scale is not identified from these votes: {err} "
            "(indices above are positions among the questions and annotators with "
            "non-skipped votes)"
        ) from err

    def q_masked(values: FloatArray) -> MaskedFloatArray:
        out = np.zeros(n_q)
        out[used_q] = values
        mask = np.ones(n_q, dtype=bool)
        mask[used_q] = False
        return _masked(out, mask=mask)

    def a_masked(values: FloatArray) -> MaskedFloatArray:
        out = np.zeros(n_a)
        out[used_a] = values
        mask = np.ones(n_a, dtype=bool)
        mask[used_a] = False
        return _masked(out, mask=mask)

    m = used_a.size
    spear: list[Correlation] = []
    kend: list[Correlation] = []
    human = np.asarray(fit.ratings, dtype=np.float64)
    for e in range(d.shape[0]):
        est = d[e, used_q]
        spear.append(_correlation(est, human, "spearman"))
        kend.append(_correlation(est, human, "kendall"))
    return HumanScaleResult(
        difficulty=q_masked(human),
        lower=q_masked(np.asarray(fit.lower, dtype=np.float64)),
        upper=q_masked(np.asarray(fit.upper, dtype=np.float64)),
        standard_errors=q_masked(np.asarray(fit.rating_standard_errors, dtype=np.float64)),
        reliability=a_masked(np.asarray(fit.discriminations, dtype=np.float64)),
        reliability_standard_errors=a_masked(
            m * np.asarray(fit.ability_standard_errors, dtype=np.float64)
        ),
        spearman=tuple(spear),
        kendall=tuple(kend),
        estimator_names=names,
        always_harder=always_harder,
        always_easier=always_easier,
        n_votes=int(p.size),
        n_virtual_ties=int(virtual_ties) * int(used_a.size),
        iterations=int(fit.iterations),
        confidence=float(confidence),
    )


def _virtual_ties(pair: IntArray, annotator: IntArray, n_ties: int) -> IntArray:
    """Rows for the virtual ties: annotator k ties on its judged pairs (k + j) mod n_k.

    ``pair`` and ``annotator`` are the original indices of the fitted votes;
    the judged pairs of each annotator are taken in pair order.
    """
    order = _annotator_pair_order(pair, annotator)
    ks = annotator[order]
    first = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    counts = np.diff(np.r_[first, ks.size])
    annot = ks[first]
    rows = [order[first + (annot + j) % counts] for j in range(n_ties)]
    out: IntArray = np.concatenate(rows).astype(np.int64)
    return out


def _annotator_pair_order(pair: IntArray, annotator: IntArray) -> IntArray:
    """``np.lexsort((pair, annotator))``: the rows by annotator, then pair. Where each
    (annotator, pair) appears once (the checked votes) and the grid of them is not much
    larger than the rows, by placing each row in its cell of the grid and reading the
    grid in order (no sort of the rows); the same order, as the keys are distinct."""
    size = pair.size
    if size:
        n_p = int(pair.max()) + 1
        cells = (int(annotator.max()) + 1) * n_p
        if cells <= 4 * size + 65536:
            slot = np.full(cells, -1, dtype=np.int64)
            slot[annotator * n_p + pair] = np.arange(size, dtype=np.int64)
            order = slot[slot >= 0]
            if order.size == size:  # every key distinct
                return order
    out: IntArray = np.lexsort((pair, annotator))
    return out


def _drop_extremes(
    harder: IntArray,
    easier: IntArray,
    n_q: int,
    always_harder: BoolArray,
    always_easier: BoolArray,
) -> BoolArray:
    """Peel source and sink components off the "voted harder" graph.

    The graph has an edge from the question voted harder to the other one.
    While it has more than one strongly connected component, every source
    component (never voted easier than a remaining question outside it) and
    every sink component (never voted harder) other than the largest
    component is dropped and marked in ``always_harder``/``always_easier``
    (in place); a component that is both (cut off by earlier drops) is
    dropped unmarked. Returns the mask of votes kept. A graph that is not
    weakly connected to begin with is left alone for am-ELO to report.

    Whether a vote is kept depends only on its edge (both of its questions), so the
    peeling runs on the distinct edges (a few hundred in a difficulty study, where the
    votes are hundreds of thousands): the same graph, as the one built from every vote
    sums repeated edges into one entry, so the same components, the same marks.
    """
    key = harder * n_q + easier
    if key.size and n_q * n_q <= 4 * key.size + 65536:
        # the distinct edges (sorted, as np.unique's) and each vote's, by counting
        edges = np.flatnonzero(np.bincount(key, minlength=n_q * n_q))
        lookup = np.empty(n_q * n_q, dtype=np.int64)
        lookup[edges] = np.arange(edges.size, dtype=np.int64)
        edge_of = lookup[key]
    else:
        edges, edge_of = np.unique(key, return_inverse=True)
    kept_edges = _drop_extreme_edges(edges // n_q, edges % n_q, n_q, always_harder, always_easier)
    out: BoolArray = kept_edges[edge_of]
    return out


def _drop_extreme_edges(
    harder: IntArray,
    easier: IntArray,
    n_q: int,
    always_harder: BoolArray,
    always_easier: BoolArray,
) -> BoolArray:
    """:func:`_drop_extremes` on edges (``harder`` -> ``easier``): the mask of edges kept."""
    kept = np.ones(harder.size, dtype=bool)
    first = True
    while kept.any():
        h, e = harder[kept], easier[kept]
        graph = sparse.coo_matrix((np.ones(h.size), (h, e)), shape=(n_q, n_q)).tocsr()
        present = np.zeros(n_q, dtype=bool)
        present[h] = True
        present[e] = True
        if first:
            _, weak = csgraph.connected_components(graph, directed=True, connection="weak")
            if np.unique(weak[present]).size > 1:
                break
            first = False
        n_strong, comp = csgraph.connected_components(graph, directed=True, connection="strong")
        sizes = np.bincount(comp[present], minlength=n_strong)
        if (sizes > 0).sum() <= 1:
            break
        largest = int(np.argmax(sizes))
        cross = comp[h] != comp[e]
        has_in = np.zeros(n_strong, dtype=bool)
        has_out = np.zeros(n_strong, dtype=bool)
        has_in[comp[e][cross]] = True
        has_out[comp[h][cross]] = True
        other = present & (comp != largest)
        source = other & ~has_in[comp]
        sink = other & ~has_out[comp]
        always_harder |= source & ~sink
        always_easier |= sink & ~source
        drop = source | sink
        if not drop.any():  # cannot happen in a DAG of components; guard anyway
            break
        kept &= ~(drop[harder] | drop[easier])
    return kept


def _correlation(x: FloatArray, y: FloatArray, kind: str) -> Correlation:
    from ranking._special_dist import kendalltau, spearmanr

    n = int(x.size)
    if n < 3:
        return Correlation(
            value=None, p_value=None, reason=f"only {n} question(s) on the human scale; need 3", n=n
        )
    if np.unique(x).size < 2:
        return Correlation(
            value=None,
            p_value=None,
            reason="the estimator gives every question the same difficulty",
            n=n,
        )
    if np.unique(y).size < 2:
        return Correlation(
            value=None,
            p_value=None,
            reason="the human scale gives every question the same value",
            n=n,
        )
    if kind == "spearman":
        res = spearmanr(x, y)
        value, p = float(res.statistic), float(res.pvalue)
    else:
        res_k = kendalltau(x, y)
        value, p = float(res_k.statistic), float(res_k.pvalue)
    if not np.isfinite(value):
        return Correlation(
            value=None, p_value=None, reason=f"scipy could not compute {kind}'s coefficient", n=n
        )
    return Correlation(value=value, p_value=p if np.isfinite(p) else None, reason=None, n=n)
