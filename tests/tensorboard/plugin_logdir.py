"""A second logdir for the plugin routes' tests: series longer than TensorBoard's default
sampling of each plugin (so that it matters), and text tensors of every rank."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter

from tests.api.conftest import WALL
from tests.tensorboard.conftest import Pair, pair

#: Steps of run "long": more than every plugin route's default (histograms 51, images and audio
#: 10, text and PR curves 100).
LONG_STEPS = 130
#: Text tensors of run "shapes", by tag: each rank TensorBoard renders differently.
TEXTS: dict[str, list[object] | str] = {
    "rank0": "# Title\n\n*x* <b>bold</b> <script>alert(1)</script>",
    "rank1": ["one", "**two**", "<i>three</i>"],
    "rank2": [["a", "b"], ["`c`", "d|e"], ["", "\x00nul"]],
    "rank3": [[["x", "y"], ["z", "w"]], [["p", "q"], ["r", "s"]]],
    "empty": np.zeros((0,), dtype=object).tolist(),
    "wide": [[]],
}
#: Text of run "not_utf8" (tag "t"): bytes that are not UTF-8 around Markdown.
NOT_UTF8 = b"**bold** \xff\xfe then text"
RUNS = {"long", "shapes", "not_utf8"}


def write_plugin_logdir(root: Path) -> Path:
    logdir = root / "plugin_logs"
    rng = np.random.default_rng(3)
    with SummaryWriter(str(logdir / "long")) as w:
        for step in range(LONG_STEPS):
            t = WALL + step
            w.add_histogram("h", rng.normal(size=40) + step, step, walltime=t)
            w.add_image("img", rng.integers(0, 256, (3, 3, 2), dtype=np.uint8), step, walltime=t)
            w.add_text("t", f"text {step}", step, walltime=t)
            labels = rng.integers(0, 2, 20)
            w.add_pr_curve("p", labels, rng.random(20), step, num_thresholds=7, walltime=t)
    shapes = EventFileWriter(str(logdir / "shapes"))
    for step in range(3):
        event = event_pb2.Event(wall_time=WALL + step, step=step)
        for tag, value in TEXTS.items():
            array = np.array(value, dtype=object)
            if array.size == 0:
                array = np.zeros(np.shape(value), dtype=object)
            event.summary.value.add(
                tag=tag,
                tensor=tensor_util.make_tensor_proto(array, dtype="string", shape=array.shape),
                metadata=text_metadata.create_summary_metadata(
                    display_name=tag, description=f"the {tag} text"
                ),
            )
        shapes.add_event(event)
    shapes.close()
    not_utf8 = EventFileWriter(str(logdir / "not_utf8"))
    for shape in ((), (2,)):
        array = np.full(shape, NOT_UTF8, dtype=object)
        event = event_pb2.Event(wall_time=WALL + len(shape), step=len(shape))
        event.summary.value.add(
            tag="t",
            tensor=tensor_util.make_tensor_proto(array, dtype="string", shape=shape),
            metadata=text_metadata.create_summary_metadata(display_name="t", description=""),
        )
        not_utf8.add_event(event)
    not_utf8.close()
    return logdir


@contextlib.contextmanager
def plugin_pair(
    factory: pytest.TempPathFactory,
    sampling: Mapping[str, int | None] | None,
    *,
    flag: str | None = None,
) -> Iterator[Pair]:
    """TensorBoard and boardd on a fresh plugin logdir with this sampling (or ``flag``, a
    ``--samples_per_plugin`` value given to both)."""
    root = factory.mktemp("plugin_logdir")
    with pair(root, write_plugin_logdir(root), sampling, RUNS, flag=flag) as p:
        yield p
