"""Streamed vote exports (issue 13) are byte for byte the exports of the former code.

The former export built every vote as a dict (``repo.vote_records`` + ``vote_dicts``)
and wrote them with pandas (``write_table``); that path is kept here as the reference
and compared with ``export_votes`` on a study with awkward values: names with commas,
quotes and non-ASCII letters, item keys with a newline, timestamps with and without a
fraction (and one stored in another form), empty response times, changes of mind and
undos.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from annotate.services.db import open_store
from annotate.services.exporting import export_votes, study_fingerprint
from annotate.services.importing import import_paths
from annotate.services.votes_io import EXPORT_COLUMNS, vote_dicts, write_table
from annotate.store import repo
from annotate.store.writelock import write_session

DATA = Path(__file__).resolve().parent.parent / "data"


def uid(k: int) -> str:
    return f"00000000-0000-4000-8000-{k:012d}"


@pytest.fixture
def engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [DATA / "studies" / "tiny-difficulty", DATA / "studies" / "tiny-arena"])
    with write_session(engine) as s:
        arena = repo.get_study(s, "tiny-arena")
        tiny = repo.get_study(s, "tiny")
        assert arena is not None
        assert tiny is not None
        odd = repo.insert_item(s, arena.id, 'odd, "key"\nline two', 9)
        repo.insert_battle(s, odd, None, "X", "Y")
        p1 = repo.item_ids(s, tiny.id)["p1"]
        names = ['o"brien, jr', "zoë", "plain"]
        ann = [repo.annotator_id(s, n) for n in names]
        assert all(a is not None for a in ann)
        cells = [
            (tiny, 0, p1, "first", True, 1200, False, "2025-01-01 10:00:00", None),
            (tiny, 0, p1, "second", False, None, True, "2025-01-01 10:00:01.5", uid(1)),
            (tiny, 1, p1, "skip", True, 7, False, "2025-01-01 10:00:02.000000", None),
            (tiny, 1, p1, "retract", False, None, False, "2025-01-01 10:00:03.000001", uid(3)),
            (arena, 2, odd, "tie", True, 0, True, "2025-03-01T12:00:00+02:00", None),
            (arena, 0, odd, "model_b", False, 2**40, False, "2025-03-01 12:00:00.999999", None),
            (arena, 1, odd, "both_bad", False, 5, False, "2024-02-29 23:59:59", None),
        ]
        rows = [(uid(k + 1), st.id, ann[a], *rest) for k, (st, a, *rest) in enumerate(cells)]
        repo.bulk_insert_votes(s, rows)
    return engine


def old_export(engine, folder: Path, fmt: str) -> None:  # type: ignore[no-untyped-def]
    """The former ``export_votes`` body for the two vote files."""
    from sqlmodel import Session

    folder.mkdir()
    with Session(engine) as s:
        studies = [st for n in repo.study_names(s) if (st := repo.get_study(s, n))]
        current: list[dict[str, object]] = []
        log: list[dict[str, object]] = []
        for st in studies:
            fp = study_fingerprint(s, st)
            current += vote_dicts(repo.vote_records(s, st.id, current_only=True), fp)
            log += vote_dicts(repo.vote_records(s, st.id, current_only=False), fp)
        write_table(current, list(EXPORT_COLUMNS), folder / "votes", fmt)
        write_table(log, list(EXPORT_COLUMNS), folder / "vote_log", fmt)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_streamed_export_is_byte_identical(engine, tmp_path: Path, fmt: str) -> None:  # type: ignore[no-untyped-def]
    old_export(engine, tmp_path / "old", fmt)
    res = export_votes(engine, fmt=fmt, out=tmp_path / "new")
    assert (res.votes, res.log_rows) == (4, 7)
    for name in ("votes", "vote_log"):
        old = (tmp_path / "old" / f"{name}.{fmt}").read_bytes()
        new = (tmp_path / "new" / f"{name}.{fmt}").read_bytes()
        assert new == old, name


def test_fingerprint_left_empty_when_unknown(engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A study without a fingerprint still exports (the column computed, as before)."""
    con = sqlite3.connect(tmp_path / "v.db")
    with con:
        con.execute("UPDATE study SET fingerprint = ''")
    con.close()
    old_export(engine, tmp_path / "old", "csv")
    export_votes(engine, fmt="csv", out=tmp_path / "new")
    for name in ("votes.csv", "vote_log.csv"):
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "old" / name).read_bytes()


def _hostile(db: Path, *, awkward_ms: bool) -> None:
    """Values only a hand-edited database holds: control characters, quotes and commas
    in every text column, a NUL, timestamps in other forms, a whole response time stored
    as a float; with ``awkward_ms`` also a fractional one and one stored as text (the
    former pandas export refused both)."""
    con = sqlite3.connect(db)
    with con:
        con.execute(
            "UPDATE annotator SET name = ? WHERE name = 'plain'", ('cr\rtab\tnul\x00, "q"',)
        )
        con.execute("UPDATE item SET key = key || ' \r\n\"x\",' WHERE key = 'p1'")
        con.execute("UPDATE study SET name = name || ', \"s\"' WHERE name = 'tiny'")
        con.execute("UPDATE vote SET response_ms = 12.0 WHERE uuid = ?", (uid(3),))
        con.execute(
            "UPDATE vote SET uuid = 'u,\"1\"\n', created_at = '2025-03-01 12:00:00.5' "
            "WHERE uuid = ?",
            (uid(6),),
        )
        con.execute("UPDATE vote SET created_at = '2025-03-01' WHERE uuid = ?", (uid(7),))
        if awkward_ms:
            con.execute("UPDATE vote SET response_ms = 1234.7 WHERE uuid = ?", (uid(1),))
            con.execute("UPDATE vote SET response_ms = 'slow, \"very\"' WHERE uuid = ?", (uid(5),))
    con.close()


def two_pass_export(engine, folder: Path) -> None:  # type: ignore[no-untyped-def]
    """The streamed export before the one-pass CSV path: each vote file on its own,
    rows from ``repo.vote_export_rows`` written by :mod:`csv`."""
    from sqlmodel import Session

    from annotate.services.exporting import _write_votes

    folder.mkdir()
    with Session(engine) as s:
        studies = [st for n in repo.study_names(s) if (st := repo.get_study(s, n))]
        fps = [study_fingerprint(s, st) for st in studies]
        _write_votes(s, studies, fps, folder / "votes", "csv", True)
        _write_votes(s, studies, fps, folder / "vote_log", "csv", False)


@pytest.mark.parametrize("awkward_ms", [False, True])
def test_one_pass_csv_export_is_byte_identical(engine, tmp_path: Path, awkward_ms: bool) -> None:  # type: ignore[no-untyped-def]
    """The one-pass CSV export (lines formatted in SQL) on hostile values equals the
    two-pass export and, where it could write them, the former pandas export. A response
    time stored as text sends its study through the csv-writer path."""
    from sqlmodel import Session

    _hostile(tmp_path / "v.db", awkward_ms=awkward_ms)
    with Session(engine) as s:
        ids = [st.id for n in repo.study_names(s) if (st := repo.get_study(s, n))]
        plain = [repo.vote_export_plain(s, i) for i in ids]
    assert plain.count(False) == int(awkward_ms)
    two_pass_export(engine, tmp_path / "two")
    if not awkward_ms:
        old_export(engine, tmp_path / "old", "csv")
    res = export_votes(engine, fmt="csv", out=tmp_path / "new")
    assert (res.votes, res.log_rows) == (4, 7)
    for name in ("votes.csv", "vote_log.csv"):
        new = (tmp_path / "new" / name).read_bytes()
        assert new == (tmp_path / "two" / name).read_bytes(), name
        if not awkward_ms:
            assert new == (tmp_path / "old" / name).read_bytes(), name
    log = (tmp_path / "new" / "vote_log.csv").read_bytes()
    assert b"\x00" in log
    assert b'"u,""1""\n"' in log


@pytest.mark.parametrize(
    "update",
    [
        "UPDATE annotator SET name = x'37' WHERE name = 'plain'",
        "UPDATE item SET key = x'6b6579' WHERE key = 'p1'",
        "UPDATE vote SET uuid = x'3132' WHERE uuid = '00000000-0000-4000-8000-000000000007'",
        "UPDATE vote SET supersedes = x'3132' WHERE uuid = '00000000-0000-4000-8000-000000000002'",
    ],
)
def test_unexpected_stored_types_take_the_csv_writer_path(  # type: ignore[no-untyped-def]
    engine, tmp_path: Path, update: str
) -> None:
    """A name, key or id stored as a blob (by hand) sends its study
    through the csv-writer path: the export is the two-pass one."""
    from sqlmodel import Session

    con = sqlite3.connect(tmp_path / "v.db")
    with con:
        assert con.execute(update).rowcount == 1
    con.close()
    with Session(engine) as s:
        ids = [st.id for n in repo.study_names(s) if (st := repo.get_study(s, n))]
        assert [repo.vote_export_plain(s, i) for i in ids].count(False) == 1
    two_pass_export(engine, tmp_path / "two")
    export_votes(engine, fmt="csv", out=tmp_path / "new")
    for name in ("votes.csv", "vote_log.csv"):
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
