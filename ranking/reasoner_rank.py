"""ReasonerRank: ranking models without gold answers (Zhang et al., ACL Findings 2025).

Every model answers the same questions in a fixed structure (answer, reasoning
steps, supporting evidence, conclusion). The method scores each response by

- a **structure penalty** (sec. 3.1.1): ``P = 1[answer empty] + 1[conclusion
  empty] + max(0, 3 - steps) + max(0, 3 - evidence items)``, counting non-empty
  parts only (:func:`structure_penalty`);
- **reasoning consistency** (sec. 3.1.2, eqs. 1-2): ``C_reason``, the mean cosine
  similarity of consecutive steps, and ``C_evid``, the mean over steps of the best
  similarity with an evidence item (:func:`reasoning_consistency`,
  :func:`batch_consistency`);

then ``Q = C_reason + C_evid - P``; a model's initial score is its mean ``Q``, and
the initial ranking ``pi_0`` orders models by it. **TopK-ReRank** (sec. 3.2, eq.
3, :func:`topk_rerank`) takes the majority answer of the top K models of
``pi_0`` on each question as the consensus and scores every model by its share of
questions matching it. Everything is computed per subset of questions (a
subject, a task) and the per-subset scores are averaged (:func:`reasoner_rank`).

The baselines of sec. 4.2 are here too: the most common answer (:func:`mca`,
eq. 6) and SelfRank's greedy and full triplet ranking (:func:`selfrank_gtr`,
:func:`selfrank_ftr`; Dhurandhar et al., 2024).

Answers are integer codes, one row per model and one column per question:
equal codes in a column are the same (normalised) answer, ``-1`` is no answer.
Parsing text into answers and embedding steps belong to :mod:`annotate`.

Decisions the paper leaves open (each is documented where it applies):

- fewer than two non-empty steps: ``C_reason = 0`` (eq. 1 divides by ``n - 1``);
  no step or no evidence item: ``C_evid = 0``. The missing parts are already
  counted by the penalty, and 0 is the similarity of unrelated texts, so a
  response never gains from leaving parts out;
- a tie in a consensus vote goes to the answer of the best-ranked model of
  ``pi_0`` among the tied answers; a question on which no top-K model answered
  has no consensus and is left out of every model's share;
- ties in a final score fall back to ``pi_0`` (per subset; overall, to the
  ranking by the mean initial score), then to model index.

References
----------
Zhang, J. et al. (2025). ReasonerRank: ground-truth-free evaluation of LLMs via
reasoning consistency and TopK re-ranking. Findings of ACL 2025 (the
project's ``../shared/papers/004``), sec. 3, 4.2, App. A.1-A.2.

Dhurandhar, A., Nair, R., Singh, M., Daly, E., & Natesan Ramamurthy, K. (2024).
Ranking large language models without ground truth. Findings of ACL 2024.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ranking._validation import make_rng
from ranking.errors import (
    ConvergenceError,
    DegenerateDataError,
    InvalidParameterError,
    ShapeError,
)
from ranking.rank_metrics import ordering
from ranking.types import FloatArray, IntArray, RNGLike

__all__ = [
    "ConsistencyParts",
    "ReasonerRankResult",
    "RerankResult",
    "SubsetRankingResult",
    "agreement_matrix",
    "batch_consistency",
    "batch_consistency_from_similarity",
    "consensus_answers",
    "consistency_from_similarity",
    "default_k",
    "mca",
    "reasoner_rank",
    "reasoning_consistency",
    "selfrank_ftr",
    "selfrank_gtr",
    "structure_penalty",
    "topk_rerank",
]

_CHUNK_CELLS = 4_000_000
"""Upper bound on the K x K x questions comparisons held at once."""


# ----------------------------------------------------------------------------
# structure and consistency
# ----------------------------------------------------------------------------


def structure_penalty(
    has_answer: npt.ArrayLike,
    has_conclusion: npt.ArrayLike,
    n_steps: npt.ArrayLike,
    n_evidence: npt.ArrayLike,
    *,
    required_steps: int = 3,
    required_evidence: int = 3,
) -> FloatArray:
    """Structure penalty of sec. 3.1.1, one value per response.

    ``P = 1[no answer] + 1[no conclusion] + max(0, required_steps - n_steps)
    + max(0, required_evidence - n_evidence)``, with counts of *non-empty* parts.

    Parameters
    ----------
    has_answer, has_conclusion : array-like of bool
        Whether the response's Answer and Conclusion sections are non-empty.
    n_steps, n_evidence : array-like of int
        Non-empty reasoning steps and evidence items. All four inputs broadcast
        together.
    required_steps, required_evidence : int, default 3
        The counts the prompt asks for (three in both of the paper's templates).

    Returns
    -------
    ndarray of float
        Penalties, 0 for a complete response, at most
        ``2 + required_steps + required_evidence``.

    References
    ----------
    ReasonerRank, sec. 3.1.1.

    Examples
    --------
    >>> structure_penalty([True, False], [True, True], [3, 1], [2, 0]).tolist()
    [1.0, 6.0]
    """
    a = np.asarray(has_answer, dtype=bool)
    c = np.asarray(has_conclusion, dtype=bool)
    s = np.asarray(n_steps)
    e = np.asarray(n_evidence)
    for name, v in (("n_steps", s), ("n_evidence", e)):
        if v.size and (not np.issubdtype(v.dtype, np.integer) or v.min() < 0):
            raise InvalidParameterError(f"{name} must hold non-negative integer counts")
    for name, r in (("required_steps", required_steps), ("required_evidence", required_evidence)):
        if int(r) != r or r < 0:
            raise InvalidParameterError(f"{name} must be a non-negative integer, got {r!r}")
    out = (
        (~a).astype(np.float64)
        + (~c).astype(np.float64)
        + np.maximum(0, int(required_steps) - s)
        + np.maximum(0, int(required_evidence) - e)
    )
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class ConsistencyParts:
    """The two consistency terms of one response (eqs. 1-2)."""

    reasoning: float
    """``C_reason``: mean similarity of consecutive steps (0 with fewer than 2 steps)."""
    evidence: float
    """``C_evid``: mean over steps of the best evidence similarity (0 without steps or evidence)."""

    @property
    def total(self) -> float:
        """``C_reason + C_evid``, the part of ``Q`` before the penalty."""
        return self.reasoning + self.evidence


def consistency_from_similarity(
    step_similarity: npt.ArrayLike, evidence_similarity: npt.ArrayLike
) -> ConsistencyParts:
    """Consistency terms from similarity matrices of one response.

    Parameters
    ----------
    step_similarity : array-like of shape (n_steps, n_steps)
        ``sim(r_i, r_j)`` between the response's non-empty steps, in order; only
        the superdiagonal ``sim(r_i, r_{i+1})`` is used.
    evidence_similarity : array-like of shape (n_steps, n_evidence)
        ``sim(r_i, e_j)``.

    Returns
    -------
    ConsistencyParts
        ``C_reason = mean_i sim(r_i, r_{i+1})`` (0 when ``n_steps < 2``) and
        ``C_evid = mean_i max_j sim(r_i, e_j)`` (0 when there is no step or no
        evidence item).

    References
    ----------
    ReasonerRank, sec. 3.1.2, eqs. 1-2.

    Examples
    --------
    >>> p = consistency_from_similarity([[1, .5, 0], [.5, 1, .7], [0, .7, 1]],
    ...                                 [[.2, .9], [.4, .1], [.3, .3]])
    >>> round(p.reasoning, 4), round(p.evidence, 4)
    (0.6, 0.5333)
    """
    ss = np.asarray(step_similarity, dtype=np.float64)
    es = np.asarray(evidence_similarity, dtype=np.float64)
    if ss.ndim != 2 or ss.shape[0] != ss.shape[1]:
        raise ShapeError(f"step_similarity must be square, got shape {ss.shape}")
    if es.ndim != 2 or es.shape[0] != ss.shape[0]:
        raise ShapeError(
            f"evidence_similarity must have shape ({ss.shape[0]}, n_evidence), got {es.shape}"
        )
    if not (np.all(np.isfinite(ss)) and np.all(np.isfinite(es))):
        raise InvalidParameterError("similarities must be finite")
    n = ss.shape[0]
    c_reason = float(np.mean(np.diagonal(ss, offset=1))) if n >= 2 else 0.0
    c_evid = float(np.mean(es.max(axis=1))) if n >= 1 and es.shape[1] >= 1 else 0.0
    return ConsistencyParts(reasoning=c_reason, evidence=c_evid)


def _unit_rows(x: FloatArray) -> FloatArray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    out: FloatArray = np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)
    return out


def reasoning_consistency(
    step_vectors: npt.ArrayLike, evidence_vectors: npt.ArrayLike
) -> ConsistencyParts:
    """Consistency terms of one response from embeddings (cosine similarity, eq. 8).

    Parameters
    ----------
    step_vectors : array-like of shape (n_steps, dim)
        Embeddings of the non-empty reasoning steps, in order.
    evidence_vectors : array-like of shape (n_evidence, dim)
        Embeddings of the non-empty evidence items.

    Returns
    -------
    ConsistencyParts
        As :func:`consistency_from_similarity`; a zero vector has similarity 0
        with everything.

    References
    ----------
    ReasonerRank, sec. 3.1.2 and App. A.1.6.

    Examples
    --------
    >>> p = reasoning_consistency([[1, 0], [1, 1], [0, 1]], [[0, 1]])
    >>> round(p.reasoning, 4), round(p.evidence, 4)
    (0.7071, 0.569)
    """
    s = np.asarray(step_vectors, dtype=np.float64)
    e = np.asarray(evidence_vectors, dtype=np.float64)
    if s.ndim != 2 or e.ndim != 2:
        raise ShapeError(f"vectors must be 2-D, got shapes {s.shape} and {e.shape}")
    if s.size and e.size and s.shape[1] != e.shape[1]:
        raise ShapeError(f"steps and evidence differ in dimension: {s.shape[1]} and {e.shape[1]}")
    su = _unit_rows(s)
    eu = _unit_rows(e)
    return consistency_from_similarity(
        su @ su.T, su @ eu.T if e.shape[0] else np.zeros((s.shape[0], 0))
    )


def batch_consistency(
    steps: npt.ArrayLike,
    step_mask: npt.ArrayLike,
    evidence: npt.ArrayLike,
    evidence_mask: npt.ArrayLike,
) -> tuple[FloatArray, FloatArray]:
    """Consistency terms of many responses at once, from padded embeddings.

    Parameters
    ----------
    steps : array-like of shape (n_responses, max_steps, dim)
        Step embeddings; each response's non-empty steps first, in order,
        padding after them.
    step_mask : array-like of bool, shape (n_responses, max_steps)
        True for a real step. It must be left-aligned (no gap before a real step).
    evidence : array-like of shape (n_responses, max_evidence, dim)
        Evidence embeddings, padded the same way.
    evidence_mask : array-like of bool, shape (n_responses, max_evidence)

    Returns
    -------
    c_reason, c_evid : ndarray of shape (n_responses,)
        As :func:`reasoning_consistency` response by response.

    Examples
    --------
    >>> s = [[[1, 0], [1, 1], [0, 0]]]
    >>> cr, ce = batch_consistency(s, [[True, True, False]], [[[0, 1]]], [[True]])
    >>> round(float(cr[0]), 4), round(float(ce[0]), 4)
    (0.7071, 0.3536)
    """
    s = np.asarray(steps, dtype=np.float64)
    e = np.asarray(evidence, dtype=np.float64)
    sm = np.asarray(step_mask, dtype=bool)
    em = np.asarray(evidence_mask, dtype=bool)
    if s.ndim != 3 or e.ndim != 3 or s.shape[0] != e.shape[0] or s.shape[2] != e.shape[2]:
        raise ShapeError(
            f"steps and evidence must be (n, max_parts, dim) alike, got {s.shape} and {e.shape}"
        )
    if sm.shape != s.shape[:2] or em.shape != e.shape[:2]:
        raise ShapeError("masks must have shape (n_responses, max_parts) of their embeddings")
    if sm.shape[1] > 1 and np.any(~sm[:, :-1] & sm[:, 1:]):
        raise InvalidParameterError("step_mask must be left-aligned (real steps first)")
    su = _unit_rows(s)
    eu = _unit_rows(e)
    return batch_consistency_from_similarity(
        np.einsum("nid,njd->nij", su, su), np.einsum("nid,njd->nij", su, eu), sm, em
    )


def batch_consistency_from_similarity(
    step_similarity: npt.ArrayLike,
    evidence_similarity: npt.ArrayLike,
    step_mask: npt.ArrayLike,
    evidence_mask: npt.ArrayLike,
) -> tuple[FloatArray, FloatArray]:
    """Consistency terms of many responses at once, from padded similarity blocks.

    Parameters
    ----------
    step_similarity : array-like of shape (n_responses, max_steps, max_steps)
        ``sim(r_i, r_j)`` within each response; only ``[i, i + 1]`` is used.
    evidence_similarity : array-like of shape (n_responses, max_steps, max_evidence)
        ``sim(r_i, e_j)`` within each response.
    step_mask : array-like of bool, shape (n_responses, max_steps)
        True for a real step, left-aligned (real steps first).
    evidence_mask : array-like of bool, shape (n_responses, max_evidence)
        True for a real evidence item.

    Returns
    -------
    c_reason, c_evid : ndarray of shape (n_responses,)
        As :func:`consistency_from_similarity` response by response (0 with
        fewer than 2 steps, 0 without step or evidence).

    Examples
    --------
    >>> cr, ce = batch_consistency_from_similarity(
    ...     [[[1, .5], [.5, 1]]], [[[.2, .9], [.4, .1]]], [[True, True]], [[True, True]])
    >>> float(cr[0]), round(float(ce[0]), 4)
    (0.5, 0.65)
    """
    ss = np.asarray(step_similarity, dtype=np.float64)
    es = np.asarray(evidence_similarity, dtype=np.float64)
    sm = np.asarray(step_mask, dtype=bool)
    em = np.asarray(evidence_mask, dtype=bool)
    if ss.ndim != 3 or ss.shape[1] != ss.shape[2] or sm.shape != ss.shape[:2]:
        raise ShapeError(
            f"step_similarity must be (n, max_steps, max_steps) with a mask (n, max_steps), "
            f"got {ss.shape} and {sm.shape}"
        )
    if es.ndim != 3 or es.shape[:2] != ss.shape[:2] or em.shape != (es.shape[0], es.shape[2]):
        raise ShapeError(
            f"evidence_similarity must be (n, max_steps, max_evidence) with a mask "
            f"(n, max_evidence), got {es.shape} and {em.shape}"
        )
    if sm.shape[1] > 1 and np.any(~sm[:, :-1] & sm[:, 1:]):
        raise InvalidParameterError("step_mask must be left-aligned (real steps first)")
    n = ss.shape[0]
    n_steps = sm.sum(axis=1)
    if ss.shape[1] >= 2:
        consecutive = np.diagonal(ss, offset=1, axis1=1, axis2=2)
        pair_ok = sm[:, :-1] & sm[:, 1:]
        total = np.where(pair_ok, consecutive, 0.0).sum(axis=1)
        c_reason = np.divide(total, n_steps - 1, out=np.zeros(n), where=n_steps >= 2)
    else:
        c_reason = np.zeros(n)
    if es.shape[2] >= 1 and es.shape[1] >= 1:
        best = np.where(em[:, None, :], es, -np.inf).max(axis=2)
        has_e: npt.NDArray[np.bool_] = np.asarray(em.any(axis=1), dtype=bool)
        best = np.where(sm & has_e[:, None], best, 0.0)
        c_evid = np.divide(best.sum(axis=1), n_steps, out=np.zeros(n), where=(n_steps >= 1) & has_e)
    else:
        c_evid = np.zeros(n)
    return c_reason.astype(np.float64), c_evid.astype(np.float64)


# ----------------------------------------------------------------------------
# consensus and re-ranking
# ----------------------------------------------------------------------------


def _as_answers(answers: npt.ArrayLike) -> IntArray:
    a = np.asarray(answers)
    if a.ndim != 2:
        raise ShapeError(f"answers must be 2-D (n_models, n_questions), got {a.ndim} dimension(s)")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise InvalidParameterError(
            f"answers must hold integer answer codes (-1 for no answer), got dtype {a.dtype}"
        )
    a = a.astype(np.int64, copy=False)
    if a.size and a.min() < -1:
        raise InvalidParameterError(
            f"answer codes must be >= 0, or -1 for no answer; got {int(a.min())}"
        )
    if a.shape[0] < 1:
        raise DegenerateDataError("answers hold no model")
    return a


def default_k(n_models: int) -> int:
    """The paper's K: 4 with 10 or fewer models (GSM8K), 6 otherwise, at most n.

    Examples
    --------
    >>> default_k(10), default_k(16), default_k(3)
    (4, 6, 3)
    """
    return min(4 if n_models <= 10 else 6, int(n_models))


def consensus_answers(answers: npt.ArrayLike, voters: npt.ArrayLike) -> IntArray:
    """Majority answer of the ``voters`` on each question (eq. 3 / eq. 6).

    Parameters
    ----------
    answers : array-like of int, shape (n_models, n_questions)
        Answer codes, ``-1`` for no answer.
    voters : array-like of int, shape (n_voters,)
        Model indices that vote, in priority order (best first). A tie between
        answers goes to the answer of the earliest voter among those tied.

    Returns
    -------
    ndarray of int64, shape (n_questions,)
        The consensus code, ``-1`` where no voter answered.

    Examples
    --------
    >>> consensus_answers([[0, 1], [1, 1], [1, 0], [0, 2]], [3, 0, 1, 2]).tolist()
    [0, 1]
    """
    a = _as_answers(answers)
    v = np.asarray(voters, dtype=np.int64)
    if v.ndim != 1 or v.size < 1:
        raise ShapeError("voters must be a non-empty 1-D list of model indices")
    if v.min() < 0 or v.max() >= a.shape[0] or np.unique(v).size != v.size:
        raise InvalidParameterError(
            f"voters must be distinct model indices in [0, {a.shape[0]}), got {v.tolist()}"
        )
    top = a[v]
    k, n_q = top.shape
    out = np.full(n_q, -1, dtype=np.int64)
    step = max(1, _CHUNK_CELLS // max(1, k * k))
    for lo in range(0, n_q, step):
        t = top[:, lo : lo + step]
        valid = t >= 0
        same = (t[:, None, :] == t[None, :, :]) & valid[None, :, :]
        counts = np.where(valid, same.sum(axis=1), 0)
        winner = np.argmax(counts, axis=0)  # first maximum: the best-ranked voter
        chosen = t[winner, np.arange(t.shape[1])]
        out[lo : lo + step] = np.where(counts.max(axis=0) > 0, chosen, -1)
    return out


def _shares(a: IntArray, consensus: IntArray) -> FloatArray:
    has = consensus >= 0
    n = int(has.sum())
    if n == 0:
        return np.zeros(a.shape[0])
    match = (a[:, has] == consensus[has][None, :]).sum(axis=1)
    return np.asarray(match / n, dtype=np.float64)


@dataclass(frozen=True)
class RerankResult:
    """TopK-ReRank (or MCA) on one set of questions."""

    scores: FloatArray
    """Share of questions (with a consensus) where each model gives the consensus answer."""
    order: IntArray
    """Final ranking, best first (ties fall back to the priority order)."""
    consensus: IntArray
    """Consensus code per question, -1 where no voter answered."""
    voters: IntArray
    """Models that voted, in priority order."""
    priority: IntArray
    """The priority order (``pi_0`` for TopK-ReRank)."""


def topk_rerank(answers: npt.ArrayLike, initial_scores: npt.ArrayLike, *, k: int) -> RerankResult:
    """TopK-ReRank on one set of questions (ReasonerRank sec. 3.2, eq. 3).

    Parameters
    ----------
    answers : array-like of int, shape (n_models, n_questions)
        Answer codes, ``-1`` for no answer.
    initial_scores : array-like of shape (n_models,)
        Initial scores (mean ``Q``), higher is better; ``pi_0`` sorts by them,
        ties by model index.
    k : int
        Number of top models of ``pi_0`` whose majority answer is the consensus,
        ``1 <= k <= n_models``. ``k = n_models`` is MCA (eq. 6) with ``pi_0`` as
        its tie order.

    Returns
    -------
    RerankResult
        Scores are the share of questions with a consensus on which the model
        gives it; the order breaks score ties by ``pi_0``.

    References
    ----------
    ReasonerRank, sec. 3.2.1, eq. 3.

    Examples
    --------
    >>> r = topk_rerank([[0, 0, 1], [0, 1, 1], [1, 1, 0]], [0.9, 0.5, 0.1], k=2)
    >>> r.consensus.tolist(), r.scores.round(3).tolist(), r.order.tolist()
    ([0, 0, 1], [1.0, 0.667, 0.0], [0, 1, 2])
    """
    a = _as_answers(answers)
    s = np.asarray(initial_scores, dtype=np.float64)
    if s.shape != (a.shape[0],):
        raise ShapeError(f"initial_scores must have shape ({a.shape[0]},), got {s.shape}")
    kk = int(k)
    if kk != k or not 1 <= kk <= a.shape[0]:
        raise InvalidParameterError(f"k must be an integer in [1, {a.shape[0]}], got {k!r}")
    pi0 = ordering(s)
    consensus = consensus_answers(a, pi0[:kk])
    scores = _shares(a, consensus)
    return RerankResult(
        scores=scores,
        order=ordering(scores, tie_order=pi0),
        consensus=consensus,
        voters=pi0[:kk],
        priority=pi0,
    )


# ----------------------------------------------------------------------------
# per-subset driver and results
# ----------------------------------------------------------------------------


def _subset_index(subsets: npt.ArrayLike | None, n_q: int) -> tuple[IntArray, IntArray]:
    """(sorted labels, per-question subset position)."""
    if subsets is None:
        return np.zeros(1, dtype=np.int64), np.zeros(n_q, dtype=np.int64)
    sub = np.asarray(subsets)
    if sub.shape != (n_q,):
        raise ShapeError(f"subsets must have shape ({n_q},), got {sub.shape}")
    if sub.size and not np.issubdtype(sub.dtype, np.integer):
        raise InvalidParameterError(f"subsets must hold integer labels, got dtype {sub.dtype}")
    labels, inverse = np.unique(sub.astype(np.int64), return_inverse=True)
    return labels.astype(np.int64), inverse.astype(np.int64).ravel()


@dataclass(frozen=True)
class SubsetRankingResult:
    """A ranking computed per subset of questions, then averaged."""

    method: str
    """``"mca"``, ``"selfrank-gtr"``, ``"selfrank-ftr"`` or ``"reasonerrank"``."""
    subsets: IntArray
    """Subset labels, sorted; row s of the per-subset arrays is ``subsets[s]``."""
    subset_scores: FloatArray
    """Per-subset scores, shape (n_subsets, n_models), higher is better."""
    subset_orders: IntArray
    """Per-subset rankings, shape (n_subsets, n_models), best first."""
    scores: FloatArray
    """Mean of the per-subset scores, shape (n_models,)."""
    order: IntArray
    """Overall ranking by ``scores``, best first."""


@dataclass(frozen=True)
class ReasonerRankResult(SubsetRankingResult):
    """ReasonerRank: the initial ranking, the TopK re-ranking and their parts."""

    k: int
    """Number of top models of ``pi_0`` forming the consensus."""
    subset_initial_scores: FloatArray
    """Per-subset mean ``Q``, shape (n_subsets, n_models)."""
    subset_initial_orders: IntArray
    """Per-subset ``pi_0``, shape (n_subsets, n_models)."""
    initial_scores: FloatArray
    """Mean over subsets of the mean ``Q``, shape (n_models,)."""
    initial_order: IntArray
    """Overall initial ranking by ``initial_scores`` (ties by model index)."""
    consensus: IntArray
    """Consensus answer code per question (-1: no top-K model answered)."""


def _check_quality(quality: npt.ArrayLike, shape: tuple[int, int]) -> FloatArray:
    q = np.asarray(quality, dtype=np.float64)
    if q.shape != shape:
        raise ShapeError(f"quality must have the shape of answers {shape}, got {q.shape}")
    if not np.all(np.isfinite(q)):
        i, j = np.argwhere(~np.isfinite(q))[0]
        raise InvalidParameterError(
            f"quality[{i}, {j}] is not finite; score a missing response as an empty one"
        )
    return q


def reasoner_rank(
    answers: npt.ArrayLike,
    quality: npt.ArrayLike,
    *,
    subsets: npt.ArrayLike | None = None,
    k: int | None = None,
) -> ReasonerRankResult:
    """ReasonerRank: initial ranking by response quality, then TopK-ReRank, per subset.

    Parameters
    ----------
    answers : array-like of int, shape (n_models, n_questions)
        Normalised answer codes, ``-1`` for no answer.
    quality : array-like of shape (n_models, n_questions)
        Response quality ``Q = C_reason + C_evid - P`` of each response (a
        missing response scored as an empty one).
    subsets : array-like of int, shape (n_questions,), optional
        Subset label of each question; every subset is ranked on its own, and
        the scores are averaged over subsets. Default: one subset.
    k : int, optional
        Top models forming the consensus; default :func:`default_k` (4 with 10
        or fewer models, else 6).

    Returns
    -------
    ReasonerRankResult
        ``scores`` is the mean over subsets of the TopK-ReRank shares;
        ``order`` sorts by it with ties broken by ``initial_order`` (the
        ranking by the mean over subsets of the mean ``Q``).

    References
    ----------
    ReasonerRank, sec. 3 (eqs. 1-3) and sec. 4.3 (per-subset averaging).

    Examples
    --------
    >>> r = reasoner_rank([[0, 0, 1], [0, 1, 1], [1, 1, 0]],
    ...                   [[0.5, 0.4, 0.6], [0.1, 0.2, 0.0], [-1.0, 0.0, 0.0]], k=1)
    >>> r.initial_order.tolist(), r.order.tolist(), r.scores.round(3).tolist()
    ([0, 1, 2], [0, 1, 2], [1.0, 0.667, 0.0])
    """
    a = _as_answers(answers)
    q = _check_quality(quality, a.shape)
    n_models, n_q = a.shape
    kk = default_k(n_models) if k is None else k
    if int(kk) != kk or not 1 <= kk <= n_models:
        raise InvalidParameterError(f"k must be an integer in [1, {n_models}], got {k!r}")
    labels, pos = _subset_index(subsets, n_q)
    n_s = labels.size
    init = np.zeros((n_s, n_models))
    init_orders = np.zeros((n_s, n_models), dtype=np.int64)
    scores = np.zeros((n_s, n_models))
    orders = np.zeros((n_s, n_models), dtype=np.int64)
    consensus = np.full(n_q, -1, dtype=np.int64)
    for s in range(n_s):
        cols = np.flatnonzero(pos == s)
        if cols.size == 0:
            raise DegenerateDataError(f"subset {int(labels[s])} has no question")
        init[s] = q[:, cols].mean(axis=1)
        r = topk_rerank(a[:, cols], init[s], k=int(kk))
        init_orders[s] = r.priority
        scores[s] = r.scores
        orders[s] = r.order
        consensus[cols] = r.consensus
    mean_init = init.mean(axis=0)
    initial_order = ordering(mean_init)
    mean_scores = scores.mean(axis=0)
    return ReasonerRankResult(
        method="reasonerrank",
        subsets=labels,
        subset_scores=scores,
        subset_orders=orders,
        scores=mean_scores,
        order=ordering(mean_scores, tie_order=initial_order),
        k=int(kk),
        subset_initial_scores=init,
        subset_initial_orders=init_orders,
        initial_scores=mean_init,
        initial_order=initial_order,
        consensus=consensus,
    )


def _per_subset(
    method: str,
    a: IntArray,
    subsets: npt.ArrayLike | None,
    one: Callable[[IntArray, int], tuple[FloatArray, IntArray]],
) -> SubsetRankingResult:
    labels, pos = _subset_index(subsets, a.shape[1])
    n_s, n_models = labels.size, a.shape[0]
    scores = np.zeros((n_s, n_models))
    orders = np.zeros((n_s, n_models), dtype=np.int64)
    for s in range(n_s):
        cols = np.flatnonzero(pos == s)
        if cols.size == 0:
            raise DegenerateDataError(f"subset {int(labels[s])} has no question")
        scores[s], orders[s] = one(a[:, cols], s)
    mean_scores = scores.mean(axis=0)
    return SubsetRankingResult(
        method=method,
        subsets=labels,
        subset_scores=scores,
        subset_orders=orders,
        scores=mean_scores,
        order=ordering(mean_scores),
    )


def mca(
    answers: npt.ArrayLike,
    *,
    subsets: npt.ArrayLike | None = None,
    priority: npt.ArrayLike | None = None,
) -> SubsetRankingResult:
    """Most common answer (ReasonerRank eq. 6): agreement with the majority of all models.

    Parameters
    ----------
    answers : array-like of int, shape (n_models, n_questions)
        Answer codes, ``-1`` for no answer.
    subsets : array-like of int, shape (n_questions,), optional
        Subset labels; scored per subset and averaged.
    priority : array-like of int, shape (n_models,) or (n_subsets, n_models), optional
        Orderings (best first) that break ties in the vote and in the scores,
        one for all subsets or one per subset. Default: model index order. With
        ReasonerRank's ``subset_initial_orders`` it reproduces
        ``reasoner_rank(..., k=n_models)`` exactly.

    Returns
    -------
    SubsetRankingResult
        Scores are the shares of questions with a consensus on which each model
        gives the majority answer.

    References
    ----------
    ReasonerRank, sec. 4.2.1, eq. 6.

    Examples
    --------
    >>> mca([[0, 0, 1], [0, 1, 1], [1, 1, 0]]).scores.round(3).tolist()
    [0.667, 1.0, 0.333]
    """
    a = _as_answers(answers)
    n_models = a.shape[0]
    labels, _ = _subset_index(subsets, a.shape[1])
    if priority is None:
        pri = np.tile(np.arange(n_models, dtype=np.int64), (labels.size, 1))
    else:
        pri = np.asarray(priority, dtype=np.int64)
        if pri.ndim == 1:
            pri = np.tile(pri, (labels.size, 1))
        if pri.shape != (labels.size, n_models):
            raise ShapeError(
                f"priority must have shape ({n_models},) or ({labels.size}, {n_models}), "
                f"got {pri.shape}"
            )

    def one(sub: IntArray, s: int) -> tuple[FloatArray, IntArray]:
        consensus = consensus_answers(sub, pri[s])
        scores = _shares(sub, consensus)
        return scores, ordering(scores, tie_order=pri[s])

    return _per_subset("mca", a, subsets, one)


# ----------------------------------------------------------------------------
# SelfRank (Dhurandhar et al., 2024)
# ----------------------------------------------------------------------------


def agreement_matrix(answers: npt.ArrayLike) -> FloatArray:
    """Share of questions on which two models give the same answer.

    Parameters
    ----------
    answers : array-like of int, shape (n_models, n_questions)
        Answer codes, ``-1`` for no answer.

    Returns
    -------
    ndarray of shape (n_models, n_models)
        ``M[i, j]`` = matches / questions both answered (0 when none); the
        diagonal is 1 (0 for a model that answered nothing).

    Examples
    --------
    >>> agreement_matrix([[0, 1, 1], [0, 1, 0]]).round(3).tolist()
    [[1.0, 0.667], [0.667, 1.0]]
    """
    a = _as_answers(answers)
    n = a.shape[0]
    out = np.zeros((n, n))
    valid = a >= 0
    for i in range(n):
        both = valid[i][None, :] & valid
        same = (a[i][None, :] == a) & both
        nb = both.sum(axis=1)
        out[i] = np.divide(same.sum(axis=1), nb, out=np.zeros(n), where=nb > 0)
    return out


def _preferences(agree: FloatArray) -> FloatArray:
    """pref[c, a, b]: judge c prefers a to b (1), tie (0.5), b (0); zero when not distinct."""
    n = agree.shape[0]
    ac = agree.T  # ac[c, a] = agreement of a with judge c's answers
    pref = np.where(
        ac[:, :, None] > ac[:, None, :], 1.0, np.where(ac[:, :, None] == ac[:, None, :], 0.5, 0.0)
    )
    idx = np.arange(n)
    pref[:, idx, idx] = 0.0
    pref[idx, idx, :] = 0.0
    pref[idx, :, idx] = 0.0
    return np.asarray(pref, dtype=np.float64)


def _check_selfrank(a: IntArray) -> None:
    if a.shape[0] < 3:
        raise DegenerateDataError(
            f"triplet ranking needs at least 3 models, got {a.shape[0]}", reason="too_few_models"
        )


def selfrank_gtr(
    answers: npt.ArrayLike, *, subsets: npt.ArrayLike | None = None, rng: RNGLike = None
) -> SubsetRankingResult:
    """SelfRank greedy triplet ranking (GTR; Dhurandhar et al., 2024), per subset.

    Our reading of the method as ReasonerRank sec. 4.2.2 describes it, with
    answers only (no LLM judge prompt): a *judge* model ``c`` prefers ``a`` to
    ``b`` when ``a`` agrees with ``c``'s answers on more questions than ``b``
    does (Dhurandhar et al. evaluate the two responses against the judge's
    response as the reference; for answers that is agreement). Within a
    triplet each model judges the other two (three comparisons, a tie counts
    half a loss to each). Models are visited in a random order: the first three
    form the triplet, the one with the most losses is eliminated (ties: lower
    summed agreement with the other two, then the later-visited one) and the
    next model takes its place. After the last model, the final triplet is
    evaluated once more and its two best are the top two, ordered by their
    losses in that triplet (then summed agreement, then index). One of the two,
    drawn at random, judges all the others, who follow in order of agreement
    with it (ties by index). Scores are ``(n - 1 - position) / (n - 1)``.

    Parameters
    ----------
    answers : array-like of int, shape (n_models, n_questions)
        Answer codes, ``-1`` for no answer; at least 3 models.
    subsets : array-like of int, shape (n_questions,), optional
        Subset labels; ranked per subset, positional scores averaged.
    rng : numpy Generator, int or None
        Source of the visiting order and of the final judge.

    Returns
    -------
    SubsetRankingResult

    References
    ----------
    Dhurandhar et al. (2024), Ranking large language models without ground
    truth; ReasonerRank sec. 4.2.2.

    Examples
    --------
    >>> answers = [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1], [0, 0, 1, 2, 2, 0], [3, 3, 3, 1, 3, 3]]
    >>> selfrank_gtr(answers, rng=0).order.tolist()
    [0, 1, 2, 3]
    """
    a = _as_answers(answers)
    _check_selfrank(a)
    gen = make_rng(rng)
    n = a.shape[0]

    def losses(trip: list[int], agree: FloatArray) -> list[float]:
        lost = [0.0, 0.0, 0.0]
        for j in range(3):  # judge trip[j] compares the other two
            x, y = (i for i in range(3) if i != j)
            ax, ay = agree[trip[x], trip[j]], agree[trip[y], trip[j]]
            if ax > ay:
                lost[y] += 1.0
            elif ay > ax:
                lost[x] += 1.0
            else:
                lost[x] += 0.5
                lost[y] += 0.5
        return lost

    def key(trip: list[int], agree: FloatArray, visit: dict[int, int]) -> list[tuple[float, ...]]:
        lost = losses(trip, agree)
        return [
            (
                lost[i],
                -sum(agree[trip[i], trip[j]] for j in range(3) if j != i),
                float(visit[trip[i]]),
            )
            for i in range(3)
        ]

    def one(sub: IntArray, _s: int) -> tuple[FloatArray, IntArray]:
        agree = agreement_matrix(sub)
        visit_order = [int(m) for m in gen.permutation(n)]
        visit = {m: i for i, m in enumerate(visit_order)}
        trip = visit_order[:3]
        for nxt in visit_order[3:]:
            keys = key(trip, agree, visit)
            worst = max(range(3), key=lambda i: keys[i])
            trip[worst] = nxt
        keys = key(trip, agree, visit)
        worst = max(range(3), key=lambda i: keys[i])
        top = sorted(
            (trip[i] for i in range(3) if i != worst),
            key=lambda m: (keys[trip.index(m)][0], keys[trip.index(m)][1], m),
        )
        judge = top[int(gen.integers(2))]
        rest = [m for m in range(n) if m not in top]
        rest.sort(key=lambda m: (-agree[m, judge], m))
        order = np.asarray(top + rest, dtype=np.int64)
        scores = np.empty(n)
        scores[order] = (n - 1 - np.arange(n)) / (n - 1)
        return scores, order

    return _per_subset("selfrank-gtr", a, subsets, one)


def selfrank_ftr(
    answers: npt.ArrayLike,
    *,
    subsets: npt.ArrayLike | None = None,
    tol: float = 1e-12,
    max_iter: int = 10_000,
) -> SubsetRankingResult:
    """SelfRank full triplet ranking (FTR; Dhurandhar et al., 2024), per subset.

    Our reading: every triplet is evaluated with every member as the judge of
    the other two, so every ordered (judge c, pair a, b) of distinct models
    counts once. Judge ``c`` prefers ``a`` to ``b`` when ``a`` agrees more
    with ``c``'s answers (1, a tie 0.5, see :func:`selfrank_gtr`). A model's
    score is its preference wins weighted by the judges' reputations,
    ``s_a = sum_c w_c sum_b pref_c(a, b)``, and the reputations are the
    normalised scores, ``w = s / sum(s)``, starting from equal weights and
    iterated to the fixed point (the Perron vector of the win matrix). Models
    are ranked by it (ties by index); per-subset scores are the reputations
    times ``n_models`` (1 on average) and averaged over subsets.

    Parameters
    ----------
    answers : array-like of int, shape (n_models, n_questions)
        Answer codes, ``-1`` for no answer; at least 3 models.
    subsets : array-like of int, shape (n_questions,), optional
        Subset labels.
    tol : float, default 1e-12
        Stop when the L1 change of the reputations is below ``tol``.
    max_iter : int, default 10000

    Returns
    -------
    SubsetRankingResult

    Raises
    ------
    ConvergenceError
        If the reputations do not settle within ``max_iter`` iterations.

    References
    ----------
    Dhurandhar et al. (2024); ReasonerRank sec. 4.2.2.

    Examples
    --------
    >>> answers = [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1], [0, 0, 1, 2, 2, 0], [3, 3, 3, 1, 3, 3]]
    >>> r = selfrank_ftr(answers)
    >>> r.order.tolist(), r.scores.round(2).tolist()
    ([0, 1, 2, 3], [1.6, 1.4, 1.0, 0.0])
    """
    a = _as_answers(answers)
    _check_selfrank(a)
    n = a.shape[0]

    def one(sub: IntArray, _s: int) -> tuple[FloatArray, IntArray]:
        pref = _preferences(agreement_matrix(sub))
        wins = pref.sum(axis=2).T  # wins[a, c] = sum_b pref_c(a, b)
        w = np.full(n, 1.0 / n)
        for _it in range(max_iter):
            s = wins @ w
            new = s / s.sum()
            if np.abs(new - w).sum() < tol:
                w = new
                break
            w = new
        else:
            raise ConvergenceError(
                f"SelfRank-FTR reputations did not settle in {max_iter} iterations",
                iterations=max_iter,
                tol=tol,
                estimator="selfrank_ftr",
            )
        scores = w * n
        return scores, ordering(scores)

    return _per_subset("selfrank-ftr", a, subsets, one)
