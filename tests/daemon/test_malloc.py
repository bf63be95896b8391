"""The daemon's allocator settings (boardd.daemon.memory), applied in a real process."""

from __future__ import annotations

import subprocess
import sys

CODE = "from boardd.daemon.memory import tune_malloc; print(','.join(tune_malloc()))"


def run(env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.strip()


def test_applied_unless_the_environment_says_otherwise() -> None:
    if not sys.platform.startswith("linux"):
        return
    assert run({}) == "MALLOC_ARENA_MAX,MALLOC_MMAP_THRESHOLD_"
    assert run({"MALLOC_ARENA_MAX": "4"}) == "MALLOC_MMAP_THRESHOLD_"
    assert run({"MALLOC_ARENA_MAX": "4", "MALLOC_MMAP_THRESHOLD_": "65536"}) == ""
