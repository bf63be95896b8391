"""What TensorProto and HistogramProto hold, as boardd keeps it: a scalar tensor's one value,
a tensor's packed bytes (TensorPoint's dtype, shape and content) and a TF1 histogram's rows.

TensorFlow writes a tensor's values either packed in ``tensor_content`` or in a typed field
(``float_val``, ``half_val``…), possibly fewer of them than its shape holds; every form ends up
in one packing here: little-endian values in C order, or for strings a TensorProto with only
``string_val`` set. What cannot be read that way raises :class:`Rejected`.
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from boardd.proto import histogram_pb2, tensor_pb2, types_pb2

_DT_FLOAT: Final = types_pb2.DT_FLOAT
_DT_STRING: Final = types_pb2.DT_STRING
_DT_BFLOAT16: Final = types_pb2.DT_BFLOAT16

# For each numeric dtype: how its values are packed (little-endian numpy dtype) and which
# TensorProto field holds them when tensor_content is empty. Half and bfloat16 values travel as
# their 16-bit patterns in half_val; the 8-bit floats as raw bytes in float8_val.
_NUMERIC: Final[dict[int, tuple[np.dtype[np.generic], str]]] = {
    types_pb2.DT_FLOAT: (np.dtype("<f4"), "float_val"),
    types_pb2.DT_DOUBLE: (np.dtype("<f8"), "double_val"),
    types_pb2.DT_HALF: (np.dtype("<f2"), "half_val"),
    types_pb2.DT_BFLOAT16: (np.dtype("<u2"), "half_val"),
    types_pb2.DT_INT8: (np.dtype("i1"), "int_val"),
    types_pb2.DT_INT16: (np.dtype("<i2"), "int_val"),
    types_pb2.DT_INT32: (np.dtype("<i4"), "int_val"),
    types_pb2.DT_INT64: (np.dtype("<i8"), "int64_val"),
    types_pb2.DT_UINT8: (np.dtype("u1"), "int_val"),
    types_pb2.DT_UINT16: (np.dtype("<u2"), "int_val"),
    types_pb2.DT_UINT32: (np.dtype("<u4"), "uint32_val"),
    types_pb2.DT_UINT64: (np.dtype("<u8"), "uint64_val"),
    types_pb2.DT_BOOL: (np.dtype("?"), "bool_val"),
    types_pb2.DT_QINT8: (np.dtype("i1"), "int_val"),
    types_pb2.DT_QUINT8: (np.dtype("u1"), "int_val"),
    types_pb2.DT_QINT16: (np.dtype("<i2"), "int_val"),
    types_pb2.DT_QUINT16: (np.dtype("<u2"), "int_val"),
    types_pb2.DT_QINT32: (np.dtype("<i4"), "int_val"),
    types_pb2.DT_COMPLEX64: (np.dtype("<c8"), "scomplex_val"),
    types_pb2.DT_COMPLEX128: (np.dtype("<c16"), "dcomplex_val"),
    types_pb2.DT_FLOAT8_E5M2: (np.dtype("u1"), "float8_val"),
    types_pb2.DT_FLOAT8_E4M3FN: (np.dtype("u1"), "float8_val"),
    types_pb2.DT_FLOAT8_E4M3FNUZ: (np.dtype("u1"), "float8_val"),
    types_pb2.DT_FLOAT8_E4M3B11FNUZ: (np.dtype("u1"), "float8_val"),
    types_pb2.DT_FLOAT8_E5M2FNUZ: (np.dtype("u1"), "float8_val"),
}

#: Little-endian numpy dtype of each numeric TF DataType (what TensorPoint.content holds).
NUMERIC_DTYPES: Final[dict[int, np.dtype[np.generic]]] = {k: v[0] for k, v in _NUMERIC.items()}

# Dtypes whose single value is a real number. Complex numbers are not; quantized integers
# need a scale that the tensor does not carry.
_SCALAR_DTYPES: Final = frozenset(
    {
        types_pb2.DT_FLOAT,
        types_pb2.DT_DOUBLE,
        types_pb2.DT_HALF,
        types_pb2.DT_BFLOAT16,
        types_pb2.DT_INT8,
        types_pb2.DT_INT16,
        types_pb2.DT_INT32,
        types_pb2.DT_INT64,
        types_pb2.DT_UINT8,
        types_pb2.DT_UINT16,
        types_pb2.DT_UINT32,
        types_pb2.DT_UINT64,
        types_pb2.DT_BOOL,
    }
)

#: The most bytes a tensor point may take: a larger one is refused (data loss). SQLite holds at
#: most 10**9 bytes in a value, and a point that large is no summary.
MAX_TENSOR_BYTES = 256 * 2**20
#: The most bytes a tensor given by fewer typed values than its shape may fill in to
#: (TensorFlow's rule: the last value repeats, none means zeros): a record of a few bytes must
#: not become gigabytes in memory and in the store.
MAX_EXPANDED_BYTES = 16 * 2**20


class Rejected(Exception):
    """A value that cannot be normalized (the event decoder makes it a DataLoss entry)."""


def dtype_label(dtype: int) -> str:
    """A DataType number as messages name it: ``DT_FLOAT``, or ``dtype <n>`` if unknown."""
    try:
        return str(types_pb2.DataType.Name(dtype))
    except ValueError:
        return f"dtype {dtype}"


def tensor_shape(tp: tensor_pb2.TensorProto) -> tuple[int, ...]:
    """A tensor's shape; Rejected if its rank or a dimension is unknown."""
    shape_proto = tp.tensor_shape
    if shape_proto.unknown_rank:
        raise Rejected("the tensor has an unknown rank")
    shape = tuple(d.size for d in shape_proto.dim)
    if any(size < 0 for size in shape):
        raise Rejected(f"the tensor has an unknown dimension (shape {list(shape)})")
    return shape


def _typed_values(
    tp: tensor_pb2.TensorProto, dtype: int, np_dtype: np.dtype[np.generic], field: str
) -> npt.NDArray[Any]:
    """The values of a tensor's typed ``*_val`` field as a flat array of ``np_dtype``."""
    if field == "float8_val":
        return np.frombuffer(tp.float8_val, dtype=np_dtype)
    values = getattr(tp, field)
    if field == "half_val":
        # 16-bit patterns widened to int32 on the wire.
        return np.array(values, dtype=np.int32).astype("<u2").view(np_dtype)
    if np_dtype.kind == "c":
        parts = np.array(values, dtype="<f4" if np_dtype.itemsize == 8 else "<f8")
        if parts.shape[0] % 2:
            raise Rejected("a complex tensor has an odd number of real/imaginary parts")
        return parts.view(np_dtype)
    if field == "int_val" and np_dtype.itemsize < 4:
        # int_val widens the narrow integer types to int32; narrow them back.
        return np.array(values, dtype=np.int32).astype(np_dtype)
    return np.array(values, dtype=np_dtype)


def tensor_scalar(tp: tensor_pb2.TensorProto) -> float:
    """The one real value of a single-element tensor, as float64."""
    dtype = tp.dtype
    content = tp.tensor_content
    if dtype == _DT_FLOAT and not content:
        # The common case (TF2 and tensorboard.summary scalars), kept free of numpy.
        floats = tp.float_val
        if len(floats) == 1 and not tp.tensor_shape.dim:
            return float(floats[0])
    for dim in tp.tensor_shape.dim:
        if dim.size != 1:
            raise Rejected(f"a tensor of shape {tensor_shape(tp)} is not a scalar")
    if dtype not in _SCALAR_DTYPES:
        raise Rejected(f"a {dtype_label(dtype)} tensor is not a real scalar")
    np_dtype, field = _NUMERIC[dtype]
    if content:
        if len(content) != np_dtype.itemsize:
            raise Rejected(
                f"a scalar {dtype_label(dtype)} tensor holds {len(content)} content bytes, "
                f"not {np_dtype.itemsize}"
            )
        values = np.frombuffer(content, dtype=np_dtype)
    else:
        values = _typed_values(tp, dtype, np_dtype, field)
        if values.shape[0] != 1:
            raise Rejected(f"a scalar tensor holds {values.shape[0]} values, not 1")
    if dtype == _DT_BFLOAT16:
        return float((values.astype(np.uint32) << 16).view(np.float32)[0])
    return float(values[0])


def tensor_content(tp: tensor_pb2.TensorProto) -> tuple[int, tuple[int, ...], bytes]:
    """A tensor as (dtype, shape, content) in TensorPoint's packing."""
    dtype = tp.dtype
    shape = tensor_shape(tp)
    if dtype == _DT_STRING:
        strings = tensor_pb2.TensorProto(dtype=_DT_STRING, string_val=tp.string_val)
        strings.tensor_shape.SetInParent()
        for size in shape:
            strings.tensor_shape.dim.add(size=size)
        packed = strings.SerializeToString(deterministic=True)
        if len(packed) > MAX_TENSOR_BYTES:
            raise Rejected(f"a string tensor of {len(packed)} bytes (more than {MAX_TENSOR_BYTES})")
        return dtype, shape, packed
    spec = _NUMERIC.get(dtype)
    if spec is None:
        raise Rejected(f"{dtype_label(dtype)} tensors are not supported")
    np_dtype, field = spec
    count = math.prod(shape)
    size = count * np_dtype.itemsize
    if size > MAX_TENSOR_BYTES:
        raise Rejected(
            f"a {dtype_label(dtype)} tensor of shape {list(shape)} would take {size} bytes "
            f"(more than {MAX_TENSOR_BYTES})"
        )
    content = tp.tensor_content
    if content:
        if len(content) != count * np_dtype.itemsize:
            raise Rejected(
                f"a {dtype_label(dtype)} tensor of shape {list(shape)} holds {len(content)} "
                f"content bytes, not {count * np_dtype.itemsize}"
            )
        return dtype, shape, content
    values = _typed_values(tp, dtype, np_dtype, field)
    given = values.shape[0]
    if given == count:
        return dtype, shape, values.tobytes()
    if given > count:
        raise Rejected(f"a {dtype_label(dtype)} tensor of shape {list(shape)} holds {given} values")
    if size > MAX_EXPANDED_BYTES:
        raise Rejected(
            f"a {dtype_label(dtype)} tensor of shape {list(shape)} gives {given} values for "
            f"{count}: filled in, {size} bytes (more than {MAX_EXPANDED_BYTES})"
        )
    # TensorFlow's rule for short typed fields: no value means zeros, and the last value
    # repeats to fill the shape (which covers "one value broadcasts").
    if given == 0:
        return dtype, shape, bytes(count * np_dtype.itemsize)
    filled = np.concatenate([values, np.full(count - given, values[-1], dtype=np_dtype)])
    return dtype, shape, filled.tobytes()


def histogram_tensor(histo: histogram_pb2.HistogramProto) -> tuple[tuple[int, ...], bytes]:
    """A TF1 histogram as [k, 3] float64 rows (left edge, right edge, count).

    Empty buckets at both ends are dropped so that ``min`` and ``max`` can stand in for the
    outer edges (TF1 bounds them by ±DBL_MAX) without making a bucket run backwards.
    """
    limits, counts = _histogram_arrays(histo)
    if len(counts) != len(limits):
        raise Rejected(
            f"a histogram has {len(counts)} bucket counts but {len(limits)} bucket limits"
        )
    nonempty = np.flatnonzero(counts > 0)
    if nonempty.size == 0:
        return (0, 3), b""
    start = int(nonempty[0])
    end = int(nonempty[-1])
    rows = np.empty((end - start + 1, 3), dtype="<f8")
    rows[0, 0] = histo.min
    rows[1:, 0] = limits[start:end]
    rows[:-1, 1] = limits[start:end]
    rows[-1, 1] = histo.max
    rows[:, 2] = counts[start : end + 1]
    return rows.shape, rows.tobytes()


def _histogram_arrays(
    histo: histogram_pb2.HistogramProto,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """bucket_limit and bucket as numpy arrays.

    Converting protobuf's repeated containers element by element costs a Python step per
    bucket; their packed wire form is already little-endian float64, so we
    read it straight from the serialized message (proto3 packs repeated doubles).
    """
    raw = histo.SerializeToString()
    found: dict[int, npt.NDArray[np.float64]] = {}
    pos = 0
    size = len(raw)
    while pos < size:
        key = raw[pos]
        field_number, wire_type = key >> 3, key & 7
        if key >= 0x80 or wire_type not in (1, 2):
            break  # not the layout we expect: use the slow, general conversion
        if wire_type == 1:
            pos += 9
            continue
        length, pos = _read_varint(raw, pos + 1)
        if length % 8 or pos + length > size:
            break
        found[field_number] = np.frombuffer(raw, dtype="<f8", count=length // 8, offset=pos)
        pos += length
    else:
        empty = np.empty(0, dtype=np.float64)
        return found.get(6, empty), found.get(7, empty)
    return (
        np.array(histo.bucket_limit, dtype=np.float64),
        np.array(histo.bucket, dtype=np.float64),
    )


def _read_varint(raw: bytes, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while pos < len(raw):
        byte = raw[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    return -1, pos
