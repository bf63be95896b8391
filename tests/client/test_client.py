"""boardd.client against a real server: boardd's, on 127.0.0.1 (port 0) in a thread, serving a
store ingested from a logdir written here by tensorboardX; answers checked against the values
written."""

from __future__ import annotations

import importlib.util
import math
import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tensorboardX import SummaryWriter

from boardd.api.app import create_app
from boardd.client import BlobSequenceDatum, BoarddError, Client, Run, ScalarSeries
from boardd.config import ExperimentSpec
from tests.conftest import WALL, ThreadedServer, ingest

TOKEN = "client-test-token-0123456789"
STEPS = 120
SPECIAL = {5: math.nan, 6: math.inf, 7: -math.inf}


def write_logdir(logdir: Path) -> None:
    """Two runs: scalars (with NaN and ±Inf), a histogram, text, an image."""
    rng = np.random.default_rng(0)
    for run in ("train", "eval"):
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(STEPS):
                t = WALL + step
                value = SPECIAL.get(step, step / 10) if run == "train" else step * 2.0
                w.add_scalar("loss", value, step, walltime=t)
                w.add_scalar("acc", step / STEPS, step, walltime=t)
                if step % 20 == 0:
                    w.add_histogram("weights", rng.normal(size=100), step, walltime=t)
                    w.add_text("notes", f"step {step} ✓", step, walltime=t)
                    image = rng.integers(0, 256, (3, 4, 5), dtype=np.uint8)
                    w.add_image("sample", image, step, walltime=t)


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> ExperimentSpec:
    root = tmp_path_factory.mktemp("client")
    logdir = root / "logs"
    write_logdir(logdir)
    db = root / "store.sqlite"
    ingest(logdir, db, experiment="exp", sampling={"*": None})
    return ExperimentSpec("exp", logdir, db)


@pytest.fixture(scope="module")
def server(spec: ExperimentSpec) -> Iterator[ThreadedServer]:
    running = ThreadedServer(create_app([spec])).start()
    yield running
    running.stop()


@pytest.fixture
def client(server: ThreadedServer) -> Iterator[Client]:
    with Client(server.url) as made:
        yield made


def test_server_listings(client: Client, spec: ExperimentSpec) -> None:
    (experiment,) = client.experiments()
    assert (experiment.id, experiment.name) == ("exp", "exp")
    assert experiment.logdir == str(spec.logdir.resolve())
    runs = client.runs()
    # TensorBoard's order: by when each run's first event file was created.
    assert [r.name for r in runs] == ["train", "eval"]
    assert all(isinstance(r, Run) and isinstance(r.start_time, float) for r in runs)
    assert client.plugins() == {
        "histograms": ["tensor"],
        "images": ["blob_sequence"],
        "scalars": ["scalar"],
        "text": ["tensor"],
    }
    assert client.health()["status"] == "ok"
    with Client(client.url, experiment="exp") as named:
        assert named.runs() == runs


def test_scalars_as_numpy(client: Client) -> None:
    loss = client.scalars("train", "loss")
    assert isinstance(loss, ScalarSeries) and len(loss) == STEPS
    assert loss.steps.dtype == np.int64 and loss.values.dtype == np.float64
    np.testing.assert_array_equal(loss.steps, np.arange(STEPS))
    np.testing.assert_array_equal(loss.wall_times, WALL + np.arange(STEPS, dtype=np.float64))
    want = np.array([SPECIAL.get(s, s / 10) for s in range(STEPS)], dtype=np.float32)
    # tensorboardX writes float32; NaN and ±Inf come back as floats, not strings.
    np.testing.assert_array_equal(loss.values, want.astype(np.float64))
    assert math.isnan(loss.values[5]) and loss.values[6] == math.inf and loss.values[7] == -math.inf


def test_scalar_filters(client: Client) -> None:
    assert client.scalars("train", "acc", latest=3).steps.tolist() == [117, 118, 119]
    ranged = client.scalars("train", "acc", step_min=10, step_max=12)
    assert ranged.steps.tolist() == [10, 11, 12]
    assert ranged.values.tolist() == pytest.approx([10 / STEPS, 11 / STEPS, 12 / STEPS])
    sampled = client.scalars("train", "acc", downsample=10)
    assert len(sampled) == 10 and sampled.steps[-1] == STEPS - 1
    # Series with the same steps keep the same steps.
    assert sampled.steps.tolist() == client.scalars("eval", "loss", downsample=10).steps.tolist()
    assert len(client.scalars("train", "acc", downsample=0)) == 0


def test_scalars_many(client: Client) -> None:
    found = client.scalars_many(runs=["train", "eval", "absent"], tags=["acc"], latest=2)
    assert {run: list(tags) for run, tags in found.items()} == {"eval": ["acc"], "train": ["acc"]}
    assert found["eval"]["acc"].steps.tolist() == [118, 119]
    assert set(client.scalars_many()) == {"eval", "train"}
    with pytest.raises(TypeError, match="list of names"):
        client.scalars_many(runs="train")


def test_missing_series_is_not_found(client: Client) -> None:
    with pytest.raises(BoarddError) as raised:
        client.scalars("train", "absent")
    assert (raised.value.status, raised.value.code) == (404, "not_found")
    assert raised.value.message.startswith(
        "no scalar series for run 'train', tag 'absent' (plugin scalars): list_scalars() lists"
    ), raised.value.message


def test_listings_of_series(client: Client) -> None:
    listed = client.list_scalars()
    assert sorted(listed["train"]) == ["acc", "loss"]
    assert listed["train"]["loss"].max_step == STEPS - 1
    assert listed["train"]["loss"].max_wall_time == WALL + STEPS - 1
    assert listed["train"]["loss"].plugin_name == "scalars"
    images = client.list_blob_sequences("images", runs=["train"])
    assert list(images) == ["train"] and images["train"]["sample"].max_length == 3
    assert images["train"]["sample"].plugin_content == b"\x10\x01"
    assert list(client.list_tensors("histograms", tags=["weights"])) == ["eval", "train"]


def test_tensors(client: Client) -> None:
    found = client.tensors("histograms", runs=["train"], latest=1)
    (datum,) = found["train"]["weights"]
    assert (datum.step, datum.dtype) == (100, "DT_DOUBLE")
    assert datum.values.dtype == np.float64 and datum.values.shape == datum.shape
    assert datum.shape[1] == 3 and datum.values[:, 2].sum() == 100  # 100 samples in the buckets
    text = client.tensors("text", runs=["train"], step_max=20)
    (tag,) = text["train"]
    assert [d.step for d in text["train"][tag]] == [0, 20]
    assert text["train"][tag][1].values.tolist() == ["step 20 ✓"]


def test_blob_sequences_and_blobs(client: Client) -> None:
    found = client.blob_sequences("images", runs=["train"], index_min=2)
    series = found["train"]["sample"]
    assert [d.step for d in series] == list(range(0, STEPS, 20))
    assert all(isinstance(d, BlobSequenceDatum) and len(d.blobs) == 1 for d in series)
    png = client.blob(series[0].blobs[0])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height, _ = client.blob_sequences("images", runs=["train"], latest=1)["train"]["sample"][
        0
    ].blobs
    assert (client.blob(width), client.blob(height)) == (b"5", b"4")
    with pytest.raises(BoarddError) as raised:
        client.blob("exp~999999")
    assert raised.value.status == 404


def test_scalars_frame(client: Client) -> None:
    if importlib.util.find_spec("pandas") is None:
        with pytest.raises(ImportError, match="pip install pandas"):
            client.scalars_frame()
        return
    frame = client.scalars_frame(tags=["acc"], latest=5)
    assert list(frame.columns) == ["run", "tag", "step", "wall_time", "value"]
    assert len(frame) == 10 and set(frame["run"]) == {"eval", "train"}


def test_server_errors_become_boardd_errors(client: Client, server: ThreadedServer) -> None:
    with pytest.raises(BoarddError) as raised:
        client.scalars("train", "acc", latest=0)
    assert (raised.value.status, raised.value.code) == (400, "bad_request")
    assert "latest=0" in raised.value.message
    with pytest.raises(BoarddError) as raised, Client(server.url, experiment="nope") as unknown:
        unknown.runs()
    assert (raised.value.status, raised.value.code) == (404, "not_found")
    assert "known: exp" in str(raised.value)
    with pytest.raises(BoarddError) as raised:
        client.tensors("histograms", step_min=5, step_max=1)
    assert raised.value.status == 400


def test_unreachable_server() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with (
        Client(f"http://127.0.0.1:{port}", timeout=2) as nowhere,
        pytest.raises(BoarddError) as raised,
    ):
        nowhere.runs()
    assert (raised.value.status, raised.value.code) == (0, "unreachable")
    assert "boardd serve" in raised.value.message


def test_token(spec: ExperimentSpec) -> None:
    guarded = ThreadedServer(create_app([spec], token=TOKEN)).start()
    try:
        with pytest.raises(BoarddError) as raised, Client(guarded.url) as anonymous:
            anonymous.runs()
        assert (raised.value.status, raised.value.code) == (401, "unauthorized")
        with (
            Client(guarded.url, token="wrong-token-0123456789") as wrong,
            pytest.raises(BoarddError),
        ):
            wrong.runs()
        with Client(guarded.url, token=TOKEN) as right:
            assert [r.name for r in right.runs()] == ["train", "eval"]
        # The token file's content as read (echo ends it with a newline) works as the server
        # reads that file; before, it was "cannot reach ... is boardd serve running?".
        with Client(guarded.url, token=TOKEN + "\n") as read_from_file:
            assert [r.name for r in read_from_file.runs()] == ["train", "eval"]
    finally:
        guarded.stop()
    with pytest.raises(ValueError, match="token is empty"):
        Client(guarded.url, token=" \n")
    with pytest.raises(TypeError, match="token must be a string"):
        Client(guarded.url, token=123)  # type: ignore[arg-type]
    for timeout in (0, -1, "10"):
        with pytest.raises(ValueError, match="timeout must be"):
            Client(guarded.url, timeout=timeout)  # type: ignore[arg-type]


def test_gzip_answers_are_read(server: ThreadedServer) -> None:
    # Large answers come gzip-compressed (the client asks for it) and read the same.
    with Client(server.url) as client:
        everything = client.scalars_many()
    assert sum(len(s) for tags in everything.values() for s in tags.values()) == 4 * STEPS
