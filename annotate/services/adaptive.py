"""The adaptive schedule's estimates (a study with ``schedule = "adaptive"``).

The next item for an annotator is the most informative one under the current
Bradley-Terry fit of the study's votes (:mod:`ranking.adaptive`): the players are the
models of an arena study or the questions of a difficulty study, each item compares
two of them. The estimates live in memory, one :class:`AdaptiveEstimates` per
database and study in this process, and are kept up to date incrementally: each
choice reads only the vote rows added since the last one (:func:`repo.vote_outcomes_after`),
counts them in O(1) each, and refits (warm-started Newton steps to convergence) at most every
:data:`REFIT_EVERY` votes, so choosing stays a vectorised pass over the items.

:func:`stopping_status` is the stopping rule as the monitor and the report show it: the
widest rating interval of a full fit against the study's ``target_width``.

NumPy and SciPy are imported here, so import this module only for adaptive studies.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.choices import Outcome
from annotate.store import repo
from annotate.study_settings import StudySettings
from ranking.adaptive import (
    DEFAULT_PRIOR_SD,
    OnlineBradleyTerry,
    selection_probabilities,
    weighted_bradley_terry,
)

REFIT_EVERY = 10
"""Votes counted between two refits of the schedule's estimates."""

TOP = 4
"""The exploiting draw is among this many most informative items (annotators working at
once then spread over different items)."""

SETTLED_CONFIDENCE = 0.99
"""An item is settled when its outcome is decided at this level (two-sided)."""

_OUTCOME = {int(Outcome.FIRST): 1.0, int(Outcome.SECOND): 0.0, int(Outcome.TIE): 0.5}
_OUTCOME[int(Outcome.BOTH_BAD)] = 0.5
"""Vote codes counted by the fit: first half wins, second half wins, tie (and both bad,
as a tie, like ``annotate rate``'s default); skips and retractions are not counted."""
_RETRACTED = int(Outcome.RETRACTED)
_CODE_LOW = min(int(o) for o in Outcome)
_OUTCOME_BY_CODE = np.array(
    [_OUTCOME.get(code, np.nan) for code in range(_CODE_LOW, max(int(o) for o in Outcome) + 1)]
)
""":data:`_OUTCOME` as an array indexed by ``code - _CODE_LOW`` (NaN: not counted)."""

BULK_ROWS = 256
"""A read of at least this many new vote rows is counted by array operations."""


@dataclass(frozen=True)
class AdaptiveChoice:
    """The item chosen for an annotator and what the choice knew."""

    item_id: int | None
    """The item to show, or None when every candidate is settled."""
    probability: float
    """The probability with which it was chosen (stored with the vote)."""
    settled: frozenset[int]
    """Candidates whose outcome is settled (to drop from the annotator's queue)."""


class AdaptiveEstimates:
    """One study's items, players and the online fit of its current votes."""

    def __init__(self, study_id: int, kind: str, pairs: dict[int, tuple[str, str]]) -> None:
        self.study_id = study_id
        self.kind = kind
        self.item_ids = sorted(pairs)
        self.index = {item: k for k, item in enumerate(self.item_ids)}
        names = sorted({p for ab in pairs.values() for p in ab})
        player = {name: k for k, name in enumerate(names)}
        self.players = names
        a = [player[pairs[i][0]] for i in self.item_ids]
        b = [player[pairs[i][1]] for i in self.item_ids]
        self.model = OnlineBradleyTerry(a, b, max(1, len(names)), prior_sd=DEFAULT_PRIOR_SD)
        top_id = max(self.item_ids, default=-1)
        self._position = np.full(top_id + 2, -1, dtype=np.int64)
        """Item id -> its index in the model (-1: not an item of this study); the last
        entry stands for every id out of range."""
        self._position[np.asarray(self.item_ids, dtype=np.int64)] = np.arange(len(self.item_ids))
        self.last_id = 0
        self.counted: dict[int, tuple[int, float]] = {}
        """Vote row id -> (item index, outcome) of the rows counted and not superseded."""
        self._uncounted: dict[int, int] = {}
        """Vote row id -> item index of the current rows the fit does not count (skips)."""
        self._uncounted_per_item = np.zeros(len(self.item_ids), dtype=np.int64)
        self.lock = threading.Lock()
        self._fitted = False

    def sync(self, session: Session) -> None:
        """Count the vote rows added since the last call; refit every :data:`REFIT_EVERY`.

        A read of at least :data:`BULK_ROWS` rows (the first one of a study with votes) is
        counted with array operations, to the same counts, ``counted`` and ``pending`` as
        one by one (:meth:`_count_rows`): every count is a multiple of 0.5, so its sums
        are exact in any order.
        """
        rows = repo.vote_outcomes_after(session, self.study_id, self.last_id)
        if len(rows) >= BULK_ROWS:
            flat = itertools.chain.from_iterable(rows)  # twice as fast as np.array(rows)
            table = np.fromiter(flat, dtype=np.int64, count=4 * len(rows)).reshape(-1, 4)
            # a row that supersedes a later one (possible only by hand or an import) is
            # counted one by one, as it always was
            if bool(np.all(table[:, 3] < table[:, 0])):
                self._count_table(table)
            else:
                self._count_rows(rows)
        else:
            self._count_rows(rows)
        if not self._fitted or self.model.pending >= REFIT_EVERY:
            self.model.refit()
            self._fitted = True

    def _count_rows(self, rows: Sequence[tuple[int, ...]]) -> None:
        """Count vote rows one by one (the rows of :func:`repo.vote_outcomes_after`)."""
        for row in rows:
            row_id, item_id, code, superseded = (int(x) for x in row)
            if superseded:
                old = self.counted.pop(superseded, None)
                if old is not None:
                    self.model.add(old[0], old[1], -1.0)
                else:
                    gone = self._uncounted.pop(superseded, None)
                    if gone is not None:
                        self._uncounted_per_item[gone] -= 1
            y = _OUTCOME.get(code)
            k = self.index.get(item_id)
            if k is not None:
                if y is not None:
                    self.counted[row_id] = (k, y)
                    self.model.add(k, y)
                elif code != _RETRACTED:
                    self._uncounted[row_id] = k
                    self._uncounted_per_item[k] += 1
            self.last_id = max(self.last_id, row_id)

    def _count_table(self, table: npt.NDArray[np.int64]) -> None:
        """:meth:`_count_rows` of rows (``N x 4``, ids increasing, each superseded id
        smaller than its row's) by array operations."""
        ids, codes, superseded = table[:, 0], table[:, 2], table[:, 3]
        k = self._lookup(table[:, 1])
        y = np.full(codes.size, np.nan)
        inside = (codes >= _CODE_LOW) & (codes < _CODE_LOW + _OUTCOME_BY_CODE.size)
        y[inside] = _OUTCOME_BY_CODE[codes[inside] - _CODE_LOW]
        known = k >= 0
        fitted = known & ~np.isnan(y)
        other = known & np.isnan(y) & (codes != _RETRACTED)
        gone_ids = superseded[superseded > 0]
        # rows of earlier reads that these supersede (one by one: each is one change)
        out_k: list[int] = []
        out_y: list[float] = []
        for row_id in gone_ids.tolist():
            old = self.counted.pop(row_id, None)
            if old is not None:
                out_k.append(old[0])
                out_y.append(old[1])
            else:
                gone = self._uncounted.pop(row_id, None)
                if gone is not None:
                    self._uncounted_per_item[gone] -= 1
        # rows of this read superseded in it: counted, then taken out again
        later = np.isin(ids, gone_ids, assume_unique=True)
        again = fitted & later
        stay = fitted & ~later
        n_in = int(fitted.sum())
        items = np.concatenate([k[fitted], np.asarray(out_k, dtype=np.int64), k[again]])
        outcomes = np.concatenate([y[fitted], np.asarray(out_y, dtype=np.float64), y[again]])
        weights = np.ones(items.size)
        weights[n_in:] = -1.0
        self.model.add_many(items, outcomes, weights)
        outcome = zip(k[stay].tolist(), y[stay].tolist(), strict=True)
        self.counted.update(zip(ids[stay].tolist(), outcome, strict=True))
        keep = other & ~later
        self._uncounted.update(zip(ids[keep].tolist(), k[keep].tolist(), strict=True))
        self._uncounted_per_item += np.bincount(k[keep], minlength=len(self.item_ids))
        self.last_id = max(self.last_id, int(ids[-1]))

    def _lookup(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Item ids -> their indices in the model (-1: not an item of this study)."""
        last = self._position.size - 1
        pos: npt.NDArray[np.int64] = self._position[np.where((ids >= 0) & (ids < last), ids, last)]
        return pos

    def current_votes(self) -> dict[int, int]:
        """Item id -> its current votes (skips included; retractions, superseded rows and
        re-tests not; items without any left out) as of the last :meth:`sync`: the
        ``current_vote`` counts of :func:`repo.item_loads`, from the rows already read.
        Call under :attr:`lock`."""
        total = self.model.counts.astype(np.int64) + self._uncounted_per_item
        some = np.flatnonzero(total)
        ids = np.asarray(self.item_ids, dtype=np.int64)[some]
        return dict(zip(ids.tolist(), total[some].tolist(), strict=True))

    def choose(
        self, candidates: Sequence[int], settings: StudySettings, seed: int
    ) -> AdaptiveChoice:
        """Choose among ``candidates`` (item ids, in the annotator's own order).

        Settled candidates (:func:`ranking.adaptive.settled_items`) are left out; the
        rest get :func:`ranking.adaptive.selection_probabilities` from their expected
        information gain, and one is drawn with ``random.Random(seed)``. Vectorised: the
        ids are mapped to the model's items by one array lookup, and the settled flags
        and gains are those the model computed for every item at its last refit.
        """
        ids = np.fromiter(candidates, dtype=np.int64, count=len(candidates))
        pos = self._lookup(ids)
        known = pos >= 0
        if not known.all():
            ids, pos = ids[known], pos[known]
        if ids.size == 0:
            return AdaptiveChoice(None, 0.0, frozenset())
        done, gain = self.model.open_and_gain(
            pos, target_width=settings.target_width, confidence=SETTLED_CONFIDENCE
        )
        if done.any():
            settled = frozenset(ids[done].tolist())
            open_ = np.flatnonzero(~done)
            if open_.size == 0:
                return AdaptiveChoice(None, 0.0, settled)
            gain = gain[open_]
        else:
            settled, open_ = frozenset(), None
        probs = selection_probabilities(gain, exploration=settings.exploration, top=TOP)
        u = random.Random(seed).random()
        pick = min(int(np.searchsorted(np.cumsum(probs), u, side="right")), probs.size - 1)
        chosen = pick if open_ is None else int(open_[pick])
        return AdaptiveChoice(int(ids[chosen]), float(probs[pick]), settled)


_CACHE: dict[tuple[str, int], AdaptiveEstimates] = {}
_CACHE_LOCK = threading.Lock()


def estimates(engine: Engine, session: Session, study_id: int, kind: str) -> AdaptiveEstimates:
    """The process's estimates for a study (built on first use), synced with ``session``."""
    key = (str(engine.url), study_id)
    with _CACHE_LOCK:
        est = _CACHE.get(key)
        if est is None:
            est = _CACHE[key] = AdaptiveEstimates(
                study_id, kind, item_players(session, study_id, kind)
            )
    with est.lock:
        est.sync(session)
    return est


def item_players(session: Session, study_id: int, kind: str) -> dict[int, tuple[str, str]]:
    """Item id -> its two players (question keys, or model names)."""
    if kind == "difficulty":
        return {i: (a, b) for i, (a, b, _) in repo.pair_questions(session, study_id).items()}
    return {i: (a, b) for i, (a, b, _) in repo.battle_pairs(session, study_id).items()}


def forget(engine: Engine) -> None:
    """Drop the cached estimates of a database (tests; a database replaced on disk)."""
    url = str(engine.url)
    with _CACHE_LOCK:
        for key in [k for k in _CACHE if k[0] == url]:
            del _CACHE[key]


@dataclass(frozen=True)
class StoppingStatus:
    """The adaptive stopping rule of a study now."""

    target_width: float
    """The study's target: full width (Elo points) of every rating's 95% interval (0: none)."""
    max_width: float | None
    """The widest interval of a full fit of the current votes (None before any vote)."""
    widest: str | None
    """The player (model or question key) with the widest interval."""
    reached: bool
    """Whether every interval is at most the target (False when there is no target)."""
    votes: int
    """Current votes counted (skips left out)."""
    ipw_shift: float | None
    """Largest difference between the inverse-propensity-weighted fit's ratings and the
    plain fit's, in the plain fit's standard errors (a check of the model: a large
    value says the ratings depend on which items the schedule chose)."""


def stopping_status(session: Session, study: repo.StudyRow) -> StoppingStatus:
    """Fit the study's current votes once (Bradley-Terry with the schedule's prior) and
    compare the widest 95% interval with ``target_width``."""
    pairs = item_players(session, study.id, study.kind)
    rows = repo.adaptive_votes(session, study.id)
    names = sorted({p for ab in pairs.values() for p in ab})
    player = {name: k for k, name in enumerate(names)}
    a, b, y, prob = [], [], [], []
    for item_id, code, p in rows:
        out = _OUTCOME.get(int(code))
        if out is None or item_id not in pairs:
            continue
        a.append(player[pairs[item_id][0]])
        b.append(player[pairs[item_id][1]])
        y.append(out)
        prob.append(p)
    target = study.settings.target_width
    if not a:
        return StoppingStatus(target, None, None, False, 0, None)
    fit = weighted_bradley_terry(
        a, b, y, n_items=len(names), prior_sd=DEFAULT_PRIOR_SD, covariance="model"
    )
    widths = fit.upper - fit.lower
    k = int(np.argmax(widths))
    max_width = float(widths[k])
    shift = None
    have = [q for q in prob if q is not None and q > 0]
    if len(have) == len(prob):
        w = 1.0 / np.asarray(prob, dtype=np.float64)
        ipw = weighted_bradley_terry(
            a, b, y, weights=w / w.mean(), n_items=len(names), prior_sd=DEFAULT_PRIOR_SD
        )
        se = np.where(fit.standard_errors > 0, fit.standard_errors, np.inf)
        shift = float(np.max(np.abs(ipw.ratings - fit.ratings) / se))
    reached = target > 0 and max_width <= target
    return StoppingStatus(target, max_width, names[k], reached, len(a), shift)
