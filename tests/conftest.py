"""Fixtures shared by every test package."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("ANNOTATE_SHARED_DATA", ROOT.parent / "shared" / "data"))


REAL_DATA = ROOT / "tests" / "data" / "real"


class RealData:
    """The real public data sets, found in tests/data/real first, then in ../shared/data.

    ``real / "lsat_bock_lieberman" / "lsat6.csv"`` resolves the first part (a data set
    folder) in :data:`REAL_DATA`, then in :data:`SHARED_DATA`, and skips the test, with the
    reason, when neither holds it (the larger non-permissive sets live only in ../shared).
    """

    def __init__(self, roots: tuple[Path, ...]) -> None:
        self.roots = roots

    def __truediv__(self, name: str) -> Path:
        head, _, rest = str(name).partition("/")
        for root in self.roots:
            if (root / head).is_dir():
                return root / head / rest if rest else root / head
        where = " or ".join(str(r / head) for r in self.roots)
        pytest.skip(f"real data not available: {where} is absent (clone with ../shared)")

    def __repr__(self) -> str:
        return f"RealData({', '.join(map(str, self.roots))})"


@pytest.fixture
def shared_data() -> RealData:
    """The real public data sets: tests/data/real, then ../shared/data.

    ``ANNOTATE_SHARED_DATA`` points the second place elsewhere (set it to a missing
    folder to see what a clone without ../shared runs). A test whose data set is in
    neither place is skipped with the reason.
    """
    return RealData((REAL_DATA, SHARED_DATA))


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Keep the developer's data, config and cache directories out of every test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("ANNOTATE_DATA_DIR", str(home / "data"))
    monkeypatch.setenv("ANNOTATE_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg-config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "xdg-cache"))  # the monitor's vote cache


# --- PostgreSQL: the second back end (issue 17) -------------------------------------


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A PostgreSQL server for this test session (see tests/postgres_server.py).

    ``ANNOTATE_TEST_POSTGRES_URL`` names a running one; otherwise a private cluster is
    started with the distribution's initdb and pg_ctl and stopped at the end. Tests that
    need it skip, with the reason, only when neither works.
    """
    from tests import postgres_server

    try:
        server = postgres_server.start()
    except postgres_server.ServerUnavailableError as err:
        pytest.skip(f"PostgreSQL unavailable: {err}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: Any) -> Iterator[str]:
    """The URL of a fresh, empty PostgreSQL database (dropped after the test)."""
    from tests import postgres_server

    with postgres_server.database(pg_server) as url:
        yield url


BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The store's back end: a SQLite file or a PostgreSQL database."""
    return str(request.param)


@pytest.fixture
def store_target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path | str:
    """What ``--db`` names for ``backend``: a new SQLite file, or a fresh PostgreSQL URL."""
    if backend == "sqlite":
        return tmp_path / "votes.db"
    return str(request.getfixturevalue("pg_url"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that uses the PostgreSQL server ``postgres`` (``-m "not postgres"``
    leaves them out)."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        params = getattr(getattr(item, "callspec", None), "params", {})
        on_server = any(isinstance(v, str) and v == "postgres" for v in params.values())
        if "pg_server" in names or "pg_url" in names or on_server:
            item.add_marker(pytest.mark.postgres)
