"""The edges of the graph: events (artifact ↔ execution), attributions and associations (a
context's artifacts and executions) and parent contexts (a context inside another).

Written as MLMD writes them: an event once (AlreadyExists again), an attribution or association
only if it is not there yet, a parent link only if it closes no cycle. Read back: the events of
some artifacts or executions, a context's members, a node's contexts, a context's parents and
children.

Each function works in the caller's transaction (``access.Access.transaction``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import apsw

from boardd.metadata import access, errors, queries
from boardd.metadata.proto import metadata_store_pb2 as pb
from boardd.metadata.queries import CONTEXT

# -- events -----------------------------------------------------------------------------------


def insert_event(db: apsw.Connection, event: pb.Event, validate: bool, now: int) -> None:
    """MLMD's CreateEvent; ``validate`` checks that its artifact and execution exist (a caller
    that has just written them passes False)."""
    if not event.HasField("artifact_id"):
        raise errors.InvalidArgumentError("No artifact id is specified.")
    if not event.HasField("execution_id"):
        raise errors.InvalidArgumentError("No execution id is specified.")
    if not event.HasField("type") or event.type == pb.Event.UNKNOWN:
        raise errors.InvalidArgumentError("No event type is specified.")
    if validate:
        if db.execute(queries.ARTIFACT_EXISTS, (event.artifact_id,)).get is None:
            raise errors.InvalidArgumentError(f"No artifact with the given id {event.artifact_id}")
        if db.execute(queries.EXECUTION_EXISTS, (event.execution_id,)).get is None:
            raise errors.InvalidArgumentError(
                f"No execution with the given id {event.execution_id}"
            )
    when = event.milliseconds_since_epoch if event.HasField("milliseconds_since_epoch") else now
    try:
        db.execute(queries.INSERT_EVENT, (event.artifact_id, event.execution_id, event.type, when))
    except apsw.ConstraintError as exc:
        raise errors.AlreadyExistsError(f"Given event already exists: {event}") from exc
    steps = event.path.steps
    if steps:
        event_id = db.last_insert_rowid()
        db.executemany(
            queries.INSERT_EVENT_PATH,
            [
                (event_id, 1, step.index, None)
                if step.WhichOneof("value") == "index"
                else (event_id, 0, None, step.key)
                for step in steps
            ],
        )


def put_events(db: apsw.Connection, events: Sequence[pb.Event], now: int) -> None:
    """put_events: each event of an artifact and an execution that exist."""
    for event in events:
        insert_event(db, event, True, now)


def events_of_executions(db: apsw.Connection, execution_ids: Iterable[int]) -> list[pb.Event]:
    return _read_events(db, queries.SELECT_EVENTS_BY_EXECUTIONS, execution_ids)


def events_of_artifacts(db: apsw.Connection, artifact_ids: Iterable[int]) -> list[pb.Event]:
    return _read_events(db, queries.SELECT_EVENTS_BY_ARTIFACTS, artifact_ids)


def _read_events(db: apsw.Connection, sql: str, ids: Iterable[int]) -> list[pb.Event]:
    rows: list[tuple[Any, ...]] = db.execute(sql, (access.ids_json(ids),)).fetchall()
    if not rows:
        return []
    by_id: dict[int, pb.Event] = {}
    out: list[pb.Event] = []
    for event_id, artifact_id, execution_id, event_type, when in rows:
        event = pb.Event(artifact_id=artifact_id, execution_id=execution_id, type=event_type)
        if when is not None:
            event.milliseconds_since_epoch = when
        by_id[event_id] = event
        out.append(event)
    for event_id, is_index, index, key in db.execute(
        queries.SELECT_EVENT_PATHS, (access.ids_json(by_id),)
    ):
        step = by_id[event_id].path.steps.add()
        if is_index:
            step.index = index
        else:
            step.key = key
    return out


# -- a context's members ----------------------------------------------------------------------


def put_attributions_and_associations(
    db: apsw.Connection,
    attributions: Sequence[pb.Attribution],
    associations: Sequence[pb.Association],
) -> None:
    """Each link whose context and node exist, unless it is there already (as MLMD)."""
    for attribution in attributions:
        _add_member(
            db, attribution, "artifact", queries.ARTIFACT_EXISTS, queries.INSERT_ATTRIBUTION
        )
    for association in associations:
        _add_member(
            db, association, "execution", queries.EXECUTION_EXISTS, queries.INSERT_ASSOCIATION
        )


def _add_member(
    db: apsw.Connection, link: Any, noun: str, exists_sql: str, insert_sql: str
) -> None:
    """MLMD's InsertAttributionIfNotExist / InsertAssociationIfNotExist, with the checks of
    the link's fields before them: ``noun`` is the member's kind ("artifact", "execution")."""
    if not link.HasField("context_id"):
        raise errors.InvalidArgumentError("No context id is specified.")
    member_field = f"{noun}_id"
    if not link.HasField(member_field):
        raise errors.InvalidArgumentError(f"No {noun} id is specified")
    if db.execute(queries.CONTEXT_EXISTS, (link.context_id,)).get is None:
        raise errors.InvalidArgumentError("Context id not found.")
    member_id = getattr(link, member_field)
    if db.execute(exists_sql, (member_id,)).get is None:
        raise errors.InvalidArgumentError(f"{noun.capitalize()} id not found.")
    db.execute(insert_sql, (link.context_id, member_id))


def link_to_context(
    db: apsw.Connection,
    context_id: int,
    execution_ids: Sequence[int],
    artifact_ids: Sequence[int],
) -> None:
    """Associates executions and attributes artifacts just written to a context, where not
    linked yet (no existence checks: the caller has written them all)."""
    db.executemany(
        queries.INSERT_ASSOCIATION_IF_NEW,
        [(context_id, execution_id) for execution_id in execution_ids],
    )
    db.executemany(
        queries.INSERT_ATTRIBUTION_IF_NEW,
        [(context_id, artifact_id) for artifact_id in artifact_ids],
    )


def artifact_ids_of_context(db: apsw.Connection, context_id: int) -> list[int]:
    return [row[0] for row in db.execute(queries.SELECT_ARTIFACT_IDS_BY_CONTEXT, (context_id,))]


def execution_ids_of_context(db: apsw.Connection, context_id: int) -> list[int]:
    return [row[0] for row in db.execute(queries.SELECT_EXECUTION_IDS_BY_CONTEXT, (context_id,))]


def contexts_of_artifact(db: apsw.Connection, artifact_id: int) -> list[pb.Context]:
    """The contexts an artifact is attributed to (NotFoundError when none, as MLMD)."""
    return _linked_contexts(
        db,
        queries.SELECT_CONTEXT_IDS_BY_ARTIFACT,
        artifact_id,
        "No contexts found for artifact_id: ",
    )


def contexts_of_execution(db: apsw.Connection, execution_id: int) -> list[pb.Context]:
    """The contexts an execution is associated with (NotFoundError when none, as MLMD)."""
    return _linked_contexts(
        db,
        queries.SELECT_CONTEXT_IDS_BY_EXECUTION,
        execution_id,
        "No contexts found for execution_id: ",
    )


# -- nested contexts --------------------------------------------------------------------------


def put_parent_contexts(db: apsw.Connection, links: Sequence[pb.ParentContext]) -> None:
    """Each link between two contexts that exist, unless it closes a cycle or exists."""
    for link in links:
        if not link.HasField("parent_id") or not link.HasField("child_id"):
            raise errors.InvalidArgumentError(
                f"Missing parent / child id in the parent_context: {link}"
            )
        found = db.execute(
            queries.COUNT_CONTEXTS,
            (access.ids_json([link.parent_id, link.child_id]),),
        ).get
        if found < 2:
            raise errors.InvalidArgumentError(
                f"Given parent / child id in the parent_context cannot be found: {link}"
            )
        # A cycle: the child is the parent, or one of the parent's ancestors.
        ancestors = {row[0] for row in db.execute(queries.SELECT_ANCESTORS, (link.parent_id,))}
        if link.child_id in ancestors:
            raise errors.InvalidArgumentError(
                "There is a cycle detected of the given relationship."
            )
        try:
            db.execute(queries.INSERT_PARENT_CONTEXT, (link.child_id, link.parent_id))
        except apsw.ConstraintError as exc:
            raise errors.AlreadyExistsError(f"Given parent_context already exists: {link}") from exc


def parent_contexts(db: apsw.Connection, context_id: int) -> list[pb.Context]:
    return _linked_contexts(db, queries.SELECT_PARENT_IDS, context_id)


def child_contexts(db: apsw.Connection, context_id: int) -> list[pb.Context]:
    return _linked_contexts(db, queries.SELECT_CHILD_IDS, context_id)


def _linked_contexts(
    db: apsw.Connection, sql: str, node_id: int, none_found: str | None = None
) -> list[pb.Context]:
    ids = [row[0] for row in db.execute(sql, (node_id,))]
    if not ids and none_found is not None:
        raise errors.NotFoundError(f"{none_found}{node_id}")
    return access.find_nodes(db, CONTEXT, ids)
