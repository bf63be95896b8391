"""``boardd install-service``: a unit and an env file for one logdir, planned, then written."""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from boardd.config import DEFAULT_PORT
from boardd.exitcodes import ExitCode
from boardd.systemd.errors import InstallError
from boardd.systemd.escape import quote_exec_path, systemd_escape_path
from boardd.systemd.units import render_env, render_unit
from boardd.systemd.verify import verify_unit_text

#: System units go here; ``--user`` units under $XDG_CONFIG_HOME/systemd/user.
SYSTEM_UNIT_DIR = Path("/etc/systemd/system")
#: Per-instance environment files of system units (``%E`` of the system manager is /etc).
SYSTEM_ENV_DIR = Path("/etc/boardd")
#: Unit names longer than this are invalid (UNIT_NAME_MAX in systemd's unit-name.h, minus NUL).
UNIT_NAME_MAX = 255
#: systemd mounts a private /tmp and /var/tmp (PrivateTmp=) for system units: a logdir below
#: them is invisible to the service. (PrivateDevices= keeps the host's /dev/shm.)
HIDDEN_FROM_SYSTEM_UNITS = (Path("/tmp"), Path("/var/tmp"))

_INSTALLED_MARKER = "# Written by `boardd install-service`"


@dataclass(frozen=True)
class InstallPlan:
    """The files one installation writes, and the commands that start the service."""

    unit_name: str
    unit_path: Path
    unit_text: str
    env_path: Path
    env_text: str
    port: int
    user: bool
    commands: tuple[str, ...]


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


def config_home() -> Path:
    """$XDG_CONFIG_HOME (where the user manager looks for units, ``%E``), else ~/.config."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg)
    return Path.home() / ".config"


def plan_install(
    logdir: Path,
    *,
    user: bool,
    port: int | None = None,
    boardd_path: Path,
    run_as: str | None = None,
) -> InstallPlan:
    """Works out the unit for ``logdir`` and where it goes; reads, never writes.

    The unit is ``boardd@<escaped logdir>.service``: a complete unit file for that one instance
    rather than a shared boardd@.service template, so its ExecStart is the boardd of this
    installation and installs from different virtualenvs never overwrite each other, while
    ``%f`` (the logdir), ``%i`` and ``%N`` work as in the template.

    ``port`` None keeps the port of an earlier installation of the same logdir, else takes the
    first port from 6007 that no other boardd environment file in the same directory claims.
    ``run_as`` (system units) defaults to the logdir's owner.
    """
    absolute = Path(os.path.abspath(logdir))
    text = str(absolute)
    if not absolute.is_dir():
        what = "not a directory" if absolute.exists() else "does not exist"
        raise InstallError(f"{logdir}: {what}", ExitCode.BAD_LOGDIR)
    if not os.access(absolute, os.R_OK | os.X_OK):
        raise InstallError(f"{logdir}: directory is not readable", ExitCode.BAD_LOGDIR)
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise InstallError(f"{text!r}: a logdir path with control characters", ExitCode.BAD_LOGDIR)
    if "$" in text:
        # %f puts the path into ExecStart before systemd expands $VARIABLES at start time.
        raise InstallError(
            f"{text}: systemd would read '$' in the path as a variable; use a path without "
            "'$' (a symlink to the logdir works)",
            ExitCode.BAD_LOGDIR,
        )
    instance = systemd_escape_path(text)
    unit_name = f"boardd@{instance}.service"
    if len(unit_name) > UNIT_NAME_MAX:
        raise InstallError(
            f"{text}: escaped, the unit name would be {len(unit_name)} characters (systemd "
            f"allows {UNIT_NAME_MAX}); make a shorter symlink to the logdir "
            "(e.g. ln -s LOGDIR /srv/boardd/exp1) and install that",
            ExitCode.BAD_LOGDIR,
        )
    if port is not None and not 0 <= port <= 65535:
        raise InstallError(f"--port {port}: use 0 to 65535 (0 picks a free port)", ExitCode.USAGE)

    if user:
        config = config_home()
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
            ExitCode.USAGE,
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
    targets = [(plan.unit_path, plan.unit_text), (plan.env_path, plan.env_text)]
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
                ExitCode.BAD_LOGDIR,
            )


def _owner(path: Path) -> str:
    uid = path.stat().st_uid
    if uid == 0:
        raise InstallError(
            f"{path} is owned by root; a service should not run as root: pass --run-as USER "
            "naming an unprivileged user that can read it (e.g. --run-as boardd after "
            "systemd-sysusers boardd.sysusers.conf)",
            ExitCode.USAGE,
        )
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        raise InstallError(
            f"{path} is owned by uid {uid}, which has no user name; pass --run-as USER",
            ExitCode.USAGE,
        ) from None


def _check_account(name: str) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        raise InstallError(
            f"--run-as {name}: no such user; create it first (the boardd user: "
            "systemd-sysusers with systemd/boardd.sysusers.conf)",
            ExitCode.USAGE,
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


def run(args: argparse.Namespace) -> int:
    """Runs ``boardd install-service`` with parsed arguments; returns the exit code."""
    out, err = sys.stdout, sys.stderr
    try:
        if args.user and args.run_as is not None:
            raise InstallError(
                "--run-as applies to system services; a --user service runs as you", ExitCode.USAGE
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
    return ExitCode.OK


def _print_dry_run(plan: InstallPlan, out: TextIO) -> None:
    print(f"# would write {plan.unit_path}:", file=out)
    print(plan.unit_text, file=out)
    print(f"# would write {plan.env_path}:", file=out)
    print(plan.env_text, file=out)
    print("# then run:", file=out)
    for command in plan.commands:
        print(command, file=out)


def _print_done(plan: InstallPlan, out: TextIO) -> None:
    print(f"wrote {plan.unit_path}", file=out)
    print(f"wrote {plan.env_path} (port {plan.port or 'chosen at each start'})", file=out)
    when = "at every login" if plan.user else "at every boot"
    print(f"\nStart it now and {when}:", file=out)
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
