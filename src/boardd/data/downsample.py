"""Query-time downsampling: at most k points of a series, chosen by step so that series sharing
steps keep the same steps.

A column of steps may be a numpy array or anything else indexable of ints (the column cache
holds read-only memoryviews). :func:`downsample_indices` has a pure-Python form, used while
``boardd serve`` has not imported numpy yet (:mod:`boardd.data.accel`); both choose the same
points.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from boardd.data import accel
from boardd.store import block_layout, splitmix

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Downsampling is seeded with a constant: the choice depends only on the set of steps.
DOWNSAMPLE_SEED = block_layout.DOWNSAMPLE_SEED

#: Indices of points (ascending): a numpy array, or an ``array("q")`` from the pure-Python form.
Indices: TypeAlias = "npt.NDArray[np.intp] | array[int]"
#: A column of steps: a numpy array, a memoryview of int64, a list...
StepColumn: TypeAlias = "npt.NDArray[np.int64] | Sequence[int] | memoryview"


def downsample_indices(
    steps: StepColumn, k: int, switch: accel.NumpySwitch | None = None
) -> Indices:
    """Indices (ascending) of at most ``k`` of these points (sorted by step, each step once, as
    every stored series has them; both forms then choose the same points): the first and
    the last (a chart starts and ends where the series does; ``k == 1`` keeps the last), and
    between them the ``k - 2`` of lowest seeded priority, a uniform sample. The choice depends
    only on the set of steps, so series that share steps keep the same steps. ``switch``:
    whether numpy may be used yet (:mod:`boardd.data.accel`)."""
    n = len(steps)
    np = accel.numpy_of(switch)
    if np is None:
        return _python_indices(steps, n, k)
    if k >= n:
        return np.arange(n)  # type: ignore[no-any-return]
    if k <= 0:
        return np.arange(0)  # type: ignore[no-any-return]
    if k == 1:
        return np.array([n - 1])  # type: ignore[no-any-return]
    inner = np.arange(0)
    if k > 2:
        from boardd.store.reservoir import step_priorities

        priorities = step_priorities(DOWNSAMPLE_SEED, np.asarray(steps, dtype=np.int64)[1:-1])
        inner = np.sort(np.argpartition(priorities, k - 3)[: k - 2]) + 1
    return np.concatenate(([0], inner, [n - 1])).astype(np.intp)  # type: ignore[no-any-return]


def _python_indices(steps: StepColumn, n: int, k: int) -> array[int]:
    """:func:`downsample_indices` without numpy (splitmix64's priorities are a bijection of
    steps, and steps are distinct: no ties, so the choice is the same)."""
    if k >= n:
        return array("q", range(n))
    if k <= 0:
        return array("q")
    if k == 1:
        return array("q", [n - 1])
    chosen = array("q", [0])
    if k > 2:
        listed = steps.tolist() if hasattr(steps, "tolist") else list(steps)
        priorities = splitmix.step_priorities(DOWNSAMPLE_SEED, listed[1 : n - 1])
        # The (k-2)-th lowest priority, then every point at or below it: k - 2 of them.
        bound = heapq.nsmallest(k - 2, priorities)[-1]
        chosen.extend(i for i, p in enumerate(priorities, 1) if p <= bound)
    chosen.append(n - 1)
    return chosen


def extremes_indices(
    steps: StepColumn, values: Any, k: int, switch: accel.NumpySwitch | None = None
) -> npt.NDArray[np.intp]:
    """Indices (ascending) of at most ``k`` of these points (sorted by step) that keep every
    extreme: the step range is cut into ``k // 4`` equal buckets and each keeps its first,
    lowest, highest and last point, so a line through them reaches every spike the series
    has (for a chart: min/max-preserving downsampling). NaN is skipped by lowest/highest;
    ±inf counts as a value. Fewer than 4 points asked for: :func:`downsample_indices`."""
    np = accel.load(switch)  # no pure-Python form: numpy now, for the other kernels too
    at: Any = np.asarray(steps, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    n = int(at.shape[0])
    if k >= n:
        return np.arange(n)  # type: ignore[no-any-return]
    buckets = k // 4
    if buckets < 1:
        return np.asarray(downsample_indices(at, k), dtype=np.intp)  # type: ignore[no-any-return]
    first = int(at[0])
    span = int(at[-1]) - first + 1
    # In floating point: (step - first) * buckets could overflow int64 for huge steps.
    bucket = ((at - first).astype(np.float64) * buckets / span).astype(np.int64)
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
    return np.unique(np.concatenate(kept)).astype(np.intp)  # type: ignore[no-any-return]
