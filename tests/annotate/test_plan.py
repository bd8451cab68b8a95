"""``annotate plan pairs`` (issue 16 item 1): pairs from a response matrix or a stored study,
written as a pairs.csv that ``annotate import`` accepts."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from annotate.cli import main
from annotate.cli import plan as cli_plan

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "question_pairs" / "demo" / "difficulty"
LM_EVAL = ROOT / "tests" / "data" / "formats" / "lm_eval"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def subjects() -> dict[str, str]:
    lines = (DEMO / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return {q["id"]: q["subject"] for q in map(json.loads, lines)}


def test_cli_constants_match_the_library() -> None:
    from annotate.services.plan import DIFFICULTIES
    from ranking.design import STRATEGIES

    assert cli_plan.STRATEGIES == STRATEGIES
    assert cli_plan.DIFFICULTIES == DIFFICULTIES


@pytest.mark.parametrize("strategy", ["stratified", "disagreement", "uniform"])
def test_pairs_from_a_study_folder(capsys: pytest.CaptureFixture[str], strategy: str) -> None:
    code, out, err = run(
        capsys, "plan", "pairs", str(DEMO), "--n", "18", "--strategy", strategy, "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["chosen"] == 18
    subj = subjects()
    uses: dict[str, int] = {}
    side: dict[str, int] = {}
    for p in doc["pairs"]:
        assert subj[p["first"]] == subj[p["second"]] == p["subject"]
        for q, s in ((p["first"], 1), (p["second"], -1)):
            uses[q] = uses.get(q, 0) + 1
            side[q] = side.get(q, 0) + s
    assert max(uses.values()) <= 2
    assert max(map(abs, side.values())) <= 1
    if strategy != "uniform":
        assert doc["strata"] == {"large": 6, "medium": 6, "small": 6}
    if strategy == "disagreement":
        assert doc["estimators"] == ["eip", "irt-1pl", "simple"]
        assert all(p["disagreement"] is not None for p in doc["pairs"])


def test_the_seed_decides(capsys: pytest.CaptureFixture[str]) -> None:
    a = run(capsys, "plan", "pairs", str(DEMO), "--seed", "4", "--json")[1]
    b = run(capsys, "plan", "pairs", str(DEMO), "--seed", "4", "--json")[1]
    c = run(capsys, "plan", "pairs", str(DEMO), "--seed", "5", "--json")[1]
    assert a == b
    assert json.loads(a)["pairs"] != json.loads(c)["pairs"]


def test_written_pairs_import_as_a_study(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Round trip: the pairs.csv written imports, and the study holds exactly those pairs."""
    out = tmp_path / "pairs.csv"
    code, text, err = run(
        capsys, "plan", "pairs", str(DEMO / "responses.csv"), "--questions",
        str(DEMO / "questions.jsonl"), "--n", "20", "--max-per-question", "3", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    assert f"wrote {out}" in text
    with out.open(newline="", encoding="utf-8") as f:
        written = list(csv.reader(f))
    assert written[0] == ["pair_id", "first", "second"]
    assert len(written) == 21
    study = tmp_path / "planned"
    shutil.copytree(DEMO, study)
    shutil.copyfile(out, study / "pairs.csv")
    toml = (study / "study.toml").read_text(encoding="utf-8")
    (study / "study.toml").write_text(
        toml.replace('name = "demo-difficulty"', 'name = "planned"'), encoding="utf-8"
    )
    db = tmp_path / "v.db"
    code, _, err = run(capsys, "import", "--db", str(db), str(study))
    assert code == 0, err
    exp = tmp_path / "exp"
    code, _, err = run(capsys, "export", "--db", str(db), "--study", "planned", "--out", str(exp))
    assert code == 0, err
    with (exp / "items.csv").open(newline="", encoding="utf-8") as f:
        items = {(r["item_id"], r["first"], r["second"]) for r in csv.DictReader(f)}
    assert items == {tuple(r) for r in written[1:]}


def test_pairs_from_a_stored_study_match_its_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    assert run(capsys, "import", "--db", str(db), str(DEMO))[0] == 0
    code, by_study, err = run(
        capsys, "plan", "pairs", "--db", str(db), "--study", "demo-difficulty", "--json"
    )
    assert code == 0, err
    _, by_folder, _ = run(capsys, "plan", "pairs", str(DEMO), "--json")
    assert json.loads(by_study)["pairs"] == json.loads(by_folder)["pairs"]


def test_harness_logs_pair_within_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "plan", "pairs", str(LM_EVAL), "--n", "4", "--difficulty", "accuracy", "--json"
    )
    if code != 0:
        assert "nothing to pair" in err  # too few questions per task in the sample logs
        return
    doc = json.loads(out)
    for p in doc["pairs"]:
        assert p["first"].rsplit("/", 1)[0] == p["second"].rsplit("/", 1)[0] == p["subject"]


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "pairs", str(DEMO), "--n", "6", "--difficulty", "accuracy")
    assert code == 0, err
    assert out.startswith("6 pair(s) of 48 questions (stratified, seed 0")
    assert "gap: 1 - mean score over models" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--n", "0"), "--n must be at least 1"),
        (("--max-per-question", "0"), "--max-per-question must be at least 1"),
        (("--study", "x"), "not both"),
    ],
)
def test_bad_options_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    code, out, err = run(capsys, "plan", "pairs", str(DEMO), *argv)
    assert code == 1
    assert out == ""
    assert message in err
    assert err.count("\n") == 1


def test_no_matrix_and_an_existing_out_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "plan", "pairs")
    assert code == 1
    assert "give a response MATRIX" in err
    existing = tmp_path / "pairs.csv"
    existing.write_text("keep\n", encoding="utf-8")
    code, _, err = run(capsys, "plan", "pairs", str(DEMO), "--out", str(existing))
    assert code == 1
    assert "exists already" in err
    assert existing.read_text(encoding="utf-8") == "keep\n"
    code, _, err = run(capsys, "plan", "pairs", str(DEMO), "--out", str(tmp_path / "no" / "p.csv"))
    assert code == 1
    assert "folder does not exist" in err
    assert err.count("\n") == 1


def test_an_arena_study_gets_its_battles_ordered(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # issue 16 item 1, arena part (tests/annotate/test_plan_battles.py tests the order)
    db = tmp_path / "v.db"
    assert run(capsys, "import", "--db", str(db), str(DEMO.parent / "arena"))[0] == 0
    code, out, err = run(capsys, "plan", "pairs", "--db", str(db), "--study", "demo-arena")
    assert code == 0, err
    assert "96 battle(s) of 4 models" in out
