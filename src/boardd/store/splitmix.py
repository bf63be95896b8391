"""splitmix64 (Steele, Lea and Flood 2014; the constants of Vigna's reference C code): the
priority of a step, which decides what the store's reservoir keeps and what a downsampled read
returns.

The numpy form, for whole batches, is :func:`boardd.store.reservoir.step_priorities`; this
module holds the formula's constants and its pure-Python form (:func:`step_priorities`), for
the reads that run before ``boardd serve`` has imported numpy (:mod:`boardd.data.accel`). A
test checks that both give the same priorities.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

__all__ = ["GAMMA", "MASK64", "MIX1", "MIX2", "mix64", "step_priorities"]

MASK64: Final = (1 << 64) - 1
GAMMA: Final = 0x9E3779B97F4A7C15
MIX1: Final = 0xBF58476D1CE4E5B9
MIX2: Final = 0x94D049BB133111EB
_SIGN: Final = 1 << 63
_WRAP: Final = 1 << 64


def mix64(value: int) -> int:
    """splitmix64's output function on one integer (taken mod 2**64; unsigned result)."""
    z = value & MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    return z ^ (z >> 31)


def step_priorities(seed: int, steps: Iterable[int]) -> list[int]:
    """The priority of each step (Python ints: ``tolist()`` a numpy array first) under
    ``seed``: ``mix64(mix64(seed) + step * GAMMA)`` read as a signed 64-bit integer (what
    :func:`boardd.store.reservoir.step_priorities` computes)."""
    # The body of mix64 inlined, its constants local: this loop is the pure form's cost.
    mask, gamma, mix1, mix2, sign, wrap = MASK64, GAMMA, MIX1, MIX2, _SIGN, _WRAP
    base = mix64(seed)
    out: list[int] = []
    append = out.append
    for step in steps:
        z = (base + step * gamma) & mask  # a negative step wraps as its two's complement
        z ^= z >> 30
        z = (z * mix1) & mask
        z ^= z >> 27
        z = (z * mix2) & mask
        z ^= z >> 31
        append(z - wrap if z >= sign else z)
    return out
