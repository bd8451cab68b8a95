"""Tests for ranking.eip (Empirical Interaction Propagation).

Where each expected number comes from is said in the test: a case worked by
hand (arithmetic in the comments), the golden JSON files
``tests/ranking/data/eip_*.json`` (each with a ``desc``), the slow reference
implementation below (explicit loops over the paper's eqs. 2-5), the paper's
sec. 4 case study (Table 6 ground-truth order), or SOURCE.md of a real data set.
"""

from __future__ import annotations

import csv
import importlib
import json
import math
import multiprocessing
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ranking import (
    ConvergenceError,
    DegenerateDataError,
    EIPResult,
    InvalidParameterError,
    RankingInputError,
    ShapeError,
    accuracy,
    eip,
    kendall_tau,
    spearman_rho,
)

eip_module = importlib.import_module("ranking.eip")
DATA = Path(__file__).parent / "data"


# ---------------------------------------------------------------------------
# Slow, obvious reference implementation (loops, no numpy linear algebra)
# ---------------------------------------------------------------------------


def reference_eip(
    A: Any, *, alpha: float = 0.85, tol: float = 1e-10, max_iter: int = 1000
) -> dict[str, Any]:
    """EIP written straight from the paper with Python loops.

    Success weight of (q, m) is A[q][m], failure weight 1 - A[q][m]; a missing
    entry (NaN) has both weights 0. Questions with no success or no failure
    mass are excluded. P_Q->M = diag(S)^-1 A and P_M->Q = diag(F)^-1 Â over
    the retained questions (eqs. 4-5); eqs. 2-3 alternate from uniform
    starts until the L1 change is below tol.
    """
    rows = [[float(v) for v in row] for row in np.asarray(A, dtype=float)]
    n_q, n_m = len(rows), len(rows[0])
    succ = [[0.0 if math.isnan(v) else v for v in row] for row in rows]
    fail = [[0.0 if math.isnan(v) else 1.0 - v for v in row] for row in rows]
    S = [sum(r) for r in succ]
    R = [sum(r) for r in fail]
    kept = [q for q in range(n_q) if S[q] > 0 and R[q] > 0]
    F = [sum(fail[q][m] for q in kept) for m in range(n_m)]
    p_qm = {q: [succ[q][m] / S[q] for m in range(n_m)] for q in kept}
    p_mq = [{q: fail[q][m] / F[m] for q in kept} for m in range(n_m)]
    pi_q = {q: 1.0 / len(kept) for q in kept}
    pi_m = [1.0 / n_m] * n_m
    deltas = []
    for _ in range(max_iter):
        new_q = {}
        for q in kept:
            total = 0.0
            for m in range(n_m):
                total += p_mq[m][q] * pi_m[m]
            new_q[q] = alpha * total + (1 - alpha) / len(kept)
        new_m = []
        for m in range(n_m):
            total = 0.0
            for q in kept:
                total += p_qm[q][m] * new_q[q]
            new_m.append(alpha * total + (1 - alpha) / n_m)
        delta = sum(abs(new_q[q] - pi_q[q]) for q in kept)
        delta += sum(abs(new_m[m] - pi_m[m]) for m in range(n_m))
        pi_q, pi_m = new_q, new_m
        deltas.append(delta)
        if delta < tol:
            break
    else:
        raise AssertionError("reference EIP did not converge")
    difficulty = []
    for q in range(n_q):
        if q in pi_q:
            difficulty.append(pi_q[q])
        else:
            difficulty.append(1.0 if S[q] <= 0 else 0.0)
    return {
        "difficulty": np.array(difficulty),
        "competency": np.array(pi_m),
        "deltas": np.array(deltas),
        "iterations": len(deltas),
    }


def transition_matrices(A: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P_Q->M (Q_r x M), P_M->Q (M x Q_r) and the retained mask, vectorised."""
    x = np.asarray(A, dtype=float)
    obs = ~np.isnan(x)
    succ = np.where(obs, x, 0.0)
    fail = np.where(obs, 1.0 - x, 0.0)
    keep = (succ.sum(1) > 0) & (fail.sum(1) > 0)
    s, f = succ[keep], fail[keep]
    p_qm = s / s.sum(1, keepdims=True)
    p_mq = (f / f.sum(0, keepdims=True)).T
    return p_qm, p_mq, keep


def random_responses(
    rng: np.random.Generator,
    n_q: int,
    n_m: int,
    *,
    continuous: bool = False,
    missing: float = 0.0,
) -> np.ndarray:
    """Rasch-like random responses with every model failing something."""
    theta = rng.normal(0, 1, n_m)
    b = rng.normal(0, 1.2, n_q)
    p = 1 / (1 + np.exp(b[:, None] - theta[None, :]))
    x = rng.random((n_q, n_m)) if continuous else (rng.random((n_q, n_m)) < p).astype(float)
    if continuous:
        x = np.round(x * p, 3)
    if missing:
        x[rng.random((n_q, n_m)) < missing] = np.nan
    return x


# ---------------------------------------------------------------------------
# Hand-worked case and golden files
# ---------------------------------------------------------------------------


def test_hand_worked_example() -> None:
    """3 questions x 2 models at alpha = 1/2, solved by hand.

    A = [[1, 0], [1, 0], [0, 1]]: q0, q1 solved by m0 and failed by m1; q2
    the other way round. S(q) = 1 for all q; F(m0) = 1 (q2), F(m1) = 2.
    P_Q->M: q0 -> m0, q1 -> m0, q2 -> m1 (probability 1 each).
    P_M->Q: m0 -> q2 (1); m1 -> q0 (1/2), q1 (1/2).

    Eq. 2: pi_q0 = pi_q1 = a/2 * pi_m1 + (1-a)/3, pi_q2 = a * pi_m0 + (1-a)/3.
    Eq. 3: pi_m0 = a (pi_q0 + pi_q1) + (1-a)/2, pi_m1 = a pi_q2 + (1-a)/2.
    With a = 1/2 and x = pi_m0, 1 - x = pi_m1:
      pi_q0 = (1-x)/4 + 1/6, x = (1-x)/4 + 1/6 + 1/4  =>  5x/4 = 2/3  =>  x = 8/15.
      pi_q0 = 7/60 + 10/60 = 17/60, pi_q2 = 4/15 + 1/6 = 26/60.
    First iteration from uniform (pi_M = 1/2, pi_Q = 1/3):
      pi_Q = (1/8 + 1/6, 1/8 + 1/6, 1/4 + 1/6) = (7, 7, 10)/24
      pi_M = (1/2 * 14/24 + 1/4, 1/2 * 10/24 + 1/4) = (13, 11)/24
      Delta = 2 * |7/24 - 8/24| + |10/24 - 8/24| + 2 * |13/24 - 12/24| = 6/24.
    """
    res = eip([[1, 0], [1, 0], [0, 1]], alpha=0.5)
    np.testing.assert_allclose(res.difficulty, [17 / 60, 17 / 60, 26 / 60], atol=1e-10)
    np.testing.assert_allclose(res.competency, [8 / 15, 7 / 15], atol=1e-10)
    assert res.deltas[0] == pytest.approx(6 / 24, abs=1e-15)
    assert res.iterations == res.deltas.size
    assert res.deltas[-1] < 1e-10 <= res.deltas[-2]


GOLDEN = sorted(DATA.glob("eip_*.json"))


@pytest.mark.parametrize("path", [p for p in GOLDEN if "case_study" not in p.name], ids=str)
def test_golden_cases(path: Path) -> None:
    """Each file's ``desc`` says where its expected values come from (hand arithmetic)."""
    case = json.loads(path.read_text())
    A = np.array([[np.nan if v is None else v for v in row] for row in case["A"]], dtype=float)
    res = eip(A, alpha=case["alpha"])
    for key, expected in case["expected"].items():
        if key == "first_delta":
            assert res.deltas[0] == pytest.approx(expected, abs=1e-12), case["desc"]
        elif isinstance(expected, list):
            np.testing.assert_allclose(
                np.asarray(getattr(res, key), dtype=float), expected, atol=1e-9, err_msg=path.name
            )
        else:
            assert getattr(res, key) == expected, (key, case["desc"])


# ---------------------------------------------------------------------------
# Agreement with the reference implementation and with eqs. 2-3
# ---------------------------------------------------------------------------

REFERENCE_CASES = [
    ("binary", dict(continuous=False, missing=0.0)),
    ("binary-missing", dict(continuous=False, missing=0.15)),
    ("continuous", dict(continuous=True, missing=0.0)),
    ("continuous-missing", dict(continuous=True, missing=0.1)),
]


@pytest.mark.parametrize(("kind", "opts"), REFERENCE_CASES, ids=[c[0] for c in REFERENCE_CASES])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha", [0.5, 0.85, 0.99])
def test_matches_reference_implementation(
    kind: str, opts: dict[str, Any], seed: int, alpha: float
) -> None:
    """The vectorised fit equals the loop reference: same iterations, deltas and scores."""
    rng = np.random.default_rng(seed)
    A = random_responses(rng, 40, 6, **opts)
    try:
        ref = reference_eip(A, alpha=alpha)
    except ZeroDivisionError:  # a model with F(m) = 0: eip must refuse it
        with pytest.raises(DegenerateDataError):
            eip(A, alpha=alpha)
        return
    res = eip(A, alpha=alpha)
    assert res.iterations == ref["iterations"]
    np.testing.assert_allclose(res.deltas, ref["deltas"], rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(res.difficulty, ref["difficulty"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(res.competency, ref["competency"], rtol=1e-12, atol=1e-15)
    assert res.continuous == opts["continuous"]


@pytest.mark.parametrize("seed", range(5))
def test_fixed_point_satisfies_equations_2_and_3(seed: int) -> None:
    """At convergence pi_Q and pi_M satisfy eqs. 2-3 (eqs. 6-7 of App. C) to 1e-10 in L1."""
    rng = np.random.default_rng(seed)
    A = random_responses(rng, 200, 9, missing=0.05 * seed)
    res = eip(A)
    p_qm, p_mq, keep = transition_matrices(A)
    pi_q, pi_m = res.difficulty[keep], res.competency
    a = res.alpha
    eq2 = a * p_mq.T @ pi_m + (1 - a) / keep.sum()
    eq3 = a * p_qm.T @ pi_q + (1 - a) / pi_m.size
    assert np.abs(pi_q - eq2).sum() < 1e-10
    assert np.abs(pi_m - eq3).sum() < 1e-10
    np.testing.assert_allclose(pi_q.sum(), 1.0, atol=1e-12)
    np.testing.assert_allclose(pi_m.sum(), 1.0, atol=1e-12)
    assert np.all(pi_q > 0)
    assert np.all(pi_m > 0)


def test_deltas_shrink_geometrically() -> None:
    """App. C: the L1 change shrinks at least by alpha**2 per iteration.

    ||dpi_Q(t+1)|| <= a ||dpi_M(t)|| and ||dpi_M(t+1)|| <= a ||dpi_Q(t+1)||
    (row-stochastic transitions are L1 non-expansive), which gives
    Delta(t+1) <= a**2 Delta(t) for t >= 2 (the uniform start is not itself an update).
    """
    rng = np.random.default_rng(3)
    A = random_responses(rng, 300, 12)
    for alpha in (0.3, 0.85, 0.95):
        d = eip(A, alpha=alpha).deltas[1:]  # the bound needs both iterates computed (t >= 2)
        big = d[:-1] > 1e-13
        assert np.all(d[1:][big] <= alpha**2 * d[:-1][big] * (1 + 1e-9) + 1e-16)


# ---------------------------------------------------------------------------
# Invariance to relabelling (hypothesis)
# ---------------------------------------------------------------------------

binary_matrices = hnp.arrays(
    dtype=np.uint8,
    shape=st.tuples(st.integers(2, 15), st.integers(2, 6)),
    elements=st.integers(0, 1),
)


def _fit_or_none(A: np.ndarray) -> EIPResult | None:
    try:
        return eip(A)
    except DegenerateDataError:
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(A=binary_matrices, data=st.data())
def test_invariant_to_permuting_questions_and_models(A: np.ndarray, data: st.DataObject) -> None:
    """Relabelling questions and models permutes the scores and changes nothing else."""
    res = _fit_or_none(A)
    assume(res is not None)
    assert res is not None
    rows = np.array(data.draw(st.permutations(range(A.shape[0]))))
    cols = np.array(data.draw(st.permutations(range(A.shape[1]))))
    perm = eip(A[rows][:, cols])
    np.testing.assert_allclose(perm.difficulty, res.difficulty[rows], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(perm.competency, res.competency[cols], rtol=1e-9, atol=1e-14)
    np.testing.assert_array_equal(perm.solved_by_all, res.solved_by_all[rows])
    np.testing.assert_array_equal(perm.solved_by_none, res.solved_by_none[rows])
    assert abs(perm.iterations - res.iterations) <= 1


@settings(max_examples=100, deadline=None)
@given(A=binary_matrices)
def test_scores_are_distributions(A: np.ndarray) -> None:
    """pi_Q (retained) and pi_M are positive and sum to 1; excluded get 0 / 1; 0-100 scales."""
    res = _fit_or_none(A)
    assume(res is not None)
    assert res is not None
    kept = res.retained
    np.testing.assert_allclose(res.difficulty[kept].sum(), 1.0, atol=1e-12)
    np.testing.assert_allclose(res.competency.sum(), 1.0, atol=1e-12)
    assert np.all(res.difficulty[kept] > 0)
    assert np.all(res.difficulty[res.solved_by_all] == 0.0)
    assert np.all(res.difficulty[res.solved_by_none] == 1.0)
    assert np.all(res.difficulty_100[res.solved_by_none] == 100.0)
    assert np.all(res.difficulty_100[res.solved_by_all] == 0.0)
    assert res.difficulty_100.max() == 100.0
    assert res.competency_100.max() == 100.0
    assert np.all((res.difficulty_100 >= 0) & (res.difficulty_100 <= 100))
    s = A.sum(axis=1)
    np.testing.assert_array_equal(res.solved_by_all, s == A.shape[1])
    np.testing.assert_array_equal(res.solved_by_none, s == 0)


# ---------------------------------------------------------------------------
# Case study (paper sec. 4, Table 6)
# ---------------------------------------------------------------------------


def case_study_matrix() -> tuple[np.ndarray, dict[str, Any]]:
    case = json.loads((DATA / "eip_case_study_table6.json").read_text())
    tiers = case["tiers"]
    A = np.zeros((sum(tiers), len(case["models"])), dtype=np.uint8)
    for j, counts in enumerate(case["solved"]):
        offset = 0
        for size, k in zip(tiers, counts, strict=True):
            A[offset : offset + k, j] = 1  # a prefix of each tier: nested solved sets
            offset += size
    return A, case


def test_case_study_table6_order() -> None:
    """Paper sec. 4: EIP at the defaults recovers the ground truth M1 > M2 > M4 > M5 > M3.

    Expected order and accuracies from Table 6 (``eip_case_study_table6.json``).
    """
    A, case = case_study_matrix()
    res = eip(A, alpha=case["alpha"])
    order = [case["models"][j] for j in np.argsort(-res.competency)]
    ours = dict(zip(case["models"], res.competency_100.round(2).tolist(), strict=True))
    print("case study competency_100:", ours)
    print(
        "paper Table 6 EIP score:  ",
        dict(zip(case["models"], case["paper_eip_score"], strict=True)),
    )
    assert order == case["expected_order"]
    np.testing.assert_allclose(100 * accuracy(A), case["expected_accuracy_percent"])
    # accuracy alone cannot separate M1/M2 or M4/M5 (Table 6, "Accuracy" column)
    acc = accuracy(A)
    assert acc[0] == acc[1]
    assert acc[3] == acc[4]
    # the loop reference agrees
    ref = reference_eip(A, alpha=case["alpha"])
    np.testing.assert_allclose(res.competency, ref["competency"], rtol=1e-12)


def test_case_study_hard_questions_solved_by_none_are_hardest() -> None:
    """Nested tiers: hard 5-8 are solved by no model, easy 0-45 by all (Table 6 counts)."""
    A, _ = case_study_matrix()
    res = eip(A)
    assert res.solved_by_all.sum() == 46 + 10  # easy 0..45 and medium 0..9 solved by all five
    assert res.solved_by_none.sum() == 9 - 5 + 21 - 15  # hard 5..8, medium 15..20
    assert np.all(res.difficulty_100[res.solved_by_none] == 100)


# ---------------------------------------------------------------------------
# Compact input, blocked path, continuous scores and missing entries
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int64, np.float32, np.float64])
def test_dtypes_agree(dtype: Any) -> None:
    """A bool/integer matrix gives exactly the float64 result."""
    rng = np.random.default_rng(5)
    A = random_responses(rng, 300, 10)
    ref = eip(A)
    res = eip(A.astype(dtype))
    np.testing.assert_allclose(res.difficulty, ref.difficulty, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(res.competency, ref.competency, rtol=1e-13)
    assert res.iterations == ref.iterations


@pytest.fixture
def blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force the streaming path with tiny blocks."""
    monkeypatch.setattr(eip_module, "_CACHE_BYTES", 0)
    monkeypatch.setattr(eip_module, "_BLOCK_ELEMENTS", 97)


@pytest.mark.parametrize(("kind", "opts"), REFERENCE_CASES, ids=[c[0] for c in REFERENCE_CASES])
def test_blocked_path_matches_dense_path(
    kind: str, opts: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streaming row blocks (used for large matrices) gives the in-memory result."""
    rng = np.random.default_rng(11)
    A = random_responses(rng, 123, 7, **opts)
    dense = eip(A)
    monkeypatch.setattr(eip_module, "_CACHE_BYTES", 0)
    monkeypatch.setattr(eip_module, "_BLOCK_ELEMENTS", 97)
    for X in (A, A.astype(np.uint8) if kind == "binary" else A):
        res = eip(X)
        assert res.iterations == dense.iterations
        np.testing.assert_allclose(res.difficulty, dense.difficulty, rtol=1e-12, atol=1e-16)
        np.testing.assert_allclose(res.competency, dense.competency, rtol=1e-12)
        np.testing.assert_allclose(res.deltas, dense.deltas, rtol=1e-8, atol=1e-14)
        assert res.n_missing == dense.n_missing


@pytest.mark.parametrize("path", ["dense", "blocked"])
def test_non_contiguous_input(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fortran-ordered and strided views give the C-contiguous result."""
    if path == "blocked":
        monkeypatch.setattr(eip_module, "_CACHE_BYTES", 0)
        monkeypatch.setattr(eip_module, "_BLOCK_ELEMENTS", 64)
    rng = np.random.default_rng(12)
    wide = random_responses(rng, 150, 16).astype(np.uint8)
    view = wide[::2, ::2]
    ref = eip(np.ascontiguousarray(view))
    for X in (view, np.asfortranarray(view)):
        res = eip(X)
        np.testing.assert_allclose(res.competency, ref.competency, rtol=1e-13)
        np.testing.assert_allclose(res.difficulty, ref.difficulty, rtol=1e-13, atol=1e-17)


@pytest.mark.usefixtures("blocked")
def test_blocked_path_errors_name_the_row() -> None:
    A = np.zeros((50, 4), dtype=np.int16)
    A[37, 2] = 3
    with pytest.raises(InvalidParameterError, match=r"A\[37, 2\]"):
        eip(A)


def test_bool_matrix_is_never_upcast_whole() -> None:
    """A bool matrix too large to cache is bit-packed, never converted to float64.

    20,000 x 500 as float64 would be 80 MB; EIP's own allocations (1.25 MB of packed
    bits and per-task buffers) stay far below.
    """
    rng = np.random.default_rng(0)
    A = rng.random((20_000, 500)) < rng.uniform(0.2, 0.8, 500)
    tracemalloc.start()
    try:
        res = eip(A)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20e6, peak
    assert A.size * 8 > eip_module._CACHE_BYTES
    assert res.iterations > 0


def test_continuous_detection_and_flag() -> None:
    """continuous=None detects partial credit; False refuses it; True accepts binary data."""
    rng = np.random.default_rng(2)
    binary = random_responses(rng, 50, 5)
    cont = random_responses(rng, 50, 5, continuous=True)
    assert eip(binary).continuous is False
    assert eip(cont).continuous is True
    with pytest.raises(InvalidParameterError, match="continuous=False"):
        eip(cont, continuous=False)
    forced = eip(binary, continuous=True)
    assert forced.continuous is True
    np.testing.assert_allclose(forced.competency, eip(binary).competency, rtol=1e-14)


def test_missing_entry_is_neither_success_nor_failure() -> None:
    """A NaN gives a different fit from both 0 and 1, and equals the reference rule."""
    rng = np.random.default_rng(8)
    A = random_responses(rng, 60, 6)
    s = A.sum(axis=1)
    q = int(np.flatnonzero((s >= 2) & (s <= A.shape[1] - 3))[0])  # stays retained either way
    x = A.copy()
    x[q, 2] = np.nan
    fits = {}
    for label, v in (("nan", np.nan), ("zero", 0.0), ("one", 1.0)):
        y = A.copy()
        y[q, 2] = v
        fits[label] = eip(y)
    assert fits["nan"].n_missing == 1
    assert not np.allclose(fits["nan"].competency, fits["zero"].competency, rtol=1e-6)
    assert not np.allclose(fits["nan"].competency, fits["one"].competency, rtol=1e-6)
    ref = reference_eip(x)
    np.testing.assert_allclose(fits["nan"].competency, ref["competency"], rtol=1e-12)


def test_missing_model_answer_removes_only_its_edges() -> None:
    """A model missing on every question except those it solves never passes mass to them.

    Here model 2 answered only question 0 (solved). Its failure total F(2) counts nothing,
    so the fit must refuse (F(m) = 0) rather than divide by zero.
    """
    A = np.array([[1, 0, 1], [0, 1, np.nan], [1, 0, np.nan]])
    with pytest.raises(DegenerateDataError, match="model 2 fails none"):
        eip(A)


# ---------------------------------------------------------------------------
# Malformed input and parameters
# ---------------------------------------------------------------------------


@st.composite
def malformed(draw: st.DrawFn) -> tuple[Any, type[Exception]]:
    """Malformed response matrices and the named error each must raise."""
    q = draw(st.integers(2, 8))
    m = draw(st.integers(2, 5))
    good = draw(hnp.arrays(np.float64, (q, m), elements=st.sampled_from([0.0, 1.0])))
    good[0, 0], good[0, 1 % m] = 1.0, 0.0  # keep at least one informative row
    kind = draw(
        st.sampled_from(
            [
                "1d",
                "3d",
                "empty-q",
                "empty-m",
                "one-model",
                "above-1",
                "below-0",
                "inf",
                "int-2",
                "all-solved",
                "none-solved",
                "nan-row",
                "nan-col",
                "strings",
                "ragged",
            ]
        )
    )
    i = draw(st.integers(0, q - 1))
    j = draw(st.integers(0, m - 1))
    if kind == "1d":
        return good[0], ShapeError
    if kind == "3d":
        return good[None], ShapeError
    if kind == "empty-q":
        return np.zeros((0, m)), DegenerateDataError
    if kind == "empty-m":
        return np.zeros((q, 0)), DegenerateDataError
    if kind == "one-model":
        return good[:, :1], DegenerateDataError
    if kind == "above-1":
        good[i, j] = draw(st.floats(1.0001, 1e6))
        return good, InvalidParameterError
    if kind == "below-0":
        good[i, j] = draw(st.floats(-1e6, -1e-9))
        return good, InvalidParameterError
    if kind == "inf":
        good[i, j] = draw(st.sampled_from([np.inf, -np.inf]))
        return good, InvalidParameterError
    if kind == "int-2":
        ints = good.astype(np.int64)
        ints[i, j] = draw(st.sampled_from([2, -1, 255]))
        return ints, InvalidParameterError
    if kind == "all-solved":
        return np.ones((q, m), dtype=np.uint8), DegenerateDataError
    if kind == "none-solved":
        return np.zeros((q, m), dtype=bool), DegenerateDataError
    if kind == "nan-row":
        good[i, :] = np.nan
        return good, DegenerateDataError
    if kind == "nan-col":
        good[:, j] = np.nan
        return good, DegenerateDataError
    if kind == "strings":
        return good.astype(str), InvalidParameterError
    return [[1, 0], [1]], ShapeError


@settings(max_examples=200, deadline=None)
@given(case=malformed())
def test_malformed_input_raises_named_error(case: tuple[Any, type[Exception]]) -> None:
    """Malformed matrices raise the named error, never return NaN."""
    A, error = case
    with pytest.raises(error):
        eip(A)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"alpha": 0.0},
        {"alpha": -0.1},
        {"alpha": 1.5},
        {"alpha": float("nan")},
        {"tol": 0.0},
        {"tol": -1e-9},
        {"tol": float("inf")},
        {"max_iter": 0},
        {"max_iter": 2.5},
        {"max_iter": True},
        {"continuous": "yes"},
    ],
)
def test_invalid_parameters_raise(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidParameterError):
        eip([[1, 0], [0, 1], [1, 1]], **kwargs)


def test_errors_are_value_errors() -> None:
    """Named errors subclass RankingInputError / ValueError (ranking/errors.py)."""
    with pytest.raises(RankingInputError):
        eip(np.ones((3, 3)))
    with pytest.raises(ValueError, match="at least two models"):
        eip(np.ones((3, 1)))


def test_model_failing_no_retained_question_raises() -> None:
    """F(m) = 0 leaves P_M->Q undefined (sec. 2.3); refuse with the model's index."""
    A = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1]])
    with pytest.raises(DegenerateDataError, match="model 0 fails none"):
        eip(A)


def test_non_convergence_raises_with_record() -> None:
    rng = np.random.default_rng(4)
    A = random_responses(rng, 100, 8)
    with pytest.raises(ConvergenceError) as info:
        eip(A, max_iter=2)
    assert info.value.iterations == 2
    assert info.value.tol == 1e-10
    assert "did not converge" in str(info.value)


def test_result_records_settings_and_is_frozen() -> None:
    res = eip([[1, 0], [0, 1], [1, 1], [0, 0]], alpha=0.7, tol=1e-12, max_iter=50)
    assert (res.alpha, res.tol, res.max_iter, res.continuous, res.n_missing) == (
        0.7,
        1e-12,
        50,
        False,
        0,
    )
    assert res.deltas.shape == (res.iterations,)
    with pytest.raises(AttributeError):
        res.iterations = 3  # type: ignore[misc]


def test_alpha_one_is_allowed() -> None:
    """Table 14 uses alpha = 1.00 as reference; the alternating update converges here."""
    rng = np.random.default_rng(6)
    A = random_responses(rng, 400, 10)
    res = eip(A, alpha=1.0, max_iter=10_000)
    assert res.deltas[-1] < 1e-10


# ---------------------------------------------------------------------------
# Real data (../shared/data; skipped when absent)
# ---------------------------------------------------------------------------


def _read_matrix(path: Path) -> tuple[np.ndarray, list[str]]:
    with path.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [[float(v) for v in row[1:]] for row in reader]
    return np.array(rows), header[1:]


@pytest.mark.shared_data
def test_chembench_real_matrix(shared_data: Path) -> None:
    """ChemBench, 2,854 questions x 22 models (SOURCE.md: 134 solved by none, none by all).

    No published EIP values exist for this matrix; we check the exclusion counts given in
    SOURCE.md, agreement with the loop reference, and report the rank correlation of
    competency with accuracy (observed here: Kendall tau 0.48, Spearman 0.67; the paper's
    own 30-model benchmark gives tau = 0.876, Table 11). Several older models that fail
    most questions but solve some that strong models miss (Claude-2, Llama-2-70B) move up
    under EIP, which lowers the correlation.
    """
    A, names = _read_matrix(shared_data / "chembench_llm_binary" / "binary_matrix.csv")
    assert A.shape == (2854, 22)
    res = eip(A.astype(np.uint8))
    assert res.solved_by_none.sum() == 134
    assert res.solved_by_all.sum() == 0
    acc = accuracy(A)
    tau, rho = kendall_tau(res.competency, acc), spearman_rho(res.competency, acc)
    print(f"ChemBench: iterations={res.iterations} tau={tau:.4f} rho={rho:.4f}")
    assert tau > 0.3
    assert rho > 0.5
    ref = reference_eip(A)
    np.testing.assert_allclose(res.competency, ref["competency"], rtol=1e-11)
    np.testing.assert_allclose(res.difficulty, ref["difficulty"], rtol=1e-11, atol=1e-16)
    best = names[int(np.argmax(res.competency))]
    assert best in {"o1", "Claude-3.5 (Sonnet)"}  # the two most accurate models (SOURCE.md)


@pytest.mark.shared_data
def test_metabench_gsm8k_real_matrix(shared_data: Path) -> None:
    """metabench GSM8K: 5,041 models x 249 items, transposed to (questions, models).

    SOURCE.md gives no EIP reference; we report the rank correlation of competency with
    accuracy over 5,041 models (observed here: Kendall tau 0.84, Spearman 0.96) and with the
    shipped mirt 2PL abilities theta. Those are EAP-sum scores, a monotone function of the
    number correct, so their rank correlation with competency equals accuracy's (up to ties).
    """
    A, _ = _read_matrix(shared_data / "metabench_openllm_2pl" / "gsm8k_responses.csv")
    A = A.T
    assert A.shape == (249, 5041)
    np.testing.assert_allclose(A.mean(), 0.382, atol=5e-4)  # SOURCE.md: mean correctness 0.382
    res = eip(A.astype(bool))
    acc = accuracy(A)
    tau, rho = kendall_tau(res.competency, acc), spearman_rho(res.competency, acc)
    theta_rows = list(
        csv.DictReader(
            (shared_data / "metabench_openllm_2pl" / "gsm8k_mirt_theta_train.csv").open()
        )
    )
    theta = np.array([float(r["theta"]) for r in theta_rows])
    rho_theta = spearman_rho(res.competency, theta)
    print(
        f"GSM8K: iterations={res.iterations} tau(acc)={tau:.4f} rho(acc)={rho:.4f} "
        f"rho(2PL theta)={rho_theta:.4f}"
    )
    assert tau > 0.7
    assert rho > 0.9
    assert rho_theta > 0.9


# ---------------------------------------------------------------------------
# Bit-packed and threaded paths for large matrices
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize(
    ("n_q", "n_m", "dtype", "layout"),
    [
        (3_001, 40, np.uint8, "C"),  # 64-bit word sums (models a multiple of 8)
        (3_001, 40, np.bool_, "C"),
        (2_500, 37, np.uint8, "C"),  # partial last byte: gather/histogram setup
        (2_500, 24, np.int16, "C"),
        (2_000, 32, np.uint8, "F"),  # non-contiguous rows
    ],
)
def test_packed_path_matches_dense_path(
    n_q: int, n_m: int, dtype: Any, layout: str, processes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0/1 input too large to cache is bit-packed (and split between forked workers).

    The thresholds are lowered so that a few-thousand-row matrix is packed, handed to
    worker processes and cut into many tasks, and a few rows solved by all / by none
    are planted so that the exclusion bookkeeping inside the tasks is exercised.
    """
    rng = np.random.default_rng(n_q + n_m)
    A = random_responses(rng, n_q, n_m)
    A[7] = 1.0
    A[1_000] = 0.0
    A[-1] = 1.0
    dense = eip(A)
    monkeypatch.setattr(eip_module, "_CACHE_BYTES", 0)
    monkeypatch.setattr(eip_module, "_PACKED_ROWS", 257)
    monkeypatch.setattr(eip_module, "_PACK_ROWS", 100)
    monkeypatch.setattr(eip_module, "_PROCESS_MIN_ELEMENTS", 0)
    X = A.astype(dtype)
    if layout == "F":
        X = np.asfortranarray(X)
    res = eip(X, n_jobs=processes)
    assert res.iterations == dense.iterations
    np.testing.assert_allclose(res.difficulty, dense.difficulty, rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(res.competency, dense.competency, rtol=1e-12)
    np.testing.assert_allclose(res.deltas, dense.deltas, rtol=1e-8, atol=1e-14)
    np.testing.assert_array_equal(res.solved_by_all, dense.solved_by_all)
    np.testing.assert_array_equal(res.solved_by_none, dense.solved_by_none)
    assert res.solved_by_all.sum() >= 2
    assert res.solved_by_none.sum() >= 1
    assert not multiprocessing.active_children()  # workers stopped


def test_packed_setup_word_sums_are_exact() -> None:
    """Row and column sums of 0/1 bytes through 64-bit words equal plain integer sums.

    600 rows and 2,080 columns: more than 255 words per row and more than 255 rows, so
    both sums cross the 255-term groups that keep the byte lanes from carrying.
    """
    rng = np.random.default_rng(3)
    raw = (rng.random((600, 2_080)) < 0.97).astype(np.uint8)
    words = eip_module._byte_words(raw)
    assert words is not None
    np.testing.assert_array_equal(eip_module._swar_row_sums(words), raw.sum(axis=1))
    np.testing.assert_array_equal(eip_module._swar_column_sums(words), raw.sum(axis=0))
    assert eip_module._byte_words(raw[:, :-3]) is None  # not whole words
    assert eip_module._byte_words(np.asfortranarray(raw)) is None


@pytest.mark.parametrize("threads", [1, 2])
def test_blocked_float_path_threads_match_dense(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Continuous scores with missing entries: threaded row blocks give the float64 fit."""
    rng = np.random.default_rng(21)
    A = random_responses(rng, 2_000, 9, continuous=True, missing=0.1)
    dense = eip(A)
    monkeypatch.setattr(eip_module, "_CACHE_BYTES", 0)
    monkeypatch.setattr(eip_module, "_BLOCK_ELEMENTS", 200)
    monkeypatch.setattr(eip_module, "_TASK_BLOCKS", 3)
    res = eip(A, n_jobs=threads)
    assert res.iterations == dense.iterations
    np.testing.assert_allclose(res.difficulty, dense.difficulty, rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(res.competency, dense.competency, rtol=1e-12)
    assert res.n_missing == dense.n_missing


@pytest.mark.parametrize("processes", [1, 2])
def test_packed_path_errors_name_the_first_bad_row(
    processes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Errors found in the packed path (in a worker or not) name the lowest bad row,
    and no worker process outlives the call."""
    monkeypatch.setattr(eip_module, "_CACHE_BYTES", 0)
    monkeypatch.setattr(eip_module, "_PACKED_ROWS", 10)
    monkeypatch.setattr(eip_module, "_PROCESS_MIN_ELEMENTS", 0)
    A = np.zeros((100, 4), dtype=np.uint8)
    A[::2, 0] = 1
    A[1::2, 1:] = 1
    bad = A.copy()
    bad[37, 2] = 3
    bad[85, 1] = 2
    with pytest.raises(InvalidParameterError, match=r"A\[37, 2\]"):
        eip(bad, n_jobs=processes)
    bad[37, 2] = 1
    with pytest.raises(InvalidParameterError, match=r"A\[85, 1\]"):  # second worker's rows
        eip(bad, n_jobs=processes)
    A[:, 3] = 1  # model 3 fails nothing: refused after the workers have packed their rows
    with pytest.raises(DegenerateDataError, match="model 3 fails none"):
        eip(A)
    assert not multiprocessing.active_children()


def test_n_jobs_defaults_to_the_cores_available_at_call_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No worker count is fixed at import: None and -1 read the CPU affinity per call."""
    assert not hasattr(eip_module, "_THREADS")
    assert not hasattr(eip_module, "_PROCESSES")
    if hasattr(eip_module.os, "sched_getaffinity"):
        monkeypatch.setattr(eip_module.os, "sched_getaffinity", lambda pid: set(range(5)))
        assert eip_module._n_workers(None) == 5
        assert eip_module._n_workers(-1) == 5
    assert eip_module._n_workers(3) == 3


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_n_jobs_is_checked(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        eip(np.eye(3, dtype=np.uint8), n_jobs=bad)  # type: ignore[arg-type]
