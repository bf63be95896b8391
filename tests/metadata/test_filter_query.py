"""filter_query against the real ml-metadata: the same records, the same queries, the same ids.

One data set is written through the public API into boardd's store and into MLMD's (the
oracle harness); every query of the table runs on both, for each node kind it names, and the
listed ids must be equal and in the same order; a query MLMD refuses must raise
InvalidArgumentError in both. The queries come from MLMD's documentation (the
ListOperationOptions.filter_query comment in metadata_store.proto, the seed's walkthrough), its
C++ tests (filter_query_ast_resolver_test.cc's valid and invalid tables,
filter_query_builder_test.cc) and its Python tests (metadata_store_test.py), plus the corners
of its semantics (a missing neighbour drops a node even under OR; ``!=`` on an enum keeps
NULLs; LIKE is case-insensitive as in SQLite).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from boardd.metadata import errors, filter_query, metadata_store
from boardd.metadata.proto import metadata_store_pb2 as pb
from boardd.metadata.queries import NodeName
from tests.metadata.oracle import MlmdOracle

ALL: tuple[NodeName, ...] = ("artifact", "execution", "context")
A: tuple[NodeName, ...] = ("artifact",)
E: tuple[NodeName, ...] = ("execution",)
C: tuple[NodeName, ...] = ("context",)
AE: tuple[NodeName, ...] = ("artifact", "execution")

_GETTERS = {"artifact": "get_artifacts", "execution": "get_executions", "context": "get_contexts"}


class Both:
    """One call on boardd's store and on MLMD's, asserting they answer the same."""

    def __init__(self, ours: metadata_store.MetadataStore, theirs: MlmdOracle) -> None:
        self.ours = ours
        self.theirs = theirs

    def __call__(self, name: str, *args: Any) -> Any:
        mine = getattr(self.ours, name)(*args)
        other = self.theirs.call(name, *args)
        assert mine == other, name
        return mine


def _artifact(type_id: int, **fields: Any) -> pb.Artifact:
    props = fields.pop("props", {})
    custom = fields.pop("custom", {})
    artifact = pb.Artifact(type_id=type_id, **fields)
    _set_values(artifact.properties, props)
    _set_values(artifact.custom_properties, custom)
    return artifact


def _set_values(target: Any, values: dict[str, object]) -> None:
    for key, value in values.items():
        if isinstance(value, bool):
            target[key].bool_value = value
        elif isinstance(value, int):
            target[key].int_value = value
        elif isinstance(value, float):
            target[key].double_value = value
        else:
            target[key].string_value = str(value)


def populate(both: Both) -> None:
    """A small world touching every neighbour MLMD's filter can name."""
    dataset = pb.ArtifactType(name="DataSet")
    dataset.properties["day"] = pb.INT
    dataset.properties["split"] = pb.STRING
    dataset.properties["score"] = pb.DOUBLE
    dataset_id = both("put_artifact_type", dataset)
    model = pb.ArtifactType(name="Model")
    model.properties["version"] = pb.INT
    model.properties["my key"] = pb.STRING
    model_id = both("put_artifact_type", model)
    trainer = pb.ExecutionType(name="Trainer")
    trainer.properties["state"] = pb.STRING
    trainer.properties["epochs"] = pb.INT
    trainer_id = both("put_execution_type", trainer)
    evaluator_id = both("put_execution_type", pb.ExecutionType(name="Evaluator"))
    experiment = pb.ContextType(name="Experiment")
    experiment.properties["owner"] = pb.STRING
    experiment_id = both("put_context_type", experiment)
    pipeline_id = both("put_context_type", pb.ContextType(name="Pipeline"))

    live, pending, deleted = pb.Artifact.LIVE, pb.Artifact.PENDING, pb.Artifact.DELETED
    with_struct = _artifact(
        model_id, name="m3", state=pb.Artifact.MARKED_FOR_DELETION, custom={"p": 5}
    )
    with_struct.custom_properties["cfg"].struct_value.fields["lr"].number_value = 0.1
    both(
        "put_artifacts",
        [
            _artifact(
                dataset_id,
                uri="gs://bucket/data/day0",
                name="d0",
                state=live,
                props={"day": 0, "split": "train", "score": 0.5},
            ),
            _artifact(
                dataset_id,
                uri="gs://bucket/data/day1",
                name="d1",
                state=pending,
                props={"day": 1, "split": "Train", "score": 0.95},
                custom={"note": 'it\'s "quoted"', "flag": True},
            ),
            _artifact(
                dataset_id,
                uri="/local/data/day2",
                name="d2",
                state=deleted,
                props={"day": 2, "split": "eval"},
                custom={"flag": False},
            ),
            _artifact(
                dataset_id, uri="/local/data/x", props={"split": "test"}, custom={"p": 20, "0:b": 1}
            ),
            _artifact(
                model_id,
                uri="path/to/model/file",
                name="m1",
                state=live,
                external_id="ext-m1",
                props={"version": 1, "my key": "MNIST-v1"},
                custom={"p": 21, "accuracy": 0.98},
            ),
            _artifact(
                model_id,
                uri="path/to/model/file2",
                name="m2",
                props={"version": 2},
                custom={"accuracy": 0.9, "0 b": "x"},
            ),
            with_struct,
        ],
    )
    run = pb.Execution(type_id=trainer_id, name="run1", last_known_state=pb.Execution.RUNNING)
    run.properties["state"].string_value = "RUNNING"
    run.properties["epochs"].int_value = 10
    done = pb.Execution(
        type_id=trainer_id,
        name="run2",
        last_known_state=pb.Execution.COMPLETE,
        external_id="ext-run2",
    )
    done.properties["epochs"].int_value = 3
    done.custom_properties["lr"].double_value = 0.01
    failed = pb.Execution(type_id=trainer_id, last_known_state=pb.Execution.FAILED)
    failed.custom_properties["lr"].double_value = 0.1
    evaluation = pb.Execution(type_id=evaluator_id, name="eval1")
    both("put_executions", [run, done, failed, evaluation])
    exp1 = pb.Context(type_id=experiment_id, name="exp1")
    exp1.properties["owner"].string_value = "ada"
    exp2 = pb.Context(type_id=experiment_id, name="exp2", external_id="ext-exp2")
    exp2.custom_properties["year"].int_value = 2024
    exp3 = pb.Context(type_id=experiment_id, name="exp3")
    pipe = pb.Context(type_id=pipeline_id, name="pipe1")
    both("put_contexts", [exp1, exp2, exp3, pipe])

    def event(artifact: int, execution: int, kind: int) -> pb.Event:
        return pb.Event(artifact_id=artifact, execution_id=execution, type=kind)

    both(
        "put_events",
        [
            event(1, 1, pb.Event.INPUT),
            event(2, 1, pb.Event.DECLARED_INPUT),
            event(5, 1, pb.Event.OUTPUT),
            event(1, 2, pb.Event.INPUT),
            event(6, 2, pb.Event.DECLARED_OUTPUT),
            event(5, 4, pb.Event.INPUT),
            event(3, 3, pb.Event.INTERNAL_INPUT),
        ],
    )
    both(
        "put_attributions_and_associations",
        [
            pb.Attribution(artifact_id=1, context_id=1),
            pb.Attribution(artifact_id=2, context_id=1),
            pb.Attribution(artifact_id=2, context_id=2),
            pb.Attribution(artifact_id=5, context_id=2),
            pb.Attribution(artifact_id=5, context_id=4),
            pb.Attribution(artifact_id=6, context_id=3),
        ],
        [
            pb.Association(execution_id=1, context_id=1),
            pb.Association(execution_id=2, context_id=2),
            pb.Association(execution_id=2, context_id=4),
            pb.Association(execution_id=4, context_id=3),
        ],
    )
    both(
        "put_parent_contexts",
        [
            pb.ParentContext(child_id=1, parent_id=4),
            pb.ParentContext(child_id=2, parent_id=4),
            pb.ParentContext(child_id=3, parent_id=2),
        ],
    )


@pytest.fixture(scope="module")
def stores() -> Iterator[tuple[metadata_store.MetadataStore, MlmdOracle]]:
    config = pb.ConnectionConfig()
    config.fake_database.SetInParent()
    ours = metadata_store.MetadataStore(config)
    with MlmdOracle() as theirs:
        try:
            populate(Both(ours, theirs))
            yield ours, theirs
        finally:
            ours.close()


# (query, node kinds it runs on): every one must give MLMD's ids, in MLMD's order.
VALID: list[tuple[str, tuple[NodeName, ...]]] = [
    # ListOperationOptions.filter_query's documented examples
    ("id != 1", ALL),
    ("id IN (1, 3)", ALL),
    ("type_id = 11", ALL),
    ("type = 'DataSet'", A),
    ("type = 'Trainer'", E),
    ("type = 'Experiment'", C),
    ("name = 'm1'", A),
    ("type = 'Model' AND name LIKE 'm%'", A),
    ("external_id = 'ext-m1'", A),
    ("external_id = 'ext-run2'", E),
    ("external_id = 'ext-exp2'", C),
    ("NOT(create_time_since_epoch < 1 OR last_update_time_since_epoch < 1)", ALL),
    ("uri = 'path/to/model/file'", A),
    ("uri LIKE 'gs://%'", A),
    ("uri IS NOT NULL", A),
    ("uri IS NULL", A),
    ("state = LIVE", A),
    ("state IS NULL", A),
    ("state IN (PENDING, LIVE)", A),
    ("last_known_state = RUNNING", E),
    ("last_known_state != RUNNING", E),
    ("last_known_state NOT IN (FAILED, CANCELED)", E),
    ("contexts_a.id = 2", AE),
    ("contexts_a.type = 'Experiment'", AE),
    ("contexts_a.name = 'exp1'", AE),
    ("contexts_a.create_time_since_epoch > 0", AE),
    ("contexts_a.last_update_time_since_epoch > 0", AE),
    ("contexts_a.name = 'exp1' AND contexts_b.name = 'exp2'", AE),
    ("artifacts_a.id = 5", C),
    ("artifacts_a.type = 'DataSet'", C),
    ("artifacts_a.name = 'd1'", C),
    ("artifacts_a.uri = 'path/to/model/file'", C),
    ("artifacts_a.state = LIVE", C),
    ("artifacts_a.state IN (PENDING, LIVE)", C),
    ("artifacts_a.create_time_since_epoch > 0", C),
    ("artifacts_a.name = 'd0' AND artifacts_b.name = 'd1'", C),
    ("executions_a.id = 2", C),
    ("executions_a.type = 'Trainer'", C),
    ("executions_a.name = 'run1'", C),
    ("executions_a.last_known_state = RUNNING", C),
    ("executions_a.last_known_state IN (NEW, RUNNING)", C),
    ("executions_a.last_update_time_since_epoch > 0", C),
    ("executions_a.name = 'run1' AND executions_b.name = 'run2'", C),
    ("properties.score.double_value > 0.95", ALL),
    ("properties.score.double_value >= 0.95", A),
    ("properties.`my key`.string_value = 'MNIST-v1'", A),
    ("custom_properties.`0:b`.int_value = 1", A),
    ("custom_properties.`0 b`.string_value != '1'", A),
    ("custom_properties.flag.bool_value = true", A),
    ("custom_properties.flag.bool_value = false", A),
    ("custom_properties.flag.bool_value", A),
    ("NOT custom_properties.flag.bool_value", A),
    ("custom_properties.flag.bool_value IS TRUE", A),
    (
        "type = 'DataSet' AND (contexts_a.type = 'Experiment' AND contexts_a.name = 'exp1') "
        "AND (properties.day.int_value = 1 OR custom_properties.p.int_value = 1)",
        A,
    ),
    ("parent_contexts_a.id = 4", C),
    ("child_contexts_a.type = 'Experiment'", C),
    ("parent_contexts_a.name = 'pipe1'", C),
    ("parent_contexts_a.name = 'pipe1' AND child_contexts_b.name = 'exp3'", C),
    ("events_0.execution_id = 1", A),
    ("events_0.type = INPUT", AE),
    ("events_0.milliseconds_since_epoch > 0", AE),
    ("events_0.artifact_id = 1", E),
    ("events_0.type IN (INPUT, INTERNAL_INPUT)", AE),
    ("events_0.type != INPUT", AE),
    ("events_0.type NOT IN (INPUT)", AE),
    ("events_0.type = INPUT AND events_1.type = OUTPUT", E),
    ("events_0.type = INPUT AND events_0.type = OUTPUT", E),
    ("uri = 'path/to/model/file' AND events_0.type = INPUT", A),
    # the seed's walkthrough
    ("uri LIKE '%/data' AND properties.day.int_value > 0", A),
    ("type = 'Trainer' AND properties.state.string_value IS NOT NULL", E),
    ("contexts_a.type = 'Experiment' AND contexts_a.name = 'exp1'", AE),
    ("contexts_a.id = 1", AE),
    # metadata_store_test.py
    ("custom_properties.p.int_value < 21 AND name LIKE 'm%'", A),
    ("contexts_a.name='exp2'", AE),
    ("name = 'run1'", E),
    # filter_query_ast_resolver_test.cc's valid table (the ones with data to match)
    ("type_id > 11", ALL),
    ("type_id + 1 > 12", ALL),
    ("type IS NOT NULL", ALL),
    ("uri like 'PATH%'", A),
    ("create_time_since_epoch + 1 > 1", ALL),
    ("NOT(type_id = 10)", ALL),
    ("NOT(type_id = 10) AND (contexts_foo.type = 'Pipeline' OR uri like '%file')", A),
    ("properties.day.int_value > 0 OR custom_properties.p.int_value > 20", A),
    ("custom_properties.accuracy.double_value > 0.95", A),
    ("custom_properties.lr.double_value > 0.05", E),
    ("custom_properties.year.int_value != 0", C),
    ("properties.owner.string_value = 'ada'", C),
    (
        "type_id = 10 OR type = 'DataSet' AND contexts_0.name = 'exp1' AND "
        "(properties.day.int_value > 0 OR custom_properties.p.int_value > 1) AND "
        "custom_properties.flag.bool_value IS NOT NULL",
        AE,
    ),
    ("state = PENDING AND state = LIVE", A),
    ("state=PENDING", A),
    ("state != PENDING", A),
    ("state NOT IN (DELETED)", A),
    ("state IN (PENDING, LIVE, DELETED)", A),
    ("last_known_state = CANCELED", E),
    ("last_known_state!=COMPLETE", E),
    ("last_known_state IN (COMPLETE, RUNNING)", E),
    ("last_known_state IS NOT NULL", E),
    ("events_0.type=OUTPUT", E),
    ("events_0.type IN (OUTPUT, DECLARED_OUTPUT)", AE),
    # filter_query_builder_test.cc
    ("contexts_0.id = 1 AND contexts_0.name LIKE 'exp%'", AE),
    ("contexts_0.id = 1 AND contexts_1.id != 2", AE),
    ("(type_id = 12 OR type != 'Model') AND contexts_0.id = 2", AE),
    ("properties.day.int_value = 1 OR properties.day.string_value = '1' ", A),
    ("properties.version.int_value > 1 OR custom_properties.version.int_value > 1", A),
    ("state = LIVE AND state = DELETED", A),
    ("last_known_state = NEW OR last_known_state = COMPLETE", E),
    ("artifacts_0.uri like 'gs%'", C),
    ("executions_0.last_known_state = COMPLETE", C),
    # semantics: a mentioned neighbour must exist (MLMD's INNER JOIN), even under OR
    ("properties.day.int_value IS NULL", A),
    ("properties.day.int_value = 1 OR name = 'm1'", A),
    ("properties.split.string_value IS NOT NULL OR name = 'm1'", A),
    ("NOT (contexts_a.name = 'exp1')", AE),
    ("contexts_a.name != 'exp1'", AE),
    ("properties.day.string_value IS NULL", A),
    ("custom_properties.p.int_value > 1 AND NOT custom_properties.p.int_value = 21", A),
    # ZetaSQL's expression language as MLMD runs it on SQLite
    ("name LIKE 'D%'", A),
    ("name NOT LIKE 'd%'", A),
    ("name LIKE '_1'", A),
    ("id BETWEEN 2 AND 4", ALL),
    ("id NOT BETWEEN 2 AND 4", ALL),
    ("id NOT IN (1, 2)", ALL),
    ("id IN (1, 2.5)", ALL),
    ("id / 2 = 1.5", ALL),
    ("id * 2 = 4", ALL),
    ("-id < -3", ALL),
    ("id = 0x03", ALL),
    ("ID = 1", ALL),
    ("Name = 'm1'", A),
    ("`name` = 'run1'", E),
    ("contexts_a.NAME = 'exp1'", AE),
    ("name = r'd0'", A),
    ('name = """d1"""', A),
    ("name = 'd\\x30'", A),
    ("id = 1 -- a comment", ALL),
    ("id = 1 /* a comment */ OR id = 2", ALL),
    ("id = 1 OR id = 2 AND name = 'd2'", ALL),
    ("(id = 1 OR id = 2) AND name = 'd2'", ALL),
    ("NOT id = 1", ALL),
    ("TRUE", ALL),
    ("FALSE", ALL),
    ("NULL AND TRUE", ALL),
    ("(id = 1) IS TRUE", ALL),
    ("(name = 'x') IS NOT FALSE", ALL),
    ("id IN (NULL)", ALL),
    ("state > 1", A),
    ("state = (2)", A),
    ("name IS NULL", ALL),
    ("LOWER(name) = 'd1'", A),
    ("UPPER(name) = 'D1'", A),
    ("LENGTH(uri) > 20", A),
    ("ABS(-id) = 2", ALL),
    ("COALESCE(name, 'none') = 'none'", ALL),
    ("IFNULL(name, 'none') = 'none'", ALL),
    ("SUBSTR(uri, 1, 5) = 'gs://'", A),
    ("name BETWEEN 'd' AND 'd2'", A),
    ("name < 'e'", ALL),
    ("properties.day.int_value > 0.5", A),
    ("properties.score.double_value > 0", A),
    # a struct is kept as MLMD keeps it (a prefixed string)
    ("custom_properties.cfg.string_value IS NOT NULL", A),
    ("custom_properties.cfg.string_value LIKE 'mlmd-struct%'", A),
    ("custom_properties.cfg.int_value IS NULL", A),
]

# (query, node kinds): MLMD answers InvalidArgumentError, and so must boardd.
INVALID: list[tuple[str, tuple[NodeName, ...]]] = [
    ("", ALL[:0]),  # an empty filter is no filter (see test_empty_filter_lists_all)
    (" ", ALL),
    ("a == 'a'", ALL),
    ("a", ALL),
    ("'a'", ALL),
    ("type_id", ALL),
    ("id = 'a'", ALL),
    ("type = 1", ALL),
    ("uri = 1", ALL),
    ("name = a", ALL),
    ("contexts_0.foo = 1", AE),
    ("contexts_0.name = 'x'", C),
    ("contexts_0.id.bar", AE),
    ("artifacts_0.id = 1", AE),
    ("properties.foo", ALL),
    ("properties.baz.int = 1", ALL),
    ("properties.0:b.int_value = 1", ALL),
    ("properties.x.INT_VALUE = 1", ALL),
    ("parent_contexts_0.id = 1", AE),
    ("state = 'LIVE'", A),
    ("state = 1", A),
    ("state = 0x02", A),
    ("state = live", A),
    ("state = RUNNING", A),
    ("state IN (NEW)", A),
    ("STATE = LIVE", A),
    ("state <> LIVE", A),
    ("state IN(LIVE)", A),
    ("state = LIVE", E),
    ("last_known_state = LIVE", E),
    ("last_known_state NOT IN (PENDING)", E),
    ("last_known_state IN ()", E),
    ("events_0.type = SOME_ENUM", AE),
    ("events_0.type IN (SOME_ENUM)", AE),
    ("events_0.artifact_id = 1", A),
    ("events_0.execution_id = 1", E),
    ("events_0.type = 1", AE),
    ("id = NULL", ALL),
    ("NOT NULL", ALL),
    ("name LIKE NULL", ALL),
    ("NULL", ALL),
    ("id AND TRUE", ALL),
    ("id IS TRUE", ALL),
    ("id IN (1, 'a')", ALL),
    ("id BETWEEN 'a' AND 'b'", ALL),
    ("id IN ()", ALL),
    ("id = 1 = TRUE", ALL),
    ("name = b'd0'", ALL),
    ("name = 'a' 'b'", ALL),
    ('name = "d0', ALL),
    ("name = '\\q'", ALL),
    ("id = 99999999999999999999", ALL),
    ("id = 1 AND", ALL),
    ("(id = 1", ALL),
    ("id = 1)", ALL),
    ("id = 1; DROP TABLE Artifact", ALL),
    ("NO_SUCH_FUNCTION(id) = 1", ALL),
    ("LOWER(id) = 'a'", ALL),
]


def _ids(store: Any, kind: NodeName, options: metadata_store.ListOptions) -> list[int]:
    return [node.id for node in getattr(store, _GETTERS[kind])(list_options=options)]


def _theirs(oracle: MlmdOracle, kind: NodeName, options: metadata_store.ListOptions) -> Any:
    return [node.id for node in oracle.call(_GETTERS[kind], list_options=options)]


@pytest.mark.parametrize("plan", ["lookup", "check"])
@pytest.mark.parametrize(
    ("kind", "query"), [(kind, query) for query, kinds in VALID for kind in kinds]
)
def test_query_lists_what_mlmd_lists(
    stores: tuple[metadata_store.MetadataStore, MlmdOracle],
    kind: NodeName,
    query: str,
    plan: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both SQL shapes of a neighbour condition (looked up first, or checked row by row)."""
    if plan == "check":  # no neighbour is ever few enough to be looked up first
        monkeypatch.setattr(filter_query, "LOOKUP_CAP", 0)
    ours, theirs = stores
    options = metadata_store.ListOptions(filter_query=query)
    assert _ids(ours, kind, options) == _theirs(theirs, kind, options)


def test_the_table_is_not_vacuous(stores: tuple[metadata_store.MetadataStore, Any]) -> None:
    """Most queries list something and leave something out, so equality says something."""
    ours, _ = stores
    listed = 0
    for query, kinds in VALID:
        for kind in kinds:
            everything = len(_ids(ours, kind, metadata_store.ListOptions()))
            found = len(_ids(ours, kind, metadata_store.ListOptions(filter_query=query)))
            listed += 0 < found < everything
    assert listed > len(VALID) * 0.7


@pytest.mark.parametrize(
    ("kind", "query"), [(kind, query) for query, kinds in INVALID for kind in kinds]
)
def test_query_mlmd_refuses_is_refused(
    stores: tuple[metadata_store.MetadataStore, MlmdOracle], kind: NodeName, query: str
) -> None:
    ours, theirs = stores
    options = metadata_store.ListOptions(filter_query=query)
    with pytest.raises(errors.InvalidArgumentError):
        _theirs(theirs, kind, options)
    with pytest.raises(errors.InvalidArgumentError) as caught:
        _ids(ours, kind, options)
    assert "Invalid `filter_query`" in caught.value.message


@pytest.mark.parametrize("kind", ALL)
def test_empty_filter_lists_all(
    stores: tuple[metadata_store.MetadataStore, MlmdOracle], kind: NodeName
) -> None:
    ours, theirs = stores
    options = metadata_store.ListOptions(filter_query="")
    assert _ids(ours, kind, options) == _theirs(theirs, kind, options)


@pytest.mark.parametrize(
    ("kind", "query", "order_by", "is_asc", "limit"),
    [
        ("artifact", "id > 1", metadata_store.OrderByField.ID, False, 3),
        ("artifact", "contexts_a.type = 'Experiment'", metadata_store.OrderByField.ID, False, 2),
        (
            "artifact",
            "properties.day.int_value >= 0",
            metadata_store.OrderByField.CREATE_TIME,
            True,
            2,
        ),
        ("execution", "events_0.type IN (INPUT, OUTPUT)", metadata_store.OrderByField.ID, False, 1),
        ("context", "parent_contexts_a.name = 'pipe1'", metadata_store.OrderByField.ID, True, 1),
    ],
)
def test_filter_with_order_and_limit(
    stores: tuple[metadata_store.MetadataStore, MlmdOracle],
    kind: NodeName,
    query: str,
    order_by: metadata_store.OrderByField,
    is_asc: bool,
    limit: int,
) -> None:
    ours, theirs = stores
    options = metadata_store.ListOptions(
        filter_query=query, order_by=order_by, is_asc=is_asc, limit=limit
    )
    assert _ids(ours, kind, options) == _theirs(theirs, kind, options)


# Where MLMD is wrong and boardd is not, each with the answer the data set calls for.
# MLMD prints its SQL with ZetaSQL's string syntax ("..." with backslash escapes) and runs it
# on SQLite, where "..." is an identifier first: a literal that names a column compares with
# that column, one holding a double quote is a SQL syntax error; and its artifacts_ join never
# selects external_id although the documentation lists it.
DIFFERENCES: list[tuple[NodeName, str, list[int], str]] = [
    ("artifact", 'custom_properties.note.string_value = "it\'s \\"quoted\\""', [2], "error"),
    ("artifact", "name = 'name'", [], "answer"),
    ("artifact", 'name != "name"', [1, 2, 3, 5, 6, 7], "answer"),
    ("context", "artifacts_a.external_id = 'ext-m1'", [2, 4], "error"),
    ("context", "executions_a.external_id = 'ext-run2'", [2, 4], "error"),
]


@pytest.mark.parametrize(("kind", "query", "expected", "mlmd"), DIFFERENCES)
def test_where_mlmd_is_wrong_boardd_answers(
    stores: tuple[metadata_store.MetadataStore, MlmdOracle],
    kind: NodeName,
    query: str,
    expected: list[int],
    mlmd: str,
) -> None:
    ours, theirs = stores
    options = metadata_store.ListOptions(filter_query=query)
    assert _ids(ours, kind, options) == expected
    if mlmd == "error":
        with pytest.raises(errors.InternalError):
            _theirs(theirs, kind, options)
    else:
        assert _theirs(theirs, kind, options) != expected


@pytest.mark.parametrize(
    ("kind", "query"),
    [
        ("artifact", "uri LIKE 'GS://BUCKET/%'"),
        ("artifact", "uri LIKE 'gs://bucket/data/day_'"),
        ("artifact", "uri LIKE '/local/%' AND name IS NULL"),
        ("artifact", "uri LIKE 'path/to/model/file'"),
        ("artifact", "name IN ('d0', 'm1', 'nope') AND uri LIKE '%'"),
        ("artifact", "(name = 'd1')"),
        ("execution", "Name = 'run2'"),
        ("context", "name IN ('exp1', 'pipe1')"),
    ],
)
def test_lookups_on_the_node_own_columns_list_what_mlmd_lists(
    stores: tuple[metadata_store.MetadataStore, MlmdOracle], kind: NodeName, query: str
) -> None:
    """name = / name IN / uri LIKE 'prefix%' start from an index when few rows match."""
    ours, theirs = stores
    options = metadata_store.ListOptions(filter_query=query)
    assert _ids(ours, kind, options) == _theirs(theirs, kind, options)
