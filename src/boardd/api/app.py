"""The Starlette application: the route table, the lifespan (stores, read pools, cache)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import apsw
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from boardd import __version__
from boardd.api import data
from boardd.api.auth import Guard
from boardd.api.common import (
    AppState,
    ExperimentHandle,
    experiment_from,
    experiment_id,
    json_bytes,
    json_response,
    respond_cached,
    state_of,
)
from boardd.api.errors import ApiError, handle_api_error, handle_http_exception, handle_unexpected
from boardd.cache import DEFAULT_MAX_BYTES, ResponseCache
from boardd.config import ExperimentSpec
from boardd.reader.types import DataClass
from boardd.store import queries


def create_app(
    experiments: Sequence[ExperimentSpec],
    *,
    status: Mapping[str, Callable[[], Mapping[str, Any]]] | None = None,
    cache_bytes: int = DEFAULT_MAX_BYTES,
    token: str | None = None,
) -> Starlette:
    """The boardd HTTP app over these experiments' stores.

    ``status`` maps an experiment name to a function giving its live ingest status (the
    daemon passes its runners'); without it the app serves the stores as they are. With a
    ``token``, every request must carry ``Authorization: Bearer <token>``.
    """
    handles = {
        spec.name: ExperimentHandle(spec, (status or {}).get(spec.name)) for spec in experiments
    }

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, AppState]]:
        state = AppState(handles, ResponseCache(cache_bytes), time.time())
        try:
            yield {"boardd": state}
        finally:
            for handle in handles.values():
                handle.pool.close()

    routes = [
        Route("/api/v1/health", health),
        Route("/api/v1/experiments", list_experiments),
        Route("/api/v1/plugins", list_plugins),
        Route("/api/v1/runs", list_runs),
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
            },
            "experiments": experiments,
        }
    )


async def list_experiments(request: Request) -> Response:
    """``[{"id", "name", "logdir", "creation_time"}]``."""
    out = []
    for handle in state_of(request).experiments.values():
        try:
            rows = await handle.pool.run(queries.experiments)
        except ApiError:
            continue
        for row in rows:
            if row.name == handle.spec.name:
                out.append(
                    {
                        "id": row.name,
                        "name": row.name,
                        "logdir": row.logdir,
                        "creation_time": row.creation_time,
                    }
                )
    return json_response(out)


async def list_plugins(request: Request) -> Response:
    """``{PLUGIN: [DATA_CLASS, ...]}`` of the experiment's series."""
    handle = experiment_from(request)
    exp_id = await experiment_id(handle)
    found = await handle.pool.run(lambda c: queries.plugins(c, exp_id))
    return json_response(
        {plugin: [DataClass(dc).label for dc in classes] for plugin, classes in found.items()}
    )


async def list_runs(request: Request) -> Response:
    """``[{"name", "start_time"}]`` sorted by name (TensorBoard sorts runs by name)."""
    handle = _checked(request, {"experiment"})
    exp_id = await experiment_id(handle)
    generation = await handle.pool.run(queries.generation)

    def build(c: apsw.Connection) -> bytes:
        return json_bytes([asdict(r) for r in queries.runs(c, exp_id)])

    key = ("runs", handle.spec.name, generation)
    return await respond_cached(request, handle, key, build, "application/json")


def _checked(request: Request, allowed: set[str]) -> ExperimentHandle:
    unknown = sorted(set(request.query_params.keys()) - allowed)
    if unknown:
        raise ApiError(400, f"unknown parameter(s) {', '.join(unknown)}")
    return experiment_from(request)
