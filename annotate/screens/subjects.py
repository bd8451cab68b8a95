"""Difficulty study: the annotator opts out of subjects they do not know."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, SelectionList

from annotate.widgets.literal import literal

if TYPE_CHECKING:
    from annotate.services.voting import VotingSession


def subject_prompt(subject: str, known: bool) -> Text:
    """A subject as listed: a tick or a cross, the name (literal), and what it means."""
    text = Text("✓ " if known else "✗ ", style="bold green" if known else "bold red")
    text.append_text(literal(subject))
    text.append("  shown" if known else "  not shown", style="dim" if known else "italic dim")
    return text


class SubjectList(SelectionList[str]):
    """A selection list where Space toggles and Enter confirms.

    Each subject says whether it is ticked in words and with ✓ / ✗, not only by the
    colour of its box (the box shows the same mark in both states).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "screen.confirm", "Start", tooltip="Start with the ticked subjects.")
    ]


class SubjectsScreen(ModalScreen[set[str] | None]):
    """Tick the subjects you know; the pairs of the others are not shown to you."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", tooltip="Keep the current choice."),
    ]

    def __init__(self, session: VotingSession) -> None:
        super().__init__()
        self.session = session

    def compose(self) -> ComposeResult:
        excluded = self.session.excluded_subjects
        with Vertical(id="subjects-box"):
            yield Label("Which subjects can you judge?", classes="heading")
            yield Label(
                "Untick the ones you do not know (↑/↓ move, Space ticks or unticks, "
                "Enter starts). You can change this later with s.",
                classes="hint",
            )
            yield SubjectList(
                *(
                    (subject_prompt(subj, subj not in excluded), subj, subj not in excluded)
                    for subj in self.session.subjects
                ),
                id="subject-list",
            )
        yield Footer()

    @on(SelectionList.SelectedChanged)
    def _mark(self) -> None:
        subjects = self.query_one(SubjectList)
        ticked = set(subjects.selected)
        for index, subj in enumerate(self.session.subjects):
            subjects.replace_option_prompt_at_index(index, subject_prompt(subj, subj in ticked))

    def action_confirm(self) -> None:
        known = set(self.query_one(SubjectList).selected)
        if not known:
            self.notify(
                "Tick at least one subject (Space), or press Escape to keep the current choice.",
                severity="warning",
            )
            return
        self.dismiss(known)

    def action_cancel(self) -> None:
        self.dismiss(None)
