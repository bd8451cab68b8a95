"""Item response theory for model-by-question binary matrices: 1PL and 2PL.

Two estimators are provided.

* **Penalised joint maximum likelihood** (:func:`fit_1pl`, :func:`fit_2pl`), the
  configuration of the IRT baselines of the EIP paper (App. H.4): abilities,
  difficulties and discriminations are estimated together by L-BFGS-B with
  L2 penalties and box bounds (for the 2PL model, from a projected-Newton
  start; see :func:`fit_2pl`).
* **Marginal maximum likelihood** (:func:`fit_1pl_mml`, :func:`fit_2pl_mml`):
  abilities are integrated out under a standard normal population on a fixed
  quadrature grid, item parameters maximise the marginal likelihood, and each
  person gets an EAP ability with its posterior standard deviation.

Both report item standard errors: from the exact observed information of the
marginal likelihood for MML, and conditional on the abilities (approximate) for
joint ML; see the Notes of each function.

Orientation: the response matrix ``A`` has one row per question (the IRT
"item") and one column per model (the IRT "person"/examinee). ``1`` means
correct, ``0`` wrong and ``NaN`` not administered (dropped from the
likelihood).

The multidimensional model lives in :mod:`ranking.mirt`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import linalg, optimize
from scipy.special import expit, log_expit

from ranking._validation import as_float_matrix
from ranking.errors import (
    ConvergenceError,
    DegenerateDataError,
    InvalidParameterError,
    ShapeError,
)
from ranking.types import BoolArray, FloatArray, IntArray

__all__ = [
    "IRTResult",
    "MMLResult",
    "fit_1pl",
    "fit_1pl_mml",
    "fit_2pl",
    "fit_2pl_mml",
    "marginal_log_likelihood",
]

Quadrature = Literal["grid", "gauss-hermite"]

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


@dataclass(frozen=True)
class MMLResult:
    """A 1PL or 2PL fit by marginal maximum likelihood (:func:`fit_1pl_mml`, :func:`fit_2pl_mml`).

    Item parameters are given in both parameterisations:
    ``P(correct) = expit(slope * theta + intercept)`` (slope-intercept, as in
    the R package mirt) ``= expit(discrimination * (theta - difficulty))``
    (IRT form, as in ltm), with ``theta ~ N(0, 1)``.
    """

    slope: FloatArray
    """Slope ``a`` of each question, shape ``(n_questions,)``."""
    intercept: FloatArray
    """Intercept ``d`` of each question, shape ``(n_questions,)``."""
    discrimination: FloatArray
    """Same values as :attr:`slope` (IRT name), shape ``(n_questions,)``."""
    difficulty: FloatArray
    """Difficulty ``b = -d / a`` of each question, shape ``(n_questions,)``."""
    ability: FloatArray
    """EAP (posterior mean) ability of each person (column of ``A``), shape ``(n_persons,)``."""
    ability_se: FloatArray
    """Posterior standard deviation of each ability, shape ``(n_persons,)``."""
    slope_se: FloatArray
    """Standard error of each slope from the observed information (see
    :func:`fit_2pl_mml`, Notes), shape ``(n_questions,)``; for the 1PL model the SE of the
    common slope repeated, all NaN when the slope is fixed."""
    intercept_se: FloatArray
    """Standard error of each intercept, shape ``(n_questions,)``."""
    discrimination_se: FloatArray
    """Same values as :attr:`slope_se`, shape ``(n_questions,)``."""
    difficulty_se: FloatArray
    """Standard error of each difficulty ``b = -d / a`` by the delta method, shape
    ``(n_questions,)`` (what ltm's ``summary`` reports as ``std.err`` of ``Dffclt``)."""
    se_status: str
    """``"ok"``; ``"not_positive_definite"`` when the observed information is not positive
    definite at the estimates (a saddle point or a flat direction: every SE is then NaN); or
    ``"not_computed"`` when the fit was asked for no standard errors."""
    log_likelihood: float
    """Marginal log-likelihood at the estimates, on the quadrature used."""
    iterations: int
    """L-BFGS-B iterations run, plus any Newton steps that finished the fit (see ``tol``)."""
    model: str
    """``"1PL"`` or ``"2PL"``."""
    fixed_discrimination: float | None
    """For the 1PL model, the common discrimination if it was fixed, else ``None``."""
    quadrature: str
    """``"grid"`` or ``"gauss-hermite"``."""
    n_quadrature: int
    """Number of quadrature nodes."""
    grid_limit: float
    """Half-width of the rectangular grid (unused for Gauss-Hermite)."""
    n_patterns: int
    """Number of distinct response patterns the likelihood was computed over."""
    max_iter: int
    """Iteration limit used."""
    tol: float
    """Convergence tolerance used."""


# --------------------------------------------------------------------------- validation


def _check_settings(*, max_iter: Any, tol: Any) -> tuple[int, float]:
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 1:
        raise InvalidParameterError(f"max_iter must be a positive integer, got {max_iter!r}")
    t = float(tol)
    if not math.isfinite(t) or t <= 0:
        raise InvalidParameterError(f"tol must be a positive finite number, got {tol!r}")
    return int(max_iter), t


def _check_l2(l2: Any) -> float:
    v = float(l2)
    if not math.isfinite(v) or v < 0:
        raise InvalidParameterError(f"l2 must be a finite number >= 0, got {l2!r}")
    return v


def _check_bounds(bounds: Any, name: str, *, positive: bool = False) -> tuple[float, float]:
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError) as err:
        raise InvalidParameterError(
            f"{name} must be a pair (low, high) of numbers, got {bounds!r}"
        ) from err
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
        raise InvalidParameterError(f"{name} must be finite with low < high, got {bounds!r}")
    if positive and lo <= 0:
        raise InvalidParameterError(f"{name} must be positive (low > 0), got {bounds!r}")
    return lo, hi


def _as_responses(
    A: Any, *, min_questions: int, min_models: int, item: str = "question", person: str = "model"
) -> tuple[FloatArray, BoolArray]:
    """Validate a binary response matrix; return (0/1 values with NaN as 0, observed mask)."""
    arr = as_float_matrix(A, "A", allow_nan=True)
    n_q, n_m = arr.shape
    if n_q == 0 or n_m == 0:
        raise ShapeError(
            f"A is empty (shape {arr.shape}); expected one row per {item} and one column "
            f"per {person}, with at least {min_questions} rows and {min_models} columns"
        )
    observed = ~np.isnan(arr)
    bad = observed & (arr != 0) & (arr != 1)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InvalidParameterError(
            f"A[{i}, {j}] is {arr[i, j]!r}; responses must be 0 (wrong), 1 (correct) or NaN "
            "(not administered)"
        )
    if n_m < min_models:
        raise DegenerateDataError(
            f"A has {n_m} column(s) ({person}s); at least {min_models} are needed to fit this "
            f"model. Columns are {person}s and rows are {item}s: transpose A if it is the other "
            "way round"
        )
    if n_q < min_questions:
        raise DegenerateDataError(
            f"A has {n_q} row(s) ({item}s); at least {min_questions} are needed to fit this model"
        )
    empty_rows = np.flatnonzero(~observed.any(axis=1))
    if empty_rows.size:
        raise DegenerateDataError(
            f"{empty_rows.size} {item}(s) have no observed response (first: row "
            f"{int(empty_rows[0])}); drop the all-NaN rows before fitting"
        )
    empty_cols = np.flatnonzero(~observed.any(axis=0))
    if empty_cols.size:
        raise DegenerateDataError(
            f"{empty_cols.size} {person}(s) have no observed response (first: column "
            f"{int(empty_cols[0])}); drop the all-NaN columns before fitting"
        )
    y = np.where(observed, arr, 0.0)
    return y, observed


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


def _logit_start(k: FloatArray, n: FloatArray) -> FloatArray:
    """Smoothed log-odds (k + 0.5) / (n - k + 0.5)."""
    return np.log((k + 0.5) / (n - k + 0.5))


def _run_lbfgsb(
    fun: Any,
    x0: FloatArray,
    scale: FloatArray,
    bounds: list[tuple[float, float]] | None,
    *,
    max_iter: int,
    tol: float,
    what: str,
    newton: Callable[[FloatArray], FloatArray] | None = None,
) -> tuple[FloatArray, float, int]:
    """Minimise ``fun`` with L-BFGS-B in the variables ``u = scale * x``.

    The diagonal rescaling is a change of variables (a preconditioner); the
    minimiser is the same. Raises ConvergenceError unless the fit meets ``tol``.

    Convergence means SciPy's own test: the largest projected gradient component in
    the scaled variables is at most ``tol``. Near the optimum the line search must see
    the objective fall, and a step can lower ``f`` by only about ``|g|**2 / 2`` (unit
    curvature after scaling), so once ``|g|`` is below about ``sqrt(2 eps |f|)`` (some
    1e-8 for ``f`` of order 1) the decrease is lost in rounding and L-BFGS-B stops with
    ``ABNORMAL`` short of a tighter ``tol``. For an unbounded problem, ``newton(x)`` may
    give the Newton step at ``x`` (``-H^-1 g`` with the exact Hessian, raising
    ``LinAlgError`` when it is not positive definite). After such a stop, up to
    ``_NEWTON_POLISH_STEPS`` steps are taken, which rely on the gradient, not on
    function values. The fit counts as converged only when the scaled gradient
    then meets ``tol``. Each step must lower the gradient and must not raise ``f``
    by more than rounding, otherwise the stop is reported as a ConvergenceError.
    Newton steps count as iterations.
    """

    def scaled(u: FloatArray) -> tuple[float, FloatArray]:
        f, g = fun(u / scale)
        return f, g / scale

    sb = None
    if bounds is not None:
        sb = [(lo * s, hi * s) for (lo, hi), s in zip(bounds, scale, strict=True)]
    res = optimize.minimize(
        scaled,
        x0 * scale,
        jac=True,
        method="L-BFGS-B",
        bounds=sb,
        options={"maxiter": max_iter, "gtol": tol, "ftol": 1e3 * np.finfo(float).eps},
    )
    if not res.success and res.status == 2 and newton is not None and bounds is None:
        polished = _newton_polish(fun, newton, res.x / scale, scale, tol)
        if polished is not None:
            x, f, steps = polished
            return x, f, int(res.nit) + steps
    if not res.success:
        raise ConvergenceError(
            f"{what}: L-BFGS-B did not converge after {res.nit} iterations "
            f"(max_iter={max_iter}, tol={tol}): {res.message}. Raise max_iter or tol, or "
            "check the data for questions or models that carry no information",
            iterations=int(res.nit),
            tol=tol,
        )
    return np.asarray(res.x / scale, dtype=np.float64), float(res.fun), int(res.nit)


_NEWTON_POLISH_STEPS = 5
"""Most Newton steps :func:`_run_lbfgsb` takes after an ``ABNORMAL`` line-search stop."""


def _newton_polish(
    fun: Any,
    newton: Callable[[FloatArray], FloatArray],
    x: FloatArray,
    scale: FloatArray,
    tol: float,
) -> tuple[FloatArray, float, int] | None:
    """Newton steps from ``x`` until the scaled gradient ``max |g / scale|`` is at most
    ``tol``. Returns ``(x, f, steps)``, or ``None`` when that is not reached. Stops early if
    a step fails (the Hessian is not positive definite or a value is not finite), does not
    lower the gradient, or raises ``f`` by more than rounding."""
    f, g = fun(x)
    gnorm = float(np.max(np.abs(g / scale)))
    for step in range(1, _NEWTON_POLISH_STEPS + 1):
        try:
            x_new = x + newton(x)
        except np.linalg.LinAlgError:
            return None
        f_new, g_new = fun(x_new)
        g_new_norm = float(np.max(np.abs(g_new / scale)))
        if not (np.all(np.isfinite(x_new)) and np.isfinite(f_new) and np.isfinite(g_new_norm)):
            return None
        if g_new_norm >= gnorm or f_new > f + 1e-12 * max(abs(f), 1.0):
            return None
        x, f, gnorm = x_new, float(f_new), g_new_norm
        if gnorm <= tol:
            return np.asarray(x, dtype=np.float64), f, step
    return None


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
    A: Any,
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
    A: Any,
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


# --------------------------------------------------------------------------- MML machinery


def _quadrature_rule(
    kind: Any, n: Any, limit: Any
) -> tuple[FloatArray, FloatArray, str, int, float]:
    """Nodes and log-weights (summing to one) for a standard normal ability."""
    if kind not in ("grid", "gauss-hermite"):
        raise InvalidParameterError(f"quadrature must be 'grid' or 'gauss-hermite', got {kind!r}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 2 <= n <= 1000:
        raise InvalidParameterError(f"n_quadrature must be an integer in [2, 1000], got {n!r}")
    lim = float(limit)
    if not math.isfinite(lim) or lim <= 0:
        raise InvalidParameterError(f"grid_limit must be a positive finite number, got {limit!r}")
    if kind == "grid":
        nodes = np.linspace(-lim, lim, int(n))
        logw = -0.5 * nodes**2
    else:
        nodes, w = np.polynomial.hermite_e.hermegauss(int(n))
        logw = np.log(w)
    logw = logw - np.logaddexp.reduce(logw)
    return nodes, logw, str(kind), int(n), lim


@dataclass(frozen=True)
class _Patterns:
    X: FloatArray  # (n_patterns, n_items) 1 where correct
    M: FloatArray  # (n_patterns, n_items) 1 where observed
    counts: FloatArray  # (n_patterns,)
    inverse: IntArray  # (n_persons,) pattern of each person
    complete: bool
    x_counts: FloatArray  # (n_items,) number correct per item, counts @ X


def _collapse_patterns(y: FloatArray, observed: BoolArray) -> _Patterns:
    """Distinct response patterns of the persons (columns) of ``y``."""
    codes = np.where(observed, y, 2.0).T.astype(np.int8)  # persons x items
    uniq, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    X = (uniq == 1).astype(np.float64)
    c = counts.astype(np.float64)
    return _Patterns(
        X=X,
        M=(uniq != 2).astype(np.float64),
        counts=c,
        inverse=inverse.reshape(-1).astype(np.int64),
        complete=bool(observed.all()),
        x_counts=c @ X,
    )


def _marginal(
    a: FloatArray,
    d: FloatArray,
    pat: _Patterns,
    nodes: FloatArray,
    logw: FloatArray,
) -> tuple[float, FloatArray, FloatArray, FloatArray]:
    """Marginal log-likelihood, its gradient in (a, d) and the pattern posteriors.

    Returns ``(loglik, grad_a, grad_d, W)`` with ``W`` of shape
    ``(n_patterns, n_nodes)`` the posterior weights of each pattern.
    """
    Z = np.multiply.outer(a, nodes) + d[:, None]  # (items, nodes)
    L0 = log_expit(-Z)  # log(1 - p)
    if pat.complete:
        # the pattern log-likelihood is rank-2 in the nodes: sum_i x_i z_iq + sum_i log(1-p_iq)
        ell = np.multiply.outer(pat.X @ a, nodes)
        ell += (pat.X @ d)[:, None]
        ell += L0.sum(axis=0) + logw
    else:
        ell = pat.X @ Z + pat.M @ L0
        ell += logw
    mx = ell.max(axis=1, keepdims=True)
    ell -= mx
    W = np.exp(ell, out=ell)
    s = W.sum(axis=1, keepdims=True)
    W /= s
    loglik = float(pat.counts @ (mx[:, 0] + np.log(s[:, 0])))
    P = expit(Z)
    if pat.complete:
        Nq = pat.counts @ W
        post_mean = W @ nodes
        grad_d = pat.x_counts - P @ Nq
        grad_a = (pat.counts * post_mean) @ pat.X - (P * Nq) @ nodes
    else:
        nW = pat.counts[:, None] * W
        E = (nW.T @ pat.X).T - (nW.T @ pat.M).T * P
        grad_d = E.sum(axis=1)
        grad_a = E @ nodes
    return loglik, grad_a, grad_d, W


def _mml_information(
    a: FloatArray,
    d: FloatArray,
    pat: _Patterns,
    nodes: FloatArray,
    W: FloatArray,
    *,
    fixed_a: bool,
    shared_a: bool,
) -> FloatArray:
    """Observed information of the estimated item parameters (exact, Louis's identity).

    The Hessian ``H`` of the marginal log-likelihood in ``(a, d)``: for each pattern, the
    second derivative of ``log sum_q w_q f(x | t_q)`` is the posterior mean of the
    complete-data Hessian plus the posterior covariance of the complete-data score
    ``s_q = (t_q r_iq, r_iq)`` with ``r_iq = m_i (x_i - p_i(t_q))`` (Louis 1982). ``W``
    holds the posterior weights of each pattern from :func:`_marginal` at ``(a, d)``.
    Returns ``-J^T H J`` for the estimated parameters: ``[a_1..a_n, d_1..d_n]`` (2PL),
    ``[a, d_1..d_n]`` with one shared slope (``shared_a``), or ``[d_1..d_n]``
    (``fixed_a``). The products are grouped so that nothing of size patterns x nodes x
    items is formed: O(patterns x items^2 + masks x nodes x items^2) time, with ``masks``
    the number of distinct sets of observed items (1 on a complete matrix).
    """
    P = expit(np.multiply.outer(a, nodes) + d[:, None])  # (items, nodes)
    X, M, n = pat.X, pat.M, pat.counts
    n_items = a.size
    nW = n[:, None] * W
    t_pow = (np.ones_like(nodes), nodes, nodes * nodes)
    mu = [W @ te for te in t_pow]  # posterior moments of each pattern
    Q = [(W * te) @ P.T for te in t_pow]  # (patterns, items): E[t^e p_i(t)]
    es = [X * mu[e][:, None] - M * Q[e] for e in (0, 1)]  # posterior mean scores (d, a)
    # complete-data information: posterior expected count at each node times p (1 - p)
    Nv = (M.T @ nW) * (P * (1.0 - P))
    if pat.complete:
        masks, U = np.ones((1, n_items)), nW.sum(axis=0, keepdims=True)
    else:  # group the patterns by their set of observed items
        _, first, minv = np.unique(
            np.packbits(M > 0, axis=1), axis=0, return_index=True, return_inverse=True
        )
        masks = M[first]
        U = np.zeros((masks.shape[0], nodes.size))
        np.add.at(U, minv.reshape(-1), nW)

    def second_moment(e: int) -> FloatArray:
        # sum_{p,q} n_p W_pq t_q^e r_piq r_pkq - posterior information, expanded in x and m p
        te = t_pow[e]
        out = (X * (n * mu[e])[:, None]).T @ X
        T = X.T @ (M * (n[:, None] * Q[e]))
        out -= T
        out -= T.T
        for k in range(masks.shape[0]):
            G = (P * (U[k] * te)) @ P.T
            out += G if pat.complete else np.outer(masks[k], masks[k]) * G
        out[np.diag_indices_from(out)] -= Nv @ te
        return out

    def second_moment_colsum(e: int) -> FloatArray:
        # the column sums of second_moment(e), in O(patterns x items + masks x nodes x items)
        te = t_pow[e]
        xs = X.sum(axis=1)
        R = M * (n[:, None] * Q[e])
        out = (xs * n * mu[e]) @ X - xs @ R - X.T @ R.sum(axis=1)
        for k in range(masks.shape[0]):
            m = masks[k]
            out += m * (P @ (U[k] * te * (P.T @ m)))
        return np.asarray(out - Nv @ te, dtype=np.float64)

    info_dd = np.asarray((n[:, None] * es[0]).T @ es[0] - second_moment(0), dtype=np.float64)
    if fixed_a:
        return info_dd
    if shared_a:
        es1 = es[1].sum(axis=1)  # score of the shared slope, per pattern
        info = np.empty((n_items + 1, n_items + 1))
        info[0, 0] = n @ (es1 * es1) - second_moment_colsum(2).sum()
        info[0, 1:] = info[1:, 0] = (n * es1) @ es[0] - second_moment_colsum(1)
        info[1:, 1:] = info_dd
        return info
    nes1 = n[:, None] * es[1]
    info_aa = nes1.T @ es[1] - second_moment(2)
    info_ad = nes1.T @ es[0] - second_moment(1)
    return np.block([[info_aa, info_ad], [info_ad.T, info_dd]])


def _mml_standard_errors(
    a: FloatArray,
    d: FloatArray,
    info: FloatArray,
    fixed_a: bool,
    shared_a: bool,
) -> tuple[FloatArray, FloatArray, FloatArray, str]:
    """SEs of slopes, intercepts and difficulties from the observed information.

    ``info`` is laid out as :func:`_mml_information` returns it. Only the variances and
    the ``(a_i, d_i)`` covariances of the inverse are needed: they are column sums of
    products of ``L^-1`` (``info = L L^T``), which costs a third of a full inverse.
    Difficulty SEs follow by the delta method for ``b = -d / a``. Returns ``(slope_se,
    intercept_se, difficulty_se, status)``; all NaN with status
    ``"not_positive_definite"`` when the Cholesky factorisation fails.
    """
    n = a.size
    nan = np.full(n, np.nan)
    try:
        chol = np.linalg.cholesky(info)
    except np.linalg.LinAlgError:
        return nan, nan.copy(), nan.copy(), "not_positive_definite"
    L_inv, status = linalg.lapack.dtrtri(chol, lower=1)
    if status != 0:  # pragma: no cover - a successful Cholesky factor is invertible
        return nan, nan.copy(), nan.copy(), "not_positive_definite"
    L_inv = np.tril(L_inv)
    var = np.einsum("ij,ij->j", L_inv, L_inv)  # diag(info^-1) = column norms of L^-1
    if fixed_a:
        var_a, cov_ad, var_d = np.zeros(n), np.zeros(n), var
        slope_se = nan
    elif shared_a:
        var_a = np.full(n, var[0])
        cov_ad, var_d = L_inv[:, 0] @ L_inv[:, 1:], var[1:]
        slope_se = np.sqrt(var_a)
    else:
        var_a, var_d = var[:n], var[n:]
        cov_ad = np.einsum("ij,ij->j", L_inv[:, :n], L_inv[:, n:])
        slope_se = np.sqrt(var_a)
    # delta method: grad of -d/a in (a, d) is (d / a^2, -1 / a)
    g_a, g_d = d / (a * a), -1.0 / a
    var_b = g_a * g_a * var_a + 2.0 * g_a * g_d * cov_ad + g_d * g_d * var_d
    return slope_se, np.sqrt(var_d), np.sqrt(np.maximum(var_b, 0.0)), "ok"


def _eap(W: FloatArray, nodes: FloatArray, inverse: IntArray) -> tuple[FloatArray, FloatArray]:
    m1 = W @ nodes
    m2 = W @ nodes**2
    sd = np.sqrt(np.maximum(m2 - m1**2, 0.0))
    return m1[inverse], sd[inverse]


def _check_items_informative(y: FloatArray, observed: BoolArray) -> None:
    n_obs = observed.sum(axis=1)
    k = y.sum(axis=1)
    extreme = np.flatnonzero((k == 0) | (k == n_obs))
    if extreme.size:
        i = int(extreme[0])
        what = "none" if k[i] == 0 else "all"
        raise DegenerateDataError(
            f"{extreme.size} question(s) are answered correctly by all or by none of the "
            f"persons who saw them (first: row {i}, correct for {what}); their marginal "
            "maximum-likelihood difficulty is infinite. Drop these rows, or use fit_1pl / "
            "fit_2pl, whose penalty and bounds keep such difficulties finite"
        )


def _fit_mml(
    A: Any,
    *,
    model: str,
    fixed_a: float | None,
    quadrature: Any,
    n_quadrature: Any,
    grid_limit: Any,
    max_iter: Any,
    tol: Any,
    standard_errors: Any,
) -> MMLResult:
    max_iter, tol = _check_settings(max_iter=max_iter, tol=tol)
    if not isinstance(standard_errors, bool | np.bool_):
        raise InvalidParameterError(
            f"standard_errors must be True or False, got {standard_errors!r}"
        )
    nodes, logw, kind, nq, lim = _quadrature_rule(quadrature, n_quadrature, grid_limit)
    min_items = 3 if model == "2PL" else (1 if fixed_a is not None else 2)
    y, observed = _as_responses(
        A, min_questions=min_items, min_models=2, item="question", person="person"
    )
    _check_items_informative(y, observed)
    pat = _collapse_patterns(y, observed)
    n_items = y.shape[0]
    n_total = float(pat.counts.sum())

    n_obs = observed.sum(axis=1)
    pbar = y.sum(axis=1) / n_obs
    d0 = np.log(pbar / (1 - pbar)) * 1.3  # marginal logit shrinks by about 1/1.3 at a = 1
    # expected information per person at the start (a = 1), for the diagonal preconditioner
    p0 = expit(np.multiply.outer(np.ones(n_items), nodes) + d0[:, None])
    w = np.exp(logw)
    frac = n_obs / n_total
    info_d = frac * ((p0 * (1 - p0)) @ w)
    info_a = frac * ((p0 * (1 - p0)) @ (w * nodes**2))

    if model == "2PL":
        x0 = np.concatenate([np.ones(n_items), d0])
        scale = np.sqrt(np.concatenate([info_a, info_d]) + 1e-12)

        def unpack(x: FloatArray) -> tuple[FloatArray, FloatArray]:
            return x[:n_items], x[n_items:]

        def pack_grad(ga: FloatArray, gd: FloatArray) -> FloatArray:
            return np.concatenate([ga, gd])

    elif fixed_a is None:
        x0 = np.concatenate([[1.0], d0])
        scale = np.sqrt(np.concatenate([[info_a.sum()], info_d]) + 1e-12)

        def unpack(x: FloatArray) -> tuple[FloatArray, FloatArray]:
            return np.full(n_items, x[0]), x[1:]

        def pack_grad(ga: FloatArray, gd: FloatArray) -> FloatArray:
            return np.concatenate([[ga.sum()], gd])

    else:
        a_fix = float(fixed_a)
        x0 = d0 / 1.3 * math.sqrt(1 + a_fix**2 / 1.7**2)
        scale = np.sqrt(info_d + 1e-12)

        def unpack(x: FloatArray) -> tuple[FloatArray, FloatArray]:
            return np.full(n_items, a_fix), x

        def pack_grad(ga: FloatArray, gd: FloatArray) -> FloatArray:
            return gd

    def fun(x: FloatArray) -> tuple[float, FloatArray]:
        a, d = unpack(x)
        ll, ga, gd, _ = _marginal(a, d, pat, nodes, logw)
        return -ll / n_total, -pack_grad(ga, gd) / n_total

    kinds = {"fixed_a": fixed_a is not None, "shared_a": model == "1PL" and fixed_a is None}

    def newton(x: FloatArray) -> FloatArray:
        # -H^-1 g of the negative log-likelihood = info^-1 times the score
        a, d = unpack(x)
        _, ga, gd, W = _marginal(a, d, pat, nodes, logw)
        info = _mml_information(a, d, pat, nodes, W, **kinds)
        return np.asarray(linalg.cho_solve(linalg.cho_factor(info), pack_grad(ga, gd)))

    what = f"fit_{model.lower()}_mml"
    x, _, nit = _run_lbfgsb(
        fun, x0, scale, None, max_iter=max_iter, tol=tol, what=what, newton=newton
    )
    a, d = unpack(x)
    ll, _, _, W = _marginal(a, d, pat, nodes, logw)
    ability, se = _eap(W, nodes, pat.inverse)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = -d / a
    if standard_errors:
        info = _mml_information(a, d, pat, nodes, W, **kinds)
        a_se, d_se, b_se, se_status = _mml_standard_errors(a, d, info, **kinds)
    else:
        a_se, d_se, b_se = (np.full(n_items, np.nan) for _ in range(3))
        se_status = "not_computed"
    return MMLResult(
        slope=a.copy(),
        intercept=d.copy(),
        discrimination=a.copy(),
        difficulty=b,
        ability=ability,
        ability_se=se,
        slope_se=a_se,
        intercept_se=d_se,
        discrimination_se=a_se.copy(),
        difficulty_se=b_se,
        se_status=se_status,
        log_likelihood=ll,
        iterations=nit,
        model=model,
        fixed_discrimination=None if fixed_a is None else float(fixed_a),
        quadrature=kind,
        n_quadrature=nq,
        grid_limit=lim,
        n_patterns=int(pat.counts.size),
        max_iter=max_iter,
        tol=tol,
    )


# --------------------------------------------------------------------------- MML public


def fit_2pl_mml(
    A: Any,
    *,
    quadrature: Quadrature = "grid",
    n_quadrature: int = 61,
    grid_limit: float = 6.0,
    max_iter: int = 1000,
    tol: float = 1e-6,
    standard_errors: bool = True,
) -> MMLResult:
    """Fit the 2PL model by marginal maximum likelihood, ability ~ N(0, 1).

    ``P(A[i, j] = 1 | theta_j) = expit(a_i theta_j + d_i)``. Abilities are
    integrated out on a fixed quadrature rule and the marginal log-likelihood
    is maximised directly over ``(a, d)`` with L-BFGS-B and its analytic
    gradient (Fisher's identity: the posterior expectation of the
    complete-data score, the quantity Bock-Aitkin EM works with).

    Parameters
    ----------
    A : array-like of shape (n_questions, n_persons)
        Binary responses: 1 correct, 0 wrong, NaN not administered. Rows are
        questions (items), columns are persons (for LLM benchmarks: models).
    quadrature : {"grid", "gauss-hermite"}, default "grid"
        ``"grid"``: ``n_quadrature`` equally spaced nodes on
        ``[-grid_limit, grid_limit]`` with weights proportional to the normal
        density (mirt's default, robust to large slopes).
        ``"gauss-hermite"``: Gauss-Hermite nodes for N(0, 1) (as in ltm).
    n_quadrature : int, default 61
        Number of nodes (mirt uses 61 for one dimension; ltm 15 or 21).
    grid_limit : float, default 6.0
        Half-width of the rectangular grid; ignored for Gauss-Hermite.
    max_iter : int, default 1000
        Maximum L-BFGS-B iterations.
    tol : float, default 1e-6
        Stop when the largest component of the gradient of the mean
        log-likelihood per person, after diagonal preconditioning, is below
        ``tol``. Below about 1e-8 the line search can stop first, since the
        decrease is lost in rounding. The fit is then finished with a few Newton
        steps on the exact observed information, and it still has to meet
        ``tol``.
    standard_errors : bool, default True
        Compute the item standard errors (see Notes). Their cost,
        O(n_patterns x n_questions^2 + n_questions^3) time and
        O(n_questions^2) memory, dominates the fit for thousands of
        questions; with ``False`` the SE fields are NaN and ``se_status`` is
        ``"not_computed"``.

    Returns
    -------
    MMLResult
        Item parameters as ``slope``/``intercept`` (a, d) and
        ``discrimination``/``difficulty`` (a, b = -d/a), each of shape
        (n_questions,); EAP ``ability`` and its posterior SD ``ability_se`` of
        shape (n_persons,); the marginal ``log_likelihood`` on the quadrature
        used; ``iterations`` and the settings. The scale is identified by the
        N(0, 1) ability distribution; the joint sign of all slopes is fixed by
        the start (all slopes 1). Standard errors ``slope_se``,
        ``intercept_se``, ``discrimination_se`` and ``difficulty_se`` (shape
        (n_questions,)) with ``se_status`` (see Notes).

    Raises
    ------
    ShapeError
        If ``A`` is not 2-D or is empty.
    InvalidParameterError
        If ``A`` holds values other than 0, 1 and NaN, or a setting is invalid.
    DegenerateDataError
        If there are fewer than 3 questions or 2 persons, a row or column has
        no observed response, or a question is answered correctly by all or
        none of its persons (infinite difficulty: drop it first).
    ConvergenceError
        If L-BFGS-B stops without meeting ``tol``.

    Notes
    -----
    With few persons (tens, as with LLM leaderboards) many questions have
    answers separated along the ability order; their slopes then grow
    without bound, no maximum exists and the fit raises ConvergenceError.
    Use :func:`fit_1pl_mml` or the penalised :func:`fit_2pl` there.

    Standard errors come from the observed information: the exact Hessian of
    the marginal log-likelihood (on the quadrature used) at the estimates,
    computed analytically with Louis's identity (per pattern, the posterior
    mean of the complete-data Hessian plus the posterior covariance of the
    complete-data score), inverted, and carried to ``b = -d / a`` by the delta
    method. This is the matrix ltm differentiates numerically (its
    ``vcov``), and it reproduces ltm's published LSAT6 standard errors; the
    cross-product (XPD) approximation is not used, as it is a different
    estimator that agrees only asymptotically. If the information is not
    positive definite (a saddle point, or a direction the data do not
    identify) every SE is NaN and ``se_status`` is
    ``"not_positive_definite"``; nothing is raised.

    Persons with identical response patterns (including where entries are
    missing) are collapsed and weighted by their count. On a complete matrix
    the log-likelihood of a pattern at node ``t`` is
    ``t * (x @ a) + x @ d + sum_i log(1 - p_i(t))``, so a likelihood and
    gradient evaluation costs O(patterns x items + patterns x nodes).

    References
    ----------
    .. [1] R. D. Bock and M. Aitkin, "Marginal maximum likelihood estimation of
       item parameters: application of an EM algorithm", Psychometrika 46,
       443-459, 1981.
    .. [2] R. P. Chalmers, "mirt: A Multidimensional Item Response Theory
       Package for the R Environment", J. Stat. Softw. 48(6), 2012.
    .. [3] D. Rizopoulos, "ltm: An R Package for Latent Variable Modeling and
       Item Response Theory Analyses", J. Stat. Softw. 17(5), 2006.
    .. [4] T. A. Louis, "Finding the observed information matrix when using the
       EM algorithm", J. R. Stat. Soc. B 44, 226-233, 1982.

    Examples
    --------
    >>> import numpy as np
    >>> from ranking import fit_2pl_mml
    >>> rng = np.random.default_rng(1)
    >>> a, d = rng.uniform(0.7, 2.0, 10), rng.normal(size=10)
    >>> theta = rng.normal(size=2000)
    >>> A = (rng.random((10, 2000)) < 1 / (1 + np.exp(-(np.outer(a, theta) + d[:, None]))))
    >>> res = fit_2pl_mml(A.astype(float))
    >>> bool(np.max(np.abs(res.slope - a)) < 0.4), bool(np.max(np.abs(res.intercept - d)) < 0.3)
    (True, True)
    >>> np.allclose(res.difficulty, -res.intercept / res.slope)
    True
    >>> res.ability.shape, res.ability_se.shape
    ((2000,), (2000,))
    >>> res.se_status, bool(np.all((res.difficulty_se > 0) & (res.difficulty_se < 0.3)))
    ('ok', True)
    """
    return _fit_mml(
        A,
        model="2PL",
        fixed_a=None,
        quadrature=quadrature,
        n_quadrature=n_quadrature,
        grid_limit=grid_limit,
        max_iter=max_iter,
        tol=tol,
        standard_errors=standard_errors,
    )


def fit_1pl_mml(
    A: Any,
    *,
    discrimination: float | None = None,
    quadrature: Quadrature = "grid",
    n_quadrature: int = 61,
    grid_limit: float = 6.0,
    max_iter: int = 1000,
    tol: float = 1e-6,
    standard_errors: bool = True,
) -> MMLResult:
    """Fit the 1PL model by marginal maximum likelihood, ability ~ N(0, 1).

    ``P(A[i, j] = 1 | theta_j) = expit(a (theta_j - b_i))`` with one
    discrimination ``a`` shared by all questions: estimated (``ltm::rasch``'s
    default) or fixed (``discrimination=1`` is the Rasch model with unit
    ability variance, ``rasch(..., constraint = cbind(n_items + 1, 1))``).
    Optimised as :func:`fit_2pl_mml`.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_persons)
        Binary responses: 1 correct, 0 wrong, NaN not administered. Rows are
        questions, columns are persons.
    discrimination : float or None, default None
        The common discrimination; ``None`` estimates it.
    quadrature : {"grid", "gauss-hermite"}, default "grid"
        Quadrature rule, as in :func:`fit_2pl_mml`.
    n_quadrature : int, default 61
        Number of nodes.
    grid_limit : float, default 6.0
        Half-width of the rectangular grid; ignored for Gauss-Hermite.
    max_iter : int, default 1000
        Maximum L-BFGS-B iterations.
    tol : float, default 1e-6
        Gradient tolerance, as in :func:`fit_2pl_mml`.
    standard_errors : bool, default True
        Compute the item standard errors, as in :func:`fit_2pl_mml`.

    Returns
    -------
    MMLResult
        As for :func:`fit_2pl_mml`; ``slope`` and ``discrimination`` hold the
        common value for every question, and ``fixed_discrimination`` records
        whether it was fixed. ``slope_se`` (= ``discrimination_se``) repeats
        the SE of the common slope, or is all NaN when the slope is fixed;
        ``difficulty_se`` is then ``intercept_se / discrimination``, as in
        ltm's ``rasch(..., constraint = ...)``.

    Raises
    ------
    ShapeError
        If ``A`` is not 2-D or is empty.
    InvalidParameterError
        If ``A`` holds values other than 0, 1 and NaN, or a setting is invalid.
    DegenerateDataError
        If there are fewer than 2 persons or too few questions (2, or 1 with a
        fixed discrimination), a row or column has no observed response, or a
        question is answered correctly by all or none of its persons.
    ConvergenceError
        If L-BFGS-B stops without meeting ``tol``.

    References
    ----------
    .. [1] G. Rasch, *Probabilistic Models for Some Intelligence and Attainment
       Tests*, 1960.
    .. [2] R. D. Bock and M. Aitkin, "Marginal maximum likelihood estimation of
       item parameters: application of an EM algorithm", Psychometrika 46,
       443-459, 1981.
    .. [3] D. Rizopoulos, "ltm: An R Package for Latent Variable Modeling and
       Item Response Theory Analyses", J. Stat. Softw. 17(5), 2006.

    Examples
    --------
    >>> import numpy as np
    >>> from ranking import fit_1pl_mml
    >>> rng = np.random.default_rng(2)
    >>> b = np.array([-1.5, -0.5, 0.0, 0.5, 1.5])
    >>> theta = rng.normal(size=3000)
    >>> A = (rng.random((5, 3000)) < 1 / (1 + np.exp(-(theta - b[:, None])))).astype(float)
    >>> res = fit_1pl_mml(A, discrimination=1.0)
    >>> bool(np.max(np.abs(res.difficulty - b)) < 0.15)
    True
    >>> res.fixed_discrimination
    1.0
    >>> bool(np.all(np.isnan(res.discrimination_se))), bool(np.all(res.difficulty_se < 0.1))
    (True, True)
    """
    if discrimination is not None:
        v = float(discrimination)
        if not math.isfinite(v) or v <= 0:
            raise InvalidParameterError(
                f"discrimination must be a positive finite number or None, got {discrimination!r}"
            )
        discrimination = v
    return _fit_mml(
        A,
        model="1PL",
        fixed_a=discrimination,
        quadrature=quadrature,
        n_quadrature=n_quadrature,
        grid_limit=grid_limit,
        max_iter=max_iter,
        tol=tol,
        standard_errors=standard_errors,
    )


def marginal_log_likelihood(
    A: Any,
    slope: Any,
    intercept: Any,
    *,
    quadrature: Quadrature = "grid",
    n_quadrature: int = 61,
    grid_limit: float = 6.0,
) -> float:
    """Marginal log-likelihood of given 2PL item parameters, ability ~ N(0, 1).

    ``sum_j log sum_q w_q prod_i P(A[i, j] | t_q)`` with
    ``P(1 | t) = expit(slope_i t + intercept_i)``: use it to score item
    parameters fitted elsewhere (e.g. by mirt) on the same quadrature.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_persons)
        Binary responses: 1, 0 or NaN (not administered, left out).
    slope, intercept : array-like of shape (n_questions,)
        Slope-intercept item parameters ``a`` and ``d``.
    quadrature : {"grid", "gauss-hermite"}, default "grid"
        Quadrature rule, as in :func:`fit_2pl_mml`.
    n_quadrature : int, default 61
        Number of nodes.
    grid_limit : float, default 6.0
        Half-width of the rectangular grid; ignored for Gauss-Hermite.

    Returns
    -------
    float
        The marginal log-likelihood.

    Raises
    ------
    ShapeError
        If ``A`` is not 2-D or empty, or the parameters do not have one entry
        per question.
    InvalidParameterError
        If ``A`` holds values other than 0, 1 and NaN, a parameter is not
        finite, or a setting is invalid.

    References
    ----------
    .. [1] R. D. Bock and M. Aitkin, "Marginal maximum likelihood estimation of
       item parameters: application of an EM algorithm", Psychometrika 46,
       443-459, 1981.

    Examples
    --------
    >>> import numpy as np
    >>> from ranking import marginal_log_likelihood
    >>> A = np.array([[1.0, 0.0], [1.0, 1.0]])  # 2 questions, 2 persons
    >>> ll = marginal_log_likelihood(A, [0.0, 0.0], [0.0, 0.0])
    >>> bool(np.isclose(ll, 4 * np.log(0.5)))  # slope 0: every answer has probability 1/2
    True
    """
    nodes, logw, _, _, _ = _quadrature_rule(quadrature, n_quadrature, grid_limit)
    y, observed = _as_responses(A, min_questions=1, min_models=1, person="person")
    a = np.asarray(slope, dtype=np.float64)
    d = np.asarray(intercept, dtype=np.float64)
    for name, v in (("slope", a), ("intercept", d)):
        if v.shape != (y.shape[0],):
            raise ShapeError(
                f"{name} must have shape ({y.shape[0]},), one value per row of A, got {v.shape}"
            )
        if not np.all(np.isfinite(v)):
            raise InvalidParameterError(f"{name} holds a non-finite value")
    pat = _collapse_patterns(y, observed)
    ll, _, _, _ = _marginal(a, d, pat, nodes, logw)
    return ll
