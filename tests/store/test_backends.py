"""The two back ends (issue 17): a SQLite file and a PostgreSQL database hold the same
schema, enforce the same vote rules, import, vote, monitor, report and export alike.

The PostgreSQL server is real (``tests/postgres_server.py`` starts a private cluster
with the distribution's ``initdb`` and ``pg_ctl``, or uses
``ANNOTATE_TEST_POSTGRES_URL``); every test gets a fresh database. Tests parametrised
by ``backend`` run on both; the others compare the two.
"""

from __future__ import annotations

import filecmp
import json
import uuid as uuidlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, MetaData, UniqueConstraint, inspect, text
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel

from annotate.cli import main
from annotate.errors import AnnotateError, InputFileError
from annotate.services import importing
from annotate.services.db import open_store
from annotate.services.exporting import export_votes
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession
from annotate.store import migrations, repo
from annotate.store.engine import is_postgres, make_engine
from annotate.store.migrations import MIGRATIONS, applied, migrate

DATA = Path(__file__).resolve().parent.parent / "data"
TINY = [DATA / "studies" / "tiny-difficulty", DATA / "studies" / "tiny-arena"]
HEAD = "vote_id,study,annotator,item_id,choice,left,response_ms,fast,created_at,supersedes\n"


def uid(k: int) -> str:
    return f"00000000-0000-4000-8000-{k:012d}"


@pytest.fixture
def engine(store_target: Path | str) -> Iterator[Engine]:
    """The tiny difficulty and arena studies on the back end under test."""
    e = open_store(store_target)
    import_paths(e, TINY)
    yield e
    e.dispose()


def rows(engine: Engine, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    with engine.connect() as c:
        return [tuple(r) for r in c.execute(text(sql), params)]


def state(engine: Engine) -> tuple[Any, ...]:
    """Every row that an import or a vote could change (for "the database is unchanged")."""
    return tuple(
        rows(engine, f"SELECT * FROM {t} ORDER BY id")
        for t in ("study", "item", "annotator", "vote", "itemnote")
    )


# --- schema: the same on both, from empty and from every older version ----------------


def _affinity(t: Any) -> str:
    """A column type by affinity: integer, text, real, boolean, datetime."""
    name = type(t.as_generic() if hasattr(t, "as_generic") else t).__name__.lower()
    for word, aff in (
        ("int", "integer"),
        ("bool", "boolean"),
        ("float", "real"),
        ("double", "real"),
        ("real", "real"),
        ("numeric", "real"),
        ("date", "datetime"),
        ("time", "datetime"),
        ("char", "text"),
        ("string", "text"),
        ("text", "text"),
    ):
        if word in name:
            return aff
    return name


def _where(ix: dict[str, Any]) -> str:
    opts = ix.get("dialect_options", {})
    where = opts.get("sqlite_where")
    if where is None:
        where = opts.get("postgresql_where")
    where = "" if where is None else str(where)
    return " ".join(str(where).replace("(", "").replace(")", "").split()).lower()


def reflected(engine: Engine) -> dict[str, Any]:
    """The schema as SQLAlchemy reflects it, in terms both back ends share.

    Tables and views; per table the columns (name, type affinity, nullability, primary
    key), the foreign keys, the unique constraints by columns and every index by name
    with its columns, uniqueness and partial-index condition.
    """
    insp = inspect(engine)
    out: dict[str, Any] = {"views": sorted(insp.get_view_names())}
    for name in sorted(insp.get_table_names()):
        pk = insp.get_pk_constraint(name)["constrained_columns"]
        out[name] = {
            "columns": [
                (c["name"], _affinity(c["type"]), bool(c["nullable"]) and c["name"] not in pk)
                for c in insp.get_columns(name)
            ],
            "pk": pk,
            "fk": sorted(
                (tuple(f["constrained_columns"]), f["referred_table"], tuple(f["referred_columns"]))
                for f in insp.get_foreign_keys(name)
            ),
            "unique": sorted(tuple(u["column_names"]) for u in insp.get_unique_constraints(name)),
            "indexes": sorted(
                (ix["name"], tuple(ix["column_names"]), bool(ix["unique"]), _where(ix))
                for ix in insp.get_indexes(name)
                if not ix.get("duplicates_constraint")
            ),
        }
    for view in out["views"]:
        out[f"view:{view}"] = [(c["name"], _affinity(c["type"])) for c in insp.get_columns(view)]
    return out


def _fresh(target: Path | str) -> Engine:
    e = make_engine(target)
    migrate(e)
    return e


def test_migrated_schemas_are_the_same_on_both(tmp_path: Path, pg_url: str) -> None:
    lite, pg = _fresh(tmp_path / "s.db"), _fresh(pg_url)
    try:
        a, b = reflected(lite), reflected(pg)
        assert a == b
        # the rules the database itself enforces are among what was compared
        vote = a["vote"]["indexes"]
        assert ("ux_vote_uuid", ("uuid",), True, "") in vote
        assert ("ux_vote_supersedes", ("supersedes",), True, "supersedes is not null") in vote
        assert (
            "ux_vote_chain_root",
            ("annotator_id", "item_id"),
            True,
            "supersedes is null and retest_of is null",
        ) in vote
        assert (  # non-unique, partial (migration 010)
            "ix_vote_retest",
            ("study_id", "id", "retest_of"),
            False,
            "retest_of is not null",
        ) in vote
        assert a["views"] == ["current_vote"]
        assert applied(lite) == applied(pg) == [n for n, _ in MIGRATIONS]
    finally:
        lite.dispose()
        pg.dispose()


def _at_version(engine: Engine, k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Apply only the first ``k`` migrations (a database as that version left it)."""
    with monkeypatch.context() as m:
        m.setattr(migrations, "MIGRATIONS", MIGRATIONS[:k])
        migrate(engine)
    assert applied(engine) == [n for n, _ in MIGRATIONS[:k]]


def _schema_004(conn: Any) -> None:
    """001 as the versions before 005 created it: UNIQUE (uuid) and UNIQUE (supersedes)
    as table constraints of vote instead of the named unique indexes."""
    meta = MetaData()
    for t in SQLModel.metadata.sorted_tables:
        t.to_metadata(meta)
    vote = meta.tables["vote"]
    for ix in list(vote.indexes):
        if ix.name in ("ux_vote_uuid", "ux_vote_supersedes"):
            vote.indexes.discard(ix)
    vote.append_constraint(UniqueConstraint(vote.c.uuid))
    vote.append_constraint(UniqueConstraint(vote.c.supersedes))
    meta.create_all(conn)


@pytest.mark.parametrize("k", range(1, len(MIGRATIONS)))
def test_every_older_version_migrates_to_the_same_schema(
    k: int, tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database left at version ``k`` (with 001 as versions before 005 wrote it when
    ``k`` < 5) and then migrated has the schema of a fresh one, on both back ends, and
    keeps its votes."""
    reference = reflected(fresh := _fresh(tmp_path / "ref.db"))
    fresh.dispose()
    for target in (tmp_path / "old.db", pg_url):
        e = make_engine(target)
        try:
            with monkeypatch.context() as m:
                m.setattr(migrations, "_m001_baseline", _schema_004)
                _at_version(e, k, monkeypatch)
            if k >= 2:  # a vote chain stored before the rest of the migrations
                with Session(e) as s, s.begin():
                    s.execute(
                        text(
                            "INSERT INTO study (name, kind, title, description, settings_json,"
                            " fingerprint, created_at) VALUES ('s', 'difficulty', '', '', '{}',"
                            " '', '2025-01-01')"
                        )
                    )
                    s.execute(
                        text("INSERT INTO annotator (name, created_at) VALUES ('a', '2025-01-01')")
                    )
                    s.execute(
                        text("INSERT INTO item (study_id, key, position) VALUES (1, 'p1', 0)")
                    )
                    for n, sup in ((1, None), (2, uid(1))):
                        s.execute(
                            text(
                                "INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice,"
                                " swapped, fast, created_at, supersedes) VALUES (:u, 1, 1, 1,"
                                " 'first', :f, :f, '2025-01-01 00:00:00', :sup)"
                            ),
                            {"u": uid(n), "f": False, "sup": sup},
                        )
            migrate(e)
            assert reflected(e) == reference, target
            assert applied(e) == [n for n, _ in MIGRATIONS]
            if k >= 2:
                assert rows(e, "SELECT uuid FROM current_vote") == [(uid(2),)]
        finally:
            e.dispose()


# --- the vote rules, enforced by the database on both ----------------------------------


def _vote(s: Session, n: int, *, item: int, sup: str | None, annotator: int = 1) -> None:
    repo.insert_vote(
        s,
        study_id=1,
        annotator=annotator,
        item_id=item,
        choice="first",
        swapped=False,
        response_ms=None,
        fast=False,
        supersedes=sup,
        vote_uuid=uid(n),
    )


def test_one_current_vote_per_annotator_and_item(engine: Engine, backend: str) -> None:
    with Session(engine) as s, s.begin():
        aid = repo.annotator_id(s, "ann")
        assert aid == 1
        _vote(s, 1, item=1, sup=None)
        _vote(s, 2, item=1, sup=uid(1))  # a change of mind supersedes: allowed
        _vote(s, 3, item=2, sup=None)
    cases = [
        (4, 1, None),  # a second chain on item 1: ux_vote_chain_root
        (5, 1, uid(1)),  # superseding a vote that was already superseded: ux_vote_supersedes
        (3, 3, None),  # a vote id stored already: ux_vote_uuid
    ]
    for n, item, sup in cases:
        with pytest.raises(IntegrityError), Session(engine) as s, s.begin():
            _vote(s, n, item=item, sup=sup)
    assert rows(engine, "SELECT uuid FROM current_vote ORDER BY id") == [(uid(2),), (uid(3),)]


# --- import: one transaction; a failure changes nothing --------------------------------


def test_import_and_failed_import_leave_the_database_unchanged(
    engine: Engine, tmp_path: Path, backend: str
) -> None:
    good = tmp_path / "good.csv"
    good.write_text(
        HEAD
        + f"{uid(1)},tiny,ann,p1,first,,1200,,2025-01-01T10:00:00Z,\n"
        + f"{uid(2)},tiny,ann,p1,second,,,,2025-01-01T10:01:00.5Z,{uid(1)}\n"
        + f"{uid(3)},tiny-arena,bob,b1,tie,,,True,,\n",
        encoding="utf-8",
    )
    report = import_paths(engine, [good])
    assert report.votes_added == 3
    before = state(engine)
    # a bad row after good ones, and a duplicate id: nothing of either file is written
    bad = tmp_path / "bad.csv"
    bad.write_text(
        HEAD + f"{uid(4)},tiny,carol,p2,first,,,,,\n{uid(5)},tiny,carol,nope,first,,,,,\n",
        encoding="utf-8",
    )
    dup = tmp_path / "dup.csv"
    dup.write_text(HEAD + f"{uid(6)},tiny,dan,p2,first,,,,,\n{uid(1)},tiny,dan,p3,first,,,,,\n")
    for path in (bad, dup):
        with pytest.raises(AnnotateError) as info:
            import_paths(engine, [good.parent / "tiny-extra-missing", path][1:])
        assert "\n" not in str(info.value)
        assert state(engine) == before


def test_bulk_conflict_names_the_row_and_rolls_back(
    engine: Engine, tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vote id stored in another study that gets past the checks (the stored-id check
    switched off) is refused by ux_vote_uuid during the bulk insert: file, line, field
    (PostgreSQL: from the violation's detail; its aborted transaction answers no query),
    and the whole import rolls back."""
    first = tmp_path / "first.csv"
    first.write_text(HEAD + f"{uid(7)},tiny-arena,ann,b1,tie,,,,,\n", encoding="utf-8")
    import_paths(engine, [first])
    before = state(engine)
    monkeypatch.setattr(repo, "BULK_REINDEX_MIN_ROWS", 0)
    monkeypatch.setattr(importing, "_any_stored", lambda s, uuids, total: False)
    csv = tmp_path / "votes.csv"
    csv.write_text(
        HEAD + f"{uid(1)},tiny,ann,p1,first,,,,,\n{uid(7)},tiny,ann,p2,first,,,,,\n",
        encoding="utf-8",
    )
    with pytest.raises(InputFileError) as info:
        import_paths(engine, [csv])
    assert (info.value.line, info.value.field) == (3, "vote_id")
    assert uid(7) in str(info.value)
    assert state(engine) == before


# --- voting, monitor, report: the same answers on both ---------------------------------


def _vote_some(engine: Engine) -> list[str]:
    receipts = []
    for name, keys in (("ann", "aabab"), ("bob", "baaba"), ("cy", "ab")):
        vs = VotingSession(engine, "tiny-arena", name)
        for key in keys:
            if vs.current() is None:
                break
            receipts.append(vs.vote({"a": "a", "b": "b"}[key], 900).vote_uuid)
        vs.release()
    vs = VotingSession(engine, "tiny", "ann")
    receipts.append(vs.vote("left", 800).vote_uuid)
    assert vs.undo()
    receipts.append(vs.vote("right", 800).vote_uuid)
    vs.release()
    return receipts


def test_voting_session_on_both(engine: Engine, backend: str) -> None:
    receipts = _vote_some(engine)
    stored = [r[0] for r in rows(engine, "SELECT uuid FROM vote")]
    assert set(receipts) <= set(stored)
    assert len(stored) == len(set(stored)) == len(receipts) + 1  # + the undo's retraction
    # one current vote per annotator and item
    dup = rows(
        engine,
        "SELECT annotator_id, item_id FROM current_vote GROUP BY annotator_id, item_id "
        "HAVING count(*) > 1",
    )
    assert dup == []
    assert rows(engine, "SELECT count(*) FROM reservation") == [(0,)]


def test_monitor_and_report_agree_across_back_ends(tmp_path: Path, pg_url: str) -> None:
    """The same votes (imported from one file) give the same monitor snapshot and the
    same report on both back ends."""
    from annotate.services.monitoring import MonitorSource
    from annotate.services.report import human_alignment_report
    from tests.annotate.test_monitor_incremental import _assert_same

    out: list[Any] = []
    for target in (tmp_path / "m.db", pg_url):
        e = open_store(target)
        import_paths(e, TINY)
        _vote_some(e)
        for name in ("dee", "eve", "fay"):
            vs = VotingSession(e, "tiny", name)
            while vs.current() is not None:
                vs.vote("left" if len(name) % 2 else "right", 900)
        monitor = MonitorSource(e).open("tiny-arena")
        snap = monitor.snapshot()
        # the incremental read (rows after the last id), its fits warm-started from the
        # first snapshot's: equal to the fits' own tolerance, everything else exactly
        again = monitor.snapshot()
        report = human_alignment_report(e, "tiny", n_boot=20, seed=0, parallel=False)
        out.append((snap, report, e))
        _assert_same(again, snap, str(target))
    (snap_a, rep_a, ea), (snap_b, rep_b, eb) = out
    try:
        assert _plain(snap_a) == _plain(snap_b)
        assert _plain(rep_a) == _plain(rep_b)
    finally:
        ea.dispose()
        eb.dispose()


def _plain(obj: Any) -> Any:
    """A dataclass tree as nested tuples with floats rounded (vote ids differ, so uuids
    and timestamps are not part of what the tests compare)."""
    import dataclasses
    import math

    import numpy as np

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return tuple(
            (f.name, _plain(getattr(obj, f.name)))
            for f in dataclasses.fields(obj)
            if f.name not in ("generated_at", "created_at", "when", "elapsed_s", "timings")
        )
    if isinstance(obj, dict):
        return tuple(sorted((str(k), _plain(v)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)):
        return tuple(_plain(v) for v in obj)
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, (float, np.floating)):
        return None if math.isnan(obj) else round(float(obj), 9)
    return obj


# --- export: PostgreSQL -> SQLite -> PostgreSQL, lossless ------------------------------


def test_export_round_trip_postgres_sqlite_postgres(
    tmp_path: Path, pg_server: Any, pg_url: str
) -> None:
    from tests import postgres_server

    pg = open_store(pg_url)
    import_paths(pg, TINY)
    _vote_some(pg)
    first = export_votes(pg, fmt="csv", out=tmp_path / "from-pg").folder
    lite = open_store(tmp_path / "copy.db")
    import_paths(lite, [first])
    second = export_votes(lite, fmt="csv", out=tmp_path / "from-sqlite").folder
    with postgres_server.database(pg_server) as url2:
        pg2 = open_store(url2)
        import_paths(pg2, [second])
        third = export_votes(pg2, fmt="csv", out=tmp_path / "back-in-pg").folder
        # every vote row, field by field (by names and keys: row ids differ)
        assert _records(pg2) == _records(pg) == _records(lite)
        pg2.dispose()
    for a, b in ((first, second), (second, third)):
        names = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
        assert names == sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file())
        _match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
        assert (mismatch, errors) == ([], []), (a, b)
    pg.dispose()
    lite.dispose()


def _records(engine: Engine) -> list[tuple[Any, ...]]:
    from annotate.services.votes_io import iso_stamp

    with Session(engine) as s:
        recs = repo.vote_records(s, None, current_only=False)
    return sorted((*r[:9], iso_stamp(r[9]), r[10]) for r in recs)


# --- the command line takes a URL -------------------------------------------------------


def test_cli_db_url(pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", pg_url, "import", *map(str, TINY)]) == 0
    engine = open_store(pg_url)
    for name in ("ann", "bob"):
        vs = VotingSession(engine, "tiny", name)
        while vs.current() is not None:
            vs.vote("left", 900)
    engine.dispose()
    out = tmp_path / "out"
    assert main(["export", "--db", pg_url, "--out", str(out)]) == 0
    assert (out / "votes.csv").is_file()
    rep = tmp_path / "report"
    args = ["report", "--db", pg_url, "--study", "tiny", "--out", str(rep), "--boot", "20"]
    assert main([*args, "--no-plots"]) == 0
    assert any(rep.rglob("report.md"))
    capsys.readouterr()
    assert main(["studies", "--db", pg_url, "--json"]) == 0
    listed = capsys.readouterr().out
    assert '"tiny-arena"' in listed
    assert '"tiny"' in listed
    by_name = {r["name"]: r for r in json.loads(listed)}
    # both annotators voted on every item; nobody voted in tiny-arena (the one-pass count
    # of current votes on PostgreSQL)
    assert (by_name["tiny"]["annotators"], by_name["tiny"]["votes"]) == (
        2,
        2 * by_name["tiny"]["items"],
    )
    assert (by_name["tiny-arena"]["annotators"], by_name["tiny-arena"]["votes"]) == (0, 0)


def test_cli_bad_url_is_one_line(capsys: pytest.CaptureFixture[str], pg_url: str) -> None:
    from sqlalchemy import make_url

    url = make_url(pg_url)
    missing = url.set(database=f"nope_{uuidlib.uuid4().hex[:6]}", password="secret")
    assert main(["studies", "--db", missing.render_as_string(False)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "does not exist" in err
    assert "secret" not in err
    assert main(["studies", "--db", "mysql://u@h/db"]) == 1
    assert "not supported" in capsys.readouterr().err


def test_postgres_engine_is_postgres(pg_url: str) -> None:
    e = make_engine(pg_url)
    assert is_postgres(e)
    e.dispose()


def test_postgres_writer_waits_on_the_advisory_lock_then_fails_in_one_line(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writers serialise on the server's advisory lock (no lock file): a second writer
    waits while the first transaction is open, and after ANNOTATE_LOCK_TIMEOUT gives up
    with a one-line DatabaseError; a reader never waits. Nothing is written."""
    from annotate.store.errors import DatabaseError
    from annotate.store.writelock import write_session

    engine = open_store(pg_url)
    import_paths(engine, TINY)
    monkeypatch.setenv("ANNOTATE_LOCK_TIMEOUT", "0.5")  # read when the engine is made
    other = make_engine(pg_url)
    before = state(engine)
    with Session(engine) as holder, holder.begin():
        holder.execute(text("SELECT 1"))  # the writer lock is taken at BEGIN
        with pytest.raises(DatabaseError, match="busy") as info, write_session(other) as s:
            repo.annotator_id(s, "late")
        assert "\n" not in str(info.value)
        reader = make_engine(pg_url, immediate=False)
        assert rows(reader, "SELECT count(*) FROM study") == [(2,)]  # no wait
        reader.dispose()
    assert state(engine) == before
    with write_session(other) as s:  # free again once the holder committed
        repo.annotator_id(s, "late")
    other.dispose()
    engine.dispose()
