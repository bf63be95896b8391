"""The daemon's answer workers (api/workers.py) are its own business: they end with it, however
it ends, and a Ctrl-C on its terminal is one clean stop, not a traceback from each of them."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tensorboardX import SummaryWriter

from tests.daemon.conftest import Daemon, ServeFactory, wait_until


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
            found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


def _with_workers(serve: ServeFactory, tmp_path: Path) -> tuple[Daemon, list[int]]:
    """A daemon (leading a process group of its own, as on a terminal) whose answer worker
    has built an answer; and its child processes."""
    logdir = tmp_path / "logs"
    for run in ("a", "b", "c"):
        with SummaryWriter(str(logdir / run)) as writer:
            for step in range(50):
                writer.add_scalar("loss", step / 10, step)
    daemon = serve(
        logdir, "--db", tmp_path / "store.sqlite", "--answer-processes", "1", prefix=("setsid",)
    )

    asked = iter(range(2, 10_000))

    def answered_by_a_worker() -> bool:
        # Each time another answer (a cached one is not built again), of every run's series.
        assert daemon.client is not None
        response = daemon.client.get(
            "/api/v1/scalars", params={"tag": "loss", "downsample": next(asked)}
        )
        if response.status_code == 503 or sorted(response.json()) != ["a", "b", "c"]:
            return False  # a new store not caught up yet
        assert response.status_code == 200, response.text
        return bool(daemon.health()["answer_workers"]["answers"])

    wait_until(answered_by_a_worker, what="an answer from a worker", alive=daemon.check_alive)
    children = _children(daemon.pid)
    assert children, "the daemon has no child process"
    return daemon, children


def test_ctrl_c_stops_the_daemon_and_its_workers_cleanly(
    serve: ServeFactory, tmp_path: Path
) -> None:
    daemon, children = _with_workers(serve, tmp_path)
    # What a terminal sends on Ctrl-C: SIGINT to the whole foreground process group.
    os.killpg(daemon.pid, signal.SIGINT)
    assert daemon.proc.wait(30) == 0, daemon.stderr()
    log = daemon.stderr()
    assert "Traceback" not in log and "KeyboardInterrupt" not in log, log
    wait_until(lambda: not any(map(_alive, children)), what="the workers gone")


def test_workers_do_not_outlive_a_killed_daemon(serve: ServeFactory, tmp_path: Path) -> None:
    daemon, children = _with_workers(serve, tmp_path)
    daemon.proc.kill()
    daemon.proc.wait(10)
    wait_until(lambda: not any(map(_alive, children)), what="the workers gone")
