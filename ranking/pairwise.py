"""Elo, m-ELO and am-ELO: the Bradley-Terry family for pairwise votes.

One pairwise model serves every study in this project: an annotator compares
two *items* (two models' responses in an arena battle, or two benchmark
questions in a "which is harder" vote) and the vote is one comparison. The
functions here never assume the items are language models; "model" in an
argument name is only the arena word for "item".

Three estimators are provided, following Liu et al. (2025):

* :func:`elo` -- the online Elo update (their Algorithm 1), order dependent;
  :func:`elo_bootstrap` gives medians and percentile intervals over resampled
  battle orders.
* :func:`m_elo` -- the maximum-likelihood Elo of their eq. 2 (a
  Bradley-Terry model on the Elo scale, ``C = ln(10) / 400``), solved by
  Newton's method on aggregated pair counts.
* :func:`am_elo` -- the annotator-aware model of their eq. 4, in which each
  annotator ``k`` has a discrimination ``theta_k`` (their eq. 6 gives the
  gradients, eq. 7 the normalisation ``sum(theta) = 1``), solved by Fisher
  scoring on aggregated ``(item_a, item_b, annotator)`` triples.

Outcomes are 1 (``model_a`` won), 0 (``model_b`` won) or 0.5 (a tie, counted
as half a win to each side). A "both bad" vote is marked with a separate
boolean mask and, by default, counted as a tie like LMArena does
(``both_bad_as="tie"``); ``both_bad_as="drop"`` removes those votes instead.

References
----------
Liu, Z., Li, J., Zhuang, Y., Liu, Q., Shen, S., Ouyang, J., Cheng, M. and
Wang, S. (2025). am-ELO: A Stable Framework for Arena-based LLM Evaluation.
ICML 2025. arXiv:2505.03475.

Elo, A. E. (1978). The Rating of Chessplayers, Past and Present. Arco.

Bradley, R. A. and Terry, M. E. (1952). Rank analysis of incomplete block
designs: I. The method of paired comparisons. Biometrika 39, 324-345.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.linalg import lapack
from scipy.sparse import csgraph
from scipy.sparse.linalg import spsolve
from scipy.special import expit, log_expit, ndtri

from ranking._validation import as_index_array, check_same_length, make_rng
from ranking.errors import (
    ConvergenceError,
    DegenerateDataError,
    InvalidParameterError,
    ShapeError,
)
from ranking.types import BoolArray, FloatArray, IntArray, RNGLike

__all__ = [
    "ELO_C",
    "AmEloResult",
    "EloBootstrapResult",
    "EloResult",
    "MEloResult",
    "RankTestResult",
    "am_elo",
    "am_elo_gradient",
    "am_elo_log_likelihood",
    "elo",
    "elo_bootstrap",
    "m_elo",
    "ranks_from_intervals",
    "ranks_from_pairwise_tests",
]

ELO_C: float = math.log(10.0) / 400.0
"""The constant ``C = ln(10) / 400`` of eq. 2: one Elo point in logits."""

BothBad = Literal["tie", "drop"]

_DENSE_LIMIT = 1500  # items above which the Newton system is solved sparsely
_DENSE_SPREAD = 700.0
"""Log-strength spread up to which ``exp(s - max(s))`` stays a normal float (above
``exp(-708)``), so the dense m-ELO code forms win probabilities from ``n`` exponentials."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class EloResult:
    """Ratings from the online Elo update (Algorithm 1 of Liu et al., 2025)."""

    ratings: FloatArray
    """Final ratings, shape (n_models,), in Elo points."""
    iterations: int
    """Number of updates applied (one per battle)."""
    k: float
    """K-factor used."""
    scale: float
    """Scale used (400 by convention)."""
    base: float
    """Base of the exponent used (10 by convention)."""
    initial: float
    """Initial rating of every model."""
    both_bad_as: str
    """How "both bad" votes were treated (``"tie"`` or ``"drop"``)."""


@dataclass(frozen=True)
class EloBootstrapResult:
    """Median Elo ratings over bootstrap resamples of the battles."""

    ratings: FloatArray
    """Median rating per model, shape (n_models,)."""
    lower: FloatArray
    """Lower percentile bound per model, shape (n_models,)."""
    upper: FloatArray
    """Upper percentile bound per model, shape (n_models,)."""
    ranks: IntArray
    """Rank per model, shape (n_models,): 1 + the number of models whose
    interval lies entirely above this model's interval."""
    samples: FloatArray
    """Ratings of every resample, shape (n_rounds, n_models)."""
    iterations: int
    """Number of resamples (rounds)."""
    confidence: float
    """Coverage of the percentile interval."""
    k: float
    """K-factor used."""
    scale: float
    """Scale used."""
    base: float
    """Base used."""
    initial: float
    """Initial rating."""
    both_bad_as: str
    """How "both bad" votes were treated."""


@dataclass(frozen=True)
class MEloResult:
    """Maximum-likelihood Elo ratings (m-ELO, eq. 2 of Liu et al., 2025)."""

    ratings: FloatArray
    """Ratings, shape (n_models,), in Elo points with mean exactly ``initial``
    (translation fixed by centring; the scale is fixed by ``C = ln(10)/400``)."""
    standard_errors: FloatArray
    """Standard error of each rating, shape (n_models,), from the observed
    Fisher information under the centring constraint."""
    lower: FloatArray
    """Lower Wald bound, shape (n_models,), at ``confidence``."""
    upper: FloatArray
    """Upper Wald bound, shape (n_models,)."""
    ranks: IntArray
    """Rank per model, shape (n_models,): 1 + the number of models whose
    interval lies entirely above this model's interval."""
    log_likelihood: float
    """Log-likelihood of eq. 2 at the ratings (natural log, ties as half)."""
    iterations: int
    """Newton iterations run."""
    n_battles: int
    """Battles used (after dropping "both bad" votes if asked)."""
    confidence: float
    """Coverage of the Wald intervals."""
    initial: float
    """Mean rating (the translation constraint)."""
    tol: float
    """Convergence tolerance on the Newton decrement."""
    max_iter: int
    """Iteration limit."""
    both_bad_as: str
    """How "both bad" votes were treated."""
    rating_covariance: FloatArray | None = None
    """Covariance of the ratings (Elo points squared), shape (n_models, n_models), from
    the same information as ``standard_errors`` (its diagonal is their square); the
    pairwise rank tests (:func:`ranks_from_pairwise_tests`) use it."""

    @property
    def log_strengths(self) -> FloatArray:
        """Centred Bradley-Terry log-strengths ``C * (ratings - initial)``, shape (n_models,)."""
        return ELO_C * (self.ratings - self.initial)


@dataclass(frozen=True)
class AmEloResult:
    """Annotator-aware maximum-likelihood Elo (am-ELO, eq. 4 of Liu et al., 2025)."""

    ratings: FloatArray
    """Ratings, shape (n_models,), in Elo points with mean exactly ``initial``.
    The scale is fixed by eq. 7 (``sum(abilities) == 1``) and expressed so that an
    annotator of average ability (``theta_k = 1 / n_annotators``) discriminates
    like m-ELO's ``C = ln(10)/400``: ``P(a beats b | k) =
    sigmoid(n_annotators * theta_k * C * (R_a - R_b))``."""
    abilities: FloatArray
    """Annotator abilities ``theta``, shape (n_annotators,), summing to 1 (eq. 7).
    Negative values mark annotators whose votes run against the ranking."""
    discriminations: FloatArray
    """``n_annotators * abilities``, shape (n_annotators,): ability relative to the
    average annotator (mean 1; 0 is a random voter, negative an inverted one)."""
    rating_standard_errors: FloatArray
    """Standard error of each rating, shape (n_models,), from the expected Fisher
    information under both identifiability constraints."""
    ability_standard_errors: FloatArray
    """Standard error of each ability, shape (n_annotators,)."""
    lower: FloatArray
    """Lower Wald bound on the ratings, shape (n_models,)."""
    upper: FloatArray
    """Upper Wald bound on the ratings, shape (n_models,)."""
    ranks: IntArray
    """Rank per model, shape (n_models,), respecting the intervals."""
    n_records: IntArray
    """Votes per annotator, shape (n_annotators,)."""
    log_likelihood: float
    """Log-likelihood of eq. 5 at the estimates (natural log, ties as half)."""
    iterations: int
    """Fisher-scoring iterations run."""
    n_battles: int
    """Battles used."""
    confidence: float
    """Coverage of the Wald intervals."""
    initial: float
    """Mean rating (the translation constraint)."""
    tol: float
    """Convergence tolerance on the Newton decrement."""
    max_iter: int
    """Iteration limit."""
    both_bad_as: str
    """How "both bad" votes were treated."""
    ability_prior_sd: float | None = None
    """Standard deviation of the Gaussian prior on relative discriminations
    (None: plain maximum likelihood); ``log_likelihood`` is always unpenalised."""
    rating_covariance: FloatArray | None = None
    """Covariance of the ratings (Elo points squared), shape (n_models, n_models), under
    both identifiability constraints (its diagonal is ``rating_standard_errors**2``);
    the pairwise rank tests (:func:`ranks_from_pairwise_tests`) use it."""

    @property
    def log_strengths(self) -> FloatArray:
        """Centred log-strengths for an average annotator, shape (n_models,)."""
        return ELO_C * (self.ratings - self.initial)


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class _Battles:
    a: IntArray
    b: IntArray
    w: FloatArray
    k: IntArray | None
    n_models: int
    n_annotators: int


def _fmt(idx: Any, limit: int = 12) -> str:
    items = [int(i) for i in np.asarray(idx).ravel()]
    text = ", ".join(str(i) for i in items[:limit])
    if len(items) > limit:
        text += f", ... ({len(items)} in all)"
    return f"[{text}]"


def _prepare(
    model_a: Any,
    model_b: Any,
    outcome: Any,
    *,
    annotator: Any = None,
    n_models: int | None,
    n_annotators: int | None = None,
    both_bad: Any = None,
    both_bad_as: str = "tie",
    require_all_models: bool = True,
) -> _Battles:
    """Validate battle arrays at the boundary; return clean int/float arrays."""
    if both_bad_as not in ("tie", "drop"):
        raise InvalidParameterError(f"both_bad_as must be 'tie' or 'drop', got {both_bad_as!r}")
    for name, v in (("n_models", n_models), ("n_annotators", n_annotators)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1):
            raise InvalidParameterError(f"{name} must be a positive integer or None, got {v!r}")
    a = as_index_array(model_a, "model_a", n=n_models)
    b = as_index_array(model_b, "model_b", n=n_models)
    w = np.asarray(outcome, dtype=np.float64)
    if w.ndim != 1:
        raise ShapeError(f"outcome must be 1-D, got {w.ndim} dimension(s)")
    arrays: dict[str, Any] = {"model_a": a, "model_b": b, "outcome": w}
    k = None
    if annotator is not None:
        k = as_index_array(annotator, "annotator", n=n_annotators)
        arrays["annotator"] = k
    bb = None
    if both_bad is not None:
        bb = np.asarray(both_bad)
        if bb.ndim != 1:
            raise ShapeError(f"both_bad must be 1-D, got {bb.ndim} dimension(s)")
        if bb.size and bb.dtype != np.bool_ and not np.all(np.isin(bb, (0, 1))):
            raise InvalidParameterError("both_bad must hold booleans (True marks a both-bad vote)")
        bb = bb.astype(bool)
        arrays["both_bad"] = bb
    check_same_length(**arrays)
    bad = ~np.isin(w, (0.0, 0.5, 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidParameterError(
            f"outcome must hold 1 (model_a won), 0 (model_b won) or 0.5 (tie); "
            f"outcome[{i}] is {w[i]!r}"
        )
    if bb is not None and bb.any():
        if both_bad_as == "tie":
            w = np.where(bb, 0.5, w)
        else:
            keep = ~bb
            a, b, w = a[keep], b[keep], w[keep]
            k = None if k is None else k[keep]
    if a.size == 0:
        raise DegenerateDataError(
            "there are no battles to rate (after dropping both-bad votes, if asked); "
            "collect at least one battle per model"
        )
    same = np.flatnonzero(a == b)
    if same.size:
        raise DegenerateDataError(
            f"{same.size} battle(s) compare a model with itself (model_a == model_b), "
            f"at positions {_fmt(same)}; remove them before rating"
        )
    n = int(n_models) if n_models is not None else int(max(a.max(), b.max())) + 1
    if require_all_models:
        seen = np.zeros(n, dtype=bool)
        seen[a] = True
        seen[b] = True
        _require_all_models(seen)
    m = 0
    if k is not None:
        m = int(n_annotators) if n_annotators is not None else int(k.max()) + 1
    return _Battles(a=a, b=b, w=w, k=k, n_models=n, n_annotators=m)


def _require_all_models(seen: npt.NDArray[np.bool_]) -> None:
    """Raise unless every model has a battle (``seen`` marks those that do)."""
    if not seen.all():
        raise DegenerateDataError(
            f"model(s) {_fmt(np.flatnonzero(~seen))} have no battles, so their ratings "
            "are not identified; drop them from the index or collect battles for them"
        )


def _connected_dense(
    lo: IntArray, hi: IntArray, wins_lo: FloatArray, n_pairs: FloatArray, n: int, strong: bool
) -> bool:
    """True when the comparison graph is connected and, if ``strong``, the "beats" graph
    (an edge from each model to every model it won or tied against) strongly connected.

    The edges are marked in a dense boolean table and handed to scipy as a CSR matrix
    built from it directly (no COO sort and duplicate summing). False sends
    :func:`_check_connected` to its sparse code, which names the components in its
    errors.
    """
    table = np.zeros((n, n), dtype=bool)
    if strong:
        won = wins_lo > 0
        table[lo[won], hi[won]] = True
        lost = (n_pairs - wins_lo) > 0
        table[hi[lost], lo[lost]] = True
    else:
        table[lo, hi] = True
    flat = np.flatnonzero(table)
    indptr = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.count_nonzero(table, axis=1), out=indptr[1:])
    graph = sparse.csr_matrix(
        (np.ones(flat.size), (flat % n).astype(np.int32), indptr), shape=(n, n)
    )
    if strong:  # strongly connected implies connected
        n_strong, _ = csgraph.connected_components(graph, directed=True, connection="strong")
        return bool(n_strong == 1)
    n_comp, _ = csgraph.connected_components(graph, directed=False)
    return bool(n_comp == 1)


_BFS_LEVELS = 16
"""Breadth-first levels :func:`_strongly_connected` searches before it defers to scipy."""


def _reaches_all(adj: npt.NDArray[np.bool_]) -> bool:
    """True when item 0 reaches every item along the edges ``adj[i, j]`` (i -> j) within
    ``_BFS_LEVELS`` levels of a breadth-first search that expands whole rows at once."""
    seen = np.zeros(adj.shape[0], dtype=bool)
    seen[0] = True
    frontier = np.zeros(1, dtype=np.intp)
    for _ in range(_BFS_LEVELS):
        new = adj[frontier].any(axis=0)
        new &= ~seen
        if not new.any():
            return bool(seen.all())
        seen |= new
        frontier = np.flatnonzero(new)
    return False


def _strongly_connected(beats: npt.NDArray[np.bool_]) -> bool:
    """True when the "beats" graph (``beats[i, j]``: ``i`` won or tied against ``j``) is
    strongly connected, i.e. item 0 reaches every item and every item reaches item 0.

    A quick sufficient test on the dense table for :func:`m_elo`; False means "not shown
    within ``_BFS_LEVELS`` levels", and :func:`_check_connected` then decides (and names
    the parts in its error).
    """
    if beats.shape[0] == 0:
        return False
    return _reaches_all(beats) and _reaches_all(np.ascontiguousarray(beats.T))


def _check_connected(
    lo: IntArray,
    hi: IntArray,
    wins_lo: FloatArray,
    n_pairs: FloatArray,
    n: int,
    *,
    require_mle: bool = True,
) -> None:
    """Raise unless the maximum-likelihood Bradley-Terry ratings exist and are unique.

    The comparison graph must be connected (else the ratings of separate
    components are not comparable) and every model must have at least half a
    win and half a loss against every split of the models (Zermelo's condition:
    the "beats" graph is strongly connected), else some ratings diverge.
    """
    if n <= _DENSE_LIMIT and _connected_dense(lo, hi, wins_lo, n_pairs, n, require_mle):
        return  # the usual case, checked on an n x n table; the sparse code names the parts
    ones = np.ones(lo.size)
    graph = sparse.coo_matrix((ones, (lo, hi)), shape=(n, n)).tocsr()
    n_comp, labels = csgraph.connected_components(graph, directed=False)
    if n_comp > 1:
        comps = [np.flatnonzero(labels == c) for c in range(n_comp)]
        comps.sort(key=lambda c: -c.size)
        shown = "; ".join(_fmt(c, 8) for c in comps[:4])
        more = f" and {n_comp - 4} more" if n_comp > 4 else ""
        raise DegenerateDataError(
            f"the comparison graph is not connected: {n_comp} components of models "
            f"never compared with each other: {shown}{more}; ratings of different components "
            "are not comparable, so add battles between the components or rate them separately",
            reason="disconnected",
            models=comps[1] if len(comps) > 1 else None,
        )
    if not require_mle:
        return
    lo_beat = wins_lo > 0
    hi_beat = (n_pairs - wins_lo) > 0
    src = np.concatenate([lo[lo_beat], hi[hi_beat]])
    dst = np.concatenate([hi[lo_beat], lo[hi_beat]])
    beats = sparse.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    n_strong, slabels = csgraph.connected_components(beats, directed=True, connection="strong")
    if n_strong > 1:
        # A source component (never lost to outsiders) or a sink (never beat them).
        cond = sparse.coo_matrix(
            (np.ones(src.size), (slabels[src], slabels[dst])), shape=(n_strong, n_strong)
        ).tocsr()
        cond.setdiag(0)
        cond.eliminate_zeros()
        indeg = np.asarray(cond.sum(axis=0)).ravel()
        outdeg = np.asarray(cond.sum(axis=1)).ravel()
        source = int(np.flatnonzero(indeg == 0)[0])
        sink = int(np.flatnonzero(outdeg == 0)[0])
        raise DegenerateDataError(
            "the maximum-likelihood ratings do not exist: model(s) "
            f"{_fmt(np.flatnonzero(slabels == source), 8)} never lost or tied against the "
            f"other models, or model(s) {_fmt(np.flatnonzero(slabels == sink), 8)} never won "
            "or tied against them, so their ratings diverge to infinity; collect battles "
            "where they lose (or win)",
            reason="no_mle",
            models=np.flatnonzero((slabels == source) | (slabels == sink)).astype(np.int64),
        )


def _check_options(*, tol: float, max_iter: int, confidence: float) -> None:
    if not (isinstance(max_iter, int | np.integer) and max_iter >= 1):
        raise InvalidParameterError(f"max_iter must be a positive integer, got {max_iter!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise InvalidParameterError(f"tol must be a positive finite number, got {tol!r}")
    if not (0.0 < confidence < 1.0):
        raise InvalidParameterError(f"confidence must be in (0, 1), got {confidence!r}")


# --------------------------------------------------------------------------- helpers


def _bincount(idx: IntArray, weights: Any, n: int) -> FloatArray:
    """Weighted ``np.bincount`` typed as float64."""
    return np.asarray(np.bincount(idx, weights=weights, minlength=n), dtype=np.float64)


def ranks_from_intervals(lower: npt.ArrayLike, upper: npt.ArrayLike) -> IntArray:
    """Ranks that respect confidence intervals.

    A model's rank is 1 plus the number of models that are clearly better,
    that is, whose interval lies entirely above this model's interval
    (``lower_j > upper_i``). Models with overlapping intervals can share a rank.

    Parameters
    ----------
    lower, upper : array-like of shape (n_models,)
        Interval bounds, ``lower <= upper``.

    Returns
    -------
    ranks : ndarray of shape (n_models,), dtype int64
        Rank of each model, 1 for the best.

    Raises
    ------
    ShapeError
        If the bounds are not 1-D arrays of the same shape.
    InvalidParameterError
        If a bound is not finite or ``lower > upper`` somewhere.

    References
    ----------
    Chiang, W.-L. et al. (2024). Chatbot Arena: An Open Platform for Evaluating
    LLMs by Human Preference. ICML 2024 (the leaderboard's rank rule).

    Examples
    --------
    >>> ranks_from_intervals([10, 8, 2], [12, 11, 4]).tolist()
    [1, 1, 3]
    """
    lo = np.asarray(lower, dtype=np.float64)
    up = np.asarray(upper, dtype=np.float64)
    if lo.ndim != 1 or lo.shape != up.shape:
        raise ShapeError(
            f"lower and upper must be 1-D of the same shape, got {lo.shape} and {up.shape}"
        )
    if not (np.isfinite(lo).all() and np.isfinite(up).all()):
        raise InvalidParameterError("interval bounds must be finite")
    if np.any(lo > up):
        i = int(np.flatnonzero(lo > up)[0])
        raise InvalidParameterError(f"lower[{i}] = {lo[i]} exceeds upper[{i}] = {up[i]}")
    order = np.sort(lo)
    better = lo.size - np.searchsorted(order, up, side="right")
    return (1 + better).astype(np.int64)


RankTestMethod = Literal["holm", "bh", "none"]


@dataclass(frozen=True)
class RankTestResult:
    """Ranks from pairwise tests of rating differences (see :func:`ranks_from_pairwise_tests`)."""

    ranks: IntArray
    """1 + the number of models significantly above this one, shape (n_models,): the best
    rank the data allow (the rank class's top)."""
    lowest_ranks: IntArray
    """``n_models`` - the number of models significantly below this one, shape (n_models,):
    the worst rank the data allow. ``ranks[i]..lowest_ranks[i]`` is the model's rank range."""
    better: BoolArray
    """``better[i, j]``: model i is significantly above model j, shape (n_models, n_models)."""
    p_values: FloatArray
    """Adjusted two-sided p-value of ``rating_i == rating_j``, shape (n_models, n_models),
    symmetric, NaN on the diagonal."""
    alpha: float
    """Family-wise error rate of all the claims in ``better`` together (``method="holm"``),
    their false discovery rate (``"bh"``), or the per-pair level (``"none"``)."""
    method: str
    """``"holm"``, ``"bh"`` or ``"none"`` (unadjusted)."""

    @property
    def n_separated(self) -> int:
        """Number of model pairs whose order is claimed."""
        return int(self.better.sum())


def ranks_from_pairwise_tests(
    ratings: npt.ArrayLike,
    covariance: npt.ArrayLike,
    *,
    alpha: float = 0.05,
    method: RankTestMethod = "holm",
) -> RankTestResult:
    """Ranks from Holm-adjusted pairwise Wald tests of the rating differences.

    For every pair of models, ``z_ij = (r_i - r_j) / sqrt(V_ii + V_jj - 2 V_ij)`` with
    ``V`` the full covariance of the ratings (so correlated ratings, which share
    opponents and annotators, are tested on their difference, not on two marginal
    intervals), two-sided ``p_ij = 2 Phi(-|z_ij|)``. The ``n (n - 1) / 2`` p-values are
    adjusted with Holm's step-down procedure, and model i is declared above model j
    when ``r_i > r_j`` and the adjusted ``p_ij <= alpha``. Holm keeps the chance that
    *any* of these claims is false (the family-wise error rate) at most ``alpha`` under
    any dependence between the tests, for the two-sided nulls; for the direction of the
    claims (a true ``r_i < r_j`` declared ``i > j``) this is Shaffer's (1980) directional
    Holm procedure, whose error rate the tests check by simulation. With
    ``method="bh"`` the p-values are adjusted with Benjamini-Hochberg instead: the
    expected share of false claims among all the claims made (the false discovery
    rate) is at most ``alpha``, a weaker promise with more power when many pairs differ
    (recommended for pairwise comparisons by Williams, Jones and Tukey, 1999; checked by
    simulation in the tests). Holm rejects every
    pair Bonferroni rejects and more; both are far more powerful than comparing
    Bonferroni-simultaneous marginal intervals, which need a gap of about
    ``z (se_i + se_j)`` where the difference test needs ``z sqrt(se_i**2 + se_j**2)``.

    ``ranks[i]`` is 1 + the number of models significantly above i, and
    ``lowest_ranks[i]`` is ``n`` minus the number significantly below it: the model's
    rank class ``ranks[i]..lowest_ranks[i]`` (as the LMArena leaderboard shows a rank
    spread); every pair of claims behind all the ranks holds together with probability
    at least ``1 - alpha``.

    Parameters
    ----------
    ratings : array-like of shape (n_models,)
        Estimated ratings.
    covariance : array-like of shape (n_models, n_models)
        Their covariance (same units squared), symmetric positive semi-definite.
    alpha : float, default 0.05
        Family-wise error rate (Holm), false discovery rate (BH) or per-pair level
        (``method="none"``).
    method : {"holm", "bh", "none"}, default "holm"
        Adjustment across the pairs.

    Returns
    -------
    RankTestResult
        ``ranks``, ``lowest_ranks``, ``better`` and adjusted ``p_values``.

    Raises
    ------
    ShapeError
        If the shapes do not match.
    InvalidParameterError
        If a value is not finite, ``alpha`` is outside (0, 1) or ``method`` is unknown.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    Scandinavian Journal of Statistics 6, 65-70.

    Shaffer, J. P. (1980). Control of directional errors with stagewise multiple test
    procedures. Annals of Statistics 8, 1342-1347.

    Benjamini, Y. and Hochberg, Y. (1995). Controlling the false discovery rate. JRSS B
    57, 289-300.

    Williams, V. S. L., Jones, L. V. and Tukey, J. W. (1999). Controlling error in
    multiple comparisons, with examples from state-to-state differences in educational
    achievement. Journal of Educational and Behavioral Statistics 24, 42-69.

    Chiang, W.-L. et al. (2024). Chatbot Arena. ICML 2024 (rank from intervals).

    Examples
    --------
    Three models 30 Elo points apart, each rating with standard error 10: only the
    60-point gap is significant after Holm's adjustment (z = 4.24, p = 2.2e-5, times 3;
    the 30-point gaps have z = 2.12, p = 0.034, times 2):

    >>> res = ranks_from_pairwise_tests([1030.0, 1000.0, 970.0], np.eye(3) * 100.0)
    >>> res.ranks.tolist(), res.lowest_ranks.tolist()
    ([1, 1, 2], [2, 3, 3])
    >>> res.p_values.round(4)[0].tolist()
    [nan, 0.0678, 0.0001]
    """
    from ranking._special_dist import norm_sf

    r = np.asarray(ratings, dtype=np.float64)
    v = np.asarray(covariance, dtype=np.float64)
    if r.ndim != 1 or v.shape != (r.size, r.size):
        raise ShapeError(
            f"ratings must be 1-D and covariance (n, n) with n = len(ratings), got {r.shape} "
            f"and {v.shape}"
        )
    if not (np.isfinite(r).all() and np.isfinite(v).all()):
        raise InvalidParameterError("ratings and covariance must be finite")
    if not (0.0 < alpha < 1.0):
        raise InvalidParameterError(f"alpha must be in (0, 1), got {alpha!r}")
    if method not in ("holm", "bh", "none"):
        raise InvalidParameterError(f"method must be 'holm', 'bh' or 'none', got {method!r}")
    n = r.size
    iu, ju = np.triu_indices(n, k=1)
    dv = np.diag(v)
    var = dv[iu] + dv[ju] - 2.0 * v[iu, ju]
    diff = r[iu] - r[ju]
    tiny = 1e-12 * max(1.0, float(np.abs(dv).max()) if n else 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > tiny, np.abs(diff) / np.sqrt(np.maximum(var, tiny)), 0.0)
    p = np.minimum(1.0, 2.0 * norm_sf(z))
    if method == "holm" and p.size:
        order = np.argsort(p, kind="stable")
        steps = p.size - np.arange(p.size)
        adj = np.empty_like(p)
        adj[order] = np.minimum(1.0, np.maximum.accumulate(steps * p[order]))
        p = adj
    elif method == "bh" and p.size:
        order = np.argsort(p, kind="stable")
        ratio = p[order] * p.size / np.arange(1, p.size + 1)
        adj = np.empty_like(p)
        adj[order] = np.minimum(1.0, np.minimum.accumulate(ratio[::-1])[::-1])
        p = adj
    pv = np.full((n, n), np.nan)
    pv[iu, ju] = p
    pv[ju, iu] = p
    better = np.zeros((n, n), dtype=bool)
    sig = p <= alpha
    up = sig & (diff > 0)
    down = sig & (diff < 0)
    better[iu[up], ju[up]] = True
    better[ju[down], iu[down]] = True
    return RankTestResult(
        ranks=(1 + better.sum(axis=0)).astype(np.int64),
        lowest_ranks=(n - better.sum(axis=1)).astype(np.int64),
        better=better,
        p_values=pv,
        alpha=float(alpha),
        method=method,
    )


_DENSE_KEYS = 1 << 22
"""Key spaces up to this size (or 4 keys per battle) are counted in a dense table."""


def _factorize(
    key: IntArray, space: int, dense_limit: int | None = None
) -> tuple[IntArray, IntArray]:
    """``np.unique(key, return_inverse=True)`` for keys in ``[0, space)``, in linear time.

    A key space of at most ``max(_DENSE_KEYS, 4 * key.size)`` is counted in a dense
    table (one ``bincount``); a larger one is sorted by a least-significant-digit radix
    sort on 16-bit digits (NumPy's stable sort of ``uint16`` is a counting sort), one
    pass per 16 bits of ``space``. Both give the sorted unique keys and the inverse
    exactly as :func:`numpy.unique` does, without its O(n log n) comparison sort.

    Parameters
    ----------
    key : ndarray of shape (n,)
        Non-negative integer keys, each below ``space``.
    space : int
        An upper bound on the keys.
    dense_limit : int, optional
        The largest key space counted in a dense table (default ``max(_DENSE_KEYS, 4 *
        key.size)``).

    Returns
    -------
    uniq : ndarray of shape (n_unique,)
        The distinct keys, ascending.
    inverse : ndarray of shape (n,)
        ``uniq[inverse] == key``.
    """
    if key.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if space <= (max(_DENSE_KEYS, 4 * key.size) if dense_limit is None else dense_limit):
        counts = np.bincount(key, minlength=space)
        uniq = np.flatnonzero(counts)
        lookup = np.empty(space, dtype=np.int64)
        lookup[uniq] = np.arange(uniq.size, dtype=np.int64)
        return uniq.astype(np.int64), lookup[key]
    order: IntArray | None = None
    for shift in range(0, max(1, int(space - 1).bit_length()), 16):
        # the cast to uint16 keeps the low 16 bits (C conversion modulo 2**16)
        digit = (key if shift == 0 else key >> shift).astype(np.uint16)
        if order is None:
            order = np.argsort(digit, kind="stable").astype(np.int64)
        else:
            order = order[np.argsort(digit[order], kind="stable")]
    assert order is not None
    ordered = key[order]
    first = np.empty(ordered.size, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(ordered.size, dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first].astype(np.int64), inverse


@functools.lru_cache(maxsize=4)
def _triangle_cached(n: int) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    lo, hi = np.triu_indices(n, 1)
    lo, hi = lo.astype(np.int64), hi.astype(np.int64)
    for arr in (lo, hi):
        arr.setflags(write=False)
    up, low = lo * n + hi, hi * n + lo
    up.setflags(write=False)
    low.setflags(write=False)
    return up, low, lo, hi


def _triangle(n: int) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Flat cells ``lo * n + hi`` and ``hi * n + lo`` of the strict upper triangle in
    row-major order, and their rows and columns (read-only; cached up to 1,024 models,
    32 MiB at most)."""
    if n <= 1024:
        return _triangle_cached(n)
    lo, hi = np.triu_indices(n, 1)
    lo, hi = lo.astype(np.int64), hi.astype(np.int64)
    return lo * n + hi, hi * n + lo, lo, hi


def _aggregate_pairs(
    a: IntArray, b: IntArray, w: FloatArray, n: int
) -> tuple[IntArray, IntArray, FloatArray, FloatArray]:
    """Collapse battles to unordered pairs: (lo, hi, wins of lo, count).

    The pairs come out sorted by ``(lo, hi)``, as ``np.unique`` would give them. With
    few models (``n * n`` at most ``max(_DENSE_KEYS, 4 * n_battles)``) the battles are
    counted by *ordered* pair, key ``a * n + b``, in two ``bincount`` passes (battles and
    the outcome sum), and the ``n x n`` tables are folded onto the upper triangle: four
    passes over the battles, no sort. The outcomes are 0, 0.5 or 1, so every sum is a
    multiple of 0.5 below ``2**52`` and exact: the counts equal those of the sorted,
    unordered aggregation in any summation order. More models: a linear-time radix
    factorisation of the unordered key (:func:`_factorize`).
    """
    space = n * n
    if space <= max(_DENSE_KEYS, 4 * a.size):
        key = a * n
        key += b
        c = np.bincount(key, minlength=space)
        won = np.bincount(key, weights=w, minlength=space)
        # the unordered pairs met, in row-major order of the upper triangle: (lo, hi) sorted
        up, low, tri_lo, tri_hi = _triangle(n)
        met = (c[up] + c[low]) > 0
        uniq, rev = up[met], low[met]  # the cells of the battles (lo, hi) and (hi, lo)
        lo_u, hi_u = tri_lo[met], tri_hi[met]
        # battles (lo, hi): lo won won[lo, hi]; battles (hi, lo): lo won c[hi, lo] - won[hi, lo]
        return (
            lo_u.astype(np.int64),
            hi_u.astype(np.int64),
            np.asarray(won[uniq] + (c[rev] - won[rev]), dtype=np.float64),
            (c[uniq] + c[rev]).astype(np.float64),
        )
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    wl = np.where(a > b, 1.0 - w, w)
    key = lo * n + hi
    uniq, inv = _factorize(key, space)
    wins = _bincount(inv, wl, uniq.size)
    cnt = np.bincount(inv, minlength=uniq.size).astype(np.float64)
    return (uniq // n).astype(np.int64), (uniq % n).astype(np.int64), wins, cnt


def _aggregate_dense(
    a: IntArray, b: IntArray, w: FloatArray, n: int, spare: list[FloatArray] | None = None
) -> tuple[FloatArray, FloatArray]:
    """Battles counted into ``n x n`` tables: ``wins[i, j]``, the wins of ``i`` over ``j``
    (ties as half), and the symmetric ``counts = wins + wins.T``, zero where a pair never met.

    Two ``bincount`` passes over the battles by *ordered* pair (key ``a * n + b``), then a
    fold of the tables on their transposes; the sums are multiples of 0.5 below
    ``2**52``, exact, and equal to those of :func:`_aggregate_pairs` cell by cell. The
    two counting tables, dead after the fold, are appended to ``spare`` (as float64
    tables of undefined content) for reuse as work tables: memory already paged in.
    """
    key = a * n
    key += b
    c = np.bincount(key, minlength=n * n).reshape(n, n)
    won = _bincount(key, w, n * n).reshape(n, n)
    # battles (i, j): i won won[i, j]; battles (j, i): i won c[j, i] - won[j, i]
    wins = np.subtract(c.T, won.T)
    wins += won
    counts = np.add(c, c.T, dtype=np.float64)
    if spare is not None and c.dtype.itemsize == 8:
        spare += [c.view(np.float64), won]
    return wins, counts


def _table_pairs(
    wins: FloatArray, counts: FloatArray
) -> tuple[IntArray, IntArray, FloatArray, FloatArray]:
    """The pairs of :func:`_aggregate_pairs` (sorted by ``(lo, hi)``) from the tables of
    :func:`_aggregate_dense`."""
    lo, hi = np.nonzero(np.triu(counts > 0, 1))
    return lo.astype(np.int64), hi.astype(np.int64), wins[lo, hi], counts[lo, hi]


def _bt_loglik(d: FloatArray, wins: FloatArray, cnt: FloatArray) -> float:
    # w ln s(d) + (n - w) ln s(-d) = w d - n softplus(d)
    return float(wins @ d - cnt @ np.logaddexp(0.0, d))


def _laplacian_dense(lo: IntArray, hi: IntArray, h: FloatArray, n: int) -> FloatArray:
    """Dense graph Laplacian with weight ``h`` on the edges (lo, hi), which are distinct
    (aggregated pairs): each weight is written to its two cells, no accumulation."""
    off = np.zeros((n, n))
    flat = off.reshape(-1)
    flat[lo * n + hi] = h
    flat[hi * n + lo] = h
    deg = off.sum(axis=1)
    lap = -off
    lap[np.diag_indices(n)] += deg
    return lap


def _solve_laplacian(
    lo: IntArray, hi: IntArray, h: FloatArray, g: FloatArray, n: int
) -> FloatArray:
    """Solve ``L x = g`` for a connected graph Laplacian with ``sum(g) = 0``; return centred x."""
    if n <= _DENSE_LIMIT:
        lap = _laplacian_dense(lo, hi, h, n)
        lap += np.mean(np.diag(lap)) / n  # + c 11^T: nonsingular, same centred solution
        x = np.linalg.solve(lap, g)
    else:
        rows = np.concatenate([lo, hi, lo, hi])
        cols = np.concatenate([hi, lo, lo, hi])
        vals = np.concatenate([-h, -h, h, h])
        lap = sparse.coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsc()
        x = np.zeros(n)
        x[:-1] = spsolve(lap[:-1, :-1], g[:-1])  # ground the last item
    out: FloatArray = x - x.mean()
    return out


class _PairSystem:
    """The Bradley-Terry log-likelihood on the aggregated pairs, for :func:`_newton`.

    A point is the vector of pair differences ``d = s[lo] - s[hi]``; each Newton system
    is a weighted graph Laplacian, solved densely up to ``_DENSE_LIMIT`` items and
    sparsely above.
    """

    def __init__(self, lo: IntArray, hi: IntArray, wins: FloatArray, cnt: FloatArray, n: int):
        self.lo, self.hi, self.wins, self.cnt, self.n = lo, hi, wins, cnt, n

    def at(self, s: FloatArray) -> FloatArray:
        out: FloatArray = s[self.lo] - s[self.hi]
        return out

    def loglik(self, d: FloatArray) -> float:
        return _bt_loglik(d, self.wins, self.cnt)

    def newton_step(self, d: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The gradient and the centred Newton step at ``d``."""
        lo, hi, cnt, n = self.lo, self.hi, self.cnt, self.n
        p = expit(d)
        r = self.wins - cnt * p
        g = _bincount(lo, r, n) - _bincount(hi, r, n)
        h = cnt * p * (1.0 - p)
        return g, _solve_laplacian(lo, hi, h, g, n)

    def quadratic(self, step: FloatArray) -> float:
        """``sum(cnt * (step[lo] - step[hi])**2)``."""
        dstep = step[self.lo] - step[self.hi]
        return float(self.cnt @ (dstep * dstep))


class _DensePoint:
    """Win probabilities ``p[i, j] = P(i beats j)`` at log-strengths ``s``, shape (n, n).

    ``P(j beats i)`` is ``p.T`` exactly: ``e_i + e_j`` and ``s_i - s_j`` are formed
    symmetrically. ``p`` is written into ``out`` when given (a point is then valid until
    ``out`` is rewritten).
    """

    __slots__ = ("diff", "p")

    def __init__(self, s: FloatArray, out: FloatArray | None = None):
        top = float(s.max())
        self.diff: FloatArray | None = None
        if top - float(s.min()) > _DENSE_SPREAD:  # exp(s - top) could underflow
            self.diff = s[:, None] - s[None, :]
            self.p: FloatArray = expit(self.diff, out=out)
        else:  # n exponentials instead of n**2: p = e_i / (e_i + e_j), with e = exp(s - top)
            e = np.exp(s - top)
            p = np.add.outer(e, e, out=out)
            np.divide(e[:, None], p, out=p)
            self.p = p

    def log_p(self, out: FloatArray | None = None) -> FloatArray:
        """``ln p``, finite in every cell (into ``out`` when given)."""
        if self.diff is None:
            res: FloatArray = np.log(self.p, out=out)
        else:
            res = log_expit(self.diff, out=out)
        return res


class _DenseSystem:
    """The Bradley-Terry log-likelihood on ``n x n`` tables, for :func:`_newton`.

    ``wins[i, j]`` holds the wins of ``i`` over ``j`` (ties as half) and
    ``counts = wins + wins.T`` the battles of each pair. Each iteration takes ``n``
    exponentials and a few whole-table passes (no gathers or scatters over the pairs),
    then one Cholesky solve of the Newton system; for up to ``_DENSE_LIMIT`` items, where
    that solve costs more than the ``n**2`` passes anyway.
    """

    def __init__(self, wins: FloatArray, counts: FloatArray, work: list[FloatArray] | None = None):
        self.wins, self.counts = wins, counts
        self.n = n = wins.shape[0]
        self.degree = counts.sum(axis=1)
        # n x n float64 tables to use as work tables (their content is ignored), then new ones
        tables = [t for t in (work or []) if t.shape == (n, n) and t.flags.c_contiguous]
        tables += [np.empty((n, n)) for _ in range(3 - min(3, len(tables)))]
        # work tables, reused so that a fit allocates (and page-faults) a few tables only:
        # _p holds the current point's probabilities, rewritten by every at() call (the
        # Newton loop never needs an earlier point once it asks for a new one); _n_p and
        # _lap are rewritten by every information() call (and _n_p by loglik())
        self._p, self._n_p, self._lap = tables[:3]

    def at(self, s: FloatArray) -> _DensePoint:
        return _DensePoint(s, out=self._p)

    def loglik(self, pt: _DensePoint) -> float:
        # the sum over ordered pairs of wins[i, j] ln p[i, j]: wins ln p + losses ln (1 - p)
        return float(np.vdot(self.wins, pt.log_p(out=self._n_p)))

    def information(self, pt: _DensePoint) -> tuple[FloatArray, float, FloatArray]:
        """``L + c 11'``, with ``L`` the Laplacian of the weights ``counts * p * (1 - p)``
        (the Fisher information) and ``c`` its mean degree over ``n``, which makes it
        definite without changing centred solutions; ``c``; ``counts * p``. The two
        tables are the system's work tables: valid until the next call."""
        n = self.n
        n_p = np.multiply(self.counts, pt.p, out=self._n_p)
        lap = np.multiply(n_p, pt.p.T, out=self._lap)
        deg = lap.sum(axis=1)
        shift = float(deg.mean()) / n
        np.subtract(shift, lap, out=lap)
        np.fill_diagonal(lap, deg + shift)
        return lap, shift, n_p

    def newton_step(self, pt: _DensePoint) -> tuple[FloatArray, FloatArray]:
        """The gradient and the centred Newton step at ``pt``."""
        lap, _, n_p = self.information(pt)
        np.subtract(self.wins, n_p, out=n_p)  # residuals per ordered pair
        g = n_p.sum(axis=1)
        # Cholesky on lap.T, the Fortran-ordered view of the symmetric matrix: no copy
        _, x, info = lapack.dposv(lap.T, g, lower=0, overwrite_a=1, overwrite_b=0)
        if info != 0:  # not numerically definite: LU, as the pair code solves it
            x = np.linalg.solve(self.information(pt)[0], g)
        return g, x - x.mean()

    def quadratic(self, step: FloatArray) -> float:
        """``step' L(counts) step``: the sum over pairs of ``counts * (step_i - step_j)**2``."""
        return float(self.degree @ (step * step) - step @ (self.counts @ step))

    def covariance(self, pt: _DensePoint) -> FloatArray:
        """The pseudo-inverse of the Fisher information at ``pt``, shape (n, n), written
        over the work tables: the system's last use."""
        lap, shift, _ = self.information(pt)
        n = self.n
        # (L + c 11')^-1 = L^+ + 11' / (c n^2) for a connected graph
        chol, info = lapack.dpotrf(lap.T, lower=0, clean=0, overwrite_a=1)
        if info == 0:
            inv, info = lapack.dpotri(chol, lower=0, overwrite_c=1)
        if info != 0:  # not numerically definite: the general inverse
            inv = np.linalg.inv(self.information(pt)[0])
            return np.asarray(inv - 1.0 / (shift * n * n), dtype=np.float64)
        # the upper triangle holds the inverse: zero the rest in place, mirror it into the
        # probabilities' table (no longer needed, already in memory), which is returned
        np.multiply(inv, ~np.tri(n, k=-1, dtype=bool), out=inv)
        full: FloatArray = np.add(inv, inv.T, out=self._p)
        np.fill_diagonal(full, 0.5 * np.diagonal(full))
        full -= 1.0 / (shift * n * n)
        return full


def _newton(
    system: Any, n: int, *, tol: float, max_iter: int, s0: FloatArray | None = None
) -> tuple[FloatArray, float, int, Any]:
    """Newton's method with backtracking for centred Bradley-Terry log-strengths.

    ``system`` is a :class:`_PairSystem` or a :class:`_DenseSystem`; returns the centred
    log-strengths, the log-likelihood there, the iterations run and the system's point
    at the (uncentred) strengths.
    """
    s = np.zeros(n) if s0 is None else s0 - s0.mean()
    pt = system.at(s)
    ll: float | None = None  # computed where it is needed
    for it in range(1, max_iter + 1):
        g, step = system.newton_step(pt)
        dec = float(g @ step)  # Newton decrement squared
        t = 1.0
        if dec >= system.quadratic(step) / 8.0:
            # Each pair's curvature cnt p (1 - p) is at most cnt / 4, so the full step
            # gains at least dec - q / 2 >= 0 with q = sum(cnt / 4 * dstep**2) (Taylor,
            # integral remainder): the test below would accept it. Skip the
            # log-likelihood here; it is computed where it is needed next.
            s = s + step
            pt = system.at(s)
            ll = None
        else:
            if ll is None:
                ll = float(system.loglik(pt))
            while True:
                s_new = s + t * step
                pt_new = system.at(s_new)
                ll_new = float(system.loglik(pt_new))
                if ll_new >= ll - 1e-12 * max(1.0, abs(ll)) or t < 1e-10:
                    break
                t *= 0.5
            s, pt, ll = s_new, pt_new, ll_new
        if dec <= tol:
            if ll is None:
                ll = float(system.loglik(pt))
            return s - s.mean(), ll, it, pt
    raise ConvergenceError(
        f"m-ELO Newton iterations did not converge within max_iter={max_iter} "
        f"(last Newton decrement {dec:.3g} > tol={tol:g}); the votes nearly separate the "
        "models (some almost never lose or never win)",
        iterations=max_iter,
        tol=tol,
        estimator="m_elo",
    )


def _bt_newton(
    lo: IntArray,
    hi: IntArray,
    wins: FloatArray,
    cnt: FloatArray,
    n: int,
    *,
    tol: float,
    max_iter: int,
    s0: FloatArray | None = None,
) -> tuple[FloatArray, float, int]:
    """Newton's method for centred Bradley-Terry log-strengths (concave, eq. 2), on the
    aggregated pairs (:func:`_aggregate_pairs`)."""
    s, ll, it, _ = _newton(_PairSystem(lo, hi, wins, cnt, n), n, tol=tol, max_iter=max_iter, s0=s0)
    return s, ll, it


def _laplacian_pinv(lo: IntArray, hi: IntArray, h: FloatArray, n: int) -> FloatArray:
    lap = _laplacian_dense(lo, hi, h, n)
    c = 1.0 / n
    inv = np.asarray(np.linalg.inv(lap + c) - c, dtype=np.float64)
    return inv


# --------------------------------------------------------------------------- Elo


def _check_elo_options(k: float, scale: float, base: float, initial: float) -> None:
    for name, v in (("k", k), ("scale", scale), ("initial", initial)):
        if not np.isfinite(v):
            raise InvalidParameterError(f"{name} must be finite, got {v!r}")
    if k <= 0:
        raise InvalidParameterError(f"k must be positive, got {k!r}")
    if scale <= 0:
        raise InvalidParameterError(f"scale must be positive, got {scale!r}")
    if not (np.isfinite(base) and base > 1):
        raise InvalidParameterError(f"base must be a finite number above 1, got {base!r}")


def _elo_loop(
    a: list[int],
    b: list[int],
    w: list[float],
    n: int,
    k: float,
    scale: float,
    base: float,
    initial: float,
) -> list[float]:
    r = [float(initial)] * n
    for i, j, s in zip(a, b, w, strict=True):
        ri, rj = r[i], r[j]
        e = 1.0 / (1.0 + base ** ((rj - ri) / scale))
        r[i] = ri + k * (s - e)
        r[j] = rj + k * ((1.0 - s) - (1.0 - e))
    return r


def _elo_rounds(
    d: _Battles, idx: IntArray, k: float, scale: float, base: float, initial: float
) -> FloatArray:
    """Online Elo run on ``n_rounds`` battle sequences at once; ``idx`` has shape (n_rounds, t)."""
    n_rounds, t = idx.shape
    ratings = np.full((n_rounds, d.n_models), initial)
    rows = np.arange(n_rounds)
    for step in range(t):
        col = idx[:, step]
        i, j, s = d.a[col], d.b[col], d.w[col]
        ri, rj = ratings[rows, i], ratings[rows, j]
        e = 1.0 / (1.0 + base ** ((rj - ri) / scale))
        ratings[rows, i] = ri + k * (s - e)
        ratings[rows, j] = rj + k * (e - s)
    return ratings


def elo(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    n_models: int | None = None,
    k: float = 4.0,
    scale: float = 400.0,
    base: float = 10.0,
    initial: float = 1000.0,
    both_bad: npt.ArrayLike | None = None,
    both_bad_as: BothBad = "tie",
) -> EloResult:
    """Online Elo ratings, one update per battle in the given order (Algorithm 1).

    For each battle ``(i, j, W)`` in order, with expected score
    ``E = 1 / (1 + base ** ((R_j - R_i) / scale))``, the update is
    ``R_i += k * (W - E)`` and ``R_j += k * ((1 - W) - (1 - E))``, both computed
    from the ratings before the battle. The result depends on the order.

    Parameters
    ----------
    model_a, model_b : array-like of int of shape (n_battles,)
        Indices of the two items in each battle.
    outcome : array-like of float of shape (n_battles,)
        1 if ``model_a`` won, 0 if ``model_b`` won, 0.5 for a tie.
    n_models : int, optional
        Number of items; inferred as ``max index + 1`` when omitted.
    k : float, default 4.0
        K-factor (LMArena's value).
    scale, base : float, default 400.0 and 10.0
        Elo scale and base.
    initial : float, default 1000.0
        Starting rating of every item.
    both_bad : array-like of bool of shape (n_battles,), optional
        Marks "both responses are bad" votes.
    both_bad_as : {"tie", "drop"}, default "tie"
        Count both-bad votes as ties (LMArena) or drop them.

    Returns
    -------
    EloResult
        ``ratings`` of shape (n_models,) plus the settings.

    Raises
    ------
    LengthMismatchError, ShapeError, InvalidParameterError
        On malformed input.
    DegenerateDataError
        If there are no battles, a battle pits an item against itself, or an
        item has no battles.

    References
    ----------
    Elo, A. E. (1978). The Rating of Chessplayers, Past and Present. Arco.
    Liu, Z. et al. (2025). am-ELO, ICML 2025, Algorithm 1.

    Examples
    --------
    >>> res = elo([0, 0, 1], [1, 2, 2], [1, 1, 0.5], k=32)
    >>> res.ratings.round(2).tolist()
    [1031.26, 984.03, 984.7]
    """
    _check_elo_options(k, scale, base, initial)
    d = _prepare(
        model_a, model_b, outcome, n_models=n_models, both_bad=both_bad, both_bad_as=both_bad_as
    )
    r = _elo_loop(
        d.a.tolist(),
        d.b.tolist(),
        d.w.tolist(),
        d.n_models,
        float(k),
        float(scale),
        float(base),
        float(initial),
    )
    return EloResult(
        ratings=np.asarray(r, dtype=np.float64),
        iterations=int(d.a.size),
        k=float(k),
        scale=float(scale),
        base=float(base),
        initial=float(initial),
        both_bad_as=both_bad_as,
    )


def elo_bootstrap(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    n_models: int | None = None,
    n_rounds: int = 1000,
    confidence: float = 0.95,
    k: float = 4.0,
    scale: float = 400.0,
    base: float = 10.0,
    initial: float = 1000.0,
    both_bad: npt.ArrayLike | None = None,
    both_bad_as: BothBad = "tie",
    rng: RNGLike = None,
) -> EloBootstrapResult:
    """Bootstrap of online Elo: medians and percentile intervals.

    Each round draws ``n_battles`` battles with replacement (so both the
    battles and their order vary), runs :func:`elo` on them, and the result
    reports the per-model median and the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` percentiles over rounds. All rounds run together,
    vectorised over rounds.

    Parameters
    ----------
    model_a, model_b : array-like of int of shape (n_battles,)
        Indices of the two items in each battle.
    outcome : array-like of float of shape (n_battles,)
        1 if ``model_a`` won, 0 if ``model_b`` won, 0.5 for a tie.
    n_models : int, optional
        Number of items; inferred when omitted.
    n_rounds : int, default 1000
        Bootstrap rounds.
    confidence : float, default 0.95
        Coverage of the percentile interval.
    k, scale, base, initial : float
        Elo settings, as in :func:`elo`.
    both_bad, both_bad_as
        As in :func:`elo`.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    EloBootstrapResult
        ``ratings`` (medians), ``lower``, ``upper``, ``ranks`` of shape
        (n_models,) and ``samples`` of shape (n_rounds, n_models).

    Raises
    ------
    InvalidParameterError, DegenerateDataError
        As for :func:`elo`, or if ``n_rounds < 1``.

    References
    ----------
    Chiang, W.-L. et al. (2024). Chatbot Arena, ICML 2024 (bootstrap of Elo).
    Liu, Z. et al. (2025). am-ELO, ICML 2025, sec. 5.2.

    Examples
    --------
    >>> res = elo_bootstrap([0, 0, 1, 2], [1, 2, 2, 0], [1, 1, 0.5, 0], n_rounds=50, rng=0)
    >>> bool(res.ratings[0] > res.ratings[2])
    True
    """
    _check_elo_options(k, scale, base, initial)
    if not (isinstance(n_rounds, int | np.integer) and n_rounds >= 1):
        raise InvalidParameterError(f"n_rounds must be a positive integer, got {n_rounds!r}")
    _check_options(tol=1.0, max_iter=1, confidence=confidence)
    d = _prepare(
        model_a, model_b, outcome, n_models=n_models, both_bad=both_bad, both_bad_as=both_bad_as
    )
    gen = make_rng(rng)
    idx = gen.integers(0, d.a.size, size=(n_rounds, d.a.size))
    ratings = _elo_rounds(d, idx, float(k), float(scale), float(base), float(initial))
    alpha = (1.0 - confidence) / 2.0
    lower, med, upper = np.quantile(ratings, [alpha, 0.5, 1.0 - alpha], axis=0)
    return EloBootstrapResult(
        ratings=med,
        lower=lower,
        upper=upper,
        ranks=ranks_from_intervals(lower, upper),
        samples=ratings,
        iterations=int(n_rounds),
        confidence=float(confidence),
        k=float(k),
        scale=float(scale),
        base=float(base),
        initial=float(initial),
        both_bad_as=both_bad_as,
    )


# --------------------------------------------------------------------------- m-ELO


def m_elo(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    n_models: int | None = None,
    initial: float = 1000.0,
    confidence: float = 0.95,
    tol: float = 1e-10,
    max_iter: int = 100,
    both_bad: npt.ArrayLike | None = None,
    both_bad_as: BothBad = "tie",
) -> MEloResult:
    """Maximum-likelihood Elo ratings (m-ELO, eq. 2).

    Maximises ``sum W ln P(R_i, R_j) + (1 - W) ln P(R_j, R_i)`` with
    ``P(R_i, R_j) = 1 / (1 + exp(-C (R_i - R_j)))`` and ``C = ln(10) / 400``.
    The battles are first collapsed to win and battle counts per unordered pair,
    then Newton's method runs on the concave log-likelihood (Theorem 4.1) with a
    backtracking line search; each step solves the weighted graph-Laplacian
    system exactly. The result does not depend on the battle order.

    Parameters
    ----------
    model_a, model_b : array-like of int of shape (n_battles,)
        Indices of the two items in each battle.
    outcome : array-like of float of shape (n_battles,)
        1 if ``model_a`` won, 0 if ``model_b`` won, 0.5 for a tie.
    n_models : int, optional
        Number of items; inferred when omitted. Every item must have a battle.
    initial : float, default 1000.0
        The mean rating: translation is fixed by centring the ratings on it.
    confidence : float, default 0.95
        Coverage of the Wald intervals.
    tol : float, default 1e-10
        Stop when the squared Newton decrement (the predicted gain in
        log-likelihood, doubled) is at most ``tol``.
    max_iter : int, default 100
        Newton iteration limit.
    both_bad : array-like of bool of shape (n_battles,), optional
        Marks "both responses are bad" votes.
    both_bad_as : {"tie", "drop"}, default "tie"
        Count both-bad votes as ties (LMArena) or drop them.

    Returns
    -------
    MEloResult
        ``ratings`` of shape (n_models,) in Elo points with mean ``initial``
        (``C * (ratings - initial)`` are the centred Bradley-Terry
        log-strengths, see ``log_strengths``), standard errors, Wald
        ``lower``/``upper`` bounds, interval-respecting ``ranks``,
        ``log_likelihood``, ``iterations`` and the settings.

    Raises
    ------
    LengthMismatchError, ShapeError, InvalidParameterError
        On malformed input or options.
    DegenerateDataError
        If there are no battles, an item is compared with itself, an item has
        no battles, the comparison graph is disconnected (the components are
        named), or an item never lost or never won (ratings diverge).
    ConvergenceError
        If Newton's method does not meet ``tol`` within ``max_iter``.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO: A Stable Framework for Arena-based LLM
    Evaluation. ICML 2025, eqs. 2-3 and Theorem 4.1.
    Hunter, D. R. (2004). MM algorithms for generalized Bradley-Terry models.
    Annals of Statistics 32, 384-406.

    Examples
    --------
    Item 0 beats item 1 twice and loses once, item 1 does the same to item 2,
    and items 0 and 2 tie:

    >>> res = m_elo([0, 0, 1, 1, 1, 2, 0], [1, 1, 0, 2, 2, 1, 2], [1, 1, 1, 1, 1, 1, 0.5])
    >>> res.ratings.round(1).tolist()
    [1071.6, 1000.0, 928.4]
    >>> res.ranks.tolist()  # seven battles cannot separate them
    [1, 1, 1]
    """
    _check_options(tol=tol, max_iter=max_iter, confidence=confidence)
    if not np.isfinite(initial):
        raise InvalidParameterError(f"initial must be finite, got {initial!r}")
    d = _prepare(
        model_a,
        model_b,
        outcome,
        n_models=n_models,
        both_bad=both_bad,
        both_bad_as=both_bad_as,
        require_all_models=False,  # checked on the pairs below: one pass fewer
    )
    n = d.n_models
    if n <= _DENSE_LIMIT:  # n x n tables: no pair lists, a Cholesky solve per step
        spare: list[FloatArray] = []  # the counting tables, reused as the fit's work tables
        win_table, counts = _aggregate_dense(d.a, d.b, d.w, n, spare)
        _require_all_models(np.any(counts, axis=1))
        if not _strongly_connected(win_table > 0):  # the sparse check names the parts
            _check_connected(*_table_pairs(win_table, counts), n)
        system = _DenseSystem(win_table, counts, spare)
        s, ll, it, last = _newton(system, n, tol=tol, max_iter=max_iter)
        cov = system.covariance(last)  # p depends on differences only: centring is moot
    else:
        lo, hi, wins, cnt = _aggregate_pairs(d.a, d.b, d.w, n)
        seen = np.zeros(n, dtype=bool)
        seen[lo] = True
        seen[hi] = True
        _require_all_models(seen)
        _check_connected(lo, hi, wins, cnt, n)
        s, ll, it = _bt_newton(lo, hi, wins, cnt, n, tol=tol, max_iter=max_iter)
        p = expit(s[lo] - s[hi])
        cov = _laplacian_pinv(lo, hi, cnt * p * (1 - p), n)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None)) / ELO_C
    cov /= ELO_C**2  # in Elo points squared (in place: cov is this call's own array)
    ratings = initial + s / ELO_C
    z = float(ndtri(0.5 + confidence / 2.0))  # norm.ppf without its overhead
    lower, upper = ratings - z * se, ratings + z * se
    return MEloResult(
        ratings=ratings,
        standard_errors=se,
        lower=lower,
        upper=upper,
        ranks=ranks_from_intervals(lower, upper),
        log_likelihood=ll,
        iterations=it,
        n_battles=int(d.a.size),
        confidence=float(confidence),
        initial=float(initial),
        tol=float(tol),
        max_iter=int(max_iter),
        both_bad_as=both_bad_as,
        rating_covariance=cov,
    )


# --------------------------------------------------------------------------- am-ELO


@dataclass(frozen=True)
class _Triples:
    ann: IntArray
    pair: IntArray  # index into the unique (lo, hi) pairs
    pair_lo: IntArray
    pair_hi: IntArray
    wins: FloatArray
    cnt: FloatArray | None  # None: every triple is one battle (count 1)
    lo_ann: IntArray  # the (model lo, annotator) cell of each triple: lo * m + ann, or
    hi_ann: IntArray  # ann * n + lo where by_annotator (and so for hi)
    wm: FloatArray  # wins - cnt: the weight of eta in the log-likelihood (see _am_eval)
    by_annotator: bool = False  # triples sorted by annotator, each annotator has one
    ann_starts: IntArray | None = None  # where by_annotator: each annotator's first triple
    pair_order: tuple[IntArray, IntArray] | None = None  # see _pair_order and _pair_sums
    unit_cnt: bool = False  # every cnt is 1 (one vote per triple): products with it skipped

    @property
    def lo(self) -> IntArray:
        """The first (smaller) item of each triple (not stored: ``pair_lo[pair]``)."""
        return _take(self.pair_lo, self.pair)

    @property
    def hi(self) -> IntArray:
        """The second (larger) item of each triple (``pair_hi[pair]``)."""
        return _take(self.pair_hi, self.pair)


_TINY = float(np.finfo(np.float64).tiny)


class _Pool:
    """Work arrays of one length (the triples'), reused across the iterations of a fit.

    A fresh array of millions of floats is memory the kernel must map and zero on first
    touch (glibc serves it by ``mmap`` and unmaps it when freed): at 10M triples each
    such temporary costs more than the arithmetic done in it, and an am-ELO iteration
    made about ten. Arrays given back (:meth:`put`) are handed out again (:meth:`get`)
    with undefined contents; at most ``keep`` are held.
    """

    __slots__ = ("free", "keep", "size")

    def __init__(self, size: int, keep: int = 6) -> None:
        self.size, self.keep = size, keep
        self.free: list[FloatArray] = []

    def get(self) -> FloatArray:
        return self.free.pop() if self.free else np.empty(self.size)

    def put(self, *arrays: FloatArray | None) -> None:
        for x in arrays:
            if x is not None and len(self.free) < self.keep:
                self.free.append(x)


class _Point:
    """Per-triple quantities at one (s, a), shared by the log-likelihood, the gradient and
    the information: ``d = s[lo] - s[hi]``, ``ak = a[ann]``, ``eta = ak * d`` and ``p =
    expit(eta)``; the (unpenalised) log-likelihood (:meth:`loglik`), ``r = wins - cnt p``
    and ``v = cnt p (1 - p)`` on first use.

    ``eta``, ``p`` and the log-likelihood are invariant to the gauge ``(s, a) -> ((s - c0)
    c, a / c)``, so the point the line search accepted serves, with ``d`` and ``ak``
    rescaled to the normalised estimates (:meth:`rescaled`), as the next iterate's point:
    one ``exp`` per iteration instead of one for the line search and one for the gradient.
    """

    __slots__ = ("_ll", "_r", "_v", "ak", "cnt", "d", "eta", "p", "pool", "unit", "wins", "wm")

    def __init__(
        self,
        tr: _Triples,
        d: FloatArray,
        ak: FloatArray,
        eta: FloatArray,
        p: FloatArray,
        pool: _Pool,
    ) -> None:
        self.d, self.ak, self.eta, self.p, self.pool = d, ak, eta, p, pool
        self.wins, self.cnt, self.wm = tr.wins, tr.cnt, tr.wm
        # cnt all 1: cnt * x is x itself (bit for bit), so r and v skip that product; the
        # log-likelihood keeps its dot product with cnt (a sum would add in another order)
        self.unit = tr.unit_cnt
        self._ll: float | None = None
        self._r: FloatArray | None = None
        self._v: FloatArray | None = None

    def release(self) -> None:
        """Give the arrays back to the pool; the point must not be used afterwards."""
        self.pool.put(self.d, self.ak, self.eta, self.p, self._r, self._v)
        self._r = self._v = None

    def loglik(self) -> float:
        """The log-likelihood ``sum(w eta - cnt softplus(eta))``.

        ``softplus(eta) = eta + log(1 + exp(-eta)) = eta - log(p)`` with the ``p`` in hand
        (``log(1 / x)`` and ``-log(x)`` differ by half an ulp of ``x`` at most), so it is
        ``(w - cnt) @ eta + cnt @ log(p)``: one ``log`` and no second ``exp``. It errs by
        a few ulps of ``max(|eta|, 1)``, as :func:`_softplus` does. Where a ``p`` is below
        the smallest normal number (``eta < -708``: ``p`` subnormal, or 0 where
        ``exp(-eta)`` overflowed) it is taken with :func:`_softplus`.
        """
        if self._ll is None:
            ll = math.nan
            if float(self.p.min()) >= _TINY:
                lg = np.log(self.p, out=self.pool.get())
                ll = float(self.wm @ self.eta) + (
                    float(lg.sum()) if self.cnt is None else float(self.cnt @ lg)
                )
                self.pool.put(lg)
            if not math.isfinite(ll):
                sp = _softplus(self.eta)
                ll = float(self.wins @ self.eta) - (
                    float(sp.sum()) if self.cnt is None else float(self.cnt @ sp)
                )
            self._ll = ll
        return self._ll

    @property
    def r(self) -> FloatArray:
        """``wins - cnt p``, the residuals."""
        if self._r is None:
            r = self.pool.get()
            cnt = None if self.unit else self.cnt
            cp = self.p if cnt is None else np.multiply(cnt, self.p, out=r)
            self._r = np.subtract(self.wins, cp, out=r)
        return self._r

    @property
    def v(self) -> FloatArray:
        """``cnt p (1 - p)``, the Bernoulli variances."""
        if self._v is None:
            v = np.subtract(1.0, self.p, out=self.pool.get())
            v *= self.p
            if self.cnt is not None and not self.unit:
                v *= self.cnt
            self._v = v
        return self._v

    def rescaled(self, c: float) -> _Point:
        """This point after :func:`_normalise` divided the abilities by ``c``: ``d * c``
        and ``ak / c`` in place (``ak / c`` is exactly ``(a / c)[ann]``; ``d * c`` equals
        the differences of the centred, rescaled strengths to rounding)."""
        self.d *= c
        self.ak /= c
        return self


_TRIPLES_SORT_MIN = 1 << 20
"""From this many battles, the (pair, annotator) sort is skipped when few triples repeat."""
_TRIPLES_REPEAT_SHARE = 0.05
"""Expected share of repeated (pair, annotator) triples below which they are not merged."""


def _battle_triples(
    lo: IntArray, hi: IntArray, k: IntArray, wl: FloatArray, n: int, m: int
) -> _Triples | None:
    """The battles themselves as triples (count 1 each) when merging would gain little.

    The am-ELO log-likelihood, gradient and information are sums over battles, so
    merging repeated (pair, annotator) triples only shortens the arrays; it costs a
    radix sort of the battles (two 16-bit passes and their gathers, about a third of an
    am-ELO fit at 10M battles). The expected share of repeats, were each annotator's
    pairs drawn from the overall pair distribution, is
    ``sum_k n_k (n_k - 1) / 2 * sum_j q_j**2 / n_battles`` (``q_j``: the pair shares).
    Below ``_TRIPLES_REPEAT_SHARE`` the battles are used as they are (the sums then run
    in battle order, so results agree with the merged ones to rounding); returns None
    otherwise, and for fewer than ``_TRIPLES_SORT_MIN`` battles.
    """
    size = lo.size
    if size < _TRIPLES_SORT_MIN:
        return None
    pk = lo * n
    pk += hi
    if n * n <= max(_DENSE_KEYS, 4 * size):  # _factorize's dense table, its counts kept
        per_key = np.bincount(pk, minlength=n * n)
        upair = np.flatnonzero(per_key)
        lookup = np.empty(n * n, dtype=np.int64)
        lookup[upair] = np.arange(upair.size, dtype=np.int64)
        pinv = _take(lookup, pk)
        c = per_key[upair].astype(np.float64)
    else:
        upair, pinv = _factorize(pk, n * n)
        c = np.bincount(pinv, minlength=upair.size).astype(np.float64)
    del pk
    simpson = float(c @ c) / float(size) ** 2
    per_ann = np.bincount(k, minlength=m)
    nk = per_ann.astype(np.float64)
    repeats = float(nk @ (nk - 1.0)) / 2.0 * simpson
    if repeats >= _TRIPLES_REPEAT_SHARE * size:
        return None
    if per_ann.all():
        # sorted by annotator, then pair and outcome: the sums over each annotator's
        # battles become contiguous segments (np.add.reduceat), and the (model, annotator)
        # cells of the cross information, laid out annotator-major, are filled in order
        # instead of at random over n * m cells. A battle is the key (annotator, pair,
        # 2 * outcome) packed in one integer (outcomes 0, 0.5, 1: every battle with the
        # same key is the same battle), so one sort of 32-bit keys (SIMD in NumPy) does
        # it, without an argsort and the gathers of a permutation.
        span = 3 * upair.size
        dt = np.uint32 if m * span <= 1 << 32 else np.uint64
        # (in place where it can: every fresh array of this length costs page faults)
        key: Any = k.astype(dt)
        key *= dt(span)
        code = pinv  # pinv is rebuilt from the sorted keys below
        code *= 3
        np.add(code, np.multiply(wl, 2.0), out=code, casting="unsafe")  # + 2 * outcome
        np.add(key, code, out=key, casting="unsafe")
        del lo, hi, pinv
        key.sort()
        ann = np.repeat(np.arange(m, dtype=np.int64), per_ann)
        rest = key.astype(np.int64)
        del key
        rest -= np.multiply(ann, span, out=code)  # pair * 3 + 2 * outcome
        pinv = np.floor_divide(rest, 3, out=code)
        np.remainder(rest, 3, out=rest)  # 2 * outcome
        wins: FloatArray = np.multiply(rest, 0.5, dtype=np.float64)
        del rest, code
        pair_lo = (upair // n).astype(np.int64)
        pair_hi = (upair % n).astype(np.int64)
        starts = np.zeros(m, dtype=np.int64)
        np.cumsum(per_ann[:-1], out=starts[1:])
        lo_ann = _take(pair_lo, pinv)
        hi_ann = ann * n
        lo_ann += hi_ann
        hi_ann += _take(pair_hi, pinv)
        return _Triples(
            ann=ann,
            lo_ann=lo_ann,
            hi_ann=hi_ann,
            pair=pinv,
            pair_lo=pair_lo,
            pair_hi=pair_hi,
            wins=wins,
            cnt=None,
            wm=wins - 1.0,
            by_annotator=True,
            ann_starts=starts,
        )
    ann = k.astype(np.int64, copy=False)
    lo_ann = lo * m
    lo_ann += ann
    hi_ann = hi * m
    hi_ann += ann
    wins = np.asarray(wl, dtype=np.float64)
    return _Triples(
        ann=ann,
        lo_ann=lo_ann,
        hi_ann=hi_ann,
        pair=pinv,
        pair_lo=(upair // n).astype(np.int64),
        pair_hi=(upair % n).astype(np.int64),
        wins=wins,
        cnt=None,
        wm=wins - 1.0,
    )


def _aggregate_triples(
    a: IntArray, b: IntArray, k: IntArray, w: FloatArray, n: int, m: int
) -> _Triples:
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    # 1 - w where a > b, w elsewhere: |1 - w| and |0 - w|, exact for outcomes in [0, 1]
    wl = np.subtract(a > b, w)
    np.abs(wl, out=wl)
    battles = _battle_triples(lo, hi, k, wl, n, m)
    if battles is not None:
        return battles
    if n * n <= lo.size:
        # the pairs first (a dense table of n * n, no larger than the votes), then the
        # (pair index, annotator) keys in n_pairs * m: the same sorted triples as the keys
        # (pair, annotator) below (the pair index ascends with the pair), counted in a
        # dense table where it is at most 4 per vote (a difficulty study's few pairs per
        # subject: 200 x 1,000 cells for 194,000 votes, 12 ms instead of 28 ms), else
        # radix sorted on fewer bits than n * n * m
        pk = lo * n
        pk += hi
        upair, pair_of_vote = _factorize(pk, n * n)
        del pk
        key = pair_of_vote * m
        key += k
        del pair_of_vote
        uniq, inv = _factorize(key, upair.size * m, dense_limit=4 * lo.size)
        wins = _bincount(inv, wl, uniq.size)
        cnt = np.bincount(inv, minlength=uniq.size).astype(np.float64)
        pinv = uniq // m
        ann = uniq - pinv * m
    else:
        key = (lo * n + hi) * m + k
        uniq, inv = _factorize(key, n * n * m)
        wins = _bincount(inv, wl, uniq.size)
        cnt = np.bincount(inv, minlength=uniq.size).astype(np.float64)
        pkey = uniq // m
        ann = uniq - pkey * m  # uniq % m: a multiply is cheaper than a second division
        upair, pinv = _factorize(pkey, n * n)
    pair_lo = (upair // n).astype(np.int64)
    pair_hi = (upair % n).astype(np.int64)
    lo_t = np.take(pair_lo, pinv)  # pkey // n and pkey % n, from the few pairs
    hi_t = np.take(pair_hi, pinv)
    lo_ann = lo_t * m
    lo_ann += ann
    hi_ann = hi_t * m
    hi_ann += ann
    pair = pinv.astype(np.int64)
    return _Triples(
        ann=ann,
        lo_ann=lo_ann,
        hi_ann=hi_ann,
        pair=pair,
        pair_lo=pair_lo,
        pair_hi=pair_hi,
        wins=wins,
        cnt=cnt,
        wm=wins - cnt,
        pair_order=_pair_order(pair, pair_lo.size),  # ascending: the sorted keys' pairs
        unit_cnt=bool(cnt.size) and float(cnt.max()) == 1.0,  # (every count is at least 1)
    )


_PAIR_ORDER_MIN = 1 << 14
"""From this many triples, sums over the pairs go through :func:`_pair_order`."""
_PAIR_ORDER_MAX = 1 << 22
"""Up to this many triples (the order's two index arrays: 64 MiB at most, and its grid as
much again while it is built); beyond, the plain ``bincount``."""


def _pair_order(pair: IntArray, n_pairs: int) -> tuple[IntArray, IntArray] | None:
    """For triples sorted by pair (``pair`` ascending, each pair's triples contiguous):
    the order ``perm`` by rank within the pair, then by pair, and ``pair[perm]``; None for
    fewer than ``_PAIR_ORDER_MIN`` or more than ``_PAIR_ORDER_MAX`` triples, or pairs of
    very unequal sizes.

    A weighted ``bincount`` over an ascending ``pair`` adds each pair's values into one
    bin one after another, each addition waiting for the one before (store to load, about
    4 ns a value: 0.84 ms for 194,000 triples of 200 pairs). Over ``pair[perm]``,
    consecutive values go to different bins while every bin still receives its own values
    in the same order, from 0.0: the same sums bit for bit (:func:`_pair_sums`), in less
    than half the time with the gather (0.39 ms there). ``perm`` is read off a
    (rank x pair) grid; where the largest pair has more than twice the mean number of
    triples that grid would be large, and the plain ``bincount`` is used."""
    size = pair.size
    if not _PAIR_ORDER_MIN <= size <= _PAIR_ORDER_MAX or n_pairs == 0:
        return None
    bounds = np.searchsorted(pair, np.arange(n_pairs + 1, dtype=np.int64))
    per_pair = np.diff(bounds)
    top = int(per_pair.max())
    if top * n_pairs > 2 * size:
        return None
    rank = np.arange(top, dtype=np.int64)[:, None]
    present = rank < per_pair[None, :]
    perm = (bounds[None, :-1] + rank)[present]
    grid_pair = np.broadcast_to(np.arange(n_pairs, dtype=np.int64), present.shape)
    return perm, grid_pair[present]


def _pair_sums(tr: _Triples, x: FloatArray, pool: _Pool | None = None) -> FloatArray:
    """``bincount(tr.pair, x)``: the sum of ``x`` over each pair's triples, the same numbers
    through ``tr.pair_order`` where there is one (``pool``: the gather's work array)."""
    n_pairs = tr.pair_lo.size
    if tr.pair_order is None:
        return _bincount(tr.pair, x, n_pairs)
    perm, pair_of = tr.pair_order
    buf = None if pool is None else pool.get()
    out = _bincount(pair_of, _take(x, perm, buf), n_pairs)
    if pool is not None:
        pool.put(buf)
    return out


def _triple_diff(tr: _Triples, s: FloatArray, out: FloatArray | None = None) -> FloatArray:
    """``s[tr.lo] - s[tr.hi]``, the same numbers, from one subtraction per pair and one
    gather (``np.take``: no bounds-checked fancy indexing)."""
    return _take(s[tr.pair_lo] - s[tr.pair_hi], tr.pair, out)


_T = TypeVar("_T", bound=np.generic)


def _take(x: npt.NDArray[_T], idx: IntArray, out: npt.NDArray[_T] | None = None) -> npt.NDArray[_T]:
    """``x[idx]`` for indices known to be in range: ``np.take`` with ``mode="clip"`` skips
    the bounds check (and its buffering), about twice as fast as ``mode="raise"``."""
    res: npt.NDArray[_T] = np.take(x, idx, out=out, mode="clip")
    return res


def _softplus(x: FloatArray) -> FloatArray:
    """``log(1 + exp(x))`` as ``max(x, 0) + log(1 + exp(-|x|))`` with NumPy's vectorised
    ``exp`` and ``log`` (``np.logaddexp`` is evaluated element by element, about three
    times slower on millions of triples). ``1 + exp(-|x|)`` rounds by at most half an
    ulp of 1..2, so the absolute error stays within a few ulps of ``max(|x|, 1)`` (a
    softplus below 1e-16 comes out as 0, which moves a log-likelihood by less than
    its own rounding)."""
    out = np.abs(x)
    np.negative(out, out=out)
    np.exp(out, out=out)
    out += 1.0
    np.log(out, out=out)
    out += np.maximum(x, 0.0)
    return out


def _expit(x: FloatArray) -> FloatArray:
    """``1 / (1 + exp(-x))`` with NumPy's vectorised ``exp`` (agrees with
    :func:`scipy.special.expit` to a few ulps, about twice as fast on large arrays)."""
    out = np.negative(x)
    with np.errstate(over="ignore"):  # exp(-x) = inf for x < -709: p = 0, as expit
        np.exp(out, out=out)
    out += 1.0
    np.reciprocal(out, out=out)
    return out


def _am_eval(tr: _Triples, s: FloatArray, a: FloatArray, pool: _Pool | None = None) -> _Point:
    """The point at ``(s, a)``, ``p = 1 / (1 + exp(-eta))`` by the operations of
    :func:`_expit` (the same numbers); its log-likelihood follows from ``p`` on demand.
    Its arrays come from ``pool`` (a new one if None)."""
    pool = _Pool(tr.pair.size) if pool is None else pool
    d = _triple_diff(tr, s, pool.get())
    ak = _take(a, tr.ann, pool.get())
    eta = np.multiply(ak, d, out=pool.get())
    p = np.negative(eta, out=pool.get())
    with np.errstate(over="ignore"):  # exp(-eta) = inf for eta < -709: p = 0, as expit
        np.exp(p, out=p)
    p += 1.0
    np.reciprocal(p, out=p)
    return _Point(tr, d, ak, eta, p, pool)


def _per_annotator(tr: _Triples, x: FloatArray, m: int) -> FloatArray:
    """Sum of ``x`` over each annotator's triples: contiguous segments where sorted."""
    if tr.ann_starts is not None:
        out: FloatArray = np.add.reduceat(x, tr.ann_starts)
        return out
    return _bincount(tr.ann, x, m)


def _cells(tr: _Triples, x: FloatArray, n: int, m: int) -> FloatArray:
    """``J[i, k]``: the sum of ``x`` over annotator ``k``'s triples with ``lo == i`` minus
    that over those with ``hi == i``, shape (n, m)."""
    out = _bincount(tr.lo_ann, x, n * m) - _bincount(tr.hi_ann, x, n * m)
    if tr.by_annotator:
        return np.ascontiguousarray(out.reshape(m, n).T)
    return out.reshape(n, m)


def _am_loglik(tr: _Triples, s: FloatArray, a: FloatArray) -> float:
    return _am_eval(tr, s, a).loglik()


def _am_grad(tr: _Triples, n: int, m: int, pt: _Point) -> tuple[FloatArray, FloatArray]:
    """Gradient of the log-likelihood at ``pt``; the rating part summed by pair first
    (one pass over the triples, then the few pairs onto their two models)."""
    r = pt.r
    akr = np.multiply(pt.ak, r, out=pt.pool.get())
    gp = _pair_sums(tr, akr, pt.pool)
    gs = _bincount(tr.pair_lo, gp, n) - _bincount(tr.pair_hi, gp, n)
    np.multiply(pt.d, r, out=akr)
    ga = _per_annotator(tr, akr, m)
    pt.pool.put(akr)
    return gs, ga


def _ability_penalty(a: FloatArray, prior_sd: float | None) -> float:
    """Negative log-density (up to a constant) of the prior on relative discriminations.

    ``sum((a_k / mean(a) - 1)**2) / (2 prior_sd**2)``: invariant to the scale
    ``(s, a) -> (s c, a / c)``, so the penalised likelihood keeps the gauge of
    eq. 7; infinite when ``mean(a) <= 0`` (no direction for the ranking).
    """
    if prior_sd is None:
        return 0.0
    c = float(a.mean())
    if not (np.isfinite(c) and c > 0):
        return math.inf
    return float(np.sum((a / c - 1.0) ** 2)) / (2.0 * prior_sd**2)


def _rating_penalty(s: FloatArray, a: FloatArray, precision: float) -> float:
    """Gauge-invariant Gaussian penalty on log-strengths: ``precision sum((mean(a) s)**2) / 2``."""
    if not precision:
        return 0.0
    c = float(a.mean())
    return precision * float(np.sum((c * (s - s.mean())) ** 2)) / 2.0


def _ability_penalty_grad(a: FloatArray, prior_sd: float | None) -> FloatArray:
    """Gradient of ``-_ability_penalty`` at normalised ``a`` (``mean(a) == 1``)."""
    if prior_sd is None:
        return np.zeros(a.size)
    u = a - 1.0
    out: FloatArray = -(u - float(u @ u) / a.size) / prior_sd**2
    return out


class _FisherSystem:
    """Expected Fisher information of am-ELO plus a rank-2 gauge term, solved by blocks.

    ``K = J + rho_s 1 1^T (on s) + rho_a 1 1^T (on a)``. ``J`` is singular exactly
    along the translation ``(1, 0)`` and the scale orbit ``(s, -a)``; the gauge
    term makes ``K`` nonsingular without changing the solution for gradients of
    the (gauge-invariant) log-likelihood, which then satisfies ``sum(dx_s) = 0``
    and ``sum(dx_a) = 0``. The ``a`` block is diagonal, so the system is reduced
    to an ``n_models x n_models`` Schur complement.
    """

    def __init__(
        self,
        tr: _Triples,
        n: int,
        m: int,
        pt: _Point,
        *,
        observed: bool = False,
        prior_precision: float = 0.0,
        rating_precision: float = 0.0,
    ) -> None:
        d, ak, v = pt.d, pt.ak, pt.v
        work = np.multiply(ak, ak, out=pt.pool.get())
        work *= v
        hp = _pair_sums(tr, work, pt.pool)
        jss = _laplacian_dense(tr.pair_lo, tr.pair_hi, hp, n)
        np.multiply(d, d, out=work)
        work *= v
        dg = _per_annotator(tr, work, m) + prior_precision
        dg = np.maximum(dg, 1e-12 * max(1.0, float(dg.max())))
        cross = np.multiply(pt.eta, v, out=work)  # ak d v
        if observed:  # the observed Hessian adds the residual to the cross block
            cross -= pt.r
        jsa = _cells(tr, cross, n, m)
        pt.pool.put(work)
        del work, cross
        self.n, self.m = n, m
        self.rho_s = float(np.mean(np.diag(jss))) / n
        self.rho_a = float(np.mean(dg)) / m
        self.dinv = 1.0 / dg
        self.jsa = jsa
        self.sum_dinv = float(self.dinv.sum())
        self.coef = self.rho_a / (1.0 + self.rho_a * self.sum_dinv)
        c = jsa * self.dinv  # J_sa D^-1
        cd1 = c.sum(axis=1)  # J_sa D^-1 1
        schur = jss + self.rho_s - c @ jsa.T + self.coef * np.outer(cd1, cd1)
        schur[np.diag_indices(n)] += rating_precision
        self.schur = schur

    def _dp_inv(self, y: FloatArray) -> FloatArray:
        """(D + rho_a 1 1^T)^-1 y for y of shape (m,) or (m, r)."""
        dy = self.dinv * y if y.ndim == 1 else self.dinv[:, None] * y
        out: FloatArray = dy - self.coef * np.multiply.outer(self.dinv, dy.sum(axis=0))
        return out

    def solve(self, gs: FloatArray, ga: FloatArray) -> tuple[FloatArray, FloatArray]:
        rhs = gs - self.jsa @ self._dp_inv(ga)
        xs = np.asarray(np.linalg.solve(self.schur, rhs), dtype=np.float64)
        xa = self._dp_inv(ga - self.jsa.T @ xs)
        return xs, xa

    def covariance(self) -> tuple[FloatArray, FloatArray]:
        """Constrained covariance: full block for s, diagonal for a."""
        n, m = self.n, self.m
        sinv = np.linalg.inv(self.schur)
        cm = self._dp_inv(self.jsa.T)  # (m, n) = Dp^-1 J_as
        diag_dp = self.dinv - self.coef * self.dinv**2
        xaa = diag_dp + np.einsum("ij,ij->i", cm @ sinv, cm)
        # u1 = K^-1 (1_n, 0), u2 = K^-1 (0, 1_m)
        u1s, u1a = self.solve(np.ones(n), np.zeros(m))
        u2s, u2a = self.solve(np.zeros(n), np.ones(m))
        us = np.column_stack([u1s, u2s])
        ua = np.column_stack([u1a, u2a])
        q = np.array([[u1s.sum(), u2s.sum()], [u1a.sum(), u2a.sum()]])
        qinv = np.linalg.inv(q)
        vss = sinv - us @ qinv @ us.T
        vaa = xaa - np.einsum("ij,jk,ik->i", ua, qinv, ua)
        return vss, vaa


def _observed_covariance(
    tr: _Triples,
    pt: _Point,
    n: int,
    m: int,
    prec: float,
    rprec: float,
) -> tuple[FloatArray, FloatArray] | None:
    """Rating covariance from the observed information (the abilities' variances from the
    expected one), or None where the observed one is not positive definite (then the
    caller uses the expected information for both)."""
    try:
        vss, vaa_obs = _FisherSystem(
            tr, n, m, pt, observed=True, prior_precision=prec, rating_precision=rprec
        ).covariance()
    except np.linalg.LinAlgError:
        return None
    dv = np.diag(vss)
    if not (np.isfinite(vss).all() and np.isfinite(vaa_obs).all()):
        return None
    if np.any(dv < 0) or np.any(vaa_obs < 0):
        return None
    if n > 1 and np.linalg.eigvalsh(vss).min() < -1e-10 * max(1.0, float(dv.max())):
        return None
    _, vaa = _FisherSystem(tr, n, m, pt, prior_precision=prec, rating_precision=rprec).covariance()
    return vss, vaa


def _normalise(s: FloatArray, a: FloatArray) -> tuple[FloatArray, FloatArray]:
    s = s - s.mean()
    c = float(a.mean())
    if not (np.isfinite(c) and c > 0):
        raise DegenerateDataError(
            f"the annotator abilities sum to {c * a.size:.3g} <= 0, so eq. 7 cannot fix the "
            "direction of the ranking: at least as many annotators vote against the ranking "
            "as with it; the majority assumption of am-ELO fails on these data"
        )
    return s * c, a / c


def _annotator_checks(d: _Battles, s_init: FloatArray, *, penalised: bool = False) -> None:
    """Raise for annotators whose ability is not identified (only empty ones if penalised)."""
    assert d.k is not None
    m = d.n_annotators
    cnt = np.bincount(d.k, minlength=m)
    empty = np.flatnonzero(cnt == 0)
    if empty.size:
        raise DegenerateDataError(
            f"annotator(s) {_fmt(empty)} have no votes, so their abilities are not identified; "
            "drop them from the index (n_annotators) first"
        )
    if penalised:
        return
    nontie = _bincount(d.k, (d.w != 0.5).astype(float), m)
    all_tie = np.flatnonzero(nontie == 0)
    if all_tie.size:
        raise DegenerateDataError(
            f"annotator(s) {_fmt(all_tie)} voted tie on every battle, so their ability is "
            "exactly 0 and carries no information about the ranking; drop their votes, or use "
            "ranking.stable_arena, which flags them",
            reason="all_ties",
            annotators=all_tie.astype(np.int64),
        )
    sep = _separated(d, s_init)
    if sep.size:
        raise DegenerateDataError(
            f"annotator(s) {_fmt(sep)} agree (or disagree) with the ranking on every vote and "
            "never vote tie, so the maximum-likelihood ability is infinite; collect more votes "
            "from them, leave them out, or pass ability_prior_sd",
            reason="separated",
            annotators=sep,
        )


def _separated(d: _Battles, s: FloatArray) -> IntArray:
    """Annotators who never vote tie and agree (or disagree) with ``s`` on every vote."""
    assert d.k is not None
    m = d.n_annotators
    cnt = np.bincount(d.k, minlength=m)
    agree = np.sign(d.w - 0.5) * np.sign(s[d.a] - s[d.b])
    n_agree = _bincount(d.k, (agree > 0).astype(float), m)
    n_dis = _bincount(d.k, (agree < 0).astype(float), m)
    return np.flatnonzero((cnt > 0) & ((n_agree == cnt) | (n_dis == cnt))).astype(np.int64)


def _raise_if_separated(d: _Battles, s: FloatArray, a: FloatArray) -> None:
    sep = _separated(d, s)
    sep = sep[np.abs(a[sep]) > 3.0]
    if sep.size:
        raise DegenerateDataError(
            f"annotator(s) {_fmt(sep)} agree (or disagree) with the fitted ranking on every "
            "vote and never vote tie, so their maximum-likelihood ability grows without bound; "
            "collect more votes from them, leave them out, or pass ability_prior_sd",
            reason="separated",
            annotators=sep,
        )


def _prepare_am(
    model_a: Any,
    model_b: Any,
    annotator: Any,
    outcome: Any,
    n_models: int | None,
    n_annotators: int | None,
    both_bad: Any,
    both_bad_as: str,
) -> _Battles:
    if annotator is None:
        raise InvalidParameterError("annotator is required for am-ELO")
    return _prepare(
        model_a,
        model_b,
        outcome,
        annotator=annotator,
        n_models=n_models,
        n_annotators=n_annotators,
        both_bad=both_bad,
        both_bad_as=both_bad_as,
    )


def _am_start(init: Any, n: int, m: int) -> tuple[FloatArray, FloatArray]:
    """``(s, a)`` from an ``init`` of :func:`am_elo`, normalised (``mean(a) == 1``)."""
    if isinstance(init, AmEloResult):
        parts: tuple[Any, Any] = (init.log_strengths, init.discriminations)
    elif isinstance(init, tuple | list) and len(init) == 2:
        parts = (init[0], init[1])
    else:
        raise InvalidParameterError(
            "init must be an AmEloResult or a pair (log_strengths, discriminations), "
            f"got {type(init).__name__}"
        )
    out: list[FloatArray] = []
    for name, x, size in (("log_strengths", parts[0], n), ("discriminations", parts[1], m)):
        arr = np.asarray(x, dtype=np.float64)
        if arr.shape != (size,):
            raise ShapeError(
                f"init {name} must have shape ({size},) for these battles, got {arr.shape}; "
                "a warm start needs the same items and annotators as the fit"
            )
        if not np.isfinite(arr).all():
            raise InvalidParameterError(f"init {name} must be finite")
        out.append(arr)
    s, a = out
    if not float(a.mean()) > 0:
        raise InvalidParameterError(
            f"init discriminations must have a positive mean, got {float(a.mean()):.3g}"
        )
    return _normalise(s, a)


def am_elo_log_likelihood(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    ratings: npt.ArrayLike,
    abilities: npt.ArrayLike,
    *,
    scale: float | None = None,
) -> float:
    """Log-likelihood of eq. 5 at given ratings and abilities.

    ``ln L = sum W ln P + (1 - W) ln (1 - P)`` with
    ``P = 1 / (1 + exp(-scale * theta_k * (R_a - R_b)))``.

    Parameters
    ----------
    model_a, model_b, annotator : array-like of int of shape (n_battles,)
        Battles and who judged them.
    outcome : array-like of float of shape (n_battles,)
        1, 0 or 0.5.
    ratings : array-like of shape (n_models,)
        Ratings ``R``.
    abilities : array-like of shape (n_annotators,)
        Abilities ``theta``.
    scale : float, optional
        Multiplier of ``theta_k (R_a - R_b)``. The default,
        ``n_annotators * ln(10) / 400``, matches :class:`AmEloResult`; pass 1.0
        for the raw eq. 4.

    Returns
    -------
    float
        The log-likelihood (natural log).

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, eq. 5.

    Examples
    --------
    >>> round(am_elo_log_likelihood([0], [1], [0], [1.0], [1.0, 0.0], [1.0], scale=1.0), 4)
    -0.3133
    """
    r = np.asarray(ratings, dtype=np.float64)
    th = np.asarray(abilities, dtype=np.float64)
    d = _prepare_am(model_a, model_b, annotator, outcome, r.size, th.size, None, "tie")
    c = th.size * ELO_C if scale is None else float(scale)
    assert d.k is not None
    eta = c * th[d.k] * (r[d.a] - r[d.b])
    return float(np.sum(d.w * log_expit(eta) + (1.0 - d.w) * log_expit(-eta)))


def am_elo_gradient(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    ratings: npt.ArrayLike,
    abilities: npt.ArrayLike,
    *,
    scale: float | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Analytic gradient of the am-ELO log-likelihood (eq. 6).

    ``d ln L / d R_n = sum c theta_k (W - P)`` over battles of ``n`` (with the
    sign of its side) and ``d ln L / d theta_m = sum c (R_i - R_j)(W - P)``
    over the votes of annotator ``m``, where ``c`` is ``scale``.

    Parameters
    ----------
    model_a, model_b, annotator, outcome, ratings, abilities, scale
        As in :func:`am_elo_log_likelihood`.

    Returns
    -------
    grad_ratings : ndarray of shape (n_models,)
    grad_abilities : ndarray of shape (n_annotators,)

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, eq. 6.

    Examples
    --------
    >>> gr, ga = am_elo_gradient([0], [1], [0], [1.0], [0.0, 0.0], [1.0], scale=1.0)
    >>> gr.tolist(), ga.tolist()
    ([0.5, -0.5], [0.0])
    """
    r = np.asarray(ratings, dtype=np.float64)
    th = np.asarray(abilities, dtype=np.float64)
    d = _prepare_am(model_a, model_b, annotator, outcome, r.size, th.size, None, "tie")
    c = th.size * ELO_C if scale is None else float(scale)
    assert d.k is not None
    diff = r[d.a] - r[d.b]
    res = d.w - expit(c * th[d.k] * diff)
    gr = _bincount(d.a, c * th[d.k] * res, r.size) - _bincount(d.b, c * th[d.k] * res, r.size)
    ga = _bincount(d.k, c * diff * res, th.size)
    return gr, ga


def am_elo(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    n_models: int | None = None,
    n_annotators: int | None = None,
    initial: float = 1000.0,
    confidence: float = 0.95,
    tol: float = 1e-10,
    max_iter: int = 200,
    both_bad: npt.ArrayLike | None = None,
    both_bad_as: BothBad = "tie",
    ability_prior_sd: float | None = None,
    rating_prior_sd: float | None = None,
    information: Literal["observed", "expected"] = "expected",
    init: AmEloResult | tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
) -> AmEloResult:
    """Annotator-aware maximum-likelihood Elo (am-ELO, eqs. 4-7).

    Each annotator ``k`` has an ability ``theta_k`` that replaces the constant
    ``C`` of m-ELO: ``P(i beats j | k) = 1 / (1 + exp(-theta_k (R_i - R_j)))``
    (eq. 4). The likelihood is invariant to ``R + c`` and to
    ``(alpha R, theta / alpha)``; translation is fixed by centring the ratings
    on ``initial`` and scale by eq. 7, ``sum(theta) = 1``, which also picks the
    direction in which the majority of annotators agree with the ranking.

    The votes are collapsed to counts per ``(item_a, item_b, annotator)``
    triple. The fit starts from m-ELO (all abilities equal) and runs Fisher
    scoring on all ``n_models + n_annotators`` parameters with the analytic
    gradient of eq. 6 and a backtracking line search; the annotator block of
    the information matrix is diagonal, so each step costs one
    ``n_models x n_models`` solve. The result does not depend on the order.

    With ``ability_prior_sd = tau`` the fit is the posterior mode (penalised
    maximum likelihood) under a Gaussian prior on each annotator's
    discrimination relative to the average annotator,
    ``theta_k / mean(theta) ~ N(1, tau**2)``: the normal random-effects
    distribution of hierarchical IRT, used here as a weakly informative prior
    in the sense of Gelman et al. (2008) and of Bayes modal estimation of IRT
    discriminations (Mislevy, 1986). The penalty
    ``sum((theta_k / mean(theta) - 1)**2) / (2 tau**2)`` is invariant to the
    scale of eq. 7, so the gauge and the ``sum(theta) = 1`` normalisation are
    unchanged; it keeps every ability finite, including annotators who agree
    (or disagree) with the ranking on every vote or vote tie on everything,
    and the standard errors then come from the penalised information (the
    Laplace approximation of the posterior).

    Parameters
    ----------
    model_a, model_b : array-like of int of shape (n_battles,)
        Indices of the two items in each battle (models in an arena,
        questions in a difficulty study).
    annotator : array-like of int of shape (n_battles,)
        Index of the annotator who voted.
    outcome : array-like of float of shape (n_battles,)
        1 if ``model_a`` won, 0 if ``model_b`` won, 0.5 for a tie.
    n_models, n_annotators : int, optional
        Numbers of items and annotators; inferred when omitted. Every item
        and annotator must appear.
    initial : float, default 1000.0
        The mean rating.
    confidence : float, default 0.95
        Coverage of the Wald intervals.
    tol : float, default 1e-10
        Stop when the squared Newton (Fisher) decrement is at most ``tol``.
    max_iter : int, default 200
        Iteration limit.
    both_bad : array-like of bool of shape (n_battles,), optional
        Marks "both responses are bad" votes.
    both_bad_as : {"tie", "drop"}, default "tie"
        Count both-bad votes as ties (LMArena) or drop them.
    ability_prior_sd : float or None, default None
        Standard deviation ``tau`` of the Gaussian prior on relative
        discriminations; None fits the plain maximum likelihood of the paper.
    rating_prior_sd : float or None, default None
        Standard deviation, in Elo points, of a Gaussian prior on the ratings
        around ``initial`` (for an average annotator: the penalty
        ``sum((mean(theta) C (R_i - initial))**2) / (2 (C sd)**2)`` is invariant to
        the scale of eq. 7). It keeps ratings finite when an item never lost
        or never won (the maximum likelihood then does not exist); None
        requires the maximum likelihood to exist.
    information : {"observed", "expected"}, default "expected"
        Which information matrix the rating standard errors and covariance invert
        (with the gauge constraints of eq. 7 handled by projection; the ability
        standard errors always come from the expected information, on which the
        annotator verdicts of :func:`ranking.stable_arena` are calibrated). The
        observed information (the negative Hessian of the log-likelihood at the
        estimate, Efron and Hinkley, 1978) keeps the rating-ability cross terms that
        the residuals add; the expected (Fisher) information drops them. With one
        ability per annotator and few votes each the expected information understates
        the rating variance: over 200 simulated studies (20 models, 42 annotators,
        ``benchmarks/bench_coverage.py``) the 95% intervals with the prior of
        :func:`ranking.stable_arena` covered 0.891 (expected) and 0.918 (observed) at
        40 votes per annotator, 0.935 and 0.946 at 100. Neither reaches 0.95 at 40
        votes: the rest is the incidental-parameter bias of the abilities, which
        spreads the ratings about 9% too wide (see
        ``benchmarks/results/bench_coverage.txt``); the bootstrap over annotators
        covers there. "observed" falls back to the expected information where the
        observed one is not positive definite.
    init : AmEloResult or (log_strengths, discriminations), optional
        A warm start: an earlier fit's result (of the same items and annotators,
        say before a few more votes arrived) or a pair of arrays of shape
        (n_models,) and (n_annotators,) (``AmEloResult.log_strengths`` and
        ``.discriminations``; any positive mean of the discriminations, the pair
        is normalised by eq. 7). The iteration then starts there with a Newton
        step instead of from m-ELO. The optimum is the same; the fit stops at the
        same Newton decrement ``tol``, which leaves each estimate within about
        ``sqrt(tol)`` of its standard error from the optimum (before the last
        step), whatever the start. None starts from m-ELO.

    Returns
    -------
    AmEloResult
        ``ratings`` (n_models,) in Elo points with mean ``initial``, for an
        annotator of average ability (``P = sigmoid(n_annotators * theta_k * C
        * (R_i - R_j))`` with ``C = ln(10)/400``); ``abilities`` (n_annotators,)
        summing to 1 (eq. 7); ``discriminations = n_annotators * abilities``;
        standard errors, Wald bounds, ranks, ``n_records``,
        ``log_likelihood``, ``iterations`` and the settings.

    Raises
    ------
    LengthMismatchError, ShapeError, InvalidParameterError
        On malformed input or options.
    DegenerateDataError
        For the cases of :func:`m_elo`, and when an annotator has no votes,
        voted tie on every battle (ability exactly 0), agrees or disagrees with
        the ranking on every vote without a tie (ability infinite), or the
        abilities cannot be normalised because they sum to 0 or less.
    ConvergenceError
        If the fit does not meet ``tol`` within ``max_iter``.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO: A Stable Framework for Arena-based LLM
    Evaluation. ICML 2025, eqs. 4-7, Algorithm 2.

    Gelman, A., Jakulin, A., Pittau, M. G. and Su, Y.-S. (2008). A weakly
    informative default prior distribution for logistic and other regression
    models. Annals of Applied Statistics 2, 1360-1383.

    Mislevy, R. J. (1986). Bayes modal estimation in item response models.
    Psychometrika 51, 177-195.

    Examples
    --------
    >>> a = [0, 1, 0, 2, 1, 2, 0, 1, 0, 2, 1, 2]
    >>> b = [1, 2, 2, 0, 0, 1, 1, 2, 2, 0, 0, 1]
    >>> k = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    >>> w = [1, 1, 0.5, 0, 0, 0.5, 1, 0.5, 1, 0, 0.5, 0]
    >>> res = am_elo(a, b, k, w)
    >>> res.abilities.sum().round(12), res.ratings.mean().round(9)
    (np.float64(1.0), np.float64(1000.0))
    >>> bool(res.ratings[0] > res.ratings[1] > res.ratings[2])
    True
    """
    _am_options(tol, max_iter, confidence, initial, ability_prior_sd, rating_prior_sd, information)
    d = _prepare_am(
        model_a, model_b, annotator, outcome, n_models, n_annotators, both_bad, both_bad_as
    )
    return _am_elo_fit(
        _AmVotes(d),
        initial=initial,
        confidence=confidence,
        tol=tol,
        max_iter=max_iter,
        both_bad_as=both_bad_as,
        ability_prior_sd=ability_prior_sd,
        rating_prior_sd=rating_prior_sd,
        information=information,
        init=init,
    )


def _am_options(
    tol: float,
    max_iter: int,
    confidence: float,
    initial: float,
    tau: float | None,
    rsd: float | None,
    information: str,
) -> None:
    """Raise for an invalid option of :func:`am_elo`."""
    _check_options(tol=tol, max_iter=max_iter, confidence=confidence)
    if not np.isfinite(initial):
        raise InvalidParameterError(f"initial must be finite, got {initial!r}")
    if tau is not None and not (np.isfinite(tau) and tau > 0):
        raise InvalidParameterError(
            f"ability_prior_sd must be a positive number or None, got {tau!r}"
        )
    if information not in ("observed", "expected"):
        raise InvalidParameterError(
            f"information must be 'observed' or 'expected', got {information!r}"
        )
    if rsd is not None and not (np.isfinite(rsd) and rsd > 0):
        raise InvalidParameterError(
            f"rating_prior_sd must be a positive number or None, got {rsd!r}"
        )


class _AmVotes:
    """What :func:`_am_elo_fit` needs of the votes, from the validated votes: the pair
    totals, the (pair, annotator) triples, the annotator checks, the votes per annotator."""

    def __init__(self, d: _Battles) -> None:
        assert d.k is not None
        self.d, self.k = d, d.k
        self.n, self.m = d.n_models, d.n_annotators
        self.n_battles = int(d.a.size)
        self.pairs = _aggregate_pairs(d.a, d.b, d.w, self.n)

    def triples(self) -> _Triples:
        return _aggregate_triples(self.d.a, self.d.b, self.k, self.d.w, self.n, self.m)

    def checks(self, s: FloatArray, penalised: bool) -> None:
        _annotator_checks(self.d, s, penalised=penalised)

    def separated(self, s: FloatArray, a: FloatArray) -> None:
        _raise_if_separated(self.d, s, a)

    def n_records(self) -> IntArray:
        return np.bincount(self.k, minlength=self.m).astype(np.int64)


class _AmCells:
    """:class:`_AmVotes` from the votes counted per ``(annotator, outcome, model_a,
    model_b)`` cell (``counts`` of shape ``(m, 3, n, n)``, outcome 0, 1/2, 1): the triples
    and pair totals are sums of integers and halves, exact in any order, so they are the
    very arrays :func:`_aggregate_triples` and :func:`_aggregate_pairs` give for those
    votes (pair-major, annotator-minor, as the sorted keys). Checks what
    :func:`_prepare` checks that cells can show (no votes at all, a model without
    votes); indices in range and no model against itself are the caller's."""

    def __init__(self, counts: IntArray) -> None:
        m, _, n, _ = counts.shape
        self.n, self.m = n, m
        flat = counts.reshape(m, 3, n * n)
        tot = flat.sum(axis=1)  # (m, n * n): votes per annotator and ordered pair
        won = flat[:, 2] + 0.5 * flat[:, 1]  # model_a's wins (halves: exact)
        up, low, tri_lo, tri_hi = _triangle(n)
        # per annotator and unordered pair (lo, hi): the votes (lo, hi) and (hi, lo)
        cnt_kp = tot[:, up] + tot[:, low]
        wins_kp = won[:, up] + (tot[:, low] - won[:, low])
        per_pair = cnt_kp.sum(axis=0)
        met = per_pair > 0
        self.n_battles = int(per_pair.sum())
        if self.n_battles == 0:
            raise DegenerateDataError(
                "there are no battles to rate (after dropping both-bad votes, if asked); "
                "collect at least one battle per model"
            )
        self.pair_lo = tri_lo[met].astype(np.int64)
        self.pair_hi = tri_hi[met].astype(np.int64)
        seen = np.zeros(n, dtype=bool)
        seen[self.pair_lo] = True
        seen[self.pair_hi] = True
        _require_all_models(seen)
        self.cnt_pk = np.ascontiguousarray(cnt_kp[:, met].T)  # (pairs, m)
        self.wins_pk = np.ascontiguousarray(wins_kp[:, met].T)
        self.pairs = (
            self.pair_lo,
            self.pair_hi,
            self.wins_pk.sum(axis=1),
            per_pair[met].astype(np.float64),
        )
        self.records = tot.sum(axis=1).astype(np.int64)

    def triples(self) -> _Triples:
        c = self.cnt_pk.ravel()
        idx = np.flatnonzero(c)
        pinv = idx // self.m
        ann = idx - pinv * self.m
        wins = self.wins_pk.ravel()[idx]
        cnt = c[idx].astype(np.float64)
        lo_ann = np.take(self.pair_lo, pinv) * self.m
        lo_ann += ann
        hi_ann = np.take(self.pair_hi, pinv) * self.m
        hi_ann += ann
        return _Triples(
            ann=ann,
            lo_ann=lo_ann,
            hi_ann=hi_ann,
            pair=pinv,
            pair_lo=self.pair_lo,
            pair_hi=self.pair_hi,
            wins=wins,
            cnt=cnt,
            wm=wins - cnt,
            pair_order=_pair_order(pinv, self.pair_lo.size),  # ascending: pair-major cells
        )

    def checks(self, s: FloatArray, penalised: bool) -> None:
        assert penalised, "the cell fit needs an ability prior"
        empty = np.flatnonzero(self.records == 0)
        if empty.size:
            raise DegenerateDataError(
                f"annotator(s) {_fmt(empty)} have no votes, so their abilities are not "
                "identified; drop them from the index (n_annotators) first"
            )

    def separated(self, s: FloatArray, a: FloatArray) -> None:  # pragma: no cover
        raise AssertionError("the cell fit needs an ability prior")

    def n_records(self) -> IntArray:
        out: IntArray = self.records
        return out


def _am_elo_cells(
    counts: IntArray,
    *,
    initial: float = 1000.0,
    confidence: float = 0.95,
    tol: float = 1e-10,
    max_iter: int = 200,
    ability_prior_sd: float,
    rating_prior_sd: float | None = None,
    information: Literal["observed", "expected"] = "expected",
    init: AmEloResult | tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    ability_start: bool = False,
) -> AmEloResult:
    """:func:`am_elo` with an ability prior (both-bad votes already ties) from the votes
    counted per ``(annotator, outcome, model_a, model_b)`` cell, ``counts`` of shape
    ``(n_annotators, 3, n_models, n_models)`` (outcome 0, 1/2, 1), for callers that hold
    those counts (:func:`ranking.stable_arena`): no pass over the votes.

    The fit sees the votes only through the (unordered pair, annotator) triples, their
    wins and counts, and the pair totals (:class:`_AmCells`): the same arrays as
    :func:`am_elo`'s up to ``_TRIPLES_SORT_MIN`` votes, so the same result bit for bit
    (beyond, ``am_elo`` keeps the votes unmerged and agrees to rounding); with
    ``ability_start``, :func:`_am_elo_started`'s start."""
    _am_options(tol, max_iter, confidence, initial, ability_prior_sd, rating_prior_sd, information)
    return _am_elo_fit(
        _AmCells(counts),
        initial=initial,
        confidence=confidence,
        tol=tol,
        max_iter=max_iter,
        both_bad_as="tie",
        ability_prior_sd=ability_prior_sd,
        rating_prior_sd=rating_prior_sd,
        information=information,
        init=init,
        ability_start=ability_start,
    )


def _am_elo_started(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    n_models: int | None = None,
    n_annotators: int | None = None,
    initial: float = 1000.0,
    confidence: float = 0.95,
    tol: float = 1e-10,
    max_iter: int = 200,
    ability_prior_sd: float | None = None,
    rating_prior_sd: float | None = None,
    information: Literal["observed", "expected"] = "expected",
) -> AmEloResult:
    """:func:`am_elo` (no both-bad votes, no ``init``) whose iteration starts after one
    Newton step on each annotator's discrimination from the m-ELO start
    (:func:`_ability_step`): the same optimum to the fit's tolerance ``tol``, in fewer
    iterations. For the callers that refit from scratch on every call
    (:func:`ranking.stable_arena`'s fits, :func:`ranking.alignment.human_difficulty_scale`);
    :func:`am_elo` keeps its documented start."""
    _am_options(tol, max_iter, confidence, initial, ability_prior_sd, rating_prior_sd, information)
    d = _prepare_am(model_a, model_b, annotator, outcome, n_models, n_annotators, None, "tie")
    return _am_elo_fit(
        _AmVotes(d),
        initial=initial,
        confidence=confidence,
        tol=tol,
        max_iter=max_iter,
        both_bad_as="tie",
        ability_prior_sd=ability_prior_sd,
        rating_prior_sd=rating_prior_sd,
        information=information,
        init=None,
        ability_start=True,
    )


def _ability_step(
    tr: _Triples,
    m: int,
    s: FloatArray,
    a: FloatArray,
    pt: _Point,
    ll: float,
    tau: float | None,
    rprec: float,
) -> tuple[FloatArray, FloatArray, _Point, float]:
    """A start for the joint iteration of :func:`_am_elo_fit` from ``(s, a)`` (the m-ELO
    strengths, equal abilities; ``pt`` and the penalised log-likelihood ``ll`` there):
    one Newton step on each annotator's discrimination with the strengths held, the
    diagonal ``a`` block of the information (what :class:`_FisherSystem` solves, less the
    coupling through the strengths), each step clipped to ``[-1, 1]``, and normalised by
    eq. 7.

    At ``a = 1`` every annotator gets the average discrimination, while the fit spreads
    them widely (arena annotators from inverted to several times the average): the joint
    Fisher iteration closes that gap at a few fold per iteration. The step costs about a
    third of an iteration and saves two to three of the eight to fourteen of the
    benchmark's fits (``benchmarks/results/bench_verdicts_cpu.txt``, section 12). The
    optimum is the same; the fit stops at the same Newton decrement ``tol``, so the
    estimates agree with those from ``a = 1`` to that tolerance (within 2e-9 Elo points
    there). The step is kept only where it raises the penalised log-likelihood and the
    abilities keep a positive mean; otherwise the start is ``(s, a)`` as given.
    """
    ga = _per_annotator(tr, np.multiply(pt.d, pt.r), m) + _ability_penalty_grad(a, tau)
    if rprec:
        ga = ga - rprec * float(s @ s) / m
    dv = np.multiply(pt.d, pt.d)
    dv *= pt.v
    ha = _per_annotator(tr, dv, m)
    if tau is not None:
        ha += 1.0 / float(tau) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.where(ha > 0, ga / np.where(ha > 0, ha, 1.0), 0.0)
    a_new = a + np.clip(step, -1.0, 1.0)
    c = float(a_new.mean())
    if not (np.isfinite(c) and c > 0):
        return s, a, pt, ll
    pt_new = _am_eval(tr, s, a_new, pt.pool)
    ll_new = pt_new.loglik() - _ability_penalty(a_new, tau) - _rating_penalty(s, a_new, rprec)
    if not ll_new > ll:
        pt_new.release()
        return s, a, pt, ll
    s_new, a_new = _normalise(s, a_new)
    pt.release()
    return s_new, a_new, pt_new.rescaled(c), ll_new


def _am_elo_fit(
    data: _AmVotes | _AmCells,
    *,
    initial: float,
    confidence: float,
    tol: float,
    max_iter: int,
    both_bad_as: str,
    ability_prior_sd: float | None,
    rating_prior_sd: float | None,
    information: str,
    init: AmEloResult | tuple[npt.ArrayLike, npt.ArrayLike] | None,
    estimates_only: bool = False,
    ability_start: bool = False,
) -> AmEloResult:
    """The body of :func:`am_elo` once the votes are summarised (``data``); with
    ``estimates_only``, the estimates without their standard errors (see
    :func:`_am_elo_estimates`); with ``ability_start`` and no ``init``, the iteration
    starts after one Newton step on each annotator's discrimination
    (:func:`_ability_step`)."""
    tau = ability_prior_sd
    prec = 0.0 if tau is None else 1.0 / float(tau) ** 2
    rsd = rating_prior_sd
    rprec = 0.0 if rsd is None else 1.0 / (ELO_C * float(rsd)) ** 2
    n, m = data.n, data.m
    lo, hi, wins, cnt = data.pairs
    start = None if init is None else _am_start(init, n, m)
    _check_connected(lo, hi, wins, cnt, n, require_mle=rsd is None)
    if rsd is None:
        s, _, _ = _bt_newton(lo, hi, wins, cnt, n, tol=tol, max_iter=100)
    else:
        s = np.zeros(n)
    data.checks(s, tau is not None)
    if (
        start is None
        and rsd is not None
        and n <= _DENSE_LIMIT
        and _connected_dense(lo, hi, wins, cnt, n, True)
    ):
        # the penalised fit starts from the m-ELO strengths where they exist (a Fisher
        # iteration fewer on arena data; the optimum is the same, to its tolerance)
        s, _, _ = _bt_newton(lo, hi, wins, cnt, n, tol=tol, max_iter=100)
    tr = data.triples()
    a = np.ones(m)
    if start is not None:  # a warm start: try Newton on the observed Hessian at once
        s, a = start
    pool = _Pool(tr.pair.size)
    pt = _am_eval(tr, s, a, pool)
    ll = pt.loglik() - _ability_penalty(a, tau) - _rating_penalty(s, a, rprec)
    if ability_start and start is None:
        s, a, pt, ll = _ability_step(tr, m, s, a, pt, ll, tau, rprec)
    dec = np.inf
    newton = start is not None
    for it in range(1, max_iter + 1):
        gs, ga = _am_grad(tr, n, m, pt)
        ga = ga + _ability_penalty_grad(a, tau)
        if rprec:
            ss = float(s @ s)
            gs = gs - rprec * s
            ga = ga - rprec * ss / m
        # Newton on the observed Hessian near the optimum (quadratic convergence),
        # Fisher scoring (always an ascent direction) otherwise or as a fallback.
        xs, xa = np.zeros(n), np.zeros(m)
        singular = False
        for observed in (True, False) if newton else (False,):
            try:
                xs, xa = _FisherSystem(
                    tr,
                    n,
                    m,
                    pt,
                    observed=observed,
                    prior_precision=prec,
                    rating_precision=rprec,
                ).solve(gs, ga)
            except np.linalg.LinAlgError:
                singular = True
                continue
            singular = False
            dec = float(gs @ xs + ga @ xa)
            if dec > 0 and np.isfinite(dec):
                break
        if singular:
            if tau is None:
                data.separated(s, a)
            raise DegenerateDataError(
                "am-ELO: the information matrix is singular, so the ratings and abilities "
                "are not identified by these votes (typically annotators with few, nearly "
                "deterministic votes); collect more votes",
                reason="singular",
            )
        t = 1.0
        while True:
            s_new, a_new = s + t * xs, a + t * xa
            pt_new = _am_eval(tr, s_new, a_new, pool)
            ll_new = (
                pt_new.loglik()
                - _ability_penalty(a_new, tau)
                - _rating_penalty(s_new, a_new, rprec)
            )
            if ll_new >= ll - 1e-12 * max(1.0, abs(ll)) or t < 1e-8:
                break
            pt_new.release()
            t *= 0.5
        newton = t == 1.0 and dec < 1.0
        s, a = _normalise(s_new, a_new)
        pt.release()
        pt = pt_new.rescaled(float(a_new.mean()))  # the c of _normalise
        del pt_new
        ll = ll_new
        if dec <= tol:
            break
        if tau is None and it % 10 == 0 and np.abs(a).max() > 10.0:
            data.separated(s, a)
    else:
        if tau is None:
            data.separated(s, a)
        raise ConvergenceError(
            f"am-ELO Fisher scoring did not converge within max_iter={max_iter} "
            f"(last decrement {dec:.3g} > tol={tol:g}); annotators with very few, nearly "
            "deterministic votes slow the fit (a prior on abilities, ability_prior_sd, keeps "
            "it finite)",
            iterations=max_iter,
            tol=tol,
            estimator="am_elo",
        )
    if estimates_only:
        ll_out = ll if tau is None and rsd is None else pt.loglik()
        return _estimates_only(data, s, a, initial, ll_out, it)
    try:
        cov: tuple[FloatArray, FloatArray] | None = None
        if information == "observed":
            cov = _observed_covariance(tr, pt, n, m, prec, rprec)
        if cov is None:
            cov = _FisherSystem(
                tr, n, m, pt, prior_precision=prec, rating_precision=rprec
            ).covariance()
        vss, vaa = cov
    except np.linalg.LinAlgError as err:
        raise DegenerateDataError(
            "am-ELO converged but its information matrix is singular, so no standard errors "
            "exist for these votes; collect more votes",
            reason="singular",
        ) from err
    rating_se = np.sqrt(np.clip(np.diag(vss), 0.0, None)) / ELO_C
    ability_se = np.sqrt(np.clip(vaa, 0.0, None)) / m
    ratings = initial + s / ELO_C
    z = float(ndtri(0.5 + confidence / 2.0))  # norm.ppf without its overhead
    lower, upper = ratings - z * rating_se, ratings + z * rating_se
    return AmEloResult(
        ratings=ratings,
        abilities=a / m,
        discriminations=a,
        rating_standard_errors=rating_se,
        ability_standard_errors=ability_se,
        lower=lower,
        upper=upper,
        ranks=ranks_from_intervals(lower, upper),
        n_records=data.n_records(),
        log_likelihood=ll if tau is None and rsd is None else pt.loglik(),
        iterations=it,
        n_battles=data.n_battles,
        confidence=float(confidence),
        initial=float(initial),
        tol=float(tol),
        max_iter=int(max_iter),
        both_bad_as=both_bad_as,
        ability_prior_sd=None if tau is None else float(tau),
        rating_covariance=vss / ELO_C**2,
    )


def _am_elo_estimates(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    n_models: int | None = None,
    ability_start: bool = False,
) -> AmEloResult:
    """:func:`am_elo` with its defaults, the estimates only: the same ratings, abilities,
    discriminations, log-likelihood and iterations bit for bit, NaN for the standard errors
    and bounds and 0 for the ranks (no covariance: its information matrix and inverse cost about
    an iteration of the fit). For :func:`ranking.arena.dynamic_delta`'s preliminary fit,
    which reads the log-strengths and discriminations only. The one way it can differ
    from :func:`am_elo` is where that one raises after converging because the information
    at the optimum is exactly singular (LAPACK's zero pivot); here the estimates are
    returned. With ``ability_start``, those of :func:`_am_elo_started` instead."""
    d = _prepare_am(model_a, model_b, annotator, outcome, n_models, None, None, "tie")
    return _am_elo_fit(
        _AmVotes(d),
        initial=1000.0,
        confidence=0.95,
        tol=1e-10,
        max_iter=200,
        both_bad_as="tie",
        ability_prior_sd=None,
        rating_prior_sd=None,
        information="expected",
        init=None,
        estimates_only=True,
        ability_start=ability_start,
    )


def _estimates_only(
    data: _AmVotes | _AmCells, s: FloatArray, a: FloatArray, initial: float, ll: float, it: int
) -> AmEloResult:
    """The :class:`AmEloResult` of :func:`_am_elo_estimates` (the fields :func:`am_elo`
    computes from ``s`` and ``a`` by the same expressions; NaN for the errors)."""
    n, m = s.size, a.size
    nan_n = np.full(n, np.nan)
    return AmEloResult(
        ratings=initial + s / ELO_C,
        abilities=a / m,
        discriminations=a,
        rating_standard_errors=nan_n,
        ability_standard_errors=np.full(m, np.nan),
        lower=nan_n,
        upper=nan_n,
        ranks=np.zeros(n, dtype=np.int64),
        n_records=data.n_records(),
        log_likelihood=ll,
        iterations=it,
        n_battles=data.n_battles,
        confidence=0.95,
        initial=float(initial),
        tol=1e-10,
        max_iter=200,
        both_bad_as="tie",
    )
