"""The schemas of the API's answers (OpenAPI 3.1 / JSON Schema 2020-12), referenced by the route
table and gathered into the generated description."""

from __future__ import annotations

from typing import Any


def ref(name: str) -> dict[str, str]:
    """A reference to one of :data:`SCHEMAS`."""
    return {"$ref": f"#/components/schemas/{name}"}


_schema = ref


FLOAT_OR_TEXT = {
    "description": "a float; JSON has no NaN or infinities, so those are the strings "
    "NaN, Infinity, -Infinity (as TensorBoard spells them)",
    "anyOf": [{"type": "number"}, {"type": "string", "enum": ["NaN", "Infinity", "-Infinity"]}],
}

#: The metadata of a series (``/list`` answers); blob sequences add ``max_length``.
TIME_SERIES: dict[str, Any] = {
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
}


def _with_max_length(series: dict[str, Any]) -> dict[str, Any]:
    """The metadata of a blob sequence series: a time series' and the longest blob list."""
    return {
        **series,
        "required": [*series["required"], "max_length"],
        "properties": {
            **series["properties"],
            "max_length": {
                "type": "integer",
                "description": "the longest blob list of any step",
            },
        },
    }


SCHEMAS: dict[str, Any] = {
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
    "FloatOrText": FLOAT_OR_TEXT,
    "Health": {
        "type": "object",
        "required": ["status", "version", "uptime_seconds", "cache", "experiments"],
        "properties": {
            "status": {"type": "string", "enum": ["ok", "degraded"]},
            "version": {"type": "string"},
            "uptime_seconds": {"type": "number"},
            "lineage": {
                "type": ["object", "null"],
                "description": "the lineage store (null: the server has none)",
                "required": ["path", "state", "error", "refreshes"],
                "properties": {
                    "path": {"type": "string"},
                    "state": {"type": "string", "enum": ["opening", "open", "failed", "closed"]},
                    "error": {
                        "type": ["string", "null"],
                        "description": "why it could not be opened (its routes answer 503)",
                    },
                    "refreshes": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "passes over the logdirs so far",
                    },
                },
            },
            "answer_workers": {
                "type": ["object", "null"],
                "description": "the processes that build the large answers (many series at "
                "once) beside the daemon's own (--answer-processes; null: none)",
                "required": ["processes", "ready", "answers", "lost"],
                "properties": {
                    "processes": {"type": "integer", "minimum": 1},
                    "ready": {
                        "type": "boolean",
                        "description": "started and taking answers (they start with the "
                        "first large answer; until then the daemon's process builds them)",
                    },
                    "answers": {"type": "integer", "minimum": 0},
                    "lost": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "times a worker died (killed, out of memory) and the "
                        "workers were started again",
                    },
                },
            },
            "cache": {
                "type": "object",
                "required": ["entries", "bytes", "hits", "misses", "hit_rate"],
                "properties": {
                    "entries": {"type": "integer"},
                    "bytes": {"type": "integer"},
                    "hits": {"type": "integer"},
                    "misses": {"type": "integer"},
                    "replaced": {
                        "type": "integer",
                        "description": "answers replaced by a newer one of the same request",
                    },
                    "hit_rate": {"type": "number"},
                    "tiers": {
                        "type": "object",
                        "description": "the memory tier's and the disk tier's counters (disk: "
                        "null without a disk cache, or until it is open)",
                        "required": ["memory", "disk"],
                        "properties": {
                            "memory": _schema("CacheTierStats"),
                            "disk": {"anyOf": [_schema("CacheTierStats"), {"type": "null"}]},
                        },
                    },
                    "columns": {
                        "type": "object",
                        "description": "whole scalar series kept decoded (a process's readers "
                        "share them; filled once an experiment is caught up)",
                        "required": ["hits", "misses", "entries", "bytes", "max_bytes", "grown"],
                        "properties": {
                            "hits": {"type": "integer"},
                            "misses": {"type": "integer"},
                            "entries": {"type": "integer"},
                            "bytes": {"type": "integer"},
                            "max_bytes": {"type": "integer"},
                            "grown": {
                                "type": "integer",
                                "description": "misses answered by reading only the points "
                                "appended since the series was read",
                            },
                        },
                    },
                },
            },
            "experiments": {
                "type": "array",
                "items": {
                    "type": "object",
                    "description": "name, logdir and data_loss always; the daemon adds "
                    "its live ingest state (db, state, watch_mode, generation, lag, …), a "
                    "server over stores it does not write does not",
                    "required": ["name", "logdir", "data_loss"],
                    "properties": {
                        "name": {"type": "string"},
                        "logdir": {"type": "string"},
                        "db": {"type": "string", "description": "the store file"},
                        "watch_mode": {
                            "type": "string",
                            "enum": ["inotify", "polling", "stopped", "none"],
                            "description": "how the logdir is followed: inotify, polling (a "
                            "remote logdir, --poll, or what inotify cannot watch: see "
                            "watch_problem), stopped (not watching: starting, a pass in "
                            "progress, or stopped), none (no watcher yet)",
                        },
                        "generation": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "the generation of the store's last commit",
                        },
                        "last_commit": {
                            "type": ["number", "null"],
                            "description": "when the last commit was made (seconds since the "
                            "epoch); null before the first",
                        },
                        "lag_seconds": {
                            "type": ["number", "null"],
                            "minimum": 0,
                            "description": "how long the oldest change heard and not yet "
                            "committed has waited; null when there is none",
                        },
                        "data_loss": {
                            "type": ["integer", "null"],
                            "description": "data-loss records; null while there is no store",
                        },
                        "state": {
                            "type": "string",
                            "enum": [
                                "starting",
                                "rebuilding",
                                "catching_up",
                                "live",
                                "retrying",
                                "read_only",
                                "damaged",
                                "stopped",
                                "failed",
                            ],
                            "description": "retrying: a pass failed (see error) and is tried "
                            "again with back-off; nothing read is lost. damaged: the store was "
                            "found damaged, set aside and is rebuilt from the logdir (its data "
                            "answers 503 meanwhile)",
                        },
                        "damage": {
                            "type": ["object", "null"],
                            "description": "the last damaged store: what was found, where "
                            "the file was set aside, since when, and lost_runs (runs it had "
                            "that the logdir no longer holds; null until rebuilt)",
                            "required": ["found", "set_aside", "since"],
                            "properties": {
                                "found": {"type": "string"},
                                "set_aside": {"type": ["string", "null"]},
                                "since": {"type": "number"},
                                "lost_runs": {
                                    "type": ["array", "null"],
                                    "items": {"type": "string"},
                                },
                            },
                        },
                        "resampling": {
                            "type": ["string", "null"],
                            "description": "while --samples-per-plugin asks more points of "
                            "some plugin than the store keeps: the sampling of the store "
                            "rebuilt beside it (in --samples-per-plugin syntax), swapped in "
                            "once complete; the old store is served meanwhile. null otherwise",
                        },
                        "store_checked": {
                            "type": "boolean",
                            "description": "whether the store has been read whole since it "
                            "opened: its open checks only the file's size, the read follows "
                            "at once in the background (damage within a page is known from "
                            "then on, or when a read meets it)",
                        },
                        "bytes_done": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "bytes of event files read since the daemon "
                            "started: the catch-up's, then every live read's",
                        },
                        "bytes_total": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "bytes_done and the bytes known to be still to "
                            "read (during a catch-up: what it has left; live: what a read in "
                            "progress has left, so equal to bytes_done once it is done)",
                        },
                        "bytes_per_second": {
                            "type": "number",
                            "minimum": 0,
                            "description": "bytes read per second over the last 10 s",
                        },
                        "error": {
                            "type": ["string", "null"],
                            "description": "the real cause of the last failure, e.g. "
                            "'FullError: database or disk is full'",
                        },
                        "retries": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "failed passes in a row",
                        },
                        "retry_in_seconds": {
                            "type": ["number", "null"],
                            "description": "time to the next try while retrying",
                        },
                        "watch_overflows": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "times the inotify queue overflowed (events lost)",
                        },
                        "overflow_passes": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "full passes that answered them: one per overflow, "
                            "or one for several before it starts",
                        },
                        "unwatched_directories": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "directories inotify could not watch (the watch "
                            "limit, fs.inotify.max_user_watches): polled",
                        },
                        "watch_problem": {
                            "type": ["string", "null"],
                            "description": "why anything of the logdir is polled rather than "
                            "heard through inotify: directories over the watch limit, a "
                            "filesystem whose inotify misses other writers (NFS, SMB, FUSE, 9p), "
                            "or a safety rescan that found changes no event announced; null "
                            "when nothing is",
                        },
                        "watch_misses": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "changes that safety rescans found and no inotify "
                            "event had announced (the first one makes the experiment poll)",
                        },
                        "rescan_interval_seconds": {
                            "type": "number",
                            "minimum": 0,
                            "description": "seconds between safety rescans now: "
                            "--rescan-interval, longer for a logdir whose pass with nothing "
                            "new costs more than 1 % of it (up to 10 times)",
                        },
                        "remote_requests": {
                            "type": ["object", "null"],
                            "description": "a remote logdir's (s3://…) requests since the "
                            "daemon started: listings (for S3 one request per 1,000 objects), "
                            "ranged GETs, bytes fetched, failed requests; null for a local one",
                            "properties": {
                                "listings": {"type": "integer", "minimum": 0},
                                "objects_listed": {"type": "integer", "minimum": 0},
                                "gets": {"type": "integer", "minimum": 0},
                                "bytes_fetched": {"type": "integer", "minimum": 0},
                                "failures": {"type": "integer", "minimum": 0},
                            },
                        },
                        "unreadable": {
                            "type": "array",
                            "description": "runs and files skipped because they cannot be "
                            "read (their data is kept); tried again at every pass",
                            "items": {
                                "type": "object",
                                "required": ["path", "reason", "since"],
                                "properties": {
                                    "path": {"type": "string"},
                                    "reason": {"type": "string"},
                                    "since": {"type": "number"},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
    "CacheTierStats": {
        "type": "object",
        "required": ["hits", "misses", "hit_rate"],
        "properties": {
            "hits": {"type": "integer", "minimum": 0},
            "misses": {"type": "integer", "minimum": 0},
            "hit_rate": {"type": "number"},
            "errors": {
                "type": "integer",
                "minimum": 0,
                "description": "the disk tier's: reads and writes that failed (answered "
                "without it)",
            },
        },
    },
    "StreamSeriesEvent": {
        "type": "object",
        "description": "`event: series`: a series after a commit that changed it",
        "required": [
            "experiment",
            "run",
            "tag",
            "plugin",
            "data_class",
            "step",
            "wall_time",
            "generation",
        ],
        "additionalProperties": False,
        "properties": {
            "experiment": {"type": "string"},
            "run": {"type": "string"},
            "tag": {"type": "string"},
            "plugin": {"type": "string"},
            "data_class": {
                "type": "string",
                "description": "scalar, tensor or blob_sequence (the number itself for a "
                "data class this version does not know)",
            },
            "step": {"type": "integer", "description": "the series' last step"},
            "wall_time": {"type": "number", "description": "its last step's wall time"},
            "value": {
                **_schema("FloatOrText"),
                "description": "scalars only: the last step's value",
            },
            "generation": {"type": "integer", "description": "the commit's generation"},
        },
    },
    "StreamRunEvent": {
        "type": "object",
        "description": "`event: run`: a run created or deleted by a commit",
        "required": ["experiment", "run", "change", "generation"],
        "additionalProperties": False,
        "properties": {
            "experiment": {"type": "string"},
            "run": {"type": "string"},
            "change": {"type": "string", "enum": ["created", "deleted"]},
            "generation": {"type": "integer"},
        },
    },
    "StreamResetEvent": {
        "type": "object",
        "description": "`event: reset`: the store went back in time (rebuilt, or another "
        "store file swapped in): fetch everything again",
        "required": ["experiment", "generation"],
        "additionalProperties": False,
        "properties": {
            "experiment": {"type": "string"},
            "generation": {"type": "integer"},
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
    "TimeSeries": TIME_SERIES,
    "BlobSequenceTimeSeries": _with_max_length(TIME_SERIES),
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
                "anyOf": [_schema("TensorValue"), _schema("TensorError")],
            },
        },
    },
    "TensorValue": {
        "description": "a tensor's element, or nested lists of them (one level per dimension)",
        "anyOf": [
            _schema("FloatOrText"),
            {"type": "boolean"},
            {"type": "string", "description": "a string element: UTF-8 text"},
            {
                "type": "object",
                "description": "a string element that is not UTF-8 text: its bytes",
                "required": ["base64"],
                "additionalProperties": False,
                "properties": {"base64": {"type": "string", "contentEncoding": "base64"}},
            },
            {"type": "array", "items": _schema("TensorValue")},
        ],
    },
    "TensorError": {
        "type": "object",
        "description": "a tensor that cannot be decoded, and why",
        "required": ["error"],
        "additionalProperties": False,
        "properties": {"error": {"type": "string"}},
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
    "DistributionStep": {
        "type": "object",
        "description": "one step's histogram compressed to percentiles, as TensorBoard's "
        "distributions dashboard draws it",
        "required": ["step", "wall_time", "percentiles"],
        "additionalProperties": False,
        "properties": {
            "step": {"type": "integer"},
            "wall_time": {"type": "number"},
            "percentiles": {
                "type": "array",
                "description": "by basis point, ascending: those of the median, ±1σ, ±2σ, ±3σ "
                "of a normal and the extremes (0, 668, 1587, 3085, 5000, 6915, 8413, 9332, "
                "10000); a histogram whose counts stop short of a basis point has none from "
                "there on",
                "items": {
                    "type": "object",
                    "required": ["basis_point", "value"],
                    "additionalProperties": False,
                    "properties": {
                        "basis_point": {
                            "type": "integer",
                            "minimum": 0,
                            "maximum": 10000,
                            "description": "hundredths of a percent of the count below value",
                        },
                        "value": _schema("FloatOrText"),
                    },
                },
            },
        },
    },
    "PrCurveStep": {
        "type": "object",
        "description": "one step's precision–recall curve, a value per threshold (ascending), "
        "up to the last threshold with any positive, as TensorBoard's PR-curves route",
        "required": [
            "step",
            "wall_time",
            "thresholds",
            "precision",
            "recall",
            "true_positives",
            "false_positives",
            "true_negatives",
            "false_negatives",
        ],
        "additionalProperties": False,
        "properties": {
            "step": {"type": "integer"},
            "wall_time": {"type": "number"},
            "thresholds": {"type": "array", "items": {"type": "number"}},
            "precision": {"type": "array", "items": _schema("FloatOrText")},
            "recall": {"type": "array", "items": _schema("FloatOrText")},
            "true_positives": {"type": "array", "items": {"type": "integer"}},
            "false_positives": {"type": "array", "items": {"type": "integer"}},
            "true_negatives": {"type": "array", "items": {"type": "integer"}},
            "false_negatives": {"type": "array", "items": {"type": "integer"}},
        },
    },
    "TextStep": {
        "type": "object",
        "required": ["step", "wall_time", "html"],
        "additionalProperties": False,
        "properties": {
            "step": {"type": "integer"},
            "wall_time": {"type": "number"},
            "html": {
                "type": "string",
                "description": "the step's strings as sanitized HTML, as TensorBoard's text "
                "dashboard shows them: one string rendered as Markdown, a vector or matrix as "
                "a table of rendered cells, a higher rank as its first 2-D slice under a "
                "warning; cleaned by TensorBoard's allow-list (other tags escaped)",
            },
        },
    },
    "HParamsExperiment": {
        "type": "object",
        "description": "TensorBoard's hparams Experiment message, proto3 JSON",
        "required": ["hparamInfos", "metricInfos"],
        "properties": {
            "name": {"type": "string"},
            "description": {"type": "string"},
            "user": {"type": "string"},
            "timeCreatedSecs": {"type": "number"},
            "hparamInfos": {"type": "array", "items": _schema("HParamInfo")},
            "metricInfos": {"type": "array", "items": _schema("MetricInfo")},
        },
    },
    "HParamInfo": {
        "type": "object",
        "required": ["name", "type"],
        "properties": {
            "name": {"type": "string"},
            "displayName": {"type": "string"},
            "description": {"type": "string"},
            "type": {
                "type": "string",
                "enum": [
                    "DATA_TYPE_UNSET",
                    "DATA_TYPE_STRING",
                    "DATA_TYPE_BOOL",
                    "DATA_TYPE_FLOAT64",
                ],
            },
            "domainDiscrete": {"type": "array"},
            "domainInterval": {
                "type": "object",
                "properties": {"minValue": FLOAT_OR_TEXT, "maxValue": FLOAT_OR_TEXT},
            },
            "differs": {"type": "boolean"},
        },
    },
    "MetricName": {
        "type": "object",
        "properties": {"group": {"type": "string"}, "tag": {"type": "string"}},
    },
    "MetricInfo": {
        "type": "object",
        "properties": {
            "name": _schema("MetricName"),
            "displayName": {"type": "string"},
            "description": {"type": "string"},
            "datasetType": {
                "type": "string",
                "enum": ["DATASET_UNKNOWN", "DATASET_TRAINING", "DATASET_VALIDATION"],
            },
        },
    },
    "MetricValue": {
        "type": "object",
        "required": ["name", "value", "trainingStep", "wallTimeSecs"],
        "properties": {
            "name": _schema("MetricName"),
            "value": FLOAT_OR_TEXT,
            "trainingStep": {"type": "integer"},
            "wallTimeSecs": {"type": "number"},
        },
    },
    "HParamsSessionGroups": {
        "type": "object",
        "description": (
            "TensorBoard's ListSessionGroupsResponse, proto3 JSON, with boardd's names "
            "(each session's run, each group's displayName)"
        ),
        "required": ["sessionGroups", "totalSize"],
        "properties": {
            "sessionGroups": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "hparams", "metricValues", "sessions"],
                    "properties": {
                        "name": {"type": "string"},
                        "hparams": {
                            "type": "object",
                            "additionalProperties": {"type": ["number", "string", "boolean"]},
                        },
                        "metricValues": {"type": "array", "items": _schema("MetricValue")},
                        "sessions": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["name", "status", "metricValues"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "run": {
                                        "type": "string",
                                        "description": (
                                            "boardd's: the run the user named for the "
                                            "session, its colour's in the dashboard: the "
                                            "writer's run of a session that tensorboardX's "
                                            "or PyTorch's add_hparams wrote in its "
                                            "timestamped sub-run (RUN/1796660406.1974096 → "
                                            "RUN), else the session's own run (its name)"
                                        ),
                                    },
                                    "startTimeSecs": {"type": "number"},
                                    "endTimeSecs": {"type": "number"},
                                    "status": {
                                        "type": "string",
                                        "enum": [
                                            "STATUS_UNKNOWN",
                                            "STATUS_SUCCESS",
                                            "STATUS_FAILURE",
                                            "STATUS_RUNNING",
                                        ],
                                    },
                                    "modelUri": {"type": "string"},
                                    "metricValues": {
                                        "type": "array",
                                        "items": _schema("MetricValue"),
                                    },
                                    "monitorUrl": {"type": "string"},
                                },
                            },
                        },
                        "monitorUrl": {"type": "string"},
                        "displayName": {
                            "type": "string",
                            "description": (
                                "boardd's: the group as shown: a group named after one "
                                "of its sessions (every group without a group name is) "
                                "as that session's run, another as its name"
                            ),
                        },
                    },
                },
            },
            "totalSize": {"type": "integer", "description": "groups after filtering"},
        },
    },
    "HParamsMetricEvals": {
        "type": "array",
        "description": "[wall_time, step, value] per kept point, by step",
        "items": {
            "type": "array",
            "prefixItems": [{"type": "number"}, {"type": "integer"}, FLOAT_OR_TEXT],
            "minItems": 3,
            "maxItems": 3,
        },
    },
    "DataLoss": {
        "type": "object",
        "required": ["run", "file", "offset", "length", "reason", "time"],
        "additionalProperties": False,
        "properties": {
            "run": {"type": "string"},
            "file": {
                "type": "string",
                "description": "the event file, relative to the logdir when it lies under it",
            },
            "offset": {"type": "integer", "minimum": 0, "description": "bytes from the start"},
            "length": {
                "type": "integer",
                "minimum": 0,
                "description": "bytes skipped; 0 for a whole record whose content was rejected",
            },
            "reason": {"type": "string"},
            "time": {
                "type": "number",
                "description": "when it was recorded (seconds since the epoch)",
            },
        },
    },
}
