"""Live updates: ``GET /api/v1/stream``, one Server-Sent Event per change after each commit.

How a commit reaches a client: the commit bus (:mod:`boardd.store.bus`, offered by
:mod:`boardd.data.changes`) wakes each subscribed
stream on its event loop, whether the commit was made by a writer of this process or seen by
the bus's store watcher; the stream asks the store, in the read pool, what changed since the
generation it last sent (one query per experiment and commit, shared by the streams that were
at the same generation) and sends it. This module only speaks HTTP: cursors, rendering, the
response.

Events::

    id: <cursor>
    event: series
    data: {"experiment", "run", "tag", "plugin", "data_class", "step", "wall_time",
           "value" (scalars only; NaN spelled "NaN"), "generation"}

    event: run     data: {"experiment", "run", "change": "created" | "deleted", "generation"}
    event: reset   data: {"experiment", "generation"}  (the store went back in time, or another
                   store file was swapped in by a rebuild: refetch)

and a comment ``: ping`` after ``heartbeat`` seconds without a message.

The cursor (the event id) is the generation of the last commit fully sent: ``<generation>`` for
a stream over one experiment, ``<name>:<generation>,...`` (sorted by name) over several, since
each experiment's store counts its own generations. Within a commit every message but the last
carries the previous cursor, so a client cut off mid-commit gets that whole commit again. On
reconnection (``Last-Event-ID``, or ``since=`` in the query) the stream first sends the state
now of every run and series changed after the cursor, each once: exactly what was missed,
coalesced. Without either it starts at the current generation (fetch the state with the data
API, then apply the events).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from boardd.api.app_state import ExperimentHandle
from boardd.api.errors import ApiError
from boardd.data.changes import (
    WATCH_INTERVAL_SECONDS,
    ChangeHub,
    Changes,
    RunChange,
    SeriesChange,
    StoreWatcher,
    Subscription,
    wake,
)
from boardd.data.errors import DataError
from boardd.data.kinds import data_class_label
from boardd.data.values import finite_or_text

log = logging.getLogger(__name__)

#: Seconds without a message after which a ``: ping`` comment keeps proxies from timing out.
HEARTBEAT_SECONDS = 15.0
#: The reconnection delay suggested to EventSource clients (milliseconds).
RETRY_MS = 1000
#: Past this many changes, messages are rendered off the event loop.
_RENDER_INLINE_MAX = 256
#: Query results kept per experiment, by the generation they start from.
_MEMO_SIZE = 8
_GENERATION = re.compile(r"[0-9]{1,19}")


@dataclass(slots=True)
class _Feed:
    """One experiment's recent change queries, shared by the streams at the same generation."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    memo: OrderedDict[int, Changes] = field(default_factory=OrderedDict)
    #: The store file (device, inode) the memo was computed from.
    file: Hashable = None


class LiveStreams:
    """The ``/api/v1/stream`` endpoint of one app, and what it owns (the watcher thread; the
    hub too when none is given).

    ``hub``: the daemon's commit bus, which its writers claim their stores on; stores no writer
    claims (read-only, failed) are watched. Without it the app has a hub of its own, no
    writer claims anything, and every store is watched.
    """

    def __init__(
        self,
        handles: Mapping[str, ExperimentHandle],
        hub: ChangeHub | None = None,
        *,
        heartbeat: float = HEARTBEAT_SECONDS,
        watch_interval: float = WATCH_INTERVAL_SECONDS,
    ) -> None:
        if heartbeat <= 0:
            raise ValueError(f"the stream heartbeat must be positive, not {heartbeat}")
        self._handles = handles
        self._owns_hub = hub is None
        self.hub = hub if hub is not None else ChangeHub()
        self.heartbeat = heartbeat
        self._subscriptions: set[Subscription] = set()
        self._watch_interval = watch_interval
        self._watcher: StoreWatcher | None = None
        self._watcher_lock = threading.Lock()
        self._feeds = {name: _Feed() for name in handles}
        self._closed = False

    def close(self) -> None:
        """Ends this app's streams and stops the watcher (lifespan end); safe to call twice.
        A hub given by the caller stays open (others may use it): its owner closes it."""
        self._closed = True
        if self._owns_hub:
            self.hub.close()
        else:
            ending = list(self._subscriptions)
            for subscription in ending:
                subscription.close()
            wake(ending, None)
        with self._watcher_lock:
            watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.close()

    async def endpoint(self, request: Request) -> Response:
        """``GET /api/v1/stream[?experiment=NAME...][&since=CURSOR]``: Server-Sent Events."""
        names = self._names(request.query_params.getlist("experiment"))
        resume = request.headers.get("last-event-id") or request.query_params.get("since")
        cursor = parse_cursor(resume, names) if resume else None
        if self._closed or self.hub.closed:
            raise ApiError(503, "the server is shutting down")
        subscription = self.hub.subscribe(names)
        self._subscriptions.add(subscription)
        try:
            self._ensure_watcher()
            if cursor is None:
                # Subscribed first: a commit after this read wakes the stream.
                cursor = {name: await self._generation(name) for name in names}
            else:
                subscription.mark(names)
        except BaseException:
            subscription.close()
            self._subscriptions.discard(subscription)
            raise
        return StreamingResponse(
            self._events(subscription, cursor),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    def _names(self, wanted: Sequence[str]) -> list[str]:
        if not self._handles:
            raise ApiError(404, "this server has no experiments")
        if not wanted:
            return list(self._handles)
        unknown = [name for name in wanted if name not in self._handles]
        if unknown:
            known = ", ".join(sorted(self._handles))
            raise ApiError(404, f"no experiment {unknown[0]!r}; known: {known}")
        return list(dict.fromkeys(wanted))

    def _ensure_watcher(self) -> None:
        with self._watcher_lock:
            if self._watcher is None and not self._closed:
                stores = {name: handle.spec.db for name, handle in self._handles.items()}
                self._watcher = StoreWatcher(stores, self.hub, self._watch_interval)
                self._watcher.start()

    async def _generation(self, name: str) -> int:
        return await generation_of(self._handles[name])

    async def _events(
        self, subscription: Subscription, cursor: dict[str, int]
    ) -> AsyncIterator[bytes]:
        # The store file each experiment's cursor counts in: a store replaced under the stream
        # (a rebuild swapped in) numbers its commits anew, so the client must refetch.
        files = {name: self._handles[name].provider.file_identity() for name in cursor}
        try:
            yield f": connected\nretry: {RETRY_MS}\nid: {format_cursor(cursor)}\n\n".encode()
            last_sent = time.monotonic()
            while True:
                timeout = self.heartbeat - (time.monotonic() - last_sent)
                changed = await subscription.wait(max(0.0, timeout))
                if subscription.closed:
                    return
                chunk = await self._messages(changed, cursor, files) if changed else b""
                if chunk:
                    yield chunk
                    last_sent = time.monotonic()
                elif time.monotonic() - last_sent >= self.heartbeat:
                    yield b": ping\n\n"
                    last_sent = time.monotonic()
        finally:
            subscription.close()
            self._subscriptions.discard(subscription)

    async def _messages(
        self,
        changed: set[str],
        cursor: dict[str, int],
        files: dict[str, Hashable],
    ) -> bytes:
        out: list[bytes] = []
        for name in cursor:
            if name not in changed:
                continue
            file = self._handles[name].provider.file_identity()
            try:
                if file != files[name] and files[name] is not None:
                    generation = await self._generation(name)
                    files[name] = file
                    cursor[name] = generation
                    data = {"experiment": name, "generation": generation}
                    out.append(_message(cursor, "reset", data))
                    continue
                files[name] = file
                changes = await self._changes(name, cursor[name], file)
            except DataError:
                continue  # the store is not there (yet): the watcher announces it when it is
            if len(changes.runs) + len(changes.series) > _RENDER_INLINE_MAX:
                out.append(await run_in_threadpool(render_changes, name, changes, cursor))
            else:
                out.append(render_changes(name, changes, cursor))
        return b"".join(out)

    async def _changes(self, name: str, since: int, file: Hashable) -> Changes:
        feed = self._feeds[name]
        async with feed.lock:
            if file != feed.file:
                feed.memo.clear()  # computed from another store file
                feed.file = file
            latest = self.hub.latest(name)
            hit = feed.memo.get(since)
            # Equal, not greater or equal: a store rebuilt on disk counts from 0 again.
            if hit is not None and hit.generation == latest:
                feed.memo.move_to_end(since)
                return hit
            provider = self._handles[name].provider
            changes = await run_in_threadpool(provider.changes_since, name, since)
            feed.memo[since] = changes
            feed.memo.move_to_end(since)
            while len(feed.memo) > _MEMO_SIZE:
                feed.memo.popitem(last=False)
            return changes


def format_cursor(cursor: Mapping[str, int]) -> str:
    """An event id: ``<generation>`` for one experiment, ``name:generation,...`` for several."""
    if len(cursor) == 1:
        return str(next(iter(cursor.values())))
    return ",".join(f"{name}:{generation}" for name, generation in sorted(cursor.items()))


async def generation_of(handle: ExperimentHandle) -> int:
    """The generation of an experiment's store now (0 without a store: all in it will be new)."""
    try:
        return await run_in_threadpool(handle.provider.generation)
    except DataError:
        return 0


async def cursor_now(handles: Mapping[str, ExperimentHandle]) -> str:
    """The cursor of a stream over every experiment of ``handles`` opened now: a page that
    fetched its state after reading it opens its stream with ``since=`` it, and misses no
    commit made between its fetches and the stream's opening."""
    return format_cursor({name: await generation_of(h) for name, h in handles.items()})


def parse_cursor(text: str, names: Sequence[str]) -> dict[str, int]:
    """The generations a ``Last-Event-ID`` (or ``since=``) names, for the stream's experiments;
    an experiment it does not name starts from 0 (everything). ApiError(400) if malformed."""
    text = text.strip()
    if _GENERATION.fullmatch(text):
        if len(names) != 1:
            raise ApiError(
                400,
                f"cursor {text!r} gives one generation but the stream covers "
                f"{len(names)} experiments: give name:generation,... (the event id sent)",
            )
        return {names[0]: int(text)}
    cursor = dict.fromkeys(names, 0)
    for part in text.split(","):
        name, sep, generation = part.strip().rpartition(":")
        if not sep or not _GENERATION.fullmatch(generation):
            raise ApiError(
                400,
                f"cursor {text!r}: give the id of the last event received "
                "(GENERATION, or NAME:GENERATION,... for several experiments)",
            )
        if name not in cursor:
            raise ApiError(400, f"cursor {text!r} names {name!r}, which this stream does not cover")
        cursor[name] = int(generation)
    return cursor


def render_changes(name: str, changes: Changes, cursor: dict[str, int]) -> bytes:
    """The SSE messages of one experiment's changes; advances ``cursor[name]``."""
    since = cursor[name]
    if changes.generation < since:
        # The store's counter went back (rebuilt or recreated): the client's state is of
        # another store; it must fetch everything again.
        cursor[name] = changes.generation
        data = {"experiment": name, "generation": changes.generation}
        return _message(cursor, "reset", data)
    groups: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for run in changes.runs:
        if not run.deleted:
            groups.setdefault(run.generation, []).append(("run", _run_data(name, run)))
    for series in changes.series:
        groups.setdefault(series.generation, []).append(("series", _series_data(name, series)))
    for run in changes.runs:
        if run.deleted:
            groups.setdefault(run.generation, []).append(("run", _run_data(name, run)))
    out: list[bytes] = []
    previous = since
    for generation in sorted(groups):
        items = groups[generation]
        for i, (event, data) in enumerate(items):
            # Only the commit's last message moves the cursor past it.
            cursor[name] = generation if i == len(items) - 1 else previous
            out.append(_message(cursor, event, data))
        previous = generation
    cursor[name] = max(changes.generation, previous)
    return b"".join(out)


def _message(cursor: Mapping[str, int], event: str, data: dict[str, Any]) -> bytes:
    body = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return f"id: {format_cursor(cursor)}\nevent: {event}\ndata: {body}\n\n".encode()


def _run_data(name: str, run: RunChange) -> dict[str, Any]:
    return {
        "experiment": name,
        "run": run.run,
        "change": "deleted" if run.deleted else "created",
        "generation": run.generation,
    }


def _series_data(name: str, series: SeriesChange) -> dict[str, Any]:
    label = data_class_label(series.data_class)
    data: dict[str, Any] = {
        "experiment": name,
        "run": series.run,
        "tag": series.tag,
        "plugin": series.plugin_name,
        "data_class": label,
        "step": series.last_step,
        "wall_time": series.last_wall_time,
    }
    if label == "scalar":
        value = series.last_value
        data["value"] = "NaN" if value is None else finite_or_text(value)
    data["generation"] = series.generation
    return data
