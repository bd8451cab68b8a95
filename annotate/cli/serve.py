"""``annotate serve`` (the app in a browser) and ``annotate annotators`` (their links).

The lead issues one link per annotator (``annotators add NAME`` prints it once; only a
hash of its token is stored), starts ``annotate serve`` and sends each annotator their
link. See :mod:`annotate.web.server` for what the server checks.
"""

from __future__ import annotations

import argparse
from typing import Any

from annotate.cli.options import Parents, db_path
from annotate.cli.output import print_json, say, table
from annotate.names import one_line

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_URL_BASE = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
""":data:`annotate.services.access.DEFAULT_URL_BASE` (a test checks they agree)."""


def add_parser(subparsers: Any, parents: Parents) -> None:
    """Add ``serve`` and ``annotators`` (``add``, ``list``, ``revoke``) to ``subparsers``."""
    s = subparsers.add_parser(
        "serve",
        parents=[parents.db],
        help="serve the annotation app to browsers (annotators open their links)",
        description="Serve the annotation app to web browsers through textual-serve. Each "
        "browser needs an annotator's link (annotate annotators add NAME): a missing, wrong "
        "or revoked token gets a 403 page and no app; the link fixes the annotator's name. "
        "Plain HTTP: on a network you do not trust, put it behind an HTTPS reverse proxy.",
    )
    s.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}: this machine only; 0.0.0.0: "
        "every interface)",
    )
    s.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    s.add_argument(
        "--study",
        metavar="NAME",
        default=None,
        help="serve only this study (links limited to another study are refused)",
    )
    s.set_defaults(func=cmd_serve)

    a = subparsers.add_parser(
        "annotators",
        parents=[parents.db],
        help="issue, list and revoke annotators' browser links (for annotate serve)",
        description="Browser links for annotate serve: one per annotator, issued by the lead.",
    )
    sub = a.add_subparsers(dest="annotators_command", metavar="WHAT", required=True)
    add = sub.add_parser(
        "add",
        parents=[parents.db],
        help="issue a link for annotator NAME and print it (shown once)",
        description="Issue a link for annotator NAME and print it: URL_BASE/?token=TOKEN. "
        "The token is shown only now (the database keeps its SHA-256); an annotator has "
        "one live link at a time (revoke it to issue another).",
    )
    add.add_argument("name", metavar="NAME")
    add.add_argument("--study", metavar="NAME", default=None, help="the link opens only this study")
    add.add_argument(
        "--url-base",
        metavar="URL",
        default=DEFAULT_URL_BASE,
        help=f"where annotators reach annotate serve (default {DEFAULT_URL_BASE})",
    )
    add.set_defaults(func=cmd_annotators_add)
    ls = sub.add_parser(
        "list",
        parents=[parents.db, parents.json],
        help="list the links issued (never the tokens)",
        description="List the links issued: annotator, study, issued, revoked.",
    )
    ls.set_defaults(func=cmd_annotators_list)
    rv = sub.add_parser(
        "revoke",
        parents=[parents.db],
        help="revoke annotator NAME's link (open sessions end within seconds)",
        description="Revoke annotator NAME's live link: it opens nothing any more, and "
        "annotate serve ends its open sessions within 5 seconds. Votes stay.",
    )
    rv.add_argument("name", metavar="NAME")
    rv.set_defaults(func=cmd_annotators_revoke)


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the app to browsers until Ctrl+C."""
    from annotate.errors import AnnotateError
    from annotate.services.db import open_store
    from annotate.store.engine import default_db_path, make_engine

    if not 0 < args.port < 65536:
        raise AnnotateError(f"--port {args.port}: expected a port number from 1 to 65535")
    db = db_path(args)
    if isinstance(db, str):
        # a PostgreSQL URL goes on the app processes' command line: refuse one with a
        # password there (use a password file or trust/peer authentication instead),
        # before connecting, so that no connection error hides the reason
        from sqlalchemy.engine import make_url

        if make_url(db).password is not None:
            raise AnnotateError(
                "annotate serve: put the PostgreSQL password in ~/.pgpass, not in the --db URL"
            )
    engine = open_store(db, seed_demo=db is None)  # migrated before any app process starts
    try:
        if args.study is not None:
            from annotate.services.catalog import studies

            if args.study not in {r.name for r in studies(engine)}:
                raise AnnotateError(
                    f"no study named {one_line(args.study)!r}; list them with: annotate studies"
                )
    finally:
        engine.dispose()
    try:
        from annotate.web.server import StudyServer
    except ModuleNotFoundError as err:
        if err.name not in ("textual_serve", "aiohttp"):
            raise
        raise AnnotateError(
            f"annotate serve needs {err.name.replace('_', '-')}: "
            "pip install 'annotate-eval[serve]' (or: pip install textual-serve)"
        ) from None

    path = db if isinstance(db, str) else (db if db is not None else default_db_path()).resolve()
    reader = make_engine(path, immediate=False)
    try:
        StudyServer(path, reader, host=args.host, port=args.port, study=args.study).serve()
    finally:
        reader.dispose()
    return 0


def cmd_annotators_add(args: argparse.Namespace) -> int:
    """Issue a link and print it."""
    from annotate.services.access import issue_link
    from annotate.services.db import open_store

    engine = open_store(db_path(args))
    try:
        link = issue_link(engine, args.name, study=args.study, url_base=args.url_base)
    finally:
        engine.dispose()
    where = f" (study {one_line(link.study)})" if link.study else ""
    say(f"link for {one_line(link.annotator)}{where}; send it to them only, it is shown once:")
    say(link.url)
    return 0


def cmd_annotators_list(args: argparse.Namespace) -> int:
    """List the links issued."""
    from annotate.services.access import links
    from annotate.services.db import open_store

    engine = open_store(db_path(args))
    try:
        rows = links(engine)
    finally:
        engine.dispose()
    if args.json:
        print_json(
            [
                {
                    "annotator": r.annotator,
                    "study": r.study,
                    "issued_at": r.created_at.isoformat(),
                    "revoked_at": None if r.revoked_at is None else r.revoked_at.isoformat(),
                }
                for r in rows
            ]
        )
        return 0
    if not rows:
        say("no links; issue one with: annotate annotators add NAME")
        return 0

    def when(t: Any) -> str:
        return "" if t is None else f"{t:%Y-%m-%d %H:%M}"

    say(
        table(
            [
                (
                    one_line(r.annotator),
                    one_line(r.study or "(any)"),
                    "revoked" if r.revoked_at else "live",
                    when(r.created_at),
                    when(r.revoked_at),
                )
                for r in rows
            ],
            ["annotator", "study", "status", "issued (UTC)", "revoked (UTC)"],
        )
    )
    return 0


def cmd_annotators_revoke(args: argparse.Namespace) -> int:
    """Revoke a link."""
    from annotate.services.access import revoke_link
    from annotate.services.db import open_store

    engine = open_store(db_path(args))
    try:
        revoke_link(engine, args.name)
    finally:
        engine.dispose()
    say(f"revoked the link of {one_line(args.name)}")
    return 0
