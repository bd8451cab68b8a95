"""Ordered schema migrations, in the style of sqlite-utils ``Migrations``.

Each migration is a named function applied in one transaction together with
its row in ``_migrations``. The first creates the baseline schema; the schema
version is the number of applied migrations.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, Engine, text
from sqlmodel import SQLModel

from annotate.store import models
from annotate.store.errors import DatabaseError
from annotate.store.writelock import engine_writer_queue

Migration = Callable[[Connection], None]


def _m001_baseline(conn: Connection) -> None:
    SQLModel.metadata.create_all(conn)


def _m002_current_vote_view(conn: Connection) -> None:
    conn.execute(
        text(
            """
            CREATE VIEW current_vote AS
            SELECT v.* FROM vote AS v
            WHERE v.choice != 'retract'
              AND NOT EXISTS (SELECT 1 FROM vote AS w WHERE w.supersedes = v.uuid)
            """
        )
    )


def _m003_reservation(conn: Connection) -> None:
    # The baseline creates every table the models define, so a database created by
    # this version already has it: create only what is missing.
    table = models.Reservation.__table__  # type: ignore[attr-defined]
    table.create(conn, checkfirst=True)
    for index in table.indexes:
        index.create(conn, checkfirst=True)


def _m004_item_note(conn: Connection) -> None:
    # Comments and flags on items (issue 12); as with 003, a database created by this
    # version already has the table from the baseline.
    table = models.ItemNote.__table__  # type: ignore[attr-defined]
    table.create(conn, checkfirst=True)
    for index in table.indexes:
        index.create(conn, checkfirst=True)


MIGRATIONS: list[tuple[str, Migration]] = [
    ("001_baseline", _m001_baseline),
    ("002_current_vote_view", _m002_current_vote_view),
    ("003_reservation", _m003_reservation),
    ("004_item_note", _m004_item_note),
]
"""Every migration, in the order it is applied. Append only."""

_CREATE_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
)


def applied(engine: Engine) -> list[str]:
    """Names of the migrations already applied to the database.

    Reads on the raw connection, outside any transaction: the store's engines begin
    transactions with ``BEGIN IMMEDIATE``, which would wait for the write lock behind a
    long import (and fail after the busy timeout) just to read this list.
    """
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        try:
            has_table = cur.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
            ).fetchone()
            if not has_table:
                return []
            return [r[0] for r in cur.execute("SELECT name FROM _migrations ORDER BY rowid")]
        finally:
            cur.close()
    finally:
        raw.close()


def schema_version(engine: Engine) -> int:
    """The number of migrations applied."""
    return len(applied(engine))


def migrate(engine: Engine) -> list[str]:
    """Apply the migrations not yet applied, each in its own transaction.

    Returns the names applied. Safe to call from several processes at once: the
    writes queue on the database's writer lock, and each migration re-checks
    ``_migrations`` inside its write transaction. A database that is up to date is
    only read.

    Raises
    ------
    DatabaseError
        When the database was written by a newer version of annotate (nothing is written).
    """
    known = [name for name, _ in MIGRATIONS]
    done = applied(engine)
    unknown = [n for n in done if n not in known]
    if unknown:
        raise DatabaseError(
            f"the database {engine.url.database} was written by a newer version of annotate "
            f"(schema {', '.join(unknown)}); open it with that version or upgrade annotate",
            title="Newer database",
        )
    ran: list[str] = []
    if all(name in done for name, _ in MIGRATIONS):
        return ran
    with engine_writer_queue(engine):
        with engine.begin() as conn:
            conn.execute(text(_CREATE_MIGRATIONS))
        ran = _apply(engine, done)
    return ran


def _apply(engine: Engine, done: list[str]) -> list[str]:
    ran: list[str] = []
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        with engine.begin() as conn:
            exists = conn.execute(
                text("SELECT 1 FROM _migrations WHERE name = :n"), {"n": name}
            ).first()
            if exists:
                continue
            fn(conn)
            conn.execute(
                text("INSERT INTO _migrations (name, applied_at) VALUES (:n, datetime('now'))"),
                {"n": name},
            )
        ran.append(name)
    return ran
