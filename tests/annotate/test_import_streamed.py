"""A large vote CSV imported while it is read (``importing._import_streamed``, issue 13).

Each file is imported into copies of one database three ways: streamed in small chunks
(``STREAM_CHUNK_ROWS`` lowered so that a file of ~150 rows is cut into ~20 chunks), as
before (the whole file read, then inserted: streaming off) and by the per-row path. The
streamed import must give the same rows, annotators and report as the other two, and for
a file it does not take the same one-line error (the first bad row in file order) with
the database unchanged, whatever chunk the bad row is in. The cases of the fast path's
own tests (``test_import_fast.BAD``) are put after a good multi-chunk body, in the last
chunk, and before it, in the first.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from annotate.errors import AnnotateError, InputFileError
from annotate.services import importing, votes_io
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.votes_io import FastRead, parse_vote_file
from annotate.store import repo

from .test_import_fast import BAD, HEAD, base, row, uid

__all__ = ["base"]  # the fixture (a closed database with the tiny studies), for these tests


CHUNK = 7
"""Rows per chunk in these tests (the body below has ~150 rows: ~20 chunks)."""

ANNOTATORS = [f"w{k:02d}" for k in range(30)]


def body(first_id: int = 1000) -> str:
    """A good vote log of study ``tiny`` spanning many chunks: a vote of every annotator on
    every item, then changes of mind and retractions naming votes chunks earlier, then
    changes of those; names in several spellings (one of them the stored legacy name)."""
    k = first_id
    lines: list[str] = []
    first: dict[tuple[str, str], int] = {}
    stamps = ["2025-01-01T10:00:00Z", "2025-01-02T10:00:00.250000", "", "2025-03-01 00:00:00"]
    stamps[3] = "2025-03-01T00:00:00+00:00"
    for item in ("p1", "p2", "p3"):
        for i, who in enumerate(ANNOTATORS):
            spelled = who.upper() if i % 5 == 0 else who
            lines.append(
                row(
                    k,
                    "tiny",
                    spelled,
                    item,
                    ("first", "second", "skip")[i % 3],
                    ("first", "second", "")[i % 3],
                    i * 10 if i % 4 else "",
                    ("False", "true", "")[i % 3],
                    stamps[i % 4],
                    "",
                )
            )
            first[(who, item)] = k
            k += 1
    lines.append(row(k, "tiny", "legacy name", "p1", "first", "", 5, "", stamps[0], ""))
    legacy_root = k
    k += 1
    changed: dict[tuple[str, str], int] = {}
    for i, who in enumerate(ANNOTATORS[::2]):
        item = ("p1", "p2", "p3")[i % 3]
        choice = "retract" if i % 4 == 3 else "second"
        lines.append(
            row(k, "tiny", who, item, choice, "", "", "", stamps[1], uid(first[(who, item)]))
        )
        changed[(who, item)] = k
        k += 1
    lines.append(row(k, "tiny", "Legacy  Name", "p1", "skip", "", "", "", "", uid(legacy_root)))
    k += 1
    for (who, item), prev in list(changed.items())[:5]:
        lines.append(row(k, "tiny", who, item, "first", "first", 1, "1", stamps[0], uid(prev)))
        k += 1
    return "".join(lines)


def dump(db: Path) -> dict[str, Any]:
    con = sqlite3.connect(db)
    try:
        votes = con.execute(
            "SELECT id, uuid, study_id, annotator_id, item_id, choice, swapped, response_ms, "
            "fast, CASE WHEN created_at LIKE '2025-%' THEN created_at ELSE 'now' END, "
            "supersedes, selection_probability, retest_of FROM vote ORDER BY id"
        ).fetchall()
        annotators = con.execute("SELECT id, name FROM annotator ORDER BY id").fetchall()
        schema = con.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        (check,) = con.execute("PRAGMA integrity_check").fetchone()
    finally:
        con.close()
    return {"votes": votes, "annotators": annotators, "schema": schema, "check": check}


def outcome(db: Path, csv: Path, streamed: list[bool]) -> dict[str, Any]:
    """The import's report or one-line error, and the database after it."""
    real = importing._import_streamed

    def spy(*args: Any, **kwargs: Any) -> Any:
        got = real(*args, **kwargs)
        streamed.append(isinstance(got, importing.ImportReport))  # (else handed back)
        return got

    importing._import_streamed = spy
    engine = open_store(db)
    try:
        result: dict[str, Any] = {"report": import_paths(engine, [csv]).as_dict()}
    except AnnotateError as err:
        result = {"error": str(err)}
    finally:
        engine.dispose()
        importing._import_streamed = real
    return result | dump(db)


def three(
    tmp_path: Path, base: Path, text: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], bool]:
    """Outcomes of the streamed import, of the import as before and of the per-row path,
    and whether the streamed import took the file."""
    csv = tmp_path / "vote_log.csv"
    csv.write_text(text, encoding="utf-8")
    dbs = {k: tmp_path / f"{k}.db" for k in ("streamed", "before", "slow")}
    for db in dbs.values():
        shutil.copy(base, db)
    taken: list[bool] = []
    with monkeypatch.context() as m:
        m.setattr(importing, "STREAM_MIN_ROWS", 1)
        m.setattr(importing, "STREAM_CHUNK_ROWS", CHUNK)
        streamed = outcome(dbs["streamed"], csv, taken)
    with monkeypatch.context() as m:
        m.setattr(importing, "STREAM_MIN_ROWS", 10**9)
        before = outcome(dbs["before"], csv, [])
    with monkeypatch.context() as m:
        m.setattr(importing, "STREAM_MIN_ROWS", 10**9)
        m.setattr(importing, "fast_vote_table", lambda path: FastRead(None))
        m.setattr(importing, "read_votes", lambda path, fast=None: parse_vote_file(path))
        slow = outcome(dbs["slow"], csv, [])
    return streamed, before, slow, bool(taken and taken[0])


@pytest.fixture(params=["indexes kept", "indexes rebuilt, own foreign-key checks"])
def bulk_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways the bulk insert runs: a small import (indexes kept, SQLite's foreign
    keys) and a large one (indexes dropped and rebuilt, the import's own parent checks)."""
    if request.param != "indexes kept":
        monkeypatch.setattr(repo, "BULK_REINDEX_MIN_ROWS", 1)
        monkeypatch.setattr(importing, "OWN_FOREIGN_KEYS_MIN_ROWS", 1)
    return str(request.param)


def test_the_body_spans_many_chunks() -> None:
    rows = body().count("\n")
    assert rows > 10 * CHUNK


def test_streamed_import_gives_the_rows_of_the_import_before(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, bulk_mode: str
) -> None:
    streamed, before, slow, taken = three(tmp_path, base, HEAD + body(), monkeypatch)
    assert taken, "the streamed import should take this file"
    assert "error" not in streamed, streamed
    assert streamed == before == slow
    assert streamed["check"] == "ok"
    assert len(streamed["votes"]) == body().count("\n")


# A bad row only the whole file reveals, in the LAST chunk (the other chunks are in)
ACROSS_CHUNKS = {
    "duplicate id across chunks": row(1000, "tiny", "ann", "p1", "first", "", "", "", "", ""),
    "duplicate supersedes across chunks": row(
        5, "tiny", "w00", "p1", "second", "", "", "", "", uid(1000)
    ),
    "second chain across chunks": row(5, "tiny", "W01", "p1", "first", "", "", "", "", ""),
    "supersedes of another annotator across chunks": row(
        5, "tiny", "ann", "p2", "first", "", "", "", "", uid(1031)
    ),
    "supersedes of a stale vote across chunks": row(
        5, "tiny", "w02", "p2", "first", "", "", "", "", uid(1032)
    ),
    "unknown supersedes at the end": row(5, "tiny", "ann", "p1", "first", "", "", "", "", uid(9)),
}


@pytest.mark.parametrize("case", sorted(ACROSS_CHUNKS))
def test_a_row_bad_across_chunks_in_the_last_chunk(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, case: str, bulk_mode: str
) -> None:
    """The error of the import before (the first bad row), the database unchanged."""
    text = HEAD + body() + ACROSS_CHUNKS[case]
    streamed, before, slow, _ = three(tmp_path, base, text, monkeypatch)
    assert "error" in streamed, streamed
    assert streamed == before == slow
    assert streamed["votes"] == []
    assert streamed == streamed | dump(base)  # the database unchanged


def test_supersedes_naming_a_vote_of_a_later_chunk(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, bulk_mode: str
) -> None:
    """A change of mind before the vote it replaces (the per-row path orders them): the
    streamed import hands the file to the import as before, which takes it the same way."""
    early = row(2, "tiny", "ann", "p1", "second", "", "", "", "2025-05-01T00:00:00Z", uid(1))
    late = row(1, "tiny", "ann", "p1", "first", "", "", "", "2025-04-01T00:00:00Z", "")
    streamed, before, slow, taken = three(tmp_path, base, HEAD + early + body() + late, monkeypatch)
    assert not taken
    assert "error" not in streamed, streamed
    assert streamed == before == slow
    uuids = [v[1] for v in streamed["votes"]]
    assert uuids.index(uid(1)) < uuids.index(uid(2))  # the parent first


def test_supersedes_naming_a_vote_chunks_earlier_is_streamed(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # w00's current vote on p1: 1107 (90 roots from 1000, the legacy name's vote 1090,
    # 15 changes of mind from 1091, the legacy name's change 1106, then the changes of
    # the first five changes from 1107); a change of it in the last chunk
    late = row(5, "tiny", "w00", "p1", "skip", "", "", "", "", uid(1107))
    text = HEAD + body() + late
    streamed, before, slow, taken = three(tmp_path, base, text, monkeypatch)
    assert "error" not in streamed, streamed
    assert taken
    assert streamed == before == slow


BAD_ROWS = {case: text[len(HEAD) :] for case, text in BAD.items() if text.startswith(HEAD)}


@pytest.mark.parametrize("where", ["last chunk", "first chunk"])
@pytest.mark.parametrize("case", sorted(BAD_ROWS))
def test_bad_rows_in_a_multi_chunk_file(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, case: str, where: str
) -> None:
    """Each case of the fast path's tests after (or before) a good body of ~20 chunks: the
    same outcome as before, the same one-line error naming the first bad row."""
    bad = BAD_ROWS[case]
    if not bad:  # only a header
        pytest.skip("no rows to place")
    text = HEAD + (body() + bad if where == "last chunk" else bad + body())
    streamed, before, slow, _ = three(tmp_path, base, text, monkeypatch)
    assert streamed == before
    if "fine" not in case:
        assert "error" in streamed
        assert streamed["votes"] == []
        assert streamed == streamed | dump(base)  # the database unchanged
        assert streamed["error"] == slow["error"]


def test_two_studies_are_handed_back(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second study in a later chunk: rolled back, imported as before (both studies)."""
    other = row(7, "tiny-arena", "ann", "b1", "tie", "model_b", 5, "False", "", "")
    streamed, before, slow, taken = three(tmp_path, base, HEAD + body() + other, monkeypatch)
    assert not taken
    assert "error" not in streamed
    assert streamed == before == slow


@pytest.mark.parametrize("case", sorted(BAD_ROWS))
def test_a_refused_row_is_checked_without_a_second_fast_read(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """A row the fast path's checks refuse in the last chunk: the streamed import names it
    itself, checking row by row from the refused chunk on (``_raise_bad_row``), or, where
    no row from there on is refused, hands back what it learnt (``FastRead``), so the
    usual import goes to ``check_vote_file`` (threshold lowered to 1 row) without reading
    the file with the fast path again; the one-line error and the import are the per-row
    path's, the database unchanged."""
    bad = BAD_ROWS[case]
    if not bad:
        pytest.skip("no rows to place")
    text = HEAD + body() + bad
    _, _, slow, _ = three(tmp_path, base, text, monkeypatch)
    csv = tmp_path / "vote_log.csv"
    db = tmp_path / "checked.db"
    shutil.copy(base, db)
    handed: list[Any] = []
    fast_reads: list[Path] = []
    real_streamed, real_fast = importing._import_streamed, votes_io.fast_vote_table

    def streamed_spy(*args: Any, **kwargs: Any) -> Any:
        try:
            handed.append(real_streamed(*args, **kwargs))
        except AnnotateError as err:
            handed.append(err)
            raise
        return handed[-1]

    def fast_spy(path: Path) -> FastRead:
        fast_reads.append(path)
        return real_fast(path)

    with monkeypatch.context() as m:
        m.setattr(importing, "STREAM_MIN_ROWS", 1)
        m.setattr(importing, "STREAM_CHUNK_ROWS", CHUNK)
        m.setattr(votes_io, "CHECK_FIRST_ROWS", 1)
        m.setattr(importing, "_import_streamed", streamed_spy)
        m.setattr(importing, "fast_vote_table", fast_spy)
        engine = open_store(db)
        try:
            got: dict[str, Any] = {"report": import_paths(engine, [csv]).as_dict()}
        except AnnotateError as err:
            got = {"error": str(err)}
        finally:
            engine.dispose()
    got |= dump(db)
    assert got == slow
    if case in ("february 30", "bad uuid", "control in annotator"):  # row checks refuse
        assert isinstance(handed[0], InputFileError)  # named by the streamed import
    if isinstance(handed[0], (FastRead, InputFileError)):
        assert not isinstance(handed[0], FastRead) or handed[0].refused_rows > 0
        assert fast_reads == []
    if "fine" not in case:
        assert got["votes"] == []
        assert got == got | dump(base)


@pytest.mark.parametrize("end", ["\n", ""], ids=["newline at the end", "no newline at the end"])
@pytest.mark.parametrize("probe", [40, 1 << 22], ids=["short probe", "whole-file probe"])
def test_chunks_cover_whole_lines_and_count_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end: str, probe: int
) -> None:
    """open_vote_chunks cuts at line ends, whatever mean line length its probe of the first
    bytes gives, and counts each chunk's lines (the last one without a line end too)."""
    text = (HEAD + body()).rstrip("\n") + end
    csv = tmp_path / "vote_log.csv"
    csv.write_text(text, encoding="utf-8")
    monkeypatch.setattr(votes_io, "_LENGTH_PROBE", probe)
    chunks = votes_io.open_vote_chunks(csv, CHUNK)
    assert chunks is not None
    smaller_first = votes_io.open_vote_chunks(csv, CHUNK * 4, CHUNK)
    assert smaller_first is not None
    assert smaller_first.bounds[0] == chunks.bounds[0]  # the first chunk as small
    assert len(smaller_first.bounds) < len(chunks.bounds)
    assert smaller_first.rows == chunks.rows
    data = text.encode()[len(HEAD) :]
    assert chunks.bounds[0][0] == 0
    assert chunks.bounds[-1][1] == len(data)
    for (_, b), (c, _) in zip(chunks.bounds, chunks.bounds[1:], strict=False):
        assert b == c
        assert data[b - 1 : b] == b"\n"
    pieces = [data[a:b] for a, b in chunks.bounds]
    assert chunks.lines == [len(p.decode().splitlines()) for p in pieces]
    assert chunks.rows == len(chunks) == body().count("\n")
    assert len(chunks.bounds) > 5


def test_a_rolled_back_attempt_gives_its_memory_back(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the streamed import hands back (a bad row in its last chunk): the heap is
    trimmed (importing._trim_heap, glibc's malloc_trim) before the usual import reads the
    file again; the error is the same as without streaming."""
    calls: list[int] = []
    real = importing._trim_heap

    def spy() -> None:
        calls.append(1)
        real()  # runs here without error (a no-op where there is no malloc_trim)

    monkeypatch.setattr(importing, "_trim_heap", spy)
    bad = row(1000, "tiny", "ann", "p1", "first", "", "", "", "", "")  # a repeated vote id
    streamed, before, _, taken = three(tmp_path, base, HEAD + body() + bad, monkeypatch)
    assert not taken
    assert calls == [1]
    assert "error" in streamed
    assert streamed == before
