"""The ``boardd`` command line: argument parsing and dispatch to subcommands."""

from __future__ import annotations

import argparse
import enum
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from boardd import __version__


class ExitCode(enum.IntEnum):
    """Distinct exit codes, so scripts and systemd can tell failures apart."""

    OK = 0
    ERROR = 1
    USAGE = 2
    BAD_LOGDIR = 3
    STORE_LOCKED = 4
    FINGERPRINT_MISMATCH = 5
    BAD_STORE = 6
    INTERRUPTED = 130


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
    parser.error(f"unknown command {args.command!r}")
    return ExitCode.USAGE  # pragma: no cover - parser.error exits


def _inspect(args: argparse.Namespace) -> int:
    from boardd.inspect import InspectError, format_table, inspect_path
    from boardd.reader.tfrecord import CrcMode

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
    from boardd.reader.tfrecord import CrcMode
    from boardd.store.errors import FingerprintMismatchError, LeaseHeldError, StoreError
    from boardd.store.ingest import Ingestor
    from boardd.store.location import default_store_path
    from boardd.store.queries import summary
    from boardd.store.sampling import parse_samples_per_plugin
    from boardd.store.session import WriteSession

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
    db = Path(args.db) if args.db else default_store_path(logdir)
    started = time.monotonic()
    try:
        session = WriteSession(db, logdir, sampling=sampling, rebuild=args.rebuild)
    except LeaseHeldError as exc:
        print(f"boardd ingest: {exc}", file=sys.stderr)
        return ExitCode.STORE_LOCKED
    except FingerprintMismatchError as exc:
        print(f"boardd ingest: {exc}", file=sys.stderr)
        return ExitCode.FINGERPRINT_MISMATCH
    except StoreError as exc:
        print(f"boardd ingest: {exc}", file=sys.stderr)
        return ExitCode.BAD_STORE
    progress = _ProgressLine(sys.stderr) if sys.stderr.isatty() else None
    try:
        with session:
            ingestor = Ingestor(session.writer, logdir, crc_mode=CrcMode(args.crc))
            result = ingestor.run_pass(progress=progress)
            ingestor.close()
            counts = summary(session.connection)
    except KeyboardInterrupt:
        if progress is not None:
            progress.clear()
        print("boardd ingest: interrupted; what was committed is kept", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except StoreError as exc:
        print(f"boardd ingest: {exc}", file=sys.stderr)
        return ExitCode.BAD_STORE
    finally:
        if progress is not None:
            progress.clear()
    seconds = time.monotonic() - started
    report = {
        "db": str(session.path),
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


class _ProgressLine:
    """A one-line progress display on a terminal: bytes done of total, MB/s, ETA."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._start = time.monotonic()
        self._last = 0.0
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last < 0.2:
            return
        self._last = now
        elapsed = max(now - self._start, 1e-9)
        rate = done / elapsed
        eta = (total - done) / rate if rate > 0 else 0.0
        pct = 100.0 * done / total if total else 100.0
        self._stream.write(
            f"\r{done / 1e6:8.1f} / {total / 1e6:.1f} MB  {pct:5.1f}%  "
            f"{rate / 1e6:6.1f} MB/s  ETA {eta:5.1f} s "
        )
        self._stream.flush()
        self._shown = True

    def clear(self) -> None:
        """Erases the progress line."""
        if self._shown:
            self._stream.write("\r\033[K")
            self._stream.flush()
