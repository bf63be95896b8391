"""The OpenAPI 3.1 description of boardd's HTTP API, generated from the route table.

tests/api/test_openapi.py holds it to the app: valid OpenAPI, the same paths as the app serves,
the same query parameters as the handlers accept, and real answers that fit the schemas.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from boardd import __version__
from boardd.api.routes import JSON, ROUTES, RouteDef
from boardd.api.schemas import SCHEMAS, ref

_ERROR_RESPONSES = {
    400: (
        "BadRequest",
        "a parameter is unknown, missing or malformed, or names an unknown plugin (the message "
        "says which)",
    ),
    401: ("Unauthorized", "the server wants Authorization: Bearer <token>"),
    403: (
        "Forbidden",
        "a write to the lineage store, and the server has no token (start boardd serve with "
        "--token-file)",
    ),
    404: ("NotFound", "no such experiment, blob, or lineage record"),
    409: ("Conflict", "the lineage store already holds such a record, or a different type"),
    413: (
        "TooLarge",
        "the answer could exceed the point bound, or the query string is too long: ask for "
        "less (downsample=, latest=, a step range, fewer runs or tags)",
    ),
    503: (
        "Unavailable",
        "the experiment's store does not exist yet or has no data, or the lineage store is "
        "not open (retry later)",
    ),
}

#: Parameters that bound a range: each value valid alone, the pair inverted is a 400.
_RANGES = (("step_min", "step_max"), ("index_min", "index_max"))

_TAG_TEXT = {"server": {"description": "health and what the server holds"}}

_ETAG_HEADERS = {
    "ETag": {
        "description": "strong validator of this answer (it changes with every commit of the "
        "data it was built from, and with the boardd version); send it back in If-None-Match",
        "schema": {"type": "string"},
    },
    "Cache-Control": {"description": "always no-cache: revalidate", "schema": {"type": "string"}},
}

_NOT_MODIFIED = {
    "description": "the If-None-Match validator still holds: reuse the cached answer",
    "headers": {"ETag": _ETAG_HEADERS["ETag"]},
}


def _bad_request(route: RouteDef) -> dict[str, Any]:
    """The 400 of a route: the shared one, or (on a route with ranges) one that also names
    the inverted ranges, which no parameter's schema can express."""
    names = route.query_names
    inverted = [f"{lo} > {hi}" for lo, hi in _RANGES if lo in names and hi in names]
    if not inverted:
        return {"$ref": "#/components/responses/BadRequest"}
    return {
        "description": f"{_ERROR_RESPONSES[400][1]}, or a range is inverted "
        f"({', '.join(inverted)}: each value is valid alone)",
        "content": {JSON: {"schema": ref("Error")}},
    }


def _responses(route: RouteDef) -> dict[str, Any]:
    answer = route.answer
    ok: dict[str, Any] = {"description": answer.description, "content": dict(answer.content)}
    headers = {**(_ETAG_HEADERS if answer.etag else {}), **answer.headers}
    if headers:
        ok["headers"] = headers
    out: dict[str, Any] = {"200": ok}
    if answer.etag:
        out["304"] = _NOT_MODIFIED
    for status in sorted({*route.errors, 401}):
        out[str(status)] = {"$ref": f"#/components/responses/{_ERROR_RESPONSES[status][0]}"}
    if "400" in out:
        out["400"] = _bad_request(route)
    return out


def _operation(route: RouteDef, method: str = "GET") -> dict[str, Any]:
    if method != "GET":
        # The same operation with its request message as the JSON body (the hparams routes).
        return {
            **_operation(route),
            "operationId": f"{route.operation_id}_{method.lower()}",
            "requestBody": {
                "required": False,
                "content": {JSON: {"schema": {"type": "object"}}},
            },
        }
    return {
        "operationId": route.operation_id,
        "summary": route.summary,
        "description": route.description,
        "tags": [route.tag],
        "parameters": [p.schema() for p in route.params],
        "responses": _responses(route),
    }


def build_spec(routes: Iterable[RouteDef]) -> dict[str, Any]:
    """The OpenAPI document of these routes."""
    routes = list(routes)
    tags = list(dict.fromkeys(r.tag for r in routes))
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "boardd HTTP API",
            "version": __version__,
            "description": "TensorBoard's generic data API (list metadata and read values of "
            "scalar, tensor and blob sequence time series, read blobs) over boardd's store, "
            "answered from a cache keyed by the store's commit generation: an answer is never "
            "older than the last commit. JSON answers carry an ETag (send If-None-Match for a "
            "304) and are gzip-compressed for clients that accept it.",
        },
        "servers": [{"url": "http://127.0.0.1:6007"}],
        "security": [{}, {"bearer": []}],
        "tags": [
            {
                "name": t,
                **({"description": "health and what the server holds"} if t == "server" else {}),
            }
            for t in tags
        ],
        "paths": {
            r.path: {method.lower(): _operation(r, method) for method in r.methods} for r in routes
        },
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "needed when boardd serve runs with --token-file",
                }
            },
            "schemas": SCHEMAS,
            "responses": {
                name: {
                    "description": text,
                    "content": {JSON: {"schema": ref("Error")}},
                }
                for name, text in _ERROR_RESPONSES.values()
            },
        },
    }


#: The description of every route of the app.
SPEC: dict[str, Any] = build_spec(ROUTES)
