"""Scalars written as tensors of other dtypes than float32, as ``tf.summary.write`` writes a
float64 or a bfloat16 value: TensorBoard (``--load_fast=false``) answers the float64 one and
fails (500) on every request naming the bfloat16 one, having no bfloat16 without TensorFlow;
boardd answers both (docs/tensorboard.md, the table of differences)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from tests.conftest import WALL
from tests.tensorboard.conftest import KEEP_ALL, Pair, pair

#: bfloat16 bit patterns (the upper half of a float32's) and the values they are.
BFLOAT16 = {0x3E80: 0.25, 0x3FE0: 1.75, 0x4050: 3.25, 0x4098: 4.75}


def scalar(tag: str, tensor: tensor_pb2.TensorProto) -> summary_pb2.Summary.Value:
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    value.metadata.plugin_data.plugin_name = "scalars"
    return value


@pytest.fixture(scope="module")
def dtypes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("dtypes")
    logdir = root / "logs"
    writer = EventFileWriter(str(logdir / "edge"))
    for step, (bits, _) in enumerate(BFLOAT16.items()):
        event = event_pb2.Event(wall_time=WALL + step, step=step)
        bf16 = tensor_pb2.TensorProto(dtype=types_pb2.DT_BFLOAT16, half_val=[bits])
        bf16.tensor_shape.SetInParent()
        f64 = tensor_pb2.TensorProto(dtype=types_pb2.DT_DOUBLE, double_val=[step + 0.1])
        f64.tensor_shape.SetInParent()
        event.summary.value.extend([scalar("bf16", bf16), scalar("f64", f64)])
        writer.add_event(event)
    writer.close()
    with pair(root, logdir, KEEP_ALL, {"edge"}) as p:
        yield p


def test_both_tags_are_listed(dtypes: Pair) -> None:
    tb, ours = dtypes.both("GET", "/data/plugin/scalars/tags")
    assert tb.status_code == ours.status_code == 200
    assert ours.json() == tb.json()
    assert set(ours.json()["edge"]) == {"bf16", "f64"}


def test_a_float64_scalar_as_tensorboard(dtypes: Pair) -> None:
    params = {"run": "edge", "tag": "f64"}
    tb, ours = dtypes.both("GET", "/data/plugin/scalars/scalars", params=params)
    assert tb.status_code == ours.status_code == 200
    assert ours.json() == tb.json()


def test_a_bfloat16_scalar_is_answered(dtypes: Pair) -> None:
    params = {"run": "edge", "tag": "bf16"}
    tb, ours = dtypes.both("GET", "/data/plugin/scalars/scalars", params=params)
    assert tb.status_code == 500
    assert ours.status_code == 200
    assert [(step, value) for _, step, value in ours.json()] == list(enumerate(BFLOAT16.values()))
