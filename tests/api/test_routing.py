"""The router's remembered walk (api/routing.py): the same outcome as Starlette's own walk for
every kind of path (a route, a mount, 405, 404, the slash redirect), and one regex for a
repeated request."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route, Router
from starlette.types import Scope

from boardd.api.routing import indexed_router


class CountingRoute(Route):
    """A route that counts how often the router asks whether it matches."""

    asked = 0

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        type(self).asked += 1
        return super().matches(scope)


async def echo(request: Request) -> Response:
    params = ",".join(f"{k}={v}" for k, v in sorted(request.path_params.items()))
    return PlainTextResponse(f"{request.url.path} root={request.scope['root_path']} {params}")


def routes() -> list[BaseRoute]:
    inner = [Route("/item/{name}", echo), Route("/post", echo, methods=["POST"])]
    return [
        *(CountingRoute(f"/r{i}", echo) for i in range(20)),
        CountingRoute("/users/{user}", echo),
        Mount("/a/{part}", routes=inner),
        Mount("/b", routes=inner),
        CountingRoute("/slash/", echo),
    ]


def call(app: Any, method: str, path: str) -> tuple[int, bytes]:
    """One request through the app, in process."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }
    out: dict[str, Any] = {"body": b""}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            out["status"] = message["status"]
        else:
            out["body"] += message.get("body", b"")

    asyncio.run(app(scope, receive, send))
    return out["status"], out["body"]


PATHS = [
    ("GET", "/r3"),
    ("GET", "/r19"),
    ("GET", "/users/ann"),
    ("GET", "/a/one/item/x"),
    ("GET", "/a/two/item/y"),
    ("GET", "/b/item/z"),
    ("GET", "/b/post"),  # 405
    ("POST", "/b/post"),
    ("GET", "/nothing"),  # 404
    ("GET", "/slash"),  # redirected to /slash/
]


def test_the_remembered_walk_answers_as_starlettes_own() -> None:
    plain = Starlette(routes=routes())
    indexed = Starlette()
    indexed.router = indexed_router(routes())
    for _ in range(2):  # the second time from the memo
        for method, path in PATHS:
            assert call(indexed, method, path) == call(plain, method, path), (method, path)


def test_a_repeated_request_runs_one_regex() -> None:
    app = Starlette()
    app.router = indexed_router(routes())
    CountingRoute.asked = 0
    assert call(app, "GET", "/users/ann")[0] == 200
    # The walk (twenty routes, then the one that matches), then the match's own parameters.
    assert CountingRoute.asked == 22
    CountingRoute.asked = 0
    assert call(app, "GET", "/users/bob") == (200, b"/users/bob root= user=bob")
    assert CountingRoute.asked == 22  # another path: walked once
    CountingRoute.asked = 0
    assert call(app, "GET", "/users/bob")[0] == 200
    assert CountingRoute.asked == 1  # remembered: only the route's own match (its parameters)


def test_a_plain_router_walks_every_time() -> None:
    # The count above can tell: Starlette's own router asks every route before the match.
    app = Router(routes())
    CountingRoute.asked = 0
    call(app, "GET", "/users/ann")
    call(app, "GET", "/users/ann")
    assert CountingRoute.asked == 42
