"""Blob keys (opaque, URL-safe, bound to one store file), media-type sniffing, and blob reads."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import apsw

from boardd.data.connections import open_store
from boardd.data.errors import DataError, NotFound
from boardd.store import queries
from boardd.store.blobs import blob_size, iter_blob
from boardd.store.errors import BlobNotFoundError, StoreError
from boardd.store.queries import SeriesInfo


def blob_key(experiment: str, store: str, blob_id: int) -> str:
    """An opaque, URL-safe key for a blob (no path in it). It names the store file too, so a
    key handed out before a store was rebuilt never names another blob (browsers cache
    blobs for a long time)."""
    return f"{experiment}~{store[:12]}.{blob_id}"


class BlobKey(NamedTuple):
    """A parsed blob key."""

    experiment: str
    #: The first characters of the store's identity (:func:`boardd.store.queries.store_id`).
    store: str
    blob_id: int


def parse_blob_key(key: str) -> BlobKey | None:
    """The parts of a key, or None if it is not one of ours."""
    experiment, sep, rest = key.rpartition("~")
    store, dot, id_text = rest.partition(".")
    if not sep or not dot or not store.isascii() or not store.isalnum():
        return None
    if not (id_text.isascii() and id_text.isdigit()) or len(id_text) > 18:
        return None
    return BlobKey(experiment, store, int(id_text))


_SNIFF = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"fLaC", "audio/flac"),
    (b"OggS", "audio/ogg"),
    (b"ID3", "audio/mpeg"),
)


def sniff(head: bytes) -> str:
    """A content type from a blob's first bytes (application/octet-stream if unknown)."""
    for magic, media in _SNIFF:
        if head.startswith(magic):
            return media
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return "application/octet-stream"


@dataclass(slots=True)
class BlobStream:
    """An open blob: its size, media type, and its chunks (the first one already read). Holds a
    read snapshot of its own until :meth:`close` (or the chunks are exhausted)."""

    size: int
    media_type: str
    _first: bytes
    _rest: Iterator[bytes]
    _connection: apsw.Connection

    def chunks(self) -> Iterator[bytes]:
        """The blob's bytes chunk by chunk; closes the snapshot at the end."""
        try:
            if self._first:
                yield self._first
            yield from self._rest
        finally:
            self.close()

    def close(self) -> None:
        """Releases the snapshot; safe to call twice."""
        self._connection.close()


def unknown_key(key: str) -> NotFound:
    """The error for a key that names no blob."""
    return NotFound(f"unknown blob key {key!r}: take keys from /api/v1/blob_sequences")


def open_blob(db: Path, key: str, previous_stores: Collection[str] = ()) -> BlobStream:
    """Opens the blob a key names in the store file ``db`` (blocking: call it off the event loop).

    :class:`NotFound` says which: a key of a store file this experiment had before (in
    ``previous_stores``: the store was rebuilt since the key was handed out, list again), or an
    unknown key. :class:`Unavailable` if the store cannot be opened.
    """
    parsed = parse_blob_key(key)
    if parsed is None:
        raise unknown_key(key)
    connection = open_store(db)
    try:
        store = queries.store_id(connection)
        if not store.startswith(parsed.store):
            if any(old.startswith(parsed.store) for old in previous_stores):
                raise NotFound(
                    f"blob key {key!r} is of an earlier store file: the store was rebuilt "
                    "since the key was handed out; list the blob sequence again"
                )
            raise unknown_key(key)
        size = blob_size(connection, parsed.blob_id)
        if size is None:
            raise unknown_key(key)
        rest = iter_blob(connection, parsed.blob_id)
        first = next(rest, b"")
    except BlobNotFoundError:
        connection.close()
        raise unknown_key(key) from None
    except StoreError as exc:
        connection.close()
        raise DataError(f"cannot read blob: {exc}") from exc
    except BaseException:
        connection.close()
        raise
    return BlobStream(size, sniff(first[:16]), first, rest, connection)


def last_blob(connection: apsw.Connection, series: SeriesInfo) -> bytes | None:
    """The first blob of the series' last step (what TensorBoard reads of a graph series), or
    None when it has none."""
    rows = queries.blob_sequence_rows(connection, series.id, latest=1)
    if not rows or not rows[-1].blobs:
        return None
    _, blob_id = rows[-1].blobs[0]
    return b"".join(iter_blob(connection, blob_id))
