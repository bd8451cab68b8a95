"""The selection probability stored with each vote of an adaptive study (issue 16 item 3)
is the probability of the draw that showed the item, and the incremental estimates the
app draws with (new vote rows counted one by one, undo as a removal, warm-started
refits) give the same draw as estimates built cold from the database: a restarted app,
or another process on the same database, draws with the same probabilities.

The reference is the cold state: a new :class:`AdaptiveEstimates` that reads every vote
row at once and fits them from zero. It is compared at every draw made right after a
refit (with ``REFIT_EVERY`` 1: every draw), when both have counted the same votes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.services import adaptive
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession, reader_engine
from tests.annotate.conftest import ROOT, rows
from tests.annotate.test_app_adaptive import _settle_pair


@pytest.mark.parametrize("refit_every", [1, adaptive.REFIT_EVERY])
def test_recorded_probability_is_the_draws_also_under_a_cold_state(
    tmp_path: Path,
    engine: Engine,
    db_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    refit_every: int,
) -> None:
    # undo needs the names unrevealed (a revealed vote is final)
    folder = tmp_path / "ad-arena"
    shutil.copytree(ROOT / "question_pairs/demo/arena", folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    toml = toml.replace('name = "demo-arena"', 'name = "ad-arena"')
    toml = toml.replace("reveal_models = true", "reveal_models = false")
    toml = toml.replace("[settings]\n", '[settings]\nschedule = "adaptive"\nexploration = 0.3\n')
    (folder / "study.toml").write_text(toml, encoding="utf-8")
    import_paths(engine, [folder])
    settled = _settle_pair(db_path)
    monkeypatch.setattr(adaptive, "REFIT_EVERY", refit_every)
    adaptive.forget(engine)
    real_choose = adaptive.AdaptiveEstimates.choose
    drawn: dict[int, float] = {}
    compared = 0

    def choose(self: adaptive.AdaptiveEstimates, candidates: Any, settings: Any, seed: int) -> Any:
        nonlocal compared
        pick = real_choose(self, candidates, settings, seed)
        if self.model.pending == 0:  # just refitted: the state fits every vote counted
            with Session(reader_engine(engine)) as s:
                cold = adaptive.AdaptiveEstimates(
                    self.study_id, self.kind, adaptive.item_players(s, self.study_id, self.kind)
                )
                cold.sync(s)
            assert cold.last_id == self.last_id
            assert cold.counted == self.counted
            np.testing.assert_allclose(cold.model.strength, self.model.strength, atol=1e-9)
            np.testing.assert_allclose(cold.model.variance, self.model.variance, rtol=1e-9)
            again = real_choose(cold, candidates, settings, seed)
            assert (again.item_id, again.probability, again.settled) == (
                pick.item_id,
                pick.probability,
                pick.settled,
            )
            compared += 1
        if pick.item_id is not None:
            drawn[pick.item_id] = pick.probability
        return pick

    monkeypatch.setattr(adaptive.AdaptiveEstimates, "choose", choose)
    session = VotingSession(engine, "ad-arena", "ada")
    shown: list[int] = []
    for k in range(36):
        item = session.current()
        if item is None:
            break
        shown.append(item.item_id)
        session.vote(("a", "b", "tie", "both_bad")[k % 4], 3000)
        if k % 9 == 4:
            assert session.undo()  # a removal in the counts; the item comes back
    assert len(shown) == 36
    assert not set(shown) & settled
    assert compared >= (36 if refit_every == 1 else 3)
    got = rows(
        db_path,
        """SELECT v.item_id, v.selection_probability FROM current_vote v
           JOIN annotator a ON a.id = v.annotator_id WHERE a.name = 'ada' ORDER BY v.id""",
    )
    assert len(got) == 36 - 4
    # each stored probability is that of the last draw that showed the item (an undone
    # item is shown again without a new draw and keeps its draw's probability)
    for item_id, probability in got:
        assert probability == drawn[item_id]
        assert 0 < probability <= 1
