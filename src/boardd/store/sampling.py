"""How many points each series keeps: boardd's defaults and TensorBoard's --samples_per_plugin."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from boardd.reader.decoded import DataClass

ALL: Final = None
"""The capacity that keeps every point of a series (``all`` in ``--samples_per_plugin``)."""

WILDCARD: Final = "*"
"""In ``--samples_per_plugin``, the key that sets every plugin not named."""

DEFAULT_CAPACITIES: Final[Mapping[str, int]] = MappingProxyType(
    {
        "scalars": 10_000,
        "histograms": 500,
        "pr_curves": 100,
        "text": 100,
        "images": 10,
        "audio": 10,
    }
)
"""Points kept per series of these plugins unless ``--samples_per_plugin`` says otherwise."""

DATA_CLASS_CAPACITIES: Final[Mapping[DataClass, int]] = MappingProxyType(
    {
        DataClass.SCALAR: 10_000,
        DataClass.TENSOR: 100,
        DataClass.BLOB_SEQUENCE: 10,
        # Not stored as a series; if asked, treated like other tensors.
        DataClass.UNKNOWN: 100,
    }
)
"""Points kept per series of a plugin without a default of its own, by data class."""

_COUNT = re.compile(r"[0-9]+", re.ASCII)


def parse_samples_per_plugin(spec: str) -> dict[str, int | None]:
    """Parses TensorBoard's ``--samples_per_plugin`` value, e.g. ``scalars=1000,images=all,*=50``.

    Returns plugin name -> capacity: a whole number, or ``None`` for ``all`` (keep every point).
    ``0`` is ``all`` too, as TensorBoard reads its flag: its Python loader's reservoir of size 0
    is unbounded, and it hands a 0 to the Rust data server as ``all`` (server_ingester.py).
    ``*`` sets every plugin not named. Blank entries and spaces around names and values are
    ignored. Raises ValueError, saying what to fix, for anything else
    (a missing ``=``, an empty plugin name, a value that is not a whole number or ``all``, a
    plugin named twice).
    """
    result: dict[str, int | None] = {}
    for raw in spec.split(","):
        entry = raw.strip()
        if not entry:
            continue
        name, equals, value = (part.strip() for part in entry.partition("="))
        if not equals:
            raise ValueError(
                f"{entry!r} is not of the form plugin=number; "
                "write for example scalars=1000,images=all"
            )
        if not name:
            raise ValueError(
                f"{entry!r} has no plugin name before '='; "
                f"write for example images={value or 'all'}, or *={value or 'all'} for every plugin"
            )
        if any(char.isspace() for char in name):
            raise ValueError(f"plugin name {name!r} contains spaces; separate entries with commas")
        capacity: int | None
        if value.lower() == "all":
            capacity = ALL
        elif _COUNT.fullmatch(value):
            capacity = int(value) or ALL
        else:
            raise ValueError(
                f"{value!r} (for {name}) is not a number of samples; "
                "use a whole number, or 'all' (or 0, as in TensorBoard) to keep every sample"
            )
        if name in result:
            raise ValueError(
                f"{name!r} is named twice ({_show(result[name])} and {_show(capacity)}); "
                "keep one of them"
            )
        result[name] = capacity
    return result


def _show(capacity: int | None) -> str:
    return "all" if capacity is None else str(capacity)


def capacity_for(
    plugin_name: str,
    data_class: DataClass,
    overrides: Mapping[str, int | None] | None = None,
) -> int | None:
    """How many points a series of this plugin and data class keeps (``None``: all).

    In order: the plugin's entry in ``overrides`` (from :func:`parse_samples_per_plugin`), the
    ``*`` entry, the plugin's default in :data:`DEFAULT_CAPACITIES`, the data class's default in
    :data:`DATA_CLASS_CAPACITIES` (scalars, tensors or blob sequences of other plugins).
    """
    if overrides:
        if plugin_name in overrides:
            return overrides[plugin_name]
        if WILDCARD in overrides:
            return overrides[WILDCARD]
    default = DEFAULT_CAPACITIES.get(plugin_name)
    if default is not None:
        return default
    return DATA_CLASS_CAPACITIES[data_class]
