"""The Stable Arena loop (Algorithm 3 of Liu et al., 2025).

Annotators with too few votes are set aside as ``pending``; the rest are
fitted with am-ELO (:func:`ranking.pairwise.am_elo`); annotators whose ability
falls at or below a threshold are ``flagged`` and either warned about (kept in
the ratings) or excluded (the ratings are refitted without them, repeatedly,
until no new annotator is flagged); everyone else is ``reliable``.

The two thresholds of the paper, the record count ``delta`` and the ability
``epsilon``, are fixed numbers there. Here they are recomputed from the data
at every refit unless fixed values are passed:

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
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.special import expit
from scipy.stats import norm

from ranking.errors import ConvergenceError, DegenerateDataError, InvalidParameterError
from ranking.pairwise import (
    AmEloResult,
    BothBad,
    _aggregate_pairs,
    _bt_newton,
    _check_connected,
    _prepare,
    am_elo,
)
from ranking.types import BoolArray, FloatArray, IntArray

__all__ = [
    "ANNOTATOR_STATUSES",
    "StableArenaResult",
    "dynamic_delta",
    "null_ability_threshold",
    "stable_arena",
]

ANNOTATOR_STATUSES: tuple[str, str, str] = ("pending", "reliable", "flagged")
"""The three annotator statuses, in the order of Algorithm 3."""

Action = Literal["warn", "exclude"]


@dataclass(frozen=True)
class StableArenaResult:
    """Ratings and annotator statuses from the Stable Arena loop."""

    ratings: FloatArray
    """am-ELO ratings, shape (n_models,), from the final fit (Elo points, mean 1000)."""
    lower: FloatArray
    """Lower Wald bound per model, shape (n_models,)."""
    upper: FloatArray
    """Upper Wald bound per model, shape (n_models,)."""
    ranks: IntArray
    """Interval-respecting rank per model, shape (n_models,)."""
    abilities: FloatArray
    """Ability ``theta_k`` per annotator, shape (n_annotators,), on the
    ``sum = 1`` scale of the fit that last estimated it; exactly 0 for
    annotators whose votes are all ties; NaN exactly where the status is
    ``pending`` (not estimated)."""
    ability_standard_errors: FloatArray
    """Standard error of each annotator's ``theta_k`` from the final fit, shape
    (n_annotators,); NaN for annotators not in that fit (pending, all-tie,
    unbounded, or excluded before it)."""
    epsilon: FloatArray
    """Ability threshold applied to each annotator, shape (n_annotators,);
    NaN where the status is ``pending``."""
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

    def annotators_with(self, status: str) -> IntArray:
        """Indices of the annotators with a given status, shape (n,)."""
        if status not in ANNOTATOR_STATUSES:
            raise InvalidParameterError(
                f"status must be one of {ANNOTATOR_STATUSES}, got {status!r}"
            )
        return np.flatnonzero(np.asarray(self.status) == status).astype(np.int64)


def dynamic_delta(
    model_a: Any,
    model_b: Any,
    outcome: Any,
    *,
    annotator: Any = None,
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
    lo, hi, wins, cnt = _aggregate_pairs(a, b, w, n)
    _check_connected(lo, hi, wins, cnt, n)
    s, _, _ = _bt_newton(lo, hi, wins, cnt, n, tol=1e-10, max_iter=100)
    g = 1.0
    if k is not None and m > 0:
        pre = _preliminary_fit(a, b, w, k, n, m)
        if pre is not None:
            s, g = pre
        else:
            g = _typical_discrimination(s[a] - s[b], w, k, m)
    x = s[a] - s[b]
    eta = g * x
    p = expit(eta)
    info = float(np.mean(eta * eta * p * (1.0 - p)))
    if not info > 1e-12:
        raise DegenerateDataError(
            "the battles carry no information about annotator ability (all items are rated "
            "equal), so delta cannot be set from the data; pass a fixed delta"
        )
    return max(1, math.ceil(1.0 / (se_bound**2 * info)))


def _preliminary_fit(
    a: IntArray, b: IntArray, w: FloatArray, k: IntArray, n: int, m: int
) -> tuple[FloatArray, float] | None:
    """am-ELO on the annotators with at least the median vote count: strengths and the
    median positive discrimination; None when that fit is not possible."""
    cnt = np.bincount(k, minlength=m)
    nontie = np.bincount(k, weights=(w != 0.5).astype(np.float64), minlength=m)
    use = (cnt >= np.median(cnt[cnt > 0])) & (nontie > 0)
    for _ in range(5):
        ids = np.flatnonzero(use)
        if ids.size < 2:
            return None
        sel = use[k]
        try:
            fit = am_elo(a[sel], b[sel], np.searchsorted(ids, k[sel]), w[sel], n_models=n)
        except DegenerateDataError as err:
            bad = getattr(err, "annotators", None)
            if bad is None:
                return None
            use[ids[bad]] = False
            continue
        except ConvergenceError:
            return None
        pos = fit.discriminations[fit.discriminations > 0]
        return fit.log_strengths, float(np.median(pos))
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
    x: Any,
    outcome: Any,
    annotator: Any,
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
    z = float(norm.ppf(quantile))
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


def stable_arena(
    model_a: Any,
    model_b: Any,
    annotator: Any,
    outcome: Any,
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
    both_bad: Any = None,
    both_bad_as: BothBad = "tie",
) -> StableArenaResult:
    """Rate items and annotators with the Stable Arena loop (Algorithm 3).

    Each round: annotators with at most ``delta`` votes are ``pending`` (left
    out of the fit, reconsidered when they have more votes); annotators whose
    votes are all ties are ``flagged`` (their ability is exactly 0, so leaving
    them out of the fit gives the same maximum-likelihood ratings as keeping
    them); am-ELO is fitted on the rest; annotators with ``theta_k <=
    epsilon_k`` are ``flagged``, everyone else fitted is ``reliable``. With
    ``action="warn"`` one round is run and flagged annotators stay in the
    ratings; with ``action="exclude"`` flagged annotators are removed and the
    loop refits, recomputing the thresholds, until no new annotator is flagged
    (at most ``max_refits`` refits). Annotators whose ability is unbounded
    (every vote agrees, or every vote disagrees, with the ranking and none is
    a tie) stay ``pending``.

    Threshold rules (see the module docstring for the derivation):
    ``delta=None`` sets ``delta = ceil(1 / (se_bound**2 * i))`` with ``i`` the
    mean per-vote Fisher information about a typical annotator's ability
    relative to its size (see :func:`dynamic_delta`); ``epsilon=None`` sets ``epsilon_k`` to
    the ``null_quantile`` quantile of the ability a random voter with the same
    battles and outcome mix would get. Fixed values reproduce the paper
    (``delta=50``, ``epsilon=0.0`` or ``0.005``).

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
        Fixed record threshold, or None for the dynamic rule.
    epsilon : float or None, default None
        Fixed ability threshold on the ``sum(theta) = 1`` scale, or None for
        the dynamic rule.
    action : {"warn", "exclude"}, default "warn"
        What to do with flagged annotators.
    se_bound : float, default 0.5
        Standard-error bound of the dynamic ``delta`` rule.
    null_quantile : float, default 0.85
        Null quantile of the dynamic ``epsilon`` rule.
    max_refits : int, default 20
        Maximum number of refits with ``action="exclude"``.
    confidence : float, default 0.95
        Coverage of the rating intervals.
    both_bad, both_bad_as
        As in :func:`ranking.am_elo`.

    Returns
    -------
    StableArenaResult
        Ratings, intervals and ranks of shape (n_models,); abilities,
        thresholds, statuses and reasons of shape (n_annotators,); the final
        fit, the number of fits (``iterations``) and the settings.

    Raises
    ------
    LengthMismatchError, ShapeError, InvalidParameterError
        On malformed input or options.
    DegenerateDataError
        For the data problems of :func:`ranking.am_elo`, when no annotator
        has more than ``delta`` votes, or when setting annotators aside leaves
        an item without battles or the comparison graph disconnected.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO: A Stable Framework for Arena-based LLM
    Evaluation. ICML 2025, Algorithm 3.

    Examples
    --------
    Twelve simulated annotators, the first of whom swaps every win:

    >>> from ranking.simulation import perturb_outcomes, simulate_arena
    >>> sim = simulate_arena(n_models=8, n_annotators=12, records_per_annotator=80, rng=1)
    >>> flipped = perturb_outcomes(sim.outcome, sim.annotator, [0], strategy="flip")
    >>> res = stable_arena(sim.model_a, sim.model_b, sim.annotator, flipped)
    >>> res.status[:3]
    ('flagged', 'reliable', 'reliable')
    >>> res.reasons[0][:9]
    'theta = -'
    >>> res = stable_arena(sim.model_a, sim.model_b, sim.annotator, flipped, delta=50, epsilon=0.0)
    >>> res.annotators_with("flagged").tolist()
    [0]
    """
    _check_arena_options(delta, epsilon, action, se_bound, null_quantile, max_refits)
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
    assert d.k is not None
    n, m = d.n_models, d.n_annotators
    a_all, b_all, w_all, k_all = d.a, d.b, d.w, d.k
    n_records = np.bincount(k_all, minlength=m).astype(np.int64)
    tie_only = (np.bincount(k_all, weights=(w_all != 0.5).astype(np.float64), minlength=m) == 0) & (
        n_records > 0
    )
    excluded = np.zeros(m, dtype=bool)
    theta = np.full(m, np.nan)
    eps = np.full(m, np.nan)
    fits = 0
    while True:
        use = ~excluded[k_all]
        a, b, w, k = a_all[use], b_all[use], w_all[use], k_all[use]
        cnt = np.bincount(k, minlength=m)
        try:
            dlt = int(delta) if delta is not None else _delta_from(a, b, w, k, n, m, se_bound)
        except DegenerateDataError as err:
            raise DegenerateDataError(
                f"{err} (after excluding flagged annotators)" if excluded.any() else str(err)
            ) from err
        pending = (cnt <= dlt) & ~excluded
        nontie = np.bincount(k, weights=(w != 0.5).astype(np.float64), minlength=m)
        all_tie = ~pending & ~excluded & (nontie == 0)
        unbounded = np.zeros(m, dtype=bool)
        fit_set = ~pending & ~excluded & ~all_tie
        if not fit_set.any():
            raise DegenerateDataError(
                f"no annotator can be fitted: all have at most delta = {dlt} votes, vote tie "
                "on everything or were excluded; collect more votes or lower delta"
            )
        while True:
            ids = np.flatnonzero(fit_set)
            remap = np.full(m, -1, dtype=np.int64)
            remap[ids] = np.arange(ids.size)
            sel = fit_set[k]
            try:
                fit = am_elo(
                    a[sel],
                    b[sel],
                    remap[k[sel]],
                    w[sel],
                    n_models=n,
                    n_annotators=ids.size,
                    confidence=confidence,
                )
                fits += 1
                break
            except DegenerateDataError as err:
                bad = getattr(err, "annotators", None)
                if bad is None:
                    raise DegenerateDataError(
                        f"after setting aside {int((~fit_set).sum())} pending, all-tie or "
                        f"excluded annotator(s): {err}"
                    ) from err
                unbounded[ids[bad]] = True
                fit_set[ids[bad]] = False
                if not fit_set.any():
                    raise DegenerateDataError(
                        "no annotator can be fitted: every remaining annotator agrees or "
                        "disagrees with the ranking on every vote; collect more votes"
                    ) from err
        ids = np.flatnonzero(fit_set)
        theta_fit = fit.abilities
        if epsilon is None:
            s = fit.log_strengths
            sel = fit_set[k]
            thr = (
                null_ability_threshold(
                    s[a[sel]] - s[b[sel]],
                    w[sel],
                    np.searchsorted(ids, k[sel]),
                    n_annotators=ids.size,
                    quantile=null_quantile,
                )
                / ids.size
            )
        else:
            thr = np.full(ids.size, float(epsilon))
        theta[ids] = theta_fit
        eps[ids] = thr
        theta[all_tie] = 0.0
        eps[all_tie] = 0.0 if epsilon is None else float(epsilon)
        theta[pending | unbounded] = np.nan
        eps[pending | unbounded] = np.nan
        flagged_fit = np.zeros(m, dtype=bool)
        flagged_fit[ids] = theta_fit <= thr
        flagged_now = flagged_fit | all_tie
        if action == "warn" or not flagged_fit.any() or fits > max_refits:
            break
        excluded |= flagged_now

    status: list[str] = []
    reasons: list[str] = []
    in_ratings = np.zeros(m, dtype=bool)
    in_ratings[ids] = True
    if action == "warn":
        in_ratings |= all_tie  # ability 0: same ratings with or without them
    rule = "dynamic" if epsilon is None else "fixed"
    for j in range(m):
        nr = int(n_records[j])
        if all_tie[j] or (excluded[j] and tie_only[j]):
            status.append("flagged")
            tail = (
                "kept (no effect on the ratings)"
                if action == "warn"
                else "excluded from the ratings"
            )
            reasons.append(
                f"all {nr} votes are ties: ability is exactly 0 (no discrimination); {tail}"
            )
        elif excluded[j]:
            status.append("flagged")
            reasons.append(
                f"theta = {theta[j]:.4g} <= epsilon = {eps[j]:.4g} ({rule}) on {nr} votes: "
                "excluded from the ratings"
            )
        elif pending[j] or unbounded[j]:
            status.append("pending")
            if nr == 0:
                reasons.append("no votes yet")
            elif pending[j]:
                reasons.append(
                    f"{nr} vote(s) <= delta = {dlt}: too few to estimate its ability yet"
                )
            else:
                reasons.append(
                    f"{nr} votes, all decisive and all agreeing (or all disagreeing) with the "
                    "ranking: ability not yet bounded, needs more votes"
                )
        elif flagged_fit[j]:
            status.append("flagged")
            tail = (
                "warned, kept in the ratings" if action == "warn" else "excluded from the ratings"
            )
            reasons.append(
                f"theta = {theta[j]:.4g} <= epsilon = {eps[j]:.4g} ({rule}) on {nr} votes: {tail}"
            )
        else:
            status.append("reliable")
            reasons.append(
                f"theta = {theta[j]:.4g} > epsilon = {eps[j]:.4g} ({rule}) on {nr} votes"
            )
    ability_se = np.full(m, np.nan)
    ability_se[ids] = fit.ability_standard_errors
    return StableArenaResult(
        ratings=fit.ratings,
        lower=fit.lower,
        upper=fit.upper,
        ranks=fit.ranks,
        abilities=theta,
        ability_standard_errors=ability_se,
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
    )
