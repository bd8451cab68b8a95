"""An annotator's session on one study: what to show next, votes and undo.

Screens use :class:`VotingSession` and never see SQL. Nothing it returns
before a vote is committed carries a model name or another annotator's vote.
"""

from __future__ import annotations

import contextlib
import gc
import json
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session

from annotate.choices import LEFT_CHOICES, Choice
from annotate.errors import AnnotateError, StudyNotFoundError, VoteConflictError
from annotate.names import normalize_annotator
from annotate.services import retest, schedule
from annotate.services.notes import FLAG_REASONS
from annotate.store import repo
from annotate.store.engine import reader_engine as make_reader_engine
from annotate.store.repo import ItemLoad, StudyRow, VoteRow
from annotate.store.writelock import database_faults, write_session
from annotate.views import (
    HistoryEntry,
    Progress,
    ShownBattle,
    ShownPair,
    StudyProgress,
    Summary,
    VoteReceipt,
)

T = TypeVar("T")

UNDO_REFUSED_AFTER_REVEAL = (
    "Votes in this study are final once the model names are revealed: undo is not available."
)
"""Why undo is refused in an arena study that reveals the model names after each vote."""


CHOICE_PHRASES = {
    "left": "the first question is harder",
    "right": "the second question is harder",
    "skip": "can't judge (skipped)",
    "a": "A is better",
    "b": "B is better",
    "tie": "tie",
    "both_bad": "both are bad",
}
"""A display key (the key's meaning as the annotator saw the item) in words."""

REVISE_REFUSED_AFTER_REVEAL = (
    "Votes in this study are final once the model names are revealed: they cannot be changed."
)


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
        self.annotator = normalize_annotator(annotator)
        """The name as stored (normalised): schedules and sides derive from it."""
        self.annotator_id = aid
        self.settings = st.settings
        """The study's typed settings (parsed when the study was read)."""
        self.seed = st.settings.seed
        self.overlap = st.settings.overlap
        self.min_ms = st.settings.min_response_ms
        self.reveal = st.settings.reveal_models
        self.render_markdown = st.settings.render_markdown
        """Show the study's texts as safely rendered Markdown (else as plain text)."""
        self.instructions = st.settings.instructions.strip()
        """The study's instructions (Markdown; ``""`` when it has none)."""
        self._queue: list[ItemLoad] = []
        self._items: dict[int, ItemLoad] = {}
        self._shown: ShownPair | ShownBattle | None = None
        self._undone_first = False
        self._reserved: tuple[int, float] | None = None
        """The item this session holds in an overlap study, and until when (UNIX s)."""
        self._total = 0
        self._done = 0
        self._selection: dict[int, float] = {}
        """Adaptive studies: item id -> the probability with which it was chosen when shown."""
        self._draw_base = 0
        """Adaptive studies: the annotator's vote count the next draw is seeded with."""
        self._retests: list[retest.RetestDue] = []
        """Swapped re-tests pending for this annotator (``retest_share`` > 0), oldest first."""
        self._retests_done = 0
        self._retest_shown: retest.RetestDue | None = None
        """The re-test on screen, when the item shown is one (screens never see this)."""
        self._answers = self._read_answers() if st.settings.questionnaire else {}
        self._routed_out = self._routing()
        self._excluded |= self._routed_out
        self.refresh()

    # --- the annotator questionnaire and subject routing (issue 16) -----------------

    def _read_answers(self) -> dict[str, str]:
        with Session(self._reader) as s:
            return repo.own_answers(s, self.study.id, self.annotator_id)

    @property
    def needs_questionnaire(self) -> bool:
        """Whether the study's questionnaire is still to be asked (before the first item)."""
        return bool(self.settings.questionnaire) and not self._answers

    def answer_questionnaire(self, answers: dict[str, list[str]]) -> None:
        """Store the annotator's answers (once; each a list of the declared choices).

        Raises
        ------
        ValueError
            When a question is unanswered, has an undeclared choice, or several
            choices where one is expected (nothing is written).
        """
        rows: list[tuple[str, str]] = []
        for q in self.settings.questionnaire:
            got = answers.get(q.key, [])
            if not got or any(c not in q.choices for c in got) or len(got) != len(set(got)):
                raise ValueError(f"questionnaire {q.key!r}: choose from the choices given")
            if len(got) > 1 and not q.multiple:
                raise ValueError(f"questionnaire {q.key!r}: choose one")
            rows.append((q.key, json.dumps(got, ensure_ascii=False)))
        _write(
            self.engine, lambda s: repo.insert_answers(s, self.study.id, self.annotator_id, rows)
        )
        self._answers = dict(rows)
        self._excluded -= self._routed_out
        self._routed_out = self._routing()
        self._excluded |= self._routed_out
        self.refresh()

    def _routing(self) -> set[str]:
        """Subjects this annotator does not see because they did not declare them
        (``route_subjects``); empty when routing is off or not yet answered."""
        key = self.settings.route_subjects
        if not key or key not in self._answers:
            return set()
        declared = set(json.loads(self._answers[key]))
        return {subj for subj in self.subjects if subj not in declared}

    @property
    def kind(self) -> str:
        return self.study.kind

    @property
    def adaptive(self) -> bool:
        """The study chooses each next item adaptively (:mod:`annotate.services.adaptive`)."""
        return self.settings.schedule == "adaptive"

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
        self._excluded = set(subjects) | self._routed_out
        self.refresh()

    def refresh(self) -> None:
        """Recompute the queue from the database (other annotators' progress)."""
        with database_faults(self._reader), Session(self._reader) as s, _gc_paused():
            if self.adaptive and self.overlap > 0:
                items = self._adaptive_item_loads(s)
            else:
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
            file_order=self.settings.file_order,
        )
        self._total = self._done + len(self._queue)
        self._load_retests()

    def _adaptive_item_loads(self, s: Session) -> list[ItemLoad]:
        """:func:`repo.item_loads` of an adaptive study with a cap, its counts taken from the
        schedule's estimates (which read every vote row once anyway, and then only the new
        ones) instead of a second pass over every current vote."""
        from annotate.services import adaptive

        est = adaptive.estimates(self._reader, s, self.study.id, self.study.kind)
        with est.lock:
            votes = est.current_votes()
        return repo.item_loads(s, self.study.id, self.study.kind, votes=votes)

    def _load_retests(self) -> None:
        """The annotator's pending swapped re-tests (none unless ``retest_share`` > 0)."""
        self._retest_shown = None
        if self.settings.retest_share <= 0:
            return
        with Session(self._reader) as s:
            votes = repo.own_vote_order(s, self.study.id, self.annotator_id)
            done = repo.retested_item_ids(s, self.study.id, self.annotator_id)
        self._retests_done = len(done)
        self._retests = retest.pending(
            [v for v in votes if self._items[v[0]].subject not in self._excluded],
            done,
            study=self.study.name,
            annotator=self.annotator,
            seed=self.seed,
            share=self.settings.retest_share,
        )

    def progress(self) -> Progress:
        extra = self._retests_done + len(self._retests)
        return Progress(self._done + self._retests_done, self._total + extra)

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

    def current(self) -> ShownPair | ShownBattle | None:
        """The item to show now, or None when the annotator is finished.

        The answer is cached until the next vote, undo or refresh, so the item a
        vote applies to is always the one that was returned (and shown).
        """
        if self._shown is None:
            self._shown = self._load_current()
            if self._shown is None and self._retests:  # nothing else free now: the re-tests
                self._retest_shown = self._retests[0]
                self._shown = self._show_retest(self._retests[0])
        return self._shown

    def _load_current(self) -> ShownPair | ShownBattle | None:
        self._retest_shown = retest.due(
            self._retests, self.settings.retest_after, queue_empty=not self._queue
        )
        if self._retest_shown is not None:
            return self._show_retest(self._retest_shown)
        if self.overlap > 0:
            if not self._hold_next():
                return None
        elif self.adaptive and not self._undone_first:
            self._draw_base = self._done
            chosen, settled = self._adaptive_choice(self._queue)
            self._apply_pick(chosen, settled, time.time(), hold=False)
        with Session(self._reader) as s:
            if self._queue:
                it = self._queue[0]
                sw = schedule.swapped(self.study.name, self.annotator, self.seed, it.key)
                before = self._undone_choice(s, it.item_id, sw)
                if self.study.kind == "difficulty":
                    pv = repo.pair_view(s, it.item_id)
                    left, right = (pv.second, pv.first) if sw else (pv.first, pv.second)
                    return ShownPair(it.item_id, it.key, left, right, sw, before)
                bv = repo.battle_view(s, it.item_id)
                ra, rb = bv.response_a or "", bv.response_b or ""
                left_r, right_r = (rb, ra) if sw else (ra, rb)
                return ShownBattle(
                    it.item_id, it.key, bv.prompt or "", bv.category, left_r, right_r, sw, before
                )
        return None

    def _show_retest(self, due: retest.RetestDue) -> ShownPair | ShownBattle:
        """A swapped re-test, shown exactly as any item, with the sides the other way round."""
        sw = not due.swapped
        with Session(self._reader) as s:
            before = self._undone_choice(s, due.item_id, sw, retest=True)
            if self.study.kind == "difficulty":
                pv = repo.pair_view(s, due.item_id)
                left, right = (pv.second, pv.first) if sw else (pv.first, pv.second)
                return ShownPair(due.item_id, due.key, left, right, sw, before)
            bv = repo.battle_view(s, due.item_id)
        ra, rb = bv.response_a or "", bv.response_b or ""
        left_r, right_r = (rb, ra) if sw else (ra, rb)
        return ShownBattle(
            due.item_id, due.key, bv.prompt or "", bv.category, left_r, right_r, sw, before
        )

    def _undone_choice(
        self, s: Session, item_id: int, swapped: bool, *, retest: bool = False
    ) -> str | None:
        """In words, this annotator's own vote on the item that an undo withdrew (or None).

        Only the annotator's own chain is read: another annotator's vote never shows.
        ``retest`` reads the annotator's re-test chain on the item.
        """
        head = repo.chain_head(s, self.annotator_id, item_id, retest=retest)
        if head is None or head.choice != Choice.RETRACT or head.supersedes is None:
            return None
        before = repo.vote_by_uuid(s, head.supersedes)
        if before is None or before.choice == Choice.RETRACT:
            return None
        key = _display_key(self.study.kind, before.choice, swapped)
        return CHOICE_PHRASES.get(key, key)

    def _hold_next(self) -> bool:
        """Make sure the queue's first item is reserved for this annotator (overlap studies).

        The item normally was reserved by the transaction of the previous vote; otherwise
        (first item, after undo or refresh, or a hold older than half its time) one write
        transaction picks and reserves it. Returns False when no item is free now.
        """
        now = time.time()
        head = self._queue[0].item_id if self._queue else None
        held = self._reserved
        if head is not None and held and held[0] == head and held[1] - now > RESERVATION_S / 2:
            return True
        undone_first = self._undone_first
        self._draw_base = self._done
        chosen, full = _write(self.engine, lambda s: self._pick_and_hold(s, self._queue, now))
        self._apply_pick(chosen, full, now)
        self._undone_first = undone_first and chosen == head
        return chosen is not None

    def _pick_and_hold(
        self, s: Session, queue: Sequence[ItemLoad], now: float
    ) -> tuple[int | None, set[int]]:
        """Pick the next item and reserve it, inside the caller's write transaction.

        Slots taken by others (their current votes plus their live reservations) are
        counted live, so annotators working at once spread over different items and
        never take more slots than the cap: the transaction holds the database's write
        lock (SQLite's, or the writer advisory lock on PostgreSQL), so no one else can
        pick between this count and this reservation. Among the
        next :data:`LOOKAHEAD` items the least-taken free one wins (ties keep the
        annotator's own order); when none is free the look-ahead widens to the whole
        queue. An item just brought back by undo is looked at alone first. Returns the
        chosen item (None when nothing is free; the hold is then released) and the
        items whose votes alone fill the cap (to drop from the queue).
        """
        if self.adaptive and not self._undone_first:
            return self._adaptive_pick_and_hold(s, queue, now)
        window = list(queue[: 1 if self._undone_first else LOOKAHEAD])
        seen = 0
        full: set[int] = set()
        chosen: int | None = None
        while window:
            slots = repo.item_slots(
                s, self.study.id, self.annotator_id, [it.item_id for it in window], now
            )
            best: tuple[int, int] | None = None
            for pos, it in enumerate(window):
                votes, held = slots.get(it.item_id, (0, 0))
                if not self.settings.takes_votes(votes):
                    full.add(it.item_id)
                elif self.settings.takes_votes(votes + held) and (
                    best is None or votes + held < best[0]
                ):
                    best = (votes + held, pos)
            if best is not None:
                chosen = window[best[1]].item_id
                break
            seen += len(window)
            window = list(queue[seen : seen + max(LOOKAHEAD, seen)])
        if chosen is None:
            repo.release(s, self.study.id, self.annotator_id)
        else:
            repo.reserve(s, self.study.id, self.annotator_id, chosen, now + RESERVATION_S)
        return chosen, full

    def _apply_pick(
        self, chosen: int | None, full: set[int], now: float, *, hold: bool = True
    ) -> None:
        """After the pick's transaction committed: drop full items, put the chosen first.

        ``full`` also holds the items an adaptive schedule found settled. ``hold``: the
        chosen item was reserved (overlap studies).
        """
        if full:
            self._queue = [it for it in self._queue if it.item_id not in full]
            self._total -= len(full)
        if chosen is not None:
            pos = next(k for k, it in enumerate(self._queue) if it.item_id == chosen)
            self._queue.insert(0, self._queue.pop(pos))
            if hold:
                self._reserved = (chosen, now + RESERVATION_S)
        elif hold:
            self._reserved = None
        if not hold and chosen is None:
            self._queue = []

    def _adaptive_choice(
        self, candidates: Sequence[ItemLoad], *, step: int = 0
    ) -> tuple[int | None, set[int]]:
        """Draw the next item of an adaptive study among ``candidates``; record its probability.

        Returns the chosen item (None when every candidate is settled) and the settled ones.
        """
        from annotate.services import adaptive

        with Session(self._reader) as s, _gc_paused():
            est = adaptive.estimates(self._reader, s, self.study.id, self.study.kind)
        seed = schedule.adaptive_draw_seed(
            self.study.name, self.annotator, self.seed, self._draw_base * 64 + step
        )
        with est.lock:
            pick = est.choose([it.item_id for it in candidates], self.settings, seed)
        if pick.item_id is not None:
            self._selection[pick.item_id] = pick.probability
        return pick.item_id, set(pick.settled)

    def _adaptive_pick_and_hold(
        self, s: Session, queue: Sequence[ItemLoad], now: float
    ) -> tuple[int | None, set[int]]:
        """:meth:`_pick_and_hold` of an adaptive study: draw an item, reserve it if free.

        A drawn item whose slots others hold right now is left out and the draw is made
        again among the rest (the recorded probability is that of the last draw, among
        the items still free); settled and full items are returned to leave the queue.
        """
        cands = list(queue)
        gone: set[int] = set()
        chosen: int | None = None
        for step in range(ADAPTIVE_TRIES):
            item, settled = self._adaptive_choice(cands, step=step)
            gone |= settled
            if item is None:
                break
            votes, held = repo.item_slots(s, self.study.id, self.annotator_id, [item], now).get(
                item, (0, 0)
            )
            if not self.settings.takes_votes(votes):
                gone.add(item)
            elif self.settings.takes_votes(votes + held):
                chosen = item
                break
            cands = [it for it in cands if it.item_id != item and it.item_id not in gone]
        if chosen is None:
            repo.release(s, self.study.id, self.annotator_id)
        else:
            repo.reserve(s, self.study.id, self.annotator_id, chosen, now + RESERVATION_S)
        return chosen, gone

    def _check_slot(self, s: Session, item_id: int, now: float) -> None:
        """Refuse a vote only if the annotator's hold lapsed and others filled the item.

        A vote on an item the annotator holds (a live reservation) always counts: the
        slot was kept for them. A hold that expired still counts as long as the item
        has a free slot; only when others took every slot meanwhile is the vote refused.
        """
        hold = repo.reservation_of(s, self.study.id, self.annotator_id)
        if hold is not None and hold[0] == item_id and hold[1] > now:
            return
        votes, held = repo.item_slots(s, self.study.id, self.annotator_id, [item_id], now).get(
            item_id, (0, 0)
        )
        if not self.settings.takes_votes(votes + held):
            raise VoteConflictError(
                f"this item was given to other annotators while you were away (a shown item is "
                f"kept for you {RESERVATION_S / 60:.0f} minutes); your vote was not recorded, "
                "and the next item is shown",
                title="Vote not recorded",
            )

    def keep_reservation(self) -> None:
        """Renew the hold on the item on screen (call it while the annotator reads it).

        Screens may call this on a timer shorter than :data:`RESERVATION_S`; a hold that
        lapses is still honoured unless others filled the item meanwhile.
        """
        if self.overlap <= 0 or self._shown is None or self._retest_shown is not None:
            return  # a re-test is outside the cap: it holds no slot
        item_id, now = self._shown.item_id, time.time()

        def renew(s: Session) -> None:
            repo.reserve(s, self.study.id, self.annotator_id, item_id, now + RESERVATION_S)

        _write(self.engine, renew)
        self._reserved = (item_id, now + RESERVATION_S)

    def release(self) -> None:
        """End this annotator's hold (when they leave the study); the item is free for others."""
        if self.overlap <= 0 or self._reserved is None:
            return
        _write(self.engine, lambda s: repo.release(s, self.study.id, self.annotator_id))
        self._reserved = None
        self._shown = None

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
        if self._retest_shown is not None:
            return self._vote_retest(self._retest_shown, shown, choice, response_ms, fast)
        now = time.time()
        pick: tuple[int | None, set[int]] = (None, set())

        def insert(s: Session) -> tuple[str, tuple[str, str] | None]:
            nonlocal pick
            if self.overlap > 0:
                self._check_slot(s, shown.item_id, now)
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
                selection_probability=self._selection.get(shown.item_id) if self.adaptive else None,
            )
            revealed = None
            if self.study.kind == "arena" and self.reveal:
                bv = repo.battle_view(s, shown.item_id)
                revealed = (bv.model_b, bv.model_a) if shown.swapped else (bv.model_a, bv.model_b)
            if self.overlap > 0:  # the vote ends the hold; hold the next item in the same commit
                rest = _without(self._queue, shown.item_id)
                self._undone_first = False
                self._draw_base = self._done + 1
                pick = self._pick_and_hold(s, rest, now)
            return row.uuid, revealed

        try:
            vote_uuid, revealed = _write(self.engine, insert)
        except VoteConflictError:
            self.refresh()
            raise
        except IntegrityError as err:
            self.refresh()
            raise VoteConflictError(
                "another session recorded a vote on this item at the same moment; "
                "the queue was refreshed",
                title="Vote not recorded",
            ) from err
        self._queue = _without(self._queue, shown.item_id)
        if self.overlap > 0:
            self._apply_pick(*pick, now)
        self._shown = None
        self._undone_first = False
        self._done += 1
        self._retests = retest.after_vote(
            self._retests, (shown.item_id, shown.key, vote_uuid, shown.swapped), self._retest_key
        )
        return VoteReceipt(vote_uuid, shown.item_id, choice, fast, revealed)

    def _retest_key(self, item_key: str) -> bool:
        """Whether this annotator's vote on the item is re-tested (``retest_share``)."""
        share = self.settings.retest_share
        return share > 0 and retest.selected(
            self.study.name, self.annotator, self.seed, item_key, share
        )

    def _vote_retest(
        self,
        due: retest.RetestDue,
        shown: ShownPair | ShownBattle,
        choice: Choice,
        response_ms: int | None,
        fast: bool,
    ) -> VoteReceipt:
        """Store a swapped re-test vote: its own chain beside the original (``retest_of``),
        outside the overlap cap and the fits; committed before this returns."""

        def insert(s: Session) -> str:
            head = repo.chain_head(s, self.annotator_id, due.item_id, retest=True)
            row = repo.insert_vote(
                s,
                study_id=self.study.id,
                annotator=self.annotator_id,
                item_id=due.item_id,
                choice=choice,
                swapped=shown.swapped,
                response_ms=response_ms,
                fast=fast,
                supersedes=head.uuid if head else None,
                retest_of=due.original,
            )
            return row.uuid

        try:
            vote_uuid = _write(self.engine, insert)
        except IntegrityError as err:
            self.refresh()
            raise VoteConflictError(
                "another session recorded a vote on this item at the same moment; "
                "the queue was refreshed",
                title="Vote not recorded",
            ) from err
        self._retests = [d for d in self._retests if d.item_id != due.item_id]
        self._retests_done += 1
        self._shown = self._retest_shown = None
        return VoteReceipt(vote_uuid, shown.item_id, choice, fast, None)

    def _choice(self, key: str, swapped: bool) -> Choice:
        if self.study.kind == "difficulty":
            if key == "skip":
                return Choice.SKIP
            if key not in ("left", "right"):
                raise ValueError(f"unknown key {key!r} for a question pair")
        elif key in ("tie", "both_bad"):
            return Choice(key)
        elif key not in ("a", "b"):
            raise ValueError(f"unknown key {key!r} for a battle")
        first, second = LEFT_CHOICES[self.study.kind]
        shown_first, shown_second = (second, first) if swapped else (first, second)
        return shown_first if key in ("left", "a") else shown_second

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
            if self.settings.retest_share > 0:  # a swapped re-test cast after it goes first
                again = repo.latest_retest_vote(s, self.study.id, self.annotator_id)
                if again is not None and (last is None or again.id > last.id):
                    last = again
            if last is not None:
                repo.insert_vote(
                    s,
                    study_id=self.study.id,
                    annotator=self.annotator_id,
                    item_id=last.item_id,
                    choice=Choice.RETRACT,
                    swapped=last.swapped,
                    response_ms=None,
                    fast=False,
                    supersedes=last.uuid,
                    retest_of=last.retest_of,
                )
            return last

        last = _write(self.engine, retract)
        if last is None:
            return False
        if last.retest_of is not None:  # the re-test comes back first, due at once
            self._retests_done -= 1
            it = self._items[last.item_id]
            back = retest.RetestDue(it.item_id, it.key, last.retest_of, not last.swapped, 1 << 30)
            self._retests.insert(0, back)
            self._shown = None
            return True
        it = self._items[last.item_id]
        self._retests = [d for d in self._retests if d.item_id != it.item_id]
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

    # --- history: the annotator's own votes, changing one (issue 12) ---------------

    @property
    def revise_refusal(self) -> str | None:
        """Why an earlier vote cannot be changed in this study, or None where it can.

        The same rule as undo: in an arena study that reveals the model names, every
        vote is final.
        """
        return None if self.undo_refusal is None else REVISE_REFUSED_AFTER_REVEAL

    def history(self) -> list[HistoryEntry]:
        """The annotator's own current votes in this study, newest first.

        Nothing from other annotators, and no model names (even in studies that
        reveal them).
        """
        with Session(self._reader) as s:
            rows = repo.own_history(s, self.study.id, self.annotator_id, self.study.kind)
        return [self._entry(r) for r in rows]

    def _entry(self, r: repo.HistoryRow) -> HistoryEntry:
        key = _display_key(self.study.kind, r.choice, r.swapped)
        if self.study.kind == "difficulty":
            shown = (r.second_text, r.first_text) if r.swapped else (r.first_text, r.second_text)
            first, second = (_first_line(t) for t in shown)
        else:
            first, second = _first_line(r.first_text), ""
        return HistoryEntry(
            r.item_id, r.key, first, second, key, CHOICE_PHRASES.get(key, key), r.created_at
        )

    def revise(self, item_id: int, key: str) -> HistoryEntry | None:
        """Change the annotator's current vote on ``item_id`` to ``key`` (display terms).

        A new row supersedes the current vote (append-only), committed before this
        returns; the item keeps its place in the annotator's count. Returns the entry
        as it is now, or None when the item has no current vote of this annotator.
        Choosing what is already chosen writes nothing.

        Raises
        ------
        AnnotateError
            Where votes are final (:attr:`revise_refusal`); nothing is written.
        """
        refusal = self.revise_refusal
        if refusal is not None:
            raise AnnotateError(refusal, title="Vote not changed")

        def supersede(s: Session) -> bool:
            head = repo.chain_head(s, self.annotator_id, item_id)
            if head is None or head.choice == Choice.RETRACT or head.study_id != self.study.id:
                return False
            choice = self._choice(key, head.swapped)
            if choice != head.choice:
                repo.insert_vote(
                    s,
                    study_id=self.study.id,
                    annotator=self.annotator_id,
                    item_id=item_id,
                    choice=choice,
                    swapped=head.swapped,
                    response_ms=None,
                    fast=False,
                    supersedes=head.uuid,
                )
            return True

        if not _write(self.engine, supersede):
            return None
        return next((e for e in self.history() if e.item_id == item_id), None)

    # --- comments and flags on the item on screen (issue 12) ------------------------

    flag_reasons: tuple[str, ...] = FLAG_REASONS
    """Why an item may be flagged as broken (the choices the flag key offers)."""

    def add_note(self, item_id: int, kind: str, reason: str, body: str) -> str:
        """Store a comment or flag on ``item_id``; returns the note's uuid.

        It is stored with the annotator's current vote on the item when there is one,
        otherwise on the item alone. ``body`` is stored exactly as typed.
        """
        if kind not in ("comment", "flag"):
            raise ValueError(f"unknown note kind {kind!r}")

        def insert(s: Session) -> str:
            head = repo.chain_head(s, self.annotator_id, item_id)
            vote = head.uuid if head is not None and head.choice != Choice.RETRACT else None
            return repo.insert_item_note(
                s,
                study_id=self.study.id,
                item_id=item_id,
                annotator=self.annotator_id,
                kind=kind,
                reason=reason,
                body=body,
                vote_uuid=vote,
            )

        return _write(self.engine, insert)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a study's items and votes are read.

    Reading a large study makes some 100,000 tuples and objects; each batch of new ones
    wakes the collector, which then walks every object alive (a tenth of the open of a
    100,000-vote study). What is made here holds no reference cycles, so the objects
    are freed as usual and the collector resumes afterwards.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _without(queue: list[ItemLoad], item_id: int) -> list[ItemLoad]:
    """``queue`` without ``item_id`` (a new list). The item voted on is normally first (it
    was shown from there) and a queue holds each item once: then a slice, not a Python
    pass over tens of thousands of items on every key press."""
    if queue and queue[0].item_id == item_id:
        return queue[1:]
    return [it for it in queue if it.item_id != item_id]


def _first_line(text: str) -> str:
    """The first non-blank line of ``text`` (stripped), or ""."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


LOOKAHEAD = 8
"""How many queued items an overlap study compares live counts for."""

ADAPTIVE_TRIES = 8
"""How many draws an adaptive overlap study makes before it finds no free item now."""

RESERVATION_S = 600.0
"""How long an item shown to an annotator of an overlap study is held for them (10 minutes).

While held it counts against the item's cap for everyone else, so annotators working at
once never take more slots than ``overlap``; the vote, moving to another item, undo or
leaving ends the hold. A hold is renewed whenever its item is shown again with less than
half of this left (and by :meth:`VotingSession.keep_reservation`); once lapsed it is still
honoured unless others filled the item meanwhile.
"""

WRITE_ATTEMPTS = 6
"""How often a write is tried when a program outside the writer queue keeps the database locked.

Writers of this project queue on the writer lock (its wait ends after
:data:`annotate.store.writelock.LOCK_TIMEOUT_S` with a one-line error, never retried);
SQLite's "database is locked" then comes only from other programs (an sqlite3 shell).
Each attempt waits up to the store's busy timeout (5 s).
"""


def _write(engine: Engine, fn: Callable[[Session], T]) -> T:
    """Run ``fn`` in one write transaction, retrying while the database is locked.

    The transaction queues behind the other writers on the store's writer lock
    (:func:`annotate.store.writelock.write_session`: a wait ends after a stated time
    with a one-line error), then takes SQLite's write lock at BEGIN. A database
    locked by a program outside the queue raises before anything is written, so a
    retry never duplicates a row. SQLite faults (read-only, corrupt) become one-line
    :class:`~annotate.store.errors.DatabaseError` s.
    """
    for attempt in range(WRITE_ATTEMPTS):
        last = attempt == WRITE_ATTEMPTS - 1
        try:
            with write_session(engine, keep_locked=not last) as s:
                return fn(s)
        except OperationalError as err:
            if "locked" not in str(err) or last:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


_READERS: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


def reader_engine(engine: Engine) -> Engine:
    """An engine on the same file whose transactions do not take the write lock.

    The store's engines begin every transaction with ``BEGIN IMMEDIATE`` (right
    for writers); reading what to show next needs no lock, and with many
    annotators voting at once it must not queue behind their writes. In WAL
    mode (and on PostgreSQL) readers see the last committed state and never block
    writers.
    """
    reader = _READERS.get(engine)
    if reader is None:
        reader = _READERS[engine] = make_reader_engine(engine)
    return reader


def _display_key(kind: str, choice: str, swapped: bool) -> str:
    """The key the annotator pressed for a stored ``choice``."""
    if choice in (Choice.SKIP, Choice.TIE, Choice.BOTH_BAD):
        return str(choice)
    first, second = LEFT_CHOICES["difficulty" if kind == "difficulty" else "arena"]
    shown_first = second if swapped else first
    left, right = ("left", "right") if kind == "difficulty" else ("a", "b")
    return left if choice == shown_first else right


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
            items = repo.item_loads(s, st.id, st.kind, counts=st.settings.capped)
            done = repo.voted_item_ids(s, st.id, aid) if aid is not None else set()
            excluded = repo.excluded_subjects(s, st.id, aid) if aid is not None else set()
            eligible = [it for it in items if it.subject not in excluded]
            n_done = sum(1 for it in eligible if it.item_id in done)
            todo = sum(
                1 for it in eligible if it.item_id not in done and st.settings.takes_votes(it.votes)
            )
            out.append(
                StudyProgress(st.name, st.kind, st.title, st.description, n_done, n_done + todo)
            )
    return out


def known_annotators(engine: Engine) -> list[str]:
    """The annotator names stored in the database (names only: offered as suggestions)."""
    with Session(reader_engine(engine)) as s:
        return repo.all_annotator_names(s)
