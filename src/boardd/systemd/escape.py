"""Paths as systemd reads them: unit-name escaping (``systemd-escape --path``), ExecStart= words."""

from __future__ import annotations

import os
import re
from pathlib import Path

from boardd.systemd.errors import InstallError

_ESCAPE_KEEP = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.")
_PLAIN_WORD = re.compile(r"^[A-Za-z0-9/_.:+,@=%-]+$")


def systemd_escape_path(path: str) -> str:
    """What ``systemd-escape --path PATH`` prints: a path turned into a unit-name fragment.

    The path is simplified (repeated and trailing slashes, ``.`` components) and must be
    absolute, without ``..``. ``/`` becomes ``-``; every byte of the UTF-8 (file-system)
    encoding other than ASCII letters, digits, ``:``, ``_`` and ``.`` becomes ``\\xNN``, and so
    does a leading ``.``. The root is ``-``. ``%f`` in a unit undoes it.
    """
    if not path.startswith("/"):
        raise ValueError(f"{path!r} is not an absolute path")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"{path!r} is not normalized (it contains '..')")
    if not parts:
        return "-"
    out: list[str] = []
    raw = os.fsencode("/".join(parts))
    for i, byte in enumerate(raw):
        if byte == 0x2F:
            out.append("-")
        elif byte in _ESCAPE_KEEP and not (i == 0 and byte == 0x2E):
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out)


def quote_exec_path(path: Path) -> str:
    """``path`` as the first word of ExecStart= (quoted when needed, ``%`` doubled).

    systemd refuses an executable whose path holds quotes, backslashes or control characters
    ("Executable name contains special characters"), so those are refused here too.
    """
    text = str(path)
    if not path.is_absolute():
        raise InstallError(f"{text}: ExecStart needs an absolute path to boardd")
    if any(ord(c) < 0x20 or ord(c) == 0x7F or c in "\"'\\" for c in text):
        raise InstallError(
            f"{text!r}: systemd cannot start a program whose path holds quotes, backslashes or "
            "control characters; install boardd in a directory without them"
        )
    text = text.replace("%", "%%")
    return text if _PLAIN_WORD.match(text) else f'"{text}"'
