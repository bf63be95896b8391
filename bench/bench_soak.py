"""Soak: the daemon's memory under a live writer and one polling client, over an hour.

``boardd serve`` (a subprocess) tails a logdir where a writer process (tensorboardX
``SummaryWriter``, as a training job) appends scalars to 8 runs at 20 points per second each,
flushing every point. One client polls every run's series in a loop through both of boardd's
scalar routes: the generic ``/api/v1/scalars`` and TensorBoard's
``/data/plugin/scalars/scalars``. The daemon's RSS (``VmRSS`` of ``/proc/PID/status``) is sampled
every few seconds.

Target: the RSS at the end is within 20 % of the RSS after the first 5 minutes,
and at most 150 MiB. There is no anchor: TensorBoard's memory under the same load is a different
question (it keeps every point in memory), so the figures are boardd's alone.

``--minutes N`` shortens the run (the reference point is then at ``min(5, N / 2)`` minutes);
``--quick`` is a 1-minute smoke run.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
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
    read_port_file,
    spawn,
    stop_process,
)

TAG = "soak/loss"
#: The load: 8 runs, 20 points per second each, one polling client.
DEFAULT_RUNS = 8
DEFAULT_RATE = 20.0
#: The targets: the end within 20 % of the reference RSS (after 5 minutes), and ≤ 150 MiB.
TARGET_DRIFT = 0.20
TARGET_MIB = 150.0
REFERENCE_MINUTES = 5.0
MIB = 2**20


# -- the writer: a child process, like 8 training jobs ---------------------------------------


def _writer_child(logdir: str, runs: int, rate: float) -> int:
    """Child side: ``runs`` SummaryWriters, each adding one point of TAG every ``1 / rate``
    seconds and flushing it, until stdin closes (or the parent dies)."""
    from tensorboardX import SummaryWriter  # type: ignore[import-untyped]

    writers = [SummaryWriter(os.path.join(logdir, f"run_{i:02d}")) for i in range(runs)]
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    period = 1.0 / rate
    start = time.monotonic()
    step = 0
    while not stop.is_set():
        for i, writer in enumerate(writers):
            writer.add_scalar(TAG, math.sin(step / 50.0 + i) + 0.001 * step, step)
            writer.flush()
        step += 1
        delay = start + step * period - time.monotonic()
        if delay > 0:
            stop.wait(delay)
    for writer in writers:
        writer.close()
    return 0


# -- the polling client -----------------------------------------------------------------------


@dataclass
class Poller:
    """One client: every run's series through both routes, round after round."""

    port: int
    runs: int
    interval: float
    requests: int = 0
    not_modified: int = 0
    errors: int = 0
    last_error: str = ""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="poller", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30.0)

    def paths(self) -> list[str]:
        out = []
        for i in range(self.runs):
            run = f"run_{i:02d}"
            q = urllib.parse.urlencode({"plugin": "scalars", "run": run, "tag": TAG})
            out.append(f"/api/v1/scalars?{q}")
            q = urllib.parse.urlencode({"run": run, "tag": TAG})
            out.append(f"/data/plugin/scalars/scalars?{q}")
        return out

    def _loop(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30.0)
        etags: dict[str, str] = {}
        paths = self.paths()
        while not self._stop.is_set():
            began = time.monotonic()
            for path in paths:
                headers = {"accept-encoding": "gzip"}
                if path in etags:
                    headers["if-none-match"] = etags[path]
                try:
                    conn.request("GET", path, headers=headers)
                    response = conn.getresponse()
                    response.read()
                except (OSError, http.client.HTTPException) as exc:
                    self.errors += 1
                    self.last_error = repr(exc)
                    conn.close()
                    continue
                self.requests += 1
                if response.status == 304:
                    self.not_modified += 1
                elif response.status == 200:
                    etags[path] = response.getheader("etag") or ""
                elif response.status != 404:  # 404: the run has no point yet
                    self.errors += 1
                    self.last_error = f"{path}: HTTP {response.status}"
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))
        conn.close()


def _total(pollers: list[Poller], counter: str) -> int:
    return sum(int(getattr(p, counter)) for p in pollers)


def _get_json(port: int, path: str) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30.0)
    try:
        conn.request("GET", path)
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def rss_bytes(pid: int) -> int | None:
    """VmRSS of a process, None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


# -- the run ----------------------------------------------------------------------------------


def soak(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="boardd-soak-"))
    logdir = workdir / "logdir"
    logdir.mkdir()
    env = child_env()
    env.update(args.env)
    env["STATE_DIRECTORY"] = str(workdir / "state")
    writer = subprocess.Popen(
        [sys.executable, __file__, "--writer-child", str(logdir), str(args.runs), str(args.rate)],
        stdin=subprocess.PIPE,
        env=child_env(),
    )
    server: subprocess.Popen[bytes] | None = None
    pollers: list[Poller] = []
    try:
        port_file = workdir / "port"
        argv = boardd_serve_argv(logdir, port_file, workdir / "soak.sqlite")
        server = spawn([*argv, *args.serve_arg], workdir / "serve.log", env)
        deadline = time.monotonic() + 60.0
        while (port := read_port_file(port_file)) is None:
            if exited(server, 0.1) or time.monotonic() > deadline:
                tail = (workdir / "serve.log").read_text(errors="replace")[-2000:]
                raise SystemExit(f"boardd serve did not start:\n{tail}")
        pollers = [Poller(port, args.runs, args.poll_interval) for _ in range(args.clients)]
        for poller in pollers:
            poller.start()
        total = args.minutes * 60.0
        reference_at = min(REFERENCE_MINUTES * 60.0, total / 2)
        print(
            f"soak: {args.runs} runs × {args.rate:g} points/s, {args.clients} client(s) each "
            f"polling {2 * args.runs} series requests every {args.poll_interval:g} s, "
            f"{args.minutes:g} min; boardd pid {server.pid}",
            flush=True,
        )
        began = time.monotonic()
        samples: list[tuple[float, int]] = []
        reference: int | None = None
        next_line = 0.0
        while (elapsed := time.monotonic() - began) < total:
            rss = rss_bytes(server.pid)
            if rss is None or server.poll() is not None:
                raise SystemExit("boardd serve exited during the soak")
            samples.append((elapsed, rss))
            if reference is None and elapsed >= reference_at:
                reference = rss
                print(f"  reference RSS at {elapsed / 60:.1f} min: {rss / MIB:.1f} MiB", flush=True)
            if elapsed >= next_line:
                cache = _get_json(port, "/api/v1/health")["cache"]
                print(
                    f"  {elapsed / 60:5.1f} min  RSS {rss / MIB:6.1f} MiB  cache "
                    f"{cache['entries']} entries {cache['bytes'] / MIB:.1f} MiB "
                    f"hit rate {cache['hit_rate']:.2f}  requests {_total(pollers, 'requests')} "
                    f"(304: {_total(pollers, 'not_modified')}, "
                    f"errors: {_total(pollers, 'errors')})",
                    flush=True,
                )
                next_line += args.report_seconds
            time.sleep(args.sample_seconds)
        end = rss_bytes(server.pid) or samples[-1][1]
        health = _get_json(port, "/api/v1/health")
        steps = _get_json(
            port,
            "/api/v1/scalars/list?" + urllib.parse.urlencode({"plugin": "scalars"}),
        )
    finally:
        for poller in pollers:
            poller.close()
        with contextlib.suppress(OSError, ValueError):
            assert writer.stdin is not None
            writer.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            writer.wait(30.0)
        if writer.poll() is None:
            writer.kill()
        if server is not None:
            stop_process(server)
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    assert reference is not None
    peak = max(rss for _, rss in samples)
    drift = (end - reference) / reference
    cache = health["cache"]
    max_steps = [t["max_step"] for r in steps.values() for t in r.values()]
    print()
    print(
        f"requests: {_total(pollers, 'requests')} (304: {_total(pollers, 'not_modified')}; "
        f"errors: {_total(pollers, 'errors')})"
    )
    for poller in pollers:
        if poller.last_error:
            print(f"  last error: {poller.last_error}")
    print(
        f"cache at the end: {cache['entries']} entries, {cache['bytes'] / MIB:.1f} MiB, "
        f"hit rate {cache['hit_rate']:.3f} ({cache['hits']} hits, {cache['misses']} misses)"
    )
    print(f"points per run at the end: {min(max_steps, default=0)}..{max(max_steps, default=0)}")
    print(
        f"RSS: reference ({reference_at / 60:g} min) {reference / MIB:.1f} MiB, "
        f"end {end / MIB:.1f} MiB, peak {peak / MIB:.1f} MiB, drift {100 * drift:+.1f} %"
    )
    met = abs(drift) <= TARGET_DRIFT and end <= TARGET_MIB * MIB
    print(
        f"target (end within {100 * TARGET_DRIFT:g} % of the reference, ≤ {TARGET_MIB:g} MiB): "
        f"{'met' if met else 'NOT met'}"
    )
    results.write(
        args.results,
        "bench_soak",
        title="Memory soak: a live writer and polling clients",
        anchor=None,
        workload=f"{args.runs} runs written at {args.rate:g} points/s each for {args.minutes:g} "
        f"minutes, {args.clients} client(s) polling every series every {args.poll_interval:g} s",
        figures=[
            results.figure(
                f"RSS at the reference point ({reference_at / 60:g} min)",
                reference / MIB,
                unit="MiB",
                better="lower",
            ),
            results.figure("peak RSS", peak / MIB, unit="MiB", better="lower"),
            results.figure(
                "RSS at the end",
                end / MIB,
                unit="MiB",
                better="lower",
                target=f"within {100 * TARGET_DRIFT:g} % of the reference, ≤ {TARGET_MIB:g} MiB",
                met=met,
            ),
        ],
        notes="No anchor: TensorBoard keeps every point in memory, which answers another question.",
        detail={"drift": drift, "cache": cache},
    )
    return 0 if met else 1


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--writer-child":
        return _writer_child(argv[1], int(argv[2]), float(argv[3]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="length of the run")
    parser.add_argument("--quick", action="store_true", help="a 1-minute smoke run")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE, help="points/s per run")
    parser.add_argument("--clients", type=int, default=1, help="polling clients")
    parser.add_argument(
        "--poll-interval", type=float, default=1.0, help="seconds between polling rounds"
    )
    parser.add_argument("--sample-seconds", type=float, default=2.0, help="RSS sampling period")
    parser.add_argument("--report-seconds", type=float, default=60.0, help="progress lines")
    parser.add_argument(
        "--serve-arg", action="append", default=[], help="an extra argument of boardd serve"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        type=lambda s: tuple(s.split("=", 1)),
        help="NAME=VALUE in boardd serve's environment",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    results.add_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.minutes = 1.0
        args.report_seconds = 10.0
    args.env = dict(args.env)
    return soak(args)


if __name__ == "__main__":
    sys.exit(main())
