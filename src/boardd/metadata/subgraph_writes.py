"""put_execution and put_lineage_subgraph: nodes, their events and their contexts in one call.

Both write as MLMD's PutExecution and PutLineageSubgraph do, each in MLMD's order (which
decides the ids and which error a wrong request meets first): artifacts (possibly reused by
external id), executions, events pointing at what was just written, contexts (possibly reused
by type and name), and every artifact and execution of the call linked to every context.

Each function works in the caller's write transaction (``access.Access.transaction``), with the
call's time and its cache of stored types.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import apsw

from boardd.metadata import edges, errors, nodes, queries, type_registry
from boardd.metadata.proto import metadata_store_pb2 as pb
from boardd.metadata.queries import ARTIFACT, CONTEXT, EXECUTION


def put_execution(
    db: apsw.Connection,
    now: int,
    execution: pb.Execution,
    pairs: Sequence[tuple[pb.Artifact | None, pb.Event | None]],
    contexts: Sequence[pb.Context] | None,
    *,
    reuse_context: bool,
    reuse_artifact_by_external_id: bool,
    force_reuse_context: bool,
    force_update_time: bool,
) -> tuple[int, list[int], list[int]]:
    """MLMD's PutExecution: the execution id, the artifact ids (aligned with ``pairs``) and the
    context ids."""
    types: type_registry.TypeCache = {}
    artifact_ids_by_pair: list[int | None] = []
    for artifact, _event in pairs:
        if artifact is None:
            artifact_ids_by_pair.append(None)
            continue
        artifact_ids_by_pair.append(
            _put_artifact_reusing(db, artifact, now, types, reuse_artifact_by_external_id)
        )
    if execution.HasField("id"):
        execution_id = nodes.update_node(
            db, EXECUTION, execution, now, types, force_update_time=force_update_time
        )
    else:
        execution_id = nodes.create_node(db, EXECUTION, execution, now, types)
    artifact_ids: list[int] = []
    for (artifact, event), artifact_id in zip(pairs, artifact_ids_by_pair, strict=True):
        if event is not None:
            copy = pb.Event()
            copy.CopyFrom(event)
            if copy.HasField("execution_id") and copy.execution_id != execution_id:
                raise errors.InvalidArgumentError(
                    "Request's event.execution_id does not match with the given execution: "
                )
            copy.execution_id = execution_id
            if artifact is not None:
                assert artifact_id is not None
                if copy.HasField("artifact_id") and copy.artifact_id != artifact_id:
                    raise errors.InvalidArgumentError(
                        f"Given event.artifact_id is not aligned with the artifact: {artifact}"
                    )
                copy.artifact_id = artifact_id
            elif not copy.HasField("artifact_id"):
                raise errors.InvalidArgumentError(
                    "If no artifact is present, given event must have an artifact_id"
                )
            edges.insert_event(db, copy, False, now)
        if artifact is not None:
            assert artifact_id is not None
            artifact_ids.append(artifact_id)
        elif event is not None:
            artifact_ids.append(event.artifact_id)
        else:
            artifact_ids.append(-1)
    distinct_artifacts = list(dict.fromkeys(artifact_ids))
    context_ids: list[int] = []
    for context in contexts or ():
        if context.HasField("id") and force_reuse_context:
            if db.execute(queries.CONTEXT_EXISTS, (context.id,)).get is None:
                raise errors.NotFoundError(f"Context with ID {context.id} was not found in MLMD")
            context_id = int(context.id)
        else:
            context_id = _put_context(db, context, now, types, reuse_context)
        context_ids.append(context_id)
        edges.link_to_context(db, context_id, [execution_id], distinct_artifacts)
    return execution_id, artifact_ids, context_ids


def put_lineage_subgraph(
    db: apsw.Connection,
    now: int,
    executions: Sequence[pb.Execution],
    artifacts: Sequence[pb.Artifact],
    contexts: Sequence[pb.Context],
    event_edges: Sequence[tuple[Any, ...]],
    *,
    reuse_context: bool,
    reuse_artifact_by_external_id: bool,
) -> tuple[list[int], list[int], list[int]]:
    """MLMD's PutLineageSubgraph: the execution, artifact and context ids, index-aligned.
    ``event_edges`` have passed ``arguments.check_event_edges``."""
    types: type_registry.TypeCache = {}
    _validate_batches(
        db, types, ((ARTIFACT, artifacts), (EXECUTION, executions), (CONTEXT, contexts))
    )
    context_ids = [
        _put_context(db, context, now, types, reuse_context, validate=False) for context in contexts
    ]
    # MLMD maps external ids to stored artifacts once, before writing any artifact.
    reuse: dict[str, int] = {}
    if reuse_artifact_by_external_id:
        externals = [a.external_id for a in artifacts if a.external_id]
        if externals:
            reuse = {
                row[1]: row[0]
                for row in db.execute(
                    queries.ARTIFACT_IDS_BY_EXTERNAL_IDS,
                    (json.dumps(externals),),
                )
            }
    artifact_ids = []
    for artifact in artifacts:
        if not artifact.HasField("id") and artifact.external_id in reuse:
            artifact_ids.append(
                _update_artifact_as(db, artifact, reuse[artifact.external_id], now, types)
            )
        else:
            artifact_ids.append(nodes.put_node(db, ARTIFACT, artifact, now, types))
    execution_ids = [
        nodes.update_node(db, EXECUTION, execution, now, types)
        if execution.HasField("id")
        else nodes.create_node(db, EXECUTION, execution, now, types, validate=False)
        for execution in executions
    ]
    distinct_contexts = list(dict.fromkeys(context_ids))
    distinct_executions = list(dict.fromkeys(execution_ids))
    distinct_artifacts = list(dict.fromkeys(artifact_ids))
    for context_id in distinct_contexts:
        edges.link_to_context(db, context_id, distinct_executions, distinct_artifacts)
    for execution_index, artifact_index, event in event_edges:
        assert isinstance(event, pb.Event)
        copy = pb.Event()
        copy.CopyFrom(event)
        if not copy.HasField("execution_id"):
            assert isinstance(execution_index, int)
            copy.execution_id = execution_ids[execution_index]
        if not copy.HasField("artifact_id"):
            assert isinstance(artifact_index, int)
            copy.artifact_id = artifact_ids[artifact_index]
        edges.insert_event(db, copy, False, now)
    return execution_ids, artifact_ids, context_ids


def _validate_batches(
    db: apsw.Connection,
    types: type_registry.TypeCache,
    batches: Sequence[tuple[queries.NodeKind, Sequence[Any]]],
) -> None:
    """MLMD's BatchTypeAndPropertyValidation, kind by kind: every node names a type, every
    type named exists (of that kind), then each node's properties match."""
    for kind, batch in batches:
        if not batch:
            continue
        if any(not node.HasField("type_id") for node in batch):
            raise errors.InvalidArgumentError("Type id is missing.")
        wanted = sorted({node.type_id for node in batch})
        found = {
            type_id: type_registry.stored_type(db, kind.type_kind, type_id, types)
            for type_id in wanted
        }
        missing = [type_id for type_id, stored in found.items() if stored is None]
        if missing:
            present = [type_id for type_id in wanted if type_id not in missing]
            raise errors.NotFoundError(
                f"Results missing for ids: {{{','.join(map(str, wanted))}}}. "
                f"Found results for {{{','.join(map(str, present))}}}"
            )
        for node in batch:
            stored = found[node.type_id]
            assert stored is not None
            nodes.validate_properties(node, stored)


def _update_artifact_as(
    db: apsw.Connection,
    artifact: pb.Artifact,
    artifact_id: int,
    now: int,
    types: type_registry.TypeCache,
) -> int:
    """An artifact given without an id written over the stored one it is reused as."""
    copy = pb.Artifact()
    copy.CopyFrom(artifact)
    copy.id = artifact_id
    return nodes.update_node(db, ARTIFACT, copy, now, types)


def _put_artifact_reusing(
    db: apsw.Connection,
    artifact: pb.Artifact,
    now: int,
    types: type_registry.TypeCache,
    reuse_by_external_id: bool,
) -> int:
    if reuse_by_external_id and not artifact.HasField("id") and artifact.external_id:
        row = db.execute(queries.ARTIFACT_ID_BY_EXTERNAL_ID, (artifact.external_id,)).get
        if row is not None:
            return _update_artifact_as(db, artifact, row, now, types)
    return nodes.put_node(db, ARTIFACT, artifact, now, types)


def _put_context(
    db: apsw.Connection,
    context: pb.Context,
    now: int,
    types: type_registry.TypeCache,
    reuse_if_exists: bool,
    validate: bool = True,
) -> int:
    """MLMD's UpsertContextWithOptions."""
    if not context.HasField("type_id"):
        raise errors.InvalidArgumentError(f"Context is missing a type_id: {context}")
    if not context.HasField("name"):
        raise errors.InvalidArgumentError(f"Context is missing a name: {context}")
    if reuse_if_exists and not context.HasField("id"):
        row = db.execute(
            queries.CONTEXT_ID_BY_TYPE_AND_NAME,
            (context.type_id, context.name),
        ).get
        if row is not None:
            return int(row)
    if context.HasField("id"):
        return nodes.update_node(db, CONTEXT, context, now, types)
    try:
        return nodes.create_node(db, CONTEXT, context, now, types, validate=validate)
    except errors.AlreadyExistsError as exc:
        if not reuse_if_exists:
            raise
        # As MLMD: the context appeared meanwhile (another writer); retrying reuses it.
        raise errors.AbortedError(
            "Concurrent creation of the same context at the first time. Retry the "
            f"transaction to reuse the context: {context}"
        ) from exc
