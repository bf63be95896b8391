"""The Starlette application: the declared routes bound to their handlers, the lifespan (stores,
read pools, cache), the error handlers."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from boardd.api import dashboard, data, server, tensorboard
from boardd.api.app_state import AppState, ExperimentHandle
from boardd.api.auth import Guard
from boardd.api.deferred import deferred
from boardd.api.errors import (
    ApiError,
    handle_api_error,
    handle_data_error,
    handle_http_exception,
    handle_unexpected,
)
from boardd.api.routes import ROUTES, Query, RouteDef
from boardd.api.routing import indexed_router
from boardd.api.stream import HEARTBEAT_SECONDS, LiveStreams
from boardd.api.tensorboard import webui
from boardd.api.tensorboard.answers import CachedAnswers
from boardd.api.workers import AnswerWorkers
from boardd.cache import (
    DEFAULT_DISK_BYTES,
    DEFAULT_MAX_BYTES,
    DiskTier,
    ResponseCache,
    TwoTierCache,
)
from boardd.config import (
    DEFAULT_HPARAMS_IDLE_SECONDS,
    LOOPBACK_FRAME_ANCESTORS,
    ExperimentSpec,
    HostPolicy,
)
from boardd.data.changes import ChangeHub
from boardd.data.columns import ColumnCache
from boardd.data.errors import DataError
from boardd.data.kinds import KINDS
from boardd.data.provider import DataProvider
from boardd.data.sqlite_provider import SqliteProvider
from boardd.lineage import LineageService

log = logging.getLogger(__name__)

#: With ``disk_after``, the disk tier opens at the latest this long after the app started.
DISK_OPEN_AFTER_SECONDS = 0.5

#: A route's handler: the request, its parameters as the route table validated them, the route.
Handler = Callable[[Request, Query, RouteDef], Awaitable[Response]]


def create_app(
    experiments: Sequence[ExperimentSpec],
    *,
    status: Mapping[str, Callable[[], Mapping[str, Any]]] | None = None,
    cache_bytes: int = DEFAULT_MAX_BYTES,
    token: str | None = None,
    hub: ChangeHub | None = None,
    stream_heartbeat: float = HEARTBEAT_SECONDS,
    disk_cache: Path | None = None,
    disk_cache_bytes: int = DEFAULT_DISK_BYTES,
    disk_after: threading.Event | None = None,
    generation: Mapping[str, Callable[[], int | None]] | None = None,
    sampling: Mapping[str, int | None] | None = None,
    hparams_idle_seconds: float = DEFAULT_HPARAMS_IDLE_SECONDS,
    lineage: LineageService | None = None,
    window_title: str = "",
    hosts: HostPolicy | None = None,
    frame_ancestors: tuple[str, ...] = LOOPBACK_FRAME_ANCESTORS,
    answer_processes: int = 0,
    providers: Mapping[str, DataProvider] | None = None,
    column_cache: ColumnCache | None = None,
) -> Starlette:
    """The boardd HTTP app over these experiments' stores.

    ``status`` maps an experiment name to a function giving its live ingest status (the
    daemon passes its runners'); without it the app serves the stores as they are. With a
    ``token``, every request must carry ``Authorization: Bearer <token>`` or the cookie that
    ``/login?token=<token>`` sets (:mod:`boardd.api.auth`).

    ``hub``: the daemon's writers announce their commits to it, and /api/v1/stream wakes on
    them; without it the stream watches the stores (another process writes them).
    ``stream_heartbeat``: seconds without a message before the stream sends ``: ping``.
    ``disk_cache``: the directory of the second cache tier (diskcache; shared by processes,
    kept across restarts) for expensive answers; None: memory only. ``disk_after``: its
    opening waits for this event (the daemon sets it once its first answer is sent, so that
    the opening does not compete with that answer), DISK_OPEN_AFTER_SECONDS at most.
    ``generation``: per experiment, the generation of its last commit when this process is
    its writer (None otherwise); with it a cache hit needs no store access at all.
    ``sampling``: ``--samples-per-plugin``; TensorBoard's routes (:mod:`boardd.api.tensorboard`)
    return at most that many points per series, as TensorBoard does.
    ``hparams_idle_seconds``: a session without end info is RUNNING while its runs received
    data this recently (by their points' wall times), UNKNOWN after.
    ``lineage``: the lineage store served under /api/v1/metadata/... (503 without one); its
    writes need ``token``, even on loopback.
    ``window_title``: TensorBoard's ``--window_title`` (its UI's title; "": its own).
    ``hosts``: the Host names answered to (None: any); ``frame_ancestors``: the origins whose
    pages may frame the UIs (:mod:`boardd.api.auth`).
    ``answer_processes``: processes that build the large answers, beside this one
    (:mod:`boardd.api.workers`); 0: every answer is built in this process.
    ``providers``: the data provider of each experiment, by name (the daemon makes them, to
    warm them up from its ingest); for an experiment without one, a :class:`SqliteProvider`
    of its store is made. ``column_cache``: the cache of whole scalar series those made share
    (a new one by default). The app owns every provider and closes it when it stops.
    """
    columns = column_cache if column_cache is not None else ColumnCache()
    handles = {
        spec.name: ExperimentHandle(
            spec,
            (providers or {}).get(spec.name) or SqliteProvider(spec.db, columns, sampling=sampling),
            (status or {}).get(spec.name),
            (generation or {}).get(spec.name),
        )
        for spec in experiments
    }

    streams = LiveStreams(handles, hub, heartbeat=stream_heartbeat)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, AppState]]:
        memory = ResponseCache(cache_bytes)
        tiers = TwoTierCache(memory)
        # The disk tier opens beside the start-up, not in its way: the first answers need only
        # the memory tier, and what uses the disk tier waits for the opening (tiers_of).
        opening = _open_disk_tier(tiers, disk_cache, disk_cache_bytes, disk_after)
        state = AppState(
            handles,
            memory,
            time.time(),
            tiers=tiers,
            disk_opening=opening,
            disk_wanted=disk_after,
            sampling=dict(sampling or {}),
            hparams_idle_seconds=hparams_idle_seconds,
            lineage=lineage,
            token=token,
            window_title=window_title,
            workers=(
                AnswerWorkers(answer_processes, preload=(data.__name__,))
                if answer_processes > 0
                else None
            ),
            column_cache=columns,
        )
        try:
            yield {"boardd": state}
        finally:
            # Streams end first: their generators hold read-pool queries and the hub.
            streams.close()
            if state.workers is not None:
                await run_in_threadpool(state.workers.close)
            for handle in handles.values():
                handle.provider.close()
            if opening is not None:
                await run_in_threadpool(opening.join)
            await run_in_threadpool(tiers.close)

    async def stream(request: Request, query: Query, route: RouteDef) -> Response:
        return await streams.endpoint(request)

    handlers: dict[str, Handler] = {**HANDLERS, "stream": stream}
    app = Starlette(
        lifespan=lifespan,
        middleware=[
            Middleware(Guard, token=token, hosts=hosts, frame_ancestors=frame_ancestors),
            # After the guard: a cached TensorBoard answer is sent before routing.
            Middleware(CachedAnswers, paths=tensorboard.cached_paths()),
        ],
        exception_handlers={
            ApiError: handle_api_error,
            DataError: handle_data_error,
            HTTPException: handle_http_exception,
            Exception: handle_unexpected,
        },
    )
    # Starlette's router, with its route walk remembered (api/routing.py).
    app.router = indexed_router(
        [
            *(_route(r, handlers[r.operation_id]) for r in ROUTES),
            *tensorboard.routes(),
            # After TensorBoard's data routes: /tensorboard/data/... are theirs.
            *webui.routes(webui.webfiles_path()),
            # boardd's own dashboard: / and /assets/... (api/dashboard.py).
            *dashboard.routes(),
        ],
        lifespan=lifespan,
    )
    return app


def _route(route: RouteDef, handler: Handler) -> Route:
    """The Starlette route of a declared route: the parameters are validated before the
    handler runs."""

    async def endpoint(request: Request) -> Response:
        return await handler(request, route.parse(request), route)

    return Route(route.path, endpoint, methods=list(route.methods), name=route.operation_id)


def _open_disk_tier(
    tiers: TwoTierCache,
    directory: Path | None,
    max_bytes: int,
    after: threading.Event | None = None,
) -> threading.Thread | None:
    """Starts opening the disk tier into ``tiers`` (it stays without one if it cannot be
    opened: memory only); returns the thread doing it, or None (no disk tier asked for).
    With ``after``, the opening waits until it is set (the daemon: its first answer has been
    sent; a request that needs the tier sets it, see :func:`boardd.api.app_state.tiers_of`), or
    DISK_OPEN_AFTER_SECONDS at most."""
    if directory is None:
        return None

    def open_tier() -> None:
        if after is not None:
            after.wait(DISK_OPEN_AFTER_SECONDS)
        try:
            tiers.disk = DiskTier(directory, max_bytes)
        except Exception as exc:
            log.warning(
                "disk cache %s cannot be opened (%s): caching in memory only", directory, exc
            )

    thread = threading.Thread(target=open_tier, name="boardd-disk-open", daemon=True)
    thread.start()
    return thread


#: The handler of every declared route but the stream (whose handler is per app).
HANDLERS: dict[str, Handler] = {
    "health": server.health,
    "openapi": server.serve_openapi,
    "list_experiments": server.list_experiments,
    "list_plugins": server.list_plugins,
    "list_runs": server.list_runs,
    "list_data_loss": server.list_data_loss,
    **{f"list_{kind}": data.list_series for kind in KINDS},
    **{f"read_{kind}": data.read_series for kind in KINDS},
    "read_blob": data.read_blob,
    # Imported by their first request, or after the daemon's first answer (api/deferred.py).
    "hparams_experiment": deferred("boardd.plugins.hparams.boardd_routes", "experiment"),
    "hparams_session_groups": deferred("boardd.plugins.hparams.boardd_routes", "session_groups"),
    "hparams_metric_evals": deferred("boardd.plugins.hparams.boardd_routes", "metric_evals"),
    "metadata_call": deferred("boardd.api.metadata", "call"),
    "metadata_lineage_graph": deferred("boardd.api.metadata", "lineage_graph"),
    "read_distributions": deferred("boardd.plugins.histograms.boardd_routes", "distributions"),
    "read_pr_curves": deferred("boardd.plugins.pr_curves.boardd_routes", "pr_curves"),
    "read_text": deferred("boardd.plugins.text.boardd_routes", "text"),
    "read_descriptions": deferred("boardd.api.plugin_answers", "descriptions"),
}
