"""boardd's dashboard (``/``) against TensorBoard's UI, side by side in the same headless
Chromium, on the standard workload (bench/workload.py).

1. **Navigation → every chart in view drawn.** A fresh browser context (empty cache) opens
   the page; the clock is the page's own (``performance.now()``, 0 = navigation start) when
   every chart card in the viewport is drawn: boardd's cards have their canvas and their
   ``data-last-step`` at the tag's last step; TensorBoard's Time Series cards (``#timeseries``)
   have their canvas, no spinner and their data table rows. Repeated, the order alternating.
2. **Commit → point drawn.** With boardd's page open, a tensorboardX writer appends one point
   at a time to a live run (flushed; the clock starts when ``flush()`` returns) and the page
   records (MutationObserver, then the next animation frame: the frame that paints it) when
   the card's ``data-last-step`` takes the new step: write → pixel, p50/p99. TensorBoard's UI
   polls: its freshness is its reload period (30 s, the least its settings allow), against
   which boardd's p50 is compared (a point waits half a period on average; not measured in
   the browser here).
3. ``--big``: 64 charts × 16 runs × 10,000 points (every point kept, ``--samples-per-plugin
   scalars=all``): navigation → in view drawn, a smoothing change → every card's attributes
   updated and the cards in view redrawn, frame times while scrolling through every chart,
   and the page's JS heap. boardd only.

The logdir is a hard-linked copy of the cached workload (plus the live run), so the cache is
never written to. Prints the figures and the ratios; ``--json PATH`` saves them."""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import shutil
import statistics
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
    percentile,
    read_port_file,
    spawn,
    stop_process,
)
from bench_tensorboard import CHROMIUM, CHROMIUM_ARGS, Server, _spawn_tensorboard  # noqa: E402
from workload import WorkloadSpec, ensure_workload, small_workload, standard_workload  # noqa: E402

#: The dashboard's targets.
TARGET_FIRST_PAINT_MS = 1000.0
TARGET_PAINT_RATIO = 5.0
TARGET_COMMIT_TO_PIXEL_MS = 100.0

#: The live run the commit → pixel part writes (a new run beside the workload's).
LIVE_RUN = "live"
LIVE_TAG = "train/metric_00"
#: TensorBoard's UI reloads every 30 s (its default and the least its settings allow).
TB_RELOAD_SECONDS = 30.0
VIEWPORT = {"width": 1280, "height": 800}

#: 64 charts × 16 runs × 10,000 points.
BIG = WorkloadSpec(
    name="dashboard-64x16",
    runs=16,
    scalar_tags=64,
    scalar_steps=10_000,
    histogram_steps=0,
    histogram_samples=0,
    image_steps=0,
    image_size=0,
    text_steps=0,
)

#: boardd: every card in the viewport drawn (its canvas) up to its tag's last step.
BOARDD_DRAWN_JS = """(last) => {
  const cards = [...document.querySelectorAll('[data-tag]')];
  const inView = cards.filter((c) => {
    const r = c.getBoundingClientRect();
    return r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth;
  });
  if (inView.length === 0) return false;
  for (const c of inView) {
    if (!c.querySelector('canvas')) return false;
    if (c.dataset.lastStep !== String(last[c.dataset.tag])) return false;
  }
  return [performance.now(), inView.length];
}"""

#: boardd: every card (in view or not) holds its tag's last step: the page's loads are done.
ALL_LOADED_JS = """(last) => [...document.querySelectorAll('[data-tag]')].every(
  (c) => c.dataset.lastStep === String(last[c.dataset.tag]))"""

#: TensorBoard's Time Series: every scalar card in the viewport drawn (as bench_tensorboard's
#: CARDS_DRAWN_JS judges one card: canvas, no spinner, data table rows).
TB_DRAWN_JS = """() => {
  const cards = [...document.querySelectorAll('scalar-card')];
  const inView = cards.filter((c) => {
    const r = c.getBoundingClientRect();
    return r.height > 0 && r.bottom > 0 && r.top < innerHeight
      && r.right > 0 && r.left < innerWidth;
  });
  if (inView.length === 0) return false;
  for (const c of inView) {
    if (c.querySelector('mat-spinner')) return false;
    if (!c.querySelector('line-chart canvas')) return false;
    if (c.querySelectorAll('tb-data-table-content-row').length === 0) return false;
  }
  return [performance.now(), inView.length];
}"""

#: Records, per value of the card's data-last-step, when it was set and the next frame.
WATCH_JS = """(tag) => {
  window.__seen = {};
  const card = document.querySelector(`[data-tag="${CSS.escape(tag)}"]`);
  new MutationObserver(() => {
    const step = card.dataset.lastStep;
    if (step in window.__seen) return;
    const at = performance.timeOrigin + performance.now();
    window.__seen[step] = [at, null];
    requestAnimationFrame(() => {
      window.__seen[step][1] = performance.timeOrigin + performance.now();
    });
  }).observe(card, { attributes: true, attributeFilter: ['data-last-step'] });
}"""


class BenchError(RuntimeError):
    """The benchmark could not run; the message says what to check."""


@dataclass
class Figures:
    """Everything measured, for printing and --json."""

    workload: str
    load_average: tuple[float, float, float]
    boardd_paint_ms: list[float] = field(default_factory=list)
    boardd_cards_in_view: int = 0
    tensorboard_paint_ms: list[float] = field(default_factory=list)
    tensorboard_cards_in_view: int = 0
    tensorboard_paint_note: str = ""
    write_to_attribute_ms: list[float] = field(default_factory=list)
    write_to_frame_ms: list[float] = field(default_factory=list)
    big: dict[str, Any] = field(default_factory=dict)


# -- servers -------------------------------------------------------------------------------------


def linked_copy(source: Path, target: Path) -> Path:
    """A copy of the workload whose files are hard links (no bytes copied; never written)."""
    shutil.copytree(source, target, copy_function=os.link)
    return target


def get_json(port: int, path: str, params: Sequence[tuple[str, str]] = ()) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        query = urllib.parse.urlencode(list(params))
        conn.request("GET", f"{path}?{query}" if query else path)
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            return None
        return json.loads(body)
    finally:
        conn.close()


def wait_until(
    check: Callable[[], bool], what: str, timeout: float, alive: Callable[[], None]
) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        alive()
        if time.monotonic() > deadline:
            raise BenchError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.5)


def start_boardd(
    logdir: Path,
    workdir: Path,
    extra: Sequence[str],
    runs: Sequence[str],
    tag: str,
    last: int,
    timeout: float,
) -> Server:
    """``boardd serve`` on the logdir, returned once every run's ``tag`` reached ``last``."""
    port_file = workdir / "boardd.port"
    log_path = workdir / "boardd.log"
    argv = [*boardd_serve_argv(logdir, port_file, workdir / "boardd.sqlite"), *extra]
    server = Server("boardd", spawn(argv, log_path, child_env()), log_path)
    wait_until(
        lambda: read_port_file(port_file) is not None, "boardd's port file", 60, server.check_alive
    )
    server.port = read_port_file(port_file) or 0

    def caught_up() -> bool:
        answer = get_json(
            server.port, "/api/v1/scalars", [("plugin", "scalars"), ("tag", tag), ("latest", "1")]
        )
        return bool(answer) and all(
            answer.get(r, {}).get(tag, [{}])[-1].get("step") == last for r in runs
        )

    wait_until(caught_up, "boardd's catch-up", timeout, server.check_alive)
    return server


def start_tensorboard(
    logdir: Path, workdir: Path, runs: Sequence[str], tag: str, last: int, timeout: float
) -> Server:
    """TensorBoard (``--load_fast=true``) on the logdir, once every run's ``tag`` reached
    ``last``."""
    server, port_of = _spawn_tensorboard(logdir, workdir)
    wait_until(lambda: port_of() is not None, "TensorBoard's URL", 120, server.check_alive)
    server.port = port_of() or 0

    def caught_up() -> bool:
        for run in runs:
            points = get_json(
                server.port, "/data/plugin/scalars/scalars", [("run", run), ("tag", tag)]
            )
            if not points or points[-1][1] != last:
                return False
        return True

    wait_until(caught_up, "TensorBoard's load", timeout, server.check_alive)
    return server


class LiveWriter:
    """A live run's event file: tensorboardX's own RecordWriter and summary helper, flushed
    after every point. (SummaryWriter.flush() does not wait for its writer thread: a point
    would sit in its queue until the next flush, which would time the writer, not boardd.)"""

    def __init__(self, directory: Path) -> None:
        from tensorboardX.proto import event_pb2
        from tensorboardX.record_writer import RecordWriter

        directory.mkdir(parents=True, exist_ok=True)
        self._event = event_pb2.Event
        self._writer = RecordWriter(str(directory / f"events.out.tfevents.{int(time.time())}.live"))
        self._write(self._event(wall_time=time.time(), file_version="brain.Event:2"))

    def _write(self, event: Any) -> None:
        self._writer.write(event.SerializeToString())
        self._writer.flush()

    def scalar(self, tag: str, value: float, step: int) -> None:
        """Writes and flushes one scalar point."""
        from tensorboardX import summary

        self._write(
            self._event(summary=summary.scalar(tag, value), step=step, wall_time=time.time())
        )

    def close(self) -> None:
        self._writer.close()


# -- the browser parts ---------------------------------------------------------------------------


def last_steps(port: int) -> dict[str, int]:
    """Each scalar tag's last step over the runs (what its card shows as data-last-step)."""
    listing = get_json(port, "/api/v1/scalars/list", [("plugin", "scalars")]) or {}
    out: dict[str, int] = {}
    for tags in listing.values():
        for tag, meta in tags.items():
            out[tag] = max(out.get(tag, meta["max_step"]), meta["max_step"])
    return out


def first_paints(
    browser: Any,
    boardd: Server,
    tensorboard: Server | None,
    repeat: int,
    timeout: float,
    figures: Figures,
) -> None:
    last = last_steps(boardd.port)
    targets: list[tuple[str, str]] = [("boardd", f"http://127.0.0.1:{boardd.port}/")]
    if tensorboard is not None:
        targets.append(("tensorboard", f"http://127.0.0.1:{tensorboard.port}/#timeseries"))
    for round_no in range(repeat):
        for name, url in targets if round_no % 2 == 0 else targets[::-1]:
            context = browser.new_context(viewport=VIEWPORT)
            page = context.new_page()
            try:
                page.goto(url, timeout=timeout * 1000)
                if name == "boardd":
                    handle = page.wait_for_function(
                        BOARDD_DRAWN_JS, arg=last, polling="raf", timeout=timeout * 1000
                    )
                else:
                    handle = page.wait_for_function(
                        TB_DRAWN_JS, polling="raf", timeout=timeout * 1000
                    )
                ms, cards = handle.json_value()
                if name == "boardd":
                    # The page's remaining loads (cards out of view) end before the next
                    # navigation, so they do not slow the next page's server answers.
                    page.wait_for_function(ALL_LOADED_JS, arg=last, timeout=timeout * 1000)
            finally:
                context.close()
            if name == "boardd":
                figures.boardd_paint_ms.append(ms)
                figures.boardd_cards_in_view = cards
            else:
                figures.tensorboard_paint_ms.append(ms)
                figures.tensorboard_cards_in_view = cards
            print(
                f"  navigation {round_no + 1}/{repeat}, {name}: "
                f"{cards} charts in view drawn after {ms:.0f} ms",
                flush=True,
            )


def commit_to_pixel(
    browser: Any,
    boardd: Server,
    logdir: Path,
    samples: int,
    interval: float,
    first_step: int,
    figures: Figures,
) -> int:
    """Writes ``samples`` points (after one that creates the live run) and collects write →
    data-last-step and write → next frame. Returns the next free step."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    step = first_step
    try:
        page.goto(f"http://127.0.0.1:{boardd.port}/?tags=" + urllib.parse.quote(f"^{LIVE_TAG}$"))
        page.wait_for_function(
            '(t) => { const c = document.querySelector(`[data-tag="${t}"]`);'
            " return c && c.querySelector('canvas') && c.dataset.lastStep; }",
            arg=LIVE_TAG,
        )
        page.evaluate(WATCH_JS, LIVE_TAG)
        writer = LiveWriter(logdir / LIVE_RUN)
        try:
            for i in range(samples + 1):
                writer.scalar(LIVE_TAG, 1.0 + 0.01 * i, step)
                written = time.time() * 1000.0
                page.wait_for_function(
                    "(s) => window.__seen[s] && window.__seen[s][1] !== null",
                    arg=str(step),
                    timeout=30_000,
                )
                attribute, frame = page.evaluate("(s) => window.__seen[s]", str(step))
                if i > 0:  # the first point creates the run (its listing, its first fetch)
                    figures.write_to_attribute_ms.append(attribute - written)
                    figures.write_to_frame_ms.append(frame - written)
                step += 1
                time.sleep(interval)
        finally:
            writer.close()
    finally:
        context.close()
    return step


def big_view(browser: Any, boardd: Server, figures: Figures) -> None:
    """64 charts × 16 runs × 10,000 points: navigation, a smoothing change, scrolling, heap."""
    last = last_steps(boardd.port)
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    try:
        page.goto(f"http://127.0.0.1:{boardd.port}/?smoothing=0")
        ms, cards = page.wait_for_function(
            BOARDD_DRAWN_JS, arg=last, polling="raf", timeout=300_000
        ).json_value()
        figures.big["paint_ms"] = ms
        figures.big["cards_in_view"] = cards
        # Every card's attributes (in view or not) at its last step: all data loaded.
        page.wait_for_function(
            ALL_LOADED_JS,
            arg=last,
            timeout=300_000,
        )
        figures.big["cards"] = page.evaluate("() => document.querySelectorAll('[data-tag]').length")
        figures.big["points_held"] = page.evaluate(
            "() => [...document.querySelectorAll('[data-tag]')]"
            ".reduce((n, c) => n + JSON.parse(c.dataset.runs).length, 0)"
        )
        # A smoothing change: every card's data-smoothing, then the frame after.
        figures.big["smoothing_ms"] = page.evaluate(
            """() => new Promise((done) => {
              const input = document.querySelector('#smoothing-value');
              const t0 = performance.now();
              input.value = '0.9';
              input.dispatchEvent(new Event('change'));
              const check = () => {
                const all = [...document.querySelectorAll('[data-tag]')];
                if (all.every((c) => c.dataset.smoothing === '0.9')) {
                  requestAnimationFrame(() => done(performance.now() - t0));
                } else requestAnimationFrame(check);
              };
              requestAnimationFrame(check);
            })"""
        )
        # Scrolling through every chart, 40 px a frame: the frames' durations.
        frames = page.evaluate(
            """() => new Promise((done) => {
              const out = [];
              let last = performance.now();
              const step = () => {
                const now = performance.now();
                out.push(now - last);
                last = now;
                if (innerHeight + scrollY >= document.body.scrollHeight - 2) return done(out);
                scrollBy(0, 40);
                requestAnimationFrame(step);
              };
              requestAnimationFrame(step);
            })"""
        )
        figures.big["scroll_frames"] = len(frames)
        figures.big["scroll_frame_ms_p50"] = percentile(frames, 50)
        figures.big["scroll_frame_ms_p99"] = percentile(frames, 99)
        figures.big["scroll_frame_ms_max"] = max(frames)
        figures.big["js_heap_mib"] = page.evaluate(
            "() => performance.memory ? performance.memory.usedJSHeapSize / 2 ** 20 : null"
        )
    finally:
        context.close()


# -- the run -------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> Figures:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise BenchError(
            "playwright is not installed (.venv/bin/pip install -e '.[test]')"
        ) from exc
    if not Path(CHROMIUM).exists():
        raise BenchError(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    if args.big:
        source = ensure_workload(BIG)
        spec = BIG
    elif args.small:
        source = small_workload()
        spec = None
    else:
        source = standard_workload()
        spec = None
    marker = json.loads((source / ".boardd-workload.json").read_text())
    runs_n = int(marker["spec"]["runs"]) if "spec" in marker else (spec.runs if spec else 16)
    steps = int(marker["spec"]["scalar_steps"]) if "spec" in marker else 10_000
    runs = [f"run_{i:02d}" for i in range(runs_n)]
    figures = Figures(source.name, os.getloadavg())
    workdir = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    servers: list[Server] = []
    try:
        logdir = linked_copy(source, workdir / "logs")
        print(
            f"workload {source.name}: {logdir} (hard links); load average {figures.load_average}",
            flush=True,
        )
        extra = ["--samples-per-plugin", "scalars=all"] if args.big else []
        t0 = time.monotonic()
        boardd = start_boardd(logdir, workdir, extra, runs, LIVE_TAG, steps - 1, args.ready_timeout)
        servers.append(boardd)
        print(f"boardd ready in {time.monotonic() - t0:.1f} s (port {boardd.port})", flush=True)
        tensorboard = None
        if not args.big and not args.skip_tensorboard:
            t0 = time.monotonic()
            tensorboard = start_tensorboard(
                logdir, workdir, runs, LIVE_TAG, steps - 1, args.ready_timeout
            )
            servers.append(tensorboard)
            print(
                f"TensorBoard ready in {time.monotonic() - t0:.1f} s (port {tensorboard.port})",
                flush=True,
            )
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                if args.big:
                    big_view(browser, boardd, figures)
                else:
                    first_paints(
                        browser, boardd, tensorboard, args.repeat, args.browser_timeout, figures
                    )
                    commit_to_pixel(
                        browser, boardd, logdir, args.samples, args.interval, steps, figures
                    )
            finally:
                browser.close()
    finally:
        for server in servers:
            stop_process(server.proc)
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    figures.load_average = os.getloadavg()
    return figures


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _p(values: Sequence[float], q: float) -> float:
    return percentile(values, q) if values else math.nan


def print_report(f: Figures) -> None:
    print()
    print(
        f"## Dashboard: boardd vs TensorBoard's UI ({f.workload}; "
        f"load average at the end {f.load_average[0]:.1f})"
    )
    if f.big:
        b = f.big
        print(f"64 charts × 16 runs × 10,000 points ({b.get('cards')} cards):")
        print(
            f"  navigation → {b.get('cards_in_view')} charts in view drawn: "
            f"{b.get('paint_ms', math.nan):.0f} ms"
        )
        print(
            "  smoothing 0 → 0.9: every card's attributes updated, cards in view redrawn: "
            f"{b.get('smoothing_ms', math.nan):.0f} ms"
        )
        print(
            f"  scrolling through every chart ({b.get('scroll_frames')} frames): frame p50 "
            f"{b.get('scroll_frame_ms_p50', math.nan):.1f} ms, "
            f"p99 {b.get('scroll_frame_ms_p99', math.nan):.1f} ms, "
            f"max {b.get('scroll_frame_ms_max', math.nan):.1f} ms"
        )
        print(f"  JS heap: {b.get('js_heap_mib') or math.nan:.0f} MiB")
        return
    bp = statistics.median(f.boardd_paint_ms) if f.boardd_paint_ms else math.nan
    tp = statistics.median(f.tensorboard_paint_ms) if f.tensorboard_paint_ms else math.nan
    print(f"navigation → every chart in view drawn (median of {len(f.boardd_paint_ms)}):")
    print(
        f"  boardd       {bp:8.0f} ms ({f.boardd_cards_in_view} charts)   "
        f"target ≤ {TARGET_FIRST_PAINT_MS:.0f} ms: {_met(bp <= TARGET_FIRST_PAINT_MS)}"
    )
    if f.tensorboard_paint_ms:
        ratio = tp / bp
        print(f"  TensorBoard  {tp:8.0f} ms ({f.tensorboard_cards_in_view} charts)")
        print(
            f"  ratio        {ratio:8.1f}×   "
            f"target ≥ {TARGET_PAINT_RATIO:.0f}×: {_met(ratio >= TARGET_PAINT_RATIO)}"
        )
    a50, a99 = _p(f.write_to_attribute_ms, 50), _p(f.write_to_attribute_ms, 99)
    w50, w99 = _p(f.write_to_frame_ms, 50), _p(f.write_to_frame_ms, 99)
    print(f"write → point drawn, boardd ({len(f.write_to_frame_ms)} points):")
    print(f"  data-last-step set    p50 {a50:6.1f} ms  p99 {a99:6.1f} ms")
    print(
        f"  next frame (painted)  p50 {w50:6.1f} ms  p99 {w99:6.1f} ms   "
        f"target p50 ≤ {TARGET_COMMIT_TO_PIXEL_MS:.0f} ms: "
        f"{_met(w50 <= TARGET_COMMIT_TO_PIXEL_MS)}"
    )
    print(
        f"  TensorBoard's UI: its reload period, {TB_RELOAD_SECONDS:.0f} s (on average half of it"
        f" passes before a point shows): {TB_RELOAD_SECONDS * 500 / w50:.0f}× boardd's p50"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--small", action="store_true", help="the small workload (a quick check)")
    size.add_argument(
        "--big",
        action="store_true",
        help="64 charts × 16 runs × 10,000 points, boardd only (generated once, cached)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="page loads per UI (default 5)")
    parser.add_argument(
        "--samples", type=int, default=40, help="points written for write → pixel (default 40)"
    )
    parser.add_argument(
        "--interval", type=float, default=0.25, help="seconds between those points (default 0.25)"
    )
    parser.add_argument("--skip-tensorboard", action="store_true", help="boardd only")
    parser.add_argument(
        "--ready-timeout",
        type=float,
        default=900.0,
        help="seconds for each server to load the workload",
    )
    parser.add_argument(
        "--browser-timeout", type=float, default=120.0, help="seconds for a page to draw"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the working directory (logs, store)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    results.add_argument(parser)
    args = parser.parse_args(argv)
    try:
        figures = run(args)
    except BenchError as exc:
        print(f"bench_dashboard: {exc}", file=sys.stderr)
        return 1
    print_report(figures)
    if args.json:
        args.json.write_text(json.dumps(asdict(figures), indent=2))
    write_results(figures, args, argv)
    return 0


def write_results(f: Figures, args: argparse.Namespace, argv: Sequence[str] | None) -> None:
    """bench/results/bench_dashboard.json (bench_dashboard_big.json with --big)."""
    if f.big:
        b = f.big
        results.write(
            args.results,
            "bench_dashboard_big",
            title="Dashboard: 64 charts × 16 runs × 10,000 points",
            anchor=None,
            workload=f.workload,
            figures=[
                results.figure(
                    f"navigation → {b.get('cards_in_view')} charts in view drawn",
                    b.get("paint_ms"),
                    unit="ms",
                    better="lower",
                ),
                results.figure(
                    "smoothing 0 → 0.9: every card updated, cards in view redrawn",
                    b.get("smoothing_ms"),
                    unit="ms",
                    better="lower",
                ),
                results.figure(
                    "scrolling through every chart: frame p99",
                    b.get("scroll_frame_ms_p99"),
                    unit="ms",
                    better="lower",
                ),
                results.figure("JS heap", b.get("js_heap_mib"), unit="MiB", better="lower"),
            ],
            detail=asdict(f),
            argv=argv,
        )
        return
    bp = statistics.median(f.boardd_paint_ms) if f.boardd_paint_ms else math.nan
    tp = statistics.median(f.tensorboard_paint_ms) if f.tensorboard_paint_ms else math.nan
    paint_ratio = results.ratio(bp, tp, "lower")
    w50 = _p(f.write_to_frame_ms, 50)
    results.write(
        args.results,
        "bench_dashboard",
        title="Dashboard: first paint, write → pixel",
        anchor="TensorBoard's UI (Time Series) on tensorboard --load_fast=true, same Chromium",
        workload=f"{f.workload}; median of {len(f.boardd_paint_ms)} page loads; "
        f"{len(f.write_to_frame_ms)} points written for write → pixel",
        figures=[
            results.figure(
                "navigation → every chart in view drawn",
                bp,
                tp,
                unit="ms",
                better="lower",
                target=f"≤ {TARGET_FIRST_PAINT_MS:.0f} ms and ≥ {TARGET_PAINT_RATIO:.0f}× faster",
                met=bp <= TARGET_FIRST_PAINT_MS
                and (paint_ratio is None or paint_ratio >= TARGET_PAINT_RATIO),
            ),
            results.figure(
                "write → point drawn, p50 (TensorBoard's UI: half its reload period)",
                w50,
                TB_RELOAD_SECONDS * 500 if f.tensorboard_paint_ms else None,
                unit="ms",
                better="lower",
                target=f"≤ {TARGET_COMMIT_TO_PIXEL_MS:.0f} ms",
                met=w50 <= TARGET_COMMIT_TO_PIXEL_MS,
            ),
        ],
        detail=asdict(f),
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
