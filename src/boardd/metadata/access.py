"""The lineage store's core: its connection and transactions, and its rows read as protos.

Every other module of boardd.metadata reads nodes and types through here (types in
type_registry.py, nodes in nodes.py, events and context links in edges.py, lists in
listing.py, lineage walks in lineage.py), and each public call of the API
(metadata_store.MetadataStore) is one :meth:`Access.transaction`. Row ↔ proto: nodes and types
from their rows with their properties (``nodes_from_rows``, ``type_rows_to_messages``), and a
property value as the property table's value columns (``value_columns``, ``fill_value``).
"""

from __future__ import annotations

import base64
import contextlib
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import apsw
from google.protobuf import json_format, struct_pb2
from google.protobuf.message import Message

from boardd.metadata import errors, queries, schema
from boardd.metadata.proto import metadata_store_pb2 as pb
from boardd.metadata.queries import NodeKind
from boardd.sqlite.connection import (
    immediate,
    no_double_quoted_strings,
    use_busy_timeout,
    use_normal_sync,
    use_wal,
)

#: How long a call waits for another connection's write lock (several daemons may share one
#: lineage file) before it fails as AbortedError.
BUSY_TIMEOUT_MS = 10_000

STRUCT_PREFIX = "mlmd-struct::"

ARTIFACT_BASE_TYPES: dict[int, str] = {
    pb.ArtifactType.DATASET: "mlmd.Dataset",
    pb.ArtifactType.MODEL: "mlmd.Model",
    pb.ArtifactType.METRICS: "mlmd.Metrics",
    pb.ArtifactType.STATISTICS: "mlmd.Statistics",
}
EXECUTION_BASE_TYPES: dict[int, str] = {
    pb.ExecutionType.TRAIN: "mlmd.Train",
    pb.ExecutionType.TRANSFORM: "mlmd.Transform",
    pb.ExecutionType.PROCESS: "mlmd.Process",
    pb.ExecutionType.EVALUATE: "mlmd.Evaluate",
    pb.ExecutionType.DEPLOY: "mlmd.Deploy",
}
#: The simple system types a type kind can have as its base type: enum value → type name.
BASE_TYPE_NAMES: dict[int, dict[int, str]] = {
    schema.ARTIFACT_TYPE: ARTIFACT_BASE_TYPES,
    schema.EXECUTION_TYPE: EXECUTION_BASE_TYPES,
    schema.CONTEXT_TYPE: {},
}
BASE_TYPE_ENUMS: dict[int, dict[str, int]] = {
    kind: {name: value for value, name in names.items()} for kind, names in BASE_TYPE_NAMES.items()
}

TYPE_CLASSES: dict[int, type[Message]] = {
    schema.ARTIFACT_TYPE: pb.ArtifactType,
    schema.EXECUTION_TYPE: pb.ExecutionType,
    schema.CONTEXT_TYPE: pb.ContextType,
}
NODE_CLASSES: dict[str, type[Message]] = {
    "artifact": pb.Artifact,
    "execution": pb.Execution,
    "context": pb.Context,
}


def ids_json(ids: Iterable[int]) -> str:
    """Ids as one JSON array parameter, which ``queries.IDS`` reads back (``json_each``).

    Written by hand rather than by json.dumps: most calls pass a handful of ids, where the
    join costs less than the encoder's setup."""
    return "[" + ",".join(str(int(i)) for i in ids) + "]"


def value_columns(name: str, value: pb.Value) -> tuple[Any, Any, Any, Any, Any]:
    """A Value as the property table's (int, double, string, proto, bool) columns.

    Refused, so that a stored node always reads back: a Value with nothing set
    (:class:`InvalidArgumentError`; ML Metadata aborts the process on a custom one) and a NaN
    double (:class:`InternalError`, ML Metadata's class for it: SQLite would keep a NULL)."""
    which = value.WhichOneof("value")
    if which == "int_value":
        return (value.int_value, None, None, None, None)
    if which == "double_value":
        if math.isnan(value.double_value):
            raise UnstorableValueError(
                f"Cannot store property {name!r}: its double_value is NaN, which the store "
                "cannot hold (ML Metadata refuses it too); leave it out or store a string"
            )
        return (None, value.double_value, None, None, None)
    if which == "string_value":
        return (None, None, value.string_value, None, None)
    if which == "struct_value":
        encoded = base64.b64encode(value.struct_value.SerializeToString()).decode("ascii")
        return (None, None, STRUCT_PREFIX + encoded, None, None)
    if which == "proto_value":
        return (None, None, None, value.proto_value.SerializeToString(), None)
    if which == "bool_value":
        return (None, None, None, None, int(value.bool_value))
    raise errors.InvalidArgumentError(f"Found property with no value set: {name}")


def fill_value(value: pb.Value, row: Sequence[Any]) -> None:
    """Sets ``value`` from a property row's value columns (row[3:8])."""
    int_value, double_value, string_value, proto_value, bool_value = row[3:8]
    if int_value is not None:
        value.int_value = int_value
    elif double_value is not None:
        value.double_value = double_value
    elif string_value is not None:
        if string_value.startswith(STRUCT_PREFIX):
            struct = struct_pb2.Struct()
            struct.ParseFromString(base64.b64decode(string_value[len(STRUCT_PREFIX) :]))
            value.struct_value.CopyFrom(struct)
        else:
            value.string_value = string_value
    elif proto_value is not None:
        value.proto_value.ParseFromString(proto_value)
    elif bool_value is not None:
        value.bool_value = bool(bool_value)
    else:
        raise errors.InternalError(
            "Attempt to populate property with null value in every known *_value column."
        )


class UnstorableValueError(errors.InternalError):
    """A property value the store cannot hold (a NaN double): ML Metadata's InternalError for
    it, which boardd's HTTP API answers as the client's error (400), not as its own (500)."""


class CannotConnectError(errors.UnavailableError, RuntimeError):
    """The store's file cannot be opened: an UnavailableError that is also the RuntimeError
    ML Metadata raises then ("Cannot connect sqlite3 database"), so that a script's
    ``except RuntimeError`` catches it as it did."""


class Access:
    """A lineage store's connection: opened, migrated, and used one transaction per call."""

    def __init__(self, config: pb.ConnectionConfig) -> None:
        self._closed = False
        self._connection = _connect(config)
        try:
            _prepare(self._connection, config)
        except BaseException:
            self._connection.close()
            raise

    def close(self) -> None:
        """Closes the connection (idempotent)."""
        if not self._closed:
            self._closed = True
            self._connection.close()

    @contextlib.contextmanager
    def transaction(self, *, write: bool = False) -> Iterator[apsw.Connection]:
        """One call's transaction; SQLite errors become MLMD's exceptions.

        A call that writes takes the write lock as it begins (BEGIN IMMEDIATE), waiting up to
        the busy timeout while another connection writes (several daemons share one lineage
        file): begun as a read, its first write would fail at once, without waiting, had
        another connection committed since its read began (SQLITE_BUSY_SNAPSHOT)."""
        if self._closed:
            raise errors.FailedPreconditionError("this MetadataStore is closed")
        try:
            if write and not self._connection.in_transaction:
                with immediate(self._connection) as db:
                    yield db
            else:
                with self._connection:
                    yield self._connection
        except errors.StatusError:
            raise
        except apsw.ConstraintError as exc:
            raise errors.AlreadyExistsError(f"Given node already exists: {exc}") from exc
        except (apsw.BusyError, apsw.LockedError) as exc:
            raise errors.AbortedError(f"the lineage store is busy, retry: {exc}") from exc
        except apsw.ReadOnlyError as exc:
            raise errors.PermissionDeniedError(
                f"the lineage store is open read-only: {exc}"
            ) from exc
        except apsw.Error as exc:
            raise errors.InternalError(f"lineage store error: {exc}") from exc


def execute_or_internal_error(db: apsw.Connection, sql: str, params: tuple[Any, ...]) -> None:
    """Runs a statement whose constraint failure ML Metadata reports as an InternalError (an
    update to a name or external id another row holds), not as AlreadyExists."""
    try:
        db.execute(sql, params)
    except apsw.ConstraintError as exc:
        raise errors.InternalError(f"Error when executing query: {exc}") from exc


def _connect(config: pb.ConnectionConfig) -> apsw.Connection:
    which = config.WhichOneof("config")
    if which == "fake_database":
        return apsw.Connection(":memory:")
    if which != "sqlite":
        raise errors.InvalidArgumentError(
            f"boardd keeps lineage in SQLite: a ConnectionConfig with {which or 'nothing'} "
            "set is not supported; set sqlite.filename_uri (a file) or fake_database "
            "(in memory)"
        )
    sqlite = config.sqlite
    if not sqlite.filename_uri:
        raise errors.InvalidArgumentError(
            "ConnectionConfig.sqlite.filename_uri is empty: give the lineage file's path"
        )
    mode = sqlite.connection_mode
    if mode == pb.SqliteMetadataSourceConfig.READONLY:
        flags = apsw.SQLITE_OPEN_READONLY
    elif mode == pb.SqliteMetadataSourceConfig.READWRITE:
        flags = apsw.SQLITE_OPEN_READWRITE
    else:
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    filename = sqlite.filename_uri
    if filename.startswith("file:"):
        flags |= apsw.SQLITE_OPEN_URI
    try:
        return apsw.Connection(filename, flags=flags)
    except apsw.CantOpenError as exc:
        raise CannotConnectError(
            f"cannot open the lineage store {filename!r} "
            f"({pb.SqliteMetadataSourceConfig.ConnectionMode.Name(mode)}): {exc}"
        ) from exc


def _prepare(connection: apsw.Connection, config: pb.ConnectionConfig) -> None:
    use_busy_timeout(connection, BUSY_TIMEOUT_MS)
    no_double_quoted_strings(connection)
    readonly = config.WhichOneof("config") == "sqlite" and (
        config.sqlite.connection_mode == pb.SqliteMetadataSourceConfig.READONLY
    )
    try:
        if readonly:
            schema.check_identity(connection)
            if connection.pragma("user_version") != schema.SCHEMA_VERSION:
                raise errors.FailedPreconditionError(
                    "the lineage store is empty or from an older boardd: open it once "
                    "read-write to create or migrate it"
                )
            return
        if config.WhichOneof("config") == "sqlite":
            use_wal(connection)
            use_normal_sync(connection)
        schema.migrate(connection)
    except schema.SchemaError as exc:
        raise errors.FailedPreconditionError(str(exc)) from exc
    except apsw.Error as exc:
        raise errors.UnavailableError(f"cannot use the lineage store: {exc}") from exc


# -- rows as protos -----------------------------------------------------------------------------


def type_rows_to_messages(
    db: apsw.Connection,
    kind: int,
    rows: list[tuple[Any, ...]],
    *,
    external_id: bool = True,
    io_types: bool = True,
    base_type: bool = True,
) -> list[Any]:
    """Type messages from ``(id, name, version, description, external_id, input_type,
    output_type)`` rows, with their properties (and base types)."""
    cls = TYPE_CLASSES[kind]
    out: list[Any] = []
    for type_id, name, version, description, ext_id, input_type, output_type in rows:
        message: Any = cls(id=type_id, name=name)
        if version is not None:
            message.version = version
        if description is not None:
            message.description = description
        if external_id and ext_id is not None:
            message.external_id = ext_id
        if io_types and kind == schema.EXECUTION_TYPE:
            if input_type:
                json_format.Parse(input_type, message.input_type)
            if output_type:
                json_format.Parse(output_type, message.output_type)
        out.append(message)
    if not out:
        return out
    by_id: dict[int, list[Any]] = {}
    for message in out:
        by_id.setdefault(message.id, []).append(message)
    ids = ids_json(by_id)
    for type_id, name, data_type in db.execute(queries.SELECT_TYPE_PROPERTIES, (ids,)):
        for message in by_id[type_id]:
            message.properties[name] = data_type
    if base_type and BASE_TYPE_ENUMS[kind]:
        for type_id, parent_name in db.execute(queries.SELECT_PARENT_TYPE_NAMES, (ids,)):
            enum_value = BASE_TYPE_ENUMS[kind].get(parent_name)
            if enum_value is not None:
                for message in by_id[type_id]:
                    message.base_type = enum_value
    return out


def type_rows_by_ids(db: apsw.Connection, kind: int, type_ids: Iterable[int]) -> list[Any]:
    """The rows of the types of this kind among these ids, as SQLite answers them."""
    return db.execute(queries.SELECT_TYPES_BY_IDS, (kind, ids_json(type_ids))).fetchall()


def find_type_by_name(db: apsw.Connection, kind: int, name: str, version: str | None) -> Any | None:
    rows = list(db.execute(queries.SELECT_TYPE_BY_NAME, (kind, name, version or None)))
    if not rows:
        return None
    return type_rows_to_messages(db, kind, rows[:1])[0]


def nodes_from_rows(
    db: apsw.Connection, kind: NodeKind, rows: Iterable[tuple[Any, ...]]
) -> list[Any]:
    """Node messages from ``kind.select`` rows, in row order, with their properties."""
    cls = NODE_CLASSES[kind.name]
    columns = kind.columns
    out: list[Any] = []
    by_id: dict[int, Any] = {}
    for row in rows:
        fields: dict[str, Any] = {"id": row[0], "type_id": row[1], "type": row[2]}
        for column, value in zip(columns, row[3:-2], strict=True):
            if value is not None:
                fields[column] = value
        fields["create_time_since_epoch"] = row[-2]
        fields["last_update_time_since_epoch"] = row[-1]
        node = cls(**fields)
        out.append(node)
        by_id[row[0]] = node
    if by_id:
        for prop in db.execute(kind.select_properties, (ids_json(by_id),)):
            node = by_id[prop[0]]
            target = node.custom_properties if prop[2] else node.properties
            fill_value(target[prop[1]], prop)
    return out


def find_nodes(db: apsw.Connection, kind: NodeKind, ids: Sequence[int]) -> list[Any]:
    """Nodes of these ids, by id ascending, unknown ids skipped (as MLMD's IN query)."""
    if not ids:
        return []
    rows = db.execute(kind.select_where(f"n.id IN {queries.IDS} ORDER BY n.id"), (ids_json(ids),))
    return nodes_from_rows(db, kind, rows)
