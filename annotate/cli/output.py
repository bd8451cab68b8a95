"""What the commands print: tables and messages for people, JSON for scripts, error lines.

Everything printed for people goes through :func:`say` and :func:`table`, which show
names and titles from files with :mod:`annotate.names` (escape sequences and control
characters become visible placeholders). ``--json`` output is data: exact, with every
control, C1, bidirectional and lone surrogate character written as a ``\\uXXXX``
escape. :func:`describe_error` turns a failure into the one line that
:func:`annotate.cli.main` prints on stderr, with its exit status.

This module imports only the standard library and :mod:`annotate.names`: every
command, ``--help`` included, loads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from annotate.errors import AnnotateError
from annotate.names import one_line, sanitize

EXIT_INTERNAL = 70
"""Exit status of an unexpected error (a bug): ``EX_SOFTWARE`` of sysexits.h."""

Progress = Callable[[int, int], None]
"""A progress callback: ``progress(done, total)``."""

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


def print_json(obj: Any) -> None:
    """Write ``obj`` to stdout as one :func:`json_text` document."""
    sys.stdout.write(json_text(obj) + "\n")


def say(text: object = "", *, file: IO[str] | None = None) -> None:
    """Print ``text`` for people: control characters shown as placeholders, newlines kept.

    Use :func:`annotate.names.one_line` on a name inside a message when a
    newline in it must not start a new line.
    """
    print(sanitize(str(text)), file=file or sys.stdout)


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """A text table; every cell is :func:`annotate.names.one_line` text.

    Examples
    --------
    >>> print(table([("a", 1), ("bb", 22)], ["name", "n"]))
    name  n
    ----  --
    a     1
    bb    22
    """
    cells = [[one_line(h) for h in header]] + [[one_line(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


@contextmanager
def progress_bar(label: str) -> Iterator[Progress | None]:
    """A progress bar on stderr while the block runs, when stderr is a terminal.

    Yields a callback ``progress(done, total)`` for the service doing the work, or
    None when stderr is not a terminal (a pipe, a file, a test): then nothing is
    drawn. The bar goes to stderr only and disappears when the block ends, so stdout
    (a table or a ``--json`` document) is never mixed with it. Until the first call
    the bar pulses and shows the time elapsed.
    """
    if not _stderr_is_terminal():
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield update


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def error_line(cmd: str, message: str) -> None:
    """Print ``annotate CMD: message`` as one sanitised line on stderr."""
    with contextlib.suppress(OSError):
        print(f"annotate {cmd}: {one_line(message)}", file=sys.stderr, flush=True)


def quiet_broken_pipe() -> int:
    """End quietly when the reader of stdout went away (``annotate report | head``).

    The recipe of the Python documentation (``signal`` module, "Note on
    SIGPIPE"): point stdout at devnull so the flush at exit raises nothing.
    """
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 1


def _database_message(err: BaseException, db: Path | str | None) -> str | None:
    """One line for a database failure that no service turned into an AnnotateError."""
    import sqlite3

    orig: BaseException = err
    sqlalchemy_errors: tuple[type[BaseException], ...] = ()
    if "sqlalchemy" in sys.modules:  # otherwise no SQLAlchemy error can have been raised
        from sqlalchemy.exc import DBAPIError, SQLAlchemyError

        sqlalchemy_errors = (SQLAlchemyError,)
        if isinstance(err, DBAPIError) and err.orig is not None:
            orig = err.orig
    psycopg = sys.modules.get("psycopg")  # loaded only when --db is a PostgreSQL URL
    if psycopg is not None:
        sqlalchemy_errors = (*sqlalchemy_errors, psycopg.Error)
    if not isinstance(orig, (sqlite3.Error, *sqlalchemy_errors)):
        return None
    where = _db_label(db)
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


def _db_label(db: Path | str | None) -> str:
    """How a message names ``--db``: the path, or the URL with its password hidden."""
    if db is None:
        return "the default database"
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", str(db))


def describe_error(err: BaseException, db: Path | str | None = None) -> tuple[str, int]:
    """The one-line message and exit status :func:`annotate.cli.main` prints for ``err``.

    Parameters
    ----------
    err : BaseException
        What a command raised.
    db : Path, str or None
        The ``--db`` given (a file or a database URL), named in database messages.

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
