"""TensorBoard's text routes on boardd, against the real TensorBoard: every text series of the
rich logdir and text tensors of every rank (Markdown on and off), the default sampling, and a
plugin without data."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.tensorboard.conftest import Pair
from tests.tensorboard.plugin_logdir import LONG_STEPS, NOT_UTF8, TEXTS, plugin_pair

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

TEXT = "/data/plugin/text/text"


@pytest.fixture(scope="module")
def plugin_defaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """Both on the plugin logdir with their default sampling."""
    with plugin_pair(tmp_path_factory, None) as p:
        yield p


def test_tags(keep_all: Pair, plugin_defaults: Pair) -> None:
    for pair in (keep_all, plugin_defaults):
        tb, ours = pair.both("GET", "/data/plugin/text/tags")
        assert ours.status_code == 200
        assert {run: sorted(tags) for run, tags in ours.json().items()} == {
            run: sorted(tags) for run, tags in tb.json().items()
        }
    assert sorted(ours.json()["shapes"]) == sorted(TEXTS)


def compare_all(pair: Pair, runs: set[str] | None = None) -> int:
    """Compares every series of these runs (all by default) with and without Markdown."""
    tags = pair.tb.get("/data/plugin/text/tags").json()
    count = 0
    for run, listed in tags.items():
        if runs is not None and run not in runs:
            continue
        for tag in listed:
            for markdown in ({}, {"markdown": "false"}):
                params = {"run": run, "tag": tag, **markdown}
                tb, ours = pair.both("GET", TEXT, params=params)
                assert ours.status_code == 200, ours.text
                assert ours.json() == tb.json(), params
                count += len(ours.json())
    return count


def test_every_text_series(keep_all: Pair) -> None:
    assert compare_all(keep_all) > 0
    # The Markdown table rendered, the script escaped, the javascript: link dropped.
    (first, *_) = keep_all.both("GET", TEXT, params={"run": "curves", "tag": "md/text_summary"})[
        1
    ].json()
    assert "<table>" in first["text"] and "&lt;script&gt;" in first["text"]
    assert "javascript:" not in first["text"]


def test_every_rank(plugin_defaults: Pair) -> None:
    """Rank 0: one Markdown document; ranks 1 and 2: a table of cells; rank 3: its first 2-D
    slice under a warning; empty tensors; NUL bytes dropped with a comment."""
    assert compare_all(plugin_defaults, {"shapes"}) == 3 * len(TEXTS) * 2
    ours = {
        tag: plugin_defaults.both("GET", TEXT, params={"run": "shapes", "tag": tag})[1].json()
        for tag in TEXTS
    }
    assert ours["rank0"][0]["text"].startswith("<h1>Title</h1>")
    assert (
        "<table>" in ours["rank2"][0]["text"]
        and "<td><p><code>c</code></p></td>" in ours["rank2"][0]["text"]
    )
    assert ours["rank3"][0]["text"].startswith("<p><strong>Warning:</strong>")
    assert "discarded 1 null bytes" in ours["rank2"][0]["text"]


def test_text_that_is_not_utf8(plugin_defaults: Pair) -> None:
    """Bytes that are not UTF-8 in a text tensor (TensorFlow's ``tf.summary.text`` takes any
    bytes): TensorBoard's route fails with a 500 for the whole tag; boardd shows the text with
    U+FFFD in their place, Markdown rendered, as a scalar and as a table cell."""
    assert b"\xff" in NOT_UTF8
    for markdown in ({}, {"markdown": "false"}):
        params = {"run": "not_utf8", "tag": "t", **markdown}
        tb, ours = plugin_defaults.both("GET", TEXT, params=params)
        assert (tb.status_code, ours.status_code) == (500, 200), ours.text
        scalar, vector = (p["text"] for p in ours.json())
        for html in (scalar, vector):
            assert "\ufffd\ufffd then text" in html
            assert ("<strong>bold</strong>" in html) is not bool(markdown)
        assert "<table>" in vector and "<table>" not in scalar


def test_defaults_answer_100_steps(plugin_defaults: Pair) -> None:
    """boardd answers 100 of the 130 steps, as `tensorboard --logdir` does (its text route asks
    for 100 and its Rust data server keeps 100); the Python loader this test compares with
    (--load_fast=false) keeps 10 text tensors per series (docs/tensorboard.md). Both end at the
    last step, with the same text; boardd's steps are in order and distinct."""
    params = {"run": "long", "tag": "t/text_summary"}
    tb, ours = plugin_defaults.both("GET", TEXT, params=params)
    assert len(tb.json()) == 10
    assert len(ours.json()) == 100 < LONG_STEPS
    assert ours.json()[-1] == tb.json()[-1]
    assert ours.json()[-1]["step"] == LONG_STEPS - 1
    steps = [p["step"] for p in ours.json()]
    assert steps == sorted(set(steps))


def test_unknown_and_missing_parameters(keep_all: Pair) -> None:
    # An unknown run or tag: an empty list, as TensorBoard answers.
    for params in ({"run": "nope", "tag": "md/text_summary"}, {"run": "curves", "tag": "nope"}):
        tb, ours = keep_all.both("GET", TEXT, params=params)
        assert (tb.status_code, ours.status_code) == (200, 200)
        assert ours.json() == tb.json() == []
    # A missing one: TensorBoard fails (500); boardd answers 400 naming it.
    for params, missing in (({"run": "curves"}, "tag="), ({"tag": "md/text_summary"}, "run=")):
        tb, ours = keep_all.both("GET", TEXT, params=params)
        assert (tb.status_code, ours.status_code) == (500, 400)
        assert missing in ours.json()["error"]["message"]


def test_plugin_without_data_has_empty_tags(plugin_defaults: Pair) -> None:
    """The plugin logdir has no audio: its tags route answers {} as TensorBoard's does, and a
    listing of the plugin shows it disabled."""
    tb, ours = plugin_defaults.both("GET", "/data/plugin/audio/tags")
    assert (tb.status_code, ours.status_code) == (200, 200)
    assert ours.json() == tb.json() == {}
    tb, ours = plugin_defaults.both("GET", "/data/plugins_listing")
    assert ours.json()["audio"]["enabled"] is tb.json()["audio"]["enabled"] is False
