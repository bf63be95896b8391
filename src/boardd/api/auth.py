"""Bearer-token protection and request limits, as one small ASGI middleware.

A client proves it knows the token with ``Authorization: Bearer <token>``, or (a browser)
with the cookie that ``GET /login?token=<token>`` sets: the URL ``boardd serve`` prints at
start-up, as Jupyter does. The cookie holds an HMAC of the token, not the token: it grants
access to this server while the token stays the same (restarts included), but the token
cannot be read back from a browser's cookie store. It is HttpOnly (no script reads it) and
SameSite=Strict (no other site's page makes the browser send it).

Loopback is no boundary against web pages, which run on this machine too: the guard answers
only to the Host names the server is reachable as (a page whose name an attacker points at
127.0.0.1, DNS rebinding, is refused with 421), and the UIs' pages say which pages may frame
them (``frame-ancestors``: boardd's own and the loopback origins, a notebook on localhost).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

from boardd.api.prefix import route_path
from boardd.api.replies import json_bytes
from boardd.config import LOOPBACK_FRAME_ANCESTORS, HostPolicy

#: The longest query string accepted (a request naming thousands of runs × tags is refused).
MAX_QUERY_BYTES = 64 * 1024

#: The path of the login URL (``/login?token=<token>``).
LOGIN_PATH = "/login"
#: The pages that carry the ``frame-ancestors`` policy: the dashboard and TensorBoard's UI.
FRAMED_PATHS = frozenset({"/", "/tensorboard/", "/tensorboard/index.html"})
#: The cookie's name: this prefix and the server's port (browsers share cookies between the
#: ports of a host, and each boardd has its own token).
COOKIE_PREFIX = "boardd-auth"
#: How long the browser keeps the cookie (seconds): 30 days.
COOKIE_MAX_AGE = 30 * 86400
#: What the cookie's HMAC (keyed with the token) is computed over.
_COOKIE_MESSAGE = b"boardd login cookie v1"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def cookie_value(token: str) -> str:
    """The login cookie's value for ``token``: an HMAC-SHA256 keyed with the token."""
    return hmac.new(token.encode(), _COOKIE_MESSAGE, hashlib.sha256).hexdigest()


def cookie_name(scope: Scope) -> str:
    """The login cookie's name on the server that received ``scope``."""
    server = scope.get("server")
    return f"{COOKIE_PREFIX}-{server[1]}" if server and server[1] else COOKIE_PREFIX


class Guard:
    """Checks the Host name, the token (``Authorization: Bearer <token>`` or the login cookie,
    in constant time), answers ``/login``, bounds the query size, and sets the UIs' pages'
    ``frame-ancestors``.

    ``hosts``: the Host names answered to (None: any; a request without Host, HTTP/1.0, is
    answered). ``frame_ancestors``: the sources of the pages' ``frame-ancestors`` directive."""

    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        hosts: HostPolicy | None = None,
        frame_ancestors: tuple[str, ...] = LOOPBACK_FRAME_ANCESTORS,
    ) -> None:
        self.app = app
        self._token = token.encode() if token else None
        self._cookie = cookie_value(token).encode() if token else None
        self._hosts = hosts
        self._frame_ancestors = ("frame-ancestors " + " ".join(frame_ancestors)).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._hosts is not None:
            refused = self._refused_host(scope)
            if refused is not None:
                await _reply(
                    send,
                    421,
                    "misdirected",
                    f"this server does not answer to the host name {refused!r} (a web page "
                    "could read it through DNS rebinding under such a name): if it is this "
                    f"server's name, start boardd serve with --allowed-host {refused}; behind a "
                    "reverse proxy, list the proxy's host name, or have the proxy pass the "
                    "backend's own Host",
                )
                return
        if len(scope.get("query_string", b"")) > MAX_QUERY_BYTES:
            await _reply(send, 413, "too_large", "the query string is too long: ask for less")
            return
        path = route_path(scope)
        if path == LOGIN_PATH:
            await self._login(scope, send)
            return
        if self._token is not None and not self._authorized(scope):
            await _reply(
                send,
                401,
                "unauthorized",
                "this server needs a token: open the login URL that boardd serve printed "
                "(/login?token=<token>), or send 'Authorization: Bearer <token>' (the token is "
                "in the file given to boardd serve --token-file)",
                extra=[(b"www-authenticate", b"Bearer")],
            )
            return
        if path in FRAMED_PATHS:
            await self.app(scope, receive, self._framed(send))
            return
        await self.app(scope, receive, send)

    def _refused_host(self, scope: Scope) -> str | None:
        """The name of a Host header this server does not answer to, or None."""
        assert self._hosts is not None
        value: bytes
        for name, value in scope.get("headers", ()):
            if name != b"host":
                continue
            # The name only: "[::1]:6007" -> "[::1]", "localhost:6007" -> "localhost".
            bracketed = value[:1] == b"["
            host = value[: value.find(b"]") + 1] if bracketed else value.partition(b":")[0]
            # An empty Host is no name a web page could have given.
            if host and host not in self._hosts.names and not self._hosts.allows(host):
                return host.decode("latin-1")
            if not host and value:
                return value.decode("latin-1")
        return None

    def _framed(self, send: Send) -> Send:
        """``send``, with the response's Content-Security-Policy carrying this server's
        ``frame-ancestors`` (in place of the page's own, if it has one)."""

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = []
                policy = None
                for name, value in message.get("headers", ()):
                    if name.lower() == b"content-security-policy":
                        policy = value
                    else:
                        headers.append((name, value))
                directives = [
                    d.strip()
                    for d in (policy or b"").split(b";")
                    if d.strip() and not d.strip().lower().startswith(b"frame-ancestors")
                ]
                directives.append(self._frame_ancestors)
                headers.append((b"content-security-policy", b"; ".join(directives)))
                message = {**message, "headers": headers}
            await send(message)

        return sending

    def _authorized(self, scope: Scope) -> bool:
        assert self._token is not None and self._cookie is not None
        bearer = b""
        cookies: list[bytes] = []
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                bearer = value
            elif name == b"cookie":
                cookies.append(value)
        # The scheme's name is case-insensitive (RFC 9110 11.1): "bearer", "BEARER" too.
        scheme, _, given = bearer.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(given.lstrip(b" "), self._token):
            return True
        cookie = _cookie(cookies, cookie_name(scope).encode())
        return cookie is not None and hmac.compare_digest(cookie, self._cookie)

    async def _login(self, scope: Scope, send: Send) -> None:
        """``GET /login?token=<token>``: the right token sets the cookie and redirects to
        ``/``; a wrong one is a 401 (and no cookie)."""
        if scope["method"] not in ("GET", "HEAD"):
            await _reply(send, 405, "method_not_allowed", "/login takes GET", [(b"allow", b"GET")])
            return
        # The dashboard: / under --path-prefix (root_path), if any.
        home = (scope.get("root_path", "") + "/").encode("latin-1")
        headers = [
            (b"location", home),
            (b"content-length", b"0"),
            (b"cache-control", b"no-store"),
            (b"referrer-policy", b"no-referrer"),
        ]
        if self._token is not None:
            query = parse_qs(scope.get("query_string", b"").decode("utf-8", "replace"))
            given = (query.get("token") or [""])[-1].encode()
            if not hmac.compare_digest(given, self._token):
                await _reply(
                    send,
                    401,
                    "unauthorized",
                    "wrong or missing token: open /login?token=<token> with the token in the "
                    "file given to boardd serve --token-file",
                )
                return
            assert self._cookie is not None
            secure = "; Secure" if scope.get("scheme") == "https" else ""
            cookie = (
                f"{cookie_name(scope)}={self._cookie.decode()}; Path=/; Max-Age={COOKIE_MAX_AGE}"
                f"; HttpOnly; SameSite=Strict{secure}"
            )
            headers.append((b"set-cookie", cookie.encode()))
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


def _cookie(headers: list[bytes], name: bytes) -> bytes | None:
    """The value of cookie ``name`` in these Cookie headers (the last one), or None."""
    found = None
    for header in headers:
        for part in header.split(b";"):
            key, sep, value = part.strip().partition(b"=")
            if sep and key.strip() == name:
                found = value.strip().strip(b'"')
    return found


async def _reply(
    send: Send, status: int, code: str, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json_bytes({"error": {"code": code, "message": message}})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": body})
