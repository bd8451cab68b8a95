"""The EIP paper's robustness and diagnostic analyses on any response matrix.

Each function is one table or figure of the paper (EIP: Weighted Ranking of LLMs
by Quantifying Question Difficulty, ICLR 2026), computed on the caller's matrix:

* :func:`model_removal` - remove k random models (Table 5, Fig. 10), timed.
* :func:`leave_one_model_out` - each model left out vs k random (Table 9).
* :func:`leave_datasets_out` - each dataset left out (Table 10).
* :func:`alpha_convergence` - L1 change per iteration per damping factor (Table 8).
* :func:`rank_comparison` - EIP vs accuracy: rank changes, Kendall, RBO, ICC(1),
  windowed displacement (Table 11, Figs. 12-13).
* :func:`pool_difficulty` - difficulty distribution per model pool and the
  questions solved by all / none, the "dead nodes" (Fig. 8).
* :func:`weak_model_inflation` - duplicate the weakest models (Table 15).
* :func:`wrong_side_shares` and :func:`family_dominated` - each failing model's
  share ``pi_m / F(m)`` of a question's difficulty, and questions whose wrong
  side one family dominates (Tables 16-17).
* :func:`super_model_addition` - append a synthetic strong model (Table 18).
* :func:`anchor_questions` - one decile-stratified anchor sample (App. N, Table 20).
* :func:`group_agreement` - difficulty agreement between model groups (Fig. 6).
* :func:`difficulty_tiers` - each model's correct answers per difficulty tier, by
  leave-one-out difficulty (Figs. 5 and 11).
* :func:`eip_bootstrap` - percentile intervals of competency and difficulty from
  resampled questions (not in the paper).

A refit that cannot be computed (a reduced pool in which a model fails no
retained question, or one that does not converge) is recorded as NaN and
counted in the result's ``n_failed``; it never stops the analysis.
Timing (:func:`model_removal`) uses :func:`time.perf_counter`; nothing else
reads a clock, a file or the terminal.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ranking._validation import make_rng
from ranking.compare import ranks, spearman_rho
from ranking.eip import EIPResult, _as_response_matrix, eip
from ranking.errors import (
    ConvergenceError,
    InvalidParameterError,
    LengthMismatchError,
    RankingInputError,
)
from ranking.rank_metrics import ordering, rbo_extrapolated
from ranking.types import FloatArray, IntArray, RNGLike

__all__ = [
    "AlphaConvergenceResult",
    "BootstrapResult",
    "DatasetRemovalResult",
    "GroupAgreementResult",
    "InflationResult",
    "LeaveOneOutResult",
    "ModelRemovalResult",
    "PoolDifficultyResult",
    "RankComparisonResult",
    "SuperModelResult",
    "TierResult",
    "alpha_convergence",
    "anchor_questions",
    "difficulty_tiers",
    "eip_bootstrap",
    "family_dominated",
    "group_agreement",
    "icc1",
    "leave_datasets_out",
    "leave_one_model_out",
    "model_removal",
    "pool_difficulty",
    "rank_comparison",
    "scale_to_100",
    "super_model_addition",
    "weak_model_inflation",
    "wrong_side_shares",
]

_FitError = (RankingInputError, ConvergenceError)


def _fit(arr: npt.NDArray[np.generic], alpha: float, tol: float, max_iter: int) -> EIPResult | None:
    """An EIP fit, or None when this (reduced) matrix has none."""
    try:
        return eip(arr, alpha=alpha, tol=tol, max_iter=max_iter)
    except _FitError:
        return None


def _rho(x: FloatArray, y: FloatArray) -> float:
    """Spearman's rho, NaN when undefined (fewer than 2 items or a constant side)."""
    try:
        return spearman_rho(x, y)
    except RankingInputError:
        return math.nan


def _question_rho(full: EIPResult, sub: EIPResult) -> float:
    both = full.retained & sub.retained
    return _rho(full.difficulty[both], sub.difficulty[both])


def _positive_int(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InvalidParameterError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


# ---------------------------------------------------------------------------
# Table 5 / Fig. 10 and Table 9: removing models
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelRemovalResult:
    """Result of :func:`model_removal` (Table 5, Fig. 10). Arrays have shape (n_ks, n_trials)."""

    ks: IntArray
    """Numbers of models removed, shape (n_ks,)."""
    question_rho: FloatArray
    """Spearman rho of the difficulty of questions retained in both fits (NaN: failed refit)."""
    model_rho: FloatArray
    """Spearman rho of the remaining models' competency, reduced vs full."""
    questions_dropped: FloatArray
    """Questions retained by the full pool and excluded by the reduced one."""
    seconds: FloatArray
    """Wall time of each reduced fit."""
    full_seconds: float
    """Mean wall time of the full-pool fit (timed ``n_timing`` times)."""
    n_failed: IntArray
    """Reduced fits that could not be computed, per k, shape (n_ks,)."""
    n_trials: int
    alpha: float

    @property
    def seconds_mean(self) -> FloatArray:
        """Mean time per reduced fit, per k."""
        return np.asarray(np.nanmean(self.seconds, axis=1))

    @property
    def time_reduction(self) -> FloatArray:
        """Percent reduction of the mean fit time against the full pool, per k."""
        return np.asarray(100.0 * (1.0 - self.seconds_mean / self.full_seconds))


def _removal(
    arr: npt.NDArray[np.generic],
    full: EIPResult,
    removed: IntArray,
    alpha: float,
    tol: float,
    max_iter: int,
) -> tuple[float, float, float, float]:
    """(question rho, model rho, questions dropped, seconds) of one removal; NaN on failure."""
    n_m = arr.shape[1]
    kept = np.setdiff1d(np.arange(n_m), removed)
    reduced = arr[:, kept]
    t0 = time.perf_counter()
    sub = _fit(reduced, alpha, tol, max_iter)
    sec = time.perf_counter() - t0
    if sub is None:
        return math.nan, math.nan, math.nan, math.nan
    return (
        _question_rho(full, sub),
        _rho(full.competency[kept], sub.competency),
        float(np.sum(full.retained & ~sub.retained)),
        sec,
    )


def model_removal(
    A: npt.ArrayLike,
    ks: Sequence[int] = (1, 5, 10, 15),
    *,
    n_trials: int = 50,
    n_timing: int = 5,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
    rng: RNGLike = None,
) -> ModelRemovalResult:
    """Stability and fit time of EIP when k random models are removed.

    For each k and trial, k models are drawn without replacement and removed,
    EIP is refitted and compared with the full-pool fit: Spearman's rho of the
    difficulty of the questions retained in both fits, and of the competency of
    the remaining models. Unlike :func:`ranking.robustness.leave_models_out`, a
    refit that fails is recorded as NaN, and every fit is timed.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    ks : sequence of int, default=(1, 5, 10, 15)
        Models to remove; each in ``[1, n_models - 2]``.
    n_trials : int, default=50
        Removals per k (the paper's Table 5 uses 50).
    n_timing : int, default=5
        Times the full-pool fit is repeated for its mean time.
    alpha, tol, max_iter
        Passed to every fit.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    ModelRemovalResult

    Raises
    ------
    InvalidParameterError
        If a k is outside ``[1, n_models - 2]``.
    DegenerateDataError, ConvergenceError
        From the full-pool fit.

    References
    ----------
    EIP paper, sec. 3.5, Table 5 and Fig. 10.

    Examples
    --------
    >>> import numpy as np
    >>> A = (np.random.default_rng(0).random((300, 8)) < np.linspace(0.2, 0.8, 8)).astype(np.uint8)
    >>> res = model_removal(A, [1, 3], n_trials=4, rng=0)
    >>> res.model_rho.shape, bool(np.nanmean(res.model_rho[0]) > 0.9)
    ((2, 4), True)
    """
    arr = _as_response_matrix(A)
    n_m = arr.shape[1]
    n_trials = _positive_int(n_trials, "n_trials")
    n_timing = _positive_int(n_timing, "n_timing")
    ks_arr = np.asarray([_positive_int(k, "k") for k in ks], dtype=np.int64)
    if ks_arr.size == 0 or np.any(ks_arr > n_m - 2):
        raise InvalidParameterError(
            f"each k must be between 1 and n_models - 2 = {n_m - 2}, got {ks_arr.tolist()}"
        )
    gen = make_rng(rng)
    t0 = time.perf_counter()
    for _ in range(n_timing):
        full = eip(arr, alpha=alpha, tol=tol, max_iter=max_iter)
    full_seconds = (time.perf_counter() - t0) / n_timing
    out = np.full((4, ks_arr.size, n_trials), np.nan)
    for i, k in enumerate(ks_arr):
        for t in range(n_trials):
            removed = gen.choice(n_m, size=int(k), replace=False)
            out[:, i, t] = _removal(arr, full, removed, alpha, tol, max_iter)
    return ModelRemovalResult(
        ks=ks_arr,
        question_rho=out[0],
        model_rho=out[1],
        questions_dropped=out[2],
        seconds=out[3],
        full_seconds=full_seconds,
        n_failed=np.sum(np.isnan(out[3]), axis=1).astype(np.int64),
        n_trials=n_trials,
        alpha=float(alpha),
    )


@dataclass(frozen=True)
class LeaveOneOutResult:
    """Result of :func:`leave_one_model_out` (Table 9)."""

    loo_question_rho: FloatArray
    """Question rho with model j left out, shape (n_models,); NaN where the refit failed."""
    loo_model_rho: FloatArray
    """Model rho of the other models with model j left out, shape (n_models,)."""
    loo_dropped: FloatArray
    """Questions retained by the full pool but not without model j, shape (n_models,)."""
    random_question_rho: FloatArray
    """Question rho after removing ``random_k`` random models, shape (n_random,)."""
    random_model_rho: FloatArray
    """Model rho after removing ``random_k`` random models, shape (n_random,)."""
    random_dropped: FloatArray
    """Questions dropped after removing ``random_k`` random models, shape (n_random,)."""
    random_k: int
    n_questions: int


def leave_one_model_out(
    A: npt.ArrayLike,
    *,
    random_k: int = 5,
    n_random: int = 10,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
    rng: RNGLike = None,
) -> LeaveOneOutResult:
    """Each model left out once, against ``n_random`` removals of ``random_k`` random models.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    random_k : int, default=5
        Models removed per random trial (at most ``n_models - 2``).
    n_random : int, default=10
        Random trials (the paper's Table 9 uses 10).
    alpha, tol, max_iter
        Passed to every fit.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    LeaveOneOutResult
        Per-removal question and model rho and questions dropped; the paper's
        "max observed rho drop" is ``1 - min(rho)``.

    References
    ----------
    EIP paper, App. E.1, Table 9.
    """
    arr = _as_response_matrix(A)
    n_q, n_m = arr.shape
    random_k = _positive_int(random_k, "random_k")
    n_random = _positive_int(n_random, "n_random")
    if random_k > n_m - 2 or n_m < 3:
        raise InvalidParameterError(
            f"random_k must be between 1 and n_models - 2 = {n_m - 2}, got {random_k}"
        )
    gen = make_rng(rng)
    full = eip(arr, alpha=alpha, tol=tol, max_iter=max_iter)
    loo = np.array([_removal(arr, full, np.array([j]), alpha, tol, max_iter) for j in range(n_m)]).T
    rnd = np.array(
        [
            _removal(arr, full, gen.choice(n_m, size=random_k, replace=False), alpha, tol, max_iter)
            for _ in range(n_random)
        ]
    ).T
    return LeaveOneOutResult(
        loo_question_rho=loo[0],
        loo_model_rho=loo[1],
        loo_dropped=loo[2],
        random_question_rho=rnd[0],
        random_model_rho=rnd[1],
        random_dropped=rnd[2],
        random_k=random_k,
        n_questions=n_q,
    )


# ---------------------------------------------------------------------------
# Table 10: leave one dataset out
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetRemovalResult:
    """Result of :func:`leave_datasets_out` (Table 10)."""

    labels: npt.NDArray[np.generic]
    """Dataset labels, sorted (``numpy.unique``), shape (n_datasets,)."""
    n_questions: IntArray
    """Questions per dataset, shape (n_datasets,)."""
    model_rho: FloatArray
    """Spearman rho of competency without the dataset vs all, shape (n_datasets,); NaN
    where the refit failed or only one dataset exists."""


def leave_datasets_out(
    A: npt.ArrayLike,
    groups: npt.ArrayLike,
    *,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> DatasetRemovalResult:
    """Model-ranking stability when each dataset (group of questions) is left out.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    groups : array-like of shape (n_questions,)
        Dataset (or subject) label of each question.
    alpha, tol, max_iter
        Passed to every fit.

    Returns
    -------
    DatasetRemovalResult

    Raises
    ------
    LengthMismatchError
        If ``groups`` does not hold one label per question.

    References
    ----------
    EIP paper, App. E.2, Table 10.
    """
    arr = _as_response_matrix(A)
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != arr.shape[0]:
        raise LengthMismatchError(
            f"groups must hold one label per question: got shape {g.shape} for "
            f"{arr.shape[0]} questions"
        )
    labels, inverse, counts = np.unique(g, return_inverse=True, return_counts=True)
    full = eip(arr, alpha=alpha, tol=tol, max_iter=max_iter)
    rho = np.full(labels.size, np.nan)
    for k in range(labels.size):
        rows = inverse != k
        if not rows.any():
            continue
        sub = _fit(arr[rows], alpha, tol, max_iter)
        if sub is not None:
            rho[k] = _rho(full.competency, sub.competency)
    return DatasetRemovalResult(labels=labels, n_questions=counts.astype(np.int64), model_rho=rho)


# ---------------------------------------------------------------------------
# Table 8: convergence per damping factor
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AlphaConvergenceResult:
    """Result of :func:`alpha_convergence` (Table 8)."""

    alphas: FloatArray
    """Damping factors, shape (n_alphas,)."""
    deltas: FloatArray
    """``deltas[i, t]``: the L1 change of iteration t + 1 at ``alphas[i]``
    (:attr:`ranking.eip.EIPResult.deltas`), NaN after convergence; shape
    (n_alphas, max iterations)."""
    iterations: IntArray
    """Iterations to convergence, shape (n_alphas,); -1 where the fit did not converge."""
    tol: float


def alpha_convergence(
    A: npt.ArrayLike,
    alphas: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    *,
    tol: float = 1e-12,
    max_iter: int = 1000,
) -> AlphaConvergenceResult:
    """The L1 change per iteration of EIP for each damping factor (the paper's Table 8).

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    alphas : sequence of float, default=0.1, 0.2, ..., 1.0
        Damping factors in ``(0, 1]``.
    tol : float, default=1e-12
        Tolerance (Table 8 shows changes down to about 1e-13).
    max_iter : int, default=1000
        Iteration cap; a fit still above ``tol`` has iterations -1 and its record
        is left NaN.

    Returns
    -------
    AlphaConvergenceResult

    References
    ----------
    EIP paper, App. C, Table 8.

    Examples
    --------
    >>> A = [[1, 0], [1, 0], [0, 1], [1, 1]]
    >>> res = alpha_convergence(A, [0.5])
    >>> bool(res.deltas[0, res.iterations[0] - 1] < 1e-12)
    True
    """
    arr = _as_response_matrix(A)
    alpha_arr = np.asarray([float(a) for a in alphas], dtype=np.float64)
    if alpha_arr.size == 0:
        raise InvalidParameterError("alphas must hold at least one damping factor")
    records: list[FloatArray] = []
    iters = np.empty(alpha_arr.size, dtype=np.int64)
    for i, a in enumerate(alpha_arr):
        fit = _fit(arr, float(a), tol, max_iter)
        if fit is None:
            iters[i] = -1
            records.append(np.empty(0))
        else:
            iters[i] = fit.iterations
            records.append(fit.deltas)
    width = max(1, max(r.size for r in records))
    deltas = np.full((alpha_arr.size, width), np.nan)
    for i, r in enumerate(records):
        deltas[i, : r.size] = r
    return AlphaConvergenceResult(alphas=alpha_arr, deltas=deltas, iterations=iters, tol=tol)


# ---------------------------------------------------------------------------
# Table 11, Figs. 12-13: two rankings of the same models
# ---------------------------------------------------------------------------


def icc1(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """ICC(1): one-way random-effects intraclass correlation of two raters, single measure.

    ``(MSB - MSW) / (MSB + (k - 1) MSW)`` with k = 2 raters (Shrout & Fleiss 1979,
    ICC(1,1)); the "ICC1 (absolute agreement)" of the EIP paper's Table 11.

    Parameters
    ----------
    x, y : array-like of shape (n_items,)
        The two raters' values for the same items (at least 2 items).

    Returns
    -------
    float
        NaN when both mean squares are 0 (every value equal).

    References
    ----------
    Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in
    assessing rater reliability. Psychological Bulletin, 86(2), 420-428.

    Examples
    --------
    Worked by hand: pairs (1, 2), (2, 1), (3, 3) give MSB = 1.5, MSW = 1/3.

    >>> round(icc1([1, 2, 3], [2, 1, 3]), 6)
    0.636364
    """
    v = np.column_stack([np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)])
    n, k = v.shape
    if n < 2:
        raise LengthMismatchError(f"ICC needs at least 2 items, got {n}")
    row = v.mean(axis=1)
    msb = k * float(np.sum((row - v.mean()) ** 2)) / (n - 1)
    msw = float(np.sum((v - row[:, None]) ** 2)) / (n * (k - 1))
    den = msb + (k - 1) * msw
    return (msb - msw) / den if den > 0 else math.nan


@dataclass(frozen=True)
class RankComparisonResult:
    """Result of :func:`rank_comparison` (Table 11, Figs. 12-13)."""

    rank_a: FloatArray
    """Rank of each model by the first scores (1 = best; ties averaged), shape (n_models,)."""
    rank_b: FloatArray
    """Rank of each model by the second scores, shape (n_models,)."""
    abs_change: FloatArray
    """``|rank_a - rank_b|``, shape (n_models,)."""
    kendall_tau: float
    """Kendall's tau-b of the scores (scipy.stats.kendalltau)."""
    kendall_p: float
    """Its two-sided p-value."""
    rbo: float
    """Webber's extrapolated rank-biased overlap of the two orderings, persistence ``p``."""
    rbo_p: float
    icc1: float
    """:func:`icc1` of the two rank vectors."""
    windows: dict[int, FloatArray]
    """Window size w -> array of shape (n_windows, 4): first rank, last rank (by the
    second scores, the reference), mean and max ``abs_change`` of the models whose
    reference rank falls in the window."""
    window_tau: dict[int, FloatArray]
    """Window size w -> Kendall's tau inside each window (NaN with fewer than 2 models
    or a constant side), shape (n_windows,)."""

    @property
    def change_counts(self) -> IntArray:
        """Models per absolute rank change 0, 1, 2, ... (rounded), the histogram of Fig. 12."""
        return np.bincount(np.rint(self.abs_change).astype(np.int64)).astype(np.int64)


def _tau(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    from scipy import stats

    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan, math.nan
    r = stats.kendalltau(x, y)
    return float(r.statistic), float(r.pvalue)


def rank_comparison(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    windows: Sequence[int] = (1, 3, 5, 10),
    p: float = 0.9,
) -> RankComparisonResult:
    """Compare two model scorings (EIP competency ``a`` vs accuracy ``b``) as in Table 11.

    Parameters
    ----------
    a, b : array-like of shape (n_models,)
        Scores of the same models, higher is better; ``b`` defines the windows.
    windows : sequence of int, default=(1, 3, 5, 10)
        Window sizes over the reference ranks (Fig. 13: ``1-10``, ``11-20``, ...).
    p : float, default=0.9
        RBO persistence (the paper does not state its value).

    Returns
    -------
    RankComparisonResult

    References
    ----------
    EIP paper, App. G, Table 11, Figs. 12-13; Webber et al. (2010) for RBO.

    Examples
    --------
    >>> res = rank_comparison([3, 2, 1, 0], [3, 1, 2, 0], windows=[2])
    >>> res.abs_change.tolist(), res.windows[2][:, 2].tolist()
    ([0.0, 1.0, 1.0, 0.0], [0.5, 0.5])
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise LengthMismatchError(f"a and b must be 1-D of one length, got {x.shape} and {y.shape}")
    if x.size < 2:
        raise LengthMismatchError(f"a comparison needs at least 2 models, got {x.size}")
    ra, rb = ranks(x), ranks(y)
    change = np.abs(ra - rb)
    tau, tau_p = _tau(x, y)
    order_b = np.argsort(rb, kind="stable")
    wins: dict[int, FloatArray] = {}
    wtau: dict[int, FloatArray] = {}
    for w in windows:
        w = _positive_int(w, "window")
        rows, taus = [], []
        for lo in range(0, x.size, w):
            idx = order_b[lo : lo + w]
            rows.append(
                [lo + 1, lo + idx.size, float(change[idx].mean()), float(change[idx].max())]
            )
            taus.append(_tau(x[idx], y[idx])[0])
        wins[w] = np.asarray(rows, dtype=np.float64)
        wtau[w] = np.asarray(taus, dtype=np.float64)
    return RankComparisonResult(
        rank_a=ra,
        rank_b=rb,
        abs_change=change,
        kendall_tau=tau,
        kendall_p=tau_p,
        rbo=rbo_extrapolated(ordering(x), ordering(y), p=p),
        rbo_p=float(p),
        icc1=icc1(ra, rb),
        windows=wins,
        window_tau=wtau,
    )


# ---------------------------------------------------------------------------
# Fig. 8: difficulty per model pool and dead nodes
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolDifficultyResult:
    """Result of :func:`pool_difficulty` (Fig. 8). Arrays run over the pools given."""

    n_models: IntArray
    """Models per pool, shape (n_pools,)."""
    solved_by_all: FloatArray
    """Share of questions every model of the pool solves (observed entries), shape (n_pools,)."""
    solved_by_none: FloatArray
    """Share of questions no model of the pool solves, shape (n_pools,)."""
    histogram: FloatArray
    """Share of all questions per difficulty bin on the 0-100 scale, shape (n_pools,
    n_bins); questions solved by all fall in the first bin and by none in the last;
    NaN rows where the pool's EIP fit failed."""
    median_difficulty: FloatArray
    """Median 0-100 difficulty of the pool's retained questions, shape (n_pools,)."""
    bin_edges: FloatArray
    """Bin edges, shape (n_bins + 1,)."""

    @property
    def dead(self) -> FloatArray:
        """Share of dead nodes (solved by all or by none), shape (n_pools,)."""
        return np.asarray(self.solved_by_all + self.solved_by_none)


def pool_difficulty(
    A: npt.ArrayLike,
    pools: Sequence[npt.ArrayLike],
    *,
    n_bins: int = 10,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> PoolDifficultyResult:
    """EIP difficulty distribution and dead-node share for each pool of models.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    pools : sequence of array-like of int
        Model column indices of each pool (the paper: small, medium, large, whole).
    n_bins : int, default=10
        Histogram bins over 0-100.
    alpha, tol, max_iter
        Passed to every fit.

    Returns
    -------
    PoolDifficultyResult

    References
    ----------
    EIP paper, sec. 3.4, Fig. 8.

    Examples
    --------
    >>> A = [[1, 1, 0], [1, 0, 0], [0, 0, 0], [1, 1, 1]]
    >>> res = pool_difficulty(A, [[0, 1], [0, 1, 2]])
    >>> res.solved_by_all.tolist(), res.solved_by_none.tolist()
    ([0.5, 0.25], [0.25, 0.25])
    """
    arr = _as_response_matrix(A)
    n_q, n_m = arr.shape
    n_bins = _positive_int(n_bins, "n_bins")
    edges = np.linspace(0.0, 100.0, n_bins + 1)
    xs = np.asarray(arr, dtype=np.float64)
    obs = ~np.isnan(xs)
    k = len(pools)
    sizes = np.zeros(k, dtype=np.int64)
    s_all, s_none = np.zeros(k), np.zeros(k)
    hist = np.full((k, n_bins), np.nan)
    med = np.full(k, np.nan)
    for i, pool in enumerate(pools):
        cols = np.asarray(pool, dtype=np.int64)
        if cols.ndim != 1 or cols.size == 0 or np.any((cols < 0) | (cols >= n_m)):
            raise InvalidParameterError(
                f"pool {i} must hold model indices in [0, {n_m}), got {cols}"
            )
        sizes[i] = cols.size
        sub, o = xs[:, cols], obs[:, cols]
        succ = np.where(o, sub, 0.0).sum(axis=1)
        fail = np.where(o, 1.0 - sub, 0.0).sum(axis=1)
        seen = o.any(axis=1)
        none = seen & (succ <= 0)
        allq = seen & (fail <= 0) & ~none
        s_all[i], s_none[i] = allq.mean(), none.mean()
        fit = _fit(arr[:, cols][seen], alpha, tol, max_iter) if cols.size >= 2 else None
        if fit is not None:
            counts, _ = np.histogram(fit.difficulty_100, bins=edges)
            hist[i] = counts / n_q
            if fit.retained.any():
                med[i] = float(np.median(fit.difficulty_100[fit.retained]))
    return PoolDifficultyResult(
        n_models=sizes,
        solved_by_all=s_all,
        solved_by_none=s_none,
        histogram=hist,
        median_difficulty=med,
        bin_edges=edges,
    )


# ---------------------------------------------------------------------------
# Tables 15-18: weak-model inflation, wrong-side shares, family dominance, super model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class InflationResult:
    """Result of :func:`weak_model_inflation` (Table 15)."""

    weak: IntArray
    """Indices of the duplicated (weakest by EIP competency) models, shape (n_weak,)."""
    copies: int
    difficulty_pearson: float
    """Pearson r of the difficulty of retained questions, inflated vs original pool."""
    model_rho: float
    """Spearman rho of the original models' competency, inflated vs original."""
    top_unchanged: int
    """Models of the original top ``n_top`` whose rank did not change."""
    n_top: int
    bottom_max_change: float
    """Largest absolute rank change among the original bottom ``n_bottom`` models."""
    n_bottom: int
    rank_change: FloatArray
    """Absolute rank change of each original model, shape (n_models,)."""


def weak_model_inflation(
    A: npt.ArrayLike,
    *,
    n_weak: int = 10,
    copies: int = 2,
    n_top: int = 20,
    n_bottom: int = 10,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> InflationResult:
    """Add ``copies`` identical copies of each of the ``n_weak`` weakest models and refit.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    n_weak : int, default=10
        Weakest models (lowest EIP competency) duplicated; capped at n_models.
    copies : int, default=2
        Copies added per weak model (the paper: 10 x 2, 30 -> 50 models).
    n_top, n_bottom : int, default 20 and 10
        Sizes of the top and bottom groups reported (capped at n_models).
    alpha, tol, max_iter
        Passed to both fits.

    Returns
    -------
    InflationResult
        Ranks are positions among the original models (copies excluded).

    References
    ----------
    EIP paper, App. J, Table 15.
    """
    from scipy import stats

    arr = _as_response_matrix(A)
    n_m = arr.shape[1]
    n_weak = min(_positive_int(n_weak, "n_weak"), n_m)
    copies = _positive_int(copies, "copies")
    full = eip(arr, alpha=alpha, tol=tol, max_iter=max_iter)
    weak = np.argsort(full.competency, kind="stable")[:n_weak].astype(np.int64)
    big = np.concatenate([arr, np.repeat(arr[:, weak], copies, axis=1)], axis=1)
    inflated = eip(big, alpha=alpha, tol=tol, max_iter=max_iter)
    both = full.retained & inflated.retained
    pr = (
        float(stats.pearsonr(full.difficulty[both], inflated.difficulty[both]).statistic)
        if both.sum() >= 2
        else math.nan
    )
    r0, r1 = ranks(full.competency), ranks(inflated.competency[:n_m])
    change = np.abs(r0 - r1)
    n_top, n_bottom = min(n_top, n_m), min(n_bottom, n_m)
    top = r0 <= n_top
    bottom = r0 > n_m - n_bottom
    return InflationResult(
        weak=weak,
        copies=copies,
        difficulty_pearson=pr,
        model_rho=_rho(full.competency, inflated.competency[:n_m]),
        top_unchanged=int(np.sum(change[top] == 0)),
        n_top=n_top,
        bottom_max_change=float(change[bottom].max()),
        n_bottom=n_bottom,
        rank_change=change,
    )


def wrong_side_shares(A: npt.ArrayLike, result: EIPResult) -> FloatArray:
    """Each failing model's share of each question's difficulty, ``pi_m / F(m)`` normalised.

    Eq. 2 gives question q the mass ``sum_m (1 - a_qm) pi_m / F(m)``; model m's
    share is its term over that sum. ``F(m)`` is the failure total over the
    retained questions, as in the propagation (the paper's Table 16 prints the
    count over all questions).

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        The responses ``result`` was fitted on.
    result : EIPResult
        The EIP fit of ``A``.

    Returns
    -------
    ndarray of shape (n_questions, n_models)
        Rows of retained questions sum to 1; other rows are 0. Missing answers
        have share 0.

    References
    ----------
    EIP paper, eq. 2 and App. J, Table 16.

    Examples
    --------
    >>> import numpy as np
    >>> from ranking import eip
    >>> A = np.array([[1, 0], [1, 0], [0, 1], [1, 1]])
    >>> res = eip(A, alpha=0.5)
    >>> wrong_side_shares(A, res)[:, 1].tolist()
    [1.0, 1.0, 0.0, 0.0]
    """
    arr = np.asarray(_as_response_matrix(A), dtype=np.float64)
    if arr.shape != (result.difficulty.size, result.competency.size):
        raise LengthMismatchError(
            f"A has shape {arr.shape} but the fit is for "
            f"{(result.difficulty.size, result.competency.size)}"
        )
    fail = np.where(np.isnan(arr), 0.0, 1.0 - arr)
    keep = result.retained
    F = fail[keep].sum(axis=0)
    w = fail * np.divide(result.competency, F, out=np.zeros_like(F), where=F > 0)
    w[~keep] = 0.0
    tot = w.sum(axis=1, keepdims=True)
    return np.asarray(np.divide(w, tot, out=np.zeros_like(w), where=tot > 0), dtype=np.float64)


def family_dominated(
    shares: npt.ArrayLike,
    failing: npt.ArrayLike,
    families: npt.ArrayLike,
    *,
    threshold: float = 0.9,
    min_members: int = 2,
) -> IntArray:
    """The family that dominates each question's wrong side, or -1.

    A question is family-dominated when one family holds more than ``threshold``
    of its wrong-side mass (:func:`wrong_side_shares`) and has at least
    ``min_members`` failing models on it.

    Parameters
    ----------
    shares : array-like of shape (n_questions, n_models)
        From :func:`wrong_side_shares`.
    failing : array-like of bool, shape (n_questions, n_models)
        Whether each model failed each question (for partial credit: scored < 1).
    families : array-like of int, shape (n_models,)
        Family index of each model (0 .. n_families - 1).
    threshold : float, default=0.9
    min_members : int, default=2

    Returns
    -------
    ndarray of int, shape (n_questions,)
        The dominating family index, -1 where none.

    References
    ----------
    EIP paper, App. K, Table 17.

    Examples
    --------
    >>> s = [[0.5, 0.45, 0.05], [0.5, 0.0, 0.5]]
    >>> f = [[True, True, True], [True, False, True]]
    >>> family_dominated(s, f, [0, 0, 1]).tolist()
    [0, -1]
    """
    s = np.asarray(shares, dtype=np.float64)
    fl = np.asarray(failing, dtype=bool)
    fam = np.asarray(families, dtype=np.int64)
    if s.shape != fl.shape or s.ndim != 2 or fam.shape != (s.shape[1],):
        raise LengthMismatchError(
            f"shares {s.shape}, failing {fl.shape} and families {fam.shape} do not match"
        )
    n_f = int(fam.max()) + 1 if fam.size else 0
    onehot = np.zeros((fam.size, n_f))
    onehot[np.arange(fam.size), fam] = 1.0
    mass = s @ onehot
    members = fl.astype(np.float64) @ onehot
    best = np.argmax(mass, axis=1)
    rows = np.arange(s.shape[0])
    hit = (mass[rows, best] > threshold) & (members[rows, best] >= min_members)
    return np.where(hit, best, -1).astype(np.int64)


@dataclass(frozen=True)
class SuperModelResult:
    """Result of :func:`super_model_addition` (Table 18). Arrays have shape (n_accuracies,)."""

    accuracies: FloatArray
    model_rho: FloatArray
    """Spearman rho of the original models' competency, with vs without the super model."""
    mean_change: FloatArray
    """Mean absolute rank change of the original models."""
    max_change: FloatArray
    """Max absolute rank change of the original models."""
    super_rank: FloatArray
    """Rank of the added model in the expanded pool (1 = best)."""


def super_model_addition(
    A: npt.ArrayLike,
    accuracies: Sequence[float] = (0.99, 0.95, 0.9, 0.8),
    *,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
    rng: RNGLike = None,
) -> SuperModelResult:
    """Append a synthetic model that solves a random share ``p`` of the questions, refit.

    The synthetic model answers exactly ``round(p * n_questions)`` questions,
    drawn uniformly without replacement, correctly and the rest wrongly.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    accuracies : sequence of float, default=(0.99, 0.95, 0.9, 0.8)
        Accuracies of the added model, each in (0, 1).
    alpha, tol, max_iter
        Passed to every fit.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    SuperModelResult
        NaN where a refit failed.

    References
    ----------
    EIP paper, App. L, Table 18.
    """
    arr = np.asarray(_as_response_matrix(A), dtype=np.float64)
    n_q, n_m = arr.shape
    acc = np.asarray([float(p) for p in accuracies], dtype=np.float64)
    if acc.size == 0 or np.any(~((acc > 0) & (acc < 1))):
        raise InvalidParameterError(f"accuracies must be in (0, 1), got {acc.tolist()}")
    gen = make_rng(rng)
    full = eip(arr, alpha=alpha, tol=tol, max_iter=max_iter)
    r0 = ranks(full.competency)
    out = np.full((4, acc.size), np.nan)
    for i, p in enumerate(acc):
        col = np.zeros(n_q)
        col[gen.choice(n_q, size=round(p * n_q), replace=False)] = 1.0
        fit = _fit(np.column_stack([arr, col]), alpha, tol, max_iter)
        if fit is None:
            continue
        change = np.abs(r0 - ranks(fit.competency[:n_m]))
        out[:, i] = (
            _rho(full.competency, fit.competency[:n_m]),
            change.mean(),
            change.max(),
            ranks(fit.competency)[n_m],
        )
    return SuperModelResult(
        accuracies=acc,
        model_rho=out[0],
        mean_change=out[1],
        max_change=out[2],
        super_rank=out[3],
    )


# ---------------------------------------------------------------------------
# Table 20: one anchor sample
# ---------------------------------------------------------------------------


def anchor_questions(
    difficulty: npt.ArrayLike,
    rate: float,
    *,
    n_strata: int = 10,
    rng: RNGLike = None,
) -> IntArray:
    """One difficulty-stratified anchor sample, as :func:`ranking.robustness.anchor_sampling`
    draws it: ``n_strata`` equal-count strata by difficulty, ``ceil(rate * n / n_strata)``
    questions from each.

    Parameters
    ----------
    difficulty : array-like of shape (n_questions,)
        EIP difficulty (:attr:`ranking.eip.EIPResult.difficulty`).
    rate : float
        Anchor rate in (0, 1].
    n_strata : int, default=10
    rng : numpy.random.Generator, int or None

    Returns
    -------
    ndarray of int
        Sorted question indices.

    References
    ----------
    EIP paper, App. N, Table 20.

    Examples
    --------
    >>> anchor_questions(range(100), 0.1, rng=0).size
    10
    """
    d = np.asarray(difficulty, dtype=np.float64)
    n_strata = _positive_int(n_strata, "n_strata")
    if d.ndim != 1 or d.size < n_strata:
        raise InvalidParameterError(
            f"difficulty must be 1-D with at least n_strata={n_strata} values, got shape {d.shape}"
        )
    if not 0 < rate <= 1:
        raise InvalidParameterError(f"rate must be in (0, 1], got {rate!r}")
    gen = make_rng(rng)
    per = math.ceil(rate * d.size / n_strata)
    strata = np.array_split(np.argsort(d, kind="stable"), n_strata)
    rows = np.concatenate([gen.choice(s, size=min(per, s.size), replace=False) for s in strata])
    return np.sort(rows).astype(np.int64)


# ---------------------------------------------------------------------------
# Beyond the paper: bootstrap over questions
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapResult:
    """Result of :func:`eip_bootstrap`: percentile intervals from resampled questions."""

    competency: FloatArray
    """Full-data competency (probabilities), shape (n_models,)."""
    competency_low: FloatArray
    competency_high: FloatArray
    rank_low: FloatArray
    """Best (smallest) rank within the interval, shape (n_models,)."""
    rank_high: FloatArray
    difficulty_100: FloatArray
    """Full-data difficulty on the 0-100 scale, shape (n_questions,)."""
    difficulty_low: FloatArray
    """Lower percentile of the question's 0-100 difficulty over the resamples that drew it
    (NaN when fewer than 2 did), shape (n_questions,)."""
    difficulty_high: FloatArray
    n_boot: int
    n_failed: int
    """Resamples whose fit failed (left out)."""
    level: float


def eip_bootstrap(
    A: npt.ArrayLike,
    *,
    n_boot: int = 200,
    level: float = 0.95,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
    rng: RNGLike = None,
) -> BootstrapResult:
    """Percentile bootstrap intervals of EIP competency and difficulty over questions.

    Each replicate draws n_questions rows with replacement and refits EIP.
    Model competency (probabilities summing to 1) and rank get intervals
    over all successful replicates. A question's 0-100 difficulty is taken,
    in each replicate that drew it, from its first copy (copies have equal
    difficulty), so its interval uses about 63% of the replicates.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    n_boot : int, default=200
        Replicates.
    level : float, default=0.95
        Coverage of the percentile intervals.
    alpha, tol, max_iter
        Passed to every fit.
    rng : numpy.random.Generator, int or None

    Returns
    -------
    BootstrapResult

    References
    ----------
    Efron, B., & Tibshirani, R. J. (1993). An Introduction to the Bootstrap, ch. 13.
    """
    arr = _as_response_matrix(A)
    n_q, n_m = arr.shape
    n_boot = _positive_int(n_boot, "n_boot")
    if not 0 < level < 1:
        raise InvalidParameterError(f"level must be in (0, 1), got {level!r}")
    gen = make_rng(rng)
    full = eip(arr, alpha=alpha, tol=tol, max_iter=max_iter)
    comp = np.full((n_boot, n_m), np.nan)
    rk = np.full((n_boot, n_m), np.nan)
    diff = np.full((n_boot, n_q), np.nan, dtype=np.float32)
    for b in range(n_boot):
        idx = gen.integers(0, n_q, size=n_q)
        fit = _fit(arr[idx], alpha, tol, max_iter)
        if fit is None:
            continue
        comp[b], rk[b] = fit.competency, ranks(fit.competency)
        uq, first = np.unique(idx, return_index=True)
        diff[b, uq] = fit.difficulty_100[first]
    ok = ~np.isnan(comp[:, 0])
    lo_q, hi_q = 50 * (1 - level), 50 * (1 + level)
    dl = np.full(n_q, np.nan)
    dh = np.full(n_q, np.nan)
    enough = np.sum(~np.isnan(diff), axis=0) >= 2
    if enough.any():
        pct = np.nanpercentile(diff[:, enough].astype(np.float64), [lo_q, hi_q], axis=0)
        dl[enough], dh[enough] = pct[0], pct[1]
    if ok.any():
        cl, ch = np.percentile(comp[ok], [lo_q, hi_q], axis=0)
        rl, rh = np.percentile(rk[ok], [lo_q, hi_q], axis=0)
    else:
        cl = ch = rl = rh = np.full(n_m, np.nan)
    return BootstrapResult(
        competency=full.competency,
        competency_low=np.asarray(cl),
        competency_high=np.asarray(ch),
        rank_low=np.asarray(rl),
        rank_high=np.asarray(rh),
        difficulty_100=full.difficulty_100,
        difficulty_low=dl,
        difficulty_high=dh,
        n_boot=n_boot,
        n_failed=int(np.sum(~ok)),
        level=float(level),
    )


# ---------------------------------------------------------------------------
# Fig. 6: difficulty agreement between model groups; Figs. 5 and 11: tiers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupAgreementResult:
    """Result of :func:`group_agreement` (Fig. 6). Arrays run over ``pairs``."""

    pairs: IntArray
    """Group index pairs (i, j), i < j, shape (n_pairs, 2)."""
    spearman: FloatArray
    pearson: FloatArray
    kendall: FloatArray
    n_questions: IntArray
    """Questions retained by both groups' fits (the correlations run over them)."""
    fitted: npt.NDArray[np.bool_]
    """Whether each group's EIP fit succeeded, shape (n_groups,)."""


def group_agreement(
    A: npt.ArrayLike,
    groups: Sequence[npt.ArrayLike],
    *,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> GroupAgreementResult:
    """Agreement of the question difficulty that separate groups of models give.

    EIP is fitted on each group's columns alone; for each pair of groups the
    difficulties of the questions both fits retain are compared by Spearman,
    Pearson and Kendall (tau-b) correlation.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    groups : sequence of array-like of int
        Model column indices of each group (open-weight, proprietary, ...).
    alpha, tol, max_iter
        Passed to every fit.

    Returns
    -------
    GroupAgreementResult
        NaN where a group's fit failed or fewer than 3 questions are shared.

    References
    ----------
    EIP paper, sec. 3.4, Fig. 6.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> b = rng.normal(size=(400, 1))  # question difficulties shared by both groups
    >>> A = (rng.random((400, 8)) < 1 / (1 + np.exp(b - np.linspace(-1, 1, 8)))).astype(int)
    >>> res = group_agreement(A, [[0, 2, 4, 6], [1, 3, 5, 7]])
    >>> res.pairs.tolist(), bool(res.spearman[0] > 0)
    ([[0, 1]], True)
    """
    from scipy import stats

    arr = _as_response_matrix(A)
    n_m = arr.shape[1]
    fits: list[EIPResult | None] = []
    for i, g in enumerate(groups):
        cols = np.asarray(g, dtype=np.int64)
        if cols.ndim != 1 or np.any((cols < 0) | (cols >= n_m)):
            raise InvalidParameterError(f"group {i} must hold model indices in [0, {n_m})")
        fits.append(_fit(arr[:, cols], alpha, tol, max_iter) if cols.size >= 2 else None)
    pairs = [(i, j) for i in range(len(fits)) for j in range(i + 1, len(fits))]
    out = np.full((3, len(pairs)), np.nan)
    shared = np.zeros(len(pairs), dtype=np.int64)
    for p, (i, j) in enumerate(pairs):
        fi, fj = fits[i], fits[j]
        if fi is None or fj is None:
            continue
        both = fi.retained & fj.retained
        shared[p] = int(both.sum())
        x, y = fi.difficulty[both], fj.difficulty[both]
        if shared[p] < 3 or np.all(x == x[0]) or np.all(y == y[0]):
            continue
        out[:, p] = (
            _rho(x, y),
            float(stats.pearsonr(x, y).statistic),
            float(stats.kendalltau(x, y).statistic),
        )
    return GroupAgreementResult(
        pairs=np.asarray(pairs, dtype=np.int64).reshape(-1, 2),
        spearman=out[0],
        pearson=out[1],
        kendall=out[2],
        n_questions=shared,
        fitted=np.array([f is not None for f in fits], dtype=bool),
    )


@dataclass(frozen=True)
class TierResult:
    """Result of :func:`difficulty_tiers` (Figs. 5 and 11)."""

    solved: FloatArray
    """Score mass (correct answers) of each model per tier, easy to hard.

    Shape (n_models, n_tiers)."""
    answered: FloatArray
    """Observed answers of each model per tier, shape (n_models, n_tiers)."""
    failed: npt.NDArray[np.bool_]
    """Models whose leave-one-out fit failed (their rows are NaN), shape (n_models,)."""

    @property
    def accuracy(self) -> FloatArray:
        """Accuracy per tier, shape (n_models, n_tiers)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(self.solved / self.answered)


def difficulty_tiers(
    A: npt.ArrayLike,
    *,
    n_tiers: int = 3,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> TierResult:
    """Each model's correct answers split into difficulty tiers, by leave-one-out difficulty.

    For model m, EIP is fitted without m, so m's own answers do not shape the
    difficulty it is judged by; the questions are cut into ``n_tiers``
    equal-count tiers by that difficulty (questions solved by all of the other
    models are easiest and by none hardest; ties broken by question order) and
    m's correct answers are counted per tier.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    n_tiers : int, default=3
        Tiers (easy, medium, hard).
    alpha, tol, max_iter
        Passed to every fit.

    Returns
    -------
    TierResult

    References
    ----------
    EIP paper, sec. 3.4 (Fig. 5) and App. F (Fig. 11).

    Examples
    --------
    >>> import numpy as np
    >>> A = (np.random.default_rng(0).random((300, 5)) < np.linspace(0.3, 0.7, 5)).astype(int)
    >>> res = difficulty_tiers(A)
    >>> res.answered[0].tolist()
    [100.0, 100.0, 100.0]
    """
    arr = _as_response_matrix(A)
    n_m = arr.shape[1]
    n_tiers = _positive_int(n_tiers, "n_tiers")
    xs = np.asarray(arr, dtype=np.float64)
    solved = np.full((n_m, n_tiers), np.nan)
    answered = np.full((n_m, n_tiers), np.nan)
    failed = np.zeros(n_m, dtype=bool)
    for m in range(n_m):
        others = np.delete(np.arange(n_m), m)
        fit = _fit(arr[:, others], alpha, tol, max_iter) if others.size >= 2 else None
        if fit is None:
            failed[m] = True
            continue
        order = np.argsort(fit.difficulty, kind="stable")
        col = xs[:, m]
        for t, rows in enumerate(np.array_split(order, n_tiers)):
            v = col[rows]
            seen = ~np.isnan(v)
            solved[m, t] = float(v[seen].sum())
            answered[m, t] = float(seen.sum())
    return TierResult(solved=solved, answered=answered, failed=failed)


def scale_to_100(values: npt.ArrayLike, rule: str = "max") -> FloatArray:
    """Scores on the 0-100 scales of the EIP paper's figures.

    ``rule="max"`` divides by the largest value (Fig. 3 and Table 16: EIP scores and
    accuracies "normalized to a fixed maximum of 100"); ``rule="minmax"`` maps the
    smallest value to 0 and the largest to 100 (App. H.4: IRT abilities "min-max scaled
    to a 0-100 range"). NaN stays NaN; all NaN, a largest value of 0 (``max``) or no
    spread (``minmax``) give NaN.

    Examples
    --------
    >>> scale_to_100([0.2, 0.5, 0.1]).round(6).tolist()
    [40.0, 100.0, 20.0]
    >>> scale_to_100([-1.0, 0.0, 3.0], "minmax").tolist()
    [0.0, 25.0, 100.0]

    References
    ----------
    EIP paper (003), Fig. 3, Table 16 and App. H.4.
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    out = np.full(x.shape, np.nan)
    ok = np.isfinite(x)
    if not ok.any():
        return out
    lo, hi = float(x[ok].min()), float(x[ok].max())
    if rule == "max":
        if hi > 0:
            out[ok] = 100.0 * x[ok] / hi
    elif rule == "minmax":
        if hi > lo:
            out[ok] = 100.0 * (x[ok] - lo) / (hi - lo)
    else:
        raise InvalidParameterError(f"rule must be 'max' or 'minmax', got {rule!r}")
    return out
