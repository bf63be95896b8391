"""``boardd install-service``: planning, writing, and the units it writes."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pwd
import shutil
import subprocess
import traceback
from pathlib import Path

import pytest

from boardd.cli import main
from boardd.exitcodes import ExitCode
from boardd.systemd.errors import InstallError
from boardd.systemd.escape import quote_exec_path, systemd_escape_path
from boardd.systemd.install import InstallPlan, apply_install, find_boardd_executable, plan_install
from boardd.systemd.verify import verify_unit_file

ANALYZE = shutil.which("systemd-analyze")

# --- the command ------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh home directory for --user installs."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


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
    assert "BOARDD_PORT=6007" in out
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
    assert "BOARDD_PORT=6007\n" in env.read_text()
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

    assert _run("--user", str(first))[0] == ExitCode.OK
    assert _run("--user", str(second))[0] == ExitCode.OK
    assert port_of(first) == "BOARDD_PORT=6007"
    assert port_of(second) == "BOARDD_PORT=6008"
    # Reinstalling keeps the port, and the user's own edits to the file.
    env_first = env_dir / f"{systemd_escape_path(str(first))}.env"
    env_first.write_text(env_first.read_text().replace("BOARDD_ARGS=", "BOARDD_ARGS=--poll"))
    assert _run("--user", str(first))[0] == ExitCode.OK
    assert port_of(first) == "BOARDD_PORT=6007"
    assert "BOARDD_ARGS=--poll\n" in env_first.read_text()
    # An explicit port replaces the old one, still keeping the edits.
    assert _run("--user", "--port", "7000", str(first))[0] == ExitCode.OK
    assert port_of(first) == "BOARDD_PORT=7000"
    assert "BOARDD_ARGS=--poll\n" in env_first.read_text()
    # A port another boardd already has is refused, naming the file and a free port.
    code, _, err = _run("--user", "--port", "6008", str(third))
    assert code == ExitCode.USAGE
    assert str(env_dir / f"{systemd_escape_path(str(second))}.env") in err
    assert "--port 6007" in err
    # Port 0 (a free port at each start) never collides.
    assert _run("--user", "--port", "0", str(third))[0] == ExitCode.OK
    assert port_of(third) == "BOARDD_PORT=0"
    assert _run("--user", "--port", "70000", str(third))[0] == ExitCode.USAGE


def test_boardd_env_of_the_single_service_counts_as_taken(home: Path, tmp_path: Path) -> None:
    env_dir = home / ".config" / "boardd"
    env_dir.mkdir(parents=True)
    (env_dir / "boardd.env").write_text("BOARDD_LOGDIR=/srv/logs\n")  # default port 6007
    plan = plan_install(tmp_path, user=True, boardd_path=find_boardd_executable())
    assert plan.port == 6008


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
