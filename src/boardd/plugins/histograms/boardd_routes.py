"""The histograms plugin in boardd's documented API: ``/api/v1/distributions``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.plugin_answers import series_steps
from boardd.api.routes import Query, RouteDef
from boardd.api.tensorboard.core import sampling_hint
from boardd.data.arrays import ArrayPoint
from boardd.data.values import finite_or_text
from boardd.plugins.histograms import tensorboard_routes as tb_histograms


def _distribution(p: ArrayPoint) -> dict[str, Any]:
    from boardd.plugins.histograms import data as data_histograms

    compressed = data_histograms.compress(data_histograms.as_buckets(p.value))
    return {
        "step": p.step,
        "wall_time": p.wall_time,
        "percentiles": [{"basis_point": bp, "value": finite_or_text(v)} for bp, v in compressed],
    }


async def distributions(request: Request, query: Query, route: RouteDef) -> Response:
    """``GET /api/v1/distributions?run=&tag=``: ``[{step, wall_time, percentiles:
    [{basis_point, value}, …]}, …]``, TensorBoard's distributions of a histogram series."""
    hint = sampling_hint(request, tb_histograms.PLUGIN, tb_histograms.DEFAULT_SAMPLES)
    route_samples = tb_histograms.DISTRIBUTIONS_ROUTE_SAMPLES
    # As TensorBoard's distributions route: its fixed number, or fewer if the sampling says so.
    samples = route_samples if hint is None else min(hint, route_samples)
    return await series_steps(request, query, "distributions", "histograms", samples, _distribution)
