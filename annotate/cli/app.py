"""``annotate [app]`` (the annotation app) and ``annotate studies`` (the study listing)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from annotate.cli.options import Parents, db_path
from annotate.cli.output import print_json, say, table
from annotate.web import FIXED_ANNOTATOR_ENV, FIXED_STUDY_ENV


def add_parser(subparsers: Any, parents: Parents) -> None:
    """Add ``app`` and ``studies`` to ``subparsers``."""
    a = subparsers.add_parser(
        "app",
        parents=[parents.db],
        help="open the annotation app (the default)",
        description="Open the annotation app.",
    )
    a.add_argument("--annotator", metavar="NAME", default=argparse.SUPPRESS)
    a.add_argument("--study", metavar="NAME", default=argparse.SUPPRESS)
    a.add_argument(
        "--fixed-annotator",
        action="store_true",
        help=f"the name cannot be changed in the app: --annotator NAME, or ${FIXED_ANNOTATOR_ENV} "
        f"(what annotate serve uses); ${FIXED_STUDY_ENV} or --study then limits it to one study",
    )
    a.set_defaults(func=cmd_app)

    s = subparsers.add_parser(
        "studies",
        parents=[parents.db, parents.json],
        help="list studies and their progress",
        description="List the studies with items, current votes and annotators.",
    )
    s.set_defaults(func=cmd_studies)


def cmd_app(args: argparse.Namespace) -> int:
    """Open the annotation app; also what ``annotate`` without a command does."""
    from annotate.app import make_app

    db = db_path(args)
    # The demo loads only on the first launch on the default database, never into a
    # database the user named (use ``annotate import --demo`` for that). With --annotator
    # and --study, a resuming annotator's first item is painted before the full store
    # is imported (annotate.services.quick_start).
    if getattr(args, "fixed_annotator", False):
        from annotate.errors import AnnotateError

        name = os.environ.get(FIXED_ANNOTATOR_ENV) or args.annotator
        if not name:
            raise AnnotateError(
                f"--fixed-annotator needs --annotator NAME or ${FIXED_ANNOTATOR_ENV}"
            )
        study = os.environ.get(FIXED_STUDY_ENV) or args.study
        app = make_app(
            db,
            annotator=name,
            study=study,
            seed_demo=db is None,
            fixed_annotator=True,
            only_study=study,
        )
    else:
        app = make_app(
            db, annotator=args.annotator, study=args.study, quick=True, seed_demo=db is None
        )
    app.run()
    return int(app.return_code or 0)


def cmd_studies(args: argparse.Namespace) -> int:
    """List the studies: read-only through sqlite3 when the file is up to date."""
    from annotate.store.quick import default_db_path, list_studies

    db = db_path(args)
    # a database URL goes to the full store (the quick path reads SQLite files only)
    rows = None if isinstance(db, str) else list_studies(db or default_db_path())
    if rows is None:  # new, older, newer or damaged: the full store creates, migrates or refuses
        from annotate.services.catalog import studies
        from annotate.services.db import open_store

        rows = studies(open_store(db))
    if args.json:
        print_json([r.as_dict() for r in rows])
        return 0
    if not rows:
        say("no studies; add one with: annotate import STUDY_FOLDER (or annotate import --demo)")
        return 0
    say(
        table(
            [(r.name, r.kind, r.items, r.votes, r.annotators, r.title) for r in rows],
            ["name", "kind", "items", "votes", "annotators", "title"],
        )
    )
    return 0
