"""Browser links for ``annotate serve``: one secret token per annotator, issued by the lead.

``annotate annotators add NAME`` draws a token (:func:`secrets.token_urlsafe` of 32 random
bytes), stores only its SHA-256 (:class:`annotate.store.models.AccessToken`) and prints
the link ``URL_BASE/?token=TOKEN`` once. ``annotate serve`` hashes the token a browser
presents and looks the hash up (:func:`check_token`): a live token names the annotator,
whose name the app then fixes. ``annotate annotators revoke NAME`` ends a link.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from annotate.errors import AnnotateError
from annotate.names import InvalidNameError, normalize_annotator, one_line
from annotate.store import repo
from annotate.store.repo import AccessLinkRow, TokenHolder

__all__ = [
    "DEFAULT_URL_BASE",
    "AccessLinkRow",
    "IssuedLink",
    "TokenHolder",
    "check_token",
    "hash_token",
    "issue_link",
    "link_url",
    "links",
    "live_hashes",
    "revoke_link",
]

TOKEN_BYTES = 32
"""Random bytes per token (256 bits; :func:`secrets.token_urlsafe` makes 43 characters)."""

DEFAULT_URL_BASE = "http://127.0.0.1:8000"
"""Where ``annotate serve`` listens by default (its ``--host`` and ``--port``)."""

_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{16,128}")
"""What a token can look like (URL-safe base64); anything else is refused unhashed."""


@dataclass(frozen=True)
class IssuedLink:
    """A link just issued: the only time the token is known."""

    annotator: str
    """The annotator's stored (normalised) name."""
    study: str | None
    url: str


def hash_token(token: str) -> str:
    """The stored form of a token: its SHA-256 in hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def link_url(url_base: str, token: str) -> str:
    """The link an annotator opens: ``URL_BASE/?token=TOKEN``.

    Examples
    --------
    >>> link_url("http://10.0.0.5:8000/", "abc")
    'http://10.0.0.5:8000/?token=abc'
    """
    return f"{url_base.rstrip('/')}/?token={token}"


def _check_url_base(url_base: str) -> None:
    parts = urlsplit(url_base)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise AnnotateError(
            f"--url-base {one_line(url_base)!r} is not a web address such as "
            f"{DEFAULT_URL_BASE} (http or https, host and port, no query)",
            title="Link",
        )


def _name(name: str) -> str:
    try:
        return normalize_annotator(name)
    except InvalidNameError as err:
        raise AnnotateError(str(err), title="Invalid annotator name") from None


def issue_link(
    engine: Engine, name: str, *, study: str | None = None, url_base: str = DEFAULT_URL_BASE
) -> IssuedLink:
    """Issue a new link for annotator ``name`` (created if new), limited to ``study`` if given.

    Raises
    ------
    AnnotateError
        The name is not valid, the study does not exist, the URL base is not a web
        address, or the annotator already has a live link (revoke it first). Nothing is
        written then.
    """
    _check_url_base(url_base)
    norm = _name(name)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    with Session(engine) as s:
        study_id = None
        if study is not None:
            row = repo.get_study(s, study)
            if row is None:
                raise AnnotateError(
                    f"no study named {one_line(study)!r}; list them with: annotate studies",
                    title="Unknown study",
                )
            study_id = row.id
        aid = repo.annotator_id(s, norm)
        assert aid is not None
        live = repo.live_link_of(s, aid)
        if live is not None:
            raise AnnotateError(
                f"annotator {one_line(norm)!r} already has a live link (issued "
                f"{live.created_at:%Y-%m-%d %H:%M} UTC); revoke it first: "
                f"annotate annotators revoke {one_line(norm)!r}",
                title="Link exists",
            )
        try:
            repo.insert_access_token(
                s, token_hash=hash_token(token), annotator=aid, study_id=study_id
            )
            s.commit()
        except IntegrityError:  # issued by another process meanwhile
            s.rollback()
            raise AnnotateError(
                f"annotator {one_line(norm)!r} already has a live link; revoke it first: "
                f"annotate annotators revoke {one_line(norm)!r}",
                title="Link exists",
            ) from None
    return IssuedLink(norm, study, link_url(url_base, token))


def links(engine: Engine) -> list[AccessLinkRow]:
    """Every link issued, oldest first (live and revoked; never a token)."""
    with Session(engine) as s:
        return repo.access_links(s)


def revoke_link(engine: Engine, name: str) -> int:
    """Revoke annotator ``name``'s live link; returns how many were revoked (1).

    Raises
    ------
    AnnotateError
        No such annotator, or no live link (nothing is written).
    """
    norm = _name(name)
    with Session(engine) as s:
        aid = repo.annotator_id(s, norm, create=False)
        n = 0 if aid is None else repo.revoke_access_tokens(s, aid)
        if n == 0:
            raise AnnotateError(
                f"annotator {one_line(norm)!r} has no live link; list them with: "
                "annotate annotators list",
                title="No link",
            )
        s.commit()
    return n


def check_token(engine: Engine, token: str | None) -> TokenHolder | None:
    """Whom the live ``token`` belongs to; None for a missing, malformed, unknown or
    revoked token."""
    if not token or not _TOKEN_SHAPE.fullmatch(token):
        return None
    with Session(engine) as s:
        return repo.token_holder(s, hash_token(token))


def live_hashes(engine: Engine, hashes: list[str]) -> set[str]:
    """Which token hashes are still live (the server ends the sessions of the others)."""
    if not hashes:
        return set()
    with Session(engine) as s:
        return repo.live_token_hashes(s, hashes)
