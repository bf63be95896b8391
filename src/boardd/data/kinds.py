"""The kinds of time series the data API serves, and the one mapping of each to its data class."""

from __future__ import annotations

from typing import NamedTuple

from boardd.reader.decoded import DataClass


class Kind(NamedTuple):
    """One kind of time series: its name in URLs, how it is stored, which plugins write it."""

    #: The name in URLs (``/api/v1/scalars``) and in the design doc (``scalars``).
    name: str
    data_class: DataClass
    #: TensorBoard's plugins whose data has this data class. A dashboard may ask for one before
    #: the first point is written (a live run before its first image): that is not an error.
    tensorboard_plugins: frozenset[str]


SCALARS = Kind("scalars", DataClass.SCALAR, frozenset({"scalars"}))
TENSORS = Kind(
    "tensors",
    DataClass.TENSOR,
    frozenset({"histograms", "text", "pr_curves", "hparams", "custom_scalars", "mesh", "npmi"}),
)
BLOB_SEQUENCES = Kind(
    "blob_sequences",
    DataClass.BLOB_SEQUENCE,
    frozenset(
        {
            "images",
            "audio",
            "graphs",
            "graph_run_metadata",
            "graph_run_metadata_graph",
            "graph_keras_model",
            "graph_tagged_run_metadata",
        }
    ),
)

#: Every kind by name, in the design doc's order.
KINDS: dict[str, Kind] = {k.name: k for k in (SCALARS, TENSORS, BLOB_SEQUENCES)}


def data_class_label(data_class: int) -> str:
    """The lower-case name of a data class in JSON (``scalar``, ``tensor``, ``blob_sequence``);
    the number itself for one this version does not know."""
    try:
        return DataClass(data_class).label
    except ValueError:
        return str(data_class)
