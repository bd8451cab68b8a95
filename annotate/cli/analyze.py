"""``annotate analyze``: the EIP paper's robustness analyses on a response matrix.

The handler calls :func:`annotate.services.analyze.analyze`; the services and the
statistics stack are imported inside it, so ``--help`` answers at once.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from annotate.cli.options import Parents, db_path, intermixed
from annotate.cli.output import print_json, progress_bar, say, table
from annotate.errors import AnnotateError
from annotate.names import one_line

ANALYSES = (
    "model-removal",
    "leave-one-out",
    "datasets",
    "alpha",
    "vs-accuracy",
    "scale",
    "tiers",
    "group-agreement",
    "pools",
    "weak-inflation",
    "wrong-side",
    "families",
    "super-model",
    "anchors",
    "bootstrap",
)
""":data:`annotate.services.analyze.ANALYSES` (a test checks it), written out here so that
``--help`` need not import the statistics stack."""

MAX_PRINTED_ROWS = 30


def add_parser(subparsers: Any, parents: Parents) -> None:
    """Add ``analyze`` to ``subparsers``."""
    a = subparsers.add_parser(
        "analyze",
        parents=[parents.db, parents.json],
        help="the EIP paper's robustness analyses of a response matrix",
        description="Run the EIP paper's robustness analyses on a response matrix (the "
        "inputs of annotate rank): removing models (Table 5, Table 9), datasets (Table 10), "
        "the damping factor (Tables 14, 8), EIP vs accuracy (Table 11), difficulty per model "
        "pool (Fig. 8), weak-model inflation, wrong-side contributions, family-dominated "
        "questions, a super model (Tables 15-18), anchor sampling (Table 20) and bootstrap "
        "intervals. Writes analysis.md, CSVs and PNGs to exports/analyze-<name>/.",
    )
    a.add_argument(
        "matrix",
        metavar="MATRIX",
        nargs="?",
        help="response matrix CSV, study folder or lm-evaluation-harness output (omit with "
        "--study)",
    )
    a.add_argument("--study", metavar="NAME", default=None, help="a stored study's matrix")
    intermixed(a)
    a.add_argument(
        "--only",
        metavar="NAME",
        nargs="+",
        choices=ANALYSES,
        default=None,
        help=f"run only these analyses ({', '.join(ANALYSES)})",
    )
    a.add_argument(
        "--models",
        metavar="FILE",
        default=None,
        help="CSV model,family,params_b,open_weight,pool (default: models.csv beside MATRIX)",
    )
    a.add_argument(
        "--questions",
        metavar="FILE",
        default=None,
        help="CSV or JSONL question_id,dataset (or id,subject; default: questions.jsonl or "
        "questions.csv beside MATRIX)",
    )
    a.add_argument("--out", metavar="DIR", default=None, help="write the files here")
    a.add_argument("--alpha", type=float, default=0.85, help="EIP damping (default 0.85)")
    a.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    a.add_argument(
        "--boot", metavar="N", type=int, default=200, help="bootstrap resamples (default 200)"
    )
    a.add_argument(
        "--question",
        metavar="ID",
        action="append",
        default=[],
        help="wrong-side: why is this question hard, its failing models and their share of "
        "its difficulty (repeatable; default: the hardest question)",
    )
    a.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    a.add_argument(
        "--export-anchors",
        metavar="FILE",
        default=None,
        help="write one decile-stratified anchor sample (question ids; and "
        "<FILE stem>.samples.json for lm-evaluation-harness --samples when ids are task/doc_id)",
    )
    a.add_argument(
        "--anchor-rate",
        metavar="R",
        type=float,
        default=0.01,
        help="share of questions in the exported anchor sample (default 0.01)",
    )
    a.set_defaults(func=cmd_analyze)


def cmd_analyze(args: argparse.Namespace) -> int:
    """Run the analyses, write their files and print their tables."""
    from annotate.services.analyze import (
        analyze,
        cell,
        find_metadata,
        write_analysis,
        write_anchors,
    )
    from annotate.services.estimators import read_matrix, study_matrix
    from annotate.services.paths import inside, output_folder

    if args.study and args.matrix:
        raise AnnotateError("give a MATRIX file or --study NAME, not both")
    if args.boot < 0:
        raise AnnotateError(f"--boot must be 0 or more, got {args.boot}")
    models = Path(args.models) if args.models else None
    questions = Path(args.questions) if args.questions else None
    if args.study:
        from annotate.services.db import open_store

        engine = open_store(db_path(args))
        matrix = study_matrix(engine, args.study)
        meta = find_metadata(None, models, questions)
        if not meta.datasets:
            from dataclasses import replace

            from annotate.services.analyze import study_datasets

            subjects = study_datasets(engine, args.study)
            if subjects and all(q in subjects for q in matrix.questions):
                meta = replace(
                    meta, datasets=subjects, sources=(*meta.sources, "the study's subjects")
                )
        source, name = f"study {args.study}", args.study
    elif args.matrix:
        path = Path(args.matrix)
        matrix = read_matrix(path)
        meta = find_metadata(path, models, questions)
        source = str(path)
        full = path.resolve()
        name = full.parent.name if full.is_file() and full.stem == "responses" else full.stem
    else:
        raise AnnotateError("give a response MATRIX file or --study NAME")
    with progress_bar("analyzing") as progress:
        result = analyze(
            matrix,
            source=source,
            metadata=meta,
            only=args.only,
            alpha=args.alpha,
            seed=args.seed,
            n_boot=args.boot,
            anchor_rate=args.anchor_rate if args.export_anchors else None,
            questions=args.question,
            progress=progress,
        )
    if args.out:
        folder = output_folder(Path(args.out))
    else:
        folder = inside(output_folder(Path("exports")), f"analyze-{name or 'matrix'}")
    files = write_analysis(result, folder, plots=not args.no_plots)
    if args.export_anchors:
        files += write_anchors(result, Path(args.export_anchors))
    if args.json:
        from annotate.services.json_ready import check_json

        doc = result.as_dict()
        doc["files"] = [str(f) for f in files]
        print_json(check_json(doc))
        return 0
    say(f"{one_line(source)}: {len(matrix.questions)} questions x {len(matrix.models)} models")
    for s in result.sections:
        say()
        say(f"{one_line(s.title)} ({s.paper}, {s.seconds:.2f} s)")
        if s.skipped:
            say(f"  not run: {one_line(s.skipped)}")
            continue
        rows = [[cell(v) for v in r] for r in s.rows]
        say(table(rows[:MAX_PRINTED_ROWS], s.columns))
        if len(rows) > MAX_PRINTED_ROWS:
            say(f"  ... {len(rows) - MAX_PRINTED_ROWS} more rows in {s.key}.csv")
        for note in [*s.notes, s.undefined_note()]:
            if note:
                say(f"  {one_line(note)}")
    say()
    say(f"wrote {len(files)} files to {one_line(folder)}/")
    return 0
