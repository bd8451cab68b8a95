"""Errors raised by the ranking library.

Every error is a named subclass of :class:`ValueError` (bad input) or
:class:`RuntimeError` (a fit that did not converge), so callers can catch
exactly what they mean to handle.
"""

from __future__ import annotations

from typing import Any

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

    Attributes
    ----------
    reason : str or None
        A stable machine-readable code for the problem (for example
        ``"disconnected"``, ``"separated"``, ``"all_ties"``, ``"no_annotator_fitted"``),
        so callers can word their own advice without parsing the message.
    annotators : ndarray of int or None
        Indices of the annotators concerned, when the problem is theirs.
    models : ndarray of int or None
        Indices of the items concerned, when the problem is theirs.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        annotators: Any = None,
        models: Any = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.annotators = annotators
        self.models = models


class ConvergenceError(RuntimeError):
    """An iterative fit stopped before meeting its tolerance.

    Attributes
    ----------
    iterations : int
        Iterations run before stopping.
    tol : float
        The tolerance that was not met.
    estimator : str
        Name of the fit that stopped (for example ``"am_elo"``), empty when unknown.
    """

    def __init__(
        self, message: str, *, iterations: int = 0, tol: float = 0.0, estimator: str = ""
    ) -> None:
        super().__init__(message)
        self.iterations = iterations
        self.tol = tol
        self.estimator = estimator
