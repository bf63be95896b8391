"""Live stream latency: from a store commit to its Server-Sent Event at the subscribers.

boardd is measured on its daemon path: the writer (a WriteSession + Ingestor in this process,
as a ``boardd serve`` runner) claims the store on the app's ChangeHub (the commit bus), which
announces each commit, and
``GET /api/v1/stream`` sends the changes. The anchor is what a poller gets at best: the same
app without a hub, which notices commits by checking ``PRAGMA data_version`` every 50 ms (the
stream's own fallback for stores written by another process). TensorBoard has no push API: its
UI reloads every 30 s.

The app runs under boardd's HTTP server in a thread of this process; the subscribers (httpx,
asyncio) run in a child process, so their parsing does not compete for this process's GIL. Both
sides read ``time.monotonic()`` (CLOCK_MONOTONIC, one clock for the whole machine). Latency =
arrival of the last message of a commit (its id is the commit's generation) minus the moment
``StoreWriter.transaction()`` returned; per commit, the slowest subscriber counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
SRC = REPO_DIR / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import results  # noqa: E402  (bench/, put on the path above)

#: The target for the daemon path: a message leaves within 20 ms of its commit.
TARGET_MS = 20.0
WALL = 1_700_000_000.0


# -- the subscribers: a child process ------------------------------------------------------------


async def _subscribe(url: str, count: int) -> int:
    import httpx

    arrivals: list[list[tuple[str, float]]] = [[] for _ in range(count)]
    ready = [asyncio.Event() for _ in range(count)]

    async def one(i: int, client: httpx.AsyncClient) -> None:
        async with client.stream("GET", f"{url}/api/v1/stream") as response:
            event_id = None
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    event_id = line[4:]
                elif line == "":
                    if event_id is not None:
                        arrivals[i].append((event_id, time.monotonic()))
                    event_id = None
                    ready[i].set()

    limits = httpx.Limits(max_connections=count + 1)
    async with httpx.AsyncClient(timeout=None, limits=limits, trust_env=False) as client:
        tasks = [asyncio.create_task(one(i, client)) for i in range(count)]
        await asyncio.gather(*(r.wait() for r in ready))
        print(json.dumps({"ready": True}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps({"arrivals": arrivals}), flush=True)
    return 0


# -- the writer and the server: this process -----------------------------------------------------


class _Writer:
    """A store written by this process: ``commit(step)`` appends one step of every tag to the
    event file and commits it as a live runner does (read the changed file, flush)."""

    def __init__(self, root: Path, tags: int) -> None:
        from tensorboard.summary.writer.record_writer import RecordWriter

        from boardd.ingest.ingestor import Ingestor
        from boardd.store.session import WriteSession

        self.logdir = root / "logs"
        (self.logdir / "train").mkdir(parents=True)
        self.path = self.logdir / "train" / "events.out.tfevents.1700000000.bench"
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self._records = RecordWriter(self._file)
        self._tags = [f"metrics/tag{t}" for t in range(tags)]
        self.db = root / "store.sqlite"
        self.session = WriteSession(self.db, self.logdir)
        self.commits: dict[int, float] = {}
        self.listeners: list[Any] = []
        self.session.writer.on_commit(self._committed)
        self.ingestor = Ingestor(self.session.writer, self.logdir, experiment="bench", workers=1)

    def _committed(self, generation: int) -> None:
        self.commits[generation] = time.monotonic()
        for listener in self.listeners:
            listener("bench", generation)

    def commit(self, step: int) -> int:
        from tensorboard.compat.proto import event_pb2

        for i, tag in enumerate(self._tags):
            event = event_pb2.Event(step=step, wall_time=WALL + step)
            event.summary.value.add(tag=tag, simple_value=math.sin(step + i))
            self._records.write(event.SerializeToString())
        self._file.flush()
        self.ingestor.ingest_changed([self.path])
        self.ingestor.flush()
        return self.session.writer.generation

    def close(self) -> None:
        self._file.close()
        self.ingestor.close()
        self.session.close()


def _measure(path_name: str, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    from boardd.api.app import create_app
    from boardd.config import ExperimentSpec
    from boardd.daemon.http_server import MAX_CONNECTIONS, Server, server_config
    from boardd.store.bus import ChangeHub

    writer = _Writer(root, args.tags)
    writer.commit(0)
    hub = ChangeHub() if path_name == "hub" else None
    if hub is not None:
        # As a runner does: the writer claims the store on the bus, which announces commits.
        hub.claim("bench", writer.session.writer)
    app = create_app([ExperimentSpec("bench", writer.logdir, writer.db)], hub=hub)
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say TCP, and Nagle's
    # algorithm would hold each message until the client's delayed ACK of the previous one.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    # Every subscriber holds a connection for the whole run: the cap leaves room for them.
    cap = max(MAX_CONNECTIONS, args.subscribers + 16)
    server = Server(server_config(app, graceful=2.0, max_connections=cap))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    child = subprocess.Popen(
        [sys.executable, __file__, "--client", url, "--subscribers", str(args.subscribers)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        if json.loads(child.stdout.readline()).get("ready") is not True:
            raise RuntimeError("the subscribers did not connect")
        generations = []
        for step in range(1, args.commits + 1):
            generations.append(writer.commit(step))
            time.sleep(args.pause)
        time.sleep(0.3)  # the last messages (the poller may need up to 50 ms)
        child.stdin.close()
        arrivals = json.loads(child.stdout.readline())["arrivals"]
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if hub is not None:
            hub.close()
        server.should_exit = True
        thread.join(10)
        sock.close()
        writer.close()
    # A commit has reached a subscriber once an event id at or past its generation has: ids
    # only grow, and a wake-up that covers several commits sends only the last one's id.
    latencies = []
    missing = 0
    for generation in generations:
        committed = writer.commits[generation]
        firsts = [
            min((at for event_id, at in sub if int(event_id) >= generation), default=None)
            for sub in arrivals
        ]
        if any(at is None for at in firsts):
            missing += 1
            continue
        latencies.append((max(at for at in firsts if at is not None) - committed) * 1e3)
    return _summary(path_name, latencies, missing)


def _summary(name: str, latencies: list[float], missing: int) -> dict[str, Any]:
    ordered = sorted(latencies)
    if not ordered:
        return {"path": name, "commits": 0, "missing": missing}

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1)]

    return {
        "path": name,
        "commits": len(ordered),
        "missing": missing,
        "p50_ms": round(statistics.median(ordered), 3),
        "p99_ms": round(pct(99), 3),
        "max_ms": round(ordered[-1], 3),
    }


_LABELS = {
    "hub": "boardd: writer → ChangeHub (daemon)",
    "poll": "anchor: PRAGMA data_version poll, 50 ms",
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=300, help="commits per path (300)")
    parser.add_argument("--tags", type=int, default=8, help="scalar tags per commit (8)")
    parser.add_argument("--subscribers", type=int, default=1, help="open streams (1)")
    parser.add_argument("--pause", type=float, default=0.02, help="seconds between commits (0.02)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of both paths (1)")
    parser.add_argument("--small", action="store_true", help="30 commits: a quick check")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the target is met")
    parser.add_argument("--client", help=argparse.SUPPRESS)
    results.add_argument(parser)
    args = parser.parse_args(argv)
    if args.client:
        return asyncio.run(_subscribe(args.client, args.subscribers))
    if args.small:
        args.commits = 30
    rounds: list[dict[str, dict[str, Any]]] = []
    for _ in range(args.repeat):
        round_ = {}
        for path_name in ("hub", "poll"):
            with tempfile.TemporaryDirectory(prefix="boardd-bench-stream-") as tmp:
                round_[path_name] = _measure(path_name, Path(tmp), args)
        rounds.append(round_)
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"rounds": rounds, "loadavg": load}, indent=2))
    else:
        _report(rounds, args, load)
    met = all(r["hub"].get("p99_ms", math.inf) <= TARGET_MS for r in rounds)
    _write_results(rounds, args, argv)
    return 1 if args.check and not met else 0


def _write_results(
    rounds: list[dict[str, dict[str, Any]]], args: argparse.Namespace, argv: Sequence[str] | None
) -> None:
    def median(path_name: str, key: str) -> float:
        return float(statistics.median(r[path_name].get(key, math.nan) for r in rounds))

    hub_p99 = median("hub", "p99_ms")
    results.write(
        args.results,
        "bench_stream",
        title="Live stream: commit → Server-Sent Event",
        anchor="the same app noticing commits by polling PRAGMA data_version every 50 ms",
        workload=f"{args.commits} commits of {args.tags} scalar tags, {args.subscribers} "
        f"subscriber(s), {args.pause * 1e3:.0f} ms apart; {args.repeat} round(s), medians",
        figures=[
            results.figure(
                "commit → message, p50",
                median("hub", "p50_ms"),
                median("poll", "p50_ms"),
                unit="ms",
                better="lower",
            ),
            results.figure(
                "commit → message, p99",
                hub_p99,
                median("poll", "p99_ms"),
                unit="ms",
                better="lower",
                target=f"≤ {TARGET_MS:.0f} ms",
                met=hub_p99 <= TARGET_MS,
            ),
        ],
        detail={"rounds": rounds},
        argv=argv,
    )


def _report(
    rounds: list[dict[str, dict[str, Any]]], args: argparse.Namespace, load: tuple[float, ...]
) -> None:
    print(
        f"commit → SSE message: {args.commits} commits of {args.tags} tags, "
        f"{args.subscribers} subscriber(s), {args.pause * 1e3:.0f} ms apart; latency of the "
        f"slowest subscriber per commit; load average {load[0]:.1f}"
    )
    print(f"{'round':<6}{'path':<42} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'missing':>8}")
    for i, round_ in enumerate(rounds, 1):
        for path_name, r in round_.items():
            print(
                f"{i:<6}{_LABELS[path_name]:<42} {r.get('p50_ms', math.nan):>8.2f} "
                f"{r.get('p99_ms', math.nan):>8.2f} {r.get('max_ms', math.nan):>8.2f} "
                f"{r['missing']:>8}"
            )

    def median(path_name: str, key: str) -> float:
        return float(statistics.median(r[path_name].get(key, math.nan) for r in rounds))

    hub_p50, hub_p99 = median("hub", "p50_ms"), median("hub", "p99_ms")
    poll_p50, poll_p99 = median("poll", "p50_ms"), median("poll", "p99_ms")
    print(
        f"median of rounds: boardd p50 {hub_p50:.2f} ms, p99 {hub_p99:.2f} ms; "
        f"anchor p50 {poll_p50:.2f} ms, p99 {poll_p99:.2f} ms"
    )
    print(f"ratio anchor ÷ boardd: p50 {poll_p50 / hub_p50:.1f}x, p99 {poll_p99 / hub_p99:.1f}x")
    verdict = "MET" if hub_p99 <= TARGET_MS else "NOT MET"
    print(f"target (daemon path): p99 ≤ {TARGET_MS:.0f} ms: {verdict}")


if __name__ == "__main__":
    sys.exit(main())
