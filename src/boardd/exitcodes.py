"""The exit codes of every ``boardd`` command, defined once (the CLI and the systemd units)."""

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
