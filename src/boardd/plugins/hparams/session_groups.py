"""ListSessionGroups over the sessions in memory: the columns asked for, filters, the
aggregation of a group's sessions, sorting, the slice, and the proto3 JSON of each group
(encoded once per generation and kept while still right)."""

from __future__ import annotations

import json
import posixpath
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import apsw
from google.protobuf import json_format

from boardd.data.errors import BadRequest
from boardd.data.values import finite_or_text
from boardd.plugins.hparams.sessions import (
    ALL_STATUSES,
    DEFAULT_IDLE_SECONDS,
    STATUS_NAMES,
    Session,
    Structure,
    named_run,
)
from boardd.plugins.hparams.state import Snapshot, Source, locked, view
from boardd.proto import hparams_api_pb2 as api

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


def _columns(request: api.ListSessionGroupsRequest, structure: Structure) -> list[_Column]:
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


def _aggregation(request: api.ListSessionGroupsRequest, structure: Structure) -> _Aggregation:
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


#: A metric's value in a session or group: (value, step, wall time), None when missing.
_MV = tuple[float, int, float] | None


class _Query:
    """One ListSessionGroups request over one snapshot."""

    def __init__(self, snap: Snapshot, idle_seconds: float, now: float) -> None:
        self.state = snap.state
        self.structure = snap.structure
        self.runs = snap.state.runs
        self.idle = idle_seconds
        self.now = now

    def value(self, session: Session, metric: int) -> _MV:
        group, tag = self.structure.metrics[metric]
        run_id = self.structure.metric_run(session, group)
        return None if run_id is None else self.runs[run_id].scalars.get(tag)

    def status(self, session: Session) -> int:
        if session.end is not None:
            return session.end[0]
        runs = self.runs
        last = max((w for r in session.runs for w in runs[r].walls.values()), default=None)
        if last is not None and self.now - last < self.idle:
            return api.STATUS_RUNNING
        return api.STATUS_UNKNOWN

    def groups(self, allowed: frozenset[int]) -> tuple[list[str], dict[str, list[Session]]]:
        """The group names in order, and each group's sessions (by name) of allowed status."""
        structure = self.structure
        if allowed >= ALL_STATUSES:
            return structure.group_names, structure.groups
        kept: dict[str, list[Session]] = {}
        for session in structure.ordered:
            if self.status(session) in allowed:
                kept.setdefault(session.group, []).append(session)
        return sorted(kept), kept

    def representative(self, members: list[Session], agg: _Aggregation) -> Session | None:
        """The session whose metrics a MEDIAN/MIN/MAX group shows (None: none has the
        aggregation metric)."""
        assert agg.metric is not None
        measured = [(mv[0], s) for s in members if (mv := self.value(s, agg.metric)) is not None]
        if not measured:
            return None
        if agg.type == api.AGGREGATION_MEDIAN:
            measured.sort(key=lambda m: m[0])
            return measured[(len(measured) - 1) // 2][1]
        pick = min if agg.type == api.AGGREGATION_MIN else max
        return pick(measured, key=lambda m: m[0])[1]

    def group_value(self, metric: int, members: list[Session], agg: _Aggregation) -> _MV:
        if agg.type != api.AGGREGATION_AVG:
            rep = self.representative(members, agg)
            return None if rep is None else self.value(rep, metric)
        if len(members) == 1:
            return self.value(members[0], metric)
        found = [mv for s in members if (mv := self.value(s, metric)) is not None]
        if not found:
            return None
        n = len(found)
        if n == 1:
            return found[0]
        total = 0.0
        steps = 0
        walls = 0.0
        for value, step, wall in found:
            total += value
            steps += step
            walls += wall
        return (total / n, steps // n, walls / n)

    def column(
        self,
        col: _Column,
        names: list[str],
        groups: dict[str, list[Session]],
        agg: _Aggregation,
    ) -> list[Any]:
        """The column's value of each group (None: missing), cached: an hparam's as long as the
        sessions are the same (a commit of new points keeps them), a metric's for this
        generation."""
        full = groups is self.structure.groups
        if col.hparam is not None:
            name = col.hparam
            cache = self.structure.columns
            cached = cache.get(name) if full else None
            if cached is None:
                # Each group's value is its first session's by name (see _group_json).
                cached = [groups[g][0].hparams.get(name) for g in names]
                if full:
                    cache[name] = cached
            return cached
        key = (col.metric, agg)
        metric = col.metric
        assert metric is not None
        group, tag = self.structure.metrics[metric]
        if full:
            now: tuple[list[str], list[Any]] | None = self.state.derived.get(key)
            if now is not None and now[0] is names:
                return now[1]
            before: tuple[list[str], list[Any]] | None = self.state.previous.get(key)
            if before is not None and before[0] is names:
                # Only points came since: the groups of the sessions they touched change.
                found = list(before[1])
                index = self.structure.group_index
                for session in self.state.touched:
                    i = index.get(session.group)
                    if i is not None:
                        found[i] = self._entry(metric, group, tag, groups[names[i]], agg)
                self.state.derived[key] = (names, found)
                return found
        found = [self._entry(metric, group, tag, groups[g], agg) for g in names]
        if full:
            self.state.derived[key] = (names, found)
        return found

    def _entry(
        self, metric: int, group: str, tag: str, members: list[Session], agg: _Aggregation
    ) -> Any:
        """One group's value of a metric column (None: missing)."""
        if agg.type != api.AGGREGATION_AVG:
            mv = self.group_value(metric, members, agg)
            return None if mv is None else mv[0]
        total = 0.0
        n = 0
        runs = self.runs
        for session in members:
            try:
                run_id = session.metric_runs[group]
            except KeyError:
                run_id = self.structure.metric_run(session, group)
            if run_id is None:
                continue
            got = runs[run_id].scalars.get(tag)
            if got is not None:
                total += got[0]
                n += 1
        return None if not n else total if n == 1 else total / n


#: The key of a missing value (compared only with other missing values).
_MISSING_KEY = (0, 0.0)


def _sort_keys(values: list[Any], *, none_is_largest: bool) -> list[tuple[bool, tuple[int, Any]]]:
    """TensorBoard's sort keys (list_session_groups._create_key_func): missing values before
    or after every other value of the column (:func:`_sort_key` inlined: 10,000 calls)."""
    present = not none_is_largest
    missing = (none_is_largest, _MISSING_KEY)
    return [
        missing
        if v is None
        else (present, (2, v) if v.__class__ is str else (0, v) if v == v else (1, 0.0))
        for v in values
    ]


class _Selection(NamedTuple):
    """The groups a ListSessionGroups request shows, and how."""

    query: _Query
    names: list[str]
    groups: dict[str, list[Session]]
    #: The indexes (into ``names``) of the slice asked for.
    chosen: list[int]
    total: int
    agg: _Aggregation
    include: frozenset[str] | None
    include_metrics: bool

    def group_json(self, i: int, prefix: str, named: bool = False) -> dict[str, Any]:
        """The group ``names[i]`` as proto3 JSON (``named``: with boardd's names, see
        :func:`_group_json`)."""
        name = self.names[i]
        members = self.groups[name]
        q = self.query
        return _group_json(
            q, name, members, self.agg, self.include, self.include_metrics, prefix, named
        )

    def fragment(self, i: int, prefix: str, named: bool = False) -> str:
        """:meth:`group_json` encoded, kept in the state's fragments while the group's
        sessions are the same sessions in the same states."""
        name = self.names[i]
        members = tuple(self.groups[name])
        statuses = tuple(map(self.query.status, members))
        kept = self.query.state.fragments.setdefault(name, {})
        options = (self.agg, self.include, self.include_metrics, prefix, named)
        entry = kept.get(options)
        # Sessions compare by identity.
        if entry is None or entry[0] != statuses or entry[1] != members:
            found = self.group_json(i, prefix, named)
            text = json.dumps(found, separators=(",", ":"), allow_nan=False)
            entry = kept[options] = (statuses, members, text)
        return entry[2]


def _check(request: api.ListSessionGroupsRequest) -> None:
    if request.start_index < 0 or request.slice_size < 0:
        raise BadRequest(
            f"startIndex {request.start_index}, sliceSize {request.slice_size}: give 0 or more"
        )
    for status in request.allowed_statuses:
        if status not in ALL_STATUSES:
            raise BadRequest(f"allowedStatuses: unknown status {status}")


def _select(
    snap: Snapshot, request: api.ListSessionGroupsRequest, idle_seconds: float, now: float | None
) -> _Selection | None:
    """Filters, sorts and slices the groups (None: no sessions); under the store's lock."""
    include_metrics = not request.HasField("include_metrics") or request.include_metrics
    structure = snap.structure
    columns = _columns(request, structure)
    agg = _aggregation(request, structure)
    if not structure.sessions:
        return None
    query = _Query(snap, idle_seconds, time.time() if now is None else now)
    names, groups = query.groups(frozenset(request.allowed_statuses))
    # Filters: every column's, on the group's values.
    keep = [True] * len(names)
    values_of: dict[int, list[Any]] = {}
    for k, col in enumerate(columns):
        if col.accept is None and not col.exclude_missing and col.order == api.ORDER_UNSPECIFIED:
            continue
        if col.metric is not None and not include_metrics:
            # TensorBoard: without metrics, no group has a metric value (all missing).
            values: list[Any] = [None] * len(names)
        else:
            values = query.column(col, names, groups, agg)
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
        ascending = col.order == api.ORDER_ASC
        largest = not col.missing_first if ascending else col.missing_first
        if col.hparam is not None and values is structure.columns.get(col.hparam):
            # An hparam column's keys live as long as its values.
            keys = structure.columns_keys.get((col.hparam, largest))
            if keys is None:
                keys = _sort_keys(values, none_is_largest=largest)
                structure.columns_keys[(col.hparam, largest)] = keys
        else:
            keys = _sort_keys(values, none_is_largest=largest)
        order.sort(key=keys.__getitem__, reverse=not ascending)
    chosen = order[request.start_index : request.start_index + request.slice_size]
    return _Selection(
        query,
        names,
        groups,
        chosen,
        len(order),
        agg,
        _hparams_to_include(request),
        include_metrics,
    )


def session_groups_json(
    connection: apsw.Connection,
    exp_id: int,
    request: api.ListSessionGroupsRequest,
    *,
    idle_seconds: float = DEFAULT_IDLE_SECONDS,
    now: float | None = None,
    prefix: str = "",
    named: bool = False,
) -> dict[str, Any]:
    """ListSessionGroups as proto3 JSON (see :func:`list_session_groups`); ``prefix``: a path
    put before the run names (session names, and group names taken from them). ``named``:
    with boardd's names besides TensorBoard's message: each session's ``run`` (the run the
    user named, :func:`named_run`) and each group's ``displayName``; not TensorBoard's answer
    (its routes leave it False)."""
    return session_groups_json_of(
        [Source(connection, exp_id, prefix)],
        request,
        idle_seconds=idle_seconds,
        now=now,
        named=named,
    )


def session_groups_json_of(
    sources: Sequence[Source],
    request: api.ListSessionGroupsRequest,
    *,
    idle_seconds: float = DEFAULT_IDLE_SECONDS,
    now: float | None = None,
    named: bool = False,
) -> dict[str, Any]:
    """:func:`session_groups_json` of several sources, merged (see :func:`view`)."""
    found: dict[str, Any] = _session_groups(
        sources, request, idle_seconds, now, encode=False, named=named
    )
    return found


def session_groups_bytes_of(
    sources: Sequence[Source],
    request: api.ListSessionGroupsRequest,
    *,
    idle_seconds: float = DEFAULT_IDLE_SECONDS,
    now: float | None = None,
    named: bool = False,
) -> bytes:
    """:func:`session_groups_json_of` as compact JSON bytes (``json.dumps`` with separators
    ``,:``), each group's JSON kept and used again while its sessions, their statuses and
    metric values are the same (a commit re-encodes only the groups of the sessions it
    touched)."""
    found: bytes = _session_groups(sources, request, idle_seconds, now, encode=True, named=named)
    return found


#: At most this many encoded groups are kept per store, then the cache starts again (a group
#: of 4 sessions × 10 metrics is ~4 KB of JSON: ~20 MB at most).
MAX_FRAGMENTS = 5_000


def _session_groups(
    sources: Sequence[Source],
    request: api.ListSessionGroupsRequest,
    idle_seconds: float,
    now: float | None,
    *,
    encode: bool,
    named: bool = False,
) -> Any:
    _check(request)
    with locked(sources):
        snap, prefix = view(sources)
        found = _select(snap, request, idle_seconds, now)
        if found is None:
            empty = {"sessionGroups": [], "totalSize": 0}
            return json.dumps(empty, separators=(",", ":")).encode() if encode else empty
        if not encode:
            groups = [found.group_json(i, prefix, named) for i in found.chosen]
            return {"sessionGroups": groups, "totalSize": found.total}
        fragments = found.query.state.fragments
        if sum(map(len, fragments.values())) > MAX_FRAGMENTS:
            fragments.clear()
        parts = [found.fragment(i, prefix, named) for i in found.chosen]
    head = '{"sessionGroups":[' + ",".join(parts) + '],"totalSize":'
    return (head + str(found.total) + "}").encode("utf-8")


def _hparams_to_include(request: api.ListSessionGroupsRequest) -> frozenset[str] | None:
    """TensorBoard's include_in_result: when any column sets it, only hparam columns not set
    to false are shown."""
    if not any(c.HasField("include_in_result") for c in request.col_params):
        return None
    return frozenset(
        {
            c.hparam
            for c in request.col_params
            if c.WhichOneof("name") == "hparam"
            and (not c.HasField("include_in_result") or c.include_in_result)
        }
    )


def _metric_values(query: _Query, values: Iterable[tuple[int, _MV]]) -> list[dict[str, Any]]:
    out = []
    metrics = query.structure.metrics
    for metric, mv in values:
        if mv is None:
            continue
        group, tag = metrics[metric]
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
    members: list[Session],
    agg: _Aggregation,
    include: frozenset[str] | None,
    include_metrics: bool,
    prefix: str,
    named: bool = False,
) -> dict[str, Any]:
    """A group as proto3 JSON; ``named``: each session with its ``run`` (the run the user named,
    :func:`named_run`) and the group with its ``displayName`` (a group named after one of its
    sessions, as is every group without a group name, shows as that session's run; another
    one, as its name)."""
    # The group's hparams are its first session's by name (members are sorted by name), as
    # in the hparam columns that filter and sort it: TensorBoard takes the first session it
    # loaded, an order that depends on the file system or its loader's hashing.
    first = members[0]
    metric_ids = range(len(query.structure.metrics) if include_metrics else 0)
    hparams = {k: v for k, v in first.hparams.items() if include is None or k in include}
    if agg.type == api.AGGREGATION_AVG:
        group_values = [(m, query.group_value(m, members, agg)) for m in metric_ids]
    else:
        rep = query.representative(members, agg) if include_metrics else None
        group_values = [] if rep is None else [(m, query.value(rep, m)) for m in metric_ids]
    after_session = any(s.name == name for s in members)
    if prefix and name == first.name:
        name = posixpath.join(prefix, name)
    sessions = []
    for s in members:
        session: dict[str, Any] = {
            "name": posixpath.join(prefix, s.name) if prefix else s.name,
            "startTimeSecs": s.start_time,
            "endTimeSecs": 0.0 if s.end is None else s.end[1],
            "status": STATUS_NAMES[query.status(s)],
            "modelUri": s.model_uri,
            "metricValues": _metric_values(query, ((m, query.value(s, m)) for m in metric_ids)),
            "monitorUrl": s.monitor_url,
        }
        if named:
            session["run"] = named_run(session["name"])
        sessions.append(session)
    found = {
        "name": name,
        "hparams": hparams,
        "metricValues": _metric_values(query, group_values),
        "sessions": sessions,
        "monitorUrl": first.monitor_url,
    }
    if named:
        found["displayName"] = named_run(name) if after_session else name
    return found


def list_session_groups(
    connection: apsw.Connection,
    exp_id: int,
    request: api.ListSessionGroupsRequest,
    *,
    idle_seconds: float = DEFAULT_IDLE_SECONDS,
    now: float | None = None,
) -> api.ListSessionGroupsResponse:
    """ListSessionGroups: the sessions whose status is allowed, grouped (a session's group is
    its start info's group_name, else its own name; a group shows the hparams of its first
    session by name among those allowed), their metrics aggregated per group, the groups
    filtered and sorted by the columns, then the slice asked for, with the size of the
    filtered list.

    Invalid requests (an unknown column, a regexp that does not compile, a filter that does
    not fit the column's type, negative paging) raise :class:`BadRequest`.
    """
    found = session_groups_json(connection, exp_id, request, idle_seconds=idle_seconds, now=now)
    message = api.ListSessionGroupsResponse()
    json_format.ParseDict(found, message)
    return message
