"""Structured fields of ranking's errors: callers name what an error is about from its
index fields (:meth:`RankingInputError.named`), never by parsing its message."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from ranking import accuracy, eip, fit_1pl, simple_rank
from ranking.errors import DegenerateDataError, InvalidParameterError, RankingInputError


def test_eip_names_the_model_that_fails_nothing() -> None:
    A = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 1], [0, 0, 1]], dtype=np.uint8)
    with pytest.raises(DegenerateDataError, match="model 2 fails none") as info:
        eip(A)
    err = info.value
    assert err.models is not None
    assert err.models.tolist() == [2]
    assert err.named(models=["a", "b", "c"]).startswith("model 'c' fails none of the 3 ")
    assert err.named(models=["a"]) == str(err)  # no name for index 2: the number stays


def test_baselines_name_the_question_and_the_model() -> None:
    nan = float("nan")
    with pytest.raises(DegenerateDataError) as info:
        simple_rank([[0.0, 1.0], [nan, nan]])
    q = info.value
    assert q.questions is not None
    assert q.questions.tolist() == [1]
    assert q.named(questions=["q0", "q1"]).startswith("question 'q1' has no observed answer")
    with pytest.raises(DegenerateDataError) as info:
        accuracy([[nan, 1.0], [nan, 0.0]])
    assert info.value.named(models=["x", "y"]) == (
        "model 'x' has no observed answer; accuracy is undefined"
    )


def test_irt_bad_entry_carries_its_row_and_column() -> None:
    with pytest.raises(InvalidParameterError, match=r"A\[1, 0\]") as info:
        fit_1pl([[0, 1], [2, 0], [1, 0]])
    err = info.value
    assert err.questions is not None
    assert err.models is not None
    assert (err.questions.tolist(), err.models.tolist()) == ([1], [0])
    assert err.named(questions=["a", "b", "c"]) == str(err)  # a plain message stays as it is


def test_template_values_with_braces_and_pickling() -> None:
    err = DegenerateDataError.about(
        "{model} has no answer in dataset {dataset!r}", models=[0], dataset="a{b}"
    )
    assert str(err) == "model 0 has no answer in dataset 'a{b}'"
    again = pickle.loads(pickle.dumps(err))  # errors cross process boundaries (EIP workers)
    assert isinstance(again, RankingInputError)
    assert str(again) == str(err)
    assert again.named(models=["m"]) == "model 'm' has no answer in dataset 'a{b}'"
