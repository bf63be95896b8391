"""The in-memory response cache: encoded answers keyed by request and data generation.

A key always includes the generation of the data the answer was built from (the store's
commit counter, or the per-series generation for series reads), so a cached answer is never
older than the last commit: a new commit changes the key, and the stale entry simply ages out
of the LRU. Entries are bounded by their total size in bytes, not by count.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field

DEFAULT_MAX_BYTES = 256 * 2**20
#: Bodies at least this large are sent gzip-compressed to clients that accept it.
GZIP_MIN_BYTES = 1024


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
            self._gzipped = gzip.compress(self.body, compresslevel=5, mtime=0)
        return self._gzipped

    @property
    def size(self) -> int:
        """Bytes this entry holds."""
        return len(self.body) + (len(self._gzipped) if self._gzipped is not None else 0)


def make_etag(key: Hashable) -> str:
    """A strong validator for a cache key (which includes the data generation)."""
    digest = hashlib.blake2b(repr(key).encode("utf-8", "surrogatepass"), digest_size=12)
    return f'"{digest.hexdigest()}"'


@dataclass(slots=True)
class CacheStats:
    """Hit and miss counters."""

    hits: int = 0
    misses: int = 0
    evictions: int = 0

    @property
    def hit_rate(self) -> float:
        """Hits over lookups (0 before any lookup)."""
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


class ResponseCache:
    """A thread-safe LRU of :class:`Encoded` bounded by total bytes."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, Encoded] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.stats = CacheStats()

    def get(self, key: Hashable) -> Encoded | None:
        """The entry for ``key``, marked recently used; counts a hit or a miss."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.stats.misses += 1
                return None
            self._entries.move_to_end(key)
            self.stats.hits += 1
            return entry

    def put(self, key: Hashable, entry: Encoded) -> None:
        """Stores an entry (one larger than the whole cache is not stored)."""
        size = entry.size
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            self._entries[key] = entry
            self._bytes += size
            while self._bytes > self.max_bytes and self._entries:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size
                self.stats.evictions += 1

    def resize(self, key: Hashable, before: int) -> None:
        """Accounts for an entry that grew (its gzip form was added)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._bytes += entry.size - before

    @property
    def bytes(self) -> int:
        """Bytes held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)
