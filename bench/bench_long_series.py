"""One very long scalar series, every point kept: boardd vs TensorBoard (rustboard), side by side.

The workload is generated here (and cached): one run, one tag, ``--points`` steps (default
10,000,000) of a decaying loss with noise, and a single-step spike 25 times the rest at step
``--spike``. The event file is written record by record in TensorBoard's format (what
tensorboardX writes for ``add_scalar``), fast enough for ten million points.

Measured in one run:

1. **ingest**: ``boardd ingest`` of the logdir (every scalar kept, the default), wall time and
   peak RSS, beside rustboard loading it once with its default sampling; the store's bytes per
   scalar point;
2. **extremes answers** (``/api/v1/scalars?downsample=4×buckets&downsample_by=extremes``, what the
   dashboard fetches): over the whole range and over random zoom windows of every width, each
   request a new answer (no answer cache), p50 and p99; whether the spike is in every answer
   whose window holds it;
3. **TensorBoard's scalars route** (``/data/plugin/scalars/scalars``: its 1,000-point sample) on
   boardd, an answer not cached yet (the median of three starts, each warmed up; beside it, the
   very first answer after a start, imports included), beside TensorBoard's own on the same
   logdir;
4. **first paint** in headless Chromium: navigation → the chart drawn to the last step, boardd's
   dashboard beside TensorBoard's Time Series (as ``bench_dashboard.py`` measures it).
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import random
import shutil
import statistics
import struct
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import results  # noqa: E402  (bench/, put on the path above)
from anchors import (  # noqa: E402
    boardd_serve_argv,
    child_env,
    console_script,
    percentile,
    read_port_file,
    run_measured,
    rustboard_load,
    spawn,
    stop_process,
)

TAG = "loss"
RUN = "train"
WALL0 = 1_700_000_000.0
#: Bump when the bytes a workload is generated with change.
VERSION = 1


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _masked_crc(data: bytes) -> bytes:
    import google_crc32c

    crc = google_crc32c.value(data)
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    return struct.pack("<I", masked)


def _record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + _masked_crc(length) + data + _masked_crc(data)


def series_values(points: int, spike: int) -> np.ndarray:
    """The series: a decaying loss with noise (float32, as ``simple_value`` holds it)."""
    rng = np.random.default_rng(20_261_208)
    steps = np.arange(points, dtype=np.float64)
    values = 2.0 * np.exp(-steps / (points / 5)) + 0.05 + 0.02 * rng.random(points)
    values[spike] = 25 * float(values.max())
    return values.astype(np.float32)


def generate(logdir: Path, points: int, spike: int) -> Path:
    """The logdir (cached under bench/.cache): one event file, as tensorboardX writes it."""
    marker = logdir / ".boardd-long-series.json"
    want = {"version": VERSION, "points": points, "spike": spike}
    if marker.exists() and json.loads(marker.read_text()) == want:
        return logdir
    shutil.rmtree(logdir, ignore_errors=True)
    run = logdir / RUN
    run.mkdir(parents=True)
    values = series_values(points, spike)
    started = time.perf_counter()
    path = run / f"events.out.tfevents.{int(WALL0)}.boardd-bench"
    tag = TAG.encode()
    value_head = b"\x0a" + _varint(len(tag)) + tag + b"\x15"
    with open(path, "wb", buffering=1 << 20) as f:
        version = b"\x09" + struct.pack("<d", WALL0) + b"\x1a\x0dbrain.Event:2"
        f.write(_record(version))
        packed = values.tobytes()
        for step in range(points):
            value = value_head + packed[4 * step : 4 * step + 4]
            summary = b"\x0a" + _varint(len(value)) + value
            event = (
                b"\x09"
                + struct.pack("<d", WALL0 + 0.01 * step)
                + b"\x10"
                + _varint(step)
                + b"\x2a"
                + _varint(len(summary))
                + summary
            )
            f.write(_record(event))
            if step and step % 1_000_000 == 0:
                print(f"  generated {step:,} points", file=sys.stderr)
    print(f"  generated in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    marker.write_text(json.dumps(want))
    return logdir


def _get(port: int, path: str, **params: Any) -> tuple[float, Any]:
    query = urllib.parse.urlencode(params, doseq=True)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    started = time.perf_counter()
    connection.request("GET", f"{path}?{query}")
    response = connection.getresponse()
    body = response.read()
    elapsed = time.perf_counter() - started
    connection.close()
    if response.status != 200:
        raise RuntimeError(f"{path}: {response.status} {body[:300]!r}")
    return elapsed, json.loads(body)


def _wait_port(port_file: Path, proc: Any, timeout: float = 600) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        port = read_port_file(port_file)
        if port:
            return port
        if proc.poll() is not None:
            raise RuntimeError("the server exited before binding its port")
        time.sleep(0.05)
    raise RuntimeError("no port")


def _extremes(port: int, k: int, lo: int | None, hi: int | None) -> tuple[float, list[Any]]:
    params: dict[str, Any] = {
        "plugin": "scalars",
        "run": RUN,
        "tag": TAG,
        "downsample": k,
        "downsample_by": "extremes",
        "format": "columns",
    }
    if lo is not None:
        params["step_min"] = lo
    if hi is not None:
        params["step_max"] = hi
    return _get(port, "/api/v1/scalars", **params)


def _steps(body: Any) -> list[int]:
    return list(body[RUN][TAG]["step"])


def measure_answers(port: int, points: int, spike: int, buckets: int, repeat: int) -> dict:
    """Extremes answers over the whole range and random zoom windows (each a new answer)."""
    rng = random.Random(7)
    whole: list[float] = []
    zooms: list[float] = []
    missed: list[str] = []
    for i in range(repeat):
        # A slightly different width each time: a new answer, never the answer cache's.
        k = 4 * (buckets - i)
        seconds, body = _extremes(port, k, None, None)
        whole.append(seconds)
        steps = _steps(body)
        if spike not in steps:
            missed.append(f"whole range, k={k}")
    for i in range(repeat * 4):
        width = int(10 ** rng.uniform(3, math.log10(points)))
        lo = rng.randrange(0, max(1, points - width))
        if i % 4 == 0:  # every fourth window holds the spike
            lo = max(0, min(spike - rng.randrange(0, width), points - width))
        hi = lo + width
        seconds, body = _extremes(port, 4 * buckets, lo, hi)
        zooms.append(seconds)
        steps = _steps(body)
        if lo <= spike <= hi and spike not in steps:
            missed.append(f"[{lo}, {hi}]")
    return {
        "whole_p50_ms": 1000 * statistics.median(whole),
        "whole_p99_ms": 1000 * percentile(whole, 99),
        "zoom_p50_ms": 1000 * statistics.median(zooms),
        "zoom_p99_ms": 1000 * percentile(zooms, 99),
        "answers": len(whole) + len(zooms),
        "spike_missed": missed,
    }


def tensorboard_route(port: int, prefix: str) -> tuple[float, int]:
    seconds, body = _get(port, f"{prefix}/data/plugin/scalars/scalars", run=RUN, tag=TAG)
    return seconds, len(body)


def run(args: argparse.Namespace) -> dict[str, Any]:
    cache = Path(args.cache)
    logdir = generate(cache / f"long-series-{args.points}", args.points, args.spike)
    events = sum(p.stat().st_size for p in logdir.rglob("*tfevents*"))
    work = Path(tempfile.mkdtemp(prefix="boardd-long-"))
    report: dict[str, Any] = {"points": args.points, "event_bytes": events}
    try:
        db = work / "store.sqlite"
        print("ingest: boardd", file=sys.stderr)
        done = run_measured(
            [*console_script("boardd", "boardd"), "ingest", str(logdir), "--db", str(db)],
            env=child_env(),
        )
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        store_bytes = sum(p.stat().st_size for p in work.glob("store.sqlite*"))
        report["boardd_ingest_s"] = done.wall_seconds
        report["boardd_ingest_peak_mib"] = done.peak_rss_bytes / 2**20
        report["store_bytes"] = store_bytes
        report["bytes_per_point"] = store_bytes / args.points
        if not args.no_rustboard:
            print("ingest: rustboard", file=sys.stderr)
            anchor = rustboard_load(logdir)
            report["rustboard_load_s"] = anchor.seconds
            report["rustboard_peak_mib"] = anchor.peak_rss_bytes / 2**20

        print("answers: boardd serve", file=sys.stderr)
        port_file = work / "port"
        cold: list[float] = []
        for start in range(3):
            port_file.unlink(missing_ok=True)
            proc = spawn(boardd_serve_argv(logdir, port_file, db), work / "serve.log", child_env())
            try:
                port = _wait_port(port_file, proc)
                if start == 0:  # the very first answer after start: imports included
                    seconds, count = tensorboard_route(port, "/tensorboard")
                    report["boardd_tb_route_first_ms"] = 1000 * seconds
                    report["boardd_tb_route_points"] = count
                    report.update(
                        measure_answers(port, args.points, args.spike, args.buckets, args.repeat)
                    )
                else:  # started and warmed up (its first answer, then its warm-up)
                    _get(port, "/api/v1/health")
                    time.sleep(2.0)
                    cold.append(tensorboard_route(port, "/tensorboard")[0])
            finally:
                stop_process(proc)
        report["boardd_tb_route_cold_ms"] = 1000 * statistics.median(cold)
        if not args.no_tensorboard:
            print("answers: tensorboard --load_fast=true", file=sys.stderr)
            report.update(_tensorboard_anchor(logdir, work, args.points))
        if not args.no_browser:
            print("first paint: headless Chromium", file=sys.stderr)
            report.update(_first_paints(logdir, work, args))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report


def _first_paints(logdir: Path, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Navigation → the series' chart drawn to its last step, in a fresh browser context each
    time (bench_dashboard's measure): boardd's dashboard, and TensorBoard's Time Series."""
    import os

    import bench_dashboard as dash
    from playwright.sync_api import sync_playwright

    where = work / "paint"
    where.mkdir()
    last = args.points - 1
    servers = [dash.start_boardd(logdir, where, [], [RUN], TAG, last, 600)]
    if not args.no_tensorboard:
        servers.append(dash.start_tensorboard(logdir, where, [RUN], TAG, last, 900))
    figures = dash.Figures(workload="long series", load_average=os.getloadavg())
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=dash.CHROMIUM, args=dash.CHROMIUM_ARGS, headless=True
            )
            try:
                tensorboard = servers[1] if len(servers) > 1 else None
                dash.first_paints(browser, servers[0], tensorboard, 3, 120, figures)
            finally:
                browser.close()
    finally:
        for server in servers:
            stop_process(server.proc)
    out = {"boardd_first_paint_ms": statistics.median(figures.boardd_paint_ms)}
    if figures.tensorboard_paint_ms:
        out["tensorboard_first_paint_ms"] = statistics.median(figures.tensorboard_paint_ms)
    return out


def _tensorboard_anchor(logdir: Path, work: Path, points: int) -> dict[str, Any]:
    """TensorBoard's own scalars route on the same logdir, once it has loaded the series to its
    last step: the median of five answers."""
    import bench_dashboard as dash

    where = work / "tensorboard"
    where.mkdir()
    server = dash.start_tensorboard(logdir, where, [RUN], TAG, points - 1, 900)
    try:
        timings = [tensorboard_route(server.port, "")[0] for _ in range(5)]
    finally:
        stop_process(server.proc)
    return {"tensorboard_tb_route_ms": 1000 * statistics.median(timings)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=10_000_000, help="points of the series")
    parser.add_argument("--spike", type=int, default=None, help="the spike's step (default: 0.6×)")
    parser.add_argument("--buckets", type=int, default=1000, help="buckets an answer asks for")
    parser.add_argument("--repeat", type=int, default=10, help="whole-range answers measured")
    parser.add_argument("--cache", default=str(BENCH_DIR / ".cache"), help="workload cache")
    parser.add_argument("--no-rustboard", action="store_true", help="skip rustboard's load")
    parser.add_argument(
        "--no-tensorboard", action="store_true", help="skip TensorBoard (its route, its UI)"
    )
    parser.add_argument("--no-browser", action="store_true", help="skip the first paints")
    results.add_argument(parser)
    args = parser.parse_args(argv)
    if args.spike is None:
        args.spike = int(args.points * 0.6) + 1_234
    report = run(args)
    print(json.dumps(report, indent=2))

    def at_most(value: float | None, bound: float) -> bool | None:
        return None if value is None else value <= bound

    whole, zoom = report["whole_p50_ms"], report["zoom_p50_ms"]
    route, per_point = report["boardd_tb_route_cold_ms"], report["bytes_per_point"]
    figures = [
        results.figure(
            "extremes answer, whole range, p50", whole, unit="ms", better="lower",
            target="<= 30", met=at_most(whole, 30),
        ),
        results.figure(
            "extremes answer, zoom windows, p50", zoom, unit="ms", better="lower",
            target="<= 30", met=at_most(zoom, 30),
        ),
        results.figure(
            "TensorBoard's scalars route, an answer not cached yet", route,
            report.get("tensorboard_tb_route_ms"), unit="ms", better="lower",
            target="<= 100", met=at_most(route, 100),
        ),
        results.figure(
            "dashboard: navigation → the series drawn", report.get("boardd_first_paint_ms"),
            report.get("tensorboard_first_paint_ms"), unit="ms", better="lower",
            target="<= 1000", met=at_most(report.get("boardd_first_paint_ms"), 1000),
        ),
        results.figure(
            "store bytes per scalar point", per_point, unit="B", better="lower",
            target="<= 10", met=at_most(per_point, 10),
        ),
        results.figure(
            "ingest wall time (anchor: rustboard's default sampling)", report["boardd_ingest_s"],
            report.get("rustboard_load_s"), unit="s", better="lower",
        ),
    ]  # fmt: skip
    results.write(
        args.results,
        "bench_long_series",
        title="One long scalar series, every point kept",
        anchor="rustboard (ingest), TensorBoard --load_fast=true (its scalars route)",
        figures=figures,
        workload=f"one series of {args.points:,} points, spike at {args.spike}",
        detail=report,
    )
    return 0 if not report["spike_missed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
