"""What a command says on stderr: how it fails (one line, and the exit code), and the log lines
of a long-running one."""

from __future__ import annotations

import logging
import os
import sys

from boardd.config import SettingsError
from boardd.exitcodes import ExitCode


def fail(command: str, message: object, code: int = ExitCode.ERROR) -> int:
    """Prints ``boardd COMMAND: message`` on stderr; returns ``code`` (the exit code)."""
    print(f"boardd {command}: {message}", file=sys.stderr)
    return code


def settings_failed(command: str, error: SettingsError) -> int:
    """A bad setting: its message, and the exit code it carries (usage, or a bad logdir)."""
    return fail(command, error, error.exit_code)


def setup_logging(level: str) -> None:
    """One line per event on stderr; no timestamps when journald adds its own."""
    fmt = "%(levelname)s %(name)s: %(message)s"
    if not os.environ.get("JOURNAL_STREAM"):
        fmt = "%(asctime)s " + fmt
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(fmt))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The form parser (Starlette's) warns of every malformed body before it raises: the
    # request gets its 400, and a client must not write a line of our log per request.
    logging.getLogger("python_multipart").setLevel(logging.ERROR)
