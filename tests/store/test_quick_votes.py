"""The monitor's vote rows read in one statement (:mod:`annotate.store.quick_votes`, issue
13): the same ``(n, 8)`` int64 array, byte for byte, as the row-by-row read they replace.

The reference is that read as it was before (commit 8608cd2): :data:`REFERENCE_SQL`,
the eight columns of ``repo._VOTE_ROW_COLUMNS`` then, fetched row by row through the
DB-API and turned into an array with ``np.fromiter``. The studies hold what can make
the two differ: changes of mind and undos (superseded rows), retests (left out), skips,
NULL response times, swapped and fast votes, a ``supersedes`` naming no row, two studies
whose ids interleave, and integers beyond 32 and 53 bits.
"""

from __future__ import annotations

import itertools
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session

from annotate.choices import Choice, outcome_sql
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.store import quick_votes, repo

DATA = Path(__file__).resolve().parent.parent / "data"

REFERENCE_SQL = f"""SELECT v.id, v.item_id, v.annotator_id, {outcome_sql("v.choice")},
    CASE WHEN v.swapped THEN 1 ELSE 0 END, coalesce(v.response_ms, -1),
    CASE WHEN v.fast THEN 1 ELSE 0 END,
    coalesce((SELECT w.id FROM vote w WHERE w.uuid = v.supersedes), 0)
    FROM vote v WHERE v.study_id = ? AND v.id > ? AND v.retest_of IS NULL ORDER BY v.id"""
"""The monitor's read before this module (``repo.vote_rows_after`` at 8608cd2)."""


def _reference(con: Any, study_id: int, after: int) -> npt.NDArray[np.int64]:
    rows = con.execute(REFERENCE_SQL, (study_id, after)).fetchall()
    flat = itertools.chain.from_iterable(rows)
    return np.fromiter(flat, dtype=np.int64, count=8 * len(rows)).reshape(-1, 8)


def _same(got: npt.NDArray[np.int64] | None, want: npt.NDArray[np.int64]) -> None:
    assert got is not None
    assert got.dtype == np.int64
    assert got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def _vote(s: Session, study: repo.StudyRow, who: str, item: int, choice: str, **kw: Any) -> Any:
    aid = repo.annotator_id(s, who)
    assert aid is not None
    args: dict[str, Any] = {"swapped": False, "response_ms": 1500, "fast": False}
    args.update(kw)
    return repo.insert_vote(
        s,
        study_id=study.id,
        annotator=aid,
        item_id=item,
        choice=choice,
        supersedes=args.pop("supersedes", None),
        **args,
    )


@pytest.fixture
def store(tmp_path: Path) -> Engine:
    """Two studies (difficulty ``tiny``, arena ``tiny-arena``) with interleaved votes of
    every kind the monitor reads."""
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [DATA / "studies" / "tiny-difficulty", DATA / "studies" / "tiny-arena"])
    with Session(engine) as s, s.begin():
        tiny = repo.get_study(s, "tiny")
        arena = repo.get_study(s, "tiny-arena")
        assert tiny is not None
        assert arena is not None
        t_items = [i for i, _ in repo.item_keys(s, tiny.id)]
        a_items = [i for i, _ in repo.item_keys(s, arena.id)]
        for k, (ti, ai) in enumerate(itertools.product(t_items, a_items)):
            who = f"ann-{k % 5}"
            choice = (Choice.FIRST, Choice.SECOND, Choice.SKIP)[k % 3]
            first = _vote(
                s,
                tiny,
                who,
                ti,
                choice,
                swapped=k % 2 == 0,
                fast=k % 7 == 0,
                response_ms=None if k % 4 == 0 else 900 + 37 * k,
            )
            _vote(s, arena, who, ai, (Choice.MODEL_A, Choice.TIE, Choice.BOTH_BAD)[k % 3])
            if k % 5 == 1:  # a change of mind, then an undo of it
                again = _vote(s, tiny, who, ti, Choice.SECOND, supersedes=first.uuid)
                _vote(s, tiny, who, ti, Choice.RETRACT, supersedes=again.uuid, response_ms=None)
            if k % 6 == 2:  # a retest: never a row of the monitor
                _vote(s, tiny, who, ti, Choice.FIRST, retest_of=first.uuid)
        # a supersedes naming no row (by hand): 0, as the lookup finds nothing
        _vote(s, tiny, "ann-9", t_items[0], Choice.FIRST, supersedes=str(uuid.uuid4()))
    return engine


def _path(engine: Engine) -> Path:
    return Path(str(engine.url.database))


def _ids(engine: Engine) -> dict[str, int]:
    with Session(engine) as s:
        return {n: s.execute(text("SELECT id FROM study WHERE name = :n"), {"n": n}).scalar_one()
                for n in ("tiny", "tiny-arena")}  # fmt: skip


def test_the_store_holds_every_kind_of_row(store: Engine) -> None:
    """The fixture is what the comparisons need (else they prove less)."""
    con = sqlite3.connect(_path(store))
    sid = _ids(store)["tiny"]
    rows = _reference(con, sid, 0)
    assert (rows[:, 7] > 0).any()  # superseded rows
    assert set(rows[:, 3].tolist()) == {-1, 0, 1, 2}  # undos, skips, both choices
    assert set(rows[:, 4].tolist()) == set(rows[:, 6].tolist()) == {0, 1}  # swapped, fast
    assert (rows[:, 5] == -1).any()  # response times NULL
    (retests,) = con.execute(
        "SELECT count(*) FROM vote WHERE study_id = ? AND retest_of IS NOT NULL", (sid,)
    ).fetchone()
    assert retests > 0
    assert len(np.unique(np.diff(rows[:, 0]))) > 1  # the other study's ids in between
    con.close()


def test_the_rows_are_the_row_by_row_rows(store: Engine) -> None:
    """Every study, from every id (none, all, a few): the same bytes, through a plain
    sqlite3 cursor and through the session (``repo.vote_rows_array``, what the monitor
    calls); ``repo.vote_rows_after`` still gives the reference's rows as tuples."""
    con = sqlite3.connect(_path(store))
    for name, sid in _ids(store).items():
        (last,) = con.execute("SELECT max(id) FROM vote WHERE study_id = ?", (sid,)).fetchone()
        for after in (0, 1, 7, last // 2, last - 1, last, last + 100):
            want = _reference(con, sid, after)
            _same(quick_votes.read_vote_rows(con.cursor(), sid, after), want)
            with Session(store) as s:
                _same(repo.vote_rows_array(s, sid, after), want)
                assert repo.vote_rows_after(s, sid, after) == [tuple(r) for r in want.tolist()]
        assert len(_reference(con, sid, 0)) > 5, name
    con.close()


def test_large_and_negative_integers(store: Engine) -> None:
    """Ids past 2**53 (where a float would round) and response times of every sign."""
    with Session(store) as s, s.begin():
        st = repo.get_study(s, "tiny")
        assert st is not None
        item = repo.item_keys(s, st.id)[0][0]
        _vote(s, st, "big-0", item, Choice.FIRST, response_ms=2**62 + 3)
        s.execute(text("UPDATE vote SET id = :i WHERE id = (SELECT max(id) FROM vote)"),
                  {"i": 2**62 + 1})  # fmt: skip
        _vote(s, st, "big-1", item, Choice.SECOND, response_ms=-(2**40))
        s.execute(text("UPDATE vote SET id = :i WHERE id = (SELECT max(id) FROM vote)"),
                  {"i": 2**62 + 2})  # fmt: skip
        first = _vote(s, st, "big-2", item, Choice.FIRST, response_ms=0)
        _vote(s, st, "big-2", item, Choice.SKIP, supersedes=first.uuid)
    con = sqlite3.connect(_path(store))
    sid = _ids(store)["tiny"]
    want = _reference(con, sid, 0)
    assert want[:, 0].max() > 2**62
    assert want[:, 7].max() > 2**62  # the superseded row's id too
    assert want[:, 5].min() == -(2**40)
    _same(quick_votes.read_vote_rows(con.cursor(), sid, 0), want)
    con.close()


def test_rows_out_of_id_order_are_put_in_order() -> None:
    """``group_concat`` has no ORDER BY before SQLite 3.44: texts in another order (as an
    index on other columns would give) come back sorted by id, columns aligned."""
    rng = np.random.default_rng(1)
    n = 500
    want = np.column_stack(
        [
            np.cumsum(rng.integers(1, 9, n)),
            rng.integers(1, 50, n),
            rng.integers(1, 9, n),
            rng.integers(-1, 5, n),
            rng.integers(0, 2, n),
            rng.integers(-1, 10**6, n),
            rng.integers(0, 2, n),
            rng.integers(0, 99, n),
        ]
    ).astype(np.int64)
    _same(quick_votes._parse(n, _texts(want[rng.permutation(n)])), want)
    _same(quick_votes._parse(n, _texts(want)), want)
    twice = want.copy()
    twice[7, 0] = twice[8, 0]  # the same id twice: not rows of the vote table
    assert quick_votes._parse(n, _texts(twice[rng.permutation(n)])) is None


def _texts(rows: npt.NDArray[np.int64]) -> tuple[bytes, ...]:
    """The texts :func:`quick_votes.vote_rows_sql` gives for ``rows``."""
    flags = (rows[:, 3] + 1) * 4 + rows[:, 4] * 2 + rows[:, 6]
    cols = [rows[:, 0], rows[:, 1], rows[:, 2], flags, rows[:, 5], rows[:, 7]]
    return tuple(",".join(map(str, c.tolist())).encode() for c in cols)


def test_texts_that_are_not_n_integers_are_refused() -> None:
    """A NULL column (fewer values), a value that is not an integer, a count that does
    not match: None, never a short or shifted array."""
    rows = np.arange(40, dtype=np.int64).reshape(5, 8) % 2
    rows[:, 0] = np.arange(1, 6)
    good = _texts(rows)
    _same(quick_votes._parse(5, good), rows)
    assert quick_votes._parse(6, good) is None
    assert quick_votes._parse(5, (good[0], None, *good[2:])) is None
    for bad in (b"1,2,3,4", b"1,2,,4,5", b"1,2,3.5,4,5", b"1,2,3,4,5,", b"1,2,3-4,4,5"):
        assert quick_votes._parse(5, (*good[:5], bad)) is None


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("response_ms", 12.5),
        ("response_ms", "12ms"),
        ("response_ms", ""),
        ("response_ms", b"\x01"),
        ("response_ms", b"12"),
        ("item_id", "x"),
        ("annotator_id", 2.5),
    ],
)
def test_a_value_not_an_integer_is_read_row_by_row(
    store: Engine, column: str, value: object
) -> None:
    """A value stored by hand that is no integer (a real, a text, a blob): the
    one-statement read declines (None) and ``repo.vote_rows_array`` gives what the
    row-by-row read gives (or fails alike); a blob of digits is an integer to both."""
    con = sqlite3.connect(_path(store))
    sid = _ids(store)["tiny"]
    con.execute(
        f"UPDATE vote SET {column} = ? WHERE id = (SELECT min(id) + 2 FROM vote WHERE "
        "study_id = ? AND retest_of IS NULL)",
        (value, sid),
    )
    con.commit()
    got = quick_votes.read_vote_rows(con.cursor(), sid, 0)
    try:
        want: npt.NDArray[np.int64] | type[BaseException] = _reference(con, sid, 0)
    except (TypeError, ValueError) as err:
        want = type(err)
    if isinstance(value, bytes) and value.isdigit():  # a blob of digits: an integer to both
        assert isinstance(want, np.ndarray)
        _same(got, want)
    else:
        assert got is None
    with Session(store) as s:
        if isinstance(want, np.ndarray):
            _same(repo.vote_rows_array(s, sid, 0), want)
        else:
            with pytest.raises(want):
                repo.vote_rows_array(s, sid, 0)
    con.close()


def test_a_column_text_longer_than_sqlite_allows_is_read_row_by_row(
    store: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A study so large that a column's text would pass SQLite's longest string
    (``SQLITE_MAX_LENGTH``, 1e9 bytes: some 100 million rows). Instead of writing them,
    the statement asks SQLite for a blob of 2e9 bytes, which it refuses the same way
    ("string or blob too big", SQLITE_TOOBIG, raised as ``sqlite3.DataError``): the
    one-statement read declines (None), and ``repo.vote_rows_array`` reads the rows one
    by one: the reference's rows."""
    sid = _ids(store)["tiny"]
    con = sqlite3.connect(_path(store))
    want = _reference(con, sid, 0)
    too_big = "SELECT count(*), zeroblob(2000000000) FROM vote v WHERE v.study_id = ? AND {}"
    monkeypatch.setattr(quick_votes, "vote_rows_sql", too_big.format)
    with pytest.raises(sqlite3.DataError, match="too big"):
        con.execute(quick_votes.vote_rows_sql("v.id > ?"), (sid, 0)).fetchone()
    assert quick_votes.read_vote_rows(con.cursor(), sid, 0) is None
    con.close()
    with Session(store) as s:
        _same(repo.vote_rows_array(s, sid, 0), want)


def test_read_study(store: Engine, tmp_path: Path) -> None:
    """The prefetch child's read: the difficulty study's rows from id 0 and its id; None
    for an arena study, a missing one, or a database not exactly up to date (its
    opening may migrate it: the child then leaves the read to the monitor)."""
    path = _path(store)
    ids = _ids(store)
    store.dispose()
    con = sqlite3.connect(path)
    got = quick_votes.read_study(path, "tiny")
    assert got is not None
    _same(got[0], _reference(con, ids["tiny"], 0))
    assert got[1] == ids["tiny"]
    assert quick_votes.read_study(path, "tiny-arena") is None
    assert quick_votes.read_study(path, "no-such-study") is None
    con.close()
    old = tmp_path / "old.db"
    shutil.copy(path, old)
    with sqlite3.connect(old) as c:
        c.execute("DELETE FROM _migrations WHERE rowid = (SELECT max(rowid) FROM _migrations)")
    assert quick_votes.read_study(old, "tiny") is None
    with sqlite3.connect(old) as c:
        c.execute("INSERT INTO _migrations (name, applied_at) VALUES ('999_future', '')")
    assert quick_votes.read_study(old, "tiny") is None


def test_read_study_of_a_study_without_votes(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [DATA / "studies" / "tiny-difficulty"])
    with Session(engine) as s:
        st = repo.get_study(s, "tiny")
        assert st is not None
        sid = st.id
        _same(repo.vote_rows_array(s, sid, 0), np.empty((0, 8), dtype=np.int64))
    engine.dispose()
    assert quick_votes.read_study(tmp_path / "v.db", "tiny") == (None, sid)


def test_read_study_writes_nothing(store: Engine) -> None:
    """Read-only: the database file, its WAL and its shared memory are unchanged."""
    path = _path(store)
    store.dispose()
    files = [p for p in (path, Path(f"{path}-wal")) if p.exists()]
    before = {p: p.read_bytes() for p in files}
    assert quick_votes.read_study(path, "tiny") is not None
    assert {p: p.read_bytes() for p in files} == before
