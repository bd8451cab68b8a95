"""Arena analysis: votes -> battle arrays -> ratings, annotator status and signals.

Serves ``annotate rate``, ``annotate monitor`` and the reports. The statistics
are in :mod:`ranking`; this module only builds arrays and assembles results.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.choices import OUTCOME, Choice, Outcome
from annotate.errors import AnnotateError, StudyNotFoundError
from annotate.names import one_line
from annotate.services import formats
from annotate.services.arrays import vote_arrays
from annotate.store import repo
from annotate.views import AnnotatorQuality, StudyQuality
from annotate.views import describe_reason as describe_reason  # the CLI's `rate` uses it
from ranking.arena import Evidence, stable_arena
from ranking.errors import ConvergenceError, RankingInputError
from ranking.pairwise import elo_bootstrap, m_elo
from ranking.proportions import both_bad_shares
from ranking.reliability import annotator_signals, majority_agreement

METHODS = ("elo", "m-elo", "am-elo")

FAST_VOTE_RULE = (
    "a vote is fast when its response time (from the paint of the item to the key) is below "
    "the study's min_response_ms; the flag is set when the vote is cast and stored with it"
)
"""The one definition of a fast vote, used by the export, the monitor, the report and rate."""


@dataclass(frozen=True)
class BattleArrays:
    """Decided votes of an arena as parallel arrays.

    ``outcome`` is 1 when model_a won, 0 when model_b won, 0.5 for a tie or
    both bad (``both_bad`` marks the latter). ``left_outcome`` is the same
    outcome seen from the side shown first, for position bias; ``left_chosen``
    is True when the response shown first won (False on ties). ``fast`` is the
    vote's stored flag (:data:`FAST_VOTE_RULE`).
    """

    model_a: npt.NDArray[np.int64]
    model_b: npt.NDArray[np.int64]
    annotator: npt.NDArray[np.int64]
    outcome: npt.NDArray[np.float64]
    both_bad: npt.NDArray[np.bool_]
    left_outcome: npt.NDArray[np.float64]
    left_chosen: npt.NDArray[np.bool_]
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
    outcome = np.select([choice == Outcome.FIRST, choice == Outcome.SECOND], [1.0, 0.0], 0.5)
    left = np.where(swapped, 1.0 - outcome, outcome)
    return BattleArrays(
        model_a=a_of[item] if len(item) else np.zeros(0, np.int64),
        model_b=b_of[item] if len(item) else np.zeros(0, np.int64),
        annotator=annotator,
        outcome=outcome.astype(np.float64),
        both_bad=choice == Outcome.BOTH_BAD,
        left_outcome=left.astype(np.float64),
        left_chosen=np.asarray(left == 1.0, dtype=bool),
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
    n = len(rec.votes)
    return _arrays(
        [rec.battles[k][:2] for k in keys],
        np.array([kidx[v.item_key] for v in rec.votes], dtype=np.int64),
        np.array([aidx[v.annotator] for v in rec.votes], dtype=np.int64),
        np.array([OUTCOME[Choice(v.choice)] for v in rec.votes], dtype=np.int8),
        np.array([bool(v.swapped) for v in rec.votes], dtype=bool),
        np.full(n, np.nan),
        np.zeros(n),
        np.zeros(n, dtype=bool),
        names,
    )


def _lowest_from_intervals(lower: Any, upper: Any) -> Any:
    """Worst rank by the interval rule: n minus the models whose interval lies below."""
    lo = np.asarray(lower, dtype=np.float64)
    up = np.asarray(upper, dtype=np.float64)
    below = np.searchsorted(np.sort(up), lo, side="left")
    return (lo.size - below).astype(np.int64)


@dataclass(frozen=True)
class ModelRating:
    model: str
    rating: float
    lower: float
    upper: float
    rank: int
    battles: int
    lowest_rank: int = 0
    """Worst rank the data allow (the rank class is ``rank..lowest_rank``): ``n_models``
    minus the number of models significantly below (am-ELO: the pairwise tests behind
    ``rank``; Elo and m-ELO: whose interval lies entirely below this model's)."""
    both_bad: dict[str, Any] | None = None
    """``{"share", "lower", "upper", "battles", "votes"}``: the share of the votes on the
    model's battles that said "both bad" (``votes`` of ``battles``), with its Wilson 95%
    interval (:func:`ranking.proportions.both_bad_shares`)."""


@dataclass(frozen=True)
class AnnotatorRow:
    annotator: str
    votes: int
    status: str
    """``pending``, ``reliable`` or ``flagged``."""
    reason: str
    """Why, in one sentence."""
    reasons: list[dict[str, Any]]
    """Flag reasons with their evidence, ``{"reason", "statistic", "threshold", "p_value"}``
    (``p_value`` adjusted across annotators; None for a certainty); empty unless flagged."""
    votes_to_verdict: int | None
    """About how many more votes until a verdict (pending annotators); None when decided."""
    ability: float | None
    ability_lower: float | None
    ability_upper: float | None
    tie_rate: float | None
    both_bad_rate: float | None
    left_share: float | None
    left_p_value: float | None
    fast_share: float | None
    """Share of the votes flagged fast (:data:`FAST_VOTE_RULE`); None without response times."""
    majority_agreement: float | None
    gold: dict[str, Any] | None = None
    """Gold accuracy (:func:`ranking.quality.gold_accuracy`): ``{"n", "hits", "rate",
    "lower", "upper", "threshold", "p_value"}`` (Wilson 95% interval; ``p_value`` the
    unadjusted one-sided exact binomial p-value of rate >= threshold, which the verdict
    adjusts across annotators as ``low_gold_accuracy``); None without gold votes."""
    consistency: dict[str, Any] | None = None
    """Self-consistency on swapped re-tests (:func:`ranking.quality.self_consistency`), the
    same fields (verdict reason ``inconsistent``); None without re-tests."""


def _reason_dict(d: dict[str, Any]) -> dict[str, Any]:
    """A flag reason for JSON: non-finite numbers become None."""
    return {
        "reason": str(d["reason"]),
        "statistic": _f(d["statistic"]),
        "threshold": _f(d["threshold"]),
        "p_value": _f(d["p_value"]),
    }


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
    agreement: dict[str, Any] = field(default_factory=dict)
    """Agreement among annotators on shared battles (:func:`judge_agreement`)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "n_battles": self.n_battles,
            "iterations": self.iterations,
            "settings": self.settings,
            "notes": self.notes,
            "excluded_self_identifying": self.excluded_self_identifying,
            "excluded_self_identifying_votes": self.excluded_self_identifying_votes,
            "agreement": self.agreement,
            "models": [asdict(m) for m in self.models],
            "annotators": [asdict(a) for a in self.annotators],
        }


def _f(x: Any) -> float | None:
    if x is None or x is np.ma.masked:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _listed(names: list[str], idx: Any, limit: int = 6) -> str:
    """``names`` at the indices ``idx`` (sanitised), at most ``limit`` of them."""
    if idx is None:
        return ""
    ids = [int(i) for i in np.asarray(idx).reshape(-1) if 0 <= int(i) < len(names)]
    shown = ", ".join(one_line(names[i]) for i in ids[:limit])
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")


def fit_problem(
    err: Exception, models: list[str], annotators: list[str], *, noun: str = "model"
) -> str:
    """Why a fit failed and what to do, worded from the error's structured fields.

    Uses ``reason``, ``models`` and ``annotators`` of
    :class:`ranking.errors.DegenerateDataError` and ``estimator`` / ``iterations``
    of :class:`ranking.errors.ConvergenceError`; the ranking message is never
    parsed. The advice names only what a user of the command line or the
    monitor can do (collect votes, rate groups separately, change a threshold).
    """
    if isinstance(err, ConvergenceError):
        what = getattr(err, "estimator", "") or "the"
        return (
            f"{what} fit did not converge after {getattr(err, 'iterations', 0)} iterations "
            "on these votes; collect more votes and try again"
        )
    reason = getattr(err, "reason", None)
    ms = _listed(models, getattr(err, "models", None))
    ks = _listed(annotators, getattr(err, "annotators", None))
    if reason == "disconnected":
        return (
            f"the comparisons are not connected: the {noun}s form groups never compared "
            "with each other"
            + (f" (one group: {ms})" if ms else "")
            + "; collect votes on pairs that link the groups, or rate each group separately"
        )
    if reason == "no_mle":
        return (
            f"{noun}(s) {ms or '(some)'} never lost (or never won) against the others, so "
            f"their ratings are unbounded; collect more votes on them"
        )
    if reason == "separated":
        return (
            f"annotator(s) {ks or '(some)'} agree or disagree with the ranking on every vote; "
            "collect more votes from them"
        )
    if reason in ("all_ties", "no_annotator_fitted"):
        return (
            "no annotator can be fitted yet: "
            + (f"annotator(s) {ks} voted tie on everything; " if ks else "")
            + "collect more decisive votes (or give a smaller --delta)"
        )
    if reason == "singular":
        return "these votes do not identify the ratings yet; collect more votes"
    if reason == "bootstrap_failed":
        return (
            "too few resamples of the annotators could be fitted for bootstrap intervals; "
            "collect more votes or use --boot 0 (Wald intervals)"
        )
    return f"these votes cannot be rated: {one_line(str(err))}"


def _signals(b: BattleArrays) -> tuple[Any, Any]:
    """Per-annotator signals: position bias on the sides as shown; majority agreement on
    labels relative to the item (so two annotators who saw the sides swapped but chose
    the same model agree)."""
    sig = annotator_signals(
        b.annotator, b.left_outcome, both_bad=b.both_bad, n_annotators=len(b.annotators)
    )
    label = np.where(b.both_bad, 3, np.round(b.outcome * 2).astype(np.int64))
    maj = majority_agreement(b.item, b.annotator, label, n_annotators=len(b.annotators))
    return sig, maj


def judge_agreement(b: BattleArrays) -> dict[str, Any]:
    """Agreement among annotators on the battles two or more of them judged.

    Labels are relative to the battle (``model_a``, ``model_b``, tie, both bad), so
    two annotators shown the sides in opposite orders who chose the same model agree.

    Returns
    -------
    dict
        ``shared_battles`` (battles with two or more votes), ``votes_on_shared``,
        ``annotators_on_shared``, ``pairwise_agreement`` (share of the pairs of votes on
        a shared battle that chose the same label) and ``krippendorff_alpha`` (nominal,
        over the same votes); the last two are None without a shared battle, alpha also
        when every vote has the same label.
    """
    label = np.where(b.both_bad, 3, np.round(b.outcome * 2).astype(np.int64))
    _, inv, m_u = np.unique(b.item, return_inverse=True, return_counts=True)
    shared = m_u[inv] >= 2
    out: dict[str, Any] = {
        "shared_battles": int((m_u >= 2).sum()),
        "votes_on_shared": int(shared.sum()),
        "annotators_on_shared": int(np.unique(b.annotator[shared]).size),
        "pairwise_agreement": None,
        "krippendorff_alpha": None,
        "labels": "model_a, model_b, tie, both_bad (relative to the battle)",
    }
    if not shared.any():
        return out
    unit = inv[shared]
    n_units = int(m_u.size)
    n_uc = np.zeros((n_units, 4))
    np.add.at(n_uc, (unit, label[shared]), 1.0)
    m = n_uc.sum(axis=1)
    keep = m >= 2
    n_uc, m = n_uc[keep], m[keep]
    pairs = m * (m - 1) / 2
    out["pairwise_agreement"] = float((n_uc * (n_uc - 1) / 2).sum() / pairs.sum())
    n = m.sum()
    d_o = float((n_uc * (m[:, None] - n_uc) / (m[:, None] - 1)).sum() / n)
    n_c = n_uc.sum(axis=0)
    d_e = float((n_c * (n - n_c)).sum() / (n * (n - 1)))
    out["krippendorff_alpha"] = 1.0 - d_o / d_e if d_e > 0 else None
    return out


BOTH_BAD_AS: dict[str, Literal["tie", "drop"]] = {"tie": "tie", "drop": "drop"}
"""How ``rate`` may count a "both bad" vote: as a tie, or left out (``--both-bad``)."""


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
    intervals: str = "wald",
    quality: StudyQuality | None = None,
) -> RatingReport:
    """Ratings of the models, and for ``am-elo`` the Stable Arena status of each annotator.

    ``quality`` (the study's gold accuracy and self-consistency,
    :func:`annotate.services.quality.study_quality`) is shown per annotator and, for
    ``am-elo``, passed to the verdicts as evidence (:func:`quality_evidence`).

    ``delta`` and ``epsilon`` None means the dynamic thresholds of
    :func:`stable_arena`; give numbers for the paper's fixed ones. The
    verdicts use the position of each choice (``left_chosen``), the stored fast
    flag (:data:`FAST_VOTE_RULE`) and the battle of each vote (agreement with
    the majority). ``intervals="bootstrap"`` resamples the annotators
    ``bootstrap_rounds`` times (seeded by ``seed``) for the am-ELO intervals;
    ``"wald"`` is faster: bias-aware Wald (see :func:`ranking.stable_arena`).
    Elo always uses a bootstrap over battles of ``bootstrap_rounds`` rounds.
    """
    if method not in METHODS:
        raise AnnotateError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    bb_as = BOTH_BAD_AS.get(both_bad_as)
    if bb_as is None:
        raise AnnotateError(f"unknown both_bad_as {both_bad_as!r}; expected tie or drop")
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
                both_bad_as=bb_as,
                rng=seed,
            )
            ratings, lower, upper, ranks, iters = r.ratings, r.lower, r.upper, r.ranks, r.iterations
            lowest = _lowest_from_intervals(lower, upper)
            status = None
        elif method == "m-elo":
            r2 = m_elo(
                b.model_a,
                b.model_b,
                b.outcome,
                n_models=n_m,
                both_bad=b.both_bad,
                both_bad_as=bb_as,
            )
            ratings, lower, upper, ranks, iters = (
                r2.ratings,
                r2.lower,
                r2.upper,
                r2.ranks,
                r2.iterations,
            )
            lowest = _lowest_from_intervals(lower, upper)
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
                both_bad_as=bb_as,
                left_chosen=b.left_chosen,
                fast=b.fast,
                item=b.item,
                intervals=intervals,  # type: ignore[arg-type]
                n_boot=bootstrap_rounds,
                rng=seed,
                evidence=quality_evidence(quality, b.annotators),
            )
            ratings, lower, upper, ranks, iters = (
                r3.ratings,
                r3.lower,
                r3.upper,
                r3.ranks,
                r3.iterations,
            )
            lowest = (
                r3.lowest_ranks
                if r3.lowest_ranks is not None
                else _lowest_from_intervals(lower, upper)
            )
            status = r3
            notes.append(
                f"delta = {r3.delta} votes ({r3.delta_rule}"
                + (
                    f"; the rule gives {r3.delta_uncapped}, capped at the median vote count "
                    "minus one"
                    if r3.delta_uncapped != r3.delta
                    else ""
                )
                + "): annotators with at most delta votes are pending"
            )
            notes.append(
                f"flags: each test adjusted across annotators "
                f"({'Benjamini-Hochberg' if r3.correction == 'bh' else 'Holm'} at {r3.alpha:.0%})"
            )
            notes.append(
                "intervals: "
                + (
                    f"bootstrap over annotators, {bootstrap_rounds} resamples"
                    if r3.intervals == "bootstrap"
                    else "Wald"
                )
                + "; "
                + (
                    f"ranks from pairwise tests of rating differences, Benjamini-Hochberg across "
                    f"pairs (at most {r3.rank_error_rate:.0%} of the rank claims expected false)"
                    if r3.rank_correction == "bh"
                    else f"ranks from pairwise tests of rating differences, Holm across pairs (all "
                    f"rank claims hold with probability >= {1 - r3.rank_error_rate:.0%})"
                )
            )
    except (RankingInputError, ConvergenceError) as err:
        raise AnnotateError(
            f"cannot rate these battles: {fit_problem(err, b.models, b.annotators)}",
            title="Cannot rate",
        ) from err
    bad = both_bad_shares(b.model_a, b.model_b, b.both_bad, n_models=n_m)
    models = sorted(
        (
            ModelRating(
                b.models[i],
                float(ratings[i]),
                float(lower[i]),
                float(upper[i]),
                int(ranks[i]),
                int(battles[i]),
                max(int(ranks[i]), int(lowest[i])),
                {
                    "share": _f(bad.share[i]),
                    "lower": _f(bad.lower[i]),
                    "upper": _f(bad.upper[i]),
                    "battles": int(bad.votes[i]),
                    "votes": int(bad.both_bad[i]),
                },
            )
            for i in range(n_m)
        ),
        key=lambda m: (m.rank, -m.rating),
    )
    counts = np.bincount(b.annotator, minlength=len(b.annotators))
    timed = np.bincount(b.annotator, weights=~np.isnan(b.response_ms), minlength=len(counts))
    n_fast = np.bincount(b.annotator, weights=b.fast, minlength=len(counts))
    rows: list[AnnotatorRow] = []
    for k, name in enumerate(b.annotators):
        st, reason, ab, lo, hi = "reliable", "", None, None, None
        verdict: dict[str, Any] = {"reasons": [], "votes_to_verdict": None}
        if status is not None:
            st, reason = status.status[k], status.reasons[k]
            verdict = status.verdict(k)
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
                reasons=[_reason_dict(d) for d in verdict["reasons"]],
                votes_to_verdict=verdict["votes_to_verdict"],
                ability=ab,
                ability_lower=lo,
                ability_upper=hi,
                tie_rate=_f(sig.rates.tie_rate[k]) if sig else None,
                both_bad_rate=_f(sig.rates.both_bad_rate[k]) if sig else None,
                left_share=_f(sig.position.left_share[k]) if sig else None,
                left_p_value=_f(sig.position.p_value[k]) if sig else None,
                fast_share=float(n_fast[k] / counts[k]) if timed[k] > 0 else None,
                majority_agreement=_f(maj.agreement[k]) if maj is not None else None,
                gold=_check_dict(quality, name, "gold"),
                consistency=_check_dict(quality, name, "consistency"),
            )
        )
    settings = {"action": action, "delta": delta, "epsilon": epsilon, "both_bad_as": both_bad_as}
    settings["fast_vote_rule"] = FAST_VOTE_RULE
    if status is not None:
        settings.update(
            delta_used=int(status.delta),
            delta_uncapped=int(status.delta_uncapped),
            alpha=status.alpha,
            correction=status.correction,
            intervals=status.intervals,
            interval_scale_bias=_f(status.scale_bias),
            bootstrap_rounds=bootstrap_rounds if status.intervals == "bootstrap" else None,
            seed=seed if status.intervals == "bootstrap" else None,
            rank_error_rate=status.rank_error_rate,
        )
    return RatingReport(
        method, models, rows, len(b), int(iters), settings, notes, agreement=judge_agreement(b)
    )


def _quality_of(quality: StudyQuality | None, name: str) -> AnnotatorQuality | None:
    if quality is None:
        return None
    row = quality.of(name)
    if row is None:  # the battle arrays and the quality rows may spell names apart
        row = next((a for a in quality.annotators if one_line(a.annotator) == one_line(name)), None)
    return row


def _check_dict(quality: StudyQuality | None, name: str, which: str) -> dict[str, Any] | None:
    """An annotator's gold accuracy or self-consistency for ``rate --json``."""
    from ranking.quality import CONSISTENCY_THRESHOLD, GOLD_THRESHOLD

    row = _quality_of(quality, name)
    c = None if row is None else (row.gold if which == "gold" else row.consistency)
    if c is None or not c.n:
        return None
    return {
        "n": c.n,
        "hits": c.hits,
        "rate": c.rate,
        "lower": c.lower,
        "upper": c.upper,
        "threshold": GOLD_THRESHOLD if which == "gold" else CONSISTENCY_THRESHOLD,
        "p_value": c.p_value,
    }


def quality_evidence(quality: StudyQuality | None, annotators: list[str]) -> tuple[Evidence, ...]:
    """Gold accuracy and self-consistency as :class:`ranking.arena.Evidence` for the
    verdicts, aligned with ``annotators`` (``low_gold_accuracy`` and ``inconsistent``: the
    unadjusted one-sided exact binomial p-values of :mod:`ranking.quality`, which
    :func:`ranking.stable_arena` adjusts across the annotators who have such checks);
    empty without gold votes or re-tests."""
    from ranking.quality import CONSISTENCY_THRESHOLD, GOLD_THRESHOLD

    if quality is None:
        return ()
    out: list[Evidence] = []
    for which, reason, threshold in (
        ("gold", "low_gold_accuracy", GOLD_THRESHOLD),
        ("consistency", "inconsistent", CONSISTENCY_THRESHOLD),
    ):
        stat = np.full(len(annotators), np.nan)
        p = np.full(len(annotators), np.nan)
        for k, name in enumerate(annotators):
            row = _quality_of(quality, name)
            c = None if row is None else getattr(row, which)
            if c is not None and c.n and c.p_value is not None:
                stat[k] = np.nan if c.rate is None else c.rate
                p[k] = c.p_value
        if np.isfinite(p).any():
            out.append(Evidence(reason, stat, threshold, p))
    return tuple(out)


def rate_study(
    engine: Engine,
    study: str,
    method: str = "am-elo",
    *,
    include_self_identifying: bool = False,
    identity_phrases: tuple[str, ...] = (),
    use_quality: bool = True,
    **kw: Any,
) -> RatingReport:
    """:func:`rate` on a study's current votes.

    With ``use_quality`` (the default) the study's gold accuracy and
    self-consistency (:func:`annotate.services.quality.study_quality`) are shown per
    annotator and passed to the verdicts as evidence.

    Battles in which a response names a model of the study or its maker
    (:func:`annotate.services.identity.self_identifying_battles`, with
    ``identity_phrases`` added to the study's) are left out unless
    ``include_self_identifying``, as the Chatbot Arena does; the report counts them.
    """
    from annotate.services.identity import self_identifying_battles
    from annotate.services.quality import study_quality

    with Session(engine) as s:
        if repo.get_study(s, study) is None:
            raise StudyNotFoundError(study, repo.study_names(s))
    if use_quality and "quality" not in kw:
        q = study_quality(engine, study)
        kw["quality"] = None if not q.annotators else q
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
