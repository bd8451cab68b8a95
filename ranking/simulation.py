"""The perturbation simulation of Liu et al. (2025), sec. 5.5.

An arena-like data set is generated (a pool of items with known ratings,
annotators with about 100 votes each); a share of the annotators is then
perturbed with one of the paper's four strategies:

* ``"random"``: every vote is replaced by one of the two other outcomes,
  each with probability 1/2 (a win for A becomes a tie or a win for B; a tie
  becomes a win for A or for B);
* ``"equal"``: every vote becomes a tie;
* ``"flip"``: wins for A and for B are swapped, ties stay ties;
* ``"mixed"``: each vote is perturbed by one of the three strategies above,
  drawn uniformly at random for that vote.

For each method (online Elo averaged over shuffled orders as in the paper's
sec. 5.2, m-ELO, am-ELO, and the Stable Arena loop that excludes flagged
annotators) the study reports the paper's ranking consistency: the share of
item pairs ordered the same way with and without perturbation. It also reports
the precision, recall and F1 of the flagged annotators against the perturbed
ones, at the paper's fixed thresholds (``epsilon = 0`` and ``0.005``) and with
the dynamic threshold of :func:`ranking.stable_arena`.

References
----------
Liu, Z. et al. (2025). am-ELO: A Stable Framework for Arena-based LLM
Evaluation. ICML 2025, sec. 5.5, Figures 6 and 7.

Davidson, R. R. (1970). On extending the Bradley-Terry model to accommodate
ties in paired comparison experiments. JASA 65, 317-328.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from ranking._validation import as_index_array, check_in_range, make_rng
from ranking.arena import StableArenaResult, stable_arena
from ranking.errors import (
    ConvergenceError,
    InvalidParameterError,
    RankingInputError,
    ShapeError,
)
from ranking.pairwise import ELO_C, _Battles, _elo_rounds, _prepare, m_elo
from ranking.types import BoolArray, FloatArray, IntArray, RNGLike

__all__ = [
    "PERTURBATIONS",
    "VOTE_PERTURBATIONS",
    "PerturbationStudy",
    "PerturbationSummary",
    "PerturbationTrial",
    "PerturbedVotes",
    "SimulatedArena",
    "detection_scores",
    "perturb_outcomes",
    "perturb_votes",
    "perturbation_study",
    "ranking_consistency",
    "simulate_arena",
]

PERTURBATIONS: tuple[str, str, str, str] = ("random", "equal", "flip", "mixed")
"""The four perturbation strategies of sec. 5.5."""

VOTE_PERTURBATIONS: tuple[str, ...] = (*PERTURBATIONS, "against", "position", "too_fast")
"""The strategies of :func:`perturb_votes`: the paper's four, plus an annotator who
votes against the true ranking every time (never a tie), a position-biased one and a
too-fast one."""


@dataclass(frozen=True)
class SimulatedArena:
    """Arena battles generated from known ratings and annotator discriminations."""

    model_a: IntArray
    """First item of each battle, shape (n_battles,)."""
    model_b: IntArray
    """Second item of each battle, shape (n_battles,)."""
    annotator: IntArray
    """Annotator of each battle, shape (n_battles,)."""
    outcome: FloatArray
    """1 (A won), 0 (B won) or 0.5 (tie), shape (n_battles,)."""
    true_ratings: FloatArray
    """Ratings used to generate the votes, shape (n_models,), Elo points."""
    true_discriminations: FloatArray
    """Discrimination of each annotator (1 = m-ELO's C), shape (n_annotators,)."""
    n_models: int
    """Number of items."""
    n_annotators: int
    """Number of annotators."""
    tie_rate: float
    """Tie probability between equally rated items (Davidson's model)."""
    annotator_tie_rates: FloatArray | None = None
    """Per-annotator tie probability between equal items, shape (n_annotators,), when
    given to :func:`simulate_arena` (``tie_rate`` then unused); None otherwise."""


@dataclass(frozen=True)
class PerturbationTrial:
    """One data set, one strategy, one share of perturbed annotators.

    A trial whose fits raised is ``failed`` with the error in ``note``; its
    statistics are ``None`` (never NaN) and it is left out of the summary.
    Precision, recall and F1 are ``None`` when nobody is perturbed (F1 is
    undefined there): the ``false_flags_*`` counts say how many of the
    ``n_honest`` honest annotators were flagged.
    """

    strategy: str
    """Perturbation strategy."""
    ratio: float
    """Share of annotators perturbed (as requested)."""
    repeat: int
    """Repeat index (a fresh data set per repeat)."""
    n_perturbed: int
    """Number of perturbed annotators (``round(ratio * n_annotators)``)."""
    n_honest: int
    """Number of annotators not perturbed."""
    consistency_elo: float | None
    """Ranking consistency of online Elo (mean over shuffled orders)."""
    consistency_m_elo: float | None
    """Ranking consistency of m-ELO."""
    consistency_am_elo: float | None
    """Ranking consistency of am-ELO (all annotators, one fit)."""
    consistency_stable_arena: float | None
    """Ranking consistency of the Stable Arena loop excluding flagged annotators."""
    precision_eps0: float | None
    """Precision of the flags at the paper's epsilon = 0."""
    recall_eps0: float | None
    """Recall of the flags at epsilon = 0."""
    f1_eps0: float | None
    """F1 of the flags at epsilon = 0."""
    precision_eps0005: float | None
    """Precision of the flags at the paper's epsilon = 0.005."""
    recall_eps0005: float | None
    """Recall of the flags at epsilon = 0.005."""
    f1_eps0005: float | None
    """F1 of the flags at epsilon = 0.005."""
    precision_dynamic: float | None
    """Precision of the flags of the dynamic verdicts (:func:`ranking.stable_arena`)."""
    recall_dynamic: float | None
    """Recall of the flags of the dynamic verdicts."""
    f1_dynamic: float | None
    """F1 of the flags of the dynamic verdicts."""
    false_flags_eps0: int | None
    """Honest annotators flagged at epsilon = 0."""
    false_flags_eps0005: int | None
    """Honest annotators flagged at epsilon = 0.005."""
    false_flags_dynamic: int | None
    """Honest annotators flagged by the dynamic verdicts."""
    flagged_share_eps0: float | None
    """Share of annotators flagged at epsilon = 0."""
    flagged_share_dynamic: float | None
    """Share of annotators flagged by the dynamic verdicts."""
    failed: bool = False
    """Whether a fit of this trial raised (its statistics are then ``None``)."""
    note: str = ""
    """Empty, or the error of a failed trial (for example half the annotators
    flipped, where eq. 7 cannot pick the direction)."""


@dataclass(frozen=True)
class PerturbationSummary:
    """Means over the good (not failed) repeats of one strategy and ratio.

    A statistic is ``None`` when no repeat of the cell succeeded, and the
    detection scores (precision, recall, F1) are ``None`` when nobody is
    perturbed, where they are undefined; the false-flag rates are defined in
    every cell with a good repeat.
    """

    strategy: str
    """Perturbation strategy."""
    ratio: float
    """Share of annotators perturbed."""
    n_repeats: int
    """Repeats run in this cell."""
    n_ok: int
    """Repeats that succeeded (the means are over these)."""
    n_failed: int
    """Repeats whose fits raised (left out of the means)."""
    first_failure: str | None
    """The error of the first failed repeat, or ``None``."""
    n_perturbed: int
    """Perturbed annotators per repeat."""
    consistency_elo: float | None
    """Mean ranking consistency of online Elo."""
    consistency_m_elo: float | None
    """Mean ranking consistency of m-ELO."""
    consistency_am_elo: float | None
    """Mean ranking consistency of am-ELO."""
    consistency_stable_arena: float | None
    """Mean ranking consistency of the Stable Arena loop (exclude)."""
    precision_eps0: float | None
    """Mean precision at epsilon = 0."""
    recall_eps0: float | None
    """Mean recall at epsilon = 0."""
    f1_eps0: float | None
    """Mean F1 at epsilon = 0."""
    f1_eps0005: float | None
    """Mean F1 at epsilon = 0.005."""
    f1_dynamic: float | None
    """Mean F1 of the dynamic verdicts."""
    precision_dynamic: float | None
    """Mean precision of the dynamic verdicts."""
    recall_dynamic: float | None
    """Mean recall of the dynamic verdicts."""
    false_flags_eps0: int | None
    """Honest annotators flagged at epsilon = 0, summed over the good repeats."""
    false_flags_eps0005: int | None
    """Honest annotators flagged at epsilon = 0.005, summed over the good repeats."""
    false_flags_dynamic: int | None
    """Honest annotators flagged by the dynamic verdicts, summed over the good repeats."""
    false_flag_rate_eps0: float | None
    """``false_flags_eps0`` over the honest annotators of the good repeats."""
    false_flag_rate_eps0005: float | None
    """``false_flags_eps0005`` over the honest annotators of the good repeats."""
    false_flag_rate_dynamic: float | None
    """``false_flags_dynamic`` over the honest annotators of the good repeats."""
    flagged_share_eps0: float | None
    """Mean share flagged at epsilon = 0."""
    flagged_share_dynamic: float | None
    """Mean share flagged by the dynamic verdicts."""


@dataclass(frozen=True)
class PerturbationStudy:
    """Every trial of a perturbation study, with its settings."""

    trials: tuple[PerturbationTrial, ...]
    """One row per (repeat, strategy, ratio)."""
    summary: tuple[PerturbationSummary, ...]
    """Means over the good repeats, one row per (strategy, ratio)."""
    iterations: int
    """Number of trials run."""
    n_failed: int
    """Number of trials whose fits raised."""
    n_models: int
    """Items per data set."""
    n_annotators: int
    """Annotators per data set."""
    records_per_annotator: int
    """Mean votes per annotator."""
    n_repeats: int
    """Data sets per (strategy, ratio)."""
    elo_rounds: int
    """Shuffled orders averaged for online Elo."""
    tie_rate: float
    """Tie probability between equal items."""
    discrimination_sd: float
    """Standard deviation of the annotators' log-discrimination (heterogeneity)."""
    null_quantile: float
    """Passed to :func:`ranking.stable_arena`."""


def simulate_arena(
    *,
    n_models: int = 20,
    n_annotators: int = 42,
    records_per_annotator: int = 100,
    rating_sd: float = 120.0,
    tie_rate: float = 0.3,
    discrimination_sd: float = 0.0,
    rng: RNGLike = None,
    annotator_tie_rates: npt.ArrayLike | None = None,
) -> SimulatedArena:
    """Generate arena battles from known ratings (Davidson's tie model).

    True ratings are ``1000 + rating_sd * z_i`` with ``z_i`` evenly spaced
    normal quantiles (a spread like the 2023 Chatbot Arena the paper used:
    about 400 Elo points between the best and worst of 20 models). Each
    annotator votes on a number of battles drawn uniformly within 20% of
    ``records_per_annotator``, between two distinct items drawn uniformly, in
    random order. A vote follows Davidson's model with strengths
    ``pi_i = exp(g_k C R_i)``: ``P(A) = pi_a / D``, ``P(B) = pi_b / D``,
    ``P(tie) = nu sqrt(pi_a pi_b) / D``, with ``g_k`` the annotator's
    discrimination (1, or lognormal with ``discrimination_sd``) and ``nu``
    set so that equal items tie with probability ``tie_rate``.

    Parameters
    ----------
    n_models : int, default 20
        Items (the paper's data: 20 models).
    n_annotators : int, default 42
        Annotators (the paper's data: 42).
    records_per_annotator : int, default 100
        Mean votes per annotator (the paper's data: 102.9).
    rating_sd : float, default 120.0
        Spread of the true ratings in Elo points.
    tie_rate : float, default 0.3
        Probability of a tie between equal items, in [0, 1).
    discrimination_sd : float, default 0.0
        Standard deviation of log-discrimination across annotators.
    rng : numpy.random.Generator, int or None
        Source of randomness.
    annotator_tie_rates : array-like of float of shape (n_annotators,), optional
        Each annotator's own tie probability between equal items (its own Davidson
        ``nu``), in [0, 0.99], in place of ``tie_rate``: real annotators differ in how
        often they tie. Draws nothing from ``rng``, so the battles and the other
        outcomes' random numbers are those of the same seed without it.

    Returns
    -------
    SimulatedArena
        Battles of shape (n_battles,) with the true parameters.

    Raises
    ------
    InvalidParameterError
        If a size is too small or a rate is out of range.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, sec. 5.1 (data scale) and 5.5.
    Davidson, R. R. (1970). JASA 65, 317-328.

    Examples
    --------
    >>> sim = simulate_arena(n_models=5, n_annotators=3, records_per_annotator=10, rng=0)
    >>> sim.model_a.shape == sim.outcome.shape, sim.n_models
    (True, 5)
    """
    from scipy.stats import norm

    for name, v, low in (
        ("n_models", n_models, 2),
        ("n_annotators", n_annotators, 1),
        ("records_per_annotator", records_per_annotator, 1),
    ):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < low:
            raise InvalidParameterError(f"{name} must be an integer >= {low}, got {v!r}")
    check_in_range(tie_rate, "tie_rate", 0.0, 0.99)
    rates: FloatArray | None = None
    if annotator_tie_rates is not None:
        rates = np.asarray(annotator_tie_rates, dtype=np.float64)
        if rates.shape != (n_annotators,):
            raise ShapeError(
                f"annotator_tie_rates must have shape ({n_annotators},), got {rates.shape}"
            )
        if not np.all((rates >= 0.0) & (rates <= 0.99)):
            raise InvalidParameterError("annotator_tie_rates must lie in [0, 0.99]")
    check_in_range(rating_sd, "rating_sd", 0.0, 1e4)
    check_in_range(discrimination_sd, "discrimination_sd", 0.0, 10.0)
    gen = make_rng(rng)
    z = norm.ppf((np.arange(n_models) + 0.5) / n_models)
    ratings = 1000.0 + rating_sd * z[gen.permutation(n_models)]
    g = (
        np.exp(discrimination_sd * gen.standard_normal(n_annotators))
        if discrimination_sd
        else np.ones(n_annotators)
    )
    low = max(1, round(0.8 * records_per_annotator))
    high = max(low, round(1.2 * records_per_annotator))
    counts = gen.integers(low, high + 1, size=n_annotators)
    k = np.repeat(np.arange(n_annotators), counts)
    k = k[gen.permutation(k.size)]
    a = gen.integers(0, n_models, size=k.size)
    b = (a + gen.integers(1, n_models, size=k.size)) % n_models
    nu = 2.0 * tie_rate / (1.0 - tie_rate)
    half = 0.5 * g[k] * ELO_C * (ratings[a] - ratings[b])
    pa, pb = np.exp(half), np.exp(-half)
    pt = np.full(k.size, nu) if rates is None else (2.0 * rates / (1.0 - rates))[k]
    total = pa + pb + pt
    u = gen.random(k.size) * total
    w = np.where(u < pa, 1.0, np.where(u < pa + pb, 0.0, 0.5))
    return SimulatedArena(
        model_a=a.astype(np.int64),
        model_b=b.astype(np.int64),
        annotator=k.astype(np.int64),
        outcome=w,
        true_ratings=ratings,
        true_discriminations=g,
        n_models=int(n_models),
        n_annotators=int(n_annotators),
        tie_rate=float(tie_rate),
        annotator_tie_rates=rates,
    )


def perturb_outcomes(
    outcome: npt.ArrayLike,
    annotator: npt.ArrayLike,
    perturbed: npt.ArrayLike,
    *,
    strategy: str,
    rng: RNGLike = None,
) -> FloatArray:
    """Perturb the votes of some annotators with a strategy of sec. 5.5.

    Parameters
    ----------
    outcome : array-like of float of shape (n_battles,)
        1, 0 or 0.5.
    annotator : array-like of int of shape (n_battles,)
        Annotator of each vote.
    perturbed : array-like of int of shape (n_perturbed,)
        Indices of the annotators to perturb.
    strategy : {"random", "equal", "flip", "mixed"}
        See the module docstring.
    rng : numpy.random.Generator, int or None
        Source of randomness (for "random" and "mixed").

    Returns
    -------
    ndarray of shape (n_battles,)
        The perturbed outcomes (a copy).

    Raises
    ------
    InvalidParameterError
        For an unknown strategy or outcomes outside {0, 0.5, 1}.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, sec. 5.5.

    Examples
    --------
    >>> perturb_outcomes([1, 0, 0.5, 1], [0, 0, 0, 1], [0], strategy="flip").tolist()
    [0.0, 1.0, 0.5, 1.0]
    """
    if strategy not in PERTURBATIONS:
        raise InvalidParameterError(f"strategy must be one of {PERTURBATIONS}, got {strategy!r}")
    w = np.asarray(outcome, dtype=np.float64).copy()
    if w.ndim != 1:
        raise ShapeError(f"outcome must be 1-D, got {w.ndim} dimension(s)")
    if not np.isin(w, (0.0, 0.5, 1.0)).all():
        raise InvalidParameterError("outcome must hold 1, 0 or 0.5")
    k = as_index_array(annotator, "annotator")
    if k.size != w.size:
        raise ShapeError(f"outcome and annotator differ in length: {w.size} and {k.size}")
    ids = as_index_array(perturbed, "perturbed")
    gen = make_rng(rng)
    sel = np.flatnonzero(np.isin(k, ids))
    old = w[sel]
    choice = {"random": 0, "equal": 1, "flip": 2}.get(strategy)
    strat = gen.integers(0, 3, size=sel.size) if choice is None else np.full(sel.size, choice)
    # random: move to one of the two other outcomes with probability 1/2 each
    row = np.rint(old * 2).astype(np.int64)  # outcome 0 -> row 0, 0.5 -> 1, 1 -> 2
    others = np.array([[0.5, 1.0], [0.0, 1.0], [0.0, 0.5]])
    rnd = others[row, gen.integers(0, 2, size=sel.size)]
    new = np.where(strat == 0, rnd, np.where(strat == 1, 0.5, 1.0 - old))
    w[sel] = new
    return w


@dataclass(frozen=True)
class PerturbedVotes:
    """Votes with their display side and speed, some annotators perturbed."""

    outcome: FloatArray
    """1 (``model_a`` won), 0 or 0.5, shape (n_battles,)."""
    a_on_left: BoolArray
    """Whether ``model_a`` was displayed on the left, shape (n_battles,)."""
    left_chosen: BoolArray
    """Whether the left item was chosen, shape (n_battles,) (False on ties)."""
    fast: BoolArray
    """Whether the vote was too fast, shape (n_battles,)."""
    perturbed: BoolArray
    """Whether each annotator was perturbed, shape (n_annotators,)."""
    strategy: str
    """The strategy applied."""


def perturb_votes(
    sim: SimulatedArena,
    perturbed: npt.ArrayLike,
    *,
    strategy: str,
    left_share: float = 1.0,
    fast_share: float = 0.8,
    honest_fast_share: float = 0.02,
    rng: RNGLike = None,
) -> PerturbedVotes:
    """Perturb some annotators' votes, with display sides and fast flags.

    Each vote's display order is drawn at random (``model_a`` on the left
    with probability 1/2). Honest annotators vote as simulated, and a share
    ``honest_fast_share`` of their votes is marked fast at random. Perturbed
    annotators follow ``strategy``:

    * ``"random"``, ``"equal"``, ``"flip"``, ``"mixed"``: as
      :func:`perturb_outcomes` (sec. 5.5 of the paper);
    * ``"against"``: every vote goes to the item with the lower true rating,
      never a tie (the pure against-voter);
    * ``"position"``: each decisive vote is replaced, with probability
      ``2 left_share - 1``, by a vote for the left item, so a share
      ``left_share`` of the decisive votes goes to the left (ties stay);
    * ``"too_fast"``: a share ``fast_share`` of the votes is fast, and a fast
      vote picks the left or the right item at random (never a tie).

    Parameters
    ----------
    sim : SimulatedArena
        From :func:`simulate_arena`.
    perturbed : array-like of int of shape (n_perturbed,)
        Annotators to perturb.
    strategy : str
        One of :data:`VOTE_PERTURBATIONS`.
    left_share : float, default 1.0
        Share of decisive votes for the left item (``"position"``), in [0.5, 1].
    fast_share : float, default 0.8
        Share of fast votes (``"too_fast"``), in [0, 1].
    honest_fast_share : float, default 0.02
        Share of fast votes of every other annotator, in [0, 1].
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    PerturbedVotes
        Outcomes, display sides, left choices and fast flags of shape
        (n_battles,), the perturbed mask of shape (n_annotators,).

    Raises
    ------
    InvalidParameterError
        For an unknown strategy or a share out of range.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, sec. 5.5 (the first four strategies).
    Zheng, L. et al. (2023). Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena.
    NeurIPS 2023 (position bias).

    Examples
    --------
    >>> sim = simulate_arena(n_models=5, n_annotators=3, records_per_annotator=20, rng=0)
    >>> pv = perturb_votes(sim, [0], strategy="position", rng=0)
    >>> bool(pv.left_chosen[(sim.annotator == 0) & (pv.outcome != 0.5)].all())
    True
    """
    if strategy not in VOTE_PERTURBATIONS:
        raise InvalidParameterError(
            f"strategy must be one of {VOTE_PERTURBATIONS}, got {strategy!r}"
        )
    check_in_range(left_share, "left_share", 0.5, 1.0)
    check_in_range(fast_share, "fast_share", 0.0, 1.0)
    check_in_range(honest_fast_share, "honest_fast_share", 0.0, 1.0)
    gen = make_rng(rng)
    ids = as_index_array(perturbed, "perturbed", n=sim.n_annotators)
    mask = np.zeros(sim.n_annotators, dtype=bool)
    mask[ids] = True
    k = sim.annotator
    on = mask[k]
    n = k.size
    a_left = gen.random(n) < 0.5
    fast = gen.random(n) < honest_fast_share
    w = sim.outcome.copy()
    if strategy in PERTURBATIONS:
        w = perturb_outcomes(w, k, ids, strategy=strategy, rng=gen)
    elif strategy == "against":
        ra, rb = sim.true_ratings[sim.model_a], sim.true_ratings[sim.model_b]
        coin = (gen.random(n) < 0.5).astype(np.float64)
        w = np.where(on, np.where(ra < rb, 1.0, np.where(ra > rb, 0.0, coin)), w)
    elif strategy == "position":
        force = on & (w != 0.5) & (gen.random(n) < 2.0 * left_share - 1.0)
        w = np.where(force, a_left.astype(np.float64), w)
    else:
        f = on & (gen.random(n) < fast_share)
        fast = np.where(on, f, fast)
        w = np.where(f, (gen.random(n) < 0.5).astype(np.float64), w)
    left_chosen = (w != 0.5) & ((w == 1.0) == a_left)
    return PerturbedVotes(
        outcome=w,
        a_on_left=a_left,
        left_chosen=left_chosen,
        fast=fast.astype(bool),
        perturbed=mask,
        strategy=strategy,
    )


def ranking_consistency(scores_a: npt.ArrayLike, scores_b: npt.ArrayLike) -> float:
    """Share of item pairs ordered the same way by two score vectors.

    The paper's consistency (sec. 5.4-5.5): over all pairs ``i < j``, 1 when
    both vectors order the pair the same way, 0 when they disagree and 1/2
    when exactly one of them ties the pair. Equal to ``(1 + tau_b) / 2``
    without ties.

    Parameters
    ----------
    scores_a, scores_b : array-like of shape (n_items,)
        Higher is better.

    Returns
    -------
    float
        In [0, 1]; 1 for the same order.

    Raises
    ------
    ShapeError
        If the vectors differ in shape or have fewer than 2 items.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, sec. 5.4 (Consistency).

    Examples
    --------
    >>> ranking_consistency([3, 2, 1], [30, 10, 20])
    0.6666666666666666
    """
    x = np.asarray(scores_a, dtype=np.float64)
    y = np.asarray(scores_b, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape or x.size < 2:
        raise ShapeError(f"scores must be 1-D of the same length >= 2, got {x.shape} and {y.shape}")
    i, j = np.triu_indices(x.size, k=1)
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    agree = np.where(sx * sy > 0, 1.0, np.where(sx * sy < 0, 0.0, np.where(sx == sy, 1.0, 0.5)))
    return float(agree.mean())


def detection_scores(truth: npt.ArrayLike, flagged: npt.ArrayLike) -> tuple[float, float, float]:
    """Precision, recall and F1 of flagged annotators against perturbed ones.

    With nothing flagged precision is 1, with nothing perturbed recall is 1
    (so an empty flag set on clean data scores 1 everywhere).

    Parameters
    ----------
    truth, flagged : array-like of bool of shape (n_annotators,)
        Perturbed and flagged annotators.

    Returns
    -------
    precision, recall, f1 : float

    Raises
    ------
    ShapeError
        If the masks differ in shape.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, sec. 5.5 (F1 of the flags).

    Examples
    --------
    >>> detection_scores([True, True, False, False], [True, False, True, False])
    (0.5, 0.5, 0.5)
    """
    t = np.asarray(truth, dtype=bool)
    f = np.asarray(flagged, dtype=bool)
    if t.shape != f.shape:
        raise ShapeError(f"truth and flagged differ in shape: {t.shape} and {f.shape}")
    tp = float(np.sum(t & f))
    precision = tp / f.sum() if f.any() else 1.0
    recall = tp / t.sum() if t.any() else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return float(precision), float(recall), float(f1)


def _elo_over_orders(
    a: IntArray,
    b: IntArray,
    w: FloatArray,
    n_models: int,
    rounds: int,
    gen: np.random.Generator,
    k: float = 4.0,
    chunk: int = 200,
) -> FloatArray:
    """Online Elo (K = ``k``, scale 400, start 1000) on ``rounds`` random orders of the votes.

    ``a``, ``b`` (model indices below ``n_models``) and ``w`` are taken as they are
    (already checked by the caller). Returns shape (rounds, n_models). Each order is the
    argsort of ``len(a)`` uniform draws; they are drawn ``chunk`` orders at a time to
    bound memory, which takes the same numbers from ``gen`` as one draw of all of them.
    Shared by the perturbation study and :mod:`ranking.arena_analyses`.
    """
    d = _Battles(a=a, b=b, w=w, k=None, n_models=int(n_models), n_annotators=0)
    out = []
    done = 0
    while done < rounds:
        m = min(chunk, rounds - done)
        order = np.argsort(gen.random((m, a.size)), axis=1)
        out.append(_elo_rounds(d, order, float(k), 400.0, 10.0, 1000.0))
        done += m
    return np.concatenate(out, axis=0)


def _elo_shuffled(
    sim: SimulatedArena, w: FloatArray, rounds: int, gen: np.random.Generator
) -> FloatArray:
    d = _prepare(sim.model_a, sim.model_b, w, n_models=sim.n_models)
    out: FloatArray = _elo_over_orders(d.a, d.b, d.w, d.n_models, rounds, gen).mean(axis=0)
    return out


def _perturb_share(
    sim: SimulatedArena, ratio: float, strategy: str, gen: np.random.Generator
) -> PerturbedVotes:
    """Perturb ``round(ratio * n_annotators)`` annotators drawn at random with ``strategy``."""
    ids = gen.choice(sim.n_annotators, size=round(ratio * sim.n_annotators), replace=False)
    return perturb_votes(sim, ids, strategy=strategy, rng=gen)


def _paper_fit(sim: SimulatedArena, outcome: FloatArray) -> StableArenaResult:
    """The paper's am-ELO fit: every annotator kept, ``delta = 0``, ``epsilon = 0``."""
    return stable_arena(
        sim.model_a, sim.model_b, sim.annotator, outcome,
        n_models=sim.n_models, n_annotators=sim.n_annotators, delta=0, epsilon=0.0,
    )  # fmt: skip


_TRIAL_ERRORS = (RankingInputError, ConvergenceError, ArithmeticError, np.linalg.LinAlgError)
"""What a failed trial may raise: bad data for a fit (e.g. half the annotators
flipped), non-convergence, or a numerical fault. Anything else is a bug and propagates."""

ProgressCallback: TypeAlias = Callable[[int, int], None]
"""Called as ``progress(done, total)`` after each trial."""


def perturbation_study(
    *,
    strategies: tuple[str, ...] = PERTURBATIONS,
    ratios: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4),
    n_repeats: int = 3,
    n_models: int = 20,
    n_annotators: int = 42,
    records_per_annotator: int = 100,
    tie_rate: float = 0.3,
    discrimination_sd: float = 0.0,
    elo_rounds: int = 100,
    null_quantile: float = 0.85,
    progress: ProgressCallback | None = None,
    rng: RNGLike = None,
) -> PerturbationStudy:
    """Reproduce the perturbation experiment of sec. 5.5.

    For each repeat a fresh data set is drawn with :func:`simulate_arena`;
    for each strategy and ratio, ``round(ratio * n_annotators)`` annotators
    drawn at random are perturbed with :func:`perturb_votes` (which also
    draws the display side and the fast flag of every vote), and every method
    is fitted on the clean and on the perturbed data. Online Elo (K = 4) is
    averaged over ``elo_rounds`` shuffled orders (the paper used 1000).
    am-ELO is one fit over all annotators (annotators who only vote tie enter
    with their exact ability 0); its abilities give the flags at the paper's
    ``epsilon = 0`` and ``0.005``. The dynamic verdicts and the excluding loop
    come from :func:`ranking.stable_arena`, given each vote's ``left_chosen``
    and ``fast`` so that position-biased and too-fast annotators can be
    flagged.

    A trial whose fits raise (a :class:`~ranking.errors.RankingInputError`,
    :class:`~ranking.errors.ConvergenceError` or a numerical fault) is kept
    as ``failed`` with the error in ``note``; the summary of its cell is
    computed over the other repeats and counts the failures
    (``n_failed``, ``first_failure``), so one failure never voids a cell.

    The paper's setting (sec. 5.1-5.5): 20 models, 42 annotators with about
    103 votes each, 1000 Elo shuffles, thresholds ``epsilon = 0`` and
    ``0.005``, and up to half the annotators perturbed (pass ratios
    ``c / 42`` for ``c`` perturbed annotators, up to ``19 / 42``).

    Parameters
    ----------
    strategies : tuple of str, default the paper's four
        Perturbation strategies, from :data:`VOTE_PERTURBATIONS`.
    ratios : tuple of float, default (0, 0.1, 0.2, 0.3, 0.4)
        Shares of perturbed annotators, each in [0, 0.5]. At 0.5 the paper's
        majority assumption fails and trials may fail (see above).
    n_repeats : int, default 3
        Data sets per setting.
    n_models, n_annotators, records_per_annotator, tie_rate, discrimination_sd
        Passed to :func:`simulate_arena` (``discrimination_sd`` is the
        heterogeneity of the honest annotators: the standard deviation of
        their log-discrimination).
    elo_rounds : int, default 100
        Shuffled orders for online Elo (the paper: 1000).
    null_quantile : float, default 0.85
        Passed to :func:`ranking.stable_arena`.
    progress : callable, optional
        Called as ``progress(done, total)`` after each trial (for a progress
        bar; this function prints nothing).
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    PerturbationStudy
        ``trials`` (one per repeat, strategy and ratio) and ``summary``
        (means over the good repeats), plus the settings.

    Raises
    ------
    InvalidParameterError
        For an unknown strategy, a ratio outside [0, 0.5] or bad sizes.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, sec. 5.5, Figures 6-7.
    Chen, Y.-W. and Lin, C.-J. (2006). Combining SVMs with various feature
    selection strategies. In Feature Extraction, Springer (the F1-score).

    Examples
    --------
    >>> st = perturbation_study(strategies=("flip",), ratios=(0.0, 0.2), n_repeats=1,
    ...                         n_annotators=20, elo_rounds=5, rng=0)
    >>> clean, row = st.summary
    >>> clean.f1_eps0 is None, clean.false_flag_rate_eps0 <= 0.05
    (True, True)
    >>> row.f1_eps0 >= 0.9, row.consistency_am_elo >= row.consistency_m_elo, row.n_failed
    (True, True, 0)
    """
    for s in strategies:
        if s not in VOTE_PERTURBATIONS:
            raise InvalidParameterError(f"strategy must be one of {VOTE_PERTURBATIONS}, got {s!r}")
    for r in ratios:
        check_in_range(r, "ratio", 0.0, 0.5)
    for name, v in (("n_repeats", n_repeats), ("elo_rounds", elo_rounds)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise InvalidParameterError(f"{name} must be a positive integer, got {v!r}")
    gen = make_rng(rng)
    trials: list[PerturbationTrial] = []
    total = int(n_repeats) * len(strategies) * len(ratios)
    for rep in range(n_repeats):
        sim = simulate_arena(
            n_models=n_models,
            n_annotators=n_annotators,
            records_per_annotator=records_per_annotator,
            tie_rate=tie_rate,
            discrimination_sd=discrimination_sd,
            rng=gen,
        )
        base: _Baseline | str
        try:
            base = _Baseline(
                elo=_elo_shuffled(sim, sim.outcome, elo_rounds, gen),
                m=m_elo(sim.model_a, sim.model_b, sim.outcome).ratings,
                am=_paper_fit(sim, sim.outcome).ratings,
            )
        except _TRIAL_ERRORS as err:
            base = f"fit of the unperturbed data: {type(err).__name__}: {err}"
        for strategy in strategies:
            for ratio in ratios:
                pv = _perturb_share(sim, ratio, strategy, gen)
                cell = (strategy, float(ratio), rep, pv.perturbed)
                if isinstance(base, str):
                    trials.append(_failed_trial(*cell, base))
                else:
                    try:
                        trials.append(_trial(sim, pv, *cell, base, elo_rounds, null_quantile, gen))
                    except _TRIAL_ERRORS as err:
                        trials.append(_failed_trial(*cell, f"{type(err).__name__}: {err}"))
                if progress is not None:
                    progress(len(trials), total)
    summary = tuple(
        _summarise([t for t in trials if t.strategy == s and t.ratio == float(r)], s, float(r))
        for s in strategies
        for r in ratios
    )
    return PerturbationStudy(
        trials=tuple(trials),
        summary=summary,
        iterations=len(trials),
        n_failed=sum(t.failed for t in trials),
        n_models=int(n_models),
        n_annotators=int(n_annotators),
        records_per_annotator=int(records_per_annotator),
        n_repeats=int(n_repeats),
        elo_rounds=int(elo_rounds),
        tie_rate=float(tie_rate),
        discrimination_sd=float(discrimination_sd),
        null_quantile=float(null_quantile),
    )


@dataclass(frozen=True)
class _Baseline:
    elo: FloatArray
    m: FloatArray
    am: FloatArray


def _mean(rows: list[PerturbationTrial], field: str) -> float | None:
    vals = [getattr(t, field) for t in rows]
    vals = [v for v in vals if v is not None]
    return float(np.mean(vals)) if vals else None


def _summarise(rows: list[PerturbationTrial], strategy: str, ratio: float) -> PerturbationSummary:
    good = [t for t in rows if not t.failed]
    bad = [t for t in rows if t.failed]
    honest = sum(t.n_honest for t in good)

    def flags(field: str) -> int | None:
        return int(sum(getattr(t, field) for t in good)) if good else None

    def rate(field: str) -> float | None:
        n = flags(field)
        return None if n is None or honest == 0 else n / honest

    return PerturbationSummary(
        strategy=strategy,
        ratio=ratio,
        n_repeats=len(rows),
        n_ok=len(good),
        n_failed=len(bad),
        first_failure=bad[0].note if bad else None,
        n_perturbed=rows[0].n_perturbed if rows else 0,
        consistency_elo=_mean(good, "consistency_elo"),
        consistency_m_elo=_mean(good, "consistency_m_elo"),
        consistency_am_elo=_mean(good, "consistency_am_elo"),
        consistency_stable_arena=_mean(good, "consistency_stable_arena"),
        precision_eps0=_mean(good, "precision_eps0"),
        recall_eps0=_mean(good, "recall_eps0"),
        f1_eps0=_mean(good, "f1_eps0"),
        f1_eps0005=_mean(good, "f1_eps0005"),
        f1_dynamic=_mean(good, "f1_dynamic"),
        precision_dynamic=_mean(good, "precision_dynamic"),
        recall_dynamic=_mean(good, "recall_dynamic"),
        false_flags_eps0=flags("false_flags_eps0"),
        false_flags_eps0005=flags("false_flags_eps0005"),
        false_flags_dynamic=flags("false_flags_dynamic"),
        false_flag_rate_eps0=rate("false_flags_eps0"),
        false_flag_rate_eps0005=rate("false_flags_eps0005"),
        false_flag_rate_dynamic=rate("false_flags_dynamic"),
        flagged_share_eps0=_mean(good, "flagged_share_eps0"),
        flagged_share_dynamic=_mean(good, "flagged_share_dynamic"),
    )


def _failed_trial(
    strategy: str, ratio: float, rep: int, truth: BoolArray, note: str
) -> PerturbationTrial:
    n_pert = int(np.sum(truth))
    return PerturbationTrial(
        strategy=strategy,
        ratio=ratio,
        repeat=rep,
        n_perturbed=n_pert,
        n_honest=int(truth.size) - n_pert,
        consistency_elo=None,
        consistency_m_elo=None,
        consistency_am_elo=None,
        consistency_stable_arena=None,
        precision_eps0=None,
        recall_eps0=None,
        f1_eps0=None,
        precision_eps0005=None,
        recall_eps0005=None,
        f1_eps0005=None,
        precision_dynamic=None,
        recall_dynamic=None,
        f1_dynamic=None,
        false_flags_eps0=None,
        false_flags_eps0005=None,
        false_flags_dynamic=None,
        flagged_share_eps0=None,
        flagged_share_dynamic=None,
        failed=True,
        note=note,
    )


def _trial(
    sim: SimulatedArena,
    pv: PerturbedVotes,
    strategy: str,
    ratio: float,
    rep: int,
    truth: BoolArray,
    base: _Baseline,
    elo_rounds: int,
    null_quantile: float,
    gen: np.random.Generator,
) -> PerturbationTrial:
    m = sim.n_annotators
    w = pv.outcome
    args = (sim.model_a, sim.model_b, sim.annotator, w)
    elo_r = _elo_shuffled(sim, w, elo_rounds, gen)
    m_r = m_elo(sim.model_a, sim.model_b, w).ratings
    paper = _paper_fit(sim, w)
    dyn = stable_arena(
        *args,
        n_models=sim.n_models,
        n_annotators=m,
        null_quantile=null_quantile,
        left_chosen=pv.left_chosen,
        fast=pv.fast,
    )
    excl = stable_arena(
        *args,
        n_models=sim.n_models,
        n_annotators=m,
        action="exclude",
        null_quantile=null_quantile,
        left_chosen=pv.left_chosen,
        fast=pv.fast,
    )
    # pending (unbounded) annotators are never flags
    theta = np.nan_to_num(paper.abilities, nan=np.inf)
    f0 = theta <= 0.0
    f5 = theta <= 0.005
    fd = np.asarray(dyn.status) == "flagged"
    honest = ~truth
    defined = bool(truth.any())  # precision, recall and F1 need a perturbed annotator
    p0, r0, f10 = detection_scores(truth, f0) if defined else (None, None, None)
    p5, r5, f15 = detection_scores(truth, f5) if defined else (None, None, None)
    pdn, rdn, f1d = detection_scores(truth, fd) if defined else (None, None, None)
    return PerturbationTrial(
        strategy=strategy,
        ratio=ratio,
        repeat=rep,
        n_perturbed=int(truth.sum()),
        n_honest=int(honest.sum()),
        consistency_elo=ranking_consistency(base.elo, elo_r),
        consistency_m_elo=ranking_consistency(base.m, m_r),
        consistency_am_elo=ranking_consistency(base.am, paper.ratings),
        consistency_stable_arena=ranking_consistency(base.am, excl.ratings),
        precision_eps0=p0,
        recall_eps0=r0,
        f1_eps0=f10,
        precision_eps0005=p5,
        recall_eps0005=r5,
        f1_eps0005=f15,
        precision_dynamic=pdn,
        recall_dynamic=rdn,
        f1_dynamic=f1d,
        false_flags_eps0=int(np.sum(f0 & honest)),
        false_flags_eps0005=int(np.sum(f5 & honest)),
        false_flags_dynamic=int(np.sum(fd & honest)),
        flagged_share_eps0=float(f0.mean()),
        flagged_share_dynamic=float(fd.mean()),
    )
