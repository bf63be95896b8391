"""What changed in a store after a generation (the live stream's one query), and the commit bus
that says when to ask: the store side's, offered here since the layers above reach the store
only through data/."""

from __future__ import annotations

import apsw

from boardd.store import queries
from boardd.store.bus import WATCH_INTERVAL_SECONDS, ChangeHub, StoreWatcher, Subscription, wake
from boardd.store.queries import Changes, RunChange, SeriesChange

__all__ = [
    "WATCH_INTERVAL_SECONDS",
    "ChangeHub",
    "Changes",
    "RunChange",
    "SeriesChange",
    "StoreWatcher",
    "Subscription",
    "changes_since",
    "wake",
]


def changes_since(connection: apsw.Connection, experiment: str, since: int) -> Changes:
    """Runs and series of ``experiment`` changed by commits after generation ``since``, each
    once in its state now, and the store's generation, all from one read snapshot."""
    return queries.changes_since(connection, experiment, since)
