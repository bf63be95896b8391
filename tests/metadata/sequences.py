"""Random call sequences over MLMD's whole Python API (a seeded generator, not hypothesis: a
failing sequence is replayed from its seed and printed call by call).

The vocabulary is small on purpose (three type names, a few property, node and external-id
names) so that calls collide: names already taken, types evolving incompatibly, unknown or
wrong-kind ids, properties of the wrong value type. Each step's arguments may depend on what
earlier steps answered (the ids made so far).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import any_pb2, wrappers_pb2

import boardd.metadata as mlmd
from boardd.metadata.proto import metadata_store_pb2 as pb

TYPE_NAMES = ("A", "B", "C")
PROPERTY_NAMES = ("p", "q", "r")
PROPERTY_TYPES = (pb.INT, pb.DOUBLE, pb.STRING, pb.BOOLEAN, pb.STRUCT, pb.PROTO)
NODE_NAMES = ("n1", "n2", "n3")
URIS = ("u1", "u2", "")
EXTERNAL_IDS = ("x1", "x2", "x3")
KINDS = ("artifact", "execution", "context")
_TYPE_CLASS = {
    "artifact": pb.ArtifactType,
    "execution": pb.ExecutionType,
    "context": pb.ContextType,
}
_NODE_CLASS = {"artifact": pb.Artifact, "execution": pb.Execution, "context": pb.Context}


@dataclass
class Known:
    """What the sequence has made so far (ids as the stores answered them)."""

    types: dict[str, dict[int, dict[str, int]]] = field(
        default_factory=lambda: {k: {} for k in KINDS}
    )
    nodes: dict[str, list[int]] = field(default_factory=lambda: {k: [] for k in KINDS})


Step = tuple[str, tuple[Any, ...], dict[str, Any]]


class Generator:
    """Steps of one sequence; ``record(step, result)`` feeds answers back."""

    def __init__(self, seed: int, filters: bool = False) -> None:
        self.rng = random.Random(seed)
        self.known = Known()
        #: Also filter_query calls (lists with filters, get_lineage_subgraph).
        self.filters = filters

    # -- values -------------------------------------------------------------------------------

    def value(self, value_type: int | None = None) -> pb.Value:
        rng = self.rng
        value_type = value_type if value_type is not None else rng.choice(PROPERTY_TYPES)
        out = pb.Value()
        if value_type == pb.INT:
            out.int_value = rng.randint(-3, 3)
        elif value_type == pb.DOUBLE:
            out.double_value = rng.choice((0.5, -1.25, 3.0))
        elif value_type == pb.STRING:
            out.string_value = rng.choice(("", "a", "b c", "ü"))
        elif value_type == pb.BOOLEAN:
            out.bool_value = rng.random() < 0.5
        elif value_type == pb.STRUCT:
            out.struct_value.update({"k": rng.choice((1, "v", True)), "l": [1, 2]})
        else:
            packed = any_pb2.Any()
            # A well-known type: MLMD's JSON side must know the packed message to parse it.
            packed.Pack(wrappers_pb2.Int64Value(value=rng.randint(1, 3)))
            out.proto_value.CopyFrom(packed)
        return out

    def type_id(self, kind: str) -> int:
        """A known type of this kind mostly; sometimes another kind's, or none at all."""
        rng = self.rng
        own = list(self.known.types[kind])
        roll = rng.random()
        if own and roll < 0.85:
            return rng.choice(own)
        if roll < 0.93:
            others = [t for k in KINDS if k != kind for t in self.known.types[k]]
            if others:
                return rng.choice(others)
        return rng.randint(1, 40)

    def node_id(self, kind: str) -> int:
        own = self.known.nodes[kind]
        if own and self.rng.random() < 0.9:
            return self.rng.choice(own)
        return self.rng.randint(1, 30)

    # -- messages -----------------------------------------------------------------------------

    def a_type(self, kind: str) -> Any:
        rng = self.rng
        message = _TYPE_CLASS[kind](name=rng.choice(TYPE_NAMES))
        if rng.random() < 0.15:
            message.version = rng.choice(("v1", ""))
        if rng.random() < 0.1:
            message.description = "d"
        if rng.random() < 0.15:
            message.external_id = rng.choice(EXTERNAL_IDS)
        for name in rng.sample(PROPERTY_NAMES, rng.randint(0, 3)):
            message.properties[name] = rng.choice(
                PROPERTY_TYPES if rng.random() < 0.97 else (pb.UNKNOWN,)
            )
        if kind == "artifact" and rng.random() < 0.15:
            message.base_type = rng.choice(
                (pb.ArtifactType.DATASET, pb.ArtifactType.MODEL, pb.ArtifactType.UNSET)
            )
        if kind == "execution" and rng.random() < 0.15:
            message.base_type = rng.choice((pb.ExecutionType.TRAIN, pb.ExecutionType.PROCESS))
        if kind == "execution" and rng.random() < 0.1:
            message.input_type.any.SetInParent()
        return message

    def a_node(self, kind: str, update: bool | None = None) -> Any:
        rng = self.rng
        node = _NODE_CLASS[kind]()
        update = rng.random() < 0.3 if update is None else update
        if update:
            node.id = self.node_id(kind)
            if rng.random() < 0.5:
                node.type_id = self.type_id(kind)
        elif rng.random() < 0.97:
            node.type_id = self.type_id(kind)
        declared = self.known.types[kind].get(node.type_id, {})
        for name in PROPERTY_NAMES:
            if rng.random() < 0.4:
                good = name in declared and rng.random() < 0.9
                node.properties[name].CopyFrom(self.value(declared[name] if good else None))
        if rng.random() < 0.4:
            node.custom_properties[rng.choice(("c", "p"))].CopyFrom(self.value())
        if kind == "context":
            if rng.random() < 0.95:
                node.name = rng.choice(NODE_NAMES)
        elif rng.random() < 0.5:
            node.name = rng.choice(NODE_NAMES)
        if kind == "artifact":
            if rng.random() < 0.7:
                node.uri = rng.choice(URIS)
            if rng.random() < 0.5:
                node.state = rng.choice(list(pb.Artifact.State.values()))
        if kind == "execution" and rng.random() < 0.6:
            node.last_known_state = rng.choice(list(pb.Execution.State.values()))
        if rng.random() < 0.25:
            node.external_id = rng.choice(EXTERNAL_IDS)
        return node

    def an_event(self, with_ids: bool = True) -> pb.Event:
        rng = self.rng
        event = pb.Event()
        if with_ids:
            event.artifact_id = self.node_id("artifact")
            event.execution_id = self.node_id("execution")
        if rng.random() < 0.97:
            event.type = rng.choice([t for t in pb.Event.Type.values() if t] + [0])
        for _ in range(rng.choice((0, 0, 1, 2))):
            step = event.path.steps.add()
            if rng.random() < 0.5:
                step.index = rng.randint(0, 3)
            else:
                step.key = rng.choice(("in", "out"))
        if rng.random() < 0.2:
            event.milliseconds_since_epoch = 12345
        return event

    def list_options(self) -> mlmd.ListOptions | None:
        rng = self.rng
        if rng.random() < 0.4:
            return None
        return mlmd.ListOptions(
            limit=rng.choice((None, 1, 2, 5)),
            # Not UPDATE_TIME: which of two nodes updated in the same millisecond is "later"
            # is a matter of timing, not of the API.
            order_by=rng.choice((None, mlmd.OrderByField.ID, mlmd.OrderByField.CREATE_TIME)),
            is_asc=rng.random() < 0.5,
        )

    # -- steps --------------------------------------------------------------------------------

    def step(self) -> Step:
        rng = self.rng
        kind = rng.choice(KINDS)
        makers: list[tuple[float, Callable[[], Step]]] = [
            (3.0, lambda: (f"put_{kind}_type", (self.a_type(kind),), self._type_flags())),
            (
                5.0,
                lambda: (
                    f"put_{kind}s",
                    ([self.a_node(kind) for _ in range(rng.randint(1, 3))],),
                    self._mask(kind),
                ),
            ),
            (
                1.5,
                lambda: ("put_events", ([self.an_event() for _ in range(rng.randint(1, 2))],), {}),
            ),
            (2.0, self._put_execution),
            (1.0, self._put_links),
            (1.0, self._put_parents),
            (1.0, self._put_lineage_subgraph),
            (6.0, lambda: self._get(kind)),
        ]
        if self.filters:
            makers += [
                (2.0, self._lineage),
                (1.5, lambda: self._filtered_list(kind)),
            ]
        total = sum(w for w, _ in makers)
        roll = rng.random() * total
        for weight, make in makers:
            roll -= weight
            if roll <= 0:
                return make()
        return makers[-1][1]()

    def _type_flags(self) -> dict[str, Any]:
        return {
            "can_add_fields": self.rng.random() < 0.5,
            "can_omit_fields": self.rng.random() < 0.5,
        }

    def _mask(self, kind: str) -> dict[str, Any]:
        if self.rng.random() < 0.8:
            return {}
        choices = {
            "artifact": ["uri", "state", "external_id"],
            "execution": ["last_known_state", "external_id"],
            "context": ["name", "external_id"],
        }[kind]
        paths = self.rng.sample([*choices, "properties.p", "custom_properties.c"], 2)
        return {"field_mask_paths": paths}

    def _put_execution(self) -> Step:
        rng = self.rng
        execution = self.a_node("execution", update=rng.random() < 0.2)
        pairs: list[tuple[Any, ...]] = []
        for _ in range(rng.randint(0, 3)):
            artifact = self.a_node("artifact", update=rng.random() < 0.3)
            event = self.an_event(with_ids=False) if rng.random() < 0.8 else None
            if event is not None and rng.random() < 0.1:
                event.artifact_id = self.node_id("artifact")
            pairs.append(
                (artifact, event) if event is not None or rng.random() < 0.5 else (artifact,)
            )
        contexts = [
            self.a_node("context", update=rng.random() < 0.3) for _ in range(rng.randint(0, 2))
        ]
        flags = {
            "reuse_context_if_already_exist": rng.random() < 0.3,
            "reuse_artifact_if_already_exist_by_external_id": rng.random() < 0.3,
            "force_reuse_context": rng.random() < 0.2,
            "force_update_time": rng.random() < 0.2,
        }
        return ("put_execution", (execution, pairs, contexts), flags)

    def _put_links(self) -> Step:
        rng = self.rng
        attributions = [
            pb.Attribution(artifact_id=self.node_id("artifact"), context_id=self.node_id("context"))
            for _ in range(rng.randint(0, 2))
        ]
        associations = [
            pb.Association(
                execution_id=self.node_id("execution"), context_id=self.node_id("context")
            )
            for _ in range(rng.randint(0, 2))
        ]
        return ("put_attributions_and_associations", (attributions, associations), {})

    def _put_parents(self) -> Step:
        links = [
            pb.ParentContext(child_id=self.node_id("context"), parent_id=self.node_id("context"))
            for _ in range(self.rng.randint(1, 2))
        ]
        return ("put_parent_contexts", (links,), {})

    def _put_lineage_subgraph(self) -> Step:
        rng = self.rng
        executions = [
            self.a_node("execution", update=rng.random() < 0.2) for _ in range(rng.randint(0, 2))
        ]
        artifacts = [
            self.a_node("artifact", update=rng.random() < 0.2) for _ in range(rng.randint(0, 3))
        ]
        contexts = [
            self.a_node("context", update=rng.random() < 0.2) for _ in range(rng.randint(0, 2))
        ]
        edges = []
        for _ in range(rng.randint(0, 3)):
            event = self.an_event(with_ids=False)
            execution_index = (
                rng.randint(0, max(len(executions) - 1, 0))
                if executions and rng.random() < 0.9
                else None
            )
            artifact_index = (
                rng.randint(0, max(len(artifacts) - 1, 0))
                if artifacts and rng.random() < 0.9
                else None
            )
            if execution_index is None:
                event.execution_id = self.node_id("execution")
            if artifact_index is None:
                event.artifact_id = self.node_id("artifact")
            edges.append((execution_index, artifact_index, event))
        flags = {
            "reuse_context_if_already_exist": rng.random() < 0.3,
            "reuse_artifact_if_already_exist_by_external_id": rng.random() < 0.3,
        }
        return ("put_lineage_subgraph", (executions, artifacts, contexts, edges), flags)

    def _get(self, kind: str) -> Step:
        rng = self.rng
        plural = f"{kind}s"
        name = rng.choice(TYPE_NAMES)
        version = rng.choice((None, None, "v1"))
        ids = [self.node_id(kind) for _ in range(rng.randint(0, 3))]
        type_ids = [self.type_id(kind) for _ in range(rng.randint(0, 3))]
        externals = rng.sample(EXTERNAL_IDS, rng.randint(1, 2))
        choices: list[Step] = [
            (f"get_{kind}_type", (name,), {"type_version": version} if version else {}),
            (f"get_{kind}_types", (), {}),
            (f"get_{kind}_types_by_id", (type_ids,), {}),
            (f"get_{kind}_types_by_external_ids", (externals,), {}),
            (f"get_{plural}", (), {"list_options": self.list_options()}),
            (f"get_{plural}_by_id", (ids,), {}),
            (f"get_{plural}_by_type", (name,), {"type_version": version} if version else {}),
            (f"get_{kind}_by_type_and_name", (name, rng.choice(NODE_NAMES)), {}),
            (f"get_{plural}_by_external_ids", (externals,), {}),
        ]
        if kind == "artifact":
            choices += [
                ("get_artifacts_by_uri", (rng.choice(URIS),), {}),
                ("get_artifacts_and_types_by_artifact_ids", (ids,), {}),
                ("get_events_by_artifact_ids", (ids,), {}),
                ("get_contexts_by_artifact", (self.node_id("artifact"),), {}),
            ]
        elif kind == "execution":
            choices += [
                ("get_events_by_execution_ids", (ids,), {}),
                ("get_contexts_by_execution", (self.node_id("execution"),), {}),
            ]
        else:
            context = self.node_id("context")
            choices += [
                ("get_artifacts_by_context", (context,), {"list_options": self.list_options()}),
                ("get_executions_by_context", (context,), {"list_options": self.list_options()}),
                ("get_parent_contexts_by_context", (context,), {}),
                ("get_children_contexts_by_context", (context,), {}),
            ]
        return rng.choice(choices)

    def _node_filter(self, kind: str) -> str:
        rng = self.rng
        choices = [
            f"id = {self.node_id(kind)}",
            f"id IN ({self.node_id(kind)}, {self.node_id(kind)})",
            f"name = '{rng.choice(NODE_NAMES)}'",
            f"type = '{rng.choice(TYPE_NAMES)}'",
            f"id > {rng.randint(0, 10)}",
        ]
        if kind == "artifact":
            choices.append(f"uri = '{rng.choice(URIS)}'")
        return rng.choice(choices)

    def _lineage(self) -> Step:
        rng = self.rng
        options = pb.LineageSubgraphQueryOptions()
        start = rng.choice(("artifact", "execution"))
        starting = (
            options.starting_artifacts if start == "artifact" else options.starting_executions
        )
        starting.filter_query = self._node_filter(start)
        if rng.random() < 0.8:
            options.max_num_hops = rng.randint(0, 6)
        options.direction = rng.choice(list(pb.LineageSubgraphQueryOptions.Direction.values()))
        for name, kind in (("ending_artifacts", "artifact"), ("ending_executions", "execution")):
            if rng.random() < 0.25:
                ending = getattr(options, name)
                ending.filter_query = self._node_filter(kind)
                ending.include_ending_nodes = rng.random() < 0.5
        kwargs: dict[str, Any] = {}
        if rng.random() < 0.3:
            fields = [f.name for f in pb.LineageGraph.DESCRIPTOR.fields]
            kwargs["field_mask_paths"] = rng.sample(fields, rng.randint(1, 4))
        return ("get_lineage_subgraph", (options,), kwargs)

    def _filtered_list(self, kind: str) -> Step:
        options = self.list_options() or mlmd.ListOptions()
        options.filter_query = self._node_filter(kind)
        return (f"get_{kind}s", (), {"list_options": options})

    # -- feedback -----------------------------------------------------------------------------

    def record(self, step: Step, outcome: str, result: Any) -> None:
        """Learns the ids a successful put made."""
        if outcome != "ok":
            return
        name, args, _ = step
        for kind in KINDS:
            if name == f"put_{kind}_type":
                properties = self.known.types[kind].setdefault(result, {})
                properties.update(dict(args[0].properties))
            elif name == f"put_{kind}s":
                self._add(kind, result)
        if name == "put_execution":
            execution_id, artifact_ids, context_ids = result
            self._add("execution", [execution_id])
            self._add("artifact", [i for i in artifact_ids if i > 0])
            self._add("context", context_ids)
        elif name == "put_lineage_subgraph":
            execution_ids, artifact_ids, context_ids = result
            self._add("execution", execution_ids)
            self._add("artifact", artifact_ids)
            self._add("context", context_ids)

    def _add(self, kind: str, ids: list[int]) -> None:
        for i in ids:
            if i not in self.known.nodes[kind]:
                self.known.nodes[kind].append(i)


def steps(seed: int, count: int, filters: bool = False) -> Iterator[tuple[Generator, Step]]:
    """``count`` steps of the sequence of this seed (call ``record`` after each)."""
    generator = Generator(seed, filters)
    for _ in range(count):
        yield generator, generator.step()
