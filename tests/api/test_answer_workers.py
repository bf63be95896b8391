"""Answers built in answer worker processes (api/workers.py) are byte for byte those built in
the daemon's process; a lost worker costs no answer; damage met by a worker is a 503."""

from __future__ import annotations

import asyncio
import multiprocessing
import operator
import os
import shutil
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from boardd.api.workers import AnswerWorkers
from boardd.config import ExperimentSpec
from tests.api.conftest import assert_error, serve
from tests.conftest import WAIT
from tests.damaging import pages_of, scramble_page

#: multiprocessing starts one resource tracker per process, with the first process pool, and
#: keeps its pipe open for the life of the process (the test process here).
pytestmark = pytest.mark.allow_leaks("multiprocessing's resource tracker, one per process")

#: Answers of many series at once, downsampled (what the workers build), over every shape of
#: the route.
MANY_SERIES: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/scalars", {"tag": "loss", "downsample": 50}),
    ("/api/v1/scalars", {"tag": "acc", "downsample": 7}),
    ("/api/v1/scalars", {"tag": "loss", "downsample": 9, "downsample_by": "extremes"}),
    ("/api/v1/scalars", {"tag": "loss", "format": "columns", "downsample": 20}),
    ("/api/v1/scalars", {"tag": "acc", "format": "csv", "step_min": 10, "downsample": 30}),
    ("/api/v1/scalars", {"tag": "acc", "latest": 5, "downsample": 3}),
    ("/api/v1/scalars", {"downsample": 10}),
    ("/api/v1/tensors", {"plugin": "histograms", "downsample": 4}),
    ("/api/v1/tensors", {"plugin": "histograms", "latest": 2, "downsample": 2}),
]


def _health(client: TestClient) -> dict[str, Any]:
    response = client.get("/api/v1/health")
    assert response.status_code == 200, response.text
    workers: dict[str, Any] = response.json()["answer_workers"]
    return workers


def _wait_ready(client: TestClient) -> None:
    """Asks for a large answer until the workers it starts take answers."""
    deadline = time.monotonic() + 4 * WAIT
    while not _health(client)["ready"]:
        assert time.monotonic() < deadline, "the answer workers never became ready"
        client.get("/api/v1/scalars", params={"tag": "loss", "step_max": 0, "downsample": 1})
        time.sleep(0.05)


@pytest.fixture
def both(spec_small: ExperimentSpec) -> Iterator[tuple[TestClient, TestClient]]:
    """The same store served without answer workers and with one, ready."""
    with serve(spec_small) as here, serve(spec_small, answer_processes=1) as elsewhere:
        assert here.get("/api/v1/health").json()["answer_workers"] is None
        _wait_ready(elsewhere)
        yield here, elsewhere


def test_answers_built_by_a_worker_are_those_built_here(
    both: tuple[TestClient, TestClient],
) -> None:
    here, elsewhere = both
    before = _health(elsewhere)["answers"]
    for path, params in MANY_SERIES:
        mine = here.get(path, params=params)
        theirs = elsewhere.get(path, params=params)
        assert mine.status_code == theirs.status_code == 200, (path, params, theirs.text)
        assert theirs.content == mine.content, (path, params)
        assert theirs.headers["content-type"] == mine.headers["content-type"]
    # Each was built by the worker (the cache answers none of them: every one is new).
    assert _health(elsewhere)["answers"] == before + len(MANY_SERIES)


@pytest.mark.parametrize(
    "params",
    [
        {"run": "train", "tag": "loss", "downsample": 10},  # one series
        {"tag": "loss"},  # every point: streamed from here if large, never held by a worker
        {"tag": "loss", "downsample": 10**6},  # as good as every point
    ],
)
def test_what_a_worker_does_not_build(
    both: tuple[TestClient, TestClient], params: dict[str, Any]
) -> None:
    here, elsewhere = both
    before = _health(elsewhere)["answers"]
    response = elsewhere.get("/api/v1/scalars", params=params)
    assert response.status_code == 200
    assert response.content == here.get("/api/v1/scalars", params=params).content
    assert _health(elsewhere)["answers"] == before


def test_a_lost_worker_costs_no_answer(both: tuple[TestClient, TestClient]) -> None:
    here, elsewhere = both
    workers = multiprocessing.active_children()
    assert workers, "no answer worker is running"
    for child in workers:
        os.kill(child.pid, signal.SIGKILL)
    for child in workers:
        child.join(WAIT)
    # Answered all the same, several at once (built here while the workers start again), and
    # right; the pool they all found broken counts as lost once.
    with ThreadPoolExecutor(4) as requests:
        answers = list(requests.map(lambda p: elsewhere.get(p[0], params=p[1]), MANY_SERIES[:4]))
    for (path, params), theirs in zip(MANY_SERIES[:4], answers, strict=True):
        assert theirs.status_code == 200, theirs.text
        assert theirs.content == here.get(path, params=params).content
    status = _health(elsewhere)
    assert status["lost"] == 1, status
    _wait_ready(elsewhere)
    before = _health(elsewhere)["answers"]
    path, params = MANY_SERIES[5]
    assert elsewhere.get(path, params=params).content == here.get(path, params=params).content
    assert _health(elsewhere)["answers"] == before + 1


def test_damage_met_by_a_worker_is_a_503(spec_small: ExperimentSpec, tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    shutil.copyfile(spec_small.db, db)
    spec = ExperimentSpec(spec_small.name, spec_small.logdir, db)
    # The first leaf page of the scalar points: the start of the first series' points.
    scramble_page(db, pages_of(db, "scalar_points")[0])
    with serve(spec, answer_processes=1) as client:
        _wait_ready(client)
        before = _health(client)["answers"]
        response = client.get("/api/v1/scalars", params={"tag": "loss", "downsample": 50})
        assert _health(client)["answers"] == before + 1
        assert_error(response, 503)


def test_idle_workers_stop_and_start_again() -> None:
    async def idle_then_asked() -> None:
        workers = AnswerWorkers(1, idle_seconds=0.3)
        try:
            while not workers.ready():
                await asyncio.sleep(0.05)
            assert await workers.run(operator.add, 1, 2) == 3
            assert multiprocessing.active_children()
            deadline = time.monotonic() + WAIT
            while multiprocessing.active_children():
                assert time.monotonic() < deadline, "the idle worker never stopped"
                await asyncio.sleep(0.05)
            assert not workers.status()["ready"]
            while not workers.ready():
                assert time.monotonic() < deadline + WAIT, "the workers never started again"
                await asyncio.sleep(0.05)
            assert await workers.run(operator.add, 2, 2) == 4
            assert workers.status()["answers"] == 2
        finally:
            workers.close()
        assert not multiprocessing.active_children()

    asyncio.run(idle_then_asked())
