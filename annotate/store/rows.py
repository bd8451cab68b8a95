"""Plain rows the store returns that light modules also need (no SQLAlchemy, no SQLModel).

:mod:`annotate.store.repo` re-exports them. They live here so that the scheduler
(:mod:`annotate.services.schedule`) and the app's quick start
(:mod:`annotate.store.quick_item`, :mod:`annotate.services.quick_start`) can use them
without importing the SQLAlchemy stack, which takes several hundred milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotate.study_settings import StudySettings

__all__ = ["ItemLoad", "StudyRow"]


@dataclass(frozen=True)
class StudyRow:
    id: int
    name: str
    kind: str
    title: str
    description: str
    settings: StudySettings
    """Parsed and validated when the row is read (see :func:`annotate.store.repo.get_study`)."""
    fingerprint: str


@dataclass(frozen=True)
class ItemLoad:
    """An item for scheduling: its id, key, subject and current vote count."""

    item_id: int
    key: str
    position: int
    subject: str
    votes: int
