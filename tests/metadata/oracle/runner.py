"""The oracle's side of tests/metadata: ml-metadata's MetadataStore driven by JSON lines.

Runs under the oracle venv's python (tests/metadata/oracle/__init__.py makes it) and never
imports boardd. Usage: ``runner.py (--fake | --sqlite PATH)``. Each stdin line is one call::

    {"call": "put_artifact_type", "args": [...], "kwargs": {...}}

with messages as ``{"$msg": "ArtifactType", "json": {...proto3 JSON...}}``, ListOptions as
``{"$list_options": {"limit": 3, "order_by": "ID", "is_asc": true, "filter_query": "…"}}``
and tuples as ``{"$tuple": [...]}``; ``{"call": "$reset"}`` starts a fresh in-memory
store and ``{"call": "$exit"}`` ends the runner. Each answer is one line:
``{"ok": <result>}`` (the same encoding) or ``{"error": "<MLMD error class>", "message": "…"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from google.protobuf import json_format
from google.protobuf import wrappers_pb2 as _wrappers  # registers them: Any values may pack one
from google.protobuf.message import Message
from ml_metadata import errors
from ml_metadata.metadata_store import metadata_store
from ml_metadata.proto import metadata_store_pb2

_ = _wrappers


def _message_class(name: str) -> Any:
    cls: Any = metadata_store_pb2
    for part in name.split("."):
        cls = getattr(cls, part)
    return cls


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if "$msg" in value:
            return json_format.ParseDict(value["json"], _message_class(value["$msg"])())
        if "$tuple" in value:
            return tuple(decode(v) for v in value["$tuple"])
        if "$list_options" in value:
            options = dict(value["$list_options"])
            if options.get("order_by") is not None:
                options["order_by"] = metadata_store.OrderByField[options["order_by"]]
            return metadata_store.ListOptions(**options)
        return {k: decode(v) for k, v in value.items()}
    return value


def _type_name(message: Message) -> str:
    full = message.DESCRIPTOR.full_name
    prefix = metadata_store_pb2.DESCRIPTOR.package + "."
    return full[len(prefix) :] if full.startswith(prefix) else full


def encode(value: Any) -> Any:
    if isinstance(value, Message):
        return {
            "$msg": _type_name(value),
            "json": json_format.MessageToDict(value, preserving_proto_field_name=True),
        }
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, (list,)) or type(value).__name__.startswith("Repeated"):
        return [encode(v) for v in value]
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--fake", action="store_true", help="an in-memory store")
    where.add_argument("--sqlite", metavar="PATH", help="a SQLite file store")
    args = parser.parse_args()
    config = metadata_store_pb2.ConnectionConfig()
    if args.fake:
        config.fake_database.SetInParent()
    else:
        config.sqlite.filename_uri = args.sqlite
        config.sqlite.connection_mode = 3
    store = metadata_store.MetadataStore(config)
    out = sys.stdout
    out.write(json.dumps({"ok": "ready"}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        started = time.perf_counter()
        try:
            if request["call"] == "$exit":
                break
            if request["call"] == "$reset":  # a fresh in-memory store
                del store
                fresh = metadata_store_pb2.ConnectionConfig()
                fresh.fake_database.SetInParent()
                store = metadata_store.MetadataStore(fresh)
                out.write(json.dumps({"ok": None}) + "\n")
                out.flush()
                continue
            method = getattr(store, request["call"])
            result = method(*decode(request.get("args", [])), **decode(request.get("kwargs", {})))
            answer: dict[str, Any] = {"ok": encode(result)}
        except errors.StatusError as exc:
            answer = {"error": type(exc).__name__, "message": str(exc)}
        except Exception as exc:  # a Python-level error (TypeError, ValueError, …)
            answer = {"error": type(exc).__name__, "message": str(exc)}
        answer["seconds"] = time.perf_counter() - started
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
