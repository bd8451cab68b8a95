"""Scrollable panes that show one question, prompt or response literally."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import VerticalScroll

from annotate.widgets.literal import LiteralText, literal_line


class TextPane(VerticalScroll, can_focus=True):
    """A bordered, focusable, scrollable pane of literal text.

    Tab moves between panes; arrows, Page Up/Down, Home and End scroll the
    focused one.
    """

    DEFAULT_CSS = """
    TextPane { height: 1fr; }
    """

    def __init__(self, title: str, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.border_title = title

    def compose(self) -> ComposeResult:
        yield LiteralText(classes="body")

    def show_text(self, text: str, subtitle: str = "") -> None:
        """Show ``text`` (study content, shown literally) and scroll to the top."""
        self.query_one(".body", LiteralText).set_text(text)
        self.border_subtitle = literal_line(subtitle)  # a Text: never parsed as markup
        self.scroll_home(animate=False)


class QuestionCard(TextPane):
    """One question of a pair: its subject, its text and its choices, if any."""

    def compose(self) -> ComposeResult:
        yield LiteralText(classes="subject")
        yield LiteralText(classes="body")
        yield LiteralText(classes="choices")

    def show_question(self, subject: str, text: str, choices: Sequence[str] | None) -> None:
        """Show one question (all strings are study content, shown literally)."""
        self.query_one(".subject", LiteralText).set_text(subject)
        self.query_one(".body", LiteralText).set_text(text)
        box = self.query_one(".choices", LiteralText)
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        lines = [
            f"{letters[i] if i < len(letters) else i + 1}. {c}" for i, c in enumerate(choices or ())
        ]
        box.set_text("\n".join(lines))
        box.display = bool(lines)
        self.scroll_home(animate=False)
