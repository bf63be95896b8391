"""The lineage store against ml-metadata on SQLite: the same workload, the same API, one run.

    python bench/bench_lineage.py            # 100,000 artifacts, 20,000
                                             # executions, 200,000 events
    python bench/bench_lineage.py --scale 0.1 --queries 5    # a quick look

Each side runs bench/lineage_worker.py in its own process on a fresh SQLite file: boardd's
side in this venv, ml-metadata's in the oracle venv (``.venv-mlmd``, built on first use by
tests/metadata/oracle, ml-metadata 1.17.1 pinned there). The sides run one after the other,
never together. Printed: put_* throughput (nodes or events per second, ``batch`` per call;
put_execution calls per second), the median latency of get_artifacts with a filter_query
(a page of 100) and of get_lineage_subgraph, and each ratio with the target ≥ 1× ml-metadata
(ratio = how many times better boardd is: its throughput over MLMD's, MLMD's latency over its).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
WORKER = BENCH_DIR / "lineage_worker.py"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import results  # noqa: E402  (bench/, put on the path above)

#: (key, label, higher is better)
FIGURES = (
    ("put_artifacts_per_s", "put_artifacts (artifacts/s)", True),
    ("put_executions_per_s", "put_executions (executions/s)", True),
    ("put_events_per_s", "put_events (events/s)", True),
    ("put_execution_per_s", "put_execution (calls/s)", True),
    ("filter_property_range_ms", "get_artifacts filter: properties range (ms)", False),
    ("filter_uri_like_ms", "get_artifacts filter: uri LIKE (ms)", False),
    ("filter_name_in_ms", "get_artifacts filter: name IN (ms)", False),
    ("lineage_upstream_4_hops_ms", "get_lineage_subgraph upstream 4 hops (ms)", False),
    ("lineage_both_2_hops_ms", "get_lineage_subgraph both ways 2 hops (ms)", False),
)


def oracle_python() -> Path:
    """The oracle venv's python, built if missing (the tests' own builder)."""
    sys.path.insert(0, str(REPO))
    from tests.metadata.oracle import OracleUnavailable, ensure_oracle_venv

    try:
        return ensure_oracle_venv()
    except OracleUnavailable as exc:
        raise SystemExit(str(exc)) from exc


def run_side(python: Path, side: str, db: Path, args: argparse.Namespace) -> dict[str, float]:
    command = [
        str(python),
        str(WORKER),
        "--side",
        side,
        "--db",
        str(db),
        "--artifacts",
        str(int(100_000 * args.scale)),
        "--executions",
        str(int(20_000 * args.scale)),
        "--events",
        str(int(200_000 * args.scale)),
        "--batch",
        str(args.batch),
        "--queries",
        str(args.queries),
    ]
    print(f"running {side} …", file=sys.stderr, flush=True)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the {side} side failed ({done.returncode}):\n{done.stderr[-4000:]}")
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="of the sizes above (default 1)")
    parser.add_argument("--batch", type=int, default=100, help="nodes per put_* call")
    parser.add_argument("--queries", type=int, default=20, help="repeats of each read")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    results.add_argument(parser)
    args = parser.parse_args(argv)
    mlmd_python = oracle_python()
    with tempfile.TemporaryDirectory(prefix="boardd-bench-lineage-") as tmp:
        ours = run_side(Path(sys.executable), "boardd", Path(tmp) / "boardd.sqlite", args)
        theirs = run_side(mlmd_python, "mlmd", Path(tmp) / "mlmd.sqlite", args)
    load = os.getloadavg()
    print(
        f"lineage store vs ml-metadata 1.17.1 (SQLite), scale {args.scale:g} "
        f"({int(100_000 * args.scale)} artifacts, {int(20_000 * args.scale)} executions, "
        f"{int(ours['events'])} events), load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"{'figure':<46} {'boardd':>12} {'ml-metadata':>12} {'ratio':>8}")
    worst = float("inf")
    figures = []
    for key, label, higher in FIGURES:
        a, b = float(ours[key]), float(theirs[key])
        ratio = (a / b if higher else b / a) if a and b else float("nan")
        worst = min(worst, ratio)
        print(f"{label:<46} {a:>12.1f} {b:>12.1f} {ratio:>7.2f}x")
        name, _, unit = label.rpartition(" (")
        figures.append(
            results.figure(
                name,
                a,
                b,
                unit=unit.rstrip(")"),
                better="higher" if higher else "lower",
                target="≥ 1× ml-metadata",
                met=ratio >= 1,
            )
        )
    for key in ("filter_property_range_count", "lineage_upstream_4_hops_nodes"):
        if ours[key] != theirs[key]:
            print(f"WARNING: answers differ: {key} boardd {ours[key]} / MLMD {theirs[key]}")
    print(f"target ≥ 1x on every figure: {'met' if worst >= 1 else 'NOT met'} (worst {worst:.2f}x)")
    if args.json:
        print(json.dumps({"boardd": ours, "mlmd": theirs}))
    results.write(
        args.results,
        "bench_lineage",
        title="Lineage store: writes, filter queries, lineage subgraphs",
        anchor="ml-metadata 1.17.1 on SQLite",
        workload=f"{int(100_000 * args.scale)} artifacts, {int(20_000 * args.scale)} "
        f"executions, {int(ours['events'])} events; {args.batch} nodes per put_* call, "
        f"reads repeated {args.queries} times (median)",
        figures=figures,
        detail={"boardd": ours, "mlmd": theirs},
        argv=argv,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
