"""Hatchling build hook: builds boardd's dashboard (``web/``, TypeScript bundled by esbuild)
into ``src/boardd/dashboard/static/`` when that bundle is missing or older than its sources,
for every build: wheel, editable install (``pip install -e .``) and sdist.

The bundle is not committed (nor is any npm package): ``npm ci`` installs the exact versions
of ``web/package-lock.json`` and ``npm run build`` writes the bundle, which the wheel then
carries as an artifact (it is gitignored). Built from an sdist that already holds the bundle,
nothing runs. Node.js (>= 20.19) and npm are needed only when the bundle has to be built.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: The bundle, relative to the project's root (boardd/api/dashboard.py serves it).
STATIC = "src/boardd/dashboard/static"
#: What the bundle is built from: a newer one of these makes it stale.
SOURCES = ("src", "package.json", "package-lock.json", "build.mjs", "tsconfig.json")


class DashboardBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        web = root / "web"
        static = root / STATIC
        index = static / "index.html"
        if (web / "package.json").is_file() and _stale(web, index):
            self.app.display_info(f"building boardd's dashboard ({web} → {static})")
            _build(web)
        if not index.is_file():
            raise RuntimeError(f"boardd's dashboard bundle is missing: {index} was not built")
        # Gitignored, so included explicitly (in the wheel, and in an sdist).
        build_data.setdefault("artifacts", []).append(f"/{STATIC}/")


def _newest(path: Path) -> float:
    if path.is_dir():
        return max((_newest(p) for p in path.iterdir()), default=0.0)
    return path.stat().st_mtime if path.exists() else 0.0


def _stale(web: Path, index: Path) -> bool:
    if not index.is_file():
        return True
    return max(_newest(web / name) for name in SOURCES) > index.stat().st_mtime


def _build(web: Path) -> None:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise RuntimeError(
            "boardd's dashboard (web/) must be built, and that needs Node.js (>= 20.19) and npm, "
            "which were not found on PATH: install them (a distribution's nodejs and npm "
            "packages if recent enough) and run the install again, or build the bundle "
            "yourself first: "
            "npm --prefix web ci && npm --prefix web run build"
        )
    lock = web / "node_modules" / ".package-lock.json"
    if not lock.is_file() or lock.stat().st_mtime < (web / "package-lock.json").stat().st_mtime:
        _run([npm, "ci", "--no-audit", "--no-fund"], web)
    _run([npm, "run", "build"], web)


def _run(cmd: list[str], cwd: Path) -> None:
    env = {**os.environ, "npm_config_update_notifier": "false"}
    try:
        subprocess.run(cmd, cwd=cwd, env=env, check=True)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(
            f"building boardd's dashboard failed: {' '.join(cmd)} (in {cwd}) exited "
            f"{exc.returncode}; its output is above"
        ) from exc
