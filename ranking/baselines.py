"""Baselines that EIP is compared with: Simple Rank, accuracy, weighted accuracy.

The response matrix has one row per question and one column per model, with
scores in ``[0, 1]`` (1 = solved) and ``NaN`` for a missing answer, which is
left out of every count and mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ranking.errors import (
    DegenerateDataError,
    InvalidParameterError,
    LengthMismatchError,
    ShapeError,
)
from ranking.types import FloatArray

__all__ = ["accuracy", "simple_rank", "weighted_accuracy"]


def _responses(A: Any) -> FloatArray:
    try:
        arr = np.asarray(A)
    except ValueError as err:  # ragged nested sequences
        raise ShapeError(f"A must be a rectangular 2-D array: {err}") from err
    if arr.dtype == object or not (
        arr.dtype == np.bool_
        or np.issubdtype(arr.dtype, np.integer)
        or np.issubdtype(arr.dtype, np.floating)
    ):
        raise InvalidParameterError(f"A must be numeric or boolean, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ShapeError(
            f"A must be 2-D with shape (n_questions, n_models), got {arr.ndim} dimension(s)"
        )
    if arr.size == 0:
        raise DegenerateDataError(f"A is empty (shape {arr.shape})")
    x = arr.astype(np.float64)
    bad = (x < 0) | (x > 1)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InvalidParameterError(
            f"A[{i}, {j}] is {x[i, j]!r}; responses must be in [0, 1] (NaN = missing)"
        )
    return x


def simple_rank(A: npt.ArrayLike) -> FloatArray:
    """Simple Rank difficulty: the share of the models that answered a question and failed it.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses in ``[0, 1]`` (1 = solved), ``NaN`` for missing.

    Returns
    -------
    ndarray of shape (n_questions,)
        Failure rate of each question over the models that answered it,
        ``sum over observed m of (1 - A[q, m]) / (number of observed m)``, in
        ``[0, 1]`` (partial credit counts as a partial failure). Higher means
        harder. On a complete matrix this is the paper's count of failing
        models divided by ``n_models``, so the ranking is the paper's.

    Raises
    ------
    ShapeError
        If ``A`` is not 2-D.
    InvalidParameterError
        If a response is outside ``[0, 1]``.
    DegenerateDataError
        If ``A`` is empty or a question has no observed answer.

    Notes
    -----
    The paper counts the models that answered incorrectly. With missing
    answers a count makes a question that fewer models answered look easier
    (3 failures out of 3 answers would rank below 4 out of 10), so the count
    is divided by the number of answers: a question's difficulty depends only
    on its own answers, and adding or removing a missing entry elsewhere
    changes nothing. For a model-score weight, ``simple_rank(A) / simple_rank(A).sum()``
    is the same as with counts on a complete matrix.

    References
    ----------
    EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty, sec. 3.3
    ("Simple Rank determines question difficulty based solely on the number
    of models that answered incorrectly").

    Examples
    --------
    >>> simple_rank([[1, 1, 0], [0, 0, 0], [1, 1, 1]]).tolist()
    [0.3333333333333333, 1.0, 0.0]

    A question failed by both models that answered it is harder than one
    failed by two of three:

    >>> simple_rank([[0, 0, float("nan")], [0, 0, 1]]).tolist()
    [1.0, 0.6666666666666666]
    """
    x = _responses(A)
    n_obs = np.sum(~np.isnan(x), axis=1)
    if np.any(n_obs == 0):
        i = int(np.flatnonzero(n_obs == 0)[0])
        raise DegenerateDataError.about(
            "{question} has no observed answer; its failure rate is undefined "
            "(drop the all-NaN rows first)",
            questions=[i],
        )
    return np.asarray(np.nansum(1.0 - x, axis=1) / n_obs, dtype=np.float64)


def accuracy(A: npt.ArrayLike) -> FloatArray:
    """Accuracy of each model: mean score over the questions it answered.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses in ``[0, 1]``, ``NaN`` for missing.

    Returns
    -------
    ndarray of shape (n_models,)
        Mean of the observed responses of each model, in ``[0, 1]``.

    Raises
    ------
    ShapeError
        If ``A`` is not 2-D.
    InvalidParameterError
        If a response is outside ``[0, 1]``.
    DegenerateDataError
        If ``A`` is empty or a model answered nothing.

    References
    ----------
    EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty, sec. 4
    ("Standard accuracy: raw percentage of correct answers").

    Examples
    --------
    >>> accuracy([[1, 0], [1, 1], [0, float("nan")]]).tolist()
    [0.6666666666666666, 0.5]
    """
    x = _responses(A)
    n_obs = np.sum(~np.isnan(x), axis=0)
    if np.any(n_obs == 0):
        j = int(np.flatnonzero(n_obs == 0)[0])
        raise DegenerateDataError.about(
            "{model} has no observed answer; accuracy is undefined", models=[j]
        )
    return np.asarray(np.nansum(x, axis=0) / n_obs, dtype=np.float64)


def weighted_accuracy(A: npt.ArrayLike, groups: npt.ArrayLike) -> FloatArray:
    """Dataset-difficulty-weighted accuracy of each model.

    Each dataset ``d`` gets the weight ``w_d = 1 - mean_d``, where ``mean_d``
    is the average accuracy of all models on that dataset (mean of all
    observed responses in its rows). A model's score is the weighted average
    of its per-dataset accuracies, ``sum_d w_d acc[m, d] / sum_d w_d``.

    Parameters
    ----------
    A : array-like of shape (n_questions, n_models)
        Responses in ``[0, 1]``, ``NaN`` for missing.
    groups : array-like of shape (n_questions,)
        Dataset label of each question (any hashable values).

    Returns
    -------
    ndarray of shape (n_models,)
        Weighted accuracy in ``[0, 1]``.

    Raises
    ------
    LengthMismatchError
        If ``groups`` does not have one label per question.
    DegenerateDataError
        If every dataset has weight 0 (all models solve everything), or a
        model has no observed answer in some dataset.

    References
    ----------
    EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty, sec. 4,
    baseline 2 ("weighted average of accuracies on subsets, with weight
    ``w_d = 1 - a_d``, where ``a_d`` is average accuracy of all models on that
    dataset").

    Examples
    --------
    Dataset "e" has mean accuracy 3/4 (weight 1/4), "h" has 1/4 (weight 3/4).

    >>> A = [[1, 1], [1, 0], [1, 0], [0, 0]]
    >>> weighted_accuracy(A, ["e", "e", "h", "h"]).tolist()
    [0.625, 0.125]
    """
    x = _responses(A)
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != x.shape[0]:
        raise LengthMismatchError(
            f"groups must hold one label per question: got shape {g.shape} for "
            f"{x.shape[0]} questions"
        )
    labels, inverse = np.unique(g, return_inverse=True)
    n_m = x.shape[1]
    acc = np.empty((labels.size, n_m))
    weights = np.empty(labels.size)
    for k in range(labels.size):
        rows = x[inverse == k]
        n_obs = np.sum(~np.isnan(rows), axis=0)
        if np.any(n_obs == 0):
            j = int(np.flatnonzero(n_obs == 0)[0])
            raise DegenerateDataError.about(
                "{model} has no observed answer in dataset {dataset!r}; "
                "its accuracy there is undefined",
                models=[j],
                dataset=labels[k],
            )
        acc[k] = np.nansum(rows, axis=0) / n_obs
        weights[k] = 1.0 - float(np.nanmean(rows))
    total = float(weights.sum())
    if total <= 0:
        raise DegenerateDataError(
            "every dataset is solved by every model (all weights 1 - mean accuracy are 0)"
        )
    return np.asarray(weights @ acc / total, dtype=np.float64)
