"""A modal for unexpected failures of background work."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from annotate.widgets.literal import literal


class ErrorScreen(ModalScreen[None]):
    """Shows what failed; votes already committed are safe."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter", "close", "Close", tooltip="Close this message."),
    ]

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(id="error-box"):
            yield Static(Text("Something went wrong", style="bold"))
            yield Static(literal(self.message))
            yield Static(
                "Votes already saved are safe. If this keeps happening, quit (q) and "
                "start again; you will resume where you stopped."
            )
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)
