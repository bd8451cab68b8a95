"""Ordered schema migrations, in the style of sqlite-utils ``Migrations``.

Each migration is a named function applied in one transaction together with
its row in ``_migrations``. The first creates the baseline schema; the schema
version is the number of applied migrations.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, Engine, text
from sqlmodel import SQLModel

from annotate.store import models  # noqa: F401  (registers the tables)

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


MIGRATIONS: list[tuple[str, Migration]] = [
    ("001_baseline", _m001_baseline),
    ("002_current_vote_view", _m002_current_vote_view),
]
"""Every migration, in the order it is applied. Append only."""


def applied(engine: Engine) -> list[str]:
    """Names of the migrations already applied to the database."""
    with engine.connect() as conn:
        conn.execute(
            text("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
        )
        conn.commit()
        return [r[0] for r in conn.execute(text("SELECT name FROM _migrations ORDER BY rowid"))]


def schema_version(engine: Engine) -> int:
    """The number of migrations applied."""
    return len(applied(engine))


def migrate(engine: Engine) -> list[str]:
    """Apply the migrations not yet applied, each in its own transaction.

    Returns the names applied. Safe to call from several processes at once:
    each migration re-checks ``_migrations`` inside its write transaction.
    """
    known = [name for name, _ in MIGRATIONS]
    done = applied(engine)
    unknown = [n for n in done if n not in known]
    if unknown:
        raise RuntimeError(
            f"the database was written by a newer version of annotate (migrations {unknown}); "
            "upgrade annotate to open it"
        )
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
