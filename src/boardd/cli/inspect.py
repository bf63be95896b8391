"""``boardd inspect PATH``: what a logdir or an event file holds (``tensorboard --inspect``)."""

from __future__ import annotations

import argparse
import json
import sys

from boardd.cli.common import add_crc_argument, fail
from boardd.exitcodes import ExitCode, describe

NAME = "inspect"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declares the command and its flags."""
    parser = sub.add_parser(
        NAME,
        help="show what a logdir or an event file holds (like tensorboard --inspect)",
        description=(
            "Reads every event file under PATH and prints, per run, its files (bytes, records, "
            "unreadable byte ranges) and its tags (plugin, data class, number of values, "
            "first and last step). Corrupt regions are skipped and reported, never fatal. "
            "Nothing is written."
        ),
        epilog=describe(
            ExitCode.OK,
            ExitCode.USAGE,
            ExitCode.BAD_LOGDIR,
            meanings={
                ExitCode.OK: "read (unreadable regions are in the report)",
                ExitCode.BAD_LOGDIR: "PATH missing, or its only event file unreadable",
            },
        ),
    )
    parser.add_argument("path", metavar="PATH", help="a logdir, or one event file")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    add_crc_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Runs ``boardd inspect``; returns the exit code."""
    from boardd.ingest.progress import ProgressLine
    from boardd.reader.inspect import InspectError, format_table, inspect_path
    from boardd.reader.modes import CrcMode

    progress = ProgressLine(sys.stderr) if sys.stderr.isatty() and not args.json else None
    try:
        report = inspect_path(args.path, crc_mode=CrcMode(args.crc), progress=progress)
    except InspectError as exc:
        return fail(NAME, exc, ExitCode.BAD_LOGDIR)
    finally:
        if progress is not None:
            progress.clear()
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=None, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        print(format_table(report))
    return ExitCode.OK
