"""``annotate rank reasonerrank`` and ``annotate compare`` through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotate.cli import main

DEMO = Path(__file__).resolve().parent.parent.parent / "question_pairs" / "demo"
OUTPUTS = DEMO / "reasoning" / "outputs.jsonl"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_rank_reasonerrank_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rank", "reasonerrank", str(OUTPUTS), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["k"] == 6
    assert len(doc["subsets"]) == 3
    first = doc["models"][0]
    assert set(first) >= {"model", "score", "initial_rank", "rank", "penalty", "consistency"}
    assert [m["rank"] for m in doc["models"]] == list(range(1, 13))


def test_rank_reasonerrank_table_out_and_compare(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(
        capsys, "rank", "reasonerrank", str(OUTPUTS), "--k", "4", "--out", str(tmp_path)
    )
    assert code == 0
    assert "K = 4" in out
    assert "a random ranking" in out
    models_csv = tmp_path / "reasonerrank_models.csv"
    assert models_csv.is_file()
    assert (tmp_path / "reasonerrank_subsets.csv").is_file()
    code, out, _ = run(capsys, "rank", "reasonerrank", str(OUTPUTS), "--method", "mca", "--json")
    (tmp_path / "mca.json").write_text(out, encoding="utf-8")
    code, out, _ = run(capsys, "compare", str(models_csv), str(tmp_path / "mca.json"), "--json")
    assert code == 0
    doc = json.loads(out)
    (pair,) = doc["pairs"]
    assert set(pair) >= {"a", "b", "kendall", "spearman", "rbo", "rbo_weighted", "sp_at_k"}
    assert doc["random_expectation"]["rbo"] == pytest.approx(13 / 24)
    code, out, _ = run(
        capsys, "compare", str(models_csv), "--reference", str(tmp_path / "mca.json")
    )
    assert code == 0
    assert "(random ranking)" in out


def test_reasonerrank_options_refused_elsewhere(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "rank", "eip", str(OUTPUTS), "--k", "3")
    assert code == 1
    assert "apply to 'annotate rank reasonerrank' only" in err
    code, _, err = run(capsys, "rank", "reasonerrank", str(OUTPUTS), "--method", "mca", "--k", "3")
    assert code == 1
    assert "--k applies to --method reasonerrank" in err


def test_rank_reasonerrank_study(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    assert main(["import", "--db", str(db), "--demo", "--json"]) == 0
    capsys.readouterr()
    code, out, _ = run(
        capsys, "rank", "reasonerrank", "--study", "demo-arena", "--db", str(db), "--json"
    )
    assert code == 0
    doc = json.loads(out)
    assert len(doc["models"]) == 4
    assert doc["evaluation"] is None
    assert len(doc["subsets"]) == 8  # the demo prompts' categories
    code, out, _ = run(
        capsys,
        "rank",
        "reasonerrank",
        "--study",
        "demo-arena",
        "--db",
        str(db),
        "--one-subset",
        "--json",
    )
    assert code == 0
    assert [s["subset"] for s in json.loads(out)["subsets"]] == ["demo-arena"]
    code, _, err = run(
        capsys, "rank", "reasonerrank", "--study", "demo-difficulty", "--db", str(db)
    )
    assert code == 1
    assert "needs an arena study" in err
    code, _, err = run(capsys, "rank", "reasonerrank", str(OUTPUTS), "--one-subset")
    assert code == 1
    assert "--one-subset applies to --study" in err


def test_cli_method_lists_match_the_service() -> None:
    from annotate.cli.reasoning import REASONING_METHODS
    from annotate.services.reasoning import METHODS

    assert REASONING_METHODS == METHODS


def test_bad_outputs_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": "q", "subset": "s", "model": 3, "text": "x"}\n', "utf-8")
    code, out, err = run(capsys, "rank", "reasonerrank", str(bad))
    assert code == 1
    assert out == ""
    assert f"{bad}:1: field 'model'" in err
    assert err.count("\n") == 1
