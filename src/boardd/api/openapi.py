"""The OpenAPI 3.1 description of boardd's HTTP API, written by hand and served as JSON.

tests/api/test_openapi.py holds it to the app: the same paths as the route table, the same
query parameters as the handlers accept, and real answers that validate against the schemas.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from boardd import __version__
from boardd.api.common import check_params, json_response

JSON = "application/json"


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"$ref": f"#/components/{kind}/{name}"}


def _schema(name: str) -> dict[str, str]:
    return _ref("schemas", name)


def _param(name: str) -> dict[str, str]:
    return _ref("parameters", name)


def _json(schema: dict[str, Any], description: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": schema}}, **extra}


def _map_of(schema: dict[str, Any], key: str) -> dict[str, Any]:
    """An object keyed by free-form names (runs, tags, plugins)."""
    return {
        "type": "object",
        "description": f"keyed by {key}",
        "additionalProperties": schema,
    }


def _runs_tags(schema: dict[str, Any]) -> dict[str, Any]:
    return _map_of(_map_of(schema, "tag"), "run")


_ETAG_HEADERS = {
    "ETag": {
        "description": "strong validator of this answer (it changes with every commit of "
        "the data it was built from); send it back in If-None-Match",
        "schema": {"type": "string"},
    },
    "Cache-Control": {"description": "always no-cache: revalidate", "schema": {"type": "string"}},
}

_NOT_MODIFIED = {
    "description": "the If-None-Match validator still holds: reuse the cached answer",
    "headers": {"ETag": _ETAG_HEADERS["ETag"]},
}


def _errors(*statuses: int) -> dict[str, Any]:
    names = {
        400: "BadRequest",
        401: "Unauthorized",
        404: "NotFound",
        413: "TooLarge",
        503: "Unavailable",
    }
    return {str(s): _ref("responses", names[s]) for s in (*statuses, 401)}


def _op(
    operation_id: str,
    summary: str,
    description: str,
    parameters: list[dict[str, Any]],
    responses: dict[str, Any],
    tag: str,
) -> dict[str, Any]:
    return {
        "get": {
            "operationId": operation_id,
            "summary": summary,
            "description": description,
            "tags": [tag],
            "parameters": parameters,
            "responses": responses,
        }
    }


_KIND_TEXT = {
    "scalars": "scalar time series (one float64 per step)",
    "tensors": "tensor time series (histograms, text, PR curves, …)",
    "blob_sequences": "blob sequence time series (images, audio, graphs: a list of blobs per step)",
}
_LIST_META = {
    "scalars": "TimeSeries",
    "tensors": "TimeSeries",
    "blob_sequences": "BlobSequenceTimeSeries",
}
_FILTERS = [_param("experiment"), _param("plugin"), _param("run"), _param("tag")]
_STEPS = [_param("step_min"), _param("step_max"), _param("latest"), _param("downsample")]


def _data_paths() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for kind, text in _KIND_TEXT.items():
        paths[f"/api/v1/{kind}/list"] = _op(
            f"list_{kind}",
            f"List {kind} series",
            f"Metadata of every {text} of one plugin: `{{RUN: {{TAG: metadata}}}}`, runs and "
            "tags sorted by name. `run=` and `tag=` (repeatable) keep only those names (cross "
            "product); names that match nothing are left out, never an error.",
            list(_FILTERS),
            {
                "200": _json(
                    _runs_tags(_schema(_LIST_META[kind])), "the series", headers=_ETAG_HEADERS
                ),
                "304": _NOT_MODIFIED,
                **_errors(400, 404, 503),
            },
            kind,
        )
        values: list[dict[str, Any]] = [*_FILTERS, *_STEPS]
        if kind == "blob_sequences":
            values += [_param("index_min"), _param("index_max")]
        values.append(_param("scalar_format" if kind == "scalars" else "json_format"))
        content: dict[str, Any]
        if kind == "scalars":
            content = {
                JSON: {
                    "schema": {
                        "anyOf": [
                            _runs_tags({"type": "array", "items": _schema("ScalarDatum")}),
                            _runs_tags(_schema("ScalarColumns")),
                        ]
                    }
                },
                "text/csv": {
                    "schema": {
                        "type": "string",
                        "description": "a header `run,tag,step,wall_time,value`, then one row "
                        "per point; non-finite values spelled NaN, Infinity, -Infinity",
                    }
                },
            }
        else:
            datum = "TensorDatum" if kind == "tensors" else "BlobSequenceDatum"
            content = {JSON: {"schema": _runs_tags({"type": "array", "items": _schema(datum)})}}
        paths[f"/api/v1/{kind}"] = _op(
            f"read_{kind}",
            f"Read {kind}",
            f"The points of every matching {text}: `{{RUN: {{TAG: [datum, …]}}}}`, points "
            "sorted by step. Filters apply in this order: run/tag, step range, latest, "
            "downsample"
            + (", then the index range within each step" if kind == "blob_sequences" else "")
            + ". An answer that could exceed the point bound (runs × tags × samples) is "
            "refused with 413 before any point is read.",
            values,
            {
                "200": {
                    "description": "the points",
                    "headers": _ETAG_HEADERS,
                    "content": content,
                },
                "304": _NOT_MODIFIED,
                **_errors(400, 404, 413, 503),
            },
            kind,
        )
    return paths


def _int_param(name: str, description: str, minimum: int) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": {"type": "integer", "minimum": minimum, "maximum": 2**63 - 1},
    }


_PARAMETERS: dict[str, Any] = {
    "experiment": {
        "name": "experiment",
        "in": "query",
        "required": False,
        "description": "experiment name (see /api/v1/experiments); default: the first one",
        "schema": {"type": "string"},
    },
    "plugin": {
        "name": "plugin",
        "in": "query",
        "required": True,
        "description": "the plugin owning the data, e.g. scalars, histograms, images, text",
        "schema": {"type": "string", "minLength": 1},
    },
    "run": {
        "name": "run",
        "in": "query",
        "required": False,
        "description": "keep only this run; repeat for several (default: every run)",
        "schema": {"type": "array", "items": {"type": "string"}},
        "style": "form",
        "explode": True,
    },
    "tag": {
        "name": "tag",
        "in": "query",
        "required": False,
        "description": "keep only this tag; repeat for several (default: every tag)",
        "schema": {"type": "array", "items": {"type": "string"}},
        "style": "form",
        "explode": True,
    },
    "step_min": {
        **_int_param("step_min", "keep steps ≥ this (inclusive)", -(2**63)),
    },
    "step_max": {
        **_int_param("step_max", "keep steps ≤ this (inclusive); not below step_min", -(2**63)),
    },
    "latest": _int_param("latest", "keep only the last k steps of each series", 1),
    "downsample": _int_param(
        "downsample",
        "at most k points per series: always the last one, the others a deterministic "
        "uniform sample that depends only on the set of steps (series with the same steps "
        "keep the same steps); 0 gives no points",
        0,
    ),
    "index_min": _int_param("index_min", "keep blobs at index ≥ this within a step", 0),
    "index_max": _int_param(
        "index_max", "keep blobs at index ≤ this within a step; not below index_min", 0
    ),
    "scalar_format": {
        "name": "format",
        "in": "query",
        "required": False,
        "description": "json: a list of {step, wall_time, value} per series; columns: "
        "{step: […], wall_time: […], value: […]} per series; csv: text/csv",
        "schema": {"type": "string", "enum": ["json", "columns", "csv"], "default": "json"},
    },
    "json_format": {
        "name": "format",
        "in": "query",
        "required": False,
        "description": "only json for this kind",
        "schema": {"type": "string", "enum": ["json"], "default": "json"},
    },
}

_FLOAT_OR_TEXT = {
    "description": "a float; JSON has no NaN or infinities, so those are the strings "
    "NaN, Infinity, -Infinity (as TensorBoard spells them)",
    "anyOf": [{"type": "number"}, {"type": "string", "enum": ["NaN", "Infinity", "-Infinity"]}],
}

_SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "description": "every error, whatever the route",
        "required": ["error"],
        "additionalProperties": False,
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "additionalProperties": False,
                "properties": {
                    "code": {
                        "type": "string",
                        "description": "bad_request, unauthorized, not_found, "
                        "method_not_allowed, too_large, internal or unavailable",
                    },
                    "message": {"type": "string", "description": "what to change"},
                },
            }
        },
    },
    "FloatOrText": _FLOAT_OR_TEXT,
    "Health": {
        "type": "object",
        "required": ["status", "version", "uptime_seconds", "cache", "experiments"],
        "properties": {
            "status": {"type": "string", "enum": ["ok", "degraded"]},
            "version": {"type": "string"},
            "uptime_seconds": {"type": "number"},
            "cache": {
                "type": "object",
                "required": ["entries", "bytes", "hits", "misses", "hit_rate"],
                "properties": {
                    "entries": {"type": "integer"},
                    "bytes": {"type": "integer"},
                    "hits": {"type": "integer"},
                    "misses": {"type": "integer"},
                    "hit_rate": {"type": "number"},
                },
            },
            "experiments": {
                "type": "array",
                "items": {
                    "type": "object",
                    "description": "the daemon adds its live ingest state (state, lag, …)",
                    "required": ["name", "logdir", "data_loss"],
                    "properties": {
                        "name": {"type": "string"},
                        "logdir": {"type": "string"},
                        "data_loss": {
                            "type": ["integer", "null"],
                            "description": "data-loss records; null while there is no store",
                        },
                    },
                },
            },
        },
    },
    "Experiment": {
        "type": "object",
        "required": ["id", "name", "logdir", "creation_time"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "description": "what experiment= takes"},
            "name": {"type": "string"},
            "logdir": {"type": "string"},
            "creation_time": {"type": "number", "description": "seconds since the epoch"},
        },
    },
    "Run": {
        "type": "object",
        "required": ["name", "start_time"],
        "additionalProperties": False,
        "properties": {
            "name": {
                "type": "string",
                "description": "directory of the run's event files relative to the logdir "
                "('.' for the logdir itself)",
            },
            "start_time": {"type": ["number", "null"]},
        },
    },
    "Plugins": {
        "type": "object",
        "additionalProperties": {
            "type": "array",
            "items": {"type": "string", "enum": ["scalar", "tensor", "blob_sequence"]},
        },
    },
    "TimeSeries": {
        "type": "object",
        "required": [
            "max_step",
            "max_wall_time",
            "plugin_name",
            "plugin_content",
            "display_name",
            "description",
        ],
        "additionalProperties": False,
        "properties": {
            "max_step": {"type": ["integer", "null"]},
            "max_wall_time": {"type": ["number", "null"]},
            "plugin_name": {"type": "string"},
            "plugin_content": {
                "type": "string",
                "contentEncoding": "base64",
                "description": "the plugin's own metadata bytes (SummaryMetadata.plugin_data)",
            },
            "display_name": {"type": "string"},
            "description": {"type": "string"},
        },
    },
    "BlobSequenceTimeSeries": {
        "type": "object",
        "required": [
            "max_step",
            "max_wall_time",
            "plugin_name",
            "plugin_content",
            "display_name",
            "description",
            "max_length",
        ],
        "additionalProperties": False,
        "properties": {
            "max_step": {"type": ["integer", "null"]},
            "max_wall_time": {"type": ["number", "null"]},
            "plugin_name": {"type": "string"},
            "plugin_content": {"type": "string", "contentEncoding": "base64"},
            "display_name": {"type": "string"},
            "description": {"type": "string"},
            "max_length": {
                "type": "integer",
                "description": "the longest blob list of any step",
            },
        },
    },
    "ScalarDatum": {
        "type": "object",
        "required": ["step", "wall_time", "value"],
        "additionalProperties": False,
        "properties": {
            "step": {"type": "integer"},
            "wall_time": {"type": "number"},
            "value": _schema("FloatOrText"),
        },
    },
    "ScalarColumns": {
        "type": "object",
        "required": ["step", "wall_time", "value"],
        "additionalProperties": False,
        "properties": {
            "step": {"type": "array", "items": {"type": "integer"}},
            "wall_time": {"type": "array", "items": {"type": "number"}},
            "value": {"type": "array", "items": _schema("FloatOrText")},
        },
    },
    "TensorDatum": {
        "type": "object",
        "required": ["step", "wall_time", "dtype", "shape", "values"],
        "additionalProperties": False,
        "properties": {
            "step": {"type": "integer"},
            "wall_time": {"type": "number"},
            "dtype": {"type": "string", "description": "TensorFlow's name, e.g. DT_DOUBLE"},
            "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
            "values": {
                "description": "nested lists of the given shape (a bare value for rank 0): "
                "numbers (non-finite ones as FloatOrText), booleans, strings (UTF-8 text, or "
                '{"base64": …} for other bytes); complex numbers as [re, im]. A tensor that '
                'cannot be decoded is {"error": message}.',
            },
        },
    },
    "BlobSequenceDatum": {
        "type": "object",
        "required": ["step", "wall_time", "blobs"],
        "additionalProperties": False,
        "properties": {
            "step": {"type": "integer"},
            "wall_time": {"type": "number"},
            "blobs": {
                "type": "array",
                "description": "opaque keys for /api/v1/blob/{key}, in index order",
                "items": {"type": "string"},
            },
        },
    },
}


def _error_response(description: str) -> dict[str, Any]:
    return _json(_schema("Error"), description)


SPEC: dict[str, Any] = {
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
        {"name": "server", "description": "health and what the server holds"},
        {"name": "scalars"},
        {"name": "tensors"},
        {"name": "blob_sequences"},
    ],
    "paths": {
        "/api/v1/health": _op(
            "health",
            "Health",
            "Liveness, cache counters, and per experiment its ingest state and data-loss count.",
            [],
            {"200": _json(_schema("Health"), "the server's state"), **_errors(400)},
            "server",
        ),
        "/api/v1/openapi.json": _op(
            "openapi",
            "This description",
            "The OpenAPI 3.1 description of the API.",
            [],
            {"200": _json({"type": "object"}, "this document"), **_errors(400)},
            "server",
        ),
        "/api/v1/experiments": _op(
            "list_experiments",
            "List experiments",
            "Every experiment (watched logdir) whose store has data.",
            [],
            {
                "200": _json({"type": "array", "items": _schema("Experiment")}, "experiments"),
                **_errors(400),
            },
            "server",
        ),
        "/api/v1/plugins": _op(
            "list_plugins",
            "List plugins",
            "Each plugin that has data, with the data classes of its series.",
            [_param("experiment")],
            {"200": _json(_schema("Plugins"), "plugins"), **_errors(400, 404, 503)},
            "server",
        ),
        "/api/v1/runs": _op(
            "list_runs",
            "List runs",
            "The live runs, in TensorBoard's order: by start time (runs without one last), "
            "then by name.",
            [_param("experiment")],
            {
                "200": _json(
                    {"type": "array", "items": _schema("Run")}, "runs", headers=_ETAG_HEADERS
                ),
                "304": _NOT_MODIFIED,
                **_errors(400, 404, 503),
            },
            "server",
        ),
        "/api/v1/stream": {
            "get": {
                "operationId": "stream",
                "summary": "Live changes (Server-Sent Events)",
                "description": "One event per change after each commit: `event: series` "
                "(data: experiment, run, tag, plugin, data_class, step, wall_time, value for "
                "scalars, generation), `event: run` (data: experiment, run, change: created or "
                "deleted, generation), `event: reset` (the store went back in time: fetch "
                "again); a `: ping` comment when idle. Each event's id is a cursor: reconnect "
                "with Last-Event-ID (or since=) to receive exactly what was missed, coalesced.",
                "tags": ["server"],
                "parameters": [
                    {
                        "name": "experiment",
                        "in": "query",
                        "required": False,
                        "description": "follow these experiments (repeatable; default: all)",
                        "schema": {"type": "array", "items": {"type": "string"}},
                        "style": "form",
                        "explode": True,
                    },
                    {
                        "name": "since",
                        "in": "query",
                        "required": False,
                        "description": "resume after this cursor (an event id: GENERATION, or "
                        "NAME:GENERATION,... over several experiments)",
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "Last-Event-ID",
                        "in": "header",
                        "required": False,
                        "description": "as since=; EventSource sends it when it reconnects",
                        "schema": {"type": "string"},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "the event stream (it does not end)",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    },
                    **_errors(400, 404, 503),
                },
            }
        },
        **_data_paths(),
        "/api/v1/blob/{key}": {
            "get": {
                "operationId": "read_blob",
                "summary": "Read a blob",
                "description": "The bytes of one blob, streamed. The content type is sniffed "
                "from its first bytes (PNG, JPEG, GIF, WebP, WAV, FLAC, Ogg, MP3), else "
                "application/octet-stream. Keys never change meaning, so the answer may be "
                "cached for a year.",
                "tags": ["blob_sequences"],
                "parameters": [
                    {
                        "name": "key",
                        "in": "path",
                        "required": True,
                        "description": "a key from the blobs of /api/v1/blob_sequences",
                        "schema": {"type": "string"},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "the blob",
                        "headers": {
                            "Content-Length": {"schema": {"type": "integer"}},
                            "Cache-Control": {"schema": {"type": "string"}},
                        },
                        "content": {
                            "*/*": {
                                "schema": {
                                    "type": "string",
                                    "contentMediaType": "application/octet-stream",
                                }
                            }
                        },
                    },
                    **_errors(400, 404, 503),
                },
            }
        },
    },
    "components": {
        "securitySchemes": {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "needed when boardd serve runs with --token-file",
            }
        },
        "parameters": _PARAMETERS,
        "schemas": _SCHEMAS,
        "responses": {
            "BadRequest": _error_response(
                "a parameter is unknown, missing or malformed (the message says which)"
            ),
            "Unauthorized": _error_response("the server wants Authorization: Bearer <token>"),
            "NotFound": _error_response("no such experiment, data kind or blob"),
            "TooLarge": _error_response(
                "the answer could exceed the point bound, or the query string is too long: "
                "ask for less (downsample=, latest=, a step range, fewer runs or tags)"
            ),
            "Unavailable": _error_response(
                "the experiment's store does not exist yet or has no data (retry later)"
            ),
        },
    },
}


async def serve_openapi(request: Request) -> Response:
    """``GET /api/v1/openapi.json``: :data:`SPEC`."""
    check_params(request, ())
    return json_response(SPEC)
