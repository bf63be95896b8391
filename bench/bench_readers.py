"""Readers never slow the writer: freshness and answer times of ``boardd serve`` under a live
writer and many readers at once.

A writer process appends scalars to 64 runs at 50 points per second each (one record per run
every 20 ms, written straight to the event files, as training jobs flushing every step), while
``boardd serve`` (a subprocess) follows the logdir. The readers, in processes of their own:

- 16 pollers, each asking ``/api/v1/scalars?tag=…&downsample=500`` over every run, then waiting
  ``--poll-interval`` seconds (0: at once again);
- 4 streams (``/api/v1/stream``): each event carries the point's wall time, written by the
  writer the moment it wrote the record, so *freshness* (write → visible) is the event's
  arrival minus that wall time (one machine, one clock);
- a probe asking one series (one run, one tag) every 200 ms: the answer time a dashboard's
  single chart sees.

The anchor is boardd itself without the readers: the first ``--baseline`` seconds run the
writer and one stream alone, and the ratio of the loaded freshness p99 to the unloaded one is
printed. The daemon's CPU (all its processes) is sampled from ``/proc``: a daemon that uses the
machine's second core shows more than 1.0 cores.

Targets: freshness p99 ≤ 1 s in every minute of the load (flat over time), the probe's p99
≤ 100 ms, more than one core used by the daemon, and no point lost (every run's last step
visible once the writer stops). ``--minutes`` sets the load's length (10 by default);
``--quick`` is a 2-minute run with a 30-second baseline.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import results  # noqa: E402  (bench/, put on the path above)
from anchors import (  # noqa: E402  (bench scripts run as plain files, not as a package)
    boardd_serve_argv,
    child_env,
    exited,
    percentile,
    process_group,
    read_port_file,
    spawn,
    stop_process,
)

TAG = "load/value"
RUNS = 64
RATE = 50.0
POLLERS = 16
STREAMS = 4
DOWNSAMPLE = 500
PROBE_EVERY = 0.2
TARGET_FRESH_P99_S = 1.0
TARGET_PROBE_P99_MS = 100.0


# -- the writer --------------------------------------------------------------------------------


def _record(data: bytes) -> bytes:
    """One TFRecord: length, its masked CRC, the data, its masked CRC."""
    import google_crc32c

    def masked(b: bytes) -> int:
        crc = google_crc32c.value(b)
        return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked(header)) + data + struct.pack("<I", masked(data))


def _writer_child(logdir: str, runs: int, rate: float) -> int:
    """Appends one scalar per run every 1/rate seconds until stdin closes; prints the last
    step written."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    files = []
    for i in range(runs):
        run_dir = Path(logdir) / f"run{i:02d}"
        run_dir.mkdir(parents=True, exist_ok=True)
        f = open(run_dir / f"events.out.tfevents.{int(time.time())}.bench", "ab", buffering=0)  # noqa: SIM115
        f.write(
            _record(
                event_pb2.Event(
                    wall_time=time.time(), file_version="brain.Event:2"
                ).SerializeToString()
            )
        )
        files.append(f)
    stop = threading.Event()

    def watch_stdin() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    print("ready", flush=True)
    period = 1.0 / rate
    step = 0
    next_tick = time.monotonic()
    while not stop.is_set():
        for f in files:
            value = summary_pb2.Summary.Value(tag=TAG, simple_value=float(step % 1000) / 1000)
            event = event_pb2.Event(
                wall_time=time.time(), step=step, summary=summary_pb2.Summary(value=[value])
            )
            f.write(_record(event.SerializeToString()))
        step += 1
        next_tick += period
        delay = next_tick - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            next_tick = time.monotonic()  # behind: never burst to catch up
    for f in files:
        f.close()
    print(json.dumps({"last_step": step - 1}), flush=True)
    return 0


# -- the readers -------------------------------------------------------------------------------


class Minutes:
    """Samples filed by the minute of the load they fell in."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.lock = threading.Lock()
        self.by_minute: dict[int, list[float]] = {}

    def add(self, when: float, value: float) -> None:
        minute = int((when - self.start) // 60)
        with self.lock:
            self.by_minute.setdefault(minute, []).append(value)

    def summary(self) -> dict[str, dict[str, float]]:
        with self.lock:
            return {
                str(m): {
                    "n": len(v),
                    "p50": percentile(v, 50),
                    "p99": percentile(v, 99),
                    "max": max(v),
                }
                for m, v in sorted(self.by_minute.items())
            }


def _stream(port: int, fresh: Minutes, stop: threading.Event, counts: list[int]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", "/api/v1/stream")
    response = connection.getresponse()
    if response.status != 200:
        raise SystemExit(f"stream: {response.status} {response.read()[:200]!r}")
    while not stop.is_set():
        line = response.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        now = time.time()
        event = json.loads(line[6:])
        wall = event.get("wall_time")
        if wall is not None:
            fresh.add(time.monotonic(), now - float(wall))
            counts[0] += 1
    connection.close()


def _poll(port: int, path: str, every: float, times: Minutes, stop: threading.Event) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    while not stop.is_set():
        started = time.monotonic()
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"{path}: {response.status}")
        times.add(started, time.monotonic() - started)
        left = every - (time.monotonic() - started)
        if left > 0:
            stop.wait(left)
    connection.close()


def _readers_child(
    port: int, seconds: float, streams: int, pollers: int, poll_interval: float
) -> int:
    """Runs the readers for ``seconds``; prints one JSON line of per-minute figures."""
    start = time.monotonic()
    stop = threading.Event()
    fresh, polls, probes = Minutes(start), Minutes(start), Minutes(start)
    counts = [0]
    all_runs = "/api/v1/scalars?" + urllib.parse.urlencode(
        {"plugin": "scalars", "tag": TAG, "downsample": DOWNSAMPLE}
    )
    one = "/api/v1/scalars?" + urllib.parse.urlencode(
        {"plugin": "scalars", "tag": TAG, "run": "run00", "downsample": DOWNSAMPLE}
    )
    threads = [
        threading.Thread(target=_stream, args=(port, fresh, stop, counts), daemon=True)
        for _ in range(streams)
    ]
    threads += [
        threading.Thread(
            target=_poll, args=(port, all_runs, poll_interval, polls, stop), daemon=True
        )
        for _ in range(pollers)
    ]
    threads.append(
        threading.Thread(target=_poll, args=(port, one, PROBE_EVERY, probes, stop), daemon=True)
    )
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    print(
        json.dumps(
            {
                "freshness_s": fresh.summary(),
                "poll_s": polls.summary(),
                "probe_s": probes.summary(),
                "events": counts[0],
            }
        ),
        flush=True,
    )
    return 0


# -- the daemon's CPU --------------------------------------------------------------------------


def _cpu_seconds(group: int) -> float:
    """User + system CPU seconds of every process in the process group ``group``."""
    ticks = sum(int(f[11]) + int(f[12]) for f in process_group(group).values())
    return ticks / os.sysconf("SC_CLK_TCK")


def _rss_mib(group: int) -> float:
    """The resident size of every process in the process group ``group``, MiB."""
    total = 0
    for pid in process_group(group):
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


# -- the run -----------------------------------------------------------------------------------


def _readers(
    port: int, seconds: float, streams: int, pollers: int, interval: float, env: dict[str, str]
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            __file__,
            "_readers",
            str(port),
            str(seconds),
            str(streams),
            str(pollers),
            str(interval),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def _last_steps(port: int) -> dict[str, int]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    query = urllib.parse.urlencode({"plugin": "scalars", "tag": TAG, "downsample": 2})
    connection.request("GET", f"/api/v1/scalars?{query}")
    body = json.loads(connection.getresponse().read())
    connection.close()
    return {run: max(p["step"] for p in tags[TAG]) for run, tags in body.items() if TAG in tags}


def run(args: argparse.Namespace) -> int:
    env = child_env()
    workdir = Path(tempfile.mkdtemp(prefix="boardd-bench-readers-"))
    logdir = workdir / "logs"
    logdir.mkdir()
    port_file = workdir / "port"
    server = writer = None
    try:
        writer = subprocess.Popen(
            [sys.executable, __file__, "_writer", str(logdir), str(args.runs), str(args.rate)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert writer.stdout is not None and writer.stdin is not None
        if writer.stdout.readline().strip() != "ready":
            raise SystemExit("the writer did not start")
        argv = boardd_serve_argv(logdir, port_file, workdir / "store.sqlite")
        server = spawn([*argv, *args.serve_arg], workdir / "serve.log", env)
        deadline = time.monotonic() + 60
        while (port := read_port_file(port_file)) is None:
            if exited(server, 0.05) or time.monotonic() > deadline:
                raise SystemExit(f"boardd did not start:\n{(workdir / 'serve.log').read_text()}")
        print(
            f"boardd on port {port}; writer: {args.runs} runs x {args.rate:g} points/s; "
            f"readers: {args.pollers} pollers (every {args.poll_interval:g} s), "
            f"{args.streams} streams, 1 probe",
            flush=True,
        )
        time.sleep(5)  # the catch-up of what was written before the start

        print(f"baseline: writer and one stream, {args.baseline:g} s", flush=True)
        baseline = _readers(port, args.baseline, 1, 0, 0, env)
        base_out = json.loads(baseline.communicate()[0])

        seconds = args.minutes * 60
        print(f"load: {args.minutes:g} min", flush=True)
        cpu_before, t_before = _cpu_seconds(server.pid), time.monotonic()
        load = _readers(port, seconds, args.streams, args.pollers, args.poll_interval, env)
        cpu_minutes: list[tuple[float, float]] = []
        while load.poll() is None:
            time.sleep(min(60.0, seconds))
            cpu_now, t_now = _cpu_seconds(server.pid), time.monotonic()
            cpu_minutes.append(((cpu_now - cpu_before) / (t_now - t_before), _rss_mib(server.pid)))
            cpu_before, t_before = cpu_now, t_now
        load_out = json.loads(load.communicate()[0])

        writer.stdin.close()
        last = json.loads(writer.stdout.readline())["last_step"]
        writer.wait(30)
        deadline = time.monotonic() + 60
        while True:
            seen = _last_steps(port)
            short = {r: s for r, s in seen.items() if s != last}
            if len(seen) == args.runs and not short:
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        if writer is not None and writer.poll() is None:
            writer.kill()
        if server is not None:
            stop_process(server)
        if args.keep:
            print(f"kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    return report(args, base_out, load_out, cpu_minutes, last, seen)


def report(
    args: argparse.Namespace,
    base: dict[str, Any],
    load: dict[str, Any],
    cpu_minutes: list[tuple[float, float]],
    last: int,
    seen: dict[str, int],
) -> int:
    def ms(x: float) -> str:
        return f"{x * 1000:8.1f}"

    base_fresh = base["freshness_s"]
    base_p99 = max((m["p99"] for m in base_fresh.values()), default=math.nan)
    base_p50 = percentile([m["p50"] for m in base_fresh.values()], 50)
    print()
    print(f"baseline (no readers): freshness p50 {ms(base_p50)} ms, p99 {ms(base_p99)} ms")
    print()
    print("minute  fresh p50  fresh p99  fresh max   poll p50   poll p99  probe p99  cpu  RSS MiB")
    fresh, polls, probes = load["freshness_s"], load["poll_s"], load["probe_s"]
    worst_fresh = 0.0
    worst_probe = 0.0
    # A last sample may fall just past the load's end: minutes of the load only.
    for minute in sorted((m for m in fresh if int(m) < math.ceil(args.minutes)), key=int):
        f = fresh[minute]
        p = polls.get(minute, {"p50": math.nan, "p99": math.nan})
        q = probes.get(minute, {"p99": math.nan})
        cpu, rss = cpu_minutes[int(minute)] if int(minute) < len(cpu_minutes) else (math.nan,) * 2
        worst_fresh = max(worst_fresh, f["p99"])
        worst_probe = max(worst_probe, q["p99"])
        print(
            f"{int(minute) + 1:6d} {ms(f['p50'])}   {ms(f['p99'])}   {ms(f['max'])}   "
            f"{ms(p['p50'])}   {ms(p['p99'])}   {ms(q['p99'])} {cpu:4.2f} {rss:8.1f}"
        )
    cores = max((c for c, _ in cpu_minutes), default=math.nan)
    lost = {r: last - s for r, s in seen.items() if s != last}
    missing = args.runs - len(seen)
    print()
    print(
        f"freshness p99, worst minute: {worst_fresh * 1000:.1f} ms "
        f"(target <= {TARGET_FRESH_P99_S * 1000:.0f} ms); "
        f"{worst_fresh / base_p99:.2f}x the unloaded p99"
    )
    print(
        f"one series p99, worst minute: {worst_probe * 1000:.1f} ms "
        f"(target <= {TARGET_PROBE_P99_MS:.0f} ms)"
    )
    print(f"daemon CPU, busiest minute: {cores:.2f} cores (target > 1)")
    print(f"points: last step {last}; runs short of it {len(lost)}, runs missing {missing}")
    met = (
        worst_fresh <= TARGET_FRESH_P99_S
        and worst_probe * 1000 <= TARGET_PROBE_P99_MS
        and cores > 1.0
        and not lost
        and not missing
    )
    print("targets: " + ("met" if met else "MISSED"))
    results.write(
        args.results,
        "bench_readers",
        title="Readers never slow the writer: freshness under many readers",
        anchor="boardd itself with the writer and one stream, no readers (the baseline)",
        workload=f"{args.runs} runs written at {args.rate:g} points/s each; {args.pollers} "
        f"pollers (downsample={DOWNSAMPLE} over every run, every {args.poll_interval:g} s), "
        f"{args.streams} streams and a one-series probe, for {args.minutes:g} minutes",
        figures=[
            results.figure(
                "freshness p99, worst minute",
                worst_fresh * 1000,
                base_p99 * 1000,
                unit="ms",
                better="lower",
                target=f"≤ {TARGET_FRESH_P99_S * 1000:.0f} ms in every minute",
                met=worst_fresh <= TARGET_FRESH_P99_S,
            ),
            results.figure(
                "one series p99, worst minute",
                worst_probe * 1000,
                unit="ms",
                better="lower",
                target=f"≤ {TARGET_PROBE_P99_MS:.0f} ms",
                met=worst_probe * 1000 <= TARGET_PROBE_P99_MS,
            ),
            results.figure(
                "daemon CPU, busiest minute",
                cores,
                unit="cores",
                better="higher",
                target="> 1 (the second core used)",
                met=cores > 1.0,
            ),
            results.figure(
                "runs short of the last step written",
                len(lost) + missing,
                unit="runs",
                better="lower",
                target="0",
                met=not lost and not missing,
            ),
        ],
        notes="The anchor is the freshness p99 of the same daemon without readers.",
        detail={"baseline": base, "load": load, "cpu_rss_by_minute": cpu_minutes},
    )
    return 0 if met or not args.check else 1


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_writer"]:
        return _writer_child(argv[1], int(argv[2]), float(argv[3]))
    if argv[:1] == ["_readers"]:
        return _readers_child(
            int(argv[1]), float(argv[2]), int(argv[3]), int(argv[4]), float(argv[5])
        )
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="the load's length")
    parser.add_argument(
        "--baseline",
        type=float,
        default=60.0,
        help="seconds of the writer alone (with one stream) first",
    )
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--rate", type=float, default=RATE, help="points per second per run")
    parser.add_argument("--pollers", type=int, default=POLLERS)
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=1.0,
        help="seconds each poller waits between its requests (0: none)",
    )
    parser.add_argument("--streams", type=int, default=STREAMS)
    parser.add_argument("--quick", action="store_true", help="2 minutes, 30 s of baseline")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--keep", action="store_true", help="keep the logdir and the log")
    parser.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        help="one more argument for boardd serve (repeatable)",
    )
    results.add_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.minutes, args.baseline = 2.0, 30.0
    return run(args)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
