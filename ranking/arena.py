"""The Stable Arena loop (Algorithm 3 of Liu et al., 2025).

Annotators with too few votes are set aside as ``pending``; the rest are
fitted with am-ELO (:func:`ranking.pairwise.am_elo`); annotators whose ability
falls at or below a threshold are ``flagged`` and either warned about (kept in
the ratings) or excluded (the ratings are refitted without them, repeatedly,
until no new annotator is flagged); everyone else is ``reliable``.

Each annotator ends ``pending`` (with ``votes_to_verdict``), ``reliable`` or
``flagged`` with one or more :class:`FlagReason` (``adversarial``, ``random``,
``position_bias``, ``too_fast``, ``low_agreement``), each test adjusted across
annotators (Benjamini-Hochberg by default, or Holm); see :func:`stable_arena`.

The two thresholds of the paper, the record count ``delta`` and the ability
``epsilon``, are fixed numbers there. Here ``delta`` is recomputed from the
data at every refit (and capped at the median vote count minus one), and the
default ``epsilon`` rule is a one-sided test of ``theta <= 0``; the random-voter
null below (:func:`null_ability_threshold`, the earlier dynamic ``epsilon``) is
kept as a helper, and its moments give that test's score statistic:

* ``delta`` (dynamic): the record count at which the standard error of a
  typical annotator's ability falls below ``se_bound`` times the ability
  itself. A preliminary am-ELO fit over the annotators with at least the
  median number of votes gives strengths ``s`` and discriminations ``a_k``
  (if that fit is impossible: m-ELO strengths and one-dimensional fits of
  each ``a_k``); ``g`` is the median of the positive ``a_k`` (the typical
  annotator who agrees with the ranking). One vote then carries
  ``i = mean(eta**2 p (1 - p))`` of relative Fisher information, with
  ``eta = g (s_a - s_b)`` and ``p = sigmoid(eta)``, so an annotator with
  ``n`` votes has relative standard error about ``1 / sqrt(n i)`` and
  ``delta = ceil(1 / (se_bound**2 * i))``. With the default
  ``se_bound = 0.5`` a random voter (ability 0) and a typical one are two
  standard errors apart once an annotator has more than ``delta`` votes.
  Taking ``g`` over positive abilities keeps the rule stable when many
  annotators are inverted or random.
* ``epsilon`` (dynamic, one per annotator): the ``null_quantile`` quantile of
  the ability that a randomly voting annotator with the same battles and the
  same mix of outcomes would get. Under that null (the annotator's outcomes
  permuted over its battles) the score at ``theta = 0`` is
  ``U = sum x_t (W_t - 1/2)``, with permutation mean ``(mean(W) - 1/2) sum x``
  and variance ``S_xx S_WW / (n - 1)``; the ability estimate is about
  ``U / I_0`` with ``I_0 = sum x**2 / 4``, asymptotically normal. So
  ``epsilon_k = (E[U] + z_q sd(U)) / I_0``, divided by the number of fitted
  annotators to be on the ``sum(theta) = 1`` scale. An annotator is flagged
  when its ability is not distinguishable from random voting at level
  ``1 - null_quantile``. The default quantile, 0.85, balances the two errors
  at about 100 votes per annotator, where an average annotator's ability is
  only about 3 standard errors above 0: a higher quantile flags more genuine
  annotators (in the sec. 5.5 simulation about 1% at 0.85 and 0.9, 3% at 0.95,
  which costs precision when few annotators are perturbed), while inverted and
  random annotators fall below the threshold either way.

The paper's fixed thresholds stay available: ``delta=50`` (its filter) and
``epsilon=0.0`` or ``epsilon=0.005``.

References
----------
Liu, Z. et al. (2025). am-ELO: A Stable Framework for Arena-based LLM
Evaluation. ICML 2025, sec. 4.3 and Algorithm 3.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.sparse import csgraph
from scipy.special import expit, log_ndtr

from ranking._validation import as_index_array, make_rng
from ranking.errors import (
    ConvergenceError,
    DegenerateDataError,
    InvalidParameterError,
    LengthMismatchError,
    ShapeError,
)
from ranking.pairwise import (
    AmEloResult,
    BothBad,
    RankTestResult,
    _aggregate_pairs,
    _am_elo_cells,
    _am_elo_estimates,
    _am_elo_started,
    _bt_newton,
    _check_connected,
    _prepare,
    am_elo,
    ranks_from_intervals,
    ranks_from_pairwise_tests,
)
from ranking.reliability import adjust_p_values, majority_agreement
from ranking.types import BoolArray, FloatArray, IntArray, RNGLike

__all__ = [
    "ANNOTATOR_STATUSES",
    "FLAG_REASONS",
    "Evidence",
    "FlagReason",
    "StableArenaResult",
    "dynamic_delta",
    "null_ability_threshold",
    "stable_arena",
]

ANNOTATOR_STATUSES: tuple[str, str, str] = ("pending", "reliable", "flagged")
"""The three annotator statuses, in the order of Algorithm 3."""

FLAG_REASONS: tuple[str, str, str, str, str] = (
    "adversarial",
    "random",
    "position_bias",
    "too_fast",
    "low_agreement",
)
"""Why an annotator can be flagged (:attr:`FlagReason.reason`)."""

MIN_ANNOTATORS_FOR_VERDICT = 3
"""An ability verdict (``reliable``, ``adversarial``, ``random`` by ability) compares an
annotator with the ranking that the *others* support: with one or two annotators who cast
decisive votes, that ranking is mostly the annotator's own (each agrees with a ranking fitted
to their own votes, and two who disagree cannot tell who is right), so they stay ``pending``.
Per-vote flags (position bias, too fast, all ties) need no others and still apply."""

Action = Literal["warn", "exclude"]
Correction = Literal["bh", "holm"]
Intervals = Literal["wald", "bootstrap"]


@dataclass(frozen=True)
class FlagReason:
    """One reason an annotator is flagged, with its evidence.

    ========================  ==============================  ===========================
    ``reason``                ``statistic``                   ``threshold``
    ========================  ==============================  ===========================
    ``"adversarial"``         ability ``theta_k``             ``epsilon``
    ``"random"``              ``theta_k`` (1.0: all ties)     a tenth of the typical
                                                              ability (1.0: all ties)
    ``"random"`` (ties)       the tie test's ``z``: ties on   0
                              far pairs (``test="ties"``)
    ``"position_bias"``       share of decisive votes for     0.5
                              the left item
    ``"too_fast"``            share of fast votes             ``max_fast_share``
    ``"low_agreement"``       agreement with the others'      the annotator's chance
                              majority                        agreement
    ========================  ==============================  ===========================
    """

    reason: str
    """One of :data:`FLAG_REASONS`."""
    statistic: float
    """The annotator's value of the statistic tested."""
    threshold: float
    """The value it is compared with."""
    p_value: float | None
    """p-value adjusted across annotators (Holm or Benjamini-Hochberg); None when
    the flag is a certainty rather than a test (all votes ties)."""
    test: str = ""
    """Which test of the reason flagged, where a reason has more than one: ``"ties"`` for
    the ``random`` flag of the tie test (ties on pairs far apart in the ranking), empty
    otherwise. Not part of :meth:`as_dict`."""

    def as_dict(self) -> dict[str, Any]:
        """``{"reason", "statistic", "threshold", "p_value"}`` for JSON output."""
        return {
            "reason": self.reason,
            "statistic": self.statistic,
            "threshold": self.threshold,
            "p_value": self.p_value,
        }


@dataclass(frozen=True)
class Evidence:
    """Evidence about each annotator from outside the battles (for example gold items or
    swapped re-tests), tested like the per-vote checks: the raw one-sided p-values are
    adjusted across the annotators tested (the study's ``correction``) and an annotator is
    flagged with ``reason`` where the adjusted p-value is at most ``alpha``."""

    reason: str
    """Name of the flag (for example ``"low_gold"``); not one of :data:`FLAG_REASONS`'s
    fit-based reasons."""
    statistic: npt.ArrayLike
    """The annotator's value of the statistic, shape (n_annotators,)."""
    threshold: npt.ArrayLike
    """What it is compared with, a number or shape (n_annotators,)."""
    p_value: npt.ArrayLike
    """Unadjusted p-value per annotator, shape (n_annotators,); NaN where not tested."""


@dataclass(frozen=True)
class StableArenaResult:
    """Ratings and annotator statuses from the Stable Arena loop."""

    ratings: FloatArray
    """am-ELO ratings, shape (n_models,), from the final fit (Elo points, mean 1000)."""
    lower: FloatArray
    """Lower bound per model at ``confidence``, shape (n_models,) (see ``intervals``)."""
    upper: FloatArray
    """Upper bound per model, shape (n_models,)."""
    ranks: IntArray
    """Rank per model, shape (n_models,): 1 + the number of models significantly above
    it by Holm-adjusted pairwise tests of the rating differences (see ``rank_tests``
    and ``rank_error_rate``)."""
    abilities: FloatArray
    """Ability ``theta_k`` per annotator, shape (n_annotators,), on the
    ``sum = 1`` scale of the fit that last estimated it; exactly 0 for
    annotators whose votes are all ties; NaN for annotators with at most
    ``delta`` votes (not estimated)."""
    ability_standard_errors: FloatArray
    """Standard error of each annotator's ``theta_k`` from the fit that last
    estimated it, shape (n_annotators,); NaN for annotators never fitted
    (pending or all-tie)."""
    epsilon: FloatArray
    """Ability threshold applied to each annotator, shape (n_annotators,) (0 under the
    dynamic rule); NaN where not fitted."""
    status: tuple[str, ...]
    """``"pending"``, ``"reliable"`` or ``"flagged"`` per annotator."""
    reasons: tuple[str, ...]
    """Why each annotator has its status, one sentence per annotator."""
    n_records: IntArray
    """Votes per annotator, shape (n_annotators,)."""
    in_ratings: BoolArray
    """Whether the annotator's votes were used in the final ratings, shape (n_annotators,)."""
    delta: int
    """Record-count threshold used in the final round (pending if ``n <= delta``)."""
    fit: AmEloResult
    """The final am-ELO fit (over the annotators in the ratings, re-indexed)."""
    iterations: int
    """Number of am-ELO fits run."""
    action: str
    """``"warn"`` (flagged annotators kept) or ``"exclude"`` (refitted without them)."""
    delta_rule: str
    """``"fixed"`` or ``"dynamic"``."""
    epsilon_rule: str
    """``"fixed"`` or ``"dynamic"``."""
    se_bound: float
    """Standard-error bound of the dynamic delta rule."""
    null_quantile: float
    """Quantile of the random-voter null of the dynamic epsilon rule."""
    both_bad_as: str
    """How "both bad" votes were treated."""
    flags: tuple[tuple[FlagReason, ...], ...]
    """Reasons per annotator, shape (n_annotators,); non-empty exactly where the
    status is ``"flagged"``."""
    votes_to_verdict: tuple[int | None, ...]
    """Per annotator: about how many more votes until a verdict (``reliable`` or
    ``flagged``) if it keeps voting as so far; None when decided."""
    ability_p_values: FloatArray
    """Unadjusted one-sided p-value of ``theta_k < epsilon`` per annotator, shape
    (n_annotators,); NaN where not fitted. ``1 - p`` tests ``theta_k > epsilon``."""
    delta_uncapped: int
    """The dynamic delta before the cap at the median vote count minus one (equal
    to ``delta`` when fixed)."""
    alpha: float
    """Level of the tests after adjustment."""
    correction: str
    """``"bh"`` (Benjamini-Hochberg) or ``"holm"``, across annotators per test."""
    ability_prior_sd: float
    """Prior standard deviation of the relative discriminations."""
    max_fast_share: float
    """Largest share of fast votes that is not flagged."""
    intervals: str
    """``"wald"`` or ``"bootstrap"`` (over annotators): how ``lower``/``upper`` were made."""
    rank_error_rate: float
    """Error rate of the rank claims "model i ranks above model j" behind ``ranks`` and
    ``lowest_ranks`` (``1 - confidence``): with ``rank_correction="bh"`` the expected
    share of false claims among them (false discovery rate), with ``"holm"`` the chance
    that any of them is false (family-wise error rate)."""
    lowest_ranks: IntArray | None = None
    """Worst rank the data allow per model, shape (n_models,): ``n_models`` - the number
    of models significantly below it; ``ranks[i]..lowest_ranks[i]`` is its rank class."""
    rank_tests: RankTestResult | None = None
    """The pairwise tests behind the ranks (:func:`ranking.ranks_from_pairwise_tests`):
    which pairs are separated and their adjusted p-values."""
    rank_correction: str = "bh"
    """``"bh"`` (false discovery rate) or ``"holm"`` (family-wise error rate): how the
    pairwise rank tests were adjusted across the pairs of models."""
    rating_covariance: FloatArray | None = None
    """Covariance of the ratings behind the rank tests (Elo points squared), shape
    (n_models, n_models): the Wald covariance of the final fit, or the covariance of
    the bootstrap replicates."""

    scale_bias: float | None = None
    """With Wald intervals: the estimated relative bias ``beta`` of the rating spread
    that widened them (``_scale_bias``; fitted deviations from the mean are about
    ``1 + beta`` times the true ones); None with bootstrap intervals."""
    fit_annotators: IntArray | None = None
    """The annotators in ``fit``, shape (fit's n_annotators,): ``fit.abilities[i]`` is
    annotator ``fit_annotators[i]``'s (what ``init`` of a later call warm-starts from)."""
    tie_statistics: FloatArray | None = None
    """The tie test's standardised statistic per annotator, shape (n_annotators,)
    (positive: its ties sit on pairs farther apart in the ranking than its decisive
    votes; :func:`_tie_gap_z`); NaN where not tested (the test off, its default; pending;
    too few ties or decisive votes; fixed ``epsilon``)."""
    random_p_values: FloatArray | None = None
    """The ``random`` test's p-value per annotator before the adjustment across
    annotators, shape (n_annotators,), from the final fit (:func:`_random_test`; before a
    Fisher combination with the tie test); NaN for annotators not in that fit. For an
    honest annotator the predictive p-value is about uniform, which
    ``bench_flags.py --honest-p`` and ``tests/ranking/test_verdict_random.py`` check."""
    random_test: str = ""
    """Which ``random`` test the final fit ran: ``"predictive"`` (honest abilities fitted
    as log-normal with their noise), ``"log-scale"`` (theta significantly below the 5%
    quantile of that fit), ``"median"`` (below ``random_fraction`` of the median ability:
    too few clear annotators or too noisy), or ``""`` (no fit ran the test)."""

    def verdict(self, j: int) -> dict[str, Any]:
        """Annotator ``j``'s verdict for JSON: ``status``, ``reasons`` (dicts) and
        ``votes_to_verdict``."""
        return {
            "status": self.status[j],
            "reasons": [f.as_dict() for f in self.flags[j]],
            "votes_to_verdict": self.votes_to_verdict[j],
        }

    def annotators_with(self, status: str) -> IntArray:
        """Indices of the annotators with a given status, shape (n,)."""
        if status not in ANNOTATOR_STATUSES:
            raise InvalidParameterError(
                f"status must be one of {ANNOTATOR_STATUSES}, got {status!r}"
            )
        return np.flatnonzero(np.asarray(self.status) == status).astype(np.int64)


def dynamic_delta(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    annotator: npt.ArrayLike | None = None,
    n_models: int | None = None,
    se_bound: float = 0.5,
) -> int:
    """Record count above which an annotator's ability is estimated well enough.

    ``delta = ceil(1 / (se_bound**2 * i))`` where ``i`` is the mean Fisher
    information per vote about a typical annotator's ability *relative to its
    own size*: ``mean(eta**2 p (1 - p))`` over the votes, with ``eta = g x``
    the typical annotator's logit, ``x`` the log-strength difference of the
    battle, ``p = sigmoid(eta)`` and ``g`` the median of the positive
    discriminations. Strengths and discriminations come from a preliminary
    am-ELO fit of the annotators with at least the median vote count (or, if
    that fit is impossible or no annotators are given, from m-ELO with each
    ``a_k`` fitted alone; ``g = 1`` without annotators). An annotator with
    ``n`` votes then has ``se(theta_k) / theta_k`` about ``1 / sqrt(n i)``,
    below ``se_bound`` once ``n > delta``.

    Parameters
    ----------
    model_a, model_b : array-like of int of shape (n_battles,)
        The battles.
    outcome : array-like of float of shape (n_battles,)
        1, 0 or 0.5.
    annotator : array-like of int of shape (n_battles,), optional
        Annotator of each vote.
    n_models : int, optional
        Number of items.
    se_bound : float, default 0.5
        Target relative standard error ``se(theta) / |theta|`` of a typical
        annotator.

    Returns
    -------
    int
        The threshold ``delta`` (at least 1).

    Raises
    ------
    InvalidParameterError
        If ``se_bound`` is not positive.
    DegenerateDataError
        As for :func:`ranking.m_elo`, or if the battles carry no information
        (all items equally strong).

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, Algorithm 3 (delta).

    Examples
    --------
    >>> dynamic_delta([0, 0, 1, 1, 1, 2, 0], [1, 1, 0, 2, 2, 1, 2], [1, 1, 1, 1, 1, 1, 0.5])
    73
    """
    if not (np.isfinite(se_bound) and se_bound > 0):
        raise InvalidParameterError(f"se_bound must be a positive number, got {se_bound!r}")
    d = _prepare(model_a, model_b, outcome, annotator=annotator, n_models=n_models)
    return _delta_from(d.a, d.b, d.w, d.k, d.n_models, d.n_annotators, se_bound)


def _delta_from(
    a: IntArray, b: IntArray, w: FloatArray, k: IntArray | None, n: int, m: int, se_bound: float
) -> int:
    return _delta_and_start(a, b, w, k, n, m, se_bound)[0]


_Start = tuple[FloatArray, FloatArray]
"""A warm start for am-ELO: log-strengths (n_models,) and discriminations per annotator
of the whole index (n_annotators,), NaN for annotators the fit did not include."""


def _delta_and_start(
    a: IntArray, b: IntArray, w: FloatArray, k: IntArray | None, n: int, m: int, se_bound: float
) -> tuple[int, _Start | None]:
    """The dynamic delta, and the preliminary am-ELO fit's estimates (None without one)."""
    lo, hi, wins, cnt = _aggregate_pairs(a, b, w, n)
    _check_connected(lo, hi, wins, cnt, n)
    s, _, _ = _bt_newton(lo, hi, wins, cnt, n, tol=1e-10, max_iter=100)
    g = 1.0
    start: _Start | None = None
    if k is not None and m > 0:
        pre = _preliminary_fit(a, b, w, k, n, m)
        if pre is not None:
            s, g, disc = pre
            start = (s, disc)
        else:
            g = _typical_discrimination(s[a] - s[b], w, k, m)
    info = float(np.mean(_by_pair(_delta_terms, s, g, a, b)))
    if not info > 1e-12:
        raise DegenerateDataError(
            "the battles carry no information about annotator ability (all items are rated "
            "equal), so delta cannot be set from the data; pass a fixed delta"
        )
    return max(1, math.ceil(1.0 / (se_bound**2 * info))), start


def _delta_terms(x: FloatArray, g: float) -> FloatArray:
    """``eta**2 p (1 - p)`` with ``eta = g x``, ``p = expit(eta)``: each vote's information
    about a typical annotator's relative ability (:func:`dynamic_delta`)."""
    eta = g * x
    p = expit(eta)
    out: FloatArray = eta * eta * p * (1.0 - p)
    return out


def _by_pair(
    f: Callable[[FloatArray, float], FloatArray], s: FloatArray, g: float, a: IntArray, b: IntArray
) -> FloatArray:
    """``f(s[a] - s[b], g)``, an elementwise function of each vote's strength difference:
    evaluated once per ordered pair of items (a table of ``n**2``, where that is fewer than
    the votes) and taken per vote. Each vote's value is the very number (the same
    subtraction and the same operations on it; NumPy's and SciPy's loops compute each
    element on its own), so sums and means over the votes are unchanged, bit for bit; on the
    report's study, 10,000 pairs against 194,000 votes per component: one ``expit`` of a
    twentieth of the size."""
    n = s.size
    if n * n > a.size:
        return f(s[a] - s[b], g)
    table = f((s[:, None] - s[None, :]).ravel(), g)
    idx = a * n
    idx += b
    return np.take(table, idx)


def _preliminary_fit(
    a: IntArray, b: IntArray, w: FloatArray, k: IntArray, n: int, m: int
) -> tuple[FloatArray, float, FloatArray] | None:
    """am-ELO on the annotators with at least the median vote count: strengths, the
    median positive discrimination and the discriminations (NaN for the annotators left
    out); None when that fit is not possible."""
    cnt = np.bincount(k, minlength=m)
    nontie = np.bincount(k, weights=(w != 0.5).astype(np.float64), minlength=m)
    use = (cnt >= np.median(cnt[cnt > 0])) & (nontie > 0)
    for _ in range(5):
        ids = np.flatnonzero(use)
        if ids.size < 2:
            return None
        # the votes of the annotators in use (a[use[k]], ...: the same rows in the same
        # order, gathered at their ascending positions) and the annotators' positions in
        # ids (what np.searchsorted(ids, k[sel]) gives) by a lookup table
        rows = np.flatnonzero(np.take(use, k, mode="clip"))
        remap = np.zeros(m, dtype=np.int64)
        remap[ids] = np.arange(ids.size, dtype=np.int64)
        sel_a, sel_b = np.take(a, rows, mode="clip"), np.take(b, rows, mode="clip")
        sel_w, sel_k = np.take(w, rows, mode="clip"), np.take(k, rows, mode="clip")
        try:
            # the estimates of am_elo from the ability step's start (_am_elo_started: the
            # same optimum to the fit's tolerance, in fewer iterations) bit for bit,
            # without the standard errors (unused here)
            fit = _am_elo_estimates(
                sel_a,
                sel_b,
                np.take(remap, sel_k, mode="clip"),
                sel_w,
                n_models=n,
                ability_start=True,
            )
        except DegenerateDataError as err:
            bad = getattr(err, "annotators", None)
            if bad is None:
                return None
            use[ids[bad]] = False
            continue
        except ConvergenceError:
            return None
        pos = fit.discriminations[fit.discriminations > 0]
        disc = np.full(m, np.nan)
        disc[ids] = fit.discriminations
        return fit.log_strengths, float(np.median(pos)), disc
    return None


def _typical_discrimination(x: FloatArray, w: FloatArray, k: IntArray, m: int) -> float:
    """Median of the positive a_k, each fitted by 1-D Newton with the strengths fixed.

    Inverted or random annotators (a_k <= 0) shrink the m-ELO strengths but not
    the fitted logit ``a_k x`` of the annotators who agree with the ranking.
    """
    a = np.ones(m)
    for _ in range(30):
        p = expit(a[k] * x)
        grad = np.bincount(k, weights=x * (w - p), minlength=m)
        hess = np.bincount(k, weights=x * x * p * (1.0 - p), minlength=m)
        step = np.where(hess > 1e-12, grad / np.maximum(hess, 1e-12), 0.0)
        a = np.clip(a + np.clip(step, -5.0, 5.0), -50.0, 50.0)
        if np.max(np.abs(step)) < 1e-8:
            break
    seen = (np.bincount(k, minlength=m) > 0) & (a > 0)
    return float(np.median(a[seen])) if seen.any() else 1.0


def null_ability_threshold(
    x: npt.ArrayLike,
    outcome: npt.ArrayLike,
    annotator: npt.ArrayLike,
    *,
    n_annotators: int,
    quantile: float = 0.85,
) -> FloatArray:
    """Quantile of the ability a randomly voting annotator would get.

    For each annotator, under the null that its outcomes are a random
    permutation over its battles (a random voter with the same mix of wins
    and ties), the ability estimate is asymptotically normal with mean
    ``E[U] / I_0`` and standard deviation ``sd(U) / I_0``, where
    ``U = sum x_t (W_t - 1/2)``, ``E[U] = (mean(W) - 1/2) sum x``,
    ``var(U) = S_xx S_WW / (n - 1)`` and ``I_0 = sum x**2 / 4``.

    Parameters
    ----------
    x : array-like of shape (n_battles,)
        Log-strength difference ``s_a - s_b`` of each battle at the fit
        (discrimination scale: an average annotator has discrimination 1).
    outcome : array-like of shape (n_battles,)
        1, 0 or 0.5.
    annotator : array-like of int of shape (n_battles,)
        Annotator of each battle.
    n_annotators : int
        Number of annotators.
    quantile : float, default 0.85
        Upper quantile of the null distribution.

    Returns
    -------
    ndarray of shape (n_annotators,)
        The threshold on the discrimination scale (multiply by
        ``1 / n_fitted_annotators`` for the ``sum(theta) = 1`` scale). 0 for an
        annotator whose outcomes do not vary, or with no informative battle.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, Algorithm 3 (epsilon).

    Examples
    --------
    >>> null_ability_threshold([1, -1, 2, -2], [1, 0, 1, 0], [0, 0, 0, 0], n_annotators=1).round(3)
    array([0.757])
    """
    from ranking._special_dist import norm_ppf

    xv = np.asarray(x, dtype=np.float64)
    wv = np.asarray(outcome, dtype=np.float64)
    kv = np.asarray(annotator, dtype=np.int64)
    if not (0.5 <= quantile < 1.0):
        raise InvalidParameterError(f"quantile must be in [0.5, 1), got {quantile!r}")
    m = int(n_annotators)
    n = np.bincount(kv, minlength=m).astype(np.float64)
    sx = np.bincount(kv, weights=xv, minlength=m)
    sxx = np.bincount(kv, weights=xv * xv, minlength=m)
    sw = np.bincount(kv, weights=wv, minlength=m)
    sww = np.bincount(kv, weights=wv * wv, minlength=m)
    safe = np.maximum(n, 1.0)
    cxx = np.maximum(sxx - sx * sx / safe, 0.0)
    cww = np.maximum(sww - sw * sw / safe, 0.0)
    mean_u = (sw / safe - 0.5) * sx
    var_u = np.where(n > 1, cxx * cww / np.maximum(n - 1.0, 1.0), 0.0)
    i0 = sxx / 4.0
    z = float(norm_ppf(quantile))
    out = np.zeros(m)
    ok = i0 > 0
    out[ok] = (mean_u[ok] + z * np.sqrt(var_u[ok])) / i0[ok]
    return out


def _check_arena_options(
    delta: int | None,
    epsilon: float | None,
    action: str,
    se_bound: float,
    null_quantile: float,
    max_refits: int,
    alpha: float,
    correction: str,
    ability_prior_sd: float,
    rating_prior_sd: float,
    max_fast_share: float,
    random_fraction: float,
    intervals: str,
    n_boot: int,
    rank_correction: str = "bh",
) -> None:
    if delta is not None and (
        isinstance(delta, bool) or not isinstance(delta, int | np.integer) or delta < 0
    ):
        raise InvalidParameterError(
            f"delta must be a non-negative integer or None (dynamic), got {delta!r}"
        )
    if epsilon is not None and not np.isfinite(epsilon):
        raise InvalidParameterError(
            f"epsilon must be a finite number or None (dynamic), got {epsilon!r}"
        )
    if action not in ("warn", "exclude"):
        raise InvalidParameterError(f"action must be 'warn' or 'exclude', got {action!r}")
    if not (np.isfinite(se_bound) and se_bound > 0):
        raise InvalidParameterError(f"se_bound must be a positive number, got {se_bound!r}")
    if not (0.5 <= null_quantile < 1.0):
        raise InvalidParameterError(f"null_quantile must be in [0.5, 1), got {null_quantile!r}")
    if not (isinstance(max_refits, int | np.integer) and max_refits >= 0):
        raise InvalidParameterError(
            f"max_refits must be a non-negative integer, got {max_refits!r}"
        )
    if not (0.0 < alpha < 0.5):
        raise InvalidParameterError(f"alpha must be in (0, 0.5), got {alpha!r}")
    if correction not in ("bh", "holm"):
        raise InvalidParameterError(f"correction must be 'bh' or 'holm', got {correction!r}")
    for name, v in (("ability_prior_sd", ability_prior_sd), ("rating_prior_sd", rating_prior_sd)):
        if not (np.isfinite(v) and v > 0):
            raise InvalidParameterError(f"{name} must be a positive number, got {v!r}")
    if not (0.0 < max_fast_share < 1.0):
        raise InvalidParameterError(f"max_fast_share must be in (0, 1), got {max_fast_share!r}")
    if not (0.0 <= random_fraction < 1.0):
        raise InvalidParameterError(f"random_fraction must be in [0, 1), got {random_fraction!r}")
    if intervals not in ("wald", "bootstrap"):
        raise InvalidParameterError(f"intervals must be 'wald' or 'bootstrap', got {intervals!r}")
    if not (isinstance(n_boot, int | np.integer) and n_boot >= 20):
        raise InvalidParameterError(f"n_boot must be an integer >= 20, got {n_boot!r}")
    if rank_correction not in ("bh", "holm"):
        raise InvalidParameterError(
            f"rank_correction must be 'bh' or 'holm', got {rank_correction!r}"
        )


def _vote_mask(x: npt.ArrayLike | None, name: str, n: int) -> BoolArray | None:
    """A per-vote boolean array of length ``n``, or None."""
    if x is None:
        return None
    v = np.asarray(x)
    if v.ndim != 1:
        raise ShapeError(f"{name} must be 1-D, got {v.ndim} dimension(s)")
    if v.size != n:
        raise LengthMismatchError(f"{name} has {v.size} entries but there are {n} votes")
    if v.size and v.dtype != np.bool_ and not np.all(np.isin(v, (0, 1))):
        raise InvalidParameterError(f"{name} must hold booleans")
    return v.astype(bool, copy=False)


def _binom_two_sided(x: IntArray, n: IntArray) -> FloatArray:
    """Exact two-sided binomial p-value against 1/2 (as scipy.stats.binomtest), NaN if n == 0."""
    from ranking._special_dist import binom_cdf

    lo = np.minimum(x, n - x)
    pv = np.where(x * 2 == n, 1.0, np.minimum(1.0, 2.0 * binom_cdf(lo, n, 0.5)))
    out: FloatArray = np.where(n > 0, pv, np.nan)
    return out


def _flag_counts(
    k: IntArray, m: int, decisive: BoolArray, left: BoolArray | None, fast: BoolArray | None
) -> IntArray:
    """Votes per annotator and ``(fast, decisive, decisive and left)``, shape (m, 8): column
    ``4 fast + 2 decisive + (decisive and left)`` (absent flags count as False). One count
    on one-byte codes, instead of a weighted count per flag."""
    code = decisive.view(np.uint8) << np.uint8(1)
    if left is not None:
        code |= (decisive & left).view(np.uint8)
    if fast is not None:
        code |= fast.view(np.uint8) << np.uint8(2)
    key = k * 8
    key += code
    out: IntArray = np.bincount(key, minlength=8 * m).reshape(m, 8)
    return out


def _agreement_labels(w: FloatArray, decisive: BoolArray, a: IntArray, b: IntArray) -> IntArray:
    """The low-agreement label of each vote, oriented by item index: 0 the lower-index item
    won, 1 tie, 2 the higher-index item won (``np.where(w == 0.5, 1, np.where((w == 1) ==
    (a < b), 0, 2))``, on one-byte codes)."""
    lab = ((w == 1.0) != (a < b)).view(np.uint8) << np.uint8(1)  # 0 or 2 when decisive
    lab[~decisive] = 1
    out: IntArray = lab.astype(np.int64)
    return out


def _vote_flags(
    k: IntArray,
    w: FloatArray,
    m: int,
    left_chosen: BoolArray | None,
    fast: BoolArray | None,
    item: IntArray | None,
    a: IntArray,
    b: IntArray,
    alpha: float,
    correction: str,
    max_fast_share: float,
) -> list[list[FlagReason]]:
    """Flags that do not depend on the fit: position bias, too fast, low agreement."""
    from ranking._special_dist import binom_cdf, binom_sf

    out: list[list[FlagReason]] = [[] for _ in range(m)]
    decisive = w != 0.5
    counts = _flag_counts(k, m, decisive, left_chosen, fast)
    if left_chosen is not None:
        n_dec = counts[:, [2, 3, 6, 7]].sum(axis=1)  # decisive, fast or not
        n_left = counts[:, [3, 7]].sum(axis=1)  # decisive and left
        p_adj = adjust_p_values(_binom_two_sided(n_left, n_dec), method=correction)
        for j in np.flatnonzero(p_adj <= alpha):
            out[j].append(
                FlagReason("position_bias", float(n_left[j] / n_dec[j]), 0.5, float(p_adj[j]))
            )
    if fast is not None:
        n_all, n_fast = counts.sum(axis=1), counts[:, 4:].sum(axis=1)
        raw = np.where(n_all > 0, binom_sf(n_fast - 1, n_all, max_fast_share), np.nan)
        p_adj = adjust_p_values(raw, method=correction)
        for j in np.flatnonzero(p_adj <= alpha):
            out[j].append(
                FlagReason("too_fast", float(n_fast[j] / n_all[j]), max_fast_share, float(p_adj[j]))
            )
    if item is not None:
        # label oriented by item index: 0 lower-index item won, 1 tie, 2 higher-index item won
        lab = _agreement_labels(w, decisive, a, b)
        maj = majority_agreement(item, k, lab, n_annotators=m)
        n_cmp = maj.n_compared
        agree = np.ma.filled(maj.agreement, np.nan)
        chance = np.ma.filled(maj.chance, np.nan)
        n_agree = np.rint(np.nan_to_num(agree) * n_cmp).astype(np.int64)
        raw = np.where(
            n_cmp > 0, binom_cdf(n_agree, n_cmp, np.clip(np.nan_to_num(chance), 0, 1)), np.nan
        )
        p_adj = adjust_p_values(raw, method=correction)
        for j in np.flatnonzero(p_adj <= alpha):
            out[j].append(
                FlagReason("low_agreement", float(agree[j]), float(chance[j]), float(p_adj[j]))
            )
    return out


def _reachable_delta(
    a: IntArray,
    b: IntArray,
    w: FloatArray,
    k: IntArray,
    n: int,
    m: int,
    cnt: IntArray,
    se_bound: float,
) -> tuple[int, int, _Start | None]:
    """Dynamic delta and its value before the cap (at most the median vote count minus 1),
    and the preliminary fit's estimates (a warm start for the main fit; None without)."""
    seen = cnt[cnt > 0]
    cap = max(0, int(np.floor(np.median(seen))) - 1) if seen.size else 0
    start: _Start | None = None
    try:
        raw, start = _delta_and_start(a, b, w, k, n, m, se_bound)
    except (DegenerateDataError, ConvergenceError):
        raw = cap
    return min(raw, cap), raw, start


def _start_of(res: StableArenaResult, n: int, m: int) -> _Start:
    """The warm start of a ``stable_arena(init=res)`` on ``n`` items and ``m`` annotators."""
    if res.ratings.shape != (n,) or res.n_records.shape != (m,):
        raise ShapeError(
            f"init is a result on {res.ratings.size} items and {res.n_records.size} "
            f"annotators, these battles have {n} and {m}; a warm start needs the same index"
        )
    return _fit_start(res.fit, res.fit_annotators, m)


def _fit_start(fit: AmEloResult, ids: IntArray | None, m: int) -> _Start:
    """A fit's estimates in the am_elo orientation (mean discrimination 1, not mirrored)."""
    sign = 1.0 if float(fit.discriminations.mean()) >= 0 else -1.0
    disc = np.full(m, np.nan)
    if ids is not None and ids.size == fit.discriminations.size:
        disc[ids] = sign * fit.discriminations
    return sign * fit.log_strengths, disc


def _warm(start: _Start | None, rate_ids: IntArray) -> tuple[FloatArray, FloatArray] | None:
    """``am_elo``'s ``init`` for the annotators ``rate_ids``: those ``start`` lacks begin at
    the median positive discrimination it has (1 if none)."""
    if start is None:
        return None
    ls, disc = start
    a0 = disc[rate_ids]
    known = np.isfinite(a0)
    pos = a0[known & (a0 > 0)]
    a0 = np.where(known, a0, float(np.median(pos)) if pos.size else 1.0)
    return (ls, a0) if float(a0.mean()) > 0 else None


def _fit_am(
    a: IntArray,
    b: IntArray,
    k: IntArray,
    w: FloatArray,
    n: int,
    m: int,
    confidence: float,
    tau: float,
    rating_sd: float,
    init: tuple[FloatArray, FloatArray] | None = None,
    counts: IntArray | None = None,
) -> AmEloResult:
    """am-ELO with the Gaussian priors on abilities and ratings (``init``: a warm start;
    without one, :func:`ranking.pairwise._am_elo_started`'s start: the same optimum to the
    fit's tolerance, in fewer iterations); from the vote cells ``counts`` of these votes
    (shape ``(m, 3, n, n)``, see :class:`_VoteCells`) when given, without a pass over the
    votes (the same fit).

    The penalised fit is strictly concave near its optimum, but Fisher scoring can creep
    there slowly, or wander at the level of the line search's tolerance (relative 1e-12 of
    the log-likelihood, 2e-8 on 40,000 votes): a last Newton decrement of 1e-9 against
    ``tol=1e-10`` after 200 iterations with 45% inverted annotators, 1,330 iterations to
    reach 1e-8 on two annotators of whom one votes nearly at random, 3e-8 after 20,000
    iterations on 200 annotators with 200 votes each. Such a fit is rerun with 5,000
    iterations and ``tol=1e-6``: a Newton decrement ``d`` leaves the estimates about
    ``sqrt(2 d)`` = 0.0014 standard errors from the optimum, far below anything reported,
    instead of failing the whole verdict.
    """
    try:
        if counts is not None:
            return _am_elo_cells(
                counts, confidence=confidence, ability_prior_sd=tau,
                rating_prior_sd=rating_sd, information="observed", init=init,
                ability_start=True,
            )  # fmt: skip
        if init is None:
            return _am_elo_started(
                a, b, k, w, n_models=n, n_annotators=m, confidence=confidence,
                ability_prior_sd=tau, rating_prior_sd=rating_sd, information="observed",
            )  # fmt: skip
        return am_elo(
            a, b, k, w, n_models=n, n_annotators=m, confidence=confidence,
            ability_prior_sd=tau, rating_prior_sd=rating_sd, information="observed",
            init=init,
        )  # fmt: skip
    except ConvergenceError:
        if counts is not None:
            return _am_elo_cells(
                counts, confidence=confidence, ability_prior_sd=tau,
                rating_prior_sd=rating_sd, information="observed", max_iter=5000, tol=1e-6,
                ability_start=True,
            )  # fmt: skip
        return _am_elo_started(
            a, b, k, w, n_models=n, n_annotators=m, confidence=confidence,
            ability_prior_sd=tau, rating_prior_sd=rating_sd, information="observed",
            max_iter=5000, tol=1e-6,
        )  # fmt: skip


def _bootstrap_intervals(
    a: IntArray,
    b: IntArray,
    k: IntArray,
    w: FloatArray,
    n: int,
    m: int,
    fit: AmEloResult,
    tau: float,
    rating_sd: float,
    confidence: float,
    n_boot: int,
    rng: RNGLike,
) -> tuple[FloatArray, FloatArray, FloatArray, int]:
    """Bias-corrected percentile intervals and the covariance of the ratings from a
    bootstrap over annotators (the covariance of the replicates, Elo points squared).

    The percentile interval of the resampled ratings is shifted by the bootstrap estimate
    of the bias, ``mean(replicates) - estimate`` (Efron and Tibshirani, 1993, sec. 10.6):
    with few votes per annotator am-ELO spreads the ratings out (the small-sample bias of
    each annotator's discrimination), and the resamples spread them further.
    """
    gen = make_rng(rng)
    order = np.argsort(k, kind="stable")
    starts = np.searchsorted(k[order], np.arange(m + 1))
    reps: list[FloatArray] = []
    failed = 0
    for _ in range(n_boot):
        draw = gen.integers(0, m, size=m)
        parts = [order[starts[j] : starts[j + 1]] for j in draw]
        sel = np.concatenate(parts)
        kk = np.repeat(np.arange(m), [p.size for p in parts])
        seen = np.zeros(n, dtype=bool)
        seen[a[sel]] = True
        seen[b[sel]] = True
        if not seen.all():
            failed += 1
            continue
        try:
            rep = _fit_am(a[sel], b[sel], kk, w[sel], n, m, confidence, tau, rating_sd)
        except (DegenerateDataError, ConvergenceError):
            failed += 1
            continue
        r = rep.ratings - rep.initial
        reps.append(rep.initial + (r if r @ (fit.ratings - fit.initial) >= 0 else -r))
    if len(reps) < max(20, n_boot // 2):
        raise DegenerateDataError(
            f"only {len(reps)} of {n_boot} bootstrap resamples of the annotators could be "
            "fitted (resamples miss items or separate them); use Wald intervals",
            reason="bootstrap_failed",
        )
    arr = np.asarray(reps)
    q = (1.0 - confidence) / 2.0
    lower, upper = np.quantile(arr, [q, 1.0 - q], axis=0)
    bias = arr.mean(axis=0) - fit.ratings
    lower, upper = lower - bias, upper - bias
    cov = np.atleast_2d(np.cov(arr, rowvar=False))
    return lower, upper, cov, failed


def _slope_bias(
    x: FloatArray,
    g: FloatArray,
    k: IntArray,
    count: FloatArray | None = None,
    x3: FloatArray | None = None,
) -> FloatArray:
    """First-order bias of each annotator's maximum-likelihood slope ``g_k`` in the logistic
    model ``P(w = 1) = sigmoid(g_k x)`` with ``x`` known, shape (n_annotators,):
    ``-sum(x**3 p (1 - p) (1 - 2 p)) / (2 I_k**2)`` with ``I_k = sum(x**2 p (1 - p))``
    (Cox and Snell, 1968), 0 where ``I_k`` is 0. ``count``: how many votes each entry
    stands for (votes aggregated by annotator and pair), 1 if omitted; ``x3``: ``x**3`` if
    the caller has it."""
    m = g.size
    p = expit(g[k] * x)
    v = p * (1.0 - p) if count is None else p * (1.0 - p) * count
    info = np.bincount(k, weights=x * x * v, minlength=m)
    k3 = np.bincount(k, weights=(x**3 if x3 is None else x3) * v * (1.0 - 2.0 * p), minlength=m)
    out: FloatArray = np.where(info > 1e-12, -k3 / (2.0 * np.maximum(info, 1e-12) ** 2), 0.0)
    return out


def _cube(x: FloatArray, _: float) -> FloatArray:
    out: FloatArray = x**3
    return out


def _scale_bias(
    fit: AmEloResult, a: IntArray, b: IntArray, k: IntArray, per_cell: IntArray | None = None
) -> float:
    """Estimated relative bias of the spread of the ratings, ``beta``: fitted rating
    deviations are about ``(1 + beta)`` times the true ones.

    Each annotator's discrimination ``g_k`` is, with the strengths held fixed, the slope of
    a one-parameter logistic model in ``x = s_a - s_b``; its maximum-likelihood estimate
    is biased away from 0 by about ``b_k = -sum(x**3 p (1 - p) (1 - 2 p)) / (2 I_k**2)``,
    ``I_k = sum(x**2 p (1 - p))`` (the Cox and Snell, 1968, bias of a canonical
    one-parameter exponential family: minus half the third cumulant of the sufficient
    statistic over the squared information). Eq. 7 holds the mean discrimination at 1, so
    the ratings absorb the mean bias: ``beta = mean(b_k) / mean(g_k)``. An incidental-
    parameter bias, ``O(1 / votes per annotator)``: about 0.075 at 40 votes, 0.028 at 100
    (``benchmarks/results/bench_coverage.txt``). ``per_cell``: the votes per
    ``(k, a, b)`` cell, flattened, when the caller has counted them already.
    """
    g = fit.discriminations
    ls = fit.log_strengths
    n, m = ls.size, g.size
    if per_cell is not None or m * n * n <= 8 * k.size + (1 << 20):
        # x and p depend only on the (annotator, pair): sum over the distinct ones, each
        # weighted by its number of votes (one count instead of expit on every vote)
        if per_cell is None:
            per_cell = np.bincount((k * n + a) * n + b, minlength=m * n * n)
        cell = np.flatnonzero(per_cell)
        count = per_cell[cell].astype(np.float64)
        ck, ca, cb = cell // (n * n), cell // n % n, cell % n
        bk = _slope_bias(ls[ca] - ls[cb], g, ck, count)
    else:
        # x**3 (a power, ~20 times a product) per ordered pair of items, taken per vote
        bk = _slope_bias(ls[a] - ls[b], g, k, x3=_by_pair(_cube, ls, 0.0, a, b))
    mg = float(np.mean(g))
    beta = float(np.mean(bk)) / mg if abs(mg) > 1e-12 else 0.0
    return max(beta, 0.0) if np.isfinite(beta) else 0.0


def _bias_aware_wald(
    fit: AmEloResult, beta: float, confidence: float
) -> tuple[FloatArray, FloatArray]:
    """Wald intervals widened for the scale bias ``beta``, the bias-aware intervals of
    Armstrong and Kolesar (2020): rating ``i`` has estimated bias
    ``B_i = beta / (1 + beta) (R_i - initial)``, and its interval is
    ``R_i +- cv(|B_i| / se_i) se_i`` where ``cv(t)`` is the ``confidence`` quantile of
    ``|N(t, 1)|`` (``sqrt`` of the noncentral chi-square quantile with 1 degree of freedom
    and noncentrality ``t**2``), so that the interval covers at ``confidence`` whenever the
    bias is at most ``B_i``; centred on the estimate, never narrower than plain Wald."""
    from ranking._special_dist import ncx2_ppf, norm_ppf

    se = fit.rating_standard_errors
    bias = beta / (1.0 + beta) * (fit.ratings - fit.initial)
    t = np.abs(bias) / np.maximum(se, 1e-300)
    cv = np.sqrt(ncx2_ppf(confidence, 1, np.maximum(t * t, 1e-12)))
    cv = np.maximum(cv, float(norm_ppf(0.5 + confidence / 2.0)))
    lower: FloatArray = fit.ratings - cv * se
    upper: FloatArray = fit.ratings + cv * se
    return lower, upper


def _score_z(x: FloatArray, w: FloatArray, k: IntArray, m: int) -> FloatArray:
    """Permutation score statistic of each annotator's ability at 0, standardised.

    ``U = sum x_t (W_t - 1/2)`` with its mean and variance when the annotator's outcomes
    are permuted over its battles (see :func:`null_ability_threshold`); NaN where the
    outcomes or the battles do not vary.
    """
    n = np.bincount(k, minlength=m).astype(np.float64)
    sx = np.bincount(k, weights=x, minlength=m)
    sxx = np.bincount(k, weights=x * x, minlength=m)
    sw = np.bincount(k, weights=w, minlength=m)
    sww = np.bincount(k, weights=w * w, minlength=m)
    sxw = np.bincount(k, weights=x * w, minlength=m)
    return _score_z_from_sums(n, sx, sxx, sw, sww, sxw)


def _score_z_from_sums(
    n: npt.NDArray[Any],
    sx: npt.NDArray[Any],
    sxx: npt.NDArray[Any],
    sw: npt.NDArray[Any],
    sww: npt.NDArray[Any],
    sxw: npt.NDArray[Any],
) -> FloatArray:
    """:func:`_score_z` from each annotator's vote count and sums of ``x``, ``x**2``,
    ``w``, ``w**2`` and ``x w``."""
    safe = np.maximum(n, 1.0)
    var = (
        np.maximum(sxx - sx * sx / safe, 0.0)
        * np.maximum(sww - sw * sw / safe, 0.0)
        / np.maximum(n - 1.0, 1.0)
    )
    u = sxw - 0.5 * sx
    mean = (sw / safe - 0.5) * sx
    out: FloatArray = np.where(var > 1e-12, (u - mean) / np.sqrt(np.maximum(var, 1e-300)), np.nan)
    return out


def _random_threshold(
    th: FloatArray,
    se: FloatArray,
    p_adv: FloatArray | None,
    fraction: float,
    clean: BoolArray | None = None,
) -> float:
    """Ability below which an annotator counts as a random voter.

    From the annotators clearly better than random (one-sided score p > 0.95, so
    ``1 - p < 0.05``), the centre ``mu`` and spread ``sd`` of the honest log-abilities are
    estimated by a truncated normal fit (:func:`_honest_abilities`), so ``sd`` is the
    heterogeneity of honest annotators net of noise and of the selection. The threshold is
    ``exp(mu) * min(0.7, exp(-1.645 sd))``: 70% of the typical ability when annotators are
    alike, the 5% quantile of a log-normal spread when they differ. Without that fit
    (fewer than five clear annotators, or noisy abilities) it is ``fraction`` times the
    median positive ability.
    """
    return _random_test(th, se, p_adv, fraction, clean)[0]


def _honest_abilities(
    th: FloatArray,
    se: FloatArray,
    p_adv: FloatArray | None,
    clean: BoolArray | None,
    se_at: _SeAt | None = None,
) -> tuple[float, float, bool] | None:
    """Centre and spread ``(mu, sd)`` of the honest annotators' log-abilities, and whether
    the predictive test applies; None without a fit.

    Estimated from the annotators clearly better than random (one-sided score p > 0.95)
    and ``clean`` (not flagged by a per-vote test or extra evidence). None with fewer than
    five clear annotators, or when their abilities are noisy (median ``se / theta`` of
    ``_HONEST_MAX_NOISE`` = 0.5 or more, where selecting the clear ones selects lucky
    estimates). When the truncated fit of :func:`_truncated_lognormal_fit` puts a typical
    honest annotator's noise (median ``se`` over ``exp(mu)``) below
    ``_PREDICTIVE_MAX_NOISE`` = 0.7 (about half of the 50-vote studies of 20 and 42
    annotators, most from 100 votes), that fit and the predictive test; otherwise (or with
    ``_RANDOM_PREDICTIVE`` False) the earlier fit on the log scale
    (:func:`_truncated_normal_fit`) and the earlier test.
    """
    if p_adv is None:
        return None
    clear = (th > 0) & (p_adv > 0.95)
    if clean is not None:
        clear &= clean
    if clear.sum() < 5:
        return None
    noise_j = se[clear] / th[clear]
    if float(np.median(noise_j)) >= _HONEST_MAX_NOISE:  # too few votes: the lucky ones
        return None
    if _RANDOM_PREDICTIVE:
        mu, sd = _truncated_lognormal_fit(th[clear], se[clear], 1.645 * se[clear])
        # the noise of a typical honest annotator (the clear ones are the luckier ones)
        if float(np.median(se[clear])) / math.exp(mu) < _PREDICTIVE_MAX_NOISE:
            if se_at is not None:
                # the gate as before (measured with the fit above); the p-values from the
                # fit with the errors at the honest abilities (:class:`_SeAt`). With that
                # fit in the gate too, studies that the log-scale test served better went
                # predictive (bench_flags 200 x 50, sd 0.5, 10% random: 0.53 -> 0.29)
                sub = se_at.subset(clear)
                mu, sd = _truncated_lognormal_fit_at(th[clear], sub, 1.645 * sub.at_zero())
            return mu, sd, True
    # the clear ones are those with theta / se > 1.645: a sample of the honest
    # log-abilities truncated below at log(1.645 se), each with its own noise
    fit = _truncated_normal_fit(np.log(th[clear]), noise_j, np.log(1.645 * se[clear]))
    return (*fit, False)


_HONEST_MAX_NOISE = 0.5
"""Median ``se / theta`` of the clear annotators at or above which :func:`_honest_abilities`
gives no fit (the ``random`` test then compares with ``random_fraction`` times the median).
0.42 before: at 42 x 50 votes a typical study's clear annotators measured 0.428-0.437, so
the fit was off exactly where 50-vote studies sit and the test compared with a tenth of the
median ability. The truncated fit corrects for the selection of the lucky ones; what
justifies 0.5 is that the p-values it gives stay valid (see ``_PREDICTIVE_MAX_NOISE``)."""

_PREDICTIVE_MAX_NOISE = 0.7
"""Noise of a typical honest annotator (median ``se`` of the clear annotators over the
fitted typical ability ``exp(mu)``) below which the predictive ``random`` test is used:
about 0.35-0.6 at 100 votes, 0.47-0.8 at 50 (bench_flags studies). 0.5 before, which kept
the predictive test out of most 50-vote studies. Justified by the predictive p-values'
validity at 50 votes: in honest-only studies (seeded, ``benchmarks/results/bench_flags.txt``,
section rec50) the honest annotators' p-values are not smaller than uniform (one-sided KS
p 0.96-0.98 at 42 x 50 for discrimination sd 0, 0.5, 1.0; share below 0.05 0.010-0.046),
as at 100 votes where the test already ran (0.66-0.98; 0.012-0.048). Why not higher: at
1.0 the test also runs in the noisiest studies, where it is weaker than the earlier test
(bench_flags 42 x 50, sd 0.5, 10% random: recall 0.64 with the earlier test, 0.45 at 0.7,
0.27 at 1.0), and pooled recall at 50 votes was lower than at 0.7. At 200 x 50 (the case
that set 0.5: sd 0.5, 10% random, the predictive test caught 0 of 20 where the earlier
test caught 15), the gates 0.5 / 0.7 caught 362 of 1,101 perturbed annotators in random,
flip and mixed cells, against 321 with 0.42 / 0.5, and flagged 0 honest ones against 4.
Not exact everywhere: at 20 annotators with heterogeneous honest annotators (sd 1.0) the
50-vote p-values' lower tail is too heavy (10.6% below 0.05; 19.4% in the few studies the
old gates let in; 8.0% at 100 votes), the spread being underestimated from 10-15 clear
annotators; honest annotators flagged for any reason stay below 1.5% there."""


_GH_U, _GH_W = np.polynomial.hermite_e.hermegauss(40)
_GH_W = _GH_W / _GH_W.sum()
"""40-point Gauss-Hermite rule (probabilists'), normalised: the expectations over the honest
log-normal where each annotator's error depends on the ability (:class:`_SeAt`, off by default:
:func:`_truncated_lognormal_fit_at` and its predictive p-values). Not accurate where the error is
small next to the spread (section 11 of ``benchmarks/results/bench_verdicts_cpu.txt``); the
default path uses :func:`_lognormal_nodes`."""

_PANEL_T, _PANEL_W = np.polynomial.legendre.leggauss(10)
"""Gauss-Legendre nodes and weights on ``[-1, 1]`` used on every panel of
:func:`_lognormal_nodes`."""

_PANEL_LOG_W = np.log(_PANEL_W)

_PANEL_BULK = np.array([-9.0, -4.0, -1.5, 1.5, 4.0, 9.0])
"""Fixed breakpoints of :func:`_lognormal_nodes` on the standard normal scale ``u``: the
standard normal's bulk (its mass outside ``[-9, 9]``, 2e-19, is left out) in panels short
enough for 10 Gauss-Legendre nodes."""

_PANEL_LEVELS = np.array([-6.0, -3.5, -1.5, 0.0, 1.5, 3.5, 6.0])
"""Breakpoints of :func:`_lognormal_nodes` around an annotator's feature at ``g = c``:
``g = c + k s`` for these ``k`` (those at or below 0 left out), carried to ``u``."""

_PANEL_FAR = 37.0
"""How far out on ``u`` :func:`_lognormal_nodes` follows a feature outside ``[-9, 9]``
(the normal density underflows near 38.5)."""


def _lognormal_nodes(
    c: FloatArray, s: FloatArray, mu: float, sigma: float
) -> tuple[FloatArray, FloatArray]:
    """Per-annotator quadrature for ``E_u[f(u)]``, ``u ~ N(0, 1)``, where ``f`` depends on
    ``g = exp(mu + sigma u)`` through a normal of width ``s_j`` at ``g = c_j`` (a density
    ``phi((c - g) / s)`` or a step ``Phi((g - c) / s)``): nodes ``u`` and log-weights,
    both (annotators, at most 120), the weights including the normal density of ``u``.

    Composite Gauss-Legendre, 10 nodes on each of 12 panels per annotator, between the
    breakpoints ``_PANEL_BULK`` (the normal's bulk) and the images on ``u`` of ``g = c +
    k s`` for ``k`` in ``_PANEL_LEVELS`` (within ``+-_PANEL_FAR``; those at ``g <= 0`` go
    to ``-_PANEL_FAR``, where the panels they make weigh nothing; panels empty in every
    row are left out). Fixed Gauss-Hermite nodes (the rule before, 40 of them) step over
    the feature once ``s`` is small next to ``g sigma`` (from about 100 votes per
    annotator); here the feature always has its own panels, so the rule is accurate from
    ``s / (g sigma)`` of 1e-3 to 10 (``tests/ranking/test_arena_lognormal.py``: the
    density, the selection probability and the predictive p-value against
    ``scipy.integrate.quad``, within 2e-6 relative for spreads up to 3), and its value
    moves smoothly with ``mu`` and ``sigma`` (the breakpoints do).
    """
    n = c.size
    pts = np.empty((n, _PANEL_BULK.size + _PANEL_LEVELS.size))
    pts[:, : _PANEL_BULK.size] = _PANEL_BULK
    lev = pts[:, _PANEL_BULK.size :]
    np.multiply(s[:, None], _PANEL_LEVELS, out=lev)
    lev += c[:, None]
    np.maximum(lev, 0.0, out=lev)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        np.log(lev, out=lev)  # -inf at 0 (then -_PANEL_FAR)
        # below a positive centre, log g = log c + k s / c (g = c exp(k s / c), which is
        # c + k s to first order and stays positive where c + k s does not: the levels
        # then follow the feature down to g = 0 instead of collapsing)
        pos = c > 0.0
        low = _PANEL_LEVELS < 0.0
        lev[np.ix_(pos, low)] = (
            np.log(c[pos])[:, None] + (s[pos] / c[pos])[:, None] * _PANEL_LEVELS[low]
        )
        lev -= mu
        lev /= sigma
    np.clip(lev, -_PANEL_FAR, _PANEL_FAR, out=lev)
    pts.sort(axis=1)
    half = 0.5 * (pts[:, 1:] - pts[:, :-1])
    mid = 0.5 * (pts[:, 1:] + pts[:, :-1])
    used = np.flatnonzero(half.any(axis=0))  # panels empty in every row left out
    if used.size < half.shape[1]:
        half, mid = half[:, used], mid[:, used]
    u = (mid[:, :, None] + half[:, :, None] * _PANEL_T).reshape(n, -1)
    with np.errstate(divide="ignore"):  # empty panels: weight 0
        log_w = (np.log(half)[:, :, None] + _PANEL_LOG_W).reshape(n, -1)
    q = u * u
    q *= 0.5
    q += _LOG_SQRT_2PI
    log_w -= q
    return u, log_w


def _lognormal_terms(
    y: FloatArray, s: FloatArray, lo: FloatArray, mu: float, sigma: float
) -> tuple[FloatArray, FloatArray]:
    """Each annotator's log density ``log(E_g[phi((y - g) / s)] / s)`` and selection
    probability ``E_g[Phi((g - lo) / s)]``, ``g ~ LN(mu, sigma**2)`` (:func:`_lognormal_nodes`;
    the density in log space, so it does not underflow)."""
    from scipy.special import ndtr

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        u, log_w = _lognormal_nodes(y, s, mu, sigma)
        z = (y[:, None] - np.exp(mu + sigma * u)) / s[:, None]
        h = log_w - 0.5 * z * z
        top = h.max(axis=1)
        log_a = np.log(np.exp(h - top[:, None]).sum(axis=1)) + top - np.log(s) - _LOG_SQRT_2PI
        u, log_w = _lognormal_nodes(lo, s, mu, sigma)
        x = (np.exp(mu + sigma * u) - lo[:, None]) / s[:, None]
        keep = (np.exp(log_w) * ndtr(x)).sum(axis=1)
    return log_a, keep


def _truncated_lognormal_fit(
    y: FloatArray, se: FloatArray, lower: FloatArray
) -> tuple[float, float]:
    """``(mu, sigma)`` of ``g ~ LN(mu, sigma**2)`` from ``y_j = g_j + e_j``,
    ``e_j ~ N(0, se_j**2)``, observed only where ``y_j > lower_j``.

    Maximum likelihood of the normal measurement-error model truncated from below (Hausman
    and Wise, 1977) on the ability scale itself: ``y_j`` has density
    ``E_g[phi((y_j - g) / se_j)] / se_j / E_g[Phi((g - lower_j) / se_j)]``, the
    expectations over the log-normal by each annotator's own composite Gauss-Legendre rule
    (:func:`_lognormal_nodes`: panels around ``g = y_j`` for the density and ``g =
    lower_j`` for the selection). The earlier fit (:func:`_truncated_normal_fit`) put the
    noise on ``log theta`` by the delta method, which at ``theta / se`` of 2-4 (the clear
    annotators at 50-100 votes) is skewed and too small below: it overstated the spread and
    understated the centre (bench_flags, 200 x 100 votes, sd 0.5: sd 0.79, centre 0.0028
    against a median honest ability of 0.0050), so random voters looked like the honest
    lower tail. As before, ``sigma`` is kept at most 3 (and at least
    ``_LOGNORMAL_MIN_SIGMA``) and ``exp(mu)`` at most the median of ``y`` (the likelihood is
    flat when few values sit far above the cut).

    Until session 12 the expectations used 40 fixed Gauss-Hermite nodes, which step over
    the density once ``se`` is small next to ``g sigma`` (from about 100 votes per
    annotator): the likelihood was then off by up to 1,077 in log (2,500 annotators x 1,000
    votes) and had several local optima, one of which Nelder-Mead's path picked. With the
    integrals accurate (about 1e-6 relative or better, checked against
    ``scipy.integrate.quad``) the likelihood is smooth, and the fit is projected Newton
    from the start (:func:`_lognormal_newton`: the log median and the noise-corrected
    robust spread of ``log y``, :func:`_lognormal_start`), checked against a grid search of
    the quad likelihood; should Newton fail, Nelder-Mead in ``(mu, log sigma)`` from the
    start (above ``_LOGNORMAL_SUBSAMPLE`` annotators from an evenly spaced subsample's fit,
    :func:`_lognormal_nelder_mead`), and should that fail too, the start.
    """
    y = np.asarray(y, dtype=np.float64)
    s = np.asarray(se, dtype=np.float64)
    lo = np.asarray(lower, dtype=np.float64)
    med = float(np.median(np.log(y)))
    start = _lognormal_start(y, s, lo)
    found = _lognormal_newton(y, s, lo, float(start[0]), math.exp(float(start[1])))
    if found is not None:
        mu, sigma = found
    else:
        mu, log_sigma, _ = _lognormal_nelder_mead(y, s, lo, start)
        sigma = math.exp(log_sigma)
    return min(mu, med), min(sigma, 3.0)


def _lognormal_nelder_mead(
    y: FloatArray,
    s: FloatArray,
    lo: FloatArray,
    start: FloatArray,
    *,
    xatol: float = 1e-6,
    fatol: float = 1e-9,
) -> tuple[float, float, bool]:
    """``(mu, log sigma)`` maximising the likelihood of :func:`_truncated_lognormal_fit` by
    Nelder-Mead in ``(mu, log sigma)`` from ``start`` (its fallback should Newton fail)
    and True, or the start and False should it fail (the
    subsample's fit, if there was one). Above ``_LOGNORMAL_SUBSAMPLE`` annotators it starts
    from the fit of an evenly spaced subsample of them (to xatol 1e-6) with a small simplex;
    ``xatol`` and ``fatol`` are those of the final (full) fit."""
    from scipy.optimize import Bounds, minimize

    options: dict[str, Any] = {"xatol": 1e-6, "fatol": 1e-9}
    # sigma at least _LOGNORMAL_MIN_SIGMA: when the honest annotators are alike the
    # likelihood keeps rising, ever more slowly, as sigma goes to 0, and Nelder-Mead walks
    # down log sigma for hundreds of evaluations; a spread of 0.01% of the ability is no
    # spread for the predictive p-values (bench_flags' grid: the same verdicts).
    bounds = Bounds([-np.inf, math.log(_LOGNORMAL_MIN_SIGMA)], [np.inf, np.inf])
    if y.size > _LOGNORMAL_SUBSAMPLE:
        # Many annotators (10,000 at 10M battles): Nelder-Mead's few hundred evaluations
        # over (annotators x 40) points cost seconds. Fit an evenly spaced subsample of
        # the sorted values first and start the full fit there with a small simplex: the
        # same optimum (to xatol), a fraction of the full evaluations.
        pick = np.argsort(y, kind="stable")[
            np.linspace(0, y.size - 1, _LOGNORMAL_SUBSAMPLE // 2).round().astype(np.int64)
        ]
        first = _lognormal_start(y[pick], s[pick], lo[pick])
        sub = minimize(
            _lognormal_nll(y[pick], s[pick], lo[pick]),
            first,
            method="Nelder-Mead",
            bounds=bounds,
            options=options,
        )
        if sub.success and np.all(np.isfinite(sub.x)):
            start = np.asarray(sub.x, dtype=np.float64)
            options["initial_simplex"] = start + np.array([[0.0, 0.0], [0.05, 0.0], [0.0, 0.05]])
    options["xatol"], options["fatol"] = xatol, fatol
    res = minimize(
        _lognormal_nll(y, s, lo), start, method="Nelder-Mead", bounds=bounds, options=options
    )
    ok = bool(res.success and np.all(np.isfinite(res.x)))
    mu, log_sigma = (res.x if ok else start).tolist()
    return float(mu), float(log_sigma), ok


def _lognormal_derivatives(
    y: FloatArray, s: FloatArray, lo: FloatArray, mu: float, sigma: float
) -> tuple[float, FloatArray, FloatArray] | None:
    """The negative log-likelihood of :func:`_truncated_lognormal_fit` at ``(mu, sigma)``,
    its gradient (2,) and Hessian (2, 2) in ``(mu, sigma)``; None where it is not finite
    or a truncation probability is below 1e-280 (no reliable derivatives there).

    With each annotator's nodes ``u_i`` and weights ``w_i`` (:func:`_lognormal_nodes`,
    around ``y_j`` for the density and ``lo_j`` for the selection), ``g_i = exp(mu + sigma
    u_i)``, ``A_j = sum_i w_i phi(z_ij)``, ``z_ij = (y_j - g_i) / s_j``, and ``B_j = sum_i
    w_i Phi(x_ij)``, ``x_ij = (g_i - lo_j) / s_j``, the likelihood is ``-sum_j (log A_j -
    log s_j - log B_j)`` (the value of :func:`_lognormal_nll`; ``phi`` is taken in log
    space relative to the largest term of each row, so ``A_j`` does not underflow). The
    derivatives are those of the integrals, under the integral sign at the same nodes: by
    the chain rule through ``g``, ``d phi(z) / dg = phi z / s``, ``d2 phi(z) / dg2 = phi
    (z**2 - 1) / s**2``, ``d Phi(x) / dg = phi(x) / s``, ``d2 Phi(x) / dg2 = -x phi(x) /
    s**2``; ``dg / dmu = g``, ``dg / dsigma = g u``, and ``d2 g`` is ``g``, ``g u``, ``g
    u**2`` (mu mu, mu sigma, sigma sigma). Checked against finite differences of
    ``scipy.integrate.quad``'s likelihood in ``tests/ranking/test_arena_lognormal.py``.
    """
    from scipy.special import ndtr

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        u, log_w = _lognormal_nodes(y, s, mu, sigma)
        g = np.exp(mu + sigma * u)
        if not np.all(np.isfinite(g)):
            return None
        sc = s[:, None]
        z = (y[:, None] - g) / sc
        h = log_w - 0.5 * z * z
        top = h.max(axis=1)
        e = np.exp(h - top[:, None])  # w phi(z) relative to the row's largest term
        a_rel = e.sum(axis=1)
        log_a = np.log(a_rel) + top - _LOG_SQRT_2PI
        q = e * z
        q *= g  # w phi(z) z g: times 1, u, u**2 for d2 g (mu mu, mu sigma, sigma sigma)
        a1 = _row_moments(q, u) / (s * a_rel)[:, None]
        z *= z
        z -= 1.0
        z *= e
        z *= g
        z *= g  # w phi(z) (z**2 - 1) g**2: times 1, u, u**2 for dg dg
        a2 = _row_moments(z, u) / (s * s * a_rel)[:, None]
        u, log_w = _lognormal_nodes(lo, s, mu, sigma)
        g = np.exp(mu + sigma * u)
        if not np.all(np.isfinite(g)):
            return None
        w = np.exp(log_w)
        x = (g - lo[:, None]) / sc
        big = (w * ndtr(x)).sum(axis=1)
        if not (np.all(np.isfinite(a_rel)) and np.all(big > 1e-280)):
            return None
        f = -float(np.sum(log_a - np.log(s) - np.log(big)))
        q = x * x
        q *= -0.5
        np.exp(q, out=q)
        q *= w
        q *= g
        q /= _SQRT_2PI  # w phi(x) g
        b1 = _row_moments(q, u) / (s * big)[:, None]
        q *= x
        q *= g  # w phi(x) x g**2
        b2 = -_row_moments(q, u) / (s * s * big)[:, None]
    ga, gb = a1[:, :2], b1[:, :2]
    grad = -(ga.sum(axis=0) - gb.sum(axis=0))
    ha = (a1 + a2).sum(axis=0) - np.array(
        [ga[:, 0] @ ga[:, 0], ga[:, 0] @ ga[:, 1], ga[:, 1] @ ga[:, 1]]
    )
    hb = (b1 + b2).sum(axis=0) - np.array(
        [gb[:, 0] @ gb[:, 0], gb[:, 0] @ gb[:, 1], gb[:, 1] @ gb[:, 1]]
    )
    hv = -(ha - hb)
    hess = np.array([[hv[0], hv[1]], [hv[1], hv[2]]])
    if not (math.isfinite(f) and np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
        return None
    return f, grad, hess


def _row_moments(q: FloatArray, u: FloatArray) -> FloatArray:
    """``sum_i q_ji u_ji**k`` for ``k`` = 0, 1, 2, per row ``j``: shape (rows, 3)."""
    out = np.empty((q.shape[0], 3))
    out[:, 0] = q.sum(axis=1)
    q = q * u
    out[:, 1] = q.sum(axis=1)
    q *= u
    out[:, 2] = q.sum(axis=1)
    return out


def _lognormal_newton(
    y: FloatArray, s: FloatArray, lo: FloatArray, mu: float, sigma: float
) -> tuple[float, float] | None:
    """The optimum ``(mu, sigma)`` of :func:`_truncated_lognormal_fit`'s likelihood with
    ``sigma >= _LOGNORMAL_MIN_SIGMA`` by projected Newton (Bertsekas, 1982) from ``(mu,
    sigma)``; None unless it converges within ``_NEWTON_MAX_ITER`` iterations.

    Each step solves the Hessian (its eigenvalues taken in absolute value and kept above
    1e-10 of the largest, so the step descends where it is not positive definite; ``sigma``
    left out of the step while it sits at its bound with the gradient pushing it below),
    at most 1 long in either coordinate, then halves until the likelihood does not rise
    (projecting ``sigma`` onto its bound). The likelihood is even in ``sigma`` (``u`` and
    ``-u`` alike), so near ``sigma = 0`` it is about quadratic in ``sigma`` and the
    alike-annotators case (optimum at the bound) is reached in a step or two. Converged
    once the full Newton step of the free coordinates is below 1e-9 in both (``sigma``'s
    relative to itself when larger than 1), or below ``_NEWTON_LAST_STEP`` where the
    Hessian is positive definite: that step is then taken without another evaluation.
    """
    floor = _LOGNORMAL_MIN_SIGMA
    sigma = max(sigma, floor)
    cur = _lognormal_derivatives(y, s, lo, mu, sigma)
    if cur is None:
        return None
    for _ in range(_NEWTON_MAX_ITER):
        f, grad, hess = cur
        active = sigma <= floor and grad[1] > 0.0
        if active:
            step = np.array([-grad[0] / abs(hess[0, 0]) if hess[0, 0] != 0.0 else 0.0, 0.0])
            convex = hess[0, 0] > 0.0
        else:
            vals, vecs = np.linalg.eigh(hess)
            convex = bool(vals.min() > 0.0)
            vals = np.maximum(np.abs(vals), 1e-10 * max(float(np.abs(vals).max()), 1e-300))
            step = -(vecs @ ((vecs.T @ grad) / vals))
        if not np.all(np.isfinite(step)):
            return None
        size = abs(float(step[0])), abs(float(step[1])) / max(1.0, sigma)
        if max(size) <= 1e-9:
            return mu, sigma
        if max(size) <= _NEWTON_LAST_STEP and convex:
            # quadratic convergence: the step's own error is of the order of its square
            return mu + float(step[0]), max(sigma + float(step[1]), floor)
        step /= max(1.0, float(np.abs(step).max()))
        t = 1.0
        while True:
            mu_new, sigma_new = mu + t * float(step[0]), max(sigma + t * float(step[1]), floor)
            new = _lognormal_derivatives(y, s, lo, mu_new, sigma_new)
            if new is not None and new[0] <= f + 1e-12 * max(1.0, abs(f)):
                break
            t *= 0.5
            if t < 1e-10:
                return None
        mu, sigma, cur = mu_new, sigma_new, new
    return None


_NEWTON_MAX_ITER = 100

_NEWTON_LAST_STEP = 1e-6
"""A Newton step this small (in ``mu`` and ``sigma``) at a positive definite Hessian is the
last one (:func:`_lognormal_newton`); it saves an evaluation of the derivatives, a sixth
of the fit's cost (the step after it was 1e-12 or less on the report's study)."""
"""Iterations of :func:`_lognormal_newton` before it gives up (Nelder-Mead then)."""


_LOGNORMAL_SUBSAMPLE = 2000
"""Above this many annotators, :func:`_truncated_lognormal_fit` starts from a subsample's fit."""

_LOGNORMAL_MIN_SIGMA = 1e-4
"""The smallest spread (sd of log ability) :func:`_truncated_lognormal_fit` returns."""


def _lognormal_start(y: FloatArray, s: FloatArray, lo: FloatArray) -> FloatArray:
    """The start of :func:`_truncated_lognormal_fit`: the log median and the
    noise-corrected robust spread of ``log y``."""
    ly = np.log(y)
    med = float(np.median(ly))
    mad = 1.4826 * float(np.median(np.abs(ly - med)))
    sd0 = math.sqrt(max(mad**2 - float(np.median((s / y) ** 2)), 0.0))
    return np.array([med, math.log(max(sd0, 0.05))])


def _lognormal_nll(y: FloatArray, s: FloatArray, lo: FloatArray) -> Callable[[FloatArray], float]:
    """The negative log-likelihood of :func:`_truncated_lognormal_fit` in ``(mu, log sigma)``:
    ``-sum(log(E[phi(z)] / s) - log(E[Phi(x)]))`` (``z = (y - g) / s``, ``x = (g - lo) /
    s``), the expectations by :func:`_lognormal_terms` (each annotator's own nodes, the
    density in log space, so it does not underflow; the selection probability kept at
    least 1e-300 as before)."""
    y = np.asarray(y, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)

    def nll(par: FloatArray) -> float:
        log_a, keep = _lognormal_terms(y, s, lo, float(par[0]), math.exp(float(par[1])))
        return float(-np.sum(log_a - np.log(np.maximum(keep, 1e-300))))

    return nll


_SQRT_2PI = np.sqrt(2 * np.pi)
"""scipy.stats' ``_norm_pdf_C``."""

_SE_AT_ABILITY = False
"""True: the predictive ``random`` test reads each annotator's standard error at the ability
it is compared with (:class:`_SeAt`), not at its own estimate (bench_flags
``--se-at-ability``). Off by default: built and measured (benchmarks/results/bench_flags.txt,
section "rec", 2026-11-24), it raises recall where the honest annotators are alike (42 x 50
votes, sd 0, 10% random: 0.50 -> 0.61 over 50 studies; 200 x 50, 25% mixed: 0.74 -> 0.88)
but the honest annotators' predictive p-values lose their validity at 50 votes when they
differ (share below 0.05 in honest-only studies, bench_flags --honest-p 40: 42 x 50 sd 1.0
3.7% -> 8.7%, 20 x 50 sd 0.5 7.5% -> 11.9%): the centre is no longer biased low, and the
spread fitted from 10-40 clear annotators is too small for the lower tail. A rule whose
p-values are not valid may not enter Benjamini-Hochberg, so the default stays the error at
the estimate."""

_SD_INFLATE = 1.645 / math.sqrt(2.0)
"""With :class:`_SeAt`, the predictive p-values read the honest spread at its one-sided 95%
upper bound, ``sd (1 + _SD_INFLATE / sqrt(n_clear))`` (the normal-theory bound of a
standard deviation from ``n_clear`` values, ``z / sqrt(2 n)``): a plug-in spread from 20-40
clear annotators is too small about half the time, and an honest annotator in the lower
tail then looks random. Measured (bench_flags --honest-p 40, 42 x 50, discrimination sd
1.0): 7.4% of honest p-values below 0.05 without it, 5.6% with it (2.0 instead of
1.163: 4.5%); where honest annotators are alike (sd 0) the fitted spread is near 0 and
the bound with it."""

_SE_GRID = np.exp(np.linspace(math.log(1e-3), math.log(1e3), 121))
"""Discriminations ``n_fit * theta`` on which :class:`_SeAt` tabulates the information."""

_SE_BINS = 64
"""Quantile bins of ``|x|`` (the fitted log-strength gaps) for :class:`_SeAt`."""


@dataclass(frozen=True)
class _SeAt:
    """Each judged annotator's ability standard error as a function of its ability.

    An annotator's information about its ability ``theta`` is
    ``I(theta) = sum_t (M x_t)**2 s'(M theta x_t)`` (``x_t`` the fitted log-strength gap of
    its vote ``t``, ``M`` the fitted annotators, ``s'`` the logistic density: the Bernoulli
    likelihood of am-ELO, ties as half a win). It falls as ``|theta|`` grows (votes of a
    sharp annotator are nearly certain), so the standard error reported at an annotator's
    estimate is larger for a lucky high estimate and smaller for one near 0: read at the
    estimate, the clear annotators' errors rise with their estimates (correlation 0.5-0.98
    at 42 x 50 votes) and the honest centre fitted from them came out 25-40% low (bench_flags
    42 x 50, sd 0: ``exp(mu)`` 0.017-0.021 against a median honest estimate of 0.026-0.030),
    so random voters' predictive p-values were about ten times too large. Here the reported
    ``se`` is carried to another ability by the information ratio:
    ``se(g) = se * sqrt(I(|theta_hat|) / I(g))`` (the ratio keeps the priors' and the
    ratings' share of the reported error), ``I`` tabulated on ``_SE_GRID`` over ``_SE_BINS``
    quantile bins of ``|x|`` and interpolated linearly in ``log I`` against ``log``
    discrimination."""

    log_info: FloatArray  # (annotators, grid)
    log_se_hat: FloatArray  # log se + 0.5 log I(|theta_hat|), per annotator
    n_fit: int
    theta_hat: FloatArray  # the estimates

    @staticmethod
    def of(
        ls: FloatArray, a: IntArray, b: IntArray, k: IntArray, ids: IntArray,
        th: FloatArray, se: FloatArray, m: int, n_fit: int,
    ) -> _SeAt:  # fmt: skip
        """The profile of annotators ``ids`` (estimates ``th``, errors ``se``) from their
        votes ``a, b, k`` (``m`` annotator slots) under log-strengths ``ls``."""
        x = np.abs(ls[a] - ls[b])
        edges: FloatArray = (
            np.quantile(x, np.linspace(0.0, 1.0, _SE_BINS + 1)[1:-1]) if x.size else np.zeros(0)
        )
        bins = np.searchsorted(edges, x)
        key = k * _SE_BINS + bins
        cnt = np.bincount(key, minlength=m * _SE_BINS).reshape(m, _SE_BINS)[ids]
        tot = np.bincount(bins, weights=x, minlength=_SE_BINS)
        centre = tot / np.maximum(np.bincount(bins, minlength=_SE_BINS), 1)
        z = _SE_GRID[:, None] * centre[None, :]  # (grid, bins)
        dens = np.exp(-np.abs(z)) / (1.0 + np.exp(-np.abs(z))) ** 2
        info = cnt.astype(np.float64) @ ((centre**2)[None, :] * dens).T  # (ids, grid)
        log_info = np.log(np.maximum(info, 1e-300))
        prof = _SeAt(log_info, np.zeros(ids.size), n_fit, th)
        lse = np.log(np.maximum(se, 1e-300)) + 0.5 * prof._log_i(np.abs(th)[:, None])[:, 0]
        return _SeAt(log_info, lse, n_fit, th)

    def _log_i(self, theta: FloatArray) -> FloatArray:
        """``log I`` of every annotator at abilities ``theta`` (shape (annotators, nodes) or
        broadcastable), linear in ``log`` discrimination, held at the grid's ends."""
        lg = np.log(_SE_GRID)
        t = np.log(np.clip(np.abs(theta) * self.n_fit, _SE_GRID[0], _SE_GRID[-1]))
        pos = (t - lg[0]) / (lg[1] - lg[0])
        i0 = np.clip(np.floor(pos).astype(np.int64), 0, lg.size - 2)
        f = pos - i0
        rows = np.arange(self.log_info.shape[0])[:, None]
        i0b = np.broadcast_to(i0, np.broadcast_shapes(i0.shape, (self.log_info.shape[0], 1)))
        fb = np.broadcast_to(f, i0b.shape)
        out: FloatArray = (1.0 - fb) * self.log_info[rows, i0b] + fb * self.log_info[rows, i0b + 1]
        return out

    def at(self, g: FloatArray) -> FloatArray:
        """Standard errors at abilities ``g`` (1-D), shape (annotators, g.size)."""
        out: FloatArray = np.exp(self.log_se_hat[:, None] - 0.5 * self._log_i(g[None, :]))
        return out

    def signed_root(self, g: FloatArray) -> FloatArray:
        """The error that makes ``(theta_hat - g) / error`` the signed root of the
        likelihood ratio of the estimate against ability ``g`` when the information runs
        linearly between them: ``1 / sqrt((2 I(g) + I(theta_hat)) / 3)``, in units of the
        reported error (``log L(theta_hat) - log L(g) = (theta_hat - g)**2 (2 I(g) +
        I(theta_hat)) / 6``). Between the error at ``g`` and at the estimate: for a random
        voter, whose estimate is near 0 where the information is highest, the Wald error at
        ``g`` understates its evidence and the one at the estimate overstates it."""
        inv_g = 1.0 / np.maximum(self.at(g), 1e-300) ** 2
        s_hat = np.exp(self.log_se_hat - 0.5 * self._log_i(self.theta_hat[:, None])[:, 0])
        inv_hat = 1.0 / np.maximum(s_hat, 1e-300) ** 2
        out: FloatArray = 1.0 / np.sqrt((2.0 * inv_g + inv_hat[:, None]) / 3.0)
        return out

    def at_zero(self) -> FloatArray:
        """Standard errors at ability 0, shape (annotators,)."""
        return self.at(np.zeros(1))[:, 0]

    def subset(self, keep: BoolArray) -> _SeAt:
        return _SeAt(self.log_info[keep], self.log_se_hat[keep], self.n_fit, self.theta_hat[keep])


def _truncated_lognormal_fit_at(
    y: FloatArray, se_at: _SeAt, lower: FloatArray
) -> tuple[float, float]:
    """:func:`_truncated_lognormal_fit` with each annotator's error read at the ability of
    each quadrature node (``se_at.at(g)``) instead of at its estimate; ``lower`` fixed per
    annotator (the clear annotators are those whose score test at 0 passes: ``1.645`` times
    the error at 0). The same bounds, caps and start; above ``_LOGNORMAL_SUBSAMPLE``
    annotators, an evenly spaced subsample of the sorted values."""
    from scipy.optimize import Bounds, minimize
    from scipy.special import ndtr

    y = np.asarray(y, dtype=np.float64)
    lo = np.asarray(lower, dtype=np.float64)
    if y.size > _LOGNORMAL_SUBSAMPLE:
        pick = np.argsort(y, kind="stable")[
            np.linspace(0, y.size - 1, _LOGNORMAL_SUBSAMPLE).round().astype(np.int64)
        ]
        keep = np.zeros(y.size, dtype=bool)
        keep[pick] = True
        y, lo, se_at = y[keep], lo[keep], se_at.subset(keep)
    med = float(np.median(np.log(y)))
    # the errors at the estimates themselves (the reported ones), for the start's spread
    s_hat = np.exp(se_at.log_se_hat - 0.5 * se_at._log_i(y[:, None])[:, 0])
    start = _lognormal_start(y, s_hat, lo)

    def nll(par: FloatArray) -> float:
        g = np.exp(float(par[0]) + math.exp(float(par[1])) * _GH_U)
        s = np.maximum(se_at.signed_root(g), 1e-300)  # (annotators, nodes)
        z = (y[:, None] - g[None, :]) / s
        dens = (np.exp(-(z**2) / 2.0) / _SQRT_2PI / s) @ _GH_W
        keep = ndtr((g[None, :] - lo[:, None]) / s) @ _GH_W
        return float(-np.sum(np.log(np.maximum(dens, 1e-300)) - np.log(np.maximum(keep, 1e-300))))

    bounds = Bounds([-np.inf, math.log(_LOGNORMAL_MIN_SIGMA)], [np.inf, np.inf])
    res = minimize(
        nll, start, method="Nelder-Mead", bounds=bounds, options={"xatol": 1e-6, "fatol": 1e-9}
    )
    mu, log_sigma = (res.x if res.success and np.all(np.isfinite(res.x)) else start).tolist()
    return min(mu, med), min(math.exp(log_sigma), 3.0)


_RANDOM_PREDICTIVE = True
"""``random`` p-values from the honest annotators' ability distribution (predictive);
False: the earlier test of ``theta`` against the threshold alone (bench_flags A/B)."""


def _random_test(
    th: FloatArray,
    se: FloatArray,
    p_adv: FloatArray | None,
    fraction: float,
    clean: BoolArray | None = None,
    se_at: _SeAt | None = None,
) -> tuple[float, FloatArray, str]:
    """The ``random`` threshold (:func:`_random_threshold`), each annotator's p-value and
    which test gave it (``StableArenaResult.random_test``: ``"predictive"``,
    ``"log-scale"`` or ``"median"``).

    With the honest abilities' log-normal fit ``(mu, sd)`` (:func:`_honest_abilities`),
    the p-value is predictive: the probability that an honest annotator, its ability
    drawn from ``LN(mu, sd**2)`` and estimated with this annotator's standard error
    ``se_j``, gets an estimate at most ``theta_j``:
    ``p_j = E_g[Phi((theta_j - g) / se_j)]``, ``g = exp(mu + sd u)``, ``u ~ N(0, 1)``
    (each annotator's composite Gauss-Legendre rule around ``g = theta_j``,
    :func:`_lognormal_nodes`; 40-point Gauss-Hermite before session 12, which made ``p_j`` a
    staircase in ``theta_j`` where ``se_j`` is small next to ``g sd``; still so with
    :class:`_SeAt`, off by default). Uniform for an honest annotator (when ``mu``, ``sd`` are
    right), so Benjamini-Hochberg across annotators bounds the false flags; small for an
    annotator whose estimate sits below what honest heterogeneity and noise explain.
    This is the test of bench_flags_bounds' oracle (the honest annotators' distribution
    of the statistic) with the fitted ratings. The earlier test, ``theta_j`` significantly
    below the threshold (``Phi((theta_j - t0) / se_j)``), asked a random voter to be
    below the 5% quantile by a significant margin, and missed half the random voters at
    100 votes that the oracle catches (bench_flags, 200 x 100, sd 0.5, 10% random:
    recall 0.49). Without the fit, the earlier test on ``fraction`` times the median.
    """
    from scipy.special import ndtr

    from ranking._special_dist import norm_cdf

    fit = _honest_abilities(th, se, p_adv, clean, se_at)
    safe_se = np.maximum(se, 1e-300)
    if fit is None:
        pos = th > 0
        t0 = fraction * float(np.median(th[pos])) if pos.any() else 0.0
        out: FloatArray = norm_cdf((th - t0) / safe_se)
        return t0, out, "median"
    mu, sd, predictive = fit
    t0 = math.exp(mu) * min(0.7, math.exp(-1.645 * sd))
    if not predictive:
        return t0, norm_cdf((th - t0) / safe_se), "log-scale"
    if se_at is not None and _SD_INFLATE:
        clear = (th > 0) & (p_adv > 0.95) if p_adv is not None else th > 0
        n_clear = int((clear & (True if clean is None else clean)).sum())
        sd = sd * (1.0 + _SD_INFLATE / math.sqrt(max(n_clear, 1)))
    if se_at is None:
        u, log_w = _lognormal_nodes(th, safe_se, mu, sd)
        with np.errstate(over="ignore"):
            g_u = np.exp(mu + sd * u)
        p: FloatArray = np.minimum(
            (np.exp(log_w) * ndtr((th[:, None] - g_u) / safe_se[:, None])).sum(axis=1), 1.0
        )
        return t0, p, "predictive"
    g = np.exp(mu + sd * _GH_U)
    s_g = np.maximum(se_at.signed_root(g), 1e-300)
    p = norm_cdf((th[:, None] - g[None, :]) / s_g) @ _GH_W
    return t0, p, "predictive"


_LOG_SQRT_2PI = float(np.log(np.sqrt(2 * np.pi)))
"""``log(sqrt(2 pi))``, computed as scipy.stats.norm computes it."""


def _norm_logpdf(x: FloatArray) -> FloatArray:
    """``scipy.stats.norm.logpdf(x)``, the same numbers (its formula, ``-x**2 / 2 -
    log(sqrt(2 pi))``) without the distribution's argument handling, which costs more
    than the formula on a few hundred values (Nelder-Mead calls it about a hundred times
    per fit)."""
    out: FloatArray = -(x**2) / 2.0 - _LOG_SQRT_2PI
    return out


def _norm_logsf(x: FloatArray) -> FloatArray:
    """``scipy.stats.norm.logsf(x)``, the same numbers (``log_ndtr(-x)``, its formula)."""
    out: FloatArray = log_ndtr(-x)
    return out


def _truncated_normal_fit(
    y: FloatArray, noise: FloatArray, lower: FloatArray
) -> tuple[float, float]:
    """Mean and sd of ``x ~ N(mu, sigma**2)`` from ``y_j = x_j + e_j``,
    ``e_j ~ N(0, noise_j**2)``, observed only where ``y_j > lower_j``.

    The maximum-likelihood fit of a normal measurement-error model truncated from below
    (the truncated normal regression of Hausman and Wise, 1977, Econometrica 45, 919-938):
    each ``y_j`` has density ``phi((y_j - mu) / s_j) / s_j / (1 - Phi((lower_j - mu) / s_j))``
    with ``s_j**2 = sigma**2 + noise_j**2``.

    The robust spread of the selected ``y`` alone (1.4826 MAD, the earlier rule)
    underestimates ``sigma`` and overestimates ``mu``: selecting the annotators clearly
    better than random cuts off the lower tail of the honest abilities, which put the
    random threshold near most of the typical ability when honest abilities vary
    (bench_flags, discrimination sd 1.0: up to 10 of 120 honest annotators flagged random
    in a cell, 20 annotators x 100 votes). The likelihood is flat when few values sit far
    above the cut, so the estimates are kept in the range of the data: ``sigma`` at most
    3, ``mu`` at most the median of ``y``. Should Nelder-Mead not converge, the starting
    values are used: the median of ``y`` and its noise-corrected robust spread (the
    earlier rule), which puts the threshold higher (more random flags), as before this fit.
    """
    from scipy.optimize import minimize

    y = np.asarray(y, dtype=np.float64)
    n2 = np.asarray(noise, dtype=np.float64) ** 2
    lo = np.asarray(lower, dtype=np.float64)
    med = float(np.median(y))
    mad = 1.4826 * float(np.median(np.abs(y - med)))
    sd0 = math.sqrt(max(mad**2 - float(np.median(n2)), 0.0))
    start = np.array([med, math.log(max(sd0, 0.05))])

    def nll(par: FloatArray) -> float:
        mu, sigma = float(par[0]), math.exp(float(par[1]))
        s_j = np.sqrt(sigma**2 + n2)
        keep = _norm_logsf((lo - mu) / s_j)
        return float(-np.sum(_norm_logpdf((y - mu) / s_j) - np.log(s_j) - keep))

    res = minimize(nll, start, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-9})
    mu, log_sigma = (res.x if res.success and np.all(np.isfinite(res.x)) else start).tolist()
    sigma = min(math.exp(log_sigma), 3.0)
    return min(mu, med), sigma


def _mirror(fit: AmEloResult) -> AmEloResult:
    """The same fit with the direction of the ranking reversed (abilities sum to -1)."""
    c = fit.initial
    lower, upper = 2.0 * c - fit.upper, 2.0 * c - fit.lower
    return replace(
        fit,
        ratings=2.0 * c - fit.ratings,
        lower=lower,
        upper=upper,
        ranks=ranks_from_intervals(lower, upper),
        abilities=-fit.abilities,
        discriminations=-fit.discriminations,
    )


def _identifies(a: IntArray, b: IntArray, n: int) -> bool:
    """Whether battles cover every item and connect them all."""
    if a.size == 0:
        return False
    seen = np.zeros(n, dtype=bool)
    seen[a] = True
    seen[b] = True
    if not seen.all():
        return False
    # the graph on the distinct pairs (a count per pair when the pair space is small,
    # else a sort): the same components as on every battle, without a 1M-edge matrix
    key = a.astype(np.int64) * n + b
    if n * n <= 8 * key.size + (1 << 20):
        pairs = np.flatnonzero(np.bincount(key, minlength=n * n))
    else:
        pairs = np.unique(key)
    graph = sparse.coo_matrix((np.ones(pairs.size), (pairs // n, pairs % n)), shape=(n, n))
    return int(csgraph.connected_components(graph, directed=False)[0]) == 1


def _median_disagrees(
    ls: FloatArray,
    a: IntArray,
    b: IntArray,
    w: FloatArray,
    k: IntArray,
    m: int,
    skip: BoolArray | None = None,
) -> bool:
    """Whether the median annotator votes against the ranking ``ls``.

    Each annotator with decisive votes gets its net agreement rate with the ranking,
    (agreeing - disagreeing decisive votes) / decisive votes, in [-1, 1]; the ranking is
    reversed when the median of these rates is negative. With an odd number of annotators
    this is the majority of annotators; with an even number whose signs split evenly, the
    two middle annotators (the least decided) break the tie by how far they lean, rather
    than eq. 7's sum of abilities, which a coherent group of confident against-voters
    dominates (bench_flags: 9 of 20 always against, one honest annotator of
    discrimination 0.35 netting -10 of 140 decisive votes: 10 against 10). Annotators in
    ``skip`` (flagged by a per-vote test or extra evidence: position bias, too fast, ...)
    are left out of the count, as long as anyone is left: their net rates are about 0 and,
    when many, they put the median among themselves and its sign at random (bench_flags:
    9 of 20 choosing the left item, 25 votes each, discrimination sd 1.0).
    """
    agree = np.sign(w - 0.5) * np.sign(ls[a] - ls[b])
    dec = np.bincount(k, weights=(w != 0.5).astype(np.float64), minlength=m)
    net = np.bincount(k, weights=agree, minlength=m)
    return _median_rate_negative(net, dec, skip)


def _median_rate_negative(
    net: npt.NDArray[Any], dec: npt.NDArray[Any], skip: BoolArray | None
) -> bool:
    """:func:`_median_disagrees` from each annotator's net agreeing votes and decisive
    votes."""
    use = dec > 0
    if skip is not None and (use & ~skip).any():
        use &= ~skip  # flagged by a per-vote test: their choices do not follow the items
    rates = net[use] / dec[use]
    return bool(rates.size) and float(np.median(rates)) < 0.0


@dataclass(frozen=True)
class _VoteCells:
    """The votes counted per ``(annotator, outcome, item_a, item_b)`` cell, shape
    ``(m, 3, n, n)`` (outcome 0, 1/2, 1; the pairs innermost, so that sums over them
    run over contiguous memory), for the loop's per-annotator sums: every
    statistic of :func:`stable_arena` that depends on a vote only through its annotator,
    its ordered pair of items and its outcome is a sum over these few cells (300
    annotators x 20 models: 360,000 cells for 1,000,000 votes) instead of over the votes."""

    counts: IntArray

    @staticmethod
    def of(
        a: IntArray, b: IntArray, w: FloatArray, k: IntArray, n: int, m: int
    ) -> _VoteCells | None:
        """The cells of these votes (outcomes 0, 0.5 or 1); None when there are more than
        two cells per vote (beyond 65,536): the per-vote sums are then cheaper, and the
        cells' memory stays below two integers per vote."""
        size = m * n * n * 3
        if size > 2 * k.size + (1 << 16):
            return None
        key = k * 3
        key += (w * 2.0).astype(np.int64)
        key *= n
        key += a
        key *= n
        key += b
        counts = np.bincount(key, minlength=size).reshape(m, 3, n, n)
        return _VoteCells(counts)

    def without(self, excluded: BoolArray) -> _VoteCells:
        """The cells of the annotators not in ``excluded``."""
        if not excluded.any():
            return self
        counts = self.counts.copy()
        counts[excluded] = 0
        return _VoteCells(counts)

    def per_annotator(self) -> IntArray:
        """Votes per annotator and outcome, shape (m, 3)."""
        m = self.counts.shape[0]
        out: IntArray = self.counts.reshape(m, 3, -1).sum(axis=2)
        return out

    def pairs_of(self, who: BoolArray) -> BoolArray:
        """Which ordered pairs ``(a, b)`` the annotators in ``who`` voted on, shape (n, n)."""
        out: BoolArray = self.counts[who].sum(axis=(0, 1)) > 0
        return out

    def per_pair(self, who: IntArray) -> IntArray:
        """Votes of the annotators ``who`` per ``(annotator, a, b)``, flattened in that
        order (shape ``(who.size * n * n,)``)."""
        out: IntArray = self.counts[who].sum(axis=1).ravel()
        return out


def _identifies_pairs(pairs: BoolArray) -> bool:
    """:func:`_identifies` from the ordered pairs voted on, shape (n, n)."""
    n = pairs.shape[0]
    if not pairs.any():
        return False
    seen = pairs.any(axis=0) | pairs.any(axis=1)
    if not seen.all():
        return False
    lo, hi = np.nonzero(pairs)
    graph = sparse.coo_matrix((np.ones(lo.size), (lo, hi)), shape=(n, n))
    return int(csgraph.connected_components(graph, directed=False)[0]) == 1


def _median_disagrees_cells(
    ls: FloatArray, cells: _VoteCells, skip: BoolArray | None = None
) -> bool:
    """:func:`_median_disagrees` from the vote cells: the same integer counts, so the same
    answer."""
    c = cells.counts
    m = c.shape[0]
    sign = np.sign(ls[:, None] - ls[None, :]).ravel()
    net = (c[:, 2] - c[:, 0]).reshape(m, -1) @ sign
    by_outcome = cells.per_annotator()
    dec = (by_outcome[:, 0] + by_outcome[:, 2]).astype(np.float64)
    return _median_rate_negative(net, dec, skip)


def _score_z_cells(ls: FloatArray, cells: _VoteCells) -> FloatArray:
    """:func:`_score_z` of ``x = ls[a] - ls[b]`` from the vote cells: each sum over an
    annotator's votes is a sum over its cells weighted by their counts (the same sums,
    added in another order: equal to rounding)."""
    c = cells.counts
    m = c.shape[0]
    x = (ls[:, None] - ls[None, :]).ravel()
    flat = c.reshape(m, 3, -1).astype(np.float64)
    tot = flat.sum(axis=1)
    won = flat[:, 2] + 0.5 * flat[:, 1]
    by_outcome = flat.sum(axis=2)
    cnt = by_outcome.sum(axis=1)
    sw = by_outcome[:, 2] + 0.5 * by_outcome[:, 1]
    sww = by_outcome[:, 2] + 0.25 * by_outcome[:, 1]
    return _score_z_from_sums(cnt, tot @ x, tot @ (x * x), sw, sww, won @ x)


_TIE_TEST: Literal["union", "fisher", "off"] = "off"
"""How the tie test (:func:`_tie_gap_z`) enters the ``random`` verdict: ``"off"`` (the
default: not run; the ability test alone), ``"union"`` (its own Benjamini-Hochberg family,
flagged ``random`` where its adjusted p-value is at most ``alpha``) or ``"fisher"``
(Fisher's combination with the ability test's p-value, one family); bench_flags
``--tie-test``. Off by default because it does not pay on bench_flags' grid (20 and 42
annotators x 50/100/200 votes, same seeds, commit after 03f754e): ``"union"`` caught 3 more
perturbed annotators and flagged 12 more honest ones (of about 26,000), ``"fisher"``
diluted the ability test (79 fewer caught, 56 fewer false flags), and testing only the
annotators the ability test does not find reliable made it worse (7 more caught, 30 more
false flags: a smaller BH family of the weakest honest annotators, whose ties are flat).
The tie pattern without the tie rate is weak in Davidson-tied data
(``benchmarks/bench_flags_bounds.py`` section 3: 5-11% recall at 5% with the true gaps)."""

_TIE_MIN_VOTES = 5
"""The tie test needs at least this many ties and this many decisive votes of the
annotator: with fewer, the rank sum of one or two ties is far from normal."""


def _gap_cdf(gap: FloatArray, weight: FloatArray) -> FloatArray:
    """The mid-distribution function of ``gap`` weighted by ``weight``, at each ``gap``:
    ``(weight of smaller values + half the weight of equal ones) / total`` (equal values,
    such as the two orders of a pair, share one value)."""
    vals, inv = np.unique(gap, return_inverse=True)
    wv = np.bincount(inv.ravel(), weights=weight, minlength=vals.size)
    cum = np.cumsum(wv)
    total = float(cum[-1]) if cum.size else 0.0
    out: FloatArray = ((cum - 0.5 * wv) / max(total, 1e-300))[inv.ravel()]
    return out


def _tie_gap_z(
    ls: FloatArray,
    a: IntArray,
    b: IntArray,
    w: FloatArray,
    k: IntArray,
    n: int,
    m: int,
    cells: _VoteCells | None,
) -> FloatArray:
    """Per annotator: do its ties sit on the pairs far apart in the ranking? Standardised.

    Each vote's pair gets the rank of its fitted gap ``|ls[a] - ls[b]|`` among all the
    votes (mid-distribution function, in [0, 1]); the statistic is the sum of these ranks
    over the annotator's ties, standardised by its mean and variance when the annotator's
    ties are spread at random over its battles (its own number of ties kept: the
    Wilcoxon rank-sum statistic of its tied against its decisive votes, normal
    approximation; :func:`_score_z_from_sums` with the tie indicator as outcome). Large
    when the annotator ties on far pairs and decides close ones: a random voter's ties are
    its honest decisive votes moved (a far pair's win becomes a tie) and its decisive
    votes its honest ties moved. Under Davidson's tie model an honest annotator ties less
    the farther apart the items (``P(tie) = nu / (e**h + e**-h + nu)``, whatever its ``nu``
    and discrimination), so its statistic is at most about N(0, 1): the test of "ties do
    not become more frequent with the gap" is valid for any tie propensity. NaN with fewer
    than :data:`_TIE_MIN_VOTES` ties or decisive votes. The gaps' sign is not used, so the
    statistic does not depend on the direction of the ranking."""
    if cells is not None:
        c = cells.counts
        flat = c.reshape(m, 3, -1).astype(np.float64)
        tot = flat.sum(axis=1)
        ties = flat[:, 1]
        gap = np.abs(ls[:, None] - ls[None, :]).ravel()
        s = _gap_cdf(gap, tot.sum(axis=0))
        cnt = tot.sum(axis=1)
        nt = ties.sum(axis=1)
        z = _score_z_from_sums(cnt, tot @ s, tot @ (s * s), nt, nt, ties @ s)
    else:
        if n * n <= 1 << 24:  # the pairs' ranks, then one look-up per vote
            key = a * n + b
            gap = np.abs(ls[:, None] - ls[None, :]).ravel()
            s = _gap_cdf(gap, np.bincount(key, minlength=n * n).astype(np.float64))[key]
        else:
            s = _gap_cdf(np.abs(ls[a] - ls[b]), np.ones(a.size))
        t = (w == 0.5).astype(np.float64)
        cnt = np.bincount(k, minlength=m).astype(np.float64)
        nt = np.bincount(k, weights=t, minlength=m)
        z = _score_z_from_sums(
            cnt,
            np.bincount(k, weights=s, minlength=m),
            np.bincount(k, weights=s * s, minlength=m),
            nt,
            nt,
            np.bincount(k, weights=s * t, minlength=m),
        )
    ok = (nt >= _TIE_MIN_VOTES) & (cnt - nt >= _TIE_MIN_VOTES)
    out: FloatArray = np.where(ok, z, np.nan)
    return out


def _direction_support(p_adv: FloatArray, alpha: float, use: BoolArray) -> tuple[int, int]:
    """How many of the annotators in ``use`` agree with the ranking significantly
    (one-sided score test of ``theta <= 0`` rejected at ``alpha``: ``1 - p_adv <= alpha``,
    the ``reliable`` test), and how many there are.

    The direction of the ranking is *settled* when those agreeing are a strict majority.
    Why a majority and not the median's sign: am-ELO's likelihood is unchanged when the
    ranking is mirrored and every ability negated, so only "honest annotators are a
    majority" tells the two apart. If the ranking were mirrored, the annotators who agree
    with it significantly would be the adversarial ones (a minority) plus honest ones that
    a level-``alpha`` test put on the wrong side; so a significant majority is only reached
    in the wrong direction if at least ``m / 2 - A`` honest annotators (``A`` adversarial
    of ``m``) each pass a test whose error rate is at most ``alpha``. Annotators whose
    side is undecided count against the direction, since they may be honest ones on the
    other side. bench_flags_bounds.py shows why the median alone is not enough: with 45%
    always-against annotators, counting by sign points the wrong way in up to 49% of
    studies, and each such study flags every honest annotator."""
    sel = np.asarray(use, dtype=bool)
    if not sel.any():
        sel = np.ones_like(sel)  # all flagged per vote: count them all, as the median rule
    agree = (1.0 - p_adv[sel]) <= alpha
    return int(agree.sum()), int(sel.sum())


_MIXTURE_DIRECTION = True
"""Whether the direction may also be settled by :func:`_mixture_majority` (benchmarks turn
it off to reproduce the significance count alone)."""


def _poisson_binomial_above(prob: FloatArray, k: float) -> float:
    """``P(sum_j B_j > k)`` for independent ``B_j ~ Bernoulli(prob_j)``: the Poisson binomial
    distribution, computed exactly by the convolution recursion (Hong, 2013, Computational
    Statistics & Data Analysis 59, 41-51, the "direct convolution" method)."""
    dist = np.zeros(prob.size + 1)
    dist[0] = 1.0
    for i, q in enumerate(np.clip(prob, 0.0, 1.0).tolist()):
        dist[1 : i + 2] = dist[1 : i + 2] * (1.0 - q) + dist[: i + 1] * q
        dist[0] *= 1.0 - q
    return float(dist[np.arange(prob.size + 1) > k].sum())


def _side_probabilities(z: FloatArray, n_iter: int = 500) -> tuple[FloatArray, FloatArray]:
    """Each annotator's probability of belonging to the group that agrees with the ranking
    and to the group that votes against it, from a three-group mixture of the annotators'
    score statistics ``z`` (:func:`_score_z`).

    The model is Efron's two-groups model for z-values (Efron, 2008, "Microarrays,
    empirical Bayes and the two-groups model", Statistical Science 23, 1-22) with two
    non-null groups, one per side, fitted by maximum likelihood with the EM algorithm
    (McLachlan and Peel, 2000, Finite Mixture Models, ch. 2-3): a null group ``N(0, 1)``
    (ability 0: random voters, and honest annotators too weak to show on their votes),
    an agreeing group ``N(mu_+, s_+**2)`` with ``mu_+ >= 0`` and a disagreeing group
    ``N(mu_-, s_-**2)`` with ``mu_- <= 0``. A side's spread is at most
    ``sqrt(1 + mu**2 / 4)`` (the score's own noise plus members' signals varying by at most
    half their mean), so a side stays on its side and cannot take in the other one; it has
    no lower bound above 0.1, because the score of an annotator who always votes one way
    is bounded and varies far less than ``N(0, 1)`` (bench_flags, 200 annotators x 10 votes,
    90 always against: their scores are 2.0-3.0; with the spread held at 1 or more their
    group also took in 14 honest annotators' noise and claimed a majority).

    A side whose mean score is below ``z_{0.95}`` (a typical member not individually
    significant) is not told apart from the null group and is returned as zero: otherwise
    9 random voters whose scores happened to lean negative (mean -0.8) were counted as a
    majority of 20 against 11 clearly honest annotators (bench_flags, 20 x 100 votes,
    discrimination sd 0.5, 45% random, study 0).
    """
    from ranking._special_dist import norm_ppf

    z = np.clip(np.where(np.isfinite(z), z, 0.0), -40.0, 40.0)
    pos, neg = z > 1.0, z < -1.0
    w = np.array([max(pos.mean(), 0.05), 0.2, max(neg.mean(), 0.05)])
    w /= w.sum()
    mu = np.array([z[pos].mean() if pos.any() else 2.0, 0.0, z[neg].mean() if neg.any() else -2.0])
    var = 1.0 + mu**2 / 4.0
    prev = -np.inf
    r = np.zeros((3, z.size))
    for _ in range(n_iter):
        logf = (
            np.log(np.maximum(w, 1e-300))[:, None]
            - 0.5 * (z[None, :] - mu[:, None]) ** 2 / var[:, None]
            - 0.5 * np.log(var)[:, None]
        )
        top = logf.max(axis=0)
        r = np.exp(logf - top)
        tot = r.sum(axis=0)
        r /= tot
        ll = float(np.sum(top + np.log(tot)))
        sr = r.sum(axis=1)
        w = sr / z.size
        for g, sign in ((0, 1.0), (2, -1.0)):
            if sr[g] > 1e-9:
                mu[g] = sign * max(sign * float(r[g] @ z) / sr[g], 0.0)
                v = float(r[g] @ (z - mu[g]) ** 2) / sr[g]
                var[g] = min(max(v, 0.01), 1.0 + mu[g] ** 2 / 4.0)
        if ll - prev < 1e-10:
            break
        prev = ll
    z_crit = float(norm_ppf(0.95))
    return r[0] * (mu[0] >= z_crit), r[2] * (-mu[2] >= z_crit)


def _mixture_majority(z: FloatArray) -> tuple[float, float, float, float]:
    """Probabilities that the annotators agreeing with the ranking, and that those voting
    against it, are a strict majority of all ``z.size`` annotators, with the expected
    size of each group.

    Group memberships are :func:`_side_probabilities`; given them, the size of a group is
    a sum of independent Bernoulli variables (Poisson binomial,
    :func:`_poisson_binomial_above`). Unlike the significance count of
    :func:`_direction_support`, which counts an honest annotator only once its own test
    is significant, this counts a coherent group of annotators who each lean the same way
    (bench_flags, 20 annotators x 50 votes, 9 always against: 11 honest annotators with
    scores 1-4 are a majority when most of them are not yet individually significant).
    Members of the null group count for neither side, so an undecided annotator is never
    counted for the majority.
    """
    if z.size == 0:
        return 0.0, 0.0, 0.0, 0.0
    p_plus, p_minus = _side_probabilities(z)
    half = z.size / 2.0
    return (
        _poisson_binomial_above(p_plus, half),
        _poisson_binomial_above(p_minus, half),
        float(p_plus.sum()),
        float(p_minus.sum()),
    )


def _undecided_votes(n: int, t: float, z: float) -> int:
    """Votes until |t| reaches z if t grows like sqrt(n), with |t| floored at 0.5."""
    need = n * (z / max(abs(t), 0.5)) ** 2
    return max(1, math.ceil(need - n))


def stable_arena(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    n_models: int | None = None,
    n_annotators: int | None = None,
    delta: int | None = None,
    epsilon: float | None = None,
    action: Action = "warn",
    se_bound: float = 0.5,
    null_quantile: float = 0.85,
    max_refits: int = 20,
    confidence: float = 0.95,
    both_bad: npt.ArrayLike | None = None,
    both_bad_as: BothBad = "tie",
    left_chosen: npt.ArrayLike | None = None,
    fast: npt.ArrayLike | None = None,
    item: npt.ArrayLike | None = None,
    alpha: float = 0.05,
    correction: Correction = "bh",
    ability_prior_sd: float = 2.0,
    rating_prior_sd: float = 1000.0,
    max_fast_share: float = 0.2,
    random_fraction: float = 0.1,
    intervals: Intervals = "wald",
    n_boot: int = 200,
    rng: RNGLike = None,
    rank_correction: Correction = "bh",
    evidence: tuple[Evidence, ...] = (),
    settle_direction: bool = True,
    init: StableArenaResult | None = None,
) -> StableArenaResult:
    """Rate items and give each annotator a verdict (Stable Arena, Algorithm 3).

    **Fit.** Annotators with at most ``delta`` votes are ``pending`` and left
    out of the fit (as in the paper); annotators whose votes are all ties are
    flagged ``random`` (their ability is exactly 0, so leaving them out gives
    the same ratings); am-ELO is fitted on the rest with a weakly informative
    Gaussian prior on each annotator's discrimination relative to the average
    annotator, ``N(1, ability_prior_sd**2)`` (see :func:`ranking.am_elo`;
    Gelman et al., 2008; Mislevy, 1986). The prior keeps every ability
    finite, so an annotator who agrees (or disagrees) with the ranking on
    every vote gets a verdict once there are enough votes instead of staying
    pending. A second, very weak Gaussian prior ``N(1000, rating_prior_sd**2)``
    on the ratings keeps them finite too when an item never lost or never
    won, or when annotators of opposite sign alone compare some pair (with
    abilities free, am-ELO can then explain both by infinitely distant
    ratings); with the default sd of 1000 Elo points its effect on ratings
    that the data determine is far below their standard errors.

    **Direction.** Eq. 7 (``sum(theta) = 1``) orients the ranking by the sign
    of the summed abilities, so a coherent minority of confident
    against-voters (who never tie) could invert it and have every honest
    annotator flagged. The loop instead orients it by the median annotator
    still in play, judged or pending: if the median of the annotators' net
    agreement rates with the fitted ranking (agreeing minus disagreeing
    decisive votes, over decisive votes) is negative, that is, if more of them
    vote against than with it, the two middle ones breaking an even split by
    how far they lean, the fit is mirrored (ratings reflected about 1000, abilities
    negated, so they then sum to -1), which leaves the penalised likelihood
    unchanged. Bootstrap replicates are oriented like the fit.

    **Settled direction.** The likelihood cannot tell a ranking from its mirror image;
    only "honest annotators are a majority" can, and a coherent minority of confident
    against-voters facing honest annotators of whom many are weak can win the median
    (``benchmarks/bench_flags_bounds.py``: with 45% always-against annotators even the true
    ranking, counted by sign, points the wrong way in up to 49% of studies), and then
    every honest annotator would be flagged. So the dynamic rule gives ability verdicts
    (``reliable``, ``adversarial``, ``random``) only once the direction is *settled*: a
    strict majority of the annotators in play with decisive votes (judged or pending, not
    flagged per vote) agree with the ranking significantly (the ``reliable`` test at
    ``alpha``, :func:`_direction_support`). Had the ranking been mirrored, those agreeing
    would be the against-voters (a minority) plus honest annotators each put on the wrong
    side by a level-``alpha`` test, so a wrong settlement needs ``m / 2 - A`` such errors
    (``A`` against-voters of ``m``). A significance count waits for each honest annotator
    to pass its own test, so the direction is also settled when the *group* on one side is
    a majority with probability at least ``1 - alpha`` (:func:`_mixture_majority`: a
    three-group mixture of the annotators' score statistics, null / agreeing / against,
    Efron's two-groups model, and the Poisson binomial distribution of the group sizes);
    if that group votes against the fit, the fit is mirrored. Settled this way only, the
    ``random`` verdict still waits for the count: its threshold is estimated from the
    clearly honest annotators, a lucky minority until they are a majority. Until then the fitted
    annotators stay ``pending``
    (``votes_to_verdict`` None) with the count in their reason; per-vote flags, all-tie
    annotators and evidence still apply.

    **Thresholds.** ``delta=None`` takes the dynamic rule of
    :func:`dynamic_delta` and caps it at the median vote count minus one
    (over annotators with votes), so at least half of the annotators are
    always fitted and the loop never ends for want of an annotator the
    study could not reach; ``delta_uncapped`` keeps the rule's value.
    ``epsilon=None`` (dynamic) makes ``adversarial`` a one-sided Wald test of
    ``H0: theta_k >= 0`` against ``theta_k < 0`` (an annotator who votes
    against the ranking), ``p_k = Phi(theta_k / se_k)``, and an annotator is
    ``reliable`` once ``H0: theta_k <= 0`` is rejected at level ``alpha``
    (its ability is distinguishably better than random); in between it stays
    ``pending`` with ``votes_to_verdict``. A fixed ``epsilon`` reproduces the
    paper's point rule: flagged iff ``theta_k <= epsilon``, reliable
    otherwise (with the one-sided p-value against ``epsilon`` reported).
    ``random`` (dynamic rule only) flags an annotator whose ability sits below
    what the honest annotators' spread and its own sampling noise explain: the
    honest abilities are log-normal, ``LN(mu, sd**2)``, fitted to the annotators
    clearly better than random (truncated at that selection, net of each one's
    noise), and the p-value is predictive, ``P(g + se_k e <= theta_k)`` with
    ``g`` drawn from that fit and ``e ~ N(0, 1)`` (uniform for an honest
    annotator); the reported threshold ``t0`` is the fit's 5% quantile (at most
    70% of the typical ability). With fewer than five such annotators or too
    few votes to estimate that spread, it is the one-sided Wald test of
    ``H0: theta_k >= t0`` with ``t0`` = ``random_fraction`` times the median
    ability. Optionally (``ranking.arena._TIE_TEST = "union"``; off by default, as
    it did not pay on bench_flags' grid) ``random`` is also the verdict of a
    *tie test* (its own Benjamini-Hochberg family; it needs no honest reference
    and no direction, so it runs on every fitted annotator once three cast
    decisive votes): an
    annotator whose ties sit on the pairs far apart in the fitted ranking, where
    an honest annotator ties least (Davidson: ``P(tie) = nu / (e**h + e**-h + nu)``
    falls with the gap whatever ``nu``), as when votes are moved at random. The
    statistic is the rank sum of the fitted gaps ``|ls_a - ls_b|`` (ranked over
    all votes) on the annotator's ties against its decisive votes, standardised by
    its permutation mean and variance given the annotator's own number of ties
    (Mann-Whitney, normal approximation; at least five ties and five decisive
    votes), so a high or low tie rate alone never flags; one-sided p-value
    ``1 - Phi(z)``, uniform when ties do not depend on the gap and larger for an
    honest annotator. On bench_flags' grid it changes recall by a few
    annotators only (the rate-free tie pattern is weak there:
    ``benchmarks/bench_flags_bounds.py`` section 3); ``FlagReason.test`` is
    ``"ties"`` and ``tie_statistics`` holds each annotator's ``z``. With fewer than
    :data:`MIN_ANNOTATORS_FOR_VERDICT` annotators casting decisive votes, no
    ability verdict is given (everyone fitted stays ``pending``, with
    ``votes_to_verdict`` None): the ranking they would be compared with is
    mostly their own.

    **Per-vote checks** (on every annotator, fitted or not): ``position_bias``
    is the exact two-sided binomial test of left against right choices among
    the annotator's non-tie votes (``left_chosen``, as displayed);
    ``too_fast`` is the exact one-sided binomial test of ``H0: share of fast
    votes <= max_fast_share`` (``fast``, one definition of a fast vote
    supplied by the caller); ``low_agreement`` is the one-sided binomial test
    of agreement with the leave-one-out majority of the other annotators on
    the same ``item`` against the annotator's own chance agreement
    (:func:`ranking.majority_agreement`).

    **Error rates.** Each test is adjusted across the annotators it was run
    on, with Benjamini-Hochberg (``correction="bh"``: the expected share of
    false flags among an annotator's flags of that kind is at most ``alpha``,
    and the chance that a given honest annotator is flagged is at most about
    ``alpha``) or Holm (``"holm"``: the chance of any false flag of that kind
    is at most ``alpha``); an annotator is flagged when an adjusted p-value is
    at most ``alpha``, and each :class:`FlagReason` carries the adjusted
    p-value. ``reliable`` uses the unadjusted one-sided test.

    **Intervals and ranks.** ``lower`` and ``upper`` are marginal intervals at
    ``confidence``: Wald from the observed penalised information
    (``am_elo(..., information="observed")``; the ability errors behind the
    verdicts use the expected information), or, with
    ``intervals="bootstrap"``, bias-corrected percentile intervals over
    ``n_boot`` resamples of the annotators (with their votes; Field and
    Welsh, 2007), which reach nominal coverage when annotators have few votes
    (``benchmarks/results/bench_coverage.txt``: 0.961 at 40 votes per
    annotator over 200 studies with 200 resamples, where Wald covers 0.918
    from the observed information and 0.891 from the expected one: each
    discrimination is estimated from the annotator's own few votes, which
    spreads the ratings about 9% too far, a bias no covariance removes).
    ``ranks`` come from pairwise Wald
    tests of every rating difference with the full covariance of the ratings
    (the inverse observed penalised information, or the covariance of the bootstrap
    replicates), adjusted across all ``n (n - 1) / 2`` pairs
    (:func:`ranking.ranks_from_pairwise_tests`): ``ranks[i]`` is 1 + the number
    of models significantly above i and ``lowest_ranks[i]`` is ``n`` minus the
    number significantly below (the model's rank class). With the default
    ``rank_correction="bh"`` (Benjamini-Hochberg) at most a share
    ``1 - confidence`` of the claims "model i ranks above model j" behind them
    is expected to be false; with ``"holm"`` all of them hold together with
    probability at least ``confidence`` (family-wise error rate). Both are
    checked by simulation in the tests. On the LLMFAO crowd votes (59 models,
    1,711 pairs, Wald) the earlier rule (Bonferroni-simultaneous intervals that do
    not overlap) ordered 360 pairs, Holm orders 441 and BH 884 (unadjusted
    tests: 956).

    With ``action="exclude"`` flagged annotators are removed and the loop
    refits, recomputing the thresholds, until no new annotator is flagged (at
    most ``max_refits`` refits, and never removing the last fitted annotator).

    Parameters
    ----------
    model_a, model_b : array-like of int of shape (n_battles,)
        Indices of the two items in each battle.
    annotator : array-like of int of shape (n_battles,)
        Annotator of each vote.
    outcome : array-like of float of shape (n_battles,)
        1 if ``model_a`` won, 0 if ``model_b`` won, 0.5 for a tie.
    n_models, n_annotators : int, optional
        Numbers of items and annotators; annotators without votes are
        reported as ``pending``.
    delta : int or None, default None
        Fixed record threshold, or None for the capped dynamic rule.
    epsilon : float or None, default None
        Fixed ability threshold on the ``sum(theta) = 1`` scale (the paper's
        point rule), or None for the one-sided test against 0.
    action : {"warn", "exclude"}, default "warn"
        What to do with flagged annotators.
    se_bound : float, default 0.5
        Standard-error bound of the dynamic ``delta`` rule.
    null_quantile : float, default 0.85
        Kept for compatibility: the quantile of :func:`null_ability_threshold`,
        no longer used by the default rule (the test at ``alpha`` replaced it).
    max_refits : int, default 20
        Maximum number of refits with ``action="exclude"``.
    confidence : float, default 0.95
        Coverage of the rating intervals.
    both_bad, both_bad_as
        As in :func:`ranking.am_elo`.
    left_chosen : array-like of bool of shape (n_battles,), optional
        Whether the item displayed on the left (or first) was chosen; only
        read on non-tie votes. Enables ``position_bias``.
    fast : array-like of bool of shape (n_battles,), optional
        Whether each vote was too fast by the study's definition. Enables
        ``too_fast``.
    item : array-like of int of shape (n_battles,), optional
        What was judged (the same id for the same prompt and pair of items
        across annotators). Enables ``low_agreement``.
    alpha : float, default 0.05
        Level of every test, after adjustment across annotators.
    correction : {"bh", "holm"}, default "bh"
        Adjustment across annotators (:func:`ranking.adjust_p_values`).
    ability_prior_sd : float, default 2.0
        Prior standard deviation of the relative discriminations.
    rating_prior_sd : float, default 1000.0
        Prior standard deviation of the ratings (Elo points).
    max_fast_share : float, default 0.2
        Largest share of fast votes that is not flagged.
    random_fraction : float, default 0.1
        Discrimination, relative to the median positive one, below which an
        annotator counts as random.
    intervals : {"wald", "bootstrap"}, default "wald"
        How ``lower`` and ``upper`` are computed.
    n_boot : int, default 200
        Bootstrap resamples of the annotators.
    rng : numpy.random.Generator, int or None
        Source of randomness for the bootstrap.
    rank_correction : {"bh", "holm"}, default "bh"
        Adjustment of the pairwise rank tests across pairs of models: false
        discovery rate (BH) or family-wise error rate (Holm) at ``1 - confidence``.
    evidence : tuple of Evidence, default ()
        Further per-annotator tests (gold items, re-tests, ...): each is adjusted
        across annotators with ``correction`` and flags at ``alpha`` like the
        per-vote checks; a flagged annotator is left out of the honest reference of
        the ``random`` test.
    settle_direction : bool, default True
        Give ability verdicts only once the direction of the ranking is settled (see
        **Settled direction**); False trusts the median annotator's orientation as before
        (more recall where weak honest annotators are many, every honest annotator
        flagged when a coherent minority wins the median).
    init : StableArenaResult, optional
        An earlier result on the same items and annotators (say before a few more
        votes arrived): every am-ELO fit starts from its ratings and abilities
        (``am_elo(init=...)``; annotators it did not fit start at the average
        discrimination). The fits converge to the same optimum, to their
        tolerance, so the result is the same to that tolerance. Without it the
        first fit starts from the preliminary fit of the dynamic ``delta`` when
        there is one, otherwise from m-ELO; later fits of the loop start from the
        previous one.

    Returns
    -------
    StableArenaResult
        Ratings, intervals and ranks of shape (n_models,); abilities, standard
        errors, p-values, thresholds, statuses, structured ``flags``,
        ``votes_to_verdict`` and sentences of shape (n_annotators,); the final
        fit, the number of fits and the settings.

    Raises
    ------
    LengthMismatchError, ShapeError, InvalidParameterError
        On malformed input or options.
    DegenerateDataError
        For the data problems of :func:`ranking.am_elo` that no prior can
        fix (an item without battles, a disconnected comparison graph), or
        when every annotator with more than ``delta`` votes voted tie on
        everything (``reason="no_annotator_fitted"``). The error's
        ``reason``, ``annotators`` and ``models`` say what is wrong.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO: A Stable Framework for Arena-based LLM
    Evaluation. ICML 2025, Algorithm 3.

    Gelman, A., Jakulin, A., Pittau, M. G. and Su, Y.-S. (2008). A weakly
    informative default prior distribution for logistic and other regression
    models. Annals of Applied Statistics 2, 1360-1383.

    Holm, S. (1979). Scandinavian Journal of Statistics 6, 65-70.

    Benjamini, Y. and Hochberg, Y. (1995). JRSS B 57, 289-300.

    Field, C. A. and Welsh, A. H. (2007). Bootstrapping clustered data. JRSS B
    69, 369-390 (resampling clusters, here annotators).

    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap.
    Chapman & Hall, sec. 10.6 (bias correction).

    Examples
    --------
    Twelve simulated annotators, the first of whom swaps every win:

    >>> from ranking.simulation import perturb_outcomes, simulate_arena
    >>> sim = simulate_arena(n_models=8, n_annotators=12, records_per_annotator=80, rng=1)
    >>> flipped = perturb_outcomes(sim.outcome, sim.annotator, [0], strategy="flip")
    >>> res = stable_arena(sim.model_a, sim.model_b, sim.annotator, flipped)
    >>> res.status[:3]
    ('flagged', 'reliable', 'reliable')
    >>> res.flags[0][0].reason
    'adversarial'
    >>> res.reasons[0][:9]
    'theta = -'
    >>> res = stable_arena(sim.model_a, sim.model_b, sim.annotator, flipped, delta=50, epsilon=0.0)
    >>> res.annotators_with("flagged").tolist()
    [0]
    """
    from ranking._special_dist import norm_cdf, norm_ppf, norm_sf

    _check_arena_options(
        delta,
        epsilon,
        action,
        se_bound,
        null_quantile,
        max_refits,
        alpha,
        correction,
        ability_prior_sd,
        rating_prior_sd,
        max_fast_share,
        random_fraction,
        intervals,
        n_boot,
        rank_correction,
    )
    d = _prepare(
        model_a,
        model_b,
        outcome,
        annotator=annotator,
        n_models=n_models,
        n_annotators=n_annotators,
        both_bad=both_bad,
        both_bad_as=both_bad_as,
    )
    if d.k is None:  # pragma: no cover - annotator is required by the signature
        raise InvalidParameterError("annotator is required")
    n, m = d.n_models, d.n_annotators
    # per-vote inputs are aligned with the raw votes; both-bad votes count as ties there
    if both_bad_as == "tie":  # every vote kept: the validated arrays are the raw votes
        k_raw, w_raw, a_raw, b_raw = d.k, d.w, d.a, d.b
    else:
        k_raw = as_index_array(annotator, "annotator", n=m)
        w_raw = np.asarray(outcome, dtype=np.float64)
        bb_raw = _vote_mask(both_bad, "both_bad", k_raw.size)
        if bb_raw is not None:
            w_raw = np.where(bb_raw, 0.5, w_raw)
        a_raw, b_raw = as_index_array(model_a, "model_a"), as_index_array(model_b, "model_b")
    vote_flags = _vote_flags(
        k_raw,
        w_raw,
        m,
        _vote_mask(left_chosen, "left_chosen", k_raw.size),
        _vote_mask(fast, "fast", k_raw.size),
        None if item is None else _item_ids(item, k_raw.size),
        a_raw,
        b_raw,
        alpha,
        correction,
        max_fast_share,
    )
    for ev in evidence:
        _add_evidence(vote_flags, ev, m, alpha, correction)
    vote_flagged = np.array([bool(f) for f in vote_flags], dtype=bool)
    a_all, b_all, w_all, k_all = d.a, d.b, d.w, d.k
    # the per-annotator sums of the loop over (annotator, pair, outcome) cells, not votes
    all_cells = _VoteCells.of(a_all, b_all, w_all, k_all, n, m)
    if all_cells is not None and k_raw is k_all:
        n_records = all_cells.per_annotator().sum(axis=1).astype(np.int64)
    else:
        n_records = np.bincount(k_raw, minlength=m).astype(np.int64)
    dynamic = epsilon is None
    eps_value = 0.0 if epsilon is None else float(epsilon)
    z_rel = float(norm_ppf(1.0 - alpha))
    excluded = np.zeros(m, dtype=bool)
    model_flags: list[list[FlagReason]] = [[] for _ in range(m)]
    theta = np.full(m, np.nan)
    theta_se = np.full(m, np.nan)
    tie_z = np.full(m, np.nan)
    random_p = np.full(m, np.nan)
    random_kind = ""
    p_raw = np.full(m, np.nan)
    eps = np.full(m, np.nan)
    fits = 0
    if all_cells is None:
        decisive = np.bincount(k_all, weights=(w_all != 0.5).astype(np.float64), minlength=m) > 0
    else:
        by_outcome = all_cells.per_annotator()
        decisive = (by_outcome[:, 0] + by_outcome[:, 2]) > 0
    comparable = int(decisive.sum()) >= MIN_ANNOTATORS_FOR_VERDICT
    start = None if init is None else _start_of(init, n, m)
    while True:
        if excluded.any():
            use = ~excluded[k_all]
            a, b, w, k = a_all[use], b_all[use], w_all[use], k_all[use]
        else:  # nobody excluded (always with action="warn"): no copies
            a, b, w, k = a_all, b_all, w_all, k_all
        cells = None if all_cells is None else all_cells.without(excluded)
        if cells is None:
            cnt = np.bincount(k, minlength=m).astype(np.int64)
        else:
            by_outcome = cells.per_annotator()
            cnt = by_outcome.sum(axis=1).astype(np.int64)
        if delta is None:
            dlt, dlt_raw, pre = _reachable_delta(a, b, w, k, n, m, cnt, se_bound)
            start = pre if start is None else start
        else:
            dlt = dlt_raw = int(delta)
        pending = (cnt <= dlt) & ~excluded
        if cells is None:
            nontie = np.bincount(k, weights=(w != 0.5).astype(np.float64), minlength=m)
        else:
            nontie = (by_outcome[:, 0] + by_outcome[:, 2]).astype(np.float64)
        all_tie = ~pending & ~excluded & (nontie == 0) & (cnt > 0)
        fit_set = ~pending & ~excluded & ~all_tie
        if not fit_set.any():
            most = int(cnt.max()) if cnt.size else 0
            why = (
                f"no annotator has more than delta = {dlt} votes (the most is {most}); "
                "lower delta or collect more votes"
                if most <= dlt
                else f"every annotator with more than delta = {dlt} votes voted tie on every "
                "battle" + (" or was excluded" if excluded.any() else "")
            )
            raise DegenerateDataError(
                f"no annotator can be fitted: {why}",
                reason="no_annotator_fitted",
                annotators=np.flatnonzero(all_tie).astype(np.int64),
            )
        rate_set = fit_set.copy()
        if not (
            _identifies(a[fit_set[k]], b[fit_set[k]], n)
            if cells is None
            else _identifies_pairs(cells.pairs_of(fit_set))
        ):
            # the judged annotators alone leave an item unrated or the graph split: rate with
            # the pending annotators' votes too (they are still not judged)
            rate_set |= pending & (nontie > 0)
        rate_ids = np.flatnonzero(rate_set)
        remap = np.full(m, -1, dtype=np.int64)
        remap[rate_ids] = np.arange(rate_ids.size)
        if cells is not None and intervals == "wald":
            # the fit and the scale bias read the cells: no per-vote subset (empty)
            sel, k_fit = slice(0), k[:0]
        elif rate_set[cnt > 0].all():  # every annotator with votes: no copies
            sel = slice(None)
            k_fit = k if rate_ids.size == m else remap[k]
        else:
            sel = rate_set[k]
            k_fit = remap[k[sel]]
        fit = _fit_am(
            a[sel],
            b[sel],
            k_fit,
            w[sel],
            n,
            rate_ids.size,
            confidence,
            ability_prior_sd,
            rating_prior_sd,
            _warm(start, rate_ids),
            None if cells is None else cells.counts[rate_ids],
        )
        fits += 1
        start = _fit_start(fit, rate_ids, m)  # the next fit of the loop starts here
        judged = fit_set[rate_ids]
        # orient by the median annotator still in play (judged or pending)
        if (
            _median_disagrees(fit.log_strengths, a, b, w, k, m, vote_flagged)
            if cells is None
            else _median_disagrees_cells(fit.log_strengths, cells, vote_flagged)
        ):
            fit = _mirror(fit)
        ls = fit.log_strengths
        ids = rate_ids[judged]
        th = fit.abilities[judged]
        se = fit.ability_standard_errors[judged]
        safe_se = np.maximum(se, 1e-300)
        if dynamic:
            # every annotator's statistic from its own votes only: computed once over
            # all of them (the judged ones' equal, bit for bit, those of the judged votes)
            z_all = _score_z(ls[a] - ls[b], w, k, m) if cells is None else _score_z_cells(ls, cells)
            zs = z_all[ids]
            p_adv = np.where(np.isfinite(zs), norm_cdf(zs), 0.5)
        else:
            p_adv = norm_cdf((th - eps_value) / safe_se)
        p_adv_adj = adjust_p_values(p_adv, method=correction)
        theta[ids], theta_se[ids], p_raw[ids], eps[ids] = th, se, p_adv, eps_value
        theta[all_tie], eps[all_tie] = 0.0, eps_value
        flagged_fit = np.zeros(m, dtype=bool)
        new_flags: dict[int, list[FlagReason]] = {}
        if dynamic:
            # every annotator in play with decisive votes, judged or pending, counts
            in_play = (nontie > 0) & ~excluded
            n_agree, n_direction = _direction_support(
                np.where(np.isfinite(z_all), norm_cdf(z_all), 0.5)[in_play],
                alpha,
                ~vote_flagged[in_play],
            )
            settled = 2 * n_agree > n_direction or not settle_direction
            # the random threshold is estimated from the clearly honest annotators: only
            # once they are a majority (settled by the count) is that sample the honest one
            by_count = settled
            mix: tuple[float, float, float, float] | None = None
            if settle_direction and not settled and _MIXTURE_DIRECTION:
                # the significance count did not settle it: the group sizes may (see above)
                clean = in_play & ~vote_flagged
                mix = _mixture_majority(
                    np.nan_to_num(z_all[clean if clean.any() else in_play], nan=0.0)
                )
                if max(mix[0], mix[1]) >= 1.0 - alpha:
                    settled = True
                    if mix[1] > mix[0]:  # the group against the fit is the majority
                        fit = _mirror(fit)
                        ls = fit.log_strengths
                        th = fit.abilities[judged]
                        z_all = -z_all
                        p_adv = 1.0 - p_adv
                        p_adv_adj = adjust_p_values(p_adv, method=correction)
                        theta[ids], p_raw[ids] = th, p_adv
        else:
            n_agree, n_direction, settled, mix, by_count = 0, 0, True, None, True
        adv = ((p_adv_adj <= alpha) if dynamic else (th <= eps_value)) & comparable & settled
        se_at = (
            _SeAt.of(ls, a, b, k, ids, th, se, m, rate_ids.size)
            if dynamic and _SE_AT_ABILITY and ids.size
            else None
        )
        t0, p_rnd, random_kind = _random_test(
            th, se, p_adv if dynamic else None, random_fraction, ~vote_flagged[ids], se_at
        )
        random_p = np.full(m, np.nan)  # the final fit's (bench_flags --honest-p pools them)
        random_p[ids] = p_rnd
        # the tie test (ties on far pairs): needs no honest reference and no direction
        # (it reads |gap| only), so it runs on every judged annotator once comparable
        tie_on = dynamic and comparable and _TIE_TEST != "off"
        p_tie_adj = np.full(ids.size, np.nan)
        if tie_on:
            zt = _tie_gap_z(ls, a, b, w, k, n, m, cells)[ids]
            tie_z[ids] = zt
            p_tie = norm_sf(zt)  # NaN where not tested
            if _TIE_TEST == "fisher":
                from scipy.stats import chi2

                both = np.isfinite(p_tie)
                fisher = -2.0 * (
                    np.log(np.maximum(p_rnd, 1e-300)) + np.log(np.maximum(p_tie, 1e-300))
                )
                p_rnd = np.where(both, chi2.sf(fisher, 4), p_rnd)
            else:
                p_tie_adj = adjust_p_values(p_tie, method=correction)
        p_rnd_adj = adjust_p_values(p_rnd, method=correction)
        for i, j in enumerate(ids.tolist()):
            if adv[i]:
                new_flags[j] = [
                    FlagReason("adversarial", float(th[i]), eps_value, float(p_adv_adj[i]))
                ]
            elif comparable and dynamic and settled and by_count and p_rnd_adj[i] <= alpha:
                # random is relative to the honest annotators' abilities: not before the
                # direction, which says who they are, is settled, and not when the clearly
                # honest annotators it is estimated from are a minority (settled by the
                # mixture only: bench_flags 20 x 25 votes, 25% left100, up to 6 of 15
                # honest annotators flagged random from a threshold fitted on 5 lucky ones)
                new_flags[j] = [FlagReason("random", float(th[i]), t0, float(p_rnd_adj[i]))]
            elif p_tie_adj[i] <= alpha:
                new_flags[j] = [
                    FlagReason("random", float(tie_z[j]), 0.0, float(p_tie_adj[i]), "ties")
                ]
        for j in np.flatnonzero(all_tie).tolist():
            new_flags[j] = [FlagReason("random", 1.0, 1.0, None)]
        for j, fl in new_flags.items():
            model_flags[j] = fl
            flagged_fit[j] = True
        for j in ids.tolist():
            if j not in new_flags:
                model_flags[j] = []
        flagged_now = flagged_fit | np.array([bool(f) for f in vote_flags])
        flagged_now &= ~excluded & ~pending
        to_drop = flagged_now & fit_set
        if (
            action == "warn"
            or not to_drop.any()
            or fits > max_refits
            or not (fit_set & ~to_drop).any()
        ):
            break
        excluded |= flagged_now
    ratings = fit.ratings
    scale_bias: float | None = None
    if intervals == "bootstrap":
        lower, upper, rcov, _ = _bootstrap_intervals(
            a[sel],
            b[sel],
            k_fit,
            w[sel],
            n,
            rate_ids.size,
            fit,
            ability_prior_sd,
            rating_prior_sd,
            confidence,
            int(n_boot),
            rng,
        )
    else:
        per_cell = None
        if cells is not None:  # the rated annotators' votes per (annotator, pair) cell
            per_cell = cells.per_pair(rate_ids)
        scale_bias = _scale_bias(fit, a[sel], b[sel], k_fit, per_cell)
        lower, upper = _bias_aware_wald(fit, scale_bias, confidence)
        rcov = (
            fit.rating_covariance
            if fit.rating_covariance is not None
            else np.diag(fit.rating_standard_errors**2)
        )
    rank_test = ranks_from_pairwise_tests(
        ratings, rcov, alpha=1.0 - confidence, method=rank_correction
    )
    ranks = rank_test.ranks

    status: list[str] = []
    reasons: list[str] = []
    flags: list[tuple[FlagReason, ...]] = []
    to_verdict: list[int | None] = []
    in_ratings = np.zeros(m, dtype=bool)
    in_ratings[rate_ids] = True
    if action == "warn":
        in_ratings |= all_tie  # ability 0: same ratings with or without them
    rule = "dynamic" if dynamic else "fixed"
    corr = "Benjamini-Hochberg" if correction == "bh" else "Holm"
    for j in range(m):
        nr = int(n_records[j])
        jflags = tuple(model_flags[j] + vote_flags[j])
        tail = (
            "excluded from the ratings"
            if excluded[j]
            else ("warned, kept in the ratings" if in_ratings[j] else "not in the ratings")
        )
        if jflags:
            status.append("flagged")
            flags.append(jflags)
            to_verdict.append(None)
            reasons.append("; ".join(_describe(f, nr, rule, corr) for f in jflags) + f": {tail}")
            continue
        flags.append(())
        if nr == 0:
            status.append("pending")
            to_verdict.append(dlt + 1)
            reasons.append("no votes yet")
        elif pending[j] or np.isnan(theta[j]):
            status.append("pending")
            to_verdict.append(max(1, dlt + 1 - nr))
            reasons.append(f"{nr} vote(s) <= delta = {dlt}: too few to estimate its ability yet")
        elif not comparable:
            status.append("pending")
            to_verdict.append(None)
            reasons.append(
                f"only {int(decisive.sum())} annotator(s) cast decisive votes here: a verdict "
                f"compares an annotator with the others (at least {MIN_ANNOTATORS_FOR_VERDICT})"
            )
        elif not settled:
            # the annotator's own test decides once the direction is settled: its votes to
            # that point if it is itself undecided, unknown (None) if it waits for others
            t = float(norm_ppf(1.0 - p_raw[j]))
            own = None if abs(t) >= z_rel else _undecided_votes(nr, t, z_rel)
            status.append("pending")
            to_verdict.append(own)
            reasons.append(
                f"the direction of the ranking is not settled: {n_agree} of {n_direction} "
                "annotators agree with it significantly, and a verdict on an ability "
                "needs a majority (either side could be the honest one)"
                + (
                    ""
                    if mix is None
                    else f"; the mixture of their scores puts about {mix[2]:.0f} on its side "
                    f"and {mix[3]:.0f} against it, a majority with probability "
                    f"{mix[0]:.2f} and {mix[1]:.2f} (needs {1.0 - alpha:g})"
                )
                + ("" if own is None else f"; this annotator needs about {own} more votes")
            )
        elif not dynamic or 1.0 - p_raw[j] <= alpha:
            status.append("reliable")
            to_verdict.append(None)
            reasons.append(
                f"theta = {theta[j]:.4g} > epsilon = {eps[j]:.4g} ({rule}"
                + (f", one-sided p = {1.0 - p_raw[j]:.2g}" if dynamic else "")
                + f") on {nr} votes"
            )
        else:
            t = float(norm_ppf(1.0 - p_raw[j]))
            v = _undecided_votes(nr, t, z_rel)
            status.append("pending")
            to_verdict.append(v)
            reasons.append(
                f"theta = {theta[j]:.4g} (se {theta_se[j]:.2g}) on {nr} votes is not yet "
                f"distinguishable from a random voter at level {alpha:g}: about {v} more votes"
            )
    return StableArenaResult(
        ratings=ratings,
        lower=lower,
        upper=upper,
        ranks=ranks,
        abilities=theta,
        ability_standard_errors=theta_se,
        epsilon=eps,
        status=tuple(status),
        reasons=tuple(reasons),
        n_records=n_records,
        in_ratings=in_ratings,
        delta=dlt,
        fit=fit,
        iterations=fits,
        action=action,
        delta_rule="dynamic" if delta is None else "fixed",
        epsilon_rule=rule,
        se_bound=float(se_bound),
        null_quantile=float(null_quantile),
        both_bad_as=both_bad_as,
        flags=tuple(flags),
        votes_to_verdict=tuple(to_verdict),
        ability_p_values=p_raw,
        delta_uncapped=dlt_raw,
        alpha=float(alpha),
        correction=correction,
        ability_prior_sd=float(ability_prior_sd),
        max_fast_share=float(max_fast_share),
        intervals=intervals,
        rank_error_rate=1.0 - float(confidence),
        lowest_ranks=rank_test.lowest_ranks,
        rank_tests=rank_test,
        rank_correction=rank_correction,
        rating_covariance=rcov,
        scale_bias=scale_bias,
        fit_annotators=rate_ids,
        tie_statistics=tie_z,
        random_p_values=random_p,
        random_test=random_kind,
    )


def _add_evidence(
    out: list[list[FlagReason]], ev: Evidence, m: int, alpha: float, correction: str
) -> None:
    """Append ``ev``'s flags to ``out`` (one list per annotator)."""
    if ev.reason in FLAG_REASONS:
        raise InvalidParameterError(
            f"evidence reason {ev.reason!r} is one of the built-in reasons {FLAG_REASONS}"
        )
    arrays = []
    for name, v in (
        ("statistic", ev.statistic),
        ("threshold", ev.threshold),
        ("p_value", ev.p_value),
    ):
        x = (
            np.broadcast_to(np.asarray(v, dtype=np.float64), (m,))
            if np.ndim(v) == 0
            else np.asarray(v, dtype=np.float64)
        )
        if x.shape != (m,):
            raise ShapeError(
                f"evidence {ev.reason!r}: {name} must have shape ({m},), got {x.shape}"
            )
        arrays.append(x)
    stat, thr, raw = arrays
    if np.any((raw < 0) | (raw > 1)):
        raise InvalidParameterError(f"evidence {ev.reason!r}: p-values must lie in [0, 1]")
    adj = adjust_p_values(raw, method=correction)
    for j in np.flatnonzero(adj <= alpha):
        out[j].append(FlagReason(ev.reason, float(stat[j]), float(thr[j]), float(adj[j])))


def _item_ids(item: npt.ArrayLike, n: int) -> IntArray:
    it = as_index_array(item, "item")
    if it.size != n:
        raise LengthMismatchError(f"item has {it.size} entries but there are {n} votes")
    return it


def _describe(f: FlagReason, n: int, rule: str, corr: str) -> str:
    p = "" if f.p_value is None else f", {corr}-adjusted p = {f.p_value:.2g}"
    if f.reason == "adversarial":
        return f"theta = {f.statistic:.4g} <= epsilon = {f.threshold:.4g} ({rule}{p}) on {n} votes"
    if f.reason == "random" and f.p_value is None:
        return f"all {n} votes are ties: ability is exactly 0 (random)"
    if f.reason == "random" and f.test == "ties":
        return (
            f"random: its ties sit on pairs far apart in the ranking (tie test z = "
            f"{f.statistic:.2f} > {f.threshold:g}{p}), as when votes are moved at random; "
            "honest annotators tie on close pairs"
        )
    if f.reason == "random":
        return (
            f"random: theta = {f.statistic:.4g} below {f.threshold:.4g}, the least ability of "
            f"honest annotators{p}"
        )
    if f.reason == "position_bias":
        return f"position bias: chose the left item in {f.statistic:.0%} of decisive votes{p}"
    if f.reason == "too_fast":
        return f"too fast: {f.statistic:.0%} of votes fast (more than {f.threshold:.0%}{p})"
    if f.reason != "low_agreement":
        return f"{f.reason}: {f.statistic:.4g} against {f.threshold:.4g}{p}"
    return (
        f"low agreement: {f.statistic:.0%} agreement with the others, chance {f.threshold:.0%}{p}"
    )
