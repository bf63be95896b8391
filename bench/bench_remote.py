"""Remote logdirs: what watching a bucket costs, boardd against TensorBoard's own S3 support.

The workload goes into a real S3-compatible server on loopback (moto's standalone server), each
object cut short by ``--growth`` (1 %) of its bytes. Two counting proxies (tests/remote/
s3server.py, our code) stand in front of it, one per reader, so requests are counted at the
server, as a bill would count them. In one run:

1. boardd cold: ``boardd serve s3://…`` until it is live: time, requests, bytes.
2. boardd idle: passes with nothing new: LIST and GET requests per pass.
3. TensorBoard cold: ``tensorboard --logdir s3://… --load_fast=false`` (boto3, S3_ENDPOINT)
   until every run's scalars reach their last step.
4. The watch (``--watch-seconds``, 600 by default; the scale is printed): both keep watching;
   at its middle every object is re-uploaded whole (1 % new data, as writers that sync to S3
   do). boardd's requests and bytes for that growth, and both readers' requests over the
   whole watch, with the ratio.

Targets: a pass with nothing new = 1 LIST per 1,000 objects and 0 GETs; new data
costs O(new bytes); ≥ 10× fewer requests than TensorBoard over the watch.

    .venv/bin/python bench/bench_remote.py [--small] [--watch-seconds 600] [--poll-interval 5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
for entry in (str(BENCH_DIR), str(REPO_DIR)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

import results  # noqa: E402  (bench/, put on the path above)
from anchors import (  # noqa: E402  (bench scripts run as plain files, not as a package)
    child_env,
    console_script,
    read_port_file,
    spawn,
    stop_process,
)
from workload import event_files, small_workload, standard_workload  # noqa: E402

from tests.remote.s3server import (  # noqa: E402
    FAKE_ENV,
    S3,
    CountingProxy,
    MotoServer,
    free_port,
)


def wait_for(probe: Callable[[], Any], timeout: float, what: str) -> Any:
    """Polls ``probe`` every 0.2 s until it is truthy; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_remote: {what}: not within {timeout:g} s")
        time.sleep(0.2)


def record_boundary(data: bytes, limit: int) -> int:
    """The end of the last complete TFRecord at or before ``limit`` (length u64, CRC u32,
    payload, CRC u32)."""
    offset = 0
    while offset + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        end = offset + 12 + length + 4
        if end > limit:
            break
        offset = end
    return offset


def get_json(url: str) -> Any:
    """GET → JSON, None on any failure (the server may not be up yet)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return json.loads(answer.read())
    except Exception:
        return None


def counts_of(proxy: CountingProxy) -> dict[str, int]:
    """The proxy's counts so far (and starts new ones)."""
    c = proxy.reset()
    return {
        "requests": c.total,
        "lists": c.lists,
        "gets": c.gets,
        "heads": c.heads,
        "bytes": c.bytes_sent,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="the small workload (quick)")
    parser.add_argument("--watch-seconds", type=float, default=600.0)
    parser.add_argument("--poll-interval", type=float, default=5.0, help="both readers'")
    parser.add_argument("--growth", type=float, default=0.01, help="share of new bytes")
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    results.add_argument(parser)
    args = parser.parse_args(argv)

    logdir = small_workload() if args.small else standard_workload()
    files = event_files(logdir)
    total = sum(p.stat().st_size for p in files)
    work = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    env = {**child_env(), **FAKE_ENV}
    os.environ.update(FAKE_ENV)
    moto = MotoServer(work / "moto.log")
    proxy_b = CountingProxy(moto.port)
    proxy_tb = CountingProxy(moto.port)
    s3 = S3(moto, proxy_b, bucket="bench")
    prefix = "exp"
    full: dict[str, bytes] = {}
    for path in files:
        key = f"{prefix}/{path.relative_to(logdir).as_posix()}"
        full[key] = path.read_bytes()
    new_bytes = 0
    for key, data in full.items():
        # Cut at a record boundary: TensorBoard's S3 reader (2.21) lost its reloader thread to
        # an InvalidRange on objects ending in a torn record (boardd reads those fine).
        keep = record_boundary(data, len(data) - int(len(data) * args.growth))
        new_bytes += len(data) - keep
        s3.put(key, data[:keep])
    print(
        f"workload {logdir.name}: {len(full)} objects, {total / 1e6:.1f} MB "
        f"({args.growth:.0%} held back: {new_bytes / 1e6:.2f} MB); poll {args.poll_interval:g} s"
    )
    proxy_b.reset()
    proxy_tb.reset()
    figures: dict[str, Any] = {"objects": len(full), "bytes": total, "new_bytes": new_bytes}
    boardd = tb = None
    try:
        # 1. boardd cold.
        port_file = work / "boardd.port"
        started = time.monotonic()
        boardd = spawn(
            [
                *console_script("boardd", "boardd"),
                "serve",
                f"bench={s3.url(prefix)}",
                "--storage-option",
                f"endpoint_url={proxy_b.endpoint}",
                "--poll-interval",
                str(args.poll_interval),
                "--port",
                "0",
                "--port-file",
                str(port_file),
                "--db",
                str(work / "boardd.sqlite"),
            ],
            work / "boardd.log",
            env,
        )
        port = wait_for(lambda: read_port_file(port_file), 60, "boardd's port")
        base = f"http://127.0.0.1:{port}/api/v1"

        def health() -> dict[str, Any]:
            body = get_json(f"{base}/health") or {"experiments": [{}]}
            entry: dict[str, Any] = body["experiments"][0]
            return entry

        wait_for(lambda: health().get("state") == "live", 3600, "boardd live")
        cold = time.monotonic() - started
        figures["boardd_cold"] = {"seconds": round(cold, 2), **counts_of(proxy_b)}
        print(f"boardd cold: {cold:.1f} s, {figures['boardd_cold']}")

        # 2. boardd idle passes.
        listings = health()["remote_requests"]["listings"]
        passes = 3
        wait_for(
            lambda: health()["remote_requests"]["listings"] >= listings + passes + 1,
            60 + 3 * passes * args.poll_interval,
            "idle passes",
        )
        idle = counts_of(proxy_b)
        done = health()["remote_requests"]["listings"] - listings
        figures["boardd_idle_per_pass"] = {
            "passes": done,
            "lists": idle["lists"] / done,
            "gets": idle["gets"] / done,
            "bytes": idle["bytes"] / done,
            "lists_target": math.ceil(len(full) / 1000),
        }
        print(f"boardd idle: {figures['boardd_idle_per_pass']}")

        # 3. TensorBoard cold.
        tb_port = free_port()
        started = time.monotonic()
        tb_env = {**env, "S3_ENDPOINT": proxy_tb.endpoint, "S3_USE_HTTPS": "0"}
        tb = spawn(
            [
                *console_script("tensorboard", "tensorboard.main"),
                "--logdir",
                s3.url(prefix),
                "--load_fast=false",
                "--reload_interval",
                str(args.poll_interval),
                "--port",
                str(tb_port),
                "--host",
                "127.0.0.1",
            ],
            work / "tensorboard.log",
            tb_env,
        )
        tb_base = f"http://127.0.0.1:{tb_port}/data/plugin/scalars"
        # The training runs (TensorBoard lists add_hparams' sub-runs without scalars).
        runs = {
            str(Path(k).parent.relative_to(prefix))
            for k in full
            if "tfevents" in k and Path(k).parent.name != "hparams"
        }
        boardd_scalars = get_json(f"{base}/scalars/list?experiment=bench&plugin=scalars") or {}
        last = {
            run: (tag, meta["max_step"])
            for run, tags in boardd_scalars.items()
            for tag, meta in list(tags.items())[:1]
        }

        def tb_loaded() -> bool:
            tags = get_json(f"{tb_base}/tags")
            if not tags or not runs <= set(tags):
                return False
            for run, (tag, step) in last.items():
                if run not in tags:
                    continue  # a run TensorBoard shows no scalars of (an hparams sub-run)
                q = urllib.parse.urlencode({"run": run, "tag": tag})
                points = get_json(f"{tb_base}/scalars?{q}")
                if not points or points[-1][1] < step:
                    return False
            return True

        wait_for(tb_loaded, 3600, "TensorBoard loaded")
        tb_cold = time.monotonic() - started
        figures["tensorboard_cold"] = {"seconds": round(tb_cold, 2), **counts_of(proxy_tb)}
        print(f"TensorBoard cold: {tb_cold:.1f} s, {figures['tensorboard_cold']}")

        # 4. The watch: both readers, growth at its middle.
        counts_of(proxy_b)
        watch_start = time.monotonic()
        half = args.watch_seconds / 2
        time.sleep(half)
        first_half_b = counts_of(proxy_b)
        for key, data in full.items():
            s3.put(key, data)
        grown_at = time.monotonic()
        # Done once boardd has fetched every new byte (and no more than the targets allow).
        wait_for(
            lambda: (
                health()["remote_requests"]["bytes_fetched"]
                >= figures["boardd_cold"]["bytes"] + new_bytes
            ),
            600,
            "boardd read the new bytes",
        )
        growth = counts_of(proxy_b)
        figures["boardd_growth"] = {
            "seconds": round(time.monotonic() - grown_at, 2),
            **growth,
            "bytes_per_new_byte": round(growth["bytes"] / max(1, new_bytes), 4),
        }
        print(f"boardd 1% new data: {figures['boardd_growth']} (new bytes {new_bytes})")
        rest = args.watch_seconds - (time.monotonic() - watch_start)
        if rest > 0:
            time.sleep(rest)
        last_b = counts_of(proxy_b)
        watch_b = {
            k: first_half_b[k] + growth[k] + last_b[k] for k in ("requests", "lists", "gets")
        }
        watch_tb = counts_of(proxy_tb)
        ratio = watch_tb["requests"] / max(1, watch_b["requests"])
        figures["watch"] = {
            "seconds": args.watch_seconds,
            "boardd": watch_b,
            "tensorboard": watch_tb,
            "ratio": round(ratio, 1),
        }
        print(
            f"watch of {args.watch_seconds:g} s (scale {args.watch_seconds / 600:g} of 10 min): "
            f"boardd {watch_b['requests']} requests, TensorBoard {watch_tb['requests']}: "
            f"{ratio:.1f}x fewer"
        )
    finally:
        for proc in (tb, boardd):
            if proc is not None:
                stop_process(proc)
        s3.close()
        proxy_b.close()
        proxy_tb.close()
        moto.close()
    with open("/proc/loadavg") as f:
        figures["load"] = f.read().split()[:3]
    print(f"load average: {' '.join(figures['load'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    write_results(figures, args, argv, logdir.name)
    return 0


def write_results(
    f: dict[str, Any], args: argparse.Namespace, argv: list[str] | None, workload: str
) -> None:
    """bench/results/bench_remote.json: requests and bytes beside TensorBoard's S3 support."""
    idle, growth, watch = f["boardd_idle_per_pass"], f["boardd_growth"], f["watch"]
    full_watch = args.watch_seconds >= 600
    results.write(
        args.results,
        "bench_remote",
        title="Remote logdirs: watching an S3 bucket",
        anchor="tensorboard --load_fast=false on the same bucket (boto3, S3_ENDPOINT)",
        workload=f"the {workload} workload in moto's S3 server: {f['objects']} objects, "
        f"{f['bytes'] / 1e6:.1f} MB, {f['new_bytes']:,} bytes held back and uploaded in the "
        f"middle of a {args.watch_seconds:g} s watch; both readers poll every "
        f"{args.poll_interval:g} s; requests counted at the server",
        figures=[
            results.figure(
                "cold ingest",
                f["boardd_cold"]["seconds"],
                f["tensorboard_cold"]["seconds"],
                unit="s",
                better="lower",
            ),
            results.figure(
                "cold ingest: requests",
                f["boardd_cold"]["requests"],
                f["tensorboard_cold"]["requests"],
                unit="requests",
                better="lower",
            ),
            results.figure(
                "a pass with nothing new: GET requests",
                idle["gets"],
                unit="GETs",
                better="lower",
                target="0 GET, 1 LIST per 1,000 objects",
                met=idle["gets"] == 0 and idle["lists"] <= idle["lists_target"],
            ),
            results.figure(
                "new data: bytes fetched per new byte",
                growth["bytes_per_new_byte"],
                unit="×",
                better="lower",
            ),
            results.figure(
                f"requests over the {args.watch_seconds:g} s watch",
                watch["boardd"]["requests"],
                watch["tensorboard"]["requests"],
                unit="requests",
                better="lower",
                target="≥ 10× fewer than TensorBoard" if full_watch else None,
                met=watch["ratio"] >= 10 if full_watch else None,
            ),
        ],
        notes=""
        if full_watch
        else "The target (≥ 10× fewer requests than TensorBoard) is set for a 10-minute watch: "
        "in a shorter one the requests that fetch the new data weigh more, so it is not judged.",
        detail=f,
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
