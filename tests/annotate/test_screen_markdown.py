"""Markdown in the battle and pair panes: rendered safely, or shown raw when the study says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine

from annotate.app import make_app
from annotate.screens.battle import BattleScreen
from annotate.services.importing import import_paths
from annotate.widgets.safe_markdown import markdown_text
from tests.annotate.conftest import start

SIZE = (120, 40)
RESPONSE = (
    "Here is **bold** text and a [docs link](https://evil.example/x).\n\n"
    "```python\nprint('hi')\n```\n\n"
    "![a cat](http://evil.example/cat.png)\n\n"
    "Escape \x1b[31mred\x1b[0m and [bold]markup[/bold]."
)


def arena_study(root: Path, *, render: bool | None) -> Path:
    """A one-battle arena study whose response A is :data:`RESPONSE`."""
    folder = root / f"md-{render}"
    folder.mkdir()
    setting = "" if render is None else f"render_markdown = {str(render).lower()}\n"
    (folder / "study.toml").write_text(
        f'name = "md-arena"\nkind = "arena"\n[settings]\noverlap = 0\nreveal_models = false\n'
        f"{setting}",
        encoding="utf-8",
    )
    (folder / "prompts.jsonl").write_text(
        json.dumps({"id": "p1", "category": "c", "text": "Say **hi**"}) + "\n", encoding="utf-8"
    )
    responses = [
        {"prompt_id": "p1", "model": "m1", "text": RESPONSE},
        {"prompt_id": "p1", "model": "m2", "text": RESPONSE},
    ]
    (folder / "responses.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in responses), encoding="utf-8"
    )
    (folder / "battles.csv").write_text(
        "battle_id,prompt_id,model_a,model_b\nb1,p1,m1,m2\n", encoding="utf-8"
    )
    return folder


def test_markdown_text_is_safe() -> None:
    text = markdown_text(RESPONSE)
    plain = text.plain
    assert "bold" in plain
    assert "**" not in plain
    assert "docs link (https://evil.example/x)" in plain  # the address shown as text
    assert "[image: a cat] (http://evil.example/cat.png)" in plain  # never fetched
    assert "print('hi')" in plain
    assert "```" not in plain
    assert "␛[31mred␛[0m" in plain
    assert "\x1b" not in plain
    assert "[bold]markup[/bold]" in plain  # console markup stays text
    for span in text.spans:  # nothing clickable: no link or action in any style
        style = span.style
        assert not isinstance(style, str) or "link" not in style
        assert getattr(style, "link", None) is None
        assert not getattr(style, "meta", None)


def test_raw_html_stays_text() -> None:
    assert markdown_text("a <script>x</script> b").plain == "a <script>x</script> b"


@pytest.mark.parametrize("render", [None, True, False])
async def test_battle_panes(engine: Engine, tmp_path: Path, render: bool | None) -> None:
    import_paths(engine, [arena_study(tmp_path, render=render)])
    app = make_app(engine=engine, annotator="md", study="md-arena")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, BattleScreen)
        body = str(screen.query_one("#response-a").query_one(".body").content)
        prompt = str(screen.query_one("#prompt").query_one(".body").content)
        if render is False:  # plain text: the Markdown source, sanitised
            assert "**bold**" in body
            assert "```python" in body
            assert "![a cat]" in body
            assert prompt == "Say **hi**"
        else:  # arena default: rendered
            assert "**" not in body
            assert "docs link (https://evil.example/x)" in body
            assert "[image: a cat]" in body
            assert prompt == "Say hi"
        assert "␛[31m" in body
        assert "\x1b" not in body
        # the pane holds no widget that could open a link
        assert not list(screen.query("Markdown"))


async def test_long_answer_is_bounded(engine: Engine, tmp_path: Path) -> None:
    folder = arena_study(tmp_path, render=True)
    lines = (folder / "responses.jsonl").read_text(encoding="utf-8").splitlines()
    long = json.loads(lines[0])
    long["text"] = "**x** " * 10_000
    lines[0] = json.dumps(long)
    (folder / "responses.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    import_paths(engine, [folder])
    app = make_app(engine=engine, annotator="md", study="md-arena")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        bodies = [
            str(app.screen.query_one(f"#response-{s}").query_one(".body").content) for s in "ab"
        ]
        assert any("40,000 more characters not shown" in b for b in bodies)
