"""A large import of vote tables checks the votes' foreign keys itself (issue 13).

With ``PRAGMA foreign_keys=OFF`` for its transaction (set before ``BEGIN``, set back
after it on every exit), the import compares the study, annotator and item ids it
planned with the stored ones instead of SQLite looking each up per row. The rows, the
report and the one-line errors are the per-row path's (which keeps SQLite's checks);
``PRAGMA foreign_key_check`` (SQLite's own check of every row) finds nothing afterwards;
a vote naming a parent that is not stored is refused and the database left unchanged.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from annotate.errors import AnnotateError
from annotate.services import importing
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.store import repo
from tests.annotate import test_import_fast
from tests.annotate.test_import_fast import BAD, GOOD, HEAD, both, row


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """test_import_fast's database: the tiny studies, a legacy annotator name."""
    path: Path = test_import_fast.base.__wrapped__(tmp_path)  # type: ignore[attr-defined]
    return path


@pytest.fixture(autouse=True)
def own_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every import of a vote table takes the own-foreign-key path; records the
    connection's ``foreign_keys`` at each bulk insert."""
    monkeypatch.setattr(importing, "OWN_FOREIGN_KEYS_MIN_ROWS", 0)
    monkeypatch.setattr(repo, "BULK_REINDEX_MIN_ROWS", 0)
    seen: list[int] = []
    insert = repo.bulk_insert_vote_batches

    def spy(session: Any, *args: Any, **kwargs: Any) -> int:
        seen.append(int(repo.foreign_keys_enforced(session)))
        return insert(session, *args, **kwargs)

    monkeypatch.setattr(repo, "bulk_insert_vote_batches", spy)
    return seen


def fk_clean(db: Path) -> None:
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        con.close()


@pytest.mark.parametrize("case", sorted(GOOD))
def test_good_files_import_as_with_sqlites_checks(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, own_checks: list[int], case: str
) -> None:
    fast, slow, taken = both(tmp_path, base, GOOD[case], monkeypatch)
    assert taken
    assert "error" not in fast, fast
    assert fast == slow
    assert own_checks == [0], "the bulk insert ran without SQLite's per-row checks"
    fk_clean(tmp_path / "fast.db")


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_files_give_the_same_error_and_leave_the_database_unchanged(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    fast, slow, _ = both(tmp_path, base, BAD[case], monkeypatch)
    assert fast == slow
    fk_clean(tmp_path / "fast.db")


def digest(db: Path) -> str:
    """The content of every table (the database "unchanged" means the same digest)."""
    con = sqlite3.connect(db)
    try:
        h = hashlib.sha256()
        names = [n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for name in sorted(names):
            for r in con.execute(f'SELECT * FROM "{name}" ORDER BY rowid'):
                h.update(repr(r).encode())
        return h.hexdigest()
    finally:
        con.close()


@pytest.mark.parametrize("outcome", ["imported", "refused"])
def test_foreign_keys_are_back_on_after_the_import(
    tmp_path: Path, base: Path, own_checks: list[int], outcome: str
) -> None:
    """Whatever the import's outcome, the engine's connections enforce foreign keys."""
    text = (
        GOOD["chains"]
        if outcome == "imported"
        else HEAD
        + row(1, "tiny", "ann", "p1", "first", "", "", "", "", "")
        + row(2, "tiny", "ann", "p9", "first", "", "", "", "", "")  # unknown item
    )
    csv = tmp_path / "votes.csv"
    csv.write_text(text, encoding="utf-8")
    engine = open_store(base)
    before = digest(base)
    try:
        if outcome == "imported":
            assert import_paths(engine, [csv]).votes_added == 7
            assert own_checks == [0]
        else:
            with pytest.raises(AnnotateError, match=r"votes.csv:3: field .item_id.: unknown item"):
                import_paths(engine, [csv])
            assert digest(base) == before
        for _ in range(3):  # the pool hands the import's connection out again
            with engine.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
    finally:
        engine.dispose()
    fk_clean(base)


@pytest.mark.parametrize("parent", ["item", "annotator"])
def test_a_vote_naming_a_missing_parent_is_refused(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, parent: str
) -> None:
    """Were the planned ids wrong (here: made wrong on purpose), the import's own check
    refuses them, where SQLite's foreign keys would have refused the insert."""
    if parent == "item":
        real = repo.item_ids
        monkeypatch.setattr(repo, "item_ids", lambda s, sid: {k: 9999 for k in real(s, sid)})
    else:
        real_ann = repo.annotator_ids
        monkeypatch.setattr(repo, "annotator_ids", lambda s, n: [8888 for _ in real_ann(s, n)])
    db = tmp_path / "x.db"
    shutil.copy(base, db)
    before = digest(db)
    csv = tmp_path / "votes.csv"
    csv.write_text(GOOD["chains"], encoding="utf-8")
    engine = open_store(db)
    try:
        with pytest.raises(AnnotateError, match=rf"{parent} #(9999|8888).*not in the database"):
            import_paths(engine, [csv])
    finally:
        engine.dispose()
    assert digest(db) == before


def test_missing_vote_parents_names_the_first_missing_id(base: Path) -> None:
    """The set comparison against what is stored (the ids read with sqlite3 here)."""
    con = sqlite3.connect(base)
    (sid,) = con.execute("SELECT id FROM study WHERE name = 'tiny'").fetchone()
    (other,) = con.execute("SELECT id FROM study WHERE name = 'tiny-arena'").fetchone()
    items = [i for (i,) in con.execute("SELECT id FROM item WHERE study_id = ?", (sid,))]
    sql = "SELECT min(id) FROM item WHERE study_id = ?"
    (foreign_item,) = con.execute(sql, (other,)).fetchone()
    anns = [a for (a,) in con.execute("SELECT id FROM annotator")]
    con.close()
    engine = open_store(base)
    from sqlmodel import Session

    try:
        with Session(engine) as s:
            assert repo.missing_vote_parents(s, sid, anns * 2, items * 2) is None
            assert repo.missing_vote_parents(s, 999, anns, items) == "study #999"
            assert repo.missing_vote_parents(s, sid, [*anns, 777, 776], items) == "annotator #776"
            assert (
                repo.missing_vote_parents(s, sid, anns, [*items, foreign_item])
                == f"item #{foreign_item} of study #{sid}"
            )
    finally:
        engine.dispose()


def test_made_ahead_keeps_order_and_raises_the_workers_error() -> None:
    """The packing thread of the bulk insert: the same items in order; an error in the
    worker comes out in the caller; a caller that stops early stops the worker."""
    import threading

    assert list(importing._made_ahead(iter(range(50)))) == list(range(50))

    def failing() -> Any:
        yield 1
        raise ValueError("bad batch")

    got: list[Any] = []

    def consume_failing() -> None:
        for x in importing._made_ahead(failing()):
            got.append(x)

    with pytest.raises(ValueError, match="bad batch"):
        consume_failing()
    assert got == [1]
    made: list[int] = []

    def endless() -> Any:
        k = 0
        while True:
            made.append(k)
            yield k
            k += 1

    def consume_endless() -> None:
        for x in importing._made_ahead(endless()):
            if x == 3:
                raise RuntimeError("the insert failed")

    with pytest.raises(RuntimeError):
        consume_endless()
    assert not any(t.name == "annotate-pack-votes" for t in threading.enumerate())
    assert len(made) <= 6  # at most one made ahead, one waiting
