"""/api/v1/health's read counters keep counting once live: a run that grows after the catch-up
moves ``bytes_done`` and ``bytes_total`` (every byte of its event file read, and no more) and
gives a rate, where they used to stop at the catch-up's figures."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import EventRun
from tests.daemon.conftest import ServeFactory, wait_until


def event_bytes(logdir: Path) -> int:
    return sum(p.stat().st_size for p in logdir.rglob("*tfevents*"))


def test_read_counters_keep_counting_live(serve: ServeFactory, tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    run = EventRun(logdir / "train")
    try:
        run.scalars("loss", {step: step / 10 for step in range(200)})
        daemon = serve(logdir, "--db", tmp_path / "store.sqlite", "--rescan-interval", "3600")
        caught_up = daemon.wait_for_state("live")
        assert caught_up["bytes_done"] == caught_up["bytes_total"] == event_bytes(logdir)
        # The run grows: heard through inotify, read live (no rescan comes).
        for start in (200, 400, 600):
            run.scalars("loss", {step: step / 10 for step in range(start, start + 200)})
            size = event_bytes(logdir)
            status = wait_until(
                lambda: (s := daemon.status())["bytes_done"] == size and s,  # noqa: B023
                what=f"bytes_done at the event file's {size} bytes",
                alive=daemon.check_alive,
            )
            assert status["bytes_total"] == size
            assert status["state"] == "live"
            assert status["bytes_per_second"] > 0
        assert size > caught_up["bytes_done"]
        daemon.wait_for_steps("train", "loss", range(800))
    finally:
        run.close()
