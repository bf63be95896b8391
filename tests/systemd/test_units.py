"""The shipped systemd files: rendered from the templates, and clean under systemd-analyze."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from boardd.daemon.http_server import MAX_CONNECTIONS, connection_cap
from boardd.exitcodes import ExitCode
from boardd.systemd.escape import quote_exec_path, systemd_escape_path
from boardd.systemd.install import find_boardd_executable
from boardd.systemd.units import render_unit, shipped_files
from boardd.systemd.verify import verify_unit_file

REPO = Path(__file__).resolve().parents[2]
SYSTEMD_DIR = REPO / "systemd"
TEMPLATES_DIR = REPO / "src" / "boardd" / "systemd" / "templates"
ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(
    ANALYZE is None,
    reason="systemd-analyze is not installed (Debian/Ubuntu: apt-get install -y systemd)",
)

UNITS = {
    # relative path: (template, user)
    "boardd.service": (False, False),
    "boardd@.service": (True, False),
    "user/boardd.service": (False, True),
    "user/boardd@.service": (True, True),
}


#: Shipped files that are not units.
OTHER_FILES = {"boardd.env.example", "boardd.sysusers.conf"}
#: Templates of the files install-service writes, not shipped.
INSTALL_ONLY_TEMPLATES = {"instance.env.in"}


def test_shipped_files_are_the_rendered_templates() -> None:
    assert set(shipped_files()) == set(UNITS) | OTHER_FILES
    for relative, expected in shipped_files().items():
        shipped = (SYSTEMD_DIR / relative).read_text(encoding="utf-8")
        assert shipped == expected, (
            f"systemd/{relative} is out of date with src/boardd/systemd/templates/{relative}.in; "
            "regenerate with: .venv/bin/python tools/gen_systemd_units.py"
        )


def test_every_template_is_rendered() -> None:
    templates = {
        path.relative_to(TEMPLATES_DIR).as_posix()
        for path in TEMPLATES_DIR.rglob("*")
        if path.is_file()
    }
    assert templates == {f"{name}.in" for name in shipped_files()} | INSTALL_ONLY_TEMPLATES


def test_restart_is_prevented_after_the_exit_codes_a_restart_cannot_fix() -> None:
    expected = f"{int(ExitCode.USAGE)} {int(ExitCode.FINGERPRINT_MISMATCH)}"
    for relative in UNITS:
        settings = _settings(SYSTEMD_DIR / relative)
        assert settings["RestartPreventExitStatus"] == [expected], relative
        # The numbers README documents: changing them changes what users were told.
        assert settings["RestartPreventExitStatus"] == ["2 5"], relative


@pytest.mark.slow
def test_the_wheel_carries_the_templates(tmp_path: Path) -> None:
    """A built (non-editable) wheel holds every template, and importlib.resources finds them."""
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
        capture_output=True,
        check=True,
        timeout=240,
    )
    (wheel,) = wheels.glob("boardd-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(site)
    templates = {
        f"boardd/systemd/templates/{path.relative_to(TEMPLATES_DIR).as_posix()}"
        for path in TEMPLATES_DIR.rglob("*.in")
    }
    assert len(templates) == len(UNITS) + len(OTHER_FILES) + len(INSTALL_ONLY_TEMPLATES)
    assert templates <= names
    # Rendered from the unpacked wheel (first on sys.path), the files are the shipped ones.
    script = (
        "import json, boardd.systemd.units as units; "
        "print(json.dumps({'module': units.__file__, 'files': units.shipped_files()}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    answer = json.loads(done.stdout)
    assert Path(answer["module"]).is_relative_to(site)
    assert answer["files"] == shipped_files()


def test_shipped_units_have_the_required_settings() -> None:
    for relative, (template, user) in UNITS.items():
        settings = _settings(SYSTEMD_DIR / relative)
        assert settings["Type"] == ["notify"]
        assert settings["NotifyAccess"] == ["main"]
        assert settings["WatchdogSec"] == ["30"]
        assert settings["Restart"] == ["on-failure"]
        assert settings["KillSignal"] == ["SIGTERM"]
        assert settings["TimeoutStopSec"] == ["20"]
        assert settings["NoNewPrivileges"] == ["yes"]
        # Enough descriptors for the whole connection cap and as much again for the rest.
        assert connection_cap(int(settings["LimitNOFILE"][0])) == MAX_CONNECTIONS
        exec_start = settings["ExecStart"][0]
        assert ("serve %f " in exec_start) == template
        assert ("serve $BOARDD_LOGDIR " in exec_start) == (not template)
        assert "--port ${BOARDD_PORT}" in exec_start
        if user:
            assert "User" not in settings
            assert "StateDirectory" not in settings  # ~/.config before systemd 254
            assert settings["WantedBy"] == ["default.target"]
        else:
            assert settings["User"] == ["boardd"]
            assert settings["StateDirectory"] == ["boardd/%N"]
            assert settings["ProtectSystem"] == ["strict"]
            assert settings["ProtectHome"] == ["read-only"]
            assert settings["PrivateTmp"] == ["yes"]
            assert settings["CapabilityBoundingSet"] == [""]
            assert "ReadWritePaths" not in settings
            assert "DynamicUser" not in settings
            assert settings["WantedBy"] == ["multi-user.target"]


@needs_analyze
@pytest.mark.parametrize("relative", sorted(UNITS))
def test_raw_units_only_lack_the_placeholder_binary(relative: str) -> None:
    # The shipped ExecStart names where pip/pipx put boardd, absent here: that must be the
    # only complaint.
    _, user = UNITS[relative]
    diagnostics = verify_unit_file(SYSTEMD_DIR / relative, user=user)
    assert diagnostics is not None
    assert diagnostics, "systemd-analyze should report the missing placeholder binary"
    for line in diagnostics:
        assert "/bin/boardd is not executable" in line, line


@needs_analyze
@pytest.mark.parametrize("relative", sorted(UNITS))
def test_units_rendered_for_this_installation_verify_clean(relative: str, tmp_path: Path) -> None:
    template, user = UNITS[relative]
    boardd = quote_exec_path(find_boardd_executable())
    target = tmp_path / Path(relative).name
    target.write_text(render_unit(template=template, user=user, boardd=boardd), encoding="utf-8")
    assert verify_unit_file(target, user=user) == []


@needs_analyze
def test_verify_catches_a_broken_unit(tmp_path: Path) -> None:
    boardd = quote_exec_path(find_boardd_executable())
    text = render_unit(template=True, user=False, boardd=boardd)
    broken = tmp_path / "boardd@.service"
    broken.write_text(text.replace("WatchdogSec=30", "WatchdogSec=30\nWatchDogSec=30"), "utf-8")
    diagnostics = verify_unit_file(broken, user=False)
    assert diagnostics is not None
    assert any("Unknown key 'WatchDogSec'" in line for line in diagnostics), diagnostics


@needs_analyze
@pytest.mark.parametrize("user", [False, True], ids=["system", "user"])
def test_template_instance_runs_boardd_on_the_unescaped_logdir(user: bool, tmp_path: Path) -> None:
    logdir = "/srv/exp-1/lr 0.01/ü/.hidden/50%"
    boardd = find_boardd_executable()
    unit = tmp_path / "boardd@.service"
    unit.write_text(
        render_unit(template=True, user=user, boardd=quote_exec_path(boardd)), encoding="utf-8"
    )
    name = f"boardd@{systemd_escape_path(logdir)}.service"
    dump = _dump(unit, name, user=user, runtime=tmp_path)
    argv = _command_line(dump, "ExecStart")
    assert argv[:3] == [str(boardd), "serve", logdir]
    assert argv[3:7] == ["--host", "${BOARDD_HOST}", "--port", "${BOARDD_PORT}"]
    runtime = str(tmp_path) if user else "/run"
    assert argv[7:] == [
        "--port-file",
        f"{runtime}/boardd/{name[: -len('.service')]}/port",
        "$BOARDD_ARGS",
    ]
    assert f"RequiresMountsFor: {logdir} " in dump
    if not user:
        assert f"StateDirectory: boardd/{name[: -len('.service')]}" in dump
        assert f"EnvironmentFile: -/etc/boardd/{systemd_escape_path(logdir)}.env" in dump


@needs_analyze
def test_sysusers_file_creates_the_boardd_user(tmp_path: Path) -> None:
    sysusers = shutil.which("systemd-sysusers")
    assert sysusers is not None, "systemd-sysusers comes with systemd-analyze"
    (tmp_path / "etc").mkdir()
    proc = subprocess.run(
        [sysusers, f"--root={tmp_path}", str(SYSTEMD_DIR / "boardd.sysusers.conf")],
        env={**os.environ, "SYSTEMD_LOG_TARGET": "console"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    passwd = (tmp_path / "etc" / "passwd").read_text()
    entry = next(line for line in passwd.splitlines() if line.startswith("boardd:"))
    _, _, uid, _, _, _, shell = entry.split(":")
    assert 0 < int(uid) < 1000  # a system user
    assert shell.endswith("nologin")


def test_env_example_sets_every_variable_the_units_use() -> None:
    values = {}
    for line in (SYSTEMD_DIR / "boardd.env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep and key.isidentifier(), line
            values[key] = value
    assert set(values) == {"BOARDD_LOGDIR", "BOARDD_PORT", "BOARDD_HOST", "BOARDD_ARGS"}
    used = set()
    for relative in UNITS:
        text = (SYSTEMD_DIR / relative).read_text()
        used |= {key for key in values if f"${key}" in text or f"${{{key}}}" in text}
    assert used == set(values)


# --- helpers ----------------------------------------------------------------------------------


def _settings(path: Path) -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, sep, value = line.partition("=")
        assert sep, f"{path.name}: not a KEY=VALUE line: {line!r}"
        settings.setdefault(key, []).append(value)
    return settings


def _dump(unit: Path, name: str, *, user: bool, runtime: Path) -> str:
    """The unit as systemd parsed it: systemd-analyze's debug dump of the loaded unit."""
    assert ANALYZE is not None
    env = {
        **os.environ,
        "SYSTEMD_LOG_TARGET": "console",
        "SYSTEMD_LOG_LEVEL": "debug",
        "SYSTEMD_LOG_COLOR": "0",
        "XDG_RUNTIME_DIR": str(runtime),
    }
    command = [ANALYZE, *(["--user"] if user else []), "verify", "--man=no", f"{unit}:{name}"]
    proc = subprocess.run(command, env=env, capture_output=True, check=False)
    dump = proc.stdout.decode("utf-8", "replace")
    assert "Command Line:" in dump, proc.stderr.decode("utf-8", "replace")[-2000:]
    return dump


def _command_line(dump: str, setting: str) -> list[str]:
    """The argv of a dumped command, unquoted (systemd quotes like a shell: "..." with \\)."""
    lines = dump.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == f"-> {setting}:")
    text = next(
        line.split("Command Line: ", 1)[1] for line in lines[start:] if "Command Line: " in line
    )
    words: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == " ":
            i += 1
            continue
        word = []
        while i < len(text) and text[i] != " ":
            if text[i] == '"':
                i += 1
                while text[i] != '"':
                    if text[i] == "\\":
                        i += 1
                    word.append(text[i])
                    i += 1
                i += 1
            else:
                word.append(text[i])
                i += 1
        words.append("".join(word))
    return words
