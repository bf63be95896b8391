"""Client.iter_scalars and Client.scalars_frame read scalar series as the answer arrives: the
same points as the answers read whole (NaN and ±Inf included), a long series with bounded
memory (the server in a process of its own, so that only the client's memory is measured),
and a server dropped mid-answer raises instead of giving a shorter series."""

from __future__ import annotations

import importlib.util
import math
import os
import socket
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2
from tensorboardX import SummaryWriter

from boardd.api.app import create_app
from boardd.client import BoarddError, Client, ScalarChunk, ScalarSeries
from boardd.config import ExperimentSpec
from boardd.data import series as data_series
from tests.conftest import WAIT, WALL, ThreadedServer, ingest
from tests.reader.records import frame_record

ROOT = Path(__file__).resolve().parents[2]
RUNS = ("train", 'odd, "run"')
SPECIAL = {5: math.nan, 6: math.inf, 7: -math.inf}
#: Points of the long series.
LONG = 300_000

needs_pandas = pytest.mark.skipif(
    importlib.util.find_spec("pandas") is None, reason="scalars_frame needs pandas"
)


def write_logdir(logdir: Path) -> None:
    """Two runs (one named with a comma and quotes), tags with NaN and ±Inf, one with a
    newline in its name."""
    for run in RUNS:
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(60):
                t = WALL + step / 3
                w.add_scalar("loss", SPECIAL.get(step, step / 7), step, walltime=t)
                w.add_scalar("ünï/acc", 1 / (step + 3), step * 2, walltime=t)
                if run == "train" and step % 3 == 0:
                    w.add_scalar("two\nlines", -step, step, walltime=t)


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> ExperimentSpec:
    root = tmp_path_factory.mktemp("streams")
    write_logdir(root / "logs")
    ingest(root / "logs", root / "store.sqlite", experiment="exp", sampling={"*": None})
    return ExperimentSpec("exp", root / "logs", root / "store.sqlite")


@pytest.fixture
def client(spec: ExperimentSpec) -> Iterator[Client]:
    server = ThreadedServer(create_app([spec])).start()
    try:
        with Client(server.url) as made:
            yield made
    finally:
        server.stop()


def joined(chunks: Iterator[ScalarChunk]) -> dict[str, dict[str, ScalarSeries]]:
    """run → tag → the series the chunks make, checking that each series comes in one go."""
    found: dict[str, dict[str, list[ScalarChunk]]] = {}
    order: list[tuple[str, str]] = []
    for chunk in chunks:
        if not order or order[-1] != (chunk.run, chunk.tag):
            assert (chunk.run, chunk.tag) not in order, "a series came in two parts"
            order.append((chunk.run, chunk.tag))
        found.setdefault(chunk.run, {}).setdefault(chunk.tag, []).append(chunk)
    return {
        run: {
            tag: ScalarSeries(
                np.concatenate([c.steps for c in parts]),
                np.concatenate([c.wall_times for c in parts]),
                np.concatenate([c.values for c in parts]),
            )
            for tag, parts in by_tag.items()
        }
        for run, by_tag in found.items()
    }


def assert_same(got: dict[str, dict[str, ScalarSeries]], whole: dict[str, Any]) -> None:
    """The same series, point for point (NaN equal to NaN), empty ones aside."""
    expected = {r: {t: s for t, s in by.items() if len(s)} for r, by in whole.items()}
    expected = {r: by for r, by in expected.items() if by}
    assert {r: set(by) for r, by in got.items()} == {r: set(by) for r, by in expected.items()}
    for run, by_tag in expected.items():
        for tag, series in by_tag.items():
            mine = got[run][tag]
            assert mine.steps.dtype == np.int64 and mine.values.dtype == np.float64
            np.testing.assert_array_equal(mine.steps, series.steps)
            np.testing.assert_array_equal(mine.wall_times, series.wall_times)
            np.testing.assert_array_equal(mine.values, series.values)  # NaN == NaN here


FILTERS: list[dict[str, Any]] = [
    {},
    {"runs": [RUNS[1]], "tags": ["loss"]},
    {"step_min": 4, "step_max": 50},
    {"latest": 9},
    {"downsample": 10},
    {"step_min": 1000},  # no points at all
]


@pytest.mark.parametrize("filters", FILTERS, ids=str)
def test_streamed_chunks_are_the_points_read_whole(client: Client, filters: dict[str, Any]) -> None:
    chunks = list(client.iter_scalars(chunk_points=7, **filters))
    assert chunks == [] or max(len(c) for c in chunks) <= 7
    assert_same(joined(iter(chunks)), client.scalars_many(**filters))


def test_non_finite_values_and_names_come_through(client: Client) -> None:
    found = joined(client.iter_scalars(chunk_points=1000))
    loss = found[RUNS[1]]["loss"]
    assert math.isnan(loss.values[5]) and loss.values[6] == math.inf
    assert loss.values[7] == -math.inf and loss.values[8] == np.float32(8 / 7)
    assert set(found["train"]) == {"loss", "ünï/acc", "two_lines"}  # as tensorboardX names it


def frame_read_whole(client: Client, **filters: Any) -> Any:
    """The DataFrame of scalars_many's answer, as scalars_frame built it before it streamed."""
    pandas = pytest.importorskip("pandas")
    found = client.scalars_many(**filters)
    pieces = [(r, t, s) for r, by in found.items() for t, s in by.items() if len(s)]

    def column(make: Any, dtype: Any) -> Any:
        return (
            np.concatenate([make(r, t, s) for r, t, s in pieces])
            if pieces
            else np.array([], dtype=dtype)
        )

    return pandas.DataFrame(
        {
            "run": column(lambda r, t, s: np.full(len(s), r, dtype=object), object),
            "tag": column(lambda r, t, s: np.full(len(s), t, dtype=object), object),
            "step": column(lambda r, t, s: s.steps, np.int64),
            "wall_time": column(lambda r, t, s: s.wall_times, np.float64),
            "value": column(lambda r, t, s: s.values, np.float64),
        }
    )


@needs_pandas
@pytest.mark.parametrize("filters", FILTERS, ids=str)
def test_scalars_frame_is_the_frame_read_whole(client: Client, filters: dict[str, Any]) -> None:
    pandas = pytest.importorskip("pandas")
    pandas.testing.assert_frame_equal(
        client.scalars_frame(**filters), frame_read_whole(client, **filters), check_exact=True
    )


def test_a_selection_too_large_for_one_answer_is_read_in_step_ranges(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = client.scalars_many()
    whole_ranged = client.scalars_many(step_min=3, step_max=70)
    # The server now refuses answers of more than 25 points (413): a series is read in ranges.
    monkeypatch.setitem(data_series.MAX_POINTS, "scalars", 25)
    with pytest.raises(BoarddError) as refused:
        client.scalars_many()
    assert refused.value.status == 413
    assert_same(joined(client.iter_scalars(chunk_points=10)), whole)
    ranged = joined(client.iter_scalars(step_min=3, step_max=70))
    assert_same(ranged, whole_ranged)
    # latest= and downsample= are not step ranges: their 413 is raised.
    with pytest.raises(BoarddError) as refused:
        next(client.iter_scalars(latest=40))
    assert (refused.value.status, refused.value.code) == (413, "too_large")


def test_bad_arguments_and_error_answers_raise(client: Client) -> None:
    bad: Any
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="chunk_points"):
            client.iter_scalars(chunk_points=bad)
    with pytest.raises(TypeError, match="list of names"):
        client.iter_scalars(runs="train")
    with pytest.raises(BoarddError) as raised:
        next(client.iter_scalars(step_min=5, step_max=1))
    assert raised.value.status == 400


# -- a long series, the server in a process of its own ------------------------------------------

_SERVE = """
import sys
from pathlib import Path
from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from tests.conftest import ThreadedServer
spec = ExperimentSpec("long", Path(sys.argv[1]), Path(sys.argv[2]))
server = ThreadedServer(create_app([spec], sampling={"*": None}))
print(server.start().url, flush=True)
sys.stdin.read()
server.stop()
"""


def write_long_logdir(logdir: Path) -> None:
    """One series of LONG points, written as raw records (a summary writer is slow)."""
    (logdir / "train").mkdir(parents=True)
    records = [frame_record(event_pb2.Event(wall_time=WALL, file_version="brain.Event:2").
                            SerializeToString())]  # fmt: skip
    for step in range(LONG):
        event = event_pb2.Event(step=step, wall_time=WALL + step / 10)
        event.summary.value.add(tag="loss", simple_value=SPECIAL.get(step, step / 3))
        records.append(frame_record(event.SerializeToString()))
    (logdir / "train" / "events.out.tfevents.1.host").write_bytes(b"".join(records))


@pytest.fixture(scope="module")
def long_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("long")
    write_long_logdir(root / "logs")
    ingest(root / "logs", root / "store.sqlite", experiment="long", sampling={"*": None})
    return root / "logs", root / "store.sqlite"


class ServerProcess:
    """The app over a store, served by boardd's server in a child process."""

    def __init__(self, logdir: Path, db: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, str(logdir), str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=env,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        assert self.url.startswith("http://"), "the server did not start"

    def stop(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(WAIT)
        self.process.stdin.close()
        self.process.stdout.close()


@pytest.fixture
def long_server(long_store: tuple[Path, Path]) -> Iterator[ServerProcess]:
    server = ServerProcess(*long_store)
    yield server
    server.stop()


def peak_of(read: Any) -> tuple[Any, int]:
    """What ``read()`` gives, and the peak of the memory Python allocated for it (bytes)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = read()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_long_series_is_read_a_chunk_at_a_time(long_server: ServerProcess) -> None:
    with Client(long_server.url, timeout=WAIT) as client:
        csv_bytes = len(client._http.get("api/v1/scalars", params={"format": "csv"}).content)

        def count() -> tuple[int, int, int]:
            chunks = points = nan = 0
            for chunk in client.iter_scalars(chunk_points=10_000):
                assert (chunk.run, chunk.tag) == ("train", "loss") and len(chunk) <= 10_000
                chunks += 1
                points += len(chunk)
                nan += int(np.isnan(chunk.values).sum())
            return chunks, points, nan

        (chunks, points, nan), peak = peak_of(count)
    assert (chunks, points, nan) == (LONG // 10_000, LONG, 1)
    print(f"\niter_scalars: {LONG} points, CSV answer {csv_bytes} bytes, peak {peak} bytes")
    # Held whole, the answer's text alone would be csv_bytes, its points as numpy LONG * 24.
    assert peak < min(csv_bytes / 2, LONG * 24)


@needs_pandas
def test_the_frame_of_a_long_series_costs_about_its_size(long_server: ServerProcess) -> None:
    pytest.importorskip("pandas")  # imported before measuring
    with Client(long_server.url, timeout=WAIT) as client:
        frame, peak = peak_of(lambda: client.scalars_frame(runs=["train"]))
        whole, whole_peak = peak_of(lambda: client.scalars("train", "loss"))
    size = int(frame.memory_usage(deep=False).sum())
    print(
        f"\nscalars_frame: {len(frame)} rows, frame {size} bytes, peak {peak} bytes "
        f"({peak / size:.2f}x); scalars() read whole: peak {whole_peak} bytes"
    )
    assert len(frame) == LONG
    np.testing.assert_array_equal(frame["step"].to_numpy(), whole.steps)
    np.testing.assert_array_equal(frame["wall_time"].to_numpy(), whole.wall_times)
    np.testing.assert_array_equal(frame["value"].to_numpy(), whole.values)
    assert peak < 1.75 * size


def test_a_server_dropped_mid_answer_raises(long_store: tuple[Path, Path]) -> None:
    server = ServerProcess(*long_store)
    try:
        with Client(server.url, timeout=WAIT) as client:
            chunks = client.iter_scalars(chunk_points=1000)
            got = len(next(chunks))
            server.process.kill()
            server.process.wait(WAIT)
            with pytest.raises(BoarddError) as raised:
                for chunk in chunks:
                    got += len(chunk)
    finally:
        server.stop()
    assert got < LONG
    assert (raised.value.status, raised.value.code) == (0, "unreachable")
    assert "broke off after" in raised.value.message and "incomplete" in raised.value.message


# -- answers cut short, from a server that sends what it is told --------------------------------


class RawServer:
    """Answers one request with ``answer`` (raw bytes), then closes the connection."""

    def __init__(self, answer: bytes) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.answer = answer
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with self.listener:
            connection, _ = self.listener.accept()
            with connection:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += connection.recv(4096)
                connection.sendall(self.answer)


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/csv\r\nconnection: close\r\n"
ROWS = b"run,tag,step,wall_time,value\ntrain,loss,0,1.5,2.5\ntrain,loss,1,2.5,NaN\n"


@pytest.mark.parametrize(
    ("answer", "code", "words"),
    [
        # The body runs to the end of the connection: it ends within a row.
        (HEAD + b"\r\n" + ROWS + b"train,loss,2,3.", "unreachable", "ends within a row"),
        # Chunked, the connection closed before the last chunk.
        (
            HEAD + b"transfer-encoding: chunked\r\n\r\n" + b"%x\r\n" % len(ROWS) + ROWS + b"\r\n",
            "unreachable",
            "broke off after",
        ),
        # Content-Length says more than came.
        (
            HEAD + b"content-length: %d\r\n\r\n" % (len(ROWS) + 10) + ROWS,
            "unreachable",
            "broke off after",
        ),
        (HEAD + b"\r\nnot,a,csv\n1,2,3\n", "undecodable", "not the data API's scalar CSV"),
        (HEAD + b"\r\n" + ROWS + b"train,loss,x,1,1\n", "undecodable", "invalid literal"),
    ],
    ids=["within-a-row", "chunked", "content-length", "header", "a-bad-step"],
)
def test_an_answer_cut_short_raises(answer: bytes, code: str, words: str) -> None:
    server = RawServer(answer)
    with Client(server.url, timeout=WAIT) as client, pytest.raises(BoarddError) as raised:
        list(client.iter_scalars(chunk_points=1))
    server.thread.join(WAIT)
    assert raised.value.code == code and words in raised.value.message, raised.value
