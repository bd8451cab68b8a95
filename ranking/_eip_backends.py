"""Backends of :func:`ranking.eip.eip`: where the response matrix lives while EIP iterates.

The algorithm (validation, exclusions, the result) is in :mod:`ranking.eip`; this module
holds the three ways of storing the matrix and running one propagation step on it:

* :class:`_Dense`: the whole matrix as float64, for matrices that fit in the cache size
  that :func:`ranking.eip.eip` chooses;
* :class:`_Blocked`: a large float matrix in row blocks converted one at a time, on
  ``n_jobs`` threads;
* :class:`_Packed`: a large 0/1 matrix bit-packed, split between forked worker
  processes from ``sizes.process_min_elements`` entries.

Each backend offers ``sums()``, ``failure_totals(keep)``, ``propagate(...)`` and
``close()``; partial sums are added in a fixed order, so results do not depend on which
worker ran what.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import numpy as np
import numpy.typing as npt

from ranking.errors import ConvergenceError, InvalidParameterError
from ranking.types import BoolArray, FloatArray

_T = TypeVar("_T")


@dataclass(frozen=True)
class _Sizes:
    """Work sizes of the backends; :func:`ranking.eip.eip` passes its module settings."""

    block_elements: int
    """Elements per float64 work block of :class:`_Blocked`."""
    task_blocks: int
    """Blocks per task handed to a worker thread by :class:`_Blocked`."""
    packed_rows: int
    """Questions per task of :class:`_PackedPart`."""
    pack_rows: int
    """Rows packed and transposed at a time while building the codes."""
    process_min_elements: int
    """Entries from which :class:`_Packed` forks worker processes."""


def _fork_available() -> bool:
    """Fork-based workers only on Linux (fork is unsafe with some macOS system libraries)."""
    import multiprocessing

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float64)
"""``_BITS[c, k]`` is 1.0 when byte ``c`` packs a 1 for the ``k``-th of its 8 models
(``np.packbits`` order: the first model is the most significant bit)."""

_POPCOUNT_TABLE = _BITS.sum(axis=1)[None, :]
"""Number of set bits of each byte value, as a one-row table for ``_Packed._row_sums``."""


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

    Used when the float64 copy is at most ``ranking.eip._CACHE_BYTES``. ``xt`` holds
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

    The rows are cut into tasks of ``sizes.task_blocks`` blocks which run on up to
    ``n_jobs`` threads (NumPy releases the GIL in the casts and BLAS calls).
    Each task returns its own partial sums and they are added in task order,
    so the result does not depend on which thread ran which task.
    """

    def __init__(self, arr: npt.NDArray[Any], n_jobs: int, sizes: _Sizes) -> None:
        self.arr = arr
        self.n_rows, self.n_cols = arr.shape
        self.is_float = bool(np.issubdtype(arr.dtype, np.floating))
        self.has_missing = self.is_float  # refined by sums()
        self._failure_totals = np.zeros(self.n_cols)
        self._step = max(1, sizes.block_elements // max(self.n_cols, 1))
        task_rows = self._step * max(1, sizes.task_blocks)
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
    of ``sizes.packed_rows`` (one thread: ``np.take`` and ``np.bincount`` hold the GIL).
    """

    def __init__(self, arr: npt.NDArray[Any], sizes: _Sizes, offset: int = 0) -> None:
        self.arr = arr
        self.offset = offset
        self._pack_rows = max(1, sizes.pack_rows)
        self.n_rows, self.n_cols = arr.shape
        self.n_bytes = (self.n_cols + 7) // 8
        self.codes = np.empty((self.n_bytes, self.n_rows), dtype=np.uint8)
        rows = max(1, sizes.packed_rows)
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
            step = self._pack_rows  # small pieces: the transpose stays in cache
            for start in range(lo, hi, step):
                stop = min(start + step, hi)
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


def _packed_worker(conn: Any, arr: npt.NDArray[Any], lo: int, hi: int, sizes: _Sizes) -> None:
    """Forked worker: owns rows ``lo:hi`` of a :class:`_Packed` matrix; driven through ``conn``."""
    try:
        part = _PackedPart(arr[lo:hi], sizes, offset=lo)
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

    With ``n_jobs`` > 1, fork available and at least ``sizes.process_min_elements``
    entries, the rows are split between forked worker processes (NumPy's gather
    and histogram hold the GIL, so threads would not run them in parallel). Each
    worker packs and keeps its own rows; an iteration sends it ``w`` (n_models
    floats) and gets back its partial ``A^T v`` and L1 change, which are added
    in worker order. The input is shared with the workers copy-on-write and
    only read.
    """

    def __init__(self, arr: npt.NDArray[Any], n_jobs: int, sizes: _Sizes) -> None:
        self.n_rows, self.n_cols = arr.shape
        n_proc = min(n_jobs, self.n_rows)
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        self._local: _PackedPart | None = None
        if n_proc > 1 and arr.size >= sizes.process_min_elements and _fork_available():
            import multiprocessing

            ctx = multiprocessing.get_context("fork")
            bounds = [self.n_rows * i // n_proc for i in range(n_proc + 1)]
            try:
                for lo, hi in itertools.pairwise(bounds):
                    parent, child = ctx.Pipe()
                    proc = ctx.Process(
                        target=_packed_worker, args=(child, arr, lo, hi, sizes), daemon=True
                    )
                    proc.start()
                    child.close()
                    self._conns.append(parent)
                    self._procs.append(proc)
            except BaseException:
                self.close()
                raise
        else:
            self._local = _PackedPart(arr, sizes)

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
            "only 0 (failed) and 1 (solved). Pass floats in [0, 1] for partial credit.",
            questions=[i],
            models=[j],
        )


def _check_float_values(x: FloatArray, start: int) -> None:
    bad = (x < 0) | (x > 1)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        what = "infinite" if np.isinf(x[i, j]) else "outside [0, 1]"
        raise InvalidParameterError(
            f"A[{int(i) + start}, {int(j)}] is {what} ({x[i, j]!r}); responses must be "
            "scores in [0, 1], with NaN for a missing answer",
            questions=[int(i) + start],
            models=[int(j)],
        )
