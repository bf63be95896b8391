"""What every route shares: typed app state, experiment lookup, JSON encoding, cached replies."""

from __future__ import annotations

import asyncio
import ctypes
import os
import threading
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Message

from boardd.api.errors import ApiError
from boardd.api.workers import AnswerWorkers
from boardd.cache import GZIP_LEVEL, Encoded, ResponseCache, TwoTierCache, make_etag
from boardd.config import DEFAULT_HPARAMS_IDLE_SECONDS, ExperimentSpec
from boardd.data.columns import ColumnCache
from boardd.data.provider import DataProvider
from boardd.data.values import finite_or_text
from boardd.lineage import LineageService

__all__ = ["finite_or_text"]  # the stream's import; its home is boardd.data.values

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


def json_bytes(data: Any) -> bytes:
    """Compact JSON (UTF-8, keys in their order, numbers as their shortest round-trip form);
    non-finite floats must already be spelled as TensorBoard does.

    Encoded by orjson: answers of many points are mostly floats, and encoding them in C takes
    the interpreter (shared with the ingest and every other request) for a fraction of the
    time the standard library's encoder does."""
    return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)


def json_response(data: Any, status: int = 200) -> Response:
    """A JSON response (for small, uncached answers)."""
    return Response(json_bytes(data), status_code=status, media_type="application/json")


#: The bound of a request body (a JSON request message, a form) unless a route sets its own.
MAX_BODY_BYTES = 1 << 20


def _body_too_large(limit: int) -> ApiError:
    return ApiError(
        413, f"the request body is over the limit of {limit} bytes ({limit // 1024} KiB): send less"
    )


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body, at most ``limit`` bytes; 413 saying the limit otherwise. A declared
    length over it is refused before any of the body is read, and a chunked body as soon as
    what has come passes it: a client cannot make the server hold more than ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            length = int(declared)
        except ValueError:
            raise ApiError(400, f"Content-Length: {declared!r} is not a number") from None
        if length > limit:
            raise _body_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _body_too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


async def read_form(request: Request, limit: int = MAX_BODY_BYTES) -> FormData:
    """The request's form (urlencoded or multipart) from a body of at most ``limit`` bytes
    (:func:`read_body`); any uploaded file is closed, its fields stay."""
    body = await read_body(request, limit)

    async def replay() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    form = await Request(request.scope, replay).form()
    await form.close()
    return form


#: An answer larger than this (that can be sent in parts) is streamed instead of built whole,
#: and not cached: holding it would cost its size in memory per concurrent request.
HOLD_BYTES = 4 << 20
#: A streamed answer is read and encoded in blocks of about this many bytes (one worker-thread
#: hop each).
BLOCK_BYTES = 256 << 10
#: Answers too large to hold whose blocks are read and encoded at once (per app); the others
#: wait their turn between blocks, so a slow client never holds up the rest.
HEAVY_READS = 2


class TooLargeToHold(Exception):
    """An answer grew past what its route holds while being built: the pieces built so far
    (the rest is streamed after them: :func:`stream_rest`)."""

    def __init__(self, held: list[bytes]) -> None:
        super().__init__("answer too large to hold")
        self.held = held


def stream_rest(
    request: Request,
    held: list[bytes],
    block: Callable[[], tuple[bytes, bool]],
    media_type: str,
    etag: str,
) -> Response:
    """An answer too large to hold: ``held``, then ``block``'s blocks (the next bytes, and
    whether they are the last) each read in a worker thread, gzip-compressed as
    they go for a client that takes it; 304 for a client that has this version. It is not
    cached. At most :data:`HEAVY_READS` blocks are read at once; each is sent after the gate
    is let go."""
    if etag in etags_of(request.headers.get("if-none-match", "")):
        return Response(status_code=304, headers={"etag": etag})
    headers = {"etag": etag, "cache-control": "no-cache", "vary": "accept-encoding"}
    gzipped = "gzip" in request.headers.get("accept-encoding", "")
    if gzipped:
        headers["content-encoding"] = "gzip"
    state = state_of(request)
    if state.heavy_reads is None:
        state.heavy_reads = asyncio.Semaphore(HEAVY_READS)
    gate = state.heavy_reads
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31) if gzipped else None

    def first() -> bytes:
        data = b"".join(held)
        held.clear()
        return compressor.compress(data) if compressor is not None else data

    def step() -> tuple[bytes, bool]:
        data, done = block()
        if compressor is not None:
            data = compressor.compress(data) + (compressor.flush() if done else b"")
        return data, done

    async def body() -> AsyncIterator[bytes]:
        async with gate:
            data = await run_in_threadpool(first)
        yield data
        done = False
        while not done:
            async with gate:
                data, done = await run_in_threadpool(step)
            if data:
                yield data
        if not gate.locked():
            await run_in_threadpool(_give_back_free_memory)

    return StreamingResponse(body(), media_type=media_type, headers=headers)


def _give_back_free_memory() -> None:
    """Returns the free pages of glibc's heaps to the system. A streamed answer allocates and
    frees far more than the daemon keeps; what it frees in the middle of a heap stays
    resident (glibc only shrinks a heap from its top) until trimmed. Nothing elsewhere."""
    global _malloc_trim
    if _malloc_trim is None:
        try:
            trim = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):  # not glibc
            _malloc_trim = False
            return
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
        _malloc_trim = trim
    if _malloc_trim:
        _malloc_trim(0)


#: glibc's malloc_trim once looked up (False: there is none).
_malloc_trim: Any = None


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


async def respond_cached(
    request: Request,
    handle: ExperimentHandle,
    key: Hashable,
    version: Hashable,
    build: Callable[[], bytes],
    media_type: str,
    *,
    expensive: bool = False,
    alias: FastKey | None = None,
    elsewhere: Callable[[], Awaitable[bytes | None]] | None = None,
) -> Response:
    """Answers from the cache or builds (off the event loop), with ETag/304 and gzip.

    ``key`` names the request (never the data's generation), ``version`` the generation of the
    data it reads: an answer cached for an older version is replaced, not kept beside.
    ``expensive`` answers (costly to build) also go through the disk tier, if the app has one:
    shared with other processes and kept across restarts, under the same key and version.
    ``alias``: the fast key (and its version) to file the answer under as well.
    ``elsewhere``: builds the answer in an answer worker (:mod:`boardd.api.workers`), or gives
    None when it cannot (then ``build`` does, here, in a worker thread).
    """
    handle.provider.refuse_if_damaged()
    state = state_of(request)
    cache = state.cache
    entry = cache.get(key, version)
    if entry is None:
        # Compressed (for a client that takes gzip) in the worker thread that builds it.
        accept = request.headers.get("accept-encoding", "")
        tiers = await tiers_of(state) if expensive else None
        if tiers is not None and tiers.disk is not None:
            entry = await run_in_threadpool(
                lambda: _through_disk(tiers, handle, key, version, build, media_type).ready_for(
                    accept
                )
            )
        else:

            def fresh() -> Encoded:
                # The store's identity: a store recreated at the same path counts ids and
                # generations from the start again, and a client keeps validators across
                # restarts.
                etag = make_etag((handle.store_id, key, version))
                return Encoded(build(), media_type, etag).ready_for(accept)

            body = await elsewhere() if elsewhere is not None else None
            if body is not None:
                etag = make_etag((handle.store_id, key, version))
                built = Encoded(body, media_type, etag)
                entry = await run_in_threadpool(built.ready_for, accept)
            else:
                entry = await run_in_threadpool(fresh)
            cache.put(key, entry, version)
    if alias is not None:
        cache.put(alias[0], entry, alias[1])
    return reply(request, cache, key, entry)


async def tiers_of(state: AppState) -> TwoTierCache | None:
    """The app's tiers, once the disk tier's opening has ended (opened or not)."""
    opening = state.disk_opening
    if opening is not None and opening.is_alive():
        if state.disk_wanted is not None:
            state.disk_wanted.set()
        await run_in_threadpool(opening.join)
    return state.tiers


def cached_reply(
    request: Request, handle: ExperimentHandle
) -> tuple[Response | None, FastKey | None]:
    """The answer straight from the memory cache under the handle's fast key, if there is
    one (no thread hop, no SQL: a cache hit costs only this); and the fast key (with its
    version) to file a freshly built answer under."""
    fast = handle.fast_key(request)
    if fast is None:
        return None, None
    handle.provider.refuse_if_damaged()
    cache = state_of(request).cache
    key, version = fast
    entry = cache.get(key, version)
    if entry is None:
        return None, fast
    return reply(request, cache, key, entry), fast


def reply(request: Request, cache: ResponseCache, key: Hashable, entry: Encoded) -> Response:
    """The response for a cached entry: 304 on a matching ETag, gzip when accepted."""
    status, headers, body = _cached_answer(
        request.headers.get("if-none-match", ""),
        request.headers.get("accept-encoding", ""),
        cache,
        key,
        entry,
    )
    response = Response(body, status_code=status)
    response.raw_headers = headers
    return response


#: An ASGI response's start and body messages.
RawAnswer = tuple[dict[str, Any], dict[str, Any]]


def raw_reply(
    headers: list[tuple[bytes, bytes]], cache: ResponseCache, key: Hashable, entry: Encoded
) -> RawAnswer:
    """:func:`reply` as ASGI messages, from a request's raw headers (for an answer sent
    without Starlette's request and response objects)."""
    if_none_match = accept_encoding = None
    for name, value in headers:
        if name == b"if-none-match":
            if if_none_match is None:
                if_none_match = value.decode("latin-1")
        elif name == b"accept-encoding" and accept_encoding is None:
            accept_encoding = value.decode("latin-1")
    status, raw, body = _cached_answer(
        if_none_match or "", accept_encoding or "", cache, key, entry
    )
    return (
        {"type": "http.response.start", "status": status, "headers": raw},
        {"type": "http.response.body", "body": body},
    )


def _cached_answer(
    if_none_match: str, accept_encoding: str, cache: ResponseCache, key: Hashable, entry: Encoded
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Status, headers (as Starlette would send them) and body of a cached entry's answer."""
    etag = entry.etag.encode("latin-1")
    if if_none_match and entry.etag in etags_of(if_none_match):
        return 304, [(b"etag", etag)], b""
    headers = [(b"etag", etag), (b"cache-control", b"no-cache"), (b"vary", b"accept-encoding")]
    body = entry.body
    if entry.compressible and "gzip" in accept_encoding:
        body = entry.gzipped()
        cache.resize(key, entry)
        headers.append((b"content-encoding", b"gzip"))
    media_type = entry.media_type
    if media_type.startswith("text/") and "charset=" not in media_type.lower():
        media_type += "; charset=utf-8"  # as Starlette's Response adds it
    headers.append((b"content-length", str(len(body)).encode("latin-1")))
    headers.append((b"content-type", media_type.encode("latin-1")))
    return 200, headers, body


def _through_disk(
    tiers: TwoTierCache,
    handle: ExperimentHandle,
    key: Hashable,
    version: Hashable,
    build: Callable[[], bytes],
    media_type: str,
) -> Encoded:
    # The store's identity and path name the namespace: another store (or this one rebuilt)
    # counts ids and generations from the start again.
    namespace = f"{handle.provider.store_id()}@{os.path.abspath(handle.spec.db)}"
    entry = tiers.get_disk(key, namespace, version)
    if entry is None:
        entry = Encoded(build(), media_type, make_etag((namespace, key, version)))
        tiers.put(key, entry, namespace, version)
    return entry


def etags_of(header: str) -> set[str]:
    """The validators an If-None-Match header names (weak ones as strong)."""
    return {part.strip().removeprefix("W/") for part in header.split(",") if part.strip()}
