"""Adaptive collection of pairwise votes: which comparison to ask next, when to stop.

One pairwise model serves both study kinds (the "players" are the models of an
arena study or the questions of a difficulty study; an *item* compares two of
them). The schedule keeps a Bradley-Terry fit with a weak Gaussian prior
(:class:`OnlineBradleyTerry`, refitted every few votes), scores each candidate
item by the expected information gain of one more vote on it, mixes in a share of
uniform exploration (:func:`selection_probabilities`) and stops asking items
whose outcome is settled (:func:`settled_items`). :func:`weighted_bradley_terry`
fits ratings with per-vote weights (inverse-propensity weights from the recorded
selection probabilities) and a sandwich covariance.

Why the likelihood fit needs no weights, and what the weights are for: the
choice of the next item depends only on votes already observed, so the design is
ignorable for likelihood inference (Rubin 1976): the Bradley-Terry likelihood of
adaptively collected votes is the same function of the ratings as under any
other design, and the maximum-likelihood ratings and their Wald intervals keep
their meaning. Estimates that are not model fits (a model's raw win rate, the
share of votes an item got) do depend on the design; inverse-propensity weights
``q / pi`` (``pi`` the recorded probability of the shown item, ``q`` the
probability a uniform schedule would have given it) correct them
(Horvitz-Thompson), and the weighted fit targets what a uniform schedule's fit
targets also when the model does not hold, at a cost in variance.

References
----------
Rubin, D. B. (1976). Inference and missing data. Biometrika 63, 581-592.
MacKay, D. J. C. (1992). Information-based objective functions for active data
selection. Neural Computation 4, 590-604.
Horvitz, D. G. and Thompson, D. J. (1952). A generalization of sampling without
replacement from a finite universe. JASA 47, 663-685.
Chen, X., Bennett, P. N., Collins-Thompson, K. and Horvitz, E. (2013). Pairwise
ranking aggregation in a crowdsourced setting. WSDM 2013.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.sparse.linalg import spsolve
from scipy.special import expit, ndtri

from ranking._validation import as_index_array, check_same_length
from ranking.errors import ConvergenceError, InvalidParameterError, ShapeError
from ranking.pairwise import ELO_C, _check_connected
from ranking.types import FloatArray, IntArray

__all__ = [
    "DEFAULT_PRIOR_SD",
    "CollectionRun",
    "OnlineBradleyTerry",
    "WeightedBTResult",
    "expected_information_gain",
    "expected_variance_reduction",
    "interval_widths",
    "selection_probabilities",
    "settled_items",
    "simulate_collection",
    "weighted_bradley_terry",
]

DEFAULT_PRIOR_SD: float = 1000.0
"""Prior standard deviation of a rating in Elo points (weak: about 5.8 logits)."""

_DENSE_LIMIT = 600
"""Players up to this many get exact marginal variances (a dense inverse); more get the
inverse of the information's diagonal (smaller: an optimistic approximation)."""


def _z(confidence: float) -> float:
    return float(ndtri(0.5 + confidence / 2.0))


@dataclass(frozen=True)
class WeightedBTResult:
    """A weighted Bradley-Terry fit (:func:`weighted_bradley_terry`)."""

    ratings: FloatArray
    """Ratings in Elo points, shape (n_items,), mean ``initial``."""
    standard_errors: FloatArray
    """Standard errors of the ratings (Elo points), from ``covariance``."""
    lower: FloatArray
    upper: FloatArray
    """Wald interval bounds at ``confidence``."""
    covariance: FloatArray
    """Covariance of the ratings (Elo points squared), shape (n_items, n_items)."""
    log_strengths: FloatArray
    """Centred Bradley-Terry log-strengths, ``ELO_C * (ratings - initial)``."""
    iterations: int
    n_votes: int
    weight_sum: float
    covariance_kind: str
    """``sandwich`` (robust: right for inverse-propensity weights) or ``model``."""
    confidence: float
    prior_sd: float | None
    initial: float


def _newton(
    a: IntArray,
    b: IntArray,
    wins: FloatArray,
    cnt: FloatArray,
    n: int,
    *,
    precision: float,
    s0: FloatArray | None,
    tol: float,
    max_iter: int,
    strict: bool = True,
) -> tuple[FloatArray, int]:
    """Penalised Newton steps on ``sum wins d - cnt softplus(d) - precision |s|^2 / 2``.

    ``strict=False``: after ``max_iter`` steps, return where they got instead of raising.
    """
    s = np.zeros(n) if s0 is None else np.array(s0, dtype=np.float64)
    s -= s.mean()

    def objective(x: FloatArray) -> float:
        d = x[a] - x[b]
        return float(wins @ d - cnt @ np.logaddexp(0.0, d) - 0.5 * precision * (x @ x))

    f = objective(s)
    for it in range(1, max_iter + 1):
        d = s[a] - s[b]
        p = expit(d)
        r = wins - cnt * p
        g = np.bincount(a, r, n) - np.bincount(b, r, n) - precision * s
        h = cnt * p * (1.0 - p)
        step = _solve(a, b, h, g, n, precision)
        dec = float(g @ step)
        t = 1.0
        while True:
            s_new = s + t * step
            f_new = objective(s_new)
            if f_new >= f - 1e-12 * max(1.0, abs(f)) or t < 1e-10:
                break
            t *= 0.5
        s, f = s_new, f_new
        if dec <= tol:
            return s - s.mean(), it
    if not strict:
        return s - s.mean(), max_iter
    raise ConvergenceError(
        f"weighted Bradley-Terry Newton iterations did not converge within max_iter={max_iter} "
        f"(last Newton decrement {dec:.3g} > tol={tol:g}); the votes nearly separate the "
        "items: give prior_sd",
        iterations=max_iter,
        tol=tol,
        estimator="weighted_bradley_terry",
    )


def _information(a: IntArray, b: IntArray, h: FloatArray, n: int, precision: float) -> FloatArray:
    off = np.asarray(np.bincount(a * n + b, h, n * n), dtype=np.float64).reshape(n, n)
    lap: FloatArray = -(off + off.T)
    lap[np.diag_indices(n)] -= lap.sum(axis=1)
    lap[np.diag_indices(n)] += precision
    return lap


def _solve(
    a: IntArray, b: IntArray, h: FloatArray, g: FloatArray, n: int, precision: float
) -> FloatArray:
    """Solve ``(L(h) + precision I) x = g`` (centred when ``precision`` is 0)."""
    if n <= _DENSE_LIMIT:
        lap = _information(a, b, h, n, precision)
        if precision == 0.0:
            lap += np.mean(np.diag(lap)) / n  # + c 11^T: nonsingular, same centred solution
        x = np.asarray(np.linalg.solve(lap, g), dtype=np.float64)
    else:
        rows = np.concatenate([a, b, a, b, np.arange(n)])
        cols = np.concatenate([b, a, a, b, np.arange(n)])
        reg = np.full(n, precision if precision > 0 else 1e-9)
        vals = np.concatenate([-h, -h, h, h, reg])
        mat = sparse.coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsc()
        x = np.asarray(spsolve(mat, g), dtype=np.float64)  # same type on both branches
    return x - x.mean() if precision == 0.0 else x


def _pinv(info: FloatArray, centred: bool) -> FloatArray:
    """Covariance of the centred log-strengths: ``H^+`` without a prior; with one, ``P H^-1 P``
    (``P`` the centring projection: the ratings' mean is fixed, so the prior's variance of
    the common level, which the votes do not inform, is left out)."""
    n = info.shape[0]
    if centred:
        c = 1.0 / n
        out: FloatArray = np.asarray(np.linalg.inv(info + c) - c, dtype=np.float64)
        return out
    inv = np.linalg.inv(info)
    inv = inv - inv.mean(axis=0, keepdims=True)
    return np.asarray(inv - inv.mean(axis=1, keepdims=True), dtype=np.float64)


def weighted_bradley_terry(
    item_a: npt.ArrayLike,
    item_b: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    weights: npt.ArrayLike | None = None,
    n_items: int | None = None,
    prior_sd: float | None = None,
    covariance: str = "sandwich",
    initial: float = 1000.0,
    confidence: float = 0.95,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> WeightedBTResult:
    """Bradley-Terry ratings maximising a weighted (pseudo-)log-likelihood.

    Maximises ``sum_t w_t [y_t ln s(d_t) + (1 - y_t) ln s(-d_t)]`` with
    ``d_t = C (R_a - R_b)`` and ``C = ln(10) / 400`` (the m-ELO scale), minus
    ``|C R|^2 / (2 (C prior_sd)^2)`` when a prior is given. With ``weights``
    the inverse-propensity weights of adaptively collected votes, this is the
    inverse-probability-weighted estimating equation; its covariance is the
    sandwich ``H^+ M H^+`` (``H`` the weighted information, ``M`` the sum of
    ``w_t^2 (y_t - p_t)^2`` over each vote's contrast), the robust form that
    weighted estimating equations need. ``covariance="model"`` gives ``H^+``
    (right for frequency weights). Without weights and prior it is m-ELO.

    Parameters
    ----------
    item_a, item_b : array-like of int of shape (n_votes,)
        The two items (players) compared by each vote.
    outcome : array-like of float of shape (n_votes,)
        1 if ``item_a`` won, 0 if ``item_b`` won, 0.5 for a tie.
    weights : array-like of float of shape (n_votes,), optional
        Non-negative finite vote weights (default all 1).
    n_items : int, optional
        Number of items; inferred when omitted.
    prior_sd : float, optional
        Standard deviation (Elo points) of a centred Gaussian prior on the ratings;
        with it every item gets a finite rating even with no votes. Without it the
        votes must connect all items and no item may win or lose every vote.
    covariance : {"sandwich", "model"}, default "sandwich"
    initial : float, default 1000.0
        The mean rating.
    confidence : float, default 0.95
        Coverage of the Wald intervals.
    tol, max_iter
        Newton stopping rule (squared Newton decrement) and iteration limit.

    Returns
    -------
    WeightedBTResult
        Ratings centred on ``initial`` (the prior's mean, or the identifiability
        constraint ``sum(log_strengths) = 0`` without a prior).

    Raises
    ------
    LengthMismatchError, ShapeError, InvalidParameterError
        On malformed input or options.
    DegenerateDataError
        Without a prior: the votes do not connect the items, or an item never lost or
        never won.
    ConvergenceError
        If Newton's method does not meet ``tol`` within ``max_iter``.

    References
    ----------
    Bradley, R. A. and Terry, M. E. (1952). Biometrika 39, 324-345.
    Horvitz, D. G. and Thompson, D. J. (1952). JASA 47, 663-685.
    White, H. (1982). Maximum likelihood estimation of misspecified models.
    Econometrica 50, 1-25 (the sandwich covariance).

    Examples
    --------
    Unit weights give m-ELO's ratings:

    >>> res = weighted_bradley_terry([0, 0, 1, 1, 1, 2, 0], [1, 1, 0, 2, 2, 1, 2],
    ...                              [1, 1, 1, 1, 1, 1, 0.5])
    >>> res.ratings.round(1).tolist()
    [1071.6, 1000.0, 928.4]

    Weight 2 on a vote is the same point estimate as the vote given twice:

    >>> weighted_bradley_terry([0, 1, 0], [1, 0, 1], [1, 1, 1], weights=[2, 1, 1]).ratings.round(1)
    array([1095.4,  904.6])
    >>> weighted_bradley_terry([0, 1, 0, 0], [1, 0, 1, 1], [1, 1, 1, 1]).ratings.round(1)
    array([1095.4,  904.6])
    """
    if covariance not in ("sandwich", "model"):
        raise InvalidParameterError(f"covariance must be 'sandwich' or 'model', got {covariance!r}")
    if not (0.0 < confidence < 1.0):
        raise InvalidParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    if prior_sd is not None and not (math.isfinite(prior_sd) and prior_sd > 0):
        raise InvalidParameterError(f"prior_sd must be a positive finite number, got {prior_sd!r}")
    a = as_index_array(item_a, "item_a", n=n_items)
    b = as_index_array(item_b, "item_b", n=n_items)
    y = np.asarray(outcome, dtype=np.float64)
    if y.ndim != 1:
        raise ShapeError(f"outcome must be 1-D, got {y.ndim} dimension(s)")
    w = np.ones(a.size) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise ShapeError(f"weights must be 1-D, got {w.ndim} dimension(s)")
    check_same_length(item_a=a, item_b=b, outcome=y, weights=w)
    bad = ~np.isin(y, (0.0, 0.5, 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidParameterError(f"outcome must hold 1, 0 or 0.5; outcome[{i}] is {y[i]!r}")
    if not (np.all(np.isfinite(w)) and np.all(w >= 0)):
        i = int(np.flatnonzero(~(np.isfinite(w) & (w >= 0)))[0])
        raise InvalidParameterError(f"weights must be finite and >= 0; weights[{i}] is {w[i]!r}")
    if np.any(a == b):
        i = int(np.flatnonzero(a == b)[0])
        raise InvalidParameterError(f"vote {i} compares item {a[i]} with itself")
    n = (int(max(a.max(), b.max())) + 1 if a.size else 1) if n_items is None else int(n_items)
    precision = 0.0 if prior_sd is None else 1.0 / (ELO_C * prior_sd) ** 2
    keep = w > 0
    a, b, y, w = a[keep], b[keep], y[keep], w[keep]
    if precision == 0.0:
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        key = lo * n + hi
        uniq, inv = np.unique(key, return_inverse=True)
        wl = np.where(a < b, y, 1.0 - y)
        _check_connected(
            (uniq // n).astype(np.int64),
            (uniq % n).astype(np.int64),
            np.asarray(np.bincount(inv, w * wl, uniq.size), dtype=np.float64),
            np.asarray(np.bincount(inv, w, uniq.size), dtype=np.float64),
            n,
        )
    s, it = _newton(a, b, w * y, w, n, precision=precision, s0=None, tol=tol, max_iter=max_iter)
    p = expit(s[a] - s[b])
    info = _information(a, b, w * p * (1.0 - p), n, precision)
    h_inv = _pinv(info, centred=precision == 0.0)
    if covariance == "model":
        cov = h_inv
    else:
        meat = _information(a, b, (w * (y - p)) ** 2, n, 0.0)
        cov = h_inv @ meat @ h_inv
    cov_elo = cov / ELO_C**2
    se = np.sqrt(np.clip(np.diag(cov_elo), 0.0, None))
    ratings = initial + s / ELO_C
    z = _z(confidence)
    return WeightedBTResult(
        ratings=ratings,
        standard_errors=se,
        lower=ratings - z * se,
        upper=ratings + z * se,
        covariance=cov_elo,
        log_strengths=s,
        iterations=it,
        n_votes=int(a.size),
        weight_sum=float(w.sum()),
        covariance_kind=covariance,
        confidence=float(confidence),
        prior_sd=prior_sd,
        initial=float(initial),
    )


def expected_information_gain(diff: npt.ArrayLike, variance: npt.ArrayLike) -> FloatArray:
    """Expected information gain (nats) of one vote on a comparison, Laplace approximation.

    For a Gaussian belief on the difference of log-strengths with mean ``diff`` and
    variance ``variance``, one Bradley-Terry vote adds Fisher information
    ``p (1 - p)`` (``p = expit(diff)``) and the belief's entropy falls by
    ``0.5 ln(1 + p (1 - p) variance)``: largest for close, uncertain comparisons.

    Examples
    --------
    >>> expected_information_gain([0.0, 3.0], [4.0, 4.0]).round(4).tolist()
    [0.3466, 0.0831]
    """
    d = np.asarray(diff, dtype=np.float64)
    v = np.asarray(variance, dtype=np.float64)
    p = expit(d)
    out: FloatArray = 0.5 * np.log1p(p * (1.0 - p) * v)
    return out


def expected_variance_reduction(
    diff: npt.ArrayLike,
    variance_a: npt.ArrayLike,
    variance_b: npt.ArrayLike,
    *,
    wide_a: npt.ArrayLike | None = None,
    wide_b: npt.ArrayLike | None = None,
) -> FloatArray:
    """How much one vote on a comparison is expected to shrink its sides' variances.

    One Bradley-Terry vote adds Fisher information ``I = p (1 - p)`` (``p = expit(diff)``)
    to each side; a side with variance ``v`` then has ``1 / (1 / v + I)``, a reduction of
    ``v^2 I / (1 + v I)`` (the A-optimal criterion). Summed over the sides still wider
    than the target (``wide_a``, ``wide_b``; both when omitted), it sends votes to the
    widest intervals, each with the opponent that informs it most: the right criterion
    for a width target, where the entropy of :func:`expected_information_gain` would
    neglect a side that looks lopsided against everyone.

    Examples
    --------
    >>> expected_variance_reduction([0.0, 3.0], [0.1, 0.8], [0.1, 0.1]).round(4).tolist()
    [0.0049, 0.0284]
    """
    d = np.asarray(diff, dtype=np.float64)
    va = np.asarray(variance_a, dtype=np.float64)
    vb = np.asarray(variance_b, dtype=np.float64)
    p = expit(d)
    info = p * (1.0 - p)
    ra = va * va * info / (1.0 + va * info)
    rb = vb * vb * info / (1.0 + vb * info)
    if wide_a is not None:
        ra = np.where(np.asarray(wide_a, dtype=bool), ra, 0.0)
    if wide_b is not None:
        rb = np.where(np.asarray(wide_b, dtype=bool), rb, 0.0)
    out: FloatArray = ra + rb
    return out


def _top_stable(g: FloatArray, k: int) -> IntArray:
    """The positions of ``np.argsort(-g, kind="stable")[:k]`` (as a set), in O(n).

    The ``k``-th largest value is found by a partition; every value above it is taken,
    and of the values equal to it the first ones in order, as a stable sort would."""
    if k >= g.size or np.isnan(g).any():
        return np.asarray(np.argsort(-g, kind="stable")[:k], dtype=np.int64)
    kth = -np.partition(-g, k - 1)[k - 1]
    above = np.flatnonzero(g > kth)
    tied = np.flatnonzero(g == kth)[: k - above.size]
    return np.concatenate([above, tied]).astype(np.int64)


def selection_probabilities(gain: npt.ArrayLike, *, exploration: float, top: int = 4) -> FloatArray:
    """Probability that each candidate is shown next: top-``top`` by gain, plus exploration.

    With probability ``1 - exploration`` one of the ``top`` candidates with the largest
    gain is drawn uniformly (several, so annotators working at once spread over
    different items; ties keep the candidates' order), otherwise one candidate is
    drawn uniformly from all. Every candidate has probability at least
    ``exploration / n``. The probabilities sum to 1.

    Examples
    --------
    >>> selection_probabilities([0.1, 0.5, 0.3, 0.0], exploration=0.2, top=2).tolist()
    [0.05, 0.45, 0.45, 0.05]
    """
    g = np.asarray(gain, dtype=np.float64)
    if g.ndim != 1:
        raise ShapeError(f"gain must be 1-D, got {g.ndim} dimension(s)")
    if not (0.0 <= exploration <= 1.0):
        raise InvalidParameterError(f"exploration must be in [0, 1], got {exploration!r}")
    if top < 1:
        raise InvalidParameterError(f"top must be at least 1, got {top!r}")
    n = g.size
    if n == 0:
        return np.zeros(0)
    k = min(top, n)
    best = _top_stable(g, k)
    probs = np.full(n, exploration / n)
    probs[best] += (1.0 - exploration) / k
    out: FloatArray = probs
    return out


def interval_widths(variance: npt.ArrayLike, *, confidence: float = 0.95) -> FloatArray:
    """Full width (Elo points) of the Wald intervals of ratings with log-strength ``variance``.

    Examples
    --------
    >>> round(float(interval_widths([(10 * ELO_C) ** 2])[0]), 2)  # se 10 Elo points
    39.2
    """
    v = np.asarray(variance, dtype=np.float64)
    out: FloatArray = 2.0 * _z(confidence) * np.sqrt(np.clip(v, 0.0, None)) / ELO_C
    return out


def settled_items(
    diff: npt.ArrayLike,
    variance: npt.ArrayLike,
    width_a: npt.ArrayLike,
    width_b: npt.ArrayLike,
    *,
    target_width: float,
    confidence: float = 0.99,
) -> npt.NDArray[np.bool_]:
    """Which comparisons no longer need votes.

    With a ``target_width`` (Elo points, > 0) the goal is every rating's interval at most
    that wide: a comparison is settled once both of its sides' intervals are (a decided
    but lopsided comparison still narrows a wide side, so it stays, with a low gain).
    Without one (0) the goal is the outcomes: a comparison is settled once its outcome
    is decided, the difference of log-strengths more than ``z`` standard errors from
    zero (``z`` the two-sided quantile of ``confidence``).

    Examples
    --------
    >>> settled_items([0.1, 3.0, 0.1], [0.25, 0.25, 0.25], [50, 50, 50], [60, 50, 30],
    ...               target_width=55).tolist()
    [False, True, True]
    >>> settled_items([0.1, 3.0, 0.1], [0.25, 0.25, 0.25], [50, 50, 50], [60, 50, 30],
    ...               target_width=0).tolist()
    [False, True, False]
    """
    if target_width > 0:
        wa = np.asarray(width_a, dtype=np.float64)
        wb = np.asarray(width_b, dtype=np.float64)
        out: npt.NDArray[np.bool_] = (wa <= target_width) & (wb <= target_width)
        return out
    d = np.asarray(diff, dtype=np.float64)
    v = np.asarray(variance, dtype=np.float64)
    decided: npt.NDArray[np.bool_] = np.abs(d) > _z(confidence) * np.sqrt(np.clip(v, 0.0, None))
    return decided


class OnlineBradleyTerry:
    """Bradley-Terry estimates kept up to date vote by vote, for choosing the next item.

    Every item (a comparison of players ``item_a[i]`` and ``item_b[i]``) keeps its
    win and vote counts, and so does every distinct ordered pair of players (the fit
    needs only those: the log-likelihood of an item's votes depends on its two players
    alone, so an arena of 20 models has at most 380 terms however many battles it
    holds); :meth:`add` changes both in O(1). :meth:`refit` runs warm-started Newton
    steps of the fit with a Gaussian prior (``prior_sd`` Elo points) on the pairs'
    counts and recomputes each player's marginal variance (exact up to
    :data:`_DENSE_LIMIT` players, else the inverse of the information's diagonal).
    Between two refits the estimates do not change, so :meth:`open_and_gain` computes
    every item's settled flag and gain once per refit (and target) and then only
    indexes them.

    Parameters
    ----------
    item_a, item_b : array-like of int of shape (n_items,)
        The two players of each item.
    n_players : int
    prior_sd : float, default :data:`DEFAULT_PRIOR_SD`
    """

    def __init__(
        self,
        item_a: npt.ArrayLike,
        item_b: npt.ArrayLike,
        n_players: int,
        *,
        prior_sd: float = DEFAULT_PRIOR_SD,
    ) -> None:
        self.item_a = as_index_array(item_a, "item_a", n=n_players)
        self.item_b = as_index_array(item_b, "item_b", n=n_players)
        check_same_length(item_a=self.item_a, item_b=self.item_b)
        self.n_players = int(n_players)
        self.precision = 1.0 / (ELO_C * prior_sd) ** 2
        self.wins = np.zeros(self.item_a.size)
        """Wins of side a per item (ties count half)."""
        self.counts = np.zeros(self.item_a.size)
        key = self.item_a * self.n_players + self.item_b
        uniq, inv = np.unique(key, return_inverse=True)
        self._pair = np.asarray(inv, dtype=np.int64).reshape(-1)
        """Each item's ordered pair of players (index into the pair arrays)."""
        self._pair_a = np.asarray(uniq // self.n_players, dtype=np.int64)
        self._pair_b = np.asarray(uniq % self.n_players, dtype=np.int64)
        self._pair_wins = np.zeros(uniq.size)
        self._pair_counts = np.zeros(uniq.size)
        self.strength = np.zeros(self.n_players)
        """Current centred log-strengths (logits)."""
        self.variance = np.full(self.n_players, 1.0 / self.precision)
        """Current marginal variance of each log-strength."""
        self.pending = 0
        """Votes added since the last refit."""
        self._scored: dict[tuple[float, float], tuple[npt.NDArray[np.bool_], FloatArray]] = {}
        """(target_width, confidence) -> every item's settled flag and gain, this refit."""

    def add(self, item: int, outcome: float, weight: float = 1.0) -> None:
        """Count a vote on ``item`` (outcome 1 side a won, 0 side b, 0.5 tie); weight -1
        removes one (a vote superseded by a change of mind or an undo)."""
        self.wins[item] += weight * outcome
        self.counts[item] += weight
        pair = self._pair[item]
        self._pair_wins[pair] += weight * outcome
        self._pair_counts[pair] += weight
        self.pending += 1

    def add_many(
        self, items: npt.ArrayLike, outcomes: npt.ArrayLike, weights: npt.ArrayLike
    ) -> None:
        """:meth:`add` of each ``(items[j], outcomes[j], weights[j])``, by array operations.

        The counts equal those of the calls one by one in any order whenever they are
        exact sums (as they are for outcomes and weights that are multiples of 0.5);
        :attr:`pending` grows by the number of votes given.
        """
        idx = as_index_array(items, "items", n=self.item_a.size)
        y = np.asarray(outcomes, dtype=np.float64).reshape(-1)
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        check_same_length(items=idx, outcomes=y, weights=w)
        n = self.item_a.size
        wins = np.bincount(idx, w * y, minlength=n)
        counts = np.bincount(idx, w, minlength=n)
        self.wins += wins
        self.counts += counts
        m = self._pair_wins.size
        self._pair_wins += np.bincount(self._pair, wins, minlength=m)
        self._pair_counts += np.bincount(self._pair, counts, minlength=m)
        self.pending += int(idx.size)

    def refit(self, *, steps: int = 50) -> None:
        """Newton steps warm-started at the last fit, to convergence (at most ``steps``),
        and fresh marginal variances.

        Converged, the estimates are the posterior mode of the votes counted, whatever
        the order and the refits they came in: a schedule that starts cold (a restarted
        app, another process reading the same votes) reaches the same estimates and so
        draws with the same probabilities. Warm-started after a few new votes, one or two
        steps do it.
        """
        used = np.flatnonzero(self._pair_counts > 0)
        a, b = self._pair_a[used], self._pair_b[used]
        wins, cnt = self._pair_wins[used], self._pair_counts[used]
        n = self.n_players
        if used.size:
            self.strength, _ = _newton(
                a,
                b,
                wins,
                cnt,
                n,
                precision=self.precision,
                s0=self.strength,
                tol=1e-10,
                max_iter=steps,
                strict=False,
            )
        p = expit(self.strength[a] - self.strength[b])
        h = cnt * p * (1.0 - p)
        if n <= _DENSE_LIMIT:
            info = _information(a, b, h, n, self.precision)
            self.variance = np.clip(np.diag(_pinv(info, centred=False)), 0.0, None)
        else:
            diag = np.bincount(a, h, n) + np.bincount(b, h, n) + self.precision
            self.variance = 1.0 / diag
        self.pending = 0
        self._scored = {}

    def diff_and_variance(self, items: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
        """Difference of log-strengths (side a minus side b) and its variance (sides
        treated as independent) for each of ``items``."""
        idx = np.asarray(items, dtype=np.int64)
        a, b = self.item_a[idx], self.item_b[idx]
        d: FloatArray = self.strength[a] - self.strength[b]
        v: FloatArray = self.variance[a] + self.variance[b]
        return d, v

    def widths(self, *, confidence: float = 0.95) -> FloatArray:
        """Each player's current interval width (Elo points)."""
        return interval_widths(self.variance, confidence=confidence)

    def open_and_gain(
        self, items: npt.ArrayLike, *, target_width: float, confidence: float = 0.99
    ) -> tuple[npt.NDArray[np.bool_], FloatArray]:
        """For each of ``items``: whether it is settled (:func:`settled_items`) and the
        gain of one more vote on it.

        With a ``target_width`` the gain is :func:`expected_variance_reduction` of the
        sides still wider than the target; without one, the
        :func:`expected_information_gain` about its outcome. Both are computed for
        every item once per refit (they change only there) and indexed.
        """
        idx = np.asarray(items, dtype=np.int64)
        key = (float(target_width), float(confidence))
        scored = self._scored.get(key)
        if scored is None:
            scored = self._scored[key] = self._score_all(target_width, confidence)
        return scored[0][idx], scored[1][idx]

    def _score_all(
        self, target_width: float, confidence: float
    ) -> tuple[npt.NDArray[np.bool_], FloatArray]:
        """:meth:`open_and_gain` of every item, computed per pair of players and spread."""
        a, b = self._pair_a, self._pair_b
        # |d|: the gain of a comparison does not depend on which side is shown first, to
        # the last bit (expit(d) and expit(-d) round differently), so the items of the
        # two orientations of a pair tie exactly and the candidates' order breaks the tie
        d = np.abs(self.strength[a] - self.strength[b])
        va, vb = self.variance[a], self.variance[b]
        w = self.widths()
        wa, wb = w[a], w[b]
        done = settled_items(d, va + vb, wa, wb, target_width=target_width, confidence=confidence)
        if target_width > 0:
            gain = expected_variance_reduction(
                d, va, vb, wide_a=wa > target_width, wide_b=wb > target_width
            )
        else:
            gain = expected_information_gain(d, va + vb)
        # compared at single precision (7 digits): gains equal but for rounding noise
        # (players in symmetric positions, a warm-started fit vs a cold one) tie exactly,
        # and the candidates' order breaks the tie the same way in every process
        gain = gain.astype(np.float32).astype(np.float64)
        return done[self._pair], gain[self._pair]


@dataclass(frozen=True)
class CollectionRun:
    """One simulated collection (:func:`simulate_collection`)."""

    votes: int
    """Votes collected when the stopping rule held (or the budget ran out)."""
    reached: bool
    """Whether every rating interval was at most the target width."""
    ratings: FloatArray
    """The final fit's ratings (Elo points, mean 0)."""
    ipw_ratings: FloatArray | None
    """The inverse-propensity-weighted fit's ratings (adaptive runs), mean 0."""
    max_width: float
    item_a: IntArray
    item_b: IntArray
    outcome: FloatArray
    probability: FloatArray
    """Per vote: the selection probability of its item (uniform: 1 / n_items)."""


def simulate_collection(
    true_ratings: npt.ArrayLike,
    item_a: npt.ArrayLike,
    item_b: npt.ArrayLike,
    *,
    policy: str,
    target_width: float,
    rng: np.random.Generator,
    exploration: float = 0.2,
    top: int = 4,
    refit_every: int = 10,
    check_every: int = 25,
    max_votes: int = 100_000,
    prior_sd: float = DEFAULT_PRIOR_SD,
) -> CollectionRun:
    """Collect Bradley-Terry votes on ``items`` until every rating interval is narrow enough.

    ``policy="uniform"``: the least-judged item next (ties at random), as the standard
    schedule does. ``policy="adaptive"``: the adaptive schedule (online fit refitted every
    ``refit_every`` votes, settled items left out, expected information gain, top-``top``
    with ``exploration``). Every ``check_every`` votes both fit the votes (Bradley-Terry
    with the prior, model-based intervals) and stop once the widest 95% interval is at
    most ``target_width`` Elo points. Outcomes are drawn from the Bradley-Terry model with
    ``true_ratings`` (Elo points).
    """
    if policy not in ("uniform", "adaptive"):
        raise InvalidParameterError(f"policy must be 'uniform' or 'adaptive', got {policy!r}")
    truth = np.asarray(true_ratings, dtype=np.float64) * ELO_C
    ia = np.asarray(item_a, dtype=np.int64)
    ib = np.asarray(item_b, dtype=np.int64)
    n_items, n = ia.size, truth.size
    online = OnlineBradleyTerry(ia, ib, n, prior_sd=prior_sd)
    online.refit()
    judged = np.zeros(n_items)
    va, vb, vy, vp = [], [], [], []
    open_items = np.arange(n_items)
    fit: WeightedBTResult | None = None
    reached = False
    for t in range(1, max_votes + 1):
        if policy == "uniform":
            least = np.flatnonzero(judged == judged.min())
            item = int(rng.choice(least))
            prob = 1.0 / n_items
        else:
            if online.pending >= refit_every:
                online.refit()
            done, gain = online.open_and_gain(open_items, target_width=target_width)
            cand, gain = open_items[~done], gain[~done]
            if cand.size == 0:  # nothing open: keep asking (the app would stop here)
                cand = open_items
                gain = online.open_and_gain(cand, target_width=0.0)[1]
            probs = selection_probabilities(gain, exploration=exploration, top=top)
            k = int(rng.choice(cand.size, p=probs))
            item, prob = int(cand[k]), float(probs[k])
        a, b = int(ia[item]), int(ib[item])
        y = float(rng.random() < expit(truth[a] - truth[b]))
        judged[item] += 1
        online.add(item, y)
        va.append(a)
        vb.append(b)
        vy.append(y)
        vp.append(prob)
        if t % check_every == 0 or t == max_votes:
            # the same likelihood from each item's counts as frequency weights (wins as
            # outcome 1, losses as 0): the model covariance is unchanged, the cost no
            # longer grows with the votes
            used = np.flatnonzero(online.counts > 0)
            wins, cnt = online.wins[used], online.counts[used]
            fit = weighted_bradley_terry(
                np.concatenate([ia[used], ia[used]]),
                np.concatenate([ib[used], ib[used]]),
                np.concatenate([np.ones(used.size), np.zeros(used.size)]),
                weights=np.concatenate([wins, cnt - wins]),
                n_items=n,
                prior_sd=prior_sd,
                covariance="model",
            )
            if float(np.max(fit.upper - fit.lower)) <= target_width:
                reached = True
                break
    assert fit is not None
    ipw = None
    if policy == "adaptive":
        wts = 1.0 / np.asarray(vp)
        ipw = weighted_bradley_terry(
            va, vb, vy, weights=wts / wts.mean(), n_items=n, prior_sd=prior_sd
        ).ratings
        ipw = ipw - ipw.mean()
    return CollectionRun(
        votes=len(vy),
        reached=reached,
        ratings=fit.ratings - fit.ratings.mean(),
        ipw_ratings=ipw,
        max_width=float(np.max(fit.upper - fit.lower)),
        item_a=np.asarray(va, dtype=np.int64),
        item_b=np.asarray(vb, dtype=np.int64),
        outcome=np.asarray(vy),
        probability=np.asarray(vp),
    )
