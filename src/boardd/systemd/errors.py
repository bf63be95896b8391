"""The error of the systemd tooling: a service that cannot be installed as asked."""

from __future__ import annotations

from boardd.exitcodes import ExitCode


class InstallError(Exception):
    """The service cannot be installed as asked; the message says what to do instead."""

    def __init__(self, message: str, exit_code: ExitCode = ExitCode.ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code
