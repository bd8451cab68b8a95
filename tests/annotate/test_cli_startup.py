"""The command line's shape and start-up: both entry points, light imports, progress bars.

- every command's ``--help`` is the same through the console script and ``python -m
  annotate`` (under ``-m`` the analysis commands once went missing: "invalid choice");
- ``annotate --help`` and ``annotate studies`` import none of the heavy libraries
  (behaviour, not timing: ``benchmarks/bench_cli.py`` times them);
- long commands draw a progress bar on stderr when it is a terminal, and nothing else
  changes: stdout stays exactly the table or the JSON document.
"""

from __future__ import annotations

import json
import os
import pty
import select
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from annotate.cli import build_parser, main

ANNOTATE = Path(sys.executable).parent / "annotate"
ENTRY_POINTS = {"script": [str(ANNOTATE)], "module": [sys.executable, "-m", "annotate"]}
COMMANDS = [
    (),
    ("app",),
    ("studies",),
    ("import",),
    ("export",),
    ("rank",),
    ("rate",),
    ("monitor",),
    ("simulate",),
    ("compare",),
    ("report",),
    ("analyze",),
    ("plan",),
    ("serve",),
    ("annotators",),
]
HEAVY = ("numpy", "scipy", "pandas", "textual", "sqlalchemy", "sqlmodel", "ranking", "matplotlib")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "ANNOTATE_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "100"}


def test_the_parser_lists_every_command() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert list(sub.choices) == [c[0] for c in COMMANDS if c]  # type: ignore[union-attr]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "annotate")
def test_help_is_the_same_through_both_entry_points(tmp_path: Path, command: tuple[str]) -> None:
    outs = {}
    for how, argv in ENTRY_POINTS.items():
        res = subprocess.run(
            [*argv, *command, "--help"],
            capture_output=True,
            text=True,
            env=_env(tmp_path),
            timeout=120,
        )
        assert res.returncode == 0, f"{how}: {res.stderr}"
        assert res.stderr == ""
        outs[how] = res.stdout
    assert outs["script"] == outs["module"]
    assert outs["script"].startswith(f"usage: annotate {' '.join(command)}".rstrip())


def test_python_m_annotate_runs_the_analysis_commands(tmp_path: Path) -> None:
    """The bug class of issue 11: ``python -m annotate rate`` said "invalid choice"."""
    csv = Path(__file__).resolve().parent.parent / "data" / "formats" / "arena_battles.csv"
    res = subprocess.run(
        [*ENTRY_POINTS["module"], "rate", str(csv), "--method", "m-elo", "--boot", "0", "--json"],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["models"]


def _modules_after(tmp_path: Path, *argv: str) -> tuple[set[str], str]:
    """Run ``main(argv)`` in a fresh interpreter; the modules it imported, and its stdout."""
    report = tmp_path / "modules.txt"
    code = (
        "import sys\n"
        "from annotate.cli import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"open({str(report)!r}, 'w').write('\\n'.join(sys.modules))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
        check=True,
    )
    return set(report.read_text().split()), res.stdout


def _heavy(mods: set[str]) -> list[str]:
    return [h for h in HEAVY if h in mods]


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("studies", "--help"), ("rank", "--help"), ("report", "--help"), ("--version",)],
)
def test_help_imports_no_heavy_library(tmp_path: Path, argv: tuple[str, ...]) -> None:
    mods, out = _modules_after(tmp_path, *argv)
    assert out.startswith(("usage: annotate", "annotate "))
    assert _heavy(mods) == []


def test_studies_imports_no_heavy_library(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    assert main(["import", "--db", str(db), "--demo", "--json"]) == 0
    for argv in (["studies", "--db", str(db)], ["studies", "--db", str(db), "--json"]):
        mods, out = _modules_after(tmp_path, *argv)
        assert "demo-arena" in out
        assert _heavy(mods) == [], argv


def test_studies_on_the_default_database_imports_no_heavy_library(tmp_path: Path) -> None:
    from annotate.services.db import open_store

    (tmp_path / "data").mkdir()
    open_store(tmp_path / "data" / "votes.db").dispose()  # the default one, up to date
    mods, out = _modules_after(tmp_path, "studies")
    assert "no studies" in out
    assert _heavy(mods) == []


def test_quick_listing_equals_the_full_store(tmp_path: Path, capsys) -> None:
    """The read-only sqlite3 path gives what the store gives, votes and annotators included."""
    from annotate.services.catalog import studies
    from annotate.services.db import open_store
    from annotate.services.voting import VotingSession
    from annotate.store.quick import list_studies

    db = tmp_path / "v.db"
    engine = open_store(db, seed_demo=True)
    for name in ("ann", "bob"):
        session = VotingSession(engine, "demo-difficulty", name)
        for _ in range(3):
            session.vote("left", response_ms=4000)
    full = [r.as_dict() for r in studies(engine)]
    assert any(r["votes"] == 6 and r["annotators"] == 2 for r in full)
    quick = list_studies(db)
    assert quick is not None
    assert [r.as_dict() for r in quick] == full
    assert main(["studies", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == full


_TWO_PASS_LISTING = """
    SELECT s.name, s.kind, s.title,
           (SELECT count(*) FROM item i WHERE i.study_id = s.id),
           (SELECT count(*) FROM current_vote v WHERE v.study_id = s.id),
           (SELECT count(DISTINCT v.annotator_id) FROM current_vote v WHERE v.study_id = s.id)
    FROM study s ORDER BY s.name
"""
"""The listing's SQL before it read the current votes once (one subquery per count): the
reference the one-pass query must equal."""


def test_listing_counts_only_current_votes(tmp_path: Path) -> None:
    """Changes of mind, undos and an annotator whose only vote was undone: the listing
    (both paths) counts each annotator's current votes once, as the ``current_vote`` view
    holds them and as the query with one subquery per count did; a study without a vote
    shows 0 and 0."""
    import sqlite3
    from dataclasses import astuple

    from annotate.services.catalog import studies
    from annotate.services.db import open_store
    from annotate.services.voting import VotingSession
    from annotate.store.quick import list_studies

    db = tmp_path / "v.db"
    engine = open_store(db, seed_demo=True)
    ann = VotingSession(engine, "demo-difficulty", "ann")
    for _ in range(4):
        ann.vote("left", response_ms=4000)
    assert ann.undo()  # 3 current
    first = ann.history()[-1]
    assert ann.revise(first.item_id, "right") is not None  # a change of mind: still 3
    bob = VotingSession(engine, "demo-difficulty", "bob")
    bob.vote("right", response_ms=4000)
    assert bob.undo()  # bob has no current vote
    cy = VotingSession(engine, "demo-arena", "cy")
    cy.vote("a", response_ms=4000)
    full = {r.as_dict()["name"]: r.as_dict() for r in studies(engine)}
    assert (full["demo-difficulty"]["votes"], full["demo-difficulty"]["annotators"]) == (3, 1)
    assert (full["demo-arena"]["votes"], full["demo-arena"]["annotators"]) == (1, 1)
    engine.dispose()
    con = sqlite3.connect(db)
    try:
        reference = con.execute(_TWO_PASS_LISTING).fetchall()
        view = con.execute(
            "SELECT s.name, count(v.id), count(DISTINCT v.annotator_id) FROM study s "
            "LEFT JOIN current_vote v ON v.study_id = s.id GROUP BY s.name ORDER BY s.name"
        ).fetchall()
        rows = con.execute("SELECT count(*) FROM vote").fetchone()[0]
        con.execute(
            "INSERT INTO study (name, kind, title, description, fingerprint, "
            "settings_json, created_at) SELECT 'empty', kind, title, description, "
            "'x', settings_json, created_at FROM study LIMIT 1"
        )
        con.commit()
        empty = con.execute(_TWO_PASS_LISTING).fetchall()
    finally:
        con.close()
    assert rows == 9  # 4 + undo, change of mind; bob's vote and undo; cy's vote
    quick = list_studies(db)
    assert quick is not None
    assert [astuple(r) for r in quick] == empty  # the new study: 0 and 0
    assert [(r[0], r[4], r[5]) for r in reference] == view


def test_quick_listing_leaves_every_unusual_database_to_the_store(tmp_path: Path, capsys) -> None:
    """Missing, not SQLite, newer schema: the quick path says None and the store decides."""
    from annotate.services.db import open_store
    from annotate.store.quick import list_studies

    assert list_studies(tmp_path / "missing.db") is None
    assert list_studies(tmp_path) is None
    csv = tmp_path / "v.csv"
    csv.write_text("a,b\n1,2\n")
    assert list_studies(csv) is None
    newer = tmp_path / "newer.db"
    open_store(newer).dispose()
    with sqlite3.connect(newer) as con:
        con.execute("INSERT INTO _migrations VALUES ('999_future', datetime('now'))")
    assert list_studies(newer) is None
    assert main(["studies", "--db", str(newer)]) == 1
    err = capsys.readouterr().err
    assert "newer version of annotate" in err
    assert err.count("\n") == 1


def test_quick_knows_the_store_schema_and_method_names() -> None:
    """The names the light modules write out are the ones the heavy modules declare."""
    from annotate.cli.analysis import RANK_METHODS, RATE_METHODS
    from annotate.services.arena_analysis import METHODS as RATE
    from annotate.services.estimators import METHODS as RANK
    from annotate.store.migrations import MIGRATIONS
    from annotate.store.quick import MIGRATION_NAMES

    assert tuple(name for name, _ in MIGRATIONS) == MIGRATION_NAMES
    assert tuple(RANK) == RANK_METHODS
    assert tuple(RATE) == RATE_METHODS


# --- progress bars --------------------------------------------------------------


def _run_with_terminal_stderr(argv: list[str], env: dict[str, str]) -> tuple[int, str, bytes]:
    """Run ``argv`` with stderr on a pseudo-terminal and stdout on a pipe."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=slave, env={**env, "TERM": "xterm-256color"}
    )
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the pty closed (the process ended)
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    return proc.wait(timeout=300), out, seen


def _battle_file(path: Path, rows: int) -> Path:
    lines = ["model_a,model_b,winner,judge"]
    models = ["m1", "m2", "m3", "m4"]
    for i in range(rows):
        a, b = models[i % 4], models[(i + 1) % 4]
        lines.append(f"{a},{b},{'model_a' if i % 3 else 'tie'},j{i % 5}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_import_draws_a_progress_bar_on_a_terminal_and_keeps_stdout_clean(
    tmp_path: Path,
) -> None:
    battles = _battle_file(tmp_path / "arena.csv", 50)
    argv = [
        *ENTRY_POINTS["script"],
        "import",
        "--db",
        str(tmp_path / "v.db"),
        str(battles),
        "--format",
        "chatbot-arena",
        "--json",
    ]
    code, out, seen = _run_with_terminal_stderr(argv, _env(tmp_path))
    assert code == 0, seen.decode(errors="replace")
    assert json.loads(out)["votes_added"] == 50  # stdout: exactly the document
    assert b"importing" in seen  # the bar was drawn on the terminal
    # Not a terminal: no bar, stderr empty.
    res = subprocess.run(
        [*argv[:3], str(tmp_path / "w.db"), *argv[4:]],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    assert json.loads(res.stdout)["votes_added"] == 50


def test_report_draws_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    assert main(["import", "--db", str(db), "--demo", "--json"]) == 0
    argv = [
        *ENTRY_POINTS["module"],
        "report",
        "--db",
        str(db),
        "--study",
        "demo-difficulty",
        "--boot",
        "0",
        "--no-plots",
        "--out",
        str(tmp_path / "r"),
        "--json",
    ]
    code, out, seen = _run_with_terminal_stderr(argv, _env(tmp_path))
    assert code == 0, seen.decode(errors="replace")
    assert json.loads(out)["study"] == "demo-difficulty"
    assert b"computing the report" in seen


def test_services_report_their_progress(tmp_path: Path) -> None:
    """The hooks the bars use: ``progress(done, total)`` up to ``(total, total)``."""
    from annotate.services.db import open_store
    from annotate.services.importing import import_paths
    from annotate.services.report import human_alignment_report

    engine = open_store(tmp_path / "v.db", seed_demo=True)
    calls: list[tuple[int, int]] = []
    import_paths(
        engine,
        [_battle_file(tmp_path / "a.csv", 8), _battle_file(tmp_path / "b.csv", 4)],
        fmt="chatbot-arena",
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(1, 2), (2, 2)]
    calls.clear()
    human_alignment_report(
        engine,
        "demo-difficulty",
        n_boot=0,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert sorted(calls) == [(i, 7) for i in range(1, 8)]  # the load and six stages


def test_forced_terminal_check_yields_a_callback(monkeypatch: pytest.MonkeyPatch) -> None:
    from annotate.cli import output

    with output.progress_bar("x") as progress:
        assert progress is None  # pytest captures stderr: not a terminal
    monkeypatch.setattr(output, "_stderr_is_terminal", lambda: True)
    with output.progress_bar("x") as progress:
        assert progress is not None
        progress(1, 2)
        progress(2, 2)


def test_output_doctests() -> None:
    import doctest

    from annotate.cli import output

    result = doctest.testmod(output)
    assert result.attempted > 0
    assert result.failed == 0
