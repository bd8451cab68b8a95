"""Where the monitor's vote cache (:mod:`annotate.services.vote_cache`) keeps a study's
rows: the file's name, with the standard library only.

``annotate report`` asks before it imports NumPy and SQLAlchemy whether a study has a
cache file (:func:`sqlite_cache_file`): without one it reads the votes at once with
sqlite3 in a child process (:mod:`annotate.services.report_prefetch`); with one it
leaves the loading of the file to the full store.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = ["ENV", "cache_dir", "cache_file", "enabled", "sqlite_cache_file", "sqlite_database"]

ENV = "ANNOTATE_CACHE"
"""Environment variable: ``off``, ``0``, ``no`` or ``false`` turns the cache off."""

_OFF = frozenset({"off", "0", "no", "false"})


def enabled() -> bool:
    """Whether :data:`ENV` leaves the cache on (the default)."""
    return os.environ.get(ENV, "").strip().lower() not in _OFF


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/annotate/monitor``, else ``~/.cache/annotate/monitor``."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "annotate" / "monitor"


def sqlite_database(path: str) -> str | None:
    """The SQLite database file ``path`` as the cache names it (its resolved path); None
    for one that is never cached (in memory, a ``file:`` URI) or cannot be resolved."""
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    try:
        return "sqlite:" + str(Path(path).resolve())
    except OSError:
        return None


def cache_file(database: str, study: str) -> Path | None:
    """The cache file of the study named ``study`` in ``database`` (as
    :func:`sqlite_database` names a file); None when the cache is off or there is no
    home folder to put it in."""
    if not enabled():
        return None
    try:
        folder = cache_dir()
    except (RuntimeError, KeyError, OSError):
        return None
    digest = hashlib.sha256(json.dumps([database, study]).encode()).hexdigest()[:32]
    return folder / f"{digest}.votes"


def sqlite_cache_file(path: Path, study: str) -> Path | None:
    """:func:`cache_file` of a study in the SQLite file ``path``."""
    database = sqlite_database(str(path))
    return None if database is None else cache_file(database, study)
