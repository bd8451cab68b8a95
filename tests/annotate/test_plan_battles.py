"""annotate plan pairs on an arena (issue 16 item 1, arena part): the order in which to
show the battles, written as a battles.csv that a study with ``file_order = true`` shows
in exactly that order to every annotator (the standard schedule keeps each annotator's
own random order otherwise)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from annotate.cli import main
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession

DEMO_ARENA = Path(__file__).resolve().parent.parent.parent / "question_pairs" / "demo" / "arena"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_battle_file_order_covers_every_model_pair_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "battles.csv"
    code, out, err = run(
        capsys,
        "plan",
        "pairs",
        str(DEMO_ARENA / "battles.csv"),
        "--seed",
        "3",
        "--json",
        "--out",
        str(out_file),
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kind"] == "arena"
    assert doc["models"] == 4
    assert doc["pairs"] == 6
    assert doc["chosen"] == 96
    keys = [tuple(sorted((b["model_a"], b["model_b"]))) for b in doc["battles"]]
    assert len(set(keys[:6])) == 6
    with (DEMO_ARENA / "battles.csv").open(encoding="utf-8") as f:
        original = {r["battle_id"]: r for r in csv.DictReader(f)}
    with out_file.open(encoding="utf-8") as f:
        written = list(csv.DictReader(f))
    assert [r["battle_id"] for r in written] == [b["battle_id"] for b in doc["battles"]]
    assert sorted(r["battle_id"] for r in written) == sorted(original)
    assert all(r == original[r["battle_id"]] for r in written)  # same battles, new order
    # deterministic from the seed
    _, again, _ = run(capsys, "plan", "pairs", str(DEMO_ARENA), "--seed", "3", "--json")
    assert json.loads(again)["battles"] == doc["battles"]
    code, text, _ = run(capsys, "plan", "pairs", str(DEMO_ARENA), "--seed", "3")
    assert code == 0
    assert "96 battle(s) of 4 models over 6 model pairs" in text


def test_a_study_with_file_order_shows_the_planned_order(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    assert main(["import", "--db", str(db), "--demo"]) == 0
    capsys.readouterr()
    # the stored demo arena has no votes: equal weights
    code, out, err = run(
        capsys,
        "plan",
        "pairs",
        "--db",
        str(db),
        "--study",
        "demo-arena",
        "--seed",
        "1",
        "--json",
        "--out",
        str(tmp_path / "planned.csv"),
    )
    assert code == 0, err
    planned = [b["battle_id"] for b in json.loads(out)["battles"]]
    assert "no votes yet" in json.loads(out)["ratings"]
    study = tmp_path / "planned-arena"
    shutil.copytree(DEMO_ARENA, study)
    shutil.copy(tmp_path / "planned.csv", study / "battles.csv")
    toml = (study / "study.toml").read_text(encoding="utf-8")
    toml = toml.replace('name = "demo-arena"', 'name = "planned-arena"')
    toml = toml.replace("overlap = 5", "overlap = 0\nfile_order = true")
    (study / "study.toml").write_text(toml, encoding="utf-8")
    engine = open_store(db)
    import_paths(engine, [study])
    for annotator in ("ada", "bob"):
        session = VotingSession(engine, "planned-arena", annotator)
        seen = []
        while (shown := session.current()) is not None and len(seen) < 10:
            seen.append(shown.key)
            session.vote("a", 5000)
        assert seen == planned[:10]
    # without the setting each annotator has an own order
    plain = tmp_path / "plain-arena"
    shutil.copytree(study, plain)
    toml = (plain / "study.toml").read_text(encoding="utf-8")
    toml = toml.replace("planned-arena", "plain-arena").replace("file_order = true", "")
    (plain / "study.toml").write_text(toml, encoding="utf-8")
    import_paths(engine, [plain])
    first = VotingSession(engine, "plain-arena", "ada").current()
    assert first is not None
    orders = []
    for annotator in ("ada", "bob", "cyd"):
        s = VotingSession(engine, "plain-arena", annotator)
        orders.append([it.key for it in s._queue[:10]])
    assert any(o != planned[:10] for o in orders)


def test_bad_battle_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "battles.csv"
    bad.write_text("battle_id,prompt_id,model_a,model_b\nb1,p1,X,Y\nb2,p1,Z,Z\n", encoding="utf-8")
    code, out, err = run(capsys, "plan", "pairs", str(bad))
    assert code == 1
    assert out == ""
    assert "battles.csv:3" in err
    assert "model_b" in err
    assert err.count("\n") == 1
