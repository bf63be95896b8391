"""The generic data API (design doc 000) over HTTP: list metadata and read values of scalars,
tensors and blob sequences, and read blobs — thin encoders over :mod:`boardd.data`, answered
through the response cache."""

from __future__ import annotations

import base64
import io
import itertools
import logging
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from boardd.api import replies, workers
from boardd.api.app_state import ExperimentHandle, experiment_from, experiment_id, state_of
from boardd.api.replies import TooLargeToHold, cached_reply, json_bytes, respond_cached, stream_rest
from boardd.api.routes import Query, RouteDef
from boardd.api.workers import AnswerWorkers
from boardd.cache import make_etag
from boardd.data import series as data_series
from boardd.data.blobs import BlobStream, parse_blob_key, unknown_key
from boardd.data.columns import ColumnCache
from boardd.data.connections import damaged_read, is_damage
from boardd.data.errors import Unavailable
from boardd.data.kinds import BLOB_SEQUENCES, KINDS, SCALARS, TENSORS, Kind
from boardd.data.provider import DataProvider
from boardd.data.series import Bounds, Selection, SeriesInfo
from boardd.data.sqlite_provider import SqliteProvider
from boardd.data.values import float_text, json_floats

log = logging.getLogger(__name__)

T = TypeVar("T")


def _kind(route: RouteDef) -> Kind:
    assert route.kind is not None, route.path
    return route.kind


def _selection(query: Query, route: RouteDef) -> Selection:
    plugin = query.text("plugin")
    if plugin is None:  # not given: the route's default (the route table requires it else)
        plugin = next(p.default for p in route.params if p.name == "plugin")
    assert plugin is not None, route.path
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
    selection = _selection(query, route)
    exp_id = await experiment_id(handle)
    provider = handle.provider
    generation = await run_in_threadpool(provider.generation)
    key = ("list", handle.spec.name, kind.name, selection)
    version = (provider.swaps, generation)

    def build() -> bytes:
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for s in provider.list_series(exp_id, kind, selection):
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
    CSV for scalars). An answer up to :data:`replies.HOLD_BYTES` is built whole and cached; a
    larger one is streamed a block at a time and never held whole (:func:`stream_rest`)."""
    kind = _kind(route)
    handle = experiment_from(request)
    fmt = query.text("format") or "json"
    hit, fast = cached_reply(request, handle)
    if hit is not None:
        return _named(hit, handle, kind, fmt)
    selection = _selection(query, route)
    bounds = _bounds(query)
    exp_id = await experiment_id(handle)
    provider = handle.provider

    def lookup() -> list[SeriesInfo]:
        found = provider.list_series(exp_id, kind, selection)
        provider.check_size(kind, found, bounds)
        return found

    series = await run_in_threadpool(lookup)
    key = ("values", handle.spec.name, kind.name, selection, bounds, fmt)
    version = (provider.swaps, tuple((s.id, s.generation) for s in series))
    media = {"csv": "text/csv; charset=utf-8"}.get(fmt, "application/json")
    pieces = _Pieces(kind, handle.spec.name, series, bounds, fmt)

    def build() -> bytes:
        held: list[bytes] = []
        size = 0
        while (part := pieces.next(provider)) is not None:
            held.append(part)
            size += len(part)
            if size > replies.HOLD_BYTES:
                raise TooLargeToHold(held)
        return b"".join(held)

    # Downsampled tensor reads decode and re-encode every kept tensor (histograms above all):
    # the costliest answers to build so far, so the disk tier keeps them across processes.
    expensive = kind is TENSORS and bounds.downsample is not None
    workers = state_of(request).workers
    elsewhere = None
    if workers is not None and _for_a_worker(kind, series, bounds):

        async def elsewhere() -> bytes | None:
            return await _built_elsewhere(workers, handle, pieces)

    try:
        response = await respond_cached(
            request,
            handle,
            key,
            version,
            build,
            media,
            expensive=expensive,
            alias=fast,
            elsewhere=elsewhere,
        )
    except TooLargeToHold as begun:
        etag = make_etag((handle.store_id, key, version))
        pieces.keep = False

        def block() -> tuple[bytes, bool]:
            parts: list[bytes] = []
            size = 0
            while size < replies.BLOCK_BYTES and (part := pieces.next(provider)) is not None:
                parts.append(part)
                size += len(part)
            return b"".join(parts), pieces.done

        response = stream_rest(request, begun.held, block, media, etag)
    return _named(response, handle, kind, fmt)


#: Bytes a point may take in an answer, at most: a scalar's JSON, a tensor's (a histogram's
#: buckets, a PR curve's thresholds) with room to spare; one larger makes the worker say so.
_POINT_BYTES = {SCALARS.name: 100, TENSORS.name: 4096}


def _for_a_worker(kind: Kind, series: list[SeriesInfo], bounds: Bounds) -> bool:
    """Whether an answer worker builds this answer: many series, downsampled into an answer
    that fits what an answer holds (a larger one is streamed from here, a block at a time, so
    that it is never held whole, by a worker or here)."""
    if kind is BLOB_SEQUENCES or len(series) < 2 or bounds.downsample is None:
        return False
    return bounds.downsample * len(series) * _POINT_BYTES[kind.name] <= replies.HOLD_BYTES


async def _built_elsewhere(
    workers: AnswerWorkers, handle: ExperimentHandle, pieces: _Pieces
) -> bytes | None:
    """The answer of ``pieces`` built by an answer worker; None if it is to be built here (the
    workers are not ready, or failed); :class:`TooLargeToHold` (nothing held) if it is to be
    streamed; 503 if the worker met damage."""
    if not workers.ready():
        return None
    # The kind by its name: a Kind is compared by identity, which a copy does not keep.
    spec = (str(handle.spec.db), pieces.kind.name, pieces.experiment, pieces.series)
    try:
        outcome, body = await workers.run(build_in_worker, *spec, pieces.bounds, pieces.fmt)
    except Exception as exc:  # a lost worker, an error it could not send: built here
        log.warning("answers: a worker could not build an answer (%s): building it here", exc)
        return None
    if outcome == "too_large":
        raise TooLargeToHold([])
    if outcome == "damaged":
        raise damaged_read(handle.spec.db, RuntimeError(body.decode()))
    return body


def build_in_worker(
    db: str,
    kind: str,
    experiment: str,
    series: list[SeriesInfo],
    bounds: Bounds,
    fmt: str,
) -> tuple[str, bytes]:
    """In an answer worker (:mod:`boardd.api.workers`): ``("ok", the answer)``, or
    ``("too_large", b"")`` past :data:`replies.HOLD_BYTES`, or ``("damaged", what the store
    said)``. The worker's providers (one per store, sharing the worker's column cache) live as
    long as the worker."""
    provider = workers.worker_state(db, lambda: SqliteProvider(Path(db), _worker_columns()))
    pieces = _Pieces(KINDS[kind], experiment, series, bounds, fmt)
    held: list[bytes] = []
    size = 0
    try:
        while (part := pieces.next(provider)) is not None:
            held.append(part)
            size += len(part)
            if size > replies.HOLD_BYTES:
                return "too_large", b""
    except Unavailable as exc:
        if exc.__cause__ is None or not is_damage(exc.__cause__):
            raise  # not ready, or shutting down: the daemon builds it
        return "damaged", str(exc.__cause__).encode()
    return "ok", b"".join(held)


def _worker_columns() -> ColumnCache:
    """The worker's one column cache, for every store it reads."""
    return workers.worker_state("columns", ColumnCache)


#: Scalar points encoded at once within a series: a long series is encoded a slice at a time,
#: so that its Python objects (a dict per point) never exist all at once.
SLICE_POINTS = 4096
#: Tensor points decoded and encoded at once within a series (a decoded histogram takes many
#: times its stored bytes).
SLICE_TENSORS = 8


class _Pieces:
    """An answer's bytes a piece at a time: the framing of ``{RUN: {TAG: …}}`` (or CSV's
    header), then each series (a scalar series a slice of points at a time). Each call reads
    what it needs on the connection it is given, so the pieces of one answer may come from
    several worker threads, one call at a time; the whole answer is their concatenation,
    byte for byte what encoding the nested answer at once gives."""

    def __init__(
        self, kind: Kind, experiment: str, series: list[SeriesInfo], bounds: Bounds, fmt: str
    ) -> None:
        self.kind = kind
        self.experiment = experiment
        self.series = series
        self.bounds = bounds
        self.fmt = fmt
        self._next = 0
        self._parts: Iterator[bytes] = iter(())
        self._done = False
        #: Every piece has been given.
        self.done = False
        #: Whether the series read are filed in the column cache: not once the answer is
        #: streamed (every series read once must not evict what charts read again and again).
        self.keep = True
        # A run and tag named twice would be one entry of the nested answer (the last).
        self._unique = len({(s.run, s.tag) for s in series}) == len(series)

    def next(self, provider: DataProvider) -> bytes | None:
        """The next piece, or None once the answer is complete."""
        while True:
            part = next(self._parts, None)
            if part is not None:
                return part
            if self._done:
                self.done = True
                return None
            self._parts = self._series_parts(provider)

    def _series_parts(self, provider: DataProvider) -> Iterator[bytes]:
        i = self._next
        series = self.series
        if not self._unique:
            self._done = True
            return iter((self._whole(provider),))
        if i == len(series):
            self._done = True
            if self.fmt == "csv":
                return iter((_CSV_HEADER,) if not series else ())
            return iter((b"}}" if series else b"{}",))
        self._next = i + 1
        s = series[i]
        if self.fmt == "csv":
            head = _CSV_HEADER if i == 0 else b""
        else:
            tag = json_bytes(s.tag) + b":"
            if i == 0:
                head = b"{" + json_bytes(s.run) + b":{" + tag
            elif series[i - 1].run != s.run:
                head = b"}," + json_bytes(s.run) + b":{" + tag
            else:
                head = b"," + tag
        return itertools.chain((head,) if head else (), self._encoded(provider, s))

    def _encoded(self, provider: DataProvider, s: SeriesInfo) -> Iterator[bytes]:
        kind, bounds = self.kind, self.bounds
        if kind is SCALARS:
            (col,) = provider.read_scalars([s], bounds, keep=self.keep)
            return _scalar_parts(col, self.fmt)
        if kind is TENSORS:
            points = provider.tensor_points(s, bounds)
            return _list_parts(map(_tensor_points, _batches(points, SLICE_TENSORS)))
        (steps,) = provider.read_blob_sequences(self.experiment, [s], bounds)
        return iter((json_bytes(_blob_steps(steps)),))

    def _whole(self, provider: DataProvider) -> bytes:
        kind, series, bounds = self.kind, self.series, self.bounds
        if kind is SCALARS:
            return _scalars(provider, series, bounds, self.fmt)
        if kind is TENSORS:
            return _tensors(provider, series, bounds)
        return _blob_sequences(provider, self.experiment, series, bounds)


_CSV_HEADER = b"run,tag,step,wall_time,value\n"


def _scalar_parts(col: data_series.ScalarColumns, fmt: str) -> Iterator[bytes]:
    """One scalar series encoded a slice of points at a time."""
    n = len(col.steps)
    slices = [(lo, min(n, lo + SLICE_POINTS)) for lo in range(0, n, SLICE_POINTS)]
    if fmt == "csv":
        for lo, hi in slices:
            yield _csv([_slice(col, lo, hi)])[len(_CSV_HEADER) :]
    elif fmt == "columns":
        for i, (name, column) in enumerate(
            (("step", col.steps), ("wall_time", col.wall_times), ("value", col.values))
        ):
            yield (b"{" if i == 0 else b",") + json_bytes(name) + b":"
            yield from _list_parts(
                json_floats(column[lo:hi]) if name == "value" else column[lo:hi].tolist()
                for lo, hi in slices
            )
        yield b"}"
    else:
        yield from _list_parts(_scalar_points(_slice(col, lo, hi)) for lo, hi in slices)


def _list_parts(chunks: Iterable[list[Any]]) -> Iterator[bytes]:
    """A JSON array given as consecutive chunks of its items, encoded chunk by chunk."""
    yield b"["
    first = True
    for chunk in chunks:
        if chunk:
            yield (b"" if first else b",") + json_bytes(chunk)[1:-1]
            first = False
    yield b"]"


def _slice(col: data_series.ScalarColumns, lo: int, hi: int) -> data_series.ScalarColumns:
    return col._replace(
        steps=col.steps[lo:hi], wall_times=col.wall_times[lo:hi], values=col.values[lo:hi]
    )


def _scalar_points(col: data_series.ScalarColumns) -> list[dict[str, Any]]:
    return [
        {"step": a, "wall_time": b, "value": v}
        for a, b, v in zip(
            col.steps.tolist(), col.wall_times.tolist(), json_floats(col.values), strict=True
        )
    ]


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


def _scalars(provider: DataProvider, series: list[SeriesInfo], bounds: Bounds, fmt: str) -> bytes:
    columns = provider.read_scalars(series, bounds)
    if fmt == "csv":
        return _csv(columns)
    out: dict[str, dict[str, Any]] = {}
    for col in columns:
        entry: Any
        if fmt == "columns":
            entry = {
                "step": col.steps.tolist(),
                "wall_time": col.wall_times.tolist(),
                "value": json_floats(col.values),
            }
        else:
            entry = _scalar_points(col)
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


def _batches(items: Iterator[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of ``size`` items (the last one shorter) until ``items`` ends."""
    while batch := list(itertools.islice(items, size)):
        yield batch


def _tensor_points(points: Iterable[data_series.TensorDatum]) -> list[dict[str, Any]]:
    return [
        {
            "step": p.step,
            "wall_time": p.wall_time,
            "dtype": p.dtype,
            "shape": list(p.shape),
            "values": p.value,
        }
        for p in points
    ]


def _tensors(provider: DataProvider, series: list[SeriesInfo], bounds: Bounds) -> bytes:
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for s in provider.read_tensors(series, bounds):
        out.setdefault(s.run, {})[s.tag] = _tensor_points(s.points)
    return json_bytes(out)


def _blob_steps(s: data_series.BlobSequenceSeries) -> list[dict[str, Any]]:
    return [{"step": p.step, "wall_time": p.wall_time, "blobs": list(p.keys)} for p in s.steps]


def _blob_sequences(
    provider: DataProvider, experiment: str, series: list[SeriesInfo], bounds: Bounds
) -> bytes:
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for s in provider.read_blob_sequences(experiment, series, bounds):
        out.setdefault(s.run, {})[s.tag] = _blob_steps(s)
    return json_bytes(out)


async def read_blob(request: Request, query: Query, route: RouteDef) -> Response:
    """``GET /api/v1/blob/{key}``: the blob's bytes, streamed chunk by chunk."""
    key = str(request.path_params["key"])
    parsed = parse_blob_key(key)
    handle = state_of(request).experiments.get(parsed.experiment) if parsed else None
    if handle is None:
        raise unknown_key(key)
    blob: BlobStream = await run_in_threadpool(handle.provider.open_blob, key)
    return StreamingResponse(
        blob.chunks(),
        media_type=blob.media_type,
        headers={"content-length": str(blob.size), "cache-control": "private, max-age=31536000"},
    )
