"""``boardd export LOGDIR``: a consistent copy of a logdir's store, even while its writer runs."""

from __future__ import annotations

import argparse
import stat
from pathlib import Path

from boardd.cli.messages import fail, settings_failed
from boardd.config import SettingsError, check_logdir, parse_experiments
from boardd.exitcodes import ExitCode, describe

NAME = "export"

#: The first 16 bytes of every SQLite database file (https://www.sqlite.org/fileformat.html).
_SQLITE_HEADER = b"SQLite format 3\x00"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declares the command and its flags."""
    parser = sub.add_parser(
        NAME,
        help="write a consistent copy of a logdir's store, even while a writer runs",
        description=(
            "Copies LOGDIR's store (the one boardd serve and boardd ingest keep for it), or the "
            "store file given with --db, with SQLite's online backup, a few pages at a time, so "
            "a running writer is never blocked for long. The copy carries no writer lease and "
            "a store id of its own."
        ),
        epilog=(
            "Examples: boardd export runs/ --out runs.sqlite; boardd export --db "
            "~/.local/state/boardd/runs-0123456789ab.sqlite --out runs.sqlite. "
            + describe(
                ExitCode.OK,
                ExitCode.USAGE,
                ExitCode.BAD_LOGDIR,
                ExitCode.BAD_STORE,
                meanings={
                    ExitCode.OK: "copied",
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
    parser.add_argument("--out", required=True, metavar="FILE", help="where to write the copy")
    parser.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
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
