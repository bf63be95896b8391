"""Query-time downsampling: at most k points, the first and the last always, the choice a
function of the set of steps alone."""

from __future__ import annotations

from array import array

import numpy as np
import pytest

from boardd.data import accel
from boardd.data.downsample import downsample_indices, extremes_indices


def steps(values: range | list[int]) -> np.ndarray:
    return np.array(list(values), dtype=np.int64)


@pytest.mark.parametrize("k", [0, 1, 2, 3, 10, 99, 100, 1000])
def test_bounds_and_ends(k: int) -> None:
    s = steps(range(0, 300, 3))
    chosen = downsample_indices(s, k)
    assert len(chosen) == min(k, len(s))
    assert chosen.tolist() == sorted(set(chosen.tolist()))
    if k >= 1:
        assert chosen[-1] == len(s) - 1
    if k >= 2:
        assert chosen[0] == 0


def test_depends_only_on_the_set_of_steps() -> None:
    a = steps(range(1000))
    b = steps(range(1000))
    assert downsample_indices(a, 17).tolist() == downsample_indices(b, 17).tolist()
    # Another range shares inner steps: those chosen in both are chosen by the same rule.
    shorter = steps(range(0, 900))
    kept_a = set(a[downsample_indices(a, 50)].tolist())
    kept_short = set(shorter[downsample_indices(shorter, 50)].tolist())
    assert len(kept_a & kept_short) > 10


def test_a_uniform_sample_between_the_ends() -> None:
    s = steps(range(100_000))
    kept = s[downsample_indices(s, 1002)][1:-1]
    # Spread over the range, not bunched: each tenth of it holds about a tenth of the points.
    counts = np.histogram(kept, bins=10, range=(0, 100_000))[0]
    assert counts.min() > 60 and counts.max() < 140


def test_empty_and_tiny_series() -> None:
    assert downsample_indices(steps([]), 5).tolist() == []
    assert downsample_indices(steps([7]), 1).tolist() == [0]
    assert downsample_indices(steps([7, 9]), 1).tolist() == [1]
    assert downsample_indices(steps([7, 9, 11]), 2).tolist() == [0, 2]


def test_extremes_keep_every_spike_within_k_points() -> None:
    rng = np.random.default_rng(3)
    s = steps(range(0, 100_000, 7))
    v = rng.normal(size=s.shape[0])
    spikes = [17, 5_000, 9_999, len(s) - 2]
    v[spikes] = [40.0, -40.0, np.inf, 35.0]
    v[300:310] = np.nan
    for k in (4, 7, 100, 4_000):
        chosen = extremes_indices(s, v, k)
        assert len(chosen) <= k
        assert chosen.tolist() == sorted(set(chosen.tolist()))
        assert chosen[0] == 0 and chosen[-1] == len(s) - 1
        # One bucket keeps the series' lowest and highest; 25 or more keep every spike (each
        # in a bucket of its own).
        assert {5_000, 9_999} <= set(chosen.tolist())
        if k >= 100:
            assert set(spikes) <= set(chosen.tolist()), k
    # Each of the k // 4 step buckets keeps its own lowest and highest point.
    chosen = extremes_indices(s, v, 400)
    bucket = (s * 100) // (s[-1] + 1)
    for b in range(100):
        inside = np.flatnonzero(bucket == b)
        finite = inside[~np.isnan(v[inside])]
        assert finite[np.argmax(v[finite])] in chosen and finite[np.argmin(v[finite])] in chosen


def test_extremes_edge_cases() -> None:
    s = steps(range(10))
    v = np.arange(10, dtype=np.float64)
    assert extremes_indices(s, v, 10).tolist() == list(range(10))
    assert extremes_indices(s, v, 3).tolist() == downsample_indices(s, 3).tolist()
    assert extremes_indices(steps([]), np.array([]), 8).tolist() == []
    nan = np.full(10, np.nan)
    assert extremes_indices(s, nan, 4).tolist() == [0, 9]


# -- the pure-Python form (boardd serve, before its warm-up imports numpy) ------------------------


@pytest.fixture
def deferred() -> accel.NumpySwitch:
    """The switch of `boardd serve`'s providers until its warm-up has imported numpy."""
    return accel.NumpySwitch(deferred=True)


_RNG = np.random.default_rng(11)
STEP_SETS = {
    "consecutive": steps(range(10_000)),
    "every 7 from -300": steps(range(-300, 9_000, 7)),
    "random int64": np.unique(_RNG.integers(-(2**63), 2**63 - 1, size=3_000, dtype=np.int64)),
    "the int64 ends": steps([-(2**63), -1, 0, 1, 2**62, 2**63 - 1]),
    "one": steps([5]),
    "none": steps([]),
}


@pytest.mark.parametrize("name", STEP_SETS)
@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 10, 999, 1000, 2_999, 3_000, 20_000])
def test_without_numpy_the_same_points_are_chosen(
    name: str, k: int, deferred: accel.NumpySwitch
) -> None:
    s = STEP_SETS[name]
    with_numpy = downsample_indices(s, k)
    assert isinstance(with_numpy, np.ndarray)
    # As the column cache holds them: a read-only memoryview of int64.
    held = memoryview(array("q", s.tolist())).toreadonly()
    pure = downsample_indices(held, k, deferred)
    assert isinstance(pure, array)  # the pure-Python form ran
    assert pure.tolist() == with_numpy.tolist()
    assert deferred.module() is None  # still deferred: nothing asked for numpy


def test_the_extremes_kernel_loads_numpy_for_the_others_too(deferred: accel.NumpySwitch) -> None:
    s = STEP_SETS["consecutive"]
    values = np.sin(s / 100.0)
    held = memoryview(array("q", s.tolist())).toreadonly()
    assert isinstance(downsample_indices(held, 10, deferred), array)
    assert len(extremes_indices(held, memoryview(values), 40, deferred)) <= 40
    assert deferred.module() is np
    assert isinstance(downsample_indices(held, 10, deferred), np.ndarray)
