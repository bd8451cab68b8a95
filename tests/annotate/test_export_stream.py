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
