"""Leaving a comment on the item on screen (``c``) or flagging it as broken (``f``).

Both are small modal screens over the voting screen: the item under them stays the
one the note is about (its id is taken when the key is pressed, and only once the
item is painted). Nothing here writes: the voting screen stores what they return.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import getters, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, OptionList
from textual.widgets.option_list import Option

from annotate.widgets.literal import literal_line

MAX_NOTE_CHARS = 500
"""How long a comment (or a flag's detail) may be: one line."""


def _title(what: str, item_key: str) -> Text:
    out = Text(f"{what} ", style="bold")
    out.append_text(literal_line(item_key, style="bold", limit=60))
    return out


class CommentScreen(ModalScreen[str | None]):
    """One line of comment on item ``item_key``: Enter saves, Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", tooltip="Close without saving.", id="note-cancel"),
    ]

    note_input = getters.query_one("#note-text", Input)

    def __init__(self, item_key: str) -> None:
        super().__init__()
        self.item_key = item_key

    def compose(self) -> ComposeResult:
        with Vertical(id="note-box", classes="note-box"):
            yield Label(_title("Comment on item", self.item_key))
            yield Label("Enter saves it with your vote on this item; Escape cancels.")
            yield Input(
                placeholder="your comment (one line)", max_length=MAX_NOTE_CHARS, id="note-text"
            )
        yield Footer()

    @on(Input.Submitted, "#note-text")
    def save(self) -> None:
        text = self.note_input.value
        self.dismiss(text if text.strip() else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class FlagScreen(ModalScreen[tuple[str, str] | None]):
    """Flag item ``item_key`` as broken: pick a reason (Enter), optionally add a detail."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", tooltip="Close without flagging.", id="note-cancel"),
    ]

    reasons_list = getters.query_one("#flag-reasons", OptionList)
    detail_input = getters.query_one("#flag-detail", Input)

    def __init__(self, item_key: str, reasons: tuple[str, ...]) -> None:
        super().__init__()
        self.item_key = item_key
        self.reasons = reasons

    def compose(self) -> ComposeResult:
        with Vertical(id="note-box", classes="note-box"):
            yield Label(_title("Flag item as broken:", self.item_key))
            yield Label("Choose why and press Enter (Tab: add a detail first); Escape cancels.")
            yield OptionList(*(Option(r) for r in self.reasons), id="flag-reasons")
            yield Input(
                placeholder="detail (optional)", max_length=MAX_NOTE_CHARS, id="flag-detail"
            )
        yield Footer()

    def on_mount(self) -> None:
        self.reasons_list.highlighted = 0
        self.reasons_list.focus()

    @on(OptionList.OptionSelected, "#flag-reasons")
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss((self.reasons[event.option_index], self.detail_input.value))

    @on(Input.Submitted, "#flag-detail")
    def detail_done(self) -> None:
        index = self.reasons_list.highlighted
        if index is not None:
            self.dismiss((self.reasons[index], self.detail_input.value))

    def action_cancel(self) -> None:
        self.dismiss(None)
