"""A private PostgreSQL server for the tests (no mock: the distribution's own binaries).

``ANNOTATE_TEST_POSTGRES_URL`` (``postgresql+psycopg://USER@HOST:PORT/DB``) points the
tests at a running server instead; its user must be allowed to ``CREATE DATABASE``.
Otherwise :func:`start` runs ``initdb`` and ``pg_ctl`` from
``/usr/lib/postgresql/*/bin`` (or the ``PATH``) on a temporary directory and a free port,
as the ``postgres`` system user when the tests run as root (the server refuses root),
with trust authentication on 127.0.0.1 only. Each test then gets a fresh database.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

URL_ENV = "ANNOTATE_TEST_POSTGRES_URL"


class ServerUnavailableError(RuntimeError):
    """No PostgreSQL server could be found or started (the message says why)."""


@dataclass
class Server:
    """A PostgreSQL server the tests may create databases on."""

    admin_url: str
    """URL of a database to connect to for CREATE / DROP DATABASE."""
    data_dir: Path | None = None
    """The cluster this session started (None: a server given by :data:`URL_ENV`)."""
    pg_ctl: list[str] = field(default_factory=list)

    def url(self, database: str) -> str:
        """The URL of ``database`` on this server."""
        from sqlalchemy import make_url

        return make_url(self.admin_url).set(database=database).render_as_string(False)

    def _admin(self) -> object:
        import psycopg
        from sqlalchemy import make_url

        u = make_url(self.admin_url)
        return psycopg.connect(
            host=u.host or "127.0.0.1",
            port=u.port or 5432,
            user=u.username or "postgres",
            password=u.password or None,
            dbname=u.database or "postgres",
            autocommit=True,
            connect_timeout=10,
        )

    def create_database(self) -> str:
        """A new empty database; its URL."""
        name = f"annotate_test_{uuid.uuid4().hex[:12]}"
        with self._admin() as conn:  # type: ignore[attr-defined]
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop a database made by :meth:`create_database` (its connections closed by force)."""
        from sqlalchemy import make_url

        name = make_url(url).database
        with self._admin() as conn:  # type: ignore[attr-defined]
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self.data_dir is None:
            return
        subprocess.run(
            [*self.pg_ctl, "-D", str(self.data_dir / "data"), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            timeout=60,
            check=False,
        )
        shutil.rmtree(self.data_dir, ignore_errors=True)


def _bin_dir() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start() -> Server:
    """The server the tests use: :data:`URL_ENV`, else a new private cluster.

    Raises
    ------
    ServerUnavailableError
        psycopg is not installed, no ``initdb`` is found, or the cluster does not start.
    """
    try:
        import psycopg  # noqa: F401
    except ImportError as err:
        raise ServerUnavailableError(
            "psycopg is not installed (pip install -e '.[postgres]' or --group test)"
        ) from err
    given = os.environ.get(URL_ENV)
    if given:
        server = Server(admin_url=given)
        try:
            with server._admin():  # type: ignore[attr-defined]
                pass
        except Exception as err:
            raise ServerUnavailableError(f"{URL_ENV}={given!r}: cannot connect ({err})") from err
        return server
    bindir = _bin_dir()
    if bindir is None:
        raise ServerUnavailableError(
            "no PostgreSQL server: initdb not found in /usr/lib/postgresql/*/bin or on PATH "
            f"(apt-get install postgresql, or set {URL_ENV})"
        )
    root = Path(tempfile.mkdtemp(prefix="annotate-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # the server refuses to run as root
        runuser = shutil.which("runuser")
        if runuser is None:
            shutil.rmtree(root, ignore_errors=True)
            raise ServerUnavailableError("running as root and runuser is missing")
        shutil.chown(root, user="postgres", group="postgres")
        as_user = [runuser, "-u", "postgres", "--"]
    data, log = root / "data", root / "server.log"
    port = _free_port()
    try:
        subprocess.run(
            [
                *as_user,
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        pg_ctl = [*as_user, str(bindir / "pg_ctl")]
        opts = (
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        subprocess.run(
            [*pg_ctl, "-D", str(data), "-o", opts, "-l", str(log), "-w", "-t", "60", "start"],
            capture_output=True,
            text=True,
            timeout=90,
            check=True,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as err:
        detail = getattr(err, "stderr", "") or ""
        with contextlib.suppress(OSError):
            detail += log.read_text()[-500:]
        shutil.rmtree(root, ignore_errors=True)
        raise ServerUnavailableError(
            f"could not start PostgreSQL from {bindir}: {err} {detail.strip()}"
        ) from err
    return Server(
        admin_url=f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres",
        data_dir=root,
        pg_ctl=pg_ctl,
    )


@contextlib.contextmanager
def database(server: Server) -> Iterator[str]:
    """A fresh database on ``server`` for one test; dropped afterwards."""
    url = server.create_database()
    try:
        yield url
    finally:
        with contextlib.suppress(Exception):
            server.drop_database(url)
