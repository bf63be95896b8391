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
