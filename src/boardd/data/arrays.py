"""Tensor series as numpy arrays, for the routes that compute on the values (histogram
compression, PR curves, text tables) rather than pass them through as JSON
(:func:`boardd.data.series.read_tensors` converts them for JSON)."""

from __future__ import annotations

from typing import Any, NamedTuple

import apsw
import numpy as np
import numpy.typing as npt

from boardd.data.downsample import downsample_indices
from boardd.data.errors import DataError
from boardd.reader.tensors import decode_tensor, dtype_name
from boardd.store import queries
from boardd.store.queries import SeriesInfo
from boardd.store.sampling import kept_indices


class ArrayPoint(NamedTuple):
    """One tensor point: numbers in their stored dtype and shape; strings as an object array
    of byte strings in the stored shape."""

    step: int
    wall_time: float
    value: npt.NDArray[Any]


def read_arrays(
    connection: apsw.Connection, series: SeriesInfo, downsample: int | None = None
) -> list[ArrayPoint]:
    """The points of one tensor series by step, at most ``downsample`` of them (chosen as
    every downsampled read chooses them: :func:`boardd.data.downsample.downsample_indices`).

    :class:`DataError` if a stored tensor cannot be decoded."""
    rows = queries.tensor_rows(connection, series.id)
    chosen = kept_indices(series.run, [r.step for r in rows], series.sample)
    if chosen is not None:
        rows = [rows[i] for i in chosen]
    if downsample is not None:
        steps = [r.step for r in rows]
        rows = [rows[i] for i in downsample_indices(steps, downsample).tolist()]
    out = []
    for r in rows:
        try:
            decoded = decode_tensor(r.dtype, r.shape, r.content)
        except ValueError as exc:
            raise DataError(
                f"cannot decode the {dtype_name(r.dtype)} tensor of run {series.run!r}, "
                f"tag {series.tag!r} at step {r.step}: {exc}"
            ) from exc
        if isinstance(decoded, list):
            strings = np.empty(len(decoded), dtype=object)
            strings[:] = decoded
            try:
                value: npt.NDArray[Any] = strings.reshape(r.shape)
            except ValueError as exc:
                raise DataError(
                    f"the string tensor of run {series.run!r}, tag {series.tag!r} at step "
                    f"{r.step} has {len(decoded)} values for shape {list(r.shape)}"
                ) from exc
        else:
            value = decoded
        out.append(ArrayPoint(r.step, r.wall_time, value))
    return out
