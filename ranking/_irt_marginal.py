"""Marginal maximum likelihood for the 1PL and 2PL models: fit_1pl_mml, fit_2pl_mml.

Abilities are integrated out under a standard normal population on a fixed quadrature
grid; the public names are re-exported by :mod:`ranking.irt`, which describes the
orientation of ``A``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import linalg
from scipy.special import expit, log_expit

from ranking._irt_common import _as_responses, _check_settings, _run_lbfgsb
from ranking.errors import (
    DegenerateDataError,
    InvalidParameterError,
    ShapeError,
)
from ranking.types import BoolArray, FloatArray, IntArray

__all__ = ["MMLResult", "fit_1pl_mml", "fit_2pl_mml", "marginal_log_likelihood"]

Quadrature = Literal["grid", "gauss-hermite"]


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
    A: npt.ArrayLike,
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
    A: npt.ArrayLike,
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
    A: npt.ArrayLike,
    slope: npt.ArrayLike,
    intercept: npt.ArrayLike,
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
