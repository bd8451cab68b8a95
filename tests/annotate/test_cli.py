"""The command line: studies, import, export; --json documents; errors on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from annotate.__main__ import main

DATA = Path(__file__).resolve().parent.parent / "data"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_studies_json_on_a_new_database_lists_the_demo(tmp_path: Path, capsys) -> None:
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


@pytest.mark.parametrize("cmd", [[], ["studies"], ["import"], ["export"], ["app"]])
def test_every_command_has_help_and_db(cmd: list[str]) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "annotate", *cmd, "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--db" in res.stdout
