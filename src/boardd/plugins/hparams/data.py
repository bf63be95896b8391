"""The hparams plugin's engine over a store: GetExperiment, ListSessionGroups, ListMetricEvals, with
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

import bisect
import contextlib
import json
import logging
import math
import os
import posixpath
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import apsw
from google.protobuf import json_format
from google.protobuf.message import Message

from boardd.config import DEFAULT_HPARAMS_IDLE_SECONDS
from boardd.data import experiments
from boardd.data.errors import BadRequest, NotFound, Unavailable
from boardd.data.provider import DataProvider
from boardd.data.sqlite_provider import SqliteProvider
from boardd.data.values import finite_or_text
from boardd.proto import hparams_api_pb2 as api
from boardd.store import hparams as store

log = logging.getLogger(__name__)

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
class _Session:
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
class _Run:
    name: str
    #: hparams rows by kind, decoded.
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: scalar series of the scalars plugin: tag → (value, step, wall time) of its last point.
    scalars: dict[str, tuple[float, int, float]] = field(default_factory=dict)
    #: The last wall time of each of its series, by series id.
    walls: dict[int, float] = field(default_factory=dict)
    #: The session it belongs to (itself, or the session whose run it is below), and its
    #: path below that session's run (the metric group).
    under: tuple[_Session, str] | None = None


def _parent(path: str) -> str:
    """A run's parent path, "" above the top: a remote key may give a run name with a leading
    "/" (``prefix//run/...``), whose dirname would be "/" for ever."""
    parent = posixpath.dirname(path)
    return "" if parent == path else parent


def _session_of(run_id: int, run: _Run) -> _Session | None:
    start = run.rows.get("session_start")
    if start is None:
        return None
    end = run.rows.get("session_end")
    return _Session(
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
class _HParamStats:
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


class _Structure:
    """The sessions, their groups and runs, and what the experiment is inferred from; brought
    up to date incrementally (sessions, runs and tags that come), rebuilt when any go."""

    def __init__(self, runs: dict[int, _Run]) -> None:
        self.runs = runs
        self.run_ids: dict[str, int] = {}
        self.sessions: dict[str, _Session] = {}
        self.groups: dict[str, list[_Session]] = {}
        self.stats: dict[str, _HParamStats] = {}
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
            session = _session_of(run_id, run)
            if session is not None:
                self._add_session(session)
        for run_id, run in runs.items():
            self._place(run_id, run)

    # Changes.

    def _add_session(self, session: _Session) -> None:
        self.sessions[session.name] = session
        members = self.groups.setdefault(session.group, [])
        bisect.insort(members, session, key=lambda s: s.name)
        self.columns.clear()
        self.columns_keys.clear()
        stats = self.stats
        for name, value in session.hparams.items():
            st = stats.get(name)
            if st is None:
                st = stats[name] = _HParamStats()
            if value is True or value is False:
                st.bools.add(value)
            elif isinstance(value, str):
                st.strings.add(value)
            else:
                st.number(value)
        for name, text in session.other.items():
            st = stats.get(name)
            if st is None:
                st = stats[name] = _HParamStats()
            if text is not None:
                st.odd.add(text)
                st.number(float(text))
        self._cache.clear()

    def _place(self, run_id: int, run: _Run) -> None:
        """Files a run under its session (the longest session path that is its own or a
        parent of it), with its scalar tags as metric names."""
        path = run.name
        sessions = self.sessions
        while path not in sessions:
            if not path:
                return
            path = _parent(path)
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

    def tag_added(self, run: _Run, tag: str) -> None:
        """A run's new scalar tag: a metric name if the run is under a session."""
        if run.under is not None:
            key = (tag, run.under[1])
            count = self.metric_names.get(key, 0)
            self.metric_names[key] = count + 1
            if not count:
                self._cache.clear()

    def run_added(self, run_id: int, run: _Run) -> bool:
        """Takes a new run in; False if the structure must be rebuilt instead."""
        if run.rows.get("experiment") is not None:
            self.declared[run.name] = run.rows["experiment"]
            self._cache.clear()
        self.run_ids[run.name] = run_id
        session = _session_of(run_id, run)
        if session is None:
            self._place(run_id, run)
            return True
        # A new session: simple when no run is filed under a session at or below it yet.
        head = run.name + "/"
        for other in self.runs.values():
            if other is not run and other.name.startswith(head) and other.under is not None:
                return False
        parent = _parent(run.name)
        while parent:
            if parent in self.sessions:
                return False  # a session inside another: its runs move
            parent = _parent(parent)
        if "" in self.sessions:
            return False
        self._add_session(session)
        for other_id, other in self.runs.items():
            if other is run or other.name.startswith(head):
                self._place(other_id, other)
        return True

    def rows_changed(self, run: _Run, kinds: set[str]) -> bool:
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
        infos = _hparam_infos(self.stats, self.sessions.values())
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
    def ordered(self) -> list[_Session]:
        """The sessions by name."""
        found: list[_Session] | None = self._cache.get("ordered")
        if found is None:
            found = self._cache["ordered"] = sorted(self.sessions.values(), key=lambda s: s.name)
        return found

    def metric_run(self, session: _Session, group: str) -> int | None:
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


def _hparam_infos(
    stats: dict[str, _HParamStats], sessions: Iterable[_Session]
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


class _State:
    """One store's hparams data, as of ``generation``."""

    def __init__(self) -> None:
        self.generation = -1
        self.runs: dict[int, _Run] = {}
        self.structure: _Structure | None = None
        #: Derived columns of this generation (cleared by each update).
        self.derived: dict[Any, Any] = {}
        #: The previous generation's, when only points came since (then they are patched:
        #: the groups of the sessions in ``touched`` are computed again, the rest kept).
        self.previous: dict[Any, Any] = {}
        self.touched: set[_Session] = set()
        #: group name → (agg, include, include_metrics, prefix) → (its sessions' statuses, its
        #: sessions, its JSON): kept while only points come, but for touched groups.
        self.fragments: dict[str, dict[Any, tuple[tuple[int, ...], tuple[_Session, ...], str]]] = {}

    def update(self, connection: apsw.Connection, exp_id: int) -> None:
        """Reads what changed since the generation it holds (everything the first time)."""
        current = experiments.generation(connection)
        if current == self.generation:
            return
        since = self.generation
        rebuild = self.structure is None
        new_runs: list[int] = []
        reload: list[int] = []
        for run in store.changed_runs(connection, exp_id, since):
            if run.id in self.runs:
                rebuild = True  # deleted, or read again from the start
                del self.runs[run.id]
            if not run.deleted:
                self.runs[run.id] = _Run(run.name)
                new_runs.append(run.id)
                if since >= 0:
                    reload.append(run.id)
        fresh = set(new_runs)
        changed_rows: dict[int, set[str]] = {}
        for row in store.hparams_rows(connection, exp_id, since, tuple(reload)):
            run_data = self.runs.get(row.run_id)
            if run_data is not None:
                run_data.rows[row.kind] = json.loads(row.data)
                if row.run_id not in fresh:
                    changed_rows.setdefault(row.run_id, set()).add(row.kind)
        new_tags: list[tuple[_Run, str]] = []
        touched: set[int] = set()
        for s in store.series_rows(connection, exp_id, since, tuple(reload)):
            run_data = self.runs.get(s.run_id)
            if run_data is None:
                continue
            if s.scalar:
                touched.add(s.run_id)
            if s.last_wall_time is not None:
                run_data.walls[s.id] = s.last_wall_time
            if s.scalar and s.last_step is not None and s.last_wall_time is not None:
                value = math.nan if s.last_value is None else s.last_value
                if s.tag not in run_data.scalars and s.run_id not in fresh:
                    new_tags.append((run_data, s.tag))
                run_data.scalars[s.tag] = (value, s.last_step, s.last_wall_time)
        structure = self.structure
        if structure is not None and not rebuild:
            for run_id, kinds in changed_rows.items():
                if not structure.rows_changed(self.runs[run_id], kinds):
                    rebuild = True
                    break
        if len(new_runs) > 64:
            rebuild = True  # a catch-up: one pass over everything costs less
        if structure is not None and not rebuild:
            # Sessions first: the other new runs may be filed under them.
            new_runs.sort(key=lambda i: "session_start" not in self.runs[i].rows)
            for run_id in new_runs:
                if not structure.run_added(run_id, self.runs[run_id]):
                    rebuild = True
                    break
        if structure is not None and not rebuild:
            for run_data, tag in new_tags:
                structure.tag_added(run_data, tag)
        if rebuild or structure is None:
            self.structure = _Structure(self.runs)
        points_only = (
            not rebuild and structure is not None and not new_runs and not changed_rows
        ) and not new_tags
        self.previous = self.derived if points_only else {}
        self.touched = set()
        if points_only:
            for run_id in touched:
                under = self.runs[run_id].under
                if under is not None:
                    self.touched.add(under[0])
            for session in self.touched:
                self.fragments.pop(session.group, None)
        else:
            self.fragments = {}
        self.derived = {}
        self.generation = current


class HparamsCache:
    """One store's sessions kept in memory between requests, and the merged views it takes
    part in; its owner is the store's data provider (:mod:`boardd.data.sqlite_provider`), so
    it lives and goes with the provider. Updated and read by one thread at a time
    (:attr:`lock`; answers are cached, so this rarely waits)."""

    #: Merged views of this store with others kept at once (a few logdirs served together).
    MERGED_KEPT = 4

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: (store identity, its state): a store rebuilt or recreated has another identity.
        self._state: tuple[str, _State] | None = None
        #: (the merged sources' keys) → (their generations, the merged state), oldest first.
        self._merged: dict[tuple[Any, ...], tuple[tuple[int, ...], _State]] = {}

    def state_of(self, store_id: str) -> _State:
        """The state of the store with this identity (a new one for a store swapped in)."""
        if self._state is None or self._state[0] != store_id:
            self._state = (store_id, _State())
            self._merged.clear()
        return self._state[1]

    def merged(self, key: tuple[Any, ...]) -> tuple[tuple[int, ...], _State] | None:
        return self._merged.get(key)

    def keep_merged(
        self, key: tuple[Any, ...], generations: tuple[int, ...], state: _State
    ) -> None:
        self._merged.pop(key, None)
        self._merged[key] = (generations, state)
        while len(self._merged) > self.MERGED_KEPT:
            del self._merged[next(iter(self._merged))]


class _Snapshot(NamedTuple):
    state: _State
    structure: _Structure


class Source(NamedTuple):
    """One experiment's store as a request addresses it: its run names are shown with
    ``prefix`` before them (``NAME/RUN`` when several logdirs are served together, as
    TensorBoard's ``--logdir_spec`` names them; "" for none). ``held``: the store's sessions
    kept between requests (None: read afresh, for a one-off answer)."""

    connection: apsw.Connection
    exp_id: int
    prefix: str = ""
    held: HparamsCache | None = None


def source_of(provider: DataProvider, exp_id: int, prefix: str = "") -> Source:
    """The store a data provider reads, with the sessions it keeps between requests. The
    engine's reads are SQL: it serves the SQLite stores' providers."""
    if not isinstance(provider, SqliteProvider):
        raise Unavailable(f"the hparams plugin cannot read a {type(provider).__name__}'s store")
    held = provider.plugin_state("hparams", HparamsCache)
    return Source(provider.connection(), exp_id, prefix, held)


def preload_provider(provider: DataProvider) -> None:
    """:func:`preload` of a provider's store: the daemon calls it in a thread once the
    experiment is caught up. A store not there yet (or being replaced) is left for the first
    request; other errors are logged, never raised."""
    try:
        row = provider.experiment()
        if row is not None:
            preload(source_of(provider, row.id))
    except Unavailable:
        return
    except Exception:
        log.exception("hparams: preloading failed")


def _snapshot(source: Source) -> _Snapshot:
    """The source's sessions, brought up to date (under :func:`_locked`)."""
    held = source.held if source.held is not None else HparamsCache()
    state = held.state_of(experiments.store_id(source.connection))
    state.update(source.connection, source.exp_id)
    assert state.structure is not None
    return _Snapshot(state, state.structure)


@contextlib.contextmanager
def _locked(sources: Sequence[Source]) -> Iterator[None]:
    """Holds the lock of each source's store (in one order: no deadlock between requests)."""
    with contextlib.ExitStack() as stack:
        held = {s.connection.filename: s.held for s in sources if s.held is not None}
        for filename in sorted(held):
            stack.enter_context(held[filename].lock)
        yield


def _view(sources: Sequence[Source]) -> tuple[_Snapshot, str]:
    """The snapshot answering for ``sources`` (under :func:`_locked`), and the prefix its
    answers put before run names: one source's own state, or several sources' merged as
    TensorBoard merges the runs of several logdirs (``NAME/RUN``): one experiment summary
    (the first run's by name), the sessions of all (a group's sessions may come from several
    logdirs: group names are not prefixed), the inference over all sessions. The merged state
    is built again when any source's generation moves (it is for a few logdirs at once, not
    for the incremental upkeep at 10,000 sessions that one store's state does)."""
    if len(sources) == 1:
        return _snapshot(sources[0]), sources[0].prefix
    snaps = [_snapshot(s) for s in sources]
    key = tuple(
        (s.connection.filename, experiments.store_id(s.connection), s.prefix) for s in sources
    )
    generations = tuple(snap.state.generation for snap in snaps)
    owner = sources[0].held
    kept = owner.merged(key) if owner is not None else None
    if kept is not None and kept[0] == generations:
        state = kept[1]
    else:
        runs: dict[int, _Run] = {}
        for k, (source, snap) in enumerate(zip(sources, snaps, strict=True)):
            for run_id, run in snap.state.runs.items():
                name = os.path.join(source.prefix, run.name) if source.prefix else run.name
                runs[(k << 40) + run_id] = _Run(name, run.rows, run.scalars, run.walls)
        state = _State()
        state.runs = runs
        state.structure = _Structure(runs)
        if owner is not None:
            owner.keep_merged(key, generations, state)
    assert state.structure is not None
    return _Snapshot(state, state.structure), ""


def preload(source: Source) -> None:
    """Reads a store's hparams data into ``source.held`` if it has any (slow for many
    thousands of sessions), so that the first hparams answer does not wait for it; the daemon
    calls it in a thread of its own once an experiment's catch-up is done (the stock UI asks
    for the experiment on every page load anyway)."""
    if store.has_rows(source.connection):
        with _locked([source]):
            _snapshot(source)


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
    """:func:`experiment_json` of several sources, merged (see :func:`_view`)."""
    with _locked(sources):
        snap, _ = _view(sources)
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
    with _locked([source]):
        snap = _snapshot(source)
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


#: A metric's value in a session or group: (value, step, wall time), None when missing.
_MV = tuple[float, int, float] | None


class _Query:
    """One ListSessionGroups request over one snapshot."""

    def __init__(self, snap: _Snapshot, idle_seconds: float, now: float) -> None:
        self.state = snap.state
        self.structure = snap.structure
        self.runs = snap.state.runs
        self.idle = idle_seconds
        self.now = now

    def value(self, session: _Session, metric: int) -> _MV:
        group, tag = self.structure.metrics[metric]
        run_id = self.structure.metric_run(session, group)
        return None if run_id is None else self.runs[run_id].scalars.get(tag)

    def status(self, session: _Session) -> int:
        if session.end is not None:
            return session.end[0]
        runs = self.runs
        last = max((w for r in session.runs for w in runs[r].walls.values()), default=None)
        if last is not None and self.now - last < self.idle:
            return api.STATUS_RUNNING
        return api.STATUS_UNKNOWN

    def groups(self, allowed: frozenset[int]) -> tuple[list[str], dict[str, list[_Session]]]:
        """The group names in order, and each group's sessions (by name) of allowed status."""
        structure = self.structure
        if allowed >= ALL_STATUSES:
            return structure.group_names, structure.groups
        kept: dict[str, list[_Session]] = {}
        for session in structure.ordered:
            if self.status(session) in allowed:
                kept.setdefault(session.group, []).append(session)
        return sorted(kept), kept

    def representative(self, members: list[_Session], agg: _Aggregation) -> _Session | None:
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

    def group_value(self, metric: int, members: list[_Session], agg: _Aggregation) -> _MV:
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
        groups: dict[str, list[_Session]],
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
        self, metric: int, group: str, tag: str, members: list[_Session], agg: _Aggregation
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
    groups: dict[str, list[_Session]]
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
    snap: _Snapshot, request: api.ListSessionGroupsRequest, idle_seconds: float, now: float | None
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
    """:func:`session_groups_json` of several sources, merged (see :func:`_view`)."""
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
    with _locked(sources):
        snap, prefix = _view(sources)
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
    members: list[_Session],
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
