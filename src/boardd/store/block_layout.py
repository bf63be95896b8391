"""How scalar blocks are cut (:mod:`boardd.store.blocks`), without the codec's numpy: opening a
store reads these, and ``boardd serve`` imports numpy only after its first answers."""

from __future__ import annotations

from typing import Final

import google_crc32c

#: Points of a block at most: every block of a series is full but its last one.
BLOCK_POINTS: Final = 8192
#: Points a block's ``segments`` summarise each.
SEGMENT_POINTS: Final = 256
#: Points of each block kept aside, by lowest downsampling priority (``low``): a uniform
#: downsampling of a long series is chosen from them, not from every point.
LOW_POINTS: Final = 64
#: The seed of query-time uniform downsampling (:mod:`boardd.data.downsample`): a constant, so
#: that the choice depends only on the set of steps, and blocks can keep their part of it.
DOWNSAMPLE_SEED: Final = 0x626F61726464
#: Points of the open tail and a new batch at which they are sealed (with the last block if it
#: is not full): a series of a few thousand points is in blocks, and a live append of a few
#: points costs a row each.
SEAL_AT: Final = 2048


def checksum(segments: bytes, low: bytes, data: bytes) -> int:
    """A block row's ``crc``: CRC-32C of its segments, low and data, in this order."""
    crc = google_crc32c.extend(google_crc32c.value(segments), low)
    return int(google_crc32c.extend(crc, data))
