"""Error parity: each way a call can fail, on boardd and MLMD — the same exception class, and
nothing written by the failed call (the next ids are the same on both)."""

from __future__ import annotations

from typing import Any

import pytest

import boardd.metadata as mlmd
from boardd.metadata.proto import metadata_store_pb2 as pb
from tests.metadata.parity import Both


def _setup(both: Both) -> dict[str, int]:
    """Types (ids 10, 11, 12), two artifacts, an execution and two contexts."""
    artifact_type = pb.ArtifactType(name="Data", external_id="data-type")
    artifact_type.properties["day"] = pb.INT
    execution_type = pb.ExecutionType(name="Run")
    execution_type.properties["state"] = pb.STRING
    context_type = pb.ContextType(name="Exp")
    ids = {
        "artifact_type": both.call("put_artifact_type", artifact_type),
        "execution_type": both.call("put_execution_type", execution_type),
        "context_type": both.call("put_context_type", context_type),
    }
    a1, a2 = both.call(
        "put_artifacts",
        [
            pb.Artifact(type_id=ids["artifact_type"], name="a1", external_id="ext-a1"),
            pb.Artifact(type_id=ids["artifact_type"], name="a2"),
        ],
    )
    [e1] = both.call("put_executions", [pb.Execution(type_id=ids["execution_type"], name="e1")])
    c1, c2 = both.call(
        "put_contexts",
        [
            pb.Context(type_id=ids["context_type"], name="c1"),
            pb.Context(type_id=ids["context_type"], name="c2"),
        ],
    )
    both.call("put_parent_contexts", [pb.ParentContext(child_id=c2, parent_id=c1)])
    both.call(
        "put_events",
        [pb.Event(artifact_id=a1, execution_id=e1, type=pb.Event.INPUT)],
    )
    ids.update(a1=a1, a2=a2, e1=e1, c1=c1, c2=c2)
    return ids


def _typed(name: str = "Data", **properties: int) -> pb.ArtifactType:
    message = pb.ArtifactType(name=name)
    for name, data_type in properties.items():
        message.properties[name] = data_type
    return message


def _artifact(type_id: int, **values: Any) -> pb.Artifact:
    artifact = pb.Artifact(type_id=type_id)
    for name, value in values.items():
        if isinstance(value, bool):
            artifact.properties[name].bool_value = value
        elif isinstance(value, int):
            artifact.properties[name].int_value = value
        else:
            artifact.properties[name].string_value = value
    return artifact


CASES: list[tuple[str, str, Any]] = [
    # (case, expected error class, call(ids) -> (name, args, kwargs))
    (
        "type without a name",
        "InvalidArgumentError",
        lambda i: ("put_artifact_type", (pb.ArtifactType(),), {}),
    ),
    (
        "type with an UNKNOWN property",
        "InvalidArgumentError",
        lambda i: ("put_artifact_type", (_typed("Fresh", x=pb.UNKNOWN),), {}),
    ),
    (
        "type property changes value type",
        "AlreadyExistsError",
        lambda i: ("put_artifact_type", (_typed(day=pb.STRING),), {}),
    ),
    (
        "type gains a property without can_add_fields",
        "AlreadyExistsError",
        lambda i: ("put_artifact_type", (_typed(day=pb.INT, more=pb.INT),), {}),
    ),
    (
        "type loses a property without can_omit_fields",
        "AlreadyExistsError",
        lambda i: ("put_artifact_type", (_typed(),), {}),
    ),
    (
        "type base_type unset",
        "UnimplementedError",
        lambda i: ("put_artifact_type", (pb.ArtifactType(name="Fresh", base_type=0),), {}),
    ),
    (
        "type external id taken by the same kind",
        "AlreadyExistsError",
        lambda i: (
            "put_artifact_type",
            (pb.ArtifactType(name="Other", external_id="data-type"),),
            {},
        ),
    ),
    (
        "type external id taken by another kind",
        "InternalError",
        lambda i: (
            "put_context_type",
            (pb.ContextType(name="Other", external_id="data-type"),),
            {},
        ),
    ),
    ("unknown type name", "NotFoundError", lambda i: ("get_artifact_type", ("Nope",), {})),
    (
        "artifact without a type",
        "InvalidArgumentError",
        lambda i: ("put_artifacts", ([pb.Artifact(uri="u")],), {}),
    ),
    (
        "artifact of an unknown type",
        "NotFoundError",
        lambda i: ("put_artifacts", ([pb.Artifact(type_id=99)],), {}),
    ),
    (
        "artifact of an execution type",
        "NotFoundError",
        lambda i: ("put_artifacts", ([pb.Artifact(type_id=i["execution_type"])],), {}),
    ),
    (
        "artifact with an undeclared property",
        "InvalidArgumentError",
        lambda i: ("put_artifacts", ([_artifact(i["artifact_type"], nope=1)],), {}),
    ),
    (
        "artifact with a property of the wrong type",
        "InvalidArgumentError",
        lambda i: ("put_artifacts", ([_artifact(i["artifact_type"], day="monday")],), {}),
    ),
    (
        "artifact name taken in its type",
        "AlreadyExistsError",
        lambda i: ("put_artifacts", ([pb.Artifact(type_id=i["artifact_type"], name="a1")],), {}),
    ),
    (
        "artifact external id taken",
        "AlreadyExistsError",
        lambda i: (
            "put_artifacts",
            ([pb.Artifact(type_id=i["artifact_type"], external_id="ext-a1")],),
            {},
        ),
    ),
    (
        "second artifact of a batch fails: the first is not kept",
        "AlreadyExistsError",
        lambda i: (
            "put_artifacts",
            (
                [
                    pb.Artifact(type_id=i["artifact_type"], name="a9"),
                    pb.Artifact(type_id=i["artifact_type"], name="a1"),
                ],
            ),
            {},
        ),
    ),
    (
        "update of an unknown id",
        "InvalidArgumentError",
        lambda i: ("put_artifacts", ([pb.Artifact(id=99, type_id=i["artifact_type"])],), {}),
    ),
    (
        "update that changes the type",
        "InvalidArgumentError",
        lambda i: ("put_artifacts", ([pb.Artifact(id=i["a1"], type_id=i["execution_type"])],), {}),
    ),
    (
        "update to a taken external id",
        "InternalError",
        lambda i: ("put_artifacts", ([pb.Artifact(id=i["a2"], external_id="ext-a1")],), {}),
    ),
    (
        "context without a name",
        "InvalidArgumentError",
        lambda i: ("put_contexts", ([pb.Context(type_id=i["context_type"])],), {}),
    ),
    (
        "context name taken",
        "AlreadyExistsError",
        lambda i: ("put_contexts", ([pb.Context(type_id=i["context_type"], name="c1")],), {}),
    ),
    (
        "event without a type",
        "InvalidArgumentError",
        lambda i: ("put_events", ([pb.Event(artifact_id=i["a1"], execution_id=i["e1"])],), {}),
    ),
    (
        "event without an artifact",
        "InvalidArgumentError",
        lambda i: ("put_events", ([pb.Event(execution_id=i["e1"], type=pb.Event.INPUT)],), {}),
    ),
    (
        "event of an unknown execution",
        "InvalidArgumentError",
        lambda i: (
            "put_events",
            ([pb.Event(artifact_id=i["a1"], execution_id=99, type=pb.Event.INPUT)],),
            {},
        ),
    ),
    (
        "event recorded twice",
        "AlreadyExistsError",
        lambda i: (
            "put_events",
            ([pb.Event(artifact_id=i["a1"], execution_id=i["e1"], type=pb.Event.INPUT)],),
            {},
        ),
    ),
    (
        "attribution to an unknown context",
        "InvalidArgumentError",
        lambda i: (
            "put_attributions_and_associations",
            ([pb.Attribution(artifact_id=i["a1"], context_id=99)], []),
            {},
        ),
    ),
    (
        "association of an unknown execution",
        "InvalidArgumentError",
        lambda i: (
            "put_attributions_and_associations",
            ([], [pb.Association(execution_id=99, context_id=i["c1"])]),
            {},
        ),
    ),
    (
        "attribution without a context",
        "InvalidArgumentError",
        lambda i: (
            "put_attributions_and_associations",
            ([pb.Attribution(artifact_id=i["a1"])], []),
            {},
        ),
    ),
    (
        "parent context link exists",
        "AlreadyExistsError",
        lambda i: (
            "put_parent_contexts",
            ([pb.ParentContext(child_id=i["c2"], parent_id=i["c1"])],),
            {},
        ),
    ),
    (
        "parent context cycle",
        "InvalidArgumentError",
        lambda i: (
            "put_parent_contexts",
            ([pb.ParentContext(child_id=i["c1"], parent_id=i["c2"])],),
            {},
        ),
    ),
    (
        "parent context of itself",
        "InvalidArgumentError",
        lambda i: (
            "put_parent_contexts",
            ([pb.ParentContext(child_id=i["c1"], parent_id=i["c1"])],),
            {},
        ),
    ),
    (
        "parent context unknown",
        "InvalidArgumentError",
        lambda i: (
            "put_parent_contexts",
            ([pb.ParentContext(child_id=i["c1"], parent_id=99)],),
            {},
        ),
    ),
    (
        "put_execution event names another execution",
        "InvalidArgumentError",
        lambda i: (
            "put_execution",
            (
                pb.Execution(type_id=i["execution_type"]),
                [
                    (
                        pb.Artifact(type_id=i["artifact_type"]),
                        pb.Event(execution_id=99, type=pb.Event.OUTPUT),
                    )
                ],
                [],
            ),
            {},
        ),
    ),
    (
        "put_execution event without an artifact",
        "InvalidArgumentError",
        lambda i: (
            "put_execution",
            (
                pb.Execution(type_id=i["execution_type"]),
                [(None, pb.Event(type=pb.Event.OUTPUT))],
                [],
            ),
            {},
        ),
    ),
    (
        "put_execution forced reuse of an unknown context",
        "NotFoundError",
        lambda i: (
            "put_execution",
            (
                pb.Execution(type_id=i["execution_type"]),
                [],
                [pb.Context(id=99, type_id=i["context_type"], name="x")],
            ),
            {"force_reuse_context": True},
        ),
    ),
    (
        "put_execution reused context of a racing writer",
        "AlreadyExistsError",
        lambda i: (
            "put_execution",
            (
                pb.Execution(type_id=i["execution_type"]),
                [],
                [pb.Context(type_id=i["context_type"], name="c1")],
            ),
            {},
        ),
    ),
    (
        "put_lineage_subgraph artifact index out of range",
        "OutOfRangeError",
        lambda i: (
            "put_lineage_subgraph",
            (
                [pb.Execution(type_id=i["execution_type"])],
                [],
                [],
                [(0, 3, pb.Event(type=pb.Event.INPUT))],
            ),
            {},
        ),
    ),
    (
        "put_lineage_subgraph edge without an execution",
        "InvalidArgumentError",
        lambda i: (
            "put_lineage_subgraph",
            ([], [], [], [(None, None, pb.Event(type=pb.Event.INPUT))]),
            {},
        ),
    ),
    (
        "put_lineage_subgraph node without a type",
        "InvalidArgumentError",
        lambda i: ("put_lineage_subgraph", ([], [pb.Artifact(uri="u")], [], []), {}),
    ),
    (
        "list limit below 1",
        "InvalidArgumentError",
        lambda i: ("get_artifacts", (), {"list_options": mlmd.ListOptions(limit=-1)}),
    ),
    (
        "empty external id",
        "InvalidArgumentError",
        lambda i: ("get_artifacts_by_external_ids", ([""],), {}),
    ),
    (
        "no artifact of these external ids",
        "NotFoundError",
        lambda i: ("get_artifacts_by_external_ids", (["nope"],), {}),
    ),
    (
        "no type of these external ids",
        "NotFoundError",
        lambda i: ("get_execution_types_by_external_ids", (["nope"],), {}),
    ),
    (
        "contexts of an artifact in none",
        "NotFoundError",
        lambda i: ("get_contexts_by_artifact", (i["a2"],), {}),
    ),
    (
        "contexts of an execution in none",
        "NotFoundError",
        lambda i: ("get_contexts_by_execution", (i["e1"],), {}),
    ),
]


@pytest.mark.parametrize(("case", "expected", "make"), CASES, ids=[c[0] for c in CASES])
def test_same_error_as_mlmd(both: Both, case: str, expected: str, make: Any) -> None:
    ids = _setup(both)
    name, args, kwargs = make(ids)
    outcome, _ = both.outcome(name, *args, **kwargs)
    assert outcome == expected, case
    # Nothing of the failed call stayed: the next records get the same ids on both stores.
    both.call("put_artifacts", [pb.Artifact(type_id=ids["artifact_type"], uri="after")])
    both.call("put_executions", [pb.Execution(type_id=ids["execution_type"])])
    both.call("get_artifacts")
    both.call("get_contexts")
    both.call("get_artifact_types")
    both.call("get_events_by_execution_ids", [ids["e1"]])
