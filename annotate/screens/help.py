"""The study's instructions, the keys of the screen below, and how voting works."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from annotate.widgets.literal import LiteralText

NOTES = "\n".join(
    (
        "• Every vote is saved the moment you press its key; the next item appears at once.",
        "• Tab moves between the text panes; the arrow keys, Page Up/Down, Home and End "
        "scroll the focused pane (the mouse wheel works too).",
        "• Ctrl+P opens the command palette: study actions and other studies.",
        "• Quit at any time: starting again resumes exactly where you stopped.",
        "• Keys can be changed in keys.toml (see the README).",
    )
)


def keys_table(screen: Screen[object]) -> Table:
    """One row per key active on ``screen``: key, what it does, explanation."""
    table = Table.grid(padding=(0, 2))
    table.add_column(justify="right", style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1)
    seen: set[str] = set()
    app = screen.app
    for active in screen.active_bindings.values():
        binding = active.binding
        # Only the app's own keys (they all have ids); scrolling is described below.
        if binding.id is None or not binding.description or binding.action in seen:
            continue
        seen.add(binding.action)
        style = "" if active.enabled else "dim"
        table.add_row(
            app.get_key_display(binding),
            Text(binding.description, style=style),
            Text(binding.tooltip, style=style or "italic"),
        )
    return table


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
            instructions = getattr(getattr(self.below, "session", None), "instructions", "")
            if instructions:
                yield Static(Text("Instructions for this study", style="bold"))
                text = LiteralText(classes="instructions-text")
                text.set_text(instructions, markdown=True)
                yield text
            yield Static(Text("Keys", style="bold"))
            yield Static(keys_table(self.below))
            yield Static(Text(NOTES))
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)
