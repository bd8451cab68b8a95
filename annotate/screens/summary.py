"""Shown when the annotator has judged every item of a study."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from annotate.widgets.literal import literal

if TYPE_CHECKING:
    from annotate.screens.contracts import SummaryLike as Summary

LABELS = {
    "difficulty": (
        ("left", "first question harder"),
        ("right", "second question harder"),
        ("skip", "could not judge"),
    ),
    "arena": (("a", "A better"), ("b", "B better"), ("tie", "tie"), ("both_bad", "both bad")),
}


def summary_text(summary: Summary) -> Text:
    """The summary as text: the annotator's own votes only."""
    out = Text()
    out.append("Finished: ", style="bold")
    out.append_text(literal(summary.title or summary.study, style="bold"))
    out.append(f"\n\nYou judged every item available to you: {summary.done} votes.\n\n")
    for key, label in LABELS.get(summary.kind, ()):
        out.append(f"  {summary.counts.get(key, 0):>4}  {label}\n")
    if summary.fast:
        out.append(f"\n  {summary.fast} of them were quicker than the study's minimum time.\n")
    out.append("\nYour votes are saved. Thank you!")
    return out


class SummaryScreen(Screen[str]):
    """The end of a study: the annotator's own vote counts."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "u",
            "undo",
            "Undo",
            tooltip="Withdraw your last vote and judge that item again.",
            id="undo",
        ),
        Binding(
            "escape",
            "studies",
            "Studies",
            tooltip="Back to the list of studies.",
            id="studies",
        ),
    ]

    def __init__(self, summary: Summary) -> None:
        super().__init__()
        self.summary = summary

    def compose(self) -> ComposeResult:
        with Vertical(id="summary-box"):
            yield Static(summary_text(self.summary), id="summary")
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "undo" and self.summary.done == 0:
            return None
        return True

    def action_undo(self) -> None:
        self.dismiss("undo")

    def action_studies(self) -> None:
        self.dismiss("studies")
