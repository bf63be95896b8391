"""The server-wide routes: health, the OpenAPI description, experiments, plugins, runs and data
loss — thin encoders over :mod:`boardd.data`."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from boardd import __version__
from boardd.api.app_state import experiment_from, experiment_id, state_of, tiers_of
from boardd.api.openapi import SPEC
from boardd.api.replies import json_bytes, json_response, respond_cached
from boardd.api.routes import Query, RouteDef
from boardd.cache import CacheStats
from boardd.data.errors import DataError


async def health(request: Request, query: Query, route: RouteDef) -> Response:
    """Liveness and ingest state of every experiment: state, lag, data-loss count, cache."""
    state = state_of(request)
    experiments = []
    degraded = False
    for handle in state.experiments.values():
        entry: dict[str, Any] = {"name": handle.spec.name, "logdir": str(handle.spec.logdir)}
        if handle.status is not None:
            entry.update(handle.status())
            degraded = degraded or entry.get("state") in ("failed", "retrying", "damaged")
        try:
            entry["data_loss"] = await run_in_threadpool(handle.provider.data_loss_count)
        except DataError:
            entry["data_loss"] = None
        experiments.append(entry)
    stats = state.cache.stats
    tiers = await tiers_of(state)
    disk = tiers.disk if tiers is not None else None
    return json_response(
        {
            "status": "degraded" if degraded else "ok",
            "version": __version__,
            "uptime_seconds": round(time.time() - state.started, 3),
            "lineage": None if state.lineage is None else state.lineage.status(),
            "answer_workers": None if state.workers is None else state.workers.status(),
            "cache": {
                "entries": len(state.cache),
                "bytes": state.cache.bytes,
                "hits": stats.hits,
                "misses": stats.misses,
                "replaced": stats.replaced,
                "hit_rate": round(stats.hit_rate, 4),
                "tiers": {
                    "memory": _tier_stats(stats),
                    "disk": None if disk is None else _tier_stats(disk.stats, disk.errors),
                },
                "columns": state.column_cache.stats._asdict(),
            },
            "experiments": experiments,
        }
    )


async def serve_openapi(request: Request, query: Query, route: RouteDef) -> Response:
    """``GET /api/v1/openapi.json``: the description generated from the route table."""
    return json_response(SPEC)


async def list_experiments(request: Request, query: Query, route: RouteDef) -> Response:
    """``[{"id", "name", "logdir", "creation_time"}]``."""
    out = []
    for handle in state_of(request).experiments.values():
        try:
            row = await run_in_threadpool(handle.provider.experiment)
        except DataError:
            continue
        if row is not None:
            out.append(
                {
                    "id": handle.spec.name,
                    "name": handle.spec.name,
                    "logdir": row.logdir,
                    "creation_time": row.creation_time,
                }
            )
    return json_response(out)


async def list_plugins(request: Request, query: Query, route: RouteDef) -> Response:
    """``{PLUGIN: [DATA_CLASS, ...]}`` of the experiment's series, and ``"projector": []`` when
    its local logdir has embeddings to show (files beside the event files, not series)."""
    handle = experiment_from(request)
    exp_id = await experiment_id(handle)
    provider = handle.provider
    logdir = handle.spec.logdir

    def build() -> dict[str, list[str]]:
        found = provider.plugins(exp_id)
        if isinstance(logdir, Path):
            from boardd.plugins.projector import data as projector  # numpy: off the start path

            runs = [r.name for r in provider.runs(exp_id)]
            if projector.find_configs(logdir, runs, shapes=False):
                found["projector"] = []
        return found

    return json_response(await run_in_threadpool(build))


async def list_runs(request: Request, query: Query, route: RouteDef) -> Response:
    """``[{"name", "start_time"}]`` in TensorBoard's order: start time, then name."""
    handle = experiment_from(request)
    exp_id = await experiment_id(handle)
    provider = handle.provider
    generation = await run_in_threadpool(provider.generation)

    def build() -> bytes:
        return json_bytes([r._asdict() for r in provider.runs(exp_id)])

    key = ("runs", handle.spec.name)
    version = (provider.swaps, generation)
    return await respond_cached(request, handle, key, version, build, "application/json")


async def list_data_loss(request: Request, query: Query, route: RouteDef) -> Response:
    """``[{"run", "file", "offset", "length", "reason", "time"}]`` in file, offset order."""
    handle = experiment_from(request)
    exp_id = await experiment_id(handle)
    runs = query.texts("run")
    provider = handle.provider
    generation = await run_in_threadpool(provider.generation)

    def build() -> bytes:
        return json_bytes([asdict(r) for r in provider.data_loss(exp_id, runs)])

    key = ("data_loss", handle.spec.name, runs)
    version = (provider.swaps, generation)
    return await respond_cached(request, handle, key, version, build, "application/json")


def _tier_stats(stats: CacheStats, errors: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "hits": stats.hits,
        "misses": stats.misses,
        "hit_rate": round(stats.hit_rate, 4),
    }
    if errors is not None:
        out["errors"] = errors
    return out
