"""The SQL of the lineage store (all of it but the filter_query translation), by node kind.

Artifacts, executions and contexts share one shape (a node table, a property table, a type in
``Type``); :class:`NodeKind` names each one's tables and columns and builds its statements once.
Id lists go to SQLite as one JSON array parameter (``json_each``), so a statement's text does
not depend on how many ids it gets and stays in APSW's statement cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from boardd.metadata.schema import ARTIFACT_TYPE, CONTEXT_TYPE, EXECUTION_TYPE

#: The ids of a JSON array parameter, as a subquery.
IDS = "(SELECT value FROM json_each(?))"

#: A node kind's name: what MLMD's filter language and boardd's HTTP API call it.
NodeName = Literal["artifact", "execution", "context"]

#: Property value columns, in the order property rows carry them.
VALUE_COLUMNS = ("int_value", "double_value", "string_value", "proto_value", "bool_value")


@dataclass(frozen=True)
class NodeKind:
    """One kind of node: its tables and the statements that read and write it."""

    name: NodeName
    table: str  # "Artifact"
    property_table: str  # "ArtifactProperty"
    fk: str  # "artifact_id": the property table's node column
    type_kind: int  # Type.type_kind
    #: Columns of the node table between type_id and the timestamps, as the proto names them
    #: (``state`` / ``last_known_state`` …); reads return them in this order.
    columns: tuple[str, ...]
    #: The columns an update writes (MLMD never updates an artifact's or execution's name).
    update_columns: tuple[str, ...]
    select: str = field(init=False)
    insert: str = field(init=False)
    update: str = field(init=False)
    select_properties: str = field(init=False)
    insert_property: str = field(init=False)
    delete_property: str = field(init=False)

    def __post_init__(self) -> None:
        cols = ", ".join(f"n.{c}" for c in self.columns)
        head = (
            f"SELECT n.id, n.type_id, t.name, {cols}, n.create_time_since_epoch, "
            f"n.last_update_time_since_epoch FROM {self.table} AS n "
            "JOIN Type AS t ON t.id = n.type_id"
        )
        insert_cols = ("type_id", *self.columns)
        sets = ", ".join(f"{c} = ?" for c in ("type_id", *self.update_columns))
        values = ", ".join(VALUE_COLUMNS)
        statements = {
            "select": head,
            "insert": (
                f"INSERT INTO {self.table} ({', '.join(insert_cols)}, create_time_since_epoch, "
                f"last_update_time_since_epoch) VALUES ({', '.join('?' * (len(insert_cols) + 2))})"
            ),
            "update": (
                f"UPDATE {self.table} SET {sets}, last_update_time_since_epoch = ? WHERE id = ?"
            ),
            "select_properties": (
                f"SELECT {self.fk}, name, is_custom_property, {values} "
                f"FROM {self.property_table} WHERE {self.fk} IN {IDS}"
            ),
            "insert_property": (
                f"INSERT INTO {self.property_table} ({self.fk}, name, is_custom_property, "
                f"{values}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            ),
            # As MLMD: a property and a custom property of the same name go together.
            "delete_property": (
                f"DELETE FROM {self.property_table} WHERE {self.fk} = ? AND name = ?"
            ),
        }
        for key, sql in statements.items():
            object.__setattr__(self, key, sql)

    def update_property(self, column: str) -> str:
        """Sets one value column of a property (by node and name, custom or not, as MLMD)."""
        assert column in VALUE_COLUMNS
        return f"UPDATE {self.property_table} SET {column} = ? WHERE {self.fk} = ? AND name = ?"

    def select_where(self, condition: str) -> str:
        """The node read with a WHERE condition over ``n`` (the node) and ``t`` (its type)."""
        return f"{self.select} WHERE {condition}"


ARTIFACT = NodeKind(
    name="artifact",
    table="Artifact",
    property_table="ArtifactProperty",
    fk="artifact_id",
    type_kind=ARTIFACT_TYPE,
    columns=("uri", "state", "name", "external_id"),
    update_columns=("uri", "state", "external_id"),
)
EXECUTION = NodeKind(
    name="execution",
    table="Execution",
    property_table="ExecutionProperty",
    fk="execution_id",
    type_kind=EXECUTION_TYPE,
    columns=("last_known_state", "name", "external_id"),
    update_columns=("last_known_state", "external_id"),
)
CONTEXT = NodeKind(
    name="context",
    table="Context",
    property_table="ContextProperty",
    fk="context_id",
    type_kind=CONTEXT_TYPE,
    columns=("name", "external_id"),
    update_columns=("name", "external_id"),
)

# -- types ------------------------------------------------------------------------------------

TYPE_COLUMNS = "id, name, version, description, external_id, input_type, output_type"
SELECT_TYPES_BY_IDS = f"SELECT {TYPE_COLUMNS} FROM Type WHERE type_kind = ? AND id IN {IDS}"
SELECT_TYPE_BY_ID = f"SELECT {TYPE_COLUMNS} FROM Type WHERE type_kind = ? AND id = ?"
SELECT_TYPE_BY_NAME = (
    f"SELECT {TYPE_COLUMNS} FROM Type WHERE type_kind = ? AND name = ? AND version IS ?"
)
#: User types only: MLMD's simple system types (those with a child link target) stay hidden.
SELECT_ALL_TYPES = (
    f"SELECT {TYPE_COLUMNS} FROM Type WHERE type_kind = ? "
    "AND name NOT IN ('mlmd.Dataset', 'mlmd.Model', 'mlmd.Metrics', 'mlmd.Statistics', "
    "'mlmd.Train', 'mlmd.Transform', 'mlmd.Process', 'mlmd.Evaluate', 'mlmd.Deploy') "
    "ORDER BY id"
)
SELECT_TYPES_BY_EXTERNAL_IDS = (
    f"SELECT {TYPE_COLUMNS} FROM Type WHERE type_kind = ? "
    "AND external_id IN (SELECT value FROM json_each(?))"
)
SELECT_TYPE_PROPERTIES = (
    f"SELECT type_id, name, data_type FROM TypeProperty WHERE type_id IN {IDS} ORDER BY name"
)
SELECT_PARENT_TYPE_NAMES = (
    "SELECT p.type_id, t.name FROM ParentType AS p JOIN Type AS t ON t.id = p.parent_type_id "
    f"WHERE p.type_id IN {IDS}"
)
INSERT_TYPE = (
    "INSERT INTO Type (name, version, type_kind, description, input_type, output_type, "
    "external_id) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
UPDATE_TYPE_EXTERNAL_ID = "UPDATE Type SET external_id = ? WHERE id = ?"
INSERT_TYPE_PROPERTY = "INSERT INTO TypeProperty (type_id, name, data_type) VALUES (?, ?, ?)"
INSERT_PARENT_TYPE = "INSERT INTO ParentType (type_id, parent_type_id) VALUES (?, ?)"
SELECT_SYSTEM_TYPE_ID = "SELECT id FROM Type WHERE name = ? AND type_kind = ? AND version IS NULL"

# -- edges ------------------------------------------------------------------------------------

INSERT_EVENT = (
    "INSERT INTO Event (artifact_id, execution_id, type, milliseconds_since_epoch) "
    "VALUES (?, ?, ?, ?)"
)
INSERT_EVENT_PATH = (
    "INSERT INTO EventPath (event_id, is_index_step, step_index, step_key) VALUES (?, ?, ?, ?)"
)
EVENT_COLUMNS = "id, artifact_id, execution_id, type, milliseconds_since_epoch"
# In the order MLMD's SQLite answers (the index each query walks).
SELECT_EVENTS_BY_ARTIFACTS = (
    f"SELECT {EVENT_COLUMNS} FROM Event WHERE artifact_id IN {IDS} "
    "ORDER BY artifact_id, execution_id, type"
)
SELECT_EVENTS_BY_EXECUTIONS = (
    f"SELECT {EVENT_COLUMNS} FROM Event WHERE execution_id IN {IDS} ORDER BY execution_id, id"
)
SELECT_EVENT_PATHS = (
    "SELECT event_id, is_index_step, step_index, step_key FROM EventPath "
    f"WHERE event_id IN {IDS} ORDER BY rowid"
)
# MLMD inserts attributions and associations "if not exist": an existing one is no error.
INSERT_ATTRIBUTION = "INSERT OR IGNORE INTO Attribution (context_id, artifact_id) VALUES (?, ?)"
INSERT_ASSOCIATION = "INSERT OR IGNORE INTO Association (context_id, execution_id) VALUES (?, ?)"
INSERT_ATTRIBUTION_IF_NEW = INSERT_ATTRIBUTION
INSERT_ASSOCIATION_IF_NEW = INSERT_ASSOCIATION
ARTIFACT_EXISTS = "SELECT 1 FROM Artifact WHERE id = ?"
EXECUTION_EXISTS = "SELECT 1 FROM Execution WHERE id = ?"
CONTEXT_EXISTS = "SELECT 1 FROM Context WHERE id = ?"
ARTIFACT_ID_BY_EXTERNAL_ID = "SELECT id FROM Artifact WHERE external_id = ?"
SELECT_PARENT_IDS = "SELECT parent_context_id FROM ParentContext WHERE context_id = ?"
SELECT_CHILD_IDS = "SELECT context_id FROM ParentContext WHERE parent_context_id = ?"
#: Every ancestor of a context (for the cycle check of put_parent_contexts).
SELECT_ANCESTORS = (
    "WITH RECURSIVE up(id) AS (SELECT ? UNION SELECT p.parent_context_id FROM ParentContext "
    "AS p JOIN up ON p.context_id = up.id) SELECT id FROM up"
)
SELECT_CONTEXT_IDS_BY_ARTIFACT = "SELECT context_id FROM Attribution WHERE artifact_id = ?"
SELECT_CONTEXT_IDS_BY_EXECUTION = "SELECT context_id FROM Association WHERE execution_id = ?"
SELECT_ARTIFACT_IDS_BY_CONTEXT = "SELECT artifact_id FROM Attribution WHERE context_id = ?"
SELECT_EXECUTION_IDS_BY_CONTEXT = "SELECT execution_id FROM Association WHERE context_id = ?"
INSERT_PARENT_CONTEXT = "INSERT INTO ParentContext (context_id, parent_context_id) VALUES (?, ?)"

# -- lookups of the API calls -----------------------------------------------------------------

TYPE_ID_BY_EXTERNAL_ID = "SELECT id FROM Type WHERE external_id = ? AND type_kind = ?"
TYPE_ID_BY_NAME = "SELECT id FROM Type WHERE type_kind = ? AND name = ? AND version IS ?"
COUNT_CONTEXTS = f"SELECT count(*) FROM Context WHERE id IN {IDS}"
CONTEXT_ID_BY_TYPE_AND_NAME = "SELECT id FROM Context WHERE type_id = ? AND name = ?"
ARTIFACT_IDS_BY_EXTERNAL_IDS = (
    "SELECT id, external_id FROM Artifact WHERE external_id IN (SELECT value FROM json_each(?))"
)

# -- lineage ----------------------------------------------------------------------------------

#: The contexts of some artifacts (first JSON array) and executions (second).
CONTEXT_IDS_OF_NODES = (
    f"SELECT context_id FROM Attribution WHERE artifact_id IN {IDS} "
    f"UNION SELECT context_id FROM Association WHERE execution_id IN {IDS}"
)
ATTRIBUTIONS_OF_ARTIFACTS = (
    f"SELECT context_id, artifact_id FROM Attribution WHERE artifact_id IN {IDS} ORDER BY id"
)
ASSOCIATIONS_OF_EXECUTIONS = (
    f"SELECT context_id, execution_id FROM Association WHERE execution_id IN {IDS} ORDER BY id"
)


def filtered_ids(kind: NodeKind, expression: str, among: bool) -> str:
    """Ids of ``kind`` where a compiled filter_query holds (among a JSON array of ids)."""
    sql = f"SELECT DISTINCT n.id FROM {kind.table} AS n WHERE ({expression})"
    if among:
        sql += f" AND n.id IN {IDS}"
    return sql + " ORDER BY n.id"


def list_ids(kind: NodeKind, column: str, where: list[str], order: str, limit: int) -> str:
    """A page of ids (and their ordering column) of a list call."""
    return (
        f"SELECT DISTINCT n.id, n.{column} FROM {kind.table} AS n "
        f"WHERE {' AND '.join(where)} ORDER BY {order} LIMIT {int(limit)}"
    )
