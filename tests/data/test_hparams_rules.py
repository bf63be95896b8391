"""ListSessionGroups, GetExperiment and ListMetricEvals of boardd.plugins.hparams.data, one test
per rule of the proto comments (api.proto), on real event files: TensorBoard's official hparams API
(tests/hparams_logdirs.py, write_rules: five trials, two of them one group, missing hparams
and metrics, metrics in sub-runs) and tensorboardX's add_hparams.

The official logdir's groups and their AVG-aggregated metric values:
g-a (t0, t1): lr .1, adam, 2 layers, dropout; accuracy .8, train/loss .3, validation/loss .7
g-b (t2, FAILURE): lr .01, sgd, 4 layers, no dropout; accuracy .35, train/loss 1.5
g-c (t3, no end info): lr .001, sgd-momentum, 8 layers, dropout; accuracy .95, validation/loss .3
g-d (t4): lr .05, adam, 4 layers, dropout missing; train/loss .7
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from boardd.data import experiments
from boardd.data.connections import open_store
from boardd.data.errors import BadRequest, NotFound
from boardd.plugins.hparams import data as H
from boardd.proto import hparams_api_pb2 as api
from tests.conftest import ingest
from tests.hparams_logdirs import WALL, write_rules, write_rules_tensorboardx

ALL = ["STATUS_FAILURE", "STATUS_RUNNING", "STATUS_SUCCESS", "STATUS_UNKNOWN"]


def _open(logdir: Path, db: Path) -> tuple[apsw.Connection, int]:
    ingest(logdir, db, experiment="logs")
    connection = open_store(db)
    row = experiments.experiment(connection)
    assert row is not None
    return connection, row.id


@pytest.fixture(scope="module")
def official(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[apsw.Connection, int]]:
    root = tmp_path_factory.mktemp("official")
    connection, exp_id = _open(write_rules(root), root / "store.sqlite")
    yield connection, exp_id
    connection.close()


@pytest.fixture(scope="module")
def tbx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[apsw.Connection, int]]:
    root = tmp_path_factory.mktemp("tbx")
    connection, exp_id = _open(write_rules_tensorboardx(root), root / "store.sqlite")
    yield connection, exp_id
    connection.close()


def groups(
    store: tuple[apsw.Connection, int], request: dict[str, Any], **options: Any
) -> dict[str, Any]:
    full = {"allowedStatuses": ALL, "startIndex": 0, "sliceSize": 100, **request}
    message = H.parse_request(json.dumps(full), api.ListSessionGroupsRequest)
    return H.session_groups_json(store[0], store[1], message, **options)


def names(answer: dict[str, Any]) -> list[str]:
    return [g["name"] for g in answer["sessionGroups"]]


def metric(group: dict[str, Any], group_name: str, tag: str) -> float | None:
    for value in group["metricValues"]:
        if value["name"] == {"group": group_name, "tag": tag}:
            return float(value["value"])
    return None


def by_name(answer: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in answer["sessionGroups"] if g["name"] == name)


def bad(store: tuple[apsw.Connection, int], request: dict[str, Any]) -> str:
    with pytest.raises(BadRequest) as caught:
        groups(store, request)
    return caught.value.message


TRAIN_LOSS = {"group": "train", "tag": "loss"}
VALIDATION_LOSS = {"group": "validation", "tag": "loss"}
ACCURACY = {"group": "", "tag": "accuracy"}


# -- sessions and groups ------------------------------------------------------------------------


def test_sessions_with_one_group_name_form_one_group(official: Any) -> None:
    answer = groups(official, {})
    assert names(answer) == ["g-a", "g-b", "g-c", "g-d"]
    assert [s["name"] for s in by_name(answer, "g-a")["sessions"]] == ["t0", "t1"]
    assert by_name(answer, "g-a")["hparams"] == {
        "lr": 0.1,
        "opt": "adam",
        "layers": 2.0,
        "dropout": True,
    }


def test_a_session_without_group_name_is_its_own_group(tbx: Any) -> None:
    answer = groups(tbx, {})
    assert answer["totalSize"] == 4
    for group in answer["sessionGroups"]:
        assert [s["name"] for s in group["sessions"]] == [group["name"]]
        assert group["name"].startswith("exp/")


def test_named_a_session_shows_as_the_run_the_user_named(tbx: Any, official: Any) -> None:
    """boardd's names (``named=True``): add_hparams' timestamped sub-runs (``exp/1700000001.5``)
    show as the writer's run (``exp``), the run whose curves the user logged; the sub-run stays
    the session's name. Without them (TensorBoard's routes), TensorBoard's answer as it is."""
    answer = groups(tbx, {}, named=True)
    assert answer["totalSize"] == 4
    for group in answer["sessionGroups"]:
        (session,) = group["sessions"]
        assert session["name"] == group["name"] and group["name"].startswith("exp/")
        assert session["run"] == "exp" and group["displayName"] == "exp"
    plain = groups(tbx, {})
    assert all(
        "displayName" not in g and all("run" not in s for s in g["sessions"])
        for g in plain["sessionGroups"]
    )
    # Without a sub-run: the session's own run, a named group's own name.
    answer = groups(official, {}, named=True)
    assert {g["name"]: g["displayName"] for g in answer["sessionGroups"]} == {
        g: g for g in ("g-a", "g-b", "g-c", "g-d")
    }
    assert [s["run"] for s in by_name(answer, "g-a")["sessions"]] == ["t0", "t1"]
    # The encoded answer (the HTTP API's) says the same, and is kept apart from the plain one.
    request = {"allowedStatuses": ALL, "sliceSize": 100}
    message = H.parse_request(json.dumps(request), api.ListSessionGroupsRequest)
    source = [H.Source(tbx[0], tbx[1])]
    encoded = json.loads(H.session_groups_bytes_of(source, message, named=True))
    assert {s["run"] for g in encoded["sessionGroups"] for s in g["sessions"]} == {"exp"}
    plain_bytes = json.loads(H.session_groups_bytes_of(source, message))
    assert all("displayName" not in g for g in plain_bytes["sessionGroups"])


@pytest.mark.parametrize(
    ("session", "run"),
    [
        ("lr0.01_bs128_sgd/1796660406.1974096", "lr0.01_bs128_sgd"),
        ("sweep/lr0.01/1700000000.0", "sweep/lr0.01"),
        ("exp/1700000001.5", "exp"),
        # Not add_hparams' own name: a sub-run the user named, or a trial.
        ("lr0.01/trial", "lr0.01/trial"),
        ("lr0.01/12.5", "lr0.01/12.5"),
        ("lr0.01/1796660406", "lr0.01/1796660406"),
        ("alpha/trial_0", "alpha/trial_0"),
        # The logdir's root wrote it: no run of the user's above it.
        ("1796660406.1974096", "1796660406.1974096"),
        ("run", "run"),
    ],
)
def test_named_run(session: str, run: str) -> None:
    assert H.named_run(session) == run


def test_metric_values_are_the_last_scalar_of_the_run_or_its_sub_run(official: Any) -> None:
    t0 = by_name(groups(official, {}), "g-a")["sessions"][0]
    values = {(v["name"]["group"], v["name"]["tag"]): v for v in t0["metricValues"]}
    assert values[("", "accuracy")]["value"] == pytest.approx(0.7)
    assert values[("", "accuracy")]["trainingStep"] == 10
    assert values[("", "accuracy")]["wallTimeSecs"] == WALL + 10
    assert values[("train", "loss")]["value"] == pytest.approx(0.4)
    assert values[("validation", "loss")]["value"] == pytest.approx(0.6)


def test_a_missing_metric_is_left_out_of_the_session(official: Any) -> None:
    t4 = by_name(groups(official, {}), "g-d")["sessions"][0]
    assert [v["name"] for v in t4["metricValues"]] == [TRAIN_LOSS]


def test_status_comes_from_end_info(official: Any) -> None:
    answer = groups(official, {})
    assert [s["status"] for s in by_name(answer, "g-a")["sessions"]] == ["STATUS_SUCCESS"] * 2
    assert by_name(answer, "g-b")["sessions"][0]["status"] == "STATUS_FAILURE"
    assert by_name(answer, "g-b")["sessions"][0]["endTimeSecs"] == WALL + 102


def test_without_end_info_running_while_data_comes_then_unknown(official: Any) -> None:
    recent = groups(official, {}, idle_seconds=60, now=WALL + 30)
    session = by_name(recent, "g-c")["sessions"][0]
    assert (session["status"], session["endTimeSecs"]) == ("STATUS_RUNNING", 0.0)
    idle = groups(official, {}, idle_seconds=60, now=WALL + 200)
    assert by_name(idle, "g-c")["sessions"][0]["status"] == "STATUS_UNKNOWN"


# -- allowed_statuses ---------------------------------------------------------------------------


def test_allowed_statuses_keep_only_those_sessions(official: Any) -> None:
    assert names(groups(official, {"allowedStatuses": ["STATUS_FAILURE"]})) == ["g-b"]
    assert names(groups(official, {"allowedStatuses": ["STATUS_UNKNOWN"]})) == ["g-c"]
    running = groups(
        official, {"allowedStatuses": ["STATUS_RUNNING"]}, idle_seconds=60, now=WALL + 30
    )
    assert names(running) == ["g-c"]


def test_no_allowed_status_allows_none_as_tensorboard(official: Any) -> None:
    assert groups(official, {"allowedStatuses": []}) == {"sessionGroups": [], "totalSize": 0}


# -- filters ------------------------------------------------------------------------------------


def test_filter_regexp_is_a_partial_match(official: Any) -> None:
    partial = groups(official, {"colParams": [{"hparam": "opt", "filterRegexp": "sgd"}]})
    assert names(partial) == ["g-b", "g-c"]
    anchored = groups(official, {"colParams": [{"hparam": "opt", "filterRegexp": "^sgd$"}]})
    assert names(anchored) == ["g-b"]


def test_filter_interval_is_closed(official: Any) -> None:
    col = {"hparam": "lr", "filterInterval": {"minValue": 0.01, "maxValue": 0.05}}
    assert names(groups(official, {"colParams": [col]})) == ["g-b", "g-d"]


def test_filter_interval_on_a_metric_uses_the_group_value(official: Any) -> None:
    col = {"metric": TRAIN_LOSS, "filterInterval": {"minValue": 0.0, "maxValue": 0.5}}
    # g-a's average .3 passes; g-c has no train loss: a missing value passes.
    assert names(groups(official, {"colParams": [col]})) == ["g-a", "g-c"]


def test_filter_discrete_keeps_listed_values(official: Any) -> None:
    col = {"hparam": "opt", "filterDiscrete": ["adam", "rmsprop"]}
    assert names(groups(official, {"colParams": [col]})) == ["g-a", "g-d"]
    layers = {"hparam": "layers", "filterDiscrete": [4, 8]}
    assert names(groups(official, {"colParams": [layers]})) == ["g-b", "g-c", "g-d"]


def test_missing_values_pass_filters_unless_excluded(official: Any) -> None:
    col = {"hparam": "dropout", "filterDiscrete": [True]}
    assert names(groups(official, {"colParams": [col]})) == ["g-a", "g-c", "g-d"]
    excluded = {**col, "excludeMissingValues": True}
    assert names(groups(official, {"colParams": [excluded]})) == ["g-a", "g-c"]


def test_exclude_missing_values_without_a_filter(official: Any) -> None:
    col = {"metric": VALIDATION_LOSS, "excludeMissingValues": True}
    assert names(groups(official, {"colParams": [col]})) == ["g-a", "g-c"]


def test_every_filter_must_pass(official: Any) -> None:
    cols = [
        {"hparam": "opt", "filterRegexp": "^(adam|sgd)$"},
        {"hparam": "layers", "filterInterval": {"minValue": 3, "maxValue": 8}},
    ]
    assert names(groups(official, {"colParams": cols})) == ["g-b", "g-d"]


# -- ordering -----------------------------------------------------------------------------------


def test_ascending_missing_values_last_by_default(official: Any) -> None:
    col = {"metric": TRAIN_LOSS, "order": "ORDER_ASC"}
    assert names(groups(official, {"colParams": [col]})) == ["g-a", "g-d", "g-b", "g-c"]


def test_ascending_missing_values_first(official: Any) -> None:
    col = {"metric": TRAIN_LOSS, "order": "ORDER_ASC", "missingValuesFirst": True}
    assert names(groups(official, {"colParams": [col]})) == ["g-c", "g-a", "g-d", "g-b"]


def test_descending_missing_values_last(official: Any) -> None:
    col = {"metric": TRAIN_LOSS, "order": "ORDER_DESC"}
    assert names(groups(official, {"colParams": [col]})) == ["g-b", "g-d", "g-a", "g-c"]


def test_descending_missing_values_first(official: Any) -> None:
    col = {"metric": TRAIN_LOSS, "order": "ORDER_DESC", "missingValuesFirst": True}
    assert names(groups(official, {"colParams": [col]})) == ["g-c", "g-b", "g-d", "g-a"]


def test_missing_values_first_is_ignored_without_order(official: Any) -> None:
    col = {"metric": TRAIN_LOSS, "missingValuesFirst": True}
    assert names(groups(official, {"colParams": [col]})) == ["g-a", "g-b", "g-c", "g-d"]


def test_first_ordered_column_is_the_most_significant(official: Any) -> None:
    cols = [
        {"hparam": "opt", "order": "ORDER_ASC"},
        {"hparam": "dropout"},  # not ordered: not a key
        {"hparam": "lr", "order": "ORDER_DESC"},
    ]
    assert names(groups(official, {"colParams": cols})) == ["g-a", "g-d", "g-b", "g-c"]
    swapped = [cols[2], cols[0]]
    assert names(groups(official, {"colParams": swapped})) == ["g-a", "g-d", "g-b", "g-c"]
    cols = [{"hparam": "layers", "order": "ORDER_DESC"}, {"hparam": "lr", "order": "ORDER_ASC"}]
    assert names(groups(official, {"colParams": cols})) == ["g-c", "g-b", "g-d", "g-a"]


def test_group_name_is_the_last_key_whatever_the_order(official: Any) -> None:
    # g-b and g-d both have 4 layers: by name, ascending, in both directions.
    asc = {"hparam": "layers", "order": "ORDER_ASC"}
    assert names(groups(official, {"colParams": [asc]})) == ["g-a", "g-b", "g-d", "g-c"]
    desc = {"hparam": "layers", "order": "ORDER_DESC"}
    assert names(groups(official, {"colParams": [desc]})) == ["g-c", "g-b", "g-d", "g-a"]


# -- aggregation --------------------------------------------------------------------------------


def test_avg_aggregation_averages_each_metric(official: Any) -> None:
    for request in ({}, {"aggregationType": "AGGREGATION_AVG"}):
        g_a = by_name(groups(official, request), "g-a")
        accuracy = next(v for v in g_a["metricValues"] if v["name"] == ACCURACY)
        assert accuracy["value"] == pytest.approx(0.8)
        assert accuracy["trainingStep"] == 11  # (10 + 12) // 2
        assert accuracy["wallTimeSecs"] == WALL + 11
        assert metric(g_a, "train", "loss") == pytest.approx(0.3)


def test_median_takes_the_lower_middle_session(official: Any) -> None:
    request = {"aggregationType": "AGGREGATION_MEDIAN", "aggregationMetric": ACCURACY}
    g_a = by_name(groups(official, request), "g-a")
    # accuracy .7 (t0) and .9 (t1): the lower middle is t0, whose metrics the group shows.
    assert metric(g_a, "", "accuracy") == pytest.approx(0.7)
    assert metric(g_a, "train", "loss") == pytest.approx(0.4)


def test_min_takes_the_session_with_the_smallest_value(official: Any) -> None:
    request = {"aggregationType": "AGGREGATION_MIN", "aggregationMetric": TRAIN_LOSS}
    g_a = by_name(groups(official, request), "g-a")
    assert metric(g_a, "train", "loss") == pytest.approx(0.2)  # t1
    assert metric(g_a, "", "accuracy") == pytest.approx(0.9)


def test_max_takes_the_session_with_the_largest_value(official: Any) -> None:
    request = {"aggregationType": "AGGREGATION_MAX", "aggregationMetric": TRAIN_LOSS}
    g_a = by_name(groups(official, request), "g-a")
    assert metric(g_a, "train", "loss") == pytest.approx(0.4)  # t0
    assert metric(g_a, "validation", "loss") == pytest.approx(0.6)


def test_sessions_without_the_aggregation_metric_are_left_out(official: Any) -> None:
    request = {"aggregationType": "AGGREGATION_MAX", "aggregationMetric": VALIDATION_LOSS}
    answer = groups(official, request)
    # TensorBoard answers 500 here; boardd: a group where no session has it shows no metrics.
    assert by_name(answer, "g-b")["metricValues"] == []
    assert by_name(answer, "g-b")["sessions"][0]["metricValues"]  # the session keeps its own
    assert metric(by_name(answer, "g-a"), "validation", "loss") == pytest.approx(0.8)


def test_filters_and_order_apply_to_aggregated_values(official: Any) -> None:
    request = {
        "aggregationType": "AGGREGATION_MIN",
        "aggregationMetric": ACCURACY,
        "colParams": [
            {"metric": TRAIN_LOSS, "filterInterval": {"minValue": 0.35, "maxValue": 2}},
            {"metric": ACCURACY, "order": "ORDER_DESC"},
        ],
    }
    # g-a's min-accuracy session is t0 (train loss .4): it passes; sorted by accuracy.
    assert names(groups(official, request)) == ["g-c", "g-a", "g-b", "g-d"]


# -- paging -------------------------------------------------------------------------------------


def test_slice_and_total_size(official: Any) -> None:
    answer = groups(official, {"startIndex": 1, "sliceSize": 2})
    assert (names(answer), answer["totalSize"]) == (["g-b", "g-c"], 4)


def test_slice_past_the_end(official: Any) -> None:
    answer = groups(official, {"startIndex": 3, "sliceSize": 10})
    assert (names(answer), answer["totalSize"]) == (["g-d"], 4)
    answer = groups(official, {"startIndex": 10, "sliceSize": 10})
    assert (names(answer), answer["totalSize"]) == ([], 4)


def test_slice_size_zero_returns_none(official: Any) -> None:
    assert groups(official, {"sliceSize": 0}) == {"sessionGroups": [], "totalSize": 4}


def test_total_size_counts_the_filtered_list(official: Any) -> None:
    col = {"hparam": "opt", "filterRegexp": "adam"}
    answer = groups(official, {"colParams": [col], "sliceSize": 1})
    assert (names(answer), answer["totalSize"]) == (["g-a"], 2)


# -- bad requests -------------------------------------------------------------------------------


def test_unknown_hparam_column(official: Any) -> None:
    message = bad(official, {"colParams": [{"hparam": "momentum", "order": "ORDER_ASC"}]})
    assert "unknown hparam 'momentum'" in message and "lr" in message


def test_a_declared_hparam_no_session_has_is_a_column(official: Any) -> None:
    col = {"hparam": "unused", "order": "ORDER_ASC", "excludeMissingValues": True}
    assert groups(official, {"colParams": [col]})["totalSize"] == 0


def test_unknown_metric_column(official: Any) -> None:
    message = bad(official, {"colParams": [{"metric": {"group": "test", "tag": "loss"}}]})
    assert "unknown metric test/loss" in message and "validation/loss" in message


def test_a_column_needs_a_name(official: Any) -> None:
    assert "give hparam or metric" in bad(official, {"colParams": [{"order": "ORDER_ASC"}]})


def test_regexp_that_does_not_compile(official: Any) -> None:
    message = bad(official, {"colParams": [{"hparam": "opt", "filterRegexp": "(adam"}]})
    assert "does not compile" in message


def test_regexp_on_a_numeric_column(official: Any) -> None:
    assert "string hparams only" in bad(
        official, {"colParams": [{"hparam": "lr", "filterRegexp": "0.1"}]}
    )
    assert "string hparams only" in bad(
        official, {"colParams": [{"metric": ACCURACY, "filterRegexp": "0"}]}
    )


def test_interval_on_a_string_column(official: Any) -> None:
    col = {"hparam": "opt", "filterInterval": {"minValue": 0, "maxValue": 1}}
    assert "numeric columns only" in bad(official, {"colParams": [col]})


def test_inverted_interval(official: Any) -> None:
    col = {"hparam": "lr", "filterInterval": {"minValue": 1, "maxValue": 0}}
    assert "above maxValue" in bad(official, {"colParams": [col]})


def test_negative_paging(official: Any) -> None:
    assert "give 0 or more" in bad(official, {"startIndex": -1})
    assert "give 0 or more" in bad(official, {"sliceSize": -5})


def test_aggregation_needs_a_known_metric(official: Any) -> None:
    assert "aggregationMetric is required" in bad(official, {"aggregationType": "AGGREGATION_MIN"})
    message = bad(
        official,
        {"aggregationType": "AGGREGATION_MEDIAN", "aggregationMetric": {"tag": "nope"}},
    )
    assert "unknown metric nope" in message


def test_a_request_that_is_not_the_message() -> None:
    for text in (
        '{"colParams": 3}',
        '{"sliceSize": "many"}',
        '{"unknownField": 1}',
        "[",
        '{"allowedStatuses": ["DONE"]}',
    ):
        with pytest.raises(BadRequest, match="not a valid ListSessionGroupsRequest"):
            H.parse_request(text, api.ListSessionGroupsRequest)


# -- experiment and metric evals ----------------------------------------------------------------


def test_experiment_hparams_limit_and_metrics(official: Any) -> None:
    connection, exp_id = official
    full = H.experiment_json(connection, exp_id)
    assert [h["name"] for h in full["hparamInfos"]] == ["dropout", "layers", "lr", "opt", "unused"]
    assert len(full["metricInfos"]) == 3
    cut = H.experiment_json(connection, exp_id, hparams_limit=2, include_metrics=False)
    assert [h["name"] for h in cut["hparamInfos"]] == ["dropout", "layers"]
    assert cut["metricInfos"] == []
    message = H.experiment(H.Source(connection, exp_id))
    assert message.hparam_infos[2].display_name == "learning rate"


def test_inferred_experiment_types_domains_and_metrics(tbx: Any) -> None:
    # tensorboardX declares its experiment without domains; infer from TensorBoard's own logdir
    # without one: see tests/tensorboard/test_hparams_core.py. Here: tensorboardX's metrics.
    connection, exp_id = tbx
    found = H.experiment_json(connection, exp_id)
    assert [m["name"] for m in found["metricInfos"]] == [
        {"tag": "hparam/accuracy", "group": ""},
        {"tag": "hparam/loss", "group": ""},
    ]


def test_metric_evals_lists_the_series(official: Any) -> None:
    connection, exp_id = official
    request = api.ListMetricEvalsRequest(session_name="t1")
    request.metric_name.group = "validation"
    request.metric_name.tag = "loss"
    evals = H.list_metric_evals(connection, exp_id, request)
    assert [(e.wall_time, e.step) for e in evals] == [(WALL, 0), (WALL + 12, 12)]
    assert evals[1].value == pytest.approx(0.8)
    request.session_name = "t9"
    with pytest.raises(NotFound, match=r"No scalar data for run='t9/validation', tag='loss'"):
        H.list_metric_evals(connection, exp_id, request)


def test_messages_match_the_json(official: Any) -> None:
    connection, exp_id = official
    request = api.ListSessionGroupsRequest(allowed_statuses=[1, 2, 3, 0], slice_size=2)
    message = H.list_session_groups(connection, exp_id, request)
    assert message.total_size == 4
    assert [g.name for g in message.session_groups] == ["g-a", "g-b"]
    assert message.session_groups[0].hparams["opt"].string_value == "adam"
