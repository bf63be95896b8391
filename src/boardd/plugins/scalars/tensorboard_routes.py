"""TensorBoard's scalars plugin: ``tags``, ``scalars`` (JSON or CSV), ``scalars_multirun``."""

from __future__ import annotations

import io
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.bodies import read_form
from boardd.api.errors import ApiError
from boardd.api.tensorboard.answers import answer, tb_json
from boardd.api.tensorboard.core import sampling_hint
from boardd.api.tensorboard.markup import markdown_to_safe_html
from boardd.api.tensorboard.params import not_found, param, require_xsrf, required
from boardd.api.tensorboard.scope import Reader, Series
from boardd.data.kinds import SCALARS
from boardd.data.series import Bounds
from boardd.data.values import json_floats

PLUGIN = "scalars"
#: Points per series a scalars route returns unless --samples-per-plugin says otherwise.
DEFAULT_SAMPLES = 1000


def tags_index(reader: Reader, kind_plugin: str = PLUGIN) -> dict[str, dict[str, Any]]:
    """``{run: {tag: {displayName, description}}}`` (descriptions rendered as safe HTML)."""
    out: dict[str, dict[str, Any]] = {}
    for s in reader.series(SCALARS, kind_plugin):
        out.setdefault(s.run, {})[s.info.tag] = {
            "displayName": s.info.display_name,
            "description": markdown_to_safe_html(s.info.description),
        }
    return out


async def tags(request: Request) -> Response:
    """``/data/plugin/scalars/tags``."""
    return await answer(request, lambda reader: tb_json(tags_index(reader)))


def points(reader: Reader, series: list[Series], samples: int | None) -> list[list[list[Any]]]:
    """Each series' ``[wall_time, step, value]`` points, at most ``samples`` of them."""
    out = []
    bounds = Bounds(downsample=samples)
    for s in series:
        (col,) = s.handle.provider.read_scalars([s.info], bounds)
        values = json_floats(col.values)
        out.append(
            [list(p) for p in zip(col.wall_times.tolist(), col.steps.tolist(), values, strict=True)]
        )
    return out


async def scalars(request: Request) -> Response:
    """``/data/plugin/scalars/scalars?run=&tag=[&format=csv]``: 404 when the run has no such
    tag."""
    run, tag = required(request, "run"), required(request, "tag")
    csv_format = param(request, "format") == "csv"
    samples = sampling_hint(request, PLUGIN, DEFAULT_SAMPLES)

    def build(reader: Reader) -> bytes:
        found = reader.one(SCALARS, PLUGIN, run, tag)
        if found is None:
            raise not_found(f"No scalar data for run={run!r}, tag={tag!r}")
        if not csv_format:
            (rows,) = points(reader, [found], samples)
            return tb_json(rows)
        # TensorBoard's CSV: Python's csv module, floats as str() spells them (nan, inf).
        (col,) = found.handle.provider.read_scalars([found.info], Bounds(downsample=samples))
        text = io.StringIO()
        import csv  # loaded by the first CSV answer (off `boardd serve`'s start)

        writer = csv.writer(text)
        writer.writerow(["Wall time", "Step", "Value"])
        writer.writerows(
            zip(col.wall_times.tolist(), col.steps.tolist(), col.values.tolist(), strict=True)
        )
        return text.getvalue().encode("utf-8")

    media = "text/csv; charset=utf-8" if csv_format else "application/json"
    return await answer(request, build, media)


async def scalars_multirun(request: Request) -> Response:
    """``POST /data/plugin/scalars/scalars_multirun`` (form: ``tag`` once, ``runs`` repeated):
    ``{run: [[wall_time, step, value], ...]}`` for the runs that have the tag."""
    require_xsrf(request)
    form = await read_form(request)
    tags_given = form.getlist("tag")
    if len(tags_given) != 1:
        raise ApiError(400, "tag must be specified exactly once")
    tag = str(tags_given[0])
    runs = tuple(str(r) for r in form.getlist("runs"))
    samples = sampling_hint(request, PLUGIN, DEFAULT_SAMPLES)

    def build(reader: Reader) -> bytes:
        found = reader.series(SCALARS, PLUGIN, runs, (tag,)) if runs else []
        return tb_json(
            dict(zip((s.run for s in found), points(reader, found, samples), strict=True))
        )

    return await answer(request, build, form=(tag, runs))
