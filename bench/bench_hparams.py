"""ListSessionGroups at scale: boardd against TensorBoard on one generated hparams experiment.

The experiment (generated once, cached in ``bench/.cache/hparams-S×H×M/``) is what TensorBoard's
official hparams API writes: an ``hparams_config`` summary in the root run and a run per session
with ``hparams(..., trial_id=...)`` (sessions of one trial id form a session group), M metrics
as scalars and the session's end info. Default: 10,000 sessions (2,500 groups of 4 repeated
trials) × 20 hparams (real, int, string and bool domains) × 10 metrics; ``--quick``: 1,000.

In one run it serves the logdir with ``boardd serve`` (on a store ``boardd ingest`` filled) and
with ``tensorboard --load_fast=true`` (rustboard inside), then asks both the same
``POST /data/plugin/hparams/session_groups``: two filters (an interval on a real hparam, a
regular expression on a string one), two sort columns (a metric descending, then the string
hparam), ``AGGREGATION_AVG`` by that metric, the first 100 groups (as the UI pages):

- **warm**: the identical request repeated;
- **after a commit**: before each request one scalar is appended to one session (a new point of
  the sort metric) and, on boardd, the request waits until a commit holds it, so its answer is
  computed afresh (TensorBoard computes every answer afresh anyway).

Printed: p50/p90 per server and phase, the ratio TensorBoard ÷ boardd, the target (boardd p50 ≤
50 ms, warm and after a commit) with MET / NOT MET, and whether both answered the same groups.

    python bench/bench_hparams.py [--quick] [--sessions N] [--repeat 30] [--tb-repeat 5]
                                  [--skip-tensorboard] [--keep] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
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

#: Bump when the generated experiment changes.
VERSION = 1
WALL = 1_700_000_000.0
TRIALS = 4
HPARAMS = 20
METRICS = 10
POINTS = 3
TARGET_MS = 50.0
XSRF = {"X-XSRF-Protected": "1", "Content-Type": "application/json"}
ROUTE = "/data/plugin/hparams/session_groups"
STRINGS = ["adam", "sgd", "rmsprop", "adagrad"]
SORT_METRIC = "metric_0"
MARKER = ".boardd-hparams.json"


class BenchError(RuntimeError):
    """The benchmark cannot go on (a server died, or did not get ready)."""


# -- the experiment -------------------------------------------------------------------------


def hparam_names() -> list[str]:
    return [f"hp_{i:02d}" for i in range(HPARAMS)]


def _hparams_config() -> Any:
    from tensorboard.plugins.hparams import summary_v2 as hp

    params = []
    for i, name in enumerate(hparam_names()):
        if i < 14:
            params.append(hp.HParam(name, hp.RealInterval(0.0, 1.0)))
        elif i < 17:
            params.append(hp.HParam(name, hp.IntInterval(1, 64)))
        elif i < 19:
            params.append(hp.HParam(name, hp.Discrete(STRINGS)))
        else:
            params.append(hp.HParam(name, hp.Discrete([False, True])))
    metrics = [hp.Metric(f"metric_{m}", display_name=f"metric {m}") for m in range(METRICS)]
    return hp.hparams_config_pb(params, metrics, time_created_secs=WALL)


def _group_hparams(group: int) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(group)
    values: dict[str, Any] = {}
    for i, name in enumerate(hparam_names()):
        if i < 14:
            values[name] = round(float(rng.random()), 6)
        elif i < 17:
            values[name] = int(rng.integers(1, 65))
        elif i < 19:
            values[name] = STRINGS[int(rng.integers(0, len(STRINGS)))]
        else:
            values[name] = bool(rng.integers(0, 2))
    return values


class _Records:
    """One event file written record by record (tensorboardX's RecordWriter, CRC32C in C)."""

    def __init__(self, directory: Path, name: str) -> None:
        from tensorboardX.record_writer import RecordWriter

        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / name
        self._writer = RecordWriter(str(self.path))

    def event(self, event: Any) -> None:
        self._writer.write(event.SerializeToString(deterministic=True))

    def close(self) -> None:
        self._writer.close()


def _use_native_crc() -> None:
    import google_crc32c
    import tensorboardX.record_writer as record_writer

    record_writer.crc32c = google_crc32c.value


def _session_name(session: int) -> str:
    return f"g{session // TRIALS:05d}/t{session % TRIALS}"


def _write_sessions(task: tuple[Path, int, int]) -> int:
    """Writes sessions [first, last) under ``out``; returns the bytes written."""
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.hparams import metadata, plugin_data_pb2
    from tensorboard.plugins.hparams import summary_v2 as hp
    from tensorboard.plugins.scalar import summary_v2 as scalar

    _use_native_crc()
    out, first, last = task
    total = 0
    for session in range(first, last):
        group = session // TRIALS
        start = WALL + session
        run = out / _session_name(session)
        records = _Records(run, f"events.out.tfevents.{int(start)}.bench-hparams")
        records.event(event_pb2.Event(wall_time=start, file_version="brain.Event:2"))
        start_pb = hp.hparams_pb(_group_hparams(group), trial_id=f"g{group:05d}")
        start_pb.value[0].metadata.plugin_data.content = _start_content(start_pb, start)
        records.event(event_pb2.Event(wall_time=start, step=0, summary=start_pb))
        rng = np.random.default_rng(1_000_000 + session)
        for step in range(POINTS):
            summary = summary_pb2.Summary()
            for m in range(METRICS):
                value = float(rng.random()) + m
                summary.MergeFrom(scalar.scalar_pb(f"metric_{m}", value))
            records.event(event_pb2.Event(wall_time=start + step, step=50 * step, summary=summary))
        if session % 97 != 5:  # a few sessions are still running: no end info
            status = 2 if session % 50 == 7 else 1  # FAILURE / SUCCESS
            end = plugin_data_pb2.HParamsPluginData(
                session_end_info=plugin_data_pb2.SessionEndInfo(
                    status=status, end_time_secs=start + POINTS
                )
            )
            summary = summary_pb2.Summary()
            summary.value.add(
                tag=metadata.SESSION_END_INFO_TAG, metadata=metadata.create_summary_metadata(end)
            )
            records.event(event_pb2.Event(wall_time=start + POINTS, step=0, summary=summary))
        records.close()
        total += records.path.stat().st_size
    return total


def _start_content(summary: Any, start: float) -> bytes:
    """The session start info with a fixed start time (``hparams_pb`` stamps the clock)."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    data = plugin_data_pb2.HParamsPluginData.FromString(
        summary.value[0].metadata.plugin_data.content
    )
    data.session_start_info.start_time_secs = start
    content: bytes = data.SerializeToString(deterministic=True)
    return content


def experiment_dir(sessions: int) -> Path:
    root = Path(os.environ.get("BOARDD_BENCH_DIR", BENCH_DIR / ".cache"))
    return root / f"hparams-{sessions}x{HPARAMS}x{METRICS}"


def ensure_experiment(sessions: int, *, force: bool = False, jobs: int | None = None) -> Path:
    """The generated experiment (generated now if missing, stale or ``force``)."""
    target = experiment_dir(sessions)
    wanted = {"version": VERSION, "sessions": sessions, "hparams": HPARAMS, "metrics": METRICS}
    marker = target / MARKER
    if not force and marker.exists():
        found = json.loads(marker.read_text())
        if {k: found.get(k) for k in wanted} == wanted:
            return target
    from tensorboard.compat.proto import event_pb2

    started = time.monotonic()
    tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    _use_native_crc()
    root = _Records(tmp, f"events.out.tfevents.{int(WALL)}.bench-hparams")
    root.event(event_pb2.Event(wall_time=WALL, file_version="brain.Event:2"))
    root.event(event_pb2.Event(wall_time=WALL, step=0, summary=_hparams_config()))
    root.close()
    chunk = 250
    tasks = [(tmp, first, min(first + chunk, sessions)) for first in range(0, sessions, chunk)]
    with multiprocessing.get_context("fork").Pool(jobs or min(4, os.cpu_count() or 1)) as pool:
        total = sum(pool.map(_write_sessions, tasks))
    (tmp / MARKER).write_text(json.dumps({**wanted, "bytes": total}))
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    seconds = time.monotonic() - started
    print(
        f"generated {sessions} sessions ({total / 1e6:.1f} MB) in {seconds:.1f} s → {target}",
        file=sys.stderr,
    )
    return target


# -- the request ----------------------------------------------------------------------------


def the_request() -> dict[str, Any]:
    """Two filters, two sort columns, AVG by the sort metric, the first 100 groups."""
    return {
        "experimentName": "",
        "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"],
        "colParams": [
            {"metric": {"group": "", "tag": SORT_METRIC}, "order": "ORDER_DESC"},
            {"hparam": "hp_17", "order": "ORDER_ASC", "filterRegexp": "a"},
            {"hparam": "hp_00", "filterInterval": {"minValue": 0.1, "maxValue": 0.8}},
        ],
        "aggregationType": "AGGREGATION_AVG",
        "aggregationMetric": {"group": "", "tag": SORT_METRIC},
        "startIndex": 0,
        "sliceSize": 100,
    }


# -- servers --------------------------------------------------------------------------------


@dataclass
class Server:
    name: str
    proc: Any
    log: Path
    port: int = 0

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)

    def check_alive(self) -> None:
        if exited(self.proc, 0.0):
            raise BenchError(f"{self.name} exited:\n{self.log.read_text(errors='replace')[-2000:]}")


def _request(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, bytes]:  # fmt: skip
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException):
        conn.close()
        return 0, b""


def _wait(check: Callable[[], bool], server: Server, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        server.check_alive()
        if time.monotonic() > deadline:
            raise BenchError(f"{server.name}: no {what} after {timeout:.0f} s")
        time.sleep(0.2)


def start_boardd(logdir: Path, workdir: Path, timeout: float) -> tuple[Server, float]:
    """``boardd ingest`` (timed), then ``boardd serve`` on that store, once live."""
    db = workdir / "store.sqlite"
    started = time.monotonic()
    ingest = [*console_script("boardd", "boardd"), "ingest", str(logdir), "--db", str(db)]
    done = subprocess.run(ingest, env=child_env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"boardd ingest failed: {done.stderr}")
    ingest_seconds = time.monotonic() - started
    port_file = workdir / "boardd.port"
    log = workdir / "boardd.log"
    server = Server(
        "boardd", spawn(boardd_serve_argv(logdir, port_file, db), log, child_env()), log
    )

    def ready() -> bool:
        port = read_port_file(port_file)
        if port is None:
            return False
        server.port = port
        status, body = _request(server.connection(), "GET", "/api/v1/health")
        if status != 200:
            return False
        found = json.loads(body)["experiments"]
        return bool(found) and all(
            e.get("state") == "live" and e.get("bytes_done") == e.get("bytes_total") for e in found
        )

    _wait(ready, server, timeout, "live state in /api/v1/health")
    return server, ingest_seconds


def start_tensorboard(
    logdir: Path, workdir: Path, groups: int, timeout: float
) -> tuple[Server, float]:
    """``tensorboard --load_fast=true``, once its answer lists every session group."""
    import re

    log = workdir / "tensorboard.log"
    argv = [*console_script("tensorboard", "tensorboard.main"), "--logdir", str(logdir),
            "--load_fast=true", "--host", "127.0.0.1", "--port", "0"]  # fmt: skip
    started = time.monotonic()
    server = Server("tensorboard", spawn(argv, log, dict(os.environ)), log)
    every = json.dumps({**the_request(), "colParams": [], "sliceSize": 1}).encode()

    def ready() -> bool:
        if not server.port:
            found = re.search(r"http://[^:\s]+:(\d+)/", log.read_text(errors="replace"))
            if not found:
                return False
            server.port = int(found.group(1))
        status, body = _request(server.connection(), "POST", ROUTE, every, XSRF)
        return status == 200 and json.loads(body).get("totalSize") == groups

    _wait(ready, server, timeout, f"{groups} session groups")
    return server, time.monotonic() - started


# -- measuring ------------------------------------------------------------------------------


@dataclass
class Phase:
    server: str
    phase: str
    ms: list[float] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return percentile(self.ms, 50) if self.ms else float("nan")

    @property
    def p90(self) -> float:
        return percentile(self.ms, 90) if self.ms else float("nan")


def _timed(conn: http.client.HTTPConnection, body: bytes) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    status, answer = _request(conn, "POST", ROUTE, body, XSRF)
    elapsed = (time.perf_counter() - started) * 1000
    if status != 200:
        raise BenchError(f"HTTP {status}: {answer[:300]!r}")
    return elapsed, json.loads(answer)


def append_point(logdir: Path, session: int, step: int, value: float) -> None:
    """A new point of the sort metric in one session (a new event file in its run)."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.scalar import summary_v2 as scalar

    _use_native_crc()
    run = logdir / _session_name(session)
    records = _Records(run, f"events.out.tfevents.{int(WALL) + step}.bench-append-{step}")
    records.event(event_pb2.Event(wall_time=WALL + step, file_version="brain.Event:2"))
    summary = scalar.scalar_pb(SORT_METRIC, value)
    records.event(event_pb2.Event(wall_time=WALL + step, step=step, summary=summary))
    records.close()


def wait_boardd_has(server: Server, session: int, step: int, timeout: float = 60) -> None:
    query = urllib.parse.urlencode(
        {"plugin": "scalars", "run": _session_name(session), "tag": SORT_METRIC, "latest": 1}
    )
    conn = server.connection()

    def has() -> bool:
        status, body = _request(conn, "GET", f"/api/v1/scalars?{query}")
        if status != 200:
            return False
        points = json.loads(body).get(_session_name(session), {}).get(SORT_METRIC) or []
        return bool(points) and int(points[-1]["step"]) >= step

    _wait(has, server, timeout, f"step {step} of {_session_name(session)}")


def measure(server: Server, logdir: Path, repeat: int, step0: int, *, wait: bool) -> list[Phase]:
    body = json.dumps(the_request()).encode()
    conn = server.connection()
    _timed(conn, body)  # the first answer (fills boardd's caches)
    warm = Phase(server.name, "warm")
    for _ in range(repeat):
        warm.ms.append(_timed(conn, body)[0])
    fresh = Phase(server.name, "after a commit")
    for i in range(repeat):
        session = (i * 7919) % max(1, _sessions_in(logdir))
        step = step0 + i
        append_point(logdir, session, step, 100.0 + i)
        if wait:
            wait_boardd_has(server, session, step)
        fresh.ms.append(_timed(conn, body)[0])
    conn.close()
    return [warm, fresh]


def _sessions_in(logdir: Path) -> int:
    return int(json.loads((logdir / MARKER).read_text())["sessions"])


def restore(logdir: Path) -> None:
    """Removes the benchmark's appended files (the cached experiment stays as generated)."""
    for path in logdir.glob("g*/t*/events.out.tfevents.*.bench-append-*"):
        path.unlink()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="1,000 sessions")
    parser.add_argument("--repeat", type=int, default=30, help="requests per phase on boardd")
    parser.add_argument("--tb-repeat", type=int, default=5, help="requests per phase on TB")
    parser.add_argument("--skip-tensorboard", action="store_true")
    parser.add_argument("--force", action="store_true", help="regenerate the experiment")
    parser.add_argument("--ready-timeout", type=float, default=1800)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--json", action="store_true")
    results.add_argument(parser)
    args = parser.parse_args(argv)
    sessions = 1_000 if args.quick else args.sessions
    groups = -(-sessions // TRIALS)
    logdir = ensure_experiment(sessions, force=args.force)
    restore(logdir)
    workdir = Path(tempfile.mkdtemp(prefix="bench-hparams-"))
    phases: list[Phase] = []
    info: dict[str, Any] = {"sessions": sessions, "groups": groups, "workdir": str(workdir)}
    answers: dict[str, list[str]] = {}
    servers: list[Server] = []
    try:
        boardd, ingest_s = start_boardd(logdir, workdir, args.ready_timeout)
        servers.append(boardd)
        info["boardd_ingest_seconds"] = round(ingest_s, 2)
        first_ms, first = _timed(boardd.connection(), json.dumps(the_request()).encode())
        info["boardd_first_ms"] = round(first_ms, 1)
        answers["boardd"] = [g["name"] for g in first.get("sessionGroups", [])]
        info["total_size"] = first.get("totalSize")
        phases += measure(boardd, logdir, args.repeat, 1_000, wait=True)
        stop_process(boardd.proc)
        restore(logdir)
        if not args.skip_tensorboard:
            tb, ready_s = start_tensorboard(logdir, workdir, groups, args.ready_timeout)
            servers.append(tb)
            info["tensorboard_ready_seconds"] = round(ready_s, 2)
            first_ms, first = _timed(tb.connection(), json.dumps(the_request()).encode())
            info["tensorboard_first_ms"] = round(first_ms, 1)
            answers["tensorboard"] = [g["name"] for g in first.get("sessionGroups", [])]
            info["tensorboard_total_size"] = first.get("totalSize")
            phases += measure(tb, logdir, args.tb_repeat, 1_000, wait=False)
    finally:
        for server in servers:
            stop_process(server.proc)
        restore(logdir)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    same = answers.get("boardd") == answers.get("tensorboard") if len(answers) == 2 else None
    report = _report(phases, info, same)
    if args.json:
        print(json.dumps({"info": info, "phases": [asdict(p) for p in phases], **report}))
    by = {(p.server, p.phase): p for p in phases}
    figures = []
    for phase in ("warm", "after a commit"):
        ours, theirs = by.get(("boardd", phase)), by.get(("tensorboard", phase))
        if ours is None:
            continue
        figures.append(
            results.figure(
                f"ListSessionGroups, {phase}: p50",
                ours.p50,
                theirs.p50 if theirs else None,
                unit="ms",
                better="lower",
                target=f"≤ {TARGET_MS:.0f} ms",
                met=ours.p50 <= TARGET_MS,
            )
        )
    results.write(
        args.results,
        "bench_hparams",
        title="hparams: ListSessionGroups on a large experiment",
        anchor="tensorboard --load_fast=true, TensorBoard's /data/plugin/hparams/session_groups",
        workload=f"{sessions:,} sessions in {groups:,} groups × {HPARAMS} hparams × {METRICS} "
        "metrics; 2 filters, 2 sort columns, AVG aggregation, the first 100 groups; "
        f"{args.repeat} requests per phase on boardd, {args.tb_repeat} on TensorBoard",
        figures=figures,
        detail={"info": info, "same_first_groups": same, **report},
        argv=argv,
    )
    return 0


def _report(phases: list[Phase], info: dict[str, Any], same: bool | None) -> dict[str, Any]:
    print(
        f"ListSessionGroups: {info['sessions']} sessions in {info['groups']} groups × {HPARAMS} "
        f"hparams × {METRICS} metrics; 2 filters, 2 sort columns, AVG; first 100 groups"
    )
    theirs = f" (TensorBoard {info.get('tensorboard_total_size')})" if same is not None else ""
    print(f"  answer: total_size {info.get('total_size')}{theirs}")
    if same is not None:
        print(f"  same first 100 groups on both: {'yes' if same else 'NO'}")
    print(f"  {'server':<12} {'phase':<15} {'p50 ms':>9} {'p90 ms':>9} {'n':>4}")
    by = {(p.server, p.phase): p for p in phases}
    for p in phases:
        print(f"  {p.server:<12} {p.phase:<15} {p.p50:9.1f} {p.p90:9.1f} {len(p.ms):4d}")
    out: dict[str, Any] = {"ratios": {}, "targets": {}}
    for phase in ("warm", "after a commit"):
        ours, theirs = by.get(("boardd", phase)), by.get(("tensorboard", phase))
        if ours and theirs:
            ratio = theirs.p50 / ours.p50
            out["ratios"][phase] = ratio
            print(f"  ratio TensorBoard ÷ boardd, p50 {phase}: {ratio:.1f}×")
        if ours:
            met = ours.p50 <= TARGET_MS
            out["targets"][phase] = met
            verdict = "MET" if met else "NOT MET"
            print(
                f"  target boardd p50 ≤ {TARGET_MS:.0f} ms ({phase}): {ours.p50:.1f} ms {verdict}"
            )
    if "boardd_first_ms" in info:
        print(f"  first answer once live (the store's sessions read in the background since): "
              f"boardd {info['boardd_first_ms']} ms, TensorBoard "
              f"{info.get('tensorboard_first_ms', '-')} ms")  # fmt: skip
    if "boardd_ingest_seconds" in info:
        print(f"  (boardd ingest {info['boardd_ingest_seconds']} s; TensorBoard ready after "
              f"{info.get('tensorboard_ready_seconds', '-')} s)")  # fmt: skip
    return out


if __name__ == "__main__":
    sys.exit(main())
