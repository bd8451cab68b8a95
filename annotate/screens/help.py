"""The keys of the screen below, and how voting works."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

NOTES = (
    "Every vote is saved the moment you press its key, and the next item appears at once.\n"
    "Tab moves between the text panes; the arrow keys, Page Up/Down, Home and End scroll the\n"
    "focused pane (the mouse wheel works too). Ctrl+P opens the command palette.\n"
    "Quit at any time: starting again resumes exactly where you stopped.\n"
    "Keys can be changed in keys.toml (see the README)."
)


def keys_text(screen: Screen[object]) -> Text:
    """One line per key active on ``screen``: key, description, explanation."""
    out = Text()
    seen: set[str] = set()
    app = screen.app
    for active in screen.active_bindings.values():
        binding = active.binding
        if not binding.description or binding.action in seen or binding.system:
            continue
        seen.add(binding.action)
        key = app.get_key_display(binding)
        out.append(f"{key:>8}  ", style="bold")
        out.append(f"{binding.description:<14}")
        out.append(f" {binding.tooltip}\n", style="dim" if not active.enabled else "")
    return out


class HelpScreen(ModalScreen[None]):
    """Keys and notes; any of Escape, ? or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "Close", tooltip="Close the help."),
    ]

    def __init__(self, below: Screen[object]) -> None:
        super().__init__()
        self.below = below

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(Text("Keys", style="bold"))
            yield Static(keys_text(self.below))
            yield Static(Text(NOTES))
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)
