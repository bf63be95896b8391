"""Every setting of the ``boardd`` commands in one place: defaults, validation, the experiments
to watch. The commands parse their flags and hand the values here; whatever is wrong comes back
as a :class:`SettingsError` whose message names the flag and says what to give instead."""

from __future__ import annotations

import ipaddress
import logging
import math
import os
import re
import socket
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from boardd.exitcodes import ExitCode
from boardd.reader.modes import CrcMode
from boardd.store.location import default_store_path, is_url, state_directory

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 6007
DEFAULT_RESCAN_INTERVAL = 30.0
DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_DEBOUNCE_SECONDS = 0.005
DEFAULT_LOG_LEVEL = "info"
#: A remote logdir (a URL) is polled this often: a pass with nothing new costs one listing.
DEFAULT_REMOTE_POLL_INTERVAL = 5.0
#: Bytes one ranged GET of a remote logdir asks for at least.
DEFAULT_REMOTE_BLOCK_SIZE = 8 * 2**20
LOG_LEVELS = ("debug", "info", "warning", "error")
#: The values of ``--crc``, from the one definition of the modes.
CRC_CHOICES = tuple(mode.value for mode in CrcMode)
CRC_HELP = (
    "check every record's payload CRC (always, the default), or only of records that fail to "
    "decode (on-error, faster; what TensorBoard's Rust data server does)"
)
#: ``--hparams-idle-seconds``: a session of the hparams API without end info is RUNNING while
#: its runs received data this recently (by their points' wall times), UNKNOWN after.
DEFAULT_HPARAMS_IDLE_SECONDS = 600.0
#: The lineage store's file name in the state directory (``boardd serve --lineage`` else).
LINEAGE_FILE = "lineage.sqlite"
#: A bearer token shorter than this is refused (it could be guessed).
MIN_TOKEN_LENGTH = 16

#: The Host names a server always answers to: this machine's loopback names.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
#: The pages that may frame boardd's UIs: its own, and any on this machine's loopback names
#: (a notebook: Jupyter on localhost), whatever their port. Not [::1]: CSP's source grammar
#: has no IPv6 addresses (browsers reject the source, and say so in the page's console).
LOOPBACK_FRAME_ANCESTORS = ("'self'", "http://localhost:*", "http://127.0.0.1:*")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: ``--allowed-host``: a host name or an IPv4 address (an IPv6 one is bracketed, checked apart).
_HOST_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")
#: ``--answer-processes`` at most: each holds its own copy of what it reads.
MAX_ANSWER_PROCESSES = 16


def default_answer_processes() -> int:
    """``--answer-processes``' default: one on a machine with more than one core (the
    daemon's own process keeps a core for the ingest), none on a single core."""
    return 1 if (os.cpu_count() or 1) > 1 else 0


#: ``--frame-ancestor``: an origin as a CSP source writes it (scheme://host[:port], ``*.`` or
#: ``*`` as the host, ``*`` as the port; no IPv6 address: CSP has none).
_ORIGIN = re.compile(
    r"^[a-z][a-z0-9+.-]*://(\*|(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*)(:([0-9]+|\*))?$"
)


class SettingsError(ValueError):
    """A setting is invalid; the message says which and how to fix it."""

    #: The exit code of a command stopped by it.
    exit_code = ExitCode.USAGE


class LogdirError(SettingsError):
    """A logdir (or a path to inspect) cannot be read: missing, not a directory, no access."""

    exit_code = ExitCode.BAD_LOGDIR


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """The names a server answers to in the Host header (the name only, lower case, an IPv6
    address in brackets). A server that answers to any name can be read by any web page
    through DNS rebinding: the page's own name, pointed at this machine's address, is what
    its requests carry."""

    names: frozenset[bytes]
    #: Listening on every interface: any IP address too. Only a name can be rebound, and the
    #: machine's addresses may change while it runs (DHCP, a VPN coming up).
    any_address: bool = False

    def allows(self, name: bytes) -> bool:
        """Whether a Host name (its port removed) that is not in :attr:`names` as it came is
        one of this server's: another spelling of one (case, a final dot), ``*.localhost``
        (browsers resolve it to loopback themselves), a loopback address, or any address
        with :attr:`any_address`."""
        name = name.lower().rstrip(b".")
        if name in self.names or name.endswith(b".localhost"):
            return True
        if name.startswith(b"[") and name.endswith(b"]"):
            name = name[1:-1]
        try:
            address = ipaddress.ip_address(name.decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            return False
        return address.is_loopback or self.any_address


class ExperimentSpec(NamedTuple):
    """One watched logdir: its experiment name, path (or URL: a remote logdir) and store file."""

    name: str
    #: A local directory, or a URL (``s3://bucket/prefix``: see :attr:`remote`).
    logdir: Path | str
    db: Path

    @property
    def remote(self) -> bool:
        """Whether the logdir is a URL read through fsspec (polled, never watched)."""
        return isinstance(self.logdir, str)


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
    #: The file the token was read from (``--token-file``), named in the log instead of it.
    token_file: Path | None = None
    #: The Host names answered to (``--allowed-host`` and the addresses listened on); None:
    #: any (``--allowed-host '*'``).
    hosts: HostPolicy | None = None
    #: The origins whose pages may frame the UIs (``frame-ancestors``), the loopback ones first.
    frame_ancestors: tuple[str, ...] = LOOPBACK_FRAME_ANCESTORS
    #: Rebuild (beside, then swap in) each store that was built with other settings.
    rebuild: bool = False
    #: Processes that build the large answers beside the daemon's (``--answer-processes``).
    answer_processes: int = 0
    hparams_idle_seconds: float = DEFAULT_HPARAMS_IDLE_SECONDS
    #: The lineage store (ML Metadata) file; None: no lineage store (in-process tests).
    lineage: Path | None = None
    #: Remote logdirs: fsspec storage options (``--storage-option``; may hold credentials:
    #: never shown), the polling interval, the least bytes per ranged GET.
    storage_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    remote_poll_interval: float = DEFAULT_REMOTE_POLL_INTERVAL
    remote_block_size: int = DEFAULT_REMOTE_BLOCK_SIZE
    #: Every URL under this path (``--path-prefix``: "/tb", never a trailing "/"); "" for none.
    path_prefix: str = ""
    #: TensorBoard's ``--window_title``: its UI's title in the browser ("": TensorBoard's own).
    window_title: str = ""


def parse_path_prefix(text: str) -> str:
    """``--path-prefix``: "/a/b" from "a/b", "/a/b/" or "/a/b"; "" from "" or "/".
    SettingsError for anything that is not a plain URL path (a query, a fragment, "." or ".."
    segments, empty segments, spaces, percent signs, control characters)."""
    stripped = text.strip("/")
    if not stripped:
        return ""
    segments = stripped.split("/")
    bad = next(
        (s for s in segments if s in ("", ".", "..") or not _PREFIX_SEGMENT.fullmatch(s)),
        None,
    )
    if bad is not None:
        raise SettingsError(
            f"--path-prefix {text!r}: give a URL path such as /tensorboard or /proxy/boardd "
            "(letters, digits and - . _ ~ between slashes)"
        )
    return "/" + "/".join(segments)


_PREFIX_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+", re.ASCII)


def serve_settings(
    logdirs: Sequence[str],
    *,
    db: str | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    port_file: str | None = None,
    token_file: str | None = None,
    insecure: bool = False,
    poll: bool = False,
    poll_interval: float | None = None,
    rescan_interval: float = DEFAULT_RESCAN_INTERVAL,
    log_level: str = DEFAULT_LOG_LEVEL,
    samples_per_plugin: str = "",
    crc: str = CrcMode.ALWAYS.value,
    rebuild: bool = False,
    hparams_idle_seconds: float = DEFAULT_HPARAMS_IDLE_SECONDS,
    lineage: str | None = None,
    environ: Mapping[str, str] | None = None,
    storage_options: Sequence[str] = (),
    remote_block_size: str | int = DEFAULT_REMOTE_BLOCK_SIZE,
    path_prefix: str = "",
    window_title: str = "",
    allowed_hosts: Sequence[str] = (),
    frame_ancestors: Sequence[str] = (),
    answer_processes: int | None = None,
) -> ServeSettings:
    """The validated settings of ``boardd serve``; SettingsError (LogdirError for a logdir that
    cannot be read) says what is wrong. ``poll_interval`` None: the defaults (local logdirs
    polled every DEFAULT_POLL_INTERVAL when polling, remote ones every
    DEFAULT_REMOTE_POLL_INTERVAL)."""
    remote_poll_interval = DEFAULT_REMOTE_POLL_INTERVAL if poll_interval is None else poll_interval
    poll_interval = DEFAULT_POLL_INTERVAL if poll_interval is None else poll_interval
    experiments = parse_experiments(logdirs, db, environ)
    sampling = parse_sampling(samples_per_plugin)
    prefix = parse_path_prefix(path_prefix)
    for flag, value in (
        ("--poll-interval", poll_interval),
        ("--rescan-interval", rescan_interval),
    ):
        if not value > 0:
            raise SettingsError(f"{flag} {value:g}: give a number of seconds above 0")
    if not (hparams_idle_seconds >= 0 and math.isfinite(hparams_idle_seconds)):
        raise SettingsError(
            f"--hparams-idle-seconds {hparams_idle_seconds:g}: give a number of seconds, 0 or more"
        )
    if not 0 <= port <= 65535:
        raise SettingsError(f"--port {port}: give 0 to 65535 (0 picks a free port)")
    if answer_processes is None:
        answer_processes = default_answer_processes()
    if not 0 <= answer_processes <= MAX_ANSWER_PROCESSES:
        raise SettingsError(
            f"--answer-processes {answer_processes}: give 0 (every answer built in the "
            f"daemon's process) to {MAX_ANSWER_PROCESSES}"
        )
    if log_level not in LOG_LEVELS:
        raise SettingsError(f"--log-level {log_level}: give one of {', '.join(LOG_LEVELS)}")
    token = read_token(token_file) if token_file else None
    if token is None and not insecure and not is_loopback(host):
        raise SettingsError(
            f"--host {host} exposes your metrics beyond this machine: give --token-file FILE "
            "(clients then send 'Authorization: Bearer <token>'), or --insecure if you really "
            "mean it"
        )
    hosts = host_policy(host, allowed_hosts)
    ancestors = parse_frame_ancestors(frame_ancestors)
    for spec in experiments:
        check_logdir(spec.logdir)
    return ServeSettings(
        experiments=experiments,
        host=host,
        port=port,
        port_file=Path(port_file).resolve() if port_file else None,
        poll=poll,
        rescan_interval=rescan_interval,
        poll_interval=poll_interval,
        log_level=log_level,
        sampling=sampling,
        crc_mode=parse_crc(crc),
        token=token,
        token_file=Path(token_file).resolve() if token_file else None,
        hosts=hosts,
        frame_ancestors=ancestors,
        rebuild=rebuild,
        answer_processes=answer_processes,
        hparams_idle_seconds=hparams_idle_seconds,
        lineage=lineage_path(lineage, environ),
        storage_options=parse_storage(storage_options),
        remote_poll_interval=remote_poll_interval,
        remote_block_size=parse_size(remote_block_size),
        path_prefix=prefix,
        window_title=window_title,
    )


def lineage_path(given: str | None, environ: Mapping[str, str] | None = None) -> Path:
    """``--lineage PATH``, else ``lineage.sqlite`` in the state directory; SettingsError if
    PATH is a directory."""
    if not given:
        return state_directory(environ) / LINEAGE_FILE
    path = Path(os.path.abspath(Path(given).expanduser()))
    if path.is_dir():
        raise SettingsError(f"--lineage {given}: is a directory; give the lineage store's file")
    return path


def parse_storage(items: Sequence[str]) -> dict[str, Any]:
    """``--storage-option KEY=VALUE`` items → fsspec storage options."""
    if not items:  # the usual case: the remote logdirs' module is not imported for nothing
        return {}
    from boardd.ingest.remote import parse_storage_options

    try:
        return parse_storage_options(tuple(items))
    except ValueError as exc:
        raise SettingsError(f"--storage-option {exc}") from None


_SIZE = re.compile(r"^\s*(\d+)\s*(|b|k|kb|kib|m|mb|mib|g|gb|gib)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30}


def parse_size(text: str | int) -> int:
    """``--remote-block-size``: bytes, or with a unit (``8MiB``, ``512k``; powers of 2)."""
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE.match(text)
        if match is None:
            raise SettingsError(f"--remote-block-size {text}: give a size such as 8MiB or 65536")
        value = int(match.group(1)) * _UNITS[match.group(2)[:1].lower()]
    if not 4096 <= value <= 2**31:
        raise SettingsError(f"--remote-block-size {text}: give 4KiB to 2GiB")
    return value


def parse_sampling(spec: str) -> dict[str, int | None]:
    """``--samples-per-plugin`` (TensorBoard's syntax) → plugin → points kept (None: all)."""
    from boardd.store.sampling import parse_samples_per_plugin

    try:
        return parse_samples_per_plugin(spec)
    except ValueError as exc:
        raise SettingsError(f"--samples-per-plugin: {exc}") from None


def parse_crc(text: str) -> CrcMode:
    """``--crc`` → its mode."""
    try:
        return CrcMode(text)
    except ValueError:
        raise SettingsError(f"--crc {text}: give one of {', '.join(CRC_CHOICES)}") from None


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` exposes the server to this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_policy(host: str, allowed: Sequence[str] = ()) -> HostPolicy | None:
    """The Host names a server listening on ``host`` answers to: the loopback names, ``host``
    itself, on every interface (0.0.0.0, ::) this machine's name and any address, and the
    ``--allowed-host`` names; None if these include ``*`` (any name)."""
    if "*" in allowed:
        return None
    names = {*LOOPBACK_HOSTS, *(_host_name(name) for name in allowed)}
    any_address = host in ("", "0.0.0.0", "::")
    if any_address:
        # Looked up once at start, never per request.
        names.update(n.lower() for n in (socket.gethostname(), socket.getfqdn()) if n)
    else:
        names.add(_bracketed(host.lower()))
    return HostPolicy(frozenset(n.encode("ascii", "replace") for n in names), any_address)


def _host_name(text: str) -> str:
    """``--allowed-host NAME``: the name as it is compared (lower case, an IPv6 address in
    brackets); SettingsError for what cannot be a Host name."""
    name = text.strip().lower().rstrip(".")
    if _HOST_NAME.fullmatch(name):
        return name
    try:
        return _bracketed(str(ipaddress.ip_address(name.strip("[]"))))
    except ValueError:
        raise SettingsError(
            f"--allowed-host {text!r}: give a host name (boardd.example.org) or an address, "
            "without scheme or port, or '*' for any"
        ) from None


def _bracketed(host: str) -> str:
    """An IPv6 address as a Host header writes it: in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def parse_frame_ancestors(origins: Sequence[str]) -> tuple[str, ...]:
    """``--frame-ancestor ORIGIN`` items → the ``frame-ancestors`` sources: the loopback ones,
    then these (``*``: any page may frame the UIs)."""
    if "*" in origins:
        return ("*",)
    extra = []
    for origin in origins:
        given = origin.strip().rstrip("/")
        if not _ORIGIN.fullmatch(given):
            raise SettingsError(
                f"--frame-ancestor {origin!r}: give an origin such as "
                "https://notebooks.example.org or http://10.0.0.5:8888 (scheme://host[:port], "
                "no path, no IPv6 address: CSP has none), or '*' for any"
            )
        if given not in LOOPBACK_FRAME_ANCESTORS and given not in extra:
            extra.append(given)
    return (*LOOPBACK_FRAME_ANCESTORS, *extra)


def read_token(path: str) -> str:
    """The token in a file (surrounding whitespace ignored). A file that other users can read
    is warned about: whoever reads it has this server's access."""
    try:
        with open(path, encoding="utf-8") as f:
            mode = os.fstat(f.fileno()).st_mode
            token = f.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"--token-file {path}: cannot be read ({exc})") from None
    readers = [
        who for who, bit in (("group", stat.S_IRGRP), ("others", stat.S_IROTH)) if mode & bit
    ]
    if readers:
        log.warning(
            "--token-file %s is readable by its %s (mode %03o): whoever can read it can use "
            "this server with its token; make it readable by this user only (chmod 600 %s)",
            path,
            " and ".join(readers),
            stat.S_IMODE(mode),
            path,
        )
    if len(token) < MIN_TOKEN_LENGTH:
        raise SettingsError(
            f"--token-file {path}: the token must be at least {MIN_TOKEN_LENGTH} characters"
        )
    return token


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
        if not sep or is_url(spec) or os.path.exists(spec) or spec.startswith(("/", ".", "~")):
            # A path (possibly not mounted yet) may itself contain '='; so may a URL.
            name, path_text = "", spec
        logdir: Path | str
        if is_url(path_text):
            logdir = path_text.rstrip("/")
            if not name:
                name = _name_from_url(logdir)
        else:
            logdir = Path(os.path.abspath(Path(path_text).expanduser()))
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


def check_logdir(logdir: Path | str) -> None:
    """Raises LogdirError if ``logdir`` cannot be watched (the one wording of each problem).
    A URL is checked without contacting anything (its scheme known, its library installed):
    a server down at start is waited for, not a reason to exit."""
    if isinstance(logdir, str):
        from boardd.ingest.remote import filesystem_problem

        remote_problem = filesystem_problem(logdir)
        if remote_problem is not None:
            raise LogdirError(f"{logdir}: {remote_problem}")
        return
    problem = _path_problem(logdir)
    if problem is None and not stat.S_ISDIR(logdir.stat().st_mode):
        problem = "not a directory"
    if problem is None and not os.access(logdir, os.R_OK | os.X_OK):
        problem = "directory is not readable by this user"
    if problem is not None:
        raise LogdirError(f"{logdir}: {problem}")


def _path_problem(path: Path) -> str | None:
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return "does not exist"
    except OSError as exc:
        # Path.exists() raises this (EACCES: a parent directory is not searchable).
        return (
            f"cannot be reached ({exc.strerror}): check the permissions of the directories above it"
        )
    return None


def _name_from_url(url: str) -> str:
    """``s3://bucket/runs/exp1`` → ``exp1`` (the bucket for a bare bucket)."""
    last = url.split("://", 1)[1].rstrip("/").rsplit("/", 1)[-1]
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", last).strip("._-")
    return (base or "logdir")[:64]


def _name_from(logdir: Path) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", logdir.resolve().name).strip("._-")
    return (base or "logdir")[:64]
