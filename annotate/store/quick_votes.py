"""A study's vote rows as one integer array, read in one SQLite statement.

The monitor (:class:`annotate.services.monitoring.StudyMonitor`) holds a study's vote
rows as an ``(n, 8)`` int64 array, the columns of :func:`annotate.store.repo.vote_rows_after`.
Fetched row by row, a million rows cost about 1.5 s of CPU, most of it Python's DB-API
building a tuple and its integers for every row and NumPy reading them back. Here
SQLite writes each column as one comma-separated text (``group_concat``, handed over
as a blob, so without a UTF-8 decoding) and NumPy parses the texts in C: the same
integers, about half the time (:func:`read_vote_rows`).

The three small columns (choice code, swapped, fast) travel packed in one integer
(:data:`FLAGS`, unpacked exactly for every integer choice code). The rows must come
in id order: ``group_concat`` of SQLite before 3.44 has no ``ORDER BY``, so the ids
are checked to increase, and the rows are sorted by id when they do not (every
aggregate of the statement sees the rows in the same order, so the columns stay
aligned). A column whose text is not a list of integers (a value stored by hand as a
real number or text) makes :func:`read_vote_rows` answer None: the caller then fetches
the rows one by one, as before.

:func:`read_study` is the first read of ``annotate report``'s prefetch child
(:mod:`annotate.services.report_prefetch`): like :mod:`annotate.store.quick`, the
standard library's sqlite3 only (no SQLAlchemy), read-only, and only for an up-to-date
database (its applied migrations are exactly
:data:`annotate.store.quick.MIGRATION_NAMES`), so that it can start before the command
has imported, opened and migrated the full store.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.choices import outcome_sql
from annotate.store.quick import MIGRATION_NAMES

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    RowArray = npt.NDArray[np.int64]
    """Vote rows: ``(n, 8)`` int64."""

__all__ = ["COLUMN_SQL", "FLAGS", "read_study", "read_vote_rows", "vote_rows_sql"]

COLUMN_SQL = (
    "v.id",
    "v.item_id",
    "v.annotator_id",
    outcome_sql("v.choice"),
    "CASE WHEN v.swapped THEN 1 ELSE 0 END",
    "coalesce(v.response_ms, -1)",
    "CASE WHEN v.fast THEN 1 ELSE 0 END",
    # the superseded row's id: looked up only for a row that supersedes one (the same
    # value as the lookup alone, whose NULL = NULL finds nothing; a fifth of the time)
    "CASE WHEN v.supersedes IS NULL THEN 0 "
    "ELSE coalesce((SELECT w.id FROM vote w WHERE w.uuid = v.supersedes), 0) END",
)
"""The eight columns of a vote row ``(id, item_id, annotator_id, choice code, swapped,
response_ms or -1, fast, id of the superseded row or 0)`` as SQL on ``vote v``
(:func:`annotate.store.repo.vote_rows_after` selects them too)."""

FLAGS = f"(({COLUMN_SQL[3]}) + 1) * 4 + ({COLUMN_SQL[4]}) * 2 + ({COLUMN_SQL[6]})"
"""Choice code, swapped and fast in one integer: ``(code + 1) * 4 + swapped * 2 + fast``
(swapped and fast are 0 or 1, so ``flags >> 2`` is ``code + 1`` for any integer code)."""

_TEXT_COLUMNS = (*COLUMN_SQL[:3], FLAGS, COLUMN_SQL[5], COLUMN_SQL[7])
"""What :func:`vote_rows_sql` concatenates: id, item, annotator, flags, response, superseded."""

_INTEGER_TEXT = b"0123456789,-"
"""The only bytes of a column text of integers (SQLite writes an integer as ``-?[0-9]+``)."""


def vote_rows_sql(where: str) -> str:
    """The statement of :func:`read_vote_rows`: the row count and one comma-separated
    text per column of the study's rows (``?``: the study's id, then the parameters of
    ``where``, a condition on ``vote v``), retests left out as in ``vote_rows_after``."""
    texts = ", ".join(f"CAST(group_concat({c}, ',') AS BLOB)" for c in _TEXT_COLUMNS)
    return (
        f"SELECT count(*), {texts} FROM vote v "
        f"WHERE v.study_id = ? AND {where} AND v.retest_of IS NULL"
    )


def read_vote_rows(cursor: Any, study_id: int, after_id: int) -> RowArray | None:
    """The rows of :func:`annotate.store.repo.vote_rows_after` as an ``(n, 8)`` int64
    array (``(0, 8)`` without rows), through a SQLite DB-API ``cursor``; None when a
    column is not made of integers, or its text would be longer than SQLite's longest
    string (``SQLITE_MAX_LENGTH``, 1e9 bytes by default: some 100 million rows), which
    SQLite refuses with "string or blob too big" (the caller then fetches the rows one
    by one)."""
    try:
        cursor.execute(vote_rows_sql("v.id > ?"), (study_id, after_id))
        row = cursor.fetchone()
    except sqlite3.DataError:  # SQLITE_TOOBIG: the statement read nothing, wrote nothing
        return None
    return _parse(int(row[0]), row[1:])


def _parse(n: int, texts: tuple[Any, ...]) -> RowArray | None:
    """The ``(n, 8)`` rows from the texts of :func:`vote_rows_sql`; None when a text
    is not ``n`` integers."""
    import numpy as np

    out = np.empty((n, 8), dtype=np.int64)
    if n == 0:
        return out
    cols = []
    for t in texts:
        if not isinstance(t, bytes) or t.translate(None, _INTEGER_TEXT):
            return None  # NULL (some rows without a value) or not integers
        if t.count(b",") != n - 1:
            return None
        try:  # a field that is no integer ("", "3-4") ends the parse early, with a
            col = np.fromstring(t, dtype=np.int64, sep=",")  # warning (an error if asked)
        except (ValueError, Warning):
            return None
        if len(col) != n:
            return None
        cols.append(col)
    ids, items, annotators, flags, response, superseded = cols
    out[:, 0] = ids
    out[:, 1] = items
    out[:, 2] = annotators
    out[:, 3] = (flags >> 2) - 1
    out[:, 4] = (flags >> 1) & 1
    out[:, 5] = response
    out[:, 6] = flags & 1
    out[:, 7] = superseded
    if n > 1 and not bool((ids[1:] > ids[:-1]).all()):  # not in id order: sorted
        out = out[np.argsort(ids, kind="stable")]
        if not bool((out[1:, 0] > out[:-1, 0]).all()):
            return None  # the same id twice: not rows of the vote table
    return out


def read_study(path: Path, study: str) -> tuple[RowArray | None, int] | None:
    """Every vote row of the difficulty study named ``study`` in the SQLite file
    ``path`` (:func:`read_vote_rows` from id 0; None as rows: the study has no vote
    row) and the study's id, read in one read-only transaction. None when the file is
    not an up-to-date annotate database, has no such difficulty study, or holds a value
    that is not an integer. SQLite errors propagate."""
    con = sqlite3.connect(
        f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0, isolation_level=None
    )
    try:
        cur = con.cursor()
        cur.execute("BEGIN")  # one snapshot: the schema, the study and its rows
        applied = [r[0] for r in cur.execute("SELECT name FROM _migrations")]
        if sorted(applied) != sorted(MIGRATION_NAMES):
            return None
        found = cur.execute("SELECT id, kind FROM study WHERE name = ?", (study,)).fetchone()
        if found is None or found[1] != "difficulty":  # the human-alignment report's studies
            return None
        study_id = int(found[0])
        rows = read_vote_rows(cur, study_id, 0)
        cur.execute("COMMIT")
        if rows is None:
            return None
        return (rows if len(rows) else None), study_id
    finally:
        con.close()
