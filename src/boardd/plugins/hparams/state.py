"""One store's sessions kept in memory and brought up to date commit by commit (:class:`State`,
from what changed since the generation they were read at), held by the store's data provider
(:class:`HparamsCache`), and the views of several stores merged as TensorBoard merges logdirs."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import apsw

from boardd.data import experiments
from boardd.data.errors import Unavailable
from boardd.data.provider import DataProvider
from boardd.data.sqlite_provider import SqliteProvider
from boardd.plugins.hparams.sessions import Run, Session, Structure
from boardd.store import hparams as store

log = logging.getLogger(__name__)


class State:
    """One store's hparams data, as of ``generation``."""

    def __init__(self) -> None:
        self.generation = -1
        self.runs: dict[int, Run] = {}
        self.structure: Structure | None = None
        #: Derived columns of this generation (cleared by each update).
        self.derived: dict[Any, Any] = {}
        #: The previous generation's, when only points came since (then they are patched:
        #: the groups of the sessions in ``touched`` are computed again, the rest kept).
        self.previous: dict[Any, Any] = {}
        self.touched: set[Session] = set()
        #: group name → (agg, include, include_metrics, prefix) → (its sessions' statuses, its
        #: sessions, its JSON): kept while only points come, but for touched groups.
        self.fragments: dict[str, dict[Any, tuple[tuple[int, ...], tuple[Session, ...], str]]] = {}

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
                self.runs[run.id] = Run(run.name)
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
        new_tags: list[tuple[Run, str]] = []
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
            self.structure = Structure(self.runs)
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
        self._state: tuple[str, State] | None = None
        #: (the merged sources' keys) → (their generations, the merged state), oldest first.
        self._merged: dict[tuple[Any, ...], tuple[tuple[int, ...], State]] = {}

    def state_of(self, store_id: str) -> State:
        """The state of the store with this identity (a new one for a store swapped in)."""
        if self._state is None or self._state[0] != store_id:
            self._state = (store_id, State())
            self._merged.clear()
        return self._state[1]

    def merged(self, key: tuple[Any, ...]) -> tuple[tuple[int, ...], State] | None:
        return self._merged.get(key)

    def keep_merged(self, key: tuple[Any, ...], generations: tuple[int, ...], state: State) -> None:
        self._merged.pop(key, None)
        self._merged[key] = (generations, state)
        while len(self._merged) > self.MERGED_KEPT:
            del self._merged[next(iter(self._merged))]


class Snapshot(NamedTuple):
    state: State
    structure: Structure


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


def snapshot(source: Source) -> Snapshot:
    """The source's sessions, brought up to date (under :func:`locked`)."""
    held = source.held if source.held is not None else HparamsCache()
    state = held.state_of(experiments.store_id(source.connection))
    state.update(source.connection, source.exp_id)
    assert state.structure is not None
    return Snapshot(state, state.structure)


@contextlib.contextmanager
def locked(sources: Sequence[Source]) -> Iterator[None]:
    """Holds the lock of each source's store (in one order: no deadlock between requests)."""
    with contextlib.ExitStack() as stack:
        held = {s.connection.filename: s.held for s in sources if s.held is not None}
        for filename in sorted(held):
            stack.enter_context(held[filename].lock)
        yield


def view(sources: Sequence[Source]) -> tuple[Snapshot, str]:
    """The snapshot answering for ``sources`` (under :func:`locked`), and the prefix its
    answers put before run names: one source's own state, or several sources' merged as
    TensorBoard merges the runs of several logdirs (``NAME/RUN``): one experiment summary
    (the first run's by name), the sessions of all (a group's sessions may come from several
    logdirs: group names are not prefixed), the inference over all sessions. The merged state
    is built again when any source's generation moves (it is for a few logdirs at once, not
    for the incremental upkeep at 10,000 sessions that one store's state does)."""
    if len(sources) == 1:
        return snapshot(sources[0]), sources[0].prefix
    snaps = [snapshot(s) for s in sources]
    key = tuple(
        (s.connection.filename, experiments.store_id(s.connection), s.prefix) for s in sources
    )
    generations = tuple(snap.state.generation for snap in snaps)
    owner = sources[0].held
    kept = owner.merged(key) if owner is not None else None
    if kept is not None and kept[0] == generations:
        state = kept[1]
    else:
        runs: dict[int, Run] = {}
        for k, (source, snap) in enumerate(zip(sources, snaps, strict=True)):
            for run_id, run in snap.state.runs.items():
                name = os.path.join(source.prefix, run.name) if source.prefix else run.name
                runs[(k << 40) + run_id] = Run(name, run.rows, run.scalars, run.walls)
        state = State()
        state.runs = runs
        state.structure = Structure(runs)
        if owner is not None:
            owner.keep_merged(key, generations, state)
    assert state.structure is not None
    return Snapshot(state, state.structure), ""


def preload(source: Source) -> None:
    """Reads a store's hparams data into ``source.held`` if it has any (slow for many
    thousands of sessions), so that the first hparams answer does not wait for it; the daemon
    calls it in a thread of its own once an experiment's catch-up is done (the stock UI asks
    for the experiment on every page load anyway)."""
    if store.has_rows(source.connection):
        with locked([source]):
            snapshot(source)
