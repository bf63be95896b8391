"""``boardd export``: a consistent copy of a store, even while its writer runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from boardd.cli.common import fail
from boardd.exitcodes import ExitCode, describe

NAME = "export"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declares the command and its flags."""
    parser = sub.add_parser(
        NAME,
        help="write a consistent copy of a store, even while a writer runs",
        description=(
            "Copies a store with SQLite's online backup, a few pages at a time, so a running "
            "writer is never blocked for long. The copy carries no writer lease and a store id "
            "of its own."
        ),
        epilog=describe(
            ExitCode.OK,
            ExitCode.USAGE,
            ExitCode.BAD_STORE,
            meanings={
                ExitCode.OK: "copied",
                ExitCode.BAD_STORE: (
                    "the store cannot be read, or FILE exists (without --force) or is not a "
                    "regular file"
                ),
            },
        ),
    )
    parser.add_argument("--db", required=True, metavar="PATH", help="the store to copy")
    parser.add_argument("--out", required=True, metavar="FILE", help="where to write the copy")
    parser.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Runs ``boardd export``; returns the exit code."""
    from boardd.store.errors import StoreError
    from boardd.store.export import export_store

    try:
        result = export_store(Path(args.db), Path(args.out), overwrite=args.force)
    except StoreError as exc:
        return fail(NAME, exc, ExitCode.BAD_STORE)
    print(f"exported {args.db} to {result.path} ({result.bytes} bytes)")
    return ExitCode.OK
