"""The SQLite store: pragmas, migrations, append-only votes and their constraints."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession
from annotate.store import repo
from annotate.store.engine import default_db_path, make_engine
from annotate.store.errors import DatabaseError
from annotate.store.migrations import MIGRATIONS, migrate, schema_version

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture
def engine(tmp_path: Path):
    e = open_store(tmp_path / "v.db")
    import_paths(e, [DATA / "studies" / "tiny-difficulty", DATA / "studies" / "tiny-arena"])
    yield e
    e.dispose()


def test_pragmas_on_every_connection(tmp_path: Path) -> None:
    e = make_engine(tmp_path / "p.db")
    for _ in range(3):  # several pooled and fresh connections
        with e.connect() as c:
            assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
            assert c.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL (issue 9)
    e.dispose()
    # WAL is persistent: a plain sqlite3 connection sees it too.
    assert sqlite3.connect(tmp_path / "p.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_migrations_apply_once_in_order(tmp_path: Path) -> None:
    e = make_engine(tmp_path / "m.db")
    assert migrate(e) == [name for name, _ in MIGRATIONS]
    assert migrate(e) == []
    assert schema_version(e) == len(MIGRATIONS)
    names = [
        r[0]
        for r in sqlite3.connect(tmp_path / "m.db").execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name"
        )
    ]
    for table in (
        "study",
        "question",
        "questionpair",
        "battle",
        "vote",
        "annotator",
        "responsescore",
        "current_vote",
        "reservation",
        "_migrations",
    ):
        assert table in names


def test_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    e = make_engine(tmp_path / "n.db")
    migrate(e)
    with e.begin() as c:
        c.execute(text("INSERT INTO _migrations (name) VALUES ('999_future')"))
    with pytest.raises(DatabaseError, match="newer version of annotate"):
        migrate(e)


def test_default_db_path_honours_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANNOTATE_DATA_DIR", str(tmp_path / "d"))
    assert default_db_path() == tmp_path / "d" / "votes.db"
    monkeypatch.delenv("ANNOTATE_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == tmp_path / "xdg" / "annotate" / "votes.db"


def test_votes_are_append_only_and_undo_supersedes(engine) -> None:
    s = VotingSession(engine, "tiny", "ann")
    first = s.current()
    s.vote("left", 2000)
    assert s.undo()
    assert s.current().item_id == first.item_id  # the item comes back
    s.vote("right", 2500)
    with Session(engine) as ses:
        rows = ses.execute(text("SELECT uuid, choice, supersedes FROM vote ORDER BY id")).all()
        current = ses.execute(text("SELECT choice FROM current_vote")).all()
    assert [r[1] for r in rows][-3:] == [rows[-3][1], "retract", rows[-1][1]]
    assert rows[-2][2] == rows[-3][0]
    assert rows[-1][2] == rows[-2][0]
    assert len(current) == 1


def test_one_chain_per_annotator_and_item(engine) -> None:
    with Session(engine) as s, s.begin():
        st = repo.get_study(s, "tiny")
        aid = repo.annotator_id(s, "x")
        item = repo.item_ids(s, st.id)["p1"]
        kw = dict(
            study_id=st.id, annotator=aid, item_id=item, swapped=False, response_ms=1, fast=False
        )
        v1 = repo.insert_vote(s, choice="first", supersedes=None, **kw)
        with pytest.raises(IntegrityError), s.begin_nested():
            repo.insert_vote(s, choice="second", supersedes=None, **kw)  # a second root
        repo.insert_vote(s, choice="second", supersedes=v1.uuid, **kw)
        with pytest.raises(IntegrityError), s.begin_nested():
            repo.insert_vote(s, choice="skip", supersedes=v1.uuid, **kw)  # a fork
        with pytest.raises(IntegrityError), s.begin_nested():
            repo.insert_vote(s, choice="skip", supersedes="x", vote_uuid=v1.uuid, **kw)


def test_foreign_keys_are_enforced(engine) -> None:
    with Session(engine) as s, pytest.raises(IntegrityError), s.begin():
        s.execute(text("INSERT INTO item (study_id, key, position) VALUES (999, 'k', 0)"))


def test_cascade_delete_of_a_study(engine) -> None:
    VotingSession(engine, "tiny", "ann").vote("left", 2000)
    with Session(engine) as s, s.begin():
        s.execute(text("DELETE FROM study WHERE name = 'tiny'"))
    with Session(engine) as s:
        for table in ("question", "item", "questionpair", "vote", "responsescore"):
            n = s.execute(
                text(
                    f"SELECT count(*) FROM {table} WHERE "
                    + (
                        "study_id IN (SELECT id FROM study WHERE name='tiny')"
                        if table in ("question", "item", "vote")
                        else "1"
                    )
                )
            ).scalar()
            if table in ("questionpair", "responsescore"):
                assert n == 0
            else:
                assert n == 0
        assert s.execute(text("SELECT count(*) FROM battle")).scalar() == 3  # arena untouched


def test_integrity_check_after_use(engine, tmp_path: Path) -> None:
    VotingSession(engine, "tiny-arena", "ann").vote("a", 3000)
    engine.dispose()
    assert sqlite3.connect(tmp_path / "v.db").execute("PRAGMA integrity_check").fetchone() == (
        "ok",
    )
