"""Oracle: our EventDecoder and TensorBoard's own accumulators agree on a generated logdir.

TensorBoard's plugin EventMultiplexer (one plugin EventAccumulator per run) applies its
data_compat and dataclass_compat migrations and exposes every series as tensors; the legacy
EventAccumulator exposes TF1 scalars, images and audio as they are on disk. Both keep every
datum here (size guidance 0) and never purge.

Exactness: steps, wall times, scalar values, image/audio/text bytes and tensor contents are
compared exactly. Histogram buckets are compared after rounding ours to float32, because
TensorBoard's Python data_compat builds them as float32 (we keep float64).
"""

from __future__ import annotations

import io
import struct
import wave
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator as legacy_accumulator
from tensorboard.backend.event_processing import plugin_event_accumulator, plugin_event_multiplexer
from tensorboard.compat.proto import event_pb2 as tb_event_pb2
from tensorboard.compat.proto import summary_pb2 as tb_summary_pb2
from tensorboard.compat.proto import tensor_pb2 as tb_tensor_pb2
from tensorboard.compat.proto import types_pb2 as tb_types_pb2
from tensorboard.summary import Writer
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter

from boardd.reader.decoded import BlobSequencePoint, DataClass, ScalarPoint, TensorPoint
from boardd.reader.events import DecodedValue, EventDecoder

pytestmark = pytest.mark.slow

KEEP_ALL = dict.fromkeys(
    [
        legacy_accumulator.COMPRESSED_HISTOGRAMS,
        legacy_accumulator.IMAGES,
        legacy_accumulator.AUDIO,
        legacy_accumulator.SCALARS,
        legacy_accumulator.HISTOGRAMS,
        legacy_accumulator.TENSORS,
    ],
    0,
)


def _records(path: Path) -> list[tuple[int, bytes]]:
    """(offset, payload) of each record: u64 length, u32 crc, payload, u32 crc."""
    data = path.read_bytes()
    out = []
    offset = 0
    while offset < len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        out.append((offset, data[offset + 12 : offset + 12 + length]))
        offset += 12 + length + 4
    return out


def _wav(seed: int) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(np.random.default_rng(seed).integers(-999, 999, 80, dtype="<i2").tobytes())
    return buf.getvalue()


def _make_logdir(root: Path) -> None:
    rng = np.random.default_rng(7)
    wall = 1_700_000_000.0
    # Root run ".": TF1-style summaries from tensorboardX, split over two files.
    for part, suffix in enumerate([".a", ".b"]):
        with SummaryWriter(str(root), filename_suffix=suffix) as w:
            for i in range(25):
                step = part * 25 + i
                t = wall + step * 0.37
                w.add_scalar("loss", float(rng.normal()), step, walltime=t)
                w.add_scalar("lr", 10.0 ** -(step % 5), step, walltime=t)
                if step % 5 == 0:
                    w.add_histogram("weights", rng.normal(size=500) * (step + 1), step, walltime=t)
                    w.add_histogram("spiky", np.array([0.0, 0.0, 1.0, 1e6]), step, walltime=t)
                if step % 10 == 0:
                    image = rng.integers(0, 255, (3, 6, 4 + step % 3), dtype=np.uint8)
                    w.add_image("sample", image, step, walltime=t)
                    w.add_text("notes", f"step **{step}**", step, walltime=t)
                    w.add_pr_curve(
                        "pr",
                        rng.integers(0, 2, 20),
                        rng.random(20),
                        step,
                        num_thresholds=7,
                        walltime=t,
                    )
    # Two runs and a nested one.
    for run, scale in [("train", 1.0), ("eval", 2.0)]:
        with SummaryWriter(str(root / run)) as w:
            for step in range(0, 60, 3):
                w.add_scalar("metrics/acc", scale * step / 60, step, walltime=wall + step)
                w.add_histogram("act", rng.random(100) * scale, step, walltime=wall + step)
    nested = Writer(str(root / "deep" / "er" / "run"))
    for step in range(40):
        nested.add_scalar("tensor_scalar", float(rng.random()) * 1e3, step, wall_time=wall + step)
    nested.close()
    # TF1 audio (tensorboardX's add_audio needs the soundfile package).
    audio_writer = EventFileWriter(str(root / "audio"))
    for step in range(3):
        event = tb_event_pb2.Event(wall_time=wall + step, step=step)
        value = event.summary.value.add(tag="clip")
        value.audio.encoded_audio_string = _wav(step)
        value.audio.sample_rate = 8000.0
        value.audio.content_type = "audio/wav"
        audio_writer.add_event(event)
    audio_writer.close()
    # hparams sessions, each with its metric.
    for trial, lr in [("t1", 0.1), ("t2", 0.01)]:
        with SummaryWriter(str(root / "hp")) as w:
            w.add_hparams({"lr": lr, "opt": "adam"}, {"hparam/acc": 1.0 - lr}, name=trial)


def _decode_logdir(root: Path) -> dict[str, dict[str, list[DecodedValue]]]:
    """run → tag → values, in file order; one decoder per run, files sorted by name."""
    files_by_run: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*tfevents*")):
        run = path.parent.relative_to(root).as_posix()  # "." for the root
        files_by_run.setdefault(run, []).append(path)
    runs: dict[str, dict[str, list[DecodedValue]]] = {}
    for run, paths in files_by_run.items():
        decoder = EventDecoder()
        tags: dict[str, list[DecodedValue]] = {}
        for path in sorted(paths):
            for offset, payload in _records(path):
                event = decoder.decode(payload, offset)
                assert event.data_loss == [], (run, event.data_loss)
                for value in event.values:
                    tags.setdefault(value.tag, []).append(value)
        runs[run] = tags
    return runs


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("logdir")
    _make_logdir(root)
    return root


@pytest.fixture(scope="module")
def ours(logdir: Path) -> dict[str, dict[str, list[DecodedValue]]]:
    return _decode_logdir(logdir)


@pytest.fixture(scope="module")
def multiplexer(logdir: Path) -> plugin_event_multiplexer.EventMultiplexer:
    mux = plugin_event_multiplexer.EventMultiplexer(
        size_guidance=plugin_event_accumulator.STORE_EVERYTHING_SIZE_GUIDANCE,
        purge_orphaned_data=False,
    )
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    return mux


def _check_point(value: DecodedValue, tensor: tb_tensor_pb2.TensorProto) -> None:
    point = value.point
    data_class = value.metadata.data_class
    if data_class is DataClass.SCALAR:
        assert isinstance(point, ScalarPoint)
        assert point.value == tensor_util.make_ndarray(tensor).item()
    elif data_class is DataClass.BLOB_SEQUENCE:
        assert isinstance(point, BlobSequencePoint)
        assert list(point.blobs) == list(tensor.string_val)
    else:
        assert isinstance(point, TensorPoint)
        assert point.dtype == tensor.dtype or value.metadata.plugin_name == "histograms"
        assert point.shape == tuple(d.size for d in tensor.tensor_shape.dim)
        if point.dtype == tb_types_pb2.DT_STRING:
            strings = tb_tensor_pb2.TensorProto.FromString(point.content)
            assert list(strings.string_val) == list(tensor.string_val)
            return
        theirs = tensor_util.make_ndarray(tensor)
        mine = np.frombuffer(point.content, dtype=theirs.dtype.newbyteorder("<"))
        if value.metadata.plugin_name == "histograms":
            # TensorBoard's data_compat builds float32 buckets; ours are float64.
            mine = np.frombuffer(point.content, dtype="<f8").astype(np.float32)
        np.testing.assert_array_equal(mine.reshape(point.shape), theirs)


def test_same_runs_tags_and_points_as_the_plugin_multiplexer(
    ours: dict[str, dict[str, list[DecodedValue]]],
    multiplexer: plugin_event_multiplexer.EventMultiplexer,
) -> None:
    their_runs = multiplexer.Runs()
    assert sorted(their_runs) == sorted(ours)
    assert {".", "train", "eval", "deep/er/run", "audio", "hp/t1", "hp/t2"} <= set(ours)
    compared = 0
    for run, tags in ours.items():
        their_tags = their_runs[run][plugin_event_accumulator.TENSORS]
        assert sorted(their_tags) == sorted(tags), run
        for tag, decoded in tags.items():
            theirs = multiplexer.Tensors(run, tag)
            assert [(v.point.step, v.point.wall_time) for v in decoded] == [
                (t.step, t.wall_time) for t in theirs
            ], (run, tag)
            metadata = multiplexer.SummaryMetadata(run, tag)
            established = decoded[0].metadata
            assert established.plugin_name == metadata.plugin_data.plugin_name, (run, tag)
            assert established.plugin_content == metadata.plugin_data.content, (run, tag)
            assert established.data_class == metadata.data_class, (run, tag)
            assert established.display_name == metadata.display_name, (run, tag)
            assert established.description == metadata.summary_description, (run, tag)
            for value, tensor_event in zip(decoded, theirs, strict=True):
                _check_point(value, tensor_event.tensor_proto)
                compared += 1
    assert compared > 250


def test_legacy_scalars_images_and_audio_match_the_legacy_accumulator(
    logdir: Path, ours: dict[str, dict[str, list[DecodedValue]]]
) -> None:
    root = legacy_accumulator.EventAccumulator(
        str(logdir), size_guidance=KEEP_ALL, purge_orphaned_data=False
    ).Reload()
    for tag in ("loss", "lr"):
        assert [(v.point.step, v.point.wall_time, v.point.value) for v in ours["."][tag]] == [
            (s.step, s.wall_time, s.value) for s in root.Scalars(tag)
        ]
    images = root.Images("sample")
    assert len(images) == 5
    for value, image in zip(ours["."]["sample"], images, strict=True):
        assert isinstance(value.point, BlobSequencePoint)
        assert (value.point.step, value.point.wall_time) == (image.step, image.wall_time)
        assert value.point.blobs == (
            str(image.width).encode(),
            str(image.height).encode(),
            image.encoded_image_string,
        )
    audio = legacy_accumulator.EventAccumulator(
        str(logdir / "audio"), size_guidance=KEEP_ALL, purge_orphaned_data=False
    ).Reload()
    assert [v.point.blobs for v in ours["audio"]["clip"]] == [
        (a.encoded_audio_string,) for a in audio.Audio("clip")
    ]


def test_histograms_keep_their_first_and_last_edges(
    logdir: Path, ours: dict[str, dict[str, list[DecodedValue]]]
) -> None:
    root = legacy_accumulator.EventAccumulator(
        str(logdir), size_guidance=KEEP_ALL, purge_orphaned_data=False
    ).Reload()
    for tag in ("weights", "spiky"):
        raw = root.Histograms(tag)
        assert len(raw) == 10
        for value, histogram in zip(ours["."][tag], raw, strict=True):
            point = value.point
            assert isinstance(point, TensorPoint)
            rows = np.frombuffer(point.content, dtype="<f8").reshape(point.shape)
            # Exact in float64, where TensorBoard's float32 would round.
            assert rows[0, 0] == histogram.histogram_value.min
            assert rows[-1, 1] == histogram.histogram_value.max
            assert rows[:, 2].sum() == histogram.histogram_value.num


def test_hand_built_values_agree_too(tmp_path: Path) -> None:
    # A TF2-style image tensor without data class and a TF1 value on one run.
    writer = EventFileWriter(str(tmp_path))
    for step in range(3):
        event = tb_event_pb2.Event(wall_time=50.0 + step, step=step)
        image = event.summary.value.add(tag="img")
        image.metadata.plugin_data.plugin_name = "images"
        image.tensor.dtype = 7
        image.tensor.tensor_shape.dim.add(size=3)
        image.tensor.string_val.extend([b"2", b"1", bytes([step]) * 10])
        event.summary.value.add(tag="simple", simple_value=step / 3)
        writer.add_event(event)
    writer.add_event(
        tb_event_pb2.Event(
            wall_time=60.0,
            step=9,
            summary=tb_summary_pb2.Summary(
                value=[tb_summary_pb2.Summary.Value(tag="simple", simple_value=-0.0)]
            ),
        )
    )
    writer.close()
    ours = _decode_logdir(tmp_path)["."]
    accumulator = plugin_event_accumulator.EventAccumulator(
        str(tmp_path),
        size_guidance=plugin_event_accumulator.STORE_EVERYTHING_SIZE_GUIDANCE,
        purge_orphaned_data=False,
    )
    accumulator.Reload()
    for tag in ("img", "simple"):
        theirs = accumulator.Tensors(tag)
        assert len(theirs) == len(ours[tag])
        for value, tensor_event in zip(ours[tag], theirs, strict=True):
            assert (value.point.step, value.point.wall_time) == (
                tensor_event.step,
                tensor_event.wall_time,
            )
            _check_point(value, tensor_event.tensor_proto)
        assert ours[tag][0].metadata.data_class == accumulator.SummaryMetadata(tag).data_class
