"""annotate rate --stats/--heldout/--model-loss/--order/--descent and simulate arena --out.

The statistics themselves are checked in tests/ranking/test_arena_analyses.py; here: the
commands on a real battle file (LLMFAO, ../shared/data, skipped when absent), valid JSON
with null and a reason instead of NaN, the figures, and one-line errors.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from annotate.cli import main

LLMFAO = Path("/work/shared/data/llmfao_pairwise_crowd/crowd-comparisons.csv")


def _chatbot_file(path: Path, seed: int = 0) -> Path:
    """A small Chatbot Arena file: 6 models, 5 judges x 60 battles from Bradley-Terry."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(-1, 1, 6)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model_a", "model_b", "winner", "judge"])
        for j in range(5):
            for _ in range(60):
                a, b = rng.choice(6, 2, replace=False)
                p = 1 / (1 + np.exp(strength[b] - strength[a]))
                u = rng.random()
                win = "tie" if u < 0.15 else ("model_a" if u < 0.15 + 0.85 * p else "model_b")
                w.writerow([f"m{a}", f"m{b}", win, f"judge{j}"])
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_paper_analyses_on_a_chatbot_arena_file(capsys, tmp_path: Path) -> None:
    f = _chatbot_file(tmp_path / "battles.csv")
    doc = _run(
        capsys, "rate", str(f), "--paper", "--order", "20", "--elo-shuffles", "3",
        "--plots", str(tmp_path / "figs"),
    )  # fmt: skip
    st = doc["statistics"]
    assert (st["annotators"], st["models"], st["records"]) == (5, 6, 300)
    assert st["per_pair"] == pytest.approx(300 / 15)
    h = doc["heldout"]
    assert h["folds"] == 5
    assert h["seed"] == 0
    assert sum(h["n_test"]) == 300
    assert [r["method"] for r in h["methods"]] == ["elo", "m-elo", "am-elo"]
    for r in h["methods"]:
        assert 0 < r["mse_mean"] < 0.25
        assert 0.5 < r["auc_mean"] <= 1
        assert len(r["mse_folds"]) == 5
    assert len(doc["model_loss"]["models"]) == 6
    assert len(doc["order_dependence"]["models"]) == 6
    assert doc["descent"]["with_norm"]["consistency"] == pytest.approx(1.0)
    names = sorted(Path(p).name for p in doc["files"])
    assert names == ["descent_loss.png", "elo_order.png", "heldout.png", "model_loss.png"]
    for p in doc["files"]:
        assert Path(p).read_bytes()[:4] == b"\x89PNG"


def test_text_output_and_the_filter(capsys, tmp_path: Path) -> None:
    f = _chatbot_file(tmp_path / "battles.csv")
    assert main(["rate", str(f), "--stats", "--min-records", "61"]) == 1
    _, err = capsys.readouterr()
    assert "no annotator has 61 or more votes" in err
    assert err.count("\n") == 1
    assert main(["rate", str(f), "--stats", "--heldout", "--elo-shuffles", "2"]) == 0
    out, _ = capsys.readouterr()
    assert "Table 1" in out
    assert "Table 2" in out
    assert "0.1238 +- 0.0031" in out


def test_failed_fits_are_null_with_a_reason(capsys, tmp_path: Path) -> None:
    """A judge who agrees with the ranking on every vote has no finite am-ELO ability: the
    am-ELO columns are null with the reason, never NaN."""
    path = tmp_path / "b.csv"
    rows = [("m0", "m1", "model_a", "j0"), ("m1", "m2", "model_a", "j0"),
            ("m0", "m2", "model_a", "j0"), ("m1", "m0", "model_a", "j1"),
            ("m2", "m1", "tie", "j1"), ("m0", "m2", "model_b", "j1"),
            ("m0", "m1", "tie", "j1"), ("m2", "m0", "model_a", "j1")] * 2  # fmt: skip
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model_a", "model_b", "winner", "judge"])
        w.writerows(rows)
    doc = _run(capsys, "rate", str(path), "--heldout", "--model-loss", "--min-records", "0",
               "--folds", "2", "--elo-shuffles", "2")  # fmt: skip
    am = doc["heldout"]["methods"][2]
    assert am["mse_mean"] is None
    assert am["null_reasons"]
    assert doc["model_loss"]["failures"][0]["method"] == "am-elo"
    assert doc["model_loss"]["models"][0]["loss_am_elo"] is None


def test_bad_options_are_one_line(capsys, tmp_path: Path) -> None:
    f = _chatbot_file(tmp_path / "battles.csv")
    for argv, needle in (
        (["--heldout", "--folds", "1"], "--folds must be at least 2"),
        (["--order", "1"], "--order must be at least 2"),
    ):
        assert main(["rate", str(f), *argv]) == 1
        out, err = capsys.readouterr()
        assert needle in err
        assert err.count("\n") == 1
        assert out == ""


@pytest.mark.skipif(not LLMFAO.exists(), reason="LLMFAO data not in ../shared/data")
def test_llmfao_table1_and_table2(capsys) -> None:
    doc = _run(capsys, "rate", str(LLMFAO), "--stats", "--heldout", "--elo-shuffles", "5")
    st = doc["statistics"]
    # SOURCE.md: 124 workers, 8,931 votes; 37 workers have 50 or more votes
    assert doc["filter"]["votes_before"] == 8931
    assert (st["annotators"], st["records"]) == (37, 7393)
    s = {r["method"]: r for r in doc["heldout"]["methods"]}
    assert s["am-elo"]["mse_mean"] < s["m-elo"]["mse_mean"]
    assert s["am-elo"]["auc_mean"] > s["m-elo"]["auc_mean"]


def test_simulate_arena_out_writes_the_abilities(capsys, tmp_path: Path) -> None:
    doc = _run(
        capsys, "simulate", "arena", "--repeats", "1", "--annotators", "12", "--records",
        "40", "--models", "6", "--strategies", "flip", "--ratios", "0,0.25",
        "--elo-shuffles", "2", "--out", str(tmp_path / "sim"),
    )  # fmt: skip
    ab = doc["abilities"]
    assert sorted(Path(p).name for p in ab["files"]) == ["abilities.csv", "abilities.png"]
    with (tmp_path / "sim" / "abilities.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 24
    assert sum(r["perturbed"] == "1" for r in rows) == 3
    assert ab["perturbed_below_zero"] is not None
    assert ab["perturbed_below_zero"] >= 0.5
