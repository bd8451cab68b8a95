"""The am-ELO paper's analyses of a battle file or study (``annotate rate --stats`` etc.).

Builds JSON-ready sections from :class:`~annotate.services.arena_analysis.BattleArrays`
with the functions of :mod:`ranking.arena_analyses`, and draws their figures
(matplotlib Agg, imported lazily). Every number is a number or null with a reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from annotate.errors import AnnotateError
from annotate.names import one_line, plot_text
from annotate.services.paths import inside, output_folder

if TYPE_CHECKING:
    from annotate.services.arena_analysis import BattleArrays

PAPER_TABLE1 = {
    "annotators": 42,
    "models": 20,
    "records": 4321,
    "per_annotator": 102.88,
    "per_model": 216.05,
    "per_pair": 22.74,
}
"""Table 1 of the am-ELO paper (Chatbot Arena 2023, annotators with >= 50 records)."""

PAPER_TABLE2 = {
    "elo": {"mse_mean": 0.1238, "mse_sd": 0.0031, "auc_mean": 0.7492, "auc_sd": 0.0068},
    "m-elo": {"mse_mean": 0.1234, "mse_sd": 0.0029, "auc_mean": 0.7503, "auc_sd": 0.0066},
    "am-elo": {"mse_mean": 0.1208, "mse_sd": 0.0034, "auc_mean": 0.7581, "auc_sd": 0.0067},
}
"""Table 2 of the am-ELO paper (the split is not stated there)."""

ANALYSES = ("stats", "heldout", "model_loss", "order", "descent")


@dataclass(frozen=True)
class PaperOptions:
    """Which analyses to run and their settings (``annotate rate`` options)."""

    analyses: tuple[str, ...]
    min_records: int = 50
    folds: int = 5
    seed: int = 0
    elo_shuffles: int = 100
    order_shuffles: int = 1000
    descent_steps: int = 2000
    both_bad_as: str = "tie"


def _f(x: Any) -> float | None:
    v = float(x)
    return v if math.isfinite(v) else None


def _filtered(b: BattleArrays, opt: PaperOptions) -> tuple[dict[str, Any], Any]:
    """The delta filter: votes of annotators with at least ``min_records`` votes."""
    from ranking.arena_analyses import annotator_filter

    keep = annotator_filter(b.annotator, opt.min_records)
    if opt.both_bad_as == "drop":
        keep &= ~b.both_bad
    a, bb, k, w = b.model_a[keep], b.model_b[keep], b.annotator[keep], b.outcome[keep]
    models, codes = np.unique(np.concatenate([a, bb]), return_inverse=True)
    anns, kc = np.unique(k, return_inverse=True)
    n = int(a.size)
    info = {
        "min_records": opt.min_records,
        "rule": f"annotators with fewer than {opt.min_records} votes are left out (the paper: "
        "50)" + ("; both-bad votes dropped" if opt.both_bad_as == "drop" else ""),
        "votes_before": len(b),
        "votes_after": n,
        "annotators_before": len(b.annotators),
        "annotators_after": int(anns.size),
    }
    arrays = (
        codes[:n].astype(np.int64),
        codes[n:].astype(np.int64),
        kc.astype(np.int64).reshape(-1),
        w,
        [b.models[int(i)] for i in models],
    )
    return info, arrays


def paper_analyses(b: BattleArrays, opt: PaperOptions) -> dict[str, Any]:
    """The chosen analyses of ``b`` as one JSON-ready document (sections by name)."""
    from ranking import arena_analyses as aa
    from ranking.errors import RankingInputError

    info, (a, bb, k, w, models) = _filtered(b, opt)
    doc: dict[str, Any] = {"filter": info}
    if info["votes_after"] == 0:
        raise AnnotateError(
            f"no votes left: no annotator has {opt.min_records} or more votes; give a "
            "smaller --min-records",
            title="No votes",
        )
    if "stats" in opt.analyses:
        s = aa.battle_statistics(a, bb, k)
        doc["statistics"] = {
            "annotators": s.annotators,
            "models": s.models,
            "records": s.records,
            "per_annotator": _f(s.per_annotator),
            "per_model": _f(s.per_model),
            "per_pair": _f(s.per_pair),
            "pairs_observed": s.pairs_observed,
            "per_observed_pair": _f(s.per_observed_pair),
            "definitions": "per_model = records / models; per_pair = records / C(models, 2) "
            "(the paper's Table 1); per_observed_pair = records / pairs with a record",
            "paper": PAPER_TABLE1,
        }
    try:
        if "heldout" in opt.analyses:
            doc["heldout"] = _heldout(aa, a, bb, k, w, opt)
        if "model_loss" in opt.analyses:
            doc["model_loss"] = _model_loss(aa, a, bb, k, w, models, opt)
        if "order" in opt.analyses:
            od = aa.elo_order_dependence(a, bb, w, shuffles=opt.order_shuffles, rng=opt.seed)
            doc["order_dependence"] = {
                "shuffles": od.shuffles,
                "k": od.k,
                "seed": opt.seed,
                "note": "online Elo (K = 4) over shuffled orders of the same votes (Fig. 1); "
                "m-ELO and am-ELO do not depend on the order",
                "max_sd": _f(od.sd.max()),
                "models": sorted(
                    (
                        {
                            "model": models[i],
                            "mean": _f(od.mean[i]),
                            "sd": _f(od.sd[i]),
                            "min": _f(od.minimum[i]),
                            "max": _f(od.maximum[i]),
                            "best_rank": int(od.best_rank[i]),
                            "worst_rank": int(od.worst_rank[i]),
                        }
                        for i in range(len(models))
                    ),
                    key=lambda r: -(r["mean"] or 0.0),
                ),
            }
        if "descent" in opt.analyses:
            doc["descent"] = _descent(aa, a, bb, k, w, opt)
    except RankingInputError as err:
        raise AnnotateError(f"cannot analyse these battles: {one_line(str(err))}") from err
    return doc


def _heldout(aa: Any, a: Any, b: Any, k: Any, w: Any, opt: PaperOptions) -> dict[str, Any]:
    r = aa.heldout_prediction(
        a, b, k, w, folds=opt.folds, seed=opt.seed, elo_shuffles=opt.elo_shuffles
    )
    summ = r.summary()
    rows = []
    for i, m in enumerate(r.methods):
        fails = [why for (mm, _, why) in r.failures if mm == m]
        row = {"method": m, **{key: _f(v) for key, v in summ[m].items()}}
        row["mse_folds"] = [_f(x) for x in r.mse[i]]
        row["auc_folds"] = [_f(x) for x in r.auc[i]]
        reasons = []
        if fails:
            reasons.append(f"{len(fails)} fold fit(s) failed (null there): {one_line(fails[0])}")
        if opt.folds - len(fails) < 2:
            reasons.append("the sd needs two or more folds that fitted")
        row["null_reasons"] = reasons
        rows.append(row)
    return {
        "folds": r.folds,
        "seed": r.seed,
        "split": f"votes shuffled with seed {r.seed} and dealt into {r.folds} folds of equal "
        "size (within one); each fold held out once, the methods fitted on the rest",
        "scoring": "MSE = mean (W - P)^2 over held-out votes (tie W = 0.5); AUC over held-out "
        "decisive votes; a held-out vote whose annotator or model has no training vote is "
        "not scored (n_unseen)",
        "elo_shuffles": r.elo_shuffles,
        "n_test": [int(x) for x in r.n_test],
        "n_test_decisive": [int(x) for x in r.n_test_decisive],
        "n_unseen": [int(x) for x in r.n_unseen],
        "methods": rows,
        "paper": PAPER_TABLE2,
    }


def _model_loss(
    aa: Any, a: Any, b: Any, k: Any, w: Any, models: list[str], opt: PaperOptions
) -> dict[str, Any]:
    ml = aa.model_losses(a, b, k, w, elo_shuffles=opt.elo_shuffles, rng=opt.seed)
    rows = []
    for i, name in enumerate(models):
        row: dict[str, Any] = {"model": name, "votes": int(ml.votes[i])}
        for j, m in enumerate(ml.methods):
            key = m.replace("-", "_")
            row[f"loss_{key}"] = _f(ml.loss[j, i])
            row[f"rating_{key}"] = _f(ml.ratings[j, i])
            row[f"scaled_{key}"] = _f(ml.scaled[j, i])
        rows.append(row)
    rows.sort(key=lambda r: -(r["scaled_m_elo"] if r["scaled_m_elo"] is not None else -1.0))
    return {
        "note": "mean negative log-likelihood of each model's votes, fitted on all votes "
        "(Fig. 3; lower is better); scaled = ratings min-max scaled to [0, 1]",
        "elo_shuffles": opt.elo_shuffles,
        "overall": {m: _f(ml.overall[j]) for j, m in enumerate(ml.methods)},
        "failures": [{"method": m, "reason": one_line(why)} for m, why in ml.failures],
        "models": rows,
    }


def _descent(aa: Any, a: Any, b: Any, k: Any, w: Any, opt: PaperOptions) -> dict[str, Any]:
    from ranking.errors import ConvergenceError, RankingInputError
    from ranking.pairwise import am_elo

    out: dict[str, Any] = {
        "note": "am-ELO by Adam steps (lr 0.1, 5 standard-normal starts; sec. 5.2/5.4) with "
        "and without the normalisation of eq. 7 (the loss is invariant to it, so both variants "
        "reach the same loss; only the direction of the ranking differs); consistency = mean "
        "share of model pairs two starts order alike",
        "steps": opt.descent_steps,
        "seed": opt.seed,
    }
    for key, norm in (("with_norm", True), ("without_norm", False)):
        d = aa.am_elo_descent(a, b, k, w, normalise=norm, steps=opt.descent_steps, rng=opt.seed)
        out[key] = {
            "final_loss_mean": _f(d.loss.mean()),
            "final_loss_sd": _f(d.loss.std(ddof=1)),
            "consistency": _f(d.consistency),
            "reversed_starts": d.reversed_starts,
            "trace_every": d.trace_every,
            "trace_mean": [_f(x) for x in d.trace.mean(axis=0)],
        }
    try:
        fit = am_elo(a, b, k, w)
        out["mle_loss"] = _f(-fit.log_likelihood / len(w))
    except (RankingInputError, ConvergenceError) as err:
        out["mle_loss"] = None
        out["mle_loss_reason"] = f"the maximum-likelihood fit failed: {one_line(str(err))}"
    return out


# --------------------------------------------------------------------------- figures


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _nan(x: Any) -> float:
    return math.nan if x is None else float(x)


def write_plots(doc: dict[str, Any], folder: Path) -> list[Path]:
    """PNG figures of the sections present: Figs. 1, 3 and 5 and Table 2 as bars."""
    base = output_folder(folder)
    files: list[Path] = []
    if "model_loss" in doc:
        rows = doc["model_loss"]["models"]
        fig = _figure(max(6.0, 0.45 * len(rows)), 5)
        ax1, ax2 = fig.subplots(2, 1, sharex=True)
        x = np.arange(len(rows))
        for j, (key, label) in enumerate(
            (("elo", "Elo"), ("m_elo", "m-ELO"), ("am_elo", "am-ELO"))
        ):
            ax1.plot(x, [_nan(r[f"scaled_{key}"]) for r in rows], marker="o", label=label)
            ax2.bar(x + (j - 1) * 0.27, [_nan(r[f"loss_{key}"]) for r in rows], 0.27, label=label)
        ax1.set_ylabel("scaled rating (0-1)")
        ax1.legend()
        ax2.set_ylabel("loss (mean NLL)")
        ax2.set_xticks(x, [plot_text(r["model"])[:24] for r in rows], rotation=75, fontsize=7)
        files.append(inside(base, "model_loss.png"))
        fig.savefig(files[-1])
    if "order_dependence" in doc:
        rows = doc["order_dependence"]["models"]
        fig = _figure(max(6.0, 0.45 * len(rows)), 4)
        ax = fig.subplots()
        x = np.arange(len(rows))
        mean = np.array([_nan(r["mean"]) for r in rows])
        ax.errorbar(x, mean, yerr=[_nan(r["sd"]) for r in rows], fmt="o", capsize=3, label="sd")
        ax.vlines(x, [_nan(r["min"]) for r in rows], [_nan(r["max"]) for r in rows],
                  colors="grey", alpha=0.6, label="min-max")  # fmt: skip
        ax.set_ylabel("online Elo over shuffled orders")
        ax.set_xticks(x, [plot_text(r["model"])[:24] for r in rows], rotation=75, fontsize=7)
        ax.legend()
        files.append(inside(base, "elo_order.png"))
        fig.savefig(files[-1])
    if "heldout" in doc:
        h = doc["heldout"]["methods"]
        fig = _figure(6, 3)
        for ax, key in zip(fig.subplots(1, 2), ("mse", "auc"), strict=True):
            ax.bar(
                [r["method"] for r in h],
                [_nan(r[f"{key}_mean"]) for r in h],
                yerr=[_nan(r[f"{key}_sd"]) if r[f"{key}_sd"] is not None else 0.0 for r in h],
                capsize=4,
                color="#1b6ca8",
            )
            ax.set_title(f"held-out {key.upper()}")
        files.append(inside(base, "heldout.png"))
        fig.savefig(files[-1])
    if "descent" in doc:
        d = doc["descent"]
        fig = _figure(6, 3.5)
        ax = fig.subplots()
        for key, label in (("with_norm", "am-ELO"), ("without_norm", "am-ELO (w/o Norm)")):
            tr = d[key]["trace_mean"]
            ax.plot(np.arange(len(tr)) * d[key]["trace_every"], [_nan(v) for v in tr], label=label)
        if d.get("mle_loss") is not None:
            ax.axhline(d["mle_loss"], color="grey", ls="--", label="maximum likelihood")
        ax.set_xlabel("gradient step")
        ax.set_ylabel("loss (mean NLL)")
        ax.legend()
        files.append(inside(base, "descent_loss.png"))
        fig.savefig(files[-1])
    return files


# --------------------------------------------------------------------------- simulate


def simulation_abilities(
    folder: Path,
    *,
    strategies: tuple[str, ...],
    ratios: tuple[float, ...],
    n_models: int,
    n_annotators: int,
    records: int,
    tie_rate: float,
    ability_sd: float,
    seed: int,
) -> tuple[list[Path], dict[str, Any]]:
    """``simulate arena --out DIR``: abilities.csv and abilities.png (Fig. 6, bottom).

    One simulated arena per strategy and ratio (drawn with ``seed``, apart from the
    perturbation study's repeats), fitted by am-ELO on all annotators.
    """
    import csv

    from ranking.arena_analyses import perturbed_abilities

    pa = perturbed_abilities(
        strategies=strategies,
        ratios=ratios,
        n_models=n_models,
        n_annotators=n_annotators,
        records_per_annotator=records,
        tie_rate=tie_rate,
        discrimination_sd=ability_sd,
        rng=seed,
    )
    base = output_folder(folder)
    path_csv = inside(base, "abilities.csv")
    with path_csv.open("w", newline="", encoding="utf-8") as fh:
        wr = csv.writer(fh)
        wr.writerow(["strategy", "ratio", "annotator", "perturbed", "ability"])
        for i in range(pa.ability.size):
            ab = pa.ability[i]
            wr.writerow(
                [
                    pa.strategy[i],
                    f"{pa.ratio[i]:.6g}",
                    int(pa.annotator[i]),
                    int(pa.perturbed[i]),
                    f"{ab:.6g}" if math.isfinite(ab) else "",
                ]
            )
    fig = _figure(3.2 * len(strategies), 3.4)
    axes = fig.subplots(1, len(strategies), squeeze=False)[0]
    strat = np.array(pa.strategy)
    for ax, s in zip(axes, strategies, strict=True):
        m = strat == s
        for flag, colour, label in ((False, "#d62728", "normal"), (True, "#2ca02c", "perturbed")):
            sel = m & (pa.perturbed == flag)
            ax.scatter(pa.ratio[sel], pa.ability[sel], s=9, c=colour, alpha=0.7, label=label)
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_title(s)
        ax.set_xlabel("share perturbed")
    axes[0].set_ylabel("am-ELO ability")
    axes[0].legend(fontsize=7)
    path_png = inside(base, "abilities.png")
    fig.savefig(path_png)
    pert = pa.ability[pa.perturbed]
    norm = pa.ability[~pa.perturbed]
    summary = {
        "perturbed_below_zero": _f(np.mean(pert[np.isfinite(pert)] <= 0))
        if np.isfinite(pert).any()
        else None,
        "normal_below_zero": _f(np.mean(norm[np.isfinite(norm)] <= 0))
        if np.isfinite(norm).any()
        else None,
        "failures": [{"strategy": s, "ratio": q, "reason": one_line(r)} for s, q, r in pa.failures],
        "note": "one simulated arena per strategy and ratio, drawn apart from the study's "
        "repeats with the same settings and seed; abilities of the am-ELO fit on all annotators",
    }
    return [path_csv, path_png], summary
