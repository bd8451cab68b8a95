"""Options shared by the commands: ``--db``, ``--json``, and options between positionals."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DB_HELP = "SQLite database file (default: votes.db in the per-user data directory)"


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
    db.add_argument("--db", metavar="PATH", help=DB_HELP, default=argparse.SUPPRESS)
    js = argparse.ArgumentParser(add_help=False)
    js.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    return Parents(db=db, json=js)


def db_path(args: argparse.Namespace) -> Path | None:
    """The ``--db`` given (user folder expanded), or None for the default database."""
    return Path(args.db).expanduser() if getattr(args, "db", None) else None


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
