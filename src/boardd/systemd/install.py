"""``boardd install-service``: systemd unit files for this installation, and the shipped ones."""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

#: The first port handed out; later installations take the next free one.
from boardd.config import DEFAULT_PORT

#: System units go here; ``--user`` units under $XDG_CONFIG_HOME/systemd/user.
SYSTEM_UNIT_DIR = Path("/etc/systemd/system")
#: Per-instance environment files of system units (``%E`` of the system manager is /etc).
SYSTEM_ENV_DIR = Path("/etc/boardd")
#: The unprivileged user of the shipped system units (see systemd/boardd.sysusers.conf).
DEFAULT_SYSTEM_USER = "boardd"
#: ExecStart of the shipped units: where ``pip install`` (system) and pipx (user) put boardd.
SHIPPED_SYSTEM_BOARDD = "/usr/local/bin/boardd"
SHIPPED_USER_BOARDD = "%h/.local/bin/boardd"
#: Unit names longer than this are invalid (UNIT_NAME_MAX in systemd's unit-name.h, minus NUL).
UNIT_NAME_MAX = 255
#: systemd mounts a private /tmp and /var/tmp (PrivateTmp=) for system units: a logdir below
#: them is invisible to the service. (PrivateDevices= keeps the host's /dev/shm.)
HIDDEN_FROM_SYSTEM_UNITS = (Path("/tmp"), Path("/var/tmp"))

# Exit codes (the same numbers as boardd.cli.ExitCode).
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_BAD_LOGDIR = 3

_ESCAPE_KEEP = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.")
_PLAIN_WORD = re.compile(r"^[A-Za-z0-9/_.:+,@=%-]+$")
_INSTALLED_MARKER = "# Written by `boardd install-service`"


class InstallError(Exception):
    """The service cannot be installed as asked; the message says what to do instead."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class InstallPlan:
    """The files one installation writes, and the commands that start the service."""

    unit_name: str
    unit_path: Path
    unit_text: str
    env_path: Path | None
    env_text: str | None
    port: int
    user: bool
    commands: tuple[str, ...]


# --- escaping ---------------------------------------------------------------------------------


def systemd_escape_path(path: str) -> str:
    """What ``systemd-escape --path PATH`` prints: a path turned into a unit-name fragment.

    The path is simplified (repeated and trailing slashes, ``.`` components) and must be
    absolute, without ``..``. ``/`` becomes ``-``; every byte of the UTF-8 (file-system)
    encoding other than ASCII letters, digits, ``:``, ``_`` and ``.`` becomes ``\\xNN``, and so
    does a leading ``.``. The root is ``-``. ``%f`` in a unit undoes it.
    """
    if not path.startswith("/"):
        raise ValueError(f"{path!r} is not an absolute path")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"{path!r} is not normalized (it contains '..')")
    if not parts:
        return "-"
    out: list[str] = []
    raw = os.fsencode("/".join(parts))
    for i, byte in enumerate(raw):
        if byte == 0x2F:
            out.append("-")
        elif byte in _ESCAPE_KEEP and not (i == 0 and byte == 0x2E):
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out)


def systemd_unescape_path(name: str) -> str:
    """The inverse of systemd_escape_path (what ``%f`` gives inside a unit)."""
    if name == "-":
        return "/"
    raw = bytearray()
    i = 0
    while i < len(name):
        char = name[i]
        if char == "-":
            raw.append(0x2F)
        elif char == "\\" and name[i + 1 : i + 2] == "x" and len(name) >= i + 4:
            raw.append(int(name[i + 2 : i + 4], 16))
            i += 3
        else:
            raw.extend(char.encode("utf-8"))
        i += 1
    return "/" + os.fsdecode(bytes(raw))


def quote_exec_path(path: Path) -> str:
    """``path`` as the first word of ExecStart= (quoted when needed, ``%`` doubled).

    systemd refuses an executable whose path holds quotes, backslashes or control characters
    ("Executable name contains special characters"), so those are refused here too.
    """
    text = str(path)
    if not path.is_absolute():
        raise InstallError(f"{text}: ExecStart needs an absolute path to boardd")
    if any(ord(c) < 0x20 or ord(c) == 0x7F or c in "\"'\\" for c in text):
        raise InstallError(
            f"{text!r}: systemd cannot start a program whose path holds quotes, backslashes or "
            "control characters; install boardd in a directory without them"
        )
    text = text.replace("%", "%%")
    return text if _PLAIN_WORD.match(text) else f'"{text}"'


# --- unit text --------------------------------------------------------------------------------


def render_unit(
    *,
    template: bool,
    user: bool,
    boardd: str,
    run_as: str | None = DEFAULT_SYSTEM_USER,
    header: str = "",
) -> str:
    """The text of a boardd service unit.

    ``template`` selects the one-service-per-logdir template (the logdir is the instance name,
    ``%f``) over the single service configured by an environment file (``$BOARDD_LOGDIR``).
    ``user`` selects a ``systemctl --user`` unit. ``boardd`` is ExecStart's first word, already
    quoted (see quote_exec_path). ``run_as`` is the system units' ``User=``. ``header`` is a
    comment block put first instead of the generic introduction.
    """
    env_dir = "%E/boardd" if user else "/etc/boardd"
    if header:
        lines = header.rstrip("\n").split("\n")
    elif template:
        lines = _template_intro(user=user, env_dir=env_dir)
    else:
        lines = _single_intro(user=user, env_dir=env_dir)
    lines += ["", "[Unit]"]
    if template:
        lines += [
            "Description=boardd: live TensorBoard metrics of %f",
            "# Start after the logdir's file system is mounted (NFS, a data disk).",
            "RequiresMountsFor=%f",
        ]
    else:
        lines += ["Description=boardd: live TensorBoard metrics"]
    lines += ["After=network.target", "", "[Service]"]
    lines += [
        "# boardd sends READY=1 once its port is bound and its stores are open, then STATUS=",
        "# lines (catch-up progress) and a watchdog ping every WatchdogSec/2 from its ingest",
        "# loops; only the main process may send them.",
        "Type=notify",
        "NotifyAccess=main",
        "WatchdogSec=30",
    ]
    if not user:
        lines += [*_SYSTEM_USER_COMMENT, f"User={run_as or DEFAULT_SYSTEM_USER}"]
    lines += [
        "# Defaults, overridden by the environment file (see boardd.env.example).",
    ]
    if template:
        lines += [
            "# Port 0 picks a free port, written to the port file below; pin one with",
            f"# BOARDD_PORT= in {env_dir}/%i.env.",
            "Environment=BOARDD_HOST=127.0.0.1 BOARDD_PORT=0 BOARDD_ARGS=",
            f"EnvironmentFile=-{env_dir}/%i.env",
        ]
    else:
        lines += [
            f"Environment=BOARDD_HOST=127.0.0.1 BOARDD_PORT={DEFAULT_PORT} BOARDD_ARGS=",
            f"EnvironmentFile=-{env_dir}/boardd.env",
        ]
    lines += [
        "# ${VAR} is always exactly one argument; $VAR alone is split at whitespace into zero",
        "# or more (quotes inside the value group words), which is what extra flags need.",
    ]
    logdirs = "%f" if template else "$BOARDD_LOGDIR"
    lines += [
        f"ExecStart={boardd} serve {logdirs} --host ${{BOARDD_HOST}} --port ${{BOARDD_PORT}} "
        "--port-file %t/boardd/%N/port $BOARDD_ARGS",
        "# systemctl reload: rescan every logdir now.",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "# The port actually bound is written to %t/boardd/%N/port (%t is /run, or",
        "# $XDG_RUNTIME_DIR for --user units); the directory goes away when the service stops.",
        "RuntimeDirectory=boardd/%N",
    ]
    if user:
        lines += [
            "# No StateDirectory=: for user units it is ~/.config before systemd 254. The store",
            "# goes where `boardd ingest` puts it too, ~/.local/state/boardd ($XDG_STATE_HOME).",
        ]
    else:
        lines += [
            "# The store goes to /var/lib/boardd/%N ($STATE_DIRECTORY), one directory per unit:",
            "# systemd chowns a StateDirectory= to the unit's User=, so units running as",
            "# different users must not share one.",
            "StateDirectory=boardd/%N",
            "StateDirectoryMode=0700",
        ]
    lines += [
        "UMask=0077",
        "# SIGTERM: boardd commits what it has read, releases the store and exits 0. Even a",
        "# SIGKILL after the timeout loses nothing: every commit holds points and offsets.",
        "KillSignal=SIGTERM",
        "TimeoutStopSec=20",
        "Restart=on-failure",
        "RestartSec=5s",
        "# 2: bad usage; 5: the store was built with other settings (boardd ingest --rebuild).",
        "# Restarting cannot fix either.",
        "RestartPreventExitStatus=2 5",
        "",
    ]
    lines += _SYSTEM_HARDENING if not user else _USER_HARDENING
    lines += ["", "[Install]", f"WantedBy={'default.target' if user else 'multi-user.target'}"]
    return "\n".join(lines) + "\n"


def _template_intro(*, user: bool, env_dir: str) -> list[str]:
    flag = "--user " if user else ""
    state = "~/.local/state/boardd/" if user else "/var/lib/boardd/boardd@<instance>/"
    shown = "~/.config/boardd" if user else env_dir
    return [
        f"# boardd@.service: one boardd per watched logdir ({'user' if user else 'system'} unit).",
        "#",
        "# The instance name is the logdir's path, escaped:",
        f"#   systemctl {flag}enable --now \\",
        '#     "boardd@$(systemd-escape --path /srv/logs/exp1).service"',
        "# watches /srv/logs/exp1 (%f below unescapes the instance back to that path).",
        f"# {shown}/<instance>.env may set BOARDD_PORT, BOARDD_HOST and BOARDD_ARGS",
        "# (see boardd.env.example); the store goes to " + state,
        "# `boardd install-service` writes an instance of this unit for one logdir.",
    ]


def _single_intro(*, user: bool, env_dir: str) -> list[str]:
    flag = "--user " if user else ""
    shown = "~/.config/boardd" if user else env_dir
    kind = "user" if user else "system"
    return [
        f"# boardd.service: one boardd for the logdirs set in {shown}/boardd.env",
        f"# ({kind} unit). Set BOARDD_LOGDIR there (see boardd.env.example),",
        f"# then: systemctl {flag}enable --now boardd.service",
        "# For one service per logdir, use boardd@.service (or `boardd install-service`).",
    ]


_SYSTEM_USER_COMMENT = [
    "# A dedicated unprivileged user that can read the logdirs: create it with",
    "# systemd-sysusers (boardd.sysusers.conf) and grant it read access with a group or an ACL",
    "# (setfacl -R -m u:boardd:rX -m d:u:boardd:rX /srv/logs), or run as the logdir's owner",
    "# (`systemctl edit` → User=alice). Not DynamicUser=: a dynamic UID cannot be named in a",
    "# group or an ACL, so logdirs would have to be world-readable, and homes are 0700/0750 on",
    "# current Debian and Ubuntu.",
]

_SYSTEM_HARDENING = [
    "# Sandbox. boardd reads logdirs and writes only its state directory: the whole file",
    "# system is read-only to it (/home and /root too), and /tmp and /var/tmp are private,",
    "# so a logdir must live elsewhere (/srv, /data, /home, a mounted disk).",
    "NoNewPrivileges=yes",
    "ProtectSystem=strict",
    "ProtectHome=read-only",
    "PrivateTmp=yes",
    "PrivateDevices=yes",
    "ProtectProc=invisible",
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectKernelLogs=yes",
    "ProtectControlGroups=yes",
    "ProtectClock=yes",
    "ProtectHostname=yes",
    "PrivateMounts=yes",
    "CapabilityBoundingSet=",
    "RestrictNamespaces=yes",
    "RestrictRealtime=yes",
    "RestrictSUIDSGID=yes",
    "LockPersonality=yes",
    "RemoveIPC=yes",
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
    "SystemCallArchitectures=native",
    "SystemCallFilter=@system-service",
    "SystemCallFilter=~@privileged @resources",
    "SystemCallErrorNumber=EPERM",
    "# Not MemoryDenyWriteExecute=: Python's ctypes callbacks (libffi closures) may need",
    "# writable and executable memory.",
]

_USER_HARDENING = [
    "# Sandbox: what a user manager can enforce without a user namespace (seccomp-based).",
    "# ProtectSystem= and friends need PrivateUsers=, which would hide other users' groups.",
    "NoNewPrivileges=yes",
    "RestrictNamespaces=yes",
    "RestrictRealtime=yes",
    "RestrictSUIDSGID=yes",
    "LockPersonality=yes",
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
    "SystemCallArchitectures=native",
    "SystemCallFilter=@system-service",
    "SystemCallFilter=~@privileged @resources",
    "SystemCallErrorNumber=EPERM",
]


def shipped_units() -> dict[str, str]:
    """The unit files of the repository's ``systemd/`` directory, by relative path."""
    return {
        "boardd.service": render_unit(template=False, user=False, boardd=SHIPPED_SYSTEM_BOARDD),
        "boardd@.service": render_unit(template=True, user=False, boardd=SHIPPED_SYSTEM_BOARDD),
        "user/boardd.service": render_unit(template=False, user=True, boardd=SHIPPED_USER_BOARDD),
        "user/boardd@.service": render_unit(template=True, user=True, boardd=SHIPPED_USER_BOARDD),
    }


def write_shipped_units(directory: str | os.PathLike[str]) -> None:
    """Regenerates the shipped unit files under ``directory`` (the repository's ``systemd/``)."""
    for relative, text in shipped_units().items():
        target = Path(directory) / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def render_env(
    *, port: int, host: str = "127.0.0.1", logdir: Path | None = None, restart: str = ""
) -> str:
    """A fresh per-instance environment file; ``restart`` is the command that applies it."""
    lines = ["# boardd settings for one service (an EnvironmentFile=; see boardd.env.example)."]
    if logdir is not None:
        lines.append(f"# Logdir: {logdir}")
    lines.append(f"# Apply changes with: {restart or 'systemctl [--user] restart <the unit>'}")
    lines += [
        f"BOARDD_PORT={port}",
        f"BOARDD_HOST={host}",
        "# Extra flags of `boardd serve`, e.g. BOARDD_ARGS=--poll --samples-per-plugin=images=50",
        "BOARDD_ARGS=",
    ]
    return "\n".join(lines) + "\n"


# --- checking ---------------------------------------------------------------------------------


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


def verify_unit_file(path: Path, *, user: bool, as_name: str | None = None) -> list[str] | None:
    """``systemd-analyze verify`` on a unit file (loaded as ``as_name`` if given).

    Returns its diagnostics about this unit (see verify_unit_text), or None without
    systemd-analyze. A template is checked as its instance ``i`` (what systemd-analyze does).
    """
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return None
    name = as_name or path.name
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
        spec = f"{path}:{as_name}" if as_name else str(path)
        command += ["verify", "--man=no", "--recursive-errors=no", spec]
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


# --- planning ---------------------------------------------------------------------------------


def find_boardd_executable() -> Path:
    """The ``boardd`` console script of the running installation (not just any on $PATH)."""
    sibling = Path(sys.executable).with_name("boardd")
    # os.path.isfile, not Path.is_file: a directory this user cannot enter is "not found",
    # not an exception.
    if os.path.isfile(sibling) and os.access(sibling, os.X_OK):
        return Path(os.path.abspath(sibling))
    found = shutil.which("boardd")
    if found is None:
        raise InstallError(
            "cannot find the boardd command: install boardd with pip or pipx so that a "
            "`boardd` script exists, then run install-service with that script"
        )
    return Path(os.path.abspath(found))


def config_home(home: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_CONFIG_HOME (where the user manager looks for units, ``%E``), else ~/.config."""
    if home is not None:
        return home / ".config"
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg)
    return Path.home() / ".config"


def plan_install(
    logdir: Path,
    *,
    user: bool,
    port: int | None = None,
    boardd_path: Path,
    home: Path | None = None,
    run_as: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> InstallPlan:
    """Works out the unit for ``logdir`` and where it goes; reads, never writes.

    The unit is ``boardd@<escaped logdir>.service``: a complete unit file for that one instance
    rather than a shared boardd@.service template, so its ExecStart is the boardd of this
    installation and installs from different virtualenvs never overwrite each other, while
    ``%f`` (the logdir), ``%i`` and ``%N`` work as in the template.

    ``port`` None keeps the port of an earlier installation of the same logdir, else takes the
    first port from 6007 that no other boardd environment file in the same directory claims.
    ``run_as`` (system units) defaults to the logdir's owner. ``home`` replaces the home
    directory (tests).
    """
    absolute = Path(os.path.abspath(logdir))
    text = str(absolute)
    if not absolute.is_dir():
        raise InstallError(f"{logdir}: not a directory", EXIT_BAD_LOGDIR)
    if not os.access(absolute, os.R_OK | os.X_OK):
        raise InstallError(f"{logdir}: directory is not readable", EXIT_BAD_LOGDIR)
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise InstallError(f"{text!r}: a logdir path with control characters", EXIT_BAD_LOGDIR)
    if "$" in text:
        # %f puts the path into ExecStart before systemd expands $VARIABLES at start time.
        raise InstallError(
            f"{text}: systemd would read '$' in the path as a variable; use a path without "
            "'$' (a symlink to the logdir works)",
            EXIT_BAD_LOGDIR,
        )
    instance = systemd_escape_path(text)
    unit_name = f"boardd@{instance}.service"
    if len(unit_name) > UNIT_NAME_MAX:
        raise InstallError(
            f"{text}: escaped, the unit name would be {len(unit_name)} characters (systemd "
            f"allows {UNIT_NAME_MAX}); make a shorter symlink to the logdir "
            "(e.g. ln -s LOGDIR /srv/boardd/exp1) and install that",
            EXIT_BAD_LOGDIR,
        )
    if port is not None and not 0 <= port <= 65535:
        raise InstallError(f"--port {port}: use 0 to 65535 (0 picks a free port)", EXIT_USAGE)

    if user:
        config = config_home(home, environ)
        unit_dir = config / "systemd" / "user"
        env_dir = config / "boardd"
        account = None
    else:
        unit_dir = SYSTEM_UNIT_DIR
        env_dir = SYSTEM_ENV_DIR
        _check_visible_to_system_units(absolute)
        account = run_as or _owner(absolute)
        _check_account(account)

    unit_path = unit_dir / unit_name
    env_path = env_dir / f"{instance}.env"
    previous_env = _read_text(env_path)
    taken = _ports_taken(env_dir, exclude=env_path)
    if port is None:
        previous = _env_port(previous_env) if previous_env is not None else None
        port = previous if previous is not None else _first_free(taken)
    elif port != 0 and port in taken:
        raise InstallError(
            f"--port {port} is already set in {taken[port]} for another boardd; choose another "
            f"port (e.g. --port {_first_free(taken)})",
            EXIT_USAGE,
        )
    systemctl = "systemctl --user" if user else "systemctl"
    if previous_env is None:
        restart = f"{systemctl} restart {shlex.quote(unit_name)}"
        env_text = render_env(port=port, logdir=absolute, restart=restart)
    else:
        env_text = _with_port(previous_env, port)

    header = "\n".join(
        [
            f"{_INSTALLED_MARKER} for {text}",
            f"# Port, address and extra flags: {env_path}",
        ]
    )
    unit_text = render_unit(
        template=True,
        user=user,
        boardd=quote_exec_path(boardd_path),
        run_as=account,
        header=header,
    )
    commands = (
        f"{systemctl} daemon-reload",
        f"{systemctl} enable --now {shlex.quote(unit_name)}",
    )
    return InstallPlan(
        unit_name=unit_name,
        unit_path=unit_path,
        unit_text=unit_text,
        env_path=env_path,
        env_text=env_text,
        port=port,
        user=user,
        commands=commands,
    )


def apply_install(plan: InstallPlan) -> None:
    """Writes the plan's files (creating directories); never runs systemctl.

    Each file is replaced atomically. Nothing is written unless every target is writable.
    """
    targets = [(plan.unit_path, plan.unit_text)]
    if plan.env_path is not None and plan.env_text is not None:
        targets.append((plan.env_path, plan.env_text))
    for path, _ in targets:
        _check_writable(path, plan.user)
    for path, text in targets:
        try:
            _write_atomically(path, text)
        except PermissionError as exc:
            raise InstallError(_not_writable(path, plan.user)) from exc
        except OSError as exc:
            raise InstallError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _check_visible_to_system_units(logdir: Path) -> None:
    real = Path(os.path.realpath(logdir))
    for hidden in HIDDEN_FROM_SYSTEM_UNITS:
        if real == hidden or hidden in real.parents:
            raise InstallError(
                f"{logdir}: a system service gets a private {hidden} (PrivateTmp=) and would "
                "not see this logdir; move it (e.g. to /srv or your home directory) or install "
                "a user service with --user",
                EXIT_BAD_LOGDIR,
            )


def _owner(path: Path) -> str:
    uid = path.stat().st_uid
    if uid == 0:
        raise InstallError(
            f"{path} is owned by root; a service should not run as root: pass --run-as USER "
            "naming an unprivileged user that can read it (e.g. --run-as boardd after "
            "systemd-sysusers boardd.sysusers.conf)",
            EXIT_USAGE,
        )
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        raise InstallError(
            f"{path} is owned by uid {uid}, which has no user name; pass --run-as USER",
            EXIT_USAGE,
        ) from None


def _check_account(name: str) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        raise InstallError(
            f"--run-as {name}: no such user; create it first (the boardd user: "
            "systemd-sysusers with systemd/boardd.sysusers.conf)",
            EXIT_USAGE,
        ) from None


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror or exc}") from exc


_PORT_LINE = re.compile(r"""^\s*BOARDD_PORT\s*=\s*["']?(\d+)["']?\s*$""", re.MULTILINE)


def _env_port(text: str) -> int | None:
    matches = _PORT_LINE.findall(text)
    return int(matches[-1]) if matches else None


def _ports_taken(env_dir: Path, *, exclude: Path) -> dict[int, Path]:
    taken: dict[int, Path] = {}
    try:
        candidates = sorted(env_dir.glob("*.env"))
    except OSError:
        return taken
    for path in candidates:
        if path == exclude:
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        port = _env_port(text)
        if port is None and path.name == "boardd.env":
            port = DEFAULT_PORT  # boardd.service's default
        if port:
            taken.setdefault(port, path)
    return taken


def _first_free(taken: Mapping[int, Path]) -> int:
    port = DEFAULT_PORT
    while port in taken:
        port += 1
    return port


def _with_port(text: str, port: int) -> str:
    if _PORT_LINE.search(text):
        return _PORT_LINE.sub(f"BOARDD_PORT={port}", text)
    return text + ("" if text.endswith("\n") or not text else "\n") + f"BOARDD_PORT={port}\n"


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def _check_writable(path: Path, user: bool) -> None:
    existing = _nearest_existing(path)
    if existing.is_dir():
        ok = os.access(existing, os.W_OK | os.X_OK)
    else:
        ok = os.access(existing, os.W_OK) and existing == path
    if not ok:
        raise InstallError(_not_writable(path, user))


def _not_writable(path: Path, user: bool) -> str:
    if user:
        return f"cannot write {path}: permission denied"
    return (
        f"cannot write {path}: permission denied. A system service needs root: run "
        "`sudo boardd install-service ...` (with the full path to this boardd), or install a "
        "service for your user only with --user"
    )


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --- command line -----------------------------------------------------------------------------


def run(
    args: argparse.Namespace,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Runs ``boardd install-service`` with parsed arguments; returns the exit code."""
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if stderr is None else stderr
    try:
        if args.user and args.run_as is not None:
            raise InstallError(
                "--run-as applies to system services; a --user service runs as you", EXIT_USAGE
            )
        plan = plan_install(
            Path(args.logdir),
            user=args.user,
            port=args.port,
            boardd_path=find_boardd_executable(),
            run_as=args.run_as,
        )
        diagnostics = verify_unit_text(plan.unit_name, plan.unit_text, user=plan.user)
        for line in diagnostics or ():
            print(f"boardd install-service: warning: systemd-analyze verify: {line}", file=err)
        if args.dry_run:
            _print_dry_run(plan, out)
        else:
            apply_install(plan)
            _print_done(plan, out)
    except InstallError as exc:
        print(f"boardd install-service: {exc}", file=err)
        return exc.exit_code
    return EXIT_OK


def _print_dry_run(plan: InstallPlan, out: TextIO) -> None:
    print(f"# would write {plan.unit_path}:", file=out)
    print(plan.unit_text, file=out)
    if plan.env_path is not None and plan.env_text is not None:
        print(f"# would write {plan.env_path}:", file=out)
        print(plan.env_text, file=out)
    print("# then run:", file=out)
    for command in plan.commands:
        print(command, file=out)


def _print_done(plan: InstallPlan, out: TextIO) -> None:
    print(f"wrote {plan.unit_path}", file=out)
    if plan.env_path is not None:
        print(f"wrote {plan.env_path} (port {plan.port or 'chosen at each start'})", file=out)
    print("\nStart it now and at every boot:", file=out)
    for command in plan.commands:
        print(f"  {command}", file=out)
    flag = "--user " if plan.user else ""
    name = shlex.quote(plan.unit_name)
    print("\nThen:", file=out)
    print(f"  systemctl {flag}status {name}", file=out)
    print(f"  journalctl {flag}-u {name} -f", file=out)
    if plan.user:
        print(
            "\nA user service stops when you log out unless lingering is on:\n"
            f"  loginctl enable-linger {shlex.quote(_current_user())}",
            file=out,
        )


def _current_user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m boardd.systemd.install``: install-service without the full CLI (tests)."""
    from boardd.cli import install_service_arguments

    parser = argparse.ArgumentParser(prog="boardd install-service")
    install_service_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
