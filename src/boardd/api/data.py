"""The generic data API (design doc 000): list metadata and get values for scalars, tensors
and blob sequences, and blob reads — answered from the store through the response cache."""

from __future__ import annotations

import base64
import csv
import io
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import apsw
import numpy as np
import numpy.typing as npt
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from boardd.api.common import (
    AppState,
    ExperimentHandle,
    cached_reply,
    check_params,
    experiment_from,
    experiment_id,
    finite_or_text,
    json_bytes,
    respond_cached,
    state_of,
)
from boardd.api.errors import ApiError
from boardd.reader.tensors import decode_tensor, dtype_name
from boardd.reader.types import DataClass
from boardd.store import queries
from boardd.store.blobs import blob_size, iter_blob
from boardd.store.connection import open_reader
from boardd.store.errors import BlobNotFoundError, StoreError, StoreOpenError
from boardd.store.reservoir import step_priorities

#: At most this many (run, tag) pairs in one request.
MAX_SERIES_PER_REQUEST = 10_000
#: At most this many points in one answer, by kind (runs × tags × samples).
MAX_POINTS = {"scalars": 5_000_000, "tensors": 100_000, "blob_sequences": 100_000}
#: Downsampling is seeded with a constant: the choice depends only on the set of steps.
DOWNSAMPLE_SEED = 0x626F61726464

KINDS: dict[str, tuple[DataClass, ...]] = {
    "scalars": (DataClass.SCALAR,),
    "tensors": (DataClass.TENSOR,),
    "blob_sequences": (DataClass.BLOB_SEQUENCE,),
}
_TABLE = {"scalars": "scalar_points", "tensors": "tensor_points", "blob_sequences": "blob_entries"}
_INT64 = (-(2**63), 2**63 - 1)
#: An integer parameter: ASCII digits only (int() alone would take "1_000", " 7" or "١").
_INTEGER = re.compile(r"[+-]?[0-9]+")

#: The query parameters of ``GET /api/v1/{kind}/list`` (the OpenAPI description lists these).
LIST_PARAMS = frozenset({"experiment", "plugin", "run", "tag"})
#: The query parameters of ``GET /api/v1/{kind}`` for scalars and tensors.
VALUE_PARAMS = LIST_PARAMS | {"step_min", "step_max", "latest", "downsample", "format"}
#: The query parameters of ``GET /api/v1/blob_sequences``.
BLOB_SEQUENCE_VALUE_PARAMS = VALUE_PARAMS | {"index_min", "index_max"}


def allowed_params(kind: str, *, values: bool) -> frozenset[str]:
    """The query parameters a list (``values=False``) or values request of ``kind`` takes."""
    if not values:
        return LIST_PARAMS
    return BLOB_SEQUENCE_VALUE_PARAMS if kind == "blob_sequences" else VALUE_PARAMS


@dataclass(frozen=True, slots=True)
class ReadParams:
    """Validated query parameters of a data request."""

    plugin: str
    runs: tuple[str, ...]
    tags: tuple[str, ...]
    step_min: int | None
    step_max: int | None
    latest: int | None
    downsample: int | None
    index_min: int | None
    index_max: int | None
    fmt: str


def parse_params(request: Request, kind: str, *, values: bool) -> ReadParams:
    """Reads and validates the query string; ApiError(400) says what is wrong."""
    q = request.query_params
    check_params(request, allowed_params(kind, values=values))
    plugin = q.get("plugin")
    if not plugin:
        raise ApiError(400, "plugin= is required (e.g. plugin=scalars)")
    fmt = q.get("format", "json")
    if fmt not in ("json", "csv", "columns") or (fmt != "json" and kind != "scalars"):
        raise ApiError(400, f"format={fmt!r}: use json, or csv/columns for scalars")
    step_min = _int(q.get("step_min"), "step_min", *_INT64)
    step_max = _int(q.get("step_max"), "step_max", *_INT64)
    if step_min is not None and step_max is not None and step_min > step_max:
        raise ApiError(400, f"step_min={step_min} is greater than step_max={step_max}")
    index_min = _int(q.get("index_min"), "index_min", 0, _INT64[1])
    index_max = _int(q.get("index_max"), "index_max", 0, _INT64[1])
    if index_min is not None and index_max is not None and index_min > index_max:
        raise ApiError(400, f"index_min={index_min} is greater than index_max={index_max}")
    return ReadParams(
        plugin=plugin,
        runs=tuple(dict.fromkeys(q.getlist("run"))),
        tags=tuple(dict.fromkeys(q.getlist("tag"))),
        step_min=step_min,
        step_max=step_max,
        latest=_int(q.get("latest"), "latest", 1, _INT64[1]),
        downsample=_int(q.get("downsample"), "downsample", 0, _INT64[1]),
        index_min=index_min,
        index_max=index_max,
        fmt=fmt,
    )


def _int(text: str | None, name: str, lo: int, hi: int) -> int | None:
    if text is None:
        return None
    if not _INTEGER.fullmatch(text):
        raise ApiError(400, f"{name}={text!r}: give a whole number")
    try:
        value = int(text, 10)
    except ValueError:
        raise ApiError(400, f"{name}={text!r}: give a whole number") from None
    if not lo <= value <= hi:
        raise ApiError(400, f"{name}={value}: give a number from {lo} to {hi}")
    return value


def downsample_indices(steps: npt.NDArray[np.int64], k: int) -> npt.NDArray[np.intp]:
    """Indices (ascending) of at most ``k`` points: the last one, and the ``k - 1`` others of
    lowest seeded priority. The choice depends only on the set of steps, so series that share
    steps keep the same steps."""
    n = int(steps.shape[0])
    if k >= n:
        return np.arange(n)
    if k <= 0:
        return np.arange(0)
    if k == 1:
        return np.array([n - 1])
    priorities = step_priorities(DOWNSAMPLE_SEED, steps[:-1])
    chosen = np.argpartition(priorities, k - 2)[: k - 1]
    return np.sort(np.append(chosen, n - 1))


def _check_size(
    kind: str, series: list[queries.SeriesInfo], params: ReadParams, c: apsw.Connection
) -> None:
    if len(series) > MAX_SERIES_PER_REQUEST:
        raise ApiError(
            413,
            f"{len(series)} series match; at most {MAX_SERIES_PER_REQUEST} per request: "
            "name runs with run= and tags with tag=",
        )
    bound = (
        min(v for v in (params.latest, params.downsample, None) if v is not None)
        if (params.latest is not None or params.downsample is not None)
        else None
    )

    def count(s: queries.SeriesInfo) -> int:
        return queries.point_count(
            c, _TABLE[kind], s.id, step_min=params.step_min, step_max=params.step_max
        )

    # Capacities, latest= and downsample= are cheap upper bounds; short series and step
    # ranges make them overcount, so the points are counted before refusing.
    uppers = [min((v for v in (s.capacity, bound) if v is not None), default=None) for s in series]
    total = sum(count(s) if u is None else u for s, u in zip(series, uppers, strict=True))
    if total > MAX_POINTS[kind] and any(u is not None for u in uppers):
        total = sum(
            count(s) if u is None else min(u, count(s)) for s, u in zip(series, uppers, strict=True)
        )
    if total > MAX_POINTS[kind]:
        raise ApiError(
            413,
            f"this request could return {total} points (runs × tags × samples); the limit is "
            f"{MAX_POINTS[kind]}: add downsample=, latest=, step_min/step_max, or fewer "
            "run= / tag=",
        )


async def list_metadata(request: Request) -> Response:
    """``GET /api/v1/{kind}/list``: ``{RUN: {TAG: {max_step, max_wall_time, plugin_name,
    plugin_content, display_name, description[, max_length]}}}``."""
    kind = _kind(request)
    handle = experiment_from(request)
    hit, fast = cached_reply(request, handle)
    if hit is not None:
        return hit
    params = parse_params(request, kind, values=False)
    exp_id = await experiment_id(handle)
    generation = await handle.pool.run(queries.generation)
    key = ("list", handle.spec.name, handle.pool.swaps, kind, params, generation)

    def build(c: apsw.Connection) -> bytes:
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for s in queries.list_series(
            c, exp_id, KINDS[kind], params.plugin, params.runs, params.tags
        ):
            entry: dict[str, Any] = {
                "max_step": s.last_step,
                "max_wall_time": s.last_wall_time,
                "plugin_name": s.plugin_name,
                "plugin_content": base64.b64encode(s.plugin_content).decode("ascii"),
                "display_name": s.display_name,
                "description": s.description,
            }
            if kind == "blob_sequences":
                entry["max_length"] = s.max_length
            out.setdefault(s.run, {})[s.tag] = entry
        return json_bytes(out)

    return await respond_cached(request, handle, key, build, "application/json", alias=fast)


async def read_values(request: Request) -> Response:
    """``GET /api/v1/{kind}``: ``{RUN: {TAG: [datum, ...]}}`` sorted by step."""
    kind = _kind(request)
    handle = experiment_from(request)
    hit, fast = cached_reply(request, handle)
    if hit is not None:
        return hit
    params = parse_params(request, kind, values=True)
    exp_id = await experiment_id(handle)

    def lookup(c: apsw.Connection) -> list[queries.SeriesInfo]:
        series = queries.list_series(
            c, exp_id, KINDS[kind], params.plugin, params.runs, params.tags
        )
        _check_size(kind, series, params, c)
        return series

    series = await handle.pool.run(lookup)
    key = (
        "values",
        handle.spec.name,
        handle.pool.swaps,
        kind,
        params,
        tuple((s.id, s.generation) for s in series),
    )
    media = {"csv": "text/csv; charset=utf-8"}.get(params.fmt, "application/json")

    def build(c: apsw.Connection) -> bytes:
        if kind == "scalars":
            return _scalars(c, series, params)
        if kind == "tensors":
            return _tensors(c, series, params)
        return _blob_sequences(c, handle, series, params)

    # Downsampled tensor reads decode and re-encode every kept tensor (histograms above all):
    # the costliest answers to build so far, so the disk tier keeps them across processes.
    expensive = kind == "tensors" and params.downsample is not None
    return await respond_cached(request, handle, key, build, media, expensive=expensive, alias=fast)


def _kind(request: Request) -> str:
    kind = str(request.path_params["kind"])
    if kind not in KINDS:
        raise ApiError(404, f"no data kind {kind!r}; use scalars, tensors or blob_sequences")
    return kind


def _pick(steps: npt.NDArray[np.int64], params: ReadParams) -> npt.NDArray[np.intp] | None:
    if params.downsample is None:
        return None
    return downsample_indices(steps, params.downsample)


def _scalars(c: apsw.Connection, series: list[queries.SeriesInfo], params: ReadParams) -> bytes:
    columns: dict[str, dict[str, tuple[Any, Any, Any]]] = {}
    for s in series:
        steps, walls, values = queries.scalar_columns(
            c, s.id, step_min=params.step_min, step_max=params.step_max, latest=params.latest
        )
        chosen = _pick(steps, params)
        if chosen is not None:
            steps, walls, values = steps[chosen], walls[chosen], values[chosen]
        columns.setdefault(s.run, {})[s.tag] = (steps, walls, values)
    if params.fmt == "csv":
        return _csv(columns)
    if params.fmt == "columns":
        return json_bytes(
            {
                run: {
                    tag: {
                        "step": st.tolist(),
                        "wall_time": wt.tolist(),
                        "value": _json_floats(va),
                    }
                    for tag, (st, wt, va) in tags.items()
                }
                for run, tags in columns.items()
            }
        )
    return json_bytes(
        {
            run: {
                tag: [
                    {"step": a, "wall_time": b, "value": v}
                    for a, b, v in zip(st.tolist(), wt.tolist(), _json_floats(va), strict=True)
                ]
                for tag, (st, wt, va) in tags.items()
            }
            for run, tags in columns.items()
        }
    )


def _json_floats(values: npt.NDArray[np.float64]) -> list[Any]:
    listed: list[Any] = values.tolist()
    if not np.isfinite(values).all():
        listed = [finite_or_text(v) for v in listed]
    return listed


def _csv(columns: dict[str, dict[str, tuple[Any, Any, Any]]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "tag", "step", "wall_time", "value"])
    for run, tags in columns.items():
        for tag, (st, wt, va) in tags.items():
            for step, wall, value in zip(st.tolist(), wt.tolist(), va.tolist(), strict=True):
                writer.writerow([run, tag, step, repr(wall), _csv_float(value)])
    return out.getvalue().encode("utf-8")


def _csv_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


_Row = TypeVar("_Row", queries.StoredTensor, queries.StoredBlobStep)


def _downsampled(rows: list[_Row], params: ReadParams) -> list[_Row]:
    """The rows ``downsample=`` keeps (all of them without it)."""
    steps = np.fromiter((r.step for r in rows), dtype=np.int64, count=len(rows))
    chosen = _pick(steps, params)
    return rows if chosen is None else [rows[i] for i in chosen.tolist()]


def _tensors(c: apsw.Connection, series: list[queries.SeriesInfo], params: ReadParams) -> bytes:
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for s in series:
        rows = queries.tensor_rows(
            c, s.id, step_min=params.step_min, step_max=params.step_max, latest=params.latest
        )
        rows = _downsampled(rows, params)
        out.setdefault(s.run, {})[s.tag] = [
            {
                "step": r.step,
                "wall_time": r.wall_time,
                "dtype": dtype_name(r.dtype),
                "shape": list(r.shape),
                "values": _tensor_values(r),
            }
            for r in rows
        ]
    return json_bytes(out)


def _tensor_values(row: queries.StoredTensor) -> Any:
    try:
        values = decode_tensor(row.dtype, row.shape, row.content)
    except ValueError as exc:
        return {"error": str(exc)}
    if isinstance(values, list):
        return [_text_or_base64(v) for v in values]
    if values.dtype.kind == "c":
        values = np.stack([values.real, values.imag], axis=-1)
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        return np.vectorize(finite_or_text, otypes=[object])(values).tolist()
    return values.tolist()


def _text_or_base64(value: bytes) -> Any:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def blob_key(experiment: str, store: str, blob_id: int) -> str:
    """An opaque, URL-safe key for a blob (no path in it). It names the store file too, so a
    key handed out before a store was rebuilt never names another blob (browsers cache
    blobs for a long time)."""
    return f"{experiment}~{store[:12]}.{blob_id}"


def parse_blob_key(key: str) -> tuple[str, str, int] | None:
    """(experiment, store id prefix, blob id) of a key, or None if it is not one of ours."""
    experiment, sep, rest = key.rpartition("~")
    store, dot, id_text = rest.partition(".")
    if not sep or not dot or not store.isascii() or not store.isalnum():
        return None
    if not (id_text.isascii() and id_text.isdigit()) or len(id_text) > 18:
        return None
    return experiment, store, int(id_text)


def _blob_sequences(
    c: apsw.Connection,
    handle: ExperimentHandle,
    series: list[queries.SeriesInfo],
    params: ReadParams,
) -> bytes:
    store = queries.store_id(c)
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for s in series:
        rows = queries.blob_sequence_rows(
            c,
            s.id,
            step_min=params.step_min,
            step_max=params.step_max,
            latest=params.latest,
            index_min=params.index_min,
            index_max=params.index_max,
        )
        rows = _downsampled(rows, params)
        out.setdefault(s.run, {})[s.tag] = [
            {
                "step": r.step,
                "wall_time": r.wall_time,
                "blobs": [blob_key(handle.spec.name, store, b) for _, b in r.blobs],
            }
            for r in rows
        ]
    return json_bytes(out)


_SNIFF = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"fLaC", "audio/flac"),
    (b"OggS", "audio/ogg"),
    (b"ID3", "audio/mpeg"),
)


def sniff(head: bytes) -> str:
    """A content type from a blob's first bytes (application/octet-stream if unknown)."""
    for magic, media in _SNIFF:
        if head.startswith(magic):
            return media
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return "application/octet-stream"


async def read_blob(request: Request) -> Response:
    """``GET /api/v1/blob/{key}``: the blob's bytes, streamed chunk by chunk."""
    check_params(request, ())
    state: AppState = state_of(request)
    parsed = parse_blob_key(str(request.path_params["key"]))
    handle = state.experiments.get(parsed[0]) if parsed is not None else None
    if parsed is None or handle is None:
        raise ApiError(404, "no such blob")
    _, store, blob_id = parsed

    def open_stream() -> tuple[int, bytes, Iterator[bytes], apsw.Connection]:
        # A connection of its own: the stream holds one snapshot for as long as the client
        # reads, and must not pin the snapshot of other requests' connections.
        try:
            c = open_reader(handle.spec.db)
        except StoreOpenError as exc:
            raise ApiError(503, f"the store is not ready yet: {exc}") from exc
        try:
            if not queries.store_id(c).startswith(store):
                raise ApiError(404, "no such blob in this store: it was rebuilt; list again")
            size = blob_size(c, blob_id)
            if size is None:
                raise ApiError(404, "no such blob")
            chunks = iter_blob(c, blob_id)
            first = next(chunks, b"")
        except BaseException:
            c.close()
            raise
        return size, first, chunks, c

    try:
        size, first, chunks, connection = await run_in_threadpool(open_stream)
    except BlobNotFoundError:
        raise ApiError(404, "no such blob") from None
    except StoreError as exc:
        raise ApiError(500, f"cannot read blob: {exc}") from exc

    def body() -> Iterator[bytes]:
        try:
            if first:
                yield first
            yield from chunks
        finally:
            connection.close()

    return StreamingResponse(
        body(),
        media_type=sniff(first[:16]),
        headers={"content-length": str(size), "cache-control": "private, max-age=31536000"},
    )
