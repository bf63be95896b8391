"""The daemon's memory under a live writer and a polling client: the response cache holds one
answer per distinct request, however many commits pass (issue 12 §2; the RSS over an hour is
bench/bench_soak.py's, not a test's)."""

from __future__ import annotations

from pathlib import Path

from tests.daemon.conftest import ServeFactory, wait_until
from tests.daemon.test_serve import SyncWriter

RUNS = ("a", "b")
TAG = "loss"
ROUNDS = 30


def test_cache_holds_one_answer_per_request_under_a_live_writer(
    tmp_path: Path, serve: ServeFactory
) -> None:
    logdir = tmp_path / "logs"
    writers = {run: SyncWriter(logdir / run) for run in RUNS}
    try:
        for w in writers.values():
            w.write(TAG, range(1))
        daemon = serve(logdir, "--db", tmp_path / "s.sqlite")
        assert daemon.client is not None
        generic = {run: f"/api/v1/scalars?plugin=scalars&run={run}&tag={TAG}" for run in RUNS}
        tensorboard = {run: f"/data/plugin/scalars/scalars?run={run}&tag={TAG}" for run in RUNS}
        listing = "/api/v1/scalars/list?plugin=scalars"
        distinct = [*generic.values(), *tensorboard.values(), listing]
        sizes: dict[str, int] = {}
        for step in range(1, ROUNDS + 1):
            for w in writers.values():
                w.write(TAG, range(step, step + 1))
            for run in RUNS:
                wait_until(
                    # [] until the series' first point is committed.
                    lambda run=run, step=step: (
                        [p["step"] for p in daemon.scalars(run, TAG)][-1:] == [step]
                    ),
                    what=f"step {step} of {run}",
                    alive=daemon.check_alive,
                )
            for url in distinct:  # the polling client: every request, twice (a hit)
                for _ in range(2):
                    response = daemon.client.get(url)
                    assert response.status_code == 200, (url, response.text)
                    sizes[url] = len(response.content)
        cache = daemon.health()["cache"]
    finally:
        for w in writers.values():
            w.close()
    # One entry per distinct request, two for the generic routes (filed under the request's
    # fast key as well): never one per request and commit (before: ~5 per round, ~150 here).
    assert cache["entries"] <= 2 * len(distinct), cache
    assert cache["replaced"] >= ROUNDS, cache
    # What they hold is the last answers: each body, its gzip form, and the alias's copy
    # counted again (bytes are counted per key).
    assert cache["bytes"] <= 4 * sum(sizes.values()), (cache, sizes)
    assert cache["hits"] >= ROUNDS * len(distinct), cache
