"""TensorBoard's hparams routes as far as a logdir WITHOUT hparams summaries: TensorBoard's UI
asks for the experiment and its session groups on every page (the Time Series runs table shows
hparams columns), and gets TensorBoard's empty answers. Logdirs with hparams summaries are the
hparams API's (its own issue): until it lands they get a clear 501, never a wrong empty table."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.errors import ApiError
from boardd.api.tensorboard.common import Reader, answer, require_xsrf, tb_json
from boardd.data import experiments

PLUGIN = "hparams"

#: TensorBoard's answers (proto3 JSON with defaults) when there is nothing to show.
EMPTY_EXPERIMENT: dict[str, Any] = {
    "name": "",
    "description": "",
    "user": "",
    "timeCreatedSecs": 0.0,
    "hparamInfos": [],
    "metricInfos": [],
}
EMPTY_SESSION_GROUPS: dict[str, Any] = {"sessionGroups": [], "totalSize": 0}


async def _request_object(request: Request) -> str:
    """The request message's JSON text (a POST's body, or ``?request=`` on GET); 400 unless it
    is a JSON object."""
    if request.method == "POST":
        require_xsrf(request)
        text = (await request.body()).decode("utf-8", errors="replace")
    else:
        text = request.query_params.get("request", "")
    try:
        parsed = json.loads(text)
    except ValueError:
        raise ApiError(400, "the request must be a JSON object (POST body or ?request=)") from None
    if not isinstance(parsed, dict):
        raise ApiError(400, "the request must be a JSON object (POST body or ?request=)")
    return json.dumps(parsed, sort_keys=True)


def _empty_or_refuse(reader: Reader, empty: dict[str, Any]) -> bytes:
    for _, connection, exp_id in reader.experiments():
        if PLUGIN in experiments.plugins(connection, exp_id):
            raise ApiError(
                501,
                "this logdir has hparams summaries, which boardd does not serve yet (its "
                "hparams API is the next piece of work): the other dashboards work",
                code="not_implemented",
            )
    return tb_json(empty)


async def experiment(request: Request) -> Response:
    """``/data/plugin/hparams/experiment`` (POST JSON or GET ``?request=``)."""
    form = await _request_object(request)
    return await answer(request, lambda r: _empty_or_refuse(r, EMPTY_EXPERIMENT), form=form)


async def session_groups(request: Request) -> Response:
    """``/data/plugin/hparams/session_groups`` (POST JSON or GET ``?request=``)."""
    form = await _request_object(request)
    return await answer(request, lambda r: _empty_or_refuse(r, EMPTY_SESSION_GROUPS), form=form)
