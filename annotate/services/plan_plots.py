"""PNG figures of ``annotate plan power`` (matplotlib, Agg, imported lazily).

Built on :class:`matplotlib.figure.Figure` with the Agg canvas, as the report's plots
(:mod:`annotate.services.plots`), so pyplot's global state is never touched.
"""

from __future__ import annotations

from pathlib import Path

from annotate.errors import AnnotateError
from annotate.services.plan import ArenaPowerPlan, PowerPlan
from annotate.services.plots import COLORS, MARKERS, _figure


def _target(path: Path) -> Path:
    """``path`` if it can be written: not there yet, its folder there."""
    if path.exists():
        raise AnnotateError(f"{path} exists already; give another --plot", title="Cannot write")
    if not path.parent.is_dir():
        raise AnnotateError(f"{path}: its folder does not exist", title="Cannot write")
    return path


def write_power_plot(plan: PowerPlan, path: Path) -> Path:
    """Interval widths and power against the number of pairs, one line per annotator count."""
    _target(path)
    fig = _figure(11.0, 3.6)
    axes = fig.subplots(1, 3)
    panels = (
        ("ci_width_consensus", "95% interval width, consensus alignment"),
        ("ci_width_kappa", "95% interval width, kappa"),
        ("power", "power (McNemar exact)"),
    )
    counts = sorted({int(r["annotators"]) for r in plan.rows})
    for ax, (key, title) in zip(axes, panels, strict=True):
        for k, n_a in enumerate(counts):
            rows = sorted(
                (r for r in plan.rows if r["annotators"] == n_a), key=lambda r: r["pairs"]
            )
            xs = [r["pairs"] for r in rows if r[key] is not None]
            ys = [r[key] for r in rows if r[key] is not None]
            ax.plot(
                xs,
                ys,
                marker=MARKERS[k % len(MARKERS)],
                color=COLORS[k % len(COLORS)],
                label=f"{n_a} annotators",
            )
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("pairs")
        ax.grid(alpha=0.3)
    axes[2].set_ylim(0, 1.02)
    axes[2].axhline(0.8, color="grey", lw=0.8, ls="--")
    axes[0].legend(fontsize=8)
    fig.savefig(path, dpi=110)
    return path


def write_arena_plot(plan: ArenaPowerPlan, path: Path) -> Path:
    """Mean rating interval width against votes per model pair, with the target."""
    _target(path)
    fig = _figure(6.0, 4.0)
    ax = fig.subplots()
    pts = [(c["votes_per_pair"], c["width"]) for c in plan.curve if c["width"] is not None]
    if pts:
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, ys, marker="o", color=COLORS[0], label="simulated (m-ELO Wald)")
    ax.axhline(plan.target_width, color=COLORS[1], ls="--", label="target width")
    ax.axvline(plan.votes_per_pair, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("votes per model pair")
    ax.set_ylabel("mean 95% interval width (Elo points)")
    ax.set_title(f"{plan.models} models, rating sd {plan.rating_sd:g}", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=110)
    return path
