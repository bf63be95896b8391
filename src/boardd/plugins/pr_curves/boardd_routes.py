"""The PR-curves plugin in boardd's documented API: ``/api/v1/pr_curves``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.plugin_answers import series_steps
from boardd.api.routes import Query, RouteDef
from boardd.api.tensorboard.core import sampling_hint
from boardd.data.arrays import ArrayPoint
from boardd.data.values import finite_or_text
from boardd.plugins.pr_curves import tensorboard_routes as tb_pr_curves


def _pr_curve(p: ArrayPoint) -> dict[str, Any]:
    from boardd.plugins.pr_curves import data as data_pr_curves

    curve = data_pr_curves.unpack(p.value)
    return {
        "step": p.step,
        "wall_time": p.wall_time,
        "thresholds": curve.thresholds,
        "precision": [finite_or_text(v) for v in curve.precision],
        "recall": [finite_or_text(v) for v in curve.recall],
        "true_positives": curve.true_positives,
        "false_positives": curve.false_positives,
        "true_negatives": curve.true_negatives,
        "false_negatives": curve.false_negatives,
    }


async def pr_curves(request: Request, query: Query, route: RouteDef) -> Response:
    """``GET /api/v1/pr_curves?run=&tag=``: ``[{step, wall_time, thresholds, precision,
    recall, true_positives, …}, …]``, as TensorBoard's PR-curves route computes them."""
    samples = sampling_hint(request, tb_pr_curves.PLUGIN, tb_pr_curves.DEFAULT_SAMPLES)
    return await series_steps(request, query, "pr_curves", "pr_curves", samples, _pr_curve)
