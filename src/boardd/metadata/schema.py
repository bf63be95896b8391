"""The lineage store's schema (``lineage.sqlite``), a ladder of migrations on ``user_version``.

Table and column names are ML Metadata's own (its SQLite schema, version 10), so that what
one knows of MLMD's tables holds here, and filter queries translate the way MLMD's do. The
differences: an ``application_id`` marks the file as boardd's, a few indexes serve lineage
walks (events by artifact, attributions by artifact, associations by execution), and the
schema version lives in ``PRAGMA user_version`` (there is no MLMDEnv table).

Ids are AUTOINCREMENT as in MLMD: never reused, and equal to MLMD's for the same calls, since
both stores first register the same nine simple system types (ids 1-9).
"""

from __future__ import annotations

import apsw

from boardd.sqlite import ladder
from boardd.sqlite.connection import int_pragma

#: Marks a SQLite file as a boardd lineage store ("bDlN"); checked on every open.
APPLICATION_ID = 0x62446C4E

#: Type.type_kind, as MLMD numbers them.
EXECUTION_TYPE = 0
ARTIFACT_TYPE = 1
CONTEXT_TYPE = 2

#: The simple system types MLMD registers in every new store, in its order (ids 1-9).
SYSTEM_TYPES: tuple[tuple[str, int], ...] = (
    ("mlmd.Dataset", ARTIFACT_TYPE),
    ("mlmd.Model", ARTIFACT_TYPE),
    ("mlmd.Metrics", ARTIFACT_TYPE),
    ("mlmd.Statistics", ARTIFACT_TYPE),
    ("mlmd.Train", EXECUTION_TYPE),
    ("mlmd.Transform", EXECUTION_TYPE),
    ("mlmd.Process", EXECUTION_TYPE),
    ("mlmd.Evaluate", EXECUTION_TYPE),
    ("mlmd.Deploy", EXECUTION_TYPE),
)

_PROPERTY_COLUMNS = """
        name TEXT NOT NULL,
        is_custom_property INTEGER NOT NULL,
        int_value INTEGER,
        double_value REAL,
        string_value TEXT,
        byte_value BLOB,
        proto_value BLOB,
        bool_value INTEGER,"""

_SYSTEM_TYPE_ROWS = ",\n".join(f"('{name}', {kind})" for name, kind in SYSTEM_TYPES)

#: Each entry upgrades the schema from version ``i`` to ``i + 1``; all run in one transaction.
MIGRATIONS: tuple[str, ...] = (
    f"""
    CREATE TABLE Type (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        version TEXT,
        type_kind INTEGER NOT NULL,
        description TEXT,
        input_type TEXT,
        output_type TEXT,
        external_id TEXT UNIQUE
    );
    CREATE INDEX idx_type_name ON Type (name);
    CREATE TABLE TypeProperty (
        type_id INTEGER NOT NULL,
        name TEXT NOT NULL,
        data_type INTEGER,
        PRIMARY KEY (type_id, name)
    ) WITHOUT ROWID;
    CREATE TABLE ParentType (
        type_id INTEGER NOT NULL,
        parent_type_id INTEGER NOT NULL,
        PRIMARY KEY (type_id, parent_type_id)
    ) WITHOUT ROWID;

    CREATE TABLE Artifact (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        type_id INTEGER NOT NULL,
        uri TEXT,
        state INTEGER,
        name TEXT,
        external_id TEXT UNIQUE,
        create_time_since_epoch INTEGER NOT NULL DEFAULT 0,
        last_update_time_since_epoch INTEGER NOT NULL DEFAULT 0,
        UNIQUE (type_id, name)
    );
    CREATE INDEX idx_artifact_uri ON Artifact (uri);
    CREATE INDEX idx_artifact_create_time_since_epoch ON Artifact (create_time_since_epoch);
    CREATE INDEX idx_artifact_last_update_time_since_epoch
        ON Artifact (last_update_time_since_epoch);
    CREATE TABLE ArtifactProperty (
        artifact_id INTEGER NOT NULL,{_PROPERTY_COLUMNS}
        PRIMARY KEY (artifact_id, name, is_custom_property)
    ) WITHOUT ROWID;

    CREATE TABLE Execution (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        type_id INTEGER NOT NULL,
        last_known_state INTEGER,
        name TEXT,
        external_id TEXT UNIQUE,
        create_time_since_epoch INTEGER NOT NULL DEFAULT 0,
        last_update_time_since_epoch INTEGER NOT NULL DEFAULT 0,
        UNIQUE (type_id, name)
    );
    CREATE INDEX idx_execution_create_time_since_epoch ON Execution (create_time_since_epoch);
    CREATE INDEX idx_execution_last_update_time_since_epoch
        ON Execution (last_update_time_since_epoch);
    CREATE TABLE ExecutionProperty (
        execution_id INTEGER NOT NULL,{_PROPERTY_COLUMNS}
        PRIMARY KEY (execution_id, name, is_custom_property)
    ) WITHOUT ROWID;

    CREATE TABLE Context (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        type_id INTEGER NOT NULL,
        name TEXT NOT NULL,
        external_id TEXT UNIQUE,
        create_time_since_epoch INTEGER NOT NULL DEFAULT 0,
        last_update_time_since_epoch INTEGER NOT NULL DEFAULT 0,
        UNIQUE (type_id, name)
    );
    CREATE INDEX idx_context_create_time_since_epoch ON Context (create_time_since_epoch);
    CREATE INDEX idx_context_last_update_time_since_epoch
        ON Context (last_update_time_since_epoch);
    CREATE TABLE ContextProperty (
        context_id INTEGER NOT NULL,{_PROPERTY_COLUMNS}
        PRIMARY KEY (context_id, name, is_custom_property)
    ) WITHOUT ROWID;

    CREATE TABLE Event (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        artifact_id INTEGER NOT NULL,
        execution_id INTEGER NOT NULL,
        type INTEGER NOT NULL,
        milliseconds_since_epoch INTEGER,
        UNIQUE (artifact_id, execution_id, type)
    );
    CREATE INDEX idx_event_execution_id ON Event (execution_id);
    CREATE TABLE EventPath (
        event_id INTEGER NOT NULL,
        is_index_step INTEGER NOT NULL,
        step_index INTEGER,
        step_key TEXT
    );
    CREATE INDEX idx_eventpath_event_id ON EventPath (event_id);

    CREATE TABLE Association (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        context_id INTEGER NOT NULL,
        execution_id INTEGER NOT NULL,
        UNIQUE (context_id, execution_id)
    );
    CREATE INDEX idx_association_execution_id ON Association (execution_id);
    CREATE TABLE Attribution (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        context_id INTEGER NOT NULL,
        artifact_id INTEGER NOT NULL,
        UNIQUE (context_id, artifact_id)
    );
    CREATE INDEX idx_attribution_artifact_id ON Attribution (artifact_id);
    CREATE TABLE ParentContext (
        context_id INTEGER NOT NULL,
        parent_context_id INTEGER NOT NULL,
        PRIMARY KEY (context_id, parent_context_id)
    ) WITHOUT ROWID;
    CREATE INDEX idx_parentcontext_parent_context_id ON ParentContext (parent_context_id);
    -- ml-metadata's property-value indexes (its schema v8): a selective filter_query on a
    -- property starts from them (bench/bench_lineage_filter.py measures them).
    CREATE INDEX idx_artifact_property_int
        ON ArtifactProperty (name, is_custom_property, int_value)
        WHERE int_value IS NOT NULL;
    CREATE INDEX idx_artifact_property_double
        ON ArtifactProperty (name, is_custom_property, double_value)
        WHERE double_value IS NOT NULL;
    CREATE INDEX idx_artifact_property_string
        ON ArtifactProperty (name, is_custom_property, string_value)
        WHERE string_value IS NOT NULL;
    CREATE INDEX idx_execution_property_int
        ON ExecutionProperty (name, is_custom_property, int_value)
        WHERE int_value IS NOT NULL;
    CREATE INDEX idx_execution_property_double
        ON ExecutionProperty (name, is_custom_property, double_value)
        WHERE double_value IS NOT NULL;
    CREATE INDEX idx_execution_property_string
        ON ExecutionProperty (name, is_custom_property, string_value)
        WHERE string_value IS NOT NULL;
    CREATE INDEX idx_context_property_int
        ON ContextProperty (name, is_custom_property, int_value)
        WHERE int_value IS NOT NULL;
    CREATE INDEX idx_context_property_double
        ON ContextProperty (name, is_custom_property, double_value)
        WHERE double_value IS NOT NULL;
    CREATE INDEX idx_context_property_string
        ON ContextProperty (name, is_custom_property, string_value)
        WHERE string_value IS NOT NULL;

    INSERT INTO Type (name, type_kind) VALUES
    {_SYSTEM_TYPE_ROWS};
    """,
)

#: The schema version this code writes.
SCHEMA_VERSION = len(MIGRATIONS)


class SchemaError(Exception):
    """The file is not a boardd lineage store, or is from a newer boardd."""


def migrate(connection: apsw.Connection) -> int:
    """Brings the schema up to :data:`SCHEMA_VERSION`; returns the version found before.

    As the logdir store's (boardd.sqlite.ladder): the transaction takes the write lock first
    (BEGIN IMMEDIATE), so two processes opening a new file at once wait for each other (the
    busy timeout), where a read upgraded to a write fails at once with "database is locked"."""
    return ladder.climb(connection, MIGRATIONS, APPLICATION_ID, check_identity)


def check_identity(connection: apsw.Connection, version: int | None = None) -> None:
    """Raises SchemaError unless the file is empty or a lineage store this code can read."""
    if version is None:
        version = int_pragma(connection, "user_version")
    app_id = int_pragma(connection, "application_id")
    if app_id == 0 and version == 0:
        if connection.execute("SELECT count(*) FROM sqlite_schema").get:
            raise SchemaError(
                "this SQLite file is not a boardd lineage store (it has other tables; "
                "an ml-metadata database cannot be opened in place)"
            )
        return
    if app_id != APPLICATION_ID:
        raise SchemaError(
            f"this SQLite file is not a boardd lineage store (application_id {app_id:#x})"
        )
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"lineage store schema version {version} is newer than this boardd understands "
            f"({SCHEMA_VERSION}): upgrade boardd"
        )
