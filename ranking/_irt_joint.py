"""Penalised joint maximum likelihood for the 1PL and 2PL models (:func:`fit_1pl`, :func:`fit_2pl`).

The configuration of the IRT baselines of the EIP paper (App. H.4); the public names
are re-exported by :mod:`ranking.irt`, which describes the orientation of ``A``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import expit

from ranking._irt_common import (
    _as_responses,
    _check_bounds,
    _check_l2,
    _check_settings,
    _logit_start,
    _run_lbfgsb,
)
from ranking.types import BoolArray, FloatArray

__all__ = ["IRTResult", "fit_1pl", "fit_2pl"]

_LOG2 = math.log(2.0)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class IRTResult:
    """A 1PL or 2PL fit by penalised joint maximum likelihood (:func:`fit_1pl`, :func:`fit_2pl`)."""

    ability: FloatArray
    """Ability of each model (column of ``A``), shape ``(n_models,)``; higher is stronger."""
    difficulty: FloatArray
    """Difficulty of each question (row of ``A``), shape ``(n_questions,)``; higher is harder."""
    discrimination: FloatArray
    """Discrimination of each question, shape ``(n_questions,)``; all ones for the 1PL model."""
    difficulty_se: FloatArray
    """Standard error of each difficulty, shape ``(n_questions,)``, conditional on the
    abilities (see :func:`fit_1pl`, Notes); NaN where the difficulty is not estimated (a
    question solved by all or none of its models, or a difficulty at its bound)."""
    discrimination_se: FloatArray
    """Standard error of each discrimination, shape ``(n_questions,)``, conditional on the
    abilities; all NaN for the 1PL model (not estimated), NaN where the question is solved by
    all or none or the discrimination is at its bound."""
    se_status: str
    """``"ok"``, or ``"not_positive_definite"`` when the information block of some
    question is not positive definite (its standard errors are then NaN)."""
    log_likelihood: float
    """Log-likelihood of the observed entries at the estimates, without the penalty."""
    objective: float
    """Minimised objective: negative log-likelihood plus the L2 penalty."""
    iterations: int
    """Iterations run: Newton warm-start steps plus L-BFGS-B iterations."""
    newton_iterations: int
    """Of which projected-Newton warm-start steps (2PL only; 0 for the 1PL model)."""
    model: str
    """``"1PL"`` or ``"2PL"``."""
    l2: float
    """L2 penalty coefficient used."""
    ability_bounds: tuple[float, float]
    """Box bounds used for abilities."""
    difficulty_bounds: tuple[float, float]
    """Box bounds used for difficulties."""
    discrimination_bounds: tuple[float, float]
    """Box bounds used for discriminations (``(1.0, 1.0)`` for the 1PL model)."""
    max_iter: int
    """Iteration limit used."""
    tol: float
    """Convergence tolerance used (see :func:`fit_2pl`)."""


# --------------------------------------------------------------------------- JML objectives


def _jml_2pl_objective(
    x: FloatArray, S: FloatArray, n_missing: int, l2: float, n_m: int
) -> tuple[float, FloatArray]:
    """Penalised negative log-likelihood of the 2PL model and its analytic gradient.

    See :func:`_jml_2pl_parts`.
    """
    f, g, _ = _jml_2pl_parts(x, S, n_missing, l2, n_m)
    return f, g


def _jml_2pl_parts(
    x: FloatArray, S: FloatArray, n_missing: int, l2: float, n_m: int
) -> tuple[float, FloatArray, FloatArray]:
    """Penalised 2PL negative log-likelihood, its gradient and the residuals ``y - p``.

    ``x = [theta (n_m), beta (n_q), alpha (n_q)]``; ``S`` is ``2y - 1`` on observed
    entries and ``0`` on missing ones, shape ``(n_q, n_m)``.
    ``P(y = 1) = expit(alpha_i (theta_j - beta_i))``.
    """
    n_q = S.shape[0]
    theta = x[:n_m]
    beta = x[n_m : n_m + n_q]
    alpha = x[n_m + n_q :]
    # u = S * z with z = alpha_i * (theta_j - beta_i); nll = sum softplus(-u)
    z = np.multiply.outer(alpha, theta)
    z -= (alpha * beta)[:, None]
    z *= S
    # softplus(-u) = max(-u, 0) + log(1 + exp(-|u|)); residual y - p = S * expit(-u)
    e = np.abs(z)
    np.negative(e, out=e)
    np.exp(e, out=e)  # e = exp(-|u|) in (0, 1]
    onep = e + 1.0
    nll = float(np.log(onep).sum() + np.maximum(-z, 0.0).sum()) - n_missing * _LOG2
    # expit(-u) = 1 / (1 + e) where u < 0, e / (1 + e) where u >= 0
    np.reciprocal(onep, out=onep)
    r = np.where(z >= 0, e * onep, onep)
    r *= S  # residual y - p, zero on missing entries
    rs = r.sum(axis=1)
    g_theta = -(alpha @ r) + 2.0 * l2 * theta
    g_beta = alpha * rs + 2.0 * l2 * beta
    g_alpha = -(r @ theta) + beta * rs + 2.0 * l2 * (alpha - 1.0)
    pen = l2 * float(theta @ theta + beta @ beta + (alpha - 1.0) @ (alpha - 1.0))
    return nll + pen, np.concatenate([g_theta, g_beta, g_alpha]), r


def _jml_1pl_objective(
    x: FloatArray,
    Ysum: FloatArray,
    M: FloatArray,
    counts: FloatArray,
    scores: FloatArray,
    l2: float,
    n_m: int,
) -> tuple[float, FloatArray]:
    """Penalised negative log-likelihood of the Rasch model on grouped questions.

    Questions with the same observed set of models and the same number correct
    share one difficulty at the optimum (the penalised objective is strictly
    convex and depends on their responses only through these sufficient
    statistics), so they are fitted as one group.

    ``x = [theta (n_m), beta (n_groups)]``; ``Ysum[g, j]`` is the number of
    correct answers of model ``j`` within group ``g``; ``M[g, j]`` is 1 when the
    group's questions were given to model ``j``; ``counts[g]`` is the group
    size and ``scores[g]`` the number correct of each of its questions.
    """
    theta = x[:n_m]
    beta = x[n_m:]
    z = theta[None, :] - beta[:, None]
    sp = np.logaddexp(0.0, z)  # softplus
    p = expit(z)
    cM = counts[:, None] * M
    nll = float((cM * sp).sum() - (Ysum @ theta).sum() + counts @ (scores * beta))
    r = Ysum - cM * p  # summed residuals y - p per group and model
    g_theta = -r.sum(axis=0) + 2.0 * l2 * theta
    g_beta = r.sum(axis=1) + 2.0 * l2 * counts * beta
    pen = l2 * float(theta @ theta + counts @ (beta * beta))
    return nll + pen, np.concatenate([g_theta, g_beta])


def _jml_2pl_value(x: FloatArray, S: FloatArray, n_missing: int, l2: float, n_m: int) -> float:
    """The objective of :func:`_jml_2pl_objective` without its gradient."""
    n_q = S.shape[0]
    theta = x[:n_m]
    beta = x[n_m : n_m + n_q]
    alpha = x[n_m + n_q :]
    u = np.multiply.outer(alpha, theta)
    u -= (alpha * beta)[:, None]
    u *= S
    e = np.abs(u)
    np.negative(e, out=e)
    np.exp(e, out=e)
    e += 1.0
    nll = float(np.log(e).sum() + np.maximum(-u, 0.0).sum()) - n_missing * _LOG2
    pen = l2 * float(theta @ theta + beta @ beta + (alpha - 1.0) @ (alpha - 1.0))
    return nll + pen


def _jml_2pl_newton(
    x: FloatArray,
    S: FloatArray,
    observed: BoolArray,
    n_missing: int,
    l2: float,
    n_m: int,
    lo: FloatArray,
    hi: FloatArray,
    scale: FloatArray,
    *,
    max_iter: int,
    tol: float,
) -> tuple[FloatArray, int]:
    """Projected Fisher-scoring steps on the penalised 2PL objective (a warm start).

    The expected Hessian has an arrow structure: a diagonal block for the
    abilities, one 2x2 block per question and a dense coupling. Eliminating
    the question blocks leaves an ``n_m x n_m`` Schur complement, so one step
    costs O(n_questions x n_models^2). Variables at a bound whose gradient
    points outwards are held fixed (projected Newton, Bertsekas 1982); each
    step is backtracked until the objective decreases. Returns the point
    reached and the number of steps; L-BFGS-B then finishes and certifies it.
    """
    n_q = S.shape[0]
    w_obs = observed.astype(np.float64)
    y = (S + 1.0) * 0.5 * w_obs
    f, g, r = _jml_2pl_parts(x, S, n_missing, l2, n_m)
    use_observed = False  # Fisher scoring far from the optimum, observed Hessian near it
    it = 0
    for it in range(1, max_iter + 1):
        active = ((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0))
        if np.max(np.abs(np.where(active, 0.0, g)) / scale) <= tol:
            it -= 1
            break
        theta, beta, alpha = x[:n_m], x[n_m : n_m + n_q], x[n_m + n_q :]
        a_t, a_b, a_a = active[:n_m], active[n_m : n_m + n_q], active[n_m + n_q :]
        g_t = np.where(a_t, 0.0, g[:n_m])
        g_b = np.where(a_b, 0.0, g[n_m : n_m + n_q])
        g_a = np.where(a_a, 0.0, g[n_m + n_q :])
        e = theta[None, :] - beta[:, None]
        p = y - r  # r = y - p on observed entries (0 where missing, where w is 0 too)
        w = p * (1.0 - p)
        w *= w_obs
        we = w * e
        sw, swe, swee = w.sum(axis=1), we.sum(axis=1), (we * e).sum(axis=1)
        a2 = alpha * alpha
        h_t = np.where(a_t, 1.0, a2 @ w + 2.0 * l2)
        h_bb = np.where(a_b, 1.0, a2 * sw + 2.0 * l2)
        h_aa = np.where(a_a, 1.0, swee + 2.0 * l2)
        h_ba = np.where(a_b | a_a, 0.0, -alpha * swe)
        keep_t = (~a_t).astype(np.float64)
        c_b = (-np.where(a_b, 0.0, a2))[:, None] * w * keep_t  # d2/(dbeta_i dtheta_j)
        c_a = np.where(a_a, 0.0, alpha)[:, None] * we  # d2/(dalpha_i dtheta_j), Fisher part
        # the observed Hessian adds residual terms to the (alpha, theta) and (alpha, beta)
        # entries; use it where it keeps the question block positive definite (quadratic
        # convergence), else the expected (Fisher) information
        h_ba_obs = h_ba + np.where(a_b | a_a, 0.0, r.sum(axis=1))
        exact = h_bb * h_aa - h_ba_obs * h_ba_obs > 1e-12 * h_bb * h_aa
        exact &= use_observed
        d_t = None
        for use_exact in (exact, np.zeros_like(exact)):
            hb = np.where(use_exact, h_ba_obs, h_ba)
            ca = c_a - np.where(use_exact & ~a_a, 1.0, 0.0)[:, None] * r
            ca *= keep_t
            det = h_bb * h_aa - hb * hb
            u, v, s_ = h_aa / det, -hb / det, h_bb / det
            # sum_i c_i^T B_i^-1 c_i as one Gram matrix: B_i^-1 = L L^T (2 x 2 Cholesky)
            l11 = np.sqrt(u)
            l21 = v / l11
            l22 = np.sqrt(np.maximum(s_ - l21 * l21, 0.0))
            K = np.concatenate([l11[:, None] * c_b + l21[:, None] * ca, l22[:, None] * ca])
            schur = np.diag(h_t) - K.T @ K
            q_b, q_a = u * g_b + v * g_a, v * g_b + s_ * g_a
            rhs = -g_t + c_b.T @ q_b + ca.T @ q_a
            try:
                chol = np.linalg.cholesky(schur)
            except np.linalg.LinAlgError:
                continue
            d_t = np.linalg.solve(chol.T, np.linalg.solve(chol, rhs))
            break
        if d_t is None:
            break
        c_a = ca
        r_b, r_a = -g_b - c_b @ d_t, -g_a - c_a @ d_t
        step = np.concatenate([d_t, u * r_b + v * r_a, v * r_b + s_ * r_a])
        t = 1.0
        parts = None
        while t > 1e-6:
            x_new = np.clip(x + t * step, lo, hi)
            if t == 1.0:  # the full step is usually taken: get its gradient at once
                parts = _jml_2pl_parts(x_new, S, n_missing, l2, n_m)
                f_new = parts[0]
            else:
                parts, f_new = None, _jml_2pl_value(x_new, S, n_missing, l2, n_m)
            if f_new <= f + 1e-4 * (g @ (x_new - x)):
                break
            t *= 0.5
        else:
            break
        decrease = f - f_new
        x = x_new
        f, g, r = parts if parts is not None else _jml_2pl_parts(x, S, n_missing, l2, n_m)
        if decrease <= 1e-14 * max(abs(f), 1.0):
            break
        use_observed = use_observed or decrease <= 1e-5 * max(abs(f), 1.0)
    return x, it


def _at_bound(v: FloatArray, bounds: tuple[float, float]) -> BoolArray:
    """Where ``v`` sits on (within rounding of) one of its box bounds."""
    lo, hi = bounds
    return np.asarray(
        (v <= lo + 1e-8 * (1.0 + abs(lo))) | (v >= hi - 1e-8 * (1.0 + abs(hi))), dtype=np.bool_
    )


def _jml_1pl_se(
    theta: FloatArray,
    beta: FloatArray,
    M: FloatArray,
    scores: FloatArray,
    l2: float,
    difficulty_bounds: tuple[float, float],
) -> tuple[FloatArray, str]:
    """Difficulty SEs of the 1PL JML fit with the abilities held at their estimates.

    One question's block of the Hessian of the penalised objective is
    ``sum_j m_ij p_ij (1 - p_ij) + 2 l2``. NaN for questions solved by all or none of
    their models and for difficulties at a bound. Rows of ``M`` may be question groups.
    """
    p = expit(theta[None, :] - beta[:, None])
    h = (M * p * (1.0 - p)).sum(axis=1) + 2.0 * l2
    n_obs = M.sum(axis=1)
    undefined = (scores == 0) | (scores == n_obs) | _at_bound(beta, difficulty_bounds)
    singular = ~undefined & ~(h > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.where(undefined | singular, np.nan, 1.0 / np.sqrt(h))
    return se, "not_positive_definite" if singular.any() else "ok"


def _jml_2pl_se(
    theta: FloatArray,
    beta: FloatArray,
    alpha: FloatArray,
    y: FloatArray,
    observed: BoolArray,
    l2: float,
    difficulty_bounds: tuple[float, float],
    discrimination_bounds: tuple[float, float],
) -> tuple[FloatArray, FloatArray, str]:
    """Difficulty and discrimination SEs of the 2PL JML fit, abilities held fixed.

    Each question's 2 x 2 block of the observed Hessian of the penalised objective in
    ``(beta_i, alpha_i)``, with ``e = theta - beta``, ``w = p (1 - p)``, ``r = y - p`` summed
    over its observed models: ``[[alpha^2 sum w + 2 l2, sum r - alpha sum w e],
    [., sum w e^2 + 2 l2]]``. A parameter at its bound is held fixed (its SE is NaN, the
    other's is conditional on it); both are NaN for questions solved by all or none.
    """
    w_obs = observed.astype(np.float64)
    e = theta[None, :] - beta[:, None]
    p = expit(alpha[:, None] * e)
    w = p * (1.0 - p) * w_obs
    r = (y - p) * w_obs
    h_bb = alpha * alpha * w.sum(axis=1) + 2.0 * l2
    h_aa = (w * e * e).sum(axis=1) + 2.0 * l2
    h_ba = r.sum(axis=1) - alpha * (w * e).sum(axis=1)
    k, n_obs = y.sum(axis=1), w_obs.sum(axis=1)
    extreme = (k == 0) | (k == n_obs)
    fix_b = extreme | _at_bound(beta, difficulty_bounds)
    fix_a = extreme | _at_bound(alpha, discrimination_bounds)
    det = h_bb * h_aa - h_ba * h_ba
    both = ~fix_b & ~fix_a
    # positive definite: leading minor and determinant (2 x 2), or the lone diagonal entry
    ok = np.where(both, (h_bb > 0) & (det > 0), np.where(fix_b, h_aa > 0, h_bb > 0))
    singular = ~(fix_b & fix_a) & ~ok
    with np.errstate(divide="ignore", invalid="ignore"):
        var_b = np.where(both, h_aa / det, 1.0 / h_bb)
        var_a = np.where(both, h_bb / det, 1.0 / h_aa)
        se_b = np.where(fix_b | singular, np.nan, np.sqrt(var_b))
        se_a = np.where(fix_a | singular, np.nan, np.sqrt(var_a))
    return se_b, se_a, "not_positive_definite" if singular.any() else "ok"


def _jml_log_likelihood(
    y: FloatArray,
    observed: BoolArray,
    ability: FloatArray,
    difficulty: FloatArray,
    disc: FloatArray,
) -> float:
    z = disc[:, None] * (ability[None, :] - difficulty[:, None])
    ll = y * z - np.logaddexp(0.0, z)
    return float(ll[observed].sum())


# --------------------------------------------------------------------------- JML public


def fit_1pl(
    A: npt.ArrayLike,
    *,
    l2: float = 0.01,
    ability_bounds: tuple[float, float] = (-5.0, 5.0),
    difficulty_bounds: tuple[float, float] = (-5.0, 5.0),
    max_iter: int = 1000,
    tol: float = 1e-6,
) -> IRTResult:
    """Fit the 1PL (Rasch) model by penalised joint maximum likelihood.

    ``P(A[i, j] = 1) = expit(theta_j - beta_i)`` for question ``i`` and model
    ``j``. Minimises ``-loglik + l2 * (sum theta**2 + sum beta**2)`` over the
    observed entries with L-BFGS-B and its analytic gradient, subject to the
    box bounds: the EIP paper's 1PL baseline configuration (App. H.4).

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Binary responses: 1 correct, 0 wrong, NaN not administered (left out of
        the likelihood). Rows are questions, columns are models.
    l2 : float, default 0.01
        L2 penalty coefficient on abilities and difficulties.
    ability_bounds, difficulty_bounds : tuple of float, default (-5, 5)
        Box bounds for abilities and difficulties.
    max_iter : int, default 1000
        Maximum L-BFGS-B iterations (the paper's limit).
    tol : float, default 1e-6
        Stop when the largest projected-gradient component (after a diagonal
        rescaling of the variables by the square root of their expected
        information) falls below ``tol``.

    Returns
    -------
    IRTResult
        ``ability`` of shape (n_models,), ``difficulty`` of shape
        (n_questions,), ``discrimination`` all ones, the unpenalised
        ``log_likelihood``, ``iterations`` and the settings. Identifiability:
        the model is invariant to shifting ``theta`` and ``beta`` together;
        the penalty fixes the shift so that ``sum(theta) + sum(beta) = 0`` at
        the optimum (when no bound is active).
        ``difficulty_se`` (shape (n_questions,)) holds conditional standard
        errors (see Notes), ``discrimination_se`` is all NaN (not estimated)
        and ``se_status`` is ``"ok"`` or ``"not_positive_definite"``.

    Raises
    ------
    ShapeError
        If ``A`` is not 2-D or is empty.
    InvalidParameterError
        If ``A`` holds values other than 0, 1 and NaN, or a setting is invalid.
    DegenerateDataError
        If there are fewer than 2 questions or 2 models, or a question or model
        has no observed response.
    ConvergenceError
        If L-BFGS-B stops without meeting ``tol``.

    Notes
    -----
    Questions answered correctly by every model (or by none) have an infinite
    unpenalised maximum-likelihood difficulty; here the penalty and the bounds
    keep it finite (it ends near or at the bound), and the same holds for
    models that answer everything right or wrong. Such questions stay at the
    extreme of the difficulty ranking. Their ``difficulty_se`` is NaN: the
    data do not estimate them (nor any difficulty that ends at its bound).

    Standard errors are conditional on the abilities: each question's block
    of the Hessian of the penalised objective, ``sum_j p_ij (1 - p_ij) +
    2 l2`` over its observed models, with the abilities held at their
    estimates (the "model standard error" of joint-ML Rasch programs such as
    Winsteps). This is cheap and free of the location gauge that the full
    joint Hessian would mix in, but it is approximate: it ignores the
    uncertainty of the abilities (so it understates), and joint ML itself is
    inconsistent when the number of models stays small (Andersen 1973), so
    the SE measures precision around a biased estimate. For calibrated SEs
    use :func:`fit_1pl_mml`.

    The penalised objective is strictly convex, and questions with the same
    observed models and the same number correct have the same sufficient
    statistics, so they share one difficulty at the optimum; the fit is
    computed over these groups (at most ``n_models + 1`` groups on a complete
    matrix), which gives the same estimates as the ungrouped problem much
    faster.

    References
    ----------
    .. [1] G. Rasch, *Probabilistic Models for Some Intelligence and Attainment
       Tests*, 1960.
    .. [2] EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty,
       ICLR 2026, App. H.4 (IRT baseline configurations).
    .. [3] E. B. Andersen, "Conditional inference and models for measuring",
       Mentalhygiejnisk Forlag, 1973 (inconsistency of joint ML).
    .. [4] B. D. Wright and G. N. Masters, *Rating Scale Analysis*, MESA Press,
       1982 (model standard errors of joint-ML item measures).

    Examples
    --------
    >>> import numpy as np
    >>> from ranking import fit_1pl
    >>> A = np.array([[1, 1, 1, 0],
    ...               [1, 1, 0, 0],
    ...               [1, 0, 0, 0],
    ...               [1, 1, 1, 1],
    ...               [0, 1, 0, 0]])
    >>> res = fit_1pl(A)
    >>> [int(i) for i in np.argsort(-res.ability)]  # strongest model first
    [0, 1, 2, 3]
    >>> bool(res.difficulty[2] > res.difficulty[0])  # solved by fewer models
    True
    >>> bool(np.isnan(res.difficulty_se[3]))  # solved by every model: not estimated
    True
    """
    l2 = _check_l2(l2)
    ab = _check_bounds(ability_bounds, "ability_bounds")
    db = _check_bounds(difficulty_bounds, "difficulty_bounds")
    max_iter, tol = _check_settings(max_iter=max_iter, tol=tol)
    y, observed = _as_responses(A, min_questions=2, min_models=2)
    n_q, n_m = y.shape

    # group questions by (observed models, number correct): exact sufficient statistics
    scores_all = y.sum(axis=1)
    if observed.all():
        key: Any = scores_all.astype(np.int64)
    else:
        packed = np.packbits(observed, axis=1)
        key = np.concatenate([packed.astype(np.int64), scores_all[:, None].astype(np.int64)], 1)
    _, group, counts_i = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    group = group.reshape(-1)
    n_g = counts_i.size
    counts = counts_i.astype(np.float64)
    Ysum = np.zeros((n_g, n_m))
    np.add.at(Ysum, group, y)
    M = np.zeros((n_g, n_m))
    M[group] = observed
    scores = np.zeros(n_g)
    scores[group] = scores_all

    n_obs_q = M.sum(axis=1)
    theta0 = np.clip(_logit_start(y.sum(axis=0), observed.sum(axis=0)), *ab)
    beta0 = np.clip(-_logit_start(scores, n_obs_q) + theta0.mean(), *db)
    x0 = np.concatenate([theta0, beta0])
    scale = np.sqrt(
        np.concatenate([0.25 * (counts[:, None] * M).sum(axis=0), 0.25 * counts * n_obs_q])
        + 2.0 * l2 * np.concatenate([np.ones(n_m), counts])
        + 1e-12
    )
    bounds = [ab] * n_m + [db] * n_g

    def fun(x: FloatArray) -> tuple[float, FloatArray]:
        return _jml_1pl_objective(x, Ysum, M, counts, scores, l2, n_m)

    x, f, nit = _run_lbfgsb(fun, x0, scale, bounds, max_iter=max_iter, tol=tol, what="fit_1pl")
    ability = x[:n_m].copy()
    difficulty = x[n_m:][group]
    disc = np.ones(n_q)
    se_group, se_status = _jml_1pl_se(ability, x[n_m:], M, scores, l2, db)
    return IRTResult(
        ability=ability,
        difficulty=difficulty,
        discrimination=disc,
        difficulty_se=se_group[group],
        discrimination_se=np.full(n_q, np.nan),
        se_status=se_status,
        log_likelihood=_jml_log_likelihood(y, observed, ability, difficulty, disc),
        objective=f,
        iterations=nit,
        newton_iterations=0,
        model="1PL",
        l2=l2,
        ability_bounds=ab,
        difficulty_bounds=db,
        discrimination_bounds=(1.0, 1.0),
        max_iter=max_iter,
        tol=tol,
    )


def fit_2pl(
    A: npt.ArrayLike,
    *,
    l2: float = 0.01,
    ability_bounds: tuple[float, float] = (-5.0, 5.0),
    difficulty_bounds: tuple[float, float] = (-5.0, 5.0),
    discrimination_bounds: tuple[float, float] = (0.1, 5.0),
    max_iter: int = 1000,
    tol: float = 1e-6,
) -> IRTResult:
    """Fit the 2PL model by penalised joint maximum likelihood.

    ``P(A[i, j] = 1) = expit(alpha_i (theta_j - beta_i))`` for question ``i``
    and model ``j``. Minimises ``-loglik + l2 * (sum theta**2 + sum beta**2 +
    sum (alpha - 1)**2)`` over the observed entries with L-BFGS-B and its
    analytic gradient, subject to the box bounds: the EIP paper's 2PL
    baseline configuration (App. H.4).

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Binary responses: 1 correct, 0 wrong, NaN not administered (left out of
        the likelihood). Rows are questions, columns are models.
    l2 : float, default 0.01
        L2 penalty coefficient on abilities, difficulties and
        ``discrimination - 1``.
    ability_bounds, difficulty_bounds : tuple of float, default (-5, 5)
        Box bounds for abilities and difficulties.
    discrimination_bounds : tuple of float, default (0.1, 5)
        Box bounds for discriminations; the lower bound must be positive.
    max_iter : int, default 1000
        Maximum L-BFGS-B iterations (the paper's limit).
    tol : float, default 1e-6
        Stop when the largest projected-gradient component (after a diagonal
        rescaling of the variables by the square root of their expected
        information at the start) falls below ``tol``.

    Returns
    -------
    IRTResult
        ``ability`` of shape (n_models,), ``difficulty`` and
        ``discrimination`` of shape (n_questions,), the unpenalised
        ``log_likelihood``, ``iterations`` and the settings. Identifiability:
        location and scale of ``theta`` are fixed by the penalty (and the
        bounds), not by a constraint; the objective is not convex, and the
        start (abilities from the log-odds of each model's accuracy,
        difficulties from each question's, discriminations 1) is
        deterministic.
        ``difficulty_se`` and ``discrimination_se`` (shape (n_questions,))
        hold conditional standard errors, with ``se_status`` (see Notes).

    Raises
    ------
    ShapeError
        If ``A`` is not 2-D or is empty.
    InvalidParameterError
        If ``A`` holds values other than 0, 1 and NaN, or a setting is invalid.
    DegenerateDataError
        If there are fewer than 2 questions or 2 models, or a question or model
        has no observed response.
    ConvergenceError
        If L-BFGS-B stops without meeting ``tol``.

    Notes
    -----
    Questions answered correctly by every model (or by none) have an infinite
    unpenalised maximum-likelihood difficulty; the penalty and the bounds keep
    it finite (within ``difficulty_bounds``). Unlike the 1PL model, the 2PL
    model does not promise them the extreme ranks: a question solved by every
    model can get a low discrimination and a moderate difficulty.
    Their standard errors are NaN.

    Standard errors are conditional on the abilities: the inverse of each
    question's 2 x 2 block of the observed Hessian of the penalised
    objective in ``(beta_i, alpha_i)``, with the abilities held at their
    estimates. A parameter at its bound is held fixed too (its SE is NaN and
    the other parameter's SE is conditional on it). A block that is not
    positive definite (possible away from convexity, since the objective is
    not convex in ``(beta, alpha)``) gives NaN and ``se_status =
    "not_positive_definite"``. These SEs are approximate: they ignore the
    uncertainty of the abilities (so they understate) and joint ML is
    inconsistent with few models; with many persons use
    :func:`fit_2pl_mml`, whose SEs come from the marginal information.

    The objective is flat along the joint location and scale of abilities and
    difficulties (only the weak penalty pins them), which makes plain
    L-BFGS-B crawl (hundreds of iterations on 30 x 35,550). So L-BFGS-B is
    started from a projected-Newton point: Fisher-scoring steps, then
    observed-Hessian steps, each solved in O(n_questions x n_models^2) by
    eliminating the 2 x 2 question blocks (a Schur complement over the
    models), with variables at an outward-pushing bound held fixed. L-BFGS-B
    (analytic gradient) then runs from there and certifies convergence; the
    estimate is the same minimiser of the same bounded objective.

    References
    ----------
    .. [1] A. Birnbaum, "Some latent trait models and their use in inferring an
       examinee's ability", in Lord & Novick, *Statistical Theories of Mental
       Test Scores*, 1968.
    .. [2] EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty,
       ICLR 2026, App. H.4 (IRT baseline configurations).

    Examples
    --------
    >>> import numpy as np
    >>> from ranking import fit_2pl
    >>> rng = np.random.default_rng(0)
    >>> theta = np.linspace(-2, 2, 8)
    >>> beta = rng.normal(size=60)
    >>> A = (rng.random((60, 8)) < 1 / (1 + np.exp(-(theta - beta[:, None])))).astype(float)
    >>> res = fit_2pl(A)
    >>> res.ability.shape, res.difficulty.shape, res.discrimination.shape
    ((8,), (60,), (60,))
    >>> bool(np.corrcoef(res.ability, theta)[0, 1] > 0.9)
    True
    >>> res.se_status, res.difficulty_se.shape
    ('ok', (60,))
    """
    l2 = _check_l2(l2)
    ab = _check_bounds(ability_bounds, "ability_bounds")
    db = _check_bounds(difficulty_bounds, "difficulty_bounds")
    cb = _check_bounds(discrimination_bounds, "discrimination_bounds", positive=True)
    max_iter, tol = _check_settings(max_iter=max_iter, tol=tol)
    y, observed = _as_responses(A, min_questions=2, min_models=2)
    n_q, n_m = y.shape
    S = np.where(observed, 2.0 * y - 1.0, 0.0)
    n_missing = int(observed.size - observed.sum())

    n_obs_q = observed.sum(axis=1).astype(np.float64)
    n_obs_m = observed.sum(axis=0).astype(np.float64)
    theta0 = np.clip(_logit_start(y.sum(axis=0), n_obs_m), *ab)
    theta0 = np.clip(theta0 - theta0.mean(), *ab)
    beta0 = np.clip(-_logit_start(y.sum(axis=1), n_obs_q), *db)
    alpha0 = np.clip(np.ones(n_q), *cb)
    x0 = np.concatenate([theta0, beta0, alpha0])
    spread = (observed * (theta0[None, :] - beta0[:, None]) ** 2).sum(axis=1)
    scale = np.sqrt(
        np.concatenate([0.25 * n_obs_m, 0.25 * n_obs_q, 0.25 * spread + 0.25 * n_obs_q])
        + 2.0 * l2
        + 1e-12
    )
    bounds = [ab] * n_m + [db] * n_q + [cb] * n_q

    def fun(x: FloatArray) -> tuple[float, FloatArray]:
        return _jml_2pl_objective(x, S, n_missing, l2, n_m)

    lo = np.array([b[0] for b in bounds])
    hi = np.array([b[1] for b in bounds])
    x0, n_newton = _jml_2pl_newton(
        x0, S, observed, n_missing, l2, n_m, lo, hi, scale, max_iter=max_iter, tol=tol
    )
    x, f, nit = _run_lbfgsb(fun, x0, scale, bounds, max_iter=max_iter, tol=tol, what="fit_2pl")
    ability = x[:n_m].copy()
    difficulty = x[n_m : n_m + n_q].copy()
    disc = x[n_m + n_q :].copy()
    difficulty_se, discrimination_se, se_status = _jml_2pl_se(
        ability, difficulty, disc, y, observed, l2, db, cb
    )
    return IRTResult(
        ability=ability,
        difficulty=difficulty,
        discrimination=disc,
        difficulty_se=difficulty_se,
        discrimination_se=discrimination_se,
        se_status=se_status,
        log_likelihood=_jml_log_likelihood(y, observed, ability, difficulty, disc),
        objective=f,
        iterations=n_newton + nit,
        newton_iterations=n_newton,
        model="2PL",
        l2=l2,
        ability_bounds=ab,
        difficulty_bounds=db,
        discrimination_bounds=cb,
        max_iter=max_iter,
        tol=tol,
    )
