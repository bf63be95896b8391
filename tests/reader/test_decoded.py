"""merge_batches: consecutive batches of one file behave as one."""

from __future__ import annotations

import numpy as np

from boardd.reader.decoded import (
    BlobSequencePoint,
    DataClass,
    DataLoss,
    DecodedBatch,
    ScalarColumns,
    TagMetadata,
    merge_batches,
)


def _batch(steps: list[int], end: int, tag_meta: str) -> DecodedBatch:
    batch = DecodedBatch(records=len(steps), end_offset=end)
    batch.scalars["loss"] = ScalarColumns(
        np.array(steps, dtype=np.int64),
        np.array(steps, dtype=np.float64) + 0.5,
        np.array(steps, dtype=np.float64) * 2,
    )
    batch.blob_sequences["img"] = [BlobSequencePoint(steps[0], 1.0, (b"x",))]
    batch.new_tags["loss"] = TagMetadata(tag_meta, b"", DataClass.SCALAR)
    batch.data_loss.append(DataLoss(end, 0, tag_meta))
    return batch


def test_merge_keeps_file_order_and_first_metadata() -> None:
    merged = merge_batches([_batch([1, 2], 10, "first"), _batch([3, 1], 20, "second")])
    assert merged.scalars["loss"].steps.tolist() == [1, 2, 3, 1]  # a preemption stays in order
    assert merged.scalars["loss"].values.tolist() == [2.0, 4.0, 6.0, 2.0]
    assert [p.step for p in merged.blob_sequences["img"]] == [1, 3]
    assert merged.new_tags["loss"].plugin_name == "first"
    assert [d.reason for d in merged.data_loss] == ["first", "second"]
    assert (merged.records, merged.end_offset) == (4, 20)


def test_merge_of_one_is_itself() -> None:
    only = _batch([1], 5, "x")
    assert merge_batches([only]) is only


def test_points_survive_pickling_between_processes() -> None:
    # Decode workers send points to the committing process pickled; their compact
    # __reduce__ must round-trip every field (and keep them frozen).
    import pickle

    from boardd.reader.decoded import BlobSequencePoint, TensorPoint

    tensor = TensorPoint(7, 1.5, 2, (3, 4), b"\x00" * 96)
    blobs = BlobSequencePoint(8, 2.5, (b"png", b"wav"))
    for point in (tensor, blobs):
        loaded = pickle.loads(pickle.dumps(point, protocol=pickle.HIGHEST_PROTOCOL))
        assert loaded == point and type(loaded) is type(point)
    assert pickle.loads(pickle.dumps(tensor)).shape == (3, 4)
