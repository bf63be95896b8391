"""Histograms as TensorBoard's histogram and distribution dashboards show them: ``[k, 3]`` bucket
rows (left edge, right edge, count) and their compression to a fixed set of percentiles.

The compression maps each basis point ``b`` (hundredths of a percent of the total count) to
the value at which the cumulative count reaches ``b``: the bucket where it does so is found,
and ``b`` placed linearly between that bucket's edges (the outer edges clipped to the
histogram's first left and last right edge). A basis point no bucket reaches is the histogram's
right edge. The arithmetic is done in the same order as TensorBoard's, so that equal buckets
compress to equal floats.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: The percentiles TensorBoard's distributions show, in basis points: the median, ±1, ±2 and
#: ±3 standard deviations of a normal distribution, and the extremes.
NORMAL_BASIS_POINTS: tuple[int, ...] = (0, 668, 1587, 3085, 5000, 6915, 8413, 9332, 10000)


def _interpolate(x: float, x_lo: float, x_hi: float, y_lo: float, y_hi: float) -> float:
    """The point of [y_lo, y_hi] that corresponds to x in [x_lo, x_hi] (x_hi > x_lo)."""
    return float(y_lo + (x - x_lo) * float(y_hi - y_lo) / (x_hi - x_lo))


def compress(
    buckets: npt.NDArray[np.float64], basis_points: tuple[int, ...] = NORMAL_BASIS_POINTS
) -> list[tuple[int, float]]:
    """``[(basis_point, value), ...]`` for a ``[k, 3]`` array of buckets (empty: all zero)."""
    if buckets.size == 0:
        return [(bp, 0.0) for bp in basis_points]
    lowest = float(buckets[0, 0])
    highest = float(buckets[-1, 1])
    rights = buckets[:, 1].tolist()
    counts = buckets[:, 2]
    total = float(counts.sum()) or 1.0
    # Cumulative share of the count at each bucket's right edge, in basis points.
    cumulative = (counts * basis_points[-1] / total).cumsum()
    shares: list[float] = cumulative.tolist()
    out: list[tuple[int, float]] = []
    for bp in basis_points:
        # The first bucket whose cumulative share passes bp and that holds any count.
        index = int(np.searchsorted(cumulative, bp, side="right"))
        while index < len(shares):
            before = shares[index - 1] if index > 0 else 0.0
            if shares[index] != before:
                break
            index += 1
        else:
            break  # no bucket reaches bp, nor any later basis point
        left = lowest if index == 0 or before == 0 else max(rights[index - 1], lowest)
        right = min(rights[index], highest)
        out.append((bp, _interpolate(bp, before, shares[index], left, right)))
    out.extend((bp, highest) for bp in basis_points[len(out) :])
    return out


def as_buckets(value: npt.NDArray[np.generic]) -> npt.NDArray[np.float64]:
    """A stored histogram tensor as ``[k, 3]`` float64 rows (a ``[0, 3]`` array if empty).

    Raises ValueError for a tensor of another shape."""
    array = np.asarray(value, dtype=np.float64)
    if array.size == 0:
        return array.reshape(0, 3)
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"a histogram is a [k, 3] tensor, not {list(array.shape)}")
    return array
