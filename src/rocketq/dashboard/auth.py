"""Optional login for the dashboard: a user file and an HMAC-signed session cookie.

The user file has rocketmq-dashboard's ``users.properties`` shape: one ``name=password`` per
line (a trailing ``,1`` — that dashboard's admin flag — is accepted and ignored), ``#``
comments. Passwords may be stored as ``sha256:<hex>`` instead of plain text.

The cookie holds ``name|expiry|signature`` with an HMAC-SHA256 signature under a secret
made at start-up (so restarting the dashboard logs everyone out). Only stdlib.

:func:`same_origin_posts` guards every form post, login or not: a POST whose ``Origin``
header names another host is refused (403), so a web page elsewhere cannot make a browser
on the operator's machine delete topics through a dashboard bound to 127.0.0.1.

Invariants: with no user file the middleware is not installed (login is off by default);
with one, every path except ``/login`` and ``/static/`` needs a valid cookie, else a page
is redirected to ``/login`` and an ``/api/`` call answers 401.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rocketq.errors import IllegalArgumentError
from rocketq.protocol.java_properties import parse_properties

__all__ = ["COOKIE", "SessionSigner", "load_users", "login_required", "password_ok", "same_origin_posts"]

COOKIE = "rocketq_dashboard"
_SESSION_S = 12 * 3600

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def load_users(path: str | Path) -> dict[str, str]:
    """Read a user file; IllegalArgumentError when it is missing or names nobody."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise IllegalArgumentError(f"cannot read the user file {path}: {exc}") from exc
    users = {name.strip(): value.split(",", 1)[0].strip() for name, value in parse_properties(text).items()}
    users = {k: v for k, v in users.items() if k and v}
    if not users:
        raise IllegalArgumentError(f"the user file {path} names no user (expected name=password lines)")
    return users


def password_ok(stored: str, given: str) -> bool:
    if stored.startswith("sha256:"):
        digest = hashlib.sha256(given.encode("utf-8")).hexdigest()
        return hmac.compare_digest(stored[7:].lower(), digest)
    return hmac.compare_digest(stored.encode("utf-8"), given.encode("utf-8"))


class SessionSigner:
    """Makes and checks session cookies."""

    def __init__(self, secret: bytes | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret or secrets.token_bytes(32)
        self._clock = clock

    def _sign(self, payload: str) -> str:
        return hmac.new(self._secret, payload.encode("utf-8"), hashlib.sha256).hexdigest()

    def make(self, user: str) -> str:
        payload = f"{user}|{int(self._clock()) + _SESSION_S}"
        return f"{payload}|{self._sign(payload)}"

    def user(self, cookie: str | None) -> str | None:
        """The logged-in user of a cookie, or None (absent, forged or expired)."""
        if not cookie:
            return None
        payload, _, sig = cookie.rpartition("|")
        user, _, expiry = payload.partition("|")
        if not user or not hmac.compare_digest(sig, self._sign(payload)):
            return None
        try:
            if int(expiry) < self._clock():
                return None
        except ValueError:
            return None
        return user


def _cookie(scope: Scope) -> str | None:
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for key, value in headers:
        if key == b"cookie":
            for part in value.decode("latin-1").split(";"):
                name, _, val = part.strip().partition("=")
                if name == COOKIE:
                    return val.strip('"')
    return None


def login_required(app: ASGIApp, signer: SessionSigner) -> ASGIApp:
    """ASGI middleware: pages need a session (see the module docstring)."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        if path == "/login" or path.startswith("/static/") or signer.user(_cookie(scope)) is not None:
            await app(scope, receive, send)
            return
        if path.startswith("/api/"):
            await send(
                {"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]}
            )
            await send({"type": "http.response.body", "body": b"login required"})
            return
        target = "/login?next=" + quote(path, safe="/")
        await send(
            {"type": "http.response.start", "status": 303, "headers": [(b"location", target.encode())]}
        )
        await send({"type": "http.response.body", "body": b""})

    return middleware


def _header(scope: Scope, name: bytes) -> str | None:
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


def same_origin_posts(app: ASGIApp) -> ASGIApp:
    """ASGI middleware: refuse a POST whose ``Origin`` is not this server (403)."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST":
            origin = _header(scope, b"origin")
            host = _header(scope, b"host")
            if origin is not None and origin != "null" and origin.split("://", 1)[-1] != host:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 403,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"cross-origin form post refused"})
                return
        await app(scope, receive, send)

    return middleware
