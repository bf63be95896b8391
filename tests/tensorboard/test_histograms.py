"""TensorBoard's histograms and distributions routes on boardd, against the real TensorBoard on
the same logdir.

One known difference, asserted here: TensorBoard rounds a TF1 histogram's edges and counts to
float32 when it reads them; boardd keeps their float64 values. So TensorBoard's buckets are
exactly boardd's rounded to float32, and its distributions differ from boardd's by that
rounding only: boardd's compression of TensorBoard's own buckets gives TensorBoard's
distributions exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from boardd.plugins.histograms.data import NORMAL_BASIS_POINTS, compress
from tests.tensorboard.conftest import Pair
from tests.tensorboard.plugin_logdir import LONG_STEPS, plugin_pair

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

HISTOGRAMS = "/data/plugin/histograms/histograms"
DISTRIBUTIONS = "/data/plugin/distributions/distributions"


@pytest.fixture(scope="module")
def plugin_defaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with plugin_pair(tmp_path_factory, None) as p:
        yield p


def series(pair: Pair) -> list[tuple[str, str]]:
    """Every (run, tag) TensorBoard's histograms tags route lists."""
    tags = pair.tb.get("/data/plugin/histograms/tags").json()
    return [(run, tag) for run, by_tag in tags.items() for tag in by_tag]


def as_float32(rows: list[list[float]]) -> list[list[float]]:
    return np.asarray(rows, dtype=np.float32).astype(np.float64).tolist()  # type: ignore[no-any-return]


@pytest.mark.parametrize("plugin", ["histograms", "distributions"])
def test_tags(keep_all: Pair, plugin: str) -> None:
    tb, ours = keep_all.both("GET", f"/data/plugin/{plugin}/tags")
    assert ours.status_code == 200
    assert ours.json() == tb.json()
    assert set(ours.json()) == {"train", "eval"}


def test_every_histogram_series(keep_all: Pair) -> None:
    found = series(keep_all)
    assert len(found) == 2
    for run, tag in found:
        tb, ours = keep_all.both("GET", HISTOGRAMS, params={"run": run, "tag": tag})
        assert ours.status_code == 200, ours.text
        ours_rows, tb_rows = ours.json(), tb.json()
        assert [r[:2] for r in ours_rows] == [r[:2] for r in tb_rows], (run, tag)
        for (_, step, ours_buckets), (_, _, tb_buckets) in zip(ours_rows, tb_rows, strict=True):
            assert np.asarray(ours_buckets).shape[1:] == (3,)
            # TensorBoard's float32 rounding of the same buckets (the one difference).
            assert as_float32(ours_buckets) == tb_buckets, (run, tag, step)
        assert any(
            ours_buckets != tb_buckets
            for (_, _, ours_buckets), (_, _, tb_buckets) in zip(ours_rows, tb_rows, strict=True)
        ), "boardd keeps float64 edges, TensorBoard float32 ones"


def test_every_distribution_series(keep_all: Pair) -> None:
    for run, tag in series(keep_all):
        params = {"run": run, "tag": tag}
        tb, ours = keep_all.both("GET", DISTRIBUTIONS, params=params)
        assert ours.status_code == 200, ours.text
        tb_histograms = keep_all.tb.get(HISTOGRAMS, params=params).json()
        assert [r[:2] for r in ours.json()] == [r[:2] for r in tb.json()], (run, tag)
        for ours_row, tb_row, tb_histogram in zip(
            ours.json(), tb.json(), tb_histograms, strict=True
        ):
            assert [bp for bp, _ in ours_row[2]] == list(NORMAL_BASIS_POINTS)
            assert [bp for bp, _ in tb_row[2]] == list(NORMAL_BASIS_POINTS)
            # The same compression: exactly TensorBoard's on TensorBoard's own buckets ...
            own = compress(np.asarray(tb_histogram[2], dtype=np.float64).reshape(-1, 3))
            assert [list(p) for p in own] == tb_row[2], (run, tag, tb_row[1])
            # ... and within float32 rounding of it on boardd's float64 buckets.
            for (_, a), (_, b) in zip(ours_row[2], tb_row[2], strict=True):
                assert math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6), (run, tag, a, b)


@pytest.mark.parametrize("path", [HISTOGRAMS, DISTRIBUTIONS])
def test_unknown_and_missing_parameters(keep_all: Pair, path: str) -> None:
    for params in ({"run": "nope", "tag": "weights"}, {"run": "train", "tag": "nope"}):
        tb, ours = keep_all.both("GET", path, params=params)
        assert (tb.status_code, ours.status_code) == (404, 404)
        assert ours.json()["error"]["code"] == "not_found"
        assert "No histogram tag" in ours.json()["error"]["message"]
    # A missing run or tag: TensorBoard fails (500); boardd says which is missing.
    for params, missing in (({"run": "train"}, "tag="), ({"tag": "weights"}, "run=")):
        tb, ours = keep_all.both("GET", path, params=params)
        assert (tb.status_code, ours.status_code) == (500, 400)
        assert missing in ours.json()["error"]["message"]


def test_defaults_downsample_as_tensorboard(defaults: Pair) -> None:
    """With the default sampling, both answer every histogram here (train has 30, under the
    histograms route's 51); counts and last points agree."""
    tb, ours = defaults.both("GET", "/data/plugin/histograms/tags")
    assert ours.json() == tb.json()
    for path in (HISTOGRAMS, DISTRIBUTIONS):
        tb, ours = defaults.both("GET", path, params={"run": "train", "tag": "weights"})
        assert len(ours.json()) == len(tb.json()) == 30
        assert ours.json()[-1][:2] == tb.json()[-1][:2]


def test_plugin_without_data_lists_no_tags(keep_all: Pair) -> None:
    """A run without histograms is not in the listing; an unknown run has no series."""
    tags: dict[str, Any] = keep_all.both("GET", "/data/plugin/histograms/tags")[1].json()
    assert "curves" not in tags and "typed" not in tags


def test_defaults_downsample_long_series(plugin_defaults: Pair) -> None:
    """130 histograms: the histograms route answers 51 of them on both sides, the
    distributions route all 130 (its limit is 501), ending at the same last step; which other
    50 differ (boardd keeps the first step and a seeded choice by step, TensorBoard a random
    one)."""
    params = {"run": "long", "tag": "h"}
    for path, count in ((HISTOGRAMS, 51), (DISTRIBUTIONS, LONG_STEPS)):
        tb, ours = plugin_defaults.both("GET", path, params=params)
        assert len(ours.json()) == len(tb.json()) == count, path
        assert ours.json()[-1][:2] == tb.json()[-1][:2] == [ours.json()[-1][0], LONG_STEPS - 1]
    tb, ours = plugin_defaults.both("GET", DISTRIBUTIONS, params=params)
    assert [r[:2] for r in ours.json()] == [r[:2] for r in tb.json()]
