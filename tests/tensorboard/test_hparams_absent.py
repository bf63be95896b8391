"""The hparams routes TensorBoard's UI asks for on every page: TensorBoard's own empty answers
on a logdir without hparams summaries; a clear 501 (not a wrong, empty table) on one with them,
until the hparams API lands."""

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
    _, ours = keep_all.both("POST", path, content="{}")
    assert ours.status_code == 400 and "X-XSRF-Protected" in ours.text


def test_hparams_summaries_get_a_clear_501(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "trial")) as w:
        w.add_hparams({"lr": 0.1, "opt": "adam"}, {"hparam/loss": 0.5})
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, experiment="logs")
    server = ThreadedServer(create_app([ExperimentSpec("logs", logdir, db)])).start()
    try:
        for route, request in REQUESTS.items():
            response = httpx.post(
                f"{server.url}/data/plugin/hparams/{route}", json=request, headers=XSRF
            )
            assert response.status_code == 501, response.text
            assert response.json()["error"]["code"] == "not_implemented"
        # The rest of the logdir is served.
        scalars = httpx.get(f"{server.url}/data/plugin/scalars/tags").json()
        assert scalars
    finally:
        server.stop()
