"""Reader throughput: boardd's event-file reader against rustboard's load of the same logdir.

Every contestant reads the whole workload in its own child process, in the same run, round
after round; the table shows median [min-max] over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import results  # noqa: E402  (bench/, put on the path above)
from anchors import (  # noqa: E402  (bench scripts run as plain files, not as a package)
    AnchorError,
    Stats,
    run_measured,
    rustboard_load,
    total_bytes,
    warm_page_cache,
)

TARGET_MB_PER_S = 100.0
CRC_MODES = ("ALWAYS", "ON_ERROR")
# rustboard's flag that matches each of our CRC modes.
RUSTBOARD_CHECKSUM = {"ALWAYS": True, "ON_ERROR": False}
API_MISSING_EXIT = 3

LABELS = {
    "boardd": "boardd reader",
    "python-loop": "python loop (baseline)",
    "rustboard": "rustboard load",
}


@dataclass
class ReadCounts:
    """What a reader produced, counted so that lazily decoded values are at least touched."""

    records: int = 0
    scalar_points: int = 0
    tensor_points: int = 0
    blob_points: int = 0
    data_loss: int = 0


# --- the boardd side: the one place that calls boardd's reader API --------------------------


def boardd_reader(crc_mode: str) -> Callable[[Path], ReadCounts]:
    """Import boardd's reader and return a function that reads a whole logdir with it.

    Imports happen here, outside the timed call. Raises ImportError while the API is missing.
    """
    from boardd.reader import logdir as boardd_logdir
    from boardd.reader import pipeline, tfrecord

    read_event_file = pipeline.read_event_file
    mode = tfrecord.CrcMode[crc_mode]
    # The brief's contract names discover_runs(logdir) -> {run: [files]}; the module as written
    # has discover(logdir).runs with the same mapping. Accept either.
    discover_runs: Callable[[Path], dict[str, list[Path]]]
    if hasattr(boardd_logdir, "discover_runs"):
        discover_runs = boardd_logdir.discover_runs
    else:
        discover_runs = lambda path: boardd_logdir.discover(path).runs  # noqa: E731

    def read_logdir(logdir: Path) -> ReadCounts:
        counts = ReadCounts()
        for files in discover_runs(logdir).values():
            for path in files:
                for batch in read_event_file(path, crc_mode=mode):
                    counts.records += batch.records
                    counts.scalar_points += sum(len(c) for c in batch.scalars.values())
                    counts.tensor_points += sum(len(v) for v in batch.tensors.values())
                    counts.blob_points += sum(len(v) for v in batch.blob_sequences.values())
                    counts.data_loss += len(batch.data_loss)
        return counts

    return read_logdir


# --- the baseline: a straightforward Python loop over struct + TensorBoard's event_pb2 -------


def python_loop_reader(crc_mode: str) -> Callable[[Path], ReadCounts]:
    """A plain per-record Python reader, the figure any pure-Python design starts from.

    ALWAYS checks both CRCs of every record; ON_ERROR checks them only when the event fails to
    parse. Scalars end as numpy columns per tag, like boardd's ScalarColumns.
    """
    import google_crc32c
    import numpy as np
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto import event_pb2

    always = crc_mode == "ALWAYS"
    crc = google_crc32c.value
    parse = event_pb2.Event.FromString
    header = struct.Struct("<QI")
    footer = struct.Struct("<I")

    def masked(data: bytes) -> int:
        value = int(crc(data))
        return (((value >> 15) | (value << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    def read_file(path: Path, counts: ReadCounts) -> None:
        data = Path(path).read_bytes()
        columns: dict[str, tuple[list[int], list[float], list[float]]] = {}
        pos = 0
        end = len(data)
        while pos + 12 <= end:
            length, length_crc = header.unpack_from(data, pos)
            start = pos + 12
            if start + length + 4 > end:
                break  # a partial record at the end: wait for more
            payload = data[start : start + length]
            (payload_crc,) = footer.unpack_from(data, start + length)
            pos = start + length + 4
            if always and (
                masked(data[start - 12 : start - 4]) != length_crc or masked(payload) != payload_crc
            ):
                counts.data_loss += 1
                continue
            try:
                event = parse(payload)
            except DecodeError:
                counts.data_loss += 1
                continue
            counts.records += 1
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    column = columns.get(value.tag)
                    if column is None:
                        column = columns[value.tag] = ([], [], [])
                    column[0].append(event.step)
                    column[1].append(event.wall_time)
                    column[2].append(value.simple_value)
                elif kind == "image":
                    counts.blob_points += 1
                else:
                    counts.tensor_points += 1
        for steps, walls, values in columns.values():
            counts.scalar_points += len(np.asarray(steps, dtype=np.int64))
            np.asarray(walls, dtype=np.float64)
            np.asarray(values, dtype=np.float64)

    def read_logdir(logdir: Path) -> ReadCounts:
        counts = ReadCounts()
        for path in sorted(Path(logdir).rglob("*tfevents*")):
            read_file(path, counts)
        return counts

    return read_logdir


READERS: dict[str, Callable[[str], Callable[[Path], ReadCounts]]] = {
    "boardd": boardd_reader,
    "python-loop": python_loop_reader,
}


def _child(impl: str, crc_mode: str, logdir: str) -> int:
    """Child side: read the logdir once and print one JSON line (timings exclude imports)."""
    try:
        read_logdir = READERS[impl](crc_mode)
    except ImportError as exc:
        print(f"{impl} reader API not available: {exc}", file=sys.stderr)
        return API_MISSING_EXIT
    wall0 = time.perf_counter()
    cpu0 = time.process_time()
    counts = read_logdir(Path(logdir))
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    print(json.dumps({"seconds": wall, "cpu_seconds": cpu, **asdict(counts)}))
    return 0


# --- the parent: rounds, table, JSON ---------------------------------------------------------


@dataclass
class Contestant:
    """One row of the table: an implementation in one CRC mode, and its samples."""

    impl: str
    crc_mode: str
    samples: list[dict[str, Any]] = field(default_factory=list)
    unavailable: str = ""

    @property
    def label(self) -> str:
        """Row label; rustboard's shows its own flag for the CRC mode."""
        if self.impl == "rustboard":
            flag = "--checksum" if RUSTBOARD_CHECKSUM[self.crc_mode] else "--no-checksum"
            return f"{LABELS[self.impl]} ({flag})"
        return LABELS[self.impl]

    def values(self, key: str) -> list[float]:
        """The samples' values of ``key``."""
        return [float(s[key]) for s in self.samples if key in s]

    def stat(self, key: str) -> Stats | None:
        """Stats over the samples of ``key`` (None if there are none)."""
        values = self.values(key)
        return Stats.of(values) if values else None


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    src = str(REPO_DIR / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _run_reader(c: Contestant, logdir: Path, nbytes: int, timeout: float) -> None:
    argv = [sys.executable, str(Path(__file__).resolve()), "_child", c.impl, c.crc_mode]
    run = run_measured([*argv, str(logdir)], env=_child_env(), timeout=timeout)
    if run.returncode == API_MISSING_EXIT:
        c.unavailable = run.stderr.strip().splitlines()[-1]
        return
    if run.returncode != 0:
        raise AnchorError(f"{c.label} ({c.crc_mode}) failed:\n{run.stderr[-3000:]}")
    report = json.loads(run.stdout.strip().splitlines()[-1])
    seconds = float(report["seconds"])
    cpu = float(report["cpu_seconds"])
    c.samples.append(
        {
            **report,
            "mb_per_s": nbytes / 1e6 / seconds,
            "events_per_s": report["records"] / seconds,
            "mb_per_cpu_s": nbytes / 1e6 / cpu if cpu > 0 else float("inf"),
            "peak_rss_mib": run.peak_rss_bytes / 2**20,
        }
    )


def _run_rustboard(c: Contestant, logdir: Path, nbytes: int, events: int | None) -> None:
    result = rustboard_load(logdir, checksum=RUSTBOARD_CHECKSUM[c.crc_mode])
    sample: dict[str, Any] = {
        "seconds": result.seconds,
        "cpu_seconds": result.cpu_seconds,
        "load_cycle_seconds": result.detail["load_cycle_seconds"],
        "mb_per_s": nbytes / 1e6 / result.seconds,
        "mb_per_cpu_s": nbytes / 1e6 / result.cpu_seconds if result.cpu_seconds else 0.0,
        "peak_rss_mib": result.peak_rss_bytes / 2**20,
    }
    if events is not None:
        sample["events_per_s"] = events / result.seconds
    c.samples.append(sample)


def _workload(args: argparse.Namespace) -> tuple[Path, str, int | None]:
    """The logdir, a one-line description, and the event count if known."""
    import workload

    if args.logdir is not None:
        logdir = Path(args.logdir)
    else:
        logdir = workload.small_workload() if args.small else workload.standard_workload()
    try:
        manifest = workload.read_manifest(logdir)
    except FileNotFoundError:
        return logdir, str(logdir), None
    spec = manifest.spec
    shape = f"{spec.runs} runs x {spec.scalar_tags} scalar tags x {spec.scalar_steps:,} steps"
    return logdir, f"{spec.name} ({shape}, {manifest.events:,} events)", manifest.events


def _contestants(args: argparse.Namespace) -> Iterator[Contestant]:
    for mode in CRC_MODES:
        yield Contestant("boardd", mode)
    if not args.skip_baseline:
        for mode in CRC_MODES:
            yield Contestant("python-loop", mode)
    if not args.skip_rustboard:
        for mode in CRC_MODES:
            yield Contestant("rustboard", mode)


def _median(c: Contestant, key: str) -> float | None:
    s = c.stat(key)
    return s.median if s else None


def _summary(rows: list[Contestant]) -> dict[str, Any]:
    by = {(c.impl, c.crc_mode): c for c in rows}
    ratios: dict[str, Any] = {}
    target: dict[str, Any] = {"mb_per_s": TARGET_MB_PER_S}
    for mode in CRC_MODES:
        boardd = by.get(("boardd", mode))
        rust = by.get(("rustboard", mode))
        loop = by.get(("python-loop", mode))
        b = _median(boardd, "mb_per_s") if boardd else None
        r = _median(rust, "mb_per_s") if rust else None
        p = _median(loop, "mb_per_s") if loop else None
        ratios[mode] = {
            "boardd_over_rustboard": b / r if b and r else None,
            "baseline_over_rustboard": p / r if p and r else None,
            "boardd_over_baseline": b / p if b and p else None,
        }
        target[mode] = {
            "boardd_mb_per_s": b,
            "boardd_mb_per_cpu_s": _median(boardd, "mb_per_cpu_s") if boardd else None,
            "met": b is not None and b >= TARGET_MB_PER_S,
        }
    return {"ratios": ratios, "target": target}


def _print_table(desc: str, nbytes: int, rounds: int, rows: list[Contestant]) -> None:
    print(f"Reader throughput on {desc}")
    print(f"{nbytes:,} bytes ({nbytes / 1e6:.1f} MB); {rounds} round(s); median [min-max]")
    print()
    head = (
        f"{'':34} {'CRC mode':9} {'MB/s':>20} {'events/s':>22} {'CPU s':>18} "
        f"{'MB/CPU-s':>10} {'peak RSS':>10}"
    )
    print(head)
    print("-" * len(head))
    for c in rows:
        if c.unavailable:
            print(f"{c.label:34} {c.crc_mode:9} n/a: {c.unavailable}")
            continue
        mbps, eps, cpu = c.stat("mb_per_s"), c.stat("events_per_s"), c.stat("cpu_seconds")
        per_cpu, rss = c.stat("mb_per_cpu_s"), c.stat("peak_rss_mib")
        eps_text = Stats.of([v / 1e6 for v in c.values("events_per_s")]).fmt() + " M" if eps else ""
        print(
            f"{c.label:34} {c.crc_mode:9} {mbps.fmt('.1f') if mbps else '':>20} {eps_text:>22} "
            f"{cpu.fmt() if cpu else '':>18} {per_cpu.median if per_cpu else 0:>10.1f} "
            f"{(rss.median if rss else 0):>6.0f} MiB"
        )
    print()
    print("rustboard's CPU s covers all its threads; its MB/s is total bytes / time from spawn")
    print("to 'Finished load cycle'. Readers' times exclude interpreter start and imports.")


def _print_summary(summary: dict[str, Any]) -> None:
    print()
    for mode in CRC_MODES:
        r = summary["ratios"][mode]
        parts = []
        if r["boardd_over_rustboard"] is not None:
            parts.append(f"boardd / rustboard = {r['boardd_over_rustboard']:.2f}")
        if r["baseline_over_rustboard"] is not None:
            parts.append(f"python loop / rustboard = {r['baseline_over_rustboard']:.2f}")
        if r["boardd_over_baseline"] is not None:
            parts.append(f"boardd / python loop = {r['boardd_over_baseline']:.2f}")
        print(f"ratio (MB/s) {mode:8}: " + ("; ".join(parts) if parts else "n/a"))
    target = summary["target"]
    print()
    print(f"target: boardd reader >= {TARGET_MB_PER_S:.0f} MB/s on one core")
    for mode in CRC_MODES:
        t = target[mode]
        if t["boardd_mb_per_s"] is None:
            print(f"  {mode:8}: not measured (boardd reader API not available)")
            continue
        verdict = "MET" if t["met"] else "NOT MET"
        print(
            f"  {mode:8}: {t['boardd_mb_per_s']:.1f} MB/s wall "
            f"({t['boardd_mb_per_cpu_s']:.1f} MB per CPU-second) -> {verdict}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: run the reader benchmark; exit 0, or 1 with --check if the target is not met."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_child"]:
        return _child(argv[1], argv[2], argv[3])
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--logdir", type=Path, help="logdir to read (default: standard workload)")
    parser.add_argument("--small", action="store_true", help="use the small workload")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--skip-baseline", action="store_true", help="no python-loop rows")
    parser.add_argument("--skip-rustboard", action="store_true", help="no rustboard rows")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per child")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the target is met")
    results.add_argument(parser)
    args = parser.parse_args(argv)

    logdir, desc, events = _workload(args)
    nbytes = total_bytes(logdir)
    warm_page_cache(logdir)
    rows = list(_contestants(args))
    for round_no in range(1, args.repeat + 1):
        for c in rows:
            if c.unavailable:
                continue
            if c.impl == "rustboard":
                _run_rustboard(c, logdir, nbytes, events)
            else:
                _run_reader(c, logdir, nbytes, args.timeout)
            last = c.samples[-1] if c.samples else None
            note = f"{last['mb_per_s']:.1f} MB/s" if last else f"n/a ({c.unavailable})"
            print(
                f"  round {round_no}/{args.repeat}: {c.label} {c.crc_mode}: {note}", file=sys.stderr
            )
    summary = _summary(rows)
    if args.json:
        out = {
            "workload": {"logdir": str(logdir), "description": desc, "total_bytes": nbytes},
            "rounds": args.repeat,
            "results": [
                {
                    "impl": c.impl,
                    "label": c.label,
                    "crc_mode": c.crc_mode,
                    "unavailable": c.unavailable or None,
                    "stats": {
                        key: asdict(s)
                        for key in (
                            "mb_per_s",
                            "events_per_s",
                            "cpu_seconds",
                            "mb_per_cpu_s",
                            "peak_rss_mib",
                            "seconds",
                        )
                        if (s := c.stat(key)) is not None
                    },
                    "samples": c.samples,
                }
                for c in rows
            ],
            **summary,
        }
        print(json.dumps(out, indent=2))
    else:
        _print_table(desc, nbytes, args.repeat, rows)
        _print_summary(summary)
    write_results(rows, summary, desc, nbytes, args, argv)
    if args.check:
        return 0 if all(summary["target"][m]["met"] for m in CRC_MODES) else 1
    return 0


def write_results(
    rows: list[Contestant],
    summary: dict[str, Any],
    desc: str,
    nbytes: int,
    args: argparse.Namespace,
    argv: Sequence[str],
) -> None:
    """bench/results/bench_reader.json: the reader's MB/s in each CRC mode beside rustboard's."""
    by = {(c.impl, c.crc_mode): c for c in rows}
    figures = []
    for mode in CRC_MODES:
        boardd, rust = by.get(("boardd", mode)), by.get(("rustboard", mode))
        b = _median(boardd, "mb_per_s") if boardd else None
        if b is None:
            continue
        figures.append(
            results.figure(
                f"read every event file, CRC {mode}",
                b,
                _median(rust, "mb_per_s") if rust else None,
                unit="MB/s",
                better="higher",
                target=f"≥ {TARGET_MB_PER_S:.0f} MB/s on one core",
                met=summary["target"][mode]["met"],
            )
        )
    results.write(
        args.results,
        "bench_reader",
        title="Reading event files",
        anchor="TensorBoard's Rust data server (rustboard --reload once, both cores)",
        workload=f"{desc}, {nbytes / 1e6:.1f} MB; {args.repeat} round(s), medians; boardd's "
        "reader on one core, the page cache warm",
        figures=figures,
        detail=summary,
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
