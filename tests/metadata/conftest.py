"""Fixtures of the lineage-store tests: boardd's store, MLMD's (the oracle), and both."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from boardd.metadata import metadata_store
from boardd.metadata.proto import metadata_store_pb2 as pb
from tests.metadata.oracle import MlmdOracle
from tests.metadata.parity import Both


def fake_config() -> pb.ConnectionConfig:
    """An in-memory store's ConnectionConfig."""
    config = pb.ConnectionConfig()
    config.fake_database.SetInParent()
    return config


@pytest.fixture
def store() -> Iterator[metadata_store.MetadataStore]:
    """boardd's store, in memory."""
    opened = metadata_store.MetadataStore(fake_config())
    yield opened
    opened.close()


@pytest.fixture
def oracle() -> Iterator[MlmdOracle]:
    """ml-metadata's store, in memory, in its own venv."""
    with MlmdOracle() as running:
        yield running


@pytest.fixture
def both(store: metadata_store.MetadataStore, oracle: MlmdOracle) -> Both:
    """Both stores, called alike and compared call by call."""
    return Both(store, oracle)
