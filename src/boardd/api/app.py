"""The Starlette application: routes, lifespan (stores and read pools as typed state), errors."""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import apsw
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from boardd import __version__
from boardd.api.errors import (
    ApiError,
    handle_api_error,
    handle_http_exception,
    handle_unexpected,
)
from boardd.api.readers import ReadPool
from boardd.config import ExperimentSpec
from boardd.store import queries


@dataclass(slots=True)
class ExperimentHandle:
    """What the API knows of one experiment: its store, and (in the daemon) a live status."""

    spec: ExperimentSpec
    status: Callable[[], Mapping[str, Any]] | None = None
    pool: ReadPool = field(init=False)

    def __post_init__(self) -> None:
        self.pool = ReadPool(self.spec.db)


@dataclass(slots=True)
class AppState:
    """Typed application state, yielded by the lifespan (no module globals)."""

    experiments: dict[str, ExperimentHandle]
    started: float


def create_app(
    experiments: Sequence[ExperimentSpec],
    *,
    status: Mapping[str, Callable[[], Mapping[str, Any]]] | None = None,
) -> Starlette:
    """The boardd HTTP app over these experiments' stores.

    ``status`` maps an experiment name to a function giving its live ingest status (the
    daemon passes its runners'); without it the app serves the stores as they are.
    """
    handles = {
        spec.name: ExperimentHandle(spec, (status or {}).get(spec.name)) for spec in experiments
    }

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, AppState]]:
        state = AppState(handles, time.time())
        try:
            yield {"boardd": state}
        finally:
            for handle in handles.values():
                handle.pool.close()

    routes = [
        Route("/api/v1/health", health),
        Route("/api/v1/experiments", list_experiments),
        Route("/api/v1/runs", list_runs),
        Route("/api/v1/scalars", read_scalars),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            ApiError: handle_api_error,
            HTTPException: handle_http_exception,
            Exception: handle_unexpected,
        },
    )


def _state(request: Request) -> AppState:
    state = request.state.boardd
    assert isinstance(state, AppState)
    return state


def json_response(data: Any, status: int = 200) -> Response:
    """JSON with NaN and ±Inf as the strings TensorBoard uses ("NaN", "Infinity", ...)."""
    body = json.dumps(data, separators=(",", ":"), allow_nan=False, default=str)
    return Response(body, status_code=status, media_type="application/json")


def finite_or_text(value: float) -> float | str:
    """A float JSON can carry, or TensorBoard's spelling of a non-finite one."""
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _experiment(request: Request) -> ExperimentHandle:
    state = _state(request)
    name = request.query_params.get("experiment")
    if name is None:
        if not state.experiments:
            raise ApiError(404, "this server has no experiments")
        return next(iter(state.experiments.values()))
    handle = state.experiments.get(name)
    if handle is None:
        known = ", ".join(sorted(state.experiments)) or "(none)"
        raise ApiError(404, f"no experiment {name!r}; known: {known}")
    return handle


async def _experiment_id(handle: ExperimentHandle) -> int:
    def query(c: apsw.Connection) -> int | None:
        rows = queries.experiments(c)
        for row in rows:
            if row.name == handle.spec.name:
                return row.id
        return rows[0].id if rows else None

    found = await handle.pool.run(query)
    if found is None:
        raise ApiError(503, f"experiment {handle.spec.name!r} has no data yet")
    return found


async def health(request: Request) -> Response:
    """Liveness and ingest state of every experiment: state, lag, data-loss count."""
    state = _state(request)
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
    return json_response(
        {
            "status": "degraded" if degraded else "ok",
            "version": __version__,
            "uptime_seconds": round(time.time() - state.started, 3),
            "experiments": experiments,
        }
    )


async def list_experiments(request: Request) -> Response:
    """``[{"id", "name", "logdir", "creation_time"}]``."""
    out = []
    for handle in _state(request).experiments.values():
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


async def list_runs(request: Request) -> Response:
    """``[{"name", "start_time"}]`` sorted by name."""
    handle = _experiment(request)
    experiment_id = await _experiment_id(handle)
    rows = await handle.pool.run(lambda c: queries.runs(c, experiment_id))
    return json_response([asdict(r) for r in rows])


async def read_scalars(request: Request) -> Response:
    """``{RUN: {TAG: [{"step", "wall_time", "value"}]}}`` for the run × tag cross product."""
    handle = _experiment(request)
    params = request.query_params
    plugin = params.get("plugin", "scalars")
    if plugin != "scalars":
        raise ApiError(400, f"plugin {plugin!r}: this route reads plugin=scalars")
    run_names = params.getlist("run")
    tags = params.getlist("tag")
    if not run_names or not tags:
        raise ApiError(400, "give at least one run= and one tag=")
    latest = _positive_int(params.get("latest"), "latest")
    experiment_id = await _experiment_id(handle)

    def query(c: apsw.Connection) -> dict[str, dict[str, list[dict[str, Any]]]]:
        out: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for run in run_names:
            for tag in tags:
                points = queries.scalar_points(c, experiment_id, run, tag, latest=latest)
                if points is None:
                    continue
                out.setdefault(run, {})[tag] = [
                    {"step": s, "wall_time": w, "value": finite_or_text(v)} for s, w, v in points
                ]
        return out

    return json_response(await handle.pool.run(query))


def _positive_int(text: str | None, name: str) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ApiError(400, f"{name}={text!r}: give a whole number") from None
    if value < 1:
        raise ApiError(400, f"{name}={value}: give a number of at least 1")
    return value
