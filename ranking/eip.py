"""Empirical Interaction Propagation (EIP): question difficulty and model competency.

EIP puts questions and models on a directed bipartite graph. A model that
solves a question receives that question's difficulty mass; a model that fails
a question passes its competency mass to it. The damped alternating random walk
on this graph has a unique stationary distribution whose question part is the
*difficulty* and whose model part is the *competency*.

The response matrix has one row per question and one column per model. It may
be a compact ``bool``/``uint8`` (or any integer) array of 0/1, which when large
is bit-packed and never converted to float64 as a whole, or a
float array holding continuous scores in ``[0, 1]`` and ``NaN`` for missing
answers.

This module holds the algorithm (validation, exclusions, the result); where the
matrix lives while EIP iterates (dense, blocked on threads, bit-packed on forked
workers) is in :mod:`ranking._eip_backends`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ranking._eip_backends import _Blocked, _Dense, _Packed, _Sizes
from ranking._eip_backends import _byte_words as _byte_words  # re-exported: tests use them
from ranking._eip_backends import _swar_column_sums as _swar_column_sums
from ranking._eip_backends import _swar_row_sums as _swar_row_sums
from ranking._validation import check_in_range
from ranking.errors import (
    DegenerateDataError,
    InvalidParameterError,
    ShapeError,
)
from ranking.types import BoolArray, FloatArray

__all__ = ["EIPResult", "eip"]

_BLOCK_ELEMENTS = 1 << 19
"""Elements per float64 work block (4 MiB); compact input is converted block by block."""

_CACHE_BYTES = 64 << 20
"""Matrices whose float64 form fits in this many bytes are converted once and reused."""

_TASK_BLOCKS = 16
"""Blocks per task handed to a worker thread in the blocked path."""

_PACKED_ROWS = 1 << 16
"""Questions per task in the bit-packed path (0/1 input too large to cache)."""

_PACK_ROWS = 4096
"""Rows packed and transposed at a time while building the codes."""

_PROCESS_MIN_ELEMENTS = 1 << 27
"""Entries (about 134 million) from which the bit-packed path forks worker processes."""


def _sizes() -> _Sizes:
    """The backends' work sizes, read from this module's settings at call time."""
    return _Sizes(
        block_elements=_BLOCK_ELEMENTS,
        task_blocks=_TASK_BLOCKS,
        packed_rows=_PACKED_ROWS,
        pack_rows=_PACK_ROWS,
        process_min_elements=_PROCESS_MIN_ELEMENTS,
    )


def _available_cpus() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    count = getattr(os, "process_cpu_count", os.cpu_count)  # pragma: no cover
    return int(count() or 1)  # pragma: no cover


def _n_workers(n_jobs: int | None) -> int:
    """The worker count for ``n_jobs`` (None or -1: every available core), read at call time."""
    if n_jobs is None or (not isinstance(n_jobs, bool) and n_jobs == -1):
        return _available_cpus()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs < 1:
        raise InvalidParameterError(
            f"n_jobs must be a positive integer, -1 or None (all available cores), got {n_jobs!r}"
        )
    return int(n_jobs)


@dataclass(frozen=True)
class EIPResult:
    """Result of :func:`eip`.

    Arrays over questions have shape ``(n_questions,)`` and follow the rows of
    the input; arrays over models have shape ``(n_models,)``.
    """

    difficulty: FloatArray
    """Stationary question probabilities ``pi_Q``, shape (n_questions,).

    Over the retained questions they are positive and sum to 1. Questions
    excluded from propagation get the conceptual extremes of the probability
    scale: ``0.0`` if solved by all models, ``1.0`` if solved by none (strictly
    above every retained question whenever at least two are retained)."""

    competency: FloatArray
    """Stationary model probabilities ``pi_M``, shape (n_models,); positive, sum to 1."""

    difficulty_100: FloatArray
    """Difficulty on the 0-100 scale of the paper's figures, shape (n_questions,).

    ``100 * pi_q / max(pi_Q over retained questions)`` for retained questions,
    ``0`` for questions solved by all and ``100`` for questions solved by none
    (these tie with the hardest retained question on this scale)."""

    competency_100: FloatArray
    """Competency scaled so that the best model has 100: ``100 * pi_m / max(pi_M)``."""

    solved_by_all: BoolArray
    """Questions with no failure mass (every observed answer fully correct).

    Shape (n_questions,)."""

    solved_by_none: BoolArray
    """Questions with no success mass (every observed answer scored 0), shape (n_questions,)."""

    iterations: int
    """Number of alternating updates (eqs. 2-3) run until the L1 change fell below ``tol``."""

    deltas: FloatArray = field(repr=False)
    """Convergence record, shape (iterations,): ``deltas[t-1]`` is
    ``||pi_Q^(t) - pi_Q^(t-1)||_1 + ||pi_M^(t) - pi_M^(t-1)||_1`` (App. C)."""

    alpha: float
    """Damping factor used."""

    tol: float
    """L1 tolerance used."""

    max_iter: int
    """Iteration cap used."""

    continuous: bool
    """Whether the responses were treated as continuous scores (sec. 2.4)."""

    n_missing: int
    """Number of missing (NaN) responses; they carry no edge in either direction."""

    @property
    def retained(self) -> BoolArray:
        """Questions that took part in propagation, shape (n_questions,)."""
        return ~(self.solved_by_all | self.solved_by_none)


def _as_response_matrix(A: Any) -> npt.NDArray[Any]:
    try:
        arr = np.asarray(A)
    except ValueError as err:  # ragged nested sequences
        raise ShapeError(
            f"A must be a rectangular 2-D array of shape (n_questions, n_models): {err}"
        ) from err
    if arr.dtype == object or not (
        arr.dtype == np.bool_
        or np.issubdtype(arr.dtype, np.integer)
        or np.issubdtype(arr.dtype, np.floating)
    ):
        raise InvalidParameterError(
            f"A must be a numeric or boolean array, got dtype {arr.dtype}; "
            "convert the responses to 0/1 or to scores in [0, 1]"
        )
    if arr.ndim != 2:
        raise ShapeError(
            f"A must be 2-D with shape (n_questions, n_models), got {arr.ndim} dimension(s)"
        )
    n_q, n_m = arr.shape
    if n_q == 0 or n_m == 0:
        raise DegenerateDataError(
            f"A is empty (shape {arr.shape}); EIP needs at least one question and two models"
        )
    if n_m < 2:
        raise DegenerateDataError(
            f"A has {n_m} model column; EIP needs at least two models, because with one "
            "model every question is solved by all or by none and is excluded"
        )
    return arr


def eip(
    A: npt.ArrayLike,
    *,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
    continuous: bool | None = None,
    n_jobs: int | None = None,
) -> EIPResult:
    """Estimate question difficulty and model competency by EIP.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses, one row per question and one column per model. Either a
        ``bool`` or integer array of 0 (failed) / 1 (solved), or a float array
        of scores in ``[0, 1]`` (sec. 2.4) where ``NaN`` marks a missing
        answer. A matrix whose float64 copy fits in 64 MiB is converted to
        float64 once. A larger 0/1 (``bool``/integer) matrix is never
        converted to float: it is bit-packed (1/8 of the bytes of ``uint8``)
        and each iteration reads the packed bits once; from 2**27 entries its
        rows are split between ``n_jobs`` forked worker processes (where ``fork`` is
        available). A larger float matrix is processed in row blocks of about
        4 MiB on ``n_jobs`` threads. A missing answer is neither a success nor a
        failure: it adds no competency edge and no difficulty edge, and the row sums
        ``S(q)`` and column sums ``F(m)`` run over observed entries only.
    alpha : float, default=0.85
        Damping factor in ``(0, 1]`` (the paper's default is 0.85). ``alpha=1``
        removes the teleportation term; it usually converges (the alternating
        update is a power iteration on a two-step chain) but is not guaranteed.
    tol : float, default=1e-10
        Stop at the first iteration whose L1 change
        ``||pi_Q^(t) - pi_Q^(t-1)||_1 + ||pi_M^(t) - pi_M^(t-1)||_1`` is below
        ``tol`` (App. C). 1e-10 is about where the paper's Table 8 reports
        convergence at alpha = 0.85 (about 9 iterations). The change shrinks
        at least by ``alpha**2`` per iteration from the second on, so at most
        ``2 + log(tol / 4) / log(alpha**2)`` iterations are needed when alpha < 1.
    max_iter : int, default=1000
        Maximum number of iterations before :class:`ConvergenceError`.
    continuous : bool or None, default=None
        ``None`` detects it: scores strictly between 0 and 1 make the fit
        continuous. ``False`` requires 0/1 responses (NaN still allowed);
        ``True`` accepts partial credit. The equations are the same (eqs. 4-5).
    n_jobs : int or None, default=None
        Worker threads (float path) or processes (bit-packed path) for matrices too
        large to cache; ``None`` or ``-1`` uses every core available to this process
        (``os.sched_getaffinity`` where the OS has it, else ``os.cpu_count()``), read at
        each call. Partial sums are added in a fixed order, so the result does not
        depend on which worker ran what; different ``n_jobs`` agree to rounding.

    Returns
    -------
    EIPResult
        ``difficulty`` (n_questions,) and ``competency`` (n_models,) are the
        stationary probabilities (each sums to 1 over retained questions and
        over models); ``difficulty_100`` and ``competency_100`` rescale them by
        their maximum to 0-100 as in the paper's figures. Questions solved by
        all models get difficulty 0 and questions solved by none get
        difficulty 1 (``difficulty_100`` 0 and 100); the boolean masks
        ``solved_by_all`` and ``solved_by_none`` mark them. Also holds
        ``iterations``, the convergence record ``deltas`` and the settings.

    Raises
    ------
    ShapeError
        If ``A`` is not 2-D.
    InvalidParameterError
        If a response is outside ``[0, 1]`` or infinite, an integer response
        is not 0/1, fractional scores are given with ``continuous=False``, or
        ``alpha``, ``tol`` or ``max_iter`` are out of range.
    DegenerateDataError
        If ``A`` is empty, has fewer than two models, a question or a model
        has no observed answer, every question is solved by all or by none,
        or a model fails none of the retained questions (``F(m) = 0``, its
        difficulty transition is undefined).
    ConvergenceError
        If the L1 change is still at least ``tol`` after ``max_iter`` iterations.

    References
    ----------
    EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty,
    sec. 2 (eqs. 1-5), sec. 2.4 and App. C.

    Examples
    --------
    Models 0 and 1 each solve what the other fails; question 3 is solved by
    both and is excluded. With alpha = 0.5 the fixed point of eqs. 2-3 is
    ``pi_Q = (17, 17, 26) / 60`` and ``pi_M = (8, 7) / 15`` (worked by hand in
    ``tests/ranking/test_eip.py``).

    >>> import numpy as np
    >>> from ranking import eip
    >>> A = np.array([[1, 0],
    ...               [1, 0],
    ...               [0, 1],
    ...               [1, 1]], dtype=np.uint8)
    >>> res = eip(A, alpha=0.5)
    >>> (res.difficulty * 60).round(9).tolist()
    [17.0, 17.0, 26.0, 0.0]
    >>> (res.competency * 15).round(9).tolist()
    [8.0, 7.0]
    >>> res.solved_by_all.tolist()
    [False, False, False, True]
    >>> res.difficulty_100.round(1).tolist()
    [65.4, 65.4, 100.0, 0.0]
    """
    alpha = check_in_range(alpha, "alpha", 0.0, 1.0)
    if alpha == 0.0:
        raise InvalidParameterError(
            "alpha must be in (0, 1], got 0.0; alpha = 0 ignores the responses entirely"
        )
    tol = float(tol)
    if not (math.isfinite(tol) and tol > 0):
        raise InvalidParameterError(f"tol must be a positive finite number, got {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 1:
        raise InvalidParameterError(f"max_iter must be a positive integer, got {max_iter!r}")
    max_iter = int(max_iter)
    if continuous not in (None, True, False):
        raise InvalidParameterError(f"continuous must be None, True or False, got {continuous!r}")

    workers = _n_workers(n_jobs)
    arr = _as_response_matrix(A)
    n_q, n_m = arr.shape
    data: _Dense | _Blocked | _Packed
    if n_q * n_m * 8 <= _CACHE_BYTES:
        data = _Dense(arr)
    elif np.issubdtype(arr.dtype, np.floating):
        data = _Blocked(arr, workers, _sizes())
    else:
        data = _Packed(arr, workers, _sizes())
    try:
        sums = data.sums()

        if continuous is False and sums.has_fraction:
            raise InvalidParameterError(
                "A holds scores strictly between 0 and 1 but continuous=False; "
                "pass continuous=True (or None) for partial credit, or round the scores"
            )
        is_continuous = sums.has_fraction if continuous is None else bool(continuous)
        obs = sums.succ + sums.fail
        if np.any(obs <= 0):
            i = int(np.flatnonzero(obs <= 0)[0])
            raise DegenerateDataError.about(
                "{question} has no observed answer (its row is all NaN); "
                "drop it before calling eip",
                questions=[i],
            )
        if np.any(sums.col_obs <= 0):
            j = int(np.flatnonzero(sums.col_obs <= 0)[0])
            raise DegenerateDataError.about(
                "{model} has no observed answer (its column is all NaN); drop it", models=[j]
            )

        solved_by_none = sums.succ <= 0
        solved_by_all = (sums.fail <= 0) & ~solved_by_none
        keep = ~(solved_by_all | solved_by_none)
        n_keep = int(keep.sum())
        if n_keep == 0:
            raise DegenerateDataError(
                f"all {n_q} questions are solved by every model or by none, so nothing "
                "can propagate; EIP needs questions that some models solve and others fail"
            )
        F = data.failure_totals(keep)
        F[np.abs(F) < 1e-12 * n_keep] = 0.0
        if np.any(F <= 0):
            j = int(np.flatnonzero(F <= 0)[0])
            raise DegenerateDataError.about(
                "{model} fails none of the {n_keep} retained questions (F(m) = 0), so its "
                "difficulty transition P_M->Q is undefined; add questions it fails or drop it",
                models=[j],
                n_keep=n_keep,
            )
        inv_succ = np.divide(1.0, sums.succ, out=np.zeros(n_q), where=keep)
        pi_q, pi_m, deltas = data.propagate(
            keep, inv_succ, F, alpha=alpha, tol=tol, max_iter=max_iter
        )
    finally:
        data.close()  # stops the worker processes of the bit-packed path

    # pi_q is exactly 0 on excluded questions, so its maximum is over the retained ones
    difficulty = np.where(solved_by_none, 1.0, pi_q)
    d100 = pi_q / pi_q.max()
    d100 *= 100.0
    np.copyto(d100, 100.0, where=solved_by_none)
    c100 = 100.0 * (pi_m / pi_m.max())
    return EIPResult(
        difficulty=difficulty,
        competency=pi_m,
        difficulty_100=d100,
        competency_100=c100,
        solved_by_all=solved_by_all,
        solved_by_none=solved_by_none,
        iterations=len(deltas),
        deltas=np.asarray(deltas),
        alpha=alpha,
        tol=tol,
        max_iter=max_iter,
        continuous=is_continuous,
        n_missing=sums.n_missing,
    )
