"""The walkthrough's filter_query calls (MLMD's sample flow, steps 3, 4 and 9) on boardd and
MLMD, and the list options (order, direction, limit, paging) over them. They run
boardd.metadata.filter_query (helper QUERY's translation) through CORE's list calls."""

from __future__ import annotations

import time

import boardd.metadata as mlmd
from boardd.metadata.proto import metadata_store_pb2 as pb
from tests.metadata.parity import Both
from tests.metadata.test_walkthrough import run_walkthrough


def test_walkthrough_filter_queries(both: Both) -> None:
    ids = run_walkthrough(both)
    found = both.call(
        "get_artifacts",
        list_options=mlmd.ListOptions(
            filter_query='uri LIKE "%/data" AND properties.day.int_value > 0'
        ),
    )
    assert [a.id for a in found] == [ids["data_artifact"]]
    found = both.call(
        "get_executions",
        list_options=mlmd.ListOptions(
            filter_query='type = "Trainer" AND properties.state.string_value IS NOT NULL'
        ),
    )
    assert [e.id for e in found] == [ids["run"]]
    found = both.call(
        "get_artifacts",
        list_options=mlmd.ListOptions(
            filter_query='contexts_a.type = "Experiment" AND contexts_a.name = "exp1"'
        ),
    )
    assert [a.id for a in found] == [ids["model_artifact"]]
    found = both.call(
        "get_executions",
        list_options=mlmd.ListOptions(filter_query=f"contexts_a.id = {ids['experiment']}"),
    )
    assert [e.id for e in found] == [ids["run"]]


def test_list_options_order_limit_and_pages(both: Both) -> None:
    """210 artifacts (three of MLMD's pages of 100), listed every way, with and without a
    filter, and by context; UPDATE_TIME after updates spaced in time."""
    type_id = both.call("put_artifact_type", pb.ArtifactType(name="Data"))
    context_type = both.call("put_context_type", pb.ContextType(name="Exp"))
    [context] = both.call("put_contexts", [pb.Context(type_id=context_type, name="e")])
    ids = both.call(
        "put_artifacts",
        [pb.Artifact(type_id=type_id, uri=f"/d/{i % 7}", name=f"a{i}") for i in range(210)],
    )
    both.call(
        "put_attributions_and_associations",
        [pb.Attribution(artifact_id=i, context_id=context) for i in ids[::3]],
        [],
    )
    for order_by in (None, mlmd.OrderByField.ID, mlmd.OrderByField.CREATE_TIME):
        for is_asc in (True, False):
            for limit in (None, 1, 100, 101):
                for query in (None, "name LIKE 'a1%'"):
                    options = mlmd.ListOptions(
                        limit=limit, order_by=order_by, is_asc=is_asc, filter_query=query
                    )
                    both.call("get_artifacts", list_options=options)
            options = mlmd.ListOptions(order_by=order_by, is_asc=is_asc, limit=40)
            both.call("get_artifacts_by_context", context, list_options=options)
    # Updates in a known order, each in its own millisecond on both stores.
    for artifact_id in (ids[5], ids[200], ids[0]):
        time.sleep(0.005)  # distinct last_update_time_since_epoch values, not a wait
        both.call("put_artifacts", [pb.Artifact(id=artifact_id, uri="/updated")])
    for is_asc in (True, False):
        options = mlmd.ListOptions(order_by=mlmd.OrderByField.UPDATE_TIME, is_asc=is_asc)
        found = both.call("get_artifacts", list_options=options)
        updated = [a.id for a in found if a.uri == "/updated"]
        assert updated == ([ids[5], ids[200], ids[0]] if is_asc else [ids[0], ids[200], ids[5]])
