"""The human-alignment report of a difficulty study, on screen.

The numbers come from :func:`annotate.services.report.report_view` (store ->
ranking -> text tables), computed in a worker thread. Screens may not import
that service (an import-linter contract keeps the store, SQL and statistics
out of screens), so the screen receives it as ``load``: a callable from a
study name to a :class:`annotate.views.ReportView`. An app pushes it
with::

    from annotate.services.report import report_view

    ReportScreen(study, load=lambda name: report_view(self.engine, name))

or, without ``load``, the screen calls ``app.load_report(study)`` if the app
defines it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from textual import getters, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, LoadingIndicator, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from annotate.views import ReportView
from annotate.widgets.literal import literal
from annotate.widgets.report_tables import table_widgets

LoadReport = Callable[[str], ReportView]

TABS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("alignment", "Alignment", ("alignment", "individual", "subgroups")),
    ("agreement", "Agreement", ("agreement", "annotators", "pairwise")),
    ("scale", "Human scale", ("correlations", "human_scale")),
    ("near-ties", "Near-ties", ("near_ties",)),
)
"""(tab id, label, table keys shown in it)."""


class ReportScreen(Screen[None]):
    """Alignment of difficulty estimators with the annotators of ``study``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", tooltip="Close the report.", id="close-report"),
        Binding(
            "r",
            "reload",
            "Recompute",
            tooltip="Recompute the report from the current votes.",
            id="reload-report",
        ),
    ]

    @dataclass
    class Loaded(Message):
        """The report is on screen."""

        view: ReportView

    status = getters.query_one("#report-status", Static)
    summary = getters.query_one("#report-summary", Static)

    def __init__(self, study: str, load: LoadReport | None = None) -> None:
        super().__init__()
        self.study = study
        """The study whose report is shown."""
        self.load = load
        self.view: ReportView | None = None
        """The report on screen, once computed."""
        self.busy = False
        """True while the report is being computed (tests wait on it)."""
        self.loaded = False
        """True once the report, or the reason it failed, is on screen."""

    def compose(self) -> ComposeResult:
        yield Static(literal(f"Human alignment: {self.study}"), id="report-status", markup=False)
        yield LoadingIndicator(id="report-loading")
        yield Static("", id="report-summary", markup=False)
        with TabbedContent(id="report-tabs"):
            for tab_id, label, _ in TABS:
                yield TabPane(label, VerticalScroll(id=f"pane-{tab_id}"), id=f"tab-{tab_id}")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#report-tabs").display = False
        self.compute()

    def _loader(self) -> LoadReport | None:
        if self.load is not None:
            return self.load
        fn = getattr(self.app, "load_report", None)
        return fn if callable(fn) else None

    @work(thread=True, exclusive=True, exit_on_error=False, group="report")
    def compute(self) -> None:
        """Compute the report in a thread and show it (a failure is shown by on_worker_...)."""
        load = self._loader()
        self.app.call_from_thread(self._set_busy, True)
        if load is None:
            raise LookupError(
                "this app gives the report screen no way to compute the report "
                "(pass load= or define app.load_report)"
            )
        view = load(self.study)
        self.app.call_from_thread(self._show, view)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "report":
            return
        if event.state == WorkerState.ERROR:
            event.stop()  # shown here, not as an app-wide error
            self._failed(event.worker.error)

    def _set_busy(self, busy: bool) -> None:
        self.busy = busy
        self.query_one("#report-loading").display = busy
        if busy:
            self.status.update(literal(f"Computing the report of {self.study}…"))

    def _failed(self, err: BaseException | None) -> None:
        self._set_busy(False)
        self.status.update(literal(f"The report of {self.study} could not be computed: {err}"))
        self.loaded = True

    def _show(self, view: ReportView) -> None:
        self.view = view
        self.status.update(literal(view.title, style="bold"))
        self.summary.update(literal("\n".join(view.summary)))
        for tab_id, _, keys in TABS:
            pane = self.query_one(f"#pane-{tab_id}", VerticalScroll)
            pane.remove_children()
            widgets = table_widgets(view.tables, keys)
            if widgets:
                pane.mount_all(widgets)
            else:
                pane.mount(Static(literal("Nothing to show."), markup=False))
        self.query_one("#report-tabs").display = True
        self._set_busy(False)
        self.loaded = True
        self.post_message(self.Loaded(view))

    def action_close(self) -> None:
        self.dismiss(None)

    def action_reload(self) -> None:
        self.loaded = False
        self.compute()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "reload" and self.busy:
            return None
        return True
