"""``annotate rank METHOD --study NAME``: the response matrix of a stored study ranks as
its file does; harness logs rank straight from their folder; tables say what they cut
(issue 12, "Real inputs")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotate.cli import main

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "question_pairs" / "demo" / "difficulty"
LM_EVAL = ROOT / "tests" / "data" / "formats" / "lm_eval"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "v.db"
    assert run(capsys, "import", "--db", str(path), str(DEMO))[0] == 0
    return path


@pytest.mark.parametrize("method", ["eip", "accuracy", "irt-1pl"])
def test_study_ranks_as_its_file(capsys, db: Path, method: str) -> None:
    code, by_study, err = run(
        capsys, "rank", method, "--db", str(db), "--study", "demo-difficulty", "--json"
    )
    assert code == 0, err
    code, by_file, err = run(capsys, "rank", method, str(DEMO / "responses.csv"), "--json")
    assert code == 0, err
    assert json.loads(by_study) == json.loads(by_file)
    # the text tables too
    _, text_study, _ = run(capsys, "rank", method, "--db", str(db), "--study", "demo-difficulty")
    _, text_file, _ = run(capsys, "rank", method, str(DEMO / "responses.csv"))
    assert text_study == text_file


def test_study_ranks_as_its_export(capsys, db: Path, tmp_path: Path) -> None:
    out = tmp_path / "exp"
    code, _, err = run(
        capsys, "export", "--db", str(db), "--study", "demo-difficulty", "--out", str(out)
    )
    assert code == 0, err
    exported = out / "studies" / "demo-difficulty" / "responses.csv"
    _, a, _ = run(capsys, "rank", "eip", str(exported), "--json")
    _, b, _ = run(capsys, "rank", "eip", "--db", str(db), "--study", "demo-difficulty", "--json")
    # the export lists the models by name: the same ranking to rounding
    ra, rb = json.loads(a), json.loads(b)
    assert [m["model"] for m in ra["models"]] == [m["model"] for m in rb["models"]]
    assert [m["score"] for m in ra["models"]] == pytest.approx([m["score"] for m in rb["models"]])
    # a study folder ranks from its responses.csv
    _, c, _ = run(capsys, "rank", "eip", str(exported.parent), "--json")
    assert json.loads(c) == json.loads(a)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--study", "nope"], "no study named 'nope'; known studies: demo-difficulty"),
        ([str(DEMO / "responses.csv"), "--study", "demo-difficulty"], "not both"),
        ([], "give a response MATRIX file or --study NAME"),
        (["--study", "demo-difficulty", "--top", "0"], "--top must be at least 1"),
    ],
)
def test_rank_errors_are_one_line(capsys, db: Path, argv: list[str], message: str) -> None:
    code, out, err = run(capsys, "rank", "eip", "--db", str(db), *argv)
    assert code != 0
    assert out == ""
    assert message in err
    assert err.count("\n") == 1


def test_an_arena_study_has_no_matrix(capsys, tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    assert run(capsys, "import", "--db", str(db), str(DEMO.parent / "arena"))[0] == 0
    code, _, err = run(capsys, "rank", "eip", "--db", str(db), "--study", "demo-arena")
    assert code == 1
    assert "is an arena study" in err
    assert "annotate rate --study demo-arena" in err


def test_a_stored_harness_study_ranks_as_its_folder(capsys, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    code, out, err = run(capsys, "import", "--db", str(db), str(LM_EVAL), "--study", "harness")
    assert code == 0, err
    # the import summary says which metric and filter it used, per task
    assert "arc_easy: metric 'acc', filter 'none'" in out
    assert "gsm8k: metric 'exact_match', filter 'strict-match'" in out
    _, stored, _ = run(capsys, "rank", "accuracy", "--db", str(db), "--study", "harness", "--json")
    code, folder, err = run(capsys, "rank", "accuracy", str(LM_EVAL), "--json")
    assert code == 0, err
    a, b = json.loads(stored), json.loads(folder)
    assert a["models"] == b["models"]
    assert sorted(map(str, a["questions"])) == sorted(map(str, b["questions"]))
    assert any("gsm8k: metric 'exact_match', filter 'strict-match'" in n for n in b["notes"])


def test_a_harness_log_ranks_with_the_chosen_filter(capsys) -> None:
    code, out, err = run(capsys, "rank", "accuracy", str(LM_EVAL / "org__model-small"), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [m["model"] for m in doc["models"]] == ["org__model-small"]
    assert len(doc["questions"]) == 6


def test_a_folder_without_a_matrix_says_what_to_do(capsys, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "rank", "eip", str(tmp_path / "empty"))
    assert code == 1
    assert "no responses.csv and no lm-evaluation-harness samples_*.jsonl" in err
    assert "annotate import FOLDER, then annotate rank METHOD --study NAME" in err
    assert "is a folder (" not in err


def test_rank_errors_name_the_model(capsys) -> None:
    code, _, err = run(capsys, "rank", "eip", str(LM_EVAL))
    assert code == 1
    assert "model 'org__model-large' fails none" in err
    assert "model 0" not in err


def test_the_tables_say_how_many_rows_they_leave_out(capsys) -> None:
    code, out, _ = run(capsys, "rank", "eip", str(DEMO / "responses.csv"), "--top", "5")
    assert code == 0
    assert "... 7 more row(s); show them with --top 12 or --json" in out
    assert "... 43 more row(s); show them with --top 48 or --json" in out
    _, everything, _ = run(capsys, "rank", "eip", str(DEMO / "responses.csv"), "--top", "48")
    assert "more row(s)" not in everything
    assert everything.count("\n") > out.count("\n")
