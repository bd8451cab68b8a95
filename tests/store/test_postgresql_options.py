"""The partial unique indexes get their PostgreSQL ``WHERE`` when a PostgreSQL engine is
made (``annotate.store.models.postgresql_options``), not when the models are imported: the
SQLite store then never imports SQLAlchemy's PostgreSQL dialect (issue 13, ``annotate
report``'s imports). The reference is the DDL the indexes had when their definition named
``postgresql_where`` (SQLAlchemy's own compiler, written out below); the server-side
behaviour of both back ends is tested in test_backends.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy.schema import CreateIndex
from sqlmodel import SQLModel

from annotate.store import models
from annotate.store.engine import make_engine

ROOT = Path(__file__).resolve().parents[2]

PARTIAL = {
    "ux_vote_supersedes": "CREATE UNIQUE INDEX ux_vote_supersedes ON vote (supersedes) "
    "WHERE supersedes IS NOT NULL",
    "ux_vote_chain_root": "CREATE UNIQUE INDEX ux_vote_chain_root ON vote (annotator_id, "
    "item_id) WHERE supersedes IS NULL AND retest_of IS NULL",
    "ux_vote_retest_root": "CREATE UNIQUE INDEX ux_vote_retest_root ON vote (annotator_id, "
    "item_id) WHERE supersedes IS NULL AND retest_of IS NOT NULL",
    "ux_accesstoken_live": "CREATE UNIQUE INDEX ux_accesstoken_live ON accesstoken "
    "(annotator_id) WHERE revoked_at IS NULL",
    "ix_vote_retest": "CREATE INDEX ix_vote_retest ON vote (study_id, id, retest_of) "
    "WHERE retest_of IS NOT NULL",
}
"""The PostgreSQL DDL of the partial indexes, compiled from their former definitions
(``ix_vote_retest``, migration 010: as ``postgresql_where`` would compile it)."""


def _ddl(dialect: object) -> dict[str, str]:
    return {
        i.name: str(CreateIndex(i).compile(dialect=dialect)).strip()  # type: ignore[arg-type]
        for t in SQLModel.metadata.sorted_tables
        for i in t.indexes
        if i.name in PARTIAL
    }


def test_a_postgresql_engine_gives_the_partial_indexes_their_where() -> None:
    for index, _ in models._POSTGRESQL_WHERE:  # as after the import (an earlier test's
        index.dialect_options["postgresql"]["where"] = None  # engine may have set them)
    engine = make_engine("postgresql+psycopg://someone@localhost/nothing")  # no connection
    try:
        assert _ddl(engine.dialect) == PARTIAL
        make_engine("postgresql+psycopg://someone@localhost/nothing").dispose()  # again
        assert _ddl(engine.dialect) == PARTIAL
    finally:
        engine.dispose()
    from sqlalchemy.dialects import sqlite

    assert _ddl(sqlite.dialect()) == PARTIAL  # the same conditions on SQLite


def test_the_sqlite_store_does_not_import_the_postgresql_dialect(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from annotate.services.db import open_store\n"
        f"open_store({str(tmp_path / 'v.db')!r}).dispose()\n"
        "print('sqlalchemy.dialects.postgresql' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert run.stdout.split() == ["False"]
