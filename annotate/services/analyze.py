"""``annotate analyze``: the EIP paper's robustness analyses on a response matrix.

Reads the matrix as ``annotate rank`` does (:mod:`annotate.services.estimators`),
optional per-question datasets and per-model metadata, runs each analysis of
:mod:`ranking.eip_analyses` / :mod:`ranking.robustness`, and returns one
:class:`Section` per analysis: a table (Markdown, CSV and terminal), notes with the
paper's own numbers for comparison, and a JSON part in which every number is a
number or ``null`` with a ``*_reason``. :func:`write_analysis` writes
``analysis.md``, one CSV per section and (unless ``plots=False``) a few PNGs.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from annotate.errors import AnnotateError, InputFileError
from annotate.services.analyze_model import Analysis, Metadata, ModelInfo, Section
from annotate.services.estimators import Matrix

ANALYSES = (
    "model-removal",
    "leave-one-out",
    "datasets",
    "alpha",
    "vs-accuracy",
    "scale",
    "tiers",
    "group-agreement",
    "pools",
    "weak-inflation",
    "wrong-side",
    "families",
    "super-model",
    "anchors",
    "bootstrap",
)
"""Names of ``annotate analyze --only``, in report order."""

FLOAT_FIELDS = ("params_b",)
BOOL_FIELDS = ("open_weight",)
TEXT_FIELDS = ("family", "pool")
_TRUE = {"1", "true", "yes", "y", "open"}
_FALSE = {"0", "false", "no", "n", "closed", "proprietary"}


# ---------------------------------------------------------------------------
# Metadata files
# ---------------------------------------------------------------------------


def _rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Header and (line, row) pairs of a CSV, or of a JSONL file (keys as header)."""
    from annotate.services.textfiles import read_csv, read_text

    if path.suffix == ".jsonl":
        out: list[tuple[int, dict[str, str]]] = []
        keys: dict[str, None] = {}
        for line, text in enumerate(read_text(path).splitlines(), start=1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as err:
                raise InputFileError(path, f"not JSON: {err.msg}", line=line) from err
            if not isinstance(obj, dict):
                raise InputFileError(path, "not a JSON object", line=line, expected="{...}")
            row = {str(k): "" if v is None else str(v) for k, v in obj.items()}
            keys.update(dict.fromkeys(row))
            out.append((line, row))
        return list(keys), out
    header, rows = read_csv(path)
    return header, list(rows)


def read_datasets(path: Path) -> dict[str, str]:
    """Question id -> dataset from a CSV or JSONL with ``question_id`` (or ``id``) and
    ``dataset`` (or ``subject``)."""
    header, rows = _rows(path)
    qcol = next((c for c in ("question_id", "id") if c in header), None)
    dcol = next((c for c in ("dataset", "subject") if c in header), None)
    if qcol is None or dcol is None:
        raise InputFileError(
            path,
            f"columns {', '.join(header) or '(none)'}",
            line=1,
            field="header",
            expected="a question_id (or id) column and a dataset (or subject) column",
        )
    out: dict[str, str] = {}
    for line, row in rows:
        q, d = row.get(qcol, "").strip(), row.get(dcol, "").strip()
        if not q:
            raise InputFileError(path, "empty", line=line, field=qcol, expected="a question id")
        if q in out:
            raise InputFileError(
                path, f"question {q!r} listed twice", line=line, field=qcol, expected="once"
            )
        if d:
            out[q] = d
    return out


def read_models(path: Path) -> dict[str, ModelInfo]:
    """Model -> metadata from a CSV with ``model`` and any of ``family``, ``params_b``
    (billions), ``open_weight`` (true/false), ``pool``; empty cells are unknown."""
    header, rows = _rows(path)
    if "model" not in header:
        raise InputFileError(
            path,
            f"columns {', '.join(header) or '(none)'}",
            line=1,
            field="header",
            expected="a model column and any of family, params_b, open_weight, pool",
        )
    out: dict[str, ModelInfo] = {}
    for line, row in rows:
        m = row.get("model", "").strip()
        if not m:
            raise InputFileError(path, "empty", line=line, field="model", expected="a model name")
        if m in out:
            raise InputFileError(
                path, f"model {m!r} listed twice", line=line, field="model", expected="once"
            )
        params: float | None = None
        raw = row.get("params_b", "").strip()
        if raw:
            try:
                params = float(raw)
            except ValueError:
                params = math.nan
            if not (math.isfinite(params) and params > 0):
                raise InputFileError(
                    path,
                    f"{raw!r}",
                    line=line,
                    field="params_b",
                    expected="a positive number of parameters in billions",
                )
        ow: bool | None = None
        raw = row.get("open_weight", "").strip().lower()
        if raw:
            if raw not in _TRUE | _FALSE:
                raise InputFileError(
                    path, f"{raw!r}", line=line, field="open_weight", expected="true or false"
                )
            ow = raw in _TRUE
        out[m] = ModelInfo(
            family=row.get("family", "").strip() or None,
            params_b=params,
            open_weight=ow,
            pool=row.get("pool", "").strip() or None,
        )
    return out


def study_datasets(engine: Any, study: str) -> dict[str, str]:
    """Question key -> subject of a stored difficulty study (empty when it has none)."""
    from sqlmodel import Session

    from annotate.store import repo

    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None or st.id is None:
            return {}
        return {k: sub for k, sub in repo.question_subjects(s, st.id) if sub}


def find_metadata(
    matrix_path: Path | None, models: Path | None = None, questions: Path | None = None
) -> Metadata:
    """Metadata from the files given, else from ``models.csv`` and ``questions.jsonl`` /
    ``questions.csv`` beside the matrix (a study folder holds them)."""
    folder = None
    if matrix_path is not None:
        folder = matrix_path if matrix_path.is_dir() else matrix_path.parent
    if models is None and folder is not None and (folder / "models.csv").is_file():
        models = folder / "models.csv"
    if questions is None and folder is not None:
        for name in ("questions.jsonl", "questions.csv"):
            if (folder / name).is_file():
                questions = folder / name
                break
    sources: list[str] = []
    ds: dict[str, str] = {}
    ms: dict[str, ModelInfo] = {}
    if questions is not None:
        ds = read_datasets(questions)
        sources.append(str(questions))
    if models is not None:
        ms = read_models(models)
        sources.append(str(models))
    return Metadata(ds, ms, tuple(sources))


# ---------------------------------------------------------------------------
# The analyses
# ---------------------------------------------------------------------------


def _f(x: Any) -> float:
    """A float (NaN stays NaN, shown as '-' and written as null)."""
    return float(x)


def _pct(x: float) -> float:
    return 100.0 * float(x)


def _nanmean(x: npt.ArrayLike) -> float:
    a = np.asarray(x, dtype=np.float64)
    a = a[~np.isnan(a)]
    return float(a.mean()) if a.size else math.nan


def _nansd(x: npt.ArrayLike) -> float:
    a = np.asarray(x, dtype=np.float64)
    a = a[~np.isnan(a)]
    return float(a.std(ddof=1)) if a.size >= 2 else math.nan


def _nanmin(x: npt.ArrayLike) -> float:
    a = np.asarray(x, dtype=np.float64)
    a = a[~np.isnan(a)]
    return float(a.min()) if a.size else math.nan


def _nanmax(x: npt.ArrayLike) -> float:
    a = np.asarray(x, dtype=np.float64)
    a = a[~np.isnan(a)]
    return float(a.max()) if a.size else math.nan


_FAILED = "every refit failed (a model fails no retained question of the reduced matrix)"


@dataclass(frozen=True)
class _Ctx:
    A: npt.NDArray[np.float64]
    matrix: Matrix
    meta: Metadata
    alpha: float
    seed: int
    n_boot: int
    full: Any
    """The full-matrix EIPResult."""
    questions: tuple[str, ...] = ()
    """Question ids for the wrong-side view (``--question``); empty: the hardest."""


def _model_removal(c: _Ctx) -> Section:
    from ranking.eip_analyses import model_removal

    n_m = c.A.shape[1]
    s = Section("model-removal", "Removing k random models", "Table 5 / Fig. 10")
    ks = [k for k in (1, 5, 10, 15) if k <= n_m - 2]
    if not ks:
        s.skipped = f"needs at least 3 models, the matrix has {n_m}"
        return s
    r = model_removal(c.A, ks, n_trials=50, alpha=c.alpha, rng=c.seed)
    s.columns = [
        "k",
        "trials",
        "failed",
        "question_rho_mean",
        "question_rho_sd",
        "model_rho_mean",
        "model_rho_sd",
        "questions_dropped_mean",
        "fit_seconds",
        "time_reduction_pct",
    ]
    for i, k in enumerate(r.ks):
        s.rows.append(
            [
                int(k),
                r.n_trials,
                int(r.n_failed[i]),
                _nanmean(r.question_rho[i]),
                _nansd(r.question_rho[i]),
                _nanmean(r.model_rho[i]),
                _nansd(r.model_rho[i]),
                _nanmean(r.questions_dropped[i]),
                _f(r.seconds_mean[i]),
                _f(r.time_reduction[i]),
            ]
        )
    s.reasons = dict.fromkeys(s.columns, _FAILED)
    s.reasons["question_rho_sd"] = s.reasons["model_rho_sd"] = "fewer than 2 refits succeeded"
    s.notes.append(
        f"{r.n_trials} random removals per k; full-pool fit {r.full_seconds * 1000:.1f} ms "
        f"(mean of 5); k above n_models - 2 = {n_m - 2} left out"
    )
    s.notes.append(
        "paper (30 models x 35,550 questions, 50 trials): question rho 0.9978 / 0.9850 / "
        "0.9684 / 0.9382, model rho 0.9997 / 0.9988 / 0.9977 / 0.9934 for k = 1 / 5 / 10 / 15; "
        "time reduction 14 / 14 / 28 / 33%"
    )
    return s


def _leave_one_out(c: _Ctx) -> Section:
    from ranking.eip_analyses import leave_one_model_out

    n_q, n_m = c.A.shape
    s = Section("leave-one-out", "Leave one model out vs remove 5 at random", "Table 9")
    if n_m < 3:
        s.skipped = f"needs at least 3 models, the matrix has {n_m}"
        return s
    k = min(5, n_m - 2)
    r = leave_one_model_out(c.A, random_k=k, n_random=10, alpha=c.alpha, rng=c.seed)
    s.columns = [
        "scheme",
        "trials",
        "failed",
        "question_rho_mean",
        "question_rho_sd",
        "question_rho_max_drop",
        "model_rho_mean",
        "questions_removed_mean",
        "questions_removed_max",
        "questions_removed_pct",
    ]
    for name, q, m, d in (
        ("leave one out", r.loo_question_rho, r.loo_model_rho, r.loo_dropped),
        (f"random {k}", r.random_question_rho, r.random_model_rho, r.random_dropped),
    ):
        s.rows.append(
            [
                name,
                int(q.size),
                int(np.isnan(d).sum()),
                _nanmean(q),
                _nansd(q),
                1.0 - _nanmin(q),
                _nanmean(m),
                _nanmean(d),
                _nanmax(d),
                100.0 * _nanmean(d) / n_q,
            ]
        )
    s.reasons = dict.fromkeys(s.columns, _FAILED)
    s.reasons["question_rho_sd"] = "fewer than 2 refits succeeded"
    s.extra_csv["leave_one_out_models"] = (
        ["model", "question_rho", "model_rho", "questions_removed"],
        [
            [
                c.matrix.models[j],
                _f(r.loo_question_rho[j]),
                _f(r.loo_model_rho[j]),
                _f(r.loo_dropped[j]),
            ]
            for j in range(n_m)
        ],
    )
    s.extra["per_model"] = [
        {
            "model": c.matrix.models[j],
            "question_rho": _f(r.loo_question_rho[j]),
            "model_rho": _f(r.loo_model_rho[j]),
            "questions_removed": _f(r.loo_dropped[j]),
        }
        for j in range(n_m)
    ]
    s.notes.append(
        "paper: question rho 0.9978 +- 0.0024 (LOO) and 0.9863 +- 0.0076 (random 5); max drop "
        "0.0100 / 0.0271; model rho 0.9998 / 0.9987; questions removed 32.9 (max 103, 0.09%) / "
        "217.9 (max 307, 0.62%)"
    )
    return s


def _groups(c: _Ctx) -> npt.NDArray[np.str_] | None:
    qs = c.matrix.questions
    if not c.meta.datasets:
        return None
    missing = [q for q in qs if q not in c.meta.datasets]
    if missing:
        raise AnnotateError(
            f"{len(missing)} question(s) have no dataset in the question metadata "
            f"(first: {missing[0]!r}); give every question a dataset or none"
        )
    return np.array([c.meta.datasets[q] for q in qs])


def _datasets(c: _Ctx) -> Section:
    from ranking.eip_analyses import leave_datasets_out

    s = Section("datasets", "Leave one dataset out", "Table 10")
    g = _groups(c)
    if g is None:
        s.skipped = "no per-question dataset: give --questions FILE (question_id,dataset)"
        return s
    if np.unique(g).size < 2:
        s.skipped = "only one dataset"
        return s
    r = leave_datasets_out(c.A, g, alpha=c.alpha)
    s.columns = ["dataset", "questions", "model_rho"]
    s.rows = [
        [str(lab), int(n), _f(rho)]
        for lab, n, rho in zip(r.labels, r.n_questions, r.model_rho, strict=True)
    ]
    s.rows.append(["average", int(r.n_questions.sum()), _nanmean(r.model_rho)])
    s.rows.append(["sd", None, _nansd(r.model_rho)])
    s.reasons = {
        "model_rho": "the refit without this dataset failed",
        "questions": "the sd row has no question count",
    }
    s.notes.append(
        "paper (6 datasets): model rho 0.9604 (HellaSwag) ... 0.9973 (GPQA, GSM8k, BBH); "
        "average 0.9839, sd 0.0162"
    )
    return s


def _alpha(c: _Ctx) -> Section:
    from ranking.eip_analyses import alpha_convergence
    from ranking.errors import ConvergenceError, DegenerateDataError
    from ranking.robustness import alpha_sensitivity

    s = Section("alpha", "Damping factor: sensitivity and convergence", "Tables 14 and 8")
    try:
        r = alpha_sensitivity(c.A)
    except (ConvergenceError, DegenerateDataError) as err:  # at alpha = 1
        s.skipped = f"the reference fit at alpha = 1 failed: {err}"
        return s
    conv = alpha_convergence(c.A)
    s.columns = ["alpha", "model_rho", "question_rho", "iterations"]
    s.rows = [
        [_f(a), _f(m), _f(q), int(it)]
        for a, m, q, it in zip(r.alphas, r.model_rho, r.question_rho, r.iterations, strict=True)
    ]
    s.reasons = {"question_rho": "fewer than 2 retained questions or constant difficulty"}
    s.notes.append(f"against alpha = 1 ({r.reference_iterations} iterations)")
    s.notes.append(
        "paper: model rho 0.9911 / 0.9942 / 0.9978 / 0.9987 / 1 / 1, question rho 0.9976 / "
        "0.9985 / 0.9992 / 0.9998 / 1 / 1 for alpha = 0.5 / 0.6 / 0.7 / 0.85 / 0.95 / 0.99"
    )
    width = conv.deltas.shape[1]
    header = ["iteration"] + [f"alpha_{a:.1f}" for a in conv.alphas]
    table8 = [
        [t + 1] + [_f(conv.deltas[i, t]) for i in range(conv.alphas.size)] for t in range(width)
    ]
    s.extra_csv["alpha_convergence"] = (header, table8)
    s.extra["convergence"] = {
        "tol": conv.tol,
        "alphas": conv.alphas.tolist(),
        "iterations": [int(i) if i >= 0 else None for i in conv.iterations],
        "iterations_reason": "null: did not converge within 1000 iterations",
        "deltas": [
            [float(v) for v in conv.deltas[i, : max(int(conv.iterations[i]), 0)]]
            for i in range(conv.alphas.size)
        ],
    }
    s.notes.append(
        "L1 change per iteration for alpha = 0.1 ... 1.0 (tol 1e-12): alpha_convergence.csv; "
        "iterations "
        + ", ".join(
            f"{a:.1f}: {it if it >= 0 else 'no convergence'}"
            for a, it in zip(conv.alphas, conv.iterations, strict=True)
        )
        + " (paper: 5 at 0.1 ... about 11 at 1.0)"
    )
    return s


def _vs_accuracy(c: _Ctx) -> Section:
    from ranking.baselines import accuracy
    from ranking.eip_analyses import rank_comparison

    s = Section("vs-accuracy", "EIP vs accuracy: model ranks", "Table 11 / Figs. 12-13")
    acc = accuracy(c.A)
    r = rank_comparison(c.full.competency, acc)
    s.columns = ["metric", "value"]
    s.rows = [
        ["mean absolute rank change", _f(r.abs_change.mean())],
        ["median rank change", _f(np.median(r.abs_change))],
        ["max rank change", _f(r.abs_change.max())],
        ["Kendall tau", r.kendall_tau],
        ["Kendall p-value", r.kendall_p],
        [f"RBO (extrapolated, p = {r.rbo_p})", r.rbo],
        ["ICC(1) of the ranks", r.icc1],
    ]
    s.reasons = {"value": "undefined: every model has the same score on one side"}
    s.notes.append(
        "paper (30 models): mean 1.60, median 1.00, max 4.00, Kendall 0.876 (p < 0.001), "
        "RBO 0.896, ICC1 0.974"
    )
    counts = r.change_counts
    s.notes.append(
        "models per absolute rank change (Fig. 12): "
        + ", ".join(f"{i}: {int(n)}" for i, n in enumerate(counts) if n)
    )
    models = c.matrix.models
    s.extra_csv["vs_accuracy_models"] = (
        ["model", "eip_competency_100", "accuracy", "eip_rank", "accuracy_rank", "abs_change"],
        [
            [
                models[j],
                _f(c.full.competency_100[j]),
                _f(acc[j]),
                _f(r.rank_a[j]),
                _f(r.rank_b[j]),
                _f(r.abs_change[j]),
            ]
            for j in np.argsort(r.rank_b, kind="stable")
        ],
    )
    win_rows = []
    for w, arr in r.windows.items():
        for i, (lo, hi, mean, mx) in enumerate(arr):
            win_rows.append([w, f"{int(lo)}-{int(hi)}", _f(mean), _f(mx), _f(r.window_tau[w][i])])
    s.extra_csv["vs_accuracy_windows"] = (
        ["window", "accuracy_ranks", "mean_displacement", "max_displacement", "kendall_tau"],
        win_rows,
    )
    s.extra["windows"] = [
        dict(
            zip(
                [
                    "window",
                    "accuracy_ranks",
                    "mean_displacement",
                    "max_displacement",
                    "kendall_tau",
                ],
                row,
                strict=True,
            )
        )
        for row in win_rows
    ]
    s.extra["change_counts"] = [int(n) for n in counts]
    s.notes.append(
        "windowed displacement (Fig. 13, windows 1, 3, 5, 10 of accuracy ranks): "
        "vs_accuracy_windows.csv; paper, window 10: mean 1.0 / 1.4 / 2.4, max 2 / 3 / 4"
    )
    return s


def _scale(c: _Ctx) -> Section:
    from ranking.baselines import accuracy
    from ranking.compare import ranks

    s = Section("scale", "EIP and accuracy per model, and against parameter scale", "Figs. 3-4")
    acc = accuracy(c.A)
    r_eip, r_acc = ranks(c.full.competency), ranks(acc)
    params = [c.meta.models.get(m, ModelInfo()).params_b for m in c.matrix.models]
    s.columns = ["model", "params_b", "accuracy_pct", "competency_100", "eip_rank", "accuracy_rank"]
    order = np.argsort(r_eip, kind="stable")
    s.rows = [
        [
            c.matrix.models[j],
            _params(params[j]),
            _pct(acc[j]),
            _f(c.full.competency_100[j]),
            _f(r_eip[j]),
            _f(r_acc[j]),
        ]
        for j in order
    ]
    s.reasons = {"params_b": "no params_b in the model metadata"}
    known = [j for j, p in enumerate(params) if p is not None]
    if len(known) >= 3:
        logp = np.log([_params(params[j]) for j in known])
        s.extra["scale_rho"] = {
            "models_with_params": len(known),
            "eip_vs_log_params": _rho_or_nan(logp, c.full.competency[known]),
            "accuracy_vs_log_params": _rho_or_nan(logp, acc[known]),
        }
        s.notes.append(
            f"Spearman rho with log parameters over {len(known)} models: EIP "
            f"{cell(s.extra['scale_rho']['eip_vs_log_params'])}, accuracy "
            f"{cell(s.extra['scale_rho']['accuracy_vs_log_params'])}"
        )
    else:
        s.notes.append("fewer than 3 models have params_b: no correlation with scale")
    s.notes.append(
        "paper: EIP and accuracy mostly agree, with models that do better on hard questions "
        "moving up under EIP (Gemini-1.5-Pro over GPT-4o); both grow with scale"
    )
    return s


def _params(p: float | None) -> float:
    return math.nan if p is None else float(p)


def _rho_or_nan(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    from ranking.compare import spearman_rho
    from ranking.errors import RankingInputError

    try:
        return spearman_rho(x, y)
    except RankingInputError:
        return math.nan


def _tiers(c: _Ctx) -> Section:
    from ranking.eip_analyses import difficulty_tiers

    s = Section("tiers", "Correct answers per difficulty tier (leave-one-out)", "Figs. 5 and 11")
    if c.A.shape[1] < 3:
        s.skipped = "needs at least 3 models (each model is judged by the others' fit)"
        return s
    r = difficulty_tiers(c.A, alpha=c.alpha)
    acc = r.accuracy
    s.columns = ["model", "easy_pct", "medium_pct", "hard_pct", "easy_n", "medium_n", "hard_n"]
    order = np.argsort(-c.full.competency, kind="stable")
    s.rows = [
        [c.matrix.models[j], _pct(acc[j, 0]), _pct(acc[j, 1]), _pct(acc[j, 2])]
        + [_f(v) for v in r.solved[j]]
        for j in order
    ]
    s.reasons = dict.fromkeys(s.columns[1:], "the fit without this model failed")
    s.notes.append(
        "for each model, EIP is fitted without it and the questions are cut into three "
        "equal-count tiers by that difficulty; *_pct is the model's accuracy in the tier, "
        "*_n its correct answers there"
    )
    s.notes.append(
        "paper (App. F): Gemini-1.5-Pro solves 0.6% more hard questions than GPT-4o and ranks "
        "above it under EIP despite lower accuracy"
    )
    return s


def _group_agreement(c: _Ctx) -> Section:
    from ranking.eip_analyses import group_agreement

    s = Section("group-agreement", "Difficulty agreement between model groups", "Fig. 6")
    info = [c.meta.models.get(m, ModelInfo()) for m in c.matrix.models]
    groups: dict[str, list[int]] = {}
    opens = [j for j, i in enumerate(info) if i.open_weight is True]
    closed = [j for j, i in enumerate(info) if i.open_weight is False]
    if len(opens) >= 2 and len(closed) >= 2:
        groups["open-weight"], groups["proprietary"] = opens, closed
    sized = sorted((i.params_b, j) for j, i in enumerate(info) if i.params_b is not None)
    if len(sized) >= 6:
        for name, part in zip(
            ("small", "medium", "large"), np.array_split(np.arange(len(sized)), 3), strict=True
        ):
            groups[name] = sorted(sized[p][1] for p in part)
    if len(groups) < 2:
        s.skipped = (
            "needs open_weight (2 or more models each way) or params_b for 6 or more models "
            "in the model metadata"
        )
        return s
    groups["both"] = list(range(len(info)))  # the paper's Both (Whole): every model
    names = list(groups)
    r = group_agreement(c.A, [groups[n] for n in names], alpha=c.alpha)
    s.columns = ["group_a", "group_b", "questions", "spearman", "pearson", "kendall"]
    s.rows = [
        [names[i], names[j], int(n), _f(sp), _f(pe), _f(ke)]
        for (i, j), n, sp, pe, ke in zip(
            r.pairs, r.n_questions, r.spearman, r.pearson, r.kendall, strict=True
        )
    ]
    why = "a group's EIP fit failed or fewer than 3 questions are retained by both"
    s.reasons = dict.fromkeys(["spearman", "pearson", "kendall"], why)
    s.notes.append(
        "groups: "
        + "; ".join(f"{n} ({len(groups[n])} models)" for n in names)
        + "; size groups are params_b tertiles; both = every model; correlations over "
        "questions both fits retain"
    )
    s.notes.append(
        "paper (Fig. 6): open-weight vs both (all models) Spearman / Pearson / Kendall "
        "0.96 / 0.94 / 0.85, proprietary vs both 0.78 / 0.84 / 0.64; difficulty from "
        "different sizes agrees strongly too"
    )
    return s


def _pools(c: _Ctx) -> Section:
    from ranking.eip_analyses import pool_difficulty

    s = Section("pools", "Difficulty distribution per model pool; dead nodes", "Fig. 8")
    models = c.matrix.models
    info = [c.meta.models.get(m, ModelInfo()) for m in models]
    groups: dict[str, list[int]] = {}
    how = "the pool column of the model metadata"
    if any(i.pool for i in info):
        for j, i in enumerate(info):
            if i.pool:
                groups.setdefault(i.pool, []).append(j)
    elif sum(i.params_b is not None for i in info) >= 3:
        how = "params_b tertiles (no pool column)"
        sized = [(i.params_b, j) for j, i in enumerate(info) if i.params_b is not None]
        sized.sort()
        for name, part in zip(
            ("small", "medium", "large"), np.array_split(np.arange(len(sized)), 3), strict=True
        ):
            groups[name] = sorted(sized[p][1] for p in part)
    else:
        how = "no pool or params_b metadata: the whole pool only"
    groups["whole"] = list(range(len(models)))
    names = list(groups)
    r = pool_difficulty(c.A, [groups[n] for n in names], alpha=c.alpha)
    s.columns = [
        "pool",
        "models",
        "solved_by_all_pct",
        "solved_by_none_pct",
        "dead_pct",
        "median_difficulty_100",
    ]
    s.rows = [
        [
            n,
            int(r.n_models[i]),
            _pct(r.solved_by_all[i]),
            _pct(r.solved_by_none[i]),
            _pct(r.dead[i]),
            _f(r.median_difficulty[i]),
        ]
        for i, n in enumerate(names)
    ]
    s.reasons = {
        "median_difficulty_100": "EIP cannot be fitted on this pool (fewer than 2 models, or a "
        "model fails no retained question)"
    }
    s.notes.append(f"pools from {how}")
    s.notes.append(
        "paper: the large-only pool finds 58% of questions overly easy, small and medium over "
        "30% impossible; the whole pool keeps extremes below 3% (83% fewer dead nodes)"
    )
    edges = r.bin_edges
    s.extra_csv["pools_histogram"] = (
        ["pool"] + [f"{edges[b]:.0f}-{edges[b + 1]:.0f}" for b in range(edges.size - 1)],
        [[n] + [_f(v) for v in r.histogram[i]] for i, n in enumerate(names)],
    )
    s.extra["histogram"] = {
        "bin_edges": edges.tolist(),
        "share_of_questions": {n: [_f(v) for v in r.histogram[i]] for i, n in enumerate(names)},
    }
    return s


def _weak_inflation(c: _Ctx) -> Section:
    from ranking.eip_analyses import weak_model_inflation

    n_m = c.A.shape[1]
    s = Section("weak-inflation", "Weak-model inflation", "Table 15")
    n_weak = max(1, min(10, n_m // 3))
    n_top, n_bottom = round(n_m * 2 / 3), n_m - round(n_m * 2 / 3)
    r = weak_model_inflation(
        c.A, n_weak=n_weak, copies=2, n_top=n_top, n_bottom=max(n_bottom, 1), alpha=c.alpha
    )
    s.columns = ["statistic", "value"]
    s.rows = [
        [
            f"Pearson r (question difficulties; {n_m} vs {n_m + 2 * n_weak} models)",
            r.difficulty_pearson,
        ],
        [f"Spearman rho (model ranks; original {n_m} models)", r.model_rho],
        [f"unchanged in top-{r.n_top} models", f"{r.top_unchanged}/{r.n_top}"],
        [f"max absolute rank change among bottom-{r.n_bottom} models", r.bottom_max_change],
    ]
    s.reasons = {"value": "fewer than 2 retained questions"}
    s.notes.append(
        f"the {n_weak} weakest models by EIP competency, 2 copies each: "
        + ", ".join(c.matrix.models[j] for j in r.weak)
    )
    s.notes.append(
        "paper (10 weakest x 2, 30 -> 50 models): Pearson 0.9972, rho 0.9969, top-20 unchanged "
        "20/20, bottom-10 max change 2"
    )
    return s


def _wrong_side(c: _Ctx) -> Section:
    from ranking.eip_analyses import wrong_side_shares

    chosen = list(c.questions)
    title = (
        "Why these questions are hard: wrong-side contributions"
        if chosen
        else "Wrong-side contribution of the hardest question"
    )
    s = Section("wrong-side", title, "Table 16")
    keep = c.full.retained
    if not keep.any():
        s.skipped = "no retained question"
        return s
    index = {q: i for i, q in enumerate(c.matrix.questions)}
    unknown = [q for q in chosen if q not in index]
    if unknown:
        raise AnnotateError(
            f"--question {unknown[0]!r} is not a question of the matrix "
            f"(ids look like {c.matrix.questions[0]!r})"
        )
    targets = [index[q] for q in chosen] or [
        int(np.flatnonzero(keep)[np.argmax(c.full.difficulty[keep])])
    ]
    shares = wrong_side_shares(c.A, c.full)
    fail = np.nan_to_num(1.0 - c.A)
    F = fail[keep].sum(axis=0)
    s.columns = ["question", "model", "competency_100", "F_m", "share_pct"]
    s.extra["questions"] = []
    for q in targets:
        name = c.matrix.questions[q]
        if not keep[q]:
            why = "solved by every model" if c.full.solved_by_all[q] else "solved by no model"
            s.notes.append(f"question {name!r} is {why}: left out of the propagation")
            continue
        failing = np.flatnonzero(shares[q] > 0)
        failing = failing[np.argsort(-shares[q, failing], kind="stable")]
        s.rows += [
            [name, c.matrix.models[j], _f(c.full.competency_100[j]), _f(F[j]), _pct(shares[q, j])]
            for j in failing
        ]
        weak = failing[np.argsort(c.full.competency[failing], kind="stable")][
            : max(1, failing.size // 2)
        ]
        strongest = failing[np.argmax(c.full.competency[failing])]
        s.notes.append(
            f"question {name!r}: difficulty_100 {c.full.difficulty_100[q]:.2f}, "
            f"{failing.size} failing models; the {weak.size} weakest hold "
            f"{_pct(shares[q, weak].sum()):.2f}%, the strongest "
            f"({c.matrix.models[strongest]}) {_pct(shares[q, strongest]):.2f}%"
        )
        s.extra["questions"].append(
            {
                "question": name,
                "difficulty_100": _f(c.full.difficulty_100[q]),
                "failing_models": int(failing.size),
            }
        )
    s.notes.append(
        "share = (1 - score) pi_m / F(m) normalised over the failing models (eq. 2); F(m) is "
        "the failure total over retained questions. A strong model holding most of an easy "
        "question's difficulty is worth a look (label error, contamination of the others)"
    )
    s.notes.append(
        "paper (question 14703, 15 failing models): GPT-4o 32.69%, the 7 weakest failing "
        "models together 18.60%"
    )
    return s


def _families(c: _Ctx) -> Section:
    from ranking.eip_analyses import family_dominated, wrong_side_shares

    s = Section("families", "Family-dominated questions", "Table 17")
    fams = [c.meta.models.get(m, ModelInfo()).family for m in c.matrix.models]
    if not any(fams):
        s.skipped = "no model families: give --models FILE (model,family,...)"
        return s
    labels = sorted({f or "(unknown)" for f in fams})
    idx = np.array([labels.index(f or "(unknown)") for f in fams])
    shares = wrong_side_shares(c.A, c.full)
    failing = np.nan_to_num(c.A, nan=1.0) < 1.0
    dom = family_dominated(shares, failing, idx, threshold=0.9, min_members=2)
    n_q = c.A.shape[0]
    s.columns = ["family", "models", "dominated_questions", "share_pct"]
    for k, lab in enumerate(labels):
        s.rows.append(
            [lab, int(np.sum(idx == k)), int(np.sum(dom == k)), 100.0 * np.sum(dom == k) / n_q]
        )
    hit = dom >= 0
    s.rows.append(["total", len(fams), int(hit.sum()), 100.0 * hit.sum() / n_q])
    d100 = c.full.difficulty_100
    order = np.argsort(-d100, kind="stable")
    hardness_rank = np.empty(n_q, dtype=np.int64)
    hardness_rank[order] = np.arange(1, n_q + 1)
    top = max(1, round(n_q * 1000 / 35550))
    if hit.any():
        s.notes.append(
            f"dominated questions' difficulty_100: median {np.median(d100[hit]):.2f}, max "
            f"{d100[hit].max():.2f}; {int(np.sum(hit & (hardness_rank <= top)))} among the "
            f"hardest {top} (the paper's top 1,000 of 35,550, scaled)"
        )
    s.notes.append(
        "a question is dominated when one family holds more than 90% of its wrong-side mass "
        "with at least 2 failing members"
    )
    s.notes.append(
        "paper (30 models): 246 of 35,550 (0.69%): Qwen 232, Llama 13, Phi 1; none in the "
        "hardest 1,000; median 11.73, max 23.07"
    )
    s.extra["dominated_questions"] = [
        {
            "question": c.matrix.questions[i],
            "family": labels[int(dom[i])],
            "difficulty_100": _f(d100[i]),
        }
        for i in np.flatnonzero(hit)
    ]
    s.extra_csv["families_questions"] = (
        ["question", "family", "difficulty_100"],
        [[c.matrix.questions[i], labels[int(dom[i])], _f(d100[i])] for i in np.flatnonzero(hit)],
    )
    return s


def _super_model(c: _Ctx) -> Section:
    from ranking.eip_analyses import super_model_addition

    s = Section("super-model", "Adding a super model", "Table 18")
    r = super_model_addition(c.A, alpha=c.alpha, rng=c.seed)
    s.columns = [
        "super_model_accuracy_pct",
        "model_rho",
        "mean_abs_rank_change",
        "max_abs_rank_change",
        "super_model_rank",
    ]
    s.rows = [
        [_pct(p), _f(rho), _f(mc), _f(xc), _f(sr)]
        for p, rho, mc, xc, sr in zip(
            r.accuracies, r.model_rho, r.mean_change, r.max_change, r.super_rank, strict=True
        )
    ]
    s.reasons = dict.fromkeys(s.columns[1:], "the refit with the super model failed")
    s.notes.append(
        "the synthetic model solves a random share of the questions; ranks over the original models"
    )
    s.notes.append(
        "paper: rho 0.9964 / 0.9956 / 0.9973 / 0.9973, mean change 0.40 / 0.47 / 0.33 / 0.33, "
        "max 2 for 99 / 95 / 90 / 80%"
    )
    return s


def _anchors(c: _Ctx) -> Section:
    from ranking.errors import ConvergenceError, DegenerateDataError
    from ranking.robustness import anchor_sampling

    s = Section("anchors", "Decile-stratified anchor sampling", "Table 20")
    n_q = c.A.shape[0]
    if n_q < 10:
        s.skipped = f"needs at least 10 questions (one per decile), the matrix has {n_q}"
        return s
    s.columns = ["anchor_rate_pct", "anchors", "trials", "model_rho", "mean_abs_rank_change"]
    for rate in (0.005, 0.01, 0.05):
        try:
            r = anchor_sampling(c.A, [rate], n_trials=20, alpha=c.alpha, rng=c.seed)
        except (ConvergenceError, DegenerateDataError):
            per = math.ceil(rate * n_q / 10)
            s.rows.append([_pct(rate), per * 10, 20, math.nan, math.nan])
            continue
        s.rows.append(
            [
                _pct(rate),
                int(r.n_anchors[0]),
                20,
                _f(r.model_rho_mean[0]),
                _f(r.rank_change_mean[0]),
            ]
        )
    s.reasons = dict.fromkeys(
        ["model_rho", "mean_abs_rank_change"],
        "a fit on an anchor sample failed (too few anchors: a model fails none of them)",
    )
    s.notes.append(
        f"20 samples per rate; ceil(rate x {n_q} / 10) anchors per difficulty decile, so "
        "small matrices give the same anchor count at several rates"
    )
    s.notes.append(
        "paper (35,550 questions): 180 / 360 / 1,780 anchors, rho 0.8901 / 0.9199 / 0.9729, "
        "mean |d rank| 3.07 / 2.47 / 1.40"
    )
    return s


def _bootstrap(c: _Ctx) -> Section:
    from ranking.eip_analyses import eip_bootstrap

    s = Section("bootstrap", "Bootstrap intervals over questions (beyond the paper)", "-")
    if c.n_boot < 1:
        s.skipped = "--boot 0"
        return s
    r = eip_bootstrap(c.A, n_boot=c.n_boot, alpha=c.alpha, rng=c.seed)
    scale = 100.0 / float(r.competency.max())
    order = np.argsort(-r.competency, kind="stable")
    s.columns = ["model", "competency_100", "low", "high", "rank_low", "rank_high"]
    s.rows = [
        [
            c.matrix.models[j],
            _f(r.competency[j] * scale),
            _f(r.competency_low[j] * scale),
            _f(r.competency_high[j] * scale),
            _f(r.rank_low[j]),
            _f(r.rank_high[j]),
        ]
        for j in order
    ]
    s.reasons = dict.fromkeys(s.columns[2:], "every bootstrap refit failed")
    s.notes.append(
        f"{r.n_boot} resamples of the questions ({r.n_failed} failed fits left out); "
        f"{round(100 * r.level)}% percentile intervals; competency on the 0-100 scale of the "
        "full fit; per-question intervals of difficulty_100 in bootstrap_questions.csv"
    )
    qorder = np.argsort(-r.difficulty_100, kind="stable")
    s.extra_csv["bootstrap_questions"] = (
        ["question", "difficulty_100", "low", "high"],
        [
            [
                c.matrix.questions[i],
                _f(r.difficulty_100[i]),
                _f(r.difficulty_low[i]),
                _f(r.difficulty_high[i]),
            ]
            for i in qorder
        ],
    )
    s.extra["questions"] = [
        {
            "question": c.matrix.questions[i],
            "difficulty_100": _f(r.difficulty_100[i]),
            "low": _f(r.difficulty_low[i]),
            "high": _f(r.difficulty_high[i]),
        }
        for i in qorder
    ]
    s.reasons.update(
        {
            "low": "drawn by fewer than 2 resamples or every refit failed",
            "high": "drawn by fewer than 2 resamples or every refit failed",
        }
    )
    return s


RUNNERS: dict[str, Callable[[_Ctx], Section]] = {
    "model-removal": _model_removal,
    "leave-one-out": _leave_one_out,
    "datasets": _datasets,
    "alpha": _alpha,
    "vs-accuracy": _vs_accuracy,
    "scale": _scale,
    "tiers": _tiers,
    "group-agreement": _group_agreement,
    "pools": _pools,
    "weak-inflation": _weak_inflation,
    "wrong-side": _wrong_side,
    "families": _families,
    "super-model": _super_model,
    "anchors": _anchors,
    "bootstrap": _bootstrap,
}


def analyze(
    matrix: Matrix,
    *,
    source: str,
    metadata: Metadata | None = None,
    only: Sequence[str] | None = None,
    alpha: float = 0.85,
    seed: int = 0,
    n_boot: int = 200,
    anchor_rate: float | None = None,
    questions: Sequence[str] = (),
    threads: int | None = 1,
    progress: Callable[[int, int], None] | None = None,
) -> Analysis:
    """Run the analyses named in ``only`` (default: all of :data:`ANALYSES`).

    BLAS runs on ``threads`` threads (default 1, None leaves it alone): the analyses are
    hundreds of small matrix-vector products, which a threaded BLAS only slows down on
    a small busy machine (6x on 2 cores at load 5: ``benchmarks/bench_analyze.py``).

    Raises
    ------
    AnnotateError
        An unknown analysis name, or the full matrix cannot be fitted by EIP (the
        message names the question or model).
    """

    names = list(ANALYSES) if not only else list(dict.fromkeys(only))
    unknown = [n for n in names if n not in RUNNERS]
    if unknown:
        raise AnnotateError(
            f"unknown analysis {unknown[0]!r}; expected one of {', '.join(ANALYSES)}"
        )
    from annotate.services.report import blas_threads

    with blas_threads(threads):
        return _analyze(
            matrix, source, metadata, names, alpha, seed, n_boot, anchor_rate, questions, progress
        )


def _analyze(
    matrix: Matrix,
    source: str,
    metadata: Metadata | None,
    names: list[str],
    alpha: float,
    seed: int,
    n_boot: int,
    anchor_rate: float | None,
    questions: Sequence[str],
    progress: Callable[[int, int], None] | None,
) -> Analysis:
    from ranking.eip import eip
    from ranking.errors import ConvergenceError, RankingInputError

    meta = metadata or Metadata()
    A = np.asarray(matrix.scores, dtype=np.float64)
    try:
        full = eip(A, alpha=alpha)
    except (RankingInputError, ConvergenceError) as err:
        from annotate.services.estimators import _named

        raise AnnotateError(
            f"EIP cannot fit this matrix: {_named(err, matrix)}", title="Cannot analyze"
        ) from err
    ctx = _Ctx(A, matrix, meta, alpha, seed, n_boot, full, tuple(questions))
    sections = []
    for i, name in enumerate(names):
        if progress is not None:
            progress(i, len(names))
        t0 = time.perf_counter()
        sec = RUNNERS[name](ctx)
        sec.seconds = time.perf_counter() - t0
        sections.append(sec)
    if progress is not None:
        progress(len(names), len(names))
    anchors = None
    if anchor_rate is not None:
        from ranking.eip_analyses import anchor_questions

        if not 0 < anchor_rate <= 1:
            raise AnnotateError(f"--anchor-rate must be in (0, 1], got {anchor_rate}")
        if A.shape[0] < 10:
            raise AnnotateError(
                f"anchors need at least 10 questions (one per decile), got {A.shape[0]}"
            )
        rows = anchor_questions(full.difficulty, anchor_rate, rng=seed)
        anchors = [matrix.questions[i] for i in rows]
    settings = {"alpha": alpha, "seed": seed, "boot": n_boot, "analyses": names}
    return Analysis(source, matrix, meta, sections, settings, anchors)


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------


def cell(v: Any) -> str:
    """A table cell as text: '-' for None or NaN, 4 significant decimals for floats."""
    if v is None:
        return "-"
    if isinstance(v, float | np.floating):
        if not math.isfinite(float(v)):
            return "-"
        x = float(v)
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e6):
            return f"{x:.3e}"
        return f"{x:.4f}"
    return str(v)


def _csv_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float | np.floating):
        return repr(float(v)) if math.isfinite(float(v)) else ""
    return str(v)


def write_anchors(a: Analysis, path: Path) -> list[Path]:
    """The anchor questions as ``question_id`` CSV at ``path``; when ids look like
    lm-evaluation-harness ``<task>/<doc_id>``, also ``<stem>.samples.json`` for the
    harness's ``--samples`` option (task -> doc ids)."""
    from annotate.services.paths import inside, output_folder
    from annotate.services.report_files import write_csv

    if a.anchors is None:
        return []
    if path.exists() and path.is_dir():
        raise AnnotateError(f"--export-anchors {path} is a folder; give a file name")
    folder = output_folder(path.parent if str(path.parent) else Path("."))
    target = inside(folder, path.name)
    files = [write_csv(target, ["question_id"], [[q] for q in a.anchors])]
    tasks: dict[str, list[int]] = {}
    for q in a.anchors:
        task, _, doc = q.rpartition("/")
        if not task or not doc.isdigit():
            tasks = {}
            break
        tasks.setdefault(task, []).append(int(doc))
    if tasks:
        side = inside(folder, f"{target.stem}.samples.json")
        side.write_text(json.dumps(tasks, indent=1) + "\n", encoding="utf-8")
        files.append(side)
    return files


def write_analysis(a: Analysis, folder: Path, *, plots: bool = True) -> list[Path]:
    """Write ``analysis.md``, ``<section>.csv`` (and the sections' extra CSVs) and PNGs."""
    from annotate.services.paths import inside, output_folder
    from annotate.services.report_files import md_escape, write_csv

    folder = output_folder(folder)
    files: list[Path] = []
    md = [
        "# EIP robustness analyses",
        "",
        f"Matrix: {md_escape(a.source)} ({len(a.matrix.questions)} questions x "
        f"{len(a.matrix.models)} models); EIP alpha {a.settings['alpha']}, seed "
        f"{a.settings['seed']}.",
    ]
    if a.metadata.sources:
        md.append("Metadata: " + ", ".join(md_escape(s) for s in a.metadata.sources) + ".")
    for note in a.matrix.notes:
        md.append(md_escape(note))
    md.append("")
    md.append(
        "The paper's numbers (EIP, ICLR 2026; 30 models x 35,550 questions) are given "
        "under each table for the shape of the result; the data differ."
    )
    for s in a.sections:
        md += ["", f"## {md_escape(s.title)} ({md_escape(s.paper)})", ""]
        if s.skipped:
            md.append(f"Not run: {md_escape(s.skipped)}.")
            continue
        md.append("| " + " | ".join(md_escape(c) for c in s.columns) + " |")
        md.append("|" + "---|" * len(s.columns))
        for r in s.rows:
            md.append("| " + " | ".join(md_escape(cell(v)) for v in r) + " |")
        md.append("")
        for text in [*s.notes, s.undefined_note()]:
            if text:
                md.append(f"- {md_escape(text)}")
        md.append(f"- {s.seconds:.2f} s")
        files.append(
            write_csv(
                inside(folder, f"{s.key}.csv"),
                s.columns,
                [[_csv_cell(v) for v in r] for r in s.rows],
            )
        )
        for name, (header, rows) in s.extra_csv.items():
            files.append(
                write_csv(
                    inside(folder, f"{name}.csv"), header, [[_csv_cell(v) for v in r] for r in rows]
                )
            )
    if plots:
        from annotate.services.analyze_plots import write_plots

        pngs = write_plots(a, folder)
        files += pngs
        if pngs:
            md += ["", "## Figures", ""] + [f"![{p.stem}]({p.name})" for p in pngs]
    md_path = inside(folder, "analysis.md")
    md_path.write_text("\n".join(md) + "\n", encoding="utf-8")
    return [md_path, *files]


def read_csv_rows(path: Path) -> list[list[str]]:
    """A written CSV back as rows (for tests)."""
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))
