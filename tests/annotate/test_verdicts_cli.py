"""Issue 10 on the command line: annotator verdicts, small pilots, JSON under every outcome.

The votes go through :class:`VotingSession` (the annotation screens' code path), so the
stored ``swapped`` and ``fast`` flags are the ones a real study has.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.cli import main
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.monitoring import monitor_snapshot
from annotate.services.voting import VotingSession
from annotate.store import repo

STRENGTH = {"Aurora-13B": 1.5, "Drift-70B": 0.7, "Basalt-2": 0.0, "Cinder-Lite": -1.0}


def _reject_constant(name: str) -> Any:
    raise AssertionError(f"invalid JSON constant {name}")


def run_json(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    got = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert got == code, err
    if code:
        assert out == ""
        return err
    return json.loads(out, parse_constant=_reject_constant)


def vote_arena(engine: Engine, name: str, *, seed: int, style: str = "honest") -> None:
    """``honest`` (Bradley-Terry, no ties), ``against`` (always the weaker model),
    ``left`` (always the response shown first) or ``tie``."""
    rng = np.random.default_rng(seed)
    session = VotingSession(engine, "demo-arena", name)
    with Session(engine) as s:
        st = repo.get_study(s, "demo-arena")
        assert st is not None
        pairs = repo.battle_pairs(s, st.id)
    while (shown := session.current()) is not None:
        ma, mb, _ = pairs[shown.item_id]
        d = STRENGTH[ma] - STRENGTH[mb]
        a_wins = bool(rng.random() < 1.0 / (1.0 + math.exp(-1.5 * d)))
        if style == "against":
            a_wins = d < 0
        key = "a" if a_wins != shown.swapped else "b"
        key = {"left": "a", "tie": "tie"}.get(style, key)
        session.vote(key, 300_000)


@pytest.fixture
def arena(engine: Engine) -> Engine:
    for i, name in enumerate(("ada", "bob", "cyd", "dee")):
        vote_arena(engine, name, seed=i)
    return engine


def _rate(capsys: pytest.CaptureFixture[str], db: Path, *extra: str) -> dict[str, Any]:
    doc = run_json(capsys, "rate", "--db", str(db), "--study", "demo-arena", *extra)
    return {a["annotator"]: a for a in doc["annotators"]} | {"_doc": doc}


def test_pure_against_voter_is_flagged(capsys, arena: Engine, db_path: Path) -> None:
    vote_arena(arena, "eve", seed=9, style="against")
    rows = _rate(capsys, db_path, "--boot", "40")
    eve = rows["eve"]
    assert eve["status"] == "flagged"
    assert eve["votes_to_verdict"] is None
    reasons = {r["reason"]: r for r in eve["reasons"]}
    assert "adversarial" in reasons
    adv = reasons["adversarial"]
    assert set(adv) == {"reason", "statistic", "threshold", "p_value"}
    assert adv["statistic"] < adv["threshold"]
    assert 0 <= adv["p_value"] <= 0.05
    for n in ("ada", "bob", "cyd", "dee"):
        assert rows[n]["status"] == "reliable"
        assert rows[n]["reasons"] == []
    settings = rows["_doc"]["settings"]
    assert settings["intervals"] == "bootstrap"
    assert settings["bootstrap_rounds"] == 40
    assert settings["interval_scale_bias"] is None


def test_wald_intervals_say_they_are_bias_aware(capsys, arena: Engine, db_path: Path) -> None:
    """``--boot 0``: Wald intervals widened for the estimated scale bias, which the JSON
    reports; each is at least the plain Wald interval around the same rating."""
    doc = _rate(capsys, db_path, "--boot", "0")["_doc"]
    settings = doc["settings"]
    assert settings["intervals"] == "wald"
    assert settings["bootstrap_rounds"] is None
    beta = settings["interval_scale_bias"]
    assert isinstance(beta, float)
    assert beta >= 0.0
    for m in doc["models"]:
        assert m["lower"] < m["rating"] < m["upper"]


def test_always_left_is_position_bias_everywhere(
    capsys, arena: Engine, db_path: Path, tmp_path: Path
) -> None:
    """12 of 12 on the left is enough: flagged position_bias with an adjusted p-value in
    rate --json and in the monitor row."""
    session = VotingSession(arena, "demo-arena", "lefty")
    for _ in range(12):
        session.vote("a", 300_000)
    rows = _rate(capsys, db_path, "--boot", "0")
    lefty = rows["lefty"]
    bias = [r for r in lefty["reasons"] if r["reason"] == "position_bias"]
    assert lefty["status"] == "flagged"
    assert bias
    assert bias[0]["statistic"] == 1.0
    assert bias[0]["threshold"] == 0.5
    assert 0 < bias[0]["p_value"] <= 0.05
    snap = monitor_snapshot(arena, "demo-arena")
    row = {a.annotator: a for a in snap.annotators}["lefty"]
    assert row.status == "flagged"
    assert any(f.reason == "position_bias" and f.p_value for f in row.flags)
    assert "position_bias p=" in row.verdict or "position_bias p<" in row.verdict
    text_code = main(["rate", "--db", str(db_path), "--study", "demo-arena", "--boot", "0"])
    out = capsys.readouterr().out
    assert text_code == 0
    assert "position_bias: 100% of decisive votes for the left side" in out


def test_fast_is_the_stored_flag_everywhere(capsys, engine: Engine, db_path: Path) -> None:
    """One definition: the monitor's Fast share equals the share of exported fast votes."""
    for name, ms in (("ada", 300_000), ("bob", 300_000), ("zip", 500)):
        session = VotingSession(engine, "demo-arena", name)
        for _ in range(20):
            session.vote("a" if name != "bob" else "b", ms)
    rows = {a.annotator: a for a in monitor_snapshot(engine, "demo-arena").annotators}
    assert rows["zip"].fast_share == 1.0
    assert rows["ada"].fast_share == 0.0
    doc = run_json(capsys, "rate", "--db", str(db_path), "--study", "demo-arena", "--boot", "0")
    fast = {a["annotator"]: a["fast_share"] for a in doc["annotators"]}
    assert fast == {"ada": 0.0, "bob": 0.0, "zip": 1.0}


# --- a 3 x 12 difficulty pilot --------------------------------------------------------


@pytest.fixture
def pilot(tmp_path: Path) -> tuple[Engine, Path]:
    folder = tmp_path / "pilot"
    folder.mkdir()
    (folder / "study.toml").write_text(
        'name = "pilot"\nkind = "difficulty"\ntitle = "Pilot"\n', encoding="utf-8"
    )
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(6):
            fh.write(json.dumps({"id": f"q{i}", "subject": "algebra", "text": f"Q{i}?"}) + "\n")
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)][:12]
    with (folder / "pairs.csv").open("w", encoding="utf-8") as fh:
        fh.write("pair_id,first,second\n")
        for n, (i, j) in enumerate(pairs):
            fh.write(f"p{n:02d},q{i},q{j}\n")
    db = tmp_path / "pilot.db"
    engine = open_store(db)
    import_paths(engine, [folder])
    rng = np.random.default_rng(3)
    for name in ("ann", "ben", "cat"):
        session = VotingSession(engine, "pilot", name)
        while (shown := session.current()) is not None:
            d = int(shown.left.key[1:]) - int(shown.right.key[1:])  # type: ignore[union-attr]
            harder = rng.random() < 1.0 / (1.0 + math.exp(-1.2 * d))
            session.vote("left" if harder else "right", 20_000)
    return engine, db


def test_pilot_gets_a_finite_human_scale_and_verdicts(
    capsys, pilot: tuple[Engine, Path], tmp_path: Path
) -> None:
    engine, db = pilot
    doc = run_json(
        capsys, "report", "--db", str(db), "--study", "pilot", "--no-plots",
        "--boot", "50", "--out", str(tmp_path / "rep"),
    )  # fmt: skip
    hs = doc["human_scale"]
    assert hs["fitted"] is True
    diffs = [q["difficulty"] for q in hs["questions"]]
    assert all(d is not None and math.isfinite(d) for d in diffs)
    widths = [q["upper"] - q["lower"] for q in hs["questions"]]
    assert min(widths) > 100  # wide: a dozen pairs say little
    statuses = {v["annotator"]: v["status"] for v in doc["verdicts"]["annotators"]}
    assert set(statuses) == {"ann", "ben", "cat"}
    assert set(statuses.values()) <= {"pending", "reliable", "flagged"}
    snap = monitor_snapshot(engine, "pilot")
    assert snap.problem is None
    assert len(snap.leaderboard) == 6
    assert all(a.ability is not None for a in snap.annotators)
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "Annotator reliability: status and flags" in md
    assert "Benjamini-Hochberg" in md
    assert "fitted with weak priors" in md


def test_report_md_has_position_bias_column(
    capsys, pilot: tuple[Engine, Path], tmp_path: Path
) -> None:
    engine, db = pilot
    session = VotingSession(engine, "pilot", "lefty")
    while session.current() is not None:
        session.vote("left", 20_000)
    code = main(
        ["report", "--db", str(db), "--study", "pilot", "--no-plots", "--boot", "50",
         "--out", str(tmp_path / "rep")]
    )  # fmt: skip
    capsys.readouterr()
    assert code == 0
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    section = md.split("Annotator reliability: status and flags", 1)[1]
    line = next(ln for ln in section.splitlines() if ln.startswith("| lefty |"))
    assert "flagged" in line
    assert "1 / 0.0" in line or "1 / <0.001" in line  # position_bias statistic / adjusted p


# --- valid JSON under every outcome ----------------------------------------------------


def _assert_valid(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    if code == 0:
        json.loads(out, parse_constant=_reject_constant)
    else:
        assert out == "", f"{argv}: exit {code} with partial output"
        assert code == 1, err  # a failure the message explains, never a crash
        assert err.count("\n") == 1
        for bad in ("use elo()", "max_iter", "ability_prior_sd", "nan"):
            assert bad not in err.lower(), err


@pytest.mark.parametrize("state", ["empty", "one", "ties"])
def test_every_json_command_is_valid(
    capsys, engine: Engine, db_path: Path, tmp_path: Path, state: str
) -> None:
    if state == "one":
        vote_arena(engine, "solo", seed=1)
        s = VotingSession(engine, "demo-difficulty", "solo")
        for _ in range(10):
            s.vote("left", 20_000)
    elif state == "ties":
        for name in ("t1", "t2", "t3"):
            vote_arena(engine, name, seed=1, style="tie")
            s = VotingSession(engine, "demo-difficulty", name)
            for _ in range(10):
                s.vote("skip", 20_000)
    db = str(db_path)
    commands = [
        ["studies", "--db", db],
        ["rate", "--db", db, "--study", "demo-arena", "--boot", "20"],
        ["rate", "--db", db, "--study", "demo-arena", "--boot", "0"],  # bias-aware Wald
        ["rate", "--db", db, "--study", "demo-arena", "--method", "m-elo"],
        ["rank", "simple", "--db", db, "--study", "demo-difficulty"],
        ["rank", "eip", "--db", db, "--study", "demo-arena"],  # no response matrix: an error
        ["rate", "--db", db, "--study", "demo-arena", "--method", "elo", "--boot", "20"],
        ["report", "--db", db, "--study", "demo-difficulty", "--no-plots", "--boot", "20",
         "--out", str(tmp_path / f"r-{state}")],
        ["export", "--db", db, "--out", str(tmp_path / f"x-{state}")],
        ["import", "--db", db, str(tmp_path / "nothing-here")],
    ]  # fmt: skip
    for argv in commands:
        _assert_valid(capsys, argv)


def test_rank_json_is_valid_with_item_standard_errors(capsys, tmp_path: Path) -> None:
    f = tmp_path / "m.csv"
    rows = ["question_id,m1,m2,m3,m4"]
    rows += ["q1,1,1,1,1", "q2,0,0,0,0", "q3,1,0,1,0", "q4,1,1,0,0", "q5,0,1,1,0"]
    f.write_text("\n".join(rows) + "\n", encoding="utf-8")
    for method in ("irt-1pl", "irt-2pl", "irt-1pl-mml", "eip", "accuracy"):
        code = main(["rank", method, str(f), "--json"])
        out, _ = capsys.readouterr()
        if code:
            continue
        doc = json.loads(out, parse_constant=_reject_constant)
        if method.startswith("irt"):
            assert "se_status" in doc
            assert all({"difficulty_se", "discrimination_se"} <= set(q) for q in doc["questions"])


def _vote_some(engine: Engine, name: str, n: int, seed: int) -> None:
    """``n`` honest votes (Bradley-Terry, no ties) by ``name``."""
    rng = np.random.default_rng(seed)
    session = VotingSession(engine, "demo-arena", name)
    with Session(engine) as s:
        st = repo.get_study(s, "demo-arena")
        assert st is not None
        pairs = repo.battle_pairs(s, st.id)
    for _ in range(n):
        shown = session.current()
        assert shown is not None
        ma, mb, _ = pairs[shown.item_id]
        d = STRENGTH[ma] - STRENGTH[mb]
        a_wins = bool(rng.random() < 1.0 / (1.0 + math.exp(-1.5 * d)))
        session.vote("a" if a_wins != shown.swapped else "b", 300_000)


@pytest.mark.parametrize("method", ["am-elo", "m-elo"])
def test_rate_reports_rank_classes(capsys, engine: Engine, db_path: Path, method: str) -> None:
    """rate --json gives each model its rank class (rank..lowest_rank); the text table shows
    it as a range where the two differ (a few votes cannot separate every pair)."""
    for i, name in enumerate(("ada", "bob", "cyd")):
        _vote_some(engine, name, 8, seed=i)
    argv = ["rate", "--db", str(db_path), "--study", "demo-arena", "--method", method]
    doc = run_json(capsys, *argv, "--boot", "0")
    models = doc["models"]
    n = len(models)
    assert n == 4
    for m in models:
        assert isinstance(m["lowest_rank"], int)
        assert 1 <= m["rank"] <= m["lowest_rank"] <= n
    assert any(m["rank"] < m["lowest_rank"] for m in models)
    code = main([*argv, "--boot", "0"])
    out = capsys.readouterr().out
    assert code == 0
    rows = [line.split()[:2] for line in out.splitlines() if line.strip()]
    for m in models:
        lo, hi = m["rank"], m["lowest_rank"]
        shown = str(lo) if lo == hi else f"{lo}-{hi}"
        assert [shown, m["model"]] in rows, (shown, m["model"], out)
