"""What the two voting screens share: progress, timing, commit, undo, summary.

A vote is committed (in a worker thread) before the next item is shown, and
the next item is shown as soon as it is committed. Keys pressed while a vote
is being committed are ignored, so a vote always applies to the item on
screen. The response time runs from when the item is painted to the key press.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, ClassVar

from textual import getters, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Label
from textual.worker import Worker, WorkerState

from annotate.messages import StudyFinished, StudyOpened, VoteRecorded, VoteUndone
from annotate.widgets.progress import StudyProgress

if TYPE_CHECKING:
    from annotate.screens.contracts import ReceiptLike as VoteReceipt
    from annotate.screens.contracts import SessionLike as VotingSession
    from annotate.screens.contracts import ShownBattleLike as ShownBattle
    from annotate.screens.contracts import ShownPairLike as ShownPair


PAINT_FALLBACK_S = 0.05
"""If no repaint is seen, the response time starts this long after the item was shown."""


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
    ]
    VOTE_ACTIONS: ClassVar[tuple[str, ...]] = ()
    """Actions that cast a vote (disabled when the study is finished)."""

    progress_bar = getters.query_one(StudyProgress)

    def __init__(self, session: VotingSession) -> None:
        super().__init__()
        self.session = session
        self.busy = True
        """True while a vote or undo is being committed: keys are ignored meanwhile."""
        self.shown: ShownPair | ShownBattle | None = None
        self._shown_at = 0.0
        self._generation = 0
        self.painted_generation = -1
        """The last item generation known to be painted (benchmarks watch it)."""

    def compose(self) -> ComposeResult:
        yield StudyProgress()
        yield Label(self.INSTRUCTION, classes="instruction")
        yield from self.compose_item()
        yield Footer()

    INSTRUCTION: ClassVar[str] = ""

    def compose_item(self) -> ComposeResult:
        """The widgets that show one item."""
        yield from ()

    def show_item(self, shown: ShownPair | ShownBattle) -> None:
        """Display ``shown`` (model names are never part of it)."""
        raise NotImplementedError

    def on_mount(self) -> None:
        self.progress_bar.set_title(self.session.study.title or self.session.study.name)
        self.post_message(StudyOpened(self.session.study.name, self.session.annotator))
        self.show_current()

    # --- showing --------------------------------------------------------------

    def show_current(self) -> None:
        """Show the session's current item, or the summary when there is none."""
        p = self.session.progress()
        self.progress_bar.set_progress(p.done, p.total)
        self.shown = self.session.current()
        self.refresh_bindings()
        if self.shown is None:
            self.busy = False
            self._show_summary()
            return
        self.show_item(self.shown)
        self.busy = False
        self._shown_at = time.perf_counter()
        self._generation += 1
        generation = self._generation
        # The response time runs from the paint. call_after_refresh does not
        # always fire while a screen is being pushed, so a short timer backs it up.
        self.call_after_refresh(self._painted, generation)
        self.set_timer(PAINT_FALLBACK_S, partial(self._painted, generation))

    def _painted(self, generation: int) -> None:
        """The item is on screen: its response time starts now (unless a key came first)."""
        if generation == self._generation and self.painted_generation != generation:
            self.painted_generation = generation
            self._shown_at = time.perf_counter()

    def _show_summary(self) -> None:
        from annotate.screens.summary import SummaryScreen

        self.post_message(StudyFinished(self.session.study.name))
        self.app.push_screen(SummaryScreen(self.session.summary()), self._after_summary)

    def _after_summary(self, choice: str | None) -> None:
        if choice == "undo":
            self.action_undo()
        elif choice == "studies":
            self.action_studies()

    # --- voting -----------------------------------------------------------------

    def cast(self, key: str) -> None:
        """Vote ``key`` (display terms) on the item on screen, then show the next."""
        if self.busy or self.shown is None:
            return
        self.busy = True
        self.painted_generation = self._generation  # a late paint callback changes nothing
        response_ms = round((time.perf_counter() - self._shown_at) * 1000)
        self._vote(key, response_ms)

    @work(thread=True, exclusive=True, exit_on_error=False, group="vote")
    def _vote(self, key: str, response_ms: int) -> None:
        receipt = self.session.vote(key, response_ms)
        self.session.current()  # load the next item in this thread too
        self.app.call_from_thread(self._voted, receipt)

    def _voted(self, receipt: VoteReceipt) -> None:
        self.post_message(VoteRecorded(self.session.study.name, receipt))
        if receipt.revealed is not None:
            left, right = receipt.revealed
            self.notify(
                f"Your last vote: A was {left}, B was {right}",
                title="Models",
                timeout=4,
                markup=False,
            )
        self.show_current()

    def action_undo(self) -> None:
        if self.session.can_undo:
            self.busy = True
            self._undo()

    @work(thread=True, exclusive=True, exit_on_error=False, group="vote")
    def _undo(self) -> None:
        undone = self.session.undo()
        self.session.current()
        self.app.call_from_thread(self._undone, undone)

    def _undone(self, undone: bool) -> None:
        if undone:
            self.post_message(VoteUndone(self.session.study.name))
            self.notify("Last vote withdrawn; the item is back.", title="Undo", timeout=2)
        self.show_current()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.busy = False
            self.app_report(event.worker.error)

    def app_report(self, err: BaseException) -> None:
        report = getattr(self.app, "report_failure", None)
        if report is not None:
            report(err)

    def action_studies(self) -> None:
        self.dismiss()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "undo" and not self.session.can_undo:
            return None
        if action in self.VOTE_ACTIONS and self.shown is None:
            return None
        return True

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
