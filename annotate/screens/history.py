"""The annotator's own votes in the study, newest first, and changing an earlier one.

Only the annotator's own current votes are listed (the session reads nothing else),
with the item key, the first line of the two questions (or of the prompt), what was
chosen in display terms and when. With a row highlighted, the vote keys of the study
change that vote: a new row supersedes it, committed before the list is redrawn. In an
arena study that reveals the model names every vote is final, so the keys are greyed
out and the screen says why. No model name is ever shown here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, getters, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label
from textual.worker import Worker, WorkerState

from annotate.widgets.literal import literal_line

if TYPE_CHECKING:
    from collections.abc import Sequence

    from annotate.services.voting import VotingSession
    from annotate.views import HistoryEntry

REVISE_KEYS = {
    "difficulty": {"first_harder": "left", "second_harder": "right", "skip": "skip"},
    "arena": {"a_better": "a", "b_better": "b", "tie": "tie", "both_bad": "both_bad"},
}
"""Per study kind: the history screen's revise actions and the display key each writes."""

HINTS = {
    "difficulty": "↑/↓ choose a vote · 1 / 2 / 0 change it · Esc back",
    "arena": "↑/↓ choose a vote · a / b / t / x change it · Esc back",
}


def ago(when: datetime, now: datetime | None = None) -> str:
    """How long ago ``when`` was, in a few characters ("just now", "5 min ago", a date).

    Examples
    --------
    >>> t = datetime(2025, 1, 2, 12, 0, tzinfo=UTC)
    >>> ago(t, t), ago(t, t.replace(hour=13, minute=30)), ago(t, t.replace(day=9))
    ('just now', '90 min ago', '2025-01-02')
    """
    seconds = ((now or datetime.now(UTC)) - when).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 2 * 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 24 * 3600:
        return f"{int(seconds // 3600)} h ago"
    return when.astimezone().strftime("%Y-%m-%d")


class HistoryScreen(Screen[None]):
    """The annotator's own votes in one study; a difficulty (or undoable arena) vote can change."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,h", "close", "Back", tooltip="Back to voting.", id="history-close"),
        Binding(
            "1",
            "first_harder",
            "1st harder",
            tooltip="Change to: first is harder.",
            id="vote-first-harder",
        ),
        Binding(
            "2",
            "second_harder",
            "2nd harder",
            tooltip="Change to: second is harder.",
            id="vote-second-harder",
        ),
        Binding("0", "skip", "Can't judge", tooltip="Change to: can't judge.", id="vote-skip"),
        Binding("a", "a_better", "A better", tooltip="Change to: A is better.", id="vote-a"),
        Binding("b", "b_better", "B better", tooltip="Change to: B is better.", id="vote-b"),
        Binding("t", "tie", "Tie", tooltip="Change to: tie.", id="vote-tie"),
        Binding(
            "x", "both_bad", "Both bad", tooltip="Change to: both are bad.", id="vote-both-bad"
        ),
    ]

    table = getters.query_one("#history-table", DataTable)
    status = getters.query_one("#history-status", Label)

    def __init__(self, session: VotingSession) -> None:
        super().__init__()
        self.session = session
        self.entries: list[HistoryEntry] = []
        self.loaded = False
        """False until the list is filled (tests wait for it)."""
        self.revising = False

    @property
    def busy(self) -> bool:
        """True while the list loads or a change is being committed: keys are dropped."""
        return not self.loaded or self.revising

    def compose(self) -> ComposeResult:
        title = Text("Your votes: ", style="bold")
        title.append_text(literal_line(self.session.study.title or self.session.study.name))
        yield Label(title, id="history-title")
        refusal = self.session.revise_refusal
        hint = HINTS.get(self.session.kind, "") if refusal is None else refusal + " Esc: back."
        yield Label(Text(hint), id="history-status")
        yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, exit_on_error=False, group="history")
    def _load(self, follow: int | None = None) -> None:
        entries = list(self.session.history())
        self.app.call_from_thread(self._show, entries, follow)

    def _show(self, entries: Sequence[HistoryEntry], follow: int | None) -> None:
        """Fill the table; the cursor goes to item ``follow`` (or stays where it was)."""
        row = self.table.cursor_row
        self.entries = list(entries)
        table = self.table
        table.clear(columns=True)
        width = max(60, self.app.size.width)
        text_w = max(16, width - 6 - 30 - 12 - 8)
        table.add_column("item", width=6)
        table.add_column("questions" if self.session.kind == "difficulty" else "prompt")
        table.add_column("you chose", width=30)
        table.add_column("when", width=12)
        now = datetime.now(UTC)
        for e in self.entries:
            texts = (e.first_line, e.second_line) if e.second_line else (e.first_line,)
            shown = literal_line(" │ ".join(texts), limit=text_w)
            shown.truncate(text_w, overflow="ellipsis")
            table.add_row(
                literal_line(e.key, limit=6),
                shown,
                Text(e.chosen),
                Text(ago(e.when, now)),
                key=str(e.item_id),
            )
        if not self.entries:
            self.status.update(Text("You have no votes in this study yet. Esc: back."))
        if follow is not None:
            row = next((k for k, e in enumerate(self.entries) if e.item_id == follow), row)
        if self.entries:
            table.move_cursor(row=min(row, len(self.entries) - 1))
        self.loaded = True
        self.revising = False
        self.refresh_bindings()

    # --- changing a vote --------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        keys = REVISE_KEYS.get(self.session.kind, {})
        if any(action in v for v in REVISE_KEYS.values()):
            if action not in keys:
                return False  # the other study kind's keys are hidden
            if self.session.revise_refusal is not None or not self.entries:
                return None
        return True

    def _revise(self, action: str) -> None:
        key = REVISE_KEYS.get(self.session.kind, {}).get(action)
        if key is None or self.busy or not self.entries:
            return
        entry = self.entries[min(self.table.cursor_row, len(self.entries) - 1)]
        if entry.choice == key:
            self.notify("That is already your vote.", title="History", timeout=2)
            return
        self.revising = True
        self._commit(entry.item_id, key)

    @work(thread=True, exclusive=True, exit_on_error=False, group="history")
    def _commit(self, item_id: int, key: str) -> None:
        entry = self.session.revise(item_id, key)  # committed before the list is redrawn
        entries = list(self.session.history())
        self.app.call_from_thread(self._revised, entry, entries)

    def _revised(self, entry: HistoryEntry | None, entries: Sequence[HistoryEntry]) -> None:
        if entry is not None:
            message = Text("Vote on item ")
            message.append_text(literal_line(entry.key, limit=40))
            message.append(f" changed: {entry.chosen}.")
            self.notify(message.plain, title="History", timeout=3, markup=False)
        self._show(entries, None if entry is None else entry.item_id)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.revising = False
            self.loaded = True
            report = getattr(self.app, "report_failure", None)
            if report is not None:
                report(event.worker.error)

    def on_key(self, event: events.Key) -> None:
        """A greyed-out revise key says why (Textual runs no action for it)."""
        refusal = self.session.revise_refusal
        active = self.active_bindings.get(event.key)
        if refusal is not None and active is not None and not active.enabled:
            self.notify(refusal, title="History", severity="warning", markup=False)

    def action_first_harder(self) -> None:
        self._revise("first_harder")

    def action_second_harder(self) -> None:
        self._revise("second_harder")

    def action_skip(self) -> None:
        self._revise("skip")

    def action_a_better(self) -> None:
        self._revise("a_better")

    def action_b_better(self) -> None:
        self._revise("b_better")

    def action_tie(self) -> None:
        self._revise("tie")

    def action_both_bad(self) -> None:
        self._revise("both_bad")

    def action_close(self) -> None:
        self.dismiss(None)
