"""Extra evidence in the verdicts (``stable_arena(..., evidence=...)``, issue 10 with
issue 16's gold items and re-tests in mind): adjusted across annotators like the per-vote
checks. Reference: statsmodels' ``multipletests`` (Benjamini-Hochberg, Holm)."""

from __future__ import annotations

import numpy as np
import pytest

from ranking import Evidence, stable_arena
from ranking.errors import InvalidParameterError, ShapeError
from ranking.simulation import simulate_arena


@pytest.fixture(scope="module")
def sim():
    return simulate_arena(n_models=8, n_annotators=12, records_per_annotator=60, rng=4)


@pytest.mark.parametrize(("correction", "method"), [("bh", "fdr_bh"), ("holm", "holm")])
def test_evidence_flags_with_adjusted_p_values(sim, correction, method) -> None:
    raw = np.full(12, 0.5)
    raw[[2, 7]] = [0.0004, 0.003]
    raw[5] = np.nan  # not tested (no gold items seen)
    gold = np.linspace(0.9, 0.6, 12)
    res = stable_arena(
        sim.model_a, sim.model_b, sim.annotator, sim.outcome, correction=correction,
        evidence=(Evidence("low_gold", gold, 0.75, raw),),
    )  # fmt: skip
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    tested = ~np.isnan(raw)
    ref = np.full(12, np.nan)
    ref[tested] = multipletests(raw[tested], method=method)[1]
    for j in range(12):
        mine = [f for f in res.flags[j] if f.reason == "low_gold"]
        if j in (2, 7):
            assert res.status[j] == "flagged"
            assert mine[0].p_value == pytest.approx(ref[j], rel=1e-12)
            assert mine[0].statistic == pytest.approx(gold[j])
            assert mine[0].threshold == 0.75
            assert "low_gold" in res.reasons[j]
        else:
            assert not mine
    assert res.verdict(2)["reasons"][-1]["reason"] == "low_gold"


def test_evidence_is_validated(sim) -> None:
    args = (sim.model_a, sim.model_b, sim.annotator, sim.outcome)
    with pytest.raises(InvalidParameterError, match="built-in"):
        stable_arena(*args, evidence=(Evidence("random", np.zeros(12), 0.0, np.ones(12)),))
    with pytest.raises(ShapeError, match="shape"):
        stable_arena(*args, evidence=(Evidence("low_gold", np.zeros(3), 0.0, np.ones(3)),))
    with pytest.raises(InvalidParameterError, match=r"\[0, 1\]"):
        stable_arena(*args, evidence=(Evidence("low_gold", np.zeros(12), 0.0, np.full(12, 2.0)),))
