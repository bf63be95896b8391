"""The route table: every route of the API declared once — path, parameters with their bounds,
answers — and used both to validate requests and to generate the OpenAPI description."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from starlette.requests import Request

from boardd.api.errors import ApiError
from boardd.api.metadata_ops import OPERATIONS
from boardd.api.schemas import ref
from boardd.data.kinds import KINDS, Kind

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
#: An integer parameter: ASCII digits only (int() alone would take "1_000", " 7" or "١").
_INTEGER = re.compile(r"[+-]?[0-9]+")


class Param(NamedTuple):
    """One parameter of a route: its name, type and bounds, and what it means."""

    name: str
    description: str
    type: Literal["string", "integer"] = "string"
    #: Where it is: the query string, the path (``{name}`` in the route's path) or a header.
    location: Literal["query", "path", "header"] = "query"
    minimum: int | None = None
    maximum: int | None = None
    required: bool = False
    #: May be given several times (``run=a&run=b``); read as a tuple, duplicates dropped.
    repeatable: bool = False
    enum: tuple[str, ...] = ()
    default: str | None = None
    #: What the error message suggests when the value is missing or not one of ``enum``.
    hint: str = ""

    def parse(self, values: list[str]) -> object:
        """The value of this parameter from its raw values (none, one, or several);
        ApiError(400) says what is wrong."""
        if self.repeatable:
            return tuple(dict.fromkeys(values))
        # One value: the last one given, as Starlette's query_params.get reads it.
        text = values[-1] if values else None
        if text is None or (self.required and text == ""):
            if self.required:
                raise ApiError(400, f"{self.name}= is required" + _paren(self.hint))
            return None
        if self.type == "integer":
            return self._integer(text)
        if self.enum and text not in self.enum:
            raise ApiError(400, f"{self.name}={text!r}: use {self.hint or ', '.join(self.enum)}")
        return text

    def _integer(self, text: str) -> int:
        if not _INTEGER.fullmatch(text):
            raise ApiError(400, f"{self.name}={text!r}: give a whole number")
        try:
            value = int(text, 10)
        except ValueError:  # more digits than int() converts
            raise ApiError(400, f"{self.name}={text!r}: give a whole number") from None
        lo = INT64_MIN if self.minimum is None else self.minimum
        hi = INT64_MAX if self.maximum is None else self.maximum
        if not lo <= value <= hi:
            raise ApiError(400, f"{self.name}={value}: give a number from {lo} to {hi}")
        return value

    def schema(self) -> dict[str, Any]:
        """The parameter's OpenAPI object."""
        schema: dict[str, Any]
        if self.type == "integer":
            schema = {
                "type": "integer",
                "minimum": INT64_MIN if self.minimum is None else self.minimum,
                "maximum": INT64_MAX if self.maximum is None else self.maximum,
            }
        else:
            schema = {"type": "string"}
            if self.enum:
                schema["enum"] = list(self.enum)
            if self.required and self.location == "query":
                schema["minLength"] = 1
        if self.default is not None:
            schema["default"] = self.default
        out: dict[str, Any] = {
            "name": self.name,
            "in": self.location,
            "required": self.required or self.location == "path",
            "description": self.description,
        }
        if self.repeatable:
            out.update(schema={"type": "array", "items": schema}, style="form", explode=True)
        else:
            out["schema"] = schema
        return out


def _paren(hint: str) -> str:
    return f" ({hint})" if hint else ""


class Query(NamedTuple):
    """The validated parameters of one request, by name (absent ones are None or ``()``)."""

    values: Mapping[str, object]

    def text(self, name: str) -> str | None:
        """A string parameter."""
        value = self.values.get(name)
        assert value is None or isinstance(value, str), name
        return value

    def integer(self, name: str) -> int | None:
        """An integer parameter."""
        value = self.values.get(name)
        assert value is None or isinstance(value, int), name
        return value

    def texts(self, name: str) -> tuple[str, ...]:
        """A repeatable parameter's values, in order, without duplicates."""
        value = self.values.get(name, ())
        assert isinstance(value, tuple), name
        return value


@dataclass(frozen=True, slots=True)
class Answer:
    """A successful answer: its media types with their schemas, and whether it carries an ETag
    (then a matching If-None-Match gets 304)."""

    description: str
    content: Mapping[str, dict[str, Any]]
    etag: bool = False
    headers: Mapping[str, dict[str, Any]] = field(default_factory=dict)


class RouteDef(NamedTuple):
    """One route: where, what it takes, what it answers."""

    path: str
    #: Names the handler (the app binds it) and the OpenAPI operation.
    operation_id: str
    summary: str
    description: str
    tag: str
    params: tuple[Param, ...]
    answer: Answer
    #: The error statuses it may answer besides 401 (which every route may, with a token).
    errors: tuple[int, ...] = (400,)
    #: The kind of data it serves (the data routes), else None.
    kind: Kind | None = None
    methods: tuple[str, ...] = ("GET",)

    @property
    def query_names(self) -> frozenset[str]:
        """The names of its query parameters."""
        return frozenset(self._query_params())

    def _query_params(self) -> dict[str, Param]:
        # Asked on every request: built once per route (the table is immutable).
        found = _QUERY_PARAMS.get(self.operation_id)
        if found is None:
            found = {p.name: p for p in self.params if p.location == "query"}
            _QUERY_PARAMS[self.operation_id] = found
        return found

    def parse(self, request: Request) -> Query:
        """The request's query parameters, validated; ApiError(400) names the unknown ones (a
        misspelt filter must not silently widen the answer) or what is wrong with a value."""
        declared = self._query_params()
        given: dict[str, list[str]] = {}
        for name, value in request.query_params.multi_items():
            given.setdefault(name, []).append(value)
        unknown = sorted(name for name in given if name not in declared)
        if unknown:
            raise ApiError(
                400,
                f"unknown parameter(s) {', '.join(unknown)}; allowed: "
                + (", ".join(sorted(declared)) or "none"),
            )
        return Query({name: p.parse(given.get(name, [])) for name, p in declared.items()})


#: operation id → its query parameters by name (see RouteDef._query_params).
_QUERY_PARAMS: dict[str, dict[str, Param]] = {}


# -- parameters ---------------------------------------------------------------------------------

EXPERIMENT = Param(
    "experiment", "experiment name (see /api/v1/experiments); default: the first one"
)
PLUGIN = Param(
    "plugin",
    "the plugin owning the data, e.g. scalars, histograms, images, text. It must be one of "
    "TensorBoard's plugins of this kind of data or a plugin the experiment's store has series "
    "of (else 400 naming the known ones); a known plugin without data answers {}",
    required=True,
    hint="e.g. plugin=scalars",
)
#: The scalars routes name their plugin: without plugin= they read TensorBoard's scalars.
SCALARS_PLUGIN = PLUGIN._replace(
    description=PLUGIN.description + " (default: scalars)",
    required=False,
    default="scalars",
    hint="",
)
RUN = Param("run", "keep only this run; repeat for several (default: every run)", repeatable=True)
TAG = Param("tag", "keep only this tag; repeat for several (default: every tag)", repeatable=True)
STEP_MIN = Param("step_min", "keep steps ≥ this (inclusive)", "integer")
STEP_MAX = Param("step_max", "keep steps ≤ this (inclusive); not below step_min", "integer")
LATEST = Param("latest", "keep only the last k steps of each series", "integer", minimum=1)
DOWNSAMPLE = Param(
    "downsample",
    "at most k points per series: the first and the last of the range (k = 1: the last), and "
    "between them a deterministic uniform sample that depends only on the set of steps "
    "(series with the same steps keep the same steps); 0 gives no points",
    "integer",
    minimum=0,
)
DOWNSAMPLE_BY = Param(
    "downsample_by",
    "how downsample= chooses (scalars): uniform (the default) or extremes: the step range is "
    "cut into k // 4 equal buckets and each keeps its first, lowest, highest and last point, "
    "so a line through the points kept reaches every spike (min/max-preserving, for charts)",
    enum=("uniform", "extremes"),
    default="uniform",
)
INDEX_MIN = Param("index_min", "keep blobs at index ≥ this within a step", "integer", minimum=0)
INDEX_MAX = Param(
    "index_max",
    "keep blobs at index ≤ this within a step; not below index_min",
    "integer",
    minimum=0,
)
_FORMAT_HINT = "json, or csv/columns for scalars"
SCALAR_FORMAT = Param(
    "format",
    "json: a list of {step, wall_time, value} per series; columns: {step: […], wall_time: […], "
    "value: […]} per series; csv: text/csv (Content-Disposition: attachment; filename="
    '"EXPERIMENT-scalars.csv")',
    enum=("json", "columns", "csv"),
    default="json",
    hint=_FORMAT_HINT,
)
JSON_FORMAT = Param(
    "format", "only json for this kind", enum=("json",), default="json", hint=_FORMAT_HINT
)
DATA_LOSS_RUN = Param(
    "run", "keep only this run's records; repeat for several (default: every run)", repeatable=True
)
STREAM_EXPERIMENT = Param(
    "experiment", "follow these experiments (repeatable; default: all)", repeatable=True
)
SINCE = Param(
    "since",
    "resume after this cursor (an event id: GENERATION, or NAME:GENERATION,... over several "
    "experiments)",
)
LAST_EVENT_ID = Param(
    "Last-Event-ID",
    "as since=; EventSource sends it when it reconnects",
    location="header",
)
BLOB_KEY = Param(
    "key", "a key from the blobs of /api/v1/blob_sequences", location="path", required=True
)

METADATA_OPERATION = Param(
    "operation",
    "a MetadataStore method of ML Metadata's Python API (put_* write, get_* read)",
    location="path",
    required=True,
    enum=tuple(op.name for op in OPERATIONS),
)
LINEAGE_ARTIFACT_ID = Param(
    "artifact_id", "the artifact to start from (or uri=)", "integer", minimum=1
)
LINEAGE_URI = Param("uri", "start from the artifact with this URI (or artifact_id=)")
LINEAGE_HOPS = Param(
    "hops",
    "how many events away from the artifact to go, both ways (artifact → execution is one); "
    "default 2",
    "integer",
    minimum=0,
    maximum=20,
)
HPARAMS_REQUEST = Param(
    "request",
    "the request message as proto3 JSON (camelCase field names, enum names), as TensorBoard's "
    "hparams routes take it; a POST may send it as its JSON body instead, at most 1 MiB "
    "(more: 413) (default: {})",
)

SERIES_RUN = Param("run", "the run", required=True, hint="e.g. run=train")
SERIES_TAG = Param("tag", "the tag", required=True, hint="e.g. tag=loss")


def _steps_param(default: str) -> Param:
    """``downsample=`` of a route of one series' steps, whose default is ``default``."""
    return Param(
        "downsample",
        "at most k steps, chosen as downsample= of /api/v1/tensors chooses them (default: "
        f"{default}, as TensorBoard's route)",
        "integer",
        minimum=0,
    )


DESCRIPTIONS_PLUGIN = Param(
    "plugin",
    "the plugin owning the series, e.g. scalars, histograms, text (as plugin= of the /list "
    "routes: an unknown one is a 400 naming the known ones)",
    required=True,
    hint="e.g. plugin=scalars",
)

# -- answers ------------------------------------------------------------------------------------

JSON = "application/json"


def json_answer(schema: dict[str, Any], description: str, *, etag: bool = False) -> Answer:
    """A JSON answer of this schema."""
    return Answer(description, {JSON: {"schema": schema}}, etag=etag)


def _map_of(schema: dict[str, Any], key: str) -> dict[str, Any]:
    """An object keyed by free-form names (runs, tags, plugins)."""
    return {"type": "object", "description": f"keyed by {key}", "additionalProperties": schema}


def runs_tags(schema: dict[str, Any]) -> dict[str, Any]:
    """``{RUN: {TAG: schema}}``."""
    return _map_of(_map_of(schema, "tag"), "run")


def _array(name: str) -> dict[str, Any]:
    return {"type": "array", "items": ref(name)}


_KIND_TEXT = {
    "scalars": "scalar time series (one float64 per step)",
    "tensors": "tensor time series (histograms, text, PR curves, …)",
    "blob_sequences": "blob sequence time series (images, audio, graphs: a list of blobs per step)",
}


def _values_answer(kind: Kind) -> Answer:
    if kind.name == "scalars":
        return Answer(
            "the points",
            {
                JSON: {
                    "schema": {
                        "anyOf": [
                            runs_tags(_array("ScalarDatum")),
                            runs_tags(ref("ScalarColumns")),
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
            },
            etag=True,
            headers={
                "Content-Disposition": {
                    "description": 'format=csv only: attachment; filename="EXPERIMENT-scalars'
                    '.csv" (characters other than letters, digits, . _ - become _), and the '
                    "exact name in filename*=UTF-8''…",
                    "schema": {"type": "string"},
                }
            },
        )
    datum = "TensorDatum" if kind.name == "tensors" else "BlobSequenceDatum"
    return json_answer(runs_tags(_array(datum)), "the points", etag=True)


def _kind_routes(kind: Kind) -> list[RouteDef]:
    text = _KIND_TEXT[kind.name]
    blobs = kind.name == "blob_sequences"
    meta = "BlobSequenceTimeSeries" if blobs else "TimeSeries"
    filters = (EXPERIMENT, SCALARS_PLUGIN if kind.name == "scalars" else PLUGIN, RUN, TAG)
    values = (
        *filters,
        STEP_MIN,
        STEP_MAX,
        LATEST,
        DOWNSAMPLE,
        *((DOWNSAMPLE_BY,) if kind.name == "scalars" else ()),
        *((INDEX_MIN, INDEX_MAX) if blobs else ()),
        SCALAR_FORMAT if kind.name == "scalars" else JSON_FORMAT,
    )
    return [
        RouteDef(
            f"/api/v1/{kind.name}/list",
            f"list_{kind.name}",
            f"List {kind.name} series",
            f"Metadata of every {text} of one plugin: `{{RUN: {{TAG: metadata}}}}`, runs and "
            "tags sorted by name. `run=` and `tag=` (repeatable) keep only those names (cross "
            "product); names that match nothing are left out, never an error.",
            kind.name,
            filters,
            json_answer(runs_tags(ref(meta)), "the series", etag=True),
            (400, 404, 503),
            kind,
        ),
        RouteDef(
            f"/api/v1/{kind.name}",
            f"read_{kind.name}",
            f"Read {kind.name}",
            f"The points of every matching {text}: `{{RUN: {{TAG: [datum, …]}}}}`, points "
            "sorted by step. Filters apply in this order: run/tag, step range, latest, "
            "downsample"
            + (", then the index range within each step" if blobs else "")
            + ". An answer that could exceed the point bound (runs × tags × samples) is "
            "refused with 413 before any point is read.",
            kind.name,
            values,
            _values_answer(kind),
            (400, 404, 413, 503),
            kind,
        ),
    ]


#: Every route of the API.
ROUTES: tuple[RouteDef, ...] = (
    RouteDef(
        "/api/v1/health",
        "health",
        "Health",
        "Liveness, cache counters, and per experiment its ingest state and data-loss count.",
        "server",
        (),
        json_answer(ref("Health"), "the server's state"),
    ),
    RouteDef(
        "/api/v1/openapi.json",
        "openapi",
        "This description",
        "The OpenAPI 3.1 description of the API, generated from the route table.",
        "server",
        (),
        json_answer({"type": "object"}, "this document"),
    ),
    RouteDef(
        "/api/v1/experiments",
        "list_experiments",
        "List experiments",
        "Every experiment (watched logdir) whose store has data.",
        "server",
        (),
        json_answer(_array("Experiment"), "experiments"),
    ),
    RouteDef(
        "/api/v1/plugins",
        "list_plugins",
        "List plugins",
        "Each plugin that has data, with the data classes of its series; the projector, whose "
        "data are files beside the event files of a local logdir (add_embedding's), with none.",
        "server",
        (EXPERIMENT,),
        json_answer(ref("Plugins"), "plugins"),
        (400, 404, 503),
    ),
    RouteDef(
        "/api/v1/runs",
        "list_runs",
        "List runs",
        "The live runs, in TensorBoard's order: by start time (runs without one last), then by "
        "name.",
        "server",
        (EXPERIMENT,),
        json_answer(_array("Run"), "runs", etag=True),
        (400, 404, 503),
    ),
    RouteDef(
        "/api/v1/data_loss",
        "list_data_loss",
        "List data loss",
        "The byte ranges of the experiment's event files that could not be read, and why: "
        "`[{run, file, offset, length, reason, time}]` in file then offset order. The rest of "
        "each file was read; a file re-read from the start records its losses again.",
        "server",
        (EXPERIMENT, DATA_LOSS_RUN),
        json_answer(_array("DataLoss"), "the data-loss records", etag=True),
        (400, 404, 503),
    ),
    RouteDef(
        "/api/v1/stream",
        "stream",
        "Live changes (Server-Sent Events)",
        "One event per change after each commit: `event: series` (data: StreamSeriesEvent: "
        "experiment, run, tag, plugin, data_class, step, wall_time, value for scalars, "
        "generation), `event: run` (data: StreamRunEvent: experiment, run, change: created or "
        "deleted, generation), `event: reset` (data: StreamResetEvent: experiment, generation; "
        "the store went back in time: fetch again); a `: ping` comment when idle. The data "
        "schemas are in components/schemas. Each event's id "
        "is a cursor: reconnect with Last-Event-ID (or since=) to receive exactly what was "
        "missed, coalesced.",
        "server",
        (STREAM_EXPERIMENT, SINCE, LAST_EVENT_ID),
        Answer(
            "the event stream (it does not end)",
            {"text/event-stream": {"schema": {"type": "string"}}},
        ),
        (400, 404, 503),
    ),
    *(route for kind in KINDS.values() for route in _kind_routes(kind)),
    RouteDef(
        "/api/v1/distributions",
        "read_distributions",
        "Distributions of a histogram series",
        "One run's histograms of a tag compressed to percentiles, step by step, as "
        "TensorBoard's distributions dashboard draws them: `[{step, wall_time, percentiles: "
        "[{basis_point, value}, …]}, …]` by step (the numbers of TensorBoard's "
        "`/data/plugin/distributions/distributions`). No such run or tag: 404.",
        "plugins",
        (
            EXPERIMENT,
            SERIES_RUN,
            SERIES_TAG,
            _steps_param("501, or fewer per --samples-per-plugin"),
        ),
        json_answer(_array("DistributionStep"), "the steps", etag=True),
        (400, 404, 503),
    ),
    RouteDef(
        "/api/v1/pr_curves",
        "read_pr_curves",
        "PR curves",
        "One run's precision–recall curves of a tag, step by step: `[{step, wall_time, "
        "thresholds, precision, recall, true_positives, false_positives, true_negatives, "
        "false_negatives}, …]` by step, a value per threshold (the numbers of TensorBoard's "
        "`/data/plugin/pr_curves/pr_curves`). No such run or tag: 404.",
        "plugins",
        (EXPERIMENT, SERIES_RUN, SERIES_TAG, _steps_param("100, or per --samples-per-plugin")),
        json_answer(_array("PrCurveStep"), "the steps", etag=True),
        (400, 404, 503),
    ),
    RouteDef(
        "/api/v1/text",
        "read_text",
        "Text as HTML",
        "One run's text summaries of a tag, step by step, rendered from Markdown and "
        "sanitized as TensorBoard's text dashboard shows them: `[{step, wall_time, html}, …]` "
        "by step (the HTML of TensorBoard's `/data/plugin/text/text`). No such run or tag: 404.",
        "plugins",
        (EXPERIMENT, SERIES_RUN, SERIES_TAG, _steps_param("100, or per --samples-per-plugin")),
        json_answer(_array("TextStep"), "the steps", etag=True),
        (400, 404, 503),
    ),
    RouteDef(
        "/api/v1/descriptions",
        "read_descriptions",
        "Tags' descriptions as HTML",
        "The summary descriptions of one plugin's series, rendered from Markdown and "
        "sanitized as TensorBoard's UI shows them: `{RUN: {TAG: html}}`, only the series that "
        "have one (the /list routes give them as written).",
        "plugins",
        (EXPERIMENT, DESCRIPTIONS_PLUGIN),
        json_answer(runs_tags({"type": "string"}), "the descriptions", etag=True),
        (400, 404, 503),
    ),
    RouteDef(
        "/api/v1/hparams/experiment",
        "hparams_experiment",
        "Hyperparameters: the experiment",
        "TensorBoard's hparams Experiment (proto3 JSON): its hparams with their types and "
        "domains, and its metrics. Declared by an `_hparams_/experiment` summary, else inferred "
        "from the sessions as TensorBoard does. `request=`: a GetExperimentRequest "
        "(`includeMetrics`, `hparamsLimit`).",
        "hparams",
        (EXPERIMENT, HPARAMS_REQUEST),
        json_answer(ref("HParamsExperiment"), "the experiment", etag=True),
        (400, 404, 413, 503),
        methods=("GET", "POST"),
    ),
    RouteDef(
        "/api/v1/hparams/session_groups",
        "hparams_session_groups",
        "Hyperparameters: session groups",
        "TensorBoard's ListSessionGroups (proto3 JSON): the sessions (a run with hparams "
        "each) grouped by their hparam values, with their metrics (the last value of each), "
        "filtered, sorted, aggregated and sliced as the ListSessionGroupsRequest in `request=` "
        "says (`allowedStatuses` (none: all), `colParams`, `aggregationType`, "
        "`aggregationMetric`, `startIndex`, `sliceSize`). An unknown column, a regexp that "
        "does not compile or a filter that does not fit the column's type is a 400 saying so. "
        "Besides TensorBoard's fields, each session's `run` is the run the user named (the "
        "writer's run `RUN` of a session in `add_hparams`' timestamped sub-run "
        "`RUN/1796660406.1974096`, else the session's name) and each group's `displayName` "
        "how it shows (its session's `run` for a group named after it); TensorBoard's own "
        "route (`/data/plugin/hparams/session_groups`) answers as TensorBoard does.",
        "hparams",
        (EXPERIMENT, HPARAMS_REQUEST),
        json_answer(ref("HParamsSessionGroups"), "the session groups", etag=True),
        (400, 404, 413, 503),
        methods=("GET", "POST"),
    ),
    RouteDef(
        "/api/v1/hparams/metric_evals",
        "hparams_metric_evals",
        "Hyperparameters: a session's metric",
        "Every kept point of one session's metric, `[[wall_time, step, value], …]` by step, "
        "as TensorBoard's ListMetricEvals; `request=`: `{sessionName, metricName: {group, "
        "tag}}` (no such session or metric: 404, as TensorBoard).",
        "hparams",
        (EXPERIMENT, HPARAMS_REQUEST),
        json_answer(ref("HParamsMetricEvals"), "the points", etag=True),
        (400, 404, 413, 503),
        methods=("GET", "POST"),
    ),
    RouteDef(
        "/api/v1/metadata/lineage_graph",
        "metadata_lineage_graph",
        "Lineage graph",
        "The artifacts and executions within `hops` events of one artifact (by `artifact_id=` "
        "or `uri=`), for drawing: `{root, hops, nodes: [{id, kind, record_id, type, name, "
        "state, uri, properties, custom_properties, boardd}], edges: [{source, target, type}], "
        "truncated}`; an edge goes from producer to consumer (execution → artifact for an "
        "OUTPUT, artifact → execution for an INPUT).",
        "metadata",
        (LINEAGE_ARTIFACT_ID, LINEAGE_URI, LINEAGE_HOPS),
        json_answer({"type": "object"}, "the graph"),
        (400, 404, 503),
    ),
    RouteDef(
        "/api/v1/metadata/{operation}",
        "metadata_call",
        "Call a MetadataStore method",
        "ML Metadata's Python API over HTTP: POST the method's keyword arguments as a JSON "
        "object (names as in `ml_metadata.metadata_store.MetadataStore`, messages of "
        "metadata_store.proto as proto3 JSON, `list_options` as `{limit, order_by, is_asc, "
        'filter_query}`), get `{"result": …}` (messages as proto3 JSON). get_* read (open '
        "to all who may read); put_* write and need `Authorization: Bearer <token>` even on "
        "loopback (403 when the server has no token). MLMD's errors map to 400 "
        "(InvalidArgument), 404 (NotFound), 409 (AlreadyExists, FailedPrecondition).",
        "metadata",
        (METADATA_OPERATION,),
        json_answer(
            {"type": "object", "required": ["result"], "properties": {"result": {}}},
            "the method's result",
        ),
        (400, 403, 404, 409, 413, 503),
        methods=("POST",),
    ),
    RouteDef(
        "/api/v1/blob/{key}",
        "read_blob",
        "Read a blob",
        "The bytes of one blob, streamed. The content type is sniffed from its first bytes "
        "(PNG, JPEG, GIF, WebP, WAV, FLAC, Ogg, MP3), else application/octet-stream. Keys never "
        "change meaning, so the answer may be cached for a year. An unknown key is 404 saying "
        "so; a key of the store file a rebuild replaced is 404 saying to list again.",
        "blob_sequences",
        (BLOB_KEY,),
        Answer(
            "the blob",
            {"*/*": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}},
            headers={
                "Content-Length": {"schema": {"type": "integer"}},
                "Cache-Control": {"schema": {"type": "string"}},
            },
        ),
        (400, 404, 503),
    ),
)

#: The routes by operation id.
BY_ID: dict[str, RouteDef] = {r.operation_id: r for r in ROUTES}
