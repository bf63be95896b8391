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


@dataclass(frozen=True, slots=True)
class ExperimentRow:
    """One experiment of a store."""

    id: int
    name: str
    logdir: str
    creation_time: float


@dataclass(frozen=True, slots=True)
class RunRow:
    """One live run."""

    name: str
    start_time: float | None


def experiments(connection: apsw.Connection) -> list[ExperimentRow]:
    """Every experiment in the store."""
    return [
        ExperimentRow(int(i), str(n), str(d), float(t))
        for i, n, d, t in connection.execute(
            "SELECT id, name, logdir, creation_time FROM experiments ORDER BY id"
        )
    ]


def runs(connection: apsw.Connection, experiment_id: int) -> list[RunRow]:
    """The live runs of an experiment, by name."""
    return [
        RunRow(str(name), None if start is None else float(start))
        for name, start in connection.execute(
            "SELECT name, start_time FROM runs WHERE experiment_id = ? AND deleted = 0 "
            "ORDER BY name",
            (experiment_id,),
        )
    ]


def data_loss_count(connection: apsw.Connection) -> int:
    """How many data-loss records the store holds."""
    value = connection.execute("SELECT count(*) FROM data_loss").get
    return int(value) if value is not None else 0


def scalar_points(
    connection: apsw.Connection,
    experiment_id: int,
    run: str,
    tag: str,
    *,
    latest: int | None = None,
) -> list[tuple[int, float, float]] | None:
    """(step, wall_time, value) of one scalar series by step (the last ``latest`` only, if
    given); None if the series does not exist. NaN comes back for NULL values."""
    series = connection.execute(
        "SELECT s.id FROM series s JOIN runs r ON r.id = s.run_id "
        "WHERE r.experiment_id = ? AND r.name = ? AND r.deleted = 0 AND s.tag = ? "
        "AND s.data_class = 1",
        (experiment_id, run, tag),
    ).get
    if series is None:
        return None
    if latest is None:
        rows = connection.execute(
            "SELECT step, wall_time, value FROM scalar_points WHERE series_id = ? ORDER BY step",
            (series,),
        )
        return [(s, w, _nan_if_none(v)) for s, w, v in rows]
    rows = connection.execute(
        "SELECT step, wall_time, value FROM scalar_points WHERE series_id = ? "
        "ORDER BY step DESC LIMIT ?",
        (series, latest),
    )
    return [(s, w, _nan_if_none(v)) for s, w, v in rows][::-1]


def _nan_if_none(value: float | None) -> float:
    return float("nan") if value is None else float(value)
