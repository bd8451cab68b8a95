"""The bar at the top of a voting screen: study title and "k / n" progress."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar

from annotate.widgets.literal import literal_line


class StudyProgress(Horizontal):
    """Study title on the left, "k / n" and a bar on the right."""

    DEFAULT_CSS = """
    StudyProgress { height: 1; }
    StudyProgress > .title { width: 1fr; }
    StudyProgress > .count { width: auto; margin: 0 1; }
    StudyProgress > ProgressBar { width: auto; }
    """

    def compose(self) -> ComposeResult:
        yield Label(classes="title", markup=False)
        yield Label(classes="count", markup=False)
        yield ProgressBar(show_eta=False, show_percentage=False)

    def set_title(self, title: str) -> None:
        """Show the study title (study content, shown literally)."""
        self.query_one(".title", Label).update(literal_line(title))

    def set_progress(self, done: int, total: int) -> None:
        """Show ``done / total``."""
        self.query_one(".count", Label).update(f"{done} / {total}")
        self.query_one(ProgressBar).update(total=max(total, 1), progress=done)
