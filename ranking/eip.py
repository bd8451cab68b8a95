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
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

import numpy as np
import numpy.typing as npt

from ranking._validation import check_in_range
from ranking.errors import (
    ConvergenceError,
    DegenerateDataError,
    InvalidParameterError,
    ShapeError,
)
from ranking.types import BoolArray, FloatArray

__all__ = ["EIPResult", "eip"]

_T = TypeVar("_T")

_BLOCK_ELEMENTS = 1 << 19
"""Elements per float64 work block (4 MiB); compact input is converted block by block."""

_CACHE_BYTES = 64 << 20
"""Matrices whose float64 form fits in this many bytes are converted once and reused."""

_TASK_BLOCKS = 16
"""Blocks per task handed to a worker thread in the blocked path."""

_PACKED_ROWS = 1 << 16
"""Questions per task in the bit-packed path (0/1 input too large to cache)."""


def _available_cpus() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1  # pragma: no cover


def _n_workers(n_jobs: int | None) -> int:
    """The worker count for ``n_jobs`` (None or -1: every available core), read at call time."""
    if n_jobs is None or (not isinstance(n_jobs, bool) and n_jobs == -1):
        return _available_cpus()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs < 1:
        raise InvalidParameterError(
            f"n_jobs must be a positive integer, -1 or None (all available cores), got {n_jobs!r}"
        )
    return int(n_jobs)


_PROCESS_MIN_ELEMENTS = 1 << 27
"""Entries (about 134 million) from which the bit-packed path forks worker processes."""


def _fork_available() -> bool:
    """Fork-based workers only on Linux (fork is unsafe with some macOS system libraries)."""
    import multiprocessing

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float64)
"""``_BITS[c, k]`` is 1.0 when byte ``c`` packs a 1 for the ``k``-th of its 8 models
(``np.packbits`` order: the first model is the most significant bit)."""

_POPCOUNT_TABLE = _BITS.sum(axis=1)[None, :]
"""Number of set bits of each byte value, as a one-row table for ``_Packed._row_sums``."""

_PACK_ROWS = 4096
"""Rows packed and transposed at a time while building the codes."""


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


def _not_converged(deltas: list[float], *, tol: float, max_iter: int, alpha: float) -> NoReturn:
    raise ConvergenceError(
        f"EIP did not converge: L1 change {deltas[-1]:.3e} >= tol={tol:g} after "
        f"{max_iter} iterations (alpha={alpha}); raise max_iter or lower alpha",
        iterations=max_iter,
        tol=tol,
    )


@dataclass
class _Sums:
    """Row and column totals gathered in the setup pass."""

    succ: FloatArray  # S(q): success mass per question, over observed entries
    fail: FloatArray  # failure mass per question, over observed entries
    col_obs: FloatArray  # observed answers per model
    n_missing: int
    has_fraction: bool


class _Dense:
    """The whole matrix as float64, transposed to shape (n_models, n_questions).

    Used when the float64 copy is at most ``_CACHE_BYTES``. ``xt`` holds
    success scores with missing entries set to 0; ``ot`` is the 0/1 mask of
    observed entries, or ``None`` when nothing is missing.
    """

    def __init__(self, arr: npt.NDArray[Any]) -> None:
        if arr.dtype == np.bool_ or np.issubdtype(arr.dtype, np.integer):
            _check_compact_values(arr, 0)
        xt = np.array(arr.T, dtype=np.float64, order="C")
        self.ot: FloatArray | None = None
        self.is_float = bool(np.issubdtype(arr.dtype, np.floating))
        if self.is_float:
            nan = np.isnan(xt)
            if nan.any():
                xt[nan] = 0.0
                self.ot = (~nan).astype(np.float64)
            _check_float_values(xt.T, 0)
        self.xt = xt

    def close(self) -> None:
        """Nothing to release."""

    def sums(self) -> _Sums:
        n_m, n_q = self.xt.shape
        ones = np.ones(n_m)
        succ = ones @ self.xt
        if self.ot is None:
            obs = np.full(n_q, float(n_m))
            col_obs = np.full(n_m, float(n_q))
            n_missing = 0
        else:
            obs = ones @ self.ot
            col_obs = self.ot.sum(axis=1)
            n_missing = round(n_q * n_m - float(obs.sum()))
        x = self.xt
        has_fraction = self.is_float and bool(np.any((x > 0) & (x < 1)))
        return _Sums(succ, obs - succ, col_obs, n_missing, has_fraction)

    def failure_totals(self, keep: BoolArray) -> FloatArray:
        kf = keep.astype(np.float64)
        obs = float(kf.sum()) if self.ot is None else self.ot @ kf
        return obs - self.xt @ kf

    def propagate(
        self,
        keep: BoolArray,
        inv_succ: FloatArray,
        F: FloatArray,
        *,
        alpha: float,
        tol: float,
        max_iter: int,
    ) -> tuple[FloatArray, FloatArray, list[float]]:
        """Eqs. 2-3; excluded questions are masked to 0 (they have ``inv_succ = 0``)."""
        xt, ot = self.xt, self.ot
        n_m, n_q = xt.shape
        n_keep = int(keep.sum())
        keepf = keep.astype(np.float64)
        alpha_keep = alpha * keepf
        tele_q = keepf * ((1.0 - alpha) / n_keep)
        tele_m = (1.0 - alpha) / n_m
        pi_m = np.full(n_m, 1.0 / n_m)
        pi_q = keepf / n_keep
        new_q = np.empty(n_q)
        diff = np.empty(n_q)
        v = np.empty(n_q)
        w = np.empty(n_m)
        deltas: list[float] = []
        for _ in range(max_iter):
            np.divide(pi_m, F, out=w)
            y = np.matmul(w, xt, out=new_q)
            np.subtract(w.sum() if ot is None else w @ ot, y, out=y)
            y *= alpha_keep
            y += tele_q
            np.subtract(y, pi_q, out=diff)
            dq = float(np.abs(diff, out=diff).sum())
            new_q, pi_q = pi_q, y
            new_m = xt @ np.multiply(y, inv_succ, out=v)
            new_m *= alpha
            new_m += tele_m
            delta = dq + float(np.abs(new_m - pi_m).sum())
            pi_m = new_m
            deltas.append(delta)
            if delta < tol:
                return pi_q, pi_m, deltas
        _not_converged(deltas, tol=tol, max_iter=max_iter, alpha=alpha)


def _run_tasks(
    fn: Callable[[int, int], _T], tasks: list[tuple[int, int]], n_threads: int
) -> list[_T]:
    """``fn(lo, hi)`` for every task, on up to ``n_threads`` threads; results in task order.

    A failing task raises its error; when several fail, the first one in task order
    (the lowest rows) is raised.
    """
    if n_threads <= 1:
        return [fn(lo, hi) for lo, hi in tasks]
    with ThreadPoolExecutor(n_threads) as pool:
        futures = [pool.submit(fn, lo, hi) for lo, hi in tasks]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise


class _Blocked:
    """Row blocks of a large matrix, converted to float64 one block at a time.

    Each block is ``(start, stop, x, o)`` with ``x`` of shape (rows, n_models)
    and ``o`` the observed mask or ``None``. The matrix is never upcast whole:
    every worker thread owns one reusable ~4 MiB float64 buffer for its block.

    The rows are cut into tasks of ``_TASK_BLOCKS`` blocks which run on up to
    ``n_jobs`` threads (NumPy releases the GIL in the casts and BLAS calls).
    Each task returns its own partial sums and they are added in task order,
    so the result does not depend on which thread ran which task.
    """

    def __init__(self, arr: npt.NDArray[Any], n_jobs: int = 1) -> None:
        self.arr = arr
        self.n_rows, self.n_cols = arr.shape
        self.is_float = bool(np.issubdtype(arr.dtype, np.floating))
        self.has_missing = self.is_float  # refined by sums()
        self._failure_totals = np.zeros(self.n_cols)
        self._step = max(1, _BLOCK_ELEMENTS // max(self.n_cols, 1))
        task_rows = self._step * max(1, _TASK_BLOCKS)
        self._tasks = [
            (lo, min(lo + task_rows, self.n_rows)) for lo in range(0, self.n_rows, task_rows)
        ]
        self._local = threading.local()
        self._n_threads = max(1, min(n_jobs, len(self._tasks)))

    def _buffers(self) -> tuple[FloatArray, FloatArray]:
        """This thread's block buffer and row-vector buffer (allocated once per thread)."""
        bufs: tuple[FloatArray, FloatArray] | None = getattr(self._local, "bufs", None)
        if bufs is None:
            bufs = (np.empty((self._step, self.n_cols)), np.empty(self._step))
            self._local.bufs = bufs
        return bufs

    def _blocks(self, lo: int, hi: int) -> Iterator[tuple[int, int, FloatArray, FloatArray | None]]:
        buf, _ = self._buffers()
        for start in range(lo, hi, self._step):
            stop = min(start + self._step, hi)
            x = buf[: stop - start]
            np.copyto(x, self.arr[start:stop])
            if self.has_missing:
                nan = np.isnan(x)
                if nan.any():
                    x[nan] = 0.0
                    yield start, stop, x, (~nan).astype(np.float64)
                    continue
            yield start, stop, x, None

    def _map(self, fn: Callable[[int, int], _T]) -> list[_T]:
        return _run_tasks(fn, self._tasks, self._n_threads)

    def close(self) -> None:
        """Nothing to release."""

    def sums(self) -> _Sums:
        n_q, n_m = self.n_rows, self.n_cols
        succ = np.empty(n_q)
        fail = np.empty(n_q)
        ones = np.ones(n_m)

        def task(lo: int, hi: int) -> tuple[FloatArray, int, bool, FloatArray]:
            col_obs = np.zeros(n_m)
            F = np.zeros(n_m)
            n_missing = 0
            has_fraction = False
            for start, stop, x, o in self._blocks(lo, hi):
                if self.is_float:
                    _check_float_values(x, start)
                    has_fraction = has_fraction or bool(np.any((x > 0) & (x < 1)))
                else:
                    _check_compact_values(self.arr[start:stop], start)
                s_b = x @ ones
                if o is None:
                    obs_b = np.full(stop - start, float(n_m))
                    col_obs += stop - start
                else:
                    obs_b = o @ ones
                    col_obs += o.sum(axis=0)
                    n_missing += round(obs_b.size * n_m - float(obs_b.sum()))
                f_b = obs_b - s_b
                succ[start:stop] = s_b
                fail[start:stop] = f_b
                # F(m) over retained rows, in the same pass (keep depends on the row only)
                kf = ((s_b > 0) & (f_b > 0)).astype(np.float64)
                F += (float(kf.sum()) if o is None else kf @ o) - kf @ x
            return col_obs, n_missing, has_fraction, F

        parts = self._map(task)
        col_obs = np.zeros(n_m)
        F = np.zeros(n_m)
        n_missing = 0
        has_fraction = False
        for c, nm_, hf, f in parts:
            col_obs += c
            F += f
            n_missing += nm_
            has_fraction = has_fraction or hf
        self.has_missing = n_missing > 0
        self._failure_totals = F
        return _Sums(succ, fail, col_obs, n_missing, has_fraction)

    def failure_totals(self, keep: BoolArray) -> FloatArray:
        """F(m) over the retained questions, accumulated by :meth:`sums`."""
        return self._failure_totals

    def propagate(
        self,
        keep: BoolArray,
        inv_succ: FloatArray,
        F: FloatArray,
        *,
        alpha: float,
        tol: float,
        max_iter: int,
    ) -> tuple[FloatArray, FloatArray, list[float]]:
        """Eqs. 2-3 with one pass over the matrix per iteration.

        Within a block the new difficulties of eq. 2 are computed first and
        used at once in the competency sum of eq. 3, so each block is
        converted to float64 only once per iteration.
        """
        n_m = self.n_cols
        n_keep = int(keep.sum())
        tele_m = (1.0 - alpha) / n_m
        # excluded questions: alpha_keep = tele_keep = 0, so their pi_q stays 0
        keepf = keep.astype(np.float64)
        alpha_keep = alpha * keepf
        tele_keep = keepf * ((1.0 - alpha) / n_keep)
        pi_m = np.full(n_m, 1.0 / n_m)
        pi_q = keepf / n_keep
        w = np.empty(n_m)
        w_sum = 0.0

        def task(lo: int, hi: int) -> tuple[FloatArray, float]:
            _, ybuf = self._buffers()
            z = np.zeros(n_m)
            dq = 0.0
            for start, stop, x, o in self._blocks(lo, hi):
                y = np.matmul(x, w, out=ybuf[: stop - start])
                np.subtract(w_sum if o is None else o @ w, y, out=y)  # failure mass, eq. 2
                y *= alpha_keep[start:stop]
                y += tele_keep[start:stop]
                old = pi_q[start:stop]
                dq += float(np.abs(old - y).sum())
                old[...] = y
                y *= inv_succ[start:stop]
                z += y @ x
            return z, dq

        deltas: list[float] = []
        for _ in range(max_iter):
            np.divide(pi_m, F, out=w)
            w_sum = float(w.sum())
            z = np.zeros(n_m)
            dq = 0.0
            for z_t, dq_t in self._map(task):
                z += z_t
                dq += dq_t
            new_m = alpha * z + tele_m
            delta = dq + float(np.abs(new_m - pi_m).sum())
            pi_m = new_m
            deltas.append(delta)
            if delta < tol:
                return pi_q, pi_m, deltas
        _not_converged(deltas, tol=tol, max_iter=max_iter, alpha=alpha)


class _PackedPart:
    """Rows ``offset .. offset + n_rows`` of a 0/1 matrix, bit-packed along the models.

    ``np.packbits`` turns each row into ``ceil(n_models / 8)`` bytes, stored
    transposed: ``codes[j, q]`` holds models ``8j .. 8j+7`` of question ``q``
    (1/8 of the memory of the uint8 input). With ``T[j, c]`` the sum of ``w``
    over the models set in byte value ``c`` of position ``j`` (a 256-entry
    table per position), ``A w = sum_j T[j, codes[j]]``; ``A^T v`` comes from
    the weighted histograms ``np.bincount(codes[j], weights=v)`` times the
    256 x 8 bit matrix. Each iteration thus reads 1/8 of the bytes of the
    input and never converts the matrix to float. Rows are handled in tasks
    of ``_PACKED_ROWS`` (one thread: ``np.take`` and ``np.bincount`` hold the GIL).
    """

    def __init__(self, arr: npt.NDArray[Any], offset: int = 0) -> None:
        self.arr = arr
        self.offset = offset
        self.n_rows, self.n_cols = arr.shape
        self.n_bytes = (self.n_cols + 7) // 8
        self.codes = np.empty((self.n_bytes, self.n_rows), dtype=np.uint8)
        rows = max(1, _PACKED_ROWS)
        self._tasks = [(lo, min(lo + rows, self.n_rows)) for lo in range(0, self.n_rows, rows)]
        self.table = np.empty((self.n_bytes, 256))
        self._w8 = np.zeros((self.n_bytes, 8))  # w padded to whole bytes (padding bits are 0)

    def _row_sums(self, lo: int, hi: int, table: FloatArray) -> FloatArray:
        """``A[lo:hi] @ w`` from the packed codes, ``table[j, c]`` summing ``w`` over byte ``c``."""
        y = np.zeros(hi - lo)
        gathered = np.empty(hi - lo)
        for j in range(self.n_bytes):
            # mode="wrap" skips the bounds check (a uint8 code is always < 256)
            np.take(table[j % table.shape[0]], self.codes[j, lo:hi], out=gathered, mode="wrap")
            y += gathered
        return y

    def _column_sums(self, lo: int, hi: int, v: FloatArray) -> FloatArray:
        """``A[lo:hi].T @ v`` from the packed codes."""
        hist = np.empty((self.n_bytes, 256))
        for j in range(self.n_bytes):
            hist[j] = np.bincount(self.codes[j, lo:hi], weights=v, minlength=256)
        return (hist @ _BITS).reshape(-1)[: self.n_cols]

    def sums(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Pack the rows; return success and failure mass per row and F(m) over these rows."""
        n_m = self.n_cols
        succ = np.empty(self.n_rows)
        fail = np.empty(self.n_rows)
        F = np.zeros(n_m)
        for lo, hi in self._tasks:
            raw = self.arr[lo:hi]
            _check_compact_values(raw, lo + self.offset)
            for start in range(lo, hi, _PACK_ROWS):  # small pieces: the transpose stays in cache
                stop = min(start + _PACK_ROWS, hi)
                self.codes[:, start:stop] = np.packbits(self.arr[start:stop], axis=1).T
            words = _byte_words(raw)
            if words is None:
                s_b = self._row_sums(lo, hi, _POPCOUNT_TABLE)
            else:
                s_b = _swar_row_sums(words).astype(np.float64)
            f_b = n_m - s_b
            succ[lo:hi] = s_b
            fail[lo:hi] = f_b
            # F(m) = retained questions failed by m, in the same pass
            keep_b = (s_b > 0) & (f_b > 0)
            if words is None:
                F += float(keep_b.sum()) - self._column_sums(lo, hi, keep_b.astype(np.float64))
            else:
                solved = _swar_column_sums(words)
                dropped = np.flatnonzero(~keep_b)
                if dropped.size:
                    solved -= raw[dropped].sum(axis=0, dtype=np.int64)
                F += float(keep_b.sum()) - solved.astype(np.float64)
        self.succ, self.fail = succ, fail
        return succ, fail, F

    def start(self, n_keep: int, alpha: float) -> None:
        """Set up eq. 2 on these rows; retained rows are those with both masses positive."""
        keepf = ((self.succ > 0) & (self.fail > 0)).astype(np.float64)
        self.alpha_keep = alpha * keepf
        self.tele_keep = keepf * ((1.0 - alpha) / n_keep)
        self.inv_succ = np.divide(1.0, self.succ, out=np.zeros(self.n_rows), where=keepf > 0)
        self.pi_q = keepf / n_keep

    def step(self, w: FloatArray, w_sum: float) -> tuple[FloatArray, float]:
        """One pass: update ``pi_q`` by eq. 2; return its ``A^T (pi_q / S)`` and L1 change."""
        self._w8.reshape(-1)[: self.n_cols] = w
        np.matmul(self._w8, _BITS.T, out=self.table)
        z = np.zeros(self.n_cols)
        dq = 0.0
        for lo, hi in self._tasks:
            y = self._row_sums(lo, hi, self.table)
            np.subtract(w_sum, y, out=y)  # failure mass, eq. 2
            y *= self.alpha_keep[lo:hi]
            y += self.tele_keep[lo:hi]
            old = self.pi_q[lo:hi]
            dq += float(np.abs(old - y).sum())
            old[...] = y
            y *= self.inv_succ[lo:hi]
            z += self._column_sums(lo, hi, y)
        return z, dq


def _packed_worker(conn: Any, arr: npt.NDArray[Any], lo: int, hi: int) -> None:
    """Forked worker: owns rows ``lo:hi`` of a :class:`_Packed` matrix; driven through ``conn``."""
    try:
        part = _PackedPart(arr[lo:hi], offset=lo)
        conn.send(part.sums())
        while (msg := conn.recv()) is not None:
            if msg[0] == "start":
                part.start(*msg[1:])
            elif msg[0] == "step":
                conn.send(part.step(*msg[1:]))
            else:  # "pi_q"
                conn.send(part.pi_q)
    except (EOFError, BrokenPipeError):  # the parent has gone away
        pass
    except BaseException as err:  # reported to the parent, which re-raises it
        with contextlib.suppress(OSError):
            try:
                conn.send(err)
            except Exception:  # not picklable
                conn.send(RuntimeError(f"EIP worker failed: {err!r}"))
    finally:
        conn.close()


class _Packed:
    """A large 0/1 (bool/integer) matrix, bit-packed (see :class:`_PackedPart`).

    With ``n_jobs`` > 1, fork available and at least ``_PROCESS_MIN_ELEMENTS``
    entries, the rows are split between forked worker processes (NumPy's gather
    and histogram hold the GIL, so threads would not run them in parallel). Each
    worker packs and keeps its own rows; an iteration sends it ``w`` (n_models
    floats) and gets back its partial ``A^T v`` and L1 change, which are added
    in worker order. The input is shared with the workers copy-on-write and
    only read.
    """

    def __init__(self, arr: npt.NDArray[Any], n_jobs: int = 1) -> None:
        self.n_rows, self.n_cols = arr.shape
        n_proc = min(n_jobs, self.n_rows)
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        self._local: _PackedPart | None = None
        if n_proc > 1 and arr.size >= _PROCESS_MIN_ELEMENTS and _fork_available():
            import multiprocessing

            ctx = multiprocessing.get_context("fork")
            bounds = [self.n_rows * i // n_proc for i in range(n_proc + 1)]
            try:
                for lo, hi in itertools.pairwise(bounds):
                    parent, child = ctx.Pipe()
                    proc = ctx.Process(
                        target=_packed_worker, args=(child, arr, lo, hi), daemon=True
                    )
                    proc.start()
                    child.close()
                    self._conns.append(parent)
                    self._procs.append(proc)
            except BaseException:
                self.close()
                raise
        else:
            self._local = _PackedPart(arr)

    def _recv(self, conn: Any) -> Any:
        msg = conn.recv()
        if isinstance(msg, BaseException):
            raise msg
        return msg

    def close(self) -> None:
        """Stop the worker processes, if any."""
        for conn in self._conns:
            with contextlib.suppress(OSError, ValueError):  # worker already gone
                conn.send(None)
            conn.close()
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():  # pragma: no cover - a worker that did not stop
                proc.terminate()
                proc.join()
        self._conns, self._procs = [], []

    def sums(self) -> _Sums:
        n_q, n_m = self.n_rows, self.n_cols
        if self._local is not None:
            succ, fail, F = self._local.sums()
        else:
            # receive every worker's answer before raising, lowest rows first
            parts = [conn.recv() for conn in self._conns]
            for part in parts:
                if isinstance(part, BaseException):
                    raise part
            succ = np.concatenate([p[0] for p in parts])
            fail = np.concatenate([p[1] for p in parts])
            F = np.zeros(n_m)
            for p in parts:
                F += p[2]
        self._failure_totals = F
        return _Sums(succ, fail, np.full(n_m, float(n_q)), 0, False)

    def failure_totals(self, keep: BoolArray) -> FloatArray:
        """F(m) over the retained questions, accumulated by :meth:`sums`."""
        return self._failure_totals

    def propagate(
        self,
        keep: BoolArray,
        inv_succ: FloatArray,
        F: FloatArray,
        *,
        alpha: float,
        tol: float,
        max_iter: int,
    ) -> tuple[FloatArray, FloatArray, list[float]]:
        """Eqs. 2-3, one pass over the packed codes per iteration (as in :class:`_Blocked`)."""
        n_m = self.n_cols
        n_keep = int(keep.sum())
        tele_m = (1.0 - alpha) / n_m
        if self._local is not None:
            self._local.start(n_keep, alpha)
        for conn in self._conns:
            conn.send(("start", n_keep, alpha))
        pi_m = np.full(n_m, 1.0 / n_m)
        deltas: list[float] = []
        for _ in range(max_iter):
            w = pi_m / F
            w_sum = float(w.sum())
            if self._local is not None:
                z, dq = self._local.step(w, w_sum)
            else:
                for conn in self._conns:
                    conn.send(("step", w, w_sum))
                z = np.zeros(n_m)
                dq = 0.0
                for conn in self._conns:
                    z_t, dq_t = self._recv(conn)
                    z += z_t
                    dq += dq_t
            new_m = alpha * z + tele_m
            delta = dq + float(np.abs(new_m - pi_m).sum())
            pi_m = new_m
            deltas.append(delta)
            if delta < tol:
                if self._local is not None:
                    return self._local.pi_q, pi_m, deltas
                for conn in self._conns:
                    conn.send(("pi_q",))
                pi_q = np.concatenate([self._recv(conn) for conn in self._conns])
                return pi_q, pi_m, deltas
        _not_converged(deltas, tol=tol, max_iter=max_iter, alpha=alpha)


def _byte_words(raw: npt.NDArray[Any]) -> npt.NDArray[np.uint64] | None:
    """A C-contiguous 0/1 byte block seen as 64-bit words of 8 responses, else ``None``."""
    if raw.dtype.itemsize != 1 or raw.shape[1] % 8 or not raw.flags.c_contiguous:
        return None
    return raw.view(np.uint64)


def _swar_row_sums(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """Row sums of 0/1 bytes: add whole words (8 byte lanes at once), then the lanes.

    Adding at most 255 words keeps every byte lane below 256, so no lane carries.
    """
    total = np.zeros(words.shape[0], dtype=np.int64)
    for g in range(0, words.shape[1], 255):
        lanes = np.add.reduce(words[:, g : g + 255], axis=1)
        total += lanes.view(np.uint8).reshape(-1, 8).sum(axis=1, dtype=np.int64)
    return total


def _swar_column_sums(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """Column sums of 0/1 bytes, adding at most 255 rows of words per step (no lane carries)."""
    total = np.zeros(words.shape[1] * 8, dtype=np.int64)
    for g in range(0, words.shape[0], 255):
        total += np.add.reduce(words[g : g + 255], axis=0).view(np.uint8)
    return total


def _check_compact_values(raw: npt.NDArray[Any], start: int) -> None:
    if raw.dtype == np.bool_ or raw.size == 0:
        return
    hi = raw.max()
    lo = 0 if np.issubdtype(raw.dtype, np.unsignedinteger) else raw.min()
    if lo < 0 or hi > 1:
        bad = np.argwhere((raw < 0) | (raw > 1))[0]
        i, j = int(bad[0]) + start, int(bad[1])
        raise InvalidParameterError(
            f"A[{i}, {j}] is {raw[bad[0], bad[1]]!r}; an integer response matrix must hold "
            "only 0 (failed) and 1 (solved). Pass floats in [0, 1] for partial credit."
        )


def _check_float_values(x: FloatArray, start: int) -> None:
    bad = (x < 0) | (x > 1)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        what = "infinite" if np.isinf(x[i, j]) else "outside [0, 1]"
        raise InvalidParameterError(
            f"A[{int(i) + start}, {int(j)}] is {what} ({x[i, j]!r}); responses must be "
            "scores in [0, 1], with NaN for a missing answer"
        )


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
        data = _Blocked(arr, workers)
    else:
        data = _Packed(arr, workers)
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
            raise DegenerateDataError(
                f"question {i} has no observed answer (its row is all NaN); "
                "drop it before calling eip"
            )
        if np.any(sums.col_obs <= 0):
            j = int(np.flatnonzero(sums.col_obs <= 0)[0])
            raise DegenerateDataError(
                f"model {j} has no observed answer (its column is all NaN); drop it"
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
            raise DegenerateDataError(
                f"model {j} fails none of the {n_keep} retained questions (F(m) = 0), so its "
                "difficulty transition P_M->Q is undefined; add questions it fails or drop it"
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
