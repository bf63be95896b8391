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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from google.protobuf.message import DecodeError

from boardd.proto import event_pb2, histogram_pb2, summary_pb2, tensor_pb2, types_pb2
from boardd.reader.errors import EventDecodeError, ReaderError
from boardd.reader.types import (
    BlobSequencePoint,
    DataClass,
    DataLoss,
    RunEvent,
    RunEventKind,
    ScalarPoint,
    TagMetadata,
    TensorPoint,
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
_DT_BFLOAT16: Final = types_pb2.DT_BFLOAT16

# For each numeric dtype: how its values are packed (little-endian numpy dtype) and which
# TensorProto field holds them when tensor_content is empty. Half and bfloat16 values travel as
# their 16-bit patterns in half_val; the 8-bit floats as raw bytes in float8_val.
_NUMERIC: Final[dict[int, tuple[np.dtype[np.generic], str]]] = {
    types_pb2.DT_FLOAT: (np.dtype("<f4"), "float_val"),
    types_pb2.DT_DOUBLE: (np.dtype("<f8"), "double_val"),
    types_pb2.DT_HALF: (np.dtype("<f2"), "half_val"),
    types_pb2.DT_BFLOAT16: (np.dtype("<u2"), "half_val"),
    types_pb2.DT_INT8: (np.dtype("i1"), "int_val"),
    types_pb2.DT_INT16: (np.dtype("<i2"), "int_val"),
    types_pb2.DT_INT32: (np.dtype("<i4"), "int_val"),
    types_pb2.DT_INT64: (np.dtype("<i8"), "int64_val"),
    types_pb2.DT_UINT8: (np.dtype("u1"), "int_val"),
    types_pb2.DT_UINT16: (np.dtype("<u2"), "int_val"),
    types_pb2.DT_UINT32: (np.dtype("<u4"), "uint32_val"),
    types_pb2.DT_UINT64: (np.dtype("<u8"), "uint64_val"),
    types_pb2.DT_BOOL: (np.dtype("?"), "bool_val"),
    types_pb2.DT_QINT8: (np.dtype("i1"), "int_val"),
    types_pb2.DT_QUINT8: (np.dtype("u1"), "int_val"),
    types_pb2.DT_QINT16: (np.dtype("<i2"), "int_val"),
    types_pb2.DT_QUINT16: (np.dtype("<u2"), "int_val"),
    types_pb2.DT_QINT32: (np.dtype("<i4"), "int_val"),
    types_pb2.DT_COMPLEX64: (np.dtype("<c8"), "scomplex_val"),
    types_pb2.DT_COMPLEX128: (np.dtype("<c16"), "dcomplex_val"),
    types_pb2.DT_FLOAT8_E5M2: (np.dtype("u1"), "float8_val"),
    types_pb2.DT_FLOAT8_E4M3FN: (np.dtype("u1"), "float8_val"),
    types_pb2.DT_FLOAT8_E4M3FNUZ: (np.dtype("u1"), "float8_val"),
    types_pb2.DT_FLOAT8_E4M3B11FNUZ: (np.dtype("u1"), "float8_val"),
    types_pb2.DT_FLOAT8_E5M2FNUZ: (np.dtype("u1"), "float8_val"),
}

#: Little-endian numpy dtype of each numeric TF DataType (what TensorPoint.content holds).
NUMERIC_DTYPES: Final[dict[int, np.dtype[np.generic]]] = {k: v[0] for k, v in _NUMERIC.items()}

# Dtypes whose single value is a real number. Complex numbers are not; quantized integers
# need a scale that the tensor does not carry.
_SCALAR_DTYPES: Final = frozenset(
    {
        types_pb2.DT_FLOAT,
        types_pb2.DT_DOUBLE,
        types_pb2.DT_HALF,
        types_pb2.DT_BFLOAT16,
        types_pb2.DT_INT8,
        types_pb2.DT_INT16,
        types_pb2.DT_INT32,
        types_pb2.DT_INT64,
        types_pb2.DT_UINT8,
        types_pb2.DT_UINT16,
        types_pb2.DT_UINT32,
        types_pb2.DT_UINT64,
        types_pb2.DT_BOOL,
    }
)

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


#: The most bytes a tensor point may take: a larger one is refused (data loss). SQLite holds at
#: most 10**9 bytes in a value, and a point that large is no summary.
MAX_TENSOR_BYTES = 256 * 2**20
#: The most bytes a tensor given by fewer typed values than its shape may fill in to
#: (TensorFlow's rule: the last value repeats, none means zeros): a record of a few bytes must
#: not become gigabytes in memory and in the store.
MAX_EXPANDED_BYTES = 16 * 2**20


class _Rejected(Exception):
    """A value that cannot be normalized; becomes a DataLoss entry, never escapes this module."""


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
                            point = ScalarPoint(step, wall_time, _tensor_scalar(value.tensor))
                        except _Rejected:
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
        except _Rejected as exc:
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
            return ScalarPoint(step, wall_time, _tensor_scalar(value.tensor))
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
            dtype, shape, content = _tensor_content(value.tensor)
            return TensorPoint(step, wall_time, dtype, shape, content)
        if kind == "histo":
            shape, content = _histogram_tensor(value.histo)
            return TensorPoint(step, wall_time, types_pb2.DT_DOUBLE, shape, content)
        if kind is None:
            # A value with metadata only (hparams, for one): TensorBoard stands in an empty
            # float vector, the smallest valid tensor.
            return TensorPoint(step, wall_time, _DT_FLOAT, (0,), b"")
    what = "a value-less summary" if kind is None else f"a {kind} value"
    raise _Rejected(
        f"{what} does not fit the tag's {data_class.label} data "
        f"(plugin {metadata.plugin_name!r}, set by the tag's first value)"
    )


def _conflict(tag: str, step: int, plugin_name: str, established: TagMetadata) -> str:
    return (
        f"tag {tag!r} at step {step}: {plugin_name} data does not fit the tag's "
        f"{established.data_class.label} data (plugin {established.plugin_name!r}, set by the "
        "tag's first value); value dropped"
    )


def _dtype_name(dtype: int) -> str:
    try:
        return str(types_pb2.DataType.Name(dtype))
    except ValueError:
        return f"dtype {dtype}"


def _shape(tp: tensor_pb2.TensorProto) -> tuple[int, ...]:
    shape_proto = tp.tensor_shape
    if shape_proto.unknown_rank:
        raise _Rejected("the tensor has an unknown rank")
    shape = tuple(d.size for d in shape_proto.dim)
    if any(size < 0 for size in shape):
        raise _Rejected(f"the tensor has an unknown dimension (shape {list(shape)})")
    return shape


def _typed_values(
    tp: tensor_pb2.TensorProto, dtype: int, np_dtype: np.dtype[np.generic], field: str
) -> npt.NDArray[Any]:
    """The values of a tensor's typed ``*_val`` field as a flat array of ``np_dtype``."""
    if field == "float8_val":
        return np.frombuffer(tp.float8_val, dtype=np_dtype)
    values = getattr(tp, field)
    if field == "half_val":
        # 16-bit patterns widened to int32 on the wire.
        return np.array(values, dtype=np.int32).astype("<u2").view(np_dtype)
    if np_dtype.kind == "c":
        parts = np.array(values, dtype="<f4" if np_dtype.itemsize == 8 else "<f8")
        if parts.shape[0] % 2:
            raise _Rejected("a complex tensor has an odd number of real/imaginary parts")
        return parts.view(np_dtype)
    if field == "int_val" and np_dtype.itemsize < 4:
        # int_val widens the narrow integer types to int32; narrow them back.
        return np.array(values, dtype=np.int32).astype(np_dtype)
    return np.array(values, dtype=np_dtype)


def _tensor_scalar(tp: tensor_pb2.TensorProto) -> float:
    """The one real value of a single-element tensor, as float64."""
    dtype = tp.dtype
    content = tp.tensor_content
    if dtype == _DT_FLOAT and not content:
        # The common case (TF2 and tensorboard.summary scalars), kept free of numpy.
        floats = tp.float_val
        if len(floats) == 1 and not tp.tensor_shape.dim:
            return float(floats[0])
    for dim in tp.tensor_shape.dim:
        if dim.size != 1:
            raise _Rejected(f"a tensor of shape {_shape(tp)} is not a scalar")
    if dtype not in _SCALAR_DTYPES:
        raise _Rejected(f"a {_dtype_name(dtype)} tensor is not a real scalar")
    np_dtype, field = _NUMERIC[dtype]
    if content:
        if len(content) != np_dtype.itemsize:
            raise _Rejected(
                f"a scalar {_dtype_name(dtype)} tensor holds {len(content)} content bytes, "
                f"not {np_dtype.itemsize}"
            )
        values = np.frombuffer(content, dtype=np_dtype)
    else:
        values = _typed_values(tp, dtype, np_dtype, field)
        if values.shape[0] != 1:
            raise _Rejected(f"a scalar tensor holds {values.shape[0]} values, not 1")
    if dtype == _DT_BFLOAT16:
        return float((values.astype(np.uint32) << 16).view(np.float32)[0])
    return float(values[0])


def _tensor_content(tp: tensor_pb2.TensorProto) -> tuple[int, tuple[int, ...], bytes]:
    """A tensor as (dtype, shape, content) in TensorPoint's packing."""
    dtype = tp.dtype
    shape = _shape(tp)
    if dtype == _DT_STRING:
        strings = tensor_pb2.TensorProto(dtype=_DT_STRING, string_val=tp.string_val)
        strings.tensor_shape.SetInParent()
        for size in shape:
            strings.tensor_shape.dim.add(size=size)
        packed = strings.SerializeToString(deterministic=True)
        if len(packed) > MAX_TENSOR_BYTES:
            raise _Rejected(
                f"a string tensor of {len(packed)} bytes (more than {MAX_TENSOR_BYTES})"
            )
        return dtype, shape, packed
    spec = _NUMERIC.get(dtype)
    if spec is None:
        raise _Rejected(f"{_dtype_name(dtype)} tensors are not supported")
    np_dtype, field = spec
    count = math.prod(shape)
    size = count * np_dtype.itemsize
    if size > MAX_TENSOR_BYTES:
        raise _Rejected(
            f"a {_dtype_name(dtype)} tensor of shape {list(shape)} would take {size} bytes "
            f"(more than {MAX_TENSOR_BYTES})"
        )
    content = tp.tensor_content
    if content:
        if len(content) != count * np_dtype.itemsize:
            raise _Rejected(
                f"a {_dtype_name(dtype)} tensor of shape {list(shape)} holds {len(content)} "
                f"content bytes, not {count * np_dtype.itemsize}"
            )
        return dtype, shape, content
    values = _typed_values(tp, dtype, np_dtype, field)
    given = values.shape[0]
    if given == count:
        return dtype, shape, values.tobytes()
    if given > count:
        raise _Rejected(
            f"a {_dtype_name(dtype)} tensor of shape {list(shape)} holds {given} values"
        )
    if size > MAX_EXPANDED_BYTES:
        raise _Rejected(
            f"a {_dtype_name(dtype)} tensor of shape {list(shape)} gives {given} values for "
            f"{count}: filled in, {size} bytes (more than {MAX_EXPANDED_BYTES})"
        )
    # TensorFlow's rule for short typed fields: no value means zeros, and the last value
    # repeats to fill the shape (which covers "one value broadcasts").
    if given == 0:
        return dtype, shape, bytes(count * np_dtype.itemsize)
    filled = np.concatenate([values, np.full(count - given, values[-1], dtype=np_dtype)])
    return dtype, shape, filled.tobytes()


def _tensor_blobs(tp: tensor_pb2.TensorProto, metadata: TagMetadata) -> tuple[bytes, ...]:
    """The blobs of a string tensor written for a blob-sequence plugin (images, audio, graphs)."""
    if tp.dtype != _DT_STRING:
        raise _Rejected(f"a {_dtype_name(tp.dtype)} tensor is not a blob sequence")
    shape = _shape(tp)
    strings = tp.string_val
    if len(shape) == 1:
        return tuple(strings)
    if len(shape) == 2 and shape[1] == 2 and metadata.plugin_name == AUDIO:
        # [clips, labels]: keep the clips, as TensorBoard does.
        return tuple(strings[::2])
    if not shape and len(strings) == 1 and metadata.plugin_name in _GRAPH_SUB_PLUGINS:
        return (strings[0],)
    raise _Rejected(f"a string tensor of shape {list(shape)} is not a blob sequence")


def _histogram_tensor(histo: histogram_pb2.HistogramProto) -> tuple[tuple[int, ...], bytes]:
    """A TF1 histogram as [k, 3] float64 rows (left edge, right edge, count).

    Empty buckets at both ends are dropped so that ``min`` and ``max`` can stand in for the
    outer edges (TF1 bounds them by ±DBL_MAX) without making a bucket run backwards.
    """
    limits, counts = _histogram_arrays(histo)
    if len(counts) != len(limits):
        raise _Rejected(
            f"a histogram has {len(counts)} bucket counts but {len(limits)} bucket limits"
        )
    nonempty = np.flatnonzero(counts > 0)
    if nonempty.size == 0:
        return (0, 3), b""
    start = int(nonempty[0])
    end = int(nonempty[-1])
    rows = np.empty((end - start + 1, 3), dtype="<f8")
    rows[0, 0] = histo.min
    rows[1:, 0] = limits[start:end]
    rows[:-1, 1] = limits[start:end]
    rows[-1, 1] = histo.max
    rows[:, 2] = counts[start : end + 1]
    return rows.shape, rows.tobytes()


def _histogram_arrays(
    histo: histogram_pb2.HistogramProto,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """bucket_limit and bucket as numpy arrays.

    Converting protobuf's repeated containers element by element costs a Python step per
    bucket; their packed wire form is already little-endian float64, so we
    read it straight from the serialized message (proto3 packs repeated doubles).
    """
    raw = histo.SerializeToString()
    found: dict[int, npt.NDArray[np.float64]] = {}
    pos = 0
    size = len(raw)
    while pos < size:
        key = raw[pos]
        field_number, wire_type = key >> 3, key & 7
        if key >= 0x80 or wire_type not in (1, 2):
            break  # not the layout we expect: use the slow, general conversion
        if wire_type == 1:
            pos += 9
            continue
        length, pos = _read_varint(raw, pos + 1)
        if length % 8 or pos + length > size:
            break
        found[field_number] = np.frombuffer(raw, dtype="<f8", count=length // 8, offset=pos)
        pos += length
    else:
        empty = np.empty(0, dtype=np.float64)
        return found.get(6, empty), found.get(7, empty)
    return (
        np.array(histo.bucket_limit, dtype=np.float64),
        np.array(histo.bucket, dtype=np.float64),
    )


def _read_varint(raw: bytes, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while pos < len(raw):
        byte = raw[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    return -1, pos
