"""TensorBoard's graphs plugin: ``info`` (which runs and tags have a graph, a Keras model or a
step's metadata), ``graph`` (a run's graph, the graphs a tagged step ran, or a Keras model's
"conceptual graph", as protobuf text format) and ``run_metadata`` (a tagged step's metadata,
text format)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.errors import ApiError
from boardd.api.tensorboard.answers import answer, tb_json
from boardd.api.tensorboard.params import not_found, optional_integer, param, required
from boardd.api.tensorboard.scope import Reader
from boardd.data.errors import DataError
from boardd.data.kinds import BLOB_SEQUENCES

if TYPE_CHECKING:
    from google.protobuf.message import Message

# The plugin's data module (and protocol buffers) is imported by the handlers: not on the start
# path.

#: TensorBoard's media type of a graph or a step's metadata (protobuf text format).
PBTXT = "text/x-protobuf; charset=utf-8"
#: The version of the graph_run_metadata* and graph_keras_model summaries TensorBoard reads.
CONTENT_VERSION = b"1"


async def info(request: Request) -> Response:
    """``/data/plugin/graphs/info``: ``{run: {run, run_graph, tags: {tag: {tag,
    conceptual_graph, op_graph, profile}}}}``, as TensorBoard builds it."""
    from boardd.plugins.graphs import data as data_graphs

    def build(reader: Reader) -> bytes:
        result: dict[str, dict[str, Any]] = {}

        def row(run: str, tag: str | None) -> dict[str, Any]:
            item = result.setdefault(run, {"run": run, "tags": {}, "run_graph": False})
            if tag is None:
                return item
            tags: dict[str, dict[str, Any]] = item["tags"]
            return tags.setdefault(
                tag, {"tag": tag, "conceptual_graph": False, "op_graph": False, "profile": False}
            )

        for s in reader.series(BLOB_SEQUENCES, data_graphs.RUN_METADATA_WITH_GRAPH):
            if s.info.plugin_content == CONTENT_VERSION:
                row(s.run, s.info.tag)["op_graph"] = True
        for s in reader.series(BLOB_SEQUENCES, data_graphs.RUN_METADATA):
            if s.info.plugin_content == CONTENT_VERSION:
                item = row(s.run, s.info.tag)
                item["profile"] = item["op_graph"] = True
        for s in reader.series(BLOB_SEQUENCES, data_graphs.KERAS_MODEL):
            if s.info.plugin_content == CONTENT_VERSION:
                row(s.run, s.info.tag)["conceptual_graph"] = True
        for s in reader.series(BLOB_SEQUENCES, data_graphs.RUN_GRAPH):
            if s.info.tag == data_graphs.RUN_GRAPH_TAG:
                row(s.run, None)["run_graph"] = True
        for s in reader.series(BLOB_SEQUENCES, data_graphs.TAGGED_RUN_METADATA):
            row(s.run, s.info.tag)["profile"] = True
        return tb_json(result)

    return await answer(request, build)


def _blob(reader: Reader, plugins: tuple[str, ...], run: str, tag: str) -> bytes:
    """The last blob of the first of ``plugins`` that has the run's tag (404 when none has)."""
    for plugin in plugins:
        found = reader.one(BLOB_SEQUENCES, plugin, run, tag)
        if found is not None:
            data = found.handle.provider.last_blob(found.info)
            if data is not None:
                return data
    raise not_found(f"no graph data for run={run!r}, tag={tag!r}")


def _undecodable(what: str, run: str, exc: Exception) -> DataError:
    return DataError(f"the stored {what} of run {run!r} cannot be read: {exc}")


async def graph(request: Request) -> Response:
    """``/data/plugin/graphs/graph?run=[&tag=][&conceptual=true][&limit_attr_size=N&
    large_attrs_key=K]``: the run's graph, or with ``tag`` the graphs that tagged step ran,
    merged (TensorBoard's ``graph_N/`` prefixes), or with ``conceptual=true`` the Keras model
    ``tag`` names as a graph of its layers; attributes over N bytes are left out and named
    under the attribute K. 404 without such a graph."""
    from google.protobuf.message import DecodeError

    from boardd.plugins.graphs import data as data_graphs

    run = required(request, "run")
    tag = param(request, "tag")
    conceptual = param(request, "conceptual") == "true"
    if conceptual and tag is None:
        raise ApiError(400, "tag= is required with conceptual=true (the Keras model's tag)")
    limit = optional_integer(request, "limit_attr_size", minimum=1)
    key = param(request, "large_attrs_key")
    if limit is not None and key is None:
        raise ApiError(400, "large_attrs_key= is required with limit_attr_size=")

    def build(reader: Reader) -> bytes:
        try:
            if conceptual and tag is not None:
                model = json.loads(_blob(reader, (data_graphs.KERAS_MODEL,), run, tag))
                parsed = data_graphs.keras_model_graph(model)
            elif tag is None:
                parsed = data_graphs.parse_graph(
                    _blob(reader, (data_graphs.RUN_GRAPH,), run, data_graphs.RUN_GRAPH_TAG)
                )
            else:
                plugins = (data_graphs.RUN_METADATA, data_graphs.RUN_METADATA_WITH_GRAPH)
                metadata = data_graphs.parse_run_metadata(_blob(reader, plugins, run, tag))
                parsed = data_graphs.merge_graphs(
                    [f.pre_optimization_graph for f in metadata.function_graphs]
                )
        except (DecodeError, ValueError) as exc:
            raise _undecodable("graph", run, exc) from None
        if limit is not None and key is not None:
            data_graphs.drop_large_attrs(parsed, limit, key)
        return _text(parsed)

    return await answer(request, build, PBTXT)


async def run_metadata(request: Request) -> Response:
    """``/data/plugin/graphs/run_metadata?run=&tag=``: what the tagged step recorded (its
    device step stats: TensorBoard's "profile"), as protobuf text format; 404 without it."""
    from google.protobuf.message import DecodeError

    from boardd.plugins.graphs import data as data_graphs

    tag = required(request, "tag")
    run = required(request, "run")

    def build(reader: Reader) -> bytes:
        plugins = (data_graphs.TAGGED_RUN_METADATA, data_graphs.RUN_METADATA)
        try:
            parsed = data_graphs.parse_run_metadata(_blob(reader, plugins, run, tag))
        except DecodeError as exc:
            raise _undecodable("run metadata", run, exc) from None
        return _text(parsed)

    return await answer(request, build, PBTXT)


def _text(message: Message) -> bytes:
    """Protobuf text format, as TensorBoard's ``str(message)`` writes it."""
    return str(message).encode("utf-8")
