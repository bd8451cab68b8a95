"""A large vote CSV with a row the fast path refuses is checked before it is read whole.

``annotate import`` of a million-row ``vote_log.csv`` with one bad row used to read the
whole file into Python records (``parse_vote_file``: ~3.3 GB and ~24 s) just to name that
row. From ``votes_io.CHECK_FIRST_ROWS`` rows, ``read_votes`` first runs
``check_vote_file``, which makes the same checks in the same order and keeps no row. These
tests lower the threshold to 1 so that every case of ``test_import_fast`` takes the new
step, and require what the per-row path gives: the same one-line error (file, line,
field) with the database unchanged, or the same import for a file that is fine.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.errors import InputFileError
from annotate.services import votes_io
from tests.annotate.test_import_fast import BAD, GOOD, HEAD, base, both, row, uid

__all__ = ["base"]  # the fixture, imported for these tests


@pytest.fixture
def check_first(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threshold at 1 row; the calls of ``check_vote_file`` and ``parse_vote_file``
    (in order) as ``read_votes`` makes them."""
    calls: list[str] = []
    check, parse = votes_io.check_vote_file, votes_io.parse_vote_file

    def spy_check(path: Path) -> None:
        calls.append("check")
        check(path)

    def spy_parse(path: Path) -> list[votes_io.VoteRecord]:
        calls.append("parse")
        return parse(path)

    monkeypatch.setattr(votes_io, "CHECK_FIRST_ROWS", 1)
    monkeypatch.setattr(votes_io, "check_vote_file", spy_check)
    monkeypatch.setattr(votes_io, "parse_vote_file", spy_parse)
    return calls


@pytest.mark.parametrize("case", sorted(BAD))
def test_checked_first_gives_the_per_row_result(
    tmp_path: Path,
    base: Path,
    monkeypatch: pytest.MonkeyPatch,
    check_first: list[str],
    case: str,
) -> None:
    """Every file the fast path declines: the per-row path's error or import; a bad row is
    named by the check alone (the file is never read whole)."""
    fast, slow, _ = both(tmp_path, base, BAD[case], monkeypatch)
    assert fast == slow
    # (the per-row side of ``both`` calls the real parse_vote_file, unseen here)
    if votes_io.fast_vote_table(tmp_path / "votes.csv").refused_rows:
        assert check_first == (["check"] if "error" in fast else ["check", "parse"])
    else:
        assert check_first in ([], ["parse"])
    if "fine" not in case:
        assert "error" in fast


def test_a_shape_error_later_comes_before_a_field_error_earlier(
    tmp_path: Path, check_first: list[str]
) -> None:
    """``parse_vote_file`` reads every row before it checks a field, so a short row on
    line 4 is named before the bad choice on line 2: the check names the same one."""
    csv = tmp_path / "votes.csv"
    csv.write_text(
        HEAD
        + row(1, "tiny", "ann", "p1", "sideways", "", "", "", "", "")
        + row(2, "tiny", "ann", "p2", "first", "", "", "", "", "")
        + f"{uid(3)},tiny,ann,p3,first\n",
        encoding="utf-8",
    )
    with pytest.raises(InputFileError) as parsed:
        votes_io.parse_vote_file(csv)
    with pytest.raises(InputFileError) as checked:
        votes_io.check_vote_file(csv)
    assert str(checked.value) == str(parsed.value)
    assert ":4:" in str(checked.value)
    check_first.clear()
    with pytest.raises(InputFileError) as read:
        votes_io.read_votes(csv)
    assert str(read.value) == str(parsed.value)
    assert check_first == ["check"]


def test_a_field_error_on_the_last_row_is_named_by_the_check(
    tmp_path: Path, check_first: list[str]
) -> None:
    """Many good rows, then a bad date: the check names it and nothing is parsed whole."""
    good = "".join(
        row(k, "tiny", f"a{k % 7}", f"p{k % 3 + 1}", "first", "", "", "", "", "")
        for k in range(1, 400)
    )
    csv = tmp_path / "votes.csv"
    csv.write_text(
        HEAD + good + row(400, "tiny", "ann", "p1", "first", "", "", "", "2025-02-30", ""),
        encoding="utf-8",
    )
    with pytest.raises(InputFileError) as read:
        votes_io.read_votes(csv)
    assert check_first == ["check"]
    assert ":401:" in str(read.value)
    assert "created_at" in str(read.value)
    with pytest.raises(InputFileError) as parsed:
        votes_io.parse_vote_file(csv)
    assert str(read.value) == str(parsed.value)


def test_only_a_header_is_no_votes_in_both(tmp_path: Path) -> None:
    csv = tmp_path / "votes.csv"
    csv.write_text(HEAD, encoding="utf-8")
    with pytest.raises(InputFileError) as parsed:
        votes_io.parse_vote_file(csv)
    with pytest.raises(InputFileError) as checked:
        votes_io.check_vote_file(csv)
    assert str(checked.value) == str(parsed.value)


def test_a_good_file_goes_straight_to_the_fast_path(tmp_path: Path, check_first: list[str]) -> None:
    csv = tmp_path / "votes.csv"
    csv.write_text(GOOD["chains"], encoding="utf-8")
    assert isinstance(votes_io.read_votes(csv), votes_io.VoteTable)
    assert check_first == []


ROW_KINDS: dict[str, Callable[[int], str]] = {
    "good": lambda k: row(k, "tiny", "ann", f"p{k % 3 + 1}", "first", "", "", "", "", ""),
    "bad choice": lambda k: row(k, "tiny", "ann", "p1", "sideways", "", "", "", "", ""),
    "bad date": lambda k: row(k, "tiny", "ann", "p1", "first", "", "", "", "2025-02-30", ""),
    "short": lambda k: f"{uid(k)},tiny,ann,p1,first\n",
    "long": lambda k: row(k, "tiny", "ann", "p1", "first", "", "", "", "", "", "x"),
    "repeated id": lambda k: row(1, "tiny", "ann", "p1", "first", "", "", "", "", ""),
    "blank": lambda k: "\n",
}


@settings(max_examples=300, deadline=None)
@given(kinds=st.lists(st.sampled_from(sorted(ROW_KINDS)), max_size=12))
def test_one_pass_gives_the_first_error_of_reading_every_row_first(
    tmp_path_factory: pytest.TempPathFactory, kinds: list[str]
) -> None:
    """parse_vote_file and check_vote_file read the rows once, never all held; their error
    (or votes) must be the ones of the reference that reads every row and then checks
    each: a shape error anywhere before any field error."""
    csv = tmp_path_factory.mktemp("one-pass") / "votes.csv"
    csv.write_text(HEAD + "".join(ROW_KINDS[k](i + 1) for i, k in enumerate(kinds)))

    def outcome(fn: Callable[[Path], object]) -> object:
        try:
            return fn(csv)
        except InputFileError as err:
            return str(err)

    def reference(path: Path) -> object:
        out = list(votes_io._vote_records(path, iter(votes_io.read_records(path))))
        if not out:
            raise InputFileError(path, "no votes", expected="at least one vote row")
        return out

    expected = outcome(reference)
    assert outcome(votes_io.parse_vote_file) == expected
    checked = outcome(votes_io.check_vote_file)
    assert checked == (expected if isinstance(expected, str) else None)
