"""The store for commands that must answer at once: the standard library's sqlite3 only.

``annotate studies`` lists a database in a few milliseconds; importing SQLAlchemy and
SQLModel alone takes several hundred. This module reads an existing, up-to-date
database read-only with :mod:`sqlite3` and says "ask the full store" (None) for
anything else: a missing, new, older or newer database, a file that is not SQLite,
any SQLite error. The full store (:func:`annotate.services.db.open_store`) then
creates, migrates or refuses it with its one-line message, so the quick path can only
be faster, never different.
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the report's vote-reading child forks sooner
    from annotate.views import StudyListing

DATA_DIR_ENV = "ANNOTATE_DATA_DIR"
"""Environment variable naming the folder of the default database."""

MIGRATION_NAMES = (
    "001_baseline",
    "002_current_vote_view",
    "003_reservation",
    "004_item_note",
    "005_vote_unique_indexes",
    "006_access_token",
    "007_selection_probability",
    "008_quality_questionnaire",
    "009_partial_supersedes",
    "010_retest_index",
)
"""The schema this module reads: the names of :data:`annotate.store.migrations.MIGRATIONS`.

A test checks that they are the same. Should a migration be added there and not here,
every database looks "not up to date" to this module and commands take the full
store: slower, still right.
"""

LIST_STUDIES_SQL = """
    SELECT s.name, s.kind, s.title,
           (SELECT count(*) FROM item i WHERE i.study_id = s.id),
           coalesce(c.n_votes, 0), coalesce(c.n_annotators, 0)
    FROM study s
    LEFT JOIN (SELECT v.study_id AS study_id, count(*) AS n_votes,
                      count(DISTINCT v.annotator_id) AS n_annotators
               FROM current_vote v GROUP BY v.study_id) c ON c.study_id = s.id
    ORDER BY s.name
"""
"""Every study with its item, current-vote and annotator counts (``repo.list_studies`` runs
the same SQL). The current votes are read in one pass for both counts (two correlated
subqueries read them twice: 0.70 -> 0.38 s at a million votes)."""

_SQLITE_HEADER = b"SQLite format 3\x00"

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_database_url(target: object) -> bool:
    """Whether a ``--db`` value is a database URL (``postgresql+psycopg://...``), not a file."""
    return isinstance(target, str) and _URL.match(target) is not None


def default_db_path() -> Path:
    """The default database: ``votes.db`` in the per-user data directory.

    ``ANNOTATE_DATA_DIR`` overrides the directory (tests and portable setups);
    otherwise it is platformdirs' user data dir for ``annotate`` (on Linux
    ``~/.local/share/annotate``).
    """
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env) / "votes.db"
    from platformdirs import user_data_path

    return user_data_path("annotate", appauthor=False) / "votes.db"


def list_studies(path: Path) -> list[StudyListing] | None:
    """Every study of the database at ``path``, read-only; None to ask the full store.

    Parameters
    ----------
    path : Path
        A database file.

    Returns
    -------
    list of StudyListing or None
        The studies by name, as :func:`annotate.store.repo.list_studies` gives them;
        None when ``path`` is not an existing SQLite file whose applied migrations are
        exactly :data:`MIGRATION_NAMES`, or when SQLite reports any error. Nothing is
        written (the connection is opened ``mode=ro``).
    """
    from annotate.views import StudyListing

    try:
        with path.open("rb") as fh:
            if fh.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
                return None
        uri = f"{path.resolve().as_uri()}?mode=ro"
        con = sqlite3.connect(uri, uri=True, timeout=5.0)
    except (OSError, ValueError, sqlite3.Error):
        return None
    try:
        applied = tuple(r[0] for r in con.execute("SELECT name FROM _migrations ORDER BY rowid"))
        if sorted(applied) != sorted(MIGRATION_NAMES):
            return None
        return [StudyListing(*row) for row in con.execute(LIST_STUDIES_SQL)]
    except sqlite3.Error:
        return None
    finally:
        con.close()
