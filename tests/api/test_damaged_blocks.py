"""A block of scalar points whose bytes changed on disk (SQLite sees nothing wrong with its
pages) is never answered as data: the read answers 503 and the store is reported damaged."""

from __future__ import annotations

import math
from pathlib import Path

import apsw

from boardd.config import ExperimentSpec
from boardd.store import damage
from tests.api.conftest import assert_error, serve
from tests.conftest import EventRun, ingest


def test_a_block_whose_bytes_changed_answers_503(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "s.db"
    run = EventRun(logdir / "train")
    run.scalars("loss", {s: math.sin(s / 50) for s in range(5000)})
    run.close()
    ingest(logdir, db, experiment="e")
    writer = apsw.Connection(str(db))
    with writer:
        data = bytearray(writer.execute("SELECT data FROM scalar_blocks LIMIT 1").get)
        data[len(data) // 2] ^= 0x40
        writer.execute("UPDATE scalar_blocks SET data = ? WHERE rowid = 1", (bytes(data),))
    writer.close()
    heard: list[str | None] = []
    stop = damage.listen(lambda found, store: heard.append(store))
    try:
        with serve(ExperimentSpec("e", logdir, db)) as client:
            response = client.get("/api/v1/scalars", params={"tag": "loss"})
            error = assert_error(response, 503)
            assert "damaged" in error["message"], error
    finally:
        stop()
    assert heard, "the store's writer was not told"
