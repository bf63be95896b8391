"""The ``boardd`` command line: ``main(argv)`` parses the flags and runs one command, each in a
module of its own (inspect, ingest, serve, export, install_service); it returns the exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from boardd import __version__
from boardd.cli import export, ingest, inspect, install_service, serve
from boardd.exitcodes import MEANINGS, ExitCode

__all__ = ["ExitCode", "build_parser", "main"]

#: The commands, in the order ``boardd --help`` lists them.
COMMANDS = (inspect, ingest, serve, install_service, export)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used to document every flag)."""
    parser = argparse.ArgumentParser(
        prog="boardd",
        description=(
            "boardd keeps TensorBoard logdirs live, fast and safe: it tails event files "
            "incrementally into one SQLite store and serves TensorBoard's data API."
        ),
        epilog=(
            "Exit codes: "
            + "; ".join(f"{code.value} {MEANINGS[code]}" for code in ExitCode)
            + ". `boardd COMMAND --help` explains each command."
        ),
    )
    parser.add_argument("--version", action="version", version=f"boardd {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line and returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    code: int = args.run(args)
    return code
