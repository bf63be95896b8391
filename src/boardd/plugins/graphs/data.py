"""Graphs as event files carry them: a run's graph (graph_def events, PyTorch's ``add_graph``,
Keras's TensorBoard callback) and the metadata of a step (tagged_run_metadata events, the
``graph_run_metadata`` summaries), stored as blob sequences; read back for TensorBoard's graphs
routes, which send them as protobuf text format."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from boardd.proto import graph_pb2, run_metadata_pb2, types_pb2

#: The plugins (as written to disk) of graph data.
RUN_GRAPH = "graphs"
RUN_METADATA = "graph_run_metadata"
RUN_METADATA_WITH_GRAPH = "graph_run_metadata_graph"
KERAS_MODEL = "graph_keras_model"
TAGGED_RUN_METADATA = "graph_tagged_run_metadata"
#: The tag of a run's graph (graph_def events carry none).
RUN_GRAPH_TAG = "__run_graph__"


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


#: TensorFlow's names of its data types (and the aliases it accepts), as a Keras model's
#: configuration gives a layer's dtype.
_DTYPES: dict[str, int] = {
    name: types_pb2.DataType.Value(enum)
    for name, enum in (
        ("float16", "DT_HALF"),
        ("half", "DT_HALF"),
        ("float32", "DT_FLOAT"),
        ("float", "DT_FLOAT"),
        ("float64", "DT_DOUBLE"),
        ("double", "DT_DOUBLE"),
        ("bfloat16", "DT_BFLOAT16"),
        ("int8", "DT_INT8"),
        ("int16", "DT_INT16"),
        ("int32", "DT_INT32"),
        ("int64", "DT_INT64"),
        ("uint8", "DT_UINT8"),
        ("uint16", "DT_UINT16"),
        ("uint32", "DT_UINT32"),
        ("uint64", "DT_UINT64"),
        ("bool", "DT_BOOL"),
        ("string", "DT_STRING"),
        ("complex64", "DT_COMPLEX64"),
        ("complex128", "DT_COMPLEX128"),
        ("qint8", "DT_QINT8"),
        ("quint8", "DT_QUINT8"),
        ("qint16", "DT_QINT16"),
        ("quint16", "DT_QUINT16"),
        ("qint32", "DT_QINT32"),
        ("resource", "DT_RESOURCE"),
        ("variant", "DT_VARIANT"),
    )
}
# Each type's reference type: its number + 100 (types.proto), named NAME_ref.
_DTYPES.update({f"{name}_ref": value + 100 for name, value in list(_DTYPES.items())})


def _dtype_number(value: Any) -> int | None:
    """A layer's ``dtype`` (a name, a number, or a dtype policy naming one) as a DataType;
    None when it names none (a mixed-precision policy)."""
    if isinstance(value, dict) and "config" in value:
        value = (value.get("config") or {}).get("name")
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value in types_pb2.DataType.values() else None
    if isinstance(value, str):
        return _DTYPES.get(value)
    return None


def _inbound(layer: dict[str, Any]) -> list[list[Any]]:
    """[name, node index, tensor index] of each tensor a layer of a functional model takes
    (Keras 3's configuration: the tensor references, ``keras_history``, in each inbound node's
    ``args`` and then its ``kwargs``, at any depth of lists and dicts). Other values there
    (``x * 2.0``'s constant, ``reshape``'s shape, a slice) are skipped: TensorBoard reads each
    ``args`` item as a tensor and fails on them, and leaves tensors given by keyword (an
    attention layer's ``query=``, ``value=``) unconnected (docs/tensorboard.md)."""
    found: list[list[Any]] = []

    def visit(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            config = value.get("config")
            history = config.get("keras_history") if isinstance(config, dict) else None
            if isinstance(history, list) and len(history) >= 3:
                found.append(list(history[:3]))
            elif value.get("class_name") != "__keras_tensor__":
                for item in value.values():
                    visit(item)

    for node in layer.get("inbound_nodes") or []:
        if isinstance(node, dict):
            visit(node.get("args", []))
            visit(node.get("kwargs", {}))
    return found


def _scoped(scope: str, name: str) -> str:
    return f"{scope}/{name}" if scope else name


def _walk(layer: dict[str, Any], scope: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Each layer of a model and of the models within it, in pre-order, with the scope (the
    names of the models it is in)."""
    yield scope, layer
    config = layer.get("config") or {}
    if config.get("layers"):
        inner = _scoped(scope, config.get("name", ""))
        for sublayer in config["layers"]:
            yield from _walk(sublayer, inner)


def keras_model_graph(model: Any) -> graph_pb2.GraphDef:
    """A Keras model's configuration (``model.to_json()``) as a graph of its layers, a node per
    layer named by its scope, with its class and dtype, and an input per tensor it takes, as
    TensorBoard builds its "conceptual graph". ValueError if it is not a model's."""
    if not isinstance(model, dict) or not isinstance(model.get("config"), dict):
        raise ValueError("not a Keras model configuration (no 'config' object)")
    try:
        return _keras_model_graph(model)
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a Keras model configuration: {exc!r}") from None


def _keras_model_graph(model: dict[str, Any]) -> graph_pb2.GraphDef:
    graph = graph_pb2.GraphDef()
    model_inputs: dict[str, str] = {}  # a nested model's input layer -> the node feeding it
    model_outputs: dict[str, list[str]] = {}  # a model -> its output layers' nodes
    previous: str | None = None  # the last node, for layers of a sequential model
    for scope, layer in _walk(model):
        config = layer.get("config")
        if not isinstance(config, dict):
            raise ValueError(f"a layer without a 'config' object in scope {scope!r}")
        name = _scoped(scope, str(config.get("name")))
        if config.get("layers") is not None:
            previous = _enter_model(scope, name, layer, model_inputs, model_outputs, previous)
            continue
        node = graph.node.add()
        node.name = name
        if layer.get("class_name") is not None:
            node.attr["keras_class"].s = str(layer["class_name"]).encode("ascii")
        dtype = _dtype_number(config.get("dtype"))
        if dtype is not None:
            node.attr["dtype"].type = dtype
        if layer.get("inbound_nodes") is not None:
            for inbound, _, index in _inbound(layer):
                names = model_outputs.get(_scoped(scope, inbound), [_scoped(scope, inbound)])
                node.input.append(names[index] if index < len(names) else names[-1])
        elif previous is not None:
            node.input.append(previous)
        if name in model_inputs:
            node.input.append(model_inputs[name])
        previous = node.name
    return graph


def _enter_model(
    scope: str,
    name: str,
    layer: dict[str, Any],
    model_inputs: dict[str, str],
    model_outputs: dict[str, list[str]],
    previous: str | None,
) -> str | None:
    """Records how a (nested) model connects: which node feeds each of its input layers, which
    nodes are its outputs; returns the node its first layer follows."""
    config = layer["config"]
    inputs = config.get("input_layers")
    outputs = config.get("output_layers")
    inbound = _inbound(layer)
    functional = bool(inputs and outputs)
    if inbound and functional:
        for input_layer, source in zip(_layer_refs(inputs), inbound, strict=False):
            model_inputs[_scoped(name, input_layer[0])] = _scoped(scope, source[0])
    elif inbound:
        previous = _scoped(scope, inbound[0][0])
    elif previous and functional:
        refs = _layer_refs(inputs)
        if len(refs) != 1:
            raise ValueError(f"model {name!r} has {len(refs)} inputs inside a sequential model")
        model_inputs[_scoped(name, refs[0][0])] = previous
    if functional:
        model_outputs[name] = [_scoped(name, ref[0]) for ref in _layer_refs(outputs)]
    else:
        last = config["layers"][-1].get("config", {}).get("name")
        model_outputs[name] = [_scoped(name, str(last))]
    return previous


def _layer_refs(refs: Any) -> list[list[Any]]:
    """``input_layers`` / ``output_layers``: the [name, node, tensor] references they hold, in
    order. Keras writes one reference, a list of them, or for a model called with a dict a dict
    of them (``keras.Model({"a": a, "b": b}, ...)``; TensorBoard fails on it with a 500), and
    nested structures of these."""
    found: list[list[Any]] = []

    def visit(value: Any) -> None:
        if isinstance(value, list) and len(value) >= 3 and isinstance(value[0], str):
            found.append(value)
        elif isinstance(value, list):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)
        else:
            raise ValueError(f"not a layer reference: {value!r}")

    visit(refs)
    return found
