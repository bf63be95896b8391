"""Ingest: discovery → file life cycle → reading → batching → commit, from a source of bytes.

The layer between the pure reader (:mod:`boardd.reader`) and the store (:mod:`boardd.store`):
:func:`ingest_logdir` for one whole pass, :class:`Ingestor` for a daemon that follows a logdir,
:class:`ByteSource` for where the bytes come from. Names load on first use: a command that only
wants :mod:`boardd.ingest.progress` does not import the store and numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from boardd.ingest.ingestor import Ingestor
    from boardd.ingest.oneshot import IngestResult, ingest_logdir
    from boardd.ingest.pass_result import PassResult
    from boardd.ingest.sources import ByteSource, FileIdentity, LocalFileSource, SourceFile

_EXPORTS = {
    "ByteSource": "boardd.ingest.sources",
    "FileIdentity": "boardd.ingest.sources",
    "IngestResult": "boardd.ingest.oneshot",
    "Ingestor": "boardd.ingest.ingestor",
    "LocalFileSource": "boardd.ingest.sources",
    "PassResult": "boardd.ingest.pass_result",
    "SourceFile": "boardd.ingest.sources",
    "ingest_logdir": "boardd.ingest.oneshot",
}

__all__ = [
    "ByteSource",
    "FileIdentity",
    "IngestResult",
    "Ingestor",
    "LocalFileSource",
    "PassResult",
    "SourceFile",
    "ingest_logdir",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'boardd.ingest' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
