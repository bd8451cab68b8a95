"""Opening the store: engine, migrations and the embedded demo on first use."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import Session

from annotate.store import repo
from annotate.store.engine import (
    DbTarget,
    default_db_path,
    is_database_url,
    make_engine,
    reader_engine,
)
from annotate.store.errors import DatabaseError
from annotate.store.migrations import migrate
from annotate.store.writelock import database_faults


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


SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""


def _check_path(path: Path, *, default: bool) -> None:
    """Refuse, before SQLite touches it, a path that cannot be a database (one line each)."""
    if path.is_dir():
        raise DatabaseError(
            f"--db {path} is a folder, not a database file; pass a file such as {path / 'votes.db'}"
        )
    if not path.parent.is_dir():
        if default:
            path.parent.mkdir(parents=True, exist_ok=True)
        else:
            raise DatabaseError(
                f"the folder of --db {path} does not exist ({path.parent}); create it first "
                f"(mkdir -p {path.parent}) or pass another --db"
            )
    try:
        with path.open("rb") as fh:
            head = fh.read(100)
            size = fh.seek(0, 2)
    except FileNotFoundError:
        return  # a new database
    except PermissionError as err:
        raise DatabaseError(
            f"cannot read the database {path}: permission denied; ask its owner for read and "
            "write access, or pass --db with a file of yours"
        ) from err
    if not head:
        return  # an empty file: SQLite makes it a new database
    if not head.startswith(SQLITE_HEADER):
        looks = "a text file (CSV, JSON?)" if _is_text(head) else "not a SQLite database"
        raise DatabaseError(
            f"--db {path} is {looks}: --db takes the annotate database (votes.db); import "
            "study folders and vote files with: annotate import PATH"
        )
    if len(head) < 100 or size < _header_size(head):
        raise DatabaseError(
            f"the database {path} is damaged (truncated: {size} bytes, its header says "
            f"{_header_size(head)}); restore it from a backup or rebuild it from an export "
            "(annotate import), or pass --db with another file"
        )


def _is_text(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(b >= 0x20 or b in b"\t\r\n" for b in head)


def _header_size(head: bytes) -> int:
    """Bytes the header says the file holds (0 when the header's page count is not valid)."""
    if len(head) < 100:
        return 1 << 62
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    valid = head[24:28] == head[92:96] and pages > 0
    return page * pages if valid else 0


def open_store(db_path: DbTarget | None = None, *, seed_demo: bool = False) -> Engine:
    """Open (creating and migrating if needed) the database at ``db_path``.

    ``db_path`` may be a PostgreSQL URL (``postgresql+psycopg://USER@HOST/DB``, see
    :func:`annotate.store.engine.database_url`): the database must exist on the server
    (``createdb``); its tables are created and migrated as a file's are.

    ``db_path`` None is the default database (:func:`default_db_path`); only its folder is
    ever created. With ``seed_demo``, an empty database gets the embedded demo studies:
    the command line asks for it only on the app's first launch on the default database
    (``annotate import --demo`` loads it anywhere); tests pass it for their temporary
    databases.

    Raises
    ------
    DatabaseError
        One line naming the problem and the fix, the file unchanged: ``--db`` is a folder,
        its folder does not exist, the file is not a SQLite database (a CSV?), it is
        truncated or corrupt, read-only for this user, written by a newer annotate, or
        its write lock stayed busy.
    """
    if isinstance(db_path, str) and is_database_url(db_path):
        return _open_url(db_path, seed_demo=seed_demo)
    path = Path(db_path) if db_path is not None else default_db_path()
    _check_path(path, default=db_path is None or path == default_db_path())
    engine = make_engine(path)
    try:
        with database_faults(engine):
            migrate(engine)
            if seed_demo:
                _seed_demo(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine


def _seed_demo(engine: Engine) -> None:
    """Import the demo studies into ``engine`` when it holds no study."""
    reader = reader_engine(engine)  # no write lock just to look
    try:
        with Session(reader) as s:
            empty = not repo.study_names(s)
    finally:
        if reader is not engine:
            reader.dispose()
    if empty:
        from annotate.services.importing import import_paths

        import_paths(engine, demo_study_dirs())


def _open_url(url: str, *, seed_demo: bool) -> Engine:
    """:func:`open_store` for a PostgreSQL URL: connect, migrate, seed the demo if asked."""
    engine = make_engine(url)
    try:
        with database_faults(engine):
            migrate(engine)
            if seed_demo:
                _seed_demo(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine
