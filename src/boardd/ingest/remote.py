"""Remote logdirs: any fsspec URL (``s3://bucket/prefix``, ``gs://``, ``az://``, ``file://``)
as a :class:`~boardd.ingest.sources.ByteSource`, paying only for new bytes.

fsspec (with s3fs, gcsfs or adlfs, the ``boardd[s3]`` / ``[gcs]`` / ``[azure]`` extras) does
the talking; credentials and endpoints come from each library's usual sources (environment,
config files) and ``--storage-option KEY=VALUE``. None of them is ever logged: messages name
the URL only.

What a pass costs:

- **Discovery**: one recursive listing of the prefix (``fs.find(..., detail=True)``; for S3
  one ``list_objects_v2`` without a delimiter, paginated: a request per 1,000 objects), never a
  walk per directory. An object's size and ETag come with it, so a file whose size did not
  change is not read: a pass with nothing new makes no GET. Whether a file or a run is still
  there is answered from the same listing (no HEAD per file).
- **Reading**: ranged GETs from the stored offset to the object's end as listed, in blocks of
  ``block_size`` (8 MiB by default), through the same framing and resync reader as local
  files. A torn last record stays unread (the offset stays before it) and is read again at the
  next pass; growth after the listing is seen at the next listing, never by another request.
- **Replacement**: an object that shrank, or whose first bytes or bytes before the offset
  changed, is replaced (the ingestor's rules for sources without inodes; an ETag changes at
  every re-upload of a growing object, so it only says "look", not "replaced": the store keeps
  it, and an object of unchanged size with a new ETag is looked at).
- **Folder markers** (keys ending in "/") are directories, never files.
- **Failures**: a server that cannot be reached raises
  :class:`~boardd.ingest.sources.SourceUnavailableError`: the pass stops, what it read is
  committed, and the runner retries with back-off from the committed offsets.

Requests are counted per source (:class:`RequestCounts`): health and the log show them.
"""

from __future__ import annotations

import errno
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from boardd.ingest.sources import HEAD_BYTES, FileIdentity, SourceFile, SourceUnavailableError
from boardd.reader.logdir import ROOT_RUN, DiscoveryProblem, is_event_file
from boardd.reader.source import RandomAccessBytes
from boardd.store.location import is_url

#: Bytes one ranged GET asks for (``--remote-block-size``; less at an object's end): few
#: requests for a big catch-up (the reader's batches are 8 MiB too).
DEFAULT_BLOCK_SIZE = 8 * 2**20
#: The extra to install for a URL scheme whose library is missing.
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure"}


@dataclass(slots=True)
class RequestCounts:
    """What a remote logdir has cost since the daemon started (one thread adds, any reads).

    ``listings`` are listing calls (for S3, each is one request per 1,000 objects: s3fs
    pages through ``list_objects_v2``); ``gets`` are ranged GETs; ``bytes_fetched`` their
    bodies; ``failures`` requests that did not get through (retried at a later pass)."""

    listings: int = 0
    objects_listed: int = 0
    gets: int = 0
    bytes_fetched: int = 0
    failures: int = 0

    def as_dict(self) -> dict[str, int]:
        """For /api/v1/health."""
        return {
            "listings": self.listings,
            "objects_listed": self.objects_listed,
            "gets": self.gets,
            "bytes_fetched": self.bytes_fetched,
            "failures": self.failures,
        }

    def describe(self) -> str:
        """For the log: ``3 listings, 12 GETs, 1.2 MB fetched``."""
        return (
            f"{self.listings} listing{'s' if self.listings != 1 else ''}, "
            f"{self.gets} GET{'s' if self.gets != 1 else ''}, "
            f"{self.bytes_fetched / 1e6:.1f} MB fetched"
            + (f", {self.failures} failed" if self.failures else "")
        )


def parse_storage_options(items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``KEY=VALUE`` items (``--storage-option``) → fsspec storage options. Values ``true`` /
    ``false`` become booleans, integers integers; anything else stays a string. ValueError
    names an item without ``=``."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"{item!r}: give KEY=VALUE, e.g. endpoint_url=http://127.0.0.1:9000")
        options[key] = _option_value(value)
    return options


def _option_value(text: str) -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def filesystem_problem(url: str) -> str | None:
    """Why ``url`` cannot be read by this installation (an unknown scheme, its library not
    installed), or None. Cheap: nothing is contacted."""
    import fsspec

    scheme = url.split("://", 1)[0].lower()
    try:
        fsspec.get_filesystem_class(scheme)
    except ValueError:
        return f"unknown URL scheme {scheme!r} (fsspec knows no such file system)"
    except ImportError:
        extra = EXTRAS.get(scheme)
        how = f'pip install "boardd[{extra}]"' if extra else f"install fsspec's {scheme} library"
        return f"reading {scheme}:// needs its library: {how}"
    return None


def _is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says the server could not be reached, rather than
    anything about one object. The libraries differ (botocore's EndpointConnectionError,
    aiohttp's ClientConnectorError, timeouts), so their class names are asked too."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (ConnectionError, TimeoutError)):
            return True
        if any(
            "Connect" in cls.__name__ or "Timeout" in cls.__name__ for cls in type(seen).__mro__
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class RemoteSource:
    """A logdir under an fsspec URL; runs follow TensorBoard's rules (the key's directory
    relative to the prefix; ``.`` for objects right under it)."""

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        *,
        block_size: int = DEFAULT_BLOCK_SIZE,
        counts: RequestCounts | None = None,
    ) -> None:
        import fsspec.core

        if not is_url(url):
            raise ValueError(f"{url}: not a URL (scheme://...)")
        self.url = url.rstrip("/")
        self.scheme = url.split("://", 1)[0]
        self.block_size = max(1, block_size)
        self.counts = counts if counts is not None else RequestCounts()
        fs, root = fsspec.core.url_to_fs(self.url, **dict(storage_options or {}))
        self.fs: Any = fs
        self.root = str(root).rstrip("/")
        #: The last listing: object path → (size, version); None before the first.
        self._listing: dict[str, tuple[int, str | None]] | None = None
        #: The "folders" of the last listing: keys ending in "/" (the S3 console's "Create
        #: folder", sync tools), as paths without it. A directory, never a file.
        self._folders: set[str] = set()

    @property
    def location(self) -> str:
        """The URL as given (no trailing slash)."""
        return self.url

    @property
    def listed_nothing(self) -> bool:
        """Whether the last listing found no object at all under the prefix (a prefix that
        does not exist lists as empty: the daemon says so, as a typo would look the same)."""
        return self._listing is not None and not self._listing and not self._folders

    def available(self) -> bool:
        """Whether the last listing got through (an unreachable server is not "every run
        deleted"; an empty listing does not purge runs either: see the ingestor)."""
        return self._listing is not None

    def runs(self) -> dict[str, list[SourceFile]]:
        """One recursive listing of the prefix; the event files grouped by run."""
        listing = self._list()
        found: dict[str, list[SourceFile]] = {}
        for path in sorted(listing):
            if not is_event_file(posixpath.basename(path)):
                continue
            run = self._run_of_path(path)
            if run is not None:
                found.setdefault(run, []).append(self._file(path))
        for files in found.values():
            files.sort(key=lambda f: f.name)
        return dict(sorted(found.items()))

    def problems(self) -> list[DiscoveryProblem]:
        """None: a listing that fails fails the pass (it is retried)."""
        return []

    def run_files(self, run: str) -> list[SourceFile]:
        """The run's event files as of the last listing (one is made if there is none)."""
        listing = self._listing if self._listing is not None else self._list()
        files = [
            self._file(path)
            for path in sorted(listing)
            if is_event_file(posixpath.basename(path)) and self._run_of_path(path) == run
        ]
        return sorted(files, key=lambda f: f.name)

    def run_present(self, run: str) -> bool:
        """Whether any object (an event file or not) or folder marker lies under the run's
        prefix, or a folder marker is the run's, as of the last listing: an object store has
        no empty directories but those markers."""
        if self._listing is None:
            raise SourceUnavailableError(f"{self.url}: not listed yet")
        if run == ROOT_RUN:
            return bool(self._listing) or bool(self._folders)
        prefix = f"{self.root}/{run}/"
        return f"{self.root}/{run}" in self._folders or any(
            path.startswith(prefix) for path in (*self._listing, *self._folders)
        )

    def file(self, key: str) -> SourceFile:
        """The object stored under ``key`` (its URL)."""
        return self._file(self._path_of(key))

    def run_of(self, key: str) -> str | None:
        """The run of the object's "directory"; None outside the prefix."""
        return self._run_of_path(self._path_of(key))

    # -- internals ------------------------------------------------------------------------

    def _list(self) -> dict[str, tuple[int, str | None]]:
        self.counts.listings += 1
        try:
            # A listing cached by the file system object would hide new objects.
            self.fs.invalidate_cache(self.root)
            found = self.fs.find(self.root, detail=True)
        except Exception as exc:
            self.counts.failures += 1
            self._listing = None
            raise SourceUnavailableError(f"cannot list {self.url}: {_describe(exc)}") from exc
        listing: dict[str, tuple[int, str | None]] = {}
        folders: set[str] = set()
        for path, info in found.items():
            if info.get("type", "file") != "file":
                continue
            name = str(path)
            if name.endswith("/"):
                # A folder marker: a run's "directory" that stays when its objects go, as a
                # local directory does (not a file, though its name may hold "tfevents").
                folders.add(name.rstrip("/"))
                continue
            listing[name] = (int(info.get("size") or 0), _version(info))
        self.counts.objects_listed += len(listing) + len(folders)
        self._folders = folders
        self._listing = listing
        return listing

    def _file(self, path: str) -> RemoteFile:
        listed = self._listing.get(path) if self._listing is not None else None
        return RemoteFile(
            key=f"{self.scheme}://{path}",
            path=path,
            listed=listed,
            fs=self.fs,
            counts=self.counts,
            block_size=self.block_size,
        )

    def _path_of(self, key: str) -> str:
        return key.split("://", 1)[1] if "://" in key else key

    def _run_of_path(self, path: str) -> str | None:
        parent = posixpath.dirname(path)
        if parent == self.root:
            return ROOT_RUN
        if not parent.startswith(self.root + "/"):
            return None
        return parent[len(self.root) + 1 :]


def _version(info: Mapping[str, Any]) -> str | None:
    """An object's version as its library lists it (S3's ETag, GCS's generation, …)."""
    for name in ("ETag", "etag", "generation", "version_id", "mtime", "LastModified"):
        value = info.get(name)
        if value:
            return str(value)
    return None


@dataclass(slots=True)
class RemoteFile:
    """One object as the last listing saw it (``listed``: size and version; None: not in it)."""

    key: str
    path: str
    listed: tuple[int, str | None] | None
    fs: Any = field(repr=False)
    counts: RequestCounts = field(repr=False)
    block_size: int = DEFAULT_BLOCK_SIZE

    @property
    def name(self) -> str:
        """The object's last key part."""
        return posixpath.basename(self.path)

    def identity(self) -> FileIdentity:
        """Size and ETag from the listing (no request); FileNotFoundError if not listed."""
        if self.listed is None:
            raise FileNotFoundError(errno.ENOENT, "not in the bucket's listing", self.key)
        size, version = self.listed
        return FileIdentity(size, version=version)

    def head(self, count: int = HEAD_BYTES) -> bytes:
        """One ranged GET of the first ``count`` bytes."""
        data = self.open()
        try:
            return data.read_at(0, count)
        finally:
            data.close()

    def open(self) -> RandomAccessBytes:
        """Ranged reads of the object up to its listed size."""
        size = self.listed[0] if self.listed is not None else 0
        return RemoteBytes(self, size)

    def exists(self) -> bool:
        """Whether the last listing had it (no request)."""
        return self.listed is not None

    def get(self, start: int, end: int) -> bytes:
        """One ranged GET of ``[start, end)``, counted. FileNotFoundError / PermissionError
        are this object's; a server that cannot be reached is SourceUnavailableError."""
        self.counts.gets += 1
        try:
            data = bytes(self.fs.cat_file(self.path, start=start, end=end))
        except (FileNotFoundError, PermissionError):
            self.counts.failures += 1
            raise
        except Exception as exc:
            self.counts.failures += 1
            if _is_connection_error(exc) or not isinstance(exc, OSError):
                raise SourceUnavailableError(f"cannot read {self.key}: {_describe(exc)}") from exc
            raise
        self.counts.bytes_fetched += len(data)
        return data


class RemoteBytes:
    """What the reader reads a remote object through: ranged GETs of one block each (never
    past the listed size), the last one cached."""

    __slots__ = ("_block", "_file", "_size", "_start")

    def __init__(self, file: RemoteFile, size: int) -> None:
        self._file = file
        self._size = size
        self._start = 0
        self._block = b""

    @property
    def name(self) -> str:
        """The object's URL."""
        return self._file.key

    def size(self) -> int:
        """The size the listing gave: growth since is seen at the next listing."""
        return self._size

    def read_at(self, offset: int, count: int) -> bytes:
        """Up to ``count`` bytes from ``offset``: from the cached block, else one GET."""
        end = min(self._size, offset + count)
        if end <= offset:
            return b""
        if self._start <= offset and end <= self._start + len(self._block):
            return self._block[offset - self._start : end - self._start]
        if count <= HEAD_BYTES:
            # A file's head, the bytes before an offset: exactly what is asked.
            self._start, self._block = offset, self._file.get(offset, end)
            return self._block[: end - offset]
        # Records: GETs of one block each (the last block is cached: the reader asks for the
        # bytes after a batch's last complete record again).
        parts = []
        position = offset
        while position < end:
            block = self._file.get(position, min(self._size, position + self._file.block_size))
            if not block:
                break  # the object shrank since the listing: the next pass sees it
            self._start, self._block = position, block
            parts.append(block[: end - position])
            position += len(block)
        return b"".join(parts)

    def refresh(self) -> None:
        """Nothing: a remote object's growth is seen at the next listing, not by a request."""

    def close(self) -> None:
        """Drops the cached block."""
        self._block = b""
