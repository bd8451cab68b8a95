"""End to end: the installed ``annotate`` command in a real terminal (tmux).

A new user types a name, picks the difficulty demo, votes, undoes, goes back,
does the arena demo (whose votes are final once the models are revealed: undo is
refused), quits; ``annotate export`` then holds exactly those votes.
The screen is read with ``tmux capture-pane``, polled with a timeout.
"""

from __future__ import annotations

import csv
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.annotate.conftest import ANNOTATE, LITERAL_STUDIES, Tmux, needs_tmux, progress

pytestmark = [pytest.mark.serial, needs_tmux()]


@pytest.fixture
def sessions() -> Iterator[list[Tmux]]:
    made: list[Tmux] = []
    yield made
    for t in made:
        t.close()


def test_new_user_does_both_demos_then_exports(tmp_path: Path, sessions: list[Tmux]) -> None:
    # the default database (in ANNOTATE_DATA_DIR): its first launch loads the demo studies
    db = Path(os.environ["ANNOTATE_DATA_DIR"]) / "votes.db"
    t = Tmux("e2e", [str(ANNOTATE)], paint_log=tmp_path / "paint.log")
    sessions.append(t)
    t.wait_for("Your name")
    t.type("Ada")
    t.send("Enter")
    t.wait_for("Hello Ada! Choose a study")
    t.wait_for(r"demo-difficulty .* 0 / 40 done")
    t.send("Down", "Enter")
    t.wait_for("Press Enter to start")  # the study's instructions
    t.send("Enter")
    t.wait_for("Which subjects can you judge")
    t.send("Enter")
    t.wait_for(progress(0, 40))
    t.wait_painted(1)  # keys act once the item is painted
    for k, key in enumerate("120", start=1):
        t.vote(key)
        t.wait_for(progress(k, 40))
    t.vote("u")
    t.wait_for(progress(2, 40))
    t.vote("1")
    t.wait_for(progress(3, 40))
    t.send("Escape")
    t.wait_for(r"demo-difficulty .* 3 / 40 done")
    painted = len(t.paints())
    t.send("Up", "Enter")
    t.wait_for("Press Enter to start")
    t.send("Enter")
    t.wait_for(progress(0, 96))
    t.wait_painted(painted + 1)
    screen = t.screen()
    assert "Prompt" in screen
    for k, key in enumerate("abtx", start=1):
        t.vote(key)
        t.wait_for(progress(k, 96))
    t.wait_for("Your last vote: A was")
    t.send("u")  # refused: the model names were revealed
    t.wait_for("Votes in this study are final")
    assert "4 / 96" in t.screen()  # nothing was withdrawn
    t.send("q")
    t.wait_exit()

    out = tmp_path / "export"
    done = subprocess.run(
        [str(ANNOTATE), "export", "--db", str(db), "--out", str(out), "--format", "csv"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "wrote 7 current votes" in done.stdout
    with (out / "votes.csv").open(newline="", encoding="utf-8") as f:
        current = list(csv.DictReader(f))
    assert {r["annotator"] for r in current} == {"ada"}  # names are stored normalised
    by_study: dict[str, list[str]] = {}
    for r in current:
        by_study.setdefault(r["study"], []).append(r["choice"])
    assert sorted(by_study) == ["demo-arena", "demo-difficulty"]
    assert len(by_study["demo-difficulty"]) == 3
    assert set(by_study["demo-difficulty"]) <= {"first", "second", "skip"}
    assert len(by_study["demo-arena"]) == 4
    assert {"tie"} <= set(by_study["demo-arena"]) <= {"model_a", "model_b", "tie", "both_bad"}
    assert all(r["response_ms"] for r in current)
    with (out / "vote_log.csv").open(newline="", encoding="utf-8") as f:
        log = list(csv.DictReader(f))
    assert [r["choice"] for r in log].count("retract") == 1  # the arena undo was refused
    assert "skip" in [r["choice"] for r in log]  # the undone vote stays in the history
    assert len(log) == (3 + 1 + 1) + 4  # votes, undo, re-vote; votes


def test_literal_text_in_a_real_terminal(tmp_path: Path, sessions: list[Tmux]) -> None:
    db = tmp_path / "lit.db"
    subprocess.run(
        [str(ANNOTATE), "import", "--db", str(db), *map(str, LITERAL_STUDIES)],
        check=True,
        capture_output=True,
    )
    t = Tmux(
        "lit",
        [str(ANNOTATE), "--db", str(db), "--annotator", "l", "--study", "literal-text"],
        paint_log=tmp_path / "paint.log",
    )
    sessions.append(t)
    for k in range(3):
        t.wait_painted(k + 1)
        screen = t.wait_for(progress(k, 3) + r"[\s\S]*1st harder")
        lines = screen.splitlines()
        assert lines[0].lstrip().startswith("Literal text [bold red]check[/]")  # nothing moved
        assert "1st harder" in lines[-1]  # the footer is still at the bottom
        assert len(lines) <= 32
        raw = t.screen(escapes=True)
        assert "\x1b]8;" not in raw  # no hyperlink reached the terminal
        assert "pwned" not in t.tmux("display-message", "-p", "-t", "lit", "#{pane_title}")
        if k == 0:
            assert "Emoji: family" in screen or "Right to left" in screen or "Rich markup" in screen
        t.vote("0", then_paint=False)
    joined = t.wait_for("Finished")
    assert "Literal text [bold red]check[/]" in joined
    t.send("q")
    t.wait_exit()


def test_markup_study_text_is_shown_as_typed(tmp_path: Path, sessions: list[Tmux]) -> None:
    db = tmp_path / "lit2.db"
    subprocess.run(
        [str(ANNOTATE), "import", "--db", str(db), *map(str, LITERAL_STUDIES)],
        check=True,
        capture_output=True,
    )
    t = Tmux(
        "lit2",
        [str(ANNOTATE), "--db", str(db), "--annotator", "m", "--study", "literal-text"],
        size=(160, 50),
        paint_log=tmp_path / "paint.log",
    )
    sessions.append(t)
    seen = ""
    for k in range(3):
        t.wait_painted(k + 1)
        seen += t.wait_for(progress(k, 3))
        t.vote("0", then_paint=False)
    assert "[bold red]boom[/]" in seen
    assert "␛[31mred␛[0m" in seen
    assert "[@click=app.quit]x[/]" in seen
    assert "⟨U+202E⟩gnp.exe⟨U+202C⟩" in seen
    t.wait_for("Finished")
