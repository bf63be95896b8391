"""What TensorBoard's routes share: which experiments a request addresses and how their runs are
named (``--logdir_spec``'s ``NAME/RUN``), the generation-keyed answer cache, TensorBoard's JSON
and its guard on POST.

Every answer is built in a worker thread by a function of a :class:`Reader`, which opens the
store of each addressed experiment on demand; the result is cached under the request and the
generations of those stores, so a repeated request costs a dictionary lookup until new data is
committed.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import Awaitable, Callable, Hashable, Iterator
from typing import Any, NamedTuple, overload

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.common import AppState, ExperimentHandle, raw_reply, reply, state_of
from boardd.api.errors import ApiError
from boardd.api.prefix import route_path
from boardd.cache import Encoded, make_etag
from boardd.data.errors import Damaged, Unavailable
from boardd.data.experiments import RunRow
from boardd.data.kinds import Kind
from boardd.data.provider import DataProvider
from boardd.data.series import Selection, SeriesInfo

#: The experiment path parameter of ``/experiment/{experiment}/data/...``.
EXPERIMENT_PARAM = "experiment"
#: The experiment id TensorBoard's UI puts in its URLs when its page names none
#: (``/experiment/defaultExperimentId/data/...``): every experiment, as under ``/data``.
DEFAULT_EXPERIMENT_ID = "defaultExperimentId"


class Scope(NamedTuple):
    """The experiments one request addresses, and whether their run names carry the
    experiment's name (several logdirs under ``/data``: ``NAME/RUN``, as ``--logdir_spec``)."""

    handles: tuple[ExperimentHandle, ...]
    prefixed: bool

    def outer(self, handle: ExperimentHandle, run: str) -> str:
        """The run's name as TensorBoard's UI sees it (``os.path.join(NAME, RUN)``, as
        TensorBoard names the runs of a named logdir: the root run of ``a`` is ``a/.``)."""
        return os.path.join(handle.spec.name, run) if self.prefixed else run

    def inner(self, outer: str) -> tuple[ExperimentHandle, str] | None:
        """The experiment and stored run name of an outer run name (None: no such experiment)."""
        if not self.prefixed:
            return (self.handles[0], outer) if self.handles else None
        # The longest experiment name that prefixes it (names may contain "/").
        for handle in sorted(self.handles, key=lambda h: -len(h.spec.name)):
            head = handle.spec.name + "/"
            if outer.startswith(head):
                return handle, outer[len(head) :]
        return None


def scope_of(request: Request) -> Scope:
    """The scope of a request: one experiment under ``/experiment/{name}/``, else all
    (:data:`DEFAULT_EXPERIMENT_ID` too, unless an experiment has that name)."""
    state = state_of(request)
    name = request.path_params.get(EXPERIMENT_PARAM)
    found = _scope(state, name)
    if found is None:
        known = ", ".join(sorted(state.experiments)) or "(none)"
        raise ApiError(404, f"no experiment {name!r}; known: {known}")
    return found


def _scope(state: AppState, name: str | None) -> Scope | None:
    """:func:`scope_of` for an experiment name from the path (None: none named); None for an
    unknown experiment."""
    if name is not None and (name != DEFAULT_EXPERIMENT_ID or name in state.experiments):
        handle = state.experiments.get(name)
        return None if handle is None else Scope((handle,), prefixed=False)
    handles = tuple(state.experiments.values())
    return Scope(handles, prefixed=len(handles) > 1)


class Series(NamedTuple):
    """One time series as a route sees it: its outer run name, the store it is in."""

    run: str
    handle: ExperimentHandle
    info: SeriesInfo


class Reader:
    """Read access to the stores of a scope, from one worker thread (each experiment through
    its data provider)."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    def experiments(self) -> Iterator[tuple[ExperimentHandle, DataProvider, int]]:
        """Each addressed experiment whose store has data: handle, provider, experiment id.
        A store not yet created or still empty is skipped (TensorBoard shows no runs yet)."""
        for handle in self.scope.handles:
            provider = handle.provider
            try:
                row = provider.experiment()
            except Damaged:
                raise  # met just now: 503, never an answer without this store's runs
            except Unavailable:
                continue
            if row is not None:
                yield handle, provider, row.id

    def runs(self) -> list[tuple[str, RunRow]]:
        """The live runs (outer name, row), experiment by experiment in TensorBoard's order."""
        out: list[tuple[str, RunRow]] = []
        for handle, provider, exp_id in self.experiments():
            out.extend((self.scope.outer(handle, r.name), r) for r in provider.runs(exp_id))
        return out

    def series(
        self,
        kind: Kind,
        plugin: str,
        runs: tuple[str, ...] = (),
        tags: tuple[str, ...] = (),
    ) -> list[Series]:
        """The series of ``plugin`` (of this kind), only these outer runs and tags if given."""
        out: list[Series] = []
        for handle, provider, exp_id in self.experiments():
            inner_runs: tuple[str, ...] = ()
            if runs:
                inner_runs = tuple(
                    r for h, r in filter(None, map(self.scope.inner, runs)) if h is handle
                )
                if not inner_runs:
                    continue
            found = provider.list_series(exp_id, kind, Selection(plugin, inner_runs, tags))
            out.extend(Series(self.scope.outer(handle, s.run), handle, s) for s in found)
        return out

    def one(self, kind: Kind, plugin: str, run: str, tag: str) -> Series | None:
        """The series of one outer run and tag, or None."""
        found = self.series(kind, plugin, (run,), (tag,))
        return found[0] if found else None


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
    answer is :func:`boardd.api.common.reply`'s for that entry, byte for byte. Everything else
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


def require_xsrf(request: Request) -> None:
    """The guard on TensorBoard's POST routes: a POST that a page of another site could have
    made is refused (400). TensorBoard's UI marks its fetches with ``X-XSRF-Protected: 1``, a
    header no form can set; its older dashboards (the Scalars tab's ``scalars_multirun``) post
    a FormData without it, which the browser itself marks as coming from this server's own
    page (``Sec-Fetch-Site: same-origin``, else an ``Origin`` equal to this server's)."""
    if request.headers.get("x-xsrf-protected") == "1" or _same_origin(request):
        return
    raise ApiError(
        400,
        "POST requests to TensorBoard's routes must carry the header X-XSRF-Protected: 1 "
        "(or come from this server's own pages)",
    )


def _same_origin(request: Request) -> bool:
    """Whether the browser says the request comes from a page of this server's origin."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        # A browser that sends it says where the request comes from; another port of this
        # host is "same-site", not "same-origin".
        return site == "same-origin"
    origin = request.headers.get("origin")
    host = request.headers.get("host")
    if not origin or origin == "null" or not host:
        return False
    return origin == f"{request.url.scheme}://{host}"


def not_found(message: str) -> ApiError:
    """A 404 in boardd's error shape (TensorBoard answers such requests 404 too)."""
    return ApiError(404, message)


@overload
def param(request: Request, name: str) -> str | None: ...
@overload
def param(request: Request, name: str, default: str) -> str: ...
def param(request: Request, name: str, default: str | None = None) -> str | None:
    """A query parameter as TensorBoard reads it: the first of repeated ones (werkzeug's
    ``args.get``; Starlette's ``query_params.get`` gives the last)."""
    values = request.query_params.getlist(name)
    return values[0] if values else default


def required(request: Request, name: str) -> str:
    """A query parameter the route cannot do without (400 naming it when absent)."""
    value = param(request, name)
    if value is None:
        raise ApiError(400, f"{name}= is required")
    return value
