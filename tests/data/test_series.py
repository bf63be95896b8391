"""Listing and reading series with bounds, against a store ingested from real event files."""

from __future__ import annotations

import math

import apsw
import pytest

from boardd.data import series
from boardd.data.blobs import parse_blob_key
from boardd.data.errors import BadRequest, TooLarge
from boardd.data.kinds import BLOB_SEQUENCES, SCALARS, TENSORS
from boardd.data.series import Bounds, Selection
from tests.api.conftest import IMAGES_PER_STEP, MULTI_STEPS, NON_FINITE, RUNS, TRAIN_STEPS


def test_list_series_by_run_then_tag(connection: apsw.Connection, exp_id: int) -> None:
    found = series.list_series(connection, exp_id, SCALARS, Selection("scalars"))
    pairs = [(s.run, s.tag) for s in found]
    assert pairs == sorted(pairs)
    assert {s.run for s in found} == set(RUNS)
    only = series.list_series(
        connection, exp_id, SCALARS, Selection("scalars", ("train", "eval"), ("loss",))
    )
    assert [(s.run, s.tag) for s in only] == [("eval", "loss"), ("train", "loss")]
    assert series.list_series(connection, exp_id, TENSORS, Selection("pr_curves")) == []


def test_an_unknown_plugin_is_a_bad_request(connection: apsw.Connection, exp_id: int) -> None:
    with pytest.raises(BadRequest, match=r"plugin='scalar'.*known: scalars"):
        series.list_series(connection, exp_id, SCALARS, Selection("scalar"))
    with pytest.raises(BadRequest, match="histograms"):
        series.list_series(connection, exp_id, TENSORS, Selection("images"))
    assert "images" in series.known_plugins(connection, exp_id, BLOB_SEQUENCES)


def test_bounds_are_checked() -> None:
    with pytest.raises(BadRequest, match="greater than step_max"):
        Bounds(step_min=5, step_max=4)
    with pytest.raises(BadRequest, match="greater than index_max"):
        Bounds(index_min=3, index_max=2)
    with pytest.raises(BadRequest):
        Bounds(latest=0)
    with pytest.raises(BadRequest):
        Bounds(downsample=-1)


def test_read_scalars_with_filters_in_order(connection: apsw.Connection, exp_id: int) -> None:
    found = series.list_series(connection, exp_id, SCALARS, Selection("scalars", ("train",)))
    by_tag = {c.tag: c for c in series.read_scalars(connection, found, Bounds())}
    loss = by_tag["loss"]
    assert loss.steps.tolist() == list(range(TRAIN_STEPS))
    for step, value in NON_FINITE.items():
        got = loss.values[step]
        assert (math.isnan(got) and math.isnan(value)) or got == value
    # Step range, then latest, then downsample: the first and last of what latest kept.
    bounds = Bounds(step_min=100, step_max=199, latest=50, downsample=10)
    (acc,) = series.read_scalars(connection, [s for s in found if s.tag == "acc"], bounds)
    assert len(acc.steps) == 10 and acc.steps[0] == 150 and acc.steps[-1] == 199


def test_read_tensors_and_blob_sequences(connection: apsw.Connection, exp_id: int) -> None:
    hist = series.list_series(connection, exp_id, TENSORS, Selection("histograms", ("train",)))
    (weights,) = series.read_tensors(connection, hist, Bounds(latest=2))
    assert [p.step for p in weights.points] == [280, 290]
    assert weights.points[0].dtype == "DT_DOUBLE" and isinstance(weights.points[0].value, list)

    images = series.list_series(
        connection, exp_id, BLOB_SEQUENCES, Selection("images", ("train",), ("multi",))
    )
    (multi,) = series.read_blob_sequences(connection, "exp", images, Bounds(index_min=2))
    assert [s.step for s in multi.steps] == list(MULTI_STEPS)
    # Width and height come first (TensorBoard's image layout), then the images.
    assert all(len(s.keys) == IMAGES_PER_STEP for s in multi.steps)
    key = parse_blob_key(multi.steps[0].keys[0])
    assert key is not None and key.experiment == "exp"


def test_too_large(
    connection: apsw.Connection, exp_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = series.list_series(connection, exp_id, SCALARS, Selection("scalars"))
    series.check_size(connection, SCALARS, found, Bounds())
    monkeypatch.setitem(series.MAX_POINTS, "scalars", 100)
    with pytest.raises(TooLarge, match="the limit is 100"):
        series.check_size(connection, SCALARS, found, Bounds())
    # Bounds that keep the answer under the limit make it fit.
    series.check_size(connection, SCALARS, found, Bounds(latest=10))
    monkeypatch.setattr(series, "MAX_SERIES_PER_REQUEST", 2)
    with pytest.raises(TooLarge, match="series match"):
        series.check_size(connection, SCALARS, found, Bounds(latest=1))
