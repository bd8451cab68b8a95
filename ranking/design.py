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

__all__ = [
    "STRATA",
    "STRATEGIES",
    "ArenaPlan",
    "BattleOrder",
    "PairDesign",
    "PairedTest",
    "PowerRow",
    "SimulatedDifficultyStudy",
    "arena_votes_for_width",
    "arena_width",
    "arena_width_closed_form",
    "difficulty_power",
    "mcnemar_exact",
    "order_battles",
    "pair_disagreement",
    "paired_test",
    "select_pairs",
    "simulate_difficulty_study",
]

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


# ---------------------------------------------------------------------------
# sample-size planning: paired tests, simulated difficulty studies, arena vote counts


@dataclass(frozen=True)
class PairedTest:
    """McNemar's exact test of two estimators scored right or wrong on the same items.

    Attributes
    ----------
    n : int
        Items scored for both estimators.
    only_first, only_second : int
        Discordant items: right for the first estimator only, for the second only.
    difference : float or None
        Accuracy of the first minus accuracy of the second, ``(b - c) / n`` (None when
        ``n = 0``).
    p_value : float
        Two-sided exact p-value: the binomial test of ``b`` successes in ``b + c`` trials
        at 1/2 (1.0 without discordant items).
    """

    n: int
    only_first: int
    only_second: int
    difference: float | None
    p_value: float


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c``.

    Under the null both kinds of discordant item are equally likely, so ``b`` is
    Binomial(``b + c``, 1/2); the p-value is ``min(1, 2 P(X <= min(b, c)))``.

    References
    ----------
    McNemar, Q. (1947). Note on the sampling error of the difference between correlated
    proportions or percentages. Psychometrika 12(2), 153-157.

    Examples
    --------
    >>> round(mcnemar_exact(9, 2), 4)
    0.0654
    >>> mcnemar_exact(0, 0)
    1.0
    """
    if b < 0 or c < 0:
        raise InvalidParameterError(f"discordant counts must be >= 0, got {b}, {c}")
    n = b + c
    if n == 0:
        return 1.0
    from ranking._special_dist import binom_cdf

    return float(min(1.0, 2.0 * binom_cdf(min(b, c), n, 0.5)))


def paired_test(correct_first: npt.ArrayLike, correct_second: npt.ArrayLike) -> PairedTest:
    """McNemar's exact test of two estimators right or wrong on the same items.

    Parameters
    ----------
    correct_first, correct_second : array-like of bool, shape (n_items,)
        Whether each estimator was right on each item (for alignment: its prediction
        equals the consensus of the votes; a tied prediction is wrong).

    Returns
    -------
    PairedTest

    Examples
    --------
    >>> t = paired_test([1, 1, 1, 0, 1], [1, 0, 0, 0, 1])
    >>> (t.only_first, t.only_second, t.difference, t.p_value)
    (2, 0, 0.4, 0.5)
    """
    a = np.asarray(correct_first, dtype=bool).reshape(-1)
    b = np.asarray(correct_second, dtype=bool).reshape(-1)
    if a.shape != b.shape:
        raise LengthMismatchError(f"the two estimators differ in items: {a.size} vs {b.size}")
    only_a = int((a & ~b).sum())
    only_b = int((b & ~a).sum())
    n = int(a.size)
    return PairedTest(
        n, only_a, only_b, (only_a - only_b) / n if n else None, mcnemar_exact(only_a, only_b)
    )


@dataclass(frozen=True)
class SimulatedDifficultyStudy:
    """A difficulty study drawn by :func:`simulate_difficulty_study`, in the arrays of
    :func:`ranking.alignment.alignment_report`.

    Attributes
    ----------
    difficulty : ndarray of shape (2, 2 * n_pairs)
        The two estimators' difficulties (1 for the question each calls harder, 0 for
        the other).
    pairs : ndarray of int, shape (n_pairs, 2)
        Pair ``p`` shows questions ``2p`` and ``2p + 1``.
    truth : ndarray of int, shape (n_pairs,)
        1 when the first question is really harder, 2 when the second is.
    vote_pair, vote_annotator, vote_code : ndarray of int, shape (n_votes,)
        Every annotator's vote on every pair: 0 skip, 1 first harder, 2 second harder.
    annotator_accuracy : ndarray of shape (n_annotators,)
        Each annotator's chance of naming the truly harder question.
    """

    difficulty: npt.NDArray[np.float64]
    pairs: npt.NDArray[np.intp]
    truth: npt.NDArray[np.intp]
    vote_pair: npt.NDArray[np.intp]
    vote_annotator: npt.NDArray[np.intp]
    vote_code: npt.NDArray[np.intp]
    annotator_accuracy: npt.NDArray[np.float64]


def _logit(p: float) -> float:
    return float(np.log(p / (1.0 - p)))


def simulate_difficulty_study(
    n_pairs: int,
    n_annotators: int,
    *,
    annotator_accuracy: float = 0.75,
    reliability_sd: float = 0.5,
    skip_rate: float = 0.1,
    estimator_accuracy: tuple[float, float] = (0.8, 0.7),
    rng: np.random.Generator | int | None = None,
) -> SimulatedDifficultyStudy:
    """Draw the votes and the two estimators' predictions of a difficulty study.

    Each pair has a truly harder question (first or second, equally likely). Annotator
    ``a`` names it with probability ``expit(logit(annotator_accuracy) + reliability_sd *
    z_a)``, ``z_a ~ N(0, 1)``, after skipping with probability ``skip_rate``; every
    annotator sees every pair (a study without an overlap cap). Estimator ``k`` calls the
    truly harder question harder with probability ``estimator_accuracy[k]``, independently
    of the other estimator and of the annotators (real estimators err together, which
    gives McNemar's test fewer discordant pairs and more power: this model is conservative).

    Parameters
    ----------
    n_pairs, n_annotators : int
        Study size (at least 1 each).
    annotator_accuracy : float in (0.5, 1)
        Median annotator's chance of a right vote.
    reliability_sd : float >= 0
        Spread of the annotators' accuracies on the logit scale.
    skip_rate : float in [0, 1)
        Chance that a vote is a skip.
    estimator_accuracy : pair of float in (0, 1)
        Each estimator's chance of ordering a pair as the truth does.
    rng : Generator, int or None

    Returns
    -------
    SimulatedDifficultyStudy
    """
    if n_pairs < 1 or n_annotators < 1:
        raise InvalidParameterError(
            f"need at least one pair and one annotator, got {n_pairs} and {n_annotators}"
        )
    if not 0.0 < annotator_accuracy < 1.0:
        raise InvalidParameterError(
            f"annotator_accuracy must be in (0, 1), got {annotator_accuracy}"
        )
    if not reliability_sd >= 0.0:
        raise InvalidParameterError(f"reliability_sd must be >= 0, got {reliability_sd}")
    if not 0.0 <= skip_rate < 1.0:
        raise InvalidParameterError(f"skip_rate must be in [0, 1), got {skip_rate}")
    if len(estimator_accuracy) != 2 or not all(0.0 < e < 1.0 for e in estimator_accuracy):
        raise InvalidParameterError(
            f"estimator_accuracy must be two numbers in (0, 1), got {estimator_accuracy}"
        )
    gen = np.random.default_rng(rng)
    truth = gen.integers(1, 3, n_pairs).astype(np.intp)
    pairs = np.arange(2 * n_pairs, dtype=np.intp).reshape(n_pairs, 2)
    difficulty = np.zeros((2, 2 * n_pairs), dtype=np.float64)
    for k, acc in enumerate(estimator_accuracy):
        right = gen.random(n_pairs) < acc
        says = np.where(right, truth, 3 - truth)  # 1: first harder, 2: second harder
        difficulty[k, pairs[:, 0]] = (says == 1).astype(np.float64)
        difficulty[k, pairs[:, 1]] = (says == 2).astype(np.float64)
    z = gen.standard_normal(n_annotators)
    p_right = 1.0 / (1.0 + np.exp(-(_logit(annotator_accuracy) + reliability_sd * z)))
    vp = np.repeat(np.arange(n_pairs, dtype=np.intp), n_annotators)
    va = np.tile(np.arange(n_annotators, dtype=np.intp), n_pairs)
    right = gen.random(vp.size) < p_right[va]
    code = np.where(right, truth[vp], 3 - truth[vp])
    code = np.where(gen.random(vp.size) < skip_rate, 0, code).astype(np.intp)
    return SimulatedDifficultyStudy(difficulty, pairs, truth, vp, va, code, p_right)


@dataclass(frozen=True)
class PowerRow:
    """The simulated outcome of one study size (:func:`difficulty_power`).

    Attributes
    ----------
    pairs, annotators : int
    ci_width_consensus, ci_width_kappa : float or None
        Mean width over the trials of the two-way bootstrap interval (pairs and
        annotators resampled, the report's ``CI both``) of the first estimator's
        consensus alignment and kappa; None when no trial gave one.
    ci_width_consensus_sd, ci_width_kappa_sd : float or None
        Their standard deviation over the trials.
    power : float
        Share of the trials in which McNemar's exact test on the consensus pairs told
        the two estimators apart at ``alpha``.
    power_se : float
        Its binomial standard error.
    consensus, kappa : float or None
        Mean consensus alignment and kappa of the first estimator.
    trials : int
    """

    pairs: int
    annotators: int
    ci_width_consensus: float | None
    ci_width_kappa: float | None
    ci_width_consensus_sd: float | None
    ci_width_kappa_sd: float | None
    power: float
    power_se: float
    consensus: float | None
    kappa: float | None
    trials: int


def _width(i: object) -> float | None:
    low, high = getattr(i, "low", None), getattr(i, "high", None)
    if low is None or high is None:
        return None
    return float(high) - float(low)


def _mean_sd(x: list[float]) -> tuple[float | None, float | None]:
    if not x:
        return None, None
    a = np.asarray(x, dtype=np.float64)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def difficulty_power(
    pairs: Sequence[int],
    annotators: Sequence[int],
    *,
    trials: int = 100,
    n_boot: int = 200,
    confidence: float = 0.95,
    alpha: float = 0.05,
    annotator_accuracy: float = 0.75,
    reliability_sd: float = 0.5,
    skip_rate: float = 0.1,
    estimator_accuracy: tuple[float, float] = (0.8, 0.7),
    seed: int = 0,
) -> list[PowerRow]:
    """Simulate difficulty studies of every (pairs, annotators) size before running one.

    Each trial draws a study (:func:`simulate_difficulty_study`) and analyses it exactly
    as ``annotate report`` does: :func:`ranking.alignment.alignment_report` with the
    two-way bootstrap (``resample="both"``, ``n_boot`` replicates, the default near-tie
    rule) for the intervals, and :func:`paired_test` (McNemar exact) on the pairs with a
    consensus for the power. The widths are those of the first estimator.

    Parameters
    ----------
    pairs, annotators : sequence of int
        The sizes to try; one row per combination, pairs varying slowest.
    trials : int
        Simulated studies per row.
    n_boot : int
        Bootstrap replicates per trial.
    confidence, alpha : float
        Interval coverage; level of the paired test.
    annotator_accuracy, reliability_sd, skip_rate, estimator_accuracy
        As :func:`simulate_difficulty_study`.
    seed : int
        Every draw (studies and bootstraps) comes from it.

    Returns
    -------
    list of PowerRow

    References
    ----------
    Owen, A. B. (2007). The pigeonhole bootstrap. Annals of Applied Statistics 1(2).
    """
    from ranking.alignment import alignment_report

    if trials < 1:
        raise InvalidParameterError(f"trials must be >= 1, got {trials}")
    if n_boot < 1:
        raise InvalidParameterError(f"n_boot must be >= 1, got {n_boot}")
    if not 0.0 < alpha < 1.0:
        raise InvalidParameterError(f"alpha must be in (0, 1), got {alpha}")
    sizes = [(int(p), int(a)) for p in pairs for a in annotators]
    streams = np.random.SeedSequence(seed).spawn(len(sizes))
    rows: list[PowerRow] = []
    for (n_p, n_a), ss in zip(sizes, streams, strict=True):
        gen = np.random.default_rng(ss)
        w_cons: list[float] = []
        w_kappa: list[float] = []
        v_cons: list[float] = []
        v_kappa: list[float] = []
        hits = 0
        for _ in range(trials):
            s = simulate_difficulty_study(
                n_p,
                n_a,
                annotator_accuracy=annotator_accuracy,
                reliability_sd=reliability_sd,
                skip_rate=skip_rate,
                estimator_accuracy=estimator_accuracy,
                rng=gen,
            )
            if not (s.vote_code != 0).any():
                continue
            rep = alignment_report(
                s.difficulty,
                s.pairs,
                s.vote_pair,
                s.vote_annotator,
                s.vote_code,
                n_annotators=n_a,
                n_boot=n_boot,
                confidence=confidence,
                rng=gen,
                resample=("both",),
            )
            for est, widths, values in (
                (rep.consensus_alignment[0], w_cons, v_cons),
                (rep.kappa[0], w_kappa, v_kappa),
            ):
                if est.value is not None:
                    values.append(float(est.value))
                w = _width(est.both_interval)
                if w is not None:
                    widths.append(w)
            q = rep.consensus.consensus != 0
            cons = rep.consensus.consensus[q]
            test = paired_test(rep.predictions[0][q] == cons, rep.predictions[1][q] == cons)
            hits += test.p_value < alpha
        power = hits / trials
        wc, wc_sd = _mean_sd(w_cons)
        wk, wk_sd = _mean_sd(w_kappa)
        rows.append(
            PowerRow(
                n_p,
                n_a,
                wc,
                wk,
                wc_sd,
                wk_sd,
                power,
                float(np.sqrt(power * (1.0 - power) / trials)),
                _mean_sd(v_cons)[0],
                _mean_sd(v_kappa)[0],
                trials,
            )
        )
    return rows


@dataclass(frozen=True)
class ArenaPlan:
    """Votes per model pair for a target rating interval width (:func:`arena_votes_for_width`).

    Attributes
    ----------
    votes_per_pair : int
        The smallest count tried whose mean interval width is at most the target (the
        largest tried when none reached it; see ``reached``).
    total_votes : int
        ``votes_per_pair`` times the number of model pairs.
    width : float
        Mean over models and trials of the 95% Wald interval width (Elo points) there.
    reached : bool
    curve : tuple of (int, float, float)
        Every count tried: votes per pair, mean width, its standard deviation over trials.
    failed : int
        Trials whose fit failed (a model that never won or never lost), left out.
    closed_form : int
        The votes per pair the closed form gives at equal strengths (the search's start).
    """

    votes_per_pair: int
    total_votes: int
    width: float
    reached: bool
    curve: tuple[tuple[int, float, float], ...]
    failed: int
    closed_form: int = 0


def arena_width_closed_form(n_models: int, votes_per_pair: int, confidence: float = 0.95) -> float:
    """Wald interval width (Elo points) of every rating when ``n_models`` equally strong
    models meet ``votes_per_pair`` times each (Bradley-Terry at ``p = 1/2``, expected
    information): ``2 z sqrt(4 (M - 1) / (v M²)) / C`` with ``C = ln 10 / 400``.

    Examples
    --------
    >>> round(arena_width_closed_form(2, 100), 1)
    68.1
    """
    from scipy import stats

    from ranking.pairwise import ELO_C

    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    var = 4.0 * (n_models - 1) / (votes_per_pair * n_models**2)
    return float(2.0 * z * np.sqrt(var) / ELO_C)


def arena_width(
    n_models: int,
    votes_per_pair: int,
    *,
    rating_sd: float = 100.0,
    trials: int = 20,
    confidence: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> tuple[float, float, int]:
    """Mean width (Elo points) of the m-ELO (Bradley-Terry) Wald intervals of a round robin.

    Each trial draws true ratings ``N(0, rating_sd²)``, lets every pair of models meet
    ``votes_per_pair`` times with Bradley-Terry outcomes (Elo scale, no ties) and fits
    :func:`ranking.pairwise.m_elo`.

    Returns
    -------
    mean, sd, failed : float, float, int
        Mean and standard deviation over the trials of the models' mean interval width
        (NaN when every trial failed), and the number of failed fits.
    """
    from ranking.errors import ConvergenceError, RankingInputError
    from ranking.pairwise import ELO_C, m_elo

    if n_models < 2:
        raise InvalidParameterError(f"need at least 2 models, got {n_models}")
    if votes_per_pair < 1:
        raise InvalidParameterError(f"votes_per_pair must be >= 1, got {votes_per_pair}")
    gen = np.random.default_rng(rng)
    i, j = np.triu_indices(n_models, 1)
    a = np.repeat(i, votes_per_pair)
    b = np.repeat(j, votes_per_pair)
    widths: list[float] = []
    failed = 0
    for _ in range(trials):
        r = gen.normal(0.0, rating_sd, n_models)
        p = 1.0 / (1.0 + np.exp(-ELO_C * (r[a] - r[b])))
        out = (gen.random(a.size) < p).astype(np.float64)
        try:
            fit = m_elo(a, b, out, n_models=n_models, confidence=confidence)
        except (RankingInputError, ConvergenceError):
            failed += 1
            continue
        widths.append(float(np.mean(fit.upper - fit.lower)))
    if not widths:
        return float("nan"), float("nan"), failed
    arr = np.asarray(widths)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0, failed


def arena_votes_for_width(
    n_models: int,
    target_width: float,
    *,
    rating_sd: float = 100.0,
    trials: int = 20,
    confidence: float = 0.95,
    max_votes_per_pair: int = 100_000,
    seed: int = 0,
) -> ArenaPlan:
    """Votes per model pair (round robin) for a mean rating interval width of ``target_width``.

    Starts from the closed form at equal strengths, ``v0 = 4 (M - 1) / M² * (2 z / (C W))²``
    (the Bradley-Terry information of a vote is ``p (1 - p) = 1/4``, so the centred
    ratings' covariance is ``4 / (v M) (I - J / M)`` in logits; ``C = ln 10 / 400``),
    then simulates (:func:`arena_width`) and moves by bisection between a count that is too
    few and one that is enough.

    Examples
    --------
    >>> plan = arena_votes_for_width(4, 200.0, rating_sd=0.0, trials=5)
    >>> plan.reached, plan.width <= 200.0
    (True, True)
    """
    from scipy import stats

    from ranking.pairwise import ELO_C

    if not target_width > 0:
        raise InvalidParameterError(f"target_width must be > 0, got {target_width}")
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    v0 = 4.0 * (n_models - 1) / n_models**2 * (2.0 * z / (ELO_C * target_width)) ** 2
    streams = iter(np.random.SeedSequence(seed).spawn(64))
    curve: dict[int, tuple[float, float]] = {}
    failed = 0

    def width(v: int) -> float:
        nonlocal failed
        if v not in curve:
            m, sd, f = arena_width(
                n_models,
                v,
                rating_sd=rating_sd,
                trials=trials,
                confidence=confidence,
                rng=np.random.default_rng(next(streams)),
            )
            failed += f
            curve[v] = (m, sd)
        w = curve[v][0]
        return w if np.isfinite(w) else float("inf")

    hi = min(max(1, int(np.ceil(v0))), max_votes_per_pair)
    while width(hi) > target_width and hi < max_votes_per_pair and len(curve) < 40:
        hi = min(2 * hi, max_votes_per_pair)
    reached = width(hi) <= target_width
    if reached:
        lo = hi
        while lo > 1 and width(lo) <= target_width and len(curve) < 40:
            lo = max(1, lo // 2)
        if width(lo) <= target_width:
            hi = lo
        while hi - lo > 1 and len(curve) < 60:
            mid = (lo + hi) // 2
            if width(mid) <= target_width:
                hi = mid
            else:
                lo = mid
    n_pairs = n_models * (n_models - 1) // 2
    return ArenaPlan(
        hi,
        hi * n_pairs,
        curve[hi][0],
        reached,
        tuple((v, m, sd) for v, (m, sd) in sorted(curve.items())),
        failed,
        max(1, int(np.ceil(v0))),
    )


# ---------------------------------------------------------------------------
# arena studies: which battles to show first


@dataclass(frozen=True)
class BattleOrder:
    """The order :func:`order_battles` chose.

    Attributes
    ----------
    order : ndarray of int, shape (n_battles,)
        Battle indices, first shown first.
    round : ndarray of int, shape (n_battles,)
        For each position, how many battles of the same model pair came before it (0 for
        the first battle of every pair: all of those come first).
    weight : ndarray of float, shape (n_battles,)
        For each position, the expected information ``4 p (1 - p)`` of a vote on its model
        pair (1 at equal ratings).
    pairs : int
        Model pairs with at least one battle.
    """

    order: npt.NDArray[np.intp]
    round: npt.NDArray[np.intp]
    weight: npt.NDArray[np.float64]
    pairs: int


def order_battles(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    *,
    n_models: int,
    ratings: npt.ArrayLike | None = None,
    seed: int = 0,
) -> BattleOrder:
    """Order an arena's battles so every model pair is covered early and evenly.

    Greedy, one battle at a time: the next battle is of the model pair with the lowest
    ``c / w``, where ``c`` counts the battles of that pair already placed and
    ``w = 4 p (1 - p)`` is the expected (Fisher) information of a vote on it, with ``p``
    the Bradley-Terry chance that one model wins under ``ratings`` (Elo points; all equal
    when None, so ``w = 1``). Hence every pair gets its first battle before any gets a
    second; after that pairs are shown in proportion to their information (close pairs,
    whose votes say the most about the ratings, more often). Ties go to the pair whose two
    models have been shown least so far (so the models are balanced within a round), then
    to a seeded random key. Within a pair, battles come in a seeded random order.
    Deterministic from ``seed``.

    Parameters
    ----------
    model_a, model_b : array-like of int, shape (n_battles,)
        The two models of each battle.
    n_models : int
    ratings : array-like of float, shape (n_models,), optional
        Current ratings (Elo points), e.g. an m-ELO fit of the votes so far.
    seed : int

    Returns
    -------
    BattleOrder

    Examples
    --------
    >>> o = order_battles([0, 0, 0, 1, 1, 2], [1, 1, 1, 2, 2, 0], n_models=3, seed=1)
    >>> o.round.tolist()
    [0, 0, 0, 1, 1, 2]
    """
    from ranking.pairwise import ELO_C

    a = np.asarray(model_a, dtype=np.intp).reshape(-1)
    b = np.asarray(model_b, dtype=np.intp).reshape(-1)
    if a.shape != b.shape:
        raise LengthMismatchError(f"model_a and model_b differ in length: {a.size} vs {b.size}")
    if a.size and (
        min(int(a.min()), int(b.min())) < 0 or max(int(a.max()), int(b.max())) >= n_models
    ):
        raise InvalidParameterError("model indices must lie in 0 .. n_models - 1")
    if a.size and bool(np.any(a == b)):
        raise InvalidParameterError("a battle must be between two different models")
    r = np.zeros(n_models) if ratings is None else np.asarray(ratings, dtype=np.float64)
    if r.shape != (n_models,) or not np.all(np.isfinite(r)):
        raise InvalidParameterError("ratings must be n_models finite numbers")
    rng = np.random.default_rng(seed)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * n_models + hi
    pair_keys, pair_of = np.unique(key, return_inverse=True)
    k = pair_keys.size
    p_lo, p_hi = pair_keys // n_models, pair_keys % n_models
    p = 1.0 / (1.0 + np.exp(-ELO_C * (r[p_lo] - r[p_hi])))
    w = np.maximum(4.0 * p * (1.0 - p), 1e-9)
    # battles of each pair in a seeded random order
    shuffle = rng.permutation(a.size)
    by_pair = [shuffle[pair_of[shuffle] == j] for j in range(k)]
    tie = rng.random(k)
    placed = np.zeros(k, dtype=np.int64)
    left = np.array([x.size for x in by_pair], dtype=np.int64)
    shown = np.zeros(n_models, dtype=np.int64)
    order = np.empty(a.size, dtype=np.intp)
    rounds = np.empty(a.size, dtype=np.intp)
    weight = np.empty(a.size, dtype=np.float64)
    for pos in range(a.size):
        prim = np.where(left > 0, placed / w, np.inf)
        cand = prim <= prim.min() + 1e-12
        load = np.where(cand, shown[p_lo] + shown[p_hi], np.iinfo(np.int64).max)
        cand &= load == load.min()
        j = int(np.argmin(np.where(cand, tie, np.inf)))
        order[pos] = by_pair[j][placed[j]]
        rounds[pos] = placed[j]
        weight[pos] = w[j]
        placed[j] += 1
        left[j] -= 1
        shown[p_lo[j]] += 1
        shown[p_hi[j]] += 1
    return BattleOrder(order, rounds, weight, int(k))
