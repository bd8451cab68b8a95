"""Opening the store: engine, migrations and the embedded demo on first use."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import Session

from annotate.store import repo
from annotate.store.engine import default_db_path, make_engine
from annotate.store.migrations import migrate


def bundled_studies_dir() -> Path:
    """The ``question_pairs`` folder shipped with the application."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_bundled" / "question_pairs", here.parent / "question_pairs"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("the bundled question_pairs folder is missing from this install")


def demo_study_dirs() -> list[Path]:
    """The embedded demo studies (difficulty and arena)."""
    root = bundled_studies_dir() / "demo"
    return [root / "difficulty", root / "arena"]


def open_store(db_path: Path | None = None, *, seed_demo: bool = False) -> Engine:
    """Open (creating and migrating if needed) the database at ``db_path``.

    With ``seed_demo``, an empty database gets the embedded demo studies.
    """
    engine = make_engine(db_path or default_db_path())
    migrate(engine)
    if seed_demo:
        with Session(engine) as s:
            empty = not repo.study_names(s)
        if empty:
            from annotate.services.importing import import_paths

            import_paths(engine, demo_study_dirs())
    return engine
