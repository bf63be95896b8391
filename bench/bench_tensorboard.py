"""TensorBoard's own routes, start-up and UI: boardd vs TensorBoard (rustboard), side by side.

One run, on the standard workload and on 127.0.0.1 only, compares ``boardd serve LOGDIR``
(restarting on a store already ingested: a warm restart) with ``tensorboard --logdir LOGDIR
--load_fast=true`` (TensorBoard's Python front end over rustboard, starting fresh):

1. **routes**: the same TensorBoard requests to both servers (scalars for every main run × 4
   tags, histograms, distributions, images, and ``POST timeSeries`` as the Time Series dashboard
   sends it), by 1 and 8 concurrent clients: p50, p99, req/s and boardd/TensorBoard ratios;
2. **start to complete answer**: process start → ``/data/plugin/scalars/scalars`` for the last
   run's last tag holds its final step; several starts of each, median and min; beside them,
   the start of a bare interpreter that only imports the libraries boardd's first answer needs
   (asyncio, Starlette, httptools, APSW: numpy is imported after it) and binds a port: how much
   of boardd's start is its own, and the best ratio a server on those libraries could reach;
3. **first cards drawn**: in headless Chromium (Playwright), page navigation → the Time Series
   view shows a scalar card with its data: TensorBoard's UI served by boardd
   (``/tensorboard/``) and by TensorBoard itself (``/``).

A route boardd does not have yet answers 404: it is reported as ``missing`` and the rest runs.
"""

from __future__ import annotations

import argparse
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
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import results  # noqa: E402  (bench/, put on the path above)
from anchors import (  # noqa: E402  (bench scripts run as plain files, not as a package)
    REPO_DIR,
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
from bench_http import session_cpu_seconds, wrk_binary  # noqa: E402

#: Targets: requests per second against TensorBoard's, and a warm restart's seconds to its
#: first complete scalars answer (an absolute bound; TensorBoard's start is printed beside it
#: as the anchor, not chased as a ratio).
TARGET_RPS_RATIO = 10.0
TARGET_START_SECONDS = 0.3

#: The workload's tags (bench/workload.py).
HISTOGRAM_TAG = "weights/layer_0"
IMAGE_TAG = "samples/input"
TAGS_PER_RUN = 4

ROUTES = ("scalars", "histograms", "distributions", "images", "timeseries")

#: Chromium as the browser tests drive it (Debian's package, no GPU, no background traffic).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]

#: "First cards drawn" in TensorBoard's Time Series view: a scalar card whose line chart has its
#: canvas, whose loading spinner is gone, and whose data table lists at least one run's value.
#: The data table rows appear in the same animation frame as the axes take the data's domain
#: (checked by logging the DOM every frame); before that the card shows a mat-spinner.
CARDS_DRAWN_JS = """() => {
  for (const card of document.querySelectorAll('scalar-card')) {
    if (card.querySelector('mat-spinner')) continue;
    if (!card.querySelector('line-chart canvas')) continue;
    if (card.querySelectorAll('tb-data-table-content-row').length === 0) continue;
    return performance.now();
  }
  return false;
}"""

_TB_URL = re.compile(r"TensorBoard \S+ at http://[^:/]+:(\d+)/")
_FORM = "application/x-www-form-urlencoded"


class BenchError(RuntimeError):
    """The benchmark could not run; the message says what to check."""


# -- the request sets ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """What the workload holds, from its marker file."""

    runs: tuple[str, ...]
    tags: tuple[str, ...]
    last_step: int
    last_histogram_step: int
    last_image_step: int
    all_runs: int


def workload_shape(logdir: Path) -> Shape:
    """The main runs, ``TAGS_PER_RUN`` evenly spread scalar tags and the last steps."""
    try:
        spec = json.loads((logdir / ".boardd-workload.json").read_text())["spec"]
    except (OSError, ValueError, KeyError) as exc:
        raise BenchError(f"{logdir} is not a workload of bench/workload.py ({exc})") from exc
    n_tags, steps = int(spec["scalar_tags"]), int(spec["scalar_steps"])
    picks = sorted({round(i * (n_tags - 1) / (TAGS_PER_RUN - 1)) for i in range(TAGS_PER_RUN)})

    # workload.py writes a histogram every steps // histogram_steps steps, histogram_steps times.
    def last(every_of: int) -> int:
        every = max(1, steps // max(1, every_of))
        return every * min(every_of - 1, (steps - 1) // every)

    return Shape(
        runs=tuple(f"run_{i:02d}" for i in range(int(spec["runs"]))),
        tags=tuple(f"train/metric_{j:02d}" for j in picks),
        last_step=steps - 1,
        last_histogram_step=last(int(spec["histogram_steps"])),
        last_image_step=last(int(spec["image_steps"])),
        all_runs=len({p.parent for p in logdir.rglob("*tfevents*")}),
    )


@dataclass(frozen=True)
class Request:
    """One HTTP request, the same for both servers (boardd serves TensorBoard's routes)."""

    method: str
    path: str
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()


#: Checks an answer's body: the number of points it holds, or None if it is not complete.
Check = Callable[[int, bytes], int | None]


@dataclass(frozen=True)
class RouteSet:
    """A route's requests and how to check each answer."""

    name: str
    label: str
    requests: tuple[Request, ...]
    check: Check


def _get(path: str, **params: str | int) -> Request:
    return Request("GET", path + "?" + urllib.parse.urlencode(params, safe="/"))


def _last_step_of_list(body: bytes, step_of: Callable[[Any], int], last: int) -> int | None:
    data = json.loads(body)
    if not isinstance(data, list) or not data or step_of(data[-1]) != last:
        return None
    return len(data)


def route_sets(shape: Shape) -> dict[str, RouteSet]:
    """The request set of every route, in TensorBoard's spelling."""
    series = [(run, tag) for run in shape.runs for tag in shape.tags]
    out: dict[str, RouteSet] = {}
    out["scalars"] = RouteSet(
        "scalars",
        f"GET /data/plugin/scalars/scalars ({len(shape.runs)} runs × {len(shape.tags)} tags)",
        tuple(_get("/data/plugin/scalars/scalars", run=r, tag=t) for r, t in series),
        lambda i, body: _last_step_of_list(body, lambda p: int(p[1]), shape.last_step),
    )
    out["histograms"] = RouteSet(
        "histograms",
        f"GET /data/plugin/histograms/histograms ({len(shape.runs)} runs × {HISTOGRAM_TAG})",
        tuple(
            _get("/data/plugin/histograms/histograms", run=r, tag=HISTOGRAM_TAG) for r in shape.runs
        ),
        lambda i, body: _last_step_of_list(body, lambda p: int(p[1]), shape.last_histogram_step),
    )
    out["distributions"] = RouteSet(
        "distributions",
        f"GET /data/plugin/distributions/distributions ({len(shape.runs)} runs × {HISTOGRAM_TAG})",
        tuple(
            _get("/data/plugin/distributions/distributions", run=r, tag=HISTOGRAM_TAG)
            for r in shape.runs
        ),
        lambda i, body: _last_step_of_list(body, lambda p: int(p[1]), shape.last_histogram_step),
    )
    out["images"] = RouteSet(
        "images",
        f"GET /data/plugin/images/images ({len(shape.runs)} runs × {IMAGE_TAG}, sample 0)",
        tuple(
            _get("/data/plugin/images/images", run=r, tag=IMAGE_TAG, sample=0) for r in shape.runs
        ),
        lambda i, body: _last_step_of_list(body, lambda p: int(p["step"]), shape.last_image_step),
    )
    # What the Time Series dashboard asks, one series request per POST as its cards do: a scalar
    # card per tag (every run at once), a histogram and an image card per (run, tag).
    ts: list[tuple[dict[str, Any], int]] = [
        ({"plugin": "scalars", "tag": t}, shape.last_step) for t in shape.tags
    ]
    ts += [
        ({"plugin": "histograms", "tag": HISTOGRAM_TAG, "run": r}, shape.last_histogram_step)
        for r in shape.runs
    ]
    ts += [
        ({"plugin": "images", "tag": IMAGE_TAG, "run": r, "sample": 0}, shape.last_image_step)
        for r in shape.runs
    ]
    ts_requests = tuple(
        Request(
            "POST",
            "/data/plugin/timeseries/timeSeries",
            urllib.parse.urlencode({"requests": json.dumps([spec])}).encode(),
            (("Content-Type", _FORM), ("X-XSRF-Protected", "1")),
        )
        for spec, _ in ts
    )
    ts_runs = [1 if "run" in spec else len(shape.runs) for spec, _ in ts]

    def ts_check(i: int, body: bytes) -> int | None:
        data = json.loads(body)
        if not isinstance(data, list) or len(data) != 1 or "error" in data[0]:
            return None
        run_to_series = data[0].get("runToSeries") or {}
        # A scalar card's tag is in every main run (not in the hparams sub-runs).
        if len(run_to_series) != ts_runs[i]:
            return None
        points = 0
        for values in run_to_series.values():
            if not values or int(values[-1]["step"]) != ts[i][1]:
                return None
            points += len(values)
        return points

    out["timeseries"] = RouteSet(
        "timeseries",
        f"POST /data/plugin/timeseries/timeSeries ({len(shape.tags)} scalar tags × all runs, "
        f"histograms and images × {len(shape.runs)} runs; one series per POST)",
        ts_requests,
        ts_check,
    )
    return out


# -- HTTP ----------------------------------------------------------------------------------------


def _send(conn: http.client.HTTPConnection, request: Request) -> tuple[int, bytes]:
    try:
        conn.request(request.method, request.path, body=request.body, headers=dict(request.headers))
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException):
        conn.close()
        return 0, b""


@dataclass
class Server:
    """A server under test."""

    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    port: int = 0

    def connection(self, timeout: float = 30.0) -> http.client.HTTPConnection:
        """A keep-alive connection (http.client reconnects when the server closes it)."""
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def check_alive(self) -> None:
        """Raise with the log's tail if the server has exited."""
        if exited(self.proc, 0.0):
            tail = self.log_path.read_text(errors="replace")[-2000:]
            raise BenchError(f"{self.name} exited early:\n{tail}")


def _spawn_boardd(logdir: Path, db: Path, workdir: Path) -> tuple[Server, Callable[[], int | None]]:
    port_file = workdir / "boardd.port"
    port_file.unlink(missing_ok=True)  # a stale port file would name the previous process's port
    log_path = workdir / "boardd.log"
    proc = spawn(boardd_serve_argv(logdir, port_file, db), log_path, child_env())
    return Server("boardd", proc, log_path), lambda: read_port_file(port_file)


def _spawn_tensorboard(logdir: Path, workdir: Path) -> tuple[Server, Callable[[], int | None]]:
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
    log_path = workdir / "tensorboard.log"
    proc = spawn(argv, log_path, dict(os.environ))

    def port() -> int | None:
        match = _TB_URL.search(log_path.read_text(errors="replace"))
        return int(match.group(1)) if match else None

    return Server("tensorboard", proc, log_path), port


#: What boardd's first answer needs from outside boardd, imported by a bare interpreter that then
#: binds a port and writes it to a file as ``boardd serve --port-file`` does: the start of a
#: server built on these libraries that did nothing else (no boardd code, no store, no answer).
_LIBRARIES = (
    "argparse",
    "asyncio",
    "logging",
    "apsw",
    "starlette.applications",
    "starlette.requests",
    "starlette.responses",
    "starlette.routing",
    "email.utils",
    "httptools",
)
_LIBRARIES_ONLY = f"""\
import {", ".join(_LIBRARIES)}
import os, socket, sys
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(listener.getsockname()[1]))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
sys.stdin.read()
"""


def start_libraries(workdir: Path, timeout: float) -> Start:
    """One start of a bare interpreter importing :data:`_LIBRARIES` (the interpreter boardd's
    console script runs): seconds from spawn until its port file is written."""
    port_file = workdir / "libraries.port"
    port_file.unlink(missing_ok=True)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _LIBRARIES_ONLY, str(port_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=child_env(),
    )
    try:
        while read_port_file(port_file) is None:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise BenchError(f"the libraries-only start failed:\n{err[-2000:]}")
            if time.monotonic() - started > timeout:
                raise BenchError(f"the libraries-only start took over {timeout:.0f} s")
            time.sleep(0.002)
        seconds = time.monotonic() - started
    finally:
        stop_process(proc, group=False, grace=5.0)
        for pipe in (proc.stdin, proc.stderr):
            if pipe is not None:
                pipe.close()
    return Start("libraries", port_seconds=seconds, first_answer_seconds=seconds, seconds=seconds)


@dataclass
class Start:
    """One start: seconds from spawn until the port was known (boardd's port file written,
    TensorBoard's URL printed), the first HTTP answer (any status), the complete answer."""

    server: str
    port_seconds: float = math.nan
    first_answer_seconds: float = math.nan
    seconds: float = math.nan


def start_until_answer(
    name: str, logdir: Path, db: Path, workdir: Path, probe: RouteSet, timeout: float
) -> tuple[Server, Start]:
    """Start ``name`` and poll (every 10 ms) until the probe's single request answers its final
    step; returns the server and the start's timings."""
    started = time.monotonic()
    timing = Start(name)
    if name == "boardd":
        server, port_of = _spawn_boardd(logdir, db, workdir)
    else:
        server, port_of = _spawn_tensorboard(logdir, workdir)
    (request,) = probe.requests
    deadline = started + timeout
    conn: http.client.HTTPConnection | None = None
    try:
        while True:
            now = time.monotonic()
            if now > deadline:
                raise BenchError(f"{name}: no complete answer within {timeout:.0f} s")
            if conn is None:
                port = port_of()
                if port is not None:
                    timing.port_seconds = time.monotonic() - started
                    server.port = port
                    conn = server.connection(timeout=10.0)
            if conn is not None:
                status, body = _send(conn, request)
                if status and math.isnan(timing.first_answer_seconds):
                    timing.first_answer_seconds = time.monotonic() - started
                if status == 200 and probe.check(0, body) is not None:
                    timing.seconds = time.monotonic() - started
                    return server, timing
            server.check_alive()
            time.sleep(0.01)
    except BaseException:
        stop_process(server.proc)
        raise
    finally:
        if conn is not None:
            conn.close()


def wait_complete(server: Server, sets: Sequence[RouteSet], timeout: float) -> list[str]:
    """Poll until every request of ``sets`` answers completely (TensorBoard loads run by run);
    a route whose every request answers 404 counts as missing. Returns the routes that never
    did."""
    deadline = time.monotonic() + timeout
    pending = list(sets)
    conn = server.connection()
    try:
        while pending and time.monotonic() < deadline:
            still = []
            for rs in pending:
                statuses, complete = [], True
                for i, request in enumerate(rs.requests):
                    status, body = _send(conn, request)
                    statuses.append(status)
                    if status != 200 or rs.check(i, body) is None:
                        complete = False
                        if status != 404:
                            break
                # Missing (measured and reported as such) only when every request is a 404:
                # TensorBoard also answers 404 for a run it has not loaded yet.
                if not complete and not all(s == 404 for s in statuses):
                    still.append(rs)
            pending = still
            if pending:
                server.check_alive()
                time.sleep(0.5)
    finally:
        conn.close()
    return [rs.name for rs in pending]


# -- load ----------------------------------------------------------------------------------------


@dataclass
class Load:
    """One timed load of one route on one server."""

    server: str
    route: str
    clients: int
    seconds: float
    requests: int
    errors: int
    bytes: int
    p50_ms: float
    p99_ms: float
    rps: float
    server_cpu_seconds: float


_WRK_RESULT = "BENCH_TB_RESULT "


def wrk_route_script(rs: RouteSet, out: Path) -> Path:
    """A wrk Lua script cycling through the route's requests (methods, bodies and headers
    kept: the timeSeries POSTs too) and printing its figures as one JSON line."""
    entries = []
    for r in rs.requests:
        headers = ", ".join(f"[{json.dumps(k)}] = {json.dumps(v)}" for k, v in r.headers)
        body = "nil" if r.body is None else json.dumps(r.body.decode("latin-1"))
        entries.append(
            f"wrk.format({json.dumps(r.method)}, {json.dumps(r.path)}, {{ {headers} }}, {body})"
        )
    lua_requests = ",\n    ".join(entries)
    out.write_text(
        f"""-- generated by bench/bench_tensorboard.py
local formatted, i = {{}}, 0
init = function(args)
  formatted = {{
    {lua_requests}
  }}
  i = math.random(#formatted) - 1
end
request = function()
  i = i % #formatted + 1
  return formatted[i]
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{_WRK_RESULT}{{"requests":%d,"duration_us":%d,"bytes":%d,"errors":%d,'
      .. '"p50_us":%d,"p99_us":%d}}\\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""
    )
    return out


def wrk_load(server: Server, rs: RouteSet, clients: int, duration: float, route: str) -> Load:
    """The same load from ``wrk`` (C, one thread driving every connection): a Python load
    generator on the same 2 cores tops out near 2,500 requests/s against a server doing
    nothing, below what boardd answers."""
    wrk = wrk_binary()
    assert wrk is not None
    with tempfile.TemporaryDirectory() as tmp:
        script = wrk_route_script(rs, Path(tmp) / "load.lua")
        argv = [
            wrk, "-t1", f"-c{clients}", f"-d{duration:g}s", "--timeout", "30s",
            "-s", str(script), f"http://127.0.0.1:{server.port}/",
        ]  # fmt: skip
        cpu_before = session_cpu_seconds(server.proc.pid)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60.0)
        cpu = session_cpu_seconds(server.proc.pid) - cpu_before
    line = next((x for x in done.stdout.splitlines() if x.startswith(_WRK_RESULT)), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(
            f"wrk failed ({done.returncode}): {done.stdout[-800:]} {done.stderr[-800:]}"
        )
    r = json.loads(line[len(_WRK_RESULT) :])
    seconds = r["duration_us"] / 1e6
    return Load(
        server=server.name,
        route=route,
        clients=clients,
        seconds=seconds,
        requests=r["requests"],
        errors=r["errors"],
        bytes=r["bytes"],
        p50_ms=r["p50_us"] / 1000.0,
        p99_ms=r["p99_us"] / 1000.0,
        rps=r["requests"] / seconds if seconds else 0.0,
        server_cpu_seconds=cpu,
    )


def http_load(server: Server, rs: RouteSet, clients: int, duration: float, route: str) -> Load:
    """``clients`` threads, each with its own keep-alive ``http.client`` connection, cycling
    through the route's requests (from different starting points) for ``duration`` seconds."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    nbytes = [0] * clients
    start = threading.Barrier(clients + 1)
    deadline = [0.0]
    requests = rs.requests

    def client(k: int) -> None:
        conn = server.connection()
        mine = latencies[k]
        i = k * len(requests) // clients
        start.wait()
        try:
            while time.perf_counter() < deadline[0]:
                t0 = time.perf_counter()
                status, body = _send(conn, requests[i])
                mine.append(time.perf_counter() - t0)
                nbytes[k] += len(body)
                errors[k] += status != 200
                i = (i + 1) % len(requests)
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    cpu_before = session_cpu_seconds(server.proc.pid)
    began = time.perf_counter()
    deadline[0] = began + duration
    start.wait()
    for t in threads:
        t.join(duration + 60.0)
    seconds = time.perf_counter() - began
    cpu = session_cpu_seconds(server.proc.pid) - cpu_before
    ms = [x * 1000.0 for xs in latencies for x in xs]
    return Load(
        server=server.name,
        route=route,
        clients=clients,
        seconds=seconds,
        requests=len(ms),
        errors=sum(errors),
        bytes=sum(nbytes),
        p50_ms=percentile(ms, 50),
        p99_ms=percentile(ms, 99),
        rps=len(ms) / seconds if seconds else math.nan,
        server_cpu_seconds=cpu,
    )


@dataclass
class Validation:
    """Each request of a route once, checked: status, points per answer, answer sizes."""

    server: str
    route: str
    status: str  # "ok", "missing" (404), or what was wrong
    statuses: list[int] = field(default_factory=list)
    points: list[int | None] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)


def validate(server: Server, rs: RouteSet) -> Validation:
    """One sequential pass: is the route there, and is every answer complete?"""
    conn = server.connection()
    answers = []
    try:
        for request in rs.requests:
            answers.append(_send(conn, request))
    finally:
        conn.close()
    statuses = [s for s, _ in answers]
    points: list[int | None] = []
    for i, (s, body) in enumerate(answers):
        try:
            points.append(rs.check(i, body) if s == 200 else None)
        except (ValueError, KeyError, TypeError, IndexError):
            points.append(None)
    if statuses and all(s == 404 for s in statuses):
        status = "missing"
    elif any(s != 200 for s in statuses):
        bad = sorted({s for s in statuses if s != 200})
        status = f"HTTP {', '.join(map(str, bad))} on {sum(s != 200 for s in statuses)} requests"
    elif any(p is None for p in points):
        status = f"{sum(p is None for p in points)} incomplete answers"
    else:
        status = "ok"
    return Validation(server.name, rs.name, status, statuses, points, [len(b) for _, b in answers])


# -- the browser ---------------------------------------------------------------------------------


@dataclass
class PageLoad:
    """One page load in a fresh browser context."""

    server: str
    url: str
    status: str  # "ok", "missing" (404), "timeout", or an error
    cards_ms: float = math.nan  # navigation start → first scalar card drawn (in-page clock)
    wall_ms: float = math.nan  # goto() called → signal seen (includes Playwright's round trips)


def browser_loads(
    targets: Sequence[tuple[str, str]], repeat: int, timeout: float, log: IO[str]
) -> tuple[list[PageLoad], str | None]:
    """Load each target URL ``repeat`` times (order alternating), each in a fresh context (empty
    cache); returns the loads, or a reason why the browser part could not run."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        return [], "playwright is not installed (.venv/bin/pip install playwright)"
    if not Path(CHROMIUM).exists():
        return [], f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    out: list[PageLoad] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for round_no in range(repeat):
                for name, url in targets if round_no % 2 == 0 else targets[::-1]:
                    context = browser.new_context(viewport={"width": 1280, "height": 800})
                    page = context.new_page()
                    load = PageLoad(name, url, "ok")
                    t0 = time.perf_counter()
                    try:
                        response = page.goto(url + "#timeseries", timeout=timeout * 1000.0)
                        if response is not None and response.status == 404:
                            load.status = "missing"
                        elif response is not None and response.status != 200:
                            load.status = f"HTTP {response.status}"
                        else:
                            handle = page.wait_for_function(
                                CARDS_DRAWN_JS, polling="raf", timeout=timeout * 1000.0
                            )
                            load.wall_ms = (time.perf_counter() - t0) * 1000.0
                            load.cards_ms = float(handle.json_value())
                    except PlaywrightError as exc:
                        timed_out = "Timeout" in type(exc).__name__ or "Timeout" in str(exc)
                        load.status = f"no cards within {timeout:g} s" if timed_out else str(exc)
                    finally:
                        context.close()
                    out.append(load)
                    print(
                        f"  page {round_no + 1}/{repeat}, {name}: {load.status}"
                        + (
                            f", cards drawn after {load.cards_ms:.0f} ms"
                            if load.status == "ok"
                            else ""
                        ),
                        file=log,
                    )
                    if load.status == "missing":
                        targets = [t for t in targets if t[0] != name]
        finally:
            browser.close()
    return out, None


# -- the run -------------------------------------------------------------------------------------


@dataclass
class Options:
    """What to run, from the command line."""

    small: bool
    clients: list[int]
    duration: float
    repeat: int
    start_repeat: int
    browser_repeat: int
    routes: list[str]
    skip_browser: bool
    keep: bool
    ready_timeout: float
    browser_timeout: float
    #: The load generator: "wrk" or "python".
    client: str = "python"


def compile_sources() -> None:
    """Byte-compiles boardd's sources, as installing a package does (pip compiles what it
    installs; TensorBoard's modules are compiled so). Without it, a boardd started where
    ``PYTHONDONTWRITEBYTECODE`` is set (or its ``__pycache__`` cannot be written) compiles
    every module it imports at each start: about 0.15-0.25 s of the start measured here on
    2 shared cores, a cost of the checkout, not of boardd."""
    import compileall

    compileall.compile_dir(REPO_DIR / "src" / "boardd", quiet=1)


def run(options: Options, log: IO[str]) -> dict[str, Any]:
    """Ingest, time the starts, start both servers, measure, stop them; returns the report."""
    import workload

    compile_sources()

    logdir = workload.small_workload() if options.small else workload.standard_workload()
    shape = workload_shape(logdir)
    sets = route_sets(shape)
    last_run, last_tag = shape.runs[-1], shape.tags[-1]
    probe = RouteSet(
        "probe",
        "last run's last tag",
        (_get("/data/plugin/scalars/scalars", run=last_run, tag=last_tag),),
        sets["scalars"].check,
    )
    warm_page_cache(logdir)
    workdir = Path(tempfile.mkdtemp(prefix="boardd-bench-tb-"))
    db = workdir / "boardd.sqlite"
    report: dict[str, Any] = {
        "options": asdict(options),
        "logdir": str(logdir),
        "shape": asdict(shape),
        "cpus": os.cpu_count(),
        "load_average": {"start": os.getloadavg()},
        "routes": {name: sets[name].label for name in options.routes},
    }
    servers: dict[str, Server] = {}
    try:
        print(f"ingesting {logdir} into boardd's store (once) ...", file=log)
        done = run_measured(
            [*console_script("boardd", "boardd"), "ingest", str(logdir), "--db", str(db)],
            env=child_env(),
            timeout=3600.0,
        )
        if done.returncode != 0:
            raise BenchError(f"boardd ingest failed ({done.returncode}):\n{done.stderr[-2000:]}")
        report["ingest_seconds"] = done.wall_seconds
        print(f"  {done.wall_seconds:.1f} s", file=log)

        # 2. start to complete answer, alternating which server starts first.
        starts: list[Start] = []
        for k in range(options.start_repeat):
            order = ["boardd", "tensorboard"] if k % 2 == 0 else ["tensorboard", "boardd"]
            for name in order:
                server, timing = start_until_answer(
                    name, logdir, db, workdir, probe, options.ready_timeout
                )
                stop_process(server.proc)
                starts.append(timing)
                print(
                    f"  start {k + 1}/{options.start_repeat}, {name}: port after "
                    f"{timing.port_seconds:.3f} s, first answer {timing.first_answer_seconds:.3f}"
                    f" s, complete answer {timing.seconds:.3f} s",
                    file=log,
                )
            floor = start_libraries(workdir, options.ready_timeout)
            starts.append(floor)
            print(
                f"  start {k + 1}/{options.start_repeat}, libraries alone: port after "
                f"{floor.seconds:.3f} s",
                file=log,
            )
        report["starts"] = [asdict(x) for x in starts]

        # 1. routes: TensorBoard first (its load is the long one), then boardd's warm restart.
        print("starting both servers for the route measurements ...", file=log)
        wanted = [sets[n] for n in options.routes]
        for name in ("tensorboard", "boardd"):
            server, _ = start_until_answer(name, logdir, db, workdir, probe, options.ready_timeout)
            servers[name] = server
            incomplete = wait_complete(server, wanted, options.ready_timeout)
            if incomplete:
                print(f"  {name}: incomplete after waiting: {', '.join(incomplete)}", file=log)
        validations = [validate(s, sets[n]) for n in options.routes for s in servers.values()]
        for v in validations:
            print(f"  {v.route:<14} {v.server:<12} {v.status}", file=log)
        report["validations"] = [asdict(v) for v in validations]
        status = {(v.server, v.route): v.status for v in validations}
        loads: list[Load] = []
        for route in options.routes:
            present = [n for n in ("boardd", "tensorboard") if status[(n, route)] != "missing"]
            for round_no in range(options.repeat):
                for clients in options.clients:
                    for name in present if round_no % 2 == 0 else present[::-1]:
                        servers[name].check_alive()
                        load = wrk_load if options.client == "wrk" else http_load
                        x = load(servers[name], sets[route], clients, options.duration, route)
                        loads.append(x)
                        print(
                            f"  {route:<14} round {round_no + 1}/{options.repeat}, {clients} "
                            f"client(s), {name:<11}: p50 {x.p50_ms:7.2f} ms, p99 {x.p99_ms:7.2f} "
                            f"ms, {x.rps:7.0f} req/s, {x.errors} errors",
                            file=log,
                        )
        report["loads"] = [asdict(x) for x in loads]

        # 3. the UI in a headless browser.
        if options.skip_browser:
            report["browser"], report["browser_skipped"] = [], "--skip-browser"
        else:
            targets = [
                ("boardd", f"http://127.0.0.1:{servers['boardd'].port}/tensorboard/"),
                ("tensorboard", f"http://127.0.0.1:{servers['tensorboard'].port}/"),
            ]
            pages, why = browser_loads(
                targets, options.browser_repeat, options.browser_timeout, log
            )
            report["browser"], report["browser_skipped"] = [asdict(x) for x in pages], why
    finally:
        for server in servers.values():
            stop_process(server.proc)
        if options.keep:
            print(f"kept {workdir} (server logs, boardd's store)", file=log)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    report["load_average"]["end"] = os.getloadavg()
    return report


# -- report --------------------------------------------------------------------------------------


def _stats(values: Sequence[float]) -> Stats | None:
    finite = [v for v in values if math.isfinite(v)]
    return Stats.of(finite) if finite else None


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Medians per (route, clients, server), ratios, and the targets' verdicts."""
    o = report["options"]
    loads = [Load(**x) for x in report.get("loads", [])]
    status = {(v["server"], v["route"]): v["status"] for v in report.get("validations", [])}
    cells: dict[str, Any] = {}
    for route in o["routes"]:
        for clients in o["clients"]:
            for name in ("boardd", "tensorboard"):
                mine = [
                    x for x in loads if (x.route, x.clients, x.server) == (route, clients, name)
                ]
                if mine:
                    cells[f"{route}/{clients}/{name}"] = {
                        "p50_ms": _stats([x.p50_ms for x in mine]),
                        "p99_ms": _stats([x.p99_ms for x in mine]),
                        "rps": _stats([x.rps for x in mine]),
                        "cpu_ms": _stats(
                            [x.server_cpu_seconds * 1000.0 / x.requests for x in mine if x.requests]
                        ),
                        "errors": sum(x.errors for x in mine),
                    }
    ratios: dict[str, Any] = {}
    targets: list[dict[str, Any]] = []
    for route in o["routes"]:
        worst: float | None = None
        for clients in o["clients"]:
            b = cells.get(f"{route}/{clients}/boardd")
            t = cells.get(f"{route}/{clients}/tensorboard")
            if b is None or t is None or b["rps"] is None or t["rps"] is None:
                continue
            r = {
                "rps": b["rps"].median / t["rps"].median,
                "p50": b["p50_ms"].median / t["p50_ms"].median,
                "p99": b["p99_ms"].median / t["p99_ms"].median,
            }
            ratios[f"{route}/{clients}"] = r
            worst = r["rps"] if worst is None else min(worst, r["rps"])
        state = status.get(("boardd", route), "not measured")
        if state == "missing":
            met, value = None, "missing on boardd (HTTP 404)"
        elif worst is None:
            met, value = None, state
        else:
            met = worst >= TARGET_RPS_RATIO and state == "ok"
            value = f"{worst:.1f}× at worst" + ("" if state == "ok" else f"; boardd: {state}")
        targets.append(
            {
                "what": f"{route}: boardd req/s ≥ {TARGET_RPS_RATIO:g}× TensorBoard's",
                "met": met,
                "value": value,
            }
        )
    starts = [Start(**x) for x in report.get("starts", [])]
    start_stats: dict[str, dict[str, Stats | None]] = {
        name: {
            key: _stats([getattr(x, key) for x in starts if x.server == name])
            for key in ("port_seconds", "first_answer_seconds", "seconds")
        }
        for name in ("boardd", "tensorboard", "libraries")
    }
    sb, st = start_stats["boardd"]["seconds"], start_stats["tensorboard"]["seconds"]
    sl = start_stats["libraries"]["seconds"]
    start_ratio = st.median / sb.median if sb and st and sb.median > 0 else None
    targets.append(
        {
            "what": f"warm restart to complete answer ≤ {TARGET_START_SECONDS:g} s (median)",
            "met": None if sb is None else sb.median <= TARGET_START_SECONDS,
            "value": None
            if sb is None
            else f"{sb.median:.3f} s"
            + ("" if start_ratio is None else f" (TensorBoard {start_ratio:.1f}× longer)"),
        }
    )
    pages = [PageLoad(**x) for x in report.get("browser", [])]
    page_stats: dict[str, Any] = {}
    for name in ("boardd", "tensorboard"):
        theirs = [x for x in pages if x.server == name]
        ok = [x.cards_ms for x in theirs if x.status == "ok"]
        failed = ", ".join(sorted({x.status for x in theirs if x.status != "ok"}))
        page_stats[name] = {
            "cards_ms": _stats(ok),
            "status": failed or ("ok" if theirs else "not measured"),
        }
    return {
        "cells": cells,
        "ratios": ratios,
        "starts": start_stats,
        "start_ratio": start_ratio,
        "libraries_ratio": st.median / sl.median if sl and st and sl.median > 0 else None,
        "pages": page_stats,
        "targets": targets,
    }


def _f(s: Stats | None, spec: str) -> str:
    return s.fmt(spec) if s is not None else "-"


def print_report(report: dict[str, Any], summary: dict[str, Any]) -> None:
    """The human-readable tables, ratios and verdicts."""
    o = report["options"]
    shape = report["shape"]
    print(
        f"TensorBoard's routes on {report['logdir']} ({len(shape['runs'])} main runs, "
        f"{shape['all_runs']} runs in all)"
    )
    print(
        "  boardd:      boardd serve LOGDIR --port-file F --db STORE, restarting on a store "
        f"ingested once ({report.get('ingest_seconds', math.nan):.1f} s)"
    )
    print("  TensorBoard: tensorboard --logdir LOGDIR --load_fast=true (rustboard), fresh start")
    if o.get("client") == "wrk":
        print(
            "  load generator: wrk, one thread driving every connection (keep-alive; TensorBoard "
            "closes the connection after every answer and wrk reconnects)"
        )
    else:
        print(
            "  load generator: Python threads, each with its own keep-alive http.client "
            "connection (TensorBoard closes the connection after every answer; the client "
            "reconnects)"
        )
    print()
    print("Answers (one pass over each route's requests; median answer bytes, points per answer)")
    vals = report.get("validations", [])
    for v in vals:
        sizes = statistics.median(v["sizes"]) if v["sizes"] else 0
        pts = [p for p in v["points"] if p is not None]
        print(
            f"  {v['route']:<14} {v['server']:<12} {v['status']:<20} "
            f"{len(v['statuses']):>3} requests, {sizes:>9,.0f} B, "
            f"{statistics.median(pts) if pts else 0:>6,.0f} points"
        )
    for route, label in report["routes"].items():
        print(f"  {route}: {label}")
    print()
    print(
        f"Routes ({o['duration']:g} s per cell, {o['repeat']} round(s)): median [min-max]; "
        "ratio = boardd / TensorBoard"
    )
    print(
        f"  {'route':<14} {'cl':>2} {'server':<12} {'p50 ms':>20} {'p99 ms':>20} "
        f"{'req/s':>20} {'CPU ms/req':>12} {'err':>4}"
    )
    cells = summary["cells"]
    status = {(v["server"], v["route"]): v["status"] for v in vals}
    for route in o["routes"]:
        for clients in o["clients"]:
            for name in ("boardd", "tensorboard"):
                c = cells.get(f"{route}/{clients}/{name}")
                if c is None:
                    state = status.get((name, route), "not measured")
                    print(f"  {route:<14} {clients:>2} {name:<12} {state}")
                    continue
                print(
                    f"  {route:<14} {clients:>2} {name:<12} {_f(c['p50_ms'], '.2f'):>20} "
                    f"{_f(c['p99_ms'], '.2f'):>20} {_f(c['rps'], '.0f'):>20} "
                    f"{_f(c['cpu_ms'], '.2f'):>12} {c['errors']:>4}"
                )
            r = summary["ratios"].get(f"{route}/{clients}")
            if r is not None:
                print(
                    f"  {route:<14} {clients:>2} {'ratio':<12} {r['p50']:>20.3f} "
                    f"{r['p99']:>20.3f} {r['rps']:>19.1f}×"
                )
    print()
    print(
        "Start to complete answer (spawn → scalars of the last run's last tag hold the final step)"
    )
    for name, label in (
        ("boardd", "boardd (warm restart)"),
        ("tensorboard", "TensorBoard (fresh)"),
    ):
        st = summary["starts"][name]
        s = st["seconds"]
        if s is not None:
            print(
                f"  {label:<24} median {s.median:7.3f} s, min {s.min:7.3f} s, n={s.n}  "
                f"(port known {_f(st['port_seconds'], '.3f')} s, first answer "
                f"{_f(st['first_answer_seconds'], '.3f')} s)"
            )
    if summary["start_ratio"] is not None:
        print(f"  TensorBoard / boardd: {summary['start_ratio']:.1f}× (medians)")
    sl, sb = summary["starts"]["libraries"]["seconds"], summary["starts"]["boardd"]["port_seconds"]
    if sl is not None:
        print(
            f"  {'libraries alone':<24} median {sl.median:7.3f} s, min {sl.min:7.3f} s, n={sl.n}  "
            "(a bare interpreter importing what boardd's first answer needs from outside "
            "boardd: asyncio, Starlette, httptools, APSW; then binding a port)"
        )
        if sb is not None:
            print(
                f"  boardd's own part of its start: {sb.median - sl.median:.3f} s of "
                f"{sb.median:.3f} s until its port is known (medians)"
            )
        if summary["libraries_ratio"] is not None:
            print(
                f"  TensorBoard / libraries alone: {summary['libraries_ratio']:.1f}× (the "
                "ratio a server on these libraries that did nothing else would reach)"
            )
    print()
    print(
        "Time Series view, navigation → first scalar card drawn with its data (headless Chromium)"
    )
    if report.get("browser_skipped"):
        print(f"  skipped: {report['browser_skipped']}")
    else:
        for name, label in (("boardd", "boardd /tensorboard/"), ("tensorboard", "TensorBoard /")):
            p = summary["pages"][name]
            figure = _f(p["cards_ms"], ".0f") + " ms" if p["cards_ms"] else ""
            extra = "" if p["status"] == "ok" else p["status"]
            print(f"  {label:<22} {figure} {extra}".rstrip())
        b, t = summary["pages"]["boardd"]["cards_ms"], summary["pages"]["tensorboard"]["cards_ms"]
        if b and t:
            print(f"  ratio boardd / TensorBoard: {b.median / t.median:.2f}")
    print()
    print("Targets")
    for t in summary["targets"]:
        verdict = "n/a" if t["met"] is None else ("MET" if t["met"] else "NOT MET")
        value = f" ({t['value']})" if t["value"] else ""
        print(f"  {t['what']}: {verdict}{value}")
    la = report["load_average"]
    print(
        f"load average (1 min): {la['start'][0]:.2f} at start, {la['end'][0]:.2f} at end, on "
        f"{report['cpus']} CPUs (servers, clients and browser share them)"
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, Stats):
        return asdict(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _csv_ints(text: str) -> list[int]:
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give counts like 1,8") from None
    if not values or values[0] < 1 or values[-1] > 256:
        raise argparse.ArgumentTypeError(f"{text!r}: give counts from 1 to 256")
    return values


def _csv_routes(text: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [n for n in names if n not in ROUTES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"routes are among {', '.join(ROUTES)}")
    return [n for n in ROUTES if n in names]


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: run the benchmark and print the tables (or JSON)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--small",
        "--quick",
        action="store_true",
        help="quick smoke run: small workload, 2 s cells, 1 round, 2 starts, 1 page load each",
    )
    parser.add_argument("--clients", type=_csv_ints, default=[1, 8], help="default 1,8")
    parser.add_argument("--duration", type=float, help="seconds per cell (default 10; small: 2)")
    parser.add_argument("--repeat", type=int, help="rounds per route (default 2; small: 1)")
    parser.add_argument(
        "--start-repeat", type=int, help="starts of each server (default 5; small: 2)"
    )
    parser.add_argument("--browser-repeat", type=int, help="page loads each (default 3; small: 1)")
    parser.add_argument("--routes", type=_csv_routes, default=list(ROUTES), help=",".join(ROUTES))
    parser.add_argument("--skip-browser", action="store_true", help="no headless browser part")
    parser.add_argument(
        "--client",
        choices=("wrk", "python"),
        default="wrk" if wrk_binary() else "python",
        help="load generator (default: wrk when installed: apt-get install -y wrk)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the server logs and the store")
    parser.add_argument("--ready-timeout", type=float, default=600.0, help="seconds per start")
    parser.add_argument("--browser-timeout", type=float, default=60.0, help="seconds per page")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every target is met")
    results.add_argument(parser)
    args = parser.parse_args(argv)
    small = bool(args.small)
    options = Options(
        small=small,
        clients=args.clients,
        duration=args.duration if args.duration is not None else (2.0 if small else 10.0),
        repeat=args.repeat if args.repeat is not None else (1 if small else 2),
        start_repeat=args.start_repeat if args.start_repeat is not None else (2 if small else 5),
        browser_repeat=args.browser_repeat
        if args.browser_repeat is not None
        else (1 if small else 3),
        routes=args.routes,
        skip_browser=args.skip_browser,
        client=args.client,
        keep=args.keep,
        ready_timeout=args.ready_timeout,
        browser_timeout=args.browser_timeout,
    )
    if not 0 < options.duration <= 600 or min(options.repeat, options.start_repeat) < 1:
        parser.error("--duration must be in (0, 600], --repeat and --start-repeat at least 1")
    # SIGTERM unwinds like Ctrl-C, so run()'s finally still stops both servers.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        report = run(options, sys.stderr)
    except BenchError as exc:
        print(f"bench_tensorboard: {exc}", file=sys.stderr)
        return 2
    summary = summarize(report)
    if args.json:
        print(json.dumps(_jsonable({**report, "summary": summary}), indent=2))
    else:
        print_report(report, summary)
    write_results(report, summary, args.results, argv)
    if args.check and not all(t["met"] for t in summary["targets"]):
        return 1
    return 0


def write_results(
    report: dict[str, Any], summary: dict[str, Any], path: str | None, argv: Sequence[str] | None
) -> None:
    """bench/results/bench_tensorboard.json: each route's requests/s at the most clients, the
    warm restart's seconds to a complete answer, the first card drawn."""
    o = report["options"]
    most = max(o["clients"])
    cells = summary["cells"]
    figures = []
    for route in o["routes"]:
        b = cells.get(f"{route}/{most}/boardd")
        t = cells.get(f"{route}/{most}/tensorboard")
        if b is None or b["rps"] is None:
            continue
        anchor = t["rps"].median if t and t["rps"] else None
        ratio = results.ratio(b["rps"].median, anchor, "higher")
        figures.append(
            results.figure(
                f"TensorBoard's {route} route, {most} clients: requests/s",
                b["rps"].median,
                anchor,
                unit="req/s",
                better="higher",
                target=f"≥ {TARGET_RPS_RATIO:g}× TensorBoard",
                met=None if ratio is None else ratio >= TARGET_RPS_RATIO,
            )
        )
    sb = summary["starts"]["boardd"]["seconds"]
    st = summary["starts"]["tensorboard"]["seconds"]
    if sb is not None:
        figures.append(
            results.figure(
                "start → first complete scalars answer (boardd: a warm restart)",
                sb.median,
                st.median if st else None,
                unit="s",
                better="lower",
                target=f"≤ {TARGET_START_SECONDS:g} s",
                met=sb.median <= TARGET_START_SECONDS,
            )
        )
    pages = summary["pages"]
    cards_b, cards_t = pages["boardd"]["cards_ms"], pages["tensorboard"]["cards_ms"]
    if cards_b is not None:
        figures.append(
            results.figure(
                "TensorBoard's UI, Time Series: first card drawn",
                cards_b.median,
                cards_t.median if cards_t else None,
                unit="ms",
                better="lower",
            )
        )
    results.write(
        path,
        "bench_tensorboard",
        title="TensorBoard's routes, start-up and UI",
        anchor="tensorboard --load_fast=true (its Rust data server), a fresh start each time",
        workload=f"{'small' if o['small'] else 'standard'} workload; {o['duration']:g} s per "
        f"cell, {o['repeat']} round(s), {o['start_repeat']} start(s) of each server (medians)",
        figures=figures,
        detail=_jsonable({"summary": summary, "options": o}),
        argv=argv,
    )


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
