"""Read queries over a store: summaries, and every statement the data layer (boardd.data) runs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import apsw

from boardd.reader.decoded import DataClass
from boardd.store import scalar_reads
from boardd.store.names import unescape

_NAN = float("nan")


class StoreSummary(NamedTuple):
    """Counts of what a store holds (points after sampling)."""

    runs: int
    series: int
    scalar_points: int
    tensor_points: int
    blob_sequence_points: int
    blobs: int
    data_loss: int


def summary(connection: apsw.Connection) -> StoreSummary:
    """Counts runs (not deleted), series, kept points by class, blobs and data-loss records.

    Points are the series' ``kept`` counts (kept up to date by the writer): the cost grows with
    the number of series, not of points.
    """

    def count(sql: str) -> int:
        value = connection.execute(sql).get
        return int(value) if value is not None else 0

    kept = {
        int(data_class): int(total)
        for data_class, total in connection.execute(
            "SELECT data_class, sum(kept) FROM series GROUP BY data_class"
        )
    }
    return StoreSummary(
        runs=count("SELECT count(*) FROM runs WHERE deleted = 0"),
        series=count("SELECT count(*) FROM series"),
        scalar_points=kept.get(DataClass.SCALAR, 0),
        tensor_points=kept.get(DataClass.TENSOR, 0) + kept.get(DataClass.UNKNOWN, 0),
        blob_sequence_points=kept.get(DataClass.BLOB_SEQUENCE, 0),
        blobs=count("SELECT count(*) FROM blobs"),
        data_loss=count("SELECT count(*) FROM data_loss"),
    )


class ExperimentRow(NamedTuple):
    """One experiment of a store."""

    id: int
    name: str
    logdir: str
    creation_time: float


class RunRow(NamedTuple):
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
    """The live runs of an experiment, as TensorBoard orders them (its /data/runs): by start
    time (the first event's wall time), runs without one last, ties by name."""
    return [
        RunRow(str(name), None if start is None else float(start))
        for name, start in connection.execute(
            "SELECT name, start_time FROM runs WHERE experiment_id = ? AND deleted = 0 "
            "ORDER BY start_time IS NULL, start_time, name",
            (experiment_id,),
        )
    ]


def data_loss_count(connection: apsw.Connection) -> int:
    """How many data-loss records the store holds."""
    value = connection.execute("SELECT count(*) FROM data_loss").get
    return int(value) if value is not None else 0


class DataLossRow(NamedTuple):
    """One data-loss record with the run and the path of its file."""

    run: str
    path: str
    offset: int
    length: int
    reason: str
    time: float


def data_loss(
    connection: apsw.Connection, experiment_id: int, runs: Sequence[str] = ()
) -> list[DataLossRow]:
    """The data-loss records of an experiment's files (only these runs', if given), ordered by
    file path then offset."""
    sql = (
        "SELECT r.name, f.path, d.offset, d.length, d.reason, d.time FROM data_loss d "
        "JOIN files f ON f.id = d.file_id JOIN runs r ON r.id = f.run_id "
        "WHERE r.experiment_id = ?"
    )
    args: list[object] = [experiment_id]
    if runs:
        sql += f" AND r.name IN ({','.join('?' * len(runs))})"
        args.extend(runs)
    return [
        DataLossRow(str(run), str(path), int(offset), int(length), str(reason), float(when))
        for run, path, offset, length, reason, when in connection.execute(
            sql + " ORDER BY f.path, d.offset, d.id", args
        )
    ]


class SeriesInfo(NamedTuple):
    """The metadata of one series, as the data API's "list" calls return it."""

    id: int
    run: str
    tag: str
    plugin_name: str
    plugin_content: bytes
    data_class: int
    display_name: str
    description: str
    last_step: int | None
    last_wall_time: float | None
    max_length: int
    capacity: int | None
    generation: int
    #: Points a read answers at most, when fewer than the store keeps (``--samples-per-plugin``
    #: asked less): the ones a store of that capacity would hold (the bottom-k of the stored
    #: sample, :func:`boardd.store.sampling.kept_indices`). None: every point stored.
    sample: int | None = None


def list_series(
    connection: apsw.Connection,
    experiment_id: int,
    data_classes: Sequence[int],
    plugin: str,
    runs: Sequence[str] = (),
    tags: Sequence[str] = (),
) -> list[SeriesInfo]:
    """Series of live runs with this plugin and data class, optionally only these runs/tags,
    ordered by run then tag."""
    sql = [
        "SELECT s.id, r.name, s.tag, s.plugin_name, s.plugin_content, s.data_class, "
        "s.display_name, s.description, s.last_step, s.last_wall_time, s.max_length, "
        "s.capacity, s.generation FROM series s JOIN runs r ON r.id = s.run_id "
        "WHERE r.experiment_id = ? AND r.deleted = 0 AND s.plugin_name = ? "
        f"AND s.data_class IN ({','.join('?' * len(data_classes))})"
    ]
    args: list[object] = [experiment_id, plugin, *data_classes]
    if runs:
        sql.append(f"AND r.name IN ({','.join('?' * len(runs))})")
        args.extend(runs)
    if tags:
        sql.append(f"AND s.tag IN ({','.join('?' * len(tags))})")
        args.extend(tags)
    sql.append("ORDER BY r.name, s.tag")
    return [
        SeriesInfo(
            int(row[0]),
            str(row[1]),
            str(row[2]),
            str(row[3]),
            bytes(row[4]),
            int(row[5]),
            str(row[6]),
            str(row[7]),
            row[8],
            row[9],
            int(row[10]),
            row[11],
            int(row[12]),
        )
        for row in connection.execute(" ".join(sql), args)
    ]


def scalar_series_by_tag(connection: apsw.Connection) -> list[tuple[int, int, int]]:
    """(id, generation, points kept) of every scalar series of live runs, by tag then run (the
    order a dashboard shows them in)."""
    return [
        (int(row[0]), int(row[1]), int(row[2] or 0))
        for row in connection.execute(
            "SELECT s.id, s.generation, s.kept FROM series s JOIN runs r ON r.id = s.run_id "
            "WHERE r.deleted = 0 AND s.data_class = ? ORDER BY s.tag, r.name",
            (int(DataClass.SCALAR),),
        )
    ]


def plugins(connection: apsw.Connection, experiment_id: int) -> dict[str, list[int]]:
    """Plugin name → the data classes its series have, for live runs."""
    out: dict[str, list[int]] = {}
    for plugin, data_class in connection.execute(
        "SELECT DISTINCT s.plugin_name, s.data_class FROM series s JOIN runs r "
        "ON r.id = s.run_id WHERE r.experiment_id = ? AND r.deleted = 0 ORDER BY 1, 2",
        (experiment_id,),
    ):
        out.setdefault(str(plugin), []).append(int(data_class))
    return out


def point_count(
    connection: apsw.Connection,
    data_class: int,
    series_id: int,
    *,
    step_min: int | None = None,
    step_max: int | None = None,
) -> int:
    """How many points (steps) a series of this data class keeps (within the step range, if
    given)."""
    if DataClass(data_class) is DataClass.SCALAR:
        return scalar_reads.count(connection, series_id, step_min=step_min, step_max=step_max)
    table = _POINT_TABLES[DataClass(data_class)]
    where, args = _step_filter(step_min, step_max)
    sql = f"SELECT count(DISTINCT step) FROM {table} WHERE series_id = ? {where}"
    value = connection.execute(sql, (series_id, *args)).get
    return int(value) if value is not None else 0


#: The table holding the points of each data class the data API serves.
_POINT_TABLES = {
    DataClass.SCALAR: "scalar_points",
    DataClass.TENSOR: "tensor_points",
    DataClass.BLOB_SEQUENCE: "blob_entries",
}


def _step_filter(step_min: int | None, step_max: int | None) -> tuple[str, list[int]]:
    clauses, args = [], []
    if step_min is not None:
        clauses.append("AND step >= ?")
        args.append(step_min)
    if step_max is not None:
        clauses.append("AND step <= ?")
        args.append(step_max)
    return " ".join(clauses), args


class SeriesMarks(NamedTuple):
    """What says how a series changed: the last commit that changed it other than by
    appending (created it, evicted or replaced points), and how many points it keeps."""

    rewritten: int
    kept: int


def series_marks(connection: apsw.Connection, series_id: int) -> SeriesMarks | None:
    """The series' :class:`SeriesMarks`, None if it is gone."""
    row = connection.execute(
        "SELECT rewritten, kept FROM series WHERE id = ?", (series_id,)
    ).fetchone()
    return None if row is None else SeriesMarks(int(row[0]), int(row[1]))


def iter_scalar_rows(
    connection: apsw.Connection,
    series_id: int,
    *,
    step_min: int | None = None,
    step_max: int | None = None,
) -> Iterator[tuple[int, float, float | None]]:
    """(step, wall time, value or None for NaN) of a scalar series within the step range, by
    step: one snapshot, however slowly it is read (:func:`boardd.store.scalar_reads.iter_rows`)."""
    return scalar_reads.iter_rows(connection, series_id, step_min=step_min, step_max=step_max)


def scalar_columns(
    connection: apsw.Connection,
    series_id: int,
    *,
    step_min: int | None = None,
    step_max: int | None = None,
    latest: int | None = None,
) -> tuple[memoryview, memoryview, memoryview]:
    """(steps, wall times, values) of a scalar series by step, as read-only memoryviews of
    int64 and float64 (their users need no numpy: :mod:`boardd.data.accel`); NULL values come
    back NaN."""
    steps, walls, values = scalar_reads.columns(
        connection, series_id, step_min=step_min, step_max=step_max, latest=latest
    )
    return (
        memoryview(steps).cast("B").cast("q").toreadonly(),
        memoryview(walls).cast("B").cast("d").toreadonly(),  # type: ignore[return-value]
        memoryview(values).cast("B").cast("d").toreadonly(),
    )


class StoredTensor(NamedTuple):
    """One stored tensor point."""

    step: int
    wall_time: float
    dtype: int
    shape: tuple[int, ...]
    content: bytes


def tensor_rows(
    connection: apsw.Connection,
    series_id: int,
    *,
    step_min: int | None = None,
    step_max: int | None = None,
    latest: int | None = None,
) -> list[StoredTensor]:
    """The tensor points of a series by step."""
    where, args = _step_filter(step_min, step_max)
    order = "ORDER BY step DESC LIMIT ?" if latest is not None else "ORDER BY step"
    params = [series_id, *args] + ([latest] if latest is not None else [])
    rows = [
        StoredTensor(
            int(step),
            float(wall),
            int(dtype),
            tuple(int(d) for d in str(shape).split(",") if d != ""),
            bytes(content),
        )
        for step, wall, dtype, shape, content in connection.execute(
            "SELECT step, wall_time, dtype, shape, content FROM tensor_points "
            f"WHERE series_id = ? {where} {order}",
            params,
        )
    ]
    if latest is not None:
        rows.reverse()
    return rows


class StoredBlobStep(NamedTuple):
    """The blobs of one step of a blob sequence: (index, blob id) pairs in index order."""

    step: int
    wall_time: float
    blobs: tuple[tuple[int, int], ...]


def blob_sequence_rows(
    connection: apsw.Connection,
    series_id: int,
    *,
    step_min: int | None = None,
    step_max: int | None = None,
    latest: int | None = None,
    index_min: int | None = None,
    index_max: int | None = None,
) -> list[StoredBlobStep]:
    """The steps of a blob sequence with their blobs (optionally an index range only)."""
    where, args = _step_filter(step_min, step_max)
    steps_sql = f"SELECT DISTINCT step FROM blob_entries WHERE series_id = ? {where}"
    params: list[object] = [series_id, *args]
    if latest is not None:
        steps_sql += " ORDER BY step DESC LIMIT ?"
        params.append(latest)
    index_sql = ""
    if index_min is not None:
        index_sql += " AND idx >= ?"
    if index_max is not None:
        index_sql += " AND idx <= ?"
    rows: list[Any] = connection.execute(
        "SELECT step, wall_time, idx, blob_id FROM blob_entries WHERE series_id = ? "
        f"AND step IN ({steps_sql}){index_sql} ORDER BY step, idx",
        [series_id, *params, *(v for v in (index_min, index_max) if v is not None)],
    ).fetchall()
    out: list[StoredBlobStep] = []
    current: list[tuple[int, int]] = []
    for i, (step, wall, idx, blob_id) in enumerate(rows):
        current.append((int(idx), int(blob_id)))
        if i + 1 == len(rows) or rows[i + 1][0] != step:
            out.append(StoredBlobStep(int(step), float(wall), tuple(current)))
            current = []
    return out


def generation(connection: apsw.Connection) -> int:
    """The generation of the store's last commit (bumped by every commit of the writer)."""
    value = connection.execute("SELECT value FROM meta WHERE key = 'generation'").get
    return int(value) if value is not None else 0


def store_id(connection: apsw.Connection) -> str:
    """This store file's identity (random, made when the store was created)."""
    value = connection.execute("SELECT value FROM meta WHERE key = 'store_id'").get
    return str(value) if value is not None else ""


class RunChange(NamedTuple):
    """A run created (or undeleted) or deleted by the commit of ``generation``."""

    run: str
    deleted: bool
    generation: int


class SeriesChange(NamedTuple):
    """A series' state after the last commit that changed it (of ``generation``)."""

    run: str
    tag: str
    plugin_name: str
    data_class: int
    last_step: int
    last_wall_time: float
    last_value: float | None
    generation: int


class Changes(NamedTuple):
    """What changed in one experiment after a generation, as of the snapshot ``generation``."""

    generation: int
    runs: list[RunChange]
    series: list[SeriesChange]


def changes_since(connection: apsw.Connection, experiment: str, since: int) -> Changes:
    """Runs and series of ``experiment`` changed by commits after generation ``since``, and the
    store's generation, all from one read snapshot. Each series comes once, in its state now
    (a NULL ``last_value`` is a NaN scalar). An unknown experiment name falls back to the
    store's first experiment, as the data API does."""
    connection.execute("BEGIN")
    try:
        now = generation(connection)
        exp_id = connection.execute(
            "SELECT id FROM experiments ORDER BY name != ?, id LIMIT 1", (experiment,)
        ).get
        if exp_id is None or since >= now:
            return Changes(now, [], [])
        runs = [
            RunChange(str(name), bool(deleted), int(gen))
            for name, deleted, gen in connection.execute(
                "SELECT name, deleted, generation FROM runs "
                "WHERE experiment_id = ? AND generation > ? ORDER BY generation, name",
                (exp_id, since),
            )
        ]
        # CROSS JOIN keeps series as the outer loop, on its generation index: the cost follows
        # what changed, not how many series the store holds.
        series = [
            SeriesChange(
                str(run), str(tag), str(plugin), int(dc), int(step), float(wall), value, int(gen)
            )
            for run, tag, plugin, dc, step, wall, value, gen in connection.execute(
                "SELECT r.name, s.tag, s.plugin_name, s.data_class, s.last_step, "
                "s.last_wall_time, s.last_value, s.generation FROM series s "
                "CROSS JOIN runs r ON r.id = s.run_id WHERE s.generation > ? "
                "AND r.experiment_id = ? AND r.deleted = 0 AND s.last_step IS NOT NULL "
                "ORDER BY s.generation, r.name, s.tag",
                (since, exp_id),
            )
        ]
        return Changes(now, runs, series)
    finally:
        connection.execute("COMMIT")


class EventFileRow(NamedTuple):
    """One event file of a live run, as the writer last saw it (for the lineage store)."""

    run: str
    path: str
    size: int
    #: Bytes read and committed so far.
    consumed: int
    state: str


def event_files(connection: apsw.Connection, experiment_id: int) -> list[EventFileRow]:
    """Every event file of the experiment's live runs, by path."""
    return [
        EventFileRow(unescape(str(run)), unescape(str(path)), int(size), int(consumed), str(state))
        for run, path, size, consumed, state in connection.execute(
            "SELECT r.name, f.path, f.size, f.consumed, f.state FROM files f "
            "JOIN runs r ON r.id = f.run_id WHERE r.experiment_id = ? AND r.deleted = 0 "
            "ORDER BY f.path",
            (experiment_id,),
        )
    ]
