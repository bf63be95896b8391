"""The response cache: encoded answers, one per request, each tagged with the data generation it
was built from, in memory and (for expensive answers) on disk.

An entry is filed under the request's identity (route, query, experiment) and remembers its
*version*: the generation of the data it was built from (the store's commit counter, or the
per-series generations for series reads). A lookup names the current version; an entry of
another version is a miss, and the answer built for the new version **replaces** it. So a cached
answer is never older than the last commit, and on live data the cache holds one answer per
distinct request rather than one per request and commit (superseded answers can never hit again,
and used to fill the cache to its bound). Entries are bounded by their total size in bytes, not
by count, and none over :data:`LARGEST_ENTRY_BYTES` is kept. The second tier (:class:`DiskTier`,
diskcache) holds expensive derived answers under the identity and version together, shared by
worker processes and kept across restarts. ETags and disk keys also carry boardd's version: an
upgrade that encodes an answer differently never serves an old body nor 304s an old validator.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar

import boardd

if TYPE_CHECKING:
    import diskcache  # imported by the tier's thread as it opens (off `boardd serve`'s start)

T = TypeVar("T")

#: The memory tier's default bound. With one answer per distinct request (superseded answers
#: are replaced), 64 MiB holds the full answers (JSON plus gzip form) of about a hundred series
#: of 10,000 scalars or thousands of TensorBoard-sized ones, and keeps a laptop's daemon's
#: resident size modest under a polling client (bench/bench_soak.py measures it).
DEFAULT_MAX_BYTES = 64 * 2**20
#: The largest answer the memory tier keeps (or the whole bound, if smaller): one answer near
#: the whole bound would evict every other for an answer rarely asked twice, and would stay
#: resident until evicted in turn. Larger answers are built for each request (the data API
#: streams its own: api/data.py).
LARGEST_ENTRY_BYTES = 8 * 2**20
#: Bodies at least this large are sent gzip-compressed to clients that accept it.
GZIP_MIN_BYTES = 1024
#: zlib's level for answers: 1, nginx's default. Answers change with every commit of their
#: series, so each is compressed about as often as it is sent: level 1 takes a fraction of
#: level 5's time for a body only somewhat larger.
GZIP_LEVEL = 1


@dataclass(slots=True)
class Encoded:
    """An encoded response body with its validator and (lazily) its gzip form."""

    body: bytes
    media_type: str
    etag: str
    _gzipped: bytes | None = field(default=None, repr=False)

    def gzipped(self) -> bytes:
        """The gzip-compressed body, computed once."""
        if self._gzipped is None:
            self._gzipped = gzip.compress(self.body, compresslevel=GZIP_LEVEL, mtime=0)
        return self._gzipped

    @property
    def compressible(self) -> bool:
        """Whether the body is large enough to be sent gzip-compressed."""
        return len(self.body) >= GZIP_MIN_BYTES

    def ready_for(self, accept_encoding: str) -> Encoded:
        """Makes the gzip form now if a client with this Accept-Encoding is sent it; returns
        the entry. For the thread that built the answer: compressing a large answer in the
        event loop would hold up every other request and stream (zlib lets go of the GIL)."""
        if self.compressible and "gzip" in accept_encoding:
            self.gzipped()
        return self

    @property
    def size(self) -> int:
        """Bytes this entry holds."""
        return len(self.body) + (len(self._gzipped) if self._gzipped is not None else 0)


def make_etag(key: Hashable) -> str:
    """A strong validator for a cache key (which includes the data generation; the caller adds
    the store's identity) and this boardd version (read now, not at import)."""
    text = repr((boardd.__version__, key))
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12)
    return f'"{digest.hexdigest()}"'


@dataclass(slots=True)
class CacheStats:
    """Hit and miss counters."""

    hits: int = 0
    misses: int = 0
    evictions: int = 0
    #: Entries replaced by the answer of a newer version of the same request.
    replaced: int = 0

    @property
    def hit_rate(self) -> float:
        """Hits over lookups (0 before any lookup)."""
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


class ResponseCache:
    """A thread-safe LRU of :class:`Encoded`, one entry per key, bounded by total bytes.

    Each entry remembers the ``version`` it was stored with (the data generation): a lookup with
    another version is a miss, and storing the new version replaces the old entry in place.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        #: Entries larger than this are not stored.
        self.largest = min(max_bytes, LARGEST_ENTRY_BYTES)
        #: key → [version, entry, the bytes counted for it]. The count is per key: an entry
        #: filed under two keys (an alias) is counted twice, conservatively.
        self._entries: OrderedDict[Hashable, tuple[Hashable, Encoded, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.stats = CacheStats()

    def get(self, key: Hashable, version: Hashable = None) -> Encoded | None:
        """The entry for ``key`` if it was built for ``version``, marked recently used; counts
        a hit or a miss."""
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] != version:
                self.stats.misses += 1
                return None
            self._entries.move_to_end(key)
            self.stats.hits += 1
            return found[1]

    def put(self, key: Hashable, entry: Encoded, version: Hashable = None) -> None:
        """Stores an entry for ``version``, replacing whatever ``key`` held (one larger than
        :attr:`largest` is not stored, and drops the superseded one)."""
        size = entry.size
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[2]
                if old[0] != version:
                    self.stats.replaced += 1
            if size > self.largest:
                return
            self._entries[key] = (version, entry, size)
            self._bytes += size
            self._evict()

    def resize(self, key: Hashable, entry: Encoded) -> None:
        """Accounts for an entry that grew (its gzip form was added), if ``key`` still holds
        that very entry."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None and found[1] is entry and found[2] != entry.size:
                self._entries[key] = (found[0], entry, entry.size)
                self._bytes += entry.size - found[2]
                self._evict()

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and self._entries:
            _, (_, _, size) = self._entries.popitem(last=False)
            self._bytes -= size
            self.stats.evictions += 1

    @property
    def bytes(self) -> int:
        """Bytes held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)


#: The disk tier's default bound (diskcache culls the least recently stored entries past it).
DEFAULT_DISK_BYTES = 512 * 2**20
#: How long a disk-tier operation may wait on another process's lock before it counts as a miss.
DISK_TIMEOUT_SECONDS = 1.0
#: The version of the disk tier's value layout; a change makes old entries misses.
_DISK_FORMAT = b"boardd-encoded-1"

log = logging.getLogger(__name__)


def disk_key(namespace: str, key: Hashable, version: Hashable = None) -> str:
    """The disk tier's key: the request's key and its version (generation) rendered as text,
    under this boardd version (the tier outlives upgrades) and a namespace (the store's
    identity), since ids and generations of different stores can be equal."""
    text = f"{boardd.__version__}|{namespace}|{key!r}"
    return text if version is None else f"{text}|{version!r}"


class DiskTier:
    """The second tier: encoded answers in a diskcache directory, shared by every process that
    opens the directory and kept across restarts, bounded by ``max_bytes``.

    diskcache opens one SQLite connection per calling thread, and ``Cache.close()`` closes only
    the caller's, so every operation runs on one thread of this tier's own: there is exactly
    one connection, and :meth:`close` closes it. A DiskTier is per process (the app opens it in
    its lifespan, after any fork); diskcache keeps concurrent processes safe (SQLite in WAL mode,
    value files written before they are referenced). Entries are never pickled: a value is
    bytes of our own layout. A failing disk (full, read-only, corrupt) counts an error and
    answers a miss; it never fails a request.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        max_bytes: int = DEFAULT_DISK_BYTES,
        *,
        timeout: float = DISK_TIMEOUT_SECONDS,
    ) -> None:
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.stats = CacheStats()
        self.errors = 0
        self._lock = threading.Lock()
        self._closed = False
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="boardd-disk-cache")
        try:
            self._cache: diskcache.Cache = self._executor.submit(self._open, timeout).result()
        except BaseException:
            self._executor.shutdown(wait=True)
            raise

    def _open(self, timeout: float) -> diskcache.Cache:
        import diskcache

        # Private to the user: cached answers are as confidential as the store.
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return diskcache.Cache(
            str(self.directory),
            timeout=timeout,
            size_limit=self.max_bytes,
            # Culls by time of storing, so that a read stays a read (LRU would write on each).
            eviction_policy="least-recently-stored",
            statistics=False,
        )

    def get(self, key: str) -> Encoded | None:
        """The entry stored under ``key``, or None (a miss, or an unreadable entry)."""
        raw = self._call(lambda: self._cache.get(key, default=None))
        entry = _decode(raw) if isinstance(raw, bytes) else None
        with self._lock:
            if entry is None:
                self.stats.misses += 1
            else:
                self.stats.hits += 1
        return entry

    def put(self, key: str, entry: Encoded) -> None:
        """Stores ``entry`` (one larger than an eighth of the tier is not stored)."""
        value = _encode(entry)
        if len(value) > self.max_bytes // 8:
            return
        self._call(lambda: self._cache.set(key, value))

    def __len__(self) -> int:
        count = self._call(lambda: len(self._cache))
        return int(count) if count is not None else 0

    def volume(self) -> int:
        """Bytes the tier takes on disk (estimated by diskcache)."""
        size = self._call(self._cache.volume)
        return int(size) if size is not None else 0

    def close(self) -> None:
        """Closes the connection and stops the thread; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._executor.submit(self._cache.close).result()
        self._executor.shutdown(wait=True)

    def _call(self, operation: Callable[[], T]) -> T | None:
        import sqlite3  # diskcache's database (both loaded once the tier opens)

        import diskcache

        if self._closed:
            return None
        try:
            return self._executor.submit(operation).result()
        except (OSError, sqlite3.Error, diskcache.Timeout, RuntimeError) as exc:
            # RuntimeError: the executor was shut down by close() in another thread.
            with self._lock:
                self.errors += 1
                first = self.errors == 1
            if first:
                log.warning("disk cache %s: %s (answers are built instead)", self.directory, exc)
            return None


def _encode(entry: Encoded) -> bytes:
    return b"\n".join(
        (_DISK_FORMAT, entry.media_type.encode("utf-8"), entry.etag.encode("ascii"), entry.body)
    )


def _decode(raw: bytes) -> Encoded | None:
    parts = raw.split(b"\n", 3)
    if len(parts) != 4 or parts[0] != _DISK_FORMAT:
        return None
    return Encoded(parts[3], parts[1].decode("utf-8"), parts[2].decode("ascii"))


class TierStats(NamedTuple):
    """Counters of both tiers (``disk`` is None without a disk tier)."""

    memory: CacheStats
    disk: CacheStats | None


class TwoTierCache:
    """The memory LRU first, then the disk tier; a disk hit is promoted to memory.

    Both tiers are asked with the same key and version, so neither can answer older than the
    last commit. Only answers that are expensive to build go to disk (the caller says which): a
    disk read costs more than rebuilding a cheap answer from the store.
    """

    def __init__(self, memory: ResponseCache, disk: DiskTier | None = None) -> None:
        self.memory = memory
        self.disk = disk

    def get(self, key: Hashable, namespace: str = "", version: Hashable = None) -> Encoded | None:
        """Memory, then disk. Blocking when it reaches the disk: call it off the event loop."""
        entry = self.memory.get(key, version)
        if entry is None:
            entry = self.get_disk(key, namespace, version)
        return entry

    def get_disk(
        self, key: Hashable, namespace: str = "", version: Hashable = None
    ) -> Encoded | None:
        """The disk tier only (promoting a hit to memory); blocking."""
        if self.disk is None:
            return None
        entry = self.disk.get(disk_key(namespace, key, version))
        if entry is not None:
            self.memory.put(key, entry, version)
        return entry

    def put(
        self, key: Hashable, entry: Encoded, namespace: str = "", version: Hashable = None
    ) -> None:
        """Stores in both tiers; blocking (disk)."""
        self.memory.put(key, entry, version)
        if self.disk is not None:
            self.disk.put(disk_key(namespace, key, version), entry)

    @property
    def stats(self) -> TierStats:
        """Hit and miss counters per tier."""
        return TierStats(self.memory.stats, None if self.disk is None else self.disk.stats)

    def close(self) -> None:
        """Closes the disk tier; safe to call twice."""
        if self.disk is not None:
            self.disk.close()
