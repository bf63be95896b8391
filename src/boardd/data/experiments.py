"""What a store holds at the top: its experiment, runs, plugins and data-loss records."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import apsw

from boardd.data.errors import Unavailable
from boardd.data.kinds import data_class_label
from boardd.store import queries
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
