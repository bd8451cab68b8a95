"""Study listings for the command line (``annotate studies``)."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlmodel import Session

from annotate.store import repo
from annotate.views import StudyListing


def studies(engine: Engine) -> list[StudyListing]:
    """Every study with its number of items, current votes and annotators."""
    with Session(engine) as s:
        return repo.list_studies(s)
