"""The memory tier keeps no answer near its whole bound: one such answer would evict every other
and stay resident for a request rarely repeated."""

from __future__ import annotations

from boardd.cache import LARGEST_ENTRY_BYTES, Encoded, ResponseCache, make_etag


def entry(size: int) -> Encoded:
    return Encoded(b"x" * size, "application/json", make_etag(size))


def test_answers_over_the_largest_entry_are_not_kept_and_evict_nothing() -> None:
    cache = ResponseCache()
    assert cache.largest == LARGEST_ENTRY_BYTES < cache.max_bytes
    for i in range(4):
        cache.put(("small", i), entry(1 << 20), 1)
    cache.put("every series", entry(LARGEST_ENTRY_BYTES + 1), 1)
    assert cache.get("every series", 1) is None
    assert len(cache) == 4 and cache.bytes == 4 << 20
    assert cache.stats.evictions == 0
    # A newer answer too large to keep still drops the one it supersedes.
    cache.put("k", entry(LARGEST_ENTRY_BYTES), 1)
    assert cache.get("k", 1) is not None
    cache.put("k", entry(LARGEST_ENTRY_BYTES + 1), 2)
    assert cache.get("k", 2) is None and cache.get("k", 1) is None
    assert len(cache) == 4


def test_a_small_cache_keeps_answers_up_to_its_bound() -> None:
    cache = ResponseCache(max_bytes=1000)
    assert cache.largest == 1000
    cache.put("big", entry(1000))
    assert cache.get("big") is not None
