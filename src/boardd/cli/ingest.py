"""``boardd ingest LOGDIR``: read everything now in a logdir into its store, then exit."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from boardd.cli.flags import add_store_arguments, positive_int
from boardd.cli.messages import fail, settings_failed
from boardd.config import SettingsError, check_logdir, parse_crc, parse_sampling
from boardd.exitcodes import ExitCode, describe

NAME = "ingest"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declares the command and its flags."""
    parser = sub.add_parser(
        NAME,
        help="read everything now in a logdir into its store, then exit",
        description=(
            "One-shot ingest: reads every event file of LOGDIR from where the store last "
            "stopped, samples each series, and commits points together with the files' read "
            "offsets, so an interrupted ingest resumes without loss or duplicates."
        ),
        epilog=describe(
            ExitCode.OK,
            ExitCode.USAGE,
            ExitCode.BAD_LOGDIR,
            ExitCode.STORE_LOCKED,
            ExitCode.FINGERPRINT_MISMATCH,
            ExitCode.BAD_STORE,
            ExitCode.INTERRUPTED,
            meanings={
                ExitCode.OK: "ingested (unreadable regions are recorded as data loss)",
                ExitCode.STORE_LOCKED: "a boardd serve writes this store (it keeps it current)",
                ExitCode.BAD_STORE: "a store that cannot be used: damaged (see --rebuild), "
                "read-only, or not a boardd store",
                ExitCode.INTERRUPTED: "interrupted (Ctrl-C; what was committed is kept)",
            },
        ),
    )
    parser.add_argument("logdir", metavar="LOGDIR", help="the TensorBoard logdir to read")
    add_store_arguments(
        parser,
        rebuild_help=(
            "build a fresh store beside the old one and swap it in when complete (needed when "
            "the sampling settings or the logdir changed)"
        ),
    )
    parser.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="N",
        help=(
            "processes that decode a large logdir, this one included (1: no other process); "
            "default one per CPU, at most 4"
        ),
    )
    # Hidden, for tests only: commit (and read) in groups of about this many bytes, so that an
    # ingest killed at a random moment is tested between many commits, mid-file too.
    parser.add_argument("--commit-bytes", type=int, default=None, help=argparse.SUPPRESS)
    # Hidden, for tests only: decode in parallel from this many bytes to read (small logdirs).
    parser.add_argument("--parallel-min-bytes", type=int, default=None, help=argparse.SUPPRESS)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Runs ``boardd ingest``; returns the exit code."""
    from boardd.ingest.oneshot import ingest_logdir
    from boardd.store.errors import (
        FingerprintMismatchError,
        LeaseHeldError,
        SamplingGrowsError,
        StoreDamagedError,
        StoreError,
    )
    from boardd.store.fingerprint import sampling_text

    logdir = Path(args.logdir)
    try:
        check_logdir(logdir)
        sampling = parse_sampling(args.samples_per_plugin)
        crc_mode = parse_crc(args.crc)
        _check_plugin_names(sampling, args.db, logdir)
    except SettingsError as exc:
        return settings_failed(NAME, exc)
    progress = None
    if sys.stderr.isatty():
        from boardd.ingest.progress import ProgressLine

        progress = ProgressLine(sys.stderr)
    try:
        result = ingest_logdir(
            logdir,
            args.db or None,
            sampling=sampling,
            rebuild=args.rebuild,
            crc_mode=crc_mode,
            workers=args.workers,
            commit_bytes=args.commit_bytes,
            parallel_min_bytes=args.parallel_min_bytes,
            progress=progress,
        )
    except KeyboardInterrupt:
        if progress is not None:
            progress.clear()
        return fail(NAME, "interrupted; what was committed is kept", ExitCode.INTERRUPTED)
    except LeaseHeldError as exc:
        return fail(NAME, exc, ExitCode.STORE_LOCKED)
    except SamplingGrowsError as exc:
        # One-shot: no store to serve meanwhile, so the larger sample is asked for explicitly.
        flag = sampling_text(exc.larger)
        command = (
            f"boardd ingest {shlex.quote(str(logdir))} --rebuild"
            + ("" if flag == "defaults" else f" --samples-per-plugin {shlex.quote(flag)}")
            + (f" --db {shlex.quote(args.db)}" if args.db else "")
        )
        return fail(
            NAME,
            f"{str(exc).split(': rebuild it', 1)[0]}: rebuild it with `{command}`",
            ExitCode.FINGERPRINT_MISMATCH,
        )
    except FingerprintMismatchError as exc:
        return fail(NAME, exc, ExitCode.FINGERPRINT_MISMATCH)
    except StoreDamagedError as exc:
        return fail(
            NAME,
            f"{exc}: `boardd ingest --rebuild` sets it aside and rebuilds it from the logdir",
            ExitCode.BAD_STORE,
        )
    except StoreError as exc:
        return fail(NAME, exc, ExitCode.BAD_STORE)
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


def _check_plugin_names(sampling: dict[str, int | None], db: str | None, logdir: Path) -> None:
    """SettingsError for a plugin of --samples-per-plugin that is neither TensorBoard's nor
    one whose series the store holds."""
    from boardd.store import sampling as store_sampling
    from boardd.store.location import default_store_path

    named = [name for name in sampling if not store_sampling.is_wildcard(name)]
    if all(name in store_sampling.known_plugins() for name in named):
        return
    stored = store_sampling.store_plugins(Path(db) if db else default_store_path(logdir))
    try:
        store_sampling.check_plugin_names(sampling, stored)
    except ValueError as exc:
        raise SettingsError(f"--samples-per-plugin: {exc}") from None
