"""Migration 010: the partial index ``ix_vote_retest`` (``(study_id, id, retest_of) WHERE
retest_of IS NOT NULL``), issue 13.

The report's re-test agreement (``repo.retest_choices``), the export of re-tests
(``repo.retest_records``), the voting session's re-test lookups and the vote cache's count
(``repo.vote_rows_through``) read a study's re-test rows through it instead of every vote
of the study. Checked here: the plans use it (SQLite's ``EXPLAIN QUERY PLAN``), and the
answers are those of the queries as they were before it, on random vote tables with
re-test chains (superseded and retracted re-tests, re-tests whose original was retracted
or changed, several studies). Two references: the same functions on a copy of the
database without the index (the plan of the versions before 010: every vote of the
study read), and the rules of the ``current_vote`` view written out in Python; for
``vote_rows_through``, its SQL before 010 (a ``sum`` over the rows) verbatim. The report's
gold accuracy (``repo.gold_votes``), rewritten to seek the gold items on
``ix_vote_study_item`` instead of reading the study's votes, is compared with its SQL
before (verbatim) the same way. A database
from before 010 gets the index on first open, its votes kept. The PostgreSQL schema is
compared by tests/store/test_backends.py.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, event
from sqlmodel import Session

from annotate.services.db import open_store
from annotate.store import repo
from annotate.store.engine import make_engine
from annotate.store.migrations import applied

INDEX_SQL = (
    "CREATE INDEX ix_vote_retest ON vote (study_id, id, retest_of) WHERE retest_of IS NOT NULL"
)

OLD_GOLD_VOTES = """SELECT v.annotator_id, v.item_id, v.choice, g.answer FROM current_vote v
               JOIN goldanswer g ON g.item_id = v.item_id
               WHERE v.study_id = ? ORDER BY v.id"""
"""``repo.gold_votes`` before issue 13's rewrite, verbatim (every vote of the study read)."""

OLD_VOTE_ROWS_THROUGH = (
    "SELECT count(*), coalesce(sum(CASE WHEN retest_of IS NULL THEN 1 ELSE 0 END), 0) "
    "FROM vote WHERE study_id = ? AND id <= ?"
)
"""``repo.vote_rows_through`` before 010, verbatim (the reference for its answer)."""


def _index_sql(con: sqlite3.Connection) -> str | None:
    row = con.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'ix_vote_retest'"
    ).fetchone()
    return None if row is None else " ".join(str(row[0]).split())


# --- random vote tables with re-test chains -----------------------------------------------


@dataclass
class Row:
    id: int
    uuid: str
    study: int
    annotator: int
    item: int
    choice: str
    supersedes: str | None
    retest_of: str | None


CHOICES = ("first", "second", "skip")

# One step: (study, annotator, item index, chain: 0 original / 1 re-test, action:
# 0 vote or change, 1 retract, 2 a re-test whose retest_of names no stored vote)
_STEP = st.tuples(
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(0, 3),
    st.integers(0, 1),
    st.integers(0, 2),
    st.sampled_from(CHOICES),
)


def _build(con: sqlite3.Connection, steps: list[tuple[int, int, int, int, int, str]]) -> list[Row]:
    """Store three studies of four items, four annotators, and the vote rows the steps
    make: each (annotator, item) has at most one original chain and one re-test chain
    (the unique indexes), a new row supersedes its chain's head, a retraction is a row
    like any other. Re-tests name the original's root vote, or (action 2, as a hand-made
    file may) a uuid that is not stored."""
    with con:
        for s in (1, 2, 3):
            con.execute(
                "INSERT INTO study (id, name, kind, title, description, settings_json, "
                "fingerprint, created_at) VALUES (?, ?, 'difficulty', '', '', '{}', '', "
                "'2025-01-01')",
                (s, f"s{s}"),
            )
            for k in range(4):
                con.execute(
                    "INSERT INTO item (id, study_id, key, position) VALUES (?, ?, ?, ?)",
                    (s * 10 + k, s, f"p{k}", k),
                )
        for a in (1, 2, 3, 4):
            con.execute(
                "INSERT INTO annotator (id, name, created_at) VALUES (?, ?, '2025-01-01')",
                (a, f"a{a}"),
            )
    out: list[Row] = []
    heads: dict[tuple[int, int, int], Row] = {}
    roots: dict[tuple[int, int], Row] = {}
    for n, (study, ann, k, chain, action, choice) in enumerate(steps, start=1):
        item = study * 10 + k
        head = heads.get((ann, item, chain))
        retest_of = None
        if chain:
            root = roots.get((ann, item))
            if action == 2 and head is None:
                retest_of = f"missing-{n}"
            elif head is not None:
                retest_of = head.retest_of
            elif root is not None:
                retest_of = root.uuid
            else:
                continue  # nothing to re-test yet
        if action == 1:
            if head is None or head.choice == "retract":
                continue
            choice = "retract"
        row = Row(
            n, f"u{n}", study, ann, item, choice, None if head is None else head.uuid, retest_of
        )
        out.append(row)
        heads[(ann, item, chain)] = row
        if not chain and head is None:
            roots[(ann, item)] = row
    with con:  # gold answers on some items of each study (item p1 and, in study 2, p3)
        con.executemany(
            "INSERT INTO goldanswer (item_id, answer) VALUES (?, 'second')", [(11,), (21,), (23,)]
        )
        con.executemany(
            "INSERT INTO vote (id, uuid, study_id, annotator_id, item_id, choice, swapped, "
            "fast, created_at, supersedes, retest_of) VALUES (?, ?, ?, ?, ?, ?, ?, 0, "
            "'2025-01-01 00:00:00', ?, ?)",
            [_values(r) for r in out],
        )
    return out


def _values(r: Row) -> tuple[object, ...]:
    swapped = r.id % 2
    return (
        r.id,
        r.uuid,
        r.study,
        r.annotator,
        r.item,
        r.choice,
        swapped,
        r.supersedes,
        r.retest_of,
    )


def _current(rows: list[Row]) -> list[Row]:
    """The ``current_vote`` rule written out, for both kinds of chain: not a retraction and
    not superseded."""
    replaced = {r.supersedes for r in rows if r.supersedes is not None}
    return [r for r in rows if r.choice != "retract" and r.uuid not in replaced]


def _python_retest_choices(rows: list[Row], study: int) -> list[tuple[int, int, str, str]]:
    current = _current(rows)
    out = []
    for v in current:  # by id
        if v.study != study or v.retest_of is None:
            continue
        for c in current:
            if c.retest_of is None and (c.annotator, c.item) == (v.annotator, v.item):
                out.append((v.annotator, v.item, c.choice, v.choice))
    return out


def _answers(engine: Engine, rows: list[Row]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with Session(engine) as s:
        for study in (1, 2, 3, 4):  # 4: no such study
            out[f"choices {study}"] = repo.retest_choices(s, study)
            out[f"records {study}"] = repo.retest_records(s, study)
            out[f"gold {study}"] = repo.gold_votes(s, study)
            for ann in (1, 2, 3, 4):
                out[f"items {study} {ann}"] = repo.retested_item_ids(s, study, ann)
                out[f"latest {study} {ann}"] = repo.latest_retest_vote(s, study, ann)
            for last in sorted({0, 1, len(rows) // 2, len(rows), len(rows) + 5}):
                out[f"through {study} {last}"] = repo.vote_rows_through(s, study, last)
    return out


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty database of this version (made once; each example copies it)."""
    db = tmp_path_factory.mktemp("retest") / "empty.db"
    open_store(db, seed_demo=False).dispose()
    return db


@given(steps=st.lists(_STEP, max_size=60))
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_retest_queries_answer_as_without_the_index(
    steps: list[tuple[int, int, int, int, int, str]], template: Path, tmp_path: Path
) -> None:
    case = Path(tempfile.mkdtemp(dir=tmp_path))  # one folder per example
    db, old = case / "v.db", case / "old.db"
    shutil.copyfile(template, db)
    con = sqlite3.connect(db)
    try:
        rows = _build(con, steps)
    finally:
        con.close()
    shutil.copyfile(db, old)
    con = sqlite3.connect(old)
    with con:
        con.execute("DROP INDEX ix_vote_retest")  # the plans before 010
    con.close()
    new_engine, old_engine = make_engine(db), make_engine(old)
    try:
        new, before = _answers(new_engine, rows), _answers(old_engine, rows)
    finally:
        new_engine.dispose()
        old_engine.dispose()
    assert new == before
    for study in (1, 2, 3):
        assert new[f"choices {study}"] == _python_retest_choices(rows, study)
        retests = [r for r in rows if r.study == study and r.retest_of is not None]
        assert [r[0] for r in new[f"records {study}"]] == [r.uuid for r in retests]
        for ann in (1, 2, 3, 4):
            current = [
                r
                for r in _current(rows)
                if r.retest_of is not None and (r.study, r.annotator) == (study, ann)
            ]
            assert new[f"items {study} {ann}"] == {r.item for r in current}
            latest = new[f"latest {study} {ann}"]
            assert (latest and latest.uuid) == (current[-1].uuid if current else None)
    con = sqlite3.connect(db)
    try:
        for study in (1, 2, 3, 4):
            assert new[f"gold {study}"] == con.execute(OLD_GOLD_VOTES, (study,)).fetchall()
            gold = {11: "second", 21: "second", 23: "second"}
            assert new[f"gold {study}"] == [
                (r.annotator, r.item, r.choice, gold[r.item])
                for r in _current(rows)
                if r.study == study and r.retest_of is None and r.item in gold
            ]
        for study in (1, 2, 3):
            for last in (0, len(rows) // 2, len(rows)):
                (n, main) = con.execute(OLD_VOTE_ROWS_THROUGH, (study, last)).fetchone()
                assert new[f"through {study} {last}"] == (n, main)
    finally:
        con.close()


# --- the plans ---------------------------------------------------------------------------


def _statements(engine: Engine, call: Callable[[Session], object]) -> list[tuple[str, Any]]:
    """The SQL statements (with their parameters) that ``call`` runs."""
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        with Session(engine) as s:
            call(s)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return seen


@pytest.fixture
def many_votes(tmp_path: Path) -> Iterator[Engine]:
    """A study of 2,000 votes, 2 of them re-tests, and another study."""
    db = tmp_path / "v.db"
    open_store(db, seed_demo=False).dispose()
    con = sqlite3.connect(db)
    steps = [(1 + n % 2, 1 + n % 4, n % 4, 0, 0, "first") for n in range(16)]
    rows = _build(con, [*steps, (1, 1, 0, 1, 0, "second"), (2, 2, 1, 1, 0, "first")])
    with con:  # more votes: 2,000 more annotators, one vote each
        con.executemany(
            "INSERT INTO annotator (id, name, created_at) VALUES (?, ?, '2025')",
            [(100 + n, f"x{n}") for n in range(2000)],
        )
        con.executemany(
            "INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice, swapped, fast, "
            "created_at) VALUES (?, 1, ?, 10, 'first', 0, 0, '2025')",
            [(f"x{n}", 100 + n) for n in range(2000)],
        )
    con.close()
    assert len(rows) == 18
    engine = make_engine(db)
    yield engine
    engine.dispose()


CALLS: dict[str, Callable[[Session], object]] = {
    "retest_choices": lambda s: repo.retest_choices(s, 1),
    "retest_records": lambda s: repo.retest_records(s, 1),
    "vote_rows_through": lambda s: repo.vote_rows_through(s, 1, 10_000),
    "retested_item_ids": lambda s: repo.retested_item_ids(s, 1, 1),
    "latest_retest_vote": lambda s: repo.latest_retest_vote(s, 1, 1),
}


def _plans(engine: Engine, call: Callable[[Session], object]) -> str:
    statements = _statements(engine, call)
    assert statements
    raw = engine.raw_connection()
    try:
        return " || ".join(
            " | ".join(r[3] for r in raw.execute("EXPLAIN QUERY PLAN " + sql, params))
            for sql, params in statements
        )
    finally:
        raw.close()


def _assert_reads_the_index(plans: str) -> None:
    assert "COVERING INDEX ix_vote_retest (study_id=?" in plans, plans
    # no statement reads the study's votes one by one (the plans before 010)
    assert "ix_vote_study_id (study_id=?)" not in plans, plans
    assert "SCAN v" not in plans, plans


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_retest_queries_read_the_partial_index(many_votes: Engine, name: str) -> None:
    _assert_reads_the_index(_plans(many_votes, CALLS[name]))


def test_gold_votes_seek_the_gold_items(many_votes: Engine) -> None:
    plans = _plans(many_votes, lambda s: repo.gold_votes(s, 1))
    assert "COVERING INDEX ix_vote_study_item (study_id=? AND item_id=?)" in plans, plans
    assert "ix_vote_study_id (study_id=?)" not in plans, plans
    assert "SCAN v" not in plans, plans


# --- the migration -----------------------------------------------------------------------


def test_fresh_database_has_the_index(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    engine = open_store(db, seed_demo=False)
    assert "010_retest_index" in applied(engine)
    engine.dispose()
    con = sqlite3.connect(db)
    try:
        assert _index_sql(con) == INDEX_SQL
    finally:
        con.close()


def test_010_adds_the_index_to_an_older_database(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    open_store(db, seed_demo=True).dispose()
    con = sqlite3.connect(db)
    with con:  # as 009 left it: no index, 010 not recorded; a re-test chain stored
        con.execute("DROP INDEX ix_vote_retest")
        con.execute("DELETE FROM _migrations WHERE name = '010_retest_index'")
        con.execute("INSERT INTO annotator (name, created_at) VALUES ('new', '2025')")
        (study, item, ann) = con.execute(
            "SELECT i.study_id, i.id, a.id FROM item i, annotator a WHERE a.name = 'new' "
            "ORDER BY i.id LIMIT 1"
        ).fetchone()
        for n, sup, of in ((1, None, None), (2, None, "o-1"), (3, "o-2", "o-1")):
            con.execute(
                "INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice, swapped, "
                "fast, created_at, supersedes, retest_of) VALUES (?, ?, ?, ?, 'first', 0, 0, "
                "'2025-01-01 00:00:00', ?, ?)",
                (f"o-{n}", study, ann, item, sup, of),
            )
    before = con.execute("SELECT * FROM vote ORDER BY id").fetchall()
    assert _index_sql(con) is None
    con.close()
    engine = open_store(db, seed_demo=False)
    try:
        assert "010_retest_index" in applied(engine)
        with Session(engine) as s:
            assert [r[0] for r in repo.retest_records(s, study)] == ["o-2", "o-3"]
            assert repo.retest_choices(s, study) == [(ann, item, "first", "first")]
            n = sum(1 for r in before if r[2] == study)  # (id, uuid, study_id, ...)
            assert repo.vote_rows_through(s, study, 10**9) == (n, n - 2)
        # the index created last (here) or with the table (a new database) is taken alike:
        # the planner's choice does not hang on the order of the indexes
        for call in CALLS.values():
            _assert_reads_the_index(_plans(engine, call))
    finally:
        engine.dispose()
    con = sqlite3.connect(db)
    try:
        assert _index_sql(con) == INDEX_SQL
        assert con.execute("SELECT * FROM vote ORDER BY id").fetchall() == before
    finally:
        con.close()
