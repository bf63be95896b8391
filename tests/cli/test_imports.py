"""``boardd --help`` and the start of every command stay cheap: building the parser imports no
command body and nothing heavy (each command imports what it needs when it runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from boardd.cli import main

HEAVY = ("numpy", "apsw", "starlette", "uvicorn", "google.protobuf", "httpx")


def test_building_the_parser_imports_nothing_heavy() -> None:
    code = (
        "import json, sys\n"
        "from boardd.cli import build_parser\n"
        "build_parser()\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(json.loads(done.stdout))
    assert not {m for m in HEAVY if m in loaded}
    bodies = {"boardd.ingest", "boardd.daemon", "boardd.api", "boardd.systemd.install"}
    assert not bodies & loaded
    assert "boardd.cli.serve" in loaded  # the check sees what it should


def test_openblas_starts_no_thread_pool_unless_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Set by main() before any command imports numpy (the test above: building the parser
    # imports none), so numpy's OpenBLAS starts one thread, not one per core.
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    with pytest.raises(SystemExit):
        main(["--version"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    with pytest.raises(SystemExit):
        main(["--version"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
