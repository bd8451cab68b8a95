"""The app's quick start: the first item on screen before the full store is imported.

``annotate --annotator NAME --study STUDY`` for an annotator who is resuming spends
most of its start-up importing SQLAlchemy, SQLModel and pydantic, which the first
item does not need. :func:`quick_start` reads what that item needs with sqlite3 alone
(:mod:`annotate.store.quick_item`) and returns a :class:`StartingSession`: it answers
the voting screen's first questions (the study, the progress, the item) from that
read, and opens the real :class:`~annotate.services.voting.VotingSession` in a
background thread once the item is painted (:meth:`StartingSession.load_in_background`),
then hands every call to it.

The quick read is taken only where it cannot differ from the full store's first
answer: an up-to-date database, an annotator already in it (under their normalised
name) with a current vote in the study (so no instructions, subject choice or
questionnaire come first), a study without an overlap cap (no reservation to take),
without revealed model names, and with every other setting that shapes the schedule
at its default (:data:`PREVIEW_SETTINGS` lists the settings that may differ), and a
first item the annotator never voted on (an undone item says what was chosen: the
full store's job). Anything else returns None and the app takes its usual path.

Two guards keep a vote on what the annotator saw even so: when the real session
opens, its current item and progress are compared with the preview's (the app shows
the real item afresh if they differ), and a vote cast before the real session is
used is refused unless the real session's current item is the one that was painted.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.errors import VoteConflictError
from annotate.names import InvalidNameError, normalize_annotator
from annotate.services import schedule
from annotate.store.quick_item import QuickReader
from annotate.store.rows import StudyRow
from annotate.study_settings import StudySettings
from annotate.views import Progress, ShownBattle, ShownPair

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from annotate.services.voting import VotingSession
    from annotate.views import VoteReceipt

    _SessionBase = VotingSession
else:
    _SessionBase = object

__all__ = ["PREVIEW_SETTINGS", "QuickPreview", "StartingSession", "quick_preview", "quick_start"]

PREVIEW_SETTINGS = frozenset(
    {"kind", "seed", "min_response_ms", "identity_phrases", "render_markdown", "instructions"}
)
"""Study settings that may take any value on the quick path; every other one must be at
its kind's default (``overlap`` 0 and ``reveal_models`` false are checked as well). A
setting added later is at its default or sends the study down the full path."""

ITEM_CHANGED = (
    "the item changed while the app was starting (another session of yours voted?); "
    "your vote was not recorded, and the item now current is shown"
)


@dataclass(frozen=True)
class QuickPreview:
    """What the voting screen shows first, read without the full store."""

    study: StudyRow
    annotator: str
    """The annotator's name as stored (normalised)."""
    annotator_id: int
    subjects: list[str]
    excluded: frozenset[str]
    progress: Progress
    shown: ShownPair | ShownBattle


def _plain(settings: StudySettings) -> bool:
    """Whether nothing in ``settings`` changes the first item or what comes before it."""
    if settings.overlap != 0 or settings.reveal_models:
        return False
    defaults = StudySettings.for_kind(settings.kind)
    return all(
        getattr(settings, f.name) == getattr(defaults, f.name)
        for f in fields(settings)
        if f.name not in PREVIEW_SETTINGS and f.name not in ("overlap", "reveal_models")
    )


def quick_preview(path: Path, study: str, annotator: str) -> QuickPreview | None:
    """The first item of ``study`` for ``annotator``, read with sqlite3 only (or None).

    None means "take the full path": see the module docstring for when.
    """
    try:
        norm = normalize_annotator(annotator)
    except InvalidNameError:
        return None
    reader = QuickReader.open(path)
    if reader is None:
        return None
    try:
        with reader:
            return _preview(reader, study, norm)
    except (sqlite3.Error, ValueError, TypeError):  # json, settings and odd values included
        return None


def _preview(reader: QuickReader, study: str, norm: str) -> QuickPreview | None:
    stored = reader.study(study)
    if stored is None:
        return None
    sid, name, kind, title, description, settings_json, fingerprint = stored
    raw = json.loads(settings_json)
    if not isinstance(raw, dict):
        return None
    settings = StudySettings.from_dict(kind, raw, ignore_unknown=True)
    if not _plain(settings):
        return None
    aid = reader.annotator_id(norm)
    if aid is None:
        return None
    items = reader.item_loads(sid, kind)
    done = reader.voted_item_ids(sid, aid)
    excluded = reader.excluded_subjects(sid, aid)
    n_done = sum(1 for it in items if it.subject not in excluded and it.item_id in done)
    if n_done == 0:
        return None  # not started: instructions and the subject choice come first
    queue = schedule.queue(
        name, norm, settings.seed, items, done=done, excluded_subjects=excluded, overlap=0
    )
    if not queue or reader.has_votes_on(aid, queue[0].item_id):
        return None  # finished (the summary), or an undone item ("You chose: ...")
    head = queue[0]
    sw = schedule.swapped(name, norm, settings.seed, head.key)
    shown: ShownPair | ShownBattle
    if kind == "difficulty":
        pair = reader.pair(head.item_id)
        if pair is None:
            return None
        first, second = pair
        left, right = (second, first) if sw else (first, second)
        shown = ShownPair(head.item_id, head.key, left, right, sw, None)
    else:
        battle = reader.battle(head.item_id)
        if battle is None:
            return None
        prompt, category, ra, rb = battle
        ra, rb = ra or "", rb or ""
        left_r, right_r = (rb, ra) if sw else (ra, rb)
        shown = ShownBattle(head.item_id, head.key, prompt or "", category, left_r, right_r, sw)
    return QuickPreview(
        StudyRow(sid, name, kind, title, description, settings, fingerprint),
        norm,
        aid,
        reader.subjects(sid) if kind == "difficulty" else [],
        frozenset(excluded),
        Progress(n_done, n_done + len(queue)),
        shown,
    )


class StartingSession(_SessionBase):
    """A voting session whose first item was read without the full store.

    Until the real session is open it answers from the :class:`QuickPreview`;
    afterwards it hands every call to the real one. Attributes it does not define
    are looked up on the real session, opening it first if needed (this blocks the
    caller: the voting screens make such calls in worker threads, or for keys other
    than votes pressed in the first moments).

    Parameters
    ----------
    preview : QuickPreview
        What :func:`quick_preview` read.
    open_engine : callable
        Opens the full store (:func:`annotate.services.db.open_store`); called once, in
        the thread that opens the real session.
    """

    def __init__(self, preview: QuickPreview, open_engine: Callable[[], Engine]) -> None:
        self.preview = preview
        self._open_engine = open_engine
        self.study = preview.study
        self.annotator = preview.annotator
        self.annotator_id = preview.annotator_id
        self.subjects = preview.subjects
        self.settings = preview.study.settings
        self.seed = self.settings.seed
        self.overlap = self.settings.overlap
        self.min_ms = self.settings.min_response_ms
        self.reveal = self.settings.reveal_models
        self.render_markdown = self.settings.render_markdown
        self.instructions = self.settings.instructions.strip()
        self._lock = threading.Lock()
        self._real: VotingSession | None = None
        self._adopted = False
        """Whether the screen has been given an answer of the real session's."""
        self._loading = False

    # --- the real session -------------------------------------------------------

    @property
    def real(self) -> VotingSession | None:
        """The real session once it is open (None before)."""
        return self._real

    def open_real(self) -> VotingSession:
        """The real session, opened (and its current item loaded) on first call; blocks."""
        with self._lock:
            if self._real is None:
                from annotate.services.voting import VotingSession

                real = VotingSession(self._open_engine(), self.study.name, self.annotator)
                real.current()
                self._real = real
            return self._real

    def matches_preview(self) -> bool:
        """Whether the real session's item and progress are the preview's (open it first)."""
        real = self.open_real()
        return real.current() == self.preview.shown and real.progress() == self.preview.progress

    def load_in_background(self, on_ready: Callable[[BaseException | None], None]) -> None:
        """Open the real session in a daemon thread (once); then call ``on_ready`` there.

        ``on_ready`` gets None when it opened, else the error (a later call that needs
        the real session tries again).
        """
        if self._loading or self._real is not None:
            return
        self._loading = True

        def load() -> None:
            try:
                self.open_real()
            except Exception as err:  # reported by the app; votes retry and report it
                self._loading = False
                on_ready(err)
                return
            on_ready(None)

        threading.Thread(target=load, name="annotate-open-store", daemon=True).start()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.open_real(), name)

    # --- what the voting screen asks before the real session is open ---------------

    @property
    def kind(self) -> str:
        return self.study.kind

    @property
    def excluded_subjects(self) -> set[str]:
        real = self._real
        return set(self.preview.excluded) if real is None else real.excluded_subjects

    def progress(self) -> Progress:
        real = self._real
        return self.preview.progress if real is None else real.progress()

    def current(self) -> ShownPair | ShownBattle | None:
        real = self._real
        if real is None:
            return self.preview.shown
        self._adopted = True
        return real.current()

    @property
    def undo_refusal(self) -> str | None:
        real = self._real
        return None if real is None else real.undo_refusal  # arena + reveal: never quick

    @property
    def can_undo(self) -> bool:
        real = self._real
        return self.preview.progress.done > 0 if real is None else real.can_undo

    def vote(self, key: str, response_ms: int | None) -> VoteReceipt:
        """Vote on the painted item (blocks until the real session is open).

        Refused (:class:`VoteConflictError`) if the screen still shows the preview's
        item and the real session's current item is another one.
        """
        real = self.open_real()
        if not self._adopted:
            if real.current() != self.preview.shown:
                raise VoteConflictError(ITEM_CHANGED, title="Vote not recorded")
            self._adopted = True
        return real.vote(key, response_ms)

    def release(self) -> None:
        """Release the real session's reservation (none before it is open: no overlap cap)."""
        if self._real is not None:
            self._real.release()

    def keep_reservation(self) -> None:
        if self._real is not None:
            self._real.keep_reservation()


def quick_start(
    path: Path, study: str, annotator: str, open_engine: Callable[[], Engine]
) -> StartingSession | None:
    """A :class:`StartingSession` for ``annotator`` in ``study``, or None (the full path)."""
    preview = quick_preview(path, study, annotator)
    return None if preview is None else StartingSession(preview, open_engine)
