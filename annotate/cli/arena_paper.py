"""The am-ELO paper's analyses as options of ``annotate rate`` and ``annotate simulate arena``.

``rate --stats / --heldout / --model-loss / --order N / --descent`` (or ``--paper`` for
all) print the analyses instead of the ratings; ``simulate arena --out DIR`` also
writes the abilities of normal and perturbed annotators (Fig. 6). The statistics
stack is imported inside the functions.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from annotate.cli.output import print_json, say, table
from annotate.errors import AnnotateError
from annotate.names import one_line


def add_rate_options(t: Any) -> None:
    """The analysis options of ``annotate rate``."""
    g = t.add_argument_group(
        "the am-ELO paper's analyses (any of these prints them instead of the ratings)"
    )
    g.add_argument("--stats", action="store_true", help="Table 1: annotators, models, records")
    g.add_argument(
        "--heldout",
        action="store_true",
        help="Table 2: MSE and AUC of Elo, m-ELO and am-ELO on held-out votes (k-fold)",
    )
    g.add_argument("--folds", type=int, default=5, metavar="K", help="folds of --heldout (5)")
    g.add_argument(
        "--model-loss", action="store_true", help="Fig. 3: each model's log-likelihood loss"
    )
    g.add_argument(
        "--order",
        type=int,
        default=None,
        metavar="N",
        help="Fig. 1: spread of online Elo over N shuffled orders (the paper: 1000)",
    )
    g.add_argument(
        "--descent",
        action="store_true",
        help="sec. 5.4: am-ELO with and without normalisation from 5 random starts",
    )
    g.add_argument(
        "--paper",
        action="store_true",
        help="all of the above (--order 1000)",
    )
    g.add_argument(
        "--min-records",
        type=int,
        default=50,
        metavar="N",
        help="leave out annotators with fewer than N votes first, as the paper does (50; 0 "
        "keeps all)",
    )
    g.add_argument(
        "--elo-shuffles",
        type=int,
        default=100,
        metavar="N",
        help="shuffled orders averaged for Elo in --heldout and --model-loss (100; paper 1000)",
    )
    g.add_argument(
        "--plots", metavar="DIR", default=None, help="also write the figures as PNG here"
    )


def wants_analyses(args: argparse.Namespace) -> bool:
    """Whether ``rate`` was asked for one of the paper's analyses."""
    return bool(
        getattr(args, "paper", False)
        or getattr(args, "stats", False)
        or getattr(args, "heldout", False)
        or getattr(args, "model_loss", False)
        or getattr(args, "order", None) is not None
        or getattr(args, "descent", False)
    )


def cmd_rate_analyses(args: argparse.Namespace) -> int:
    """``annotate rate FILE|--study NAME --stats ...``: the paper's analyses."""
    from annotate.services.arena_paper import PaperOptions, paper_analyses, write_plots

    chosen = []
    if args.paper or args.stats:
        chosen.append("stats")
    if args.paper or args.heldout:
        chosen.append("heldout")
    if args.paper or args.model_loss:
        chosen.append("model_loss")
    if args.paper or args.order is not None:
        chosen.append("order")
    if args.paper or args.descent:
        chosen.append("descent")
    order = args.order if args.order is not None else 1000
    if args.folds < 2:
        raise AnnotateError(f"--folds must be at least 2, got {args.folds}")
    if order < 2:
        raise AnnotateError(f"--order must be at least 2 shuffles, got {order}")
    if args.min_records < 0:
        raise AnnotateError(f"--min-records must be 0 or more, got {args.min_records}")
    if args.elo_shuffles < 1:
        raise AnnotateError(f"--elo-shuffles must be at least 1, got {args.elo_shuffles}")
    b = _battles(args)
    if args.folds > len(b):
        raise AnnotateError(f"--folds {args.folds} is more than the {len(b)} votes")
    opt = PaperOptions(
        analyses=tuple(chosen),
        min_records=args.min_records,
        folds=args.folds,
        seed=args.seed,
        elo_shuffles=args.elo_shuffles,
        order_shuffles=order,
        both_bad_as=args.both_bad,
    )
    doc = paper_analyses(b, opt)
    files = write_plots(doc, Path(args.plots)) if args.plots else []
    if args.json:
        from annotate.services.json_ready import check_json

        doc["files"] = [str(f) for f in files]
        print_json(check_json(doc))
        return 0
    for block in text_lines(doc):
        say(block)
    for f in files:
        say(f"wrote {one_line(f)}")
    return 0


def _battles(args: argparse.Namespace) -> Any:
    from annotate.services.arena_analysis import battles_from_file, battles_from_study

    if args.study and args.file:
        raise AnnotateError("give a battle FILE or --study NAME, not both")
    if args.study:
        from annotate.cli.options import db_path
        from annotate.services.db import open_store

        return battles_from_study(open_store(db_path(args)), args.study)
    if args.file:
        return battles_from_file(Path(args.file))
    raise AnnotateError("give a battle FILE or --study NAME")


def add_simulate_options(m: Any) -> None:
    """``simulate arena --out DIR``."""
    m.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="also write abilities.csv and abilities.png here: the am-ELO abilities of normal "
        "and perturbed annotators per strategy and share (Fig. 6)",
    )


def simulate_out(args: argparse.Namespace, ratios: tuple[float, ...]) -> dict[str, Any] | None:
    """Write the Fig. 6 abilities when ``--out`` was given; the JSON summary or None."""
    if not getattr(args, "out", None):
        return None
    from annotate.services.arena_paper import simulation_abilities

    files, summary = simulation_abilities(
        Path(args.out),
        strategies=tuple(x.strip().lower() for x in args.strategies.split(",")),
        ratios=ratios,
        n_models=args.models,
        n_annotators=args.annotators,
        records=args.records,
        tie_rate=args.tie_rate,
        ability_sd=args.ability_sd,
        seed=args.seed,
    )
    summary["files"] = [str(f) for f in files]
    return summary


# --------------------------------------------------------------------------- text


def _n(x: Any, fmt: str = ".4f") -> str:
    return "n/a" if x is None else format(x, fmt)


def text_lines(doc: dict[str, Any]) -> list[str]:
    """The report as text blocks (each a table or a line), in section order."""
    out: list[str] = []
    fi = doc["filter"]
    out.append(
        f"filter: {fi['rule']}: {fi['votes_after']} of {fi['votes_before']} votes, "
        f"{fi['annotators_after']} of {fi['annotators_before']} annotators"
    )
    if "statistics" in doc:
        s = doc["statistics"]
        p = s["paper"]
        out.append("\nTable 1: statistics of the data set (after the filter)")
        out.append(
            table(
                [
                    ("annotators", s["annotators"], p["annotators"]),
                    ("models", s["models"], p["models"]),
                    ("records", s["records"], p["records"]),
                    ("records per annotator", _n(s["per_annotator"], ".2f"), p["per_annotator"]),
                    ("records per model", _n(s["per_model"], ".2f"), p["per_model"]),
                    ("records per model pair", _n(s["per_pair"], ".2f"), p["per_pair"]),
                    ("model pairs with a record", s["pairs_observed"], "-"),
                ],
                ["statistic", "these data", "paper (Chatbot)"],
            )
        )
    if "heldout" in doc:
        h = doc["heldout"]
        out.append(
            f"\nTable 2: prediction of held-out votes ({h['folds']}-fold, seed {h['seed']}, "
            f"mean +- sd over folds; Elo averaged over {h['elo_shuffles']} shuffles)"
        )
        rows = []
        for r in h["methods"]:
            p = h["paper"][r["method"]]
            rows.append(
                (
                    r["method"],
                    f"{_n(r['mse_mean'])} +- {_n(r['mse_sd'])}",
                    f"{_n(r['auc_mean'])} +- {_n(r['auc_sd'])}",
                    f"{p['mse_mean']:.4f} +- {p['mse_sd']:.4f}",
                    f"{p['auc_mean']:.4f} +- {p['auc_sd']:.4f}",
                )
            )
        out.append(table(rows, ["method", "MSE", "AUC", "paper MSE", "paper AUC"]))
        out.append(
            f"held-out votes per fold: {h['n_test']} (decisive {h['n_test_decisive']}; "
            f"not scored, unseen annotator or model: {h['n_unseen']})"
        )
        for r in h["methods"]:
            for why in r["null_reasons"]:
                out.append(f"  {r['method']}: {one_line(why)}")
    if "model_loss" in doc:
        m = doc["model_loss"]
        out.append("\nFig. 3: loss (mean negative log-likelihood) per model, lower is better")
        out.append(
            table(
                [
                    (
                        r["model"],
                        r["votes"],
                        _n(r["loss_elo"]),
                        _n(r["loss_m_elo"]),
                        _n(r["loss_am_elo"]),
                        _n(r["scaled_elo"], ".3f"),
                        _n(r["scaled_m_elo"], ".3f"),
                        _n(r["scaled_am_elo"], ".3f"),
                    )
                    for r in m["models"]
                ],
                [
                    "model",
                    "votes",
                    "loss Elo",
                    "loss m-ELO",
                    "loss am-ELO",
                    "scaled Elo",
                    "scaled m-ELO",
                    "scaled am-ELO",
                ],
            )
        )
        ov = m["overall"]
        out.append(
            f"all votes: Elo {_n(ov['elo'])}, m-ELO {_n(ov['m-elo'])}, am-ELO {_n(ov['am-elo'])}"
        )
        for f in m["failures"]:
            out.append(f"  {f['method']} failed: {f['reason']}")
    if "order_dependence" in doc:
        o = doc["order_dependence"]
        out.append(
            f"\nFig. 1: online Elo over {o['shuffles']} shuffled orders of the same votes "
            f"(K = {o['k']:g}, seed {o['seed']}); largest sd {_n(o['max_sd'], '.1f')}"
        )
        out.append(
            table(
                [
                    (
                        r["model"],
                        _n(r["mean"], ".1f"),
                        _n(r["sd"], ".1f"),
                        f"[{_n(r['min'], '.1f')}, {_n(r['max'], '.1f')}]",
                        f"{r['best_rank']}-{r['worst_rank']}",
                    )
                    for r in o["models"]
                ],
                ["model", "mean", "sd", "range", "ranks reached"],
            )
        )
    if "descent" in doc:
        d = doc["descent"]
        out.append(
            f"\nsec. 5.4: am-ELO by Adam steps (lr 0.1), {d['steps']} steps, 5 random starts "
            f"(maximum-likelihood loss {_n(d.get('mle_loss'))})"
        )
        out.append(
            table(
                [
                    (
                        name,
                        f"{_n(d[key]['final_loss_mean'])} +- {_n(d[key]['final_loss_sd'])}",
                        _n(d[key]["consistency"], ".3f"),
                        d[key]["reversed_starts"],
                    )
                    for key, name in (("with_norm", "am-ELO"), ("without_norm", "am-ELO w/o Norm"))
                ],
                ["method", "final loss", "consistency", "starts reversed"],
            )
        )
    return out
