"""TensorBoard's PR-curves routes on boardd, against the real TensorBoard on the same logdir."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.tensorboard.conftest import Pair
from tests.tensorboard.plugin_logdir import LONG_STEPS, plugin_pair

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

PR = "/data/plugin/pr_curves/pr_curves"


@pytest.fixture(scope="module")
def plugin_defaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with plugin_pair(tmp_path_factory, None) as p:
        yield p


def test_tags(keep_all: Pair) -> None:
    tb, ours = keep_all.both("GET", "/data/plugin/pr_curves/tags")
    assert ours.status_code == 200
    assert ours.json() == tb.json()
    assert set(ours.json()) == {"curves"}


def test_every_curve(keep_all: Pair) -> None:
    tags = keep_all.tb.get("/data/plugin/pr_curves/tags").json()
    count = 0
    for run, by_tag in tags.items():
        for tag in by_tag:
            tb, ours = keep_all.both("GET", PR, params={"run": run, "tag": tag})
            assert ours.status_code == 200, ours.text
            assert ours.json() == tb.json(), (run, tag)
            count += len(ours.json()[run])
    assert count == 20
    entry = ours.json()["curves"][0]
    assert set(entry) == {
        "wall_time", "step", "precision", "recall", "true_positives", "false_positives",
        "true_negatives", "false_negatives", "thresholds",
    }  # fmt: skip
    # Cut after the last threshold with any positive (11 thresholds written for pr/b).
    assert len(entry["thresholds"]) <= 11 and entry["thresholds"][0] == 0.0


def test_several_runs(keep_all: Pair) -> None:
    """Runs repeated in the query; every run must have the tag (else 400, as TensorBoard)."""
    tb, ours = keep_all.both("GET", PR, params={"run": ["curves", "curves"], "tag": "pr/a"})
    assert ours.json() == tb.json()
    tb, ours = keep_all.both("GET", PR, params={"run": ["curves", "train"], "tag": "pr/a"})
    assert (tb.status_code, ours.status_code) == (400, 400)
    assert "No PR curves could be found for run 'train'" in ours.json()["error"]["message"]


def test_defaults_sample_100_steps(plugin_defaults: Pair) -> None:
    """100 of 130 steps on both sides, ending at the same last curve; the steps in between
    differ (boardd's seeded choice by step, TensorBoard's reservoir)."""
    tb, ours = plugin_defaults.both("GET", PR, params={"run": "long", "tag": "p"})
    assert len(ours.json()["long"]) == len(tb.json()["long"]) == 100 < LONG_STEPS
    assert ours.json()["long"][-1] == tb.json()["long"][-1]


def test_missing_parameters(keep_all: Pair) -> None:
    # TensorBoard means to answer 400 here but passes the status as a content type, and
    # fails (500); boardd answers 400.
    for params, what in (({"tag": "pr/a"}, "No runs"), ({"run": "curves"}, "No tag")):
        tb, ours = keep_all.both("GET", PR, params=params)
        assert (tb.status_code, ours.status_code) == (500, 400)
        assert what in ours.json()["error"]["message"]
    tb, ours = keep_all.both("GET", PR, params={"run": "curves", "tag": "nope"})
    assert (tb.status_code, ours.status_code) == (400, 400)
