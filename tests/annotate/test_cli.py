"""The command line: studies, import, export; --json documents; errors on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from annotate.cli import main

DATA = Path(__file__).resolve().parent.parent / "data"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_studies_on_a_new_database_does_not_load_the_demo(tmp_path: Path, capsys) -> None:
    code, out, _ = run(capsys, "studies", "--db", str(tmp_path / "v.db"), "--json")
    assert code == 0
    assert json.loads(out) == []
    code, out, _ = run(capsys, "studies", "--db", str(tmp_path / "v.db"))
    assert "annotate import --demo" in out


def test_import_demo_then_studies_lists_the_demo(tmp_path: Path, capsys) -> None:
    code, out, err = run(capsys, "import", "--db", str(tmp_path / "v.db"), "--demo")
    assert code == 0, err
    assert "created study demo-arena" in out
    code, out, _ = run(capsys, "studies", "--db", str(tmp_path / "v.db"), "--json")
    assert code == 0
    rows = json.loads(out)
    by_name = {r["name"]: r for r in rows}
    assert {"demo-difficulty", "demo-arena"} <= set(by_name)
    for r in rows:
        assert set(r) >= {"name", "kind", "items", "votes", "annotators"}
        assert r["kind"] in ("difficulty", "arena")
    assert by_name["demo-difficulty"]["items"] >= 30
    assert by_name["demo-arena"]["items"] >= 12


def test_import_export_import_cycle(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "v.db")
    code, out, _ = run(
        capsys,
        "import",
        "--db",
        db,
        str(DATA / "formats" / "llmfao_sample.csv"),
        "--study",
        "fao",
        "--json",
    )
    assert code == 0
    assert json.loads(out)["votes_added"] == 3
    code, out, _ = run(
        capsys,
        "export",
        "--db",
        db,
        "--format",
        "jsonl",
        "--study",
        "fao",
        "--out",
        str(tmp_path / "x"),
        "--json",
    )
    assert code == 0
    votes = [json.loads(line) for line in (tmp_path / "x" / "votes.jsonl").read_text().splitlines()]
    assert len(votes) == 3
    for v in votes:
        assert {
            "vote_id",
            "study",
            "annotator",
            "item_id",
            "choice",
            "response_ms",
            "created_at",
            "left",
        } <= set(v)
        assert v["choice"] in ("model_a", "model_b", "tie", "both_bad")
    db2 = str(tmp_path / "w.db")
    code, out, _ = run(capsys, "import", "--db", db2, str(tmp_path / "x"), "--json")
    assert code == 0
    assert json.loads(out)["votes_added"] == 3
    code, out, _ = run(capsys, "import", "--db", db2, str(tmp_path / "x" / "votes.jsonl"), "--json")
    assert json.loads(out)["votes_skipped"] == 3


def test_bad_file_prints_one_line_to_stderr_and_exits_non_zero(tmp_path: Path, capsys) -> None:
    code, out, err = run(
        capsys, "import", "--db", str(tmp_path / "v.db"), str(DATA / "bad" / "pair-across-subjects")
    )
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert "pairs.csv:4: field 'second': pair across subjects" in err


def test_unknown_study_on_export(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "export", "--db", str(tmp_path / "v.db"), "--study", "nope")
    assert code == 1
    assert "no study named 'nope'" in err


@pytest.mark.parametrize(
    "cmd",
    [[], ["studies"], ["import"], ["export"], ["app"], ["rate"], ["rank"], ["report"]],
)
def test_every_command_has_help_and_db(cmd: list[str]) -> None:
    """Under ``python -m annotate`` too: the analysis commands are registered there."""
    res = subprocess.run(
        [sys.executable, "-m", "annotate", *cmd, "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--db" in res.stdout


def test_import_without_paths_or_demo_is_one_line(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "import", "--db", str(tmp_path / "v.db"))
    assert code == 1
    assert err.count("\n") == 1
    assert "--demo" in err


def _cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "annotate", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "ANNOTATE_DATA_DIR": str(cwd / "data"), **(env or {})},
        timeout=300,
    )


@pytest.mark.parametrize("reader", ["head -c 1 > /dev/null", "true"])
def test_a_closed_pipe_ends_quietly(tmp_path: Path, reader: str) -> None:
    """``annotate report | head``: no BrokenPipeError, no traceback.

    ``true`` exits before the command writes anything, so the write always meets a
    closed pipe; ``head -c 1`` closes it after the first byte.
    """
    db = tmp_path / "v.db"
    assert main(["import", "--db", str(db), "--demo", "--json"]) == 0
    report = ["report", "--db", str(db), "--boot", "0", "--no-plots", "--out", "r"]
    for args in (
        ["studies", "--db", str(db)],
        ["rank", "simple", str(DATA / "formats" / "llmfao_sample.csv")],
        [*report, "--study", "demo-difficulty"],
        [*report, "--study", "demo-difficulty", "--json"],
    ):
        cmd = " ".join(f"'{a}'" for a in [sys.executable, "-m", "annotate", *args])
        res = subprocess.run(
            ["sh", "-c", f"{cmd} | {reader}"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )
        assert "Traceback" not in res.stderr
        assert "BrokenPipe" not in res.stderr
        assert "Exception ignored" not in res.stderr


def test_corrupt_database_is_one_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database at all" * 200)
    before = bad.read_bytes()
    for cmd in (["studies"], ["export", "--out", str(tmp_path / "x")], ["rate", "--study", "s"]):
        code, _, err = run(capsys, *cmd, "--db", str(bad))
        assert code == 1, err
        assert err.count("\n") == 1, err
        assert "Traceback" not in err
        assert str(bad) in err or "database" in err
    assert bad.read_bytes() == before


def test_db_pointing_at_a_folder_is_one_line(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "studies", "--db", str(tmp_path))
    assert code == 1
    assert err.count("\n") == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_database_is_one_line(tmp_path: Path, capsys) -> None:
    db = tmp_path / "ro" / "v.db"
    db.parent.mkdir()
    assert main(["import", "--db", str(db), "--demo", "--json"]) == 0
    capsys.readouterr()
    for p in db.parent.iterdir():
        p.chmod(0o444)
    db.parent.chmod(0o555)
    try:
        code, _, err = run(
            capsys,
            "import",
            "--db",
            str(db),
            str(DATA / "formats" / "llmfao_sample.csv"),
            "--study",
            "fao",
        )
        assert code == 1
        assert err.count("\n") == 1
    finally:
        db.parent.chmod(0o755)


def test_unexpected_errors_are_one_line_and_debug_shows_the_traceback(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import annotate.cli.app
    from annotate.cli.output import EXIT_INTERNAL

    def boom(args: object) -> int:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(annotate.cli.app, "cmd_studies", boom)
    code, _, err = run(capsys, "studies", "--db", str(tmp_path / "v.db"))
    assert code == EXIT_INTERNAL
    assert err.count("\n") == 1
    assert "ANNOTATE_DEBUG=1" in err
    monkeypatch.setenv("ANNOTATE_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["studies", "--db", str(tmp_path / "v.db")])


@pytest.mark.parametrize(
    ("exc", "needle"),
    [
        (PermissionError(13, "Permission denied", "/x/y"), "Permission denied: /x/y"),
        (IsADirectoryError(21, "Is a directory", "/x"), "Is a directory: /x"),
        (OSError(28, "No space left on device"), "No space left on device"),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "cannot read"),
        (KeyboardInterrupt(), "interrupted"),
    ],
)
def test_expected_failures_are_one_line(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, exc: BaseException, needle: str
) -> None:
    import annotate.cli.app

    def fail(args: object) -> int:
        raise exc

    monkeypatch.setattr(annotate.cli.app, "cmd_studies", fail)
    code, _, err = run(capsys, "studies", "--db", str(tmp_path / "v.db"))
    assert code == (130 if isinstance(exc, KeyboardInterrupt) else 1)
    assert err.count("\n") == 1
    assert needle in err


def test_database_errors_name_the_problem() -> None:
    import sqlite3

    from sqlalchemy.exc import OperationalError

    from annotate.cli.output import describe_error

    locked = OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked"))
    msg, code = describe_error(locked, Path("v.db"))
    assert code == 1
    assert "busy" in msg
    assert "v.db" in msg
    assert "\n" not in msg
    ro = sqlite3.OperationalError("attempt to write a readonly database")
    assert "read-only" in describe_error(ro, Path("v.db"))[0]
    bad = sqlite3.DatabaseError("file is not a database")
    assert "not a usable annotate database" in describe_error(bad, None)[0]
