"""The single writer: applies decoded batches to the store, sampled, in crash-safe transactions.

Points, blobs, data-loss records and the new read offsets of the files they came from are
written in the same transaction, so a crash at any instant loses no point and duplicates none:
after a restart each file is read again from the offset committed with its last points.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, NamedTuple

import apsw

from boardd.reader.decoded import (
    BlobSequencePoint,
    DataClass,
    DecodedBatch,
    RunEvent,
    RunEventKind,
    ScalarColumns,
    TagMetadata,
    TensorPoint,
)
from boardd.store import hparams
from boardd.store.blobs import delete_blobs, put_blobs
from boardd.store.connection import immediate
from boardd.store.lease import Lease
from boardd.store.names import escape, unescape
from boardd.store.sampling import capacity_for

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from boardd.store.reservoir import ReservoirState

# numpy and the reservoir (which needs numpy) are imported by the first write, not with this
# module: `boardd serve` opens its store as the writer before its first answer, and neither the
# opening nor that answer needs them (boardd.data.accel).

#: How many series' sampling states the writer keeps in memory at most...
MAX_CACHED_SERIES = 1024
#: ... and how many kept steps they hold together (8 bytes each), beyond which the states of
#: series not written by the last two commits are forgotten: a catch-up that keeps 10,000
#: points in each of thousands of series does not hold all their samples at once, while a
#: daemon writing many series at every commit never reads one back from the store. Reading
#: one back costs one indexed query.
MAX_CACHED_STEPS = 2**19


log = logging.getLogger(__name__)

#: Event files whose data loss this process has logged: once per file, then the API has them.
_LOSS_LOGGED: set[str] = set()


@dataclass(slots=True)
class _Series:
    id: int
    data_class: DataClass
    state: ReservoirState
    first_step: int | None
    max_length: int
    #: The generation of the last commit that wrote this series (see _trim_series_cache).
    written: int = 0
    #: A scalar series that keeps every point (in blocks and its tail, store/scalar_blocks.py):
    #: its state holds no steps; these say what the writer needs of them.
    keeps_all: bool = False
    kept: int = 0
    last_kept: int | None = None


class FileRecord(NamedTuple):
    """What the store knows of one event file: where reading resumes, and its identity."""

    id: int
    run_id: int
    path: str
    device: int | None
    inode: int | None
    size: int
    consumed: int
    state: str
    head: bytes | None = None
    #: The file's last bytes before ``consumed`` as they were read (None: not known).
    tail: bytes | None = None
    #: An object's version (ETag) as last read (None: a local file, or not known).
    version: str | None = None


class FileProgress(NamedTuple):
    """A file's state after a batch, committed with that batch's points."""

    file_id: int
    consumed: int
    size: int
    mtime: float | None
    device: int | None
    inode: int | None
    state: str = "active"
    last_error: str | None = None
    head: bytes | None = None
    #: The file's last bytes before ``consumed`` (None: not known, nothing is checked).
    tail: bytes | None = None
    #: An object's version (ETag) as read (None: a local file, or not known).
    version: str | None = None


@dataclass(slots=True)
class WriteCounts:
    """Points, blobs and data-loss rows written since the writer opened (after sampling)."""

    scalar: int = 0
    tensor: int = 0
    blob_sequence: int = 0
    blobs: int = 0
    data_loss: int = 0
    records: int = 0
    bytes_read: int = 0
    #: Sampling states read from the store (a series first written, or written again after
    #: its state was forgotten).
    states_read: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class StoreWriter:
    """Writes one store. Not thread-safe: one thread (the ingest loop) owns it.

    ``sampling`` maps plugin names to capacities (``None`` keeps all), as parsed from
    ``--samples-per-plugin``; the defaults of :mod:`boardd.store.sampling` fill the rest.
    """

    def __init__(
        self,
        connection: apsw.Connection,
        lease: Lease,
        *,
        sampling: Mapping[str, int | None] | None = None,
        seed_key: str = "",
    ) -> None:
        self._db = connection
        self._lease = lease
        self._sampling = dict(sampling or {})
        self._seed_key = seed_key
        # Sampling states of recently written series (each holds its kept steps), bounded so
        # memory stays flat however many runs a logdir has; an evicted one is reloaded from
        # the store (one indexed query) when its series is written again.
        self._series: OrderedDict[tuple[int, str], _Series] = OrderedDict()
        self._run_seeds: dict[int, int] = {}
        self._run_started: dict[int, bool] = {}
        self._in_transaction = False
        self.generation = stored_generation(connection)
        self.counts = WriteCounts()
        self._listeners: list[Callable[[int], None]] = []
        # Data loss recorded by the open transaction, by file id: (ranges, first reason).
        self._new_loss: dict[int, tuple[int, str]] = {}
        self._pending_generation = self.generation
        self._trimmed = -1  # the generation whose commit last trimmed the series cache

    # -- transactions ---------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One commit: renews the lease inside it, bumps the generation after it.

        On failure nothing of the transaction stays, in the file or in this object's caches.
        """
        if self._in_transaction:
            raise RuntimeError("StoreWriter.transaction() does not nest")
        self._in_transaction = True
        try:
            with immediate(self._db):
                self._lease.renew()
                self._pending_generation = stored_generation(self._db) + 1
                yield
                self._db.execute(
                    "UPDATE meta SET value = ? WHERE key = 'generation'",
                    (self._pending_generation,),
                )
        except BaseException:
            # The sampling states cached here may describe rows that were rolled back.
            self._series.clear()
            self._run_started.clear()
            self._new_loss.clear()
            raise
        finally:
            self._in_transaction = False
        self.generation = self._pending_generation
        for listener in self._listeners:
            listener(self.generation)
        self._log_new_loss()

    def _log_new_loss(self) -> None:
        """Says data loss in the log the first time a file has some (after the commit that
        recorded it; GET /api/v1/data_loss lists every record)."""
        losses, self._new_loss = self._new_loss, {}
        for file_id, (count, reason) in losses.items():
            path = self._db.execute("SELECT path FROM files WHERE id = ?", (file_id,)).get
            if path is None or path in _LOSS_LOGGED:
                continue
            _LOSS_LOGGED.add(path)
            log.warning(
                "data loss in %s: %d unreadable range(s), first: %s (the rest of the file is "
                "read; GET /api/v1/data_loss lists them)",
                path,
                count,
                reason,
            )

    def renew_lease(self) -> None:
        """Renews the lease in a transaction of its own (a writer with nothing to commit)."""
        if self._in_transaction:
            raise RuntimeError("renew_lease() runs outside transaction()")
        with immediate(self._db):
            self._lease.renew()

    def on_commit(self, listener: Callable[[int], None]) -> None:
        """Calls ``listener(generation)`` after every commit (from the writer's thread)."""
        self._listeners.append(listener)

    # -- experiments, runs, files -----------------------------------------------------------

    def ensure_experiment(self, name: str, logdir: str) -> int:
        """The id of the store's experiment (created as ``name`` if the store has none).

        A store holds one logdir (it is part of the fingerprint), hence one experiment: a
        store built by ``boardd ingest`` is the same experiment under ``boardd serve``,
        whatever name either gave it.
        """
        row = self._db.execute("SELECT id FROM experiments ORDER BY id LIMIT 1").get
        if row is not None:
            return int(row)
        self._db.execute(
            "INSERT INTO experiments (name, logdir, creation_time) VALUES (?, ?, ?)",
            (name, escape(logdir), time.time()),
        )
        return int(self._db.last_insert_rowid())

    def ensure_run(self, experiment_id: int, name: str) -> int:
        """The id of run ``name`` (created if new; undeleted if it had been marked deleted).

        Names (of runs, files, the logdir) are given and returned as the file system has them;
        the store keeps them escaped when they are not valid UTF-8 (:mod:`boardd.store.names`).
        """
        name = escape(name)
        row = self._db.execute(
            "SELECT id, deleted FROM runs WHERE experiment_id = ? AND name = ?",
            (experiment_id, name),
        ).fetchone()
        if row is not None:
            run_id, deleted = int(row[0]), int(row[1])
            if deleted:
                self._db.execute(
                    "UPDATE runs SET deleted = 0, generation = ? WHERE id = ?",
                    (self._pending_generation, run_id),
                )
            return run_id
        self._db.execute(
            "INSERT INTO runs (experiment_id, name, generation) VALUES (?, ?, ?)",
            (experiment_id, name, self._pending_generation),
        )
        return int(self._db.last_insert_rowid())

    def runs(self, experiment_id: int) -> dict[str, int]:
        """Live (not deleted) runs of an experiment: name → id."""
        return {
            unescape(str(name)): int(run_id)
            for run_id, name in self._db.execute(
                "SELECT id, name FROM runs WHERE experiment_id = ? AND deleted = 0",
                (experiment_id,),
            )
        }

    def run_id(self, experiment_id: int, name: str) -> int | None:
        """The id of live run ``name``, or None (one indexed lookup, whatever the run count)."""
        value = self._db.execute(
            "SELECT id FROM runs WHERE experiment_id = ? AND name = ? AND deleted = 0",
            (experiment_id, escape(name)),
        ).get
        return None if value is None else int(value)

    def delete_run(self, run_id: int) -> None:
        """Removes a run whose directory is gone: its points, blobs and files rows are purged."""
        self._purge_run_data(run_id)
        self._db.execute("DELETE FROM files WHERE run_id = ?", (run_id,))
        self._db.execute(
            "UPDATE runs SET deleted = 1, start_time = NULL, generation = ? WHERE id = ?",
            (self._pending_generation, run_id),
        )

    def restart_run(self, run_id: int, reason: str) -> None:
        """A file of the run was replaced: the run is read again from its files as they are
        now, as a fresh ingest would (its points, series with their sampling states, blobs,
        events and data-loss records go; every file is read again from offset 0)."""
        self._purge_run_data(run_id)
        self._db.execute(
            "DELETE FROM data_loss WHERE file_id IN (SELECT id FROM files WHERE run_id = ?)",
            (run_id,),
        )
        self._db.execute(
            "UPDATE files SET consumed = 0, size = 0, mtime = NULL, device = NULL, "
            "inode = NULL, head = NULL, tail = NULL, version = NULL, last_error = ?, "
            "state = CASE state WHEN 'deleted' THEN 'deleted' ELSE 'active' END "
            "WHERE run_id = ?",
            (escape(reason), run_id),
        )
        self._db.execute(
            "UPDATE runs SET start_time = NULL, generation = ? WHERE id = ?",
            (self._pending_generation, run_id),
        )

    def _purge_run_data(self, run_id: int) -> None:
        """Deletes a run's points, blobs, series and events, and forgets their states."""
        blob_ids = [
            int(b)
            for (b,) in self._db.execute(
                "SELECT e.blob_id FROM blob_entries e JOIN series s ON s.id = e.series_id "
                "WHERE s.run_id = ?",
                (run_id,),
            )
        ]
        series_ids = [
            (int(s),)
            for (s,) in self._db.execute("SELECT id FROM series WHERE run_id = ?", (run_id,))
        ]
        for table in ("scalar_points", "scalar_blocks", "tensor_points", "blob_entries"):
            self._db.executemany(f"DELETE FROM {table} WHERE series_id = ?", series_ids)
        delete_blobs(self._db, blob_ids)
        self._db.execute("DELETE FROM series WHERE run_id = ?", (run_id,))
        self._db.execute("DELETE FROM run_events WHERE run_id = ?", (run_id,))
        hparams.purge_run(self._db, run_id)
        for key in [k for k in self._series if k[0] == run_id]:
            del self._series[key]
        self._run_started.pop(run_id, None)

    def run_tags(self, run_id: int) -> dict[str, TagMetadata]:
        """The established metadata of every tag of a run (to resume decoding after a restart)."""
        return {
            str(tag): TagMetadata(
                str(plugin), bytes(content), DataClass(int(dc)), str(display), str(desc)
            )
            for tag, plugin, content, dc, display, desc in self._db.execute(
                "SELECT tag, plugin_name, plugin_content, data_class, display_name, description "
                "FROM series WHERE run_id = ?",
                (run_id,),
            )
        }

    def files(self, run_id: int) -> dict[str, FileRecord]:
        """The files known for a run, by path."""
        rows = self._db.execute(
            "SELECT id, run_id, path, device, inode, size, consumed, state, head, tail, version "
            "FROM files "
            "WHERE run_id = ?",
            (run_id,),
        )
        return {record.path: record for record in map(_file_record, rows)}

    def experiment_files(self, experiment_id: int) -> dict[int, dict[str, FileRecord]]:
        """The files known for every live run of an experiment, by run id then path: what a
        pass over the whole logdir compares with, in one query."""
        by_run: dict[int, dict[str, FileRecord]] = {}
        rows = self._db.execute(
            "SELECT f.id, f.run_id, f.path, f.device, f.inode, f.size, f.consumed, f.state, "
            "f.head, f.tail, f.version FROM files f JOIN runs r ON r.id = f.run_id "
            "WHERE r.experiment_id = ? AND r.deleted = 0",
            (experiment_id,),
        )
        for record in map(_file_record, rows):
            by_run.setdefault(record.run_id, {})[record.path] = record
        return by_run

    def ensure_file(self, run_id: int, path: str) -> FileRecord:
        """The record of an event file (created with offset 0 if new)."""
        path = escape(path)
        self._db.execute(
            "INSERT INTO files (run_id, path) VALUES (?, ?) ON CONFLICT (path) DO NOTHING",
            (run_id, path),
        )
        row = self._db.execute(
            "SELECT id, run_id, path, device, inode, size, consumed, state, head, tail, version "
            "FROM files "
            "WHERE path = ?",
            (path,),
        ).fetchone()
        assert row is not None
        return _file_record(row)

    def set_file_state(self, file_id: int, state: str, error: str | None = None) -> None:
        """Marks a file (e.g. ``deleted``, ``replaced``, ``unreadable``) with its last error."""
        self._db.execute(
            "UPDATE files SET state = ?, last_error = ? WHERE id = ?",
            (state, None if error is None else escape(error), file_id),
        )

    def restart_file(self, file_id: int, reason: str) -> None:
        """A file was replaced (new inode, or it shrank): read it again from offset 0.

        Points already stored stay; the re-read overwrites equal steps through preemption.
        The file's data-loss records go: the re-read records again those that still apply.
        """
        self._db.execute(
            "UPDATE files SET consumed = 0, size = 0, version = NULL, state = 'active', "
            "last_error = ? WHERE id = ?",
            (escape(reason), file_id),
        )
        self._db.execute("DELETE FROM data_loss WHERE file_id = ?", (file_id,))

    # -- points -----------------------------------------------------------------------------

    def apply(self, run_id: int, batch: DecodedBatch, progress: FileProgress) -> None:
        """Writes one decoded batch of one file and the file's new offset (in a transaction)."""
        if not self._in_transaction:
            raise RuntimeError("StoreWriter.apply() must run inside transaction()")
        for tag, metadata in batch.new_tags.items():
            self._define_series(run_id, tag, metadata)
        self._mark_start(run_id, batch)
        for tag, columns in batch.scalars.items():
            self._write_scalars(self._get_series(run_id, tag), columns)
        for tag, tensors in batch.tensors.items():
            self._write_tensors(self._get_series(run_id, tag), tensors)
        for tag, blobs in batch.blob_sequences.items():
            self._write_blob_sequences(self._get_series(run_id, tag), blobs)
        self._write_run_events(run_id, batch.run_events)
        now = time.time()
        self._db.executemany(
            "INSERT INTO data_loss (file_id, offset, length, reason, time) VALUES (?, ?, ?, ?, ?)",
            [
                (progress.file_id, d.offset, d.length, escape(d.reason), now)
                for d in batch.data_loss
            ],
        )
        self._db.execute(
            "UPDATE files SET consumed = ?, size = ?, mtime = ?, device = ?, inode = ?, "
            "state = ?, last_error = ?, head = coalesce(?, head), tail = ?, version = ? "
            "WHERE id = ?",
            (
                progress.consumed,
                progress.size,
                progress.mtime,
                progress.device,
                progress.inode,
                progress.state,
                None if progress.last_error is None else escape(progress.last_error),
                progress.head,
                progress.tail,
                progress.version,
                progress.file_id,
            ),
        )
        self.counts.data_loss += len(batch.data_loss)
        if batch.data_loss:
            count, reason = self._new_loss.get(progress.file_id, (0, batch.data_loss[0].reason))
            self._new_loss[progress.file_id] = (count + len(batch.data_loss), reason)
        self.counts.records += batch.records

    def _define_series(self, run_id: int, tag: str, metadata: TagMetadata) -> None:
        capacity = capacity_for(metadata.plugin_name, metadata.data_class, self._sampling)
        self._db.execute(
            "INSERT INTO series (run_id, tag, plugin_name, plugin_content, data_class, "
            "display_name, description, capacity, rewritten) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (run_id, tag) DO NOTHING",
            (
                run_id,
                tag,
                metadata.plugin_name,
                metadata.plugin_content,
                int(metadata.data_class),
                metadata.display_name,
                metadata.description,
                capacity,
                # A series id can be used again once its run was purged: readers holding the
                # old series must not take the new one for its continuation.
                self._pending_generation,
            ),
        )
        if metadata.plugin_name == hparams.PLUGIN_NAME:
            hparams.record(self._db, run_id, tag, metadata.plugin_content, self._pending_generation)

    def _get_series(self, run_id: int, tag: str) -> _Series:
        key = (run_id, tag)
        series = self._series.get(key)
        if series is not None:
            self._series.move_to_end(key)
            series.written = self._pending_generation
            return series
        row = self._db.execute(
            "SELECT id, data_class, plugin_name, seen, threshold, first_step, max_length, kept "
            "FROM series WHERE run_id = ? AND tag = ?",
            (run_id, tag),
        ).fetchone()
        if row is None:
            raise KeyError(f"series {tag!r} of run {run_id} was never defined")
        self.counts.states_read += 1
        series_id, data_class, plugin, seen, threshold, first_step, max_length, kept_count = row
        dc = DataClass(int(data_class))
        # The capacity follows the current sampling settings (the fingerprint guards changes).
        capacity = capacity_for(str(plugin), dc, self._sampling)
        table = _POINT_TABLE[dc]
        import numpy as np

        from boardd.store.reservoir import ReservoirState

        keeps_all = dc is DataClass.SCALAR and capacity is None
        if keeps_all:
            kept = np.empty(0, dtype=np.int64)  # the steps stay in the store
        else:
            if dc is DataClass.SCALAR:
                from boardd.store import scalar_blocks

                # A series sampled now that kept every point before (a store rebuilt smaller
                # is a new file, so only by a foreign store): its rows, one a point.
                scalar_blocks.unseal_from(self._db, int(series_id), -(1 << 63))
            kept = np.fromiter(
                (
                    s
                    for (s,) in self._db.execute(
                        f"SELECT DISTINCT step FROM {table} WHERE series_id = ? ORDER BY step",
                        (series_id,),
                    )
                ),
                dtype=np.int64,
            )
        state = ReservoirState(
            capacity, self._seed(run_id), int(seen), kept, None if threshold is None else threshold
        )
        series = _Series(
            int(series_id), dc, state, first_step, int(max_length), self._pending_generation
        )
        if keeps_all:
            series.keeps_all = True
            series.kept = int(kept_count)
            series.last_kept = _last_scalar_step(self._db, int(series_id))
        self._series[key] = series
        self._trim_series_cache()
        return series

    def _trim_series_cache(self) -> None:
        """Forgets the least recently written series beyond the bounds; a forgotten series is
        read back from the store when it is written again."""
        while len(self._series) > MAX_CACHED_SERIES:
            self._series.popitem(last=False)
        if self._trimmed == self._pending_generation:
            return  # counting the steps held costs a pass over the cache: once per commit
        self._trimmed = self._pending_generation
        steps = sum(s.state.held_steps() for s in self._series.values())
        recent = self._pending_generation - 1
        for key, oldest in list(self._series.items()):
            if steps <= MAX_CACHED_STEPS or oldest.written >= recent:
                break
            del self._series[key]
            steps -= oldest.state.held_steps()

    def _seed(self, run_id: int) -> int:
        seed = self._run_seeds.get(run_id)
        if seed is None:
            name = self._db.execute("SELECT name FROM runs WHERE id = ?", (run_id,)).get
            from boardd.store.reservoir import run_seed

            seed = self._run_seeds[run_id] = run_seed(self._seed_key, str(name))
        return seed

    def _mark_start(self, run_id: int, batch: DecodedBatch) -> None:
        if self._run_started.get(run_id):
            return
        # TensorBoard's start time of a run is the wall time of the first event of its first
        # file: the file_version record every writer puts first (written when the file was
        # created, whatever wall times the summaries after it claim). The earliest such record
        # wins; a run whose files have none takes its earliest event, once, and a later
        # batch (after a restart, the middle of a file) never lowers what a file_version set.
        versions = [e.wall_time for e in batch.run_events if e.kind is RunEventKind.FILE_VERSION]
        if versions:
            first = min(versions)
            self._db.execute(
                "UPDATE runs SET start_time = min(coalesce(start_time, ?), ?) WHERE id = ?",
                (first, first, run_id),
            )
        else:
            times = [e.wall_time for e in batch.run_events]
            times += [float(c.wall_times.min()) for c in batch.scalars.values() if len(c)]
            times += [p[0].wall_time for p in batch.tensors.values() if p]
            times += [p[0].wall_time for p in batch.blob_sequences.values() if p]
            if not times:
                return
            self._db.execute(
                "UPDATE runs SET start_time = ? WHERE id = ? AND start_time IS NULL",
                (min(times), run_id),
            )
        self._run_started[run_id] = True

    def _update_series(
        self, series: _Series, last_step: int, last_wall_time: float, last_value: float | None
    ) -> None:
        if series.keeps_all:
            count = series.kept
            series.state.seen = count  # keeping every point, as many seen as kept
        else:
            kept = series.state.kept_steps
            series.first_step = int(kept[0]) if kept.shape[0] else None
            count = int(kept.shape[0])
        self._db.execute(
            "UPDATE series SET seen = ?, threshold = ?, first_step = ?, last_step = ?, "
            "last_wall_time = ?, last_value = ?, max_length = ?, generation = ?, kept = ? "
            "WHERE id = ?",
            (
                series.state.seen,
                series.state.threshold,
                series.first_step,
                last_step,
                last_wall_time,
                last_value,
                series.max_length,
                self._pending_generation,
                count,
                series.id,
            ),
        )

    def _write_scalars(self, series: _Series, columns: ScalarColumns) -> None:
        if series.data_class is not DataClass.SCALAR or not len(columns):
            return
        if series.keeps_all:
            self._write_every_scalar(series, columns)
            return
        from boardd.store.reservoir import offer

        kept_before = series.state.kept_steps
        last_before = int(kept_before[-1]) if kept_before.shape[0] else None
        result = offer(series.state, columns.steps)
        self._delete_steps("scalar_points", series.id, result.evicted_steps)
        keep = result.keep
        steps = columns.steps[keep].tolist()
        if steps and last_before is not None and steps[0] <= last_before:
            self._rewritten(series.id)  # a point replaced in place
        if steps:
            self._db.executemany(
                "INSERT OR REPLACE INTO scalar_points (series_id, step, wall_time, value) "
                "VALUES (?, ?, ?, ?)",
                zip(
                    repeat(series.id),
                    steps,
                    columns.wall_times[keep].tolist(),
                    _nan_to_none(columns.values[keep]),
                    strict=False,
                ),
            )
        self.counts.scalar += len(steps)
        last_value = float(columns.values[-1])
        self._update_series(
            series,
            int(columns.steps[-1]),
            float(columns.wall_times[-1]),
            None if last_value != last_value else last_value,
        )

    def _write_every_scalar(self, series: _Series, columns: ScalarColumns) -> None:
        """Stores every point of a batch of a series that keeps them all. A point preempts
        every point at its step or later (a job restarted from a checkpoint rewrites them), as
        the reservoir does: of the batch, a point stays if no later one is at its step or
        before; of the stored points, those below the batch's lowest step."""
        import numpy as np

        from boardd.store import scalar_blocks

        steps = columns.steps
        following = np.minimum.accumulate(steps[::-1])[::-1]
        keep = np.ones(steps.shape[0], dtype=np.bool_)
        np.less(steps[:-1], following[1:], out=keep[:-1])
        lowest = int(following[0])
        if series.last_kept is not None and lowest <= series.last_kept:
            series.kept -= scalar_blocks.drop_from(self._db, series.id, lowest)
            series.last_kept = _last_scalar_step(self._db, series.id)
            self._rewritten(series.id)
        kept_steps = steps[keep]
        scalar_blocks.seal_rows(
            self._db, series.id, kept_steps, columns.wall_times[keep], columns.values[keep]
        )
        added = int(kept_steps.shape[0])
        self.counts.scalar += added
        if series.kept == 0:
            series.first_step = int(kept_steps[0])
        series.kept += added
        series.last_kept = int(kept_steps[-1])
        last_value = float(columns.values[-1])
        self._update_series(
            series,
            int(steps[-1]),
            float(columns.wall_times[-1]),
            None if last_value != last_value else last_value,
        )

    def _write_tensors(self, series: _Series, points: Sequence[TensorPoint]) -> None:
        if series.data_class not in (DataClass.TENSOR, DataClass.UNKNOWN) or not points:
            return
        import numpy as np

        from boardd.store.reservoir import offer

        steps = np.fromiter((p.step for p in points), dtype=np.int64, count=len(points))
        result = offer(series.state, steps)
        self._delete_steps("tensor_points", series.id, result.evicted_steps)
        kept = [p for p, k in zip(points, result.keep.tolist(), strict=True) if k]
        self._db.executemany(
            "INSERT OR REPLACE INTO tensor_points (series_id, step, wall_time, dtype, shape, "
            "content) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (series.id, p.step, p.wall_time, p.dtype, _shape_text(p.shape), p.content)
                for p in kept
            ],
        )
        self.counts.tensor += len(kept)
        self._update_series(series, points[-1].step, points[-1].wall_time, None)

    def _write_blob_sequences(self, series: _Series, points: Sequence[BlobSequencePoint]) -> None:
        if series.data_class is not DataClass.BLOB_SEQUENCE or not points:
            return
        import numpy as np

        from boardd.store.reservoir import offer

        steps = np.fromiter((p.step for p in points), dtype=np.int64, count=len(points))
        result = offer(series.state, steps)
        kept = [p for p, k in zip(points, result.keep.tolist(), strict=True) if k]
        # A kept step may replace a row of the same step (a rewrite after a restart): its old
        # blobs go too, since the new sequence may be shorter.
        gone = _sorted_distinct(
            np.concatenate((result.evicted_steps, np.array([p.step for p in kept], np.int64)))
        )
        self._delete_blob_steps(series.id, gone)
        blob_ids = put_blobs(self._db, [b for p in kept for b in p.blobs])
        rows = []
        next_id = iter(blob_ids)
        for p in kept:
            for index in range(len(p.blobs)):
                rows.append((series.id, p.step, index, p.wall_time, next(next_id)))
            series.max_length = max(series.max_length, len(p.blobs))
        self._db.executemany(
            "INSERT INTO blob_entries (series_id, step, idx, wall_time, blob_id) "
            "VALUES (?, ?, ?, ?, ?)",
            rows,
        )
        self.counts.blob_sequence += len(kept)
        self.counts.blobs += len(blob_ids)
        self._update_series(series, points[-1].step, points[-1].wall_time, None)

    def _delete_steps(self, table: str, series_id: int, steps: npt.NDArray[np.int64]) -> None:
        if steps.shape[0]:
            if table == "scalar_points":
                from boardd.store import scalar_blocks

                scalar_blocks.unseal_from(self._db, series_id, int(steps[0]))
            self._db.executemany(
                f"DELETE FROM {table} WHERE series_id = ? AND step = ?",
                zip(repeat(series_id), steps.tolist(), strict=False),
            )
            self._rewritten(series_id)

    def _rewritten(self, series_id: int) -> None:
        """The series changed in this commit other than by points appended after its last one
        (see ``series.rewritten``)."""
        self._db.execute(
            "UPDATE series SET rewritten = ? WHERE id = ?", (self._pending_generation, series_id)
        )

    def _delete_blob_steps(self, series_id: int, steps: npt.NDArray[np.int64]) -> None:
        if not steps.shape[0]:
            return
        blob_ids: list[int] = []
        for step in steps.tolist():
            blob_ids.extend(
                int(b)
                for (b,) in self._db.execute(
                    "SELECT blob_id FROM blob_entries WHERE series_id = ? AND step = ?",
                    (series_id, step),
                )
            )
        self._delete_steps("blob_entries", series_id, steps)
        delete_blobs(self._db, blob_ids)

    def _write_run_events(self, run_id: int, events: Sequence[RunEvent]) -> None:
        if events:
            self._db.executemany(
                "INSERT INTO run_events (run_id, kind, step, wall_time, detail) "
                "VALUES (?, ?, ?, ?, ?)",
                [(run_id, e.kind.value, e.step, e.wall_time, e.detail) for e in events],
            )


def _file_record(row: Sequence[object]) -> FileRecord:
    """A row of ``files`` (id, run_id, path, device, inode, size, consumed, state, head, tail,
    version), its path as the file system has it."""
    file_id, run_id, path, *rest = row
    return FileRecord(file_id, run_id, unescape(str(path)), *rest)  # type: ignore[arg-type]


def _last_scalar_step(db: apsw.Connection, series_id: int) -> int | None:
    """The last step a scalar series holds, in its tail or its blocks (None: no point)."""
    value = db.execute(
        "SELECT max(step) FROM (SELECT max(step) AS step FROM scalar_points WHERE series_id = ?1 "
        "UNION ALL SELECT max(last_step) FROM scalar_blocks WHERE series_id = ?1)",
        (series_id,),
    ).get
    return None if value is None else int(value)


def stored_generation(connection: apsw.Connection) -> int:
    """The generation of the store's last commit (0 for a new store)."""
    value = connection.execute("SELECT value FROM meta WHERE key = 'generation'").get
    return int(value) if value is not None else 0


_POINT_TABLE = {
    DataClass.SCALAR: "scalar_points",
    DataClass.TENSOR: "tensor_points",
    DataClass.BLOB_SEQUENCE: "blob_entries",
    DataClass.UNKNOWN: "tensor_points",
}


def _sorted_distinct(steps: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``np.unique`` of a 1-D array, without it importing numpy.ma (costly once per process)."""
    import numpy as np

    ordered = np.sort(steps)
    if ordered.shape[0] < 2:
        return ordered
    first = np.empty(ordered.shape[0], dtype=np.bool_)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    distinct: npt.NDArray[np.int64] = ordered[first]
    return distinct


def _shape_text(shape: tuple[int, ...]) -> str:
    return ",".join(str(d) for d in shape)


def _nan_to_none(values: npt.NDArray[np.float64]) -> list[float | None]:
    # SQLite stores NaN as NULL anyway (https://www.sqlite.org/floatingpoint.html); be explicit.
    import numpy as np

    listed: list[float | None] = list(values.tolist())
    if np.isnan(values).any():
        listed = [None if v != v else v for v in listed]
    return listed
