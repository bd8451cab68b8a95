"""Errors raised by the ranking library.

Every error is a named subclass of :class:`ValueError` (bad input) or
:class:`RuntimeError` (a fit that did not converge), so callers can catch
exactly what they mean to handle.
"""

from __future__ import annotations

__all__ = [
    "ConvergenceError",
    "DegenerateDataError",
    "InvalidParameterError",
    "LengthMismatchError",
    "RankingInputError",
    "ShapeError",
]


class RankingInputError(ValueError):
    """Base class for invalid input to a ranking function."""


class LengthMismatchError(RankingInputError):
    """Parallel input arrays have different lengths."""


class ShapeError(RankingInputError):
    """An array has the wrong number of dimensions or the wrong shape."""


class InvalidParameterError(RankingInputError):
    """A parameter is outside its valid range, or data holds invalid values."""


class DegenerateDataError(RankingInputError):
    """The data cannot identify the quantity asked for.

    Examples: a comparison graph that is not connected, one annotator only,
    every vote a skip. The message says why and what would fix it.
    """


class ConvergenceError(RuntimeError):
    """An iterative fit stopped before meeting its tolerance.

    Attributes
    ----------
    iterations : int
        Iterations run before stopping.
    tol : float
        The tolerance that was not met.
    """

    def __init__(self, message: str, *, iterations: int = 0, tol: float = 0.0) -> None:
        super().__init__(message)
        self.iterations = iterations
        self.tol = tol
