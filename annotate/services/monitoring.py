"""The live reliability monitor: votes -> annotator status, signals and leaderboard.

``annotate monitor`` shows, for one study, every annotator's status (pending,
reliable or flagged, with the reason) and ability from the Stable Arena loop
(:func:`ranking.arena.stable_arena`, fitted on each connected group of items by
:func:`ranking.components.stable_arena_components`), the model-free reliability signals of
:mod:`ranking.reliability`, and the leaderboard of the compared items. It
refreshes while annotators vote from other processes.

Both study kinds go through the same Bradley-Terry model with annotator
abilities: in an arena the items are models (model_a wins, model_b wins, tie or
both bad); in a difficulty study the items are questions and a vote "the first
question is harder" is a win of the first question. Skips carry no comparison,
so they are left out of the fit but counted in the skip rate. The difficulty
"leaderboard" is therefore the questions ordered from hardest to easiest on
the scale the annotators define.

:class:`StudyMonitor` keeps the study's votes as arrays and on each refresh
reads only the vote rows appended since the last one (votes are append-only:
a change of mind or an undo is a new row that supersedes an old one), so a
refresh costs the fit and the signals, not a full query.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.choices import Outcome
from annotate.errors import StudyNotFoundError
from annotate.names import one_line, sanitize
from annotate.services import vote_cache
from annotate.services.arena_analysis import FAST_VOTE_RULE, fit_problem, quality_evidence
from annotate.services.monitor_rows import first_read, item_positions, read_rows
from annotate.services.notes import monitor_lines as item_note_lines
from annotate.services.report_prefetch import Prefetch
from annotate.store import repo
from annotate.store.engine import reader_engine as make_reader_engine
from annotate.views import (
    STATUS_ORDER,
    AnnotatorStatus,
    FlagEvidence,
    ItemRating,
    MonitorSnapshot,
    RefreshTimings,
    StudyListing,
    StudyQuality,
)
from ranking.arena import Evidence
from ranking.components import ComponentFit, DeltaCache, stable_arena_components
from ranking.errors import ConvergenceError, RankingInputError
from ranking.pairwise import m_elo
from ranking.proportions import both_bad_shares
from ranking.reliability import (
    majority_agreement,
    position_bias_from_counts,
    vote_rates_from_counts,
)

FIT_ERRORS = (RankingInputError, ConvergenceError, np.linalg.LinAlgError, FloatingPointError)
"""Why a fit can fail on the data so far; the monitor shows the message instead."""

POLL_SECONDS = 0.5
"""How often the monitor checks for new votes."""

FAST_ALERT = 0.5
"""Alert when at least this share of an annotator's timed votes is too fast..."""
LEFT_ALERT_P = 0.01
"""...when the left-side win share differs from 1/2 at this level..."""
RATE_ALERT = 0.5
"""...when at least this share of the votes are ties, both bad or skips..."""
MIN_ALERT_VOTES = 10
"""...and only once the signal rests on at least this many votes."""


def _by_code(first: float, second: float, other: float) -> npt.NDArray[np.float64]:
    """A lookup table over the choice codes 0..BOTH_BAD (the current votes hold no
    retraction): ``first`` for FIRST, ``second`` for SECOND, ``other`` otherwise. One
    gather instead of ``np.select``'s comparisons over every vote."""
    table = np.full(int(max(Outcome)) + 1, other)
    table[Outcome.FIRST], table[Outcome.SECOND] = first, second
    return table


WIN_SHARE = _by_code(1.0, 0.0, 0.5)
"""The first half's win share per choice code: 1, 0, and 0.5 for a tie or both bad."""
MAJORITY_LABEL = _by_code(2, 0, 1).astype(np.int64)
MAJORITY_LABEL[Outcome.BOTH_BAD] = 3
"""The label per choice code for the majority-agreement signal, in the item's own
orientation: 2 first, 0 second, 1 tie, 3 both bad (1 for a skip, which is left out)."""


def reader_engine(engine: Engine) -> Engine:
    """An engine on the same database whose transactions never take the write lock.

    The monitor only reads; with ``BEGIN IMMEDIATE`` (or PostgreSQL's writer lock)
    each refresh would make the annotators' votes wait.
    """
    return make_reader_engine(engine)


def list_studies(engine: Engine) -> list[StudyListing]:
    """Every study with its current votes and annotators (titles on one line)."""
    with Session(engine) as s:
        return [replace(r, title=one_line(r.title)) for r in repo.list_studies(s)]


def default_study(studies: list[StudyListing]) -> str | None:
    """The study to open without ``--study``: the first with votes, else the first."""
    for st in studies:
        if st.votes:
            return st.name
    return studies[0].name if studies else None


def _f(x: Any) -> float | None:
    if x is None or x is np.ma.masked:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _alerts(
    fast: float | None,
    n_timed: int,
    left: float | None,
    p: float | None,
    n_decisive: int,
    rates: dict[str, tuple[float | None, int]],
) -> tuple[str, ...]:
    out: list[str] = []
    if fast is not None and n_timed >= MIN_ALERT_VOTES and fast >= FAST_ALERT:
        out.append(f"fast {_pct(fast)}")
    if left is not None and p is not None and n_decisive >= MIN_ALERT_VOTES and p < LEFT_ALERT_P:
        out.append(f"{'left' if left > 0.5 else 'right'} side {_pct(max(left, 1 - left))}")
    for name, (rate, n) in rates.items():
        if rate is not None and n >= MIN_ALERT_VOTES and rate >= RATE_ALERT:
            out.append(f"{name} {_pct(rate)}")
    return tuple(out)


_BLAS: list[Any] = []
"""The threadpoolctl controller, made on first use (it scans the loaded libraries)."""


def _one_blas_thread() -> AbstractContextManager[object]:
    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # optional: without it BLAS keeps its default threads
            _BLAS.append(None)
        else:
            _BLAS.append(ThreadpoolController())
    if _BLAS[0] is None:
        return nullcontext()
    return _BLAS[0].limit(limits=1, user_api="blas")  # type: ignore[no-any-return]


_POOL: list[ThreadPoolExecutor] = []


def _signal_pool() -> ThreadPoolExecutor:
    """One thread, made on first use, that computes the signals while the fit runs
    (numpy releases the GIL in both)."""
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(1, thread_name_prefix="monitor-signals"))
    return _POOL[0]


class StudyMonitor:
    """Builds :class:`MonitorSnapshot` s of one study, reading only new vote rows.

    Parameters
    ----------
    engine : Engine
        The store (use :func:`reader_engine` so refreshes never block voters).
    study : str
        Study name.

    Raises
    ------
    StudyNotFoundError
        If there is no such study.
    """

    def __init__(self, engine: Engine, study: str, prefetch: Prefetch | None = None) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        with Session(engine) as s:
            st = repo.get_study(s, study)
            if st is None:
                raise StudyNotFoundError(study, repo.study_names(s))
        self.study = st
        self._load_items()
        self._last = 0
        self._rows = _Grow(np.zeros((0, 8), dtype=np.int64))
        """Every vote row read so far, oldest first (:func:`repo.vote_rows_after`)."""
        self._alive = _Grow(np.zeros(0, dtype=bool))
        """Whether each row is a current vote (not superseded, not a retraction)."""
        self._current = _Grow(np.zeros((0, 8), dtype=np.int64))
        """The alive rows, oldest first: ``rows[alive]``, appended to while no new row
        supersedes an old one (a new vote); a few superseded rows are removed in place (a
        change of mind, an undo), more rebuild it."""
        self._current_shared = False
        """Whether a view of ``_current`` was handed out (:meth:`current_votes`): the next
        superseding read then rebuilds it instead of moving rows under that view."""
        self._ann_index: dict[int, int] = {}
        self._ann_names: list[str] = []
        self._deltas: dict[int, DeltaCache] = {}
        self._warm: dict[int, ComponentFit] = {}
        """The last fit of each group of items: the next refresh's fits start there."""
        self._arrays: _VoteArrays | None = None
        """The fit-ready vote arrays and signal counts, kept across refreshes (:meth:`_votes`)."""
        self._lut = np.full(1, -1, dtype=np.int64)
        """Annotator database id -> position in ``_ann_names``."""
        self._db_of = np.zeros(0, dtype=np.int64)
        """Position in ``_ann_names`` -> annotator database id."""
        self._lut_n = -1
        """How many annotators ``_lut`` and ``_db_of`` cover."""
        self._cache = vote_cache.target(engine, st)
        """The on-disk copy of the rows (:mod:`annotate.services.vote_cache`), or None."""
        self._cache_tried = False
        self._unsaved = 0
        """Rows read from the database since the cache file was loaded or written."""
        self._save: npt.NDArray[np.int64] | None = None
        """Rows to write to the cache once the snapshot is out."""
        self._writer = vote_cache.Writer()
        self._prefetch = prefetch if prefetch is not None and prefetch.study == st.name else None
        """The first read, done ahead in a child process (:class:`report_prefetch.Prefetch`:
        ``annotate report``), or None."""

    @property
    def kind(self) -> str:
        return self.study.kind

    def _load_items(self) -> None:
        with Session(self.engine) as s:
            if self.study.kind == "difficulty":
                items = repo.pair_questions(s, self.study.id)
            else:
                items = repo.battle_pairs(s, self.study.id)
            lengths = repo.item_text_lengths(s, self.study.id, self.study.kind)
        ids = sorted(items)
        entities: dict[str, str] = {}
        for a, b, detail in items.values():
            entities.setdefault(a, detail if self.study.kind == "difficulty" else "")
            entities.setdefault(b, detail if self.study.kind == "difficulty" else "")
        names = sorted(entities)
        ei = {e: j for j, e in enumerate(names)}
        self._item_pos = item_positions(ids)
        self._ent_a = np.array([ei[items[i][0]] for i in ids], dtype=np.int64)
        self._ent_b = np.array([ei[items[i][1]] for i in ids], dtype=np.int64)
        self._text_len = np.array([lengths.get(i, 0) for i in ids], dtype=np.float64)
        self._entities = names
        self._entity_detail = [entities[e] for e in names]
        self._identity_notes = _identity_notes(self.engine, self.study)

    # --- reading ------------------------------------------------------------------

    def changed(self) -> bool:
        """Whether vote rows were added since the last snapshot (one indexed lookup)."""
        with Session(self.engine) as s:
            return repo.max_vote_id(s, self.study.id) != self._last

    def _read_new(self) -> None:
        with Session(self.engine) as s:
            new, n_db = self._read_rows(s)
            if new is None:
                return
            self._unsaved += n_db
            fresh = [a for a in _distinct(new[:, 2]).tolist() if a not in self._ann_index]
            names = repo.annotator_names(s, fresh)
        for a in fresh:
            self._ann_index[a] = len(self._ann_names)
            self._ann_names.append(names.get(a, f"#{a}"))
        if new[:, 1].max() >= self._item_pos.size or (self._item_pos[new[:, 1]] < 0).any():
            self._load_items()  # items imported after the monitor started
        alive_new = new[:, 3] != Outcome.RETRACTED
        if self._rows.n:
            self._rows.append(new)
        else:  # the first rows: kept as read, not copied
            self._rows = _Grow(new)
        self._alive.append(alive_new)
        sup = new[:, 7]
        sup = sup[sup > 0]
        if sup.size:
            cols, alive = self._rows.view, self._alive.view
            pos = np.searchsorted(cols[:, 0], sup)
            ok = (pos < len(cols)) & (cols[np.minimum(pos, len(cols) - 1), 0] == sup)
            alive[pos[ok]] = False
            if self._current_shared or sup.size > _FEW_SUPERSEDED:
                # rebuilt, so that a view handed out (current_votes) keeps its values
                self._current = _Grow(cols[alive])
                self._current_shared = False
            else:
                # a change of mind or an undo: the rows it supersedes leave the current
                # rows in place (a move of the rows on the shorter side, not a copy of all), then
                # the new rows still alive (one may supersede another of the same read)
                cur_ids = self._current.view[:, 0]
                at = np.unique(np.searchsorted(cur_ids, sup))
                at = at[at < cur_ids.size]
                at = at[~alive[np.searchsorted(cols[:, 0], cur_ids[at])]]
                self._current.drop(at)
                self._current.append(new[alive[len(cols) - len(new) :]])
        elif not self._current.n:  # the first current rows: one copy, kept as made
            self._current = _Grow(new.copy() if alive_new.all() else new[alive_new])
        else:  # nothing superseded: the current votes so far, then the new ones
            self._current.append(new[alive_new])
        self._last = int(new[-1, 0])
        held = self._rows.n
        due = max(vote_cache.MIN_ROWS, held // vote_cache.RESAVE_SHARE)
        if self._cache is not None and self._unsaved >= due:
            self._save = self._rows.view  # rows never change once read: no copy

    def _read_rows(self, s: Session) -> tuple[npt.NDArray[np.int64] | None, int]:
        """The rows of this read (in ``s``'s transaction) and how many came from the
        database: on the first, the prefetched rows or the cache file's, then the rows
        after them (:mod:`annotate.services.monitor_rows`)."""
        if self._cache_tried:
            return read_rows(s, self.study.id, self._last)
        self._cache_tried = True  # the first read only, in its transaction
        prefetch, self._prefetch = self._prefetch, None
        got = None if prefetch is None else prefetch.take(self.study.id)
        if got is None:
            if self._cache is None:
                return read_rows(s, self.study.id, self._last)
            return first_read(s, self.study, self._cache, self._item_pos)
        rows, n_pre = got
        if self._cache is not None:
            self._cache.identify()  # what a load sets, so that the rows can be saved
        new, n_db = read_rows(s, self.study.id, 0, rows)
        return new, n_pre + n_db

    def _write_cache(self) -> None:
        """Start writing the rows the last read asked to keep (after the snapshot, in a
        thread: :mod:`annotate.services.vote_cache`)."""
        with self._lock:
            rows, cache = self._save, self._cache
            if rows is None or cache is None or not self._writer.start(cache, rows):
                return
            self._save = None
            self._unsaved = self._rows.n - len(rows)

    def wait_for_cache(self) -> None:
        """Wait until the cache file being written, if any, is written (tests, benchmarks)."""
        self._writer.join()

    def current_votes(self) -> tuple[npt.NDArray[np.int64], dict[int, str]]:
        """Read the new rows; the study's current votes, oldest first, as columns
        ``(item_id, annotator_id, choice code, swapped, response_ms or -1, fast)`` (the
        rows of :func:`repo.current_vote_codes`, without a second query), and the
        annotators' names by id. The report reads its votes here, so that its verdicts
        (this monitor's snapshot) do not read them again."""
        with self._lock:
            self._read_new()
            cols = self._current.view[:, 1:7]
            self._current_shared = True
            names = {a: self._ann_names[i] for a, i in self._ann_index.items()}
        self._write_cache()
        return cols, names

    # --- the snapshot --------------------------------------------------------------

    def _votes(self) -> _Votes:
        """The current votes for the fit and the signals, from arrays kept across
        refreshes (:class:`_VoteArrays`: only new and superseded rows cost anything)."""
        v = self._current.view
        n_ann = len(self._ann_names)
        arrays = self._arrays
        if arrays is None or arrays.item_pos is not self._item_pos:
            arrays = self._arrays = _VoteArrays(self._item_pos)
        if self._lut_n != n_ann:
            db = np.fromiter(self._ann_index.keys(), dtype=np.int64, count=n_ann)
            idx = np.fromiter(self._ann_index.values(), dtype=np.int64, count=n_ann)
            self._lut = np.full(int(db.max()) + 1 if n_ann else 1, -1, dtype=np.int64)
            self._lut[db] = idx
            self._db_of = np.empty(n_ann, dtype=np.int64)
            self._db_of[idx] = db
            self._lut_n = n_ann
        arrays.update(v, self._lut, self._ent_a, self._ent_b, n_ann)
        counts = arrays.signal_counts
        present = np.flatnonzero(counts.sum(axis=1) > 0)
        present = present[np.argsort(self._db_of[present], kind="stable")]
        names = [self._ann_names[int(i)] for i in present]
        order = np.argsort(np.array(names, dtype=object), kind="stable")
        present = present[order]
        rank = np.zeros(max(n_ann, 1), dtype=np.int64)
        rank[present] = np.arange(present.size)
        return arrays.votes([names[i] for i in order], len(v), rank, counts[present])

    def snapshot(self) -> MonitorSnapshot:
        """Read the new votes, refit and recompute every signal.

        BLAS runs single-threaded meanwhile: the fit's vector products are
        small, and on a machine busy with other work (the annotators' own
        sessions, say) OpenBLAS threads waiting for cores make them several
        times slower.
        """
        with self._lock, _one_blas_thread():
            t0 = time.perf_counter()
            self._read_new()
            votes = self._votes()
            t1 = time.perf_counter()
            signals = _signal_pool().submit(_timed_signals, votes, self._text_len)
            # the both-bad shares need only the votes: the same thread, also beside the fit
            both_bad = _signal_pool().submit(
                _both_bad, votes, self._ent_a, self._ent_b, len(self._entities), self.study.kind
            )
            quality = study_quality_if_any(self.engine, self.study)
            fit = _fit(
                votes,
                self._ent_a,
                self._ent_b,
                self._entities,
                self._entity_detail,
                self.study.kind,
                self._deltas,
                quality_evidence(quality, votes.names),  # the verdicts of `rate` (issue 10)
                self._warm,
            )
            t2 = time.perf_counter()
            sig, signals_s = signals.result()
            bad = both_bad.result()
            t3 = time.perf_counter()
        rows = with_quality(quality, _rows(votes, fit, sig, self.study.kind))
        stopping = adaptive_note(self.engine, self.study)
        item_notes = item_note_lines(self.engine, self.study.id)  # comments and flags
        board = tuple(
            ItemRating(
                r,
                one_line(self._entities[e]),
                one_line(self._entity_detail[e] or grp),
                rt,
                lo,
                hi,
                c,
                bad[e] if bad is not None else None,
            )
            for r, e, rt, lo, hi, c, grp in fit.board
        )
        self._write_cache()  # the rows read, to a file, in a thread (vote_cache)
        return MonitorSnapshot(
            study=self.study.name,
            kind=self.study.kind,
            title=one_line(self.study.title),
            last_vote_id=self._last,
            n_votes=votes.n_votes,
            n_compared=fit.n_compared,
            annotators=rows,
            leaderboard=board,
            problem=None if fit.problem is None else sanitize(fit.problem),
            notes=tuple(
                sanitize(n) for n in (*stopping, *fit.notes, *self._identity_notes, *item_notes)
            ),
            delta=fit.delta,
            delta_uncapped=fit.delta_uncapped,
            n_fitted=fit.n_fitted,
            timings=RefreshTimings(
                1000 * (t1 - t0), 1000 * (t2 - t1), 1000 * signals_s, 1000 * (t3 - t0)
            ),
        )


def _distinct(ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``np.unique(ids)``; by counting when the ids are small non-negative numbers (row
    ids of a table: a third of the time at a million rows)."""
    col = np.ascontiguousarray(ids)
    if col.size and int(col.min()) >= 0 and int(col.max()) < 4 * col.size + 65536:
        return np.flatnonzero(np.bincount(col)).astype(np.int64)
    return np.unique(col)


class _Grow:
    """An array that grows along its first axis; an append copies only the new entries
    (the capacity at least doubles when full). ``view`` is the filled part; a view taken
    earlier keeps its values, as appends only write past its end. A few entries are
    dropped in place (:meth:`drop`), moving the shorter side: the entries before them
    move up when fewer than those after them move down (the filled part then starts
    later in the buffer), so a change of mind on an old vote moves the old votes before
    it, an undo of a recent one the few after it."""

    def __init__(self, start: npt.NDArray[Any]) -> None:
        self._buf = np.ascontiguousarray(start)
        self._at = 0  # where the filled part starts in the buffer
        self.n = len(start)

    @property
    def view(self) -> npt.NDArray[Any]:
        return self._buf[self._at : self._at + self.n]

    def append(self, new: npt.NDArray[Any]) -> None:
        end = self._at + self.n
        if end + len(new) > len(self._buf):
            need = self.n + len(new)
            buf = np.empty(
                (max(need, 2 * len(self._buf), 1024), *self._buf.shape[1:]), self._buf.dtype
            )
            buf[: self.n] = self.view
            self._buf, self._at, end = buf, 0, self.n
        self._buf[end : end + len(new)] = new
        self.n += len(new)

    def drop(self, pos: npt.NDArray[np.int64]) -> None:
        """Remove the entries at ``pos`` (positions in ``view``, increasing, distinct) in
        place (views taken earlier see the entries move)."""
        if pos.size > 64:  # many: one compress
            keep = np.ones(self.n, dtype=bool)
            keep[pos] = False
            kept = self.view[keep]
            self._buf[self._at : self._at + len(kept)] = kept
            self.n = len(kept)
            return
        if not pos.size:
            return
        at, buf, bounds = self._at, self._buf, pos.tolist()
        # numpy copies overlapping slices safely
        if bounds[-1] < self.n - bounds[0]:  # fewer entries before: they move up
            dst = at + bounds[-1] + 1
            for prev, p in itertools.pairwise([-1, *bounds][::-1]):
                seg = buf[at + p + 1 : at + prev]
                buf[dst - len(seg) : dst] = seg
                dst -= len(seg)
            self._at = dst
        else:  # the entries after move down
            dst = at + bounds[0]
            for p, end in itertools.pairwise([*bounds, self.n]):
                seg = buf[at + p + 1 : at + end]
                buf[dst : dst + len(seg)] = seg
                dst += len(seg)
        self.n -= len(bounds)


_FEW_SUPERSEDED = 64
"""Up to this many current rows superseded by one read are removed from the current rows in
place (:meth:`_Grow.drop`); more rebuild them from every row."""


_SIGNAL_KEYS = (int(max(Outcome)) + 1) * 8
"""Signal cells per annotator: choice code (skip .. both bad) x swapped x fast x timed."""


class _Column(_Grow):
    """One per-vote array of :class:`_VoteArrays`: appended to, and with a few entries
    dropped in place (memory copies of the shorter side, no new array)."""

    def __init__(self, dtype: Any) -> None:
        super().__init__(np.zeros(1024, dtype=dtype))
        self.n = 0


_ALL = ("ids", "ann", "key")
"""Per current vote: row id, annotator (the monitor's internal index), signal key."""
_DECIDED = ("ids", "ann", "item", "a", "b", "outcome", "both_bad", "left", "fast", "label")
"""Per decided (not skipped) current vote: row id, annotator, item position, the item's
two entities, outcome (win share of ``a``), both bad, left side chosen, fast, majority
label (:data:`MAJORITY_LABEL`)."""


class _VoteArrays:
    """The current votes as the fit and the signals read them, kept across refreshes
    (issue 13: aggregates that update with new rows only).

    Each refresh compares the monitor's current rows with the ones seen last time: rows
    with a larger id are new (appended, their fields computed once), rows no longer there
    were superseded or undone (dropped, their counts subtracted). Per annotator, the
    votes are counted by choice, side, speed and timing (``signal_counts``), the inputs
    of the vote-rate, position and speed signals. Rebuilt from the rows when the item
    index changes (items imported after the monitor started).
    """

    def __init__(self, item_pos: npt.NDArray[np.int64]) -> None:
        self.item_pos = item_pos
        # what only the monitor reads is stored small: annotators in 32 bits, keys in 8
        small = {"ann": np.int32, "key": np.uint8}
        self.all = {name: _Column(small.get(name, np.int64)) for name in _ALL}
        dtypes = {
            "ann": np.int32,
            "outcome": np.float64,
            "both_bad": bool,
            "left": bool,
            "fast": bool,
        }
        self.dec = {name: _Column(dtypes.get(name, np.int64)) for name in _DECIDED}
        self.signal_counts = np.zeros((0, _SIGNAL_KEYS), dtype=np.int64)

    def votes(
        self,
        names: list[str],
        n_votes: int,
        rank: npt.NDArray[np.int64],
        signal_counts: npt.NDArray[np.int64],
    ) -> _Votes:
        """The decided votes held, as :class:`_Votes`: annotator ``j`` (the monitor's
        index) becomes ``rank[j]``, the position of its name in ``names``."""
        d = {name: col.view for name, col in self.dec.items()}
        return _Votes(
            names=names,
            n_votes=n_votes,
            item=d["item"],
            annotator=rank[d["ann"]],
            a=d["a"],
            b=d["b"],
            outcome=d["outcome"],
            both_bad=d["both_bad"],
            left_chosen=d["left"],
            fast=d["fast"],
            label=d["label"],
            signal_counts=signal_counts,
        )

    def update(
        self,
        cur: npt.NDArray[np.int64],
        lut: npt.NDArray[np.int64],
        ent_a: npt.NDArray[np.int64],
        ent_b: npt.NDArray[np.int64],
        n_ann: int,
    ) -> None:
        """Bring the arrays to ``cur`` (the current rows, oldest first, ids increasing);
        ``lut`` maps annotator ids to the monitor's index, of ``n_ann`` annotators."""
        if self.signal_counts.shape[0] < n_ann:
            grown = np.zeros((n_ann, _SIGNAL_KEYS), dtype=np.int64)
            grown[: self.signal_counts.shape[0]] = self.signal_counts
            self.signal_counts = grown
        ids = self.all["ids"].view
        held = ids.size
        if held and (len(cur) < held or int(cur[held - 1, 0]) != int(ids[-1])):
            start = int(np.searchsorted(cur[:, 0], ids[-1], side="right"))
            gone = _removed(ids, cur[:start, 0])
            if gone is None:  # not a subset: start afresh (no known cause; a safeguard)
                self.__init__(self.item_pos)  # type: ignore[misc]
                self.update(cur, lut, ent_a, ent_b, n_ann)
                return
            self._drop(gone)
        else:
            start = held
        self._append(cur[start:], lut, ent_a, ent_b)
        if self.all["ids"].n != len(cur):  # pragma: no cover - a safeguard
            self.__init__(self.item_pos)  # type: ignore[misc]
            self.update(cur, lut, ent_a, ent_b, n_ann)

    def _append(
        self,
        new: npt.NDArray[np.int64],
        lut: npt.NDArray[np.int64],
        ent_a: npt.NDArray[np.int64],
        ent_b: npt.NDArray[np.int64],
    ) -> None:
        if not len(new):
            return
        ann = lut[new[:, 2]]
        ch = new[:, 3]
        swapped = new[:, 4] != 0
        fast = new[:, 6] != 0
        key = ch * 8
        key += swapped * 4
        key += fast * 2
        key += new[:, 5] >= 0
        for name, col in (("ids", new[:, 0]), ("ann", ann), ("key", key)):
            self.all[name].append(col)
        self._count(ann, key, 1)
        del key
        d = ch != Outcome.SKIP
        ids, item_ids = new[:, 0], new[:, 1]
        if not d.all():  # the decided rows, each column by its own (1-D) mask: 2-D
            # boolean indexing (new[d] or new[d, 0]) costs several times as much
            ids, item_ids, ann, ch, swapped, fast = (
                x[d] for x in (ids, item_ids, ann, ch, swapped, fast)
            )
        it = self.item_pos[item_ids]
        fields = {
            "ids": ids,
            "ann": ann,
            "item": it,
            "a": ent_a[it],
            "b": ent_b[it],
            "outcome": WIN_SHARE[ch],
            "both_bad": ch == Outcome.BOTH_BAD,
            # the side shown first chosen: FIRST unswapped, SECOND swapped
            "left": ch == np.where(swapped, Outcome.SECOND, Outcome.FIRST),
            "fast": fast,
            "label": MAJORITY_LABEL[ch],
        }
        for name, col in fields.items():
            self.dec[name].append(col)

    def _count(self, ann: npt.NDArray[np.int64], key: npt.NDArray[np.int64], sign: int) -> None:
        size = self.signal_counts.size
        cells = np.bincount(ann * _SIGNAL_KEYS + key, minlength=size)
        self.signal_counts += sign * cells.reshape(self.signal_counts.shape)

    def _drop(self, pos: npt.NDArray[np.int64]) -> None:
        ids = self.all["ids"].view[pos]
        ann, key = self.all["ann"].view[pos], self.all["key"].view[pos]
        self._count(ann.astype(np.int64), key.astype(np.int64), -1)
        for col in self.all.values():
            col.drop(pos)
        d_ids = self.dec["ids"].view
        if not d_ids.size:  # no decided vote held (all skips): nothing more to drop
            return
        at = np.searchsorted(d_ids, ids)
        at = at[(at < d_ids.size) & (d_ids[np.minimum(at, d_ids.size - 1)] == ids)]
        if at.size:
            for col in self.dec.values():
                col.drop(at)


def _removed(
    held: npt.NDArray[np.int64], kept: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64] | None:
    """Positions in ``held`` of the ids not in ``kept`` (both increasing, ``kept`` a subset
    of ``held``); None when ``kept`` is not such a subset. A few removals (a change of
    mind or an undo per refresh) are found by comparing the arrays from the last one on;
    many by a set difference."""
    r = held.size - kept.size
    if r <= 0:
        return None
    if r > 32:
        pos = np.flatnonzero(~np.isin(held, kept, assume_unique=True))
        if pos.size != r:
            return None
        keep = np.ones(held.size, dtype=bool)
        keep[pos] = False
        return pos if np.array_equal(held[keep], kept) else None
    # each removal is the first place where the arrays differ, past the last one: the ids
    # before it are checked equal on the way, and those after the last at the end
    found: list[int] = []
    i = 0
    for _ in range(r):
        tail_h, tail_k = held[i:], kept[i - len(found) :]
        n = min(tail_h.size, tail_k.size)
        neq = tail_h[:n] != tail_k[:n]
        p = i + (int(np.argmax(neq)) if n and neq.any() else n)
        if p >= held.size:
            return None
        found.append(p)
        i = p + 1
    if not np.array_equal(held[i:], kept[i - r :]):
        return None
    return np.array(found, dtype=np.int64)


@dataclass(frozen=True)
class _Votes:
    """The current votes for one snapshot: the decided ones (not skipped), oldest first,
    and every vote counted per annotator (``signal_counts``); annotators indexed in the
    order of ``names``."""

    names: list[str]
    n_votes: int
    item: npt.NDArray[np.int64]
    """Item position of each decided vote."""
    annotator: npt.NDArray[np.int64]
    a: npt.NDArray[np.int64]
    """The item's first entity (model or question)..."""
    b: npt.NDArray[np.int64]
    """...and its second."""
    outcome: npt.NDArray[np.float64]
    """Win share of ``a``: 1, 0, or 0.5 for a tie or both bad."""
    both_bad: npt.NDArray[np.bool_]
    left_chosen: npt.NDArray[np.bool_]
    fast: npt.NDArray[np.bool_]
    """The stored flag of each vote (:data:`FAST_VOTE_RULE`)."""
    label: npt.NDArray[np.int64]
    """The majority-agreement label (:data:`MAJORITY_LABEL`)."""
    signal_counts: npt.NDArray[np.int64]
    """Every current vote per annotator and choice code x swapped x fast x timed,
    shape (annotators, :data:`_SIGNAL_KEYS`)."""


@dataclass(frozen=True)
class _Fit:
    status: list[str]
    reason: list[str]
    theta: list[float | None]
    theta_se: list[float | None]
    epsilon: list[float | None]
    scale: list[int]
    """Annotators in the fit that rated each annotator (ability = scale * theta)."""
    n_fitted: int
    board: list[tuple[int, int, float, float, float, int, str]]
    """(rank, entity, rating, lower, upper, comparisons, group label)."""
    n_compared: int
    problem: str | None
    notes: tuple[str, ...]
    delta: int | None
    delta_uncapped: int | None = None
    flags: list[tuple[FlagEvidence, ...]] = field(default_factory=list)
    to_verdict: list[int | None] = field(default_factory=list)


@dataclass(frozen=True)
class _GroupFit:
    status: list[str]
    reason: list[str]
    theta: list[float | None]
    theta_se: list[float | None]
    epsilon: list[float | None]
    fitted: npt.NDArray[np.int64]
    board: list[tuple[int, int, float, float, float, int]]
    delta: int
    delta_uncapped: int
    note: str
    flags: list[tuple[FlagEvidence, ...]]
    to_verdict: list[int | None]


def _group_view(cf: ComponentFit, kind: str) -> _GroupFit:
    """One fitted component (:class:`ranking.components.ComponentFit`) as the monitor
    shows it: the leaderboard rows, the note on the thresholds, the flags."""
    res = cf.result
    assert res is not None
    assert cf.delta_rule is not None
    used, cnt, m = cf.members, cf.comparisons, int(cf.votes.size)
    raw, dlt = cf.delta_rule, int(res.delta)
    se = [_f(x) for x in res.ability_standard_errors]
    if kind == "difficulty":  # hardest first, ranked in order
        order = sorted(range(used.size), key=lambda i: -float(res.ratings[i]))
        ranks = {i: r for r, i in enumerate(order, start=1)}
    else:  # best first, ranks that respect the intervals
        order = sorted(range(used.size), key=lambda i: (int(res.ranks[i]), -float(res.ratings[i])))
        ranks = {i: int(res.ranks[i]) for i in order}
    board = [
        (ranks[i], int(used[i]), float(res.ratings[i]), float(res.lower[i]),
         float(res.upper[i]), int(cnt[i]))
        for i in order
    ]  # fmt: skip
    capped = (
        f"; the rule gives {raw}, capped at the median vote count minus one" if raw > dlt else ""
    )
    corr = "Benjamini-Hochberg" if res.correction == "bh" else "Holm"
    note = (
        f"delta = {dlt} votes (dynamic, set at {cf.delta_at_votes or 0:,} votes{capped}): "
        f"annotators with at most this many are pending. Reliable: ability above a random "
        f"voter's (one-sided test at {res.alpha:.0%}); flags adjusted across annotators ({corr} "
        f"at {res.alpha:.0%}). Intervals are bias-aware Wald (widened for the rating-scale bias "
        "of annotators with few votes; annotate rate gives bootstrap intervals). Fast: "
        + FAST_VOTE_RULE
        + "."
    )
    flags = [
        tuple(
            FlagEvidence(f.reason, _f(f.statistic), _f(f.threshold), _f(f.p_value))
            for f in res.flags[j]
        )
        for j in range(m)
    ]
    return _GroupFit(
        status=list(res.status),
        reason=list(res.reasons),
        theta=[_f(x) for x in res.abilities],
        theta_se=se,
        epsilon=[_f(x) for x in res.epsilon],
        fitted=cf.fitted,
        board=board,
        delta=dlt,
        delta_uncapped=int(raw),
        note=note,
        flags=flags,
        to_verdict=list(res.votes_to_verdict),
    )


def _both_bad(
    votes: _Votes,
    ent_a: npt.NDArray[np.int64],
    ent_b: npt.NDArray[np.int64],
    n: int,
    kind: str,
) -> list[tuple[float, float, float] | None] | None:
    """Arena: each model's share of "both bad" among the decided votes on its battles, with
    its Wilson interval (:func:`ranking.proportions.both_bad_shares`); None otherwise."""
    if kind != "arena":
        return None
    r = both_bad_shares(votes.a, votes.b, votes.both_bad, n_models=n)
    return [
        (float(r.share[e]), float(r.lower[e]), float(r.upper[e])) if r.votes[e] else None
        for e in range(n)
    ]


def _fit(
    votes: _Votes,
    ent_a: npt.NDArray[np.int64],
    ent_b: npt.NDArray[np.int64],
    entities: list[str],
    details: list[str],
    kind: str,
    caches: dict[int, DeltaCache],
    evidence: tuple[Evidence, ...] = (),
    warm: dict[int, ComponentFit] | None = None,
) -> _Fit:
    m = len(votes.names)
    noun = "question" if kind == "difficulty" else "model"
    it, k, outcome, both_bad = votes.item, votes.annotator, votes.outcome, votes.both_bad
    left_chosen, fast, a_glob, b_glob = votes.left_chosen, votes.fast, votes.a, votes.b
    n_dec = votes.signal_counts[:, 8:].sum(axis=1)  # every choice code but skip (0)
    status = ["pending"] * m
    reason = [
        f"all {c} votes are skips: nothing to compare yet" if c == 0 else "" for c in n_dec.tolist()
    ]
    none: list[float | None] = [None] * m
    zeros = [0] * m
    n_compared = int(k.size)
    notes: list[str] = []

    def empty(problem: str, why: str, board: list[Any] | None = None) -> _Fit:
        rs = [r or why for r in reason]
        return _Fit(
            status=status,
            reason=rs,
            theta=none,
            theta_se=none,
            epsilon=none,
            scale=zeros,
            n_fitted=0,
            board=board or [],
            n_compared=n_compared,
            problem=problem,
            notes=tuple(notes),
            delta=None,
        )

    if m == 0:
        return empty("No votes yet: the table fills in as annotators vote.", "")
    if int((n_dec > 0).sum()) < 2:
        only = votes.names[int(np.argmax(n_dec))]
        one = [(*row, "") for row in _m_elo_board(a_glob, b_glob, outcome, both_bad, entities)]
        why = "abilities compare annotators with each other; waiting for a second annotator"
        alone = (
            f"Only one annotator ({only}) has compared {noun}s so far. Abilities and statuses "
            "are relative to the other annotators, so they wait for a second annotator."
        )
        return empty(alone, why, one)
    comp = stable_arena_components(
        a_glob,
        b_glob,
        k,
        outcome,
        n_items=len(entities),
        n_annotators=m,
        both_bad=both_bad,
        left_chosen=left_chosen,
        fast=fast,
        item=it,
        delta_caches=caches,
        evidence=evidence,
        warm_starts=warm,
    )
    group = comp.component
    n_groups = comp.n_components
    unseen = int((group < 0).sum())
    if unseen:
        notes.append(f"{unseen} {noun}(s) have no decided vote yet and are not rated")
    labels = [_group_label(group, g, entities, details, noun) for g in range(n_groups)]
    fits: list[_GroupFit | None] = []
    failures: list[str] = []
    for g, cf in enumerate(comp.fits):
        if cf.error is None:
            fits.append(_group_view(cf, kind))
            continue
        fits.append(None)
        names = [entities[int(i)] for i in cf.members]
        text = fit_problem(cf.error, names, votes.names, noun=noun)
        failures.append(text if n_groups == 1 else f"{labels[g]}: {text}")
    if n_groups == 1:
        only_fit = fits[0]
        if only_fit is None:
            why = "not rated until the fit above is possible"
            return empty(f"Cannot fit the {noun} ratings yet: {failures[0]}", why)
        notes.append(only_fit.note)
    problem: str | None = None
    if n_groups > 1:
        within = " (pairs stay within a subject)" if kind == "difficulty" else ""
        problem = (
            f"The {noun}s form {n_groups} groups never compared with each other{within}. "
            "Each group is fitted on its own, so ratings compare only within a group; an "
            "annotator's status comes from the group where they voted most (flagged in any "
            "group: flagged)."
        )
        if failures:
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            notes.append(
                f"{len(failures)} of {n_groups} groups cannot be fitted yet; {failures[0]}{more}"
            )
        shown = "; ".join(labels[:8]) + (f"; … ({n_groups} in all)" if n_groups > 8 else "")
        notes.append(f"Groups: {shown}.")
    theta, se, eps, scale = list(none), list(none), list(none), list(zeros)
    flags: list[tuple[FlagEvidence, ...]] = [()] * m
    to_verdict: list[int | None] = [None] * m
    for j in range(m):
        if n_dec[j] == 0:
            continue
        g = int(comp.home[j])
        gf = fits[g] if g >= 0 else None
        if gf is None:
            reason[j] = "not rated: no group they voted on can be fitted yet (see the notes)"
            continue
        status[j] = gf.status[j]
        reason[j] = gf.reason[j] if n_groups == 1 else f"{labels[g]}: {gf.reason[j]}"
        theta[j], se[j], eps[j] = gf.theta[j], gf.theta_se[j], gf.epsilon[j]
        flags[j], to_verdict[j] = gf.flags[j], gf.to_verdict[j]
        scale[j] = int(gf.fitted.size) if theta[j] is not None else 0
    board: list[tuple[int, int, float, float, float, int, str]] = []
    for g, gf in enumerate(fits):
        if gf is not None:
            board += [(*row, labels[g] if n_groups > 1 else "") for row in gf.board]
    fitted_any = {int(j) for gf in fits if gf is not None for j in gf.fitted}
    deltas = [(gf.delta, gf.delta_uncapped) for gf in fits if gf is not None]
    return _Fit(
        status=status,
        reason=reason,
        theta=theta,
        theta_se=se,
        epsilon=eps,
        scale=scale,
        n_fitted=len(fitted_any),
        board=board,
        n_compared=n_compared,
        problem=problem,
        notes=tuple(notes),
        delta=deltas[0][0] if deltas else None,
        delta_uncapped=deltas[0][1] if deltas else None,
        flags=flags,
        to_verdict=to_verdict,
    )


def _group_label(
    group: npt.NDArray[np.int64], g: int, entities: list[str], details: list[str], noun: str
) -> str:
    members = np.flatnonzero(group == g)
    subjects = sorted({details[int(i)] for i in members if details[int(i)]})
    first = entities[int(members[0])]
    what = f"{'/'.join(subjects)} " if subjects else ""
    return f"{what}group of {first} ({members.size} {noun}s)"


def _m_elo_board(
    a_glob: npt.NDArray[np.int64],
    b_glob: npt.NDArray[np.int64],
    outcome: npt.NDArray[np.float64],
    both_bad: npt.NDArray[np.bool_],
    entities: list[str],
) -> list[tuple[int, int, float, float, float, int]]:
    n_ent = len(entities)
    hit = np.bincount(a_glob, minlength=n_ent) + np.bincount(b_glob, minlength=n_ent)
    used = np.flatnonzero(hit)
    local = np.cumsum(hit > 0) - 1
    a, b = local[a_glob], local[b_glob]
    try:
        r = m_elo(a, b, outcome, n_models=int(used.size), both_bad=both_bad)
    except FIT_ERRORS:
        return []
    order = sorted(range(used.size), key=lambda i: -float(r.ratings[i]))
    return [
        (int(r.ranks[i]), int(used[i]), float(r.ratings[i]), float(r.lower[i]),
         float(r.upper[i]), int(hit[used[i]]))
        for i in order
    ]  # fmt: skip


@dataclass(frozen=True)
class _Signals:
    """Per-annotator signals as float arrays, NaN where undefined."""

    fast: npt.NDArray[np.float64]
    n_timed: npt.NDArray[np.int64]
    left: npt.NDArray[np.float64]
    left_p: npt.NDArray[np.float64]
    n_decisive: npt.NDArray[np.int64]
    tie: npt.NDArray[np.float64]
    both_bad: npt.NDArray[np.float64]
    skip: npt.NDArray[np.float64]
    n_votes: npt.NDArray[np.int64]
    majority: npt.NDArray[np.float64]
    chance: npt.NDArray[np.float64]


def _filled(x: Any) -> npt.NDArray[np.float64]:
    masked = np.ma.MaskedArray(x, dtype=np.float64)
    return np.asarray(np.ma.filled(masked, np.nan), dtype=np.float64)


def _signals(votes: _Votes, text_len: npt.NDArray[np.float64]) -> _Signals:
    """The signals of :mod:`ranking.reliability` from the votes counted per annotator
    (:attr:`_Votes.signal_counts`) and, for the majority agreement, the decided votes."""
    m = len(votes.names)
    # (annotator, choice code, swapped, fast, timed)
    c = votes.signal_counts.reshape(m, int(max(Outcome)) + 1, 2, 2, 2)
    per_choice = c.sum(axis=(2, 3, 4))
    n_all = per_choice.sum(axis=1)
    n_sk = per_choice[:, Outcome.SKIP]
    rates = vote_rates_from_counts(
        n_all, n_all - n_sk, per_choice[:, Outcome.TIE], per_choice[:, Outcome.BOTH_BAD], n_sk
    )
    # decisive: the first or second half chosen; on the left: first unswapped, second swapped
    by_side = c.sum(axis=(3, 4))
    n_dec = per_choice[:, Outcome.FIRST] + per_choice[:, Outcome.SECOND]
    n_left = by_side[:, Outcome.FIRST, 0] + by_side[:, Outcome.SECOND, 1]
    pos = position_bias_from_counts(n_left, n_dec)
    timed = c[..., 1].sum(axis=(1, 2))  # (annotator, fast)
    n_timed = timed.sum(axis=1).astype(np.int64)
    n_fast = timed[:, 1]
    fast_share = np.where(n_timed > 0, n_fast / np.maximum(n_timed, 1), np.nan)
    # Majority labels in the item's own orientation (not the side shown), so that
    # annotators who saw the item swapped are compared on the same terms.
    maj = majority_agreement(votes.item, votes.annotator, votes.label, n_annotators=m)
    return _Signals(
        fast=fast_share,
        n_timed=n_timed,
        left=_filled(pos.left_share),
        left_p=_filled(pos.p_value),
        n_decisive=pos.n_decisive,
        tie=_filled(rates.tie_rate),
        both_bad=_filled(rates.both_bad_rate),
        skip=_filled(rates.skip_rate),
        n_votes=rates.n_votes,
        majority=_filled(maj.agreement),
        chance=_filled(maj.chance),
    )


def _timed_signals(votes: _Votes, text_len: npt.NDArray[np.float64]) -> tuple[_Signals, float]:
    t0 = time.perf_counter()
    with _one_blas_thread():
        sig = _signals(votes, text_len)
    return sig, time.perf_counter() - t0


def _rows(votes: _Votes, fit: _Fit, sig: _Signals, kind: str) -> tuple[AnnotatorStatus, ...]:
    rows: list[AnnotatorStatus] = []

    def rel(x: float | None, scale: int) -> float | None:
        return None if x is None or scale == 0 else x * scale

    cols = {
        name: [_f(x) for x in getattr(sig, name).tolist()]
        for name in ("fast", "left", "left_p", "tie", "both_bad", "skip", "majority", "chance")
    }
    n_timed, n_dec, n_all = sig.n_timed.tolist(), sig.n_decisive.tolist(), sig.n_votes.tolist()
    for j, name in enumerate(votes.names):
        th, se = fit.theta[j], fit.theta_se[j]
        lo = hi = None
        if th is not None and se is not None:
            lo, hi = th - 1.96 * se, th + 1.96 * se
        fast, left, p = cols["fast"][j], cols["left"][j], cols["left_p"][j]
        tie, bad, skip = cols["tie"][j], cols["both_bad"][j], cols["skip"][j]
        rates = {"skips": (skip, n_all[j])}
        if kind != "difficulty":
            rates = {"ties": (tie, n_all[j]), "both bad": (bad, n_all[j])}
        rows.append(
            AnnotatorStatus(
                annotator=one_line(name),
                votes=int(n_all[j]),
                status=fit.status[j],
                reason=one_line(fit.reason[j]),
                theta=th,
                theta_lower=lo,
                theta_upper=hi,
                epsilon=fit.epsilon[j],
                ability=rel(th, fit.scale[j]),
                ability_lower=rel(lo, fit.scale[j]),
                ability_upper=rel(hi, fit.scale[j]),
                fast_share=fast,
                left_share=left,
                left_p_value=p,
                tie_rate=tie,
                both_bad_rate=bad,
                skip_rate=skip,
                majority_agreement=cols["majority"][j],
                majority_chance=cols["chance"][j],
                alerts=_alerts(fast, int(n_timed[j]), left, p, int(n_dec[j]), rates),
                flags=fit.flags[j] if fit.flags else (),
                votes_to_verdict=fit.to_verdict[j] if fit.to_verdict else None,
            )
        )
    rows.sort(key=lambda r: (STATUS_ORDER.index(r.status), r.annotator))
    return tuple(rows)


def study_quality_if_any(engine: Engine, study: repo.StudyRow) -> StudyQuality | None:
    """The study's gold accuracy and self-consistency per annotator (issue 16), or None
    when it has neither gold items nor re-tests (one cheap query)."""
    with Session(engine) as s:
        if not repo.gold_answers(s, study.id) and study.settings.retest_share <= 0:
            return None
    from annotate.services.quality import study_quality

    return study_quality(engine, study.name)


def with_quality(
    quality: StudyQuality | None, rows: tuple[AnnotatorStatus, ...]
) -> tuple[AnnotatorStatus, ...]:
    """The rows with each annotator's gold accuracy and self-consistency (issue 16), and
    ``low gold`` / ``inconsistent`` among the alerts where the signal is raised."""
    if quality is None:
        return rows
    by_name = {one_line(a.annotator): a for a in quality.annotators}
    out = []
    for r in rows:
        q = by_name.get(r.annotator)
        if q is None:
            out.append(r)
            continue
        extra = tuple(
            f"{label} {100 * (c.rate or 0):.0f}%"
            for label, c in (("low gold", q.gold), ("inconsistent", q.consistency))
            if c is not None and c.signal
        )
        out.append(replace(r, gold=q.gold, consistency=q.consistency, alerts=r.alerts + extra))
    return tuple(out)


def adaptive_note(engine: Engine, study: repo.StudyRow) -> tuple[str, ...]:
    """The adaptive schedule's stopping status as one line (studies with ``schedule =
    "adaptive"``; :func:`annotate.services.adaptive.stopping_status`), else nothing."""
    if study.settings.schedule != "adaptive":
        return ()
    from annotate.services.adaptive import stopping_status

    with Session(engine) as s:
        st = stopping_status(s, study)
    return (stopping_line(st, study.kind),)


def stopping_line(st: Any, kind: str) -> str:
    """One sentence on a :class:`annotate.services.adaptive.StoppingStatus`."""
    noun = "question" if kind == "difficulty" else "model"
    if st.max_width is None:
        widest = "no decided vote yet"
    else:
        widest = (
            f"widest 95% rating interval {st.max_width:.1f} Elo points ({noun} "
            f"{one_line(st.widest)}) on {st.votes:,} votes"
        )
    if st.target_width <= 0:
        return f"Adaptive schedule: no target_width set (no stopping rule); {widest}."
    verdict = "reached" if st.reached else "not reached"
    shift = (
        ""
        if st.ipw_shift is None
        else f"; inverse-propensity-weighted fit within {st.ipw_shift:.2f} se of the plain fit"
    )
    return (
        f"Adaptive schedule: target_width {st.target_width:g} Elo points {verdict}: "
        f"{widest}{shift}."
    )


def _identity_notes(engine: Engine, study: repo.StudyRow) -> tuple[str, ...]:
    """A note counting the battles whose responses name a model (arena studies)."""
    if study.kind != "arena":
        return ()
    from annotate.services.identity import self_identifying_battles

    n = len(self_identifying_battles(engine, study.name))
    if not n:
        return ()
    return (
        f"{n} battle(s) with a response that names a model or its maker: counted here, "
        "left out of `annotate rate` (unless --include-self-identifying)",
    )


def monitor_snapshot(engine: Engine, study: str) -> MonitorSnapshot:
    """One snapshot of ``study`` (reads every vote; the monitor keeps a :class:`StudyMonitor`)."""
    return StudyMonitor(engine, study).snapshot()


class MonitorSource:
    """What the monitor screen asks for: the studies, and a :class:`StudyMonitor` per study.

    Parameters
    ----------
    engine : Engine
        The store; the monitor reads through :func:`reader_engine` of it.
    """

    poll_seconds = POLL_SECONDS

    def __init__(self, engine: Engine) -> None:
        self.engine = reader_engine(engine)

    def studies(self) -> list[StudyListing]:
        return list_studies(self.engine)

    def default_study(self) -> str | None:
        return default_study(self.studies())

    def open(self, study: str) -> StudyMonitor:
        return StudyMonitor(self.engine, study)
