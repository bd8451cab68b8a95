"""``annotate rank``, ``rate``, ``simulate`` and ``monitor``: the analyses of votes and scores.

The statistics stack (numpy, scipy, ``ranking``) is imported inside each command, so
``--help`` and the other commands never pay for it.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from annotate.cli import arena_paper, reasoning
from annotate.cli.options import Parents, db_path, intermixed
from annotate.cli.output import print_json, progress_bar, say, table
from annotate.errors import AnnotateError
from annotate.names import one_line

RANK_METHODS = (
    "eip",
    "simple",
    "accuracy",
    "weighted-accuracy",
    "irt-1pl",
    "irt-2pl",
    "irt-1pl-mml",
    "irt-2pl-mml",
    "mirt",
)
"""``annotate rank METHOD``: :data:`annotate.services.estimators.METHODS` (a test checks it),
written out here so that ``--help`` need not import the statistics stack."""

RATE_METHODS = ("elo", "m-elo", "am-elo")
"""``annotate rate --method``: :data:`annotate.services.arena_analysis.METHODS` (a test
checks it), written out here for the same reason."""


def add_parser(subparsers: Any, parents: Parents) -> None:
    """Add ``rank``, ``rate``, ``monitor`` and ``simulate`` (and, from
    :mod:`annotate.cli.reasoning`, ``compare``) to ``subparsers``."""
    common, jsonp = parents.db, parents.json
    r = subparsers.add_parser(
        "rank",
        parents=[common, jsonp],
        help="rank models and questions from a response matrix",
        description="Estimate question difficulty and model competency from a response matrix "
        "CSV (long question_id,model,score or wide question_id,<model>,...), a study folder "
        "with responses.csv, lm-evaluation-harness --log_samples output, or the matrix of a "
        "study in the database (--study NAME).",
    )
    r.add_argument("method", choices=(*RANK_METHODS, *reasoning.RANK_METHODS))
    r.add_argument(
        "matrix",
        metavar="MATRIX",
        nargs="?",
        help="response matrix CSV, study folder or lm-evaluation-harness output (omit with "
        "--study)",
    )
    r.add_argument(
        "--study", metavar="NAME", default=None, help="rank the response matrix of a stored study"
    )
    intermixed(r)  # MATRIX is optional (--study): options may still come before it
    r.add_argument("--alpha", type=float, default=0.85, help="EIP damping (default 0.85)")
    r.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="IRT: a partial-credit score counts as correct from this value (0.5)",
    )
    r.add_argument(
        "--questions",
        metavar="FILE",
        default=None,
        help="weighted-accuracy: CSV or JSONL question_id,dataset (or id,subject)",
    )
    r.add_argument("--top", type=int, default=20, help="rows of each table to print")
    r.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="also write <method>_models.csv and <method>_questions.csv here "
        "(default with --out and no DIR: exports/)",
        nargs="?",
        const="exports",
    )
    reasoning.add_rank_options(r)
    r.set_defaults(func=cmd_rank)

    t = subparsers.add_parser(
        "rate",
        parents=[common, jsonp],
        help="rate models and annotators from battle votes",
        description="Rate models (Elo, m-ELO, am-ELO) from a Chatbot Arena or LLMFAO vote file, "
        "or from a study's votes with --study. am-ELO runs the Stable Arena loop: annotators "
        "are pending, reliable or flagged.",
    )
    t.add_argument("file", metavar="FILE", nargs="?", help="battle file (omit with --study)")
    t.add_argument("--study", metavar="NAME", default=None, help="rate a study in the database")
    t.add_argument("--method", choices=RATE_METHODS, default="am-elo")
    t.add_argument(
        "--exclude-flagged",
        action="store_true",
        help="drop flagged annotators from the ratings (default: warn only)",
    )
    t.add_argument(
        "--delta",
        type=int,
        default=None,
        help="fixed pending threshold in records (default: dynamic)",
    )
    t.add_argument(
        "--epsilon",
        type=float,
        default=None,
        help="fixed ability threshold (default: dynamic; the paper uses 0)",
    )
    t.add_argument(
        "--include-self-identifying",
        action="store_true",
        help="with --study: keep battles in which a response names a model of the study or "
        "its maker (default: left out, as the Chatbot Arena does)",
    )
    t.add_argument(
        "--identity-phrase",
        metavar="TEXT",
        action="append",
        default=[],
        help="with --study: one more phrase that marks a response as self-identifying "
        "(repeatable; added to the defaults and the study's identity_phrases)",
    )
    t.add_argument(
        "--both-bad",
        choices=["tie", "drop"],
        default="tie",
        help="how 'both bad' votes count: as ties (default, like LMArena) or left out of the "
        "fit (they still count in each annotator's tie and both-bad rates)",
    )
    t.add_argument(
        "--boot",
        type=int,
        default=200,
        metavar="N",
        help="am-elo: bootstrap resamples of the annotators for the rating intervals (default "
        "200; each costs one am-ELO fit, so about N times the time of one fit: seconds for a "
        "study, a minute or more for tens of thousands of votes); 0 gives Wald intervals "
        "widened for the rating-scale bias of annotators with few votes (bias-aware Wald). "
        "elo: bootstrap rounds",
    )
    t.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap (default 0: reproducible)"
    )
    arena_paper.add_rate_options(t)  # --stats, --heldout, ... (annotate/cli/arena_paper.py)
    t.set_defaults(func=cmd_rate)

    mon = subparsers.add_parser(
        "monitor",
        parents=[common],
        help="live dashboard of annotator reliability",
        description="A live dashboard of a study: per annotator the votes, status (pending, "
        "reliable, flagged with the reason), ability with its interval and the reliability "
        "signals; the model leaderboard (or, for a difficulty study, the human difficulty "
        "scale). Refreshes as votes arrive from other processes on the same database.",
    )
    mon.add_argument(
        "--study",
        metavar="NAME",
        default=None,
        help="study to watch (default: pick one in the app)",
    )
    mon.set_defaults(func=cmd_monitor)

    m = subparsers.add_parser(
        "simulate",
        parents=[common, jsonp],
        help="the am-ELO paper's perturbation simulation",
        description="Reproduce sec. 5.5 of the am-ELO paper on simulated arena data: Random, "
        "Equal, Flip and Mixed perturbations of a share of the annotators (and the against, "
        "position and too_fast voters); ranking consistency of Elo, m-ELO and am-ELO with and "
        "without perturbation, F1 of the anomaly flags at epsilon = 0, 0.005 and the dynamic "
        "verdicts, and, where nobody is perturbed (F1 undefined), how many honest annotators "
        "were flagged. Trials whose fits fail are counted per cell and left out of its means. "
        "The paper's setting: --annotators 42 --models 20 --records 103 --elo-shuffles 1000 "
        "--counts 0,1,3,5,7,9,11,13,15,17,19.",
    )
    m.add_argument("what", choices=["arena"], help="what to simulate")
    m.add_argument(
        "--ratios",
        default="0,0.1,0.2,0.3,0.4,0.5",
        help="comma-separated shares of perturbed annotators in [0, 0.5]; fractions such as "
        "19/42 are accepted (default 0,0.1,0.2,0.3,0.4,0.5)",
    )
    m.add_argument(
        "--counts",
        default=None,
        metavar="N,...",
        help="comma-separated numbers of perturbed annotators (instead of --ratios), "
        "e.g. 0,1,3,...,19 of 42",
    )
    m.add_argument(
        "--strategies",
        default="random,equal,flip,mixed",
        help="comma-separated: random, equal, flip, mixed (the paper's), against, position, "
        "too_fast",
    )
    m.add_argument("--repeats", type=int, default=3, help="data sets per cell (default 3)")
    m.add_argument("--models", type=int, default=20)
    m.add_argument("--annotators", type=int, default=42)
    m.add_argument("--records", type=int, default=100, help="votes per annotator")
    m.add_argument(
        "--elo-shuffles",
        type=int,
        default=100,
        metavar="N",
        help="shuffled orders averaged for online Elo (default 100; the paper: 1000)",
    )
    m.add_argument(
        "--ability-sd",
        type=float,
        default=0.0,
        metavar="SD",
        help="heterogeneity of the honest annotators: standard deviation of their "
        "log-discrimination (default 0: all alike)",
    )
    m.add_argument(
        "--tie-rate",
        type=float,
        default=0.3,
        metavar="P",
        help="probability of a tie between equally rated models (default 0.3)",
    )
    m.add_argument("--seed", type=int, default=0)
    arena_paper.add_simulate_options(m)  # --out DIR: Fig. 6 abilities
    m.set_defaults(func=cmd_simulate)
    reasoning.add_parser(subparsers, parents)  # compare (annotate/cli/reasoning.py)


def cmd_monitor(args: argparse.Namespace) -> int:
    """Open the live dashboard of a study."""
    from annotate.monitor_app import make_monitor_app
    from annotate.services.db import open_store

    app = make_monitor_app(open_store(db_path(args)), args.study)
    app.run()
    return int(app.return_code or 0)


def cmd_simulate(args: argparse.Namespace) -> int:
    """The am-ELO paper's perturbation experiment, with a progress bar on a terminal."""
    from ranking.errors import RankingInputError
    from ranking.simulation import perturbation_study

    try:
        ratios = _simulate_ratios(args)
        strategies = tuple(x.strip().lower() for x in args.strategies.split(","))
        with progress_bar("simulating trials") as progress:
            study = perturbation_study(
                strategies=strategies,
                ratios=ratios,
                n_repeats=args.repeats,
                n_models=args.models,
                n_annotators=args.annotators,
                records_per_annotator=args.records,
                tie_rate=args.tie_rate,
                discrimination_sd=args.ability_sd,
                elo_rounds=args.elo_shuffles,
                progress=progress,
                rng=args.seed,
            )
    except (ValueError, ZeroDivisionError, RankingInputError) as err:
        raise AnnotateError(f"cannot simulate: {err}") from err
    abilities = arena_paper.simulate_out(args, ratios)
    if args.json:
        doc = _simulate_doc(study)
        if abilities is not None:
            doc["abilities"] = abilities
        json.dumps(doc, allow_nan=False)  # a NaN or infinity here is a bug: fail loudly
        print_json(doc)
        return 0
    say(
        f"{study.n_models} models, {study.n_annotators} annotators x "
        f"{study.records_per_annotator} votes, tie rate {study.tie_rate:g}, ability sd "
        f"{study.discrimination_sd:g}, {study.n_repeats} repeats per cell, "
        f"Elo averaged over {study.elo_rounds} shuffles"
    )
    say("consistency: share of model pairs ordered the same with and without perturbation")
    say(
        "F1 of the flags against the perturbed annotators (n/a where nobody is perturbed: "
        "see the false flags, honest annotators flagged)"
    )
    say()

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    def ff(n: int | None, rate: float | None) -> str:
        return "n/a" if n is None or rate is None else f"{n} ({rate:.1%})"

    say(
        table(
            [
                (
                    r.strategy,
                    f"{r.n_perturbed}/{study.n_annotators}",
                    f"{r.n_ok}/{r.n_repeats}",
                    f(r.consistency_elo),
                    f(r.consistency_m_elo),
                    f(r.consistency_am_elo),
                    f(r.consistency_stable_arena),
                    f(r.f1_eps0),
                    f(r.f1_eps0005),
                    f(r.f1_dynamic),
                    f(r.precision_dynamic),
                    f(r.recall_dynamic),
                    ff(r.false_flags_eps0, r.false_flag_rate_eps0),
                    ff(r.false_flags_dynamic, r.false_flag_rate_dynamic),
                )
                for r in study.summary
            ],
            [
                "perturbation",
                "perturbed",
                "runs ok",
                "Elo",
                "m-ELO",
                "am-ELO",
                "stable",
                "F1 eps=0",
                "F1 eps=.005",
                "F1 dyn",
                "P dyn",
                "R dyn",
                "false flags eps=0",
                "false flags dyn",
            ],
        )
    )
    failed = [r for r in study.summary if r.n_failed]
    if failed:
        say()
        say(
            f"{study.n_failed} of {study.iterations} trials failed "
            "(left out of their cells' means):"
        )
        for r in failed:
            say(
                f"  {r.strategy} {r.n_perturbed}/{study.n_annotators}: {r.n_failed} of "
                f"{r.n_repeats} failed; first: {one_line(r.first_failure or '')}"
            )
    for f in (abilities or {}).get("files", []):
        say(f"wrote {one_line(f)}")
    return 0


def _simulate_ratios(args: argparse.Namespace) -> tuple[float, ...]:
    """``--counts`` (perturbed annotators) or ``--ratios`` (shares, fractions allowed)."""
    from fractions import Fraction

    if args.counts is not None:
        if args.annotators < 1:
            raise ValueError(f"--annotators must be at least 1, got {args.annotators}")
        counts = [int(x) for x in args.counts.split(",")]
        for c in counts:
            if not 0 <= c <= args.annotators // 2:
                raise ValueError(
                    f"--counts: {c} is not between 0 and half of the {args.annotators} annotators"
                )
        return tuple(c / args.annotators for c in counts)
    return tuple(float(Fraction(x.strip())) for x in args.ratios.split(","))


def _simulate_doc(study: Any) -> dict[str, Any]:
    """The ``--json`` document: settings and one row per cell; null (never NaN) with a reason."""
    from dataclasses import asdict

    rows = []
    for r in study.summary:
        row = {k: _finite(v) for k, v in asdict(r).items()}
        reasons = []
        if r.n_ok == 0:
            reasons.append(
                f"every repeat of this cell failed (first: {r.first_failure}); its statistics "
                "are null"
            )
        elif r.n_perturbed == 0:
            reasons.append(
                "nobody is perturbed, so precision, recall and F1 are undefined (null); "
                "false_flags_* count the honest annotators flagged"
            )
        row["null_reasons"] = reasons
        rows.append(row)
    return {
        "n_models": study.n_models,
        "n_annotators": study.n_annotators,
        "records_per_annotator": study.records_per_annotator,
        "n_repeats": study.n_repeats,
        "elo_shuffles": study.elo_rounds,
        "tie_rate": study.tie_rate,
        "ability_sd": study.discrimination_sd,
        "trials": study.iterations,
        "trials_failed": study.n_failed,
        "summary": rows,
    }


def _finite(v: Any) -> Any:
    """A float that is not finite becomes None (JSON has no NaN)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def cmd_rank(args: argparse.Namespace) -> int:
    """Rank models and questions from a response matrix (a file or a stored study)."""
    reasoning.check_rank_options(args)
    if args.method in reasoning.RANK_METHODS:
        return reasoning.cmd_rank_reasonerrank(args)
    from annotate.services.estimators import estimate, read_matrix, study_matrix, write_ranking

    if args.study and args.matrix:
        raise AnnotateError("give a MATRIX file or --study NAME, not both")
    if args.study:
        from annotate.services.db import open_store

        matrix = study_matrix(open_store(db_path(args)), args.study)
    elif args.matrix:
        matrix = read_matrix(Path(args.matrix))
    else:
        raise AnnotateError("give a response MATRIX file or --study NAME")
    if args.top < 1:
        raise AnnotateError(f"--top must be at least 1, got {args.top}")
    datasets = None
    if getattr(args, "questions", None):
        if args.method != "weighted-accuracy":
            raise AnnotateError("--questions is used only by weighted-accuracy")
        from annotate.services.analyze import read_datasets

        datasets = read_datasets(Path(args.questions))
    r = estimate(matrix, args.method, alpha=args.alpha, threshold=args.threshold, datasets=datasets)
    files = write_ranking(r, Path(args.out)) if args.out else []
    rule, s100, d100 = _scales_100(r)
    if args.json:
        doc = r.as_dict()
        doc["files"] = [str(f) for f in files]
        doc["scale_100"] = rule
        for row, v in zip(doc["models"], s100, strict=True):
            row["score_100"] = v
        for row, v in zip(doc["questions"], d100, strict=True):
            row["difficulty_100"] = v
        from annotate.services.json_ready import check_json

        print_json(check_json(doc))
        return 0
    say(
        f"{r.method}: {len(r.models)} models, {len(r.questions)} questions"
        + (f", {r.iterations} iterations" if r.iterations is not None else "")
    )
    for note in r.notes:
        say(f"  {one_line(note)}")
    say()
    say(
        table(
            [
                (i + 1, m, f"{s:.6g}", "-" if v is None else f"{v:.1f}")
                for i, ((m, s), v) in enumerate(zip(r.models[: args.top], s100, strict=False))
            ],
            ["rank", "model", "score", "0-100"],
        )
    )
    _more_rows(len(r.models), args.top)
    say()
    say(
        table(
            [
                (i + 1, q, "-" if d is None else f"{d:.6g}", "-" if v is None else f"{v:.1f}")
                for i, ((q, d), v) in enumerate(zip(r.questions[: args.top], d100, strict=False))
            ],
            ["rank", "question (hardest first)", "difficulty", "0-100"],
        )
    )
    _more_rows(len(r.questions), args.top)
    say(f"0-100: {rule}")
    for f in files:
        say(f"wrote {one_line(f)}")
    return 0


def _scales_100(r: Any) -> tuple[str, list[float | None], list[float | None]]:
    """The 0-100 scales of the EIP paper's figures for a ranking: the rule, model scores
    and question difficulties (None where undefined)."""
    from ranking.eip_analyses import scale_to_100

    minmax = r.method.startswith("irt") or r.method == "mirt"
    rule = (
        "min-max scaled (lowest 0, highest 100), as the EIP paper scales IRT (App. H.4)"
        if minmax
        else "divided by the largest value (largest = 100), as the EIP paper's Fig. 3"
    )
    how = "minmax" if minmax else "max"

    def scaled(xs: list[float | None]) -> list[float | None]:
        v = scale_to_100([math.nan if x is None else x for x in xs], how)
        return [float(x) if math.isfinite(x) else None for x in v]

    return rule, scaled([s for _, s in r.models]), scaled([d for _, d in r.questions])


def _more_rows(total: int, top: int) -> None:
    """Say how many rows a table left out (never cut one silently)."""
    if total > top:
        say(f"... {total - top} more row(s); show them with --top {total} or --json")


def cmd_rate(args: argparse.Namespace) -> int:
    """Rate models (and, with am-ELO, annotators) from battle votes."""
    if arena_paper.wants_analyses(args):
        return arena_paper.cmd_rate_analyses(args)
    from annotate.services.arena_analysis import battles_from_file, rate, rate_study
    from annotate.views import share_cell

    kw: dict[str, Any] = {
        "action": "exclude" if args.exclude_flagged else "warn",
        "delta": args.delta,
        "epsilon": args.epsilon,
        "both_bad_as": args.both_bad,
        "bootstrap_rounds": args.boot if args.boot > 0 else 200,
        "seed": args.seed,
        "intervals": "bootstrap" if args.boot > 0 else "wald",
    }
    if args.boot < 0 or 0 < args.boot < 20:
        raise AnnotateError(f"--boot must be 0 (Wald intervals) or at least 20, got {args.boot}")
    if args.study:
        from annotate.services.db import open_store

        rep = rate_study(
            open_store(db_path(args)),
            args.study,
            args.method,
            include_self_identifying=args.include_self_identifying,
            identity_phrases=tuple(args.identity_phrase),
            **kw,
        )
    elif args.file:
        rep = rate(battles_from_file(Path(args.file)), args.method, **kw)
    else:
        raise AnnotateError("give a battle FILE or --study NAME")
    if args.json:
        doc = rep.as_dict()
        doc["models"] = [
            {
                "model": m.model,
                "rating": m.rating,
                "lower": m.lower,
                "upper": m.upper,
                "rank": m.rank,
                "lowest_rank": m.lowest_rank,
                "battles": m.battles,
                "both_bad": m.both_bad,
            }
            for m in rep.models
        ]
        from annotate.services.json_ready import check_json

        print_json(check_json(doc))
        return 0
    say(
        f"{rep.method}: {rep.n_battles} votes, {len(rep.models)} models, "
        f"{len(rep.annotators)} annotators"
    )
    for note in rep.notes:
        say(f"  {one_line(note)}")
    say()
    say(
        table(
            [
                (
                    m.rank if m.lowest_rank <= m.rank else f"{m.rank}-{m.lowest_rank}",
                    m.model,
                    f"{m.rating:.1f}",
                    f"[{m.lower:.1f}, {m.upper:.1f}]",
                    m.battles,
                    share_cell(*[(m.both_bad or {}).get(k) for k in ("share", "lower", "upper")]),
                )
                for m in rep.models
            ],
            ["rank", "model", "rating", "95% interval", "battles", "both bad [95%]"],
        )
    )
    if rep.method == "am-elo":
        from annotate.services.arena_analysis import describe_reason

        flagged = [a for a in rep.annotators if a.status == "flagged"]
        pending = [a for a in rep.annotators if a.status == "pending"]
        say(
            f"\nannotators: {len(rep.annotators) - len(flagged) - len(pending)} reliable, "
            f"{len(pending)} pending, {len(flagged)} flagged"
        )
        if flagged:
            say(
                table(
                    [
                        (
                            a.annotator,
                            a.votes,
                            f"{a.ability:.4g}" if a.ability is not None else "-",
                            "; ".join(describe_reason(d) for d in a.reasons) or a.reason,
                        )
                        for a in flagged
                    ],
                    ["flagged annotator", "votes", "ability", "reasons (adjusted p)"],
                )
            )
        if pending:
            say(
                table(
                    [
                        (
                            a.annotator,
                            a.votes,
                            "-" if a.votes_to_verdict is None else f"~{a.votes_to_verdict}",
                            a.reason,
                        )
                        for a in pending
                    ],
                    ["pending annotator", "votes", "votes to verdict", "why"],
                )
            )
    ag = rep.agreement
    if ag:
        say(
            f"\nagreement: {ag['shared_battles']} battle(s) judged by two or more annotators "
            f"({ag['votes_on_shared']} votes, {ag['annotators_on_shared']} annotators)"
            + (
                f"; same choice in {ag['pairwise_agreement']:.0%} of the pairs of votes"
                if ag["pairwise_agreement"] is not None
                else ""
            )
            + (
                f", Krippendorff alpha (nominal) {ag['krippendorff_alpha']:.3f}"
                if ag["krippendorff_alpha"] is not None
                else ""
            )
        )
    return 0
