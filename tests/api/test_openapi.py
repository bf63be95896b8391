"""The OpenAPI description against the app: valid OpenAPI 3.1, the same paths as the route
table, the same query parameters as the handlers take, and real answers that fit its schemas."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from openapi_spec_validator import validate
from starlette.routing import Route
from starlette.testclient import TestClient

from boardd.api import openapi
from boardd.api.routes import ROUTES
from boardd.config import ExperimentSpec
from tests.api.conftest import EXPERIMENT, assert_error, get_json, serve

SPEC = openapi.SPEC
#: The lineage store's routes answer from a lineage store (tests/api/test_metadata_api.py
#: holds them to this description); the others are tested here against a logdir's store.
METADATA = "/api/v1/metadata/"
DATA_PATHS = sorted(p for p in SPEC["paths"] if not p.startswith(METADATA))


@pytest.fixture(scope="module")
def api(spec_all: ExperimentSpec) -> Iterator[TestClient]:
    """The app over the keep-everything store."""
    with serve(spec_all, stream_heartbeat=0.05) as client:
        yield client


def accepted(path: str) -> frozenset[str]:
    """The query parameters the handler of a described path takes: what the route table
    validates requests with (the stream's too)."""
    (route,) = [r for r in ROUTES if r.path == path]
    return route.query_names


def parameters(path: str) -> list[dict[str, Any]]:
    """The parameters of a path's GET (or its POST, for a POST-only path), references
    resolved."""
    out = []
    item = SPEC["paths"][path]
    for param in item["get" if "get" in item else "post"]["parameters"]:
        if "$ref" in param:
            param = SPEC["components"]["parameters"][param["$ref"].rsplit("/", 1)[1]]
        out.append(param)
    return out


def query_parameters(path: str) -> dict[str, dict[str, Any]]:
    """name → parameter, of a path's query parameters."""
    return {p["name"]: p for p in parameters(path) if p["in"] == "query"}


def schema_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    """A JSON Schema 2020-12 validator for a schema of the description (its $refs resolve
    against the description's components)."""
    root = {**schema, "components": SPEC["components"]}
    cls = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)
    assert cls is jsonschema.Draft202012Validator
    return jsonschema.Draft202012Validator(root)


def response_schema(path: str, status: int, media: str = "application/json") -> dict[str, Any]:
    """The schema of one documented answer."""
    response = SPEC["paths"][path]["get"]["responses"][str(status)]
    if "$ref" in response:
        response = SPEC["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    schema: dict[str, Any] = response["content"][media]["schema"]
    return schema


def test_served_and_valid(api: TestClient) -> None:
    served = get_json(api, "/api/v1/openapi.json")
    assert served == json.loads(json.dumps(SPEC))
    assert served["openapi"].startswith("3.1")
    validate(served)


def test_paths_are_the_routes(api: TestClient) -> None:
    # boardd's own API lives under /api/; the rest (TensorBoard's routes, its UI) speaks
    # TensorBoard's shapes and is not described here.
    routes = [r for r in api.app.routes if isinstance(r, Route) and r.path.startswith("/api/")]
    assert all(isinstance(r, Route) for r in api.app.routes if r.path.startswith("/api/"))
    from_routes = {r.path for r in routes}
    assert from_routes == set(SPEC["paths"]), "declare new routes in src/boardd/api/routes.py"
    for route in routes:
        if route.path == METADATA + "{operation}":
            # MetadataStore calls: their arguments are a JSON body.
            assert route.methods == {"POST"}
            assert set(SPEC["paths"][route.path]) == {"post"}
            continue
        # The hparams routes also take their request message as a POST body.
        post = {"POST"} if route.path.startswith("/api/v1/hparams/") else set()
        assert route.methods == {"GET", "HEAD"} | post, route.path
    for path, item in SPEC["paths"].items():
        if path == METADATA + "{operation}":
            continue
        post = {"post"} if path.startswith("/api/v1/hparams/") else set()
        assert set(item) == {"get"} | post, path
        assert item["get"]["operationId"], path


@pytest.mark.parametrize("path", sorted(SPEC["paths"]))
def test_parameters_are_what_the_handlers_take(api: TestClient, path: str) -> None:
    assert set(query_parameters(path)) == accepted(path)
    path_params = {p["name"] for p in parameters(path) if p["in"] == "path"}
    assert path_params == {part[1:-1] for part in path.split("/") if part.startswith("{")}


#: The hparams request a route answers 200 (metric_evals: a session's metric that exists).
REQUESTS = {"/api/v1/hparams/metric_evals": '{"sessionName":"train","metricName":{"tag":"acc"}}'}


#: The series a route of one series' steps reads (run, tag). The shared logdir has no PR
#: curves: that route answers its 404 here (tests/api/test_plugin_data.py reads real ones).
SERIES = {
    "/api/v1/distributions": ("train", "weights"),
    "/api/v1/text": ("train", "notes/text_summary"),
    "/api/v1/pr_curves": ("train", "absent"),
}


def ok_status(path: str) -> int:
    """The status of a well-formed request of ``path`` over the shared store."""
    return 404 if path == "/api/v1/pr_curves" else 200


def sample_value(param: dict[str, Any], path: str = "") -> str:
    """A value the server accepts for a described parameter (of the route ``path``)."""
    schema = param["schema"]
    if param["name"] == "experiment":
        return EXPERIMENT
    if param["name"] in ("run", "tag") and path in SERIES:
        return SERIES[path][param["name"] == "tag"]
    if param["name"] == "since":
        return "0"
    if param["name"] == "request":
        return REQUESTS.get(path, "{}")
    if "enum" in schema:
        return str(schema["enum"][0])
    if schema["type"] == "integer":
        return str(max(schema["minimum"], 0))
    return "x"


def plugin_of(path: str) -> str:
    """A plugin with data of the kind a data path serves."""
    for kind, plugin in (
        ("scalars", "scalars"),
        ("tensors", "histograms"),
        ("blob", "images"),
        ("descriptions", "images"),
    ):
        if path.startswith(f"/api/v1/{kind}"):
            return plugin
    raise AssertionError(path)


def url_of(path: str, key: str) -> str:
    return path.replace("{key}", key)


@pytest.fixture(scope="module")
def blob_key(api: TestClient) -> str:
    answer = get_json(api, "/api/v1/blob_sequences", plugin="images", latest=1, index_min=2)
    return str(answer["train"]["multi"][0]["blobs"][0])


def fetch(client: TestClient, url: str, params: list[tuple[str, str]]) -> Any:
    """GET; a live stream is closed after its headers."""
    with client.stream("GET", url, params=params) as response:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            response.read()
        return response


@pytest.mark.parametrize("path", DATA_PATHS)
def test_every_described_parameter_is_taken(api: TestClient, path: str, blob_key: str) -> None:
    described = query_parameters(path)
    required = [
        (n, plugin_of(path) if n == "plugin" else sample_value(p, path))
        for n, p in described.items()
        if p.get("required")
    ]
    if path in REQUESTS:  # without one, the route answers its 404 (no such session)
        required.append(("request", REQUESTS[path]))
    url = url_of(path, blob_key)
    for name, param in described.items():
        value = plugin_of(path) if name == "plugin" else sample_value(param, path)
        params = [*dict([*required, (name, value)]).items()]
        response = fetch(api, url, params)
        assert response.status_code == ok_status(path), (path, params, response.text)
    assert_error(fetch(api, url, [*required, ("undescribed", "1")]), 400)
    for name, param in described.items():
        if param.get("required"):
            missing = [(n, v) for n, v in required if n != name]
            assert_error(fetch(api, url, missing), 400)


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in DATA_PATHS
        if any(
            q["schema"].get("type") == "integer" or "enum" in q["schema"]
            for q in query_parameters(p).values()
        )
    ],
)
def test_parameter_schemas_are_what_the_handlers_check(api: TestClient, path: str) -> None:
    described = query_parameters(path)
    base = [("plugin", plugin_of(path))] if "plugin" in described else []
    if path in SERIES:
        base = [("run", SERIES[path][0]), ("tag", SERIES[path][1])]
    for name, param in described.items():
        schema = param["schema"]
        if schema.get("type") == "integer":
            lo, hi = schema["minimum"], schema["maximum"]
            for value in (lo, hi):
                response = fetch(api, path, [*base, (name, str(value))])
                assert response.status_code == ok_status(path), (path, name, value, response.text)
            for value in (lo - 1, hi + 1, "1.0", "one"):
                assert_error(fetch(api, path, [*base, (name, str(value))]), 400)
        elif "enum" in schema:
            for value in schema["enum"]:
                assert fetch(api, path, [*base, (name, value)]).status_code == 200
            assert_error(fetch(api, path, [*base, (name, "yaml")]), 400)


#: Parameters bounding a range, low then high.
RANGES = (("step_min", "step_max"), ("index_min", "index_max"))


@pytest.mark.parametrize(
    ("path", "low", "high"),
    [
        (p, low, high)
        for p in sorted(SPEC["paths"])
        for low, high in RANGES
        if low in query_parameters(p)
    ],
)
def test_inverted_ranges_are_described_as_400(
    api: TestClient, path: str, low: str, high: str
) -> None:
    described = query_parameters(path)
    # Each value fits its parameter's schema; only the pair is wrong.
    values = {low: 5, high: 2}
    for name, value in values.items():
        schema_validator(described[name]["schema"]).validate(value)
    response = SPEC["paths"][path]["get"]["responses"]["400"]
    assert f"{low} > {high}" in response["description"], response
    params = [("plugin", plugin_of(path)), *((n, str(v)) for n, v in values.items())]
    answer = fetch(api, path, params)
    error = assert_error(answer, 400)
    schema_validator(response_schema(path, 400)).validate(answer.json())
    assert f"{low}=5 is greater than {high}=2" in error["message"]


#: Real requests whose JSON answers must fit the described 200 schema.
ANSWERS = [
    ("/api/v1/health", []),
    ("/api/v1/openapi.json", []),
    ("/api/v1/experiments", []),
    ("/api/v1/plugins", []),
    ("/api/v1/runs", []),
    ("/api/v1/scalars/list", [("plugin", "scalars")]),
    ("/api/v1/tensors/list", [("plugin", "histograms")]),
    ("/api/v1/tensors/list", [("plugin", "text")]),
    ("/api/v1/blob_sequences/list", [("plugin", "images")]),
    ("/api/v1/blob_sequences/list", [("plugin", "audio")]),
    ("/api/v1/scalars", [("plugin", "scalars")]),
    ("/api/v1/scalars", [("plugin", "scalars"), ("format", "columns")]),
    ("/api/v1/scalars", [("plugin", "scalars"), ("downsample", "0")]),
    ("/api/v1/tensors", [("plugin", "histograms")]),
    ("/api/v1/tensors", [("plugin", "text")]),
    ("/api/v1/blob_sequences", [("plugin", "images")]),
    ("/api/v1/blob_sequences", [("plugin", "audio")]),
    ("/api/v1/data_loss", []),
    ("/api/v1/data_loss", [("run", "train")]),
    # A plugin of TensorBoard's without data in this store: empty, not an error.
    ("/api/v1/scalars", [("plugin", "scalars"), ("run", "absent")]),
    ("/api/v1/tensors", [("plugin", "pr_curves")]),
    ("/api/v1/blob_sequences/list", [("plugin", "graphs")]),
    ("/api/v1/distributions", [("run", "train"), ("tag", "weights")]),
    ("/api/v1/text", [("run", "train"), ("tag", "notes/text_summary")]),
    ("/api/v1/descriptions", [("plugin", "images")]),
    ("/api/v1/descriptions", [("plugin", "scalars")]),
]


@pytest.mark.parametrize("path,params", ANSWERS)
def test_answers_fit_the_schemas(api: TestClient, path: str, params: list[tuple[str, str]]) -> None:
    body = get_json(api, path, **dict(params))
    schema_validator(response_schema(path, 200)).validate(body)


def test_schemas_are_strict_enough_to_fail(api: TestClient) -> None:
    # The schemas must be able to reject: a datum missing its value, a bare float where a
    # NaN string belongs, an error with extra keys.
    datum = schema_validator(response_schema("/api/v1/scalars", 200))
    with pytest.raises(jsonschema.ValidationError):
        datum.validate({"train": {"acc": [{"step": 1, "wall_time": 2.0}]}})
    with pytest.raises(jsonschema.ValidationError):
        datum.validate({"train": {"acc": [{"step": 1, "wall_time": 2.0, "value": "nan"}]}})
    error = schema_validator({"$ref": "#/components/schemas/Error"})
    with pytest.raises(jsonschema.ValidationError):
        error.validate({"error": {"code": "x", "message": "y", "detail": 1}})


def test_errors_fit_the_error_schema(api: TestClient) -> None:
    error = schema_validator({"$ref": "#/components/schemas/Error"})
    for url, status in [
        ("/api/v1/scalars?plugin=scalars&latest=0", 400),
        ("/api/v1/runs?experiment=nope", 404),
        ("/api/v1/nope?plugin=x", 404),
        ("/api/v1/scalars?plugin=scalar", 400),
        ("/api/v1/blob/nope~1", 404),
        ("/nowhere", 404),
    ]:
        response = api.get(url)
        assert response.status_code == status
        error.validate(response.json())
    assert api.post("/api/v1/runs").status_code == 405
    error.validate(api.post("/api/v1/runs").json())


def test_csv_is_described(api: TestClient) -> None:
    response = api.get("/api/v1/scalars", params={"plugin": "scalars", "format": "csv"})
    media = response.headers["content-type"].split(";")[0]
    assert response_schema("/api/v1/scalars", 200, media)["type"] == "string"


def test_every_route_and_parameter_is_in_the_docs() -> None:
    """The HTTP API page shows the reference generated from this document (tools/docs_gen.py),
    and that reference names every route and every parameter, each with what it means."""
    repo = Path(__file__).resolve().parents[2]
    assert "<!-- generated: http-api -->" in (repo / "docs" / "http-api.md").read_text("utf-8")
    spec = importlib.util.spec_from_file_location("docs_gen", repo / "tools" / "docs_gen.py")
    assert spec is not None and spec.loader is not None
    docs_gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(docs_gen)
    text = docs_gen.http_reference(openapi.SPEC)
    missing = [f"{m} {r.path}" for r in ROUTES for m in r.methods if f"`{m} {r.path}`" not in text]
    for route in ROUTES:
        for param in route.params:
            if f"| `{param.name}` | {param.location} |" not in text:
                missing.append(f"{route.path} {param.name}")
            if not param.description.strip():
                missing.append(f"{route.path} {param.name}: a description")
    assert missing == [], f"document these in the route table (api/routes.py): {missing}"
