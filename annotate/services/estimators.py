"""Difficulty and competency estimators on a response matrix (``annotate rank``).

Arrays go to :mod:`ranking`; this module picks the method, names the rows and
columns, and writes the CSVs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from annotate.errors import AnnotateError, InputFileError
from annotate.services.studies import parse_response_matrix
from ranking.baselines import accuracy, simple_rank, weighted_accuracy
from ranking.eip import eip
from ranking.errors import ConvergenceError, RankingInputError
from ranking.irt import fit_1pl, fit_1pl_mml, fit_2pl, fit_2pl_mml
from ranking.mirt import fit_mirt

METHODS = (
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
"""Methods of ``annotate rank``."""


@dataclass(frozen=True)
class Matrix:
    scores: npt.NDArray[np.float64]
    """Shape (questions, models); NaN where a model did not answer."""
    questions: list[str]
    models: list[str]
    notes: tuple[str, ...] = ()
    """Where the entries came from, when that needs saying (harness metric and filter)."""


def _matrix(entries: list[tuple[str, str, float]], notes: tuple[str, ...] = ()) -> Matrix:
    """A matrix from ``(question, model, score)`` entries, rows and columns in first-seen order."""
    questions = list(dict.fromkeys(q for q, _, _ in entries))
    models = list(dict.fromkeys(m for _, m, _ in entries))
    qi = {q: i for i, q in enumerate(questions)}
    mi = {m: j for j, m in enumerate(models)}
    A = np.full((len(questions), len(models)), np.nan)
    for q, m, v in entries:
        A[qi[q], mi[m]] = v
    return Matrix(A, questions, models, notes)


@dataclass(frozen=True)
class Ranking:
    """A method's model scores (higher is better) and question difficulties (higher is harder)."""

    method: str
    models: list[tuple[str, float]]
    questions: list[tuple[str, float | None]]
    """Hardest first; None where the method gives no finite value (see ``notes``)."""
    iterations: int | None
    notes: list[str] = field(default_factory=list)
    standard_errors: dict[str, tuple[float | None, float | None]] | None = None
    """IRT methods: question -> (``difficulty_se``, ``discrimination_se``); None where the
    method gives no standard error (NaN in :mod:`ranking.irt`: not estimated)."""
    se_status: str | None = None
    """IRT: ``"ok"``, ``"not_positive_definite"`` or ``"not_computed"`` (ranking.irt)."""

    def as_dict(self) -> dict[str, Any]:
        def question(q: str, d: float | None) -> dict[str, Any]:
            row: dict[str, Any] = {"question": q, "difficulty": d}
            if self.standard_errors is not None:
                dse, ase = self.standard_errors.get(q, (None, None))
                row["difficulty_se"], row["discrimination_se"] = dse, ase
            return row

        doc: dict[str, Any] = {
            "method": self.method,
            "iterations": self.iterations,
            "notes": self.notes,
            "models": [{"model": m, "score": s} for m, s in self.models],
            "questions": [question(q, d) for q, d in self.questions],
        }
        if self.se_status is not None:
            doc["se_status"] = self.se_status
        return doc


def _se(x: Any) -> float | None:
    v = float(x)
    return v if math.isfinite(v) else None


def read_matrix(path: Path) -> Matrix:
    """Read a response matrix: a CSV (long or wide, see question_pairs/README.md), a study
    folder holding ``responses.csv``, or lm-evaluation-harness ``--log_samples`` output
    (a ``samples_<task>_<timestamp>.jsonl`` file or a folder of them; questions
    ``<task>/<doc_id>``, the metric and filter chosen as ``annotate import`` does, and
    said in :attr:`Matrix.notes`)."""
    from annotate.services import formats

    if path.is_dir() and (path / "responses.csv").is_file():
        path = path / "responses.csv"
    elif (path.is_dir() and any(path.rglob("samples_*.jsonl"))) or (
        path.is_file() and path.name.startswith("samples_") and path.suffix == ".jsonl"
    ):
        samples = formats.parse_harness(path)
        return _matrix(
            [(f"{x.task}/{x.doc_id}", x.model, x.score) for x in samples],
            tuple(formats.harness_summary(samples)),
        )
    elif path.is_dir():
        raise InputFileError(
            path,
            "is a folder with no responses.csv and no lm-evaluation-harness samples_*.jsonl",
            expected="a response matrix CSV file (or a study in the database: "
            "annotate import FOLDER, then annotate rank METHOD --study NAME)",
        )
    entries = parse_response_matrix(path)
    if not entries:
        raise InputFileError(path, "no scores", expected="at least one score")
    return _matrix([(q, m, v) for _, q, m, v in entries])


def study_matrix(engine: Any, study: str) -> Matrix:
    """The response matrix stored with a difficulty study (``annotate rank --study``).

    Rows and columns come in the order the scores were stored (the order of the file
    they were imported from), so ranking the study and ranking that file give the
    same output.

    Raises
    ------
    StudyNotFoundError
        No study of that name.
    AnnotateError
        The study is an arena study, or holds no response matrix.
    """
    from sqlmodel import Session

    from annotate.errors import StudyNotFoundError
    from annotate.store import repo

    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None:
            raise StudyNotFoundError(study, repo.study_names(s))
        if st.kind != "difficulty":
            raise AnnotateError(
                f"study {study!r} is an arena study: it has battles, not a response matrix "
                f"(rate its votes with annotate rate --study {study})",
                title="No response matrix",
            )
        entries = repo.score_rows(s, st.id, file_order=True)
    if not entries:
        raise AnnotateError(
            f"study {study!r} has no response matrix: import a responses.csv with the study "
            "or lm-evaluation-harness logs (annotate import FOLDER --study NAME)",
            title="No response matrix",
        )
    return _matrix(entries)


IRT_METHODS = ("irt-1pl", "irt-2pl", "irt-1pl-mml", "irt-2pl-mml", "mirt")


def estimate(
    matrix: Matrix,
    method: str,
    *,
    alpha: float = 0.85,
    threshold: float = 0.5,
    datasets: dict[str, str] | None = None,
) -> Ranking:
    """Run one estimator; raise AnnotateError with the reason when it cannot.

    IRT methods need right/wrong answers: a partial-credit score counts as
    correct when it is at least ``threshold`` (said in the notes).
    ``weighted-accuracy`` needs ``datasets`` (question id -> dataset) for every question.
    """
    A = matrix.scores
    notes: list[str] = list(matrix.notes)
    if method in IRT_METHODS:
        fractional = ~np.isnan(A) & (A != 0) & (A != 1)
        if fractional.any():
            A = np.where(np.isnan(A), np.nan, (threshold <= A).astype(np.float64))
            notes.append(
                f"{int(fractional.sum())} partial-credit score(s) counted as correct when "
                f">= {threshold} (IRT needs right/wrong answers)"
            )
    extreme_rank: npt.NDArray[np.int64] | None = None
    se_d: npt.NDArray[np.float64] | None = None
    se_a: npt.NDArray[np.float64] | None = None
    se_status: str | None = None
    try:
        if method == "eip":
            r = eip(A, alpha=alpha)
            model_score, difficulty, iters = r.competency, r.difficulty, r.iterations
            n_all, n_none = int(r.solved_by_all.sum()), int(r.solved_by_none.sum())
            if n_all or n_none:
                notes.append(
                    f"{n_all} question(s) solved by every model and {n_none} by none were "
                    "left out of the propagation and ranked easiest / hardest"
                )
        elif method == "simple":
            difficulty = simple_rank(A)
            w = difficulty / difficulty.sum() if difficulty.sum() > 0 else None
            if w is None:
                raise AnnotateError("every model solves every question: Simple Rank is flat")
            model_score = np.nansum(np.nan_to_num(A) * w[:, None], axis=0)
            iters = None
            notes.append("model score: share of the Simple Rank difficulty mass solved")
        elif method == "accuracy":
            model_score = accuracy(A)
            difficulty = 1.0 - np.nanmean(A, axis=1)
            iters = None
            notes.append("question difficulty: 1 - mean score over models")
        elif method == "weighted-accuracy":
            if not datasets:
                raise AnnotateError(
                    "weighted-accuracy needs each question's dataset: give --questions FILE "
                    "(question_id,dataset)"
                )
            missing = [q for q in matrix.questions if q not in datasets]
            if missing:
                raise AnnotateError(
                    f"{len(missing)} question(s) have no dataset in the --questions file "
                    f"(first: {missing[0]!r})"
                )
            groups = [datasets[q] for q in matrix.questions]
            model_score = weighted_accuracy(A, groups)
            difficulty = 1.0 - np.nanmean(A, axis=1)
            iters = None
            notes.append(
                f"{len(set(groups))} dataset(s) weighted by w_d = 1 - mean accuracy on d "
                "(EIP paper, sec. 4); question difficulty: 1 - mean score over models"
            )
        elif method in ("irt-1pl", "irt-2pl"):
            res = (fit_1pl if method == "irt-1pl" else fit_2pl)(A)
            model_score, difficulty, iters = res.ability, res.difficulty, res.iterations
            se_d, se_a, se_status = res.difficulty_se, res.discrimination_se, res.se_status
            notes.append("joint maximum likelihood, the paper's configuration (H.4)")
        elif method in ("irt-1pl-mml", "irt-2pl-mml"):
            observed = ~np.isnan(A)
            all_right = np.all(np.where(observed, A == 1, True), axis=1)
            all_wrong = np.all(np.where(observed, A == 0, True), axis=1)
            keep = ~(all_right | all_wrong)
            mres = (fit_1pl_mml if method == "irt-1pl-mml" else fit_2pl_mml)(A[keep])
            model_score, iters = mres.ability, mres.iterations
            difficulty = np.full(A.shape[0], np.nan)
            difficulty[keep] = mres.difficulty
            se_d, se_a = np.full(A.shape[0], np.nan), np.full(A.shape[0], np.nan)
            se_d[keep], se_a[keep] = mres.difficulty_se, mres.discrimination_se
            se_status = mres.se_status
            notes.append("marginal maximum likelihood; model scores are EAP abilities")
            if (~keep).any():
                notes.append(
                    f"{int(all_right.sum())} question(s) solved by every model and "
                    f"{int(all_wrong.sum())} by none have an infinite MML difficulty: "
                    "left out of the fit, listed easiest / hardest with no value"
                )
                extreme_rank = np.where(all_wrong, 1, np.where(all_right, -1, 0))
        elif method == "mirt":
            mr = fit_mirt(A)
            logits = mr.ability @ mr.loadings.T + mr.intercept[None, :]
            model_score = (1.0 / (1.0 + np.exp(-logits))).mean(axis=1)
            difficulty, iters = mr.difficulty, mr.iterations
            notes.append(f"{mr.dimensions}-dimensional 2PL; model score: expected share solved")
        else:
            raise AnnotateError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    except ConvergenceError as err:
        raise AnnotateError(f"{method} did not converge: {err}", title="No convergence") from err
    except RankingInputError as err:
        raise AnnotateError(
            f"{method} cannot rank this matrix: {_named(err, matrix)}", title="Cannot rank"
        ) from err
    models = sorted(zip(matrix.models, map(float, model_score), strict=True), key=lambda t: -t[1])
    ext = extreme_rank if extreme_rank is not None else np.zeros(len(matrix.questions), np.int64)
    finite = np.isfinite(difficulty)
    order = sorted(
        range(len(matrix.questions)),
        key=lambda i: (-int(ext[i]), -float(difficulty[i]) if finite[i] else 0.0),
    )
    questions = [(matrix.questions[i], float(difficulty[i]) if finite[i] else None) for i in order]
    ses = None
    if se_d is not None and se_a is not None:
        ses = {q: (_se(se_d[i]), _se(se_a[i])) for i, q in enumerate(matrix.questions)}
        if se_status != "ok":
            notes.append(f"standard errors: {se_status} (given as null)")
    return Ranking(method, models, questions, iters, notes, ses, se_status)


def _named(err: Exception, matrix: Matrix) -> str:
    """Why ``err`` happened, with the question or model it is about named (``model 'gpt-4o'``).

    The names come from the error's index fields (:meth:`ranking.errors.RankingInputError.named`),
    never from parsing its text; other errors give their message as it is.
    """
    if isinstance(err, RankingInputError):
        return err.named(questions=matrix.questions, models=matrix.models)
    return str(err)


def write_ranking(r: Ranking, folder: Path) -> list[Path]:
    """Write ``<method>_models.csv`` and ``<method>_questions.csv`` under ``folder``."""
    from annotate.services.paths import inside, output_folder
    from annotate.services.report_files import write_csv

    folder = output_folder(folder)
    out = []
    for name, header, rows in (
        (
            f"{r.method}_models.csv",
            ["rank", "model", "score"],
            [[i + 1, m, repr(s)] for i, (m, s) in enumerate(r.models)],
        ),
        (
            f"{r.method}_questions.csv",
            ["rank", "question", "difficulty"],
            [[i + 1, q, repr(d)] for i, (q, d) in enumerate(r.questions)],
        ),
    ):
        # Model and question names are sanitised (report CSVs are read by people).
        out.append(write_csv(inside(folder, name), header, rows))
    return out
