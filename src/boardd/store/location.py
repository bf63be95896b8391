"""Where a logdir's store lives by default: outside the logdir, under the state directory."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path


def state_directory(environ: Mapping[str, str] | None = None) -> Path:
    """``$STATE_DIRECTORY`` (set by systemd's StateDirectory=), else ``$XDG_STATE_HOME/boardd``
    (default ``~/.local/state/boardd``).

    Logdirs are often read-only, synced or shared, so the store never goes inside one.
    """
    env = os.environ if environ is None else environ
    systemd = env.get("STATE_DIRECTORY")
    if systemd:
        # systemd may list several directories separated by colons; the first is ours.
        return Path(systemd.split(":")[0])
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    xdg = env.get("XDG_STATE_HOME") or str(home / ".local" / "state")
    return Path(xdg) / "boardd"


def default_store_path(
    logdir: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> Path:
    """One store file per logdir: ``<name>-<hash of the absolute path>.sqlite``."""
    absolute = Path(logdir).resolve()
    digest = hashlib.sha256(str(absolute).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", absolute.name or "root").strip("._") or "logdir"
    return state_directory(environ) / f"{name[:48]}-{digest}.sqlite"
