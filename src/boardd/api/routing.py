"""Starlette's router with its route walk remembered per path and method.

Starlette matches a request by trying each route's regex in turn (and again inside each
mount): with boardd's ~30 API routes and TensorBoard's ~30 data routes at four mount points, a
request to a TensorBoard route ran about thirty regexes before its handler. The routes never
change once the app is made, and whether a route matches depends only on the scope's type,
path, root path and method, so the walk's outcome (the first route matching fully, else the first
matching partly: Starlette's 405) is remembered under those: a repeated request runs one regex,
the winning route's own (which still makes its path parameters). A path that matches nothing
(404, or Starlette's slash redirect) takes Starlette's own walk every time.
"""

from __future__ import annotations

from typing import Any

from starlette.routing import Match, Router
from starlette.types import Receive, Scope, Send

#: The most (type, path, method) outcomes remembered: past it, the memo starts over (many
#: distinct paths: each blob's or experiment's, or a scanner's).
MEMO_ENTRIES = 4096


class IndexedRouter(Router):
    """A :class:`starlette.routing.Router` that remembers which route a path and method go to."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._memo: dict[tuple[str, str, str, str], int] = {}

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http":
            await super().app(scope, receive, send)
            return
        # The path and root path as they come, not the route path Starlette derives from them
        # (the path past the root path): the walk's outcome depends on nothing else, and the
        # key so needs no copy of how Starlette derives it.
        key = (kind, scope["path"], scope.get("root_path", ""), scope["method"])
        index = self._memo.get(key)
        if index is None:
            index = self._walk(scope)
            if len(self._memo) >= MEMO_ENTRIES:
                self._memo.clear()
            self._memo[key] = index
        if index < 0:
            await super().app(scope, receive, send)
            return
        if "router" not in scope:
            scope["router"] = self
        route = self.routes[index]
        _, child_scope = route.matches(scope)
        scope["route"] = route
        scope.update(child_scope)
        await route.handle(scope, receive, send)

    def _walk(self, scope: Scope) -> int:
        """The index of the route Starlette's walk would hand the scope to, or -1."""
        partial = -1
        for index, route in enumerate(self.routes):
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return index
            if match is Match.PARTIAL and partial < 0:
                partial = index
        return partial
