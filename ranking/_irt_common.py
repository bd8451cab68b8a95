"""Shared machinery of the IRT fits: input checks, logit starts and the L-BFGS-B driver.

Used by the joint (:mod:`ranking._irt_joint`), marginal (:mod:`ranking._irt_marginal`)
and multidimensional (:mod:`ranking.mirt`) fits; the public names are in :mod:`ranking.irt`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ranking._validation import as_float_matrix
from ranking.errors import (
    ConvergenceError,
    DegenerateDataError,
    InvalidParameterError,
    ShapeError,
)
from ranking.types import BoolArray, FloatArray

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
            "(not administered)",
            questions=[i],
            models=[j],
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
            f"{int(empty_rows[0])}); drop the all-NaN rows before fitting",
            questions=empty_rows,
        )
    empty_cols = np.flatnonzero(~observed.any(axis=0))
    if empty_cols.size:
        raise DegenerateDataError(
            f"{empty_cols.size} {person}(s) have no observed response (first: column "
            f"{int(empty_cols[0])}); drop the all-NaN columns before fitting",
            models=empty_cols,
        )
    y = np.where(observed, arr, 0.0)
    return y, observed


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

    from scipy import optimize

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
