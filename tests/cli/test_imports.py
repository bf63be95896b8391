"""``boardd --help`` and the start of every command stay cheap: building the parser imports no
command body and nothing heavy (each command imports what it needs when it runs)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("numpy", "apsw", "starlette", "uvicorn", "google.protobuf", "httpx", "watchdog")


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
