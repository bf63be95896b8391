"""The Health schema names every field of the daemon's ingest status (what the runners report:
boardd.daemon's RunnerStatus, sent as is by /api/v1/health), and a daemon's answer fits it."""

from __future__ import annotations

import dataclasses
from typing import Any

from boardd.api.openapi import SPEC
from boardd.config import ExperimentSpec
from boardd.daemon.runner import RunnerStatus
from tests.api.conftest import get_json, serve
from tests.api.test_openapi import response_schema, schema_validator

EXPERIMENT_ITEM = SPEC["components"]["schemas"]["Health"]["properties"]["experiments"]["items"]


def a_status(**changes: Any) -> dict[str, Any]:
    status = RunnerStatus(
        name="exp",
        logdir="/logs",
        db="/store.sqlite",
        state="live",
        watch_mode="inotify",
        generation=7,
        last_commit=1_700_000_000.5,
        lag_seconds=0.25,
        bytes_done=10,
        bytes_total=10,
        error=None,
        remote_requests={
            "listings": 1,
            "objects_listed": 2,
            "gets": 3,
            "bytes_fetched": 4,
            "failures": 0,
        },
        damage={
            "found": "malformed page",
            "set_aside": "/x.damaged",
            "since": 1.0,
            "lost_runs": ["r"],
        },
        unreadable=[{"path": "r/events", "reason": "permission denied", "since": 2.0}],
    )
    return {**dataclasses.asdict(status), **changes}


def test_every_status_field_is_described() -> None:
    fields = {f.name for f in dataclasses.fields(RunnerStatus)}
    assert fields - set(EXPERIMENT_ITEM["properties"]) == set()


def test_a_daemons_answer_fits(spec_all: ExperimentSpec) -> None:
    for mode in EXPERIMENT_ITEM["properties"]["watch_mode"]["enum"]:
        status = a_status(watch_mode=mode)
        with serve(spec_all, status={spec_all.name: lambda s=status: s}) as client:
            body = get_json(client, "/api/v1/health")
            assert body["experiments"][0]["watch_mode"] == mode
            schema_validator(response_schema("/api/v1/health", 200)).validate(body)
