"""Concurrency on PostgreSQL (issue 17): annotator processes voting at once through
:class:`VotingSession` against one PostgreSQL database serialise on the server's
advisory writer lock (no file lock): no acknowledged vote is lost or duplicated, no vote
is refused, one current vote per annotator and item, and an overlap cap holds.

CI sizes (20 processes x 25 votes; the capped study 20 x 4);
``benchmarks/bench_backends.py`` runs 20 x 500 on both back ends.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession
from tests.annotate.test_trust_concurrency import KEYS, make_arena

PROCS = 20


def voter(args: tuple[str, str, int, float]) -> dict[str, object]:
    """One annotator process: ``n`` votes, every fifth one undone and voted again."""
    url, name, n, start_at = args
    engine = open_store(url)
    session = VotingSession(engine, "pg-arena", name)
    while time.time() < start_at:
        time.sleep(0.002)
    receipts: list[str] = []
    undone = 0
    refused: list[str] = []
    for i in range(n):
        if session.current() is None:
            break
        try:
            receipts.append(session.vote(KEYS[i % 4], 1000).vote_uuid)
        except Exception as err:  # counted and reported by the test
            refused.append(f"{type(err).__name__}: {err}")
            continue
        if i % 5 == 4 and session.undo():
            undone += 1
            if session.current() is not None:
                receipts.append(session.vote("a", 1000).vote_uuid)
    session.release()
    engine.dispose()
    return {"receipts": receipts, "undone": undone, "refused": refused}


@pytest.mark.parametrize(
    ("overlap", "votes", "battles"), [(0, 25, 30), (3, 4, 20)], ids=["20x25", "capped-20x4"]
)
def test_concurrent_voters_on_postgres(
    tmp_path: Path, pg_url: str, overlap: int, votes: int, battles: int
) -> None:
    engine = open_store(pg_url)
    import_paths(engine, [make_arena(tmp_path / "s", "pg-arena", battles, overlap=overlap)])
    engine.dispose()
    start_at = time.time() + 1.0
    jobs = [(pg_url, f"p{i:02d}", votes, start_at) for i in range(PROCS)]
    ctx = mp.get_context("fork" if sys.platform == "linux" else "spawn")
    with ctx.Pool(PROCS) as pool:
        results = pool.map(voter, jobs, chunksize=1)
    receipts = [str(u) for r in results for u in r["receipts"]]  # type: ignore[attr-defined]
    refused = [str(u) for r in results for u in r["refused"]]  # type: ignore[attr-defined]
    undone = sum(int(r["undone"]) for r in results)  # type: ignore[call-overload]
    assert refused == [], refused[:3]
    engine = open_store(pg_url)
    try:
        with engine.connect() as c:
            uuids = [r[0] for r in c.execute(text("SELECT uuid FROM vote"))]
            per_item = dict(
                c.execute(text("SELECT item_id, count(*) FROM current_vote GROUP BY item_id")).all()
            )
            dup_current = c.execute(
                text(
                    "SELECT count(*) FROM (SELECT annotator_id, item_id FROM current_vote "
                    "GROUP BY annotator_id, item_id HAVING count(*) > 1) AS d"
                )
            ).scalar_one()
            holds = c.execute(text("SELECT count(*) FROM reservation")).scalar_one()
    finally:
        engine.dispose()
    assert set(receipts) <= set(uuids)  # 0 lost
    assert len(uuids) == len(set(uuids)) == len(receipts) + undone  # 0 duplicated
    assert dup_current == 0
    assert sum(per_item.values()) == len(receipts) - undone
    if overlap:
        assert max(per_item.values()) <= overlap, per_item  # never over the cap
    else:
        assert len(receipts) - undone == PROCS * votes  # every annotator voted every time
    assert holds == 0
