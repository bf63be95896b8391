"""A job restarted from a checkpoint: a second event file of the same run goes back to an
earlier step. TensorBoard's two loaders disagree here. Its Rust data server (what
``tensorboard --logdir`` uses by default) drops the orphaned tail of each series, its Python
loader (``--load_fast=false``) keeps both timelines. boardd answers as the Rust data server
(docs/tensorboard.md: "Where boardd answers differently"); both are compared here, on
TensorBoard's routes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from tensorboardX import SummaryWriter

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from tests.conftest import ThreadedServer, ingest
from tests.tensorboard.conftest import KEEP_ALL, Oracle, tensorboard

pytestmark = [
    pytest.mark.slow,
    pytest.mark.allow_leaks("module-scoped TensorBoard subprocesses and server"),
]

RUN = "job"
WALL = 1_700_000_000.0
#: The first attempt logs steps 0-9; the job dies and resumes from its step-5 checkpoint.
FIRST = range(10)
RESUMED = range(5, 8)


def write_attempt(logdir: Path, steps: range, offset: float) -> None:
    """One attempt of the job: its own event file in the run's directory."""
    rng = np.random.default_rng(int(offset))
    with SummaryWriter(str(logdir / RUN)) as w:
        for step in steps:
            wall = WALL + offset + step
            w.add_scalar("loss", offset + step, step, walltime=wall)
            w.add_histogram("weights", rng.normal(offset, 1, 100), step, walltime=wall)
            w.add_image("sample", rng.random((3, 4, 4)), step, walltime=wall)
        # Only the first attempt logs this tag: the resumed job never writes it again.
        if offset == 0:
            for step in steps:
                w.add_scalar("lr", 0.1 / (step + 1), step, walltime=WALL + step)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("restarted") / "logs"
    write_attempt(root, FIRST, 0.0)
    time.sleep(1.1)  # event file names carry the second they were made in
    write_attempt(root, RESUMED, 1000.0)
    assert len(list((root / RUN).glob("*tfevents*"))) == 2
    return root


@pytest.fixture(scope="module")
def ours(logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("store") / "store.sqlite"
    ingest(logdir, db, KEEP_ALL, experiment="logs")
    server = ThreadedServer(create_app([ExperimentSpec("logs", logdir, db)], sampling=KEEP_ALL))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def rustboard(logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Oracle]:
    log = tmp_path_factory.mktemp("rust") / "tensorboard.log"
    with tensorboard(logdir, KEEP_ALL, {RUN}, log, load_fast=True) as tb:
        yield tb


@pytest.fixture(scope="module")
def python_loader(logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Oracle]:
    log = tmp_path_factory.mktemp("python") / "tensorboard.log"
    with tensorboard(logdir, KEEP_ALL, {RUN}, log) as tb:
        yield tb


def scalars(base: str, tag: str) -> list[list[float]]:
    answer = httpx.get(f"{base}/data/plugin/scalars/scalars", params={"run": RUN, "tag": tag})
    assert answer.status_code == 200, answer.text
    rows: list[list[float]] = answer.json()
    return rows


def steps_of(base: str, route: str, tag: str) -> list[tuple[float, int]]:
    """(wall time, step) of each point a route answers (histograms, images)."""
    answer = httpx.get(f"{base}/data/plugin/{route}", params={"run": RUN, "tag": tag})
    assert answer.status_code == 200, answer.text
    points = answer.json()
    if route.startswith("histograms"):
        return [(p[0], p[1]) for p in points]
    return [(p["wall_time"], p["step"]) for p in points]


def test_the_orphaned_tail_is_dropped_as_tensorboards_rust_data_server_drops_it(
    ours: str, rustboard: Oracle
) -> None:
    expected = [[WALL + s, s, float(s)] for s in range(5)] + [
        [WALL + 1000 + s, s, 1000.0 + s] for s in RESUMED
    ]
    assert scalars(rustboard.url, "loss") == expected  # the oracle does what we think
    assert scalars(ours, "loss") == expected
    # A tag the resumed job never wrote keeps its whole first timeline.
    assert scalars(ours, "lr") == scalars(rustboard.url, "lr")
    assert [row[1] for row in scalars(ours, "lr")] == list(FIRST)
    for route, tag in (("histograms/histograms", "weights"), ("images/images", "sample")):
        theirs = steps_of(rustboard.url, route, tag)
        assert [s for _, s in theirs] == [0, 1, 2, 3, 4, 5, 6, 7], route
        assert steps_of(ours, route, tag) == theirs, route


def test_tensorboards_python_loader_keeps_both_timelines(python_loader: Oracle) -> None:
    """The difference docs/tensorboard.md lists: ``--load_fast=false`` purges only after a
    SessionLog START event, which tensorboardX and PyTorch's writer never write, so it keeps
    both attempts."""
    steps = [row[1] for row in scalars(python_loader.url, "loss")]
    assert steps == [*FIRST, *RESUMED]
