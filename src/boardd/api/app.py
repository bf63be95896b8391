"""The Starlette application: the route table, the lifespan (stores, read pools, cache)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import apsw
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from boardd import __version__
from boardd.api import data, openapi
from boardd.api.auth import Guard
from boardd.api.common import (
    AppState,
    ExperimentHandle,
    check_params,
    experiment_from,
    experiment_id,
    json_bytes,
    json_response,
    respond_cached,
    state_of,
)
from boardd.api.errors import ApiError, handle_api_error, handle_http_exception, handle_unexpected
from boardd.api.stream import HEARTBEAT_SECONDS, LiveStreams
from boardd.cache import (
    DEFAULT_DISK_BYTES,
    DEFAULT_MAX_BYTES,
    CacheStats,
    DiskTier,
    ResponseCache,
    TwoTierCache,
)
from boardd.config import ExperimentSpec
from boardd.reader.types import DataClass
from boardd.store import queries
from boardd.store.bus import ChangeHub

log = logging.getLogger(__name__)

#: The query parameter of /api/v1/plugins and /api/v1/runs (health and experiments take none).
EXPERIMENT_PARAMS = frozenset({"experiment"})


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
    generation: Mapping[str, Callable[[], int | None]] | None = None,
) -> Starlette:
    """The boardd HTTP app over these experiments' stores.

    ``status`` maps an experiment name to a function giving its live ingest status (the
    daemon passes its runners'); without it the app serves the stores as they are. With a
    ``token``, every request must carry ``Authorization: Bearer <token>``.

    ``hub``: the daemon's writers announce their commits to it, and /api/v1/stream wakes on
    them; without it the stream watches the stores (another process writes them).
    ``stream_heartbeat``: seconds without a message before the stream sends ``: ping``.
    ``disk_cache``: the directory of the second cache tier (diskcache; shared by processes,
    kept across restarts) for expensive answers; None: memory only.
    ``generation``: per experiment, the generation of its last commit when this process is
    its writer (None otherwise); with it a cache hit needs no store access at all.
    """
    handles = {
        spec.name: ExperimentHandle(
            spec, (status or {}).get(spec.name), (generation or {}).get(spec.name)
        )
        for spec in experiments
    }

    streams = LiveStreams(handles, hub, heartbeat=stream_heartbeat)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, AppState]]:
        memory = ResponseCache(cache_bytes)
        tiers = TwoTierCache(memory, await _open_disk_tier(disk_cache, disk_cache_bytes))
        state = AppState(handles, memory, time.time(), tiers=tiers)
        try:
            yield {"boardd": state}
        finally:
            # Streams end first: their generators hold read-pool queries and the hub.
            streams.close()
            for handle in handles.values():
                handle.pool.close()
            await run_in_threadpool(tiers.close)

    routes = [
        Route("/api/v1/health", health),
        Route("/api/v1/openapi.json", openapi.serve_openapi),
        Route("/api/v1/experiments", list_experiments),
        Route("/api/v1/plugins", list_plugins),
        Route("/api/v1/runs", list_runs),
        Route("/api/v1/stream", streams.endpoint),
        Route("/api/v1/blob/{key}", data.read_blob),
        Route("/api/v1/{kind}/list", data.list_metadata),
        Route("/api/v1/{kind}", data.read_values),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(Guard, token=token)],
        exception_handlers={
            ApiError: handle_api_error,
            HTTPException: handle_http_exception,
            Exception: handle_unexpected,
        },
    )


async def health(request: Request) -> Response:
    """Liveness and ingest state of every experiment: state, lag, data-loss count, cache."""
    check_params(request, ())
    state = state_of(request)
    experiments = []
    degraded = False
    for handle in state.experiments.values():
        entry: dict[str, Any] = {"name": handle.spec.name, "logdir": str(handle.spec.logdir)}
        if handle.status is not None:
            entry.update(handle.status())
            degraded = degraded or entry.get("state") == "failed"
        try:
            entry["data_loss"] = await handle.pool.run(queries.data_loss_count)
        except ApiError:
            entry["data_loss"] = None
        experiments.append(entry)
    stats = state.cache.stats
    disk = state.tiers.disk if state.tiers is not None else None
    return json_response(
        {
            "status": "degraded" if degraded else "ok",
            "version": __version__,
            "uptime_seconds": round(time.time() - state.started, 3),
            "cache": {
                "entries": len(state.cache),
                "bytes": state.cache.bytes,
                "hits": stats.hits,
                "misses": stats.misses,
                "hit_rate": round(stats.hit_rate, 4),
                "tiers": {
                    "memory": _tier_stats(stats),
                    "disk": None if disk is None else _tier_stats(disk.stats, disk.errors),
                },
            },
            "experiments": experiments,
        }
    )


async def list_experiments(request: Request) -> Response:
    """``[{"id", "name", "logdir", "creation_time"}]``."""
    check_params(request, ())
    out = []
    for handle in state_of(request).experiments.values():
        try:
            rows = await handle.pool.run(queries.experiments)
        except ApiError:
            continue
        if rows:
            out.append(
                {
                    "id": handle.spec.name,
                    "name": handle.spec.name,
                    "logdir": rows[0].logdir,
                    "creation_time": rows[0].creation_time,
                }
            )
    return json_response(out)


async def list_plugins(request: Request) -> Response:
    """``{PLUGIN: [DATA_CLASS, ...]}`` of the experiment's series."""
    handle = _checked(request, EXPERIMENT_PARAMS)
    exp_id = await experiment_id(handle)
    found = await handle.pool.run(lambda c: queries.plugins(c, exp_id))
    return json_response(
        {plugin: [DataClass(dc).label for dc in classes] for plugin, classes in found.items()}
    )


async def list_runs(request: Request) -> Response:
    """``[{"name", "start_time"}]`` in TensorBoard's order: start time, then name."""
    handle = _checked(request, EXPERIMENT_PARAMS)
    exp_id = await experiment_id(handle)
    generation = await handle.pool.run(queries.generation)

    def build(c: apsw.Connection) -> bytes:
        return json_bytes([asdict(r) for r in queries.runs(c, exp_id)])

    key = ("runs", handle.spec.name, handle.pool.swaps, generation)
    return await respond_cached(request, handle, key, build, "application/json")


def _tier_stats(stats: CacheStats, errors: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "hits": stats.hits,
        "misses": stats.misses,
        "hit_rate": round(stats.hit_rate, 4),
    }
    if errors is not None:
        out["errors"] = errors
    return out


async def _open_disk_tier(directory: Path | None, max_bytes: int) -> DiskTier | None:
    """The disk tier, or None (none asked for, or it cannot be opened: memory only)."""
    if directory is None:
        return None
    try:
        return await run_in_threadpool(DiskTier, directory, max_bytes)
    except Exception as exc:
        log.warning("disk cache %s cannot be opened (%s): caching in memory only", directory, exc)
        return None


def _checked(request: Request, allowed: frozenset[str]) -> ExperimentHandle:
    check_params(request, allowed)
    return experiment_from(request)
