"""annotate plan power (issue 16 item 2): the simulation predicts what the report shows.

A study drawn by :func:`ranking.design.simulate_difficulty_study` is written as a study
folder, a difficulty file (the two simulated estimators) and a ``votes.csv`` in the
export format, imported, and analysed by the report's service
(:func:`annotate.services.report.human_alignment_report`). The mean width of the report's
two-way ("CI both") intervals over several such studies must match the width
``plan power`` predicts, within Monte-Carlo error; the report's McNemar test must be
:func:`ranking.design.paired_test` on the same consensus pairs.
"""

from __future__ import annotations

import csv
import json
import math
import uuid
from pathlib import Path

import numpy as np
import pytest

from annotate.cli import main
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.report import human_alignment_report
from ranking.design import difficulty_power, paired_test, simulate_difficulty_study

SIM = {
    "annotator_accuracy": 0.75,
    "reliability_sd": 0.5,
    "skip_rate": 0.1,
    "estimator_accuracy": (0.8, 0.7),
}


def write_study(root: Path, name: str, n_pairs: int, n_annotators: int, seed: int) -> Path:
    """The simulated study as files: a study folder, difficulty.csv and votes.csv."""
    s = simulate_difficulty_study(n_pairs, n_annotators, rng=seed, **SIM)  # type: ignore[arg-type]
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "study.toml").write_text(
        f'name = "{name}"\nkind = "difficulty"\ntitle = "simulated"\n', encoding="utf-8"
    )
    n_q = 2 * n_pairs
    (folder / "questions.jsonl").write_text(
        "".join(
            json.dumps({"id": f"q{i}", "subject": "s", "text": f"q{i}"}) + "\n" for i in range(n_q)
        ),
        encoding="utf-8",
    )
    rows = ["pair_id,first,second"] + [
        f"p{k},q{a},q{b}" for k, (a, b) in enumerate(s.pairs.tolist())
    ]
    (folder / "pairs.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    diff = root / f"{name}-difficulty.csv"
    with diff.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["question_id", "est_a", "est_b"])
        for i in range(n_q):
            w.writerow([f"q{i}", s.difficulty[0, i], s.difficulty[1, i]])
    votes = root / f"{name}-votes.csv"
    word = {0: "skip", 1: "first", 2: "second"}
    with votes.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["vote_id", "study", "annotator", "item_id", "choice"])
        for p, a, c in zip(s.vote_pair, s.vote_annotator, s.vote_code, strict=True):
            w.writerow([uuid.uuid4(), name, f"ann{a}", f"p{p}", word[int(c)]])
    return folder


def test_predicted_widths_match_the_report(tmp_path: Path) -> None:
    n_pairs, n_ann, studies, n_boot = 40, 6, 6, 400
    engine = open_store(tmp_path / "v.db")
    widths: dict[str, list[float]] = {"consensus": [], "kappa": []}
    for k in range(studies):
        name = f"sim{k}"
        folder = write_study(tmp_path, name, n_pairs, n_ann, seed=100 + k)
        import_paths(engine, [folder])
        import_paths(engine, [tmp_path / f"{name}-votes.csv"])
        rep = human_alignment_report(
            engine,
            name,
            difficulty_file=tmp_path / f"{name}-difficulty.csv",
            methods=(),
            subgroup_methods=(),
            n_boot=n_boot,
            seed=k,
            parallel=False,
        )
        m = rep.alignment[0]
        assert m.method.endswith("est_a") or "est_a" in m.label
        for key, est in (("consensus", m.consensus), ("kappa", m.kappa)):
            assert est.both_interval is not None
            widths[key].append(est.both_interval.high - est.both_interval.low)
        # the report's paired test is paired_test on the consensus pairs
        (t,) = rep.paired_tests
        q = [r for r in rep.pairs if r.consensus != "none"]
        ref = paired_test(
            [r.predictions[0] == r.consensus for r in q],
            [r.predictions[1] == r.consensus for r in q],
        )
        assert (t.pairs, t.only_first, t.only_second) == (ref.n, ref.only_first, ref.only_second)
        assert t.p_value == pytest.approx(ref.p_value)
    trials = 80
    (row,) = difficulty_power(
        [n_pairs],
        [n_ann],
        trials=trials,
        n_boot=n_boot,
        seed=9,
        **SIM,  # type: ignore[arg-type]
    )
    for key, pred, sd in (
        ("consensus", row.ci_width_consensus, row.ci_width_consensus_sd),
        ("kappa", row.ci_width_kappa, row.ci_width_kappa_sd),
    ):
        assert pred is not None
        assert sd is not None
        got = float(np.mean(widths[key]))
        # Monte-Carlo error of both means (the sd between studies estimated by the
        # simulation), three standard errors
        tol = 3 * sd * math.sqrt(1 / studies + 1 / trials)
        assert abs(got - pred) < tol, (key, got, pred, tol)


def test_plan_power_json_interface(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plot = tmp_path / "power.png"
    code = main(
        [
            "plan",
            "power",
            "--pairs",
            "20",
            "40",
            "--annotators",
            "3",
            "5",
            "--trials",
            "10",
            "--boot",
            "50",
            "--seed",
            "1",
            "--json",
            "--plot",
            str(plot),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert [(r["pairs"], r["annotators"]) for r in doc["rows"]] == [
        (20, 3),
        (20, 5),
        (40, 3),
        (40, 5),
    ]
    for r in doc["rows"]:
        assert {"pairs", "annotators", "ci_width_consensus", "ci_width_kappa", "power"} <= set(r)
        assert 0 <= r["power"] <= 1
        assert 0 < r["ci_width_consensus"] < 1
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the same seed gives the same rows
    assert (
        main(
            [
                "plan",
                "power",
                "--pairs",
                "20",
                "40",
                "--annotators",
                "3",
                "5",
                "--trials",
                "10",
                "--boot",
                "50",
                "--seed",
                "1",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["rows"] == doc["rows"]


def test_plan_power_text_and_bad_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert (
        main(
            ["plan", "power", "--pairs", "20", "--annotators", "3", "--trials", "5", "--boot", "20"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "ci width consensus" in out
    assert "power" in out
    for argv, msg in (
        (["--skip-rate", "1"], "--skip-rate"),
        (["--pairs", "0"], "--pairs"),
        (["--reliability-sd", "-1"], "--reliability-sd"),
    ):
        assert main(["plan", "power", *argv]) == 1
        err = capsys.readouterr().err
        assert msg in err
        assert err.count("\n") == 1
    existing = tmp_path / "x.png"
    existing.write_bytes(b"")
    assert main(["plan", "power", "--trials", "2", "--plot", str(existing)]) == 1
    assert "exists" in capsys.readouterr().err


def test_plan_power_arena(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from ranking.design import arena_width_closed_form

    plot = tmp_path / "arena.png"
    code = main(
        [
            "plan",
            "power",
            "--arena",
            "--models",
            "4",
            "--target-width",
            "150",
            "--rating-sd",
            "0",
            "--trials",
            "20",
            "--json",
            "--plot",
            str(plot),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    v = next(v for v in range(1, 10_000) if arena_width_closed_form(4, v) <= 150)
    assert doc["reached"] is True
    assert abs(doc["votes_per_pair"] - v) <= max(2, 0.1 * v)
    assert doc["total_votes"] == doc["votes_per_pair"] * 6
    assert doc["width"] <= 150
    assert plot.exists()
    assert (
        main(
            ["plan", "power", "--arena", "--models", "4", "--target-width", "150", "--trials", "5"]
        )
        == 0
    )
    assert "votes per model pair" in capsys.readouterr().out
    assert main(["plan", "power", "--arena", "--models", "1", "--target-width", "150"]) == 1
    assert "--models" in capsys.readouterr().err


def test_plan_power_arena_caps_the_simulated_votes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A target beyond MAX_SIMULATED_VOTES per arena is not simulated: the plan says so and
    gives the closed form (4 models, 20 Elo points: about 700 votes per pair)."""
    from annotate.services import plan
    from ranking.design import arena_width_closed_form

    monkeypatch.setattr(plan, "MAX_SIMULATED_VOTES", 600)
    code = main(
        [
            "plan",
            "power",
            "--arena",
            "--models",
            "4",
            "--target-width",
            "20",
            "--trials",
            "3",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["reached"] is False
    assert doc["max_votes_per_pair"] == 100
    assert max(c["votes_per_pair"] for c in doc["curve"]) <= 100
    want = next(v for v in range(1, 10_000) if arena_width_closed_form(4, v) <= 20)
    assert abs(doc["closed_form"] - want) <= 1
