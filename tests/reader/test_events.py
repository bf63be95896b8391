"""EventDecoder: Event payloads from real event files → normalized points (data_compat rules)."""

from __future__ import annotations

import io
import math
import struct
import wave
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
from tensorboard import data_compat
from tensorboard.compat.proto import event_pb2 as tb_event_pb2
from tensorboard.compat.proto import graph_pb2 as tb_graph_pb2
from tensorboard.compat.proto import summary_pb2 as tb_summary_pb2
from tensorboard.compat.proto import tensor_pb2 as tb_tensor_pb2
from tensorboard.compat.proto import types_pb2 as tb_types_pb2
from tensorboard.plugins.audio import metadata as audio_metadata
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.summary import Writer
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter

from boardd.proto import hparams_plugin_data_pb2
from boardd.reader.decoded import (
    BlobSequencePoint,
    DataClass,
    DataLoss,
    RunEventKind,
    ScalarPoint,
    TagMetadata,
    TensorPoint,
)
from boardd.reader.errors import ReaderError
from boardd.reader.events import (
    GRAPH_TAG,
    DecodedEvent,
    DecodedValue,
    EventDecodeError,
    EventDecoder,
    simple_value_metadata,
)

# --- helpers: read real files -------------------------------------------------------------------


def read_records(path: Path) -> list[tuple[int, bytes]]:
    """(offset, payload) of each record: u64 length, u32 crc, payload, u32 crc."""
    data = path.read_bytes()
    records = []
    offset = 0
    while offset < len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        records.append((offset, data[offset + 12 : offset + 12 + length]))
        offset += 12 + length + 4
    assert offset == len(data), f"{path} ends with a partial record"
    return records


def event_files(logdir: Path) -> list[Path]:
    return sorted(logdir.rglob("*tfevents*"))


def decode_file(path: Path, decoder: EventDecoder | None = None) -> list[DecodedEvent]:
    decoder = decoder or EventDecoder()
    return [decoder.decode(payload, offset) for offset, payload in read_records(path)]


def only_file(logdir: Path) -> Path:
    (path,) = event_files(logdir)
    return path


def values(events: Iterable[DecodedEvent]) -> list[DecodedValue]:
    return [v for e in events for v in e.values]


def by_tag(events: Iterable[DecodedEvent]) -> dict[str, list[DecodedValue]]:
    out: dict[str, list[DecodedValue]] = {}
    for v in values(events):
        out.setdefault(v.tag, []).append(v)
    return out


def losses(events: Iterable[DecodedEvent]) -> list[DataLoss]:
    return [loss for e in events for loss in e.data_loss]


def write_events(logdir: Path, events: Iterable[tb_event_pb2.Event]) -> Path:
    """Write hand-built Events with TensorBoard's own event file writer."""
    writer = EventFileWriter(str(logdir))
    for event in events:
        writer.add_event(event)
    writer.close()
    return only_file(logdir)


def summary_event(step: int, *summary_values: tb_summary_pb2.Summary.Value) -> tb_event_pb2.Event:
    event = tb_event_pb2.Event(wall_time=1000.0 + step, step=step)
    event.summary.value.extend(summary_values)
    return event


def tensor_value(
    tag: str,
    tensor: tb_tensor_pb2.TensorProto,
    plugin: str = "",
    data_class: int = tb_summary_pb2.DATA_CLASS_UNKNOWN,
) -> tb_summary_pb2.Summary.Value:
    value = tb_summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if plugin:
        value.metadata.plugin_data.plugin_name = plugin
    value.metadata.data_class = data_class
    return value


def scalar_tensor(dtype: int, field: str, value: object) -> tb_tensor_pb2.TensorProto:
    tensor = tb_tensor_pb2.TensorProto(dtype=dtype)
    tensor.tensor_shape.SetInParent()
    if field == "tensor_content":
        assert isinstance(value, bytes)
        tensor.tensor_content = value
    else:
        getattr(tensor, field).append(value)
    return tensor


def decode_values(
    tmp_path: Path, *summary_values: tb_summary_pb2.Summary.Value
) -> list[DecodedEvent]:
    """Write each value in its own event (steps 1, 2, …) and decode the file."""
    path = write_events(tmp_path, [summary_event(i + 1, v) for i, v in enumerate(summary_values)])
    return decode_file(path)[1:]  # without the file_version event


def tensor_array(point: TensorPoint, np_dtype: str) -> np.ndarray:
    return np.frombuffer(point.content, dtype=np_dtype).reshape(point.shape)


def wav_bytes(frames: int = 64) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(np.arange(frames, dtype="<i2").tobytes())
    return buf.getvalue()


# --- tensorboardX and TensorBoard writers ------------------------------------------------------


def test_tensorboardx_scalars_are_scalar_points_with_legacy_metadata(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        for step, v in enumerate([0.5, 0.1, 1e-30, 3.0e38]):
            w.add_scalar("loss", v, step, walltime=100.0 + step)
        w.add_scalar("acc", 0.75, 7, walltime=200.0)
    events = decode_file(only_file(tmp_path))
    assert events[0].run_events[0].kind is RunEventKind.FILE_VERSION
    assert events[0].run_events[0].detail == "brain.Event:2"
    tags = by_tag(events)
    assert [v.point for v in tags["loss"]] == [
        ScalarPoint(step, 100.0 + step, float(np.float32(v)))
        for step, v in enumerate([0.5, 0.1, 1e-30, 3.0e38])
    ]
    assert [v.first for v in tags["loss"]] == [True, False, False, False]
    assert tags["loss"][0].metadata == simple_value_metadata("loss")
    assert simple_value_metadata("loss") == TagMetadata(
        "scalars", b"", DataClass.SCALAR, display_name="loss"
    )
    assert tags["acc"] == [
        DecodedValue("acc", ScalarPoint(7, 200.0, 0.75), simple_value_metadata("acc"), True)
    ]
    assert not losses(events)


def test_tensorboardx_add_scalars_writes_one_run_per_key(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalars("multi", {"a": 1.0, "b": 2.0}, 3, walltime=5.0)
    runs = {p.parent.relative_to(tmp_path).as_posix(): p for p in event_files(tmp_path)}
    assert set(runs) >= {"multi/a", "multi/b"}
    for run, expected in [("multi/a", 1.0), ("multi/b", 2.0)]:
        (value,) = values(decode_file(runs[run]))
        assert value.tag == "multi"
        assert value.point == ScalarPoint(3, 5.0, expected)


def test_tensorboard_writer_scalar_tensor(tmp_path: Path) -> None:
    writer = Writer(str(tmp_path))
    writer.add_scalar("x", 1.5, 3, wall_time=10.0, description="about x")
    writer.add_scalar("x", float("nan"), 4, wall_time=11.0)
    writer.add_scalar("x", float("-inf"), 5, wall_time=12.0)
    writer.close()
    x = by_tag(decode_file(only_file(tmp_path)))["x"]
    assert x[0].metadata.plugin_name == "scalars"
    assert x[0].metadata.data_class is DataClass.SCALAR
    assert x[0].metadata.description == "about x"
    assert x[0].point == ScalarPoint(3, 10.0, 1.5)
    assert isinstance(x[1].point, ScalarPoint) and math.isnan(x[1].point.value)
    assert x[2].point == ScalarPoint(5, 12.0, float("-inf"))


def test_tensorboardx_histogram_matches_data_compat(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    data = rng.normal(size=1000)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("h", data, 3, walltime=9.0)
    path = only_file(tmp_path)
    (value,) = values(decode_file(path))
    point = value.point
    assert isinstance(point, TensorPoint)
    assert value.metadata == TagMetadata("histograms", b"", DataClass.TENSOR, display_name="h")
    assert point.dtype == tb_types_pb2.DT_DOUBLE
    rows = tensor_array(point, "<f8")
    assert rows.shape[1] == 3
    assert rows[0, 0] == data.min() and rows[-1, 1] == data.max()
    assert rows[:, 2].sum() == 1000
    assert np.all(rows[:-1, 1] == rows[1:, 0]), "buckets must be contiguous"
    assert np.all(rows[:, 0] <= rows[:, 1]), "no bucket may run backwards"
    # TensorBoard's own conversion of the same value (it rounds to float32).
    raw = tb_event_pb2.Event.FromString(read_records(path)[1][1]).summary.value[0]
    expected = tensor_util.make_ndarray(data_compat.migrate_value(raw).tensor)
    np.testing.assert_array_equal(rows.astype(np.float32), expected)


def test_legacy_histogram_edge_cases(tmp_path: Path) -> None:
    def histo(limits: list[float], counts: list[float]) -> tb_summary_pb2.Summary.Value:
        value = tb_summary_pb2.Summary.Value(tag="h")
        value.histo.min, value.histo.max = -5.0, 7.0
        value.histo.bucket_limit.extend(limits)
        value.histo.bucket.extend(counts)
        return value

    events = decode_values(
        tmp_path,
        histo([-1.0, 0.0, 1.0, 2.0, 1.7976931348623157e308], [0.0, 3.0, 0.0, 4.0, 0.0]),
        histo([0.0, 1.0], [0.0, 0.0]),  # all empty
        histo([], []),
        histo([1.0], [2.0]),  # one bucket: edges are min and max
        histo([1.0, 2.0], [1.0]),  # corrupt: lengths differ
    )
    points = [e.values[0].point if e.values else None for e in events]
    assert isinstance(points[0], TensorPoint)
    np.testing.assert_array_equal(
        tensor_array(points[0], "<f8"),
        [[-5.0, 0.0, 3.0], [0.0, 1.0, 0.0], [1.0, 7.0, 4.0]],
    )
    for empty in points[1:3]:
        assert isinstance(empty, TensorPoint)
        assert (empty.shape, empty.content) == ((0, 3), b"")
    assert isinstance(points[3], TensorPoint)
    np.testing.assert_array_equal(tensor_array(points[3], "<f8"), [[-5.0, 7.0, 2.0]])
    assert points[4] is None
    (loss,) = events[4].data_loss
    assert "1 bucket counts but 2 bucket limits" in loss.reason


def test_tensorboardx_image_is_width_height_png(tmp_path: Path) -> None:
    image = np.zeros((3, 4, 5), dtype=np.uint8)  # CHW: 4 high, 5 wide
    image[0, 1, 2] = 255
    with SummaryWriter(str(tmp_path)) as w:
        w.add_image("img", image, 4, walltime=3.0)
    path = only_file(tmp_path)
    (value,) = values(decode_file(path))
    raw = tb_event_pb2.Event.FromString(read_records(path)[1][1]).summary.value[0].image
    assert value.point == BlobSequencePoint(4, 3.0, (b"5", b"4", raw.encoded_image_string))
    assert raw.encoded_image_string.startswith(b"\x89PNG")
    expected = image_metadata.create_summary_metadata("img", "", converted_to_tensor=True)
    assert value.metadata == TagMetadata(
        "images", expected.plugin_data.content, DataClass.BLOB_SEQUENCE, display_name="img"
    )


def test_legacy_audio_keeps_the_clip(tmp_path: Path) -> None:
    # tensorboardX's add_audio needs the soundfile package, which boardd does not depend on;
    # this writes the same TF1 audio value with TensorBoard's own event writer.
    clip = wav_bytes()
    value = tb_summary_pb2.Summary.Value(tag="aud")
    value.audio.sample_rate = 8000.0
    value.audio.num_channels = 1
    value.audio.length_frames = 64
    value.audio.encoded_audio_string = clip
    value.audio.content_type = "audio/wav"
    value.metadata.summary_description = "a clip"
    (event,) = decode_values(tmp_path, value)
    (decoded,) = event.values
    assert decoded.point == BlobSequencePoint(1, 1001.0, (clip,))
    expected = audio_metadata.create_summary_metadata(
        "aud", "a clip", encoding=audio_metadata.Encoding.Value("WAV"), converted_to_tensor=True
    )
    assert decoded.metadata == TagMetadata(
        "audio", expected.plugin_data.content, DataClass.BLOB_SEQUENCE, "aud", "a clip"
    )


def test_tensorboardx_text_is_a_string_tensor(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_text("notes", "hello **world**", 6, walltime=1.0)
    (value,) = values(decode_file(only_file(tmp_path)))
    assert value.tag == "notes/text_summary"
    assert value.metadata.plugin_name == "text"
    assert value.metadata.data_class is DataClass.TENSOR
    point = value.point
    assert isinstance(point, TensorPoint)
    assert (point.dtype, point.shape) == (tb_types_pb2.DT_STRING, (1,))
    tensor = tb_tensor_pb2.TensorProto.FromString(point.content)
    assert list(tensor.string_val) == [b"hello **world**"]
    assert [d.size for d in tensor.tensor_shape.dim] == [1]
    assert tensor.dtype == tb_types_pb2.DT_STRING


def test_tensorboardx_pr_curve_is_a_float_tensor(tmp_path: Path) -> None:
    labels = np.array([0, 1, 1, 0, 1])
    predictions = np.array([0.1, 0.9, 0.8, 0.3, 0.4])
    with SummaryWriter(str(tmp_path)) as w:
        w.add_pr_curve("pr", labels, predictions, 7, num_thresholds=5, walltime=2.0)
    path = only_file(tmp_path)
    (value,) = values(decode_file(path))
    assert value.metadata.plugin_name == "pr_curves"
    assert value.metadata.data_class is DataClass.TENSOR
    point = value.point
    assert isinstance(point, TensorPoint)
    assert (point.dtype, point.shape) == (tb_types_pb2.DT_FLOAT, (6, 5))
    raw = tb_event_pb2.Event.FromString(read_records(path)[1][1]).summary.value[0].tensor
    np.testing.assert_array_equal(tensor_array(point, "<f4"), tensor_util.make_ndarray(raw))


def test_tensorboardx_hparams(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_hparams({"lr": 0.1, "opt": "adam", "deep": True}, {"hparam/acc": 0.9}, name="t1")
    (path,) = [p for p in event_files(tmp_path) if p.parent.name == "t1"]
    tags = by_tag(decode_file(path))
    for tag in (
        "_hparams_/experiment",
        "_hparams_/session_start_info",
        "_hparams_/session_end_info",
    ):
        (value,) = tags[tag]
        assert value.metadata.plugin_name == "hparams"
        assert value.metadata.data_class is DataClass.TENSOR
        # The values carry metadata only; TensorBoard stands in an empty float vector.
        assert isinstance(value.point, TensorPoint)
        assert (value.point.dtype, value.point.shape, value.point.content) == (1, (0,), b"")
    start = hparams_plugin_data_pb2.HParamsPluginData.FromString(
        tags["_hparams_/session_start_info"][0].metadata.plugin_content
    )
    hparams = start.session_start_info.hparams
    assert hparams["lr"].number_value == 0.1
    assert hparams["opt"].string_value == "adam"
    assert hparams["deep"].bool_value is True
    experiment = hparams_plugin_data_pb2.HParamsPluginData.FromString(
        tags["_hparams_/experiment"][0].metadata.plugin_content
    ).experiment
    assert {h.name for h in experiment.hparam_infos} == {"lr", "opt", "deep"}
    assert [m.name.tag for m in experiment.metric_infos] == ["hparam/acc"]
    assert tags["hparam/acc"][0].point.value == pytest.approx(0.9)


# --- scalars of every dtype ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "field", "raw", "expected"),
    [
        (tb_types_pb2.DT_FLOAT, "float_val", 0.1, float(np.float32(0.1))),
        (tb_types_pb2.DT_FLOAT, "tensor_content", np.float32(2.5).tobytes(), 2.5),
        (tb_types_pb2.DT_DOUBLE, "double_val", 0.1, 0.1),
        (tb_types_pb2.DT_DOUBLE, "tensor_content", np.float64(1e300).tobytes(), 1e300),
        (tb_types_pb2.DT_HALF, "half_val", int(np.float16(1.5).view(np.uint16)), 1.5),
        (tb_types_pb2.DT_HALF, "tensor_content", np.float16(-2.0).tobytes(), -2.0),
        (tb_types_pb2.DT_BFLOAT16, "half_val", 0x3FC0, 1.5),
        (tb_types_pb2.DT_INT8, "int_val", -7, -7.0),
        (tb_types_pb2.DT_INT16, "int_val", -300, -300.0),
        (tb_types_pb2.DT_INT32, "int_val", -(2**31), float(-(2**31))),
        (tb_types_pb2.DT_INT32, "tensor_content", np.int32(12).tobytes(), 12.0),
        (tb_types_pb2.DT_INT64, "int64_val", 2**53, float(2**53)),
        (tb_types_pb2.DT_UINT8, "int_val", 255, 255.0),
        (tb_types_pb2.DT_UINT16, "int_val", 65535, 65535.0),
        (tb_types_pb2.DT_UINT32, "uint32_val", 2**32 - 1, float(2**32 - 1)),
        (tb_types_pb2.DT_UINT64, "uint64_val", 2**64 - 1, float(2**64 - 1)),
        (tb_types_pb2.DT_BOOL, "bool_val", True, 1.0),
        (tb_types_pb2.DT_BOOL, "tensor_content", b"\x00", 0.0),
    ],
)
def test_scalar_tensors_of_every_real_dtype(
    tmp_path: Path, dtype: int, field: str, raw: object, expected: float
) -> None:
    value = tensor_value("s", scalar_tensor(dtype, field, raw), "scalars")
    (event,) = decode_values(tmp_path, value)
    assert event.data_loss == []
    (decoded,) = event.values
    assert decoded.point == ScalarPoint(1, 1001.0, expected)
    assert decoded.metadata.data_class is DataClass.SCALAR  # implied by the plugin name


def test_scalars_keep_nan_and_infinities(tmp_path: Path) -> None:
    specials = [float("nan"), float("inf"), float("-inf")]
    summary_values = [tb_summary_pb2.Summary.Value(tag="simple", simple_value=v) for v in specials]
    summary_values += [
        tensor_value("f64", scalar_tensor(tb_types_pb2.DT_DOUBLE, "double_val", v), "scalars")
        for v in specials
    ]
    summary_values.append(
        tensor_value("f16", scalar_tensor(tb_types_pb2.DT_HALF, "half_val", 0x7E00), "scalars")
    )
    got = [v.point.value for v in values(decode_values(tmp_path, *summary_values))]
    assert len(got) == 7
    for actual, wanted in zip(got, [*specials, *specials, float("nan")], strict=True):
        assert (math.isnan(actual) and math.isnan(wanted)) or actual == wanted


def test_single_element_tensors_of_any_rank_are_scalars(tmp_path: Path) -> None:
    tensor = tb_tensor_pb2.TensorProto(dtype=tb_types_pb2.DT_FLOAT, float_val=[4.0])
    tensor.tensor_shape.dim.add(size=1)
    tensor.tensor_shape.dim.add(size=1)
    no_shape = tb_tensor_pb2.TensorProto(dtype=tb_types_pb2.DT_FLOAT, float_val=[5.0])
    events = decode_values(
        tmp_path, tensor_value("s", tensor, "scalars"), tensor_value("s", no_shape, "scalars")
    )
    assert [v.point.value for v in values(events)] == [4.0, 5.0]


@pytest.mark.parametrize(
    ("tensor", "reason"),
    [
        (
            tb_tensor_pb2.TensorProto(dtype=tb_types_pb2.DT_FLOAT, float_val=[1.0, 2.0]),
            "holds 2 values, not 1",
        ),
        (tb_tensor_pb2.TensorProto(dtype=tb_types_pb2.DT_FLOAT), "holds 0 values, not 1"),
        (
            tb_tensor_pb2.TensorProto(dtype=tb_types_pb2.DT_FLOAT, tensor_content=b"\x00\x00"),
            "holds 2 content bytes, not 4",
        ),
        (
            tb_tensor_pb2.TensorProto(dtype=tb_types_pb2.DT_STRING, string_val=[b"1"]),
            "DT_STRING tensor is not a real scalar",
        ),
        (
            tb_tensor_pb2.TensorProto(dtype=tb_types_pb2.DT_COMPLEX64, scomplex_val=[1.0, 0.0]),
            "DT_COMPLEX64 tensor is not a real scalar",
        ),
    ],
)
def test_tensors_that_are_not_scalars_are_data_loss(
    tmp_path: Path, tensor: tb_tensor_pb2.TensorProto, reason: str
) -> None:
    good = tensor_value("s", scalar_tensor(tb_types_pb2.DT_FLOAT, "float_val", 1.0), "scalars")
    first, bad = decode_values(tmp_path, good, tensor_value("s", tensor, "scalars"))
    assert first.values[0].point == ScalarPoint(1, 1001.0, 1.0)
    assert bad.values == []
    (loss,) = bad.data_loss
    assert loss.length == 0
    assert reason in loss.reason and "'s'" in loss.reason


def test_vector_on_scalar_tag_is_data_loss(tmp_path: Path) -> None:
    vector = tb_tensor_pb2.TensorProto(dtype=tb_types_pb2.DT_FLOAT, float_val=[1.0, 2.0])
    vector.tensor_shape.dim.add(size=2)
    (event,) = decode_values(tmp_path, tensor_value("s", vector, "scalars"))
    assert event.values == []
    assert "shape (2,) is not a scalar" in event.data_loss[0].reason


# --- tensors ------------------------------------------------------------------------------------


def shaped(tensor: tb_tensor_pb2.TensorProto, *dims: int) -> tb_tensor_pb2.TensorProto:
    tensor.tensor_shape.SetInParent()
    for size in dims:
        tensor.tensor_shape.dim.add(size=size)
    return tensor


@pytest.mark.parametrize(
    ("tensor", "np_dtype", "expected"),
    [
        # typed values, exactly as many as the shape holds
        (
            shaped(tb_tensor_pb2.TensorProto(dtype=1, float_val=[1, 2, 3, 4, 5, 6]), 2, 3),
            "<f4",
            [[1, 2, 3], [4, 5, 6]],
        ),
        # one value fills the shape
        (
            shaped(tb_tensor_pb2.TensorProto(dtype=2, double_val=[1.5]), 2, 2),
            "<f8",
            [[1.5] * 2] * 2,
        ),
        # TensorFlow's rule: the last value repeats
        (shaped(tb_tensor_pb2.TensorProto(dtype=3, int_val=[1, 2]), 4), "<i4", [1, 2, 2, 2]),
        # and no value means zeros
        (shaped(tb_tensor_pb2.TensorProto(dtype=9), 3), "<i8", [0, 0, 0]),
        # tensor_content is kept as it is
        (
            shaped(
                tb_tensor_pb2.TensorProto(
                    dtype=9, tensor_content=np.array([-1, 2**40], "<i8").tobytes()
                ),
                2,
            ),
            "<i8",
            [-1, 2**40],
        ),
        (shaped(tb_tensor_pb2.TensorProto(dtype=6, int_val=[-1, 127]), 2), "i1", [-1, 127]),
        (shaped(tb_tensor_pb2.TensorProto(dtype=4, int_val=[0, 255]), 2), "u1", [0, 255]),
        (shaped(tb_tensor_pb2.TensorProto(dtype=5, int_val=[-300]), 1), "<i2", [-300]),
        (shaped(tb_tensor_pb2.TensorProto(dtype=17, int_val=[65535]), 1), "<u2", [65535]),
        (
            shaped(tb_tensor_pb2.TensorProto(dtype=22, uint32_val=[2**32 - 1]), 1),
            "<u4",
            [2**32 - 1],
        ),
        (
            shaped(tb_tensor_pb2.TensorProto(dtype=23, uint64_val=[2**64 - 1]), 1),
            "<u8",
            [2**64 - 1],
        ),
        (
            shaped(tb_tensor_pb2.TensorProto(dtype=10, bool_val=[True, False]), 2),
            "?",
            [True, False],
        ),
        (
            shaped(
                tb_tensor_pb2.TensorProto(
                    dtype=19, half_val=np.array([0.5, -1.0], np.float16).view(np.uint16).tolist()
                ),
                2,
            ),
            "<f2",
            [0.5, -1.0],
        ),
        (
            shaped(tb_tensor_pb2.TensorProto(dtype=8, scomplex_val=[1, 2, 3, 4]), 2),
            "<c8",
            [1 + 2j, 3 + 4j],
        ),
        (
            shaped(tb_tensor_pb2.TensorProto(dtype=18, dcomplex_val=[1, -1]), 3),
            "<c16",
            [1 - 1j] * 3,
        ),
        (shaped(tb_tensor_pb2.TensorProto(dtype=24, float8_val=b"\x01\x02"), 2), "u1", [1, 2]),
        (shaped(tb_tensor_pb2.TensorProto(dtype=1), 0, 3), "<f4", np.zeros((0, 3))),
    ],
)
def test_numeric_tensors_are_packed_little_endian(
    tmp_path: Path, tensor: tb_tensor_pb2.TensorProto, np_dtype: str, expected: object
) -> None:
    (event,) = decode_values(tmp_path, tensor_value("t", tensor, "custom_plugin"))
    assert event.data_loss == []
    (value,) = event.values
    assert value.metadata.data_class is DataClass.UNKNOWN  # a plugin TensorBoard does not know
    point = value.point
    assert isinstance(point, TensorPoint)
    assert point.dtype == tensor.dtype
    assert point.shape == tuple(d.size for d in tensor.tensor_shape.dim)
    np.testing.assert_array_equal(tensor_array(point, np_dtype), np.array(expected))
    try:
        theirs = tensor_util.make_ndarray(tensor)
    except (ValueError, TypeError, KeyError):
        return  # TensorBoard reads fewer forms: it only broadcasts a single value, has no float8
    np.testing.assert_array_equal(tensor_array(point, np_dtype), theirs)


@pytest.mark.parametrize(
    ("tensor", "reason"),
    [
        (shaped(tb_tensor_pb2.TensorProto(dtype=1, float_val=[1, 2, 3]), 2), "holds 3 values"),
        (
            shaped(tb_tensor_pb2.TensorProto(dtype=1, tensor_content=b"\x00" * 12), 2),
            "holds 12 content bytes, not 8",
        ),
        (shaped(tb_tensor_pb2.TensorProto(dtype=20), 1), "DT_RESOURCE tensors are not supported"),
        (shaped(tb_tensor_pb2.TensorProto(dtype=1), -1), "unknown dimension"),
        (
            tb_tensor_pb2.TensorProto(
                dtype=1, tensor_shape={"unknown_rank": True}, float_val=[1.0]
            ),
            "unknown rank",
        ),
        (shaped(tb_tensor_pb2.TensorProto(dtype=8, scomplex_val=[1, 2, 3]), 2), "odd number"),
    ],
)
def test_malformed_tensors_are_data_loss(
    tmp_path: Path, tensor: tb_tensor_pb2.TensorProto, reason: str
) -> None:
    (event,) = decode_values(tmp_path, tensor_value("t", tensor, "mesh"))
    assert event.values == []
    assert reason in event.data_loss[0].reason


def test_string_tensor_content_is_a_string_only_tensor_proto(tmp_path: Path) -> None:
    tensor = shaped(
        tb_tensor_pb2.TensorProto(dtype=7, string_val=[b"a", b"\xff\x00", b""], version_number=3),
        3,
    )
    tensor.tensor_shape.dim[0].name = "dropped"
    (event,) = decode_values(tmp_path, tensor_value("t", tensor, "text"))
    point = event.values[0].point
    assert isinstance(point, TensorPoint)
    expected = shaped(tb_tensor_pb2.TensorProto(dtype=7, string_val=[b"a", b"\xff\x00", b""]), 3)
    assert tb_tensor_pb2.TensorProto.FromString(point.content) == expected
    assert point.content == expected.SerializeToString(deterministic=True)


# --- blob sequences -----------------------------------------------------------------------------


def test_blob_sequence_string_tensors(tmp_path: Path) -> None:
    images = shaped(tb_tensor_pb2.TensorProto(dtype=7, string_val=[b"5", b"4", b"p1", b"p2"]), 4)
    audio = shaped(
        tb_tensor_pb2.TensorProto(dtype=7, string_val=[b"c1", b"l1", b"c2", b"l2"]), 2, 2
    )
    keras = shaped(tb_tensor_pb2.TensorProto(dtype=7, string_val=[b"{json}"]))
    blob_class = tb_summary_pb2.DATA_CLASS_BLOB_SEQUENCE
    events = decode_values(
        tmp_path,
        tensor_value("img", images, "images", blob_class),
        tensor_value("aud", audio, "audio"),  # data class implied by the plugin name
        tensor_value("model", keras, "graph_keras_model"),
        tensor_value("img", shaped(tb_tensor_pb2.TensorProto(dtype=1, float_val=[1]), 1)),
        tensor_value(
            "aud", shaped(tb_tensor_pb2.TensorProto(dtype=7, string_val=[b"x"] * 6), 2, 3)
        ),
    )
    points = [e.values[0].point if e.values else None for e in events]
    assert points[:3] == [
        BlobSequencePoint(1, 1001.0, (b"5", b"4", b"p1", b"p2")),
        BlobSequencePoint(2, 1002.0, (b"c1", b"c2")),
        BlobSequencePoint(3, 1003.0, (b"{json}",)),
    ]
    assert all(e.values[0].metadata.data_class is DataClass.BLOB_SEQUENCE for e in events[:3])
    assert points[3:] == [None, None]
    assert "DT_FLOAT tensor is not a blob sequence" in events[3].data_loss[0].reason
    assert "shape [2, 3] is not a blob sequence" in events[4].data_loss[0].reason


def test_graph_def_becomes_a_blob_on_the_run_graph_tag(tmp_path: Path) -> None:
    graph = tb_graph_pb2.GraphDef()
    graph.node.add(name="x", op="Placeholder")
    graph_bytes = graph.SerializeToString()
    path = write_events(
        tmp_path,
        [
            tb_event_pb2.Event(wall_time=5.0, step=0, graph_def=graph_bytes),
            tb_event_pb2.Event(wall_time=6.0, step=1, meta_graph_def=b"\x0a\x00"),
            tb_event_pb2.Event(
                wall_time=7.0,
                step=2,
                tagged_run_metadata=tb_event_pb2.TaggedRunMetadata(
                    tag="step2", run_metadata=b"\x01\x02"
                ),
            ),
        ],
    )
    _, graph_event, meta_event, trm_event = decode_file(path)
    assert graph_event.graph == graph_bytes
    assert graph_event.values == [
        DecodedValue(
            GRAPH_TAG,
            BlobSequencePoint(0, 5.0, (graph_bytes,)),
            TagMetadata("graphs", b"", DataClass.BLOB_SEQUENCE),
            True,
        )
    ]
    # meta_graph_def is ignored, as TensorBoard's Rust data server does.
    assert (meta_event.values, meta_event.run_events, meta_event.graph) == ([], [], None)
    assert trm_event.tagged_run_metadata == ("step2", b"\x01\x02")
    assert trm_event.values == [
        DecodedValue(
            "step2",
            BlobSequencePoint(2, 7.0, (b"\x01\x02",)),
            TagMetadata("graph_tagged_run_metadata", b"", DataClass.BLOB_SEQUENCE),
            True,
        )
    ]


# --- run events ---------------------------------------------------------------------------------


def test_session_logs_file_version_and_log_messages(tmp_path: Path) -> None:
    session = tb_event_pb2.SessionLog
    path = write_events(
        tmp_path,
        [
            tb_event_pb2.Event(wall_time=1.0, step=0, session_log=session(status=1, msg="go")),
            tb_event_pb2.Event(
                wall_time=2.0, step=5, session_log=session(status=3, checkpoint_path="/ck-5")
            ),
            tb_event_pb2.Event(wall_time=3.0, step=9, session_log=session(status=2)),
            tb_event_pb2.Event(wall_time=3.5, step=9, session_log=session(status=0)),
            tb_event_pb2.Event(
                wall_time=4.0,
                step=9,
                log_message=tb_event_pb2.LogMessage(level=30, message="disk almost full"),
            ),
        ],
    )
    run_events = [r for e in decode_file(path) for r in e.run_events]
    assert [(r.kind, r.step, r.wall_time, r.detail) for r in run_events[1:]] == [
        (RunEventKind.SESSION_START, 0, 1.0, "go"),
        (RunEventKind.SESSION_CHECKPOINT, 5, 2.0, "/ck-5"),
        (RunEventKind.SESSION_STOP, 9, 3.0, ""),
        (RunEventKind.LOG_MESSAGE, 9, 4.0, "disk almost full"),
    ]
    assert run_events[0].kind is RunEventKind.FILE_VERSION


# --- metadata and conflicts ---------------------------------------------------------------------


def test_metadata_comes_from_the_first_value(tmp_path: Path) -> None:
    first = tensor_value("t", shaped(tb_tensor_pb2.TensorProto(dtype=1, float_val=[1.0]), 1))
    first.metadata.plugin_data.plugin_name = "histograms"
    first.metadata.plugin_data.content = b"v1"
    first.metadata.display_name = "first"
    later = tensor_value(
        "t",
        shaped(tb_tensor_pb2.TensorProto(dtype=1, float_val=[2.0]), 1),
        "images",
        tb_summary_pb2.DATA_CLASS_BLOB_SEQUENCE,
    )
    no_metadata = tb_summary_pb2.Summary.Value(
        tag="t", tensor=shaped(tb_tensor_pb2.TensorProto(dtype=1, float_val=[3.0]), 1)
    )
    decoder = EventDecoder()
    path = write_events(
        tmp_path, [summary_event(i, v) for i, v in enumerate([first, later, no_metadata])]
    )
    events = decode_file(path, decoder)
    decoded = values(events)
    expected = TagMetadata("histograms", b"v1", DataClass.TENSOR, display_name="first")
    assert [v.metadata for v in decoded] == [expected] * 3
    assert [v.first for v in decoded] == [True, False, False]
    assert decoder.tags == {"t": expected}
    assert decoded[0].metadata is decoded[2].metadata  # one object per tag


def test_explicit_data_class_is_taken_verbatim(tmp_path: Path) -> None:
    value = tensor_value(
        "t",
        shaped(tb_tensor_pb2.TensorProto(dtype=1, float_val=[1.0, 2.0]), 2),
        "my_plugin",
        tb_summary_pb2.DATA_CLASS_TENSOR,
    )
    value.metadata.plugin_data.content = b"\x01"
    value.metadata.summary_description = "desc"
    (event,) = decode_values(tmp_path, value)
    assert event.values[0].metadata == TagMetadata(
        "my_plugin", b"\x01", DataClass.TENSOR, "", "desc"
    )


def test_simple_value_metadata_ignores_other_plugins(tmp_path: Path) -> None:
    value = tb_summary_pb2.Summary.Value(tag="s", simple_value=1.0)
    value.metadata.plugin_data.plugin_name = "ignored"
    value.metadata.display_name = "Shown"
    (event,) = decode_values(tmp_path, value)
    assert event.values[0].metadata == simple_value_metadata("s", "Shown")
    assert event.values[0].metadata.display_name == "Shown"


def test_conflicting_kinds_are_data_loss_not_errors(tmp_path: Path) -> None:
    image = tb_summary_pb2.Summary.Value(tag="loss")
    image.image.width, image.image.height = 1, 1
    image.image.encoded_image_string = b"png"
    histo = tb_summary_pb2.Summary.Value(tag="loss")
    histo.histo.bucket_limit.append(1.0)
    histo.histo.bucket.append(1.0)
    scalar_on_image = tb_summary_pb2.Summary.Value(tag="pic", simple_value=2.0)
    first_image = tb_summary_pb2.Summary.Value(tag="pic")
    first_image.image.encoded_image_string = b"png"
    path = write_events(
        tmp_path,
        [
            summary_event(
                1, tb_summary_pb2.Summary.Value(tag="loss", simple_value=1.0), first_image
            ),
            # A conflicting value does not take the rest of its event down with it.
            summary_event(2, image, tb_summary_pb2.Summary.Value(tag="loss", simple_value=2.0)),
            summary_event(3, histo, scalar_on_image),
        ],
    )
    records = read_records(path)
    events = decode_file(path)
    assert [(v.tag, v.point.step) for v in values(events)] == [("loss", 1), ("pic", 1), ("loss", 2)]
    assert events[2].data_loss == [
        DataLoss(
            records[2][0],
            0,
            "tag 'loss' at step 2: a image value does not fit the tag's scalar data "
            "(plugin 'scalars', set by the tag's first value); value dropped",
        )
    ]
    assert [loss.offset for loss in events[3].data_loss] == [records[3][0]] * 2
    assert "a histo value does not fit the tag's scalar data" in events[3].data_loss[0].reason
    assert (
        "a simple_value value does not fit the tag's blob_sequence" in events[3].data_loss[1].reason
    )


def test_graph_on_a_scalar_tag_is_data_loss(tmp_path: Path) -> None:
    path = write_events(
        tmp_path,
        [
            summary_event(1, tb_summary_pb2.Summary.Value(tag=GRAPH_TAG, simple_value=1.0)),
            tb_event_pb2.Event(wall_time=5.0, step=2, graph_def=b"\x0a\x00"),
        ],
    )
    events = decode_file(path)
    assert events[2].values == []
    assert events[2].graph == b"\x0a\x00"
    assert "graphs data does not fit the tag's scalar data" in events[2].data_loss[0].reason


def test_nan_wall_time_drops_the_event_alone(tmp_path: Path) -> None:
    bad = summary_event(2, tb_summary_pb2.Summary.Value(tag="x", simple_value=2.0))
    bad.wall_time = float("nan")
    path = write_events(
        tmp_path,
        [
            summary_event(1, tb_summary_pb2.Summary.Value(tag="x", simple_value=1.0)),
            bad,
            summary_event(3, tb_summary_pb2.Summary.Value(tag="x", simple_value=3.0)),
            tb_event_pb2.Event(wall_time=float("nan"), step=4, file_version="brain.Event:2"),
        ],
    )
    records = read_records(path)
    events = decode_file(path)
    assert [v.point.step for v in values(events)] == [1, 3]
    assert events[2].values == [] and events[4].run_events == []
    assert events[2].data_loss == [
        DataLoss(records[2][0], 0, "event at step 2 has a NaN wall time; dropped")
    ]
    assert events[4].data_loss[0].offset == records[4][0]


def test_value_without_a_tag_uses_node_name(tmp_path: Path) -> None:
    value = tb_summary_pb2.Summary.Value(node_name="legacy/op", simple_value=1.0)
    (event,) = decode_values(tmp_path, value)
    assert event.values[0].tag == "legacy/op"


def test_unparseable_payload_raises_event_decode_error() -> None:
    decoder = EventDecoder()
    with pytest.raises(EventDecodeError) as info:
        decoder.decode(b"\x0a\xff\xff", 1234)  # a field that claims more bytes than follow
    assert isinstance(info.value, ReaderError)
    assert info.value.offset == 1234
    assert "offset 1234" in str(info.value)


def test_memoryview_payloads_decode(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("x", 2.0, 1, walltime=3.0)
    data = only_file(tmp_path).read_bytes()
    view = memoryview(data)
    decoder = EventDecoder()
    points = []
    for offset, payload in read_records(only_file(tmp_path)):
        start = offset + 12
        assert bytes(view[start : start + len(payload)]) == payload
        points += [
            v.point for v in decoder.decode(view[start : start + len(payload)], offset).values
        ]
    assert points == [ScalarPoint(1, 3.0, 2.0)]


def test_fast_path_can_share_the_tag_table() -> None:
    decoder = EventDecoder()
    # What the vectorized scalar path does when it meets a new simple_value tag first.
    decoder.tags["x"] = simple_value_metadata("x")
    event = tb_event_pb2.Event(wall_time=1.0, step=1)
    event.summary.value.add(tag="x", simple_value=3.0)
    (value,) = decoder.decode(event.SerializeToString(), 0).values
    assert value.first is False
    assert value.metadata is decoder.tags["x"]
