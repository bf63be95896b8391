"""Deferred endpoints (boardd.api.deferred): the code of the routes a first answer does not
need stays off ``boardd serve``'s start, and every deferred name resolves to a handler."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from boardd.api import deferred
from boardd.api.app import create_app
from boardd.config import ExperimentSpec

SRC = Path(__file__).resolve().parents[2] / "src"


def test_every_deferred_endpoint_names_a_handler(tmp_path: Path) -> None:
    create_app([ExperimentSpec("e", tmp_path / "logs", tmp_path / "e.sqlite")])
    targets = list(deferred.DEFERRED)
    modules = {module for module, _ in targets}
    # TensorBoard's plugins but scalars and the projector; the hparams and lineage API.
    assert {
        "boardd.plugins.histograms.tensorboard_routes",
        "boardd.plugins.images.tensorboard_routes",
        "boardd.plugins.timeseries.tensorboard_routes",
        "boardd.plugins.hparams.tensorboard_routes",
        "boardd.plugins.hparams.boardd_routes",
        "boardd.api.metadata",
    } <= modules
    for module, name in targets:
        handler = deferred.resolve(module, name)
        assert inspect.iscoroutinefunction(handler), (module, name)
        assert handler.__name__ == name


def test_the_app_is_made_without_the_deferred_modules(tmp_path: Path) -> None:
    # A fresh interpreter, as `boardd serve` starts: making the app imports none of them, and
    # load_all() (the daemon's warm-up) imports every one.
    script = f"""
import sys
from pathlib import Path
from boardd.api import deferred
from boardd.api.app import create_app
from boardd.config import ExperimentSpec

root = Path({str(tmp_path)!r})
create_app([ExperimentSpec("e", root / "logs", root / "e.sqlite")])
modules = sorted({{module for module, _ in deferred.DEFERRED}})
assert len(modules) >= 10, modules
early = [m for m in modules if m in sys.modules]
assert not early, early
deferred.load_all()
late = [m for m in modules if m not in sys.modules]
assert not late, late
print("ok", len(modules))
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok ")
