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
from boardd.systemd.checks import Manager, PortHolder, find_manager, port_holder
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
    #: What the user should know about the port (held now by another program, or by a boardd).
    notes: tuple[str, ...] = ()


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
    first port from 6007 that no other boardd environment file in the same directory claims and
    that no program holds now (but the port of a boardd serving this logdir now, which the
    service takes over once that one stops). A port that is held now is said in ``notes``.
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
    notes: list[str] = []
    if port is None:
        previous = _env_port(previous_env) if previous_env is not None else None
        if previous is None:
            port = _first_unheld(taken, absolute, notes)
        else:
            port = previous
            holder = port_holder(port)
            # Held by this logdir's boardd: most likely this very service, installed before.
            if holder is not None and not _serves(holder, absolute):
                notes.append(
                    f"{holder.describe()} (the port of this logdir's earlier install): the "
                    "service cannot start while it is held (boardd serve exits 7); stop that "
                    f"program, or install again with another port (e.g. --port "
                    f"{_first_free(taken, skip_held=True)})"
                )
    elif port != 0 and port in taken:
        raise InstallError(
            f"--port {port} is already set in {taken[port]} for another boardd; choose another "
            f"port (e.g. --port {_first_free(taken, skip_held=True)})",
            ExitCode.USAGE,
        )
    elif port != 0:
        holder = port_holder(port)
        if holder is not None:
            notes.append(_held_note(holder, absolute, taken))
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
        notes=tuple(notes),
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


def _first_free(taken: Mapping[int, Path], *, skip_held: bool = False) -> int:
    """The first port from 6007 no environment file claims (and, with ``skip_held``, that no
    program holds now)."""
    port = DEFAULT_PORT
    while port in taken or (skip_held and port < 65535 and port_holder(port) is not None):
        port += 1
    return port


#: How many ports held now the automatic choice passes over before it takes one anyway.
_HELD_SEARCH = 100


def _first_unheld(taken: Mapping[int, Path], logdir: Path, notes: list[str]) -> int:
    """The automatic port: the first one free of environment files and of programs, or the
    port of a boardd that serves ``logdir`` now (``notes`` say which ports were held)."""
    skipped: list[PortHolder] = []
    port = _first_free(taken)
    while len(skipped) < _HELD_SEARCH and port < 65535:
        holder = port_holder(port)
        if holder is None:
            break
        if _serves(holder, logdir):
            notes.append(_held_note(holder, logdir, taken))
            return port
        skipped.append(holder)
        port = _first_free({**taken, **{h.port: logdir for h in skipped}})
    for holder in skipped:
        notes.append(f"{holder.describe()}: the service gets port {port} instead")
    return port


def _serves(holder: PortHolder, logdir: Path) -> bool:
    same = {str(logdir), os.path.realpath(logdir)}
    return holder.boardd and any(d in same or os.path.realpath(d) in same for d in holder.logdirs)


def _held_note(holder: PortHolder, logdir: Path, taken: Mapping[int, Path]) -> str:
    if _serves(holder, logdir):
        return (
            f"{holder.describe()} now: stop it before you start the service, which takes over "
            "its port (both would write this logdir's store)"
        )
    return (
        f"{holder.describe()}: the service cannot start while it is held (boardd serve exits "
        f"7); stop that program, or choose another port (e.g. --port "
        f"{_first_free(taken, skip_held=True)})"
    )


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
        for note in plan.notes:
            print(f"boardd install-service: warning: {note}", file=err)
        manager = find_manager(user=plan.user)
        said = _manager_problem(manager, plan, os.path.abspath(args.logdir))
        if said is not None:
            print(f"boardd install-service: {said}", file=err)
        if args.dry_run:
            _print_dry_run(plan, out, manager)
        else:
            apply_install(plan)
            _print_done(plan, out, manager)
    except InstallError as exc:
        print(f"boardd install-service: {exc}", file=err)
        return exc.exit_code
    return ExitCode.OK


def _manager_problem(manager: Manager, plan: InstallPlan, logdir: str) -> str | None:
    """Why the printed systemctl commands would fail here ("Failed to connect to bus"), and
    what to do instead; None when they can work.

    A warning, not an error: the unit is written and right (for this machine once its manager
    runs, or for the image being built here), and a failing exit code would stop scripts that
    install units before the manager runs (image builds, provisioning before lingering).
    """
    if manager.reachable:
        return None
    serve = f"boardd serve {shlex.quote(logdir)}"
    if manager.runtime_dir is not None:
        now = os.environ.get("XDG_RUNTIME_DIR")
        return (
            "note: your user's systemd runs, but this shell does not say where "
            f"(XDG_RUNTIME_DIR is {now or 'unset'}, as after su or sudo -u), so "
            '`systemctl --user` alone would fail with "Failed to connect to bus": the '
            f"commands below set XDG_RUNTIME_DIR={manager.runtime_dir} first"
        )
    if not manager.booted:
        what = (
            "no manager of your user runs either, so `systemctl --user`"
            if plan.user
            else ("so `systemctl`")
        )
        return (
            "warning: this machine does not run systemd (/run/systemd/system is missing: a "
            f'container, or WSL without systemd enabled), {what} cannot reach one ("Failed '
            'to connect to bus", "System has not been booted with systemd"). The unit is '
            "written for a machine that runs systemd (an image built here, say); to serve the "
            f"logdir here, run the daemon directly: {serve} (under your container's "
            "supervisor, tmux or nohup)"
        )
    user = shlex.quote(_current_user())
    return (
        "warning: your user's systemd is not running (no login session of yours started it: "
        "usual after su or sudo -u, over some ssh setups, and in containers), so `systemctl "
        '--user` cannot reach it ("Failed to connect to bus") and nothing starts this unit. '
        f"Either start it for good: sudo loginctl enable-linger {user} (now and at every boot, "
        f"without a login), then export XDG_RUNTIME_DIR=/run/user/{os.getuid()} and run the "
        f"commands below; or log in as {user} (ssh or a desktop session, not su) and run "
        "them there; or install a system-wide service instead: sudo boardd install-service "
        f"{shlex.quote(logdir)}"
    )


def _commands(plan: InstallPlan, manager: Manager) -> list[str]:
    """The commands that start the service, from this shell."""
    prefix = []
    if manager.runtime_dir is not None:
        prefix = [f"export XDG_RUNTIME_DIR={shlex.quote(str(manager.runtime_dir))}"]
    return [*prefix, *plan.commands]


def _print_dry_run(plan: InstallPlan, out: TextIO, manager: Manager) -> None:
    print(f"# would write {plan.unit_path}:", file=out)
    print(plan.unit_text, file=out)
    print(f"# would write {plan.env_path}:", file=out)
    print(plan.env_text, file=out)
    reachable = manager.reachable or manager.runtime_dir is not None
    print("# then run:" if reachable else "# then, once systemd runs (see above):", file=out)
    for command in _commands(plan, manager):
        print(command, file=out)


def _print_done(plan: InstallPlan, out: TextIO, manager: Manager) -> None:
    print(f"wrote {plan.unit_path}", file=out)
    print(f"wrote {plan.env_path} (port {plan.port or 'chosen at each start'})", file=out)
    when = "at every login" if plan.user else "at every boot"
    if manager.reachable or manager.runtime_dir is not None:
        print(f"\nStart it now and {when}:", file=out)
    else:
        print(
            f"\nOnce systemd runs for it (see the warning above), start it now and {when}:",
            file=out,
        )
    for command in _commands(plan, manager):
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
