"""Errors raised by the ranking library.

Every error is a named subclass of :class:`ValueError` (bad input) or
:class:`RuntimeError` (a fit that did not converge), so callers can catch
exactly what they mean to handle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

import numpy as np
import numpy.typing as npt

from ranking.types import IntArray

__all__ = [
    "ConvergenceError",
    "DegenerateDataError",
    "InvalidParameterError",
    "LengthMismatchError",
    "RankingInputError",
    "ShapeError",
]


class RankingInputError(ValueError):
    """Base class for invalid input to a ranking function.

    Besides the message, an error can say which rows, columns or annotators it is
    about, as indices into the caller's arrays, so that a caller that knows their
    names can word the message itself: :meth:`named` gives the message with
    ``question 3`` / ``model 3`` / ``annotator 3`` replaced by names, from the
    fields and never by parsing the text.

    Attributes
    ----------
    reason : str or None
        A stable machine-readable code for the problem (for example
        ``"disconnected"``, ``"separated"``, ``"all_ties"``, ``"no_annotator_fitted"``),
        so callers can word their own advice without parsing the message.
    questions : ndarray of int or None
        Indices of the questions (rows of a response matrix) concerned.
    models : ndarray of int or None
        Indices of the models (columns of a response matrix, or compared items)
        concerned.
    annotators : ndarray of int or None
        Indices of the annotators concerned, when the problem is theirs.
    template : str or None
        The message with ``{question}``, ``{model}`` or ``{annotator}`` where the
        first index of that kind is named (see :meth:`about`); None for a plain message.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        questions: npt.ArrayLike | None = None,
        models: npt.ArrayLike | None = None,
        annotators: npt.ArrayLike | None = None,
        template: str | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.questions = _indices(questions)
        self.models = _indices(models)
        self.annotators = _indices(annotators)
        self.template = template
        self.values: dict[str, object] = {}
        """Values of the template's other placeholders."""

    @classmethod
    def about(
        cls,
        template: str,
        *,
        reason: str | None = None,
        questions: npt.ArrayLike | None = None,
        models: npt.ArrayLike | None = None,
        annotators: npt.ArrayLike | None = None,
        **values: object,
    ) -> Self:
        """An error whose message names what it is about through placeholders.

        ``template`` holds ``{question}``, ``{model}`` or ``{annotator}``, standing for
        the first index of that kind (``question 3``); :meth:`named` puts names there.
        Other placeholders are filled from ``values`` (so text from the data, which may
        hold braces, is never part of the template).

        Examples
        --------
        >>> err = DegenerateDataError.about("{model} has no observed answer", models=[1])
        >>> str(err)
        'model 1 has no observed answer'
        >>> err.named(models=["gpt-4o", "llama"])
        "model 'llama' has no observed answer"
        """
        fields = {"questions": questions, "models": models, "annotators": annotators}
        err = cls("", reason=reason, template=template, **fields)
        err.values = values
        err.args = (err.named(),)
        return err

    def named(
        self,
        *,
        questions: Sequence[str] = (),
        models: Sequence[str] = (),
        annotators: Sequence[str] = (),
    ) -> str:
        """The message with the question, model or annotator it is about named.

        An index without a name (beyond the sequence given) stays a number. A plain
        message (no :attr:`template`) is returned as it is.
        """
        if self.template is None:
            return str(self)
        return self.template.format(
            **self.values,
            question=_label("question", self.questions, questions),
            model=_label("model", self.models, models),
            annotator=_label("annotator", self.annotators, annotators),
        )


def _indices(x: npt.ArrayLike | None) -> IntArray | None:
    return None if x is None else np.asarray(x, dtype=np.int64).reshape(-1)


def _label(kind: str, idx: IntArray | None, names: Sequence[str]) -> str:
    if idx is None or idx.size == 0:
        return kind
    i = int(idx[0])
    return f"{kind} {names[i]!r}" if 0 <= i < len(names) else f"{kind} {i}"


class LengthMismatchError(RankingInputError):
    """Parallel input arrays have different lengths."""


class ShapeError(RankingInputError):
    """An array has the wrong number of dimensions or the wrong shape."""


class InvalidParameterError(RankingInputError):
    """A parameter is outside its valid range, or data holds invalid values."""


class DegenerateDataError(RankingInputError):
    """The data cannot identify the quantity asked for.

    Examples: a comparison graph that is not connected, one annotator only,
    every vote a skip. The message says why and what would fix it; the fields of
    :class:`RankingInputError` (``reason``, ``questions``, ``models``, ``annotators``)
    say it for programs.
    """


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
