"""The monitor's reading of vote rows.

:class:`annotate.services.monitoring.StudyMonitor` reads a study's vote rows
(:func:`annotate.store.repo.vote_rows_after`) as one ``(n, 8)`` int64 array: on its
first read the vote cache's rows (:mod:`annotate.services.vote_cache`) then the rows
after them, on later reads the rows after the last one read (:func:`read_rows`).
``annotate report`` does the first read ahead in a child process
(:mod:`annotate.services.report_prefetch`, :func:`child_read`).

This module imports no statistics (no :mod:`ranking`, no scipy), so that the child can
start reading at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import numpy.typing as npt
from sqlmodel import Session

from annotate.services import vote_cache
from annotate.store import repo

COLUMNS = 8
"""Columns of a vote row (:func:`annotate.store.repo.vote_rows_after`)."""


def item_positions(ids: Iterable[int]) -> npt.NDArray[np.int64]:
    """Item id -> position of the item among the study's items in id order (-1: none)."""
    order = sorted(ids)
    pos = np.full((order[-1] + 1) if order else 1, -1, dtype=np.int64)
    pos[order] = np.arange(len(order))
    return pos


def study_item_ids(session: Session, study: repo.StudyRow) -> list[int]:
    """The ids of the study's items (pairs of a difficulty study, battles of an arena)."""
    if study.kind == "difficulty":
        return list(repo.pair_questions(session, study.id))
    return list(repo.battle_pairs(session, study.id))


def read_rows(
    session: Session,
    study_id: int,
    after: int,
    cached: npt.NDArray[np.int64] | None = None,
) -> tuple[npt.NDArray[np.int64] | None, int]:
    """The rows ``cached`` (rows read earlier: a cache file's, or a :class:`Prefetch`'s)
    then the study's rows after them (after ``after`` when ``cached`` is None), in
    ``session``'s transaction; and how many came from the database. ``(None, 0)`` when
    there is nothing."""
    if cached is not None:
        after = int(cached[-1, 0])
    new = repo.vote_rows_array(session, study_id, after)
    if not len(new) and cached is None:
        return None, 0
    n_db = len(new)
    if cached is not None:  # one batch, as a read of every row gives
        new = np.concatenate([cached, new]) if len(new) else cached
    return new, n_db


def first_read(
    session: Session,
    study: repo.StudyRow,
    cache: vote_cache.CacheTarget | None,
    item_pos: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64] | None, int]:
    """A monitor's first read: the cache file's rows, if it holds valid ones, then the
    rows after them (:func:`read_rows`)."""
    cached = None if cache is None else cache.load(session, item_pos)
    return read_rows(session, study.id, 0, cached)


def child_read(path: Path, study: str) -> tuple[npt.NDArray[np.int64] | None, int, int]:
    """The read of :class:`annotate.services.report_prefetch.Prefetch`'s child: through a
    reader connection of its own to the SQLite file ``path``, the first read of the
    difficulty study ``study`` (:func:`first_read`); the rows (None: no such study, not
    a difficulty study, no vote), how many came from the database, and the study's id."""
    from annotate.store.engine import make_engine

    engine = make_engine(path, immediate=False)  # a reader, as store.engine.reader_engine
    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None or st.kind != "difficulty":  # the human-alignment report's studies
            return None, 0, 0
        item_pos = item_positions(study_item_ids(s, st))
        rows, n_db = first_read(s, st, vote_cache.target(engine, st), item_pos)
    return rows, n_db, st.id
