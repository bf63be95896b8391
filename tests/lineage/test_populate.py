"""Auto-population: a logdir with checkpoints and hparams (tensorboardX, TensorBoard's hparams
API) becomes Experiment / TrainingRun / EventFile / Checkpoint records with OUTPUT events,
attributions and associations, found by stable keys; user records are never touched."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from boardd.lineage import vocabulary
from boardd.lineage.populate import Populator
from boardd.lineage.scan import scan
from boardd.lineage.service import open_store
from boardd.metadata.proto import metadata_store_pb2 as pb
from tests.conftest import WALL, ingest
from tests.lineage.conftest import (
    CHECKPOINT_BYTES,
    OFFICIAL,
    OFFICIAL_HPARAMS,
    TRIALS,
    Populated,
    records_in,
)


def by_name(messages: list[Any]) -> dict[str, Any]:
    return {m.name: m for m in messages}


def values(message: Any) -> dict[str, object]:
    return {k: getattr(v, v.WhichOneof("value")) for k, v in message.custom_properties.items()}


def test_types_are_registered(populated: Populated) -> None:
    names = populated.read(
        lambda s: (
            {t.name for t in s.get_context_types()},
            {t.name for t in s.get_execution_types()},
            {t.name for t in s.get_artifact_types()},
        )
    )
    assert vocabulary.EXPERIMENT in names[0]
    assert vocabulary.TRAINING_RUN in names[1]
    assert {vocabulary.EVENT_FILE, vocabulary.CHECKPOINT} <= names[2]
    [checkpoint_type] = populated.read(lambda s: [s.get_artifact_type(vocabulary.CHECKPOINT)])
    assert dict(checkpoint_type.properties) == {
        "run": pb.STRING,
        "size": pb.INT,
        "mtime": pb.INT,
    }


def test_experiment_runs_and_hparams(populated: Populated) -> None:
    contexts = populated.read(lambda s: s.get_contexts_by_type(vocabulary.EXPERIMENT))
    [context] = contexts
    assert context.name == "exp"
    assert context.external_id == "boardd:experiment:exp"
    assert context.properties["logdir"].string_value == str(populated.logdir.path)
    runs = by_name(populated.read(lambda s: s.get_executions_by_type(vocabulary.TRAINING_RUN)))
    tbx_sessions = {name for name in runs if name.count("/") == 2}
    assert set(runs) == {f"exp/{r}" for r in [*TRIALS, OFFICIAL]} | tbx_sessions
    assert len(tbx_sessions) == len(TRIALS)
    for run, (hparams, _metrics) in TRIALS.items():
        execution = runs[f"exp/{run}"]
        # tensorboardX writes the session into a sub-run: the run inherits its hparams.
        assert values(execution) == {
            k: float(v) if type(v) is int else v for k, v in hparams.items()
        }
        assert execution.last_known_state == pb.Execution.COMPLETE
        assert execution.properties["status"].string_value == "STATUS_SUCCESS"
        assert execution.properties["last_step"].int_value == 40
        assert execution.properties["run"].string_value == run
        assert execution.external_id == f"boardd:run:exp/{run}"
    official = runs[f"exp/{OFFICIAL}"]
    assert values(official) == {
        k: float(v) if type(v) is int else v for k, v in OFFICIAL_HPARAMS.items()
    }
    assert official.last_known_state == pb.Execution.FAILED
    assert official.properties["start_time"].int_value == int(WALL * 1000)
    assert official.properties["end_time"].int_value == int((WALL + 60) * 1000)
    # Every run is associated with its experiment.
    associated = populated.read(lambda s: s.get_executions_by_context(context.id))
    assert {e.id for e in associated} == {e.id for e in runs.values()}


def test_event_files_and_checkpoints_are_outputs_of_their_runs(populated: Populated) -> None:
    logdir = populated.logdir
    files = populated.read(lambda s: s.get_artifacts_by_type(vocabulary.EVENT_FILE))
    on_disk = sorted(
        os.path.join(top, f)
        for top, _dirs, names in os.walk(logdir.path)
        for f in names
        if "tfevents" in f
    )
    assert sorted(a.uri for a in files) == on_disk
    for artifact in files:
        assert artifact.properties["size"].int_value == os.path.getsize(artifact.uri)
        assert artifact.properties["records"].int_value == records_in(artifact.uri)
        assert artifact.state == pb.Artifact.LIVE
    checkpoints = populated.read(lambda s: s.get_artifacts_by_type(vocabulary.CHECKPOINT))
    expected = {str(p): run for run, paths in logdir.checkpoints.items() for p in paths}
    assert {a.uri: a.properties["run"].string_value for a in checkpoints} == expected
    assert all(a.properties["size"].int_value == len(CHECKPOINT_BYTES) for a in checkpoints)
    assert not {str(p) for p in logdir.others} & {a.uri for a in [*files, *checkpoints]}
    runs = {
        e.id: e.properties["run"].string_value
        for e in populated.read(lambda s: s.get_executions_by_type(vocabulary.TRAINING_RUN))
    }
    artifacts = [*files, *checkpoints]
    events = populated.read(lambda s: s.get_events_by_artifact_ids([a.id for a in artifacts]))
    assert len(events) == len(artifacts)
    producer = {e.artifact_id: runs[e.execution_id] for e in events}
    assert all(e.type == pb.Event.OUTPUT for e in events)
    for artifact in artifacts:
        assert producer[artifact.id] == artifact.properties["run"].string_value
    [context] = populated.read(lambda s: s.get_contexts_by_type(vocabulary.EXPERIMENT))
    attributed = populated.read(lambda s: s.get_artifacts_by_context(context.id))
    assert {a.id for a in attributed} == {a.id for a in artifacts}


def snapshot(populated: Populated) -> dict[str, list[Any]]:
    return populated.read(
        lambda s: {
            "contexts": s.get_contexts(),
            "executions": s.get_executions(),
            "artifacts": s.get_artifacts(),
            "events": s.get_events_by_artifact_ids([a.id for a in s.get_artifacts()]),
        }
    )


def test_a_refresh_without_changes_writes_nothing(populated: Populated) -> None:
    before = snapshot(populated)
    written = populated.service.write(
        lambda store: Populator(store, 600.0).refresh(scan(populated.spec))
    )
    # A new populator (a restart) learns what is there and writes nothing either.
    assert written == 0
    populated.service.refresh_now()
    assert snapshot(populated) == before


def user_records(store: Any) -> dict[str, int]:
    """A user's records written with MLMD's API, some in boardd's types, one with a name
    boardd would also use."""
    checkpoint_type = store.get_artifact_type(vocabulary.CHECKPOINT)
    experiment_type = store.get_context_type(vocabulary.EXPERIMENT)
    run_type = store.get_execution_type(vocabulary.TRAINING_RUN)
    dataset = pb.ArtifactType(name="DataSet")
    dataset.properties["split"] = pb.STRING
    dataset_type = store.put_artifact_type(dataset)
    data = pb.Artifact(type_id=dataset_type, uri="/data/train", name="train")
    data.properties["split"].string_value = "train"
    mine = pb.Artifact(type_id=checkpoint_type.id, uri="/elsewhere/best.pt", name="best")
    mine.custom_properties["note"].string_value = "mine"
    [data_id, mine_id] = store.put_artifacts([data, mine])
    run = pb.Execution(type_id=run_type.id, name="my-run")
    run.last_known_state = pb.Execution.RUNNING
    [run_id] = store.put_executions([run])
    store.put_events(
        [
            pb.Event(artifact_id=data_id, execution_id=run_id, type=pb.Event.INPUT),
            pb.Event(artifact_id=mine_id, execution_id=run_id, type=pb.Event.OUTPUT),
        ]
    )
    [context_id] = store.put_contexts([pb.Context(type_id=experiment_type.id, name="my-exp")])
    store.put_attributions_and_associations(
        [pb.Attribution(artifact_id=mine_id, context_id=context_id)],
        [pb.Association(execution_id=run_id, context_id=context_id)],
    )
    return {"data": data_id, "mine": mine_id, "run": run_id, "context": context_id}


def user_view(store: Any, ids: dict[str, int]) -> list[Any]:
    return [
        store.get_artifacts_by_id([ids["data"], ids["mine"]]),
        store.get_executions_by_id([ids["run"]]),
        store.get_contexts_by_id([ids["context"]]),
        store.get_events_by_execution_ids([ids["run"]]),
        store.get_artifacts_by_context(ids["context"]),
        store.get_executions_by_context(ids["context"]),
    ]


def test_user_records_are_never_touched(populated: Populated, tmp_path: Path) -> None:
    ids = populated.service.write(user_records)
    before = populated.read(lambda s: user_view(s, ids))
    # The logdir changes: a run goes, a checkpoint comes, a file is rewritten.
    shutil.rmtree(populated.logdir.path / "lr0.1")
    (populated.logdir.path / "lr0.01" / "model-90.pth").write_bytes(b"x" * 10)
    os.unlink(populated.spec.db)
    ingest(populated.logdir.path, populated.spec.db, experiment=populated.spec.name)
    populated.service.refresh_now()
    assert populated.read(lambda s: user_view(s, ids)) == before


def test_a_rebuilt_logdir_store_maps_onto_the_same_records(populated: Populated) -> None:
    before = snapshot(populated)
    # A rebuild makes a new store: other row ids, the same names and paths.
    os.unlink(populated.spec.db)
    for suffix in ("-wal", "-shm"):
        Path(str(populated.spec.db) + suffix).unlink(missing_ok=True)
    ingest(populated.logdir.path, populated.spec.db, experiment=populated.spec.name)
    populated.service.refresh_now()
    assert snapshot(populated) == before


def test_a_vanished_file_is_marked_deleted_and_a_new_one_recorded(populated: Populated) -> None:
    gone = populated.logdir.checkpoints["lr0.1"][0]
    gone.unlink()
    new = populated.logdir.path / "lr0.1" / "saved_model.pb"
    new.write_bytes(b"\x08\x01")
    populated.service.refresh_now()
    [old] = populated.read(lambda s: s.get_artifacts_by_uri(str(gone)))
    assert old.state == pb.Artifact.DELETED
    [made] = populated.read(lambda s: s.get_artifacts_by_uri(str(new)))
    assert made.state == pb.Artifact.LIVE
    assert made.properties["size"].int_value == 2
    [event] = populated.read(lambda s: s.get_events_by_artifact_ids([made.id]))
    [run] = populated.read(lambda s: s.get_executions_by_id([event.execution_id]))
    assert run.name == "exp/lr0.1"


def test_state_follows_inactivity_without_session_end(tmp_path: Path) -> None:
    from tests.hparams_logdirs import write_run

    logdir = tmp_path / "logs"
    write_run(logdir, "live", (), {"loss": [(0, 1.0), (5, 0.5)]}, start=WALL)
    spec_db = tmp_path / "store.sqlite"
    ingest(logdir, spec_db, experiment="e")
    from boardd.config import ExperimentSpec

    spec = ExperimentSpec("e", logdir, spec_db)
    store = open_store(tmp_path / "lineage.sqlite")
    try:
        populator = Populator(store, idle_seconds=60.0)
        populator.refresh(scan(spec), now=WALL + 10)
        [run] = store.get_executions_by_type(vocabulary.TRAINING_RUN)
        assert run.last_known_state == pb.Execution.RUNNING
        assert run.properties["status"].string_value == "active"
        assert (
            not run.properties["end_time"].HasField("int_value")
            if "end_time" in run.properties
            else True
        )
        populator.refresh(scan(spec), now=WALL + 3600)
        [run] = store.get_executions_by_type(vocabulary.TRAINING_RUN)
        assert run.last_known_state == pb.Execution.COMPLETE
        assert run.properties["status"].string_value == "inactive"
        assert run.properties["end_time"].int_value == int((WALL + 5) * 1000)
        assert run.properties["last_step"].int_value == 5
    finally:
        store.close()


def test_a_name_taken_by_a_user_record_is_skipped_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from boardd.config import ExperimentSpec
    from tests.lineage.conftest import write_training_logdir

    written = write_training_logdir(tmp_path)
    spec = ExperimentSpec("exp", written.path, tmp_path / "store.sqlite")
    ingest(written.path, spec.db, experiment="exp")
    store = open_store(tmp_path / "lineage.sqlite")
    try:
        # A user registered boardd's type first (with a property of their own) and took the
        # name boardd gives one run.
        run_type = pb.ExecutionType(name=vocabulary.TRAINING_RUN)
        run_type.properties["owner"] = pb.STRING
        type_id = store.put_execution_type(run_type)
        [theirs] = store.put_executions([pb.Execution(type_id=type_id, name="exp/lr0.1")])
        before = store.get_executions_by_id([theirs])
        with caplog.at_level(logging.WARNING, logger="boardd.lineage.populate"):
            Populator(store, 600.0).refresh(scan(spec))
        assert store.get_executions_by_id([theirs]) == before
        # One line saying which name is taken, not the stored record quoted whole.
        [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert "1 execution name(s) are taken" in warning and "'exp/lr0.1'" in warning
        assert "\n" not in warning
        names = {e.name for e in store.get_executions_by_type(vocabulary.TRAINING_RUN)}
        assert {"exp/lr0.01", f"exp/{OFFICIAL}"} <= names
        stored = store.get_execution_type(vocabulary.TRAINING_RUN)
        assert "owner" in stored.properties and "last_step" in stored.properties
    finally:
        store.close()


def test_two_experiments_whose_paths_share_a_prefix_keep_their_files(tmp_path: Path) -> None:
    from boardd.config import ExperimentSpec
    from boardd.lineage import LineageService
    from tests.hparams_logdirs import write_run

    specs = []
    for name in ("runs", "runs2"):
        logdir = tmp_path / name
        write_run(logdir, "a", (), {"loss": [(0, 1.0)]}, start=WALL)
        (logdir / "a" / "model.pt").write_bytes(b"pt")
        db = tmp_path / f"{name}.sqlite"
        ingest(logdir, db, experiment=name)
        specs.append(ExperimentSpec(name, logdir, db))
    service = LineageService(tmp_path / "lineage.sqlite", specs)
    service.start()
    try:
        service.refresh_now()
        service.refresh_now(["runs"])  # runs' refresh must leave runs2's files alone
        checkpoints = service.read(lambda s: s.get_artifacts_by_type(vocabulary.CHECKPOINT))
        assert sorted(a.name for a in checkpoints) == ["runs/a/model.pt", "runs2/a/model.pt"]
        assert {a.state for a in checkpoints} == {pb.Artifact.LIVE}
        contexts = service.read(lambda s: s.get_contexts_by_type(vocabulary.EXPERIMENT))
        assert sorted(c.name for c in contexts) == ["runs", "runs2"]
    finally:
        service.close()


def test_a_run_whose_name_is_not_utf8_is_recorded_under_its_escaped_name(tmp_path: Path) -> None:
    """Before: every refresh of the experiment failed (UnicodeEncodeError: surrogates not
    allowed, from the run's name in a protobuf string) and nothing of it was recorded."""
    from boardd.config import ExperimentSpec
    from boardd.lineage import LineageService
    from tests.hparams_logdirs import write_run

    logdir = tmp_path / "logs"
    write_run(logdir, "good", (), {"loss": [(0, 1.0)]}, start=WALL)
    write_run(logdir, "bad", (), {"loss": [(0, 2.0)]}, start=WALL)
    (logdir / "bad" / "model.ckpt").write_bytes(b"ckpt")
    os.rename(logdir / "bad", os.fsencode(logdir) + b"/bad\xff\xfe")
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, experiment="exp")
    service = LineageService(tmp_path / "lineage.sqlite", [ExperimentSpec("exp", logdir, db)])
    service.start()
    try:
        service.refresh_now()
        runs = service.read(lambda s: s.get_executions_by_type(vocabulary.TRAINING_RUN))
        assert sorted(e.properties["run"].string_value for e in runs) == ["bad%FF%FE", "good"]
        files = service.read(lambda s: s.get_artifacts_by_type(vocabulary.EVENT_FILE))
        bad_file = next(a for a in files if a.properties["run"].string_value == "bad%FF%FE")
        assert "/bad%FF%FE/" in bad_file.uri and bad_file.state == pb.Artifact.LIVE
        assert bad_file.properties["records"].int_value > 0
        checkpoints = service.read(lambda s: s.get_artifacts_by_type(vocabulary.CHECKPOINT))
        assert [a.name for a in checkpoints] == ["exp/bad%FF%FE/model.ckpt"]
        assert checkpoints[0].state == pb.Artifact.LIVE
    finally:
        service.close()
