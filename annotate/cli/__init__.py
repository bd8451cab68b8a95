"""The command line: parse, call a service, print. Thin by design.

One module per command family, each with an explicit ``add_parser(subparsers,
parents)`` that adds its commands and sets each one's handler (``func``):

- :mod:`annotate.cli.app`: ``app`` (also the default: ``annotate`` alone) and ``studies``;
- :mod:`annotate.cli.import_export`: ``import`` and ``export``;
- :mod:`annotate.cli.analysis`: ``rank``, ``rate``, ``simulate`` and ``monitor``;
- :mod:`annotate.cli.report`: ``report``;
- :mod:`annotate.cli.analyze`: ``analyze``;
- :mod:`annotate.cli.plan`: ``plan`` (``plan pairs``);
- :mod:`annotate.cli.serve`: ``serve`` and ``annotators`` (``add``, ``list``, ``revoke``).

:mod:`annotate.cli.output` holds what they print with (tables, JSON, progress bars, error
lines) and :mod:`annotate.cli.options` the options they share (``--db``, ``--json``).
Command modules import only those two and light project modules at import time; the
services, Textual and the statistics stack are imported inside the handlers, so
``annotate --help`` and ``annotate studies`` answer at once.

:func:`main` turns every expected failure into one line on stderr and a non-zero exit
status (``ANNOTATE_DEBUG=1`` shows the traceback instead).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from annotate import __version__
from annotate.cli import analysis, analyze, app, import_export, plan, report, serve
from annotate.cli.options import DB_HELP, db_path, make_parents
from annotate.cli.output import describe_error, error_line, quiet_broken_pipe

__all__ = ["build_parser", "main"]

FAMILIES = (app, import_export, analysis, report, analyze, plan, serve)
"""The command modules, in the order their commands are listed by ``annotate --help``."""


def build_parser() -> argparse.ArgumentParser:
    """The ``annotate`` parser with every command; each command's ``func`` is its handler."""
    p = argparse.ArgumentParser(
        prog="annotate",
        description="Blind human evaluation of LLMs: difficulty studies and arena battles.",
        epilog="Without a command, opens the annotation app.",
    )
    p.add_argument("--version", action="version", version=f"annotate {__version__}")
    p.add_argument("--db", metavar="PATH|URL", help=DB_HELP)
    p.add_argument("--annotator", metavar="NAME", help="annotate as NAME (skips the name prompt)")
    p.add_argument("--study", metavar="NAME", help="open study NAME directly")
    p.set_defaults(func=app.cmd_app)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    parents = make_parents()
    for family in FAMILIES:
        family.add_parser(sub, parents)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``annotate`` command line; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success; 1 for a failure the message explains, 130 after Ctrl-C,
        :data:`annotate.cli.output.EXIT_INTERNAL` for a bug; 2 for a usage error
        (argparse exits itself).
    """
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    cmd = args.command or "app"
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return code
    except BrokenPipeError:
        return quiet_broken_pipe()
    except KeyboardInterrupt:
        error_line(cmd, "interrupted")
        return 130
    except Exception as err:
        if os.environ.get("ANNOTATE_DEBUG"):
            raise
        message, code = describe_error(err, db_path(args))
        error_line(cmd, message)
        return code
