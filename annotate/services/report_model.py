"""The human-alignment report as data: :class:`HumanAlignmentReport` and its parts.

:func:`annotate.services.report.human_alignment_report` computes it (store -> arrays ->
:mod:`ranking`); :mod:`annotate.services.report_view` turns it into text tables,
:mod:`annotate.services.report_files` and :mod:`annotate.services.plots` write it to
files, and :meth:`HumanAlignmentReport.as_dict` gives the JSON of ``annotate report
--json``. Those modules import the model from here, never from the module that computes
it, so the report has no import cycle. No statistics, no I/O.

Undefined statistics carry ``None`` and a reason, never NaN or 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from annotate.views import AnnotatorStatus, ItemRating, StudyQuality
from ranking.alignment import Estimate, Interval

RESAMPLE_LABELS: dict[str, str] = {
    "units": "over pairs (annotators fixed)",
    "annotators": "over annotators (pairs fixed)",
    "both": "two-way, pairs and annotators resampled together (Owen 2007, the pigeonhole "
    "bootstrap)",
}
"""How the report names each bootstrap scheme (``--resample``)."""


# ---------------------------------------------------------------------------
# result types


@dataclass(frozen=True)
class AnnotatorAlignment:
    """One annotator's individual alignment with one method (a Table 2 cell)."""

    annotator: str
    value: float | None
    """Share of the annotator's non-skipped votes equal to the prediction; None without any."""
    low: float | None
    """Bootstrap (over pairs) lower bound."""
    high: float | None
    judged: int
    """Non-skipped votes of the annotator on the pairs this method predicts."""


@dataclass(frozen=True)
class MethodAlignment:
    """Alignment of one difficulty column with the votes."""

    method: str
    """Identifier: ``eip``, ``simple``, ``irt-1pl``, ``irt-2pl``, ``mirt`` or a file column."""
    label: str
    source: str
    """``response matrix`` or the difficulty file's name."""
    consensus: Estimate
    """Eq. 9: share of the consensus pairs whose consensus equals the prediction."""
    kappa: Estimate
    """Cohen's kappa between predictions (first, second, tie) and the consensus."""
    mean_individual: Estimate
    pairs: int
    """Consensus pairs counted (the set Q of eq. 9)."""
    pairs_predicted: int
    """Pairs for which the method gives both questions a difficulty."""
    tied_predictions: int
    """Pairs whose two questions have the same difficulty (reported as a tie, a miss)."""
    individual: tuple[AnnotatorAlignment, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class PairedTestRow:
    """McNemar's exact test of two methods on the same consensus pairs
    (:func:`ranking.design.paired_test`): right = prediction equals the consensus."""

    first: str
    second: str
    """Method ids (report order: ``first`` comes before ``second``)."""
    pairs: int
    """Consensus pairs both methods predict."""
    only_first: int
    """Pairs only ``first`` gets right."""
    only_second: int
    difference: float | None
    """Alignment of ``first`` minus that of ``second`` on these pairs."""
    p_value: float


@dataclass(frozen=True)
class NearTies:
    """What the consensus near-tie rule did (see :func:`ranking.alignment.vote_consensus`)."""

    margin: float
    rule: str
    consensus_pairs: int
    near_ties: int
    resolved: int
    excluded: int
    without_votes: int
    pairs: tuple[str, ...]
    """Keys of the pairs the rule touched."""


@dataclass(frozen=True)
class PairRow:
    """One pair: votes, consensus and every method's prediction."""

    key: str
    first: str
    second: str
    subject: str
    n_first: int
    n_second: int
    n_skip: int
    consensus: str
    """``first``, ``second`` or ``none``."""
    near_tie: bool
    resolved: bool
    predictions: tuple[str, ...]
    """Per method (report order): ``first``, ``second``, ``tie`` or ``n/a``."""


@dataclass(frozen=True)
class Subgroup:
    """A method recomputed on one model pool (Figure 7)."""

    pool: str
    models: tuple[str, ...]
    method: str
    label: str
    consensus: Estimate
    kappa: Estimate
    pairs: int
    tied_predictions: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class AnnotatorAgreement:
    """One annotator's agreement with the leave-one-out consensus of the others."""

    annotator: str
    judged: int
    skipped: int
    kappa: float | None
    kappa_reason: str | None
    agreement: float | None
    """Raw share of compared pairs where the annotator matches the others' plurality."""
    pairs: int


@dataclass(frozen=True)
class Agreement:
    """Agreement among the annotators."""

    fleiss_kappa: Estimate
    """On the pairs judged (not skipped) by every annotator; categories first/second."""
    fleiss_pairs: int
    fleiss_raters: int
    fleiss_kappa_with_skips: Estimate
    """On the pairs every annotator voted on, skip counted as a third category."""
    fleiss_with_skips_pairs: int
    krippendorff_alpha: Estimate
    """Nominal alpha over all pairs, skips (and pairs not voted) as missing."""
    alpha_pairs: int
    annotators: tuple[str, ...]
    pairwise_kappa: tuple[tuple[float | None, ...], ...]
    """Cohen's kappa of annotator i with j on the pairs both judged (None: undefined)."""
    pairwise_overlap: tuple[tuple[int, ...], ...]
    mean_pairwise_kappa: float | None
    mean_pairwise_reason: str | None
    leave_one_out: tuple[AnnotatorAgreement, ...]


@dataclass(frozen=True)
class QuestionScale:
    key: str
    subject: str
    difficulty: float | None
    """Human difficulty in Elo points (higher = harder); None when not fitted."""
    lower: float | None
    upper: float | None
    excluded: str | None
    """``always harder`` / ``always easier`` when excluded as an extreme."""
    group: int | None = None
    """The group of linked questions whose scale holds this question (1 = largest)."""


@dataclass(frozen=True)
class Correlation:
    method: str
    label: str
    spearman: float | None
    spearman_p: float | None
    kendall: float | None
    kendall_p: float | None
    n: int
    reason: str | None
    groups: int = 1
    """Groups pooled: the coefficient is the n-weighted mean of the within-group ones
    (the p-value is given only for a single group)."""


@dataclass(frozen=True)
class ScaleGroup:
    """One group of questions linked by judged pairs, with its own human scale."""

    index: int
    questions: int
    pairs: int
    fitted: bool
    reason: str | None
    n_votes: int


@dataclass(frozen=True)
class HumanScale:
    """Human difficulty scale (am-ELO fit of the votes), or why it could not be fitted."""

    fitted: bool
    reason: str | None
    questions: tuple[QuestionScale, ...]
    reliability: tuple[tuple[str, float | None, float | None], ...]
    """(annotator, discrimination relative to the mean annotator, standard error); with
    several groups, the mean over groups weighted by the annotator's votes in each."""
    correlations: tuple[Correlation, ...]
    n_votes: int
    iterations: int
    groups: tuple[ScaleGroup, ...] = ()
    prior_groups: tuple[int, ...] = ()
    """Groups fitted with weak priors (``_prior_scale`` in :mod:`annotate.services.report`;
    small pilots: without them some questions or annotators have no finite estimate)."""


@dataclass(frozen=True)
class HumanAlignmentReport:
    """Everything in the human-alignment report of one difficulty study."""

    study: str
    title: str
    n_questions: int
    n_pairs: int
    n_votes: int
    n_skips: int
    annotators: tuple[str, ...]
    methods: tuple[str, ...]
    """Method ids in report order (estimators, then file columns)."""
    labels: tuple[str, ...]
    question_keys: tuple[str, ...]
    question_subjects: tuple[str, ...]
    difficulty: tuple[tuple[float | None, ...], ...]
    """Per method, per question (``question_keys`` order); None where unavailable."""
    alignment: tuple[MethodAlignment, ...]
    near_ties: NearTies
    pairs: tuple[PairRow, ...]
    subgroups: tuple[Subgroup, ...]
    agreement: Agreement
    human_scale: HumanScale
    n_boot: int
    seed: int
    confidence: float
    notes: tuple[str, ...]
    timings: tuple[tuple[str, float], ...] = field(default=(), compare=False)
    """(stage, seconds) of the computation, for the benchmark."""
    verdicts: tuple[AnnotatorStatus, ...] = ()
    """Each annotator's status, flag reasons with evidence and votes to verdict, as the
    monitor shows them (:class:`annotate.services.monitoring.StudyMonitor`)."""
    verdict_notes: tuple[str, ...] = ()
    """Thresholds and rules of the verdicts (delta, the flag adjustment, fast votes)."""
    resample: str = "both"
    """The bootstrap scheme the report stands on (``--resample``): ``"both"`` (two-way,
    pairs and annotators together; the one-way intervals are shown alongside), ``"units"``
    (over pairs) or ``"annotators"``; see :data:`RESAMPLE_LABELS`."""
    item_notes: tuple[str, ...] = ()
    """Annotators' comments and flags on pairs: a count, then each (issue 12)."""
    paired_tests: tuple[PairedTestRow, ...] = ()
    """Every two methods compared on the same consensus pairs (issue 16)."""
    quality: StudyQuality | None = None
    """Gold accuracy, self-consistency and the questionnaire groups (issue 16 items 4, 6);
    None when the study has no gold item, no re-test and no questionnaire answer."""

    adaptive: dict[str, Any] | None = None
    """The adaptive schedule's stopping status (issue 16 item 3; studies with ``schedule =
    "adaptive"``, else None): ``target_width``, ``max_width``, ``widest``, ``reached``,
    ``votes``, ``ipw_shift`` of :class:`annotate.services.adaptive.StoppingStatus`, and
    ``line``, the sentence the monitor and report.md show."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON document of ``annotate report --json``."""
        return _report_dict(self)


@dataclass(frozen=True)
class ArenaReport:
    """The report of an arena study (``annotate report --study ARENA``): the monitor's
    leaderboard with each model's both-bad share, and the annotator verdicts."""

    study: str
    title: str
    n_votes: int
    """Current votes (skips included)."""
    n_compared: int
    """Current votes that compare two models (skips left out)."""
    leaderboard: tuple[ItemRating, ...]
    """Models best first: Stable Arena rating with its bias-aware Wald 95% interval, the
    comparisons, and the share of "both bad" with its Wilson 95% interval."""
    verdicts: tuple[AnnotatorStatus, ...]
    """Each annotator's status, flags and signals, as the monitor shows them."""
    verdict_notes: tuple[str, ...]
    """The monitor's notes: the rules of the verdicts, groups, self-identifying battles."""
    problem: str | None
    """Why the ratings cannot be fitted (yet), or a warning about disconnected groups."""
    item_notes: tuple[str, ...] = ()
    """Annotators' comments and flags on battles."""
    adaptive: dict[str, Any] | None = None
    """As :attr:`HumanAlignmentReport.adaptive`."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON document of ``annotate report --json`` for an arena study."""
        return {
            "study": self.study,
            "kind": "arena",
            "title": self.title,
            "votes": self.n_votes,
            "compared": self.n_compared,
            "problem": self.problem,
            "leaderboard": [
                {
                    "rank": m.rank,
                    "model": m.name,
                    "rating": m.rating,
                    "lower": m.lower,
                    "upper": m.upper,
                    "comparisons": m.comparisons,
                    "both_bad": None
                    if m.both_bad is None
                    else dict(zip(("share", "lower", "upper"), m.both_bad, strict=True)),
                }
                for m in self.leaderboard
            ],
            "verdicts": _verdicts_dict(self.verdicts, self.verdict_notes, signals=True),
            "item_notes": list(self.item_notes),
            "adaptive": None if self.adaptive is None else dict(self.adaptive),
        }


# ---------------------------------------------------------------------------
# JSON (``annotate report --json``)


def _verdicts_dict(
    verdicts: tuple[AnnotatorStatus, ...], notes: tuple[str, ...], *, signals: bool = False
) -> dict[str, Any]:
    """The verdicts as the report's JSON holds them; ``signals`` adds the monitor's other
    columns (the ability interval, tie, both-bad and skip rates, agreement with the
    majority, the alerts)."""
    rows = []
    for v in verdicts:
        row: dict[str, Any] = {
            "annotator": v.annotator,
            "votes": v.votes,
            "status": v.status,
            "reasons": [
                {
                    "reason": f.reason,
                    "statistic": f.statistic,
                    "threshold": f.threshold,
                    "p_value": f.p_value,
                }
                for f in v.flags
            ],
            "votes_to_verdict": v.votes_to_verdict,
            "ability": v.ability,
            "left_share": v.left_share,
            "left_p_value": v.left_p_value,
            "fast_share": v.fast_share,
        }
        if signals:
            row |= {
                "reason": v.reason,
                "ability_lower": v.ability_lower,
                "ability_upper": v.ability_upper,
                "tie_rate": v.tie_rate,
                "both_bad_rate": v.both_bad_rate,
                "skip_rate": v.skip_rate,
                "majority_agreement": v.majority_agreement,
                "alerts": list(v.alerts),
            }
        rows.append(row)
    return {"notes": list(notes), "annotators": rows}


def _quality_dict(q: StudyQuality | None) -> dict[str, object] | None:
    from annotate.services.quality import quality_dict

    return quality_dict(q)


def _ci(i: Interval | None) -> list[float] | None:
    return None if i is None else [i.low, i.high]


def _est(name: str, e: Estimate) -> dict[str, Any]:
    return {
        name: e.value,
        f"{name}_reason": e.reason,
        f"{name}_ci": {
            "pairs": _ci(e.pairs_interval),
            "annotators": _ci(e.annotators_interval),
            "both": _ci(e.both_interval),
        },
    }


def _report_dict(r: HumanAlignmentReport) -> dict[str, Any]:
    alignment = []
    for m in r.alignment:
        d: dict[str, Any] = {"method": m.method, "label": m.label, "source": m.source}
        d |= _est("consensus", m.consensus)
        d |= _est("kappa", m.kappa)
        d |= _est("mean_individual", m.mean_individual)
        d["pairs"] = m.pairs
        d["pairs_predicted"] = m.pairs_predicted
        d["tied_predictions"] = m.tied_predictions
        d["individual"] = {a.annotator: a.value for a in m.individual if a.value is not None}
        d["individual_ci"] = {
            a.annotator: [a.low, a.high] for a in m.individual if a.low is not None
        }
        d["individual_judged"] = {a.annotator: a.judged for a in m.individual}
        d["notes"] = list(m.notes)
        alignment.append(d)
    g = r.agreement
    agreement: dict[str, Any] = {}
    agreement |= _est("fleiss_kappa", g.fleiss_kappa)
    agreement["fleiss_kappa_pairs"] = g.fleiss_pairs
    agreement["fleiss_kappa_annotators"] = g.fleiss_raters
    agreement |= _est("fleiss_kappa_with_skips", g.fleiss_kappa_with_skips)
    agreement["fleiss_kappa_with_skips_pairs"] = g.fleiss_with_skips_pairs
    agreement |= _est("krippendorff_alpha", g.krippendorff_alpha)
    agreement["krippendorff_alpha_pairs"] = g.alpha_pairs
    agreement["pairwise_cohen"] = {
        "annotators": list(g.annotators),
        "kappa": [list(row) for row in g.pairwise_kappa],
        "overlap": [list(row) for row in g.pairwise_overlap],
        "mean": g.mean_pairwise_kappa,
        "mean_reason": g.mean_pairwise_reason,
    }
    agreement["leave_one_out"] = [
        {
            "annotator": x.annotator,
            "judged": x.judged,
            "skipped": x.skipped,
            "kappa": x.kappa,
            "kappa_reason": x.kappa_reason,
            "agreement": x.agreement,
            "pairs": x.pairs,
        }
        for x in g.leave_one_out
    ]
    hs = r.human_scale
    scale = {
        "fitted": hs.fitted,
        "reason": hs.reason,
        "n_votes": hs.n_votes,
        "iterations": hs.iterations,
        "questions": [
            {
                "question": q.key,
                "subject": q.subject,
                "difficulty": q.difficulty,
                "lower": q.lower,
                "upper": q.upper,
                "excluded": q.excluded,
                "group": q.group,
            }
            for q in hs.questions
        ],
        "groups": [
            {
                "group": g.index,
                "questions": g.questions,
                "pairs": g.pairs,
                "fitted": g.fitted,
                "reason": g.reason,
                "votes": g.n_votes,
            }
            for g in hs.groups
        ],
        "reliability": [
            {"annotator": a, "reliability": v, "standard_error": se} for a, v, se in hs.reliability
        ],
        "correlations": [
            {
                "method": c.method,
                "spearman": c.spearman,
                "spearman_p": c.spearman_p,
                "kendall": c.kendall,
                "kendall_p": c.kendall_p,
                "questions": c.n,
                "groups": c.groups,
                "reason": c.reason,
            }
            for c in hs.correlations
        ],
    }
    subgroups = []
    for s in r.subgroups:
        d = {"pool": s.pool, "models": list(s.models), "method": s.method}
        d |= _est("consensus", s.consensus)
        d |= _est("kappa", s.kappa)
        d["pairs"] = s.pairs
        d["tied_predictions"] = s.tied_predictions
        d["notes"] = list(s.notes)
        subgroups.append(d)
    nt = r.near_ties
    return {
        "study": r.study,
        "title": r.title,
        "questions": r.n_questions,
        "n_pairs": r.n_pairs,
        "votes": r.n_votes,
        "skips": r.n_skips,
        "annotators": list(r.annotators),
        "n_boot": r.n_boot,
        "seed": r.seed,
        "confidence": r.confidence,
        "resample": r.resample,
        "resample_label": RESAMPLE_LABELS[r.resample],
        "ci_schemes": {
            "pairs": RESAMPLE_LABELS["units"],
            "annotators": RESAMPLE_LABELS["annotators"],
            "both": RESAMPLE_LABELS["both"],
        },
        "alignment": alignment,
        "paired_tests": [asdict(t) for t in r.paired_tests],
        "near_ties": {
            "margin": nt.margin,
            "rule": nt.rule,
            "consensus_pairs": nt.consensus_pairs,
            "near_ties": nt.near_ties,
            "resolved": nt.resolved,
            "excluded": nt.excluded,
            "pairs_without_votes": nt.without_votes,
            "pairs": list(nt.pairs),
        },
        "subgroups": subgroups,
        "agreement": agreement,
        "human_scale": scale,
        "quality": _quality_dict(r.quality),
        "adaptive": None if r.adaptive is None else dict(r.adaptive),
        "verdicts": _verdicts_dict(r.verdicts, r.verdict_notes),
        "predictions": [
            {
                "pair": p.key,
                "first": p.first,
                "second": p.second,
                "subject": p.subject,
                "votes_first": p.n_first,
                "votes_second": p.n_second,
                "skips": p.n_skip,
                "consensus": p.consensus,
                "near_tie": p.near_tie,
                "resolved": p.resolved,
                "predicted": dict(zip(r.methods, p.predictions, strict=True)),
            }
            for p in r.pairs
        ],
        "notes": list(r.notes),
    }
