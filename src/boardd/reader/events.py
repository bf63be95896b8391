"""Event payloads → normalized points, following TensorBoard's data_compat rules.

TensorBoard has written the same kinds of data in several ways over the years (TF1 ``simple_value``,
``histo``, ``image`` and ``audio`` values; TF2 tensors with plugin metadata; graphs as whole
events). This module turns each into one of three shapes — scalar, tensor, blob sequence — the
way TensorBoard's ``data_compat.py``/``dataclass_compat.py`` and its Rust data server do, so the
store never sees a legacy format. Where the two TensorBoard implementations differ, we follow the
Python one (what users have seen for years) and say so:

- a legacy histogram drops its empty outer buckets and takes ``min``/``max`` as its outer edges
  (Python; Rust keeps the empty buckets). We keep float64 where Python rounds to float32.
- a legacy scalar's display name defaults to its tag (Python; Rust leaves it empty).
- scalar tensors of every real dtype become scalars (Rust keeps only float32).
- tensors of plugins with no known data class are kept as tensors (Rust drops them).

What a TensorProto or a HistogramProto holds, packed as the store keeps it, is read by
:mod:`boardd.reader.tensor_protos`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from google.protobuf.message import DecodeError

from boardd.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2
from boardd.reader.decoded import (
    BlobSequencePoint,
    DataClass,
    DataLoss,
    RunEvent,
    RunEventKind,
    ScalarPoint,
    TagMetadata,
    TensorPoint,
)
from boardd.reader.errors import EventDecodeError, ReaderError
from boardd.reader.tensor_protos import (
    Rejected,
    dtype_label,
    histogram_tensor,
    tensor_content,
    tensor_scalar,
    tensor_shape,
)

__all__ = [
    "GRAPH_TAG",
    "DecodedEvent",
    "DecodedValue",
    "EventDecodeError",
    "EventDecoder",
    "ReaderError",
    "simple_value_metadata",
]

# The tag TensorBoard gives a run's graph (graph_def events carry no tag of their own).
GRAPH_TAG: Final = "__run_graph__"

# Plugin names as written to disk (tensorboard/plugins/*/metadata.py).
SCALARS: Final = "scalars"
HISTOGRAMS: Final = "histograms"
IMAGES: Final = "images"
AUDIO: Final = "audio"
GRAPHS: Final = "graphs"
GRAPH_TAGGED_RUN_METADATA: Final = "graph_tagged_run_metadata"
_GRAPH_SUB_PLUGINS: Final = frozenset(
    {"graph_run_metadata", "graph_run_metadata_graph", "graph_keras_model"}
)

# The data class that TensorBoard implies for summaries whose metadata names a known plugin
# but sets no data class (everything written before data classes existed).
_PLUGIN_DATA_CLASS: Final[dict[str, DataClass]] = {
    SCALARS: DataClass.SCALAR,
    HISTOGRAMS: DataClass.TENSOR,
    "text": DataClass.TENSOR,
    "hparams": DataClass.TENSOR,
    "pr_curves": DataClass.TENSOR,
    "mesh": DataClass.TENSOR,
    "custom_scalars": DataClass.TENSOR,
    IMAGES: DataClass.BLOB_SEQUENCE,
    AUDIO: DataClass.BLOB_SEQUENCE,
    **{name: DataClass.BLOB_SEQUENCE for name in _GRAPH_SUB_PLUGINS},
}

# Plugin content TensorBoard's data_compat writes for converted TF1 images and audio:
# ImagePluginData{converted_to_tensor: true} and
# AudioPluginData{encoding: WAV, converted_to_tensor: true}. tests/reader checks these bytes
# against TensorBoard's own metadata helpers.
_LEGACY_IMAGE_CONTENT: Final = b"\x10\x01"
_LEGACY_AUDIO_CONTENT: Final = b"\x10\x0b\x18\x01"

# SummaryMetadata.data_class numbers we can serve; others (from a newer TensorBoard) are treated
# as unset.
_KNOWN_DATA_CLASSES: Final = frozenset(int(dc) for dc in DataClass if dc is not DataClass.UNKNOWN)

_GRAPH_METADATA: Final = TagMetadata(GRAPHS, b"", DataClass.BLOB_SEQUENCE)
_TAGGED_RUN_METADATA_METADATA: Final = TagMetadata(
    GRAPH_TAGGED_RUN_METADATA, b"", DataClass.BLOB_SEQUENCE
)

_SCALAR: Final = DataClass.SCALAR
_DT_FLOAT: Final = types_pb2.DT_FLOAT
_DT_STRING: Final = types_pb2.DT_STRING

_SESSION_KINDS: Final = {
    event_pb2.SessionLog.START: RunEventKind.SESSION_START,
    event_pb2.SessionLog.STOP: RunEventKind.SESSION_STOP,
    event_pb2.SessionLog.CHECKPOINT: RunEventKind.SESSION_CHECKPOINT,
}


@dataclass(slots=True)
class DecodedValue:
    """One time-series point of an event, with its tag's metadata."""

    tag: str
    point: ScalarPoint | TensorPoint | BlobSequencePoint
    metadata: TagMetadata  # the tag's established metadata (from its first value)
    first: bool  # True when this value established the tag's metadata


@dataclass(slots=True)
class DecodedEvent:
    """Everything one Event record contributes: points, run events and rejected parts."""

    wall_time: float
    step: int
    values: list[DecodedValue]
    run_events: list[RunEvent]
    data_loss: list[DataLoss]
    graph: bytes | None = None  # serialized GraphDef, if the event carried one
    tagged_run_metadata: tuple[str, bytes] | None = None  # (tag, run_metadata bytes)


def simple_value_metadata(tag: str, display_name: str = "", description: str = "") -> TagMetadata:
    """What data_compat gives a legacy simple_value summary (plugin "scalars", DataClass.SCALAR).

    As in TensorBoard's ``data_compat.py``, the display name defaults to the tag and the plugin
    content is empty (``ScalarPluginData`` version 0 serializes to nothing).
    """
    return TagMetadata(SCALARS, b"", DataClass.SCALAR, display_name or tag, description)


class EventDecoder:
    """Decodes one run's events; remembers each tag's metadata (taken from its first value).

    ``tags`` maps each tag seen so far to its established metadata. It is a plain dict on
    purpose: the vectorized scalar path reads and extends it, so both paths agree on which
    value came first. A value that is rejected (a DataLoss entry) establishes nothing.
    """

    __slots__ = ("tags",)

    def __init__(self) -> None:
        self.tags: dict[str, TagMetadata] = {}

    def decode(self, payload: bytes | memoryview, offset: int) -> DecodedEvent:
        """Decode one record's payload.

        Raises EventDecodeError if the payload is not a parseable Event; `offset` (file offset
        of the record) is used in DataLoss entries. Values that cannot be normalized become
        DataLoss entries of the result; they never raise.
        """
        event = event_pb2.Event()
        try:
            event.ParseFromString(payload)
        except DecodeError as exc:
            raise EventDecodeError(offset, str(exc) or "truncated or malformed") from None
        wall_time = event.wall_time
        step = event.step
        decoded = DecodedEvent(wall_time, step, [], [], [])
        if not math.isfinite(wall_time):
            # TensorBoard's Rust server drops NaN times too: they cannot be ordered; an
            # infinite one is no time either (and no JSON answer could carry it).
            what = "a NaN" if math.isnan(wall_time) else "an infinite"
            decoded.data_loss.append(
                DataLoss(offset, 0, f"event at step {step} has {what} wall time; dropped")
            )
            return decoded

        what = event.WhichOneof("what")
        if what == "summary":
            tags = self.tags
            out = decoded.values
            for value in event.summary.value:
                # Inlined common cases: another scalar on an established scalar tag.
                tag = value.tag
                metadata = tags.get(tag)
                if metadata is not None and tag and metadata.data_class is _SCALAR:
                    kind = value.WhichOneof("value")
                    if kind == "simple_value":
                        point = ScalarPoint(step, wall_time, value.simple_value)
                        out.append(DecodedValue(tag, point, metadata, False))
                        continue
                    if kind == "tensor":
                        try:
                            point = ScalarPoint(step, wall_time, tensor_scalar(value.tensor))
                        except Rejected:
                            pass  # the general path records why
                        else:
                            out.append(DecodedValue(tag, point, metadata, False))
                            continue
                self._decode_value(value, decoded, offset)
        elif what == "file_version":
            decoded.run_events.append(
                RunEvent(RunEventKind.FILE_VERSION, step, wall_time, event.file_version)
            )
        elif what == "session_log":
            session_log = event.session_log
            session_kind = _SESSION_KINDS.get(session_log.status)
            if session_kind is not None:
                detail = (
                    session_log.checkpoint_path
                    if session_kind is RunEventKind.SESSION_CHECKPOINT
                    else session_log.msg
                )
                decoded.run_events.append(RunEvent(session_kind, step, wall_time, detail))
        elif what == "log_message":
            decoded.run_events.append(
                RunEvent(RunEventKind.LOG_MESSAGE, step, wall_time, event.log_message.message)
            )
        elif what == "graph_def":
            graph = event.graph_def
            decoded.graph = graph
            self._add_blob(GRAPH_TAG, _GRAPH_METADATA, graph, decoded, offset)
        elif what == "tagged_run_metadata":
            trm = event.tagged_run_metadata
            decoded.tagged_run_metadata = (trm.tag, trm.run_metadata)
            self._add_blob(
                trm.tag, _TAGGED_RUN_METADATA_METADATA, trm.run_metadata, decoded, offset
            )
        # meta_graph_def is ignored, as TensorBoard's Rust data server does: the graphs plugin
        # reads a run's graph from graph_def events.
        return decoded

    def _add_blob(
        self, tag: str, metadata: TagMetadata, blob: bytes, decoded: DecodedEvent, offset: int
    ) -> None:
        established = self.tags.get(tag)
        first = established is None
        if established is None:
            self.tags[tag] = established = metadata
        elif established.data_class is not DataClass.BLOB_SEQUENCE:
            decoded.data_loss.append(
                DataLoss(offset, 0, _conflict(tag, decoded.step, metadata.plugin_name, established))
            )
            return
        point = BlobSequencePoint(decoded.step, decoded.wall_time, (blob,))
        decoded.values.append(DecodedValue(tag, point, established, first))

    def _decode_value(
        self, value: summary_pb2.Summary.Value, decoded: DecodedEvent, offset: int
    ) -> None:
        # Summaries written with TF1 plugin assets carry their name in node_name only.
        tag = value.tag or value.node_name
        kind = value.WhichOneof("value")
        metadata = self.tags.get(tag)
        first = metadata is None
        if metadata is None:
            metadata = _initial_metadata(tag, value, kind)
        try:
            point = _to_point(metadata, kind, value, decoded.step, decoded.wall_time)
        except Rejected as exc:
            decoded.data_loss.append(
                DataLoss(offset, 0, f"tag {tag!r} at step {decoded.step}: {exc}; value dropped")
            )
            return
        if first:
            self.tags[tag] = metadata
        decoded.values.append(DecodedValue(tag, point, metadata, first))


def _initial_metadata(tag: str, value: summary_pb2.Summary.Value, kind: str | None) -> TagMetadata:
    """A tag's metadata from its first value, with data_compat's implied plugins and classes."""
    md = value.metadata
    plugin_data = md.plugin_data
    data_class = md.data_class
    if data_class in _KNOWN_DATA_CLASSES:
        return TagMetadata(
            plugin_data.plugin_name,
            plugin_data.content,
            DataClass(data_class),
            md.display_name,
            md.summary_description,
        )
    display_name = md.display_name
    description = md.summary_description
    if kind == "simple_value":
        return simple_value_metadata(tag, display_name, description)
    if kind == "histo":
        return TagMetadata(HISTOGRAMS, b"", DataClass.TENSOR, display_name or tag, description)
    if kind == "image":
        return TagMetadata(
            IMAGES, _LEGACY_IMAGE_CONTENT, DataClass.BLOB_SEQUENCE, display_name or tag, description
        )
    if kind == "audio":
        return TagMetadata(
            AUDIO, _LEGACY_AUDIO_CONTENT, DataClass.BLOB_SEQUENCE, display_name or tag, description
        )
    plugin_name = plugin_data.plugin_name
    return TagMetadata(
        plugin_name,
        plugin_data.content,
        _PLUGIN_DATA_CLASS.get(plugin_name, DataClass.UNKNOWN),
        display_name,
        description,
    )


def _to_point(
    metadata: TagMetadata,
    kind: str | None,
    value: summary_pb2.Summary.Value,
    step: int,
    wall_time: float,
) -> ScalarPoint | TensorPoint | BlobSequencePoint:
    """Normalize one summary value into the shape its tag's data class calls for."""
    data_class = metadata.data_class
    if data_class is DataClass.SCALAR:
        if kind == "simple_value":
            return ScalarPoint(step, wall_time, value.simple_value)
        if kind == "tensor":
            return ScalarPoint(step, wall_time, tensor_scalar(value.tensor))
    elif data_class is DataClass.BLOB_SEQUENCE:
        if kind == "image":
            image = value.image
            blobs = (str(image.width).encode(), str(image.height).encode())
            return BlobSequencePoint(step, wall_time, (*blobs, image.encoded_image_string))
        if kind == "audio":
            # data_compat writes [[clip, b""]] and dataclass_compat then keeps only the clips.
            return BlobSequencePoint(step, wall_time, (value.audio.encoded_audio_string,))
        if kind == "tensor":
            return BlobSequencePoint(step, wall_time, _tensor_blobs(value.tensor, metadata))
    else:  # TENSOR, or UNKNOWN: a plugin we do not know, kept as it is
        if kind == "tensor":
            dtype, shape, content = tensor_content(value.tensor)
            return TensorPoint(step, wall_time, dtype, shape, content)
        if kind == "histo":
            shape, content = histogram_tensor(value.histo)
            return TensorPoint(step, wall_time, types_pb2.DT_DOUBLE, shape, content)
        if kind is None:
            # A value with metadata only (hparams, for one): TensorBoard stands in an empty
            # float vector, the smallest valid tensor.
            return TensorPoint(step, wall_time, _DT_FLOAT, (0,), b"")
    what = "a value-less summary" if kind is None else f"a {kind} value"
    raise Rejected(
        f"{what} does not fit the tag's {data_class.label} data "
        f"(plugin {metadata.plugin_name!r}, set by the tag's first value)"
    )


def _conflict(tag: str, step: int, plugin_name: str, established: TagMetadata) -> str:
    return (
        f"tag {tag!r} at step {step}: {plugin_name} data does not fit the tag's "
        f"{established.data_class.label} data (plugin {established.plugin_name!r}, set by the "
        "tag's first value); value dropped"
    )


def _tensor_blobs(tp: tensor_pb2.TensorProto, metadata: TagMetadata) -> tuple[bytes, ...]:
    """The blobs of a string tensor written for a blob-sequence plugin (images, audio, graphs)."""
    if tp.dtype != _DT_STRING:
        raise Rejected(f"a {dtype_label(tp.dtype)} tensor is not a blob sequence")
    shape = tensor_shape(tp)
    strings = tp.string_val
    if len(shape) == 1:
        return tuple(strings)
    if len(shape) == 2 and shape[1] == 2 and metadata.plugin_name == AUDIO:
        # [clips, labels]: keep the clips, as TensorBoard does.
        return tuple(strings[::2])
    if not shape and len(strings) == 1 and metadata.plugin_name in _GRAPH_SUB_PLUGINS:
        return (strings[0],)
    raise Rejected(f"a string tensor of shape {list(shape)} is not a blob sequence")
