"""TensorBoard's custom scalars plugin on boardd: the layouts writers describe
(tensorboardX's ``add_custom_scalars`` and its shorthands), merged across runs, and the
regex-matched scalars its charts draw, request by request against TensorBoard."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tensorboard.compat.proto import event_pb2
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboardX import SummaryWriter
from tensorboardX.summary import custom_scalars

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from tests.conftest import ThreadedServer, ingest
from tests.tensorboard.conftest import KEEP_ALL, Pair, pair

pytestmark = [
    pytest.mark.slow,
    pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server"),
]

WALL = 1_700_000_000.0
STEPS = 30
RUNS = {"a", "b", "plain"}
SCALAR_TAGS = ("loss/train", "loss/val", "acc", "acc_lo", "acc_hi", "lr")
#: Regular expressions the UI could send (TensorBoard answers regex_valid false for the first
#: two), against each run and a run that does not exist.
REGEXES = ("", "(", "loss/.*", "loss/train", "acc", "acc_(lo|hi)", ".*", "lr$", "zzz")


def write_scalars(w: SummaryWriter, tags: tuple[str, ...]) -> None:
    for step in range(STEPS):
        for k, tag in enumerate(tags):
            w.add_scalar(tag, (k + 1) / (step + 1), step, walltime=WALL + step)


def layout_event(step: int, layout: layout_pb2.Layout) -> event_pb2.Event:
    """An event carrying ``layout`` as tensorboardX writes one, at ``step``."""
    event = event_pb2.Event(wall_time=WALL + step, step=step)
    event.summary.ParseFromString(custom_scalars({}).SerializeToString())
    event.summary.value[0].tensor.string_val[0] = layout.SerializeToString()
    return event


def multiline(title: str, *tags: str) -> layout_pb2.Chart:
    return layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags))


def write_custom_scalars_logdir(root: Path) -> Path:
    logdir = root / "custom"
    # Run a: one layout of both chart kinds, and the scalars they draw.
    with SummaryWriter(str(logdir / "a")) as w:
        w.add_custom_scalars(
            {
                "Losses": {
                    "both": ["Multiline", ["loss/train", "loss/val"]],
                    "any loss": ["Multiline", ["loss/.*"]],
                },
                "Accuracy": {"band": ["Margin", ["acc", "acc_lo", "acc_hi"]]},
            }
        )
        write_scalars(w, SCALAR_TAGS)
    # Run b: two layouts at step 0 (the shorthands, called twice), then one at step 1, which
    # is the run's: a category of a's title with a chart a has (left out) and a new one, and a
    # new category that starts closed.
    with SummaryWriter(str(logdir / "b")) as w:
        w.add_custom_scalars_multilinechart(["loss/train"], category="Ignored", title="first")
        w.add_custom_scalars_marginchart(["acc", "acc_lo", "acc_hi"], category="Ignored")
        write_scalars(w, ("loss/train", "lr"))
    last = layout_pb2.Layout(
        category=[
            layout_pb2.Category(
                title="Losses",
                chart=[multiline("both", "loss/train", "loss/val"), multiline("lr", "lr")],
            ),
            layout_pb2.Category(title="Extra", chart=[multiline("all", ".*")], closed=True),
        ]
    )
    writer = EventFileWriter(str(logdir / "b"), filename_suffix=".layout")
    writer.add_event(layout_event(1, last))
    writer.close()
    # A run without a layout.
    with SummaryWriter(str(logdir / "plain")) as w:
        write_scalars(w, ("loss/train",))
    return logdir


@pytest.fixture(scope="module")
def cs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("custom_scalars")
    with pair(root, write_custom_scalars_logdir(root), KEEP_ALL, RUNS) as p:
        yield p


def both_json(p: Pair, path: str, **params: Any) -> tuple[Any, Any]:
    a, b = p.both("GET", path, params=params)
    assert (a.status_code, b.status_code) == (200, 200), (a.text, b.text)
    return a.json(), b.json()


def test_the_tab_is_enabled(cs: Pair) -> None:
    theirs, ours = both_json(cs, "/data/plugins_listing")
    assert theirs["custom_scalars"] == ours["custom_scalars"]
    assert ours["custom_scalars"]["enabled"] is True


def test_layouts_merge_as_tensorboard_merges_them(cs: Pair) -> None:
    theirs, ours = both_json(cs, "/data/plugin/custom_scalars/layout")
    assert ours == theirs
    # What both say: a's categories, b's last layout merged in (its copy of "both" left out).
    titles = {c["title"]: [chart["title"] for chart in c["chart"]] for c in ours["category"]}
    assert titles == {"Losses": ["both", "any loss", "lr"], "Accuracy": ["band"], "Extra": ["all"]}
    band = ours["category"][1]["chart"][0]["margin"]["series"]
    assert band == [{"value": "acc", "lower": "acc_lo", "upper": "acc_hi"}]
    assert ours["category"][2]["closed"] is True


@pytest.mark.parametrize("run", [*sorted(RUNS), "missing"])
@pytest.mark.parametrize("regex", REGEXES)
def test_scalars_of_matching_tags(cs: Pair, run: str, regex: str) -> None:
    theirs, ours = both_json(cs, "/data/plugin/custom_scalars/scalars", run=run, tag=regex)
    assert ours == theirs
    # In the order the run first wrote them, as TensorBoard lists them: a chart's legend and
    # its lines' markers go by this order.
    assert list(ours["tag_to_events"]) == list(theirs["tag_to_events"])


def test_scalars_answer_holds_the_points(cs: Pair) -> None:
    """The comparison above is not of two empty answers."""
    _, ours = both_json(cs, "/data/plugin/custom_scalars/scalars", run="a", tag="acc")
    assert ours["regex_valid"] is True
    assert list(ours["tag_to_events"]) == ["acc", "acc_lo", "acc_hi"]  # as written
    assert [p[1] for p in ours["tag_to_events"]["acc"]] == list(range(STEPS))
    assert ours["tag_to_events"]["acc_lo"][2] == [WALL + 2, 2, pytest.approx(4 / 3)]


@pytest.mark.parametrize("fmt", ["json", "csv", None])
def test_download_data(cs: Pair, fmt: str | None) -> None:
    params = {"run": "b", "tag": "lr"} | ({"format": fmt} if fmt else {})
    theirs, ours = cs.both("GET", "/data/plugin/custom_scalars/download_data", params=params)
    assert (theirs.status_code, ours.status_code) == (200, 200)
    assert ours.headers["content-type"] == theirs.headers["content-type"]
    if fmt == "csv":
        # The store keeps scalars as float64: the documented difference "scalars written as
        # integers" aside, the same rows.
        assert ours.text.splitlines()[0] == theirs.text.splitlines()[0] == "Wall time,Step,Value"
        assert len(ours.text.splitlines()) == len(theirs.text.splitlines()) == STEPS + 1
    else:
        assert ours.json() == theirs.json()


def test_download_data_of_a_missing_tag_is_a_404(cs: Pair) -> None:
    theirs, ours = cs.both(
        "GET", "/data/plugin/custom_scalars/download_data", params={"run": "a", "tag": "nope"}
    )
    assert theirs.status_code == ours.status_code == 404


def test_scalars_without_a_run_is_a_400(cs: Pair) -> None:
    """TensorBoard fails with a 500 (docs/tensorboard.md: bad input is the client's error)."""
    theirs, ours = cs.both("GET", "/data/plugin/custom_scalars/scalars", params={"tag": "acc"})
    assert theirs.status_code == 500
    assert ours.status_code == 400
    assert "run" in ours.json()["error"]["message"]


def test_layouts_tensorboard_would_lose_or_fail_on(tmp_path: Path) -> None:
    """boardd only (docs/tensorboard.md: "Where boardd answers differently"). A run whose
    layout is not a Layout is left out (TensorBoard's answer is a 500 for every run's). The
    charts a third run adds to a category that a second run brought are kept (TensorBoard adds
    them to a copy it does not answer)."""
    logdir = tmp_path / "logs"
    layouts = {
        "1": layout_pb2.Layout(category=[layout_pb2.Category(title="X", chart=[multiline("x")])]),
        "2": layout_pb2.Layout(category=[layout_pb2.Category(title="Y", chart=[multiline("y")])]),
        "3": layout_pb2.Layout(category=[layout_pb2.Category(title="Y", chart=[multiline("z")])]),
    }
    for run, layout in layouts.items():
        writer = EventFileWriter(str(logdir / run))
        writer.add_event(layout_event(0, layout))
        writer.close()
    bad = layout_event(0, layout_pb2.Layout())
    bad.summary.value[0].tensor.string_val[0] = b"\xff\xff not a layout"
    writer = EventFileWriter(str(logdir / "0-corrupt"))
    writer.add_event(bad)
    writer.close()
    db = tmp_path / "store.sqlite"
    ingest(logdir, db)
    server = ThreadedServer(create_app([ExperimentSpec("logs", logdir, db)])).start()
    try:
        answer = httpx.get(server.url + "/data/plugin/custom_scalars/layout", timeout=30)
    finally:
        server.stop()
    assert answer.status_code == 200, answer.text
    titles = {c["title"]: [x["title"] for x in c["chart"]] for c in answer.json()["category"]}
    assert titles == {"X": ["x"], "Y": ["y", "z"]}


def test_no_layout_means_an_empty_answer_and_a_disabled_tab(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "run")) as w:
        write_scalars(w, ("loss/train",))
    db = tmp_path / "store.sqlite"
    ingest(logdir, db)
    server = ThreadedServer(create_app([ExperimentSpec("logs", logdir, db)])).start()
    try:
        layout = httpx.get(server.url + "/data/plugin/custom_scalars/layout", timeout=30)
        listing = httpx.get(server.url + "/data/plugins_listing", timeout=30)
    finally:
        server.stop()
    assert layout.status_code == 200
    assert layout.json() == {}  # TensorBoard's answer (tests/tensorboard: the rich logdir)
    assert listing.json()["custom_scalars"]["enabled"] is False
