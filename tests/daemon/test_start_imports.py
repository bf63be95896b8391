"""What ``boardd serve`` loads before its port is bound: what only the ingest (the reader, the
event protos, watchdog, the worker pool) or the disk cache need is imported later, by the
thread that uses it, and uvicorn's command line never, so a restart answers sooner
(bench/bench_tensorboard.py, start-up)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Modules (and their submodules) that must not be loaded before the port is bound.
LATER = (
    "boardd.ingest",
    "boardd.daemon.watcher",
    "boardd.reader.events",
    "boardd.reader.pipeline",
    "boardd.proto",
    "google.protobuf",
    "watchdog",
    "diskcache",
    "boardd.ingest.pool",
    # TensorBoard's UI is located in its package, never imported (importing it takes seconds);
    # text descriptions are rendered by the first route that needs them.
    "tensorboard",
    "markdown",
    "bleach",
    # The UI's zip, CSV answers and the disk cache's database load on first use.
    "zipfile",
    "csv",
    "sqlite3",
    # uvicorn's command line, reloader and supervisors (boardd.daemon.uvicorn_server).
    "uvicorn.main",
    "uvicorn.supervisors",
    "click",
    "multiprocessing",
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
    assert {"boardd.daemon.service", "boardd.config", "uvicorn.server"} <= modules
    assert early(modules) == []


def test_uvicorn_is_whole_for_anyone_who_asks_for_more_than_the_server() -> None:
    # The package registered without its __init__ runs it on the first other name asked.
    code = (
        "import sys\n"
        "from boardd.daemon.uvicorn_server import Config, Server\n"
        "import uvicorn\n"
        "assert uvicorn.Config is Config and uvicorn.Server is Server\n"
        "assert 'uvicorn.main' not in sys.modules and 'click' not in sys.modules\n"
        "from uvicorn import run, main\n"
        "assert callable(run) and callable(main), (run, main)\n"
        "assert uvicorn.__version__ and 'click' in sys.modules\n"
        "assert sys.modules['uvicorn.main'].run is run and uvicorn.Server is Server\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_guard_sees_an_early_import() -> None:
    # The check itself can fail: the ingest's own modules load what the daemon defers.
    found = early(loaded_after("import boardd.daemon.watcher, boardd.reader.events"))
    assert {"watchdog", "boardd.reader.events", "google.protobuf"} <= set(found)
