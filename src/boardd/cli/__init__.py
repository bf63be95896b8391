"""The ``boardd`` command line: ``main(argv)`` parses the flags and runs one command, each in a
module of its own (inspect_command, ingest, serve, export, install_service, hparams, lineage);
it returns the exit code."""

from __future__ import annotations

import argparse
import difflib
import gc
import importlib
import os
import re
import sys
from collections.abc import Sequence

from boardd import __version__
from boardd.exitcodes import MEANINGS, ExitCode

__all__ = ["ExitCode", "build_parser", "main"]

#: The commands (name → module of boardd.cli), in the order ``boardd --help`` lists them.
COMMANDS = {
    "inspect": "inspect_command",
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
    return _build(only)[0]


def _build(only: str | None) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The argument parser, and each command's own parser by name."""
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
    return parser, dict(sub.choices or {})


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line and returns the process exit code."""
    # boardd does no linear algebra: numpy's OpenBLAS then starts no thread pool (one thread per
    # core, each with its buffers): a large part of numpy's import, and of `boardd serve`'s CPU
    # until its first answer (bench/bench_tensorboard.py). Before any command imports numpy; the
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
    if command is None and _flags_before_a_command(words):
        return ExitCode.USAGE
    if command == "serve" and argv is None:
        # A start-up makes long-lived objects only (modules, classes, functions): the cyclic
        # collector, which would walk them again and again as they pile up, is off until the
        # daemon's first answer has been sent; they are then frozen out of its reach and it
        # runs as usual (boardd.daemon.service's warm-up).
        gc.disable()
    parser, commands = _build(command)
    if command is not None:
        module = importlib.import_module(f"boardd.cli.{COMMANDS[command]}")
        words = _join_dash_values(words, getattr(module, "DASH_VALUE_FLAGS", ()))
    args, extra = parser.parse_known_args(words)
    if extra:
        # What the command's parser did not know: its error, with its usage, not boardd's.
        own = commands.get(args.command) if args.command else None
        if own is None:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        own.error(_unrecognized(extra, own))
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


#: A flag as a command's help names it (its hidden TensorBoard flags are named there too).
_FLAG = re.compile(r"(?<![\w-])--[A-Za-z][A-Za-z0-9_-]*")


def _known_flags(parser: argparse.ArgumentParser) -> list[str]:
    """The flags ``parser``'s help names, in order (hidden test-only flags are not named)."""
    return list(dict.fromkeys(_FLAG.findall(parser.format_help())))


def _meant(flag: str, known: Sequence[str]) -> str | None:
    """The flag of ``known`` that ``flag`` most likely means: the same with '-' for '_' or the
    other way round (TensorBoard spells its flags with '_'), else a near miss."""

    def plain(f: str) -> str:
        return f.lower().replace("_", "-")

    same = [k for k in known if plain(k) == plain(flag)]
    if same:
        return same[0]
    close = difflib.get_close_matches(plain(flag), [plain(k) for k in known], n=1, cutoff=0.8)
    return next((k for k in known if close and plain(k) == close[0]), None)


def _unrecognized(extra: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """argparse's "unrecognized arguments", with the flag each unknown one may mean."""
    known = _known_flags(parser)
    hints = []
    for word in extra:
        name = word.split("=", 1)[0]
        meant = _meant(name, known) if name.startswith("--") else None
        if meant is not None:
            hints.append((meant, name))
    text = f"unrecognized arguments: {' '.join(extra)}"
    if len(hints) == 1 and len([w for w in extra if w.startswith("-")]) == 1:
        text += f"; did you mean {hints[0][0]}?"
    elif hints:
        text += "; did you mean " + ", ".join(f"{m} (for {n})" for m, n in hints) + "?"
    return text + f" ({parser.prog} --help lists its flags)"


def _flags_before_a_command(words: Sequence[str]) -> bool:
    """Flags given without a command (``boardd --reload-interval 5``): when each is a flag of
    ``boardd serve``, or a near miss of one, says the serve command line meant (true);
    otherwise leaves the words to argparse (false)."""
    flags = [
        w for w in words if w.startswith("--") and w.split("=")[0] not in ("--help", "--version")
    ]
    if not flags or words[0] in ("-h", "--help", "--version"):
        return False
    serve = _build("serve")[1]["serve"]
    known = _known_flags(serve)
    fixed = []
    for word in words:
        name, eq, value = word.partition("=")
        meant = _meant(name, known) if word in flags else name
        if meant is None:
            return False
        fixed.append(meant + eq + value)
    print(_build(None)[0].format_usage(), end="", file=sys.stderr)
    print(
        f"boardd: error: {', '.join(f.split('=')[0] for f in flags)}: flags go after the "
        f"command; did you mean: boardd serve {' '.join(fixed)}",
        file=sys.stderr,
    )
    return True
