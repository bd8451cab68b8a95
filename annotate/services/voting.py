"""An annotator's session on one study: what to show next, votes and undo.

Screens use :class:`VotingSession` and never see SQL. Nothing it returns
before a vote is committed carries a model name or another annotator's vote.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session

from annotate.errors import AnnotateError, StudyNotFoundError, VoteConflictError
from annotate.services import schedule
from annotate.store import repo
from annotate.store.engine import make_engine
from annotate.store.repo import ItemLoad, QuestionView, StudyRow, VoteRow

T = TypeVar("T")

try:
    import fcntl
except ImportError:  # Windows: SQLite's busy timeout alone
    fcntl = None  # type: ignore[assignment]

DIFFICULTY_KEYS = {"left": None, "right": None, "skip": "skip"}
UNDO_REFUSED_AFTER_REVEAL = (
    "Votes in this study are final once the model names are revealed: undo is not available."
)
"""Why undo is refused in an arena study that reveals the model names after each vote."""
ARENA_KEYS = ("a", "b", "tie", "both_bad")


@dataclass(frozen=True)
class ShownPair:
    """A question pair as displayed: ``left`` is shown first (left or top)."""

    item_id: int
    key: str
    left: QuestionView
    right: QuestionView
    swapped: bool


@dataclass(frozen=True)
class ShownBattle:
    """A battle as displayed: responses "A" (left) and "B" (right), no model names."""

    item_id: int
    key: str
    prompt: str
    category: str
    response_left: str
    response_right: str
    swapped: bool


@dataclass(frozen=True)
class VoteReceipt:
    """What the screen may show once a vote is committed."""

    vote_uuid: str
    item_id: int
    choice: str
    fast: bool
    revealed: tuple[str, str] | None
    """Model names (A, B) as displayed, when the study reveals them after the vote."""


@dataclass(frozen=True)
class Progress:
    """How far the annotator is: ``done`` of ``total`` items they will see."""

    done: int
    total: int


@dataclass(frozen=True)
class Summary:
    """The annotator's own current votes in the study, in display terms.

    ``counts`` maps a display key (``left``/``right``/``skip`` or
    ``a``/``b``/``tie``/``both_bad``) to how many current votes used it.
    Nothing here comes from other annotators.
    """

    study: str
    title: str
    kind: str
    done: int
    counts: dict[str, int]
    fast: int


@dataclass(frozen=True)
class StudyProgress:
    """A study as listed on the welcome screen, with one annotator's progress."""

    name: str
    kind: str
    title: str
    description: str
    done: int
    total: int


class VotingSession:
    """One annotator working through one study.

    Parameters
    ----------
    engine : Engine
        The store.
    study : str
        Study name.
    annotator : str
        Annotator name (created on first use).
    """

    def __init__(self, engine: Engine, study: str, annotator: str) -> None:
        self.engine = engine
        self._reader = reader_engine(engine)

        def load(s: Session) -> tuple[StudyRow, int, list[str], set[str]]:
            st = repo.get_study(s, study)
            if st is None:
                raise StudyNotFoundError(study, repo.study_names(s))
            aid = repo.annotator_id(s, annotator)
            assert aid is not None
            subjects = repo.subjects(s, st.id) if st.kind == "difficulty" else []
            return st, aid, subjects, repo.excluded_subjects(s, st.id, aid)

        st, aid, self.subjects, self._excluded = _write(engine, load)
        self.study = st
        self.annotator = annotator
        self.annotator_id = aid
        self.seed = int(st.settings.get("seed", 0))
        self.overlap = int(st.settings.get("overlap", 0))
        self.min_ms = int(st.settings.get("min_response_ms", 0))
        self.reveal = bool(st.settings.get("reveal_models", False))
        self._queue: list[ItemLoad] = []
        self._items: dict[int, ItemLoad] = {}
        self._shown: ShownPair | ShownBattle | None = None
        self._undone_first = False
        self._total = 0
        self._done = 0
        self.refresh()

    @property
    def kind(self) -> str:
        return self.study.kind

    @property
    def excluded_subjects(self) -> set[str]:
        return set(self._excluded)

    def set_excluded_subjects(self, subjects: set[str]) -> None:
        """Opt out of (or back into) subjects; recorded append-only."""

        def record(s: Session) -> None:
            for subj in self.subjects:
                want = subj in subjects
                if want != (subj in self._excluded):
                    repo.add_subject_choice(s, self.study.id, self.annotator_id, subj, want)

        _write(self.engine, record)
        self._excluded = set(subjects)
        self.refresh()

    def refresh(self) -> None:
        """Recompute the queue from the database (other annotators' progress)."""
        with Session(self._reader) as s:
            items = repo.item_loads(s, self.study.id, self.study.kind, counts=self.overlap > 0)
            done = repo.voted_item_ids(s, self.study.id, self.annotator_id)
        self._items = {it.item_id: it for it in items}
        self._shown = None
        eligible = [it for it in items if it.subject not in self._excluded]
        self._done = sum(1 for it in eligible if it.item_id in done)
        self._queue = schedule.queue(
            self.study.name,
            self.annotator,
            self.seed,
            items,
            done=done,
            excluded_subjects=self._excluded,
            overlap=self.overlap,
        )
        self._total = self._done + len(self._queue)

    def progress(self) -> Progress:
        return Progress(self._done, self._total)

    @property
    def undo_refusal(self) -> str | None:
        """Why undo is refused in this study (one line), or None where it is allowed.

        An arena study that reveals the model names after each vote makes every
        vote final once it is committed: undoing it would let the annotator vote
        again on the same battle knowing which model wrote which response.
        """
        if self.study.kind == "arena" and self.reveal:
            return UNDO_REFUSED_AFTER_REVEAL
        return None

    @property
    def can_undo(self) -> bool:
        """Whether undo would withdraw a vote now (there is one, and it is not final)."""
        return self._done > 0 and self.undo_refusal is None

    def _item_votes(self, s: Session, item_id: int) -> int:
        return repo.item_vote_count(s, self.study.id, item_id)

    def current(self) -> ShownPair | ShownBattle | None:
        """The item to show now, or None when the annotator is finished.

        The answer is cached until the next vote, undo or refresh, so the item a
        vote applies to is always the one that was returned (and shown).
        """
        if self._shown is None:
            self._shown = self._load_current()
        return self._shown

    def _load_current(self) -> ShownPair | ShownBattle | None:
        with Session(self._reader) as s:
            while self._queue:
                if self.overlap > 0 and not self._pick_least_judged(s):
                    continue
                it = self._queue[0]
                sw = schedule.swapped(self.study.name, self.annotator, self.seed, it.key)
                if self.study.kind == "difficulty":
                    pv = repo.pair_view(s, it.item_id)
                    left, right = (pv.second, pv.first) if sw else (pv.first, pv.second)
                    return ShownPair(it.item_id, it.key, left, right, sw)
                bv = repo.battle_view(s, it.item_id)
                ra, rb = bv.response_a or "", bv.response_b or ""
                left_r, right_r = (rb, ra) if sw else (ra, rb)
                return ShownBattle(
                    it.item_id, it.key, bv.prompt or "", bv.category, left_r, right_r, sw
                )
        return None

    def _pick_least_judged(self, s: Session) -> bool:
        """Move the least-judged of the next few items to the front (overlap studies).

        Counts are read live, so annotators working at the same time spread
        over different items instead of all taking the one their queue (built
        when they started) put first. Items that reached the cap are dropped.
        An item just brought back by undo keeps its place. Returns False when
        it dropped items and the caller should look again.
        """
        window = self._queue[: 1 if self._undone_first else LOOKAHEAD]
        live = [(self._item_votes(s, it.item_id), pos) for pos, it in enumerate(window)]
        full = {pos for votes, pos in live if votes >= self.overlap}
        if full:
            self._queue = [it for pos, it in enumerate(self._queue) if pos not in full]
            self._total -= len(full)
            self._undone_first = False
            return False
        _, best = min(live)
        self._queue.insert(0, self._queue.pop(best))
        return True

    def vote(self, key: str, response_ms: int | None) -> VoteReceipt:
        """Record a vote given in display terms and move on.

        ``key`` is ``left``, ``right`` or ``skip`` for a question pair (the
        question shown first/second is harder, or cannot judge), and ``a``,
        ``b``, ``tie`` or ``both_bad`` for a battle. The vote is committed before
        this returns.
        """
        shown = self.current()
        if shown is None:
            raise AnnotateError("there is nothing left to vote on in this study", title="Done")
        choice = self._choice(key, shown.swapped)
        fast = response_ms is not None and response_ms < self.min_ms

        def insert(s: Session) -> tuple[str, tuple[str, str] | None]:
            head = repo.chain_head(s, self.annotator_id, shown.item_id)
            row = repo.insert_vote(
                s,
                study_id=self.study.id,
                annotator=self.annotator_id,
                item_id=shown.item_id,
                choice=choice,
                swapped=shown.swapped,
                response_ms=response_ms,
                fast=fast,
                supersedes=head.uuid if head else None,
            )
            revealed = None
            if self.study.kind == "arena" and self.reveal:
                bv = repo.battle_view(s, shown.item_id)
                revealed = (bv.model_b, bv.model_a) if shown.swapped else (bv.model_a, bv.model_b)
            return row.uuid, revealed

        try:
            vote_uuid, revealed = _write(self.engine, insert)
        except IntegrityError as err:
            self.refresh()
            raise VoteConflictError(
                "another session recorded a vote on this item at the same moment; "
                "the queue was refreshed",
                title="Vote not recorded",
            ) from err
        self._queue.pop(0)
        self._shown = None
        self._undone_first = False
        self._done += 1
        return VoteReceipt(vote_uuid, shown.item_id, choice, fast, revealed)

    def _choice(self, key: str, swapped: bool) -> str:
        if self.study.kind == "difficulty":
            if key == "skip":
                return "skip"
            if key not in ("left", "right"):
                raise ValueError(f"unknown key {key!r} for a question pair")
            first_shown = "second" if swapped else "first"
            other = "first" if swapped else "second"
            return first_shown if key == "left" else other
        if key in ("tie", "both_bad"):
            return key
        if key not in ("a", "b"):
            raise ValueError(f"unknown key {key!r} for a battle")
        a_is = "model_b" if swapped else "model_a"
        b_is = "model_a" if swapped else "model_b"
        return a_is if key == "a" else b_is

    def undo(self) -> bool:
        """Withdraw the annotator's latest current vote; its item comes back first.

        Writes a ``retract`` row that supersedes it. Returns False when there is
        nothing to undo.

        Raises
        ------
        AnnotateError
            When the study makes votes final (:attr:`undo_refusal`: an arena study
            that reveals the model names after each vote); nothing is written.
        """
        refusal = self.undo_refusal
        if refusal is not None:
            raise AnnotateError(refusal, title="Undo refused")

        def retract(s: Session) -> VoteRow | None:
            last = repo.latest_current_vote(s, self.study.id, self.annotator_id)
            if last is not None:
                repo.insert_vote(
                    s,
                    study_id=self.study.id,
                    annotator=self.annotator_id,
                    item_id=last.item_id,
                    choice=repo.RETRACT,
                    swapped=last.swapped,
                    response_ms=None,
                    fast=False,
                    supersedes=last.uuid,
                )
            return last

        last = _write(self.engine, retract)
        if last is None:
            return False
        it = self._items[last.item_id]
        self._queue = [q for q in self._queue if q.item_id != it.item_id]
        self._queue.insert(0, it)
        self._undone_first = True
        self._shown = None
        if it.subject in self._excluded:
            self._total += 1
        else:
            self._done = max(0, self._done - 1)
        return True

    def summary(self) -> Summary:
        """The annotator's own current votes in this study (never anyone else's)."""
        counts: dict[str, int] = {}
        fast = 0
        with Session(self._reader) as s:
            rows = repo.own_current_votes(s, self.study.id, self.annotator_id)
        for choice, swapped, is_fast in rows:
            key = _display_key(self.study.kind, choice, swapped)
            counts[key] = counts.get(key, 0) + 1
            fast += int(is_fast)
        return Summary(self.study.name, self.study.title, self.study.kind, len(rows), counts, fast)


LOOKAHEAD = 8
"""How many queued items an overlap study compares live counts for."""

WRITE_ATTEMPTS = 6
"""How often a write is tried when other processes keep the database locked.

Each attempt already waits up to the store's busy timeout (5 s), so a vote
gives up only after about half a minute of continuous contention.
"""


def _write(engine: Engine, fn: Callable[[Session], T]) -> T:
    """Run ``fn`` in one write transaction, retrying while the database is locked.

    Writers from this module queue on an OS file lock beside the database
    before they ask SQLite for its write lock: SQLite's busy handler polls, so
    with many processes voting at once one of them could lose every poll for
    longer than the busy timeout; the kernel's lock queue is fair. The file
    lock dies with its process (``kill -9`` leaves nothing held). A locked
    database raises before anything is written (transactions take the write
    lock at BEGIN), so a retry never duplicates a row.
    """
    for attempt in range(WRITE_ATTEMPTS):
        try:
            with _writer_queue(engine), Session(engine) as s, s.begin():
                return fn(s)
        except OperationalError as err:
            if "locked" not in str(err) or attempt == WRITE_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


@contextmanager
def _writer_queue(engine: Engine) -> Iterator[None]:
    path = engine.url.database
    if fcntl is None or not path or path == ":memory:":
        yield
        return
    fd = os.open(f"{path}.write-lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


_READERS: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


def reader_engine(engine: Engine) -> Engine:
    """An engine on the same file whose transactions do not take the write lock.

    The store's engines begin every transaction with ``BEGIN IMMEDIATE`` (right
    for writers); reading what to show next needs no lock, and with many
    annotators voting at once it must not queue behind their writes. In WAL
    mode readers see the last committed state and never block writers.
    """
    path = engine.url.database
    if not path or path == ":memory:":
        return engine
    reader = _READERS.get(engine)
    if reader is None:
        reader = _READERS[engine] = make_engine(Path(path), immediate=False)
    return reader


def _display_key(kind: str, choice: str, swapped: bool) -> str:
    """The key the annotator pressed for a stored ``choice``."""
    if choice in ("skip", "tie", "both_bad"):
        return choice
    if kind == "difficulty":
        shown_first = "second" if swapped else "first"
        return "left" if choice == shown_first else "right"
    shown_a = "model_b" if swapped else "model_a"
    return "a" if choice == shown_a else "b"


def study_progress(engine: Engine, annotator: str | None) -> list[StudyProgress]:
    """Every study with the annotator's progress (``done`` = 0 for a new or no annotator).

    ``total`` is the number of items this annotator would see now: items in
    subjects they opted out of, and items other annotators already judged
    ``overlap`` times, are not counted.
    """
    out: list[StudyProgress] = []
    with Session(reader_engine(engine)) as s:
        aid = repo.annotator_id(s, annotator, create=False) if annotator else None
        for name in repo.study_names(s):
            st = repo.get_study(s, name)
            assert st is not None
            overlap = int(st.settings.get("overlap", 0))
            items = repo.item_loads(s, st.id, st.kind, counts=overlap > 0)
            done = repo.voted_item_ids(s, st.id, aid) if aid is not None else set()
            excluded = repo.excluded_subjects(s, st.id, aid) if aid is not None else set()
            eligible = [it for it in items if it.subject not in excluded]
            n_done = sum(1 for it in eligible if it.item_id in done)
            todo = sum(
                1
                for it in eligible
                if it.item_id not in done and (overlap <= 0 or it.votes < overlap)
            )
            out.append(
                StudyProgress(st.name, st.kind, st.title, st.description, n_done, n_done + todo)
            )
    return out
