"""Boundary checks shared by the ranking functions.

Each check converts its input with :func:`numpy.asarray` and raises a named
:class:`~ranking.errors.RankingInputError` subclass whose message gives the
offending value and what was expected.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ranking.errors import InvalidParameterError, LengthMismatchError, ShapeError
from ranking.types import FloatArray, IntArray, RNGLike


def as_float_matrix(x: npt.ArrayLike, name: str, *, allow_nan: bool = False) -> FloatArray:
    """Return ``x`` as a 2-D float64 array, checking shape and finiteness."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2:
        raise ShapeError(f"{name} must be 2-D, got an array with {arr.ndim} dimension(s)")
    bad = np.isinf(arr) if allow_nan else ~np.isfinite(arr)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        what = "infinite" if allow_nan else "non-finite"
        raise InvalidParameterError(f"{name}[{i}, {j}] is {what} ({arr[i, j]!r})")
    return arr


def as_index_array(x: npt.ArrayLike, name: str, *, n: int | None = None) -> IntArray:
    """Return ``x`` as a 1-D int64 array of indices in ``[0, n)``."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ShapeError(f"{name} must be 1-D, got {arr.ndim} dimension(s)")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.mod(arr, 1) == 0):
            arr = arr.astype(np.int64)
        else:
            raise InvalidParameterError(f"{name} must hold integer indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and arr.min() < 0:
        raise InvalidParameterError(f"{name} holds a negative index ({int(arr.min())})")
    if n is not None and arr.size and arr.max() >= n:
        raise InvalidParameterError(
            f"{name} holds index {int(arr.max())}, but there are only {n} items"
        )
    return arr


def check_same_length(**arrays: Any) -> int:
    """Check that all arrays have the same first dimension; return it."""
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{k}={n}" for k, n in lengths.items())
        raise LengthMismatchError(f"inputs must have the same length, got {detail}")
    return next(iter(lengths.values()), 0)


def check_in_range(value: float, name: str, low: float, high: float) -> float:
    """Check ``low <= value <= high`` (and finite)."""
    v = float(value)
    if not np.isfinite(v) or not (low <= v <= high):
        raise InvalidParameterError(f"{name} must be in [{low}, {high}], got {value!r}")
    return v


def make_rng(rng: RNGLike) -> np.random.Generator:
    """Return a Generator from a Generator, a seed or None."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)
