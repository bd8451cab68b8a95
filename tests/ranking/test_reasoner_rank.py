"""ReasonerRank, its baselines and the rank-agreement metrics (ranking.reasoner_rank,
ranking.rank_metrics), checked against the paper's own identities, an independent
package (rbo), exhaustive enumeration and slow reference implementations."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ranking.errors import (
    DegenerateDataError,
    InvalidParameterError,
    ShapeError,
)
from ranking.rank_metrics import (
    average_overlap,
    ordering,
    overlap_at_depth,
    random_expectation,
    ranking_agreement,
    rbo_extrapolated,
    rbo_weighted,
    set_precision_at_k,
)
from ranking.reasoner_rank import (
    agreement_matrix,
    batch_consistency,
    consensus_answers,
    consistency_from_similarity,
    default_k,
    mca,
    reasoner_rank,
    reasoning_consistency,
    selfrank_ftr,
    selfrank_gtr,
    structure_penalty,
    topk_rerank,
)

# ---------------------------------------------------------------------------
# slow, obvious references
# ---------------------------------------------------------------------------


def naive_overlap(s: list[int], t: list[int]) -> list[float]:
    return [len(set(s[:d]) & set(t[:d])) / d for d in range(1, len(s) + 1)]


def naive_consensus(answers: np.ndarray, voters: list[int]) -> list[int]:
    out = []
    for q in range(answers.shape[1]):
        votes = [int(answers[v, q]) for v in voters if answers[v, q] >= 0]
        if not votes:
            out.append(-1)
            continue
        counts = Counter(votes)
        best = max(counts.values())
        # the tie goes to the answer of the best-ranked voter among the tied answers
        out.append(next(v for v in votes if counts[v] == best))
    return out


def simulate_answers(
    rng: np.random.Generator,
    accuracy: np.ndarray,
    n_questions: int,
    *,
    n_options: int = 4,
    shared_wrong: np.ndarray | None = None,
    shared_rate: float = 0.0,
) -> np.ndarray:
    """Gold answer 0; a wrong answer is uniform over 1..n_options-1, or the shared
    wrong answer 1 for models marked in ``shared_wrong`` on a fraction of questions."""
    n = accuracy.size
    correct = rng.random((n, n_questions)) < accuracy[:, None]
    wrong = rng.integers(1, n_options, size=(n, n_questions))
    if shared_wrong is not None:
        trap = rng.random(n_questions) < shared_rate
        for m in np.flatnonzero(shared_wrong):
            correct[m, trap] = False
            wrong[m, trap] = 1
    return np.where(correct, 0, wrong).astype(np.int64)


# ---------------------------------------------------------------------------
# structure penalty and consistency
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("has_answer", "has_conclusion", "steps", "evidence", "expected"),
    [
        (True, True, 3, 3, 0.0),  # complete
        (False, True, 3, 3, 1.0),  # empty answer
        (True, False, 3, 3, 1.0),  # empty conclusion
        (True, True, 2, 3, 1.0),  # one step missing
        (True, True, 0, 3, 3.0),  # no reasoning
        (True, True, 3, 1, 2.0),  # two evidence items missing
        (True, True, 5, 7, 0.0),  # more than asked: no bonus, no penalty
        (False, False, 0, 0, 8.0),  # empty response
    ],
)
def test_structure_penalty_terms(
    has_answer: bool, has_conclusion: bool, steps: int, evidence: int, expected: float
) -> None:
    assert structure_penalty(has_answer, has_conclusion, steps, evidence) == expected


def test_structure_penalty_rejects_negative_counts() -> None:
    with pytest.raises(InvalidParameterError, match="n_steps"):
        structure_penalty(True, True, -1, 3)


def test_consistency_from_known_similarities() -> None:
    steps = np.array([[1.0, 0.8, 0.1], [0.8, 1.0, 0.4], [0.1, 0.4, 1.0]])
    evid = np.array([[0.9, 0.2], [0.3, 0.5], [0.0, 0.7]])
    p = consistency_from_similarity(steps, evid)
    assert p.reasoning == pytest.approx((0.8 + 0.4) / 2, abs=1e-15)
    assert p.evidence == pytest.approx((0.9 + 0.5 + 0.7) / 3, abs=1e-15)
    assert p.total == pytest.approx(0.6 + 0.7, abs=1e-15)


@pytest.mark.parametrize(
    ("steps", "evidence", "reasoning", "evid"),
    [
        (np.ones((1, 1)), np.array([[0.6]]), 0.0, 0.6),  # one step: C_reason = 0
        (np.ones((0, 0)), np.zeros((0, 2)), 0.0, 0.0),  # no step at all
        (np.array([[1.0, 0.5], [0.5, 1.0]]), np.zeros((2, 0)), 0.5, 0.0),  # no evidence
    ],
)
def test_consistency_edge_cases(
    steps: np.ndarray, evidence: np.ndarray, reasoning: float, evid: float
) -> None:
    p = consistency_from_similarity(steps, evidence)
    assert (p.reasoning, p.evidence) == pytest.approx((reasoning, evid))


def test_consistency_from_embeddings_is_cosine() -> None:
    s = np.array([[3.0, 4.0], [4.0, 3.0], [0.0, 0.0]])  # a zero vector: similarity 0
    e = np.array([[1.0, 0.0]])
    p = reasoning_consistency(s, e)
    assert p.reasoning == pytest.approx((24 / 25 + 0) / 2)
    assert p.evidence == pytest.approx((0.6 + 0.8 + 0.0) / 3)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_batch_consistency_matches_single(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, max_s, max_e, dim = 6, 5, 4, 3
    steps = rng.normal(size=(n, max_s, dim))
    evid = rng.normal(size=(n, max_e, dim))
    ns = rng.integers(0, max_s + 1, size=n)
    ne = rng.integers(0, max_e + 1, size=n)
    sm = np.arange(max_s)[None, :] < ns[:, None]
    em = np.arange(max_e)[None, :] < ne[:, None]
    cr, ce = batch_consistency(steps, sm, evid, em)
    for i in range(n):
        p = reasoning_consistency(steps[i, : ns[i]], evid[i, : ne[i]])
        assert cr[i] == pytest.approx(p.reasoning, abs=1e-12)
        assert ce[i] == pytest.approx(p.evidence, abs=1e-12)


def test_batch_consistency_rejects_gaps_in_mask() -> None:
    with pytest.raises(InvalidParameterError, match="left-aligned"):
        batch_consistency(np.ones((1, 2, 2)), [[False, True]], np.ones((1, 1, 2)), [[True]])


# ---------------------------------------------------------------------------
# consensus, TopK-ReRank and MCA
# ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.integers(1, 4))
def test_consensus_matches_reference(seed: int, n_models: int, n_options: int) -> None:
    rng = np.random.default_rng(seed)
    answers = rng.integers(-1, n_options, size=(n_models, 30))
    k = int(rng.integers(1, n_models + 1))
    voters = [int(v) for v in rng.permutation(n_models)[:k]]
    assert consensus_answers(answers, voters).tolist() == naive_consensus(answers, voters)


def test_consensus_ties_go_to_the_better_ranked_model() -> None:
    # voters in order 2, 0, 1, 3: answers 5 (voter 2), 7 (voter 0), 7, 5 -> a 2-2 tie
    answers = np.array([[7], [7], [5], [5]])
    assert consensus_answers(answers, [2, 0, 1, 3]).tolist() == [5]
    assert consensus_answers(answers, [0, 2, 1, 3]).tolist() == [7]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 8), st.integers(1, 5))
def test_k_equal_n_reproduces_mca_exactly(seed: int, n_models: int, n_subsets: int) -> None:
    """The paper's Table 6: K = number of models is the majority vote."""
    rng = np.random.default_rng(seed)
    n_q = 40
    answers = rng.integers(-1, 3, size=(n_models, n_q))
    quality = rng.normal(size=(n_models, n_q))
    subsets = rng.integers(0, n_subsets, size=n_q)
    subsets[:n_subsets] = np.arange(n_subsets)  # every subset non-empty
    rr = reasoner_rank(answers, quality, subsets=subsets, k=n_models)
    m = mca(answers, subsets=subsets, priority=rr.subset_initial_orders)
    np.testing.assert_array_equal(rr.subset_scores, m.subset_scores)
    np.testing.assert_array_equal(rr.subset_orders, m.subset_orders)
    np.testing.assert_array_equal(rr.scores, m.scores)
    for s, label in enumerate(rr.subsets):
        cols = subsets == label
        np.testing.assert_array_equal(
            rr.consensus[cols], consensus_answers(answers[:, cols], rr.subset_initial_orders[s])
        )


def test_k_equal_n_matches_default_mca_without_ties() -> None:
    # an odd number of models and two options: the vote has no tie, so the tie order is moot
    rng = np.random.default_rng(3)
    answers = rng.integers(0, 2, size=(7, 200))
    quality = rng.normal(size=(7, 200))
    rr = reasoner_rank(answers, quality, k=7)
    np.testing.assert_array_equal(rr.scores, mca(answers).scores)


def test_topk_rerank_ties_fall_back_to_initial_ranking() -> None:
    answers = np.array([[0, 0], [0, 0], [1, 1]])
    r = topk_rerank(answers, [0.1, 0.9, 0.5], k=2)
    assert r.scores.tolist() == [1.0, 1.0, 0.0]
    assert r.order.tolist() == [1, 0, 2]  # 1 before 0: better initial score


def test_question_without_consensus_is_left_out() -> None:
    answers = np.array([[0, -1, 0], [0, -1, 1], [1, 2, 1]])
    r = topk_rerank(answers, [2.0, 1.0, 0.0], k=2)
    assert r.consensus.tolist() == [0, -1, 0]
    assert r.scores.tolist() == [1.0, 0.5, 0.0]


def test_default_k_follows_the_paper() -> None:
    assert [default_k(n) for n in (2, 4, 10, 11, 16)] == [2, 4, 4, 6, 6]
    answers = np.zeros((12, 3), dtype=np.int64)
    assert reasoner_rank(answers, np.zeros((12, 3))).k == 6


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_reasoner_rank_invariances(seed: int) -> None:
    """Relabelling models, reordering questions and renaming answers change nothing."""
    rng = np.random.default_rng(seed)
    n, n_q = 7, 30
    answers = rng.integers(-1, 3, size=(n, n_q))
    quality = rng.normal(size=(n, n_q))  # continuous: no tie in pi_0
    subsets = np.repeat([0, 1, 2], 10)
    base = reasoner_rank(answers, quality, subsets=subsets, k=3)
    perm = rng.permutation(n)
    r = reasoner_rank(answers[perm], quality[perm], subsets=subsets, k=3)
    np.testing.assert_allclose(r.scores, base.scores[perm])
    np.testing.assert_array_equal(perm[r.order], base.order)
    cols = rng.permutation(n_q)
    r = reasoner_rank(answers[:, cols], quality[:, cols], subsets=subsets[cols], k=3)
    np.testing.assert_allclose(r.scores, base.scores, atol=1e-12)
    rename = np.where(answers >= 0, (answers * 7 + 11) % 29, -1)  # a bijection of codes
    r = reasoner_rank(rename, quality, subsets=subsets, k=3)
    np.testing.assert_array_equal(r.scores, base.scores)


def test_rerank_beats_mca_when_a_minority_is_right() -> None:
    """The paper's claim (sec. 2.3, Table 4): 3 strong reasoners against 7 models sharing
    a systematic wrong answer; re-ranking finds the strong ones, the majority does not."""
    rng = np.random.default_rng(11)
    acc = np.array([0.9, 0.88, 0.86] + [0.6] * 7)
    shared = np.array([False] * 3 + [True] * 7)
    answers = simulate_answers(rng, acc, 400, shared_wrong=shared, shared_rate=0.5)
    quality = np.where(np.arange(10)[:, None] < 3, 1.5, 0.8) + rng.normal(0, 0.3, (10, 400))
    rr = reasoner_rank(answers, quality, k=3)
    assert set(rr.order[:3].tolist()) == {0, 1, 2}
    assert not set(mca(answers).order[:3].tolist()) & {0, 1, 2}


def test_bad_answers_raise() -> None:
    with pytest.raises(InvalidParameterError, match="-1 for no answer"):
        reasoner_rank([[0, -2]], [[0.0, 0.0]])
    with pytest.raises(InvalidParameterError, match="integer answer codes"):
        mca([[0.5, 1.0]])
    with pytest.raises(ShapeError, match="2-D"):
        mca([0, 1])
    with pytest.raises(InvalidParameterError, match="k must be"):
        reasoner_rank([[0], [1]], [[0.0], [0.0]], k=3)
    with pytest.raises(InvalidParameterError, match="not finite"):
        reasoner_rank([[0], [1]], [[np.nan], [0.0]])
    with pytest.raises(ShapeError, match="quality"):
        reasoner_rank([[0], [1]], [[0.0]])


# ---------------------------------------------------------------------------
# SelfRank
# ---------------------------------------------------------------------------


def test_selfrank_recovers_independent_errors() -> None:
    rng = np.random.default_rng(5)
    acc = np.array([0.95, 0.85, 0.75, 0.65, 0.55, 0.45, 0.35])
    answers = simulate_answers(rng, acc, 3000, n_options=10)
    assert selfrank_ftr(answers).order.tolist() == list(range(7))
    gtr = selfrank_gtr(answers, rng=1)
    assert gtr.order[:2].tolist() == [0, 1]
    assert sorted(gtr.order.tolist()) == list(range(7))


def test_selfrank_ftr_reputations_average_one_and_gtr_is_seeded() -> None:
    rng = np.random.default_rng(6)
    answers = rng.integers(0, 3, size=(6, 50))
    subsets = np.repeat([0, 1], 25)
    r = selfrank_ftr(answers, subsets=subsets)
    np.testing.assert_allclose(r.subset_scores.mean(axis=1), 1.0)
    a = selfrank_gtr(answers, subsets=subsets, rng=4)
    b = selfrank_gtr(answers, subsets=subsets, rng=4)
    np.testing.assert_array_equal(a.subset_orders, b.subset_orders)
    assert np.all(np.sort(a.subset_orders, axis=1) == np.arange(6))


def test_selfrank_needs_three_models() -> None:
    with pytest.raises(DegenerateDataError, match="at least 3"):
        selfrank_ftr([[0], [1]])
    with pytest.raises(DegenerateDataError, match="at least 3"):
        selfrank_gtr([[0], [1]])


def test_agreement_matrix_ignores_missing_answers() -> None:
    m = agreement_matrix([[0, 1, -1], [0, 2, 3], [-1, -1, -1]])
    assert m[0, 1] == 0.5
    assert m[0, 2] == 0.0
    assert m[2, 2] == 0.0


# ---------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------

permutations = st.integers(2, 12).flatmap(
    lambda n: st.tuples(st.permutations(list(range(n))), st.permutations(list(range(n))))
)


@settings(max_examples=80, deadline=None)
@given(permutations, st.floats(0.05, 0.99))
def test_overlap_metrics_properties(pair: tuple[list[int], list[int]], p: float) -> None:
    s, t = pair
    n = len(s)
    np.testing.assert_allclose(overlap_at_depth(s, t), naive_overlap(s, t), atol=1e-15)
    assert average_overlap(s, t) == pytest.approx(average_overlap(t, s), abs=1e-15)
    assert 0.0 <= average_overlap(s, t) <= 1.0
    assert average_overlap(s, s) == 1.0
    assert rbo_weighted(s, s, p=p) == pytest.approx(1 - p**n, abs=1e-12)
    assert rbo_extrapolated(s, s, p=p) == pytest.approx(1.0, abs=1e-12)
    assert rbo_weighted(s, t, p=p) <= rbo_extrapolated(s, t, p=p) + 1e-15
    assert set_precision_at_k(s, t, k=n) == 1.0
    assert overlap_at_depth(s, t)[-1] == 1.0


@settings(max_examples=60, deadline=None)
@given(permutations, st.floats(0.05, 0.99))
def test_weighted_rbo_matches_rbo_package(pair: tuple[list[int], list[int]], p: float) -> None:
    """The rbo package computes eq. 12 truncated at n for p < 1,
    average overlap (eq. 13) for p = 1, and eq. 32 with ext=True / rbo_ext.

    rbo 0.1.3 pins numpy < 2, so it is not in the test group (it would downgrade numpy);
    ``pip install --no-deps rbo tqdm`` installs it beside numpy 2, where it works."""
    rbo = pytest.importorskip("rbo")
    s, t = pair
    ref = rbo.RankingSimilarity(s, t)
    assert abs(rbo_weighted(s, t, p=p) - ref.rbo(p=p)) < 1e-12
    assert abs(average_overlap(s, t) - ref.rbo(p=1.0)) < 1e-12
    assert abs(rbo_extrapolated(s, t, p=p) - ref.rbo(p=p, ext=True)) < 1e-12
    assert abs(rbo_extrapolated(s, t, p=p) - ref.rbo_ext(p=p)) < 1e-12


def test_rbo_on_webber_style_example() -> None:
    s, t = [0, 1, 2, 3, 4], [1, 0, 4, 2, 3]
    # A_d = 0, 1, 2/3, 3/4, 1
    assert average_overlap(s, t) == pytest.approx((0 + 1 + 2 / 3 + 3 / 4 + 1) / 5)
    assert rbo_weighted(s, t, p=0.5) == pytest.approx(
        0.5 * (0 + 0.5 * 1 + 0.25 * 2 / 3 + 0.125 * 3 / 4 + 0.0625 * 1)
    )


@pytest.mark.parametrize("n", [4, 6])
def test_random_expectations_exact_by_enumeration(n: int) -> None:
    target = list(range(n))
    perms = list(itertools.permutations(target))
    exp = random_expectation(n, p=0.8, k=3)
    for name, f in (
        ("rbo", lambda s: average_overlap(s, target)),
        ("rbo_weighted", lambda s: rbo_weighted(s, target, p=0.8)),
        ("rbo_extrapolated", lambda s: rbo_extrapolated(s, target, p=0.8)),
        ("sp_at_k", lambda s: set_precision_at_k(s, target, k=3)),
    ):
        assert np.mean([f(list(s)) for s in perms]) == pytest.approx(exp[name], abs=1e-12)
    assert exp["rbo"] == (n + 1) / (2 * n)


def test_random_expectations_by_simulation_ten_models() -> None:
    """The paper's yardstick: a random ranking of 10 models has RBO 0.55 and SP@3 0.3.

    20,000 random rankings; the tolerance is 4 standard errors of the mean (the sample
    standard deviation over sqrt(20,000)), so a correct formula fails with probability
    about 6e-5 per metric -- and the seed is fixed, so the test is deterministic."""
    rng = np.random.default_rng(2025)
    target = np.arange(10)
    draws = 20_000
    ao = np.empty(draws)
    sp = np.empty(draws)
    for i in range(draws):
        s = rng.permutation(10)
        ao[i] = average_overlap(s, target)
        sp[i] = set_precision_at_k(s, target, k=3)
    exp = random_expectation(10, k=3)
    assert exp["rbo"] == 0.55
    assert exp["sp_at_k"] == pytest.approx(0.3)
    for values, mean in ((ao, 0.55), (sp, 0.3)):
        se = values.std(ddof=1) / np.sqrt(draws)
        assert abs(values.mean() - mean) < 4 * se


def test_sp_at_3_over_57_subsets_lies_on_the_1_over_171_grid() -> None:
    """57 MMLU subjects: each SP@3 is 0, 1/3, 2/3 or 1, so the mean is a multiple of 1/171."""
    rng = np.random.default_rng(57)
    n_models, per = 14, 20
    subsets = np.repeat(np.arange(57), per)
    acc = np.linspace(0.9, 0.4, n_models)
    answers = simulate_answers(rng, acc, 57 * per)
    quality = rng.normal(size=answers.shape) + acc[:, None]
    rr = reasoner_rank(answers, quality, subsets=subsets)
    target = np.arange(n_models)  # accuracy order
    values = [set_precision_at_k(rr.subset_orders[s], target, k=3) for s in range(57)]
    grid = np.mean(values) * 171
    assert abs(grid - round(grid)) < 1e-9


def test_ordering_breaks_ties_by_priority() -> None:
    assert ordering([1.0, 2.0, 2.0]).tolist() == [1, 2, 0]
    assert ordering([1.0, 2.0, 2.0], tie_order=[2, 1, 0]).tolist() == [2, 1, 0]
    with pytest.raises(InvalidParameterError, match="twice"):
        ordering([1.0, 2.0], tie_order=[0, 0])
    with pytest.raises(InvalidParameterError, match="permutation"):
        ordering([1.0, 2.0], tie_order=[0, 2])


def test_ranking_agreement_bundles_every_metric() -> None:
    r = ranking_agreement([4, 3, 2, 1, 0], [4, 3, 2, 0, 1], p=0.9, k=3)
    assert r.sp_at_k == 1.0
    assert r.kendall == pytest.approx(0.8)
    assert r.spearman == pytest.approx(0.9)
    constant = ranking_agreement([1, 1, 1], [1, 2, 3])
    assert constant.kendall is None
    assert constant.rbo == pytest.approx((0 + 0.5 + 1) / 3)  # ties broken by index


def test_metric_inputs_are_checked() -> None:
    with pytest.raises(ShapeError, match="same length"):
        average_overlap([0, 1], [0, 1, 2])
    with pytest.raises(InvalidParameterError, match="twice"):
        average_overlap([0, 0], [0, 1])
    with pytest.raises(InvalidParameterError, match="p must be"):
        rbo_weighted([0, 1], [1, 0], p=1.0)
    with pytest.raises(InvalidParameterError, match="k must be"):
        set_precision_at_k([0, 1], [1, 0], k=3)


# ---------------------------------------------------------------------------
# golden cases worked by hand (tests/ranking/data/reasoner_rank_*.json)
# ---------------------------------------------------------------------------

GOLDEN = sorted((Path(__file__).parent / "data").glob("reasoner_rank_*.json"))


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_cases(path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    assert case["desc"]
    r = reasoner_rank(case["answers"], case["quality"], subsets=case["subsets"], k=case["k"])
    exp = case["expected"]
    np.testing.assert_array_equal(r.subset_initial_orders, exp["subset_initial_orders"])
    np.testing.assert_array_equal(r.consensus, exp["consensus"])
    np.testing.assert_allclose(r.subset_scores, exp["subset_scores"], atol=1e-15)
    np.testing.assert_array_equal(r.subset_orders, exp["subset_orders"])
    np.testing.assert_allclose(r.scores, exp["scores"], atol=1e-15)
    np.testing.assert_array_equal(r.initial_order, exp["initial_order"])
    np.testing.assert_array_equal(r.order, exp["order"])
