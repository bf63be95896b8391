"""The hparams plugin's engine over a store: GetExperiment, ListSessionGroups, ListMetricEvals,
with TensorBoard's hparams plugin's rules (tensorboard/plugins/hparams: backend_context.py,
list_session_groups.py, metrics.py) and the proto comments of its api.proto.

Nothing here reads an event file or decodes a protocol buffer per answer: the writer files the
decoded hparams summaries (store/hparams.py) and each series' last point (``series``) in the
commit that ingests them. A store's sessions are held in memory (:mod:`.state`) and brought
up to date from what changed since the generation they were read at (runs, hparams rows and
series by their generation), so that a request after a commit reads only what that commit
wrote. Derived columns (a metric's value per session, per group under an aggregation) are
computed when first asked for, once per generation. The sessions and what TensorBoard infers
from them are :mod:`.sessions`; ListSessionGroups is :mod:`.session_groups`.

Answers are built as proto3 JSON objects (camelCase, enum names, default values printed, as
TensorBoard's ``MessageToJson(always_print_fields_with_no_presence=True)``) for the slice
asked for only; :func:`list_session_groups` and friends give the protocol buffer messages.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import apsw
from google.protobuf import json_format
from google.protobuf.message import Message

from boardd.data.errors import BadRequest, NotFound
from boardd.data.values import finite_or_text
from boardd.plugins.hparams.session_groups import (
    list_session_groups,
    session_groups_bytes_of,
    session_groups_json,
    session_groups_json_of,
)
from boardd.plugins.hparams.sessions import (
    ALL_STATUSES,
    DEFAULT_IDLE_SECONDS,
    EMPTY_EXPERIMENT,
    EMPTY_SESSION_GROUPS,
    STATUS_NAMES,
    metric_run,
    named_run,
)
from boardd.plugins.hparams.state import (
    HparamsCache,
    Source,
    locked,
    preload,
    preload_provider,
    snapshot,
    source_of,
    view,
)
from boardd.proto import hparams_api_pb2 as api
from boardd.store import hparams as store

__all__ = [
    "ALL_STATUSES",
    "DEFAULT_IDLE_SECONDS",
    "EMPTY_EXPERIMENT",
    "EMPTY_SESSION_GROUPS",
    "STATUS_NAMES",
    "HparamsCache",
    "MetricEval",
    "Source",
    "experiment",
    "experiment_json",
    "experiment_json_of",
    "has_hparams",
    "list_metric_evals",
    "list_session_groups",
    "metric_evals_json",
    "metric_run",
    "named_run",
    "parse_request",
    "preload",
    "preload_provider",
    "session_groups_bytes_of",
    "session_groups_json",
    "session_groups_json_of",
    "source_of",
]


# -- experiment --------------------------------------------------------------------------------


def experiment_json(
    connection: apsw.Connection,
    exp_id: int,
    *,
    include_metrics: bool = True,
    hparams_limit: int = 0,
) -> dict[str, Any]:
    """The experiment as proto3 JSON: the one an ``_hparams_/experiment`` summary declares (the
    first run's that has one, by name), else inferred from the sessions as TensorBoard does;
    hparams sorted (differing ones first, then by name) and cut to ``hparams_limit`` (0: all)."""
    return experiment_json_of(
        [Source(connection, exp_id)], include_metrics=include_metrics, hparams_limit=hparams_limit
    )


def experiment_json_of(
    sources: Sequence[Source], *, include_metrics: bool = True, hparams_limit: int = 0
) -> dict[str, Any]:
    """:func:`experiment_json` of several sources, merged (see :func:`view`)."""
    with locked(sources):
        snap, _ = view(sources)
        found = snap.structure.experiment
    if hparams_limit < 0:
        raise BadRequest(f"hparamsLimit {hparams_limit}: give 0 (all) or more")
    out = dict(found)
    infos = sorted(
        out.get("hparamInfos", []),
        key=lambda i: (not i.get("differs", False), i.get("name", "")),
    )
    out["hparamInfos"] = infos[:hparams_limit] if hparams_limit else infos
    if not include_metrics:
        out["metricInfos"] = []
    return out


def experiment(source: Source, request: api.GetExperimentRequest | None = None) -> api.Experiment:
    """GetExperiment as a message (see :func:`experiment_json`)."""
    request = request or api.GetExperimentRequest()
    found = experiment_json_of(
        [source],
        include_metrics=not request.HasField("include_metrics") or request.include_metrics,
        hparams_limit=request.hparams_limit,
    )
    message = api.Experiment()
    json_format.ParseDict(found, message)
    return message


def has_hparams(source: Source) -> bool:
    """Whether the store has hparams data TensorBoard shows (a session or an experiment)."""
    with locked([source]):
        snap = snapshot(source)
    return bool(snap.structure.sessions) or snap.structure.experiment != EMPTY_EXPERIMENT


# -- metric evals ------------------------------------------------------------------------------


class MetricEval(NamedTuple):
    """One point of a session's metric, as TensorBoard lists it."""

    wall_time: float
    step: int
    value: float


def list_metric_evals(
    connection: apsw.Connection, exp_id: int, request: api.ListMetricEvalsRequest
) -> list[MetricEval]:
    """ListMetricEvals: the points of the metric's scalar series in the session's run (or its
    sub-run ``group``), sorted by step. No such series (no such session or metric) raises
    :class:`NotFound` with TensorBoard's message (its scalars plugin's 404)."""
    run = metric_run(request.session_name, request.metric_name.group)
    tag = request.metric_name.tag
    points = store.scalar_points(connection, exp_id, run, tag)
    if not points:
        raise NotFound(f"No scalar data for run={run!r}, tag={tag!r}")
    return [MetricEval(w, step, math.nan if v is None else v) for w, step, v in points]


def metric_evals_json(source: Source, request: api.ListMetricEvalsRequest) -> list[list[Any]]:
    """ListMetricEvals as TensorBoard answers it: ``[[wall_time, step, value], …]``."""
    return [
        [e.wall_time, e.step, finite_or_text(e.value)]
        for e in list_metric_evals(source.connection, source.exp_id, request)
    ]


# -- requests ----------------------------------------------------------------------------------


def parse_request(text: str | bytes, message: type[Message]) -> Any:
    """A request message from its proto3 JSON object (BadRequest saying what does not parse)."""
    name = message.DESCRIPTOR.name
    try:
        parsed = json.loads(text or "{}")
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"the request is not a valid {name}: not JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise BadRequest(f"the request is not a valid {name}: give a JSON object")
    try:
        return json_format.ParseDict(parsed, message(), ignore_unknown_fields=False)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise BadRequest(f"the request is not a valid {name}: {exc}") from None
