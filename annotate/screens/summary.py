"""Shown when the annotator has judged every item of a study."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from annotate.names import one_line
from annotate.widgets.literal import literal_line

if TYPE_CHECKING:
    from annotate.views import Summary

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
    out.append_text(literal_line(summary.title or summary.study, style="bold"))
    out.append(f"\n\nYou judged every item available to you: {summary.done} votes.\n\n")
    for key, label in LABELS.get(summary.kind, ()):
        out.append(f"  {summary.counts.get(key, 0):>4}  {label}\n")
    if summary.fast:
        out.append(f"\n  {summary.fast} of them were quicker than the study's minimum time.\n")
    out.append("\nYour votes are saved. Thank you!")
    return out


def notify_refused_undo(screen: Screen[Any], event: events.Key, refusal: str | None) -> None:
    """Say why undo is refused when ``event`` is a key of the screen's greyed-out undo.

    Parameters
    ----------
    screen : Screen
        The screen the key was pressed on (its active bindings name the undo keys,
        remapped ones included).
    event : events.Key
        The key.
    refusal : str or None
        Why undo is refused; None: nothing to say.
    """
    if refusal is None:
        return
    active = screen.active_bindings.get(event.key)
    if active is not None and active.binding.action == "undo" and not active.enabled:
        screen.notify(one_line(refusal), title="Undo", severity="warning", markup=False)


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

    def __init__(self, summary: Summary, *, undo_refusal: str | None = None) -> None:
        super().__init__()
        self.summary = summary
        self.undo_refusal = undo_refusal
        """Why undo is refused in this study (votes are final), or None."""

    def compose(self) -> ComposeResult:
        with Vertical(id="summary-box"):
            yield Static(summary_text(self.summary), id="summary")
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "undo" and (self.summary.done == 0 or self.undo_refusal is not None):
            return None
        return True

    def on_key(self, event: events.Key) -> None:
        """A greyed-out undo key says why (Textual runs no action for it)."""
        notify_refused_undo(self, event, self.undo_refusal)

    def action_undo(self) -> None:
        self.dismiss("undo")

    def action_studies(self) -> None:
        self.dismiss("studies")
