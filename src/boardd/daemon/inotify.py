"""Linux's inotify, through the C library's three calls: an instance, its watches, its events.

boardd's watcher (:mod:`boardd.daemon.watcher`) keeps its own bookkeeping of which directory
has which watch, which got none and why, and what an overflow means; what it needs from the
kernel is this thin layer. It is written on the standard library (``ctypes``, ``os``,
``struct``) so that the live path depends on no third party's internals.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys
from dataclasses import dataclass

# The event bits of <sys/inotify.h> (the same on every Linux architecture).
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

#: ``struct inotify_event`` without its name: wd, mask, cookie, len.
_HEADER = struct.Struct("iIII")
#: Enough for many events per read (each is 16 bytes and its name, at most NAME_MAX + 1).
READ_SIZE = 64 * 1024


class InotifyUnavailableError(OSError):
    """This system has no inotify (not Linux, or a C library without it)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One event: the watch it came from (-1 for a queue overflow), its bits, its name (the
    entry of the watched directory it concerns; empty for the directory itself)."""

    wd: int
    mask: int
    cookie: int
    name: bytes


def _libc() -> ctypes.CDLL:
    if not sys.platform.startswith("linux"):
        raise InotifyUnavailableError(f"inotify is Linux's; this is {sys.platform}")
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    try:
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_init1.restype = ctypes.c_int
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_add_watch.restype = ctypes.c_int
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.inotify_rm_watch.restype = ctypes.c_int
    except AttributeError as exc:
        raise InotifyUnavailableError(f"the C library has no inotify ({exc})") from exc
    return libc


#: What the kernel's refusals mean here, in the words of the setting to raise.
_LIMITS = {
    ("inotify_init1", errno.EMFILE): "the inotify instance limit (fs.inotify.max_user_instances)",
    ("inotify_add_watch", errno.ENOSPC): "the inotify watch limit (fs.inotify.max_user_watches)",
}


def _error(what: str, path: bytes | None = None) -> OSError:
    code = ctypes.get_errno()
    text = _LIMITS.get((what, code), os.strerror(code))
    if path is None:
        return OSError(code, f"{what}: {text}")
    return OSError(code, f"{what}: {text}", os.fsdecode(path))


class Inotify:
    """One inotify instance (a descriptor, non-blocking and closed on exec).

    Raises :class:`OSError` when the kernel refuses one (EMFILE: the per-user instance limit,
    ``fs.inotify.max_user_instances``), :class:`InotifyUnavailableError` off Linux.
    """

    def __init__(self) -> None:
        self._libc = _libc()
        fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise _error("inotify_init1")
        self.fd = fd

    def add_watch(self, path: bytes, mask: int) -> int:
        """Watches ``path`` for ``mask``; returns the watch descriptor (the same one again for
        a path whose inode is already watched). Raises OSError (ENOSPC: the watch limit,
        ``fs.inotify.max_user_watches``; ENOENT; EACCES; ENOTDIR with IN_ONLYDIR)."""
        wd = int(self._libc.inotify_add_watch(self.fd, path, mask))
        if wd < 0:
            raise _error("inotify_add_watch", path)
        return wd

    def rm_watch(self, wd: int) -> None:
        """Drops a watch (its IN_IGNORED event follows); a watch already gone is no error."""
        self._libc.inotify_rm_watch(self.fd, wd)

    def read(self) -> list[Event]:
        """The events queued now ([] when there are none: the descriptor does not block)."""
        try:
            data = os.read(self.fd, READ_SIZE)
        except BlockingIOError:
            return []
        return parse(data)

    def close(self) -> None:
        """Closes the instance (its watches go with it); safe to call twice."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)


def parse(data: bytes) -> list[Event]:
    """The events in one read of an inotify descriptor (the kernel returns whole events)."""
    events: list[Event] = []
    offset, end = 0, len(data)
    size = _HEADER.size
    while offset + size <= end:
        wd, mask, cookie, length = _HEADER.unpack_from(data, offset)
        offset += size
        name = data[offset : offset + length].rstrip(b"\0")
        offset += length
        events.append(Event(wd, mask, cookie, name))
    return events
