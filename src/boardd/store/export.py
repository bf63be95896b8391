"""A consistent copy of a store, taken with SQLite's backup API while the writer keeps writing."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import apsw

from boardd.store.connection import open_reader
from boardd.store.errors import ExportError
from boardd.store.schema import SchemaError, check_readable

#: Pages copied per backup step (1 MiB with 4 KiB pages): the progress callback runs, and the
#: export can be cancelled, between steps.
PAGES_PER_STEP = 256

#: Called after every step with (pages copied, pages in the snapshot being copied).
ProgressCallback = Callable[[int, int], object]


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What :func:`export_store` wrote."""

    path: Path
    bytes: int
    pages: int
    seconds: float


def export_store(
    db: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    progress: ProgressCallback | None = None,
    overwrite: bool = False,
    pages_per_step: int = PAGES_PER_STEP,
) -> ExportResult:
    """Copies the store ``db`` to a new single-file store ``out`` and returns what it wrote.

    Safe while a writer is running: the copy is the store as of one commit, taken from a read
    snapshot that the writer does not wait for (WAL); while the copy runs, the WAL cannot be
    checkpointed past that snapshot, so it grows by whatever the writer commits meanwhile. The
    copy is written beside ``out`` and renamed into place only when complete, so ``out`` is
    never a partial file. The copy has no writer lease and uses a rollback journal (one file,
    no -wal/-shm), ready to be moved; a writer opening it switches it back to WAL.

    Raises ExportError if ``out`` exists (unless ``overwrite``) or cannot be written, and
    StoreOpenError if ``db`` is not a readable store. An exception raised by ``progress``
    cancels the export (the partial copy is removed) and propagates.
    """
    if pages_per_step < 1:
        raise ValueError(f"pages_per_step must be at least 1, not {pages_per_step}")
    source_path, target = Path(db), Path(out)
    began = time.monotonic()
    _check_target(source_path, target, overwrite)
    source = open_reader(source_path)
    try:
        temp = _make_temp(target, source_path)
        try:
            pages = _copy(source, temp, progress, pages_per_step)
            _finish_copy(temp)
            _fsync_file(temp)
            _move_into_place(temp, target, overwrite)
        except BaseException:
            _remove_copy(temp)
            raise
    finally:
        source.close()
    _fsync_directory(target.parent)
    return ExportResult(
        path=target,
        bytes=target.stat().st_size,
        pages=pages,
        seconds=time.monotonic() - began,
    )


def _check_target(source: Path, target: Path, overwrite: bool) -> None:
    if not target.parent.is_dir():
        raise ExportError(
            f"cannot export to {target}: directory {target.parent} does not exist; create it first"
        )
    if target.is_dir():
        raise ExportError(f"cannot export to {target}: it is a directory; give a file name")
    if source.exists() and target.exists() and os.path.samefile(source, target):
        raise ExportError(f"cannot export {source} onto itself; give another output path")
    _refuse_special(target)
    if not target.exists():
        return
    if not overwrite:
        raise ExportError(
            f"{target} already exists; remove it, choose another path, or give --force to "
            "overwrite it"
        )
    # A -wal or hot journal beside the file would be replayed onto the new copy when it is
    # opened, corrupting it: the file is a store in use or one that was not closed cleanly.
    for suffix in ("-wal", "-journal"):
        companion = target.with_name(target.name + suffix)
        if companion.exists() and companion.stat().st_size > 0:
            raise ExportError(
                f"will not overwrite {target}: {companion.name} beside it shows a database in "
                "use or not closed cleanly; stop whatever uses it, or choose another path"
            )


def _make_temp(target: Path, source: Path) -> Path:
    try:
        handle, name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".export-tmp", dir=target.parent
        )
        os.close(handle)
        temp = Path(name)
        # Like cp: the copy is as readable as the original (mkstemp makes it owner-only).
        temp.chmod(stat.S_IMODE(source.stat().st_mode))
    except OSError as exc:
        raise ExportError(f"cannot write in {target.parent}: {exc}; check its permissions") from exc
    return temp


def _copy(
    source: apsw.Connection, temp: Path, progress: ProgressCallback | None, pages_per_step: int
) -> int:
    # The backup would restart from page 1 whenever another process commits between two steps,
    # and never finish under a busy writer. Holding one read transaction across all steps pins
    # a WAL snapshot: backup_step uses an open read transaction instead of taking its own, so
    # the copy is that one commit's state, and WAL readers never block the writer.
    source.execute("BEGIN DEFERRED")
    try:
        _ = source.execute("SELECT count(*) FROM sqlite_schema").get  # starts reading
        target = apsw.Connection(str(temp))
        try:
            total = 0
            with target.backup("main", source, "main") as backup:
                done = False
                while not done:
                    done = backup.step(pages_per_step)
                    total = backup.page_count
                    if progress is not None:
                        progress(total - backup.remaining, total)
            return int(total)
        except apsw.FullError as exc:
            raise ExportError(
                f"no space left for the copy in {temp.parent}: {exc}; free some space or "
                "export to another directory"
            ) from exc
        except apsw.Error as exc:
            raise ExportError(f"cannot copy the store to {temp}: {exc}") from exc
        finally:
            target.close()
    finally:
        source.execute("ROLLBACK")


def _finish_copy(temp: Path) -> None:
    try:
        copy = apsw.Connection(str(temp))
    except apsw.Error as exc:
        raise ExportError(f"cannot open the copy {temp}: {exc}") from exc
    try:
        # The pages came from a WAL database, so the copy claims WAL mode too; one file is
        # what an export should be.
        copy.pragma("journal_mode", "delete")
        with copy:
            # The copy has no writer: a lease row would make the first writer on it wait for
            # (or take over from) a process that never wrote to this file.
            copy.execute("DELETE FROM lease")
            # A copy is another store: caches keyed by store identity must not mix them.
            copy.execute(
                "UPDATE meta SET value = lower(hex(randomblob(16))) WHERE key = 'store_id'"
            )
        check_readable(copy)
    except (apsw.Error, SchemaError) as exc:
        raise ExportError(f"the copy {temp} is not a valid store: {exc}") from exc
    finally:
        copy.close()


def _refuse_special(target: Path) -> None:
    """ExportError if ``target`` is there but is no regular file: --force replaces a file, never
    a device (``/dev/null`` would become a file), a FIFO, a socket or a symbolic link (replaced
    by the copy, not written through)."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ExportError(f"cannot export to {target}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(mode):
        raise ExportError(
            f"cannot export to {target}: it is a symbolic link; give the path it points to"
        )
    if not stat.S_ISREG(mode):
        raise ExportError(
            f"cannot export to {target}: it is not a regular file (a device, a FIFO or a "
            "socket); give a file name"
        )


def _move_into_place(temp: Path, target: Path, overwrite: bool) -> None:
    try:
        if overwrite:
            _refuse_special(target)  # again: it may have appeared during the copy
            os.replace(temp, target)
            return
        # A hard link fails if the target appeared since the check: never clobber a file
        # someone else created meanwhile.
        try:
            os.link(temp, target)
        except FileExistsError:
            raise ExportError(
                f"{target} appeared while exporting; remove it, choose another path, "
                "or give --force to overwrite it"
            ) from None
        except OSError:
            # No hard links here (some FUSE and network filesystems): check, then rename.
            if target.exists():
                raise ExportError(
                    f"{target} appeared while exporting; remove it, choose another path, "
                    "or give --force to overwrite it"
                ) from None
            os.replace(temp, target)
            return
        temp.unlink()
    except OSError as exc:
        raise ExportError(f"cannot move the copy into {target}: {exc}") from exc


def _remove_copy(temp: Path) -> None:
    for path in (temp, *(temp.with_name(temp.name + s) for s in ("-journal", "-wal", "-shm"))):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _fsync_file(path: Path) -> None:
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _fsync_directory(path: Path) -> None:
    # Makes the rename itself durable (the new name is an entry of the directory).
    with contextlib.suppress(OSError):
        handle = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)
