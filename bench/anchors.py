"""The anchors boardd is measured against: rustboard's and TensorBoard's Python load of a logdir.

Each anchor runs as a child process, so its peak RSS and CPU time are its own. Later benchmarks
reuse ``rustboard_load``, ``tensorboard_python_load`` and ``run_measured``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import queue
import re
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent

# rustboard logs e.g. "Finished load cycle (17.414485ms)": Rust's Debug format of a Duration.
_FINISHED = re.compile(r"Finished load cycle \(([0-9.]+)(ns|µs|us|ms|s)\)")
_UNIT_SECONDS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


class AnchorError(RuntimeError):
    """An anchor could not be run or did not finish; the message says what to check."""


@dataclass(frozen=True)
class AnchorResult:
    """One load of a logdir by an anchor.

    ``seconds`` is wall time from spawning the process (rustboard) or from the start of the load
    call (TensorBoard Python, import time excluded) until the load finished. ``cpu_seconds`` is
    user + system time of the whole process, over all its threads.
    """

    name: str
    seconds: float
    peak_rss_bytes: int
    cpu_seconds: float
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MeasuredRun:
    """A finished child process with its output and resource usage."""

    returncode: int
    stdout: str
    stderr: str
    wall_seconds: float
    cpu_seconds: float
    peak_rss_bytes: int


@dataclass(frozen=True)
class Stats:
    """Median, minimum and maximum of repeated measurements."""

    median: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Stats:
        """Summarize ``values`` (at least one)."""
        return cls(statistics.median(values), min(values), max(values), len(values))

    def fmt(self, spec: str = ".2f") -> str:
        """``median [min-max]``, or just the value if there is one sample."""
        if self.n == 1:
            return format(self.median, spec)
        return f"{self.median:{spec}} [{self.min:{spec}}-{self.max:{spec}}]"


def rustboard_binary() -> Path:
    """Path of the rustboard binary shipped by the ``tensorboard-data-server`` package."""
    try:
        import tensorboard_data_server
    except ImportError as exc:
        raise AnchorError(
            "tensorboard-data-server is not installed: pip install tensorboard-data-server"
        ) from exc
    path = tensorboard_data_server.server_binary()
    if path is None:
        raise AnchorError("tensorboard-data-server ships no binary for this platform")
    return Path(path)


def rustboard_load(
    logdir: Path,
    samples_per_plugin: str | None = None,
    *,
    checksum: bool = False,
    timeout: float = 900.0,
) -> AnchorResult:
    """Load ``logdir`` once with rustboard; time from spawn to "Finished load cycle".

    ``checksum=True`` passes ``--checksum`` (verify every record's CRC), else ``--no-checksum``
    (rustboard's default: verify only when a record fails to parse). The server binds to
    127.0.0.1 on a free port and is stopped by closing its stdin once the load is done.
    """
    argv = [
        str(rustboard_binary()),
        "--logdir",
        str(logdir),
        "--reload",
        "once",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--die-after-stdin",
        "--checksum" if checksum else "--no-checksum",
        "-v",
    ]
    if samples_per_plugin:
        argv += ["--samples-per-plugin", samples_per_plugin]
    lines: queue.Queue[str | None] = queue.Queue()
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    assert proc.stderr is not None and proc.stdin is not None
    # Drain stderr in a thread for the whole life of the server so it never blocks on a full
    # pipe, and so the main thread can wait for the line with a timeout.
    pump = threading.Thread(target=_pump_lines, args=(proc.stderr, lines), daemon=True)
    pump.start()
    log: list[str] = []
    cycle_seconds: float | None = None
    try:
        deadline = started + timeout
        while cycle_seconds is None:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise AnchorError(f"rustboard did not finish loading {logdir} in {timeout:.0f} s")
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                tail = "".join(log[-10:])
                raise AnchorError(f"rustboard exited before finishing its load:\n{tail}")
            log.append(line)
            match = _FINISHED.search(line)
            if match:
                cycle_seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        seconds = time.perf_counter() - started
        # VmHWM now, before the process starts tearing down; ru_maxrss after exit agrees but
        # is read too in case /proc is not there.
        hwm = _vm_hwm_bytes(proc.pid)
        proc.stdin.close()
        usage = _wait_rusage(proc, timeout=30.0)
    finally:
        if proc.returncode is None:
            proc.kill()
            _wait_rusage(proc, timeout=30.0)
        pump.join(timeout=5.0)
    peak = max(hwm or 0, usage.ru_maxrss * 1024)
    return AnchorResult(
        name="rustboard",
        seconds=seconds,
        peak_rss_bytes=peak,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        detail={
            "load_cycle_seconds": cycle_seconds,
            "checksum": checksum,
            "samples_per_plugin": samples_per_plugin or "",
        },
    )


def tensorboard_python_load(logdir: Path, *, timeout: float = 3600.0) -> AnchorResult:
    """Load ``logdir`` with TensorBoard's Python EventMultiplexer, as ``tensorboard`` does.

    Size guidance is TensorBoard's default (data_ingester's DEFAULT_SIZE_GUIDANCE and
    DEFAULT_TENSOR_SIZE_GUIDANCE, one reload thread). The load runs in a child process; its
    wall time excludes importing tensorboard, its peak RSS and CPU time are the whole child's.
    """
    argv = [sys.executable, str(Path(__file__).resolve()), "_tensorboard-child", str(logdir)]
    run = run_measured(argv, timeout=timeout)
    if run.returncode != 0:
        raise AnchorError(f"TensorBoard's Python loader failed:\n{run.stderr[-2000:]}")
    report = json.loads(run.stdout.strip().splitlines()[-1])
    return AnchorResult(
        name="tensorboard-python",
        seconds=float(report["seconds"]),
        peak_rss_bytes=run.peak_rss_bytes,
        cpu_seconds=run.cpu_seconds,
        detail={"runs": report["runs"], "tags": report["tags"]},
    )


def _tensorboard_child(logdir: str) -> int:
    """Child side of tensorboard_python_load: load, then print a JSON line."""
    from tensorboard.backend.event_processing import data_ingester, plugin_event_multiplexer

    started = time.perf_counter()
    multiplexer = plugin_event_multiplexer.EventMultiplexer(
        size_guidance=data_ingester.DEFAULT_SIZE_GUIDANCE,
        tensor_size_guidance=dict(data_ingester.DEFAULT_TENSOR_SIZE_GUIDANCE),
        max_reload_threads=1,
    )
    multiplexer.AddRunsFromDirectory(logdir)
    multiplexer.Reload()
    seconds = time.perf_counter() - started
    runs = multiplexer.Runs()
    tags = sum(len(names) for kinds in runs.values() for names in kinds.values() if names)
    print(json.dumps({"seconds": seconds, "runs": len(runs), "tags": tags}))
    return 0


def run_measured(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 3600.0,
) -> MeasuredRun:
    """Run ``argv`` to completion and return its output, wall time, CPU time and peak RSS."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [
        threading.Thread(target=_read_all, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_read_all, args=(proc.stderr, err), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        usage = _wait_rusage(proc, timeout=timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            _wait_rusage(proc, timeout=30.0)
    wall = time.perf_counter() - started
    for reader in readers:
        reader.join(timeout=10.0)
    assert proc.returncode is not None
    return MeasuredRun(
        returncode=proc.returncode,
        stdout=b"".join(out).decode("utf-8", "replace"),
        stderr=b"".join(err).decode("utf-8", "replace"),
        wall_seconds=wall,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        peak_rss_bytes=usage.ru_maxrss * 1024,
    )


def _read_all(stream: Any, sink: list[bytes]) -> None:
    with stream:
        for chunk in iter(lambda: stream.read(65536), b""):
            sink.append(chunk)


def _pump_lines(stream: Any, lines: queue.Queue[str | None]) -> None:
    with stream:
        for line in stream:
            lines.put(line)
    lines.put(None)


def _wait_rusage(proc: subprocess.Popen[Any], *, timeout: float) -> resource.struct_rusage:
    """Reap ``proc`` with wait4 (Popen.wait would discard the child's rusage)."""
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return usage
        if time.monotonic() >= deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            raise AnchorError(f"{proc.args!r} did not finish in {timeout:.0f} s; killed it")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _vm_hwm_bytes(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def total_bytes(logdir: Path) -> int:
    """Bytes in all event files under ``logdir``."""
    return sum(p.stat().st_size for p in Path(logdir).rglob("*tfevents*") if p.is_file())


def warm_page_cache(logdir: Path) -> None:
    """Read every event file once so that no contestant pays for the first disk read."""
    for path in sorted(Path(logdir).rglob("*tfevents*")):
        with open(path, "rb") as f:
            while f.read(1 << 22):
                pass


def _resolve_logdir(args: argparse.Namespace) -> Path:
    if args.logdir is not None:
        return Path(args.logdir)
    sys.path.insert(0, str(BENCH_DIR))
    import workload

    return workload.small_workload() if args.small else workload.standard_workload()


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: load a workload with an anchor N times; print median and min-max."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_tensorboard-child"]:
        return _tensorboard_child(argv[1])
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("anchor", choices=["rustboard", "tensorboard"])
    parser.add_argument("--logdir", type=Path, help="logdir to load (default: standard workload)")
    parser.add_argument("--small", action="store_true", help="use the small workload")
    parser.add_argument("--repeat", type=int, default=1, help="loads to run (default 1)")
    parser.add_argument("--checksum", action="store_true", help="rustboard: --checksum")
    parser.add_argument("--samples-per-plugin", help="rustboard: e.g. scalars=all")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    logdir = _resolve_logdir(args)
    nbytes = total_bytes(logdir)
    warm_page_cache(logdir)
    results: list[AnchorResult] = []
    for i in range(args.repeat):
        if args.anchor == "rustboard":
            result = rustboard_load(logdir, args.samples_per_plugin, checksum=args.checksum)
        else:
            result = tensorboard_python_load(logdir)
        results.append(result)
        print(
            f"  [{i + 1}/{args.repeat}] {result.name}: {result.seconds:.2f} s, "
            f"{result.peak_rss_bytes / 2**20:.0f} MiB peak RSS",
            file=sys.stderr,
        )
    seconds = Stats.of([r.seconds for r in results])
    mbps = Stats.of([nbytes / 1e6 / r.seconds for r in results])
    rss = Stats.of([r.peak_rss_bytes / 2**20 for r in results])
    cpu = Stats.of([r.cpu_seconds for r in results])
    if args.json:
        print(
            json.dumps(
                {
                    "logdir": str(logdir),
                    "total_bytes": nbytes,
                    "anchor": args.anchor,
                    "seconds": asdict(seconds),
                    "mb_per_s": asdict(mbps),
                    "peak_rss_mib": asdict(rss),
                    "cpu_seconds": asdict(cpu),
                    "samples": [asdict(r) for r in results],
                },
                indent=2,
            )
        )
        return 0
    print(f"{results[0].name} on {logdir} ({nbytes / 1e6:.1f} MB), {args.repeat} load(s)")
    print("  median [min-max]")
    print(f"  load time    {seconds.fmt()} s")
    print(f"  throughput   {mbps.fmt('.1f')} MB/s")
    print(f"  CPU time     {cpu.fmt()} s (all threads)")
    print(f"  peak RSS     {rss.fmt('.0f')} MiB")
    return 0


# -- helpers shared by the server benchmarks ---------------------------------------------


def child_env() -> dict[str, str]:
    """The environment of boardd children: ``src/`` first on the path, as for every benchmark."""
    env = dict(os.environ)
    src = str(REPO_DIR / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def console_script(name: str, module: str) -> list[str]:
    """The console script ``name`` next to this interpreter, else ``python -m module``."""
    script = Path(sys.executable).parent / name
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", module]


def boardd_serve_argv(logdir: Path, port_file: Path, db: Path) -> list[str]:
    """``boardd serve LOGDIR`` on loopback, a free port written to ``port_file``, store ``db``."""
    return [
        *console_script("boardd", "boardd"),
        "serve",
        str(logdir),
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--port-file",
        str(port_file),
        "--db",
        str(db),
    ]


def read_port_file(path: Path) -> int | None:
    """The port a server wrote to ``path``, or None while it has not (fully) written it."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def spawn(argv: Sequence[str], log_path: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Starts a server in a session of its own: stop_process can then reach its children."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def stop_process(
    proc: subprocess.Popen[Any], *, term: bool = True, group: bool = True, grace: float = 10.0
) -> None:
    """SIGTERM (if ``term``), wait ``grace`` seconds, SIGKILL; then whatever is left of its group.

    ``group``: the process leads a session of its own (``spawn``), and its children (rustboard
    under tensorboard) are killed too once it has exited.
    """
    if term:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
    done = exited(proc, grace)
    if not done:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        done = exited(proc, 10.0)
    if group and done and proc.returncode is None:
        # Not reaped yet, so the leader's pid (the group's id) cannot have been reused: this
        # reaches only what the server itself started.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10.0)


def exited(proc: subprocess.Popen[Any], timeout: float) -> bool:
    """Wait for ``proc`` to exit without reaping it (waitid with WNOWAIT)."""
    if proc.returncode is not None:
        return True
    deadline = time.monotonic() + timeout
    while True:
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        if info is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def process_group(group: int) -> dict[int, list[str]]:
    """The processes of process group ``group`` (a server started by :func:`spawn` leads
    one, its workers included): pid → the fields of ``/proc/PID/stat`` after the command
    name (index 2 is the group, 11 and 12 the user and system CPU ticks)."""
    members: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == group:
            members[int(entry)] = fields
    return members


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); ``q`` in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    if ordered[high] == math.inf:
        return math.inf if position > low or ordered[low] == math.inf else ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


if __name__ == "__main__":
    sys.exit(main())
