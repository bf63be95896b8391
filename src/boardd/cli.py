"""The ``boardd`` command line: argument parsing and dispatch to subcommands."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from boardd import __version__
from boardd.config import (
    DEFAULT_HOST,
    DEFAULT_LOG_LEVEL,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_PORT,
    DEFAULT_RESCAN_INTERVAL,
    LOG_LEVELS,
)
from boardd.exitcodes import ExitCode
from boardd.ingest.progress import ProgressLine as _ProgressLine
from boardd.systemd.args import install_service_arguments


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used to document every flag)."""
    parser = argparse.ArgumentParser(
        prog="boardd",
        description=(
            "boardd keeps TensorBoard logdirs live, fast and safe: it tails event files "
            "incrementally into one SQLite store and serves TensorBoard's data API."
        ),
    )
    parser.add_argument("--version", action="version", version=f"boardd {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    inspect = sub.add_parser(
        "inspect",
        help="show what a logdir or an event file holds (like tensorboard --inspect)",
        description=(
            "Reads every event file under PATH and prints, per run, its files (bytes, records, "
            "unreadable byte ranges) and its tags (plugin, data class, number of values, "
            "first and last step). Corrupt regions are skipped and reported, never fatal."
        ),
    )
    inspect.add_argument("path", metavar="PATH", help="a logdir, or one event file")
    inspect.add_argument("--json", action="store_true", help="print one JSON object instead")
    inspect.add_argument(
        "--crc",
        choices=["always", "on-error"],
        default="always",
        help=(
            "check every record's payload CRC (always, the default), or only of records that "
            "fail to decode (on-error, faster; what TensorBoard's Rust data server does)"
        ),
    )

    ingest = sub.add_parser(
        "ingest",
        help="read everything now in a logdir into its store, then exit",
        description=(
            "One-shot ingest: reads every event file of LOGDIR from where the store last "
            "stopped, samples each series, and commits points together with the files' read "
            "offsets, so an interrupted ingest resumes without loss or duplicates."
        ),
    )
    ingest.add_argument("logdir", metavar="LOGDIR", help="the TensorBoard logdir to read")
    _store_arguments(ingest)
    ingest.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    ingest.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        metavar="N",
        help=(
            "processes that decode a large logdir, this one included (1: no other process); "
            "default one per CPU, at most 4"
        ),
    )
    # Hidden, for tests only: commit (and read) in groups of about this many bytes, so that an
    # ingest killed at a random moment is tested between many commits, mid-file too.
    ingest.add_argument("--commit-bytes", type=int, default=None, help=argparse.SUPPRESS)
    # Hidden, for tests only: decode in parallel from this many bytes to read (small logdirs).
    ingest.add_argument("--parallel-min-bytes", type=int, default=None, help=argparse.SUPPRESS)

    serve = sub.add_parser(
        "serve",
        help="the daemon: watch logdirs, keep their stores current, serve the HTTP API",
        description=(
            "Catches up with whatever is new in each LOGDIR, then follows it live (inotify, "
            "with a periodic rescan as the safety net) and serves TensorBoard's data API over "
            "HTTP. Each LOGDIR is an experiment: NAME=PATH names it, a plain PATH is named "
            "after its directory. If another boardd writes a store, this one serves it "
            "read-only and takes over when the other stops. SIGTERM/SIGINT stop cleanly; "
            "SIGHUP rescans now."
        ),
    )
    serve.add_argument("logdirs", nargs="+", metavar="LOGDIR", help="PATH or NAME=PATH")
    serve.add_argument(
        "--db", metavar="PATH", help="the store file (only with one LOGDIR; default as ingest)"
    )
    serve.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}: this machine only)",
    )
    serve.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one, see --port-file)",
    )
    serve.add_argument(
        "--port-file", metavar="FILE", help="write the port actually bound to FILE once ready"
    )
    serve.add_argument(
        "--token-file",
        metavar="FILE",
        help=(
            "require 'Authorization: Bearer <token>' on every request, the token being FILE's "
            "content (at least 16 characters); needed to listen on a non-loopback --host"
        ),
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without a token (anyone who can reach it reads all)",
    )
    serve.add_argument(
        "--poll",
        action="store_true",
        help="poll instead of using inotify (for NFS, FUSE and containers where inotify fails)",
    )
    serve.add_argument(
        "--poll-interval",
        type=float,
        default=DEFAULT_POLL_INTERVAL,
        metavar="SECONDS",
        help=f"how often to poll when polling (default {DEFAULT_POLL_INTERVAL:g})",
    )
    serve.add_argument(
        "--rescan-interval",
        type=float,
        default=DEFAULT_RESCAN_INTERVAL,
        metavar="SECONDS",
        help=f"full rescan of every logdir, the safety net (default {DEFAULT_RESCAN_INTERVAL:g})",
    )
    serve.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=DEFAULT_LOG_LEVEL,
        help=f"least severe messages logged to stderr (default {DEFAULT_LOG_LEVEL})",
    )
    serve.add_argument("--samples-per-plugin", metavar="SPEC", default="", help="as for ingest")
    serve.add_argument(
        "--crc",
        choices=["always", "on-error"],
        default="always",
        help="as for ingest",
    )

    install = sub.add_parser(
        "install-service",
        help="write a systemd unit that runs `boardd serve` on a logdir",
        description=(
            "Writes boardd@<escaped LOGDIR>.service (system-wide, or for your user with --user) "
            "running this boardd, plus an environment file with its port, and prints the "
            "systemctl commands that start it. It never runs systemctl."
        ),
    )
    install_service_arguments(install)

    export = sub.add_parser(
        "export",
        help="write a consistent copy of a store, even while a writer runs",
        description=(
            "Copies a store with SQLite's online backup, a few pages at a time, so a running "
            "writer is never blocked for long. The copy carries no writer lease."
        ),
    )
    export.add_argument("--db", required=True, metavar="PATH", help="the store to copy")
    export.add_argument("--out", required=True, metavar="FILE", help="where to write the copy")
    export.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _store_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="PATH",
        help=(
            "the store file (default: one file per logdir under $STATE_DIRECTORY, or "
            "$XDG_STATE_HOME/boardd, i.e. ~/.local/state/boardd)"
        ),
    )
    parser.add_argument(
        "--samples-per-plugin",
        metavar="SPEC",
        default="",
        help=(
            "points kept per series, in TensorBoard's syntax: e.g. 'scalars=1000,images=all,"
            "audio=0,*=50' (all keeps everything, 0 nothing). Defaults: scalars 10000, "
            "histograms 500, pr_curves 100, text 100, other tensors 100, images 10, audio 10, "
            "other blob sequences 10"
        ),
    )
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help=(
            "build a fresh store beside the old one and swap it in when complete (needed when "
            "the sampling settings or the logdir changed)"
        ),
    )
    parser.add_argument(
        "--crc",
        choices=["always", "on-error"],
        default="always",
        help="check every payload CRC (default), or only for records that fail to decode",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line and returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    if args.command == "inspect":
        return _inspect(args)
    if args.command == "ingest":
        return _ingest(args)
    if args.command == "export":
        return _export(args)
    if args.command == "serve":
        return _serve(args)
    if args.command == "install-service":
        from boardd.systemd import install

        return install.run(args)
    parser.error(f"unknown command {args.command!r}")
    return ExitCode.USAGE  # pragma: no cover - parser.error exits


def _inspect(args: argparse.Namespace) -> int:
    from boardd.inspect import InspectError, format_table, inspect_path
    from boardd.reader.modes import CrcMode

    progress = _ProgressLine(sys.stderr) if sys.stderr.isatty() and not args.json else None
    try:
        report = inspect_path(args.path, crc_mode=CrcMode(args.crc), progress=progress)
    except InspectError as exc:
        print(f"boardd inspect: {exc}", file=sys.stderr)
        return ExitCode.BAD_LOGDIR
    finally:
        if progress is not None:
            progress.clear()
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=None, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        print(format_table(report))
    return ExitCode.OK


def _ingest(args: argparse.Namespace) -> int:
    from boardd.ingest import ingest_logdir
    from boardd.reader.modes import CrcMode
    from boardd.store.errors import FingerprintMismatchError, LeaseHeldError, StoreError
    from boardd.store.sampling import parse_samples_per_plugin

    logdir = Path(args.logdir)
    if not logdir.is_dir():
        print(f"boardd ingest: {logdir}: not a directory", file=sys.stderr)
        return ExitCode.BAD_LOGDIR
    if not os.access(logdir, os.R_OK | os.X_OK):
        print(f"boardd ingest: {logdir}: directory is not readable", file=sys.stderr)
        return ExitCode.BAD_LOGDIR
    try:
        sampling = parse_samples_per_plugin(args.samples_per_plugin)
    except ValueError as exc:
        print(f"boardd ingest: --samples-per-plugin: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    progress = _ProgressLine(sys.stderr) if sys.stderr.isatty() else None
    try:
        result = ingest_logdir(
            logdir,
            args.db or None,
            sampling=sampling,
            rebuild=args.rebuild,
            crc_mode=CrcMode(args.crc),
            workers=args.workers,
            commit_bytes=args.commit_bytes,
            parallel_min_bytes=args.parallel_min_bytes,
            progress=progress,
        )
    except KeyboardInterrupt:
        if progress is not None:
            progress.clear()
        print("boardd ingest: interrupted; what was committed is kept", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except LeaseHeldError as exc:
        print(f"boardd ingest: {exc}", file=sys.stderr)
        return ExitCode.STORE_LOCKED
    except FingerprintMismatchError as exc:
        print(f"boardd ingest: {exc}", file=sys.stderr)
        return ExitCode.FINGERPRINT_MISMATCH
    except StoreError as exc:
        print(f"boardd ingest: {exc}", file=sys.stderr)
        return ExitCode.BAD_STORE
    finally:
        if progress is not None:
            progress.clear()
    counts = result.summary
    seconds = result.seconds
    report = {
        "db": str(result.db),
        "runs": counts.runs,
        "series": counts.series,
        "points": {
            "scalar": counts.scalar_points,
            "tensor": counts.tensor_points,
            "blob_sequence": counts.blob_sequence_points,
        },
        "blobs": counts.blobs,
        "bytes_read": result.bytes_read,
        "data_loss": counts.data_loss,
        "seconds": round(seconds, 3),
    }
    if args.json:
        print(json.dumps(report))
    else:
        rate = result.bytes_read / seconds / 1e6 if seconds > 0 else 0.0
        print(
            f"ingested {result.bytes_read / 1e6:.1f} MB in {seconds:.2f} s ({rate:.1f} MB/s) "
            f"into {report['db']}\n"
            f"  {counts.runs} runs, {counts.series} series; points kept: "
            f"{counts.scalar_points} scalar, {counts.tensor_points} tensor, "
            f"{counts.blob_sequence_points} blob-sequence ({counts.blobs} blobs); "
            f"{counts.data_loss} data-loss records"
        )
    return ExitCode.OK


def setup_logging(level: str) -> None:
    """One line per event on stderr; no timestamps when journald adds its own."""
    fmt = "%(levelname)s %(name)s: %(message)s"
    if not os.environ.get("JOURNAL_STREAM"):
        fmt = "%(asctime)s " + fmt
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(fmt))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def _serve(args: argparse.Namespace) -> int:
    from boardd.api.auth import is_loopback, read_token
    from boardd.config import ServeSettings, SettingsError, check_logdir, parse_experiments
    from boardd.daemon.service import PortInUseError, Service, bind_socket
    from boardd.reader.modes import CrcMode
    from boardd.store.sampling import parse_samples_per_plugin

    setup_logging(args.log_level)
    try:
        experiments = parse_experiments(args.logdirs, args.db)
        sampling = parse_samples_per_plugin(args.samples_per_plugin)
        if args.rescan_interval <= 0 or args.poll_interval <= 0:
            raise SettingsError("--rescan-interval and --poll-interval must be positive")
        if not 0 <= args.port <= 65535:
            raise SettingsError(f"--port {args.port}: give 0 to 65535")
        token = read_token(args.token_file) if args.token_file else None
        if token is None and not args.insecure and not is_loopback(args.host):
            raise SettingsError(
                f"--host {args.host} exposes your metrics beyond this machine: give "
                "--token-file FILE (clients then send 'Authorization: Bearer <token>'), or "
                "--insecure if you really mean it"
            )
    except (SettingsError, ValueError, OSError) as exc:
        print(f"boardd serve: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    for spec in experiments:
        problem = check_logdir(spec.logdir)
        if problem is not None:
            print(f"boardd serve: {problem}", file=sys.stderr)
            return ExitCode.BAD_LOGDIR
    settings = ServeSettings(
        experiments=experiments,
        host=args.host,
        port=args.port,
        port_file=Path(args.port_file).resolve() if args.port_file else None,
        poll=args.poll,
        rescan_interval=args.rescan_interval,
        poll_interval=args.poll_interval,
        log_level=args.log_level,
        sampling=sampling,
        crc_mode=CrcMode(args.crc),
        token=token,
    )
    try:
        sock = bind_socket(settings.host, settings.port)
    except PortInUseError as exc:
        print(f"boardd serve: {exc.strerror}; choose another --port (0 picks one)", file=sys.stderr)
        return ExitCode.PORT_IN_USE
    except OSError as exc:
        print(
            f"boardd serve: cannot listen on {settings.host}:{settings.port}: {exc}",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    with sock:
        started = Service(settings).run(sock)
    return ExitCode.OK if started else ExitCode.ERROR


def _export(args: argparse.Namespace) -> int:
    from boardd.store.errors import StoreError
    from boardd.store.export import export_store

    try:
        result = export_store(Path(args.db), Path(args.out), overwrite=args.force)
    except StoreError as exc:
        print(f"boardd export: {exc}", file=sys.stderr)
        return ExitCode.BAD_STORE
    print(f"exported {args.db} to {result.path} ({result.bytes} bytes)")
    return ExitCode.OK
