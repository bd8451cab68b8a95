"""Quality checks inside a study and the annotators' background (issue 16).

Reads the gold votes, the swapped re-tests and the questionnaire answers of a study
from the store, turns them into arrays and calls :mod:`ranking.quality`: per annotator,
the gold accuracy and the self-consistency with their Wilson intervals and the
``low_gold_accuracy`` / ``inconsistent`` signals; per questionnaire answer, the same
pooled over the annotators who gave it. The monitor, ``annotate report`` and
``annotate export`` show these values; a verdict rule can consume them as evidence
(:func:`ranking.quality.quality_reasons`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.choices import OUTCOME, Choice
from annotate.errors import StudyNotFoundError
from annotate.store import repo
from annotate.views import (
    AnnotatorQuality,
    BackgroundGroup,
    QualityCheck,
    ReportTable,
    StudyQuality,
)
from ranking.quality import (
    CONSISTENCY_THRESHOLD,
    GOLD_THRESHOLD,
    CheckRates,
    check_rates,
    gold_accuracy,
    quality_reasons,
    self_consistency,
)

NOTES = (
    f"Gold accuracy: share of an annotator's votes on gold items equal to the known answer "
    f"(skips left out); self-consistency: share of swapped re-tests that repeat the "
    f"annotator's current vote on the item (after un-swapping; skips left out). Intervals: "
    f"Wilson 95%. Signals: one-sided exact binomial test below {GOLD_THRESHOLD:.0%} "
    f"(low_gold_accuracy) and {CONSISTENCY_THRESHOLD:.0%} (inconsistent) at 5%, unadjusted. "
    "Re-test votes are not in the fits: each item counts once per annotator.",
)


def _code(choice: str) -> int:
    return int(OUTCOME[Choice(choice)])


def _check(rates: CheckRates, i: int) -> QualityCheck | None:
    n = int(rates.n[i])
    if n == 0:
        return None

    def f(x: float) -> float | None:
        return None if not np.isfinite(x) else float(x)

    return QualityCheck(
        n,
        int(rates.hits[i]),
        f(rates.rate[i]),
        f(rates.lower[i]),
        f(rates.upper[i]),
        f(rates.p_value[i]),
        bool(rates.signal[i]),
    )


def study_quality(engine: Engine, study: str) -> StudyQuality:
    """The study's gold accuracy, self-consistency and background groups, per annotator."""
    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None:
            raise StudyNotFoundError(study, repo.study_names(s))
        n_gold = len(repo.gold_answers(s, st.id))
        # the current votes joined with the gold answers: none without a gold answer (the
        # join then reads every current vote for nothing, 0.5 s at a million votes)
        gold = repo.gold_votes(s, st.id) if n_gold else []
        retests = repo.retest_choices(s, st.id)
        answers = repo.study_answers(s, st.id) if st.settings.questionnaire else []
        ids = sorted({a for a, *_ in gold} | {a for a, *_ in retests} | {a for a, *_ in answers})
        names = repo.annotator_names(s, ids)
    return quality_from_rows(
        [names[i] for i in ids],
        ids,
        gold,
        retests,
        answers,
        questionnaire=[(q.key, q.choices) for q in st.settings.questionnaire],
        gold_items=n_gold,
        retest_share=st.settings.retest_share,
    )


def quality_from_rows(
    names: Sequence[str],
    ids: Sequence[int],
    gold: Sequence[tuple[int, int, str, str]],
    retests: Sequence[tuple[int, int, str, str]],
    answers: Sequence[tuple[int, str, str]],
    *,
    questionnaire: Sequence[tuple[str, Sequence[str]]],
    gold_items: int,
    retest_share: float,
) -> StudyQuality:
    """:func:`study_quality` on rows as :mod:`annotate.store.repo` returns them."""
    index = {a: k for k, a in enumerate(ids)}
    n = len(ids)
    g = gold_accuracy(
        [index[a] for a, *_ in gold],
        [_code(c) for _, _, c, _ in gold],
        [_code(x) for *_, x in gold],
        n_annotators=n,
    )
    c = self_consistency(
        [index[a] for a, *_ in retests],
        [_code(x) for _, _, x, _ in retests],
        [_code(x) for *_, x in retests],
        n_annotators=n,
    )
    reasons = quality_reasons(n, gold=g, consistency=c)
    given: dict[int, dict[str, tuple[str, ...]]] = {}
    for a, key, raw in answers:
        given.setdefault(a, {})[key] = tuple(json.loads(raw))
    order = [k for k, _ in questionnaire]
    rows = tuple(
        AnnotatorQuality(
            names[k],
            _check(g, k),
            _check(c, k),
            tuple(reasons[k]),
            tuple((key, given[a][key]) for key in order if key in given.get(a, {})),
        )
        for k, a in enumerate(ids)
    )
    groups: list[BackgroundGroup] = []
    for key, choices in questionnaire:
        for answer in choices:
            members = [k for k, a in enumerate(ids) if answer in given.get(a, {}).get(key, ())]
            if not members:
                continue
            groups.append(
                BackgroundGroup(
                    key,
                    answer,
                    tuple(names[k] for k in members),
                    _pooled(g, members),
                    _pooled(c, members),
                )
            )
    return StudyQuality(rows, tuple(groups), gold_items, retest_share, NOTES)


def _pooled(rates: CheckRates, members: Sequence[int]) -> QualityCheck | None:
    """The checks of ``members`` pooled (as if one annotator; checks taken independent)."""
    n = int(rates.n[members].sum())
    if n == 0:
        return None
    k = int(rates.hits[members].sum())
    pooled = check_rates(
        np.zeros(n, dtype=np.int64),
        np.arange(n) < k,
        n_annotators=1,
        threshold=rates.threshold,
        alpha=rates.alpha,
        confidence=rates.confidence,
    )
    return _check(pooled, 0)


def with_alignment(quality: StudyQuality, individual: Mapping[str, float | None]) -> StudyQuality:
    """Each background group with its annotators' mean individual alignment (report)."""
    groups = []
    for grp in quality.groups:
        vals = [v for a in grp.annotators if (v := individual.get(a)) is not None]
        groups.append(replace(grp, alignment=float(np.mean(vals)) if vals else None))
    return replace(quality, groups=tuple(groups))


def check_dict(c: QualityCheck | None) -> dict[str, object] | None:
    """A check as JSON (``null`` without checks)."""
    if c is None:
        return None
    return {
        "n": c.n,
        "hits": c.hits,
        "rate": c.rate,
        "lower": c.lower,
        "upper": c.upper,
        "p_value": c.p_value,
        "signal": c.signal,
    }


def quality_dict(q: StudyQuality | None) -> dict[str, object] | None:
    """The ``quality`` member of ``annotate report --json`` (``null`` when the study has
    no gold item, no re-test and no questionnaire answer)."""
    if q is None:
        return None
    return {
        "gold_items": q.gold_items,
        "retest_share": q.retest_share,
        "notes": list(q.notes),
        "annotators": [
            {
                "annotator": a.annotator,
                "gold": check_dict(a.gold),
                "self_consistency": check_dict(a.consistency),
                "signals": list(a.signals),
                "background": {k: list(v) for k, v in a.background},
            }
            for a in q.annotators
        ],
        "groups": [
            {
                "key": g.key,
                "answer": g.answer,
                "annotators": list(g.annotators),
                "gold": check_dict(g.gold),
                "self_consistency": check_dict(g.consistency),
                "alignment": g.alignment,
            }
            for g in q.groups
        ],
    }


def report_quality(
    engine: Engine, study: str, individual: Mapping[str, float | None]
) -> StudyQuality | None:
    """The report's quality section: :func:`study_quality` with each background group's
    mean individual alignment; None when the study has none of it."""
    q = study_quality(engine, study)
    return None if q.empty else with_alignment(q, individual)


def quality_tables(q: StudyQuality) -> tuple[ReportTable, ...]:
    """The report's tables: each annotator's checks and answers, then the groups."""
    keys = [k for a in q.annotators for k, _ in a.background]
    keys = list(dict.fromkeys(keys))
    rows = tuple(
        (
            a.annotator,
            "-" if a.gold is None else a.gold.cell,
            "-" if a.consistency is None else a.consistency.cell,
            ", ".join(a.signals),
            *("; ".join(dict(a.background).get(k, ())) for k in keys),
        )
        for a in q.annotators
    )
    tables = [
        ReportTable(
            "quality",
            "Quality checks: gold accuracy and self-consistency",
            ("annotator", "gold [95% CI]", "re-test agreement [95% CI]", "signals", *keys),
            rows,
            " ".join(q.notes),
        )
    ]
    if q.groups:
        tables.append(
            ReportTable(
                "background",
                "Annotators grouped by their questionnaire answers",
                ("question", "answer", "annotators", "gold", "re-test agreement", "alignment"),
                tuple(
                    (
                        g.key,
                        g.answer,
                        str(len(g.annotators)),
                        "-" if g.gold is None else g.gold.cell,
                        "-" if g.consistency is None else g.consistency.cell,
                        "-" if g.alignment is None else f"{100 * g.alignment:.0f}%",
                    )
                    for g in q.groups
                ),
                "Pooled over the group's annotators (checks taken as independent); an "
                "annotator who chose several answers is in each of their groups. alignment: "
                "mean individual alignment with the consensus of the first estimator.",
            )
        )
    return tuple(tables)
