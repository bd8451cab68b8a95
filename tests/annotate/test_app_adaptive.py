"""The adaptive schedule in the app (issue 16 item 3): a study with ``schedule =
"adaptive"`` still votes through the screens, never shows a settled item, stores each
vote's selection probability, and the key gate still drops a double tap."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from sqlalchemy import Engine
from textual import events

from annotate.app import make_app
from annotate.screens.battle import BattleScreen
from annotate.services import adaptive
from annotate.services.importing import import_paths
from tests.annotate.conftest import ROOT, press, rows, settle, start

SIZE = (100, 32)
DECIDED = ("Aurora-13B", "Basalt-2")
"""The model pair whose battles are settled before the annotator starts."""


def _adaptive_study(tmp_path: Path, engine: Engine, extra: str) -> None:
    """The demo arena as ``ad-arena`` with the adaptive schedule (and ``extra`` settings)."""
    folder = tmp_path / "ad-arena"
    shutil.copytree(ROOT / "question_pairs/demo/arena", folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    toml = toml.replace('name = "demo-arena"', 'name = "ad-arena"')
    toml = toml.replace("[settings]\n", f'[settings]\nschedule = "adaptive"\n{extra}')
    (folder / "study.toml").write_text(toml, encoding="utf-8")
    import_paths(engine, [folder])


def _settle_pair(db_path: Path) -> set[int]:
    """Four votes by other annotators on every battle of :data:`DECIDED`, all for the first
    model: its outcome is decided (the battles still have a free slot under overlap 5)."""
    con = sqlite3.connect(db_path)
    try:
        items = [
            i
            for (i,) in con.execute(
                """SELECT i.id FROM item i JOIN battle b ON b.item_id = i.id
                   JOIN study s ON s.id = i.study_id WHERE s.name = 'ad-arena'
                   AND ((b.model_a = ? AND b.model_b = ?) OR (b.model_a = ? AND b.model_b = ?))""",
                (*DECIDED, *reversed(DECIDED)),
            )
        ]
        study = con.execute("SELECT id FROM study WHERE name = 'ad-arena'").fetchone()[0]
        for k in range(4):
            cur = con.execute(
                "INSERT INTO annotator (name, created_at) VALUES (?, '2024-01-01 00:00:00')",
                (f"earlier-{k}",),
            )
            for item in items:
                (model_a,) = con.execute(
                    "SELECT model_a FROM battle WHERE item_id = ?", (item,)
                ).fetchone()
                choice = "model_a" if model_a == DECIDED[0] else "model_b"
                con.execute(
                    """INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice, swapped,
                                         fast, created_at)
                       VALUES (?, ?, ?, ?, ?, 0, 0, '2024-01-01 00:00:00')""",
                    (f"e-{k}-{item}", study, cur.lastrowid, item, choice),
                )
        con.commit()
    finally:
        con.close()
    return set(items)


async def test_adaptive_study_votes_records_probabilities_and_skips_settled(
    tmp_path: Path, engine: Engine, db_path: Path
) -> None:
    _adaptive_study(tmp_path, engine, "exploration = 0.2\n")
    settled = _settle_pair(db_path)
    assert len(settled) >= 8
    adaptive.forget(engine)
    app = make_app(engine=engine, annotator="ada", study="ad-arena")
    shown: list[int] = []
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        screen = app.screen
        assert isinstance(screen, BattleScreen)
        for key in ("a", "b", "t", "x") * 5:
            if screen.shown is None:
                break
            shown.append(screen.shown.item_id)
            await press(pilot, key)
        # the key gate: a double tap casts one vote
        before = len(
            rows(
                db_path,
                "SELECT 1 FROM vote v JOIN annotator a ON a.id = "
                "v.annotator_id WHERE a.name = 'ada'",
            )
        )
        for key in "aa":
            app.post_message(events.Key(key, key))
        await settle(pilot)
    assert len(shown) == 20
    assert not set(shown) & settled, "a settled battle was shown"
    got = rows(
        db_path,
        """SELECT v.item_id, v.selection_probability FROM vote v
           JOIN annotator a ON a.id = v.annotator_id WHERE a.name = 'ada' ORDER BY v.id""",
    )
    assert len(got) == before + 1
    assert [i for i, _ in got[:20]] == shown
    assert all(p is not None and 0 < p <= 1 for _, p in got)
    # no item holds more current votes than the overlap allows (reservations still apply)
    over = rows(
        db_path,
        "SELECT item_id FROM current_vote GROUP BY item_id HAVING count(*) > 5",
    )
    assert over == []


async def test_a_study_whose_target_is_reached_has_nothing_left(
    tmp_path: Path, engine: Engine, db_path: Path
) -> None:
    """With a target width every interval already meets, every item is settled: the
    annotator is told the study is finished and nothing is shown."""
    _adaptive_study(tmp_path, engine, "target_width = 100000\n")
    adaptive.forget(engine)
    app = make_app(engine=engine, annotator="bob", study="ad-arena")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert not isinstance(app.screen, BattleScreen) or app.screen.shown is None
    assert rows(db_path, "SELECT count(*) FROM vote") == [(0,)]
