"""The live annotator-reliability monitor (``annotate monitor [--study NAME]``).

Build it with :func:`make_monitor_app`. It reads the same database the
annotators write to, from another process, and refreshes as their votes
arrive: see :mod:`annotate.screens.monitor` and
:mod:`annotate.services.monitoring`.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Engine
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from annotate.screens.monitor import MonitorScreen
from annotate.screens.report import ReportScreen
from annotate.services.monitoring import MonitorSource
from annotate.services.settings import user_keymap
from annotate.views import ReportView


class MonitorApp(App[None]):
    """Who is pending, reliable or flagged, and why, while a study runs.

    Parameters
    ----------
    source : MonitorSource
        The studies and their snapshots.
    study : str, optional
        Study to show first; None shows the first study with votes.
    keymap : dict, optional
        Binding id -> keys; None reads ``keys.toml`` from the config directory.
    """

    CSS_PATH = "monitor.tcss"
    TITLE = "annotate monitor"
    BINDINGS = [
        Binding("q", "quit", "Quit", tooltip="Stop monitoring.", priority=True, id="quit"),
        Binding(
            "a",
            "alignment_report",
            "Alignment",
            tooltip="How well the difficulty estimators agree with the annotators "
            "(difficulty studies; shows everyone's votes, so it is for the study lead).",
            id="alignment-report",
        ),
    ]

    def __init__(
        self,
        source: MonitorSource,
        study: str | None = None,
        *,
        keymap: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.initial_study = study
        self._keymap_override = keymap

    def on_mount(self) -> None:
        keymap, err = user_keymap(self._keymap_override)
        if err is not None:
            self.notify(str(err), title=err.title, severity="error", markup=False)
        self.set_keymap(keymap)
        self.push_screen(MonitorScreen(self.source, self.initial_study))

    def load_report(self, study: str) -> ReportView:
        """The report of ``study`` for :class:`ReportScreen` (runs in its worker thread)."""
        from annotate.services.report import report_view

        return report_view(self.source.engine, study)

    def _report_available(self) -> bool:
        screen = self.screen
        if not isinstance(screen, MonitorScreen) or screen.study is None:
            return False
        return screen.snapshot is not None and screen.snapshot.kind == "difficulty"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "alignment_report":
            # shown greyed out (None) where it does not apply: arena studies, other screens
            return True if self._report_available() else None
        return True

    def on_monitor_screen_refreshed(self, _event: MonitorScreen.Refreshed) -> None:
        self.refresh_bindings()

    def action_alignment_report(self) -> None:
        screen = self.screen
        if not isinstance(screen, MonitorScreen) or screen.study is None:
            return
        snap = screen.snapshot
        if snap is None or snap.kind != "difficulty":
            self.notify(
                "The alignment report compares difficulty estimators with the votes of a "
                "difficulty study; pick one with s.",
                title="Difficulty studies only",
                severity="warning",
            )
            return
        self.push_screen(ReportScreen(screen.study))

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if isinstance(screen, MonitorScreen):
            yield SystemCommand(
                "Alignment report",
                "Estimators vs human votes of this difficulty study (EIP paper, Table 2)",
                self.action_alignment_report,
            )
            yield SystemCommand("Pick a study", "Monitor another study", screen.action_pick_study)
            yield SystemCommand("Refit now", "Refit even without new votes", screen.action_refresh)
            yield from screen.palette_commands()


def make_monitor_app(
    engine: Engine, study: str | None = None, *, keymap: dict[str, str] | None = None
) -> MonitorApp:
    """The monitor on the store behind ``engine`` (reads never block the annotators)."""
    return MonitorApp(MonitorSource(engine), study, keymap=keymap)
