"""get_lineage_subgraph on boardd and MLMD: the same graph (node and edge sets; MLMD's order
within each list comes from hash sets) for each direction, hop count, ending-node filter and
field mask, and the same errors. The starting and ending nodes are filter_queries, so these
tests run boardd.metadata.filter_query (helper QUERY's) too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from boardd.metadata import metadata_store
from boardd.metadata.proto import metadata_store_pb2 as pb
from tests.metadata.conftest import fake_config
from tests.metadata.oracle import MlmdOracle
from tests.metadata.parity import Both

Options = pb.LineageSubgraphQueryOptions


@pytest.fixture(scope="module")
def graph() -> Iterator[Both]:
    """A pipeline on both stores: data → transform → features → train (×2) → models → eval."""
    store = metadata_store.MetadataStore(fake_config())
    with MlmdOracle() as oracle:
        both = Both(store, oracle)
        data = both.call("put_artifact_type", pb.ArtifactType(name="Data"))
        model = both.call("put_artifact_type", pb.ArtifactType(name="Model"))
        step = both.call("put_execution_type", pb.ExecutionType(name="Step"))
        exp = both.call("put_context_type", pb.ContextType(name="Exp"))

        def run(name: str, inputs: list[int], outputs: list[tuple[int, str]]) -> list[int]:
            pairs: list[tuple[Any, ...]] = [
                (pb.Artifact(id=i), pb.Event(type=pb.Event.INPUT)) for i in inputs
            ]
            pairs += [
                (pb.Artifact(type_id=t, uri=uri, name=uri), pb.Event(type=pb.Event.OUTPUT))
                for t, uri in outputs
            ]
            _, ids, _ = both.call(
                "put_execution",
                pb.Execution(type_id=step, name=name),
                pairs,
                [pb.Context(type_id=exp, name=f"exp-{name[0]}")],
                reuse_context_if_already_exist=True,
            )
            return ids[len(inputs) :]

        [raw] = run("ingest", [], [(data, "raw")])
        [features, labels] = run("transform", [raw], [(data, "features"), (data, "labels")])
        [m1] = run("train1", [features, labels], [(model, "model1")])
        [m2] = run("train2", [features], [(model, "model2")])
        run("evaluate", [m1, m2, labels], [(data, "report")])
        yield both
    store.close()


CASES: list[tuple[str, Options, list[str] | None]] = []


def _case(label: str, start: str, field_mask: list[str] | None = None, **kwargs: Any) -> None:
    options = Options(**kwargs)
    if start.startswith("execution:"):
        options.starting_executions.filter_query = start.removeprefix("execution:")
    else:
        options.starting_artifacts.filter_query = start
    CASES.append((label, options, field_mask))


_case("model upstream, all hops", "name = 'model1'", direction=Options.UPSTREAM)
_case("model upstream, 2 hops", "name = 'model1'", direction=Options.UPSTREAM, max_num_hops=2)
_case("raw downstream", "name = 'raw'", direction=Options.DOWNSTREAM, max_num_hops=10)
_case("features both ways, 1 hop", "name = 'features'", direction=Options.BIDIRECTIONAL,
      max_num_hops=1)  # fmt: skip
_case("features both ways, all", "name = 'features'", direction=Options.BIDIRECTIONAL)
_case("no direction", "name = 'labels'", max_num_hops=3)
_case("zero hops", "name = 'labels'", max_num_hops=0)
# (Not by uri: put_execution's input pairs carry bare artifacts, and an update without a uri
# clears it, in MLMD as here.)
_case("several starts", "name LIKE 'model%'", direction=Options.UPSTREAM, max_num_hops=3)
_case("from executions", "execution:name = 'train2'", direction=Options.BIDIRECTIONAL,
      max_num_hops=2)  # fmt: skip
_case(
    "ending artifacts kept",
    "name = 'report'",
    direction=Options.UPSTREAM,
    ending_artifacts=Options.EndingNodes(
        filter_query="name = 'features'", include_ending_nodes=True
    ),
)
_case(
    "ending artifacts dropped",
    "name = 'report'",
    direction=Options.UPSTREAM,
    ending_artifacts=Options.EndingNodes(filter_query="name = 'features'"),
)
_case(
    "ending executions",
    "name = 'raw'",
    direction=Options.DOWNSTREAM,
    ending_executions=Options.EndingNodes(
        filter_query="name = 'train1'", include_ending_nodes=True
    ),
)
_case("mask: artifacts and events", "name = 'model2'", ["artifacts", "events"],
      direction=Options.UPSTREAM)  # fmt: skip
_case("mask: types only", "name = 'model2'", ["artifact_types", "execution_types"],
      direction=Options.UPSTREAM)  # fmt: skip
_case("mask: contexts and links", "name = 'labels'",
      ["contexts", "context_types", "attributions", "associations"], max_num_hops=2)  # fmt: skip
_case("no start matches", "name = 'nothing'")


@pytest.mark.parametrize(("label", "options", "mask"), CASES, ids=[c[0] for c in CASES])
def test_same_subgraph_as_mlmd(
    graph: Both, label: str, options: Options, mask: list[str] | None
) -> None:
    kwargs = {"field_mask_paths": mask} if mask else {}
    outcome, result = graph.outcome("get_lineage_subgraph", options, **kwargs)
    assert outcome == ("NotFoundError" if label == "no start matches" else "ok"), label
    if outcome == "ok" and mask is None:
        assert result.artifacts, label


def test_same_errors_as_mlmd(graph: Both) -> None:
    no_start = Options(max_num_hops=1)
    assert graph.outcome("get_lineage_subgraph", no_start)[0] == "InvalidArgumentError"
    empty = Options()
    empty.starting_artifacts.SetInParent()
    assert graph.outcome("get_lineage_subgraph", empty)[0] == "InvalidArgumentError"
    negative = Options(max_num_hops=-1)
    negative.starting_artifacts.filter_query = "name = 'raw'"
    assert graph.outcome("get_lineage_subgraph", negative)[0] == "InvalidArgumentError"
