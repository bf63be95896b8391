"""Fixtures of the HTTP API tests: a real logdir, stores ingested from it, the app served."""

from __future__ import annotations

import contextlib
import io
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient
from tensorboard.compat.proto import event_pb2 as tb_event_pb2
from tensorboard.compat.proto import summary_pb2 as tb_summary_pb2
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter
from tensorboardX import summary as x_summary

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from boardd.store.session import WriteSession
from tests.conftest import ingest

WALL = 1_700_000_000.0
EXPERIMENT = "exp"
#: Keep every point: the API's answers can be compared exactly with TensorBoard's.
ALL: dict[str, int | None] = {"*": None}
#: Small capacities: sampling drops points of train's series (eval's and the others fit).
SMALL: dict[str, int | None] = {"scalars": 40, "histograms": 6, "images": 3, "audio": 2}
#: Runs of the logdir: the root, two siblings and a nested one, in TensorBoard's order (by when
#: each run's first event file was created: write_logdir writes them in this order).
RUNS = ["train", "eval", "nested/deep/run", "."]
TRAIN_STEPS = 300
#: Non-finite scalar values of train/loss, by step.
NON_FINITE = {13: float("nan"), 17: float("inf"), 19: float("-inf")}
#: Steps of train's multi-image (3 PNGs per step) and audio series.
MULTI_STEPS = range(0, TRAIN_STEPS, 40)
AUDIO_STEPS = range(0, TRAIN_STEPS, 60)
IMAGES_PER_STEP = 3


def wav(seed: int) -> bytes:
    """A short mono 16-bit WAV file."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(np.random.default_rng(seed).integers(-999, 999, 80, dtype="<i2").tobytes())
    return buf.getvalue()


def png(seed: int, height: int = 5, width: int = 4) -> bytes:
    """A small PNG, encoded by tensorboardX."""
    pixels = np.random.default_rng(seed).integers(0, 256, (3, height, width), dtype=np.uint8)
    return bytes(
        x_summary.image("x", pixels, dataformats="CHW").value[0].image.encoded_image_string
    )


def write_train(directory: Path, steps: range, *, seed: int = 0) -> None:
    """The "train" run: tensorboardX scalars (with NaN and ±Inf), histograms, images, text;
    then TensorBoard's writer for what tensorboardX cannot write here: an image series with
    several PNGs per step (the image plugin's tensor form) and TF1 audio (tensorboardX's
    add_audio needs the soundfile package)."""
    rng = np.random.default_rng(seed + steps.start)
    with SummaryWriter(str(directory), filename_suffix=f".x{steps.start}") as w:
        for step in steps:
            t = WALL + step * 0.5
            w.add_scalar("loss", NON_FINITE.get(step, float(rng.normal())), step, walltime=t)
            w.add_scalar("acc", step / TRAIN_STEPS, step, walltime=t)
            if step % 3 == 0:
                w.add_scalar("lr", 0.1 / (1 + step), step, walltime=t)
            if step % 10 == 0:
                w.add_histogram("weights", rng.normal(size=200) * (1 + step), step, walltime=t)
            if step % 50 == 0:
                image = rng.integers(0, 256, (3, 6, 5), dtype=np.uint8)
                w.add_image("sample", image, step, walltime=t)
            if step % 25 == 0:
                w.add_text("notes", f"step **{step}** ✓", step, walltime=t)
    media = EventFileWriter(str(directory), filename_suffix=f".y{steps.start}")
    for step in steps:
        t = WALL + step * 0.5
        if step in MULTI_STEPS:
            pngs = [png(step * 10 + i, 4 + i, 3) for i in range(IMAGES_PER_STEP)]
            tensor = tensor_util.make_tensor_proto([b"3", b"4", *pngs], dtype="string")
            event = tb_event_pb2.Event(wall_time=t, step=step)
            event.summary.value.add(
                tag="multi",
                tensor=tensor,
                metadata=image_metadata.create_summary_metadata(
                    display_name="multi", description="three per step"
                ),
            )
            media.add_event(event)
        if step in AUDIO_STEPS:
            event = tb_event_pb2.Event(wall_time=t, step=step)
            value = event.summary.value.add(tag="speech")
            value.audio.CopyFrom(
                tb_summary_pb2.Summary.Audio(
                    sample_rate=8000.0,
                    num_channels=1,
                    length_frames=80,
                    encoded_audio_string=wav(step),
                    content_type="audio/wav",
                )
            )
            media.add_event(event)
    media.close()


def write_logdir(root: Path) -> Path:
    """A logdir of several runs (one at the root, one nested) and every data class."""
    logdir = root / "logs"
    logdir.mkdir()
    write_train(logdir / "train", range(TRAIN_STEPS))
    rng = np.random.default_rng(1)
    with SummaryWriter(str(logdir / "eval")) as w:
        # Two tags on the same steps, and the same steps as nested/deep/run's loss.
        for step in range(0, TRAIN_STEPS, 10):
            w.add_scalar("loss", float(rng.normal()), step, walltime=WALL + step)
            w.add_scalar("acc", float(rng.random()), step, walltime=WALL + step)
            if step % 30 == 0:
                w.add_histogram("weights", rng.normal(size=50), step, walltime=WALL + step)
    with SummaryWriter(str(logdir / "nested" / "deep" / "run")) as w:
        for step in range(0, TRAIN_STEPS, 10):
            w.add_scalar("loss", float(rng.normal()), step, walltime=WALL + step)
            if step % 100 == 0:
                image = rng.integers(0, 256, (3, 4, 4), dtype=np.uint8)
                w.add_image("sample", image, step, walltime=WALL + step)
    with SummaryWriter(str(logdir)) as w:
        for step in range(7):
            w.add_scalar("root_metric", step * 1.5, step, walltime=WALL + step)
    return logdir


@pytest.fixture(scope="session")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared logdir (never modified by tests)."""
    return write_logdir(tmp_path_factory.mktemp("api"))


@pytest.fixture(scope="session")
def spec_all(logdir: Path) -> ExperimentSpec:
    """A store that keeps every point."""
    db = logdir.parent / "all.sqlite"
    ingest(logdir, db, ALL, experiment=EXPERIMENT)
    return ExperimentSpec(EXPERIMENT, logdir, db)


@pytest.fixture(scope="session")
def spec_default(logdir: Path) -> ExperimentSpec:
    """A store with the default sampling (images keep 10 steps, …)."""
    db = logdir.parent / "default.sqlite"
    ingest(logdir, db, None, experiment=EXPERIMENT)
    return ExperimentSpec(EXPERIMENT, logdir, db)


@pytest.fixture(scope="session")
def spec_small(logdir: Path) -> ExperimentSpec:
    """A store with small capacities: train's series are reservoir samples (irregular steps)."""
    db = logdir.parent / "small.sqlite"
    ingest(logdir, db, SMALL, experiment=EXPERIMENT)
    return ExperimentSpec(EXPERIMENT, logdir, db)


@contextlib.contextmanager
def serve(*specs: ExperimentSpec, **options: Any) -> Iterator[TestClient]:
    """The app over these experiments, its lifespan running; server errors come back as
    responses (the tests check that they never happen, and their shape if they do)."""
    with TestClient(create_app(specs, **options), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def api(spec_all: ExperimentSpec) -> Iterator[TestClient]:
    """The app over the keep-everything store (shared: do not count cache hits on it)."""
    with serve(spec_all) as client:
        yield client


def get_json(client: TestClient, path: str, **params: Any) -> Any:
    """GETs a JSON answer, asserting 200."""
    response = client.get(path, params=params)
    assert response.status_code == 200, (path, params, response.text)
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def assert_error(response: Any, status: int) -> dict[str, str]:
    """Asserts the one error envelope with this status; returns its inner object."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body, dict) and set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error, dict) and set(error) == {"code", "message"}, body
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    return error


@pytest.fixture
def store(tmp_path: Path) -> ExperimentSpec:
    """An empty store of an empty logdir (experiment "exp")."""
    logdir = tmp_path / "logs"
    logdir.mkdir()
    db = tmp_path / "store.sqlite"
    WriteSession(db, logdir).close()
    return ExperimentSpec("exp", logdir, db)
