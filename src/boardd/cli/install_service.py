"""``boardd install-service LOGDIR``: a systemd unit that runs ``boardd serve`` on a logdir."""

from __future__ import annotations

import argparse

from boardd.exitcodes import ExitCode, describe

NAME = "install-service"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declares the command and its flags (defined by the systemd package, which is imported
    only when the command runs, but for its light argument module)."""
    from boardd.systemd.args import install_service_arguments

    parser = sub.add_parser(
        NAME,
        help="write a systemd unit that runs `boardd serve` on a logdir",
        description=(
            "Writes boardd@<escaped LOGDIR>.service (system-wide, or for your user with --user) "
            "running this boardd, plus an environment file with its port, and prints the "
            "systemctl commands that start it. It never runs systemctl."
        ),
        epilog=describe(
            ExitCode.OK,
            ExitCode.ERROR,
            ExitCode.USAGE,
            ExitCode.BAD_LOGDIR,
            meanings={
                ExitCode.OK: "written (or printed, with --dry-run)",
                ExitCode.ERROR: "the unit or its environment file could not be written",
            },
        ),
    )
    install_service_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Runs ``boardd install-service``; returns the exit code."""
    from boardd.systemd.install import run as install

    return install(args)
