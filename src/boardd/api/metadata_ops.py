"""The MetadataStore operations served under /api/v1/metadata/: each one's arguments (as
ML Metadata's Python API names them) and their kinds, declared once for the route table, the
OpenAPI description and the handler (api/metadata.py)."""

from __future__ import annotations

from typing import NamedTuple

#: Argument kinds: ``int``, ``str``, ``bool``, ``ints``, ``strs``; ``msg:NAME`` (one message
#: of metadata_store.proto as proto3 JSON), ``msgs:NAME`` (a list of them); ``list_options``
#: (MLMD's ListOptions: limit, order_by, is_asc, filter_query); ``artifact_and_events`` (a
#: list of [Artifact, Event or null]); ``event_edges`` (a list of [execution index or null,
#: artifact index or null, Event], put_lineage_subgraph's).
Kind = str


class Arg(NamedTuple):
    """One argument of an operation."""

    name: str
    kind: Kind
    required: bool = False


class Operation(NamedTuple):
    """One MetadataStore method as a route."""

    name: str
    args: tuple[Arg, ...]
    #: Writes need the token (even on loopback); reads are open.
    write: bool = False

    @property
    def path(self) -> str:
        """Its route."""
        return f"/api/v1/metadata/{self.name}"


def _types(kind: str) -> list[Operation]:
    title = {"artifact": "Artifact", "execution": "Execution", "context": "Context"}[kind]
    type_msg = f"msg:{title}Type"
    return [
        Operation(
            f"put_{kind}_type",
            (
                Arg(f"{kind}_type", type_msg, True),
                Arg("can_add_fields", "bool"),
                Arg("can_omit_fields", "bool"),
            ),
            write=True,
        ),
        Operation(f"get_{kind}_type", (Arg("type_name", "str", True), Arg("type_version", "str"))),
        Operation(f"get_{kind}_types", ()),
        Operation(f"get_{kind}_types_by_id", (Arg("type_ids", "ints", True),)),
        Operation(f"get_{kind}_types_by_external_ids", (Arg("external_ids", "strs", True),)),
    ]


def _nodes(kind: str) -> list[Operation]:
    title = {"artifact": "Artifact", "execution": "Execution", "context": "Context"}[kind]
    plural = f"{kind}s"
    return [
        Operation(
            f"put_{plural}",
            (Arg(plural, f"msgs:{title}", True), Arg("field_mask_paths", "strs")),
            write=True,
        ),
        Operation(f"get_{plural}", (Arg("list_options", "list_options"),)),
        Operation(f"get_{plural}_by_id", (Arg(f"{kind}_ids", "ints", True),)),
        Operation(
            f"get_{plural}_by_type", (Arg("type_name", "str", True), Arg("type_version", "str"))
        ),
        Operation(
            f"get_{kind}_by_type_and_name",
            (
                Arg("type_name", "str", True),
                Arg(f"{kind}_name", "str", True),
                Arg("type_version", "str"),
            ),
        ),
        Operation(f"get_{plural}_by_external_ids", (Arg("external_ids", "strs", True),)),
    ]


OPERATIONS: tuple[Operation, ...] = (
    *_types("artifact"),
    *_types("execution"),
    *_types("context"),
    *_nodes("artifact"),
    *_nodes("execution"),
    *_nodes("context"),
    Operation("put_events", (Arg("events", "msgs:Event", True),), write=True),
    Operation(
        "put_execution",
        (
            Arg("execution", "msg:Execution", True),
            Arg("artifact_and_events", "artifact_and_events", True),
            Arg("contexts", "msgs:Context", True),
            Arg("reuse_context_if_already_exist", "bool"),
            Arg("reuse_artifact_if_already_exist_by_external_id", "bool"),
            Arg("force_reuse_context", "bool"),
            Arg("force_update_time", "bool"),
        ),
        write=True,
    ),
    Operation(
        "put_lineage_subgraph",
        (
            Arg("executions", "msgs:Execution", True),
            Arg("artifacts", "msgs:Artifact", True),
            Arg("contexts", "msgs:Context", True),
            Arg("event_edges", "event_edges", True),
            Arg("reuse_context_if_already_exist", "bool"),
            Arg("reuse_artifact_if_already_exist_by_external_id", "bool"),
        ),
        write=True,
    ),
    Operation(
        "put_attributions_and_associations",
        (
            Arg("attributions", "msgs:Attribution", True),
            Arg("associations", "msgs:Association", True),
        ),
        write=True,
    ),
    Operation(
        "put_parent_contexts", (Arg("parent_contexts", "msgs:ParentContext", True),), write=True
    ),
    Operation("get_artifacts_by_uri", (Arg("uri", "str", True),)),
    Operation("get_artifacts_and_types_by_artifact_ids", (Arg("artifact_ids", "ints", True),)),
    Operation(
        "get_artifacts_by_context",
        (Arg("context_id", "int", True), Arg("list_options", "list_options")),
    ),
    Operation(
        "get_executions_by_context",
        (Arg("context_id", "int", True), Arg("list_options", "list_options")),
    ),
    Operation("get_contexts_by_artifact", (Arg("artifact_id", "int", True),)),
    Operation("get_contexts_by_execution", (Arg("execution_id", "int", True),)),
    Operation("get_events_by_artifact_ids", (Arg("artifact_ids", "ints", True),)),
    Operation("get_events_by_execution_ids", (Arg("execution_ids", "ints", True),)),
    Operation("get_parent_contexts_by_context", (Arg("context_id", "int", True),)),
    Operation("get_children_contexts_by_context", (Arg("context_id", "int", True),)),
    Operation(
        "get_lineage_subgraph",
        (
            Arg("query_options", "msg:LineageSubgraphQueryOptions", True),
            Arg("field_mask_paths", "strs"),
        ),
    ),
)

#: Operations by name.
BY_NAME = {op.name: op for op in OPERATIONS}
