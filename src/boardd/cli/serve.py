"""``boardd serve LOGDIR...``: the daemon — watch logdirs, keep their stores current, serve HTTP."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re

from boardd.cli.flags import add_store_arguments
from boardd.cli.messages import fail, settings_failed, setup_logging
from boardd.config import (
    DEFAULT_HOST,
    DEFAULT_HPARAMS_IDLE_SECONDS,
    DEFAULT_LOG_LEVEL,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_PORT,
    DEFAULT_REMOTE_BLOCK_SIZE,
    DEFAULT_REMOTE_POLL_INTERVAL,
    DEFAULT_RESCAN_INTERVAL,
    LOG_LEVELS,
    ServeSettings,
    SettingsError,
    serve_settings,
)
from boardd.exitcodes import ExitCode

NAME = "serve"

log = logging.getLogger(__name__)

REBUILD_HELP = (
    "if a store was built with other settings (--samples-per-plugin, the logdir), build a "
    "fresh one with exactly these beside it and swap it in once complete, serving the old "
    "data meanwhile (the way to keep fewer points). Without it a store of another logdir "
    "stops serve at once (exit 5); one that keeps more points than --samples-per-plugin asks "
    "is used as it is, one that keeps fewer is rebuilt with the larger sample in the "
    "background. A store whose settings match is resumed either way, so the flag may stay "
    "in a service's arguments"
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declares the command and its flags."""
    parser = sub.add_parser(
        NAME,
        help="the daemon: watch logdirs, keep their stores current, serve the HTTP API",
        description=(
            "Catches up with whatever is new in each LOGDIR, then follows it live (inotify, "
            "with a periodic rescan as the safety net) and serves TensorBoard's data API over "
            "HTTP. Each LOGDIR is an experiment: NAME=PATH names it, a plain PATH is named "
            "after its directory. A LOGDIR may be a URL (s3://bucket/prefix, gs://, az://, any "
            'fsspec URL; pip install "boardd[s3]", [gcs] or [azure]): it is polled with one '
            "listing per pass and read with ranged GETs of only the new bytes; credentials come "
            "from the library's usual sources (environment, config files). If another boardd "
            "writes a store, this one serves it read-only and takes over when the other stops. "
            "SIGTERM/SIGINT stop cleanly; "
            "SIGHUP rescans now. Exit codes: 0 clean stop, 2 bad usage, 3 a LOGDIR missing or "
            "unreadable, 5 a store built with other settings (see --rebuild), 7 the port is "
            "in use."
        ),
    )
    parser.add_argument(
        "logdirs",
        nargs="*",
        metavar="LOGDIR",
        help="PATH, URL, NAME=PATH or NAME=URL (or TensorBoard's --logdir, --logdir_spec)",
    )
    add_store_arguments(parser, rebuild_help=REBUILD_HELP)
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}: this machine only)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one, see --port-file)",
    )
    parser.add_argument(
        "--port-file", metavar="FILE", help="write the port actually bound to FILE once ready"
    )
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help=(
            "require 'Authorization: Bearer <token>' on every request, the token being FILE's "
            "content (at least 16 characters); needed to listen on a non-loopback --host. "
            "Keep FILE readable by this user only (chmod 600): a warning says otherwise"
        ),
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        dest="allowed_hosts",
        help=(
            "also answer requests whose Host header names NAME (repeat for more; '*': any). "
            "boardd answers only to the names it is reachable as, so that a web page cannot "
            "read it through DNS rebinding: localhost and *.localhost, the loopback addresses, "
            "--host, and with --host 0.0.0.0 or --bind_all this machine's name and addresses; "
            "others get 421. Behind a reverse proxy (--path-prefix), list the proxy's host name "
            "unless it passes the backend's Host"
        ),
    )
    parser.add_argument(
        "--frame-ancestor",
        action="append",
        default=[],
        metavar="ORIGIN",
        dest="frame_ancestors",
        help=(
            "let pages of ORIGIN (scheme://host[:port], e.g. https://notebooks.example.org) "
            "show the dashboard and TensorBoard's UI in a frame (repeat for more; '*': any "
            "page). Without it only boardd's own pages and pages on this machine's loopback "
            "names (a notebook on localhost) may frame them"
        ),
    )
    parser.add_argument(
        "--answer-processes",
        type=int,
        default=None,
        metavar="N",
        help=(
            "processes that build the large answers (many series at once) beside the daemon's "
            "own, so that readers never take the core the ingest needs; 0 builds every answer "
            "in the daemon's process (default: 1 on a machine with more than one core, else 0)"
        ),
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without a token (anyone who can reach it reads all)",
    )
    parser.add_argument(
        "--poll",
        action="store_true",
        help=(
            "poll from the start instead of using inotify (boardd polls by itself where inotify "
            "cannot hear: NFS, SMB, FUSE and 9p logdirs, or after a rescan finds a change no "
            "event announced)"
        ),
    )
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help=(
            f"how often to poll when polling (default {DEFAULT_POLL_INTERVAL:g}; a remote "
            f"logdir, always polled: {DEFAULT_REMOTE_POLL_INTERVAL:g})"
        ),
    )
    parser.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="storage_options",
        help=(
            "an option of the remote logdirs' file system (fsspec storage options; repeat "
            "for more), e.g. endpoint_url=http://127.0.0.1:9000 for an S3-compatible server, "
            "anon=true; true/false and integers are converted. Prefer the environment or the "
            "library's config files for credentials"
        ),
    )
    parser.add_argument(
        "--remote-block-size",
        default=str(DEFAULT_REMOTE_BLOCK_SIZE),
        metavar="SIZE",
        help=(
            "least bytes one ranged GET of a remote logdir fetches, e.g. 8MiB "
            f"(default {DEFAULT_REMOTE_BLOCK_SIZE // 2**20}MiB): fewer requests for a big "
            "catch-up; a pass with nothing new makes none"
        ),
    )
    parser.add_argument(
        "--rescan-interval",
        type=float,
        default=DEFAULT_RESCAN_INTERVAL,
        metavar="SECONDS",
        help=f"full rescan of every logdir, the safety net (default {DEFAULT_RESCAN_INTERVAL:g})",
    )
    parser.add_argument(
        "--path-prefix",
        "--path_prefix",
        default="",
        metavar="PATH",
        help=(
            "serve every page and route under this URL path, as tensorboard --path_prefix "
            "does: for a reverse proxy that forwards /PATH/... unchanged "
            "(e.g. --path-prefix /tensorboard; default: none)"
        ),
    )
    parser.add_argument(
        "--hparams-idle-seconds",
        type=float,
        default=DEFAULT_HPARAMS_IDLE_SECONDS,
        metavar="SECONDS",
        help=(
            "hparams: a session without end info is RUNNING while its runs received data "
            f"this recently, then UNKNOWN (default {DEFAULT_HPARAMS_IDLE_SECONDS:g})"
        ),
    )
    parser.add_argument(
        "--lineage",
        metavar="PATH",
        help=(
            "the lineage store (ML Metadata's records: what boardd derives from the logdirs "
            "and what users write through /api/v1/metadata/...): default lineage.sqlite in the "
            "state directory, beside the logdir stores. --rebuild never touches it"
        ),
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=DEFAULT_LOG_LEVEL,
        help=f"least severe messages logged to stderr (default {DEFAULT_LOG_LEVEL})",
    )
    add_tensorboard_arguments(parser)
    parser.set_defaults(run=run)


#: TensorBoard's loading flags: boardd follows every logdir live, so they change nothing.
_LOADING_FLAGS = (
    ("--load_fast", "true|false|auto"),
    ("--reload_interval", "SECONDS"),
    ("--reload_multifile", "BOOL"),
    ("--reload_multifile_inactive_secs", "SECONDS"),
    ("--reload_task", "auto|thread|process|blocking"),
    ("--max_reload_threads", "N"),
    ("--purge_orphaned_data", "BOOL"),
    ("--detect_file_replacement", "BOOL"),
)


def add_tensorboard_arguments(parser: argparse.ArgumentParser) -> None:
    """TensorBoard's own flags, so that ``tensorboard ARGS`` can become ``boardd serve ARGS``."""
    group = parser.add_argument_group(
        "TensorBoard's flags",
        "accepted so that `tensorboard --logdir LOGDIR ...` works as `boardd serve --logdir "
        "LOGDIR ...`: --port, --host and --path_prefix are above, and --samples_per_plugin "
        "is --samples-per-plugin. TensorBoard's loading flags ("
        + ", ".join(flag for flag, _ in _LOADING_FLAGS)
        + ") are accepted and change nothing: boardd follows every logdir live",
    )
    group.add_argument(
        "--logdir",
        action="append",
        default=[],
        dest="tb_logdirs",
        metavar="PATH",
        help="a LOGDIR, as tensorboard --logdir (repeat for more)",
    )
    group.add_argument(
        "--logdir_spec",
        action="append",
        default=[],
        dest="tb_logdir_specs",
        metavar="NAME:PATH,...",
        help=(
            "LOGDIRs in TensorBoard's --logdir_spec syntax: NAME:PATH (or PATH) separated by "
            "commas; the same as giving NAME=PATH ... as LOGDIRs"
        ),
    )
    group.add_argument(
        "--bind_all",
        action="store_true",
        help=(
            "listen on every interface, as --host 0.0.0.0 (which needs --token-file, or --insecure)"
        ),
    )
    group.add_argument(
        "--window_title",
        default="",
        metavar="TITLE",
        help="the title of TensorBoard's UI in the browser (default: TensorBoard's own)",
    )
    for flag, metavar in _LOADING_FLAGS:
        group.add_argument(
            flag,
            nargs="?",
            const="",
            default=None,
            metavar=metavar,
            help=argparse.SUPPRESS,
        )


def logdir_spec_entries(spec: str) -> list[str]:
    """TensorBoard's ``--logdir_spec`` → LOGDIR arguments: ``NAME:PATH`` → ``NAME=PATH``; a
    part is a plain path, as TensorBoard reads it, when it is a URL, starts with ``/`` or has
    no ``:`` (``run:/a:b`` splits at the first colon). A plain relative path is made absolute
    (it may contain ``=``)."""
    entries = []
    for part in spec.split(","):
        if not part:
            raise SettingsError(f"--logdir_spec {spec!r}: an empty entry (two commas?)")
        if not _URI.match(part) and ":" in part and not part.startswith("/"):
            name, _, path = part.partition(":")
            if not path:
                raise SettingsError(f"--logdir_spec {spec!r}: {name!r} has no path")
            if "=" in name:  # NAME=PATH would split it elsewhere
                raise SettingsError(
                    f"--logdir_spec {spec!r}: the name {name!r}: use letters, digits, '.', '_' "
                    "or '-'"
                )
            entries.append(f"{name}={path}")
        else:
            entries.append(_plain(part))
    return entries


def _plain(path: str) -> str:
    """A LOGDIR argument that can only be read as a path or URL: a relative path, which may
    contain ``=``, is made absolute (NAME=PATH would split it)."""
    return path if _URI.match(path) else os.path.abspath(os.path.expanduser(path))


#: What TensorBoard takes for a URL in --logdir_spec.
_URI = re.compile(r"[a-zA-Z][0-9a-zA-Z.]*://")


def logdir_arguments(args: argparse.Namespace) -> list[str]:
    """Every LOGDIR given: positional ones, then --logdir's (a path or URL, as TensorBoard
    reads it), then --logdir_spec's."""
    logdirs = [*args.logdirs, *(_plain(path) for path in args.tb_logdirs)]
    for spec in args.tb_logdir_specs:
        logdirs.extend(logdir_spec_entries(spec))
    if not logdirs:
        raise SettingsError("give a LOGDIR (e.g. boardd serve ./runs), or --logdir PATH")
    return logdirs


def run(args: argparse.Namespace) -> int:
    """Runs ``boardd serve`` until SIGTERM/SIGINT; returns the exit code."""
    from boardd.daemon.service import PortInUseError, Service, bind_socket
    from boardd.store.errors import FingerprintMismatchError

    setup_logging(args.log_level)
    ignored = [flag for flag, _ in _LOADING_FLAGS if getattr(args, flag[2:]) is not None]
    if ignored:
        log.info(
            "%s: TensorBoard's loading flags change nothing here (boardd follows every logdir "
            "live); ignored",
            ", ".join(ignored),
        )
    try:
        if args.bind_all and args.host != DEFAULT_HOST:
            raise SettingsError("give --host or --bind_all, not both")
        settings = serve_settings(
            logdir_arguments(args),
            db=args.db,
            host="0.0.0.0" if args.bind_all else args.host,
            port=args.port,
            port_file=args.port_file,
            token_file=args.token_file,
            insecure=args.insecure,
            poll=args.poll,
            poll_interval=args.poll_interval,
            rescan_interval=args.rescan_interval,
            log_level=args.log_level,
            samples_per_plugin=args.samples_per_plugin,
            crc=args.crc,
            rebuild=args.rebuild,
            hparams_idle_seconds=args.hparams_idle_seconds,
            lineage=args.lineage,
            storage_options=args.storage_options,
            remote_block_size=args.remote_block_size,
            path_prefix=args.path_prefix,
            window_title=args.window_title,
            allowed_hosts=args.allowed_hosts,
            frame_ancestors=args.frame_ancestors,
            answer_processes=args.answer_processes,
        )
    except SettingsError as exc:
        if args.bind_all and str(exc).startswith("--host 0.0.0.0"):
            exc = SettingsError(str(exc).replace("--host 0.0.0.0", "--bind_all", 1))
        return settings_failed(NAME, exc)
    try:
        check_plugin_names(settings)
    except SettingsError as exc:
        return settings_failed(NAME, exc)
    if not settings.rebuild:
        try:
            check_stores(settings)
        except FingerprintMismatchError as exc:
            return fail(NAME, exc, ExitCode.FINGERPRINT_MISMATCH)
    try:
        sock = bind_socket(settings.host, settings.port)
    except PortInUseError as exc:
        return fail(
            NAME, f"{exc.strerror}; choose another --port (0 picks one)", ExitCode.PORT_IN_USE
        )
    except OSError as exc:
        return fail(
            NAME, f"cannot listen on {settings.host}:{settings.port}: {exc}", ExitCode.USAGE
        )
    with sock:
        started = Service(settings).run(sock)
    return ExitCode.OK if started else ExitCode.ERROR


def check_stores(settings: ServeSettings) -> None:
    """Before the port is bound: every existing store was built from its logdir with these
    decoding rules (else FingerprintMismatchError, naming --rebuild). A store that keeps
    fewer points than --samples-per-plugin asks is no error: it is served as it is and
    rebuilt with the larger sample in the background (the runner does it)."""
    from boardd.store import fingerprint
    from boardd.store.errors import SamplingGrowsError

    for spec in settings.experiments:
        with contextlib.suppress(SamplingGrowsError):
            fingerprint.verify(spec.db, spec.logdir, settings.sampling)


def check_plugin_names(settings: ServeSettings) -> None:
    """SettingsError for a plugin of --samples-per-plugin that is neither TensorBoard's nor
    one whose series a store of these logdirs holds (a typo would be kept silently)."""
    from boardd.store import sampling

    named = [name for name in settings.sampling if not sampling.is_wildcard(name)]
    if not named or all(name in sampling.known_plugins() for name in named):
        return
    stored: set[str] = set()
    for spec in settings.experiments:
        stored |= sampling.store_plugins(spec.db)
    try:
        sampling.check_plugin_names(settings.sampling, stored)
    except ValueError as exc:
        raise SettingsError(f"--samples-per-plugin: {exc}") from None
