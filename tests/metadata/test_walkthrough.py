"""ML Metadata's getting-started walkthrough (the seed's "sample flow") on boardd and MLMD.

Every call runs on both stores and must give the same answer (ids included) or the same
error. The walkthrough's filter_query calls are in test_walkthrough_filters.py.
"""

from __future__ import annotations

from pathlib import Path

import boardd.metadata as mlmd
from boardd.metadata import metadata_store
from boardd.metadata.proto import metadata_store_pb2
from tests.metadata.oracle import MlmdOracle
from tests.metadata.parity import Both


def run_walkthrough(both: Both) -> dict[str, int]:
    """Steps 1-9 of MLMD's sample flow, as the docs write them; returns the ids made."""
    # 1) Artifact types.
    data_type = metadata_store_pb2.ArtifactType()
    data_type.name = "DataSet"
    data_type.properties["day"] = metadata_store_pb2.INT
    data_type.properties["split"] = metadata_store_pb2.STRING
    data_type_id = both.call("put_artifact_type", data_type)

    model_type = metadata_store_pb2.ArtifactType()
    model_type.name = "SavedModel"
    model_type.properties["version"] = metadata_store_pb2.INT
    model_type.properties["name"] = metadata_store_pb2.STRING
    model_type_id = both.call("put_artifact_type", model_type)
    both.call("get_artifact_types")

    # 2) An execution type.
    trainer_type = metadata_store_pb2.ExecutionType()
    trainer_type.name = "Trainer"
    trainer_type.properties["state"] = metadata_store_pb2.STRING
    trainer_type_id = both.call("put_execution_type", trainer_type)
    [_registered] = both.call("get_execution_types_by_id", [trainer_type_id])

    # 3) A DataSet artifact.
    data_artifact = metadata_store_pb2.Artifact()
    data_artifact.uri = "path/to/data"
    data_artifact.properties["day"].int_value = 1
    data_artifact.properties["split"].string_value = "train"
    data_artifact.type_id = data_type_id
    [data_artifact_id] = both.call("put_artifacts", [data_artifact])
    both.call("get_artifacts")
    [_stored] = both.call("get_artifacts_by_id", [data_artifact_id])
    both.call("get_artifacts_by_uri", data_artifact.uri)

    # 4) A Trainer run.
    trainer_run = metadata_store_pb2.Execution()
    trainer_run.type_id = trainer_type_id
    trainer_run.properties["state"].string_value = "RUNNING"
    [run_id] = both.call("put_executions", [trainer_run])
    both.call("get_executions_by_id", [run_id])

    # 5) The input event.
    input_event = metadata_store_pb2.Event()
    input_event.artifact_id = data_artifact_id
    input_event.execution_id = run_id
    input_event.type = metadata_store_pb2.Event.DECLARED_INPUT
    both.call("put_events", [input_event])

    # 6) The output artifact.
    model_artifact = metadata_store_pb2.Artifact()
    model_artifact.uri = "path/to/model/file"
    model_artifact.properties["version"].int_value = 1
    model_artifact.properties["name"].string_value = "MNIST-v1"
    model_artifact.type_id = model_type_id
    [model_artifact_id] = both.call("put_artifacts", [model_artifact])

    # 7) The output event.
    output_event = metadata_store_pb2.Event()
    output_event.artifact_id = model_artifact_id
    output_event.execution_id = run_id
    output_event.type = metadata_store_pb2.Event.DECLARED_OUTPUT
    both.call("put_events", [output_event])

    # 8) The run completes.
    trainer_run.id = run_id
    trainer_run.properties["state"].string_value = "COMPLETED"
    both.call("put_executions", [trainer_run])

    # 9) A context, its attribution and association.
    experiment_type = metadata_store_pb2.ContextType()
    experiment_type.name = "Experiment"
    experiment_type.properties["note"] = metadata_store_pb2.STRING
    experiment_type_id = both.call("put_context_type", experiment_type)

    my_experiment = metadata_store_pb2.Context()
    my_experiment.type_id = experiment_type_id
    my_experiment.name = "exp1"
    my_experiment.properties["note"].string_value = "My first experiment."
    [experiment_id] = both.call("put_contexts", [my_experiment])

    attribution = metadata_store_pb2.Attribution()
    attribution.artifact_id = model_artifact_id
    attribution.context_id = experiment_id
    association = metadata_store_pb2.Association()
    association.execution_id = run_id
    association.context_id = experiment_id
    both.call("put_attributions_and_associations", [attribution], [association])

    both.call("get_artifacts_by_context", experiment_id)
    both.call("get_executions_by_context", experiment_id)
    # And the reads a user does next.
    both.call("get_events_by_execution_ids", [run_id])
    both.call("get_events_by_artifact_ids", [data_artifact_id, model_artifact_id])
    both.call("get_contexts_by_artifact", model_artifact_id)
    both.call("get_contexts_by_execution", run_id)
    both.call("get_executions")
    both.call("get_contexts")
    both.call("get_context_types")
    both.call("get_execution_type", "Trainer")
    both.call("get_artifact_by_type_and_name", "DataSet", "nope")
    both.call("get_artifacts", list_options=mlmd.ListOptions(limit=1, is_asc=False))
    return {
        "data_artifact": data_artifact_id,
        "model_artifact": model_artifact_id,
        "run": run_id,
        "experiment": experiment_id,
    }


def test_walkthrough_in_memory(both: Both) -> None:
    ids = run_walkthrough(both)
    assert ids == {"data_artifact": 1, "model_artifact": 2, "run": 1, "experiment": 1}


def test_walkthrough_on_sqlite_files(tmp_path: Path) -> None:
    """The same on SQLite files, boardd's reopened afterwards: the records are still there."""
    config = metadata_store_pb2.ConnectionConfig()
    config.sqlite.filename_uri = str(tmp_path / "lineage.sqlite")
    config.sqlite.connection_mode = (
        metadata_store_pb2.SqliteMetadataSourceConfig.READWRITE_OPENCREATE
    )
    with MlmdOracle(tmp_path / "mlmd.sqlite") as oracle:
        store = metadata_store.MetadataStore(config)
        try:
            run_walkthrough(Both(store, oracle))
        finally:
            store.close()
        read_only = metadata_store_pb2.ConnectionConfig()
        read_only.sqlite.filename_uri = str(tmp_path / "lineage.sqlite")
        read_only.sqlite.connection_mode = metadata_store_pb2.SqliteMetadataSourceConfig.READONLY
        with metadata_store.MetadataStore(read_only) as reopened:
            both = Both(reopened, oracle)
            both.call("get_artifacts")
            both.call("get_executions")
            both.call("get_contexts_by_execution", 1)
