"""``/api/v1/metadata/...``: ML Metadata's MetadataStore over HTTP (the lineage store of this
boardd), and the lineage graph of an artifact for drawing.

A call is ``POST /api/v1/metadata/<method>`` with the method's keyword arguments as a JSON
object (messages as proto3 JSON); the answer is ``{"result": …}``. Reads run on a worker
thread with its own read-only store; writes go to the lineage service's one writer thread and
need ``Authorization: Bearer <token>`` even on loopback.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response

from boardd.api.app_state import state_of
from boardd.api.bodies import read_body
from boardd.api.errors import ApiError
from boardd.api.metadata_ops import BY_NAME, Arg, Operation
from boardd.api.replies import json_bytes
from boardd.api.routes import Query, RouteDef
from boardd.lineage import LineageService, LineageUnavailable

# Protocol buffers and the metadata package are imported by the handlers: not on the start
# path of `boardd serve` (tests/daemon/test_start_imports.py).

#: At most this many bytes of request JSON.
MAX_REQUEST_BYTES = 8 << 20

#: MLMD's error classes (boardd.metadata.errors) → HTTP status.
_STATUS = {
    "InvalidArgumentError": 400,
    "OutOfRangeError": 400,
    "NotFoundError": 404,
    "AlreadyExistsError": 409,
    "FailedPreconditionError": 409,
    "AbortedError": 409,
    "UnimplementedError": 400,
    "UnstorableValueError": 400,
}


def _service(request: Request) -> LineageService:
    service = state_of(request).lineage
    if service is None:
        raise ApiError(503, "this server has no lineage store (boardd serve opens one)")
    return service


def _reply(data: Any) -> Response:
    return Response(json_bytes(data), media_type="application/json")


# -- arguments ---------------------------------------------------------------------------------


def _integer(value: object, where: str) -> int:
    if isinstance(value, bool):
        raise ApiError(400, f"{where}: give a whole number, not {json.dumps(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)  # proto3 JSON writes int64 as a string
    raise ApiError(400, f"{where}: give a whole number, not {json.dumps(value)[:80]}")


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ApiError(400, f"{where}: give a string, not {json.dumps(value)[:80]}")
    return value


def _list(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise ApiError(400, f"{where}: give a JSON array, not {json.dumps(value)[:80]}")
    return value


def _message(name: str, value: object, where: str) -> Any:
    from google.protobuf import json_format

    from boardd.metadata.proto import metadata_store_pb2 as pb

    if not isinstance(value, dict):
        raise ApiError(400, f"{where}: give a {name} as a JSON object (proto3 JSON)")
    message = getattr(pb, name)()
    try:
        json_format.ParseDict(value, message)
    except json_format.ParseError as exc:
        raise ApiError(400, f"{where}: not a valid {name}: {exc}") from None
    return message


def _list_options(value: object, where: str) -> Any:
    from boardd.metadata import ListOptions
    from boardd.metadata.metadata_store import OrderByField

    if value is None:
        return None
    if not isinstance(value, dict):
        raise ApiError(400, f"{where}: give an object {{limit, order_by, is_asc, filter_query}}")
    allowed = {"limit", "order_by", "is_asc", "filter_query"}
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ApiError(
            400,
            f"{where}: unknown field(s) {', '.join(unknown)}; allowed: "
            + ", ".join(sorted(allowed)),
        )
    kwargs: dict[str, Any] = {}
    if value.get("limit") is not None:
        kwargs["limit"] = _integer(value["limit"], f"{where}.limit")
    if value.get("order_by") is not None:
        order = _string(value["order_by"], f"{where}.order_by")
        names = [f.name for f in OrderByField]
        if order not in names:
            raise ApiError(400, f"{where}.order_by {order!r}: give one of {', '.join(names)}")
        kwargs["order_by"] = OrderByField[order]
    if value.get("is_asc") is not None:
        if not isinstance(value["is_asc"], bool):
            raise ApiError(400, f"{where}.is_asc: give true or false")
        kwargs["is_asc"] = value["is_asc"]
    if value.get("filter_query") is not None:
        kwargs["filter_query"] = _string(value["filter_query"], f"{where}.filter_query")
    return ListOptions(**kwargs)


def convert(arg: Arg, value: object) -> object:
    """One argument from its JSON value; ApiError(400) says what is wrong."""
    where = arg.name
    kind = arg.kind
    if kind == "int":
        return _integer(value, where)
    if kind == "str":
        return _string(value, where)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ApiError(400, f"{where}: give true or false")
        return value
    if kind == "ints":
        return [_integer(v, f"{where}[{i}]") for i, v in enumerate(_list(value, where))]
    if kind == "strs":
        return [_string(v, f"{where}[{i}]") for i, v in enumerate(_list(value, where))]
    if kind == "list_options":
        return _list_options(value, where)
    if kind.startswith("msg:"):
        return _message(kind[4:], value, where)
    if kind.startswith("msgs:"):
        name = kind[5:]
        return [_message(name, v, f"{where}[{i}]") for i, v in enumerate(_list(value, where))]
    if kind == "artifact_and_events":
        pairs: list[tuple[Any, Any]] = []
        for i, item in enumerate(_list(value, where)):
            pair = _list(item, f"{where}[{i}]")
            if len(pair) not in (1, 2):
                raise ApiError(400, f"{where}[{i}]: give [Artifact] or [Artifact, Event]")
            artifact = _message("Artifact", pair[0], f"{where}[{i}][0]")
            event = (
                None
                if len(pair) == 1 or pair[1] is None
                else _message("Event", pair[1], f"{where}[{i}][1]")
            )
            pairs.append((artifact, event))
        return pairs
    if kind == "event_edges":
        edges: list[tuple[int | None, int | None, Any]] = []
        for i, item in enumerate(_list(value, where)):
            edge = _list(item, f"{where}[{i}]")
            if len(edge) != 3:
                raise ApiError(
                    400,
                    f"{where}[{i}]: give [execution index or null, artifact index or null, Event]",
                )
            edges.append(
                (
                    None if edge[0] is None else _integer(edge[0], f"{where}[{i}][0]"),
                    None if edge[1] is None else _integer(edge[1], f"{where}[{i}][1]"),
                    _message("Event", edge[2], f"{where}[{i}][2]"),
                )
            )
        return edges
    raise AssertionError(kind)


def arguments(operation: Operation, body: object) -> dict[str, object]:
    """The keyword arguments of a call from its JSON body; ApiError(400) names what is wrong."""
    if not isinstance(body, dict):
        raise ApiError(400, "POST the method's keyword arguments as a JSON object")
    declared = {a.name: a for a in operation.args}
    unknown = sorted(set(body) - set(declared))
    if unknown:
        raise ApiError(
            400,
            f"{operation.name}: unknown argument(s) {', '.join(unknown)}; it takes: "
            + (", ".join(declared) or "none"),
        )
    missing = [a.name for a in operation.args if a.required and a.name not in body]
    if missing:
        raise ApiError(400, f"{operation.name}: give {', '.join(missing)}")
    return {name: convert(declared[name], value) for name, value in body.items()}


def encode(result: object) -> object:
    """A method's result as JSON: messages as proto3 JSON, tuples and lists as arrays."""
    from google.protobuf import json_format
    from google.protobuf.message import Message

    if isinstance(result, Message):
        return json_format.MessageToDict(result)
    if isinstance(result, (list, tuple)):
        return [encode(item) for item in result]
    return result


# -- handlers ----------------------------------------------------------------------------------


async def _body(request: Request) -> object:
    raw = await read_body(request, MAX_REQUEST_BYTES)
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(400, f"the request body is not JSON: {exc}") from None


def _check_write_token(request: Request) -> None:
    """Writes need the bearer token itself, even on loopback (the login cookie of a browser
    does not do: a page may not write lineage records on the user's behalf)."""
    token = state_of(request).token
    if token is None:
        raise ApiError(
            403,
            "writes to the lineage store need a token: start boardd serve with --token-file "
            "FILE and send 'Authorization: Bearer <token>'",
            "forbidden",
        )
    given = request.headers.get("authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        raise ApiError(
            401,
            "writes to the lineage store need 'Authorization: Bearer <token>' (the token in "
            "the file given to boardd serve --token-file)",
        )


def _mlmd_error(exc: Exception) -> ApiError | None:
    from boardd.metadata import errors

    if isinstance(exc, LineageUnavailable):
        return ApiError(503, str(exc))
    for klass in type(exc).__mro__:
        status = _STATUS.get(klass.__name__)
        if status is not None and klass.__module__.startswith(errors.__name__.rsplit(".", 1)[0]):
            code = {409: "conflict"}.get(status)
            return ApiError(status, f"{klass.__name__}: {exc}", code)
    return None


async def call(request: Request, query: Query, route: RouteDef) -> Response:
    """``POST /api/v1/metadata/<method>``."""
    name = request.path_params.get("operation", "")
    operation = BY_NAME.get(name)
    if operation is None:
        raise ApiError(
            404,
            f"no MetadataStore method {name!r} here; see the enum of operation in "
            "/api/v1/openapi.json (get_* read, put_* write)",
        )
    if operation.write:
        _check_write_token(request)
    service = _service(request)
    kwargs = arguments(operation, await _body(request))

    def run(store: Any) -> object:
        return encode(getattr(store, operation.name)(**kwargs))

    try:
        if operation.write:
            result = await service.write_async(run)
        else:
            result = await anyio.to_thread.run_sync(service.read, run)
    except Exception as exc:
        mapped = _mlmd_error(exc)
        if mapped is None:
            raise
        raise mapped from None
    return _reply({"result": result})


async def lineage_graph(request: Request, query: Query, route: RouteDef) -> Response:
    """``GET /api/v1/metadata/lineage_graph?artifact_id=N|uri=U&hops=K``."""
    from boardd.lineage.graph import LineageNotFound, artifacts_for
    from boardd.lineage.graph import lineage_graph as graph

    artifact_id = query.integer("artifact_id")
    uri = query.text("uri")
    if (artifact_id is None) == (uri is None):
        raise ApiError(400, "give artifact_id= or uri= (one of them)")
    hops = query.integer("hops")
    hops = 2 if hops is None else hops
    service = _service(request)

    def build(store: Any) -> object:
        start = artifact_id
        if start is None:
            assert uri is not None
            found = artifacts_for(store, uri)
            if not found:
                raise LineageNotFound(f"no artifact has the URI {uri!r}")
            start = found[0].id
        return graph(store, start, hops)

    try:
        result = await anyio.to_thread.run_sync(service.read, build)
    except LineageNotFound as exc:
        raise ApiError(404, str(exc)) from None
    except Exception as exc:
        mapped = _mlmd_error(exc)
        if mapped is None:
            raise
        raise mapped from None
    return _reply(result)
