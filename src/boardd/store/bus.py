"""The commit bus: who writes each store in this process, and who committed what, when.

A writer in this process *claims* its experiment on the :class:`ChangeHub` once it holds the
store's lease (:meth:`ChangeHub.claim`) and gives the claim up when it stops writing (lease lost,
failure, stop). That claim is the one definition of "this process is writing this store":
:meth:`ChangeHub.writer_generation` is not None exactly while it is held, and is then the
generation of the writer's last commit (exact: set on the writer's thread right after COMMIT).
Every commit of a claimed store is announced to the hub from the writer's thread; stores no
writer of this process claims are watched by :class:`StoreWatcher` (``PRAGMA data_version``),
which announces their commits (made by another process) to the same hub.

Subscribers (the HTTP stream, on an event loop) are woken with ``call_soon_threadsafe``: no
polling, and a commit costs the writer's thread one write per event loop, however many
subscribers there are. Nothing here knows HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import apsw

from boardd.store import queries
from boardd.store.connection import open_reader
from boardd.store.errors import StoreOpenError

log = logging.getLogger(__name__)

#: How often the store watcher checks stores that no writer of this process claims.
WATCH_INTERVAL_SECONDS = 0.05
#: How often the watcher re-checks which stores need watching while none does.
IDLE_RECHECK_SECONDS = 0.25


class CommitSource(Protocol):
    """What a claim needs of a store writer (:class:`boardd.store.writer.StoreWriter`)."""

    @property
    def generation(self) -> int: ...

    def on_commit(self, listener: Callable[[int], None]) -> None: ...


class ChangeHub:
    """Where writers claim their stores and announce commits, and subscribers wait for them.

    :meth:`claim`, :meth:`publish` and the queries may be called from any thread (they never
    block on an event loop); :meth:`subscribe` runs on the event loop that will be woken.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: set[Subscription] = set()
        self._latest: dict[str, int] = {}
        self._claims: dict[str, WriterClaim] = {}
        self._closed = False

    # -- writers ---------------------------------------------------------------------------

    def claim(self, experiment: str, writer: CommitSource) -> WriterClaim:
        """Declares that ``writer`` (holding the store's lease) writes ``experiment``'s store in
        this process, from now until :meth:`WriterClaim.release`; its commits are announced
        from now on. A newer claim of the same experiment replaces an older one."""
        claim = WriterClaim(self, experiment, writer.generation)
        writer.on_commit(claim.committed)
        with self._lock:
            self._claims[experiment] = claim
            self._latest[experiment] = claim.generation
            targets = self._targets(experiment)
        wake(targets, experiment)
        return claim

    def writer_generation(self, experiment: str) -> int | None:
        """The generation of the last commit of ``experiment``'s store while a writer of this
        process claims it (then no commit can be newer); None while none does."""
        with self._lock:
            claim = self._claims.get(experiment)
            return None if claim is None else claim.generation

    def is_writing(self, experiment: str) -> bool:
        """Whether a writer of this process claims ``experiment``'s store right now."""
        return self.writer_generation(experiment) is not None

    def _committed(self, claim: WriterClaim, generation: int) -> None:
        with self._lock:
            if self._claims.get(claim.experiment) is not claim:
                return  # released (or replaced): its writer no longer speaks for the store
            claim.generation = generation
            self._latest[claim.experiment] = generation
            targets = self._targets(claim.experiment)
        wake(targets, claim.experiment)

    def _release(self, claim: WriterClaim) -> None:
        with self._lock:
            if self._claims.get(claim.experiment) is claim:
                del self._claims[claim.experiment]

    # -- announcements ---------------------------------------------------------------------

    def publish(self, experiment: str, generation: int) -> None:
        """Announces that ``experiment``'s store committed ``generation`` (a commit seen from
        outside its writer, e.g. by :class:`StoreWatcher`); claims are not affected."""
        with self._lock:
            self._latest[experiment] = generation
            targets = self._targets(experiment)
        wake(targets, experiment)

    def latest(self, experiment: str) -> int | None:
        """The last generation announced for ``experiment`` (None before any)."""
        with self._lock:
            return self._latest.get(experiment)

    def _targets(self, experiment: str) -> list[Subscription]:
        return [s for s in self._subscribers if experiment in s.experiments]

    # -- subscribers -----------------------------------------------------------------------

    def subscribe(self, experiments: Iterable[str]) -> Subscription:
        """A subscription to these experiments' commits, woken on the running event loop."""
        subscription = Subscription(self, frozenset(experiments), asyncio.get_running_loop())
        with self._lock:
            if self._closed:
                subscription.closed = True
            else:
                self._subscribers.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """Forgets a subscription (safe twice)."""
        with self._lock:
            self._subscribers.discard(subscription)

    def close(self) -> None:
        """Ends every subscription (server shutdown); later ones start closed. Idempotent.
        Claims stay: writers go on committing until they stop."""
        with self._lock:
            self._closed = True
            targets = list(self._subscribers)
            self._subscribers.clear()
        for subscription in targets:
            subscription.closed = True
        wake(targets, None)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __len__(self) -> int:
        with self._lock:
            return len(self._subscribers)


class WriterClaim:
    """A writer's claim on one experiment's store (see :meth:`ChangeHub.claim`)."""

    def __init__(self, hub: ChangeHub, experiment: str, generation: int) -> None:
        self.hub = hub
        self.experiment = experiment
        #: The generation of the writer's last commit (updated under the hub's lock).
        self.generation = generation

    def committed(self, generation: int) -> None:
        """The writer committed ``generation`` (its on-commit listener; the writer's thread)."""
        self.hub._committed(self, generation)

    def release(self) -> None:
        """This process stops writing the store; safe to call twice."""
        self.hub._release(self)


class Subscription:
    """One subscriber's view of the hub: the experiments changed since it last looked."""

    def __init__(
        self, hub: ChangeHub, experiments: frozenset[str], loop: asyncio.AbstractEventLoop
    ) -> None:
        self.hub = hub
        self.experiments = experiments
        self.closed = False
        self.loop = loop
        self._event = asyncio.Event()
        self._lock = threading.Lock()
        self._dirty: set[str] = set()
        self._scheduled = False

    def note(self, experiment: str | None) -> bool:
        """Marks ``experiment`` changed (any thread); True if a wake-up must be scheduled (none
        is on its way yet: one that is will see this change too)."""
        with self._lock:
            if experiment is not None:
                self._dirty.add(experiment)
            if self._scheduled:
                return False
            self._scheduled = True
            return True

    def mark(self, experiments: Iterable[str]) -> None:
        """Marks experiments changed without waking anyone (on the loop, before waiting)."""
        with self._lock:
            self._dirty.update(experiments)

    def wake(self) -> None:
        """Wakes the subscriber (on its event loop)."""
        with self._lock:
            self._scheduled = False
        self._event.set()

    async def wait(self, timeout: float) -> set[str]:
        """The experiments changed since the last call; empty after ``timeout`` seconds or
        once closed."""
        with self._lock:
            ready = bool(self._dirty)
        if not ready and not self.closed:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._event.wait()
        self._event.clear()
        with self._lock:
            dirty, self._dirty = self._dirty, set()
        return dirty

    def close(self) -> None:
        """Leaves the hub (safe twice)."""
        self.closed = True
        self.hub.unsubscribe(self)


def wake(subscriptions: Iterable[Subscription], experiment: str | None) -> None:
    """Marks ``experiment`` changed for these subscriptions and wakes them, from any thread:
    one ``call_soon_threadsafe`` (one write to the loop's self-pipe) per event loop, not per
    subscriber, so that a commit costs the writer's thread little however many are open."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Subscription]] = {}
    for subscription in subscriptions:
        if subscription.note(experiment):
            by_loop.setdefault(subscription.loop, []).append(subscription)
    for loop, due in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            loop.call_soon_threadsafe(_wake_each, due)


def _wake_each(subscriptions: list[Subscription]) -> None:
    for subscription in subscriptions:
        subscription.wake()


@dataclass(slots=True)
class _Watched:
    connection: apsw.Connection
    inode: int
    version: int


class StoreWatcher:
    """A thread that announces to a hub the commits of stores no writer of this process claims
    (another process writes them: ``serve`` read-only, a runner that lost its lease, a CLI).

    ``stores`` maps experiment names to store files. Each watched store gets a read-only
    connection of its own; ``PRAGMA data_version`` changes when another connection commits
    (https://www.sqlite.org/pragma.html#pragma_data_version) and costs no I/O when nothing
    changed. A store replaced on disk (a rebuild's swap) is reopened. Whether a store needs
    watching is asked of the hub (:meth:`ChangeHub.is_writing`) each time round.
    """

    def __init__(
        self,
        stores: Mapping[str, str | os.PathLike[str]],
        hub: ChangeHub,
        interval: float = WATCH_INTERVAL_SECONDS,
    ) -> None:
        self._stores = {name: Path(db) for name, db in stores.items()}
        self._hub = hub
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, name="boardd-store-watch", daemon=True)

    def start(self) -> None:
        """Starts the thread."""
        self._thread.start()

    def close(self) -> None:
        """Stops the thread and closes its connections; safe to call twice."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _main(self) -> None:
        watched: dict[str, _Watched] = {}
        try:
            while not self._stop.is_set():
                busy = False
                for name, db in self._stores.items():
                    if self._hub.is_writing(name):
                        self._forget(name, watched)
                    else:
                        busy = True
                        self._check(name, db, watched)
                self._stop.wait(self._interval if busy else IDLE_RECHECK_SECONDS)
        finally:
            for name in list(watched):
                self._forget(name, watched)

    def _check(self, name: str, db: Path, watched: dict[str, _Watched]) -> None:
        current = watched.get(name)
        try:
            inode = os.stat(db).st_ino
        except OSError:
            self._forget(name, watched)
            return
        try:
            if current is None or current.inode != inode:
                self._forget(name, watched)
                connection = open_reader(db)
                version = int(connection.pragma("data_version"))
                watched[name] = _Watched(connection, inode, version)
                self._hub.publish(name, queries.generation(connection))
                return
            version = int(current.connection.pragma("data_version"))
            if version != current.version:
                current.version = version
                self._hub.publish(name, queries.generation(current.connection))
        except (StoreOpenError, apsw.Error) as exc:
            log.debug("store watcher: %s: %s", db, exc)
            self._forget(name, watched)

    @staticmethod
    def _forget(name: str, watched: dict[str, _Watched]) -> None:
        gone = watched.pop(name, None)
        if gone is not None:
            gone.connection.close()
