"""What ``boardd serve`` loads before its port is bound: what only the ingest (the reader, the
event protos, the watcher, the worker pool), the disk cache or numpy need is imported later, by the
thread that uses it, and no uvicorn nor a command-line library ever, so a restart answers sooner
(bench/bench_tensorboard.py, start-up)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tensorboardX import SummaryWriter

from boardd.data.connections import open_store
from boardd.data.experiments import experiment_id
from boardd.data.kinds import SCALARS
from boardd.data.series import Bounds, Selection, list_series, read_scalars
from tests.conftest import ingest
from tests.daemon.conftest import SRC, ServeFactory, wait_until

#: Modules (and their submodules) that must not be loaded before the port is bound.
LATER = (
    "boardd.ingest",
    "boardd.daemon.watcher",
    "boardd.reader.events",
    "boardd.reader.pipeline",
    "boardd.proto",
    "google.protobuf",
    "diskcache",
    "boardd.ingest.worker_pool",
    # TensorBoard's UI is located in its package, never imported (importing it takes seconds);
    # text descriptions are rendered by the first route that needs them.
    "tensorboard",
    "markdown",
    "bleach",
    # The UI's zip, CSV answers and the disk cache's database load on first use.
    "zipfile",
    "csv",
    "sqlite3",
    # boardd's HTTP server is its own (boardd.daemon.http_server): uvicorn, its command line (click)
    # and its supervisors are not needed at all.
    "uvicorn",
    "click",
    "multiprocessing",
    # numpy: the warm-up imports it, after the first answer (boardd.data.accel).
    "numpy",
)


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def early(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in LATER))


def test_the_serve_start_path_does_not_load_the_ingest_nor_the_disk_cache(
    tmp_path: Path,
) -> None:
    # Everything `boardd serve` imports up to binding its port and building its app, its
    # settings parsed as `boardd serve LOGDIR` parses them (the routes of TensorBoard's other
    # plugins: tests/api/test_deferred.py).
    modules = loaded_after(
        "import boardd.cli.serve, boardd.daemon.service, boardd.api.app, boardd.store.session\n"
        "from boardd.config import serve_settings\n"
        f"settings = serve_settings([{str(tmp_path)!r}], db={str(tmp_path / 'store.sqlite')!r})\n"
        "boardd.api.app.create_app(settings.experiments)"
    )
    assert {
        "boardd.daemon.service",
        "boardd.config",
        "boardd.daemon.http_server",
        "httptools",
    } <= modules
    assert early(modules) == []


def test_the_guard_sees_an_early_import() -> None:
    # The check itself can fail: the ingest's own modules load what the daemon defers.
    found = early(loaded_after("import boardd.daemon.watcher, boardd.reader.events"))
    assert {"boardd.daemon.watcher", "boardd.reader.events", "google.protobuf"} <= set(found)


# -- numpy comes with the warm-up, after the first answer ----------------------------------------

#: Installed in the daemon's interpreter through sitecustomize: reports which thread imports
#: numpy first (it must be one of the daemon's own threads that start after the first answer,
#: the warm-up or the runner's catch-up, never the start nor a request).
_WATCH_NUMPY = """\
import sys, threading


class _WatchNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            thread = threading.current_thread().name
            sys.stderr.write(f"numpy first imported by thread {thread!r}\\n")
            sys.stderr.flush()
            sys.meta_path.remove(self)
        return None


sys.meta_path.insert(0, _WatchNumpy())
"""


def test_a_restart_answers_its_first_downsampled_scalars_without_numpy(
    tmp_path: Path, serve: ServeFactory
) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "store.sqlite"
    writer = SummaryWriter(str(logdir / "train"))
    for step in range(1500):  # more than the route's 1,000 samples: it downsamples
        writer.add_scalar("loss", 1.0 / (step + 1), step)
    writer.close()
    ingest(logdir, db)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_WATCH_NUMPY)
    daemon = serve(logdir, "--db", db, env={"PYTHONPATH": f"{hook}{os.pathsep}{SRC}"})
    assert daemon.client is not None
    answer = daemon.client.get(
        "/data/plugin/scalars/scalars", params={"run": "train", "tag": "loss"}
    )
    assert answer.status_code == 200, answer.text
    points = answer.json()
    # The warm-up imports numpy once the answer is out.
    found = wait_until(
        lambda: re.search(r"numpy first imported by thread '([^']+)'", daemon.stderr()),
        what="numpy's import",
        alive=daemon.check_alive,
    )
    # The warm-up, or the runner's catch-up (which also waits for the first answer): never
    # the start (MainThread) nor a request (asyncio's pool).
    assert found.group(1) in ("boardd-warm-up", "boardd-default"), daemon.stderr()
    # The points numpy's kernels choose (this process has numpy).
    connection = open_store(db)
    try:
        (series,) = list_series(
            connection, experiment_id(connection, "default"), SCALARS, Selection("scalars")
        )
        (expected,) = read_scalars(connection, [series], Bounds(downsample=1000))
    finally:
        connection.close()
    assert len(points) == 1000 and points[-1][1] == 1499
    assert [p[1] for p in points] == expected.steps.tolist()
    assert [p[2] for p in points] == expected.values.tolist()
