"""The whole text of the item on screen, page by page (``v`` on the voting screens).

The voting screens show at most :data:`~annotate.widgets.literal.MAX_SHOWN_CHARS` of
each text; this screen shows all of it, one page of at most :data:`PAGE_CHARS`
characters at a time, under the same rules (literal, or safely rendered Markdown:
escape sequences shown as text, nothing clickable). A page costs what one pane of the
voting screen costs to paint, whatever the length of the text (in Markdown, the
pages either side of the one shown are rendered ahead in a thread): wrapping a whole 1 MB
text at once froze the app for seconds (Textual's ``TextArea`` with soft wrap took
1.5 s for 1 MB of paragraphs, 5.4 s for one 1 MB line).

Pages end at a blank line or a line break near :data:`PAGE_CHARS` where there is
one, so a page seldom cuts a paragraph (a Markdown construct that spans two pages,
such as a long code block, is rendered on each page on its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Label

from annotate.widgets.literal import MAX_SHOWN_CHARS, LiteralText, literal_line
from annotate.widgets.safe_markdown import warm

PAGE_CHARS = MAX_SHOWN_CHARS
"""The most characters one page shows (as much as a pane of the voting screen)."""


@dataclass(frozen=True)
class ItemText:
    """One text of the item on screen, as the full-text view shows it."""

    title: str
    """Which text it is ("Prompt", "A", "1 · first question"): app wording, not study text."""
    text: str
    """The text from the study file (shown literally or as safe Markdown)."""
    after: str = ""
    """Shown literally after the text's last page (a question's choices)."""


def first_page(text: str) -> str:
    """The first page of ``text`` (the voting screens render it ahead for a cut text)."""
    return text[slice(*page_spans(text[: PAGE_CHARS + 1])[0])]


def page_spans(text: str, size: int = PAGE_CHARS) -> list[tuple[int, int]]:
    """``(start, end)`` of each page of ``text``: at most ``size`` characters each.

    A page ends after the last blank line, else the last line break, in the last
    quarter of its ``size`` characters; failing both, after exactly ``size``.

    Examples
    --------
    >>> page_spans("")
    [(0, 0)]
    >>> page_spans("abcdefghij", size=4)
    [(0, 4), (4, 8), (8, 10)]
    >>> page_spans("abcdefg\\n\\nhij", size=10)
    [(0, 9), (9, 12)]
    """
    spans: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while True:
        end = start + size
        if end >= n:
            spans.append((start, n))
            return spans
        floor = start + size * 3 // 4
        cut = text.rfind("\n\n", floor, end)
        if cut >= 0:
            end = cut + 2
        else:
            cut = text.rfind("\n", floor, end)
            end = cut + 1 if cut >= 0 else end
        spans.append((start, end))
        start = end


class FullTextScreen(ModalScreen[None]):
    """Every text of one item in full: Tab picks the text, n / p turn its pages.

    Parameters
    ----------
    texts : sequence of ItemText
        The item's texts, in screen order (at least one).
    markdown : bool
        Render them as safe Markdown (the study's ``render_markdown``), else literally.
    start : int
        The index of the text shown first.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n,right", "page(1)", "Next page", tooltip="The next page of this text."),
        Binding("p,left", "page(-1)", "Prev page", tooltip="The previous page of this text."),
        Binding("tab", "next_text", "Next text", tooltip="The item's next text."),
        Binding(
            "shift+tab", "next_text(-1)", "Prev text", show=False, tooltip="The previous text."
        ),
        Binding("escape,v", "close", "Back", tooltip="Back to the item (nothing is voted here)."),
    ]

    body = getters.query_one("#full-text-body", VerticalScroll)

    def __init__(self, texts: Sequence[ItemText], *, markdown: bool, start: int = 0) -> None:
        super().__init__()
        self.texts = list(texts)
        self.markdown = markdown
        self.index = min(max(start, 0), len(self.texts) - 1)
        """Which text is shown."""
        self.page = 0
        """Which page of it is shown."""
        self._spans: dict[int, list[tuple[int, int]]] = {}

    def spans(self, index: int) -> list[tuple[int, int]]:
        """The pages of text ``index`` (computed once: a scan of the text)."""
        if index not in self._spans:
            self._spans[index] = page_spans(self.texts[index].text)
        return self._spans[index]

    def compose(self) -> ComposeResult:
        yield Label(id="full-text-tabs")
        yield Label(id="full-text-where")
        with VerticalScroll(id="full-text-body"):
            yield LiteralText(classes="body")
            yield LiteralText(classes="after")
        yield Footer()

    def on_mount(self) -> None:
        self.show_page(self.index, 0)
        self.body.focus()

    def show_page(self, index: int, page: int, *, at_end: bool = False) -> None:
        """Show page ``page`` of text ``index`` (scrolled to its top, or its end)."""
        self.index, self.page = index, page
        item = self.texts[index]
        spans = self.spans(index)
        start, end = spans[page]
        last = page == len(spans) - 1
        self.query_one(".body", LiteralText).set_text(item.text[start:end], markdown=self.markdown)
        after = self.query_one(".after", LiteralText)
        after.set_text(item.after if last else "")
        after.display = last and bool(item.after)
        self.query_one("#full-text-tabs", Label).update(self._tabs())
        self.query_one("#full-text-where", Label).update(self._where(len(spans), start, end))
        if at_end:
            self.call_after_refresh(self.body.scroll_end, animate=False)
        else:
            self.body.scroll_home(animate=False)
        self.refresh_bindings()
        if self.markdown:  # render the pages either side in a thread: turning is a copy
            near = [spans[i] for i in (page - 1, page + 1) if 0 <= i < len(spans)]
            pages = [item.text[a:b] for a, b in near]
            # after this page is painted: the thread would hold the GIL while it paints
            self.call_after_refresh(self._warm, pages)

    def _warm(self, pages: list[str]) -> None:
        self.run_worker(
            partial(warm, *pages),
            thread=True,
            exclusive=True,
            exit_on_error=False,
            group="full-text-warm",
        )

    def _tabs(self) -> Text:
        out = Text()
        for i, item in enumerate(self.texts):
            if i:
                out.append("  ")
            out.append_text(
                literal_line(f" {item.title} ", style="reverse bold" if i == self.index else "dim")
            )
        if len(self.texts) > 1:
            out.append("   Tab: next text", style="dim")
        return out

    def _where(self, pages: int, start: int, end: int) -> Text:
        total = len(self.texts[self.index].text)
        if pages == 1:
            return Text(f"the whole text: {total:,} characters", style="dim")
        return Text(
            f"page {self.page + 1} of {pages} · characters {start + 1:,}-{end:,} of {total:,}"
            " · n next page, p previous",
            style="bold",
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "page":
            step = parameters[0] if parameters else 1
            target = self.page + (step if isinstance(step, int) else 1)
            return 0 <= target < len(self.spans(self.index)) or None
        if action == "next_text":
            return len(self.texts) > 1 or None
        return True

    def action_page(self, step: int = 1) -> None:
        target = self.page + step
        if 0 <= target < len(self.spans(self.index)):
            self.show_page(self.index, target, at_end=step < 0)

    def action_next_text(self, step: int = 1) -> None:
        self.show_page((self.index + step) % len(self.texts), 0)

    def action_close(self) -> None:
        self.dismiss(None)
