"""Hyperparameter tables: a row per session from the hparams API's messages, and the
ListSessionGroups request that a sort, filters and statuses given by column name stand for.
Shared by :meth:`boardd.client.Client.hparams` (over HTTP) and ``boardd hparams`` (on a store).

The columns, in order: ``session_group``, ``session``, each hparam (the experiment's order),
each metric (named by its tag, or ``group/tag`` when its group is not empty), ``status``
(``success``, ``failure``, ``running`` or ``unknown``), ``hparams_run``. A metric a session has
not logged, or an hparam it does not set, is None.

A session is named by the run the user named (boardd's ``run`` of it): tensorboardX's and
PyTorch's ``add_hparams`` write each session in a timestamped sub-run of the writer's run
(``lr0.01_bs128_sgd/1796660406.1974096``), whose ``session`` (and ``session_group``, when the
session names its group) is the writer's run ``lr0.01_bs128_sgd``; ``hparams_run`` keeps the
sub-run (TensorBoard's name of the session: its hparams and metrics are there). Without a
sub-run, ``hparams_run`` is the session.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format, struct_pb2

from boardd.proto import hparams_api_pb2 as api

#: The columns every table has besides its hparams and metrics.
GROUP, SESSION, STATUS = "session_group", "session", "status"
#: The run holding the session's hparams and metrics (TensorBoard's name of the session).
HPARAMS_RUN = "hparams_run"
#: Status names as the table spells them (the API's enum names without ``STATUS_``).
STATUS_NAMES = {
    api.STATUS_UNKNOWN: "unknown",
    api.STATUS_SUCCESS: "success",
    api.STATUS_FAILURE: "failure",
    api.STATUS_RUNNING: "running",
}
#: A filter by column: a regular expression (partial match, string hparams), an interval
#: ``(min, max)`` (numbers; None for an open end), or a list of the values allowed.
#: A column's filter: a regular expression, an interval (MIN, MAX) (None: open), or a list of
#: exact values.
Filter = str | tuple[float | None, float | None] | list[str | float | bool]


def metric_label(name: api.MetricName) -> str:
    """A metric's column name: its tag, or ``group/tag``."""
    return f"{name.group}/{name.tag}" if name.group else name.tag


#: An hparam's kind of values by its declared type (a metric's values are numbers).
_KINDS = {
    api.DATA_TYPE_STRING: "string",
    api.DATA_TYPE_BOOL: "bool",
    api.DATA_TYPE_FLOAT64: "number",
}


class FilterMismatch(ValueError):
    """A filter its column's values cannot match: a regular expression on a column of numbers
    or booleans, an interval on a column of strings. ``column``, ``kind`` (the column's values:
    number, bool or string) and ``spec`` (the filter) let a caller word its own message."""

    def __init__(self, column: str, kind: str, spec: Filter) -> None:
        self.column, self.kind, self.spec = column, kind, spec
        given = "a regular expression" if isinstance(spec, str) else "an interval (MIN, MAX)"
        super().__init__(
            f"filter of {column!r}: {given} does not apply to {_KIND_WORDS[kind]}; give "
            f"{_FITS[kind]}"
        )


_KIND_WORDS = {"number": "numbers", "bool": "true/false values", "string": "strings"}
_FITS = {
    "number": "an interval (MIN, MAX) or a list of exact values",
    "bool": "a list of exact values ([True] or [False])",
    "string": "a regular expression or a list of exact values",
}


@dataclass(frozen=True)
class Columns:
    """The hparam and metric columns of an experiment, and what kind of values each holds
    (``kinds``: number, string or bool; a column of undeclared type is absent)."""

    hparams: list[str]
    metrics: dict[str, api.MetricName]
    kinds: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, experiment: api.Experiment) -> Columns:
        metrics = {metric_label(info.name): info.name for info in experiment.metric_infos}
        kinds = {i.name: _KINDS[i.type] for i in experiment.hparam_infos if i.type in _KINDS}
        kinds.update(dict.fromkeys(metrics, "number"))
        return cls([info.name for info in experiment.hparam_infos], metrics, kinds)

    def check_filter(self, column: str, spec: Filter) -> None:
        """FilterMismatch when ``spec`` cannot match ``column``'s kind of values (a column of
        undeclared type is left to the server)."""
        kind = self.kinds.get(column)
        if kind is None:
            return
        if (isinstance(spec, str) and kind != "string") or (
            isinstance(spec, tuple) and kind == "string"
        ):
            raise FilterMismatch(column, kind, spec)

    @property
    def names(self) -> list[str]:
        """Every column of the table, in order."""
        return [GROUP, SESSION, *self.hparams, *self.metrics, STATUS, HPARAMS_RUN]

    def col_params(self, column: str) -> api.ColParams:
        """The ColParams naming ``column`` (ValueError for a column that is neither)."""
        if column in self.metrics:
            return api.ColParams(metric=self.metrics[column])
        if column in self.hparams:
            return api.ColParams(hparam=column)
        known = ", ".join([*self.hparams, *self.metrics]) or "none"
        raise ValueError(f"no hparam or metric column {column!r} (the columns: {known})")


def parse_sort(sort: str | Sequence[str] | None) -> list[tuple[str, bool]]:
    """``"lr"``, ``"-accuracy"`` or a list of them (``-``: descending) → (column, descending)."""
    if sort is None:
        return []
    if not isinstance(sort, str | Sequence):
        raise TypeError(f"sort: give a column name or a list of them, not {sort!r}")
    words = [sort] if isinstance(sort, str) else list(sort)
    out: list[tuple[str, bool]] = []
    for word in words:
        if not isinstance(word, str):
            raise TypeError(f"sort: column names are strings, not {word!r}")
        descending = word.startswith("-")
        name = word[1:] if descending else word
        if not name:
            raise ValueError(f"sort by {word!r}: name a column")
        out.append((name, descending))
    return out


def parse_filter(text: str) -> tuple[str, Filter]:
    """The command line's ``COL=REGEX``, ``COL=MIN..MAX`` (numbers, either may be left out) or
    ``COL==V1,V2,…`` (exact values: numbers, true/false, strings) → (column, filter).
    ValueError says what is wrong."""
    column, sep, spec = text.partition("=")
    if not sep or not column:
        raise ValueError(
            f"--filter {shlex.quote(text)}: write COL=REGEX, COL=MIN..MAX or COL==VALUE,..."
        )
    if spec.startswith("="):
        values = [_exact(v) for v in spec[1:].split(",")]
        if values == [""]:
            raise ValueError(f"--filter {shlex.quote(text)}: give at least one value after '=='")
        return column, values
    lo, dots, hi = spec.partition("..")
    if dots and _is_number_or_empty(lo) != _is_number_or_empty(hi):
        raise ValueError(
            f"--filter {shlex.quote(text)}: MIN..MAX takes numbers (for a regular expression "
            "with '..' in it, write the dots as [.][.])"
        )
    if dots and _is_number_or_empty(lo) and _is_number_or_empty(hi):
        if not lo.strip() and not hi.strip():
            raise ValueError(f"--filter {shlex.quote(text)}: give MIN, MAX or both around '..'")
        low = float(lo) if lo.strip() else None
        high = float(hi) if hi.strip() else None
        if low is not None and high is not None and low > high:
            raise ValueError(f"--filter {shlex.quote(text)}: MIN {low:g} is above MAX {high:g}")
        return column, (low, high)
    try:
        re.compile(spec)
    except re.error as exc:
        raise ValueError(
            f"--filter {shlex.quote(text)}: {spec!r} is no regular expression ({exc})"
        ) from exc
    return column, spec


def _exact(text: str) -> str | float | bool:
    """A value of ``COL==…``: true/false, a number, else the text."""
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    try:
        return float(text)
    except ValueError:
        return text


def _is_number_or_empty(text: str) -> bool:
    if not text.strip():
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _value(value: str | float | bool) -> struct_pb2.Value:
    out = struct_pb2.Value()
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int | float):
        out.number_value = float(value)
    else:
        out.string_value = str(value)
    return out


def build_request(
    columns: Columns,
    *,
    sort: str | Sequence[str] | None = None,
    filters: Mapping[str, Filter] | None = None,
    statuses: Iterable[str] | None = None,
) -> api.ListSessionGroupsRequest:
    """The ListSessionGroupsRequest for a sort (columns, ``-`` for descending; missing values
    last), filters by column and the statuses kept (names of :data:`STATUS_NAMES`; None: all).
    ValueError names an unknown column or status."""
    request = api.ListSessionGroupsRequest()
    if statuses is None:
        request.allowed_statuses.extend(STATUS_NAMES)
    else:
        by_name = {v: k for k, v in STATUS_NAMES.items()}
        for status in [statuses] if isinstance(statuses, str) else statuses:
            key = status.lower().removeprefix("status_")
            if key not in by_name:
                raise ValueError(f"status {status!r}: one of {', '.join(by_name)}")
            request.allowed_statuses.append(by_name[key])
    params: dict[str, api.ColParams] = {}
    for column, descending in parse_sort(sort):
        col = params.setdefault(column, columns.col_params(column))
        col.order = api.ORDER_DESC if descending else api.ORDER_ASC
    for column, spec in (filters or {}).items():
        col = params.setdefault(column, columns.col_params(column))
        if isinstance(spec, str):
            col.filter_regexp = spec
        elif isinstance(spec, tuple):
            if len(spec) != 2 or not all(
                v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in spec
            ):
                raise ValueError(
                    f"filter of {column!r}: a tuple is an interval (MIN, MAX) of numbers or "
                    f"None, not {spec!r}; a list gives exact values"
                )
            low, high = spec
            col.filter_interval.min_value = -math.inf if low is None else float(low)
            col.filter_interval.max_value = math.inf if high is None else float(high)
        elif isinstance(spec, list | set | frozenset):
            col.filter_discrete.values.extend(_value(v) for v in spec)
        else:
            raise TypeError(
                f"filter of {column!r}: give a regular expression (str), an interval "
                f"(MIN, MAX) or a list of exact values, not {spec!r}"
            )
    # The sort columns first, in the order given (their order is the sort's significance).
    request.col_params.extend(params.values())
    request.aggregation_type = api.AGGREGATION_AVG
    request.slice_size = 1_000
    return request


def _python(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind in ("number_value", "string_value", "bool_value"):
        return getattr(value, kind)
    return None


def parse_session_groups(
    answer: str | bytes | Mapping[str, Any],
) -> tuple[api.ListSessionGroupsResponse, dict[str, str], dict[str, str]]:
    """A ListSessionGroups answer of boardd's own (``/api/v1/hparams/session_groups``, or
    :func:`boardd.plugins.hparams.data.session_groups_json` with ``named=True``): TensorBoard's
    message, each session's name → its ``run`` (the run the user named), each group's name →
    its ``displayName``."""
    found = json.loads(answer) if isinstance(answer, str | bytes) else answer
    message = api.ListSessionGroupsResponse()
    json_format.ParseDict(found, message, ignore_unknown_fields=True)
    runs: dict[str, str] = {}
    shown: dict[str, str] = {}
    for group in found.get("sessionGroups", []):
        if "displayName" in group:
            shown[group["name"]] = group["displayName"]
        for session in group.get("sessions", []):
            if "run" in session:
                runs[session["name"]] = session["run"]
    return message, runs, shown


def session_rows(
    columns: Columns,
    groups: Iterable[api.SessionGroup],
    runs: Mapping[str, str] | None = None,
    shown: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """A row per session of ``groups`` (in their order): column → value. ``runs``: a session's
    name → the run it shows as; ``shown``: a group's name → the name it shows as (see
    :func:`parse_session_groups`; a name in neither shows as itself)."""
    runs = runs or {}
    shown = shown or {}
    rows: list[dict[str, Any]] = []
    for group in groups:
        hparams = {name: _python(group.hparams[name]) for name in group.hparams}
        for session in group.sessions:
            row: dict[str, Any] = {
                GROUP: shown.get(group.name, group.name),
                SESSION: runs.get(session.name, session.name),
            }
            for name in columns.hparams:
                row[name] = hparams.get(name)
            values = {metric_label(mv.name): mv.value for mv in session.metric_values}
            for label in columns.metrics:
                row[label] = values.get(label)
            row[STATUS] = STATUS_NAMES.get(session.status, "unknown")
            row[HPARAMS_RUN] = session.name
            rows.append(row)
    return rows
