"""The store's errors: each message says what happened and what to do next."""

from __future__ import annotations


class StoreError(Exception):
    """Base class of the store's errors."""


class StoreOpenError(StoreError):
    """The store file cannot be opened, or is not a boardd store this version can use."""


class LeaseHeldError(StoreError):
    """Another live process holds the store's writer lease."""


class FingerprintMismatchError(StoreError):
    """The store was built with other settings (sampling, decoding rules, logdir)."""


class BlobNotFoundError(StoreError):
    """A blob id that is not (or no longer) in the store."""


class ExportError(StoreError):
    """A copy of the store could not be written."""
