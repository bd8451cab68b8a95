"""Arena battle: one prompt, two anonymous responses A and B."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal

from annotate.screens.vote_base import VoteScreen
from annotate.widgets.panes import TextPane

if TYPE_CHECKING:
    from annotate.screens.full_text import ItemText
    from annotate.views import ShownBattle, ShownPair


class BattleScreen(VoteScreen):
    """The prompt on top, responses A and B side by side (stacked when narrow).

    Model names are never shown before the vote is committed; a study with
    ``reveal_models`` names them after it. Texts are safely rendered Markdown unless
    the study sets ``render_markdown = false``.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "a_better", "A better", tooltip="Response A is better.", id="vote-a"),
        Binding("b", "b_better", "B better", tooltip="Response B is better.", id="vote-b"),
        Binding("t", "tie", "Tie", tooltip="Both are about as good.", id="vote-tie"),
        Binding(
            "x", "both_bad", "Both bad", tooltip="Neither response is good.", id="vote-both-bad"
        ),
    ]
    VOTE_ACTIONS = ("a_better", "b_better", "tie", "both_bad")
    TEXT_PANES = ("prompt", "response-a", "response-b")
    INSTRUCTION = "Which response answers the prompt better?"

    def compose_item(self) -> ComposeResult:
        yield TextPane("Prompt", id="prompt")
        with Horizontal(id="responses", classes="item"):
            yield TextPane("A", id="response-a")
            yield TextPane("B", id="response-b")

    @classmethod
    def item_texts(cls, shown: ShownPair | ShownBattle) -> tuple[str, ...]:
        battle = cast("ShownBattle", shown)
        return (battle.prompt, battle.response_left, battle.response_right)

    def show_item(self, shown: ShownPair | ShownBattle) -> None:
        battle = cast("ShownBattle", shown)
        md, more = self.session.render_markdown, self.more_hint()
        self.query_one("#prompt", TextPane).show_text(
            battle.prompt, battle.category, markdown=md, more=more
        )
        self.query_one("#response-a", TextPane).show_text(
            battle.response_left, markdown=md, more=more
        )
        self.query_one("#response-b", TextPane).show_text(
            battle.response_right, markdown=md, more=more
        )

    def full_texts(self, shown: ShownPair | ShownBattle) -> list[ItemText]:
        from annotate.screens.full_text import ItemText

        battle = cast("ShownBattle", shown)
        return [
            ItemText("Prompt", battle.prompt),
            ItemText("A", battle.response_left),
            ItemText("B", battle.response_right),
        ]

    def action_a_better(self) -> None:
        self.cast("a")

    def action_b_better(self) -> None:
        self.cast("b")

    def action_tie(self) -> None:
        self.cast("tie")

    def action_both_bad(self) -> None:
        self.cast("both_bad")
