"""The columnar vote paths of issue 13: packed inserts for ``annotate import`` and the
vectorised CSV export give exactly what the row-by-row paths give.

* Import: a vote CSV read by the fast path is inserted as fixed-width records
  (``repo.PackedVotes``, one ``INSERT ... SELECT`` per batch) on SQLite; the rows, their
  ids and the stored types (``typeof``) must equal those of the same file inserted as
  row tuples with ``executemany`` (the path PostgreSQL keeps).
* Export: ``votes.csv`` and ``vote_log.csv`` written by ``_write_csv_votes_columnar``
  must equal, byte for byte, the SQL-formatted one-pass path (``_write_csv_votes``)
  and the former pandas export (``vote_dicts`` + ``write_table``), on values that stay
  on the columnar path (non-ASCII names before the timestamp, stamps without a fraction,
  with one and with a zero one, undos, changes of mind, a float response time); values
  that need CSV quoting or another timestamp form make it decline (then the SQL path
  writes the files, checked by tests/annotate/test_export_stream.py).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from annotate.services import exporting, importing
from annotate.services.db import open_store
from annotate.services.exporting import export_votes, study_fingerprint
from annotate.services.importing import import_paths
from annotate.services.votes_io import EXPORT_COLUMNS, read_vote_table, vote_dicts, write_table
from annotate.store import repo
from annotate.store.writelock import write_session

DATA = Path(__file__).resolve().parent.parent / "data"
HEAD = "vote_id,study,annotator,item_id,choice,left,response_ms,fast,created_at,supersedes\n"


def uid(k: int) -> str:
    return f"00000000-0000-4000-8000-{k:012d}"


# --------------------------------------------------------------------------- import


def _vote_file(path: Path) -> Path:
    """A plain vote CSV on both tiny studies: every column form the fast path reads."""
    rows = [
        f"{uid(1)},tiny,zoë,p1,first,second,1200,True,2025-01-01T10:00:00Z,",
        f"{uid(2)},tiny,zoë,p1,second,first,,False,2025-01-01T10:00:01.500000+00:00,{uid(1)}",
        f"{uid(3)},tiny,zoë,p1,retract,,999999999999999999,,2025-01-01T10:00:02.000000,{uid(2)}",
        f"{uid(4)},tiny, Plain  Name ,p1,skip,first,0,yes,,",
        f"{uid(5)},tiny-arena,zoë,b1,tie,model_b,7,1,2024-02-29T23:59:59.999999Z,",
        f"{uid(6)},tiny-arena,other,b1,model_a,model_a,5,0,2025-03-01T12:00:00,",
        f"{uid(7)},tiny-arena,other,b1,both_bad,,,,2025-03-01T12:00:01.000001,{uid(6)}",
    ]
    path.write_text(HEAD + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _stored(db: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(vote)")]
    sql = ", ".join(f"{c}, typeof({c})" for c in cols if c != "created_at")
    rows = con.execute(
        f"SELECT {sql}, CASE WHEN created_at < '2026' THEN created_at ELSE 'now' END, "
        "typeof(created_at) FROM vote ORDER BY id"
    ).fetchall()
    rows += con.execute("SELECT id, name FROM annotator ORDER BY id").fetchall()
    con.close()
    return rows


@pytest.mark.parametrize("rows_per_statement", [100_000, 2])
def test_packed_insert_stores_what_executemany_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows_per_statement: int
) -> None:
    votes = _vote_file(tmp_path / "votes.csv")
    assert read_vote_table(votes) is not None  # the fast path reads it
    calls: list[str] = []
    pack = importing._pack_votes

    def spy(*args: Any) -> repo.PackedVotes:
        calls.append("packed")
        return pack(*args)

    monkeypatch.setattr(importing, "_pack_votes", spy)
    monkeypatch.setattr(importing, "_PACKED_ROWS", rows_per_statement)
    stored = {}
    for packed in (True, False):
        monkeypatch.setattr(importing, "_packed_insert", lambda s, p=packed: p)
        db = tmp_path / f"{packed}.db"
        engine = open_store(db)
        import_paths(
            engine, [DATA / "studies" / "tiny-difficulty", DATA / "studies" / "tiny-arena"]
        )
        report = import_paths(engine, [votes])
        engine.dispose()
        assert report.votes_added == 7
        stored[packed] = _stored(db)
    assert calls  # the packed records were used
    assert stored[True] == stored[False]
    ids = [r[0] for r in stored[True][:7]]
    assert ids == sorted(ids)  # file order
    uuids = [r[2] for r in stored[True][:7]]
    assert uuids == [uid(k) for k in range(1, 8)]


def test_packed_votes_refuse_a_wrong_length() -> None:
    with pytest.raises(ValueError, match="not 2 records"):
        repo.PackedVotes(1, b"x" * (repo.PACKED_VOTE_WIDTH * 2 - 1), 2)


def test_digits_and_fixed_chars() -> None:
    import pyarrow as pa

    assert importing._digits([0, 42, 10**18 - 1], 19).tobytes() == (
        b"000000000000000000000000000000000000420999999999999999999"
    )
    with pytest.raises(ValueError, match="does not fit 2 digits"):
        importing._digits([100], 2)
    assert importing._fixed_chars(pa.array(["ab", "", "abcd"]), 4).tobytes() == b"ab      abcd"
    with pytest.raises(ValueError, match="longer than 4 bytes"):
        importing._fixed_chars(pa.array(["abcde"]), 4)


# --------------------------------------------------------------------------- export


@pytest.fixture
def engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [DATA / "studies" / "tiny-difficulty", DATA / "studies" / "tiny-arena"])
    with write_session(engine) as s:
        arena = repo.get_study(s, "tiny-arena")
        tiny = repo.get_study(s, "tiny")
        assert arena is not None
        assert tiny is not None
        b1 = repo.item_ids(s, arena.id)["b1"]
        uni = repo.insert_item(s, arena.id, "ключ-é", 9)
        repo.insert_battle(s, uni, None, "X", "Y")
        p1 = repo.item_ids(s, tiny.id)["p1"]
        ann = [repo.annotator_id(s, n) for n in ("zoë", "名前", "plain")]
        cells = [
            (tiny, 0, p1, "first", True, 1200, False, "2025-01-01 10:00:00", None),
            (tiny, 0, p1, "second", False, None, True, "2025-01-01 10:00:01.500000", uid(1)),
            (tiny, 1, p1, "skip", True, 7, False, "2025-01-01 10:00:02.000000", None),
            (tiny, 1, p1, "retract", False, None, False, "2025-01-01 10:00:03.000001", uid(3)),
            (arena, 2, uni, "tie", True, 0, True, "2025-03-01 12:00:00.000000", None),
            (arena, 0, uni, "model_b", False, 2**40, False, "2025-03-01 12:00:00.999999", None),
            (arena, 1, b1, "retract", False, 5, False, "2024-02-29 23:59:59", None),
            (arena, 1, uni, "both_bad", False, 5, False, "0001-01-01 00:00:00", None),
        ]
        rows = [(uid(k + 1), st.id, ann[a], *rest) for k, (st, a, *rest) in enumerate(cells)]
        repo.bulk_insert_votes(s, rows)
    con = sqlite3.connect(tmp_path / "v.db")
    with con:  # a whole number stored as a float (the export writes it whole)
        con.execute("UPDATE vote SET response_ms = 1200.0 WHERE uuid = ?", (uid(1),))
    con.close()
    return engine


def _reference(engine, folder: Path) -> None:  # type: ignore[no-untyped-def]
    """The SQL-formatted one-pass path and the former pandas export, into two folders."""
    folder.mkdir()
    (folder / "pandas").mkdir()
    with Session(engine) as s:
        studies = [st for n in repo.study_names(s) if (st := repo.get_study(s, n))]
        fps = [study_fingerprint(s, st) for st in studies]
        exporting._write_csv_votes(s, studies, fps, folder / "votes", folder / "vote_log")
        for current, name in ((True, "votes"), (False, "vote_log")):
            recs: list[dict[str, object]] = []
            for st, fp in zip(studies, fps, strict=True):
                recs += vote_dicts(repo.vote_records(s, st.id, current_only=current), fp)
            write_table(recs, list(EXPORT_COLUMNS), folder / "pandas" / name, "csv")


def test_columnar_export_is_byte_identical(  # type: ignore[no-untyped-def]
    engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _reference(engine, tmp_path / "ref")

    def no_fallback(*args: Any) -> None:
        raise AssertionError("the columnar path declined")

    monkeypatch.setattr(exporting, "_write_csv_votes", no_fallback)
    res = export_votes(engine, fmt="csv", out=tmp_path / "new")
    assert (res.votes, res.log_rows) == (4, 8)
    for name in ("votes.csv", "vote_log.csv"):
        new = (tmp_path / "new" / name).read_bytes()
        assert new == (tmp_path / "ref" / name).read_bytes(), name
        assert new == (tmp_path / "ref" / "pandas" / name).read_bytes(), name
    log = (tmp_path / "new" / "vote_log.csv").read_text(encoding="utf-8")
    assert ",2025-03-01T12:00:00Z," in log  # the zero fraction left out
    assert ",1200,True,2025-01-01T10:00:00Z," not in log  # response 1200 is not fast
    assert "ключ-é" in log


def test_columnar_export_in_small_batches(  # type: ignore[no-untyped-def]
    engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of two rows (a zero fraction and an undo in some of them) change nothing."""
    _reference(engine, tmp_path / "ref")
    parts = repo.vote_export_csv_parts

    def small(*args: Any, **kwargs: Any) -> Any:
        return parts(*args, **{**kwargs, "batch": 2})

    monkeypatch.setattr(repo, "vote_export_csv_parts", small)
    export_votes(engine, fmt="csv", out=tmp_path / "new")
    for name in ("votes.csv", "vote_log.csv"):
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "ref" / name).read_bytes()


@pytest.mark.parametrize(
    "update",
    [
        "UPDATE annotator SET name = 'a, b' WHERE name = 'plain'",
        "UPDATE annotator SET name = 'say \"hi\"' WHERE name = 'plain'",
        "UPDATE item SET key = 'two' || char(10) || 'lines' WHERE key = 'ключ-é'",
        "UPDATE annotator SET name = 'nul' || char(0) WHERE name = 'plain'",
        "UPDATE vote SET created_at = '2025-03-01T12:00:00+02:00' WHERE uuid = "
        "'00000000-0000-4000-8000-000000000008'",
        "UPDATE vote SET created_at = '2025-03-01 12:00' WHERE uuid = "
        "'00000000-0000-4000-8000-000000000008'",
        "UPDATE vote SET created_at = '0000-03-01 12:00:00' WHERE uuid = "
        "'00000000-0000-4000-8000-000000000008'",
        "UPDATE vote SET uuid = 'short' WHERE uuid = '00000000-0000-4000-8000-000000000008'",
        "UPDATE study SET name = 'tiny,x' WHERE name = 'tiny'",
    ],
)
def test_values_needing_the_sql_path_decline(  # type: ignore[no-untyped-def]
    engine, tmp_path: Path, update: str
) -> None:
    """A value that needs CSV quoting or another timestamp form (written by hand) makes
    the columnar path decline; export_votes then writes what the SQL path writes."""
    con = sqlite3.connect(tmp_path / "v.db")
    with con:
        assert con.execute(update).rowcount == 1
    con.close()
    with Session(engine) as s:
        studies = [st for n in repo.study_names(s) if (st := repo.get_study(s, n))]
        fps = [study_fingerprint(s, st) for st in studies]
        assert all(repo.vote_export_plain(s, st.id) for st in studies)
        (tmp_path / "x").mkdir()
        with pytest.raises(exporting._NotColumnarError):
            exporting._write_csv_votes_columnar(
                s, studies, fps, tmp_path / "x" / "votes", tmp_path / "x" / "vote_log"
            )
        (tmp_path / "ref").mkdir()
        refused = False
        try:
            exporting._write_csv_votes(
                s, studies, fps, tmp_path / "ref" / "votes", tmp_path / "ref" / "vote_log"
            )
        except sqlite3.OperationalError:  # year 0: iso_stamp refuses it, on both paths
            refused = True
    if refused:
        with pytest.raises(sqlite3.OperationalError):
            export_votes(engine, fmt="csv", out=tmp_path / "new")
        return
    export_votes(engine, fmt="csv", out=tmp_path / "new")
    for name in ("votes.csv", "vote_log.csv"):
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "ref" / name).read_bytes()
