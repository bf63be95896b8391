"""boardd's own dashboard (``/``, web/) in a real browser (Debian's chromium) on
``boardd serve``, through the contract every scalar chart card keeps (issue 14 §4):
``data-tag``, ``data-points`` (points drawn) and ``data-last-step`` (largest step drawn), and
the extra ``data-runs``, ``data-smoothing``, ``data-last-value``, ``data-y-scale``,
``data-zoom`` (see web/src/views/scalars.ts), current for every card, in view or not.

Screenshots: see the ``artifacts`` fixture (``$BOARDD_TEST_ARTIFACTS/<test>/``, else the
test's tmp_path)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter

from tests.browser.conftest import Watched
from tests.daemon.conftest import Daemon, ServeFactory

if TYPE_CHECKING:
    from playwright.sync_api import Route

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


def test_the_first_answers_come_with_the_page(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    """The page's run list and scalars listing come inside index.html (boardd.api.dashboard):
    the script asks for neither, for the scalars view and another one, and its first request
    is for the charts in view; no console warning (of a preload unused or mismatched)."""
    base = ready(serve(logdir))
    warnings: list[str] = []
    page.page.on(
        "console", lambda m: warnings.append(m.text) if m.type in ("warning", "error") else None
    )
    open_dashboard(page, base)
    page.page.wait_for_load_state("networkidle")
    asked = page.page.evaluate(
        "() => performance.getEntriesByType('resource').map((e) => e.name)"
        ".filter((n) => n.includes('/api/v1/'))"
    )
    assert not [a for a in asked if "/api/v1/runs" in a or "/api/v1/scalars/list" in a], asked
    assert "/api/v1/scalars?" in asked[0], asked
    page.page.goto(f"{base}/?view=status")
    page.page.locator("main#view[data-view=status] [data-experiment]").first.wait_for()
    page.page.wait_for_load_state("networkidle")
    asked = page.page.evaluate(
        "() => performance.getEntriesByType('resource').map((e) => e.name)"
        ".filter((n) => n.includes('/api/v1/runs'))"
    )
    assert asked == [], asked
    page.page.wait_for_timeout(3500)  # Chromium warns of a preload unused after 3 s
    assert not warnings, warnings
    page.assert_no_errors()


def test_a_tag_committed_while_the_page_loads_is_not_missed(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    """The page's first answers (the run list, the scalars listing) are made with the page,
    before its stream opens: a tag committed in between (and never written again) reaches
    the page through the stream cursor the page carries (boardd.api.dashboard,
    web/src/api.ts). Its script is held back here until the tag is in the store."""
    daemon = serve(logdir)
    base = ready(daemon)
    held: list[Route] = []
    page.page.route("**/assets/*.js", lambda route: held.append(route))
    page.page.goto(f"{base}/", wait_until="commit")
    page.until(lambda: held or None)
    with SummaryWriter(str(logdir / "late")) as w:
        w.add_scalar("extra/new", 0.5, 3, walltime=WALL)
    daemon.wait_for_steps("late", "extra/new", [3], timeout=30)
    for route in held:
        route.continue_()
    wait_drawn(page)
    wait_drawn(page, ("extra/new",), 3)
    card = cards(page)["extra/new"]
    assert json.loads(card["runs"]) == ["late"] and card["points"] == "1", card
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

    # A run whose directory is removed goes by itself too (it used to stay until a reload),
    # and the card of a tag only it had with it.
    shutil.rmtree(logdir / "late")
    page.page.locator('#run-list input[data-run="late"]').wait_for(state="detached")
    page.page.locator('[data-tag="late/metric"]').wait_for(state="detached")
    shutil.rmtree(logdir / RUNS[2])
    page.page.wait_for_function(
        """(runs) => JSON.stringify(JSON.parse(
            document.querySelector('[data-tag="loss"]').dataset.runs).sort()) === runs""",
        arg=json.dumps(sorted(RUNS[:2]), separators=(",", ":")),
    )
    assert page.page.locator(f'#run-list input[data-run="{RUNS[2]}"]').count() == 0
    page.assert_no_errors()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def card_data(page: Watched, tag: str) -> dict[str, str]:
    found: dict[str, str] = page.page.evaluate(
        '(t) => ({...document.querySelector(`[data-tag="${CSS.escape(t)}"]`).dataset})', tag
    )
    return found


def test_log_y(serve: ServeFactory, logdir: Path, page: Watched) -> None:
    base = ready(serve(logdir))
    open_dashboard(page, base)
    assert {c["yScale"] for c in cards(page).values()} == {"linear"}
    page.page.check("#log-y")
    page.page.wait_for_function(
        """() => [...document.querySelectorAll('[data-tag]')].every(
            (c) => c.dataset.yScale === 'log')"""
    )
    assert "y=log" in page.page.url
    page.screenshot("log-y")
    page.page.reload()
    wait_drawn(page)
    assert {c["yScale"] for c in cards(page).values()} == {"log"}
    assert page.page.is_checked("#log-y")
    page.assert_no_errors()


def test_ignore_outliers(serve: ServeFactory, tmp_path: Path, page: Watched) -> None:
    """By default, as TensorBoard's "ignore outliers", a loss whose first steps are a hundred
    times the rest no longer flattens the curve along the bottom: those few points far from
    the rest run off the chart, and the rest of the curve is whole (TensorBoard's 5th to 95th
    percentile cut its top off too). Unticking "ignore outliers" spans every value; the URL
    keeps the choice."""
    root = tmp_path / "spiky"
    values = [100.0 if step < 3 else 1.0 + 0.01 * step for step in range(100)]
    with SummaryWriter(str(root / "run"), filename_suffix=".spiky") as w:
        for step, value in enumerate(values):
            w.add_scalar("loss", value, step, walltime=WALL + step)
    daemon = serve(root)
    daemon.wait_for_steps("run", "loss", list(range(100)), timeout=30)
    # Smoothing off: the values drawn are the values written.
    page.page.goto(f"http://127.0.0.1:{daemon.port}/?smoothing=0")
    wait_drawn(page, ("loss",), 99)
    assert page.page.is_checked("#ignore-outliers")

    def y_range() -> tuple[float, float]:
        bottom, top = (float(v) for v in cards(page)["loss"]["yRange"].split(","))
        return bottom, top

    rest = [v for v in values if v < 100]
    bottom, top = y_range()
    assert bottom <= min(rest) and max(rest) <= top < 10, (bottom, top)  # the 100s left out
    page.screenshot("outliers-ignored")
    page.page.uncheck("#ignore-outliers")
    page.page.wait_for_function(
        """() => document.querySelector('[data-tag="loss"]').dataset.ignoreOutliers === 'false'"""
    )
    bottom, top = y_range()
    assert bottom <= min(values) and top >= 100, (bottom, top)
    assert "outliers=show" in page.page.url
    page.screenshot("outliers-shown")
    page.page.reload()
    wait_drawn(page, ("loss",), 99)
    assert not page.page.is_checked("#ignore-outliers")
    assert y_range()[1] >= 100
    page.assert_no_errors()


def test_a_learning_rate_schedule_is_no_outlier(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """With outliers ignored (the default), a learning rate of 0.01 decaying is drawn whole:
    the y axis used to stop at the 95th percentile (0.008), cutting the schedule's start off.
    On a log axis over ten decades, each tick is written by its own magnitude ("1e-10", not
    "0.0000000001")."""
    root = tmp_path / "schedule"
    steps = range(200)
    lr = [0.01 * 0.98**step for step in steps]
    tiny = [0.01 * 10 ** (-8 * step / 199) for step in steps]
    with SummaryWriter(str(root / "run"), filename_suffix=".lr") as w:
        for step in steps:
            w.add_scalar("lr", lr[step], step, walltime=WALL + step)
            w.add_scalar("lr_tiny", tiny[step], step, walltime=WALL + step)
    daemon = serve(root)
    daemon.wait_for_steps("run", "lr_tiny", list(steps), timeout=30)
    page.page.goto(f"http://127.0.0.1:{daemon.port}/?smoothing=0")
    wait_drawn(page, ("lr", "lr_tiny"), 199)
    assert page.page.is_checked("#ignore-outliers")
    bottom, top = (float(v) for v in cards(page)["lr"]["yRange"].split(","))
    assert bottom <= min(lr) and top >= max(lr) == pytest.approx(0.01), (bottom, top)
    page.screenshot("lr-schedule-whole")

    page.page.check("#log-y")
    page.page.wait_for_function(
        """() => ['lr', 'lr_tiny'].every((t) => {
            const c = document.querySelector(`[data-tag="${t}"]`);
            return c.dataset.yScale === 'log' && c.dataset.yTickLabels; })"""
    )
    found = cards(page)
    bottom, top = (float(v) for v in found["lr"]["yRange"].split(","))
    assert bottom <= min(lr) and top >= max(lr), (bottom, top)
    ticks = json.loads(found["lr_tiny"]["yTicks"])
    labels = json.loads(found["lr_tiny"]["yTickLabels"])
    assert len(labels) == len(ticks) >= 3, (ticks, labels)
    assert "1e-10" in labels and "0.01" in labels, labels
    for tick, label in zip(ticks, labels, strict=True):
        assert len(label) <= 6 and float(label) == pytest.approx(tick), (tick, label)
    page.screenshot("lr-schedule-log")
    page.assert_no_errors()


def test_a_chart_spans_the_page_width_on_request(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """A card's ⤢ button gives its chart a row of its group to itself, drawn at that width;
    the URL keeps it (``wide=TAG``); pressed again, the card is back in its column."""
    root = tmp_path / "wide"
    with SummaryWriter(str(root / "run"), filename_suffix=".wide") as w:
        for step in range(20):
            w.add_scalar("train/a", float(step), step, walltime=WALL + step)
            w.add_scalar("train/b", float(-step), step, walltime=WALL + step)
    daemon = serve(root)
    daemon.wait_for_steps("run", "train/b", list(range(20)), timeout=30)
    page.page.set_viewport_size({"width": 1400, "height": 900})
    page.page.goto(f"http://127.0.0.1:{daemon.port}/")
    wait_drawn(page, ("train/a", "train/b"), 19)
    widths = """() => Object.fromEntries([...document.querySelectorAll('[data-tag]')].map((c) =>
        [c.dataset.tag, [c.getBoundingClientRect().width,
                         c.querySelector('canvas').getBoundingClientRect().width]]))
        """
    grid = page.page.locator('.group[data-group="train"] .grid').bounding_box()
    assert grid is not None
    before = page.page.evaluate(widths)
    assert before["train/a"][0] < grid["width"] / 2  # two columns
    button = page.page.locator('[data-tag="train/a"] .wide-toggle')
    button.click()
    page.page.wait_for_function(
        f"""() => {{ const c = document.querySelector('[data-tag="train/a"]');
            const canvas = c.querySelector('canvas').getBoundingClientRect().width;
            return c.getBoundingClientRect().width > {grid["width"]} - 2
                && canvas > c.clientWidth - 30 && canvas <= c.clientWidth; }}"""
    )
    assert button.get_attribute("aria-pressed") == "true"
    assert "wide=train%2Fa" in page.page.url
    after = page.page.evaluate(widths)
    assert after["train/b"][0] == pytest.approx(before["train/b"][0], abs=2)
    page.screenshot("wide")
    page.page.reload()
    wait_drawn(page, ("train/a", "train/b"), 19)
    assert page.page.evaluate(widths)["train/a"][0] > grid["width"] - 2
    page.page.locator('[data-tag="train/a"] .wide-toggle').click()
    page.page.wait_for_function(
        f"""() => document.querySelector('[data-tag="train/a"]').getBoundingClientRect().width
            < {grid["width"]} / 2"""
    )
    assert "wide=" not in page.page.url
    page.assert_no_errors()


def test_log_y_fits_the_lines_range(serve: ServeFactory, tmp_path: Path, page: Watched) -> None:
    """A log y axis spans the lines' own range, with ticks inside it: a loss between 1.05 and
    1.15 used to be drawn flat along the bottom of a 1–10 axis (uPlot snaps a log range to whole
    decades), with no tick between."""
    root = tmp_path / "logy"
    with SummaryWriter(str(root / "run"), filename_suffix=".logy") as w:
        for step in range(50):
            w.add_scalar("narrow", 1.05 + 0.1 * step / 49, step, walltime=WALL + step)
            w.add_scalar("wide", 10.0 ** (-3 + 4 * step / 49), step, walltime=WALL + step)
    daemon = serve(root)
    daemon.wait_for_steps("run", "wide", list(range(50)), timeout=30)
    # Every value counts here (outliers are ignored by default: test_ignore_outliers).
    page.page.goto(f"http://127.0.0.1:{daemon.port}/?y=log&outliers=show")
    wait_drawn(page, ("narrow", "wide"), 49)
    page.page.wait_for_function(
        """() => ['narrow', 'wide'].every((t) => {
            const c = document.querySelector(`[data-tag="${t}"]`);
            return c.dataset.yScale === 'log' && c.dataset.yTicks; })"""
    )
    found = cards(page)
    for tag, (lo, hi) in {"narrow": (1.05, 1.15), "wide": (1e-3, 10.0)}.items():
        bottom, top = (float(v) for v in found[tag]["yRange"].split(","))
        ticks = json.loads(found[tag]["yTicks"])
        # The range holds the lines with at most a tenth of their (log) span to spare.
        span = np.log10(hi / lo)
        assert lo / 10 ** (0.1 * span) < bottom < lo and hi < top < hi * 10 ** (0.1 * span), tag
        assert len(ticks) >= 3 and all(bottom <= t <= top for t in ticks), (tag, ticks)
    assert json.loads(found["wide"]["yTicks"])[:2] == [0.001, 0.01]
    page.screenshot("log-y-ranges")
    page.assert_no_errors()


#: A description in Markdown, with a script that must stay text.
LOSS_DESCRIPTION = (
    "training **loss**, summed over the [batch](https://example.com/batch) "
    "<script>window.described = 1</script>"
)


def test_a_tag_description_is_shown_under_its_title(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """A scalar written with a description (``tf.summary.scalar(..., description=)``: the
    summary metadata's ``summary_description``) shows it under the card's title, its Markdown
    rendered and sanitized as TensorBoard's UI shows it; a tag without one shows none. So does a
    histogram tag, under its group's heading."""
    root = tmp_path / "described"
    writer = EventFileWriter(str(root / "run"))
    for step in range(5):
        event = event_pb2.Event(wall_time=WALL + step, step=step)
        for tag, text in (("loss", LOSS_DESCRIPTION), ("plain", "")):
            metadata = summary_pb2.SummaryMetadata(summary_description=text)
            metadata.plugin_data.plugin_name = "scalars"
            event.summary.value.add(
                tag=tag,
                tensor=tensor_util.make_tensor_proto(1.0 / (step + 1), dtype="float32"),
                metadata=metadata,
            )
        # A histogram as tf.summary.histogram writes it: [left, right, count] rows.
        buckets = np.array([[0.0, 1.0, 3.0], [1.0, 2.0, 5.0 + step]], dtype=np.float64)
        metadata = summary_pb2.SummaryMetadata(summary_description="weights of *layer 1*")
        metadata.plugin_data.plugin_name = "histograms"
        event.summary.value.add(
            tag="weights", tensor=tensor_util.make_tensor_proto(buckets), metadata=metadata
        )
        writer.add_event(event)
    writer.close()
    daemon = serve(root)
    daemon.wait_for_steps("run", "plain", list(range(5)), timeout=30)
    page.page.goto(f"http://127.0.0.1:{daemon.port}/")
    wait_drawn(page, ("loss", "plain"), 4)
    described = page.page.locator('[data-tag="loss"] .description')
    # Shown as written at once, then with its Markdown rendered (by the server: the HTML of
    # TensorBoard's tags route); the script in it is text, not run.
    described.locator("strong").wait_for()
    assert described.is_visible()
    assert described.locator("strong").inner_text() == "loss"
    link = described.locator("a")
    assert link.inner_text() == "batch"
    assert link.get_attribute("href") == "https://example.com/batch"
    assert described.inner_text() == (
        "training loss, summed over the batch <script>window.described = 1</script>"
    )
    assert described.get_attribute("title") == described.inner_text()
    assert page.page.evaluate("window.described") is None
    assert not page.page.locator('[data-tag="plain"] .description').is_visible()
    page.screenshot("described")
    page.page.goto(f"http://127.0.0.1:{daemon.port}/?view=histograms")
    heading = page.page.locator('.group[data-group="weights"] > .description')
    heading.locator("em").wait_for()
    assert heading.inner_text() == "weights of layer 1"
    assert heading.locator("em").inner_text() == "layer 1"
    page.page.locator('.hist-card[data-tag="weights"][data-last-step="4"]').wait_for()
    page.screenshot("described-histograms")

    # Tags first written while the page is open show their descriptions too (the stream's
    # events do not carry them): a histogram here, then a scalar in the scalars view.
    later = EventFileWriter(str(root / "run"), filename_suffix=".later")
    event = event_pb2.Event(wall_time=WALL + 10, step=10)
    metadata = summary_pb2.SummaryMetadata(summary_description="biases of layer 2")
    metadata.plugin_data.plugin_name = "histograms"
    buckets = np.array([[0.0, 1.0, 2.0]], dtype=np.float64)
    event.summary.value.add(
        tag="biases", tensor=tensor_util.make_tensor_proto(buckets), metadata=metadata
    )
    later.add_event(event)
    later.flush()
    heading = page.page.locator('.group[data-group="biases"] > .description')
    heading.wait_for(timeout=15_000)
    assert heading.inner_text() == "biases of layer 2"
    page.page.goto(f"http://127.0.0.1:{daemon.port}/")
    wait_drawn(page, ("loss", "plain"), 4)
    event = event_pb2.Event(wall_time=WALL + 11, step=11)
    metadata = summary_pb2.SummaryMetadata(summary_description="accuracy on held-out data")
    metadata.plugin_data.plugin_name = "scalars"
    event.summary.value.add(
        tag="accuracy",
        tensor=tensor_util.make_tensor_proto(0.5, dtype="float32"),
        metadata=metadata,
    )
    later.add_event(event)
    later.close()
    late = page.page.locator('[data-tag="accuracy"] .description')
    late.wait_for(timeout=15_000)
    assert late.inner_text() == "accuracy on held-out data"
    page.assert_no_errors()


LONG_STEPS = 20_000
SPIKE_STEP = 12_345


@pytest.fixture
def long_logdir(tmp_path: Path) -> Path:
    """One run, one tag of LONG_STEPS points (more than a first fetch brings), one spike."""
    root = tmp_path / "long"
    with SummaryWriter(str(root / "run"), filename_suffix=".long") as w:
        for step in range(LONG_STEPS):
            value = 100.0 if step == SPIKE_STEP else float(np.sin(step / 300))
            w.add_scalar("long", value, step, walltime=WALL + step)
    return root


def test_zoom_and_pan_fetch_the_windows_points(
    serve: ServeFactory, long_logdir: Path, page: Watched
) -> None:
    daemon = serve(long_logdir)  # every scalar kept: the store's default
    daemon.wait_for_steps("run", "long", range(LONG_STEPS), timeout=60)
    base = f"http://127.0.0.1:{daemon.port}"
    page.page.goto(f"{base}/?smoothing=0")
    wait_drawn(page, tags=("long",), last_step=LONG_STEPS - 1)
    whole = card_data(page, "long")
    # The first fetch keeps at most 4,000 points, its spike among them.
    assert int(whole["points"]) <= 4_000 and whole["zoom"] == ""

    over = page.page.locator('[data-tag="long"] .u-over')
    box = over.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2

    def points_in(zoom: str) -> int:
        lo, hi = (float(v) for v in zoom.split(","))
        # Every step of the window and one neighbour each side: all of them fetched.
        return len([s for s in range(LONG_STEPS) if lo <= s <= hi]) + 2

    def wait_window(previous: str) -> dict[str, str]:
        page.page.wait_for_function(
            """(prev) => { const d = document.querySelector('[data-tag="long"]').dataset;
                return d.zoom !== '' && d.zoom !== prev && d.zoomFetched !== undefined; }""",
            arg=previous,
        )
        zoom = card_data(page, "long")["zoom"]
        page.page.wait_for_function(
            """(n) => document.querySelector('[data-tag="long"]').dataset.points === String(n)""",
            arg=points_in(zoom),
        )
        return card_data(page, "long")

    requests: list[str] = []
    page.page.on("request", lambda r: requests.append(r.url) if "step_max=" in r.url else None)
    # Drag across 4 % of the chart around the spike: about 800 steps.
    x0 = box["x"] + box["width"] * SPIKE_STEP / LONG_STEPS - box["width"] * 0.025
    page.page.mouse.move(x0, y)
    page.page.mouse.down()
    page.page.mouse.move(x0 + box["width"] * 0.04, y, steps=5)
    page.page.mouse.up()
    zoomed = wait_window("")
    lo, hi = (float(v) for v in zoomed["zoom"].split(","))
    assert 500 < hi - lo < 1_100, zoomed["zoom"]
    assert any("downsample_by=extremes" in u and "step_min=" in u for u in requests), requests
    page.screenshot("zoomed")

    # Ctrl + wheel zooms further in around the pointer.
    page.page.mouse.move(box["x"] + box["width"] / 2, y)
    page.page.keyboard.down("Control")
    page.page.mouse.wheel(0, -100)
    page.page.keyboard.up("Control")
    narrower = wait_window(zoomed["zoom"])
    nlo, nhi = (float(v) for v in narrower["zoom"].split(","))
    assert nhi - nlo < hi - lo and lo <= nlo and nhi <= hi

    # Shift + drag pans: the same span, moved later.
    page.page.keyboard.down("Shift")
    page.page.mouse.move(box["x"] + box["width"] * 0.6, y)
    page.page.mouse.down()
    page.page.mouse.move(box["x"] + box["width"] * 0.2, y, steps=5)
    page.page.mouse.up()
    page.page.keyboard.up("Shift")
    panned = wait_window(narrower["zoom"])
    plo, phi = (float(v) for v in panned["zoom"].split(","))
    assert plo > nlo and phi - plo == pytest.approx(nhi - nlo, rel=1e-6)

    # Double-click: the whole series again.
    page.page.mouse.dblclick(box["x"] + box["width"] / 2, y)
    page.page.wait_for_function(
        """() => document.querySelector('[data-tag="long"]').dataset.zoom === ''"""
    )
    assert card_data(page, "long")["lastStep"] == str(LONG_STEPS - 1)
    page.assert_no_errors()


#: More points than the first fetch's buckets hold segments' worth (256 points each, four
#: segments a bucket, a bucket per two pixel columns): the whole series is answered from the
#: blocks' summaries.
HUGE_STEPS = 600_000
HUGE_SPIKE = 187_654


@pytest.mark.slow
def test_a_one_step_spike_is_drawn_at_every_zoom_of_a_long_series(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    logdir = tmp_path / "huge"
    writer = EventFileWriter(str(logdir / "run"), max_queue_size=10_000, flush_secs=3600)
    for step in range(HUGE_STEPS):
        value = 25.0 if step == HUGE_SPIKE else 1.0 / (1 + step / 10_000)
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="huge", simple_value=value)]
        )
        writer.add_event(event_pb2.Event(step=step, wall_time=WALL + step, summary=summary))
    writer.close()
    daemon = serve(logdir)
    daemon.wait_for_state("live", timeout=120)
    # Outliers shown: the y axis then spans every value drawn, the spike's included.
    page.page.goto(f"http://127.0.0.1:{daemon.port}/?smoothing=0&outliers=show")
    wait_drawn(page, tags=("huge",), last_step=HUGE_STEPS - 1)
    over = page.page.locator('[data-tag="huge"] .u-over')
    box = over.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2

    def spike_drawn() -> None:
        page.page.wait_for_function(
            """() => { const d = document.querySelector('[data-tag="huge"]').dataset;
                return d.yRange !== undefined && Number(d.yRange.split(',')[1]) >= 25; }"""
        )

    spike_drawn()  # the whole series
    previous, fetched = "", ""
    # Ever narrower windows around the spike, by Ctrl + wheel over it, down to a few hundred
    # steps: each is fetched anew, and each draws the spike.
    for _ in range(60):
        lo, hi = (0.0, HUGE_STEPS - 1.0) if not previous else map(float, previous.split(","))
        x = box["x"] + box["width"] * (HUGE_SPIKE - lo) / (hi - lo)
        page.page.mouse.move(x, y)
        page.page.keyboard.down("Control")
        page.page.mouse.wheel(0, -500)
        page.page.keyboard.up("Control")
        page.page.wait_for_function(
            """([prev, fetched]) => { const d = document.querySelector('[data-tag="huge"]').dataset;
                return d.zoom !== '' && d.zoom !== prev && d.zoomFetched !== undefined
                    && d.zoomFetched !== fetched; }""",
            arg=[previous, fetched],
        )
        previous = card_data(page, "huge")["zoom"]
        fetched = card_data(page, "huge")["zoomFetched"]
        lo, hi = map(float, previous.split(","))
        assert lo <= HUGE_SPIKE <= hi, previous
        spike_drawn()
        if hi - lo < 1_000:
            break
    assert hi - lo < 1_000, previous
    page.assert_no_errors()


def test_tooltip_shows_every_runs_value_at_the_step(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    daemon = serve(logdir)
    base = ready(daemon)
    open_dashboard(page, base, "?smoothing=0")
    over = page.page.locator('[data-tag="loss"] .u-over')
    box = over.bounding_box()
    assert box is not None
    page.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tooltip = page.page.locator('[data-tag="loss"] .tooltip')
    tooltip.wait_for(state="visible")
    rows = page.page.evaluate(
        """() => [...document.querySelectorAll('[data-tag="loss"] .tooltip tr')].map(
            (r) => [r.dataset.run, Number(r.dataset.step), Number(r.dataset.value)])"""
    )
    assert sorted(r[0] for r in rows) == sorted(RUNS)
    steps = {r[1] for r in rows}
    assert len(steps) == 1 and abs(min(steps) - (STEPS - 1) / 2) <= 2
    # The head names that step (it used to be the pointer's position: "step 0.9922").
    head = page.page.locator('[data-tag="loss"] .tooltip .tooltip-head').inner_text()
    assert head == f"step {steps.pop()}", head
    answer = daemon.client.get(
        "/api/v1/scalars", params={"plugin": "scalars", "tag": "loss", "format": "columns"}
    ).json()
    for run, step, value in rows:
        cols = answer[run]["loss"]
        assert value == pytest.approx(cols["value"][cols["step"].index(step)])
    # Each run's point is marked on the chart, in its run's colour, under the pointer's x.
    markers = page.page.evaluate(
        """() => [...document.querySelectorAll('[data-tag="loss"] .hover-point:not([hidden])')]
            .map((m) => { const r = m.getBoundingClientRect();
                          return [r.left + r.width / 2, getComputedStyle(m).borderTopColor]; })"""
    )
    swatches = page.page.evaluate(
        """() => [...document.querySelectorAll('[data-tag="loss"] .tooltip .swatch')]
            .map((s) => getComputedStyle(s).backgroundColor)"""
    )
    assert sorted(m[1] for m in markers) == sorted(swatches)
    # At the rows' step (one for all: the runs log the same steps), the nearest to the pointer.
    half_step = box["width"] / (STEPS - 1) / 2
    assert len({round(m[0], 1) for m in markers}) == 1
    assert abs(markers[0][0] - (box["x"] + box["width"] / 2)) <= half_step + 1, (markers, box)
    page.screenshot("tooltip")
    page.page.mouse.move(0, 0)
    tooltip.wait_for(state="hidden")
    assert page.page.locator('[data-tag="loss"] .hover-point:not([hidden])').count() == 0
    page.assert_no_errors()


def test_download_csv_and_json_per_chart(
    serve: ServeFactory, logdir: Path, page: Watched, tmp_path: Path
) -> None:
    daemon = serve(logdir)
    base = ready(daemon)
    open_dashboard(page, base, f"?hide={RUNS[2]}")
    card = page.page.locator('[data-tag="train/acc"]')
    with page.page.expect_download() as got:
        card.locator('a.download[data-format="csv"]').click()
    assert got.value.suggested_filename == "train_acc.csv"
    path = tmp_path / "acc.csv"
    got.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    # Every point of the runs shown (not the one hidden), as the API's CSV gives them.
    assert {r["run"] for r in rows} == set(RUNS[:2]) and {r["tag"] for r in rows} == {"train/acc"}
    assert len(rows) == 2 * STEPS
    with page.page.expect_download() as got:
        card.locator('a.download[data-format="json"]').click()
    assert got.value.suggested_filename == "train_acc.json"
    json_path = tmp_path / "acc.json"
    got.value.save_as(json_path)
    data = json.loads(json_path.read_text())
    expected = daemon.client.get(
        "/api/v1/scalars",
        params={"plugin": "scalars", "tag": "train/acc", "run": list(RUNS[:2])},
    ).json()
    assert data == expected and len(data[RUNS[0]]["train/acc"]) == STEPS
    page.assert_no_errors()


def test_cards_out_of_view_keep_their_attributes_current(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """Cards below the fold are not drawn, yet their data attributes follow their data."""
    root = tmp_path / "many"
    tags = [f"m/{i:02d}" for i in range(40)]
    with SummaryWriter(str(root / "run"), filename_suffix=".0") as w:
        for step in range(10):
            for tag in tags:
                w.add_scalar(tag, float(step), step, walltime=WALL + step)
    daemon = serve(root)
    daemon.wait_for_steps("run", tags[-1], list(range(10)), timeout=30)
    page.page.goto(f"http://127.0.0.1:{daemon.port}/")
    wait_drawn(page, tags=tuple(tags), last_step=9)
    last = f'[data-tag="{tags[-1]}"]'
    assert page.page.evaluate(f"() => document.querySelector('{last} canvas') === null")
    with SummaryWriter(str(root / "run"), filename_suffix=".1") as w:
        for tag in tags:
            w.add_scalar(tag, 10.0, 10, walltime=WALL + 10)
    wait_drawn(page, tags=tuple(tags), last_step=10)
    assert card_data(page, tags[-1])["points"] == "11"
    # Still not drawn; drawn once scrolled to.
    assert page.page.evaluate(f"() => document.querySelector('{last} canvas') === null")
    page.page.locator(last).scroll_into_view_if_needed()
    page.page.locator(f"{last} canvas").first.wait_for()
    page.assert_no_errors()


def test_reconnects_after_a_daemon_restart(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    port = free_port()
    first = serve(logdir, port=port)
    base = ready(first)
    open_dashboard(page, base)
    assert first.stop() == 0
    page.page.locator("#status.down").wait_for()
    later = STEPS + 20
    write(logdir, RUNS[0], range(STEPS, later + 1), seed=5)
    second = serve(logdir, port=port)
    second.wait_for_steps(RUNS[0], TAGS[-1], range(later + 1), timeout=30)
    wait_drawn(page, last_step=later)
    page.page.locator("#status.live").wait_for()
    page.page.wait_for_function(
        """(n) => document.querySelector('[data-tag="loss"]').dataset.points === String(n)""",
        arg=len(RUNS) * STEPS + (later + 1 - STEPS),
    )
    page.screenshot("after-restart")
    # While the daemon was down the browser reported refused connections; nothing else.
    others = [e for e in page.errors if "ERR_CONNECTION_REFUSED" not in e and "HTTP 503" not in e]
    assert not others, others


def test_both_uis_under_a_path_prefix(serve: ServeFactory, logdir: Path, page: Watched) -> None:
    """``boardd serve --path-prefix /proxy/boardd`` (a reverse proxy forwarding /proxy/boardd/...
    unchanged): the printed URL, the dashboard (its first answers, its live stream) and
    TensorBoard's UI all work under the prefix."""
    prefix = "/proxy/boardd"
    daemon = serve(logdir, "--path-prefix", prefix)
    host = f"http://127.0.0.1:{daemon.port}"
    assert daemon.client is not None
    daemon.client = httpx.Client(base_url=host + prefix, timeout=10.0, trust_env=False)
    base = ready(daemon) + prefix
    assert f"listening on {base}/" in daemon.stderr()

    open_dashboard(page, base)
    assert set(cards(page)) == set(TAGS)
    # Live under the prefix too: the stream's URL is relative to the page.
    write(logdir, RUNS[0], range(STEPS, STEPS + 5), seed=4)
    wait_drawn(page, tags=("loss",), last_step=STEPS + 4)
    outside = [r.url for r in page.responses if not r.url.startswith(base)]
    assert outside == [], outside
    page.screenshot("dashboard-under-prefix")
    page.assert_no_errors()

    page.responses.clear()
    page.page.goto(f"{base}/tensorboard/")
    page.page.locator("tb-data-table-content-row", has_text=RUNS[0]).first.wait_for()
    page.page.wait_for_load_state("networkidle")
    # TensorBoard's stylesheets ask for their fonts at /font-roboto/ whatever the prefix (as
    # under tensorboard --path_prefix): boardd serves them there too, for when they reach it.
    fonts = f"{host}/font-roboto/"
    statuses = {
        r.url.removeprefix(base): r.status for r in page.responses if not r.url.startswith(fonts)
    }
    assert statuses.get("/tensorboard/data/plugins_listing") == 200, statuses
    assert all(s < 400 for s in statuses.values()), statuses
    assert all(url.startswith("/") for url in statuses), statuses  # all under the prefix
    page.screenshot("tensorboard-under-prefix")
    page.assert_no_errors()


def test_points_that_are_not_numbers_are_marked(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """A run that went NaN must be seen: its non-finite points, a gap in the line, are marked
    on the chart (they used to show in the tooltip only, when hovered at that very step)."""
    logdir = tmp_path / "logs"
    special = {3: float("nan"), 5: float("inf"), 7: float("-inf")}
    with SummaryWriter(str(logdir / "run")) as w:
        for step in range(10):
            w.add_scalar("loss", special.get(step, 1.0 + step), step, walltime=WALL + step)
    daemon = serve(logdir)
    daemon.wait_for_steps("run", "loss", list(range(10)), timeout=30)
    page.page.goto(f"http://127.0.0.1:{daemon.port}/?smoothing=0")
    card = page.page.locator('[data-tag="loss"][data-last-step="9"]')
    card.wait_for()
    assert card.get_attribute("data-non-finite") == "3"
    # Drawn, one mark each (the canvas is pixels: the card says what its last drawing marked).
    assert card.get_attribute("data-non-finite-drawn") == "3"
    page.screenshot("non-finite")
    page.assert_no_errors()


def test_a_series_of_points_that_are_not_numbers_only_is_marked(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """A run that is NaN or ±inf from its first point: the chart has no y range from values,
    but it is drawn (axes on 0..1) with each point marked (it was an empty card without axes)."""
    logdir = tmp_path / "logs"
    values = [float("nan"), float("inf"), float("-inf"), float("nan")]
    with SummaryWriter(str(logdir / "run")) as w:
        for step, value in enumerate(values):
            w.add_scalar("loss", value, step, walltime=WALL + step)
    daemon = serve(logdir)
    daemon.wait_for_steps("run", "loss", list(range(len(values))), timeout=30)
    page.page.goto(f"http://127.0.0.1:{daemon.port}/?smoothing=0")
    card = page.page.locator('[data-tag="loss"][data-last-step="3"]')
    card.wait_for()
    assert card.get_attribute("data-non-finite") == "4"
    assert card.get_attribute("data-non-finite-drawn") == "4"
    page.screenshot("non-finite-only")
    # The marks are drawn in the run's colour (at the plot's edges and its top).
    rgb = first_run_rgb(page)
    assert page.page.evaluate(COLOURED_PIXELS_JS, ["loss", rgb]) > 20
    page.assert_no_errors()


def test_runs_all_and_none_toggle_the_runs_listed(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    base = ready(serve(logdir))
    open_dashboard(page, base, "?smoothing=0")

    def drawn_runs() -> set[str]:
        return set(json.loads(cards(page)["loss"]["runs"]))

    def wait_runs(runs: set[str]) -> None:
        page.page.wait_for_function(
            """(runs) => { const d = document.querySelector('[data-tag="loss"]').dataset;
                return JSON.stringify(JSON.parse(d.runs).sort()) === JSON.stringify(runs); }""",
            arg=sorted(runs),
        )

    page.page.click("#runs-none")
    wait_runs(set())
    assert drawn_runs() == set()
    boxes = page.page.locator("#run-list input")
    assert not any(boxes.evaluate_all("bs => bs.map(b => b.checked)"))
    # "all" shows the runs the filter lists, and only those.
    page.page.fill("#run-filter", "^lr_")
    page.page.click("#runs-all")
    wait_runs({"lr_0.1", "lr_0.01"})
    page.page.fill("#run-filter", "")
    wait_runs({"lr_0.1", "lr_0.01"})
    assert "hide=eval" in page.page.url
    page.page.click("#runs-all")
    wait_runs(set(RUNS))
    assert "hide=" not in page.page.url
    page.screenshot("all-runs")
    page.assert_no_errors()


def test_an_empty_page_says_why(serve: ServeFactory, tmp_path: Path, page: Watched) -> None:
    """No scalars yet: the page says so (it was blank), then the first tag written replaces
    the message; a tag filter that matches nothing says so too."""
    logdir = tmp_path / "logs"
    (logdir / "run").mkdir(parents=True)
    daemon = serve(logdir)
    page.page.goto(f"http://127.0.0.1:{daemon.port}/")
    message = page.page.locator("#cards .notice")
    message.wait_for()
    assert "No scalars in this experiment yet" in message.inner_text()
    page.screenshot("no-scalars")

    with SummaryWriter(str(logdir / "run")) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step, walltime=WALL + step)
    page.page.locator('[data-tag="loss"][data-last-step="2"]').wait_for()
    assert page.page.locator("#cards .notice").count() == 0

    page.page.fill("#tag-filter", "^nothing$")
    message.wait_for()
    assert message.inner_text() == 'No tag matches the filter "^nothing$".'
    page.page.fill("#tag-filter", "")
    page.page.locator('[data-tag="loss"]').wait_for()
    assert page.page.locator("#cards .notice").count() == 0
    page.assert_no_errors()


def first_run_rgb(page: Watched) -> list[int]:
    """The colour of the first run in the run list, as [r, g, b]."""
    rgb: list[int] = page.page.evaluate(
        """() => getComputedStyle(document.querySelector('#run-list .swatch')).backgroundColor
            .match(/\\d+/g).slice(0, 3).map(Number)"""
    )
    return rgb


#: Counts the pixels of a card's chart canvas within 60 (RGB distance) of the colour ``rgb``.
COLOURED_PIXELS_JS = """([tag, rgb]) => {
    const canvas = document.querySelector(`[data-tag="${CSS.escape(tag)}"] canvas`);
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
        const d = Math.hypot(data[i] - rgb[0], data[i + 1] - rgb[1], data[i + 2] - rgb[2]);
        if (data[i + 3] > 200 && d < 60) n++;
    }
    return n;
}"""


def test_a_zoom_between_two_points_draws_the_line_through_it(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """A sparse series (an eval every 1,000 steps) zoomed into the stretch between two points:
    no point is in the window, but the line through it is drawn (the y range used to come from
    the points in the window alone, so the chart was empty)."""
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "run")) as w:
        for step, value in ((0, 1.0), (1000, 3.0), (2000, 2.0)):
            w.add_scalar("eval", value, step, walltime=WALL + step)
    daemon = serve(logdir)
    daemon.wait_for_steps("run", "eval", [0, 1000, 2000], timeout=30)
    page.page.goto(f"http://127.0.0.1:{daemon.port}/?smoothing=0")
    page.page.locator('[data-tag="eval"][data-last-step="2000"]').wait_for()
    rgb = first_run_rgb(page)
    assert page.page.evaluate(COLOURED_PIXELS_JS, ["eval", rgb]) > 100

    over = page.page.locator('[data-tag="eval"] .u-over')
    box = over.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    # Drag across 10 % of the chart inside the first stretch (steps ~400 to ~600).
    page.page.mouse.move(box["x"] + box["width"] * 0.2, y)
    page.page.mouse.down()
    page.page.mouse.move(box["x"] + box["width"] * 0.3, y, steps=5)
    page.page.mouse.up()
    page.page.wait_for_function(
        """() => { const d = document.querySelector('[data-tag="eval"]').dataset;
            return d.zoom !== '' && d.zoomFetched !== undefined; }"""
    )
    lo, hi = (float(v) for v in card_data(page, "eval")["zoom"].split(","))
    assert 0 < lo < hi < 1000
    # The segment from (0, 1) to (1000, 3) crosses the window: a line across the chart.
    page.page.wait_for_function(
        "([tag, rgb]) => (" + COLOURED_PIXELS_JS + ")([tag, rgb]) > 100", arg=["eval", rgb]
    )
    page.screenshot("zoom-between-points")
    page.assert_no_errors()


#: The mean x of a card's canvas pixels within 60 of ``rgb``, as a share of the canvas' width.
COLOURED_MEAN_X_JS = """([tag, rgb]) => {
    const canvas = document.querySelector(`[data-tag="${CSS.escape(tag)}"] canvas`);
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0, sum = 0;
    for (let i = 0; i < data.length; i += 4) {
        const d = Math.hypot(data[i] - rgb[0], data[i + 1] - rgb[1], data[i + 2] - rgb[2]);
        if (data[i + 3] > 200 && d < 60) { n++; sum += (i / 4) % canvas.width; }
    }
    return n ? sum / n / canvas.width : null;
}"""


def test_a_series_of_one_step_is_drawn_in_the_middle(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """A final metric logged once (PyTorch's add_hparams writes its metrics at step 0): its
    dot is drawn in the middle of the chart, not on the y axis at the left edge (uPlot's range
    of one value was 0..100)."""
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "run")) as w:
        w.add_scalar("hparam/final", 0.5, 0, walltime=WALL)
    daemon = serve(logdir)
    daemon.wait_for_steps("run", "hparam/final", [0], timeout=30)
    page.page.goto(f"http://127.0.0.1:{daemon.port}/?smoothing=0")
    page.page.locator('[data-tag="hparam/final"][data-last-step="0"]').wait_for()
    rgb = first_run_rgb(page)
    page.page.wait_for_function(
        "([tag, rgb]) => (" + COLOURED_MEAN_X_JS + ")([tag, rgb]) !== null",
        arg=["hparam/final", rgb],
    )
    middle = page.page.evaluate(COLOURED_MEAN_X_JS, ["hparam/final", rgb])
    assert 0.4 < middle < 0.7, middle
    page.screenshot("one-step")
    page.assert_no_errors()


def test_tooltip_of_many_runs_lists_those_nearest_the_pointer(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """15 runs: the tooltip lists the 12 whose value is nearest the pointer, highest first,
    and says how many it leaves out (it listed all of them, past the bottom of the window)."""
    logdir = tmp_path / "logs"
    runs = [f"run{i:02d}" for i in range(15)]
    for i, run in enumerate(runs):
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(5):
                w.add_scalar("loss", float(i), step, walltime=WALL + step)
    daemon = serve(logdir)
    for run in runs:
        daemon.wait_for_steps(run, "loss", list(range(5)), timeout=30)
    page.page.goto(f"http://127.0.0.1:{daemon.port}/?smoothing=0")
    page.page.locator('[data-tag="loss"][data-last-step="4"]').wait_for()
    page.page.wait_for_function(
        """() => JSON.parse(document.querySelector('[data-tag="loss"]').dataset.runs || "[]")
            .length === 15"""
    )
    over = page.page.locator('[data-tag="loss"] .u-over')
    box = over.bounding_box()
    assert box is not None
    # The pointer at the top of the plot: the highest values are the nearest.
    page.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 2)
    tooltip = page.page.locator('[data-tag="loss"] .tooltip')
    tooltip.wait_for(state="visible")
    values = page.page.evaluate(
        """() => [...document.querySelectorAll('[data-tag="loss"] .tooltip tr')]
            .map((r) => Number(r.dataset.value))"""
    )
    assert values == [float(v) for v in range(14, 2, -1)], values
    assert tooltip.locator(".tooltip-more").inner_text().startswith("+3 more runs")
    page.screenshot("tooltip-many")
    page.assert_no_errors()


def test_the_run_list_stays_in_view_while_the_charts_scroll(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """Many tags, many runs: scrolled down the charts, the run list is still under the bar (it
    scrolled away with the page), and a list longer than the window scrolls on its own."""
    logdir = tmp_path / "logs"
    runs = [f"sweep/lr0.{i:04d}_bs64_adam_{i:02d}" for i in range(40)]
    for run in runs:
        with SummaryWriter(str(logdir / run)) as w:
            for tag in range(12):
                w.add_scalar(f"metric/{tag:02d}", 1.0, 0, walltime=WALL)
    daemon = serve(logdir)
    daemon.wait_for_steps(runs[-1], "metric/11", [0], timeout=60)
    page.page.set_viewport_size({"width": 1400, "height": 700})
    page.page.goto(f"http://127.0.0.1:{daemon.port}/")
    page.page.locator('[data-tag="metric/00"]').wait_for()
    page.page.mouse.wheel(0, 2000)
    page.page.wait_for_function("() => window.scrollY > 1000")
    box = page.page.locator("aside").bounding_box()
    assert box is not None
    assert 0 <= box["y"] < 120, box
    assert box["y"] + box["height"] <= 700 + 1, box
    scroll = page.page.evaluate(
        "() => [document.querySelector('aside').scrollHeight,"
        " document.querySelector('aside').clientHeight]"
    )
    assert scroll[0] > scroll[1], scroll  # 40 runs: the list scrolls within
    page.screenshot("run-list-sticky")
    page.assert_no_errors()
