"""The human-alignment report as text: what the terminal, the report screen and the Markdown show.

:func:`build_view` turns a :class:`annotate.services.report_model.HumanAlignmentReport`
into a :class:`ReportView`: a heading, summary lines and :class:`ReportTable`
objects whose cells are already text. No statistics and no I/O here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from annotate.services.json_ready import float_matrix, kept_result
from annotate.services.report_model import (
    Agreement,
    AnnotatorAlignment,
    ArenaReport,
    Correlation,
    HumanAlignmentReport,
)
from annotate.views import ReportTable, ReportView
from ranking.alignment import Estimate, Interval


def pct(x: float | None) -> str:
    """A fraction as a percentage with one decimal, or an em dash."""
    return "—" if x is None else f"{100.0 * x:.1f}"


def num(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def num_row(row: Sequence[float | None], digits: int) -> tuple[str, ...]:
    """:func:`num` of every value of ``row``, in one C-speed pass when none is None (a
    1,000-annotator pairwise kappa table has a million cells)."""
    try:
        return tuple(map(f"{{:.{digits}f}}".format, row))
    except TypeError:  # a None: "—"
        return tuple(num(x, digits) for x in row)


def num_rows(rows: Sequence[Sequence[float | None]], digits: int) -> list[tuple[str, ...]]:
    """:func:`num_row` of every row of a matrix (the pairwise kappa table: a million cells
    at 1,000 annotators), in vectorised passes when every cell is a float or None
    (:func:`annotate.services.json_ready.float_matrix`, whose conversion the report's CSV
    shares).

    A cell's text is ``format(x, ".{digits}f")``: the exact binary value rounded to
    ``digits`` decimals. With ``t = x * 10**digits`` below 2**30 in magnitude, ``t`` is
    within 2**-24 of the exact product, so unless its fraction is within 1e-6 of one half
    (a tie or near-tie, formatted by Python) rounding ``t`` gives the same integer ``k``,
    and the text is the sign bit's "-" then ``k`` with the decimal point put in."""
    got = float_matrix(rows) if digits >= 1 else None  # a None cell is NaN there
    if got is None:
        return [num_row(r, digits) for r in rows]
    a, _ = got
    out: list[tuple[str, ...]] = []
    step = max(1, NUM_ROWS_BLOCK // max(1, a.shape[1]))
    for r0 in range(0, a.shape[0], step):
        out += _num_block(a[r0 : r0 + step], rows[r0 : r0 + step], digits)
    return out


NUM_ROWS_BLOCK = 65_536
"""Cells :func:`num_rows` formats per pass: its arrays (a few 8-byte values per cell)
stay under a few MB whatever the matrix (the report formats its pairwise kappa table
while other statistics still hold their memory)."""


def _num_block(
    a: npt.NDArray[np.float64], rows: Sequence[Sequence[float | None]], digits: int
) -> list[tuple[str, ...]]:
    """:func:`num_rows` of the rows ``rows``, whose floats (None: NaN) are ``a``."""
    width = a.shape[1]
    scale = 10**digits
    with np.errstate(all="ignore"):  # infinities and NaN are formatted by Python
        t = a * scale
        whole = np.floor(t)
        frac = t - whole
        fast = (np.abs(t) < 2.0**30) & (np.abs(frac - 0.5) > 1e-6)
    k = np.where(fast, whole + (frac > 0.5), 0.0).astype(np.int64)
    code = 2 * np.abs(k) + np.signbit(a)  # |k| and the sign ("-0.00" for -0.001 and -0.0)
    code = np.where(fast, code, 0)
    if int(code.max()) <= 4 * code.size + 4096:  # a lookup table indexed by code
        present = np.flatnonzero(np.bincount(code.ravel()))
        index = code
    else:  # large values: the distinct codes
        present, inverse = np.unique(code, return_inverse=True)
        index = inverse.reshape(code.shape)
    texts = [
        f"{'-' if c & 1 else ''}{(c >> 1) // scale}.{(c >> 1) % scale:0{digits}d}"
        for c in present.tolist()
    ]
    table = np.empty(int(index.max()) + 1, dtype=object)
    table[present if index is code else np.arange(present.size)] = texts
    out = table[index]
    slow = np.flatnonzero(~fast.ravel())
    if slow.size:  # and the None cells ("—")
        flat = out.reshape(-1)
        flat[slow] = [num(rows[k // width][k % width], digits) for k in slow.tolist()]
    return list(map(tuple, out.tolist()))


def pairwise_rows(g: Agreement) -> tuple[tuple[str, ...], ...]:
    """The rows of the pairwise kappa table: each annotator and its kappa texts (two
    decimals). Inside :func:`annotate.services.json_ready.kept_texts` they are kept for
    the agreement's matrix: the report makes them ahead, in a thread that would otherwise
    wait (:func:`annotate.services.report.human_alignment_report`)."""

    def make() -> tuple[tuple[str, ...], ...]:
        kappa_texts = num_rows(g.pairwise_kappa, 2)
        return tuple((a, *t) for a, t in zip(g.annotators, kappa_texts, strict=True))

    return kept_result("pairwise rows", g, make)


def p_text(p: float | None) -> str:
    """A p-value with sensible precision: ``0.33``, ``0.004``, ``< 0.001``; — when undefined."""
    if p is None:
        return "—"
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.01 else f"{p:.2f}"


class Footnotes:
    """Long reasons of undefined cells, said once in a note under the table.

    A reason of at most :data:`INLINE_REASON` characters stays in the cell
    (``undefined: reason``); a longer one becomes ``undefined [k]`` and the note
    says ``[k] reason`` once, however many cells share it.
    """

    def __init__(self) -> None:
        self.reasons: dict[str, int] = {}

    def cell(self, e: Estimate, *, percent: bool) -> str:
        if e.value is not None or len(e.reason or "") <= INLINE_REASON:
            return value_text(e, percent=percent)
        k = self.reasons.setdefault(e.reason or "", len(self.reasons) + 1)
        return f"undefined [{k}]"

    def note(self, note: str) -> str:
        said = " ".join(f"[{k}] {why}" for why, k in self.reasons.items())
        return f"{note} Undefined: {said}" if said else note


EXACT_P_MAX_N = 8
"""Up to this many questions the correlation p-values are exact: every ordering counted."""

INLINE_REASON = 60
"""Longer reasons of undefined cells go to the table's note (:class:`Footnotes`)."""


def ci_text(i: Interval | None, *, percent: bool) -> str:
    if i is None:
        return "—"
    f = pct if percent else num
    return f"[{f(i.low)}, {f(i.high)}]"


def value_text(e: Estimate, *, percent: bool) -> str:
    """The value, or ``undefined: reason``."""
    if e.value is None:
        return f"undefined: {e.reason}"
    return pct(e.value) if percent else num(e.value)


def build_view(r: HumanAlignmentReport) -> ReportView:
    """The text tables of ``r`` (what :meth:`HumanAlignmentReport.view` returns)."""
    nt = r.near_ties
    conf = f"{100 * r.confidence:g}%"
    summary = [
        f"Study {r.study}: {r.n_questions} questions, {r.n_pairs} pairs, {len(r.annotators)} "
        f"annotators, {r.n_votes} current votes ({r.n_skips} skips).",
        f"Consensus (eq. 9) on {nt.consensus_pairs} pairs; near-tie rule "
        f"({nt.rule}, margin {nt.margin:g}) touched {nt.near_ties} pair(s): {nt.resolved} "
        f"resolved, {nt.excluded} left out; {nt.without_votes} pair(s) had no non-skipped vote.",
        f"Intervals: {conf} percentile bootstrap, {r.n_boot} replicates per scheme (seed "
        f"{r.seed}); CI both = pairs and annotators resampled together (two-way), CI pairs "
        "/ CI annotators = one way only. Percentages: alignment in %.",
    ]
    summary.append(
        "Table 2, eq. 9 and Figure 7 are those of the EIP paper (Hu et al., ICLR 2026) [1]; "
        "the full reference is under References in report.md."
    )
    if not r.human_scale.fitted:
        summary.append(
            "Human difficulty scale: not fitted (the reason is under 'Estimators vs the "
            "human difficulty scale')."
        )
    elif len(r.human_scale.groups) > 1:
        hs0 = r.human_scale
        n_fit = sum(g.fitted for g in hs0.groups)
        summary.append(
            f"Human difficulty scale: fitted separately on {n_fit} of {len(hs0.groups)} groups "
            "of questions linked by judged pairs (scales of different groups are not "
            "comparable); correlations are n-weighted means of the within-group coefficients."
        )
    if r.adaptive is not None:
        summary.append(str(r.adaptive["line"]))
    summary.extend(r.notes)
    fn = Footnotes()
    tables = [
        ReportTable(
            "alignment",
            "Alignment with human judgement (Table 2)",
            (
                "method",
                "consensus %",
                "CI both",
                "CI pairs",
                "CI annotators",
                "kappa",
                "CI both",
                "CI pairs",
                "CI annotators",
                "mean individual %",
                "pairs",
                "tied predictions",
            ),
            tuple(
                (
                    m.label,
                    fn.cell(m.consensus, percent=True),
                    ci_text(m.consensus.both_interval, percent=True),
                    ci_text(m.consensus.pairs_interval, percent=True),
                    ci_text(m.consensus.annotators_interval, percent=True),
                    fn.cell(m.kappa, percent=False),
                    ci_text(m.kappa.both_interval, percent=False),
                    ci_text(m.kappa.pairs_interval, percent=False),
                    ci_text(m.kappa.annotators_interval, percent=False),
                    fn.cell(m.mean_individual, percent=True),
                    str(m.pairs),
                    str(m.tied_predictions),
                )
                for m in r.alignment
            ),
            fn.note(
                "consensus: share of consensus pairs where the prediction matches the "
                "majority; a tied prediction counts as a miss."
            ),
        ),
        ReportTable(
            "individual",
            "Individual alignment per annotator, % (Table 2's V columns)",
            ("annotator", "judged", *r.labels),
            tuple(
                (
                    a,
                    str(max((m.individual[i].judged for m in r.alignment), default=0)),
                    *(_cell(m.individual[i]) for m in r.alignment),
                )
                for i, a in enumerate(r.annotators)
            ),
            f"value [{conf} bootstrap interval over pairs]; — = no non-skipped vote.",
        ),
        _paired_table(r),
    ]
    if r.subgroups:
        fn = Footnotes()
        tables.append(
            ReportTable(
                "subgroups",
                "Alignment by model pool (Figure 7)",
                (
                    "pool",
                    "models",
                    "method",
                    "consensus %",
                    "CI both",
                    "CI pairs",
                    "CI annotators",
                    "kappa",
                    "CI both",
                    "CI pairs",
                    "CI annotators",
                    "pairs",
                ),
                tuple(
                    (
                        s.pool,
                        str(len(s.models)),
                        s.label,
                        fn.cell(s.consensus, percent=True),
                        ci_text(s.consensus.both_interval, percent=True),
                        ci_text(s.consensus.pairs_interval, percent=True),
                        ci_text(s.consensus.annotators_interval, percent=True),
                        fn.cell(s.kappa, percent=False),
                        ci_text(s.kappa.both_interval, percent=False),
                        ci_text(s.kappa.pairs_interval, percent=False),
                        ci_text(s.kappa.annotators_interval, percent=False),
                        str(s.pairs),
                    )
                    for s in r.subgroups
                ),
                fn.note("each estimator recomputed from the pool's models only."),
            )
        )
    g = r.agreement
    tables.append(
        ReportTable(
            "agreement",
            "Agreement among annotators",
            ("statistic", "value", "CI both", "CI pairs", "CI annotators", "pairs used"),
            (
                (
                    "Fleiss' kappa",
                    value_text(g.fleiss_kappa, percent=False),
                    ci_text(g.fleiss_kappa.both_interval, percent=False),
                    ci_text(g.fleiss_kappa.pairs_interval, percent=False),
                    ci_text(g.fleiss_kappa.annotators_interval, percent=False),
                    str(g.fleiss_pairs),
                ),
                (
                    "Fleiss' kappa, skip as a category",
                    value_text(g.fleiss_kappa_with_skips, percent=False),
                    ci_text(g.fleiss_kappa_with_skips.both_interval, percent=False),
                    ci_text(g.fleiss_kappa_with_skips.pairs_interval, percent=False),
                    ci_text(g.fleiss_kappa_with_skips.annotators_interval, percent=False),
                    str(g.fleiss_with_skips_pairs),
                ),
                (
                    "Krippendorff's alpha (nominal)",
                    value_text(g.krippendorff_alpha, percent=False),
                    ci_text(g.krippendorff_alpha.both_interval, percent=False),
                    ci_text(g.krippendorff_alpha.pairs_interval, percent=False),
                    ci_text(g.krippendorff_alpha.annotators_interval, percent=False),
                    str(g.alpha_pairs),
                ),
                (
                    "mean pairwise Cohen's kappa",
                    num(g.mean_pairwise_kappa)
                    if g.mean_pairwise_kappa is not None
                    else f"undefined: {g.mean_pairwise_reason}",
                    "—",
                    "—",
                    "—",
                    "",
                ),
            ),
            "Fleiss: pairs judged by every annotator; alpha: skips as missing.",
        )
    )
    rel = {a: (v, se) for a, v, se in r.human_scale.reliability}
    tables.append(
        ReportTable(
            "annotators",
            "Annotators: agreement with the others (leave-one-out) and reliability",
            (
                "annotator",
                "judged",
                "skipped",
                "LOO kappa",
                "LOO agreement %",
                "LOO pairs",
                "reliability",
                "± se",
            ),
            tuple(
                (
                    x.annotator,
                    str(x.judged),
                    str(x.skipped),
                    num(x.kappa) if x.kappa is not None else f"undefined: {x.kappa_reason}",
                    pct(x.agreement),
                    str(x.pairs),
                    num(rel.get(x.annotator, (None, None))[0], 2),
                    num(rel.get(x.annotator, (None, None))[1], 2),
                )
                for x in g.leave_one_out
            ),
            "reliability: discrimination in the human-scale fit, relative to the mean "
            "annotator (1 = average, 0 = random, < 0 = inverted).",
        )
    )
    tables.append(
        ReportTable(
            "pairwise",
            "Pairwise Cohen's kappa between annotators",
            ("annotator", *g.annotators),
            pairwise_rows(g),
            "on the pairs both judged; — = undefined (fewer than 2 shared pairs or one "
            "category used by both).",
        )
    )
    if r.verdicts:
        tables.append(_verdict_table(r))
    if r.quality is not None:  # gold, re-tests and the questionnaire groups (issue 16)
        from annotate.services.quality import quality_tables

        tables += quality_tables(r.quality)
    hs = r.human_scale
    tables.append(
        ReportTable(
            "correlations",
            "Estimators vs the human difficulty scale",
            ("method", "Spearman", "p", "Kendall", "p", "questions", "groups", "note"),
            tuple(
                (
                    c.label,
                    num(c.spearman),
                    p_text(c.spearman_p),
                    num(c.kendall),
                    p_text(c.kendall_p),
                    str(c.n),
                    str(c.groups),
                    c.reason or "",
                )
                for c in hs.correlations
            ),
            (
                "human scale: am-ELO fit of the votes (Bradley-Terry with one discrimination "
                "per annotator), per group of linked questions; with several groups the "
                "coefficients are n-weighted means of the within-group ones (no p-value)."
                + _p_note(hs.correlations)
                + (
                    f" Group(s) {', '.join(map(str, hs.prior_groups))}: too few votes for the "
                    "plain fit, fitted with weak priors (annotator discrimination ~ N(1, 2^2) "
                    "relative to the average, difficulty ~ N(0, 1000^2) Elo points): finite, "
                    "wide intervals."
                    if hs.prior_groups
                    else ""
                )
                + (f" Not fitted: {hs.reason}" if hs.reason else "")
            )
            if hs.fitted
            else f"not fitted: {hs.reason}",
        )
    )
    if hs.fitted:
        qs = sorted(
            (q for q in hs.questions if q.difficulty is not None),
            key=lambda q: (q.group or 0, -(q.difficulty or 0.0)),
        )
        tables.append(
            ReportTable(
                "human_scale",
                "Human difficulty per question (Elo points per group, hardest first)",
                ("question", "subject", "group", "difficulty", "interval"),
                tuple(
                    (
                        q.key,
                        q.subject,
                        str(q.group or ""),
                        num(q.difficulty, 0),
                        f"[{num(q.lower, 0)}, {num(q.upper, 0)}]",
                    )
                    for q in qs
                )
                + tuple(
                    (q.key, q.subject, str(q.group or ""), q.excluded or "not fitted", "")
                    for q in hs.questions
                    if q.difficulty is None and q.excluded
                ),
                f"{conf} Wald intervals.",
            )
        )
    if nt.near_ties:
        pr = {p.key: p for p in r.pairs}
        tables.append(
            ReportTable(
                "near_ties",
                "Pairs touched by the near-tie rule",
                ("pair", "first", "second", "first harder", "second harder", "skips", "consensus"),
                tuple(
                    (
                        k,
                        pr[k].first,
                        pr[k].second,
                        str(pr[k].n_first),
                        str(pr[k].n_second),
                        str(pr[k].n_skip),
                        pr[k].consensus + (" (weighted vote)" if pr[k].resolved else " (left out)"),
                    )
                    for k in nt.pairs
                ),
            )
        )
    return ReportView(f"Human alignment: {r.title or r.study}", tuple(summary), tuple(tables))


def printed_view(r: HumanAlignmentReport) -> ReportView:
    """The view for the terminal and ``report.md``: without empty tables, and when no pair
    has a non-skipped vote, one line saying so in place of the tables of undefined values.

    The report screen keeps every table (:func:`build_view`). The last report's view is
    kept, so writing ``report.md`` and printing the tables build it once."""
    if _LAST_PRINTED and _LAST_PRINTED[0][0] is r:
        return _LAST_PRINTED[0][1]
    v = _printed_view(r)
    _LAST_PRINTED[:] = [(r, v)]
    return v


_LAST_PRINTED: list[tuple[HumanAlignmentReport, ReportView]] = []


def _printed_view(r: HumanAlignmentReport) -> ReportView:
    v = build_view(r)
    tables = tuple(t for t in v.tables if t.rows)
    if r.n_pairs and r.near_ties.without_votes < r.n_pairs:
        return ReportView(v.title, v.summary, tables)
    why = (
        "there are no votes in this study yet"
        if r.n_votes == 0
        else "there are no non-skipped votes (every vote is a skip)"
        if r.n_pairs
        else "the study has no pairs"
    )
    line = (
        f"Alignment, agreement and the human difficulty scale: undefined: {why}; "
        "their tables are left out."
    )
    summary = tuple(x for x in v.summary if not x.startswith("Human difficulty scale: not fitted"))
    kept = tuple(t for t in tables if t.key in ("annotators", "reliability") and r.n_votes)
    return ReportView(v.title, (*summary, line), kept)


def _paired_table(r: HumanAlignmentReport) -> ReportTable:
    """McNemar's exact test of every two methods on the same consensus pairs."""
    label = dict(zip(r.methods, r.labels, strict=True))
    return ReportTable(
        "paired",
        "Telling the methods apart: McNemar's exact test on the same consensus pairs",
        ("method", "vs", "pairs", "only first right", "only second right", "difference %", "p"),
        tuple(
            (
                label.get(t.first, t.first),
                label.get(t.second, t.second),
                str(t.pairs),
                str(t.only_first),
                str(t.only_second),
                "—" if t.difference is None else f"{100 * t.difference:+.1f}",
                p_text(t.p_value),
            )
            for t in r.paired_tests
        ),
        "difference: consensus alignment of the first minus the second on these pairs; "
        "p: two-sided exact binomial test of the discordant pairs (McNemar), unadjusted for "
        "the number of comparisons.",
    )


def _p_note(correlations: Sequence[Correlation]) -> str:
    """What the p columns are; on a tiny scale, that they are exact and how small they go."""
    small = sorted({c.n for c in correlations if c.spearman_p is not None and c.n})
    small = [n for n in small if n <= EXACT_P_MAX_N]
    if not small:
        return " p: two-sided (scipy)."
    n = small[0]
    return (
        f" p: two-sided, exact (all n! orderings of the questions) for n <= {EXACT_P_MAX_N}; "
        f"with n = {n} the smallest possible p is {p_text(2 / math.factorial(n))}, "
        "so too few questions to show a correlation."
        if n <= 4
        else f" p: two-sided, exact (all n! orderings of the questions) for n <= {EXACT_P_MAX_N}."
    )


def _cell(a: AnnotatorAlignment) -> str:
    if a.value is None:
        return "—"
    if a.low is None or a.high is None:
        return pct(a.value)
    return f"{pct(a.value)} [{pct(a.low)}, {pct(a.high)}]"


VERDICT_REASONS = ("adversarial", "random", "position_bias", "too_fast", "low_agreement")
"""The flag reasons of :data:`ranking.arena.FLAG_REASONS`, one column each."""


def _p(x: float | None) -> str:
    if x is None:
        return "—"
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def _verdict_table(r: HumanAlignmentReport | ArenaReport, shown: str = "question") -> ReportTable:
    """Each annotator's status, with one column per flag reason (statistic / adjusted p)."""

    def cell(v: object, reason: str) -> str:
        for f in v.flags:  # type: ignore[attr-defined]
            if f.reason == reason:
                stat = "all ties" if f.statistic is None else f"{f.statistic:.3g}"
                return f"{stat} / {_p(f.p_value)}"
        return ""

    rows = []
    for v in r.verdicts:
        ab = "—" if v.ability is None else f"{v.ability:.2f}"
        if v.ability is not None and v.ability_lower is not None and v.ability_upper is not None:
            ab += f" [{v.ability_lower:.2f}, {v.ability_upper:.2f}]"
        left = "—" if v.left_share is None else f"{pct(v.left_share)}% (p {_p(v.left_p_value)})"
        rows.append(
            (
                v.annotator,
                str(v.votes),
                v.status,
                ab,
                *(cell(v, reason) for reason in VERDICT_REASONS),
                left,
                "—" if v.votes_to_verdict is None else str(v.votes_to_verdict),
            )
        )
    return ReportTable(
        "reliability",
        "Annotator reliability: status and flags",
        (
            "annotator",
            "votes",
            "status",
            "ability [95% CI]",
            *VERDICT_REASONS,
            "left side",
            "votes to verdict",
        ),
        tuple(rows),
        "Each annotator is pending, reliable or flagged (the monitor's Stable Arena verdicts). "
        "A reason column shows the statistic / the p-value adjusted across annotators; an "
        "annotator is flagged for a reason when its test rejects after Benjamini-Hochberg "
        "adjustment across annotators at 5% (among flags of one kind, at most 5% are expected "
        "to be false). Reliable: ability significantly above a random voter's (one-sided test "
        f"at 5%). left side: share of decisive votes for the {shown} shown first, exact "
        "binomial p-value before adjustment (position_bias has the adjusted one). votes to "
        "verdict: about how many more votes a pending annotator needs. "
        + " ".join(r.verdict_notes),
    )


def arena_view(r: ArenaReport) -> ReportView:
    """The text tables of an arena study's report: the leaderboard with each model's
    both-bad share, and the annotator verdicts (what the monitor shows)."""
    summary = [
        f"Study {r.study}: {len(r.leaderboard)} rated models, {len(r.verdicts)} annotators, "
        f"{r.n_votes} current votes ({r.n_compared} compare two models).",
        "Ratings: Stable Arena (am-ELO with annotator abilities, Liu et al., ICML 2025), "
        "bias-aware Wald 95% intervals, as in the monitor; annotate rate gives bootstrap "
        "intervals and the paper's analyses.",
    ]
    if r.adaptive is not None:
        summary.append(str(r.adaptive["line"]))
    if r.problem:
        summary.append(r.problem)
    rows = []
    for m in r.leaderboard:
        bad = (
            ("—", "—")
            if m.both_bad is None
            else (
                pct(m.both_bad[0]),
                f"[{pct(m.both_bad[1])}, {pct(m.both_bad[2])}]",
            )
        )
        rows.append(
            (
                str(m.rank),
                m.name,
                *((m.detail,) if any(x.detail for x in r.leaderboard) else ()),
                f"{m.rating:.0f}",
                f"[{m.lower:.0f}, {m.upper:.0f}]",
                str(m.comparisons),
                *bad,
            )
        )
    grouped = any(x.detail for x in r.leaderboard)
    board = ReportTable(
        "leaderboard",
        "Leaderboard",
        (
            "rank",
            "model",
            *(("group",) if grouped else ()),
            "rating",
            "95% CI",
            "comparisons",
            "both bad %",
            "both bad 95% CI",
        ),
        tuple(rows),
        "rank: models whose intervals separate them get different ranks (pairwise tests, "
        "Benjamini-Hochberg); both bad: share of the decided votes on the model's battles "
        "that judged both responses bad, with its Wilson 95% interval "
        "(ranking.proportions.both_bad_shares)."
        + (
            " Groups of models never compared with each other are rated separately."
            if grouped
            else ""
        ),
    )
    tables = [board]
    if r.verdicts:
        tables.append(_verdict_table(r, "response"))
        tables.append(_signal_table(r))
    return ReportView(f"Arena report: {r.title or r.study}", tuple(summary), tuple(tables))


def _signal_table(r: ArenaReport) -> ReportTable:
    """The monitor's model-free signals per annotator."""

    def share(x: float | None) -> str:
        return "—" if x is None else pct(x)

    return ReportTable(
        "signals",
        "Annotator signals",
        ("annotator", "votes", "fast %", "ties %", "both bad %", "majority %", "alerts"),
        tuple(
            (
                v.annotator,
                str(v.votes),
                share(v.fast_share),
                share(v.tie_rate),
                share(v.both_bad_rate),
                share(v.majority_agreement),
                ", ".join(v.alerts),
            )
            for v in r.verdicts
        ),
        "As the monitor shows them: fast = share of timed votes below the study's fast-vote "
        "rule; majority = agreement with the other annotators' majority on the same battle.",
    )
