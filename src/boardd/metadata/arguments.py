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
        _check_edge_end(event, "execution", execution_index, executions)
        _check_edge_end(event, "artifact", artifact_index, artifacts)


def _check_edge_end(event: pb.Event, noun: str, index: int | None, given: Sequence[Any]) -> None:
    """One end of an event edge: an index into the nodes ``given`` or the event's own id of
    the ``noun`` ("execution" or "artifact"), and both alike when both are there."""
    event_field = f"{noun}_id"
    if index is None:
        if not event.HasField(event_field):
            raise errors.InvalidArgumentError(
                f"Event_edge is missing an {noun}. Could not find either an {noun}_index or an "
                f"event.{event_field}"
            )
        return
    if not 0 <= index < len(given):
        raise errors.OutOfRangeError(
            f"The event_edge has an {noun}_index {index} that is outside the bounds of the "
            f"request's {noun}s list, [0, {len(given)})"
        )
    if event.HasField(event_field):
        node = given[index]
        event_id = getattr(event, event_field)
        if not node.HasField("id"):
            raise errors.InvalidArgumentError(
                f"Missing {noun} ID. The referenced {noun} at {noun}_index {index} does not have "
                f"an ID even though the event_edge specifies an event.{event_field} of {event_id}"
            )
        if node.id != event_id:
            raise errors.InvalidArgumentError(
                f"{noun.capitalize()} ID mismatch. The referenced {noun} at {noun}_index {index} "
                f"has an ID of {node.id} that does not match the event_edge's "
                f"event.{event_field} of {event_id}"
            )
