"""``annotate analyze``: the EIP paper's robustness analyses on the command line.

Runs on the demo matrix (question_pairs/demo/difficulty, with its models.csv and
questions.jsonl) and on ChemBench (real data, skipped when absent), checks that the
JSON holds only numbers or null with a reason, that a number in the report is the
``ranking`` function's (computed independently here), and that bad metadata gives one
line naming the file, line and field.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from annotate.cli import analyze as cli_analyze
from annotate.cli import main
from annotate.services import analyze as svc

DEMO = Path(__file__).resolve().parent.parent.parent / "question_pairs" / "demo" / "difficulty"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))


def nulls_have_reasons(obj: Any, where: str = "") -> None:
    """Every null value in a dict has a sibling ``<key>_reason`` (or is itself a reason)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if v is None and not k.endswith("_reason") and k not in ("skipped",):
                assert isinstance(obj.get(f"{k}_reason"), str), (
                    f"{where}.{k} is null with no reason"
                )
            nulls_have_reasons(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for v in obj:
            nulls_have_reasons(v, where)


def test_cli_names_match_the_service() -> None:
    assert cli_analyze.ANALYSES == svc.ANALYSES


def test_demo_report_json_files_and_an_independent_number(capsys, tmp_path: Path) -> None:
    doc = run_json(
        capsys, "analyze", str(DEMO), "--out", str(tmp_path), "--no-plots", "--boot", "20"
    )
    assert doc["questions"] == 48
    assert doc["models"] == 12
    assert list(doc["sections"]) == list(svc.ANALYSES)
    assert doc["metadata"]["questions_with_dataset"] == 48
    assert doc["metadata"]["models_with_metadata"] == 12
    for key, sec in doc["sections"].items():
        assert sec["skipped"] is None, (key, sec["skipped"])
        assert isinstance(sec["seconds"], float)
    nulls_have_reasons(doc)
    assert (tmp_path / "analysis.md").is_file()
    md = (tmp_path / "analysis.md").read_text()
    for title in ("Table 5", "Table 9", "Table 10", "Table 11", "Fig. 8", "Table 20"):
        assert title in md
    # Table 10 from the service vs scipy on a refit written out here
    from annotate.services.estimators import read_matrix
    from ranking.eip import eip

    m = read_matrix(DEMO)
    subjects = {
        json.loads(line)["id"]: json.loads(line)["subject"]
        for line in (DEMO / "questions.jsonl").read_text().splitlines()
    }
    g = np.array([subjects[q] for q in m.questions])
    full = eip(m.scores)
    rows = {r["dataset"]: r for r in doc["sections"]["datasets"]["rows"]}
    for lab in np.unique(g):
        rho = stats.spearmanr(full.competency, eip(m.scores[g != lab]).competency).statistic
        assert rows[lab]["model_rho"] == pytest.approx(rho, abs=1e-12)
    # the pools are the demo's small / medium / large plus the whole pool
    pools = [r["pool"] for r in doc["sections"]["pools"]["rows"]]
    assert pools == ["small", "medium", "large", "whole"]
    with (tmp_path / "model-removal.csv").open() as fh:
        assert next(csv.reader(fh))[0] == "k"


def test_only_and_plots(capsys, tmp_path: Path) -> None:
    code = main(
        [
            "analyze",
            str(DEMO / "responses.csv"),
            "--only",
            "model-removal",
            "pools",
            "alpha",
            "vs-accuracy",
            "--out",
            str(tmp_path),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Removing k random models" in out
    assert "Leave one model out" not in out
    for png in (
        "model_removal.png",
        "pools_difficulty.png",
        "alpha_convergence.png",
        "rank_changes.png",
    ):
        assert (tmp_path / png).stat().st_size > 1000


def test_text_output_says_what_a_dash_means(capsys, tmp_path: Path) -> None:
    """On 48 questions a 99% super model solves every question and fails no retained one:
    its refit is undefined, shown as '-' with the reason."""
    code = main(["analyze", str(DEMO), "--only", "super-model", "--out", str(tmp_path)])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "'-': the refit with the super model failed" in out


def test_export_anchors_with_harness_ids(capsys, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n_q, n_m = 400, 6
    A = (rng.random((n_q, n_m)) < np.linspace(0.2, 0.8, n_m)).astype(int)
    path = tmp_path / "m.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id"] + [f"m{j}" for j in range(n_m)])
        for i in range(n_q):
            w.writerow([f"task{i % 2}/{i}", *list(A[i])])
    anchors = tmp_path / "anchors" / "a.csv"
    doc = run_json(
        capsys,
        "analyze",
        str(path),
        "--only",
        "anchors",
        "--out",
        str(tmp_path / "o"),
        "--export-anchors",
        str(anchors),
        "--anchor-rate",
        "0.05",
    )
    with anchors.open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["question_id"]
    assert len(rows) - 1 == 10 * math.ceil(0.05 * n_q / 10)
    samples = json.loads((tmp_path / "anchors" / "a.samples.json").read_text())
    assert sum(len(v) for v in samples.values()) == len(rows) - 1
    assert set(samples) <= {"task0", "task1"}
    assert str(anchors.resolve()) in doc["files"]


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("model,family,params_b\nStoat-Mini,burrow,huge\n", "params_b"),
        ("model,open_weight\nStoat-Mini,maybe\n", "open_weight"),
        ("name,family\nx,y\n", "header"),
    ],
)
def test_bad_model_metadata_is_one_line(capsys, tmp_path: Path, content: str, field: str) -> None:
    bad = tmp_path / "models.csv"
    bad.write_text(content)
    code = main(["analyze", str(DEMO), "--models", str(bad), "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert f"{bad}:" in err
    assert f"field '{field}'" in err
    assert "Traceback" not in err


def test_questions_without_a_dataset_are_refused(capsys, tmp_path: Path) -> None:
    q = tmp_path / "q.csv"
    q.write_text("question_id,dataset\narith-01,a\n")
    code = main(["analyze", str(DEMO), "--questions", str(q), "--only", "datasets"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "47 question(s) have no dataset" in err
    assert err.count("\n") == 1


def test_study_and_matrix_together_is_an_error(capsys) -> None:
    code = main(["analyze", str(DEMO), "--study", "x"])
    assert code == 1
    assert "not both" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# ChemBench (real data; ../shared/data, skipped when absent)
# ---------------------------------------------------------------------------

CHEMBENCH_MODELS = """model,family,params_b,open_weight
Mistral-Large-2,Mistral,123,true
Llama-3.1-70B-Instruct,Llama,70,true
Claude-3.5 (Sonnet),Claude,,false
Mistral-8x7b-Instruct,Mistral,47,true
Command-R+,Cohere,104,true
Llama-3.1-405B-Instruct,Llama,405,true
Llama-3.1-8B-Instruct,Llama,8,true
GPT-4o,OpenAI,,false
Llama-3-70B-Instruct,Llama,70,true
PaperQA2,OpenAI,,false
Gemma-1.1-7B-it,Gemma,7,true
Gemma-2-9B-it,Gemma,9,true
Llama-2-70B Chat,Llama,70,true
Galatica-120b,Galactica,120,true
Llama-3-8B-Instruct,Llama,8,true
Gemini-Pro,Gemini,,false
o1,OpenAI,,false
GPT-4,OpenAI,,false
Phi-3-Medium-4k-Instruct,Phi,14,true
Claude-3 (Opus),Claude,,false
GPT-3.5 Turbo Zero-T,OpenAI,,false
Claude-2-Zero-T,Claude,,false
"""
"""Families from the model names; params_b only where the maker published it (PaperQA2 is
an agent on a GPT-4-class model, counted with OpenAI). Pools are params_b tertiles."""


@pytest.mark.shared_data
def test_chembench_report(shared_data, capsys, tmp_path: Path) -> None:
    """The whole report on ChemBench (22 models x 2,854 questions); numbers printed for the
    comparison with the paper (different data: the point is the shape)."""
    matrix = shared_data / "chembench_llm_binary" / "binary_matrix.csv"
    models = tmp_path / "models.csv"
    models.write_text(CHEMBENCH_MODELS)
    doc = run_json(
        capsys,
        "analyze",
        str(matrix),
        "--models",
        str(models),
        "--out",
        str(tmp_path / "o"),
        "--no-plots",
        "--boot",
        "100",
    )
    nulls_have_reasons(doc)
    sec = doc["sections"]
    assert sec["datasets"]["skipped"].startswith("no per-question dataset")
    removal = sec["model-removal"]["rows"]
    q_rho = [r["question_rho_mean"] for r in removal]
    assert [r["k"] for r in removal] == [1, 5, 10, 15]
    assert q_rho == sorted(q_rho, reverse=True)
    assert q_rho[0] > 0.99
    loo = sec["leave-one-out"]["rows"][0]
    assert loo["question_rho_mean"] > 0.99
    alpha = {r["alpha"]: r for r in sec["alpha"]["rows"]}
    assert alpha[0.99]["model_rho"] > 0.99
    acc = {r["metric"]: r["value"] for r in sec["vs-accuracy"]["rows"]}
    # tests/ranking/test_eip.py::test_chembench_real_matrix observes tau 0.48 (paper: 0.876)
    assert acc["Kendall tau"] == pytest.approx(0.4805, abs=1e-3)
    pools = {r["pool"]: r for r in sec["pools"]["rows"]}
    assert pools["whole"]["dead_pct"] < min(
        pools[p]["dead_pct"] for p in ("small", "medium", "large")
    )
    assert sec["families"]["rows"][-1]["family"] == "total"
    groups = {(r["group_a"], r["group_b"]) for r in sec["group-agreement"]["rows"]}
    assert ("open-weight", "proprietary") in groups
    assert ("open-weight", "both") in groups
    tiers = {r["model"]: r for r in sec["tiers"]["rows"]}
    assert all(t["easy_pct"] >= t["hard_pct"] for t in tiers.values())
    lines = [f"{k}: {json.dumps(v['rows'])}" for k, v in sec.items() if not v["skipped"]]
    print("\n".join(lines))


# ---------------------------------------------------------------------------
# annotate rank weighted-accuracy (EIP paper sec. 4)
# ---------------------------------------------------------------------------


def test_rank_weighted_accuracy_hand_case(capsys, tmp_path: Path) -> None:
    """Hand: dataset e = {q1, q2} has mean 3/4 (w = 1/4), h = {q3, q4} mean 1/4 (w = 3/4);
    model a scores 1 on e and 1/2 on h: (1/4 + 3/8) / 1 = 0.625; model b: 1/8 = 0.125."""
    m = tmp_path / "m.csv"
    m.write_text("question_id,a,b\nq1,1,1\nq2,1,0\nq3,1,0\nq4,0,0\n")
    q = tmp_path / "q.csv"
    q.write_text("question_id,dataset\nq1,e\nq2,e\nq3,h\nq4,h\n")
    doc = run_json(capsys, "rank", "weighted-accuracy", str(m), "--questions", str(q))
    # score_100: divided by the largest score, the EIP paper's Fig. 3 scale
    assert doc["models"] == [
        {"model": "a", "score": 0.625, "score_100": 100.0},
        {"model": "b", "score": 0.125, "score_100": 20.0},
    ]


def test_rank_weighted_accuracy_on_the_demo_subjects(capsys) -> None:
    """The demo's subjects as datasets: the scores are ranking.baselines.weighted_accuracy's."""
    from annotate.services.estimators import read_matrix
    from ranking.baselines import weighted_accuracy

    doc = run_json(
        capsys, "rank", "weighted-accuracy", str(DEMO), "--questions", str(DEMO / "questions.jsonl")
    )
    m = read_matrix(DEMO)
    subjects = svc.read_datasets(DEMO / "questions.jsonl")
    ref = weighted_accuracy(m.scores, [subjects[q] for q in m.questions])
    got = {r["model"]: r["score"] for r in doc["models"]}
    for name, v in zip(m.models, ref, strict=True):
        assert got[name] == pytest.approx(v, abs=1e-15)


def test_rank_weighted_accuracy_needs_datasets(capsys) -> None:
    code = main(["rank", "weighted-accuracy", str(DEMO)])
    _, err = capsys.readouterr()
    assert code == 1
    assert "--questions FILE" in err
    assert err.count("\n") == 1


def test_scale_rho_is_scipys(capsys, tmp_path: Path) -> None:
    """Figs. 3-4 on the demo: rho with log params equals scipy's on the demo's models.csv."""
    from annotate.services.estimators import read_matrix
    from ranking.baselines import accuracy

    doc = run_json(capsys, "analyze", str(DEMO), "--only", "scale", "--out", str(tmp_path))
    m = read_matrix(DEMO)
    params = svc.read_models(DEMO / "models.csv")
    logp = np.log([params[x].params_b for x in m.models])
    rho = doc["sections"]["scale"]["scale_rho"]["accuracy_vs_log_params"]
    assert rho == pytest.approx(stats.spearmanr(logp, accuracy(m.scores)).statistic, abs=1e-12)


def test_missing_answers_run_every_analysis(capsys, tmp_path: Path) -> None:
    """A long-format matrix with 10% of the answers missing: every section runs or says why,
    and every null in the JSON has a reason."""
    rng = np.random.default_rng(3)
    n_q, n_m = 200, 8
    b = rng.normal(size=n_q)
    theta = np.linspace(-1, 1.5, n_m)
    path = tmp_path / "long.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "model", "score"])
        for i in range(n_q):
            for j in range(n_m):
                if rng.random() < 0.1:
                    continue
                w.writerow(
                    [f"q{i}", f"m{j}", int(rng.random() < 1 / (1 + np.exp(b[i] - theta[j])))]
                )
    doc = run_json(
        capsys, "analyze", str(path), "--out", str(tmp_path / "o"), "--boot", "10", "--no-plots"
    )
    nulls_have_reasons(doc)
    skipped = {k for k, v in doc["sections"].items() if v["skipped"]}
    assert skipped == {"datasets", "families", "group-agreement"}


def test_why_is_this_question_hard(capsys, tmp_path: Path) -> None:
    """--question: the failing models' shares of its difficulty add to 100%; an unknown id
    is one line."""
    doc = run_json(
        capsys,
        "analyze",
        str(DEMO),
        "--only",
        "wrong-side",
        "--question",
        "arith-08",
        "--out",
        str(tmp_path),
    )
    rows = doc["sections"]["wrong-side"]["rows"]
    assert {r["question"] for r in rows} == {"arith-08"}
    assert sum(r["share_pct"] for r in rows) == pytest.approx(100.0)
    code = main(["analyze", str(DEMO), "--only", "wrong-side", "--question", "nope"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "--question 'nope' is not a question" in err
    assert err.count("\n") == 1


def test_study_in_the_database_gives_the_folders_numbers(capsys, tmp_path: Path) -> None:
    """--study reads the stored matrix and the questions' subjects as datasets: the same
    Table 10 as the study folder."""
    db = tmp_path / "votes.db"
    assert main(["import", "--db", str(db), "--demo"]) == 0
    capsys.readouterr()
    stored = run_json(
        capsys,
        "analyze",
        "--db",
        str(db),
        "--study",
        "demo-difficulty",
        "--only",
        "datasets",
        "--out",
        str(tmp_path / "a"),
    )
    folder = run_json(
        capsys, "analyze", str(DEMO), "--only", "datasets", "--out", str(tmp_path / "b")
    )
    assert stored["sections"]["datasets"]["rows"] == folder["sections"]["datasets"]["rows"]


def test_rank_prints_the_papers_0_100_scales(capsys) -> None:
    """rank adds score_100 / difficulty_100: EIP divided by its largest value (EIP paper
    Fig. 3, by hand here), IRT min-max scaled (App. H.4)."""
    matrix = str(DEMO / "responses.csv")
    doc = run_json(capsys, "rank", "eip", matrix)
    top = max(m["score"] for m in doc["models"])
    for m in doc["models"]:
        assert m["score_100"] == pytest.approx(100 * m["score"] / top, abs=1e-9)
    assert "largest" in doc["scale_100"]
    irt = run_json(capsys, "rank", "irt-1pl", matrix)
    s = [m["score"] for m in irt["models"]]
    for m in irt["models"]:
        assert m["score_100"] == pytest.approx(100 * (m["score"] - min(s)) / (max(s) - min(s)))
    assert main(["rank", "eip", matrix, "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "0-100" in out
    assert "100.0" in out
