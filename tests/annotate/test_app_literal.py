"""Study text is shown literally: the sanitiser, and the literal-text studies on screen."""

from __future__ import annotations

import unicodedata

import pytest
from rich.text import Text
from sqlalchemy import Engine
from textual.geometry import Region
from textual.widget import Widget

from annotate.app import make_app
from annotate.screens.battle import BattleScreen
from annotate.screens.pair import PairScreen
from annotate.widgets.literal import LiteralText, literal, sanitize
from annotate.widgets.panes import TextPane
from annotate.widgets.progress import StudyProgress
from tests.annotate.conftest import press, settle, start

HAZARDS = "[bold red]boom[/] [link=https://example.com]click[/link] [@click=app.quit]x[/] [/]"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31mred\x1b[0m", "␛[31mred␛[0m"),
        ("a\rb\bc\x07d\x00e\x7f", "a␍b␈c␇d␀e␡"),
        ("keep\ttab\nand newline", "keep\ttab\nand newline"),
        ("csi \x9b1m nel \x85", "csi ⟨U+009B⟩1m nel ⟨U+0085⟩"),
        ("\u202egnp.exe\u202c \u2067x\u2069", "⟨U+202E⟩gnp.exe⟨U+202C⟩ ⟨U+2067⟩x⟨U+2069⟩"),
        ("line\u2028para\u2029", "line⟨U+2028⟩para⟨U+2029⟩"),
        ("vt\x0bff\x0c", "vt␋ff␌"),
        (HAZARDS, HAZARDS),
        ("العربية עברית 👩\u200d👩\u200d👧 Z̷a̶", "العربية עברית 👩\u200d👩\u200d👧 Z̷a̶"),
    ],
)
def test_sanitize(raw: str, shown: str) -> None:
    assert sanitize(raw) == shown


def test_sanitize_leaves_no_control_character() -> None:
    every = "".join(chr(c) for c in range(0x2100)) + "\u2028\u2029"
    out = sanitize(every)
    bad = [c for c in out if unicodedata.category(c) == "Cc" and c not in "\n\t"]
    assert bad == []
    assert "\u202e" not in out


def test_literal_is_plain_text_without_markup() -> None:
    text = literal(HAZARDS)
    assert isinstance(text, Text)
    assert text.plain == HAZARDS
    assert text.spans == []


def rendered(widget: Widget) -> list[str]:
    """The widget's lines as painted (text of each strip)."""
    width, height = widget.size
    return [strip.text for strip in widget.render_lines(Region(0, 0, width, height))]


def assert_safe(widget: Widget) -> None:
    for strip in widget.render_lines(Region(0, 0, *widget.size)):
        for segment in strip:
            assert "\x1b" not in segment.text
            assert not any(unicodedata.category(c) == "Cc" for c in segment.text), (
                f"control character painted: {segment.text!r}"
            )
            style = segment.style
            if style is not None:
                assert not style.link, f"a link was made from study text: {segment.text!r}"
                assert "@click" not in (style.meta or {}), "an action was made from study text"


async def test_literal_difficulty_study_on_screen(literal_engine: Engine) -> None:
    app = make_app(engine=literal_engine, annotator="lit", study="literal-text")
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, PairScreen)
        title = screen.query_one(StudyProgress).query_one(".title")
        assert "Literal text [bold red]check[/]" in "".join(rendered(title))
        seen_texts: list[str] = []
        for _ in range(3):
            for widget in screen.query(LiteralText):
                assert_safe(widget)
                seen_texts.append("".join(rendered(widget)))
            await press(pilot, "0")
        assert app.is_running  # the [@click=app.quit] in the text did nothing
    joined = "\n".join(seen_texts)
    assert "subject: hazards [b]not bold[/b]" in joined
    assert "[bold red]boom[/]" in joined
    assert "[link=https://example.com]click[/link]" in joined
    assert "␛[31mred␛[0m" in joined
    assert "[@click=app.quit]quit[/]" in joined  # a choice
    assert "0214abcdefghij" in joined  # the end of the very long line is reachable


async def test_literal_arena_on_screen_narrow(literal_engine: Engine) -> None:
    app = make_app(engine=literal_engine, annotator="lit", study="literal-arena")
    async with app.run_test(size=(80, 24)) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, BattleScreen)
        categories = []
        for _ in range(2):
            for widget in screen.query(LiteralText):
                assert_safe(widget)
            prompt = screen.query_one("#prompt", TextPane)
            border = prompt.render_lines(Region(0, 0, *prompt.outer_size))[-1]
            categories.append(border.text)  # the bottom border holds the category
            await press(pilot, "t")
        assert app.is_running
    assert any("[i]markup[/i]" in line for line in categories), categories


async def test_narrow_terminal_stacks_the_two_halves(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="n", study="demo-difficulty")
    async with app.run_test(size=(60, 30)) as pilot:
        await start(pilot)
        first, second = app.screen.query_one("#first"), app.screen.query_one("#second")
        assert first.region.x == second.region.x
        assert first.region.bottom <= second.region.y
    app = make_app(engine=engine, annotator="n", study="demo-difficulty")
    async with app.run_test(size=(80, 24)) as pilot:
        await start(pilot)
        first, second = app.screen.query_one("#first"), app.screen.query_one("#second")
        assert first.region.y == second.region.y
        assert first.region.right <= second.region.x


async def test_palette_shows_study_titles_literally(literal_engine: Engine) -> None:
    from annotate.commands import StudyCommands

    app = make_app(engine=literal_engine, annotator="pal")
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await press(pilot, "ctrl+p")
        await pilot.press(*"Open study literal")
        await settle(pilot)
        provider = StudyCommands(app.screen)
        await provider.startup()
        helps = [h for _, h, _ in provider._commands()]
        assert any("Literal text \\[bold red]check\\[/]" in h for h in helps)
        from textual.content import Content

        shown = [Content.from_markup(h).plain for h in helps]
        assert any("Literal text [bold red]check[/]" in h for h in shown)
