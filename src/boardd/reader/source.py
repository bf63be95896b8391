"""What the reader reads an event file through: bytes at an offset, and how many there are now.

The reader frames whatever :class:`RandomAccessBytes` gives it, so the same framing, resync and
decoding serve a local file (:class:`LocalFileBytes`), bytes in memory, or a remote object read
with ranged requests. Implementations raise :class:`OSError` when the bytes cannot be had; the
reader turns that into a :class:`~boardd.reader.tfrecord.RecordFileError`.
"""

from __future__ import annotations

import os
from typing import Protocol, runtime_checkable


@runtime_checkable
class RandomAccessBytes(Protocol):
    """Random access to one file's bytes as they are now; the file may grow between calls."""

    @property
    def name(self) -> str:
        """What messages call the file (its path, its URL)."""
        ...

    def size(self) -> int:
        """How many bytes the file holds now."""
        ...

    def read_at(self, offset: int, count: int) -> bytes:
        """Up to ``count`` bytes from ``offset`` (fewer at the end of the file)."""
        ...

    def refresh(self) -> None:
        """Looks again for growth that :meth:`size` may not show yet (reopen a file, say)."""
        ...

    def close(self) -> None:
        """Lets go of what the reads held; safe to call twice."""
        ...


class LocalFileBytes:
    """A local file, opened on first use and kept open; :meth:`refresh` reopens it, so growth
    on network file systems (close-to-open consistency) is seen."""

    __slots__ = ("_fd", "_path")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = os.fspath(path)
        self._fd: int | None = None

    @property
    def name(self) -> str:
        """The file's path."""
        return self._path

    def size(self) -> int:
        """The file's size now (one fstat)."""
        return os.fstat(self._open()).st_size

    def read_at(self, offset: int, count: int) -> bytes:
        """One pread."""
        return os.pread(self._open(), count, offset)

    def refresh(self) -> None:
        """Closes the descriptor; the next read opens the file again."""
        self.close()

    def close(self) -> None:
        """Closes the descriptor, if open."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self._path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        return self._fd
