"""The dashboard's answer types (web/src/generated/openapi.ts) are generated from boardd's
OpenAPI document and committed: regenerated here, they must equal the committed file, so a
change of the API's routes or schemas cannot leave the dashboard typed against the old ones.

The bundle's build only reads the file (it runs where boardd's dependencies may be missing:
hatch_build.py's isolated build environment, an sdist); ``npm --prefix web run gen:api``
rewrites it. Regenerating needs Node.js and web/node_modules (``npm --prefix web ci``):
without them this test skips, with the reason; in CI (env ``CI`` set) it fails instead."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from boardd.api.openapi import SPEC

REPO = Path(__file__).resolve().parents[1]
WEB = REPO / "web"
GENERATED = WEB / "src" / "generated" / "openapi.ts"


def openapi_json() -> ModuleType:
    """tools/openapi_json.py, by path."""
    path = REPO / "tools" / "openapi_json.py"
    spec = importlib.util.spec_from_file_location("openapi_json", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def test_the_dump_is_the_served_document(tmp_path: Path) -> None:
    """tools/openapi_json.py writes what /api/v1/openapi.json serves."""
    out = tmp_path / "openapi.json"
    tool = openapi_json()
    assert json.loads(tool.document()) == SPEC
    subprocess.run(
        [sys.executable, str(REPO / "tools" / "openapi_json.py"), str(out)],
        check=True,
        cwd=tmp_path,
    )
    assert json.loads(out.read_text(encoding="utf-8")) == SPEC


def test_the_committed_types_are_generated_from_the_document(tmp_path: Path) -> None:
    node = shutil.which("node")
    generator = WEB / "node_modules" / "openapi-typescript" / "package.json"
    if node is None or not generator.is_file():
        missing = "Node.js on PATH" if node is None else "openapi-typescript in web/node_modules"
        reason = f"no {missing}: npm --prefix web ci"
        if _in_ci():
            pytest.fail(f"{reason} (CI is set: the dashboard's types must be checked)")
        pytest.skip(reason)
    assert GENERATED.is_file(), "web/src/generated/openapi.ts is missing: npm run gen:api"
    spec = tmp_path / "openapi.json"
    spec.write_text(openapi_json().document(), encoding="utf-8")
    check = subprocess.run(
        [node, "gen-api.mjs", "--check", "--spec", str(spec)],
        cwd=WEB,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, (
        "web/src/generated/openapi.ts is stale (the OpenAPI document changed): run "
        f"npm --prefix web run gen:api and commit it\n{check.stdout}{check.stderr}"
    )
