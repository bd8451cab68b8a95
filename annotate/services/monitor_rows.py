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

import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

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
    rows = repo.vote_rows_after(session, study_id, after)
    if not rows and cached is None:
        return None, 0
    new = rows_array(rows)
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


SPLIT_MIN_IDS = 200_000
"""A first read spanning at least this many vote ids is split in two halves read side by
side (:func:`child_read` with a helper); a smaller one is read at once."""


class TailReader(Protocol):
    """Another process that reads a study's rows after a given id
    (:class:`annotate.services.report_prefetch.Helper`)."""

    def ask(self, study_id: int, after: int) -> bool:
        """Start reading the rows of ``study_id`` after ``after``; False: it cannot."""
        ...

    def take(self) -> npt.NDArray[np.int64] | None:
        """The rows it read, as :func:`rows_array`; None when it failed."""
        ...


def rows_array(rows: list[tuple[int, ...]]) -> npt.NDArray[np.int64]:
    """Vote rows (:func:`annotate.store.repo.vote_rows_after`) as an ``(n, 8)`` int64 array."""
    flat = itertools.chain.from_iterable(rows)
    return np.fromiter(flat, dtype=np.int64, count=COLUMNS * len(rows)).reshape(-1, COLUMNS)


def tail_read(path: Path, study_id: int, after: int) -> npt.NDArray[np.int64]:
    """The rows of study ``study_id`` after id ``after`` through a reader connection of its
    own to the SQLite file ``path`` (a :class:`TailReader`'s read)."""
    from annotate.store.engine import make_engine

    engine = make_engine(path, immediate=False)
    with Session(engine) as s:
        return rows_array(repo.vote_rows_after(s, study_id, after))


def _split_read(
    s: Session,
    study_id: int,
    cached: npt.NDArray[np.int64] | None,
    tail: TailReader,
) -> tuple[npt.NDArray[np.int64] | None, int] | None:
    """:func:`read_rows` of the rows after ``cached`` in two halves by id: the later half
    read by ``tail`` in another process while this one reads the earlier half in ``s``'s
    transaction, then joined (the same rows: ids grow with every append, so every row up
    to the newest one ``s`` sees is there, and ``tail`` reads every row after the split,
    including any written since); None when the span is too short or ``tail`` cannot
    start. Rows ``tail`` fails to give are read here."""
    after = 0 if cached is None else int(cached[-1, 0])
    last = repo.max_vote_id(s, study_id)
    if last - after < SPLIT_MIN_IDS:
        return None
    split = after + (last - after) // 2
    if not tail.ask(study_id, split):
        return None
    head = rows_array(repo._vote_rows(s, "v.id > ? AND v.id <= ?", (study_id, after, split)))
    later = tail.take()
    if later is None:  # the helper failed: read here, in this transaction
        later = rows_array(repo.vote_rows_after(s, study_id, split))
    new = np.concatenate([head, later])
    n_db = len(new)
    if cached is not None:
        new = np.concatenate([cached, new]) if n_db else cached
    elif not n_db:
        return None, 0
    return new, n_db


def child_read(
    path: Path, study: str, tail: TailReader | None = None
) -> tuple[npt.NDArray[np.int64] | None, int, int]:
    """The read of :class:`annotate.services.report_prefetch.Prefetch`'s child: through a
    reader connection of its own to the SQLite file ``path``, the first read of the
    difficulty study ``study`` (:func:`first_read`; its rows from the database in two
    halves side by side when a ``tail`` reader is given, :func:`_split_read`); the rows
    (None: no such study, not a difficulty study, no vote), how many came from the
    database, and the study's id."""
    from annotate.store.engine import make_engine

    engine = make_engine(path, immediate=False)  # a reader, as store.engine.reader_engine
    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None or st.kind != "difficulty":  # the human-alignment report's studies
            return None, 0, 0
        item_pos = item_positions(study_item_ids(s, st))
        cache = vote_cache.target(engine, st)
        if tail is None:
            rows, n_db = first_read(s, st, cache, item_pos)
            return rows, n_db, st.id
        cached = None if cache is None else cache.load(s, item_pos)
        got = _split_read(s, st.id, cached, tail)
        rows, n_db = read_rows(s, st.id, 0, cached) if got is None else got
    return rows, n_db, st.id
