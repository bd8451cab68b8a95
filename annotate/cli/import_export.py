"""``annotate import`` (studies, votes, third-party files) and ``annotate export``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from annotate.cli.options import Parents, db_path
from annotate.cli.output import print_json, progress_bar, say
from annotate.errors import AnnotateError
from annotate.names import one_line

IMPORT_FORMATS = ("auto", "study", "votes", "chatbot-arena", "llmfao", "lm-eval")
"""What ``annotate import --format`` accepts (``auto``: detected from each path)."""

EXPORT_FORMATS = ("csv", "jsonl", "parquet")
"""What ``annotate export --format`` writes."""


def add_parser(subparsers: Any, parents: Parents) -> None:
    """Add ``import`` and ``export`` to ``subparsers``."""
    i = subparsers.add_parser(
        "import",
        parents=[parents.db, parents.json],
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
        choices=IMPORT_FORMATS,
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
    i.set_defaults(func=cmd_import)

    e = subparsers.add_parser(
        "export",
        parents=[parents.db, parents.json],
        help="export votes, history, items and studies",
        description="Write votes.<ext> (current votes), vote_log.<ext> (all rows), items.<ext> "
        "and studies/<name>/ under DIR (default: ./exports).",
    )
    e.add_argument("--format", choices=EXPORT_FORMATS, default="csv")
    e.add_argument("--study", metavar="NAME", default=None, help="only this study")
    e.add_argument("--out", metavar="DIR", default=None, help="output folder (default: exports/)")
    e.set_defaults(func=cmd_export)


def cmd_import(args: argparse.Namespace) -> int:
    """Import every PATH (and the demo with ``--demo``) in one transaction."""
    from annotate.services.db import demo_study_dirs, open_store
    from annotate.services.importing import import_paths

    paths = [Path(p) for p in args.paths]
    if args.demo:
        paths += demo_study_dirs()
    if not paths:
        raise AnnotateError("nothing to import: give one or more PATHs, or --demo")
    engine = open_store(db_path(args))
    with progress_bar("importing") as progress:
        report = import_paths(
            engine,
            paths,
            fmt=args.format,
            study=args.study,
            model=args.model,
            metric=args.metric,
            filter_name=args.filter,
            progress=progress,
        )
    if args.json:
        print_json(report.as_dict())
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


def cmd_export(args: argparse.Namespace) -> int:
    """Write the votes, their history, the items and the study folders."""
    from annotate.services.db import open_store
    from annotate.services.exporting import export_votes

    res = export_votes(
        open_store(db_path(args)),
        fmt=args.format,
        out=Path(args.out) if args.out else None,
        study=args.study,
    )
    if args.json:
        print_json(
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
