"""TensorBoard's histograms and distributions plugins: ``tags``, ``histograms`` (bucket rows)
and ``distributions`` (the same histograms compressed to percentiles)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.tensorboard.answers import answer, tb_json
from boardd.api.tensorboard.core import sampling_hint
from boardd.api.tensorboard.params import not_found, run_and_tag
from boardd.api.tensorboard.scope import Reader
from boardd.api.tensorboard.series_routes import json_array, tag_index
from boardd.data.errors import DataError
from boardd.data.kinds import TENSORS
from boardd.data.values import finite_or_text
from boardd.plugins.histograms import data as data_histograms

PLUGIN = "histograms"
#: Histograms per series kept in the store unless --samples-per-plugin says otherwise.
DEFAULT_SAMPLES = 500
#: At most this many histograms per series in one answer of each route, whatever the
#: sampling (TensorBoard's fixed numbers: N+1 to split the steps into N intervals).
HISTOGRAMS_ROUTE_SAMPLES = 51
DISTRIBUTIONS_ROUTE_SAMPLES = 501


async def tags(request: Request) -> Response:
    """``/data/plugin/histograms/tags`` and ``/data/plugin/distributions/tags``."""
    return await answer(request, lambda reader: tb_json(tag_index(reader, TENSORS, PLUGIN)))


def _route_samples(request: Request, route_samples: int) -> int:
    hint = sampling_hint(request, PLUGIN, DEFAULT_SAMPLES)
    return route_samples if hint is None else min(hint, route_samples)


def _read(reader: Reader, run: str, tag: str, samples: int) -> list[tuple[float, int, Any]]:
    found = reader.one(TENSORS, PLUGIN, run, tag)
    if found is None:
        raise not_found(f"No histogram tag {tag!r} for run {run!r}")
    out = []
    for p in found.handle.provider.read_arrays(found.info, samples):
        try:
            buckets = data_histograms.as_buckets(p.value)
        except ValueError as exc:
            raise DataError(f"run {run!r}, tag {tag!r}, step {p.step}: {exc}") from exc
        out.append((p.wall_time, p.step, buckets))
    return out


async def histograms(request: Request) -> Response:
    """``/data/plugin/histograms/histograms?run=&tag=``: ``[[wall_time, step, [[left, right,
    count], ...]], ...]``."""
    run, tag = run_and_tag(request)
    samples = _route_samples(request, HISTOGRAMS_ROUTE_SAMPLES)

    def build(reader: Reader) -> bytes:
        return tb_json(
            [
                [wall, step, json_array(buckets)]
                for wall, step, buckets in _read(reader, run, tag, samples)
            ]
        )

    return await answer(request, build)


async def distributions(request: Request) -> Response:
    """``/data/plugin/distributions/distributions?run=&tag=``: ``[[wall_time, step,
    [[basis_point, value], ...]], ...]``."""
    run, tag = run_and_tag(request)
    samples = _route_samples(request, DISTRIBUTIONS_ROUTE_SAMPLES)

    def build(reader: Reader) -> bytes:
        out = []
        for wall, step, buckets in _read(reader, run, tag, samples):
            compressed = data_histograms.compress(buckets)
            out.append([wall, step, [[bp, finite_or_text(v)] for bp, v in compressed]])
        return tb_json(out)

    return await answer(request, build)
