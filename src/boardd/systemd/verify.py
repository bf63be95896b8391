"""``systemd-analyze verify`` on unit files: systemd's own judgement, when it is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def verify_unit_text(unit_name: str, text: str, *, user: bool) -> list[str] | None:
    """``systemd-analyze verify`` on a unit's text: its diagnostics about this unit.

    An empty list means the unit is clean; None means systemd-analyze is not installed. Only
    lines about this unit count: in a container without systemd as PID 1 the tool may also
    complain about the host's own units.
    """
    with tempfile.TemporaryDirectory(prefix="boardd-verify-") as scratch:
        path = Path(scratch) / unit_name
        path.write_text(text, encoding="utf-8")
        return verify_unit_file(path, user=user)


def verify_unit_file(path: Path, *, user: bool) -> list[str] | None:
    """``systemd-analyze verify`` on a unit file.

    Returns its diagnostics about this unit (see verify_unit_text), or None without
    systemd-analyze. A template is checked as its instance ``i`` (what systemd-analyze does).
    """
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return None
    name = path.name
    env = dict(os.environ)
    # Log to stderr even when not on a terminal (the default target is the journal/kmsg).
    env.update(SYSTEMD_LOG_TARGET="console", SYSTEMD_LOG_COLOR="0", SYSTEMD_PAGER="cat")
    with tempfile.TemporaryDirectory(prefix="boardd-runtime-") as runtime:
        command = [analyze]
        if user:
            command.append("--user")
            # A user manager needs a runtime directory, absent under sudo or in containers.
            if not env.get("XDG_RUNTIME_DIR"):
                env["XDG_RUNTIME_DIR"] = runtime
        command += ["verify", "--man=no", "--recursive-errors=no", str(path)]
        proc = subprocess.run(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
            check=False,
        )
    stderr = proc.stderr.decode("utf-8", "replace").splitlines()
    prefix, _, _ = name.partition("@")
    ours = [
        line
        for line in stderr
        if line.startswith((name, f"{prefix}@", str(path))) or f"/{name}:" in line
    ]
    if proc.returncode != 0 and not ours:
        ours = stderr or [f"systemd-analyze verify exited with status {proc.returncode}"]
    return ours
