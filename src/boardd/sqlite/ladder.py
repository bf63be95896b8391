"""Schema migrations as a ladder of steps on ``PRAGMA user_version``.

Step ``i`` upgrades a file from version ``i`` to ``i + 1``; a new file (version 0) climbs the
whole ladder. Every step from the version found runs in one transaction, which takes the write
lock first (BEGIN IMMEDIATE): two processes opening a new file at once then wait for each other
(the busy timeout), where a read upgraded to a write would fail at once with "database is
locked". A file already at the top is only read: opening it never waits for another writer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import apsw

from boardd.sqlite.connection import immediate, int_pragma

#: A step: SQL, or SQL and a function that fills what SQL alone cannot.
Step = str | tuple[str, Callable[[apsw.Connection], None]]


def climb(
    connection: apsw.Connection,
    steps: Sequence[Step],
    application_id: int,
    check: Callable[[apsw.Connection, int], None],
) -> int:
    """Brings the schema up to ``len(steps)``; returns the version found before.

    ``check(connection, found)`` runs first, in the transaction, and raises if the file is not
    one this ladder may climb (another application's, or from a newer version). A file brought
    up is marked with ``application_id``.
    """
    found = int_pragma(connection, "user_version")
    if found >= len(steps):
        check(connection, found)
        return found
    with immediate(connection):
        # Read again under the write lock: another process may have climbed meanwhile.
        found = int_pragma(connection, "user_version")
        check(connection, found)
        for step in steps[found:]:
            if isinstance(step, str):
                connection.execute(step)
            else:
                connection.execute(step[0])
                step[1](connection)
        if found < len(steps):
            connection.pragma("user_version", len(steps))
            connection.pragma("application_id", application_id)
    return found
