"""``boardd export LOGDIR``: a consistent copy of a logdir's store, even while its writer runs;
or, with ``--scalars``, its scalar series as CSV or JSON lines, streamed from the store."""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from boardd.cli.messages import fail, settings_failed
from boardd.config import SettingsError, check_logdir, parse_experiments
from boardd.exitcodes import ExitCode, describe

if TYPE_CHECKING:
    import apsw

    from boardd.data.series import SeriesInfo

NAME = "export"
#: Seconds between two progress reports of a long ``--scalars`` export.
_PROGRESS_SECONDS = 2.0

#: The first 16 bytes of every SQLite database file (https://www.sqlite.org/fileformat.html).
_SQLITE_HEADER = b"SQLite format 3\x00"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declares the command and its flags."""
    parser = sub.add_parser(
        NAME,
        help="write a consistent copy of a logdir's store, or its scalars as CSV / JSON lines",
        description=(
            "Copies LOGDIR's store (the one boardd serve and boardd ingest keep for it), or the "
            "store file given with --db, with SQLite's online backup, a few pages at a time, so "
            "a running writer is never blocked for long. The copy carries no writer lease and "
            "a store id of its own. With --scalars instead of --out, writes the store's scalar "
            "series (all, or those of --run and --tag) as CSV (the columns run, tag, step, "
            "wall_time, value, as GET /api/v1/scalars?format=csv gives them) or JSON lines "
            "(an object per point), read from the store a block of points at a time: a series "
            "of any length is never held in memory. Each series is one snapshot of the store; "
            "progress goes to stderr."
        ),
        epilog=(
            "Examples: boardd export runs/ --out runs.sqlite; boardd export --db "
            "~/.local/state/boardd/runs-0123456789ab.sqlite --out runs.sqlite; boardd export "
            "runs/ --scalars loss.csv --run train --tag loss; boardd export runs/ --scalars - "
            "--format jsonl | gzip > scalars.jsonl.gz. "
            + describe(
                ExitCode.OK,
                ExitCode.ERROR,
                ExitCode.USAGE,
                ExitCode.BAD_LOGDIR,
                ExitCode.BAD_STORE,
                meanings={
                    ExitCode.OK: "copied (or the scalars written)",
                    ExitCode.ERROR: "the scalars could not be written (FILE or stdout)",
                    ExitCode.BAD_LOGDIR: "LOGDIR does not exist, and it has no store",
                    ExitCode.BAD_STORE: (
                        "no store yet, the store cannot be read, or FILE exists (without "
                        "--force) or is not a regular file"
                    ),
                },
            )
        ),
    )
    parser.add_argument(
        "logdir",
        metavar="LOGDIR",
        nargs="?",
        help="the logdir whose store to copy (as given to boardd serve or boardd ingest)",
    )
    parser.add_argument(
        "--db",
        metavar="PATH",
        help="the store file to copy, instead of LOGDIR's (e.g. one made with --db)",
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", metavar="FILE", help="where to write the copy")
    what.add_argument(
        "--scalars",
        metavar="FILE",
        help="write the scalar series to FILE instead (- for stdout), not a copy of the store",
    )
    parser.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    parser.add_argument(
        "--format",
        choices=("csv", "jsonl"),
        help="with --scalars: csv, or jsonl (an object per line: run, tag, step, wall_time, "
        'value; NaN and ±Inf as "NaN", "Infinity", "-Infinity"); default: from FILE\'s '
        "suffix (.jsonl, .ndjson: jsonl), else csv",
    )
    parser.add_argument(
        "--run",
        action="append",
        dest="runs",
        metavar="RUN",
        help="with --scalars: only this run (repeat for more; default: all)",
    )
    parser.add_argument(
        "--tag",
        action="append",
        dest="tags",
        metavar="TAG",
        help="with --scalars: only this tag (repeat for more; default: all)",
    )
    parser.add_argument(
        "--plugin",
        default="scalars",
        help="with --scalars: the plugin whose scalar series to write (default: scalars)",
    )
    parser.add_argument("--step-min", type=int, metavar="N", help="with --scalars: from step N")
    parser.add_argument("--step-max", type=int, metavar="N", help="with --scalars: to step N")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Runs ``boardd export``; returns the exit code."""
    from boardd.store.errors import StoreError
    from boardd.store.export import export_store

    if (args.logdir is None) == (args.db is None):
        return fail(
            NAME,
            "give the LOGDIR whose store to copy (boardd export LOGDIR --out FILE), or the "
            "store file with --db PATH, not both"
            if args.db is not None
            else "give the LOGDIR whose store to copy: boardd export LOGDIR --out FILE "
            "(or the store file: --db PATH)",
            ExitCode.USAGE,
        )
    if args.db is not None:
        db = Path(args.db)
        problem = _not_a_store(db)
        if problem is not None:
            return fail(NAME, f"--db {db}: {problem}", ExitCode.BAD_STORE)
    else:
        try:
            (experiment,) = parse_experiments([args.logdir], None)
        except SettingsError as exc:
            return settings_failed(NAME, exc)
        db = experiment.db
        if not db.exists():
            try:
                check_logdir(experiment.logdir)
            except SettingsError as exc:
                return settings_failed(NAME, exc)
            return fail(
                NAME,
                f"{args.logdir} has no store yet (looked for {db}): boardd ingest "
                f"{args.logdir} makes it, as boardd serve does",
                ExitCode.BAD_STORE,
            )
    if args.scalars is not None:
        return _export_scalars(args, db)
    flags = {"format": "format", "runs": "run", "tags": "tag", "step_min": "step-min"}
    unused = [flags[f] for f in flags if getattr(args, f) is not None]
    unused += ["step-max"] if args.step_max is not None else []
    unused += ["plugin"] if args.plugin != "scalars" else []
    if unused:
        flags_given = ", ".join("--" + f for f in unused)
        return fail(NAME, f"{flags_given}: only with --scalars FILE", ExitCode.USAGE)
    try:
        result = export_store(db, Path(args.out), overwrite=args.force)
    except StoreError as exc:
        return fail(NAME, exc, ExitCode.BAD_STORE)
    print(f"exported {db} to {result.path} ({result.bytes} bytes)")
    return ExitCode.OK


def _not_a_store(path: Path) -> str | None:
    """Why ``path``, given as --db, cannot be a store file, or None (the store's own checks
    follow when it is opened)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "no such file (boardd ingest and boardd serve make a logdir's store)"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return (
            "is a directory; --db takes a store file. To copy a logdir's store, give the "
            f"logdir itself: boardd export {path} --out FILE"
        )
    if not stat.S_ISREG(mode):
        return "is not a regular file; --db takes a store file"
    try:
        with path.open("rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if header != _SQLITE_HEADER:
        return (
            "is not a boardd store (not an SQLite database): give the store file that "
            "boardd ingest reports, or the logdir: boardd export LOGDIR --out FILE"
        )
    return None


def _export_scalars(args: argparse.Namespace, db: Path) -> int:
    """``--scalars FILE``: the selected scalar series written a block of points at a time."""
    from boardd.data import experiments
    from boardd.data import series as data_series
    from boardd.data.connections import open_store
    from boardd.data.errors import BadRequest, DataError
    from boardd.data.kinds import SCALARS

    target = args.scalars
    fmt = args.format or ("jsonl" if target.endswith((".jsonl", ".ndjson")) else "csv")
    if args.step_min is not None and args.step_max is not None and args.step_min > args.step_max:
        return fail(NAME, "--step-min is greater than --step-max", ExitCode.USAGE)
    try:
        connection = open_store(db)
    except DataError as exc:
        return fail(NAME, f"{db}: {exc.message}", ExitCode.BAD_STORE)
    try:
        found = experiments.experiment(connection)
        if found is None:
            return fail(NAME, f"{db} has no data yet: nothing to write", ExitCode.BAD_STORE)
        selection = data_series.Selection(
            args.plugin, tuple(args.runs or ()), tuple(args.tags or ())
        )
        try:
            series = data_series.list_series(connection, found.id, SCALARS, selection)
        except BadRequest as exc:
            return fail(NAME, f"--plugin: {exc.message}", ExitCode.USAGE)
        if target == "-":
            return _write_scalars(connection, series, args, fmt, sys.stdout, "stdout")
        path = Path(target)
        if path.exists() and not args.force:
            return fail(NAME, f"{path} exists: give --force to overwrite it", ExitCode.BAD_STORE)
        partial = path.with_name(path.name + ".partial")
        try:
            with partial.open("w", encoding="utf-8", newline="") as out:
                code = _write_scalars(connection, series, args, fmt, out, str(path))
            if code == ExitCode.OK:
                os.replace(partial, path)
        except OSError as exc:
            return fail(NAME, f"cannot write {path}: {exc.strerror or exc}", ExitCode.ERROR)
        finally:
            partial.unlink(missing_ok=True)
        return code
    finally:
        connection.close()


def _write_scalars(
    connection: apsw.Connection,
    series: list[SeriesInfo],
    args: argparse.Namespace,
    fmt: str,
    out: TextIO,
    where: str,
) -> int:
    from boardd.data import series as data_series
    from boardd.data.kinds import SCALARS
    from boardd.store.queries import point_count

    total = sum(
        point_count(
            connection, SCALARS.data_class, s.id, step_min=args.step_min, step_max=args.step_max
        )
        for s in series
    )
    blocks = (
        block
        for s in series
        for block in data_series.scalar_chunks(
            connection, s, step_min=args.step_min, step_max=args.step_max
        )
    )
    done = 0
    started = last = time.monotonic()
    try:
        for text, points in _encoded(blocks, fmt):
            out.write(text)
            done += points
            now = time.monotonic()
            if now - last >= _PROGRESS_SECONDS:
                last = now
                print(f"export: {done} of {total} points written", file=sys.stderr, flush=True)
        out.flush()
    except BrokenPipeError:
        # The reader went away (… | head): stdout is let go quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return fail(NAME, f"{where} was closed after {done} points", ExitCode.ERROR)
    seconds = time.monotonic() - started
    print(
        f"exported {done} points of {len(series)} series to {where} ({fmt}, {seconds:.1f} s)",
        file=sys.stderr,
    )
    return ExitCode.OK


def _encoded(blocks: Iterator[object], fmt: str) -> Iterator[tuple[str, int]]:
    """The text of each block of points, and how many points it holds (CSV: a header first)."""
    import csv
    import io

    from boardd.data.series import ScalarColumns
    from boardd.data.values import finite_or_text, float_text

    if fmt == "csv":
        yield "run,tag,step,wall_time,value\n", 0
    for block in blocks:
        assert isinstance(block, ScalarColumns)
        rows = zip(
            block.steps.tolist(), block.wall_times.tolist(), block.values.tolist(), strict=True
        )
        if fmt == "csv":
            text = io.StringIO()
            writer = csv.writer(text, lineterminator="\n")
            writer.writerows(
                [block.run, block.tag, step, repr(wall), float_text(value)]
                for step, wall, value in rows
            )
            yield text.getvalue(), len(block.steps)
        else:
            head = '{"run": ' + json.dumps(block.run) + ', "tag": ' + json.dumps(block.tag)
            lines = (
                f'{head}, "step": {step}, "wall_time": {wall!r}, '
                f'"value": {json.dumps(finite_or_text(value))}}}\n'
                for step, wall, value in rows
            )
            yield "".join(lines), len(block.steps)
