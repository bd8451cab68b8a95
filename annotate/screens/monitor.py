"""The live reliability monitor of one study.

A worker thread checks for new votes every ``poll_seconds`` (one indexed
lookup) and, when there are some, asks the service for a new snapshot (query
the new rows, refit, recompute the signals); the screen only displays it. The
statistics and the SQL are in :mod:`annotate.services.monitoring`: the app hands the
screen a :class:`~annotate.services.monitoring.MonitorSource`, whose
:class:`~annotate.services.monitoring.StudyMonitor` builds each
:class:`~annotate.views.MonitorSnapshot`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, ClassVar

from textual import getters, on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.markup import escape
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import Worker, WorkerState, get_current_worker

from annotate.names import one_line, sanitize
from annotate.views import MonitorSnapshot, StudyListing
from annotate.widgets.literal import literal
from annotate.widgets.monitor_tables import AnnotatorTable, Leaderboard

if TYPE_CHECKING:
    from annotate.services.monitoring import MonitorSource


class MonitorScreen(Screen[None]):
    """Annotators (status, ability, signals) and the leaderboard of one study, kept live."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "pick_study", "Study", tooltip="Monitor another study.", id="pick-study"),
        Binding(
            "r",
            "refresh",
            "Refit",
            tooltip="Refit now, even without new votes (restarts a stopped monitor).",
            id="refresh",
        ),
    ]

    @dataclass
    class Refreshed(Message):
        """A new snapshot is on screen."""

        snapshot: MonitorSnapshot

    summary = getters.query_one("#summary", Static)
    problem = getters.query_one("#problem", Static)
    annotator_table = getters.query_one("#annotators", AnnotatorTable)
    leaderboard = getters.query_one("#leaderboard", Leaderboard)
    detail = getters.query_one("#detail", Static)
    notes = getters.query_one("#notes", Static)

    def __init__(self, source: MonitorSource, study: str | None = None) -> None:
        super().__init__()
        self.source = source
        self.study = study
        """The study on screen (None until the default one is chosen)."""
        self.snapshot: MonitorSnapshot | None = None
        """The snapshot on screen."""
        self.studies: Sequence[StudyListing] = ()
        """Every study, as last listed (for the picker and the command palette)."""
        self._refit = threading.Event()

    def compose(self) -> ComposeResult:
        yield Static("Loading votes…", id="summary", markup=False)
        yield Static("", id="problem", markup=False)
        yield AnnotatorTable(id="annotators")
        yield Static("", id="detail", markup=False)
        yield Leaderboard(id="leaderboard")
        yield Static("", id="notes", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.annotator_table.border_title = "Annotators"
        self.leaderboard.border_title = "Leaderboard"
        self.problem.display = False
        self.watch_votes(self.study)

    # --- the refresh loop -------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="monitor")
    def watch_votes(self, study: str | None) -> None:
        """Show ``study`` (or the default one) and refresh it whenever votes change."""
        worker = get_current_worker()
        studies = self.source.studies()
        self.app.call_from_thread(self._listed, studies)
        if study is None:
            study = self.source.default_study()
            if study is None:
                self.app.call_from_thread(self._no_studies)
                return
        feed = self.source.open(study)
        forced = True
        while not worker.is_cancelled:
            if forced or feed.changed():
                snapshot = feed.snapshot()
                if worker.is_cancelled:
                    return
                self.app.call_from_thread(self._show, snapshot)
            forced = self._refit.wait(self.source.poll_seconds)
            self._refit.clear()

    def _listed(self, studies: Sequence[StudyListing]) -> None:
        self.studies = studies

    def _no_studies(self) -> None:
        self.summary.update("No studies")
        self._show_problem(
            "The database has no studies yet. Import one (annotate import FOLDER) or start "
            "annotate once to get the demo studies, then run the monitor again."
        )

    def _show_problem(self, text: str | None) -> None:
        self.problem.update(literal(text or ""))
        self.problem.display = bool(text)

    def _show(self, snap: MonitorSnapshot) -> None:
        first = self.snapshot is None or self.snapshot.study != snap.study
        if not first and self.snapshot is not None:
            self._announce_flags(self.snapshot, snap)
        self.snapshot = snap
        self.study = snap.study
        c = snap.counts
        self.summary.update(
            literal(
                f"{snap.study} ({snap.kind}) · {snap.n_votes} votes · flagged "
                f"{c.get('flagged', 0)} · pending {c.get('pending', 0)} · reliable "
                f"{c.get('reliable', 0)}"
            )
        )
        self._show_problem(snap.problem)
        self.annotator_table.show(snap.kind, snap.annotators)
        self.leaderboard.show(snap.kind, snap.leaderboard)
        self.leaderboard.border_title = (
            "Hardest questions (annotators' scale)" if snap.kind == "difficulty" else "Leaderboard"
        )
        if first:
            self.annotator_table.move_cursor(row=0, animate=False)
        self.notes.update(literal("   ".join(snap.notes)))
        self._show_detail()
        self.post_message(self.Refreshed(snap))

    def _announce_flags(self, before: MonitorSnapshot, now: MonitorSnapshot) -> None:
        """Notify about annotators flagged since the previous snapshot."""
        was = {r.annotator: r.status for r in before.annotators}
        for r in now.annotators:
            if r.status == "flagged" and was.get(r.annotator) != "flagged":
                self.notify(
                    sanitize(r.reason),
                    title=f"{one_line(r.annotator)} flagged",
                    severity="warning",
                    markup=False,
                )

    @on(DataTable.RowHighlighted, "#annotators")
    def _show_detail(self) -> None:
        name = self.annotator_table.highlighted_name
        rows = [] if self.snapshot is None else self.snapshot.annotators
        row = next((r for r in rows if r.annotator == name), None)
        if row is None:
            self.detail.update("")
            return
        alerts = f"  Alerts: {', '.join(row.alerts)}." if row.alerts else ""
        self.detail.update(literal(f"{row.annotator}: {row.status} — {row.reason}{alerts}"))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "monitor":
            return
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            err = event.worker.error
            self._show_problem(f"{err}  (press r to try again, s to pick a study)")
            title = getattr(err, "title", "Monitor stopped")
            self.notify(sanitize(str(err)), title=one_line(title), severity="error", markup=False)

    # --- actions -------------------------------------------------------------------------

    def action_refresh(self) -> None:
        running = any(w.group == "monitor" and w.is_running for w in self.workers)
        if running:
            self._refit.set()
        else:
            self.watch_votes(self.study)

    def action_pick_study(self) -> None:
        self._list_for_picker()

    @work(thread=True, exclusive=True, exit_on_error=False, group="studies")
    def _list_for_picker(self) -> None:
        studies = self.source.studies()
        self.app.call_from_thread(self._pick, studies)

    def _pick(self, studies: Sequence[StudyListing]) -> None:
        from annotate.screens.monitor_studies import StudyPickerScreen

        self.studies = studies
        self.app.push_screen(StudyPickerScreen(studies, self.study), self._picked)

    def _picked(self, study: str | None) -> None:
        if study is not None:
            self.switch_study(study)

    def switch_study(self, study: str) -> None:
        """Monitor ``study`` instead of the current one."""
        self.snapshot = None
        self.summary.update(literal(f"Loading {study}…"))
        self._refit.set()  # wake the old loop so it notices it was cancelled
        self.watch_votes(study)

    def palette_commands(self) -> Iterator[SystemCommand]:
        """Commands for the palette: switch to each other study."""
        for st in self.studies:
            if st.name != self.study:
                # the palette parses titles and help as markup: sanitised, then escaped
                yield SystemCommand(
                    escape(one_line(f"Monitor {st.name}")),
                    escape(one_line(f"{st.kind} study, {st.votes} votes: {st.title}")),
                    partial(self.switch_study, st.name),
                )
