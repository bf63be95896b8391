"""What a store holds at the top: its experiment, runs, plugins and data-loss records."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import apsw

from boardd.data.errors import Unavailable
from boardd.data.kinds import data_class_label
from boardd.store import hparams as hparams_store
from boardd.store import queries
from boardd.store.names import unescape
from boardd.store.queries import ExperimentRow, RunRow

__all__ = ["DataLossRecord", "ExperimentRow", "RunRow"]


def experiment(connection: apsw.Connection) -> ExperimentRow | None:
    """The store's experiment (a store holds one), or None before the first ingest made it."""
    rows = queries.experiments(connection)
    return rows[0] if rows else None


def experiment_id(connection: apsw.Connection, name: str) -> int:
    """The row id of the store's experiment; :class:`Unavailable` while there is none yet
    (``name`` is the server's name for it, for the message)."""
    row = experiment(connection)
    if row is None:
        raise Unavailable(f"experiment {name!r} has no data yet")
    return row.id


def runs(connection: apsw.Connection, experiment_id: int) -> list[RunRow]:
    """The live runs, as TensorBoard orders them: by start time (none last), then name."""
    return queries.runs(connection, experiment_id)


def plugins(connection: apsw.Connection, experiment_id: int) -> dict[str, list[str]]:
    """Plugin → the data classes (labels) of its series, for live runs."""
    return {
        plugin: [data_class_label(dc) for dc in classes]
        for plugin, classes in queries.plugins(connection, experiment_id).items()
    }


def data_loss_count(connection: apsw.Connection) -> int:
    """How many data-loss records the store holds."""
    return queries.data_loss_count(connection)


@dataclass(frozen=True, slots=True)
class DataLossRecord:
    """A byte range of an event file that could not be read: where, how long, why, when."""

    run: str
    file: str
    offset: int
    length: int
    reason: str
    time: float


def data_loss(
    connection: apsw.Connection, experiment_id: int, runs: tuple[str, ...] = ()
) -> list[DataLossRecord]:
    """The data-loss records of the experiment (only these runs, if given), in file then
    offset order; ``file`` is relative to the logdir (as run names are) when it lies under it."""
    row = experiment(connection)
    logdir = Path(row.logdir) if row is not None else None
    return [
        DataLossRecord(r.run, _relative(r.path, logdir), r.offset, r.length, r.reason, r.time)
        for r in queries.data_loss(connection, experiment_id, runs)
    ]


def _relative(path: str, logdir: Path | None) -> str:
    if logdir is None:
        return path
    try:
        return Path(path).relative_to(logdir).as_posix()
    except ValueError:
        return path


def generation(connection: apsw.Connection) -> int:
    """The generation of the store's last commit (answers built from it are keyed by it)."""
    return queries.generation(connection)


def store_id(connection: apsw.Connection) -> str:
    """The store file's identity (made when it was created; a rebuilt store has another)."""
    return queries.store_id(connection)


def event_files(connection: apsw.Connection, experiment_id: int) -> list[queries.EventFileRow]:
    """Every event file of the experiment's live runs (path, size, bytes read, state)."""
    return queries.event_files(connection, experiment_id)


@dataclass(slots=True)
class RunSummary:
    """What the lineage store records of a run: when it started, its last step and wall time,
    and its hparams session's start and end (decoded JSON, as store/hparams.py files them)."""

    name: str
    start_time: float | None = None
    last_step: int | None = None
    last_wall_time: float | None = None
    session_start: dict[str, object] | None = None
    session_end: dict[str, object] | None = None


def run_summaries(connection: apsw.Connection, experiment_id: int) -> dict[str, RunSummary]:
    """Every live run of the experiment, by name, from one read snapshot."""
    out: dict[str, RunSummary] = {}
    by_id: dict[int, RunSummary] = {}
    with connection:  # one snapshot for the three reads
        for change in hparams_store.changed_runs(connection, experiment_id, -1):
            if not change.deleted:
                by_id[change.id] = out[change.name] = RunSummary(change.name)
        for row in queries.runs(connection, experiment_id):
            found = out.get(unescape(row.name))
            if found is not None:
                found.start_time = row.start_time
        for hrow in hparams_store.hparams_rows(connection, experiment_id, -1):
            summary = by_id.get(hrow.run_id)
            if summary is not None and hrow.kind in ("session_start", "session_end"):
                setattr(summary, hrow.kind, json.loads(hrow.data))
        for srow in hparams_store.series_rows(connection, experiment_id, -1):
            summary = by_id.get(srow.run_id)
            if summary is None:
                continue
            if srow.last_step is not None:
                summary.last_step = max(summary.last_step or srow.last_step, srow.last_step)
            if srow.last_wall_time is not None:
                summary.last_wall_time = max(
                    summary.last_wall_time or srow.last_wall_time, srow.last_wall_time
                )
    return out
