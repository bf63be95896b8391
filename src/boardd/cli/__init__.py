"""The ``boardd`` command line: ``main(argv)`` parses the flags and runs one command, each in a
module of its own (inspect, ingest, serve, export, install_service, hparams, lineage); it
returns the exit code."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence

from boardd import __version__
from boardd.exitcodes import MEANINGS, ExitCode

__all__ = ["ExitCode", "build_parser", "main"]

#: The commands (name → module of boardd.cli), in the order ``boardd --help`` lists them.
COMMANDS = {
    "inspect": "inspect",
    "ingest": "ingest",
    "serve": "serve",
    "install-service": "install_service",
    "export": "export",
    "hparams": "hparams",
    "lineage": "lineage",
}

#: Flags of ``tensorboard`` that mean a user typed ``boardd`` for ``tensorboard``.
_TENSORBOARD_FLAGS = {"--logdir", "--logdir_spec", "--bind_all"}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: of every command, or of ``only`` that one (a command starts
    without importing the other commands' modules)."""
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
    for name, module in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"boardd.cli.{module}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line and returns the process exit code."""
    # boardd does no linear algebra: numpy's OpenBLAS then starts no thread pool (one thread per
    # core, each with its buffers): a third of numpy's import, ~7 % of `boardd serve`'s CPU until
    # its first answer (bench/bench_tensorboard.py). Before any command imports numpy; the
    # environment wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    words = sys.argv[1:] if argv is None else list(argv)
    command = words[0] if words and words[0] in COMMANDS else None
    if command is None and any(w.split("=")[0] in _TENSORBOARD_FLAGS for w in words):
        # `tensorboard --logdir X` with the program's name changed: say where the flags go.
        print(
            "boardd: error: TensorBoard's flags go after the serve command: "
            f"boardd serve {' '.join(words)}",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    if command == "serve" and argv is None:
        # A start-up makes long-lived objects only (modules, classes, functions): the cyclic
        # collector, which would walk them again and again as they pile up, is off until the
        # daemon's first answer has been sent; they are then frozen out of its reach and it
        # runs as usual (boardd.daemon.service's warm-up).
        gc.disable()
    parser = build_parser(command)
    if command is not None:
        module = importlib.import_module(f"boardd.cli.{COMMANDS[command]}")
        words = _join_dash_values(words, getattr(module, "DASH_VALUE_FLAGS", ()))
    args = parser.parse_args(words)
    if args.command is None:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        code: int = args.run(args)
    except BrokenPipeError:
        # The reader of our output went away (`boardd hparams --csv | head`): no traceback.
        # stdout is pointed at /dev/null so that the interpreter's own flush at exit cannot
        # raise again (what Python's documentation of SIGPIPE recommends).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.ERROR
    return code


def _join_dash_values(words: list[str], flags: Sequence[str]) -> list[str]:
    """``--sort -accuracy`` → ``--sort=-accuracy`` for each of ``flags`` (whose values may
    start with '-'): argparse takes a word that starts with '-' for a flag, and says "expected
    one argument" of the flag before it. A word that is a flag (``--csv``, ``-h``), and
    everything after ``--``, stays as it is."""
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            out.extend(words[i:])
            break
        value = words[i + 1] if i + 1 < len(words) else ""
        if word in flags and value[:1] == "-" and value[1:2] not in ("", "-") and value != "-h":
            out.append(f"{word}={value}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out
