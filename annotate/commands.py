"""Command-palette providers (Ctrl+P).

Fixed commands (vote, undo, choose subjects, back to studies, help) come from
``AnnotateApp.get_system_commands`` and the screen's ``palette_commands``;
this module holds the dynamic list: one "Open study" command per study.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import partial
from typing import Protocol

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from annotate.names import one_line
from annotate.views import StudyProgress


class _Host(Protocol):
    annotator: str | None

    def list_studies(self, annotator: str | None) -> Sequence[StudyProgress]: ...
    def open_study(self, study: str) -> None: ...


class StudyCommands(Provider):
    """ "Open study NAME" for every study in the database."""

    async def startup(self) -> None:
        host: _Host = self.app  # type: ignore[assignment]
        self.rows = await asyncio.to_thread(host.list_studies, host.annotator)

    def _commands(self) -> list[tuple[str, str, str]]:
        """(title, help, study name); study text is sanitised and escaped (shown literally)."""
        return [
            (
                one_line(f"Open study {row.name}"),
                escape(one_line(f"{' '.join(row.title.split())} ({row.done} / {row.total} done)")),
                row.name,
            )
            for row in self.rows
        ]

    def _open(self, name: str) -> None:
        host: _Host = self.app  # type: ignore[assignment]
        from textual.screen import Screen

        while len(self.app.screen_stack) > 2 and isinstance(self.app.screen, Screen):
            self.app.pop_screen()
        host.open_study(name)

    async def discover(self) -> Hits:
        for title, help_text, name in self._commands():
            yield DiscoveryHit(Text(title), partial(self._open, name), text=title, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, name in self._commands():
            score = matcher.match(title)
            if score > 0:
                # highlight() would parse the title as markup: show it as plain Text
                display = matcher.highlight(title) if "[" not in title else Text(title)
                yield Hit(score, display, partial(self._open, name), text=title, help=help_text)
