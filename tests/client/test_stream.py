"""Client.stream() against a real server: a commit's events, resume after the connection is cut
(mid-commit, through a proxy) or the server restarts, without a lost or repeated event."""

from __future__ import annotations

import math
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from boardd.client import BoarddError, Client, RunEvent, SeriesEvent, StreamEvent
from boardd.store.bus import ChangeHub
from tests.client.conftest import Proxy, Server
from tests.conftest import WAIT, WALL, LiveStore

TAGS = [f"tag{i}" for i in range(6)]


def wait_subscribed(hub: ChangeHub, count: int = 1) -> None:
    """Waits until ``count`` streams are subscribed on ``hub`` (a commit then reaches them)."""
    deadline = time.monotonic() + WAIT
    while len(hub) != count:
        assert time.monotonic() < deadline, f"{len(hub)} streams subscribed, not {count}"
        time.sleep(0.01)


def commit_all(store: LiveStore, steps: range) -> int:
    """Writes ``steps`` of every tag of run ``train`` and commits; the generation."""
    train = store.runs[0] if store.runs else store.run("train")
    for i, tag in enumerate(TAGS):
        train.scalars(tag, {s: s + i / 10 for s in steps})
    return store.commit()


def series_keys(events: list[StreamEvent]) -> list[tuple[str, str, int]]:
    """(run, tag, generation) of the series events."""
    return [(e.run, e.tag, e.generation) for e in events if isinstance(e, SeriesEvent)]


def test_a_commit_arrives_as_typed_events(store: LiveStore, servers: list[Server]) -> None:
    store.run("train").scalars("loss", {0: 1.0})
    start = store.commit()
    server = Server(store.spec, hub=store.hub)
    servers.append(server)
    assert store.hub is not None
    with Client(server.url) as client:
        # From a known cursor: a stream that starts "now" would count commits made before it
        # has read the store's generation as already known.
        stream = client.stream(since=str(start), timeout=WAIT)
        store.run("eval").scalars("loss", {5: math.nan, 6: 2.5})
        generation = store.commit()
        run, series = next(stream), next(stream)
        stream.close()
    assert isinstance(run, RunEvent) and (run.run, run.change) == ("eval", "created")
    assert isinstance(series, SeriesEvent)
    assert (series.experiment, series.run, series.tag, series.plugin) == (
        "exp",
        "eval",
        "loss",
        "scalars",
    )
    assert (series.data_class, series.step, series.wall_time) == ("scalar", 6, WALL + 6)
    assert series.value == 2.5 and series.generation == generation
    assert series.id == str(generation)  # the cursor after the commit
    with pytest.raises(TypeError):
        series.data["step"] = 7
    wait_subscribed(store.hub, 0)  # closing the generator ended the server's subscription


def test_since_starts_after_a_known_event(store: LiveStore, servers: list[Server]) -> None:
    first = commit_all(store, range(0, 3))
    second = commit_all(store, range(3, 6))
    server = Server(store.spec, hub=store.hub)
    servers.append(server)
    with Client(server.url) as client:
        stream = client.stream(since=str(first), timeout=WAIT)
        got = [next(stream) for _ in TAGS]
        stream.close()
        # Everything after `first`, nothing of it: the second commit's six series.
        assert series_keys(got) == [("train", tag, second) for tag in TAGS]
        assert got[-1].id == str(second)
        quiet = list(client.stream(since=str(second), timeout=1.0))
        assert quiet == []


def take(stream: Iterator[StreamEvent], count: int) -> list[StreamEvent]:
    """The next ``count`` events of ``stream``."""
    return [next(stream) for _ in range(count)]


def test_resume_after_a_cut_mid_commit_gives_each_event_once(
    store: LiveStore, servers: list[Server], proxies: list[Proxy]
) -> None:
    start = commit_all(store, range(0, 2))
    server = Server(store.spec, hub=store.hub)
    servers.append(server)
    proxy = Proxy(server.port)
    proxies.append(proxy)
    with Client(proxy.url) as client:
        stream = client.stream(since=str(start), timeout=WAIT * 3, backoff=0.05)
        first = commit_all(store, range(2, 4))
        assert series_keys(take(stream, len(TAGS))) == [("train", tag, first) for tag in TAGS]

        # The server sends the next commit's six events at once; the proxy lets two through
        # and cuts the connection. The client comes back with the id of the last event it
        # yielded (the previous cursor: the commit was not complete), the server sends the
        # whole commit again, and the client yields the four it had not.
        proxy.cut_after_events(2)
        second = commit_all(store, range(4, 6))
        got = take(stream, len(TAGS))
        assert proxy.cuts == 1 and proxy.accepted == 2
        assert sorted(series_keys(got)) == [("train", tag, second) for tag in TAGS]
        assert got[-1].id == str(second)

        # Nothing of the second commit comes again: next come the third's events.
        third = commit_all(store, range(6, 8))
        got = take(stream, len(TAGS))
        assert series_keys(got) == [("train", tag, third) for tag in TAGS]
        stream.close()
        assert list(client.stream(since=got[-1].id, timeout=0.5)) == []


def test_resume_after_a_server_restart(store: LiveStore, servers: list[Server]) -> None:
    # Another process's view: no hub, the app watches the store. The server goes away, commits
    # happen meanwhile, a new server comes up on the same port a second later: the client
    # retries until it is there and gets what it missed, once.
    start = commit_all(store, range(0, 2))
    server = Server(store.spec)
    servers.append(server)
    with Client(server.url) as client:
        stream = client.stream(since=str(start), timeout=WAIT * 3, backoff=0.1, retries=20)
        second = commit_all(store, range(2, 4))
        assert series_keys(take(stream, len(TAGS))) == [("train", tag, second) for tag in TAGS]

        server.stop()
        third = commit_all(store, range(4, 6))
        fourth = commit_all(store, range(6, 8))
        restart = threading.Timer(1.0, lambda: servers.append(Server(store.spec, port=server.port)))
        restart.start()
        got = take(stream, len(TAGS))
        restart.join()
        # Missed while away, coalesced: each series once, in its state now.
        assert series_keys(got) == [("train", tag, fourth) for tag in TAGS]
        assert all(e.step == 7 for e in got if isinstance(e, SeriesEvent))
        assert got[-1].id == str(fourth)
        assert len(servers[-1].recorder.connections("/api/v1/stream")) == 1
        fifth = commit_all(store, range(8, 10))
        assert series_keys(take(stream, len(TAGS))) == [("train", tag, fifth) for tag in TAGS]
        stream.close()
    assert start < second < third < fourth < fifth


def test_retries_are_bounded() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    started = time.monotonic()
    with (
        Client(f"http://127.0.0.1:{port}", timeout=2) as client,
        pytest.raises(BoarddError) as raised,
    ):
        next(client.stream(retries=3, backoff=0.1))
    # Waits of 0.1, 0.2 and 0.4 s between the four attempts.
    assert time.monotonic() - started >= 0.7
    assert (raised.value.status, raised.value.code) == (0, "unreachable")


def test_error_answers_are_not_retried(store: LiveStore, servers: list[Server]) -> None:
    store.commit()
    server = Server(store.spec)
    servers.append(server)
    with Client(server.url) as client:
        with pytest.raises(BoarddError) as raised:
            next(client.stream(["nope"]))
        assert (raised.value.status, raised.value.code) == (404, "not_found")
        with pytest.raises(BoarddError) as raised:
            next(client.stream(since="not-a-cursor"))
        assert raised.value.status == 400
        with pytest.raises(TypeError):
            client.stream("exp")
    assert len(server.recorder.seen) == 2


def test_a_timeout_ends_the_stream(store: LiveStore, servers: list[Server]) -> None:
    store.commit()
    server = Server(store.spec, hub=store.hub)
    servers.append(server)
    assert store.hub is not None
    with Client(server.url) as client:
        started = time.monotonic()
        assert list(client.stream(timeout=0.5)) == []
        assert 0.5 <= time.monotonic() - started < WAIT
    wait_subscribed(store.hub, 0)  # the connection went, and the server's subscription
