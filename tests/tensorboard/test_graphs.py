"""TensorBoard's graphs plugin on boardd: a run's graph (graph_def events, as PyTorch's
``add_graph`` and Keras's callback write them), a step's metadata (tagged_run_metadata events),
the graphs a traced step ran (TensorFlow's ``trace_export`` summaries) and Keras's conceptual
graph (its callback's model configuration), request by request against TensorBoard: the
answers are protobuf text format, compared as text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from google.protobuf import text_format
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
RUNS = {"torch", "traced", "keras", "plain"}
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


def _tensor(name: str, *history: object) -> dict[str, object]:
    """A Keras 3 functional model's reference to a layer's output tensor."""
    return {"class_name": "__keras_tensor__", "config": {"shape": [None, 4], "dtype": "float32",
            "keras_history": [name, *history]}}  # fmt: skip


def _layer(cls: str, name: str, *inputs: object, dtype: object = "float32") -> dict[str, object]:
    layer: dict[str, object] = {
        "module": "keras.layers",
        "class_name": cls,
        "config": {"name": name, "trainable": True, "dtype": dtype},
        "registered_name": None,
        "name": name,
    }
    if inputs:
        layer["inbound_nodes"] = [{"args": list(inputs), "kwargs": {}}]
    return layer


POLICY = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float16"}}
#: Keras 3 model configurations (model.to_json()): sequential, functional with two inputs,
#: and a functional model holding a sequential one and a functional one.
SEQUENTIAL = {
    "module": "keras",
    "class_name": "Sequential",
    "config": {
        "name": "seq",
        "layers": [
            _layer("InputLayer", "input_layer"),
            _layer("Dense", "dense", dtype=POLICY),
            _layer("Dropout", "dropout", dtype="half"),
            _layer("Dense", "dense_1", dtype={"config": {"name": "mixed_float16"}}),
        ],
    },
}
INNER = {
    "module": "keras",
    "class_name": "Functional",
    "config": {
        "name": "inner",
        "layers": [
            _layer("InputLayer", "in_x"),
            _layer("Dense", "proj", _tensor("in_x", 0, 0), dtype="int32"),
        ],
        # One input: Keras 3 writes its reference alone, not in a list.
        "input_layers": ["in_x", 0, 0],
        "output_layers": [["proj", 0, 0]],
    },
    "inbound_nodes": [{"args": [_tensor("concat", 0, 0)], "kwargs": {}}],
}
FUNCTIONAL = {
    "module": "keras",
    "class_name": "Functional",
    "config": {
        "name": "two_towers",
        "layers": [
            _layer("InputLayer", "a"),
            _layer("InputLayer", "b"),
            _layer("Concatenate", "concat", [_tensor("a", 0, 0), _tensor("b", 0, 0)]),
            INNER,
            {**SEQUENTIAL, "inbound_nodes": [{"args": [_tensor("inner", 0, 0)], "kwargs": {}}]},
            _layer("Add", "out", [_tensor("seq", 0, 0), _tensor("concat", 0, 0)], dtype=7),
        ],
        "input_layers": [["a", 0, 0], ["b", 0, 0]],
        "output_layers": [["out", 0, 0]],
    },
}


#: A sequential model holding a single-input functional one (TensorBoard fails on it).
NESTED = {
    "module": "keras",
    "class_name": "Sequential",
    "config": {
        "name": "outer",
        "layers": [
            _layer("InputLayer", "input_layer"),
            {key: value for key, value in INNER.items() if key != "inbound_nodes"},
            _layer("Dense", "head"),
        ],
    },
}


#: A functional model holding a two-input functional one (TensorBoard leaves the nested
#: model's inputs unconnected).
PAIR = {
    "module": "keras",
    "class_name": "Functional",
    "config": {
        "name": "wrapper",
        "layers": [
            _layer("InputLayer", "left"),
            _layer("InputLayer", "right"),
            {
                "module": "keras",
                "class_name": "Functional",
                "config": {
                    "name": "merge",
                    "layers": [
                        _layer("InputLayer", "p"),
                        _layer("InputLayer", "q"),
                        _layer("Add", "sum", [_tensor("p", 0, 0), _tensor("q", 0, 0)]),
                    ],
                    "input_layers": [["p", 0, 0], ["q", 0, 0]],
                    "output_layers": [["sum", 0, 0]],
                },
                "inbound_nodes": [
                    {"args": [[_tensor("left", 0, 0), _tensor("right", 0, 0)]], "kwargs": {}}
                ],
            },
        ],
        "input_layers": [["left", 0, 0], ["right", 0, 0]],
        "output_layers": [["merge", 0, 0]],
    },
}


SLICE = {"class_name": "__slice__", "config": {"start": None, "stop": None, "step": None}}
#: A functional model whose ops take values that are not tensors, as Keras 3 writes
#: ``x * 2.0``, ``keras.ops.reshape(t, (-1, 2, 2))`` and ``t[:, 0, :]`` (TensorBoard fails).
OPERANDS = {
    "module": "keras",
    "class_name": "Functional",
    "config": {
        "name": "ops",
        "layers": [
            _layer("InputLayer", "x"),
            _layer("InputLayer", "y"),
            _layer("Multiply", "multiply", _tensor("x", 0, 0), 2.0),
            _layer("Add", "add", _tensor("multiply", 0, 0), _tensor("y", 0, 0)),
            _layer("Reshape", "reshape", _tensor("add", 0, 0), [-1, 2, 2]),
            _layer("GetItem", "get_item", _tensor("reshape", 0, 0), [SLICE, 0, SLICE]),
        ],
        "input_layers": [["x", 0, 0], ["y", 0, 0]],
        "output_layers": [["get_item", 0, 0]],
    },
}
#: A model called with dicts of inputs and outputs, as Keras 3 writes
#: ``keras.Model({"feat_a": a, "feat_b": b}, {"out_a": ...})`` (TensorBoard fails).
DICT_IO = {
    "module": "keras",
    "class_name": "Functional",
    "config": {
        "name": "dict_io",
        "layers": [
            # As Keras 3 writes an input layer: no inbound node.
            {**_layer("InputLayer", "feat_a"), "inbound_nodes": []},
            {**_layer("InputLayer", "feat_b"), "inbound_nodes": []},
            _layer("Concatenate", "merge", [_tensor("feat_a", 0, 0), _tensor("feat_b", 0, 0)]),
            _layer("Dense", "out_a", _tensor("merge", 0, 0)),
        ],
        "input_layers": {"feat_a": ["feat_a", 0, 0], "feat_b": ["feat_b", 0, 0]},
        "output_layers": {"out_a": ["out_a", 0, 0]},
    },
}
#: A layer given its tensors by keyword (``MultiHeadAttention(...)(query=q, value=v)``).
KEYWORDS = {
    "module": "keras",
    "class_name": "Functional",
    "config": {
        "name": "attend",
        "layers": [
            _layer("InputLayer", "q"),
            _layer("InputLayer", "v"),
            {
                **_layer("MultiHeadAttention", "mha"),
                "inbound_nodes": [
                    {
                        "args": [],
                        "kwargs": {"query": _tensor("q", 0, 0), "value": _tensor("v", 0, 0)},
                    }
                ],
            },
        ],
        "input_layers": [["q", 0, 0], ["v", 0, 0]],
        "output_layers": [["mha", 0, 0]],
    },
}


def keras_model(step: int, tag: str, model: dict[str, object]) -> event_pb2.Event:
    """A Keras model summary as Keras's TensorBoard callback writes one (plugin content "1")."""
    event = event_pb2.Event(wall_time=WALL + step, step=step)
    value = event.summary.value.add(tag=tag)
    value.metadata.plugin_data.plugin_name = "graph_keras_model"
    value.metadata.plugin_data.content = b"1"
    value.tensor.CopyFrom(
        tensor_util.make_tensor_proto(json.dumps(model).encode(), dtype=types_pb2.DT_STRING)
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
    # Keras's callback: the model's configuration (the "conceptual graph").
    keras = EventFileWriter(str(logdir / "keras"))
    keras.add_event(keras_model(0, "keras", SEQUENTIAL))
    keras.add_event(keras_model(0, "functional", FUNCTIONAL))
    keras.add_event(keras_model(0, "nested", NESTED))
    keras.add_event(keras_model(0, "pair", PAIR))
    keras.add_event(keras_model(0, "operands", OPERANDS))
    keras.add_event(keras_model(0, "keywords", KEYWORDS))
    keras.add_event(keras_model(0, "dict_io", DICT_IO))
    # The dict model inside another: its inputs fed by the outer model's layers.
    outer = {
        "module": "keras",
        "class_name": "Functional",
        "config": {
            "name": "outer",
            "layers": [
                {**_layer("InputLayer", "a"), "inbound_nodes": []},
                {**_layer("InputLayer", "b"), "inbound_nodes": []},
                {
                    **DICT_IO,
                    "name": "dict_io",
                    "inbound_nodes": [
                        {
                            "args": [{"feat_a": _tensor("a", 0, 0), "feat_b": _tensor("b", 0, 0)}],
                            "kwargs": {},
                        }
                    ],
                },
                _layer("Dense", "head", _tensor("dict_io", 0, 0)),
            ],
            "input_layers": [["a", 0, 0], ["b", 0, 0]],
            "output_layers": [["head", 0, 0]],
        },
    }
    keras.add_event(keras_model(0, "dict_io_nested", outer))
    keras.close()
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
    assert ours.json()["keras"]["tags"]["functional"]["conceptual_graph"] is True


GRAPH_QUERIES = [
    {"run": "torch"},
    {"run": "torch", "limit_attr_size": "1024", "large_attrs_key": "_too_large_attrs"},
    {"run": "traced", "tag": "trace/graph"},
    {"run": "traced", "tag": "trace/graph", "limit_attr_size": "1024", "large_attrs_key": "_big"},
    {"run": "traced", "tag": "trace/profile"},
    {"run": "keras", "tag": "keras", "conceptual": "true"},
    {"run": "keras", "tag": "functional", "conceptual": "true"},
]


@pytest.mark.parametrize("params", GRAPH_QUERIES, ids=lambda p: "&".join(p.values()))
def test_graph_text_is_tensorboards(graphs: Pair, params: dict[str, str]) -> None:
    theirs, ours = graphs.both("GET", "/data/plugin/graphs/graph", params=params)
    assert ours.status_code == theirs.status_code == 200, (theirs.text[:300], ours.text[:300])
    assert ours.headers["content-type"] == theirs.headers["content-type"]
    assert ours.text == theirs.text
    assert "MatMul" in ours.text or "keras_class" in ours.text  # not two empty answers


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
        ("graph", {"run": "keras", "tag": "nope", "conceptual": "true"}),
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
        ("graph", {"run": "keras", "conceptual": "true"}, 500),
        ("run_metadata", {"run": "torch"}, 400),
        ("run_metadata", {"tag": "step1"}, 400),
    ],
)
def test_bad_requests_are_400(
    graphs: Pair, route: str, params: dict[str, str], tensorboard: int
) -> None:
    """TensorBoard answers these with a plain-text 400 or crashes (500); boardd answers 400
    in its JSON error shape, naming the parameter (docs/tensorboard.md)."""
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


def test_the_conceptual_graph_connects_the_layers(graphs: Pair) -> None:
    """What the comparison above compares: each layer a node in its model's scope, fed by
    the layers (or the nested models' outputs) it takes."""
    ours = httpx.get(
        graphs.boardd.url + "/data/plugin/graphs/graph",
        params={"run": "keras", "tag": "functional", "conceptual": "true"},
    )
    graph = graph_pb2.GraphDef()
    text_format.Parse(ours.text, graph)
    inputs = {node.name: list(node.input) for node in graph.node}
    assert inputs["two_towers/concat"] == ["two_towers/a", "two_towers/b"]
    # The layer before it, and what feeds the nested model: the same node here (TensorBoard
    # lists it twice too).
    assert inputs["two_towers/inner/in_x"] == ["two_towers/concat", "two_towers/concat"]
    # A nested sequential model's first layer is fed by the model before it (its group).
    assert inputs["two_towers/seq/input_layer"] == ["two_towers/inner"]
    assert inputs["two_towers/out"] == ["two_towers/seq/dense_1", "two_towers/concat"]
    dtypes = {node.name: node.attr["dtype"].type for node in graph.node if "dtype" in node.attr}
    assert dtypes["two_towers/seq/dense"] == types_pb2.DT_HALF  # from its dtype policy
    assert "two_towers/seq/dense_1" not in dtypes  # mixed_float16 names no single type


def test_a_conceptual_graph_of_a_corrupt_model_names_the_run(tmp_path: Path) -> None:
    """boardd only: TensorBoard fails with a 500 whose text says nothing."""
    logdir = tmp_path / "logs"
    writer = EventFileWriter(str(logdir / "keras"))
    writer.add_event(keras_model(0, "keras", {"class_name": "Sequential"}))
    writer.close()
    db = tmp_path / "store.sqlite"
    ingest(logdir, db)
    server = ThreadedServer(create_app([ExperimentSpec("logs", logdir, db)])).start()
    try:
        answer = httpx.get(
            server.url + "/data/plugin/graphs/graph",
            params={"run": "keras", "tag": "keras", "conceptual": "true"},
        )
    finally:
        server.stop()
    assert answer.status_code == 500
    assert "'keras'" in answer.json()["error"]["message"]
    assert "Keras model configuration" in answer.json()["error"]["message"]


def test_a_functional_model_inside_a_sequential_one(graphs: Pair) -> None:
    """TensorBoard fails with a 500 (it takes Keras 3's single input reference for a list of
    them); boardd feeds the nested model's input from the layer before it (docs/tensorboard.md)."""
    params = {"run": "keras", "tag": "nested", "conceptual": "true"}
    theirs, ours = graphs.both("GET", "/data/plugin/graphs/graph", params=params)
    assert theirs.status_code == 500
    assert ours.status_code == 200, ours.text
    graph = graph_pb2.GraphDef()
    text_format.Parse(ours.text, graph)
    inputs = {node.name: list(node.input) for node in graph.node}
    assert inputs["outer/inner/in_x"] == ["outer/input_layer", "outer/input_layer"]
    assert inputs["outer/head"] == ["outer/inner/proj"]


def test_a_two_input_model_inside_a_functional_one(graphs: Pair) -> None:
    """boardd connects each input of the nested model to what feeds it; TensorBoard takes
    each input reference ['p', 0, 0] for a name and connects neither (docs/tensorboard.md)."""
    params = {"run": "keras", "tag": "pair", "conceptual": "true"}
    theirs, ours = graphs.both("GET", "/data/plugin/graphs/graph", params=params)
    assert theirs.status_code == ours.status_code == 200
    parsed = {}
    for name, answer in (("theirs", theirs), ("ours", ours)):
        graph = graph_pb2.GraphDef()
        text_format.Parse(answer.text, graph)
        parsed[name] = {node.name: list(node.input) for node in graph.node}
    # The layer before each (TensorBoard's and boardd's), then the nested model's source.
    assert parsed["theirs"]["wrapper/merge/p"] == ["wrapper/right"]
    assert parsed["ours"]["wrapper/merge/p"] == ["wrapper/right", "wrapper/left"]
    assert parsed["ours"]["wrapper/merge/q"] == ["wrapper/merge/p", "wrapper/right"]
    assert set(parsed["ours"]) == set(parsed["theirs"])


def _conceptual(answer: httpx.Response) -> dict[str, list[str]]:
    graph = graph_pb2.GraphDef()
    text_format.Parse(answer.text, graph)
    return {node.name: list(node.input) for node in graph.node}


def test_values_that_are_not_tensors_are_skipped(graphs: Pair) -> None:
    """A constant, a shape, a slice among an op's arguments: TensorBoard fails with a 500
    (it reads every argument as a tensor); boardd connects each layer to the tensors it takes
    (docs/tensorboard.md)."""
    params = {"run": "keras", "tag": "operands", "conceptual": "true"}
    theirs, ours = graphs.both("GET", "/data/plugin/graphs/graph", params=params)
    assert theirs.status_code == 500
    assert ours.status_code == 200, ours.text
    inputs = _conceptual(ours)
    assert inputs["ops/multiply"] == ["ops/x"]
    assert inputs["ops/add"] == ["ops/multiply", "ops/y"]
    assert inputs["ops/reshape"] == ["ops/add"]
    assert inputs["ops/get_item"] == ["ops/reshape"]


def test_tensors_given_by_keyword_are_connected(graphs: Pair) -> None:
    """TensorBoard reads only a layer's positional arguments, so an attention layer called as
    ``mha(query=q, value=v)`` is drawn unconnected; boardd connects it (docs/tensorboard.md)."""
    params = {"run": "keras", "tag": "keywords", "conceptual": "true"}
    theirs, ours = graphs.both("GET", "/data/plugin/graphs/graph", params=params)
    assert theirs.status_code == ours.status_code == 200
    assert _conceptual(theirs)["attend/mha"] == []
    assert _conceptual(ours)["attend/mha"] == ["attend/q", "attend/v"]
    assert set(_conceptual(ours)) == set(_conceptual(theirs))


def test_a_model_of_dict_inputs_and_outputs(graphs: Pair) -> None:
    """Keras 3 writes a model called with dicts (``keras.Model({"feat_a": a, ...}, {...})``)
    with dicts of layer references: TensorBoard fails with a 500 (it indexes them as lists);
    boardd draws the graph, also of such a model inside another (docs/tensorboard.md)."""
    params = {"run": "keras", "tag": "dict_io", "conceptual": "true"}
    theirs, ours = graphs.both("GET", "/data/plugin/graphs/graph", params=params)
    assert theirs.status_code == 500
    assert ours.status_code == 200, ours.text
    inputs = _conceptual(ours)
    assert inputs["dict_io/merge"] == ["dict_io/feat_a", "dict_io/feat_b"]
    assert inputs["dict_io/out_a"] == ["dict_io/merge"]
    params = {"run": "keras", "tag": "dict_io_nested", "conceptual": "true"}
    ours = httpx.get(f"{graphs.boardd.url}/data/plugin/graphs/graph", params=params, timeout=30)
    assert ours.status_code == 200, ours.text
    inputs = _conceptual(ours)
    assert inputs["outer/dict_io/feat_a"] == ["outer/a"]
    assert inputs["outer/dict_io/feat_b"] == ["outer/b"]
    assert inputs["outer/head"] == ["outer/dict_io/out_a"]
