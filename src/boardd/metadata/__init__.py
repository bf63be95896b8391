"""boardd's lineage store: ML Metadata's data model and Python API (``ml_metadata``'s names).

An MLMD script runs on boardd once its imports read::

    import boardd.metadata as mlmd
    from boardd.metadata import metadata_store
    from boardd.metadata.proto import metadata_store_pb2
    from boardd.metadata import errors

The store is one SQLite file (``lineage.sqlite`` by default) with its own schema
(boardd.metadata.schema), or an in-memory one (``fake_database``).
"""

from boardd.metadata import errors, metadata_store, proto
from boardd.metadata.metadata_store import (
    ListOptions,
    MetadataStore,
    OrderByField,
    downgrade_schema,
)

__all__ = [
    "ListOptions",
    "MetadataStore",
    "OrderByField",
    "downgrade_schema",
    "errors",
    "metadata_store",
    "proto",
]
