"""Stored values to values JSON can carry."""

from __future__ import annotations

import json
import math

import numpy as np

from boardd.data.values import finite_or_text, float_text, json_floats, tensor_value, text_or_base64


def test_non_finite_floats_are_spelled_as_tensorboard_does() -> None:
    assert [finite_or_text(v) for v in (1.5, math.nan, math.inf, -math.inf)] == [
        1.5,
        "NaN",
        "Infinity",
        "-Infinity",
    ]
    assert [float_text(v) for v in (0.1, math.nan, -math.inf)] == ["0.1", "NaN", "-Infinity"]
    listed = json_floats(np.array([1.0, math.nan, math.inf]))
    assert json.dumps(listed, allow_nan=False) == '[1.0, "NaN", "Infinity"]'
    # Any column with tolist(): a memoryview as the column cache holds them, too. Finite values
    # whose sum overflows stay numbers.
    held = memoryview(np.array([1e308, 1e308, -math.inf, 2.5])).toreadonly()
    assert json_floats(held) == [1e308, 1e308, "-Infinity", 2.5]
    assert json_floats(memoryview(np.array([1e308, 1e308]))) == [1e308, 1e308]
    assert json_floats(np.array([])) == []


def test_tensors() -> None:
    content = np.array([[1.0, math.nan], [3.0, 4.0]], dtype="<f8").tobytes()
    assert tensor_value(2, (2, 2), content) == [[1.0, "NaN"], [3.0, 4.0]]  # DT_DOUBLE
    assert tensor_value(3, (), np.array(7, dtype="<i4").tobytes()) == 7  # DT_INT32, rank 0
    wrong = tensor_value(2, (3,), content)
    assert set(wrong) == {"error"}
    assert text_or_base64("✓".encode()) == "✓"
    assert text_or_base64(b"\xff\x00") == {"base64": "/wA="}
