"""Query-time downsampling: at most k points of a series, chosen by step so that series sharing
steps keep the same steps."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from boardd.store.reservoir import step_priorities

#: Downsampling is seeded with a constant: the choice depends only on the set of steps.
DOWNSAMPLE_SEED = 0x626F61726464


def downsample_indices(steps: npt.NDArray[np.int64], k: int) -> npt.NDArray[np.intp]:
    """Indices (ascending) of at most ``k`` of these points (sorted by step): the first and
    the last (a chart starts and ends where the series does; ``k == 1`` keeps the last), and
    between them the ``k - 2`` of lowest seeded priority, a uniform sample. The choice depends
    only on the set of steps, so series that share steps keep the same steps."""
    n = int(steps.shape[0])
    if k >= n:
        return np.arange(n)
    if k <= 0:
        return np.arange(0)
    if k == 1:
        return np.array([n - 1])
    inner = np.arange(0)
    if k > 2:
        priorities = step_priorities(DOWNSAMPLE_SEED, steps[1:-1])
        inner = np.sort(np.argpartition(priorities, k - 3)[: k - 2]) + 1
    return np.concatenate(([0], inner, [n - 1])).astype(np.intp)


def extremes_indices(
    steps: npt.NDArray[np.int64], values: npt.NDArray[np.float64], k: int
) -> npt.NDArray[np.intp]:
    """Indices (ascending) of at most ``k`` of these points (sorted by step) that keep every
    extreme: the step range is cut into ``k // 4`` equal buckets and each keeps its first,
    lowest, highest and last point, so a line through them reaches every spike the series
    has (for a chart: min/max-preserving downsampling). NaN is skipped by lowest/highest;
    ±inf counts as a value. Fewer than 4 points asked for: :func:`downsample_indices`."""
    n = int(steps.shape[0])
    if k >= n:
        return np.arange(n)
    buckets = k // 4
    if buckets < 1:
        return downsample_indices(steps, k)
    first = int(steps[0])
    span = int(steps[-1]) - first + 1
    # In floating point: (step - first) * buckets could overflow int64 for huge steps.
    bucket = ((steps - first).astype(np.float64) * buckets / span).astype(np.int64)
    starts = np.flatnonzero(np.diff(bucket)) + 1
    starts = np.concatenate(([0], starts))
    ends = np.concatenate((starts[1:], [n])) - 1
    kept = [starts, ends]
    for fill, reduce in ((np.inf, np.minimum), (-np.inf, np.maximum)):
        filled = np.where(np.isnan(values), fill, values)
        best = reduce.reduceat(filled, starts)
        group = np.repeat(np.arange(starts.shape[0]), np.diff(np.concatenate((starts, [n]))))
        hits = np.flatnonzero(filled == best[group])
        # The first hit of each bucket (hits are ascending, so np.unique's first index).
        _, first_hit = np.unique(group[hits], return_index=True)
        kept.append(hits[first_hit])
    return np.unique(np.concatenate(kept)).astype(np.intp)
