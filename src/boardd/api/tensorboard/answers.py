"""TensorBoard's routes' answers: JSON as TensorBoard encodes it, cached under the request and
the addressed stores' generations, and sent before routing when the cache has them.

Every answer is built in a worker thread by a function of a :class:`~.scope.Reader`, which
reads each addressed experiment through its data provider; the result is cached under the
request and the generations of those stores, so a repeated request costs a dictionary lookup
until new data is committed."""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.app_state import AppState, state_of
from boardd.api.errors import ApiError
from boardd.api.prefix import route_path
from boardd.api.replies import raw_reply, reply
from boardd.api.tensorboard.scope import Reader, Scope, _scope, scope_of
from boardd.cache import Encoded, make_etag
from boardd.data.errors import Unavailable


def _writer_generations(scope: Scope) -> tuple[Hashable, ...] | None:
    """The generations as the writers in this process count them, without touching a store
    (None unless this process writes every addressed store)."""
    out: list[Hashable] = []
    for handle in scope.handles:
        current = handle.generation() if handle.generation is not None else None
        if current is None:
            return None
        out.append((handle.spec.name, handle.provider.swaps, current))
    return tuple(out)


def _generations(scope: Scope) -> tuple[Hashable, ...]:
    """Per addressed experiment: its pool's swaps and its last commit's generation (the
    writer's own count when this process writes it, else read from the store; -1 while the
    store cannot be read)."""
    out: list[Hashable] = []
    for handle in scope.handles:
        current = handle.generation() if handle.generation is not None else None
        if current is None:
            try:
                current = handle.provider.generation()
            except Unavailable:
                current = -1
        out.append((handle.spec.name, handle.provider.swaps, current))
    return tuple(out)


def request_key(request: Request, form: Hashable = None) -> Hashable:
    """What identifies a TensorBoard request's answer apart from the data: the route (without
    the mount prefix: ``/tensorboard/data/x`` and ``/data/x`` are one answer; an experiment's
    ``/experiment/NAME/data/x`` is not), its query, and a POST's parsed form (a multipart
    body's boundary differs on every request)."""
    return _key(request.scope["path"], request.scope["query_string"], form)


def _key(path: str, query: bytes, form: Hashable = None) -> Hashable:
    return ("tb", path.removeprefix(UI_PREFIX), query, form)


async def answer(
    request: Request,
    build: Callable[[Reader], bytes],
    media_type: str = "application/json",
    *,
    form: Hashable = None,
    scope: Scope | None = None,
) -> Response:
    """The answer of ``build`` for this request, from the cache while no addressed store has
    committed since it was built: ETag/304 and gzip as every boardd answer."""
    scope = scope or scope_of(request)
    cache = state_of(request).cache
    request_part = request_key(request, form)
    # One entry per request: the generations are its version, so an answer superseded by a
    # commit is replaced by the next one built, not kept beside it.
    hit = _fast_hit(request, scope, request_part)
    if hit is not None:
        return hit

    accept = request.headers.get("accept-encoding", "")

    def compute() -> Encoded:
        version = _generations(scope)
        entry = cache.get(request_part, version)
        if entry is None:
            entry = Encoded(build(Reader(scope)), media_type, make_etag((request_part, version)))
            # Compressed here, off the event loop, for a client that takes gzip.
            cache.put(request_part, entry.ready_for(accept), version)
        return entry

    # asyncio's own thread pool: anyio's (Starlette's) would import its asyncio backend on
    # the first answer, which a restart's first answer would wait for (bench/bench_tensorboard.py).
    entry = await asyncio.to_thread(compute)
    return reply(request, cache, request_part, entry)


def answer_etag(request: Request, scope: Scope, form: Hashable = None) -> str:
    """The validator :func:`answer` gives this request's answer now (blocking: it may read the
    stores' generations)."""
    return make_etag((request_key(request, form), _generations(scope)))


def _fast_hit(request: Request, scope: Scope, request_part: Hashable) -> Response | None:
    """The cached answer, when this process writes every addressed store (the daemon): the
    writers' generations are then known without a store access, and a hit is answered on the
    event loop, with no thread hop and no SQL."""
    fast = _writer_generations(scope)
    if fast is None:
        return None
    cache = state_of(request).cache
    hit = cache.get(request_part, fast)
    return None if hit is None else reply(request, cache, request_part, hit)


def cached_first(handler: Callable[[Request], Awaitable[Response]]) -> Endpoint:
    """A GET route's endpoint that looks in the cache before its handler parses the request.

    Only for a handler whose answer is ``answer(request, build[, media_type])``: keyed by the
    route and raw query alone, so a hit is exactly what the handler would answer (a request
    it refuses is never cached). On a miss, or when the request names no known experiment,
    the handler runs as it would without this."""

    async def endpoint(request: Request) -> Response:
        try:
            scope = scope_of(request)
        except ApiError:
            return await handler(request)  # its own error first (e.g. a missing parameter)
        hit = _fast_hit(request, scope, request_key(request))
        return hit if hit is not None else await handler(request)

    endpoint.__name__ = handler.__name__
    endpoint.__qualname__ = handler.__qualname__
    endpoint.__doc__ = handler.__doc__
    CACHED_FIRST.add(endpoint)
    return endpoint


#: A Starlette endpoint.
Endpoint = Callable[[Request], Awaitable[Response]]


#: The endpoints made by :func:`cached_first` (their routes' cached answers are also served by
#: :class:`CachedAnswers`).
CACHED_FIRST: weakref.WeakSet[Endpoint] = weakref.WeakSet()


#: Where TensorBoard's UI is served; its data routes answer under it too.
UI_PREFIX = "/tensorboard"


_DATA = "/data/"


_EXPERIMENT = "/experiment/"


class CachedAnswers:
    """ASGI middleware answering a cache hit of a :func:`cached_first` route before routing:
    a GET whose answer is cached under the current generations of the stores it addresses
    (known without a store access: this process writes them) is sent from here, without
    Starlette's route walk, request and response objects (about half of a hit's CPU). The
    answer is :func:`boardd.api.replies.reply`'s for that entry, byte for byte. Everything else
    (a miss, another route or method, a store this process does not write) goes on to the app.

    ``paths``: the routes under a ``data`` mount (``/plugin/scalars/scalars``, ...) whose
    endpoint is a :func:`cached_first` one. It sits after the token guard and the query-size
    limit (:class:`boardd.api.auth.Guard`), which apply to it as to every request."""

    def __init__(self, app: Any, paths: frozenset[str]) -> None:
        self.app = app
        self.paths = paths

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            answer = self._hit(scope)
            if answer is not None:
                start, body = answer
                await send(start)
                await send(body)
                return
        await self.app(scope, receive, send)

    def _hit(self, scope: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        path: str = scope["path"]
        # The path the routes match: after --path-prefix (root_path), if any.
        inner = route_path(scope).removeprefix(UI_PREFIX)
        name: str | None = None
        if inner.startswith(_DATA):
            route = inner[len(_DATA) - 1 :]
        elif inner.startswith(_EXPERIMENT):
            name, _, rest = inner[len(_EXPERIMENT) :].partition("/")
            if not name or not rest.startswith("data/"):
                return None
            route = rest[len("data") :]
        else:
            return None
        if route not in self.paths:
            return None
        state = scope.get("state", {}).get("boardd")
        if not isinstance(state, AppState):
            return None
        addressed = _scope(state, name)
        if addressed is None:
            return None
        version = _writer_generations(addressed)
        if version is None:
            return None
        key = _key(path, scope["query_string"])
        entry = state.cache.get(key, version)
        if entry is None:
            return None
        return raw_reply(scope["headers"], state.cache, key, entry)


def tb_json(data: Any) -> bytes:
    """JSON as TensorBoard writes it; non-finite floats must already be spelled "NaN",
    "Infinity", "-Infinity" (:func:`boardd.data.values.finite_or_text`)."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).encode("utf-8")
