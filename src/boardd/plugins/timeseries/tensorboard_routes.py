"""TensorBoard's time-series ("metrics") plugin, the default "Time Series" dashboard: ``tags``,
``timeSeries`` (scalars, histograms and image samples of many series in one request) and
``imageData`` (an image's bytes by the id ``timeSeries`` gave it: boardd's blob key)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator, Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from boardd.api import replies
from boardd.api.bodies import read_form
from boardd.api.errors import ApiError
from boardd.api.tensorboard.answers import answer, answer_etag, tb_json
from boardd.api.tensorboard.core import sampling_hint
from boardd.api.tensorboard.markup import markdown_to_safe_html
from boardd.api.tensorboard.params import param, require_xsrf
from boardd.api.tensorboard.scope import Reader, Series, scope_of
from boardd.data import plugin_metadata
from boardd.data.blobs import parse_blob_key, unknown_key
from boardd.data.kinds import BLOB_SEQUENCES, SCALARS, TENSORS, Kind
from boardd.data.series import Bounds
from boardd.data.values import json_floats
from boardd.plugins.timeseries import data as data_timeseries

SCALARS_PLUGIN = "scalars"
HISTOGRAMS_PLUGIN = "histograms"
IMAGES_PLUGIN = "images"
#: Points (steps) per series ``timeSeries`` returns unless --samples-per-plugin says otherwise
#: (TensorBoard's own defaults for this plugin: 51 histograms, not the 500 its reservoir keeps).
DEFAULT_SAMPLES = {SCALARS_PLUGIN: 1000, HISTOGRAMS_PLUGIN: 51, IMAGES_PLUGIN: 10}
#: The kind each plugin's series are stored as.
KIND_OF: dict[str, Kind] = {
    SCALARS_PLUGIN: SCALARS,
    HISTOGRAMS_PLUGIN: TENSORS,
    IMAGES_PLUGIN: BLOB_SEQUENCES,
}


def _descriptions(found: list[Series]) -> dict[str, str]:
    combined = data_timeseries.tag_descriptions(
        (s.run, s.info.tag, s.info.description) for s in found
    )
    return {tag: markdown_to_safe_html(text) for tag, text in combined.items()}


def _run_tag_info(found: list[Series]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in found:
        out.setdefault(s.run, []).append(s.info.tag)
    return {run: sorted(tags) for run, tags in out.items()}


def _listed(reader: Reader, plugin: str) -> tuple[list[Series], list[Series]]:
    """The plugin's series, and those of them TensorBoard's time series shows (not of a
    newer metadata version than it knows; their runs are still listed)."""
    found = reader.series(KIND_OF[plugin], plugin)
    return found, [s for s in found if plugin_metadata.readable(s.info.plugin_content)]


def tags_index(reader: Reader) -> dict[str, Any]:
    """``{scalars: {runTagInfo, tagDescriptions}, histograms: {...}, images: {tagDescriptions,
    tagRunSampledInfo}}``; ``maxSamplesPerStep`` does not count an image step's width and
    height."""
    out: dict[str, Any] = {}
    for plugin in (SCALARS_PLUGIN, HISTOGRAMS_PLUGIN):
        found, shown = _listed(reader, plugin)
        info: dict[str, list[str]] = {s.run: [] for s in found} | _run_tag_info(shown)
        out[plugin] = {"runTagInfo": info, "tagDescriptions": _descriptions(shown)}
    _, images = _listed(reader, IMAGES_PLUGIN)
    sampled: dict[str, dict[str, Any]] = {}
    for s in images:
        sampled.setdefault(s.info.tag, {})[s.run] = {
            "maxSamplesPerStep": s.info.max_length - data_timeseries.IMAGE_HEADER_BLOBS
        }
    out[IMAGES_PLUGIN] = {"tagDescriptions": _descriptions(images), "tagRunSampledInfo": sampled}
    return out


async def tags(request: Request) -> Response:
    """``/data/plugin/timeseries/tags``."""
    return await answer(request, lambda reader: tb_json(tags_index(reader)))


def request_error(wanted: Mapping[str, Any]) -> str | None:
    """Why a series request cannot be answered (TensorBoard's words), or None."""
    plugin = wanted.get("plugin")
    if not isinstance(wanted.get("tag"), str):
        return "Missing tag"
    if not isinstance(plugin, str) or plugin not in KIND_OF:
        return "Invalid plugin"
    if plugin in (HISTOGRAMS_PLUGIN, IMAGES_PLUGIN) and not isinstance(wanted.get("run"), str):
        return "Missing run"
    if plugin == IMAGES_PLUGIN and not isinstance(wanted.get("sample"), int):
        return "Missing sample"
    return None


def _scalar_series(reader: Reader, found: list[Series], samples: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for s in found:
        (col,) = s.handle.provider.read_scalars([s.info], Bounds(downsample=samples))
        out[s.run] = [
            {"wallTime": w, "step": step, "value": v}
            for w, step, v in zip(
                col.wall_times.tolist(), col.steps.tolist(), json_floats(col.values), strict=True
            )
        ]
    return out


def _histogram_series(reader: Reader, found: list[Series], samples: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for s in found:
        (read,) = s.handle.provider.read_tensors([s.info], Bounds(downsample=samples))
        out[s.run] = [
            {
                "wallTime": p.wall_time,
                "step": p.step,
                "bins": data_timeseries.histogram_bins(p.value),
            }
            for p in read.points
        ]
    return out


def _image_series(
    reader: Reader, found: list[Series], samples: int | None, sample: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for s in found:
        # Downsampled over all steps first, then the steps without this sample dropped (as
        # TensorBoard does: an index bound would downsample the remaining steps instead).
        (read,) = s.handle.provider.read_blob_sequences(
            s.handle.spec.name, [s.info], Bounds(downsample=samples)
        )
        points = []
        for p in read.steps:
            key = data_timeseries.image_sample(p.keys, sample)
            if key is not None:
                points.append({"step": p.step, "wallTime": p.wall_time, "imageId": key})
        if points:
            out[s.run] = points
    return out


def series_response(
    reader: Reader, wanted: Mapping[str, Any], samples: Mapping[str, int | None]
) -> dict[str, Any]:
    """One series request's answer: its plugin, tag, run and sample echoed, then ``error`` or
    ``runToSeries`` (the runs that have the tag, or only ``run`` if given)."""
    plugin, tag, run, sample = (wanted.get(k) for k in ("plugin", "tag", "run", "sample"))
    out: dict[str, Any] = {"plugin": plugin, "tag": tag}
    if isinstance(run, str):
        out["run"] = run
    if isinstance(sample, int):
        out["sample"] = sample
    error = request_error(wanted)
    if error is not None:
        out["error"] = error
        return out
    assert isinstance(plugin, str) and isinstance(tag, str)
    runs = (run,) if isinstance(run, str) and run else ()
    found = reader.series(KIND_OF[plugin], plugin, runs, (tag,))
    if plugin == SCALARS_PLUGIN:
        out["runToSeries"] = _scalar_series(reader, found, samples[plugin])
    elif plugin == HISTOGRAMS_PLUGIN:
        out["runToSeries"] = _histogram_series(reader, found, samples[plugin])
    else:
        assert isinstance(sample, int)
        out["runToSeries"] = _image_series(reader, found, samples[plugin], sample)
    return out


def parse_requests(text: str | None) -> list[dict[str, Any]]:
    """The ``requests`` field: a JSON list of objects (400 naming what is wrong)."""
    if not text:
        raise ApiError(400, "Missing 'requests' field")
    try:
        parsed = json.loads(text)
    except ValueError:
        raise ApiError(400, "Unable to parse 'requests' as JSON") from None
    if not isinstance(parsed, list) or not all(isinstance(r, dict) for r in parsed):
        raise ApiError(
            400, "'requests' must be a JSON list of objects {plugin, tag, run?, sample?}"
        )
    for wanted in parsed:
        run = wanted.get("run")
        if run and not isinstance(run, str):
            # TensorBoard fails on it (a 500; a falsy one means every run, as there).
            raise ApiError(400, f"'run' must be a string (a run name), not {json.dumps(run)}")
    return parsed


async def time_series(request: Request) -> Response:
    """``POST /data/plugin/timeseries/timeSeries`` (form field ``requests``; a GET may give it
    as a query parameter, as TensorBoard allows): one answer per series request, in order."""
    if request.method == "POST":
        require_xsrf(request)
        form = await read_form(request)
        fields = form.getlist("requests")  # the first, as TensorBoard (werkzeug) reads it
        field = fields[0] if fields else None
        text = field if isinstance(field, str) else None
    else:
        text = param(request, "requests")
    wanted = parse_requests(text)
    samples = {p: sampling_hint(request, p, n) for p, n in DEFAULT_SAMPLES.items()}
    scope = scope_of(request)
    # The list's items are encoded one request at a time: an answer that grows too large to
    # hold is sent as it is built (replies.stream_rest), from the first request not yet sent.
    taken = 0

    def item(reader: Reader) -> bytes:
        nonlocal taken
        encoded = tb_json(series_response(reader, wanted[taken], samples))
        taken += 1
        return encoded if taken == 1 else b"," + encoded

    def build(reader: Reader) -> bytes:
        held = [b"["]
        size = 1
        while taken < len(wanted):
            held.append(item(reader))
            size += len(held[-1])
            if size > replies.HOLD_BYTES and taken < len(wanted):
                raise replies.TooLargeToHold(held)
        held.append(b"]")
        return b"".join(held)

    try:
        return await answer(request, build, form=text, scope=scope)
    except replies.TooLargeToHold as begun:
        held = begun.held
    etag = await asyncio.to_thread(answer_etag, request, scope, text)

    def block() -> tuple[bytes, bool]:
        reader = Reader(scope)
        parts: list[bytes] = []
        size = 0
        while size < replies.BLOCK_BYTES and taken < len(wanted):
            parts.append(item(reader))
            size += len(parts[-1])
        done = taken == len(wanted)
        if done:
            parts.append(b"]")
        return b"".join(parts), done

    return replies.stream_rest(request, held, block, "application/json", etag)


async def image_data(request: Request) -> Response:
    """``/data/plugin/timeseries/imageData?imageId=``: the image's bytes, streamed, with the
    content type TensorBoard gives it (404 for an id that names no blob of this scope)."""
    key = param(request, "imageId")
    if not key:
        raise ApiError(400, "Missing 'imageId' field")
    parsed = parse_blob_key(key)
    scope = scope_of(request)
    handle = next(
        (h for h in scope.handles if parsed is not None and h.spec.name == parsed.experiment),
        None,
    )
    if handle is None:
        raise unknown_key(key)
    provider = handle.provider

    def start() -> tuple[int, bytes, Iterator[bytes]]:
        blob = provider.open_blob(key)
        chunks = blob.chunks()
        return blob.size, next(chunks, b""), chunks

    size, first, rest = await run_in_threadpool(start)
    return StreamingResponse(
        itertools.chain((first,), rest),
        media_type=plugin_metadata.image_media_type(first[:16]),
        # A key names one blob of one store file for good: the browser may keep it.
        headers={"content-length": str(size), "cache-control": "private, max-age=31536000"},
    )
