"""Showing study text literally.

Questions, prompts and responses come from study files written by other
people. Nothing in them may restyle the screen, open a link or move the
cursor: Rich/Textual markup stays text because it is never parsed (every
string becomes a :class:`rich.text.Text`, never markup), and characters the
terminal would act on are replaced by visible placeholders:

- C0 controls (U+0000 to U+001F except newline and tab) and DEL become their
  Unicode control pictures (``\\x1b`` is shown as ``␛``, ``\\r`` as ``␍``);
- C1 controls (U+0080 to U+009F), bidirectional overrides and isolates
  (U+202A to U+202E, U+2066 to U+2069, U+200E, U+200F, U+061C) and the line
  and paragraph separators (U+2028, U+2029) become ``⟨U+XXXX⟩``.

Newlines and tabs are kept. Everything else, including right-to-left script,
emoji and combining marks, is shown as it is.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from annotate.names import sanitize

__all__ = ["LiteralText", "literal", "sanitize"]


def literal(text: str, style: str = "") -> Text:
    """A Rich ``Text`` that shows ``text`` exactly, markup and all."""
    return Text(sanitize(text), style=style, end="")


class LiteralText(Static):
    """A ``Static`` that shows study text literally (see the module docstring)."""

    DEFAULT_CSS = """
    LiteralText { height: auto; }
    """

    def __init__(self, text: str = "", *, id: str | None = None, classes: str | None = None):
        super().__init__(literal(text), id=id, classes=classes, markup=False)

    def set_text(self, text: str) -> None:
        """Replace the shown text."""
        self.update(literal(text))
