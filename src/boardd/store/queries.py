"""Read queries over a store (summaries now; the HTTP API's reads build on this module)."""

from __future__ import annotations

from dataclasses import dataclass

import apsw


@dataclass(frozen=True, slots=True)
class StoreSummary:
    """Counts of what a store holds (points after sampling)."""

    runs: int
    series: int
    scalar_points: int
    tensor_points: int
    blob_sequence_points: int
    blobs: int
    data_loss: int


def summary(connection: apsw.Connection) -> StoreSummary:
    """Counts runs (not deleted), series, kept points by class, blobs and data-loss records."""

    def count(sql: str) -> int:
        value = connection.execute(sql).get
        return int(value) if value is not None else 0

    return StoreSummary(
        runs=count("SELECT count(*) FROM runs WHERE deleted = 0"),
        series=count("SELECT count(*) FROM series"),
        scalar_points=count("SELECT count(*) FROM scalar_points"),
        tensor_points=count("SELECT count(*) FROM tensor_points"),
        blob_sequence_points=count(
            "SELECT count(*) FROM (SELECT DISTINCT series_id, step FROM blob_entries)"
        ),
        blobs=count("SELECT count(*) FROM blobs"),
        data_loss=count("SELECT count(*) FROM data_loss"),
    )
