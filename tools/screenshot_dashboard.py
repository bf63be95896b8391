"""Makes README's screenshot of the dashboard (docs/dashboard.png): a small learning-rate sweep
written as tensorboardX event files, ``boardd serve`` on it (a subprocess, this checkout's
sources), and Debian's headless Chromium photographing ``/`` with every chart drawn and a
tooltip showing.

    .venv/bin/python tools/screenshot_dashboard.py [--out docs/dashboard.png]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
STEPS = 2_000
RUNS = {"lr=0.1": 0.1, "lr=0.03": 0.03, "lr=0.01": 0.01, "lr=0.003": 0.003}


def write_sweep(logdir: Path) -> None:
    """Loss, accuracy, learning rate and gradient norm of a few runs, as a training loop logs
    them (tensorboardX's SummaryWriter), with eval metrics every 100 steps."""
    from tensorboardX import SummaryWriter

    for i, (run, lr) in enumerate(RUNS.items()):
        rng = np.random.default_rng(i)
        floor = 0.15 + 0.4 * abs(math.log10(lr) + 1.5)
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(STEPS):
                wall = 1_700_000_000.0 + step * 0.5
                progress = 1 - math.exp(-step * lr / 8)
                loss = floor + (2.3 - floor) * (1 - progress) + rng.normal(0, 0.04)
                # A loss spike, as a bad batch gives one (kept by min/max downsampling).
                if run == "lr=0.1" and step == 1_234:
                    loss += 1.5
                w.add_scalar("train/loss", loss, step, walltime=wall)
                w.add_scalar("train/accuracy", 1 - loss / 2.6, step, walltime=wall)
                w.add_scalar(
                    "train/grad_norm",
                    abs(rng.normal(2 * (1 - progress) + 0.3, 0.2)),
                    step,
                    walltime=wall,
                )
                w.add_scalar(
                    "optim/lr",
                    lr * 0.5 * (1 + math.cos(math.pi * step / STEPS)),
                    step,
                    walltime=wall,
                )
                if step % 100 == 99:
                    w.add_scalar(
                        "eval/loss", loss + 0.05 + rng.normal(0, 0.01), step, walltime=wall
                    )
                    w.add_scalar("eval/accuracy", 1 - (loss + 0.05) / 2.6, step, walltime=wall)


def serve(logdir: Path, workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    port_file = workdir / "port"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), STATE_DIRECTORY=str(workdir / "state"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "boardd",
            "serve",
            str(logdir),
            "--port",
            "0",
            "--port-file",
            str(port_file),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = port_file.read_text().strip() if port_file.exists() else ""
        if text:
            return proc, int(text)
        if proc.poll() is not None:
            raise SystemExit(f"boardd serve exited with {proc.returncode}")
        time.sleep(0.1)
    proc.terminate()
    raise SystemExit("boardd serve wrote no port within 60 s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "docs" / "dashboard.png", help="where to save the PNG"
    )
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        write_sweep(workdir / "logs")
        proc, port = serve(workdir / "logs", workdir)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
                )
                page = browser.new_page(
                    viewport={"width": 1600, "height": 1000}, device_scale_factor=1
                )
                page.goto(f"http://127.0.0.1:{port}/?smoothing=0.8", timeout=60_000)
                # Every card loaded to its last step, and every card in view drawn.
                page.wait_for_function(
                    """(last) => {
                        const cards = [...document.querySelectorAll('[data-tag]')];
                        return cards.length === 6 && cards.every((c) => {
                            const r = c.getBoundingClientRect();
                            const seen = r.top < innerHeight && r.bottom > 0;
                            return c.dataset.lastStep === String(last)
                                && (!seen || c.querySelector('canvas'));
                        });
                    }""",
                    arg=STEPS - 1,
                    timeout=60_000,
                )
                page.locator("#status.live").wait_for()
                over = page.locator('[data-tag="train/loss"] .u-over')
                box = over.bounding_box()
                assert box is not None
                page.mouse.move(box["x"] + box["width"] * 0.62, box["y"] + box["height"] * 0.5)
                page.locator('[data-tag="train/loss"] .tooltip').wait_for(state="visible")
                args.out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.out))
                browser.close()
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
