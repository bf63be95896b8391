"""Settings of ``boardd serve`` in one place: defaults, validation, the experiments to watch."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from boardd.reader.modes import CrcMode
from boardd.store.location import default_store_path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 6007
DEFAULT_RESCAN_INTERVAL = 30.0
DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_DEBOUNCE_SECONDS = 0.005
DEFAULT_LOG_LEVEL = "info"
LOG_LEVELS = ("debug", "info", "warning", "error")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class SettingsError(ValueError):
    """A setting is invalid; the message says which and how to fix it."""


@dataclass(frozen=True, slots=True)
class ExperimentSpec:
    """One watched logdir: its experiment name, path and store file."""

    name: str
    logdir: Path
    db: Path


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """Everything ``boardd serve`` needs, validated."""

    experiments: tuple[ExperimentSpec, ...]
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    port_file: Path | None = None
    poll: bool = False
    rescan_interval: float = DEFAULT_RESCAN_INTERVAL
    poll_interval: float = DEFAULT_POLL_INTERVAL
    debounce_seconds: float = DEFAULT_DEBOUNCE_SECONDS
    log_level: str = DEFAULT_LOG_LEVEL
    sampling: Mapping[str, int | None] = field(default_factory=dict)
    crc_mode: CrcMode = CrcMode.ALWAYS
    token: str | None = field(default=None, repr=False)


def parse_experiments(
    specs: Sequence[str], db: str | None, environ: Mapping[str, str] | None = None
) -> tuple[ExperimentSpec, ...]:
    """``name=path`` or plain paths → experiments (a plain path is named after its directory).

    ``--db`` may only be given with a single logdir; otherwise each logdir gets its default
    store under the state directory.
    """
    if not specs:
        raise SettingsError("give at least one LOGDIR")
    if db is not None and len(specs) > 1:
        raise SettingsError("--db names one store: use it with a single LOGDIR")
    experiments: list[ExperimentSpec] = []
    for spec in specs:
        name, sep, path_text = spec.partition("=")
        if not sep or os.path.exists(spec) or spec.startswith(("/", ".", "~")):
            # A path (possibly not mounted yet) may itself contain '='.
            name, path_text = "", spec
        logdir = Path(path_text).expanduser()
        if not name:
            name = _name_from(logdir)
        if not _NAME.match(name):
            raise SettingsError(
                f"experiment name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)"
            )
        if any(e.name == name for e in experiments):
            raise SettingsError(f"experiment name {name!r} is given twice: use name=path")
        store = Path(db) if db is not None else default_store_path(logdir, environ)
        experiments.append(ExperimentSpec(name, logdir, store))
    return tuple(experiments)


def check_logdir(logdir: Path) -> str | None:
    """Why a logdir cannot be watched, or None if it can."""
    try:
        st = logdir.stat()
    except (FileNotFoundError, NotADirectoryError):
        return f"{logdir}: no such directory"
    except OSError as exc:
        # Path.exists() raises this (EACCES: a parent directory is not searchable).
        return (
            f"{logdir}: cannot be reached ({exc.strerror}): check the permissions of the "
            "directories above it"
        )
    if not stat.S_ISDIR(st.st_mode):
        return f"{logdir}: not a directory"
    if not os.access(logdir, os.R_OK | os.X_OK):
        return f"{logdir}: directory is not readable by this user"
    return None


def _name_from(logdir: Path) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", logdir.resolve().name).strip("._-")
    return (base or "logdir")[:64]
