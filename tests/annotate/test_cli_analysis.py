"""rank, rate and simulate on the command line: JSON interfaces that scripts rely on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from annotate.cli import main

DATA = Path(__file__).resolve().parent.parent / "data"
DEMO = Path(__file__).resolve().parent.parent.parent / "question_pairs" / "demo"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(
    "method", ["eip", "simple", "accuracy", "irt-1pl", "irt-2pl", "irt-1pl-mml", "mirt"]
)
def test_rank_every_method_on_the_demo_matrix(capsys, method: str) -> None:
    doc = run_json(capsys, "rank", method, str(DEMO / "difficulty" / "responses.csv"))
    assert len(doc["models"]) == 12
    assert len(doc["questions"]) == 48
    assert {"model", "score"} <= set(doc["models"][0])
    assert {"question", "difficulty"} <= set(doc["questions"][0])
    scores = [m["score"] for m in doc["models"]]
    assert scores == sorted(scores, reverse=True)
    # The demo matrix is simulated from known abilities (question_pairs/demo/make_responses.py):
    # every method must order the models broadly like plain accuracy does.
    acc = run_json(capsys, "rank", "accuracy", str(DEMO / "difficulty" / "responses.csv"))
    acc_score = {m["model"]: m["score"] for m in acc["models"]}
    rho = spearmanr([acc_score[m["model"]] for m in doc["models"]], scores).statistic
    assert rho > 0.8, rho


def test_rank_2pl_mml_with_few_models_says_it_did_not_converge(capsys) -> None:
    # 12 models are too few persons for marginal 2PL: the slopes grow without bound.
    # The command must say so in one line (never print an unconverged fit).
    code = main(["rank", "irt-2pl-mml", str(DEMO / "difficulty" / "responses.csv")])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert "irt-2pl-mml did not converge" in err
    assert err.count("\n") == 1


def test_rank_2pl_mml_on_a_matrix_with_many_models(capsys, tmp_path: Path) -> None:
    """Data drawn from a 2PL with 400 models x 30 questions (fixed seed): the fit converges
    and recovers the difficulty order (Spearman > 0.9 with the generating b)."""
    rng = np.random.default_rng(7)
    theta, a, b = rng.normal(size=400), rng.uniform(0.7, 2.0, 30), np.linspace(-2, 2, 30)
    p = 1 / (1 + np.exp(-a[:, None] * (theta[None, :] - b[:, None])))
    A = (rng.random(p.shape) < p).astype(int)
    f = tmp_path / "wide.csv"
    rows = ["question_id," + ",".join(f"m{j}" for j in range(400))]
    rows += [f"q{i}," + ",".join(map(str, A[i])) for i in range(30)]
    f.write_text("\n".join(rows) + "\n", encoding="utf-8")
    doc = run_json(capsys, "rank", "irt-2pl-mml", str(f))
    got = {q["question"]: q["difficulty"] for q in doc["questions"]}
    assert spearmanr([got[f"q{i}"] for i in range(30)], b).statistic > 0.9


def test_rank_eip_json_interface(capsys, tmp_path: Path) -> None:
    doc = run_json(
        capsys, "rank", "eip", str(DEMO / "difficulty" / "responses.csv"), "--out", str(tmp_path)
    )
    assert set(doc) >= {"models", "questions", "iterations"}
    assert isinstance(doc["iterations"], int)
    assert (tmp_path / "eip_models.csv").exists()
    assert (tmp_path / "eip_questions.csv").exists()


def test_rank_bad_matrix_is_one_clear_line(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "m.csv"
    bad.write_text("question_id,model,score\nq1,m1,2\n", encoding="utf-8")
    code = main(["rank", "eip", str(bad)])
    _, err = capsys.readouterr()
    assert code == 1
    assert "m.csv:2: field 'score': '2' is outside [0, 1]" in err


def test_rate_am_elo_json_interface(capsys) -> None:
    doc = run_json(capsys, "rate", str(DATA / "formats" / "arena_battles.csv"), "--method", "m-elo")
    assert [set(m) >= {"model", "rating"} for m in doc["models"]] == [True] * 3


def test_rate_reports_a_disconnected_graph(capsys, tmp_path: Path) -> None:
    f = tmp_path / "b.csv"
    f.write_text("model_a,model_b,winner,judge\na,b,model_a,j1\nc,d,model_b,j1\n", encoding="utf-8")
    code = main(["rate", str(f), "--method", "m-elo"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "connected" in err
    assert "nan" not in err.lower()


@pytest.mark.shared_data
def test_rate_llmfao_crowd_votes_with_stable_arena(capsys, shared_data: Path) -> None:
    """The whole pipeline on the LLMFAO crowd votes (124 real workers)."""
    path = shared_data / "llmfao_pairwise_crowd" / "crowd-comparisons.csv"
    doc = run_json(capsys, "rate", str(path), "--method", "am-elo")
    assert len(doc["models"]) == 59
    assert len(doc["annotators"]) == 124
    statuses = {a["status"] for a in doc["annotators"]}
    assert statuses <= {"pending", "reliable", "flagged"}
    for a in doc["annotators"]:
        assert set(a) >= {"annotator", "ability", "status"}
    ratings = [m["rating"] for m in doc["models"]]
    assert all(np.isfinite(ratings))
    # evalica's golden Bradley-Terry (SOURCE.md): GPT 4 is first.
    assert doc["models"][0]["model"] == "GPT 4"
    flagged = [a["annotator"] for a in doc["annotators"] if a["status"] == "flagged"]
    print(f"LLMFAO: {len(flagged)} flagged workers: {flagged}")
    print("top 5:", [m["model"] for m in doc["models"][:5]])


def test_simulate_arena_small(capsys) -> None:
    doc = run_json(
        capsys,
        "simulate",
        "arena",
        "--repeats",
        "1",
        "--ratios",
        "0,0.3",
        "--strategies",
        "flip",
        "--annotators",
        "30",
    )
    rows = {(r["strategy"], r["ratio"]): r for r in doc["summary"]}
    assert rows[("flip", 0.3)]["f1_dynamic"] >= 0.9
    assert rows[("flip", 0.0)]["flagged_share_dynamic"] <= 0.05


def _strict_json(text: str) -> dict:
    """json.loads that refuses NaN and Infinity (which json.loads accepts by default)."""

    def refuse(name: str) -> None:
        raise AssertionError(f"invalid JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


SMALL = ("simulate", "arena", "--repeats", "2", "--annotators", "12", "--records", "40")
SMALL += ("--elo-shuffles", "2", "--strategies", "flip", "--ratios", "0,1/4")


def test_simulate_json_is_valid_with_a_failed_trial(capsys, monkeypatch) -> None:
    """A trial whose fit raises is counted in its cell, which keeps its other repeat; the
    document stays valid JSON (null with a reason, never NaN)."""
    import ranking.simulation as simulation
    from ranking.errors import ConvergenceError

    real = simulation.stable_arena
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:  # repeat 0: clean fit, 0% trial (3 fits), then the 25% trial
            raise ConvergenceError("forced for the test")
        return real(*args, **kwargs)

    monkeypatch.setattr(simulation, "stable_arena", flaky)
    code = main([*SMALL, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = _strict_json(out)
    assert doc["trials"] == 4
    assert doc["trials_failed"] == 1
    clean, cell = doc["summary"]
    assert (cell["n_ok"], cell["n_failed"]) == (1, 1)
    assert cell["first_failure"] == "ConvergenceError: forced for the test"
    assert cell["f1_dynamic"] is not None
    # 0% perturbed: F1 undefined (null, with the reason), false flags defined
    assert clean["f1_eps0"] is None
    assert clean["null_reasons"]
    assert isinstance(clean["false_flags_dynamic"], int)
    assert 0.0 <= clean["false_flag_rate_eps0"] <= 1.0


def test_simulate_json_when_every_trial_fails(capsys, monkeypatch) -> None:
    import ranking.simulation as simulation
    from ranking.errors import DegenerateDataError

    def broken(*args, **kwargs):
        raise DegenerateDataError("no annotator can be fitted")

    monkeypatch.setattr(simulation, "stable_arena", broken)
    code = main([*SMALL, "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    doc = _strict_json(out)
    for row in doc["summary"]:
        assert row["n_ok"] == 0
        assert row["consistency_am_elo"] is None
        assert "every repeat of this cell failed" in row["null_reasons"][0]


def test_simulate_text_table_has_every_column_and_failure_notes(capsys, monkeypatch) -> None:
    import ranking.simulation as simulation
    from ranking.errors import ConvergenceError

    real = simulation.stable_arena
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise ConvergenceError("forced for the test")
        return real(*args, **kwargs)

    monkeypatch.setattr(simulation, "stable_arena", flaky)
    code = main([*SMALL, "--ability-sd", "0.5", "--tie-rate", "0.2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "nan" not in out.lower()
    for column in ("F1 eps=0", "F1 eps=.005", "F1 dyn", "false flags eps=0", "runs ok"):
        assert column in out
    assert "ability sd 0.5" in out
    assert "tie rate 0.2" in out
    assert "1 of 4 trials failed" in out
    assert "flip 3/12: 1 of 2 failed; first: ConvergenceError: forced for the test" in out
    assert err == ""  # no progress bar when stderr is not a terminal


def test_simulate_counts_and_bad_options(capsys) -> None:
    doc = run_json(
        capsys,
        "simulate",
        "arena",
        "--repeats",
        "1",
        "--annotators",
        "12",
        "--records",
        "40",
        "--elo-shuffles",
        "1",
        "--strategies",
        "equal",
        "--counts",
        "0,6",
    )
    assert [r["n_perturbed"] for r in doc["summary"]] == [0, 6]
    assert doc["elo_shuffles"] == 1
    code = main(["simulate", "arena", "--counts", "7", "--annotators", "12"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "half of the 12 annotators" in err
    code = main(["simulate", "arena", "--ratios", "0.6"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "cannot simulate" in err


def test_rate_reports_each_models_both_bad_share(capsys) -> None:
    """arena_battles.csv: q3 (gamma vs alpha) is the only "tie (bothbad)" of 4 votes, so
    alpha and gamma are in 1 of their 3 votes and beta in none of its 2; the intervals are
    statsmodels' Wilson intervals."""
    from statsmodels.stats.proportion import proportion_confint

    doc = run_json(capsys, "rate", str(DATA / "formats" / "arena_battles.csv"), "--method", "m-elo")
    got = {m["model"]: m["both_bad"] for m in doc["models"]}
    for model, k, n in [("alpha", 1, 3), ("beta", 0, 2), ("gamma", 1, 3)]:
        lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert got[model]["battles"] == n
        assert got[model]["votes"] == k
        assert got[model]["share"] == pytest.approx(k / n)
        assert (got[model]["lower"], got[model]["upper"]) == pytest.approx((lo, hi), abs=1e-12)
    assert main(["rate", str(DATA / "formats" / "arena_battles.csv"), "--method", "m-elo"]) == 0
    out = capsys.readouterr().out
    assert "both bad [95%]" in out
    assert "33% [6-79]" in out
