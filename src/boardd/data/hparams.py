"""The hparams API over a store: GetExperiment, ListSessionGroups, ListMetricEvals, with
TensorBoard's hparams plugin's rules (tensorboard/plugins/hparams: backend_context.py,
list_session_groups.py, metrics.py) and the proto comments of its api.proto.

Nothing here reads an event file or decodes a protocol buffer per answer: the writer files the
decoded hparams summaries (store/hparams.py) and each series' last point (``series``) in the
commit that ingests them. A store's sessions are held in memory (:class:`_State`) and brought
up to date from what changed since the generation they were read at (runs, hparams rows and
series by their generation), so that a request after a commit reads only what that commit
wrote. Derived columns (a metric's value per session, per group under an aggregation) are
computed when first asked for, once per generation.

Answers are built as proto3 JSON objects (camelCase, enum names, default values printed, as
TensorBoard's ``MessageToJson(always_print_fields_with_no_presence=True)``) for the slice
asked for only; :func:`list_session_groups` and friends give the protocol buffer messages.
"""

from __future__ import annotations

import json
import math
import os
import posixpath
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import apsw
from google.protobuf import json_format
from google.protobuf.message import Message

from boardd.config import DEFAULT_HPARAMS_IDLE_SECONDS
from boardd.data import experiments
from boardd.data.errors import BadRequest
from boardd.data.values import finite_or_text
from boardd.proto import hparams_api_pb2 as api
from boardd.store import hparams as store

#: A session without end info is RUNNING while its runs received data this recently (wall
#: time of their last points), UNKNOWN after (``boardd serve --hparams-idle-seconds``).
DEFAULT_IDLE_SECONDS = DEFAULT_HPARAMS_IDLE_SECONDS

STATUS_NAMES = {v.number: v.name for v in api.Status.DESCRIPTOR.values}
ALL_STATUSES = frozenset(STATUS_NAMES)

EMPTY_EXPERIMENT: dict[str, Any] = {
    "name": "",
    "description": "",
    "user": "",
    "timeCreatedSecs": 0.0,
    "hparamInfos": [],
    "metricInfos": [],
}

#: An hparam value as TensorBoard compares it: float, str or bool.
Value = float | str | bool


# -- the store's sessions in memory ------------------------------------------------------------


@dataclass(slots=True)
class _Run:
    name: str
    #: hparams rows by kind, decoded.
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: scalar series of the scalars plugin: tag → (value, step, wall time) of its last point.
    scalars: dict[str, tuple[float, int, float]] = field(default_factory=dict)
    #: The last wall time of any of its series, by series id.
    walls: dict[int, float] = field(default_factory=dict)
    #: series id → tag (what is known, to tell a new series from a written one).
    tags: dict[int, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Session:
    name: str
    run_id: int
    group: str
    start_time: float
    model_uri: str
    monitor_url: str
    #: Its hparams as TensorBoard shows them (number, string, bool; non-finite numbers left
    #: out), and every typed value for inference (type, value).
    hparams: dict[str, Value]
    typed: list[tuple[str, str, Any]]
    end: tuple[int, float] | None
    #: Its run and the runs below it (the sub-runs of its metrics).
    runs: list[int] = field(default_factory=list)


class _Structure:
    """What changes only when runs, hparams rows or the set of series change."""

    def __init__(self, runs: dict[int, _Run]) -> None:
        self.runs = runs
        by_name = {r.name: i for i, r in runs.items()}
        self.run_ids = by_name
        self.sessions: list[_Session] = []
        for run_id in sorted(runs, key=lambda i: runs[i].name):
            run = runs[run_id]
            start = run.rows.get("session_start")
            if start is None:
                continue
            end = run.rows.get("session_end")
            shown: dict[str, Value] = {}
            typed: list[tuple[str, str, Any]] = []
            for name, (kind, value) in start["hparams"].items():
                typed.append((name, kind, value))
                if kind == "number" and isinstance(value, float | int):
                    shown[name] = float(value)
                elif kind in ("string", "bool"):
                    shown[name] = value
            self.sessions.append(
                _Session(
                    run.name,
                    run_id,
                    start["groupName"] or run.name,
                    float(start["startTimeSecs"]),
                    start["modelUri"],
                    start["monitorUrl"],
                    shown,
                    typed,
                    None if end is None else (int(end["status"]), float(end["endTimeSecs"])),
                )
            )
        names = {s.name: k for k, s in enumerate(self.sessions)}
        #: Each run under a session: (run id, session index, group = its path below it).
        self.under: list[tuple[int, int, str]] = []
        for run_id, run in runs.items():
            session = _longest_parent(names, run.name)
            if session is None:
                continue
            k = names[session]
            self.sessions[k].runs.append(run_id)
            self.under.append((run_id, k, _relative_group(run.name, session)))
        self.experiment = self._experiment()
        self.metrics: list[tuple[str, str]] = [
            (m["name"]["group"], m["name"]["tag"])
            for m in self.experiment.get("metricInfos", [])
            if "name" in m
        ]
        self.metric_index = {m: i for i, m in enumerate(self.metrics)}
        self.hparam_types = _hparam_types(self.experiment, self.sessions)
        #: The full grouping (every status allowed): group name → session indices.
        self.groups = _group(self.sessions, range(len(self.sessions)))
        self._metric_runs: dict[int, list[int | None]] = {}

    def _experiment(self) -> dict[str, Any]:
        for run_id in sorted(self.runs, key=lambda i: self.runs[i].name):
            declared = self.runs[run_id].rows.get("experiment")
            if declared is not None:
                return declared
        infos = _infer_hparam_infos(self.sessions)
        if not infos:
            return dict(EMPTY_EXPERIMENT)
        names: set[tuple[str, str]] = set()
        for run_id, _, group in self.under:
            names.update((tag, group) for tag in self.runs[run_id].scalars)
        metric_infos = [
            {
                "name": {"group": group, "tag": tag},
                "displayName": "",
                "description": "",
                "datasetType": "DATASET_UNKNOWN",
            }
            for tag, group in sorted(names)
        ]
        return {**EMPTY_EXPERIMENT, "hparamInfos": infos, "metricInfos": metric_infos}

    def metric_runs(self, metric: int) -> list[int | None]:
        """The run holding ``metric`` of each session (None: no such run)."""
        found = self._metric_runs.get(metric)
        if found is None:
            group, _ = self.metrics[metric]
            found = [self.run_ids.get(_metric_run(s.name, group)) for s in self.sessions]
            self._metric_runs[metric] = found
        return found


def _metric_run(session: str, group: str) -> str:
    """TensorBoard's run of a session's metric (metrics.run_tag_from_session_and_metric)."""
    run = os.path.join(session, group)
    return run[:-1] if run.endswith("/") else run


def _longest_parent(names: dict[str, int], path: str) -> str | None:
    while path not in names:
        if not path:
            return None
        path = posixpath.dirname(path)
    return path


def _relative_group(run: str, session: str) -> str:
    group = posixpath.relpath(run, session)
    return "" if group == "." and not run.endswith(".") else group


def _group(sessions: Sequence[_Session], indices: Iterable[int]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for k in indices:
        groups.setdefault(sessions[k].group, []).append(k)
    return groups


def _hparam_types(experiment: dict[str, Any], sessions: Sequence[_Session]) -> dict[str, str]:
    """Each known hparam column's kind of values: number, string, bool or mixed."""
    kinds: dict[str, set[str]] = {}
    for s in sessions:
        for name, value in s.hparams.items():
            kinds.setdefault(name, set()).add(_kind(value))
    out = {name: (found.pop() if len(found) == 1 else "mixed") for name, found in kinds.items()}
    declared = {
        "DATA_TYPE_STRING": "string",
        "DATA_TYPE_BOOL": "bool",
        "DATA_TYPE_FLOAT64": "number",
    }
    for info in experiment.get("hparamInfos", []):
        name = info.get("name", "")
        if name not in out:
            out[name] = declared.get(info.get("type", ""), "mixed")
    return out


def _kind(value: Value) -> str:
    if isinstance(value, bool):
        return "bool"
    return "string" if isinstance(value, str) else "number"


def _infer_hparam_infos(sessions: Sequence[_Session]) -> list[dict[str, Any]]:
    """TensorBoard's HParamInfos from the sessions' values (backend_context's
    _compute_hparam_infos): one type fitting all values (mixed ones are strings), discrete
    domains for strings and bools, the interval of the values for numbers."""
    values: dict[str, list[tuple[str, Any]]] = {}
    for s in sessions:
        for name, kind, value in s.typed:
            values.setdefault(name, []).append((kind, value))
    out = []
    for name, found in values.items():
        dtype = ""
        for kind, _ in found:
            if kind == "other":
                continue
            if not dtype:
                dtype = kind
            elif dtype != kind:
                dtype = "string"
            if dtype == "string":
                break
        if not dtype:
            continue
        info: dict[str, Any] = {"name": name, "displayName": "", "description": ""}
        if dtype == "string":
            strings = sorted({_as_text(k, v) for k, v in found if k != "other"})
            info.update(type="DATA_TYPE_STRING", domainDiscrete=strings)
            info["differs"] = len(strings) > 1
        elif dtype == "bool":
            bools = sorted({bool(v) for _, v in found})
            info.update(type="DATA_TYPE_BOOL", domainDiscrete=bools, differs=len(bools) > 1)
        else:
            numbers = sorted(_number(v) for _, v in found)
            info.update(
                type="DATA_TYPE_FLOAT64",
                domainInterval={
                    "minValue": finite_or_text(numbers[0]),
                    "maxValue": finite_or_text(numbers[-1]),
                },
                differs=len(set(numbers)) > 1,
            )
        out.append(info)
    return out


def _number(value: Any) -> float:
    return float(value)  # "nan", "inf" (non-finite numbers are stored as their names) too


def _as_text(kind: str, value: Any) -> str:
    """A value as TensorBoard writes it in a string domain (its JSON, strings unquoted)."""
    if kind == "string":
        return str(value)
    if kind == "bool":
        return "true" if value else "false"
    return json.dumps(_number(value))


class _State:
    """One store's hparams data, as of ``generation``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.generation = -1
        self.runs: dict[int, _Run] = {}
        self.structure: _Structure | None = None
        #: Derived columns of this generation (cleared by each update).
        self.derived: dict[Any, Any] = {}

    def update(self, connection: apsw.Connection, exp_id: int) -> None:
        """Reads what changed since the generation it holds (everything the first time)."""
        current = experiments.generation(connection)
        if current == self.generation:
            return
        since = self.generation
        changed = False
        reload: list[int] = []
        for run in store.changed_runs(connection, exp_id, since):
            changed = True
            self.runs.pop(run.id, None)
            if not run.deleted:
                self.runs[run.id] = _Run(run.name)
                if since >= 0:
                    reload.append(run.id)
        for row in store.hparams_rows(connection, exp_id, since, tuple(reload)):
            run_data = self.runs.get(row.run_id)
            if run_data is not None:
                run_data.rows[row.kind] = json.loads(row.data)
                changed = True
        for s in store.series_rows(connection, exp_id, since, tuple(reload)):
            run_data = self.runs.get(s.run_id)
            if run_data is None:
                continue
            if s.id not in run_data.tags:
                run_data.tags[s.id] = s.tag
                changed = changed or s.scalar
            if s.last_wall_time is not None:
                run_data.walls[s.id] = s.last_wall_time
            if s.scalar and s.last_step is not None and s.last_wall_time is not None:
                value = math.nan if s.last_value is None else s.last_value
                run_data.scalars[s.tag] = (value, s.last_step, s.last_wall_time)
        if changed or self.structure is None:
            self.structure = _Structure(self.runs)
        self.derived = {}
        self.generation = current


#: (store file, store identity) → its state. A store rebuilt or recreated has another identity.
_STATES: dict[tuple[str, str], _State] = {}
_STATES_LOCK = threading.Lock()


class _Snapshot(NamedTuple):
    state: _State
    structure: _Structure


def _snapshot(connection: apsw.Connection, exp_id: int) -> _Snapshot:
    key = (connection.filename, experiments.store_id(connection))
    with _STATES_LOCK:
        state = _STATES.get(key)
        if state is None:
            for old in [k for k in _STATES if k[0] == key[0]]:
                del _STATES[old]
            state = _STATES[key] = _State()
    state.update(connection, exp_id)
    assert state.structure is not None
    return _Snapshot(state, state.structure)


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
    with _lock_for(connection):
        snap = _snapshot(connection, exp_id)
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


def experiment(
    connection: apsw.Connection, exp_id: int, request: api.GetExperimentRequest | None = None
) -> api.Experiment:
    """GetExperiment as a message (see :func:`experiment_json`)."""
    request = request or api.GetExperimentRequest()
    found = experiment_json(
        connection,
        exp_id,
        include_metrics=not request.HasField("include_metrics") or request.include_metrics,
        hparams_limit=request.hparams_limit,
    )
    message = api.Experiment()
    json_format.ParseDict(found, message)
    return message


def has_hparams(connection: apsw.Connection, exp_id: int) -> bool:
    """Whether the store has hparams data TensorBoard shows (a session or an experiment)."""
    with _lock_for(connection):
        snap = _snapshot(connection, exp_id)
    return bool(snap.structure.sessions) or snap.structure.experiment != EMPTY_EXPERIMENT


# -- session groups ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Column:
    """One ColParams, checked."""

    hparam: str | None
    metric: int | None
    order: int
    missing_first: bool
    exclude_missing: bool
    accept: Callable[[Any], bool] | None


def _columns(request: api.ListSessionGroupsRequest, structure: _Structure) -> list[_Column]:
    out = []
    for k, col in enumerate(request.col_params):
        where = f"colParams[{k}]"
        which = col.WhichOneof("name")
        hparam: str | None = None
        metric: int | None = None
        if which == "hparam":
            hparam = col.hparam
            kind = structure.hparam_types.get(hparam)
            if kind is None:
                known = ", ".join(sorted(structure.hparam_types)) or "none"
                raise BadRequest(f"{where}: unknown hparam {hparam!r} (known: {known})")
            label = f"hparam {hparam!r}"
        elif which == "metric":
            key = (col.metric.group, col.metric.tag)
            metric = structure.metric_index.get(key)
            if metric is None:
                known = ", ".join(_metric_label(*m) for m in structure.metrics) or "none"
                raise BadRequest(f"{where}: unknown metric {_metric_label(*key)} (known: {known})")
            kind = "number"
            label = f"metric {_metric_label(*key)}"
        else:
            raise BadRequest(f"{where}: give hparam or metric")
        if col.order not in (api.ORDER_UNSPECIFIED, api.ORDER_ASC, api.ORDER_DESC):
            raise BadRequest(f"{where}: unknown order {col.order}")
        accept = _filter(col, kind, f"{where} ({label})")
        out.append(
            _Column(
                hparam,
                metric,
                col.order,
                col.missing_values_first,
                col.exclude_missing_values,
                accept,
            )
        )
    return out


def _metric_label(group: str, tag: str) -> str:
    return f"{group}/{tag}" if group else tag


def _filter(col: api.ColParams, kind: str, where: str) -> Callable[[Any], bool] | None:
    which = col.WhichOneof("filter")
    if which == "filter_regexp":
        if kind != "string":
            raise BadRequest(f"{where}: filterRegexp applies to string hparams only")
        try:
            pattern = re.compile(col.filter_regexp)
        except (re.error, RecursionError, OverflowError) as exc:
            raise BadRequest(f"{where}: filterRegexp does not compile: {exc}") from None
        return lambda v: pattern.search(v) is not None
    if which == "filter_interval":
        if kind not in ("number", "bool"):
            raise BadRequest(f"{where}: filterInterval applies to numeric columns only")
        lo, hi = col.filter_interval.min_value, col.filter_interval.max_value
        if lo > hi:
            raise BadRequest(f"{where}: filterInterval minValue {lo} is above maxValue {hi}")
        return lambda v: lo <= v <= hi
    if which == "filter_discrete":
        allowed = [_python(v) for v in col.filter_discrete.values]
        return lambda v: v in allowed
    return None


def _python(value: Any) -> Any:
    which = value.WhichOneof("kind")
    if which in ("number_value", "string_value", "bool_value"):
        return getattr(value, which)
    return _NEVER


class _Never:
    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 0


_NEVER = _Never()


@dataclass(frozen=True, slots=True)
class _Aggregation:
    type: int
    metric: int | None


def _aggregation(request: api.ListSessionGroupsRequest, structure: _Structure) -> _Aggregation:
    kind = request.aggregation_type
    if kind in (api.AGGREGATION_UNSET, api.AGGREGATION_AVG):
        return _Aggregation(api.AGGREGATION_AVG, None)
    if kind not in (api.AGGREGATION_MEDIAN, api.AGGREGATION_MIN, api.AGGREGATION_MAX):
        raise BadRequest(f"unknown aggregationType {kind}")
    if not request.HasField("aggregation_metric"):
        raise BadRequest("aggregationMetric is required with this aggregationType")
    key = (request.aggregation_metric.group, request.aggregation_metric.tag)
    metric = structure.metric_index.get(key)
    if metric is None:
        known = ", ".join(_metric_label(*m) for m in structure.metrics) or "none"
        raise BadRequest(
            f"aggregationMetric: unknown metric {_metric_label(*key)} (known: {known})"
        )
    return _Aggregation(kind, metric)


#: A metric's value in a session: (value, step, wall time), None when missing.
_MV = tuple[float, int, float] | None


class _Query:
    """One ListSessionGroups request over one snapshot."""

    def __init__(self, snap: _Snapshot, idle_seconds: float, now: float) -> None:
        self.state = snap.state
        self.structure = snap.structure
        self.idle = idle_seconds
        self.now = now

    # Session values.

    def session_metric(self, metric: int) -> list[_MV]:
        key = ("sm", metric)
        found: list[_MV] | None = self.state.derived.get(key)
        if found is None:
            _, tag = self.structure.metrics[metric]
            runs = self.state.runs
            found = []
            for run_id in self.structure.metric_runs(metric):
                found.append(None if run_id is None else runs[run_id].scalars.get(tag))
            self.state.derived[key] = found
        return found

    def status(self, k: int) -> int:
        session = self.structure.sessions[k]
        if session.end is not None:
            return session.end[0]
        runs = self.state.runs
        last = max((w for r in session.runs for w in runs[r].walls.values()), default=None)
        if last is not None and self.now - last < self.idle:
            return api.STATUS_RUNNING
        return api.STATUS_UNKNOWN

    # Groups.

    def groups(self, allowed: frozenset[int]) -> dict[str, list[int]]:
        if allowed >= ALL_STATUSES:
            return self.structure.groups
        n = len(self.structure.sessions)
        return _group(self.structure.sessions, (k for k in range(n) if self.status(k) in allowed))

    def representative(self, members: list[int], agg: _Aggregation) -> int | None:
        """The session whose metrics a MEDIAN/MIN/MAX group shows (None: none has the
        aggregation metric)."""
        assert agg.metric is not None
        column = self.session_metric(agg.metric)
        measured = [(mv[0], k) for k in members if (mv := column[k]) is not None]
        if not measured:
            return None
        if agg.type == api.AGGREGATION_MEDIAN:
            measured.sort(key=lambda m: m[0])
            return measured[(len(measured) - 1) // 2][1]
        pick = min if agg.type == api.AGGREGATION_MIN else max
        return pick(measured, key=lambda m: m[0])[1]

    def group_metric(self, metric: int, members: list[int], agg: _Aggregation) -> _MV:
        column = self.session_metric(metric)
        if agg.type == api.AGGREGATION_AVG:
            if len(members) == 1:
                return column[members[0]]
            found = [mv for k in members if (mv := column[k]) is not None]
            if not found:
                return None
            n = len(found)
            total = 0.0
            steps = 0
            walls = 0.0
            for value, step, wall in found:
                total += value
                steps += step
                walls += wall
            return (total / n, steps // n, walls / n)
        rep = self.representative(members, agg)
        return None if rep is None else column[rep]

    def column_values(
        self, col: _Column, names: list[str], groups: dict[str, list[int]], agg: _Aggregation
    ) -> list[Any]:
        """The column's value of each group (None: missing)."""
        sessions = self.structure.sessions
        if col.hparam is not None:
            name = col.hparam
            return [sessions[groups[g][0]].hparams.get(name) for g in names]
        assert col.metric is not None
        out = []
        for g in names:
            mv = self.group_metric(col.metric, groups[g], agg)
            out.append(None if mv is None else mv[0])
        return out


def _sort_key(value: Any) -> tuple[int, Any]:
    """A total order within one column: numbers (bools among them, as Python compares them),
    then strings; NaN after every number."""
    if isinstance(value, str):
        return (2, value)
    if value != value:
        return (1, 0.0)
    return (0, value)


#: The key of a missing value (compared only with other missing values).
_MISSING_KEY = (0, 0.0)


def _sort_keys(values: list[Any], *, none_is_largest: bool) -> list[tuple[bool, tuple[int, Any]]]:
    """TensorBoard's sort keys (list_session_groups._create_key_func): missing values before
    or after every other value of the column."""
    return [
        (none_is_largest, _MISSING_KEY) if v is None else (not none_is_largest, _sort_key(v))
        for v in values
    ]


def session_groups_json(
    connection: apsw.Connection,
    exp_id: int,
    request: api.ListSessionGroupsRequest,
    *,
    idle_seconds: float = DEFAULT_IDLE_SECONDS,
    now: float | None = None,
    prefix: str = "",
) -> dict[str, Any]:
    """ListSessionGroups as proto3 JSON (see :func:`list_session_groups`); ``prefix``: a path
    put before the run names (session names, and group names taken from them)."""
    if request.start_index < 0 or request.slice_size < 0:
        raise BadRequest(
            f"startIndex {request.start_index}, sliceSize {request.slice_size}: give 0 or more"
        )
    for status in request.allowed_statuses:
        if status not in ALL_STATUSES:
            raise BadRequest(f"allowedStatuses: unknown status {status}")
    include_metrics = not request.HasField("include_metrics") or request.include_metrics
    with _lock_for(connection):
        snap = _snapshot(connection, exp_id)
        structure = snap.structure
        if not structure.sessions:
            return {"sessionGroups": [], "totalSize": 0}
        columns = _columns(request, structure)
        agg = _aggregation(request, structure)
        query = _Query(snap, idle_seconds, time.time() if now is None else now)
        groups = query.groups(frozenset(request.allowed_statuses))
        names = sorted(groups)
        # Filters: every column's, on the group's values.
        keep = [True] * len(names)
        values_of: dict[int, list[Any]] = {}
        for k, col in enumerate(columns):
            if (
                col.accept is None
                and not col.exclude_missing
                and col.order == api.ORDER_UNSPECIFIED
            ):
                continue
            values = query.column_values(col, names, groups, agg)
            values_of[k] = values
            if col.accept is None and not col.exclude_missing:
                continue
            accept = col.accept
            exclude = col.exclude_missing
            for i, value in enumerate(values):
                if not keep[i]:
                    continue
                if value is None:
                    keep[i] = not exclude
                elif accept is not None and not accept(value):
                    keep[i] = False
        order = [i for i in range(len(names)) if keep[i]]
        # Sorting: by name, then by each ordered column from the least significant up (stable
        # sorts, as TensorBoard: ties keep the order of the less significant keys).
        for k in reversed(range(len(columns))):
            col = columns[k]
            if col.order == api.ORDER_UNSPECIFIED:
                continue
            values = values_of[k]
            if col.order == api.ORDER_ASC:
                keys = _sort_keys(values, none_is_largest=not col.missing_first)
                order.sort(key=keys.__getitem__)
            else:
                keys = _sort_keys(values, none_is_largest=col.missing_first)
                order.sort(key=keys.__getitem__, reverse=True)
        total = len(order)
        chosen = order[request.start_index : request.start_index + request.slice_size]
        include = _hparams_to_include(request)
        out = [
            _group_json(query, names[i], groups[names[i]], agg, include, include_metrics, prefix)
            for i in chosen
        ]
    return {"sessionGroups": out, "totalSize": total}


def _hparams_to_include(request: api.ListSessionGroupsRequest) -> set[str] | None:
    """TensorBoard's include_in_result: when any column sets it, only hparam columns not set
    to false are shown."""
    if not any(c.HasField("include_in_result") for c in request.col_params):
        return None
    return {
        c.hparam
        for c in request.col_params
        if c.WhichOneof("name") == "hparam"
        and (not c.HasField("include_in_result") or c.include_in_result)
    }


def _metric_values(query: _Query, values: Iterable[tuple[int, _MV]]) -> list[dict[str, Any]]:
    out = []
    for metric, mv in values:
        if mv is None:
            continue
        group, tag = query.structure.metrics[metric]
        out.append(
            {
                "name": {"group": group, "tag": tag},
                "value": finite_or_text(mv[0]),
                "trainingStep": mv[1],
                "wallTimeSecs": mv[2],
            }
        )
    return out


def _group_json(
    query: _Query,
    name: str,
    members: list[int],
    agg: _Aggregation,
    include: set[str] | None,
    include_metrics: bool,
    prefix: str,
) -> dict[str, Any]:
    sessions = query.structure.sessions
    first = sessions[members[0]]
    n_metrics = len(query.structure.metrics) if include_metrics else 0
    metric_ids = range(n_metrics)
    hparams = {
        k: finite_or_text(v) if isinstance(v, float) else v
        for k, v in first.hparams.items()
        if include is None or k in include
    }
    if agg.type == api.AGGREGATION_AVG:
        group_values = [(m, query.group_metric(m, members, agg)) for m in metric_ids]
    else:
        rep = query.representative(members, agg) if n_metrics else None
        group_values = (
            [] if rep is None else [(m, query.session_metric(m)[rep]) for m in metric_ids]
        )
    if prefix and name == first.name:
        name = posixpath.join(prefix, name)
    return {
        "name": name,
        "hparams": hparams,
        "metricValues": _metric_values(query, group_values),
        "sessions": [
            {
                "name": posixpath.join(prefix, s.name) if prefix else s.name,
                "startTimeSecs": s.start_time,
                "endTimeSecs": 0.0 if s.end is None else s.end[1],
                "status": STATUS_NAMES[query.status(k)],
                "modelUri": s.model_uri,
                "metricValues": _metric_values(
                    query, ((m, query.session_metric(m)[k]) for m in metric_ids)
                ),
                "monitorUrl": s.monitor_url,
            }
            for k in members
            for s in (sessions[k],)
        ],
        "monitorUrl": first.monitor_url,
    }


def list_session_groups(
    connection: apsw.Connection,
    exp_id: int,
    request: api.ListSessionGroupsRequest,
    *,
    idle_seconds: float = DEFAULT_IDLE_SECONDS,
    now: float | None = None,
) -> api.ListSessionGroupsResponse:
    """ListSessionGroups: the sessions whose status is allowed, grouped (a session's group is
    its start info's group_name, else its own name; a group shows its first session's
    hparams), their metrics aggregated per group, the groups filtered and sorted by the
    columns, then the slice asked for, with the size of the filtered list.

    Invalid requests (an unknown column, a regexp that does not compile, a filter that does
    not fit the column's type, negative paging) raise :class:`BadRequest`.
    """
    found = session_groups_json(connection, exp_id, request, idle_seconds=idle_seconds, now=now)
    message = api.ListSessionGroupsResponse()
    json_format.ParseDict(found, message)
    return message


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
    sub-run ``group``), sorted by step; empty if there is none (no such session or metric)."""
    run = _metric_run(request.session_name, request.metric_name.group)
    return [
        MetricEval(wall, step, math.nan if value is None else value)
        for wall, step, value in store.scalar_points(
            connection, exp_id, run, request.metric_name.tag
        )
    ]


def metric_evals_json(
    connection: apsw.Connection, exp_id: int, request: api.ListMetricEvalsRequest
) -> list[list[Any]]:
    """ListMetricEvals as TensorBoard answers it: ``[[wall_time, step, value], …]``."""
    return [
        [e.wall_time, e.step, finite_or_text(e.value)]
        for e in list_metric_evals(connection, exp_id, request)
    ]


# -- requests ----------------------------------------------------------------------------------


def parse_request(text: str | bytes, message: type[Message]) -> Any:
    """A request message from its proto3 JSON (BadRequest saying what does not parse)."""
    try:
        return json_format.Parse(text or "{}", message(), ignore_unknown_fields=False)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise BadRequest(f"the request is not a valid {message.DESCRIPTOR.name}: {exc}") from None


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


def _lock_for(connection: apsw.Connection) -> threading.Lock:
    """One lock per store file: its in-memory state is updated and read by one thread at a
    time (answers are cached, so this rarely waits)."""
    with _LOCKS_LOCK:
        lock = _LOCKS.get(connection.filename)
        if lock is None:
            lock = _LOCKS[connection.filename] = threading.Lock()
        return lock
