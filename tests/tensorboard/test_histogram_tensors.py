"""Histograms written as tensors (not TF1 ``HistogramProto``\\ s): float32, float16 and float64
``[k, 3]`` tensors of (left edge, right edge, count), written with TensorBoard's own writer,
against the real TensorBoard on the same logdir.

TensorBoard answers such a tensor's values as written, each widened to a double without any
rounding in between (its ``make_ndarray(...).tolist()``), and compresses those doubles for the
distributions. boardd must answer the same numbers bit for bit on its TensorBoard routes
(histograms, distributions, Time Series) and on its own API. (A TF1 histogram, tensorboardX's
``add_histogram``, is the documented exception: test_histograms.py.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2
from tensorboard.plugins.histogram import metadata as histogram_metadata
from tensorboard.plugins.histogram import summary_v2 as histogram_summary
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util

from tests.api.conftest import WALL
from tests.tensorboard.conftest import Pair, pair

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

HISTOGRAMS = "/data/plugin/histograms/histograms"
DISTRIBUTIONS = "/data/plugin/distributions/distributions"
SERIES = "/data/plugin/timeseries/timeSeries"
XSRF = {"X-XSRF-Protected": "1"}
RUN = "tensors"
STEPS = 4
#: Tag → the buckets written at each step (before the writer's dtype conversion).
Written = dict[str, list[np.ndarray[Any, Any]]]


def _buckets(data: np.ndarray[Any, Any], bins: int) -> np.ndarray[Any, Any]:
    counts, edges = np.histogram(data, bins=bins)
    return np.stack([edges[:-1], edges[1:], counts], axis=1)


def _float_val_tensor(buckets: np.ndarray[Any, Any]) -> tensor_pb2.TensorProto:
    """A float32 tensor in ``float_val`` (a repeated protobuf float) rather than
    ``tensor_content``: another writer's encoding of the same values."""
    proto = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_FLOAT, float_val=buckets.astype(np.float32).ravel().tolist()
    )
    for size in buckets.shape:
        proto.tensor_shape.dim.add(size=size)
    return proto


def write_tensor_histograms(root: Path) -> tuple[Path, Written]:
    """Run ``tensors``: histogram tensors of several dtypes and encodings at each step, edges
    from normal samples (no short decimal expansion), one with infinite outer edges."""
    logdir = root / "logs"
    rng = np.random.default_rng(11)
    written: Written = {}
    writer = EventFileWriter(str(logdir / RUN))
    metadata = histogram_metadata.create_summary_metadata("h", "")
    for step in range(STEPS):
        event = event_pb2.Event(wall_time=WALL + step, step=step)
        data = rng.normal(size=500) * 1.7 + step / 3
        buckets = _buckets(data, 9)
        unbounded = buckets.copy()
        unbounded[0, 0], unbounded[-1, 1] = -np.inf, np.inf
        tensors = {
            "f32": tensor_util.make_tensor_proto(buckets, dtype=np.float32),
            "f32_float_val": _float_val_tensor(buckets * 1e-3),
            "f32_unbounded": tensor_util.make_tensor_proto(unbounded, dtype=np.float32),
            "f16": tensor_util.make_tensor_proto(buckets, dtype=np.float16),
        }
        values = {
            "f32": buckets,
            "f32_float_val": buckets * 1e-3,
            "f32_unbounded": unbounded,
            "f16": buckets,
        }
        for tag, tensor in tensors.items():
            event.summary.value.add(tag=tag, tensor=tensor, metadata=metadata)
            written.setdefault(tag, []).append(values[tag])
        writer.add_event(event)
        # TensorBoard's own histogram summary (float64 buckets, its own bucketing).
        summary: summary_pb2.Summary = histogram_summary.histogram_pb("f64", data, buckets=7)
        writer.add_event(event_pb2.Event(wall_time=WALL + step, step=step, summary=summary))
    writer.close()
    return logdir, written


@pytest.fixture(scope="module")
def tensors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Pair, Written]]:
    root = tmp_path_factory.mktemp("histogram-tensors")
    logdir, written = write_tensor_histograms(root)
    with pair(root, logdir, None, {RUN}) as p:
        yield p, written


def _tags(p: Pair) -> list[str]:
    tags = p.tb.get("/data/plugin/histograms/tags").json()
    assert set(tags) == {RUN}
    return sorted(tags[RUN])


def test_histograms_are_the_written_values(tensors: tuple[Pair, Written]) -> None:
    p, written = tensors
    assert _tags(p) == ["f16", "f32", "f32_float_val", "f32_unbounded", "f64"]
    for tag in _tags(p):
        tb, ours = p.both("GET", HISTOGRAMS, params={"run": RUN, "tag": tag})
        assert (tb.status_code, ours.status_code) == (200, 200), ours.text
        # The same JSON text, not only equal numbers: the same doubles, printed the same.
        assert ours.json() == tb.json(), tag
        assert len(ours.json()) == STEPS
    # The numbers are the file's, widened exactly: float32(edge) as a double.
    for tag, dtype in (("f32", np.float32), ("f32_float_val", np.float32), ("f16", np.float16)):
        params = {"run": RUN, "tag": tag}
        ours = httpx.get(p.boardd.url + HISTOGRAMS, params=params, timeout=30).json()
        for (_, step, buckets), values in zip(ours, written[tag], strict=True):
            expected = values.astype(dtype).astype(np.float64).tolist()
            assert buckets == expected, (tag, step)
            assert any(b != v for b, v in zip(buckets, values.tolist(), strict=True))


def test_distributions_compress_the_written_values(tensors: tuple[Pair, Written]) -> None:
    p, _ = tensors
    for tag in _tags(p):
        tb, ours = p.both("GET", DISTRIBUTIONS, params={"run": RUN, "tag": tag})
        assert (tb.status_code, ours.status_code) == (200, 200), ours.text
        assert ours.json() == tb.json(), tag


def test_time_series_bins_are_the_written_values(tensors: tuple[Pair, Written]) -> None:
    p, _ = tensors
    requests = [{"plugin": "histograms", "tag": tag, "run": RUN} for tag in _tags(p)]
    files = {"requests": (None, json.dumps(requests))}
    tb, ours = p.both("POST", SERIES, files=files, headers=XSRF)
    assert (tb.status_code, ours.status_code) == (200, 200), ours.text
    assert ours.json() == tb.json()


def test_boardd_api_answers_the_written_values(tensors: tuple[Pair, Written]) -> None:
    """``/api/v1/tensors`` (the dashboard's histograms and distributions read it): each stored
    tensor's values, the same doubles TensorBoard's histograms route answers."""
    p, _ = tensors
    for tag in _tags(p):
        tb = p.tb.get(HISTOGRAMS, params={"run": RUN, "tag": tag}).json()
        ours = httpx.get(
            p.boardd.url + "/api/v1/tensors",
            params={"experiment": "logs", "plugin": "histograms", "run": RUN, "tag": tag},
            timeout=30,
        )
        assert ours.status_code == 200, ours.text
        points = ours.json()[RUN][tag]
        assert [pt["values"] for pt in points] == [buckets for _, _, buckets in tb], tag
        assert {pt["dtype"] for pt in points} == {
            "f16": {"DT_HALF"},
            "f64": {"DT_DOUBLE"},
        }.get(tag, {"DT_FLOAT"})
