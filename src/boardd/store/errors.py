"""The store's errors: each message says what happened and what to do next."""

from __future__ import annotations


class StoreError(Exception):
    """Base class of the store's errors."""


class StoreOpenError(StoreError):
    """The store file cannot be opened, or is not a boardd store this version can use."""


class StoreReadOnlyError(StoreOpenError):
    """The store can be read but not written (a read-only file, directory or filesystem, an
    immutable file): it can be served as it is, never ingested into."""


class StoreDamagedError(StoreOpenError):
    """The store file is damaged (SQLite finds it corrupt, or not a database at all): it is
    never served as data; the logdir rebuilds it."""


class BlockDamagedError(StoreError):
    """A block of scalar points whose bytes are not what was written (their checksum or their
    compressed stream says so): the store is damaged, as for SQLite's corruption errors."""


class LeaseHeldError(StoreError):
    """Another live process holds the store's writer lease."""


class FingerprintMismatchError(StoreError):
    """The store was built with other settings (sampling, decoding rules, logdir)."""


class SamplingGrowsError(FingerprintMismatchError):
    """The sampling asked keeps more points of some plugin than the store holds: only a
    rebuild (with ``larger``, the larger of both) can give them."""

    def __init__(self, message: str, kept: dict[str, int | None], larger: dict[str, int | None]):
        super().__init__(message)
        self.kept = kept
        self.larger = larger


class BlobNotFoundError(StoreError):
    """A blob id that is not (or no longer) in the store."""


class ExportError(StoreError):
    """A copy of the store could not be written."""
