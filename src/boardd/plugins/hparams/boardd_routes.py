"""boardd's hparams API (``/api/v1/hparams/...``): TensorBoard's hparams messages as proto3 JSON,
the request as ``?request=JSON`` on GET or the JSON body of a POST; thin encoders over
:mod:`boardd.plugins.hparams.data`, answered through the response cache."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from boardd.api.app_state import experiment_from, experiment_id, state_of
from boardd.api.bodies import read_body
from boardd.api.errors import ApiError
from boardd.api.replies import cached_reply, json_bytes, respond_cached
from boardd.api.routes import Query, RouteDef
from boardd.data.provider import DataProvider

# The engine (and protocol buffers) are imported by the handlers: not on the start path.

#: At most this many bytes of request JSON.
MAX_REQUEST_BYTES = 1 << 20


async def _request_text(request: Request, query: Query) -> str:
    """The request message's JSON: a POST's body, else ``request=`` (empty: ``{}``)."""
    if request.method == "POST":
        body = await read_body(request, MAX_REQUEST_BYTES)
        try:
            return body.decode("utf-8") or "{}"
        except UnicodeDecodeError:
            raise ApiError(400, "the request body must be UTF-8 JSON") from None
    return query.text("request") or "{}"


async def _answer(
    request: Request,
    query: Query,
    name: str,
    text: str,
    build: Callable[[DataProvider, int], Any],
    extra: Hashable = None,
) -> Response:
    handle = experiment_from(request)
    if request.method == "GET" and extra is None:
        hit, fast = cached_reply(request, handle)
        if hit is not None:
            return hit
    else:
        fast = None
    exp_id = await experiment_id(handle)
    provider = handle.provider
    generation = await run_in_threadpool(provider.generation)
    key = ("hparams", name, handle.spec.name, text, extra)
    version = (provider.swaps, generation)
    return await respond_cached(
        request,
        handle,
        key,
        version,
        lambda: _encoded(build(provider, exp_id)),
        "application/json",
        alias=fast,
    )


def _encoded(found: Any) -> bytes:
    return found if isinstance(found, bytes) else json_bytes(found)


async def experiment(request: Request, query: Query, route: RouteDef) -> Response:
    """``/api/v1/hparams/experiment``: the Experiment (GetExperimentRequest optional)."""
    from boardd.plugins.hparams import data as data_hparams
    from boardd.proto import hparams_api_pb2 as api

    text = await _request_text(request, query)
    message = data_hparams.parse_request(text, api.GetExperimentRequest)

    def build(provider: DataProvider, exp_id: int) -> Any:
        return data_hparams.experiment_json_of(
            [data_hparams.source_of(provider, exp_id)],
            include_metrics=not message.HasField("include_metrics") or message.include_metrics,
            hparams_limit=message.hparams_limit,
        )

    return await _answer(request, query, "experiment", text, build)


async def session_groups(request: Request, query: Query, route: RouteDef) -> Response:
    """``/api/v1/hparams/session_groups``: ListSessionGroupsResponse (no allowedStatuses: all),
    with boardd's names: each session's ``run`` and each group's ``displayName``."""
    from boardd.plugins.hparams import data as data_hparams
    from boardd.proto import hparams_api_pb2 as api

    text = await _request_text(request, query)
    message = data_hparams.parse_request(text, api.ListSessionGroupsRequest)
    if not message.allowed_statuses:
        message.allowed_statuses.extend(sorted(data_hparams.ALL_STATUSES))
    idle = state_of(request).hparams_idle_seconds
    epoch = int(time.time() // max(1.0, idle / 20))

    def build(provider: DataProvider, exp_id: int) -> Any:
        sources = [data_hparams.source_of(provider, exp_id)]
        return data_hparams.session_groups_bytes_of(sources, message, idle_seconds=idle, named=True)

    return await _answer(request, query, "session_groups", text, build, epoch)


async def metric_evals(request: Request, query: Query, route: RouteDef) -> Response:
    """``/api/v1/hparams/metric_evals``: ``[[wall_time, step, value], …]``."""
    from boardd.plugins.hparams import data as data_hparams
    from boardd.proto import hparams_api_pb2 as api

    text = await _request_text(request, query)
    message = data_hparams.parse_request(text, api.ListMetricEvalsRequest)

    def build(provider: DataProvider, exp_id: int) -> Any:
        return data_hparams.metric_evals_json(data_hparams.source_of(provider, exp_id), message)

    return await _answer(request, query, "metric_evals", text, build)
