"""Artifacts, executions and contexts: read by type, name, uri and external id, and written.

A node is created (MLMD's CreateArtifact / … : its type exists and its properties match it) or
updated (MLMD's UpdateNode: the stored node merged with the given fields, or with those a
field mask names; properties written as differences, and the row touched only when something
changed). Nodes read by id, and the row ↔ proto conversion, are ``access``'s.

Each function works in the caller's transaction (``access.Access.transaction``); a write call
passes its time (``now``) and its cache of stored types along.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from boardd.metadata import access, errors, queries, schema, type_registry
from boardd.metadata.proto import metadata_store_pb2 as pb
from boardd.metadata.queries import ARTIFACT, CONTEXT, NodeKind

#: The value field a property of each data type sets.
_VALUE_CHECK: dict[int, str] = {
    pb.INT: "int_value",
    pb.DOUBLE: "double_value",
    pb.STRING: "string_value",
    pb.STRUCT: "struct_value",
    pb.PROTO: "proto_value",
    pb.BOOLEAN: "bool_value",
}

# -- reading ----------------------------------------------------------------------------------


def nodes_by_type(
    db: apsw.Connection, kind: NodeKind, type_name: str, type_version: str | None
) -> list[Any]:
    """The nodes of a type, by id (none when the type does not exist)."""
    type_id = type_registry.type_id_by_name(db, kind.type_kind, type_name, type_version)
    if type_id is None:
        return []
    rows = db.execute(kind.select_where("n.type_id = ? ORDER BY n.id"), (type_id,))
    return access.nodes_from_rows(db, kind, rows)


def node_by_type_and_name(
    db: apsw.Connection, kind: NodeKind, type_name: str, name: str, type_version: str | None
) -> Any | None:
    """The node of this type and name, or None."""
    type_id = type_registry.type_id_by_name(db, kind.type_kind, type_name, type_version)
    if type_id is None:
        return None
    rows = db.execute(kind.select_where("n.type_id = ? AND n.name = ?"), (type_id, name))
    found = access.nodes_from_rows(db, kind, rows)
    return found[0] if found else None


def artifacts_by_uri(db: apsw.Connection, uri: str) -> list[Any]:
    """The artifacts with this uri, by id."""
    rows = db.execute(ARTIFACT.select_where("n.uri = ? ORDER BY n.id"), (uri,))
    return access.nodes_from_rows(db, ARTIFACT, rows)


def nodes_by_external_ids(
    db: apsw.Connection, kind: NodeKind, external_ids: list[str]
) -> list[Any]:
    """The nodes with these external ids, by id; NotFoundError when none has one."""
    rows = db.execute(
        kind.select_where("n.external_id IN (SELECT value FROM json_each(?)) ORDER BY n.id"),
        (json.dumps(external_ids),),
    )
    found = access.nodes_from_rows(db, kind, rows)
    if not found:
        raise errors.NotFoundError(f"No {kind.name}s found for external_ids.")
    return found


def artifacts_and_types(
    db: apsw.Connection, artifact_ids: Sequence[int]
) -> tuple[list[pb.Artifact], list[pb.ArtifactType]]:
    """The artifacts of these ids and their types."""
    artifacts = access.find_nodes(db, ARTIFACT, artifact_ids)
    type_ids = list(dict.fromkeys(a.type_id for a in artifacts))
    # Each type once, in the order the artifacts first name it (as MLMD).
    types = type_registry.types_by_ids(
        db, schema.ARTIFACT_TYPE, type_ids, io_types=False, base_type=False
    )
    return artifacts, types


# -- writing ----------------------------------------------------------------------------------


def validate_properties(
    node: Any, stored_type: type_registry.StoredType, masked: set[str] | None = None
) -> None:
    for name, value in node.properties.items():
        if masked is not None and name not in masked:
            continue
        data_type = stored_type.properties.get(name)
        if data_type is None:
            raise errors.InvalidArgumentError(f"Found unknown property: {name}")
        if value.WhichOneof("value") != _VALUE_CHECK.get(data_type):
            raise errors.InvalidArgumentError(f"Found unmatched property type: {name}")


def create_node(
    db: apsw.Connection,
    kind: NodeKind,
    node: Any,
    now: int,
    types: type_registry.TypeCache,
    validate: bool = True,
) -> int:
    """MLMD's CreateArtifact / CreateExecution / CreateContext: the new node's id. A caller
    that has validated a batch already passes ``validate=False``."""
    if validate:
        if not node.HasField("type_id"):
            raise errors.InvalidArgumentError("Type id is missing.")
        stored_type = type_registry.stored_type(db, kind.type_kind, node.type_id, types)
        if stored_type is None:
            raise errors.NotFoundError(f"No type found for query, type_id: {node.type_id}")
        validate_properties(node, stored_type)
    values = _column_values(kind, node, with_name=True)
    try:
        db.execute(kind.insert, (node.type_id, *values, now, now))
    except apsw.ConstraintError as exc:
        raise errors.AlreadyExistsError(f"Given node already exists: {node} {exc}") from exc
    node_id = int(db.last_insert_rowid())
    rows = [
        (node_id, name, 0, *access.value_columns(name, value))
        for name, value in node.properties.items()
    ]
    rows.extend(
        (node_id, name, 1, *access.value_columns(name, value))
        for name, value in node.custom_properties.items()
    )
    if rows:
        db.executemany(kind.insert_property, rows)
    return node_id


def update_node(
    db: apsw.Connection,
    kind: NodeKind,
    node: Any,
    now: int,
    types: type_registry.TypeCache,
    mask: Sequence[str] = (),
    force_update_time: bool = False,
) -> int:
    """MLMD's UpdateArtifact / … : the node of ``node.id`` updated (only the fields ``mask``
    names, when it names any); its time is touched only when something changed, or always
    with ``force_update_time``."""
    found = access.find_nodes(db, kind, [node.id])
    if not found:
        raise errors.InvalidArgumentError(f"Cannot find the given id {node.id}")
    stored = found[0]
    if node.HasField("type_id") and node.type_id != stored.type_id:
        raise errors.InvalidArgumentError(
            f"Given type_id {node.type_id} is different from the one known before: {stored.type_id}"
        )
    stored_type = type_registry.stored_type(db, kind.type_kind, stored.type_id, types)
    if stored_type is None:
        raise errors.NotFoundError(f"No type found for query, type_id: {stored.type_id}")
    field_mask = _FieldMask.parse(mask, kind)
    validate_properties(node, stored_type, field_mask.property_names(False) if field_mask else None)
    changed = _modify_properties(
        db, kind, node.id, node.properties, stored.properties, False, field_mask
    )
    changed += _modify_properties(
        db, kind, node.id, node.custom_properties, stored.custom_properties, True, field_mask
    )
    if not force_update_time and not changed and _same_node_fields(node, stored):
        return int(node.id)
    if field_mask is not None:
        merged = type(stored)()
        merged.CopyFrom(stored)
        for name in field_mask.fields:
            if node.HasField(name):
                setattr(merged, name, getattr(node, name))
            else:
                merged.ClearField(name)
        source = merged
    else:
        source = node
    values = _column_values(kind, source, with_name=False)
    # As MLMD: a name or external id taken by another node fails an update as an
    # internal error (creating such a node is AlreadyExists).
    access.execute_or_internal_error(db, kind.update, (stored.type_id, *values, now, node.id))
    return int(node.id)


def _column_values(kind: NodeKind, node: Any, *, with_name: bool) -> tuple[Any, ...]:
    """A node's fields as its table's columns, in the order of ``kind.columns`` (with the
    name) or ``kind.update_columns`` (without it, but for a context's): NULL for a field not
    set, but for ``uri`` (an empty string, as MLMD stores it). A context's name must not be
    empty."""
    # Field by field rather than a loop over kind.columns: this runs for every node a put
    # writes.
    external_id = node.external_id if node.HasField("external_id") else None
    if kind is CONTEXT:
        if not node.name:
            raise errors.InvalidArgumentError("Context name should not be empty")
        return (node.name, external_id)
    name = node.name if node.HasField("name") else None
    if kind is ARTIFACT:
        state = node.state if node.HasField("state") else None
        return (node.uri, state, name, external_id) if with_name else (node.uri, state, external_id)
    state = node.last_known_state if node.HasField("last_known_state") else None
    return (state, name, external_id) if with_name else (state, external_id)


def _modify_properties(
    db: apsw.Connection,
    kind: NodeKind,
    node_id: int,
    current: Any,
    previous: Any,
    is_custom: bool,
    field_mask: _FieldMask | None,
) -> int:
    """MLMD's ModifyProperties: writes the differences; returns how many changed."""
    names: Iterable[str]
    masked = field_mask.property_names(is_custom) if field_mask else None
    if masked is not None:
        names = masked
    else:
        names = list(dict.fromkeys([*previous.keys(), *current.keys()]))
    changed = 0
    for name in sorted(names):
        before = name in previous
        after = name in current
        if before and not after:
            db.execute(kind.delete_property, (node_id, name))
            changed += 1
        elif after and before and previous[name] != current[name] and not is_custom:
            # As MLMD: an UPDATE of the value's column by node and name (a custom property
            # of the same name gets that column too).
            columns = access.value_columns(name, current[name])
            for column, value in zip(queries.VALUE_COLUMNS, columns, strict=True):
                if value is not None:
                    db.execute(kind.update_property(column), (value, node_id, name))
                    break
            changed += 1
        elif after and (not before or previous[name] != current[name]):
            if before:
                db.execute(kind.delete_property, (node_id, name))
            db.execute(
                kind.insert_property,
                (node_id, name, int(is_custom), *access.value_columns(name, current[name])),
            )
            changed += 1
    return changed


def put_node(
    db: apsw.Connection,
    kind: NodeKind,
    node: Any,
    now: int,
    types: type_registry.TypeCache,
    mask: Sequence[str] = (),
) -> int:
    """A node created (no id) or updated (an id); its id."""
    if node.HasField("id"):
        return update_node(db, kind, node, now, types, mask)
    return create_node(db, kind, node, now, types)


def put_nodes(
    db: apsw.Connection, kind: NodeKind, nodes: Sequence[Any], now: int, mask: Sequence[str]
) -> list[int]:
    """put_artifacts / put_executions / put_contexts: each node created (no id) or updated."""
    types: type_registry.TypeCache = {}
    return [put_node(db, kind, node, now, types, mask) for node in nodes]


def _same_node_fields(node: Any, stored: Any) -> bool:
    """MLMD's update check: the nodes equal but for type_id, properties and timestamps."""
    a = type(node)()
    a.CopyFrom(node)
    b = type(stored)()
    b.CopyFrom(stored)
    for message in (a, b):
        for name in (
            "type_id",
            "properties",
            "custom_properties",
            "create_time_since_epoch",
            "last_update_time_since_epoch",
        ):
            message.ClearField(name)
    return bool(a == b)


@dataclass
class _FieldMask:
    """A put call's ``field_mask_paths``, split as MLMD splits them (field_mask_utils.cc)."""

    #: The node's own fields named (unknown names are ignored, as by MLMD).
    fields: list[str]
    #: Property names named ("properties.NAME"); None when the mask names ``properties``
    #: as a whole, which means all of them.
    properties: set[str] | None
    custom_properties: set[str] | None

    @classmethod
    def parse(cls, paths: Sequence[str], kind: NodeKind) -> _FieldMask | None:
        if not paths:
            return None
        message_fields = access.NODE_CLASSES[kind.name].DESCRIPTOR.fields_by_name
        fields = [
            p
            for p in paths
            if not p.startswith("properties")
            and not p.startswith("custom_properties")
            and p in message_fields
        ]
        return cls(
            fields=fields,
            properties=_mask_names(paths, "properties"),
            custom_properties=_mask_names(paths, "custom_properties"),
        )

    def property_names(self, is_custom: bool) -> set[str] | None:
        return self.custom_properties if is_custom else self.properties


def _mask_names(paths: Sequence[str], prefix: str) -> set[str] | None:
    names: set[str] = set()
    for path in paths:
        if path == prefix:
            return None
        if path.startswith(prefix):
            names.add(path.removeprefix(prefix + "."))
    return names
