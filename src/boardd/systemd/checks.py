"""What ``boardd install-service`` checks on this machine before it says how to start a unit:
whether a systemd manager is there for ``systemctl`` to reach, and whether the unit's port is
held right now (and by whom). Each check reads, never changes anything, and never runs
systemctl."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import stat
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Exists while systemd is the init system (what sd_booted(3) checks).
BOOTED_MARKER = Path("/run/systemd/system")
#: pam_systemd(8) sets $XDG_RUNTIME_DIR to /run/user/$UID in a login session.
RUNTIME_BASE = Path("/run/user")
#: The user manager's own socket under $XDG_RUNTIME_DIR, which ``systemctl --user`` connects to
#: first (it falls back to the session bus, $DBUS_SESSION_BUS_ADDRESS).
PRIVATE_SOCKET = Path("systemd") / "private"


@dataclass(frozen=True)
class Manager:
    """Whether ``systemctl`` (``--user``) can reach a manager from this process's environment.

    ``reachable``: it can, as the environment stands. ``runtime_dir``: for a user manager that
    runs but that this environment does not point to ($XDG_RUNTIME_DIR unset or elsewhere, as
    after ``su``), the directory to export as $XDG_RUNTIME_DIR. ``booted``: systemd is the init
    system.
    """

    reachable: bool
    booted: bool
    runtime_dir: Path | None = None


def systemd_booted(marker: Path = BOOTED_MARKER) -> bool:
    """Whether systemd is this machine's init system (sd_booted(3)'s test)."""
    return marker.is_dir()


def find_manager(
    *,
    user: bool,
    environ: Mapping[str, str] | None = None,
    uid: int | None = None,
    booted_marker: Path = BOOTED_MARKER,
    runtime_base: Path = RUNTIME_BASE,
) -> Manager:
    """Where ``systemctl`` would find its manager: the system's (systemd booted) or the user's
    (its socket answers a connection under $XDG_RUNTIME_DIR). A user environment with
    $DBUS_SESSION_BUS_ADDRESS but without $XDG_RUNTIME_DIR is taken as reachable: systemctl
    goes through that bus, which cannot be checked without speaking D-Bus."""
    env = os.environ if environ is None else environ
    booted = systemd_booted(booted_marker)
    if not user:
        return Manager(reachable=booted, booted=booted)
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and _answers(Path(runtime) / PRIVATE_SOCKET):
        return Manager(reachable=True, booted=booted)
    if not runtime and env.get("DBUS_SESSION_BUS_ADDRESS"):
        return Manager(reachable=True, booted=booted)
    usual = runtime_base / str(os.getuid() if uid is None else uid)
    if str(usual) != runtime and _answers(usual / PRIVATE_SOCKET):
        return Manager(reachable=False, booted=booted, runtime_dir=usual)
    return Manager(reachable=False, booted=booted)


def _answers(path: Path) -> bool:
    """Whether a Unix socket at ``path`` accepts a connection (a leftover file does not)."""
    try:
        if not stat.S_ISSOCK(path.stat().st_mode):
            return False
    except OSError:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


@dataclass(frozen=True)
class PortHolder:
    """What holds a TCP port on this machine now: a boardd (with the logdirs it serves, empty
    when it asks for a token) or another program (``boardd`` False)."""

    port: int
    boardd: bool
    logdirs: tuple[str, ...] = ()

    def describe(self) -> str:
        if not self.boardd:
            return f"port {self.port} is in use by another program"
        if not self.logdirs:
            return f"port {self.port} is in use by a running boardd"
        return f"port {self.port} is in use by a running boardd serving {', '.join(self.logdirs)}"


def port_holder(port: int, host: str = "127.0.0.1") -> PortHolder | None:
    """Who holds ``port`` on ``host`` now, or None when it is free (a bind succeeds, with
    SO_REUSEADDR as boardd serve binds). A holder that answers boardd's /api/v1/health names
    its logdirs."""
    if port == 0:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return None
        else:
            return None
    return _identify(host, port)


def _identify(host: str, port: int) -> PortHolder:
    url = f"http://{host}:{port}/api/v1/health"
    try:
        with urllib.request.urlopen(url, timeout=2.0) as answer:
            body = json.loads(answer.read(1 << 20))
    except urllib.error.HTTPError as exc:
        # A boardd with --token-file answers 401 with its JSON error.
        with contextlib.suppress(ValueError, OSError):
            error = json.loads(exc.read(1 << 16)).get("error")
            if exc.code == 401 and isinstance(error, dict):
                return PortHolder(port, boardd=True)
        return PortHolder(port, boardd=False)
    except (OSError, ValueError):
        return PortHolder(port, boardd=False)
    experiments = body.get("experiments") if isinstance(body, dict) else None
    if not isinstance(experiments, list) or "version" not in body:
        return PortHolder(port, boardd=False)
    logdirs = tuple(str(e["logdir"]) for e in experiments if isinstance(e, dict) and "logdir" in e)
    return PortHolder(port, boardd=True, logdirs=logdirs)
