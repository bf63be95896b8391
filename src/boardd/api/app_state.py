"""The app's typed state (no module globals) and the experiments a request addresses: each
experiment's handle (its spec, its data provider, its writer's generation), looked up by
``experiment=``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from boardd.api.errors import ApiError
from boardd.api.workers import AnswerWorkers
from boardd.cache import ResponseCache, TwoTierCache
from boardd.config import DEFAULT_HPARAMS_IDLE_SECONDS, ExperimentSpec
from boardd.data.columns import ColumnCache
from boardd.data.provider import DataProvider
from boardd.lineage import LineageService

#: A cache key and its version (the data generation the answer is built from).
FastKey = tuple[Hashable, Hashable]


@dataclass(slots=True)
class ExperimentHandle:
    """What the API knows of one experiment: its store, and (in the daemon) a live status."""

    spec: ExperimentSpec
    #: What reads the experiment's store (owned by the application, closed when it stops).
    provider: DataProvider
    status: Callable[[], Mapping[str, Any]] | None = None
    #: The generation of the store's last commit, when this process is its writer (then it
    #: is exact: set right after each commit); None otherwise.
    generation: Callable[[], int | None] | None = None
    #: (store swaps, experiment row id, store identity) as of the last lookup.
    experiment_row: tuple[int, int, str] | None = field(default=None, init=False)

    @property
    def store_id(self) -> str:
        """The identity of the store file last looked up ("" before any lookup)."""
        return self.experiment_row[2] if self.experiment_row is not None else ""

    def fast_key(self, request: Request) -> FastKey | None:
        """A cache key that needs no store access: the raw request, and as its version the
        writer's own generation. Only when this process writes the store: then no commit can be
        newer than the generation it reports."""
        if self.generation is None:
            return None
        current = self.generation()
        if current is None:
            return None
        return ("fast", self.spec.name, request.url.path, request.scope["query_string"]), current


@dataclass(slots=True)
class AppState:
    """Typed application state, yielded by the lifespan (no module globals)."""

    experiments: dict[str, ExperimentHandle]
    cache: ResponseCache
    started: float
    #: ``cache`` as the first tier, and the disk tier (if any) for expensive answers.
    tiers: TwoTierCache | None = None
    #: The thread opening the disk tier (begun by the lifespan, so that start-up does not wait
    #: for it); whatever uses ``tiers.disk`` waits for it first (:func:`tiers_of`).
    disk_opening: threading.Thread | None = None
    #: Set to have the opening begin now if it waits (see ``create_app``'s ``disk_after``).
    disk_wanted: threading.Event | None = None
    #: ``--samples-per-plugin`` (plugin → points, None for all): TensorBoard's routes return
    #: at most that many points per series, as TensorBoard's do.
    sampling: Mapping[str, int | None] = field(default_factory=dict)
    #: ``--hparams-idle-seconds``: a session without end info is RUNNING while its runs had
    #: data this recently, then UNKNOWN.
    hparams_idle_seconds: float = DEFAULT_HPARAMS_IDLE_SECONDS
    #: The lineage store (``/api/v1/metadata/...``); None: the server has none.
    lineage: LineageService | None = None
    #: The bearer token (None: none); lineage writes need it even on loopback.
    token: str | None = field(default=None, repr=False)
    #: TensorBoard's ``--window_title`` ("": TensorBoard's UI keeps its own title).
    window_title: str = ""
    #: Bounds how many answers too large to hold are read at once (api/data.py); made by
    #: the first such answer, in the app's event loop.
    heavy_reads: asyncio.Semaphore | None = field(default=None, repr=False)
    #: Processes that build the large answers (None: every answer is built in this process).
    workers: AnswerWorkers | None = field(default=None, repr=False)
    #: The whole scalar series the experiments' providers read, shared by them.
    column_cache: ColumnCache = field(default_factory=ColumnCache, repr=False)


def state_of(request: Request) -> AppState:
    """The app state of a request."""
    state = request.state.boardd
    assert isinstance(state, AppState)
    return state


def experiment_from(request: Request) -> ExperimentHandle:
    """The experiment named by ``experiment=`` (default: the first one)."""
    state = state_of(request)
    name = request.query_params.get("experiment")
    if name is None:
        if not state.experiments:
            raise ApiError(404, "this server has no experiments")
        return next(iter(state.experiments.values()))
    handle = state.experiments.get(name)
    if handle is None:
        known = ", ".join(sorted(state.experiments)) or "(none)"
        raise ApiError(404, f"no experiment {name!r}; known: {known}")
    return handle


async def experiment_id(handle: ExperimentHandle) -> int:
    """The experiment's row id in its store (503 while the store has none yet)."""
    provider = handle.provider
    if handle.experiment_row is not None and handle.experiment_row[0] == provider.swaps:
        return handle.experiment_row[1]

    def query() -> tuple[int, str]:
        # A store holds one experiment; the server names it (experiment names are the
        # server's, e.g. NAME=PATH, not the store's).
        return provider.experiment_id(handle.spec.name), provider.store_id()

    found, store = await run_in_threadpool(query)
    # A store's experiment row never changes; a store swapped in by --rebuild may differ.
    handle.experiment_row = (provider.swaps, found, store)
    return found


async def tiers_of(state: AppState) -> TwoTierCache | None:
    """The app's tiers, once the disk tier's opening has ended (opened or not)."""
    opening = state.disk_opening
    if opening is not None and opening.is_alive():
        if state.disk_wanted is not None:
            state.disk_wanted.set()
        await run_in_threadpool(opening.join)
    return state.tiers
