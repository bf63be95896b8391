"""TensorBoard's graphs plugin on boardd: a run's graph (graph_def events, as PyTorch's
``add_graph`` and Keras's callback write them), a step's metadata (tagged_run_metadata events)
and the graphs a traced step ran (TensorFlow's ``trace_export`` summaries), request by request
against TensorBoard: the answers are protobuf text format, compared as text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tensorboard.compat.proto import (
    config_pb2,
    event_pb2,
    graph_pb2,
    types_pb2,
)
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from tests.conftest import ThreadedServer, ingest
from tests.tensorboard.conftest import KEEP_ALL, Pair, pair

pytestmark = [
    pytest.mark.slow,
    pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server"),
]

WALL = 1_700_000_000.0
RUNS = {"torch", "traced", "plain"}
#: An attribute larger than the UI's limit (TensorBoard's UI asks with limit_attr_size=1024).
BIG = 3000


def model_graph(prefix: str, producer: int = 22) -> graph_pb2.GraphDef:
    """A small graph with what real ones hold: shapes, dtypes, a tensor, a device, a function
    and a call to it, a gradient, an attribute too large for the UI."""
    graph = graph_pb2.GraphDef()
    graph.versions.producer = producer
    x = graph.node.add(name=f"{prefix}/input", op="Placeholder", device="/cpu:0")
    x.attr["dtype"].type = types_pb2.DT_FLOAT
    x.attr["_output_shapes"].list.shape.add().dim.add(size=-1)
    w = graph.node.add(name=f"{prefix}/weights", op="Const")
    w.attr["value"].tensor.dtype = types_pb2.DT_FLOAT
    w.attr["value"].tensor.tensor_content = bytes(BIG)
    w.attr["note"].s = "ü ünïcode".encode()
    graph.node.add(name=f"{prefix}/matmul", op="MatMul", input=[x.name, w.name + ":0"])
    call = graph.node.add(name=f"{prefix}/call", op="PartitionedCall", input=[f"{prefix}/matmul"])
    call.attr["f"].func.name = "__inference_step_7"
    graph.node.add(name=f"{prefix}/other_call", op="PartitionedCall")  # no "f" at all
    function = graph.library.function.add()
    function.signature.name = "__inference_step_7"
    function.signature.input_arg.add(name="a", type=types_pb2.DT_FLOAT)
    function.node_def.add(name="relu", op="Relu", input=["a"])
    function.ret["out"] = "relu:activations:0"
    gradient = graph.library.gradient.add()
    gradient.function_name, gradient.gradient_func = "__inference_step_7", "grad_7"
    return graph


def step_metadata(*graphs: graph_pb2.GraphDef) -> config_pb2.RunMetadata:
    metadata = config_pb2.RunMetadata()
    stats = metadata.step_stats.dev_stats.add(device="/job:localhost/cpu:0")
    node = stats.node_stats.add(node_name="matmul", all_start_micros=17, op_end_rel_micros=3)
    node.memory.add(allocator_name="cpu", total_bytes=64)
    stats.thread_names[3] = "worker"
    for g in graphs:
        metadata.function_graphs.add().pre_optimization_graph.CopyFrom(g)
    return metadata


def traced(tag: str, plugin: str, step: int, metadata: config_pb2.RunMetadata) -> event_pb2.Event:
    """A summary as TensorFlow's trace_export writes it (plugin content "1")."""
    event = event_pb2.Event(wall_time=WALL + step, step=step)
    value = event.summary.value.add(tag=tag)
    value.metadata.plugin_data.plugin_name = plugin
    value.metadata.plugin_data.content = b"1"
    value.tensor.CopyFrom(
        tensor_util.make_tensor_proto(metadata.SerializeToString(), dtype=types_pb2.DT_STRING)
    )
    return event


def write_graphs_logdir(root: Path) -> Path:
    logdir = root / "graphs"
    # As tensorboardX's add_graph writes a PyTorch model: the graph, then a step's profile.
    torch = EventFileWriter(str(logdir / "torch"))
    torch.add_event(
        event_pb2.Event(wall_time=WALL, graph_def=model_graph("Net").SerializeToString())
    )
    tagged = event_pb2.Event(wall_time=WALL, step=0)
    tagged.tagged_run_metadata.tag = "step1"
    tagged.tagged_run_metadata.run_metadata = step_metadata().SerializeToString()
    torch.add_event(tagged)
    # A later graph replaces the first (TensorBoard reads the last).
    later = model_graph("Net2")
    torch.add_event(
        event_pb2.Event(wall_time=WALL + 1, step=1, graph_def=later.SerializeToString())
    )
    torch.close()
    # TensorFlow's trace_export: the graphs a step ran (two functions), with and without the
    # profile.
    trace = EventFileWriter(str(logdir / "traced"))
    two = step_metadata(model_graph("f"), model_graph("g"))
    trace.add_event(traced("trace/graph", "graph_run_metadata_graph", 0, two))
    trace.add_event(
        traced("trace/profile", "graph_run_metadata", 1, step_metadata(model_graph("h")))
    )
    trace.close()
    # A run without graphs.
    plain = EventFileWriter(str(logdir / "plain"))
    event = event_pb2.Event(wall_time=WALL, step=0)
    event.summary.value.add(tag="loss", simple_value=1.0)
    plain.add_event(event)
    plain.close()
    return logdir


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("graphs")
    with pair(root, write_graphs_logdir(root), KEEP_ALL, RUNS) as p:
        yield p


def test_the_tab_is_enabled(graphs: Pair) -> None:
    theirs, ours = graphs.both("GET", "/data/plugins_listing")
    assert ours.json()["graphs"] == theirs.json()["graphs"]
    assert ours.json()["graphs"]["enabled"] is True


def test_info(graphs: Pair) -> None:
    theirs, ours = graphs.both("GET", "/data/plugin/graphs/info")
    assert ours.status_code == theirs.status_code == 200
    assert ours.json() == theirs.json()
    assert ours.json()["torch"]["run_graph"] is True
    assert ours.json()["torch"]["tags"]["step1"]["profile"] is True
    assert ours.json()["traced"]["tags"]["trace/graph"]["op_graph"] is True


GRAPH_QUERIES = [
    {"run": "torch"},
    {"run": "torch", "limit_attr_size": "1024", "large_attrs_key": "_too_large_attrs"},
    {"run": "traced", "tag": "trace/graph"},
    {"run": "traced", "tag": "trace/graph", "limit_attr_size": "1024", "large_attrs_key": "_big"},
    {"run": "traced", "tag": "trace/profile"},
]


@pytest.mark.parametrize("params", GRAPH_QUERIES, ids=lambda p: "&".join(p.values()))
def test_graph_text_is_tensorboards(graphs: Pair, params: dict[str, str]) -> None:
    theirs, ours = graphs.both("GET", "/data/plugin/graphs/graph", params=params)
    assert ours.status_code == theirs.status_code == 200, (theirs.text[:300], ours.text[:300])
    assert ours.headers["content-type"] == theirs.headers["content-type"]
    assert ours.text == theirs.text
    assert "MatMul" in ours.text  # not two empty answers


def test_the_last_graph_of_a_run_is_shown(graphs: Pair) -> None:
    ours = httpx.get(graphs.boardd.url + "/data/plugin/graphs/graph", params={"run": "torch"})
    assert 'name: "Net2/matmul"' in ours.text
    assert 'name: "Net/matmul"' not in ours.text


@pytest.mark.parametrize(
    "params", [{"run": "torch", "tag": "step1"}, {"run": "traced", "tag": "trace/profile"}]
)
def test_run_metadata_text_is_tensorboards(graphs: Pair, params: dict[str, str]) -> None:
    theirs, ours = graphs.both("GET", "/data/plugin/graphs/run_metadata", params=params)
    assert ours.status_code == theirs.status_code == 200
    assert ours.headers["content-type"] == theirs.headers["content-type"]
    assert ours.text == theirs.text
    assert "node_stats" in ours.text


@pytest.mark.parametrize(
    ("route", "params"),
    [
        ("graph", {"run": "plain"}),
        ("graph", {"run": "missing"}),
        ("graph", {"run": "torch", "tag": "nope"}),
        ("run_metadata", {"run": "plain", "tag": "step1"}),
    ],
)
def test_missing_graphs_are_404(graphs: Pair, route: str, params: dict[str, str]) -> None:
    theirs, ours = graphs.both("GET", f"/data/plugin/graphs/{route}", params=params)
    assert theirs.status_code == ours.status_code == 404


@pytest.mark.parametrize(
    ("route", "params", "tensorboard"),
    [
        ("graph", {}, 400),
        ("graph", {"run": "torch", "limit_attr_size": "x"}, 400),
        ("graph", {"run": "torch", "limit_attr_size": "0", "large_attrs_key": "k"}, 500),
        ("graph", {"run": "torch", "limit_attr_size": "10"}, 500),
        ("run_metadata", {"run": "torch"}, 400),
        ("run_metadata", {"tag": "step1"}, 400),
    ],
)
def test_bad_requests_are_400(
    graphs: Pair, route: str, params: dict[str, str], tensorboard: int
) -> None:
    """TensorBoard answers these with a plain-text 400 or crashes (500); boardd answers 400
    in its JSON error shape, naming the parameter (README)."""
    theirs, ours = graphs.both("GET", f"/data/plugin/graphs/{route}", params=params)
    assert theirs.status_code == tensorboard
    assert ours.status_code == 400, ours.text


def test_a_corrupt_graph_is_an_error_naming_the_run(tmp_path: Path) -> None:
    """boardd only: the other runs' graphs are still served."""
    logdir = tmp_path / "logs"
    for run, data in (
        ("bad", b"\xff\xff\xff not a graph"),
        ("good", model_graph("ok").SerializeToString()),
    ):
        writer = EventFileWriter(str(logdir / run))
        writer.add_event(event_pb2.Event(wall_time=WALL, graph_def=data))
        writer.close()
    db = tmp_path / "store.sqlite"
    ingest(logdir, db)
    server = ThreadedServer(create_app([ExperimentSpec("logs", logdir, db)])).start()
    try:
        bad = httpx.get(server.url + "/data/plugin/graphs/graph", params={"run": "bad"})
        good = httpx.get(server.url + "/data/plugin/graphs/graph", params={"run": "good"})
    finally:
        server.stop()
    assert bad.status_code == 500
    assert "'bad'" in bad.json()["error"]["message"]
    assert good.status_code == 200
    assert 'name: "ok/matmul"' in good.text


def test_a_keras_conceptual_graph_alone_is_not_offered(tmp_path: Path) -> None:
    """boardd only (README): Keras's model configuration (graph_keras_model) is stored but not
    turned into a graph; the Graphs tab stays disabled when it is all a logdir has."""
    logdir = tmp_path / "logs"
    event = event_pb2.Event(wall_time=WALL, step=0)
    value = event.summary.value.add(tag="keras")
    value.metadata.plugin_data.plugin_name = "graph_keras_model"
    value.metadata.plugin_data.content = b"1"
    value.tensor.CopyFrom(
        tensor_util.make_tensor_proto(b'{"class_name": "Sequential"}', dtype=types_pb2.DT_STRING)
    )
    writer = EventFileWriter(str(logdir / "keras"))
    writer.add_event(event)
    writer.close()
    db = tmp_path / "store.sqlite"
    ingest(logdir, db)
    server = ThreadedServer(create_app([ExperimentSpec("logs", logdir, db)])).start()
    try:
        listing = httpx.get(server.url + "/data/plugins_listing").json()
        info = httpx.get(server.url + "/data/plugin/graphs/info").json()
        conceptual = httpx.get(
            server.url + "/data/plugin/graphs/graph",
            params={"run": "keras", "tag": "keras", "conceptual": "true"},
        )
    finally:
        server.stop()
    assert listing["graphs"]["enabled"] is False
    assert info == {}
    assert conceptual.status_code == 400
    assert "conceptual" in conceptual.json()["error"]["message"]
