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
from annotate.views import AnnotatorQuality, BackgroundGroup, QualityCheck, StudyQuality
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
        gold = repo.gold_votes(s, st.id)
        retests = repo.retest_choices(s, st.id)
        answers = repo.study_answers(s, st.id) if st.settings.questionnaire else []
        n_gold = len(repo.gold_answers(s, st.id))
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
