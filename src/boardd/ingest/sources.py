"""Sources of bytes the ingest layer reads through: a logdir's runs, files, their identity.

A :class:`ByteSource` is a logdir wherever it lives; each of its :class:`SourceFile` s is one
event file, known to the store by its ``key``. :class:`LocalFileSource` is a directory tree on
this machine. The interface is shaped for object stores too: an object has a size and a version
(its ETag) but no device or inode, and is read with ranged requests through
:class:`~boardd.reader.source.RandomAccessBytes`. Without an inode, a replaced file is told
from a grown one by its first bytes (:attr:`SourceFile.head`) and by shrinking; a file rewritten
in place keeping its first bytes, by the bytes just before the read offset (:func:`read_tail`).

A :class:`SourceFile` must pickle: parallel catch-up hands it to worker processes.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from boardd.reader.logdir import ROOT_RUN, DiscoveryProblem, is_event_file, run_name, walk
from boardd.reader.source import LocalFileBytes, RandomAccessBytes

#: How many leading bytes identify a file's content (its first record, usually).
HEAD_BYTES = 64
#: How many bytes before the read offset are kept to tell a rewritten file from a grown one.
TAIL_BYTES = 64


class SourceUnavailableError(ConnectionError):
    """The source as a whole cannot be reached now (an object store's server is down, the
    network is): the pass stops, what it read is committed, and it is tried again with
    back-off from the committed offsets. Not a reason to mark files unreadable."""


def unavailable(exc: BaseException) -> SourceUnavailableError | None:
    """The :class:`SourceUnavailableError` behind ``exc`` (itself or its cause), if any: the
    reader wraps the source's errors in its own."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, SourceUnavailableError):
            return seen
        seen = seen.__cause__
    return None


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """What tells a file's versions apart: its size now, and whatever else the source knows."""

    size: int
    mtime: float | None = None
    device: int | None = None
    inode: int | None = None
    #: An opaque version (an object's ETag, a local file's modification time): a new one makes
    #: a file of unchanged size be looked at (its first bytes, those before the offset), not
    #: proof that it was replaced.
    version: str | None = None


class SourceFile(Protocol):
    """One event file of a source."""

    @property
    def key(self) -> str:
        """The file's name in the store (a local file's path)."""
        ...

    @property
    def name(self) -> str:
        """The last part of the key: files of a run are read in this order."""
        ...

    def identity(self) -> FileIdentity:
        """The file's identity now; :class:`OSError` when it is gone or unreadable."""
        ...

    def head(self, count: int = HEAD_BYTES) -> bytes:
        """The file's first ``count`` bytes (fewer if it is shorter); :class:`OSError`."""
        ...

    def open(self) -> RandomAccessBytes:
        """Random access to the file's bytes, for the reader (which closes it)."""
        ...

    def exists(self) -> bool:
        """Whether the file is still there; :class:`OSError` when that cannot be told (a
        directory on its path cannot be searched): an unreadable file is not a deleted one."""
        ...


class ByteSource(Protocol):
    """A logdir: which runs it holds, their files, and the files' bytes."""

    @property
    def location(self) -> str:
        """Where the logdir is, as the store records it (a resolved path, a URL)."""
        ...

    def available(self) -> bool:
        """Whether the logdir itself is there. A vanished or unmounted logdir must not read as
        "every run deleted"."""
        ...

    def runs(self) -> dict[str, list[SourceFile]]:
        """Every run with event files, by name, each with its files in name order."""
        ...

    def problems(self) -> list[DiscoveryProblem]:
        """What the last :meth:`runs` could not examine (a directory it cannot read), and why:
        the runs below such a place are unreadable, not deleted."""
        ...

    def run_files(self, run: str) -> list[SourceFile]:
        """The event files of one run now, in name order."""
        ...

    def run_present(self, run: str) -> bool:
        """Whether the run's directory (or prefix) is still there, files or not;
        :class:`OSError` when that cannot be told."""
        ...

    def file(self, key: str) -> SourceFile:
        """The file stored under ``key`` (it need not exist any more)."""
        ...

    def run_of(self, key: str) -> str | None:
        """The run a file belongs to; None for a file outside the logdir."""
        ...


@dataclass(frozen=True, slots=True)
class LocalFile:
    """An event file on this machine; its key is its path as discovery found it."""

    path: str

    @property
    def key(self) -> str:
        """The file's path."""
        return self.path

    @property
    def name(self) -> str:
        """The file's name."""
        return os.path.basename(self.path)

    def identity(self) -> FileIdentity:
        """One stat."""
        st = os.stat(self.path)
        return FileIdentity(
            st.st_size, st.st_mtime, st.st_dev, st.st_ino, version=str(st.st_mtime_ns)
        )

    def head(self, count: int = HEAD_BYTES) -> bytes:
        """One open and read."""
        with open(self.path, "rb") as f:
            return f.read(count)

    def open(self) -> RandomAccessBytes:
        """The file, opened on first read."""
        return LocalFileBytes(self.path)

    def exists(self) -> bool:
        """Whether the path exists; OSError (EACCES, EIO) when that cannot be told."""
        return _exists(self.path)


class LocalFileSource:
    """A logdir on a local (or mounted) file system; runs follow TensorBoard's rules."""

    def __init__(self, logdir: str | os.PathLike[str]) -> None:
        # Absolute: files are known by their paths, and a logdir named relatively in one
        # command and absolutely in the next must be the same files (not all new ones).
        self.logdir = Path(os.path.abspath(logdir))
        self._problems: list[DiscoveryProblem] = []

    @property
    def location(self) -> str:
        """The logdir's resolved path."""
        return str(self.logdir.resolve())

    def available(self) -> bool:
        """Whether the logdir is a directory."""
        return self.logdir.is_dir()

    def runs(self) -> dict[str, list[SourceFile]]:
        """Discovery (:func:`boardd.reader.logdir.discover`): symlinks followed, loops not."""
        runs, self._problems = walk(self.logdir)
        return {run: [LocalFile(p) for p in paths] for run, paths in runs.items()}

    def problems(self) -> list[DiscoveryProblem]:
        """The directories and files the last :meth:`runs` could not examine."""
        return list(self._problems)

    def run_files(self, run: str) -> list[SourceFile]:
        """The run directory's event files (not its subdirectories': they are runs of their own)."""
        directory = self._directory(run)
        try:
            names = sorted(e.name for e in os.scandir(directory) if is_event_file(e.name))
        except OSError:
            return []
        return [LocalFile(str(directory / name)) for name in names]

    def run_present(self, run: str) -> bool:
        """Whether the run's directory is there; OSError when that cannot be told."""
        directory = self._directory(run)
        return _exists(directory) and directory.is_dir()

    def file(self, key: str) -> SourceFile:
        """The file at path ``key``."""
        return LocalFile(key)

    def run_of(self, key: str) -> str | None:
        """The run of the file's directory; None when that lies outside the logdir (a path
        reached through a symlink that points elsewhere)."""
        run = run_name(self.logdir, Path(key).parent)
        return None if run == ".." or run.startswith("../") else run

    def _directory(self, run: str) -> Path:
        return self.logdir if run == ROOT_RUN else self.logdir / run


#: What "no such file" looks like: anything else (EACCES, EIO, ELOOP) leaves it unknown.
_GONE = (errno.ENOENT, errno.ENOTDIR)


def _exists(path: str | os.PathLike[str]) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno in _GONE:
            return False
        raise
    return True


def read_head(file: SourceFile) -> bytes | None:
    """The file's first :data:`HEAD_BYTES`, or None when it cannot be read now."""
    try:
        return file.head(HEAD_BYTES)
    except OSError:
        return None


def read_tail(file: SourceFile, offset: int, data: RandomAccessBytes | None = None) -> bytes | None:
    """The file's last :data:`TAIL_BYTES` before ``offset`` (the end of the last record read:
    its CRC covers the record), or None when they cannot be read now. ``data``: the file as
    the reader has it open (read through it, not opened again; left open)."""
    start = max(0, offset - TAIL_BYTES)
    try:
        if data is not None:
            tail = data.read_at(start, offset - start)
        else:
            data = file.open()
            try:
                tail = data.read_at(start, offset - start)
            finally:
                data.close()
    except OSError:
        return None
    return tail if len(tail) == offset - start else None


def same_start(a: bytes, b: bytes) -> bool:
    """Whether two heads agree on the bytes both have (a file may have grown past one)."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def size_now(file: SourceFile) -> int:
    """The file's size, 0 when it cannot be had."""
    try:
        return file.identity().size
    except OSError:
        return 0
