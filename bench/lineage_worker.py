"""One side of bench_lineage.py: the same workload through ml_metadata's API, on boardd's
store (``--side boardd``, boardd's venv) or on ml-metadata's (``--side mlmd``, the oracle venv
tests/metadata/oracle builds). Both use the same code below: only the imports differ. Prints
one JSON object of timings.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from typing import Any


def load(side: str) -> tuple[Any, Any, Any]:
    if side == "mlmd":
        import ml_metadata as mlmd
        from ml_metadata.metadata_store import metadata_store
        from ml_metadata.proto import metadata_store_pb2
    else:
        import boardd.metadata as mlmd  # type: ignore[no-redef]
        from boardd.metadata import metadata_store  # type: ignore[no-redef]
        from boardd.metadata.proto import metadata_store_pb2  # type: ignore[no-redef]
    return mlmd, metadata_store, metadata_store_pb2


def timed(function: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=("boardd", "mlmd"), required=True)
    parser.add_argument("--db", required=True, help="the SQLite file to create")
    parser.add_argument("--artifacts", type=int, default=100_000)
    parser.add_argument("--executions", type=int, default=20_000)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=100, help="nodes per put_* call")
    parser.add_argument("--queries", type=int, default=20, help="repeats of each read")
    args = parser.parse_args()
    mlmd, metadata_store, pb = load(args.side)
    config = pb.ConnectionConfig()
    config.sqlite.filename_uri = args.db
    config.sqlite.connection_mode = 3
    store = metadata_store.MetadataStore(config)
    out: dict[str, Any] = {"side": args.side}

    data_type = pb.ArtifactType(name="Dataset")
    data_type.properties["day"] = pb.INT
    data_type.properties["split"] = pb.STRING
    data_type_id = store.put_artifact_type(data_type)
    trainer_type = pb.ExecutionType(name="Trainer")
    trainer_type.properties["state"] = pb.STRING
    trainer_type_id = store.put_execution_type(trainer_type)
    experiment_type = pb.ContextType(name="Experiment")
    experiment_type_id = store.put_context_type(experiment_type)

    # put_artifacts, `batch` per call.
    started = time.perf_counter()
    artifact_ids: list[int] = []
    for first in range(0, args.artifacts, args.batch):
        batch = []
        for i in range(first, min(first + args.batch, args.artifacts)):
            artifact = pb.Artifact(type_id=data_type_id, uri=f"/data/{i}", name=f"a{i}")
            artifact.properties["day"].int_value = i % 365
            artifact.properties["split"].string_value = ("train", "eval", "test")[i % 3]
            artifact.custom_properties["rank"].double_value = i / 7.0
            batch.append(artifact)
        artifact_ids.extend(store.put_artifacts(batch))
    out["put_artifacts_per_s"] = args.artifacts / (time.perf_counter() - started)

    started = time.perf_counter()
    execution_ids: list[int] = []
    for first in range(0, args.executions, args.batch):
        batch = []
        for i in range(first, min(first + args.batch, args.executions)):
            execution = pb.Execution(type_id=trainer_type_id, name=f"run{i}")
            execution.properties["state"].string_value = "COMPLETE"
            execution.last_known_state = pb.Execution.COMPLETE
            batch.append(execution)
        execution_ids.extend(store.put_executions(batch))
    out["put_executions_per_s"] = args.executions / (time.perf_counter() - started)

    # Events: execution i outputs a block of artifacts and reads artifacts output earlier,
    # a DAG whose lineage walks go back through many hops.
    per_execution = max(args.events // max(args.executions, 1), 2)
    outputs = max(args.artifacts // max(args.executions, 1), 1)
    rng = random.Random(7)
    events = []
    for i, execution_id in enumerate(execution_ids):
        mine = artifact_ids[i * outputs : (i + 1) * outputs]
        for artifact_id in mine:
            events.append(
                pb.Event(artifact_id=artifact_id, execution_id=execution_id, type=pb.Event.OUTPUT)
            )
        earlier = i * outputs
        inputs = set()
        while earlier and len(inputs) < min(per_execution - len(mine), earlier):
            inputs.add(artifact_ids[rng.randrange(max(0, earlier - 50 * outputs), earlier)])
        for artifact_id in sorted(inputs):
            events.append(
                pb.Event(artifact_id=artifact_id, execution_id=execution_id, type=pb.Event.INPUT)
            )
    events = events[: args.events]
    started = time.perf_counter()
    event_batch = args.batch * 10
    for first in range(0, len(events), event_batch):
        store.put_events(events[first : first + event_batch])
    out["put_events_per_s"] = len(events) / (time.perf_counter() - started)
    out["events"] = len(events)

    # put_execution: one call per run (an execution, its outputs with events, a context).
    runs = 200
    started = time.perf_counter()
    for i in range(runs):
        execution = pb.Execution(type_id=trainer_type_id, name=f"atomic{i}")
        execution.properties["state"].string_value = "RUNNING"
        pairs = []
        for j in range(5):
            artifact = pb.Artifact(type_id=data_type_id, uri=f"/atomic/{i}/{j}")
            artifact.properties["day"].int_value = j
            pairs.append((artifact, pb.Event(type=pb.Event.OUTPUT)))
        context = pb.Context(type_id=experiment_type_id, name=f"exp{i % 10}")
        store.put_execution(execution, pairs, [context], reuse_context_if_already_exist=True)
    out["put_execution_per_s"] = runs / (time.perf_counter() - started)

    # Reads: filter queries (a page of 100, as the Python API pages), lineage subgraphs.
    queries = {
        "filter_property_range": (
            "properties.day.int_value > 300 AND properties.split.string_value = 'eval'"
        ),
        "filter_uri_like": "uri LIKE '/data/4242%'",
        "filter_name_in": "name IN ('a10', 'a20000', 'a99999')",
    }
    for label, query in queries.items():
        samples = []
        for _ in range(args.queries):
            seconds, found = timed(
                store.get_artifacts, list_options=mlmd.ListOptions(limit=100, filter_query=query)
            )
            samples.append(seconds)
        out[f"{label}_ms"] = statistics.median(samples) * 1000
        out[f"{label}_count"] = len(found)
    graphs = {
        "lineage_upstream_4_hops": (pb.LineageSubgraphQueryOptions.UPSTREAM, 4),
        "lineage_both_2_hops": (pb.LineageSubgraphQueryOptions.BIDIRECTIONAL, 2),
    }
    for label, (direction, hops) in graphs.items():
        samples = []
        sizes = []
        for k in range(args.queries):
            start = artifact_ids[len(artifact_ids) - 1 - 997 * k % len(artifact_ids)]
            options = pb.LineageSubgraphQueryOptions(max_num_hops=hops, direction=direction)
            options.starting_artifacts.filter_query = f"id = {start}"
            seconds, graph = timed(store.get_lineage_subgraph, options)
            samples.append(seconds)
            sizes.append(len(graph.artifacts) + len(graph.executions))
        out[f"{label}_ms"] = statistics.median(samples) * 1000
        out[f"{label}_nodes"] = statistics.median(sizes)
    close = getattr(store, "close", None)
    if close is not None:
        close()
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
