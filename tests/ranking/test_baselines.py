"""Tests for ranking.baselines and ranking.compare.

Expected numbers are worked by hand in the comments, taken from the EIP paper's
Table 6 (accuracy column of the sec. 4 case study), or checked against scipy /
an independent pairwise count.
"""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ranking import (
    DegenerateDataError,
    InvalidParameterError,
    LengthMismatchError,
    ShapeError,
    accuracy,
    kendall_tau,
    rank_displacement,
    simple_rank,
    spearman_rho,
    weighted_accuracy,
)
from ranking.compare import ranks

DATA = Path(__file__).parent / "data"


def test_simple_rank_failure_rates() -> None:
    # row 0: model 2 fails -> 1 of 3; row 1: all fail -> 3 of 3; row 2: none fail -> 0;
    # row 3: half credit counts as half a failure, the NaN is not an answer -> (0.5 + 1) / 2
    A = [[1, 1, 0], [0, 0, 0], [1, 1, 1], [0.5, np.nan, 0]]
    np.testing.assert_allclose(simple_rank(A), [1 / 3, 1, 0, 0.75])


def test_simple_rank_with_missing_answers_closed_form() -> None:
    """Issue 10: a count made a question answered by fewer models look easier.

    Row 0: answered by 2 of 5 models, both fail -> 2 / 2 = 1 (count 2).
    Row 1: answered by all 5, 3 fail -> 3 / 5 = 0.6 (count 3, which used to rank it harder).
    Row 2: answered by 4, one full and one half failure -> 1.5 / 4 = 0.375.
    """
    nan = np.nan
    A = [[0, nan, 0, nan, nan], [0, 0, 0, 1, 1], [1, 0, nan, 0.5, 1]]
    np.testing.assert_allclose(simple_rank(A), [1.0, 0.6, 0.375])
    assert np.argsort(-simple_rank(A)).tolist() == [0, 1, 2]


def test_simple_rank_complete_matrix_is_the_papers_count_over_n_models() -> None:
    rng = np.random.default_rng(4)
    A = (rng.random((40, 7)) < 0.6).astype(float)
    np.testing.assert_allclose(simple_rank(A) * 7, (A == 0).sum(axis=1))


def test_simple_rank_question_without_answers_is_an_error() -> None:
    with pytest.raises(DegenerateDataError, match="question 1 has no observed answer"):
        simple_rank([[1, 0], [np.nan, np.nan]])


responses = hnp.arrays(
    np.float64,
    st.tuples(st.integers(2, 12), st.integers(2, 8)),
    elements=st.sampled_from([0.0, 0.25, 1.0, np.nan]),
)


@settings(max_examples=200, deadline=None)
@given(A=responses, data=st.data())
def test_simple_rank_unanswered_entries_leave_other_questions_unchanged(
    A: np.ndarray, data: st.DataObject
) -> None:
    """Adding a model that left some questions unanswered, or removing one answer, changes
    only the questions it touched: the others keep their difficulty, hence their order."""
    A[:, 0] = np.nan_to_num(A[:, 0], nan=1.0)  # every question has an answer
    before = simple_rank(A)
    # a new model column, NaN (unanswered) where `skip` is set
    skip = data.draw(hnp.arrays(np.bool_, A.shape[0]))
    answers = data.draw(hnp.arrays(np.float64, A.shape[0], elements=st.sampled_from([0.0, 1.0])))
    after = simple_rank(np.column_stack([A, np.where(skip, np.nan, answers)]))
    np.testing.assert_array_equal(after[skip], before[skip])
    order = np.argsort(before[skip], kind="stable")
    np.testing.assert_array_equal(np.argsort(after[skip], kind="stable"), order)
    # un-answering one entry (keeping the question answered) changes only its row
    i = data.draw(st.integers(0, A.shape[0] - 1))
    j = data.draw(st.integers(1, A.shape[1] - 1))
    B = A.copy()
    B[i, j] = np.nan
    changed = simple_rank(B)
    others = np.arange(A.shape[0]) != i
    np.testing.assert_array_equal(changed[others], before[others])
    assert np.all((changed >= 0) & (changed <= 1))


def test_accuracy_ignores_missing() -> None:
    # model 0: (1 + 1 + 0) / 3; model 1: (0 + 1) / 2, the NaN is left out
    A = [[1, 0], [1, 1], [0, np.nan]]
    np.testing.assert_allclose(accuracy(A), [2 / 3, 1 / 2])


def test_weighted_accuracy_by_hand() -> None:
    # dataset "e" (rows 0-1): mean of all responses 3/4 -> weight 1/4
    #   accuracies: model 0 = 1, model 1 = 1/2
    # dataset "h" (rows 2-3): mean 1/4 -> weight 3/4
    #   accuracies: model 0 = 1/2, model 1 = 0
    # scores: model 0 = (1/4 * 1 + 3/4 * 1/2) / 1 = 5/8; model 1 = (1/4 * 1/2) / 1 = 1/8
    A = [[1, 1], [1, 0], [1, 0], [0, 0]]
    np.testing.assert_allclose(weighted_accuracy(A, ["e", "e", "h", "h"]), [5 / 8, 1 / 8])


def test_weighted_accuracy_normalises_by_weight_sum() -> None:
    # weights 1 - 0.5 = 0.5 and 1 - 0.25 = 0.75; the sum 1.25 divides the weighted sum
    A = [[1, 0], [1, 0], [1, 0], [0, 0]]
    groups = [0, 0, 1, 1]
    acc_g0 = np.array([1.0, 0.0])
    acc_g1 = np.array([0.5, 0.0])
    expected = (0.5 * acc_g0 + 0.75 * acc_g1) / 1.25
    np.testing.assert_allclose(weighted_accuracy(A, groups), expected)


def test_weighted_accuracy_single_group_is_accuracy() -> None:
    rng = np.random.default_rng(0)
    A = (rng.random((50, 4)) < 0.4).astype(float)
    np.testing.assert_allclose(weighted_accuracy(A, np.zeros(50)), accuracy(A))


def test_case_study_accuracy_column() -> None:
    """Table 6 "Accuracy" column: 85, 85, 60, 61, 61 (solved counts 70/10/5, ...)."""
    case = json.loads((DATA / "eip_case_study_table6.json").read_text())
    A = np.zeros((100, 5))
    for j, counts in enumerate(case["solved"]):
        offset = 0
        for size, k in zip(case["tiers"], counts, strict=True):
            A[offset : offset + k, j] = 1
            offset += size
    np.testing.assert_allclose(100 * accuracy(A), case["expected_accuracy_percent"])
    # Simple Rank: easy questions 0-45 are solved by all five models -> 0 failures
    assert np.all(simple_rank(A)[:46] == 0)
    # hard tier = rows 91-99; M1 solves hard 0-4, M2 hard 0-3, so hard 5-8 (rows 96-99)
    # are solved by nobody -> 5 of 5 fail, and hard 4 (row 95) is failed by 4 of 5 models
    assert np.all(simple_rank(A)[96:] == 1)
    assert simple_rank(A)[95] == pytest.approx(4 / 5)


@pytest.mark.parametrize("fn", [simple_rank, accuracy])
def test_baselines_reject_malformed(fn) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ShapeError):
        fn([1, 0, 1])
    with pytest.raises(InvalidParameterError):
        fn([[1, 2], [0, 1]])
    with pytest.raises(DegenerateDataError):
        fn(np.zeros((0, 3)))
    with pytest.raises(InvalidParameterError):
        fn(np.array([["a", "b"]]))
    with pytest.raises(ShapeError, match="rectangular"):
        fn([[1, 0], [1]])


def test_weighted_accuracy_errors() -> None:
    with pytest.raises(LengthMismatchError):
        weighted_accuracy([[1, 0], [0, 1]], [0])
    with pytest.raises(DegenerateDataError, match="solved by every model"):
        weighted_accuracy([[1, 1], [1, 1]], [0, 1])
    with pytest.raises(DegenerateDataError, match="no observed answer"):
        weighted_accuracy([[1, np.nan], [0, 1]], [0, 1])


def test_accuracy_model_without_answers() -> None:
    with pytest.raises(DegenerateDataError, match="model 1"):
        accuracy([[1, np.nan], [0, np.nan]])


# ---------------------------------------------------------------------------
# ranking.compare
# ---------------------------------------------------------------------------


def _pairwise_tau_a(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall tau-a from an explicit count of concordant minus discordant pairs."""
    s = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        s += np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
    return s / (len(x) * (len(x) - 1) / 2)


@settings(max_examples=100, deadline=None)
@given(
    xy=hnp.arrays(
        np.float64,
        st.tuples(st.integers(3, 20), st.just(2)),
        elements=st.floats(-100, 100),
        unique=True,
    )
)
def test_kendall_tau_matches_pairwise_count_without_ties(xy: np.ndarray) -> None:
    x, y = xy[:, 0], xy[:, 1]
    if len(np.unique(x)) < len(x) or len(np.unique(y)) < len(y):
        return
    assert kendall_tau(x, y) == pytest.approx(_pairwise_tau_a(x, y), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(3, 30), seed=st.integers(0, 2**32 - 1))
def test_spearman_is_pearson_of_ranks_and_symmetric(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=n), rng.normal(size=n)
    expected = np.corrcoef(ranks(x), ranks(y))[0, 1]
    assert spearman_rho(x, y) == pytest.approx(expected, abs=1e-12)
    assert spearman_rho(x, y) == pytest.approx(spearman_rho(y, x), abs=1e-15)
    assert spearman_rho(x, x) == pytest.approx(1.0)
    assert kendall_tau(x, -x) == pytest.approx(-1.0)


def test_rank_displacement_by_hand() -> None:
    # ranks of x: 1, 2, 3, 4; of y: 2, 1, 3, 4 -> |diff| = 1, 1, 0, 0 -> mean 0.5
    assert rank_displacement([4, 3, 2, 1], [3, 4, 2, 1]) == 0.5
    assert ranks([0.2, 0.9, 0.5, 0.5]).tolist() == [4.0, 1.0, 2.5, 2.5]


@pytest.mark.parametrize("fn", [kendall_tau, spearman_rho, rank_displacement])
def test_correlations_reject_degenerate(fn) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ShapeError):
        fn([1, 2, 3], [1, 2])
    with pytest.raises(ShapeError):
        fn([[1, 2]], [[1, 2]])
    with pytest.raises(DegenerateDataError):
        fn([1], [2])
    with pytest.raises(DegenerateDataError, match="constant"):
        fn([1, 1, 1], [1, 2, 3])
    with pytest.raises(InvalidParameterError):
        fn([1, np.nan, 3], [1, 2, 3])


@pytest.mark.shared_data
def test_accuracy_matches_chembench_published_scores(shared_data: Path) -> None:
    """SOURCE.md: column means of binary_matrix.csv equal model_score_allcorrect.csv exactly."""
    folder = shared_data / "chembench_llm_binary"
    with (folder / "binary_matrix.csv").open(newline="") as f:
        reader = csv.reader(f)
        names = next(reader)[1:]
        A = np.array([[float(v) for v in row[1:]] for row in reader])
    with (folder / "model_score_allcorrect.csv").open(newline="") as f:
        published = {row[""]: float(row["score"]) for row in csv.DictReader(f)}
    acc = accuracy(A)
    np.testing.assert_allclose(acc, [published[n] for n in names], rtol=1e-12)
    assert acc[names.index("o1")] == pytest.approx(0.6286, abs=5e-5)  # SOURCE.md value
