"""The hparams routes against the real TensorBoard on the same logdirs: one written with
TensorBoard's official hparams API (experiment with domains and metric groups, repeated trials
in one group, sub-run metrics, a session without end info, missing values), the same without
its experiment summary (inferred), and one written by tensorboardX's ``add_hparams``. The
exhaustive request-by-request suite is the parity suite's; these are its first checks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.hparams import summary_v2 as hp
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from tests.api.conftest import WALL
from tests.hparams_logdirs import (
    RULES_TBX_TRIALS,
    RULES_TRIALS,
    write_rules,
    write_rules_tensorboardx,
)
from tests.tensorboard.conftest import Pair, pair

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

XSRF = {"X-XSRF-Protected": "1"}
ALL_STATUSES = ["STATUS_FAILURE", "STATUS_RUNNING", "STATUS_SUCCESS", "STATUS_UNKNOWN"]
UNFILTERED = {"allowedStatuses": ALL_STATUSES, "colParams": [], "startIndex": 0, "sliceSize": 100}


def _official_runs() -> set[str]:
    runs = {"."}
    for run, _, _, _, series in RULES_TRIALS:
        runs.update(run if not g else f"{run}/{g}" for g in series)
        runs.add(run)
    return runs


@pytest.fixture(scope="module")
def official(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("official")
    with pair(root, write_rules(root), None, _official_runs()) as p:
        yield p


@pytest.fixture(scope="module")
def inferred(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("inferred")
    runs = _official_runs() - {"."}
    with pair(root, write_rules(root, with_experiment=False), None, runs) as p:
        yield p


@pytest.fixture(scope="module")
def tbx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("tbx")
    runs = {"exp"} | {f"exp/{name}" for name, _, _ in RULES_TBX_TRIALS}
    with pair(root, write_rules_tensorboardx(root), None, runs) as p:
        yield p


def normalized(value: Any) -> Any:
    """An answer with what TensorBoard leaves in set order (an inferred string domain) sorted."""
    if isinstance(value, dict):
        out = {k: normalized(v) for k, v in value.items()}
        if "domainDiscrete" in out:
            out["domainDiscrete"] = sorted(out["domainDiscrete"], key=json.dumps)
        return out
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def post_both(p: Pair, route: str, request: dict[str, Any]) -> tuple[Any, Any]:
    tb, ours = p.both(
        "POST", f"/data/plugin/hparams/{route}", content=json.dumps(request), headers=XSRF
    )
    assert tb.status_code == 200, tb.text
    assert ours.status_code == 200, ours.text
    return normalized(tb.json()), normalized(ours.json())


@pytest.mark.parametrize("logdir", ["official", "inferred", "tbx"])
def test_experiment_as_tensorboard(logdir: str, request: pytest.FixtureRequest) -> None:
    p: Pair = request.getfixturevalue(logdir)
    tb, ours = post_both(p, "experiment", {"experimentName": ""})
    assert tb["hparamInfos"], tb  # the logdir has hparams: not the empty answer
    assert ours == tb


@pytest.mark.parametrize("logdir", ["official", "inferred", "tbx"])
def test_unfiltered_session_groups_as_tensorboard(
    logdir: str, request: pytest.FixtureRequest
) -> None:
    p: Pair = request.getfixturevalue(logdir)
    tb, ours = post_both(p, "session_groups", UNFILTERED)
    assert tb["totalSize"] >= 4, tb
    assert ours == tb


def test_sorted_filtered_aggregated_as_tensorboard(official: Pair) -> None:
    request = {
        **UNFILTERED,
        "colParams": [
            {"hparam": "opt", "filterRegexp": "sgd|adam", "order": "ORDER_DESC"},
            {"metric": {"group": "train", "tag": "loss"}, "order": "ORDER_ASC"},
            {"hparam": "lr", "filterInterval": {"minValue": 0.005, "maxValue": 1.0}},
        ],
        "aggregationType": "AGGREGATION_AVG",
    }
    tb, ours = post_both(official, "session_groups", request)
    assert ours == tb


def test_metric_evals_as_tensorboard(official: Pair) -> None:
    request = {"sessionName": "t1", "metricName": {"group": "validation", "tag": "loss"}}
    tb, ours = post_both(official, "metric_evals", request)
    assert len(tb) == 2
    assert ours == tb


@pytest.mark.parametrize("fmt", ["csv", "json", "latex"])
def test_download_data_as_tensorboard(official: Pair, fmt: str) -> None:
    params = {
        "format": fmt,
        "columnsVisibility": json.dumps([True] * 5 + [False, True, True]),
        "request": json.dumps(UNFILTERED),
    }
    tb, ours = official.both("GET", "/data/plugin/hparams/download_data", params=params)
    assert tb.status_code == ours.status_code == 200, ours.text
    if fmt == "json":
        assert ours.json() == tb.json()
    else:
        assert ours.text == tb.text


def test_plugins_listing_enables_hparams(tbx: Pair) -> None:
    tb, ours = tbx.both("GET", "/data/plugins_listing")
    assert tb.json()["hparams"]["enabled"] is True
    assert ours.json()["hparams"]["enabled"] is True


def test_official_logdir_has_what_the_tests_need(official: Pair, tmp_path: Path) -> None:
    """The builder's logdir holds a repeated trial (a group of two), a missing hparam and a
    missing metric: the comparisons above cover them."""
    _, ours = post_both(official, "session_groups", UNFILTERED)
    sizes = {g["name"]: len(g["sessions"]) for g in ours["sessionGroups"]}
    assert sizes["g-a"] == 2
    assert "dropout" not in next(g for g in ours["sessionGroups"] if g["name"] == "g-d")["hparams"]


LONG_METRIC_STEPS = 2_500


@pytest.fixture(scope="module")
def long_metric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """A session whose metric has more points than the scalars route's 1,000 (default
    sampling on both sides: boardd's store keeps 10,000)."""
    root = tmp_path_factory.mktemp("long_metric")
    logdir = root / "logs"
    writer = EventFileWriter(str(logdir / "trial"))
    pb = hp.hparams_pb({"lr": 0.1}, trial_id="trial", start_time_secs=int(WALL))
    writer.add_event(event_pb2.Event(wall_time=WALL, step=0, summary=pb))
    for step in range(LONG_METRIC_STEPS):
        value = summary_pb2.Summary.Value(tag="loss", simple_value=1.0 / (step + 1))
        writer.add_event(
            event_pb2.Event(
                wall_time=WALL + step, step=step, summary=summary_pb2.Summary(value=[value])
            )
        )
    writer.close()
    with pair(root, logdir, None, {"trial"}) as p:
        yield p


def test_metric_evals_downsampled_as_the_scalars_route(long_metric: Pair) -> None:
    """TensorBoard answers metric_evals through its scalars route: 1,000 points by default
    (boardd answered every point its store kept)."""
    request = {"sessionName": "trial", "metricName": {"group": "", "tag": "loss"}}
    tb, ours = post_both(long_metric, "metric_evals", request)
    assert len(ours) == len(tb) == 1_000
    # The same last point; which others is each one's sample (docs/tensorboard.md).
    assert ours[-1] == tb[-1] and ours[-1][1] == LONG_METRIC_STEPS - 1
    scalars = long_metric.boardd.url + "/data/plugin/scalars/scalars?run=trial&tag=loss"
    assert ours == httpx.get(scalars, timeout=30).json()
