"""The byte-source interface is real: a source that serves bytes from memory ingests the same.

:class:`MemorySource` is a second, non-local :class:`ByteSource`, shaped like an object store:
objects have a size and an ETag-like version but no device or inode, and are read with ranged
reads. Everything the store ends up holding must be what the local logdir gives.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tensorboardX import SummaryWriter

from boardd.ingest import ByteSource, FileIdentity, LocalFileSource, SourceFile, ingest_logdir
from boardd.ingest.sources import HEAD_BYTES
from boardd.reader.logdir import ROOT_RUN, DiscoveryProblem
from boardd.reader.source import RandomAccessBytes
from tests.ingest.test_parallel import _children
from tests.store.conftest import LiveWriter, assert_same_store, snapshot, write_mixed

#: Objects by key, shared by every MemorySource of a test (a module global so that a source
#: file handed to a forked decode worker still finds its bytes).
OBJECTS: dict[str, bytes] = {}


@dataclass(frozen=True, slots=True)
class MemoryBytes:
    """Ranged reads of one object, as of now (or of ``data``, a copy taken earlier)."""

    key: str
    data: bytes | None = None

    @property
    def name(self) -> str:
        return f"memory://{self.key}"

    def size(self) -> int:
        return len(self._data())

    def read_at(self, offset: int, count: int) -> bytes:
        return self._data()[offset : offset + count]

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass

    def _data(self) -> bytes:
        if self.data is not None:
            return self.data
        try:
            return OBJECTS[self.key]
        except KeyError:
            raise FileNotFoundError(self.key) from None


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """An object: size and version (an ETag: the content's hash), no device, no inode.

    With ``data``, the object as it was when listed travels with the file (to a spawned
    decode worker, which has no :data:`OBJECTS` of its own).
    """

    key: str
    data: bytes | None = None

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    def identity(self) -> FileIdentity:
        data = MemoryBytes(self.key, self.data)._data()
        return FileIdentity(len(data), version=hashlib.md5(data).hexdigest())

    def head(self, count: int = HEAD_BYTES) -> bytes:
        return MemoryBytes(self.key, self.data).read_at(0, count)

    def open(self) -> RandomAccessBytes:
        return MemoryBytes(self.key, self.data)

    def exists(self) -> bool:
        return self.key in OBJECTS


class MemorySource:
    """A logdir as a flat namespace of objects under ``prefix/`` (runs are key prefixes)."""

    def __init__(self, prefix: str, *, copies: bool = False) -> None:
        self.prefix = prefix.rstrip("/")
        self.copies = copies

    @property
    def location(self) -> str:
        return self.prefix

    def available(self) -> bool:
        return True

    def runs(self) -> dict[str, list[SourceFile]]:
        found: dict[str, list[SourceFile]] = {}
        for key in sorted(OBJECTS):
            run = self.run_of(key)
            if run is not None and "tfevents" in key.rsplit("/", 1)[-1]:
                found.setdefault(run, []).append(self.file(key))
        for files in found.values():
            files.sort(key=lambda f: f.name)
        return dict(sorted(found.items()))

    def run_files(self, run: str) -> list[SourceFile]:
        return self.runs().get(run, [])

    def problems(self) -> list[DiscoveryProblem]:
        return []

    def run_present(self, run: str) -> bool:
        return run in self.runs()

    def file(self, key: str) -> SourceFile:
        return MemoryFile(key, OBJECTS.get(key) if self.copies else None)

    def run_of(self, key: str) -> str | None:
        if not key.startswith(self.prefix + "/"):
            return None
        directory = os.path.dirname(key[len(self.prefix) + 1 :])
        return directory or ROOT_RUN


def _load(logdir: Path) -> None:
    """Every event file of ``logdir`` into :data:`OBJECTS`, under its path as key."""
    OBJECTS.clear()
    for files in LocalFileSource(logdir).runs().values():
        for file in files:
            OBJECTS[file.key] = Path(file.key).read_bytes()


def _write_logdir(root: Path) -> Path:
    logdir = root / "logs"
    rng = np.random.default_rng(5)
    for run in ("train", "eval/deep"):
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(400):
                w.add_scalar("loss", float(rng.normal()), step)
                if step % 50 == 0:
                    w.add_histogram("weights", rng.normal(size=40), step)
                    w.add_image("img", rng.integers(0, 255, (3, 4, 4), dtype=np.uint8), step)
    writer = LiveWriter(logdir)  # the root run
    write_mixed(writer, range(60))
    writer.close()
    return logdir


def test_memory_source_is_a_byte_source() -> None:
    source: ByteSource = MemorySource("bucket/logs")
    file: SourceFile = source.file("bucket/logs/run/events.out.tfevents.1")
    assert source.run_of(file.key) == "run"
    assert source.run_of("elsewhere/run/events.out.tfevents.1") is None


def test_ingest_from_memory_equals_ingest_from_files(tmp_path: Path) -> None:
    logdir = _write_logdir(tmp_path)
    local = ingest_logdir(logdir, tmp_path / "local.sqlite", sampling={"scalars": 50})
    _load(logdir)
    # The bytes now exist only in memory: the files are gone from the disk.
    shutil.rmtree(logdir)
    logdir.mkdir()
    remote = ingest_logdir(
        logdir,
        tmp_path / "memory.sqlite",
        sampling={"scalars": 50},
        source=MemorySource(str(logdir)),
    )
    assert remote.bytes_read == local.bytes_read == sum(len(b) for b in OBJECTS.values())
    assert remote.records == local.records
    assert remote.summary == local.summary
    assert local.summary.runs == 3
    assert_same_store(tmp_path / "memory.sqlite", tmp_path / "local.sqlite", logdir)


def test_memory_object_growth_and_replacement_without_inodes(tmp_path: Path) -> None:
    logdir = _write_logdir(tmp_path)
    _load(logdir)
    source = MemorySource(str(logdir))
    db = tmp_path / "memory.sqlite"
    key = next(k for k in OBJECTS if "/train/" in k)
    whole = OBJECTS[key]
    # Half of the object (cut inside a record: the rest is a partial record), then all of it.
    OBJECTS[key] = whole[: len(whole) // 2]
    first = ingest_logdir(logdir, db, sampling={"*": None}, source=source)
    OBJECTS[key] = whole
    second = ingest_logdir(logdir, db, sampling={"*": None}, source=source)
    assert second.files_changed == ()
    assert first.bytes_read + second.bytes_read == sum(len(b) for b in OBJECTS.values())
    # Nothing new: nothing read, nothing committed (local files: the same).
    idle = ingest_logdir(logdir, db, sampling={"*": None}, source=source)
    assert (idle.bytes_read, idle.commits) == (0, 0)
    local = tmp_path / "local.sqlite"
    ingest_logdir(logdir, local, sampling={"*": None})
    assert ingest_logdir(logdir, local, sampling={"*": None}).commits == 0
    # The same key, other content (an object overwritten): its first bytes tell.
    OBJECTS[key] = OBJECTS[next(k for k in OBJECTS if "/eval/" in k)]
    third = ingest_logdir(logdir, db, sampling={"*": None}, source=source)
    assert third.files_changed == (key,)
    assert third.bytes_read == len(OBJECTS[key])


def test_memory_source_through_decode_workers(tmp_path: Path) -> None:
    # Parallel catch-up hands source files to worker processes: they must pickle and read.
    logdir = _write_logdir(tmp_path)
    local = tmp_path / "local.sqlite"
    ingest_logdir(logdir, local, workers=1)
    _load(logdir)
    db = tmp_path / "memory.sqlite"
    workers: set[int] = set()
    ingest_logdir(
        logdir,
        db,
        workers=2,
        parallel_min_bytes=0,
        source=MemorySource(str(logdir), copies=True),
        progress=lambda _done, _total: workers.update(_children()),
    )
    assert workers, "no decode worker ran"
    assert snapshot(db, logdir) == snapshot(local, logdir)
