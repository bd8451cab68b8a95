"""``annotate plan``: design a study before it runs.

``plan pairs`` chooses the question pairs of a difficulty study from a response matrix
(:func:`annotate.services.plan.plan_pairs`); ``plan power`` simulates a study before it
runs (:func:`annotate.services.plan.plan_power`, ``plan_arena_power``). The services and
the statistics stack are imported inside the handlers, so ``--help`` answers at once.
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
        help="design a study: choose the question pairs, plan the sample size",
        description="Design a study before it runs. plan pairs: draw same-subject question "
        "pairs for a difficulty study from a response matrix, stratified by difficulty gap "
        "(on an arena: the order in which to show its battles). plan power: simulate the "
        "study to choose how many pairs, annotators or votes it needs.",
    )
    sub = p.add_subparsers(dest="plan_command", metavar="WHAT", required=True)
    a = sub.add_parser(
        "pairs",
        parents=[parents.db, parents.json],
        help="choose the question pairs of a difficulty study (or order an arena's battles)",
        description="Draw same-subject question pairs from a response matrix (the inputs of "
        "annotate rank, or --study NAME): the difficulty gaps of all same-subject pairs are "
        "cut at their tertiles into large (easy distinctions), medium and small (hard "
        "distinctions) and the three are asked equally often; with --strategy disagreement "
        "pairs that EIP, IRT (1PL) and Simple Rank order differently are drawn more often. "
        "Each question is in at most --max-per-question pairs, shown first and second about "
        "equally often. Deterministic from --seed. --out writes pairs.csv (pair_id,first,second). "
        "On an arena (--study NAME of an arena study, or a battles.csv): every battle in the "
        "order to show it (every model pair once first, balanced across models, then pairs "
        "by expected information under the m-ELO ratings of the votes so far); --out writes "
        "battles.csv in that order, shown so with the study setting file_order = true.",
    )
    a.add_argument(
        "matrix",
        metavar="MATRIX",
        nargs="?",
        help="response matrix CSV, study folder or lm-evaluation-harness output, or an "
        "arena's battles.csv (omit with --study)",
    )
    a.add_argument(
        "--study",
        metavar="NAME",
        default=None,
        help="a stored study's matrix (an arena study: its battles)",
    )
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
    a.add_argument(
        "--out",
        metavar="FILE",
        default=None,
        help="write the pairs here (pairs.csv; an arena: battles.csv)",
    )
    a.set_defaults(func=cmd_plan_pairs)
    w = sub.add_parser(
        "power",
        parents=[parents.db, parents.json],
        help="simulate a study before it runs: interval widths and power per study size",
        description="Simulate difficulty studies of each --pairs x --annotators size and "
        "analyse each as annotate report does (two-way bootstrap intervals of the consensus "
        "alignment and kappa; McNemar's exact test between two estimators on the consensus "
        "pairs): the expected interval widths and the power to tell the estimators apart. "
        "With --arena: the votes per model pair (round robin) for a target rating interval "
        "width, from m-ELO (Bradley-Terry) fits of simulated arenas.",
    )
    intermixed(w)
    w.add_argument(
        "--pairs",
        metavar="N",
        type=int,
        nargs="+",
        default=[30, 70, 120],
        help="numbers of pairs to try (default 30 70 120)",
    )
    w.add_argument(
        "--annotators",
        metavar="N",
        type=int,
        nargs="+",
        default=[5, 10, 20],
        help="numbers of annotators to try, each judging every pair (default 5 10 20)",
    )
    w.add_argument(
        "--reliability-sd",
        metavar="S",
        type=float,
        default=0.5,
        help="sd of the annotators' accuracy on the logit scale (default 0.5)",
    )
    w.add_argument(
        "--skip-rate",
        metavar="R",
        type=float,
        default=0.1,
        help="chance that a vote is a skip (default 0.1)",
    )
    w.add_argument(
        "--annotator-accuracy",
        metavar="A",
        type=float,
        default=0.75,
        help="the median annotator's chance of naming the harder question (default 0.75)",
    )
    w.add_argument(
        "--estimator-accuracy",
        metavar="A",
        type=float,
        nargs=2,
        default=[0.8, 0.7],
        help="the two estimators' chances of ordering a pair rightly (default 0.8 0.7)",
    )
    w.add_argument(
        "--alpha", type=float, default=0.05, help="level of the paired test (default 0.05)"
    )
    w.add_argument(
        "--trials",
        metavar="T",
        type=int,
        default=None,
        help="simulated studies per row (default 100; with --arena 20 per vote count)",
    )
    w.add_argument(
        "--boot",
        metavar="N",
        type=int,
        default=200,
        help="bootstrap replicates per simulated study (default 200)",
    )
    w.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    w.add_argument("--plot", metavar="FILE", default=None, help="write a PNG plot here")
    w.add_argument("--arena", action="store_true", help="plan an arena study instead")
    w.add_argument("--models", metavar="M", type=int, default=None, help="--arena: models")
    w.add_argument(
        "--target-width",
        metavar="W",
        type=float,
        default=None,
        help="--arena: mean 95%% rating interval width wanted, in Elo points",
    )
    w.add_argument(
        "--rating-sd",
        metavar="S",
        type=float,
        default=100.0,
        help="--arena: sd of the models' true ratings in Elo points (default 100)",
    )
    w.set_defaults(func=cmd_plan_power)


def cmd_plan_pairs(args: argparse.Namespace) -> int:
    """Choose the pairs, write them with --out, print the summary."""
    from annotate.services.analyze import find_metadata, study_datasets
    from annotate.services.estimators import read_matrix, study_matrix
    from annotate.services.plan import is_battle_file, plan_pairs, write_pairs

    if args.study and args.matrix:
        raise AnnotateError("give a MATRIX file or --study NAME, not both")
    questions = Path(args.questions) if args.questions else None
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        raise AnnotateError(f"{out} exists already; give another --out", title="Cannot write")
    if args.study:
        from annotate.services.db import open_store
        from annotate.services.plan import study_kind

        engine = open_store(db_path(args))
        if study_kind(engine, args.study) == "arena":
            return _plan_battles(args, out, engine=engine)
        matrix = study_matrix(engine, args.study)
        subjects = find_metadata(None, None, questions).datasets
        if not subjects:
            subjects = study_datasets(engine, args.study)
    elif args.matrix and is_battle_file(Path(args.matrix)):
        return _plan_battles(args, out, path=Path(args.matrix))
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


def _plan_battles(
    args: argparse.Namespace, out: Path | None, *, engine: Any = None, path: Path | None = None
) -> int:
    """``plan pairs`` on an arena (a stored arena study or a battles.csv): the order in
    which to show its battles."""
    from annotate.services.plan import (
        plan_battle_order,
        read_battles,
        study_battles,
        write_battles,
    )

    if engine is not None:
        battles, ratings, note = study_battles(engine, args.study)
    else:
        assert path is not None
        battles, ratings, note = read_battles(path), None, "equal (a battles file): round robin"
    plan = plan_battle_order(battles, ratings=ratings, ratings_note=note, seed=args.seed)
    written = write_battles(plan, out) if out is not None else None
    if args.json:
        from annotate.services.json_ready import check_json

        doc = plan.as_dict()
        doc["file"] = None if written is None else str(written)
        print_json(check_json(doc))
        return 0
    say(
        f"{len(plan.battles)} battle(s) of {plan.models} models over {plan.pairs} model pairs, "
        f"in the order to show them (seed {plan.seed}): every pair once first, balanced "
        "across the models, then pairs in proportion to their expected information"
    )
    say(f"  information weights: {one_line(plan.ratings)}")
    for note_line in plan.notes:
        say(f"  {one_line(note_line)}")
    say()
    rows = [
        (
            b["position"],
            one_line(b["battle_id"]),
            one_line(b["model_a"]),
            one_line(b["model_b"]),
            b["round"],
            f"{b['weight']:.2f}",
        )
        for b in plan.battles[:MAX_PRINTED_ROWS]
    ]
    say(table(rows, ["#", "battle", "model_a", "model_b", "round", "information"]))
    if len(plan.battles) > MAX_PRINTED_ROWS:
        more = len(plan.battles) - MAX_PRINTED_ROWS
        say(f"... {more} more battle(s); all of them with --out or --json")
    if written is not None:
        say(
            f"wrote {one_line(written)}: put it in the study folder as battles.csv and set "
            "file_order = true under [settings] in study.toml"
        )
    return 0


def cmd_plan_power(args: argparse.Namespace) -> int:
    """Simulate the study sizes (or the arena), print the table, write --plot."""
    from annotate.services.json_ready import check_json
    from annotate.services.plan import plan_arena_power, plan_power

    plot = Path(args.plot) if args.plot else None
    if plot is not None and plot.exists():
        raise AnnotateError(f"{plot} exists already; give another --plot", title="Cannot write")
    if args.arena:
        if args.models is None or args.target_width is None:
            raise AnnotateError("--arena needs --models M and --target-width W")
        ap = plan_arena_power(
            args.models,
            args.target_width,
            rating_sd=args.rating_sd,
            trials=20 if args.trials is None else args.trials,
            seed=args.seed,
        )
        written = None
        if plot is not None:
            from annotate.services.plan_plots import write_arena_plot

            written = write_arena_plot(ap, plot)
        if args.json:
            doc = ap.as_dict()
            doc["plot"] = None if written is None else str(written)
            print_json(check_json(doc))
            return 0
        n_pairs = ap.models * (ap.models - 1) // 2
        width = "-" if ap.width is None else f"{ap.width:.1f}"
        say(
            f"{ap.votes_per_pair} votes per model pair ({ap.total_votes} votes over {n_pairs} "
            f"pairs of {ap.models} models): mean 95% rating interval {width} Elo points "
            f"(target {ap.target_width:g}; rating sd {ap.rating_sd:g}, {ap.trials} simulated "
            f"arenas per count, seed {ap.seed})"
        )
        if not ap.reached:
            say(
                f"  the target was not reached within {ap.max_votes_per_pair} votes per pair "
                f"(the most simulated); the closed form at equal strengths gives "
                f"{ap.closed_form}"
            )
        if ap.failed:
            say(f"  {ap.failed} fit(s) failed (a model that never won or never lost), left out")
        rows = [
            (
                c["votes_per_pair"],
                "-" if c["width"] is None else f"{c['width']:.1f}",
                "-" if c["sd"] is None else f"{c['sd']:.1f}",
            )
            for c in ap.curve
        ]
        say(table(rows, ["votes per pair", "mean width", "sd"]))
        if written is not None:
            say(f"wrote {one_line(written)}")
        return 0
    pp = plan_power(
        args.pairs,
        args.annotators,
        reliability_sd=args.reliability_sd,
        skip_rate=args.skip_rate,
        annotator_accuracy=args.annotator_accuracy,
        estimator_accuracy=(args.estimator_accuracy[0], args.estimator_accuracy[1]),
        trials=100 if args.trials is None else args.trials,
        n_boot=args.boot,
        alpha=args.alpha,
        seed=args.seed,
    )
    written = None
    if plot is not None:
        from annotate.services.plan_plots import write_power_plot

        written = write_power_plot(pp, plot)
    if args.json:
        doc = pp.as_dict()
        doc["plot"] = None if written is None else str(written)
        print_json(check_json(doc))
        return 0

    def f(x: float | None, digits: int = 3) -> str:
        return "-" if x is None else f"{x:.{digits}f}"

    st = pp.settings
    say(
        f"{st['trials']} simulated studies per row (annotator accuracy "
        f"{st['annotator_accuracy']:g}, reliability sd {st['reliability_sd']:g}, "
        f"skip rate {st['skip_rate']:g}, estimators "
        f"{st['estimator_accuracy'][0]:g} vs {st['estimator_accuracy'][1]:g}, seed {st['seed']})"
    )
    say(f"  widths: {st['interval']}; power: {st['test']} at {st['alpha']:g}")
    say(
        table(
            [
                (
                    r["pairs"],
                    r["annotators"],
                    f(r["ci_width_consensus"]),
                    f(r["ci_width_kappa"]),
                    f"{r['power']:.2f} ± {r['power_se']:.2f}",
                    f(r["consensus"]),
                    f(r["kappa"]),
                )
                for r in pp.rows
            ],
            [
                "pairs",
                "annotators",
                "ci width consensus",
                "ci width kappa",
                "power",
                "consensus",
                "kappa",
            ],
        )
    )
    if written is not None:
        say(f"wrote {one_line(written)}")
    return 0
