"""Trust boundaries of the voting screens (issue 9): keys, undo after a reveal, names, long texts.

- Votes on items never seen: a key acts only on the item whose paint is confirmed;
  keys read before it are dropped, and a double tap casts one vote.
- Blindness after the reveal: once the model names are shown, undo is refused by
  the service and greyed out (and explained) on the voting and summary screens.
- Escape-sequence injection: model names in the reveal and every notification are
  sanitised.
- A 3 MB question: shown up to a bound, with a marker; the vote lands on the item.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from textual import events
from textual.widgets import Label
from textual.worker import WorkerFailed

from annotate.app import make_app
from annotate.errors import AnnotateError
from annotate.screens import key_gate
from annotate.screens.battle import BattleScreen
from annotate.screens.key_gate import PAINT_LOG_ENV, REPEAT_DEBOUNCE_S, KeyGate
from annotate.screens.pair import PairScreen
from annotate.screens.summary import SummaryScreen
from annotate.services.importing import import_paths
from annotate.services.voting import UNDO_REFUSED_AFTER_REVEAL, VotingSession
from annotate.widgets.literal import MAX_SHOWN_CHARS
from annotate.widgets.panes import QuestionCard
from tests.annotate.conftest import (
    record_notifications,
    record_titled_notifications,
    rows,
    settle,
    start,
    votes,
)

SIZE = (100, 32)
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 (except tab and newline) and C1 controls: none may reach the terminal."""
OSC52_NAME = "gpt\x1b]52;c;ZWNobyBoaQ==\x07"
"""A model name that would write ``echo hi`` to the clipboard."""
OSC0_NAME = "claude\x1b]0;pwned\x07\x9b2J"
"""A model name that would set the terminal title and clear the screen (8-bit CSI)."""


# --- helpers -----------------------------------------------------------------------


def escape_arena(root: Path, battles: int = 3) -> Path:
    """An arena study that reveals model names, both names full of escape sequences."""
    d = root / "esc-arena"
    d.mkdir(parents=True)
    (d / "study.toml").write_text(
        'name = "esc-arena"\nkind = "arena"\ntitle = "Escapes\\u001b]0;title\\u0007"\n\n'
        "[settings]\noverlap = 0\nreveal_models = true\n",
        encoding="utf-8",
    )
    prompts = [{"id": f"p{i}", "category": "c", "text": f"prompt {i}"} for i in range(battles)]
    (d / "prompts.jsonl").write_text("\n".join(map(json.dumps, prompts)) + "\n", encoding="utf-8")
    responses = [
        {"prompt_id": f"p{i}", "model": m, "text": f"answer {i}"}
        for i in range(battles)
        for m in (OSC52_NAME, OSC0_NAME)
    ]
    (d / "responses.jsonl").write_text(
        "\n".join(map(json.dumps, responses)) + "\n", encoding="utf-8"
    )
    with (d / "battles.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["battle_id", "prompt_id", "model_a", "model_b"])
        for i in range(battles):
            w.writerow([f"b{i}", f"p{i}", OSC52_NAME, OSC0_NAME])
    return d


def big_question_study(root: Path, size: int) -> Path:
    """A difficulty study whose first pair holds a question of ``size`` characters."""
    d = root / "big"
    d.mkdir(parents=True)
    (d / "study.toml").write_text('name = "big"\nkind = "difficulty"\ntitle = "Big"\n')
    text = ("lorem ipsum dolor sit amet consectetur " * (size // 39 + 1))[:size]
    questions = [
        {"id": "q1", "subject": "s", "text": text},
        {"id": "q2", "subject": "s", "text": "short"},
        {"id": "q3", "subject": "s", "text": "also short"},
    ]
    (d / "questions.jsonl").write_text("\n".join(map(json.dumps, questions)) + "\n")
    (d / "pairs.csv").write_text("pair_id,first,second\np1,q1,q2\np2,q3,q2\n")
    return d


@pytest.fixture
def paint_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test-only paint log, switched on for apps made after this fixture."""
    path = tmp_path / "paint.log"
    monkeypatch.setenv(PAINT_LOG_ENV, str(path))
    return path


def paints(path: Path) -> list[tuple[int, int, int]]:
    """``(item id, monotonic ns, wall ns)`` per confirmed paint."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        item, mono, wall = line.split("\t")
        out.append((int(item), int(mono), int(wall)))
    return out


def wall_ns(created_at: str) -> int:
    """A stored ``created_at`` (UTC, naive) as UNIX nanoseconds."""
    dt = datetime.fromisoformat(created_at).replace(tzinfo=UTC)
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


def votes_not_painted_first(db_path: Path, log: Path) -> list[tuple[Any, ...]]:
    """Votes whose item was not the last item painted before the vote was committed."""
    painted = paints(log)
    bad = []
    for vote_id, item_id, created_at in rows(
        db_path, "SELECT id, item_id, created_at FROM vote WHERE choice != 'retract' ORDER BY id"
    ):
        committed = wall_ns(created_at)
        before = [item for item, _, wall in painted if wall <= committed]
        if not before or before[-1] != item_id:
            bad.append((vote_id, item_id, created_at, before[-3:]))
    return bad


def type_at_once(app: Any, keys: str) -> None:
    """Queue ``keys`` as key events all at once (Pilot's ``press`` waits for idle between keys)."""
    for key in keys:
        app.post_message(events.Key(key, key))


async def drain(pilot: Any) -> None:
    """Let running workers finish and queued messages run (without waiting for a paint)."""
    with contextlib.suppress(WorkerFailed):
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def notifications_of(app: Any) -> Iterator[str]:
    """The text of every notification the app holds (message and title)."""
    for note in app._notifications:
        yield f"{note.title}\n{note.message}"


# --- the gate on its own --------------------------------------------------------------


def test_key_gate_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(key_gate, "clock", lambda: now[0])
    gate = KeyGate()
    assert not gate.admit("left", 100.0)  # nothing shown yet
    g = gate.item_shown()
    assert not gate.admit("left", 100.5)  # shown, not painted
    now[0] = 101.0
    assert not gate.item_painted(g - 1, 7)  # an older generation changes nothing
    assert gate.item_painted(g, 7)
    assert not gate.item_painted(g, 7)  # confirmed once
    assert not gate.admit("left", 100.9)  # read before the paint, handled after it
    assert gate.admit("left", 101.2)
    gate.close()  # the vote is on its way
    assert not gate.admit("right", 101.25)
    g = gate.item_shown()
    now[0] = 101.3
    gate.item_painted(g, 8)
    assert not gate.admit("left", 101.2 + REPEAT_DEBOUNCE_S / 2)  # a double tap
    assert gate.admit("right", 101.2 + REPEAT_DEBOUNCE_S / 2)  # another key is a new vote
    gate.close()
    g = gate.item_shown()
    gate.item_painted(g, 9)
    assert gate.admit("right", 101.2 + REPEAT_DEBOUNCE_S * 2)  # a repeat after the debounce
    assert gate.painted_at == 101.3
    gate.close()
    assert math.isinf(gate.painted_at)


def test_paint_log_lines(tmp_path: Path) -> None:
    gate = KeyGate(tmp_path / "p.log")
    gate.item_painted(gate.item_shown(), 42)
    gate.item_painted(gate.item_shown(), 43)
    assert [item for item, _, _ in paints(tmp_path / "p.log")] == [42, 43]
    assert not (tmp_path / "none.log").exists()
    KeyGate().item_painted(1, 5)  # no log without a path: nothing written anywhere


# --- keys before the paint --------------------------------------------------------------


async def test_keys_before_the_paint_are_dropped(engine: Engine, db_path: Path) -> None:
    app = make_app(engine=engine, annotator="early", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, PairScreen)
        first = screen.shown
        assert first is not None
        confirmations: list[int] = []
        # the next item's paint is never confirmed while this stands in for _painted
        screen._painted = confirmations.append  # type: ignore[method-assign]
        await pilot.press("1")
        await drain(pilot)
        second = screen.shown
        assert second is not None
        assert second.item_id != first.item_id
        assert screen.busy
        for key in "2012":  # pressed while the second item is not confirmed painted
            await pilot.press(key)
            await drain(pilot)
        assert len(votes(db_path)) == 1
        assert screen.shown is second
        assert confirmations  # the confirmation was asked for (and withheld)
        del screen._painted  # the real confirmation again: the retry timer asks anew
        await settle(pilot)
        assert not screen.busy
        await pilot.press("2")
        await settle(pilot)
    got = rows(db_path, "SELECT item_id FROM vote ORDER BY id")
    assert [i for (i,) in got] == [first.item_id, second.item_id]


async def test_a_key_read_before_the_paint_is_dropped_when_handled_after_it(
    engine: Engine, db_path: Path
) -> None:
    app = make_app(engine=engine, annotator="stamp", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, PairScreen)
        early = events.Key("1", "1")
        early.time = screen.gate.painted_at - 0.001  # read while the frame was being drawn
        app.post_message(early)
        await drain(pilot)
        assert votes(db_path) == []
        app.post_message(events.Key("1", "1"))  # read now
        await settle(pilot)
    assert len(votes(db_path)) == 1


async def test_bursts_vote_only_on_painted_items(
    engine: Engine, db_path: Path, paint_log: Path
) -> None:
    app = make_app(engine=engine, annotator="burst", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        for burst in ("1212120101", "0210210210", "2121212121"):
            type_at_once(app, burst)  # faster than the screen can paint
            await settle(pilot)
    cast = votes(db_path)
    assert len(cast) == 3  # the first key of each burst; the others came before the paint
    assert votes_not_painted_first(db_path, paint_log) == []
    voted = {i for (i,) in rows(db_path, "SELECT item_id FROM vote")}
    assert voted <= {item for item, _, _ in paints(paint_log)}


# --- double taps ----------------------------------------------------------------------


async def test_a_double_tap_casts_one_vote(engine: Engine, db_path: Path) -> None:
    app = make_app(engine=engine, annotator="tap", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        type_at_once(app, "11")  # back to back
        await settle(pilot)
        assert len(votes(db_path)) == 1


async def test_a_repeat_within_the_debounce_is_ignored_after_the_paint(
    engine: Engine, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second tap arrives after the next item is painted: the debounce alone drops it."""
    monkeypatch.setattr(key_gate, "REPEAT_DEBOUNCE_S", 60.0)  # however slow the machine
    app = make_app(engine=engine, annotator="tap2", study="demo-difficulty")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, PairScreen)
        await pilot.press("1")
        await settle(pilot)
        assert not screen.busy  # the next item is painted
        painted = screen.shown
        await pilot.press("1")
        await settle(pilot)
        assert len(votes(db_path)) == 1
        assert screen.shown is painted
        await pilot.press("2")  # another key is a vote
        await settle(pilot)
        assert len(votes(db_path)) == 2


# --- undo after the reveal -------------------------------------------------------------


def test_the_service_refuses_undo_after_a_reveal(engine: Engine, db_path: Path) -> None:
    session = VotingSession(engine, "demo-arena", "rev")
    assert session.undo_refusal == UNDO_REFUSED_AFTER_REVEAL
    receipt = session.vote("a", 3000)
    assert receipt.revealed is not None
    assert not session.can_undo
    with pytest.raises(AnnotateError, match="final once the model names are revealed"):
        session.undo()
    again = VotingSession(engine, "demo-arena", "rev")  # a new session is no way around it
    with pytest.raises(AnnotateError):
        again.undo()
    assert [c for _, _, c, *_ in votes(db_path)] == [receipt.choice]
    difficulty = VotingSession(engine, "demo-difficulty", "rev")  # no reveal: undo works
    assert difficulty.undo_refusal is None
    difficulty.vote("left", 3000)
    assert difficulty.can_undo
    assert difficulty.undo()


async def test_undo_key_is_greyed_out_and_explained_after_the_reveal(
    engine: Engine, db_path: Path
) -> None:
    app = make_app(engine=engine, annotator="rev2", study="demo-arena")
    notes = record_titled_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, BattleScreen)
        await pilot.press("a")
        await settle(pilot)
        assert screen.query_one("#reveal", Label).display
        assert screen.check_action("undo", ()) is None  # greyed out
        assert "Undo" not in [c.title for c in app.get_system_commands(screen)]
        await pilot.press("u")
        await settle(pilot)
        assert isinstance(app.screen, BattleScreen)
    # exactly one word about undo, the refusal (no "withdrawn"); a --study Tip may come too
    assert [m for title, m in notes if title == "Undo"] == [UNDO_REFUSED_AFTER_REVEAL]
    assert {title for title, _ in notes} <= {"Undo", "Tip"}, notes
    assert len(votes(db_path)) == 1  # no retraction row


async def test_summary_refuses_undo_after_the_reveal(
    engine: Engine, db_path: Path, tmp_path: Path
) -> None:
    import_paths(engine, [escape_arena(tmp_path, battles=2)])
    session = VotingSession(engine, "esc-arena", "sum")
    session.vote("tie", 3000)
    app = make_app(engine=engine, annotator="sum", study="esc-arena")
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("b")
        await settle(pilot)
        summary = app.screen
        assert isinstance(summary, SummaryScreen)
        assert summary.check_action("undo", ()) is None
        await pilot.press("u")
        await settle(pilot)
        assert app.screen is summary
    assert UNDO_REFUSED_AFTER_REVEAL in notes
    assert "retract" not in [c for _, _, c, *_ in votes(db_path)]


# --- names with escape sequences ------------------------------------------------------


async def test_the_reveal_shows_model_names_sanitised(engine: Engine, tmp_path: Path) -> None:
    import_paths(engine, [escape_arena(tmp_path)])
    app = make_app(engine=engine, annotator="esc", study="esc-arena")
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, BattleScreen)
        await pilot.press("a")
        await settle(pilot)
        reveal = str(screen.query_one("#reveal", Label).content)
        assert reveal.startswith("Your last vote: A was ")
        assert "gpt␛]52;c;ZWNobyBoaQ==␇" in reveal
        assert "claude␛]0;pwned␇⟨U+009B⟩2J" in reveal
        assert not CONTROLS.search(reveal)
        await pilot.press("u")  # refused: a notification, sanitised too
        await settle(pilot)
        shown = list(notifications_of(app))
        title = str(screen.progress_bar.query_one(".title", Label).content)
        svg = app.export_screenshot()
    assert notes  # the refusal
    for text in [*notes, *shown, title, svg]:
        assert "\x1b" not in text
        assert not CONTROLS.search(text)
    assert title == "Escapes␛]0;title␇"


# --- a 3 MB question ------------------------------------------------------------------


async def test_a_3mb_question_is_shown_bounded_and_the_vote_lands(
    engine: Engine, db_path: Path, tmp_path: Path
) -> None:
    size = 3_000_000
    import_paths(engine, [big_question_study(tmp_path, size)])
    app = make_app(engine=engine, annotator="big", study="big")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, PairScreen)
        assert screen.painted_generation >= 1
        shown = screen.shown
        assert shown is not None
        bodies = [
            str(screen.query_one(card, QuestionCard).query_one(".body").content)
            for card in ("#first", "#second")
        ]
        big = max(bodies, key=len)
        assert len(big) <= MAX_SHOWN_CHARS + 100
        missing = size - MAX_SHOWN_CHARS
        assert big.endswith(f"[… {missing:,} more characters not shown: v shows the whole text]")
        assert min(bodies, key=len) == "short"
        await pilot.press("1")
        await settle(pilot)
    (item_key, choice), *_ = [
        (k, c) for _, k, c, *_ in votes(db_path, "big")
    ]  # the vote applies to the pair that held the 3 MB question
    assert item_key == "p1"
    assert choice in ("first", "second")
    assert shown.key == "p1"
