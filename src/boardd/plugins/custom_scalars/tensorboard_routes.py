"""TensorBoard's custom scalars plugin: ``layout`` (the runs' layouts merged, as proto3 JSON),
``scalars`` (the scalars of one run whose tags match a regular expression) and
``download_data`` (one series as JSON or CSV, as the scalars plugin's ``scalars`` route)."""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.tensorboard.answers import answer, tb_json
from boardd.api.tensorboard.core import sampling_hint
from boardd.api.tensorboard.params import param, required
from boardd.api.tensorboard.scope import Reader
from boardd.data.kinds import SCALARS, TENSORS
from boardd.plugins.scalars import tensorboard_routes as scalars_routes

# The plugin's data module (and protocol buffers) is imported by the layout route: not on the
# start path.
PLUGIN = "custom_scalars"
#: The tag a writer stores its layout under.
CONFIG_TAG = "custom_scalars__config__"

#: An answer of ``scalars`` without a usable regular expression (none, or one that does not
#: compile), as TensorBoard answers it.
NO_REGEX = b'{"regex_valid":false,"tag_to_events":{}}'


async def layout(request: Request) -> Response:
    """``/data/plugin/custom_scalars/layout``: the layout of every run that has one, merged in
    run-name order (:func:`boardd.plugins.custom_scalars.data.merge_layouts`), as proto3 JSON with
    default values written out; ``{}`` when no run has one."""

    from boardd.plugins.custom_scalars import data as data_custom_scalars

    def build(reader: Reader) -> bytes:
        found = reader.series(TENSORS, PLUGIN, tags=(CONFIG_TAG,))
        layouts = []
        for s in sorted(found, key=lambda s: s.run):
            # The last layout the run wrote, as TensorBoard reads it (one point, the last).
            points = s.handle.provider.read_arrays(s.info, 1)
            parsed = data_custom_scalars.parse_layout(points[-1].value) if points else None
            if parsed is not None:
                layouts.append(parsed)
        merged = data_custom_scalars.merge_layouts(layouts)
        if merged is None:
            return b"{}"
        from google.protobuf import json_format  # loaded by the first layout answer

        return tb_json(json_format.MessageToDict(merged, always_print_fields_with_no_presence=True))

    return await answer(request, build)


async def scalars(request: Request) -> Response:
    """``/data/plugin/custom_scalars/scalars?run=&tag=REGEX``: ``{"regex_valid": true,
    "tag_to_events": {tag: [[wall_time, step, value], ...]}}`` for the run's scalars whose tags
    match REGEX from their start (Python's ``re.match``, as TensorBoard matches), in the order
    the run first wrote them, each sampled as the scalars route samples; ``regex_valid`` false
    (and no events) without a REGEX or with one that does not compile. An unknown run has no
    events; a missing one is a 400 (TensorBoard fails with a 500)."""
    run = required(request, "run")
    pattern = param(request, "tag")
    samples = sampling_hint(request, scalars_routes.PLUGIN, scalars_routes.DEFAULT_SAMPLES)
    regex: re.Pattern[str] | None = None
    if pattern:
        try:
            regex = re.compile(pattern)
        except (re.error, RecursionError, OverflowError):
            regex = None

    def build(reader: Reader) -> bytes:
        if regex is None:
            return NO_REGEX
        found = reader.series(SCALARS, scalars_routes.PLUGIN, (run,))
        # In the order the run first wrote them (series are numbered as they first appear),
        # as TensorBoard's loader lists them: the chart's legend and markers follow it.
        matching = sorted((s for s in found if regex.match(s.info.tag)), key=lambda s: s.info.id)
        events = scalars_routes.points(reader, matching, samples)
        return tb_json(
            {
                "regex_valid": True,
                "tag_to_events": dict(zip((s.info.tag for s in matching), events, strict=True)),
            }
        )

    return await answer(request, build)


async def download_data(request: Request) -> Response:
    """``/data/plugin/custom_scalars/download_data?run=&tag=&format=csv|json``: the scalars
    plugin's ``scalars`` answer (its 404 when the run has no such tag)."""
    return await scalars_routes.scalars(request)
