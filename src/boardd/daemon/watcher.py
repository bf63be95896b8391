"""Watching a logdir for changes: boardd's own inotify watches, polling where they cannot hear.

The watcher only says *which paths changed*; the ingest thread decides what to read, and a
periodic full pass (the safety rescan) is the net under every mode. The watches are boardd's
own (:mod:`boardd.daemon.inotify`, on the standard library): one per directory of the logdir,
added as directories appear, with the bookkeeping here, so that what no watch covers is known.

The mode is ``inotify`` or ``polling``; ``problem()`` says why whenever something is polled:

* inotify cannot be had (another platform, the instance limit, its thread died): ``polling``;
* directories that got no watch (``fs.inotify.max_user_watches``) are counted in
  :attr:`LogdirWatcher.unwatched`: the ingest loop passes over the logdir at the polling
  interval meanwhile;
* the logdir is on a filesystem whose inotify does not hear every writer (NFS, SMB, FUSE,
  9p, …: writes from another host, or beneath a FUSE mount, make no event here): ``polling``
  from the start, the watches kept for the writes they do hear;
* a safety rescan found a change that no event announced (:meth:`LogdirWatcher.missed`): the
  watches are not hearing, whatever the filesystem says: ``polling`` from then on.

An inotify watch follows an inode, not a path: a logdir deleted (or moved away) and created
again would leave a dead watch behind. The watcher therefore also watches the logdir's parent
for the logdir's own name, and checks the logdir's identity (device, inode) at every
:meth:`LogdirWatcher.healthy`; when it changed, the watches are armed again on the new
directory (the caller then makes a full pass), and while the logdir is gone the mode is
``polling``.

The kernel queues only the events asked for, and boardd's own reading (opening and scanning
files and directories) is not among them, so a pass over 10,000 runs does not flood the queue.
When the queue overflows anyway (events were lost), the watches are armed again and the watcher
says so once per overflow (``on_overflow``): the ingest loop answers with one full pass.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import threading
from collections.abc import Callable
from pathlib import Path

from boardd.daemon import inotify
from boardd.reader.logdir import is_event_file

log = logging.getLogger(__name__)

#: Called from the watcher's thread with a changed event file, or with a directory whose
#: subtree changed (created, deleted or moved) and must be rediscovered.
OnChange = Callable[[Path, bool], None]
#: Called from the watcher's thread when the kernel's event queue overflowed (events lost).
OnOverflow = Callable[[], None]

#: What is asked of the kernel for each directory of the logdir: what changes an event file
#: or the set of runs. Not opens, reads or closes-without-write: those are what boardd's own
#: passes do, thousands per pass.
TREE_EVENTS = (
    inotify.IN_MODIFY
    | inotify.IN_CLOSE_WRITE
    | inotify.IN_CREATE
    | inotify.IN_DELETE
    | inotify.IN_MOVED_FROM
    | inotify.IN_MOVED_TO
    | inotify.IN_DELETE_SELF
    | inotify.IN_MOVE_SELF
    | inotify.IN_ONLYDIR
    | inotify.IN_EXCL_UNLINK
)
#: What is asked for the logdir's parent: its entries coming and going (the logdir's own name).
PARENT_EVENTS = (
    inotify.IN_CREATE
    | inotify.IN_DELETE
    | inotify.IN_MOVED_FROM
    | inotify.IN_MOVED_TO
    | inotify.IN_ONLYDIR
)
#: A file's events that change the set of files (the rest change a file's bytes).
_STRUCTURAL = inotify.IN_DELETE | inotify.IN_MOVED_FROM | inotify.IN_MOVED_TO
#: A directory's own events that mean it is gone from where it was.
_GONE = inotify.IN_DELETE_SELF | inotify.IN_MOVE_SELF | inotify.IN_UNMOUNT

#: Where Linux says how many watches a user may have.
MAX_USER_WATCHES = Path("/proc/sys/fs/inotify/max_user_watches")
#: Where Linux lists this process's mounts.
MOUNTINFO = Path("/proc/self/mountinfo")

#: Filesystems on which inotify hears only the writes made through this kernel's own mount:
#: network filesystems written from other hosts, FUSE (written beneath the mount or from
#: elsewhere), 9p and virtio-fs (written by the host of a VM or container).
DEAF_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "virtiofs", "ceph", "lustre", "gpfs", "afs"}
)


def max_user_watches() -> int | None:
    """The system's ``fs.inotify.max_user_watches`` (None where there is no such thing)."""
    try:
        return int(MAX_USER_WATCHES.read_text())
    except (OSError, ValueError):
        return None


def _unescape(field: str) -> str:
    """A mountinfo path field: spaces, tabs, newlines and backslashes are octal escapes."""
    if "\\" not in field:
        return field
    return (
        field.encode("latin-1")
        .decode("unicode_escape")
        .encode("latin-1")
        .decode("utf-8", "surrogateescape")
    )


def filesystem_of(path: Path, mountinfo: str | None = None) -> str | None:
    """The type of the filesystem ``path`` is on (``ext4``, ``nfs4``, ``fuse.sshfs``…), from
    ``/proc/self/mountinfo``; None where that cannot be read."""
    if mountinfo is None:
        try:
            mountinfo = MOUNTINFO.read_text(errors="surrogateescape")
        except OSError:
            return None
    target = os.path.realpath(path)
    best: tuple[int, str] | None = None
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields = head.split()
        if not sep or len(fields) < 5 or not tail:
            continue
        point = _unescape(fields[4])
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        # A later line for the same mount point is mounted over the earlier one.
        if inside and (best is None or len(point) >= best[0]):
            best = (len(point), tail.split()[0])
    return None if best is None else best[1]


def deaf_filesystem(fstype: str | None) -> bool:
    """Whether inotify on this type of filesystem misses writes made elsewhere."""
    if fstype is None:
        return False
    return fstype in DEAF_FILESYSTEMS or fstype == "fuse" or fstype.startswith("fuse.")


Identity = tuple[int, int]


def _identity(path: Path) -> Identity | None:
    """The directory's (device, inode); None when it is not there (or not a directory)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if os.path.isdir(path) else None


class LogdirWatcher:
    """Watches one logdir recursively. ``start()`` returns ``"inotify"`` or ``"polling"``.

    In polling mode the ingest loop's periodic pass does the work; the watches, where they
    could be had, still report what they hear.
    """

    def __init__(
        self,
        logdir: Path,
        on_change: OnChange,
        *,
        poll: bool = False,
        on_overflow: OnOverflow | None = None,
    ) -> None:
        self.logdir = Path(os.path.abspath(logdir))
        self._root = os.fsencode(self.logdir)
        self._on_change = on_change
        self._on_overflow = on_overflow or (lambda: None)
        self._poll = poll
        self._lock = threading.RLock()
        self._inotify: inotify.Inotify | None = None
        self._thread: threading.Thread | None = None
        self._wake_r = self._wake_w = -1
        #: The watches of the logdir's tree: descriptor → directory, and back.
        self._paths: dict[int, bytes] = {}
        self._wds: dict[bytes, int] = {}
        #: The parent's watch (for the logdir's own name), if it could be had.
        self._parent_wd: int | None = None
        #: Directories that got no watch, with the errno (ENOSPC: the watch limit).
        self._unwatched: dict[bytes, int] = {}
        self._armed: Identity | None = None
        self._rearmed = False
        self.mode = "stopped"
        #: Why inotify is not used at all (None while it is).
        self.failure: str | None = None
        #: Why the logdir is polled although watched (a deaf filesystem, missed changes).
        self._polled_because: str | None = None
        self.overflows = 0
        #: Changes that a safety rescan found and no event announced.
        self.misses = 0

    # -- what health shows -----------------------------------------------------------------

    @property
    def unwatched(self) -> int:
        """Directories of the logdir inotify could not watch: they are polled."""
        return len(self._unwatched)

    def unwatched_reason(self) -> str | None:
        """Why some directories are polled, for health and the log; None when all are watched."""
        with self._lock:
            errors = set(self._unwatched.values())
            count = len(self._unwatched)
        if not count:
            return None
        if errno.ENOSPC in errors:
            limit = max_user_watches()
            cause = "the inotify watch limit" + (
                f" (fs.inotify.max_user_watches = {limit})" if limit is not None else ""
            )
        else:
            cause = ", ".join(sorted(os.strerror(e) for e in errors))
        return f"{count} director{'y' if count == 1 else 'ies'} not watched ({cause}): polled"

    def problem(self) -> str | None:
        """Why anything of the logdir is polled rather than heard; None when nothing is."""
        parts = [
            p
            for p in (
                self.failure and f"inotify is not used ({self.failure})",
                self._polled_because,
                self.unwatched_reason(),
            )
            if p
        ]
        return "; ".join(parts) or None

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> str:
        """Starts watching, or falls back to polling (logged, never raised)."""
        with self._lock:
            if self._poll:
                self.mode = "polling"
                return self.mode
            try:
                self._inotify = inotify.Inotify()
                self._arm()
            except Exception as exc:
                self.failure = f"{type(exc).__name__}: {exc}"
                log.warning("cannot watch %s with inotify (%s): polling instead", self.logdir, exc)
                self._close_inotify()
                self.mode = "polling"
                return self.mode
            self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
            self._thread = threading.Thread(target=self._run, name="boardd-watch", daemon=True)
            self._thread.start()
            self.mode = "inotify"
            fstype = filesystem_of(self.logdir)
            if deaf_filesystem(fstype):
                self._poll_too(
                    f"the logdir is on {fstype}, where inotify does not hear writes made from "
                    "other hosts or beneath the mount"
                )
            return self.mode

    def missed(self, path: str) -> None:
        """A safety rescan found ``path`` changed and no event had announced it: the watches
        do not hear every writer, so the logdir is polled from now on (once said)."""
        with self._lock:
            self.misses += 1
            if self.mode != "inotify":
                return
            self._poll_too(
                f"a rescan found changes no inotify event announced ({path}): the watches do "
                "not hear every writer here"
            )

    def _poll_too(self, why: str) -> None:
        self._polled_because = why
        self.mode = "polling"
        log.warning("watching %s: %s; polling it as well", self.logdir, why)

    def healthy(self) -> bool:
        """Checks the watches (the caller polls while :attr:`mode` is ``polling``): a watch
        thread that died means polling from then on; a logdir deleted or replaced is watched
        again once it is back (:meth:`take_rearmed` then says so). One stat."""
        with self._lock:
            thread = self._thread
            if thread is None:
                return self.mode == "polling"
            if not thread.is_alive():
                self.failure = "the inotify thread stopped"
                log.warning("watching %s: %s; polling instead", self.logdir, self.failure)
                self._thread = None
                self._end_thread(None, self._wake_r, self._wake_w)
                self._wake_r = self._wake_w = -1
                self._close_inotify()
                self.mode = "polling"
                return True
            if self._armed is not None and _identity(self.logdir) == self._armed:
                return True
            self._disarm()
            try:
                self._arm()
            except Exception as exc:
                # Gone, or not watchable now: polled meanwhile, tried again at the next check.
                if self.mode == "inotify":
                    log.warning(
                        "%s was deleted or replaced: its inotify watch is dead; polling until "
                        "it can be watched again (%s)",
                        self.logdir,
                        exc,
                    )
                self._disarm()
                self.mode = "polling"
                return True
            log.info("%s is back (or was replaced): watching it again", self.logdir)
            if self._polled_because is None:
                self.mode = "inotify"
            self._rearmed = True
            return True

    def take_rearmed(self) -> bool:
        """Whether the watches were armed again since the last call: what changed while they
        were dead was not seen, so the caller makes a full pass."""
        with self._lock:
            rearmed, self._rearmed = self._rearmed, False
            return rearmed

    def stop(self) -> None:
        """Stops the watch thread and closes the instance; safe to call twice."""
        with self._lock:
            thread, self._thread = self._thread, None
            wake_r, wake_w = self._wake_r, self._wake_w
            self._wake_r = self._wake_w = -1
        # Joined without the lock: the thread may be waiting for it to handle an event.
        self._end_thread(thread, wake_r, wake_w)
        with self._lock:
            self._close_inotify()
            self.mode = "stopped"

    @staticmethod
    def _end_thread(thread: threading.Thread | None, wake_r: int, wake_w: int) -> None:
        if thread is not None and thread.is_alive():
            with contextlib.suppress(OSError):
                os.write(wake_w, b"x")
            if thread is not threading.current_thread():
                thread.join(timeout=5)
        for fd in (wake_r, wake_w):
            if fd >= 0:
                os.close(fd)

    def _close_inotify(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        self._paths.clear()
        self._wds.clear()
        self._parent_wd = None
        self._armed = None

    # -- the watches -----------------------------------------------------------------------

    def _arm(self) -> None:
        """Watches the logdir and every directory under it, and its parent (for the logdir's
        own name). The logdir's own watch must be had; the others may fail (counted)."""
        assert self._inotify is not None
        identity = _identity(self.logdir)
        if identity is None:
            raise FileNotFoundError(errno.ENOENT, "no such directory", str(self.logdir))
        wd = self._inotify.add_watch(self._root, TREE_EVENTS)
        self._note_watch(wd, self._root)
        self._armed = identity
        self._unwatched.clear()
        self._watch_subtree(self._root, include_top=False)
        parent = self.logdir.parent
        if self._parent_wd is None and parent != self.logdir:
            try:
                self._parent_wd = self._inotify.add_watch(os.fsencode(parent), PARENT_EVENTS)
            except OSError as exc:
                # The identity check at every healthy() still finds a replaced logdir.
                log.debug("cannot watch %s (%s)", parent, exc)

    def _disarm(self) -> None:
        """Drops the tree's watches (the parent's stays)."""
        if self._inotify is not None:
            for wd in self._paths:
                self._inotify.rm_watch(wd)
        self._paths.clear()
        self._wds.clear()
        self._armed = None

    def _note_watch(self, wd: int, path: bytes) -> None:
        old = self._paths.get(wd)
        if old is not None and old != path:
            self._wds.pop(old, None)
        self._paths[wd] = path
        self._wds[path] = wd
        self._unwatched.pop(path, None)

    def _watch_subtree(self, top: bytes, *, include_top: bool) -> None:
        """Watches ``top`` (if asked) and every directory under it. Symbolic links to
        directories are followed, as the logdir's discovery follows them (a run linked in from
        elsewhere is a run): the watch is on the target, its changes are reported under the
        path through the link. A directory already watched under another path (a link loop,
        or two links to one directory) is not walked again."""
        assert self._inotify is not None
        stack = [top]
        first = True
        while stack:
            path = stack.pop()
            if include_top or not first:
                try:
                    wd = self._inotify.add_watch(path, TREE_EVENTS)
                except OSError as exc:
                    # Gone, or not a directory any more, since it was listed: nothing to
                    # watch; else (ENOSPC, EACCES) it is polled.
                    if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                        self._unwatched[path] = exc.errno or 0
                    first = False
                    continue
                known = self._paths.get(wd)
                if known is not None and known != path:
                    first = False
                    continue
                self._note_watch(wd, path)
            first = False
            try:
                with os.scandir(path) as entries:
                    for entry in entries:
                        try:
                            if entry.is_dir():
                                stack.append(entry.path)
                        except OSError:
                            continue
            except OSError:
                continue

    def _forget_subtree(self, top: bytes) -> None:
        """Drops the watches of ``top`` and what was under it (moved out of the logdir, or
        somewhere boardd will find by rediscovery)."""
        assert self._inotify is not None
        prefix = top + b"/"
        for path in [p for p in self._wds if p == top or p.startswith(prefix)]:
            wd = self._wds.pop(path)
            self._paths.pop(wd, None)
            self._inotify.rm_watch(wd)
        for path in [p for p in self._unwatched if p == top or p.startswith(prefix)]:
            del self._unwatched[path]

    # -- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._listen()
        except Exception:
            # healthy() finds the thread gone and polls from then on.
            log.exception("watching %s: the inotify thread failed", self.logdir)

    def _listen(self) -> None:
        source = self._inotify
        assert source is not None
        wake = self._wake_r
        poller = select.poll()
        poller.register(source.fd, select.POLLIN)
        poller.register(wake, select.POLLIN)
        while True:
            ready = poller.poll()
            if any(fd == wake for fd, _ in ready):
                return
            for fd, flags in ready:
                if fd == source.fd and flags & (select.POLLNVAL | select.POLLERR):
                    raise OSError(errno.EBADF, "the inotify descriptor failed")
            while True:
                events = source.read()
                if not events:
                    break
                for event in events:
                    try:
                        self._handle(event)
                    except Exception:
                        # One event's trouble (a callback's) never stops the watching.
                        log.exception("watching %s: handling an event failed", self.logdir)

    def _handle(self, event: inotify.Event) -> None:
        if event.mask & inotify.IN_Q_OVERFLOW:
            self._overflowed()
            return
        with self._lock:
            if event.wd == self._parent_wd:
                # Only the logdir's own name counts: it was created, deleted or moved. The
                # loop then calls healthy(), which arms the watches again before its pass.
                mine = event.name == os.fsencode(self.logdir.name)
                changed: tuple[Path, bool] | None = (self.logdir, True) if mine else None
            else:
                changed = self._tree_event(event)
        if changed is not None:
            self.deliver(*changed)

    def _tree_event(self, event: inotify.Event) -> tuple[Path, bool] | None:
        """Updates the watches for one event of the logdir's tree; returns what to report."""
        mask = event.mask
        if mask & inotify.IN_IGNORED:
            path = self._paths.pop(event.wd, None)
            if path is not None and self._wds.get(path) == event.wd:
                del self._wds[path]
            return None
        directory = self._paths.get(event.wd)
        if directory is None:
            return None  # a watch dropped a moment ago
        if not event.name:
            if mask & _GONE and directory == self._root:
                # The logdir itself is gone: healthy() notices and re-arms.
                return (self.logdir, True)
            return None
        path = directory + b"/" + event.name
        if mask & inotify.IN_ISDIR:
            if mask & (inotify.IN_CREATE | inotify.IN_MOVED_TO):
                self._watch_subtree(path, include_top=True)
            elif mask & inotify.IN_MOVED_FROM:
                self._forget_subtree(path)
            return (Path(os.fsdecode(path)), True)
        if is_event_file(os.fsdecode(event.name)):
            return (Path(os.fsdecode(path)), bool(mask & _STRUCTURAL))
        linked = mask & (inotify.IN_CREATE | inotify.IN_MOVED_TO)
        if linked and os.path.islink(path) and os.path.isdir(path):
            # A link to a directory: a run linked in (discovery follows it), watched as such.
            self._watch_subtree(path, include_top=True)
            return (Path(os.fsdecode(path)), True)
        if mask & (inotify.IN_DELETE | inotify.IN_MOVED_FROM) and path in self._wds:
            # A link to a watched directory went away: its target is not the logdir's now.
            self._forget_subtree(path)
            return (Path(os.fsdecode(path)), True)
        return None

    def _overflowed(self) -> None:
        """Events were lost: the watches are armed again (directories created meanwhile may
        have none) and the caller makes one full pass."""
        with self._lock:
            self.overflows += 1
            if self._armed is not None:
                self._disarm()
                try:
                    self._arm()
                except OSError as exc:
                    log.warning("watching %s again after an overflow failed (%s)", self.logdir, exc)
        self._on_overflow()

    def deliver(self, path: Path, structural: bool) -> None:
        """Reports one change to the caller (the one place every heard change goes through)."""
        self._on_change(path, structural)
