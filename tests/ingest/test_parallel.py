"""Parallel catch-up (decode workers) must store exactly what a sequential ingest stores."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tensorboardX import SummaryWriter

from boardd.ingest.ingestor import Ingestor
from boardd.ingest.segment import decode_segment
from boardd.ingest.sources import LocalFile
from boardd.ingest.worker_pool import WorkerError, WorkerPool
from boardd.reader.decoded import DataClass, TagMetadata
from boardd.reader.tfrecord import CrcMode
from boardd.store.connection import open_reader
from boardd.store.session import WriteSession

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("logs")
    rng = np.random.default_rng(7)
    for r in range(4):
        with SummaryWriter(str(root / f"run{r}")) as w:
            for step in range(3000):
                w.add_scalar("loss", float(rng.normal()), step)
                w.add_scalar("acc", float(rng.random()), step)
                if step % 100 == 0:
                    w.add_histogram("h", rng.normal(size=200), step)
                    w.add_image("img", rng.integers(0, 255, (3, 8, 8), dtype=np.uint8), step)
    return root


def _dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    c = open_reader(db)
    try:
        return {
            "scalars": list(
                c.execute(
                    "SELECT r.name, s.tag, p.step, p.wall_time, p.value FROM scalar_points p "
                    "JOIN series s ON s.id = p.series_id JOIN runs r ON r.id = s.run_id "
                    "ORDER BY 1, 2, 3"
                )
            ),
            "tensors": list(
                c.execute(
                    "SELECT r.name, s.tag, p.step, p.content FROM tensor_points p "
                    "JOIN series s ON s.id = p.series_id JOIN runs r ON r.id = s.run_id "
                    "ORDER BY 1, 2, 3"
                )
            ),
            "series": list(
                c.execute(
                    "SELECT r.name, s.tag, s.plugin_name, s.seen, s.last_step FROM series s "
                    "JOIN runs r ON r.id = s.run_id ORDER BY 1, 2"
                )
            ),
            "files": list(c.execute("SELECT path, consumed FROM files ORDER BY path")),
        }
    finally:
        c.close()


def _ingest(
    logdir: Path,
    db: Path,
    workers: int,
    *,
    fork: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    with WriteSession(db, logdir, sampling={"scalars": 500}) as session:
        ingestor = Ingestor(
            session.writer,
            logdir,
            workers=workers,
            parallel_min_bytes=0,
            batch_bytes=64 * 1024,
            segment_bytes=100_000,
            fork=fork,
        )
        ingestor.run_pass(progress)
        ingestor.close()


def _children() -> list[int]:
    """This process's child processes (the decode workers of a pass in progress)."""
    pid = os.getpid()
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


@pytest.mark.parametrize(("workers", "fork"), [(2, True), (3, True), (2, False), (3, False)])
def test_parallel_equals_sequential(logdir: Path, tmp_path: Path, workers: int, fork: bool) -> None:
    seq_db, par_db = tmp_path / "seq" / "store.sqlite", tmp_path / "par" / "store.sqlite"
    _ingest(logdir, seq_db, workers=1)
    # In a fresh process: workers are forked only from a single-threaded one (boardd ingest).
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.ingest.parallel_child",
            str(logdir),
            str(par_db),
            str(workers),
            "1" if fork else "0",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout)
    assert report["single_thread"]
    # The workers really ran (one fewer than the decoders: this process decodes too), and
    # were started the way asked.
    assert report["workers"] == workers - 1
    assert report["forked"] == [fork]
    seq, par = _dump(seq_db), _dump(par_db)
    assert seq["scalars"] and seq["tensors"]
    for key in seq:
        assert seq[key] == par[key], key


def test_killed_worker_mid_pass_loses_nothing(logdir: Path, tmp_path: Path) -> None:
    # A worker dies (OOM killer, kill -9) in the middle of a pass: this process decodes the
    # rest itself, from exactly where the committed-or-queued batches stop.
    seq_db, par_db = tmp_path / "seq" / "store.sqlite", tmp_path / "par" / "store.sqlite"
    _ingest(logdir, seq_db, workers=1)
    killed: list[int] = []

    def progress(done: int, total: int) -> None:
        if not killed and done > total // 4:
            for pid in _children():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    _ingest(logdir, par_db, workers=3, progress=progress)
    assert killed
    seq, par = _dump(seq_db), _dump(par_db)
    for key in seq:
        assert seq[key] == par[key], key


@pytest.mark.parametrize("fork", [True, False])
def test_worker_pool_round_trip_and_death(logdir: Path, fork: bool) -> None:
    path = LocalFile(str(next((logdir / "run0").glob("*tfevents*"))))
    pool = WorkerPool(2, fork=fork)
    try:
        pool.submit(0, (path, 0, {}, CrcMode.ALWAYS, 2**30, 2**20), "first")
        tag, segment = pool.wait()
        assert tag == "first"
        local = decode_segment(path, 0, {}, CrcMode.ALWAYS, 2**30, 2**20)
        assert segment.end_offset == local.end_offset == os.path.getsize(path.path)
        assert segment.at_end
        assert sum(b.records for b in segment.batches) == sum(b.records for b in local.batches)
        os.kill(pool.pid(1), signal.SIGKILL)
        pool._procs[1].wait()
        with pytest.raises(WorkerError):
            pool.submit(1, (path, 0, {}, CrcMode.ALWAYS, 2**30, 2**20), "second")
            pool.wait()
    finally:
        pool.close()
        pool.close()


def test_closing_with_answers_not_taken_ends_every_thread(logdir: Path) -> None:
    # Answers left untaken, tasks still queued: closing ends the reader threads and the
    # workers at once, without taking the answers.
    path = LocalFile(str(next((logdir / "run0").glob("*tfevents*"))))
    pool = WorkerPool(1, fork=True, depth=4)
    for i in range(4):
        pool.submit(0, (path, 0, {}, CrcMode.ALWAYS, 2**30, 2**20), i)
    assert pool.wait()[0] == 0
    pool.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("boardd-worker")]


def test_big_tasks_never_wait_on_untaken_answers(logdir: Path) -> None:
    # A run with many tags sends a big task (its tags so far). While this process does not
    # take answers (it is committing), the workers must still read their tasks: a submit
    # that waited for a worker that waited for this process would never return.
    path = LocalFile(str(next((logdir / "run0").glob("*tfevents*"))))
    tags = {
        f"extra/tag_{i:05d}": TagMetadata("scalars", b"x" * 64, DataClass.SCALAR)
        for i in range(2000)
    }
    # Eight answers of this file overflow any pipe; each task overflows a pipe's 64 KiB.
    assert len(pickle.dumps(decode_segment(path, 0, {}, CrcMode.ALWAYS, 2**30, 2**20))) > 2**18
    assert len(pickle.dumps(tags)) > 2**16
    pool = WorkerPool(1, fork=True, depth=8)
    try:
        submitter = threading.Thread(
            target=lambda: [
                pool.submit(0, (path, 0, tags, CrcMode.ALWAYS, 2**30, 2**20), i) for i in range(8)
            ],
            daemon=True,
        )
        submitter.start()
        submitter.join(timeout=60)
        assert not submitter.is_alive(), "a submit waited on answers nobody took"
        assert [pool.wait()[0] for _ in range(8)] == list(range(8))
    finally:
        pool.close()


def test_many_small_files_are_decoded_by_a_worker_several_to_a_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 10,000 runs of one small file: per file, decoding costs about what committing does, so
    # a pass over many files uses a (spawned: the daemon has threads) worker however few bytes
    # it reads, and sends it many files per task. The store is what a sequential ingest makes.
    root = tmp_path / "logs"
    for r in range(40):
        with SummaryWriter(str(root / f"run{r:02d}")) as w:
            for step in range(20 + r):
                w.add_scalar("loss", float(step) / (r + 1), step)
    sent: list[object] = []
    submit = WorkerPool.submit

    def recording(self: WorkerPool, worker: int, task: object, tag: object) -> None:
        sent.append(task)
        submit(self, worker, task, tag)  # type: ignore[arg-type]

    monkeypatch.setattr(WorkerPool, "submit", recording)
    dbs = {}
    for name, workers in (("seq", 1), ("par", None)):
        dbs[name] = tmp_path / name / "store.sqlite"
        with WriteSession(dbs[name], root) as session:
            ingestor = Ingestor(session.writer, root, workers=workers, parallel_min_files=10)
            if workers is None:
                ingestor.many_files_workers = 2  # whatever this machine's CPUs
                ingestor.fork = False
            ingestor.run_pass()
            ingestor.close()
    assert sent and all(isinstance(t, list) for t in sent)
    assert max(len(t) for t in sent) > 1
    seq, par = _dump(dbs["seq"]), _dump(dbs["par"])
    assert seq["scalars"]
    for key in seq:
        assert seq[key] == par[key], key
