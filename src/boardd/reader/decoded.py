"""Values that cross the reader's boundary: data-loss records, tag metadata, points."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class DataClass(enum.IntEnum):
    """How a time series is stored and served; numbers match SummaryMetadata.DataClass."""

    UNKNOWN = 0
    SCALAR = 1
    TENSOR = 2
    BLOB_SEQUENCE = 3

    @property
    def label(self) -> str:
        """The lower-case name used in JSON output (``scalar``, ``tensor``, ``blob_sequence``)."""
        return self.name.lower()


class DataLoss(NamedTuple):
    """A byte range of an event file that could not be read, and why.

    ``offset`` and ``length`` are in bytes from the start of the file. ``length`` is 0 for a
    record that was framed correctly but whose content was rejected as a whole (for example an
    event with a NaN wall time): then ``offset`` is the record's start.
    """

    offset: int
    length: int
    reason: str


class TagMetadata(NamedTuple):
    """What TensorBoard's SummaryMetadata says about a tag, normalized by the data_compat rules."""

    plugin_name: str
    plugin_content: bytes
    data_class: DataClass
    display_name: str = ""
    description: str = ""


class ScalarPoint(NamedTuple):
    """One scalar datum. ``value`` is float64 whatever the source dtype; NaN and ±Inf are kept."""

    step: int
    wall_time: float
    value: float


class TensorPoint(NamedTuple):
    """One tensor datum, kept as dtype + shape + bytes.

    ``dtype`` is a TensorFlow ``DataType`` number (``types.proto``). For numeric dtypes ``content``
    holds the values packed little-endian in C order (what ``np.frombuffer`` reads). For
    ``DT_STRING`` it holds the serialized ``TensorProto`` with only ``string_val`` set, because a
    string tensor has no packed form.
    """

    step: int
    wall_time: float
    dtype: int
    shape: tuple[int, ...]
    content: bytes

    def __reduce__(self) -> tuple[type[TensorPoint], tuple[Any, ...]]:
        # Decode workers send thousands of these: a plain constructor call pickles and loads
        # at less cost than a frozen dataclass's generic state protocol.
        return TensorPoint, (self.step, self.wall_time, self.dtype, self.shape, self.content)


class BlobSequencePoint(NamedTuple):
    """One blob-sequence datum: the blobs written at one step (images, audio clips, a graph)."""

    step: int
    wall_time: float
    blobs: tuple[bytes, ...]

    def __reduce__(self) -> tuple[type[BlobSequencePoint], tuple[Any, ...]]:
        return BlobSequencePoint, (self.step, self.wall_time, self.blobs)  # see TensorPoint


class RunEventKind(enum.Enum):
    """Run-level events that are not time-series points."""

    FILE_VERSION = "file_version"
    SESSION_START = "session_start"
    SESSION_STOP = "session_stop"
    SESSION_CHECKPOINT = "session_checkpoint"
    LOG_MESSAGE = "log_message"


class RunEvent(NamedTuple):
    """A run-level event (SessionLog, file_version, log message) at a step and wall time."""

    kind: RunEventKind
    step: int
    wall_time: float
    detail: str = ""


@dataclass(slots=True)
class ScalarColumns:
    """A run of scalar points of one tag, in file order, as parallel numpy arrays.

    The reader hands scalars to the store in this columnar form: one numpy array per column is
    what makes bulk decoding and bulk inserts cheap.
    """

    steps: npt.NDArray[np.int64]
    wall_times: npt.NDArray[np.float64]
    values: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.steps.shape[0])

    def points(self) -> list[ScalarPoint]:
        """The same data as a list of points (for tests and small outputs)."""
        return [
            ScalarPoint(int(s), float(w), float(v))
            for s, w, v in zip(self.steps, self.wall_times, self.values, strict=True)
        ]


@dataclass(slots=True)
class DecodedBatch:
    """Everything decoded from one batch of records of one event file, per tag in file order.

    ``new_tags`` holds the metadata of tags first seen in this batch (a tag's metadata is taken
    from its first value). ``data_loss`` holds both framing losses and rejected events.
    ``end_offset`` is the file offset after the last complete record consumed: the resume point.
    """

    scalars: dict[str, ScalarColumns] = field(default_factory=dict)
    tensors: dict[str, list[TensorPoint]] = field(default_factory=dict)
    blob_sequences: dict[str, list[BlobSequencePoint]] = field(default_factory=dict)
    new_tags: dict[str, TagMetadata] = field(default_factory=dict)
    run_events: list[RunEvent] = field(default_factory=list)
    data_loss: list[DataLoss] = field(default_factory=list)
    records: int = 0
    end_offset: int = 0


def merge_batches(batches: list[DecodedBatch]) -> DecodedBatch:
    """Consecutive batches of one file as one batch, in file order.

    Sampling a series' points in one go keeps only the survivors: offered batch by batch, a
    point kept by an early batch and evicted by a later one is written and deleted again.
    """
    if len(batches) == 1:
        return batches[0]
    import numpy as np  # the reader's columns are numpy arrays: loaded

    out = DecodedBatch()
    columns: dict[str, list[ScalarColumns]] = {}
    for batch in batches:
        for tag, c in batch.scalars.items():
            columns.setdefault(tag, []).append(c)
        for tag, points in batch.tensors.items():
            out.tensors.setdefault(tag, []).extend(points)
        for tag, blobs in batch.blob_sequences.items():
            out.blob_sequences.setdefault(tag, []).extend(blobs)
        for tag, metadata in batch.new_tags.items():
            out.new_tags.setdefault(tag, metadata)
        out.run_events.extend(batch.run_events)
        out.data_loss.extend(batch.data_loss)
        out.records += batch.records
        out.end_offset = batch.end_offset
    for tag, parts in columns.items():
        out.scalars[tag] = (
            parts[0]
            if len(parts) == 1
            else ScalarColumns(
                np.concatenate([p.steps for p in parts]),
                np.concatenate([p.wall_times for p in parts]),
                np.concatenate([p.values for p in parts]),
            )
        )
    return out
