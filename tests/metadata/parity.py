"""Run one call on boardd's store and on ml-metadata's, and compare the answers.

``Both(store, oracle).call(name, *args, **kwargs)`` returns boardd's result after checking
that MLMD gave the same one (timestamps aside; the repeated fields of a LineageGraph, which
MLMD fills from hash sets, as sorted) or raised the same error class.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from boardd.metadata import errors, metadata_store
from boardd.metadata.proto import metadata_store_pb2 as pb
from tests.metadata.oracle import MlmdOracle, OracleCallError, without_times


def normalized(value: Any) -> Any:
    """without_times, with a LineageGraph's repeated fields sorted (their order is MLMD's
    hash-set order, not part of the API)."""
    value = without_times(value)
    if isinstance(value, pb.LineageGraph):
        graph = pb.LineageGraph()
        for field in pb.LineageGraph.DESCRIPTOR.fields:
            items = sorted(
                getattr(value, field.name), key=lambda m: m.SerializeToString(deterministic=True)
            )
            getattr(graph, field.name).extend(items)
        return graph
    return value


def _status_class(exc: errors.StatusError) -> str:
    """The name of the error's class among MLMD's (errors.*): a subclass of boardd's own, say
    UnstorableValueError, is the InternalError it extends."""
    for klass in type(exc).__mro__:
        if klass.__module__ == errors.__name__:
            return klass.__name__
    return type(exc).__name__


def _outcome_of(function: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", function(*args, **kwargs)
    except errors.StatusError as exc:
        return _status_class(exc), exc
    except OracleCallError as exc:
        return exc.name, exc
    except (TypeError, ValueError, AttributeError) as exc:
        return type(exc).__name__, exc


def describe(value: Any) -> str:
    if isinstance(value, Message):
        return f"{type(value).__name__}({value})".replace("\n", " ")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    return repr(value)


class Mismatch(AssertionError):
    """boardd and MLMD answered one call differently."""


class Both:
    """boardd's MetadataStore and MLMD's, called alike and compared call by call."""

    def __init__(self, store: metadata_store.MetadataStore, oracle: MlmdOracle) -> None:
        self.store = store
        self.oracle = oracle
        self.calls = 0

    def outcome(self, name: str, *args: Any, **kwargs: Any) -> tuple[str, Any]:
        """Calls both and compares; returns (outcome, boardd's value or exception)."""
        self.calls += 1
        ours = _outcome_of(getattr(self.store, name), *args, **kwargs)
        theirs = _outcome_of(self.oracle.call, name, *args, **kwargs)
        where = f"call #{self.calls} {name}"
        arguments = f"{describe(list(args))}, {kwargs}"[:1500]
        if ours[0] != theirs[0]:
            raise Mismatch(
                f"{where}: boardd {ours[0]} {ours[1]!s:.300} / MLMD {theirs[0]} "
                f"{theirs[1]!s:.300}\n  arguments: {arguments}"
            )
        if ours[0] == "ok" and normalized(ours[1]) != normalized(theirs[1]):
            raise Mismatch(
                f"{where}:\n  boardd: {describe(normalized(ours[1]))[:3000]}\n"
                f"  MLMD:   {describe(normalized(theirs[1]))[:3000]}\n  arguments: {arguments}"
            )
        return ours

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Calls both; the same answer, or the same error class raised (boardd's)."""
        kind, value = self.outcome(name, *args, **kwargs)
        if kind != "ok":
            raise value
        return value
