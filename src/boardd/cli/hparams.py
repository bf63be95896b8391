"""``boardd hparams LOGDIR``: the logdir's hyperparameter table (a row per session) in the
terminal or as CSV, read straight from its store (no server needed)."""

from __future__ import annotations

import argparse
import csv
import math
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from boardd.cli.messages import fail, settings_failed
from boardd.config import SettingsError, check_logdir
from boardd.exitcodes import ExitCode, describe

NAME = "hparams"
#: Flags whose value may start with '-' (``--sort -accuracy``: descending), which argparse
#: would take for a flag of its own (boardd.cli.main joins such a value to its flag).
DASH_VALUE_FLAGS = ("--sort", "--filter")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declares the command and its flags."""
    parser = sub.add_parser(
        NAME,
        help="print a logdir's hyperparameter table: a row per session",
        description=(
            "Prints the sessions of LOGDIR's hparams experiment (TensorBoard's hparams "
            "summaries, tensorboardX / PyTorch add_hparams): session group, session, each "
            "hparam, each metric (its tag, or group/tag), status, hparams_run. A session is "
            "named by the run the user named: add_hparams writes it in a timestamped sub-run "
            "of the writer's run (RUN/1796660406.1974096), which hparams_run keeps (the table "
            "shows that column only when some session has such a sub-run; --csv always). "
            "Reads LOGDIR's store; when "
            "no daemon keeps that store current, first brings it up to date (as boardd ingest, "
            "progress on stderr)."
        ),
        epilog=(
            "Examples: boardd hparams runs/ --sort=-validation/accuracy,learning_rate "
            "--filter 'optimizer=^adam$' --filter 'learning_rate=0.001..0.1'; "
            "boardd hparams runs/ --csv > trials.csv. "
            + describe(
                ExitCode.OK,
                ExitCode.ERROR,
                ExitCode.USAGE,
                ExitCode.BAD_LOGDIR,
                ExitCode.BAD_STORE,
                ExitCode.INTERRUPTED,
                meanings={
                    ExitCode.OK: "printed",
                    ExitCode.ERROR: "no hparams in this logdir",
                },
            )
        ),
    )
    parser.add_argument("logdir", metavar="LOGDIR", help="the TensorBoard logdir")
    parser.add_argument(
        "--db",
        metavar="PATH",
        help="the store file (default: the logdir's own, as boardd serve and ingest use)",
    )
    parser.add_argument(
        "--sort",
        metavar="COL[,COL]",
        default=None,
        help=(
            "sort by these columns, the first the most significant; '-' before a name sorts "
            "descending (--sort -accuracy); missing values last (groups of repeated trials "
            "sort by their average)"
        ),
    )
    parser.add_argument(
        "--filter",
        metavar="COL=REGEX|COL=MIN..MAX|COL==V,...",
        action="append",
        default=[],
        help=(
            "keep sessions whose COL matches REGEX (partial match; string hparams), lies in "
            "[MIN, MAX] (numbers; MIN or MAX may be left out), or is one of the values V "
            "(numbers, true/false, strings: e.g. batch_norm==true, optimizer==adam,sgd); one "
            "--filter per column, repeat for several columns"
        ),
    )
    parser.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Runs ``boardd hparams``; returns the exit code."""
    from boardd.client.hparams import HPARAMS_RUN, SESSION, Filter, parse_filter, parse_sort

    logdir = Path(args.logdir)
    try:
        check_logdir(logdir)
    except SettingsError as exc:
        return settings_failed(NAME, exc)
    filters: dict[str, Filter] = {}
    texts: dict[str, str] = {}
    try:
        for text in args.filter:
            column, spec = parse_filter(text)
            if column in filters:
                raise ValueError(
                    f"{column} has two --filter: give one per column (a regular expression "
                    "may say 'adam|sgd', and COL==adam,sgd lists values)"
                )
            filters[column], texts[column] = spec, text
        try:
            sort = parse_sort(args.sort.split(",") if args.sort else None)
        except ValueError as exc:
            raise ValueError(f"--sort {shlex.quote(args.sort)}: {exc}") from exc
    except ValueError as exc:
        return fail(NAME, exc, ExitCode.USAGE)
    db = _catch_up(logdir, args.db)
    if isinstance(db, int):
        return db
    try:
        header, rows = _table(db, args.sort, sort, filters, texts)
    except _Failed as exc:
        return fail(NAME, exc.message, exc.code)
    out = sys.stdout
    if args.csv:
        _write_csv(out, header, rows)
    else:
        # The table shows hparams_run only when some session is not its own run's.
        if all(row[HPARAMS_RUN] == row[SESSION] for row in rows):
            header = [c for c in header if c != HPARAMS_RUN]
        _write_table(out, header, rows)
    return ExitCode.OK


class _Failed(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _catch_up(logdir: Path, db: str | None) -> Path | int:
    """Brings the store up to date unless a daemon holds its writer lease (it keeps the store
    current itself); the store's path, or an exit code."""
    from boardd.ingest.oneshot import ingest_logdir
    from boardd.store.errors import FingerprintMismatchError, LeaseHeldError, StoreError
    from boardd.store.location import default_store_path

    path = Path(db) if db else default_store_path(logdir)
    progress = None
    if sys.stderr.isatty():
        from boardd.ingest.progress import ProgressLine

        progress = ProgressLine(sys.stderr)
    try:
        return ingest_logdir(logdir, path, progress=progress).db
    except LeaseHeldError:
        return path  # a daemon keeps it current
    except FingerprintMismatchError as exc:
        # Built by a daemon with other settings: what it holds is still the logdir's table.
        print(f"boardd {NAME}: not brought up to date ({exc})", file=sys.stderr)
        return path
    except KeyboardInterrupt:
        return fail(NAME, "interrupted", ExitCode.INTERRUPTED)
    except StoreError as exc:
        return fail(NAME, exc, ExitCode.BAD_STORE)
    finally:
        if progress is not None:
            progress.clear()


def _table(
    db: Path,
    sort_text: str | None,
    sort: Sequence[tuple[str, bool]],
    filters: dict[str, Any],
    texts: dict[str, str],
) -> tuple[list[str], list[dict[str, Any]]]:
    from boardd.client.hparams import (
        Columns,
        FilterMismatch,
        build_request,
        parse_session_groups,
        session_rows,
    )
    from boardd.data import experiments
    from boardd.data.errors import DataError
    from boardd.plugins.hparams import data as data_hparams
    from boardd.store.connection import open_reader
    from boardd.store.errors import StoreError

    try:
        connection = open_reader(db)
    except StoreError as exc:
        raise _Failed(str(exc), ExitCode.BAD_STORE) from exc
    try:
        row = experiments.experiment(connection)
        # The sessions read once for every page asked for below.
        source = (
            data_hparams.Source(connection, row.id, held=data_hparams.HparamsCache())
            if row is not None
            else None
        )
        if source is None or not data_hparams.has_hparams(source):
            raise _Failed(
                "no hparams in this logdir (no hparams summaries: TensorBoard's hparams API, "
                "or add_hparams of tensorboardX / PyTorch)",
                ExitCode.ERROR,
            )
        columns = Columns.of(data_hparams.experiment(source))
        # Each column checked against the flag that names it, so that an error names the flag.
        for column, _ in sort:
            try:
                columns.col_params(column)
            except ValueError as exc:
                raise _Failed(
                    f"--sort {shlex.quote(sort_text or '')}: {exc}", ExitCode.USAGE
                ) from exc
        for column, spec in filters.items():
            try:
                columns.col_params(column)
                columns.check_filter(column, spec)
            except FilterMismatch as exc:
                raise _Failed(_mismatch(texts[column], exc), ExitCode.USAGE) from exc
            except ValueError as exc:
                raise _Failed(
                    f"--filter {shlex.quote(texts[column])}: {exc}", ExitCode.USAGE
                ) from exc
        try:
            request = build_request(
                columns, sort=[("-" if d else "") + c for c, d in sort] or None, filters=filters
            )
        except ValueError as exc:
            raise _Failed(str(exc), ExitCode.USAGE) from exc
        groups = []
        runs: dict[str, str] = {}
        shown: dict[str, str] = {}
        while True:
            try:
                found = data_hparams.session_groups_json_of([source], request, named=True)
            except DataError as exc:
                raise _Failed(str(exc), ExitCode.USAGE) from exc
            # Sessions as the runs the user named (add_hparams' sub-runs: hparams_run).
            answer, page_runs, page_shown = parse_session_groups(found)
            runs.update(page_runs)
            shown.update(page_shown)
            groups.extend(answer.session_groups)
            if not answer.session_groups or len(groups) >= answer.total_size:
                break
            request.start_index = len(groups)
        return columns.names, session_rows(columns, groups, runs, shown)
    finally:
        connection.close()


def _mismatch(text: str, exc: Any) -> str:
    """A --filter its column's values cannot match, in the command line's words: what the
    column holds, and the --filter forms that work on it (with the value the user gave when
    there is one)."""
    column, kind, spec = exc.column, exc.kind, exc.spec
    if kind == "string":
        return (
            f"--filter {shlex.quote(text)}: {column} holds strings, and COL=MIN..MAX takes "
            f"numbers: give a regular expression (--filter '{column}=^adam') or values "
            f"(--filter '{column}==adam,sgd')"
        )
    given = "COL=REGEX matches strings only"
    if kind == "bool":
        return (
            f"--filter {shlex.quote(text)}: {column} holds true/false, and {given}: give "
            f"--filter '{column}==true' or --filter '{column}==false'"
        )
    # A number column: the number the regular expression was written around, if any.
    number = spec.strip("^$").replace("\\.", ".") if isinstance(spec, str) else ""
    try:
        value = f"{float(number):g}"
    except ValueError:
        return (
            f"--filter {shlex.quote(text)}: {column} holds numbers, and {given}: give a range "
            f"(--filter '{column}=MIN..MAX', either end may be left out) or exact values "
            f"(--filter '{column}==V1,V2')"
        )
    return (
        f"--filter {shlex.quote(text)}: {column} holds numbers, and {given}: for {value}, give "
        f"--filter '{column}=={value}' (exact) or a range, --filter '{column}={value}..{value}' "
        "(either end may be left out)"
    )


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.6g}"
    return str(value)


def _write_csv(out: TextIO, header: list[str], rows: list[dict[str, Any]]) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(
            [
                "" if row[c] is None else repr(row[c]) if isinstance(row[c], float) else row[c]
                for c in header
            ]
        )


def _write_table(out: TextIO, header: list[str], rows: list[dict[str, Any]]) -> None:
    """Aligned columns (numbers to the right), a missing value as ``-``."""
    cells = [[_text(row[c]) or "-" for c in header] for row in rows]
    numeric = [
        all(
            (isinstance(row[c], int | float) and not isinstance(row[c], bool)) or row[c] is None
            for row in rows
        )
        for c in header
    ]
    widths = [max([len(h), *(len(line[i]) for line in cells)]) for i, h in enumerate(header)]

    def line(values: list[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    out.write(line(header) + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for values in cells:
        out.write(line(values) + "\n")
    out.write(f"({len(rows)} session{'s' if len(rows) != 1 else ''})\n")
