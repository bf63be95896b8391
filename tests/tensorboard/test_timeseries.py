"""TensorBoard's time-series ("metrics") plugin on boardd, answer for answer against the real
TensorBoard on the same logdir: tags, timeSeries for every series the tags list, imageData."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.histogram import metadata as histogram_metadata
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util

from tests.api.conftest import WALL
from tests.tensorboard.conftest import KEEP_ALL, Pair, pair

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

TAGS = "/data/plugin/timeseries/tags"
SERIES = "/data/plugin/timeseries/timeSeries"
IMAGE = "/data/plugin/timeseries/imageData"
XSRF = {"X-XSRF-Protected": "1"}


def every_request(tags: dict[str, Any]) -> list[dict[str, Any]]:
    """A series request for every (plugin, tag) the tags route lists: without a run (scalars:
    every run; histograms and images: TensorBoard's "Missing run") and with each run that has
    it; images once per sample."""
    out: list[dict[str, Any]] = []
    for plugin in ("scalars", "histograms"):
        by_run = tags[plugin]["runTagInfo"]
        for tag in sorted({t for run_tags in by_run.values() for t in run_tags}):
            out.append({"plugin": plugin, "tag": tag})
            out.extend(
                {"plugin": plugin, "tag": tag, "run": run} for run in by_run if tag in by_run[run]
            )
    for tag, by_run in tags["images"]["tagRunSampledInfo"].items():
        out.append({"plugin": "images", "tag": tag, "sample": 0})
        for run, info in by_run.items():
            for sample in range(info["maxSamplesPerStep"]):
                out.append({"plugin": "images", "tag": tag, "run": run, "sample": sample})
    return out


def post_series(pair: Pair, requests: list[dict[str, Any]]) -> tuple[Any, Any]:
    """The same requests to each, as TensorBoard's UI posts them (multipart form data)."""
    files = {"requests": (None, json.dumps(requests))}
    tb, ours = pair.both("POST", SERIES, files=files, headers=XSRF)
    assert tb.status_code == 200, tb.text
    assert ours.status_code == 200, ours.text
    return tb.json(), ours.json()


def without_image_ids(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answers with each image's id blanked (the ids are each server's own blob keys)."""
    out = json.loads(json.dumps(answers))
    for answer in out:
        for points in answer.get("runToSeries", {}).values():
            for point in points:
                if "imageId" in point:
                    point["imageId"] = "?"
    return out


def ours_get(pair: Pair, path: str, **kwargs: Any) -> httpx.Response:
    """A GET to boardd only."""
    return httpx.get(pair.boardd.url + path, timeout=30, **kwargs)


def image_ids(answers: list[dict[str, Any]]) -> list[str]:
    return [
        p["imageId"]
        for a in answers
        for points in a.get("runToSeries", {}).values()
        for p in points
        if "imageId" in p
    ]


#: Runs of this module's own logdir.
DESCRIBED_RUNS = {"a", "b", "c"}
#: Tags of TF1 histograms (tensorboardX's ``histo`` values) in the rich logdir.
LEGACY_HISTOGRAM_TAGS = {"weights"}


def image_bytes(kind: str, seed: int) -> bytes:
    """A small image in one of the formats TensorBoard names (or not: WebP, and bytes that
    are no image)."""
    if kind == "none":
        return b"no image at all " + bytes([seed])
    pixels = np.random.default_rng(seed).integers(0, 256, (4, 3, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=kind)
    return out.getvalue()


#: The image formats of the described logdir, rotating over steps and samples.
FORMATS = ("png", "jpeg", "gif", "bmp", "webp", "none")


def write_described_logdir(root: Path) -> Path:
    """Runs a, b, c: a scalar tag described the same in a and c and otherwise in b; a TF2
    histogram (float64 ``[k, 3]`` tensors) over 120 steps, described per run; images in a
    and b with 1 to 3 samples per step in every format, described differently."""
    logdir = root / "described"
    for run, text in (("a", "the **loss**"), ("b", "loss of *b*"), ("c", "the **loss**")):
        writer = EventFileWriter(str(logdir / run))
        for step in range(120):
            event = event_pb2.Event(wall_time=WALL + step / 4, step=step)
            metadata = summary_pb2.SummaryMetadata(summary_description=text)
            metadata.plugin_data.plugin_name = "scalars"
            event.summary.value.add(
                tag="loss",
                tensor=tensor_util.make_tensor_proto(step / 7, dtype="float32"),
                metadata=metadata,
            )
            edges = np.array([[step, step + 0.1, 2.0], [step + 0.1, step + 1 / 3, 5.0]])
            event.summary.value.add(
                tag="h",
                tensor=tensor_util.make_tensor_proto(edges, dtype="float64"),
                metadata=histogram_metadata.create_summary_metadata("h", f"spread in {run}"),
            )
            if run == "c":
                # A scalar of a metadata version newer than TensorBoard knows: not listed.
                future = summary_pb2.SummaryMetadata()
                future.plugin_data.plugin_name = "scalars"
                future.plugin_data.content = b"\x08\x01"
                event.summary.value.add(
                    tag="future",
                    tensor=tensor_util.make_tensor_proto(1.0, dtype="float32"),
                    metadata=future,
                )
            if run != "c" and step % 5 == 0 and (run == "a" or step < 20):
                blobs = [
                    image_bytes(FORMATS[(step + i) % len(FORMATS)], step + i)
                    for i in range(1 + step % 3)
                ]
                event.summary.value.add(
                    tag="formats",
                    tensor=tensor_util.make_tensor_proto([b"3", b"4", *blobs], dtype="string"),
                    metadata=image_metadata.create_summary_metadata("formats", f"images of {run}"),
                )
            writer.add_event(event)
        writer.close()
    return logdir


@pytest.fixture(scope="module")
def described_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_described_logdir(tmp_path_factory.mktemp("timeseries"))


@pytest.fixture(scope="module")
def described_keep_all(
    described_logdir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("described_keep_all")
    with pair(root, described_logdir, KEEP_ALL, DESCRIBED_RUNS) as p:
        yield p


@pytest.fixture(scope="module")
def described_defaults(
    described_logdir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("described_defaults")
    with pair(root, described_logdir, None, DESCRIBED_RUNS) as p:
        yield p


@pytest.fixture(params=["rich", "described"])
def full(request: pytest.FixtureRequest) -> Pair:
    """Each logdir served keeping every point."""
    name = "keep_all" if request.param == "rich" else "described_keep_all"
    found: Pair = request.getfixturevalue(name)
    return found


@pytest.fixture(params=["rich", "described"])
def sampled(request: pytest.FixtureRequest) -> Pair:
    """Each logdir served with the default sampling."""
    name = "defaults" if request.param == "rich" else "described_defaults"
    found: Pair = request.getfixturevalue(name)
    return found


def histograms_as_float32(answer: dict[str, Any]) -> dict[str, Any]:
    """A histogram answer with its bin edges and counts rounded to float32: TensorBoard
    converts a TF1 histogram's buckets to float32, boardd's store keeps their float64
    (docs/tensorboard.md lists it)."""
    out = json.loads(json.dumps(answer))
    for points in out["runToSeries"].values():
        for point in points:
            for b in point["bins"]:
                for k in ("min", "max", "count"):
                    b[k] = float(np.float32(b[k]))
    return out


def test_histogram_bins_keep_float64_where_tensorboard_has_float32(keep_all: Pair) -> None:
    """The one difference of histograms, pinned: equal as float32, boardd's more precise."""
    requests = [{"plugin": "histograms", "tag": "weights", "run": "train"}]
    (tb,), (ours,) = post_series(keep_all, requests)
    assert ours != tb
    assert histograms_as_float32(ours) == tb
    edges = [b["min"] for p in ours["runToSeries"]["train"] for b in p["bins"]]
    assert any(float(np.float32(e)) != e for e in edges)


def test_tags_as_tensorboard(full: Pair) -> None:
    tb, ours = full.both("GET", TAGS)
    assert ours.status_code == 200
    assert ours.json() == tb.json()
    got = ours.json()
    assert got["scalars"]["runTagInfo"]
    assert got["histograms"]["runTagInfo"], "the logdir has histograms"
    assert got["images"]["tagRunSampledInfo"], "the logdir has images"


def test_tag_descriptions_rendered_and_combined(described_keep_all: Pair) -> None:
    got = ours_get(described_keep_all, TAGS).json()
    loss = got["scalars"]["tagDescriptions"]["loss"]
    assert loss.startswith("<h1>Multiple descriptions</h1>")
    assert "<h2>For runs: a, c</h2>" in loss and "<h2>For run: b</h2>" in loss
    assert "<strong>loss</strong>" in loss
    assert got["scalars"]["runTagInfo"]["c"] == ["loss"]  # not "future": a newer version
    assert got["images"]["tagRunSampledInfo"]["formats"] == {
        "a": {"maxSamplesPerStep": 3},
        "b": {"maxSamplesPerStep": 3},
    }


def test_every_series_as_tensorboard(full: Pair) -> None:
    tags = full.tb.get(TAGS).json()
    requests = every_request(tags)
    plugins = {r["plugin"] for r in requests}
    assert plugins == {"scalars", "histograms", "images"}
    tb, ours = post_series(full, requests)
    assert len(ours) == len(tb) == len(requests)
    for want, got, asked in zip(
        without_image_ids(tb), without_image_ids(ours), requests, strict=True
    ):
        legacy = asked["plugin"] == "histograms" and asked["tag"] in LEGACY_HISTOGRAM_TAGS
        if got != want and legacy:
            got = histograms_as_float32(got)
        assert got == want, asked
    # Something was compared: every series with a run has points; runless ones of histograms
    # and images are TensorBoard's "Missing run".
    for asked, got in zip(requests, ours, strict=True):
        if "run" in asked:
            assert got["runToSeries"][asked["run"]], asked
        elif asked["plugin"] != "scalars":
            assert got["error"] == "Missing run", asked
        else:
            assert len(got["runToSeries"]) >= 1, asked


def test_non_finite_scalars_spelled_as_tensorboard(keep_all: Pair) -> None:
    (tb,), (ours,) = post_series(keep_all, [{"plugin": "scalars", "tag": "loss"}])
    assert ours == tb
    values = {p["step"]: p["value"] for p in ours["runToSeries"]["train"]}
    assert (values[13], values[17], values[19]) == ("NaN", "Infinity", "-Infinity")


def test_image_data_bytes_as_tensorboard(full: Pair) -> None:
    tags = full.tb.get(TAGS).json()
    requests = [r for r in every_request(tags) if r["plugin"] == "images" and "run" in r]
    tb, ours = post_series(full, requests)
    tb_ids, our_ids = image_ids(tb), image_ids(ours)
    assert len(our_ids) == len(tb_ids) >= 3
    assert len(set(our_ids)) == len(our_ids)
    types = set()
    for tb_id, our_id in zip(tb_ids, our_ids, strict=True):
        want = full.tb.get(IMAGE, params={"imageId": tb_id})
        got = ours_get(full, IMAGE, params={"imageId": our_id})
        assert got.status_code == 200
        assert got.content == want.content
        assert got.headers["content-type"] == want.headers["content-type"]
        types.add(got.headers["content-type"])
    assert "image/png" in types


def test_image_content_types_as_tensorboard(described_keep_all: Pair) -> None:
    """Every format the time series may meet: TensorBoard names PNG, JPEG, GIF and BMP, and
    sends anything else (WebP too) as application/octet-stream."""
    requests = [{"plugin": "images", "tag": "formats", "run": "a", "sample": i} for i in range(3)]
    types = set()
    _, ours = post_series(described_keep_all, requests)
    for our_id in image_ids(ours):
        types.add(
            ours_get(described_keep_all, IMAGE, params={"imageId": our_id}).headers["content-type"]
        )
    assert types == {
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/bmp",
        "application/octet-stream",
    }


def test_defaults_sample_counts_and_last_steps(sampled: Pair) -> None:
    """With default sampling both answer as many points per series (scalars 1000, histograms
    51, images 10), ending at the same last step (which points between differ: see
    docs/tensorboard.md). Images: sample 0 only (which steps have a second sample depends on
    which steps the reservoir kept)."""
    tb, ours = sampled.both("GET", TAGS)
    assert ours.json() == tb.json()
    requests = [r for r in every_request(tb.json()) if r["plugin"] != "images" or r["sample"] == 0]
    tb_answers, our_answers = post_series(sampled, requests)
    compared = 0
    for want, got, asked in zip(tb_answers, our_answers, requests, strict=True):
        assert set(got) == set(want), asked
        if "error" in want:
            assert got["error"] == want["error"], asked
            continue
        assert set(got["runToSeries"]) == set(want["runToSeries"]), asked
        for run, points in want["runToSeries"].items():
            mine = got["runToSeries"][run]
            assert len(mine) == len(points), (asked, run)
            assert mine[-1]["step"] == points[-1]["step"], (asked, run)
            compared += 1
    assert compared >= 5
    lengths = {
        (a["plugin"], a["tag"]): max(len(p) for p in a["runToSeries"].values())
        for a in our_answers
        if a.get("runToSeries")
    }
    if ("histograms", "h") in lengths:  # the described logdir: 120 steps of each
        assert lengths["histograms", "h"] == 51
        assert lengths["images", "formats"] == 10


def test_error_entries_as_tensorboard(keep_all: Pair) -> None:
    requests: list[dict[str, Any]] = [
        {"plugin": "scalars"},
        {"plugin": "nope", "tag": "loss"},
        {"plugin": "histograms", "tag": "x"},
        {"plugin": "images", "tag": "x", "run": "train"},
        {"plugin": "images", "tag": "x", "run": "train", "sample": 0},
        {"plugin": "scalars", "tag": "loss", "run": "no such run"},
        {"plugin": "scalars", "tag": "no such tag"},
    ]
    tb, ours = post_series(keep_all, requests)
    assert ours == tb
    assert [a.get("error") for a in ours[:4]] == [
        "Missing tag",
        "Invalid plugin",
        "Missing run",
        "Missing sample",
    ]
    assert all(a["runToSeries"] == {} for a in ours[4:])


def test_bad_requests_are_clear_4xx(keep_all: Pair) -> None:
    forms: list[dict[str, str]] = [
        {"requests": "[{"},
        {"requests": ""},
        {},
        {"requests": '{"a": 1}'},
        {"requests": "[1]"},
    ]
    for form in forms:
        tb, ours = keep_all.both("POST", SERIES, data=form, headers=XSRF)
        assert ours.status_code == 400, form
        assert ours.json()["error"]["code"] == "bad_request"
        if form.get("requests") in ("[{", "", None):
            assert tb.status_code == 400, form
    # A run that is not a string: TensorBoard fails (500); boardd says what is wrong.
    bad_run = json.dumps([{"plugin": "scalars", "tag": "loss", "run": 5}])
    tb, ours = keep_all.both("POST", SERIES, data={"requests": bad_run}, headers=XSRF)
    assert (tb.status_code, ours.status_code) == (500, 400)
    assert "'run' must be a string" in ours.json()["error"]["message"]
    _, ours = keep_all.both("POST", SERIES, data={"requests": "[{"}, headers=XSRF)
    assert ours.json()["error"]["message"] == "Unable to parse 'requests' as JSON"
    # Without the header, and not marked same-origin by a browser: refused (TensorBoard 2.21
    # answers 200; the documentation lists it).
    _, ours = keep_all.both("POST", SERIES, data={"requests": "[]"})
    assert ours.status_code == 400
    assert "X-XSRF-Protected" in ours.json()["error"]["message"]
    for params in ({}, {"imageId": ""}):
        tb, ours = keep_all.both("GET", IMAGE, params=params)
        assert (tb.status_code, ours.status_code) == (400, 400), params
    for bad in ("nope", "logs~000000000000.1", "other~abc.1", "logs~zz.99999"):
        _, ours = keep_all.both("GET", IMAGE, params={"imageId": bad})
        assert ours.status_code == 404, bad
        assert ours.json()["error"]["code"] == "not_found"


def test_answer_cached_across_multipart_boundaries(keep_all: Pair) -> None:
    """Two posts of the same requests (each multipart body with its own boundary) get one
    answer, with one ETag."""
    body = json.dumps([{"plugin": "scalars", "tag": "loss"}])
    first = httpx.post(
        keep_all.boardd.url + SERIES, files={"requests": (None, body)}, headers=XSRF, timeout=30
    )
    second = httpx.post(
        keep_all.boardd.url + SERIES, files={"requests": (None, body)}, headers=XSRF, timeout=30
    )
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert first.headers["etag"] == second.headers["etag"]
    other = httpx.post(
        keep_all.boardd.url + SERIES,
        files={"requests": (None, json.dumps([{"plugin": "scalars", "tag": "acc"}]))},
        headers=XSRF,
        timeout=30,
    )
    assert other.json()[0]["tag"] == "acc"
    assert other.headers["etag"] != first.headers["etag"]


def test_get_with_requests_in_the_query_and_other_mounts(described_keep_all: Pair) -> None:
    """TensorBoard answers a GET with ``requests`` in the query too (no XSRF header needed);
    boardd's answer is the same under /tensorboard and /experiment/NAME (one experiment)."""
    requests = [
        {"plugin": "scalars", "tag": "loss", "run": "b"},
        {"plugin": "histograms", "tag": "h", "run": "a"},
    ]
    params = {"requests": json.dumps(requests)}
    tb, ours = described_keep_all.both("GET", SERIES, params=params)
    assert ours.status_code == 200
    assert ours.json() == tb.json()
    assert len(ours.json()[0]["runToSeries"]["b"]) == 120
    for prefix in ("/tensorboard", "/experiment/logs", "/tensorboard/experiment/logs"):
        again = ours_get(described_keep_all, prefix + SERIES, params=params)
        assert again.json() == ours.json(), prefix
    missing = ours_get(described_keep_all, "/experiment/nope" + SERIES, params=params)
    assert missing.status_code == 404
