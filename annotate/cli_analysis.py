"""Analysis commands registered on the command line: rank, rate, simulate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from annotate.__main__ import EXTRA_PARSERS, _print_json, _table, command, say
from annotate.names import one_line


def _add_parsers(sub: Any, common: argparse.ArgumentParser, jsonp: argparse.ArgumentParser) -> None:
    from annotate.services.arena_analysis import METHODS as RATE_METHODS
    from annotate.services.estimators import METHODS as RANK_METHODS

    r = sub.add_parser(
        "rank",
        parents=[common, jsonp],
        help="rank models and questions from a response matrix",
        description="Estimate question difficulty and model competency from a response matrix "
        "CSV (long question_id,model,score or wide question_id,<model>,...).",
    )
    r.add_argument("method", choices=RANK_METHODS)
    r.add_argument("matrix", metavar="MATRIX", help="response matrix CSV")
    r.add_argument("--alpha", type=float, default=0.85, help="EIP damping (default 0.85)")
    r.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="IRT: a partial-credit score counts as correct from this value (0.5)",
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

    t = sub.add_parser(
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

    mon = sub.add_parser(
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

    m = sub.add_parser(
        "simulate",
        parents=[common, jsonp],
        help="the am-ELO paper's perturbation simulation",
        description="Reproduce sec. 5.5 of the am-ELO paper on simulated arena data: Random, "
        "Equal, Flip and Mixed perturbations of a share of the annotators; ranking consistency "
        "of Elo, m-ELO and am-ELO with and without perturbation, and precision, recall and F1 "
        "of the anomaly flags (epsilon = 0 and the dynamic epsilon).",
    )
    m.add_argument("what", choices=["arena"], help="what to simulate")
    m.add_argument(
        "--ratios",
        default="0,0.1,0.2,0.3,0.4,0.5",
        help="comma-separated shares of perturbed annotators",
    )
    m.add_argument("--strategies", default="random,equal,flip,mixed")
    m.add_argument("--repeats", type=int, default=3)
    m.add_argument("--models", type=int, default=20)
    m.add_argument("--annotators", type=int, default=42)
    m.add_argument("--records", type=int, default=100, help="votes per annotator")
    m.add_argument("--seed", type=int, default=0)


EXTRA_PARSERS.append(_add_parsers)


@command("monitor")
def cmd_monitor(args: argparse.Namespace) -> int:
    from annotate.__main__ import _db
    from annotate.monitor_app import make_monitor_app
    from annotate.services.db import open_store

    app = make_monitor_app(open_store(_db(args)), args.study)
    app.run()
    return int(app.return_code or 0)


@command("simulate")
def cmd_simulate(args: argparse.Namespace) -> int:
    from annotate.errors import AnnotateError
    from ranking.errors import RankingInputError
    from ranking.simulation import perturbation_study

    try:
        ratios = tuple(float(x) for x in args.ratios.split(","))
        strategies = tuple(x.strip().lower() for x in args.strategies.split(","))
        study = perturbation_study(
            strategies=strategies,
            ratios=ratios,
            n_repeats=args.repeats,
            n_models=args.models,
            n_annotators=args.annotators,
            records_per_annotator=args.records,
            rng=args.seed,
        )
    except (ValueError, RankingInputError) as err:
        raise AnnotateError(f"cannot simulate: {err}") from err
    if args.json:
        from dataclasses import asdict

        _print_json(
            {
                "n_models": study.n_models,
                "n_annotators": study.n_annotators,
                "records_per_annotator": study.records_per_annotator,
                "n_repeats": study.n_repeats,
                "summary": [asdict(r) for r in study.summary],
            }
        )
        return 0
    say(
        f"{study.n_models} models, {study.n_annotators} annotators x "
        f"{study.records_per_annotator} votes, {study.n_repeats} repeats per cell"
    )
    say("consistency: share of model pairs ordered the same with and without perturbation")
    say()
    say(
        _table(
            [
                (
                    r.strategy,
                    f"{r.ratio:.0%}",
                    f"{r.consistency_elo:.3f}",
                    f"{r.consistency_m_elo:.3f}",
                    f"{r.consistency_am_elo:.3f}",
                    f"{r.consistency_stable_arena:.3f}",
                    f"{r.f1_eps0:.3f}",
                    f"{r.f1_dynamic:.3f}",
                    f"{r.precision_dynamic:.3f}",
                    f"{r.recall_dynamic:.3f}",
                    f"{r.flagged_share_dynamic:.3f}",
                )
                for r in study.summary
            ],
            [
                "perturbation",
                "share",
                "Elo",
                "m-ELO",
                "am-ELO",
                "stable",
                "F1 eps=0",
                "F1 dyn",
                "P dyn",
                "R dyn",
                "flagged dyn",
            ],
        )
    )
    return 0


@command("rank")
def cmd_rank(args: argparse.Namespace) -> int:
    from annotate.services.estimators import estimate, read_matrix, write_ranking

    r = estimate(
        read_matrix(Path(args.matrix)), args.method, alpha=args.alpha, threshold=args.threshold
    )
    files = write_ranking(r, Path(args.out)) if args.out else []
    if args.json:
        doc = r.as_dict()
        doc["files"] = [str(f) for f in files]
        _print_json(doc)
        return 0
    say(
        f"{r.method}: {len(r.models)} models, {len(r.questions)} questions"
        + (f", {r.iterations} iterations" if r.iterations is not None else "")
    )
    for note in r.notes:
        say(f"  {one_line(note)}")
    say()
    say(
        _table(
            [(i + 1, m, f"{s:.6g}") for i, (m, s) in enumerate(r.models[: args.top])],
            ["rank", "model", "score"],
        )
    )
    say()
    say(
        _table(
            [(i + 1, q, f"{d:.6g}") for i, (q, d) in enumerate(r.questions[: args.top])],
            ["rank", "question (hardest first)", "difficulty"],
        )
    )
    for f in files:
        say(f"wrote {one_line(f)}")
    return 0


@command("rate")
def cmd_rate(args: argparse.Namespace) -> int:
    from annotate.errors import AnnotateError
    from annotate.services.arena_analysis import battles_from_file, rate, rate_study

    kw: dict[str, Any] = {
        "action": "exclude" if args.exclude_flagged else "warn",
        "delta": args.delta,
        "epsilon": args.epsilon,
        "both_bad_as": args.both_bad,
    }
    if args.study:
        from annotate.__main__ import _db
        from annotate.services.db import open_store

        rep = rate_study(
            open_store(_db(args)),
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
                "battles": m.battles,
            }
            for m in rep.models
        ]
        _print_json(doc)
        return 0
    say(
        f"{rep.method}: {rep.n_battles} votes, {len(rep.models)} models, "
        f"{len(rep.annotators)} annotators"
    )
    for note in rep.notes:
        say(f"  {one_line(note)}")
    say()
    say(
        _table(
            [
                (m.rank, m.model, f"{m.rating:.1f}", f"[{m.lower:.1f}, {m.upper:.1f}]", m.battles)
                for m in rep.models
            ],
            ["rank", "model", "rating", "95% interval", "battles"],
        )
    )
    if rep.method == "am-elo":
        flagged = [a for a in rep.annotators if a.status == "flagged"]
        pending = sum(a.status == "pending" for a in rep.annotators)
        say(
            f"\nannotators: {len(rep.annotators) - len(flagged) - pending} reliable, "
            f"{pending} pending, {len(flagged)} flagged"
        )
        if flagged:
            say(
                _table(
                    [
                        (
                            a.annotator,
                            a.votes,
                            f"{a.ability:.4g}" if a.ability is not None else "-",
                            a.reason,
                        )
                        for a in flagged
                    ],
                    ["flagged annotator", "votes", "ability", "reason"],
                )
            )
    sys.stdout.flush()
    return 0
