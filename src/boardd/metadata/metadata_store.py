"""``MetadataStore``: ML Metadata's Python API over boardd's own SQLite lineage store.

Method names, arguments, results, ids and exceptions are ml_metadata's (1.17), so a user's MLMD
script runs unchanged once its imports name ``boardd.metadata``. The semantics follow MLMD's
C++ store (metadata_store.cc, rdbms_metadata_access_object.cc), quirks included where a script
could notice them (an update never renames an artifact; ``get_artifact_types()`` leaves out
external ids; …): tests/metadata compares both stores call by call.

Each public call is one SQLite transaction (``access.Access.transaction``): it commits whole or
not at all. A store is used by one thread at a time; another thread opens its own
``MetadataStore`` on the same file (WAL mode lets readers run beside the writer).

This module is the API's facade: each method checks its arguments (``arguments``), opens the
call's transaction and hands it to the module of its concern: ``type_registry`` (types),
``nodes`` (artifacts, executions, contexts), ``edges`` (events, attributions, associations,
parent contexts), ``subgraph_writes`` (put_execution, put_lineage_subgraph), ``listing``
(ListOptions, pages), ``lineage`` (get_lineage_subgraph). The connection and rows read as protos
are ``access``'s. None of those imports this module.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import apsw

from boardd.metadata import (
    access,
    arguments,
    edges,
    errors,
    lineage,
    listing,
    nodes,
    schema,
    subgraph_writes,
    type_registry,
)
from boardd.metadata.access import UnstorableValueError as UnstorableValueError
from boardd.metadata.listing import ListOptions as ListOptions
from boardd.metadata.listing import OrderByField as OrderByField
from boardd.metadata.proto import metadata_store_pb2 as pb
from boardd.metadata.queries import ARTIFACT, CONTEXT, EXECUTION, NodeKind

#: ml_metadata's page size for list calls.
MAX_NUM_RESULT = 100


Node = TypeVar("Node", pb.Artifact, pb.Execution, pb.Context)
NodeType = TypeVar("NodeType", pb.ArtifactType, pb.ExecutionType, pb.ContextType)


class ExtraOptions:
    """Accepted and ignored, as by ml_metadata's open-source store."""

    def __init__(self, euc: object = None) -> None:
        del euc


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MetadataStore:
    """A lineage store: ML Metadata's ``MetadataStore`` on boardd's SQLite schema."""

    def __init__(self, config: pb.ConnectionConfig, enable_upgrade_migration: bool = False) -> None:
        del enable_upgrade_migration  # the schema ladder always migrates forward
        if isinstance(config, pb.MetadataStoreClientConfig):
            raise errors.InvalidArgumentError(
                "boardd.metadata opens the lineage file itself; a gRPC MetadataStoreClientConfig "
                "is not supported (use boardd's HTTP API /api/v1/metadata/ for a remote store)"
            )
        if not isinstance(config, pb.ConnectionConfig):
            raise ValueError(
                "MetadataStore is expecting a boardd.metadata ConnectionConfig "
                "(boardd.metadata.proto.metadata_store_pb2.ConnectionConfig)"
            )
        self._owner = threading.get_ident()
        self._access = access.Access(config)

    @property
    def pipeline_asset(self) -> None:
        """None, as ML Metadata's open-source store answers."""
        return None

    def close(self) -> None:
        """Closes the connection (idempotent)."""
        self._access.close()

    def __enter__(self) -> MetadataStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- types --------------------------------------------------------------------------------

    def _put_type(
        self, kind: int, type_message: Any, can_add_fields: bool, can_omit_fields: bool
    ) -> int:
        type_message = arguments.type_message(access.TYPE_CLASSES[kind], type_message)
        with self._access.transaction(write=True) as db:
            return type_registry.put_type(db, kind, type_message, can_add_fields, can_omit_fields)

    def put_artifact_type(
        self,
        artifact_type: pb.ArtifactType,
        can_add_fields: bool = False,
        can_omit_fields: bool = False,
        extra_options: ExtraOptions | None = None,
    ) -> int:
        """Inserts or updates an artifact type; returns its id.

        An existing type (same name and version) may gain properties only with
        ``can_add_fields`` and lose them only with ``can_omit_fields``; a property's value
        type never changes (AlreadyExistsError).
        """
        return self._put_type(schema.ARTIFACT_TYPE, artifact_type, can_add_fields, can_omit_fields)

    def put_execution_type(
        self,
        execution_type: pb.ExecutionType,
        can_add_fields: bool = False,
        can_omit_fields: bool = False,
        extra_options: ExtraOptions | None = None,
    ) -> int:
        """Inserts or updates an execution type; returns its id (see put_artifact_type)."""
        return self._put_type(
            schema.EXECUTION_TYPE, execution_type, can_add_fields, can_omit_fields
        )

    def put_context_type(
        self,
        context_type: pb.ContextType,
        can_add_fields: bool = False,
        can_omit_fields: bool = False,
        extra_options: ExtraOptions | None = None,
    ) -> int:
        """Inserts or updates a context type; returns its id (see put_artifact_type)."""
        return self._put_type(schema.CONTEXT_TYPE, context_type, can_add_fields, can_omit_fields)

    def _get_type(self, kind: int, type_name: str, type_version: str | None) -> Any:
        type_name, type_version = arguments.text(type_name), arguments.optional_text(type_version)
        with self._access.transaction() as db:
            return type_registry.get_type(db, kind, type_name, type_version)

    def get_artifact_type(
        self,
        type_name: str,
        type_version: str | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> pb.ArtifactType:
        """The artifact type of this name (and version); NotFoundError if there is none."""
        result: pb.ArtifactType = self._get_type(schema.ARTIFACT_TYPE, type_name, type_version)
        return result

    def get_execution_type(
        self,
        type_name: str,
        type_version: str | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> pb.ExecutionType:
        """The execution type of this name (and version); NotFoundError if there is none."""
        result: pb.ExecutionType = self._get_type(schema.EXECUTION_TYPE, type_name, type_version)
        return result

    def get_context_type(
        self,
        type_name: str,
        type_version: str | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> pb.ContextType:
        """The context type of this name (and version); NotFoundError if there is none."""
        result: pb.ContextType = self._get_type(schema.CONTEXT_TYPE, type_name, type_version)
        return result

    def _get_types(self, kind: int) -> list[Any]:
        with self._access.transaction() as db:
            return type_registry.all_types(db, kind)

    def get_artifact_types(
        self, extra_options: ExtraOptions | None = None
    ) -> list[pb.ArtifactType]:
        """Every artifact type (MLMD's system types aside), without external ids as MLMD."""
        return self._get_types(schema.ARTIFACT_TYPE)

    def get_execution_types(
        self, extra_options: ExtraOptions | None = None
    ) -> list[pb.ExecutionType]:
        """Every execution type (MLMD's system types aside), without external ids."""
        return self._get_types(schema.EXECUTION_TYPE)

    def get_context_types(self, extra_options: ExtraOptions | None = None) -> list[pb.ContextType]:
        """Every context type, without external ids."""
        return self._get_types(schema.CONTEXT_TYPE)

    def _get_types_by_id(self, kind: int, type_ids: Iterable[int]) -> list[Any]:
        wanted = arguments.ids(type_ids)
        with self._access.transaction() as db:
            return type_registry.types_by_ids(db, kind, wanted)

    def get_artifact_types_by_id(
        self, type_ids: Iterable[int], extra_options: ExtraOptions | None = None
    ) -> list[pb.ArtifactType]:
        """The artifact types of these ids, in that order; unknown ids are skipped."""
        return self._get_types_by_id(schema.ARTIFACT_TYPE, type_ids)

    def get_execution_types_by_id(
        self, type_ids: Iterable[int], extra_options: ExtraOptions | None = None
    ) -> list[pb.ExecutionType]:
        """The execution types of these ids, in that order; unknown ids are skipped."""
        return self._get_types_by_id(schema.EXECUTION_TYPE, type_ids)

    def get_context_types_by_id(
        self, type_ids: Iterable[int], extra_options: ExtraOptions | None = None
    ) -> list[pb.ContextType]:
        """The context types of these ids, in that order; unknown ids are skipped."""
        return self._get_types_by_id(schema.CONTEXT_TYPE, type_ids)

    def _get_types_by_external_ids(self, kind: int, external_ids: Iterable[str]) -> list[Any]:
        wanted = arguments.external_ids(external_ids)
        if not wanted:
            return []
        with self._access.transaction() as db:
            return type_registry.types_by_external_ids(db, kind, wanted)

    def get_artifact_types_by_external_ids(
        self, external_ids: Iterable[str], extra_options: ExtraOptions | None = None
    ) -> list[pb.ArtifactType]:
        """The artifact types with these external ids (NotFoundError when none has one)."""
        return self._get_types_by_external_ids(schema.ARTIFACT_TYPE, external_ids)

    def get_execution_types_by_external_ids(
        self, external_ids: Iterable[str], extra_options: ExtraOptions | None = None
    ) -> list[pb.ExecutionType]:
        """The execution types with these external ids (NotFoundError when none has one)."""
        return self._get_types_by_external_ids(schema.EXECUTION_TYPE, external_ids)

    def get_context_types_by_external_ids(
        self, external_ids: Iterable[str], extra_options: ExtraOptions | None = None
    ) -> list[pb.ContextType]:
        """The context types with these external ids (NotFoundError when none has one)."""
        return self._get_types_by_external_ids(schema.CONTEXT_TYPE, external_ids)

    # -- nodes: reading -----------------------------------------------------------------------

    def _get_nodes_by_id(self, kind: NodeKind, ids: Iterable[int]) -> list[Any]:
        wanted = arguments.ids(ids)
        with self._access.transaction() as db:
            return access.find_nodes(db, kind, wanted)

    def get_artifacts_by_id(
        self, artifact_ids: Iterable[int], extra_options: ExtraOptions | None = None
    ) -> list[pb.Artifact]:
        """The artifacts of these ids (by id; unknown ids are skipped)."""
        return self._get_nodes_by_id(ARTIFACT, artifact_ids)

    def get_executions_by_id(
        self, execution_ids: Iterable[int], extra_options: ExtraOptions | None = None
    ) -> list[pb.Execution]:
        """The executions of these ids (by id; unknown ids are skipped)."""
        return self._get_nodes_by_id(EXECUTION, execution_ids)

    def get_contexts_by_id(
        self, context_ids: Iterable[int], extra_options: ExtraOptions | None = None
    ) -> list[pb.Context]:
        """The contexts of these ids (by id; unknown ids are skipped)."""
        return self._get_nodes_by_id(CONTEXT, context_ids)

    def get_artifacts_and_types_by_artifact_ids(
        self, artifact_ids: Iterable[int], extra_options: ExtraOptions | None = None
    ) -> tuple[list[pb.Artifact], list[pb.ArtifactType]]:
        """The artifacts of these ids and their types (each type once)."""
        wanted = arguments.ids(artifact_ids)
        with self._access.transaction() as db:
            return nodes.artifacts_and_types(db, wanted)

    # -- nodes: writing -----------------------------------------------------------------------

    def _put_nodes(
        self, kind: NodeKind, given: Sequence[Any], field_mask_paths: Sequence[str] | None
    ) -> list[int]:
        checked = arguments.messages(access.NODE_CLASSES[kind.name], given)
        mask = arguments.texts(field_mask_paths)
        with self._access.transaction(write=True) as db:
            return nodes.put_nodes(db, kind, checked, _now_ms(), mask)

    def put_artifacts(
        self,
        artifacts: Sequence[pb.Artifact],
        field_mask_paths: Sequence[str] | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> list[int]:
        """Inserts (no id) or updates (id) artifacts; returns their ids, index-aligned.

        With ``field_mask_paths``, an update changes only those fields (``uri``, ``state``,
        ``external_id``, ``properties.NAME``, ``custom_properties.NAME``, …).
        """
        return self._put_nodes(ARTIFACT, artifacts, field_mask_paths)

    def put_executions(
        self,
        executions: Sequence[pb.Execution],
        field_mask_paths: Sequence[str] | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> list[int]:
        """Inserts or updates executions; returns their ids, index-aligned."""
        return self._put_nodes(EXECUTION, executions, field_mask_paths)

    def put_contexts(
        self,
        contexts: Sequence[pb.Context],
        field_mask_paths: Sequence[str] | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> list[int]:
        """Inserts or updates contexts; returns their ids, index-aligned."""
        return self._put_nodes(CONTEXT, contexts, field_mask_paths)

    # -- nodes by type, name, uri, external id ------------------------------------------------

    def _get_nodes_by_type(
        self, kind: NodeKind, type_name: str, type_version: str | None
    ) -> list[Any]:
        type_name, type_version = arguments.text(type_name), arguments.optional_text(type_version)
        with self._access.transaction() as db:
            return nodes.nodes_by_type(db, kind, type_name, type_version)

    def get_artifacts_by_type(
        self,
        type_name: str,
        type_version: str | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> list[pb.Artifact]:
        """The artifacts of a type (none when the type does not exist)."""
        return self._get_nodes_by_type(ARTIFACT, type_name, type_version)

    def get_executions_by_type(
        self,
        type_name: str,
        type_version: str | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> list[pb.Execution]:
        """The executions of a type (none when the type does not exist)."""
        return self._get_nodes_by_type(EXECUTION, type_name, type_version)

    def get_contexts_by_type(
        self,
        type_name: str,
        type_version: str | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> list[pb.Context]:
        """The contexts of a type (none when the type does not exist)."""
        return self._get_nodes_by_type(CONTEXT, type_name, type_version)

    def _get_node_by_type_and_name(
        self, kind: NodeKind, type_name: str, name: str, type_version: str | None
    ) -> Any | None:
        type_name, type_version = arguments.text(type_name), arguments.optional_text(type_version)
        name = arguments.text(name)
        with self._access.transaction() as db:
            return nodes.node_by_type_and_name(db, kind, type_name, name, type_version)

    def get_artifact_by_type_and_name(
        self,
        type_name: str,
        artifact_name: str,
        type_version: str | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> pb.Artifact | None:
        """The artifact of this type and name, or None."""
        result: pb.Artifact | None = self._get_node_by_type_and_name(
            ARTIFACT, type_name, artifact_name, type_version
        )
        return result

    def get_execution_by_type_and_name(
        self,
        type_name: str,
        execution_name: str,
        type_version: str | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> pb.Execution | None:
        """The execution of this type and name, or None."""
        result: pb.Execution | None = self._get_node_by_type_and_name(
            EXECUTION, type_name, execution_name, type_version
        )
        return result

    def get_context_by_type_and_name(
        self,
        type_name: str,
        context_name: str,
        type_version: str | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> pb.Context | None:
        """The context of this type and name, or None."""
        result: pb.Context | None = self._get_node_by_type_and_name(
            CONTEXT, type_name, context_name, type_version
        )
        return result

    def get_artifacts_by_uri(
        self, uri: str, extra_options: ExtraOptions | None = None
    ) -> list[pb.Artifact]:
        """The artifacts with this uri."""
        uri = arguments.text(uri)
        with self._access.transaction() as db:
            return nodes.artifacts_by_uri(db, uri)

    def _get_nodes_by_external_ids(self, kind: NodeKind, external_ids: Iterable[str]) -> list[Any]:
        wanted = arguments.external_ids(external_ids)
        if not wanted:
            return []
        with self._access.transaction() as db:
            return nodes.nodes_by_external_ids(db, kind, wanted)

    def get_artifacts_by_external_ids(
        self, external_ids: Iterable[str], extra_options: ExtraOptions | None = None
    ) -> list[pb.Artifact]:
        """The artifacts with these external ids (NotFoundError when none has one)."""
        return self._get_nodes_by_external_ids(ARTIFACT, external_ids)

    def get_executions_by_external_ids(
        self, external_ids: Iterable[str], extra_options: ExtraOptions | None = None
    ) -> list[pb.Execution]:
        """The executions with these external ids (NotFoundError when none has one)."""
        return self._get_nodes_by_external_ids(EXECUTION, external_ids)

    def get_contexts_by_external_ids(
        self, external_ids: Iterable[str], extra_options: ExtraOptions | None = None
    ) -> list[pb.Context]:
        """The contexts with these external ids (NotFoundError when none has one)."""
        return self._get_nodes_by_external_ids(CONTEXT, external_ids)

    # -- events -------------------------------------------------------------------------------

    def put_events(
        self, events: Sequence[pb.Event], extra_options: ExtraOptions | None = None
    ) -> None:
        """Inserts events (their artifact and execution must exist; events never change)."""
        events = arguments.messages(pb.Event, events)
        with self._access.transaction(write=True) as db:
            edges.put_events(db, events, _now_ms())

    def get_events_by_execution_ids(
        self, execution_ids: Iterable[int], extra_options: ExtraOptions | None = None
    ) -> list[pb.Event]:
        """The events of these executions."""
        wanted = arguments.ids(execution_ids)
        with self._access.transaction() as db:
            return edges.events_of_executions(db, wanted)

    def get_events_by_artifact_ids(
        self, artifact_ids: Iterable[int], extra_options: ExtraOptions | None = None
    ) -> list[pb.Event]:
        """The events of these artifacts."""
        wanted = arguments.ids(artifact_ids)
        with self._access.transaction() as db:
            return edges.events_of_artifacts(db, wanted)

    # -- contexts: membership and nesting -----------------------------------------------------

    def put_attributions_and_associations(
        self,
        attributions: Sequence[pb.Attribution],
        associations: Sequence[pb.Association],
        extra_options: ExtraOptions | None = None,
    ) -> None:
        """Adds artifacts and executions to contexts (an existing link is kept as is)."""
        attributions = arguments.messages(pb.Attribution, attributions)
        associations = arguments.messages(pb.Association, associations)
        with self._access.transaction(write=True) as db:
            edges.put_attributions_and_associations(db, attributions, associations)

    def put_parent_contexts(
        self,
        parent_contexts: Sequence[pb.ParentContext],
        extra_options: ExtraOptions | None = None,
    ) -> None:
        """Nests contexts: each ParentContext makes ``parent_id`` a parent of ``child_id``.

        InvalidArgumentError for an unknown id or a cycle; AlreadyExistsError for a link that
        exists.
        """
        parent_contexts = arguments.messages(pb.ParentContext, parent_contexts)
        with self._access.transaction(write=True) as db:
            edges.put_parent_contexts(db, parent_contexts)

    def _linked_contexts(
        self, read: Callable[[apsw.Connection, int], list[pb.Context]], node_id: int
    ) -> list[pb.Context]:
        node_id = arguments.one_id(node_id)
        with self._access.transaction() as db:
            return read(db, node_id)

    def get_parent_contexts_by_context(
        self, context_id: int, extra_options: ExtraOptions | None = None
    ) -> list[pb.Context]:
        """The parents of a context."""
        return self._linked_contexts(edges.parent_contexts, context_id)

    def get_children_contexts_by_context(
        self, context_id: int, extra_options: ExtraOptions | None = None
    ) -> list[pb.Context]:
        """The children of a context."""
        return self._linked_contexts(edges.child_contexts, context_id)

    def get_contexts_by_artifact(
        self, artifact_id: int, extra_options: ExtraOptions | None = None
    ) -> list[pb.Context]:
        """The contexts an artifact is attributed to (NotFoundError when none, as MLMD)."""
        return self._linked_contexts(edges.contexts_of_artifact, artifact_id)

    def get_contexts_by_execution(
        self, execution_id: int, extra_options: ExtraOptions | None = None
    ) -> list[pb.Context]:
        """The contexts an execution is associated with (NotFoundError when none, as MLMD)."""
        return self._linked_contexts(edges.contexts_of_execution, execution_id)

    def get_artifacts_by_context(
        self,
        context_id: int,
        list_options: ListOptions | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> list[pb.Artifact]:
        """The artifacts attributed to a context (all, or as ``list_options`` says)."""
        context_id = arguments.one_id(context_id)
        return listing.list_nodes(
            self._access,
            ARTIFACT,
            list_options,
            lambda db: edges.artifact_ids_of_context(db, context_id),
        )

    def get_executions_by_context(
        self,
        context_id: int,
        list_options: ListOptions | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> list[pb.Execution]:
        """The executions associated with a context (newest first unless ``list_options``)."""
        context_id = arguments.one_id(context_id)
        if list_options is None:
            list_options = ListOptions(order_by=OrderByField.CREATE_TIME, is_asc=False)
        return listing.list_nodes(
            self._access,
            EXECUTION,
            list_options,
            lambda db: edges.execution_ids_of_context(db, context_id),
        )

    # -- put_execution and put_lineage_subgraph -----------------------------------------------

    def put_execution(
        self,
        execution: pb.Execution,
        artifact_and_events: Sequence[tuple[pb.Artifact, pb.Event | None] | Sequence[Any]],
        contexts: Sequence[pb.Context] | None,
        reuse_context_if_already_exist: bool = False,
        reuse_artifact_if_already_exist_by_external_id: bool = False,
        force_reuse_context: bool = False,
        force_update_time: bool = False,
        extra_options: ExtraOptions | None = None,
    ) -> tuple[int, list[int], list[int]]:
        """Writes an execution, its artifacts and events, and its contexts, atomically.

        Returns the execution id, the artifact ids (aligned with ``artifact_and_events``) and
        the context ids; every artifact is attributed and the execution associated to every
        context.
        """
        execution = arguments.message(pb.Execution, execution, "MergeFrom")
        contexts = None if contexts is None else arguments.messages(pb.Context, contexts)
        pairs = arguments.artifact_and_event_pairs(artifact_and_events)
        with self._access.transaction(write=True) as db:
            return subgraph_writes.put_execution(
                db,
                _now_ms(),
                execution,
                pairs,
                contexts,
                reuse_context=reuse_context_if_already_exist,
                reuse_artifact_by_external_id=reuse_artifact_if_already_exist_by_external_id,
                force_reuse_context=force_reuse_context,
                force_update_time=force_update_time,
            )

    def put_lineage_subgraph(
        self,
        executions: Sequence[pb.Execution],
        artifacts: Sequence[pb.Artifact],
        contexts: Sequence[pb.Context],
        event_edges: Sequence[tuple[int | None, int | None, pb.Event]],
        reuse_context_if_already_exist: bool = False,
        reuse_artifact_if_already_exist_by_external_id: bool = False,
        extra_options: ExtraOptions | None = None,
    ) -> tuple[list[int], list[int], list[int]]:
        """Writes executions, artifacts, contexts and the events among them, atomically.

        ``event_edges`` are ``(execution_index, artifact_index, event)``: an index into the
        lists given here, or None with the event's own id. Returns the execution, artifact and
        context ids, index-aligned.
        """
        executions = arguments.messages(pb.Execution, executions)
        artifacts = arguments.messages(pb.Artifact, artifacts)
        contexts = arguments.messages(pb.Context, contexts)
        edge_tuples = [tuple(edge) for edge in event_edges]
        arguments.check_event_edges(edge_tuples, executions, artifacts)
        with self._access.transaction(write=True) as db:
            return subgraph_writes.put_lineage_subgraph(
                db,
                _now_ms(),
                executions,
                artifacts,
                contexts,
                edge_tuples,
                reuse_context=reuse_context_if_already_exist,
                reuse_artifact_by_external_id=reuse_artifact_if_already_exist_by_external_id,
            )

    # -- lineage ------------------------------------------------------------------------------

    def get_lineage_subgraph(
        self,
        query_options: pb.LineageSubgraphQueryOptions,
        field_mask_paths: Sequence[str] | None = None,
        extra_options: ExtraOptions | None = None,
    ) -> pb.LineageGraph:
        """The subgraph around the starting nodes (see boardd.metadata.lineage)."""
        with self._access.transaction() as db:
            return lineage.subgraph(db, query_options, field_mask_paths)

    # -- lists with ListOptions ---------------------------------------------------------------

    def _list_nodes(self, kind: NodeKind, list_options: ListOptions | None) -> list[Any]:
        return listing.list_nodes(self._access, kind, list_options, None)

    def list_page(self, kind: str, options: pb.ListOperationOptions) -> tuple[list[Any], str]:
        """One page of ``kind`` ("artifact", "execution" or "context") and the next page's
        token ("" after the last page): MLMD's GetArtifacts/… RPCs with their
        ListOperationOptions, for callers that page themselves (boardd's HTTP API)."""
        kinds = {"artifact": ARTIFACT, "execution": EXECUTION, "context": CONTEXT}
        if kind not in kinds:
            raise errors.InvalidArgumentError(
                f"unknown node kind {kind!r}: artifact, execution or context"
            )
        with self._access.transaction() as db:
            return listing.list_page(db, kinds[kind], options)

    def get_artifacts(
        self, list_options: ListOptions | None = None, extra_options: ExtraOptions | None = None
    ) -> list[pb.Artifact]:
        """Artifacts, all or as ``list_options`` says (limit, order, filter_query)."""
        return self._list_nodes(ARTIFACT, list_options)

    def get_executions(
        self, list_options: ListOptions | None = None, extra_options: ExtraOptions | None = None
    ) -> list[pb.Execution]:
        """Executions, all or as ``list_options`` says."""
        return self._list_nodes(EXECUTION, list_options)

    def get_contexts(
        self, list_options: ListOptions | None = None, extra_options: ExtraOptions | None = None
    ) -> list[pb.Context]:
        """Contexts, all or as ``list_options`` says."""
        return self._list_nodes(CONTEXT, list_options)


def downgrade_schema(config: pb.ConnectionConfig, downgrade_to_schema_version: int) -> None:
    """ml_metadata's schema downgrade. boardd's lineage schema has its own ladder (one version
    so far), so there is nothing to downgrade to: InvalidArgumentError."""
    raise errors.InvalidArgumentError(
        f"boardd's lineage store has schema version {schema.SCHEMA_VERSION} (its own, not "
        f"MLMD's); it cannot be downgraded to {downgrade_to_schema_version}"
    )
