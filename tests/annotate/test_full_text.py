"""Issue 12, long texts: a text cut on the voting screen is read in full with ``v``.

The cut line names the key; the full-text view shows every character, page by page,
under the same rules as the panes (literal, or safe Markdown: escape sequences as
text, links as text), and nothing in it votes.
"""

from __future__ import annotations

import doctest
import importlib
import itertools
import json
import random
from pathlib import Path

import pytest
from rich.text import Text
from sqlalchemy import Engine
from textual.widgets import Label

from annotate.app import make_app
from annotate.names import sanitize
from annotate.screens.battle import BattleScreen
from annotate.screens.full_text import PAGE_CHARS, FullTextScreen, page_spans
from annotate.screens.pair import PairScreen
from annotate.services.importing import import_paths
from annotate.widgets.literal import MAX_SHOWN_CHARS, LiteralText
from annotate.widgets.panes import QuestionCard
from tests.annotate.conftest import press, start, votes

SIZE = (80, 24)
HAZARD = "\x1b[31mred\x1b[0m [bold]markup[/bold] [a link](https://evil.example/x) \x07"


def long_pair_study(root: Path, size: int) -> tuple[Path, str]:
    """A difficulty study whose one pair holds a question of ``size`` characters (lines)."""
    d = root / "long-pair"
    d.mkdir()
    (d / "study.toml").write_text('name = "long-pair"\nkind = "difficulty"\ntitle = "Long"\n')
    line = "lorem ipsum dolor sit amet consectetur adipiscing\n"
    text = (line * (size // len(line) + 1))[: size - len(HAZARD) - 4] + "END " + HAZARD
    questions = [
        {"id": "q1", "subject": "s", "text": text, "choices": ["yes", "no"]},
        {"id": "q2", "subject": "s", "text": "short"},
    ]
    (d / "questions.jsonl").write_text("\n".join(map(json.dumps, questions)) + "\n")
    (d / "pairs.csv").write_text("pair_id,first,second\np1,q1,q2\n")
    return d, text


def long_arena_study(root: Path, size: int) -> tuple[Path, str]:
    """An arena study (Markdown rendered) whose response by m1 has ``size`` characters."""
    d = root / "long-arena"
    d.mkdir()
    (d / "study.toml").write_text(
        'name = "long-arena"\nkind = "arena"\n[settings]\noverlap = 0\nreveal_models = false\n'
    )
    para = "Some **bold** words and `code` in a paragraph that goes on for a while.\n\n"
    text = (para * (size // len(para) + 1))[: size - len(HAZARD)] + HAZARD
    (d / "prompts.jsonl").write_text(json.dumps({"id": "p1", "text": "Say **hi**"}) + "\n")
    responses = [
        {"prompt_id": "p1", "model": "m1", "text": text},
        {"prompt_id": "p1", "model": "m2", "text": "short"},
    ]
    (d / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in responses))
    (d / "battles.csv").write_text("battle_id,prompt_id,model_a,model_b\nb1,p1,m1,m2\n")
    return d, text


def body_of(screen: FullTextScreen) -> str:
    return str(screen.query_one(".body", LiteralText).content)


def where_of(screen: FullTextScreen) -> str:
    return str(screen.query_one("#full-text-where", Label).content)


def pane_bodies(screen: PairScreen) -> list[str]:
    cards = [screen.query_one(c, QuestionCard) for c in ("#first", "#second")]
    return [str(c.query_one(".body", LiteralText).content) for c in cards]


async def test_v_reads_a_cut_question_in_full_and_votes_nothing(
    engine: Engine, db_path: Path, tmp_path: Path
) -> None:
    folder, text = long_pair_study(tmp_path, 3 * PAGE_CHARS + 5_000)
    import_paths(engine, [folder])
    app = make_app(engine=engine, annotator="reader", study="long-pair")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, PairScreen)
        cut = max(pane_bodies(screen), key=len)
        missing = len(text) - MAX_SHOWN_CHARS
        assert cut.endswith(f"[… {missing:,} more characters not shown: v shows the whole text]")
        await press(pilot, "v")
        view = app.screen
        assert isinstance(view, FullTextScreen)
        assert view.texts[view.index].text == text  # the cut one first, whatever is focused
        pages = []
        while True:
            pages.append(body_of(view))
            assert f"page {view.page + 1} of 4" in where_of(view)
            if view.page == 3:
                break
            await press(pilot, "n")
        assert "".join(pages) == sanitize(text)  # every character, in order, nothing added
        assert "␛[31mred␛[0m" in pages[-1]
        assert "[bold]markup[/bold]" in pages[-1]
        after = str(view.query_one(".after", LiteralText).content)
        assert after == "A. yes\nB. no"  # the choices, after the last page
        assert view.query_one(".after").display
        await press(pilot, "n")  # no page after the last: nothing happens
        assert view.page == 3
        await press(pilot, "p")
        assert view.page == 2
        assert not view.query_one(".after").display
        await press(pilot, "tab")  # the other question
        assert body_of(view) == "short"
        assert "the whole text: 5 characters" in where_of(view)
        await press(pilot, "1", "2", "0")  # vote keys do nothing here
        assert isinstance(app.screen, FullTextScreen)
        await press(pilot, "escape")
        assert app.screen is screen  # type: ignore[comparison-overlap]
        assert votes(db_path, "long-pair") == []
        await press(pilot, "1")  # the item under the view is still the one to vote on
    assert [k for _, k, *_ in votes(db_path, "long-pair")] == ["p1"]


async def test_full_markdown_text_stays_safe(engine: Engine, tmp_path: Path) -> None:
    folder, text = long_arena_study(tmp_path, PAGE_CHARS + 3_000)
    import_paths(engine, [folder])
    app = make_app(engine=engine, annotator="md", study="long-arena")
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, BattleScreen)
        await press(pilot, "v")
        view = app.screen
        assert isinstance(view, FullTextScreen)
        assert view.markdown
        assert view.texts[view.index].text == text
        first = body_of(view)
        assert "**" not in first  # rendered, as in the pane
        await press(pilot, "n")
        last = body_of(view)
        assert "a link (https://evil.example/x)" in last  # the address as text
        assert "␛[31mred␛[0m" in last
        assert "␇" in last
        assert "[bold]markup[/bold]" in last
        shown = view.query_one(".body", LiteralText).content
        assert isinstance(shown, Text)
        for span in shown.spans:  # nothing clickable
            assert getattr(span.style, "link", None) is None
        shot = app.export_screenshot()
        assert "\x1b" not in shot
        await press(pilot, "left")  # back a page, scrolled to its end
        assert view.page == 0
        assert body_of(view) == first


async def test_a_text_that_fits_has_no_cut_line(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="fit", study="demo-arena")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, BattleScreen)
        shown = screen.shown
        assert shown is not None
        await press(pilot, "v")
        view = app.screen
        assert isinstance(view, FullTextScreen)
        assert [t.title for t in view.texts] == ["Prompt", "A", "B"]
        assert "the whole text" in where_of(view)
        assert view.check_action("page", (1,)) is None  # greyed out: one page only
        await press(pilot, "shift+tab")
        assert view.index == len(view.texts) - 1
        await press(pilot, "v")  # v closes it too
        assert app.screen is screen


async def test_remapped_key_is_named_on_the_cut_line(engine: Engine, tmp_path: Path) -> None:
    folder, _ = long_pair_study(tmp_path, MAX_SHOWN_CHARS + 10)
    import_paths(engine, [folder])
    app = make_app(engine=engine, annotator="remap", study="long-pair", keymap={"full-text": "r"})
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, PairScreen)
        assert max(pane_bodies(screen), key=len).endswith("not shown: r shows the whole text]")
        await press(pilot, "r")
        assert isinstance(app.screen, FullTextScreen)


@pytest.mark.parametrize("seed", range(20))
def test_pages_cover_the_text_in_order(seed: int) -> None:
    rng = random.Random(seed)
    pieces = ["a", "bc ", "\n", "\n\n", "x" * 50]
    text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 4_000)))
    size = rng.randrange(8, 300)
    spans = page_spans(text, size)
    assert "".join(text[a:b] for a, b in spans) == text
    assert all(0 < b - a <= size for a, b in spans) or text == ""
    assert all(b == c for (_, b), (c, _) in itertools.pairwise(spans))


@pytest.mark.parametrize(
    "module", ["annotate.screens.full_text", "annotate.widgets.literal", "annotate.widgets.panes"]
)
def test_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
