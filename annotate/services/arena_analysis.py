"""Arena analysis: votes -> battle arrays -> ratings, annotator status and signals.

Serves ``annotate rate``, ``annotate monitor`` and the reports. The statistics
are in :mod:`ranking`; this module only builds arrays and assembles results.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.errors import AnnotateError, StudyNotFoundError
from annotate.names import one_line
from annotate.services import formats
from annotate.services.arrays import vote_arrays
from annotate.store import repo
from ranking.arena import stable_arena
from ranking.errors import RankingInputError
from ranking.pairwise import elo_bootstrap, m_elo
from ranking.reliability import annotator_signals, majority_agreement

METHODS = ("elo", "m-elo", "am-elo")


@dataclass(frozen=True)
class BattleArrays:
    """Decided votes of an arena as parallel arrays.

    ``outcome`` is 1 when model_a won, 0 when model_b won, 0.5 for a tie or
    both bad (``both_bad`` marks the latter). ``left_outcome`` is the same
    outcome seen from the side shown first, for position bias.
    """

    model_a: npt.NDArray[np.int64]
    model_b: npt.NDArray[np.int64]
    annotator: npt.NDArray[np.int64]
    outcome: npt.NDArray[np.float64]
    both_bad: npt.NDArray[np.bool_]
    left_outcome: npt.NDArray[np.float64]
    item: npt.NDArray[np.int64]
    response_ms: npt.NDArray[np.float64]
    text_length: npt.NDArray[np.float64]
    fast: npt.NDArray[np.bool_]
    models: list[str]
    annotators: list[str]

    def __len__(self) -> int:
        return int(self.outcome.shape[0])


def _arrays(
    pairs: list[tuple[str, str]],
    item: npt.NDArray[np.int64],
    annotator: npt.NDArray[np.int64],
    choice: npt.NDArray[np.int8],
    swapped: npt.NDArray[np.bool_],
    response_ms: npt.NDArray[np.float64],
    text_length: npt.NDArray[np.float64],
    fast: npt.NDArray[np.bool_],
    annotators: list[str],
) -> BattleArrays:
    models = sorted({m for p in pairs for m in p})
    mi = {m: i for i, m in enumerate(models)}
    a_of = np.array([mi[a] for a, _ in pairs], dtype=np.int64).reshape(-1)
    b_of = np.array([mi[b] for _, b in pairs], dtype=np.int64).reshape(-1)
    outcome = np.select([choice == 1, choice == 2], [1.0, 0.0], default=0.5)
    left = np.where(swapped, 1.0 - outcome, outcome)
    return BattleArrays(
        model_a=a_of[item] if len(item) else np.zeros(0, np.int64),
        model_b=b_of[item] if len(item) else np.zeros(0, np.int64),
        annotator=annotator,
        outcome=outcome.astype(np.float64),
        both_bad=choice == 4,
        left_outcome=left.astype(np.float64),
        item=item,
        response_ms=response_ms,
        text_length=text_length,
        fast=fast,
        models=models,
        annotators=annotators,
    )


def battles_from_study(
    engine: Engine, study: str, *, exclude: frozenset[str] = frozenset()
) -> BattleArrays:
    """The current votes of an arena study as :class:`BattleArrays`.

    Votes on the battles whose keys are in ``exclude`` are left out (annotators
    left with no vote too).
    """
    va = vote_arrays(engine, study)
    if va.kind != "arena":
        raise AnnotateError(
            f"study {study!r} is a {va.kind} study, not an arena study", title="Not an arena"
        )
    with Session(engine) as s:
        st = repo.get_study(s, study)
        assert st is not None
        bm = repo.battle_models(s, st.id)
        ids = repo.item_ids(s, st.id)
        lengths = repo.item_text_lengths(s, st.id, "arena")
    pairs = [(bm[k][1], bm[k][2]) for k in va.item_keys]
    tl = np.array([lengths.get(ids[k], 0) for k in va.item_keys], dtype=np.float64)
    ms = va.response_ms.astype(np.float64)
    ms[va.response_ms < 0] = np.nan
    keep = np.ones(len(va), dtype=bool)
    if exclude:
        dropped = np.array([k in exclude for k in va.item_keys], dtype=bool)
        keep = ~dropped[va.item] if len(va) else keep
    present, annotator = np.unique(va.annotator[keep], return_inverse=True)
    return _arrays(
        pairs,
        va.item[keep],
        annotator.astype(np.int64).reshape(-1),
        va.choice[keep],
        va.swapped[keep],
        ms[keep],
        tl[va.item[keep]] if keep.any() else np.zeros(0),
        va.fast[keep],
        [va.annotators[int(a)] for a in present],
    )


def battles_from_file(path: Path) -> BattleArrays:
    """Battles from a Chatbot Arena or LLMFAO file (no database)."""
    cols = formats.sniff_columns(path)
    if {"model_a", "model_b", "winner", "judge"} <= cols:
        rec = formats.parse_chatbot_arena(path, "rate")
    elif {"id", "model_x", "model_y", "worker", "winner", "left", "right"} <= cols:
        rec = formats.parse_llmfao(path, "rate")
    else:
        from annotate.errors import InputFileError

        raise InputFileError(
            path,
            f"unrecognised columns ({', '.join(sorted(cols))})",
            expected="Chatbot Arena battles (model_a, model_b, winner, judge) or LLMFAO votes "
            "(id, prompt, model_x, model_y, worker, winner, left, right)",
        )
    keys = list(rec.battles)
    kidx = {k: i for i, k in enumerate(keys)}
    names = sorted({v.annotator for v in rec.votes})
    aidx = {a: i for i, a in enumerate(names)}
    code = {"model_a": 1, "model_b": 2, "tie": 3, "both_bad": 4}
    n = len(rec.votes)
    return _arrays(
        [rec.battles[k][:2] for k in keys],
        np.array([kidx[v.item_key] for v in rec.votes], dtype=np.int64),
        np.array([aidx[v.annotator] for v in rec.votes], dtype=np.int64),
        np.array([code[v.choice] for v in rec.votes], dtype=np.int8),
        np.zeros(n, dtype=bool),
        np.full(n, np.nan),
        np.zeros(n),
        np.zeros(n, dtype=bool),
        names,
    )


@dataclass(frozen=True)
class ModelRating:
    model: str
    rating: float
    lower: float
    upper: float
    rank: int
    battles: int


@dataclass(frozen=True)
class AnnotatorRow:
    annotator: str
    votes: int
    status: str
    """``pending``, ``reliable`` or ``flagged``."""
    reason: str
    ability: float | None
    ability_lower: float | None
    ability_upper: float | None
    tie_rate: float | None
    both_bad_rate: float | None
    left_share: float | None
    left_p_value: float | None
    fast_share: float | None
    majority_agreement: float | None


@dataclass(frozen=True)
class RatingReport:
    method: str
    models: list[ModelRating]
    annotators: list[AnnotatorRow]
    n_battles: int
    iterations: int
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    excluded_self_identifying: int = 0
    """Battles left out because a response names a model or its maker."""
    excluded_self_identifying_votes: int = 0
    """Current votes on those battles."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "n_battles": self.n_battles,
            "iterations": self.iterations,
            "settings": self.settings,
            "notes": self.notes,
            "excluded_self_identifying": self.excluded_self_identifying,
            "excluded_self_identifying_votes": self.excluded_self_identifying_votes,
            "models": [asdict(m) for m in self.models],
            "annotators": [asdict(a) for a in self.annotators],
        }


def _f(x: Any) -> float | None:
    if x is None or x is np.ma.masked:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _signals(b: BattleArrays) -> tuple[Any, Any]:
    """Per-annotator signals: position bias on the sides as shown; majority agreement on
    labels relative to the item (so two annotators who saw the sides swapped but chose
    the same model agree)."""
    timed = ~np.isnan(b.response_ms)
    sig = annotator_signals(
        b.annotator,
        b.left_outcome,
        both_bad=b.both_bad,
        response_time=np.where(timed, b.response_ms / 1000.0, np.nan) if timed.any() else None,
        text_length=b.text_length if timed.any() else None,
        n_annotators=len(b.annotators),
    )
    label = np.where(b.both_bad, 3, np.round(b.outcome * 2).astype(np.int64))
    maj = majority_agreement(b.item, b.annotator, label, n_annotators=len(b.annotators))
    return sig, maj


def rate(
    b: BattleArrays,
    method: str = "am-elo",
    *,
    action: str = "warn",
    delta: int | None = None,
    epsilon: float | None = None,
    both_bad_as: str = "tie",
    bootstrap_rounds: int = 200,
    seed: int = 0,
) -> RatingReport:
    """Ratings of the models, and for ``am-elo`` the Stable Arena status of each annotator.

    ``delta`` and ``epsilon`` None means the dynamic thresholds of
    :func:`stable_arena`; give numbers for the paper's fixed ones.
    """
    if method not in METHODS:
        raise AnnotateError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    if len(b) == 0:
        raise AnnotateError("there are no votes to rate yet", title="No votes")
    n_m = len(b.models)
    battles = np.bincount(np.concatenate([b.model_a, b.model_b]), minlength=n_m)
    try:
        sig, maj = _signals(b)
    except RankingInputError:
        sig, maj = None, None
    notes: list[str] = []
    try:
        if method == "elo":
            r = elo_bootstrap(
                b.model_a,
                b.model_b,
                b.outcome,
                n_models=n_m,
                n_rounds=bootstrap_rounds,
                both_bad=b.both_bad,
                both_bad_as=both_bad_as,
                rng=seed,
            )
            ratings, lower, upper, ranks, iters = r.ratings, r.lower, r.upper, r.ranks, r.iterations
            status = None
        elif method == "m-elo":
            r2 = m_elo(
                b.model_a,
                b.model_b,
                b.outcome,
                n_models=n_m,
                both_bad=b.both_bad,
                both_bad_as=both_bad_as,
            )
            ratings, lower, upper, ranks, iters = (
                r2.ratings,
                r2.lower,
                r2.upper,
                r2.ranks,
                r2.iterations,
            )
            status = None
        else:
            r3 = stable_arena(
                b.model_a,
                b.model_b,
                b.annotator,
                b.outcome,
                n_models=n_m,
                n_annotators=len(b.annotators),
                delta=delta,
                epsilon=epsilon,
                action=action,  # type: ignore[arg-type]
                both_bad=b.both_bad,
                both_bad_as=both_bad_as,
            )  # type: ignore[arg-type]
            ratings, lower, upper, ranks, iters = (
                r3.ratings,
                r3.lower,
                r3.upper,
                r3.ranks,
                r3.iterations,
            )
            status = r3
            notes.append(f"delta: {r3.delta_rule}")
            notes.append(f"epsilon: {r3.epsilon_rule}")
    except RankingInputError as err:
        raise AnnotateError(f"cannot rate these battles: {err}", title="Cannot rate") from err
    models = sorted(
        (
            ModelRating(
                b.models[i],
                float(ratings[i]),
                float(lower[i]),
                float(upper[i]),
                int(ranks[i]),
                int(battles[i]),
            )
            for i in range(n_m)
        ),
        key=lambda m: (m.rank, -m.rating),
    )
    counts = np.bincount(b.annotator, minlength=len(b.annotators))
    rows: list[AnnotatorRow] = []
    for k, name in enumerate(b.annotators):
        st, reason, ab, lo, hi = "reliable", "", None, None, None
        if status is not None:
            st, reason = status.status[k], status.reasons[k]
            ab = _f(status.abilities[k])
            se = _f(status.ability_standard_errors[k])
            if se is not None and ab is not None:
                lo, hi = ab - 1.96 * se, ab + 1.96 * se
        rows.append(
            AnnotatorRow(
                annotator=name,
                votes=int(counts[k]),
                status=st,
                reason=reason,
                ability=ab,
                ability_lower=lo,
                ability_upper=hi,
                tie_rate=_f(sig.rates.tie_rate[k]) if sig else None,
                both_bad_rate=_f(sig.rates.both_bad_rate[k]) if sig else None,
                left_share=_f(sig.position.left_share[k]) if sig else None,
                left_p_value=_f(sig.position.p_value[k]) if sig else None,
                fast_share=_f(sig.too_fast.share[k]) if sig and sig.too_fast else None,
                majority_agreement=_f(maj.agreement[k]) if maj is not None else None,
            )
        )
    settings = {"action": action, "delta": delta, "epsilon": epsilon, "both_bad_as": both_bad_as}
    if status is not None:
        settings["delta_used"] = int(status.delta)
    return RatingReport(method, models, rows, len(b), int(iters), settings, notes)


def rate_study(
    engine: Engine,
    study: str,
    method: str = "am-elo",
    *,
    include_self_identifying: bool = False,
    identity_phrases: tuple[str, ...] = (),
    **kw: Any,
) -> RatingReport:
    """:func:`rate` on a study's current votes.

    Battles in which a response names a model of the study or its maker
    (:func:`annotate.services.identity.self_identifying_battles`, with
    ``identity_phrases`` added to the study's) are left out unless
    ``include_self_identifying``, as the Chatbot Arena does; the report counts them.
    """
    from annotate.services.identity import self_identifying_battles

    with Session(engine) as s:
        if repo.get_study(s, study) is None:
            raise StudyNotFoundError(study, repo.study_names(s))
    scan = self_identifying_battles(engine, study, extra_phrases=identity_phrases)
    if include_self_identifying or not scan.hits:
        rep = rate(battles_from_study(engine, study), method, **kw)
        if scan.hits:
            rep.notes.append(
                f"{len(scan.hits)} battle(s) with a self-identifying response kept "
                "(--include-self-identifying)"
            )
        return rep
    full = battles_from_study(engine, study)
    kept = battles_from_study(engine, study, exclude=scan.battles)
    if len(full) and not len(kept):
        raise AnnotateError(
            f"every vote of study {one_line(study)!r} is on a battle in which a response names "
            "a model or its maker; rate them anyway with --include-self-identifying",
            title="No votes",
        )
    rep = rate(kept, method, **kw)
    rep.notes.append(
        f"left out {len(scan.hits)} battle(s) ({len(full) - len(kept)} vote(s)) in which a "
        "response names a model or its maker; --include-self-identifying keeps them"
    )
    return replace(
        rep,
        excluded_self_identifying=len(scan.hits),
        excluded_self_identifying_votes=len(full) - len(kept),
    )
