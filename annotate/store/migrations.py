"""Ordered schema migrations, in the style of sqlite-utils ``Migrations``.

Each migration is a named function applied in one transaction together with
its row in ``_migrations``. The first creates the baseline schema; the schema
version is the number of applied migrations.

The same list migrates a SQLite file and a PostgreSQL database (``--db URL``), and
``tests/store/test_backends.py`` checks that both end with the same schema (tables,
columns, types by affinity, nullability, unique indexes, views), from an empty
database and from one created at each older version.

Writing a migration that works on both back ends
------------------------------------------------
1. Declare the change in :mod:`annotate.store.models` first (the baseline creates
   every table the models define, so a new database already has it).
2. A new table: ``Model.__table__.create(conn, checkfirst=True)`` and each of its
   indexes with ``index.create(conn, checkfirst=True)`` (as 003 and 004 do).
3. A new column: ``ALTER TABLE t ADD COLUMN c <type> [NOT NULL DEFAULT ...]`` only when
   ``sqlalchemy.inspect(conn).get_columns("t")`` lacks it; give the type with
   :func:`column_ddl` (the column's type compiled for ``conn.dialect``) rather than a
   SQLite spelling, and a constant default (SQLite cannot add a NOT NULL column without
   one; booleans as ``false``/``true``: :func:`sql_bool`).
4. No ``PRAGMA``, ``sqlite_master``, ``rowid``, ``datetime('now')``, ``INSERT OR ...``,
   ``GROUP_CONCAT``, ``typeof`` or 0/1 for booleans in a migration: ask
   ``sqlalchemy.inspect(conn)`` about the schema, pass times as parameters, use
   ``ON CONFLICT`` and boolean parameters. What only one back end can do (005's table
   rebuild is SQLite's way to change a constraint) goes in a branch on
   ``conn.dialect.name`` with a path for each, and the test compares the results.
5. A new view: ``CREATE VIEW name AS ...`` when ``inspect(conn).get_view_names()``
   lacks it (SQLite has no ``CREATE OR REPLACE VIEW``, PostgreSQL no
   ``CREATE VIEW IF NOT EXISTS``).
6. Add the name to :data:`MIGRATIONS` and to ``annotate.store.quick.MIGRATION_NAMES``;
   run ``tests/store/test_backends.py`` (it needs a PostgreSQL server; it starts one
   when ``initdb`` is installed).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Column, Connection, Engine, inspect, text
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


def column_ddl(conn: Connection, column: Column[object]) -> str:
    """The type of ``column`` as ``conn``'s dialect spells it (for ``ALTER TABLE ADD COLUMN``)."""
    return str(column.type.compile(dialect=conn.dialect))


def sql_bool(value: bool) -> str:
    """A boolean constant both back ends read as a boolean (``true`` / ``false``)."""
    return "true" if value else "false"


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

    PostgreSQL changes constraints in place (DDL is transactional there): the two
    ``UNIQUE`` table constraints are dropped and the named unique indexes created, in
    the migration's transaction (:func:`_m005_postgresql`).
    """
    if conn.dialect.name != "sqlite":
        _m005_postgresql(conn)
        return
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
    old_columns = [r[1] for r in conn.exec_driver_sql("PRAGMA table_info(vote)")]
    # columns added by later migrations (008: retest_of) are created here empty and
    # skipped by theirs; the rows copied are the columns the old table has
    model_columns = [c.name for c in table.columns]
    assert old_columns == model_columns[: len(old_columns)], old_columns
    columns = ", ".join(old_columns)
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


def _m008_quality_questionnaire(conn: Connection) -> None:
    """Gold answers, swapped re-tests and the annotators' questionnaire (issue 16).

    Portable SQL only (no SQLite table rebuild): ``vote.retest_of`` is added with
    ``ALTER TABLE ADD COLUMN`` when missing; the chain-root unique index is recreated
    narrowed to rows that are not re-tests, beside ``ux_vote_retest_root`` (at most one
    re-test chain per annotator and item); the ``current_vote`` view leaves re-test rows
    out; the tables ``goldanswer`` and ``annotatoranswer`` are created when missing (a
    database created by this version already has all of it from the baseline).
    """
    vote = models.Vote.__table__  # type: ignore[attr-defined]
    have = {c["name"] for c in inspect(conn).get_columns("vote")}
    if "retest_of" not in have:
        conn.execute(text("ALTER TABLE vote ADD COLUMN retest_of VARCHAR"))
    conn.execute(text("DROP INDEX IF EXISTS ux_vote_chain_root"))
    for ix in vote.indexes:
        if ix.name in ("ux_vote_chain_root", "ux_vote_retest_root"):
            ix.create(conn, checkfirst=True)
    conn.execute(text("DROP VIEW IF EXISTS current_vote"))
    conn.execute(text(CURRENT_VOTE_VIEW))
    tables = (models.GoldAnswer.__table__, models.AnnotatorAnswer.__table__)  # type: ignore[attr-defined]
    for table in tables:
        table.create(conn, checkfirst=True)
        for index in table.indexes:
            index.create(conn, checkfirst=True)


CURRENT_VOTE_VIEW = """
            CREATE VIEW current_vote AS
            SELECT v.* FROM vote AS v
            WHERE v.choice != 'retract' AND v.retest_of IS NULL
              AND NOT EXISTS (SELECT 1 FROM vote AS w WHERE w.supersedes = v.uuid)
            """
"""The votes that count (since 008): not retracted, not superseded, not a re-test."""


def _m007_selection_probability(conn: Connection) -> None:
    """``vote.selection_probability``: the probability with which an adaptive schedule
    chose the item (issue 16 item 3). Portable SQL: ``ALTER TABLE vote ADD COLUMN`` only
    when the column is missing (a database created by this version has it from the
    baseline, and 005's rebuild creates it empty)."""
    have = set(conn.execute(text("SELECT * FROM vote LIMIT 0")).keys())
    if "selection_probability" not in have:
        conn.execute(text("ALTER TABLE vote ADD COLUMN selection_probability FLOAT"))


def _m005_postgresql(conn: Connection) -> None:
    """005 on PostgreSQL: replace ``UNIQUE (uuid)`` and ``UNIQUE (supersedes)`` of ``vote``
    by the named unique indexes (the views stay: they do not depend on the constraints)."""
    table = models.Vote.__table__  # type: ignore[attr-defined]
    for uc in inspect(conn).get_unique_constraints("vote"):
        if uc["column_names"] in (["uuid"], ["supersedes"]) and uc["name"]:
            conn.exec_driver_sql(f'ALTER TABLE vote DROP CONSTRAINT "{uc["name"]}"')
    for ix in sorted(table.indexes, key=lambda i: str(i.name)):
        if ix.name in _VOTE_UNIQUE_INDEXES:
            ix.create(conn, checkfirst=True)


def _m006_access_token(conn: Connection) -> None:
    # Browser links of ``annotate serve`` (issue 17): portable DDL only (the table and its
    # indexes as SQLAlchemy emits them for the connection's dialect); as with 003, a
    # database created by this version already has the table from the baseline.
    table = models.AccessToken.__table__  # type: ignore[attr-defined]
    table.create(conn, checkfirst=True)
    for index in table.indexes:
        index.create(conn, checkfirst=True)


def _m009_partial_supersedes(conn: Connection) -> None:
    """``ux_vote_supersedes`` becomes partial (``WHERE supersedes IS NOT NULL``; issue 13:
    a million-vote import rebuilds every vote index, and this one held a NULL entry for
    every vote that replaces nothing, most of them).

    The same rule: NULLs never collide in a unique index on either back end. A lookup
    ``supersedes = x`` implies the condition, so both back ends still use the index (the
    ``current_vote`` view's ``NOT EXISTS``). Portable DDL only (``DROP INDEX IF EXISTS``,
    then the index as the model declares it); a database created by this version already
    has the partial index and gets it rebuilt empty.

    ``ix_vote_study_id`` stays although ``ix_vote_study_item`` starts with the same
    column: the monitor's change marker (``max(id) WHERE study_id = ?``) and its new-rows
    query (``study_id = ? AND id > ?``) seek on (study_id, rowid) in it; without it both
    scan the study's entries (0.1 ms -> 80 ms at a million votes).
    """
    conn.execute(text("DROP INDEX IF EXISTS ux_vote_supersedes"))
    for ix in models.Vote.__table__.indexes:  # type: ignore[attr-defined]
        if ix.name == "ux_vote_supersedes":
            ix.create(conn)


def _m010_retest_index(conn: Connection) -> None:
    """``ix_vote_retest``: the re-test rows of each study, ``(study_id, id, retest_of) WHERE
    retest_of IS NOT NULL`` (issue 13). The report's re-test agreement
    (``repo.retest_choices``), the export of re-tests and the vote cache's row count read a
    study's re-test rows; without it they read every vote of the study to find none (0.1 s
    of the report at a million votes). Empty when there is no re-test: creating it reads
    the table once (~0.1 s per million votes), and a bulk import keeps it
    (``repo.BULK_KEPT_INDEXES``). Portable DDL only (the index as the model declares it);
    a database created by this version already has it."""
    for ix in models.Vote.__table__.indexes:  # type: ignore[attr-defined]
        if ix.name == "ix_vote_retest":
            ix.create(conn, checkfirst=True)


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
    ("007_selection_probability", _m007_selection_probability),
    ("008_quality_questionnaire", _m008_quality_questionnaire),
    ("009_partial_supersedes", _m009_partial_supersedes),
    ("010_retest_index", _m010_retest_index),
]
"""Every migration, in the order it is applied. Append only."""

_CREATE_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
)


def _now_text() -> str:
    """UTC now as SQLite's ``datetime('now')`` writes it (what ``applied_at`` held before)."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")


def applied(engine: Engine) -> list[str]:
    """Names of the migrations already applied to the database.

    Reads on the raw connection, outside any transaction of the engine: the store's
    engines begin transactions with ``BEGIN IMMEDIATE`` (SQLite) or the writer lock
    (PostgreSQL), which would wait behind a long import (and fail after the timeout)
    just to read this list. In the order applied (by name: the names are numbered).
    """
    postgres = engine.url.get_backend_name() == "postgresql"
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        try:
            if postgres:
                cur.execute("SELECT to_regclass('_migrations') IS NOT NULL")
            else:
                cur.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
                )
            row = cur.fetchone()
            if not row or not row[0]:
                return []
            cur.execute("SELECT name FROM _migrations ORDER BY name")
            return [r[0] for r in cur.fetchall()]
        finally:
            cur.close()
    finally:
        if postgres:
            raw.rollback()  # end the read's implicit transaction before the pool keeps it
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
            f"the database {_label(engine)} was written by a newer version of annotate "
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


def _label(engine: Engine) -> str:
    if engine.url.get_backend_name() == "sqlite":
        return str(engine.url.database)
    return engine.url.render_as_string(hide_password=True)


def _apply(engine: Engine, done: list[str]) -> list[str]:
    ran: list[str] = []
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        with engine.connect() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            fk_off = name in _FOREIGN_KEYS_OFF and conn.dialect.name == "sqlite"
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
                        text("INSERT INTO _migrations (name, applied_at) VALUES (:n, :t)"),
                        {"n": name, "t": _now_text()},
                    )
            finally:
                if fk_off:
                    raw.execute("PRAGMA foreign_keys=ON")
        ran.append(name)
    return ran
