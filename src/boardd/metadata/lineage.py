"""``get_lineage_subgraph``: the part of the graph around some starting nodes, as MLMD walks it.

The walk alternates between artifacts and executions along events, one hop at a time, up to
``max_num_hops`` (100 at most, as MLMD): UPSTREAM follows an artifact to the executions that
output it and an execution to its inputs, DOWNSTREAM the other way, BIDIRECTIONAL both. Ending
nodes (a filter_query) stop the walk there, and are kept only with ``include_ending_nodes``.
Contexts are those of the nodes reached; attributions and associations those of the nodes.
The events of the answer are those walked, as MLMD gives them (an edge back to an already
visited node only on a one-way walk).

Each hop is a few set-based queries (events of a frontier of ids, then the nodes), never one
query per node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from boardd.metadata import errors, queries, schema
from boardd.metadata.access import find_nodes, ids_json, type_rows_by_ids, type_rows_to_messages
from boardd.metadata.filter_query import compile_filter
from boardd.metadata.proto import metadata_store_pb2 as pb
from boardd.metadata.queries import ARTIFACT, CONTEXT, EXECUTION, NodeKind

#: MLMD's cap on hops (kQueryLineageSubgraphMaxNumHops).
MAX_NUM_HOPS = 100
#: The starting nodes a walk takes, the first by id of those matching: 101 as ML Metadata 1.17
#: takes them (its documentation says "limited to 100").
MAX_STARTING_NODES = 101

_Options = pb.LineageSubgraphQueryOptions
_OUTPUTS = frozenset(
    {pb.Event.DECLARED_OUTPUT, pb.Event.INTERNAL_OUTPUT, pb.Event.PENDING_OUTPUT, pb.Event.OUTPUT}
)
_INPUTS = frozenset({pb.Event.DECLARED_INPUT, pb.Event.INTERNAL_INPUT, pb.Event.INPUT})
_GRAPH_FIELDS = tuple(field.name for field in pb.LineageGraph.DESCRIPTOR.fields)


def _filtered_ids(db: apsw.Connection, kind: NodeKind, query: str, ids: Any = None) -> list[int]:
    """Ids of ``kind`` matching a filter_query (among ``ids`` when given), by id."""
    expression, params = compile_filter(kind.name, query, "n")
    args: list[object] = list(params)
    if ids is not None:
        if not ids:
            return []
        args.append(ids_json(ids))
    return [
        row[0] for row in db.execute(queries.filtered_ids(kind, expression, ids is not None), args)
    ]


def _keep_event(event_type: int, from_artifact: bool, direction: int) -> bool:
    if direction == _Options.UPSTREAM:
        return event_type in (_OUTPUTS if from_artifact else _INPUTS)
    if direction == _Options.DOWNSTREAM:
        return event_type in (_INPUTS if from_artifact else _OUTPUTS)
    return True


def subgraph(
    db: apsw.Connection,
    options: pb.LineageSubgraphQueryOptions,
    field_mask_paths: Sequence[str] | None,
) -> pb.LineageGraph:
    """MLMD's GetLineageSubgraph (the C++ walk and the Python API's filling-in) in one go."""
    # As MLMD, a path that is not a LineageGraph field is ignored (``artifacts.id`` too): a mask
    # of such paths only asks for nothing.
    paths = list(field_mask_paths) if field_mask_paths else list(_GRAPH_FIELDS)
    wanted = {p for p in paths if p in _GRAPH_FIELDS}
    # The walk reads what is not a type; with nothing else asked it reads everything. A path
    # that is no field counts as asked (MLMD passes it on to its walk, which then reads
    # nothing for it): with types only beside it, no node is read, so no type is found.
    asked = {p for p in paths if not p.endswith("_types")}
    read = asked & set(_GRAPH_FIELDS) if asked else set(_GRAPH_FIELDS)

    which = options.WhichOneof("starting_nodes")
    if which is None:
        raise errors.InvalidArgumentError("Missing arguments for listing starting nodes.")
    from_artifacts = which == "starting_artifacts"
    start_query = getattr(options, which).filter_query
    if not start_query:
        raise errors.InvalidArgumentError(
            "Cannot list starting nodes if `filter_query` is unspecified."
        )
    max_hops = MAX_NUM_HOPS
    if options.HasField("max_num_hops"):
        if options.max_num_hops < 0:
            raise errors.InvalidArgumentError(
                f"max_num_hops cannot be negative: max_num_hops = {options.max_num_hops}"
            )
        max_hops = min(options.max_num_hops, MAX_NUM_HOPS)
    direction = options.direction

    start = _filtered_ids(db, ARTIFACT if from_artifacts else EXECUTION, start_query)
    del start[MAX_STARTING_NODES:]
    if not start:
        raise errors.NotFoundError("Cannot find qualified nodes to start the traversal.")

    visited: dict[bool, set[int]] = {True: set(), False: set()}  # by "is artifact"
    ending: dict[bool, set[int]] = {True: set(), False: set()}
    ending_options = {True: options.ending_artifacts, False: options.ending_executions}
    frontier = list(start)
    visited[from_artifacts] = set(start)
    if ending_options[from_artifacts].HasField("filter_query"):
        kind = ARTIFACT if from_artifacts else EXECUTION
        ending[from_artifacts] = set(
            _filtered_ids(db, kind, ending_options[from_artifacts].filter_query, start)
        )
        frontier = [i for i in frontier if i not in ending[from_artifacts]]
        visited[from_artifacts] -= ending[from_artifacts]

    walked_events: list[tuple[int, int, int, int | None, int]] = []  # (a, e, type, ms, id)
    for hop in range(max_hops):
        from_artifact = from_artifacts == (hop % 2 == 0)
        target = not from_artifact  # is the other side an artifact?
        sql = (
            queries.SELECT_EVENTS_BY_ARTIFACTS
            if from_artifact
            else queries.SELECT_EVENTS_BY_EXECUTIONS
        )
        rows: list[tuple[Any, ...]] = (
            db.execute(sql, (ids_json(frontier),)).fetchall() if frontier else []
        )
        events = [
            (row[1], row[2], row[3], row[4], row[0])
            for row in rows
            if _keep_event(row[3], from_artifact, direction)
        ]
        other = 1 if from_artifact else 0  # index of the other node's id in an event tuple
        unvisited = {
            ev[other]
            for ev in events
            if ev[other] not in visited[target] and ev[other] not in ending[target]
        }
        if ending_options[target].HasField("filter_query") and unvisited:
            kind = ARTIFACT if target else EXECUTION
            ending[target] |= set(
                _filtered_ids(db, kind, ending_options[target].filter_query, unvisited)
            )
            unvisited -= ending[target]
        include_ending = ending_options[target].include_ending_nodes
        for ev in events:
            node = ev[other]
            if node not in visited[target] and node not in ending[target]:
                walked_events.append(ev)
            elif node in ending[target]:
                if include_ending:
                    walked_events.append(ev)
            elif direction in (_Options.UPSTREAM, _Options.DOWNSTREAM):
                walked_events.append(ev)
        frontier = sorted(unvisited)
        visited[target] |= unvisited
        if not frontier:
            break

    artifact_ids = set(visited[True])
    execution_ids = set(visited[False])
    if options.ending_artifacts.include_ending_nodes:
        artifact_ids |= ending[True]
    if options.ending_executions.include_ending_nodes:
        execution_ids |= ending[False]
    return _fill(db, wanted, read, artifact_ids, execution_ids, walked_events)


def _fill(
    db: apsw.Connection,
    wanted: set[str],
    read: set[str],
    artifact_ids: set[int],
    execution_ids: set[int],
    walked_events: list[tuple[int, int, int, int | None, int]],
) -> pb.LineageGraph:
    graph = pb.LineageGraph()
    a_ids = sorted(artifact_ids) if "artifacts" in read else []
    e_ids = sorted(execution_ids) if "executions" in read else []
    if "artifacts" in wanted or "artifact_types" in wanted:
        artifacts = find_nodes(db, ARTIFACT, a_ids)
        if "artifacts" in wanted:
            graph.artifacts.extend(artifacts)
        if "artifact_types" in wanted:
            type_ids = list(dict.fromkeys(a.type_id for a in artifacts))
            rows = type_rows_by_ids(db, schema.ARTIFACT_TYPE, type_ids)
            graph.artifact_types.extend(
                type_rows_to_messages(
                    db, schema.ARTIFACT_TYPE, rows, io_types=False, base_type=False
                )
            )
    if "executions" in wanted or "execution_types" in wanted:
        executions = find_nodes(db, EXECUTION, e_ids)
        if "executions" in wanted:
            graph.executions.extend(executions)
        if "execution_types" in wanted:
            type_ids = sorted({e.type_id for e in executions})
            rows = type_rows_by_ids(db, schema.EXECUTION_TYPE, type_ids)
            graph.execution_types.extend(type_rows_to_messages(db, schema.EXECUTION_TYPE, rows))
    if "contexts" in wanted or "context_types" in wanted:
        context_ids: set[int] = set()
        if "contexts" in read:
            both = sorted(artifact_ids), sorted(execution_ids)
            context_ids |= {
                row[0]
                for row in db.execute(
                    queries.CONTEXT_IDS_OF_NODES, (ids_json(both[0]), ids_json(both[1]))
                )
            }
        contexts = find_nodes(db, CONTEXT, sorted(context_ids))
        if "contexts" in wanted:
            graph.contexts.extend(contexts)
        if "context_types" in wanted:
            type_ids = sorted({c.type_id for c in contexts})
            rows = type_rows_by_ids(db, schema.CONTEXT_TYPE, type_ids)
            graph.context_types.extend(
                type_rows_to_messages(db, schema.CONTEXT_TYPE, rows, base_type=False)
            )
    if "events" in wanted and "events" in read and walked_events:
        paths: dict[int, list[tuple[int, int | None, str | None]]] = {}
        for event_id, is_index, index, key in db.execute(
            queries.SELECT_EVENT_PATHS, (ids_json({ev[4] for ev in walked_events}),)
        ):
            paths.setdefault(event_id, []).append((is_index, index, key))
        for artifact_id, execution_id, event_type, when, event_id in walked_events:
            event = graph.events.add(
                artifact_id=artifact_id, execution_id=execution_id, type=event_type
            )
            if when is not None:
                event.milliseconds_since_epoch = when
            for is_index, index, key in paths.get(event_id, ()):
                if is_index:
                    event.path.steps.add(index=index)
                else:
                    event.path.steps.add(key=key)
    if "attributions" in wanted and "attributions" in read and artifact_ids:
        for context_id, artifact_id in db.execute(
            queries.ATTRIBUTIONS_OF_ARTIFACTS, (ids_json(sorted(artifact_ids)),)
        ):
            graph.attributions.add(artifact_id=artifact_id, context_id=context_id)
    if "associations" in wanted and "associations" in read and execution_ids:
        for context_id, execution_id in db.execute(
            queries.ASSOCIATIONS_OF_EXECUTIONS, (ids_json(sorted(execution_ids)),)
        ):
            graph.associations.add(execution_id=execution_id, context_id=context_id)
    return graph
