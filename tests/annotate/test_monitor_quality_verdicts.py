"""The monitor's verdicts use the study's gold items like ``annotate rate`` does (issue 10
with issue 16's evidence): on an arena study with gold battles, an annotator who gets
every gold battle wrong is flagged ``low_gold_accuracy`` by both, and every annotator's
status and reasons are the same in the monitor (and so in the report) as in ``rate``."""

from __future__ import annotations

import csv
import json
import uuid
from pathlib import Path

import numpy as np

from annotate.services.arena_analysis import rate_study
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.monitoring import MonitorSource

MODELS = [f"M{i}" for i in range(6)]  # M0 is the best


def make_study(root: Path, seed: int = 4) -> Path:
    """6 models, 40 prompts, 120 battles (the first 40 with a gold answer: the better
    model), 8 annotators who all judge every battle: 7 honest (the better model with
    probability 0.85), and ``gus``, honest except on the gold battles, where he always
    picks the worse model."""
    rng = np.random.default_rng(seed)
    study = root / "goldbattles"
    study.mkdir()
    (study / "study.toml").write_text(
        'name = "goldbattles"\nkind = "arena"\n\n[settings]\noverlap = 0\n', encoding="utf-8"
    )
    with (study / "prompts.jsonl").open("w", encoding="utf-8") as fh:
        for p in range(40):
            fh.write(json.dumps({"id": f"p{p}", "text": f"Question {p}?"}) + "\n")
    with (study / "responses.jsonl").open("w", encoding="utf-8") as fh:
        for p in range(40):
            for m in MODELS:
                fh.write(json.dumps({"prompt_id": f"p{p}", "model": m, "text": f"{m} on {p}"}))
                fh.write("\n")
    battles = []
    for b in range(120):
        i, j = rng.choice(6, size=2, replace=False)
        gold = ("a" if i < j else "b") if b < 40 else ""
        battles.append((f"b{b}", f"p{b % 40}", MODELS[i], MODELS[j], gold))
    with (study / "battles.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["battle_id", "prompt_id", "model_a", "model_b", "gold"])
        w.writerows(battles)
    votes = root / "votes.csv"
    with votes.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["vote_id", "study", "annotator", "item_id", "choice", "left"])
        for name in [f"honest{k}" for k in range(7)] + ["gus"]:
            for key, _, a, b, gold in battles:
                a_better = MODELS.index(a) < MODELS.index(b)
                right = rng.random() < 0.85
                if name == "gus" and gold:
                    right = False
                pick_a = a_better == right
                choice = "model_a" if pick_a else "model_b"
                side = "model_a" if rng.random() < 0.5 else "model_b"
                w.writerow([str(uuid.uuid4()), "goldbattles", name, key, choice, side])
    return votes


def test_monitor_and_rate_give_the_same_verdicts_with_gold_evidence(tmp_path: Path) -> None:
    votes = make_study(tmp_path)
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [tmp_path / "goldbattles"])
    import_paths(engine, [votes])
    rated = {a.annotator: a for a in rate_study(engine, "goldbattles").annotators}
    snap = MonitorSource(engine).open("goldbattles").snapshot()
    shown = {r.annotator: r for r in snap.annotators}
    assert set(shown) == set(rated)
    gus = rated["gus"]
    assert gus.status == "flagged"
    assert "low_gold_accuracy" in {d["reason"] for d in gus.reasons}
    assert gus.gold is not None
    assert gus.gold["hits"] == 0
    for name, r in rated.items():
        m = shown[name]
        assert m.status == r.status, name
        assert {f.reason for f in m.flags} == {d["reason"] for d in r.reasons}, name
    assert "low gold 0%" in shown["gus"].alerts
    assert all(shown[f"honest{k}"].status != "flagged" for k in range(7))
    engine.dispose()
