"""/api/v1/metadata/...: ML Metadata's MetadataStore over a real HTTP server — the seed's
walkthrough through HTTP giving what the Python API gives on the same store, writes needing
the token even on loopback, every bad request a 4xx in boardd's envelope, and the lineage
graph of a checkpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boardd.api.app import create_app
from boardd.api.auth import cookie_value
from boardd.config import ExperimentSpec
from boardd.lineage import LineageService, vocabulary
from boardd.metadata.proto import metadata_store_pb2 as pb
from tests.api.conftest import assert_error
from tests.conftest import ThreadedServer, ingest
from tests.lineage.conftest import TRIALS, TrainingLogdir, write_training_logdir

TOKEN = "lineage-token-0123456789"
AUTH = {"authorization": f"Bearer {TOKEN}"}


class Api:
    """A real server with a lineage store, and a client to it."""

    def __init__(self, url: str, service: LineageService, logdir: TrainingLogdir) -> None:
        self.client = httpx.Client(base_url=url, timeout=10.0, trust_env=False)
        self.service = service
        self.logdir = logdir

    def call(self, method: str, headers: dict[str, str] | None = AUTH, **kwargs: Any) -> Any:
        """POSTs a call and returns its result (asserting 200); the server wants the token
        for reads too when it has one."""
        response = self.client.post(f"/api/v1/metadata/{method}", json=kwargs, headers=headers)
        assert response.status_code == 200, (method, response.text)
        body = response.json()
        assert set(body) == {"result"}
        return body["result"]

    def write(self, method: str, **kwargs: Any) -> Any:
        return self.call(method, AUTH, **kwargs)


@contextmanager
def running(tmp_path: Path, token: str | None) -> Iterator[Api]:
    logdir = write_training_logdir(tmp_path)
    spec = ExperimentSpec("exp", logdir.path, tmp_path / "store.sqlite")
    ingest(logdir.path, spec.db, experiment="exp")
    service = LineageService(tmp_path / "lineage.sqlite", [spec])
    service.start()
    server = ThreadedServer(create_app([spec], token=token, lineage=service)).start()
    api = Api(server.url, service, logdir)
    try:
        service.refresh_now()
        yield api
    finally:
        api.client.close()
        server.stop()
        service.close()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with running(tmp_path, TOKEN) as made:
        yield made


def msg(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message)


def test_the_walkthrough_over_http_is_the_python_api(api: Api) -> None:
    # Seed 002's steps, as JSON; then the same reads through the Python API on the file.
    data_type = pb.ArtifactType(name="DataSet")
    data_type.properties["day"] = pb.INT
    data_type.properties["split"] = pb.STRING
    data_type_id = api.write("put_artifact_type", artifact_type=msg(data_type))
    model_type = pb.ArtifactType(name="SavedModel")
    model_type.properties["version"] = pb.INT
    model_type.properties["name"] = pb.STRING
    model_type_id = api.write("put_artifact_type", artifact_type=msg(model_type))
    trainer_type = pb.ExecutionType(name="Trainer")
    trainer_type.properties["state"] = pb.STRING
    trainer_type_id = api.write("put_execution_type", execution_type=msg(trainer_type))
    data = pb.Artifact(type_id=data_type_id, uri="path/to/data")
    data.properties["day"].int_value = 1
    data.properties["split"].string_value = "train"
    [data_id] = api.write("put_artifacts", artifacts=[msg(data)])
    run = pb.Execution(type_id=trainer_type_id)
    run.properties["state"].string_value = "RUNNING"
    [run_id] = api.write("put_executions", executions=[msg(run)])
    event = pb.Event(artifact_id=data_id, execution_id=run_id, type=pb.Event.DECLARED_INPUT)
    api.write("put_events", events=[msg(event)])
    model = pb.Artifact(type_id=model_type_id, uri="path/to/model/file")
    model.properties["version"].int_value = 1
    model.properties["name"].string_value = "MNIST-v1"
    [model_id] = api.write("put_artifacts", artifacts=[msg(model)])
    out = pb.Event(artifact_id=model_id, execution_id=run_id, type=pb.Event.DECLARED_OUTPUT)
    api.write("put_events", events=[msg(out)])
    run.id = run_id
    run.properties["state"].string_value = "COMPLETED"
    api.write("put_executions", executions=[msg(run)])
    experiment_type = pb.ContextType(name="Experiment")
    experiment_type.properties["note"] = pb.STRING
    # boardd registered "Experiment" (its logdir contexts): the user's type extends it.
    experiment_type_id = api.write(
        "put_context_type",
        context_type=msg(experiment_type),
        can_add_fields=True,
        can_omit_fields=True,
    )
    mine = pb.Context(type_id=experiment_type_id, name="exp1")
    mine.properties["note"].string_value = "My first experiment."
    [context_id] = api.write("put_contexts", contexts=[msg(mine)])
    api.write(
        "put_attributions_and_associations",
        attributions=[{"artifactId": model_id, "contextId": context_id}],
        associations=[{"executionId": run_id, "contextId": context_id}],
    )
    over_http = {
        "artifacts": api.call("get_artifacts_by_context", context_id=context_id),
        "executions": api.call("get_executions_by_context", context_id=context_id),
        "by_uri": api.call("get_artifacts_by_uri", uri="path/to/data"),
        "types": api.call("get_artifact_types"),
        "events": api.call("get_events_by_execution_ids", execution_ids=[run_id]),
        "trainer": api.call("get_execution_type", type_name="Trainer"),
    }
    direct = api.service.read(
        lambda s: {
            "artifacts": [msg(a) for a in s.get_artifacts_by_context(context_id)],
            "executions": [msg(e) for e in s.get_executions_by_context(context_id)],
            "by_uri": [msg(a) for a in s.get_artifacts_by_uri("path/to/data")],
            "types": [msg(t) for t in s.get_artifact_types()],
            "events": [msg(e) for e in s.get_events_by_execution_ids([run_id])],
            "trainer": msg(s.get_execution_type("Trainer")),
        }
    )
    assert over_http == direct
    assert [a["id"] for a in over_http["artifacts"]] == [str(model_id)]
    assert over_http["executions"][0]["properties"]["state"] == {"stringValue": "COMPLETED"}


def test_health_tells_the_lineage_store(api: Api) -> None:
    from boardd.api.openapi import SPEC
    from tests.api.test_openapi import response_schema, schema_validator

    health = api.client.get("/api/v1/health", headers=AUTH).json()
    assert health["lineage"]["state"] == "open"
    assert health["lineage"]["path"] == str(api.service.path)
    assert health["lineage"]["refreshes"] >= 1
    assert "lineage" in SPEC["components"]["schemas"]["Health"]["properties"]
    schema_validator(response_schema("/api/v1/health", 200)).validate(health)


def test_list_options_and_paging(api: Api) -> None:
    everything = api.call("get_artifacts")
    first = api.call("get_artifacts", list_options={"limit": 2, "order_by": "ID", "is_asc": False})
    ids = sorted((int(a["id"]) for a in everything), reverse=True)
    assert [int(a["id"]) for a in first] == ids[:2]


def test_writes_need_the_token_even_on_loopback(tmp_path: Path) -> None:
    dataset = {"name": "DataSet"}
    with running(tmp_path / "open", None) as api:
        # No token configured: reads are open, writes are refused with the way out.
        assert api.call("get_artifact_types", headers=None)
        error = assert_error(
            api.client.post("/api/v1/metadata/put_artifact_type", json={"artifact_type": dataset}),
            403,
        )
        assert "--token-file" in error["message"]
    with running(tmp_path / "guarded", TOKEN) as api:
        assert_error(
            api.client.post("/api/v1/metadata/put_artifact_type", json={"artifact_type": dataset}),
            401,
        )
        # A browser's login cookie reads, but does not write.
        api.client.cookies.set(
            f"boardd-auth-{api.client.base_url.port}", cookie_value(TOKEN), domain="127.0.0.1"
        )
        reads = api.client.post("/api/v1/metadata/get_artifact_types", json={})
        assert reads.status_code == 200
        assert_error(
            api.client.post("/api/v1/metadata/put_artifact_type", json={"artifact_type": dataset}),
            401,
        )
        assert isinstance(api.write("put_artifact_type", artifact_type=dataset), int)


@pytest.mark.parametrize(
    ("method", "body", "status", "words"),
    [
        ("put_artifact_type", b"{not json", 400, "not JSON"),
        ("put_artifact_type", b"[1, 2]", 400, "JSON object"),
        ("put_artifact_type", b"{}", 400, "give artifact_type"),
        ("put_artifact_type", b'{"artifact_type": {"name": "X"}, "nope": 1}', 400, "nope"),
        ("put_artifact_type", b'{"artifact_type": {"name": 5, "bad": 1}}', 400, "ArtifactType"),
        ("put_artifact_type", b'{"artifact_type": "X"}', 400, "JSON object"),
        ("put_artifacts", b'{"artifacts": {"typeId": 1}}', 400, "JSON array"),
        ("put_artifacts", b'{"artifacts": [{"typeId": 999999}]}', 404, "NotFoundError"),
        ("get_artifacts_by_id", b'{"artifact_ids": ["x"]}', 400, "whole number"),
        ("get_artifacts_by_id", b'{"artifact_ids": [true]}', 400, "whole number"),
        ("get_artifact_type", b'{"type_name": "NoSuchType"}', 404, "NotFoundError"),
        ("get_artifacts", b'{"list_options": {"order_by": "NAME"}}', 400, "CREATE_TIME"),
        ("get_artifacts", b'{"list_options": {"limit": "ten"}}', 400, "whole number"),
        ("get_artifacts", b'{"list_options": {"is_asc": 1}}', 400, "true or false"),
        ("get_artifacts", b'{"list_options": {"sort": 1}}', 400, "sort"),
        ("no_such_method", b"{}", 404, "no MetadataStore method"),
        (
            "put_execution",
            b'{"execution": {}, "artifact_and_events": [[{}, {}, {}]], "contexts": []}',
            400,
            "[Artifact, Event]",
        ),
    ],
)
def test_bad_requests_get_the_envelope(
    api: Api, method: str, body: bytes, status: int, words: str
) -> None:
    response = api.client.post(
        f"/api/v1/metadata/{method}",
        content=body,
        headers={**AUTH, "content-type": "application/json"},
    )
    error = assert_error(response, status)
    assert words in error["message"], error


def test_a_value_the_store_cannot_hold_is_the_clients_error(api: Api) -> None:
    """A NaN double (ML Metadata's InternalError: SQLite would keep a NULL) and a custom
    property with no value: 400 naming the property, and nothing written."""
    type_id = api.write("put_artifact_type", artifact_type={"name": "Values"})
    for value, words in (({"double_value": "NaN"}, "NaN"), ({}, "no value set: x")):
        artifact = {"type_id": type_id, "uri": "/v", "custom_properties": {"x": value}}
        response = api.client.post(
            "/api/v1/metadata/put_artifacts", json={"artifacts": [artifact]}, headers=AUTH
        )
        error = assert_error(response, 400)
        assert words in error["message"], error
    assert api.call("get_artifacts_by_uri", uri="/v") == []


def test_a_type_conflict_is_409(api: Api) -> None:
    changed = {"name": vocabulary.CHECKPOINT, "properties": {"size": "STRING"}}
    error = assert_error(
        api.client.post(
            "/api/v1/metadata/put_artifact_type", json={"artifact_type": changed}, headers=AUTH
        ),
        409,
    )
    assert "AlreadyExistsError" in error["message"]
    assert error["code"] == "conflict"


def test_the_lineage_graph_of_a_checkpoint(api: Api) -> None:
    checkpoint = api.logdir.checkpoints["lr0.1"][0]
    by_uri = api.client.get(
        "/api/v1/metadata/lineage_graph",
        params={"uri": str(checkpoint), "hops": 2},
        headers=AUTH,
    )
    assert by_uri.status_code == 200, by_uri.text
    graph = by_uri.json()
    [run] = [n for n in graph["nodes"] if n["kind"] == "execution"]
    assert run["name"] == "exp/lr0.1"
    hparams, _ = TRIALS["lr0.1"]
    assert run["custom_properties"]["opt"] == hparams["opt"]
    root = graph["root"]
    assert {"source": run["id"], "target": root, "type": "OUTPUT"} in graph["edges"]
    kinds = {n["type"] for n in graph["nodes"]}
    assert kinds == {vocabulary.TRAINING_RUN, vocabulary.CHECKPOINT, vocabulary.EVENT_FILE}
    by_id = api.client.get(
        "/api/v1/metadata/lineage_graph",
        params={"artifact_id": root.split(":")[1], "hops": 2},
        headers=AUTH,
    )
    assert by_id.json() == graph
    for params, status in [
        ({}, 400),
        ({"uri": "x", "artifact_id": 1}, 400),
        ({"uri": "/nowhere"}, 404),
        ({"uri": "/a\x00b"}, 404),  # was a 500: no path holds a NUL
        ({"artifact_id": 10**12}, 404),
        ({"artifact_id": 1, "hops": 21}, 400),
        ({"artifact_id": "one"}, 400),
    ]:
        assert_error(
            api.client.get("/api/v1/metadata/lineage_graph", params=params, headers=AUTH), status
        )


def test_without_a_lineage_store_the_routes_say_so(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    spec = ExperimentSpec("exp", logdir, tmp_path / "store.sqlite")
    server = ThreadedServer(create_app([spec])).start()
    try:
        with httpx.Client(base_url=server.url, trust_env=False) as client:
            assert_error(client.post("/api/v1/metadata/get_artifacts", json={}), 503)
            assert_error(
                client.get("/api/v1/metadata/lineage_graph", params={"artifact_id": 1}), 503
            )
    finally:
        server.stop()


def test_every_operation_is_a_store_method_with_those_arguments() -> None:
    import inspect

    from boardd.api.metadata_ops import OPERATIONS
    from boardd.api.openapi import SPEC
    from boardd.metadata.metadata_store import MetadataStore

    for op in OPERATIONS:
        method = getattr(MetadataStore, op.name)
        params = inspect.signature(method).parameters
        for arg in op.args:
            assert arg.name in params, (op.name, arg.name)
            assert (params[arg.name].default is inspect.Parameter.empty) == arg.required, (
                op.name,
                arg.name,
            )
        required = {
            n
            for n, p in params.items()
            if n != "self"
            and p.default is inspect.Parameter.empty
            and p.kind is p.POSITIONAL_OR_KEYWORD
        }
        assert required <= {a.name for a in op.args}, op.name
    [param] = SPEC["paths"]["/api/v1/metadata/{operation}"]["post"]["parameters"]
    assert param["schema"]["enum"] == [op.name for op in OPERATIONS]


def test_put_execution_with_artifacts_events_and_contexts(api: Api) -> None:
    # MLMD's atomic put_execution: an execution, its output artifact with its event, and a
    # context, in one call (one transaction), as [Artifact, Event] pairs in JSON.
    trainer = api.write("put_execution_type", execution_type={"name": "Trainer"})
    model = api.write("put_artifact_type", artifact_type={"name": "Model"})
    group = api.write("put_context_type", context_type={"name": "Pipeline"})
    execution_id, artifact_ids, context_ids = api.write(
        "put_execution",
        execution={"typeId": trainer, "lastKnownState": "COMPLETE"},
        artifact_and_events=[
            [{"typeId": model, "uri": "/models/m1"}, {"type": "OUTPUT"}],
            [{"typeId": model, "uri": "/models/m0"}],
        ],
        contexts=[{"typeId": group, "name": "nightly"}],
    )
    assert len(artifact_ids) == 2 and len(context_ids) == 1
    events = api.call("get_events_by_execution_ids", execution_ids=[execution_id])
    assert [(e["artifactId"], e["type"]) for e in events] == [(str(artifact_ids[0]), "OUTPUT")]
    contexts = api.call("get_contexts_by_execution", execution_id=execution_id)
    assert [c["name"] for c in contexts] == ["nightly"]
    graph = api.client.get(
        "/api/v1/metadata/lineage_graph",
        params={"artifact_id": artifact_ids[0], "hops": 1},
        headers=AUTH,
    ).json()
    assert {n["id"] for n in graph["nodes"]} == {
        f"artifact:{artifact_ids[0]}",
        f"execution:{execution_id}",
    }
    assert all(n["boardd"] is False for n in graph["nodes"])


#: Prints the signature of every public get_/put_ method of ml-metadata's MetadataStore.
_SIGNATURES = """
import inspect, json
from ml_metadata.metadata_store import metadata_store
print(json.dumps({
    name: [[p.name, p.default is inspect.Parameter.empty]
           for p in inspect.signature(fn).parameters.values() if p.name != "self"]
    for name, fn in inspect.getmembers(metadata_store.MetadataStore, inspect.isfunction)
    if name.startswith(("get_", "put_"))
}))
"""


def test_the_operations_are_ml_metadatas() -> None:
    # The oracle: the real ml-metadata's Python API, in its own venv (tests/metadata/oracle).
    import json
    import subprocess

    from boardd.api.metadata_ops import OPERATIONS
    from tests.metadata.oracle import oracle_python

    out = subprocess.run(
        [str(oracle_python()), "-c", _SIGNATURES],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    theirs = {name: dict(map(tuple, params)) for name, params in json.loads(out.stdout).items()}
    ours = {op.name: {a.name: a.required for a in op.args} for op in OPERATIONS}
    # extra_options is accepted and ignored by ml-metadata's open-source store.
    assert ours == {
        name: {k: v for k, v in params.items() if k != "extra_options"}
        for name, params in theirs.items()
    }


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def _calls(draw: st.DrawFn) -> tuple[str, object]:
    from boardd.api.metadata_ops import OPERATIONS

    op = draw(st.sampled_from(OPERATIONS))
    names = [a.name for a in op.args] + ["bogus"]
    chosen = draw(st.lists(st.sampled_from(names), max_size=len(names), unique=True))
    body: object = {name: draw(_JSON) for name in chosen}
    if draw(st.integers(0, 9)) == 0:
        body = draw(_JSON)  # not even an object
    name = op.name if draw(st.integers(0, 9)) else draw(st.text(max_size=10))
    return name, body


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with running(tmp_path_factory.mktemp("fuzz"), TOKEN) as made:
        yield made


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(call=_calls())
def test_fuzzed_calls_never_fail_the_server(fuzzed: Api, call: tuple[str, object]) -> None:
    name, body = call
    response = fuzzed.client.post(
        f"/api/v1/metadata/{quote(name, safe='')}",
        content=json.dumps(body, allow_nan=True),
        headers={**AUTH, "content-type": "application/json"},
    )
    assert response.status_code != 500, (name, body, response.text)
    # (A name ending in "/" gets Starlette's redirect to the name without it, as every route.)
    if response.status_code >= 400:
        assert_error(response, response.status_code)
