"""The hparams API against the real TensorBoard, request by request: every route
(``/data/plugin/hparams/experiment``, ``session_groups``, ``metric_evals``, ``download_data``
as csv/json/latex; POST JSON and GET ``?request=``) and every request option of
ListSessionGroups (``allowed_statuses``, each filter kind, ``exclude_missing_values``, ordering
over several columns with ``missing_values_first``, each aggregation, paging) on each logdir of
tests/hparams_logdirs.py. boardd's ``/api/v1/hparams/...`` answers are compared too (as
messages: the same proto3 JSON).

Each test walks its requests and fails once, listing every request whose answers differ
(request, TensorBoard's answer, boardd's). Where TensorBoard answers 500 (an aggregation metric
missing from a session of a group), boardd must answer 200 or its JSON error (4xx), as
docs/hparams.md says, never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from google.protobuf import json_format

from boardd.proto import hparams_api_pb2
from tests.hparams_logdirs import BUILDERS, HparamsLogdir
from tests.tensorboard.conftest import Pair, pair

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

XSRF = {"X-XSRF-Protected": "1"}
STATUSES = ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"]
AGGREGATIONS = ["AGGREGATION_AVG", "AGGREGATION_MEDIAN", "AGGREGATION_MIN", "AGGREGATION_MAX"]


@dataclass(frozen=True)
class Columns:
    """The columns of a logdir's experiment (from TensorBoard's answer): hparams by type, and
    the metrics; values seen, for filters."""

    strings: list[str]
    bools: list[str]
    numbers: list[str]
    metrics: list[dict[str, str]]
    #: hparam → values seen in TensorBoard's session groups.
    values: dict[str, list[Any]]
    #: metric (group, tag) → values seen.
    metric_values: dict[tuple[str, str], list[float]]
    sessions: list[str]
    total: int


@dataclass
class Setup:
    built: HparamsLogdir
    pair: Pair
    columns: Columns


def _post(client_url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(client_url + path, content=json.dumps(body), headers=XSRF, timeout=60)


def _columns(p: Pair) -> Columns:
    experiment = _post(p.tb.url, "/data/plugin/hparams/experiment", {"experimentName": ""}).json()
    kinds: dict[str, list[str]] = {"string": [], "bool": [], "number": []}
    for info in experiment["hparamInfos"]:
        kind = {"DATA_TYPE_STRING": "string", "DATA_TYPE_BOOL": "bool"}.get(info["type"], "number")
        kinds[kind].append(info["name"])
    metrics = [
        {"group": m["name"].get("group", ""), "tag": m["name"]["tag"]}
        for m in experiment["metricInfos"]
    ]
    groups = _post(p.tb.url, "/data/plugin/hparams/session_groups", _request())
    answer = groups.json()
    values: dict[str, list[Any]] = {}
    metric_values: dict[tuple[str, str], list[float]] = {}
    sessions: list[str] = []
    for group in answer["sessionGroups"]:
        for name, value in group["hparams"].items():
            if value not in values.setdefault(name, []):
                values[name].append(value)
        for session in group["sessions"]:
            sessions.append(session["name"])
            for mv in session["metricValues"]:
                key = (mv["name"].get("group", ""), mv["name"]["tag"])
                metric_values.setdefault(key, []).append(mv["value"])
    return Columns(
        kinds["string"],
        kinds["bool"],
        kinds["number"],
        metrics,
        {k: sorted(v, key=repr) for k, v in values.items()},
        {k: sorted(v) for k, v in metric_values.items()},
        sessions,
        answer["totalSize"],
    )


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def setup(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Setup]:
    """TensorBoard and boardd on one logdir of tests/hparams_logdirs.py."""
    name: str = request.param
    root = tmp_path_factory.mktemp(f"hparams-{name}")
    built = BUILDERS[name](root)
    with pair(root, built.path, None, built.runs) as p:
        yield Setup(built, p, _columns(p))


# -- requests -------------------------------------------------------------------------------


def _request(**fields: Any) -> dict[str, Any]:
    """A ListSessionGroupsRequest as TensorBoard's UI sends it (every status, first 100)."""
    body: dict[str, Any] = {
        "experimentName": "",
        "allowedStatuses": list(STATUSES),
        "colParams": [],
        "startIndex": 0,
        "sliceSize": 100,
    }
    body.update(fields)
    return body


def _hparam(name: str, **fields: Any) -> dict[str, Any]:
    return {"hparam": name, **fields}


def _metric(metric: dict[str, str], **fields: Any) -> dict[str, Any]:
    return {"metric": dict(metric), **fields}


def _all_columns(c: Columns) -> list[dict[str, Any]]:
    """Every column without order or filter, as the UI lists them."""
    names = c.strings + c.bools + c.numbers
    return [_hparam(n) for n in names] + [_metric(m) for m in c.metrics]


def status_requests(c: Columns) -> Iterator[dict[str, Any]]:
    for status in STATUSES:
        yield _request(allowedStatuses=[status])
    yield _request(allowedStatuses=["STATUS_SUCCESS", "STATUS_FAILURE"])
    yield _request(allowedStatuses=["STATUS_RUNNING", "STATUS_UNKNOWN"])
    yield _request(allowedStatuses=[])
    yield _request(allowedStatuses=list(STATUSES), colParams=_all_columns(c))


def filter_requests(c: Columns) -> Iterator[dict[str, Any]]:
    for name in c.strings:
        seen = [v for v in c.values.get(name, []) if isinstance(v, str)]
        first = seen[0]
        yield _request(colParams=[_hparam(name, filterRegexp=first[1:3] or first)])
        yield _request(colParams=[_hparam(name, filterRegexp=f"^{first}$")])
        yield _request(colParams=[_hparam(name, filterRegexp="no such value")])
        yield _request(colParams=[_hparam(name, filterDiscrete=seen[:2])])
    for name in c.bools:
        for value in (True, False):
            yield _request(colParams=[_hparam(name, filterDiscrete=[value])])
    for name in c.numbers:
        seen = [v for v in c.values.get(name, []) if isinstance(v, float | int)]
        lo, hi = sorted(seen)[0], sorted(seen)[len(seen) // 2]
        yield _request(colParams=[_hparam(name, filterInterval={"minValue": lo, "maxValue": hi})])
        yield _request(colParams=[_hparam(name, filterDiscrete=sorted(seen)[-2:])])
    for metric in c.metrics:
        seen = c.metric_values.get((metric["group"], metric["tag"]), [])
        if seen:
            lo, hi = seen[0], seen[len(seen) // 2]
            interval = {"minValue": lo, "maxValue": hi}
            yield _request(colParams=[_metric(metric, filterInterval=interval)])
            yield _request(
                colParams=[_metric(metric, filterInterval=interval, excludeMissingValues=True)]
            )
    for column in _all_columns(c):
        yield _request(colParams=[{**column, "excludeMissingValues": True}])
    # Two filters at once, with the other columns listed.
    if c.strings and c.numbers:
        seen = [v for v in c.values[c.numbers[0]] if isinstance(v, float | int)]
        yield _request(
            colParams=[
                _hparam(c.strings[0], filterRegexp="[a-m]"),
                _hparam(c.numbers[0], filterInterval={"minValue": min(seen), "maxValue": 1e9}),
                *_all_columns(c)[2:],
            ]
        )


def order_requests(c: Columns) -> Iterator[dict[str, Any]]:
    for column in _all_columns(c):
        for order in ("ORDER_ASC", "ORDER_DESC"):
            for first in (False, True):
                yield _request(colParams=[{**column, "order": order, "missingValuesFirst": first}])
    columns = _all_columns(c)
    # Several sort columns: each pair of (hparam, metric), both directions.
    for a, b in ((columns[0], columns[-1]), (columns[-2], columns[1]), (columns[2], columns[-1])):
        for order_a, order_b, first in (
            ("ORDER_ASC", "ORDER_DESC", False),
            ("ORDER_DESC", "ORDER_ASC", True),
        ):
            yield _request(
                colParams=[
                    {**a, "order": order_a, "missingValuesFirst": first},
                    {**b, "order": order_b, "missingValuesFirst": not first},
                ]
            )
    # Three keys with the unordered columns between them, as the UI sends them.
    listed = [dict(x) for x in columns]
    listed[1]["order"] = "ORDER_DESC"
    listed[-1]["order"] = "ORDER_ASC"
    listed[-1]["missingValuesFirst"] = True
    listed[0]["order"] = "ORDER_ASC"
    yield _request(colParams=listed)


def aggregation_requests(c: Columns) -> Iterator[dict[str, Any]]:
    yield _request(aggregationType="AGGREGATION_UNSET")
    for metric in c.metrics:
        for aggregation in AGGREGATIONS:
            yield _request(aggregationType=aggregation, aggregationMetric=dict(metric))
            yield _request(
                aggregationType=aggregation,
                aggregationMetric=dict(metric),
                colParams=[_metric(metric, order="ORDER_DESC")],
            )
    # An aggregation metric that is no metric of the experiment.
    yield _request(
        aggregationType="AGGREGATION_MIN", aggregationMetric={"group": "", "tag": "no such"}
    )


def paging_requests(c: Columns) -> Iterator[dict[str, Any]]:
    order = [_hparam((c.numbers or c.strings)[0], order="ORDER_DESC")]
    for start, size in ((0, 1), (1, 2), (2, 100), (0, c.total), (c.total - 1, 5)):
        yield _request(colParams=order, startIndex=start, sliceSize=size)
    for start, size in ((c.total, 5), (c.total + 3, 5), (0, 0), (3, 0)):
        yield _request(colParams=order, startIndex=start, sliceSize=size)
    # Paging after a filter: total_size counts the filtered list.
    yield _request(
        colParams=[*order, _hparam((c.strings or c.numbers)[0], excludeMissingValues=True)],
        startIndex=1,
        sliceSize=2,
    )


def no_metrics_requests(c: Columns) -> Iterator[dict[str, Any]]:
    """``includeMetrics: false``: no metric values, so a metric column's filter and order see
    missing values only (TensorBoard builds the groups without metrics first)."""
    metric = c.metrics[0]
    seen = c.metric_values.get((metric["group"], metric["tag"]), [0.0])
    interval = {"minValue": seen[0], "maxValue": seen[0]}
    by_hparam = _hparam((c.numbers or c.strings)[0], order="ORDER_ASC")
    for fields in (
        {},
        {"filterInterval": interval},
        {"filterInterval": interval, "excludeMissingValues": True},
        {"excludeMissingValues": True},
        {"order": "ORDER_DESC"},
        {"order": "ORDER_ASC", "missingValuesFirst": True},
    ):
        yield _request(includeMetrics=False, colParams=[_metric(metric, **fields), by_hparam])
    yield _request(
        includeMetrics=False,
        aggregationType="AGGREGATION_MAX",
        aggregationMetric=dict(metric),
        colParams=[_metric(metric, order="ORDER_DESC")],
    )
    yield _request(includeMetrics=True, colParams=[_metric(metric, order="ORDER_DESC")])


# -- comparison -----------------------------------------------------------------------------


def _as_message(text: str, kind: type[Any]) -> Any:
    return json_format.Parse(text, kind(), ignore_unknown_fields=True)


def _normal(answer: Any) -> Any:
    """An answer with TensorBoard's arbitrary orders made canonical: an inferred string
    hparam's ``domainDiscrete`` is a Python set's order in TensorBoard (hash-randomised per
    process), so it is compared sorted."""
    if isinstance(answer, dict) and isinstance(answer.get("hparamInfos"), list):
        infos = []
        for info in answer["hparamInfos"]:
            if info.get("type") == "DATA_TYPE_STRING" and "domainDiscrete" in info:
                info = {**info, "domainDiscrete": sorted(info["domainDiscrete"], key=str)}
            infos.append(info)
        return {**answer, "hparamInfos": infos}
    return answer


def _same_json(a: httpx.Response, b: httpx.Response) -> bool:
    try:
        return bool(_normal(a.json()) == _normal(b.json()))
    except ValueError:
        return False


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    """Where two JSON values first differ: the path, TensorBoard's value, boardd's."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}/{key}: {a.get(key, '<absent>')!r} vs {b.get(key, '<absent>')!r}"
            if a[key] != b[key]:
                return _first_difference(a[key], b[key], f"{path}/{key}")
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
        if len(a) != len(b):
            return f"{path}: {len(a)} items vs {len(b)}"
    return f"{path}: {json.dumps(a)[:200]} vs {json.dumps(b)[:200]}"


@dataclass
class Discrepancies:
    found: list[str]

    def add(self, what: str, request: Any, tb: httpx.Response, ours: httpx.Response) -> None:
        where = ""
        if tb.status_code == ours.status_code == 200:
            try:
                first = _first_difference(_normal(tb.json()), _normal(ours.json()))
                where = f"\n  first difference: {first}"
            except ValueError:
                where = ""
        self.found.append(
            f"{what} {json.dumps(request)}{where}\n"
            f"  TensorBoard {tb.status_code}: {tb.text[:300]}\n"
            f"  boardd      {ours.status_code}: {ours.text[:300]}"
        )

    def check(self) -> None:
        assert not self.found, f"{len(self.found)} discrepancies:\n" + "\n".join(self.found)


def _compare(
    p: Pair,
    route: str,
    body: dict[str, Any],
    found: Discrepancies,
    *,
    get: bool = False,
    api_kind: type[Any] | None = None,
) -> None:
    """One request to both servers (POST, and GET ``?request=`` when ``get``); and the same
    request on boardd's /api/v1 route, compared as a message."""
    path = f"/data/plugin/hparams/{route}"
    text = json.dumps(body)
    tb, ours = p.both("POST", path, content=text, headers=XSRF)
    # The oracle first: a request TensorBoard refuses (400) is a malformed test, unless it
    # asks for something absent (a metric a session lacks: TensorBoard's 400 "Not found").
    if tb.status_code == 404 and "Not found" in tb.text:
        # boardd: its 404 (its JSON error, TensorBoard's message).
        if not _absent(tb, ours):
            found.add(f"POST {route} (TensorBoard {tb.status_code})", body, tb, ours)
        return
    assert tb.status_code in (200, 500), f"TensorBoard refused {text}: {tb.text}"
    if tb.status_code == 500:
        # TensorBoard's crash: boardd answers or explains, never crashes.
        if ours.status_code >= 500 or (ours.status_code != 200 and "error" not in ours.json()):
            found.add(f"POST {route} (TensorBoard 500)", body, tb, ours)
        return
    if ours.status_code != 200 or not _same_json(tb, ours):
        found.add(f"POST {route}", body, tb, ours)
    if get:
        tb_get, ours_get = p.both("GET", path, params={"request": text})
        if ours_get.status_code != 200 or not _same_json(tb_get, ours_get):
            found.add(f"GET {route}", body, tb_get, ours_get)
    # /api/v1 reads "no allowedStatuses" as every status (docs/hparams.md), TensorBoard as none.
    if api_kind is not None and body.get("allowedStatuses") != []:
        api = httpx.post(f"{p.boardd.url}/api/v1/hparams/{route}", content=text, timeout=60)
        if api.status_code != 200 or _as_message(
            json.dumps(_normal(api.json())), api_kind
        ) != _as_message(json.dumps(_normal(tb.json())), api_kind):
            found.add(f"POST /api/v1/hparams/{route}", body, tb, api)


def _absent(tb: httpx.Response, ours: httpx.Response) -> bool:
    """boardd's answer where TensorBoard answers 404 "Not found: No scalar data for run=…,
    tag=…" (a session or metric without scalars): a 404 with its JSON error carrying
    TensorBoard's message."""
    if tb.status_code != 404 or ours.status_code != 404:
        return False
    error = ours.json().get("error", {})
    return error.get("code") == "not_found" and error.get("message") in tb.text


def _walk(setup: Setup, requests: Iterator[dict[str, Any]], *, get_every: int = 4) -> None:
    found = Discrepancies([])
    count = 0
    for i, body in enumerate(requests):
        _compare(
            setup.pair,
            "session_groups",
            body,
            found,
            get=i % get_every == 0,
            api_kind=hparams_api_pb2.ListSessionGroupsResponse,
        )
        count += 1
    assert count >= 5
    found.check()


# -- the tests ------------------------------------------------------------------------------


def test_experiment(setup: Setup) -> None:
    found = Discrepancies([])
    for body in (
        {"experimentName": ""},
        {"experimentName": "", "includeMetrics": True},
        {"experimentName": "", "includeMetrics": False},
        {"experimentName": "", "hparamsLimit": 2},
    ):
        _compare(
            setup.pair, "experiment", body, found, get=True, api_kind=hparams_api_pb2.Experiment
        )
    found.check()
    # The logdir's columns are all there (the suite's own check of its logdirs).
    c = setup.columns
    assert c.strings and c.bools and c.numbers and len(c.metrics) >= 2


def test_allowed_statuses(setup: Setup) -> None:
    _walk(setup, status_requests(setup.columns))


def test_filters(setup: Setup) -> None:
    _walk(setup, filter_requests(setup.columns))


def test_ordering(setup: Setup) -> None:
    _walk(setup, order_requests(setup.columns))


def test_aggregations(setup: Setup) -> None:
    _walk(setup, aggregation_requests(setup.columns))


def test_without_metrics(setup: Setup) -> None:
    _walk(setup, no_metrics_requests(setup.columns), get_every=1)


def test_paging(setup: Setup) -> None:
    _walk(setup, paging_requests(setup.columns), get_every=1)


def test_metric_evals(setup: Setup) -> None:
    found = Discrepancies([])
    c = setup.columns
    for session in c.sessions:
        for metric in c.metrics:
            body = {"experimentName": "", "sessionName": session, "metricName": metric}
            _compare(setup.pair, "metric_evals", body, found, get=session == c.sessions[0])
    # A session or a metric that does not exist.
    for body in (
        {"experimentName": "", "sessionName": "no/such", "metricName": c.metrics[0]},
        {"experimentName": "", "sessionName": c.sessions[0], "metricName": {"tag": "nope"}},
    ):
        tb, ours = setup.pair.both(
            "POST", "/data/plugin/hparams/metric_evals", content=json.dumps(body), headers=XSRF
        )
        if not _absent(tb, ours):
            found.add("POST metric_evals (missing)", body, tb, ours)
        api = httpx.post(
            f"{setup.pair.boardd.url}/api/v1/hparams/metric_evals", content=json.dumps(body)
        )
        if api.status_code != 404 or api.json()["error"]["code"] != "not_found":
            found.add("POST /api/v1/hparams/metric_evals (missing)", body, tb, api)
    found.check()


@pytest.mark.parametrize("fmt", ["csv", "json", "latex"])
def test_download_data(setup: Setup, fmt: str) -> None:
    found = Discrepancies([])
    c = setup.columns
    width = len(c.strings + c.bools + c.numbers) + len(c.metrics)
    visibilities = [[True] * width, [i % 2 == 0 for i in range(width)]]
    bodies = [
        _request(),
        _request(
            colParams=[_hparam((c.numbers or c.strings)[0], order="ORDER_DESC")],
            aggregationType="AGGREGATION_MAX",
            aggregationMetric=c.metrics[-1],
            allowedStatuses=["STATUS_SUCCESS"],
        ),
    ]
    for body in bodies:
        for visible in visibilities:
            params = {
                "format": fmt,
                "columnsVisibility": json.dumps(visible),
                "request": json.dumps(body),
            }
            tb, ours = setup.pair.both("GET", "/data/plugin/hparams/download_data", params=params)
            assert tb.status_code in (200, 500), tb.text
            if tb.status_code == 500:
                if ours.status_code >= 500:
                    found.add("GET download_data (TensorBoard 500)", params, tb, ours)
                continue
            same = ours.status_code == 200 and (
                _same_json(tb, ours) if fmt == "json" else tb.text == ours.text
            )
            if not same or ours.headers.get("content-type") != tb.headers.get("content-type"):
                found.add(f"GET download_data {fmt}", params, tb, ours)
    # POST: the request in the body, format and visibility in the query.
    params = {"format": fmt, "columnsVisibility": json.dumps(visibilities[0])}
    tb, ours = setup.pair.both(
        "POST",
        "/data/plugin/hparams/download_data",
        params=params,
        content=json.dumps(bodies[0]),
        headers=XSRF,
    )
    same = _same_json(tb, ours) if fmt == "json" else ours.text == tb.text
    if ours.status_code != tb.status_code or not same:
        found.add(f"POST download_data {fmt}", params, tb, ours)
    found.check()


def test_bad_requests_get_our_400(setup: Setup) -> None:
    """Requests TensorBoard refuses or crashes on: boardd answers its JSON error, never 500."""
    c = setup.columns
    bad = [
        _request(colParams=[_hparam("no_such_hparam", order="ORDER_ASC")]),
        _request(colParams=[_hparam(c.strings[0], filterRegexp="([unclosed")]),
        _request(colParams=[_hparam(c.strings[0], filterInterval={"minValue": 0, "maxValue": 1})]),
        _request(colParams=[_metric({"group": "", "tag": "no such"}, order="ORDER_DESC")]),
        _request(aggregationType="AGGREGATION_MEDIAN"),
    ]
    problems: list[str] = []
    for body in bad:
        tb, ours = setup.pair.both(
            "POST", "/data/plugin/hparams/session_groups", content=json.dumps(body), headers=XSRF
        )
        if ours.status_code == 200:
            if tb.status_code == 200 and _same_json(tb, ours):
                continue
            problems.append(f"{json.dumps(body)}: TB {tb.status_code} {tb.text[:200]}, boardd 200")
            continue
        error = ours.json().get("error", {}) if ours.status_code < 500 else {}
        if ours.status_code != 400 or not error.get("message"):
            problems.append(
                f"{json.dumps(body)}: TB {tb.status_code}, boardd {ours.status_code} {ours.text}"
            )
    assert not problems, "\n".join(problems)


def test_sessions_and_groups_as_written(setup: Setup) -> None:
    """The oracle's answer holds every session of the logdir, in its group (checks the
    logdir builders as much as the servers)."""
    answer = _post(setup.pair.boardd.url, "/data/plugin/hparams/session_groups", _request())
    tb = _post(setup.pair.tb.url, "/data/plugin/hparams/session_groups", _request()).json()
    got = {s["name"]: g["name"] for g in tb["sessionGroups"] for s in g["sessions"]}
    expected = setup.built.groups or {s: g for s, g in got.items()}
    assert set(got) == set(setup.built.statuses)
    assert got == expected
    assert answer.status_code == 200, answer.text
    ours = {s["name"]: g["name"] for g in answer.json()["sessionGroups"] for s in g["sessions"]}
    assert ours == got
