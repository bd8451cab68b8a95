"""A study's instructions, shown before its first item; Enter starts."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Label

from annotate.widgets.literal import LiteralText, literal_line


class InstructionsScreen(ModalScreen[None]):
    """The study's ``instructions`` (safe Markdown); Enter or Escape closes it.

    Pushed before the first item is painted, so the first response time does not
    include the reading; ``?`` on the voting screens shows the same text in the help.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "close", "Start", tooltip="Close the instructions and start."),
        Binding("escape", "close", "Close", show=False, tooltip="Close the instructions."),
    ]

    def __init__(self, title: str, instructions: str) -> None:
        super().__init__()
        self.study_title = title
        self.instructions = instructions

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="instructions-box"):
            yield Label(literal_line(self.study_title, style="bold"), classes="heading")
            yield LiteralText(classes="instructions-text")
            yield Label(Text("Press Enter to start.", style="italic"), classes="hint")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(".instructions-text", LiteralText).set_text(self.instructions, markdown=True)
        self.query_one("#instructions-box").focus()

    def action_close(self) -> None:
        self.dismiss(None)
