"""Issue 9, items 3 and 7: the overlap cap under concurrency, and imports queue with voters.

Twenty processes vote through :class:`VotingSession` (the code path of the voting
screens) on an arena study capped at three annotators per battle, with and without
reading time, undoing now and then: no battle ends with more than three current votes,
no acknowledged vote is lost or duplicated, and no vote is refused. Twenty concurrent
``annotate import`` processes then queue on the writer lock instead of failing with
"database is locked". Sizes are a CI size (about a minute on two cores);
``benchmarks/bench_concurrency.py`` runs the larger one.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession

PROCS = 20
VOTES = 4
OVERLAP = 3
BATTLES = 20
KEYS = ("a", "b", "tie", "both_bad")


def make_arena(folder: Path, name: str, n: int, *, overlap: int) -> Path:
    """An arena study of ``n`` battles (four models) that allows undo (no reveal)."""
    folder.mkdir(parents=True)
    (folder / "study.toml").write_text(
        f'name = "{name}"\nkind = "arena"\n\n[settings]\noverlap = {overlap}\nseed = 0\n'
        "min_response_ms = 0\nreveal_models = false\n",
        encoding="utf-8",
    )
    models = ("m0", "m1", "m2", "m3")
    with (folder / "prompts.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"p{i}", "text": f"prompt {i}", "category": "c"}) + "\n")
    with (folder / "responses.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            for m in models:
                fh.write(json.dumps({"prompt_id": f"p{i}", "model": m, "text": f"{m} on {i}"}))
                fh.write("\n")
    with (folder / "battles.csv").open("w", encoding="utf-8") as fh:
        fh.write("battle_id,prompt_id,model_a,model_b\n")
        for i in range(n):
            fh.write(f"b{i},p{i},{models[i % 4]},{models[(i + 1) % 4]}\n")
    return folder


def voter(args: tuple[str, str, int, float, float, int]) -> dict[str, object]:
    """One annotator process: vote ``n`` times, undo and vote again every third vote."""
    db, name, n, think, start_at, seed = args
    rng = random.Random(seed)
    engine = open_store(Path(db))
    session = VotingSession(engine, "cap-arena", name)
    while time.time() < start_at:
        time.sleep(0.002)
    receipts: list[str] = []
    undone = 0
    refused = 0
    for i in range(n):
        if session.current() is None:
            break
        if think:
            time.sleep(rng.uniform(0, think))
        try:
            receipts.append(session.vote(KEYS[i % 4], 1000).vote_uuid)
        except Exception as err:  # counted and reported by the test
            refused += 1
            receipts.append(f"refused: {err}")
            continue
        if i % 3 == 2 and session.undo():
            undone += 1
            if session.current() is not None:
                receipts.append(session.vote("a", 1000).vote_uuid)
    session.release()
    engine.dispose()
    return {"receipts": receipts, "undone": undone, "refused": refused}


def run_voters(db: Path, think: float) -> None:
    start_at = time.time() + 1.5
    jobs = [(str(db), f"p{i:02d}", VOTES, think, start_at, i) for i in range(PROCS)]
    # fork: the children start voting at once instead of each importing the app
    # (twenty imports at once take most of a minute on two cores); each opens its own engine.
    ctx = mp.get_context("fork" if sys.platform == "linux" else "spawn")
    with ctx.Pool(PROCS) as pool:
        results = pool.map(voter, jobs, chunksize=1)
    receipts = [str(u) for r in results for u in r["receipts"]]  # type: ignore[attr-defined]
    undone = sum(int(r["undone"]) for r in results)  # type: ignore[call-overload]
    refused = [u for u in receipts if u.startswith("refused")]
    assert refused == [], refused[:3]
    con = sqlite3.connect(db)
    try:
        uuids = [r[0] for r in con.execute("SELECT uuid FROM vote")]
        per_item = dict(
            con.execute(
                "SELECT item_id, count(*) FROM current_vote v JOIN study s ON s.id = v.study_id "
                "WHERE s.name = 'cap-arena' GROUP BY item_id"
            ).fetchall()
        )
        current = sum(per_item.values())
        dup_current = con.execute(
            "SELECT count(*) FROM (SELECT annotator_id, item_id FROM current_vote "
            "GROUP BY annotator_id, item_id HAVING count(*) > 1)"
        ).fetchone()[0]
        holds = con.execute("SELECT count(*) FROM reservation").fetchone()[0]
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()
    assert max(per_item.values()) <= OVERLAP, per_item  # never over the cap
    assert set(receipts) <= set(uuids)  # 0 lost
    assert len(uuids) == len(set(uuids))  # 0 duplicated
    assert dup_current == 0
    assert current == len(receipts) - undone
    assert current >= BATTLES * OVERLAP // 2  # the voters did work through the study
    assert holds == 0  # every session released its hold when it left
    assert integrity == "ok"


@pytest.mark.parametrize("think", [0.0, 0.15], ids=["no-think-time", "think-time"])
def test_overlap_cap_holds_with_20_concurrent_voters(tmp_path: Path, think: float) -> None:
    db = tmp_path / "cap.db"
    engine = open_store(db)
    import_paths(engine, [make_arena(tmp_path / "cap", "cap-arena", BATTLES, overlap=OVERLAP)])
    engine.dispose()
    run_voters(db, think)


def test_20_concurrent_imports_queue_with_each_other(tmp_path: Path) -> None:
    db = tmp_path / "imports.db"
    open_store(db).dispose()
    shared = make_arena(tmp_path / "shared", "shared-arena", 200, overlap=0)
    folders = [make_arena(tmp_path / f"s{k}", f"own-{k:02d}", 200, overlap=0) for k in range(20)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "annotate", "import", "--db", str(db), str(shared), str(f)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for f in folders
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert "Traceback" not in err, err
        assert "locked" not in err, err
        assert p.returncode == 0, err
    con = sqlite3.connect(db)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM study ORDER BY name")]
        items = con.execute("SELECT count(*) FROM item").fetchone()[0]
    finally:
        con.close()
    assert names == [f"own-{k:02d}" for k in range(20)] + ["shared-arena"]
    assert items == 21 * 200
