"""What the two voting screens share: progress, timing, commit, undo, summary.

A vote is committed (in a worker thread) before the next item is shown, and
the next item is shown as soon as it is committed. A key acts only on an item
whose paint is confirmed (:class:`~annotate.screens.key_gate.KeyGate`): keys
pressed while a vote is being committed or the next item is being painted are
dropped, and a repeat of the same vote key within
:data:`~annotate.screens.key_gate.REPEAT_DEBOUNCE_S` of a vote is ignored, so a
vote always applies to what the annotator saw. The response time runs from the
confirmed paint to the key press.

In a study that reveals the model names after each vote, votes are final: undo
is greyed out, and pressing it says why.

A vote's path: a key's action (``PairScreen.action_vote_first``, ...) calls
:meth:`VoteScreen.cast`, whose worker ``_vote`` calls
:meth:`annotate.services.voting.VotingSession.vote`; that writes the row with
:func:`annotate.store.repo.insert_vote` in one write transaction and returns an
:class:`annotate.views.VoteReceipt`. The screen holds the real ``VotingSession`` (typed
under ``TYPE_CHECKING``: at run time screens import no store code).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events, getters, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Label
from textual.worker import Worker, WorkerState

from annotate.messages import ItemPainted, StudyFinished, StudyOpened, VoteRecorded, VoteUndone
from annotate.screens.key_gate import KeyGate, clock, freeze_startup_objects
from annotate.screens.summary import notify_refused_undo
from annotate.widgets.literal import MAX_SHOWN_CHARS
from annotate.widgets.progress import StudyProgress
from annotate.widgets.reveal import RevealLine
from annotate.widgets.safe_markdown import warm

if TYPE_CHECKING:
    from annotate.screens.full_text import ItemText
    from annotate.services.voting import VotingSession
    from annotate.views import ShownBattle, ShownPair, VoteReceipt


PAINT_RETRY_S = 0.1
"""While an item's paint is not confirmed, ask for its confirmation again this often.

``call_after_refresh`` can miss while a screen is being pushed (the callback lands on
the screen below); keys stay dropped until a confirmation arrives for this screen.
"""


NOTE_SAVED_S = 3.0
"""How long "Comment saved." / "Item flagged: ..." stays in the instruction row."""


KEEP_RESERVATION_S = 120.0
"""While an item stays on screen, renew its reservation this often (it lasts 10 minutes)."""


class VoteScreen(Screen[None]):
    """Base class of :class:`PairScreen` and :class:`BattleScreen`."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (70, "-wide")]
    """Below 70 columns the two halves are stacked (the ``-narrow`` class in app.tcss)."""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "u",
            "undo",
            "Undo",
            tooltip="Withdraw your last vote; its item comes back.",
            id="undo",
        ),
        Binding(
            "escape",
            "studies",
            "Studies",
            show=False,
            tooltip="Back to the list of studies (votes are saved).",
            id="studies",
        ),
        Binding(
            "h",
            "history",
            "History",
            show=False,
            tooltip="Your votes in this study; change an earlier one.",
            id="history",
        ),
        Binding(
            "c",
            "comment_item",
            "Comment",
            show=False,
            tooltip="Leave a one-line comment on this item.",
            id="comment-item",
        ),
        Binding(
            "f",
            "flag_item",
            "Flag item",
            show=False,
            tooltip="Flag this item as broken (typo, identical questions, cut off...).",
            id="flag-item",
        ),
        Binding(
            "v",
            "read_full_text",
            "Full text",
            show=False,
            tooltip="Read this item's texts in full, page by page (long ones are cut).",
            id="full-text",
        ),
    ]
    VOTE_ACTIONS: ClassVar[tuple[str, ...]] = ()
    TEXT_PANES: ClassVar[tuple[str, ...]] = ()
    """The ids of the panes that show the item's texts, in the order of :meth:`full_texts`."""
    """Actions that cast a vote (disabled when the study is finished)."""

    progress_bar = getters.query_one(StudyProgress)

    def __init__(self, session: VotingSession) -> None:
        super().__init__()
        self.session = session
        self.committing = True
        """True while a vote, undo or subject choice is committed (and before the first item)."""
        self.shown: ShownPair | ShownBattle | None = None
        self.gate = KeyGate.from_environment()
        self._note_timer: Timer | None = None
        """Whether a key may act now: the item on screen is painted (see key_gate)."""

    @property
    def busy(self) -> bool:
        """True until the item on screen is painted and free: keys are dropped meanwhile."""
        return self.committing or (self.shown is not None and not self.gate.is_open)

    @property
    def painted_generation(self) -> int:
        """The last item generation whose paint was confirmed (benchmarks watch it)."""
        return self.gate.painted_generation

    def compose(self) -> ComposeResult:
        yield StudyProgress()
        with Horizontal(id="instruction-row"):
            yield Label(self.INSTRUCTION, classes="instruction")
            yield RevealLine(id="reveal")
            yield Label("", id="note-saved")
        yield Label("", id="previous-choice")
        yield from self.compose_item()
        yield Footer()

    INSTRUCTION: ClassVar[str] = ""

    def compose_item(self) -> ComposeResult:
        """The widgets that show one item."""
        yield from ()

    def show_item(self, shown: ShownPair | ShownBattle) -> None:
        """Display ``shown`` (model names are never part of it)."""
        raise NotImplementedError

    def full_texts(self, shown: ShownPair | ShownBattle) -> list[ItemText]:
        """The texts of ``shown`` for the full-text view, in the order of :attr:`TEXT_PANES`."""
        raise NotImplementedError

    def more_hint(self) -> str:
        """The end of the line under a cut text: which key shows it whole (as remapped)."""
        for active in self.active_bindings.values():
            if active.binding.id == "full-text":
                return f"{self.app.get_key_display(active.binding)} shows the whole text"
        return ""

    def on_mount(self) -> None:
        self.progress_bar.set_title(self.session.study.title or self.session.study.name)
        self.post_message(StudyOpened(self.session.study.name, self.session.annotator))
        self.set_interval(KEEP_RESERVATION_S, self._keep_reservation)
        self.show_current()

    # --- reservations and rendering in worker threads -----------------------------

    @classmethod
    def item_texts(cls, shown: ShownPair | ShownBattle) -> tuple[str, ...]:
        """The texts of ``shown`` rendered as Markdown (when the study asks for it)."""
        return ()

    @classmethod
    def prepare(cls, session: VotingSession) -> None:
        """Load the session's current item and render its Markdown (call it in a thread)."""
        shown = session.current()
        if shown is not None and session.render_markdown:
            from annotate.screens.full_text import first_page

            # what the panes show: a longer text is cut there (rendering 1 MB took seconds);
            # of a cut text, also the first page of the full-text view (v)
            texts = cls.item_texts(shown)
            warm(*(text[:MAX_SHOWN_CHARS] for text in texts))
            warm(*(first_page(text) for text in texts if len(text) > MAX_SHOWN_CHARS))

    def _keep_reservation(self) -> None:
        """A long read does not let the item's reservation lapse (renewed in a thread)."""
        if self.shown is not None and not self.committing:
            self.run_worker(
                self.session.keep_reservation,
                thread=True,
                exclusive=True,
                exit_on_error=False,
                group="keep-reservation",
            )

    # --- showing --------------------------------------------------------------

    def show_current(self) -> None:
        """Show the session's current item, or the summary when there is none."""
        p = self.session.progress()
        self.progress_bar.set_progress(p.done, p.total)
        self.shown = self.session.current()
        self.committing = False
        self.refresh_bindings()
        if self.shown is None:
            self.gate.close()
            self._show_summary()
            return
        self.show_item(self.shown)
        self._show_previous(self.shown.previous)
        self._confirm_paint(self.gate.item_shown())

    def _confirm_paint(self, generation: int) -> None:
        """Ask to be called back once the frame holding item ``generation`` is written.

        Repeats every :data:`PAINT_RETRY_S` until a confirmation arrives (or a newer
        item replaces this one); keys are dropped until then.
        """
        if generation != self.gate.generation or self.painted_generation == generation:
            return
        self.call_after_refresh(self._after_refresh, generation)
        self.set_timer(PAINT_RETRY_S, partial(self._retry_paint, generation))

    def _retry_paint(self, generation: int) -> None:
        if generation == self.gate.generation and self.painted_generation != generation:
            self._confirm_paint(generation)

    def _after_refresh(self, generation: int) -> None:
        # A second round trip: the first callback can run before the widgets' own
        # refresh messages reach the screen; after the second, their frame is written.
        self.call_after_refresh(self._painted, generation)

    def _painted(self, generation: int) -> None:
        """The item is on screen: keys may act on it and its response time starts now."""
        if not self.is_current or self.shown is None:
            return  # another screen is on top; the retry timer asks again
        if self.gate.item_painted(generation, self.shown.item_id):
            self.refresh_bindings()
            self.post_message(ItemPainted(self.session.study.name, self.shown.item_id))
            # Once per process, after the first item is on screen (not before: it
            # costs tens of milliseconds of the app's start-up).
            freeze_startup_objects()

    def _show_summary(self) -> None:
        from annotate.screens.summary import SummaryScreen

        self.post_message(StudyFinished(self.session.study.name))
        summary = SummaryScreen(self.session.summary(), undo_refusal=self.session.undo_refusal)
        self.app.push_screen(summary, self._after_summary)

    def _after_summary(self, choice: str | None) -> None:
        if choice == "undo" and self.session.can_undo and not self.committing:
            self._start_undo()
        elif choice == "studies":
            self.action_studies()

    # --- voting -----------------------------------------------------------------

    def key_pressed_at(self) -> float:
        """When the key being handled was read from the terminal (:func:`key_gate.clock`)."""
        pressed_at = getattr(self.app, "key_pressed_at", None)
        return clock() if pressed_at is None else float(pressed_at)

    def cast(self, key: str) -> None:
        """Vote ``key`` (display terms) on the item on screen, then show the next.

        Dropped unless the item's paint is confirmed, the key was pressed after it,
        and it does not repeat the last vote's key within the debounce.
        """
        pressed_at = self.key_pressed_at()
        if self.committing or self.shown is None or not self.gate.admit(key, pressed_at):
            return
        response_ms = max(0, round((pressed_at - self.gate.painted_at) * 1000))
        self.committing = True
        self.gate.close()
        self._vote(key, response_ms)

    @work(thread=True, exclusive=True, exit_on_error=False, group="vote")
    def _vote(self, key: str, response_ms: int) -> None:
        receipt = self.session.vote(key, response_ms)
        self.prepare(self.session)  # load (and render) the next item in this thread too
        self.app.call_from_thread(self._voted, receipt)

    def _voted(self, receipt: VoteReceipt) -> None:
        self.post_message(VoteRecorded(self.session.study.name, receipt))
        if receipt.revealed is not None:
            self.query_one("#reveal", RevealLine).show(*receipt.revealed)
        self.show_current()

    def action_undo(self) -> None:
        refusal = self.session.undo_refusal
        if refusal is not None:
            self.notify(refusal, title="Undo", severity="warning", markup=False)
        elif (
            self.session.can_undo and not self.committing and self.gate.ready(self.key_pressed_at())
        ):
            self._start_undo()

    def _start_undo(self) -> None:
        self.committing = True
        self.gate.close()
        self._undo()

    def on_key(self, event: events.Key) -> None:
        """A greyed-out undo key says why (Textual runs no action for it)."""
        notify_refused_undo(self, event, self.session.undo_refusal)

    @work(thread=True, exclusive=True, exit_on_error=False, group="vote")
    def _undo(self) -> None:
        undone = self.session.undo()
        self.prepare(self.session)
        self.app.call_from_thread(self._undone, undone)

    def _undone(self, undone: bool) -> None:
        if undone:
            self.post_message(VoteUndone(self.session.study.name))
        self.show_current()
        if undone and (self.shown is None or self.shown.previous is None):
            # The item's line "You chose: ... (undone)" says it otherwise; a toast would
            # cover the bottom of the right pane (and its "more below") for 2 s.
            self.notify("Last vote withdrawn; the item is back.", title="Undo", timeout=2)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.app_report(event.worker.error)
            if event.worker.group == "vote":
                self._reload()

    def reload_item(self) -> None:
        """Show (and paint anew) the item the session holds now; keys wait for the paint.

        The app calls it when a quick start's real session holds another item than the
        one shown (see :mod:`annotate.services.quick_start`).
        """
        self.committing = True
        self.gate.close()
        self._reload()

    @work(thread=True, exclusive=True, exit_on_error=False, group="reload")
    def _reload(self) -> None:
        """After a failed vote or undo: show (and paint anew) the item the session holds now.

        A vote that met a conflict refreshed the session's queue, so the item to
        vote on may have changed; keys stay dropped until it is painted.
        """
        self.prepare(self.session)
        self.app.call_from_thread(self.show_current)

    def app_report(self, err: BaseException) -> None:
        report = getattr(self.app, "report_failure", None)
        if report is not None:
            report(err)

    def action_studies(self) -> None:
        """Back to the studies; the item's reservation is released (in a thread)."""
        release_sessions(self.app, [self.session])
        self.dismiss()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "undo" and not self.session.can_undo:
            return None
        if action in self.VOTE_ACTIONS and self.shown is None:
            return None
        if action in ("comment_item", "flag_item", "read_full_text") and self.shown is None:
            return None
        return True

    # --- history, comments and flags, full texts (issue 12) --------------------------

    def action_read_full_text(self) -> None:
        """The item's texts in full (:class:`FullTextScreen`), starting from a cut one."""
        from annotate.screens.full_text import FullTextScreen

        shown = self.shown
        if self.committing or shown is None:
            return
        texts = self.full_texts(shown)
        cut = [i for i, t in enumerate(texts) if len(t.text) > MAX_SHOWN_CHARS]
        focused = self.focused.id if self.focused is not None else None
        at = self.TEXT_PANES.index(focused) if focused in self.TEXT_PANES else 0
        # the focused pane's text if it is cut, else the first cut text, else the focused one
        start = at if at in cut or not cut else cut[0]
        self.app.push_screen(
            FullTextScreen(texts, markdown=self.session.render_markdown, start=start)
        )

    def _show_previous(self, previous: str | None) -> None:
        """Under the instruction: what the annotator chose before undoing this item."""
        line = self.query_one("#previous-choice", Label)
        line.update(Text(f"You chose: {previous} (undone)") if previous else Text())
        line.display = previous is not None

    def action_history(self) -> None:
        from annotate.screens.history import HistoryScreen

        if not self.committing:
            self.app.push_screen(HistoryScreen(self.session))

    def _note_target(self) -> tuple[int, str] | None:
        """The painted item a comment or flag key applies to (None: the key is dropped)."""
        shown = self.shown
        if self.committing or shown is None or not self.gate.ready(self.key_pressed_at()):
            return None
        return shown.item_id, shown.key

    def action_comment_item(self) -> None:
        from annotate.screens.item_note import CommentScreen

        target = self._note_target()
        if target is None:
            return
        item_id, key = target

        def save(text: str | None) -> None:
            if text:
                self._save_note(item_id, "comment", "", text)

        self.app.push_screen(CommentScreen(key), save)

    def action_flag_item(self) -> None:
        from annotate.screens.item_note import FlagScreen

        target = self._note_target()
        if target is None:
            return
        item_id, key = target

        def save(flag: tuple[str, str] | None) -> None:
            if flag:
                self._save_note(item_id, "flag", *flag)

        self.app.push_screen(FlagScreen(key, self.session.flag_reasons), save)

    @work(thread=True, exit_on_error=False, group="note")
    def _save_note(self, item_id: int, kind: str, reason: str, text: str) -> None:
        self.session.add_note(item_id, kind, reason, text)
        said = "Comment saved." if kind == "comment" else f"Item flagged: {reason}."
        self.app.call_from_thread(self._note_saved, said)

    def _note_saved(self, said: str) -> None:
        """Say it in the instruction row for a few seconds: a toast would cover the right pane."""
        line = self.query_one("#note-saved", Label)
        line.update(Text(said))
        line.display = True
        if self._note_timer is not None:
            self._note_timer.stop()
        self._note_timer = self.set_timer(NOTE_SAVED_S, self._hide_note_saved)

    def _hide_note_saved(self) -> None:
        self.query_one("#note-saved", Label).display = False

    # --- command palette --------------------------------------------------------

    def palette_commands(self) -> Iterator[SystemCommand]:
        """Commands for the palette: every enabled binding of this screen."""
        seen: set[str] = set()
        for cls in type(self).__mro__:
            if not issubclass(cls, VoteScreen):
                break
            for binding in cls.__dict__.get("BINDINGS", ()):
                if not isinstance(binding, Binding) or binding.action in seen:
                    continue
                seen.add(binding.action)
                if self.check_action(binding.action, ()) is not True:
                    continue
                callback: Callable[[], object] = getattr(self, f"action_{binding.action}")
                yield SystemCommand(binding.description, binding.tooltip, callback)


def release_sessions(app: App[Any], sessions: Sequence[VotingSession]) -> Worker[None] | None:
    """Release the annotator's reservations in ``sessions`` in a worker thread of ``app``."""
    if not sessions:
        return None

    def release() -> None:
        for session in sessions:
            session.release()

    return app.run_worker(release, thread=True, exit_on_error=False, group="release")
