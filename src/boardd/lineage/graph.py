"""Lineage read from the store through MLMD's public API: the graph around an artifact (for a
dashboard to draw) and the chain from a file back to the run that wrote it, its hparams and
its data (``boardd lineage``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from google.protobuf import json_format

from boardd.lineage import vocabulary

#: Event types that make an artifact an input of the execution, and an output.
_INPUTS = frozenset({"INPUT", "DECLARED_INPUT", "INTERNAL_INPUT"})
_OUTPUTS = frozenset({"OUTPUT", "DECLARED_OUTPUT", "INTERNAL_OUTPUT", "PENDING_OUTPUT"})
#: The most hops a graph request may ask for.
MAX_HOPS = 20
#: The most nodes a graph answer holds (it says when it stopped there).
MAX_NODES = 2000


class LineageNotFound(LookupError):
    """No artifact has that id or URI."""


def found(call: Callable[..., list[Any]], *args: Any) -> list[Any]:
    """``call(*args)``, or [] where ML Metadata answers "none" with NotFoundError (its
    lookups by external ids do)."""
    from boardd.metadata import errors

    try:
        return call(*args)
    except errors.NotFoundError:
        return []


def value_of(value: Any) -> object:
    """An MLMD Value as a plain Python value (struct and proto values as JSON objects)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which in ("struct_value", "proto_value"):
        return json_format.MessageToDict(getattr(value, which))
    return getattr(value, which)


def properties_of(message: Any) -> dict[str, object]:
    """A node's properties as plain values, by name."""
    return {k: value_of(v) for k, v in sorted(message.properties.items())}


def custom_properties_of(message: Any) -> dict[str, object]:
    """A node's custom properties as plain values, by name."""
    return {k: value_of(v) for k, v in sorted(message.custom_properties.items())}


def _event_type(store_pb: Any, number: int) -> str:
    return str(store_pb.Event.Type.Name(number))


def _type_names(store: Any, kind: str, ids: Iterable[int]) -> dict[int, str]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    get = store.get_artifact_types_by_id if kind == "artifact" else store.get_execution_types_by_id
    return {t.id: t.name for t in found(get, wanted)}


def _node(kind: str, message: Any, type_name: str, state: str) -> dict[str, Any]:
    node: dict[str, Any] = {
        "id": f"{kind}:{message.id}",
        "kind": kind,
        "record_id": message.id,
        "type": type_name,
        "name": message.name,
        "state": state,
        "properties": properties_of(message),
        "custom_properties": custom_properties_of(message),
        "boardd": vocabulary.is_ours(message.external_id),
    }
    if kind == "artifact":
        node["uri"] = message.uri
    return node


def lineage_graph(store: Any, artifact_id: int, hops: int) -> dict[str, Any]:
    """The artifacts and executions within ``hops`` events of an artifact, both ways (nodes
    with their type, state and properties; edges from producer to consumer: execution →
    artifact for outputs, artifact → execution for inputs). ``truncated`` says whether
    :data:`MAX_NODES` stopped the walk."""
    from boardd.metadata.proto import metadata_store_pb2 as pb

    start = found(store.get_artifacts_by_id, [artifact_id])
    if not start:
        raise LineageNotFound(f"no artifact has id {artifact_id}")
    artifacts: dict[int, Any] = {artifact_id: start[0]}
    executions: dict[int, Any] = {}
    edges: dict[tuple[int, int, str], dict[str, Any]] = {}
    frontier_a: set[int] = {artifact_id}
    frontier_e: set[int] = set()
    truncated = False
    for _ in range(hops):
        if not frontier_a and not frontier_e:
            break
        events = []
        if frontier_a:
            events += found(store.get_events_by_artifact_ids, sorted(frontier_a))
        if frontier_e:
            events += found(store.get_events_by_execution_ids, sorted(frontier_e))
        new_a: set[int] = set()
        new_e: set[int] = set()
        for event in events:
            if len(artifacts) + len(executions) + len(new_a) + len(new_e) >= MAX_NODES:
                truncated = True
                break
            kind = _event_type(pb, event.type)
            a, e = event.artifact_id, event.execution_id
            if kind in _INPUTS:
                edge = {"source": f"artifact:{a}", "target": f"execution:{e}", "type": kind}
            else:
                edge = {"source": f"execution:{e}", "target": f"artifact:{a}", "type": kind}
            edges[(a, e, kind)] = edge
            if a not in artifacts:
                new_a.add(a)
            if e not in executions:
                new_e.add(e)
        for a in found(store.get_artifacts_by_id, sorted(new_a)) if new_a else []:
            artifacts[a.id] = a
        for e in found(store.get_executions_by_id, sorted(new_e)) if new_e else []:
            executions[e.id] = e
        frontier_a, frontier_e = new_a, new_e
        if truncated:
            break
    a_types = _type_names(store, "artifact", (a.type_id for a in artifacts.values()))
    e_types = _type_names(store, "execution", (e.type_id for e in executions.values()))
    nodes = [
        _node("artifact", a, a_types.get(a.type_id, ""), pb.Artifact.State.Name(a.state))
        for _, a in sorted(artifacts.items())
    ] + [
        _node(
            "execution",
            e,
            e_types.get(e.type_id, ""),
            pb.Execution.State.Name(e.last_known_state),
        )
        for _, e in sorted(executions.items())
    ]
    known = {n["id"] for n in nodes}
    return {
        "root": f"artifact:{artifact_id}",
        "hops": hops,
        "nodes": nodes,
        "edges": [
            edge
            for _, edge in sorted(edges.items())
            if edge["source"] in known and edge["target"] in known
        ],
        "truncated": truncated,
    }


def artifacts_for(store: Any, path_or_uri: str) -> list[Any]:
    """The artifacts whose URI is ``path_or_uri`` or, for a path, its absolute form."""
    import os

    candidates = [path_or_uri]
    if "://" not in path_or_uri and "\x00" not in path_or_uri:  # no path holds a NUL
        candidates.append(os.path.abspath(os.path.expanduser(path_or_uri)))
        candidates.append(os.path.realpath(os.path.expanduser(path_or_uri)))
    elif path_or_uri.startswith("file://"):
        candidates.append(path_or_uri[len("file://") :])
    seen: dict[int, Any] = {}
    for uri in dict.fromkeys(candidates):
        for artifact in found(store.get_artifacts_by_uri, uri):
            seen.setdefault(artifact.id, artifact)
    return [seen[k] for k in sorted(seen)]


def chain(store: Any, path_or_uri: str) -> list[dict[str, Any]]:
    """For each artifact at ``path_or_uri``: the executions that produced it (a training run:
    its state, times, hparams), their experiments (contexts), their inputs and their other
    outputs (the event files: the run's data). LineageNotFound if no artifact has it."""
    from boardd.metadata.proto import metadata_store_pb2 as pb

    artifacts = artifacts_for(store, path_or_uri)
    if not artifacts:
        raise LineageNotFound(
            f"no artifact in the lineage store has the URI {path_or_uri!r} (boardd records "
            "event files and checkpoints of the logdirs it serves; is boardd serve running?)"
        )
    out = []
    for artifact in artifacts:
        [a_type] = store.get_artifact_types_by_id([artifact.type_id])
        producers = []
        events = found(store.get_events_by_artifact_ids, [artifact.id])
        run_ids = sorted({e.execution_id for e in events if _event_type(pb, e.type) in _OUTPUTS})
        for execution in found(store.get_executions_by_id, run_ids) if run_ids else []:
            [e_type] = store.get_execution_types_by_id([execution.type_id])
            run_events = found(store.get_events_by_execution_ids, [execution.id])
            inputs = sorted(
                {ev.artifact_id for ev in run_events if _event_type(pb, ev.type) in _INPUTS}
            )
            outputs = sorted(
                {
                    ev.artifact_id
                    for ev in run_events
                    if _event_type(pb, ev.type) in _OUTPUTS and ev.artifact_id != artifact.id
                }
            )
            producers.append(
                {
                    "execution_id": execution.id,
                    "type": e_type.name,
                    "name": execution.name,
                    "state": pb.Execution.State.Name(execution.last_known_state),
                    "properties": properties_of(execution),
                    "hparams": custom_properties_of(execution),
                    "contexts": [
                        {"id": c.id, "name": c.name, "properties": properties_of(c)}
                        for c in found(store.get_contexts_by_execution, execution.id)
                    ],
                    "inputs": _briefs(store, inputs),
                    "outputs": _briefs(store, outputs),
                }
            )
        out.append(
            {
                "artifact_id": artifact.id,
                "type": a_type.name,
                "name": artifact.name,
                "uri": artifact.uri,
                "state": pb.Artifact.State.Name(artifact.state),
                "properties": properties_of(artifact),
                "produced_by": producers,
            }
        )
    return out


def _briefs(store: Any, ids: list[int]) -> list[dict[str, Any]]:
    if not ids:
        return []
    briefs = found(store.get_artifacts_by_id, ids)
    names = _type_names(store, "artifact", (a.type_id for a in briefs))
    return [
        {
            "artifact_id": a.id,
            "type": names.get(a.type_id, ""),
            "name": a.name,
            "uri": a.uri,
            "properties": properties_of(a),
        }
        for a in sorted(briefs, key=lambda a: a.id)
    ]
