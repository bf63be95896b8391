"""``--samples_per_plugin PLUGIN=0``: "0 means keep all samples of that type", as TensorBoard's
help said and its maintainers hold (tensorflow/tensorboard#5550): its loader keeps every point
(a reservoir of 0 is unbounded) and it hands 0 to its Rust data server as ``all``. boardd read 0
as "keep nothing": the image tags said ``samples: -2`` and every chart was empty.

TensorBoard's own routes then answer nothing for images, text, PR curves and Time Series (they
downsample to 0: that is issue 5550, open); boardd answers every point kept, as the flag says
(docs/tensorboard.md, the table of differences)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.tensorboard.conftest import Pair
from tests.tensorboard.plugin_logdir import LONG_STEPS, plugin_pair

FLAG = "images=0,histograms=0,text=0,pr_curves=0,scalars=0"
EVERY_STEP = list(range(LONG_STEPS))


@pytest.fixture(scope="module")
def zeros(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with plugin_pair(tmp_path_factory, None, flag=FLAG) as p:
        yield p


@pytest.mark.parametrize(
    "path",
    [
        "/data/plugin/images/tags",
        "/data/plugin/histograms/tags",
        "/data/plugin/distributions/tags",
        "/data/plugin/pr_curves/tags",
        "/data/plugin/timeseries/tags",
    ],
)
def test_tags_as_tensorboard(zeros: Pair, path: str) -> None:
    tb, ours = zeros.both("GET", path)
    assert tb.status_code == ours.status_code == 200
    assert ours.json() == tb.json()


@pytest.mark.parametrize(
    "path", ["/data/plugin/histograms/histograms", "/data/plugin/distributions/distributions"]
)
def test_histogram_routes_as_tensorboard(zeros: Pair, path: str) -> None:
    """Their routes' fixed numbers (51 and 501 per answer) apply, to every point kept (which
    51 of them is each server's own sample: docs/tensorboard.md)."""
    tb, ours = zeros.both("GET", path, params={"run": "long", "tag": "h"})
    assert tb.status_code == ours.status_code == 200
    assert len(ours.json()) == len(tb.json())
    if path.endswith("histograms"):
        assert len(ours.json()) == 51
    else:
        assert [e[1] for e in ours.json()] == [e[1] for e in tb.json()] == EVERY_STEP


@pytest.mark.parametrize(
    ("path", "tag"),
    [("/data/plugin/images/images", "img"), ("/data/plugin/text/text", "t/text_summary")],
)
def test_every_step_kept_and_answered(zeros: Pair, path: str, tag: str) -> None:
    ours = httpx_get(zeros, path, run="long", tag=tag)
    assert [e["step"] for e in ours] == EVERY_STEP


def test_pr_curves_every_step(zeros: Pair) -> None:
    ours = httpx_get(zeros, "/data/plugin/pr_curves/pr_curves", run="long", tag="p")
    assert [e["step"] for e in ours["long"]] == EVERY_STEP


def test_time_series_every_step(zeros: Pair) -> None:
    requests = [
        {"plugin": "images", "tag": "img", "run": "long", "sample": 0},
        {"plugin": "histograms", "tag": "h", "run": "long"},
    ]
    _, ours = zeros.both(
        "POST",
        "/data/plugin/timeseries/timeSeries",
        data={"requests": json.dumps(requests)},
        headers={"X-XSRF-Protected": "1"},
    )
    assert ours.status_code == 200
    images, histograms = ours.json()
    assert [e["step"] for e in images["runToSeries"]["long"]] == EVERY_STEP
    assert [e["step"] for e in histograms["runToSeries"]["long"]] == EVERY_STEP


def httpx_get(pair: Pair, path: str, **params: str) -> object:
    answer = httpx.get(pair.boardd.url + path, params=params, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()
