"""The store's schema, and its migrations as a ladder on ``PRAGMA user_version``."""

from __future__ import annotations

import logging

import apsw

from boardd.sqlite import ladder
from boardd.sqlite.connection import int_pragma
from boardd.store.block_layout import SEAL_AT

#: Marks a SQLite file as a boardd store ("bDsT"); checked on every open.
APPLICATION_ID = 0x62447354

log = logging.getLogger(__name__)


def _backfill_hparams(connection: apsw.Connection) -> None:
    # Imported here: it decodes protocol buffers, which a reader of the store never needs.
    from boardd.store import hparams

    hparams.backfill(connection)


def _seal_tails(connection: apsw.Connection) -> None:
    long_tail = connection.execute(
        "SELECT 1 FROM series s WHERE s.data_class = 1 AND s.capacity IS NULL "
        "AND s.kept >= ? LIMIT 1",
        (SEAL_AT,),
    ).get
    if long_tail is None:
        return  # nothing to seal: a new store, or one of sampled scalars
    # Imported here: numpy, which serve imports only after its first answers.
    from boardd.store import scalar_blocks

    def progress(done: int, total: int) -> None:
        log.info("converting the store: scalar series %d of %d in blocks", done, total)

    sealed = scalar_blocks.seal_store(connection, progress)
    if sealed:
        log.info("converting the store: %d scalar points now in blocks", sealed)


#: Each entry upgrades the schema from version ``i`` to ``i + 1`` (boardd.sqlite.ladder: all run
#: in one transaction that takes the write lock first). An entry is SQL, or SQL and a function
#: that fills what SQL alone cannot.
MIGRATIONS: tuple[ladder.Step, ...] = (
    """
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value ANY NOT NULL
    ) WITHOUT ROWID;
    -- Bumped by every commit of the writer; readers key their caches on it.
    INSERT INTO meta (key, value) VALUES ('generation', 0);
    -- This store file's identity: caches shared across processes and restarts (the disk tier)
    -- key on it, since generations and ids start again in a rebuilt or recreated store.
    INSERT INTO meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))));

    -- The single writer's claim on this store (the snapshot RFC's writer state).
    CREATE TABLE lease (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        owner TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        started REAL NOT NULL,
        heartbeat REAL NOT NULL,
        expiry_seconds REAL NOT NULL
    );

    CREATE TABLE experiments (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        logdir TEXT NOT NULL,
        creation_time REAL NOT NULL
    );

    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        experiment_id INTEGER NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        start_time REAL,
        deleted INTEGER NOT NULL DEFAULT 0,
        -- The store generation of the commit that created, undeleted or deleted this run:
        -- the live stream (GET /api/v1/stream) resumes from a generation with it.
        generation INTEGER NOT NULL DEFAULT 0,
        UNIQUE (experiment_id, name)
    );

    CREATE TABLE series (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        tag TEXT NOT NULL,
        plugin_name TEXT NOT NULL,
        plugin_content BLOB NOT NULL,
        data_class INTEGER NOT NULL,
        display_name TEXT NOT NULL,
        description TEXT NOT NULL,
        first_step INTEGER,
        last_step INTEGER,
        last_wall_time REAL,
        last_value REAL,
        max_length INTEGER NOT NULL DEFAULT 0,
        seen INTEGER NOT NULL DEFAULT 0,
        threshold INTEGER,
        capacity INTEGER,
        -- The store generation of the commit that last changed this series: with the
        -- request, the key of cached HTTP answers (a cached answer is never stale).
        generation INTEGER NOT NULL DEFAULT 0,
        UNIQUE (run_id, tag)
    );
    -- The live stream asks for "series changed since generation G" after every commit.
    CREATE INDEX series_by_generation ON series (generation);

    CREATE TABLE scalar_points (
        series_id INTEGER NOT NULL,
        step INTEGER NOT NULL,
        wall_time REAL NOT NULL,
        value REAL,
        PRIMARY KEY (series_id, step)
    ) WITHOUT ROWID;

    CREATE TABLE tensor_points (
        series_id INTEGER NOT NULL,
        step INTEGER NOT NULL,
        wall_time REAL NOT NULL,
        dtype INTEGER NOT NULL,
        shape TEXT NOT NULL,
        content BLOB NOT NULL,
        PRIMARY KEY (series_id, step)
    );

    CREATE TABLE blob_entries (
        series_id INTEGER NOT NULL,
        step INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        wall_time REAL NOT NULL,
        blob_id INTEGER NOT NULL,
        PRIMARY KEY (series_id, step, idx)
    ) WITHOUT ROWID;

    -- AUTOINCREMENT: a blob id handed to a client never comes to mean another blob.
    CREATE TABLE blobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        size INTEGER NOT NULL,
        chunks INTEGER NOT NULL
    );

    -- Chunks of at most 1 MiB, so a blob of any size fits and no SQLite value is large.
    CREATE TABLE blob_chunks (
        blob_id INTEGER NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
        chunk INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (blob_id, chunk)
    );

    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        path TEXT NOT NULL UNIQUE,
        device INTEGER,
        inode INTEGER,
        size INTEGER NOT NULL DEFAULT 0,
        consumed INTEGER NOT NULL DEFAULT 0,
        -- The file's first bytes: a file replaced by one that reuses the inode number (common
        -- on ext4 right after a delete) is still recognized as new.
        head BLOB,
        mtime REAL,
        state TEXT NOT NULL DEFAULT 'active',
        last_error TEXT
    );

    CREATE TABLE data_loss (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE,
        offset INTEGER NOT NULL,
        length INTEGER NOT NULL,
        reason TEXT NOT NULL,
        time REAL NOT NULL
    );
    CREATE INDEX data_loss_by_file ON data_loss (file_id, offset);

    CREATE TABLE run_events (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        step INTEGER NOT NULL,
        wall_time REAL NOT NULL,
        detail TEXT NOT NULL
    );
    """,
    # 2: how many points each series keeps (rows; steps for blob sequences), so that a store's
    # summary costs a query over its series, not a count of every point it holds.
    """
    ALTER TABLE series ADD COLUMN kept INTEGER NOT NULL DEFAULT 0;
    UPDATE series SET kept = (SELECT count(*) FROM scalar_points p WHERE p.series_id = series.id)
    WHERE data_class = 1;
    UPDATE series SET kept = (SELECT count(*) FROM tensor_points p WHERE p.series_id = series.id)
    WHERE data_class IN (0, 2);
    UPDATE series
    SET kept = (SELECT count(DISTINCT step) FROM blob_entries b WHERE b.series_id = series.id)
    WHERE data_class = 3;
    """,
    # 3: the last bytes before a file's read offset, so that a file rewritten in place keeping
    # its first bytes is not read on as if it had grown (NULL: not known, nothing checked).
    """
    ALTER TABLE files ADD COLUMN tail BLOB;
    """,
    # 4: a run's files found by an index, not a scan of every file of the store (a change to
    # one run of 10,000 looked at all their files).
    """
    CREATE INDEX IF NOT EXISTS files_by_run ON files (run_id);
    """,
    # 5: the hparams summaries decoded once, at ingest (store/hparams.py): the hparams API
    # reads them by run and by generation, never decoding a protocol buffer per answer.
    (
        """
        CREATE TABLE IF NOT EXISTS hparams (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            -- experiment, session_start or session_end
            kind TEXT NOT NULL,
            -- the message as JSON (see store/hparams.py)
            data TEXT NOT NULL,
            -- the generation of the commit that filed it (what changed since a generation)
            generation INTEGER NOT NULL,
            PRIMARY KEY (run_id, kind)
        );
        CREATE INDEX IF NOT EXISTS hparams_by_generation ON hparams (generation);
        """,
        _backfill_hparams,
    ),
    # 6: a file's version as it was when last read (an object's ETag or generation, a local
    # file's mtime in ns): a file replaced by one of the same size, or rewritten in place, is
    # looked at again (its first bytes, and those before the offset), not taken as unchanged
    # for its size (NULL: not known yet).
    """
    ALTER TABLE files ADD COLUMN version TEXT;
    """,
    # 7: the generation of the last commit that changed a series other than by appending points
    # after its last one (made it, deleted or replaced points): a reader holding the series as
    # of a later generation reads only the points after its last one.
    """
    ALTER TABLE series ADD COLUMN rewritten INTEGER NOT NULL DEFAULT 0;
    """,
    # 8: scalar points in columnar blocks with summaries (store/blocks.py): scalar_points is
    # now each series' open tail. A series that keeps every point has its long tail sealed.
    (
        """
        CREATE TABLE IF NOT EXISTS scalar_blocks (
            series_id INTEGER NOT NULL,
            first_step INTEGER NOT NULL,
            last_step INTEGER NOT NULL,
            count INTEGER NOT NULL,
            -- NULL: every value of the block is NaN
            min_value REAL,
            max_value REAL,
            -- NULL: NaN
            first_value REAL,
            last_value REAL,
            nan_count INTEGER NOT NULL,
            posinf_count INTEGER NOT NULL,
            neginf_count INTEGER NOT NULL,
            -- CRC-32C of segments, low and data, in this order (store/blocks.py): SQLite checks
            -- its pages' structure, not the bytes of a value.
            crc INTEGER NOT NULL,
            -- Before data: a column after a large value is reached through its overflow pages.
            segments BLOB NOT NULL,
            -- the block's points of lowest uniform-downsampling priority
            low BLOB NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (series_id, first_step)
        );
        """,
        _seal_tails,
    ),
)

#: The schema version this code writes.
SCHEMA_VERSION = len(MIGRATIONS)


class SchemaError(Exception):
    """The file is not a boardd store, or is from a newer boardd."""


def migrate(connection: apsw.Connection) -> int:
    """Brings the schema up to :data:`SCHEMA_VERSION`; returns the version found before."""
    return ladder.climb(connection, MIGRATIONS, APPLICATION_ID, _check_migratable)


def _check_migratable(connection: apsw.Connection, found: int) -> None:
    app_id = int_pragma(connection, "application_id")
    if found == 0 and app_id == 0 and _has_tables(connection):
        raise SchemaError("this SQLite file is not a boardd store (it has other tables)")
    if app_id not in (0, APPLICATION_ID):
        raise SchemaError(f"this SQLite file is not a boardd store (application_id {app_id:#x})")
    if found > SCHEMA_VERSION:
        raise SchemaError(
            f"store schema version {found} is newer than this boardd understands "
            f"({SCHEMA_VERSION}): upgrade boardd, or give another --db"
        )


def check_readable(connection: apsw.Connection) -> None:
    """Raises SchemaError unless the connection's file is a boardd store this code can read."""
    app_id = int_pragma(connection, "application_id")
    version = int_pragma(connection, "user_version")
    if app_id != APPLICATION_ID:
        raise SchemaError("this SQLite file is not a boardd store")
    if version != SCHEMA_VERSION:
        raise SchemaError(
            f"store schema version {version}, this boardd reads {SCHEMA_VERSION}: "
            "run the writer (boardd ingest or serve) once to migrate it"
        )


def _has_tables(connection: apsw.Connection) -> bool:
    row = connection.execute("SELECT count(*) FROM sqlite_schema").get
    return bool(row)
