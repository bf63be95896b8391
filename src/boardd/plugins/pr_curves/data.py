"""PR curves as TensorBoard's PR-curve dashboard reads them.

The pr_curves plugin stores one ``[6, n]`` tensor per step: rows of true positives, false
positives, true negatives, false negatives, precision and recall at ``n`` thresholds evenly
spaced over [0, 1]. A curve is cut after its last threshold that still classifies anything as
positive (true + false positives > 0), as TensorBoard cuts it: beyond it precision is
undefined.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

#: The rows of a stored PR-curve tensor.
TRUE_POSITIVES, FALSE_POSITIVES, TRUE_NEGATIVES, FALSE_NEGATIVES, PRECISION, RECALL = range(6)


class PrCurve(NamedTuple):
    """One step's curve up to its last threshold with any positive."""

    precision: list[float]
    recall: list[float]
    true_positives: list[int]
    false_positives: list[int]
    true_negatives: list[int]
    false_negatives: list[int]
    thresholds: list[float]


def unpack(value: npt.NDArray[np.generic]) -> PrCurve:
    """The curve of a stored ``[6, n]`` tensor (ValueError for another shape). Counts are
    truncated to whole numbers (they are stored as floats)."""
    array = np.asarray(value)
    if array.ndim != 2 or array.shape[0] != 6:
        raise ValueError(f"a PR curve is a [6, n] tensor, not {list(array.shape)}")
    counts = array[:PRECISION].astype(np.int64)
    positives = counts[TRUE_POSITIVES] + counts[FALSE_POSITIVES]
    nonzero = np.flatnonzero(positives)
    # The first threshold is kept even if nothing is positive anywhere.
    end = int(nonzero[-1]) + 1 if nonzero.size else min(1, array.shape[1])
    thresholds = np.linspace(0.0, 1.0, array.shape[1])
    return PrCurve(
        precision=array[PRECISION, :end].tolist(),
        recall=array[RECALL, :end].tolist(),
        true_positives=counts[TRUE_POSITIVES, :end].tolist(),
        false_positives=counts[FALSE_POSITIVES, :end].tolist(),
        true_negatives=counts[TRUE_NEGATIVES, :end].tolist(),
        false_negatives=counts[FALSE_NEGATIVES, :end].tolist(),
        thresholds=thresholds[:end].tolist(),
    )
