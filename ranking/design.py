"""Designing a difficulty study: which question pairs to ask people about.

:func:`select_pairs` draws pairs of questions of the same subject from their estimated
difficulties, for a study in which people say which of two questions is harder
(``annotate plan pairs``):

- **Candidates.** Every unordered pair of two different questions with the same subject
  and a finite difficulty (when there are more than ``max_candidates``, a seeded random
  sample of them, spread over the subjects by their share of pairs).
- **Strata by difficulty gap.** ``|d_i - d_j|`` is cut at its tertiles over the
  candidates into three strata: ``large`` gaps (easy distinctions), ``medium`` and
  ``small`` (hard distinctions). ``stratified`` and ``disagreement`` take the strata in
  turn, so their counts differ by at most one unless a stratum runs out of pairs that
  respect the cap (then the others fill its share); ``uniform`` ignores the strata.
- **Order within a stratum.** ``stratified`` and ``uniform``: a seeded random
  permutation. ``disagreement``: a seeded weighted random order (Efraimidis-Spirakis
  keys ``u ** (1 / w)``) with weight ``w = 0.05 + disagreement``, where the disagreement
  of a pair is ``1 - |mean_k sign(d_k[i] - d_k[j])|`` over the estimators' difficulties
  (0 when they all order the two questions the same way, 2/3 when one of three differs).
- **Cap.** A pair is taken only while both of its questions are in fewer than
  ``max_per_question`` chosen pairs.
- **Sides.** The chosen pairs are oriented along an Euler circuit of the pair graph
  (odd-degree questions joined to a dummy node), so every question is shown first and
  second equally often, up to one.

Everything is deterministic from ``seed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ranking.errors import InvalidParameterError, LengthMismatchError

__all__ = ["STRATA", "STRATEGIES", "PairDesign", "pair_disagreement", "select_pairs"]

STRATEGIES = ("stratified", "disagreement", "uniform")
"""The selection strategies of :func:`select_pairs`."""

STRATA = ("large", "medium", "small")
"""Names of the gap strata, index 0 to 2: large gaps are easy distinctions."""

DISAGREEMENT_FLOOR = 0.05
"""Weight of a pair on which every estimator agrees, under ``disagreement``."""


@dataclass(frozen=True)
class PairDesign:
    """The pairs :func:`select_pairs` chose.

    Attributes
    ----------
    first, second : ndarray of int
        Question indices of each pair, in the order shown (``first`` on the left).
    stratum : ndarray of int
        Gap stratum of each pair (index into :data:`STRATA`).
    gap : ndarray of float
        ``|d_first - d_second|``.
    disagreement : ndarray of float or None
        Each pair's estimator disagreement, when estimators were given.
    gap_edges : tuple of float
        The two tertile cut points of the candidates' gaps.
    candidates : int
        How many candidate pairs there were.
    candidates_per_stratum : tuple of int
        Candidates in each stratum.
    sampled : bool
        Whether the candidates were a random sample of all same-subject pairs.
    """

    first: npt.NDArray[np.intp]
    second: npt.NDArray[np.intp]
    stratum: npt.NDArray[np.intp]
    gap: npt.NDArray[np.float64]
    disagreement: npt.NDArray[np.float64] | None
    gap_edges: tuple[float, float]
    candidates: int
    candidates_per_stratum: tuple[int, int, int]
    sampled: bool

    @property
    def n(self) -> int:
        """Number of pairs chosen."""
        return int(self.first.size)


def pair_disagreement(
    difficulties: Sequence[npt.ArrayLike], i: npt.ArrayLike, j: npt.ArrayLike
) -> npt.NDArray[np.float64]:
    """How much estimators disagree on the order of questions ``i`` and ``j``.

    Parameters
    ----------
    difficulties : sequence of array_like of float
        One difficulty vector per estimator (higher is harder), all the same length; a
        NaN entry is left out of that pair's vote.
    i, j : array_like of int
        Question indices of the pairs.

    Returns
    -------
    ndarray of float
        ``1 - |mean sign(d[i] - d[j])|`` over the estimators with finite values for
        both questions: 0 when they agree (ties count as 0), 1 when they split evenly;
        0 where fewer than two estimators have values.

    Examples
    --------
    >>> pair_disagreement([[0.0, 1.0], [0.0, 2.0], [1.0, 0.0]], [0], [1]).round(3)
    array([0.667])
    """
    ii = np.asarray(i, dtype=np.intp)
    jj = np.asarray(j, dtype=np.intp)
    if ii.shape != jj.shape:
        raise LengthMismatchError(f"i and j differ in length: {ii.size} vs {jj.size}")
    signs = []
    for d in difficulties:
        v = np.asarray(d, dtype=np.float64)
        signs.append(np.sign(v[ii] - v[jj]))
    if not signs:
        return np.zeros(ii.shape)
    s = np.vstack(signs)
    ok = np.isfinite(s)
    count = ok.sum(axis=0)
    total = np.where(ok, s, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 1.0 - np.abs(total) / count
    return np.where(count >= 2, out, 0.0)


def _candidates(
    groups: npt.NDArray[np.intp], limit: int, rng: np.random.Generator
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], bool]:
    """Same-group pairs ``i < j``; a seeded sample of about ``limit`` when there are more."""
    members = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    sizes = np.array([m.size * (m.size - 1) // 2 for m in members], dtype=np.int64)
    total = int(sizes.sum())
    a: list[npt.NDArray[np.intp]] = []
    b: list[npt.NDArray[np.intp]] = []
    sampled = total > limit
    for m, size in zip(members, sizes, strict=True):
        if size == 0:
            continue
        if not sampled:
            x, y = np.triu_indices(m.size, k=1)
        else:
            k = max(1, round(limit * int(size) / total))
            x = rng.integers(0, m.size, size=2 * k)
            y = rng.integers(0, m.size, size=2 * k)
            lo, hi = np.minimum(x, y), np.maximum(x, y)
            keep = lo != hi
            code = np.unique(lo[keep].astype(np.int64) * m.size + hi[keep])
            code = code[rng.permutation(code.size)[:k]]
            x, y = code // m.size, code % m.size
        a.append(m[x])
        b.append(m[y])
    if not a:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty, sampled
    return np.concatenate(a), np.concatenate(b), sampled


def _orient(
    i: npt.NDArray[np.intp], j: npt.NDArray[np.intp], n_nodes: int, rng: np.random.Generator
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Orient each edge ``(i, j)`` so every node's out- and in-degree differ by at most one.

    Odd-degree nodes are joined to a dummy node, which makes every degree even; walking
    an Euler circuit of each component (Hierholzer) and orienting the edges along it
    leaves in = out everywhere, and dropping the dummy edges changes that by at most one.
    """
    m = i.size
    dummy = n_nodes
    ends = [(int(x), int(y)) for x, y in zip(i, j, strict=True)]
    deg = np.bincount(np.concatenate([i, j]), minlength=n_nodes + 1) if m else np.zeros(1)
    for odd in np.flatnonzero(deg[:n_nodes] % 2 == 1):
        ends.append((int(odd), dummy))
    adj: dict[int, list[int]] = {}
    for e, (x, y) in enumerate(ends):
        adj.setdefault(x, []).append(e)
        adj.setdefault(y, []).append(e)
    used = np.zeros(len(ends), dtype=bool)
    first = np.empty(m, dtype=np.intp)
    second = np.empty(m, dtype=np.intp)
    nodes = sorted(adj)
    for k in rng.permutation(len(nodes)):
        start = nodes[int(k)]
        # Hierholzer: the circuit is the sequence of edges popped off the stack, each
        # traversed from its `src`; reversing the order reverses every edge, which is fine.
        stack: list[tuple[int, int]] = [(start, -1)]
        while stack:
            v, _ = stack[-1]
            edges = adj[v]
            while edges and used[edges[-1]]:
                edges.pop()
            if edges:
                e = edges.pop()
                used[e] = True
                x, y = ends[e]
                w = y if x == v else x
                if e < m:
                    first[e], second[e] = v, w
                stack.append((w, e))
            else:
                stack.pop()
    return first, second


def select_pairs(
    difficulty: npt.ArrayLike,
    subjects: npt.ArrayLike,
    n: int,
    *,
    strategy: str = "stratified",
    seed: int = 0,
    max_per_question: int = 2,
    estimators: Sequence[npt.ArrayLike] = (),
    max_candidates: int = 2_000_000,
) -> PairDesign:
    """Choose up to ``n`` same-subject question pairs, stratified by difficulty gap.

    Parameters
    ----------
    difficulty : array_like of float, shape (q,)
        Each question's difficulty; a question with a non-finite value is never chosen.
    subjects : array_like, shape (q,)
        Each question's subject; pairs are drawn within a subject only.
    n : int
        Pairs wanted (at least 1). Fewer are returned when the cap or the candidates
        run out.
    strategy : {"stratified", "disagreement", "uniform"}
        See the module docstring.
    seed : int
        Seed of every random draw.
    max_per_question : int
        The most pairs any question is in (at least 1).
    estimators : sequence of array_like of float
        Difficulty vectors of several estimators (needed by ``disagreement``: at least two).
    max_candidates : int
        Above this many same-subject pairs, a seeded sample of this many is used.

    Returns
    -------
    PairDesign

    Raises
    ------
    InvalidParameterError
        A bad ``n``, ``max_per_question`` or ``strategy``, or ``disagreement`` with fewer
        than two estimators.
    LengthMismatchError
        ``subjects`` or an estimator's vector not as long as ``difficulty``.

    Examples
    --------
    >>> d = select_pairs([0.1, 0.5, 0.9, 0.2, 0.7], ["a", "a", "a", "b", "b"], 3)
    >>> d.n, sorted(zip(d.first.tolist(), d.second.tolist())) != []
    (3, True)
    """
    if strategy not in STRATEGIES:
        raise InvalidParameterError(
            f"unknown strategy {strategy!r} (expected one of {', '.join(STRATEGIES)})"
        )
    if int(n) < 1:
        raise InvalidParameterError(f"n must be at least 1, got {n}")
    if int(max_per_question) < 1:
        raise InvalidParameterError(f"max_per_question must be at least 1, got {max_per_question}")
    d = np.asarray(difficulty, dtype=np.float64).ravel()
    subj = np.asarray(subjects).ravel()
    if subj.size != d.size:
        raise LengthMismatchError(
            f"subjects has {subj.size} entries, difficulty {d.size}: one per question"
        )
    ests = [np.asarray(e, dtype=np.float64).ravel() for e in estimators]
    for k, est in enumerate(ests):
        if est.size != d.size:
            raise LengthMismatchError(
                f"estimator {k} has {est.size} difficulties, difficulty {d.size}: one per question"
            )
    if strategy == "disagreement" and len(ests) < 2:
        raise InvalidParameterError("the disagreement strategy needs at least two estimators")
    rng = np.random.default_rng(seed)
    _, codes = np.unique(subj, return_inverse=True)
    groups = np.where(np.isfinite(d), codes.astype(np.intp), -1)
    ok = np.flatnonzero(groups >= 0)
    ci, cj, sampled = _candidates(groups[ok], int(max_candidates), rng)
    ci, cj = ok[ci], ok[cj]
    gaps = np.abs(d[ci] - d[cj])
    if gaps.size:
        lo, hi = (float(x) for x in np.quantile(gaps, [1 / 3, 2 / 3]))
    else:
        lo = hi = float("nan")
    # large gaps (> hi) stratum 0, medium 1, small (<= lo) 2
    stratum = np.where(gaps > hi, 0, np.where(gaps > lo, 1, 2)).astype(np.intp)
    dis = pair_disagreement(ests, ci, cj) if ests else None
    if strategy == "disagreement":
        assert dis is not None
        keys = np.log(rng.random(gaps.size)) / (DISAGREEMENT_FLOOR + dis)
        order = np.argsort(-keys, kind="stable")
    else:
        order = rng.permutation(gaps.size)
    queues = [order] if strategy == "uniform" else [order[stratum[order] == s] for s in range(3)]
    pos = [0] * len(queues)
    count = np.zeros(d.size, dtype=np.int64)
    cap = int(max_per_question)
    chosen: list[int] = []
    active = list(range(len(queues)))
    turn = 0
    while len(chosen) < int(n) and active:
        s = active[turn % len(active)]
        q = queues[s]
        taken = False
        while pos[s] < q.size:
            c = int(q[pos[s]])
            pos[s] += 1
            if count[ci[c]] < cap and count[cj[c]] < cap:
                count[ci[c]] += 1
                count[cj[c]] += 1
                chosen.append(c)
                taken = True
                break
        if taken:
            turn += 1
        else:
            active.remove(s)  # the next stratum now sits at the same turn index
    sel = np.array(chosen, dtype=np.intp)
    # present the pairs in a seeded random order, then balance the sides
    sel = sel[rng.permutation(sel.size)]
    first, second = _orient(ci[sel], cj[sel], d.size, rng)
    per = np.bincount(stratum, minlength=3)
    return PairDesign(
        first=first,
        second=second,
        stratum=stratum[sel],
        gap=gaps[sel],
        disagreement=None if dis is None else dis[sel],
        gap_edges=(lo, hi),
        candidates=int(gaps.size),
        candidates_per_stratum=(int(per[0]), int(per[1]), int(per[2])),
        sampled=sampled,
    )
