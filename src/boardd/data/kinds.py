"""The kinds of time series the data API serves, and the one mapping of each to its data class."""

from __future__ import annotations

from typing import NamedTuple

from boardd.reader.decoded import DataClass
from boardd.store.sampling import TENSORBOARD_PLUGINS


class Kind(NamedTuple):
    """One kind of time series: its name in URLs, how it is stored, which plugins write it."""

    #: The name in URLs (``/api/v1/scalars``) and in the design doc (``scalars``).
    name: str
    data_class: DataClass
    #: TensorBoard's plugins whose data has this data class. A dashboard may ask for one before
    #: the first point is written (a live run before its first image): that is not an error.
    tensorboard_plugins: frozenset[str]


def _plugins(data_class: DataClass) -> frozenset[str]:
    return frozenset(p for p, dc in TENSORBOARD_PLUGINS.items() if dc is data_class)


SCALARS = Kind("scalars", DataClass.SCALAR, _plugins(DataClass.SCALAR))
TENSORS = Kind("tensors", DataClass.TENSOR, _plugins(DataClass.TENSOR))
BLOB_SEQUENCES = Kind("blob_sequences", DataClass.BLOB_SEQUENCE, _plugins(DataClass.BLOB_SEQUENCE))

#: Every kind by name, in the design doc's order.
KINDS: dict[str, Kind] = {k.name: k for k in (SCALARS, TENSORS, BLOB_SEQUENCES)}


def data_class_label(data_class: int) -> str:
    """The lower-case name of a data class in JSON (``scalar``, ``tensor``, ``blob_sequence``);
    the number itself for one this version does not know."""
    try:
        return DataClass(data_class).label
    except ValueError:
        return str(data_class)
