"""Shared helpers of the store's end-to-end tests: event files written live, ingest, snapshots."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from tensorboard.compat.proto import event_pb2 as tb_event_pb2
from tensorboard.compat.proto import summary_pb2 as tb_summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.summary.writer.record_writer import RecordWriter
from tensorboardX import summary as x_summary

from boardd.store.blobs import read_blob
from boardd.store.connection import open_reader

WALL = 1_700_000_000.0

#: The environment of a ``python -m boardd`` subprocess: this checkout's sources first.
SRC = str(Path(__file__).resolve().parents[2] / "src")


class LiveWriter:
    """An event file that keeps growing: tensorboardX's summary builders, TensorBoard's writer.

    TensorBoard's ``EventFileWriter.flush()`` waits until every queued event is on disk, which
    tensorboardX's ``SummaryWriter.flush()`` does not (its queue drains in a thread), so a
    test can ingest right after ``flush()`` and know exactly what the file holds.
    """

    def __init__(self, directory: Path, suffix: str = "") -> None:
        self._writer = EventFileWriter(
            str(directory), max_queue_size=1000, flush_secs=3600, filename_suffix=suffix
        )

    @property
    def path(self) -> Path:
        """The event file being written."""
        return Path(self._writer._file_name)

    def add(self, summary: Any, step: int, wall_time: float | None = None) -> None:
        """Writes one tensorboardX Summary proto as an event at ``step``."""
        converted = tb_summary_pb2.Summary.FromString(summary.SerializeToString())
        wall = WALL + step if wall_time is None else wall_time
        self._writer.add_event(tb_event_pb2.Event(step=step, wall_time=wall, summary=converted))

    def scalar(self, tag: str, value: float, step: int) -> None:
        """Writes a legacy scalar (simple_value)."""
        self.add(x_summary.scalar(tag, value), step)

    def histogram(self, tag: str, values: npt.NDArray[np.float64], step: int) -> None:
        """Writes a legacy histogram."""
        self.add(x_summary.histogram(tag, values, 30), step)

    def image(self, tag: str, pixels: npt.NDArray[np.uint8], step: int) -> None:
        """Writes a legacy PNG image from CHW uint8 pixels."""
        self.add(x_summary.image(tag, pixels, dataformats="CHW"), step)

    def text(self, tag: str, text: str, step: int) -> None:
        """Writes a text summary (a string tensor)."""
        self.add(x_summary.text(tag, text), step)

    def flush(self) -> None:
        """Returns once every event added so far is in the file."""
        self._writer.flush()

    def close(self) -> None:
        """Flushes and closes the file."""
        self._writer.close()


def write_mixed(writer: LiveWriter, steps: range, *, seed: int = 0) -> None:
    """Scalars at every step, histograms, images and text at some: one of each data class."""
    rng = np.random.default_rng(seed + steps.start)
    for step in steps:
        writer.scalar("loss", float(rng.normal()), step)
        writer.scalar("lr", 0.1 / (1 + step), step)
        if step % 7 == 0:
            writer.histogram("weights", rng.normal(size=50) * (1 + step), step)
        if step % 25 == 0:
            writer.image("sample", rng.integers(0, 256, (3, 5, 4), dtype=np.uint8), step)
            writer.text("notes", f"step **{step}**", step)


def snapshot(db: Path, logdir: Path | None = None) -> dict[str, Any]:
    """Everything a store holds that depends on the event files, keyed by names, not ids.

    File paths are made relative to ``logdir`` so that two logdirs with the same files compare
    equal. Ids, lease and timing columns (data_loss.time, experiments.creation_time) are left out.
    """
    connection = open_reader(db)
    try:

        def rows(sql: str) -> list[tuple[Any, ...]]:
            return [tuple(r) for r in connection.execute(sql)]

        def rel(path: str) -> str:
            return os.path.relpath(path, logdir) if logdir is not None else path

        blobs = sorted(
            (run, tag, step, idx, wall, read_blob(connection, blob_id))
            for run, tag, step, idx, wall, blob_id in rows(
                "SELECT r.name, s.tag, e.step, e.idx, e.wall_time, e.blob_id FROM blob_entries e "
                "JOIN series s ON s.id = e.series_id JOIN runs r ON r.id = s.run_id"
            )
        )
        return {
            "runs": sorted(rows("SELECT name, start_time, deleted FROM runs")),
            "series": sorted(
                rows(
                    "SELECT r.name, s.tag, s.plugin_name, s.plugin_content, s.data_class, "
                    "s.display_name, s.description, s.first_step, s.last_step, s.last_wall_time, "
                    "s.last_value, s.max_length, s.seen, s.threshold, s.capacity "
                    "FROM series s JOIN runs r ON r.id = s.run_id"
                )
            ),
            "scalar_points": sorted(
                rows(
                    "SELECT r.name, s.tag, p.step, p.wall_time, p.value FROM scalar_points p "
                    "JOIN series s ON s.id = p.series_id JOIN runs r ON r.id = s.run_id"
                ),
                key=repr,
            ),
            "tensor_points": sorted(
                rows(
                    "SELECT r.name, s.tag, p.step, p.wall_time, p.dtype, p.shape, p.content "
                    "FROM tensor_points p JOIN series s ON s.id = p.series_id "
                    "JOIN runs r ON r.id = s.run_id"
                )
            ),
            "blob_entries": blobs,
            "files": sorted(
                (rel(str(path)), size, consumed, state)
                for path, size, consumed, state in rows(
                    "SELECT path, size, consumed, state FROM files"
                )
            ),
            "data_loss": sorted(
                (rel(str(path)), offset, length, reason)
                for path, offset, length, reason in rows(
                    "SELECT f.path, d.offset, d.length, d.reason FROM data_loss d "
                    "JOIN files f ON f.id = d.file_id"
                )
            ),
            "run_events": sorted(
                rows(
                    "SELECT r.name, e.kind, e.step, e.wall_time, e.detail FROM run_events e "
                    "JOIN runs r ON r.id = e.run_id"
                )
            ),
            # Series whose count of kept points (what summaries use) is not what they hold.
            "miscounted": rows(
                "SELECT id, kept, actual FROM (SELECT s.id, s.kept, CASE s.data_class "
                "WHEN 1 THEN (SELECT count(*) FROM scalar_points p WHERE p.series_id = s.id) "
                "WHEN 3 THEN (SELECT count(DISTINCT step) FROM blob_entries b "
                "WHERE b.series_id = s.id) "
                "ELSE (SELECT count(*) FROM tensor_points t WHERE t.series_id = s.id) END "
                "AS actual FROM series s) WHERE kept != actual"
            ),
            # Blobs no entry refers to, and chunks of no blob: leaks.
            "orphans": rows(
                "SELECT (SELECT count(*) FROM blobs WHERE id NOT IN "
                "(SELECT blob_id FROM blob_entries)), "
                "(SELECT count(*) FROM blob_chunks WHERE blob_id NOT IN (SELECT id FROM blobs))"
            ),
        }
    finally:
        connection.close()


def assert_same_store(actual: Path, expected: Path, logdir: Path | None = None) -> None:
    """Asserts two stores hold the same content, table by table (for readable failures)."""
    got, want = snapshot(actual, logdir), snapshot(expected, logdir)
    assert got["orphans"] == [(0, 0)]
    assert got["miscounted"] == want["miscounted"] == []
    for table in want:
        assert got[table] == want[table], f"table {table} differs"


def record_ends(data: bytes) -> list[int]:
    """The end offsets of the TFRecords framed in ``data`` (which must be intact)."""
    ends = []
    pos = 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        pos += 12 + length + 4
        ends.append(pos)
    assert pos == len(data), "record_ends() expects whole records"
    return ends


def boardd_command(*args: str | Path) -> list[str]:
    """``python -m boardd ARGS`` with this interpreter."""
    return [sys.executable, "-m", "boardd", *(str(a) for a in args)]


def boardd_env(**extra: str) -> dict[str, str]:
    """The environment for a boardd subprocess: this checkout's sources importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def start_boardd(*args: str | Path, **popen: Any) -> subprocess.Popen[bytes]:
    """Starts ``boardd ARGS`` as a real subprocess (stdout and stderr piped)."""
    return subprocess.Popen(
        boardd_command(*args),
        env=boardd_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )


def wait_for_lease(db: Path, pid: int, timeout: float = 30.0) -> None:
    """Returns once process ``pid`` holds the store's lease (polling with a reader)."""
    from boardd.store.errors import StoreOpenError
    from boardd.store.lease import current_holder

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            connection = open_reader(db)
        except StoreOpenError:
            time.sleep(0.01)
            continue
        try:
            holder = current_holder(connection)
        finally:
            connection.close()
        if holder is not None and holder.pid == pid:
            return
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} did not take the lease of {db} within {timeout} s")


BIG_RUNS = 8
BIG_TAGS = 8
BIG_STEPS = 20_000


def _write_scalar_file(path: Path) -> None:
    # TensorBoard's own record writer, one legacy scalar per event as tensorboardX writes
    # them: the fastest real writer available (1.3 M events through SummaryWriter take ~40 s).
    with open(path, "wb") as f:
        records = RecordWriter(f)
        records.write(
            tb_event_pb2.Event(wall_time=WALL, file_version="brain.Event:2").SerializeToString()
        )
        rng = np.random.default_rng(3)
        values = rng.normal(size=(BIG_STEPS, BIG_TAGS)).tolist()
        tags = [f"metrics/tag{t}" for t in range(BIG_TAGS)]
        for step in range(BIG_STEPS):
            row = values[step]
            for t, tag in enumerate(tags):
                event = tb_event_pb2.Event(step=step, wall_time=WALL + step * 0.01)
                event.summary.value.add(tag=tag, simple_value=row[t])
                records.write(event.SerializeToString())


@pytest.fixture(scope="session")
def big_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 runs x 8 scalar tags x 20,000 steps, plus histograms and images in a second file.

    Every run holds copies of the same two files (generated once; the runs' different seeds
    still sample different steps). About 55 MB: ``boardd ingest`` takes a second or more.
    """
    root = tmp_path_factory.mktemp("big")
    template = root / "template"
    template.mkdir()
    scalars = template / "events.out.tfevents.1700000000.host.a"
    _write_scalar_file(scalars)
    media = LiveWriter(template, suffix=".b")
    rng = np.random.default_rng(4)
    for step in range(0, BIG_STEPS, 100):
        media.histogram("weights", rng.normal(size=200), step)
        if step % 1000 == 0:
            media.image("sample", rng.integers(0, 256, (3, 16, 16), dtype=np.uint8), step)
    media.close()
    logdir = root / "logs"
    for run in range(BIG_RUNS):
        directory = logdir / f"run{run}"
        directory.mkdir(parents=True)
        shutil.copyfile(scalars, directory / scalars.name)
        # Named after the scalar file so that it is read second.
        shutil.copyfile(media.path, directory / "events.out.tfevents.1700000001.host.b")
    shutil.rmtree(template)
    return logdir
