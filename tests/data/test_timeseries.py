"""The time-series dashboard's conversions of stored data: combined tag descriptions,
histogram bins, image samples, image content types."""

from __future__ import annotations

import math

import numpy as np

from boardd.data.values import tensor_value
from boardd.plugins.timeseries.data import (
    histogram_bins,
    image_sample,
    tag_descriptions,
)
from boardd.proto import types_pb2


def test_one_description_per_tag_is_kept_as_is() -> None:
    got = tag_descriptions(
        [("a", "loss", "the loss"), ("b", "loss", "the loss"), ("a", "acc", ""), ("b", "lr", "")]
    )
    assert got == {"loss": "the loss"}


def test_several_descriptions_are_combined_with_their_runs() -> None:
    got = tag_descriptions(
        [
            ("z", "loss", "second"),
            ("b", "loss", "first"),
            ("a", "loss", "first"),
            ("c", "loss", ""),
        ]
    )
    assert got["loss"] == (
        "# Multiple descriptions\n## For runs: a, b\nfirst\n## For run: z\nsecond"
    )


def test_histogram_bins_from_a_stored_tensor() -> None:
    rows = np.array([[0.0, 0.5, 3.0], [0.5, math.inf, 1.0]], dtype="<f8")
    value = tensor_value(types_pb2.DT_DOUBLE, (2, 3), rows.tobytes())
    assert histogram_bins(value) == [
        {"min": 0.0, "max": 0.5, "count": 3.0},
        {"min": 0.5, "max": "Infinity", "count": 1.0},
    ]
    assert histogram_bins([[math.nan, 1.0, 2]]) == [{"min": "NaN", "max": 1.0, "count": 2}]


def test_histogram_bins_of_other_shapes_are_none() -> None:
    assert histogram_bins([]) == []
    assert histogram_bins(3.0) == []
    assert histogram_bins({"error": "cannot decode"}) == []
    assert histogram_bins([[1.0, 2.0]]) == []


def test_image_sample_skips_width_and_height() -> None:
    keys = ("w", "h", "img0", "img1")
    assert [image_sample(keys, i) for i in range(3)] == ["img0", "img1", None]
    # Negative samples index as Python does, as TensorBoard's do.
    assert [image_sample(keys, i) for i in (-1, -2, -3, -6, -7)] == ["h", "w", "img1", "w", None]
    assert image_sample(("w", "h"), 0) is None
