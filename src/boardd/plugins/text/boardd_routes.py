"""The text plugin in boardd's documented API: ``/api/v1/text``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.plugin_answers import series_steps
from boardd.api.routes import Query, RouteDef
from boardd.api.tensorboard.core import sampling_hint
from boardd.data.arrays import ArrayPoint
from boardd.plugins.text import tensorboard_routes as tb_text


def _text(p: ArrayPoint) -> dict[str, Any]:
    return {"step": p.step, "wall_time": p.wall_time, "html": tb_text.to_html(p.value, True)}


async def text(request: Request, query: Query, route: RouteDef) -> Response:
    """``GET /api/v1/text?run=&tag=``: ``[{step, wall_time, html}, …]``, each step's strings
    rendered as TensorBoard's text route renders them (Markdown, sanitized)."""
    samples = sampling_hint(request, tb_text.PLUGIN, tb_text.DEFAULT_SAMPLES)
    return await series_steps(request, query, "text", "text", samples, _text)
