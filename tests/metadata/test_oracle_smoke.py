"""The oracle harness itself, and the first parity check: types and artifacts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from boardd.metadata import errors, metadata_store
from boardd.metadata.proto import metadata_store_pb2 as pb
from tests.metadata.oracle import MlmdOracle, without_times


@pytest.fixture
def oracle() -> Iterator[MlmdOracle]:
    with MlmdOracle() as running:
        yield running


@pytest.fixture
def store() -> Iterator[metadata_store.MetadataStore]:
    config = pb.ConnectionConfig()
    config.fake_database.SetInParent()
    opened = metadata_store.MetadataStore(config)
    yield opened
    opened.close()


def test_types_and_artifacts_match_mlmd(
    oracle: MlmdOracle, store: metadata_store.MetadataStore
) -> None:
    data_type = pb.ArtifactType(name="DataSet")
    data_type.properties["day"] = pb.INT
    data_type.properties["split"] = pb.STRING
    assert store.put_artifact_type(data_type) == oracle.call("put_artifact_type", data_type) == 10

    artifact = pb.Artifact(type_id=10, uri="path/to/data")
    artifact.properties["day"].int_value = 1
    artifact.properties["split"].string_value = "train"
    artifact.custom_properties["note"].double_value = 0.5
    assert store.put_artifacts([artifact]) == oracle.call("put_artifacts", [artifact]) == [1]

    for call, args in [
        ("get_artifacts_by_id", ([1, 2],)),
        ("get_artifact_types", ()),
        ("get_artifact_type", ("DataSet",)),
        ("get_artifacts", ()),
        ("get_artifacts_by_type", ("DataSet",)),
        ("get_artifacts_by_uri", ("path/to/data",)),
    ]:
        ours = getattr(store, call)(*args)
        theirs = oracle.call(call, *args)
        assert without_times(ours) == without_times(theirs), call


def test_errors_come_back_as_our_classes(
    oracle: MlmdOracle, store: metadata_store.MetadataStore
) -> None:
    with pytest.raises(errors.NotFoundError):
        oracle.call("get_artifact_type", "nope")
    with pytest.raises(errors.NotFoundError):
        store.get_artifact_type("nope")
    bad = pb.Artifact(type_id=99)
    with pytest.raises(errors.NotFoundError):
        oracle.call("put_artifacts", [bad])
    with pytest.raises(errors.NotFoundError):
        store.put_artifacts([bad])
