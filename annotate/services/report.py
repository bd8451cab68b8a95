"""Human-alignment report of a difficulty study (EIP paper, sec. 3.3, App. H.3, Table 2, Fig. 7).

The report answers: how well does each difficulty estimator (EIP, Simple Rank,
1PL, 2PL, MIRT, and difficulty columns a user supplies) agree with the people
who judged "which of these two questions is harder"?

Pipeline (store -> arrays -> :mod:`ranking` -> frozen dataclasses):

1. the study's pairs, current votes and response matrix come from the store
   (:func:`annotate.services.arrays.vote_arrays`,
   :func:`annotate.services.arrays.response_matrix`, ``repo.study_contents``);
2. each estimator is run on the response matrix
   (:func:`annotate.services.estimators.estimate`), and again on each model pool
   named in the study's ``models.csv`` (column ``pool``) for the subgroup
   analysis of Figure 7;
3. :func:`ranking.alignment.alignment_report` gives predictions, individual and
   consensus alignment (eq. 9, with its near-tie rule) and Cohen's kappa with
   bootstrap intervals over pairs and over annotators;
4. :mod:`ranking.agreement` gives the agreement among people
   (:func:`ranking.agreement.agreement_bootstrap`: Fleiss' kappa and
   Krippendorff's alpha with skips as missing, with bootstrap intervals over
   pairs and over annotators; pairwise Cohen's kappa; leave-one-out agreement);
5. :func:`ranking.alignment.human_difficulty_scale` fits a human difficulty per
   question and correlates every estimator with it.

The statistics come from :mod:`ranking`: this module loads arrays, calls those
functions, pools per-group results by n-weighted means (correlations, annotator
reliability) and assembles the frozen dataclasses of
:mod:`annotate.services.report_model` (which also gives the JSON of ``--json``). The text
tables are built in :mod:`annotate.services.report_view` and the files (Markdown, CSVs,
plots) written by :mod:`annotate.services.report_files`; their public functions are
re-exported here.

Undefined statistics carry ``None`` and a reason, never NaN or 0. An estimator
that cannot be computed, or a human scale that cannot be fitted, is reported
with its reason and the rest of the report goes on.

The numerical work runs with BLAS limited to one thread (``blas_threads``): on a
small loaded machine the bootstrap matrix products are several times faster
that way than with OpenBLAS's default thread pool.
"""

from __future__ import annotations

import contextvars
import dataclasses
import importlib.util
import json
import math
import os
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.errors import AnnotateError, InputFileError, StudyNotFoundError
from annotate.services.arena_analysis import fit_problem
from annotate.services.arrays import response_matrix, vote_arrays
from annotate.services.estimators import Matrix, estimate
from annotate.services.json_ready import kept_active, warm_float_reprs
from annotate.services.monitoring import StudyMonitor
from annotate.services.notes import report_lines
from annotate.services.quality import study_quality, with_alignment
from annotate.services.report_files import (
    WrittenReport,
    md_escape,
    pairwise_steps,
    write_arena_report,
    write_report,
)
from annotate.services.report_model import (
    RESAMPLE_LABELS,
    Agreement,
    AnnotatorAgreement,
    AnnotatorAlignment,
    ArenaReport,
    Correlation,
    HumanAlignmentReport,
    HumanScale,
    MethodAlignment,
    NearTies,
    PairedTestRow,
    PairRow,
    QuestionScale,
    ScaleGroup,
    Subgroup,
)
from annotate.services.report_prefetch import Prefetch
from annotate.services.report_view import (
    EXACT_P_MAX_N,
    build_view,
    ci_text,
    num,
    pct,
    value_text,
)
from annotate.store import repo
from annotate.views import MonitorSnapshot, ReportView, StudyQuality
from ranking.agreement import (
    RESAMPLE_SCHEMES,
    AgreementBootstrapResult,
    AgreementResult,
    BootstrapDistribution,
    Resample,
    agreement_bootstrap,
    leave_one_out_agreement,
    pairwise_cohen_matrix,
)
from ranking.alignment import (
    FIRST_HARDER,
    SECOND_HARDER,
    SKIP,
    AlignmentReport,
    Estimate,
    Interval,
    alignment_report,
    human_difficulty_scale,
    vote_consensus,
)
from ranking.errors import ConvergenceError, RankingInputError
from ranking.graph import component_members, connected_components

__all__ = [
    "ESTIMATORS",
    "LABELS",
    "POOL_ORDER",
    "PRED_WORDS",
    "SUBGROUP_METHODS",
    "WHOLE",
    "WrittenReport",
    "adaptive_status",
    "arena_report",
    "blas_threads",
    "build_view",
    "ci_text",
    "default_study",
    "human_alignment_report",
    "md_escape",
    "num",
    "pct",
    "read_difficulty_file",
    "report_view",
    "study_kind",
    "value_text",
    "write_arena_report",
    "write_report",
]
"""Public names; the text helpers live in :mod:`annotate.services.report_view`,
WrittenReport, md_escape and write_report in :mod:`annotate.services.report_files`, and
are re-exported here. The report's data types are in :mod:`annotate.services.report_model`."""

_T = TypeVar("_T")
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

ESTIMATORS = ("eip", "simple", "irt-1pl", "irt-2pl", "mirt")
"""Estimators computed from the study's response matrix, in report order."""
LABELS = {
    "eip": "EIP",
    "simple": "Simple Rank",
    "irt-1pl": "1PL-IRT",
    "irt-2pl": "2PL-IRT",
    "mirt": "MIRT",
}
"""Display names (Table 2 of the paper)."""
SUBGROUP_METHODS = ("eip",)
"""Estimators recomputed on each model pool (Figure 7 shows EIP)."""
POOL_ORDER = ("small", "medium", "large")
WHOLE = "whole"
PRED_WORDS = {FIRST_HARDER: "first", SECOND_HARDER: "second", 0: "tie"}


# ---------------------------------------------------------------------------
# helpers


@contextmanager
def blas_threads(n: int | None) -> Iterator[None]:
    """Limit BLAS threads to ``n`` inside the block (no-op for None or without threadpoolctl)."""
    if n is None:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        yield
        return
    with threadpool_limits(limits=n, user_api="blas"):
        yield


def _mask(x: Any) -> npt.NDArray[np.bool_]:
    """The full boolean mask of a masked array (numpy.ma is untyped)."""
    m: npt.NDArray[np.bool_] = np.asarray(np.ma.getmaskarray(x), dtype=np.bool_)
    return m


def _undefined(reason: str) -> Estimate:
    return Estimate(None, reason, None, None)


def _none(x: Any) -> float | None:
    if x is None or x is np.ma.masked:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def default_study(engine: Engine) -> str:
    """The only difficulty study with votes; AnnotateError listing them otherwise."""
    with Session(engine) as s:
        rows = [r for r in repo.list_studies(s) if r.kind == "difficulty"]
    voted = [r for r in rows if r.votes > 0]
    if len(voted) == 1:
        return voted[0].name
    if not voted:
        names = ", ".join(r.name for r in rows) or "none"
        raise AnnotateError(
            f"no difficulty study has votes yet (difficulty studies: {names}); "
            "collect votes first or name one with --study NAME",
            title="No votes",
        )
    listing = ", ".join(f"{r.name} ({r.votes} votes)" for r in voted)
    raise AnnotateError(
        f"several difficulty studies have votes: {listing}; choose one with --study NAME",
        title="Which study?",
    )


def read_difficulty_file(path: Path) -> tuple[list[str], dict[str, dict[str, float]]]:
    """Read ``question_id,<name>,...``: one difficulty column per method, higher = harder.

    Empty cells and ``NA`` are missing. Returns the column names and
    ``{column: {question_id: value}}``.
    """
    import pandas as pd

    if not path.is_file():
        raise InputFileError(path, "no such file", expected="a CSV file question_id,<name>,...")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, UnicodeDecodeError) as err:
        raise InputFileError(path, f"cannot read as CSV: {err}") from err
    if "question_id" not in df.columns:
        raise InputFileError(
            path, f"header {list(df.columns)!r}", line=1, expected="a question_id column"
        )
    names = [c for c in df.columns if c != "question_id"]
    if not names:
        raise InputFileError(
            path, "only a question_id column", line=1, expected="question_id,<name>,..."
        )
    dup = df["question_id"][df["question_id"].duplicated()]
    if len(dup):
        line = int(dup.index[0]) + 2
        raise InputFileError(path, f"{dup.iloc[0]!r} repeated", line=line, field="question_id")
    out: dict[str, dict[str, float]] = {}
    for name in names:
        col: dict[str, float] = {}
        for i, (q, raw) in enumerate(zip(df["question_id"], df[name], strict=True)):
            cell = raw.strip()
            if cell in ("", "NA", "NaN", "nan"):
                continue
            try:
                v = float(cell)
            except ValueError as err:
                raise InputFileError(
                    path, f"{cell!r}", line=i + 2, field=name, expected="a number"
                ) from err
            if math.isnan(v):
                continue
            col[str(q)] = v
        out[str(name)] = col
    return names, out


# ---------------------------------------------------------------------------
# loading


@dataclass(frozen=True)
class _StudyData:
    name: str
    title: str
    question_keys: list[str]
    subjects: list[str]
    pair_keys: list[str]
    pairs: IntArray  # (P, 2) question indices
    vote_pair: IntArray
    vote_annotator: IntArray
    vote_code: IntArray
    annotators: list[str]
    matrix: Matrix | None  # rows aligned with question_keys (NaN rows for unscored)
    pools: dict[str, list[str]]


_Read = tuple[npt.NDArray[np.int64], dict[int, str]]
"""What :meth:`StudyMonitor.current_votes` returns."""


def _vote_columns(
    raw: npt.NDArray[np.int64],
    names: dict[int, str],
    items: list[tuple[int, str]],
    pair_keys: list[str],
) -> tuple[IntArray, IntArray, IntArray, list[str]]:
    """The report's votes from ``raw`` (:meth:`StudyMonitor.current_votes`' rows): each
    kept vote's pair, annotator and code (int64), and the annotators' names; what
    :func:`_load_votes` took from :func:`annotate.services.arrays.arrays_from_codes`'
    arrays, made directly.

    The same numbers: a vote's pair through one table from item id to pair (-1: an item
    that is no pair), its annotator as the rank of its id among the distinct ids (the
    position :func:`arrays_from_codes` finds by ``np.searchsorted`` in ``np.unique``'s
    ids), by counting the ids when they are small (else ``np.unique``), its code cast to
    int8 first as there; the votes kept are those with a pair and a code 0, 1 or 2.
    """
    pi = {k: i for i, k in enumerate(pair_keys)}
    n = raw.shape[0]
    # sized for the votes' item ids too: a vote on an item not among ``items`` (a database
    # edited by hand) maps as the others missing from it, not an IndexError
    top_item = max(max((i for i, _ in items), default=0), int(raw[:, 0].max()) if n else 0)
    pair_of_item = np.full(top_item + 1, -1, dtype=np.int64)
    # arrays_from_codes' lookup maps an id missing from items to the first item
    if items:
        pair_of_item[:] = pi.get(items[0][1], -1)
    for i, k in items:
        pair_of_item[i] = pi.get(k, -1)
    ids = raw[:, 1]
    top = int(ids.max()) if n else -1
    if n and int(ids.min()) >= 0 and top <= 4 * n + 65536:
        seen = np.bincount(ids, minlength=top + 1) > 0
        ann_ids = np.flatnonzero(seen)
        rank = np.cumsum(seen) - 1  # rank[id]: the id's position among the distinct ids
        annotator = rank[ids]
    else:
        ann_ids = np.unique(ids)
        annotator = np.searchsorted(ann_ids, ids).astype(np.int64)
    vp = pair_of_item[raw[:, 0]] if n else np.zeros(0, np.int64)
    codes8 = raw[:, 2].astype(np.int8)
    keep = (vp >= 0) & np.isin(codes8, (SKIP, FIRST_HARDER, SECOND_HARDER))
    codes = codes8.astype(np.int64)
    if not keep.all():
        vp, annotator, codes = vp[keep], annotator[keep], codes[keep]
    return vp, annotator, codes, [names[int(a)] for a in ann_ids]


def _load(
    engine: Engine,
    study: str,
    monitor: StudyMonitor | None = None,
) -> _StudyData:
    """The study's data (its votes read through ``monitor`` when given)."""
    static = _load_study(engine, study)
    return _load_votes(engine, static, monitor)


@dataclass(frozen=True)
class _Static:
    """What :func:`_load` reads besides the votes: the study, its items, and its data with
    no vote (enough for the estimators, :func:`_columns`)."""

    study: repo.StudyRow
    items: list[tuple[int, str]]
    data: _StudyData


def _load_study(engine: Engine, study: str) -> _Static:
    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None:
            raise StudyNotFoundError(study, repo.study_names(s))
        if st.kind != "difficulty":
            raise AnnotateError(
                f"study {study!r} is an {st.kind} study; the human-alignment report needs a "
                "difficulty study (question pairs)",
                title="Not a difficulty study",
            )
        contents = repo.study_contents(s, st.id)
        items = repo.item_keys(s, st.id)
    rm = response_matrix(engine, study)
    qkeys = [q[0] for q in contents.questions]
    qsubj = [q[1] for q in contents.questions]
    qi = {k: i for i, k in enumerate(qkeys)}
    pair_keys = [p[0] for p in contents.pairs]
    pairs = np.array([[qi[a], qi[b]] for _, a, b in contents.pairs], dtype=np.int64).reshape(-1, 2)
    matrix = None
    if rm.models and np.isfinite(rm.scores).any():
        rows = {k: i for i, k in enumerate(rm.questions)}
        A = np.full((len(qkeys), len(rm.models)), np.nan)
        for k, i in qi.items():
            if k in rows:
                A[i] = rm.scores[rows[k]]
        matrix = Matrix(A, qkeys, list(rm.models))
    pools: dict[str, list[str]] = {}
    for model, meta_json in contents.models:
        try:
            meta = json.loads(meta_json)
        except json.JSONDecodeError:
            continue
        pool = meta.get("pool") if isinstance(meta, dict) else None
        if pool not in (None, "") and matrix is not None and model in matrix.models:
            pools.setdefault(str(pool), []).append(model)
    none = np.zeros(0, dtype=np.int64)
    data = _StudyData(
        name=st.name,
        title=st.title,
        question_keys=qkeys,
        subjects=qsubj,
        pair_keys=pair_keys,
        pairs=pairs,
        vote_pair=none,
        vote_annotator=none,
        vote_code=none,
        annotators=[],
        matrix=matrix,
        pools=pools,
    )
    return _Static(st, items, data)


def _load_votes(
    engine: Engine,
    static: _Static,
    monitor: StudyMonitor | None,
    read: _Read | None = None,
) -> _StudyData:
    """``static``'s data with the study's current votes (see :func:`_load`); ``read``:
    what ``monitor.current_votes()`` returned, when another thread has read them."""
    st, data = static.study, static.data
    # outside a session: the monitor reads through its own connection
    if monitor is None:
        va = vote_arrays(engine, st.name)
    else:
        raw, names = read if read is not None else monitor.current_votes()
        vp, va_, codes, annotators = _vote_columns(raw, names, static.items, data.pair_keys)
        return dataclasses.replace(
            data, vote_pair=vp, vote_annotator=va_, vote_code=codes, annotators=annotators
        )
    pi = {k: i for i, k in enumerate(data.pair_keys)}
    item_to_pair = np.array([pi.get(k, -1) for k in va.item_keys], dtype=np.int64)
    vp = item_to_pair[va.item] if len(va) else np.zeros(0, np.int64)
    keep = vp >= 0
    codes = va.choice.astype(np.int64)
    keep &= np.isin(codes, (SKIP, FIRST_HARDER, SECOND_HARDER))
    return dataclasses.replace(
        data,
        vote_pair=vp[keep],
        vote_annotator=va.annotator[keep],
        vote_code=codes[keep],
        annotators=list(va.annotators),
    )


# ---------------------------------------------------------------------------
# difficulty columns


@dataclass(frozen=True)
class _Column:
    method: str
    label: str
    source: str
    values: FloatArray  # (n_questions,), NaN where unavailable
    reason: str | None  # why the whole column is unavailable
    notes: tuple[str, ...] = ()
    pool: str | None = None
    models: tuple[str, ...] = ()


def _estimate_column(matrix: Matrix, method: str, models: Sequence[str] | None = None) -> _Column:
    label = LABELS.get(method, method)
    n_q = matrix.scores.shape[0]
    A = matrix.scores
    names = list(matrix.models)
    if models is not None:
        idx = [names.index(m) for m in models]
        A = A[:, idx]
        names = [names[i] for i in idx]
    answered: npt.NDArray[np.bool_] = np.asarray(np.isfinite(A).any(axis=1), dtype=np.bool_)
    values = np.full(n_q, np.nan)
    notes: list[str] = []
    if not answered.any():
        return _Column(method, label, "response matrix", values, "the matrix has no scores")
    if (~answered).any():
        notes.append(f"{int((~answered).sum())} question(s) without scores have no difficulty")
    kept = [q for q, a in zip(matrix.questions, answered.tolist(), strict=True) if a]
    sub = Matrix(A[answered], kept, names)
    try:
        r = estimate(sub, method)
    except AnnotateError as err:
        return _Column(method, label, "response matrix", values, f"{label} failed: {err}")
    except (RankingInputError, ConvergenceError, ValueError, FloatingPointError) as err:
        from annotate.services.estimators import _named  # "model 3" -> "model 'gpt-4o'"

        why = _named(err, sub)
        return _Column(method, label, "response matrix", values, f"{label} failed: {why}")
    pos = {q: i for i, q in enumerate(matrix.questions)}
    missing = 0
    for q, d in r.questions:
        if d is None:
            missing += 1
        else:
            values[pos[q]] = d
    if missing:
        notes.append(f"{missing} question(s) got no finite {label} difficulty")
    notes.extend(r.notes)
    return _Column(method, label, "response matrix", values, None, tuple(notes))


def _columns(
    data: _StudyData,
    methods: Sequence[str],
    difficulty_file: Path | None,
) -> tuple[list[_Column], list[str]]:
    cols: list[_Column] = []
    notes: list[str] = []
    n_q = len(data.question_keys)
    for m in methods:
        if data.matrix is None:
            cols.append(
                _Column(
                    m,
                    LABELS.get(m, m),
                    "response matrix",
                    np.full(n_q, np.nan),
                    "the study has no response matrix (responses.csv), so no estimator can run",
                )
            )
        else:
            cols.append(_estimate_column(data.matrix, m))
    if difficulty_file is not None:
        names, values = read_difficulty_file(difficulty_file)
        qi = {k: i for i, k in enumerate(data.question_keys)}
        taken = {c.method for c in cols}
        for name in names:
            arr = np.full(n_q, np.nan)
            unknown = 0
            for q, v in values[name].items():
                if q in qi:
                    arr[qi[q]] = v
                else:
                    unknown += 1
            method = name if name not in taken else f"{name} ({difficulty_file.name})"
            col_notes = []
            if unknown:
                col_notes.append(f"{unknown} question id(s) in the file are not in the study")
            if np.isinf(arr).any():
                col_notes.append("infinite values count as hardest/easiest")
            reason = None if np.isfinite(arr).any() or np.isinf(arr).any() else "no values"
            cols.append(_Column(method, name, difficulty_file.name, arr, reason, tuple(col_notes)))
    return cols, notes


def _subgroup_columns(data: _StudyData, methods: Sequence[str]) -> list[_Column]:
    if data.matrix is None or not data.pools:
        return []
    ordered = sorted(data.pools, key=lambda p: (POOL_ORDER.index(p) if p in POOL_ORDER else 99, p))
    groups = [(p, data.pools[p]) for p in ordered] + [(WHOLE, list(data.matrix.models))]
    out = []
    for pool, models in groups:
        for m in methods:
            c = _estimate_column(data.matrix, m, models)
            out.append(
                _Column(
                    f"{m}@{pool}",
                    c.label,
                    "response matrix",
                    c.values,
                    c.reason,
                    c.notes,
                    pool,
                    tuple(models),
                )
            )
    return out


# ---------------------------------------------------------------------------
# alignment


@dataclass(frozen=True)
class _Aligned:
    consensus: Estimate
    kappa: Estimate
    mean_individual: Estimate
    pairs: int
    pairs_predicted: int
    tied: int
    individual: tuple[AnnotatorAlignment, ...]
    predictions: list[str]  # per pair of the study
    notes: tuple[str, ...]


def _align(
    data: _StudyData,
    cols: list[_Column],
    *,
    n_boot: int,
    rng: np.random.Generator,
    confidence: float,
    near_tie_margin: float,
    resample: Resample = "both",
) -> tuple[list[_Aligned], AlignmentReport | None]:
    """Alignment of every column; columns defined on every pair share one call."""
    n_p, n_a = len(data.pair_keys), len(data.annotators)
    results: list[_Aligned | None] = [None] * len(cols)
    judged_any = bool((data.vote_code != SKIP).any())
    if data.vote_code.size == 0:
        why = "there are no votes in this study yet"
    elif not judged_any:
        why = f"all {data.vote_code.size} votes are skips, so no pair has a human judgement"
    elif n_p == 0:
        why = "the study has no pairs"
    else:
        why = ""
    main: AlignmentReport | None = None
    groups: dict[tuple[int, ...], list[int]] = {}
    for j, c in enumerate(cols):
        if c.reason is not None:
            results[j] = _failed(c.reason, n_p, data.annotators)
            continue
        if why:
            results[j] = _failed(why, n_p, data.annotators)
            continue
        d = c.values
        ok = (
            ~np.isnan(d[data.pairs[:, 0]]) & ~np.isnan(d[data.pairs[:, 1]])
            if n_p
            else np.zeros(0, dtype=np.bool_)
        )
        key = tuple(np.flatnonzero(ok).tolist())
        if not key:
            results[j] = _failed(
                "no pair has a difficulty for both of its questions", n_p, data.annotators
            )
            continue
        groups.setdefault(key, []).append(j)
    full = tuple(range(n_p))
    for key, members in sorted(groups.items(), key=lambda kv: kv[0] != full):
        sel = np.array(key, dtype=np.int64)
        if key == full:  # every pair: the votes as they are
            vp, va, vc = data.vote_pair, data.vote_annotator, data.vote_code
        else:
            pos = np.full(n_p, -1, dtype=np.int64)
            pos[sel] = np.arange(sel.size)
            vmask = pos[data.vote_pair] >= 0
            vp = pos[data.vote_pair[vmask]]
            va, vc = data.vote_annotator[vmask], data.vote_code[vmask]
        D = np.vstack([np.where(np.isnan(cols[j].values), 0.0, cols[j].values) for j in members])
        subset_note = (
            ()
            if key == full
            else (f"computed on the {sel.size} of {n_p} pairs where both questions have a value",)
        )
        if not (vc != SKIP).any():
            for j in members:
                results[j] = _failed(
                    "no non-skipped vote on the pairs this method predicts", n_p, data.annotators
                )
            continue
        rep = alignment_report(
            D,
            data.pairs[sel],
            vp,
            va,
            vc,
            n_annotators=n_a,
            estimator_names=[cols[j].method for j in members],
            near_tie_margin=near_tie_margin,
            n_boot=n_boot,
            confidence=confidence,
            rng=rng,
            resample=_schemes(resample),
        )
        if key == full:
            main = rep
        judged = np.bincount(va[vc != SKIP], minlength=n_a).tolist()
        # masks and values as Python lists once (the same floats as float() of each cell)
        ind_mask = _mask(rep.individual).tolist()
        low_mask = _mask(rep.individual_low).tolist()
        ind_vals = np.asarray(rep.individual.data, dtype=np.float64).tolist()
        low_vals = np.asarray(rep.individual_low.data, dtype=np.float64).tolist()
        high_vals = np.asarray(rep.individual_high.data, dtype=np.float64).tolist()
        sel_list = sel.tolist()
        for e, j in enumerate(members):
            words = list(map(PRED_WORDS.__getitem__, rep.predictions[e].tolist()))
            if key == full:
                preds = words
            else:
                preds = ["n/a"] * n_p
                for i, word in zip(sel_list, words, strict=True):
                    preds[i] = word
            ind = tuple(
                AnnotatorAlignment(
                    name,
                    None if masked else value,
                    None if lo_m else low,
                    None if lo_m else high,
                    n_judged,
                )
                for name, masked, lo_m, value, low, high, n_judged in zip(
                    data.annotators,
                    ind_mask[e],
                    low_mask[e],
                    ind_vals[e],
                    low_vals[e],
                    high_vals[e],
                    judged,
                    strict=True,
                )
            )
            results[j] = _Aligned(
                rep.consensus_alignment[e],
                rep.kappa[e],
                rep.mean_individual[e],
                rep.consensus.n_consensus,
                int(sel.size),
                int(rep.n_tied_predictions[e]),
                ind,
                preds,
                subset_note,
            )
    return [r for r in results if r is not None], main


def _failed(reason: str, n_p: int, annotators: list[str]) -> _Aligned:
    u = _undefined(reason)
    return _Aligned(
        u,
        u,
        u,
        0,
        0,
        0,
        tuple(AnnotatorAlignment(a, None, None, None, 0) for a in annotators),
        ["n/a"] * n_p,
        (),
    )


# ---------------------------------------------------------------------------
# agreement among people


def _ratings(data: _StudyData, *, with_skips: bool) -> FloatArray:
    """(annotators, pairs): 1/2 (and 0 for skip when ``with_skips``); NaN = missing."""
    n_p = len(data.pair_keys)
    R = np.full((len(data.annotators), n_p), np.nan)
    code = data.vote_code.astype(np.float64)
    cell = data.vote_annotator * n_p + data.vote_pair  # flat positions: one 1-D put
    if not with_skips:
        keep = code != SKIP
        cell, code = cell[keep], code[keep]
    R.reshape(-1)[cell] = code
    return R


def _int_rows(m: npt.NDArray[np.int64]) -> tuple[tuple[int, ...], ...]:
    """``m`` (2-D) as a tuple of tuples of Python ints, as ``tuple(map(tuple, m.tolist()))``
    gives them: counts of shared units (a million at 1,000 annotators, of a thousand or so
    values) taken from one Python int per value (a gather of an object array) instead
    of a new int per cell."""
    if m.size == 0 or int(m.min()) < 0 or int(m.max()) > m.size:
        return tuple(map(tuple, m.tolist()))
    ints = np.empty(int(m.max()) + 1, dtype=object)
    ints[:] = range(ints.size)
    return tuple(map(tuple, ints[m].tolist()))


def _float_rows(m: FloatArray) -> tuple[tuple[float, ...], ...]:
    """``m`` (2-D, float64, at least one column) as a tuple of tuples of Python floats, as
    ``tuple(map(tuple, m.tolist()))`` gives them: each row one tuple unpacked from the
    array's bytes (``struct``, native doubles: the same 64 bits in each float), without the
    lists of ``tolist`` and their copy into tuples (a million cells at 1,000 annotators)."""
    rows = np.ascontiguousarray(m, dtype=np.float64)
    return tuple(struct.iter_unpack(f"{rows.shape[1]}d", rows.data))


def _fleiss_estimate(res: AgreementResult, R: FloatArray, what: str) -> tuple[Estimate, int, int]:
    """Fleiss' kappa on the pairs every voting annotator judged, with the report's wording."""
    m = int((~np.isnan(R)).any(axis=1).sum())
    if m == 0:
        return _undefined(f"there are no {what}"), 0, 0
    if res.n_units == 0:
        return (
            _undefined(
                f"no pair has {what} from all {m} annotators, and Fleiss' kappa needs the same "
                "raters on every pair; see Krippendorff's alpha, which allows missing votes"
            ),
            0,
            m,
        )
    if res.value is None:
        return _undefined(res.reason or "undefined"), res.n_units, m
    return Estimate(res.value, None, None, None), res.n_units, m


def _alpha_estimate(res: AgreementResult, R: FloatArray) -> tuple[Estimate, int]:
    if R.size == 0 or np.isnan(R).all():
        return _undefined("there are no non-skipped votes"), 0
    if res.value is None:
        return _undefined(res.reason or "undefined"), res.n_units
    return Estimate(res.value, None, None, None), res.n_units


def _interval(d: BootstrapDistribution | None) -> Interval | None:
    if d is None or d.interval is None:
        return None
    return Interval(d.interval[0], d.interval[1], d.n_valid, d.scheme)


def _with_intervals(est: Estimate, boot: AgreementBootstrapResult, statistic: str) -> Estimate:
    if est.value is None:
        return est
    return Estimate(
        est.value,
        None,
        _interval(boot.distribution(statistic, "units")),
        _interval(boot.distribution(statistic, "annotators")),
        _interval(boot.distribution(statistic, "both")),
    )


def _schemes(resample: Resample) -> tuple[Resample, ...]:
    """Bootstrap schemes the report runs: the chosen one; with the default two-way
    scheme the two one-way schemes too, shown alongside for comparison."""
    if resample == "both":
        return ("units", "annotators", "both")
    return (resample,)


def _resample_note(resample: str, n_boot: int) -> str:
    """The line of report.md (and the terminal) that says which scheme the intervals use."""
    if n_boot == 0:
        return "Intervals: none (--boot 0)."
    if resample == "both":
        return (
            "Interval scheme: 'CI both' is the two-way bootstrap, pairs and annotators "
            "resampled together (Owen 2007), the one to quote when the annotators are a "
            "sample too; 'CI pairs' and 'CI annotators' resample one way only and are too "
            "narrow then. Each annotator's own alignment is resampled over pairs."
        )
    return f"Interval scheme: {RESAMPLE_LABELS[resample]} only (--resample {resample})."


def _agreement(
    data: _StudyData,
    *,
    n_boot: int,
    rng: np.random.Generator,
    confidence: float,
    resample: Resample = "both",
) -> Agreement:
    names = tuple(data.annotators)
    R3 = _ratings(data, with_skips=True)
    R = np.where(R3 == SKIP, np.nan, R3)  # _ratings(data, with_skips=False), from R3
    # skips are abstentions: missing for alpha and Fleiss, a category for Fleiss-with-skips;
    # the bootstrap resamples pairs (units) and annotators (raters)
    boot = agreement_bootstrap(
        R3,
        n_boot=n_boot,
        confidence=confidence,
        rng=rng,
        labels=(float(FIRST_HARDER), float(SECOND_HARDER)),
        abstain=float(SKIP),
        resample=_schemes(resample),
    )
    assert boot.fleiss_with_abstain is not None  # abstain is given
    fleiss, f_units, f_raters = _fleiss_estimate(boot.fleiss, R, "non-skipped votes")
    fleiss3, f3_units, _ = _fleiss_estimate(boot.fleiss_with_abstain, R3, "votes")
    alpha, a_units = _alpha_estimate(boot.alpha, R)
    alpha = _with_intervals(alpha, boot, "alpha")
    fleiss = _with_intervals(fleiss, boot, "fleiss")
    fleiss3 = _with_intervals(fleiss3, boot, "fleiss_with_abstain")
    n_a = R.shape[0]
    judged = (~np.isnan(R)).sum(axis=1)
    skipped = (R3 == SKIP).sum(axis=1)
    if n_a == 0 or np.isnan(R).all():
        pk: tuple[tuple[float | None, ...], ...] = tuple(tuple(None for _ in names) for _ in names)
        po: tuple[tuple[int, ...], ...] = tuple(tuple(0 for _ in names) for _ in names)
        mean_k: float | None = None
        mean_r: str | None = "there are no non-skipped votes"
        loo = tuple(
            AnnotatorAgreement(
                a, int(judged[i]), int(skipped[i]), None, "there are no non-skipped votes", None, 0
            )
            for i, a in enumerate(names)
        )
    else:
        pc = pairwise_cohen_matrix(R, labels=[1.0, 2.0])
        mask = _mask(pc.values)
        # Python floats and ints, None where undefined, built by NumPy's tolist (a million
        # cells at 1,000 annotators)
        values = np.asarray(pc.values.data, dtype=np.float64).reshape(n_a, n_a)
        if mask.any():
            cells = values.astype(object)
            cells[mask] = None
            pk = tuple(map(tuple, cells.tolist()))
        else:  # every pair defined: the floats straight from the bytes
            pk = _float_rows(values)
        po = _int_rows(np.asarray(pc.overlap, dtype=np.int64))
        mean = pc.mean()
        mean_k, mean_r = mean.value, mean.reason
        lo = leave_one_out_agreement(R, labels=[1.0, 2.0])
        # Python floats and ints by tolist (the same numbers as float() and int() of each)
        loo = tuple(
            AnnotatorAgreement(
                a, n_judged, n_skipped, None if k_m else k, reason, None if p_m else pct, n_u
            )
            for a, n_judged, n_skipped, k_m, k, reason, p_m, pct, n_u in zip(
                names,
                judged.tolist(),
                skipped.tolist(),
                _mask(lo.kappa).tolist(),
                np.asarray(lo.kappa.data, dtype=np.float64).tolist(),
                lo.reasons,
                _mask(lo.percent_agreement).tolist(),
                np.asarray(lo.percent_agreement.data, dtype=np.float64).tolist(),
                np.asarray(lo.n_units).tolist(),
                strict=True,
            )
        )
    return Agreement(
        fleiss,
        f_units,
        f_raters,
        fleiss3,
        f3_units,
        alpha,
        a_units,
        names,
        pk,
        po,
        mean_k,
        mean_r,
        loo,
    )


# ---------------------------------------------------------------------------
# human scale


def _question_groups(data: _StudyData) -> list[IntArray]:
    """Groups of questions linked by pairs with a non-skipped vote, largest first."""
    # the judged pairs, sorted (np.unique's), by counting instead of sorting a million votes
    n_p = len(data.pair_keys)
    judged = np.flatnonzero(np.bincount(data.vote_pair[data.vote_code != SKIP], minlength=n_p))
    a, b = data.pairs[judged, 0], data.pairs[judged, 1]
    return component_members(connected_components(a, b, len(data.question_keys)))


class _GroupSplit:
    """The pairs and votes of each group of linked questions, split once.

    ``group(g)`` gives group ``g``'s pairs (study indices, increasing), those pairs as
    positions among the group's questions, and its votes (pair as a position among the
    group's pairs, annotator, code) in study order: the arrays the per-group masks
    ``local[pairs] >= 0`` and ``ppos[vote_pair] >= 0`` select, from one stable ordering
    of the votes by group instead of a pass over every vote per group.
    """

    def __init__(self, data: _StudyData, groups: list[IntArray]) -> None:
        n_q, n_g = len(data.question_keys), len(groups)
        group_of = np.full(n_q, -1, dtype=np.int64)
        self.q_local = np.full(n_q, -1, dtype=np.int64)  # position in its group
        for g, qs in enumerate(groups):
            group_of[qs] = g
            self.q_local[qs] = np.arange(qs.size)
        first, second = group_of[data.pairs[:, 0]], group_of[data.pairs[:, 1]]
        pair_group = np.where(first == second, first, -1)  # both questions in the group
        # pairs and votes ordered by group + 1 (0: in no group), stable: study order within
        # a group; keys of 16 bits or fewer sort by radix (no comparison sort of the votes)
        key_type = np.uint16 if n_g < np.iinfo(np.uint16).max else np.int64
        pair_key = (pair_group + 1).astype(key_type)
        porder = np.argsort(pair_key, kind="stable")
        pbounds = np.cumsum(np.bincount(pair_key, minlength=n_g + 1))
        self.sel = [porder[pbounds[g] : pbounds[g + 1]] for g in range(n_g)]
        self.p_local = np.full(len(data.pair_keys), -1, dtype=np.int64)
        for sel in self.sel:
            self.p_local[sel] = np.arange(sel.size)
        vote_key = pair_key[data.vote_pair]
        vorder = np.argsort(vote_key, kind="stable")
        self.vbounds = np.r_[0, np.cumsum(np.bincount(vote_key, minlength=n_g + 1))]
        self.vote_pair = data.vote_pair[vorder]
        self.vote_annotator = data.vote_annotator[vorder]
        self.vote_code = data.vote_code[vorder]
        self.pairs = data.pairs

    def group(self, g: int) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:
        """Group ``g``'s pairs, its pairs as question positions, and its votes."""
        sel = self.sel[g]
        lo, hi = int(self.vbounds[g + 1]), int(self.vbounds[g + 2])
        return (
            sel,
            self.q_local[self.pairs[sel]],
            self.p_local[self.vote_pair[lo:hi]],
            self.vote_annotator[lo:hi],
            self.vote_code[lo:hi],
        )


def _pooled(items: list[tuple[float, float | None, int]]) -> tuple[float | None, float | None, int]:
    """n-weighted mean of within-group coefficients; the p-value only for one group."""
    if not items:
        return None, None, 0
    n = sum(k for _, _, k in items)
    value = sum(v * k for v, _, k in items) / n
    return value, (items[0][1] if len(items) == 1 else None), n


ABILITY_PRIOR_SD = 2.0
"""Prior sd of each annotator's discrimination relative to the average one (as stable_arena)."""
RATING_PRIOR_SD = 1000.0
"""Prior sd of the question difficulties in Elo points (as stable_arena's rating prior)."""


def _rank_correlation(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], kind: str) -> Any:
    """Spearman or Kendall correlation as :class:`ranking.alignment.Correlation`."""
    from ranking._special_dist import kendalltau, spearmanr
    from ranking.alignment import Correlation

    n = int(x.size)
    if n < 3:
        return Correlation(None, None, f"only {n} question(s) on the human scale; need 3", n)
    if np.unique(x).size < 2:
        return Correlation(None, None, "the estimator gives every question the same difficulty", n)
    if np.unique(y).size < 2:
        return Correlation(None, None, "the human scale gives every question the same value", n)
    r = spearmanr(x, y) if kind == "spearman" else kendalltau(x, y)
    value, p = float(r.statistic), float(r.pvalue)
    if not math.isfinite(value):
        return Correlation(None, None, f"scipy could not compute {kind}'s coefficient", n)
    if n <= EXACT_P_MAX_N:
        # scipy's Spearman p comes from a t approximation: p = 0 for rho = 1 with n = 3,
        # where the exact permutation p-value is 1/3.
        p = _exact_p(x, y, kind)
    return Correlation(value, p if math.isfinite(p) else None, None, n)


def _exact_ps(sp: Any, kd: Any, est: npt.NDArray[np.float64], human: Any) -> tuple[Any, Any]:
    """``sp`` and ``kd`` with exact p-values (few questions; see :func:`_exact_p`)."""
    from dataclasses import replace

    used = ~_mask(human)
    x, y = np.asarray(est, dtype=np.float64)[used], np.asarray(human.data, np.float64)[used]
    out = []
    for c, kind in ((sp, "spearman"), (kd, "kendall")):
        if c.value is not None and c.n == x.size and c.n <= EXACT_P_MAX_N:
            c = replace(c, p_value=_exact_p(x, y, kind))
        out.append(c)
    return out[0], out[1]


def _order_sign(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """``sign(a - b)`` by comparison: two equal infinities are a tie (0), where
    ``inf - inf`` is NaN and would turn every permutation's statistic into NaN."""
    return (a > b).astype(np.int64) - (a < b).astype(np.int64)


def _exact_p(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], kind: str) -> float:
    """Exact two-sided permutation p-value of Spearman's rho or Kendall's tau-b.

    The share of the n! orderings of ``y`` whose coefficient is at least as far from 0
    as the observed one (ties kept as average ranks / tied pairs). Each coefficient is
    a constant times the statistic below, so the constants are left out.
    """
    from itertools import permutations

    from ranking._special_dist import rankdata

    n = int(x.size)
    perms = np.array(list(permutations(range(n))), dtype=np.int64)
    if kind == "spearman":
        rx, ry = rankdata(x), rankdata(y)
        rx = rx - rx.mean()
        stat = ry[perms] @ rx
        obs = float(ry @ rx)
    else:
        i, j = np.triu_indices(n, 1)
        sx = _order_sign(x[i], x[j])
        stat = _order_sign(y[perms[:, i]], y[perms[:, j]]) @ sx
        obs = float(_order_sign(y[i], y[j]) @ sx)
    tol = 1e-9 * max(1.0, abs(obs))
    return float(np.mean(np.abs(stat) >= abs(obs) - tol))


def _prior_scale(
    pairs: npt.NDArray[np.int64],
    pair: npt.NDArray[np.int64],
    annotator: npt.NDArray[np.int64],
    vote: npt.NDArray[np.int64],
    difficulty: npt.NDArray[np.float64] | None,
    names: list[str] | None,
    n_questions: int,
    n_annotators: int,
    confidence: float,
) -> Any:
    """The human scale of a small pilot: am-ELO with weak Gaussian priors.

    :func:`ranking.alignment.human_difficulty_scale` leaves out questions that
    were always voted harder (or easier) and fails when an annotator agrees with
    the others on every vote: with a dozen pairs that is most of them. Here
    every question and annotator keeps a finite estimate with a wide interval:
    am-ELO is fitted with ``ability_prior_sd`` (each annotator's discrimination
    ~ N(1, 2**2) relative to the average one) and ``rating_prior_sd`` (difficulty
    ~ N(0, 1000**2) Elo points), the priors of :func:`ranking.arena.stable_arena`.
    Returns a :class:`ranking.alignment.HumanScaleResult`.
    """
    from ranking.alignment import HumanScaleResult
    from ranking.pairwise import am_elo

    keep = vote != SKIP
    p, a, v = pair[keep], annotator[keep], vote[keep]
    qa, qb = pairs[p, 0], pairs[p, 1]
    used_q = np.unique(np.concatenate([qa, qb]))
    used_a = np.unique(a)
    qi = np.full(n_questions, -1, dtype=np.int64)
    qi[used_q] = np.arange(used_q.size)
    ai = np.full(n_annotators, -1, dtype=np.int64)
    ai[used_a] = np.arange(used_a.size)
    fit = am_elo(
        qi[qa],
        qi[qb],
        ai[a],
        (v == FIRST_HARDER).astype(np.float64),
        n_models=int(used_q.size),
        n_annotators=int(used_a.size),
        initial=0.0,
        confidence=confidence,
        ability_prior_sd=ABILITY_PRIOR_SD,
        rating_prior_sd=RATING_PRIOR_SD,
    )

    def masked(values: Any, used: npt.NDArray[np.int64], n: int, scale: float = 1.0) -> Any:
        out = np.zeros(n)
        out[used] = np.asarray(values, dtype=np.float64) * scale
        mask = np.ones(n, dtype=bool)
        mask[used] = False
        return np.ma.MaskedArray(out, mask=mask)

    human = np.asarray(fit.ratings, dtype=np.float64)
    d = np.zeros((0, n_questions)) if difficulty is None else np.atleast_2d(difficulty)
    est_names = tuple(names or ())
    none = np.zeros(n_questions, dtype=bool)
    return HumanScaleResult(
        difficulty=masked(human, used_q, n_questions),
        lower=masked(fit.lower, used_q, n_questions),
        upper=masked(fit.upper, used_q, n_questions),
        standard_errors=masked(fit.rating_standard_errors, used_q, n_questions),
        reliability=masked(fit.discriminations, used_a, n_annotators),
        reliability_standard_errors=masked(
            fit.ability_standard_errors, used_a, n_annotators, float(used_a.size)
        ),
        spearman=tuple(_rank_correlation(d[e, used_q], human, "spearman") for e in range(len(d))),
        kendall=tuple(_rank_correlation(d[e, used_q], human, "kendall") for e in range(len(d))),
        estimator_names=est_names,
        always_harder=none,
        always_easier=none,
        n_votes=int(p.size),
        n_virtual_ties=0,
        iterations=int(fit.iterations),
        confidence=float(confidence),
    )


def _floats(x: Any) -> list[float]:
    """The data of a (masked) array as Python floats, masked entries included."""
    out: list[float] = np.asarray(np.ma.getdata(x), dtype=np.float64).tolist()
    return out


def _human_scale(data: _StudyData, cols: list[_Column], confidence: float) -> HumanScale:
    """Fit the human scale on each group of questions linked by judged pairs.

    Pairs are within one subject, so a study's questions usually fall into several
    groups never compared with each other; each group gets its own scale (centred
    at 0), and each estimator's rank correlation with it is pooled over the groups.
    """
    questions = [
        QuestionScale(k, s, None, None, None, None)
        for k, s in zip(data.question_keys, data.subjects, strict=True)
    ]
    n_a = len(data.annotators)
    groups = _question_groups(data)
    if not groups:
        why = "there are no non-skipped votes" if len(data.pair_keys) else "no pairs"
        return HumanScale(
            False,
            why,
            tuple(questions),
            tuple((a, None, None) for a in data.annotators),
            tuple(Correlation(c.method, c.label, None, None, None, None, 0, why) for c in cols),
            0,
            0,
        )
    usable = [c for c in cols if c.reason is None]
    rel: list[list[tuple[float, float | None, float]]] = [[] for _ in range(n_a)]
    corr_items: dict[
        str, tuple[list[tuple[float, float | None, int]], list[tuple[float, float | None, int]]]
    ] = {c.method: ([], []) for c in usable}
    corr_reason: dict[str, str] = {}
    out_groups: list[ScaleGroup] = []
    prior_groups: list[int] = []
    total_votes = total_iter = 0
    split = _GroupSplit(data, groups)
    for gi, qs in enumerate(groups, start=1):
        sel, gpairs, vp, va, vc = split.group(gi - 1)
        cover = [c for c in usable if not np.isnan(c.values[qs]).any()]
        D = np.vstack([c.values[qs] for c in cover]) if cover else None
        try:
            h = human_difficulty_scale(
                gpairs,
                vp,
                va,
                vc,
                difficulty=D,
                estimator_names=[c.method for c in cover] if cover else None,
                n_questions=int(qs.size),
                n_annotators=n_a,
                confidence=confidence,
            )
            peeled = bool(h.always_harder.any() or h.always_easier.any())
        except (RankingInputError, ConvergenceError):
            peeled = True
        if peeled:  # a small pilot: every question keeps a finite, wide estimate
            try:
                h = _prior_scale(
                    gpairs,
                    vp,
                    va,
                    vc,
                    D,
                    [c.method for c in cover] if cover else None,
                    int(qs.size),
                    n_a,
                    confidence,
                )
            except (RankingInputError, ConvergenceError) as err:
                why = fit_problem(
                    err, [data.question_keys[int(q)] for q in qs], [], noun="question"
                )
                out_groups.append(ScaleGroup(gi, int(qs.size), int(sel.size), False, why, 0))
                continue
            prior_groups.append(gi)
        out_groups.append(ScaleGroup(gi, int(qs.size), int(sel.size), True, None, h.n_votes))
        total_votes += h.n_votes
        total_iter += h.iterations
        # the per-question and per-annotator values as Python floats once (the same
        # values as float() of each element), not a masked array's .data per element
        qmask = _mask(h.difficulty).tolist()
        harder, easier = h.always_harder.tolist(), h.always_easier.tolist()
        diff, low, up = (_floats(x) for x in (h.difficulty, h.lower, h.upper))
        for j, q in enumerate(qs.tolist()):
            ex = "always harder" if harder[j] else "always easier" if easier[j] else None
            base = questions[q]
            if qmask[j]:
                questions[q] = QuestionScale(base.key, base.subject, None, None, None, ex, gi)
            else:
                questions[q] = QuestionScale(base.key, base.subject, diff[j], low[j], up[j], ex, gi)
        judged = np.bincount(va[vc != SKIP], minlength=n_a).tolist()
        r_val, r_se = _floats(h.reliability), _floats(h.reliability_standard_errors)
        for i in np.flatnonzero(~_mask(h.reliability)).tolist():
            rel[i].append((r_val[i], _none(r_se[i]), float(judged[i])))
        for e, name in enumerate(h.estimator_names):
            sp, kd = h.spearman[e], h.kendall[e]
            if D is not None and (sp.n <= EXACT_P_MAX_N or kd.n <= EXACT_P_MAX_N):
                sp, kd = _exact_ps(sp, kd, D[e], h.difficulty)
            if sp.value is not None:
                corr_items[name][0].append((sp.value, sp.p_value, sp.n))
            elif sp.reason:
                corr_reason.setdefault(name, f"group {gi}: {sp.reason}")
            if kd.value is not None:
                corr_items[name][1].append((kd.value, kd.p_value, kd.n))
    fitted = [g for g in out_groups if g.fitted]
    reliability: list[tuple[str, float | None, float | None]] = []
    for i, a in enumerate(data.annotators):
        if not rel[i]:
            reliability.append((a, None, None))
            continue
        w = sum(x[2] for x in rel[i])
        value = sum(x[0] * x[2] for x in rel[i]) / w
        ses = [x[1] for x in rel[i]]
        se = (
            None
            if any(v is None for v in ses)
            else math.sqrt(sum((x[2] / w) ** 2 * (x[1] or 0.0) ** 2 for x in rel[i]))
        )
        reliability.append((a, value, se))
    corr = []
    for c in cols:
        if c.method not in corr_items:
            why = c.reason or "the method has no difficulty"
            corr.append(Correlation(c.method, c.label, None, None, None, None, 0, why))
            continue
        sp_items, kd_items = corr_items[c.method]
        sp_v, sp_p, n = _pooled(sp_items)
        kd_v, kd_p, _ = _pooled(kd_items)
        note: str | None
        if sp_v is None:
            note = corr_reason.get(c.method) or (
                "the human scale was not fitted"
                if not fitted
                else "no fitted group has a difficulty of this method for all its questions"
            )
        else:
            note = None
        corr.append(Correlation(c.method, c.label, sp_v, sp_p, kd_v, kd_p, n, note, len(sp_items)))
    failed = [g for g in out_groups if not g.fitted]
    reason: str | None = None
    if not fitted:
        reason = (
            failed[0].reason
            if len(failed) == 1
            else f"none of the {len(failed)} groups of linked questions could be fitted; "
            f"group 1: {failed[0].reason}"
        )
    elif failed:
        reason = (
            f"{len(failed)} of {len(out_groups)} groups of linked questions could not be "
            f"fitted (group {failed[0].index}: {failed[0].reason})"
        )
    return HumanScale(
        bool(fitted),
        reason,
        tuple(questions),
        tuple(reliability),
        tuple(corr),
        total_votes,
        total_iter,
        tuple(out_groups),
        tuple(prior_groups),
    )


# ---------------------------------------------------------------------------
# the report


class _Stages:
    """Stages run in order by whichever thread asks first (:meth:`run`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._todo: list[tuple[Future[Any], Callable[[], Any]]] = []

    def add(self, fn: Callable[[], _T]) -> Future[_T]:
        """A stage to run; its future."""
        f: Future[_T] = Future()
        with self._lock:
            self._todo.append((f, fn))
        return f

    def run(self) -> None:
        """Run the stages no thread has taken yet, one after another."""
        while True:
            with self._lock:
                if not self._todo:
                    return
                f, fn = self._todo.pop(0)
            if not f.set_running_or_notify_cancel():
                continue
            try:
                f.set_result(fn())
            except Exception as err:  # re-raised by f.result() in the caller
                f.set_exception(err)
            except BaseException as err:  # an interrupt: at once, the rest left undone
                f.set_exception(err)
                raise

    def run_after(self, first: Future[Any]) -> None:
        """:meth:`run` once ``first`` is done (whatever its outcome)."""
        wait([first])
        self.run()


def _after(first: Future[Any], fn: Callable[[], _T]) -> _T:
    """``fn()`` once ``first`` is done (whatever its outcome)."""
    wait([first])
    return fn()


def _read_then_refit(
    monitor: StudyMonitor,
    read: Future[_Read],
    timed: Callable[[str, Callable[[], MonitorSnapshot]], MonitorSnapshot],
) -> MonitorSnapshot:
    """The monitor's current votes, handed to ``read`` (or its error), then its snapshot
    (the verdicts), which reads no vote again."""
    try:
        got = monitor.current_votes()
    except BaseException as err:  # re-raised by read.result() in the report's thread
        read.set_exception(err)
        raise
    read.set_result(got)
    return timed("verdicts", monitor.snapshot)


def _done(fn: Callable[[], _T]) -> Future[_T]:
    """The future of ``fn()`` run here and now (its exception kept for ``result()``)."""
    f: Future[_T] = Future()
    f.set_running_or_notify_cancel()
    try:
        f.set_result(fn())
    except Exception as err:  # re-raised by f.result(), as a stage's
        f.set_exception(err)
    return f


def human_alignment_report(
    engine: Engine,
    study: str | None = None,
    *,
    difficulty_file: Path | None = None,
    methods: Sequence[str] = ESTIMATORS,
    subgroup_methods: Sequence[str] = SUBGROUP_METHODS,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    near_tie_margin: float = 0.0,
    threads: int | None = 1,
    parallel: bool = True,
    resample: Resample = "both",
    progress: Callable[[int, int], None] | None = None,
    prefetch: Prefetch | None = None,
) -> HumanAlignmentReport:
    """Build the human-alignment report of a difficulty study.

    Parameters
    ----------
    engine : Engine
        The store.
    study : str, optional
        Study name; default: the only difficulty study with votes (see :func:`default_study`).
    difficulty_file : Path, optional
        CSV ``question_id,<name>,...`` of extra difficulty columns (higher = harder).
    methods : sequence of str
        Estimators run on the study's response matrix.
    subgroup_methods : sequence of str
        Estimators rerun on each model pool (``models.csv`` column ``pool``).
    n_boot : int
        Bootstrap replicates per resampling scheme; 0 = no intervals.
    seed : int
        Seed of the bootstrap.
    confidence : float
        Coverage of the intervals.
    near_tie_margin : float
        Consensus margin at or below which a pair is a near-tie (0: exact ties only).
    threads : int or None
        BLAS threads during the computation (None: leave the library default).
    parallel : bool
        Compute the verdicts (the monitor's refit) in a worker thread while the
        estimators, the alignment, the agreement statistics and the human scale run
        (on machines with 2+ CPUs); the worker takes the agreement or the human scale
        too if it is done before them.
    resample : {"both", "units", "annotators"}
        Bootstrap scheme of the intervals (:func:`ranking.agreement.agreement_bootstrap`,
        :func:`ranking.alignment.alignment_report`). ``"both"`` (default) resamples pairs
        and annotators together (Owen, 2007), right when both are samples; the one-way
        intervals are then computed too and shown alongside. ``"units"`` (pairs) or
        ``"annotators"`` run that scheme alone.
    progress : callable, optional
        Called as ``progress(done, total)`` after each of the seven stages (load,
        estimators, pool estimators, alignment, agreement, human scale, verdicts), possibly
        from a worker thread; the command line draws a progress bar with it.
    prefetch : Prefetch, optional
        The study's votes being read ahead in a child process (the command line:
        :class:`annotate.services.report_prefetch.Prefetch`); the monitor takes them there.

    Raises
    ------
    AnnotateError
        Unknown study, not a difficulty study, several candidate studies, or a bad
        difficulty file. Statistical degeneracies never raise: they are reported.
    """
    if n_boot < 0:
        raise AnnotateError(f"--boot must be >= 0, got {n_boot}")
    if resample not in RESAMPLE_SCHEMES:
        raise AnnotateError(f"--resample must be one of {', '.join(RESAMPLE_SCHEMES)}")
    timings: list[tuple[str, float]] = []
    t0 = time.perf_counter()
    name = study or default_study(engine)
    monitor = _monitor(engine, name, prefetch)
    ss = np.random.SeedSequence(seed)
    rng_align, rng_agree = (np.random.default_rng(s) for s in ss.spawn(2))

    def timed(stage: str, fn: Callable[[], _T]) -> _T:
        t = time.perf_counter()
        out = fn()
        timings.append((stage, time.perf_counter() - t))
        if progress is not None:
            progress(len(timings), 7)  # the six timed stages below and "load"
        return out

    # the caller's context, when it keeps the texts of the files it will write
    writing = contextvars.copy_context() if kept_active() else None
    workers = 2 if parallel and (os.cpu_count() or 1) > 1 else 1
    # The stages run side by side (numpy releases the GIL in its loops and BLAS
    # calls), each with one BLAS thread: the verdicts (the monitor's refit, which needs
    # only the votes it has read: started as soon as it has read them, beside the
    # estimators and the rest of the load) in a worker thread, which reads the votes
    # too; estimators -> alignment here, then the agreement and the
    # human scale, each run by whichever of this thread and the verdicts' worker (once
    # the verdicts are done) is free first (_Stages). So at most two threads compute at
    # once on two cores: the refit, the longest stage, keeps a core to itself instead of
    # sharing two with three threads (and the stages' CPU time is lower without the
    # third thread's contention).
    with blas_threads(threads), ThreadPoolExecutor(max_workers=workers) as pool:
        static = _load_study(engine, name)
        verdicts_f: Future[MonitorSnapshot] | None = None
        read_f: Future[_Read] | None = None
        if monitor is not None:
            # the worker reads the votes (waiting for the child process that reads them
            # ahead, with a prefetch) and goes on with the refit at once, while this
            # thread runs the estimators, which need no vote; then it takes the votes
            # the worker has read (read_f)
            read_f = Future()
            verdicts_f = pool.submit(_read_then_refit, monitor, read_f, timed)
        quality_f: Future[StudyQuality] | None = None
        if read_f is not None:  # the estimators while the worker reads
            cols, notes = timed(
                "estimators", lambda: _columns(static.data, methods, difficulty_file)
            )
            sub_cols = timed(
                "pool estimators", lambda: _subgroup_columns(static.data, subgroup_methods)
            )
            # if the child still reads then, pyarrow's warm-up and the quality checks
            # (the database only), which are otherwise done later by whichever thread
            # is free
            if writing is not None and prefetch is not None and prefetch.pending():
                # pyarrow's import and first cast (0.07-0.25 s), which the pairwise
                # kappa texts made later (prepare_pairwise) then skip
                warm_float_reprs()
            if prefetch is not None and prefetch.pending():
                quality_f = _done(lambda: study_quality(engine, static.study.name))
        read = read_f.result() if read_f is not None else None
        data = _load_votes(engine, static, monitor, read=read)
        timings.append(("load", time.perf_counter() - t0))
        if progress is not None:
            progress(len(timings), 7)
        t_compute = time.perf_counter()
        if verdicts_f is None:
            verdicts_f = pool.submit(
                timed, "verdicts", lambda: StudyMonitor(engine, name).snapshot()
            )
        later = _Stages()

        def agreement_stage() -> Agreement:
            return timed(
                "agreement",
                lambda: _agreement(
                    data, n_boot=n_boot, rng=rng_agree, confidence=confidence, resample=resample
                ),
            )

        agreement_f = later.add(agreement_stage)
        if read_f is None:  # no monitor: the votes were read here, the estimators now
            cols, notes = timed("estimators", lambda: _columns(data, methods, difficulty_file))
            sub_cols = timed("pool estimators", lambda: _subgroup_columns(data, subgroup_methods))

        def scale_stage() -> HumanScale:
            return timed("human scale", lambda: _human_scale(data, cols, confidence))

        scale_f = later.add(scale_stage)
        # then what needs only finished stages or the database, run by whichever thread
        # is free first instead of a third thread beside the verdicts (two cores): the
        # texts the files will make of the pairwise kappa matrix, for the caller's
        # kept_texts scope (made in its context, in three steps that the two threads can
        # share: report_files.pairwise_steps), and the quality checks; the longest
        # first (pyarrow's texts, 0.2-0.35 s with its import, then the quality checks)
        if writing is not None:
            texts, rows, lines = pairwise_steps(agreement_f.result)
            later.add(partial(writing.copy().run, texts))
        if quality_f is None:
            quality_f = later.add(lambda: study_quality(engine, data.name))
        if writing is not None:
            rows_f = later.add(partial(writing.copy().run, rows))
            later.add(partial(writing.copy().run, _after, rows_f, lines))
        helper = pool.submit(later.run_after, verdicts_f)
        aligned, main = timed(
            "alignment",
            lambda: _align(
                data,
                cols + sub_cols,
                n_boot=n_boot,
                rng=rng_align,
                confidence=confidence,
                near_tie_margin=near_tie_margin,
                resample=resample,
            ),
        )
        later.run()
        helper.result()
        verdicts = verdicts_f.result()
        agreement = agreement_f.result()
        scale = scale_f.result()
        quality = quality_f.result()
    timings.append(("computation (wall)", time.perf_counter() - t_compute))
    n_p = len(data.pair_keys)
    if main is not None:
        cons = main.consensus
    else:
        cons = vote_consensus(
            data.vote_pair,
            data.vote_annotator,
            data.vote_code,
            n_pairs=n_p,
            n_annotators=len(data.annotators),
            near_tie_margin=near_tie_margin,
        )
    touched = np.flatnonzero(cons.near_tie)
    near = NearTies(
        cons.near_tie_margin,
        cons.near_tie_rule,
        cons.n_consensus,
        cons.n_near_ties,
        cons.n_resolved,
        cons.n_excluded,
        cons.n_without_votes,
        tuple(data.pair_keys[i] for i in touched),
    )
    main_aligned = aligned[: len(cols)]
    alignment = tuple(
        MethodAlignment(
            c.method,
            c.label,
            c.source,
            r.consensus,
            r.kappa,
            r.mean_individual,
            r.pairs,
            r.pairs_predicted,
            r.tied,
            r.individual,
            c.notes + r.notes,
        )
        for c, r in zip(cols, main_aligned, strict=True)
    )
    subgroups = tuple(
        Subgroup(
            c.pool or "",
            c.models,
            c.method.split("@")[0],
            c.label,
            r.consensus,
            r.kappa,
            r.pairs,
            r.tied,
            c.notes + r.notes,
        )
        for c, r in zip(sub_cols, aligned[len(cols) :], strict=True)
    )
    if threads is not None and importlib.util.find_spec("threadpoolctl") is None:
        notes.append(
            "threadpoolctl is not installed, so BLAS threads were not limited; on a small "
            "busy machine the report is several times faster with OPENBLAS_NUM_THREADS=1"
        )
    if data.matrix is not None and not data.pools:
        notes.append("no subgroup analysis: the study's models have no 'pool' metadata")
    pair_rows = tuple(
        PairRow(
            data.pair_keys[i],
            data.question_keys[int(data.pairs[i, 0])],
            data.question_keys[int(data.pairs[i, 1])],
            data.subjects[int(data.pairs[i, 0])],
            int(cons.n_first[i]),
            int(cons.n_second[i]),
            int(cons.n_skip[i]),
            {1: "first", 2: "second"}.get(int(cons.consensus[i]), "none"),
            bool(cons.near_tie[i]),
            bool(cons.resolved[i]),
            tuple(r.predictions[i] for r in main_aligned),
        )
        for i in range(n_p)
    )
    return HumanAlignmentReport(
        study=data.name,
        title=data.title,
        n_questions=len(data.question_keys),
        n_pairs=n_p,
        n_votes=int(data.vote_code.size),
        n_skips=int((data.vote_code == SKIP).sum()),
        annotators=tuple(data.annotators),
        methods=tuple(c.method for c in cols),
        labels=tuple(c.label for c in cols),
        question_keys=tuple(data.question_keys),
        question_subjects=tuple(data.subjects),
        difficulty=tuple(tuple(_none(x) for x in c.values) for c in cols),
        alignment=alignment,
        near_ties=near,
        pairs=pair_rows,
        subgroups=subgroups,
        agreement=agreement,
        human_scale=scale,
        n_boot=int(n_boot),
        seed=int(seed),
        confidence=float(confidence),
        notes=(*notes, _resample_note(resample, n_boot)),
        timings=tuple(timings),
        resample=resample,
        verdicts=verdicts.annotators,
        verdict_notes=(*((verdicts.problem,) if verdicts.problem else ()), *verdicts.notes),
        item_notes=report_lines(engine, data.name),
        quality=None
        if quality.empty
        else with_alignment(
            quality,
            {a.annotator: a.value for a in alignment[0].individual} if alignment else {},
        ),
        paired_tests=_paired_tests(alignment, pair_rows),
        adaptive=adaptive_status(engine, data.name),
    )


def _monitor(engine: Engine, study: str, prefetch: Prefetch | None = None) -> StudyMonitor | None:
    """A monitor of ``study`` whose reading of the votes the report shares (None when
    there is no such study: :func:`_load` then says so)."""
    try:
        return StudyMonitor(engine, study, prefetch)
    except StudyNotFoundError:
        return None


def study_kind(engine: Engine, study: str | None) -> str | None:
    """The kind of ``study`` ("arena" or "difficulty"); None without a name or a study."""
    if study is None:
        return None
    with Session(engine) as s:
        st = repo.get_study(s, study)
    return None if st is None else st.kind


def arena_report(engine: Engine, study: str) -> ArenaReport:
    """The report of an arena study: the monitor's snapshot (Stable Arena leaderboard with
    each model's both-bad share, annotator verdicts and signals) read cold, with the
    comments and flags and the adaptive schedule's stopping status.

    Raises
    ------
    StudyNotFoundError
        If there is no such study.
    AnnotateError
        If it is not an arena study.
    """
    snap = StudyMonitor(engine, study).snapshot()
    if snap.kind != "arena":
        raise AnnotateError(f"study {study!r} is a {snap.kind} study, not an arena study")
    adaptive = adaptive_status(engine, study)
    return ArenaReport(
        study=snap.study,
        title=snap.title,
        n_votes=snap.n_votes,
        n_compared=snap.n_compared,
        leaderboard=snap.leaderboard,
        verdicts=snap.annotators,
        # the monitor's first note is the stopping status, shown in the summary instead
        verdict_notes=snap.notes[1:] if adaptive is not None else snap.notes,
        problem=snap.problem,
        item_notes=report_lines(engine, snap.study),
        adaptive=adaptive,
    )


def adaptive_status(engine: Engine, study: str) -> dict[str, Any] | None:
    """The stopping status of a study with the adaptive schedule (None for the standard
    schedule) as the report's JSON holds it, with the monitor's sentence as ``line``."""
    from dataclasses import asdict

    from annotate.services.monitoring import stopping_line

    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None or st.settings.schedule != "adaptive":
            return None
        from annotate.services.adaptive import stopping_status

        status = stopping_status(s, st)
    return {**asdict(status), "line": stopping_line(status, st.kind)}


def _paired_tests(
    alignment: Sequence[MethodAlignment], rows: Sequence[PairRow]
) -> tuple[PairedTestRow, ...]:
    """McNemar's exact test of every two methods with a defined consensus alignment, on the
    consensus pairs both predict (a tied prediction is wrong, as in eq. 9)."""
    from ranking.design import paired_test

    ok = [i for i, m in enumerate(alignment) if m.consensus.value is not None]
    cons = np.array([r.consensus for r in rows], dtype=object)
    out = []
    for x, i in enumerate(ok):
        for j in ok[x + 1 :]:
            pi = np.array([r.predictions[i] for r in rows], dtype=object)
            pj = np.array([r.predictions[j] for r in rows], dtype=object)
            keep = (cons != "none") & (pi != "n/a") & (pj != "n/a")
            t = paired_test(pi[keep] == cons[keep], pj[keep] == cons[keep])
            out.append(
                PairedTestRow(
                    alignment[i].method,
                    alignment[j].method,
                    t.n,
                    t.only_first,
                    t.only_second,
                    t.difference,
                    t.p_value,
                )
            )
    return tuple(out)


def report_view(engine: Engine, study: str, **options: Any) -> ReportView:
    """The report of ``study`` as text tables (what the report screen shows).

    ``options`` go to :func:`human_alignment_report`.
    """
    return build_view(human_alignment_report(engine, study, **options))
