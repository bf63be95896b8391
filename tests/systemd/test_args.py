"""``install-service``'s arguments: cheap to import, and the systemd package never needs the CLI."""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

from boardd.systemd.args import install_service_arguments

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "boardd" / "systemd"


def test_arguments_and_their_defaults() -> None:
    parser = argparse.ArgumentParser()
    install_service_arguments(parser)
    args = parser.parse_args(["/srv/logs"])
    assert vars(args) == {
        "logdir": "/srv/logs",
        "user": False,
        "port": None,
        "run_as": None,
        "dry_run": False,
    }
    args = parser.parse_args(["--user", "--port", "0", "--dry-run", "--run-as", "me", "x"])
    assert (args.user, args.port, args.dry_run, args.run_as) == (True, 0, True, "me")


def test_the_cli_parser_imports_only_the_arguments_of_install_service() -> None:
    # A fresh interpreter: this test process has imported everything already.
    script = (
        "import sys; from boardd.cli import build_parser; build_parser(); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('boardd.systemd'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["boardd.systemd", "boardd.systemd.args"]


def test_the_systemd_package_never_imports_the_cli() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert PACKAGE / "install.py" in modules
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
                names += [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert not (name == "boardd.cli" or name.startswith("boardd.cli.")), (
                    f"{path.name} imports {name}: the CLI imports the systemd package, not back"
                )
