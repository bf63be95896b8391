"""Query-time downsampling: at most k points of a series, chosen by step so that series sharing
steps keep the same steps."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from boardd.store.reservoir import step_priorities

#: Downsampling is seeded with a constant: the choice depends only on the set of steps.
DOWNSAMPLE_SEED = 0x626F61726464


def downsample_indices(steps: npt.NDArray[np.int64], k: int) -> npt.NDArray[np.intp]:
    """Indices (ascending) of at most ``k`` points: the last one, and the ``k - 1`` others of
    lowest seeded priority. The choice depends only on the set of steps, so series that share
    steps keep the same steps."""
    n = int(steps.shape[0])
    if k >= n:
        return np.arange(n)
    if k <= 0:
        return np.arange(0)
    if k == 1:
        return np.array([n - 1])
    priorities = step_priorities(DOWNSAMPLE_SEED, steps[:-1])
    chosen = np.argpartition(priorities, k - 2)[: k - 1]
    return np.sort(np.append(chosen, n - 1))
