"""boardd's dashboard views other than scalars (web/src/views/) in a real browser (Debian's
chromium) on ``boardd serve``: images, histograms, distributions, text, hparams and status,
the tab bar and the experiment selector, read through the data attributes each view keeps
(documented at the top of each view's module and in README's Dashboard section).

The logdirs are real: tensorboardX's ``SummaryWriter`` (images, histograms, text, scalars), an
event file with a zeroed hole (data loss), and TensorBoard's official hparams API
(tests/hparams_logdirs.py). Screenshots of each view: see the ``artifacts`` fixture
(``$BOARDD_TEST_ARTIFACTS/<test>/``, else the test's tmp_path)."""

from __future__ import annotations

import io
import itertools
import json
import re
import time
import wave
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2
from tensorboard.plugins.audio import metadata as audio_metadata
from tensorboard.plugins.histogram import metadata as histogram_metadata
from tensorboard.plugins.hparams import summary_v2 as hp
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter

from tests.browser.conftest import Watched
from tests.daemon.conftest import Daemon, ServeFactory
from tests.hparams_logdirs import FAILURE, OFFICIAL_GROUPS, HparamsLogdir, curve, write_official
from tests.hparams_logdirs import write_run as write_trial

pytestmark = pytest.mark.slow

RUNS = ("train", "eval")
STEPS = range(0, 50, 5)
WALL = 1_700_000_000.0
TOKEN = "views-test-token-0123456789abcdef"


def image(run: int, step: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A 3×32×48 image that differs per run and step."""
    img = np.zeros((3, 32, 48), dtype=np.float32)
    img[run % 3, :, : 1 + step % 48] = 1.0
    img[2, step % 32, :] = 0.5
    return img


def write_run(logdir: Path, index: int, steps: range, suffix: str = "") -> None:
    """One run's images, histograms, text, then its scalar ``loss`` (last at each step: once
    the store has a step's loss it has the rest of that step)."""
    run = RUNS[index]
    rng = np.random.default_rng(index + 10 * steps.start)
    with SummaryWriter(str(logdir / run), filename_suffix=suffix) as w:
        for step in steps:
            wall = WALL + step
            w.add_image("samples/input", image(index, step), step, walltime=wall)
            w.add_histogram(
                "weights/layer1", rng.normal(step / 25, 1 + index, 1000), step, walltime=wall
            )
            w.add_text(
                "notes",
                f"step {step}: **{run}** loss `{1 / (step + 1):.3f}`\n\n"
                "- a list item\n- <script>alert(1)</script>",
                step,
                walltime=wall,
            )
            w.add_scalar("loss", 1.0 / (step + 1), step, walltime=wall)


def write_broken(logdir: Path) -> Path:
    """A run whose event file has a zeroed hole of 150 bytes: one data-loss record."""
    with SummaryWriter(str(logdir / "broken")) as w:
        for step in range(40):
            w.add_scalar("loss", 1.0 / (step + 1), step, walltime=WALL + step)
    (path,) = (logdir / "broken").glob("*tfevents*")
    data = bytearray(path.read_bytes())
    data[400:550] = bytes(150)
    path.write_bytes(bytes(data))
    return path


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    for i in range(len(RUNS)):
        write_run(root, i, STEPS)
    return root


def ready(daemon: Daemon) -> str:
    for run in RUNS:
        daemon.wait_for_steps(run, "loss", list(STEPS), timeout=30)
    return f"http://127.0.0.1:{daemon.port}"


def open_view(page: Watched, base: str, view: str, query: str = "") -> None:
    page.page.goto(f"{base}/?view={view}{query}")
    page.page.locator(f'main#view[data-view="{view}"]').wait_for()
    page.page.locator(f'nav#views a[data-view="{view}"][aria-current="page"]').wait_for()


def datasets(page: Watched, selector: str) -> list[dict[str, str]]:
    """The data attributes of every element matching ``selector``, in document order."""
    found: list[dict[str, str]] = page.page.evaluate(
        "(s) => [...document.querySelectorAll(s)].map((e) => ({...e.dataset}))", selector
    )
    return found


def wait_cards(page: Watched, selector: str, last_step: int) -> list[dict[str, str]]:
    """Waits until a card per run matches ``selector``, each drawn up to ``last_step``."""
    page.page.wait_for_function(
        """([s, n, step]) => {
            const cards = [...document.querySelectorAll(s)];
            return cards.length === n && cards.every((c) => c.dataset.lastStep === String(step));
        }""",
        arg=[selector, len(RUNS), last_step],
    )
    return datasets(page, selector)


def test_every_view_shows_the_logdir_without_errors(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    write_broken(logdir)
    base = ready(serve(logdir))
    last = STEPS[-1]

    open_view(page, base, "images")
    cards = wait_cards(page, '.media-card[data-tag="samples/input"]', last)
    assert sorted(c["run"] for c in cards) == sorted(RUNS)
    assert all(c["step"] == str(last) and c["steps"] == str(len(STEPS)) for c in cards)
    # The images are loaded (a broken blob URL would be an HTTP error, and no natural size).
    page.page.wait_for_function(
        """() => [...document.querySelectorAll('.media-card img')].every(
            (i) => i.complete && i.naturalWidth === 48 && i.naturalHeight === 32)"""
    )
    # The step slider shows an earlier step's image.
    slider = page.page.locator('.media-card[data-run="eval"] input[type="range"]')
    slider.fill("2")
    page.page.locator(f'.media-card[data-run="eval"][data-step="{STEPS[2]}"]').wait_for()
    page.screenshot("images")

    open_view(page, base, "histograms")
    cards = wait_cards(page, '.hist-card[data-tag="weights/layer1"]', last)
    assert all(c["steps"] == str(len(STEPS)) for c in cards)
    # Hovering near the bottom of a card reads the front (newest) ridge.
    canvas = page.page.locator('.hist-card[data-run="eval"] canvas')
    box = canvas.bounding_box()
    assert box is not None
    page.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] - 30)
    readout = page.page.locator('.hist-card[data-run="eval"] .readout')
    assert re.fullmatch(rf"step {last} · \S+ · count \S+", readout.inner_text())
    page.screenshot("histograms")

    open_view(page, base, "distributions")
    cards = wait_cards(page, '.dist-card[data-tag="weights/layer1"]', last)
    assert all(c["steps"] == str(len(STEPS)) for c in cards)
    # The median of the last step: eval's values are drawn around 45/25 = 1.8, spread 2.
    medians = {c["run"]: json.loads(c["median"]) for c in cards}
    assert abs(medians["eval"] - 1.8) < 0.5, medians
    plot = page.page.locator('.dist-card[data-run="eval"] .u-over')
    box = plot.bounding_box()
    assert box is not None
    page.page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
    readout = page.page.locator('.dist-card[data-run="eval"] .readout')
    readout.filter(has_text=f"step {last} · median").wait_for()
    page.screenshot("distributions")

    open_view(page, base, "text")
    cards = wait_cards(page, '.text-card[data-tag="notes/text_summary"]', last)
    # TensorBoard's text route answers 100 steps of a series: all of them here.
    assert all(c["steps"] == str(len(STEPS)) for c in cards)
    newest = page.page.locator(f'.text-card[data-run="train"] article[data-step="{last}"]')
    # Rendered Markdown (bold, code, a list), and the script tag escaped, not run or dropped.
    assert newest.locator("strong").inner_text() == "train"
    assert newest.locator("code").inner_text() == f"{1 / (last + 1):.3f}"
    assert newest.locator("li").all_inner_texts() == ["a list item", "<script>alert(1)</script>"]
    assert page.page.locator(".text-card script").count() == 0
    page.screenshot("text")

    open_view(page, base, "hparams")
    page.page.get_by_text("No hparams in this experiment").wait_for()
    page.screenshot("hparams-empty")

    open_view(page, base, "status")
    block = page.page.locator('.experiment[data-experiment="logs"][data-state="live"]')
    block.wait_for()
    assert block.get_attribute("data-progress") == "1"
    page.page.locator('.loss-table[data-records="1"]').wait_for()
    (record,) = datasets(page, ".loss-table tbody tr")
    assert record["run"] == "broken"
    assert record["file"].startswith("broken/events.out.tfevents.")
    assert int(record["offset"]) <= 400 < int(record["offset"]) + int(record["length"])
    assert "CRC" in record["reason"], record
    page.screenshot("status")

    # The scalars view is the default tab; the tabs of views without data are marked.
    page.page.goto(f"{base}/")
    page.page.locator('main#view[data-view="scalars"] [data-tag="loss"]').wait_for()
    page.page.locator('nav#views a[data-view="hparams"][data-empty]').wait_for()
    assert page.page.locator('nav#views a[data-view="images"][data-empty]').count() == 0
    assert page.page.locator(".experiment-label").is_hidden()  # a single experiment
    page.screenshot("scalars")
    page.assert_no_errors()
    # Data of a view that had none comes later, while the scalars view (its own stream) is
    # shown: its tab is no longer marked (it used to stay greyed until a reload).
    with SummaryWriter(str(logdir / RUNS[0])) as w:
        w.add_hparams({"lr": 0.1}, {"hparam/score": 1.0}, name="trial")
    page.page.locator('nav#views a[data-view="hparams"]:not([data-empty])').wait_for(timeout=30_000)


def test_tabs_switch_views_and_the_url_keeps_the_view(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    base = ready(serve(logdir))
    page.page.goto(f"{base}/?smoothing=0.3")
    page.page.locator('[data-tag="loss"][data-points]').wait_for()
    page.page.locator('nav#views a[data-view="histograms"]').click()
    page.page.locator(".hist-card").first.wait_for()
    # The view is in the URL, next to the scalars view's keys; the scalars cards are gone.
    assert "view=histograms" in page.page.url and "smoothing=0.3" in page.page.url
    assert page.page.locator(".card[data-points]").count() == 0
    page.page.go_back()
    page.page.locator('main#view[data-view="scalars"] [data-tag="loss"]').wait_for()
    page.page.reload()
    page.page.locator('main#view[data-view="scalars"]').wait_for()
    assert page.page.locator("#smoothing-value").input_value() == "0.3"
    page.assert_no_errors()


def test_a_new_image_step_appears_while_open(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    base = ready(serve(logdir))
    open_view(page, base, "images")
    last = STEPS[-1]
    wait_cards(page, ".media-card", last)
    # eval's card moved back to an earlier step stays there; train's follows the new step.
    page.page.locator('.media-card[data-run="eval"] input[type="range"]').fill("0")
    page.page.locator('.media-card[data-run="eval"][data-step="0"]').wait_for()

    new = last + 5
    write_run(logdir, 0, range(new, new + 1), suffix=".more")
    card = page.page.locator(f'.media-card[data-run="train"][data-step="{new}"]')
    card.wait_for(timeout=10_000)
    assert card.get_attribute("data-steps") == str(len(STEPS) + 1)
    # The image shown is the new step's blob.
    img = card.locator("img")
    key = img.get_attribute("data-key")
    assert key and img.get_attribute("src") == f"api/v1/blob/{key}"
    assert page.page.locator('.media-card[data-run="eval"]').get_attribute("data-step") == "0"
    # The histograms of that step reach their view too (opened after: it fetches them).
    open_view(page, base, "histograms")
    page.page.locator(f'.hist-card[data-run="train"][data-last-step="{new}"]').wait_for()
    page.screenshot("live-image")
    page.assert_no_errors()


#: Odd image shapes (height, width): a digit, a thin strip, a tall one and a wide one.
SHAPES = {"digit": (28, 28), "strip": (100, 6), "tall": (2000, 20), "wide": (20, 3000)}


def test_images_of_any_shape_fit_their_card_and_keep_their_shape(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    logdir = tmp_path / "shapes"
    rng = np.random.default_rng(0)
    with SummaryWriter(str(logdir / "train")) as w:
        for tag, (height, width) in SHAPES.items():
            w.add_image(tag, rng.random((3, height, width)), 0, walltime=WALL)
        w.add_scalar("loss", 1.0, 0, walltime=WALL)
    daemon = serve(logdir)
    daemon.wait_for_steps("train", "loss", [0], timeout=30)
    open_view(page, f"http://127.0.0.1:{daemon.port}", "images")
    for tag in SHAPES:
        page.page.locator(f'.media-card[data-tag="{tag}"] img').wait_for()
    page.page.wait_for_function(
        "() => [...document.querySelectorAll('.media-card img')].every("
        "(i) => i.complete && i.naturalWidth > 0)"
    )
    shown: dict[str, list[float]] = page.page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('.media-card')].map((c) => {
            const i = c.querySelector('img'), box = i.getBoundingClientRect();
            return [c.dataset.tag, [box.width, box.height, i.naturalWidth, i.naturalHeight,
                                    c.getBoundingClientRect().width]];
        }))"""
    )
    for tag, (width, height, natural_w, natural_h, card_w) in shown.items():
        assert (natural_h, natural_w) == SHAPES[tag], tag
        assert width <= card_w and height <= 482, (tag, shown[tag])  # 480 px and the border
        # The image's shape kept, to a pixel (the 1 px border on each side aside).
        inner_w, inner_h = width - 2, height - 2
        assert abs(inner_w * natural_h - inner_h * natural_w) <= max(natural_w, natural_h), tag
    # A digit is scaled up by a whole factor (28 px to 280), not left a speck.
    assert abs(shown["digit"][0] - 282) <= 2, shown["digit"]
    # The tall one is 480 px high, not 2000; the strip is scaled by its height (100 px: 2×),
    # not by its width (6 px: 48×, 4,800 px high). Borders: 2 px.
    assert abs(shown["tall"][1] - 480) <= 2, shown["tall"]
    assert abs(shown["strip"][0] - 14) <= 2 and abs(shown["strip"][1] - 202) <= 2, shown["strip"]
    page.screenshot("shapes")
    page.assert_no_errors()


def hparams_rows(page: Watched) -> list[dict[str, str]]:
    return datasets(page, ".hp-table tbody tr")


def cell_values(page: Watched, key: str) -> list[Any]:
    values: list[str] = page.page.evaluate(
        """(k) => [...document.querySelectorAll(`.hp-table tbody td[data-key="${k}"]`)]
            .map((td) => td.dataset.value)""",
        key,
    )
    return [json.loads(v) for v in values]


def serve_official(serve: ServeFactory, tmp_path: Path) -> tuple[HparamsLogdir, str]:
    """TensorBoard's official hparams logdir (tests/hparams_logdirs.py) served, once its last
    session is in the store: the logdir and the daemon's base URL."""
    made = write_official(tmp_path)
    daemon = serve(made.path)
    last = sorted(s for s in made.statuses if s.startswith("epsilon/"))[-1]
    steps = [step for step, _ in curve(1.0, every=20)]
    daemon.wait_for_steps(f"{last}/validation", "accuracy", steps, timeout=30)
    return made, f"http://127.0.0.1:{daemon.port}"


def test_hparams_table_sorts_and_filters(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    made, base = serve_official(serve, tmp_path)

    open_view(page, base, "hparams")
    table = page.page.locator(f'.hp-table[data-rows="{len(made.statuses)}"]')
    table.wait_for()
    rows = hparams_rows(page)
    assert {r["session"] for r in rows} == set(made.statuses)
    assert {r["group"] for r in rows} == set(OFFICIAL_GROUPS)
    assert {r["session"]: r["status"] for r in rows}["beta/trial_1"] == "failure"
    # The trial (TensorBoard's session group, hp.hparams(trial_id=...)) is a column of its own,
    # first; sorting by it puts a trial's sessions together.
    assert page.page.locator(".hp-table thead th").nth(1).get_attribute("data-key") == "trial"
    trials = dict(zip(cell_values(page, "session"), cell_values(page, "trial"), strict=True))
    assert trials == {r["session"]: r["group"] for r in rows}
    page.page.locator('.hp-table thead th[data-key="trial"]').click()
    page.page.locator('.hp-table[data-sort="trial asc"]').wait_for()
    shown = cell_values(page, "trial")
    assert shown == sorted(shown), shown
    several = next(g for g, (_, n) in OFFICIAL_GROUPS.items() if n > 1)
    cell = page.page.locator(
        f".hp-table tbody td[data-key=\"trial\"][data-value='{json.dumps(several)}']"
    )
    assert (
        cell.first.get_attribute("title")
        == f"trial {several}: {OFFICIAL_GROUPS[several][1]} sessions"
    )
    page.page.locator('.hp-table thead th[data-key="session"]').click()
    page.page.locator('.hp-table[data-sort="session asc"]').wait_for()
    # A line of the parallel coordinates per session, in the row's colour.
    lines = page.page.locator(".pc .lines path")
    assert lines.count() == len(made.statuses)
    page.screenshot("hparams")

    # Sorting: by learning rate ascending, then descending (header clicks).
    header = page.page.locator('.hp-table thead th[data-key="learning_rate"]')
    header.click()
    page.page.locator('.hp-table[data-sort="learning_rate asc"]').wait_for()
    ascending = cell_values(page, "learning_rate")
    present = [v for v in ascending if v is not None]
    assert present == sorted(present) and len(set(present)) > 1
    assert ascending[: len(present)] == present  # missing values last
    header.click()
    page.page.locator('.hp-table[data-sort="learning_rate desc"]').wait_for()
    descending = [v for v in cell_values(page, "learning_rate") if v is not None]
    assert descending == sorted(present, reverse=True)
    assert "hp_sort=learning_rate%3Adesc" in page.page.url

    # A metric column sorts too (the display name in the header, the group/tag as key).
    page.page.locator('.hp-table thead th[data-key="validation/accuracy"]').click()
    accuracy = [v for v in cell_values(page, "validation/accuracy") if v is not None]
    assert accuracy == sorted(accuracy) and len(accuracy) > 1
    # From the keyboard: the focused header sorts on Enter, then on Space the other way, and
    # keeps the focus.
    assert page.page.evaluate("() => document.activeElement.dataset.key") == "validation/accuracy"
    page.page.keyboard.press("Shift+Tab")
    focused = page.page.evaluate("() => document.activeElement.dataset.key")
    assert focused not in (None, "validation/accuracy"), focused
    page.page.keyboard.press("Enter")
    page.page.locator(f'.hp-table[data-sort="{focused} asc"]').wait_for()
    page.page.keyboard.press(" ")
    page.page.locator(f'.hp-table[data-sort="{focused} desc"]').wait_for()
    assert page.page.evaluate("() => document.activeElement.dataset.key") == focused

    # Filtering: a regex on the optimizer, then a range on the learning rate.
    page.page.locator('.hp-table input[data-filter="optimizer"]').fill("^adam$")
    page.page.wait_for_function(
        """() => [...document.querySelectorAll('.hp-table tbody td[data-key="optimizer"]')]
            .every((td) => td.dataset.value === '"adam"')"""
    )
    adam = hparams_rows(page)
    assert 0 < len(adam) < len(made.statuses)
    assert lines.count() == len(adam)
    page.page.locator('.hp-table input[data-filter="learning_rate"]').fill("..0.01")
    page.page.wait_for_function(
        """() => [...document.querySelectorAll('.hp-table tbody td[data-key="learning_rate"]')]
            .every((td) => JSON.parse(td.dataset.value) <= 0.01)"""
    )
    narrowed = cell_values(page, "learning_rate")
    assert narrowed and all(v <= 0.01 for v in narrowed) and len(narrowed) < len(adam)
    page.screenshot("hparams-filtered")

    # Sort and filters are in the URL: a reload shows the same rows.
    shown = [r["session"] for r in hparams_rows(page)]
    page.page.reload()
    page.page.locator(f'.hp-table[data-rows="{len(shown)}"]').wait_for()
    assert [r["session"] for r in hparams_rows(page)] == shown

    # A session started while the table is open appears (the filters let it through).
    write_trial(
        made.path,
        "zeta/trial_0",
        [hp.hparams_pb({"optimizer": "adam", "learning_rate": 0.005}, trial_id="zeta")],
        {"score": curve(7.0)},
        start=time.time(),  # receiving data now, and without end info: running
    )
    row = page.page.locator('.hp-table tbody tr[data-session="zeta/trial_0"]')
    row.wait_for(timeout=10_000)
    assert row.get_attribute("data-status") == "running"
    page.page.locator(f'.hp-table[data-rows="{len(shown) + 1}"]').wait_for()
    page.assert_no_errors()


def test_hparams_rows_per_trial_show_the_mean_of_their_sessions(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """Repeated trials (hp.hparams(trial_id=)): the table offers a row per trial, as
    TensorBoard's has it, each metric the mean of its sessions' values as the session rows
    show them; the choice is in the URL."""
    made, base = serve_official(serve, tmp_path)

    open_view(page, base, "hparams")
    page.page.locator(f'.hp-table[data-rows="{len(made.statuses)}"]').wait_for()
    metrics = ["score", "train/loss", "validation/loss", "validation/accuracy"]
    by_session = {
        r["session"]: r["group"]
        for r in hparams_rows(page)  # the session rows' own values, per trial
    }
    values = {
        m: dict(zip(cell_values(page, "session"), cell_values(page, m), strict=True))
        for m in metrics
    }
    choice = page.page.locator("select[data-rows-of]")
    assert choice.is_visible()
    choice.select_option("trials")
    table = page.page.locator(
        f'.hp-table[data-rows-of="trials"][data-rows="{len(OFFICIAL_GROUPS)}"]'
    )
    table.wait_for()
    assert "hp_rows=trials" in page.page.url
    assert page.page.locator(".hp-count").inner_text().endswith(f"of {len(OFFICIAL_GROUPS)} trials")
    trials = cell_values(page, "session")
    assert sorted(trials) == sorted(OFFICIAL_GROUPS)
    counts = dict(zip(trials, cell_values(page, "sessions"), strict=True))
    assert counts == {g: n for g, (_, n) in OFFICIAL_GROUPS.items()}
    checked = 0
    for m in metrics:
        shown = dict(zip(trials, cell_values(page, m), strict=True))
        for trial in trials:
            own = [v for s, v in values[m].items() if by_session[s] == trial and v is not None]
            if not own:
                assert shown[trial] is None, (m, trial, shown[trial])
                continue
            assert shown[trial] == pytest.approx(sum(own) / len(own)), (m, trial, own)
            checked += len(own) > 1
    assert checked > 0  # some trial's mean is of several sessions
    # A trial whose sessions ended differently lists their statuses.
    failed = next(
        g
        for g, (_, n) in OFFICIAL_GROUPS.items()
        if any(s.startswith(f"{g}/") and st == FAILURE for s, st in made.statuses.items()) and n > 1
    )
    row = page.page.locator(f'.hp-table tbody tr[data-session="{failed}"]')
    assert row.get_attribute("data-status") == "mixed"
    assert "failure" in row.locator('td[data-key="status"]').inner_text()
    # A line per trial in the parallel coordinates; the choice survives a reload.
    assert page.page.locator(".pc .lines path").count() == len(OFFICIAL_GROUPS)
    page.screenshot("hparams-trials")
    page.page.reload()
    table.wait_for()
    choice.select_option("sessions")
    page.page.locator(
        f'.hp-table[data-rows-of="sessions"][data-rows="{len(made.statuses)}"]'
    ).wait_for()
    assert "hp_rows" not in page.page.url
    # A filter of the trial column (the session rows' own) is dropped with the column when the
    # rows become trials: it would hide every trial, with no box left to clear it.
    page.page.locator('.hp-table input[data-filter="trial"]').fill("^alpha$")
    page.page.locator('.hp-table[data-rows="3"]').wait_for()
    choice.select_option("trials")
    page.page.locator(
        f'.hp-table[data-rows-of="trials"][data-rows="{len(OFFICIAL_GROUPS)}"]'
    ).wait_for()
    assert "hp_filter" not in page.page.url
    page.assert_no_errors()


def run_colours(page: Watched, view: str) -> dict[str, str]:
    """Each run's swatch colour in the view shown: the scalars run list, the hparams rows."""
    if view == "scalars":
        page.page.locator("#run-list input[data-run]").first.wait_for()
        script = """() => Object.fromEntries([...document.querySelectorAll('#run-list li')].map(
            (li) => [li.querySelector('input').dataset.run,
                     getComputedStyle(li.querySelector('.swatch')).backgroundColor]))"""
    else:
        page.page.locator(".hp-table tbody tr[data-session] .swatch").first.wait_for()
        script = """() => Object.fromEntries(
            [...document.querySelectorAll('.hp-table tbody tr[data-session]')].map(
            (tr) => [tr.dataset.session,
                     getComputedStyle(tr.querySelector('.swatch')).backgroundColor]))"""
    colours: dict[str, str] = page.page.evaluate(script)
    return colours


def test_a_run_has_the_same_colour_in_every_view_whichever_opens_first(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """The page assigns run colours once, from the experiment's whole run list: a session's
    hparams row has its run's colour in scalars, whether the page opened on hparams (which
    lists only the sessions) or on scalars (every run), and on every reload."""
    made, base = serve_official(serve, tmp_path)
    sessions = set(made.statuses)

    seen: list[tuple[dict[str, str], dict[str, str]]] = []
    for first, then in (("hparams", "scalars"), ("scalars", "hparams")):
        open_view(page, base, first)
        opened = run_colours(page, first)
        page.page.locator(f'nav#views a[data-view="{then}"]').click()
        switched = run_colours(page, then)
        hparams, scalars = (opened, switched) if first == "hparams" else (switched, opened)
        assert sessions <= set(hparams) and sessions <= set(scalars), (hparams, scalars)
        assert {s: hparams[s] for s in sessions} == {s: scalars[s] for s in sessions}
        seen.append((hparams, scalars))
    # The same colours whichever view the page opened on (and so on every reload).
    assert seen[0] == seen[1]
    # Distinct while the palette lasts (16 colours).
    assert len(set(seen[0][1].values())) == min(16, len(seen[0][1]))
    page.assert_no_errors()


#: A sweep as a new user writes one: a run per configuration, named after it, each ending with
#: tensorboardX's ``add_hparams`` under its default name (a timestamped sub-run).
SWEEP = ((0.1, 32, "sgd"), (0.01, 128, "sgd"), (0.001, 64, "adam"), (0.0001, 128, "adamw"))


def write_sweep(root: Path) -> dict[str, str]:
    """The sweep's runs (``lr0.01_bs128_sgd``: ``train/loss``, then ``add_hparams``): each
    run → the sub-run ``add_hparams`` wrote its session in (``RUN/<time.time()>``)."""
    sessions = {}
    for k, (lr, bs, opt) in enumerate(SWEEP):
        run = f"lr{lr}_bs{bs}_{opt}"
        with SummaryWriter(str(root / run)) as w:
            for step in range(0, 100, 10):
                w.add_scalar(
                    "train/loss", 2.0 / (1 + step * lr) - k / 10, step, walltime=WALL + step
                )
            w.add_hparams(
                {"lr": lr, "bs": bs, "opt": opt},
                {"hparam/best_loss": 0.5 - k / 20, "hparam/final_accuracy": 0.6 + k / 20},
            )
        (sub,) = [p.name for p in (root / run).iterdir() if p.is_dir()]
        sessions[run] = f"{run}/{sub}"
    return sessions


def serve_sweep(serve: ServeFactory, tmp_path: Path) -> tuple[dict[str, str], str]:
    """The sweep served, once every session's metrics are in the store."""
    sessions = write_sweep(tmp_path / "sweep")
    daemon = serve(tmp_path / "sweep")
    for session in sessions.values():
        daemon.wait_for_steps(session, "hparam/final_accuracy", [0], timeout=30)
    return sessions, f"http://127.0.0.1:{daemon.port}"


def test_add_hparams_sessions_show_as_the_run_the_user_named_in_its_colour(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """A session tensorboardX's add_hparams wrote in a timestamped sub-run of the run the user
    named (``lr0.01_bs128_sgd/1796660406.19``) shows as that run, in its curves' colour in
    scalars (its row and its line), the sub-run in its tooltip; no trial column repeats it."""
    sessions, base = serve_sweep(serve, tmp_path)
    open_view(page, base, "hparams")
    page.page.locator(f'.hp-table[data-rows="{len(sessions)}"]').wait_for()
    rows = page.page.evaluate(
        """() => [...document.querySelectorAll('.hp-table tbody tr')].map((tr) => {
            const cell = tr.querySelector('td[data-key="session"]');
            const line = document.querySelector(
                `.pc .lines path[data-session="${CSS.escape(tr.dataset.session)}"]`);
            return {session: tr.dataset.session, name: tr.dataset.name,
                    shown: cell.querySelector('.name').textContent, title: cell.title,
                    value: JSON.parse(cell.dataset.value),
                    swatch: getComputedStyle(cell.querySelector('.swatch')).backgroundColor,
                    line: line && getComputedStyle(line).stroke}; })"""
    )
    assert {r["session"]: r["name"] for r in rows} == {s: run for run, s in sessions.items()}
    for r in rows:
        assert r["shown"] == r["value"] == r["name"], r
        assert r["session"] in r["title"], r
    assert page.page.locator('.hp-table th[data-key="trial"]').count() == 0
    page.screenshot("hparams-add-hparams")
    # The same colours as the runs' curves in scalars.
    page.page.locator('nav#views a[data-view="scalars"]').click()
    scalars = run_colours(page, "scalars")
    for r in rows:
        assert r["swatch"] == r["line"] == scalars[r["name"]], (r, scalars)
    page.assert_no_errors()


#: The parallel coordinates' axis titles and tick labels, in the plot's own coordinates.
PARALLEL_LAYOUT = """() => {
    const svg = document.querySelector('.parallel svg.pc');
    const box = svg.getBoundingClientRect();
    const rel = (r) => ({left: r.left - box.left, right: r.right - box.left,
                         top: r.top - box.top, bottom: r.bottom - box.top});
    const titles = [...svg.querySelectorAll('.axis .axis-label')].map((t) => ({
        text: t.textContent, full: t.querySelector('title')?.textContent ?? t.textContent,
        ...rel(t.getBoundingClientRect())}));
    const ticks = [...svg.querySelectorAll('.axis')].flatMap((g) => {
        const line = rel(g.querySelector('line').getBoundingClientRect());
        return [...g.querySelectorAll('text.tick')].map((t) => {
            const back = t.previousElementSibling;
            const backed = back && back.tagName === 'rect';
            return {text: t.textContent, numeric: g.classList.contains('numeric'),
                    lineTop: line.top, lineBottom: line.bottom, ...rel(t.getBoundingClientRect()),
                    back: backed ? rel(back.getBoundingClientRect()) : null};
        });
    });
    // What the plot's frame shows of it (it scrolls sideways when the plot is wider).
    const frame = svg.parentElement;
    const edge = frame.getBoundingClientRect().left + frame.clientLeft - box.left;
    return {width: Math.min(box.width, edge + frame.clientWidth), height: box.height,
            left: Math.max(0, edge), titles, ticks};
}"""


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        min(a["right"], b["right"]) - max(a["left"], b["left"]) > 0.5
        and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 0.5
    )


def test_parallel_coordinates_titles_and_labels_fit_and_stay_off_the_lines(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """Every axis title is whole inside the plot and its frame (the last one was cut:
    "hparam/final_accur"), no two overlap, at a wide and a narrow width; a numeric axis's
    labels (its least and greatest value) sit beyond the axis's ends, off the lines; a
    category's label is on a background over the lines that cross it."""
    sessions, base = serve_sweep(serve, tmp_path)
    labels = ["lr", "bs", "opt", "hparam/best_loss", "hparam/final_accuracy"]
    for width in (1400, 700):
        page.page.set_viewport_size({"width": width, "height": 1000})
        open_view(page, base, "hparams")
        page.page.locator(f'.hp-table[data-rows="{len(sessions)}"]').wait_for()
        page.page.locator(".parallel svg.pc .axis").first.wait_for()
        found = page.page.evaluate(PARALLEL_LAYOUT)
        titles = found["titles"]
        assert sorted(t["full"] for t in titles) == sorted(labels), titles
        assert titles[-1]["full"] == "hparam/final_accuracy"
        if width == 1400:
            assert [t["text"] for t in titles] == [t["full"] for t in titles]
        for t in titles:
            assert t["text"] == t["full"] or t["text"].endswith("…"), t
            assert t["left"] >= found["left"] - 0.5, (width, t)
            assert t["right"] <= found["width"] + 0.5, (width, t)
            assert t["top"] >= -0.5 and t["bottom"] <= found["height"] + 0.5, (width, t)
        for a, b in itertools.pairwise(titles):
            assert not overlap(a, b), (width, a, b)
        ticks = found["ticks"]
        assert any(t["numeric"] for t in ticks) and any(not t["numeric"] for t in ticks)
        for t in ticks:
            assert t["left"] >= found["left"] - 0.5, (width, t)
            assert t["right"] <= found["width"] + 0.5, (width, t)
            if t["numeric"]:
                # Beyond the axis's ends: the lines run between them.
                assert t["bottom"] <= t["lineTop"] + 0.5 or t["top"] >= t["lineBottom"] - 0.5, t
            else:
                back = t["back"]
                assert back is not None, t
                assert back["left"] <= t["left"] + 0.5 and t["right"] <= back["right"] + 0.5, t
            for title in titles:
                assert not overlap(t, title), (t, title)
        page.screenshot(f"hparams-parallel-{width}")
    page.assert_no_errors()


def test_a_view_takes_no_card_from_another_experiments_stream(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """The page shows the first experiment (no exp=), and its stream carries every
    experiment's commits: a run written to the second one must not become a card of the
    first's view (its text was then asked of the first experiment: a 404)."""
    first = tmp_path / "first"
    second = tmp_path / "second"
    write_run(first, 0, STEPS)
    write_run(second, 1, range(0, 20, 5))
    daemon = serve(f"a={first}", f"b={second}")
    base = f"http://127.0.0.1:{daemon.port}"
    open_view(page, base, "text")
    page.page.locator(f'.text-card[data-run="train"][data-last-step="{STEPS[-1]}"]').wait_for()
    with SummaryWriter(str(second / "late")) as w:
        w.add_text("notes", "written to the second experiment", 0, walltime=WALL)
        w.add_scalar("loss", 1.0, 0, walltime=WALL)
    daemon.wait_for_steps("late", "loss", [0], experiment="b")
    # Then a run of the shown experiment: once its card is there, the other's event is past.
    with SummaryWriter(str(first / "later")) as w:
        w.add_text("notes", "written to the first experiment", 0, walltime=WALL)
    page.page.locator('.text-card[data-run="later"]').wait_for()
    assert page.page.locator('.text-card[data-run="late"]').count() == 0
    page.assert_no_errors()


def test_views_work_with_the_login_cookie_and_several_experiments(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    first = tmp_path / "first"
    second = tmp_path / "second"
    write_run(first, 0, STEPS)
    write_run(second, 1, range(0, 20, 5))
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    daemon = serve(f"a={first}", f"b={second}", "--token-file", token_file)
    base = f"http://127.0.0.1:{daemon.port}"
    # The URL the daemon shows on a terminal (its log names the token's file instead).
    login_url = f"{base}/login?token={TOKEN}"
    page.page.goto(login_url)  # sets the cookie, then opens the dashboard

    # The first experiment by default (TensorBoard's routes too: text is read through them).
    open_view(page, base, "text")
    page.page.locator(f'.text-card[data-run="train"][data-last-step="{STEPS[-1]}"]').wait_for()
    open_view(page, base, "images")
    page.page.locator(f'.media-card[data-run="train"][data-step="{STEPS[-1]}"]').wait_for()
    select = page.page.locator("#experiment")
    select.wait_for()
    assert page.page.evaluate(
        "() => [...document.querySelectorAll('#experiment option')].map((o) => o.value)"
    ) == ["a", "b"]
    select.select_option("b")
    page.page.locator('.media-card[data-run="eval"][data-step="15"]').wait_for()
    assert "exp=b" in page.page.url
    assert page.page.locator('.media-card[data-run="train"]').count() == 0
    # Back and Forward across the change: the selector names the experiment shown.
    for where, experiment, run in (("back", "a", "train"), ("forward", "b", "eval")):
        getattr(page.page, f"go_{where}")()
        page.page.locator(f'.media-card[data-run="{run}"]').first.wait_for()
        assert select.input_value() == experiment, where
    open_view(page, base, "text", "&exp=b")
    page.page.locator('.text-card[data-run="eval"][data-last-step="15"]').wait_for()
    page.screenshot("experiment-b")
    # At 800 px the bar with its experiment selector fits the window (it was about 900 px
    # wide: the TensorBoard link off the page, the selector's word wrapped).
    page.page.set_viewport_size({"width": 800, "height": 600})
    sizes = page.page.evaluate(
        """() => { const nav = document.querySelector('nav#views');
            return [nav.scrollWidth, nav.clientWidth, document.documentElement.scrollWidth]; }"""
    )
    assert sizes[0] <= sizes[1] and sizes[2] <= 800, sizes
    box = select.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 800, box
    # The tabs of views without data give way (their views have nothing to show), so the
    # TensorBoard link is read whole, not cut to "T…".
    link = page.page.evaluate(
        """() => { const a = document.querySelector('nav#views a.tb-link');
            return [a.scrollWidth, a.clientWidth]; }"""
    )
    assert link[0] <= link[1], link
    page.screenshot("experiment-b-800px")
    page.page.set_viewport_size({"width": 1400, "height": 1000})
    # The scalars view reads the selected experiment too (its requests and its stream).
    page.page.locator('nav#views a[data-view="scalars"]').click()
    page.page.locator('[data-tag="loss"][data-last-step="15"]').wait_for()
    assert json.loads(page.page.locator('[data-tag="loss"]').get_attribute("data-runs") or "") == [
        "eval"
    ]
    statuses = [r.status for r in page.responses]
    assert 401 not in statuses
    page.assert_no_errors()
    # A bookmark naming an experiment this daemon does not serve: said, and the first one
    # shown (it used to be an empty page "reconnecting…" for ever).
    page.errors.clear()
    open_view(page, base, "text", "&exp=nope")
    notice = page.page.locator("#shell-notice")
    notice.wait_for()
    assert notice.inner_text() == 'no experiment "nope" here: showing a'
    page.page.locator(f'.text-card[data-run="train"][data-last-step="{STEPS[-1]}"]').wait_for()
    assert "exp=" not in page.page.url


def test_cards_out_of_view_are_drawn_only_when_scrolled_to(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    logdir = tmp_path / "many"
    tags = [f"layer{i:02d}/weights" for i in range(16)]
    rng = np.random.default_rng(3)
    for run in RUNS:
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(3):
                for tag in tags:
                    w.add_histogram(tag, rng.normal(0, 1, 200), step, walltime=WALL + step)
                w.add_scalar("loss", 1.0, step, walltime=WALL + step)
    daemon = serve(logdir)
    for run in RUNS:
        daemon.wait_for_steps(run, "loss", [0, 1, 2], timeout=30)
    base = f"http://127.0.0.1:{daemon.port}"

    open_view(page, base, "histograms")
    # The first tag's cards (at the top) are drawn.
    for run in RUNS:
        page.page.locator(
            f'.hist-card[data-tag="{tags[0]}"][data-run="{run}"][data-last-step="2"]'
        ).wait_for()
    cards = datasets(page, ".hist-card")
    assert len(cards) == len(tags) * len(RUNS)
    # The last cards are far below the window: listed, not drawn.
    last = page.page.locator(f'.hist-card[data-tag="{tags[-1]}"]')
    assert [last.nth(i).get_attribute("data-last-step") for i in range(len(RUNS))] == [None] * 2
    drawn = [c for c in cards if "lastStep" in c]
    assert 0 < len(drawn) < len(cards)
    # Nor fetched: a card's data is asked for when it first comes into view.
    fetched = {
        parse_qs(urlsplit(r.url).query)["tag"][0]
        for r in page.responses
        if urlsplit(r.url).path == "/api/v1/tensors"
    }
    assert tags[0] in fetched and tags[-1] not in fetched, fetched
    last.first.scroll_into_view_if_needed()
    page.page.locator(f'.hist-card[data-tag="{tags[-1]}"][data-last-step="2"]').first.wait_for()
    page.assert_no_errors()


def test_every_view_fits_a_narrow_window(serve: ServeFactory, logdir: Path, page: Watched) -> None:
    """At 400 px nothing is wider than the window (it was ~900 px: the run list beside cards
    of at least 420 px, tabs cut off), and the scalars' charts are drawn at its width."""
    base = ready(serve(logdir))
    page.page.set_viewport_size({"width": 400, "height": 900})
    for view in ("scalars", "images", "histograms", "distributions", "text", "hparams", "status"):
        open_view(page, base, view)
        if view == "scalars":
            page.page.locator(f'[data-tag="loss"][data-last-step="{STEPS[-1]}"]').wait_for()
        else:
            page.page.wait_for_timeout(300)
        widths = page.page.evaluate(
            "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert widths[0] <= widths[1], (view, widths)
    page.screenshot("narrow-status")
    # Between the one-column layout (under 720 px) and a wide window, the scalars toolbar
    # wraps rather than widen the page (it was 826 px wide at 760).
    page.page.set_viewport_size({"width": 760, "height": 900})
    open_view(page, base, "scalars")
    page.page.locator(f'[data-tag="loss"][data-last-step="{STEPS[-1]}"]').wait_for()
    widths = page.page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert widths[0] <= widths[1], widths
    page.page.set_viewport_size({"width": 400, "height": 900})
    open_view(page, base, "scalars")
    card = page.page.locator('[data-tag="loss"]')
    card.wait_for()
    box = card.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 400, box
    page.screenshot("narrow-scalars")
    page.assert_no_errors()


def test_charts_follow_the_window_width(serve: ServeFactory, logdir: Path, page: Watched) -> None:
    """A window made narrower or wider (a card's width follows its grid column): every chart
    is drawn again at its card's new width. The charts kept the width of the first drawing:
    wider than their cards after a widening (the grid fits more, narrower columns), or with
    a blank strip beside them after a narrowing."""
    base = ready(serve(logdir))
    page.page.set_viewport_size({"width": 1400, "height": 900})
    # Per card: its width inside the border less its chart's (null: no chart yet).
    gaps = """(s) => [...document.querySelectorAll(s)].map((card) => {
        const canvas = card.querySelector('canvas');
        return canvas ? card.clientWidth - canvas.getBoundingClientRect().width : null; })"""
    for view, card in (
        ("scalars", '[data-tag="loss"]'),
        ("histograms", ".hist-card"),
        ("distributions", ".dist-card"),
    ):
        open_view(page, base, view)
        page.page.locator(f"{card}[data-last-step='{STEPS[-1]}'] canvas").first.wait_for()
        for width in (900, 1900, 1400):
            page.page.set_viewport_size({"width": width, "height": 900})
            # Drawn again within a few frames: each chart spans its card, less its padding.
            page.page.wait_for_function(
                f"(s) => ({gaps})(s).every((gap) => gap !== null && gap >= 0 && gap <= 30)",
                arg=card,
            )
        page.screenshot(f"resized-{view}")
    page.assert_no_errors()


def test_histogram_step_labels_fit_their_card(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """The step axis' labels of a long run ("step 2999999") are drawn whole: the plot leaves
    room for the widest (a fixed margin cut them at about "step 29")."""
    logdir = tmp_path / "long"
    steps = [0, 1_500_000, 2_999_999]
    rng = np.random.default_rng(5)
    with SummaryWriter(str(logdir / "train")) as w:
        for step in steps:
            w.add_histogram("weights", rng.normal(0, 1, 500), step, walltime=WALL + step)
            w.add_scalar("loss", 1.0, step, walltime=WALL + step)
    daemon = serve(logdir)
    daemon.wait_for_steps("train", "loss", steps, timeout=30)
    open_view(page, f"http://127.0.0.1:{daemon.port}", "histograms")
    selector = f'.hist-card[data-run="train"][data-last-step="{steps[-1]}"] canvas'
    page.page.locator(selector).wait_for()
    # Columns of the canvas' right edge that hold ink (anything not blank), in device pixels.
    inked = page.page.evaluate(
        """(selector) => {
            const canvas = document.querySelector(selector);
            const g = canvas.getContext("2d");
            const w = canvas.width, h = canvas.height, edge = Math.round(4 * devicePixelRatio);
            const data = g.getImageData(w - edge, 0, edge, h).data;
            let inked = 0;
            for (let i = 3; i < data.length; i += 4) if (data[i] > 0) inked++;
            const label = g.getImageData(0, 0, w, h).data;
            let all = 0;
            for (let i = 3; i < label.length; i += 4) if (label[i] > 0) all++;
            return [inked, all];
        }""",
        selector,
    )
    assert inked[1] > 0, "nothing drawn"
    assert inked[0] == 0, f"{inked[0]} pixels drawn at the right edge: a label is cut"
    # The value axis ticks round values, 0 among them (it split the range evenly: -3.27,
    # -1.6, 0.0583, ...): samples of N(0, 1) span about -3..3, ticked at whole numbers.
    labels = json.loads(page.page.locator(selector).get_attribute("data-ticks") or "[]")
    values = [float(v) for v in labels]
    assert 0.0 in values and len(values) >= 2, labels
    assert all(v == round(v) for v in values), labels
    page.screenshot("histogram-long-steps")
    page.assert_no_errors()


def test_tag_and_run_filters_apply_to_every_card_view(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    """Images, histograms, distributions and text have the scalars view's run and tag filters
    (the same URL keys, so they carry from view to view) and leave out the runs its list
    unticks (``hide``); cards left out are not fetched."""
    base = ready(serve(logdir))
    open_view(page, base, "images")
    page.page.locator('.media-card[data-run="train"]').first.wait_for()
    page.page.locator('.media-card[data-run="eval"]').first.wait_for()
    page.page.fill("#run-filter", "^ev")
    page.page.wait_for_function(
        "() => document.querySelectorAll('.media-card[data-run=\"train\"]').length === 0"
    )
    assert page.page.locator('.media-card[data-run="eval"]').count() > 0
    assert page.page.locator(".card-filters .shown").inner_text() == "1 of 2 runs"
    assert "runs=%5Eev" in page.page.url
    # The filter carries to the next view, whose cards of other runs are never fetched.
    page.responses.clear()
    page.page.locator('nav#views a[data-view="histograms"]').click()
    page.page.locator('.hist-card[data-run="eval"]').first.wait_for()
    assert page.page.locator('.hist-card[data-run="train"]').count() == 0
    assert page.page.input_value("#run-filter") == "^ev"
    page.page.locator(f'.hist-card[data-run="eval"][data-last-step="{STEPS[-1]}"]').wait_for()
    # The histograms view's requests (an images request still in flight at the switch may
    # answer after the clear: it is not this view's).
    mine = [r.url for r in page.responses if "histograms" in r.url]
    asked = [parse_qs(urlsplit(url).query).get("run") for url in mine]
    assert mine and ["train"] not in asked, mine
    page.page.fill("#tag-filter", "^nothing$")
    notice = page.page.locator(".view-body .notice")
    notice.wait_for()
    assert notice.inner_text() == "No histograms match the filters."
    # A run unticked in the scalars view's list is left out here too, and said.
    open_view(page, base, "text", "&hide=eval")
    page.page.locator(f'.text-card[data-run="train"][data-last-step="{STEPS[-1]}"]').wait_for()
    assert page.page.locator('.text-card[data-run="eval"]').count() == 0
    assert page.page.locator(".card-filters .shown").inner_text() == (
        "1 of 2 runs (1 unticked in Scalars' run list)"
    )
    page.screenshot("filtered-text")
    page.assert_no_errors()


def test_a_histogram_series_without_a_finite_value_says_so(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """A diverged run's histograms (every value NaN, as TensorFlow writes them: one bucket with
    NaN edges) have no value axis: the card says how many steps it holds and why nothing is
    drawn (it said "no histogram yet")."""
    logdir = tmp_path / "logs"
    writer = EventFileWriter(str(logdir / "diverged"))
    for step in range(3):
        event = event_pb2.Event(wall_time=WALL + step, step=step)
        event.summary.value.add(
            tag="weights",
            tensor=tensor_util.make_tensor_proto(np.array([[np.nan, np.nan, 20.0]])),
            metadata=histogram_metadata.create_summary_metadata("weights", ""),
        )
        event.summary.value.add(tag="loss", simple_value=float("nan"))
        writer.add_event(event)
    writer.close()
    daemon = serve(logdir)
    daemon.wait_for_steps("diverged", "loss", [0, 1, 2], timeout=30)
    open_view(page, f"http://127.0.0.1:{daemon.port}", "histograms")
    card = page.page.locator('.hist-card[data-run="diverged"][data-last-step="2"]')
    card.wait_for()
    assert card.get_attribute("data-message") == "3 steps, no finite value (NaN, ±inf or empty)"
    page.screenshot("histograms-not-finite")
    page.assert_no_errors()


def test_the_tensorboard_link_names_what_only_its_ui_shows(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """Custom scalars, meshes and embeddings have no view here: the link to TensorBoard's UI
    names them, so that data is not silently missing (it said "TensorBoard's UI" whatever the
    logdir held). PR curves have their view, and the link does not name them."""
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "run")) as w:
        w.add_scalar("loss", 1.0, 0, walltime=WALL)
        labels, scores = np.array([0, 1, 1, 0]), np.array([0.1, 0.9, 0.8, 0.3])
        w.add_pr_curve("pr", labels, scores, 0, walltime=WALL)
        w.add_custom_scalars({"losses": {"loss": ["Multiline", ["loss"]]}})
        w.add_mesh("mesh", vertices=np.random.default_rng(1).random((1, 4, 3)), walltime=WALL)
        w.add_embedding(np.random.default_rng(2).random((10, 3)))
    daemon = serve(logdir)
    daemon.wait_for_steps("run", "loss", [0], timeout=30)
    open_view(page, f"http://127.0.0.1:{daemon.port}", "images")
    link = page.page.locator("nav#views a.tb-link")
    page.page.wait_for_function(
        "() => document.querySelector('nav#views a.tb-link').textContent.includes(':')"
    )
    assert link.inner_text() == "TensorBoard's UI: custom scalars, mesh, projector"
    assert link.get_attribute("href") == "tensorboard/"
    page.screenshot("tensorboard-link")
    page.assert_no_errors()


def test_card_views_order_runs_as_the_run_list_and_pack_single_cards(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """A tag's cards follow the experiment's run order (the scalars run list's: by start time),
    not the runs' names; tags of one card each share a row on a wide window (each took a row,
    most of it empty)."""
    logdir = tmp_path / "order"
    rng = np.random.default_rng(11)
    for k, run in enumerate(("zeta", "alpha")):  # zeta starts first
        with SummaryWriter(str(logdir / run)) as w:
            w.add_scalar("loss", 1.0, 0, walltime=WALL + 100 * k)
            w.add_image("shared", rng.random((3, 8, 8)), 0, walltime=WALL + 100 * k)
    with SummaryWriter(str(logdir / "zeta"), filename_suffix=".more") as w:
        for tag in ("one/a", "one/b", "one/c"):
            w.add_image(tag, rng.random((3, 8, 8)), 0, walltime=WALL + 1)
    daemon = serve(logdir)
    daemon.wait_for_steps("alpha", "loss", [0], timeout=30)
    open_view(page, f"http://127.0.0.1:{daemon.port}", "images")
    page.page.locator('.media-card[data-tag="one/c"]').wait_for()
    page.page.locator('.media-card[data-tag="shared"][data-run="alpha"]').wait_for()
    shared = [c["run"] for c in datasets(page, '.media-card[data-tag="shared"]')]
    assert shared == ["zeta", "alpha"], shared
    tops = page.page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('.group')].map(
            (g) => [g.dataset.group, Math.round(g.getBoundingClientRect().top)]))"""
    )
    # The single-card tags share rows (the window is 1,400 px: two columns of at least
    # 440 px); the tag of two runs takes a row of its own, below them.
    assert tops["one/a"] == tops["one/b"] < tops["one/c"] < tops["shared"], tops
    page.screenshot("packed-images")
    page.assert_no_errors()


def test_the_pr_curves_view_draws_each_steps_curve(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """A card per tag and run draws the last step's precision–recall curve, as TensorBoard's
    PR-curves route gives it (recall ascending); the slider shows an earlier step's; the
    readout names the threshold under the pointer."""
    logdir = tmp_path / "pr"
    rng = np.random.default_rng(3)
    for run in ("a", "b"):
        with SummaryWriter(str(logdir / run)) as w:
            for step in (0, 10, 20):
                labels = rng.integers(0, 2, 200)
                scores = np.clip(labels * 0.4 + rng.random(200) * 0.6, 0, 1)
                w.add_pr_curve("pr/cls", labels, scores, step, num_thresholds=21, walltime=WALL)
            w.add_scalar("done", 1.0, 20, walltime=WALL)
    daemon = serve(logdir)
    for run in ("a", "b"):
        daemon.wait_for_steps(run, "done", [20], timeout=30)
    base = f"http://127.0.0.1:{daemon.port}"
    open_view(page, base, "pr_curves")
    cards = page.page.locator('.pr-card[data-tag="pr/cls"][data-step="20"]')
    cards.nth(1).wait_for()
    route = httpx.get(
        f"{base}/data/plugin/pr_curves/pr_curves", params={"run": "a", "tag": "pr/cls"}
    ).json()["a"]
    assert [s["step"] for s in route] == [0, 10, 20]

    def expected(entry: dict[str, Any]) -> list[list[float]]:
        # By recall ascending; at equal recall, the higher threshold first.
        pairs = sorted(
            zip(entry["recall"], entry["precision"], range(len(entry["recall"])), strict=True),
            key=lambda p: (p[0], -p[2]),
        )
        return [[r, p] for r, p, _ in pairs]

    card = page.page.locator('.pr-card[data-run="a"]')
    assert json.loads(card.get_attribute("data-points") or "") == expected(route[-1])
    assert card.get_attribute("data-steps") == "3"
    slider = card.locator("input.step-slider")
    slider.fill("0")
    page.page.locator('.pr-card[data-run="a"][data-step="0"]').wait_for()
    assert json.loads(card.get_attribute("data-points") or "") == expected(route[0])
    # The other run's card still shows its last step.
    assert page.page.locator('.pr-card[data-run="b"]').get_attribute("data-step") == "20"
    box = card.locator(".plot").bounding_box()
    assert box is not None
    page.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 3)
    page.page.wait_for_function(
        """() => document.querySelector('.pr-card[data-run="a"] .readout')
            .textContent.startsWith('threshold ')"""
    )
    page.screenshot("pr-curves")
    page.assert_no_errors()


def wav(frequency: float, frames: int = 800, rate: int = 8000) -> bytes:
    """A mono 16-bit WAV of a sine."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        tone = np.sin(np.arange(frames) * frequency / rate * 2 * np.pi) * 20000
        out.writeframes(tone.astype("<i2").tobytes())
    return buffer.getvalue()


def test_the_audio_view_plays_each_steps_clips(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """A card per tag and run with the last step's clips (two per step, as
    ``tf.summary.audio(..., max_outputs=2)`` writes them), each a player whose source is a
    WAV the browser decodes; the slider shows an earlier step's."""
    logdir = tmp_path / "audio"
    for run in ("a", "b"):
        writer = EventFileWriter(str(logdir / run))
        for step in (0, 5, 10):
            event = event_pb2.Event(wall_time=WALL + step, step=step)
            clips = np.array([[wav(220 + step), b"low"], [wav(440 + step), b"high"]], dtype=object)
            event.summary.value.add(
                tag="clip",
                metadata=audio_metadata.create_summary_metadata(
                    display_name="clip",
                    description="",
                    encoding=audio_metadata.Encoding.Value("WAV"),
                ),
                tensor=tensor_util.make_tensor_proto(clips),
            )
            event.summary.value.add(tag="done", simple_value=1.0)
            writer.add_event(event)
        writer.close()
    daemon = serve(logdir)
    for run in ("a", "b"):
        daemon.wait_for_steps(run, "done", [0, 5, 10], timeout=30)
    open_view(page, f"http://127.0.0.1:{daemon.port}", "audio")
    page.page.locator('.audio-card[data-run="a"][data-step="10"]').wait_for()
    card = page.page.locator('.audio-card[data-run="a"]')
    assert card.get_attribute("data-clips") == "2"
    assert card.get_attribute("data-steps") == "3"
    last = [a.get_attribute("data-key") for a in card.locator("audio").all()]
    # Each player's source is a clip the browser decodes: 800 frames at 8 kHz.
    durations = page.page.evaluate(
        """async () => Promise.all([...document.querySelectorAll(
            '.audio-card[data-run="a"] audio')].map((a) => new Promise((done) => {
                a.addEventListener('loadedmetadata', () => done(a.duration));
                a.addEventListener('error', () => done(null));
                a.preload = 'auto'; a.load(); })))"""
    )
    assert durations == [pytest.approx(0.1, abs=0.01)] * 2, durations
    card.locator("input.step-slider").fill("0")
    page.page.locator('.audio-card[data-run="a"][data-step="0"]').wait_for()
    first = [a.get_attribute("data-key") for a in card.locator("audio").all()]
    assert len(first) == 2 and not set(first) & set(last)
    assert page.page.locator('.audio-card[data-run="b"]').get_attribute("data-step") == "10"
    page.screenshot("audio")
    page.assert_no_errors()


def test_the_tensorboard_link_names_the_shown_experiments_data(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """With several experiments, the link names what only TensorBoard's UI shows of the
    experiment on the page (the first when the URL names none), not of all of them."""
    plain, custom = tmp_path / "plain", tmp_path / "custom"
    for root, layout in ((plain, False), (custom, True)):
        with SummaryWriter(str(root / "run")) as w:
            w.add_scalar("loss", 1.0, 0, walltime=WALL)
            if layout:
                w.add_custom_scalars({"losses": {"loss": ["Multiline", ["loss"]]}})
    daemon = serve(f"a={plain}", f"b={custom}")
    for experiment in ("a", "b"):
        daemon.wait_for_steps("run", "loss", [0], timeout=30, experiment=experiment)
    base = f"http://127.0.0.1:{daemon.port}"
    link = page.page.locator("nav#views a.tb-link")
    open_view(page, base, "scalars", "&exp=b")
    page.page.wait_for_function(
        "() => document.querySelector('nav#views a.tb-link').textContent.includes(':')"
    )
    assert link.inner_text() == "TensorBoard's UI: custom scalars"
    open_view(page, base, "scalars")  # the first experiment, a
    page.page.locator("#experiment option").nth(1).wait_for(state="attached")
    # The link is named as the tabs are marked (a has no images: its tab is greyed), from a
    # listing asked at the same time: given a second to answer.
    page.page.locator('nav#views a[data-view="images"][data-empty]').wait_for(state="attached")
    page.page.wait_for_timeout(1000)
    assert link.inner_text() == "TensorBoard's UI"
    page.assert_no_errors()


def test_a_pr_curve_without_a_true_positive_says_so(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    """Labels all negative: every threshold is at precision 0, recall 0, a single point that a
    line does not show; it is drawn as a dot, and the card says why."""
    logdir = tmp_path / "pr"
    with SummaryWriter(str(logdir / "run")) as w:
        w.add_pr_curve("allneg", np.zeros(50), np.linspace(0, 1, 50), 0, walltime=WALL)
        w.add_scalar("done", 1.0, 0, walltime=WALL)
    daemon = serve(logdir)
    daemon.wait_for_steps("run", "done", [0], timeout=30)
    open_view(page, f"http://127.0.0.1:{daemon.port}", "pr_curves")
    card = page.page.locator('.pr-card[data-tag="allneg"][data-step="0"]')
    card.wait_for()
    assert {tuple(p) for p in json.loads(card.get_attribute("data-points") or "")} == {(0, 0)}
    assert card.locator(".readout").inner_text().startswith("no true positive")
    page.assert_no_errors()
