"""Flags several commands share: the store's (``--db``, ``--samples-per-plugin``,
``--rebuild``), ``--crc``, and the type of a positive count."""

from __future__ import annotations

import argparse

from boardd.config import CRC_CHOICES, CRC_HELP


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def add_crc_argument(parser: argparse.ArgumentParser) -> None:
    """``--crc``, its choices derived from the reader's modes."""
    parser.add_argument("--crc", choices=CRC_CHOICES, default=CRC_CHOICES[0], help=CRC_HELP)


def add_store_arguments(parser: argparse.ArgumentParser, *, rebuild_help: str) -> None:
    """``--db``, ``--samples-per-plugin``, ``--rebuild`` and ``--crc`` (ingest and serve)."""
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
        "--samples_per_plugin",
        metavar="SPEC",
        default="",
        help=(
            "points kept per series, in TensorBoard's syntax: e.g. 'scalars=1000,images=all,"
            "*=50' (all keeps everything, and so does 0, as in TensorBoard). Defaults: "
            "every scalar (scalars=N answers the N a reservoir of N keeps), histograms 500, "
            "pr_curves 100, text 100, other tensors 100, images 10, audio 10, other blob "
            "sequences 10"
        ),
    )
    parser.add_argument("--rebuild", action="store_true", help=rebuild_help)
    add_crc_argument(parser)
