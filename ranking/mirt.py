"""Multidimensional item response theory (compensatory MIRT) for model-by-question matrices.

``P(A[i, j] = 1) = expit(a_i . theta_j + d_i)`` with a loading vector
``a_i`` and intercept ``d_i`` per question (row) and an ability vector
``theta_j`` per model (column), in ``D`` dimensions (3 in the EIP paper).

Estimator: penalised joint maximum likelihood (joint MAP under the paper's
N(0, 1) priors) with Newton steps and L-BFGS-B on the analytic gradient, the
same family as the paper's 1PL/2PL configuration (App. H.4). See
:func:`fit_mirt` for why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ranking._irt_common import (
    _as_responses,
    _check_l2,
    _check_settings,
    _logit_start,
    _run_lbfgsb,
)
from ranking.errors import DegenerateDataError, InvalidParameterError
from ranking.types import FloatArray

__all__ = ["MIRTResult", "fit_mirt"]

_LOG2 = math.log(2.0)


@dataclass(frozen=True)
class MIRTResult:
    """A multidimensional 2PL fit (:func:`fit_mirt`), after the identifying rotation."""

    ability: FloatArray
    """Ability vectors, shape ``(n_models, dimensions)``: mean 0 and identity covariance
    across models. Column 0 is the general ability, along the mean loading vector (it
    orders models by their mean log-odds of success); the other columns are the
    principal axes of the loadings orthogonal to it."""
    loadings: FloatArray
    """Loading (slope) vectors ``a_i``, shape ``(n_questions, dimensions)``."""
    intercept: FloatArray
    """Intercepts ``d_i``, shape ``(n_questions,)``: log-odds of a correct answer for a model
    at the centroid of the abilities."""
    difficulty: FloatArray
    """Multidimensional difficulty ``-d_i / ||a_i||`` (Reckase's MDIFF), shape
    ``(n_questions,)``: the signed distance from the ability centroid to the point of
    steepest slope, where ``P = 1/2``. Higher is harder; rotation invariant."""
    discrimination: FloatArray
    """Multidimensional discrimination ``||a_i||`` (MDISC), shape ``(n_questions,)``."""
    loading_variance: FloatArray
    """Sum of squared loadings per dimension, shape ``(dimensions,)``; decreasing after
    the first (general) axis."""
    log_likelihood: float
    """Log-likelihood of the observed entries at the estimates, without the penalty."""
    objective: float
    """Minimised objective (negative log-likelihood plus penalty), before rotation."""
    iterations: int
    """Iterations run: Newton warm-start steps plus L-BFGS-B iterations."""
    newton_iterations: int
    """Of which Newton warm-start steps."""
    dimensions: int
    """Number of latent dimensions ``D``."""
    l2: float
    """L2 penalty coefficient used."""
    max_iter: int
    """Iteration limit used."""
    tol: float
    """Convergence tolerance used."""


def _mirt_objective(
    x: FloatArray, S: FloatArray, n_missing: int, l2: float, n_m: int, dim: int
) -> tuple[float, FloatArray]:
    """Penalised negative log-likelihood of the compensatory MIRT model and its gradient.

    ``x = [Theta (n_m * dim), A (n_q * dim), d (n_q)]`` (row-major);
    ``S`` is ``2y - 1`` on observed entries and ``0`` on missing ones.
    """
    n_q = S.shape[0]
    k = n_m * dim
    theta = x[:k].reshape(n_m, dim)
    a = x[k : k + n_q * dim].reshape(n_q, dim)
    d = x[k + n_q * dim :]
    z = a @ theta.T
    z += d[:, None]
    z *= S  # u = S * z
    e = np.abs(z)
    np.negative(e, out=e)
    np.exp(e, out=e)
    onep = e + 1.0
    nll = float(np.log(onep).sum() + np.maximum(-z, 0.0).sum()) - n_missing * _LOG2
    np.reciprocal(onep, out=onep)
    r = np.where(z >= 0, e * onep, onep)
    r *= S  # y - p, zero where missing
    g_theta = -(r.T @ a) + 2.0 * l2 * theta
    g_a = -(r @ theta) + 2.0 * l2 * a
    g_d = -r.sum(axis=1) + 2.0 * l2 * d
    pen = l2 * (float((theta * theta).sum()) + float((a * a).sum()) + float(d @ d))
    return nll + pen, np.concatenate([g_theta.ravel(), g_a.ravel(), g_d])


def _mirt_value(
    x: FloatArray, S: FloatArray, n_missing: int, l2: float, n_m: int, dim: int
) -> float:
    n_q = S.shape[0]
    k = n_m * dim
    theta = x[:k].reshape(n_m, dim)
    a = x[k : k + n_q * dim].reshape(n_q, dim)
    d = x[k + n_q * dim :]
    u = a @ theta.T
    u += d[:, None]
    u *= S
    e = np.abs(u)
    np.negative(e, out=e)
    np.exp(e, out=e)
    e += 1.0
    nll = float(np.log(e).sum() + np.maximum(-u, 0.0).sum()) - n_missing * _LOG2
    pen = l2 * (float((theta * theta).sum()) + float((a * a).sum()) + float(d @ d))
    return nll + pen


def _mirt_newton(
    x: FloatArray,
    y: FloatArray,
    observed: FloatArray,
    S: FloatArray,
    n_missing: int,
    l2: float,
    n_m: int,
    dim: int,
    scale: FloatArray,
    *,
    max_iter: int,
    tol: float,
) -> tuple[FloatArray, int]:
    """Newton steps on the penalised MIRT objective (a warm start for L-BFGS-B).

    The Hessian has an arrow structure: one ``(D+1) x (D+1)`` block per question
    (loadings and intercept), one ``D x D`` block per model and a dense coupling.
    Eliminating the question blocks leaves an ``(n_models D) x (n_models D)``
    Schur complement, so a step costs O(n_questions n_models^2 D^2). Fisher scoring
    (expected Hessian) is used until the objective decreases by less than 1e-3
    relative per step, then the observed Hessian, shifted on the ability block by
    the smallest multiple of the identity that makes it definite, or Fisher when
    no such shift up to the gradient norm does; steps are backtracked until the
    objective decreases.
    """
    n_q = S.shape[0]
    k = n_m * dim
    eye1 = np.eye(dim + 1)
    eye = np.eye(dim)
    f, g = _mirt_objective(x, S, n_missing, l2, n_m, dim)
    use_observed = False
    it = 0
    for it in range(1, max_iter + 1):
        if np.max(np.abs(g) / scale) <= tol:
            it -= 1
            break
        theta = x[:k].reshape(n_m, dim)
        a = x[k : k + n_q * dim].reshape(n_q, dim)
        d = x[k + n_q * dim :]
        tt = np.concatenate([theta, np.ones((n_m, 1))], axis=1)  # (n_m, D+1)
        z = a @ theta.T + d[:, None]
        p = 1.0 / (1.0 + np.exp(-z))
        w = p * (1.0 - p) * observed
        r = (y - p) * observed
        g_t = g[:k].reshape(n_m, dim)
        g_f = np.concatenate(
            [g[k : k + n_q * dim].reshape(n_q, dim), g[k + n_q * dim :, None]], axis=1
        )
        outer_t = (tt[:, :, None] * tt[:, None, :]).reshape(n_m, -1)
        B = (w @ outer_t).reshape(n_q, dim + 1, dim + 1) + 2.0 * l2 * eye1
        outer_a = (a[:, :, None] * a[:, None, :]).reshape(n_q, -1)
        P = (w.T @ outer_a).reshape(n_m, dim, dim) + 2.0 * l2 * eye
        # coupling C[i, kk, j, l] = w_ij tt_jk a_il (- r_ij [kk == l] for the observed Hessian)
        C = w[:, None, :, None] * tt.T[None, :, :, None] * a[:, None, None, :]
        try:
            LB_inv = np.linalg.inv(np.linalg.cholesky(B))  # small (D+1) x (D+1) blocks
        except np.linalg.LinAlgError:
            break
        B_inv = np.matmul(LB_inv.transpose(0, 2, 1), LB_inv)
        q = np.matmul(B_inv, g_f[:, :, None])[:, :, 0]  # B^-1 g_phi
        d_t = None
        for observed_hessian in (True, False) if use_observed else (False,):
            if observed_hessian:
                Cm = C.copy()
                for ll in range(dim):
                    Cm[:, ll, :, ll] -= r
            else:
                Cm = C
            Cf = Cm.reshape(n_q, dim + 1, k)
            K = np.matmul(LB_inv, Cf).reshape(-1, k)  # L^-1 C_i, stacked
            schur = -(K.T @ K)
            for j in range(n_m):
                schur[j * dim : (j + 1) * dim, j * dim : (j + 1) * dim] += P[j]
            # orthogonal rotations leave the objective unchanged, and away from the optimum
            # the observed Hessian can be indefinite along them: add the smallest multiple
            # of the identity (on the ability block) that makes it definite, growing it
            # tenfold up to the gradient norm (Nocedal & Wright, Algorithm 3.3); past that,
            # fall back to the Fisher information
            shift = 1e-10 * np.trace(schur) / k if observed_hessian else 0.0
            cap = max(float(np.linalg.norm(g)), 10.0 * shift)
            chol = None
            while chol is None and shift <= cap:
                try:
                    chol = np.linalg.cholesky(schur + shift * np.eye(k))
                except np.linalg.LinAlgError:
                    if not observed_hessian:
                        break
                    shift *= 10.0
            if chol is None:
                continue
            rhs = -g_t.ravel() + np.einsum("qkm,qk->m", Cf, q)
            d_t = np.linalg.solve(chol.T, np.linalg.solve(chol, rhs))
            break
        if d_t is None:
            break
        rf = -g_f - np.einsum("qkm,m->qk", Cf, d_t)
        d_f = np.matmul(B_inv, rf[:, :, None])[:, :, 0]
        step = np.concatenate([d_t, d_f[:, :dim].ravel(), d_f[:, dim]])
        slope = float(g @ step)
        if slope >= 0:
            break
        t = 1.0
        g_new = None
        while t > 1e-6:
            x_new = x + t * step
            if t == 1.0:  # the full step is usually taken: get its gradient at once
                f_new, g_new = _mirt_objective(x_new, S, n_missing, l2, n_m, dim)
            else:
                f_new, g_new = _mirt_value(x_new, S, n_missing, l2, n_m, dim), None
            if f_new <= f + 1e-4 * t * slope:
                break
            t *= 0.5
        else:
            break
        decrease = f - f_new
        x = x_new
        if g_new is not None:
            f, g = f_new, g_new
        else:
            f, g = _mirt_objective(x, S, n_missing, l2, n_m, dim)
        if decrease <= 1e-14 * max(abs(f), 1.0):
            break
        use_observed = use_observed or decrease <= 1e-3 * max(abs(f), 1.0)
    return x, it


def _general_axis_rotation(a: FloatArray) -> FloatArray:
    """Orthogonal rotation putting the mean loading on axis 0, principal axes after it.

    Axis 0 is the direction of the mean loading vector, so ``ability[:, 0]`` orders
    models by their mean log-odds of success over the questions. The remaining axes
    are the principal axes of the loadings in the orthogonal complement, in decreasing
    order of their sum of squared loadings, each signed so that the sum of cubed
    loadings is non-negative (their mean loading is zero by construction).
    """
    dim = a.shape[1]
    mean = a.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    first = np.eye(dim)[:, 0] if norm == 0.0 else mean / norm
    proj = np.eye(dim) - np.outer(first, first)
    lv, vecs = np.linalg.eigh(proj @ (a.T @ a) @ proj)
    # drop the eigenvector along `first` (eigenvalue 0 of the projected matrix)
    along = np.abs(vecs.T @ first)
    rest = vecs[:, np.argsort(along)[: dim - 1]]
    rest = rest[:, np.argsort(-lv[np.argsort(along)[: dim - 1]])]
    rot = np.column_stack([first, rest])
    cubes = ((a @ rot) ** 3).sum(axis=0)
    rot[:, 1:] *= np.where(cubes[1:] < 0, -1.0, 1.0)
    return np.asarray(rot, dtype=np.float64)


def fit_mirt(
    A: npt.ArrayLike,
    *,
    dimensions: int = 3,
    l2: float = 0.5,
    max_iter: int = 1000,
    tol: float = 1e-6,
) -> MIRTResult:
    """Fit a compensatory multidimensional 2PL model by penalised joint maximum likelihood.

    ``P(A[i, j] = 1) = expit(a_i . theta_j + d_i)``. Minimises
    ``-loglik + l2 * (||Theta||^2 + ||A||^2 + ||d||^2)`` over the observed
    entries from a deterministic start (the leading singular vectors of the
    centred response matrix): Newton steps that exploit the block structure
    of the Hessian, then L-BFGS-B with the analytic gradient, which must
    report convergence.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Binary responses: 1 correct, 0 wrong, NaN not administered (left out of
        the likelihood). Rows are questions, columns are models.
    dimensions : int, default 3
        Number of latent dimensions ``D`` (the EIP paper uses 3).
    l2 : float, default 0.5
        L2 penalty coefficient on abilities, loadings and intercepts. The
        default 0.5 is the negative log-density of the paper's N(0, 1) priors
        on all MIRT parameters (App. H.4), so the fit is their joint MAP
        estimate. The 1PL/2PL coefficient 0.01 is too weak here: with tens of
        models, many questions are perfectly separable in 3 dimensions and
        their loadings would grow until only the penalty stops them.
    max_iter : int, default 1000
        Maximum L-BFGS-B iterations.
    tol : float, default 1e-6
        Stop when the largest gradient component, after a diagonal rescaling
        of the variables by the square root of their expected information at
        the start, falls below ``tol``.

    Returns
    -------
    MIRTResult
        ``ability`` of shape (n_models, dimensions); ``loadings`` of shape
        (n_questions, dimensions); ``intercept``, ``difficulty`` (MDIFF) and
        ``discrimination`` (MDISC) of shape (n_questions,); the unpenalised
        ``log_likelihood``, ``iterations`` and the settings.

        Rotational indeterminacy: ``a_i . theta_j`` is unchanged by
        ``theta -> T^-1 (theta - m)``, ``a -> T^T a``, ``d -> d + a . m`` for
        any shift ``m`` and invertible ``T``, so the raw estimates are
        arbitrary up to such a map. The result is put in a canonical form:
        abilities are centred and whitened (mean 0, identity covariance over
        the models; the shift goes into the intercepts), which leaves only an
        orthogonal rotation free; that rotation is fixed by putting axis 0
        along the mean loading vector (a general factor: ``ability[:, 0]``
        orders models by their mean log-odds of success) and the remaining
        axes along the principal axes of the loadings orthogonal to it (the
        eigenvectors of the projected ``A^T A``, in decreasing order), each
        signed so that its sum of cubed loadings is non-negative. The
        log-likelihood is unchanged by this map. What remains arbitrary is
        the order and sign of secondary axes with equal loading variance.

        Scalar difficulty for ranking questions: use ``difficulty``, Reckase's
        multidimensional difficulty ``-d_i / ||a_i||``. It is invariant to the
        rotation above and reduces to the 2PL ``b`` when ``D = 1``. Questions
        that every model (or no model) answers correctly carry no
        information on the loadings, so ``||a_i||`` is small and their
        ``difficulty`` is large in magnitude, with the right sign (hardest or
        easiest); ``-intercept`` (log-odds of failure of an average model) is
        a bounded alternative with the same ordering at equal discrimination.
        For a scalar ability use ``ability[:, 0]`` (the general axis). The
        EIP paper reports ``np.linalg.norm(ability, axis=1)``, which also
        rewards models far from average in a weak direction.

    Raises
    ------
    ShapeError
        If ``A`` is not 2-D or is empty.
    InvalidParameterError
        If ``A`` holds values other than 0, 1 and NaN, or a setting is invalid.
    DegenerateDataError
        If there are fewer than ``dimensions + 2`` models or ``dimensions + 1``
        questions, a row or column has no observed response, or the fitted
        abilities span fewer than ``dimensions`` dimensions.
    ConvergenceError
        If L-BFGS-B stops without meeting ``tol``.

    Notes
    -----
    Why joint (penalised) maximum likelihood and not marginal ML or the
    paper's variational inference: (1) it is the same estimator family and
    penalty as the paper's 1PL/2PL baselines (App. H.4), so the three IRT
    baselines differ only in the model; (2) in LLM evaluation each model
    answers thousands of questions, so its ability is well determined and the
    incidental-parameter bias of JML is small, while marginal ML would
    integrate over a population of only tens of models; (3) it is
    deterministic and its cost is linear in the number of responses, whereas
    a D-dimensional quadrature grid grows exponentially in D and the paper's
    mean-field VI (fixed posterior s.d. 1, Adam, 1000 epochs) is stochastic.
    The penalty is a Gaussian prior, so the estimates are joint MAP
    estimates; it also keeps the estimates of questions solved by every
    model or by none finite. Plain L-BFGS-B crawls on this objective (the
    scale of the bilinear term is pinned only by the penalty, and orthogonal
    rotations leave it unchanged), so it starts from Newton steps: the
    question blocks are eliminated, leaving an ``(n_models D)``-square Schur
    complement per step; Fisher scoring first, then the observed Hessian
    with the smallest diagonal shift on the ability block that makes it
    definite (rotations make it singular). A step costs
    O(n_questions n_models^2 D^2).

    References
    ----------
    .. [1] M. D. Reckase, *Multidimensional Item Response Theory*, Springer,
       2009 (MDISC and MDIFF: Reckase, Applied Psychological Measurement 9,
       401-412, 1985).
    .. [2] EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty,
       ICLR 2026, App. H.4 (IRT baseline configurations).

    Examples
    --------
    >>> import numpy as np
    >>> from ranking import fit_mirt
    >>> rng = np.random.default_rng(0)
    >>> theta = rng.normal(size=(40, 3))
    >>> loadings = np.abs(rng.normal(size=(300, 3)))
    >>> d = rng.normal(size=300)
    >>> p = 1 / (1 + np.exp(-(loadings @ theta.T + d[:, None])))
    >>> A = (rng.random(p.shape) < p).astype(float)
    >>> res = fit_mirt(A, dimensions=3)
    >>> res.ability.shape, res.loadings.shape, res.difficulty.shape
    ((40, 3), (300, 3), (300,))
    >>> np.allclose(np.cov(res.ability, rowvar=False, bias=True), np.eye(3))
    True
    >>> bool(np.corrcoef(res.difficulty, -d / np.linalg.norm(loadings, axis=1))[0, 1] > 0.7)
    True
    """
    if isinstance(dimensions, bool) or not isinstance(dimensions, int | np.integer):
        raise InvalidParameterError(f"dimensions must be a positive integer, got {dimensions!r}")
    dim = int(dimensions)
    if dim < 1:
        raise InvalidParameterError(f"dimensions must be a positive integer, got {dimensions!r}")
    l2 = _check_l2(l2)
    max_iter, tol = _check_settings(max_iter=max_iter, tol=tol)
    y, observed = _as_responses(A, min_questions=dim + 1, min_models=dim + 2)
    n_q, n_m = y.shape
    S = np.where(observed, 2.0 * y - 1.0, 0.0)
    n_missing = int(observed.size - observed.sum())

    # deterministic, balanced start from the SVD of the centred matrix (missing -> row mean)
    n_obs_q = observed.sum(axis=1).astype(np.float64)
    row_mean = y.sum(axis=1) / n_obs_q
    yc = np.where(observed, y - row_mean[:, None], 0.0)
    u, s, vt = np.linalg.svd(yc, full_matrices=False)
    root = np.sqrt(4.0 * s[:dim])  # logit(p) ~ 4 (p - 1/2) near 1/2
    theta0 = vt[:dim].T * root
    a0 = u[:, :dim] * root
    d0 = _logit_start(y.sum(axis=1), n_obs_q)
    x0 = np.concatenate([theta0.ravel(), a0.ravel(), d0])
    w_obs = observed.astype(np.float64)
    info_theta = 0.25 * (w_obs.T @ (a0 * a0))  # (n_m, dim)
    info_a = 0.25 * (w_obs @ (theta0 * theta0))  # (n_q, dim)
    scale = np.sqrt(
        np.concatenate([info_theta.ravel(), info_a.ravel(), 0.25 * n_obs_q]) + 2.0 * l2 + 1e-12
    )

    def fun(x: FloatArray) -> tuple[float, FloatArray]:
        return _mirt_objective(x, S, n_missing, l2, n_m, dim)

    x0, n_newton = _mirt_newton(
        x0, y, w_obs, S, n_missing, l2, n_m, dim, scale, max_iter=max_iter, tol=tol
    )
    x, f, nit = _run_lbfgsb(fun, x0, scale, None, max_iter=max_iter, tol=tol, what="fit_mirt")
    k = n_m * dim
    theta = x[:k].reshape(n_m, dim)
    a = x[k : k + n_q * dim].reshape(n_q, dim)
    d = x[k + n_q * dim :].copy()

    # canonical form: centre and whiten abilities, principal axes of the loadings, signs
    mean = theta.mean(axis=0)
    cov = np.atleast_2d(np.cov(theta, rowvar=False, bias=True))
    evals, evecs = np.linalg.eigh(cov)
    if evals[0] <= 1e-10 * max(evals[-1], 1e-300):
        raise DegenerateDataError(
            f"the fitted abilities span fewer than {dim} dimensions (ability covariance "
            f"eigenvalues {np.round(evals, 12).tolist()}); fit fewer dimensions"
        )
    half = evecs * np.sqrt(evals)  # cov = half @ half.T
    theta_w = (theta - mean) @ evecs / np.sqrt(evals)  # identity covariance
    a_w = a @ half
    d = d + a @ mean
    rot = _general_axis_rotation(a_w)
    theta_r = theta_w @ rot
    a_r = a_w @ rot
    mdisc = np.linalg.norm(a_r, axis=1)
    with np.errstate(divide="ignore"):
        mdiff = -d / mdisc
    z = a_r @ theta_r.T + d[:, None]
    ll = float((y * z - np.logaddexp(0.0, z))[observed].sum())
    return MIRTResult(
        ability=theta_r,
        loadings=a_r,
        intercept=d,
        difficulty=mdiff,
        discrimination=mdisc,
        loading_variance=(a_r * a_r).sum(axis=0),
        log_likelihood=ll,
        objective=f,
        iterations=n_newton + nit,
        newton_iterations=n_newton,
        dimensions=dim,
        l2=l2,
        max_iter=max_iter,
        tol=tol,
    )
