"""The Stable Arena loop on each connected component of a comparison graph.

Ratings are comparable only within a connected component of the comparisons (two
groups of models, or of questions, never compared with each other share no scale).
:func:`stable_arena_components` fits :func:`ranking.arena.stable_arena` on each
component on its own and gives every annotator one status, from the component
where the verdict is most severe and, among those, where they voted most.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ranking._validation import as_index_array, check_same_length
from ranking.arena import Evidence, StableArenaResult, dynamic_delta, stable_arena
from ranking.errors import ConvergenceError, InvalidParameterError, RankingInputError
from ranking.graph import component_members, connected_components
from ranking.types import BoolArray, FloatArray, IntArray

__all__ = [
    "FIT_ERRORS",
    "ComponentFit",
    "DeltaCache",
    "StableArenaComponentsResult",
    "stable_arena_components",
]

FIT_ERRORS: tuple[type[Exception], ...] = (
    RankingInputError,
    ConvergenceError,
    np.linalg.LinAlgError,
    FloatingPointError,
)
"""Why the fit of one component can fail on the data so far (recorded, not raised)."""

_SEVERITY = ("flagged", "reliable", "pending")
"""Which status an annotator takes when components disagree: the first present."""


class DeltaCache:
    """The dynamic ``delta`` of :func:`ranking.arena.dynamic_delta`, recomputed only when needed.

    ``delta`` (the vote count above which an annotator is rated) changes slowly
    with the data, and computing it costs a preliminary am-ELO fit as large as
    the main one. It is recomputed when the annotators change, below
    ``always_below`` compared votes, or once the compared votes have grown or
    shrunk by ``tolerance`` since it was last computed.

    Parameters
    ----------
    tolerance : float, default=0.02
        Relative change in the number of compared votes that triggers a recomputation.
    always_below : int, default=5000
        Below this many compared votes, ``delta`` is recomputed every time.

    Examples
    --------
    >>> cache = DeltaCache()
    >>> cache.value is None
    True
    """

    def __init__(self, *, tolerance: float = 0.02, always_below: int = 5000) -> None:
        self.tolerance = tolerance
        self.always_below = always_below
        self.value: int | None = None
        """The last ``delta`` computed; None before the first."""
        self.at_votes = 0
        """Compared votes when ``value`` was computed."""
        self.at_annotators = 0
        """Annotators when ``value`` was computed."""

    def delta(
        self,
        a: IntArray,
        b: IntArray,
        k: IntArray,
        outcome: FloatArray,
        n_items: int,
        n_annotators: int,
    ) -> int:
        """``dynamic_delta`` of these votes, or the cached value when it is still close.

        Raises whatever :func:`ranking.arena.dynamic_delta` raises when it is recomputed.
        """
        n = int(a.size)
        stale = (
            self.value is None
            or n < self.always_below
            or n_annotators != self.at_annotators
            or abs(n - self.at_votes) > self.tolerance * self.at_votes
        )
        if stale or self.value is None:
            self.value = dynamic_delta(a, b, outcome, annotator=k, n_models=n_items)
            self.at_votes, self.at_annotators = n, n_annotators
        return self.value


@dataclass(frozen=True)
class ComponentFit:
    """The Stable Arena fit of one connected component."""

    members: IntArray
    """Items of the component (global indices, increasing), shape (n_members,); the fit
    indexes them locally, ``result.ratings[i]`` is the rating of ``members[i]``."""
    comparisons: IntArray
    """Votes on each member, shape (n_members,)."""
    votes: IntArray
    """Votes of each annotator in this component, shape (n_annotators,)."""
    result: StableArenaResult | None
    """The fit; None when it failed (see ``error``)."""
    error: Exception | None
    """Why the fit failed (one of :data:`FIT_ERRORS`); None when it succeeded."""
    delta_rule: int | None
    """The vote threshold the dynamic rule gave before the cap at the median vote count
    minus one (``result.delta`` is the capped value used); None when the fit failed."""
    delta_at_votes: int | None
    """Compared votes when the dynamic rule was last computed (see :class:`DeltaCache`);
    None when no rule was computed (the cap alone was used)."""

    @property
    def fitted(self) -> IntArray:
        """Annotators whose ability was estimated (in the ratings, finite standard error)."""
        if self.result is None:
            return np.zeros(0, dtype=np.int64)
        r = self.result
        return np.flatnonzero(r.in_ratings & np.isfinite(r.ability_standard_errors)).astype(
            np.int64
        )


@dataclass(frozen=True)
class StableArenaComponentsResult:
    """Stable Arena per connected component, with one status per annotator."""

    component: IntArray
    """Component of each item, shape (n_items,), numbered as
    :func:`ranking.graph.connected_components` does (largest first); -1 for items in no
    vote."""
    vote_component: IntArray
    """Component of each vote, shape (n_votes,)."""
    fits: tuple[ComponentFit, ...]
    """One fit per component, in component order."""
    home: IntArray
    """Per annotator, shape (n_annotators,): the component whose verdict the annotator
    takes (flagged in any component: flagged; otherwise reliable before pending; ties
    go to the component with most of their votes, then the lower number); -1 when no
    component they voted in could be fitted."""

    @property
    def n_components(self) -> int:
        """Number of connected components."""
        return len(self.fits)

    @property
    def status(self) -> tuple[str, ...]:
        """Each annotator's status, from their home component (``pending`` without one)."""
        out: list[str] = []
        for j, g in enumerate(self.home.tolist()):
            res = self.fits[g].result if g >= 0 else None
            out.append(res.status[j] if res is not None else "pending")
        return tuple(out)


def stable_arena_components(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    n_items: int,
    n_annotators: int,
    both_bad: npt.ArrayLike | None = None,
    left_chosen: npt.ArrayLike | None = None,
    fast: npt.ArrayLike | None = None,
    item: npt.ArrayLike | None = None,
    delta_caches: MutableMapping[int, DeltaCache] | None = None,
    evidence: tuple[Evidence, ...] = (),
    warm_starts: MutableMapping[int, ComponentFit] | None = None,
) -> StableArenaComponentsResult:
    """Fit the Stable Arena loop on each connected component and merge the statuses.

    Each component of the graph of compared items is fitted by
    :func:`ranking.arena.stable_arena` on its own votes, with every annotator kept
    in the index space (so per-annotator arrays of every fit have ``n_annotators``
    entries). The dynamic ``delta`` is capped at the median vote count (over the
    annotators voting in the component) minus one, so that at least half of them are
    judged; when the rule cannot be computed yet the cap alone is used. A fit that
    fails with one of :data:`FIT_ERRORS` is recorded in its :class:`ComponentFit`.

    Parameters
    ----------
    model_a, model_b : array-like of int of shape (n_votes,)
        The two items of each vote (models, or questions), in ``[0, n_items)``.
    annotator : array-like of int of shape (n_votes,)
        Who voted, in ``[0, n_annotators)``.
    outcome : array-like of float of shape (n_votes,)
        1 when ``model_a`` won, 0 when ``model_b`` won, 0.5 for a tie.
    n_items : int
        Number of items.
    n_annotators : int
        Number of annotators.
    both_bad, left_chosen, fast : array-like of bool of shape (n_votes,), optional
        Passed to :func:`ranking.arena.stable_arena` for each component's votes.
    item : array-like of int of shape (n_votes,), optional
        The rated item (battle or pair) of each vote, for the agreement signal.
    delta_caches : mutable mapping of int to DeltaCache, optional
        Caches of the dynamic delta, keyed by the smallest item of each component;
        missing ones are added. Without it the rule is computed afresh for each
        component.
    evidence : tuple of Evidence, default ()
        Per-annotator tests from outside the battles (gold items, swapped re-tests),
        passed to every component's :func:`ranking.arena.stable_arena` (annotators keep
        their global index, so each is adjusted across the same annotators everywhere).
    warm_starts : mutable mapping of int to ComponentFit, optional
        The previous call's fits, keyed like ``delta_caches``; each component whose
        previous fit had the same members and annotators starts its am-ELO fits there
        (``stable_arena(init=...)``: the same result to the fits' tolerance, in fewer
        iterations when a few votes were added). Updated with this call's fits.

    Returns
    -------
    StableArenaComponentsResult
        The components, one :class:`ComponentFit` each, and each annotator's home
        component.

    Raises
    ------
    LengthMismatchError
        If the vote arrays have different lengths.
    InvalidParameterError
        If an index is out of range or ``n_items`` / ``n_annotators`` is negative.

    References
    ----------
    Liu, Z. et al. (2025). am-ELO: A Stable Framework for Arena-based LLM Evaluation.
    ICML 2025, Algorithm 3 (the Stable Arena loop, run here per component; components
    as in :func:`ranking.graph.connected_components`).

    Examples
    --------
    Two pairs of models never compared with each other form two components:

    >>> from ranking.components import stable_arena_components
    >>> res = stable_arena_components(
    ...     [0, 0, 2, 2], [1, 1, 3, 3], [0, 1, 0, 1], [1.0, 0.0, 1.0, 1.0],
    ...     n_items=4, n_annotators=2,
    ... )
    >>> res.component.tolist(), res.n_components
    ([0, 0, 1, 1], 2)
    """
    for name, v in (("n_items", n_items), ("n_annotators", n_annotators)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
            raise InvalidParameterError(f"{name} must be a non-negative integer, got {v!r}")
    m = int(n_annotators)
    a_glob = as_index_array(model_a, "model_a", n=int(n_items))
    b_glob = as_index_array(model_b, "model_b", n=int(n_items))
    k = as_index_array(annotator, "annotator", n=m)
    w = np.asarray(outcome, dtype=np.float64)
    check_same_length(model_a=a_glob, model_b=b_glob, annotator=k, outcome=w)
    flags = {
        "both_bad": _as_flags(both_bad, "both_bad", w.size),
        "left_chosen": _as_flags(left_chosen, "left_chosen", w.size),
        "fast": _as_flags(fast, "fast", w.size),
    }
    items = None if item is None else as_index_array(item, "item")
    if items is not None:
        check_same_length(outcome=w, item=items)

    component = connected_components(*_distinct_pairs(a_glob, b_glob, int(n_items)), int(n_items))
    vote_component = component[a_glob]
    groups = component_members(component)
    fits: list[ComponentFit] = []
    for g, members in enumerate(groups):
        # one component holds every vote: no copies of the vote arrays; otherwise the
        # component's rows in ascending order, gathered (the arrays' boolean indexing by
        # ``vote_component == g`` gives the same rows in the same order, but scanning the
        # mask once per array costs about five times as much where components interleave)
        sel: slice | IntArray = (
            slice(None) if len(groups) == 1 else np.flatnonzero(vote_component == g)
        )
        cache = None
        if delta_caches is not None:
            cache = delta_caches.setdefault(int(members[0]), DeltaCache())
        prev = None if warm_starts is None else warm_starts.get(int(members[0]))
        init = None
        if (
            prev is not None
            and prev.result is not None
            and prev.votes.size == m
            and np.array_equal(prev.members, members)
        ):
            init = prev.result
        fits.append(
            _fit_component(
                members,
                _Votes(
                    a=a_glob[sel],
                    b=b_glob[sel],
                    k=k[sel],
                    outcome=w[sel],
                    both_bad=None if flags["both_bad"] is None else flags["both_bad"][sel],
                    left_chosen=None if flags["left_chosen"] is None else flags["left_chosen"][sel],
                    fast=None if flags["fast"] is None else flags["fast"][sel],
                    item=None if items is None else items[sel],
                ),
                m,
                int(n_items),
                cache,
                evidence,
                init,
            )
        )
        if warm_starts is not None and fits[-1].result is not None:
            warm_starts[int(members[0])] = fits[-1]
    return StableArenaComponentsResult(
        component=component,
        vote_component=vote_component,
        fits=tuple(fits),
        home=_homes(fits, m),
    )


def _distinct_pairs(a: IntArray, b: IntArray, n: int) -> tuple[IntArray, IntArray]:
    """The distinct ``(a, b)`` pairs: the same graph with one edge per pair (all of them
    when ``n**2`` exceeds four times the comparisons, where marking the pairs would cost
    more than it saves)."""
    if a.size == 0 or n * n > 4 * a.size:
        return a, b
    seen = np.zeros(n * n, dtype=bool)
    key = a * n
    key += b
    seen[key] = True
    pairs = np.flatnonzero(seen)
    return pairs // n, pairs % n


def _as_flags(x: npt.ArrayLike | None, name: str, n: int) -> BoolArray | None:
    if x is None:
        return None
    arr = np.asarray(x, dtype=bool)
    check_same_length(outcome=np.empty(n), **{name: arr})
    return arr


@dataclass(frozen=True)
class _Votes:
    """The votes of one component (items still global)."""

    a: IntArray
    b: IntArray
    k: IntArray
    outcome: FloatArray
    both_bad: BoolArray | None
    left_chosen: BoolArray | None
    fast: BoolArray | None
    item: IntArray | None


def _fit_component(
    members: IntArray,
    v: _Votes,
    m: int,
    n_items: int,
    cache: DeltaCache | None,
    evidence: tuple[Evidence, ...] = (),
    init: StableArenaResult | None = None,
) -> ComponentFit:
    if members.size == n_items:  # every item: the local indices are the global ones
        a, b = v.a, v.b
    else:
        local = np.full(n_items, -1, dtype=np.int64)
        local[members] = np.arange(members.size)
        a, b = local[v.a], local[v.b]
    cnt_k = np.bincount(v.k, minlength=m)
    comparisons = np.bincount(a, minlength=members.size) + np.bincount(b, minlength=members.size)
    seen = cnt_k[cnt_k > 0]
    cap = max(0, int(np.floor(np.median(seen))) - 1) if seen.size else 0
    at_votes: int | None = None
    try:
        if cache is None:
            raw = dynamic_delta(a, b, v.outcome, annotator=v.k, n_models=int(members.size))
            at_votes = int(a.size)
        else:
            raw = cache.delta(a, b, v.k, v.outcome, int(members.size), m)
    except (RankingInputError, ConvergenceError):  # no preliminary fit yet: the cap alone
        raw = cap
    if cache is not None:
        at_votes = cache.at_votes
    try:
        res = stable_arena(
            a,
            b,
            v.k,
            v.outcome,
            n_models=int(members.size),
            n_annotators=m,
            both_bad=v.both_bad,
            delta=min(raw, cap),
            left_chosen=v.left_chosen,
            fast=v.fast,
            item=v.item,
            evidence=evidence,
            init=init,
        )
    except FIT_ERRORS as err:
        return ComponentFit(
            members=members,
            comparisons=comparisons,
            votes=cnt_k,
            result=None,
            error=err,
            delta_rule=None,
            delta_at_votes=None,
        )
    return ComponentFit(
        members=members,
        comparisons=comparisons,
        votes=cnt_k,
        result=res,
        error=None,
        delta_rule=int(raw),
        delta_at_votes=at_votes,
    )


def _homes(fits: list[ComponentFit], m: int) -> IntArray:
    """Each annotator's home component (see :attr:`StableArenaComponentsResult.home`)."""
    home = np.full(m, -1, dtype=np.int64)
    fitted = [(g, f.result.status, f.votes) for g, f in enumerate(fits) if f.result is not None]
    for j in range(m):
        cands = [(g, status[j], int(votes[j])) for g, status, votes in fitted if votes[j] > 0]
        for wanted in _SEVERITY:
            pick = [(n, -g) for g, status, n in cands if status == wanted]
            if pick:
                home[j] = -max(pick)[1]
                break
    return home
