"""The arguments of ``boardd install-service`` (cheap to import: argparse and config only)."""

from __future__ import annotations

import argparse

from boardd.config import DEFAULT_PORT


def install_service_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the arguments of ``boardd install-service`` to ``parser``.

    They live apart from boardd.systemd.install so that ``boardd --help`` and the other
    commands build their parser without importing the installer.
    """
    parser.add_argument("logdir", metavar="LOGDIR", help="the logdir the service watches")
    parser.add_argument(
        "--user",
        action="store_true",
        help="install a service of your user's systemd (systemctl --user); no root needed",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help=(
            f"the HTTP port (default: the port of an earlier install of this logdir, else the "
            f"first from {DEFAULT_PORT} that no other installed boardd uses; 0 picks a free "
            "port at each start)"
        ),
    )
    parser.add_argument(
        "--run-as",
        metavar="USER",
        default=None,
        help="system services only: the user the service runs as (default: the logdir's owner)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the files and commands, write nothing",
    )
