"""``boardd inspect PATH``: what a logdir or an event file holds (``tensorboard --inspect``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from boardd.cli.flags import add_crc_argument
from boardd.cli.messages import fail
from boardd.exitcodes import ExitCode, describe

if TYPE_CHECKING:
    from boardd.reader.inventory import InspectReport

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
    from boardd.reader.inventory import InspectError, format_table, inspect_path
    from boardd.reader.modes import CrcMode

    progress = ProgressLine(sys.stderr) if sys.stderr.isatty() and not args.json else None
    try:
        report = inspect_path(args.path, crc_mode=CrcMode(args.crc), progress=progress)
    except InspectError as exc:
        return fail(NAME, exc, ExitCode.BAD_LOGDIR)
    finally:
        if progress is not None:
            progress.clear()
    report = _named_as_served(report)
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=None, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        print(format_table(report))
    return ExitCode.OK


def _named_as_served(report: InspectReport) -> InspectReport:
    """The report with its run names and paths as the store and the API name them: a byte of a
    name that is not UTF-8 as ``%XX`` (boardd.store.names), not a raw byte on the terminal or
    a lone surrogate in the JSON (which strict parsers refuse)."""
    from boardd.reader.inventory import InspectReport, RunReport
    from boardd.reader.logdir import DiscoveryProblem
    from boardd.store.names import escape

    out = InspectReport()
    for name, run in report.runs.items():
        for f in run.files:
            f.path = escape(f.path)
        out.runs[escape(name)] = RunReport(run.files, run.tags)
    out.problems = [DiscoveryProblem(escape(str(p.path)), p.reason) for p in report.problems]
    return out
