"""Queries behind re-importing an export's ``retests.<fmt>`` and ``annotators.<fmt>``
(issue 16): the swapped re-test chains and the questionnaire answers of a study.

Plain SQL through the caller's session (both back ends: named parameters only), kept
beside :mod:`annotate.store.repo`, whose vote queries they mirror.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, text
from sqlmodel import Session

from annotate.store.models import AnnotatorAnswer

_CHUNK = 500
"""Ids per ``IN`` list (well under SQLite's and PostgreSQL's parameter limits)."""


@dataclass(frozen=True)
class StoredVote:
    """What an imported re-test row is checked against."""

    uuid: str
    study_id: int
    annotator_id: int
    item_id: int
    choice: str
    swapped: bool
    supersedes: str | None
    retest_of: str | None


def votes_by_uuid(session: Session, uuids: Iterable[str]) -> dict[str, StoredVote]:
    """The stored votes (of any study, re-test or not) among ``uuids``."""
    todo = sorted(set(uuids))
    out: dict[str, StoredVote] = {}
    query = text(
        """SELECT uuid, study_id, annotator_id, item_id, choice, swapped, supersedes, retest_of
           FROM vote WHERE uuid IN :u"""
    ).bindparams(bindparam("u", expanding=True))
    for k in range(0, len(todo), _CHUNK):
        for u, st, a, i, choice, swapped, sup, of in session.execute(
            query, {"u": todo[k : k + _CHUNK]}
        ):
            out[str(u)] = StoredVote(
                str(u), int(st), int(a), int(i), str(choice), bool(swapped), sup, of
            )
    return out


def retest_chain(session: Session, study_id: int) -> list[StoredVote]:
    """Every stored re-test row of the study, oldest first."""
    rows = session.execute(
        text(
            """SELECT uuid, study_id, annotator_id, item_id, choice, swapped, supersedes,
                      retest_of
               FROM vote WHERE study_id = :s AND retest_of IS NOT NULL ORDER BY id"""
        ),
        {"s": study_id},
    )
    return [
        StoredVote(str(u), int(st), int(a), int(i), str(c), bool(sw), sup, of)
        for u, st, a, i, c, sw, sup, of in rows
    ]


def answers(session: Session, study_id: int) -> dict[tuple[int, str], str]:
    """``(annotator_id, key) -> answer`` (the JSON list as stored) for the study."""
    rows = session.execute(
        text("SELECT annotator_id, key, answer FROM annotatoranswer WHERE study_id = :s"),
        {"s": study_id},
    )
    return {(int(a), str(k)): str(x) for a, k, x in rows}


def insert_answers(
    session: Session,
    study_id: int,
    rows: Sequence[tuple[int, str, str, datetime | None]],
) -> None:
    """Store imported answers ``(annotator_id, key, answer, created_at)`` (aware, UTC;
    None: now). The unique index refuses a second answer to one question."""
    for annotator, key, answer, created in rows:
        row = AnnotatorAnswer(study_id=study_id, annotator_id=annotator, key=key, answer=answer)
        if created is not None:
            row.created_at = created
        session.add(row)
    session.flush()
