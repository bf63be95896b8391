"""Property-based fuzzing of every route: whatever the query string, path or headers, the answer
is a success or the error envelope with a client-error status — never a 500.

Hypothesis draws parameter names from the ones the API knows plus garbage, values from
integers far beyond int64, signs, blanks, unicode, known names and free text, repeated at will.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.routing import Route
from starlette.testclient import TestClient

from boardd.api.routes import BY_ID
from boardd.api.routes import ROUTES as ROUTE_TABLE
from boardd.config import ExperimentSpec
from boardd.data import kinds as data_kinds
from tests.api.conftest import EXPERIMENT, assert_error, serve

OK = {200, 304}
CLIENT_ERRORS = {400, 404, 413, 503}
KINDS = sorted(data_kinds.KINDS)
#: Every route of the app, by path template (test_every_route_is_fuzzed keeps this honest).
ROUTES = {
    "/api/v1/health",
    "/api/v1/openapi.json",
    "/api/v1/experiments",
    "/api/v1/plugins",
    "/api/v1/runs",
    "/api/v1/stream",
    "/api/v1/data_loss",
    "/api/v1/blob/{key}",
    "/api/v1/hparams/experiment",
    "/api/v1/hparams/session_groups",
    "/api/v1/hparams/metric_evals",
    "/api/v1/distributions",
    "/api/v1/pr_curves",
    "/api/v1/text",
    "/api/v1/descriptions",
    # The lineage store's (they answer from a lineage store): fuzzed with JSON bodies by
    # tests/api/test_metadata_api.py::test_fuzzed_calls_never_fail_the_server.
    "/api/v1/metadata/{operation}",
    "/api/v1/metadata/lineage_graph",
    *(f"/api/v1/{kind}/list" for kind in KINDS),
    *(f"/api/v1/{kind}" for kind in KINDS),
    # boardd's dashboard (boardd.api.dashboard) and TensorBoard's UI
    # (boardd.api.tensorboard.webui): fuzzed by test_ui_routes.
    "/",
    "/assets/{name}",
    "/tensorboard",
    "/tensorboard/",
    "/tensorboard/{path:path}",
    "/font-roboto/{path:path}",
    "/tf-imports/{path:path}",
}
#: Every query parameter name some route takes.
KNOWN_NAMES = sorted({name for route in ROUTE_TABLE for name in route.query_names})
#: The parameters of the blob sequences' values route.
BLOB_SEQUENCE_VALUE_PARAMS = BY_ID["read_blob_sequences"].query_names
WORDS = [
    EXPERIMENT,
    "gone",
    "scalars",
    "histograms",
    "images",
    "audio",
    "text",
    "train",
    "eval",
    ".",
    "nested/deep/run",
    "loss",
    "acc",
    "multi",
    "json",
    "csv",
    "columns",
    "0",
    "-0",
    "+1",
    "1e3",
    "0x10",
    " 7",
    "7 ",
    "1_000",
    "NaN",
    "inf",
    "٣",
    "²",
    f"{EXPERIMENT}:3",
    "gone:1,exp:2",
    "",
]

# Text without surrogates (they cannot be sent as UTF-8) and without "/" for path segments.
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=24)
segment = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="/"), min_size=1)
#: Characters that are numbers to Unicode (and to str.isdigit() or int()) but not ASCII digits.
unicode_digits = st.text(st.characters(categories=["Nd", "No", "Nl"]), min_size=1, max_size=4)
numbers = st.one_of(
    unicode_digits,
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.integers(min_value=-3, max_value=400).map(str),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1]).map(str),
    # Beyond what int() converts at all (4300 digits).
    st.sampled_from(["9" * 4400, "-" + "1" * 5000]),
)
values = st.one_of(numbers, st.sampled_from(WORDS), text)
names = st.one_of(st.sampled_from(KNOWN_NAMES), st.sampled_from(KNOWN_NAMES), text)
queries = st.lists(st.tuples(names, values), max_size=10)
headers = st.fixed_dictionaries(
    {},
    optional={
        "if-none-match": st.one_of(text, st.just("*"), st.just('"x", W/"y"')),
        "accept-encoding": st.sampled_from(["gzip", "identity", "gzip;q=0", "br", "*", ""]),
        "last-event-id": st.one_of(values, st.just("exp:1")),
    },
).map(lambda h: {k: v for k, v in h.items() if v.isascii() and v.isprintable()})


@pytest.fixture(scope="module")
def api(spec_all: ExperimentSpec, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The app over the keep-everything store and one whose store does not exist."""
    missing = tmp_path_factory.mktemp("fuzz")
    with serve(
        spec_all, ExperimentSpec("gone", missing, missing / "none.sqlite"), stream_heartbeat=0.05
    ) as client:
        yield client


@pytest.fixture(scope="module")
def blob_keys(api: TestClient) -> list[str]:
    """Some real blob keys."""
    answer = api.get("/api/v1/blob_sequences", params={"plugin": "images", "latest": 1}).json()
    return [key for tags in answer.values() for s in tags.values() for p in s for key in p["blobs"]]


def check(
    client: TestClient, path: str, query: list[tuple[str, str]], head: dict[str, str]
) -> None:
    """One request; the answer must be a success or the error envelope, never a 500."""
    url = path + ("?" + urlencode(query) if query else "")
    with client.stream("GET", url, headers=head) as response:
        media = response.headers.get("content-type", "")
        if media.startswith("text/event-stream"):
            # A live stream does not end: its headers are the answer.
            assert response.status_code == 200, url
            return
        response.read()
    status = response.status_code
    assert status != 500, (url, head, response.text)
    assert status in OK | CLIENT_ERRORS, (url, head, status, response.text)
    if status >= 400:
        assert_error(response, status)
    elif status == 200 and media.startswith("application/json"):

        def refuse(constant: str) -> Any:
            raise AssertionError(f"bare {constant} in the JSON of {url}")

        json.loads(response.content, parse_constant=refuse)


FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def test_every_route_is_fuzzed(api: TestClient) -> None:
    paths = {r.path for r in api.app.routes if isinstance(r, Route)}
    assert paths == ROUTES, "a route was added or removed: fuzz it here"


@FUZZ
@given(
    path=st.sampled_from(
        [
            "/api/v1/health",
            "/api/v1/openapi.json",
            "/api/v1/experiments",
            "/api/v1/plugins",
            "/api/v1/runs",
            "/api/v1/data_loss",
            "/api/v1/stream",
            "/api/v1/hparams/experiment",
            "/api/v1/hparams/session_groups",
            "/api/v1/hparams/metric_evals",
            "/api/v1/distributions",
            "/api/v1/pr_curves",
            "/api/v1/text",
            "/api/v1/descriptions",
        ]
    ),
    query=queries,
    head=headers,
)
def test_server_routes(api: TestClient, path: str, query: list[tuple[str, str]], head: Any) -> None:
    check(api, path, query, head)


@FUZZ
@given(
    prefix=st.sampled_from(
        ["/", "/assets/", "/tensorboard", "/tensorboard/", "/font-roboto/", "/tf-imports/"]
    ),
    rest=st.one_of(
        st.sampled_from(
            ["", "index.html", "index.js", "icon_bundle.svg", "vs/editor/x.js", "main-X.js"]
        ),
        st.lists(segment, max_size=3).map(lambda parts: "/".join(quote(p, safe="") for p in parts)),
    ),
    query=queries,
    head=headers,
)
def test_ui_routes(
    api: TestClient, prefix: str, rest: str, query: list[tuple[str, str]], head: Any
) -> None:
    check(api, prefix + rest, query, head)


@FUZZ
@given(
    kind=st.one_of(st.sampled_from(KINDS), segment),
    listing=st.booleans(),
    plugin=st.one_of(st.sampled_from(["scalars", "histograms", "images", "text", "audio"]), text),
    query=queries,
    head=headers,
)
def test_data_routes(
    api: TestClient, kind: str, listing: bool, plugin: str, query: list[tuple[str, str]], head: Any
) -> None:
    path = f"/api/v1/{quote(kind, safe='')}" + ("/list" if listing else "")
    check(api, path, [("plugin", plugin), *query], head)


@FUZZ
@given(
    kind=st.sampled_from(KINDS),
    plugin=st.sampled_from(["scalars", "histograms", "images", "text", "audio"]),
    filters=st.lists(
        st.tuples(st.sampled_from(sorted(BLOB_SEQUENCE_VALUE_PARAMS - {"plugin"})), numbers),
        max_size=6,
    ),
)
def test_numeric_filters(
    api: TestClient, kind: str, plugin: str, filters: list[tuple[str, str]]
) -> None:
    check(api, f"/api/v1/{kind}", [("plugin", plugin), *filters], {})


@FUZZ
@given(
    key=st.one_of(
        segment,
        st.builds(lambda e, n: f"{e}~{n}", st.sampled_from([EXPERIMENT, "gone", "", "x"]), numbers),
        st.builds(lambda e, t: f"{e}~{t}", st.sampled_from([EXPERIMENT, "gone"]), segment),
        st.builds(lambda w: f"{EXPERIMENT}~{w}", st.sampled_from(WORDS)),
        st.builds(lambda d: f"{EXPERIMENT}~{d}", unicode_digits),
    ),
    query=st.lists(st.tuples(names, values), max_size=2),
)
def test_blob_route(api: TestClient, key: str, query: list[tuple[str, str]]) -> None:
    check(api, f"/api/v1/blob/{quote(key, safe='')}", query, {})


def test_real_blob_keys(api: TestClient, blob_keys: list[str]) -> None:
    assert blob_keys
    for key in blob_keys:
        assert api.get(f"/api/v1/blob/{key}").status_code == 200
        check(api, f"/api/v1/blob/{key}", [], {"if-none-match": "*"})
