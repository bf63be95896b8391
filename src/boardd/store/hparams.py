"""The hparams plugin's summaries, decoded once at ingest into the ``hparams`` table, and the
reads the hparams API makes of the store.

TensorBoard's hparams summaries (``_hparams_/experiment``, ``_hparams_/session_start_info``,
``_hparams_/session_end_info``) carry their data in the summary metadata
(``HParamsPluginData``), and TensorBoard keeps the first metadata of each tag: so does the
``series`` table, and the writer decodes it into one ``hparams`` row per (run, kind) in the
same transaction. A row holds the message as JSON (proto3 field names; a session's hparams as
plain JSON values, those JSON cannot show, non-finite numbers and lists, apart under
``other``), so that no answer decodes a protocol buffer. Metric values need no table
of their own: ``series`` keeps each series' last step, wall time and value, updated by the
commit that writes its points.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any, NamedTuple

import apsw

from boardd.store.names import escape, unescape

PLUGIN_NAME = "hparams"
#: TensorBoard's tags of the hparams summaries, and the kind each one's row is filed under.
TAG_KINDS = {
    "_hparams_/experiment": "experiment",
    "_hparams_/session_start_info": "session_start",
    "_hparams_/session_end_info": "session_end",
}


def decode(content: bytes) -> tuple[str, str] | None:
    """(kind, JSON text) of an hparams summary's metadata content; None if it is not one
    (a content that does not parse, or another message than the tag's)."""
    # Imported here: only a writer meeting hparams summaries needs protocol buffers.
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError

    from boardd.proto import hparams_plugin_data_pb2

    try:
        data = hparams_plugin_data_pb2.HParamsPluginData.FromString(content)
    except DecodeError:
        return None
    which = data.WhichOneof("data")
    if which == "experiment":
        body = json_format.MessageToDict(data.experiment, always_print_fields_with_no_presence=True)
        return "experiment", json.dumps(body, allow_nan=False)
    if which == "session_start_info":
        start = data.session_start_info
        shown: dict[str, Any] = {}
        other: dict[str, Any] = {}
        for name, value in start.hparams.items():
            kind = value.WhichOneof("kind")
            if kind == "number_value" and math.isfinite(value.number_value):
                shown[name] = value.number_value
            elif kind in ("string_value", "bool_value"):
                shown[name] = getattr(value, kind)
            elif kind == "number_value":
                other[name] = repr(value.number_value)  # "nan", "inf", "-inf"
            else:
                other[name] = None  # null, list, struct: neither typed nor shown
        info: dict[str, Any] = {
            "hparams": shown,
            "other": other,
            "modelUri": start.model_uri,
            "monitorUrl": start.monitor_url,
            "groupName": start.group_name,
            "startTimeSecs": start.start_time_secs,
        }
        return "session_start", json.dumps(info, allow_nan=False)
    if which == "session_end_info":
        end = data.session_end_info
        return "session_end", json.dumps(
            {"status": int(end.status), "endTimeSecs": end.end_time_secs}
        )
    return None


def record(
    connection: apsw.Connection, run_id: int, tag: str, content: bytes, generation: int
) -> None:
    """Files the decoded summary of a newly defined hparams series (a tag's first metadata
    wins, as in ``series``: an existing row stays)."""
    kind = TAG_KINDS.get(tag)
    if kind is None:
        return
    decoded = decode(content)
    if decoded is None or decoded[0] != kind:
        return
    connection.execute(
        "INSERT INTO hparams (run_id, kind, data, generation) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (run_id, kind) DO NOTHING",
        (run_id, kind, decoded[1], generation),
    )


def purge_run(connection: apsw.Connection, run_id: int) -> None:
    """Forgets a run's hparams rows (the run is deleted, or read again from the start)."""
    connection.execute("DELETE FROM hparams WHERE run_id = ?", (run_id,))


def backfill(connection: apsw.Connection) -> None:
    """Fills the table from the series a store already has (the migration that adds it)."""
    rows = connection.execute(
        "SELECT run_id, tag, plugin_content, generation FROM series WHERE plugin_name = ?",
        (PLUGIN_NAME,),
    ).fetchall()
    for run_id, tag, content, generation in rows:
        assert isinstance(content, bytes)
        record(connection, int(str(run_id)), str(tag), content, int(str(generation)))


# -- reads ----------------------------------------------------------------------------------


class RunChange(NamedTuple):
    """A run created, undeleted, deleted or restarted since a generation."""

    id: int
    name: str
    deleted: bool


class HParamsRow(NamedTuple):
    run_id: int
    kind: str
    data: str


class SeriesRow(NamedTuple):
    """What the hparams API reads of a series: where it is, and its last point."""

    id: int
    run_id: int
    tag: str
    #: A scalar series of the scalars plugin (a metric candidate).
    scalar: bool
    last_step: int | None
    last_wall_time: float | None
    last_value: float | None


def has_rows(connection: apsw.Connection) -> bool:
    """Whether the store holds any hparams summary."""
    return connection.execute("SELECT 1 FROM hparams LIMIT 1").fetchone() is not None


def changed_runs(connection: apsw.Connection, experiment_id: int, since: int) -> list[RunChange]:
    """Runs whose row changed after generation ``since`` (all of them for ``since`` < 0)."""
    return [
        RunChange(int(i), unescape(str(n)), bool(d))
        for i, n, d in connection.execute(
            "SELECT id, name, deleted FROM runs WHERE experiment_id = ? AND generation > ?",
            (experiment_id, since),
        )
    ]


def hparams_rows(
    connection: apsw.Connection, experiment_id: int, since: int, runs: tuple[int, ...] = ()
) -> Iterator[HParamsRow]:
    """hparams rows filed after generation ``since``, and every row of ``runs``."""
    for run_id, kind, data in connection.execute(
        # CROSS JOIN: the generation's index first (what changed), not every run's rows.
        "SELECT h.run_id, h.kind, h.data FROM hparams h CROSS JOIN runs r ON r.id = h.run_id "
        "WHERE r.experiment_id = ? AND r.deleted = 0 AND h.generation > ?",
        (experiment_id, since),
    ):
        yield HParamsRow(int(run_id), str(kind), str(data))
    for run in runs:
        for kind, data in connection.execute(
            "SELECT kind, data FROM hparams WHERE run_id = ?", (run,)
        ):
            yield HParamsRow(run, str(kind), str(data))


_SERIES_COLUMNS = (
    "s.id, s.run_id, s.tag, s.data_class = 1 AND s.plugin_name = 'scalars', s.last_step, "
    "s.last_wall_time, s.last_value"
)


def series_rows(
    connection: apsw.Connection, experiment_id: int, since: int, runs: tuple[int, ...] = ()
) -> Iterator[SeriesRow]:
    """Series written after generation ``since`` (by the index on ``series.generation``), and
    every series of ``runs``."""
    for row in connection.execute(
        f"SELECT {_SERIES_COLUMNS} FROM series s CROSS JOIN runs r ON r.id = s.run_id "
        "WHERE s.generation > ? AND r.experiment_id = ? AND r.deleted = 0",
        (since, experiment_id),
    ):
        yield _series_row(row)
    for run in runs:
        for row in connection.execute(
            f"SELECT {_SERIES_COLUMNS} FROM series s WHERE s.run_id = ?", (run,)
        ):
            yield _series_row(row)


def _series_row(row: tuple[Any, ...]) -> SeriesRow:
    sid, run_id, tag, scalar, step, wall, value = row
    return SeriesRow(
        int(sid),
        int(run_id),
        str(tag),
        bool(scalar),
        None if step is None else int(step),
        None if wall is None else float(wall),
        None if value is None else float(value),
    )


def scalar_points(
    connection: apsw.Connection, experiment_id: int, run: str, tag: str
) -> list[tuple[float, int, float | None]]:
    """(wall time, step, value) of every kept point of a scalar series of the scalars plugin
    (empty if there is none); a NULL value is a NaN."""
    from boardd.store import scalar_reads

    series_id = connection.execute(
        "SELECT s.id FROM series s JOIN runs r ON r.id = s.run_id "
        "WHERE r.experiment_id = ? AND r.name = ? AND r.deleted = 0 AND s.tag = ? "
        "AND s.plugin_name = 'scalars' AND s.data_class = 1",
        (experiment_id, escape(run), tag),
    ).get
    if series_id is None:
        return []
    return [
        (float(w), int(s), None if v is None else float(v))
        for s, w, v in scalar_reads.iter_rows(connection, int(series_id))
    ]
