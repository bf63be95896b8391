"""A session group whose sessions disagree on their hparams (two runs written with one
``trial_id`` but different values, with TensorBoard's official hparams API): which session's
hparams the group shows.

TensorBoard shows those of the first session it loaded: with ``--load_fast=false`` the first
in its directory walk (the order the file system lists directories in; with ``--logdir_spec``,
the spec's order first), with its default loader whichever its Rust data server's hash order
gives, which changes from one start to the next. boardd's rule, the same on every file system
and after every restart: the group shows the hparams of its session whose run name sorts first,
among the sessions of the statuses the request allows (TensorBoard too groups only those). The
rule holds wherever a group's hparams appear: the group's ``hparams``, filters and sorting on
an hparam, ``download_data``, and ``/api/v1/hparams`` (the dashboard's and the client's source).

Where TensorBoard's load order is the name order (a ``--logdir_spec`` listing its logdirs by
name), every answer is compared with TensorBoard's; where it is not, TensorBoard's group shows
its first loaded session's hparams and boardd's its first by name.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.protobuf import json_format

from boardd.proto import hparams_api_pb2
from tests.hparams_logdirs import FAILURE, SUCCESS, WALL, session_end_pb, start_pb, write_run
from tests.tensorboard.conftest import Pair, pair
from tests.tensorboard.test_hparams_parity import (
    STATUSES,
    XSRF,
    Discrepancies,
    _compare,
    _post,
    _request,
    _same_json,
)
from tests.tensorboard.test_logdir_spec import served

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

SESSION_GROUPS = "/data/plugin/hparams/session_groups"
GROUP = "t"
#: A session: its trial id, hparams, end status and final accuracy.
Trial = tuple[str, dict[str, object], int, float]
#: Two sessions of trial "t" that disagree on every hparam, and a session of its own trial.
ADAM: Trial = (GROUP, {"lr": 0.01, "opt": "adam"}, FAILURE, 0.7)
SGD: Trial = (GROUP, {"lr": 0.1, "opt": "sgd"}, SUCCESS, 0.5)
OTHER: Trial = ("u", {"lr": 0.05, "opt": "rmsprop"}, SUCCESS, 0.6)


def write_sessions(logdir: Path, sessions: dict[str, Trial]) -> None:
    """A run per session, in the order given: its start info (``hp.hparams(values,
    trial_id=...)``), an ``acc`` scalar series, its end info."""
    for k, (run, (trial, values, status, acc)) in enumerate(sessions.items()):
        write_run(
            logdir,
            run,
            [start_pb(values, trial, WALL + k)],
            {"acc": [(0, acc - 0.2), (10, acc)]},
            end=session_end_pb(status, WALL + 100 + k),
        )


def _groups(response: httpx.Response) -> dict[str, dict[str, Any]]:
    assert response.status_code == 200, response.text
    return {g["name"]: g for g in response.json()["sessionGroups"]}


def _names(response: httpx.Response) -> list[str]:
    return list(_groups(response))


def _requests() -> Iterator[dict[str, Any]]:
    """Requests whose answers depend on the group's hparams: the plain listing, each hparam
    sorted both ways, filters matching either session's value, and statuses that leave out
    one session of the group or the other."""
    yield _request()
    for name in ("lr", "opt"):
        for order in ("ORDER_ASC", "ORDER_DESC"):
            yield _request(colParams=[{"hparam": name, "order": order}])
    for pattern in ("adam", "sgd", "^(adam|rmsprop)$"):
        yield _request(colParams=[{"hparam": "opt", "filterRegexp": pattern}])
    for low, high in ((0.0, 0.02), (0.04, 0.2)):
        interval = {"minValue": low, "maxValue": high}
        yield _request(colParams=[{"hparam": "lr", "filterInterval": interval}])
    for value in (0.01, 0.1):
        discrete = {"filterDiscrete": [value]}
        yield _request(colParams=[{"hparam": "lr", **discrete, "order": "ORDER_ASC"}])
    for allowed in (["STATUS_SUCCESS"], ["STATUS_FAILURE"]):
        yield _request(allowedStatuses=allowed)
        yield _request(allowedStatuses=allowed, colParams=[{"hparam": "lr", "order": "ORDER_ASC"}])


# -- several logdirs: TensorBoard loads them in the spec's order --------------------------------


@dataclass
class Spec:
    pair: Pair
    #: Whether TensorBoard loads the group's sessions in name order (then it shows the same).
    by_name: bool
    #: The group's hparams: TensorBoard's (its first loaded session's), boardd's (by name).
    tb_hparams: dict[str, object]
    our_hparams: dict[str, object]


#: Two logdirs, "one" with the adam session of trial "t" (and a session of a trial of its
#: own), "two" with its sgd session; the spec lists "one" first, named "a" (the name order:
#: "a/trial" is adam's) or "b" (then "a/trial" is sgd's, loaded after "b/trial").
SPECS = {"name_order": ("a", "b"), "other_order": ("b", "a")}


@pytest.fixture(scope="module", params=sorted(SPECS))
def spec(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Spec]:
    first, second = SPECS[request.param]
    root = tmp_path_factory.mktemp(f"group-rule-{request.param}")
    write_sessions(root / "one", {"trial": ADAM, "other": OTHER})
    write_sessions(root / "two", {"trial": SGD})
    logdirs = {first: root / "one", second: root / "two"}
    runs = {f"{first}/trial", f"{first}/other", f"{second}/trial"}
    by_name = first == "a"
    with served(root, logdirs, None, runs) as s:
        yield Spec(Pair(s.tb, s.boardd, root), by_name, ADAM[1], ADAM[1] if by_name else SGD[1])


def test_group_shows_tensorboards_first_loaded_and_boardds_first_by_name(spec: Spec) -> None:
    tb, ours = spec.pair.both("POST", SESSION_GROUPS, content=json.dumps(_request()), headers=XSRF)
    tb_group, our_group = _groups(tb)[GROUP], _groups(ours)[GROUP]
    # Both list the group's two sessions, by name.
    assert [s["name"] for s in our_group["sessions"]] == ["a/trial", "b/trial"]
    assert [s["name"] for s in tb_group["sessions"]] == ["a/trial", "b/trial"]
    assert tb_group["hparams"] == spec.tb_hparams
    assert our_group["hparams"] == spec.our_hparams
    if spec.by_name:
        assert tb.json() == ours.json()


def test_every_answer_is_tensorboards_where_it_loads_by_name(spec: Spec) -> None:
    """Where TensorBoard's load order is the name order, every request whose answer depends on
    the group's hparams answers as TensorBoard's (and on GET). Otherwise those allowing one
    session of the group still do (the group is that session's on both), and the others
    follow the rule: the group's hparams, filtered and sorted, are its first session's by
    name."""
    found = Discrepancies([])
    differing = 0
    for i, body in enumerate(_requests()):
        one_session = len(body["allowedStatuses"]) == 1
        if spec.by_name or one_session:
            _compare(spec.pair, "session_groups", body, found, get=i % 4 == 0, api_kind=None)
            continue
        tb, ours = spec.pair.both("POST", SESSION_GROUPS, content=json.dumps(body), headers=XSRF)
        differing += not _same_json(tb, ours)
        for group in _groups(ours).values():
            if group["name"] == GROUP:
                assert group["hparams"] == spec.our_hparams, body
    found.check()
    assert spec.by_name or differing


def test_download_data_follows_the_rule(spec: Spec) -> None:
    params = {
        "format": "csv",
        "columnsVisibility": json.dumps([True] * 3),  # lr, opt, acc
        "request": json.dumps(_request()),
    }
    tb, ours = spec.pair.both("GET", "/data/plugin/hparams/download_data", params=params)
    assert (tb.status_code, ours.status_code) == (200, 200), ours.text
    if spec.by_name:
        assert ours.text == tb.text
    # A row per group, by name ("t" first), without the group's name.
    header, group, _ = csv.reader(io.StringIO(ours.text))
    shown = {name: group[header.index(name)] for name in ("lr", "opt")}
    assert shown == {k: str(v) for k, v in spec.our_hparams.items()}


# -- one logdir: TensorBoard loads its runs in the directory's listing order ---------------------


@dataclass
class One:
    pair: Pair
    #: The run of trial "t" TensorBoard's walk meets first.
    walk_first: str


#: Sessions of the one-logdir scene, written in this order (the file system lists them in an
#: order of its own).
ONE = {"s-b": SGD, "s-c": OTHER, "s-a": ADAM}


@pytest.fixture(scope="module")
def one(tmp_path_factory: pytest.TempPathFactory) -> Iterator[One]:
    root = tmp_path_factory.mktemp("group-rule-one")
    logdir = root / "logs"
    write_sessions(logdir, ONE)
    # TensorBoard's walk (os.walk, top-down): the runs in the order the directory lists them.
    listed = [name for name in os.listdir(logdir) if name in ONE and ONE[name][0] == GROUP]
    with pair(root, logdir, None, set(ONE)) as p:
        yield One(p, listed[0])


def test_one_logdir_tensorboard_first_listed_boardd_first_by_name(one: One) -> None:
    tb, ours = one.pair.both("POST", SESSION_GROUPS, content=json.dumps(_request()), headers=XSRF)
    assert _groups(tb)[GROUP]["hparams"] == ONE[one.walk_first][1]
    assert _groups(ours)[GROUP]["hparams"] == ADAM[1] == ONE["s-a"][1]


def test_one_logdir_rule_in_filters_and_sorting(one: One) -> None:
    """Filters and sorting see the group's hparams (s-a's: lr 0.01, adam), nothing of s-b's;
    the same on TensorBoard's route and on /api/v1/hparams."""
    cases: list[tuple[list[dict[str, Any]], list[str]]] = [
        ([{"hparam": "lr", "order": "ORDER_ASC"}], [GROUP, "u"]),
        ([{"hparam": "lr", "order": "ORDER_DESC"}], ["u", GROUP]),
        ([{"hparam": "opt", "order": "ORDER_ASC"}], [GROUP, "u"]),
        ([{"hparam": "opt", "filterRegexp": "adam"}], [GROUP]),
        ([{"hparam": "opt", "filterRegexp": "sgd"}], []),
        ([{"hparam": "lr", "filterInterval": {"minValue": 0.0, "maxValue": 0.02}}], [GROUP]),
        ([{"hparam": "lr", "filterInterval": {"minValue": 0.09, "maxValue": 0.2}}], []),
        ([{"hparam": "lr", "filterDiscrete": [0.1]}], []),
    ]
    for cols, expected in cases:
        body = _request(colParams=cols)
        ours = _post(one.pair.boardd.url, SESSION_GROUPS, body)
        api = httpx.post(
            one.pair.boardd.url + "/api/v1/hparams/session_groups",
            content=json.dumps(body),
            timeout=60,
        )
        assert _names(ours) == expected, cols
        assert _names(api) == expected, cols
        for response in (ours, api):
            for group in _groups(response).values():
                if group["name"] == GROUP:
                    assert group["hparams"] == ADAM[1]


def test_one_logdir_statuses_choose_among_allowed_sessions(one: One) -> None:
    """Statuses that allow one session of the group: its hparams, on both (deterministic)."""
    for allowed, session in ((["STATUS_SUCCESS"], "s-b"), (["STATUS_FAILURE"], "s-a")):
        body = _request(allowedStatuses=allowed)
        tb, ours = one.pair.both("POST", SESSION_GROUPS, content=json.dumps(body), headers=XSRF)
        assert _same_json(tb, ours), (allowed, tb.text, ours.text)
        assert _groups(ours)[GROUP]["hparams"] == ONE[session][1]
        assert [s["name"] for s in _groups(ours)[GROUP]["sessions"]] == [session]
    body = _request(allowedStatuses=list(STATUSES))
    api = httpx.post(
        one.pair.boardd.url + "/api/v1/hparams/session_groups",
        content=json.dumps(body),
        timeout=60,
    )
    message = hparams_api_pb2.ListSessionGroupsResponse()
    # TensorBoard's message, and boardd's names besides (each session's run, each group's
    # displayName).
    json_format.Parse(api.text, message, ignore_unknown_fields=True)
    group = next(g for g in message.session_groups if g.name == GROUP)
    assert group.hparams["opt"].string_value == "adam"
    assert [s.name for s in group.sessions] == ["s-a", "s-b"]
