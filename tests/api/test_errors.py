"""One error envelope, ``{"error": {"code", "message"}}``, on every route and every error.

The route table is walked: each route has examples of a valid request, and each applicable
error (400, 401, 404, 405, 413, 503) is provoked on each. A route added to the app without
examples here fails :func:`test_every_route_is_covered`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from boardd.api.app import create_app
from boardd.api.auth import MAX_QUERY_BYTES
from boardd.config import ExperimentSpec
from boardd.data import series as data_series
from tests.api.conftest import EXPERIMENT, assert_error, serve


def by_path(urls: list[str]) -> dict[str, list[str]]:
    """URLs grouped by their route's path."""
    out: dict[str, list[str]] = {}
    for url in urls:
        out.setdefault(url.partition("?")[0], []).append(url)
    return out


#: Valid requests of each route: path and query string.
EXAMPLES: dict[str, list[str]] = {
    "/api/v1/health": ["/api/v1/health"],
    "/api/v1/openapi.json": ["/api/v1/openapi.json"],
    "/api/v1/experiments": ["/api/v1/experiments"],
    "/api/v1/plugins": ["/api/v1/plugins", f"/api/v1/plugins?experiment={EXPERIMENT}"],
    "/api/v1/runs": ["/api/v1/runs", f"/api/v1/runs?experiment={EXPERIMENT}"],
    "/api/v1/data_loss": ["/api/v1/data_loss", f"/api/v1/data_loss?experiment={EXPERIMENT}&run=a"],
    "/api/v1/stream": ["/api/v1/stream", f"/api/v1/stream?experiment={EXPERIMENT}"],
    "/api/v1/blob/{key}": [],  # filled in from the store (a real key), see blob_key()
    # The lineage store's routes answer from a lineage store (this app has none: 503); their
    # examples and errors are in tests/api/test_metadata_api.py.
    "/api/v1/metadata/{operation}": [],
    "/api/v1/metadata/lineage_graph": [],
    "/api/v1/hparams/experiment": ["/api/v1/hparams/experiment"],
    "/api/v1/hparams/session_groups": [
        "/api/v1/hparams/session_groups?request=%7B%22sliceSize%22%3A5%7D"
    ],
    "/api/v1/hparams/metric_evals": [
        "/api/v1/hparams/metric_evals?request="
        "%7B%22sessionName%22%3A%22train%22%2C%22metricName%22%3A%7B%22tag%22%3A%22acc%22%7D%7D"
    ],
    "/api/v1/distributions": [
        "/api/v1/distributions?run=train&tag=weights",
        f"/api/v1/distributions?experiment={EXPERIMENT}&run=train&tag=weights&downsample=3",
    ],
    "/api/v1/pr_curves": [],  # the store has none: NOT_FOUND (tests/api/test_plugin_data.py)
    "/api/v1/text": ["/api/v1/text?run=train&tag=notes/text_summary"],
    "/api/v1/descriptions": ["/api/v1/descriptions?plugin=scalars"],
    **by_path(
        [
            "/api/v1/scalars/list?plugin=scalars",
            "/api/v1/tensors/list?plugin=histograms&run=train",
            "/api/v1/blob_sequences/list?plugin=images&tag=sample",
            "/api/v1/scalars?plugin=scalars&run=train&tag=acc&latest=3",
            "/api/v1/scalars?plugin=scalars&format=csv&downsample=5",
            "/api/v1/tensors?plugin=histograms&step_min=0&step_max=20",
            "/api/v1/blob_sequences?plugin=images&index_min=2&index_max=3",
        ]
    ),
}
#: The routes reading points (413 beyond the point bound).
VALUE_ROUTES = {"/api/v1/scalars", "/api/v1/tensors", "/api/v1/blob_sequences"}
#: Routes that read an experiment's store (503 when it does not exist; 404 for an unknown
#: experiment= when they take one).
STORE_ROUTES = {
    "/api/v1/plugins",
    "/api/v1/runs",
    "/api/v1/data_loss",
    *VALUE_ROUTES,
    *(f"{route}/list" for route in VALUE_ROUTES),
    "/api/v1/hparams/experiment",
    "/api/v1/hparams/session_groups",
    "/api/v1/hparams/metric_evals",
    "/api/v1/distributions",
    "/api/v1/pr_curves",
    "/api/v1/text",
    "/api/v1/descriptions",
}
#: Routes streaming an answer that does not end: only their headers are read.
STREAMING = {"/api/v1/stream"}

#: Bad parameters, route by route (beyond an unknown parameter, which every route refuses).
BAD_PARAMETERS: dict[str, list[str]] = {
    "/api/v1/runs": ["/api/v1/runs?run=train"],
    "/api/v1/plugins": ["/api/v1/plugins?plugin=scalars"],
    "/api/v1/data_loss": ["/api/v1/data_loss?tag=x"],
    "/api/v1/stream": ["/api/v1/stream?since=yesterday", "/api/v1/stream?since=exp:x"],
    "/api/v1/blob/{key}": ["/api/v1/blob/{key}?experiment=exp"],
    "/api/v1/hparams/experiment": [
        "/api/v1/hparams/experiment?request=%7B",
        "/api/v1/hparams/experiment?request=%7B%22hparamsLimit%22%3A-1%7D",
    ],
    "/api/v1/hparams/session_groups": [
        "/api/v1/hparams/session_groups?request=%5B%5D",
        "/api/v1/hparams/session_groups?request=%7B%22colParams%22%3A%5B%7B%22hparam%22%3A%22x%22%7D%5D%7D",
        "/api/v1/hparams/session_groups?request=%7B%22startIndex%22%3A-1%7D",
    ],
    "/api/v1/hparams/metric_evals": ["/api/v1/hparams/metric_evals?request=%7B%22x%22%3A1%7D"],
    "/api/v1/distributions": [
        "/api/v1/distributions?run=train",
        "/api/v1/distributions?run=train&tag=weights&downsample=-1",
        "/api/v1/distributions?run=train&tag=weights&step_min=1",
    ],
    "/api/v1/pr_curves": ["/api/v1/pr_curves?tag=pr"],
    "/api/v1/text": ["/api/v1/text?run=train&tag=notes/text_summary&downsample=x"],
    "/api/v1/descriptions": ["/api/v1/descriptions", "/api/v1/descriptions?plugin=nope"],
    **by_path(
        [
            "/api/v1/tensors/list",
            "/api/v1/scalars/list?plugin=",
            "/api/v1/scalars/list?plugin=scalar",
            "/api/v1/tensors/list?plugin=histograms&latest=3",
            "/api/v1/blob_sequences/list?plugin=images&index_min=1",
            "/api/v1/tensors",
            "/api/v1/scalars?plugin=Scalars",
            "/api/v1/scalars?plugin=scalars&step_min=ten",
            "/api/v1/scalars?plugin=scalars&step_min=1.5",
            "/api/v1/scalars?plugin=scalars&step_min=1_000",
            "/api/v1/scalars?plugin=scalars&step_min=%D9%A1",  # an Arabic-Indic digit
            "/api/v1/scalars?plugin=scalars&step_min=+",
            "/api/v1/scalars?plugin=scalars&step_max=",
            "/api/v1/scalars?plugin=scalars&step_min=5&step_max=4",
            f"/api/v1/scalars?plugin=scalars&step_max={2**63}",
            f"/api/v1/scalars?plugin=scalars&step_min={-(2**63) - 1}",
            "/api/v1/scalars?plugin=scalars&latest=0",
            "/api/v1/scalars?plugin=scalars&latest=-1",
            "/api/v1/scalars?plugin=scalars&downsample=-1",
            "/api/v1/scalars?plugin=scalars&downsample=" + "9" * 5000,
            "/api/v1/scalars?plugin=scalars&format=xml",
            "/api/v1/scalars?plugin=scalars&index_min=0",
            "/api/v1/tensors?plugin=histograms&format=csv",
            "/api/v1/tensors?plugin=histograms&format=columns",
            "/api/v1/tensors?plugin=images",
            "/api/v1/blob_sequences?plugin=images&index_min=-1",
            "/api/v1/blob_sequences?plugin=images&index_min=3&index_max=2",
        ]
    ),
}

#: Not found, route by route (unknown experiments are added for STORE_ROUTES and the stream).
NOT_FOUND: dict[str, list[str]] = {
    "/api/v1/distributions": ["/api/v1/distributions?run=train&tag=nope"],
    "/api/v1/pr_curves": [
        "/api/v1/pr_curves?run=train&tag=pr",
        "/api/v1/pr_curves?experiment=nope&run=train&tag=pr",
    ],
    "/api/v1/text": ["/api/v1/text?run=nope&tag=notes/text_summary"],
    # A session or metric without scalars: 404, as TensorBoard's "No scalar data for run=…".
    "/api/v1/hparams/metric_evals": [
        "/api/v1/hparams/metric_evals?request=%7B%22sessionName%22%3A%22nope%22%7D"
    ],
    "/api/v1/blob/{key}": [
        "/api/v1/blob/nope~1",
        f"/api/v1/blob/{EXPERIMENT}~999999",
        f"/api/v1/blob/{EXPERIMENT}~0123abcd4567.999999",
        f"/api/v1/blob/{EXPERIMENT}~-1",
        f"/api/v1/blob/{EXPERIMENT}~abc",
        f"/api/v1/blob/{EXPERIMENT}~%C2%B2",  # "²": a digit to str.isdigit(), not to int()
        f"/api/v1/blob/{EXPERIMENT}~" + "9" * 40,
        "/api/v1/blob/1",
        "/api/v1/blob/list",
        f"/api/v1/blob/{EXPERIMENT}",
    ],
}
UNKNOWN_PATHS = [
    # "/" is TensorBoard's UI, or a page saying how to install it (tests/daemon/test_webui.py).
    "/api",
    "/api/v1",
    "/api/v2/runs",
    "/api/v1/scalars/list/more",
    "/api/v1/blob/a/b",
    "/data/no_such_route",
    "/favicon.ico",
    # No catch-all: a kind that is not one, or a new route's name, is not read as a kind.
    "/api/v1/nope?plugin=scalars",
    "/api/v1/list?plugin=scalars",
    "/api/v1/nope/list?plugin=scalars",
    "/api/v1/runs/list?plugin=x",
    "/api/v1/hparams?plugin=scalars",
]


@pytest.fixture(scope="module")
def api(spec_all: ExperimentSpec) -> Iterator[TestClient]:
    """The app over the keep-everything store, with a short stream heartbeat."""
    with serve(spec_all, stream_heartbeat=0.05) as client:
        yield client


@pytest.fixture(scope="module")
def blob_key(api: TestClient) -> str:
    """A real blob key of the store."""
    answer = api.get("/api/v1/blob_sequences", params={"plugin": "audio", "latest": 1}).json()
    return str(answer["train"]["speech"][0]["blobs"][0])


def examples(route: str, key: str) -> list[str]:
    """The valid requests of a route (the blob route's from a real key)."""
    if route == "/api/v1/blob/{key}":
        return [f"/api/v1/blob/{key}"]
    return EXAMPLES[route]


def routes_of(client: TestClient) -> set[str]:
    """The path of every route of boardd's API (TensorBoard's routes, mounted apart, are
    tested in tests/tensorboard)."""
    paths = set()
    for route in client.app.routes:
        if not route.path.startswith("/api/"):  # type: ignore[attr-defined]
            continue
        assert isinstance(route, Route), f"{route!r}: a new kind of route; cover it here"
        paths.add(route.path)
    return paths


def with_param(url: str, name: str, value: str) -> str:
    """The URL with ``name=value`` instead of any ``name=`` it had."""
    path, _, query = url.partition("?")
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != name]
    return f"{path}?{urlencode([(name, value), *pairs])}"


def store_examples() -> list[str]:
    """The examples of the routes that read a store, for the default experiment."""
    return [
        url for route in sorted(STORE_ROUTES) for url in EXAMPLES[route] if "experiment=" not in url
    ]


def request(client: TestClient, method: str, url: str, **kwargs: Any) -> Any:
    """One request; a streaming answer is closed after its headers."""
    with client.stream(method, url, **kwargs) as response:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            response.read()
        return response


def test_every_route_is_covered(api: TestClient) -> None:
    assert routes_of(api) == set(EXAMPLES), (
        "the app's routes changed: give every route examples here (EXAMPLES, and the error "
        "tables), and describe it in src/boardd/api/openapi.py"
    )
    for table in (BAD_PARAMETERS, NOT_FOUND):
        assert set(table) <= set(EXAMPLES)


def test_examples_are_valid(api: TestClient, blob_key: str) -> None:
    for route in EXAMPLES:
        for url in examples(route, blob_key):
            response = request(api, "GET", url)
            assert response.status_code == 200, (url, response.status_code)


def test_unknown_parameter_on_every_route(api: TestClient, blob_key: str) -> None:
    for route in EXAMPLES:
        for url in examples(route, blob_key):
            joined = url + ("&" if "?" in url else "?") + "bogus=1"
            error = assert_error(request(api, "GET", joined), 400)
            assert error["code"] == "bad_request"
            assert "bogus" in error["message"] and "allowed" in error["message"], error


@pytest.mark.parametrize("route", sorted(BAD_PARAMETERS))
def test_bad_parameters(api: TestClient, blob_key: str, route: str) -> None:
    for url in BAD_PARAMETERS[route]:
        error = assert_error(request(api, "GET", url.replace("{key}", blob_key)), 400)
        assert error["code"] == "bad_request", url


def test_messages_say_what_to_change(api: TestClient) -> None:
    def message(url: str) -> str:
        return assert_error(request(api, "GET", url), 400)["message"]

    assert "plugin= is required" in message("/api/v1/tensors")
    assert "whole number" in message("/api/v1/scalars?plugin=scalars&latest=x")
    assert "from 1 to" in message("/api/v1/scalars?plugin=scalars&latest=0")
    assert "greater than step_max" in message(
        "/api/v1/scalars?plugin=scalars&step_min=2&step_max=1"
    )
    assert "csv/columns for scalars" in message("/api/v1/tensors?plugin=x&format=csv")
    assert "allowed: none" in message("/api/v1/health?verbose=1")


#: Routes naming an experiment with experiment= (404 for an unknown one).
EXPERIMENT_ROUTES = STORE_ROUTES | {"/api/v1/stream"}


@pytest.mark.parametrize("route", sorted(set(NOT_FOUND) | EXPERIMENT_ROUTES))
def test_not_found(api: TestClient, blob_key: str, route: str) -> None:
    urls = list(NOT_FOUND.get(route, []))
    if route in EXPERIMENT_ROUTES:
        urls += [with_param(url, "experiment", "nope") for url in examples(route, blob_key)]
    for url in urls:
        error = assert_error(request(api, "GET", url), 404)
        assert error["code"] == "not_found", url
    if route in STORE_ROUTES:
        error = assert_error(request(api, "GET", urls[-1]), 404)
        assert f"known: {EXPERIMENT}" in error["message"]


def test_unknown_paths(api: TestClient) -> None:
    for url in UNKNOWN_PATHS:
        error = assert_error(request(api, "GET", url), 404)
        assert error["code"] == "not_found", url


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_wrong_method_on_every_route(api: TestClient, blob_key: str, method: str) -> None:
    for route in EXAMPLES:
        # The hparams routes also take their request message as a POST body.
        allowed = {"GET", "HEAD"} | ({"POST"} if route.startswith("/api/v1/hparams/") else set())
        if method in allowed:
            continue
        for url in examples(route, blob_key):
            response = request(api, method, url)
            error = assert_error(response, 405)
            assert error["code"] == "method_not_allowed", (method, url)
            # RFC 9110: a 405 names the methods the resource takes.
            assert set(response.headers["allow"].split(", ")) == allowed, url
    # HEAD is GET without a body.
    for route in EXAMPLES:
        if route not in STREAMING:
            for url in examples(route, blob_key):
                head = request(api, "HEAD", url)
                assert head.status_code == 200, url


class RawResponse:
    """What an ASGI app sent: enough of a response for :func:`assert_error`."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        start = messages[0]
        self.status_code = start["status"]
        self.headers = {k.decode(): v.decode() for k, v in start["headers"]}
        self.body = b"".join(m.get("body", b"") for m in messages[1:])

    def json(self) -> Any:
        return json.loads(self.body)


def asgi_get(app: Any, path: str, query: bytes) -> RawResponse:
    """A GET straight into the ASGI app: HTTP clients refuse URLs as long as these."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }
    anyio.run(app, scope, receive, send)
    return RawResponse(sent)


def test_too_large(api: TestClient, blob_key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A query string beyond the bound, on every route (the guard answers before routing).
    for route in EXAMPLES:
        for url in examples(route, blob_key):
            path, _, query = url.partition("?")
            long = (query + "&run=" + "r" * MAX_QUERY_BYTES).encode()
            error = assert_error(asgi_get(api.app, path, long), 413)
            assert error["code"] == "too_large"
    # Under the bound (as far as HTTP clients go: 64 KiB URLs), the guard lets it through.
    path = "/api/v1/scalars"
    query = "plugin=scalars&tag=acc&run="
    fits = query + "r" * (MAX_QUERY_BYTES - len(query) - len(path) - 2)
    answer = request(api, "GET", f"{path}?{fits}")
    assert answer.status_code == 200 and answer.json() == {}
    # An answer beyond the point bound, on every values route.
    for kind in data_series.MAX_POINTS:
        monkeypatch.setitem(data_series.MAX_POINTS, kind, 1)
    for url in (url for route in sorted(VALUE_ROUTES) for url in EXAMPLES[route]):
        error = assert_error(request(api, "GET", url.replace("&latest=3", "")), 413)
        assert "the limit is 1" in error["message"]


def test_unauthorized_on_every_route(spec_all: ExperimentSpec, blob_key: str) -> None:
    token = "s3cret-token-of-16+chars"
    with serve(spec_all, token=token, stream_heartbeat=0.05) as client:
        for route in EXAMPLES:
            for url in examples(route, blob_key):
                for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": token}):
                    error = assert_error(request(client, "GET", url, headers=headers), 401)
                    assert error["code"] == "unauthorized"
                    assert "--token-file" in error["message"]
                good = {"authorization": f"Bearer {token}"}
                assert request(client, "GET", url, headers=good).status_code == 200
        # Unknown paths and wrong methods too: nothing is told before the token.
        assert_error(request(client, "GET", "/nowhere"), 401)
        assert_error(request(client, "POST", "/api/v1/runs"), 401)


@pytest.fixture(scope="module")
def missing_store(tmp_path_factory: pytest.TempPathFactory) -> ExperimentSpec:
    """An experiment whose store does not exist (yet)."""
    root = tmp_path_factory.mktemp("missing")
    return ExperimentSpec("gone", root / "logs", root / "not-there.sqlite")


def test_store_not_ready(missing_store: ExperimentSpec, spec_all: ExperimentSpec) -> None:
    with serve(missing_store, spec_all) as client:
        for url in store_examples():
            error = assert_error(request(client, "GET", url), 503)
            assert error["code"] == "unavailable"
            assert "boardd ingest" in error["message"], error
            # The other experiment is served meanwhile.
            other = with_param(url, "experiment", EXPERIMENT)
            assert request(client, "GET", other).status_code == 200, other
        assert_error(request(client, "GET", "/api/v1/blob/gone~0123abcd4567.1"), 503)
        # The server-wide routes still answer, and say what is missing.
        health = client.get("/api/v1/health").json()
        assert [e["data_loss"] for e in health["experiments"]] == [None, 0]
        assert [e["name"] for e in client.get("/api/v1/experiments").json()] == [EXPERIMENT]


def test_unreadable_store_file(tmp_path: Path) -> None:
    db = tmp_path / "garbage.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    with serve(ExperimentSpec("bad", tmp_path, db)) as client:
        for url in store_examples():
            error = assert_error(request(client, "GET", url), 503)
            assert "cannot read store" in error["message"]


def test_no_experiments_at_all() -> None:
    with TestClient(create_app([]), raise_server_exceptions=False) as client:
        for url in store_examples():
            assert_error(request(client, "GET", url), 404)
        assert_error(request(client, "GET", "/api/v1/stream"), 404)
        assert client.get("/api/v1/experiments").json() == []
