"""Histogram compression to percentiles (TensorBoard's distributions), on hand-made buckets."""

from __future__ import annotations

import numpy as np
import pytest

from boardd.plugins.histograms.data import NORMAL_BASIS_POINTS, as_buckets, compress


def values(buckets: list[list[float]]) -> list[float]:
    return [v for _, v in compress(np.asarray(buckets, dtype=np.float64).reshape(-1, 3))]


def test_empty_histogram_is_all_zero() -> None:
    assert compress(np.zeros((0, 3))) == [(bp, 0.0) for bp in NORMAL_BASIS_POINTS]


def test_one_bucket_is_interpolated_linearly() -> None:
    # All the count in [0, 10]: basis point b sits at b / 1000.
    assert values([[0.0, 10.0, 4.0]]) == [bp / 1000 for bp in NORMAL_BASIS_POINTS[:-1]] + [10.0]


def test_two_buckets_and_the_extremes() -> None:
    # Half the count in [-1, 0], half in [0, 3]: the median is 0; 0 bp is the minimum, 10000
    # the maximum; 6915 bp is 38.3% into the second bucket.
    out = dict(compress(np.array([[-1.0, 0.0, 5.0], [0.0, 3.0, 5.0]])))
    assert out[0] == -1.0 and out[5000] == 0.0 and out[10000] == 3.0
    assert out[6915] == pytest.approx(3 * (6915 - 5000) / 5000)
    assert out[3085] == pytest.approx(-1 + (3085 / 5000))


def test_empty_buckets_are_skipped() -> None:
    # An empty bucket between two full ones takes no basis point: a share the first bucket
    # reaches exactly (the median here) is placed at the start of the next full one.
    out = dict(compress(np.array([[0.0, 1.0, 1.0], [1.0, 5.0, 0.0], [5.0, 6.0, 1.0]])))
    assert out[5000] == 5.0
    assert out[3085] == pytest.approx(3085 / 5000)
    assert out[6915] == pytest.approx(5 + (6915 - 5000) / 5000)
    # Leading empty buckets: the first full one starts at the histogram's minimum.
    out = dict(compress(np.array([[0.0, 1.0, 0.0], [1.0, 2.0, 2.0]])))
    assert out[0] == 0.0 and out[5000] == pytest.approx(0.5 * 2)


def test_all_empty_buckets_are_the_maximum() -> None:
    assert values([[0.0, 1.0, 0.0], [1.0, 2.0, 0.0]]) == [2.0] * len(NORMAL_BASIS_POINTS)


def test_as_buckets_checks_the_shape() -> None:
    assert as_buckets(np.zeros((0,), dtype=np.float32)).shape == (0, 3)
    assert as_buckets(np.ones((2, 3), dtype=np.float32)).dtype == np.float64
    with pytest.raises(ValueError, match=r"\[k, 3\]"):
        as_buckets(np.ones((2, 2)))
