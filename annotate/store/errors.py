"""Errors of the store: a database that cannot be opened or written, said in one line."""

from __future__ import annotations

from annotate.errors import AnnotateError


class DatabaseError(AnnotateError):
    """The database file cannot be used: missing folder, not SQLite, corrupt, read-only,
    newer schema, or busy. The message names the file, the problem and the fix; nothing
    was written."""

    def __init__(self, msg: str, title: str = "Cannot open the database") -> None:
        super().__init__(msg, title=title)


_FAULTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("readonly", "read-only"),
        "cannot write the database {db}: the file or its folder is read-only for you; ask its "
        "owner for write access to both (SQLite writes {name}-wal and {name}-shm beside it), "
        "or copy it to a folder of yours and pass --db",
    ),
    (
        ("not a database", "malformed", "file is encrypted"),
        "the database {db} is damaged or not a SQLite database; restore it from a backup or "
        "rebuild it from an export (annotate import), or pass --db with another file",
    ),
    (
        ("unable to open database file", "disk i/o error"),
        "cannot open the database {db}: its folder is missing, not writable, or on a failing "
        "disk; check the path and the folder's permissions, or pass --db with another file",
    ),
    (
        ("database or disk is full",),
        "the disk holding the database {db} is full; free some space and try again",
    ),
    (
        ("canceling statement due to lock timeout", "lock timeout"),
        "the database {db} is busy: another annotate process held its writer lock for longer "
        "than the lock timeout; wait for it to finish (or stop it) and try again (set "
        "ANNOTATE_LOCK_TIMEOUT=SECONDS to wait longer)",
    ),
    (
        ("connection refused", "could not connect", "connection failed", "could not translate"),
        "cannot connect to the database server of {db}: is PostgreSQL running there and "
        "listening on that host and port? Check the URL, or pass --db with a SQLite file",
    ),
    (
        ("password authentication failed", 'role "', "no pg_hba.conf entry"),
        "the database server of {db} refused the login; check the user and password in the URL "
        "and the server's pg_hba.conf",
    ),
    (
        ('database "',),
        "the database {db} does not exist on its server; create it first (createdb NAME) "
        "or check the URL",
    ),
    (
        ("database is locked", "database is busy"),
        "the database {db} stayed locked by a program that does not queue with annotate "
        "(an sqlite3 shell, a sync tool?); close it and try again",
    ),
)


def database_fault(err: BaseException, db: str | None) -> DatabaseError | None:
    """The one-line :class:`DatabaseError` for a SQLite failure, or None if it is not one.

    Constraint violations (``IntegrityError``) are never faults: callers handle them.
    """
    from sqlalchemy.exc import IntegrityError

    if isinstance(err, IntegrityError):
        return None
    text = str(getattr(err, "orig", None) or err).lower()
    for needles, template in _FAULTS:
        if any(n in text for n in needles):
            name = (db or "the database").rsplit("/", 1)[-1].split("?", 1)[0]
            return DatabaseError(template.format(db=db or "(in memory)", name=name))
    return None
