"""The exit codes of every ``boardd`` command, defined once (the systemd units use them too)."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Distinct exit codes, so scripts and systemd can tell failures apart."""

    OK = 0
    ERROR = 1
    USAGE = 2
    BAD_LOGDIR = 3
    STORE_LOCKED = 4
    FINGERPRINT_MISMATCH = 5
    BAD_STORE = 6
    PORT_IN_USE = 7
    INTERRUPTED = 130


#: What each code means, as ``boardd --help`` tells it.
MEANINGS = {
    ExitCode.OK: "done (or a clean stop)",
    ExitCode.ERROR: "an unexpected error",
    ExitCode.USAGE: "bad usage",
    ExitCode.BAD_LOGDIR: "a logdir missing or unreadable",
    ExitCode.STORE_LOCKED: "the store is written by another process",
    ExitCode.FINGERPRINT_MISMATCH: "a store built with other settings (see --rebuild)",
    ExitCode.BAD_STORE: "a store that cannot be used",
    ExitCode.PORT_IN_USE: "the port is in use",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
}


def describe(*codes: ExitCode, meanings: dict[ExitCode, str] | None = None) -> str:
    """``Exit codes: 0 …; 2 ….`` for a command's ``--help`` (``meanings`` say what a code
    means for that command, where it says more than the general meaning)."""
    said = {**MEANINGS, **(meanings or {})}
    return "Exit codes: " + "; ".join(f"{code.value} {said[code]}" for code in codes) + "."
