"""The lineage service: one writer thread, readers of their own, refreshes that follow the
commit bus, and a store that cannot be opened failing calls instead of the daemon."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from boardd.data.changes import ChangeHub
from boardd.lineage import LineageService, LineageUnavailable, vocabulary
from boardd.metadata.proto import metadata_store_pb2 as pb
from tests.conftest import LiveStore
from tests.daemon.conftest import wait_until


def test_a_commit_on_the_bus_brings_its_files_in(tmp_path: Path, live_stores: object) -> None:
    hub = ChangeHub()
    live: LiveStore = live_stores("exp", hub)  # type: ignore[operator]
    service = LineageService(tmp_path / "lineage.sqlite", [live.spec], hub=hub, min_interval=0.05)
    service.start()
    try:
        run = live.run("train")
        run.scalars("loss", {0: 1.0, 1: 0.5})
        live.commit()
        # The file's row can reach the store (and the artifact the lineage store, with the
        # records counted so far) before the commit that brings its points: wait for the count.
        wait_until(
            lambda: (
                service.read(
                    lambda s: [
                        a.properties["records"].int_value
                        for a in s.get_artifacts_by_type(vocabulary.EVENT_FILE)
                    ]
                )
                == [3]
            ),  # the file version, two points
            what="the event file's artifact with its three records",
        )
        run.scalars("loss", {2: 0.25})
        live.commit()
        wait_until(
            lambda: service.read(
                lambda s: (
                    s.get_artifacts_by_type(vocabulary.EVENT_FILE)[0]
                    .properties["records"]
                    .int_value
                    == 4
                )
            ),
            what="the grown file's record count",
        )
        [execution] = service.read(lambda s: s.get_executions_by_type(vocabulary.TRAINING_RUN))
        assert execution.properties["last_step"].int_value == 2
    finally:
        service.close()


def test_a_service_nobody_started_opens_at_its_first_use(tmp_path: Path) -> None:
    # boardd serve starts its lineage store after its first answer; a lineage request that
    # comes first opens it at once instead of waiting for that.
    service = LineageService(tmp_path / "lineage.sqlite")
    try:
        assert service.status()["state"] == "opening"
        assert service.read(lambda s: s.get_artifact_types()) is not None
        assert service.status()["state"] == "open"
        service.start()  # a later start does nothing
        t = pb.ArtifactType(name="DataSet")
        assert service.write(lambda s: int(s.put_artifact_type(t))) > 0
    finally:
        service.close()
    # Once closed, start() starts nothing.
    before = set(threading.enumerate())
    service.start()
    assert set(threading.enumerate()) <= before


def test_writes_run_on_one_thread_and_readers_have_their_own(tmp_path: Path) -> None:
    service = LineageService(tmp_path / "lineage.sqlite")
    service.start()
    try:
        threads = set()

        def put(store: object) -> int:
            threads.add(threading.current_thread().name)
            t = pb.ArtifactType(name="DataSet")
            return int(store.put_artifact_type(t))  # type: ignore[attr-defined]

        results = [service.submit(put) for _ in range(20)]
        assert len({f.result() for f in results}) == 1
        assert threads == {"boardd-lineage"}
        seen: list[str] = []

        def read() -> None:
            seen.append(service.read(lambda s: s.get_artifact_type("DataSet").name))

        readers = [threading.Thread(target=read) for _ in range(4)]
        for t in readers:
            t.start()
        for t in readers:
            t.join()
        assert seen == ["DataSet"] * 4
    finally:
        service.close()
    service.close()  # twice is fine
    with pytest.raises(LineageUnavailable):
        service.submit(lambda s: None).result()


def test_a_file_that_is_not_a_lineage_store_fails_calls_not_the_process(tmp_path: Path) -> None:
    bad = tmp_path / "lineage.sqlite"
    bad.write_bytes(b"this is not SQLite at all" * 100)
    service = LineageService(bad)
    service.start()
    try:
        with pytest.raises(LineageUnavailable, match="cannot be opened"):
            service.wait_open()
        with pytest.raises(LineageUnavailable, match="cannot be opened"):
            service.write(lambda s: s.get_artifact_types())
        assert service.error
        assert service.status() == {
            "path": str(bad),
            "state": "failed",
            "error": service.error,
            "refreshes": 0,
        }
    finally:
        service.close()
    assert bad.read_bytes().startswith(b"this is not SQLite")


def test_daemons_sharing_a_lineage_file_record_one_at_a_time(
    tmp_path: Path, live_stores: object, caplog: pytest.LogCaptureFixture
) -> None:
    """Two daemons on the default lineage file: only the lock holder records the logdirs (two
    recorders' caches would go stale and their writes collide); the other takes over when the
    holder stops."""
    caplog.set_level(logging.INFO, logger="boardd.lineage")
    hub = ChangeHub()
    live: LiveStore = live_stores("exp", hub)  # type: ignore[operator]
    live.run("train").scalars("loss", {0: 1.0})
    live.commit()
    path = tmp_path / "lineage.sqlite"
    first = LineageService(path, [live.spec], min_interval=0.0)
    second = LineageService(path, [live.spec], min_interval=0.0)

    def files(service: LineageService) -> list[str]:
        return sorted(
            a.uri for a in service.read(lambda s: s.get_artifacts_by_type(vocabulary.EVENT_FILE))
        )

    try:
        first.start()
        first.refresh_now()  # the first to refresh takes the recorder's lock
        assert len(files(first)) == 1
        second.start()
        live.run("eval").scalars("loss", {0: 2.0})
        live.commit()
        second.refresh_now()  # not the recorder: writes nothing
        assert len(files(second)) == 1
        first.refresh_now()
        assert len(files(second)) == 2
        first.close()
        live.run("test").scalars("loss", {0: 3.0})
        live.commit()
        second.refresh_now()  # the lock is free: it records from now on
        assert len(files(second)) == 3
    finally:
        first.close()
        second.close()
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    assert any("another boardd records" in r.getMessage() for r in caplog.records)
