"""Robustness analyses of EIP rankings, as reported in the EIP paper.

* :func:`leave_models_out` - drop k random models and compare (Table 5, Table 9).
* :func:`alpha_sensitivity` - vary the damping factor (Table 14).
* :func:`anchor_sampling` - refit on a difficulty-stratified question sample (Table 20).

All correlations are Spearman's rho (:func:`ranking.compare.spearman_rho`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ranking._validation import make_rng
from ranking.compare import rank_displacement, spearman_rho
from ranking.eip import EIPResult, _as_response_matrix, eip
from ranking.errors import InvalidParameterError
from ranking.types import FloatArray, IntArray, RNGLike

__all__ = [
    "AlphaSensitivityResult",
    "AnchorSamplingResult",
    "LeaveModelsOutResult",
    "alpha_sensitivity",
    "anchor_sampling",
    "leave_models_out",
]


@dataclass(frozen=True)
class LeaveModelsOutResult:
    """Result of :func:`leave_models_out` (EIP paper, Table 5 and Table 9)."""

    ks: IntArray
    """Numbers of models removed, shape (n_ks,)."""

    question_rho: FloatArray
    """Spearman rho of question difficulty, reduced vs full pool, shape (n_ks, n_trials).

    Computed over the questions retained (not solved by all or by none) in both fits."""

    model_rho: FloatArray
    """Spearman rho of the remaining models' competency, reduced vs full, shape (n_ks, n_trials)."""

    questions_dropped: IntArray
    """Questions retained by the full pool but excluded by the reduced one.

    Shape (n_ks, n_trials)."""

    n_trials: int
    """Random removals per k."""

    alpha: float
    """Damping factor of every fit."""

    tol: float
    """Tolerance of every fit."""

    @property
    def question_rho_mean(self) -> FloatArray:
        """Mean question rho per k, shape (n_ks,)."""
        return np.asarray(self.question_rho.mean(axis=1))

    @property
    def question_rho_sd(self) -> FloatArray:
        """Sample standard deviation (ddof=1) of question rho per k, shape (n_ks,)."""
        return np.asarray(self.question_rho.std(axis=1, ddof=1 if self.n_trials > 1 else 0))

    @property
    def model_rho_mean(self) -> FloatArray:
        """Mean model rho per k, shape (n_ks,)."""
        return np.asarray(self.model_rho.mean(axis=1))

    @property
    def model_rho_sd(self) -> FloatArray:
        """Sample standard deviation (ddof=1) of model rho per k, shape (n_ks,)."""
        return np.asarray(self.model_rho.std(axis=1, ddof=1 if self.n_trials > 1 else 0))


@dataclass(frozen=True)
class AlphaSensitivityResult:
    """Result of :func:`alpha_sensitivity` (EIP paper, Table 14)."""

    alphas: FloatArray
    """Damping factors compared, shape (n_alphas,)."""

    model_rho: FloatArray
    """Spearman rho of competency vs the reference fit, shape (n_alphas,)."""

    question_rho: FloatArray
    """Spearman rho of difficulty (retained questions) vs the reference fit, shape (n_alphas,)."""

    iterations: IntArray
    """Iterations each fit needed, shape (n_alphas,)."""

    reference_alpha: float
    """Damping factor of the reference fit (the paper uses 1.0)."""

    reference_iterations: int
    """Iterations the reference fit needed."""

    tol: float
    """Tolerance of every fit."""


@dataclass(frozen=True)
class AnchorSamplingResult:
    """Result of :func:`anchor_sampling` (EIP paper, App. N, Table 20)."""

    rates: FloatArray
    """Anchor rates (fraction of questions), shape (n_rates,)."""

    n_anchors: IntArray
    """Anchors per sample, ``n_strata * ceil(rate * n_questions / n_strata)``, shape (n_rates,)."""

    model_rho: FloatArray
    """Spearman rho of anchor-only vs full competency, shape (n_rates, n_trials)."""

    rank_change: FloatArray
    """Mean absolute change of model rank position, shape (n_rates, n_trials)."""

    n_strata: int
    """Difficulty strata (10 = deciles)."""

    n_trials: int
    """Samples per rate."""

    alpha: float
    """Damping factor of every fit."""

    tol: float
    """Tolerance of every fit."""

    @property
    def model_rho_mean(self) -> FloatArray:
        """Mean model rho per rate, shape (n_rates,)."""
        return np.asarray(self.model_rho.mean(axis=1))

    @property
    def rank_change_mean(self) -> FloatArray:
        """Mean absolute rank change per rate, shape (n_rates,)."""
        return np.asarray(self.rank_change.mean(axis=1))


def _positive_int(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InvalidParameterError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _retained_rho(full: EIPResult, sub: EIPResult) -> float:
    both = full.retained & sub.retained
    return spearman_rho(full.difficulty[both], sub.difficulty[both])


def leave_models_out(
    A: npt.ArrayLike,
    ks: Sequence[int] = (1, 5, 10, 15),
    *,
    n_trials: int = 50,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
    rng: RNGLike = None,
) -> LeaveModelsOutResult:
    """Stability of EIP when k random models are removed from the pool.

    For each k and each trial, k models are drawn without replacement and
    removed, EIP is refitted, and the difficulty of the questions retained
    in both fits and the competency of the remaining models are compared
    with the full-pool fit by Spearman's rho.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    ks : sequence of int, default=(1, 5, 10, 15)
        Numbers of models to remove; each must leave at least two models.
    n_trials : int, default=50
        Random removals per k (the paper uses 50).
    alpha, tol, max_iter
        Passed to every :func:`ranking.eip` fit.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    LeaveModelsOutResult
        Per-trial correlations of shape (n_ks, n_trials), their means and
        standard deviations, and the number of questions dropped.

    Raises
    ------
    InvalidParameterError
        If a k is not in ``[1, n_models - 2]`` or ``n_trials`` is not positive.
    DegenerateDataError, ConvergenceError
        From a fit on a reduced pool (for example when a remaining model fails
        no retained question); the message names the failing fit.

    References
    ----------
    EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty,
    sec. 3.5 (Table 5) and App. E.1 (Table 9).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> A = (rng.random((300, 8)) < np.linspace(0.2, 0.8, 8)).astype(np.uint8)
    >>> res = leave_models_out(A, ks=[1, 3], n_trials=5, rng=1)
    >>> res.model_rho.shape
    (2, 5)
    >>> bool(res.model_rho_mean[0] > 0.9)
    True
    """
    arr = _as_response_matrix(A)
    n_m = arr.shape[1]
    n_trials = _positive_int(n_trials, "n_trials")
    ks_arr = np.asarray([_positive_int(k, "k") for k in ks], dtype=np.int64)
    if ks_arr.size == 0 or np.any(ks_arr > n_m - 2):
        raise InvalidParameterError(
            f"each k must be between 1 and n_models - 2 = {n_m - 2}, got {ks_arr.tolist()}"
        )
    gen = make_rng(rng)
    full = eip(arr, alpha=alpha, tol=tol, max_iter=max_iter)
    q_rho = np.empty((ks_arr.size, n_trials))
    m_rho = np.empty((ks_arr.size, n_trials))
    dropped = np.empty((ks_arr.size, n_trials), dtype=np.int64)
    for i, k in enumerate(ks_arr):
        for t in range(n_trials):
            removed = gen.choice(n_m, size=int(k), replace=False)
            kept = np.setdiff1d(np.arange(n_m), removed)
            sub = eip(arr[:, kept], alpha=alpha, tol=tol, max_iter=max_iter)
            q_rho[i, t] = _retained_rho(full, sub)
            m_rho[i, t] = spearman_rho(full.competency[kept], sub.competency)
            dropped[i, t] = int(np.sum(full.retained & ~sub.retained))
    return LeaveModelsOutResult(
        ks=ks_arr,
        question_rho=q_rho,
        model_rho=m_rho,
        questions_dropped=dropped,
        n_trials=n_trials,
        alpha=float(alpha),
        tol=float(tol),
    )


def alpha_sensitivity(
    A: npt.ArrayLike,
    alphas: Sequence[float] = (0.5, 0.6, 0.7, 0.85, 0.95, 0.99),
    *,
    reference_alpha: float = 1.0,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> AlphaSensitivityResult:
    """Spearman correlation of EIP rankings across damping factors.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    alphas : sequence of float, default=(0.5, 0.6, 0.7, 0.85, 0.95, 0.99)
        Damping factors to compare (the paper's Table 14 grid).
    reference_alpha : float, default=1.0
        Damping factor of the reference fit (the paper uses 1.0, no teleportation).
    tol : float, default=1e-10
        Tolerance of every fit.
    max_iter : int, default=10000
        Iteration cap of every fit; alpha near 1 converges slowly.

    Returns
    -------
    AlphaSensitivityResult
        ``model_rho`` and ``question_rho`` (over questions retained, which do
        not depend on alpha) per alpha, and the iterations of each fit.

    Raises
    ------
    ConvergenceError
        If a fit (in particular the reference at alpha = 1) does not converge.

    References
    ----------
    EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty, App. I (Table 14).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> A = (rng.random((300, 8)) < np.linspace(0.2, 0.8, 8)).astype(np.uint8)
    >>> res = alpha_sensitivity(A, [0.5, 0.95])
    >>> bool(np.all(res.model_rho > 0.9))
    True
    """
    arr = _as_response_matrix(A)
    alpha_arr = np.asarray([float(a) for a in alphas], dtype=np.float64)
    if alpha_arr.size == 0:
        raise InvalidParameterError("alphas must hold at least one damping factor")
    ref = eip(arr, alpha=reference_alpha, tol=tol, max_iter=max_iter)
    m_rho = np.empty(alpha_arr.size)
    q_rho = np.empty(alpha_arr.size)
    iters = np.empty(alpha_arr.size, dtype=np.int64)
    for i, a in enumerate(alpha_arr):
        fit = eip(arr, alpha=float(a), tol=tol, max_iter=max_iter)
        m_rho[i] = spearman_rho(ref.competency, fit.competency)
        q_rho[i] = _retained_rho(ref, fit)
        iters[i] = fit.iterations
    return AlphaSensitivityResult(
        alphas=alpha_arr,
        model_rho=m_rho,
        question_rho=q_rho,
        iterations=iters,
        reference_alpha=float(reference_alpha),
        reference_iterations=ref.iterations,
        tol=float(tol),
    )


def anchor_sampling(
    A: npt.ArrayLike,
    rates: Sequence[float] = (0.005, 0.01, 0.05),
    *,
    n_strata: int = 10,
    n_trials: int = 20,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
    rng: RNGLike = None,
) -> AnchorSamplingResult:
    """Recover the EIP model ranking from a difficulty-stratified question sample.

    The questions are split into ``n_strata`` equal-count strata by their
    full-pool EIP difficulty (deciles by default; questions solved by all
    and by none sit in the lowest and highest strata). From each stratum
    ``ceil(rate * n_questions / n_strata)`` questions are drawn without
    replacement, EIP is refitted on the anchors only, and the model ranking
    is compared with the full-question ranking. With the paper's 35,550
    questions this gives its 180, 360 and 1,780 anchors.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, as for :func:`ranking.eip`.
    rates : sequence of float, default=(0.005, 0.01, 0.05)
        Anchor rates in ``(0, 1]``.
    n_strata : int, default=10
        Number of difficulty strata.
    n_trials : int, default=20
        Samples per rate (the paper does not state its number).
    alpha, tol, max_iter
        Passed to every :func:`ranking.eip` fit.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    AnchorSamplingResult
        Spearman rho and mean absolute rank change per rate and trial.

    Raises
    ------
    InvalidParameterError
        If a rate is outside ``(0, 1]`` or ``n_strata`` exceeds the number of questions.
    DegenerateDataError, ConvergenceError
        From a fit on an anchor sample (for example when a model fails no
        sampled question); use a larger rate.

    References
    ----------
    EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty, App. N (Table 20).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> A = (rng.random((2000, 8)) < np.linspace(0.2, 0.8, 8)).astype(np.uint8)
    >>> res = anchor_sampling(A, [0.1], n_trials=3, rng=0)
    >>> res.n_anchors.tolist()
    [200]
    >>> bool(res.model_rho_mean[0] > 0.8)
    True
    """
    arr = _as_response_matrix(A)
    n_q = arr.shape[0]
    n_strata = _positive_int(n_strata, "n_strata")
    n_trials = _positive_int(n_trials, "n_trials")
    if n_strata > n_q:
        raise InvalidParameterError(f"n_strata={n_strata} exceeds the number of questions ({n_q})")
    rate_arr = np.asarray([float(r) for r in rates], dtype=np.float64)
    if rate_arr.size == 0 or np.any(~(rate_arr > 0) | (rate_arr > 1)):
        raise InvalidParameterError(f"rates must be in (0, 1], got {rate_arr.tolist()}")
    gen = make_rng(rng)
    full = eip(arr, alpha=alpha, tol=tol, max_iter=max_iter)
    order = np.argsort(full.difficulty, kind="stable")
    strata = np.array_split(order, n_strata)
    per = np.array([math.ceil(r * n_q / n_strata) for r in rate_arr], dtype=np.int64)
    n_anchors = np.array([sum(min(int(p), s.size) for s in strata) for p in per], dtype=np.int64)
    rho = np.empty((rate_arr.size, n_trials))
    change = np.empty((rate_arr.size, n_trials))
    for i, p in enumerate(per):
        for t in range(n_trials):
            rows = np.sort(
                np.concatenate(
                    [gen.choice(s, size=min(int(p), s.size), replace=False) for s in strata]
                )
            )
            sub = eip(arr[rows], alpha=alpha, tol=tol, max_iter=max_iter)
            rho[i, t] = spearman_rho(full.competency, sub.competency)
            change[i, t] = rank_displacement(full.competency, sub.competency)
    return AnchorSamplingResult(
        rates=rate_arr,
        n_anchors=n_anchors,
        model_rho=rho,
        rank_change=change,
        n_strata=n_strata,
        n_trials=n_trials,
        alpha=float(alpha),
        tol=float(tol),
    )
