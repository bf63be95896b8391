"""The client's decoding of JSON answers into numpy: TensorBoard's non-finite spellings, tensor
values of every dtype, string tensors."""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from boardd.client.answers import BoarddError, TensorDatum

NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_NUMPY_DTYPES = {
    "DT_FLOAT": np.float32,
    "DT_DOUBLE": np.float64,
    "DT_HALF": np.float16,
    "DT_BFLOAT16": np.float32,
    "DT_INT8": np.int8,
    "DT_INT16": np.int16,
    "DT_INT32": np.int32,
    "DT_INT64": np.int64,
    "DT_UINT8": np.uint8,
    "DT_UINT16": np.uint16,
    "DT_UINT32": np.uint32,
    "DT_UINT64": np.uint64,
    "DT_BOOL": np.bool_,
    "DT_COMPLEX64": np.complex64,
    "DT_COMPLEX128": np.complex128,
}


def floats(values: Sequence[float | str]) -> npt.NDArray[np.float64]:
    """JSON scalar values (non-finite ones spelled as TensorBoard does) as float64."""
    return np.array([NON_FINITE[v] if isinstance(v, str) else v for v in values], dtype=np.float64)


def concat(arrays: list[npt.NDArray[Any]], dtype: type[np.generic]) -> npt.NDArray[Any]:
    """The arrays end to end (an empty array of ``dtype`` for none)."""
    return np.concatenate(arrays) if arrays else np.array([], dtype=dtype)


def tensor_datum(datum: Mapping[str, Any]) -> TensorDatum:
    """One point of a tensor answer, its values as a numpy array of their dtype and shape."""
    dtype = str(datum["dtype"])
    shape = tuple(int(d) for d in datum["shape"])
    return TensorDatum(
        int(datum["step"]), float(datum["wall_time"]), dtype, shape, _values(datum["values"], dtype)
    )


def _values(values: Any, dtype: str) -> npt.NDArray[Any]:
    """The server's JSON tensor values as a numpy array of their dtype."""
    if isinstance(values, dict) and "error" in values:
        raise BoarddError(0, "undecodable", f"the server could not decode a tensor: {values}")
    if dtype == "DT_STRING":
        flat = np.empty(_count(values), dtype=object)
        flat[:] = [_text(v) for v in _flatten(values)]
        return flat.reshape(_shape_of(values))
    numpy_dtype = _NUMPY_DTYPES.get(dtype)
    if numpy_dtype is None:
        return np.array(values, dtype=object)
    if dtype.startswith("DT_COMPLEX"):
        pairs = np.array(unspell(values), dtype=np.float64)
        return (pairs[..., 0] + 1j * pairs[..., 1]).astype(numpy_dtype)
    return np.array(unspell(values), dtype=numpy_dtype)


def unspell(values: Any) -> Any:
    """Nested lists with TensorBoard's non-finite spellings turned back into floats."""
    if isinstance(values, list):
        return [unspell(v) for v in values]
    if isinstance(values, str):
        return NON_FINITE[values]
    return values


def _text(value: Any) -> str | bytes:
    if isinstance(value, dict):
        return base64.b64decode(value["base64"])
    return str(value)


def _flatten(values: Any) -> list[Any]:
    if isinstance(values, list):
        return [leaf for v in values for leaf in _flatten(v)]
    return [values]


def _count(values: Any) -> int:
    return len(_flatten(values))


def _shape_of(values: Any) -> tuple[int, ...]:
    shape: list[int] = []
    while isinstance(values, list):
        shape.append(len(values))
        if not values:
            break
        values = values[0]
    return tuple(shape)
