"""The daemon's allocator settings (boardd.daemon.memory), applied in a real process."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

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


def test_memory_debugging_writes_snapshots_and_mallinfo(tmp_path: Path) -> None:
    # BOARDD_DEBUG_MEMORY (bench/README.md, the soak): tracemalloc snapshots and a line of
    # glibc's mallinfo2 with VmRSS, every BOARDD_DEBUG_MEMORY_EVERY seconds.
    if not sys.platform.startswith("linux"):
        return
    code = "import time; from boardd.daemon.memory import tune_malloc; tune_malloc(); time.sleep(1)"
    env = {"BOARDD_DEBUG_MEMORY": str(tmp_path), "BOARDD_DEBUG_MEMORY_EVERY": "0.2"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    snapshots = sorted(tmp_path.glob("snap-*.bin"))
    assert snapshots
    tracemalloc.Snapshot.load(str(snapshots[-1]))
    line = json.loads((tmp_path / "mallinfo.jsonl").read_text().splitlines()[-1])
    assert line["rss"] > 0 and line["traced"] > 0 and line["arena"] > 0
