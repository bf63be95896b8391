"""The reader's modes, importable without numpy (the command line parses them at start)."""

from __future__ import annotations

import enum


class CrcMode(enum.Enum):
    """When payload CRCs are checked. Length CRCs are always checked: framing depends on them."""

    ALWAYS = "always"
    """Check every payload CRC (the default; costs little with the batched check)."""
    ON_ERROR = "on-error"
    """Check a payload's CRC only when decoding it fails (rustboard's behaviour)."""
