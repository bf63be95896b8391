"""A store rebuilt under a running server: the server reads the new file, never stale data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from starlette.testclient import TestClient
from tensorboardX import SummaryWriter

from boardd.api.app import create_app
from boardd.cli import ExitCode, main
from boardd.config import ExperimentSpec


def test_rebuild_swap_is_seen_and_old_blob_keys_do_not_resolve(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "run")) as w:
        for step in range(100):
            w.add_scalar("loss", float(step), step)
        w.add_image("img", np.zeros((3, 4, 4), dtype=np.uint8), 0)
    db = tmp_path / "store.sqlite"
    assert main(["ingest", str(logdir), "--db", str(db), "--json"]) == ExitCode.OK
    url = "/api/v1/scalars?plugin=scalars&run=run&tag=loss"
    with TestClient(create_app([ExperimentSpec("exp", logdir, db)])) as client:
        assert len(client.get(url).json()["run"]["loss"]) == 100
        images = client.get("/api/v1/blob_sequences?plugin=images&run=run").json()
        old_key = images["run"]["img"][0]["blobs"][-1]
        assert client.get(f"/api/v1/blob/{old_key}").status_code == 200

        code = main(
            [
                "ingest",
                str(logdir),
                "--db",
                str(db),
                "--samples-per-plugin",
                "scalars=10",
                "--rebuild",
                "--json",
            ]
        )
        assert code == ExitCode.OK
        # Same path, new file: the answer comes from the rebuilt store.
        assert len(client.get(url).json()["run"]["loss"]) == 10
        gone = client.get(f"/api/v1/blob/{old_key}")
        assert gone.status_code == 404
        # A key of the replaced file says so: list again.
        assert "rebuilt" in gone.json()["error"]["message"]
        images = client.get("/api/v1/blob_sequences?plugin=images&run=run").json()
        new_key = images["run"]["img"][0]["blobs"][-1]
        assert new_key != old_key
        assert client.get(f"/api/v1/blob/{new_key}").status_code == 200
        # Keys that were never valid say they are unknown, not that the store was rebuilt.
        store = new_key.partition("~")[2].partition(".")[0]
        for bogus in ("exp~0123abcd4567.1", f"exp~{store}.999999", "exp~abc", "nope~1"):
            unknown = client.get(f"/api/v1/blob/{bogus}")
            assert unknown.status_code == 404, bogus
            message = unknown.json()["error"]["message"]
            assert "unknown blob key" in message and "rebuilt" not in message, (bogus, message)
