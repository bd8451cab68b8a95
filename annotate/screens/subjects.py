"""Difficulty study: the annotator opts out of subjects they do not know."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, SelectionList

from annotate.widgets.literal import literal

if TYPE_CHECKING:
    from annotate.screens.contracts import SessionLike as VotingSession


class SubjectList(SelectionList[str]):
    """A selection list where Space toggles and Enter confirms."""

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
                *((literal(subj), subj, subj not in excluded) for subj in self.session.subjects),
                id="subject-list",
            )
        yield Footer()

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
