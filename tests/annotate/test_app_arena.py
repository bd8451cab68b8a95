"""Pilot tests of an arena study, the command palette and the key map."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import Engine
from textual.widgets import Label, Static

from annotate.app import make_app
from annotate.screens.battle import BattleScreen
from annotate.screens.instructions import InstructionsScreen
from annotate.screens.pair import PairScreen
from annotate.screens.summary import SummaryScreen
from annotate.views import ShownBattle
from annotate.widgets.literal import bounded_markdown
from annotate.widgets.panes import TextPane
from tests.annotate.conftest import press, record_notifications, rows, start, votes

SIZE = (100, 32)


def visible_text(screen: BattleScreen) -> str:
    """Everything the screen's widgets hold as text, border titles included.

    The reveal line (the models of the previous battle, after its vote) is left out.
    """
    parts = [str(w.content) for w in screen.query(Static) if w.id != "reveal"]
    parts += [f"{p.border_title} {p.border_subtitle}" for p in screen.query(TextPane)]
    return "\n".join(parts)


def models(db_path: Path) -> set[str]:
    return {m for (m,) in rows(db_path, "SELECT DISTINCT model FROM modelresponse")}


async def test_every_vote_key_and_blind_reveal(engine: Engine, db_path: Path) -> None:
    app = make_app(engine=engine, annotator="ann", study="demo-arena")
    notes = record_notifications(app)
    names = models(db_path)
    shown: list[ShownBattle] = []
    reveals: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, BattleScreen)
        assert not screen.query_one("#reveal", Label).display  # nothing before the first vote
        for key in ("a", "b", "t", "x"):
            text = visible_text(screen)
            assert not any(n in text for n in names), "a model name is on screen before the vote"
            assert screen.shown is not None
            shown.append(screen.shown)  # type: ignore[arg-type]
            assert str(screen.query_one("#response-a").query_one(".body").content) == (
                bounded_markdown(shown[-1].response_left).plain  # rendered (render_markdown)
            )
            await press(pilot, key)
            reveals.append(str(screen.query_one("#reveal", Label).content))
        assert str(screen.query_one(".count").content) == "4 / 96"
    got = votes(db_path, "demo-arena")
    assert len(got) == 4
    battles = dict(
        (k, (a, b))
        for k, a, b in rows(
            db_path,
            "SELECT i.key, b.model_a, b.model_b FROM battle b JOIN item i ON i.id = b.item_id",
        )
    )
    (_, k_a, c_a, sw_a, *_), (_, _, c_b, sw_b, *_), (_, _, c_t, *_), (_, _, c_x, *_) = got
    assert c_a == ("model_b" if sw_a else "model_a")  # a = the response shown as A
    assert c_b == ("model_a" if sw_b else "model_b")
    assert (c_t, c_x) == ("tie", "both_bad")
    # reveal_models = true: after each vote, the line under the progress bar names A and B
    # as shown (not a toast, which would cover the next item)
    model_a, model_b = battles[k_a]
    left, right = (model_b, model_a) if sw_a else (model_a, model_b)
    assert reveals[0] == f"Your last vote: A was {left}, B was {right}"
    assert len(reveals) == 4
    assert not any("A was" in n for n in notes)


async def test_overlap_caps_judgments_per_battle(engine: Engine, db_path: Path) -> None:
    """demo-arena has overlap 5: a sixth annotator is never shown a battle judged 5 times."""
    from annotate.services.voting import VotingSession

    judged = set()
    for name in ("o1", "o2", "o3", "o4", "o5"):
        s = VotingSession(engine, "demo-arena", name)
        for _ in range(3):
            cur = s.current()
            assert cur is not None
            judged.add(cur.item_id)
            s.vote("tie", 3000)
    counts = dict(rows(db_path, "SELECT item_id, count(*) FROM current_vote GROUP BY item_id"))
    full = {i for i, c in counts.items() if c >= 5}
    app = make_app(engine=engine, annotator="o6", study="demo-arena")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, BattleScreen)
        assert str(screen.query_one(".count").content) == f"0 / {96 - len(full)}"
        for _ in range(5):
            assert screen.shown is not None
            assert screen.shown.item_id not in full  # type: ignore[union-attr]
            await press(pilot, "t")


async def test_arena_summary_counts_display_keys(engine: Engine, db_path: Path) -> None:
    from annotate.services.voting import VotingSession

    s = VotingSession(engine, "demo-arena", "sam")
    while s.progress().total - s.progress().done > 2:
        s.vote("a", 3000)
    app = make_app(engine=engine, annotator="sam", study="demo-arena")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await press(pilot, "b", "x")
        assert isinstance(app.screen, SummaryScreen)
        text = str(app.screen.query_one("#summary").content)
        assert "94  A better" in text
        assert "1  B better" in text
        assert "1  both bad" in text


async def test_palette_lists_study_actions_and_opens_studies(engine: Engine) -> None:
    app = make_app(engine=engine, annotator="pal", study="demo-arena")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("A better", "B better", "Tie", "Both bad", "Studies", "Help: keys"):
            assert title in titles
        assert "Undo" not in titles  # nothing to undo yet
        await press(pilot, "a")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Undo" not in titles  # demo-arena reveals the models: votes are final
        assert "A better" in titles
        await press(pilot, "ctrl+p")
        await pilot.press(*"Open study demo-difficulty")
        await pilot.pause()
        await press(pilot, "enter")
        assert isinstance(app.screen, InstructionsScreen)  # a study not yet voted in
        await start(pilot)
        assert isinstance(app.screen, PairScreen)


async def test_keys_toml_remaps_votes(engine: Engine, db_path: Path) -> None:
    config = Path(os.environ["ANNOTATE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "keys.toml").write_text('vote-a = "f"\nundo = ["backspace", "z"]\n')
    app = make_app(engine=engine, annotator="kay", study="demo-arena")
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await press(pilot, "a")  # no longer bound
        assert votes(db_path) == []
        await press(pilot, "f", "z")  # z is undo now: refused (the models were revealed)
    assert [c for _, _, c, *_ in votes(db_path)] == ["model_a"] or [
        c for _, _, c, *_ in votes(db_path)
    ] == ["model_b"]
    assert any("final once the model names are revealed" in n for n in notes)


async def test_bad_keys_toml_is_reported_and_defaults_apply(engine: Engine, db_path: Path) -> None:
    config = Path(os.environ["ANNOTATE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "keys.toml").write_text('vote-a = "f"\nvote-zz = "q"\n')
    app = make_app(engine=engine, annotator="kay", study="demo-arena")
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await press(pilot, "a")
    assert any("keys.toml:2" in n and "vote-zz" in n for n in notes)
    assert len(votes(db_path)) == 1
