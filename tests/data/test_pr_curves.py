"""PR-curve tensors unpacked as TensorBoard's PR-curve dashboard reads them."""

from __future__ import annotations

import numpy as np
import pytest

from boardd.plugins.pr_curves.data import unpack


def curve(tp: list[float], fp: list[float]) -> np.ndarray:  # type: ignore[type-arg]
    n = len(tp)
    tn = [10.0 - x for x in fp]
    fn = [5.0 - x for x in tp]
    precision = [t / max(t + f, 1) for t, f in zip(tp, fp, strict=True)]
    recall = [t / 5 for t in tp]
    return np.array([tp, fp, tn, fn, precision, recall], dtype=np.float32).reshape(6, n)


def test_cut_after_the_last_threshold_with_a_positive() -> None:
    out = unpack(curve([5, 3, 1, 0, 0], [10, 4, 0, 0, 0]))
    assert out.thresholds == [0.0, 0.25, 0.5]
    assert out.true_positives == [5, 3, 1]
    assert out.false_positives == [10, 4, 0]
    assert out.true_negatives == [0, 6, 10]
    assert out.false_negatives == [0, 2, 4]
    assert out.precision == pytest.approx([5 / 15, 3 / 7, 1.0])
    assert out.recall == pytest.approx([1.0, 0.6, 0.2])
    assert all(isinstance(v, int) for v in out.true_positives)


def test_nothing_positive_keeps_the_first_threshold() -> None:
    assert unpack(curve([0, 0, 0], [0, 0, 0])).thresholds == [0.0]
    assert unpack(np.zeros((6, 0))).thresholds == []


def test_counts_are_truncated_and_the_shape_checked() -> None:
    assert unpack(curve([2.7, 0], [0.5, 0])).true_positives == [2]
    with pytest.raises(ValueError, match=r"\[6, n\]"):
        unpack(np.zeros((5, 3)))
