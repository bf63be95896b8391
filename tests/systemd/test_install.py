"""``boardd install-service``: planning, writing, and the units it writes."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardd.cli import main
from boardd.exitcodes import ExitCode
from boardd.systemd.checks import find_manager, port_holder, systemd_booted
from boardd.systemd.errors import InstallError
from boardd.systemd.escape import quote_exec_path, systemd_escape_path
from boardd.systemd.install import InstallPlan, apply_install, find_boardd_executable, plan_install
from boardd.systemd.verify import verify_unit_file
from tests.daemon.conftest import boardd_env, wait_until

ANALYZE = shutil.which("systemd-analyze")

# --- the command ------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh home directory for --user installs, in a session whose user manager runs: a
    listening socket where ``systemctl --user`` looks for it ($XDG_RUNTIME_DIR/systemd/private;
    these tests never run systemctl)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    with _listening(tmp_path / "run") as runtime:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
        yield home


@contextlib.contextmanager
def _listening(runtime: Path) -> Iterator[Path]:
    """``runtime`` with a Unix socket listening at systemd/private while the block runs."""
    (runtime / "systemd").mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(runtime / "systemd" / "private"))
        sock.listen(8)
        yield runtime


def _free_ports(count: int) -> list[int]:
    """The first ``count`` ports from 6007 that no program on this machine holds now (the
    ports install-service hands out)."""
    found: list[int] = []
    port = 6007
    while len(found) < count:
        if port_holder(port) is None:
            found.append(port)
        port += 1
    return found


def _run(*argv: str) -> tuple[int, str, str]:
    """``boardd install-service ARGV`` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["install-service", *argv])
    return code, out.getvalue(), err.getvalue()


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def test_user_dry_run_prints_everything_and_writes_nothing(home: Path, tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    before = _files(tmp_path)
    code, out, err = _run("--user", "--dry-run", str(logdir))
    assert code == ExitCode.OK, err
    assert _files(tmp_path) == before
    unit = f"boardd@{systemd_escape_path(str(logdir))}.service"
    config = home / ".config"
    assert f"# would write {config / 'systemd' / 'user' / unit}:" in out
    assert f"ExecStart={quote_exec_path(find_boardd_executable())} serve %f " in out
    assert f"BOARDD_PORT={_free_ports(1)[0]}" in out
    assert "systemctl --user daemon-reload" in out
    assert "systemctl --user enable --now" in out
    assert "warning" not in err


def test_user_install_writes_unit_and_env_into_home(home: Path, tmp_path: Path) -> None:
    logdir = tmp_path / "my logs-1"
    logdir.mkdir()
    code, out, err = _run("--user", str(logdir))
    assert code == ExitCode.OK, err
    instance = systemd_escape_path(str(logdir))
    unit = home / ".config" / "systemd" / "user" / f"boardd@{instance}.service"
    env = home / ".config" / "boardd" / f"{instance}.env"
    assert _files(home) == {unit, env}
    text = unit.read_text()
    assert text.startswith(f"# Written by `boardd install-service` for {logdir}\n")
    assert "\nUser=" not in text
    assert f"BOARDD_PORT={_free_ports(1)[0]}\n" in env.read_text()
    assert f"wrote {unit}" in out
    assert "loginctl enable-linger" in out
    assert oct(unit.stat().st_mode & 0o777) == "0o644"


def test_ports_are_handed_out_kept_and_checked(home: Path, tmp_path: Path) -> None:
    first, second, third = (tmp_path / name for name in ("a", "b", "c"))
    for logdir in (first, second, third):
        logdir.mkdir()
    env_dir = home / ".config" / "boardd"

    def port_of(logdir: Path) -> str:
        text = (env_dir / f"{systemd_escape_path(str(logdir))}.env").read_text()
        return next(line for line in text.splitlines() if line.startswith("BOARDD_PORT="))

    one, two = _free_ports(2)  # 6007 and 6008 unless a program holds one now
    assert _run("--user", str(first))[0] == ExitCode.OK
    assert _run("--user", str(second))[0] == ExitCode.OK
    assert port_of(first) == f"BOARDD_PORT={one}"
    assert port_of(second) == f"BOARDD_PORT={two}"
    # Reinstalling keeps the port, and the user's own edits to the file.
    env_first = env_dir / f"{systemd_escape_path(str(first))}.env"
    env_first.write_text(env_first.read_text().replace("BOARDD_ARGS=", "BOARDD_ARGS=--poll"))
    assert _run("--user", str(first))[0] == ExitCode.OK
    assert port_of(first) == f"BOARDD_PORT={one}"
    assert "BOARDD_ARGS=--poll\n" in env_first.read_text()
    # An explicit port replaces the old one, still keeping the edits.
    assert _run("--user", "--port", "7000", str(first))[0] == ExitCode.OK
    assert port_of(first) == "BOARDD_PORT=7000"
    assert "BOARDD_ARGS=--poll\n" in env_first.read_text()
    # A port another boardd already has is refused, naming the file and a free port.
    code, _, err = _run("--user", "--port", str(two), str(third))
    assert code == ExitCode.USAGE
    assert str(env_dir / f"{systemd_escape_path(str(second))}.env") in err
    assert f"--port {one}" in err
    # Port 0 (a free port at each start) never collides.
    assert _run("--user", "--port", "0", str(third))[0] == ExitCode.OK
    assert port_of(third) == "BOARDD_PORT=0"
    assert _run("--user", "--port", "70000", str(third))[0] == ExitCode.USAGE


@contextlib.contextmanager
def _serving(logdir: Path, port: int, state: Path) -> Iterator[None]:
    """A real ``boardd serve LOGDIR --port PORT`` while the block runs."""
    port_file = state / "port"
    command = [sys.executable, "-m", "boardd", "serve", str(logdir), "--port", str(port)]
    proc = subprocess.Popen(
        [*command, "--port-file", str(port_file)],
        env=boardd_env(STATE_DIRECTORY=str(state)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(port_file.exists, what="boardd serve's port file", timeout=30)
        yield
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_a_port_held_now_is_said(home: Path, tmp_path: Path) -> None:
    served, other = tmp_path / "served", tmp_path / "other"
    served.mkdir()
    other.mkdir()
    port = _free_ports(1)[0]
    with _serving(served, port, tmp_path):
        _a_port_held_now_is_said(served, other, port)


def _a_port_held_now_is_said(served: Path, other: Path, port: int) -> None:
    # Another logdir: the port is passed over, and said.
    code, out, err = _run("--user", "--dry-run", str(other))
    assert code == ExitCode.OK, err
    assert f"port {port} is in use by a running boardd serving {served}" in err
    assert "the service gets port" in err
    assert f"BOARDD_PORT={port}\n" not in out
    # The logdir that boardd serves: the service will take over its port once it stops.
    code, out, err = _run("--user", "--dry-run", str(served))
    assert f"BOARDD_PORT={port}\n" in out
    assert f"serving {served} now: stop it before you start the service" in err
    # A port asked for while held: the service could not start.
    code, out, err = _run("--user", "--dry-run", "--port", str(port), str(other))
    assert code == ExitCode.OK and f"BOARDD_PORT={port}\n" in out
    assert f"port {port} is in use by a running boardd serving {served}" in err
    assert "the service cannot start while it is held (boardd serve exits 7)" in err
    # Held by a program that is no boardd.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        taken = held.getsockname()[1]
        code, out, err = _run("--user", "--dry-run", "--port", str(taken), str(other))
    assert f"port {taken} is in use by another program: the service cannot start" in err


def test_where_systemctl_would_find_its_manager(tmp_path: Path) -> None:
    booted, base, uid = tmp_path / "run-systemd-system", tmp_path / "run-user", os.getuid()
    runtime = base / str(uid)
    kw = {"booted_marker": booted, "runtime_base": base, "uid": uid}
    # No systemd at all (a container): neither systemctl nor systemctl --user reaches one.
    assert not find_manager(user=False, environ={}, **kw).reachable
    found = find_manager(user=True, environ={"XDG_RUNTIME_DIR": str(runtime)}, **kw)
    assert (found.reachable, found.booted, found.runtime_dir) == (False, False, None)
    booted.mkdir()
    assert find_manager(user=False, environ={}, **kw).reachable
    # The user's manager is not running: a socket file left behind does not answer.
    (runtime / "systemd").mkdir(parents=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as gone:
        gone.bind(str(runtime / "systemd" / "private"))
    found = find_manager(user=True, environ={"XDG_RUNTIME_DIR": str(runtime)}, **kw)
    assert (found.reachable, found.booted, found.runtime_dir) == (False, True, None)
    (runtime / "systemd" / "private").unlink()
    with _listening(runtime):
        # It runs: reachable from a login session, and from a shell after su (no
        # XDG_RUNTIME_DIR) once that is exported.
        assert find_manager(user=True, environ={"XDG_RUNTIME_DIR": str(runtime)}, **kw).reachable
        found = find_manager(user=True, environ={}, **kw)
        assert (found.reachable, found.runtime_dir) == (False, runtime)
    # A session bus without XDG_RUNTIME_DIR: systemctl goes through it, taken as reachable.
    bus = {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"}
    assert find_manager(user=True, environ=bus, **kw).reachable


def test_no_user_manager_here_is_said_with_what_to_do(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's systemd does not answer where this environment points: the unit is written,
    and instead of commands that would fail ("Failed to connect to bus"), what works here."""
    empty = tmp_path / "empty-runtime"
    empty.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(empty))
    logdir = tmp_path / "logs"
    logdir.mkdir()
    code, out, err = _run("--user", str(logdir))
    assert code == ExitCode.OK, err
    assert (home / ".config" / "systemd" / "user").is_dir()
    usual = Path(f"/run/user/{os.getuid()}/systemd/private")
    if not systemd_booted():
        assert "warning: this machine does not run systemd" in err
        assert f"run the daemon directly: boardd serve {logdir}" in err
        assert "Once systemd runs for it (see the warning above)" in out
    elif usual.exists():  # a running user manager this environment does not point to
        assert "note: your user's systemd runs, but this shell does not say where" in err
        assert f"export XDG_RUNTIME_DIR=/run/user/{os.getuid()}" in out
    else:
        assert "warning: your user's systemd is not running" in err
        assert "sudo loginctl enable-linger" in err
        assert f"sudo boardd install-service {logdir}" in err
        assert "Once systemd runs for it (see the warning above)" in out


def test_boardd_env_of_the_single_service_counts_as_taken(home: Path, tmp_path: Path) -> None:
    env_dir = home / ".config" / "boardd"
    env_dir.mkdir(parents=True)
    (env_dir / "boardd.env").write_text("BOARDD_LOGDIR=/srv/logs\n")  # default port 6007
    plan = plan_install(tmp_path, user=True, boardd_path=find_boardd_executable())
    assert plan.port == next(p for p in _free_ports(2) if p != 6007)


def test_xdg_config_home_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "cfg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    plan = plan_install(tmp_path, user=True, boardd_path=find_boardd_executable())
    assert plan.unit_path.parent == config / "systemd" / "user"
    assert plan.env_path == config / "boardd" / f"{systemd_escape_path(str(tmp_path))}.env"


def test_bad_logdirs_are_refused(home: Path, tmp_path: Path) -> None:
    code, _, err = _run("--user", str(tmp_path / "missing"))
    assert (code, "missing: does not exist" in err) == (ExitCode.BAD_LOGDIR, True)
    (tmp_path / "a-file").write_text("x")
    code, _, err = _run("--user", str(tmp_path / "a-file"))
    assert (code, "a-file: not a directory" in err) == (ExitCode.BAD_LOGDIR, True)
    dollar = tmp_path / "cost$HOME"
    dollar.mkdir()
    code, _, err = _run("--user", str(dollar))
    assert (code, "'$'" in err) == (ExitCode.BAD_LOGDIR, True)
    deep = tmp_path / ("x" * 200) / ("y" * 40)
    deep.mkdir(parents=True)
    code, _, err = _run("--user", str(deep))
    assert (code, "symlink" in err) == (ExitCode.BAD_LOGDIR, True)
    assert _files(home) == set()


def test_system_install_refuses_logdirs_the_sandbox_hides(tmp_path: Path) -> None:
    # tmp_path is under /tmp, which PrivateTmp= replaces for system services.
    code, out, err = _run("--dry-run", "--run-as", "nobody", str(tmp_path))
    assert code == ExitCode.BAD_LOGDIR
    assert "PrivateTmp" in err
    assert "--user" in err
    assert out == ""


def test_run_as_is_checked(home: Path) -> None:
    logdir = _system_logdir()
    code, _, err = _run("--user", "--run-as", "nobody", str(logdir))
    assert (code, "--run-as applies to system services" in err) == (ExitCode.USAGE, True)
    code, _, err = _run("--dry-run", "--run-as", "no-such-user-boardd", str(logdir))
    assert (code, "no such user" in err) == (ExitCode.USAGE, True)


def test_system_dry_run_plans_etc_and_writes_nothing() -> None:
    # A directory outside /tmp that surely exists; a dry run never writes, even as root.
    logdir = _system_logdir()
    instance = systemd_escape_path(str(logdir))
    code, out, err = _run("--dry-run", "--run-as", "nobody", "--port", "6100", str(logdir))
    assert code == ExitCode.OK, err
    assert f"# would write /etc/systemd/system/boardd@{instance}.service:" in out
    assert f"# would write /etc/boardd/{instance}.env:" in out
    assert "\nUser=nobody\n" in out
    assert "\nProtectSystem=strict\n" in out
    assert "BOARDD_PORT=6100" in out
    assert "\nsystemctl enable --now " in out
    assert not Path(f"/etc/systemd/system/boardd@{instance}.service").exists()
    assert not Path(f"/etc/boardd/{instance}.env").exists()
    # Where systemd is not the init system (a container), the commands could not run here.
    assert ("warning: this machine does not run systemd" in err) == (not systemd_booted())


def test_system_service_runs_as_the_logdir_owner() -> None:
    logdir = _system_logdir()
    uid = logdir.stat().st_uid
    boardd = find_boardd_executable()
    if uid == 0:
        with pytest.raises(InstallError, match="owned by root") as caught:
            plan_install(logdir, user=False, boardd_path=boardd)
        assert caught.value.exit_code == ExitCode.USAGE
    else:
        plan = plan_install(logdir, user=False, boardd_path=boardd)
        assert f"\nUser={pwd.getpwuid(uid).pw_name}\n" in plan.unit_text


def test_apply_reports_unwritable_targets(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    plan = InstallPlan(
        unit_name="boardd@x.service",
        unit_path=blocker / "boardd@x.service",
        unit_text="[Service]\n",
        env_path=tmp_path / "x.env",
        env_text="BOARDD_PORT=1\n",
        port=1,
        user=False,
        commands=(),
    )
    with pytest.raises(InstallError, match="cannot write"):
        apply_install(plan)
    assert not (tmp_path / "x.env").exists()  # nothing is written unless everything can be


def test_system_install_without_root_says_how() -> None:
    """The real /etc/systemd/system, as an unprivileged user: a clear error, nothing written."""
    logdir = _system_logdir()
    code, err = _install_unprivileged(logdir)
    assert code == 1, err
    assert "permission denied" in err
    assert "sudo" in err
    assert "--user" in err
    instance = systemd_escape_path(str(logdir))
    assert not Path(f"/etc/systemd/system/boardd@{instance}.service").exists()
    assert not Path(f"/etc/boardd/{instance}.env").exists()


def _install_unprivileged(logdir: Path) -> tuple[int, str]:
    """Installs system-wide as 'nobody' (exit code, message). As root (CI), a forked child
    drops its user and groups, and with them its capabilities; the plan is made before, so
    that it does not matter whether 'nobody' may read this checkout."""
    if os.geteuid() != 0:
        code, _, err = _run("--run-as", "nobody", str(logdir))
        return code, err
    plan = plan_install(logdir, user=False, boardd_path=find_boardd_executable(), run_as="nobody")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read_end)
            nobody = pwd.getpwnam("nobody")
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            try:
                apply_install(plan)
                result = [0, ""]
            except InstallError as exc:
                result = [exc.exit_code, str(exc)]
            os.write(write_end, json.dumps(result).encode())
        except BaseException:
            os.write(write_end, json.dumps([-1, traceback.format_exc()]).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    code, err = json.loads(data)
    return int(code), str(err)


@pytest.mark.skipif(
    ANALYZE is None, reason="systemd-analyze is not installed (apt-get install systemd)"
)
def test_installed_user_unit_verifies_and_runs_boardd_on_the_logdir(
    home: Path, tmp_path: Path
) -> None:
    logdir = tmp_path / "exp-1" / "lr 0.01" / "ü" / ".runs"
    logdir.mkdir(parents=True)
    code, _, err = _run("--user", str(logdir))
    assert code == ExitCode.OK, err
    assert "warning" not in err
    unit = next((home / ".config" / "systemd" / "user").iterdir())
    assert verify_unit_file(unit, user=True) == []
    dump = subprocess.run(
        [ANALYZE, "--user", "verify", "--man=no", str(unit)],
        env={
            **os.environ,
            "SYSTEMD_LOG_TARGET": "console",
            "SYSTEMD_LOG_LEVEL": "debug",
            "XDG_RUNTIME_DIR": str(tmp_path),
        },
        capture_output=True,
        check=False,
    ).stdout.decode()
    command_line = next(line for line in dump.splitlines() if "Command Line: " in line)
    boardd = find_boardd_executable()
    assert command_line.split("Command Line: ", 1)[1].startswith(f'{boardd} serve "{logdir}" ')
    assert f"EnvironmentFile: -{home}/.config/boardd/{systemd_escape_path(str(logdir))}.env" in dump


def _system_logdir() -> Path:
    """An existing readable directory a system service could see (not under /tmp or /var/tmp).

    Planning and dry runs only read it; this checkout's tests directory unless the checkout
    itself lives under /tmp.
    """
    here = Path(__file__).resolve().parent
    hidden = (Path("/tmp"), Path("/var/tmp"))
    if not any(h == here or h in here.parents for h in hidden):
        return here
    return Path("/usr/share")
