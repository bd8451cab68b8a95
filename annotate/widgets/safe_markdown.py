"""Safely rendered Markdown: LLM answers shown with their emphasis, lists and code.

The text is sanitised first (:func:`annotate.names.sanitize`: escape sequences and
control characters become visible placeholders such as ``␛``), cut at
:data:`~annotate.widgets.literal.MAX_SHOWN_CHARS`, then parsed by markdown-it-py
(CommonMark, tables and strikethrough; raw HTML off, so tags stay text) and turned
into one :class:`rich.text.Text`, never into markup:

- a link is shown as its text followed by its address in brackets, as plain
  text: nothing is clickable, nothing is followed (no OSC 8 hyperlink is written);
- an image is shown as ``[image: ALT]`` and its address; nothing is fetched;
- code (inline and fenced) is shown in a code style, without syntax highlighting
  (Pygments took a quarter of a second on a 20,000-character answer);
- headings are bold, emphasis italic, lists get bullets or numbers, quotes a bar.

Building the ``Text`` of a 20,000-character answer takes a few tens of milliseconds,
like the plain text it replaces.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from rich.style import Style
from rich.text import Text

from annotate.names import sanitize

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = ["markdown_text", "warm"]


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """The parser, built on first use: a study without Markdown never imports markdown-it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(
        ["table", "strikethrough"]
    )


CODE = Style(color="bright_cyan", bgcolor="grey15")
LINK = Style(underline=True)
ADDRESS = Style(dim=True)

_INLINE_STYLES = {
    "strong_open": Style(bold=True),
    "em_open": Style(italic=True),
    "s_open": Style(strike=True),
}


def _attr(token: Token, name: str) -> str:
    value = token.attrGet(name)
    return "" if value is None else str(value)


def _inline(out: Text, children: list[Token] | None) -> None:
    """Append the inline tokens of one block to ``out``."""
    styles: list[Style] = []
    links: list[str] = []  # the address of each open link ("" for an autolink)

    def current() -> Style:
        return Style.combine(styles) if styles else Style()

    for tok in children or ():
        kind = tok.type
        if kind == "text":
            out.append(tok.content, current())
        elif kind in _INLINE_STYLES:
            styles.append(_INLINE_STYLES[kind])
        elif kind in ("strong_close", "em_close", "s_close"):
            if styles:
                styles.pop()
        elif kind == "code_inline":
            out.append(tok.content, current() + CODE)
        elif kind == "softbreak":
            out.append(" ")
        elif kind == "hardbreak":
            out.append("\n")
        elif kind == "link_open":
            links.append("" if tok.markup == "autolink" else _attr(tok, "href"))
            styles.append(LINK)
        elif kind == "link_close":
            if styles:
                styles.pop()
            href = links.pop() if links else ""
            if href:  # an autolink shows its address as its text already
                out.append(f" ({href})", ADDRESS)
        elif kind == "image":
            alt = tok.content or "".join(c.content for c in tok.children or ())
            out.append(f"[image: {alt or 'no description'}]", current() + Style(italic=True))
            src = _attr(tok, "src")
            if src:
                out.append(f" ({src})", ADDRESS)
        else:  # html_inline cannot occur (html is off); anything else as its source
            out.append(tok.content, current())


def _blocks(tokens: list[Token]) -> Text:
    out = Text(end="")
    lists: list[list[int]] = []  # per open list: [next number], or [-1] for bullets
    quote = 0
    marker = ""  # a list item's bullet, written before its first paragraph
    heading_at = -1
    cells: list[Text] | None = None  # the cells of the table row being read
    ends = [0, -1]  # where the last line break ends, where the last blank line ends

    def newline() -> None:
        out.append("\n")
        ends[1] = len(out) if ends[0] == len(out) - 1 else ends[1]
        ends[0] = len(out)

    def new_block() -> None:
        if len(out) and ends[1] != len(out) and not lists:
            if ends[0] != len(out):
                newline()
            newline()

    def line_start() -> None:
        nonlocal marker
        out.append("▌ " * quote + "  " * max(0, len(lists) - 1))
        if marker:
            out.append(marker, Style(bold=True))
            marker = ""
        elif lists:
            out.append("  ")

    for tok in tokens:
        kind = tok.type
        if kind == "inline":
            if cells is not None:
                cell = Text(end="")
                _inline(cell, tok.children)
                cells.append(cell)
            else:
                _inline(out, tok.children)
        elif kind in ("paragraph_open", "heading_open"):
            if not tok.hidden:
                new_block()
            if len(out) and ends[0] != len(out):
                newline()
            line_start()
            heading_at = len(out) if kind == "heading_open" else -1
        elif kind in ("paragraph_close", "heading_close"):
            if heading_at >= 0:
                out.stylize("bold underline" if tok.tag in ("h1", "h2") else "bold", heading_at)
                heading_at = -1
            newline()
        elif kind in ("bullet_list_open", "ordered_list_open"):
            new_block()
            start = _attr(tok, "start")
            lists.append([int(start) if start.isdigit() else 1] if kind[0] == "o" else [-1])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            if lists:
                lists.pop()
        elif kind == "list_item_open":
            if lists and lists[-1][0] >= 0:
                marker = f"{lists[-1][0]}. "
                lists[-1][0] += 1
            else:
                marker = "• "
        elif kind == "blockquote_open":
            new_block()
            quote += 1
        elif kind == "blockquote_close":
            quote = max(0, quote - 1)
        elif kind in ("fence", "code_block"):
            new_block()
            lang = tok.info.strip().split(" ")[0] if kind == "fence" else ""
            if lang:
                line_start()
                out.append(lang, ADDRESS)
                newline()
            for line in tok.content.rstrip("\n").split("\n"):
                line_start()
                out.append(f" {line} ", CODE)
                newline()
        elif kind == "hr":
            new_block()
            line_start()
            out.append("─" * 20, ADDRESS)
            newline()
        elif kind == "table_open":
            new_block()
        elif kind == "tr_open":
            cells = []
        elif kind == "tr_close" and cells is not None:
            line_start()
            out.append_text(Text(" │ ", style=ADDRESS).join(cells))
            newline()
            cells = None
        elif kind == "html_block":  # html is off, so this does not occur; shown as text
            new_block()
            out.append(tok.content.rstrip("\n"))
            newline()
    out.rstrip()
    return out


@lru_cache(maxsize=16)
def _cached(text: str) -> Text:
    return _blocks(_parser().parse(sanitize(text)))


def markdown_text(text: str) -> Text:
    """``text`` (Markdown from a study file) as a safe Rich ``Text``.

    The caller bounds the length; this only sanitises and renders. The last texts
    rendered are cached: a voting screen renders the next item's texts in the worker
    thread that loads it (:func:`warm`), so painting it costs only the copy.

    Examples
    --------
    >>> markdown_text("**bold** and [a link](https://example.com)").plain
    'bold and a link (https://example.com)'
    >>> markdown_text("![a cat](http://x/cat.png)").plain
    '[image: a cat] (http://x/cat.png)'
    >>> markdown_text("red \\x1b[31m").plain
    'red ␛[31m'
    """
    return _cached(text).copy()


def warm(*texts: str) -> None:
    """Render ``texts`` into the cache (call it from a worker thread, before showing them)."""
    for text in texts:
        _cached(text)
