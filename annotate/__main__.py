"""Command line: parse, call a service, print. Thin by design."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from annotate import __version__
from annotate.errors import AnnotateError

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, Handler] = {}


def command(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        COMMANDS[name] = fn
        return fn

    return register


def _db(args: argparse.Namespace) -> Path | None:
    return Path(args.db).expanduser() if getattr(args, "db", None) else None


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    cells = [[str(h) for h in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


@command("app")
def cmd_app(args: argparse.Namespace) -> int:
    from annotate.app import make_app
    from annotate.services.db import open_store

    engine = open_store(_db(args), seed_demo=True)
    app = make_app(engine=engine, annotator=args.annotator, study=args.study)
    app.run()
    return int(app.return_code or 0)


@command("studies")
def cmd_studies(args: argparse.Namespace) -> int:
    from annotate.services.catalog import studies
    from annotate.services.db import open_store

    rows = studies(open_store(_db(args), seed_demo=True))
    if args.json:
        _print_json([r.as_dict() for r in rows])
        return 0
    if not rows:
        print("no studies; add one with: annotate import STUDY_FOLDER")
        return 0
    print(
        _table(
            [(r.name, r.kind, r.items, r.votes, r.annotators, r.title) for r in rows],
            ["name", "kind", "items", "votes", "annotators", "title"],
        )
    )
    return 0


@command("import")
def cmd_import(args: argparse.Namespace) -> int:
    from annotate.services.db import open_store
    from annotate.services.importing import import_paths

    engine = open_store(_db(args))
    report = import_paths(
        engine,
        [Path(p) for p in args.paths],
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
        print(f"created study {name}")
    for name in report.studies_unchanged:
        print(f"study {name} already present (same items); left as it is")
    print(
        f"added {report.items_added} items, {report.votes_added} votes "
        f"({report.votes_skipped} already present), {report.scores_added} matrix scores"
    )
    for note in report.notes:
        print(note)
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
    print(f"wrote {res.votes} current votes ({res.log_rows} rows of history) to {res.folder}/")
    for f in res.files:
        print(f"  {f}")
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
    i.add_argument("paths", nargs="+", metavar="PATH")
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
        return COMMANDS[cmd](args)
    except AnnotateError as err:
        print(f"annotate {cmd}: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
