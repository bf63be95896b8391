"""HTTP request latency and throughput of scalar reads, boardd vs TensorBoard, side by side.

One run starts, on the standard workload and on 127.0.0.1 only, ``tensorboard --logdir D
--load_fast=true`` (TensorBoard's Python front end over rustboard) and ``boardd serve D`` on a
fresh store, waits until both have loaded everything, and fires the same request set at both:
every main run × 4 ``train/metric_XX`` tags, as ``/data/plugin/scalars/scalars?run=R&tag=T``
for TensorBoard and ``/api/v1/scalars?plugin=scalars&run=R&tag=T&downsample=1000`` for boardd.

- **first pass**: right after boardd went live, each request once by one client (Python
  ``http.client`` on a persistent connection): boardd's cache misses. The same pass against
  TensorBoard, which has no response cache (every request of it is a "miss").
- **steady state**: ``wrk`` (C, epoll, one thread driving all connections; a Lua script cycles
  through the request set) for ``--duration`` seconds per server and client count; boardd then
  answers from its response cache. Rounds alternate which server goes first.
- **client overhead**: the same clients against a null server (a canned response of the size
  of boardd's, one ``write`` per response), so the floor under every figure is known.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import math
import os
import re
import shutil
import signal
import statistics
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
    AnchorError,
    Stats,
    boardd_serve_argv,
    child_env,
    console_script,
    exited,
    percentile,
    read_port_file,
    run_measured,
    spawn,
    stop_process,
    warm_page_cache,
)

#: Points per answer: TensorBoard's scalar reservoir keeps 1,000 per series and returns them all;
#: boardd keeps 10,000 and is asked to downsample to the same number.
DOWNSAMPLE = 1000
#: How many ``train/metric_XX`` tags per run go into the request set (evenly spread).
TAGS_PER_RUN = 4

#: The HTTP API's targets.
TARGET_RPS_RATIO = 10.0
TARGET_HIT_P50_MS = 3.0
TARGET_MISS_P50_MS = 10.0

#: TensorBoard's defaults with --load_fast=true, noted in the report (tensorboard --helpfull).
TENSORBOARD_RELOAD_SECONDS = 5.0
TENSORBOARD_SCALAR_SAMPLES = 1000

_TB_URL = re.compile(r"TensorBoard \S+ at http://[^:/]+:(\d+)/")
_WRK_RESULT = "BENCH_HTTP_RESULT "
_CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(RuntimeError):
    """The benchmark could not run; the message says what to check."""


# -- the request set ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestSet:
    """The series asked for, and how each server spells the request."""

    runs: tuple[str, ...]
    tags: tuple[str, ...]
    last_step: int
    all_runs: int

    def series(self) -> list[tuple[str, str]]:
        """Every (run, tag), run-major."""
        return [(run, tag) for run in self.runs for tag in self.tags]

    def boardd_paths(self, downsample: int = DOWNSAMPLE) -> list[str]:
        """boardd's ``/api/v1/scalars`` request for each series."""
        return [
            "/api/v1/scalars?"
            + urllib.parse.urlencode(
                {"plugin": "scalars", "run": run, "tag": tag, "downsample": downsample}, safe="/"
            )
            for run, tag in self.series()
        ]

    def tensorboard_paths(self) -> list[str]:
        """TensorBoard's ``/data/plugin/scalars/scalars`` request for each series."""
        return [
            "/data/plugin/scalars/scalars?"
            + urllib.parse.urlencode({"run": run, "tag": tag}, safe="/")
            for run, tag in self.series()
        ]


def request_set(logdir: Path) -> RequestSet:
    """The main runs and ``TAGS_PER_RUN`` evenly spread tags of a generated workload."""
    marker = logdir / ".boardd-workload.json"
    try:
        spec = json.loads(marker.read_text())["spec"]
    except (OSError, ValueError, KeyError) as exc:
        raise BenchError(f"{logdir} is not a workload of bench/workload.py ({exc})") from exc
    n_tags = int(spec["scalar_tags"])
    picks = sorted({round(i * (n_tags - 1) / (TAGS_PER_RUN - 1)) for i in range(TAGS_PER_RUN)})
    # add_hparams writes a sub-run per run, so TensorBoard sees twice as many runs.
    return RequestSet(
        runs=tuple(f"run_{i:02d}" for i in range(int(spec["runs"]))),
        tags=tuple(f"train/metric_{j:02d}" for j in picks),
        last_step=int(spec["scalar_steps"]) - 1,
        all_runs=len({p.parent for p in logdir.rglob("*tfevents*")}),
    )


# -- processes ---------------------------------------------------------------------------------


def session_cpu_seconds(leader: int) -> float:
    """User + system CPU seconds of every live process in the session ``leader`` started."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        # Fields after the command name (which may hold spaces and parentheses).
        fields = raw[raw.rindex(b")") + 2 :].split()
        if int(fields[3]) == leader:  # session id (field 6)
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / _CLK_TCK


# -- servers -----------------------------------------------------------------------------------


@dataclass
class Server:
    """A server under test: its process, port and request paths."""

    name: str
    label: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    port: int = 0
    ready_seconds: float = 0.0
    paths: list[str] = field(default_factory=list)

    def connection(self, timeout: float = 30.0) -> http.client.HTTPConnection:
        """A keep-alive connection (http.client reconnects when the server closes it)."""
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def check_alive(self) -> None:
        """Raise with the log's tail if the server has exited."""
        if exited(self.proc, 0.0):
            tail = self.log_path.read_text(errors="replace")[-2000:]
            raise BenchError(f"{self.name} exited early:\n{tail}")


def _get(conn: http.client.HTTPConnection, path: str) -> tuple[int, bytes]:
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException):
        conn.close()
        return 0, b""


def _wait_until(
    probe: Callable[[], bool], server: Server, timeout: float, what: str, every: float = 0.2
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        server.check_alive()
        time.sleep(every)
    raise BenchError(f"{server.name}: {what} did not happen within {timeout:.0f} s")


def start_boardd(logdir: Path, workdir: Path, requests: RequestSet, timeout: float) -> Server:
    """``boardd serve`` on a fresh store; returns once every experiment is live (caught up)."""
    port_file = workdir / "boardd.port"
    argv = boardd_serve_argv(logdir, port_file, workdir / "boardd.sqlite")
    started = time.monotonic()
    proc = spawn(argv, workdir / "boardd.log", child_env())
    server = Server("boardd", "boardd serve", proc, workdir / "boardd.log")
    server.paths = requests.boardd_paths()

    def has_port() -> bool:
        port = read_port_file(port_file)
        if port is not None:
            server.port = port
        return port is not None

    _wait_until(has_port, server, timeout, "writing its port file")
    conn = server.connection()

    def live() -> bool:
        status, body = _get(conn, "/api/v1/health")
        if status != 200:
            return False
        experiments = json.loads(body)["experiments"]
        return bool(experiments) and all(
            e.get("state") == "live" and e.get("bytes_done") == e.get("bytes_total")
            for e in experiments
        )

    try:
        _wait_until(live, server, timeout, "state live in /api/v1/health")
    finally:
        conn.close()
    server.ready_seconds = time.monotonic() - started
    return server


def cache_counters(server: Server) -> dict[str, int]:
    """boardd's response-cache counters from /api/v1/health."""
    conn = server.connection()
    try:
        status, body = _get(conn, "/api/v1/health")
    finally:
        conn.close()
    if status != 200:
        raise BenchError(f"boardd's /api/v1/health answered {status}")
    cache = json.loads(body)["cache"]
    return {k: int(cache[k]) for k in ("entries", "hits", "misses")}


def start_tensorboard(logdir: Path, workdir: Path, requests: RequestSet, timeout: float) -> Server:
    """``tensorboard --load_fast=true`` with its defaults; returns once every series is loaded.

    Loaded means: ``/data/runs`` lists every run, ``/data/plugin/scalars/tags`` lists the
    request set's tags for every main run, and each request of the set answers 1,000 points
    ending at the last step (rustboard commits a run's data as it reads it).
    """
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
    started = time.monotonic()
    log_path = workdir / "tensorboard.log"
    proc = spawn(argv, log_path, dict(os.environ))
    server = Server("tensorboard", "tensorboard --load_fast=true", proc, log_path)
    server.paths = requests.tensorboard_paths()

    def has_port() -> bool:
        match = _TB_URL.search(log_path.read_text(errors="replace"))
        if match:
            server.port = int(match.group(1))
        return match is not None

    _wait_until(has_port, server, timeout, "printing its URL")
    conn = server.connection()

    def listed() -> bool:
        status, body = _get(conn, "/data/runs")
        if status != 200 or len(json.loads(body)) < requests.all_runs:
            return False
        status, body = _get(conn, "/data/plugin/scalars/tags")
        if status != 200:
            return False
        tags = json.loads(body)
        return all(set(requests.tags) <= set(tags.get(run, {})) for run in requests.runs)

    def loaded() -> bool:
        for path in server.paths:
            status, body = _get(conn, path)
            if status != 200 or _tensorboard_points(body, requests.last_step) is None:
                return False
        return True

    try:
        _wait_until(listed, server, timeout, "listing every run and tag", every=0.5)
        _wait_until(loaded, server, timeout, "loading every series", every=0.5)
    finally:
        conn.close()
    server.ready_seconds = time.monotonic() - started
    return server


def _tensorboard_points(body: bytes, last_step: int) -> int | None:
    data = json.loads(body)  # [[wall_time, step, value], ...]
    if not data or int(data[-1][1]) != last_step:
        return None
    return len(data)


def _boardd_points(body: bytes, run: str, tag: str, last_step: int) -> int | None:
    points = json.loads(body).get(run, {}).get(tag)
    if not points or int(points[-1]["step"]) != last_step:
        return None
    return len(points)


# -- the null server (client overhead) ----------------------------------------------------------


def _null_server_child(body_bytes: int) -> int:
    """Child side: answer every GET with a canned 200 response in one write, until stdin closes."""
    body = b"[" + b"0," * max(0, (body_bytes - 2) // 2) + b"0]"
    response = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )

    class Canned(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport
            self.buffer = b""

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
                self.buffer = self.buffer[end + 4 :]
                self.transport.write(response)

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Canned, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        done = loop.create_future()
        threading.Thread(
            target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(done.set_result, None)),
            daemon=True,
        ).start()
        async with server:
            await done

    asyncio.run(serve())
    return 0


@contextlib.contextmanager
def null_server(body_bytes: int) -> Any:
    """A canned-response server in a child process; yields its port."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "_null-server", str(body_bytes)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.strip().isdigit():
            raise BenchError("the null server did not start")
        yield int(line)
    finally:
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(10.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10.0)


# -- load generators ----------------------------------------------------------------------------


@dataclass
class Load:
    """One timed load: latency percentiles (ms), throughput and CPU, for one server."""

    server: str
    tool: str
    clients: int
    seconds: float
    requests: int
    errors: int
    bytes: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    rps: float
    client_cpu_seconds: float
    server_cpu_seconds: float | None = None

    @property
    def server_cpu_ms_per_request(self) -> float:
        """Server CPU per answered request (all its processes and threads)."""
        if self.server_cpu_seconds is None or not self.requests:
            return math.nan
        return self.server_cpu_seconds * 1000.0 / self.requests

    @property
    def client_cpu_us_per_request(self) -> float:
        """The load generator's own CPU per request."""
        return self.client_cpu_seconds * 1e6 / self.requests if self.requests else math.nan


def wrk_binary() -> str | None:
    """The ``wrk`` on PATH (Debian: ``apt-get install -y wrk``)."""
    return shutil.which("wrk")


def wrk_script(paths: Sequence[str], headers: dict[str, str], out: Path) -> Path:
    """A wrk Lua script that cycles through ``paths`` and prints its figures as one JSON line."""
    lua_paths = ",\n  ".join(json.dumps(p) for p in paths)
    lua_headers = ", ".join(f"[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items())
    out.write_text(
        f"""-- generated by bench/bench_http.py
local paths = {{
  {lua_paths}
}}
local headers = {{ {lua_headers} }}
local formatted = {{}}
local i = 0

init = function(args)
  for k, p in ipairs(paths) do formatted[k] = wrk.format("GET", p, headers) end
  i = math.random(#paths) - 1
end

request = function()
  i = i % #formatted + 1
  return formatted[i]
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{_WRK_RESULT}{{"requests":%d,"duration_us":%d,"bytes":%d,"errors":%d,'
      .. '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.3f}}\\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean))
end
"""
    )
    return out


def wrk_load(
    name: str,
    port: int,
    script: Path,
    clients: int,
    duration: float,
    session: int | None,
) -> Load:
    """``wrk -t1 -cN -dD`` with the script; CPU of wrk (wait4) and of the server's session."""
    wrk = wrk_binary()
    if wrk is None:
        raise BenchError("wrk is not installed: apt-get install -y wrk, or use --client python")
    argv = [
        wrk,
        "-t1",
        f"-c{clients}",
        f"-d{duration:g}s",
        "--timeout",
        "30s",
        "-s",
        str(script),
        f"http://127.0.0.1:{port}/",
    ]
    cpu_before = session_cpu_seconds(session) if session is not None else None
    try:
        done = run_measured(argv, timeout=duration + 60.0)
    except AnchorError as exc:
        raise BenchError(str(exc)) from exc
    cpu_after = session_cpu_seconds(session) if session is not None else None
    out, err = done.stdout, done.stderr
    line = next((x for x in out.splitlines() if x.startswith(_WRK_RESULT)), None)
    if done.returncode != 0 or line is None:
        raise BenchError(f"wrk failed ({done.returncode}):\n{out[-1500:]}\n{err[-1500:]}")
    r = json.loads(line[len(_WRK_RESULT) :])
    seconds = r["duration_us"] / 1e6
    return Load(
        server=name,
        tool="wrk",
        clients=clients,
        seconds=seconds,
        requests=r["requests"],
        errors=r["errors"],
        bytes=r["bytes"],
        p50_ms=r["p50_us"] / 1000.0,
        p90_ms=r["p90_us"] / 1000.0,
        p99_ms=r["p99_us"] / 1000.0,
        max_ms=r["max_us"] / 1000.0,
        mean_ms=r["mean_us"] / 1000.0,
        rps=r["requests"] / seconds if seconds else math.nan,
        client_cpu_seconds=done.cpu_seconds,
        server_cpu_seconds=(
            cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
        ),
    )


def python_load(
    name: str,
    port: int,
    paths: Sequence[str],
    clients: int,
    duration: float,
    headers: dict[str, str],
    session: int | None,
    max_requests: int = 1_000_000,
) -> Load:
    """``clients`` threads, each with its own keep-alive ``http.client`` connection, cycling
    through ``paths`` for ``duration`` seconds (or ``max_requests`` in all)."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    nbytes = [0] * clients
    budget = max(1, max_requests // clients)
    start = threading.Barrier(clients + 1)
    deadline = [0.0]

    def client(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30.0)
        mine = latencies[k]
        i = k * len(paths) // clients
        start.wait()
        try:
            while len(mine) < budget and time.perf_counter() < deadline[0]:
                t0 = time.perf_counter()
                try:
                    conn.request("GET", paths[i], headers=headers)
                    response = conn.getresponse()
                    body = response.read()
                    ok = response.status == 200
                except (OSError, http.client.HTTPException):
                    conn.close()
                    body, ok = b"", False
                mine.append(time.perf_counter() - t0)
                nbytes[k] += len(body)
                errors[k] += not ok
                i = (i + 1) % len(paths)
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    cpu_before = session_cpu_seconds(session) if session is not None else None
    own_before = time.process_time()
    began = time.perf_counter()
    deadline[0] = began + duration
    start.wait()
    for t in threads:
        t.join(duration + 60.0)
    seconds = time.perf_counter() - began
    own = time.process_time() - own_before
    cpu_after = session_cpu_seconds(session) if session is not None else None
    return _summarize(
        name,
        "python",
        clients,
        seconds,
        [x for xs in latencies for x in xs],
        sum(errors),
        sum(nbytes),
        own,
        cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None,
    )


def _summarize(
    name: str,
    tool: str,
    clients: int,
    seconds: float,
    latencies: Sequence[float],
    errors: int,
    nbytes: int,
    client_cpu: float,
    server_cpu: float | None,
) -> Load:
    ms = [x * 1000.0 for x in latencies]
    return Load(
        server=name,
        tool=tool,
        clients=clients,
        seconds=seconds,
        requests=len(ms),
        errors=errors,
        bytes=nbytes,
        p50_ms=percentile(ms, 50),
        p90_ms=percentile(ms, 90),
        p99_ms=percentile(ms, 99),
        max_ms=max(ms) if ms else math.nan,
        mean_ms=statistics.fmean(ms) if ms else math.nan,
        rps=len(ms) / seconds if seconds else math.nan,
        client_cpu_seconds=client_cpu,
        server_cpu_seconds=server_cpu,
    )


@dataclass
class Pass:
    """One sequential pass over a request set (one client, each request once)."""

    server: str
    label: str
    load: Load
    points: list[int | None]
    sizes: list[int]
    latencies_ms: list[float]
    cache_before: dict[str, int] | None = None
    cache_after: dict[str, int] | None = None


def single_pass(
    server: Server,
    paths: Sequence[str],
    label: str,
    check: Callable[[int, bytes], int | None],
    headers: dict[str, str],
) -> Pass:
    """Each request of ``paths`` once, in order, on one keep-alive connection; ``check(i, body)``
    (after the clock stopped) counts the points of answer ``i``, or None if it is wrong."""
    cache_before = cache_counters(server) if server.name == "boardd" else None
    conn = server.connection()
    times: list[float] = []
    bodies: list[tuple[int, bytes]] = []
    cpu_before = session_cpu_seconds(server.proc.pid)
    own_before = time.process_time()
    began = time.perf_counter()
    try:
        for path in paths:
            t0 = time.perf_counter()
            try:
                conn.request("GET", path, headers=headers)
                response = conn.getresponse()
                bodies.append((response.status, response.read()))
            except (OSError, http.client.HTTPException):
                conn.close()
                bodies.append((0, b""))
            times.append(time.perf_counter() - t0)
    finally:
        conn.close()
    seconds = time.perf_counter() - began
    own = time.process_time() - own_before
    cpu = session_cpu_seconds(server.proc.pid) - cpu_before
    cache_after = cache_counters(server) if server.name == "boardd" else None
    points = [
        check(i, _decoded(body)) if status == 200 else None
        for i, (status, body) in enumerate(bodies)
    ]
    errors = sum(1 for p in points if p is None)
    load = _summarize(
        server.name, "python", 1, seconds, times, errors, sum(len(b) for _, b in bodies), own, cpu
    )
    return Pass(
        server=server.name,
        label=label,
        load=load,
        points=points,
        sizes=[len(b) for _, b in bodies],
        latencies_ms=[round(t * 1000.0, 3) for t in times],
        cache_before=cache_before,
        cache_after=cache_after,
    )


def _decoded(body: bytes) -> bytes:
    if body[:2] == b"\x1f\x8b":
        import gzip

        return gzip.decompress(body)
    return body


# -- the run ------------------------------------------------------------------------------------


@dataclass
class Options:
    """What to run, from the command line."""

    small: bool
    clients: list[int]
    duration: float
    repeat: int
    miss_passes: int
    client: str
    gzip: bool
    skip_tensorboard: bool
    keep: bool
    ready_timeout: float


def run(options: Options, log: IO[str]) -> dict[str, Any]:
    """Start both servers, measure, stop them; returns everything for the report."""
    import workload

    logdir = workload.small_workload() if options.small else workload.standard_workload()
    requests = request_set(logdir)
    headers = {"Accept-Encoding": "gzip"} if options.gzip else {}
    warm_page_cache(logdir)
    workdir = Path(tempfile.mkdtemp(prefix="boardd-bench-http-"))
    servers: dict[str, Server] = {}
    load_start = os.getloadavg()
    report: dict[str, Any] = {
        "options": asdict(options),
        "logdir": str(logdir),
        "runs": list(requests.runs),
        "tags": list(requests.tags),
        "requests_per_pass": len(requests.series()),
        "downsample": DOWNSAMPLE,
        "cpus": os.cpu_count(),
        "wrk": _wrk_version(),
    }
    try:
        # TensorBoard first: its load is the longer one, and boardd's first pass should come
        # right after boardd went live.
        if not options.skip_tensorboard:
            print("starting tensorboard --load_fast=true ...", file=log)
            tb = start_tensorboard(logdir, workdir, requests, options.ready_timeout)
            servers["tensorboard"] = tb
            print(f"  ready on port {tb.port} after {tb.ready_seconds:.1f} s", file=log)
        print("starting boardd serve (fresh store) ...", file=log)
        bd = start_boardd(logdir, workdir, requests, options.ready_timeout)
        servers["boardd"] = bd
        print(f"  live on port {bd.port} after {bd.ready_seconds:.1f} s", file=log)
        report["ready_seconds"] = {n: s.ready_seconds for n, s in servers.items()}
        series = requests.series()

        def boardd_check(i: int, body: bytes) -> int | None:
            run_name, tag = series[i % len(series)]
            return _boardd_points(body, run_name, tag, requests.last_step)

        passes = [single_pass(bd, bd.paths, "first pass (cache misses)", boardd_check, headers)]
        # Further misses with the same work: another downsample= is another cache key.
        for k in range(1, options.miss_passes):
            paths = requests.boardd_paths(DOWNSAMPLE - k)
            label = f"miss pass, downsample={DOWNSAMPLE - k}"
            passes.append(single_pass(bd, paths, label, boardd_check, headers))
        passes.append(single_pass(bd, bd.paths, "second pass (cache hits)", boardd_check, headers))
        if "tensorboard" in servers:
            tb = servers["tensorboard"]
            passes.append(
                single_pass(
                    tb,
                    tb.paths,
                    "one pass (no response cache)",
                    lambda i, body: _tensorboard_points(body, requests.last_step),
                    headers,
                )
            )
        for p in passes:
            print(
                f"  {p.server} {p.label}: p50 {p.load.p50_ms:.2f} ms, {p.load.errors} bad answers",
                file=log,
            )
        report["passes"] = [asdict(p) for p in passes]
        body_bytes = int(statistics.median(passes[0].sizes))
        report["overhead"] = [asdict(x) for x in client_overhead(options, body_bytes, log)]
        report["loads"] = [asdict(x) for x in steady_state(options, servers, headers, workdir, log)]
    finally:
        for server in servers.values():
            stop_process(server.proc)
        if options.keep:
            print(f"kept {workdir} (server logs, boardd's store)", file=log)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    report["load_average"] = {"start": load_start, "end": os.getloadavg()}
    return report


def client_overhead(options: Options, body_bytes: int, log: IO[str]) -> list[Load]:
    """The load generator against the null server: the floor under every latency."""
    out: list[Load] = []
    seconds = min(options.duration, 3.0)
    with null_server(body_bytes) as port:
        paths = [f"/null?{i}" for i in range(64)]
        script = wrk_script(paths, {}, Path(tempfile.mkstemp(suffix=".lua")[1]))
        try:
            for clients in options.clients:
                if options.client == "wrk":
                    out.append(wrk_load("null", port, script, clients, seconds, None))
                out.append(python_load("null", port, paths, clients, seconds, {}, None))
        finally:
            script.unlink()
    for x in out:
        print(
            f"  null server, {x.tool} × {x.clients}: p50 {x.p50_ms:.3f} ms, {x.rps:.0f} req/s, "
            f"client CPU {x.client_cpu_us_per_request:.0f} µs/request",
            file=log,
        )
    return out


def steady_state(
    options: Options,
    servers: dict[str, Server],
    headers: dict[str, str],
    workdir: Path,
    log: IO[str],
) -> list[Load]:
    """``repeat`` rounds × client counts × servers (order alternating each round)."""
    scripts = {
        name: wrk_script(s.paths, headers, workdir / f"{name}.lua") for name, s in servers.items()
    }
    order = [n for n in ("boardd", "tensorboard") if n in servers]
    out: list[Load] = []
    for round_no in range(options.repeat):
        for clients in options.clients:
            for name in order if round_no % 2 == 0 else order[::-1]:
                server = servers[name]
                server.check_alive()
                if options.client == "wrk":
                    load = wrk_load(
                        name, server.port, scripts[name], clients, options.duration, server.proc.pid
                    )
                else:
                    load = python_load(
                        name,
                        server.port,
                        server.paths,
                        clients,
                        options.duration,
                        headers,
                        server.proc.pid,
                    )
                out.append(load)
                print(
                    f"  round {round_no + 1}/{options.repeat}, {clients} client(s), {name}: "
                    f"p50 {load.p50_ms:.2f} ms, p99 {load.p99_ms:.2f} ms, {load.rps:.0f} req/s, "
                    f"{load.errors} errors",
                    file=log,
                )
    return out


def _wrk_version() -> str | None:
    wrk = wrk_binary()
    if wrk is None:
        return None
    done = subprocess.run([wrk, "--version"], capture_output=True, text=True, timeout=10)
    first = (done.stdout or done.stderr).splitlines()
    return first[0].strip() if first else None


# -- report -------------------------------------------------------------------------------------


def _stats(loads: Sequence[Load], key: Callable[[Load], float]) -> Stats | None:
    values = [key(x) for x in loads if math.isfinite(key(x))]
    return Stats.of(values) if values else None


def _f(s: Stats | None, spec: str) -> str:
    return s.fmt(spec) if s is not None else "-"


def _loads(report: dict[str, Any], key: str) -> list[Load]:
    return [Load(**x) for x in report.get(key, [])]


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Medians per (server, clients), ratios and target verdicts."""
    loads = _loads(report, "loads")
    cells: dict[str, dict[str, Any]] = {}
    for clients in report["options"]["clients"]:
        for name in ("boardd", "tensorboard"):
            mine = [x for x in loads if x.server == name and x.clients == clients]
            if not mine:
                continue
            cells[f"{name}/{clients}"] = {
                "p50_ms": _stats(mine, lambda x: x.p50_ms),
                "p99_ms": _stats(mine, lambda x: x.p99_ms),
                "rps": _stats(mine, lambda x: x.rps),
                "server_cpu_ms": _stats(mine, lambda x: x.server_cpu_ms_per_request),
                "errors": sum(x.errors for x in mine),
                "bytes_per_request": _stats(mine, lambda x: x.bytes / max(1, x.requests)),
            }
    passes = {(p["server"], p["label"]): p for p in report["passes"]}
    first = passes[("boardd", "first pass (cache misses)")]
    misses = [p for p in report["passes"] if p["server"] == "boardd" and "miss" in p["label"]]
    all_miss_ms = [t for p in misses for t in p["latencies_ms"]]
    summary: dict[str, Any] = {"cells": cells}
    summary["miss_p50_ms"] = first["load"]["p50_ms"]
    summary["all_misses_p50_ms"] = percentile(all_miss_ms, 50)
    summary["all_misses_p99_ms"] = percentile(all_miss_ms, 99)
    summary["all_misses_n"] = len(all_miss_ms)
    ratios: dict[str, Any] = {}
    for clients in report["options"]["clients"]:
        b, t = cells.get(f"boardd/{clients}"), cells.get(f"tensorboard/{clients}")
        if b is None or t is None:
            continue
        ratios[str(clients)] = {
            "rps": b["rps"].median / t["rps"].median,
            "p50": b["p50_ms"].median / t["p50_ms"].median,
            "p99": b["p99_ms"].median / t["p99_ms"].median,
            "server_cpu": b["server_cpu_ms"].median / t["server_cpu_ms"].median
            if b["server_cpu_ms"] and t["server_cpu_ms"]
            else math.nan,
            # Paired per round: boardd's and TensorBoard's loads of the same round.
            "rps_per_round": _paired(loads, clients),
        }
    summary["ratios"] = ratios
    most = max(report["options"]["clients"])
    least = min(report["options"]["clients"])
    hit = cells.get(f"boardd/{least}")
    targets = []
    r = ratios.get(str(most))
    targets.append(
        {
            "what": f"boardd req/s ≥ {TARGET_RPS_RATIO:.0f}× TensorBoard's ({most} clients)",
            "met": None if r is None else r["rps"] >= TARGET_RPS_RATIO,
            "value": None if r is None else f"{r['rps']:.1f}×",
        }
    )
    targets.append(
        {
            "what": f"boardd p50 ≤ {TARGET_HIT_P50_MS:g} ms on a cache hit ({least} client)",
            "met": None if hit is None else hit["p50_ms"].median <= TARGET_HIT_P50_MS,
            "value": None if hit is None else f"{hit['p50_ms'].median:.2f} ms",
        }
    )
    targets.append(
        {
            "what": f"boardd p50 ≤ {TARGET_MISS_P50_MS:g} ms on a cache miss (first pass)",
            "met": summary["miss_p50_ms"] <= TARGET_MISS_P50_MS,
            "value": f"{summary['miss_p50_ms']:.2f} ms",
        }
    )
    summary["targets"] = targets
    return summary


def _paired(loads: Sequence[Load], clients: int) -> list[float]:
    b = [x.rps for x in loads if x.server == "boardd" and x.clients == clients]
    t = [x.rps for x in loads if x.server == "tensorboard" and x.clients == clients]
    return [x / y for x, y in zip(b, t, strict=False) if y > 0]


def _jsonable(value: Any) -> Any:
    if isinstance(value, Stats):
        return asdict(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def print_report(report: dict[str, Any], summary: dict[str, Any]) -> None:
    """The human-readable tables, ratios and target verdicts."""
    o = report["options"]
    print(
        f"HTTP scalar reads on {report['logdir']}: {report['requests_per_pass']} requests per "
        f"pass = {len(report['runs'])} runs × {', '.join(report['tags'])}"
    )
    print(
        "  boardd:      GET /api/v1/scalars?plugin=scalars&run=R&tag=T&downsample="
        f"{report['downsample']}  (boardd serve, fresh store)"
    )
    if not o["skip_tensorboard"]:
        print(
            "  TensorBoard: GET /data/plugin/scalars/scalars?run=R&tag=T  (tensorboard "
            f"--load_fast=true, defaults: reload every {TENSORBOARD_RELOAD_SECONDS:g} s)"
        )
    print(
        f"  sampling: TensorBoard keeps {TENSORBOARD_SCALAR_SAMPLES:,} points per scalar series "
        "(its reservoir default) and returns them all;\n"
        "            boardd keeps 10,000 (its default) and downsamples each answer to "
        f"{report['downsample']:,}, so both answer {report['downsample']:,} points."
    )
    sizes = {p["server"]: statistics.median(p["sizes"]) for p in report["passes"]}
    print(
        "  answer size (median bytes): "
        + ", ".join(f"{k} {v:,.0f}" for k, v in sizes.items())
        + (" (gzip)" if o["gzip"] else " (no Accept-Encoding: identity)")
    )
    ready = ", ".join(f"{k} {v:.1f} s" for k, v in report["ready_seconds"].items())
    print(f"  ready after start: {ready} (boardd: live, catch-up done; TB: every series loaded)")
    tool = report["wrk"] if o["client"] == "wrk" else "Python http.client threads"
    print(f"  load generator: {tool}; first passes: Python http.client, one keep-alive connection")
    print()
    print("Client overhead (null server: canned answer of boardd's size, one write each)")
    for x in _loads(report, "overhead"):
        print(
            f"  {x.tool:<6} × {x.clients}: p50 {x.p50_ms:6.3f} ms, p99 {x.p99_ms:6.3f} ms, "
            f"{x.rps:8.0f} req/s; client CPU {x.client_cpu_us_per_request:5.0f} µs/request"
        )
    print()
    print("Single passes, one client, each request once (ms)")
    header = f"  {'server':<12} {'pass':<34} {'n':>4} {'p50':>7} {'p99':>7} {'max':>7} {'bad':>4}"
    print(header)
    for p in report["passes"]:
        x = Load(**p["load"])
        cache = ""
        if p["cache_before"] and p["cache_after"]:
            d_hit = p["cache_after"]["hits"] - p["cache_before"]["hits"]
            d_miss = p["cache_after"]["misses"] - p["cache_before"]["misses"]
            cache = f"  cache: {d_miss} misses, {d_hit} hits"
        print(
            f"  {p['server']:<12} {p['label']:<34} {x.requests:>4} {x.p50_ms:>7.2f} "
            f"{x.p99_ms:>7.2f} {x.max_ms:>7.2f} {x.errors:>4}{cache}"
        )
    print(
        f"  all boardd misses: n={summary['all_misses_n']}, p50 "
        f"{summary['all_misses_p50_ms']:.2f} ms, p99 {summary['all_misses_p99_ms']:.2f} ms"
    )
    print()
    print(
        f"Steady state ({o['client']}, {o['duration']:g} s per cell, {o['repeat']} round(s); "
        "boardd answers from its cache): median [min-max]"
    )
    header = (
        f"  {'clients':>7} {'server':<12} {'p50 ms':>18} {'p99 ms':>20} {'req/s':>20} "
        f"{'srv CPU ms/req':>16} {'err':>4}"
    )
    print(header)
    cells = summary["cells"]
    for clients in o["clients"]:
        for name in ("boardd", "tensorboard"):
            c = cells.get(f"{name}/{clients}")
            if c is None:
                continue
            print(
                f"  {clients:>7} {name:<12} {_f(c['p50_ms'], '.2f'):>18} "
                f"{_f(c['p99_ms'], '.2f'):>20} {_f(c['rps'], '.0f'):>20} "
                f"{_f(c['server_cpu_ms'], '.2f'):>16} {c['errors']:>4}"
            )
        r = summary["ratios"].get(str(clients))
        if r is not None:
            per_round = ", ".join(f"{v:.1f}" for v in r["rps_per_round"])
            print(
                f"  {clients:>7} {'boardd/TB':<12} p50 {r['p50']:.3f}×, p99 {r['p99']:.3f}×, "
                f"req/s {r['rps']:.1f}× (per round {per_round}), CPU/req {r['server_cpu']:.2f}×"
            )
    tb = cells.get(f"tensorboard/{min(o['clients'])}")
    if tb is not None and tb["p50_ms"] and tb["server_cpu_ms"]:
        print(
            f"  TensorBoard's {min(o['clients'])}-client p50 ({tb['p50_ms'].median:.1f} ms) is "
            f"mostly idle time: its CPU per request (front end + rustboard) is "
            f"{tb['server_cpu_ms'].median:.1f} ms"
        )
    print()
    print("Targets")
    for t in summary["targets"]:
        verdict = "n/a (no TensorBoard)" if t["met"] is None else ("MET" if t["met"] else "NOT MET")
        value = f" ({t['value']})" if t["value"] else ""
        print(f"  {t['what']}: {verdict}{value}")
    load = report["load_average"]
    print(
        f"load average (1 min): {load['start'][0]:.2f} at start, {load['end'][0]:.2f} at end, "
        f"on {report['cpus']} CPUs (the servers and the load generator share them)"
    )


def _clients(text: str) -> list[int]:
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give counts like 1,8") from None
    if not values or values[0] < 1 or values[-1] > 256:
        raise argparse.ArgumentTypeError(f"{text!r}: give counts from 1 to 256")
    return values


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: run the benchmark and print the tables (or JSON); 0 unless it could not run."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_null-server"]:
        return _null_server_child(int(argv[1]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="use the small workload")
    parser.add_argument(
        "--clients", type=_clients, default=[1, 8], help="concurrent clients (default 1,8)"
    )
    parser.add_argument(
        "--duration", type=float, default=10.0, help="seconds per steady-state cell (default 10)"
    )
    parser.add_argument("--repeat", type=int, default=2, help="steady-state rounds (default 2)")
    parser.add_argument(
        "--miss-passes",
        type=int,
        default=5,
        help="boardd miss passes: the first pass, then downsample=999, 998... (default 5)",
    )
    parser.add_argument(
        "--client",
        choices=["wrk", "python"],
        default="wrk" if wrk_binary() else "python",
        help="steady-state load generator (default wrk if installed)",
    )
    parser.add_argument("--gzip", action="store_true", help="send Accept-Encoding: gzip")
    parser.add_argument("--skip-tensorboard", action="store_true", help="boardd only")
    parser.add_argument("--keep", action="store_true", help="keep the server logs and store")
    parser.add_argument(
        "--ready-timeout", type=float, default=600.0, help="seconds to wait for each server"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    results.add_argument(parser)
    args = parser.parse_args(argv)
    if args.duration <= 0 or args.duration > 600 or args.repeat < 1 or args.miss_passes < 1:
        parser.error("--duration must be in (0, 600], --repeat and --miss-passes at least 1")
    if args.client == "wrk" and wrk_binary() is None:
        parser.error("wrk is not installed (apt-get install -y wrk); or use --client python")
    options = Options(
        small=args.small,
        clients=args.clients,
        duration=args.duration,
        repeat=args.repeat,
        miss_passes=args.miss_passes,
        client=args.client,
        gzip=args.gzip,
        skip_tensorboard=args.skip_tensorboard,
        keep=args.keep,
        ready_timeout=args.ready_timeout,
    )
    # SIGTERM unwinds like Ctrl-C, so run()'s finally still stops both servers.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        report = run(options, sys.stderr)
    except BenchError as exc:
        print(f"bench_http: {exc}", file=sys.stderr)
        return 2
    summary = summarize(report)
    if args.json:
        print(json.dumps(_jsonable({**report, "summary": summary}), indent=2))
    else:
        print_report(report, summary)
    write_results(report, summary, args.results, argv)
    return 0


def write_results(
    report: dict[str, Any], summary: dict[str, Any], path: str | None, argv: Sequence[str]
) -> None:
    """bench/results/bench_http.json: requests/s and latencies beside TensorBoard's."""
    o = report["options"]
    cells = summary["cells"]
    most, least = max(o["clients"]), min(o["clients"])
    figures = []
    for clients in o["clients"]:
        b, t = cells.get(f"boardd/{clients}"), cells.get(f"tensorboard/{clients}")
        if b is None:
            continue
        anchor_rps = t["rps"].median if t else None
        ratio = results.ratio(b["rps"].median, anchor_rps, "higher")
        figures.append(
            results.figure(
                f"scalar reads, {clients} client(s): requests/s",
                b["rps"].median,
                anchor_rps,
                unit="req/s",
                better="higher",
                target=f"≥ {TARGET_RPS_RATIO:.0f}× TensorBoard" if clients == most else None,
                met=None if clients != most or ratio is None else ratio >= TARGET_RPS_RATIO,
            )
        )
        hit = clients == least
        figures.append(
            results.figure(
                f"scalar reads, {clients} client(s): p50 latency"
                + (" (a cache hit)" if hit else ""),
                b["p50_ms"].median,
                t["p50_ms"].median if t else None,
                unit="ms",
                better="lower",
                target=f"≤ {TARGET_HIT_P50_MS:g} ms" if hit else None,
                met=b["p50_ms"].median <= TARGET_HIT_P50_MS if hit else None,
            )
        )
    passes = {(p["server"], p["label"]): p for p in report["passes"]}
    tensorboard_pass = passes.get(("tensorboard", "one pass (no response cache)"))
    figures.append(
        results.figure(
            "a cache miss (first pass), p50",
            summary["miss_p50_ms"],
            tensorboard_pass["load"]["p50_ms"] if tensorboard_pass else None,
            unit="ms",
            better="lower",
            target=f"≤ {TARGET_MISS_P50_MS:g} ms",
            met=summary["miss_p50_ms"] <= TARGET_MISS_P50_MS,
        )
    )
    tool = report["wrk"] if o["client"] == "wrk" else "Python http.client threads"
    results.write(
        path,
        "bench_http",
        title="HTTP: scalar reads, requests/s and latency",
        anchor="tensorboard --load_fast=true (its Rust data server), /data/plugin/scalars/scalars",
        workload=f"{'small' if o['small'] else 'standard'} workload, "
        f"{report['requests_per_pass']} requests (runs × tags) of 1,000 points each; "
        f"{o['duration']:g} s per cell, {o['repeat']} round(s), load from {tool}",
        figures=figures,
        detail=_jsonable({"summary": summary, "options": o}),
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
