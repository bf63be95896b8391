"""The custom scalars plugin's layouts: the dashboard a writer describes (tensorboardX's and
PyTorch's ``add_custom_scalars``), one serialized ``Layout`` per run that has one, merged into
the logdir's layout as TensorBoard merges them."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from google.protobuf.message import DecodeError

from boardd.proto import layout_pb2

log = logging.getLogger(__name__)


def parse_layout(value: Any) -> layout_pb2.Layout | None:
    """A stored layout tensor (a string scalar, or any string tensor of one element) as a
    ``Layout``; None (logged) for one that is not a serialized layout."""
    if hasattr(value, "size") and hasattr(value, "reshape"):  # a numpy array
        if value.size != 1:
            log.warning("a custom scalars layout of %d strings is left out", value.size)
            return None
        value = value.reshape(-1)[0]
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, bytes):
        log.warning("a custom scalars layout that is not a string is left out")
        return None
    layout = layout_pb2.Layout()
    try:
        layout.ParseFromString(value)
    except DecodeError as exc:
        log.warning("a custom scalars layout that cannot be parsed is left out: %s", exc)
        return None
    return layout


def merge_layouts(layouts: Iterable[layout_pb2.Layout]) -> layout_pb2.Layout | None:
    """The layouts merged in the order given (TensorBoard's: by run name): the first one's
    categories, then each later category appended, or, when one of the same title came before,
    its charts added to that one's (the last of that title in the first layout; a chart equal to
    one already there is left out). None when there is no layout.

    One difference from TensorBoard: the charts of a category whose title first came from a
    later layout (not the first) reach the merged layout when a third layout adds to it;
    TensorBoard adds them to the category it copied from, so they are lost."""
    merged: layout_pb2.Layout | None = None
    by_title: dict[str, layout_pb2.Category] = {}
    for layout in layouts:
        if merged is None:
            merged = layout
            by_title = {category.title: category for category in layout.category}
            continue
        for category in layout.category:
            known = by_title.get(category.title)
            if known is None:
                added = merged.category.add()
                added.MergeFrom(category)
                by_title[category.title] = added
            else:
                known.chart.extend([c for c in category.chart if c not in known.chart])
    return merged
