"""The monitor's incremental refresh (issue 13) and the adaptive stopping status in the
monitor and the report (issue 16 item 3).

A :class:`StudyMonitor` reads only the vote rows added since its last refresh and drops
the rows they supersede (a change of mind, an undo), and starts each am-ELO fit from the
previous refresh's solution. After every round of random new votes, undos and changes of
mind its snapshot must equal the snapshot of a monitor opened cold on the same database
(timings aside), on both back ends: every status, flag reason, count, name and sentence
exactly, and the fitted numbers to the fit's own tolerance (see :func:`_assert_same`).
The reference is the cold load, which reads every row of the ``current_vote`` view
through the same statistics and fits from m-ELO.

The stopping status shown is :func:`annotate.services.adaptive.stopping_status`, the
schedule's own rule: the monitor's note and the report's JSON are checked against it
called directly, and ``reached`` flips when the target is set above the widest interval.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session

from annotate.services.adaptive import stopping_status
from annotate.services.arrays import vote_arrays
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.monitoring import StudyMonitor, stopping_line
from annotate.services.report import human_alignment_report
from annotate.services.report_files import write_report
from annotate.services.voting import VotingSession
from annotate.store import repo
from annotate.views import MonitorSnapshot
from ranking.pairwise import am_elo
from tests.annotate.test_monitoring_service import BOTH, HONEST, vote_arena

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    """A fresh database holding the demo studies: a SQLite file, or a PostgreSQL database
    for the tests marked :data:`BOTH`."""
    if getattr(request, "param", "sqlite") == "postgres":
        return open_store(str(request.getfixturevalue("pg_url")), seed_demo=True)
    return open_store(tmp_path / "v.db", seed_demo=True)


def _set(engine: Engine, study: str, key: str, value: object) -> None:
    """Change one stored setting of ``study``."""
    with engine.begin() as con:
        (raw,) = con.execute(
            text("SELECT settings_json FROM study WHERE name = :n"), {"n": study}
        ).one()
        con.execute(
            text("UPDATE study SET settings_json = :j WHERE name = :n"),
            {"j": json.dumps({**json.loads(raw), key: value}), "n": study},
        )


def _allow_undo(engine: Engine, study: str) -> None:
    """Undo is refused once model names are revealed (issue 9); these tests undo."""
    _set(engine, study, "reveal_models", False)


def _cold(engine: Engine, study: str) -> MonitorSnapshot:
    return StudyMonitor(engine, study).snapshot()


FIT_TOL = am_elo.__kwdefaults__["tol"]
"""The Newton-decrement tolerance of every am-ELO fit behind the monitor (1e-10)."""
WARM_SE = 2.0 * math.sqrt(FIT_TOL)
"""How far, in standard errors, a warm-started estimate may lie from a cold one. A fit
stops once the Newton decrement ``g' H^-1 g`` is at most ``FIT_TOL``; for the quadratic
model of the log-likelihood, ``|x_i - x*_i| <= sqrt(g' H^-1 g) * sqrt((H^-1)_ii)``, so
each estimate is within ``sqrt(FIT_TOL)`` standard errors of the optimum whatever the
start (the final step only brings it closer), and two fits within twice that. The same
bound holds, in absolute terms, for the p-values and shares derived from them (a normal
p-value moves by at most 0.4 per standard error)."""


def _near(x: float | None, y: float | None, scale: float, what: str) -> None:
    if x is None or y is None:
        assert x is y, what
        return
    assert abs(x - y) <= WARM_SE * scale + 1e-9 * max(1.0, abs(y)), (what, x, y, scale)


def _assert_same(live: MonitorSnapshot, cold: MonitorSnapshot, where: str) -> None:
    """``live`` (warm-started) equals ``cold``: every field exactly except the fitted
    numbers, which agree to :data:`WARM_SE` standard errors (the interval's half-width
    over 1.96 is an upper bound on the standard error of the ratings and abilities; the
    bias-aware intervals are only wider)."""
    exact = {f.name for f in dataclasses.fields(MonitorSnapshot)} - {
        "timings",
        "annotators",
        "leaderboard",
    }
    for name in exact:
        assert getattr(live, name) == getattr(cold, name), (where, name)
    assert len(live.leaderboard) == len(cold.leaderboard), where
    for x, y in zip(live.leaderboard, cold.leaderboard, strict=True):
        assert dataclasses.replace(x, rating=0.0, lower=0.0, upper=0.0) == dataclasses.replace(
            y, rating=0.0, lower=0.0, upper=0.0
        ), where
        se = (y.upper - y.lower) / (2 * 1.96)
        for f in ("rating", "lower", "upper"):
            _near(getattr(x, f), getattr(y, f), se, f"{where} {y.name} {f}")
    fitted = ("theta", "theta_lower", "theta_upper", "ability", "ability_lower", "ability_upper")
    assert len(live.annotators) == len(cold.annotators), where
    for u, v in zip(live.annotators, cold.annotators, strict=True):
        blank = {f: None for f in fitted}
        assert dataclasses.replace(u, **blank, flags=()) == dataclasses.replace(
            v, **blank, flags=()
        ), (where, v.annotator)
        for prefix in ("theta", "ability"):
            lo, hi = getattr(v, f"{prefix}_lower"), getattr(v, f"{prefix}_upper")
            se = 0.0 if lo is None else (hi - lo) / (2 * 1.96)
            for f in (prefix, f"{prefix}_lower", f"{prefix}_upper"):
                _near(getattr(u, f), getattr(v, f), se, f"{where} {v.annotator} {f}")
        assert [f.reason for f in u.flags] == [f.reason for f in v.flags], where
        for fu, fv in zip(u.flags, v.flags, strict=True):
            for f in ("statistic", "threshold", "p_value"):
                _near(getattr(fu, f), getattr(fv, f), 1.0, f"{where} {v.annotator} {f}")


@BOTH
def test_incremental_refreshes_equal_a_cold_load(engine: Engine) -> None:
    """Eight rounds of random votes, undos and changes of mind, each followed by one
    incremental refresh: every refreshed snapshot equals a cold one."""
    _allow_undo(engine, "demo-arena")
    for i, name in enumerate(HONEST[:2]):
        vote_arena(engine, name, seed=i, limit=12)
    mon = StudyMonitor(engine, "demo-arena")
    mon.snapshot()
    rng = np.random.default_rng(13)
    people = [*HONEST, "eve", "fay"]
    styles = ["honest", "contrarian", "random", "left"]
    undos = changes = 0
    for round_ in range(8):
        for _ in range(3):
            who = people[int(rng.integers(len(people)))]
            action = rng.choice(["vote", "undo", "change"], p=[0.5, 0.25, 0.25])
            session = VotingSession(engine, "demo-arena", who)
            if action == "vote":
                vote_arena(
                    engine,
                    who,
                    seed=int(rng.integers(1 << 30)),
                    style=styles[int(rng.integers(len(styles)))],
                    limit=int(rng.integers(1, 6)),
                )
            elif action == "undo":
                undos += session.undo()
            elif session.undo() and session.current() is not None:
                session.vote(str(rng.choice(["a", "b", "tie"])), 4000)  # the changed vote
                changes += 1
        assert mon.changed() or round_ > 0
        live = mon.snapshot()
        fresh = _cold(engine, "demo-arena")
        _assert_same(live, fresh, f"round {round_}")
        assert live.n_votes == len(vote_arrays(engine, "demo-arena"))
        assert not mon.changed()
    assert undos > 0
    assert changes > 0


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_a_refresh_starts_from_the_previous_fit(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One more vote by an annotator already counted: the refresh's Stable Arena fit starts
    from the previous snapshot's (``init``) and needs fewer am-ELO iterations than the
    cold fit of the same votes, which it equals to the fit's tolerance."""
    import ranking.components as components

    seen: list[tuple[bool, int]] = []
    real = components.stable_arena

    def spy(*args: Any, **kwargs: Any) -> Any:
        res = real(*args, **kwargs)
        seen.append((kwargs.get("init") is not None, res.fit.iterations))
        return res

    monkeypatch.setattr(components, "stable_arena", spy)
    for i, name in enumerate(HONEST):
        vote_arena(engine, name, seed=i, limit=30)
    mon = StudyMonitor(engine, "demo-arena")
    mon.snapshot()
    assert vote_arena(engine, HONEST[0], seed=99, limit=1) == 1
    live = mon.snapshot()
    cold = _cold(engine, "demo-arena")
    (warm_init, warm_it), (cold_init, cold_it) = seen[-2:]
    assert warm_init
    assert not cold_init
    assert warm_it < cold_it
    _assert_same(live, cold, "one more vote")


def _adaptive_copy(tmp_path: Path, engine: Engine, kind: str, target: float) -> str:
    """The demo study of ``kind`` as ``ad-<kind>`` with the adaptive schedule (a target
    reached from the start leaves nothing to vote on: the tests raise it after voting)."""
    name = f"ad-{kind}"
    folder = tmp_path / name
    shutil.copytree(ROOT / "question_pairs/demo" / kind, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    toml = toml.replace(f'name = "demo-{kind}"', f'name = "{name}"')
    toml = toml.replace(
        "[settings]\n", f'[settings]\nschedule = "adaptive"\ntarget_width = {target}\n'
    )
    (folder / "study.toml").write_text(toml, encoding="utf-8")
    import_paths(engine, [folder])
    return name


def _expected(engine: Engine, study: str) -> tuple[object, str]:
    with Session(engine) as s:
        st = repo.get_study(s, study)
        assert st is not None
        status = stopping_status(s, st)
    return status, stopping_line(status, st.kind)


@pytest.mark.parametrize("target", [50.0, 1e6], ids=["not-reached", "reached"])
def test_monitor_shows_the_stopping_status(
    engine: Engine,
    tmp_path: Path,
    target: float,
) -> None:
    study = _adaptive_copy(tmp_path, engine, "arena", 50.0)
    for i, name in enumerate(HONEST[:3]):
        vote_arena(engine, name, seed=i, limit=15, study=study)
    _set(engine, study, "target_width", target)
    status, line = _expected(engine, study)
    assert status.reached is (target > 1000)  # type: ignore[attr-defined]
    snap = StudyMonitor(engine, study).snapshot()
    assert snap.notes[0] == line
    verdict = "reached:" if target > 1000 else "not reached:"
    assert f"target_width {target:g} Elo points {verdict}" in line
    # a standard-schedule study shows no such note
    plain = StudyMonitor(engine, "demo-arena").snapshot()
    assert not any(n.startswith("Adaptive schedule") for n in plain.notes)


def test_report_shows_the_stopping_status(engine: Engine, tmp_path: Path) -> None:
    study = _adaptive_copy(tmp_path, engine, "difficulty", 50.0)
    for k, name in enumerate(("ada", "bob")):
        session = VotingSession(engine, study, name)
        n = 0
        while session.current() is not None and n < 12:
            session.vote(("left", "right")[(k + n) % 2], 20_000)
            n += 1
    _set(engine, study, "target_width", 1e6)
    status, line = _expected(engine, study)
    rep = human_alignment_report(engine, study, n_boot=20)
    doc = rep.as_dict()
    assert doc["adaptive"] == {**dataclasses.asdict(status), "line": line}  # type: ignore[call-overload]
    assert doc["adaptive"]["reached"] is True
    written = write_report(rep, tmp_path / "out", plots=False)
    md = (written.folder / "report.md").read_text(encoding="utf-8")
    assert line.replace("_", "\\_") in md
    # the standard schedule: null in the JSON, nothing in report.md
    for name in ("ada", "bob"):
        session = VotingSession(engine, "demo-difficulty", name)
        for _ in range(6):
            if session.current() is None:
                break
            session.vote("left", 20_000)
    plain = human_alignment_report(engine, "demo-difficulty", n_boot=20)
    assert plain.as_dict()["adaptive"] is None


def test_arena_report(engine: Engine, tmp_path: Path) -> None:
    """`annotate report` on an arena study: the monitor's leaderboard and verdicts, and
    each model's both-bad share with the Wilson interval of scipy's ``binomtest``
    (an independent implementation), counted here from the stored votes."""
    from scipy.stats import binomtest

    from annotate.services.report import arena_report, write_arena_report

    for i, name in enumerate(HONEST):
        vote_arena(engine, name, seed=i, limit=40)
    session = VotingSession(engine, "demo-arena", "eve")
    rng = np.random.default_rng(5)
    while session.current() is not None:
        session.vote(str(rng.choice(["a", "b", "both_bad", "both_bad"])), 9000)
    rep = arena_report(engine, "demo-arena")
    snap = StudyMonitor(engine, "demo-arena").snapshot()
    assert rep.leaderboard == snap.leaderboard
    assert rep.verdicts == snap.annotators
    assert {v.annotator for v in rep.verdicts} == {*HONEST, "eve"}
    # both bad by hand: the decided current votes on each model's battles
    with Session(engine) as s:
        st = repo.get_study(s, "demo-arena")
        assert st is not None
        pairs = repo.battle_pairs(s, st.id)
        rows = s.execute(
            text("SELECT item_id, choice FROM current_vote WHERE study_id = :s"), {"s": st.id}
        ).all()
    for m in rep.leaderboard:
        mine = [c for item, c in rows if m.name in pairs[item][:2] and c != "skip"]
        k = sum(c == "both_bad" for c in mine)
        assert m.both_bad is not None
        ci = binomtest(k, len(mine)).proportion_ci(0.95, method="wilson")
        assert m.both_bad == pytest.approx((k / len(mine), ci.low, ci.high), abs=1e-12)
        assert m.both_bad[0] > 0
    doc = rep.as_dict()
    assert doc["kind"] == "arena"
    assert [row["model"] for row in doc["leaderboard"]] == [m.name for m in rep.leaderboard]
    eve = next(a for a in doc["verdicts"]["annotators"] if a["annotator"] == "eve")
    assert eve["both_bad_rate"] == pytest.approx(
        next(v.both_bad_rate for v in snap.annotators if v.annotator == "eve")
    )
    written = write_arena_report(rep, tmp_path / "arena")
    assert [f.name for f in written.files] == ["report.md", "leaderboard.csv", "annotators.csv"]
    md = (written.folder / "report.md").read_text(encoding="utf-8")
    assert "### Leaderboard" in md
    assert "### Annotator reliability: status and flags" in md
    top = rep.leaderboard[0]
    assert f"| 1 | {top.name} | {top.rating:.0f} |" in md
    csv_lines = (written.folder / "leaderboard.csv").read_text(encoding="utf-8").splitlines()
    assert csv_lines[1].startswith(f"1,{top.name},,{top.rating!r},")
    assert rep.adaptive is None


def test_report_command_on_an_arena_study(
    engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`annotate report --study ARENA` prints the leaderboard and writes report.md (it
    used to stop with "needs a difficulty study"); --json prints the arena document."""
    from annotate.cli import main

    for i, name in enumerate(HONEST):
        vote_arena(engine, name, seed=i, limit=30)
    db = str(engine.url.database)
    out = tmp_path / "rep"
    code = main(["report", "--db", db, "--study", "demo-arena", "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert printed.out.startswith("Arena report: ")
    assert "Leaderboard" in printed.out
    assert "both bad %" in printed.out
    assert (out / "report.md").is_file()
    code = main(["report", "--db", db, "--study", "demo-arena", "--out", str(out), "--json"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    doc = json.loads(printed.out)
    assert doc["kind"] == "arena"
    assert len(doc["leaderboard"]) == 4
    assert doc["files"][0].endswith("report.md")


@pytest.mark.serial
async def test_monitor_screen_shows_the_stopping_status(engine: Engine, tmp_path: Path) -> None:
    """Pilot: the monitor app on an adaptive study shows the stopping sentence first among
    its notes (the screen is unchanged: the sentence is one of the snapshot's notes)."""
    from textual.widgets import Static

    from annotate.monitor_app import make_monitor_app
    from annotate.screens.monitor import MonitorScreen

    study = _adaptive_copy(tmp_path, engine, "arena", 50.0)
    for i, name in enumerate(HONEST[:3]):
        vote_arena(engine, name, seed=i, limit=15, study=study)
    _, line = _expected(engine, study)
    app = make_monitor_app(engine, study, keymap={})
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(500):
            screen = app.screen
            if isinstance(screen, MonitorScreen) and screen.snapshot is not None:
                break
            await pilot.pause(0.02)
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        assert screen.snapshot is not None
        assert screen.snapshot.notes[0] == line
        text = str(screen.query_one("#notes", Static).render())
        assert text.startswith("Adaptive schedule: target_width 50 Elo points not reached")
