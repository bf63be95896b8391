"""Tests of boardd.store.sampling: --samples_per_plugin parsing and capacity resolution."""

from __future__ import annotations

import pytest

from boardd.reader.decoded import DataClass
from boardd.store.sampling import (
    DATA_CLASS_CAPACITIES,
    DEFAULT_CAPACITIES,
    capacity_for,
    parse_samples_per_plugin,
)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("", {}),
        ("  ,, ", {}),
        ("scalars=1000", {"scalars": 1000}),
        (
            "scalars=1000,images=all,audio=0,*=50",
            {"scalars": 1000, "images": None, "audio": None, "*": 50},
        ),
        (" scalars = 500 , images=ALL,", {"scalars": 500, "images": None}),
        ("my_plugin=007", {"my_plugin": 7}),
    ],
)
def test_valid_specs(spec: str, expected: dict[str, int | None]) -> None:
    assert parse_samples_per_plugin(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("scalars", r"'scalars' is not of the form plugin=number"),
        ("scalars=1000;images=5", r"'1000;images=5' \(for scalars\) is not a number"),
        ("=5", r"no plugin name before '='.*images=5"),
        ("images=-1", r"'-1' \(for images\) is not a number of samples.*'all'"),
        ("images=1.5", r"'1.5' \(for images\) is not a number"),
        ("images=", r"'' \(for images\) is not a number"),
        ("images=1e3", r"'1e3'"),
        ("images=٣", r"is not a number"),  # Only ASCII digits.
        ("images=1=2", r"'1=2'"),
        ("images=5,images=all", r"'images' is named twice \(5 and all\)"),
        ("images 5=3", r"plugin name 'images 5' contains spaces"),
    ],
)
def test_invalid_specs_say_what_to_fix(spec: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_samples_per_plugin(spec)
    assert caught.match(message)
    # The flag is named once, by whoever parses the command line (never twice, never the
    # other spelling): the message itself names none.
    assert "--samples" not in str(caught.value)


def test_defaults() -> None:
    assert dict(DEFAULT_CAPACITIES) == {
        "scalars": None,
        "histograms": 500,
        "pr_curves": 100,
        "text": 100,
        "images": 10,
        "audio": 10,
    }
    assert capacity_for("scalars", DataClass.SCALAR) is None
    assert capacity_for("histograms", DataClass.TENSOR) == 500
    assert capacity_for("pr_curves", DataClass.TENSOR) == 100
    assert capacity_for("text", DataClass.TENSOR) == 100
    assert capacity_for("images", DataClass.BLOB_SEQUENCE) == 10
    assert capacity_for("audio", DataClass.BLOB_SEQUENCE) == 10
    # Plugins without a default of their own: by data class.
    assert capacity_for("custom_scalars", DataClass.SCALAR) is None
    assert capacity_for("mesh", DataClass.TENSOR) == 100
    assert capacity_for("graphs", DataClass.BLOB_SEQUENCE) == 10
    assert set(DATA_CLASS_CAPACITIES) == set(DataClass)
    with pytest.raises(TypeError):
        DEFAULT_CAPACITIES["scalars"] = 1  # type: ignore[index]


def test_overrides_then_wildcard_then_defaults() -> None:
    overrides = parse_samples_per_plugin("scalars=1000,images=all,audio=0,*=50")
    assert capacity_for("scalars", DataClass.SCALAR, overrides) == 1000
    assert capacity_for("images", DataClass.BLOB_SEQUENCE, overrides) is None
    # 0 keeps everything, as TensorBoard's command line reads it.
    assert capacity_for("audio", DataClass.BLOB_SEQUENCE, overrides) is None
    # `*` sets every plugin not named, those with defaults of their own included.
    assert capacity_for("histograms", DataClass.TENSOR, overrides) == 50
    assert capacity_for("custom_scalars", DataClass.SCALAR, overrides) == 50
    without_wildcard = parse_samples_per_plugin("histograms=all")
    assert capacity_for("histograms", DataClass.TENSOR, without_wildcard) is None
    assert capacity_for("text", DataClass.TENSOR, without_wildcard) == 100
    assert capacity_for("mesh", DataClass.TENSOR, {}) == 100
