"""The column-wise fast path of ``annotate import`` for vote CSVs (issue 13).

Every case is imported twice into copies of one database: once as ``annotate import``
does it (a plain vote CSV goes through the vectorised fast path) and once through the
per-row path only. Both must give the same rows, annotators, report and, for a bad
file, the same one-line error; the database is unchanged after an error.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text as sql_text

from annotate.errors import AnnotateError
from annotate.services import importing
from annotate.services.db import open_store
from annotate.services.exporting import export_votes
from annotate.services.importing import import_paths
from annotate.services.votes_io import FastRead, VoteTable, parse_vote_file, read_vote_table
from annotate.store import repo

DATA = Path(__file__).resolve().parent.parent / "data"
HEAD = "vote_id,study,annotator,item_id,choice,left,response_ms,fast,created_at,supersedes\n"


def uid(k: int) -> str:
    return f"00000000-0000-4000-8000-{k:012d}"


def row(k: int, *cells: object) -> str:
    return ",".join([uid(k), *[str(c) for c in cells]]) + "\n"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A closed database holding the tiny studies, one legacy annotator name and a vote."""
    path = tmp_path / "base.db"
    engine = open_store(path)
    import_paths(engine, [DATA / "studies" / "tiny-difficulty", DATA / "studies" / "tiny-arena"])
    engine.dispose()
    con = sqlite3.connect(path)
    with con:
        con.execute(
            "INSERT INTO annotator (name, created_at) VALUES ('Legacy  Name', '2025-01-01')"
        )
    con.close()
    return path


def outcome(db: Path, csv: Path) -> dict[str, Any]:
    engine = open_store(db)
    try:
        report = import_paths(engine, [csv])
    except AnnotateError as err:
        engine.dispose()
        return {"error": str(err)}
    engine.dispose()
    con = sqlite3.connect(db)
    votes = con.execute(
        "SELECT id, uuid, study_id, annotator_id, item_id, choice, swapped, response_ms, fast, "
        "CASE WHEN created_at LIKE '2025-%' THEN created_at ELSE 'now' END, supersedes "
        "FROM vote ORDER BY id"
    ).fetchall()
    annotators = con.execute("SELECT id, name FROM annotator ORDER BY id").fetchall()
    con.close()
    return {"report": report.as_dict(), "votes": votes, "annotators": annotators}


def both(
    tmp_path: Path, base: Path, text: str, monkeypatch: pytest.MonkeyPatch, *, prefix: str = ""
) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """Outcomes of the default import and of the per-row path, and whether the fast path
    read the file."""
    csv = tmp_path / "votes.csv"
    csv.write_bytes(prefix.encode() + text.encode("utf-8"))
    fast_db, slow_db = tmp_path / "fast.db", tmp_path / "slow.db"
    shutil.copy(base, fast_db)
    shutil.copy(base, slow_db)
    taken = isinstance(read_vote_table(csv), VoteTable)
    fast = outcome(fast_db, csv)
    with monkeypatch.context() as m:
        m.setattr(importing, "fast_vote_table", lambda path: FastRead(None))
        m.setattr(importing, "read_votes", lambda path, fast=None: parse_vote_file(path))
        slow = outcome(slow_db, csv)
    return fast, slow, taken


GOOD = {
    "chains": HEAD
    + row(1, "tiny", "ann", "p1", "first", "first", 1200, "False", "2025-01-01T10:00:00Z", "")
    + row(2, "tiny", "Ann ", "p2", "second", "second", "", "true", "2025-01-01T10:00:01.500000", "")
    + row(3, "tiny", "bob", "p1", "skip", "", 7, "", "2025-01-01T10:00:02.000000+00:00", "")
    + row(4, "tiny", "ANN", "p1", "second", "second", 9, "yes", "2025-01-01T10:00:03", uid(1))
    + row(5, "tiny", "ann", "p1", "retract", "", "", "0", "2025-02-28T23:59:59.000001", uid(4))
    + row(6, "tiny", "bob", "p3", "first", "first", 0, "False", "", "")
    + row(7, "tiny", "ann", "p1", "first", "first", 5, "False", "2024-02-29T00:00:00Z", uid(5)),
    "two studies and names": HEAD
    + row(1, "tiny-arena", "Legacy Name", "b1", "tie", "model_b", 5, "False", "", "")
    + row(2, "tiny", "legacy name", "p1", "first", "first", 5, "False", "", "")
    + row(3, "tiny-arena", "zoë", "b2", "both_bad", "model_a", 5, "1", "", "")
    + row(4, "tiny", "ZOË", "p1", "second", "second", 5, "False", "", "")
    + row(5, "tiny-arena", "legacy name", "b1", "model_a", "model_b", 5, "False", "", uid(1)),
    "required columns only": "vote_id,study,annotator,item_id,choice\n"
    + f"{uid(1)},tiny,ann,p1,first\n{uid(2)},tiny-arena,ann,b3,model_b\n",
    "fingerprint column": HEAD.replace("\n", ",study_fingerprint\n")
    + row(1, "tiny", "ann", "p1", "first", "first", 1, "False", "", "", "")
    + row(2, "tiny", "ann", "p2", "first", "first", 1, "False", "", "", ""),
}


@pytest.mark.parametrize("case", sorted(GOOD))
@pytest.mark.parametrize("prefix", ["", "\ufeff"])
def test_fast_path_imports_what_the_per_row_path_imports(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, case: str, prefix: str
) -> None:
    fast, slow, taken = both(tmp_path, base, GOOD[case], monkeypatch, prefix=prefix)
    assert taken, "the fast path should read this file"
    assert "error" not in fast, fast
    assert fast == slow


BAD = {
    "duplicate id": HEAD
    + row(1, "tiny", "ann", "p1", "first", "first", 1, "False", "", "")
    + row(1, "tiny", "bob", "p2", "first", "first", 1, "False", "", ""),
    "unknown supersedes": HEAD + row(1, "tiny", "ann", "p1", "first", "", "", "", "", uid(9)),
    "supersedes of another annotator": HEAD
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "", "")
    + row(2, "tiny", "bob", "p1", "first", "", "", "", "", uid(1)),
    "supersedes on another item": HEAD
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "", "")
    + row(2, "tiny", "ann", "p2", "first", "", "", "", "", uid(1)),
    "replaced twice": HEAD
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "", "")
    + row(2, "tiny", "ann", "p1", "second", "", "", "", "", uid(1))
    + row(3, "tiny", "ann", "p1", "skip", "", "", "", "", uid(1)),
    "retract of a retraction": HEAD
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "", "")
    + row(2, "tiny", "ann", "p1", "retract", "", "", "", "", uid(1))
    + row(3, "tiny", "ann", "p1", "retract", "", "", "", "", uid(2)),
    "retraction naming nothing": HEAD + row(1, "tiny", "ann", "p1", "retract", "", "", "", "", ""),
    "second chain": HEAD
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "", "")
    + row(2, "tiny", "Ann", "p1", "second", "", "", "", "", ""),
    "cycle": HEAD
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "", uid(2))
    + row(2, "tiny", "ann", "p1", "second", "", "", "", "", uid(1)),
    "unknown item": HEAD + row(1, "tiny", "ann", "p9", "first", "", "", "", "", ""),
    "arena choice in a difficulty study": HEAD
    + row(1, "tiny", "ann", "p1", "model_a", "", "", "", "", ""),
    "unknown study": HEAD + row(1, "nope", "ann", "p1", "first", "", "", "", "", ""),
    "bad study name": HEAD + row(1, "../x", "ann", "p1", "first", "", "", "", "", ""),
    "february 30": HEAD + row(1, "tiny", "ann", "p1", "first", "", "", "", "2025-02-30", ""),
    "year 0": HEAD + row(1, "tiny", "ann", "p1", "first", "", "", "", "0000-01-01T00:00:00", ""),
    "leap second": HEAD
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "2025-06-30T23:59:60", ""),
    "offset overflow": HEAD
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "9999-12-31T23:00:00-05:00", ""),
    "fractional ms": HEAD + row(1, "tiny", "ann", "p1", "first", "", "1.5", "", "", ""),
    "huge ms": HEAD + row(1, "tiny", "ann", "p1", "first", "", "9" * 19, "", "", ""),
    "whole float ms (per-row path, fine)": HEAD
    + row(1, "tiny", "ann", "p1", "first", "", "12.0", "", "", ""),
    "bad left": HEAD + row(1, "tiny", "ann", "p1", "first", "left", "", "", "", ""),
    "bad uuid": HEAD.replace("\n", "")
    + "\n00000000-0000-4000-8000-00000000000g,tiny,ann,p1,first,,,,,\n",
    "empty annotator": HEAD + row(1, "tiny", " ", "p1", "first", "", "", "", "", ""),
    "control in annotator": HEAD + row(1, "tiny", "eve\x1b[2J", "p1", "first", "", "", "", "", ""),
    "short row": HEAD + f"{uid(1)},tiny,ann,p1,first\n",
    "unknown column": HEAD.replace("\n", ",extra\n")
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "", "", "x"),
    "wrong fingerprint": HEAD.replace("\n", ",study_fingerprint\n")
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "", "", "0" * 64),
    "quoted cells (per-row path, fine)": HEAD
    + row(1, "tiny", '"ann, the first"', "p1", "first", "", "", "", "", ""),
    "blank line (per-row path, fine)": HEAD
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "", "")
    + "\n"
    + row(2, "tiny", "ann", "p2", "first", "", "", "", "", ""),
    "newest first (per-row path, fine)": HEAD
    + row(2, "tiny", "ann", "p1", "second", "", "", "", "", uid(1))
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "", ""),
    "only a header": HEAD,
    "other timestamp forms (per-row path, fine)": HEAD
    + row(1, "tiny", "ann", "p1", "first", "", "", "", "2025-01-01T10:00:01.5", "")
    + row(2, "tiny", "ann", "p2", "first", "", "", "", "2025-01-01 10:00:03", "")
    + row(3, "tiny", "ann", "p3", "first", "", "", "", "2025-01-01T10:00:03+02:00", ""),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_files_the_fast_path_declines_give_the_per_row_result(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """Bad rows: the same one-line error (file, line, field); others: the same import."""
    fast, slow, _ = both(tmp_path, base, BAD[case], monkeypatch)
    assert fast == slow
    if "fine" not in case:
        assert "error" in fast


def test_votes_already_stored_take_the_per_row_rules(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-import (same ids skipped), a changed vote (refused) and a chain continuing a
    stored vote all give what the per-row path gives."""
    first = HEAD + row(1, "tiny", "ann", "p1", "first", "first", 5, "False", "2025-01-01", "")
    engine = open_store(base)
    csv = tmp_path / "first.csv"
    csv.write_text(first, encoding="utf-8")
    import_paths(engine, [csv])
    engine.dispose()
    cases = [
        first + row(2, "tiny", "ann", "p2", "first", "first", 5, "False", "2025-01-01", ""),
        HEAD + row(1, "tiny", "ann", "p1", "second", "first", 5, "False", "2025-01-01", ""),
        HEAD + row(3, "tiny", "ann", "p1", "second", "first", 5, "False", "2025-01-01", uid(1)),
        HEAD + row(4, "tiny", "ann", "p1", "second", "first", 5, "False", "2025-01-01", ""),
        HEAD + row(1, "tiny-arena", "ann", "b1", "tie", "", 5, "False", "2025-01-01", ""),
    ]
    for text in cases:
        fast, slow, _ = both(tmp_path, base, text, monkeypatch)
        assert fast == slow


def test_large_import_rebuilds_the_vote_indexes(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the index rebuild forced on, the indexes are all back and unchanged, and the
    rows are the per-row path's."""
    monkeypatch.setattr(repo, "BULK_REINDEX_MIN_ROWS", 0)
    con = sqlite3.connect(base)
    schema = con.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    con.close()
    fast, slow, taken = both(tmp_path, base, GOOD["chains"], monkeypatch)
    assert taken
    assert fast == slow
    con = sqlite3.connect(tmp_path / "fast.db")
    assert con.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall() == (
        schema
    )
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()


def test_fast_import_round_trips_through_export(tmp_path: Path, base: Path) -> None:
    """Export, import into a fresh database by the fast path, export again: same files."""
    engine = open_store(base)
    csv = tmp_path / "in.csv"
    csv.write_text(GOOD["chains"], encoding="utf-8")
    import_paths(engine, [csv])
    export_votes(engine, fmt="csv", out=tmp_path / "one")
    engine.dispose()
    assert isinstance(read_vote_table(tmp_path / "one" / "vote_log.csv"), VoteTable)
    fresh = open_store(tmp_path / "fresh.db")
    import_paths(fresh, [tmp_path / "one"])
    export_votes(fresh, fmt="csv", out=tmp_path / "two")
    fresh.dispose()
    for name in ("votes.csv", "vote_log.csv", "items.csv"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_annotator_ids_in_bulk_match_one_by_one(tmp_path: Path, base: Path) -> None:
    """repo.annotator_ids gives the ids annotator_id gives name by name (stored, legacy,
    new in order), and stores the same names."""
    from sqlmodel import Session

    names = ["zed", "legacy name", "ann", "zed", "bob"]
    got = []
    for mode in ("bulk", "each"):
        db = tmp_path / f"{mode}.db"
        shutil.copy(base, db)
        engine = open_store(db)
        with Session(engine) as s, s.begin():
            repo.annotator_id(s, "ann")
            ids: Sequence[int | None]
            if mode == "bulk":
                ids = repo.annotator_ids(s, names)
            else:
                ids = [repo.annotator_id(s, n) for n in names]
            rows = s.execute(sql_text("SELECT id, name FROM annotator ORDER BY id")).all()
        engine.dispose()
        got.append((ids, [tuple(r) for r in rows]))
    assert got[0] == got[1]
    assert got[0][0][1] == 1  # the legacy "Legacy  Name"


STAMPS = [
    "2025-03-01T12:00:00",
    "2025-03-01T12:00:00Z",
    "2025-03-01T12:00:00+00:00",
    "2025-03-01T12:00:00.000000Z",
    "2025-03-01T12:00:00.123456",
    "2025-03-01T12:00:00.000001+00:00",
    "2024-02-29T23:59:59.999999Z",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999Z",
    "",
]
"""Timestamps the fast path takes (the empty value: none)."""

REFUSED = [
    "2025-02-29T12:00:00Z",  # not a leap year
    "1900-02-29T00:00:00",
    "2025-04-31T00:00:00",
    "2025-13-01T00:00:00",
    "2025-00-10T00:00:00",
    "2025-01-00T00:00:00",
    "0000-01-01T00:00:00",
    "2025-01-01T24:00:00",
    "2025-01-01T23:60:00",
    "2025-01-01T23:59:60",
    "2025-01-01 12:00:00",  # a space: the store's form, not the export's
    "2025-01-01T12:00",
    "2025-01-01T12:00:00.123Z",
    "2025-01-01T12:00:00.1234567",
    "2025-01-01T12:00:00+01:00",
    "2025-01-01T12:00:00ZZ",
    "2025-01-01T12:00:00Z ",
    " 2025-01-01T12:00:00",
    "2025-01-01T12:00:00.",
    "2025-01-01T12:00:00+00:00Z",
    "2025-01-01T12:00:00.12345Z",
    "２０２５-01-01T12:00:00",  # full-width digits: not ASCII
    "2025-01-01T12:00:00\t",
    " ",
]
"""Forms the fast path declines (the per-row path then accepts or names them)."""


def test_stamps_as_the_per_row_path_reads_them() -> None:
    """The fast path's timestamps equal what the per-row path stores (``fromisoformat``,
    in UTC, ``isoformat(sep=" ")``, a fraction of zero dropped), one value at a time and
    all together; every other form makes it decline. Reference: the standard library."""
    import pyarrow as pa

    from annotate.services import votes_io

    def reference(text: str) -> str | None:
        if not text:
            return None
        dt = votes_io._created_at(Path("x.csv"), 2, text)
        assert dt is not None
        return dt.replace(tzinfo=None).isoformat(sep=" ")

    got = votes_io._naive_stamps(pa.array(STAMPS, pa.string())).to_pylist()
    assert got == [reference(t) for t in STAMPS]
    for text in STAMPS:
        assert votes_io._naive_stamps(pa.array([text], pa.string())).to_pylist() == [
            reference(text)
        ]
    # a slice (an array whose offsets do not start at zero) reads the same
    sliced = pa.array(["x", *STAMPS], pa.string()).slice(1)
    assert votes_io._naive_stamps(sliced).to_pylist() == got
    for bad in REFUSED:
        with pytest.raises(votes_io._NotFastError):
            votes_io._naive_stamps(pa.array([STAMPS[0], bad], pa.string()))


def test_stamps_in_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """A column longer than a slice reads the same, and a bad value in any slice declines."""
    import pyarrow as pa

    from annotate.services import votes_io

    whole = votes_io._naive_stamps(pa.array(STAMPS, pa.string())).to_pylist()
    monkeypatch.setattr(votes_io, "_STAMP_CHUNK", 3)
    assert votes_io._naive_stamps(pa.array(STAMPS, pa.string())).to_pylist() == whole
    with pytest.raises(votes_io._NotFastError):
        votes_io._naive_stamps(pa.array([*STAMPS, REFUSED[0]], pa.string()))


def test_a_blank_line_takes_the_per_row_path(tmp_path: Path) -> None:
    """The CSV reader skips blank lines; the fast path declines a file with one (the rows
    would be fewer than the lines), so the per-row path reads it as it always did."""
    from annotate.services.votes_io import read_vote_table

    row = "00000000-0000-4000-8000-00000000000{k},s,ann,p1,first,,,,,\n"
    for body in (
        row.format(k=1) + "\n" + row.format(k=2),
        row.format(k=1) + row.format(k=2) + "\n",
        row.format(k=1) + row.format(k=2) + "\n\n",
    ):
        p = tmp_path / "v.csv"
        p.write_text(HEAD + body, encoding="utf-8")
        assert read_vote_table(p) is None, repr(body)
    p.write_text(HEAD + row.format(k=1) + row.format(k=2).rstrip("\n"), encoding="utf-8")
    table = read_vote_table(p)
    assert table is not None
    assert len(table) == 2


def test_packed_digits_are_the_decimal_text() -> None:
    """The packed insert's whole numbers (ids, response times) are their decimal text with
    leading zeros: reference ``format(v, "019d")`` (0, one digit, powers of ten, 2**63 - 1)."""
    import numpy as np

    values = [0, 1, 9, 10, 99, 100, 123456789, 10**18, 2**63 - 1, 60_000]
    got = importing._digits(np.array(values, dtype=np.int64), 19)
    assert [r.tobytes().decode() for r in got] == [format(v, "019d") for v in values]
    assert [r.tobytes().decode() for r in importing._digits(np.array([0, 7, 42]), 2)] == [
        "00",
        "07",
        "42",
    ]
    with pytest.raises(ValueError, match="does not fit"):
        importing._digits(np.array([100]), 2)


def test_uuid_check_matches_the_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    """The byte-class check of vote ids refuses exactly what the UUID pattern (a regular
    expression, the reference) refuses: every position with a wrong character, in any
    slice of rows."""
    import re
    import uuid

    import pyarrow as pa

    from annotate.services import votes_io

    pattern = re.compile(votes_io._UUID_PATTERN)
    good = [str(uuid.UUID(int=k * 7919 + 1)) for k in range(7)] + [str(uuid.uuid4()).upper()]
    monkeypatch.setattr(votes_io, "_STAMP_CHUNK", 3)
    assert votes_io._uuid_chars(pa.array(good, pa.string())).shape == (8, 36)
    for at in range(36):
        for c in "g-0F ":
            bad = good[-1][:at] + c + good[-1][at + 1 :]
            values = pa.array([*good[:-1], bad], pa.string())
            if pattern.match(bad):
                assert votes_io._uuid_chars(values).shape == (8, 36)
            else:
                with pytest.raises(votes_io._NotFastError):
                    votes_io._uuid_chars(values)


def test_duplicate_check_never_misses_an_equal_pair() -> None:
    """A hash check: equal vote ids always report "possible"; distinct random ones (the
    reference: a Python set of the strings) report none."""
    import uuid

    import numpy as np
    import pyarrow as pa

    from annotate.services import votes_io

    rng = np.random.default_rng(5)
    ids = [str(uuid.UUID(int=int(x))) for x in rng.integers(0, 2**62, 5000)]
    assert len(set(ids)) == len(ids)

    def possible(values: list[str]) -> bool:
        return votes_io._duplicates_possible(votes_io._uuid_chars(pa.array(values, pa.string())))

    assert not possible(ids)
    assert not possible(ids[:1])
    for a, b in [(0, 1), (17, 4999), (2500, 2501)]:
        assert possible([*ids[:b], ids[a], *ids[b:]])
    assert not possible([ids[0], ids[0].upper()])  # other strings: the exact check's call
