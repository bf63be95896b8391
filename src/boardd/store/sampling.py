"""How many points each series keeps: boardd's defaults and TensorBoard's --samples_per_plugin."""

from __future__ import annotations

import difflib
import heapq
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Final

from boardd.reader.decoded import DataClass

ALL: Final = None
"""The capacity that keeps every point of a series (``all`` in ``--samples_per_plugin``)."""

WILDCARD: Final = "*"
"""In ``--samples_per_plugin``, the key that sets every plugin not named."""

DEFAULT_CAPACITIES: Final[Mapping[str, int | None]] = MappingProxyType(
    {
        "scalars": ALL,
        "histograms": 500,
        "pr_curves": 100,
        "text": 100,
        "images": 10,
        "audio": 10,
    }
)
"""Points kept per series of these plugins unless ``--samples_per_plugin`` says otherwise."""

DATA_CLASS_CAPACITIES: Final[Mapping[DataClass, int | None]] = MappingProxyType(
    {
        # Every scalar: they are stored in compressed blocks (store/blocks.py).
        DataClass.SCALAR: ALL,
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
    ``*:LABEL`` entry of its data class (see :data:`CLASS_WILDCARD_PREFIX`), the ``*`` entry,
    the plugin's default in :data:`DEFAULT_CAPACITIES`, the data class's default in
    :data:`DATA_CLASS_CAPACITIES` (scalars, tensors or blob sequences of other plugins).
    """
    if overrides:
        if plugin_name in overrides:
            return overrides[plugin_name]
        by_class = _class_wildcard(data_class)
        if by_class in overrides:
            return overrides[by_class]
        if WILDCARD in overrides:
            return overrides[WILDCARD]
    if plugin_name in DEFAULT_CAPACITIES:
        return DEFAULT_CAPACITIES[plugin_name]
    return DATA_CLASS_CAPACITIES[data_class]


#: In a store's sampling, a key ``*:LABEL`` sets the plugins of one data class that are not
#: named (LABEL: ``scalar``, ``tensor``, ``blob_sequence``). The store writes it when it keeps
#: the larger of two settings that ``*`` alone cannot say (``*=50`` kept beside the defaults).
CLASS_WILDCARD_PREFIX: Final = "*:"


def _class_wildcard(data_class: DataClass) -> str:
    return CLASS_WILDCARD_PREFIX + data_class.label


_STORED_CLASSES: Final = (DataClass.SCALAR, DataClass.TENSOR, DataClass.BLOB_SEQUENCE)


TENSORBOARD_PLUGINS: Final[Mapping[str, DataClass]] = MappingProxyType(
    {
        "scalars": DataClass.SCALAR,
        **dict.fromkeys(
            ("histograms", "text", "pr_curves", "hparams", "custom_scalars", "mesh", "npmi"),
            DataClass.TENSOR,
        ),
        **dict.fromkeys(
            (
                "images",
                "audio",
                "graphs",
                "graph_run_metadata",
                "graph_run_metadata_graph",
                "graph_keras_model",
                "graph_tagged_run_metadata",
            ),
            DataClass.BLOB_SEQUENCE,
        ),
    }
)
"""TensorBoard's plugins that write series, with the data class of their series."""


def known_plugins() -> Mapping[str, DataClass]:
    """TensorBoard's plugins that write series, with the data class of their series."""
    return TENSORBOARD_PLUGINS


def is_wildcard(name: str) -> bool:
    """``*``, or ``*:LABEL`` for a data class whose series a store holds."""
    return name == WILDCARD or name in {_class_wildcard(dc) for dc in _STORED_CLASSES}


def _resolve(plugin: str, data_class: DataClass, overrides: Mapping[str, int | None]) -> int | None:
    return capacity_for(plugin, data_class, overrides)


def _larger(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)


def _cases(
    *samplings: Mapping[str, int | None],
) -> list[tuple[str | None, DataClass]]:
    """Every (plugin, data class) whose capacity two settings may tell apart: the named
    plugins (TensorBoard's with their data class, others with each data class) and, as
    ``None``, the plugins of each data class that no setting names."""
    known = known_plugins()
    names = set(DEFAULT_CAPACITIES) | set(known)
    for sampling in samplings:
        names.update(name for name in sampling if not is_wildcard(name))
    cases: list[tuple[str | None, DataClass]] = []
    for name in sorted(names):
        if name in known:
            cases.append((name, known[name]))
        else:
            cases.extend((name, dc) for dc in _STORED_CLASSES)
    cases.extend((None, dc) for dc in _STORED_CLASSES)
    return cases


def _capacity_of(
    case: tuple[str | None, DataClass], sampling: Mapping[str, int | None]
) -> int | None:
    plugin, data_class = case
    # An unnamed plugin: a name no setting uses and no default covers.
    return _resolve(plugin if plugin is not None else "\0", data_class, sampling)


def covers(kept: Mapping[str, int | None], asked: Mapping[str, int | None]) -> bool:
    """Whether a store that keeps ``kept`` holds at least ``asked`` of every series: then the
    points ``asked`` keeps are the bottom-k of those (see :func:`kept_indices`)."""
    for case in _cases(kept, asked):
        have, want = _capacity_of(case, kept), _capacity_of(case, asked)
        if have is not None and (want is None or want > have):
            return False
    return True


def larger_of(
    kept: Mapping[str, int | None], asked: Mapping[str, int | None]
) -> dict[str, int | None]:
    """A setting that keeps, of every series, the larger sample of ``kept`` and ``asked``.

    A named plugin whose data class is not known (a custom plugin) gets the largest over the
    data classes: it may keep more than either setting, never less."""
    merged: dict[str, int | None] = {}
    for dc in _STORED_CLASSES:
        merged[_class_wildcard(dc)] = _larger(
            _capacity_of((None, dc), kept), _capacity_of((None, dc), asked)
        )
    by_name: dict[str, int | None] = {}
    for case in _cases(kept, asked):
        plugin = case[0]
        if plugin is None:
            continue
        capacity = _larger(_capacity_of(case, kept), _capacity_of(case, asked))
        by_name[plugin] = _larger(by_name[plugin], capacity) if plugin in by_name else capacity
    others = {merged[_class_wildcard(dc)] for dc in _STORED_CLASSES}
    if len(others) == 1:
        # One capacity for every plugin not named: ``*`` says it.
        (every,) = others
        merged = {WILDCARD: every}
    elif all(merged[_class_wildcard(dc)] == DATA_CLASS_CAPACITIES[dc] for dc in _STORED_CLASSES):
        merged = {}
    for plugin, capacity in by_name.items():
        merged[plugin] = capacity
    # Drop the names that the rules above give their capacity anyway.
    for plugin in list(by_name):
        stripped = {k: v for k, v in merged.items() if k != plugin}
        dcs = [dc for name, dc in _cases({plugin: None}) if name == plugin]
        if all(_resolve(plugin, dc, stripped) == by_name[plugin] for dc in dcs):
            merged = stripped
    return merged


def kept_indices(run: str, steps: Sequence[int], capacity: int | None) -> list[int] | None:
    """Indices (ascending) of the points a reservoir of ``capacity`` keeps of a series of
    ``run`` whose points are at these steps (ascending), as :mod:`boardd.store.reservoir`
    chooses them: the latest, and the ``capacity - 1`` others of lowest priority under the
    run's seed (the store's writer keys it by the run's name alone). None when it keeps them
    all. Of a sample of a larger capacity, this is what the smaller one keeps, barring a
    preemption: after one, a smaller reservoir stays under-filled until new points pass its
    old threshold, where the larger one may already hold points above it."""
    n = len(steps)
    if capacity is None or n <= capacity:
        return None
    if capacity <= 0:
        return []
    from boardd.store.reservoir import run_seed

    seed = run_seed("", run)
    if n > _NUMPY_FROM and capacity > 1:
        # A long series (every scalar is kept): the same choice, in numpy's time.
        import numpy as np

        from boardd.store.reservoir import step_priorities as array_priorities

        ranked = array_priorities(seed, np.asarray(steps[: n - 1], dtype=np.int64))
        chosen: list[int] = np.sort(np.argpartition(ranked, capacity - 2)[: capacity - 1]).tolist()
    else:
        from boardd.store.splitmix import step_priorities

        priorities = step_priorities(seed, [int(s) for s in steps[: n - 1]])
        chosen = sorted(heapq.nsmallest(capacity - 1, range(n - 1), key=priorities.__getitem__))
    chosen.append(n - 1)
    return chosen


#: Points from which :func:`kept_indices` chooses with numpy (splitmix64's priorities are a
#: bijection of steps: no ties, so both forms choose the same points).
_NUMPY_FROM: Final = 50_000


def store_plugins(db: Path) -> set[str]:
    """The plugins a store holds series of (none if there is no readable store there)."""
    import apsw

    from boardd.store.connection import open_reader
    from boardd.store.errors import StoreError

    if not db.exists():
        return set()
    try:
        connection = open_reader(db)
    except StoreError:
        return set()
    try:
        return {str(p) for (p,) in connection.execute("SELECT DISTINCT plugin_name FROM series")}
    except apsw.Error:
        return set()
    finally:
        connection.close()


def check_plugin_names(sampling: Mapping[str, int | None], stored: Collection[str]) -> None:
    """Raises ValueError for a plugin name that is neither TensorBoard's nor one of ``stored``
    (the plugins whose series the store already holds), naming the known ones."""
    known = set(known_plugins()) | set(DEFAULT_CAPACITIES)
    for name in sampling:
        if is_wildcard(name) or name in known or name in stored:
            continue
        choices = sorted(known | set(stored))
        close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ValueError(
            f"{name!r} is not a plugin: {hint}the known plugins are {', '.join(choices)} "
            "(and * for every plugin not named)"
        )
