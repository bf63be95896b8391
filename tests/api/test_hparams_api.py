"""``/api/v1/hparams/...`` over real HTTP (served in a thread) on a store ingested from a logdir
written with TensorBoard's official hparams API: GET with ``request=`` and POST, proto3 JSON
answers, caching, and bad requests answered with boardd's JSON error (never a 500), on these
routes and on TensorBoard's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from tests.conftest import LiveStore, ThreadedServer, ingest
from tests.hparams_logdirs import WALL, RunWriter, start_pb, write_rules, write_rules_tensorboardx

pytestmark = pytest.mark.allow_leaks("module-scoped server")

BASE = "/api/v1/hparams"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    root = tmp_path_factory.mktemp("hparams_api")
    logdir = write_rules(root)
    db = root / "store.sqlite"
    ingest(logdir, db, experiment="logs")
    running = ThreadedServer(create_app([ExperimentSpec("logs", logdir, db)])).start()
    yield running
    running.stop()


def get(server: ThreadedServer, route: str, request: Any = None, **params: str) -> httpx.Response:
    if request is not None:
        params["request"] = request if isinstance(request, str) else json.dumps(request)
    return httpx.get(f"{server.url}{BASE}/{route}", params=params, timeout=30)


def post(server: ThreadedServer, route: str, body: Any) -> httpx.Response:
    content = body if isinstance(body, str | bytes) else json.dumps(body)
    return httpx.post(f"{server.url}{BASE}/{route}", content=content, timeout=30)


def error(response: httpx.Response, status: int = 400) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    return str(body["error"]["message"])


def test_experiment_without_a_request(server: ThreadedServer) -> None:
    response = get(server, "experiment")
    assert response.status_code == 200, response.text
    found = response.json()
    assert [h["name"] for h in found["hparamInfos"]] == ["dropout", "layers", "lr", "opt", "unused"]
    assert found["hparamInfos"][2]["domainInterval"] == {"minValue": 0.0001, "maxValue": 1.0}
    assert found["metricInfos"][1]["datasetType"] == "DATASET_TRAINING"
    limited = get(server, "experiment", {"hparamsLimit": 1, "includeMetrics": False}).json()
    assert ([h["name"] for h in limited["hparamInfos"]], limited["metricInfos"]) == (
        ["dropout"],
        [],
    )


def test_session_groups_by_post_and_by_get(server: ThreadedServer) -> None:
    request = {
        "colParams": [
            {"hparam": "opt", "filterRegexp": "^(adam|sgd)$"},
            {"metric": {"group": "train", "tag": "loss"}, "order": "ORDER_ASC"},
        ],
        "sliceSize": 10,
    }
    by_post = post(server, "session_groups", request)
    assert by_post.status_code == 200, by_post.text
    found = by_post.json()
    # No allowedStatuses on /api/v1: every status.
    assert [g["name"] for g in found["sessionGroups"]] == ["g-a", "g-d", "g-b"]
    assert found["totalSize"] == 3
    session = found["sessionGroups"][0]["sessions"][0]
    assert session["status"] == "STATUS_SUCCESS"
    assert set(session) == {
        "name",
        "run",
        "startTimeSecs",
        "endTimeSecs",
        "status",
        "modelUri",
        "metricValues",
        "monitorUrl",
    }
    # boardd's names: a session in a run of its own shows as that run, a named group as its name.
    assert session["run"] == session["name"] == "t0"
    assert found["sessionGroups"][0]["displayName"] == "g-a"
    assert get(server, "session_groups", request).json() == found


def test_add_hparams_sessions_show_as_the_run_the_user_named(tmp_path: Path) -> None:
    """tensorboardX's add_hparams writes each session in a timestamped sub-run of the writer's
    run (``exp/1700000001.5``): /api/v1 names the run the user named (``exp``) as each
    session's ``run`` and its group's ``displayName``, the sub-run staying its name (what
    metric_evals takes); TensorBoard's route answers as TensorBoard does, without them."""
    logdir = write_rules_tensorboardx(tmp_path)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, experiment="logs")
    running = ThreadedServer(create_app([ExperimentSpec("logs", logdir, db)])).start()
    try:
        ours = get(running, "session_groups", {"sliceSize": 10}).json()
        assert ours["totalSize"] == 4
        for group in ours["sessionGroups"]:
            (session,) = group["sessions"]
            assert session["name"].startswith("exp/") and group["name"] == session["name"]
            assert session["run"] == "exp" and group["displayName"] == "exp"
            evals = {"sessionName": session["name"], "metricName": {"tag": "hparam/loss"}}
            assert len(get(running, "metric_evals", evals).json()) == 1
        tensorboards = httpx.post(
            f"{running.url}/data/plugin/hparams/session_groups",
            content=json.dumps({"allowedStatuses": ["STATUS_SUCCESS"], "sliceSize": 10}),
            headers={"X-XSRF-Protected": "1"},
            timeout=30,
        ).json()
        assert [g["name"] for g in tensorboards["sessionGroups"]] == [
            g["name"] for g in ours["sessionGroups"]
        ]
        for group in tensorboards["sessionGroups"]:
            assert "displayName" not in group
            assert all("run" not in session for session in group["sessions"])
    finally:
        running.stop()


def test_allowed_statuses_when_given(server: ThreadedServer) -> None:
    found = get(server, "session_groups", {"allowedStatuses": ["STATUS_FAILURE"], "sliceSize": 9})
    assert [g["name"] for g in found.json()["sessionGroups"]] == ["g-b"]


def test_metric_evals(server: ThreadedServer) -> None:
    request = {"sessionName": "t0", "metricName": {"group": "", "tag": "accuracy"}}
    points = post(server, "metric_evals", request).json()
    assert [p[:2] for p in points] == [[WALL, 0], [WALL + 10, 10]]
    assert get(server, "metric_evals", request).json() == points


def test_a_get_is_cached_with_an_etag(server: ThreadedServer) -> None:
    first = get(server, "session_groups", {"sliceSize": 2})
    etag = first.headers["etag"]
    again = httpx.get(str(first.request.url), headers={"if-none-match": etag}, timeout=30)
    assert again.status_code == 304


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("{not json", "not a valid ListSessionGroupsRequest"),
        ('{"colParams": [{"hparam": "momentum"}]}', "unknown hparam 'momentum'"),
        ('{"colParams": [{"hparam": "opt", "filterRegexp": "(("}]}', "does not compile"),
        ('{"colParams": [{"hparam": "lr", "filterRegexp": "1"}]}', "string hparams only"),
        (
            '{"colParams": [{"hparam": "opt", "filterInterval": {"minValue": 0}}]}',
            "numeric columns only",
        ),
        ('{"startIndex": -3}', "give 0 or more"),
        ('{"aggregationType": "AGGREGATION_MAX"}', "aggregationMetric is required"),
        ('{"sliceSize": 10, "colour": "red"}', "not a valid"),
    ],
)
def test_bad_requests_are_400_with_the_reason(server: ThreadedServer, body: str, says: str) -> None:
    assert says in error(post(server, "session_groups", body))
    assert says in error(get(server, "session_groups", body))


def test_bad_requests_on_tensorboards_route_are_400_too(server: ThreadedServer) -> None:
    response = httpx.post(
        f"{server.url}/data/plugin/hparams/session_groups",
        content='{"colParams": [{"metric": {"tag": "nope"}, "order": "ORDER_ASC"}]}',
        headers={"X-XSRF-Protected": "1"},
        timeout=30,
    )
    assert "unknown metric nope" in error(response)
    response = httpx.get(
        f"{server.url}/data/plugin/hparams/download_data",
        params={"format": "xml", "request": "{}"},
        timeout=30,
    )
    assert "give one of csv, json, latex" in error(response)


def test_unknown_experiment_is_404(server: ThreadedServer) -> None:
    assert "no experiment 'other'" in error(get(server, "experiment", experiment="other"), 404)


def test_unknown_parameter_is_400(server: ThreadedServer) -> None:
    assert "unknown parameter(s) sort" in error(get(server, "session_groups", sort="lr"))


def test_a_commit_is_seen_by_the_next_answer(tmp_path: Path) -> None:
    live = LiveStore("exp", tmp_path / "logs", tmp_path / "store.sqlite")
    running: ThreadedServer | None = None
    try:
        w = RunWriter(live.logdir, "a")
        w.summary(start_pb({"lr": 0.1}, "a"))
        w.scalars("acc", {0: 0.5})
        w.flush()
        live.commit()
        running = ThreadedServer(create_app([live.spec])).start()
        before = get(running, "session_groups", {"sliceSize": 5}).json()
        assert before["sessionGroups"][0]["metricValues"][0]["value"] == 0.5
        w.scalars("acc", {1: 0.25})
        w.close()
        live.commit()
        after = get(running, "session_groups", {"sliceSize": 5}).json()
        assert after["sessionGroups"][0]["metricValues"][0]["value"] == 0.25
    finally:
        if running is not None:
            running.stop()
        live.close()
