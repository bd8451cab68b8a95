"""Options shared by the commands: ``--db``, ``--json``, and options between positionals."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DB_HELP = (
    "SQLite database file (default: votes.db in the per-user data directory), or a "
    "PostgreSQL URL: postgresql+psycopg://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
)


@dataclass(frozen=True)
class Parents:
    """Parent parsers a command's ``add_parser`` passes to ``subparsers.add_parser``.

    Attributes
    ----------
    db : argparse.ArgumentParser
        ``--db PATH`` (every command).
    json : argparse.ArgumentParser
        ``--json`` (commands that print a table).
    """

    db: argparse.ArgumentParser
    json: argparse.ArgumentParser


def make_parents() -> Parents:
    """New parent parsers (argparse copies their actions into each command)."""
    db = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a command without --db keeps the one given before the command.
    db.add_argument("--db", metavar="PATH|URL", help=DB_HELP, default=argparse.SUPPRESS)
    js = argparse.ArgumentParser(add_help=False)
    js.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    return Parents(db=db, json=js)


def db_path(args: argparse.Namespace) -> Path | str | None:
    """The ``--db`` given: a file (user folder expanded), a database URL (``str``, as
    given), or None for the default database."""
    db = getattr(args, "db", None)
    if not db:
        return None
    if _URL.match(db):
        return str(db)
    return Path(db).expanduser()


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
"""A ``--db`` that is a database URL (as :func:`annotate.store.quick.is_database_url`)."""


def intermixed(parser: argparse.ArgumentParser) -> None:
    """Let ``parser`` (a subcommand) take options between and after its positionals.

    With an optional positional (``nargs="?"``) after a required one, plain argparse
    gives ``rank eip --top 5 m.csv`` no MATRIX ("unrecognized arguments"); the
    intermixed parse assigns it.
    """
    plain = parser.parse_known_args

    def known(args: Any = None, namespace: Any = None) -> Any:
        parser.parse_known_args = plain  # type: ignore[method-assign]
        try:
            return parser.parse_known_intermixed_args(args, namespace)
        finally:
            parser.parse_known_args = known  # type: ignore[method-assign]

    parser.parse_known_args = known  # type: ignore[method-assign]
