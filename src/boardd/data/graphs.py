"""Graphs as event files carry them: a run's graph (graph_def events, PyTorch's ``add_graph``,
Keras's TensorBoard callback) and the metadata of a step (tagged_run_metadata events, the
``graph_run_metadata`` summaries), stored as blob sequences; read back for TensorBoard's graphs
routes, which send them as protobuf text format."""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from boardd.proto import graph_pb2, run_metadata_pb2
from boardd.store import queries
from boardd.store.blobs import iter_blob
from boardd.store.queries import SeriesInfo

#: The plugins (as written to disk) of graph data.
RUN_GRAPH = "graphs"
RUN_METADATA = "graph_run_metadata"
RUN_METADATA_WITH_GRAPH = "graph_run_metadata_graph"
KERAS_MODEL = "graph_keras_model"
TAGGED_RUN_METADATA = "graph_tagged_run_metadata"
#: The tag of a run's graph (graph_def events carry none).
RUN_GRAPH_TAG = "__run_graph__"


def last_blob(connection: apsw.Connection, series: SeriesInfo) -> bytes | None:
    """The first blob of the series' last step (what TensorBoard reads of a graph series), or
    None when it has none."""
    rows = queries.blob_sequence_rows(connection, series.id, latest=1)
    if not rows or not rows[-1].blobs:
        return None
    _, blob_id = rows[-1].blobs[0]
    return b"".join(iter_blob(connection, blob_id))


def parse_graph(data: bytes) -> graph_pb2.GraphDef:
    """A serialized GraphDef (DecodeError if it is not one)."""
    graph = graph_pb2.GraphDef()
    graph.ParseFromString(data)
    return graph


def parse_run_metadata(data: bytes) -> run_metadata_pb2.RunMetadata:
    """A serialized RunMetadata (DecodeError if it is not one)."""
    metadata = run_metadata_pb2.RunMetadata()
    metadata.ParseFromString(data)
    return metadata


def merge_graphs(graphs: Sequence[graph_pb2.GraphDef]) -> graph_pb2.GraphDef:
    """Several graphs as one, as TensorBoard shows a step's function graphs: each graph's
    nodes under ``graph_N/`` (N from 1), its functions (and the calls to them, gradients)
    named ``graph_N_NAME``, so that equal names do not merge. One graph is returned as it is,
    none as an empty graph. ValueError if the graphs' producer versions differ."""
    if len(graphs) == 1:
        return graphs[0]
    merged = graph_pb2.GraphDef()
    if not graphs:
        return merged
    if graphs[0].versions.producer:
        merged.versions.CopyFrom(graphs[0].versions)
    for index, graph in enumerate(graphs, start=1):
        if graph.versions.producer != merged.versions.producer:
            raise ValueError("Cannot combine GraphDefs of different versions.")
        prefix = f"graph_{index}"
        for node in graph.node:
            added = merged.node.add()
            added.CopyFrom(node)
            added.name = f"{prefix}/{node.name}"
            added.input[:] = [f"{prefix}/{name}" for name in node.input]
            if added.op == "PartitionedCall":
                # As TensorBoard does: the attribute is made if the node has none.
                call = added.attr["f"].func
                call.name = f"{prefix}_{call.name}"
        for function in graph.library.function:
            copied = merged.library.function.add()
            copied.CopyFrom(function)
            copied.signature.name = f"{prefix}_{copied.signature.name}"
        for gradient in graph.library.gradient:
            copied_gradient = merged.library.gradient.add()
            copied_gradient.CopyFrom(gradient)
            copied_gradient.function_name = f"{prefix}_{gradient.function_name}"
            copied_gradient.gradient_func = f"{prefix}_{gradient.gradient_func}"
    return merged


def drop_large_attrs(graph: graph_pb2.GraphDef, limit: int, key: str) -> None:
    """Removes from each node the attributes whose encoding is over ``limit`` bytes, and lists
    their names under the attribute ``key`` (TensorBoard's UI shows them as too large)."""
    for node in graph.node:
        for name in list(node.attr):
            if node.attr[name].ByteSize() > limit:
                del node.attr[name]
                node.attr[key].list.s.append(name.encode("utf-8"))
