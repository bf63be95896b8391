"""The client's HTTP: one kept-alive connection for many calls, gzip negotiated, close() — as
the server (boardd's real one) sees them."""

from __future__ import annotations

import gc
import threading

import pytest

from boardd.client import Client
from tests.client.conftest import Server
from tests.conftest import LiveStore

POINTS = 400


@pytest.fixture
def server(store: LiveStore, servers: list[Server]) -> Server:
    """A store with one run of two scalar series, served."""
    train = store.run("train")
    train.scalars("loss", {s: 1.0 / (1 + s) for s in range(POINTS)})
    train.scalars("acc", {s: s / POINTS for s in range(POINTS)})
    store.commit()
    made = Server(store.spec)
    servers.append(made)
    return made


def test_calls_share_one_connection(server: Server) -> None:
    with Client(server.url) as client:
        for _ in range(3):
            assert [r.name for r in client.runs()] == ["train"]
            assert len(client.scalars("train", "loss")) == POINTS
        client.health()
    # Seven requests, one TCP connection (one client port) as the server saw them.
    assert len(server.recorder.seen) == 7
    assert len(server.recorder.connections()) == 1


def test_each_client_has_its_own_connections(server: Server) -> None:
    # The count above can tell connections apart: two clients are two connections.
    with Client(server.url) as one, Client(server.url) as two:
        one.runs()
        two.runs()
        one.runs()
    assert len(server.recorder.connections()) == 2


def test_threads_share_a_client(server: Server) -> None:
    errors: list[BaseException] = []

    with Client(server.url) as client:

        def read() -> None:
            try:
                for _ in range(5):
                    assert len(client.scalars("train", "acc")) == POINTS
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=read) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors
    # At most one connection per thread: the pool reuses them.
    assert len(server.recorder.connections()) <= 4


def test_gzip_is_negotiated(server: Server) -> None:
    with Client(server.url) as client:
        loss = client.scalars("train", "loss")
    assert loss.steps.tolist() == list(range(POINTS))
    assert loss.values[10] == pytest.approx(1.0 / 11)
    [seen] = [s for s in server.recorder.seen if s.path == "/api/v1/scalars"]
    assert "gzip" in seen.accept_encoding
    assert seen.content_encoding == "gzip"


def test_close_is_idempotent_and_final(server: Server) -> None:
    client = Client(server.url)
    client.runs()
    assert not client.closed
    client.close()
    client.close()
    assert client.closed
    with pytest.raises(RuntimeError):
        client.runs()
    with Client(server.url) as managed:
        managed.runs()
    assert managed.closed


def test_a_dropped_client_closes_its_connection(server: Server) -> None:
    # No close(): the connection still goes when the client does (pytest turns the
    # ResourceWarning of a socket left open into an error).
    assert [r.name for r in Client(server.url).runs()] == ["train"]
    gc.collect()
