"""Ordered schema migrations, in the style of sqlite-utils ``Migrations``.

Each migration is a named function applied in one transaction together with
its row in ``_migrations``. The first creates the baseline schema; the schema
version is the number of applied migrations.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, Engine, text
from sqlalchemy.schema import CreateTable
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


def _m005_vote_unique_indexes(conn: Connection) -> None:
    """Rebuild ``vote`` so that its ``UNIQUE (uuid)`` and ``UNIQUE (supersedes)`` table
    constraints become the named unique indexes ``ux_vote_uuid`` and
    ``ux_vote_supersedes`` (issue 13: a bulk import can drop and rebuild those, not the
    automatic indexes of table constraints).

    The generalized table rebuild of https://www.sqlite.org/lang_altertable.html#otheralter:
    foreign keys are off for this connection (see :data:`_FOREIGN_KEYS_OFF`) and the
    whole rebuild is one transaction; the table's indexes and triggers and every view are
    saved and recreated from their stored SQL, and ``PRAGMA foreign_key_check`` must find
    nothing before the transaction commits. Same columns, types, rows and row ids. A
    database created by this version already has the new form: nothing to do.
    """
    (fk_on,) = conn.exec_driver_sql("PRAGMA foreign_keys").one()
    if fk_on:
        raise DatabaseError("migration 005 must run with foreign keys off", title="Migration")
    auto = conn.exec_driver_sql(
        "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'vote' "
        "AND name LIKE 'sqlite_autoindex_vote_%'"
    ).scalar_one()
    if not auto:
        return
    table = models.Vote.__table__  # type: ignore[attr-defined]
    new_unique = {ix.name for ix in table.indexes if ix.name in _VOTE_UNIQUE_INDEXES}
    assert new_unique == set(_VOTE_UNIQUE_INDEXES)
    # step 3: the schema objects that go with the table (indexes and triggers on it) and
    # every view (a view naming vote would stop the rename below); keep their SQL
    saved = conn.exec_driver_sql(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND "
        "((type IN ('index', 'trigger') AND tbl_name = 'vote') OR type = 'view') "
        "ORDER BY rowid"
    ).all()
    for kind, name, _ in saved:
        if kind == "view":
            conn.exec_driver_sql(f'DROP VIEW "{name}"')
    # steps 4-7: the new table under a temporary name, the rows copied, the old one dropped
    create = str(CreateTable(table).compile(dialect=conn.dialect)).strip()
    head = "CREATE TABLE vote ("
    assert create.startswith(head), create
    conn.exec_driver_sql("CREATE TABLE vote_new (" + create[len(head) :])
    columns = ", ".join(c.name for c in table.columns)
    old_columns = [r[1] for r in conn.exec_driver_sql("PRAGMA table_info(vote)")]
    assert old_columns == [c.name for c in table.columns], old_columns
    conn.exec_driver_sql(f"INSERT INTO vote_new ({columns}) SELECT {columns} FROM vote ORDER BY id")
    conn.exec_driver_sql("DROP TABLE vote")
    conn.exec_driver_sql("ALTER TABLE vote_new RENAME TO vote")
    # step 8: the indexes, triggers and views, as they were, plus the two unique indexes
    for kind, _, sql in saved:
        if kind != "view":
            conn.exec_driver_sql(sql)
    for ix in sorted(table.indexes, key=lambda i: str(i.name)):
        if ix.name in _VOTE_UNIQUE_INDEXES:
            ix.create(conn)
    for kind, _, sql in saved:
        if kind == "view":
            conn.exec_driver_sql(sql)
    # step 10: the foreign keys still hold
    bad = conn.exec_driver_sql("PRAGMA foreign_key_check").first()
    if bad is not None:
        raise DatabaseError(
            f"migration 005: a foreign key no longer holds after the rebuild ({tuple(bad)})",
            title="Migration",
        )


def _m006_access_token(conn: Connection) -> None:
    # Browser links of ``annotate serve`` (issue 17): portable DDL only (the table and its
    # indexes as SQLAlchemy emits them for the connection's dialect); as with 003, a
    # database created by this version already has the table from the baseline.
    table = models.AccessToken.__table__  # type: ignore[attr-defined]
    table.create(conn, checkfirst=True)
    for index in table.indexes:
        index.create(conn, checkfirst=True)


_VOTE_UNIQUE_INDEXES = ("ux_vote_supersedes", "ux_vote_uuid")
"""The named unique indexes that replace the vote table's UNIQUE constraints (005)."""

_FOREIGN_KEYS_OFF = {"005_vote_unique_indexes"}
"""Migrations that rebuild a table: run with ``PRAGMA foreign_keys=OFF`` on their
connection (the pragma is a no-op inside a transaction, so it is set before BEGIN)."""


MIGRATIONS: list[tuple[str, Migration]] = [
    ("001_baseline", _m001_baseline),
    ("002_current_vote_view", _m002_current_vote_view),
    ("003_reservation", _m003_reservation),
    ("004_item_note", _m004_item_note),
    ("005_vote_unique_indexes", _m005_vote_unique_indexes),
    ("006_access_token", _m006_access_token),
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
        with engine.connect() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            fk_off = name in _FOREIGN_KEYS_OFF
            if fk_off:
                raw.execute("PRAGMA foreign_keys=OFF")  # outside any transaction
            try:
                with conn.begin():
                    exists = conn.execute(
                        text("SELECT 1 FROM _migrations WHERE name = :n"), {"n": name}
                    ).first()
                    if exists:
                        continue
                    fn(conn)
                    conn.execute(
                        text(
                            "INSERT INTO _migrations (name, applied_at) "
                            "VALUES (:n, datetime('now'))"
                        ),
                        {"n": name},
                    )
            finally:
                if fk_off:
                    raw.execute("PRAGMA foreign_keys=ON")
        ran.append(name)
    return ran
