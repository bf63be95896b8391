"""Fixtures of the daemon's end-to-end tests: ``boardd serve`` as a real subprocess, a client."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

#: This checkout's sources, first on the subprocess's path (the venv also has it editable).
SRC = str(Path(__file__).resolve().parents[2] / "src")

#: How long the daemon may take to write its port file.
START_TIMEOUT = 30.0
#: How long a SIGTERM'd daemon may take to exit (it commits, releases, checkpoints).
STOP_TIMEOUT = 10.0
#: The default deadline of wait_until(): generous, so a loaded machine does not flake.
DEADLINE = 10.0

T = TypeVar("T")

_DAEMONS = pytest.StashKey[list["Daemon"]]()


def wait_until(
    probe: Callable[[], T],
    *,
    timeout: float = DEADLINE,
    what: str = "the condition",
    alive: Callable[[], None] | None = None,
) -> T:
    """Polls ``probe()`` until it returns something truthy, and returns that; fails after
    ``timeout`` seconds with the last value seen. ``alive()`` may raise to fail sooner."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = probe()
        if last:
            return last
        if alive is not None:
            alive()
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s; last seen: {last!r}")
        time.sleep(0.05)


class Daemon:
    """A running ``boardd serve`` subprocess and an HTTP client to it."""

    def __init__(self, proc: subprocess.Popen[bytes], stderr: Path, port_file: Path) -> None:
        self.proc = proc
        self.stderr_path = stderr
        self.port_file = port_file
        self.port = 0
        self.client: httpx.Client | None = None

    @property
    def pid(self) -> int:
        """The daemon's process id."""
        return self.proc.pid

    def stderr(self) -> str:
        """Everything the daemon logged so far."""
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def check_alive(self) -> None:
        """Fails (with the daemon's log) if the process has exited."""
        rc = self.proc.poll()
        if rc is not None:
            raise AssertionError(f"boardd serve exited with {rc}:\n{self.stderr()}")

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Waits for the port file (written once the stores are open and the port bound)."""
        text = wait_until(
            lambda: self.port_file.read_text() if self.port_file.exists() else "",
            timeout=timeout,
            what="the port file",
            alive=self.check_alive,
        )
        self.port = int(text)
        self.client = httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}", timeout=10.0, trust_env=False
        )

    # -- the API ----------------------------------------------------------------------------

    def get(self, path: str, **params: Any) -> Any:
        """GETs ``/api/v1/PATH`` and returns the decoded JSON body (asserting 200)."""
        assert self.client is not None, "the daemon is not ready"
        response = self.client.get(f"/api/v1/{path}", params=params)
        assert response.status_code == 200, f"GET {path} {params}: {response.text}"
        return response.json()

    def health(self) -> dict[str, Any]:
        """The /api/v1/health document."""
        body = self.get("health")
        assert isinstance(body, dict)
        return body

    def status(self, experiment: str | None = None) -> dict[str, Any]:
        """One experiment's entry of /api/v1/health (the first one by default)."""
        entries = self.health()["experiments"]
        for entry in entries:
            if experiment is None or entry["name"] == experiment:
                assert isinstance(entry, dict)
                return entry
        raise AssertionError(f"no experiment {experiment!r} in health: {entries}")

    def runs(self, experiment: str | None = None) -> list[str]:
        """The names of the live runs, sorted (their order is tested with the API)."""
        params = {} if experiment is None else {"experiment": experiment}
        return sorted(r["name"] for r in self.get("runs", **params))

    def scalars(
        self, run: str, tag: str, *, experiment: str | None = None, latest: int | None = None
    ) -> list[dict[str, Any]]:
        """One series' points through /api/v1/scalars ([] when the series is unknown)."""
        params: dict[str, Any] = {"plugin": "scalars", "run": run, "tag": tag}
        if experiment is not None:
            params["experiment"] = experiment
        if latest is not None:
            params["latest"] = latest
        assert self.client is not None, "the daemon is not ready"
        response = self.client.get("/api/v1/scalars", params=params)
        if response.status_code == 503 and response.json()["error"]["code"] == "unavailable":
            # A new store between its port file and its first commit: no points yet.
            return []
        assert response.status_code == 200, f"GET scalars {params}: {response.text}"
        points = response.json().get(run, {}).get(tag, [])
        assert isinstance(points, list)
        return points

    def wait_for_state(
        self, state: str, experiment: str | None = None, timeout: float = DEADLINE
    ) -> dict[str, Any]:
        """Polls /api/v1/health until the experiment is in ``state``; returns its entry."""
        return wait_until(
            lambda: (s := self.status(experiment))["state"] == state and s,
            timeout=timeout,
            what=f"state {state!r}",
            alive=self.check_alive,
        )

    def wait_for_steps(
        self,
        run: str,
        tag: str,
        steps: Sequence[int],
        *,
        experiment: str | None = None,
        timeout: float = DEADLINE,
    ) -> list[dict[str, Any]]:
        """Polls /api/v1/scalars until the series holds exactly ``steps``; returns its points."""
        wanted = list(steps)
        return wait_until(
            lambda: (
                (p := self.scalars(run, tag, experiment=experiment))
                and [x["step"] for x in p] == wanted
                and p
            ),
            timeout=timeout,
            what=f"steps {wanted[:3]}...{wanted[-3:]} of {run}/{tag}",
            alive=self.check_alive,
        )

    # -- life cycle -------------------------------------------------------------------------

    def send(self, signum: int) -> None:
        """Sends ``signum`` to the daemon."""
        self.proc.send_signal(signum)

    def stop(self, signum: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> int:
        """Sends ``signum`` and returns the exit code; kills and fails if it hangs."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"boardd serve did not exit within {timeout:g} s of "
                f"{signal.Signals(signum).name}:\n{self.stderr()}"
            ) from None
        finally:
            self.close_client()
        return rc

    def close_client(self) -> None:
        """Closes the HTTP client (safe twice)."""
        if self.client is not None:
            self.client.close()
            self.client = None


def boardd_env(**extra: str) -> dict[str, str]:
    """The environment of a boardd subprocess: this checkout's sources importable, no
    inherited systemd variables."""
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    for name in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS"):
        env.pop(name, None)
    env.update(extra)
    return env


#: Starts ``boardd serve ARGS`` (a factory fixture: see :func:`serve`).
ServeFactory = Callable[..., Daemon]


@pytest.fixture
def serve(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ServeFactory]:
    """A factory: ``serve(*args, env=None, prefix=(), wait=True, port=0)`` starts
    ``python -m boardd serve ARGS --port PORT --port-file F`` and returns a ready
    :class:`Daemon` (a fixed port: to restart a daemon where its clients reconnect).

    Teardown SIGTERMs every daemon still running and asserts it exits 0 in time (killing it
    if it hangs). The daemons' logs are attached to a failing test's report.
    """
    daemons: list[Daemon] = []
    request.node.stash[_DAEMONS] = daemons
    state = tmp_path / "state"

    def start(
        *args: str | Path,
        env: dict[str, str] | None = None,
        prefix: Sequence[str] = (),
        wait: bool = True,
        port: int = 0,
    ) -> Daemon:
        n = len(daemons)
        port_file = tmp_path / f"boardd-{n}.port"
        stderr = tmp_path / f"boardd-{n}.stderr"
        command = [
            *prefix,
            sys.executable,
            "-m",
            "boardd",
            "serve",
            *(str(a) for a in args),
            "--port",
            str(port),
            "--port-file",
            str(port_file),
            "--log-level",
            "info",
        ]
        with open(stderr, "wb") as err:
            proc = subprocess.Popen(
                command,
                env=boardd_env(STATE_DIRECTORY=str(state), **(env or {})),
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
            )
        daemon = Daemon(proc, stderr, port_file)
        daemons.append(daemon)
        if wait:
            daemon.wait_ready()
        return daemon

    yield start

    problems = []
    for daemon in daemons:
        if daemon.proc.poll() is not None:
            daemon.close_client()
            continue
        try:
            rc = daemon.stop()
        except AssertionError as exc:
            problems.append(str(exc))
            continue
        if rc != 0:
            problems.append(f"boardd serve exited with {rc} after SIGTERM:\n{daemon.stderr()}")
    assert not problems, "\n\n".join(problems)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attaches the daemons' stderr to the report of a failing test."""
    report = yield
    if report.failed:
        for i, daemon in enumerate(item.stash.get(_DAEMONS, [])):
            with contextlib.suppress(OSError):
                report.sections.append((f"boardd serve #{i} (pid {daemon.pid})", daemon.stderr()))
    return report


def unshare_works() -> bool:
    """Whether this machine lets a test start a process in a user namespace of its own (a
    real, private inotify watch limit without touching the machine's)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "true"], capture_output=True, check=False
    )
    return probe.returncode == 0
