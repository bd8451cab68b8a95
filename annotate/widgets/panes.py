"""Scrollable panes that show one question, prompt or response.

Texts are shown literally, or as safely rendered Markdown when the study asks for it
(``render_markdown``; see :mod:`annotate.widgets.safe_markdown`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll

from annotate.widgets.literal import LiteralText, literal_line

MORE_BELOW = "▼ more below · Tab, ↓"
"""The bottom border of a pane whose text goes on below the visible part."""


class TextPane(VerticalScroll, can_focus=True):
    """A bordered, focusable, scrollable pane of literal text.

    Tab moves between panes; arrows, Page Up/Down, Home and End scroll the
    focused one. While part of the text is below the visible part, the bottom
    border says so (:data:`MORE_BELOW`): a thin scrollbar is easy to miss.
    """

    DEFAULT_CSS = """
    TextPane { height: 1fr; }
    """

    def __init__(self, title: str, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.border_title = title
        self._subtitle = Text()

    def on_mount(self) -> None:
        self.watch(self, "scroll_y", lambda: self._mark_more(), init=False)

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self._mark_more)

    def _mark_more(self) -> None:
        """Show :data:`MORE_BELOW` in the bottom border while text is hidden below."""
        more = self.max_scroll_y > 0 and self.scroll_y < self.max_scroll_y
        subtitle = self._subtitle.copy()
        if more:
            if subtitle:
                subtitle.append(" · ")
            subtitle.append(MORE_BELOW, style="bold")
        self.border_subtitle = subtitle

    def set_subtitle(self, subtitle: str) -> None:
        """The bottom border's text (a name from the study: shown literally, on one line)."""
        self._subtitle = literal_line(subtitle)  # a Text: never parsed as markup
        self.call_after_refresh(self._mark_more)

    def compose(self) -> ComposeResult:
        yield LiteralText(classes="body")

    def show_text(
        self, text: str, subtitle: str = "", *, markdown: bool = False, more: str = ""
    ) -> None:
        """Show ``text`` (study content; literally, or as safe Markdown) and scroll to the top.

        ``more`` says how to read a text cut at :data:`~annotate.widgets.literal.MAX_SHOWN_CHARS`.
        """
        self.query_one(".body", LiteralText).set_text(text, markdown=markdown, more=more)
        self.set_subtitle(subtitle)
        self.scroll_home(animate=False)


def choice_lines(choices: Sequence[str] | None) -> str:
    """A question's choices as shown, one a line: ``A. ...``, ``B. ...``.

    Examples
    --------
    >>> print(choice_lines(["24", "32"]))
    A. 24
    B. 32
    """
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return "\n".join(
        f"{letters[i] if i < len(letters) else i + 1}. {c}" for i, c in enumerate(choices or ())
    )


class QuestionCard(TextPane):
    """One question of a pair: its subject, its text and its choices, if any."""

    def compose(self) -> ComposeResult:
        yield LiteralText(classes="subject")
        yield LiteralText(classes="body")
        yield LiteralText(classes="choices")

    def show_question(
        self,
        subject: str,
        text: str,
        choices: Sequence[str] | None,
        *,
        markdown: bool = False,
        more: str = "",
    ) -> None:
        """Show one question (study content: its text literally, or as safe Markdown).

        ``more`` says how to read a text cut at :data:`~annotate.widgets.literal.MAX_SHOWN_CHARS`.
        """
        self.query_one(".subject", LiteralText).set_text(subject)
        self.query_one(".body", LiteralText).set_text(text, markdown=markdown, more=more)
        box = self.query_one(".choices", LiteralText)
        lines = choice_lines(choices)
        box.set_text(lines, more=more)
        box.display = bool(lines)
        self.scroll_home(animate=False)
        self.call_after_refresh(self._mark_more)
