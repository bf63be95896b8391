"""The store's fingerprint: what its contents depend on, so a changed setting is never mixed in.

As in the tf.data snapshot RFC, a store records a fingerprint of everything its contents depend
on. Reopening with the same fingerprint resumes at once; a different one is refused with a
message naming what changed, unless the caller rebuilds the store. The sampling is no equality:
the fingerprint records what the store keeps, and a store that keeps at least what is asked of
every series is used as it is (a smaller sample is the bottom-k of the one kept).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import apsw

from boardd.store.errors import FingerprintMismatchError, SamplingGrowsError
from boardd.store.location import logdir_location
from boardd.store.sampling import (
    DEFAULT_CAPACITIES,
    covers,
    is_wildcard,
    larger_of,
    parse_samples_per_plugin,
)
from boardd.store.schema import SCHEMA_VERSION

#: Bumped whenever a change to the reader would decode the same files into different points.
DECODING_RULES_VERSION = 1

_META_KEY = "fingerprint"


def compute(logdir: str | os.PathLike[str], sampling: Mapping[str, int | None]) -> dict[str, str]:
    """The fingerprint of a store built from ``logdir`` with these sampling overrides."""
    return {
        "schema": str(SCHEMA_VERSION),
        "decoding_rules": str(DECODING_RULES_VERSION),
        "sampling": sampling_text(sampling),
        "logdir": logdir_location(logdir),
    }


def sampling_text(sampling: Mapping[str, int | None]) -> str:
    """Overrides in ``--samples-per-plugin`` syntax, sorted, without those equal to a default
    (:func:`kept_sampling` reads it back)."""
    parts = []
    # Beside a wildcard, a plugin's default must be said: the wildcard would set it otherwise.
    wildcards = any(is_wildcard(plugin) for plugin in sampling)
    for plugin, capacity in sorted(sampling.items()):
        if not wildcards and DEFAULT_CAPACITIES.get(plugin, -1) == capacity:
            continue
        parts.append(f"{plugin}={'all' if capacity is None else capacity}")
    return ",".join(parts) or "defaults"


def stored(connection: apsw.Connection) -> dict[str, str] | None:
    """The fingerprint recorded in a store, if any."""
    value = connection.execute("SELECT value FROM meta WHERE key = ?", (_META_KEY,)).get
    if value is None:
        return None
    loaded = json.loads(str(value))
    return {str(k): str(v) for k, v in loaded.items()}


def check_or_record(
    connection: apsw.Connection,
    wanted: Mapping[str, str],
    sampling: Mapping[str, int | None] | None = None,
) -> dict[str, int | None]:
    """Records ``wanted`` in a new store, or raises FingerprintMismatchError naming changes.

    Returns the sampling the store keeps: ``sampling`` (the one asked) for a new store; for an
    existing one, its own, if it keeps at least ``sampling`` of every series (reads then
    answer the bottom-k of it); else SamplingGrowsError."""
    asked = dict(sampling or {})
    found = stored(connection)
    if found is not None and _migrated(found, wanted):
        # migrate() already brought an older schema up to date: that is no change of contents.
        # What the store keeps is as it was: the sampling check below still applies.
        found = _as_kept(found)
        with connection:
            connection.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (_META_KEY, json.dumps({**wanted, "sampling": found["sampling"]}, sort_keys=True)),
            )
        return _kept_or_raise(None, found, asked)
    if found is None:
        with connection:
            connection.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (_META_KEY, json.dumps(dict(wanted), sort_keys=True)),
            )
        return asked
    changed = _changes(found, wanted, sampling=False)
    if changed:
        raise FingerprintMismatchError(_mismatch_message(None, changed))
    return _kept_or_raise(None, found, asked)


def kept_sampling(found: Mapping[str, str]) -> dict[str, int | None]:
    """The sampling a store's fingerprint says it keeps."""
    text = found.get("sampling", "defaults")
    return {} if text == "defaults" else parse_samples_per_plugin(text)


def _kept_or_raise(
    db: Path | None, found: Mapping[str, str], asked: Mapping[str, int | None]
) -> dict[str, int | None]:
    kept = kept_sampling(found)
    if covers(kept, asked):
        return kept
    larger = larger_of(kept, asked)
    where = f"the store {db}" if db is not None else "the store"
    flag = sampling_text(larger)
    command = "--rebuild" if flag == "defaults" else f"--rebuild --samples-per-plugin '{flag}'"
    raise SamplingGrowsError(
        f"{where} keeps fewer points than asked ({sampling_text(kept)}, asked "
        f"{sampling_text(asked)}): rebuild it with {command} (the old store is served until "
        "the new one is complete)",
        kept,
        larger,
    )


def _changes(
    found: Mapping[str, str], wanted: Mapping[str, str], *, sampling: bool = True
) -> list[str]:
    return [
        f"{key}: store has {found.get(key, '(none)')!r}, now {value!r}"
        for key, value in sorted(wanted.items())
        if found.get(key) != value and (sampling or key != "sampling")
    ]


def _mismatch_message(db: Path | None, changed: list[str]) -> str:
    where = f"the store {db}" if db is not None else "the store"
    return (
        f"{where} was built with other settings ("
        + "; ".join(changed)
        + "). Run again with --rebuild to build a fresh store with the new settings "
        "(the old one stays readable until the new one is complete), or give another --db."
    )


#: The first schema whose stores keep every scalar by default.
EVERY_SCALAR_SCHEMA = 8
#: The points of a scalars series a store of an older schema kept by default.
_OLDER_SCALARS_DEFAULT = 10_000


def _as_kept(found: Mapping[str, str]) -> dict[str, str]:
    """``found``, its sampling saying what the store keeps: a store of a schema before
    :data:`EVERY_SCALAR_SCHEMA` kept a sample of each scalars series unless told otherwise."""
    try:
        older = int(found.get("schema", "0")) < EVERY_SCALAR_SCHEMA
    except ValueError:
        older = False
    kept = kept_sampling(found)
    if not older or "scalars" in kept or any(is_wildcard(p) for p in kept):
        return dict(found)
    kept["scalars"] = _OLDER_SCALARS_DEFAULT
    return {**found, "sampling": sampling_text(kept)}


def _migrated(found: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Whether ``found`` is of an older schema, all else but the sampling as ``wanted``."""
    others_equal = all(
        found.get(k) == v for k, v in wanted.items() if k not in ("schema", "sampling")
    )
    try:
        older = int(found.get("schema", "0")) < int(wanted["schema"])
    except ValueError:
        return False
    return others_equal and older


def verify(
    db: Path,
    logdir: str | os.PathLike[str],
    sampling: Mapping[str, int | None],
    *,
    exact: bool = False,
) -> dict[str, int | None] | None:
    """Raises FingerprintMismatchError if the store at ``db`` was built with other settings
    than these (read-only; a store that does not exist yet, or has no fingerprint, passes).

    A store that keeps more points than ``sampling`` asks passes (unless ``exact``), and its
    sampling is returned; one that keeps fewer raises SamplingGrowsError. None: no store, or
    no fingerprint to read."""
    from boardd.store.connection import open_reader
    from boardd.store.errors import StoreError

    if not db.exists():
        return None
    try:
        connection = open_reader(db)
    except StoreError:
        return None  # not a readable store: the writer reports it when it opens it
    try:
        found = stored(connection)
    except apsw.Error:
        return None  # a damaged store: the writer finds it when it opens it, and rebuilds it
    finally:
        connection.close()
    wanted = compute(logdir, sampling)
    if found is None:
        return None
    if _migrated(found, wanted):
        # The writer records the new schema when it opens the store; what it keeps stays.
        found = {**_as_kept(found), "schema": wanted["schema"]}
    changed = _changes(found, wanted, sampling=exact)
    if changed:
        raise FingerprintMismatchError(_mismatch_message(db, changed))
    return _kept_or_raise(db, found, sampling)
