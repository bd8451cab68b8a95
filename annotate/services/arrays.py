"""Store -> numpy arrays ready for :mod:`ranking`.

These are the only conversions from database rows to arrays; the analysis
services build on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine
from sqlmodel import Session

from annotate.errors import StudyNotFoundError
from annotate.store import repo


@dataclass(frozen=True)
class VoteArrays:
    """Current votes of one study as parallel arrays (one entry per vote).

    ``item`` and ``annotator`` index into ``item_keys`` and ``annotators``.
    ``choice`` holds the codes of :data:`annotate.choices.OUTCOME`: 1 = first / model_a,
    2 = second / model_b, 0 = skip, 3 = tie, 4 = both bad. ``swapped`` is True when the
    second half was shown first; ``response_ms`` is -1 when unknown.
    """

    study: str
    kind: str
    item: npt.NDArray[np.int64]
    annotator: npt.NDArray[np.int64]
    choice: npt.NDArray[np.int8]
    swapped: npt.NDArray[np.bool_]
    response_ms: npt.NDArray[np.int64]
    fast: npt.NDArray[np.bool_]
    item_keys: list[str]
    annotators: list[str]

    def __len__(self) -> int:
        return int(self.item.shape[0])


def vote_arrays(engine: Engine, study: str) -> VoteArrays:
    """The study's current votes as arrays (see :class:`VoteArrays`)."""
    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None:
            raise StudyNotFoundError(study, repo.study_names(s))
        items = repo.item_keys(s, st.id)
        rows = repo.current_vote_codes(s, st.id)
        raw = np.array(rows, dtype=np.int64).reshape(-1, 6)
        ann_ids = np.unique(raw[:, 1])
        names = repo.annotator_names(s, ann_ids.tolist())
    return arrays_from_codes(st.name, st.kind, items, raw, names)


def arrays_from_codes(
    study: str,
    kind: str,
    items: list[tuple[int, str]],
    raw: npt.NDArray[np.int64],
    names: Mapping[int, str],
) -> VoteArrays:
    """:class:`VoteArrays` from ``repo.current_vote_codes`` rows (``raw``, shape (n, 6):
    item id, annotator id, choice, swapped, response ms, fast), the study's ``(item id,
    key)`` pairs and the annotators' names by id."""
    ann_ids = np.unique(raw[:, 1])
    lookup = np.zeros(max((i for i, _ in items), default=0) + 1, dtype=np.int64)
    for n, (i, _) in enumerate(items):
        lookup[i] = n
    return VoteArrays(
        study=study,
        kind=kind,
        item=lookup[raw[:, 0]] if len(raw) else np.zeros(0, np.int64),
        annotator=np.searchsorted(ann_ids, raw[:, 1]).astype(np.int64),
        choice=raw[:, 2].astype(np.int8),
        swapped=raw[:, 3].astype(bool),
        response_ms=raw[:, 4],
        fast=raw[:, 5].astype(bool),
        item_keys=[k for _, k in items],
        annotators=[names[int(a)] for a in ann_ids],
    )


@dataclass(frozen=True)
class ResponseMatrix:
    """A study's response matrix: one row per question, one column per model.

    Missing entries (a model that did not answer) are NaN.
    """

    scores: npt.NDArray[np.float64]
    questions: list[str]
    subjects: list[str]
    models: list[str]


def response_matrix(engine: Engine, study: str) -> ResponseMatrix:
    """The study's response matrix (questions x models)."""
    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None:
            raise StudyNotFoundError(study, repo.study_names(s))
        qs = repo.question_subjects(s, st.id)
        rows = repo.score_rows(s, st.id)
    models = sorted({m for _, m, _ in rows})
    qi = {k: i for i, (k, _) in enumerate(qs)}
    mi = {m: j for j, m in enumerate(models)}
    A = np.full((len(qs), len(models)), np.nan)
    for q, m, v in rows:
        A[qi[q], mi[m]] = v
    return ResponseMatrix(A, [k for k, _ in qs], [sub for _, sub in qs], models)
