"""How scalar blocks are cut (:mod:`boardd.store.blocks`), without the codec's numpy: opening a
store reads these, and ``boardd serve`` imports numpy only after its first answers."""

from __future__ import annotations

from typing import Final

#: Points of a sealed block (a block cut by a preemption and sealed again may hold fewer).
BLOCK_POINTS: Final = 8192
#: Points a block's ``segments`` summarise each.
SEGMENT_POINTS: Final = 128
#: Points of each block kept aside, by lowest downsampling priority (``low``): a uniform
#: downsampling of a long series is chosen from them, not from every point.
LOW_POINTS: Final = 64
#: The seed of query-time uniform downsampling (:mod:`boardd.data.downsample`): a constant, so
#: that the choice depends only on the set of steps, and blocks can keep their part of it.
DOWNSAMPLE_SEED: Final = 0x626F61726464
#: Points the open tail reaches before the writer seals its oldest points into blocks. Above
#: BLOCK_POINTS, so that a series read back and forth across that size is not sealed and
#: unsealed by every commit.
SEAL_AT: Final = 2 * BLOCK_POINTS
