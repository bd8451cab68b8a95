"""Designing a difficulty study from a response matrix (``annotate plan pairs``).

:func:`plan_pairs` names the questions, finds their subjects, runs the estimators and
hands the arrays to :func:`ranking.design.select_pairs`; :func:`write_pairs` writes the
chosen pairs as a study's ``pairs.csv`` (``pair_id,first,second``).
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from annotate.errors import AnnotateError
from annotate.services.estimators import Matrix, estimate

if TYPE_CHECKING:
    from sqlalchemy import Engine

__all__ = [
    "DIFFICULTIES",
    "DISAGREEMENT_ESTIMATORS",
    "ArenaPowerPlan",
    "PairPlan",
    "PowerPlan",
    "plan_arena_power",
    "plan_pairs",
    "plan_power",
    "write_pairs",
]

DIFFICULTIES = ("eip", "accuracy")
"""What the difficulty gap is measured on (``--difficulty``)."""

DISAGREEMENT_ESTIMATORS = ("eip", "irt-1pl", "simple")
"""The estimators whose disagreement ``--strategy disagreement`` weights by."""


@dataclass(frozen=True)
class PairPlan:
    """The pairs chosen, with what a lead needs to judge them."""

    pairs: list[dict[str, Any]]
    """``pair_id``, ``first``, ``second``, ``subject``, ``gap``, ``stratum`` and
    ``disagreement`` (None unless the estimators ran) of each pair, in file order."""
    strategy: str
    seed: int
    max_per_question: int
    difficulty: str
    requested: int
    questions: int
    """Questions that could be paired (finite difficulty, a subject)."""
    subjects: dict[str, int]
    """Pairs per subject."""
    strata: dict[str, int]
    """Pairs per gap stratum (``large``, ``medium``, ``small``)."""
    candidates: dict[str, int]
    """Candidate pairs per gap stratum."""
    gap_edges: tuple[float | None, float | None]
    estimators: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` document."""
        return {
            "strategy": self.strategy,
            "seed": self.seed,
            "max_per_question": self.max_per_question,
            "difficulty": self.difficulty,
            "requested": self.requested,
            "chosen": len(self.pairs),
            "questions": self.questions,
            "subjects": self.subjects,
            "strata": self.strata,
            "candidates": self.candidates,
            "gap_edges": list(self.gap_edges),
            "estimators": self.estimators,
            "notes": self.notes,
            "pairs": self.pairs,
        }


def _subjects_of(
    matrix: Matrix, subjects: dict[str, str] | None, notes: list[str]
) -> list[str | None]:
    """Each question's subject: from ``subjects``, else the task of harness ids
    (``task/doc_id``), else one subject for all (said in ``notes``)."""
    if subjects:
        out = [subjects.get(q) or None for q in matrix.questions]
        missing = sum(s is None for s in out)
        if missing:
            notes.append(f"{missing} question(s) have no subject and are left out")
        return out
    if matrix.questions and all("/" in q for q in matrix.questions):
        notes.append("subjects: the task of each lm-evaluation-harness question (task/doc_id)")
        return [q.rsplit("/", 1)[0] for q in matrix.questions]
    notes.append(
        "no subjects given (--questions FILE or questions.jsonl beside the matrix): "
        "all questions count as one subject"
    )
    return ["all"] * len(matrix.questions)


def _difficulty(matrix: Matrix, method: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Each question's difficulty by ``method`` (NaN where it gives none), in matrix order."""
    r = estimate(matrix, method)
    by_q = {q: (math.nan if d is None else d) for q, d in r.questions}
    return np.array([by_q[q] for q in matrix.questions], dtype=np.float64)


def plan_pairs(
    matrix: Matrix,
    subjects: dict[str, str] | None = None,
    *,
    n: int = 70,
    strategy: str = "stratified",
    seed: int = 0,
    max_per_question: int = 2,
    difficulty: str = "eip",
) -> PairPlan:
    """Choose ``n`` same-subject question pairs of ``matrix`` for a difficulty study.

    Parameters
    ----------
    matrix : Matrix
        The response matrix (:func:`annotate.services.estimators.read_matrix` or
        :func:`~annotate.services.estimators.study_matrix`).
    subjects : dict, optional
        Question id -> subject; questions without one are left out. Without it, the task
        of lm-evaluation-harness ids, else a single subject.
    n, strategy, seed, max_per_question
        As :func:`ranking.design.select_pairs`.
    difficulty : {"eip", "accuracy"}
        What the gap strata are cut on: EIP difficulty or 1 - mean score.

    Raises
    ------
    AnnotateError
        A bad option (one line), an estimator that fails, or no pair to choose.
    """
    from ranking.design import STRATA, STRATEGIES, select_pairs
    from ranking.errors import RankingInputError

    if strategy not in STRATEGIES:
        raise AnnotateError(
            f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}"
        )
    if difficulty not in DIFFICULTIES:
        raise AnnotateError(
            f"unknown difficulty {difficulty!r}; expected one of {', '.join(DIFFICULTIES)}"
        )
    if n < 1:
        raise AnnotateError(f"--n must be at least 1, got {n}")
    if max_per_question < 1:
        raise AnnotateError(f"--max-per-question must be at least 1, got {max_per_question}")
    notes: list[str] = list(matrix.notes)
    subj = _subjects_of(matrix, subjects, notes)
    d = _difficulty(matrix, difficulty)
    if difficulty == "eip":
        notes.append("gap: EIP difficulty (questions solved by every model or by none at 0 / 1)")
    else:
        notes.append("gap: 1 - mean score over models")
    d = np.where([s is not None for s in subj], d, np.nan)
    ests: list[np.ndarray[Any, np.dtype[np.float64]]] = []
    used: list[str] = []
    if strategy == "disagreement":
        for method in DISAGREEMENT_ESTIMATORS:
            try:
                ests.append(_difficulty(matrix, method))
                used.append(method)
            except AnnotateError as err:
                notes.append(f"{method} left out of the disagreement: {err}")
        if len(ests) < 2:
            raise AnnotateError(
                "the disagreement strategy needs at least two estimators that run on this "
                "matrix; use --strategy stratified",
                title="Cannot plan",
            )
    labels = [s if s is not None else "" for s in subj]
    try:
        design = select_pairs(
            d,
            labels,
            n,
            strategy=strategy,
            seed=seed,
            max_per_question=max_per_question,
            estimators=ests,
        )
    except RankingInputError as err:
        raise AnnotateError(str(err), title="Cannot plan") from err
    if design.n == 0:
        raise AnnotateError(
            "no two questions of the same subject have a difficulty: nothing to pair",
            title="Cannot plan",
        )
    if design.sampled:
        notes.append(f"{design.candidates} candidate pairs sampled from all same-subject pairs")
    if design.n < n:
        notes.append(
            f"only {design.n} of {n} pairs: the candidates or the cap of {max_per_question} "
            "pairs per question ran out"
        )
    width = len(str(design.n))
    pairs: list[dict[str, Any]] = []
    per_subject: dict[str, int] = {}
    for k in range(design.n):
        a, b = int(design.first[k]), int(design.second[k])
        s = labels[a]
        per_subject[s] = per_subject.get(s, 0) + 1
        dis = None if design.disagreement is None else float(design.disagreement[k])
        pairs.append(
            {
                "pair_id": f"p{k + 1:0{width}d}",
                "first": matrix.questions[a],
                "second": matrix.questions[b],
                "subject": s,
                "gap": float(design.gap[k]),
                "stratum": STRATA[int(design.stratum[k])],
                "disagreement": dis,
            }
        )
    strata = np.bincount(design.stratum, minlength=3)
    lo, hi = design.gap_edges
    return PairPlan(
        pairs=pairs,
        strategy=strategy,
        seed=seed,
        max_per_question=max_per_question,
        difficulty=difficulty,
        requested=n,
        questions=int(np.isfinite(d).sum()),
        subjects=dict(sorted(per_subject.items())),
        strata={name: int(strata[i]) for i, name in enumerate(STRATA)},
        candidates={name: design.candidates_per_stratum[i] for i, name in enumerate(STRATA)},
        gap_edges=(
            lo if math.isfinite(lo) else None,
            hi if math.isfinite(hi) else None,
        ),
        estimators=used,
        notes=notes,
    )


def write_pairs(plan: PairPlan, path: Path) -> Path:
    """Write ``plan``'s pairs as a ``pairs.csv`` (``pair_id,first,second``).

    Raises
    ------
    AnnotateError
        ``path`` exists already, or its folder does not.
    """
    try:
        with path.open("x", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["pair_id", "first", "second"])
            for p in plan.pairs:
                w.writerow([p["pair_id"], p["first"], p["second"]])
    except FileExistsError as err:
        raise AnnotateError(
            f"{path} exists already; give another --out", title="Cannot write"
        ) from err
    except (FileNotFoundError, NotADirectoryError) as err:
        raise AnnotateError(f"{path}: its folder does not exist", title="Cannot write") from err
    return path


# ---------------------------------------------------------------------------
# sample-size planning (``annotate plan power``)


@dataclass(frozen=True)
class PowerPlan:
    """The simulated outcome of each study size (:func:`plan_power`)."""

    rows: list[dict[str, Any]]
    """``pairs``, ``annotators``, ``ci_width_consensus``, ``ci_width_kappa``, ``power``
    and, beside them, ``*_sd``, ``power_se``, ``consensus``, ``kappa``, ``trials``."""
    settings: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` document: ``{"rows": [...], "settings": {...}}``."""
        return {"rows": self.rows, "settings": self.settings}


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise AnnotateError(message, title="Cannot plan")


def plan_power(
    pairs: list[int],
    annotators: list[int],
    *,
    reliability_sd: float = 0.5,
    skip_rate: float = 0.1,
    annotator_accuracy: float = 0.75,
    estimator_accuracy: tuple[float, float] = (0.8, 0.7),
    trials: int = 100,
    n_boot: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
) -> PowerPlan:
    """Simulate difficulty studies of each size (:func:`ranking.design.difficulty_power`).

    Raises
    ------
    AnnotateError
        A bad option, in one line naming it.
    """
    from ranking.design import difficulty_power

    _check(bool(pairs) and all(p >= 1 for p in pairs), f"--pairs must be >= 1, got {pairs}")
    _check(
        bool(annotators) and all(a >= 1 for a in annotators),
        f"--annotators must be >= 1, got {annotators}",
    )
    _check(reliability_sd >= 0, f"--reliability-sd must be >= 0, got {reliability_sd}")
    _check(0 <= skip_rate < 1, f"--skip-rate must be in [0, 1), got {skip_rate}")
    _check(
        0.5 < annotator_accuracy < 1,
        f"--annotator-accuracy must be in (0.5, 1), got {annotator_accuracy}",
    )
    _check(
        len(estimator_accuracy) == 2 and all(0 < e < 1 for e in estimator_accuracy),
        f"--estimator-accuracy must be two numbers in (0, 1), got {list(estimator_accuracy)}",
    )
    _check(trials >= 1, f"--trials must be >= 1, got {trials}")
    _check(n_boot >= 1, f"--boot must be >= 1, got {n_boot}")
    _check(0 < alpha < 1, f"--alpha must be in (0, 1), got {alpha}")
    rows = difficulty_power(
        pairs,
        annotators,
        trials=trials,
        n_boot=n_boot,
        alpha=alpha,
        annotator_accuracy=annotator_accuracy,
        reliability_sd=reliability_sd,
        skip_rate=skip_rate,
        estimator_accuracy=(float(estimator_accuracy[0]), float(estimator_accuracy[1])),
        seed=seed,
    )
    settings = {
        "reliability_sd": reliability_sd,
        "skip_rate": skip_rate,
        "annotator_accuracy": annotator_accuracy,
        "estimator_accuracy": list(estimator_accuracy),
        "trials": trials,
        "boot": n_boot,
        "alpha": alpha,
        "seed": seed,
        "interval": "95% two-way percentile bootstrap (pairs and annotators), as the report's "
        "'CI both', of the first estimator",
        "test": "McNemar's exact test on the consensus pairs",
    }
    return PowerPlan([asdict(r) for r in rows], settings)


@dataclass(frozen=True)
class ArenaPowerPlan:
    """Votes per model pair for a target rating interval width (:func:`plan_arena_power`)."""

    models: int
    target_width: float
    rating_sd: float
    trials: int
    seed: int
    votes_per_pair: int
    total_votes: int
    width: float | None
    """Mean 95% interval width at ``votes_per_pair`` (None when every fit failed)."""
    reached: bool
    curve: list[dict[str, float | None]]
    """Every count simulated: ``votes_per_pair``, mean ``width`` and its ``sd``."""
    failed: int
    closed_form: int
    """Votes per pair by the closed form at equal strengths."""
    max_votes_per_pair: int
    """The largest count simulated (:data:`MAX_SIMULATED_VOTES` over the model pairs)."""

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` document."""
        return asdict(self)


MAX_SIMULATED_VOTES = 1_000_000
"""The most votes one simulated arena of ``plan power --arena`` holds; beyond, the plan
says the target was not reached and gives the closed form."""


def plan_arena_power(
    models: int,
    target_width: float,
    *,
    rating_sd: float = 100.0,
    trials: int = 20,
    seed: int = 0,
) -> ArenaPowerPlan:
    """Votes per model pair for a mean 95% rating interval of ``target_width`` Elo points
    (:func:`ranking.design.arena_votes_for_width`).

    Raises
    ------
    AnnotateError
        A bad option, in one line naming it.
    """
    from ranking.design import arena_votes_for_width

    _check(models >= 2, f"--models must be >= 2, got {models}")
    _check(target_width > 0, f"--target-width must be > 0 Elo points, got {target_width}")
    _check(rating_sd >= 0, f"--rating-sd must be >= 0, got {rating_sd}")
    _check(trials >= 1, f"--trials must be >= 1, got {trials}")
    cap = max(1, MAX_SIMULATED_VOTES // (models * (models - 1) // 2))
    p = arena_votes_for_width(
        models,
        target_width,
        rating_sd=rating_sd,
        trials=trials,
        seed=seed,
        max_votes_per_pair=cap,
    )
    return ArenaPowerPlan(
        models,
        float(target_width),
        float(rating_sd),
        trials,
        seed,
        p.votes_per_pair,
        p.total_votes,
        _finite(p.width),
        p.reached,
        [{"votes_per_pair": v, "width": _finite(w), "sd": _finite(sd)} for v, w, sd in p.curve],
        p.failed,
        p.closed_form,
        cap,
    )


# ---------------------------------------------------------------------------
# arena studies: which battles to show first (``annotate plan pairs`` on an arena)

BATTLE_HEADER = ("battle_id", "prompt_id", "model_a", "model_b")
"""The arena study's ``battles.csv`` header (``question_pairs/README.md``)."""


@dataclass(frozen=True)
class BattlePlan:
    """The battles of an arena in the order to show them (:func:`plan_battle_order`)."""

    battles: list[dict[str, Any]]
    """``position`` (from 1), ``battle_id``, ``prompt_id``, ``model_a``, ``model_b``,
    ``round`` (battles of the same model pair before it) and ``weight`` (the expected
    information ``4 p (1 - p)`` of a vote on its pair), first shown first."""
    seed: int
    models: int
    pairs: int
    ratings: str
    """Where the information weights came from."""
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` document."""
        return {
            "kind": "arena",
            "seed": self.seed,
            "models": self.models,
            "pairs": self.pairs,
            "chosen": len(self.battles),
            "ratings": self.ratings,
            "notes": self.notes,
            "battles": self.battles,
        }


Battle = tuple[str, str, str, str]
"""(battle_id, prompt_id, model_a, model_b); prompt_id may be empty."""


def is_battle_file(path: Path) -> bool:
    """Whether ``path`` is an arena's ``battles.csv`` (or a folder holding one and no
    ``pairs.csv``): a CSV whose header has ``battle_id``, ``model_a`` and ``model_b``."""
    if path.is_dir():
        path = path / "battles.csv"
        if not path.is_file():
            return False
    if path.suffix.lower() != ".csv" or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8", newline="") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError):
        return False
    return {"battle_id", "model_a", "model_b"} <= {h.strip() for h in header}


def read_battles(path: Path) -> list[Battle]:
    """The battles of an arena's ``battles.csv`` (or of the folder holding one).

    Raises
    ------
    InputFileError
        A missing field, an empty or repeated battle id, a battle of a model with itself:
        one line naming the file, the line and the field.
    """
    from annotate.errors import InputFileError

    if path.is_dir():
        path = path / "battles.csv"
    out: list[Battle] = []
    seen: set[str] = set()
    try:
        with path.open(encoding="utf-8", newline="") as f:
            rows = csv.DictReader(f)
            for line, row in enumerate(rows, start=2):
                vals = {k: (row.get(k) or "").strip() for k in BATTLE_HEADER}
                for k in ("battle_id", "model_a", "model_b"):
                    if not vals[k]:
                        raise InputFileError(path, "empty", line=line, field=k, expected="a value")
                if vals["battle_id"] in seen:
                    raise InputFileError(
                        path, "repeated", line=line, field="battle_id", expected="unique ids"
                    )
                if vals["model_a"] == vals["model_b"]:
                    raise InputFileError(
                        path,
                        "a model against itself",
                        line=line,
                        field="model_b",
                        expected="a model other than model_a",
                    )
                seen.add(vals["battle_id"])
                out.append((vals["battle_id"], vals["prompt_id"], vals["model_a"], vals["model_b"]))
    except (OSError, UnicodeDecodeError) as err:
        raise InputFileError(path, f"cannot be read ({err})") from err
    return out


def study_kind(engine: Engine, study: str) -> str | None:
    """The kind of the stored study ``study`` (None when there is none of that name)."""
    from sqlmodel import Session

    from annotate.store import repo

    with Session(engine) as s:
        st = repo.get_study(s, study)
    return None if st is None else st.kind


def study_battles(engine: Engine, study: str) -> tuple[list[Battle], dict[str, float] | None, str]:
    """A stored arena study's battles, and the m-ELO ratings of its current votes (None
    without votes or when they cannot be fitted), with a line saying which."""
    from sqlmodel import Session

    from annotate.services.arena_analysis import battles_from_study
    from annotate.store import repo
    from ranking.errors import ConvergenceError, RankingInputError
    from ranking.pairwise import m_elo

    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None:
            from annotate.errors import StudyNotFoundError

            raise StudyNotFoundError(study, repo.study_names(s))
        bm = repo.battle_models(s, st.id)
    battles = [(k, p or "", a, b) for k, (p, a, b) in sorted(bm.items())]
    b = battles_from_study(engine, study)
    if len(b) == 0:
        return battles, None, "equal (no votes yet): pure round robin"
    try:
        fit = m_elo(b.model_a, b.model_b, b.outcome, n_models=len(b.models), both_bad=b.both_bad)
    except (RankingInputError, ConvergenceError) as err:
        return battles, None, f"equal: the {len(b)} current votes cannot be fitted yet ({err})"
    ratings = {m: float(r) for m, r in zip(b.models, fit.ratings, strict=True)}
    return battles, ratings, f"m-ELO fit of the {len(b)} current votes"


def plan_battle_order(
    battles: list[Battle],
    *,
    ratings: dict[str, float] | None = None,
    ratings_note: str = "equal: pure round robin",
    seed: int = 0,
) -> BattlePlan:
    """Order ``battles`` with :func:`ranking.design.order_battles` (every model pair
    first, balanced, then by expected information under ``ratings``).

    Raises
    ------
    AnnotateError
        No battle to order.
    """
    from ranking.design import order_battles

    if not battles:
        raise AnnotateError("the arena has no battles to order", title="Cannot plan")
    models = sorted({m for _, _, a, b in battles for m in (a, b)})
    idx = {m: i for i, m in enumerate(models)}
    notes: list[str] = []
    r = None
    if ratings is not None:
        mean = sum(ratings.values()) / len(ratings) if ratings else 0.0
        missing = [m for m in models if m not in ratings]
        if missing:
            notes.append(f"{len(missing)} model(s) without votes weighted at the mean rating")
        r = np.array([ratings.get(m, mean) for m in models], dtype=np.float64)
    o = order_battles(
        [idx[a] for _, _, a, _ in battles],
        [idx[b] for _, _, _, b in battles],
        n_models=len(models),
        ratings=r,
        seed=seed,
    )
    rows = []
    for pos, (i, rnd, w) in enumerate(zip(o.order, o.round, o.weight, strict=True), start=1):
        key, prompt, a, b = battles[int(i)]
        rows.append(
            {
                "position": pos,
                "battle_id": key,
                "prompt_id": prompt,
                "model_a": a,
                "model_b": b,
                "round": int(rnd),
                "weight": float(w),
            }
        )
    return BattlePlan(rows, seed, len(models), o.pairs, ratings_note, notes)


def write_battles(plan: BattlePlan, path: Path) -> Path:
    """Write ``plan``'s battles as an arena study's ``battles.csv``, in the planned order.

    Raises
    ------
    AnnotateError
        ``path`` exists already, or its folder does not.
    """
    try:
        with path.open("x", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(BATTLE_HEADER)
            for b in plan.battles:
                w.writerow([b[k] for k in BATTLE_HEADER])
    except FileExistsError as err:
        raise AnnotateError(
            f"{path} exists already; give another --out", title="Cannot write"
        ) from err
    except (FileNotFoundError, NotADirectoryError) as err:
        raise AnnotateError(f"{path}: its folder does not exist", title="Cannot write") from err
    return path
