"""Arguments ML Metadata refuses before writing, values the store cannot hold, and the edges of
filter literals and lineage walks: each compared with the real ml-metadata (the oracle), and
the store still readable afterwards."""

from __future__ import annotations

import math
from typing import Any

import pytest

import boardd.metadata as mlmd
from boardd.metadata import errors, metadata_store
from boardd.metadata.proto import metadata_store_pb2 as pb
from tests.metadata.parity import Both


def _types(both: Both) -> tuple[int, int, int]:
    return (
        both.call("put_artifact_type", pb.ArtifactType(name="A")),
        both.call("put_execution_type", pb.ExecutionType(name="E")),
        both.call("put_context_type", pb.ContextType(name="C")),
    )


def test_arguments_of_another_type_are_type_errors_and_write_nothing(both: Both) -> None:
    artifact_type, execution_type, context_type = _types(both)
    wrong: list[tuple[str, tuple[Any, ...]]] = [
        # A message of another class: a context made of an Execution used to be stored.
        ("put_contexts", ([pb.Execution(type_id=context_type, name="n")],)),
        ("put_artifacts", ([pb.Execution(type_id=artifact_type)],)),
        ("put_executions", ([pb.Artifact(type_id=execution_type)],)),
        ("put_artifacts", ([None],)),
        ("put_artifact_type", (pb.ExecutionType(name="E2"),)),
        ("put_events", ([pb.Artifact()],)),
        ("put_attributions_and_associations", ([pb.Event()], [])),
        ("put_parent_contexts", ([pb.Event()],)),
        ("put_execution", (pb.Artifact(type_id=execution_type), [], [])),
        # Ids that are not integers, names that are not strings.
        ("get_artifacts_by_id", (["1"],)),
        ("get_artifacts_by_id", ([1.0],)),
        ("get_events_by_artifact_ids", (["x"],)),
        ("get_artifact_types_by_id", (["1"],)),
        ("get_contexts_by_artifact", ("1",)),
        ("get_artifact_type", (None,)),
        ("get_artifacts_by_type", (5,)),
        ("get_artifacts_by_uri", (5,)),
        ("get_artifacts_by_external_ids", ([5],)),
    ]
    for name, args in wrong:
        outcome, _ = both.outcome(name, *args)
        assert outcome == "TypeError", (name, args, outcome)
    # None as a type is an empty one: refused for its missing name, as MLMD does.
    assert both.outcome("put_artifact_type", None)[0] == "InvalidArgumentError"
    # Nothing was written: the next ids are the same on both, and no context exists.
    assert both.call("get_contexts") == []
    assert both.call("put_contexts", [pb.Context(type_id=context_type, name="c")]) == [1]


def _with_double(type_id: int, value: float) -> pb.Artifact:
    artifact = pb.Artifact(type_id=type_id)
    artifact.custom_properties["x"].double_value = value
    return artifact


def test_a_nan_double_is_refused_and_the_store_stays_readable(both: Both) -> None:
    artifact_type, _, _ = _types(both)
    [kept] = both.call("put_artifacts", [_with_double(artifact_type, 0.5)])
    # SQLite keeps a NaN as NULL: once written, no read of the node could fill its value.
    assert both.outcome("put_artifacts", [_with_double(artifact_type, float("nan"))])[0] == (
        "InternalError"
    )
    update = _with_double(artifact_type, float("nan"))
    update.id = kept
    assert both.outcome("put_artifacts", [update])[0] == "InternalError"
    [artifact] = both.call("get_artifacts")
    assert artifact.custom_properties["x"].double_value == 0.5


def test_infinities_are_kept_where_ml_metadata_refuses_them(
    store: metadata_store.MetadataStore,
) -> None:
    """docs/lineage.md (the differences from ml-metadata): ML Metadata's SQL cannot spell ±inf
    (InternalError); SQLite holds them, so boardd keeps them."""
    artifact_type = store.put_artifact_type(pb.ArtifactType(name="A"))
    ids = store.put_artifacts([_with_double(artifact_type, v) for v in (math.inf, -math.inf)])
    values = [a.custom_properties["x"].double_value for a in store.get_artifacts_by_id(ids)]
    assert values == [math.inf, -math.inf]


def test_a_custom_property_without_a_value_is_refused(store: metadata_store.MetadataStore) -> None:
    """ML Metadata aborts the whole process on it (a CHECK failure), so the oracle cannot be
    asked; a declared property without a value is its InvalidArgumentError, and so is this."""
    artifact_type = store.put_artifact_type(pb.ArtifactType(name="A"))
    artifact = pb.Artifact(type_id=artifact_type)
    artifact.custom_properties["empty"].SetInParent()
    with pytest.raises(errors.InvalidArgumentError, match="no value set: empty"):
        store.put_artifacts([artifact])
    [kept] = store.put_artifacts([pb.Artifact(type_id=artifact_type, uri="u")])
    update = pb.Artifact(id=kept, type_id=artifact_type, uri="u")
    update.custom_properties["empty"].SetInParent()
    with pytest.raises(errors.InvalidArgumentError):
        store.put_artifacts([update])
    assert [a.uri for a in store.get_artifacts()] == ["u"]


@pytest.mark.parametrize(
    "query",
    [
        "id > -9223372036854775808",
        "custom_properties.n.int_value = -9223372036854775808",
        "custom_properties.n.int_value = - 9223372036854775808",
        "id < 9223372036854775808",
        "id <= 18446744073709551615",
        "id != 9223372036854775808",
        "id >= 9223372036854775808",
        "id > -9223372036854775809",
        "id < 18446744073709551616",
        "id + 9223372036854775808 > 0",
        "id IN (1, 9223372036854775808)",
        "id BETWEEN 0 AND 9223372036854775808",
        "9223372036854775808 > id",
        "custom_properties.f.double_value < 9223372036854775808",
        "name < 9223372036854775808",
        "custom_properties.n.int_value = 9223372036854775807",
    ],
)
def test_integer_literals_at_the_int64_limits(both: Both, query: str) -> None:
    """ZetaSQL reads ``-9223372036854775808`` as one INT64 literal and a literal past INT64 as
    a UINT64 (compared with INT64 columns, not cast for arithmetic)."""
    artifact_type, _, _ = _types(both)
    least = pb.Artifact(type_id=artifact_type)
    least.custom_properties["n"].int_value = -(2**63)
    most = pb.Artifact(type_id=artifact_type)
    most.custom_properties["n"].int_value = 2**63 - 1
    both.call("put_artifacts", [least, most])
    both.outcome("get_artifacts", list_options=mlmd.ListOptions(filter_query=query))


def test_a_lineage_walk_starts_from_the_first_101_matching_nodes(both: Both) -> None:
    artifact_type, _, _ = _types(both)
    both.call(
        "put_artifacts",
        [pb.Artifact(type_id=artifact_type, uri="fan" if i % 2 else "x") for i in range(260)],
    )
    options = pb.LineageSubgraphQueryOptions(max_num_hops=0)
    options.starting_artifacts.filter_query = "uri = 'fan'"
    graph = both.call("get_lineage_subgraph", options)
    assert len(graph.artifacts) == 101
    options.ending_artifacts.filter_query = "id > 150"
    both.call("get_lineage_subgraph", options)


@pytest.mark.parametrize(
    "mask", [["nonsense"], ["artifacts", "nonsense"], ["artifacts.id"], ["artifact_types", "x"]]
)
def test_field_mask_paths_that_are_not_graph_fields_are_ignored(
    both: Both, mask: list[str]
) -> None:
    artifact_type, _, _ = _types(both)
    both.call("put_artifacts", [pb.Artifact(type_id=artifact_type, uri="x")])
    options = pb.LineageSubgraphQueryOptions(max_num_hops=1)
    options.starting_artifacts.filter_query = "uri = 'x'"
    both.call("get_lineage_subgraph", options, field_mask_paths=mask)


def test_errors_keep_ml_metadata_names(tmp_path: Any) -> None:
    """``errors.exception_type_from_error_code`` (ML Metadata's name), ``pipeline_asset``, and
    a store file that cannot be opened raising what ML Metadata raises (RuntimeError), which
    is still boardd's UnavailableError."""
    assert errors.exception_type_from_error_code(errors.NOT_FOUND) is errors.NotFoundError
    with pytest.raises(KeyError):
        errors.exception_type_from_error_code(999)
    config = pb.ConnectionConfig()
    config.sqlite.filename_uri = str(tmp_path / "missing" / "lineage.sqlite")
    config.sqlite.connection_mode = pb.SqliteMetadataSourceConfig.READONLY
    with pytest.raises(RuntimeError) as raised:
        metadata_store.MetadataStore(config)
    assert isinstance(raised.value, errors.UnavailableError)
    config.sqlite.connection_mode = pb.SqliteMetadataSourceConfig.READWRITE_OPENCREATE
    config.sqlite.filename_uri = str(tmp_path / "lineage.sqlite")
    with metadata_store.MetadataStore(config) as store:
        assert store.pipeline_asset is None
