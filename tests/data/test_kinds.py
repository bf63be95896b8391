"""The one kind → data class mapping."""

from __future__ import annotations

from boardd.data.kinds import KINDS, data_class_label
from boardd.reader.decoded import DataClass


def test_each_kind_has_its_own_data_class_and_plugins() -> None:
    assert list(KINDS) == ["scalars", "tensors", "blob_sequences"]
    assert [k.data_class for k in KINDS.values()] == [
        DataClass.SCALAR,
        DataClass.TENSOR,
        DataClass.BLOB_SEQUENCE,
    ]
    plugins = [k.tensorboard_plugins for k in KINDS.values()]
    assert all(a.isdisjoint(b) for i, a in enumerate(plugins) for b in plugins[i + 1 :])
    assert {"scalars"} <= plugins[0] and {"histograms", "text"} <= plugins[1]
    assert {"images", "audio", "graphs"} <= plugins[2]


def test_labels() -> None:
    assert [data_class_label(dc) for dc in (1, 2, 3)] == ["scalar", "tensor", "blob_sequence"]
    assert data_class_label(42) == "42"
