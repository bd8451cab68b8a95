"""The values people see: what services return and screens, widgets and the CLI display.

Plain frozen dataclasses, one declaration each. Services build them
(:mod:`annotate.services.voting`, :mod:`~annotate.services.catalog`,
:mod:`~annotate.services.monitoring`, :mod:`~annotate.services.report_view`; the store's
queries return :class:`QuestionView` and :class:`StudyListing`), screens and widgets
import them for their types. This module imports no store code, runs no SQL and computes
no statistics, so importing it from a screen pulls in nothing that talks to the database.

- voting: :class:`ShownPair` / :class:`ShownBattle` (the item on screen, no model
  names), :class:`VoteReceipt`, :class:`Progress`, :class:`Summary`,
  :class:`HistoryEntry`;
- study listings: :class:`StudyListing` (``annotate studies``, the monitor's picker),
  :class:`StudyProgress` (the welcome screen, with one annotator's progress);
- the monitor: :class:`MonitorSnapshot` with its :class:`AnnotatorStatus` and
  :class:`ItemRating` rows;
- the report: :class:`ReportView` and its :class:`ReportTable` s.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

# ---------------------------------------------------------------------------
# voting: the item on screen, the vote, progress


@dataclass(frozen=True)
class QuestionView:
    """One question of a difficulty pair, as shown."""

    key: str
    subject: str
    text: str
    choices: tuple[str, ...] | None


@dataclass(frozen=True)
class ShownPair:
    """A question pair as displayed: ``left`` is shown first (left or top)."""

    item_id: int
    key: str
    left: QuestionView
    right: QuestionView
    swapped: bool
    previous: str | None = None
    """What this annotator chose on this pair before undoing it, in words (display terms)."""


@dataclass(frozen=True)
class ShownBattle:
    """A battle as displayed: responses "A" (left) and "B" (right), no model names."""

    item_id: int
    key: str
    prompt: str
    category: str
    response_left: str
    response_right: str
    swapped: bool
    previous: str | None = None
    """What this annotator chose on this battle before undoing it, in words (display terms)."""


Shown = ShownPair | ShownBattle
"""The item on screen."""


@dataclass(frozen=True)
class VoteReceipt:
    """What the screen may show once a vote is committed."""

    vote_uuid: str
    item_id: int
    choice: str
    fast: bool
    revealed: tuple[str, str] | None
    """Model names (A, B) as displayed, when the study reveals them after the vote."""


@dataclass(frozen=True)
class Progress:
    """How far the annotator is: ``done`` of ``total`` items they will see."""

    done: int
    total: int


@dataclass(frozen=True)
class Summary:
    """The annotator's own current votes in the study, in display terms.

    ``counts`` maps a display key (``left``/``right``/``skip`` or
    ``a``/``b``/``tie``/``both_bad``) to how many current votes used it.
    Nothing here comes from other annotators.
    """

    study: str
    title: str
    kind: str
    done: int
    counts: dict[str, int]
    fast: int


@dataclass(frozen=True)
class HistoryEntry:
    """One of the annotator's own current votes, as the history screen lists it.

    ``first_line`` and ``second_line`` are the first lines of the two questions in the
    order the annotator saw them (a battle: the prompt's first line, and ""). ``choice``
    is the display key, ``chosen`` its words. No model name is part of it.
    """

    item_id: int
    key: str
    first_line: str
    second_line: str
    choice: str
    chosen: str
    when: datetime


# ---------------------------------------------------------------------------
# study listings


@dataclass(frozen=True)
class StudyListing:
    """A study with its size: ``annotate studies`` and the monitor's study picker."""

    name: str
    kind: str
    title: str
    items: int
    votes: int
    """Current votes."""
    annotators: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StudyProgress:
    """A study as listed on the welcome screen, with one annotator's progress."""

    name: str
    kind: str
    title: str
    description: str
    done: int
    total: int


# ---------------------------------------------------------------------------
# the monitor

STATUS_ORDER = ("flagged", "pending", "reliable")
"""Display order of the statuses (most urgent first)."""


def describe_reason(d: dict[str, Any]) -> str:
    """One flag reason with its evidence, for people (``position_bias: 100% left ...``)."""
    r, st, th, p = d["reason"], d.get("statistic"), d.get("threshold"), d.get("p_value")
    padj = "" if p is None else f", adjusted p = {p:.2g}"

    def num(x: float | None, fmt: str = ".3g") -> str:
        return "-" if x is None else format(x, fmt)

    if r == "position_bias":
        return f"position_bias: {num(st, '.0%')} of decisive votes for the left side (vs 50%{padj})"
    if r == "too_fast":
        return f"too_fast: {num(st, '.0%')} fast votes (threshold {num(th, '.0%')}{padj})"
    if r == "low_agreement":
        return (
            f"low_agreement: {num(st, '.0%')} agreement with the majority "
            f"(chance {num(th, '.0%')}{padj})"
        )
    if r == "random" and p is None:
        return "random: every vote is a tie"
    if r == "low_gold_accuracy":
        return (
            f"low_gold_accuracy: {num(st, '.0%')} of gold items right "
            f"(threshold {num(th, '.0%')}{padj})"
        )
    if r == "inconsistent":
        return (
            f"inconsistent: {num(st, '.0%')} of swapped re-tests agree with the first vote "
            f"(threshold {num(th, '.0%')}{padj})"
        )
    return f"{r}: ability {num(st)} (threshold {num(th)}{padj})"


@dataclass(frozen=True)
class FlagEvidence:
    """One reason an annotator is flagged (:class:`ranking.arena.FlagReason`), for display."""

    reason: str
    """``adversarial``, ``random``, ``position_bias``, ``too_fast``, ``low_agreement``,
    ``low_gold_accuracy`` or ``inconsistent``."""
    statistic: float | None
    threshold: float | None
    p_value: float | None
    """Adjusted across annotators (Benjamini-Hochberg); None for a certainty."""

    @property
    def short(self) -> str:
        """``position_bias p<.001``: the reason and its adjusted p-value."""
        p = self.p_value
        if p is None:
            return self.reason
        return f"{self.reason} " + ("p<.001" if p < 0.001 else f"p={p:.3f}".replace("0.", "."))

    @property
    def text(self) -> str:
        """The reason with its evidence (``too_fast: 100% fast votes (threshold 20%, ...)``)."""
        return describe_reason(
            {
                "reason": self.reason,
                "statistic": self.statistic,
                "threshold": self.threshold,
                "p_value": self.p_value,
            }
        )


@dataclass(frozen=True)
class AnnotatorStatus:
    """One annotator as the monitor shows it. Shares are in [0, 1]; None when undefined."""

    annotator: str
    votes: int
    """Current votes, skips included."""
    status: str
    """``pending``, ``reliable`` or ``flagged``."""
    reason: str
    """Why, in one sentence (from the Stable Arena loop, or why there is no fit)."""
    theta: float | None
    """Ability on the am-ELO scale (``sum(theta) = 1`` over the fitted annotators)."""
    theta_lower: float | None
    theta_upper: float | None
    epsilon: float | None
    """The flagging threshold on ``theta`` (flagged when ``theta <= epsilon``)."""
    ability: float | None
    """``theta`` times the number of fitted annotators: 1 = an average annotator,
    0 = random voting, negative = voting against the others."""
    ability_lower: float | None
    ability_upper: float | None
    fast_share: float | None
    """Share of timed votes flagged fast (``FAST_VOTE_RULE``)."""
    left_share: float | None
    """Share of decisive votes won by the side shown first."""
    left_p_value: float | None
    """Exact binomial p-value of ``left_share`` against 1/2."""
    tie_rate: float | None
    both_bad_rate: float | None
    skip_rate: float | None
    majority_agreement: float | None
    """Agreement with the other annotators' majority on shared items."""
    majority_chance: float | None
    """The agreement a random voter with the same label mix would reach."""
    alerts: tuple[str, ...] = ()
    """Signals past their alert level, as short phrases (``"fast 62%"``)."""
    flags: tuple[FlagEvidence, ...] = ()
    """Why the annotator is flagged, with the evidence; empty unless flagged."""
    votes_to_verdict: int | None = None
    """About how many more votes until a verdict (pending); None when decided."""
    gold: QualityCheck | None = None
    """Accuracy on the study's gold items (issue 16); None without gold votes."""
    consistency: QualityCheck | None = None
    """Agreement with their own swapped re-tests (issue 16); None without re-tests."""

    @property
    def verdict(self) -> str:
        """Flag reasons with their adjusted p-values (``position_bias p<.001``), or the
        votes still needed (pending); the evidence is in ``reason`` and ``flags``."""
        if self.flags:
            return ", ".join(f.short for f in self.flags)
        if self.status == "pending" and self.votes_to_verdict is not None:
            return f"~{self.votes_to_verdict} more votes"
        return ""


def share_cell(share: float | None, lower: float | None, upper: float | None) -> str:
    """A share with its interval in percent, ``"12% [8-17]"``; ``"-"`` when undefined."""
    if share is None or lower is None or upper is None:
        return "-"
    return f"{100 * share:.0f}% [{100 * lower:.0f}-{100 * upper:.0f}]"


@dataclass(frozen=True)
class ItemRating:
    """One row of the leaderboard: a model (arena) or a question (difficulty)."""

    rank: int
    name: str
    detail: str
    """The question's subject (difficulty); empty for a model."""
    rating: float
    """Elo scale, mean 1000; higher = better model or harder question."""
    lower: float
    upper: float
    comparisons: int
    both_bad: tuple[float, float, float] | None = None
    """Arena: share of the votes on the model's battles that said "both bad", with its
    Wilson 95% interval (share, lower, upper); None for a question or without votes."""


@dataclass(frozen=True)
class RefreshTimings:
    """Milliseconds spent in one refresh."""

    query_ms: float
    """Reading the new vote rows and building the arrays."""
    fit_ms: float
    """Stable Arena (am-ELO) fits, one per connected group of items."""
    signals_ms: float
    """Reliability signals (computed in a second thread while the fit runs)."""
    total_ms: float = 0.0
    """Wall time of the whole refresh."""


@dataclass(frozen=True)
class MonitorSnapshot:
    """Everything the monitor shows for one study at one moment."""

    study: str
    kind: str
    """``arena`` or ``difficulty``."""
    title: str
    last_vote_id: int
    """Newest vote row seen (the change marker)."""
    n_votes: int
    """Current votes, skips included."""
    n_compared: int
    """Votes used in the fit (skips left out)."""
    annotators: tuple[AnnotatorStatus, ...]
    """Flagged first, then pending, then reliable; by name within a status."""
    leaderboard: tuple[ItemRating, ...]
    """Best model (or hardest question) first; empty without a fit."""
    problem: str | None = None
    """Why there is no fit (or no status) yet, for the screen; None when all is well."""
    notes: tuple[str, ...] = ()
    """Thresholds used and other remarks."""
    delta: int | None = None
    """Vote count above which an annotator is rated (dynamic rule, capped)."""
    delta_uncapped: int | None = None
    """The dynamic rule's value before the cap at the median vote count minus one."""
    n_fitted: int = 0
    """Annotators whose ability was estimated."""
    timings: RefreshTimings = field(default_factory=lambda: RefreshTimings(0.0, 0.0, 0.0, 0.0))

    @property
    def counts(self) -> dict[str, int]:
        """Annotators per status."""
        out = dict.fromkeys(STATUS_ORDER, 0)
        for a in self.annotators:
            out[a.status] = out.get(a.status, 0) + 1
        return out

    @property
    def item_noun(self) -> str:
        return "question" if self.kind == "difficulty" else "model"


# ---------------------------------------------------------------------------
# the report


@dataclass(frozen=True)
class ReportTable:
    """A table ready to show: every cell is already text."""

    key: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


@dataclass(frozen=True)
class ReportView:
    """What the report screen and the Markdown show: a heading, lines and tables."""

    title: str
    summary: tuple[str, ...]
    tables: tuple[ReportTable, ...]


# --- quality checks and annotator background (issue 16) ------------------------------


@dataclass(frozen=True)
class QualityCheck:
    """One annotator's (or group's) rate on a quality check: gold accuracy or agreement
    with their own swapped re-tests, with its Wilson 95% interval."""

    n: int
    """Checks counted (skips left out)."""
    hits: int
    rate: float | None
    lower: float | None
    upper: float | None
    p_value: float | None
    """One-sided exact binomial p-value of "rate >= threshold" (unadjusted)."""
    signal: bool
    """The rate is significantly below the threshold (``low_gold_accuracy`` /
    ``inconsistent``)."""

    @property
    def cell(self) -> str:
        """``"80% [49-94] n=10"``; ``"-"`` without checks."""
        if not self.n:
            return "-"
        return f"{share_cell(self.rate, self.lower, self.upper)} n={self.n}"


@dataclass(frozen=True)
class AnnotatorQuality:
    """One annotator's quality checks, signals and questionnaire answers in a study."""

    annotator: str
    gold: QualityCheck | None
    consistency: QualityCheck | None
    signals: tuple[str, ...]
    """``low_gold_accuracy`` and / or ``inconsistent``."""
    background: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(questionnaire key, the choices given), in questionnaire order."""


@dataclass(frozen=True)
class BackgroundGroup:
    """The annotators who gave one answer to one questionnaire question, pooled."""

    key: str
    answer: str
    annotators: tuple[str, ...]
    gold: QualityCheck | None
    consistency: QualityCheck | None
    alignment: float | None = None
    """Difficulty report: mean individual alignment of the group's annotators with the
    consensus (first estimator); None elsewhere."""


@dataclass(frozen=True)
class StudyQuality:
    """A study's quality checks (gold items, swapped re-tests) and annotator background."""

    annotators: tuple[AnnotatorQuality, ...]
    groups: tuple[BackgroundGroup, ...]
    gold_items: int
    retest_share: float
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """No gold item, no re-test and no questionnaire answer."""
        return not self.gold_items and not self.retest_share and not self.groups

    def of(self, annotator: str) -> AnnotatorQuality | None:
        """The row of ``annotator`` (as stored), if they have one."""
        return next((a for a in self.annotators if a.annotator == annotator), None)
