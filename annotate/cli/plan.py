"""``annotate plan``: design a study before it runs.

``plan pairs`` chooses the question pairs of a difficulty study from a response matrix
(:func:`annotate.services.plan.plan_pairs`). The services and the statistics stack are
imported inside the handler, so ``--help`` answers at once.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from annotate.cli.options import Parents, db_path, intermixed
from annotate.cli.output import print_json, say, table
from annotate.errors import AnnotateError
from annotate.names import one_line

STRATEGIES = ("stratified", "disagreement", "uniform")
""":data:`ranking.design.STRATEGIES` (a test checks it), written out so that ``--help``
need not import numpy."""

DIFFICULTIES = ("eip", "accuracy")
""":data:`annotate.services.plan.DIFFICULTIES`."""

MAX_PRINTED_ROWS = 30


def add_parser(subparsers: Any, parents: Parents) -> None:
    """Add ``plan`` (with ``plan pairs``) to ``subparsers``."""
    p = subparsers.add_parser(
        "plan",
        parents=[parents.db],
        help="design a study: choose the question pairs from a response matrix",
        description="Design a study before it runs. plan pairs: draw same-subject question "
        "pairs for a difficulty study from a response matrix, stratified by difficulty gap.",
    )
    sub = p.add_subparsers(dest="plan_command", metavar="WHAT", required=True)
    a = sub.add_parser(
        "pairs",
        parents=[parents.db, parents.json],
        help="choose same-subject question pairs for a difficulty study",
        description="Draw same-subject question pairs from a response matrix (the inputs of "
        "annotate rank, or --study NAME): the difficulty gaps of all same-subject pairs are "
        "cut at their tertiles into large (easy distinctions), medium and small (hard "
        "distinctions) and the three are asked equally often; with --strategy disagreement "
        "pairs that EIP, IRT (1PL) and Simple Rank order differently are drawn more often. "
        "Each question is in at most --max-per-question pairs, shown first and second about "
        "equally often. Deterministic from --seed. --out writes pairs.csv (pair_id,first,second).",
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
    a.add_argument("--n", type=int, default=70, help="pairs wanted (default 70, as the EIP paper)")
    a.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="stratified",
        help="stratified (default), disagreement (weight pairs the estimators order "
        "differently) or uniform (no strata)",
    )
    a.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    a.add_argument(
        "--max-per-question",
        metavar="K",
        type=int,
        default=2,
        help="the most pairs any question is in (default 2)",
    )
    a.add_argument(
        "--difficulty",
        choices=DIFFICULTIES,
        default="eip",
        help="the gap is measured on EIP difficulty (default) or accuracy (1 - mean score)",
    )
    a.add_argument(
        "--questions",
        metavar="FILE",
        default=None,
        help="CSV or JSONL question_id,subject (or id,dataset; default: questions.jsonl or "
        "questions.csv beside MATRIX, or the study's subjects)",
    )
    a.add_argument("--out", metavar="FILE", default=None, help="write the pairs here (pairs.csv)")
    a.set_defaults(func=cmd_plan_pairs)


def cmd_plan_pairs(args: argparse.Namespace) -> int:
    """Choose the pairs, write them with --out, print the summary."""
    from annotate.services.analyze import find_metadata, study_datasets
    from annotate.services.estimators import read_matrix, study_matrix
    from annotate.services.plan import plan_pairs, write_pairs

    if args.study and args.matrix:
        raise AnnotateError("give a MATRIX file or --study NAME, not both")
    questions = Path(args.questions) if args.questions else None
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        raise AnnotateError(f"{out} exists already; give another --out", title="Cannot write")
    if args.study:
        from annotate.services.db import open_store

        engine = open_store(db_path(args))
        matrix = study_matrix(engine, args.study)
        subjects = find_metadata(None, None, questions).datasets
        if not subjects:
            subjects = study_datasets(engine, args.study)
    elif args.matrix:
        path = Path(args.matrix)
        matrix = read_matrix(path)
        subjects = find_metadata(path, None, questions).datasets
    else:
        raise AnnotateError("give a response MATRIX file or --study NAME")
    plan = plan_pairs(
        matrix,
        subjects or None,
        n=args.n,
        strategy=args.strategy,
        seed=args.seed,
        max_per_question=args.max_per_question,
        difficulty=args.difficulty,
    )
    written = write_pairs(plan, out) if out is not None else None
    if args.json:
        from annotate.services.json_ready import check_json

        doc = plan.as_dict()
        doc["file"] = None if written is None else str(written)
        print_json(check_json(doc))
        return 0
    say(
        f"{len(plan.pairs)} pair(s) of {plan.questions} questions ({plan.strategy}, seed "
        f"{plan.seed}, at most {plan.max_per_question} per question)"
    )
    say(
        "gap strata: "
        + ", ".join(f"{k} {v} (of {plan.candidates[k]} candidates)" for k, v in plan.strata.items())
    )
    say("subjects: " + ", ".join(f"{one_line(k)} {v}" for k, v in plan.subjects.items()))
    for note in plan.notes:
        say(f"  {one_line(note)}")
    say()
    rows = [
        (
            one_line(p["pair_id"]),
            one_line(p["first"]),
            one_line(p["second"]),
            one_line(p["subject"]),
            f"{p['gap']:.3g}",
            p["stratum"],
            "-" if p["disagreement"] is None else f"{p['disagreement']:.2f}",
        )
        for p in plan.pairs[:MAX_PRINTED_ROWS]
    ]
    say(table(rows, ["pair", "first", "second", "subject", "gap", "stratum", "disagreement"]))
    if len(plan.pairs) > MAX_PRINTED_ROWS:
        more = len(plan.pairs) - MAX_PRINTED_ROWS
        say(f"... {more} more pair(s); all of them with --out or --json")
    if written is not None:
        say(f"wrote {one_line(written)}")
    return 0
