"""Difficulty study: which of two questions is harder?"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal

from annotate.screens.vote_base import VoteScreen
from annotate.widgets.panes import QuestionCard, choice_lines

if TYPE_CHECKING:
    from annotate.screens.full_text import ItemText
    from annotate.views import ShownBattle, ShownPair


class PairScreen(VoteScreen):
    """Two questions side by side (stacked on narrow terminals)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "1",
            "first_harder",
            "1st harder",
            tooltip="The first question (left or top) is harder.",
            id="vote-first-harder",
        ),
        Binding(
            "2",
            "second_harder",
            "2nd harder",
            tooltip="The second question (right or bottom) is harder.",
            id="vote-second-harder",
        ),
        Binding(
            "0",
            "skip",
            "Can't judge",
            tooltip="Skip: you cannot tell which is harder.",
            id="vote-skip",
        ),
        Binding(
            "s",
            "choose_subjects",
            "Subjects",
            show=False,
            tooltip="Choose the subjects you know; pairs in the others are not shown.",
            id="choose-subjects",
        ),
    ]
    VOTE_ACTIONS = ("first_harder", "second_harder", "skip")
    TEXT_PANES = ("first", "second")
    INSTRUCTION = "Which question is harder for a language model to answer correctly?"

    def compose_item(self) -> ComposeResult:
        with Horizontal(id="pair", classes="item"):
            yield QuestionCard("1 · first question", id="first")
            yield QuestionCard("2 · second question", id="second")

    @classmethod
    def item_texts(cls, shown: ShownPair | ShownBattle) -> tuple[str, ...]:
        pair = cast("ShownPair", shown)
        return (pair.left.text, pair.right.text)

    def show_item(self, shown: ShownPair | ShownBattle) -> None:
        pair = cast("ShownPair", shown)
        md, more = self.session.render_markdown, self.more_hint()
        for card_id, q in (("#first", pair.left), ("#second", pair.right)):
            card = self.query_one(card_id, QuestionCard)
            card.show_question(f"subject: {q.subject}", q.text, q.choices, markdown=md, more=more)

    def full_texts(self, shown: ShownPair | ShownBattle) -> list[ItemText]:
        from annotate.screens.full_text import ItemText

        pair = cast("ShownPair", shown)
        return [
            ItemText(title, q.text, after=choice_lines(q.choices))
            for title, q in (("1 · first question", pair.left), ("2 · second question", pair.right))
        ]

    def action_first_harder(self) -> None:
        self.cast("left")

    def action_second_harder(self) -> None:
        self.cast("right")

    def action_skip(self) -> None:
        self.cast("skip")

    def action_choose_subjects(self) -> None:
        from annotate.screens.subjects import SubjectsScreen

        self.app.push_screen(SubjectsScreen(self.session), self.apply_subjects)

    def apply_subjects(self, known: set[str] | None) -> None:
        """Opt out of the subjects not in ``known`` (None: no change)."""
        if known is None:
            return
        excluded = set(self.session.subjects) - known
        if excluded == self.session.excluded_subjects:
            return
        self.committing = True
        self.gate.close()
        self._set_subjects(excluded)

    def _set_subjects(self, excluded: set[str]) -> None:
        self.run_worker(
            lambda: self._apply_excluded(excluded),
            thread=True,
            exclusive=True,
            exit_on_error=False,
            group="vote",
        )

    def _apply_excluded(self, excluded: set[str]) -> None:
        self.session.set_excluded_subjects(excluded)
        self.prepare(self.session)
        self.app.call_from_thread(self.show_current)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose_subjects":
            return len(self.session.subjects) > 1
        return super().check_action(action, parameters)
