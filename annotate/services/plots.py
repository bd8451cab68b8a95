"""PNG figures of the human-alignment report (matplotlib, Agg, imported lazily).

Figures are built with :class:`matplotlib.figure.Figure` and the Agg canvas
directly, so nothing touches pyplot's global state or the process's backend
(the report can be written from inside the TUI).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from annotate.names import plot_text
from annotate.services.paths import inside, output_folder
from annotate.services.report_model import HumanAlignmentReport

COLORS = ("#1b6ca8", "#d1495b", "#66a182", "#edae49", "#8d6cab", "#00798c", "#6b4f3f")
"""Colour-blind-friendly enough, distinguishable in greyscale by marker."""
MARKERS = ("o", "s", "D", "^", "v", "P", "X")
_MAX_ANNOTATOR_ROWS = 40


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _t(text: object) -> str:
    """A name or label from the data as plot text: one line, control characters shown
    as placeholders (:func:`annotate.names.one_line`; ``$`` stays literal because
    :func:`write_plots` turns mathtext off; the control pictures, which the font lacks,
    as ``⟨U+001B⟩``: :func:`annotate.names.plot_text`)."""
    return plot_text(text)


def _save(fig: Any, path: Path) -> Path:
    fig.savefig(path, dpi=110)
    return path


def _err(value: float, low: float, high: float) -> list[list[float]]:
    return [[max(0.0, value - low)], [max(0.0, high - value)]]


def write_plots(r: HumanAlignmentReport, folder: Path) -> tuple[list[Path], list[str]]:
    """Write the report's PNGs under ``folder``; returns the files and notes on skipped ones."""
    from matplotlib import rc_context

    folder = output_folder(folder)
    files: list[Path] = []
    notes: list[str] = []
    # Names are data: ``$x^$`` in a model or annotator name is text, not mathtext.
    with rc_context({"text.parse_math": False}):
        for fn in (_alignment, _pools, _individual, _by_subject, _vs_human):
            out = fn(r, folder)
            if isinstance(out, Path):
                files.append(out)
            elif out:
                notes.append(out)
    return files, notes


def _alignment(r: HumanAlignmentReport, folder: Path) -> Path | str:
    """Consensus alignment and kappa per method with both bootstrap intervals."""
    rows = [m for m in r.alignment]
    if not any(m.consensus.value is not None for m in rows):
        return "alignment.png not drawn: no method has a defined consensus alignment"
    fig = _figure(10, 1.2 + 0.55 * len(rows))
    ax1, ax2 = fig.subplots(1, 2, sharey=True, width_ratios=(3, 2))
    ys = list(range(len(rows)))[::-1]
    for y, m in zip(ys, rows, strict=True):
        for ax, est, scale in ((ax1, m.consensus, 100.0), (ax2, m.kappa, 1.0)):
            if est.value is None:
                ax.text(
                    0.02,
                    y,
                    "undefined",
                    va="center",
                    fontsize=8,
                    color="0.4",
                    transform=ax.get_yaxis_transform(),
                )
                continue
            v = est.value * scale
            for iv, dy, col, lw in (
                (est.pairs_interval, 0.0, COLORS[0], 3.0),
                (est.annotators_interval, -0.22, COLORS[1], 1.5),
            ):
                if iv is not None:
                    ax.plot([iv.low * scale, iv.high * scale], [y + dy, y + dy], color=col, lw=lw)
            ax.plot([v], [y], "o", color=COLORS[0], mec="white", ms=8, zorder=3)
            text = f"{v:.1f}%" if ax is ax1 else f"{v:.2f}"
            ax.text(
                1.01,
                y,
                text,
                va="center",
                fontsize=9,
                fontweight="bold",
                transform=ax.get_yaxis_transform(),
            )
        if m.mean_individual.value is not None:
            ax1.plot([100 * m.mean_individual.value], [y + 0.22], "v", color="0.25", ms=6)
    ax1.set_yticks(ys, [f"{_t(m.label)} (n={m.pairs})" for m in rows])
    ax1.set_xlim(0, 100)
    ax1.set_ylim(-0.6, len(rows) - 0.4)
    ax1.axvline(50, color="0.8", lw=1, zorder=0)
    ax1.set_xlabel("consensus alignment, % of consensus pairs (eq. 9)")
    ax2.axvline(0, color="0.8", lw=1, zorder=0)
    ax2.set_xlim(-1.0, 1.0)
    ax2.set_xlabel("Cohen's kappa vs consensus")
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=COLORS[0], marker="o", lw=3, label="estimate, 95% CI over pairs"),
        Line2D([], [], color=COLORS[1], lw=1.5, label="95% CI over annotators"),
        Line2D([], [], color="0.25", marker="v", lw=0, ms=6, label="mean individual alignment"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle(f"Alignment with human judgement — {_t(r.study)}", fontsize=11)
    return _save(fig, inside(folder, "alignment.png"))


def _pools(r: HumanAlignmentReport, folder: Path) -> Path | str:
    """Figure 7: consensus alignment (bars) and kappa (labels) per model pool."""
    if not r.subgroups:
        return "pools.png not drawn: the study's models have no 'pool' metadata"
    if not any(s.consensus.value is not None for s in r.subgroups):
        return "pools.png not drawn: no pool has a defined consensus alignment"
    pools = list(dict.fromkeys(s.pool for s in r.subgroups))
    methods = list(dict.fromkeys(s.label for s in r.subgroups))
    fig = _figure(max(6.0, 1.6 * len(pools) * max(1, len(methods)) / 1.5), 4.2)
    ax = fig.subplots()
    width = 0.8 / len(methods)
    labelled: set[str] = set()
    for j, meth in enumerate(methods):
        for i, pool in enumerate(pools):
            s = next((x for x in r.subgroups if x.pool == pool and x.label == meth), None)
            if s is None:
                continue
            x = i + (j - (len(methods) - 1) / 2) * width
            if s.consensus.value is None:
                ax.text(x, 2, "undefined", rotation=90, ha="center", va="bottom", fontsize=7)
                continue
            v = 100 * s.consensus.value
            iv = s.consensus.pairs_interval
            ax.bar(
                x,
                v,
                width * 0.9,
                color=COLORS[j % len(COLORS)],
                label=None if meth in labelled else _t(meth),
                yerr=_err(v, 100 * iv.low, 100 * iv.high) if iv else None,
                capsize=3,
                ecolor="0.3",
            )
            labelled.add(meth)
            k = "κ —" if s.kappa.value is None else f"κ={s.kappa.value:.2f}"
            ax.text(
                x,
                1.5,
                f"{v:.0f}%\n{k}",
                ha="center",
                va="bottom",
                fontsize=7,
                color="white",
                fontweight="bold",
            )
    ax.set_xticks(
        range(len(pools)),
        [
            f"{_t(p)}\n({len(next(s.models for s in r.subgroups if s.pool == p))} models)"
            for p in pools
        ],
    )
    ax.set_ylim(0, 105)
    ax.set_ylabel("consensus alignment, % (95% CI over pairs)")
    ax.axhline(50, color="0.8", lw=1, zorder=0)
    if ax.get_legend_handles_labels()[0]:  # no empty legend box when nothing is labelled
        ax.legend(fontsize=8, loc="upper left")
    ax.set_title(f"Alignment by model pool (cf. Figure 7) — {_t(r.study)}", fontsize=11)
    return _save(fig, inside(folder, "pools.png"))


def _individual(r: HumanAlignmentReport, folder: Path) -> Path | str:
    """Each annotator's alignment with each method (Table 2's V columns)."""
    methods = [m for m in r.alignment if any(a.value is not None for a in m.individual)]
    if not methods:
        return "individual.png not drawn: no annotator has a non-skipped vote on a predicted pair"
    names = list(r.annotators)
    if len(names) <= _MAX_ANNOTATOR_ROWS:
        fig = _figure(8, 1.5 + 0.32 * len(names))
        ax = fig.subplots()
        ys = list(range(len(names)))[::-1]
        off = 0.6 / max(1, len(methods))
        for j, m in enumerate(methods):
            dy = (j - (len(methods) - 1) / 2) * off
            label: str | None = _t(m.label)
            for y, a in zip(ys, m.individual, strict=True):
                if a.value is None:
                    continue
                if a.low is not None and a.high is not None:
                    ax.plot(
                        [100 * a.low, 100 * a.high],
                        [y + dy, y + dy],
                        color=COLORS[j % len(COLORS)],
                        lw=1,
                        alpha=0.6,
                    )
                ax.plot(
                    [100 * a.value],
                    [y + dy],
                    MARKERS[j % len(MARKERS)],
                    color=COLORS[j % len(COLORS)],
                    ms=5,
                    label=label,
                )
                label = None
        ax.set_yticks(ys, [_t(n) for n in names])
        ax.set_ylim(-0.7, len(names) - 0.3)
        ax.set_xlabel(
            "individual alignment, % of the annotator's non-skipped votes (line: 95% CI over pairs)"
        )
        fig.legend(fontsize=8, loc="outside lower center", ncol=min(5, len(methods)), frameon=False)
    else:
        fig = _figure(8, 1.5 + 0.5 * len(methods))
        ax = fig.subplots()
        data = [[100 * a.value for a in m.individual if a.value is not None] for m in methods]
        ax.boxplot(data, orientation="horizontal", tick_labels=[_t(m.label) for m in methods])
        ax.set_xlabel(f"individual alignment, % ({len(names)} annotators)")
        ax.invert_yaxis()
    ax.set_xlim(-2, 102)
    ax.axvline(50, color="0.8", lw=1, zorder=0)
    fig.suptitle(f"Individual alignment per annotator — {_t(r.study)}", fontsize=11)
    return _save(fig, inside(folder, "individual.png"))


def _scaled(values: Sequence[float | None]) -> list[float | None]:
    finite = [v for v in values if v is not None and abs(v) != float("inf")]
    if not finite:
        return [None for _ in values]
    lo, hi = min(finite), max(finite)
    span = hi - lo or 1.0
    out: list[float | None] = []
    for v in values:
        if v is None:
            out.append(None)
        elif v == float("inf"):
            out.append(100.0)
        elif v == float("-inf"):
            out.append(0.0)
        else:
            out.append(100.0 * (v - lo) / span)
    return out


def _by_subject(r: HumanAlignmentReport, folder: Path) -> Path | str:
    """Distribution of each method's difficulty within each subject."""
    panels: list[tuple[str, list[float | None]]] = [
        (m.label, _scaled(r.difficulty[i]))
        for i, m in enumerate(r.alignment)
        if any(v is not None for v in r.difficulty[i])
    ]
    if r.human_scale.fitted:
        label = "human scale" + (" (centred per group)" if len(r.human_scale.groups) > 1 else "")
        panels.append((label, _scaled([q.difficulty for q in r.human_scale.questions])))
    if not panels:
        return "difficulty_by_subject.png not drawn: no method gives any difficulty"
    subjects = sorted(set(r.question_subjects))
    ncol = min(3, len(panels))
    nrow = (len(panels) + ncol - 1) // ncol
    fig = _figure(4.0 * ncol, 0.9 + (0.45 * len(subjects) + 0.9) * nrow)
    axes = fig.subplots(nrow, ncol, squeeze=False, sharex=True)
    for k, (label, vals) in enumerate(panels):
        ax = axes[k // ncol][k % ncol]
        data = [
            [
                v
                for v, s in zip(vals, r.question_subjects, strict=True)
                if s == subj and v is not None
            ]
            for subj in subjects
        ]
        ok = [d if d else [float("nan")] for d in data]
        ax.boxplot(
            ok,
            orientation="horizontal",
            tick_labels=[_t(x) for x in subjects],
            widths=0.6,
            flierprops={"markersize": 3},
        )
        for y, d in enumerate(data, start=1):
            ax.plot(d, [y] * len(d), "o", color=COLORS[k % len(COLORS)], ms=3, alpha=0.5)
        ax.set_title(_t(label), fontsize=10)
        ax.invert_yaxis()
        ax.set_xlim(-5, 105)
    for k in range(len(panels), nrow * ncol):
        axes[k // ncol][k % ncol].set_visible(False)
    fig.supxlabel(
        "difficulty, min–max scaled within each method (0 = easiest, 100 = hardest)", fontsize=9
    )
    fig.suptitle(f"Difficulty per subject — {_t(r.study)}", fontsize=11)
    return _save(fig, inside(folder, "difficulty_by_subject.png"))


def _percentile_ranks(values: list[float]) -> list[float]:
    """Average-rank percentiles (0 = easiest, 100 = hardest) of ``values``."""
    from ranking._special_dist import rankdata

    if len(values) < 2:
        return [50.0 for _ in values]
    ranks = rankdata(values)
    return [float(100.0 * (x - 1) / (len(values) - 1)) for x in ranks]


def _vs_human(r: HumanAlignmentReport, folder: Path) -> Path | str:
    """Each estimator's difficulty against the human difficulty scale."""
    hs = r.human_scale
    if not hs.fitted:
        return f"estimator_vs_human.png not drawn: {hs.reason}"
    human = [q.difficulty for q in hs.questions]
    panels = [
        (i, m) for i, m in enumerate(r.alignment) if any(v is not None for v in r.difficulty[i])
    ]
    if not panels:
        return "estimator_vs_human.png not drawn: no method gives any difficulty"
    corr = {c.method: c for c in hs.correlations}
    ncol = min(3, len(panels))
    nrow = (len(panels) + ncol - 1) // ncol
    fig = _figure(4.0 * ncol, 0.8 + 3.6 * nrow)
    axes = fig.subplots(nrow, ncol, squeeze=False, sharey=True)
    for k, (i, m) in enumerate(panels):
        ax = axes[k // ncol][k % ncol]
        xs, ys, lo, hi = [], [], [], []
        for q, x in zip(hs.questions, r.difficulty[i], strict=True):
            if q.difficulty is None or x is None or abs(x) == float("inf"):
                continue
            xs.append(x)
            ys.append(q.difficulty)
            lo.append(q.difficulty - (q.lower if q.lower is not None else q.difficulty))
            hi.append((q.upper if q.upper is not None else q.difficulty) - q.difficulty)
        xs = _percentile_ranks(xs)
        ax.errorbar(
            xs,
            ys,
            yerr=[lo, hi],
            fmt="o",
            ms=4,
            color=COLORS[k % len(COLORS)],
            ecolor="0.75",
            elinewidth=1,
        )
        c = corr.get(m.method)
        if c is not None and c.spearman is not None:
            kd = "—" if c.kendall is None else f"{c.kendall:.2f}"
            where = f"{c.n} questions" + (f", {c.groups} groups" if c.groups > 1 else "")
            sub = f"Spearman {c.spearman:.2f}, Kendall {kd}\n{where}"
        else:
            sub = f"undefined: {c.reason if c else 'no correlation'}"
        ax.set_title(f"{_t(m.label)}\n{_t(sub)}", fontsize=9)
        ax.set_xlabel(f"{_t(m.label)} difficulty, percentile rank (100 = hardest)", fontsize=8)
        ax.set_xlim(-3, 103)
        if k % ncol == 0:
            ax.set_ylabel(
                "human difficulty, Elo points (95% CI)"
                + ("\nscale centred within each group" if len(hs.groups) > 1 else ""),
                fontsize=8,
            )
    for k in range(len(panels), nrow * ncol):
        axes[k // ncol][k % ncol].set_visible(False)
    del human
    fig.suptitle(f"Estimators vs the human difficulty scale — {_t(r.study)}", fontsize=11)
    return _save(fig, inside(folder, "estimator_vs_human.png"))
