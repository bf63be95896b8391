"""Fixtures of the remote-logdir tests: a real S3-compatible server (moto's standalone server,
a subprocess on a free loopback port) behind our counting proxy, and ``boardd serve`` as a
real subprocess watching ``s3://`` URLs through it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.daemon.conftest import Daemon, ServeFactory, serve, wait_until
from tests.remote.s3server import FAKE_ENV, S3, CountingProxy, MotoServer

__all__ = ["FAKE_ENV", "S3", "Daemon", "ServeFactory", "serve", "wait_until"]


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """One moto server per module (each test uses its own bucket)."""
    server = MotoServer(tmp_path_factory.mktemp("moto") / "moto.log")
    yield server
    server.close()


@pytest.fixture
def s3(moto: MotoServer, request: pytest.FixtureRequest) -> Iterator[S3]:
    """A fresh bucket on the module's server, and a counting proxy in front of it."""
    proxy = CountingProxy(moto.port)
    bucket = "b-" + request.node.name.replace("_", "-").lower()[:50].strip("-")
    store = S3(moto, proxy, bucket=bucket)
    yield store
    store.close()
    proxy.close()
