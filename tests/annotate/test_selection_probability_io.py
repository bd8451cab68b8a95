"""``selection_probability`` in vote exports and imports (issue 13, second part).

The adaptive schedule stores with each vote the probability with which it chose the
item (migration 007). Exports write it as the last column (``repr`` of the float, the
text ``float()`` reads back exactly; empty when null) and ``annotate import`` reads it
back, so an adaptive study's export re-imports losslessly; files without the column (older
exports) still import, with the column empty. Every export path is checked: the columnar
CSV path, the SQL line path, the csv-writer path, JSON Lines and Parquet; and both import
paths (the vectorised CSV reader and the per-row one).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from annotate.errors import InputFileError
from annotate.services import exporting
from annotate.services.db import open_store
from annotate.services.exporting import export_votes
from annotate.services.importing import import_paths
from annotate.services.votes_io import EXPORT_COLUMNS, read_vote_table
from annotate.store import repo
from annotate.store.writelock import write_session

DATA = Path(__file__).resolve().parent.parent / "data"
STUDIES = [DATA / "studies" / "tiny-difficulty", DATA / "studies" / "tiny-arena"]
PROBABILITIES = [0.1 + 0.2, 1 / 3, 1.0, 1e-05, 2.0**-30, None, 0.5]
"""Floats whose shortest repr needs 17 digits, an exponent, or is whole; and a null."""


def uid(k: int) -> str:
    return f"00000000-0000-4000-8000-{k:012d}"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    db = tmp_path / "source.db"
    engine = open_store(db)
    import_paths(engine, STUDIES)
    with write_session(engine) as s:
        tiny = repo.get_study(s, "tiny")
        arena = repo.get_study(s, "tiny-arena")
        assert tiny is not None
        assert arena is not None
        p1 = repo.item_ids(s, tiny.id)["p1"]
        b1, b2 = (repo.item_ids(s, arena.id)[k] for k in ("b1", "b2"))
        ann = [repo.annotator_id(s, n) for n in ("ada", "bo")]
        cells = [
            (tiny, 0, p1, "first", None),
            (tiny, 0, p1, "second", uid(1)),
            (tiny, 1, p1, "skip", None),
            (arena, 0, b1, "model_a", None),
            (arena, 0, b2, "tie", None),
            (arena, 1, b1, "model_b", None),
            (arena, 1, b1, "retract", uid(6)),
        ]
        rows: list[tuple[Any, ...]] = []
        for k, (st, a, item, choice, sup) in enumerate(cells):
            stamp = f"2025-01-01 10:00:0{k}.{k + 1:06d}"
            swapped, ms, prob = k % 2 == 0, 100 * k, PROBABILITIES[k]
            head = (uid(k + 1), st.id, ann[a], item, choice, swapped, ms, False, stamp)
            rows.append((*head, sup, prob))
        repo.bulk_insert_votes(s, rows)
    engine.dispose()
    return db


def _votes(db: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT v.uuid, s.name, a.name, i.key, v.choice, v.swapped, v.response_ms, v.fast, "
        "v.created_at, v.supersedes, v.selection_probability, typeof(v.selection_probability) "
        "FROM vote v JOIN study s ON s.id = v.study_id JOIN annotator a ON a.id = v.annotator_id "
        "JOIN item i ON i.id = v.item_id ORDER BY v.id"
    ).fetchall()
    con.close()
    return rows


def _round_trip(source: Path, tmp_path: Path, fmt: str) -> tuple[Path, list[tuple[Any, ...]]]:
    engine = open_store(source)
    export_votes(engine, fmt=fmt, out=tmp_path / "out")
    engine.dispose()
    target = tmp_path / "target.db"
    engine = open_store(target)
    import_paths(engine, STUDIES)
    report = import_paths(engine, [tmp_path / "out" / f"vote_log.{fmt}"])
    engine.dispose()
    assert report.votes_added == len(PROBABILITIES)
    return tmp_path / "out" / f"vote_log.{fmt}", _votes(target)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_round_trip_keeps_the_probabilities(source: Path, tmp_path: Path, fmt: str) -> None:
    path, imported = _round_trip(source, tmp_path, fmt)
    assert imported == _votes(source)
    assert [r[10] for r in imported] == PROBABILITIES  # exact floats
    if fmt == "csv":
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines[0].split(",") == list(EXPORT_COLUMNS)
        assert lines[0].endswith(",study_fingerprint,selection_probability")
        assert [line.rsplit(",", 1)[1] for line in lines[1:]] == [
            "" if p is None else repr(p) for p in PROBABILITIES
        ]
        table = read_vote_table(path)  # the vectorised reader took the file
        assert table is not None
        assert table.selection_probability.to_pylist() == PROBABILITIES


def _csv_export(engine: Any, folder: Path) -> bytes:
    export_votes(engine, fmt="csv", out=folder)
    return (folder / "vote_log.csv").read_bytes() + (folder / "votes.csv").read_bytes()


def test_every_csv_path_writes_the_same_column(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The columnar path, the SQL line path and the csv-writer path write the same bytes."""
    engine = open_store(source)
    columnar = _csv_export(engine, tmp_path / "a")

    def decline(*args: Any) -> Any:
        raise exporting._NotColumnarError

    monkeypatch.setattr(exporting, "_write_csv_votes_columnar", decline)
    sql_lines = _csv_export(engine, tmp_path / "b")
    monkeypatch.setattr(repo, "vote_export_plain", lambda s, study_id: False)
    csv_writer = _csv_export(engine, tmp_path / "c")
    engine.dispose()
    assert columnar == sql_lines == csv_writer
    assert b",0.30000000000000004\n" in columnar


def test_per_row_import_reads_the_column(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CSV the vectorised reader declines (a quoted cell) gives the same probabilities."""
    engine = open_store(source)
    export_votes(engine, fmt="csv", out=tmp_path / "out")
    engine.dispose()
    log = tmp_path / "out" / "vote_log.csv"
    text = log.read_text(encoding="utf-8").replace(",tiny,", ',"tiny",', 1)
    log.write_text(text, encoding="utf-8")
    assert read_vote_table(log) is None
    target = tmp_path / "target.db"
    engine = open_store(target)
    import_paths(engine, STUDIES)
    import_paths(engine, [log])
    engine.dispose()
    assert _votes(target) == _votes(source)


@pytest.mark.parametrize("quoted", [False, True])
def test_files_without_the_column_still_import(source: Path, tmp_path: Path, quoted: bool) -> None:
    """An export of an older version (no selection_probability column) imports, with the
    probabilities empty (both readers)."""
    engine = open_store(source)
    export_votes(engine, fmt="csv", out=tmp_path / "out")
    engine.dispose()
    log = tmp_path / "out" / "vote_log.csv"
    lines = log.read_text(encoding="utf-8").splitlines()
    old = [line.rsplit(",", 1)[0] for line in lines]
    assert old[0].endswith(",study_fingerprint")
    if quoted:
        old[1] = old[1].replace(",tiny,", ',"tiny",', 1)
    log.write_text("\n".join(old) + "\n", encoding="utf-8")
    assert (read_vote_table(log) is None) == quoted
    target = tmp_path / "target.db"
    engine = open_store(target)
    import_paths(engine, STUDIES)
    import_paths(engine, [log])
    engine.dispose()
    got, want = _votes(target), _votes(source)
    assert [r[:10] for r in got] == [r[:10] for r in want]
    assert all(r[10] is None for r in got)


@pytest.mark.parametrize("bad", ["0", "1.5", "-0.5", "abc", "nan", "inf", "0x1p-3"])
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_bad_probability_is_one_line_and_changes_nothing(
    source: Path, tmp_path: Path, bad: str, fmt: str
) -> None:
    engine = open_store(source)
    export_votes(engine, fmt=fmt, out=tmp_path / "out")
    engine.dispose()
    log = tmp_path / "out" / f"vote_log.{fmt}"
    lines = log.read_text(encoding="utf-8").splitlines()
    if fmt == "csv":
        lines[2] = lines[2].rsplit(",", 1)[0] + "," + bad
    else:
        lines[2] = lines[2].replace(
            '"selection_probability": 1.0', f'"selection_probability": "{bad}"'
        )
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = tmp_path / "target.db"
    engine = open_store(target)
    import_paths(engine, STUDIES)
    before = _votes(target)
    with pytest.raises(InputFileError) as info:
        import_paths(engine, [log])
    engine.dispose()
    message = str(info.value)
    assert "\n" not in message
    assert f"vote_log.{fmt}:3: field 'selection_probability'" in message
    assert "greater than 0 and at most 1" in message
    assert _votes(target) == before


def test_vote_dicts_fill_the_column(source: Path) -> None:
    from annotate.services.votes_io import vote_dicts

    engine = open_store(source)
    with Session(engine) as s:
        st = repo.get_study(s, "tiny")
        assert st is not None
        plain = vote_dicts(repo.vote_records(s, st.id, current_only=False), "f")
        full = vote_dicts(
            repo.vote_records(s, st.id, current_only=False, with_probability=True), "f"
        )
    engine.dispose()
    assert [d["selection_probability"] for d in plain] == [None] * 3
    assert [d["selection_probability"] for d in full] == PROBABILITIES[:3]
    assert all(list(d) == list(EXPORT_COLUMNS) for d in full)


def _fill(engine: Any) -> None:
    """The votes of the ``source`` fixture, on any back end."""
    with write_session(engine) as s:
        tiny = repo.get_study(s, "tiny")
        assert tiny is not None
        p1 = repo.item_ids(s, tiny.id)["p1"]
        ann = [repo.annotator_id(s, n) for n in ("ada", "bo")]
        rows: list[tuple[Any, ...]] = []
        for k, prob in enumerate(PROBABILITIES):
            head = (uid(k + 1), tiny.id, ann[k % 2], p1, "first", k % 2 == 0, 10 * k, False)
            sup = None if k < 2 else uid(k - 1)  # each annotator's own chain
            rows.append((*head, f"2025-01-01 10:00:0{k}.{k + 1:06d}", sup, prob))
        repo.bulk_insert_votes(s, rows)


def _probabilities(engine: Any) -> list[Any]:
    with Session(engine) as s:
        st = repo.get_study(s, "tiny")
        assert st is not None
        recs = repo.vote_records(s, st.id, current_only=False, with_probability=True)
    return [r[-1] for r in recs]


def test_round_trip_postgresql_sqlite_postgresql(tmp_path: Path, pg_server: Any) -> None:
    """PostgreSQL's export path (rows formatted in Python, the probability a float8) and its
    tuple inserts keep the probabilities too; SQLite's export of the copy is the same file."""
    from tests import postgres_server

    with postgres_server.database(pg_server) as url:
        pg = open_store(url)
        import_paths(pg, STUDIES)
        _fill(pg)
        first = export_votes(pg, fmt="csv", out=tmp_path / "pg").folder
        lite = open_store(tmp_path / "copy.db")
        import_paths(lite, [first])
        second = export_votes(lite, fmt="csv", out=tmp_path / "lite").folder
        assert _probabilities(lite) == _probabilities(pg) == PROBABILITIES
        with postgres_server.database(pg_server) as url2:
            pg2 = open_store(url2)
            import_paths(pg2, [second])
            assert _probabilities(pg2) == PROBABILITIES
            pg2.dispose()
        for name in ("votes.csv", "vote_log.csv"):
            assert (first / name).read_bytes() == (second / name).read_bytes()
        pg.dispose()
        lite.dispose()
