"""A streamed vote CSV the fast path refuses names its first bad row itself (issue 13).

``importing._raise_bad_row`` checks row by row only from the refused chunk (or the chunk of
the first repeated vote id) on, knowing the vote ids before it that the rest names again.
Reference: the per-row path alone (``parse_vote_file`` of the whole file, as the import did
for such a file before), on a copy of the same database: the same one-line error (or the
same import, for a file only the per-row path reads), the database unchanged.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotate.errors import AnnotateError, InputFileError
from annotate.services import importing
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.votes_io import FastRead, parse_vote_file

from .test_import_fast import HEAD, base, row, uid
from .test_import_streamed import CHUNK, body, dump

__all__ = ["base"]

LINES = body().splitlines(keepends=True)
FIRST_ID = 1000  # body()'s first vote id: uid(1000), on line 2

BAD_KINDS: dict[str, Any] = {
    "bad choice": lambda k: row(k, "tiny", "zed", "p1", "sideways", "", "", "", "", ""),
    "bad date": lambda k: row(k, "tiny", "zed", "p1", "first", "", "", "", "2025-02-30", ""),
    "short row": lambda k: f"{uid(k)},tiny,zed,p1,first\n",
    "long row": lambda k: row(k, "tiny", "zed", "p1", "first", "", "", "", "", "", "x"),
    "empty annotator": lambda k: row(k, "tiny", "", "p1", "first", "", "", "", "", ""),
    "bad vote id": lambda k: "not-a-uuid" + row(k, "tiny", "zed", "p1", "first")[36:],
    "repeated id": lambda k: row(FIRST_ID, "tiny", "zed", "p2", "first", "", "", "", "", ""),
    "repeated id, spaces": lambda k: (
        f" {uid(FIRST_ID)} " + row(k, "tiny", "zed", "p2", "first", "", "", "", "", "")[36:]
    ),
    "blank line": lambda k: "\n",
    "offset stamp": lambda k: row(
        k, "tiny", "zed", "p3", "first", "", "", "", "2025-01-01T10:00:00+05:00", ""
    ),
}
"""Rows the fast path refuses; the last two are no error for the per-row path."""


def outcome(db: Path, csv: Path) -> dict[str, Any]:
    engine = open_store(db)
    try:
        got: dict[str, Any] = {"report": import_paths(engine, [csv]).as_dict()}
    except AnnotateError as err:
        got = {"error": str(err)}
    finally:
        engine.dispose()
    return got | dump(db)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    placed=st.lists(
        st.tuples(st.integers(0, len(LINES)), st.sampled_from(sorted(BAD_KINDS))),
        min_size=1,
        max_size=3,
    ),
    narrow=st.sampled_from([1, 2, 3, 8192]),
)
def test_the_first_bad_row_is_named_as_the_per_row_path_names_it(
    tmp_path_factory: pytest.TempPathFactory,
    base: Path,
    monkeypatch: pytest.MonkeyPatch,
    placed: list[tuple[int, str]],
    narrow: int,
) -> None:
    """Up to three rows the fast path refuses anywhere in a file of ~20 chunks, the refused
    chunk checked again in parts of ``narrow`` lines."""
    tmp = tmp_path_factory.mktemp("bad-row")
    lines = list(LINES)
    for n, (at, kind) in enumerate(sorted(placed, reverse=True)):
        lines.insert(at, BAD_KINDS[kind](90_000 + n))
    csv = tmp / "vote_log.csv"
    csv.write_text(HEAD + "".join(lines), encoding="utf-8")
    streamed_db, slow_db = tmp / "streamed.db", tmp / "slow.db"
    shutil.copy(base, streamed_db)
    shutil.copy(base, slow_db)
    named: list[BaseException] = []
    real = importing._raise_bad_row

    def spy(at: Any) -> None:
        try:
            real(at)
        except InputFileError as err:
            named.append(err)
            raise

    with monkeypatch.context() as m:
        m.setattr(importing, "STREAM_MIN_ROWS", 1)
        m.setattr(importing, "STREAM_CHUNK_ROWS", CHUNK)
        m.setattr(importing, "_raise_bad_row", spy)
        m.setattr(importing, "NARROW_ROWS", narrow)
        streamed = outcome(streamed_db, csv)
    with monkeypatch.context() as m:  # the reference: the per-row path alone
        m.setattr(importing, "STREAM_MIN_ROWS", 10**9)
        m.setattr(importing, "fast_vote_table", lambda path: FastRead(None))
        m.setattr(importing, "read_votes", lambda path, fast=None: parse_vote_file(path))
        slow = outcome(slow_db, csv)
    assert streamed == slow
    if "error" in streamed:
        assert "\n" not in streamed["error"]
        assert streamed == streamed | dump(base)  # the database unchanged
    for err in named:
        assert str(err) == slow["error"]


def test_a_repeat_before_the_refused_chunk_is_named_first(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vote id repeated in chunk 3 (found only across chunks) and a bad choice in a later
    chunk: the repeat is the first error, named by the check that starts at its chunk."""
    lines = list(LINES)
    lines.insert(len(lines) - 2, BAD_KINDS["bad choice"](90_001))
    lines.insert(3 * CHUNK + 2, BAD_KINDS["repeated id"](90_000))
    csv = tmp_path / "vote_log.csv"
    csv.write_text(HEAD + "".join(lines), encoding="utf-8")
    db = tmp_path / "v.db"
    shutil.copy(base, db)
    monkeypatch.setattr(importing, "STREAM_MIN_ROWS", 1)
    monkeypatch.setattr(importing, "STREAM_CHUNK_ROWS", CHUNK)
    got = outcome(db, csv)
    assert got["error"] == (
        f"{csv}:{3 * CHUNK + 4}: field 'vote_id': vote {uid(FIRST_ID)} appears twice "
        "(first on line 2) (expected unique vote ids)"
    )
    assert got == got | dump(base)


@pytest.mark.parametrize("bom", ["", "\ufeff"], ids=["no BOM", "BOM"])
@pytest.mark.parametrize("narrow", [2, 8192])
def test_a_bad_row_after_a_byte_order_mark(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch, bom: str, narrow: int
) -> None:
    """The tail is read from the file by byte offset: a UTF-8 byte-order mark before the
    header moves it by three bytes."""
    lines = list(LINES)
    lines.insert(5 * CHUNK + 3, BAD_KINDS["bad date"](90_000))
    csv = tmp_path / "vote_log.csv"
    csv.write_text(bom + HEAD + "".join(lines), encoding="utf-8")
    db = tmp_path / "v.db"
    shutil.copy(base, db)
    monkeypatch.setattr(importing, "STREAM_MIN_ROWS", 1)
    monkeypatch.setattr(importing, "STREAM_CHUNK_ROWS", CHUNK)
    monkeypatch.setattr(importing, "NARROW_ROWS", narrow)
    got = outcome(db, csv)
    with pytest.raises(InputFileError) as slow:
        parse_vote_file(csv)
    assert got["error"] == str(slow.value)
    assert f":{5 * CHUNK + 5}: field 'created_at'" in got["error"]
    assert got == got | dump(base)
