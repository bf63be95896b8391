"""boardd's own dashboard (``/``, web/) in a real browser (Debian's chromium) on
``boardd serve``, through the contract every scalar chart card keeps (issue 14 §4):
``data-tag``, ``data-points`` (points drawn) and ``data-last-step`` (largest step drawn), and
the extra ``data-runs``, ``data-smoothing``, ``data-last-value`` (see web/src/views/scalars.ts).

Screenshots: see the ``artifacts`` fixture (``$BOARDD_TEST_ARTIFACTS/<test>/``, else the
test's tmp_path)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tensorboardX import SummaryWriter

from tests.browser.conftest import Watched
from tests.daemon.conftest import Daemon, ServeFactory

RUNS = ("lr_0.1", "lr_0.01", "eval")
TAGS = ("loss", "train/acc", "train/grad_norm", "eval/score")
STEPS = 60
WALL = 1_700_000_000.0
#: How soon a point written while the page is open must be drawn (issue 14 §5).
LIVE_SECONDS = 1.0

pytestmark = pytest.mark.slow


def write(logdir: Path, run: str, steps: range, seed: int) -> None:
    """tensorboardX scalars of every tag of TAGS for ``run``, one event file per call."""
    rng = np.random.default_rng(seed)
    with SummaryWriter(str(logdir / run), filename_suffix=f".{steps.start}") as w:
        for step in steps:
            for tag in TAGS:
                w.add_scalar(
                    tag, float(rng.normal()) + 1.0 / (step + 1), step, walltime=WALL + step
                )


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    for i, run in enumerate(RUNS):
        write(root, run, range(STEPS), seed=i)
    return root


def ready(daemon: Daemon) -> str:
    for run in RUNS:
        daemon.wait_for_steps(run, TAGS[-1], list(range(STEPS)), timeout=30)
    return f"http://127.0.0.1:{daemon.port}"


def cards(page: Watched) -> dict[str, dict[str, Any]]:
    """Every scalar chart card's data attributes, by tag."""
    found: dict[str, dict[str, Any]] = page.page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('[data-tag]')].map(
            (c) => [c.dataset.tag, {...c.dataset}]))"""
    )
    return found


def wait_drawn(page: Watched, tags: tuple[str, ...] = TAGS, last_step: int = STEPS - 1) -> None:
    """Waits until every card of ``tags`` is drawn up to ``last_step``."""
    page.page.wait_for_function(
        """([tags, step]) => tags.every((t) => {
            const c = document.querySelector(`[data-tag="${CSS.escape(t)}"]`);
            return c && c.dataset.lastStep === String(step) && Number(c.dataset.points) > 0;
        })""",
        arg=[list(tags), last_step],
    )


def open_dashboard(page: Watched, base: str, query: str = "") -> None:
    page.page.goto(f"{base}/{query}")
    wait_drawn(page)
    page.page.locator("#status.live").wait_for()


def test_a_card_per_scalar_tag_without_errors(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    base = ready(serve(logdir))
    open_dashboard(page, base)
    found = cards(page)
    assert set(found) == set(TAGS)
    for tag, card in found.items():
        assert card["lastStep"] == str(STEPS - 1), tag
        assert set(json.loads(card["runs"])) == set(RUNS), tag
        assert int(card["points"]) == len(RUNS) * STEPS, tag
    # Grouped by tag prefix: train/acc and train/grad_norm share a group.
    groups = page.page.evaluate(
        """() => [...document.querySelectorAll('.group')].map((g) =>
            [g.dataset.group, [...g.querySelectorAll('[data-tag]')].map((c) => c.dataset.tag)])"""
    )
    assert ["train", ["train/acc", "train/grad_norm"]] in groups
    page.screenshot("dashboard")
    page.assert_no_errors()


def test_smoothing_and_runs_change_the_drawn_data(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    base = ready(serve(logdir))
    open_dashboard(page, base, "?smoothing=0")
    before = cards(page)["loss"]
    assert before["smoothing"] == "0"

    page.page.fill("#smoothing-value", "0.9")
    page.page.dispatch_event("#smoothing-value", "change")
    page.page.wait_for_function(
        """() => document.querySelector('[data-tag="loss"]').dataset.smoothing === '0.9'"""
    )
    smoothed = cards(page)["loss"]
    assert smoothed["lastValue"] != before["lastValue"]
    assert "smoothing=0.9" in page.page.url

    # Deselecting a run: fewer runs and points drawn, and the URL says so.
    page.page.locator(f'#run-list input[data-run="{RUNS[0]}"]').uncheck()
    page.page.wait_for_function(
        """(run) => !JSON.parse(document.querySelector('[data-tag="loss"]').dataset.runs)
            .includes(run)""",
        arg=RUNS[0],
    )
    fewer = cards(page)["loss"]
    assert set(json.loads(fewer["runs"])) == set(RUNS[1:])
    assert int(fewer["points"]) == (len(RUNS) - 1) * STEPS
    assert RUNS[0] not in json.loads(fewer["lastValue"])
    assert "hide=" in page.page.url

    # The view state survives a reload (it is in the URL).
    page.page.reload()
    wait_drawn(page)
    again = cards(page)["loss"]
    assert again["smoothing"] == "0.9" and set(json.loads(again["runs"])) == set(RUNS[1:])
    page.screenshot("smoothed-two-runs")
    page.assert_no_errors()


def test_a_point_written_while_open_is_drawn_within_a_second(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    base = ready(serve(logdir))
    open_dashboard(page, base)
    step = STEPS + 40
    start = time.monotonic()
    write(logdir, RUNS[1], range(STEPS, step + 1), seed=9)
    written = time.monotonic()
    wait_drawn(page, last_step=step, tags=TAGS)
    elapsed = time.monotonic() - written
    # Then every point of the commit, not only the last one the stream's event carries (the
    # others are fetched from the step after the last one held).
    page.page.wait_for_function(
        """(n) => document.querySelector('[data-tag="loss"]').dataset.points === String(n)""",
        arg=len(RUNS) * STEPS + (step + 1 - STEPS),
    )
    page.screenshot("live")
    assert elapsed <= LIVE_SECONDS, (
        f"drawn {elapsed:.2f} s after the write ({written - start:.2f} s to write)"
    )

    # A new tag and a new run appear by themselves.
    with SummaryWriter(str(logdir / "late")) as w:
        w.add_scalar("late/metric", 1.0, 0, walltime=WALL)
    page.page.locator('[data-tag="late/metric"][data-last-step="0"]').wait_for()
    page.page.locator('#run-list input[data-run="late"]').wait_for()
    page.assert_no_errors()
