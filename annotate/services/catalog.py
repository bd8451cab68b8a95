"""Study listings for the command line and the welcome screen."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from annotate.store import repo


@dataclass(frozen=True)
class StudyInfo:
    name: str
    kind: str
    title: str
    items: int
    votes: int
    annotators: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def studies(engine: Engine) -> list[StudyInfo]:
    """Every study with its number of items, current votes and annotators."""
    with Session(engine) as s:
        return [
            StudyInfo(r.name, r.kind, r.title, r.items, r.votes, r.annotators)
            for r in repo.list_studies(s)
        ]
