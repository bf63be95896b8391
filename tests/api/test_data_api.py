"""The generic data API end to end: a real logdir, a real store, TensorBoard as the oracle.

Scalars, images and audio are compared with TensorBoard's legacy EventAccumulator; histograms,
text and the multi-image series with its plugin EventMultiplexer (which applies data_compat).
Every filter, format, the point bound, ETag/304, gzip and the generation-keyed cache are
exercised over HTTP through Starlette's TestClient.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient
from tensorboard.backend.event_processing import event_accumulator as legacy
from tensorboard.backend.event_processing import plugin_event_accumulator, plugin_event_multiplexer
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter

from boardd.config import ExperimentSpec
from boardd.data import series as data_series
from boardd.data.downsample import downsample_indices
from tests.api.conftest import (
    ALL,
    AUDIO_STEPS,
    EXPERIMENT,
    IMAGES_PER_STEP,
    MULTI_STEPS,
    NON_FINITE,
    RUNS,
    TRAIN_STEPS,
    assert_error,
    get_json,
    ingest,
    serve,
    write_train,
)

KEEP_ALL = dict.fromkeys(
    [
        legacy.COMPRESSED_HISTOGRAMS,
        legacy.IMAGES,
        legacy.AUDIO,
        legacy.SCALARS,
        legacy.HISTOGRAMS,
        legacy.TENSORS,
    ],
    0,
)
NON_FINITE_TEXT = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


# -- oracles -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def accumulators(logdir: Path) -> dict[str, legacy.EventAccumulator]:
    """TensorBoard's legacy accumulator of each run, everything kept, nothing purged."""
    out = {}
    for run in RUNS:
        acc = legacy.EventAccumulator(
            str(logdir / run), size_guidance=KEEP_ALL, purge_orphaned_data=False
        )
        acc.Reload()
        out[run] = acc
    return out


@pytest.fixture(scope="module")
def multiplexer(logdir: Path) -> plugin_event_multiplexer.EventMultiplexer:
    """TensorBoard's plugin multiplexer (data_compat applied: every series is tensors)."""
    mux = plugin_event_multiplexer.EventMultiplexer(
        size_guidance=plugin_event_accumulator.STORE_EVERYTHING_SIZE_GUIDANCE,
        purge_orphaned_data=False,
    )
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    return mux


def as_float(value: float | str) -> float:
    """A JSON float back from TensorBoard's spelling of non-finite values."""
    if isinstance(value, str):
        return NON_FINITE_TEXT[value]
    return float(value)


def points(series: list[dict[str, Any]]) -> list[tuple[int, float, float]]:
    """(step, wall_time, value) of a JSON scalar series."""
    return [(p["step"], p["wall_time"], as_float(p["value"])) for p in series]


def assert_same_points(got: list[tuple[int, float, float]], want: list[tuple[int, float, float]]):
    """Exact equality, NaN equal to NaN."""
    assert [p[:2] for p in got] == [p[:2] for p in want]
    np.testing.assert_array_equal([p[2] for p in got], [p[2] for p in want])


def steps_of(answer: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[tuple[str, str], list]:
    """(run, tag) → steps of a JSON values answer."""
    return {
        (run, tag): [p["step"] for p in series]
        for run, tags in answer.items()
        for tag, series in tags.items()
    }


def blob(client: TestClient, key: str) -> tuple[bytes, str]:
    """A blob's bytes and content type."""
    response = client.get(f"/api/v1/blob/{key}")
    assert response.status_code == 200, response.text
    assert response.headers["content-length"] == str(len(response.content))
    return response.content, response.headers["content-type"]


# -- listings ------------------------------------------------------------------------------


def test_experiments_runs_plugins(api: TestClient, logdir: Path) -> None:
    (experiment,) = get_json(api, "/api/v1/experiments")
    assert experiment["id"] == experiment["name"] == EXPERIMENT
    assert experiment["logdir"] == str(logdir.resolve())
    runs = get_json(api, "/api/v1/runs")
    assert [r["name"] for r in runs] == RUNS
    assert all(isinstance(r["start_time"], float) for r in runs)
    assert get_json(api, "/api/v1/plugins") == {
        "audio": ["blob_sequence"],
        "histograms": ["tensor"],
        "images": ["blob_sequence"],
        "scalars": ["scalar"],
        "text": ["tensor"],
    }
    # experiment= names the default explicitly.
    assert get_json(api, "/api/v1/runs", experiment=EXPERIMENT) == runs


def test_scalar_list_matches_tensorboard(
    api: TestClient, accumulators: dict[str, legacy.EventAccumulator]
) -> None:
    listed = get_json(api, "/api/v1/scalars/list", plugin="scalars")
    want = {run: sorted(acc.Tags()["scalars"]) for run, acc in accumulators.items()}
    assert {run: sorted(tags) for run, tags in listed.items()} == want
    for run, tags in listed.items():
        for tag, meta in tags.items():
            last = accumulators[run].Scalars(tag)[-1]
            assert meta == {
                "max_step": last.step,
                "max_wall_time": last.wall_time,
                "plugin_name": "scalars",
                "plugin_content": "",
                "display_name": tag,
                "description": "",
            }


def test_blob_sequence_list_has_max_length(api: TestClient) -> None:
    listed = get_json(api, "/api/v1/blob_sequences/list", plugin="images")
    assert listed["train"]["multi"]["max_length"] == 2 + IMAGES_PER_STEP
    assert listed["train"]["multi"]["description"] == "three per step"
    assert listed["train"]["sample"]["max_length"] == 3  # width, height, PNG
    assert listed["train"]["multi"]["max_step"] == MULTI_STEPS[-1]
    audio = get_json(api, "/api/v1/blob_sequences/list", plugin="audio")
    assert audio == {"train": {"speech": audio["train"]["speech"]}}
    assert audio["train"]["speech"]["max_length"] == 1
    assert audio["train"]["speech"]["max_step"] == AUDIO_STEPS[-1]


# -- values against the oracle -------------------------------------------------------------


def test_scalars_match_tensorboard_in_every_format(
    api: TestClient, accumulators: dict[str, legacy.EventAccumulator]
) -> None:
    answer = get_json(api, "/api/v1/scalars", plugin="scalars")
    columns = get_json(api, "/api/v1/scalars", plugin="scalars", format="columns")
    text = api.get("/api/v1/scalars", params={"plugin": "scalars", "format": "csv"})
    assert text.headers["content-type"] == "text/csv; charset=utf-8"
    rows = list(csv.reader(io.StringIO(text.text)))
    assert rows[0] == ["run", "tag", "step", "wall_time", "value"]
    from_csv: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
    for run, tag, step, wall, value in rows[1:]:
        from_csv.setdefault((run, tag), []).append((int(step), float(wall), float(value)))
    compared = 0
    for run, acc in accumulators.items():
        assert sorted(answer[run]) == sorted(acc.Tags()["scalars"])
        for tag in acc.Tags()["scalars"]:
            want = [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]
            assert_same_points(points(answer[run][tag]), want)
            col = columns[run][tag]
            assert_same_points(
                list(zip(col["step"], col["wall_time"], map(as_float, col["value"]), strict=True)),
                want,
            )
            assert_same_points(from_csv[(run, tag)], want)
            compared += len(want)
    assert compared > 2 * TRAIN_STEPS
    assert sum(len(v) for v in from_csv.values()) == compared


def test_non_finite_values_are_strings(api: TestClient) -> None:
    params = {"plugin": "scalars", "run": "train", "tag": "loss", "step_min": 13, "step_max": 19}
    for fmt in ("json", "columns"):
        raw = api.get("/api/v1/scalars", params={**params, "format": fmt}).text

        def refuse(constant: str) -> Any:
            raise AssertionError(f"bare {constant} in the JSON")

        body = json.loads(raw, parse_constant=refuse)
        series = body["train"]["loss"]
        values = (
            dict(zip(series["step"], series["value"], strict=True))
            if fmt == "columns"
            else {p["step"]: p["value"] for p in series}
        )
        assert (values[13], values[17], values[19]) == ("NaN", "Infinity", "-Infinity")
        assert all(isinstance(values[s], float) for s in values if s not in NON_FINITE)
    text = api.get("/api/v1/scalars", params={**params, "format": "csv"}).text
    by_step = {int(r[2]): r[4] for r in list(csv.reader(io.StringIO(text)))[1:]}
    assert (by_step[13], by_step[17], by_step[19]) == ("NaN", "Infinity", "-Infinity")


def test_histograms_match_tensorboard(
    api: TestClient, multiplexer: plugin_event_multiplexer.EventMultiplexer
) -> None:
    answer = get_json(api, "/api/v1/tensors", plugin="histograms")
    assert sorted(answer) == ["eval", "train"]
    for run, tags in answer.items():
        assert list(tags) == ["weights"]
        theirs = multiplexer.Tensors(run, "weights")
        assert [p["step"] for p in tags["weights"]] == [e.step for e in theirs]
        for ours, event in zip(tags["weights"], theirs, strict=True):
            assert ours["wall_time"] == event.wall_time
            assert ours["dtype"] == "DT_DOUBLE"
            want = tensor_util.make_ndarray(event.tensor_proto)
            assert ours["shape"] == list(want.shape) and want.shape[1] == 3
            # TensorBoard's Python data_compat builds float32 buckets; ours are float64.
            np.testing.assert_array_equal(np.array(ours["values"]).astype(np.float32), want)


def test_text_matches_tensorboard(
    api: TestClient, multiplexer: plugin_event_multiplexer.EventMultiplexer
) -> None:
    answer = get_json(api, "/api/v1/tensors", plugin="text", run="train")
    (tag,) = answer["train"]
    theirs = multiplexer.Tensors("train", tag)
    assert len(answer["train"][tag]) == len(theirs) == len(range(0, TRAIN_STEPS, 25))
    for ours, event in zip(answer["train"][tag], theirs, strict=True):
        assert (ours["step"], ours["wall_time"]) == (event.step, event.wall_time)
        assert ours["dtype"] == "DT_STRING"
        want = tensor_util.make_ndarray(event.tensor_proto)
        assert ours["shape"] == list(want.shape)
        assert ours["values"] == [s.decode("utf-8") for s in want.ravel()]
    assert answer["train"][tag][1]["values"] == ["step **25** ✓"]


def test_images_match_tensorboard(
    api: TestClient, accumulators: dict[str, legacy.EventAccumulator]
) -> None:
    answer = get_json(api, "/api/v1/blob_sequences", plugin="images", tag="sample")
    assert sorted(answer) == ["nested/deep/run", "train"]
    for run, tags in answer.items():
        theirs = accumulators[run].Images("sample")
        assert [(p["step"], p["wall_time"]) for p in tags["sample"]] == [
            (e.step, e.wall_time) for e in theirs
        ]
        for ours, event in zip(tags["sample"], theirs, strict=True):
            width, height, image = ours["blobs"]
            assert blob(api, width) == (str(event.width).encode(), "application/octet-stream")
            assert blob(api, height) == (str(event.height).encode(), "application/octet-stream")
            assert blob(api, image) == (event.encoded_image_string, "image/png")


def test_several_images_per_step_match_tensorboard(
    api: TestClient, multiplexer: plugin_event_multiplexer.EventMultiplexer
) -> None:
    answer = get_json(api, "/api/v1/blob_sequences", plugin="images", run="train", tag="multi")
    series = answer["train"]["multi"]
    theirs = multiplexer.Tensors("train", "multi")
    assert [p["step"] for p in series] == [e.step for e in theirs] == list(MULTI_STEPS)
    for ours, event in zip(series, theirs, strict=True):
        assert ours["wall_time"] == event.wall_time
        assert len(ours["blobs"]) == 2 + IMAGES_PER_STEP
        got = [blob(api, key)[0] for key in ours["blobs"]]
        assert got == list(event.tensor_proto.string_val)
        assert all(blob(api, key)[1] == "image/png" for key in ours["blobs"][2:])


def test_audio_matches_tensorboard(
    api: TestClient, accumulators: dict[str, legacy.EventAccumulator]
) -> None:
    answer = get_json(api, "/api/v1/blob_sequences", plugin="audio")
    theirs = accumulators["train"].Audio("speech")
    series = answer["train"]["speech"]
    assert [p["step"] for p in series] == [e.step for e in theirs] == list(AUDIO_STEPS)
    for ours, event in zip(series, theirs, strict=True):
        (key,) = ours["blobs"]
        assert blob(api, key) == (event.encoded_audio_string, "audio/wav")


def test_blob_answer_headers(api: TestClient) -> None:
    answer = get_json(api, "/api/v1/blob_sequences", plugin="audio", latest=1)
    (key,) = answer["train"]["speech"][0]["blobs"]
    response = api.get(f"/api/v1/blob/{key}")
    assert response.headers["cache-control"] == "private, max-age=31536000"
    assert response.headers["content-type"] == "audio/wav"
    assert response.content[:4] == b"RIFF"


# -- filters -------------------------------------------------------------------------------


def test_runs_and_tags_filter_as_a_cross_product(api: TestClient) -> None:
    def read(**params: Any) -> dict[str, list[str]]:
        answer = get_json(api, "/api/v1/scalars", plugin="scalars", **params)
        listed = get_json(api, "/api/v1/scalars/list", plugin="scalars", **params)
        shape = {run: sorted(tags) for run, tags in answer.items()}
        assert {run: sorted(tags) for run, tags in listed.items()} == shape
        return shape

    assert read(run=["train", "eval"], tag=["loss", "lr"]) == {
        "eval": ["loss"],
        "train": ["loss", "lr"],
    }
    assert read(run="nested/deep/run") == {"nested/deep/run": ["loss"]}
    assert read(tag="loss") == {"eval": ["loss"], "nested/deep/run": ["loss"], "train": ["loss"]}
    assert read(run=".") == {".": ["root_metric"]}
    # Names that match nothing are left out, never an error.
    assert read(run=["train", "absent"], tag=["acc", "absent"]) == {"train": ["acc"]}
    assert read(run="absent") == {}
    assert read(tag="absent") == {}
    # Another plugin's tags are not scalars of this plugin.
    assert read(tag="weights") == {}
    # Repeating a name changes nothing.
    assert read(run=["eval", "eval"], tag="acc") == {"eval": ["acc"]}


def test_the_scalars_routes_read_the_scalars_plugin_by_default(api: TestClient) -> None:
    for path in ("/api/v1/scalars", "/api/v1/scalars/list"):
        named = get_json(api, path, plugin="scalars", run="train")
        assert named and get_json(api, path, run="train") == named, path
        # Another plugin is still asked for by name; an empty one is no plugin.
        error = assert_error(api.get(path, params={"plugin": ""}), 400)
        assert "plugin=''" in error["message"], error
    # The routes of other kinds of data serve many plugins: they keep asking for one.
    for path in ("/api/v1/tensors", "/api/v1/blob_sequences/list"):
        error = assert_error(api.get(path), 400)
        assert "plugin= is required" in error["message"], (path, error)
    # As the OpenAPI document says.
    paths = get_json(api, "/api/v1/openapi.json")["paths"]
    for path in ("/api/v1/scalars", "/api/v1/scalars/list", "/api/v1/tensors"):
        (plugin,) = [p for p in paths[path]["get"]["parameters"] if p["name"] == "plugin"]
        scalars = path.startswith("/api/v1/scalars")
        assert plugin["required"] is not scalars, path
        assert plugin["schema"].get("default") == ("scalars" if scalars else None), path


def test_step_range_is_inclusive(api: TestClient) -> None:
    def steps(kind: str, plugin: str, **params: Any) -> list[int]:
        answer = get_json(api, f"/api/v1/{kind}", plugin=plugin, run="train", **params)
        (tag_steps,) = steps_of(answer).values()
        return tag_steps

    assert steps("scalars", "scalars", tag="acc", step_min=10, step_max=20) == list(range(10, 21))
    assert steps("scalars", "scalars", tag="lr", step_min=10, step_max=20) == [12, 15, 18]
    assert steps("scalars", "scalars", tag="acc", step_min=295) == list(range(295, TRAIN_STEPS))
    assert steps("scalars", "scalars", tag="acc", step_max=3) == [0, 1, 2, 3]
    assert steps("scalars", "scalars", tag="acc", step_min=7, step_max=7) == [7]
    assert steps("scalars", "scalars", tag="acc", step_min=10**6) == []
    assert steps("scalars", "scalars", tag="acc", step_max=-1) == []
    assert steps("tensors", "histograms", step_min=10, step_max=30) == [10, 20, 30]
    assert steps("blob_sequences", "images", tag="multi", step_min=40, step_max=120) == [
        40,
        80,
        120,
    ]


def test_latest(api: TestClient) -> None:
    def steps(kind: str, plugin: str, **params: Any) -> list[int]:
        answer = get_json(api, f"/api/v1/{kind}", plugin=plugin, run="train", **params)
        (tag_steps,) = steps_of(answer).values()
        return tag_steps

    assert steps("scalars", "scalars", tag="acc", latest=5) == list(range(295, 300))
    assert steps("scalars", "scalars", tag="acc", latest=1) == [299]
    assert steps("scalars", "scalars", tag="lr", latest=10**9) == list(range(0, TRAIN_STEPS, 3))
    # The last k of the step range.
    assert steps("scalars", "scalars", tag="acc", latest=3, step_max=100) == [98, 99, 100]
    assert steps("tensors", "histograms", latest=2) == [280, 290]
    assert steps("blob_sequences", "images", tag="multi", latest=2) == list(MULTI_STEPS)[-2:]
    # Values come along with their steps.
    answer = get_json(api, "/api/v1/scalars", plugin="scalars", run="train", tag="acc", latest=2)
    assert [p["value"] for p in answer["train"]["acc"]] == pytest.approx([298 / 300, 299 / 300])


@pytest.mark.parametrize("store", ["all", "default", "small"])
def test_downsample_properties(store: str, request: pytest.FixtureRequest) -> None:
    spec: ExperimentSpec = request.getfixturevalue(f"spec_{store}")
    with serve(spec) as client:
        full = {
            kind: get_json(client, f"/api/v1/{kind}", plugin=plugin)
            for kind, plugin in [
                ("scalars", "scalars"),
                ("tensors", "histograms"),
                ("blob_sequences", "images"),
            ]
        }
        for k in (1, 2, 5, 17, 64, 1000):
            for kind, plugin in [
                ("scalars", "scalars"),
                ("tensors", "histograms"),
                ("blob_sequences", "images"),
            ]:
                answer = get_json(client, f"/api/v1/{kind}", plugin=plugin, downsample=k)
                assert steps_of(answer).keys() == steps_of(full[kind]).keys()
                for run, tags in answer.items():
                    for tag, series in tags.items():
                        complete = full[kind][run][tag]
                        assert len(series) == min(k, len(complete))
                        # The last point is always kept, and the first one when k > 1 (a
                        # chart starts where the series starts); the points are the series' own.
                        assert series[-1] == complete[-1]
                        if k > 1:
                            assert series[0] == complete[0], (kind, run, tag, k)
                        assert all(p in complete for p in series)
                        assert [p["step"] for p in series] == sorted({p["step"] for p in series})
            scalars = steps_of(get_json(client, "/api/v1/scalars", plugin="scalars", downsample=k))
            # Series with the same steps keep the same steps, in one run and across runs.
            assert scalars[("train", "loss")] == scalars[("train", "acc")]
            assert scalars[("eval", "loss")] == scalars[("eval", "acc")]
            assert scalars[("eval", "loss")] == scalars[("nested/deep/run", "loss")]
        if store == "small":
            # The store kept a sample of train's 300 steps; downsampling picks among those.
            assert len(full["scalars"]["train"]["acc"]) == 40
            assert full["scalars"]["train"]["acc"][-1]["step"] == TRAIN_STEPS - 1
        # downsample=0: every series, no points.
        answer = get_json(client, "/api/v1/scalars", plugin="scalars", downsample=0)
        assert {key: steps for key, steps in steps_of(answer).items()} == {
            key: [] for key in steps_of(full["scalars"])
        }
    # Deterministic: another server over the same store picks the same points.
    with serve(spec) as a, serve(spec) as b:
        for params in ({"downsample": 7}, {"downsample": 7, "step_min": 50, "latest": 100}):
            first = a.get("/api/v1/scalars", params={"plugin": "scalars", **params}).content
            assert first == b.get("/api/v1/scalars", params={"plugin": "scalars", **params}).content


def test_downsample_depends_only_on_the_step_set(api: TestClient) -> None:
    k = 9

    def lr(**params: Any) -> list[int]:
        answer = get_json(api, "/api/v1/scalars", plugin="scalars", downsample=k, **params)
        return steps_of(answer)[("train", "lr")]

    chosen = lr(tag="lr")
    assert len(chosen) == k and chosen[0] == 0 and chosen[-1] == TRAIN_STEPS - 3
    # Not on what else the request reads, nor on the format.
    assert lr() == lr(run="train") == chosen
    columns = get_json(
        api, "/api/v1/scalars", plugin="scalars", tag="lr", downsample=k, format="columns"
    )
    assert columns["train"]["lr"]["step"] == chosen
    # The choice is a function of the steps alone: the same steps, the same choice.
    steps = np.arange(0, TRAIN_STEPS, 3, dtype=np.int64)
    assert steps[downsample_indices(steps, k)].tolist() == chosen
    # A step range keeps the choice among the steps in range, the last one included.
    ranged = lr(tag="lr", step_max=150)
    in_range = steps[steps <= 150]
    assert ranged == in_range[downsample_indices(in_range, k)].tolist()
    assert ranged[0] == 0 and ranged[-1] == 150
    # The first and the last step of the range, whatever the range.
    assert lr(tag="lr", step_min=100, step_max=200)[:: k - 1] == [102, 198]


def test_downsample_by_extremes_keeps_each_series_extremes(api: TestClient) -> None:
    full = get_json(api, "/api/v1/scalars", plugin="scalars", format="columns")
    for k in (4, 9, 40):
        answer = get_json(
            api,
            "/api/v1/scalars",
            plugin="scalars",
            format="columns",
            downsample=k,
            downsample_by="extremes",
        )
        assert answer.keys() == full.keys()
        for run, tags in full.items():
            for tag, cols in tags.items():
                got = answer[run][tag]
                assert len(got["step"]) <= k
                # The series' own points, its ends, its lowest and its highest.
                pairs = dict(zip(cols["step"], cols["value"], strict=True))
                assert all(pairs[a] == b for a, b in zip(got["step"], got["value"], strict=True))
                assert got["step"][0] == cols["step"][0] and got["step"][-1] == cols["step"][-1]
                # ±Infinity are values (the highest, the lowest); NaN is none.
                numbers = [float(v) for v in cols["value"] if v != "NaN"]
                kept = [float(v) for v in got["value"] if v != "NaN"]
                if numbers:
                    assert max(numbers) in kept and min(numbers) in kept
    # A scalars-only choice: a bad value or another kind is a 400 that says why.
    bad = api.get("/api/v1/scalars", params={"plugin": "scalars", "downsample_by": "max"})
    assert bad.status_code == 400 and "downsample_by" in bad.json()["error"]["message"]
    other = api.get("/api/v1/tensors", params={"plugin": "histograms", "downsample_by": "extremes"})
    assert other.status_code == 400 and "downsample_by" in other.json()["error"]["message"]


def test_downsample_after_latest_and_range(api: TestClient) -> None:
    answer = get_json(
        api,
        "/api/v1/scalars",
        plugin="scalars",
        run="train",
        tag="acc",
        step_min=100,
        step_max=199,
        latest=50,
        downsample=10,
    )
    steps = [p["step"] for p in answer["train"]["acc"]]
    assert len(steps) == 10 and steps[0] == 150 and steps[-1] == 199


def test_index_range_of_blob_sequences(
    api: TestClient, multiplexer: plugin_event_multiplexer.EventMultiplexer
) -> None:
    theirs = {
        e.step: list(e.tensor_proto.string_val) for e in multiplexer.Tensors("train", "multi")
    }

    def read(**params: Any) -> dict[int, list[bytes]]:
        answer = get_json(
            api, "/api/v1/blob_sequences", plugin="images", run="train", tag="multi", **params
        )
        return {
            p["step"]: [blob(api, key)[0] for key in p["blobs"]]
            for p in answer.get("train", {}).get("multi", [])
        }

    assert read(index_min=2) == {s: blobs[2:] for s, blobs in theirs.items()}
    assert read(index_min=3, index_max=3) == {s: blobs[3:4] for s, blobs in theirs.items()}
    assert read(index_max=1) == {s: blobs[:2] for s, blobs in theirs.items()}
    assert read(index_min=4, index_max=100) == {s: blobs[4:] for s, blobs in theirs.items()}
    # With the step filters too.
    assert read(index_min=2, index_max=2, latest=1) == {
        MULTI_STEPS[-1]: theirs[MULTI_STEPS[-1]][2:3]
    }
    # An index range beyond every step: no steps.
    assert read(index_min=5) == {}


def test_experiment_parameter_picks_the_store(spec_all: ExperimentSpec, tmp_path: Path) -> None:
    logdir = tmp_path / "second"
    with SummaryWriter(str(logdir / "solo")) as w:
        for step in range(4):
            w.add_scalar("only", step * 2.0, step)
    db = tmp_path / "second.sqlite"
    ingest(logdir, db, ALL, experiment="second")
    with serve(spec_all, ExperimentSpec("second", logdir, db)) as client:
        assert [e["name"] for e in get_json(client, "/api/v1/experiments")] == [
            EXPERIMENT,
            "second",
        ]
        assert [r["name"] for r in get_json(client, "/api/v1/runs", experiment="second")] == [
            "solo"
        ]
        assert [r["name"] for r in get_json(client, "/api/v1/runs")] == RUNS
        answer = get_json(client, "/api/v1/scalars", plugin="scalars", experiment="second")
        assert [p["value"] for p in answer["solo"]["only"]] == [0.0, 2.0, 4.0, 6.0]
        assert get_json(client, "/api/v1/plugins", experiment="second") == {"scalars": ["scalar"]}


def test_a_logdir_with_embeddings_lists_the_projector(tmp_path: Path) -> None:
    """add_embedding's files beside the event files are no series: /api/v1/plugins lists the
    projector with no data class (the dashboard's link to TensorBoard's UI names it)."""
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "run")) as w:
        w.add_scalar("loss", 1.0, 0)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, ALL, experiment="emb")
    with serve(ExperimentSpec("emb", logdir, db)) as client:
        assert get_json(client, "/api/v1/plugins") == {"scalars": ["scalar"]}
        with SummaryWriter(str(logdir / "run")) as w:
            w.add_embedding(np.random.default_rng(0).random((6, 3)))
        assert get_json(client, "/api/v1/plugins") == {"projector": [], "scalars": ["scalar"]}


# -- the point bound -----------------------------------------------------------------------


def test_too_large_is_refused_with_a_helpful_message(
    api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 7 scalar series (train: loss, acc, lr; eval: loss, acc; nested: loss; root: root_metric).
    monkeypatch.setitem(data_series.MAX_POINTS, "scalars", 100)
    error = assert_error(api.get("/api/v1/scalars", params={"plugin": "scalars"}), 413)
    assert error["code"] == "too_large"
    for hint in ("limit is 100", "downsample=", "latest=", "step_min", "run=", "tag="):
        assert hint in error["message"], error["message"]
    # What a bounded request asks for is within the limit: 7 × 14 = 98.
    assert api.get("/api/v1/scalars", params={"plugin": "scalars", "downsample": 14}).is_success
    # latest=15 asks for 6 × 15 + the 7 points of root_metric = 97; latest=16 for 103.
    assert api.get("/api/v1/scalars", params={"plugin": "scalars", "latest": 15}).is_success
    assert_error(api.get("/api/v1/scalars", params={"plugin": "scalars", "latest": 16}), 413)
    assert api.get("/api/v1/scalars", params={"plugin": "scalars", "run": "eval"}).is_success
    # Upper bounds that overcount (latest= beyond a series' length, a step range) are checked
    # against the points the series hold: 2 × 30 points, then 26 points from step 290 on.
    params = {"plugin": "scalars", "run": "eval", "latest": 10**9}
    assert api.get("/api/v1/scalars", params=params).is_success
    assert api.get("/api/v1/scalars", params={"plugin": "scalars", "step_min": 290}).is_success
    error = assert_error(api.get("/api/v1/scalars", params={"plugin": "scalars"}), 413)
    assert "could return 797 points" in error["message"]
    # The other kinds have their own bounds.
    monkeypatch.setitem(data_series.MAX_POINTS, "tensors", 10)
    assert_error(api.get("/api/v1/tensors", params={"plugin": "histograms"}), 413)
    assert api.get("/api/v1/tensors", params={"plugin": "histograms", "latest": 5}).is_success
    monkeypatch.setitem(data_series.MAX_POINTS, "blob_sequences", 6)
    assert_error(api.get("/api/v1/blob_sequences", params={"plugin": "images"}), 413)
    params = {"plugin": "images", "downsample": 2}
    assert api.get("/api/v1/blob_sequences", params=params).is_success
    # Too many series at all.
    monkeypatch.setattr(data_series, "MAX_SERIES_PER_REQUEST", 2)
    error = assert_error(api.get("/api/v1/scalars", params={"plugin": "scalars", "latest": 1}), 413)
    assert "7 series match" in error["message"] and "run=" in error["message"]


# -- HTTP caching --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path,params",
    [
        ("/api/v1/runs", {}),
        ("/api/v1/scalars/list", {"plugin": "scalars"}),
        ("/api/v1/scalars", {"plugin": "scalars", "run": "train", "tag": "acc"}),
        ("/api/v1/tensors", {"plugin": "histograms", "latest": 1}),
        ("/api/v1/blob_sequences", {"plugin": "images"}),
    ],
)
def test_etag_gives_304(api: TestClient, path: str, params: dict[str, str]) -> None:
    first = api.get(path, params=params)
    etag = first.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"')
    assert first.headers["cache-control"] == "no-cache"
    again = api.get(path, params=params, headers={"if-none-match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == etag
    # A weak comparison and a list of validators match too; another validator does not.
    assert api.get(path, params=params, headers={"if-none-match": f"W/{etag}"}).status_code == 304
    listed = f'"other", {etag}'
    assert api.get(path, params=params, headers={"if-none-match": listed}).status_code == 304
    other = api.get(path, params=params, headers={"if-none-match": '"other"'})
    assert other.status_code == 200 and other.content == first.content
    assert other.headers["etag"] == etag


def test_gzip_when_accepted(api: TestClient) -> None:
    params = {"plugin": "scalars", "run": "train"}
    plain = api.get("/api/v1/scalars", params=params, headers={"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert len(plain.content) >= 1024
    # Read the raw bytes: the client would otherwise decompress them silently.
    with api.stream(
        "GET", "/api/v1/scalars", params=params, headers={"accept-encoding": "gzip"}
    ) as zipped:
        raw = b"".join(zipped.iter_raw())
        assert zipped.headers["content-encoding"] == "gzip"
        assert zipped.headers["vary"] == "accept-encoding"
        assert zipped.headers["etag"] == plain.headers["etag"]
    assert gzip.decompress(raw) == plain.content
    assert len(raw) < len(plain.content) / 2
    # Small answers are not worth compressing.
    small = api.get("/api/v1/runs", headers={"accept-encoding": "gzip"})
    assert "content-encoding" not in small.headers


def test_cache_hits_counted_in_health(spec_all: ExperimentSpec) -> None:
    with serve(spec_all) as client:
        before = get_json(client, "/api/v1/health")["cache"]
        assert before["hits"] == before["misses"] == before["entries"] == 0
        params = {"plugin": "scalars", "run": "train"}
        first = client.get("/api/v1/scalars", params=params)
        cache = get_json(client, "/api/v1/health")["cache"]
        assert (cache["hits"], cache["misses"], cache["entries"]) == (0, 1, 1)
        assert cache["bytes"] >= len(first.content)
        for _ in range(3):
            assert client.get("/api/v1/scalars", params=params).content == first.content
        cache = get_json(client, "/api/v1/health")["cache"]
        assert (cache["hits"], cache["misses"], cache["entries"]) == (3, 1, 1)
        assert cache["hit_rate"] == 0.75
        # A 304 is answered from the cache too.
        etag = first.headers["etag"]
        client.get("/api/v1/scalars", params=params, headers={"if-none-match": etag})
        assert get_json(client, "/api/v1/health")["cache"]["hits"] == 4
        # Other filters are other entries.
        client.get("/api/v1/scalars", params={**params, "latest": 3})
        cache = get_json(client, "/api/v1/health")["cache"]
        assert (cache["misses"], cache["entries"]) == (2, 2)


def test_a_commit_after_a_cached_answer_gives_a_new_answer(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    write_train(logdir / "train", range(0, 100))
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, ALL, experiment=EXPERIMENT)
    requests: list[tuple[str, dict[str, Any]]] = [
        ("/api/v1/runs", {}),
        ("/api/v1/scalars/list", {"plugin": "scalars"}),
        ("/api/v1/scalars", {"plugin": "scalars", "run": "train", "tag": "acc"}),
        ("/api/v1/scalars", {"plugin": "scalars", "tag": "acc", "format": "csv"}),
        ("/api/v1/tensors", {"plugin": "histograms", "latest": 2}),
        ("/api/v1/blob_sequences", {"plugin": "images", "tag": "multi"}),
    ]
    with serve(ExperimentSpec(EXPERIMENT, logdir, db)) as client:
        before = {}
        for path, params in requests:
            first = client.get(path, params=params)
            assert client.get(path, params=params).content == first.content  # now cached
            before[path, repr(params)] = first
        assert get_json(client, "/api/v1/health")["cache"]["hits"] == len(requests)
        # A new run: the listings change; the cached values of train's series stay valid.
        with SummaryWriter(str(logdir / "late")) as w:
            w.add_scalar("acc", 0.5, 3)
        ingest(logdir, db, ALL, experiment=EXPERIMENT)
        path, params = requests[2]
        etag = before[path, repr(params)].headers["etag"]
        assert client.get(path, params=params, headers={"if-none-match": etag}).status_code == 304
        assert (
            client.get("/api/v1/runs").headers["etag"]
            != before["/api/v1/runs", "{}"].headers["etag"]
        )
        # More points in the run; the same server answers again.
        write_train(logdir / "train", range(100, 160), seed=1)
        ingest(logdir, db, ALL, experiment=EXPERIMENT)
        for path, params in requests:
            old = before[path, repr(params)]
            etag = old.headers["etag"]
            new = client.get(path, params=params, headers={"if-none-match": etag})
            assert new.status_code == 200, (path, params)
            assert new.headers["etag"] != etag and new.content != old.content, (path, params)
        # TensorBoard's order: by start time, so the run started later comes last.
        assert [r["name"] for r in get_json(client, "/api/v1/runs")] == ["train", "late"]
        acc = get_json(client, "/api/v1/scalars", plugin="scalars", run="train", tag="acc")
        assert [p["step"] for p in acc["train"]["acc"]] == list(range(160))
        listed = get_json(client, "/api/v1/scalars/list", plugin="scalars")
        assert listed["train"]["acc"]["max_step"] == 159
        assert listed["late"]["acc"]["max_step"] == 3
        images = get_json(client, "/api/v1/blob_sequences", plugin="images", tag="multi")
        assert [p["step"] for p in images["train"]["multi"]] == [0, 40, 80, 120]


def test_csv_answers_name_a_file(spec_all: ExperimentSpec) -> None:
    odd = ExperimentSpec('a "quoted"; ü/x', spec_all.logdir, spec_all.db)
    params = {"plugin": "scalars", "run": "eval", "tag": "acc", "format": "csv"}
    with serve(spec_all, odd) as client:
        for _ in range(2):  # built, then from the cache
            response = client.get("/api/v1/scalars", params=params)
            assert response.status_code == 200
            assert response.headers["content-disposition"] == (
                f'attachment; filename="{EXPERIMENT}-scalars.csv"; '
                f"filename*=UTF-8''{EXPERIMENT}-scalars.csv"
            )
        response = client.get("/api/v1/scalars", params={**params, "experiment": odd.name})
        assert response.status_code == 200
        assert response.headers["content-disposition"] == (
            'attachment; filename="a_quoted_x-scalars.csv"; '
            "filename*=UTF-8''a%20%22quoted%22%3B%20%C3%BC%2Fx-scalars.csv"
        )
        # Not for JSON answers.
        json_answer = client.get("/api/v1/scalars", params={**params, "format": "json"})
        assert "content-disposition" not in json_answer.headers
