"""The generic data API (design doc 000) over HTTP: list metadata and read values of scalars,
tensors and blob sequences, and read blobs — thin encoders over :mod:`boardd.data`, answered
through the response cache."""

from __future__ import annotations

import base64
import io
import re
from typing import Any
from urllib.parse import quote

import apsw
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from boardd.api.common import (
    ExperimentHandle,
    cached_reply,
    experiment_from,
    experiment_id,
    json_bytes,
    respond_cached,
    state_of,
)
from boardd.api.routes import Query, RouteDef
from boardd.data import experiments
from boardd.data import series as data_series
from boardd.data.blobs import BlobStream, open_blob, parse_blob_key, unknown_key
from boardd.data.kinds import BLOB_SEQUENCES, SCALARS, TENSORS, Kind
from boardd.data.series import Bounds, Selection, SeriesInfo
from boardd.data.values import float_text, json_floats


def _kind(route: RouteDef) -> Kind:
    assert route.kind is not None, route.path
    return route.kind


def _selection(query: Query) -> Selection:
    plugin = query.text("plugin")
    assert plugin is not None  # required by the route table
    return Selection(plugin, query.texts("run"), query.texts("tag"))


def _bounds(query: Query) -> Bounds:
    return Bounds(
        step_min=query.integer("step_min"),
        step_max=query.integer("step_max"),
        latest=query.integer("latest"),
        downsample=query.integer("downsample"),
        index_min=query.integer("index_min"),
        index_max=query.integer("index_max"),
        downsample_by=query.text("downsample_by") or "uniform",
    )


async def list_series(request: Request, query: Query, route: RouteDef) -> Response:
    """``GET /api/v1/{kind}/list``: ``{RUN: {TAG: {max_step, max_wall_time, plugin_name,
    plugin_content, display_name, description[, max_length]}}}``."""
    kind = _kind(route)
    handle = experiment_from(request)
    hit, fast = cached_reply(request, handle)
    if hit is not None:
        return hit
    selection = _selection(query)
    exp_id = await experiment_id(handle)
    generation = await handle.pool.run(experiments.generation)
    key = ("list", handle.spec.name, kind.name, selection)
    version = (handle.pool.swaps, generation)

    def build(c: apsw.Connection) -> bytes:
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for s in data_series.list_series(c, exp_id, kind, selection):
            out.setdefault(s.run, {})[s.tag] = _metadata(kind, s)
        return json_bytes(out)

    return await respond_cached(
        request, handle, key, version, build, "application/json", alias=fast
    )


def _metadata(kind: Kind, s: SeriesInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "max_step": s.last_step,
        "max_wall_time": s.last_wall_time,
        "plugin_name": s.plugin_name,
        "plugin_content": base64.b64encode(s.plugin_content).decode("ascii"),
        "display_name": s.display_name,
        "description": s.description,
    }
    if kind is BLOB_SEQUENCES:
        entry["max_length"] = s.max_length
    return entry


async def read_series(request: Request, query: Query, route: RouteDef) -> Response:
    """``GET /api/v1/{kind}``: ``{RUN: {TAG: [datum, ...]}}`` sorted by step (or columns, or
    CSV for scalars)."""
    kind = _kind(route)
    handle = experiment_from(request)
    fmt = query.text("format") or "json"
    hit, fast = cached_reply(request, handle)
    if hit is not None:
        return _named(hit, handle, kind, fmt)
    selection = _selection(query)
    bounds = _bounds(query)
    exp_id = await experiment_id(handle)

    def lookup(c: apsw.Connection) -> list[SeriesInfo]:
        found = data_series.list_series(c, exp_id, kind, selection)
        data_series.check_size(c, kind, found, bounds)
        return found

    series = await handle.pool.run(lookup)
    key = ("values", handle.spec.name, kind.name, selection, bounds, fmt)
    version = (handle.pool.swaps, tuple((s.id, s.generation) for s in series))
    media = {"csv": "text/csv; charset=utf-8"}.get(fmt, "application/json")

    def build(c: apsw.Connection) -> bytes:
        if kind is SCALARS:
            return _scalars(c, series, bounds, fmt)
        if kind is TENSORS:
            return _tensors(c, series, bounds)
        return _blob_sequences(c, handle, series, bounds)

    # Downsampled tensor reads decode and re-encode every kept tensor (histograms above all):
    # the costliest answers to build so far, so the disk tier keeps them across processes.
    expensive = kind is TENSORS and bounds.downsample is not None
    response = await respond_cached(
        request, handle, key, version, build, media, expensive=expensive, alias=fast
    )
    return _named(response, handle, kind, fmt)


#: What an ASCII file name keeps (the rest becomes "_"; the exact name goes in filename*).
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


def _named(response: Response, handle: ExperimentHandle, kind: Kind, fmt: str) -> Response:
    """A CSV answer with a file name to save it under (RFC 6266: an ASCII ``filename`` any
    browser takes, and the exact name UTF-8 encoded in ``filename*``)."""
    if fmt == "csv" and response.status_code == 200:
        name = f"{handle.spec.name}-{kind.name}.csv"
        ascii_name = _UNSAFE_FILENAME.sub("_", name)
        response.headers["content-disposition"] = (
            f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"
        )
    return response


def _scalars(c: apsw.Connection, series: list[SeriesInfo], bounds: Bounds, fmt: str) -> bytes:
    columns = data_series.read_scalars(c, series, bounds)
    if fmt == "csv":
        return _csv(columns)
    out: dict[str, dict[str, Any]] = {}
    for col in columns:
        values = json_floats(col.values)
        if fmt == "columns":
            entry: Any = {
                "step": col.steps.tolist(),
                "wall_time": col.wall_times.tolist(),
                "value": values,
            }
        else:
            entry = [
                {"step": a, "wall_time": b, "value": v}
                for a, b, v in zip(col.steps.tolist(), col.wall_times.tolist(), values, strict=True)
            ]
        out.setdefault(col.run, {})[col.tag] = entry
    return json_bytes(out)


def _csv(columns: list[data_series.ScalarColumns]) -> bytes:
    out = io.StringIO()
    import csv  # loaded by the first CSV answer (off `boardd serve`'s start)

    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "tag", "step", "wall_time", "value"])
    for col in columns:
        for step, wall, value in zip(
            col.steps.tolist(), col.wall_times.tolist(), col.values.tolist(), strict=True
        ):
            writer.writerow([col.run, col.tag, step, repr(wall), float_text(value)])
    return out.getvalue().encode("utf-8")


def _tensors(c: apsw.Connection, series: list[SeriesInfo], bounds: Bounds) -> bytes:
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for s in data_series.read_tensors(c, series, bounds):
        out.setdefault(s.run, {})[s.tag] = [
            {
                "step": p.step,
                "wall_time": p.wall_time,
                "dtype": p.dtype,
                "shape": list(p.shape),
                "values": p.value,
            }
            for p in s.points
        ]
    return json_bytes(out)


def _blob_sequences(
    c: apsw.Connection, handle: ExperimentHandle, series: list[SeriesInfo], bounds: Bounds
) -> bytes:
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for s in data_series.read_blob_sequences(c, handle.spec.name, series, bounds):
        out.setdefault(s.run, {})[s.tag] = [
            {"step": p.step, "wall_time": p.wall_time, "blobs": list(p.keys)} for p in s.steps
        ]
    return json_bytes(out)


async def read_blob(request: Request, query: Query, route: RouteDef) -> Response:
    """``GET /api/v1/blob/{key}``: the blob's bytes, streamed chunk by chunk."""
    key = str(request.path_params["key"])
    parsed = parse_blob_key(key)
    handle = state_of(request).experiments.get(parsed.experiment) if parsed else None
    if handle is None:
        raise unknown_key(key)
    stores = handle.pool.stores
    blob: BlobStream = await run_in_threadpool(open_blob, handle.spec.db, key, stores)
    return StreamingResponse(
        blob.chunks(),
        media_type=blob.media_type,
        headers={"content-length": str(blob.size), "cache-control": "private, max-age=31536000"},
    )
