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
emoji and combining marks, is shown as it is. Names and titles shown on one
line go through :func:`literal_line` (``annotate.names.one_line``: newlines and
tabs become placeholders too).

Very long texts are shown up to :data:`MAX_SHOWN_CHARS` characters, followed by
a line saying how many characters are not shown (on the voting screens, also which
key shows them all: :mod:`annotate.screens.full_text`, page by page): wrapping a
3 MB string took Rich about ten seconds, during which the app could not paint or
take a key.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from annotate.names import one_line, sanitize

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_SHOWN_CHARS",
    "LiteralText",
    "bounded",
    "bounded_markdown",
    "literal",
    "literal_line",
    "sanitize",
]

MAX_SHOWN_CHARS = 20_000
"""How much of one text a :class:`LiteralText` shows (about ten screens of a half-width pane).

Longer texts (a whole document pasted into a question) end with a line saying how
many characters are not shown; the vote still applies to the item. Painting this
much takes a few tens of milliseconds; painting 3 MB took about ten seconds.
"""

MAX_LINE_CHARS = 300
"""How much of a one-line name or title :func:`literal_line` shows."""


def literal(text: str, style: str = "") -> Text:
    """A Rich ``Text`` that shows ``text`` exactly, markup and all."""
    return Text(sanitize(text), style=style, end="")


def literal_line(text: object, style: str = "", *, limit: int = MAX_LINE_CHARS) -> Text:
    """A one-line ``Text`` of a name or title: :func:`annotate.names.one_line`, at most ``limit``.

    Examples
    --------
    >>> literal_line("gpt\\x1b]0;pwned\\x07\\nx").plain
    'gpt␛]0;pwned␇␤x'
    >>> literal_line("x" * 10, limit=4).plain
    'xxxx…'
    """
    raw = str(text)
    shown = one_line(raw[:limit]) + ("…" if len(raw) > limit else "")
    return Text(shown, style=style, end="")


def bounded(text: str, limit: int = MAX_SHOWN_CHARS, *, more: str = "") -> Text:
    """``literal(text)``, cut after ``limit`` characters with a line saying how many are left.

    ``more`` ends that line: how to read the rest (the voting screens name their key).

    Examples
    --------
    >>> bounded("abcdef", limit=4).plain
    'abcd\\n[… 2 more characters not shown]'
    >>> bounded("abcdef", limit=4, more="v shows them").plain
    'abcd\\n[… 2 more characters not shown: v shows them]'
    >>> bounded("abc", limit=4).plain
    'abc'
    """
    if len(text) <= limit:
        return literal(text)
    return _not_shown(literal(text[:limit]), len(text) - limit, more)


def _not_shown(out: Text, missing: int, more: str = "") -> Text:
    out.append(f"\n[… {missing:,} more characters not shown", style="italic")
    if more:
        out.append(": ", style="italic")
        out.append(one_line(more), style="bold")
    out.append("]", style="italic")
    return out


def bounded_markdown(text: str, limit: int = MAX_SHOWN_CHARS, *, more: str = "") -> Text:
    """``text`` as safely rendered Markdown (:mod:`annotate.widgets.safe_markdown`), bounded.

    Examples
    --------
    >>> bounded_markdown("**bold** [x](http://e.org)").plain
    'bold x (http://e.org)'
    >>> bounded_markdown("abcdef", limit=4).plain
    'abcd\\n[… 2 more characters not shown]'
    """
    from annotate.widgets.safe_markdown import markdown_text

    if len(text) <= limit:
        return markdown_text(text)
    return _not_shown(markdown_text(text[:limit]), len(text) - limit, more)


class LiteralText(Static):
    """A ``Static`` that shows study text literally (see the module docstring).

    With ``markdown=True`` the text is shown as safely rendered Markdown instead
    (:func:`bounded_markdown`): still sanitised, never markup, nothing clickable.
    """

    DEFAULT_CSS = """
    LiteralText { height: auto; }
    """

    def __init__(self, text: str = "", *, id: str | None = None, classes: str | None = None):
        super().__init__(bounded(text), id=id, classes=classes, markup=False)

    def set_text(self, text: str, *, markdown: bool = False, more: str = "") -> None:
        """Replace the shown text (at most :data:`MAX_SHOWN_CHARS` of it).

        ``more`` ends the line that says how much of a longer text is not shown.
        """
        shown = bounded_markdown(text, more=more) if markdown else bounded(text, more=more)
        self.update(shown)
