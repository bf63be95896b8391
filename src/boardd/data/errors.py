"""The data layer's errors: what went wrong, in words a client can act on; the HTTP layer maps
each kind to a status."""

from __future__ import annotations


class DataError(Exception):
    """A read that cannot be answered; ``message`` tells the caller what to change."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(DataError):
    """The arguments are wrong (an unknown plugin, a range the wrong way round)."""


class NotFound(DataError):
    """What was asked for does not exist (an unknown blob key)."""


class Unavailable(DataError):
    """The store cannot be read now (not created yet, unreadable, shutting down): retry later."""


class Damaged(Unavailable):
    """A read met a damaged store file: it is checked, and rebuilt from its logdir."""


class TooLarge(DataError):
    """The answer could exceed a bound (points, series): ask for less."""
