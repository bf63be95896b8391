"""Cold ingest, restart, store size and peak RSS of ``boardd ingest``, side by side with rustboard.

Every boardd figure is a whole ``boardd ingest LOGDIR --db FILE --json`` child process: wall time
from spawn to exit, CPU time, and the peak resident memory of its process tree (workers
included). In the same round, next to each boardd load, rustboard loads the same logdir with
``--reload once`` and the matching sampling; rounds alternate who goes first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import results  # noqa: E402  (bench/, put on the path above)
from anchors import (  # noqa: E402  (bench scripts run as plain files, not as a package)
    AnchorError,
    MeasuredRun,
    Stats,
    child_env,
    console_script,
    run_measured,
    rustboard_load,
    total_bytes,
    warm_page_cache,
)

# rustboard's own reservoir sizes (run.rs: scalars 1000, tensors 100, blob sequences 10), named
# plugin by plugin for what the workload holds; boardd's parser and rustboard's both take it.
RUSTBOARD_SAMPLING = "scalars=1000,histograms=100,images=10,text=100,hparams=100"
# rustboard has no "*": keeping everything means naming every plugin of the workload.
RUSTBOARD_KEEP_ALL = "scalars=all,histograms=all,images=all,text=all,hparams=all"

TARGET_RATIO_A = 1.5
TARGET_RESTART_SECONDS = 0.2
TARGET_PEAK_RSS_MIB = 150.0

# What `boardd ingest` imports before it opens the store (cli._ingest); timed as context for
# the restart figure.
INGEST_IMPORTS = (
    "import boardd.cli, boardd.reader.tfrecord, boardd.store.errors, boardd.ingest.oneshot, "
    "boardd.store.location, boardd.store.queries, boardd.store.sampling, boardd.store.session"
)


@dataclass(frozen=True)
class Config:
    """One sampling configuration: boardd's flag and the rustboard load it is compared with."""

    key: str
    title: str
    boardd_spec: str | None
    rustboard_spec: str | None

    def boardd_flag(self) -> str:
        """How boardd is called, for the table."""
        return f"--samples-per-plugin {self.boardd_spec}" if self.boardd_spec else "(no flag)"

    def rustboard_flag(self) -> str:
        """How rustboard is called, for the table."""
        if self.rustboard_spec:
            return f"--samples-per-plugin {self.rustboard_spec}"
        return "(its defaults)"


CONFIGS: dict[str, Config] = {
    "a": Config("a", "rustboard's sampling", RUSTBOARD_SAMPLING, RUSTBOARD_SAMPLING),
    "b": Config("b", "boardd's defaults", None, None),
    "c": Config("c", "keep everything", "*=all", None),
}
# Context only: rustboard also keeping everything, next to (c).
KEEP_ALL_ANCHOR = Config("c", "keep everything", "*=all", RUSTBOARD_KEEP_ALL)


# --- measuring a process tree -----------------------------------------------------------------


@dataclass(frozen=True)
class TreeUsage:
    """Resource use of this process's descendants while a :class:`TreeSampler` ran."""

    peak_rss_bytes: int
    peak_pss_bytes: int
    cpu_seconds: float
    max_processes: int


class TreeSampler:
    """Samples the summed RSS and CPU time of all descendants of this process, every few ms.

    ``ru_maxrss`` of a child is the largest single process; a boardd that decodes in worker
    processes holds memory in several at once, so the sum over the tree is what the machine
    pays. Summed RSS counts pages shared between forked processes once per process (an upper
    bound); summed PSS (``smaps_rollup``) shares them out instead. Only one measured child tree
    may run at a time.
    """

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tree-sampler", daemon=True)
        self._peak_rss = 0
        self._peak_pss = 0
        self._cpu: dict[int, float] = {}
        self._max_processes = 0
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._tick = float(os.sysconf("SC_CLK_TCK"))

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    def usage(self) -> TreeUsage:
        """What was seen (call after the ``with`` block)."""
        return TreeUsage(
            self._peak_rss, self._peak_pss, sum(self._cpu.values()), self._max_processes
        )

    def _loop(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            self._sample(me)
            self._stop.wait(self.interval)

    def _sample(self, root: int) -> None:
        stats: dict[int, tuple[int, float, int]] = {}  # pid -> (ppid, cpu s, rss bytes)
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    raw = f.read()
            except OSError:
                continue  # gone meanwhile
            # The command name may hold spaces and parentheses: split after the last ')'.
            fields = raw.rsplit(b")", 1)[1].split()
            if fields[0] == b"Z":
                continue  # a zombie holds no memory; its CPU was counted while it ran
            cpu = (int(fields[11]) + int(fields[12])) / self._tick
            stats[int(name)] = (int(fields[1]), cpu, int(fields[21]) * self._page)
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in stats.items():
            children.setdefault(ppid, []).append(pid)
        tree: list[int] = []
        todo = list(children.get(root, []))
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo.extend(children.get(pid, []))
        rss = pss = 0
        for pid in tree:
            _, cpu, pid_rss = stats[pid]
            rss += pid_rss
            pss += _pss_bytes(pid)
            self._cpu[pid] = max(cpu, self._cpu.get(pid, 0.0))
        self._peak_rss = max(self._peak_rss, rss)
        self._peak_pss = max(self._peak_pss, pss)
        self._max_processes = max(self._max_processes, len(tree))


def _pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            raw = f.read()
    except OSError:
        return 0
    for line in raw.splitlines():
        if line.startswith(b"Pss:"):
            return int(line.split()[1]) * 1024
    return 0


@dataclass(frozen=True)
class Measured:
    """A finished child with its tree's usage folded in."""

    run: MeasuredRun
    peak_rss_bytes: int
    peak_pss_bytes: int
    cpu_seconds: float
    max_processes: int


def measure(argv: Sequence[str], *, env: dict[str, str], timeout: float) -> Measured:
    """Run ``argv`` to completion; peak RSS and CPU are the larger of wait4's and the tree's."""
    with TreeSampler() as sampler:
        run = run_measured(argv, env=env, timeout=timeout)
    tree = sampler.usage()
    return Measured(
        run=run,
        peak_rss_bytes=max(run.peak_rss_bytes, tree.peak_rss_bytes),
        peak_pss_bytes=tree.peak_pss_bytes,
        cpu_seconds=max(run.cpu_seconds, tree.cpu_seconds),
        max_processes=max(1, tree.max_processes),
    )


def store_files(db: Path) -> dict[str, int]:
    """Sizes of the store's files (db, -wal, -shm); missing ones count 0."""
    sizes = {}
    for suffix in ("", "-wal", "-shm"):
        path = Path(str(db) + suffix)
        sizes[suffix.lstrip("-") or "db"] = path.stat().st_size if path.exists() else 0
    return sizes


def remove_store(db: Path) -> None:
    """Delete a store and its side files, so the next ingest starts cold."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(db) + suffix).unlink(missing_ok=True)


# --- one measurement of each kind -------------------------------------------------------------


def boardd_ingest(
    logdir: Path, db: Path, config: Config, crc: str, timeout: float
) -> dict[str, Any]:
    """One ``boardd ingest --json`` run; returns a sample (seconds, RSS, sizes, its report)."""
    argv = [
        *console_script("boardd", "boardd"),
        "ingest",
        str(logdir),
        "--db",
        str(db),
        "--json",
        "--crc",
        crc,
    ]
    if config.boardd_spec:
        argv += ["--samples-per-plugin", config.boardd_spec]
    m = measure(argv, env=child_env(), timeout=timeout)
    if m.run.returncode != 0:
        raise AnchorError(
            f"boardd ingest ({config.key}) exited with {m.run.returncode}:\n{m.run.stderr[-3000:]}"
        )
    report = json.loads(m.run.stdout.strip().splitlines()[-1])
    sizes = store_files(db)
    return {
        "seconds": m.run.wall_seconds,
        "in_process_seconds": float(report["seconds"]),
        "cpu_seconds": m.cpu_seconds,
        "peak_rss_mib": m.peak_rss_bytes / 2**20,
        "peak_pss_mib": m.peak_pss_bytes / 2**20,
        "largest_process_rss_mib": m.run.peak_rss_bytes / 2**20,
        "processes": m.max_processes,
        "store_bytes": sizes["db"] + sizes["wal"],
        "store_files": sizes,
        "report": report,
    }


def rustboard_sample(logdir: Path, config: Config, checksum: bool) -> dict[str, Any]:
    """One rustboard ``--reload once`` load as a sample."""
    result = rustboard_load(logdir, config.rustboard_spec, checksum=checksum)
    return {
        "seconds": result.seconds,
        "cpu_seconds": result.cpu_seconds,
        "peak_rss_mib": result.peak_rss_bytes / 2**20,
        "load_cycle_seconds": result.detail["load_cycle_seconds"],
    }


CONTEXT_COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    'python -c "import boardd.cli"': ["-c", "import boardd.cli"],
    "python -c <imports of boardd ingest>": ["-c", INGEST_IMPORTS],
}


def python_context(timeout: float) -> dict[str, dict[str, Any]]:
    """Interpreter start and import times, the floor under any ``boardd`` command."""
    out = {}
    for label, args in CONTEXT_COMMANDS.items():
        m = measure([sys.executable, *args], env=child_env(), timeout=timeout)
        if m.run.returncode != 0:
            raise AnchorError(f"{label} failed:\n{m.run.stderr[-2000:]}")
        out[label] = {"seconds": m.run.wall_seconds, "peak_rss_mib": m.peak_rss_bytes / 2**20}
    return out


# --- rounds -----------------------------------------------------------------------------------


@dataclass
class Row:
    """The samples of one configuration over the rounds."""

    config: Config
    cold: list[dict[str, Any]] = field(default_factory=list)
    restart: list[dict[str, Any]] = field(default_factory=list)
    rustboard: list[dict[str, Any]] = field(default_factory=list)
    rustboard_all: list[dict[str, Any]] = field(default_factory=list)


def stat(samples: Sequence[dict[str, Any]], key: str) -> Stats | None:
    """Median [min-max] of ``key`` over ``samples`` (None if there are none)."""
    values = [float(s[key]) for s in samples if key in s]
    return Stats.of(values) if values else None


def ratios(
    boardd: Sequence[dict[str, Any]], anchor: Sequence[dict[str, Any]], key: str
) -> list[float]:
    """Per-round ratios boardd / anchor of ``key`` (rounds paired by index)."""
    return [float(b[key]) / float(r[key]) for b, r in zip(boardd, anchor, strict=False) if r[key]]


def run_rounds(
    args: argparse.Namespace, logdir: Path, store_dir: Path
) -> tuple[list[Row], list[dict[str, dict[str, Any]]]]:
    """All rounds: per config, a cold ingest, a restart, and the paired rustboard load(s)."""
    rows = [Row(CONFIGS[key]) for key in args.config]
    context: list[dict[str, dict[str, Any]]] = []
    checksum = args.crc == "always"
    for round_no in range(1, args.repeat + 1):
        boardd_first = round_no % 2 == 1
        for row in rows:
            db = store_dir / f"store-{row.config.key}.sqlite"

            def boardd_side(row: Row = row, db: Path = db) -> None:
                remove_store(db)
                row.cold.append(boardd_ingest(logdir, db, row.config, args.crc, args.timeout))
                row.restart.append(boardd_ingest(logdir, db, row.config, args.crc, args.timeout))
                if row.restart[-1]["report"].get("bytes_read"):
                    print(
                        f"  warning: restart of ({row.config.key}) read "
                        f"{row.restart[-1]['report']['bytes_read']} bytes; expected none",
                        file=sys.stderr,
                    )

            def rustboard_side(row: Row = row) -> None:
                if args.skip_rustboard:
                    return
                row.rustboard.append(rustboard_sample(logdir, row.config, checksum))
                if row.config.key == "c" and not args.skip_rustboard_all:
                    row.rustboard_all.append(rustboard_sample(logdir, KEEP_ALL_ANCHOR, checksum))

            for side in (
                (boardd_side, rustboard_side) if boardd_first else (rustboard_side, boardd_side)
            ):
                side()
            _progress(round_no, args.repeat, row)
        context.append(python_context(args.timeout))
    return rows, context


def _progress(round_no: int, rounds: int, row: Row) -> None:
    cold, restart = row.cold[-1], row.restart[-1]
    text = (
        f"  round {round_no}/{rounds} ({row.config.key}): boardd cold {cold['seconds']:.2f} s "
        f"(in-process {cold['in_process_seconds']:.2f} s, {cold['peak_rss_mib']:.0f} MiB), "
        f"restart {restart['seconds']:.3f} s"
    )
    if row.rustboard:
        rb = row.rustboard[-1]
        text += f"; rustboard {rb['seconds']:.2f} s -> ratio {cold['seconds'] / rb['seconds']:.2f}"
    print(text, file=sys.stderr)


# --- summary, table, JSON ---------------------------------------------------------------------


def summarize(rows: list[Row], context: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Ratios per round and their medians, and the verdict on each target."""
    out: dict[str, Any] = {"configs": {}, "targets": {}}
    for row in rows:
        per_round = ratios(row.cold, row.rustboard, "seconds")
        cpu_round = ratios(row.cold, row.rustboard, "cpu_seconds")
        entry: dict[str, Any] = {
            "ratio_wall_per_round": per_round,
            "ratio_wall_median": Stats.of(per_round).median if per_round else None,
            "ratio_cpu_per_round": cpu_round,
            "ratio_cpu_median": Stats.of(cpu_round).median if cpu_round else None,
        }
        if row.rustboard_all:
            all_round = ratios(row.cold, row.rustboard_all, "seconds")
            entry["ratio_wall_vs_rustboard_all_per_round"] = all_round
            entry["ratio_wall_vs_rustboard_all_median"] = Stats.of(all_round).median
        out["configs"][row.config.key] = entry
    targets = out["targets"]
    by_key = {row.config.key: row for row in rows}
    if "a" in by_key:
        ratio = out["configs"]["a"]["ratio_wall_median"]
        targets["a_time_ratio"] = {
            "limit": TARGET_RATIO_A,
            "value": ratio,
            "met": ratio is not None and ratio <= TARGET_RATIO_A,
        }
    restart_wall = {r.config.key: stat(r.restart, "seconds") for r in rows}
    restart_inproc = {r.config.key: stat(r.restart, "in_process_seconds") for r in rows}
    worst_wall = max(s.median for s in restart_wall.values() if s)
    worst_inproc = max(s.median for s in restart_inproc.values() if s)
    targets["restart_seconds"] = {
        "limit": TARGET_RESTART_SECONDS,
        "whole_process": worst_wall,
        "in_process": worst_inproc,
        "met_whole_process": worst_wall <= TARGET_RESTART_SECONDS,
        "met_in_process": worst_inproc <= TARGET_RESTART_SECONDS,
    }
    rss = {r.config.key: s.median for r in rows if (s := stat(r.cold, "peak_rss_mib"))}
    pss = {r.config.key: s.median for r in rows if (s := stat(r.cold, "peak_pss_mib"))}
    largest = {
        r.config.key: s.median for r in rows if (s := stat(r.cold, "largest_process_rss_mib"))
    }
    # Judged on the tree's summed PSS: the memory the tree really occupies. Summed RSS counts
    # every page a forked worker still shares with its parent (interpreter, libraries, the
    # heap as it was at fork) once per process; it is shown beside, as is the largest process.
    targets["peak_rss_mib"] = {
        "limit": TARGET_PEAK_RSS_MIB,
        "per_config": rss,
        "pss_per_config": pss,
        "largest_process_per_config": largest,
        "met": {key: value <= TARGET_PEAK_RSS_MIB for key, value in pss.items()},
        "met_by_summed_rss": {key: value <= TARGET_PEAK_RSS_MIB for key, value in rss.items()},
    }
    if context:
        out["python_context"] = {
            label: asdict(Stats.of([c[label]["seconds"] for c in context])) for label in context[0]
        }
    return out


def _fmt(s: Stats | None, spec: str = ".2f") -> str:
    return s.fmt(spec) if s else "-"


def print_report(
    desc: str,
    nbytes: int,
    args: argparse.Namespace,
    rows: list[Row],
    context: list[dict[str, dict[str, Any]]],
    summary: dict[str, Any],
) -> None:
    """The human-readable tables."""
    crc_note = (
        "--crc always vs rustboard --checksum"
        if args.crc == "always"
        else ("--crc on-error vs rustboard --no-checksum")
    )
    print(f"Cold ingest of {desc}")
    print(
        f"{nbytes:,} bytes ({nbytes / 1e6:.1f} MB); {args.repeat} round(s), A/B alternating; "
        f"median [min-max]; {crc_note}"
    )
    print()
    head = (
        f"{'':44} {'wall s':>18} {'in-process s':>18} {'CPU s':>18} {'MB/s':>7} "
        f"{'peak RSS MiB':>16} {'PSS':>5} {'store MiB':>10}"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        cfg = row.config
        print(f"({cfg.key}) {cfg.title}: boardd {cfg.boardd_flag()}")
        if row.rustboard:
            print(f"    rustboard {cfg.rustboard_flag()}")
        if row.rustboard_all:
            print(f"    rustboard, all kept: --samples-per-plugin {RUSTBOARD_KEEP_ALL}")
        wall = stat(row.cold, "seconds")
        mbps = nbytes / 1e6 / wall.median if wall else 0.0
        store = stat(row.cold, "store_bytes")
        pss = stat(row.cold, "peak_pss_mib")
        print(
            f"  {'boardd':42} {_fmt(wall):>18} "
            f"{_fmt(stat(row.cold, 'in_process_seconds')):>18} "
            f"{_fmt(stat(row.cold, 'cpu_seconds')):>18} "
            f"{mbps:>7.1f} {_fmt(stat(row.cold, 'peak_rss_mib'), '.0f'):>16} "
            f"{(pss.median if pss else 0):>5.0f} {(store.median / 2**20 if store else 0):>10.1f}"
        )
        for label, samples in (
            ("rustboard", row.rustboard),
            ("rustboard, all kept (context)", row.rustboard_all),
        ):
            if not samples:
                continue
            rwall = stat(samples, "seconds")
            rmbps = nbytes / 1e6 / rwall.median if rwall else 0.0
            print(
                f"  {label:42} {_fmt(rwall):>18} {'':>18} "
                f"{_fmt(stat(samples, 'cpu_seconds')):>18} {rmbps:>7.1f} "
                f"{_fmt(stat(samples, 'peak_rss_mib'), '.0f'):>16} {'':>5} {'(memory)':>10}"
            )
        entry = summary["configs"][cfg.key]
        if entry["ratio_wall_per_round"]:
            rounds_text = " ".join(f"{r:.2f}" for r in entry["ratio_wall_per_round"])
            print(
                f"  ratio boardd/rustboard wall: rounds {rounds_text} -> median "
                f"{entry['ratio_wall_median']:.2f}; CPU median {entry['ratio_cpu_median']:.2f}"
            )
        if entry.get("ratio_wall_vs_rustboard_all_per_round"):
            rounds_text = " ".join(
                f"{r:.2f}" for r in entry["ratio_wall_vs_rustboard_all_per_round"]
            )
            print(
                f"  ratio boardd/rustboard-all-kept wall: rounds {rounds_text} -> median "
                f"{entry['ratio_wall_vs_rustboard_all_median']:.2f}"
            )
        last = row.cold[-1]["report"]
        points = last["points"]
        print(
            f"  kept: {points['scalar']:,} scalar, {points['tensor']:,} tensor, "
            f"{points['blob_sequence']:,} blob-sequence points ({last['blobs']:,} blobs) in "
            f"{last['series']} series of {last['runs']} runs; boardd processes: "
            f"{max(s['processes'] for s in row.cold)}"
        )
    print()
    print(
        "wall s: spawn to exit (boardd) or to 'Finished load cycle' (rustboard). in-process s: "
        "boardd's own\n'seconds' (store open to done, no interpreter start or imports). CPU s "
        "and peak RSS/PSS cover the\nwhole process tree (summed over processes; rustboard is one "
        "process). store: db + wal\nafter exit (the store checkpoints its WAL on close)."
    )
    print()
    print("Restart with nothing new (boardd ingest again on the same store)")
    head2 = f"{'':44} {'wall s':>22} {'in-process s':>22} {'peak RSS MiB':>16}"
    print(head2)
    print("-" * len(head2))
    for row in rows:
        print(
            f"  {'(' + row.config.key + ') ' + row.config.title:42} "
            f"{_fmt(stat(row.restart, 'seconds'), '.3f'):>22} "
            f"{_fmt(stat(row.restart, 'in_process_seconds'), '.3f'):>22} "
            f"{_fmt(stat(row.restart, 'peak_rss_mib'), '.0f'):>16}"
        )
    for label in CONTEXT_COMMANDS:
        samples = [c[label] for c in context]
        print(
            f"  {label:42} {_fmt(stat(samples, 'seconds'), '.3f'):>22} {'':>22} "
            f"{_fmt(stat(samples, 'peak_rss_mib'), '.0f'):>16}"
        )
    print()
    print_targets(summary)


def print_targets(summary: dict[str, Any]) -> None:
    """One line per target with MET / NOT MET."""

    def verdict(ok: bool) -> str:
        return "MET" if ok else "NOT MET"

    targets = summary["targets"]
    print("targets")
    if "a_time_ratio" in targets:
        t = targets["a_time_ratio"]
        if t["value"] is None:
            print(f"  (a) cold ingest <= {t['limit']}x rustboard: not measured (--skip-rustboard)")
        else:
            print(
                f"  (a) cold ingest <= {t['limit']}x rustboard's time: median ratio "
                f"{t['value']:.2f} -> {verdict(t['met'])}"
            )
    t = targets["restart_seconds"]
    print(
        f"  restart with nothing new <= {t['limit']} s: whole process {t['whole_process']:.3f} s "
        f"-> {verdict(t['met_whole_process'])}; in-process {t['in_process']:.3f} s "
        f"-> {verdict(t['met_in_process'])} (worst config)"
    )
    t = targets["peak_rss_mib"]
    for key, pss in t["pss_per_config"].items():
        rss = t["per_config"].get(key, 0.0)
        print(
            f"  ({key}) peak memory <= {t['limit']:.0f} MiB: tree PSS {pss:.0f} MiB "
            f"({pss * 2**20 / 1e6:.0f} MB) -> {verdict(t['met'][key])}  [largest process RSS "
            f"{t['largest_process_per_config'].get(key, 0.0):.0f} MiB; RSS summed over the tree "
            f"{rss:.0f} MiB -> {verdict(t['met_by_summed_rss'].get(key, False))}]"
        )


def _workload(args: argparse.Namespace) -> tuple[Path, str]:
    import workload

    if args.logdir is not None:
        logdir = Path(args.logdir)
    else:
        logdir = workload.small_workload() if args.small else workload.standard_workload()
    try:
        manifest = workload.read_manifest(logdir)
    except FileNotFoundError:
        return logdir, str(logdir)
    spec = manifest.spec
    return logdir, (
        f"the {spec.name} workload ({manifest.runs} runs, {manifest.events:,} events, "
        f"{manifest.files} files)"
    )


def _configs(text: str) -> list[str]:
    keys = [k.strip().lower() for k in text.split(",") if k.strip()]
    bad = [k for k in keys if k not in CONFIGS]
    if bad or not keys:
        raise argparse.ArgumentTypeError(f"configs are a, b, c (comma separated); got {text!r}")
    return list(dict.fromkeys(keys))


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: run the ingest benchmark and print the tables (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--logdir", type=Path, help="logdir to ingest (default: standard workload)")
    parser.add_argument("--small", action="store_true", help="use the small workload")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument(
        "--config",
        type=_configs,
        default=["a", "b", "c"],
        help="a: rustboard's sampling, b: boardd's defaults, c: keep everything (default a,b,c)",
    )
    parser.add_argument(
        "--crc",
        choices=["always", "on-error"],
        default="always",
        help="boardd --crc (default always, boardd's default); rustboard gets the matching "
        "--checksum / --no-checksum",
    )
    parser.add_argument("--skip-rustboard", action="store_true", help="no rustboard loads")
    parser.add_argument(
        "--skip-rustboard-all",
        action="store_true",
        help="no context load of rustboard keeping everything next to (c)",
    )
    parser.add_argument("--store-dir", type=Path, help="where stores go (default: a temp dir)")
    parser.add_argument("--keep-stores", action="store_true", help="do not delete the stores")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per child")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    results.add_argument(parser)
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    logdir, desc = _workload(args)
    nbytes = total_bytes(logdir)
    warm_page_cache(logdir)
    own_dir = args.store_dir is None
    store_dir = Path(tempfile.mkdtemp(prefix="boardd-bench-ingest-")) if own_dir else args.store_dir
    store_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        rows, context = run_rounds(args, logdir, store_dir)
    finally:
        if not args.keep_stores:
            for key in CONFIGS:
                remove_store(store_dir / f"store-{key}.sqlite")
            if own_dir:
                shutil.rmtree(store_dir, ignore_errors=True)
    summary = summarize(rows, context)
    if args.json:
        out = {
            "workload": {"logdir": str(logdir), "description": desc, "total_bytes": nbytes},
            "rounds": args.repeat,
            "crc": args.crc,
            "boardd_command": console_script("boardd", "boardd"),
            "seconds_total": time.perf_counter() - started,
            "results": [
                {
                    "config": asdict(row.config),
                    "cold": row.cold,
                    "restart": row.restart,
                    "rustboard": row.rustboard,
                    "rustboard_all_kept": row.rustboard_all,
                }
                for row in rows
            ],
            "python_context": context,
            **summary,
        }
        print(json.dumps(out, indent=2))
    else:
        print_report(desc, nbytes, args, rows, context, summary)
    write_results(desc, nbytes, args, rows, summary, argv)
    return 0


def write_results(
    desc: str,
    nbytes: int,
    args: argparse.Namespace,
    rows: list[Row],
    summary: dict[str, Any],
    argv: Sequence[str] | None,
) -> None:
    """bench/results/bench_ingest.json: per configuration the cold ingest beside rustboard's
    load, the restart and the peak memory."""
    figures = []
    targets = summary["targets"]
    for row in rows:
        key = row.config.key
        cold, anchor = stat(row.cold, "seconds"), stat(row.rustboard, "seconds")
        judged = key == "a" and "a_time_ratio" in targets and targets["a_time_ratio"]["value"]
        figures.append(
            results.figure(
                f"({key}) {row.config.title}: cold ingest",
                cold.median if cold else None,
                anchor.median if anchor else None,
                unit="s",
                better="lower",
                target=f"≤ {TARGET_RATIO_A:g}× rustboard's time" if judged else None,
                met=targets["a_time_ratio"]["met"] if judged else None,
            )
        )
        restart = stat(row.restart, "seconds")
        figures.append(
            results.figure(
                f"({key}) {row.config.title}: restart with nothing new",
                restart.median if restart else None,
                unit="s",
                better="lower",
                target=f"≤ {TARGET_RESTART_SECONDS:g} s",
                met=None if restart is None else restart.median <= TARGET_RESTART_SECONDS,
            )
        )
        pss, rss = stat(row.cold, "peak_pss_mib"), stat(row.rustboard, "peak_rss_mib")
        figures.append(
            results.figure(
                f"({key}) {row.config.title}: peak memory (boardd: the process tree's PSS)",
                pss.median if pss else None,
                rss.median if rss else None,
                unit="MiB",
                better="lower",
                target=f"≤ {TARGET_PEAK_RSS_MIB:.0f} MiB",
                met=None if pss is None else pss.median <= TARGET_PEAK_RSS_MIB,
            )
        )
    results.write(
        args.results,
        "bench_ingest",
        title="Ingest: cold, restart, memory",
        anchor="TensorBoard's Rust data server (rustboard --reload once, in memory)",
        workload=f"{desc}, {nbytes / 1e6:.1f} MB; {args.repeat} round(s), medians; "
        f"--crc {args.crc}",
        figures=figures,
        detail=summary,
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
