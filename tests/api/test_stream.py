"""GET /api/v1/stream: Server-Sent Events after commits, over a real HTTP server.

A real writer (WriteSession + Ingestor over event files written by TensorBoard's and
tensorboardX's writers) commits in the test's thread; the app runs under boardd's server in a thread
(or as ``boardd serve``); an httpx client reads the stream in a thread of its own.
"""

from __future__ import annotations

import json
import math
import os
import queue
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from tensorboardX import SummaryWriter

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from boardd.store import queries
from boardd.store.bus import ChangeHub
from boardd.store.connection import open_reader
from tests.conftest import WAIT, WALL, LiveStore, ThreadedServer, ingest

SRC = str(Path(__file__).resolve().parents[2] / "src")
#: Short heartbeats: the client's reader thread notices a close request within one.
HEARTBEAT = 0.2


# -- writing and ingesting ----------------------------------------------------------------------


# -- the server and the client ------------------------------------------------------------------


def start_server(
    servers: list[ThreadedServer], *specs: ExperimentSpec, **options: Any
) -> ThreadedServer:
    """Serves ``create_app(specs, **options)`` (heartbeat :data:`HEARTBEAT` unless given)."""
    options.setdefault("stream_heartbeat", HEARTBEAT)
    server = ThreadedServer(create_app(specs, **options)).start()
    servers.append(server)
    return server


@dataclass
class Sse:
    """One block of the stream: an event (``event`` None for a block without data) or a
    comment (``event == ":"``, ``data`` its text)."""

    event: str | None
    id: str | None
    data: Any
    at: float


class Stream:
    """An httpx client reading ``GET /api/v1/stream`` in a thread; blocks go to a queue with
    the time they arrived (``time.perf_counter``)."""

    def __init__(
        self, url: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None
    ) -> None:
        self.blocks: queue.Queue[Sse] = queue.Queue()
        self.ready = threading.Event()
        self.ended = threading.Event()
        self.status = 0
        self.headers: httpx.Headers | None = None
        self.body = b""
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._read, args=(url, params, headers), name="test-sse", daemon=True
        )
        self._thread.start()
        assert self.ready.wait(WAIT), "no answer to GET /api/v1/stream"

    def _read(
        self, url: str, params: dict[str, Any] | None, headers: dict[str, str] | None
    ) -> None:
        try:
            with (
                httpx.Client(timeout=WAIT, trust_env=False) as client,
                client.stream("GET", f"{url}/api/v1/stream", params=params, headers=headers) as r,
            ):
                self.status, self.headers = r.status_code, r.headers
                if r.status_code != 200:
                    self.body = r.read()
                    self.ready.set()
                    return
                self.ready.set()
                self._parse(r.iter_lines())
        except BaseException as exc:
            self.error = exc
        finally:
            self.ready.set()
            self.ended.set()

    def _parse(self, lines: Iterator[str]) -> None:
        event: str | None = None
        event_id: str | None = None
        data: list[str] = []
        for line in lines:
            now = time.perf_counter()
            if line.startswith(":"):
                self.blocks.put(Sse(":", None, line[1:].strip(), now))
            elif line == "":
                if event is not None or event_id is not None or data:
                    payload = json.loads("\n".join(data)) if data else None
                    self.blocks.put(Sse(event, event_id, payload, now))
                event, event_id, data = None, None, []
            else:
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "event":
                    event = value
                elif name == "id":
                    event_id = value
                elif name == "data":
                    data.append(value)
            if self._stop.is_set():
                return

    def next(self, timeout: float = WAIT) -> Sse:
        """The next block (fails after ``timeout`` seconds)."""
        try:
            return self.blocks.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no stream block within {timeout} s ({self.error!r})") from None

    def events(self, count: int, timeout: float = WAIT) -> list[Sse]:
        """The next ``count`` events (comments skipped)."""
        out: list[Sse] = []
        deadline = time.monotonic() + timeout
        while len(out) < count:
            block = self.next(max(0.01, deadline - time.monotonic()))
            if block.event not in (":", None):
                out.append(block)
        return out

    def opened(self) -> str:
        """The id of the opening block (the cursor the stream starts from)."""
        while True:
            block = self.next()
            if block.event is None and block.id is not None:
                return block.id

    def quiet(self, seconds: float) -> list[Sse]:
        """The events (not comments) that arrive within ``seconds``."""
        out: list[Sse] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                block = self.blocks.get(timeout=left)
            except queue.Empty:
                break
            if block.event not in (":", None):
                out.append(block)
        return out

    def close(self) -> None:
        """Stops reading (within a heartbeat) and joins the thread."""
        self._stop.set()
        self._thread.join(WAIT)
        assert not self._thread.is_alive(), "the stream reader did not stop"


@pytest.fixture
def streams() -> Iterator[list[Stream]]:
    """Streams opened by :func:`open_stream`, closed at the end."""
    opened: list[Stream] = []
    yield opened
    for stream in opened:
        stream.close()


def open_stream(streams: list[Stream], server: ThreadedServer, **kwargs: Any) -> Stream:
    """Opens a stream on ``server``."""
    stream = Stream(server.url, **kwargs)
    streams.append(stream)
    return stream


def series_of(events: list[Sse]) -> dict[tuple[str, str], dict[str, Any]]:
    """The last series event of each (run, tag)."""
    return {(e.data["run"], e.data["tag"]): e.data for e in events if e.event == "series"}


def changed_since(db: Path, generation: int) -> set[tuple[str, str, int]]:
    """(run, tag, last step) of every series a store changed after ``generation``, read
    straight from the store (the oracle of a resume)."""
    connection = open_reader(db)
    try:
        return {
            (str(run), str(tag), int(step))
            for run, tag, step in connection.execute(
                "SELECT r.name, s.tag, s.last_step FROM series s JOIN runs r ON r.id = s.run_id "
                "WHERE s.generation > ? AND r.deleted = 0",
                (generation,),
            )
        }
    finally:
        connection.close()


# -- the tests -----------------------------------------------------------------------------------


def test_new_points_arrive_with_step_value_and_commit_id(
    tmp_path: Path,
    live_stores: Callable[..., LiveStore],
    servers: list[ThreadedServer],
    streams: list[Stream],
) -> None:
    hub = ChangeHub()
    store = live_stores("exp", hub)
    train = store.run("train")
    train.scalars("loss", {s: 1.0 / (1 + s) for s in range(10)})
    start = store.commit()
    server = start_server(servers, store.spec, hub=hub)
    stream = open_stream(streams, server)
    assert stream.status == 200
    assert stream.headers is not None
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["cache-control"] == "no-cache"
    assert stream.headers["x-accel-buffering"] == "no"
    assert stream.opened() == str(start)

    latencies = []
    for round_ in range(5):
        steps = range(10 + round_ * 3, 13 + round_ * 3)
        train.scalars("loss", {s: 1.0 / (1 + s) for s in steps})
        train.scalars("acc", {s: s / 100 for s in steps})
        generation = store.commit()
        got = stream.events(2)
        assert [(e.data["tag"], e.data["step"]) for e in got] == [
            ("acc", steps[-1]),
            ("loss", steps[-1]),
        ]
        by_tag = {e.data["tag"]: e for e in got}
        assert by_tag["loss"].data == {
            "experiment": "exp",
            "run": "train",
            "tag": "loss",
            "plugin": "scalars",
            "data_class": "scalar",
            "step": steps[-1],
            "wall_time": WALL + steps[-1],
            "value": pytest.approx(1.0 / (1 + steps[-1])),
            "generation": generation,
        }
        # Only the commit's last message moves the cursor past it.
        assert [e.id for e in got] == [str(generation - 1), str(generation)]
        latencies.append(got[0].at - store.commits[generation])
    print(f"\ncommit → message (hub): {[round(x * 1e3, 2) for x in latencies]} ms")
    assert max(latencies) < 1.0


def test_new_and_deleted_runs(
    tmp_path: Path,
    live_stores: Callable[..., LiveStore],
    servers: list[ThreadedServer],
    streams: list[Stream],
) -> None:
    hub = ChangeHub()
    store = live_stores("exp", hub)
    store.run("train").scalars("loss", {0: 1.0})
    store.commit()
    server = start_server(servers, store.spec, hub=hub)
    stream = open_stream(streams, server)
    stream.opened()

    fresh = store.run("eval/nested")
    fresh.scalars("acc", {5: 0.5})
    fresh.close()
    store.commit()
    got = stream.events(2)
    assert [e.event for e in got] == ["run", "series"]
    assert got[0].data == {
        "experiment": "exp",
        "run": "eval/nested",
        "change": "created",
        "generation": got[0].data["generation"],
    }
    assert (got[1].data["run"], got[1].data["tag"], got[1].data["step"]) == (
        "eval/nested",
        "acc",
        5,
    )
    # The run's creation and its first points may be separate commits; ids never go back.
    assert int(got[0].id or 0) <= int(got[1].id or 0)

    shutil.rmtree(store.logdir / "eval")
    generation = store.commit()
    (deleted,) = stream.events(1)
    assert deleted.event == "run"
    assert deleted.data == {
        "experiment": "exp",
        "run": "eval/nested",
        "change": "deleted",
        "generation": generation,
    }
    assert deleted.id == str(generation)


def test_last_event_id_replays_exactly_the_missed_changes(
    tmp_path: Path,
    live_stores: Callable[..., LiveStore],
    servers: list[ThreadedServer],
    streams: list[Stream],
) -> None:
    hub = ChangeHub()
    store = live_stores("exp", hub)
    train = store.run("train")
    train.scalars("loss", {s: float(s) for s in range(5)})
    train.scalars("acc", {s: float(s) for s in range(5)})
    store.run("old").scalars("x", {0: 0.0})
    store.commit()
    server = start_server(servers, store.spec, hub=hub)
    first = open_stream(streams, server)
    first.opened()
    train.scalars("loss", {5: 5.0})
    seen = store.commit()
    (event,) = first.events(1)
    last_id = event.id
    assert last_id == str(seen)
    first.close()

    # Missed while disconnected: three commits, a new run, a deleted run, a NaN.
    train.scalars("loss", {6: 6.0, 7: 7.0})
    store.commit()
    train.scalars("acc", {8: float("nan")})
    extra = store.run("extra")
    extra.scalars("y", {3: -1.5})
    extra.close()
    store.commit()
    shutil.rmtree(store.logdir / "old")
    train.scalars("loss", {9: 9.0})
    now = store.commit()

    resumed = open_stream(streams, server, headers={"Last-Event-ID": last_id})
    assert resumed.opened() == last_id
    expected = changed_since(store.db, seen)
    assert expected == {("train", "loss", 9), ("train", "acc", 8), ("extra", "y", 3)}
    replay = resumed.events(len(expected) + 2)  # + run created, run deleted
    assert {
        (e.data["run"], e.data["tag"], e.data["step"]) for e in replay if e.event == "series"
    } == (expected)
    runs = {(e.data["run"], e.data["change"]) for e in replay if e.event == "run"}
    assert runs == {("extra", "created"), ("old", "deleted")}
    assert series_of(replay)[("train", "acc")]["value"] == "NaN"
    assert all(int(e.data["generation"]) > seen for e in replay)
    assert replay[-1].id == str(now)
    assert resumed.quiet(0.5) == []  # nothing twice, nothing from before the cursor

    # The same with since= (an EventSource cannot set headers on its first connection).
    again = open_stream(streams, server, params={"since": last_id})
    assert again.opened() == last_id
    assert {(e.event, json.dumps(e.data)) for e in again.events(len(replay))} == {
        (e.event, json.dumps(e.data)) for e in replay
    }


def test_heartbeat_when_idle(
    tmp_path: Path,
    live_stores: Callable[..., LiveStore],
    servers: list[ThreadedServer],
    streams: list[Stream],
) -> None:
    hub = ChangeHub()
    store = live_stores("exp", hub)
    store.run("train").scalars("loss", {0: 1.0})
    store.commit()
    server = start_server(servers, store.spec, hub=hub, stream_heartbeat=0.3)
    stream = open_stream(streams, server)
    stream.opened()
    started = time.perf_counter()
    pings: list[float] = []
    while len(pings) < 2:
        block = stream.next(timeout=5)
        if block.event == ":":
            assert block.data == "ping"
            pings.append(block.at - started)
    assert 0.2 < pings[0] < 3.0
    assert pings[1] - pings[0] > 0.2


def test_store_watcher_without_a_hub(
    tmp_path: Path,
    live_stores: Callable[..., LiveStore],
    servers: list[ThreadedServer],
    streams: list[Stream],
) -> None:
    # The writer is not the app's (another process, as far as the app knows): no hub.
    store = live_stores("exp", None)
    train = store.run("train")
    train.scalars("loss", {0: 1.0})
    store.commit()
    server = start_server(servers, store.spec)
    stream = open_stream(streams, server)
    stream.opened()
    latencies = []
    for step in range(1, 6):
        train.scalars("loss", {step: float(step)})
        generation = store.commit()
        (event,) = stream.events(1)
        assert (event.data["step"], event.data["value"], event.id) == (
            step,
            float(step),
            str(generation),
        )
        latencies.append(event.at - store.commits[generation])
    print(f"\ncommit → message (store watcher): {[round(x * 1e3, 1) for x in latencies]} ms")
    assert max(latencies) < 1.0
    assert [t for t in threading.enumerate() if t.name == "boardd-store-watch"]
    stream.close()
    server.stop()  # the lifespan's end stops the watcher and closes its connection
    assert [t for t in threading.enumerate() if t.name == "boardd-store-watch"] == []


def test_a_store_that_appears_later(
    tmp_path: Path,
    live_stores: Callable[..., LiveStore],
    servers: list[ThreadedServer],
    streams: list[Stream],
) -> None:
    spec = ExperimentSpec("exp", tmp_path / "exp" / "logs", tmp_path / "exp" / "store.sqlite")
    server = start_server(servers, spec)
    stream = open_stream(streams, server)
    assert stream.opened() == "0"
    store = live_stores("exp", None)
    store.run("train").scalars("loss", {4: 2.0})
    store.commit()
    got = stream.events(2)
    assert [(e.event, e.data["run"]) for e in got] == [("run", "train"), ("series", "train")]


def test_several_experiments_share_a_stream(
    tmp_path: Path,
    live_stores: Callable[..., LiveStore],
    servers: list[ThreadedServer],
    streams: list[Stream],
) -> None:
    hub = ChangeHub()
    a = live_stores("a", hub)
    b = live_stores("b", hub)
    run_a, run_b = a.run("r"), b.run("r")
    run_a.scalars("t", {0: 0.0})
    run_b.scalars("t", {0: 0.0})
    ga, gb = a.commit(), b.commit()
    server = start_server(servers, a.spec, b.spec, hub=hub)
    both = open_stream(streams, server)
    assert both.opened() == f"a:{ga},b:{gb}"
    only_b = open_stream(streams, server, params={"experiment": "b"})
    assert only_b.opened() == str(gb)

    run_a.scalars("t", {1: 1.0})
    ga = a.commit()
    (event,) = both.events(1)
    assert (event.data["experiment"], event.id) == ("a", f"a:{ga},b:{gb}")
    run_b.scalars("t", {2: 2.0})
    gb = b.commit()
    (event,) = both.events(1)
    assert (event.data["experiment"], event.id) == ("b", f"a:{ga},b:{gb}")
    (event,) = only_b.events(1)
    assert (event.data["experiment"], event.data["step"], event.id) == ("b", 2, str(gb))
    assert only_b.quiet(0.3) == []

    # Resume the combined stream from before b's commit: only b's change comes back.
    resumed = open_stream(streams, server, headers={"Last-Event-ID": f"a:{ga},b:{gb - 1}"})
    resumed.opened()
    (event,) = resumed.events(1)
    assert (event.data["experiment"], event.data["step"]) == ("b", 2)
    assert resumed.quiet(0.3) == []


def test_bad_requests(
    tmp_path: Path,
    live_stores: Callable[..., LiveStore],
    servers: list[ThreadedServer],
    streams: list[Stream],
) -> None:
    hub = ChangeHub()
    a = live_stores("a", hub)
    b = live_stores("b", hub)
    server = start_server(servers, a.spec, b.spec, hub=hub)
    cases: list[tuple[dict[str, Any], dict[str, str], int, str]] = [
        ({"experiment": "nope"}, {}, 404, "no experiment 'nope'"),
        ({"bogus": "1"}, {}, 400, "unknown parameter(s) bogus"),
        ({}, {"Last-Event-ID": "12"}, 400, "name:generation"),
        ({"experiment": "a"}, {"Last-Event-ID": "x:1"}, 400, "does not cover"),
        ({"since": "a:-1"}, {}, 400, "give the id of the last event"),
    ]
    for params, headers, status, message in cases:
        stream = open_stream(streams, server, params=params, headers=headers)
        assert stream.status == status, (params, headers)
        error = json.loads(stream.body)["error"]
        assert message in error["message"], error


def test_closing_the_hub_ends_streams_and_the_server_stops(
    tmp_path: Path, live_stores: Callable[..., LiveStore], streams: list[Stream]
) -> None:
    hub = ChangeHub()
    store = live_stores("exp", hub)
    store.run("train").scalars("loss", {0: 1.0})
    store.commit()
    server = ThreadedServer(create_app([store.spec], hub=hub, stream_heartbeat=60.0))
    server.start()
    stream = open_stream(streams, server)
    stream.opened()
    threads = threading.active_count()
    started = time.monotonic()
    hub.close()  # what `boardd serve` does first when it shuts down
    assert stream.ended.wait(2.0), "the stream did not end"
    server.stop()
    assert time.monotonic() - started < 3.0
    assert stream.error is None
    assert threading.active_count() <= threads


# -- boardd serve, a real subprocess ------------------------------------------------------------


def test_serve_streams_live_writes_and_stops_with_a_stream_open(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    writer = SummaryWriter(str(logdir / "train"), flush_secs=0.05)
    writer.add_scalar("loss", 0.5, 0)
    writer.flush()
    port_file = tmp_path / "port"
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["STATE_DIRECTORY"] = str(tmp_path / "state")
    for name in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS"):
        env.pop(name, None)
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "boardd",
                "serve",
                logdir,
                "--port",
                "0",
                "--port-file",
                port_file,
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    stream: Stream | None = None
    try:
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        url = f"http://127.0.0.1:{int(port_file.read_text())}"
        stream = Stream(url)
        assert stream.status == 200, stream.body
        stream.opened()
        deadline = time.monotonic() + WAIT
        step = 1
        found: Sse | None = None
        while found is None:
            # A point per round until one shows up (the first ones may predate the stream).
            writer.add_scalar("loss", step / 10, step)
            writer.flush()
            for event in stream.quiet(0.5):
                if event.event == "series" and event.data["step"] >= 1:
                    found = event
            assert time.monotonic() < deadline, log_path.read_text()
            step += 1
        assert found.data["run"] == "train"
        assert found.data["tag"] == "loss"
        assert math.isclose(found.data["value"], found.data["step"] / 10, rel_tol=1e-6)

        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert stream.ended.wait(5.0), "the stream was still open 5 s after SIGTERM"
        rc = proc.wait(10)
        stopped = time.monotonic() - started
        print(f"\nboardd serve stopped {stopped:.2f} s after SIGTERM with a stream open")
        assert rc == 0, log_path.read_text()
        assert stopped < 5.0
    finally:
        writer.close()
        if stream is not None:
            stream.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_latency_figures(
    tmp_path: Path,
    live_stores: Callable[..., LiveStore],
    servers: list[ThreadedServer],
    streams: list[Stream],
) -> None:
    """Commit → message latency over 30 commits (printed; the bound asserted is generous)."""
    hub = ChangeHub()
    store = live_stores("exp", hub)
    train = store.run("train")
    train.scalars("loss", {0: 0.0})
    store.commit()
    server = start_server(servers, store.spec, hub=hub)
    stream = open_stream(streams, server)
    stream.opened()
    latencies = []
    for step in range(1, 31):
        train.scalars("loss", {step: float(step)})
        generation = store.commit()
        (event,) = stream.events(1)
        assert event.data["step"] == step
        latencies.append((event.at - store.commits[generation]) * 1e3)
    latencies.sort()
    print(
        f"\ncommit → message over {len(latencies)} commits: "
        f"p50 {statistics.median(latencies):.2f} ms, max {latencies[-1]:.2f} ms"
    )
    assert statistics.median(latencies) < 1000.0


def test_serve_socket_turns_nagle_off() -> None:
    # With Nagle's algorithm on, a message waits for the client's delayed ACK of the previous
    # one (up to 40 ms). asyncio disables it only on sockets created as IPPROTO_TCP.
    import asyncio

    from boardd.daemon.service import bind_socket

    sock = bind_socket("127.0.0.1", 0)
    seen: list[int] = []

    async def main() -> None:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            raw = writer.get_extra_info("socket")
            seen.append(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(accepted, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            while not seen:
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(asyncio.wait_for(main(), WAIT))
    assert seen == [1]


def test_a_store_swapped_in_by_a_rebuild_resets_the_stream(
    live_stores: Callable[..., LiveStore], servers: list[ThreadedServer], streams: list[Stream]
) -> None:
    store = live_stores("exp", None)
    store.run("train").scalars("loss", {step: float(step) for step in range(5)})
    old = store.commit()
    store.close()  # its writer lets go: `boardd ingest --rebuild` takes the store over
    server = start_server(servers, store.spec)
    stream = open_stream(streams, server)
    assert stream.opened() == str(old)
    new = ingest(store.logdir, store.db, {"scalars": 2}, experiment="exp", rebuild=True)
    # The new file counts its commits from 0 again; whether it has reached the old count or
    # not, a cursor into the old file means nothing in it: the client must refetch.
    (event,) = stream.events(1)
    assert event.event == "reset", (old, event)
    connection = open_reader(new.db)
    try:
        assert event.data["generation"] == queries.generation(connection)
    finally:
        connection.close()
    assert event.id == str(event.data["generation"])
