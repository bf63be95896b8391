"""The priority of a step in pure Python (reads before `boardd serve` imports numpy) and in numpy
(the reservoir, and reads after): the same numbers."""

from __future__ import annotations

import numpy as np

from boardd.store import reservoir, splitmix


def test_the_pure_python_priorities_are_the_numpy_ones() -> None:
    rng = np.random.default_rng(5)
    steps = np.concatenate(
        (
            np.array([-(2**63), -(2**63) + 1, -1, 0, 1, 2**32, 2**63 - 2, 2**63 - 1]),
            rng.integers(-(2**63), 2**63 - 1, size=5_000, dtype=np.int64),
            np.arange(-1_000, 1_000, dtype=np.int64),
        )
    ).astype(np.int64)
    for seed in (0, 1, 0x626F61726464, 2**64 - 1, reservoir.run_seed("exp", "train")):
        expected = reservoir.step_priorities(seed, steps).tolist()
        assert splitmix.step_priorities(seed, steps.tolist()) == expected
        # Signed 64-bit, as the store keeps them.
        assert all(-(2**63) <= p < 2**63 for p in expected[:50])


def test_mix64_is_splitmix64s_finaliser() -> None:
    # Vigna's splitmix64 from state 0: the first output is mix64(GAMMA).
    assert splitmix.mix64(splitmix.GAMMA) == 0xE220A8397B1DCDAF
