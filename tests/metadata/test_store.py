"""The store itself: connection modes, the file's identity and schema, one transaction per
call, a closed store, and readers in other threads beside the writer."""

from __future__ import annotations

import threading
from pathlib import Path

import apsw
import pytest

import boardd.metadata as mlmd
from boardd.metadata import errors, metadata_store, schema
from boardd.metadata.proto import metadata_store_pb2 as pb


def sqlite_config(path: Path, mode: int = 3) -> pb.ConnectionConfig:
    config = pb.ConnectionConfig()
    config.sqlite.filename_uri = str(path)
    config.sqlite.connection_mode = mode  # type: ignore[assignment]
    return config


def test_the_issue_import_lines_work() -> None:
    from boardd.metadata import errors as errors_module
    from boardd.metadata import metadata_store as store_module
    from boardd.metadata.proto import metadata_store_pb2

    assert store_module.MetadataStore is mlmd.MetadataStore
    assert mlmd.proto.Artifact is metadata_store_pb2.Artifact
    assert issubclass(errors_module.NotFoundError, errors_module.StatusError)
    assert errors_module.NotFoundError("x").error_code == errors_module.NOT_FOUND
    assert type(errors_module.make_exception("m", errors_module.ALREADY_EXISTS)) is (
        errors_module.AlreadyExistsError
    )


def test_a_file_store_persists_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "lineage.sqlite"
    with metadata_store.MetadataStore(sqlite_config(path)) as store:
        type_id = store.put_artifact_type(pb.ArtifactType(name="Data"))
        store.put_artifacts([pb.Artifact(type_id=type_id, uri="/x")])
    with metadata_store.MetadataStore(
        sqlite_config(path, pb.SqliteMetadataSourceConfig.READWRITE)
    ) as store:
        assert [a.uri for a in store.get_artifacts()] == ["/x"]
    connection = apsw.Connection(str(path))
    try:
        assert connection.pragma("application_id") == schema.APPLICATION_ID
        assert connection.pragma("user_version") == schema.SCHEMA_VERSION
        assert connection.pragma("journal_mode") == "wal"
    finally:
        connection.close()


def test_read_only_refuses_writes_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "lineage.sqlite"
    with pytest.raises(errors.UnavailableError, match="cannot open"):
        metadata_store.MetadataStore(sqlite_config(path, pb.SqliteMetadataSourceConfig.READONLY))
    with pytest.raises(errors.UnavailableError):
        metadata_store.MetadataStore(sqlite_config(path, pb.SqliteMetadataSourceConfig.READWRITE))
    with metadata_store.MetadataStore(sqlite_config(path)) as store:
        store.put_context_type(pb.ContextType(name="Exp"))
    readonly = sqlite_config(path, pb.SqliteMetadataSourceConfig.READONLY)
    with metadata_store.MetadataStore(readonly) as reader:
        assert [t.name for t in reader.get_context_types()] == ["Exp"]
        with pytest.raises(errors.PermissionDeniedError, match="read-only"):
            reader.put_context_type(pb.ContextType(name="Other"))


def test_other_sqlite_files_are_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    connection = apsw.Connection(str(path))
    connection.execute("CREATE TABLE t (x)")
    connection.close()
    with pytest.raises(errors.FailedPreconditionError, match="not a boardd lineage store"):
        metadata_store.MetadataStore(sqlite_config(path))
    connection = apsw.Connection(str(path))
    try:
        assert connection.execute("SELECT name FROM sqlite_schema").fetchall() == [("t",)]
    finally:
        connection.close()


def test_other_backends_and_configs_are_refused_clearly() -> None:
    mysql = pb.ConnectionConfig()
    mysql.mysql.host = "db"
    with pytest.raises(errors.InvalidArgumentError, match="SQLite"):
        metadata_store.MetadataStore(mysql)
    with pytest.raises(errors.InvalidArgumentError, match="filename_uri"):
        metadata_store.MetadataStore(pb.ConnectionConfig(sqlite=pb.SqliteMetadataSourceConfig()))
    with pytest.raises(errors.InvalidArgumentError, match="gRPC"):
        metadata_store.MetadataStore(pb.MetadataStoreClientConfig(host="x"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ConnectionConfig"):
        metadata_store.MetadataStore("lineage.sqlite")  # type: ignore[arg-type]


def test_a_closed_store_says_so(store: metadata_store.MetadataStore) -> None:
    store.close()
    store.close()
    with pytest.raises(errors.FailedPreconditionError, match="closed"):
        store.get_artifacts()


def test_each_call_is_one_transaction(store: metadata_store.MetadataStore) -> None:
    """put_execution fails on its last context: the execution, artifacts and events it wrote
    before are gone too."""
    artifact_type = store.put_artifact_type(pb.ArtifactType(name="Data"))
    execution_type = store.put_execution_type(pb.ExecutionType(name="Run"))
    context_type = store.put_context_type(pb.ContextType(name="Exp"))
    pairs = [(pb.Artifact(type_id=artifact_type), pb.Event(type=pb.Event.OUTPUT))]
    with pytest.raises(errors.InvalidArgumentError):
        store.put_execution(
            pb.Execution(type_id=execution_type), pairs, [pb.Context(type_id=context_type)]
        )
    assert store.get_executions() == []
    assert store.get_artifacts() == []
    assert store.get_contexts() == []


def test_readers_in_other_threads_see_commits(tmp_path: Path) -> None:
    """One writer, readers in their own threads with their own READONLY stores (WAL)."""
    path = tmp_path / "lineage.sqlite"
    writer = metadata_store.MetadataStore(sqlite_config(path))
    type_id = writer.put_artifact_type(pb.ArtifactType(name="Data"))
    seen: list[int] = []
    failures: list[BaseException] = []
    written = threading.Event()
    done = threading.Event()

    def read() -> None:
        try:
            with metadata_store.MetadataStore(
                sqlite_config(path, pb.SqliteMetadataSourceConfig.READONLY)
            ) as reader:
                seen.append(len(reader.get_artifacts()))
                written.wait(30)
                seen.append(len(reader.get_artifacts()))
        except BaseException as exc:  # reported by the test below
            failures.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=read, name="lineage-reader")
    thread.start()
    try:
        writer.put_artifacts([pb.Artifact(type_id=type_id, uri=str(i)) for i in range(50)])
        written.set()
        assert done.wait(30)
    finally:
        written.set()
        thread.join(30)
        writer.close()
    assert not failures, failures
    assert seen[-1] == 50
    assert seen[0] in (0, 50)


def test_list_page_tokens_walk_the_whole_list(store: metadata_store.MetadataStore) -> None:
    """Pages with MLMD's tokens, as an HTTP client pages: every node once, in order."""
    type_id = store.put_artifact_type(pb.ArtifactType(name="Data"))
    for first in range(0, 45, 9):  # five calls: five distinct write times at most
        store.put_artifacts(
            [pb.Artifact(type_id=type_id, uri=str(i)) for i in range(first, first + 9)]
        )
    Field = pb.ListOperationOptions.OrderByField.Field
    for field in (Field.ID, Field.CREATE_TIME, Field.LAST_UPDATE_TIME):
        for is_asc in (True, False):
            options = pb.ListOperationOptions(max_result_size=7)
            options.order_by_field.field = field
            options.order_by_field.is_asc = is_asc
            seen: list[int] = []
            pages = 0
            while True:
                nodes, token = store.list_page("artifact", options)
                seen.extend(n.id for n in nodes)
                pages += 1
                if not token:
                    break
                options.next_page_token = token
            everything = [a.id for a in store.get_artifacts()]
            assert sorted(seen) == everything and len(seen) == 45, (field, is_asc)
            if field == Field.ID:
                assert seen == (everything if is_asc else everything[::-1])
            assert pages == 7


def test_list_page_refuses_bad_tokens_and_options(store: metadata_store.MetadataStore) -> None:
    type_id = store.put_artifact_type(pb.ArtifactType(name="Data"))
    store.put_artifacts([pb.Artifact(type_id=type_id) for _ in range(3)])
    options = pb.ListOperationOptions(max_result_size=1)
    _, token = store.list_page("artifact", options)
    changed = pb.ListOperationOptions(max_result_size=1, next_page_token=token)
    changed.order_by_field.is_asc = False
    with pytest.raises(errors.InvalidArgumentError, match="mismatch"):
        store.list_page("artifact", changed)
    with pytest.raises(errors.InvalidArgumentError, match="next page token"):
        store.list_page("artifact", pb.ListOperationOptions(next_page_token="%%%"))
    with pytest.raises(errors.InvalidArgumentError, match="max_result_size"):
        store.list_page("artifact", pb.ListOperationOptions(max_result_size=0))
    with pytest.raises(errors.InvalidArgumentError, match="node kind"):
        store.list_page("event", options)


def test_writers_of_one_file_wait_for_each_other(tmp_path: Path) -> None:
    """Several daemons record into one lineage file: each write waits for the others' (the
    busy timeout) instead of failing with AbortedError, as one begun as a read failed once
    another connection had committed since its read began."""
    path = tmp_path / "lineage.sqlite"
    with metadata_store.MetadataStore(sqlite_config(path)) as first:
        type_id = first.put_artifact_type(pb.ArtifactType(name="Checkpoint"))
    failures: list[Exception] = []

    def write(writer: int) -> None:
        with metadata_store.MetadataStore(sqlite_config(path)) as store:
            for i in range(100):
                artifact = pb.Artifact(type_id=type_id, uri=f"/{writer}/{i}", name=f"{writer}-{i}")
                try:
                    store.put_artifacts([artifact])
                except errors.AbortedError as exc:
                    failures.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with metadata_store.MetadataStore(sqlite_config(path)) as store:
        assert len(store.get_artifacts_by_type("Checkpoint")) == 300
