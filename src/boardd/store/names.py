"""Names from the file system as the store keeps them: valid text, reversibly.

A POSIX file name is bytes; Python hands one that is not valid UTF-8 over as a ``str`` holding
lone surrogates (``os.fsdecode``'s ``surrogateescape``: byte 0xFF becomes U+DCFF), which SQLite,
JSON and HTTP cannot carry. The store keeps such a name *percent-escaped*: each undecodable
byte becomes ``%XX`` (upper-case hex, always 80–FF), and a ``%`` that would otherwise read as
such an escape (followed by two hex digits that are 25 or 80–FF) becomes ``%25``. Every other
character, ``%`` included, is kept as it is, so a valid UTF-8 name (in practice every name) is
stored unchanged, and :func:`unescape` gives back exactly the name the file system had.

Why this and not Python's ``backslashreplace``: that one cannot be undone (a directory really
named ``a\\xff`` and one named ``a`` + byte 0xFF would both be stored as ``a\\xff``), and the
store must find the path again to read the file. Percent-escaping is also the notation people
already read as "this byte", and it leaves every valid name alone.
"""

from __future__ import annotations

import re

#: A surrogate standing for an undecodable byte (U+DC80–U+DCFF), or a ``%`` that would read as
#: an escape.
_TO_ESCAPE = re.compile(r"[\udc80-\udcff]|%(?=25|[89a-fA-F][0-9a-fA-F])")
#: An escape this module writes: ``%25`` or ``%80``–``%FF``.
_ESCAPED = re.compile(r"%(25|[89a-fA-F][0-9a-fA-F])")


def _escape_one(match: re.Match[str]) -> str:
    char = match.group()
    if char == "%":
        return "%25"
    return f"%{ord(char) - 0xDC00:02X}"


def _unescape_one(match: re.Match[str]) -> str:
    value = int(match.group(1), 16)
    return "%" if value == 0x25 else chr(0xDC00 + value)


def escape(name: str) -> str:
    """The stored form of a file-system name (unchanged when it is valid UTF-8 and holds no
    ``%`` that reads as an escape)."""
    if "%" not in name and name.isascii():
        return name  # the common case, without a regular expression
    return _TO_ESCAPE.sub(_escape_one, name)


def unescape(stored: str) -> str:
    """The file-system name (surrogate-escaped as :func:`os.fsdecode` gives it) of a stored one."""
    if "%" not in stored:
        return stored
    return _ESCAPED.sub(_unescape_one, stored)


def text(message: str) -> str:
    """A message (an error naming a path) made storable: its undecodable bytes escaped."""
    return escape(message)
