"""The hparams routes over several logdirs served together (``boardd serve a=DIR b=DIR``)
against the real TensorBoard with ``--logdir_spec a:DIR,b:DIR``: session names prefixed with
the logdir's name, the sessions of all logdirs merged (groups of one trial id across logdirs
are one group), one experiment summary, the inference over every session; metric_evals by the
prefixed session name; download_data over the merged table."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hparams_logdirs import write_inferred, write_official, write_tensorboardx
from tests.tensorboard.conftest import Pair
from tests.tensorboard.test_hparams_parity import (
    Columns,
    Discrepancies,
    _columns,
    _compare,
    _post,
    _request,
    _same_json,
    aggregation_requests,
    filter_requests,
    order_requests,
    paging_requests,
    status_requests,
)
from tests.tensorboard.test_logdir_spec import served

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

#: Two scenes: experiment summaries (the official API's in ``a``, a repeat of it in ``b`` with
#: the same trial ids, tensorboardX's sub-run summaries in ``c``); and none (both inferred).
SCENES = {
    "declared": {"a": write_official, "b": write_official, "c": write_tensorboardx},
    "inferred": {"a": write_inferred, "b": write_inferred},
}


@pytest.fixture(scope="module", params=sorted(SCENES))
def spec(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Pair, Columns]]:
    scene = SCENES[request.param]
    root = tmp_path_factory.mktemp(f"hparams-spec-{request.param}")
    logdirs: dict[str, Path] = {}
    runs: set[str] = set()
    for name, build in scene.items():
        made = build(root / name)
        logdirs[name] = made.path
        runs |= {f"{name}/{run}" for run in made.runs}
    with served(root, logdirs, None, runs) as s:
        p = Pair(s.tb, s.boardd, root)
        yield p, _columns(p)


def _walk(p: Pair, requests: Iterator[dict[str, object]]) -> None:
    found = Discrepancies([])
    for i, body in enumerate(requests):
        _compare(
            p,
            "session_groups",
            dict(body),
            found,
            get=i % 5 == 0,
            api_kind=None,
        )
    found.check()


def test_sessions_are_prefixed_and_merged(spec: tuple[Pair, Columns]) -> None:
    p, c = spec
    assert c.sessions and all(s.split("/")[0] in ("a", "b", "c") for s in c.sessions)
    answer = _post(p.boardd.url, "/data/plugin/hparams/session_groups", _request())
    tb = _post(p.tb.url, "/data/plugin/hparams/session_groups", _request())
    assert answer.status_code == 200, answer.text
    ours = {s["name"]: g["name"] for g in answer.json()["sessionGroups"] for s in g["sessions"]}
    theirs = {s["name"]: g["name"] for g in tb.json()["sessionGroups"] for s in g["sessions"]}
    assert ours == theirs
    # Sessions of several logdirs in one group: the same group name (a trial id, or the name
    # hp.hparams derives from the values) in each.
    logdirs_of: dict[str, set[str]] = {}
    for session, group in ours.items():
        logdirs_of.setdefault(group, set()).add(session.split("/")[0])
    assert any(len(v) > 1 for v in logdirs_of.values())


def test_experiment(spec: tuple[Pair, Columns]) -> None:
    p, _ = spec
    found = Discrepancies([])
    for body in (
        {"experimentName": ""},
        {"experimentName": "", "includeMetrics": False},
        {"experimentName": "", "hparamsLimit": 2},
    ):
        _compare(p, "experiment", body, found, get=True)
    found.check()


def test_session_groups(spec: tuple[Pair, Columns]) -> None:
    p, c = spec
    _walk(p, status_requests(c))
    _walk(p, filter_requests(c))
    _walk(p, order_requests(c))
    _walk(p, aggregation_requests(c))
    _walk(p, paging_requests(c))


def test_metric_evals(spec: tuple[Pair, Columns]) -> None:
    p, c = spec
    found = Discrepancies([])
    for session in c.sessions:
        for metric in c.metrics:
            body = {"experimentName": "", "sessionName": session, "metricName": metric}
            _compare(p, "metric_evals", body, found, get=session == c.sessions[0])
    # Not prefixed, or prefixed with no logdir's name: TensorBoard's 404.
    inner = c.sessions[0].split("/", 1)[1]
    for name in (inner, f"zz/{inner}"):
        body = {"experimentName": "", "sessionName": name, "metricName": c.metrics[0]}
        _compare(p, "metric_evals", body, found)
    found.check()


def test_download_data(spec: tuple[Pair, Columns]) -> None:
    p, c = spec
    found = Discrepancies([])
    width = len(c.strings + c.bools + c.numbers) + len(c.metrics)
    for fmt in ("csv", "json"):
        params = {
            "format": fmt,
            "columnsVisibility": json.dumps([True] * width),
            "request": json.dumps(_request()),
        }
        tb, ours = p.both("GET", "/data/plugin/hparams/download_data", params=params)
        same = _same_json(tb, ours) if fmt == "json" else tb.text == ours.text
        if tb.status_code != ours.status_code or not same:
            found.add(f"GET download_data {fmt}", params, tb, ours)
    found.check()


def test_one_experiment_under_its_mount_is_not_prefixed(spec: tuple[Pair, Columns]) -> None:
    """``/experiment/a/data/plugin/hparams/...``: that logdir alone, its own run names."""
    p, c = spec
    answer = _post(p.boardd.url, "/experiment/a/data/plugin/hparams/session_groups", _request())
    assert answer.status_code == 200, answer.text
    names = [s["name"] for g in answer.json()["sessionGroups"] for s in g["sessions"]]
    assert sorted(names) == sorted(s[2:] for s in c.sessions if s.startswith("a/"))
