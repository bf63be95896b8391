"""The Python API's arguments, checked as ML Metadata's request messages check them.

ML Metadata copies each argument into a request message, so a wrong argument is a TypeError
there before anything is written: these checks give the same (a message of another class
stored as a context, say, would otherwise slip through). ``MetadataStore`` runs them before it
opens the call's transaction, so a wrong argument fails the same way on a closed store.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from google.protobuf.message import Message

from boardd.metadata import errors
from boardd.metadata.proto import metadata_store_pb2 as pb

M = TypeVar("M", bound=Message)


def message(cls: type[M], value: object, method: str = "CopyFrom") -> M:
    """``value`` if it is a ``cls``; TypeError as protobuf's CopyFrom/MergeFrom words it."""
    if not isinstance(value, cls):
        raise TypeError(
            f"Parameter to {method}() must be instance of same class: expected {cls} got "
            f"{type(value)}."
        )
    return value


def messages(cls: type[M], values: Iterable[object]) -> list[M]:
    return [message(cls, v) for v in values]


def type_message(cls: type[M], value: object) -> M:
    """A type argument: None is an empty type (rejected for its missing name), another class a
    TypeError (as MLMD's MergeFrom)."""
    if value is None:
        empty: M = cls()
        return empty
    return message(cls, value, "MergeFrom")


def one_id(value: object) -> int:
    """An id argument: an integer (``operator.index``: a str or float is a TypeError)."""
    return operator.index(value)  # type: ignore[arg-type]


def ids(values: Iterable[object]) -> list[int]:
    return [one_id(v) for v in values]


def text(value: object) -> str:
    """A string argument (a name, uri, external id)."""
    if not isinstance(value, str):
        raise TypeError("bad argument type for built-in operation")
    return value


def optional_text(value: object) -> str | None:
    return None if value is None else text(value)


def texts(values: Iterable[object] | None) -> list[str]:
    """A list of strings (field mask paths); None is none."""
    return [text(v) for v in values or ()]


def external_ids(values: Iterable[object]) -> list[str]:
    """External ids to look up: strings, none of them empty (InvalidArgumentError)."""
    wanted = [text(v) for v in values]
    if any(not e for e in wanted):
        raise errors.InvalidArgumentError(
            "Invalid argument because at least one empty external_id exists."
        )
    return wanted


def artifact_and_event_pairs(
    artifact_and_events: Iterable[Sequence[Any]],
) -> list[tuple[pb.Artifact | None, pb.Event | None]]:
    """put_execution's ``(artifact, event)`` pairs: an empty pair is skipped, a lone artifact
    has no event, and either side may be None."""
    pairs: list[tuple[pb.Artifact | None, pb.Event | None]] = []
    for pair in artifact_and_events:
        if not pair:
            continue
        artifact = pair[0]
        event = pair[1] if len(pair) == 2 else None
        pairs.append(
            (
                None if artifact is None else message(pb.Artifact, artifact),
                None if event is None else message(pb.Event, event),
            )
        )
    return pairs


def check_event_edges(
    edges: Sequence[tuple[Any, ...]],
    executions: Sequence[pb.Execution],
    artifacts: Sequence[pb.Artifact],
) -> None:
    """MLMD's CheckEventEdges: every edge names its execution and artifact consistently."""
    for edge in edges:
        execution_index, artifact_index, event = edge
        if event is None:
            raise errors.InvalidArgumentError("No event found for event_edge")
        if execution_index is None and not event.HasField("execution_id"):
            raise errors.InvalidArgumentError(
                "Event_edge is missing an execution. Could not find either an "
                "execution_index or an event.execution_id"
            )
        if execution_index is not None:
            if not 0 <= execution_index < len(executions):
                raise errors.OutOfRangeError(
                    f"The event_edge has an execution_index {execution_index} that is outside "
                    f"the bounds of the request's executions list, [0, {len(executions)})"
                )
            if event.HasField("execution_id"):
                execution = executions[execution_index]
                if not execution.HasField("id"):
                    raise errors.InvalidArgumentError(
                        f"Missing execution ID. The referenced execution at execution_index "
                        f"{execution_index} does not have an ID even though the event_edge "
                        f"specifies an event.execution_id of {event.execution_id}"
                    )
                if execution.id != event.execution_id:
                    raise errors.InvalidArgumentError(
                        f"Execution ID mismatch. The referenced execution at execution_index "
                        f"{execution_index} has an ID of {execution.id} that does not match "
                        f"the event_edge's event.execution_id of {event.execution_id}"
                    )
        if artifact_index is None and not event.HasField("artifact_id"):
            raise errors.InvalidArgumentError(
                "Event_edge is missing an artifact. Could not find either an artifact_index "
                "or an event.artifact_id"
            )
        if artifact_index is not None:
            if not 0 <= artifact_index < len(artifacts):
                raise errors.OutOfRangeError(
                    f"The event_edge has an artifact_index {artifact_index} that is outside "
                    f"the bounds of the request's artifacts list, [0, {len(artifacts)})"
                )
            if event.HasField("artifact_id"):
                artifact = artifacts[artifact_index]
                if not artifact.HasField("id"):
                    raise errors.InvalidArgumentError(
                        f"Missing artifact ID. The referenced artifact at artifact_index "
                        f"{artifact_index} does not have an ID even though the event_edge "
                        f"specifies an event.artifact_id of {event.artifact_id}"
                    )
                if artifact.id != event.artifact_id:
                    raise errors.InvalidArgumentError(
                        f"Artifact ID mismatch. The referenced artifact at artifact_index "
                        f"{artifact_index} has an ID of {artifact.id} that does not match the "
                        f"event_edge's event.artifact_id of {event.artifact_id}"
                    )
