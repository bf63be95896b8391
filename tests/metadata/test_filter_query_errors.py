"""filter_query's errors and its SQL: malformed queries, positions, injection attempts.

The invalid queries and their messages are MLMD's own table (filter_query_ast_resolver_test.cc,
kInValidTestQueriesWithErrors); test_filter_query.py checks each against the real ml-metadata.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boardd.metadata import metadata_store
from boardd.metadata.errors import InvalidArgumentError
from boardd.metadata.filter_query import compile_filter
from boardd.metadata.proto import metadata_store_pb2 as pb
from boardd.metadata.queries import NodeName

ALL: tuple[NodeName, ...] = ("artifact", "execution", "context")
ARTIFACT: tuple[NodeName, ...] = ("artifact",)
EXECUTION: tuple[NodeName, ...] = ("execution",)
CONTEXT: tuple[NodeName, ...] = ("context",)
NOT_ARTIFACT: tuple[NodeName, ...] = ("execution", "context")
NOT_CONTEXT: tuple[NodeName, ...] = ("artifact", "execution")

# (query, part of MLMD's message, kinds): MLMD's kInValidTestQueriesWithErrors.
MLMD_INVALID: list[tuple[str, str, tuple[NodeName, ...]]] = [
    ("", "Syntax error", ALL),
    ("a == 'a'", "Syntax error", ALL),
    ("a", "Unrecognized name", ALL),
    ("a = 'a'", "Unrecognized name", ALL),
    ("'a'", "not a valid boolean expression", ALL),
    ("type_id", "not a valid boolean expression", ALL),
    ("id = 'a'", "No matching signature for operator = for argument types", ALL),
    ("type_id = 'a'", "No matching signature for operator = for argument types", ALL),
    ("type = 1", "No matching signature for operator = for argument types", ALL),
    ("uri = 1", "No matching signature for operator = for argument types", ARTIFACT),
    ("uri = 1", "Unrecognized name", NOT_ARTIFACT),
    ("create_time_since_epoch = 'a'", "No matching signature for operator =", ALL),
    ("create_time_since_epoch = a", "Unrecognized name", ALL),
    ("last_update_time_since_epoch = 'a'", "No matching signature for operator =", ALL),
    ("last_update_time_since_epoch = a", "Unrecognized name", ALL),
    ("name = 1", "No matching signature for operator = for argument types", ALL),
    ("name = a", "Unrecognized name", ALL),
    ("external_id = 1", "No matching signature for operator = for argument types", ALL),
    ("external_id = a", "Unrecognized name", ALL),
    ("contexts", "Unrecognized name", ALL),
    ("contexts_0", "Unrecognized name", ALL),
    ("contexts_0.foo", "Field name foo does not exist", NOT_CONTEXT),
    ("contexts_0.id.", "Unexpected end of expression", NOT_CONTEXT),
    ("contexts_0.id.bar", "Cannot access field bar", NOT_CONTEXT),
    ("artifacts", "Unrecognized name", ALL),
    ("artifacts_0", "Unrecognized name", ALL),
    ("artifacts_0.foo", "Field name foo does not exist", CONTEXT),
    ("artifacts_0.id.", "Unexpected end of expression", CONTEXT),
    ("artifacts_0.id.bar", "Cannot access field bar", CONTEXT),
    ("executions", "Unrecognized name", ALL),
    ("executions_0", "Unrecognized name", ALL),
    ("executions_0.foo", "Field name foo does not exist", CONTEXT),
    ("executions_0.id.", "Unexpected end of expression", CONTEXT),
    ("executions_0.id.bar", "Cannot access field bar", CONTEXT),
    ("properties", "Unrecognized name", ALL),
    ("properties.foo", "Unrecognized name", ALL),
    ("properties.bar.", "Unexpected end of expression", ALL),
    ("properties.baz.int", "Field name int does not exist", ALL),
    ("properties.0:b.int_value = 1", "Syntax error", ALL),
    ("custom_properties", "Unrecognized name", ALL),
    ("custom_properties.foo", "Unrecognized name", ALL),
    ("custom_properties.bar.", "Unexpected end of expression", ALL),
    ("custom_properties.baz.string", "Field name string does not exist", ALL),
    ("custom_properties.0:b.string_value", "Syntax error", ALL),
    ("child_contexts", "Unrecognized name", CONTEXT),
    ("child_contexts_0", "Unrecognized name", CONTEXT),
    ("child_contexts_0.foo", "Field name foo does not exist", CONTEXT),
    ("child_contexts_0.id.", "Unexpected end of expression", CONTEXT),
    ("child_contexts_0.id.bar", "Cannot access field bar", CONTEXT),
    ("parent_contexts", "Unrecognized name", CONTEXT),
    ("parent_contexts_0", "Unrecognized name", CONTEXT),
    ("parent_contexts_0.foo", "Field name foo does not exist", CONTEXT),
    ("parent_contexts_0.id.", "Unexpected end of expression", CONTEXT),
    ("parent_contexts_0.id.bar", "Cannot access field bar", CONTEXT),
    ("state", "not a valid boolean expression", ARTIFACT),
    ("state = 'LIVE'", "No matching signature for operator = for argument types", ARTIFACT),
    ("state = 1", "Unsupported enum value specified", ARTIFACT),
    ("last_known_state", "not a valid boolean expression", EXECUTION),
    ("last_known_state = 'RUNNING'", "No matching signature for operator", EXECUTION),
    ("last_known_state = 1", "Unsupported enum value specified", EXECUTION),
    ("state = RUNNING", "Unsupported enum value specified", ARTIFACT),
    ("last_known_state = LIVE", "Unsupported enum value specified", EXECUTION),
    ("last_known_state IN ()", "Syntax error", EXECUTION),
    ("last_known_state NOT IN (PENDING)", "Unsupported enum value specified", EXECUTION),
    ("events_0.field_1 = '1'", "Field name field_1 does not exist", NOT_CONTEXT),
    ("events", "Unrecognized name", NOT_CONTEXT),
    ("events_0.execution_id.", "Unexpected end of expression", NOT_CONTEXT),
    (
        "events_0.type = SOME_ENUM",
        "Unsupported enum value specified in the query: SOME_ENUM",
        NOT_CONTEXT,
    ),
    (
        "events_0.type IN (SOME_ENUM)",
        "Unsupported enum value specified in the query: SOME_ENUM",
        NOT_CONTEXT,
    ),
    ("events_0.artifact_id = 1", "Field name artifact_id does not exist", ARTIFACT),
    ("events_0.execution_id = 1", "Field name execution_id does not exist", EXECUTION),
    ("events_0.artifact_id = 1", "Unrecognized name", CONTEXT),
    ("events_0.execution_id = 1", "Unrecognized name", CONTEXT),
]


@pytest.mark.parametrize(
    ("kind", "query", "expected"),
    [(kind, q, e) for q, e, kinds in MLMD_INVALID for kind in kinds],
)
def test_mlmd_invalid_queries_raise_its_message(kind: NodeName, query: str, expected: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        compile_filter(kind, query, "n")
    assert expected in caught.value.message
    assert caught.value.message.startswith("Invalid `filter_query`: ")


@pytest.mark.parametrize(
    ("query", "position", "token"),
    [
        ("id = 1 AND nme = 'a'", "1:12", "nme"),
        ("id = 1 AND\n  name = 2", "2:8", "="),
        ("id = 1 AND\n  (name = 'a' OR uri == 'b')", "2:23", "="),
        ("state = LIVE OR state IN (LIVE, GONE)", "1:33", "GONE"),
        ("contexts_a.nmae = 'x'", "1:12", "nmae"),
        ("id = 1 AND AND", "1:12", "AND"),
        ("name = 'never closed", "1:8", "'never closed"),
        ("id = 1 ; DROP TABLE Artifact", "1:8", ";"),
        ("properties.p.int_value = 1 AND (", "1:33", ""),
    ],
)
def test_errors_point_at_the_offending_token(query: str, position: str, token: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        compile_filter("artifact", query, "n")
    message = caught.value.message
    assert f"[at {position}]" in message
    assert token in message


def test_enum_in_without_parentheses_is_rejected() -> None:
    with pytest.raises(InvalidArgumentError, match="Syntax error"):
        compile_filter("artifact", "state IN RUNNING", "n")


def test_a_node_kind_or_alias_outside_the_contract_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="kind"):
        compile_filter("event", "id = 1", "n")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="alias"):
        compile_filter("artifact", "id = 1", "n; DROP TABLE Artifact")


# Every word the translation may write: its own tables, columns, aliases and SQL keywords.
OUR_WORDS = {
    *("Artifact", "Execution", "Context", "Type", "Event", "Attribution", "Association"),
    *("ArtifactProperty", "ExecutionProperty", "ContextProperty", "ParentContext"),
    *("id", "type_id", "name", "uri", "state", "last_known_state", "external_id", "type"),
    *("create_time_since_epoch", "last_update_time_since_epoch", "milliseconds_since_epoch"),
    *("artifact_id", "execution_id", "context_id", "parent_context_id", "is_custom_property"),
    *("int_value", "double_value", "string_value", "bool_value", "type_kind"),
    *("SELECT", "FROM", "WHERE", "JOIN", "ON", "AS", "EXISTS", "AND", "OR", "NOT", "IN"),
    *("LIKE", "IS", "NULL", "TRUE", "FALSE", "BETWEEN", "CAST", "REAL", "n"),
    *("LOWER", "UPPER", "LENGTH", "ABS", "TRIM", "LTRIM", "RTRIM", "SUBSTR", "REPLACE"),
    *("COALESCE", "IFNULL"),
}


def assert_only_our_words(sql: str) -> None:
    assert re.fullmatch(r"[A-Za-z0-9_ .(),=!<>?*/+-]*", sql), sql
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql))
    assert words <= OUR_WORDS | {w for w in words if re.fullmatch(r"fq\d+", w)}, sql


hostile = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="`\\\n"), min_size=1)


@settings(max_examples=300, deadline=None)
@given(value=st.text(), name=hostile, kind=st.sampled_from(ALL))
def test_values_and_property_names_are_parameters_never_sql(
    value: str, name: str, kind: NodeName
) -> None:
    literal = "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"
    query = (
        f"name = {literal} OR properties.`{name}`.string_value LIKE {literal} "
        f"OR custom_properties.`{name}`.string_value IN ({literal}, 'x')"
    )
    sql, params = compile_filter(kind, query, "n")
    assert_only_our_words(sql)
    assert sql.count("?") == len(params)
    assert params == [name, 0, name, 1, value, value, value, "x"]


@pytest.mark.parametrize(
    "query",
    [
        "name = 'x' OR 1=1 --'",
        'name = "x\\" OR 1=1 --"',
        "properties.`x' OR 1=1 --`.int_value = 1",
        'properties.`a" OR "1"="1`.string_value = \'b\'',
        "custom_properties.`p) OR (1=1`.bool_value = TRUE",
    ],
)
def test_injection_attempts_stay_parameters(query: str) -> None:
    sql, params = compile_filter("artifact", query, "n")
    assert_only_our_words(sql)
    assert sql.count("?") == len(params)


@pytest.mark.parametrize(
    "query",
    [
        "contexts_a.name = 'x'' OR ''1''=''1'",
        "uri LIKE '%'; DROP TABLE Artifact; --'",
        "id = 1) OR (1 = 1",
    ],
)
def test_injection_attempts_that_are_not_one_expression_are_rejected(query: str) -> None:
    with pytest.raises(InvalidArgumentError, match="Syntax error"):
        compile_filter("artifact", query, "n")


def test_injection_through_a_real_store_finds_only_what_it_names(tmp_path: Path) -> None:
    """Hostile names and values reach SQLite as data: the right rows, the tables intact."""
    config = pb.ConnectionConfig()
    config.sqlite.filename_uri = str(tmp_path / "lineage.sqlite")
    config.sqlite.connection_mode = pb.SqliteMetadataSourceConfig.READWRITE_OPENCREATE
    store = metadata_store.MetadataStore(config)
    try:
        type_id = store.put_artifact_type(pb.ArtifactType(name="T"))
        hostile = 'x" OR "1"="1\'); DROP TABLE Artifact; --'
        marked = pb.Artifact(type_id=type_id, uri=hostile, name="marked")
        marked.custom_properties[hostile].string_value = hostile
        plain = pb.Artifact(type_id=type_id, uri="plain", name="plain")
        plain.custom_properties["x"].string_value = "x"
        marked_id, plain_id = store.put_artifacts([marked, plain])
        escaped = hostile.replace("\\", "\\\\").replace("'", "\\'")
        for query, expected in [
            (f"uri = '{escaped}'", [marked_id]),
            (f"custom_properties.`{hostile}`.string_value = '{escaped}'", [marked_id]),
            (f"custom_properties.`{hostile}`.string_value != '{escaped}'", []),
            ("custom_properties.x.string_value = 'x'", [plain_id]),
            (f"name = 'plain' OR uri LIKE '{escaped}'", [marked_id, plain_id]),
        ]:
            found = store.get_artifacts(list_options=metadata_store.ListOptions(filter_query=query))
            assert [a.id for a in found] == expected, query
        assert [a.id for a in store.get_artifacts()] == [marked_id, plain_id]
    finally:
        store.close()
