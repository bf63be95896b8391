"""Commit and batch sizes of ingest: time, memory and commit spacing over a grid of settings.

Each cell ingests the workload into a fresh store in its own child process, constructing
``WriteSession`` + ``Ingestor(commit_bytes=..., commit_seconds=..., batch_bytes=...)`` directly,
so the knobs of ``boardd.ingest.ingestor`` can be chosen from data rather than guessed.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import results as bench_results  # noqa: E402  (bench/, put on the path above)
from anchors import AnchorError, Stats, total_bytes, warm_page_cache  # noqa: E402
from bench_ingest import CONFIGS, child_env, measure, remove_store  # noqa: E402

MIB = 2**20
# Settings within this fraction of the fastest are "as fast"; among them the leanest wins.
AS_FAST = 0.05


@dataclass(frozen=True)
class Cell:
    """One setting of the knobs (bytes, seconds); None = the Ingestor's default."""

    commit_bytes: int
    batch_bytes: int
    commit_seconds: float
    workers: int | None
    segment_bytes: int | None = None

    def label(self) -> str:
        """Short text for the table."""
        secs = "inf" if math.isinf(self.commit_seconds) else f"{self.commit_seconds:g}"
        workers = "default" if self.workers is None else str(self.workers)
        segment = "default" if self.segment_bytes is None else f"{self.segment_bytes // MIB} MiB"
        return (
            f"{self.commit_bytes // MIB:>4} MiB {self.batch_bytes // MIB:>4} MiB "
            f"{secs:>6} s {workers:>8} {segment:>8}"
        )


@dataclass
class Result:
    """The samples of one cell."""

    cell: Cell
    samples: list[dict[str, Any]] = field(default_factory=list)

    def stat(self, key: str) -> Stats:
        """Median [min-max] of ``key``."""
        return Stats.of([float(s[key]) for s in self.samples])


def _child(argv: Sequence[str]) -> int:
    """Child side: one ingest with the given knobs; prints one JSON line."""
    logdir, db, spec, commit_bytes, batch_bytes, commit_seconds, crc, workers, segment = argv
    from boardd.ingest.ingestor import Ingestor
    from boardd.reader.tfrecord import CrcMode
    from boardd.store.sampling import parse_samples_per_plugin
    from boardd.store.session import WriteSession

    kwargs: dict[str, Any] = {
        "crc_mode": CrcMode(crc),
        "commit_bytes": int(commit_bytes),
        "batch_bytes": int(batch_bytes),
        "commit_seconds": float(commit_seconds),
    }
    # Knobs that only some versions of the Ingestor have are passed only when asked for.
    for name, value in (("workers", workers), ("segment_bytes", segment)):
        if value == "default":
            continue
        if name not in inspect.signature(Ingestor).parameters:
            print(f"this Ingestor takes no {name} argument", file=sys.stderr)
            return 2
        kwargs[name] = int(value)
    commits: list[float] = []
    started = time.perf_counter()
    with WriteSession(db, logdir, sampling=parse_samples_per_plugin(spec)) as session:
        session.writer.on_commit(lambda _generation: commits.append(time.perf_counter()))
        ingestor = Ingestor(session.writer, logdir, **kwargs)
        result = ingestor.run_pass()
        ingestor.close()
        ingested = time.perf_counter()
        # The WAL only grows until the checkpoint on close: its size now is its peak.
        wal = Path(str(db) + "-wal")
        wal_bytes = wal.stat().st_size if wal.exists() else 0
    finished = time.perf_counter()
    marks = [started, *commits, ingested]
    print(
        json.dumps(
            {
                "seconds": finished - started,
                "ingest_seconds": ingested - started,
                "close_seconds": finished - ingested,
                "commits": len(commits),
                "max_commit_gap_seconds": max(b - a for a, b in itertools.pairwise(marks)),
                "peak_wal_bytes": wal_bytes,
                "bytes_read": result.bytes_read,
                "workers": getattr(ingestor, "workers", 1),
                "segment_bytes": getattr(ingestor, "segment_bytes", None),
            }
        )
    )
    return 0


def run_cell(
    cell: Cell, logdir: Path, db: Path, spec: str, crc: str, timeout: float
) -> dict[str, Any]:
    """Ingest the logdir once into a fresh store with ``cell``'s knobs."""
    remove_store(db)
    workers = "default" if cell.workers is None else str(cell.workers)
    segment = "default" if cell.segment_bytes is None else str(cell.segment_bytes)
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "_child",
        str(logdir),
        str(db),
        spec,
        str(cell.commit_bytes),
        str(cell.batch_bytes),
        repr(cell.commit_seconds),
        crc,
        workers,
        segment,
    ]
    m = measure(argv, env=child_env(), timeout=timeout)
    if m.run.returncode != 0:
        raise AnchorError(f"ingest with {cell} failed:\n{m.run.stderr[-3000:]}")
    report = json.loads(m.run.stdout.strip().splitlines()[-1])
    db_bytes = db.stat().st_size if db.exists() else 0
    remove_store(db)
    return {
        **report,
        "wall_seconds": m.run.wall_seconds,
        "cpu_seconds": m.cpu_seconds,
        "peak_rss_mib": m.peak_rss_bytes / MIB,
        "peak_pss_mib": m.peak_pss_bytes / MIB,
        "largest_process_rss_mib": m.run.peak_rss_bytes / MIB,
        "db_bytes": db_bytes,
    }


def recommend(results: list[Result], rank_by: str = "cpu_seconds") -> Result:
    """Among the settings within AS_FAST of the fastest (median ``rank_by``), the leanest in
    memory, then the one whose commits come closest together (the store is fresher while
    catching up)."""
    best = min(r.stat(rank_by).median for r in results)
    fast = [r for r in results if r.stat(rank_by).median <= best * (1 + AS_FAST)]
    return min(
        fast,
        key=lambda r: (
            round(r.stat("peak_rss_mib").median / 10),
            r.stat("max_commit_gap_seconds").median,
        ),
    )


def _sizes(text: str) -> list[int]:
    return [int(float(v) * MIB) for v in text.split(",") if v.strip()]


def _seconds(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v.strip()]


def _workers(text: str) -> list[int | None]:
    return [None if v.strip() == "default" else int(v) for v in text.split(",") if v.strip()]


def _segments(text: str) -> list[int | None]:
    return [
        None if v.strip() == "default" else int(float(v) * MIB)
        for v in text.split(",")
        if v.strip()
    ]


def _defaults() -> dict[str, Any]:
    try:
        from boardd.ingest import ingestor as ingest
    except ImportError:
        return {}
    return {
        "commit_bytes": ingest.DEFAULT_COMMIT_BYTES,
        "commit_seconds": ingest.DEFAULT_COMMIT_SECONDS,
        "batch_bytes": ingest.DEFAULT_BATCH_BYTES,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: run the grid, print a table and a recommendation."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_child"]:
        return _child(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--logdir", type=Path, help="logdir to ingest (default: standard workload)")
    parser.add_argument("--small", action="store_true", help="use the small workload")
    parser.add_argument("--config", choices=sorted(CONFIGS), default="b", help="sampling (b)")
    parser.add_argument("--commit-mib", type=_sizes, default="4,16,64,256", help="commit_bytes")
    parser.add_argument("--batch-mib", type=_sizes, default="4,16,32", help="batch_bytes")
    parser.add_argument(
        "--commit-seconds",
        type=_seconds,
        default="0.5,inf",
        help="commit_seconds values (inf: commit by size only); default 0.5,inf",
    )
    parser.add_argument(
        "--workers", type=_workers, default="default", help="e.g. 1,default (if supported)"
    )
    parser.add_argument(
        "--segment-mib", type=_segments, default="default", help="e.g. 8,32,default (if supported)"
    )
    parser.add_argument("--crc", choices=["always", "on-error"], default="always")
    parser.add_argument(
        "--rank-by",
        choices=["cpu", "wall"],
        default="cpu",
        help="speed measure for the recommendation: CPU seconds of the tree (default; steady on "
        "a shared machine, right while the grid does not vary --workers) or in-process seconds",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell (default 1)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per child")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    bench_results.add_argument(parser)
    args = parser.parse_args(argv)

    sys.path.insert(0, str(BENCH_DIR.parent / "src"))
    import workload

    if args.logdir is not None:
        logdir = Path(args.logdir)
    else:
        logdir = workload.small_workload() if args.small else workload.standard_workload()
    nbytes = total_bytes(logdir)
    warm_page_cache(logdir)
    spec = CONFIGS[args.config].boardd_spec or ""
    cells = [
        Cell(c, b, s, w, g)
        for g in args.segment_mib
        for w in args.workers
        for s in args.commit_seconds
        for c in args.commit_mib
        for b in args.batch_mib
    ]
    results = [Result(cell) for cell in cells]
    store_dir = Path(tempfile.mkdtemp(prefix="boardd-bench-commit-"))
    try:
        for round_no in range(1, args.repeat + 1):
            # Odd rounds go through the grid forwards, even ones backwards, so a slow spell of
            # the machine does not always land on the same settings.
            order = results if round_no % 2 else list(reversed(results))
            for result in order:
                sample = run_cell(
                    result.cell, logdir, store_dir / "store.sqlite", spec, args.crc, args.timeout
                )
                result.samples.append(sample)
                print(
                    f"  round {round_no}/{args.repeat} {result.cell.label()}: "
                    f"{sample['seconds']:.2f} s, {sample['commits']} commits, "
                    f"{sample['peak_rss_mib']:.0f} MiB",
                    file=sys.stderr,
                )
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
    rank_key = "cpu_seconds" if args.rank_by == "cpu" else "seconds"
    pick = recommend(results, rank_key)
    defaults = _defaults()
    write_results(results, pick, defaults, args, nbytes, argv)
    if args.json:
        print(
            json.dumps(
                {
                    "workload": {"logdir": str(logdir), "total_bytes": nbytes},
                    "config": args.config,
                    "crc": args.crc,
                    "current_defaults": defaults,
                    "results": [{"cell": asdict(r.cell), "samples": r.samples} for r in results],
                    "recommended": asdict(pick.cell),
                    "rank_by": rank_key,
                },
                indent=2,
                default=str,
            )
        )
        return 0
    print(
        f"Ingest of {logdir} ({nbytes / 1e6:.1f} MB), config ({args.config}), --crc {args.crc}; "
        f"{args.repeat} run(s) per cell, median shown"
    )
    print(
        "in-process seconds (store open to closed, WAL checkpoint included); RSS/PSS summed over "
        "the process tree"
    )
    print()
    head = (
        f"{'commit':>8} {'batch':>8} {'commit_s':>8} {'workers':>8} {'segment':>8} "
        f"{'seconds':>8} {'MB/s':>6} "
        f"{'close s':>7} {'CPU s':>6} {'commits':>7} {'max gap s':>9} {'RSS MiB':>7} "
        f"{'PSS MiB':>7} {'max proc':>8} {'WAL MiB':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in results:
        seconds = r.stat("seconds").median
        mark = "  <- recommended" if r is pick else ""
        print(
            f"{r.cell.label()} {seconds:>8.2f} {nbytes / 1e6 / seconds:>6.1f} "
            f"{r.stat('close_seconds').median:>7.2f} {r.stat('cpu_seconds').median:>6.2f} "
            f"{r.stat('commits').median:>7.0f} {r.stat('max_commit_gap_seconds').median:>9.2f} "
            f"{r.stat('peak_rss_mib').median:>7.0f} {r.stat('peak_pss_mib').median:>7.0f} "
            f"{r.stat('largest_process_rss_mib').median:>8.0f} "
            f"{r.stat('peak_wal_bytes').median / MIB:>7.0f}{mark}"
        )
    print()
    if defaults:
        secs = defaults["commit_seconds"]
        print(
            f"current defaults: commit_bytes={defaults['commit_bytes'] // MIB} MiB, "
            f"batch_bytes={defaults['batch_bytes'] // MIB} MiB, commit_seconds={secs:g}"
        )
    c = pick.cell
    print(
        f"recommended (fastest by {args.rank_by} within {AS_FAST:.0%}, then least memory, then "
        "closest commits): "
        f"commit_bytes={c.commit_bytes // MIB} MiB, batch_bytes={c.batch_bytes // MIB} MiB, "
        f"commit_seconds={c.commit_seconds:g}"
    )
    return 0


def write_results(
    measured: list[Result],
    pick: Result,
    defaults: dict[str, Any],
    args: argparse.Namespace,
    nbytes: int,
    argv: Sequence[str],
) -> None:
    """bench/results/bench_commit.json: the recommended setting and the current defaults'
    (no anchor: the grid compares boardd with itself)."""
    figures = []
    current = next(
        (
            r
            for r in measured
            if defaults
            and r.cell.commit_bytes == defaults["commit_bytes"]
            and r.cell.batch_bytes == defaults["batch_bytes"]
            and r.cell.commit_seconds == defaults["commit_seconds"]
            and r.cell.workers is None
            and r.cell.segment_bytes is None
        ),
        None,
    )
    for what, result in (("recommended", pick), ("current defaults", current)):
        if result is None:
            continue
        c = result.cell
        label = (
            f"{what} (commit {c.commit_bytes // MIB} MiB, batch {c.batch_bytes // MIB} MiB, "
            f"commit_seconds {c.commit_seconds:g})"
        )
        figures += [
            bench_results.figure(
                f"{label}: in-process seconds",
                result.stat("seconds").median,
                unit="s",
                better="lower",
            ),
            bench_results.figure(
                f"{label}: CPU seconds", result.stat("cpu_seconds").median, unit="s", better="lower"
            ),
            bench_results.figure(
                f"{label}: peak PSS of the process tree",
                result.stat("peak_pss_mib").median,
                unit="MiB",
                better="lower",
            ),
        ]
    bench_results.write(
        args.results,
        "bench_commit",
        title="Ingest: commit and batch sizes",
        anchor=None,
        workload=f"{nbytes / 1e6:.1f} MB, sampling ({args.config}), --crc {args.crc}; "
        f"{len(measured)} settings, {args.repeat} run(s) each",
        figures=figures,
        notes="No anchor: the grid compares boardd's own ingest settings.",
        detail={
            "current_defaults": defaults,
            "recommended": asdict(pick.cell),
            "results": [{"cell": asdict(r.cell), "samples": r.samples} for r in measured],
        },
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
