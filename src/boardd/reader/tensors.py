"""Turning a stored tensor (TF dtype number, shape, bytes) back into values.

The protobuf modules and the tensor packing are imported on first use, not with this module:
the HTTP API imports it, and a scalar route needs neither (``boardd serve`` starts faster).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@functools.cache
def _numeric_dtypes() -> dict[int, np.dtype[np.generic]]:
    from boardd.reader.tensor_protos import NUMERIC_DTYPES

    return NUMERIC_DTYPES


def dtype_name(dtype: int) -> str:
    """TensorFlow's name of a DataType number (``DT_FLOAT``), or ``DT_<n>`` if unknown."""
    from boardd.proto import types_pb2

    try:
        return str(types_pb2.DataType.Name(dtype))
    except ValueError:
        return f"DT_{dtype}"


def decode_tensor(
    dtype: int, shape: tuple[int, ...], content: bytes
) -> npt.NDArray[np.generic] | list[bytes]:
    """The values of a stored tensor: a numpy array for numeric dtypes (in the stored shape),
    a flat list of byte strings for ``DT_STRING``.

    Raises ValueError for a dtype boardd does not store or content of the wrong size.
    """
    numpy_dtype = _numeric_dtypes().get(dtype)
    if numpy_dtype is not None:
        import numpy as np  # imported by the first tensor read, not with this module

        array = np.frombuffer(content, dtype=numpy_dtype)
        return array.reshape(shape)
    from boardd.proto import tensor_pb2, types_pb2

    if dtype == types_pb2.DT_STRING:
        proto = tensor_pb2.TensorProto.FromString(content)
        return list(proto.string_val)
    raise ValueError(f"tensor dtype {dtype_name(dtype)} is not stored by boardd")
