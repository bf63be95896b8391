"""``plugin=`` must name a known plugin: a misspelt one is a 400 naming the known ones, while a
real plugin without data yet (a live run before its first image) is an empty answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from starlette.testclient import TestClient
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util

from boardd.config import ExperimentSpec
from tests.api.conftest import ALL, EXPERIMENT, WALL, assert_error, get_json, ingest, serve


def test_a_misspelt_plugin_is_refused_naming_the_known_ones(api: TestClient) -> None:
    for kind, plugin, known in [
        ("scalars", "scalar", "scalars"),
        ("scalars", "Scalars", "scalars"),
        ("scalars", "histograms", "scalars"),  # a real plugin, of another kind
        ("tensors", "histogram", "histograms"),
        ("tensors", "images", "text"),
        ("blob_sequences", "image", "images"),
    ]:
        for path in (f"/api/v1/{kind}", f"/api/v1/{kind}/list"):
            error = assert_error(api.get(path, params={"plugin": plugin}), 400)
            assert error["code"] == "bad_request"
            message = error["message"]
            assert f"plugin={plugin!r}" in message and "known:" in message, message
            assert known in message.partition("known:")[2], message


def test_a_plugin_of_tensorboard_without_data_is_an_empty_answer(api: TestClient) -> None:
    assert get_json(api, "/api/v1/tensors", plugin="pr_curves") == {}
    assert get_json(api, "/api/v1/tensors/list", plugin="hparams") == {}
    assert get_json(api, "/api/v1/blob_sequences/list", plugin="graphs") == {}
    assert get_json(api, "/api/v1/scalars", plugin="scalars", run="no-such-run") == {}


def test_a_plugin_the_store_has_is_known(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    writer = EventFileWriter(str(logdir / "run"))
    for step in range(3):
        event = event_pb2.Event(wall_time=WALL + step, step=step)
        event.summary.value.add(
            tag="thing",
            tensor=tensor_util.make_tensor_proto(np.arange(4.0) * step),
            metadata=summary_pb2.SummaryMetadata(
                plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="my_plugin"),
                data_class=summary_pb2.DATA_CLASS_TENSOR,
            ),
        )
        writer.add_event(event)
    writer.close()
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, ALL, experiment=EXPERIMENT)
    with serve(ExperimentSpec(EXPERIMENT, logdir, db)) as client:
        answer = get_json(client, "/api/v1/tensors", plugin="my_plugin")
        assert [p["step"] for p in answer["run"]["thing"]] == [0, 1, 2]
        error = assert_error(client.get("/api/v1/tensors", params={"plugin": "my_plugn"}), 400)
        assert "my_plugin" in error["message"].partition("known:")[2]
        # Another kind's list does not name it: its series are tensors.
        error = assert_error(client.get("/api/v1/scalars", params={"plugin": "my_plugn"}), 400)
        assert "my_plugin" not in error["message"]
