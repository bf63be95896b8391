"""Types: registered as MLMD's UpsertType registers them, and read back.

A put creates a type or evolves a stored one compatibly (properties added only with
``can_add_fields``, left out only with ``can_omit_fields``, a property's data type never
changed) and links it to its simple system base type. Reads answer by name and version, by id,
by external id, or all of a kind. :func:`stored_type` is what a node's validation needs of its
type, through a cache a call keeps for its own transaction.

Each function works in the caller's transaction (``access.Access.transaction``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw
from google.protobuf import json_format

from boardd.metadata import access, errors, queries, schema
from boardd.metadata.proto import metadata_store_pb2 as pb

_SYSTEM_TYPE_NAMES = frozenset(name for name, _ in schema.SYSTEM_TYPES)


@dataclass
class StoredType:
    """What validation needs of a stored type."""

    id: int
    name: str
    properties: dict[str, int]


#: A call's stored types by (type kind, id): a batch of nodes of one type reads it once.
TypeCache = dict[tuple[int, int], StoredType]


def stored_type(
    db: apsw.Connection, kind: int, type_id: int, cache: TypeCache
) -> StoredType | None:
    """A type of this kind (None if there is none), through a per-call cache."""
    found = cache.get((kind, type_id))
    if found is not None:
        return found
    row = db.execute(queries.SELECT_TYPE_BY_ID, (kind, type_id)).fetchone()
    if row is None:
        return None
    properties = {
        name: data_type
        for _, name, data_type in db.execute(
            queries.SELECT_TYPE_PROPERTIES, (access.ids_json([type_id]),)
        )
    }
    found = StoredType(id=type_id, name=row[1], properties=properties)
    cache[(kind, type_id)] = found
    return found


# -- writing ----------------------------------------------------------------------------------


def put_type(
    db: apsw.Connection, kind: int, request: Any, can_add_fields: bool, can_omit_fields: bool
) -> int:
    """MLMD's UpsertTypes for one type: create, or evolve compatibly; returns its id."""
    version = request.version if request.HasField("version") and request.version else None
    stored = access.find_type_by_name(db, kind, request.name, version)
    if stored is None:
        if not request.name:
            raise errors.InvalidArgumentError("No type name is specified.")
        input_type = output_type = None
        if kind == schema.EXECUTION_TYPE:
            if request.HasField("input_type"):
                input_type = json_format.MessageToJson(request.input_type, indent=None)
            if request.HasField("output_type"):
                output_type = json_format.MessageToJson(request.output_type, indent=None)
        if request.HasField("external_id"):
            taken = db.execute(
                queries.TYPE_ID_BY_EXTERNAL_ID,
                (request.external_id, kind),
            ).get
            if taken is not None:
                raise errors.AlreadyExistsError(
                    f"Conflict of external_id: {request.external_id} Found already "
                    f"existing type {taken} with the same external_id"
                )
        # As MLMD: an external id taken by a type of another kind is an internal error.
        access.execute_or_internal_error(
            db,
            queries.INSERT_TYPE,
            (
                request.name,
                version,
                kind,
                request.description if request.HasField("description") else None,
                input_type,
                output_type,
                request.external_id if request.HasField("external_id") else None,
            ),
        )
        type_id = db.last_insert_rowid()
        for name, data_type in request.properties.items():
            if data_type == pb.UNKNOWN:
                raise errors.InvalidArgumentError(f"Property {name} is UNKNOWN.")
            db.execute(queries.INSERT_TYPE_PROPERTY, (type_id, name, data_type))
    else:
        type_id = stored.id
        _evolve_type(db, stored, request, can_add_fields, can_omit_fields)
    _put_base_type(db, kind, request, type_id)
    return int(type_id)


def _evolve_type(
    db: apsw.Connection,
    stored: Any,
    request: Any,
    can_add_fields: bool,
    can_omit_fields: bool,
) -> None:
    prefix = "Type already exists with different properties: "
    omitted = 0
    for name, data_type in stored.properties.items():
        if name not in request.properties:
            omitted += 1
        elif request.properties[name] != data_type:
            raise errors.AlreadyExistsError(
                prefix + "Conflicting property value type found in stored and given "
                f"types: property {name!r}"
            )
        if omitted and not can_omit_fields:
            raise errors.AlreadyExistsError(
                prefix + "can_omit_fields is false while stored type has more properties"
            )
    added = [
        (name, data_type)
        for name, data_type in request.properties.items()
        if name not in stored.properties
    ]
    if added and not can_add_fields:
        raise errors.AlreadyExistsError(
            prefix + "can_add_fields is false while the given type has more properties"
        )
    for name, data_type in added:
        if data_type == pb.UNKNOWN:
            raise errors.InvalidArgumentError(f"Property:{name} type should not be UNKNOWN.")
        db.execute(queries.INSERT_TYPE_PROPERTY, (stored.id, name, data_type))
    if request.external_id:
        # MLMD compares against a stored type read without its external id, so any
        # non-empty external id in the request is written.
        access.execute_or_internal_error(
            db, queries.UPDATE_TYPE_EXTERNAL_ID, (request.external_id, stored.id)
        )


def _put_base_type(db: apsw.Connection, kind: int, request: Any, type_id: int) -> None:
    if kind == schema.CONTEXT_TYPE or not request.HasField("base_type"):
        return
    names = access.BASE_TYPE_NAMES[kind]
    if request.base_type not in names:
        raise errors.UnimplementedError("base_type deletion is not supported yet")
    wanted = names[request.base_type]
    current = db.execute(queries.SELECT_PARENT_TYPE_NAMES, (access.ids_json([type_id]),)).fetchall()
    if not current:
        parent = db.execute(queries.SELECT_SYSTEM_TYPE_ID, (wanted, kind)).get
        if parent is None:
            raise errors.NotFoundError(f"No type found for query, name: `{wanted}`")
        db.execute(queries.INSERT_PARENT_TYPE, (type_id, parent))
    elif current[0][1] != wanted:
        raise errors.UnimplementedError("base_type update is not supported yet")


# -- reading ----------------------------------------------------------------------------------


def get_type(db: apsw.Connection, kind: int, type_name: str, type_version: str | None) -> Any:
    """The type of this name and version; NotFoundError if there is none."""
    found = access.find_type_by_name(db, kind, type_name, type_version or None)
    if found is None:
        raise errors.NotFoundError(
            f"No type found for query, name: `{type_name}`, version: `{type_version or 'nullopt'}`"
        )
    return found


def type_id_by_name(
    db: apsw.Connection, kind: int, type_name: str, type_version: str | None
) -> int | None:
    """The id of the type of this kind, name and version (None if there is none)."""
    row = db.execute(queries.TYPE_ID_BY_NAME, (kind, type_name, type_version or None)).fetchone()
    return None if row is None else int(row[0])


def all_types(db: apsw.Connection, kind: int) -> list[Any]:
    """Every type of a kind but MLMD's system types, by id, without external ids (as MLMD)."""
    rows = [
        row
        for row in db.execute(queries.SELECT_ALL_TYPES, (kind,))
        if row[1] not in _SYSTEM_TYPE_NAMES
    ]
    return access.type_rows_to_messages(db, kind, rows, external_id=False)


def types_by_ids(
    db: apsw.Connection,
    kind: int,
    type_ids: Sequence[int],
    *,
    io_types: bool = True,
    base_type: bool = True,
) -> list[Any]:
    """The types of these ids, in the order asked, repeats kept, unknown ids skipped (as MLMD)."""
    rows = {row[0]: row for row in access.type_rows_by_ids(db, kind, type_ids)}
    ordered = [rows[i] for i in type_ids if i in rows]
    return access.type_rows_to_messages(db, kind, ordered, io_types=io_types, base_type=base_type)


def types_by_external_ids(db: apsw.Connection, kind: int, external_ids: list[str]) -> list[Any]:
    """The types with these external ids; NotFoundError when none has one."""
    rows = list(db.execute(queries.SELECT_TYPES_BY_EXTERNAL_IDS, (kind, json.dumps(external_ids))))
    if not rows:
        raise errors.NotFoundError("No types found for external_ids.")
    return access.type_rows_to_messages(db, kind, rows, io_types=False, base_type=False)
