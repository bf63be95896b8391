"""Replies: JSON encoding, answers through the response cache (ETag, 304, gzip, the disk
tier), and answers too large to hold, streamed a block at a time."""

from __future__ import annotations

import asyncio
import ctypes
import os
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from boardd.api.app_state import ExperimentHandle, FastKey, state_of, tiers_of
from boardd.cache import GZIP_LEVEL, Encoded, ResponseCache, TwoTierCache, make_etag


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
