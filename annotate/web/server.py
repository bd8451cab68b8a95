"""The annotation app in a browser: textual-serve's server with per-annotator links.

textual-serve (:class:`textual_serve.server.Server`) runs one app process per browser
websocket and relays the terminal. :class:`StudyServer` subclasses it and adds what a
study needs:

- **access by link only.** Every request to the page (``/?token=TOKEN``) and to the
  websocket passes :meth:`StudyServer.guard` (an aiohttp middleware) first: the page
  needs a live token (:func:`annotate.services.access.check_token`); the websocket needs
  a single-use ticket that the page handed out less than :data:`TICKET_TTL_S` seconds
  before, and its token must still be live. A missing, wrong or revoked token gets a
  403 page and no app process. Revoking a link also ends its open sessions within
  :data:`REVOKE_CHECK_S` seconds.
- **the name fixed by the token.** The app process is ``annotate app --fixed-annotator``
  with the name (and the link's study) in its environment (:data:`FIXED_ANNOTATOR_ENV`),
  never on its command line, and never the token.
- **nothing from outside the machine.** Our page (``index.html``) loads textual-serve's
  own script, style sheet and Roboto Mono font from ``/static``; the
  ``Content-Security-Policy`` header lets the page load nothing from elsewhere; the app's
  requests to open a URL or deliver a file in the browser are dropped.
- **no token in logs.** The access log is off (its lines would carry the query).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import secrets
import shlex
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from sqlalchemy import Engine
from textual_serve.app_service import AppService
from textual_serve.server import Server

from annotate.services.access import TokenHolder, check_token, hash_token, live_hashes
from annotate.web import FIXED_ANNOTATOR_ENV, FIXED_STUDY_ENV

log = logging.getLogger("annotate.serve")

TICKET_TTL_S = 60.0
"""How long the page's websocket ticket stays valid (it is used once, at once)."""

REVOKE_CHECK_S = 5.0
"""How often the server looks for revoked links among the open sessions."""

HERE = Path(__file__).resolve().parent
PAGE = HERE / "index.html"
FORBIDDEN_PAGE = HERE / "forbidden.html"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Ticket:
    """What the page's websocket may start: the holder of a checked token."""

    holder: TokenHolder
    token_hash: str
    expires: float
    """:func:`time.monotonic` deadline."""


def forbidden(reason: str) -> web.Response:
    """The 403 page: a short explanation, no app."""
    body = FORBIDDEN_PAGE.read_text(encoding="utf-8").replace("{{reason}}", html.escape(reason))
    return web.Response(status=403, text=body, content_type="text/html")


def app_command(db: Path | str, python: str = sys.executable) -> str:
    """The shell command of the app process (no name, study or token on it)."""
    return f"{shlex.quote(python)} -m annotate app --db {shlex.quote(str(db))} --fixed-annotator"


class AnnotatorAppService(AppService):
    """textual-serve's app process for one browser, as one annotator.

    The name and study go in the process environment; the app's requests to open a URL
    or deliver a file in the browser are dropped (links are never followed).
    """

    def __init__(self, command: str, holder: TokenHolder, **kwargs: Any) -> None:
        super().__init__(command, **kwargs)
        self.holder = holder

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        env = super()._build_environment(width=width, height=height)
        env[FIXED_ANNOTATOR_ENV] = self.holder.annotator
        env.pop(FIXED_STUDY_ENV, None)
        if self.holder.study is not None:
            env[FIXED_STUDY_ENV] = self.holder.study
        return env

    async def on_meta(self, data: bytes) -> None:
        if b'"open_url"' in data or b'"deliver_file_start"' in data:
            log.warning("dropped a request of the app to open a URL or deliver a file")
            return
        await super().on_meta(data)


class StudyServer(Server):
    """textual-serve's server, opened only by annotators' links (see the module doc).

    Parameters
    ----------
    db : Path
        The study database (already migrated).
    reader : Engine
        A reading engine on it (``make_engine(db, immediate=False)``) for the checks.
    host, port : str, int
        Where to listen.
    study : str, optional
        Serve only this study: links limited to another study are refused.
    """

    def __init__(
        self,
        db: Path | str,
        reader: Engine,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        study: str | None = None,
    ) -> None:
        super().__init__(app_command(db), host=host, port=port, title="annotate")
        self.reader = reader
        self.study = study
        self._tickets: dict[str, Ticket] = {}
        self._sessions: dict[str, set[web.WebSocketResponse]] = {}
        self._checked: dict[int, tuple[TokenHolder, str]] = {}
        self._watcher: asyncio.Task[None] | None = None

    # --- the guard ----------------------------------------------------------------

    async def holder_of(self, token: str | None) -> TokenHolder | None:
        """The live token's holder (looked up in a thread: the database is blocking)."""
        return await asyncio.to_thread(check_token, self.reader, token)

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Check the token (page) or the ticket and token (websocket) before the handler."""
        path = request.path
        if path.startswith("/static/"):
            response = await handler(request)
        elif path == "/":
            holder = await self.holder_of(request.query.get("token"))
            if holder is None:
                response = forbidden("This link is not valid: missing, mistyped or revoked.")
            elif self.study is not None and holder.study not in (None, self.study):
                response = forbidden("This link is for a study this server does not serve.")
            else:
                checked = TokenHolder(holder.annotator, holder.study or self.study)
                response = await self._handle(
                    request, handler, checked, hash_token(request.query["token"])
                )
        elif path.startswith("/ws/"):
            ticket = self._tickets.pop(request.match_info.get("ticket", ""), None)
            if ticket is None or ticket.expires < time.monotonic():
                response = forbidden("This session is not valid; open your link again.")
            elif not await asyncio.to_thread(live_hashes, self.reader, [ticket.token_hash]):
                response = forbidden("This link has been revoked.")
            else:
                response = await self._handle(request, handler, ticket.holder, ticket.token_hash)
        else:
            raise web.HTTPNotFound()
        if not isinstance(response, web.WebSocketResponse):
            response.headers.update(self.security_headers(request))
        return response

    async def _handle(
        self, request: web.Request, handler: Handler, holder: TokenHolder, token_hash: str
    ) -> web.StreamResponse:
        """Run ``handler`` with the checked holder (see :meth:`checked`)."""
        self._checked[id(request)] = (holder, token_hash)
        try:
            return await handler(request)
        finally:
            del self._checked[id(request)]

    def checked(self, request: web.Request) -> tuple[TokenHolder, str]:
        """The holder and token hash the guard checked for ``request``."""
        return self._checked[id(request)]

    @staticmethod
    def security_headers(request: web.Request) -> dict[str, str]:
        """Nothing loads from outside this server; no referrer; the page is not cached."""
        host = request.host
        return {
            "Content-Security-Policy": (
                "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                f"font-src 'self'; img-src 'self' data:; connect-src 'self' ws://{host} "
                f"wss://{host}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
            ),
            "Referrer-Policy": "no-referrer",
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store",
        }

    # --- the aiohttp application -----------------------------------------------------

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self.guard])
        app.add_routes(
            [
                web.get("/", self.handle_index, name="index"),
                web.get("/ws/{ticket}", self.handle_websocket, name="websocket"),
                web.static("/static", self.statics_path, show_index=False, name="static"),
            ]
        )
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    async def handle_index(self, request: web.Request) -> web.Response:
        """The page, with a fresh websocket ticket for the checked token's holder."""
        now = time.monotonic()
        for key in [k for k, t in self._tickets.items() if t.expires < now]:
            del self._tickets[key]
        ticket = secrets.token_urlsafe(24)
        holder, token_hash = self.checked(request)
        self._tickets[ticket] = Ticket(holder, token_hash, now + TICKET_TTL_S)
        secure = request.secure or request.headers.get("X-Forwarded-Proto") == "https"
        ws_url = f"{'wss' if secure else 'ws'}://{request.host}/ws/{ticket}"
        try:
            font_size = min(32, max(8, int(request.query.get("fontsize", "16"))))
        except ValueError:
            font_size = 16
        body = (
            PAGE.read_text(encoding="utf-8")
            .replace("{{websocket_url}}", html.escape(ws_url))
            .replace("{{font_size}}", str(font_size))
        )
        return web.Response(text=body, content_type="text/html")

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One app process for this browser, as the ticket's annotator."""
        holder, token_hash = self.checked(request)
        websocket = web.WebSocketResponse(heartbeat=15)
        try:
            width = int(request.query.get("width", "80"))
            height = int(request.query.get("height", "24"))
        except ValueError:
            width, height = 80, 24
        await websocket.prepare(request)
        service = AnnotatorAppService(
            self.command,
            holder,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self.download_manager,
            debug=self.debug,
        )
        sessions = self._sessions.setdefault(token_hash, set())
        sessions.add(websocket)
        try:
            await service.start(width, height)
            try:
                await self._process_messages(websocket, service)
            finally:
                await service.stop()
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:
            log.exception(error)
        finally:
            sessions.discard(websocket)
            if not sessions:
                self._sessions.pop(token_hash, None)
        return websocket

    # --- life cycle --------------------------------------------------------------------

    async def watch_revocations(self) -> None:
        """End the open sessions of links revoked since they opened."""
        while True:
            await asyncio.sleep(REVOKE_CHECK_S)
            hashes = list(self._sessions)
            if not hashes:
                continue
            try:
                live = await asyncio.to_thread(live_hashes, self.reader, hashes)
            except Exception as error:  # a busy database: try again next round
                log.warning("could not check the links: %s", error)
                continue
            for h in hashes:
                if h not in live:
                    for websocket in list(self._sessions.get(h, ())):
                        await websocket.close()

    async def on_startup(self, app: web.Application) -> None:
        self._watcher = asyncio.create_task(self.watch_revocations())
        print(f"annotate serve: listening on http://{self.host}:{self.port}", flush=True)
        print("Annotators open the links of: annotate annotators add NAME", flush=True)
        print("Press Ctrl+C to stop.", flush=True)

    async def on_shutdown(self, app: web.Application) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        for sessions in list(self._sessions.values()):
            for websocket in list(sessions):
                await websocket.close()

    def serve(self, debug: bool = False) -> None:
        """Run until Ctrl+C or SIGTERM (the access log stays off: it would log tokens)."""
        self.debug = debug
        self.initialize_logging()
        logging.getLogger("aiohttp.access").disabled = True
        web.run_app(
            self._make_app(),
            host=self.host,
            port=self.port,
            access_log=None,
            print=None,
        )
