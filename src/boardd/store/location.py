"""Where a logdir's store lives by default: outside the logdir, under the state directory."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path

#: A logdir given as a URL (``s3://bucket/prefix``, ``gs://…``, ``file:///…``): read through
#: fsspec (boardd.ingest.remote). Two letters at least, so that ``C:/…`` is not one.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


def is_url(logdir: str | os.PathLike[str]) -> bool:
    """Whether ``logdir`` is a URL (a remote logdir) rather than a local path."""
    return isinstance(logdir, str) and _URL.match(logdir) is not None


def logdir_location(logdir: str | os.PathLike[str]) -> str:
    """How a store records its logdir: a local path resolved, a URL as given (no trailing
    slash): the same logdir named twice is the same store."""
    if is_url(logdir):
        return str(logdir).rstrip("/")
    return str(Path(logdir).resolve())


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
    """One store file per logdir: ``<name>-<hash of the absolute path or URL>.sqlite``."""
    location = logdir_location(logdir)
    digest = hashlib.sha256(location.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    last = location.rsplit("/", 1)[-1] if is_url(location) else Path(location).name
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", last or "root").strip("._") or "logdir"
    return state_directory(environ) / f"{name[:48]}-{digest}.sqlite"
