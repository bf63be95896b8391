"""The plugins' data as their dashboards draw it, in boardd's documented API: histograms
compressed to distributions, PR curves, text rendered as sanitized HTML, and tags' rendered
descriptions. Each answer is the computation of TensorBoard's route of the same data (the
modules of :mod:`boardd.api.tensorboard` and :mod:`boardd.data`), in shapes the OpenAPI
document describes, through the response cache (versioned by the provider's generation)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from boardd.api.common import (
    cached_reply,
    experiment_from,
    experiment_id,
    json_bytes,
    respond_cached,
)
from boardd.api.errors import ApiError
from boardd.api.routes import Query, RouteDef
from boardd.api.tensorboard import histograms as tb_histograms
from boardd.api.tensorboard import pr_curves as tb_pr_curves
from boardd.api.tensorboard import text as tb_text
from boardd.api.tensorboard.core import sampling_hint
from boardd.data.arrays import ArrayPoint
from boardd.data.errors import BadRequest, DataError
from boardd.data.kinds import KINDS, TENSORS
from boardd.data.provider import DataProvider
from boardd.data.series import Selection
from boardd.data.values import finite_or_text

#: One point of a series in an answer (a point that cannot be decoded raises ValueError).
Encode = Callable[[ArrayPoint], dict[str, Any]]


async def _answer(
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


async def _steps(
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

    return await _answer(request, name, (run, tag, samples), build)


def _distribution(p: ArrayPoint) -> dict[str, Any]:
    from boardd.data import histograms as data_histograms

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
    return await _steps(request, query, "distributions", "histograms", samples, _distribution)


def _pr_curve(p: ArrayPoint) -> dict[str, Any]:
    from boardd.data import pr_curves as data_pr_curves

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
    return await _steps(request, query, "pr_curves", "pr_curves", samples, _pr_curve)


def _text(p: ArrayPoint) -> dict[str, Any]:
    return {"step": p.step, "wall_time": p.wall_time, "html": tb_text.to_html(p.value, True)}


async def text(request: Request, query: Query, route: RouteDef) -> Response:
    """``GET /api/v1/text?run=&tag=``: ``[{step, wall_time, html}, …]``, each step's strings
    rendered as TensorBoard's text route renders them (Markdown, sanitized)."""
    samples = sampling_hint(request, tb_text.PLUGIN, tb_text.DEFAULT_SAMPLES)
    return await _steps(request, query, "text", "text", samples, _text)


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

    return await _answer(request, "descriptions", plugin, build)
