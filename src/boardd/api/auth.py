"""Bearer-token protection and request limits, as one small ASGI middleware."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from boardd.api.common import json_bytes

#: The longest query string accepted (a request naming thousands of runs × tags is refused).
MAX_QUERY_BYTES = 64 * 1024

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Guard:
    """Checks ``Authorization: Bearer <token>`` (in constant time) and the query size."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if len(scope.get("query_string", b"")) > MAX_QUERY_BYTES:
            await _reply(send, 413, "too_large", "the query string is too long: ask for less")
            return
        if self._expected is not None:
            given = dict(scope.get("headers", [])).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await _reply(
                    send,
                    401,
                    "unauthorized",
                    "this server needs 'Authorization: Bearer <token>' (the token is in the "
                    "file given to boardd serve --token-file)",
                    extra=[(b"www-authenticate", b"Bearer")],
                )
                return
        await self.app(scope, receive, send)


async def _reply(
    send: Send, status: int, code: str, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json_bytes({"error": {"code": code, "message": message}})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": body})
