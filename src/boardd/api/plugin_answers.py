"""What the plugins' routes of boardd's documented API share (an answer through the response
cache, versioned by the provider's generation; one series' steps, each encoded by its
plugin), and the tags' rendered descriptions of any plugin. The plugins' own routes are
``boardd_routes`` in their packages (:mod:`boardd.plugins`): distributions, PR curves, text,
each the computation of TensorBoard's route of the same data, in shapes the OpenAPI document
describes."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from boardd.api.app_state import experiment_from, experiment_id
from boardd.api.errors import ApiError
from boardd.api.replies import cached_reply, json_bytes, respond_cached
from boardd.api.routes import Query, RouteDef
from boardd.data.arrays import ArrayPoint
from boardd.data.errors import BadRequest, DataError
from boardd.data.kinds import KINDS, TENSORS
from boardd.data.provider import DataProvider
from boardd.data.series import Selection

#: One point of a series in an answer (a point that cannot be decoded raises ValueError).
Encode = Callable[[ArrayPoint], dict[str, Any]]


async def answer(
    request: Request,
    name: str,
    key: Hashable,
    build: Callable[[DataProvider, int], Any],
) -> Response:
    """The JSON of ``build(provider, experiment id)`` for the request's experiment, through the
    cache under ``key``, the provider's generation its version."""
    handle = experiment_from(request)
    hit, fast = cached_reply(request, handle)
    if hit is not None:
        return hit
    exp_id = await experiment_id(handle)
    provider = handle.provider
    generation = await run_in_threadpool(provider.generation)
    return await respond_cached(
        request,
        handle,
        ("plugin_data", name, handle.spec.name, key),
        (provider.swaps, generation),
        lambda: json_bytes(build(provider, exp_id)),
        "application/json",
        alias=fast,
    )


async def series_steps(
    request: Request, query: Query, name: str, plugin: str, samples: int | None, encode: Encode
) -> Response:
    """``[point, …]`` of one run's tag of ``plugin`` (404 if it has none), at most
    ``downsample=`` points (default: ``samples``, TensorBoard's route's number)."""
    run, tag = query.text("run"), query.text("tag")
    assert run is not None and tag is not None  # required by the route table
    downsample = query.integer("downsample")
    if downsample is not None:
        samples = downsample

    def build(provider: DataProvider, exp_id: int) -> list[dict[str, Any]]:
        found = provider.list_series(exp_id, TENSORS, Selection(plugin, (run,), (tag,)))
        if not found:
            raise ApiError(404, f"no {plugin} series of run {run!r} and tag {tag!r}")
        out = []
        for p in provider.read_arrays(found[0], samples):
            try:
                out.append(encode(p))
            except ValueError as exc:
                raise DataError(f"run {run!r}, tag {tag!r}, step {p.step}: {exc}") from exc
        return out

    return await answer(request, name, (run, tag, samples), build)


async def descriptions(request: Request, query: Query, route: RouteDef) -> Response:
    """``GET /api/v1/descriptions?plugin=``: ``{RUN: {TAG: html}}``, each described series'
    description rendered from Markdown and sanitized (series without one are left out)."""
    from boardd.api.tensorboard.markup import markdown_to_safe_html

    plugin = query.text("plugin")
    assert plugin is not None  # required by the route table

    def build(provider: DataProvider, exp_id: int) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        known = False
        for kind in KINDS.values():
            try:
                found = provider.list_series(exp_id, kind, Selection(plugin, (), ()))
            except BadRequest:  # not a plugin of this kind of data
                continue
            known = True
            for s in found:
                if s.description:
                    out.setdefault(s.run, {})[s.tag] = markdown_to_safe_html(s.description)
        if not known:
            names = {p for k in KINDS.values() for p in k.tensorboard_plugins}
            names.update(provider.plugins(exp_id))
            raise BadRequest(f"plugin={plugin!r} is not known; known: {', '.join(sorted(names))}")
        return {run: dict(sorted(tags.items())) for run, tags in sorted(out.items())}

    return await answer(request, "descriptions", plugin, build)
