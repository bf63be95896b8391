"""``boardd lineage PATH_OR_URI``: the chain from a file (a checkpoint, an event file, any
artifact's URI) back to the run that wrote it, its hyperparameters, its experiment and its
data, read from the lineage store (no server needed)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from boardd.cli.messages import fail, settings_failed
from boardd.config import SettingsError, lineage_path
from boardd.exitcodes import ExitCode

NAME = "lineage"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declares the command and its flags."""
    parser = sub.add_parser(
        NAME,
        help="which run wrote this checkpoint, with which hparams, from which data",
        description=(
            "Finds the artifacts whose URI is PATH_OR_URI (a path is made absolute, as boardd "
            "records files) in the lineage store, and prints for each the executions that "
            "output it (boardd's TrainingRun: state, start and end, last step, hparams), their "
            "experiment, their inputs, and their other outputs (the run's event files: its "
            "data). boardd serve fills the store from the logdirs it watches; records written "
            "with ML Metadata's API (boardd.metadata, or /api/v1/metadata/...) show too. "
            "Exit codes: 0 found, 1 nothing has that URI, 6 the lineage store cannot be read."
        ),
        epilog="Example: boardd lineage runs/lr0.01/model-5000.pt",
    )
    parser.add_argument("target", metavar="PATH_OR_URI", help="a file path or an artifact URI")
    parser.add_argument(
        "--lineage",
        metavar="PATH",
        help="the lineage store (default: lineage.sqlite in the state directory, as serve)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Prints the lineage of ``args.target``; returns the exit code."""
    from boardd.lineage.graph import LineageNotFound, chain
    from boardd.lineage.service import close_store, open_store

    try:
        path = lineage_path(args.lineage)
    except SettingsError as exc:
        return settings_failed(NAME, exc)
    if not path.exists():
        return fail(
            NAME,
            f"{path}: no lineage store there (boardd serve creates it; give --lineage PATH)",
            ExitCode.BAD_STORE,
        )
    try:
        store = open_store(path, read_only=True)
    except Exception as exc:
        return fail(NAME, f"{path}: cannot be read as a lineage store ({exc})", ExitCode.BAD_STORE)
    try:
        found = chain(store, args.target)
    except LineageNotFound as exc:
        return fail(NAME, exc, ExitCode.ERROR)
    finally:
        close_store(store)
    if args.json:
        json.dump(found, sys.stdout, indent=2, sort_keys=False)
        sys.stdout.write("\n")
    else:
        render(found, sys.stdout)
    return ExitCode.OK


def _time(ms: object) -> str:
    if not isinstance(ms, int) or ms <= 0:
        return "?"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _values(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in values.items())


def render(found: list[dict[str, Any]], out: TextIO) -> None:
    """The chain as text: the artifact, then each run that wrote it, indented."""
    from boardd.lineage.vocabulary import EVENT_FILE

    for n, artifact in enumerate(found):
        if n:
            out.write("\n")
        out.write(
            f"{artifact['type']} {artifact['name'] or artifact['uri']}  [{artifact['state']}]\n"
        )
        out.write(f"  uri: {artifact['uri']}\n")
        if artifact["properties"]:
            out.write(f"  properties: {_values(artifact['properties'])}\n")
        if not artifact["produced_by"]:
            out.write("  written by: (no execution records it as an output)\n")
        for run in artifact["produced_by"]:
            props = run["properties"]
            out.write(f"  written by {run['type']} {run['name']}  [{run['state']}]\n")
            for context in run["contexts"]:
                out.write(f"    experiment: {context['name']}")
                logdir = context["properties"].get("logdir")
                out.write(f" ({logdir})\n" if logdir else "\n")
            if "start_time" in props or "end_time" in props:
                out.write(
                    f"    time: {_time(props.get('start_time'))} → {_time(props.get('end_time'))}\n"
                )
            if "last_step" in props:
                out.write(f"    last step: {props['last_step']}\n")
            if run["hparams"]:
                out.write("    hparams:\n")
                for key, value in run["hparams"].items():
                    out.write(f"      {key} = {value!r}\n")
            else:
                out.write("    hparams: (none recorded)\n")
            data = [o for o in run["outputs"] if o["type"] == EVENT_FILE]
            others = [o for o in run["outputs"] if o["type"] != EVENT_FILE]
            groups = (("inputs", run["inputs"]), ("data", data), ("other outputs", others))
            for label, items in groups:
                if not items:
                    continue
                out.write(f"    {label}:\n")
                for item in items:
                    extra = item["properties"]
                    detail = (
                        f" ({extra['records']} records, {extra['size']} bytes)"
                        if "records" in extra and "size" in extra
                        else ""
                    )
                    out.write(f"      {item['type']} {item['uri'] or item['name']}{detail}\n")
