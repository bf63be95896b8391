"""Starlette's router with its route walk remembered per path and method.

Starlette matches a request by trying each route's regex in turn (and again inside each
mount): with boardd's ~30 API routes and TensorBoard's ~30 data routes at four mount points, a
request to a TensorBoard route ran about thirty regexes before its handler. The routes never
change once the app is made, and whether a route matches depends only on the scope's type,
path, root path and method, so the walk's outcome (the first route matching fully, else the first
matching partly: Starlette's 405) is remembered under those: a repeated request runs one regex,
the winning route's own (which still makes its path parameters). A path that matches nothing
(404, or Starlette's slash redirect) takes Starlette's own walk every time.

The router is Starlette's own, unchanged; the memo is its middleware (the ``middleware`` its
constructor takes), so it runs inside the app's exception handling, where the walk does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Match, Router
from starlette.types import ASGIApp, Receive, Scope, Send

#: The most (type, path, method) outcomes remembered: past it, the memo starts over (many
#: distinct paths: each blob's or experiment's, or a scanner's).
MEMO_ENTRIES = 4096


class _Walks:
    """What a router's memo knows: the router (set once it is made), its routes, the outcomes."""

    __slots__ = ("memo", "router", "routes")

    def __init__(self, routes: Sequence[BaseRoute]) -> None:
        self.router: Router | None = None
        self.routes = list(routes)
        self.memo: dict[tuple[str, str, str, str], int] = {}


class RouteMemo:
    """The router's own middleware (Starlette's ``Router(middleware=...)``): inside the app's
    exception handling, in front of the router's walk, which it runs only for outcomes it has
    not seen (and for what matches no route)."""

    def __init__(self, app: ASGIApp, walks: _Walks) -> None:
        self.app = app
        self.walks = walks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http":
            await self.app(scope, receive, send)
            return
        walks = self.walks
        # The path and root path as they come, not the route path Starlette derives from them
        # (the path past the root path): the walk's outcome depends on nothing else, and the
        # key so needs no copy of how Starlette derives it.
        key = (kind, scope["path"], scope.get("root_path", ""), scope["method"])
        index = walks.memo.get(key)
        if index is None:
            index = _walk(walks.routes, scope)
            if len(walks.memo) >= MEMO_ENTRIES:
                walks.memo.clear()
            walks.memo[key] = index
        if index < 0:
            await self.app(scope, receive, send)
            return
        # What the router's walk puts in the scope before it hands it to the route.
        if "router" not in scope:
            scope["router"] = walks.router
        route = walks.routes[index]
        _, child_scope = route.matches(scope)
        scope["route"] = route
        scope.update(child_scope)
        await route.handle(scope, receive, send)


def indexed_router(routes: Sequence[BaseRoute], *, lifespan: Any = None) -> Router:
    """A :class:`starlette.routing.Router` over ``routes`` that remembers which route a path
    and method go to (:class:`RouteMemo`, its middleware)."""
    walks = _Walks(routes)
    router = Router(routes, lifespan=lifespan, middleware=[Middleware(RouteMemo, walks=walks)])
    walks.router = router
    return router


def _walk(routes: Sequence[BaseRoute], scope: Scope) -> int:
    """The index of the route Starlette's walk would hand the scope to, or -1."""
    partial = -1
    for index, route in enumerate(routes):
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return index
        if match is Match.PARTIAL and partial < 0:
            partial = index
    return partial
