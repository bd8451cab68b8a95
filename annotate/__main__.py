"""Command line: parse, call a service, print. Thin by design.

Everything printed for people goes through :func:`say` and :func:`_table`,
which show names and titles from files with :mod:`annotate.names` (escape
sequences and control characters become visible placeholders). ``--json``
output is data: exact, with every control, C1, bidirectional and lone
surrogate character written as a ``\\uXXXX`` escape. :func:`main` turns every
expected failure into one line on stderr and a non-zero exit status
(``ANNOTATE_DEBUG=1`` shows the traceback instead).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from annotate import __version__
from annotate.errors import AnnotateError
from annotate.names import one_line, sanitize

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, Handler] = {}


def command(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        COMMANDS[name] = fn
        return fn

    return register


def _db(args: argparse.Namespace) -> Path | None:
    return Path(args.db).expanduser() if getattr(args, "db", None) else None


_JSON_ESCAPES: dict[int, str] = {
    code: f"\\u{code:04x}"
    for code in (
        0x7F,
        *range(0x80, 0xA0),
        0x061C,
        0x200E,
        0x200F,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
        0x2028,
        0x2029,
        *range(0xD800, 0xE000),
    )
}
"""Characters ``json.dumps(ensure_ascii=False)`` leaves raw that a terminal may act on.

They can only occur inside JSON strings, where ``\\uXXXX`` is the same value."""


def json_text(obj: Any) -> str:
    """``obj`` as an indented JSON document that is exact and safe for a terminal.

    Non-ASCII text stays readable; C0 controls (ESC included) are escaped by
    :func:`json.dumps`, and DEL, C1 controls, bidirectional controls, line
    separators and lone surrogates are escaped here, so the document decodes
    to the same values and no raw control byte reaches stdout.

    Examples
    --------
    >>> print(json_text({"m": "gpt\\x1b[31m\\x9b\\u202e\\ud800é"}))
    {
      "m": "gpt\\u001b[31m\\u009b\\u202e\\ud800é"
    }
    """
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str).translate(_JSON_ESCAPES)


def _print_json(obj: Any) -> None:
    sys.stdout.write(json_text(obj) + "\n")


def say(text: object = "", *, file: IO[str] | None = None) -> None:
    """Print ``text`` for people: control characters shown as placeholders, newlines kept.

    Use :func:`annotate.names.one_line` on a name inside a message when a
    newline in it must not start a new line.
    """
    print(sanitize(str(text)), file=file or sys.stdout)


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """A text table; every cell is :func:`annotate.names.one_line` text."""
    cells = [[one_line(h) for h in header]] + [[one_line(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


@command("app")
def cmd_app(args: argparse.Namespace) -> int:
    from annotate.app import make_app
    from annotate.services.db import open_store

    # The demo loads only on the first launch on the default database, never into a
    # database the user named (use ``annotate import --demo`` for that).
    engine = open_store(_db(args), seed_demo=_db(args) is None)
    app = make_app(engine=engine, annotator=args.annotator, study=args.study)
    app.run()
    return int(app.return_code or 0)


@command("studies")
def cmd_studies(args: argparse.Namespace) -> int:
    from annotate.services.catalog import studies
    from annotate.services.db import open_store

    rows = studies(open_store(_db(args)))
    if args.json:
        _print_json([r.as_dict() for r in rows])
        return 0
    if not rows:
        say("no studies; add one with: annotate import STUDY_FOLDER (or annotate import --demo)")
        return 0
    say(
        _table(
            [(r.name, r.kind, r.items, r.votes, r.annotators, r.title) for r in rows],
            ["name", "kind", "items", "votes", "annotators", "title"],
        )
    )
    return 0


@command("import")
def cmd_import(args: argparse.Namespace) -> int:
    from annotate.services.db import demo_study_dirs, open_store
    from annotate.services.importing import import_paths

    paths = [Path(p) for p in args.paths]
    if args.demo:
        paths += demo_study_dirs()
    if not paths:
        raise AnnotateError("nothing to import: give one or more PATHs, or --demo")
    engine = open_store(_db(args))
    report = import_paths(
        engine,
        paths,
        fmt=args.format,
        study=args.study,
        model=args.model,
        metric=args.metric,
        filter_name=args.filter,
    )
    if args.json:
        _print_json(report.as_dict())
        return 0
    for name in report.studies_created:
        say(f"created study {one_line(name)}")
    for name in report.studies_unchanged:
        say(f"study {one_line(name)} already present (same items); left as it is")
    say(
        f"added {report.items_added} items, {report.votes_added} votes "
        f"({report.votes_skipped} already present), {report.scores_added} matrix scores"
    )
    for note in report.notes:
        say(note)
    return 0


@command("export")
def cmd_export(args: argparse.Namespace) -> int:
    from annotate.services.db import open_store
    from annotate.services.exporting import export_votes

    res = export_votes(
        open_store(_db(args)),
        fmt=args.format,
        out=Path(args.out) if args.out else None,
        study=args.study,
    )
    if args.json:
        _print_json(
            {
                "folder": str(res.folder),
                "files": [str(f) for f in res.files],
                "votes": res.votes,
                "log_rows": res.log_rows,
            }
        )
        return 0
    say(
        f"wrote {res.votes} current votes ({res.log_rows} rows of history) "
        f"to {one_line(res.folder)}/"
    )
    for f in res.files:
        say(f"  {one_line(f)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    db_help = "SQLite database file (default: votes.db in the per-user data directory)"
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="PATH", help=db_help, default=argparse.SUPPRESS)
    jsonp = argparse.ArgumentParser(add_help=False)
    jsonp.add_argument("--json", action="store_true", help="print one JSON document on stdout")

    p = argparse.ArgumentParser(
        prog="annotate",
        description="Blind human evaluation of LLMs: difficulty studies and arena battles.",
        epilog="Without a command, opens the annotation app.",
    )
    p.add_argument("--version", action="version", version=f"annotate {__version__}")
    p.add_argument("--db", metavar="PATH", help=db_help)
    p.add_argument("--annotator", metavar="NAME", help="annotate as NAME (skips the name prompt)")
    p.add_argument("--study", metavar="NAME", help="open study NAME directly")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    a = sub.add_parser(
        "app",
        parents=[common],
        help="open the annotation app (the default)",
        description="Open the annotation app.",
    )
    a.add_argument("--annotator", metavar="NAME", default=argparse.SUPPRESS)
    a.add_argument("--study", metavar="NAME", default=argparse.SUPPRESS)

    sub.add_parser(
        "studies",
        parents=[common, jsonp],
        help="list studies and their progress",
        description="List the studies with items, current votes and annotators.",
    )

    i = sub.add_parser(
        "import",
        parents=[common, jsonp],
        help="import studies, votes or third-party files",
        description="Import study folders, vote exports (CSV, JSON Lines, Parquet, or an "
        "export folder), Chatbot Arena battle records, LLMFAO crowd votes, or "
        "lm-evaluation-harness --log_samples output. Everything named is written in one "
        "transaction: it all loads, or the database is unchanged.",
    )
    i.add_argument("paths", nargs="*", metavar="PATH")
    i.add_argument(
        "--demo",
        action="store_true",
        help="also import the embedded demo studies (demo-difficulty, demo-arena)",
    )
    i.add_argument(
        "--format",
        default="auto",
        choices=["auto", "study", "votes", "chatbot-arena", "llmfao", "lm-eval"],
        help="what PATH holds (default: detected)",
    )
    i.add_argument(
        "--study",
        metavar="NAME",
        default=None,
        help="study to create or extend for battle records and harness logs "
        "(default: the file name, or the task name)",
    )
    i.add_argument(
        "--model",
        metavar="NAME",
        default=None,
        help="lm-eval: model name (default: the folder holding each samples file)",
    )
    i.add_argument(
        "--metric",
        metavar="NAME",
        default=None,
        help="lm-eval: per-sample metric (default: acc, else exact_match, ...)",
    )
    i.add_argument(
        "--filter",
        metavar="NAME",
        default=None,
        help="lm-eval: filter to use when a task logs several (default: the first)",
    )

    e = sub.add_parser(
        "export",
        parents=[common, jsonp],
        help="export votes, history, items and studies",
        description="Write votes.<ext> (current votes), vote_log.<ext> (all rows), items.<ext> "
        "and studies/<name>/ under DIR (default: ./exports).",
    )
    e.add_argument("--format", choices=["csv", "jsonl", "parquet"], default="csv")
    e.add_argument("--study", metavar="NAME", default=None, help="only this study")
    e.add_argument("--out", metavar="DIR", default=None, help="output folder (default: exports/)")
    for extra in EXTRA_PARSERS:
        extra(sub, common, jsonp)
    return p


EXTRA_PARSERS: list[Callable[[Any, argparse.ArgumentParser, argparse.ArgumentParser], None]] = []
"""Hooks that add the analysis commands (rank, rate, report, ...)."""


def _opens_app(argv: Sequence[str]) -> bool:
    """Whether ``argv`` runs the app (no command, or ``app``) without asking for help."""
    takes_value = {"--db", "--annotator", "--study"}
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in ("-h", "--help"):
            return False
        elif token in takes_value:
            skip = True
        elif not token.startswith("-"):
            return token == "app"
    return True


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not _opens_app(argv):
        # The analysis commands import the statistics stack (seconds); the app needs none.
        from annotate import (
            cli_analysis,  # noqa: F401  (registers analysis commands)
            cli_report,  # noqa: F401
        )

    parser = build_parser()
    args = parser.parse_args(argv)
    cmd = args.command or "app"
    try:
        code = COMMANDS[cmd](args)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return code
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except KeyboardInterrupt:
        _error_line(cmd, "interrupted")
        return 130
    except Exception as err:
        if os.environ.get("ANNOTATE_DEBUG"):
            raise
        message, code = describe_error(err, _db(args))
        _error_line(cmd, message)
        return code


EXIT_INTERNAL = 70
"""Exit status of an unexpected error (a bug): ``EX_SOFTWARE`` of sysexits.h."""


def _error_line(cmd: str, message: str) -> None:
    with contextlib.suppress(OSError):
        print(f"annotate {cmd}: {one_line(message)}", file=sys.stderr, flush=True)


def _quiet_broken_pipe() -> int:
    """End quietly when the reader of stdout went away (``annotate report | head``).

    The recipe of the Python documentation (``signal`` module, "Note on
    SIGPIPE"): point stdout at devnull so the flush at exit raises nothing.
    """
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 1


def _database_message(err: BaseException, db: Path | None) -> str | None:
    """One line for a database failure that no service turned into an AnnotateError."""
    import sqlite3

    from sqlalchemy.exc import DBAPIError, SQLAlchemyError

    orig: BaseException = err
    if isinstance(err, DBAPIError) and err.orig is not None:
        orig = err.orig
    if not isinstance(orig, sqlite3.Error | SQLAlchemyError):
        return None
    where = str(db) if db is not None else "the default database"
    text = str(orig).splitlines()[0] if str(orig) else type(orig).__name__
    low = text.lower()
    if "locked" in low or "busy" in low:
        return (
            f"the database {where} is busy (locked by another process: {text}); "
            "wait for it to finish and try again"
        )
    if "readonly" in low or "read-only" in low:
        return (
            f"the database {where} is read-only ({text}); "
            "use a copy you may write to, or check the file's and folder's permissions"
        )
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return (
            f"the database {where} is not a usable annotate database ({text}); "
            "point --db at another file, or restore it from a backup or an export"
        )
    if "unable to open" in low:
        return (
            f"cannot open the database {where} ({text}); check that its folder exists "
            "and that you may write there"
        )
    if "disk" in low and ("full" in low or "i/o" in low):
        return f"cannot write the database {where} ({text}); free some space and try again"
    return f"database error on {where}: {text}"


def describe_error(err: BaseException, db: Path | None = None) -> tuple[str, int]:
    """The one-line message and exit status :func:`main` prints for ``err``.

    Parameters
    ----------
    err : BaseException
        What a command raised.
    db : Path or None
        The ``--db`` given, named in database messages.

    Returns
    -------
    tuple of (str, int)
        The message (names in it are sanitised by the caller) and the exit
        status: 1 for an expected failure, :data:`EXIT_INTERNAL` for a bug.
    """
    if isinstance(err, AnnotateError):
        return str(err), 1
    db_message = _database_message(err, db)
    if db_message is not None:
        return db_message, 1
    if isinstance(err, OSError):
        what = err.strerror or str(err) or type(err).__name__
        name = err.filename if err.filename is not None else ""
        if err.filename2 is not None:
            name = f"{name} -> {err.filename2}"
        where = f": {name}" if name else ""
        return f"{what}{where}", 1
    if isinstance(err, UnicodeError):
        return f"cannot read or write text: {err}", 1
    if isinstance(err, RecursionError | MemoryError):
        return f"input too large or too deeply nested ({type(err).__name__})", 1
    return (
        f"unexpected error ({type(err).__name__}: {err}); this is a bug: run again with "
        "ANNOTATE_DEBUG=1 for the traceback and report it",
        EXIT_INTERNAL,
    )


if __name__ == "__main__":
    # Under ``python -m annotate`` this file runs as ``__main__``, a second module object:
    # the analysis commands register themselves on ``annotate.__main__`` (imported by
    # name), so run that module's main.
    from annotate import __main__ as cli

    raise SystemExit(cli.main())
