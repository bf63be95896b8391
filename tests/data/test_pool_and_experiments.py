"""The read pool (per-thread connections, errors of the data layer) and what a store holds at
the top: experiment, runs, plugins, data loss."""

from __future__ import annotations

from pathlib import Path

import anyio
import apsw
import pytest

from boardd.data import experiments
from boardd.data.connections import ReadPool
from boardd.data.errors import Unavailable
from tests.api.conftest import RUNS


def test_pool_reads_in_a_worker_thread_and_closes(data_store: Path) -> None:
    pool = ReadPool(data_store)

    async def read() -> int:
        return await pool.run(experiments.generation)

    assert anyio.run(read) > 0
    assert len(pool.stores) == 1 and len(pool.stores[0]) >= 12
    pool.close()
    pool.close()  # twice is fine
    with pytest.raises(Unavailable, match="shutting down"):
        anyio.run(read)


def test_a_missing_store_is_unavailable(tmp_path: Path) -> None:
    pool = ReadPool(tmp_path / "none.sqlite")
    with pytest.raises(Unavailable, match="boardd ingest"):
        pool.call(experiments.generation)
    pool.close()


def test_experiment_runs_plugins(connection: apsw.Connection, exp_id: int) -> None:
    row = experiments.experiment(connection)
    assert row is not None and row.id == exp_id
    assert sorted(r.name for r in experiments.runs(connection, exp_id)) == sorted(RUNS)
    plugins = experiments.plugins(connection, exp_id)
    assert plugins["scalars"] == ["scalar"]
    assert plugins["histograms"] == ["tensor"]
    assert plugins["images"] == ["blob_sequence"]
    assert experiments.data_loss(connection, exp_id) == []
    assert experiments.data_loss_count(connection) == 0
