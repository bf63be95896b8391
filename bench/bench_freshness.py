"""Freshness: how soon a scalar flushed by tensorboardX is visible over HTTP, boardd vs TensorBoard.

One run starts, on the same logdir and on 127.0.0.1 only, ``boardd serve`` (inotify),
``boardd serve --poll`` and ``tensorboard --load_fast=true`` (TensorBoard's Python front end over
rustboard). A writer process (tensorboardX ``SummaryWriter``) appends one scalar at a time to a
live run; for every point one poller thread per server asks its HTTP API for the series' last
step until the point shows up. Latency is measured from the moment the record is in the event
file (the writer watches the file's size) to the moment a response carrying it arrives.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import results  # noqa: E402  (bench/, put on the path above)
from anchors import (  # noqa: E402  (bench scripts run as plain files, not as a package)
    boardd_serve_argv,
    child_env,
    console_script,
    exited,
    percentile,
    read_port_file,
    spawn,
    stop_process,
)

RUN = "live"
TAG = "freshness/value"
#: Points written before the servers start; every server must show the last one first.
INITIAL_STEPS = 200
#: The target for boardd (inotify), write to API answer: median and 99th percentile. The
#: median is what a watcher that hears every write gives; one that hears nothing is only as
#: fresh as the safety rescan (seconds), so this fails loudly on a deaf live path.
TARGET_P50_MS = 20.0
TARGET_P99_MS = 1000.0

_TB_URL = re.compile(r"TensorBoard \S+ at http://[^:/]+:(\d+)/")


class BenchError(RuntimeError):
    """The benchmark could not run; the message says what to check."""


# -- the writer: a child process, like a training job ----------------------------------------


def _writer_child(run_dir: str, tag: str, initial: int, flush_secs: float) -> int:
    """Child side: write ``initial`` points, then one point per step read from stdin.

    For each point it replies with one JSON line of monotonic times: ``call`` (before
    ``add_scalar``), ``flushed`` (``flush()`` returned) and ``file`` (the record is in the event
    file: a thread watches the file's size every 0.2 ms). tensorboardX hands events to a writer
    thread through a queue, so ``flush()`` can return before the record is written; the child
    then flushes again every 2 ms until the file grows.
    """
    from tensorboardX import SummaryWriter  # type: ignore[import-untyped]

    # The size watcher must get the GIL within a fraction of a millisecond.
    sys.setswitchinterval(0.0002)
    writer = SummaryWriter(run_dir, flush_secs=flush_secs)
    for step in range(initial):
        writer.add_scalar(tag, _value(step), step)
    writer.flush()
    files = [p for p in Path(run_dir).iterdir() if "tfevents" in p.name]
    if len(files) != 1:
        raise BenchError(f"expected one event file in {run_dir}, found {len(files)}")
    path = files[0]
    _settle(writer, path)
    watch = _SizeWatch(path)
    print(json.dumps({"ready": True, "file": str(path), "size": path.stat().st_size}), flush=True)
    try:
        for line in sys.stdin:
            command = line.strip()
            if command == "quit":
                break
            step = int(command)
            watch.arm()
            call = time.monotonic()
            writer.add_scalar(tag, _value(step), step)
            writer.flush()
            flushed = time.monotonic()
            in_file_at_flush = path.stat().st_size > watch.base
            flushes = 1
            while not watch.grown.wait(0.002):
                if time.monotonic() - call > 10.0:
                    break
                writer.flush()
                flushes += 1
            reply = {
                "step": step,
                "call": call,
                "flushed": flushed,
                "file": watch.grown_at,
                "flushes": flushes,
                "in_file_at_flush": in_file_at_flush,
            }
            print(json.dumps(reply), flush=True)
    finally:
        watch.close()
        writer.close()
    return 0


def _value(step: int) -> float:
    return math.sin(step / 10.0)


def _settle(writer: Any, path: Path) -> None:
    """Flush until the file has not grown for 0.3 s: every initial point is on disk."""
    size, since = -1, time.monotonic()
    deadline = since + 30.0
    while time.monotonic() < deadline:
        writer.flush()
        now_size = path.stat().st_size
        if now_size != size:
            size, since = now_size, time.monotonic()
        elif time.monotonic() - since >= 0.3:
            return
        time.sleep(0.01)
    raise BenchError(f"{path} kept growing for 30 s")


class _SizeWatch:
    """A thread that notes the first moment the file is larger than when ``arm()`` was called."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.grown = threading.Event()
        self.grown_at: float | None = None
        self._armed = threading.Event()
        self._closed = False
        self.base = 0
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def arm(self) -> None:
        self.base = self.path.stat().st_size
        self.grown_at = None
        self.grown.clear()
        self._armed.set()

    def close(self) -> None:
        self._closed = True
        self._armed.set()
        self._thread.join(timeout=5.0)

    def _loop(self) -> None:
        while not self._closed:
            self._armed.wait()
            if self._closed:
                return
            if os.stat(self.path).st_size > self.base:
                self.grown_at = time.monotonic()
                self._armed.clear()
                self.grown.set()
            else:
                time.sleep(0.0002)


class Writer:
    """The parent's handle on the writer child."""

    def __init__(self, run_dir: Path, *, initial: int, flush_secs: float) -> None:
        argv = [
            sys.executable,
            str(Path(__file__).resolve()),
            "_writer",
            str(run_dir),
            TAG,
            str(initial),
            str(flush_secs),
        ]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        ready = self._reply(timeout=120.0)
        if not ready.get("ready"):
            raise BenchError(f"the writer did not start: {ready}")
        self.file = Path(ready["file"])

    def write(self, step: int) -> dict[str, Any]:
        """Write one point; returns the child's reply (monotonic times)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{step}\n")
        self.proc.stdin.flush()
        return self._reply(timeout=30.0)

    def close(self) -> None:
        """Ask the child to close its writer; kill it if it does not exit."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
        stop_process(self.proc, term=False, group=False)

    def _reply(self, timeout: float) -> dict[str, Any]:
        stdout = self.proc.stdout
        assert stdout is not None
        box: list[str] = []
        # A thread, so that a hung child costs a timeout rather than the whole benchmark.
        reader = threading.Thread(target=lambda: box.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        if not box or not box[0]:
            raise BenchError("the writer child stopped answering (see its stderr above)")
        reply: dict[str, Any] = json.loads(box[0])
        return reply


# -- the servers ------------------------------------------------------------------------------


@dataclass
class Server:
    """One HTTP server under test and how to ask it for the live series' last step."""

    name: str
    label: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    poll_seconds: float
    last_step: Callable[[http.client.HTTPConnection], tuple[int | None, str]]
    port: int = 0

    def connection(self) -> http.client.HTTPConnection:
        """A keep-alive connection (http.client reconnects when the server closes it)."""
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10.0)


def _get_json(conn: http.client.HTTPConnection, path: str) -> tuple[Any, str]:
    """GET ``path``; returns (decoded JSON, "") or (None, what went wrong)."""
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        return None, f"{type(exc).__name__}: {exc}"
    if response.status != 200:
        return None, f"HTTP {response.status}: {body[:300].decode('utf-8', 'replace')}"
    return json.loads(body), ""


def _boardd_last_step(conn: http.client.HTTPConnection) -> tuple[int | None, str]:
    query = urllib.parse.urlencode({"plugin": "scalars", "run": RUN, "tag": TAG, "latest": 1})
    data, error = _get_json(conn, f"/api/v1/scalars?{query}")
    # {RUN: {TAG: [{"step", "wall_time", "value"}]}}; the run is absent until it has data.
    points = data.get(RUN, {}).get(TAG) if isinstance(data, dict) else None
    if not points:
        return None, error or "the series is not there yet"
    return int(points[-1]["step"]), ""


def _tensorboard_last_step(conn: http.client.HTTPConnection) -> tuple[int | None, str]:
    query = urllib.parse.urlencode({"run": RUN, "tag": TAG})
    data, error = _get_json(conn, f"/data/plugin/scalars/scalars?{query}")
    # [[wall_time, step, value], ...]
    if not data:
        return None, error or "the series is not there yet"
    return int(data[-1][1]), ""


def start_boardd(
    logdir: Path, workdir: Path, *, poll: bool, poll_interval: float, poll_seconds: float
) -> Server:
    """``boardd serve LOGDIR --port 0 --port-file F --db DB`` (``--poll`` for polling mode)."""
    name = "boardd-poll" if poll else "boardd"
    port_file = workdir / f"{name}.port"
    argv = boardd_serve_argv(logdir, port_file, workdir / f"{name}.sqlite")
    if poll:
        argv += ["--poll", "--poll-interval", f"{poll_interval:g}"]
    log_path = workdir / f"{name}.log"
    proc = spawn(argv, log_path, child_env())
    label = f"boardd --poll (every {poll_interval:g} s)" if poll else "boardd (inotify)"
    server = Server(name, label, proc, log_path, poll_seconds, _boardd_last_step)
    _started(server, lambda: read_port_file(port_file), "its port file")
    return server


def start_tensorboard(
    logdir: Path, workdir: Path, *, reload_interval: float | None, poll_seconds: float
) -> Server:
    """``tensorboard --logdir D --load_fast=true --host 127.0.0.1 --port 0`` (rustboard inside)."""
    argv = [
        *console_script("tensorboard", "tensorboard.main"),
        "--logdir",
        str(logdir),
        "--load_fast=true",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
    ]
    if reload_interval is not None:
        argv += ["--reload_interval", f"{reload_interval:g}"]
    log_path = workdir / "tensorboard.log"
    proc = spawn(argv, log_path, dict(os.environ))
    every = f"{reload_interval:g}" if reload_interval is not None else "5"
    label = f"tensorboard --load_fast=true (reload {every} s)"
    server = Server("tensorboard", label, proc, log_path, poll_seconds, _tensorboard_last_step)

    def port() -> int | None:
        match = _TB_URL.search(log_path.read_text(errors="replace"))
        return int(match.group(1)) if match else None

    _started(server, port, "its URL line")
    return server


def _started(server: Server, port: Callable[[], int | None], what: str) -> None:
    """Wait for the server's port; a server that does not come up is stopped, not leaked."""
    try:
        server.port = _wait_for(port, server, 120.0, what)
    except BaseException:
        stop_process(server.proc)
        raise


def _wait_for(probe: Callable[[], int | None], server: Server, timeout: float, what: str) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value is not None:
            return value
        if exited(server.proc, 0.0):
            tail = server.log_path.read_text(errors="replace")[-2000:]
            raise BenchError(f"{server.name} exited early:\n{tail}")
        time.sleep(0.05)
    raise BenchError(f"{server.name} did not produce {what} in {timeout:.0f} s")


def wait_caught_up(server: Server, step: int, timeout: float) -> float:
    """Wait until ``server`` shows ``step`` for the live series; returns the seconds it took."""
    started = time.monotonic()
    conn = server.connection()
    try:
        error = ""

        def probe() -> int | None:
            nonlocal error
            last, error = server.last_step(conn)
            return 1 if last is not None and last >= step else None

        try:
            _wait_for(probe, server, timeout, f"step {step} of {RUN}/{TAG}")
        except BenchError as exc:
            raise BenchError(f"{exc} (last answer: {error or 'an older step'})") from None
    finally:
        conn.close()
    return time.monotonic() - started


# -- the pollers ------------------------------------------------------------------------------


@dataclass
class Seen:
    """When a poller first saw a step: the request that carried it was sent and answered."""

    sent: float
    received: float


class Poller:
    """Polls one server while points are outstanding; notes when each step shows up."""

    def __init__(self, server: Server, timeout: float) -> None:
        self.server = server
        self.timeout = timeout
        self.seen: dict[int, Seen] = {}
        self.timed_out: list[int] = []
        self.request_seconds: list[float] = []
        self.errors = 0
        self._pending: dict[int, float] = {}
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name=f"poll-{server.name}", daemon=True)
        self._thread.start()

    def expect(self, step: int) -> None:
        """Start looking for ``step`` (called just before the writer is told to write it)."""
        with self._work:
            self._pending[step] = time.monotonic()
            self._work.notify()

    def idle(self) -> bool:
        """Whether every expected step has been seen or has timed out."""
        with self._lock:
            return not self._pending

    def close(self) -> None:
        """Stop the thread; safe to call twice."""
        with self._work:
            self._stop = True
            self._work.notify()
        self._thread.join(timeout=15.0)

    def _loop(self) -> None:
        conn = self.server.connection()
        try:
            while True:
                with self._work:
                    while not self._pending and not self._stop:
                        self._work.wait()
                    if self._stop:
                        return
                sent = time.monotonic()
                last, _ = self.server.last_step(conn)
                received = time.monotonic()
                self.request_seconds.append(received - sent)
                with self._lock:
                    if last is None:
                        self.errors += 1
                    for step, since in sorted(self._pending.items()):
                        if last is not None and step <= last:
                            self.seen[step] = Seen(sent, received)
                            del self._pending[step]
                        elif received - since > self.timeout:
                            self.timed_out.append(step)
                            del self._pending[step]
                time.sleep(self.server.poll_seconds)
        finally:
            conn.close()


# -- statistics -------------------------------------------------------------------------------


@dataclass
class Column:
    """One server's figures (milliseconds); timeouts count as +inf in the percentiles."""

    name: str
    label: str
    poll_ms: float
    points: int
    timeouts: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    min_ms: float
    mean_ms: float
    request_p50_ms: float
    request_p99_ms: float
    requests: int
    failed_requests: int
    catch_up_seconds: float
    latencies_ms: list[float] = field(default_factory=list)


def summarize(poller: Poller, writes: Sequence[dict[str, Any]], catch_up: float) -> Column:
    """Latency of each written point: response received minus record in the file."""
    latencies: list[float] = []
    for write in writes:
        seen = poller.seen.get(write["step"])
        if seen is None or write["file"] is None:
            latencies.append(math.inf)
        else:
            latencies.append((seen.received - write["file"]) * 1000.0)
    finite = [v for v in latencies if math.isfinite(v)]
    requests = [s * 1000.0 for s in poller.request_seconds]
    server = poller.server
    return Column(
        name=server.name,
        label=server.label,
        poll_ms=server.poll_seconds * 1000.0,
        points=len(latencies),
        timeouts=len(latencies) - len(finite),
        p50_ms=percentile(latencies, 50),
        p90_ms=percentile(latencies, 90),
        p99_ms=percentile(latencies, 99),
        max_ms=max(latencies) if latencies else math.nan,
        min_ms=min(latencies) if latencies else math.nan,
        mean_ms=sum(finite) / len(finite) if finite else math.nan,
        request_p50_ms=percentile(requests, 50),
        request_p99_ms=percentile(requests, 99),
        requests=len(requests),
        failed_requests=poller.errors,
        catch_up_seconds=catch_up,
        latencies_ms=[round(v, 3) if math.isfinite(v) else math.inf for v in latencies],
    )


# -- the run ----------------------------------------------------------------------------------


@dataclass
class Options:
    """What to run, from the command line."""

    points: int
    spacing: float
    jitter: float
    timeout: float
    boardd_poll_ms: float
    boardd_polling_poll_ms: float
    tensorboard_poll_ms: float
    poll_interval: float
    reload_interval: float | None
    flush_secs: float
    skip_tensorboard: bool
    skip_polling: bool
    background: bool
    keep: bool
    seed: int


def run(options: Options, log: IO[str]) -> dict[str, Any]:
    """Start the servers, write the points, measure; every process is stopped at the end."""
    workdir = Path(tempfile.mkdtemp(prefix="boardd-bench-freshness-"))
    logdir = workdir / "logs"
    logdir.mkdir()
    background_bytes = 0
    if options.background:
        import workload

        source = workload.small_workload()
        shutil.copytree(source, logdir / "background", ignore=shutil.ignore_patterns(".*"))
        background_bytes = sum(p.stat().st_size for p in (logdir / "background").rglob("*"))
    writer: Writer | None = None
    servers: list[Server] = []
    pollers: list[Poller] = []
    load_start = os.getloadavg()
    try:
        writer = Writer(logdir / RUN, initial=INITIAL_STEPS, flush_secs=options.flush_secs)
        print(f"workdir {workdir}; live event file {writer.file.name}", file=log)
        servers.append(
            start_boardd(
                logdir,
                workdir,
                poll=False,
                poll_interval=options.poll_interval,
                poll_seconds=options.boardd_poll_ms / 1000.0,
            )
        )
        if not options.skip_polling:
            servers.append(
                start_boardd(
                    logdir,
                    workdir,
                    poll=True,
                    poll_interval=options.poll_interval,
                    poll_seconds=options.boardd_polling_poll_ms / 1000.0,
                )
            )
        if not options.skip_tensorboard:
            servers.append(
                start_tensorboard(
                    logdir,
                    workdir,
                    reload_interval=options.reload_interval,
                    poll_seconds=options.tensorboard_poll_ms / 1000.0,
                )
            )
        catch_up: dict[str, float] = {}
        for server in servers:
            catch_up[server.name] = wait_caught_up(server, INITIAL_STEPS - 1, 180.0)
            print(
                f"{server.name} on port {server.port}: caught up "
                f"{catch_up[server.name]:.2f} s after it was ready",
                file=log,
            )
        time.sleep(1.0)  # let the servers finish whatever their first pass started
        pollers = [Poller(server, options.timeout) for server in servers]
        rng = random.Random(options.seed)
        writes: list[dict[str, Any]] = []
        for i in range(options.points):
            step = INITIAL_STEPS + i
            for poller in pollers:
                poller.expect(step)
            reply = writer.write(step)
            writes.append(reply)
            if reply["file"] is None:
                print(f"  step {step}: the record never reached the file", file=log)
            if log.isatty():
                print(_progress(i, options.points, pollers), end="\r", file=log, flush=True)
            # Jittered spacing, so that no polling period locks onto the writes' phase.
            low, high = 1.0 - options.jitter, 1.0 + options.jitter
            time.sleep(options.spacing * rng.uniform(low, high))
        deadline = time.monotonic() + options.timeout + 5.0
        while not all(p.idle() for p in pollers) and time.monotonic() < deadline:
            time.sleep(0.05)
        if log.isatty():
            print(" " * 60, end="\r", file=log)
        for poller in pollers:
            poller.close()
        columns = [summarize(p, writes, catch_up[p.server.name]) for p in pollers]
    finally:
        for poller in pollers:
            poller.close()
        if writer is not None:
            writer.close()
        for server in servers:
            stop_process(server.proc)
        if options.keep:
            print(f"kept {workdir} (server logs, stores, logdir)", file=log)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    load_end = os.getloadavg()
    return {
        "options": asdict(options),
        "cpus": os.cpu_count(),
        "load_average": {"start": load_start, "end": load_end},
        "background_bytes": background_bytes,
        "initial_steps": INITIAL_STEPS,
        "writer": _writer_summary(writes),
        "columns": [asdict(c) for c in columns],
        "writes": writes,
    }


def _progress(i: int, total: int, pollers: Sequence[Poller]) -> str:
    seen = ", ".join(f"{p.server.name} {len(p.seen)}" for p in pollers)
    return f"  point {i + 1}/{total}; seen: {seen}"


def _writer_summary(writes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    to_file = [(w["file"] - w["call"]) * 1000.0 for w in writes if w["file"] is not None]
    flush = [(w["flushed"] - w["call"]) * 1000.0 for w in writes]
    late = sum(1 for w in writes if not w["in_file_at_flush"])
    return {
        "call_to_file_p50_ms": percentile(to_file, 50),
        "call_to_file_max_ms": max(to_file) if to_file else math.nan,
        "call_to_flushed_p50_ms": percentile(flush, 50),
        "points_not_in_file_at_flush": late,
    }


# -- report -----------------------------------------------------------------------------------


def _ms(value: float) -> str:
    if math.isinf(value):
        return "timeout"
    if math.isnan(value):
        return "-"
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def _ratio(a: float, b: float) -> str:
    if not (math.isfinite(a) and math.isfinite(b)) or b <= 0:
        return "-"
    return f"{a / b:.0f}×" if a / b >= 10 else f"{a / b:.1f}×"


def print_report(report: dict[str, Any]) -> None:
    """The human-readable table, ratios and the target verdict."""
    options = report["options"]
    columns = {c["name"]: c for c in report["columns"]}
    print(
        f"freshness: {options['points']} points, one every {options['spacing']:g} s "
        f"± {options['jitter'] * 100:.0f}%, run {RUN!r}, tag {TAG!r} "
        f"(after {report['initial_steps']} initial points"
        + (f"; background: small workload, {report['background_bytes'] / 1e6:.1f} MB)")
        if report["background_bytes"]
        else ")"
    )
    print(
        "latency = HTTP response carrying the point received − record in the event file "
        "(ms);\npoll = pause between a poller's requests (resolution ≈ poll + request time)"
    )
    header = (
        f"{'server':<44} {'poll':>6} {'pts':>4} {'t/o':>4} {'p50':>8} {'p90':>8} "
        f"{'p99':>8} {'max':>8} {'req p50':>8}"
    )
    print(header)
    print("-" * len(header))
    for c in report["columns"]:
        print(
            f"{c['label']:<44} {c['poll_ms']:>4.0f}ms {c['points']:>4} {c['timeouts']:>4} "
            f"{_ms(c['p50_ms']):>8} {_ms(c['p90_ms']):>8} {_ms(c['p99_ms']):>8} "
            f"{_ms(c['max_ms']):>8} {_ms(c['request_p50_ms']):>8}"
        )
    boardd = columns.get("boardd")
    for other in ("tensorboard", "boardd-poll"):
        if boardd is None or other not in columns:
            continue
        o = columns[other]
        print(
            f"ratio {other} ÷ boardd (inotify): p50 {_ratio(o['p50_ms'], boardd['p50_ms'])}, "
            f"p99 {_ratio(o['p99_ms'], boardd['p99_ms'])}"
        )
    if "tensorboard" in columns and "boardd-poll" in columns:
        t, p = columns["tensorboard"], columns["boardd-poll"]
        print(
            f"ratio tensorboard ÷ boardd --poll: p50 {_ratio(t['p50_ms'], p['p50_ms'])}, "
            f"p99 {_ratio(t['p99_ms'], p['p99_ms'])}"
        )
    if boardd is not None:
        ok50 = boardd["p50_ms"] <= TARGET_P50_MS
        ok99 = boardd["p99_ms"] <= TARGET_P99_MS
        print(
            f"target boardd (inotify): p50 ≤ {TARGET_P50_MS:.0f} ms: "
            f"{'MET' if ok50 else 'NOT MET'} ({_ms(boardd['p50_ms'])} ms); "
            f"p99 ≤ {TARGET_P99_MS:.0f} ms: {'MET' if ok99 else 'NOT MET'} "
            f"({_ms(boardd['p99_ms'])} ms)"
        )
    w = report["writer"]
    print(
        f"writer: add_scalar → record in file p50 {_ms(w['call_to_file_p50_ms'])} ms "
        f"(max {_ms(w['call_to_file_max_ms'])}); add_scalar + flush() p50 "
        f"{_ms(w['call_to_flushed_p50_ms'])} ms; {w['points_not_in_file_at_flush']} of "
        f"{options['points']} points were not yet in the file when flush() returned (the child "
        "flushes again every 2 ms until they are)"
    )
    catch = ", ".join(f"{c['name']} {c['catch_up_seconds']:.1f} s" for c in report["columns"])
    print(f"initial catch-up after ready: {catch}")
    load = report["load_average"]
    print(
        f"load average (1 min): {load['start'][0]:.2f} at start, {load['end'][0]:.2f} at end, "
        f"on {report['cpus']} CPUs"
    )


def verdict(report: dict[str, Any]) -> bool:
    """Whether boardd (inotify) met both targets."""
    for c in report["columns"]:
        if c["name"] == "boardd":
            return bool(c["p50_ms"] <= TARGET_P50_MS and c["p99_ms"] <= TARGET_P99_MS)
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: measure freshness of boardd (inotify, polling) and TensorBoard side by side."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_writer"]:
        return _writer_child(argv[1], argv[2], int(argv[3]), float(argv[4]))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=40, help="points to write (default 40)")
    parser.add_argument(
        "--spacing", type=float, default=0.5, help="mean seconds between points (default 0.5)"
    )
    parser.add_argument(
        "--jitter", type=float, default=0.5, help="spacing varies by ± this fraction (0.5)"
    )
    parser.add_argument(
        "--timeout", type=float, default=30.0, help="give up on a point after this (30 s)"
    )
    parser.add_argument("--boardd-poll-ms", type=float, default=5.0, help="(default 5)")
    parser.add_argument(
        "--boardd-polling-poll-ms",
        type=float,
        default=20.0,
        help="poller pause for boardd --poll (default 20)",
    )
    parser.add_argument("--tensorboard-poll-ms", type=float, default=50.0, help="(default 50)")
    parser.add_argument(
        "--poll-interval", type=float, default=1.0, help="boardd --poll-interval (default 1)"
    )
    parser.add_argument(
        "--reload-interval",
        type=float,
        default=None,
        help="tensorboard --reload_interval (default: TensorBoard's own, 5 s)",
    )
    parser.add_argument(
        "--flush-secs", type=float, default=0.1, help="SummaryWriter flush_secs (default 0.1)"
    )
    parser.add_argument("--skip-tensorboard", action="store_true", help="boardd only")
    parser.add_argument("--skip-polling", action="store_true", help="no boardd --poll column")
    parser.add_argument(
        "--no-background",
        action="store_true",
        help="do not copy the small workload into the logdir as other runs",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory and logs")
    parser.add_argument("--seed", type=int, default=1, help="seed of the spacing jitter")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 unless boardd (inotify) meets its target"
    )
    results.add_argument(parser)
    args = parser.parse_args(argv)
    if args.points < 1 or args.spacing <= 0 or not 0 <= args.jitter < 1:
        parser.error("--points ≥ 1, --spacing > 0 and 0 ≤ --jitter < 1")
    options = Options(
        points=args.points,
        spacing=args.spacing,
        jitter=args.jitter,
        timeout=args.timeout,
        boardd_poll_ms=args.boardd_poll_ms,
        boardd_polling_poll_ms=args.boardd_polling_poll_ms,
        tensorboard_poll_ms=args.tensorboard_poll_ms,
        poll_interval=args.poll_interval,
        reload_interval=args.reload_interval,
        flush_secs=args.flush_secs,
        skip_tensorboard=args.skip_tensorboard,
        skip_polling=args.skip_polling,
        background=not args.no_background,
        keep=args.keep,
        seed=args.seed,
    )
    # SIGTERM unwinds like Ctrl-C, so that run()'s finally stops every server it started.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        report = run(options, sys.stderr)
    except BenchError as exc:
        print(f"bench_freshness: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench_freshness: interrupted; servers stopped", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(_finite(report), indent=2, allow_nan=False))
    else:
        print_report(report)
    write_results(report, args.results, argv)
    return 0 if not args.check or verdict(report) else 1


def write_results(report: dict[str, Any], path: str | None, argv: Sequence[str]) -> None:
    """bench/results/bench_freshness.json: boardd's columns beside TensorBoard's."""
    columns = {c["name"]: c for c in report["columns"]}
    boardd, polled = columns.get("boardd"), columns.get("boardd-poll")
    tensorboard = columns.get("tensorboard", {})
    figures = []
    for column, label in ((boardd, "boardd serve (inotify)"), (polled, "boardd serve --poll")):
        if column is None:
            continue
        for key, name, target in (
            ("p50_ms", "p50", TARGET_P50_MS),
            ("p99_ms", "p99", TARGET_P99_MS),
        ):
            inotify = column is boardd
            figures.append(
                results.figure(
                    f"write → visible over HTTP, {name}: {label}",
                    column[key],
                    tensorboard.get(key),
                    unit="ms",
                    better="lower",
                    target=f"≤ {target:.0f} ms" if inotify else None,
                    met=bool(column[key] <= target) if inotify else None,
                )
            )
    options = report["options"]
    results.write(
        path,
        "bench_freshness",
        title="Freshness: a flushed point until it is visible over HTTP",
        anchor="tensorboard --load_fast=true (its Rust data server, reloading every 5 s)",
        workload=f"{options['points']} points written by tensorboardX, one every "
        f"{options['spacing']:g} s ± {options['jitter'] * 100:.0f} %, into a logdir that also "
        "holds the small workload",
        figures=figures,
        detail=_finite(report),
        argv=argv,
    )


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _finite(value: Any) -> Any:
    """The report with every NaN or infinity (a timeout) as null, so it is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


if __name__ == "__main__":
    sys.exit(main())
