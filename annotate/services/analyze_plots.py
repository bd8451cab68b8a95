"""PNG figures of ``annotate analyze`` (matplotlib Agg, imported lazily, no pyplot state).

Fig. 10 (removal), Fig. 12 (rank changes), Fig. 8 (difficulty per pool) and the
convergence of Table 8, each drawn from the sections already computed.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.names import plot_text
from annotate.services.paths import inside

if TYPE_CHECKING:
    from annotate.services.analyze_model import Analysis, Section


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _num(v: Any) -> float:
    return float(v) if isinstance(v, int | float) and math.isfinite(float(v)) else math.nan


def _removal(s: Section, folder: Path) -> Path:
    fig = _figure(6, 5)
    ks = [r[0] for r in s.rows]
    for ax, (mean, sd, label) in zip(
        fig.subplots(2, 1, sharex=True),
        ((3, 4, "question difficulty rho"), (5, 6, "model competency rho")),
        strict=True,
    ):
        ax.errorbar(
            ks,
            [_num(r[mean]) for r in s.rows],
            yerr=[0.0 if math.isnan(_num(r[sd])) else _num(r[sd]) for r in s.rows],
            marker="o",
            capsize=3,
        )
        ax.set_ylabel(label)
    fig.axes[-1].set_xlabel("models removed (k)")
    path = inside(folder, "model_removal.png")
    fig.savefig(path)
    return path


def _changes(s: Section, folder: Path) -> Path:
    counts = s.extra.get("change_counts", [])
    fig = _figure(5, 3.5)
    ax = fig.subplots()
    ax.bar(range(len(counts)), counts, color="#1b6ca8")
    ax.set_xlabel("absolute rank change, EIP vs accuracy")
    ax.set_ylabel("models")
    path = inside(folder, "rank_changes.png")
    fig.savefig(path)
    return path


def _pools(s: Section, folder: Path) -> Path:
    hist = s.extra["histogram"]
    edges = hist["bin_edges"]
    mids = [(a + b) / 2 for a, b in itertools.pairwise(edges)]
    fig = _figure(6, 4)
    ax = fig.subplots()
    for name, shares in hist["share_of_questions"].items():
        ax.plot(mids, [100 * _num(v) for v in shares], marker="o", label=plot_text(name))
    ax.set_xlabel("EIP difficulty (0-100)")
    ax.set_ylabel("% of questions")
    ax.legend()
    path = inside(folder, "pools_difficulty.png")
    fig.savefig(path)
    return path


def _convergence(s: Section, folder: Path) -> Path:
    conv = s.extra["convergence"]
    fig = _figure(6, 4)
    ax = fig.subplots()
    for a, d in zip(conv["alphas"], conv["deltas"], strict=True):
        if d:
            ax.semilogy(range(1, len(d) + 1), d, marker=".", label=f"alpha {a:.1f}")
    ax.set_xlabel("iteration")
    ax.set_ylabel("L1 change")
    ax.legend(fontsize=7, ncol=2)
    path = inside(folder, "alpha_convergence.png")
    fig.savefig(path)
    return path


def write_plots(a: Analysis, folder: Path) -> list[Path]:
    """The PNGs of the sections that ran; returns the files written."""
    from matplotlib import rc_context

    draw = {
        "model-removal": _removal,
        "vs-accuracy": _changes,
        "pools": _pools,
        "alpha": _convergence,
    }
    files = []
    with rc_context({"text.parse_math": False}):
        for s in a.sections:
            if s.key in draw and not s.skipped:
                files.append(draw[s.key](s, folder))
    return files
