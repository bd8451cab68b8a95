"""The study's annotator questionnaire, asked once before the first item (issue 16).

One question at a time: its prompt (shown literally) and its choices in a selection
list (Space ticks, Enter goes on). A question with ``multiple = true`` takes several
choices, the others exactly one. Escape goes back to the studies without answering;
the questionnaire is then asked again the next time the study is opened.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, SelectionList, Static

from annotate.study_settings import QuestionnaireItem
from annotate.widgets.literal import literal


class ChoiceList(SelectionList[int]):
    """The choices of one question; Space ticks, Enter goes on."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "screen.next", "Next", tooltip="Keep the ticked answer and go on.")
    ]


class QuestionnaireScreen(ModalScreen[dict[str, list[str]] | None]):
    """Ask ``questions`` one after the other; dismiss with the answers (key -> choices)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Back", tooltip="Back to the studies without answering."),
    ]

    def __init__(self, questions: tuple[QuestionnaireItem, ...]) -> None:
        super().__init__()
        self.questions = questions
        self.index = 0
        self.answers: dict[str, list[str]] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="questionnaire-box"):
            yield Label(Text("About you", style="bold"), classes="heading")
            yield Label("", id="questionnaire-step", classes="hint")
            yield Static("", id="questionnaire-prompt")
            yield Label("", id="questionnaire-hint", classes="hint")
            yield ChoiceList(id="questionnaire-choices")
        yield Footer()

    def on_mount(self) -> None:
        self._show()

    def _show(self) -> None:
        q = self.questions[self.index]
        self.query_one("#questionnaire-step", Label).update(
            f"Question {self.index + 1} of {len(self.questions)}"
        )
        self.query_one("#questionnaire-prompt", Static).update(literal(q.prompt))
        self.query_one("#questionnaire-hint", Label).update(
            "Tick every answer that applies (Space), then Enter."
            if q.multiple
            else "Tick one answer (Space), then Enter."
        )
        choices = self.query_one(ChoiceList)
        choices.clear_options()
        choices.add_options([(literal(c), i, False) for i, c in enumerate(q.choices)])
        choices.highlighted = 0
        choices.focus()

    @on(SelectionList.SelectedChanged)
    def _one_only(self, event: SelectionList.SelectedChanged[int]) -> None:
        """A single-choice question keeps only the answer ticked last."""
        q = self.questions[self.index]
        ticked = event.selection_list.selected
        if not q.multiple and len(ticked) > 1:
            keep = event.selection_list.highlighted
            for value in ticked:
                if value != keep:
                    event.selection_list.deselect(value)

    def action_next(self) -> None:
        q = self.questions[self.index]
        ticked = sorted(self.query_one(ChoiceList).selected)
        if not ticked:
            self.notify("Tick an answer with Space first.", severity="warning")
            return
        self.answers[q.key] = [q.choices[i] for i in ticked]
        if self.index + 1 < len(self.questions):
            self.index += 1
            self._show()
        else:
            self.dismiss(self.answers)

    def action_cancel(self) -> None:
        self.dismiss(None)
