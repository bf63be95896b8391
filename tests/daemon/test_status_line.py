"""The STATUS= line systemd shows: catch-up progress, then lag."""

from __future__ import annotations

import dataclasses

from boardd.daemon.runner_status import RunnerStatus, describe

BASE = RunnerStatus(
    name="logs",
    logdir="/srv/logs",
    db="/var/lib/boardd/logs.sqlite",
    state="live",
    watch_mode="inotify",
    generation=42,
    last_commit=None,
    lag_seconds=None,
    bytes_done=0,
    bytes_total=0,
    error=None,
)


def test_live_up_to_date_and_lagging() -> None:
    assert describe(BASE) == "logs: live (inotify), up to date, generation 42"
    lagging = dataclasses.replace(BASE, lag_seconds=1.25, watch_mode="polling")
    assert describe(lagging) == "logs: live (polling), lag 1.2 s, generation 42"


def test_catch_up_progress_and_other_states() -> None:
    catching = dataclasses.replace(
        BASE, state="catching_up", bytes_done=50_000_000, bytes_total=200_000_000
    )
    assert describe(catching) == "logs: catching up 25% of 200 MB"
    assert describe(dataclasses.replace(BASE, state="read_only")) == "logs: read only"


def test_retrying_says_when_and_why() -> None:
    retrying = dataclasses.replace(
        BASE,
        state="retrying",
        error="FullError: database or disk is full",
        retries=3,
        retry_in_seconds=3.6,
    )
    assert describe(retrying) == "logs: retrying in 4 s: FullError: database or disk is full"
