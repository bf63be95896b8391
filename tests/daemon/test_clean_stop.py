"""A stop soon after start is clean: ``boardd serve`` of an empty logdir, sent SIGTERM (or
SIGINT, as Ctrl-C) the moment its port file says it is ready or a little later, exits 0 and
prints no traceback, however the signal falls against the start's last steps."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.daemon.conftest import STOP_TIMEOUT, boardd_env

#: Seconds after the port file appears when each try sends its signal: at once (the port file
#: is written before the HTTP server runs), then later in the start's last steps.
DELAYS = (0.0, 0.0, 0.0, 0.002, 0.005, 0.01, 0.03, 0.1)


def test_a_stop_soon_after_start_is_clean(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    began = time.monotonic()
    for n, delay in enumerate(DELAYS):
        signum = signal.SIGINT if n % 4 == 3 else signal.SIGTERM
        port_file = tmp_path / f"port-{n}"
        command = [sys.executable, "-m", "boardd", "serve", str(logdir), "--port", "0"]
        proc = subprocess.Popen(
            [*command, "--port-file", str(port_file)],
            env=boardd_env(STATE_DIRECTORY=str(tmp_path / "state")),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 30
            while not port_file.exists() and proc.poll() is None:
                assert time.monotonic() < deadline, "no port file within 30 s"
                time.sleep(0.001)
            time.sleep(delay)
            proc.send_signal(signum)
            _, err = proc.communicate(timeout=STOP_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        stderr = err.decode(errors="replace")
        what = f"try {n}: {signal.Signals(signum).name} {delay * 1000:g} ms after ready"
        assert proc.returncode == 0, f"{what}: exit {proc.returncode}\n{stderr}"
        assert "Traceback" not in stderr and "Error" not in stderr, f"{what}\n{stderr}"
        assert f"received {signal.Signals(signum).name}: stopping" in stderr, f"{what}\n{stderr}"
        assert not port_file.exists(), what  # removed by the clean stop
    assert time.monotonic() - began < 20
