"""The response cache: the memory LRU (bytes-bounded), the diskcache tier, and both behind the
HTTP API over real stores (generation keys, sharing between apps, restarts, ETag/304, gzip)."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient
from tensorboardX import SummaryWriter

import boardd
from boardd.api import app as app_module
from boardd.api.app import create_app
from boardd.cache import (
    GZIP_MIN_BYTES,
    DiskTier,
    Encoded,
    ResponseCache,
    TwoTierCache,
    disk_key,
    make_etag,
)
from boardd.config import ExperimentSpec
from boardd.ingest.ingestor import Ingestor
from boardd.store.session import WriteSession

WALL = 1_700_000_000.0
TENSORS = {"plugin": "histograms", "run": "train", "tag": "weights", "downsample": "7"}


def entry(size: int, fill: bytes = b"x") -> Encoded:
    """An entry whose body is ``size`` bytes."""
    return Encoded(fill * size, "application/json", make_etag(size))


# -- the memory tier -----------------------------------------------------------------------------


def test_lru_is_bounded_by_bytes_and_evicts_least_recently_used_first() -> None:
    cache = ResponseCache(max_bytes=1000)
    for name in "abcd":
        cache.put(name, entry(300))
    assert cache.bytes == 900 and len(cache) == 3  # "a" went to make room for "d"
    assert cache.get("a") is None
    assert cache.stats.evictions == 1
    assert cache.get("b") is not None  # "b" is now the most recently used
    cache.put("e", entry(300))
    assert cache.get("c") is None and cache.get("b") is not None
    assert cache.bytes == 900
    # Order now, least recent first: d, e, b. 700 more bytes evict d and e, and only them.
    cache.put("big", entry(700))
    assert [k for k in "bde" if cache.get(k) is not None] == ["b"]
    assert cache.get("big") is not None and cache.bytes == 1000
    assert cache.stats.evictions == 4
    cache.put("huge", entry(1001))  # larger than the whole cache: not stored, nothing evicted
    assert cache.get("huge") is None and cache.get("big") is not None


def test_replacing_a_key_and_gzip_growth_are_accounted() -> None:
    cache = ResponseCache(max_bytes=10_000)
    cache.put("k", entry(1000))
    cache.put("k", entry(2000))
    assert cache.bytes == 2000 and len(cache) == 1
    hit = cache.get("k")
    assert hit is not None
    compressed = hit.gzipped()
    cache.resize("k", hit)
    cache.resize("k", hit)  # counted once
    assert cache.bytes == 2000 + len(compressed)
    assert gzip.decompress(compressed) == hit.body
    assert cache.stats.hits == 1 and cache.stats.misses == 0
    # A resize for an entry the key no longer holds changes nothing.
    cache.put("k", entry(500))
    cache.resize("k", hit)
    assert cache.bytes == 500
    # One entry under two keys (the fast alias), compressed through one of them: replacing
    # either subtracts what was counted for it, never more.
    shared = entry(3000, b"ab")
    cache.put("k", shared, 1)
    cache.put("alias", shared, 1)
    assert cache.bytes == 6000
    shared.gzipped()
    cache.resize("k", shared)
    cache.put("alias", entry(10), 2)
    cache.put("k", entry(10), 2)
    assert cache.bytes == 20 and len(cache) == 2


def test_a_newer_version_replaces_the_superseded_answer() -> None:
    cache = ResponseCache(max_bytes=1 << 20)
    for generation in range(100):  # the same request, answered after each of 100 commits
        assert cache.get("scalars?run=a", generation) is None
        cache.put("scalars?run=a", entry(1000 + generation), generation)
        assert cache.get("scalars?run=a", generation) is not None
    cache.put("scalars?run=b", entry(10), 7)
    assert len(cache) == 2
    assert cache.bytes == 1099 + 10
    assert cache.stats.replaced == 99 and cache.stats.evictions == 0
    # An older version never hits (the answer would be stale), nor does a newer one yet.
    assert cache.get("scalars?run=a", 98) is None
    assert cache.get("scalars?run=a", 100) is None
    hit = cache.get("scalars?run=a", 99)
    assert hit is not None and len(hit.body) == 1099
    # A new version too large to keep still drops the one it supersedes.
    cache.put("scalars?run=a", entry(2 << 20), 100)
    assert cache.get("scalars?run=a", 99) is None
    assert len(cache) == 1 and cache.bytes == 10


# -- the disk tier -------------------------------------------------------------------------------


def disk_threads() -> list[threading.Thread]:
    """The disk tiers' threads still alive."""
    return [t for t in threading.enumerate() if t.name.startswith("boardd-disk-cache")]


def test_disk_tier_round_trip_sharing_and_close(tmp_path: Path) -> None:
    first = DiskTier(tmp_path / "cache")
    second = DiskTier(tmp_path / "cache")  # another process would open it the same way
    try:
        stored = Encoded(b'{"a":1}', "application/json", '"abc"')
        first.put("ns|key", stored)
        got = second.get("ns|key")
        assert got is not None
        assert (got.body, got.media_type, got.etag) == (stored.body, stored.media_type, stored.etag)
        assert second.get("other|key") is None
        assert (second.stats.hits, second.stats.misses) == (1, 1)
        assert len(first) == 1
    finally:
        first.close()
        second.close()
        second.close()  # twice is fine
    assert disk_threads() == []
    assert first.get("ns|key") is None  # closed: a miss, not an error
    reopened = DiskTier(tmp_path / "cache")
    try:
        survived = reopened.get("ns|key")
        assert survived is not None and survived.body == b'{"a":1}'
    finally:
        reopened.close()
    assert (tmp_path / "cache").stat().st_mode & 0o077 == 0


def test_disk_tier_is_size_bounded(tmp_path: Path) -> None:
    limit = 1 << 20
    tier = DiskTier(tmp_path / "cache", max_bytes=limit)
    try:
        rng = np.random.default_rng(0)
        for i in range(64):  # 4 MiB of incompressible bodies through a 1 MiB tier
            tier.put(f"k{i}", Encoded(rng.bytes(64 * 1024), "application/json", f'"{i}"'))
        assert tier.volume() <= 2 * limit
        assert tier.get("k63") is not None  # the newest stay
        assert tier.get("k0") is None  # the oldest went first
        tier.put("too-big", Encoded(b"x" * (limit // 4), "application/json", '"b"'))
        assert tier.get("too-big") is None
    finally:
        tier.close()


def test_two_tier_promotes_disk_hits_to_memory(tmp_path: Path) -> None:
    disk = DiskTier(tmp_path / "cache")
    try:
        writer = TwoTierCache(ResponseCache(), disk)
        writer.put(("values", 1), entry(100), "store-a")
        reader = TwoTierCache(ResponseCache(), disk)
        assert reader.get(("values", 1), "store-b") is None  # another namespace
        hit = reader.get(("values", 1), "store-a")
        assert hit is not None and hit.body == b"x" * 100
        assert reader.memory.get(("values", 1)) is not None  # promoted
        stats = reader.stats
        assert stats.disk is not None
        assert (stats.disk.hits, stats.disk.misses) == (1, 1)
        assert disk_key("store-a", ("values", 1)) == f"{boardd.__version__}|store-a|('values', 1)"
    finally:
        disk.close()


# -- both tiers behind the API, over real stores -------------------------------------------------


class Store:
    """A store with its writer here: ``write(steps)`` appends histograms and scalars, commits."""

    def __init__(self, root: Path, *, seed: int = 0) -> None:
        self.logdir = root / "logs"
        self.db = root / "store.sqlite"
        self.rng = np.random.default_rng(seed)
        self.session = WriteSession(self.db, self.logdir, sampling={"*": None})
        self.ingestor = Ingestor(self.session.writer, self.logdir, experiment="exp", workers=1)
        self.spec = ExperimentSpec("exp", self.logdir, self.db)
        self._suffix = 0

    def write(self, steps: range) -> int:
        """Writes ``steps`` into a new event file of run "train", ingests; the generation."""
        self._suffix += 1
        with SummaryWriter(str(self.logdir / "train"), filename_suffix=f".{self._suffix}") as w:
            for step in steps:
                w.add_scalar("loss", float(self.rng.normal()), step, walltime=WALL + step)
                w.add_histogram("weights", self.rng.normal(size=300), step, walltime=WALL + step)
        self.ingestor.run_pass()
        return self.session.writer.generation

    def close(self) -> None:
        """Closes the writer."""
        self.ingestor.close()
        self.session.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A store holding steps 0..59 of run "train"."""
    made = Store(tmp_path / "a")
    made.write(range(60))
    yield made
    made.close()


def disk_stats(client: TestClient) -> dict[str, Any]:
    """The disk tier's counters from /api/v1/health."""
    tiers = client.get("/api/v1/health").json()["cache"]["tiers"]
    assert tiers["disk"] is not None
    return dict(tiers["disk"])


def steps_of(body: dict[str, Any]) -> list[int]:
    """The steps of train/weights (or train/loss) in a values answer."""
    series = body["train"]
    return [p["step"] for p in next(iter(series.values()))]


def test_answers_follow_commits_in_both_tiers(tmp_path: Path, store: Store) -> None:
    app = create_app([store.spec], disk_cache=tmp_path / "cache")
    with TestClient(app) as client:
        cases = [
            ("/api/v1/scalars", {"plugin": "scalars", "run": "train", "tag": "loss"}),
            ("/api/v1/tensors", TENSORS),  # expensive: through the disk tier
            ("/api/v1/tensors/list", {"plugin": "histograms"}),
        ]
        before = [client.get(path, params=params) for path, params in cases]
        assert all(r.status_code == 200 for r in before)
        again = [client.get(path, params=params) for path, params in cases]
        assert [r.content for r in again] == [r.content for r in before]
        assert [r.headers["etag"] for r in again] == [r.headers["etag"] for r in before]
        assert disk_stats(client)["misses"] == 1  # one expensive build; its repeat hit memory

        store.write(range(60, 75))  # a commit: new points
        after = [client.get(path, params=params) for path, params in cases]
        assert steps_of(after[0].json())[-1] == 74
        assert steps_of(after[1].json())[-1] == 74  # downsampling keeps the last step
        assert after[2].json()["train"]["weights"]["max_step"] == 74
        for old, new in zip(before, after, strict=True):
            assert new.content != old.content
            assert new.headers["etag"] != old.headers["etag"]
        # A client holding the old validator gets the new answer, not a 304.
        stale = client.get(
            "/api/v1/tensors", params=TENSORS, headers={"if-none-match": before[1].headers["etag"]}
        )
        assert stale.status_code == 200 and stale.content == after[1].content


def test_a_deferred_disk_tier_opens_once_signalled(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # boardd serve: the disk tier opens after the first answer (not beside it), at the latest
    # DISK_OPEN_AFTER_SECONDS after the start; here that fallback is out of reach.
    monkeypatch.setattr(app_module, "DISK_OPEN_AFTER_SECONDS", 600.0)
    after = threading.Event()
    cache_dir = tmp_path / "cache"
    with TestClient(create_app([store.spec], disk_cache=cache_dir, disk_after=after)) as client:
        assert client.get("/api/v1/scalars", params={"plugin": "scalars"}).status_code == 200
        assert not cache_dir.exists()  # not opened while it waits
        after.set()
        deadline = time.monotonic() + 30
        while client.get("/api/v1/health").json()["cache"]["tiers"]["disk"] is None:
            assert time.monotonic() < deadline, "the disk tier did not open once signalled"
            time.sleep(0.05)
        assert cache_dir.is_dir()


def test_a_request_that_needs_a_deferred_disk_tier_opens_it_at_once(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "DISK_OPEN_AFTER_SECONDS", 600.0)
    after = threading.Event()
    app = create_app([store.spec], disk_cache=tmp_path / "cache", disk_after=after)
    with TestClient(app) as client:
        # An expensive answer goes through the disk tier: it has the opening begin now (the
        # fallback's 600 s would make this test time out).
        built = client.get("/api/v1/tensors", params=TENSORS)
        assert built.status_code == 200
        assert after.is_set()
        assert disk_stats(client)["misses"] == 1


def test_disk_tier_is_shared_by_two_apps_and_survives_restarts(
    tmp_path: Path, store: Store
) -> None:
    cache_dir = tmp_path / "cache"
    first_app = create_app([store.spec], disk_cache=cache_dir)
    second_app = create_app([store.spec], disk_cache=cache_dir)
    with TestClient(first_app) as first, TestClient(second_app) as second:
        built = first.get("/api/v1/tensors", params=TENSORS)
        assert built.status_code == 200
        assert disk_stats(first) == {"hits": 0, "misses": 1, "hit_rate": 0.0, "errors": 0}
        shared = second.get("/api/v1/tensors", params=TENSORS)
        assert (shared.content, shared.headers["etag"]) == (built.content, built.headers["etag"])
        assert disk_stats(second)["hits"] == 1
        memory = second.get("/api/v1/health").json()["cache"]["tiers"]["memory"]
        assert memory["misses"] >= 1
        second.get("/api/v1/tensors", params=TENSORS)  # promoted: memory answers now
        assert disk_stats(second)["hits"] == 1
    assert disk_threads() == []

    restarted = create_app([store.spec], disk_cache=cache_dir)
    with TestClient(restarted) as client:
        again = client.get("/api/v1/tensors", params=TENSORS)
        assert again.content == built.content
        assert disk_stats(client) == {"hits": 1, "misses": 0, "hit_rate": 1.0, "errors": 0}


def test_stores_sharing_a_disk_tier_never_see_each_others_answers(tmp_path: Path) -> None:
    # Same experiment name, same runs and tags, same ids and generations; other values.
    a, b = Store(tmp_path / "a", seed=1), Store(tmp_path / "b", seed=2)
    try:
        assert a.write(range(40)) == b.write(range(40))
        cache_dir = tmp_path / "cache"
        with (
            TestClient(create_app([a.spec], disk_cache=cache_dir)) as on_a,
            TestClient(create_app([b.spec], disk_cache=cache_dir)) as on_b,
        ):
            from_a = on_a.get("/api/v1/tensors", params=TENSORS)
            from_b = on_b.get("/api/v1/tensors", params=TENSORS)
            assert from_a.status_code == from_b.status_code == 200
            assert from_a.content != from_b.content
            assert from_a.headers["etag"] != from_b.headers["etag"]
            assert disk_stats(on_b) == {"hits": 0, "misses": 1, "hit_rate": 0.0, "errors": 0}
    finally:
        a.close()
        b.close()


def test_a_store_recreated_at_the_same_path_is_another_namespace(tmp_path: Path) -> None:
    # Ids and generations start again in a new store file (a rebuild, a deleted store): the
    # store's identity keeps the old file's answers from being served for the new one's.
    cache_dir = tmp_path / "cache"
    old = Store(tmp_path / "s", seed=1)
    generation = old.write(range(40))
    old.close()
    with TestClient(create_app([old.spec], disk_cache=cache_dir)) as client:
        before = client.get("/api/v1/tensors", params=TENSORS)
    for path in (tmp_path / "s").iterdir():
        if path.name.startswith("store.sqlite"):
            path.unlink()
    (tmp_path / "s" / "logs").rename(tmp_path / "old-logs")
    new = Store(tmp_path / "s", seed=2)
    try:
        assert new.write(range(40)) == generation
        with TestClient(create_app([new.spec], disk_cache=cache_dir)) as client:
            after = client.get("/api/v1/tensors", params=TENSORS)
            assert disk_stats(client)["hits"] == 0
        assert before.status_code == after.status_code == 200
        assert after.content != before.content
        assert after.headers["etag"] != before.headers["etag"]
    finally:
        new.close()


def test_a_recreated_store_never_304s_a_validator_of_the_old_one(tmp_path: Path) -> None:
    # Same path, same ids and generations, other values: only the store's identity tells the
    # answers apart, and the ETag must carry it (a client keeps validators across restarts).
    scalars = {"plugin": "scalars", "run": "train", "tag": "loss"}
    old = Store(tmp_path / "s", seed=1)
    generation = old.write(range(40))
    old.close()
    with TestClient(create_app([old.spec])) as client:
        before = client.get("/api/v1/scalars", params=scalars)
    for path in (tmp_path / "s").iterdir():
        if path.name.startswith("store.sqlite"):
            path.unlink()
    (tmp_path / "s" / "logs").rename(tmp_path / "old-logs")
    new = Store(tmp_path / "s", seed=2)
    try:
        assert new.write(range(40)) == generation
        with TestClient(create_app([new.spec])) as client:
            after = client.get(
                "/api/v1/scalars", params=scalars, headers={"if-none-match": before.headers["etag"]}
            )
        assert after.status_code == 200
        assert after.content != before.content
        assert after.headers["etag"] != before.headers["etag"]
    finally:
        new.close()


def test_an_upgrade_never_serves_old_answers_nor_304s_old_validators(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another boardd version may encode an answer differently: neither the disk tier (kept
    # across restarts) nor a client's validator from the old version may stand for the answer.
    cache_dir = tmp_path / "cache"
    cases = [
        ("/api/v1/tensors", TENSORS),  # expensive: through the disk tier
        ("/api/v1/scalars", {"plugin": "scalars", "run": "train", "tag": "loss"}),
        ("/api/v1/runs", {}),
    ]
    with TestClient(create_app([store.spec], disk_cache=cache_dir)) as client:
        before = [client.get(path, params=params) for path, params in cases]
    assert all(r.status_code == 200 for r in before)
    # The same version, restarted: the disk tier answers, and the validators still hold.
    with TestClient(create_app([store.spec], disk_cache=cache_dir)) as client:
        for (path, params), old in zip(cases, before, strict=True):
            etag = old.headers["etag"]
            same = client.get(path, params=params, headers={"if-none-match": etag})
            assert same.status_code == 304, path
        assert disk_stats(client)["hits"] == 1
    monkeypatch.setattr(boardd, "__version__", "999.0.0+upgraded")
    with TestClient(create_app([store.spec], disk_cache=cache_dir)) as client:
        for (path, params), old in zip(cases, before, strict=True):
            etag = old.headers["etag"]
            upgraded = client.get(path, params=params, headers={"if-none-match": etag})
            assert upgraded.status_code == 200, path
            assert upgraded.headers["etag"] != etag, path
        assert disk_stats(client)["hits"] == 0


def test_etag_304_and_gzip(tmp_path: Path, store: Store) -> None:
    with TestClient(create_app([store.spec], disk_cache=tmp_path / "cache")) as client:
        for path, params in [
            ("/api/v1/tensors", TENSORS),  # the disk tier's path
            ("/api/v1/scalars", {"plugin": "scalars", "run": "train", "tag": "loss"}),
        ]:
            plain = client.get(path, params=params, headers={"accept-encoding": "identity"})
            assert plain.status_code == 200
            assert len(plain.content) >= GZIP_MIN_BYTES
            assert "content-encoding" not in plain.headers
            etag = plain.headers["etag"]
            assert plain.headers["cache-control"] == "no-cache"
            assert plain.headers["vary"] == "accept-encoding"

            not_modified = client.get(path, params=params, headers={"if-none-match": etag})
            assert not_modified.status_code == 304
            assert not_modified.content == b""
            assert not_modified.headers["etag"] == etag
            listed = client.get(path, params=params, headers={"if-none-match": f'"x", W/{etag}'})
            assert listed.status_code == 304

            # httpx (under TestClient) would decode gzip itself: read the raw bytes.
            with client.stream(
                "GET", path, params=params, headers={"accept-encoding": "gzip"}
            ) as zipped:
                raw = b"".join(zipped.iter_raw())
                assert zipped.headers["content-encoding"] == "gzip"
                assert zipped.headers["etag"] == etag
            assert gzip.decompress(raw) == plain.content
            assert len(raw) < len(plain.content)

        small = client.get("/api/v1/runs", headers={"accept-encoding": "gzip"})
        assert small.status_code == 200
        assert len(small.content) < GZIP_MIN_BYTES
        assert "content-encoding" not in small.headers


def test_a_fresh_answer_is_compressed_off_the_event_loop(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The gzip form of an answer built now is made in the worker thread that built it (the
    # event loop serves every other request meanwhile); a cached answer is sent as it is.
    compressing: list[str] = []
    real = gzip.compress

    def watched(data: bytes, compresslevel: int = 9, *, mtime: float | None = None) -> bytes:
        compressing.append(threading.current_thread().name)
        return real(data, compresslevel=compresslevel, mtime=mtime)

    monkeypatch.setattr(gzip, "compress", watched)
    with TestClient(create_app([store.spec], disk_cache=tmp_path / "cache")) as client:
        loop_thread = client.portal.call(lambda: threading.current_thread().name)  # type: ignore[union-attr]
        for path, params in [
            ("/api/v1/tensors", TENSORS),  # the disk tier's path
            ("/api/v1/scalars", {"plugin": "scalars", "run": "train", "tag": "loss"}),
            ("/data/plugin/scalars/scalars", {"run": "train", "tag": "loss"}),
        ]:
            compressing.clear()
            for _ in range(2):
                with client.stream(
                    "GET", path, params=params, headers={"accept-encoding": "gzip"}
                ) as zipped:
                    assert zipped.headers["content-encoding"] == "gzip", path
                    plain = gzip.decompress(b"".join(zipped.iter_raw()))
                assert len(plain) >= GZIP_MIN_BYTES
            assert len(compressing) == 1, (path, compressing)
            assert compressing[0] != loop_thread, path


def test_an_unusable_disk_tier_leaves_the_memory_tier(tmp_path: Path, store: Store) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    with TestClient(create_app([store.spec], disk_cache=blocked)) as client:
        assert client.get("/api/v1/tensors", params=TENSORS).status_code == 200
        tiers = client.get("/api/v1/health").json()["cache"]["tiers"]
        assert tiers["disk"] is None
        assert tiers["memory"]["misses"] >= 1
    assert disk_threads() == []
