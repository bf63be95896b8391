"""Stored values → values JSON can carry: non-finite floats spelled as TensorBoard spells them,
tensors as nested lists, bytes as text or base64."""

from __future__ import annotations

import base64
import math
from typing import Any

from boardd.reader.tensors import decode_tensor


def finite_or_text(value: float) -> float | str:
    """A float JSON can carry, or TensorBoard's spelling of a non-finite one."""
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def float_text(value: float) -> str:
    """A float as text that reads back exactly (``repr``), non-finite ones spelled NaN,
    Infinity, -Infinity (for CSV)."""
    spelled = finite_or_text(value)
    return spelled if isinstance(spelled, str) else repr(spelled)


def json_floats(values: Any) -> list[Any]:
    """A float column (anything with ``tolist()``: a memoryview, a numpy array) as a list JSON
    can carry."""
    listed: list[Any] = values.tolist()
    # A float sum is finite only if every term is (±inf and NaN carry through): one pass in
    # C, without numpy. A sum that overflows only costs the spelling pass below, a no-op.
    if not math.isfinite(sum(listed)):
        listed = [finite_or_text(v) for v in listed]
    return listed


def text_or_base64(value: bytes) -> Any:
    """UTF-8 text as a string, other bytes as ``{"base64": …}``."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def tensor_value(dtype: int, shape: tuple[int, ...], content: bytes) -> Any:
    """A stored tensor as nested lists of its shape (a bare value for rank 0): numbers (non-finite
    ones spelled), booleans, strings (:func:`text_or_base64`), complex numbers as [re, im]; one
    that cannot be decoded is ``{"error": message}``."""
    try:
        values = decode_tensor(dtype, shape, content)
    except ValueError as exc:
        return {"error": str(exc)}
    if isinstance(values, list):
        return [text_or_base64(v) for v in values]
    import numpy as np  # decode_tensor has imported it

    if values.dtype.kind == "c":
        values = np.stack([values.real, values.imag], axis=-1)
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        return np.vectorize(finite_or_text, otypes=[object])(values).tolist()
    return values.tolist()
