"""The hparams routes TensorBoard's UI asks for on every page: TensorBoard's own empty answers
on a logdir without hparams summaries; the sessions (never the empty answer) on one with them."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from tensorboardX import SummaryWriter

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from tests.conftest import ThreadedServer, ingest
from tests.tensorboard.conftest import Pair

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

XSRF = {"X-XSRF-Protected": "1"}
REQUESTS = {
    "experiment": {"experimentName": ""},
    "session_groups": {
        "experimentName": "",
        "allowedStatuses": ["STATUS_FAILURE", "STATUS_RUNNING", "STATUS_SUCCESS", "STATUS_UNKNOWN"],
        "colParams": [],
        "startIndex": 0,
        "sliceSize": 1000,
    },
}


@pytest.mark.parametrize("route", sorted(REQUESTS))
def test_empty_answers_as_tensorboard(keep_all: Pair, route: str) -> None:
    path = f"/data/plugin/hparams/{route}"
    body = json.dumps(REQUESTS[route])
    tb, ours = keep_all.both("POST", path, content=body, headers=XSRF)
    assert ours.status_code == tb.status_code == 200, ours.text
    assert ours.json() == tb.json()
    # GET with ?request=, and under the id TensorBoard's UI uses.
    tb, ours = keep_all.both("GET", path, params={"request": body})
    assert ours.json() == tb.json()
    ui_path = f"/experiment/defaultExperimentId{path}"
    tb, ours = keep_all.both("POST", ui_path, content=body, headers=XSRF)
    assert ours.json() == tb.json()


def test_bad_requests(keep_all: Pair) -> None:
    path = "/data/plugin/hparams/experiment"
    for body in ("not json", "[1]"):
        tb, ours = keep_all.both("POST", path, content=body, headers=XSRF)
        assert (tb.status_code, ours.status_code) == (400, 400), body
        assert ours.json()["error"]["code"] == "bad_request"
    # Without X-XSRF-Protected, as text/plain: TensorBoard's own UI posts /experiment so.
    tb, ours = keep_all.both(
        "POST", path, content='{"experimentName":""}', headers={"Content-Type": "text/plain"}
    )
    assert (tb.status_code, ours.status_code) == (200, 200)
    assert ours.json() == tb.json()


def test_hparams_summaries_are_served_not_the_empty_answer(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "trial")) as w:
        w.add_hparams({"lr": 0.1, "opt": "adam"}, {"hparam/loss": 0.5}, name="run")
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, experiment="logs")
    server = ThreadedServer(create_app([ExperimentSpec("logs", logdir, db)])).start()
    try:
        url = f"{server.url}/data/plugin/hparams"
        exp = httpx.post(f"{url}/experiment", json=REQUESTS["experiment"], headers=XSRF)
        assert exp.status_code == 200, exp.text
        assert [h["name"] for h in exp.json()["hparamInfos"]] == ["lr", "opt"]
        groups = httpx.post(
            f"{url}/session_groups", json=REQUESTS["session_groups"], headers=XSRF
        ).json()
        assert groups["totalSize"] == 1
        assert groups["sessionGroups"][0]["hparams"] == {"lr": 0.1, "opt": "adam"}
        # The rest of the logdir is served.
        scalars = httpx.get(f"{server.url}/data/plugin/scalars/tags").json()
        assert scalars
    finally:
        server.stop()
