"""Fixtures of the data layer's tests: a real logdir (the API tests' builder), ingested into a
real store, opened read-only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from boardd.data import experiments
from boardd.data.connections import open_store
from tests.api.conftest import ALL, ingest, write_logdir


@pytest.fixture(scope="session")
def data_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store keeping every point of the shared test logdir."""
    root = tmp_path_factory.mktemp("data")
    logdir = write_logdir(root)
    db = root / "all.sqlite"
    ingest(logdir, db, ALL)
    return db


@pytest.fixture
def connection(data_store: Path) -> Iterator[apsw.Connection]:
    """A read-only connection to :func:`data_store`."""
    c = open_store(data_store)
    yield c
    c.close()


@pytest.fixture
def exp_id(connection: apsw.Connection) -> int:
    """The row id of the store's experiment."""
    return experiments.experiment_id(connection, "exp")
