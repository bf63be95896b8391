"""Ids parity: MLMD's simple system types take type ids 1-9, so the first user type is 10 on
both stores, whatever kind; node and type ids are never reused after a failed call."""

from __future__ import annotations

from pathlib import Path

import apsw

from boardd.metadata.proto import metadata_store_pb2 as pb
from boardd.metadata.schema import SYSTEM_TYPES
from tests.metadata.oracle import MlmdOracle
from tests.metadata.parity import Both


def test_system_types_are_mlmds(tmp_path: Path) -> None:
    """The nine simple types, in MLMD's order, as MLMD 1.17.1 writes them in its own file."""
    with MlmdOracle(tmp_path / "mlmd.sqlite") as oracle:
        oracle.call("get_artifact_types")  # the store exists once the runner answers
        connection = apsw.Connection(str(tmp_path / "mlmd.sqlite"))
        try:
            rows = list(connection.execute("SELECT id, name, type_kind FROM Type ORDER BY id"))
        finally:
            connection.close()
    assert rows == [(i + 1, name, kind) for i, (name, kind) in enumerate(SYSTEM_TYPES)]


def test_type_ids_start_after_the_system_types_and_are_shared_by_kinds(both: Both) -> None:
    assert both.call("put_context_type", pb.ContextType(name="Exp")) == 10
    assert both.call("put_artifact_type", pb.ArtifactType(name="Data")) == 11
    assert both.call("put_execution_type", pb.ExecutionType(name="Run")) == 12
    # The system types are hidden from the type lists, but a base type links to them.
    both.call("get_artifact_types")
    both.call("get_execution_types")
    model = pb.ArtifactType(name="Model", base_type=pb.ArtifactType.MODEL)
    assert both.call("put_artifact_type", model) == 13
    both.call("get_artifact_type", "Model")
    both.call("get_artifact_types_by_id", [13, 2, 11, 13, 99])
    both.call("get_artifact_type", "mlmd.Model")


def test_ids_after_failed_calls(both: Both) -> None:
    type_id = both.call("put_artifact_type", pb.ArtifactType(name="Data"))
    good = pb.Artifact(type_id=type_id, name="a")
    assert both.call("put_artifacts", [good]) == [1]
    # A batch whose last artifact fails writes nothing, and takes no id.
    outcome, _ = both.outcome(
        "put_artifacts", [pb.Artifact(type_id=type_id, name="b"), pb.Artifact(type_id=99)]
    )
    assert outcome == "NotFoundError"
    assert both.call("put_artifacts", [pb.Artifact(type_id=type_id, name="b")]) == [2]
    outcome, _ = both.outcome("put_artifact_type", pb.ArtifactType(name="Bad", properties={"x": 0}))
    assert outcome == "InvalidArgumentError"
    assert both.call("put_artifact_type", pb.ArtifactType(name="Next")) == type_id + 1
