"""``annotate rank reasonerrank`` and ``annotate compare``: ranking without gold answers,
and comparing any rankings the project writes.

``rank reasonerrank`` is a method of ``annotate rank`` (:mod:`annotate.cli.analysis`
hands it over here with its own options, :func:`add_rank_options`); ``compare`` is a
command of its own (:func:`add_parser`). The services and the statistics stack are
imported inside the handlers.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from annotate.cli.options import Parents
from annotate.cli.output import print_json, say, table
from annotate.errors import AnnotateError
from annotate.names import one_line

RANK_METHODS = ("reasonerrank",)
"""The ``annotate rank METHOD`` values handled here (model outputs, not a response matrix)."""

REASONING_METHODS = ("reasonerrank", "mca", "selfrank-gtr", "selfrank-ftr")
"""``annotate rank reasonerrank --method``: :data:`annotate.services.reasoning.METHODS`."""

ENCODERS = ("hashed", "minilm")
"""``--encoder``: :data:`annotate.services.text_encoders.ENCODERS`."""

COMPARE_METRICS = ("kendall", "spearman", "rbo", "rbo-weighted", "rbo-ext", "sp@3")


def add_rank_options(r: argparse.ArgumentParser) -> None:
    """Options of ``annotate rank reasonerrank`` (refused with the other methods)."""
    g = r.add_argument_group("reasonerrank (model outputs without gold answers)")
    g.add_argument(
        "--k",
        type=int,
        default=None,
        metavar="K",
        help="top models of the initial ranking whose majority answer is the consensus "
        "(default 4 with at most 10 models, else 6)",
    )
    g.add_argument(
        "--template",
        choices=("fixed", "dynamic"),
        default=None,
        help="the prompt the models answered (paper A.1.3): fixed three steps (default; only "
        "the first three steps count) or dynamic steps (all count)",
    )
    g.add_argument(
        "--method",
        dest="reasoning_method",
        choices=REASONING_METHODS,
        default=None,
        help="reasonerrank (default) or a baseline: mca (most common answer), selfrank-gtr, "
        "selfrank-ftr (triplet ranking)",
    )
    g.add_argument(
        "--seed", type=int, default=None, help="selfrank-gtr: seed of its random choices (0)"
    )
    g.add_argument(
        "--encoder",
        choices=ENCODERS,
        default=None,
        help="sentence encoder of the reasoning consistency: hashed (default; character "
        "n-grams, offline, no extra package) or minilm (all-MiniLM-L6-v2, from the optional "
        "extra annotate-eval[minilm]; loaded offline)",
    )
    g.add_argument(
        "--one-subset",
        action="store_true",
        default=None,
        help="with --study: rank the study as one subset (default: one subset per prompt category)",
    )


def check_rank_options(args: argparse.Namespace) -> None:
    """Refuse the reasonerrank options with another ``rank`` method."""
    if args.method == "reasonerrank":
        return
    given = [
        flag
        for flag, v in (
            ("--k", args.k),
            ("--template", args.template),
            ("--method", args.reasoning_method),
            ("--seed", args.seed),
            ("--encoder", args.encoder),
            ("--one-subset", args.one_subset),
        )
        if v is not None
    ]
    if given:
        raise AnnotateError(
            f"{', '.join(given)} apply to 'annotate rank reasonerrank' only, not to "
            f"rank {args.method}"
        )


def cmd_rank_reasonerrank(args: argparse.Namespace) -> int:
    """``annotate rank reasonerrank OUTPUTS``: ReasonerRank or a baseline on model outputs."""
    from annotate.services.json_ready import check_json
    from annotate.services.reasoning import (
        rank_outputs,
        read_outputs,
        score_outputs,
        study_outputs,
        write_rank_outputs,
    )

    if args.study and args.matrix:
        raise AnnotateError("give OUTPUTS or --study NAME, not both")
    if not args.matrix and not args.study:
        raise AnnotateError(
            "give the model OUTPUTS (a JSON Lines file of {question_id, subset, model, text} "
            "records or an lm-evaluation-harness --log_samples folder) or --study NAME"
        )
    if args.top < 1:
        raise AnnotateError(f"--top must be at least 1, got {args.top}")
    method = args.reasoning_method or "reasonerrank"
    if args.k is not None and method != "reasonerrank":
        raise AnnotateError(f"--k applies to --method reasonerrank, not {method}")
    if args.one_subset and not args.study:
        raise AnnotateError("--one-subset applies to --study (a file names each question's subset)")
    if args.encoder == "minilm":
        from annotate.services.text_encoders import check_minilm_installed

        check_minilm_installed()
    if args.study:
        from annotate.cli.options import db_path
        from annotate.services.db import open_store

        outputs = study_outputs(
            open_store(db_path(args)), args.study, one_subset=bool(args.one_subset)
        )
    else:
        outputs = read_outputs([Path(args.matrix)])
    encoder = None
    if args.encoder == "minilm":
        from annotate.services.text_encoders import minilm_encoder

        encoder = minilm_encoder()
    scored = score_outputs(outputs, template=args.template or "fixed", encoder=encoder)
    doc = rank_outputs(scored, method=method, k=args.k, seed=0 if args.seed is None else args.seed)
    files = write_rank_outputs(doc, Path(args.out)) if args.out else []
    if args.json:
        doc["files"] = [str(f) for f in files]
        print_json(check_json(doc))
        return 0
    _print_ranking(doc, args.top)
    for f in files:
        say(f"wrote {one_line(f)}")
    return 0


def _num(v: Any, fmt: str = ".3f") -> str:
    return "-" if v is None else format(v, fmt)


def _print_ranking(doc: dict[str, Any], top: int) -> None:
    models = doc["models"]
    k = f", K = {doc['k']}" if doc["k"] is not None else ""
    say(
        f"{doc['method']}: {len(models)} models, {doc['questions']} questions in "
        f"{len(doc['subsets'])} subsets{k}; template {doc['template']}, encoder {doc['encoder']}"
    )
    for note in doc["notes"]:
        say(f"  {one_line(note)}")
    say()
    has_acc = any("accuracy" in m for m in models)
    header = ["rank", "model", "score", "initial", "penalty", "consistency"]
    header += ["accuracy"] if has_acc else []
    rows = [
        [
            m["rank"],
            m["model"],
            _num(m["score"]),
            "-" if m["initial_rank"] is None else m["initial_rank"],
            _num(m["penalty"], ".2f"),
            _num(m["consistency"]),
        ]
        + ([_num(m.get("accuracy"))] if has_acc else [])
        for m in models[:top]
    ]
    say(table(rows, header))
    if len(models) > top:
        say(f"... {len(models) - top} more row(s); show them with --top {len(models)} or --json")
    ev = doc["evaluation"]
    if ev is not None:
        rnd = ev["random_expectation"]
        say()
        say(
            f"against the accuracy order on the gold answers (not used to rank; per subset, "
            f"averaged): RBO {ev['rbo']:.4f}, SP@{ev['k']} {ev['sp_at_k']:.4f} "
            f"(a random ranking: {rnd['rbo']:.4f}, {rnd['sp_at_k']:.4f})"
        )
        if "initial" in ev:
            ini = ev["initial"]
            say(
                f"  initial ranking before TopK-ReRank: RBO {ini['rbo']:.4f}, "
                f"SP@{ev['k']} {ini['sp_at_k']:.4f}"
            )


def add_parser(subparsers: Any, parents: Parents) -> None:
    """Add ``compare`` to ``subparsers``."""
    c = subparsers.add_parser(
        "compare",
        parents=[parents.db, parents.json],
        help="compare rankings: Kendall, Spearman, RBO, SP@K",
        description="Compare model rankings pairwise, or each against --reference: the JSON "
        "of 'rank --json' and 'rate --json', or the CSVs 'rank --out' writes. 'rbo' is the "
        "ReasonerRank paper's eq. 13 (average overlap), 'rbo-weighted' its eq. 12, 'rbo-ext' "
        "Webber's extrapolated RBO; each metric is printed with its value for a random "
        "ranking of the same models.",
    )
    c.add_argument("files", metavar="RANKING_FILE", nargs="+", help="ranking files")
    c.add_argument(
        "--reference", metavar="FILE", default=None, help="compare each file with this one"
    )
    c.add_argument(
        "--metrics",
        default=",".join(COMPARE_METRICS),
        help=f"comma-separated, from {', '.join(COMPARE_METRICS)} (sp@K for any K; default all)",
    )
    c.add_argument(
        "--p", type=float, default=0.9, help="persistence of rbo-weighted and rbo-ext (0.9)"
    )
    c.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    """``annotate compare RANKING_FILE...``."""
    from annotate.services.json_ready import check_json
    from annotate.services.reasoning import compare_rankings

    metrics = [m.strip().casefold() for m in args.metrics.split(",") if m.strip()]
    if not 0 < args.p < 1:
        raise AnnotateError(f"--p must be between 0 and 1, got {args.p}")
    doc = compare_rankings(
        [Path(f) for f in args.files],
        reference=Path(args.reference) if args.reference else None,
        metrics=metrics,
        p=args.p,
    )
    if args.json:
        print_json(check_json(doc))
        return 0
    keys = [
        k
        for k in ("kendall", "spearman", "rbo", "rbo_weighted", "rbo_ext", "sp_at_k")
        if any(k in pair for pair in doc["pairs"])
    ]
    names = {"sp_at_k": f"sp@{doc['k']}", "rbo_weighted": f"rbo-w(p={args.p:g})"}
    rows = [[p["a"], p["b"], p["n"]] + [_num(p.get(k)) for k in keys] for p in doc["pairs"]]
    rnd = doc["random_expectation"]
    if rnd is not None:
        rows.append(["(random ranking)", "", doc["pairs"][0]["n"]] + [_num(rnd[k]) for k in keys])
    say(table(rows, ["a", "b", "models"] + [names.get(k, k.replace("_", "-")) for k in keys]))
    for p in doc["pairs"]:
        if p["dropped"]:
            shown = ", ".join(one_line(m) for m in p["dropped"][:5])
            more = f" and {len(p['dropped']) - 5} more" if len(p["dropped"]) > 5 else ""
            say(f"{one_line(p['a'])} vs {one_line(p['b'])}: not in both: {shown}{more}")
    for note in doc["notes"]:
        say(one_line(note))
    return 0
