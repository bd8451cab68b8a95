"""`annotate rate` passes a study's gold accuracy and self-consistency to the verdicts and
shows them per annotator in ``--json`` (issue 10 with issue 16's checks).

The numbers are checked against independent references: the Wilson interval against
statsmodels' ``proportion_confint(method="wilson")``, the one-sided exact binomial
p-value against ``scipy.stats.binomtest``, and the adjusted p-value of the flag against
statsmodels' ``multipletests(method="fdr_bh")``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from annotate.cli import main
from annotate.services.arena_analysis import BattleArrays, quality_evidence, rate
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.quality import quality_from_rows, study_quality
from annotate.services.voting import VotingSession
from annotate.views import StudyQuality
from ranking.quality import GOLD_THRESHOLD
from ranking.simulation import simulate_arena

ROOT = Path(__file__).resolve().parents[2]
GOLD_ARENA = ROOT / "tests/data/studies/gold-arena"


def _battles(n_ann: int = 12, votes: int = 80, seed: int = 1) -> BattleArrays:
    sim = simulate_arena(n_models=8, n_annotators=n_ann, records_per_annotator=votes, rng=seed)
    n = sim.outcome.size
    gen = np.random.default_rng(seed)
    left = gen.random(n) < 0.5
    return BattleArrays(
        model_a=sim.model_a,
        model_b=sim.model_b,
        annotator=sim.annotator,
        outcome=sim.outcome,
        both_bad=np.zeros(n, dtype=bool),
        left_outcome=np.where(left, sim.outcome, 1.0 - sim.outcome),
        left_chosen=(sim.outcome != 0.5) & ((sim.outcome == 1.0) == left),
        item=np.arange(n, dtype=np.int64),
        response_ms=np.full(n, 5000.0),
        text_length=np.full(n, 100.0),
        fast=np.zeros(n, dtype=bool),
        models=[f"m{i}" for i in range(8)],
        annotators=[f"ann{k}" for k in range(n_ann)],
    )


def _quality(names: list[str], wrong: dict[str, int], n_gold: int = 20) -> StudyQuality:
    """Gold rows: every annotator answers ``n_gold`` gold items, ``wrong[name]`` of them
    wrongly; no re-tests."""
    gold = []
    for k, name in enumerate(names):
        for i in range(n_gold):
            choice = "model_b" if i < wrong.get(name, 0) else "model_a"
            gold.append((k, i, choice, "model_a"))
    return quality_from_rows(
        names,
        list(range(len(names))),
        gold,
        [],
        [],
        questionnaire=[],
        gold_items=n_gold,
        retest_share=0.0,
    )


def test_rate_passes_gold_accuracy_to_the_verdicts_and_json() -> None:
    """An otherwise honest annotator who gets 14 of 20 gold items wrong (accuracy 0.3) is
    flagged ``low_gold_accuracy`` with the BH-adjusted p-value over the 12 annotators
    tested; the others, 19-20 of 20 right, are not. Without the quality rows nobody is
    flagged for it and the fields are null."""
    b = _battles()
    wrong = {"ann3": 14, "ann5": 1}
    q = _quality(b.annotators, wrong)
    rep = rate(b, "am-elo", quality=q)
    doc = json.loads(json.dumps(rep.as_dict(), allow_nan=False))
    rows = {a["annotator"]: a for a in doc["annotators"]}
    # independent references for ann3's gold check
    g = rows["ann3"]["gold"]
    lo, hi = proportion_confint(6, 20, alpha=0.05, method="wilson")
    p_raw = [
        binomtest(20 - wrong.get(n, 0), 20, GOLD_THRESHOLD, alternative="less").pvalue
        for n in b.annotators
    ]
    p_bh = multipletests(p_raw, method="fdr_bh")[1]
    assert (g["n"], g["hits"], g["threshold"]) == (20, 6, GOLD_THRESHOLD)
    assert abs(g["rate"] - 0.3) < 1e-12
    assert abs(g["lower"] - lo) < 1e-9
    assert abs(g["upper"] - hi) < 1e-9
    assert abs(g["p_value"] - p_raw[3]) < 1e-12
    assert rows["ann3"]["status"] == "flagged"
    gold_flags = [r for r in rows["ann3"]["reasons"] if r["reason"] == "low_gold_accuracy"]
    assert len(gold_flags) == 1
    assert abs(gold_flags[0]["p_value"] - p_bh[3]) < 1e-12
    assert abs(gold_flags[0]["statistic"] - 0.3) < 1e-12
    assert gold_flags[0]["threshold"] == GOLD_THRESHOLD
    others = [a for n, a in rows.items() if n != "ann3"]
    assert not any(r["reason"] == "low_gold_accuracy" for a in others for r in a["reasons"])
    assert all(a["consistency"] is None for a in doc["annotators"])
    # the same votes without the quality rows
    plain = {a.annotator: a for a in rate(b, "am-elo").annotators}
    assert plain["ann3"].gold is None
    assert not any(r["reason"] == "low_gold_accuracy" for r in plain["ann3"].reasons)


def test_quality_evidence_is_empty_without_checks_and_aligned_by_name() -> None:
    names = ["x", "y", "z"]
    assert quality_evidence(None, names) == ()
    q = _quality(["z", "x"], {"z": 20})  # stored in another order; y has no gold votes
    (ev,) = quality_evidence(q, names)
    assert ev.reason == "low_gold_accuracy"
    p = np.asarray(ev.p_value)
    assert np.isnan(p[1])
    assert p[2] < 1e-6
    assert p[0] == 1.0


def test_rate_study_json_shows_gold_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end on the gold-arena study (3 battles, 2 with a gold answer): ann and bob
    each vote on every battle. ``rate --study --json`` shows each one's gold check, the
    same as the quality service reads from the store (``study_quality``: n 2, the hits,
    the Wilson interval, the unadjusted p-value); with so few votes nobody is flagged for
    it, and the JSON is strict (no NaN)."""
    db = tmp_path / "v.db"
    engine = open_store(db)
    import_paths(engine, [GOLD_ARENA])
    for name in ("ann", "bob"):
        s = VotingSession(engine, "gold-arena", name)
        for _ in range(10):
            if s.current() is None:
                break
            s.vote("a", 3000)
    code = main(["rate", "--db", str(db), "--study", "gold-arena", "--method", "am-elo", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    rows = {a["annotator"]: a for a in doc["annotators"]}
    q = study_quality(engine, "gold-arena")
    for name in ("ann", "bob"):
        ref = q.of(name)
        assert ref is not None
        assert ref.gold is not None
        g = rows[name]["gold"]
        assert g["n"] == ref.gold.n == 2
        assert (g["hits"], g["rate"], g["lower"], g["upper"], g["p_value"]) == (
            ref.gold.hits,
            ref.gold.rate,
            ref.gold.lower,
            ref.gold.upper,
            ref.gold.p_value,
        )
        assert g["threshold"] == GOLD_THRESHOLD
        assert not any(r["reason"] == "low_gold_accuracy" for r in rows[name]["reasons"])
        assert set(rows[name]) >= {"gold", "consistency", "reasons", "status", "votes_to_verdict"}
