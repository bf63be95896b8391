"""A benchmark's results as JSON: one file per benchmark, ``bench/results/NAME.json``.

Each file holds the latest run of its benchmark: when (UTC), on what machine (CPUs, CPU model,
Python, load average), from which commit, the command line, and each figure beside its
anchor's with their ratio and the target it answers to. The documentation's Performance page
and README's comparison with TensorBoard are rendered from these files (tools/docs_gen.py);
git keeps their history. A benchmark adds ``--results PATH`` to its parser with
:func:`add_argument` and calls :func:`write` once its figures are printed::

    results.write(args.results, "bench_stream", title=..., anchor=..., figures=[
        results.figure("p99 commit → message", 1.6, 48.5, unit="ms", better="lower",
                       target="≤ 20 ms", met=True),
    ])

Only the standard library is used, so every benchmark can import it (``bench/`` is on
``sys.path`` when a benchmark runs as a script).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
#: Where the results go unless ``--results`` says otherwise.
RESULTS_DIR = BENCH_DIR / "results"
#: The version of this file's format; a reader refuses versions it does not know.
FORMAT = 1

Better = Literal["higher", "lower"]


def add_argument(parser: argparse.ArgumentParser) -> None:
    """Adds ``--results PATH`` (default: ``bench/results/NAME.json``; ``-``: write none)."""
    parser.add_argument(
        "--results",
        metavar="PATH",
        help="write the results as JSON to PATH (default: bench/results/NAME.json, which the "
        "documentation shows; '-' writes none)",
    )


def finite(value: float | None) -> float | None:
    """``value``, or None when it is missing or not finite (JSON has no NaN nor infinities)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def ratio(boardd: float | None, anchor: float | None, better: Better) -> float | None:
    """How many times better boardd is than its anchor (above 1: better), or None."""
    mine, theirs = finite(boardd), finite(anchor)
    if mine is None or theirs is None or mine <= 0 or theirs <= 0:
        return None
    return round(mine / theirs if better == "higher" else theirs / mine, 4)


def figure(
    name: str,
    boardd: float | None,
    anchor: float | None = None,
    *,
    unit: str,
    better: Better,
    target: str | None = None,
    met: bool | None = None,
) -> dict[str, Any]:
    """One figure: boardd's value, its anchor's (None where there is none), their ratio."""
    return {
        "name": name,
        "boardd": finite(boardd),
        "anchor": finite(anchor),
        "unit": unit,
        "better": better,
        "ratio": ratio(boardd, anchor, better),
        "target": target,
        "met": met,
    }


def _cpu_model() -> str | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model"):
                return value.strip()
    return platform.processor() or None


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "python": platform.python_version(),
        "system": platform.platform(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _commit() -> str | None:
    """The commit measured (``+`` when the tree had changes), or None outside a checkout."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_DIR), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_DIR), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+" if dirty else "")


def _clean(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by None (JSON has no NaN)."""
    if isinstance(value, float):
        return finite(value)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command that ran, as a user would type it from the repository's root."""
    script = Path(sys.argv[0]).resolve()
    with contextlib.suppress(ValueError):
        script = script.relative_to(REPO_DIR)
    args = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["python", str(script), *args])


def write(
    path: str | None,
    name: str,
    *,
    title: str,
    anchor: str | None,
    figures: Sequence[dict[str, Any]],
    workload: str = "",
    notes: str = "",
    detail: Any = None,
    argv: Sequence[str] | None = None,
) -> Path | None:
    """Writes the results of benchmark ``name`` to ``path`` (None: the default file; ``-``:
    nowhere) and returns where they went. ``detail`` is anything else worth keeping (every
    sample, say); it must be JSON."""
    if path == "-":
        return None
    target = Path(path) if path else RESULTS_DIR / f"{name}.json"
    checked = [f for f in figures if f.get("met") is not None]
    document = {
        "format": FORMAT,
        "benchmark": name,
        "title": title,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "commit": _commit(),
        "command": command_line(argv),
        "workload": workload,
        "anchor": anchor,
        "figures": _clean(list(figures)),
        "targets_met": all(f["met"] for f in checked) if checked else None,
        "notes": notes,
        "detail": _clean(detail),
    }
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False, default=str)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".tmp")
    partial.write_text(text + "\n", encoding="utf-8")
    partial.replace(target)
    print(f"results written to {target}", file=sys.stderr)
    return target
