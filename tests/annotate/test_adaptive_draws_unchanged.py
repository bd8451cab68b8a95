"""The adaptive schedule draws the same items, on the same sides, with the same recorded
probabilities, as the code before the session open was made fast (issue 13): the
sequences in :data:`EXPECTED` were recorded by running :func:`_scenario` with the code of
commit 16b8ebc (``python -m tests.annotate.test_adaptive_draws_unchanged`` prints them).

Each study is built with plain SQL (deterministic uuids, other annotators' votes with
changes of mind, undos, re-votes after an undo, skips and ties), then two annotators
open sessions and vote in turn (one undoes a vote), so the draws go through the cold
build of the estimates, the incremental reads of new rows, refits, the overlap cap
(full items leave the queue, reservations) and settled items. Every item shown is also
checked to be blind (no model name anywhere in what the screen gets) and literal (the
texts exactly as stored, on the sides the annotator's order says).
"""

from __future__ import annotations

import dataclasses
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.services import adaptive
from annotate.services.db import open_store
from annotate.services.voting import VotingSession
from annotate.store import repo
from annotate.study_settings import StudySettings
from annotate.views import ShownBattle, ShownPair

N_MODELS = 12
MODELS = [f"Model-{chr(65 + k)}{k}" for k in range(N_MODELS)]

CASES: dict[str, dict[str, Any]] = {
    # like benchmarks/bench_adaptive.py: overlap 5, a target width (nothing settled early)
    "arena-overlap": {"kind": "arena", "overlap": 5, "target_width": 5, "exploration": 0.2},
    # no cap, no target: the information gain, settled pairs left out
    "arena-free": {"kind": "arena", "overlap": 0, "target_width": 0, "exploration": 0.1},
    # question pairs, skips among the votes, a cap of 3
    "difficulty": {"kind": "difficulty", "overlap": 3, "target_width": 300, "exploration": 0.2},
}


def _uuid(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def _build(db: Path, case: dict[str, Any]) -> Engine:
    """The study ``s`` of ``case``, with other annotators' votes written by plain SQL."""
    rng = np.random.default_rng(20261123)
    kind = case["kind"]
    stored = StudySettings.from_dict(
        kind,
        {
            "schedule": "adaptive",
            "overlap": case["overlap"],
            "seed": 3,
            "target_width": case["target_width"],
            "exploration": case["exploration"],
            **({"reveal_models": False} if kind == "arena" else {}),
        },
    )
    engine = open_store(db)
    with Session(engine) as s, s.begin():
        sid = repo.insert_study(
            s, name="s", kind=kind, title="t", description="", settings=stored, fingerprint="f"
        )
        items: list[int] = []
        if kind == "arena":
            strength = rng.normal(0.0, 1.5, N_MODELS)
            sides: list[tuple[int, int]] = []
            for p in range(60):
                pid = repo.insert_prompt(
                    s, sid, f"p{p:03d}", f"Prompt {p}\n  *literal* [b]x[/b]", "c"
                )
                for m in range(N_MODELS):
                    repo.insert_response(s, pid, MODELS[m], f"answer {p}/{m} <tag> \\n")
                for _ in range(10):
                    a, b = (int(x) for x in rng.choice(N_MODELS, size=2, replace=False))
                    item = repo.insert_item(s, sid, f"b{len(items):04d}", len(items))
                    repo.insert_battle(s, item, pid, MODELS[a], MODELS[b])
                    items.append(item)
                    sides.append((a, b))
        else:
            qs = repo.insert_questions(
                s,
                sid,
                [
                    (f"q{k:02d}", ("math", "logic")[k % 2], f"Question {k}?\n[red]x[/red]", None)
                    for k in range(40)
                ],
            )
            strength = rng.normal(0.0, 1.5, 40)
            sides = []
            for k in range(300):
                a, b = (int(x) for x in rng.choice(20, size=2, replace=False))
                a, b = 2 * a + k % 2, 2 * b + k % 2  # the same subject
                item = repo.insert_item(s, sid, f"d{k:04d}", k)
                repo.insert_pair(s, item, qs[f"q{a:02d}"], qs[f"q{b:02d}"])
                items.append(item)
                sides.append((a, b))
    engine.dispose()
    con = sqlite3.connect(db)
    first, second = ("model_a", "model_b") if kind == "arena" else ("first", "second")
    rows: list[tuple[Any, ...]] = []
    heads: dict[tuple[int, int], int] = {}
    n = 0
    for k in range(30):
        cur = con.execute(
            "INSERT INTO annotator (name, created_at) VALUES (?, '2024-01-01 00:00:00')",
            (f"earlier-{k:02d}",),
        )
        ann = cur.lastrowid
        assert ann is not None
        for j in rng.choice(len(items), size=70, replace=False):
            a, b = sides[int(j)]
            p = 1.0 / (1.0 + np.exp(-(strength[a] - strength[b])))
            u = rng.random()
            choice = first if u < p * 0.9 else second if u < 0.9 else "tie"
            if kind == "arena" and u > 0.97:
                choice = "both_bad"
            if kind == "difficulty" and u > 0.95:
                choice = "skip"
            rows.append((n, ann, items[int(j)], choice, None))
            heads[(ann, items[int(j)])] = n
            n += 1
    # changes of mind, undos and votes again after an undo
    chains = list(heads.items())
    picks = rng.choice(len(chains), size=200, replace=False)
    for m, c in enumerate(picks):
        (ann, item), head = chains[int(c)]
        choice = "retract" if m % 3 == 0 else (first if m % 2 else second)
        rows.append((n, ann, item, choice, head))
        n += 1
        if m % 6 == 0:  # retracted, then voted again
            rows.append((n, ann, item, "tie" if kind == "arena" else "skip", n - 1))
            n += 1
    con.executemany(
        """INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice, swapped, fast,
                             created_at, supersedes, response_ms)
           VALUES (?, ?, ?, ?, ?, ?, 0, '2024-01-02 00:00:00', ?, 4000)""",
        [
            (_uuid(k), sid, ann, item, choice, k % 2, None if sup is None else _uuid(sup))
            for k, ann, item, choice, sup in rows
        ],
    )
    con.commit()
    con.close()
    return open_store(db)


def _check_shown(db: Path, kind: str, shown: ShownPair | ShownBattle) -> None:
    """Blind (no model name in anything the screen gets) and literal (texts as stored)."""
    con = sqlite3.connect(db)
    try:
        if kind == "arena":
            assert isinstance(shown, ShownBattle)
            prompt, ra, rb = con.execute(
                """SELECT p.text, ra.text, rb.text FROM battle b
                   JOIN prompt p ON p.id = b.prompt_id
                   JOIN modelresponse ra ON ra.prompt_id = p.id AND ra.model = b.model_a
                   JOIN modelresponse rb ON rb.prompt_id = p.id AND rb.model = b.model_b
                   WHERE b.item_id = ?""",
                (shown.item_id,),
            ).fetchone()
            want = (rb, ra) if shown.swapped else (ra, rb)
            assert (shown.response_left, shown.response_right) == want
            assert shown.prompt == prompt
            everything = repr(dataclasses.astuple(shown))
            assert not any(name in everything for name in MODELS)
        else:
            assert isinstance(shown, ShownPair)
            q1, q2 = con.execute(
                """SELECT a.text, b.text FROM questionpair p JOIN question a ON a.id = p.first_id
                   JOIN question b ON b.id = p.second_id WHERE p.item_id = ?""",
                (shown.item_id,),
            ).fetchone()
            left, right = (shown.right, shown.left) if shown.swapped else (shown.left, shown.right)
            assert (left.text, right.text) == (q1, q2)
    finally:
        con.close()


def _scenario(tmp: Path, name: str) -> list[tuple[str, str, bool, float]]:
    """Two annotators vote in turn (``alice`` undoes one vote); every item shown, in order:
    ``(annotator, item key, swapped, recorded selection probability)``."""
    case = CASES[name]
    db = tmp / f"{name}.db"
    engine = _build(db, case)
    adaptive.forget(engine)
    keys = ("a", "b", "tie") if case["kind"] == "arena" else ("left", "right", "skip")
    out: list[tuple[str, str, bool, float]] = []
    alice = VotingSession(engine, "s", "alice")
    bob = VotingSession(engine, "s", "bob")
    for k in range(45):
        for who, session in (("alice", alice), ("bob", bob)):
            if who == "bob" and k % 3:
                continue
            shown = session.current()
            if shown is None:
                continue
            _check_shown(db, case["kind"], shown)
            out.append(
                (who, shown.key, shown.swapped, float(session._selection.get(shown.item_id, -1.0)))
            )
            session.vote(keys[k % 3], 4000)
            if who == "alice" and k == 12:
                assert session.undo()
    adaptive.forget(engine)
    engine.dispose()
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_items_are_drawn_as_before(tmp_path: Path, name: str) -> None:
    got = _scenario(tmp_path, name)
    want = EXPECTED[name]
    assert [g[:3] for g in got] == [w[:3] for w in want]
    for g, w in zip(got, want, strict=True):
        assert g[3] == pytest.approx(w[3], rel=1e-12, abs=0)


def test_vote_outcomes_are_four_columns_of_the_vote_rows(tmp_path: Path) -> None:
    """The schedule's read (``repo.vote_outcomes_after``) gives columns 0, 1, 3 and 7 of
    ``repo.vote_rows_after`` (the monitor's), changes of mind and undos included."""
    engine = _build(tmp_path / "v.db", CASES["difficulty"])
    with Session(engine) as s:
        study = repo.get_study(s, "s")
        assert study is not None
        for after in (0, 1500):
            rows = repo.vote_rows_after(s, study.id, after)
            assert any(r[7] for r in rows)
            assert repo.vote_outcomes_after(s, study.id, after) == [
                (r[0], r[1], r[3], r[7]) for r in rows
            ]
    engine.dispose()


EXPECTED: dict[str, list[tuple[str, str, bool, float]]] = {
    "arena-free": [
        ("alice", "b0096", False, 0.22621951219512196),
        ("bob", "b0243", False, 0.22621951219512196),
        ("alice", "b0243", False, 0.22623456790123458),
        ("alice", "b0520", True, 0.22625),
        ("alice", "b0444", False, 0.22626582278481014),
        ("bob", "b0367", True, 0.22623456790123458),
        ("alice", "b0562", True, 0.22628205128205128),
        ("alice", "b0279", False, 0.2262987012987013),
        ("alice", "b0367", False, 0.22631578947368422),
        ("bob", "b0444", True, 0.22625),
        ("alice", "b0121", True, 0.22633333333333333),
        ("alice", "b0548", True, 0.22635135135135137),
        ("alice", "b0241", True, 0.22636986301369863),
        ("bob", "b0052", False, 0.22626582278481014),
        ("alice", "b0495", False, 0.2263888888888889),
        ("alice", "b0480", False, 0.22640845070422536),
        ("alice", "b0280", True, 0.22642857142857142),
        ("bob", "b0562", False, 0.22628205128205128),
        ("alice", "b0280", True, 0.22642857142857142),
        ("alice", "b0052", False, 0.22644927536231885),
        ("alice", "b0218", False, 0.22647058823529412),
        ("bob", "b0520", True, 0.2262987012987013),
        ("alice", "b0098", False, 0.22649253731343283),
        ("alice", "b0250", True, 0.22651515151515153),
        ("alice", "b0034", False, 0.22653846153846155),
        ("bob", "b0548", True, 0.22631578947368422),
        ("alice", "b0496", False, 0.2265625),
        ("alice", "b0111", False, 0.2265873015873016),
        ("alice", "b0308", True, 0.22661290322580646),
        ("bob", "b0121", True, 0.22633333333333333),
        ("alice", "b0002", True, 0.001639344262295082),
        ("alice", "b0023", False, 0.22666666666666668),
        ("alice", "b0112", True, 0.2266949152542373),
        ("bob", "b0279", True, 0.22635135135135137),
        ("alice", "b0028", True, 0.2267241379310345),
        ("alice", "b0155", True, 0.2267543859649123),
        ("alice", "b0184", False, 0.22678571428571428),
        ("bob", "b0098", True, 0.22636986301369863),
        ("alice", "b0269", True, 0.22681818181818184),
        ("alice", "b0251", True, 0.22685185185185186),
        ("alice", "b0196", False, 0.2268867924528302),
        ("bob", "b0218", False, 0.2263888888888889),
        ("alice", "b0542", True, 0.22692307692307692),
        ("alice", "b0033", False, 0.2269607843137255),
        ("alice", "b0212", False, 0.227),
        ("bob", "b0495", False, 0.22640845070422536),
        ("alice", "b0047", False, 0.22704081632653061),
        ("alice", "b0287", False, 0.22708333333333333),
        ("alice", "b0202", True, 0.2271276595744681),
        ("bob", "b0250", True, 0.22642857142857142),
        ("alice", "b0198", True, 0.22717391304347825),
        ("alice", "b0260", True, 0.22722222222222221),
        ("alice", "b0470", True, 0.22727272727272727),
        ("bob", "b0096", True, 0.22644927536231885),
        ("alice", "b0021", False, 0.22732558139534884),
        ("alice", "b0109", True, 0.22738095238095238),
        ("alice", "b0114", False, 0.2274390243902439),
        ("bob", "b0241", True, 0.22647058823529412),
        ("alice", "b0311", False, 0.2275),
        ("alice", "b0075", False, 0.22756410256410256),
    ],
    "arena-overlap": [
        ("alice", "b0426", True, 0.20043956043956046),
        ("bob", "b0342", True, 0.20043956043956046),
        ("alice", "b0052", False, 0.20044052863436124),
        ("alice", "b0342", True, 0.20044150110375278),
        ("alice", "b0119", True, 0.2004424778761062),
        ("bob", "b0052", False, 0.20044052863436124),
        ("alice", "b0096", False, 0.20044345898004437),
        ("alice", "b0279", False, 0.20044444444444445),
        ("alice", "b0121", True, 0.200445434298441),
        ("bob", "b0294", True, 0.20044150110375278),
        ("alice", "b0520", True, 0.20044642857142858),
        ("alice", "b0241", True, 0.20044843049327354),
        ("alice", "b0562", True, 0.2004494382022472),
        ("bob", "b0279", True, 0.2004424778761062),
        ("alice", "b0540", True, 0.20045045045045046),
        ("alice", "b0382", True, 0.00045146726862302486),
        ("alice", "b0040", True, 0.20045248868778281),
        ("bob", "b0014", False, 0.0004434589800443459),
        ("alice", "b0040", True, 0.20045248868778281),
        ("alice", "b0070", True, 0.00045351473922902497),
        ("alice", "b0167", True, 0.20045454545454547),
        ("bob", "b0426", True, 0.20044444444444445),
        ("alice", "b0224", True, 0.00045558086560364467),
        ("alice", "b0213", False, 0.2004566210045662),
        ("alice", "b0536", True, 0.0004576659038901602),
        ("bob", "b0159", True, 0.00044543429844097997),
        ("alice", "b0089", True, 0.20045871559633027),
        ("alice", "b0433", True, 0.20045977011494254),
        ("alice", "b0035", True, 0.20046082949308758),
        ("bob", "b0232", False, 0.00044642857142857147),
        ("alice", "b0043", True, 0.0004618937644341802),
        ("alice", "b0247", True, 0.000462962962962963),
        ("alice", "b0217", True, 0.20046403712296984),
        ("bob", "b0025", False, 0.00044742729306487697),
        ("alice", "b0020", False, 0.20046511627906977),
        ("alice", "b0548", True, 0.20046620046620048),
        ("alice", "b0385", False, 0.20046728971962618),
        ("bob", "b0548", True, 0.20044843049327354),
        ("alice", "b0344", True, 0.20046838407494147),
        ("alice", "b0306", True, 0.0004694835680751174),
        ("alice", "b0254", True, 0.20047058823529412),
        ("bob", "b0119", True, 0.2004494382022472),
        ("alice", "b0261", False, 0.20047169811320756),
        ("alice", "b0451", False, 0.2004728132387707),
        ("alice", "b0554", True, 0.00047393364928909954),
        ("bob", "b0121", True, 0.20045045045045046),
        ("alice", "b0150", False, 0.20047505938242283),
        ("alice", "b0262", True, 0.20047619047619047),
        ("alice", "b0493", False, 0.20047732696897375),
        ("bob", "b0520", True, 0.20045146726862303),
        ("alice", "b0126", False, 0.20047846889952153),
        ("alice", "b0555", True, 0.00047961630695443646),
        ("alice", "b0462", False, 0.0004807692307692308),
        ("bob", "b0096", True, 0.20045248868778281),
        ("alice", "b0218", False, 0.2004819277108434),
        ("alice", "b0496", False, 0.20048309178743962),
        ("alice", "b0173", True, 0.00048426150121065375),
        ("bob", "b0213", True, 0.20045454545454547),
        ("alice", "b0034", False, 0.2004854368932039),
        ("alice", "b0480", False, 0.2004866180048662),
    ],
    "difficulty": [
        ("alice", "d0095", True, 0.2285714285714286),
        ("bob", "d0245", True, 0.2285714285714286),
        ("alice", "d0199", False, 0.23333333333333334),
        ("alice", "d0245", False, 0.24000000000000002),
        ("alice", "d0033", False, 0.25),
        ("bob", "d0156", True, 0.24000000000000002),
        ("alice", "d0022", False, 0.5),
        ("bob", "d0117", False, 0.25),
    ],
}
"""Recorded with the code of commit 16b8ebc (before the open was made fast), by
``python -m tests.annotate.test_adaptive_draws_unchanged``."""


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        print("EXPECTED: dict[str, list[tuple[str, str, bool, float]]] = {")
        for case_name in sorted(CASES):
            print(f"    {case_name!r}: [")
            for row in _scenario(Path(tmp), case_name):
                print(f"        {row!r},")
            print("    ],")
        print("}")
