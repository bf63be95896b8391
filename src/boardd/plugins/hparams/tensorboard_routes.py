"""TensorBoard's hparams routes (``/data/plugin/hparams/...``): experiment, session_groups,
metric_evals and download_data, POST JSON or GET ``?request=``, in TensorBoard's answer shapes,
over :mod:`boardd.plugins.hparams.data`. A logdir without hparams summaries gets TensorBoard's empty
answers (its UI asks for them on every page).

Session names are run names as the scope names them (``NAME/RUN`` when several logdirs are
served at once), and the experiments of the scope that have hparams data are merged as
TensorBoard merges the runs of ``--logdir_spec NAME:DIR,…`` (data/hparams.py: ``_view``)."""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.app_state import ExperimentHandle, state_of
from boardd.api.bodies import read_body
from boardd.api.errors import ApiError
from boardd.api.tensorboard.answers import answer, tb_json
from boardd.api.tensorboard.core import sampling_hint
from boardd.api.tensorboard.params import not_found, param
from boardd.api.tensorboard.scope import Reader
from boardd.data.kinds import SCALARS

if TYPE_CHECKING:
    from boardd.plugins.hparams import data as data_hparams
    from boardd.proto import hparams_api_pb2 as api

# The engine (and protocol buffers) are imported by the handlers: not on the start path.

PLUGIN = "hparams"


async def _request_object(request: Request) -> str:
    """The request message's JSON text (a POST's body, or ``?request=`` on GET); 400 unless it
    is a JSON object."""
    if request.method == "POST":
        # No X-XSRF-Protected check: TensorBoard's own UI posts /experiment without it (as
        # text/plain), and these routes only read (TensorBoard 2.21 checks none either).
        text = (await read_body(request)).decode("utf-8", errors="replace")
    else:
        text = param(request, "request", "")
    try:
        parsed = json.loads(text)
    except ValueError:
        raise ApiError(400, "the request must be a JSON object (POST body or ?request=)") from None
    if not isinstance(parsed, dict):
        raise ApiError(400, "the request must be a JSON object (POST body or ?request=)")
    return json.dumps(parsed, sort_keys=True)


def status_epoch(request: Request) -> int:
    """A counter that moves on as often as a session's RUNNING may turn UNKNOWN without a
    commit (a twentieth of the idle time): part of the cache key of answers with statuses."""
    idle = state_of(request).hparams_idle_seconds
    return int(time.time() // max(1.0, idle / 20))


def _sources(reader: Reader) -> list[data_hparams.Source]:
    """The addressed experiments whose stores have hparams data, with the prefix of their run
    names (their experiment's name when the scope prefixes run names)."""
    from boardd.plugins.hparams import data as data_hparams

    return [
        source
        for handle, provider, exp_id in reader.experiments()
        if data_hparams.has_hparams(
            source := data_hparams.source_of(provider, exp_id, _prefix(reader, handle))
        )
    ]


def _prefix(reader: Reader, handle: ExperimentHandle) -> str:
    return handle.spec.name if reader.scope.prefixed else ""


async def experiment(request: Request) -> Response:
    """``/data/plugin/hparams/experiment``."""
    from boardd.plugins.hparams import data as data_hparams
    from boardd.proto import hparams_api_pb2 as api

    form = await _request_object(request)
    message = data_hparams.parse_request(form, api.GetExperimentRequest)

    def build(reader: Reader) -> bytes:
        sources = _sources(reader)
        if not sources:
            return tb_json(data_hparams.EMPTY_EXPERIMENT)
        return tb_json(
            data_hparams.experiment_json_of(
                sources,
                include_metrics=not message.HasField("include_metrics") or message.include_metrics,
                hparams_limit=message.hparams_limit,
            )
        )

    return await answer(request, build, form=form)


def _groups(
    reader: Reader,
    request: Request,
    message: api.ListSessionGroupsRequest,
    *,
    with_experiment: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the experiment if asked for, the session groups) of a ListSessionGroups request."""
    from boardd.plugins.hparams import data as data_hparams

    sources = _sources(reader)
    if not sources:
        return dict(data_hparams.EMPTY_EXPERIMENT), dict(data_hparams.EMPTY_SESSION_GROUPS)
    found = data_hparams.session_groups_json_of(
        sources, message, idle_seconds=state_of(request).hparams_idle_seconds
    )
    if not with_experiment:
        return {}, found
    include = not message.HasField("include_metrics") or message.include_metrics
    exp = data_hparams.experiment_json_of(sources, include_metrics=include)
    return exp, found


async def session_groups(request: Request) -> Response:
    """``/data/plugin/hparams/session_groups``."""
    from boardd.plugins.hparams import data as data_hparams
    from boardd.proto import hparams_api_pb2 as api

    form = await _request_object(request)
    message = data_hparams.parse_request(form, api.ListSessionGroupsRequest)
    key: Hashable = (form, status_epoch(request))

    def build(reader: Reader) -> bytes:
        sources = _sources(reader)
        if not sources:
            return tb_json(data_hparams.EMPTY_SESSION_GROUPS)
        return data_hparams.session_groups_bytes_of(
            sources, message, idle_seconds=state_of(request).hparams_idle_seconds
        )

    return await answer(request, build, form=key)


async def metric_evals(request: Request) -> Response:
    """``/data/plugin/hparams/metric_evals``: ``[[wall_time, step, value], …]``, as TensorBoard
    answers it: through its scalars route (scalars_impl), that route's series, its downsampling
    (--samples-per-plugin scalars, else 1,000 points) and its 404."""
    from boardd.plugins.hparams import data as data_hparams
    from boardd.plugins.scalars import tensorboard_routes as scalars
    from boardd.proto import hparams_api_pb2 as api

    form = await _request_object(request)
    message = data_hparams.parse_request(form, api.ListMetricEvalsRequest)
    samples = sampling_hint(request, scalars.PLUGIN, scalars.DEFAULT_SAMPLES)

    def build(reader: Reader) -> bytes:
        run = data_hparams.metric_run(message.session_name, message.metric_name.group)
        tag = message.metric_name.tag
        found = reader.one(SCALARS, scalars.PLUGIN, run, tag)
        if found is None:
            raise not_found(f"No scalar data for run={run!r}, tag={tag!r}")
        (rows,) = scalars.points(reader, [found], samples)
        return tb_json(rows)

    return await answer(request, build, form=form)


#: download_data's formats and their media types (as TensorBoard answers them).
FORMATS = {
    "json": "application/json",
    "csv": "text/csv; charset=utf-8",
    "latex": "application/x-latex",
}


async def download_data(request: Request) -> Response:
    """``/data/plugin/hparams/download_data?format=csv|json|latex&columnsVisibility=[…]``: the
    session groups as a table, a column per hparam then per metric (TensorBoard's
    download_data.py)."""
    from boardd.plugins.hparams import data as data_hparams
    from boardd.proto import hparams_api_pb2 as api

    fmt = param(request, "format", "")
    if fmt not in FORMATS:
        raise ApiError(400, f"format={fmt!r}: give one of csv, json, latex")
    visibility_text = param(request, "columnsVisibility")
    visibility: list[bool] | None = None
    if visibility_text is not None:
        try:
            parsed = json.loads(visibility_text)
        except ValueError:
            parsed = None
        if not isinstance(parsed, list):
            raise ApiError(400, "columnsVisibility must be a JSON list of booleans")
        visibility = [bool(v) for v in parsed]
    form = await _request_object(request)
    message = data_hparams.parse_request(form, api.ListSessionGroupsRequest)
    key: Hashable = (form, status_epoch(request))

    def build(reader: Reader) -> bytes:
        exp, groups = _groups(reader, request, message, with_experiment=True)
        return table(exp, groups, fmt, visibility)

    return await answer(request, build, FORMATS[fmt], form=key)


def table(
    exp: dict[str, Any], groups: dict[str, Any], fmt: str, visibility: list[bool] | None
) -> bytes:
    """The session groups as TensorBoard's download_data builds them."""
    hparam_infos = exp.get("hparamInfos", [])
    metric_infos = exp.get("metricInfos", [])
    header: list[Any] = [h.get("displayName") or h.get("name", "") for h in hparam_infos]
    header += [m.get("displayName") or m.get("name", {}).get("tag", "") for m in metric_infos]

    def visible(row: list[Any]) -> list[Any]:
        if visibility is None:
            return row
        return [value for value, shown in zip(row, visibility, strict=False) if shown]

    rows = []
    for group in groups.get("sessionGroups", []):
        row: list[Any] = [
            _number(group["hparams"].get(h.get("name", ""), "")) for h in hparam_infos
        ]
        values = {
            (v["name"]["group"], v["name"]["tag"]): _number(v["value"])
            for v in group["metricValues"]
        }
        for m in metric_infos:
            name = m.get("name", {})
            row.append(values.get((name.get("group", ""), name.get("tag", ""))))
        rows.append(visible(row))
    header = visible(header)
    if fmt == "json":
        return tb_json({"header": header, "rows": [[_json_value(v) for v in r] for r in rows]})
    if fmt == "latex":
        body = "\\begin{table}[tbp]\n\\begin{tabular}{" + "l" * len(header) + "}\n"
        body += " & ".join(map(_latex, header)) + " \\\\ \\hline\n"
        body += "".join(" & ".join(map(_latex, row)) + " \\\\\n" for row in rows)
        body += "\\hline\n\\end{tabular}\n\\end{table}\n"
        return body.encode("utf-8")
    out = io.StringIO()
    import csv  # loaded by the first CSV answer (off `boardd serve`'s start)

    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def _number(value: Any) -> Any:
    """A value of our JSON back to Python (non-finite floats are spelled as strings there)."""
    if value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    return value


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _latex(value: Any) -> str:
    """A cell as TensorBoard's LaTeX table writes it."""
    if value is None:
        return "-"
    if isinstance(value, bool | int):
        return f"${int(value)}$"
    if isinstance(value, float):
        if math.isnan(value):
            return r"$\mathrm{NaN}$"
        if math.isinf(value):
            sign = "-" if value < 0 else "+"
            return f"${sign}\\infty$"
        scientific = f"{value:.3g}"
        if "e" in scientific:
            coefficient, exponent = scientific.split("e")
            return f"${coefficient}\\cdot 10^{{{int(exponent)}}}$"
        return f"${scientific}$"
    return str(value).replace("_", "\\_").replace("%", "\\%")
