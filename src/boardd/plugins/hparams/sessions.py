"""The hparams plugin's sessions of one store, as TensorBoard's hparams plugin sees them: each
session (a run with a start summary, or a group's sub-runs), its hparams and metrics, and what
the experiment declares or TensorBoard infers from them (:class:`Structure`)."""

from __future__ import annotations

import bisect
import json
import math
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from boardd.config import DEFAULT_HPARAMS_IDLE_SECONDS
from boardd.data.values import finite_or_text
from boardd.proto import hparams_api_pb2 as api

#: A session without end info is RUNNING while its runs received data this recently (wall
#: time of their last points), UNKNOWN after (``boardd serve --hparams-idle-seconds``).
DEFAULT_IDLE_SECONDS = DEFAULT_HPARAMS_IDLE_SECONDS

STATUS_NAMES = {v.number: v.name for v in api.Status.DESCRIPTOR.values}
ALL_STATUSES = frozenset(STATUS_NAMES)

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

#: An hparam value as TensorBoard compares it: float, str or bool.
Value = float | str | bool


# -- the store's sessions in memory ------------------------------------------------------------


@dataclass(slots=True, eq=False)
class Session:
    name: str
    run_id: int
    group: str
    start_time: float
    model_uri: str
    monitor_url: str
    #: Its hparams as TensorBoard shows them (number, string, bool; not non-finite numbers).
    hparams: dict[str, Value]
    #: The others: name → a non-finite number's name, or None (null, list, struct).
    other: dict[str, str | None]
    end: tuple[int, float] | None
    #: Its run and the runs below it (the sub-runs of its metrics).
    runs: list[int] = field(default_factory=list)
    #: metric group → the id of the run holding it (None: no such run); cleared when runs come.
    metric_runs: dict[str, int | None] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class Run:
    name: str
    #: hparams rows by kind, decoded.
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: scalar series of the scalars plugin: tag → (value, step, wall time) of its last point.
    scalars: dict[str, tuple[float, int, float]] = field(default_factory=dict)
    #: The last wall time of each of its series, by series id.
    walls: dict[int, float] = field(default_factory=dict)
    #: The session it belongs to (itself, or the session whose run it is below), and its
    #: path below that session's run (the metric group).
    under: tuple[Session, str] | None = None


def parent_of(path: str) -> str:
    """A run's parent path, "" above the top: a remote key may give a run name with a leading
    "/" (``prefix//run/...``), whose dirname would be "/" for ever."""
    parent = posixpath.dirname(path)
    return "" if parent == path else parent


def session_of(run_id: int, run: Run) -> Session | None:
    start = run.rows.get("session_start")
    if start is None:
        return None
    end = run.rows.get("session_end")
    return Session(
        run.name,
        run_id,
        start["groupName"] or run.name,
        float(start["startTimeSecs"]),
        start["modelUri"],
        start["monitorUrl"],
        start["hparams"],
        start["other"],
        None if end is None else (int(end["status"]), float(end["endTimeSecs"])),
    )


@dataclass(slots=True)
class HParamStats:
    """What TensorBoard infers an hparam's info from: the types and values it takes."""

    numbers: int = 0
    strings: set[str] = field(default_factory=set)
    bools: set[bool] = field(default_factory=set)
    low: float = math.inf
    high: float = -math.inf
    first: float | None = None
    differs: bool = False
    #: Non-finite numbers (typed as numbers, not shown), as their texts.
    odd: set[str] = field(default_factory=set)

    def number(self, value: float) -> None:
        self.numbers += 1
        if value < self.low:
            self.low = value
        if value > self.high:
            self.high = value
        if self.first is None:
            self.first = value
        elif value != self.first:
            self.differs = True


class Structure:
    """The sessions, their groups and runs, and what the experiment is inferred from; brought
    up to date incrementally (sessions, runs and tags that come), rebuilt when any go."""

    def __init__(self, runs: dict[int, Run]) -> None:
        self.runs = runs
        self.run_ids: dict[str, int] = {}
        self.sessions: dict[str, Session] = {}
        self.groups: dict[str, list[Session]] = {}
        self.stats: dict[str, HParamStats] = {}
        #: (tag, group) → how many runs under sessions have it (the inferred metrics).
        self.metric_names: dict[tuple[str, str], int] = {}
        #: run name → its declared experiment.
        self.declared: dict[str, dict[str, Any]] = {}
        self._cache: dict[str, Any] = {}
        #: hparam name → its value in each group (in group_names' order), while no session
        #: comes or goes (cleared with the other derived values).
        self.columns: dict[str, list[Any]] = {}
        #: (hparam name, missing values largest) → the sort keys of its column.
        self.columns_keys: dict[tuple[str, bool], list[Any]] = {}
        for run_id, run in runs.items():
            run.under = None
            self.run_ids[run.name] = run_id
            exp = run.rows.get("experiment")
            if exp is not None:
                self.declared[run.name] = exp
            session = session_of(run_id, run)
            if session is not None:
                self._add_session(session)
        for run_id, run in runs.items():
            self._place(run_id, run)

    # Changes.

    def _add_session(self, session: Session) -> None:
        self.sessions[session.name] = session
        members = self.groups.setdefault(session.group, [])
        bisect.insort(members, session, key=lambda s: s.name)
        self.columns.clear()
        self.columns_keys.clear()
        stats = self.stats
        for name, value in session.hparams.items():
            st = stats.get(name)
            if st is None:
                st = stats[name] = HParamStats()
            if value is True or value is False:
                st.bools.add(value)
            elif isinstance(value, str):
                st.strings.add(value)
            else:
                st.number(value)
        for name, text in session.other.items():
            st = stats.get(name)
            if st is None:
                st = stats[name] = HParamStats()
            if text is not None:
                st.odd.add(text)
                st.number(float(text))
        self._cache.clear()

    def _place(self, run_id: int, run: Run) -> None:
        """Files a run under its session (the longest session path that is its own or a
        parent of it), with its scalar tags as metric names."""
        path = run.name
        sessions = self.sessions
        while path not in sessions:
            if not path:
                return
            path = parent_of(path)
        session = sessions[path]
        if run.name == path:
            # TensorBoard's os.path.relpath(run, session): "." unless the run name ends in "."
            group = "." if run.name.endswith(".") else ""
        else:
            group = run.name[len(path) + 1 :]
        run.under = (session, group)
        session.runs.append(run_id)
        session.metric_runs.clear()
        for tag in run.scalars:
            self.tag_added(run, tag)

    def tag_added(self, run: Run, tag: str) -> None:
        """A run's new scalar tag: a metric name if the run is under a session."""
        if run.under is not None:
            key = (tag, run.under[1])
            count = self.metric_names.get(key, 0)
            self.metric_names[key] = count + 1
            if not count:
                self._cache.clear()

    def run_added(self, run_id: int, run: Run) -> bool:
        """Takes a new run in; False if the structure must be rebuilt instead."""
        if run.rows.get("experiment") is not None:
            self.declared[run.name] = run.rows["experiment"]
            self._cache.clear()
        self.run_ids[run.name] = run_id
        session = session_of(run_id, run)
        if session is None:
            self._place(run_id, run)
            return True
        # A new session: simple when no run is filed under a session at or below it yet.
        head = run.name + "/"
        for other in self.runs.values():
            if other is not run and other.name.startswith(head) and other.under is not None:
                return False
        parent = parent_of(run.name)
        while parent:
            if parent in self.sessions:
                return False  # a session inside another: its runs move
            parent = parent_of(parent)
        if "" in self.sessions:
            return False
        self._add_session(session)
        for other_id, other in self.runs.items():
            if other is run or other.name.startswith(head):
                self._place(other_id, other)
        return True

    def rows_changed(self, run: Run, kinds: set[str]) -> bool:
        """A known run got hparams rows; False if the structure must be rebuilt instead."""
        if "experiment" in kinds:
            self.declared[run.name] = run.rows["experiment"]
            self._cache.clear()
        if "session_start" in kinds:
            return False
        if "session_end" in kinds:
            session = self.sessions.get(run.name)
            end = run.rows["session_end"]
            if session is not None:
                session.end = (int(end["status"]), float(end["endTimeSecs"]))
        return True

    # Derived, cached until the next change.

    @property
    def experiment(self) -> dict[str, Any]:
        found: dict[str, Any] | None = self._cache.get("experiment")
        if found is None:
            found = self.declared[min(self.declared)] if self.declared else self._inferred()
            self._cache["experiment"] = found
        return found

    def _inferred(self) -> dict[str, Any]:
        infos = hparam_infos(self.stats, self.sessions.values())
        if not infos:
            return dict(EMPTY_EXPERIMENT)
        metric_infos = [
            {
                "name": {"group": group, "tag": tag},
                "displayName": "",
                "description": "",
                "datasetType": "DATASET_UNKNOWN",
            }
            for tag, group in sorted(self.metric_names)
        ]
        return {**EMPTY_EXPERIMENT, "hparamInfos": infos, "metricInfos": metric_infos}

    @property
    def metrics(self) -> list[tuple[str, str]]:
        """The experiment's metrics, (group, tag)."""
        found: list[tuple[str, str]] | None = self._cache.get("metrics")
        if found is None:
            found = [
                (m["name"].get("group", ""), m["name"].get("tag", ""))
                for m in self.experiment.get("metricInfos", [])
                if "name" in m
            ]
            self._cache["metrics"] = found
        return found

    @property
    def metric_index(self) -> dict[tuple[str, str], int]:
        found: dict[tuple[str, str], int] | None = self._cache.get("metric_index")
        if found is None:
            found = self._cache["metric_index"] = {m: i for i, m in enumerate(self.metrics)}
        return found

    @property
    def hparam_types(self) -> dict[str, str]:
        """Each known hparam column's kind of values: number, string, bool or mixed."""
        found: dict[str, str] | None = self._cache.get("types")
        if found is None:
            found = {}
            for name, st in self.stats.items():
                kinds = {
                    k
                    for k, n in (("number", st.numbers), ("string", st.strings), ("bool", st.bools))
                    if n
                }
                found[name] = kinds.pop() if len(kinds) == 1 else "mixed"
            declared = {
                "DATA_TYPE_STRING": "string",
                "DATA_TYPE_BOOL": "bool",
                "DATA_TYPE_FLOAT64": "number",
            }
            for info in self.experiment.get("hparamInfos", []):
                name = info.get("name", "")
                if name not in found:
                    found[name] = declared.get(info.get("type", ""), "mixed")
            self._cache["types"] = found
        return found

    @property
    def group_index(self) -> dict[str, int]:
        """Group name → its place in :attr:`group_names`."""
        found: dict[str, int] | None = self._cache.get("group_index")
        if found is None:
            found = self._cache["group_index"] = {g: i for i, g in enumerate(self.group_names)}
        return found

    @property
    def group_names(self) -> list[str]:
        found: list[str] | None = self._cache.get("group_names")
        if found is None:
            found = self._cache["group_names"] = sorted(self.groups)
        return found

    @property
    def ordered(self) -> list[Session]:
        """The sessions by name."""
        found: list[Session] | None = self._cache.get("ordered")
        if found is None:
            found = self._cache["ordered"] = sorted(self.sessions.values(), key=lambda s: s.name)
        return found

    def metric_run(self, session: Session, group: str) -> int | None:
        """The run holding a session's metrics of ``group``."""
        try:
            return session.metric_runs[group]
        except KeyError:
            found = self.run_ids.get(metric_run(session.name, group))
            session.metric_runs[group] = found
            return found


def metric_run(session: str, group: str) -> str:
    """TensorBoard's run of a session's metric (metrics.run_tag_from_session_and_metric)."""
    run = os.path.join(session, group)
    return run[:-1] if run.endswith("/") else run


#: The name tensorboardX's and PyTorch's ``SummaryWriter.add_hparams`` give the sub-run they
#: write a session in unless told another: ``str(time.time())``.
_ADD_HPARAMS_SUBRUN = re.compile(r"[0-9]{9,}\.[0-9]+")


def named_run(session: str) -> str:
    """The run the user named for a session: the writer's run of a session that ``add_hparams``
    (tensorboardX, PyTorch) wrote in its timestamped sub-run (``lr0.01_bs128_sgd/1796660406.19``
    → ``lr0.01_bs128_sgd``, the run whose curves the user logged), else the session's own run.
    A sub-run of the logdir's root stays as it is (its parent is no run a user named). What
    boardd's own hparams API, ``boardd hparams`` and the Python client show a session as;
    TensorBoard's routes keep TensorBoard's names."""
    parent, _, last = session.rpartition("/")
    if parent and _ADD_HPARAMS_SUBRUN.fullmatch(last):
        return parent
    return session


def hparam_infos(
    stats: dict[str, HParamStats], sessions: Iterable[Session]
) -> list[dict[str, Any]]:
    """TensorBoard's HParamInfos from the values (backend_context._compute_hparam_infos): one
    type fitting all values (several types: strings), a discrete domain for strings and bools,
    the interval of the values for numbers."""
    out = []
    for name, st in stats.items():
        kinds = [
            k for k, n in (("number", st.numbers), ("string", st.strings), ("bool", st.bools)) if n
        ]
        if not kinds:
            continue
        info: dict[str, Any] = {"name": name, "displayName": "", "description": ""}
        if len(kinds) > 1 or kinds == ["string"]:
            texts = set(st.strings)
            texts.update("true" if b else "false" for b in st.bools)
            if st.numbers:  # every number's JSON text (rare: only for mixed values)
                for session in sessions:
                    value = session.hparams.get(name)
                    if isinstance(value, float):
                        texts.add(json.dumps(value))
            info.update(type="DATA_TYPE_STRING", domainDiscrete=sorted(texts))
            info["differs"] = len(texts) > 1
        elif kinds == ["bool"]:
            bools = sorted(st.bools)
            info.update(type="DATA_TYPE_BOOL", domainDiscrete=bools, differs=len(bools) > 1)
        else:
            info.update(
                type="DATA_TYPE_FLOAT64",
                domainInterval={
                    "minValue": finite_or_text(st.low),
                    "maxValue": finite_or_text(st.high),
                },
                differs=st.differs,
            )
        out.append(info)
    return out
