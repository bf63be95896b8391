"""A file's life cycle between two looks: what changed since it was last read, and what is left
to read.

A file grows (read on from its committed offset), or is replaced: a new inode, its first bytes
or those before its offset changed, or it shrank. A replaced file is read again from 0; when
its run's other files can be read again too, the whole run is (:class:`StartOver`), as a fresh
ingest would read them. What is left to read of a file, once judged, is a :class:`FileWork`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from boardd.ingest.sources import FileIdentity, SourceFile, read_head, read_tail, same_start
from boardd.store.writer import FileProgress, FileRecord

if TYPE_CHECKING:
    from boardd.reader.source import RandomAccessBytes


class StartOver(Exception):
    """A file of a run was replaced: the run is read again from its files as they are now."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


@dataclass(slots=True)
class FileWork:
    """A file with something left to read, after its life-cycle checks."""

    run_id: int
    file: SourceFile
    record: FileRecord
    identity: FileIdentity
    offset: int
    replaced: bool
    head: bytes | None = None

    def progress(self, consumed: int, data: RandomAccessBytes | None = None) -> FileProgress:
        """The file's state to commit once everything up to ``consumed`` is written (with the
        bytes before it as they are now: read through ``data``, the file as the reader has it
        open, if given)."""
        ident = self.identity
        return FileProgress(
            self.record.id,
            consumed,
            ident.size,
            ident.mtime,
            ident.device,
            ident.inode,
            head=self.head,
            tail=read_tail(self.file, consumed, data),
            version=ident.version,
        )

    def left(self) -> int:
        """Bytes to read from :attr:`offset` to the end the file had when it was examined."""
        return max(0, self.identity.size - self.offset)


class Change(NamedTuple):
    """What became of a file since it was last read."""

    #: Why it is read again from 0 (None: it is read on from its offset).
    replaced: str | None
    #: Its first bytes now, if they were read.
    head: bytes | None
    #: Its version (an object's ETag, a local file's mtime) is not the one recorded.
    new_version: bool


def change_of(file: SourceFile, record: FileRecord, ident: FileIdentity) -> Change | None:
    """What became of ``file`` (its ``record`` in the store, its identity ``ident`` now); None
    when it is not to be looked at again (an object whose torn end stays torn)."""
    # A file whose version (an object's ETag, a local file's mtime) changed since it was
    # read: looked at even if its size did not change (replaced by one of the same size,
    # rewritten in place, or re-uploaded or touched as it was).
    new_version = (
        ident.version is not None and record.version is not None and ident.version != record.version
    )
    if (
        ident.inode is None
        and record.state == "active"
        and record.head is not None
        and record.consumed < ident.size == record.size
        and not new_version
    ):
        # An object (a source without inodes) the size it had when it was last read to
        # its end: what is left after the offset is a torn record that stays torn. Not
        # fetched again (each look costs requests) until the object changes.
        return None
    # A source without inodes (an object store) tells a replacement by its first bytes.
    replaced = record.inode is not None and (record.inode, record.device) != (
        ident.inode,
        ident.device,
    )
    head = read_head(file) if ident.size != record.consumed or replaced or new_version else None
    rewritten = (
        not replaced
        and head is not None
        and record.head is not None
        and not same_start(head, record.head)
    )
    # Grown, or rewritten in place keeping its first bytes? The bytes before the offset
    # (the end of the last record read, whose CRC covers that record) tell.
    overwritten = (
        not replaced
        and not rewritten
        and record.tail is not None
        and (ident.size > record.consumed or (new_version and ident.size == record.consumed))
        and read_tail(file, record.consumed) not in (None, record.tail)
    )
    if replaced:
        reason: str | None = "file replaced (new inode)"
    elif rewritten:
        reason = "file replaced (its first bytes changed)"
    elif overwritten:
        reason = "file rewritten (its bytes before the read offset changed)"
    elif ident.size < record.consumed:
        reason = "file shrank: read again"
    else:
        reason = None
    return Change(reason, head, new_version)


def identity_recorded(record: FileRecord, identity: FileIdentity) -> bool:
    """Whether the store holds the file's identity: its inode, or for a source without inodes
    (an object store) its first bytes, and its version if it has one; else it is recorded
    even when nothing is new."""
    version_known = identity.version is None or record.version is not None
    if identity.inode is None:
        return record.head is not None and version_known
    return record.inode is not None and version_known
