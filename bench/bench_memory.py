"""Memory under heavy requests: boardd's peak and settled RSS while 8 clients ask for as much
as the API lets them.

``boardd serve`` (a subprocess) serves the standard workload (its store is kept in
``bench/.cache/`` and caught up, not rebuilt, on later runs). Once it is live and has idled,
its RSS (``VmRSS``) is the *idle* figure. Then ``--clients`` clients (default 8) first ask for
every scalar series all at once, one request each, and then run a mix for ``--seconds``, each
from its own place in it:

- every scalar series of the experiment (``/api/v1/scalars?plugin=scalars``: no run, no tag);
- every run's histograms (``/api/v1/tensors?plugin=histograms``);
- an hparams request body far over the limit, to boardd's and to TensorBoard's hparams route
  (the body is sent until the server answers);
- normal chart requests: one series downsampled, TensorBoard's scalars route, the series list.

The RSS is sampled every 50 ms throughout: *peak* is the highest sample. After the clients
stop the daemon idles ``--settle`` seconds, and the RSS then is the *after* figure; beside
both, the threads, the heap and file parts of the RSS, and what the response cache and the
column cache hold (from ``/api/v1/health``), which say where a difference comes from.

Targets: peak under 300 MiB, and after within 20 % of idle. ``--check`` exits 1 if either is
missed. There is no anchor: TensorBoard keeps every point of the logdir in memory, so its
figures answer another question (bench_ingest.py compares the two on loading).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import shutil
import socket
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Sequence
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
    process_group,
    read_port_file,
    spawn,
    stop_process,
)
from workload import cache_root, small_workload, standard_workload  # noqa: E402

MIB = 2**20
TARGET_PEAK_MIB = 300.0
TARGET_AFTER = 0.20
#: How much of an over-limit body a client sends before it gives up waiting for the answer.
BIG_BODY_BYTES = 64 * MIB
#: The body's declared length: what a client claiming a huge request says.
BIG_BODY_DECLARED = 400 * MIB


def rss_bytes(pid: int) -> int | None:
    """VmRSS of the daemon (with its answer processes), None once it is gone."""
    return rss_parts(pid).get("VmRSS")


def rss_parts(pid: int) -> dict[str, int]:
    """VmRSS and its parts (RssAnon: the heaps; RssFile: mapped files, libraries), bytes;
    and the number of threads: summed over the daemon's processes (its answer workers
    count)."""
    out: dict[str, int] = {}
    for member in process_group(pid) or [pid]:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                name, _, value = line.partition(":")
                if name in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                    out[name] = out.get(name, 0) + int(value.split()[0]) * 1024
                elif name == "Threads":
                    out[name] = out.get(name, 0) + int(value)
    return out


def _parts_text(parts: dict[str, int]) -> str:
    sizes = ", ".join(f"{k} {v / MIB:.1f}" for k, v in parts.items() if k.startswith("Rss"))
    return f"{parts.get('Threads', 0)} threads, {sizes}"


def _get(port: int, path: str, timeout: float = 600.0) -> tuple[int, int]:
    """GETs a path (gzip accepted), reading the answer as it comes; its status and size."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"accept-encoding": "gzip"})
        response = conn.getresponse()
        total = 0
        while chunk := response.read(1 << 20):
            total += len(chunk)
        return response.status, total
    finally:
        conn.close()


def _big_post(port: int, path: str, chunked: bool) -> int:
    """POSTs a body far over any route's limit, as fast as the server takes it, until the
    server answers; the status (0 if none came)."""
    headers = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    headers.append(
        "Transfer-Encoding: chunked" if chunked else f"Content-Length: {BIG_BODY_DECLARED}"
    )
    piece = b'{"x":"' + b"y" * (256 * 1024) + b'"}'
    framed = b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
    with socket.create_connection(("127.0.0.1", port), timeout=60.0) as sock:
        sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode("latin-1"))
        sock.settimeout(0.0)
        sent = 0
        answer = b""
        with contextlib.suppress(OSError):
            while sent < BIG_BODY_BYTES:
                try:
                    answer += sock.recv(65536)
                    break  # the server has answered (or closed)
                except BlockingIOError:
                    pass
                try:
                    sent += sock.send(framed)
                except BlockingIOError:
                    time.sleep(0.001)
        sock.settimeout(30.0)
        with contextlib.suppress(OSError):
            while b"\r\n" not in answer:
                more = sock.recv(65536)
                if not more:
                    break
                answer += more
    try:
        return int(answer.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


@dataclass
class Mix:
    """The requests of the mix, by name."""

    port: int
    #: (run, tag) of every scalar series, sorted.
    series: list[tuple[str, str]]

    def requests(self) -> list[tuple[str, Callable[[], int]]]:
        def get(path: str) -> Callable[[], int]:
            return lambda: _get(self.port, path)[0]

        q = urllib.parse.urlencode
        (run, tag), (last_run, last_tag) = self.series[0], self.series[-1]
        return [
            ("every scalar series", get("/api/v1/scalars?plugin=scalars")),
            (
                "chart: one series downsampled",
                get(
                    "/api/v1/scalars?"
                    + q({"plugin": "scalars", "run": run, "tag": tag, "downsample": 1000})
                ),
            ),
            (
                "big hparams body (TensorBoard's route)",
                lambda: _big_post(self.port, "/data/plugin/hparams/session_groups", chunked=False),
            ),
            ("histograms of every run", get("/api/v1/tensors?plugin=histograms")),
            (
                "chart: TensorBoard's scalars route",
                get("/data/plugin/scalars/scalars?" + q({"run": last_run, "tag": last_tag})),
            ),
            (
                "big hparams body (boardd's route, chunked)",
                lambda: _big_post(self.port, "/api/v1/hparams/session_groups", chunked=True),
            ),
            ("every scalar series, columns", get("/api/v1/scalars?plugin=scalars&format=columns")),
            ("series list", get("/api/v1/scalars/list?plugin=scalars")),
        ]


@dataclass
class Client:
    """One client: the mix round after round, from its own place in it."""

    mix: list[tuple[str, Callable[[], int]]]
    offset: int
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def call(self, index: int) -> None:
        name, call = self.mix[index % len(self.mix)]
        began = time.monotonic()
        try:
            self.statuses[(name, call())] += 1
        except (OSError, http.client.HTTPException) as exc:
            self.errors.append(f"{name}: {exc!r}")
        self.seconds.setdefault(name, []).append(time.monotonic() - began)

    def loop(self) -> None:
        i = self.offset
        while not self.stop.is_set():
            self.call(i)
            i += 1


@dataclass
class Sampler:
    """The RSS of a process every ``every`` seconds, in a thread."""

    pid: int
    every: float = 0.05
    peak: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def loop(self) -> None:
        while not self.stop.is_set():
            rss = rss_bytes(self.pid)
            if rss is None:
                return
            self.peak = max(self.peak, rss)
            self.stop.wait(self.every)


def _wait_live(port: int, server: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, http.client.HTTPException, ValueError):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10.0)
            conn.request("GET", "/api/v1/health")
            health = json.loads(conn.getresponse().read())
            conn.close()
            exps = health["experiments"]
            if exps and all(
                e.get("state") == "live" and e.get("bytes_done") == e.get("bytes_total")
                for e in exps
            ):
                return
        if exited(server, 0.5):
            raise SystemExit("boardd serve exited before it was live")
    raise SystemExit(f"boardd serve was not live within {timeout:.0f} s")


def _cache_text(port: int) -> str:
    """The response cache's and the column cache's bytes, from /api/v1/health."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60.0)
    conn.request("GET", "/api/v1/health")
    cache = json.loads(conn.getresponse().read())["cache"]
    conn.close()
    columns = cache.get("columns", {})
    held = columns.get("bytes", 0)
    return f"response cache {cache['bytes'] / MIB:.1f}, column cache {held / MIB:.1f}"


def _series(port: int) -> list[tuple[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60.0)
    conn.request("GET", "/api/v1/scalars/list?plugin=scalars")
    listed = json.loads(conn.getresponse().read())
    conn.close()
    return sorted((run, tag) for run, tags in listed.items() for tag in tags)


def bench(args: argparse.Namespace) -> int:
    logdir = small_workload() if args.small else standard_workload()
    name = "small" if args.small else "standard"
    store_dir = cache_root() / f"bench_memory-{name}"
    store_dir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="boardd-memory-"))
    env = child_env()
    env["STATE_DIRECTORY"] = str(workdir / "state")
    port_file = workdir / "port"
    argv = boardd_serve_argv(logdir, port_file, store_dir / "store.sqlite")
    server = spawn([*argv, *args.serve_arg], workdir / "serve.log", env)
    clients: list[Client] = []
    threads: list[threading.Thread] = []
    sampler = Sampler(server.pid)
    try:
        deadline = time.monotonic() + 60.0
        while (port := read_port_file(port_file)) is None:
            if exited(server, 0.1) or time.monotonic() > deadline:
                tail = (workdir / "serve.log").read_text(errors="replace")[-2000:]
                raise SystemExit(f"boardd serve did not start:\n{tail}")
        _wait_live(port, server, args.timeout)
        series = _series(port)
        runs = {run for run, _ in series}
        # The deferred starts (column cache, hparams, disk tier) happen within seconds of
        # the first answer; idle is measured after them.
        time.sleep(args.settle)
        idle_parts = rss_parts(server.pid)
        idle_caches = _cache_text(port)
        idle = idle_parts.get("VmRSS", 0)
        print(
            f"memory: {name} workload ({len(series)} scalar series, {len(runs)} runs), pid "
            f"{server.pid}, idle RSS {idle / MIB:.1f} MiB; {args.clients} clients for "
            f"{args.seconds:g} s",
            flush=True,
        )
        sampler_thread = threading.Thread(target=sampler.loop, daemon=True)
        sampler_thread.start()
        mix = [r for r in Mix(port, series).requests() if args.only in r[0]]
        clients = [Client(mix, i) for i in range(args.clients)]
        # First every client asks for every scalar series at once, then the mix runs.
        began = time.monotonic()
        threads = [threading.Thread(target=c.call, args=(0,), daemon=True) for c in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        at_once = time.monotonic() - began
        peak_at_once = sampler.peak
        print(
            f"{args.clients} × every scalar series at once: {at_once:.1f} s, peak RSS "
            f"{peak_at_once / MIB:.1f} MiB",
            flush=True,
        )
        threads = [threading.Thread(target=c.loop, daemon=True) for c in clients]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        time.sleep(args.seconds)
        for client in clients:
            client.stop.set()
        for thread in threads:
            thread.join()
        ended = time.monotonic() - began
        time.sleep(args.settle)
        after_parts = rss_parts(server.pid)
        after_caches = _cache_text(port)
        after = after_parts.get("VmRSS", 0)
        sampler.stop.set()
        sampler_thread.join()
    finally:
        for client in clients:
            client.stop.set()
        sampler.stop.set()
        stop_process(server)
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    statuses: Counter[tuple[str, int]] = Counter()
    for client in clients:
        statuses.update(client.statuses)
    print(f"the mix: {ended:.1f} s (the last requests finish after the end), statuses:")
    for request_name, _ in mix:
        counts = ", ".join(
            f"{status}: {n}"
            for (n_name, status), n in sorted(statuses.items())
            if n_name == request_name
        )
        took = sorted(t for c in clients for t in c.seconds.get(request_name, ()))
        timing = f"; median {took[len(took) // 2]:.2f} s, max {took[-1]:.2f} s" if took else ""
        print(f"  {request_name:45} {counts or '-'}{timing}")
    errors = [e for c in clients for e in c.errors]
    if errors:
        print(f"  errors: {len(errors)}, e.g. {errors[0]}")
    peak = max(sampler.peak, after)
    growth = (after - idle) / idle
    print(
        f"RSS: idle {idle / MIB:.1f} MiB, peak {peak / MIB:.1f} MiB, after {args.settle:g} s "
        f"{after / MIB:.1f} MiB ({100 * growth:+.1f} % of idle)"
    )
    print(f"  idle:  {_parts_text(idle_parts)}; {idle_caches} MiB")
    print(f"  after: {_parts_text(after_parts)}; {after_caches} MiB")
    peak_met = peak < TARGET_PEAK_MIB * MIB
    after_met = growth <= TARGET_AFTER
    print(
        f"target: peak under {TARGET_PEAK_MIB:g} MiB: {'met' if peak_met else 'NOT met'}; "
        f"after within {100 * TARGET_AFTER:g} % of idle: {'met' if after_met else 'NOT met'}"
    )
    results.write(
        args.results,
        "bench_memory",
        title="Memory under heavy requests",
        anchor=None,
        workload=f"the {name} workload ({len(series)} scalar series); {args.clients} clients "
        f"asking for every series at once, then a mix of heavy requests for {args.seconds:g} s",
        figures=[
            results.figure("idle RSS", idle / MIB, unit="MiB", better="lower"),
            results.figure(
                "peak RSS",
                peak / MIB,
                unit="MiB",
                better="lower",
                target=f"< {TARGET_PEAK_MIB:g} MiB",
                met=peak_met,
            ),
            results.figure(
                f"RSS {args.settle:g} s after the clients stop",
                after / MIB,
                unit="MiB",
                better="lower",
                target=f"within {100 * TARGET_AFTER:g} % of idle",
                met=after_met,
            ),
        ],
        notes="No anchor: TensorBoard keeps every point of the logdir in memory, which answers "
        "another question (the ingest benchmark compares the two on loading).",
        detail={"idle": idle_parts, "after": after_parts, "at_once_seconds": at_once},
    )
    return 0 if (peak_met and after_met) or not args.check else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="use the small workload")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the mix")
    parser.add_argument(
        "--settle", type=float, default=10.0, help="idle seconds before idle and after figures"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="for the catch-up")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument(
        "--serve-arg", action="append", default=[], help="an extra argument of boardd serve"
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--only",
        default="",
        help="only the requests whose name has this text (for finding "
        "what costs memory; the first phase runs the first of them)",
    )
    results.add_argument(parser)
    return bench(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
