"""ML Metadata's ``filter_query`` language, parsed with lark and translated to parameterised SQL.

MLMD (``ml_metadata/query/filter_query_ast_resolver.cc`` and ``filter_query_builder.cc``)
rewrites the query with regexes, analyses it as a ZetaSQL expression and prints SQL that
INNER JOINs every neighbour the query mentions (a context, an event, a property) and keeps a
node when *some* combination of those neighbours satisfies the expression. This module keeps
those semantics with its own parser: a node that lacks a mentioned property or context is never
listed, even under ``OR`` or ``IS NULL`` (MLMD's join drops it), and each neighbour alias
(``contexts_a``, ``events_0``, ``properties.p``) is one joined row shared by all its mentions.

Each group of conditions on neighbours becomes either a lookup (``node.id IN (SELECT …)``,
when few neighbours match: SQLite starts from the property-value or link index) or a row-by-row
check (``EXISTS (…)`` on the neighbour's primary key, when many do, so that a page of an
ordered listing stops early); both give MLMD's answer, and the tests compare both with it.
Likewise ``name = 'x'``, ``name IN (…)`` and ``uri LIKE 'prefix%'`` on the node itself are
looked up through the (type_id, name) and uri indexes when few rows match.

The translation never pastes a value or a name into SQL: literals and property names are ``?``
parameters, and the only identifiers written out are this module's own column and table names.
Errors are :class:`~boardd.metadata.errors.InvalidArgumentError` with MLMD's wording (``Syntax
error``, ``Unrecognized name``, ``No matching signature for operator``, …) followed by the line,
column and text of the offending token.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache

import apsw
import lark
from lark import Lark, Token, Transformer, v_args

from boardd.metadata.errors import InvalidArgumentError
from boardd.metadata.queries import NodeName

#: The integer literals' types and bounds (ZetaSQL's).
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1
_INTEGERS = ("INT64", "UINT64")

# ZetaSQL's expression syntax, the part MLMD's queries use. Keywords are case-insensitive;
# a name after a dot may start with a digit (``properties.0.int_value``), as MLMD's rewrite
# of ``properties.NAME.`` into one identifier allows.
_GRAMMAR = r"""
?start: expr

?expr: expr OR conj           -> or_
     | conj
?conj: conj AND neg           -> and_
     | neg
?neg: NOT neg                 -> not_
    | pred
?pred: sum
     | sum COMPARE sum                           -> compare
     | sum [NOT] IN "(" args ")"                 -> in_
     | sum [NOT] LIKE sum                        -> like
     | sum [NOT] BETWEEN sum AND sum             -> between
     | sum IS [NOT] NULL                         -> is_null
     | sum IS [NOT] BOOLEAN                      -> is_bool
?sum: sum ADD prod            -> arith
    | prod
?prod: prod MUL unary         -> arith
     | unary
?unary: ADD unary             -> sign
      | atom
?atom: literal
     | path
     | NAME "(" [args] ")"    -> call
     | "(" expr ")"           -> paren
args: expr ("," expr)*
path: (NAME | QUOTED_NAME) ("." (NAME | QUOTED_NAME | DIGIT_NAME))*

literal: INT -> int_lit
       | FLOAT -> float_lit
       | STRING -> string_lit
       | BYTES -> bytes_lit
       | BOOLEAN -> bool_lit
       | NULL -> null_lit

OR.5: /OR\b/i
AND.5: /AND\b/i
NOT.5: /NOT\b/i
IN.5: /IN\b/i
LIKE.5: /LIKE\b/i
BETWEEN.5: /BETWEEN\b/i
IS.5: /IS\b/i
NULL.5: /NULL\b/i
BOOLEAN.5: /(TRUE|FALSE)\b/i
COMPARE: /!=|<>|<=|>=|=|<|>/
ADD: "+" | "-"
MUL: "*" | "/"

NAME: /[A-Za-z_][A-Za-z0-9_]*/
QUOTED_NAME: /`[^`\\\n]+`/
DIGIT_NAME: /[0-9][A-Za-z0-9_]*/
INT.2: /0[xX][0-9A-Fa-f]+|[0-9]+/
FLOAT.3: /([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+/
STRING.4: /[rR]?/ (TRIPLE_SINGLE | TRIPLE_DOUBLE | SINGLE | DOUBLE)
BYTES.4: /([bB][rR]?|[rR][bB])/ (SINGLE | DOUBLE)
TRIPLE_SINGLE: /'''(\\.|[^\\])*?'''/s
TRIPLE_DOUBLE: /\x22\x22\x22(\\.|[^\\])*?\x22\x22\x22/s
SINGLE: /'(\\.|[^\\'\n])*'/
DOUBLE: /"(\\.|[^\\"\n])*"/

COMMENT: /--[^\n]*|#[^\n]*|\/\*(.|\n)*?\*\//

%import common.WS
%ignore WS
%ignore COMMENT
"""


@cache
def _parser() -> Lark:
    return Lark(_GRAMMAR, parser="lalr", lexer="contextual", maybe_placeholders=True)


# ---------------------------------------------------------------------------------------------
# The syntax tree


@dataclass(frozen=True)
class Node:
    """A parsed expression; ``token`` is where an error about it points."""

    token: Token


@dataclass(frozen=True)
class Literal_(Node):
    value: object
    type: str  # INT64, UINT64 (a literal past INT64), DOUBLE, STRING, BYTES, BOOL or NULL


@dataclass(frozen=True)
class Path(Node):
    parts: tuple[Token, ...]

    def text(self) -> str:
        return ".".join(str(p) for p in self.parts)


@dataclass(frozen=True)
class Unary(Node):
    op: str  # NOT, -, +
    operand: Node


@dataclass(frozen=True)
class Binary(Node):
    op: str  # AND, OR, = != < <= > >=, + - * /, LIKE, NOT LIKE
    left: Node
    right: Node


@dataclass(frozen=True)
class InList(Node):
    negated: bool
    operand: Node
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Between(Node):
    negated: bool
    operand: Node
    low: Node
    high: Node


@dataclass(frozen=True)
class IsTest(Node):
    negated: bool
    operand: Node
    what: str  # NULL, TRUE, FALSE


@dataclass(frozen=True)
class Paren(Node):
    """A parenthesised expression (MLMD's enum rewrite does not look inside one)."""

    inner: Node


@dataclass(frozen=True)
class Call(Node):
    name: str
    args: tuple[Node, ...]


@v_args(inline=True)
class _ToAst(Transformer[Token, Node]):
    """Turns lark's parse tree into the dataclasses above, decoding literals on the way."""

    def or_(self, left: Node, op: Token, right: Node) -> Node:
        return Binary(op, "OR", left, right)

    def and_(self, left: Node, op: Token, right: Node) -> Node:
        return Binary(op, "AND", left, right)

    def not_(self, op: Token, operand: Node) -> Node:
        return Unary(op, "NOT", operand)

    def compare(self, left: Node, op: Token, right: Node) -> Node:
        return Binary(op, "!=" if op == "<>" else str(op), left, right)

    def arith(self, left: Node, op: Token, right: Node) -> Node:
        return Binary(op, str(op), left, right)

    def sign(self, op: Token, operand: Node) -> Node:
        if str(op) == "-" and isinstance(operand, Literal_) and operand.type in _INTEGERS:
            # ZetaSQL reads a minus before an integer literal as part of it: -9223372036854775808
            # is INT64's least value, though 9223372036854775808 alone is a UINT64.
            assert isinstance(operand.value, int)
            value = -operand.value
            if value < _INT64_MIN:
                raise _error(f"Invalid integer literal: {value}", op)
            return Literal_(op, value, "INT64")
        return Unary(op, str(op), operand)

    def in_(self, operand: Node, negated: Token | None, op: Token, items: list[Node]) -> Node:
        return InList(op, negated is not None, operand, tuple(items))

    def like(self, left: Node, negated: Token | None, op: Token, right: Node) -> Node:
        return Binary(op, "NOT LIKE" if negated is not None else "LIKE", left, right)

    def between(
        self, operand: Node, negated: Token | None, op: Token, low: Node, _and: Token, high: Node
    ) -> Node:
        return Between(op, negated is not None, operand, low, high)

    def is_null(self, operand: Node, op: Token, negated: Token | None, _null: Token) -> Node:
        return IsTest(op, negated is not None, operand, "NULL")

    def is_bool(self, operand: Node, op: Token, negated: Token | None, value: Token) -> Node:
        return IsTest(op, negated is not None, operand, str(value).upper())

    def call(self, name: Token, args: list[Node] | None) -> Node:
        return Call(name, str(name).upper(), tuple(args or ()))

    def paren(self, inner: Node) -> Node:
        return Paren(inner.token, inner)

    def args(self, *items: Node) -> list[Node]:
        return list(items)

    def path(self, *parts: Token) -> Node:
        return Path(parts[0], tuple(parts))

    def int_lit(self, tok: Token) -> Node:
        text = str(tok)
        value = int(text, 16) if text[:2] in ("0x", "0X") else int(text)
        if value > _UINT64_MAX:
            raise _error(f"Invalid integer literal: {text}", tok)
        # Past INT64, ZetaSQL types a literal UINT64 (see _literal).
        return Literal_(tok, value, "INT64" if value <= _INT64_MAX else "UINT64")

    def float_lit(self, tok: Token) -> Node:
        return Literal_(tok, float(str(tok)), "DOUBLE")

    def string_lit(self, tok: Token) -> Node:
        return Literal_(tok, _decode_string(tok), "STRING")

    def bytes_lit(self, tok: Token) -> Node:
        return Literal_(tok, str(tok), "BYTES")

    def bool_lit(self, tok: Token) -> Node:
        return Literal_(tok, str(tok).upper() == "TRUE", "BOOL")

    def null_lit(self, tok: Token) -> Node:
        return Literal_(tok, None, "NULL")


_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "?": "?",
    '"': '"',
    "'": "'",
    "`": "`",
}


def _decode_string(tok: Token) -> str:
    """A ZetaSQL string literal's value: quotes removed, escapes decoded unless raw."""
    text = str(tok)
    raw = text[0] in "rR"
    if raw:
        text = text[1:]
    quote = 3 if text[:3] in ("'''", '"""') else 1
    body = text[quote:-quote]
    if raw:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        esc = body[i + 1]
        if esc in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[esc])
            i += 2
            continue
        width = {"x": 2, "X": 2, "u": 4, "U": 8}.get(esc)
        digits = body[i + 2 : i + 2 + width] if width else body[i + 1 : i + 4]
        base = 16 if width else 8
        try:
            if len(digits) != (width or 3):
                raise ValueError(digits)
            out.append(chr(int(digits, base)))
        except ValueError:
            raise _error(f"Illegal escape sequence: \\{esc}", tok) from None
        i += 2 + width if width else 4
    return "".join(out)


def _error(message: str, token: Token | None, query: str | None = None) -> InvalidArgumentError:
    where = ""
    if token is not None and token.line is not None:
        where = f" [at {token.line}:{token.column}] near {str(token)!r}"
    return InvalidArgumentError(f"Invalid `filter_query`: {message}{where}")


@lru_cache(maxsize=256)
def parse(query: str) -> Node:
    """Parses a filter query into its syntax tree; InvalidArgumentError on a syntax error.

    Cached: a listing compiles its filter once per page, and the tree is immutable.
    """
    try:
        tree = _parser().parse(query)
    except lark.UnexpectedInput as exc:
        raise _syntax_error(query, exc) from None
    try:
        return _ToAst().transform(tree)
    except lark.exceptions.VisitError as exc:
        if isinstance(exc.orig_exc, InvalidArgumentError):
            raise exc.orig_exc from None
        raise


def _syntax_error(query: str, exc: lark.UnexpectedInput) -> InvalidArgumentError:
    line, column = exc.line, exc.column
    if isinstance(exc, lark.UnexpectedToken):
        token = exc.token
        if token.type == "$END":
            return InvalidArgumentError(
                "Invalid `filter_query`: Syntax error: Unexpected end of expression "
                f"[at {_end_position(query)}]"
            )
        return _error(f"Syntax error: Unexpected {str(token)!r}", token)
    if isinstance(exc, lark.UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        char = query[pos : pos + 1]
        what = "unclosed string literal" if char in ("'", '"') else f"character {char!r}"
        return InvalidArgumentError(
            f"Invalid `filter_query`: Syntax error: Unexpected {what} "
            f"[at {line}:{column}] near {query[pos:][:20]!r}"
        )
    return InvalidArgumentError(f"Invalid `filter_query`: Syntax error [at {line}:{column}]")


def _end_position(query: str) -> str:
    lines = query.split("\n")
    return f"{len(lines)}:{len(lines[-1]) + 1}"


# ---------------------------------------------------------------------------------------------
# Names, types and neighbours MLMD lets each node kind use

ARTIFACT_STATES = {"UNKNOWN": 0, "PENDING": 1, "LIVE": 2, "MARKED_FOR_DELETION": 3, "DELETED": 4}
EXECUTION_STATES = {
    "UNKNOWN": 0,
    "NEW": 1,
    "RUNNING": 2,
    "COMPLETE": 3,
    "FAILED": 4,
    "CACHED": 5,
    "CANCELED": 6,
}
EVENT_TYPES = {
    "DECLARED_OUTPUT": 1,
    "DECLARED_INPUT": 2,
    "INPUT": 3,
    "OUTPUT": 4,
    "INTERNAL_INPUT": 5,
    "INTERNAL_OUTPUT": 6,
}

_TABLE = {"artifact": "Artifact", "execution": "Execution", "context": "Context"}
_TYPE_KIND = {"execution": 0, "artifact": 1, "context": 2}

_COMMON: dict[str, str] = {
    "id": "INT64",
    "type_id": "INT64",
    "type": "STRING",
    "name": "STRING",
    "external_id": "STRING",
    "create_time_since_epoch": "INT64",
    "last_update_time_since_epoch": "INT64",
}
#: Attributes of the listed node itself, per kind; enum columns carry their value names.
_ATTRIBUTES: dict[str, dict[str, str]] = {
    "artifact": {**_COMMON, "uri": "STRING", "state": "INT64"},
    "execution": {**_COMMON, "last_known_state": "INT64"},
    "context": dict(_COMMON),
}
_ENUMS: dict[str, dict[str, int]] = {
    "state": ARTIFACT_STATES,
    "last_known_state": EXECUTION_STATES,
}

_CONTEXT_FIELDS = {
    "id": "INT64",
    "name": "STRING",
    "type": "STRING",
    "create_time_since_epoch": "INT64",
    "last_update_time_since_epoch": "INT64",
}
# MLMD's parent/child join selects only these (its struct type lists the times too, but a
# query on them fails in SQLite there).
_LINKED_CONTEXT_FIELDS = {"id": "INT64", "name": "STRING", "type": "STRING"}
_PROPERTY_FIELDS = {
    "int_value": "INT64",
    "double_value": "DOUBLE",
    "string_value": "STRING",
    "bool_value": "BOOL",
}


@dataclass(frozen=True)
class _Neighbour:
    """How one alias prefix joins to the listed node, per node kind."""

    prefix: str
    fields: dict[str, str]
    enums: dict[str, dict[str, int]]


def _neighbours(kind: NodeName) -> tuple[_Neighbour, ...]:
    if kind == "context":
        artifact = {**_ATTRIBUTES["artifact"]}
        del artifact["type_id"]
        execution = {**_ATTRIBUTES["execution"]}
        del execution["type_id"]
        return (
            _Neighbour("parent_contexts_", _LINKED_CONTEXT_FIELDS, {}),
            _Neighbour("child_contexts_", _LINKED_CONTEXT_FIELDS, {}),
            _Neighbour("artifacts_", artifact, {"state": ARTIFACT_STATES}),
            _Neighbour("executions_", execution, {"last_known_state": EXECUTION_STATES}),
        )
    other = "execution_id" if kind == "artifact" else "artifact_id"
    return (
        _Neighbour("contexts_", _CONTEXT_FIELDS, {}),
        _Neighbour(
            "events_",
            {"type": "INT64", "milliseconds_since_epoch": "INT64", other: "INT64"},
            {"type": EVENT_TYPES},
        ),
    )


# ---------------------------------------------------------------------------------------------
# Translation


@dataclass
class _Sql:
    """A translated sub-expression: SQL text, its parameters in order, its type, neighbours."""

    text: str
    params: list[object]
    type: str
    uses: frozenset[str] = frozenset()
    token: Token | None = None
    on_node: bool = False  # whether it reads the listed node's own columns

    @staticmethod
    def join(
        parts: Sequence[_Sql], template: Callable[..., str], type_: str, token: Token | None
    ) -> _Sql:
        params = [p for part in parts for p in part.params]
        uses = frozenset().union(*(part.uses for part in parts))
        on_node = any(part.on_node for part in parts)
        return _Sql(template(*(part.text for part in parts)), params, type_, uses, token, on_node)


@dataclass
class _Join:
    """A neighbour mentioned in the query: its SQL alias and how it attaches to the node."""

    key: str
    alias: str
    from_sql: str  # FROM items (tables joined among themselves, never to the node)
    node_column: str  # the column holding the listed node's id
    filter_sql: str = ""  # conditions of its own (a property's name), with ``params``
    params: list[object] = field(default_factory=list)
    type_join: str | None = None  # the alias of its Type row, when ``.type`` is used


@dataclass
class _Translator:
    kind: NodeName
    node: str
    query: str
    joins: dict[str, _Join] = field(default_factory=dict)
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    # -- names --------------------------------------------------------------------------------

    def _alias(self) -> str:
        return f"fq{next(self.counter)}"

    def _join_property(self, custom: bool, name: str) -> _Join:
        key = f"{'custom_properties' if custom else 'properties'}\0{name}"
        if key not in self.joins:
            alias = self._alias()
            self.joins[key] = _Join(
                key,
                alias,
                f"{_TABLE[self.kind]}Property AS {alias}",
                f"{alias}.{self.kind}_id",
                f"{alias}.name = ? AND {alias}.is_custom_property = ?",
                [name, 1 if custom else 0],
            )
        return self.joins[key]

    def _join_neighbour(self, prefix: str, key: str) -> _Join:
        if key in self.joins:
            return self.joins[key]
        alias, link = self._alias(), self._alias()
        if prefix == "contexts_":
            via = "Attribution" if self.kind == "artifact" else "Association"
            from_sql = f"{via} AS {link} JOIN Context AS {alias} ON {alias}.id = {link}.context_id"
            node_column = f"{link}.{self.kind}_id"
        elif prefix == "events_":
            from_sql = f"Event AS {alias}"
            node_column = f"{alias}.{self.kind}_id"
        elif prefix in ("parent_contexts_", "child_contexts_"):
            near, far = (
                ("context_id", "parent_context_id")
                if prefix == "parent_contexts_"
                else ("parent_context_id", "context_id")
            )
            from_sql = (
                f"ParentContext AS {link} JOIN Context AS {alias} ON {alias}.id = {link}.{far}"
            )
            node_column = f"{link}.{near}"
        else:
            other = "Artifact" if prefix == "artifacts_" else "Execution"
            via = "Attribution" if prefix == "artifacts_" else "Association"
            from_sql = (
                f"{via} AS {link} JOIN {other} AS {alias} ON {alias}.id = {link}.{other.lower()}_id"
            )
            node_column = f"{link}.context_id"
        self.joins[key] = _Join(key, alias, from_sql, node_column)
        return self.joins[key]

    def _type_of(self, join: _Join) -> str:
        if join.type_join is None:
            join.type_join = self._alias()
            join.from_sql += (
                f" JOIN Type AS {join.type_join} ON {join.type_join}.id = {join.alias}.type_id"
            )
        return f"{join.type_join}.name"

    def resolve_path(self, path: Path) -> tuple[_Sql, dict[str, int] | None]:
        """The column a name refers to, and the value names of an enum column.

        ZetaSQL matches names case-insensitively, but MLMD's rewrites that come before it
        (``properties.NAME.int_value``, ``contexts_X.``, ``state = LIVE``) are
        case-sensitive regexes: so ``ID`` is ``id``, while ``STATE = LIVE`` fails.
        """
        parts = [str(p) for p in path.parts]
        head = path.parts[0]
        if head.type == "QUOTED_NAME":  # ZetaSQL: `id` is the identifier id
            parts[0] = parts[0][1:-1]
        if (
            parts[0] in ("properties", "custom_properties")
            and len(parts) >= 3
            and parts[2].startswith(("int", "double", "string", "bool"))
        ):
            name_tok = path.parts[1]
            name = parts[1][1:-1] if name_tok.type == "QUOTED_NAME" else parts[1]
            join = self._join_property(parts[0] == "custom_properties", name)
            column = self._field(path, 2, _PROPERTY_FIELDS, _GUARD + join.alias)
            column.uses = frozenset([join.key])
            return column, None
        neighbour = self._neighbour(parts[0]) if len(parts) > 1 else None
        if neighbour is None:
            attributes = _ATTRIBUTES[self.kind]
            attribute = parts[0].lower()
            if attribute not in attributes:
                raise _error(f"Unrecognized name: {parts[0]}", head)
            if attribute == "type":
                text = f"(SELECT name FROM Type WHERE id = {self.node}.type_id)"
            else:
                text = f"{self.node}.{attribute}"
            column = _Sql(text, [], attributes[attribute], token=head, on_node=True)
            if len(parts) > 1:
                raise _error(
                    f"Cannot access field {parts[1]} on a value with type {column.type}",
                    path.parts[1],
                )
            return column, _ENUMS.get(parts[0])
        join = self._join_neighbour(neighbour.prefix, parts[0])
        column = self._field(path, 1, neighbour.fields, join.alias)
        if parts[1].lower() == "type" and neighbour.prefix != "events_":
            column.text = self._type_of(join)
        column.uses = frozenset([join.key])
        return column, neighbour.enums.get(parts[1])

    def _neighbour(self, head: str) -> _Neighbour | None:
        """The neighbour an alias such as ``contexts_a`` names, if this node kind has it."""
        for neighbour in _neighbours(self.kind):
            if head.startswith(neighbour.prefix) and len(head) > len(neighbour.prefix):
                return neighbour
        return None

    @staticmethod
    def _field(path: Path, index: int, fields: dict[str, str], alias: str) -> _Sql:
        parts = path.parts
        name = str(parts[index]).lower()
        if name not in fields:
            struct = ", ".join(f"{k} {v}" for k, v in fields.items())
            raise _error(
                f"Field name {parts[index]} does not exist in STRUCT<{struct}>", parts[index]
            )
        if len(parts) > index + 1:
            raise _error(
                f"Cannot access field {parts[index + 1]} on a value with type {fields[name]}",
                parts[index + 1],
            )
        return _Sql(f"{alias}.{name}", [], fields[name], token=parts[0])

    # -- expressions --------------------------------------------------------------------------

    def expr(self, node: Node) -> _Sql:
        if isinstance(node, Literal_):
            return self._literal(node)
        if isinstance(node, Path):
            return self.resolve_path(node)[0]
        if isinstance(node, Unary):
            return self._unary(node)
        if isinstance(node, Binary):
            return self._binary(node)
        if isinstance(node, InList):
            return self._in(node)
        if isinstance(node, Between):
            return self._between(node)
        if isinstance(node, IsTest):
            return self._is(node)
        if isinstance(node, Call):
            return self._call(node)
        if isinstance(node, Paren):
            return self.expr(node.inner)
        raise AssertionError(node)

    def _literal(self, node: Literal_) -> _Sql:
        if node.type == "UINT64":
            # Past every INT64 (every id, time and int_value): as a REAL, SQLite's exact
            # comparison of an INTEGER with it gives what ZetaSQL's INT64-UINT64 one does.
            assert isinstance(node.value, int)
            return _Sql("?", [float(node.value)], "UINT64", token=node.token)
        if node.type == "BYTES":
            return _Sql("NULL", [], "BYTES", token=node.token)
        if node.type == "NULL":
            return _Sql("NULL", [], "NULL", token=node.token)
        value = int(bool(node.value)) if node.type == "BOOL" else node.value
        return _Sql("?", [value], node.type, token=node.token)

    def _unary(self, node: Unary) -> _Sql:
        operand = self.expr(node.operand)
        if node.op == "NOT":
            _no_null_literal("NOT", [operand])
            self._expect(operand, ("BOOL",), "NOT", [operand])
            return _Sql.join([operand], lambda x: f"(NOT {x})", "BOOL", node.token)
        self._expect(operand, ("INT64", "DOUBLE"), f"unary {node.op}", [operand])
        return _Sql.join([operand], lambda x: f"({node.op}{x})", operand.type, node.token)

    def _binary(self, node: Binary) -> _Sql:
        if str(node.token) in ("=", "!=") and isinstance(node.left, Path):
            enum = self._enum_compare(node)
            if enum is not None:
                return enum
        left, right = self.expr(node.left), self.expr(node.right)
        op = node.op
        if op in ("AND", "OR"):
            for side in (left, right):
                self._expect(side, ("BOOL",), op, [left, right])
            return _Sql.join([left, right], lambda a, b: f"({a} {op} {b})", "BOOL", node.token)
        if op in ("LIKE", "NOT LIKE"):
            _no_null_literal("LIKE", [left, right])
            for side in (left, right):
                self._expect(side, ("STRING",), "LIKE", [left, right])
            return _Sql.join([left, right], lambda a, b: f"({a} {op} {b})", "BOOL", node.token)
        if op in ("+", "-", "*", "/"):
            _no_uint64_literal([node.left, node.right])
            for side in (left, right):
                self._expect(side, ("INT64", "DOUBLE"), op, [left, right])
            type_ = "DOUBLE" if "DOUBLE" in (left.type, right.type) or op == "/" else "INT64"
            if op == "/":  # ZetaSQL divides INT64s as DOUBLEs; SQLite would truncate
                return _Sql.join(
                    [left, right], lambda a, b: f"(CAST({a} AS REAL) / {b})", type_, node.token
                )
            return _Sql.join([left, right], lambda a, b: f"({a} {op} {b})", type_, node.token)
        # a comparison
        _no_null_literal(str(node.token), [left, right])
        self._comparable(op, [left, right], node.token)
        return _Sql.join([left, right], lambda a, b: f"({a} {op} {b})", "BOOL", node.token)

    def _enum_compare(self, node: Binary) -> _Sql | None:
        assert isinstance(node.left, Path)
        column, enum = self.resolve_path(node.left)
        if enum is None or not _is_word(node.right):
            return None
        value = _enum_value(node.right, enum)
        if node.op == "=":
            text = f"({column.text} = {value})"
        else:  # MLMD rewrites ``state != X`` so that a node without a state is listed too
            text = f"(({column.text} != {value}) OR ({column.text} IS NULL))"
        return _Sql(text, [], "BOOL", column.uses, node.token, column.on_node)

    def _in(self, node: InList) -> _Sql:
        if (
            isinstance(node.operand, Path)
            and all(_is_word(item) for item in node.items)
            and self._spaced(node.token)
        ):
            column, enum = self.resolve_path(node.operand)
            if enum is not None:
                values = ", ".join(str(_enum_value(item, enum)) for item in node.items)
                if node.negated:
                    text = f"((NOT ({column.text} IN ({values}))) OR ({column.text} IS NULL))"
                else:
                    text = f"({column.text} IN ({values}))"
                return _Sql(text, [], "BOOL", column.uses, node.token, column.on_node)
        operand = self.expr(node.operand)
        items = [self.expr(item) for item in node.items]
        _no_uint64_literal([node.operand, *node.items])
        self._comparable("IN", [operand, *items], node.token)
        negate = "NOT " if node.negated else ""
        return _Sql.join(
            [operand, *items],
            lambda head, *rest: f"({head} {negate}IN ({', '.join(rest)}))",
            "BOOL",
            node.token,
        )

    def _spaced(self, token: Token) -> bool:
        """Whether whitespace surrounds ``token`` (MLMD's enum rewrite needs `` IN ``)."""
        start, end = token.start_pos or 0, token.end_pos or 0
        return self.query[start - 1 : start].isspace() and self.query[end : end + 1].isspace()

    def _between(self, node: Between) -> _Sql:
        parts = [self.expr(node.operand), self.expr(node.low), self.expr(node.high)]
        _no_uint64_literal([node.operand, node.low, node.high])
        self._comparable("BETWEEN", parts, node.token)
        negate = "NOT " if node.negated else ""
        return _Sql.join(
            parts, lambda x, lo, hi: f"({x} {negate}BETWEEN {lo} AND {hi})", "BOOL", node.token
        )

    def _is(self, node: IsTest) -> _Sql:
        operand = self.expr(node.operand)
        negate = "NOT " if node.negated else ""
        if node.what != "NULL":
            self._expect(operand, ("BOOL",), f"IS {negate}{node.what}", [operand])
            # SQLite's IS TRUE treats any non-zero number as true, as ZetaSQL's BOOL is
        return _Sql.join([operand], lambda x: f"({x} IS {negate}{node.what})", "BOOL", node.token)

    def _call(self, node: Call) -> _Sql:
        signatures = _FUNCTIONS.get(node.name)
        if signatures is None:
            raise _error(
                f"Function not found: {node.token} (boardd's filter_query supports "
                f"{', '.join(sorted(_FUNCTIONS))})",
                node.token,
            )
        args = [self.expr(arg) for arg in node.args]
        families = [_FAMILY.get(a.type) for a in args]
        for accepts, returns in signatures:
            if len(accepts) == len(args) and all(
                a.type == "NULL" or family == want or want == "ANY"
                for a, family, want in zip(args, families, accepts, strict=True)
            ):
                if "ANY" in accepts:  # COALESCE, IFNULL: arguments of one type
                    self._comparable(node.name, args, node.token)
                    known = [a.type for a in args if a.type != "NULL"]
                    returns = "DOUBLE" if "DOUBLE" in known else (known or ["NULL"])[0]
                return _Sql.join(
                    args,
                    lambda *xs: f"{node.name}({', '.join(xs)})",
                    returns or args[0].type,
                    node.token,
                )
        listed = ", ".join(a.type for a in args)
        raise _error(
            f"No matching signature for function {node.name} for argument types: {listed}",
            node.token,
        )

    # -- types --------------------------------------------------------------------------------

    @staticmethod
    def _expect(sql: _Sql, types: tuple[str, ...], what: str, operands: list[_Sql]) -> None:
        if sql.type in types or sql.type == "NULL":
            return
        listed = ", ".join(o.type if o.type != "NULL" else "INT64" for o in operands)
        raise _error(
            f"No matching signature for operator {what} for argument types: {listed}",
            sql.token,
        )

    @staticmethod
    def _comparable(op: str, operands: list[_Sql], token: Token) -> None:
        families = {_FAMILY[o.type] for o in operands if o.type != "NULL"}
        if len(families) > 1 or "BYTES" in families:
            listed = ", ".join(o.type for o in operands)
            raise _error(
                f"No matching signature for operator {op} for argument types: {listed}", token
            )


def _no_uint64_literal(nodes: list[Node]) -> None:
    """A UINT64 literal is compared with INT64 as it is, but cast to INT64 where ZetaSQL needs
    one type (arithmetic, IN, BETWEEN): past INT64, that fails."""
    for node in nodes:
        if isinstance(node, Literal_) and node.type == "UINT64":
            raise _error(f"Could not cast literal {node.value} to type INT64", node.token)


_FAMILY = {
    "INT64": "number",
    "UINT64": "number",
    "DOUBLE": "number",
    "STRING": "STRING",
    "BOOL": "BOOL",
    "BYTES": "BYTES",
}

#: Functions whose ZetaSQL and SQLite meanings agree: for each, its signatures (argument
#: families; ANY = any one type for all) and result type (None: the first argument's).
_FUNCTIONS: dict[str, list[tuple[tuple[str, ...], str | None]]] = {
    "LOWER": [(("STRING",), "STRING")],
    "UPPER": [(("STRING",), "STRING")],
    "TRIM": [(("STRING",), "STRING")],
    "LTRIM": [(("STRING",), "STRING")],
    "RTRIM": [(("STRING",), "STRING")],
    "LENGTH": [(("STRING",), "INT64")],
    "SUBSTR": [(("STRING", "number"), "STRING"), (("STRING", "number", "number"), "STRING")],
    "REPLACE": [(("STRING", "STRING", "STRING"), "STRING")],
    "ABS": [(("number",), None)],
    "COALESCE": [(("ANY",) * n, None) for n in range(1, 9)],
    "IFNULL": [(("ANY", "ANY"), None)],
}


def _no_null_literal(op: str, operands: list[_Sql]) -> None:
    for operand in operands:
        if operand.type == "NULL":
            raise _error(f"Operands of {op} cannot be literal NULL", operand.token)


def _is_word(node: Node) -> bool:
    """Whether MLMD's enum rewrite would take this operand as a value name (``[[:word:]]+``)."""
    if isinstance(node, Path):
        return len(node.parts) == 1 and node.parts[0].type == "NAME"
    return isinstance(node, Literal_) and node.token.type == "INT"  # 2, 0x02


def _enum_value(node: Node, enum: dict[str, int]) -> int:
    text = str(node.token)
    if text not in enum:
        raise _error(
            f"Unsupported enum value specified in the query: {text} (one of {', '.join(enum)})",
            node.token,
        )
    return enum[text]


def _conjuncts(node: Node) -> Iterator[Node]:
    if isinstance(node, Paren):
        yield from _conjuncts(node.inner)
    elif isinstance(node, Binary) and node.op == "AND":
        yield from _conjuncts(node.left)
        yield from _conjuncts(node.right)
    else:
        yield node


def compile_filter(
    kind: NodeName, query: str, alias: str, db: apsw.Connection | None = None
) -> tuple[str, list[object]]:
    """Translates an MLMD filter query into a SQL boolean expression over the row ``alias``.

    ``kind`` says which table ``alias`` names (``Artifact``, ``Execution`` or ``Context``).
    The result is SQL text with ``?`` placeholders and their values, to be ANDed into the
    caller's WHERE clause. Raises InvalidArgumentError for a query MLMD would reject.

    With ``db`` (the connection the expression will run on), each condition on neighbours
    is planned for speed: few matching neighbours (counted, up to a cap, through the
    lineage store's indexes) are looked up first; many are checked row by row.
    """
    if kind not in _TABLE:
        raise ValueError(f"unknown node kind {kind!r}")
    if not alias.isidentifier():
        raise ValueError(f"alias must be an identifier, not {alias!r}")
    tree = parse(query)
    translator = _Translator(kind, alias, query)
    conjuncts = list(_conjuncts(tree))
    parts = [translator.expr(conjunct) for conjunct in conjuncts]
    if len(parts) > 1:
        for part in parts:
            translator._expect(part, ("BOOL",), "AND", parts)
    if len(parts) == 1 and parts[0].type != "BOOL":
        raise InvalidArgumentError(
            f"Invalid `filter_query`: Given query string is not a valid boolean expression: {query}"
        )
    texts: list[str] = []
    params: list[object] = []
    for joins, members in _groups(translator, parts):
        if not joins and db is not None:
            index = next(i for i, part in enumerate(parts) if part is members[0])
            lookup = _attribute_lookup(kind, conjuncts[index])
            if lookup is not None and _few(db, *lookup):
                texts.append(f"{alias}.id IN ({lookup[0]})")
                params.extend(lookup[1])
                continue
        text, more = _render(alias, joins, members, db)
        texts.append(text)
        params.extend(more)
    return " AND ".join(texts), params


#: Marks a property's value column: ``+`` in a row-by-row check (so SQLite probes the
#: property's primary key, not a value index), nothing in a lookup (so it uses that index).
_GUARD = "\x01"
#: Up to this many matching neighbours, a condition is looked up first (``IN``).
LOOKUP_CAP = 2000


def _groups(translator: _Translator, parts: list[_Sql]) -> list[tuple[list[_Join], list[_Sql]]]:
    """The conjuncts, those sharing a neighbour grouped with the joins they need.

    MLMD keeps a node when one row of the joined neighbours satisfies the whole expression;
    conjuncts over disjoint neighbours can be satisfied independently, so splitting them
    gives the same answer and lets each be planned on its own.
    """
    groups: list[tuple[set[str], list[_Sql]]] = []
    result: list[tuple[list[_Join], list[_Sql]]] = []
    for part in parts:
        if not part.uses:
            result.append(([], [part]))
            continue
        merged: tuple[set[str], list[_Sql]] = (set(part.uses), [part])
        for group in [g for g in groups if g[0] & part.uses]:
            groups.remove(group)
            merged[0].update(group[0])
            merged[1][:0] = group[1]
        groups.append(merged)
    for keys, members in groups:
        result.append(([j for j in translator.joins.values() if j.key in keys], members))
    return result


def _few(db: apsw.Connection, lookup: str, params: list[object]) -> bool:
    """Whether ``lookup`` finds fewer rows than LOOKUP_CAP (counting no further)."""
    found = db.execute(f"SELECT count(*) FROM ({lookup} LIMIT {LOOKUP_CAP})", params).get
    return isinstance(found, int) and found < LOOKUP_CAP


def _attribute_lookup(kind: NodeName, node: Node) -> tuple[str, list[object]] | None:
    """An index-driven query for the ids a condition on the node's own columns selects.

    ``name = 'x'`` and ``name IN (…)`` go through the (type_id, name) unique index, one type
    after the other; ``uri LIKE 'prefix%'`` through the uri index, on the range every case
    variant of the prefix falls in (SQLite's LIKE ignores ASCII case). None when the condition
    has no such shape.
    """
    table = _TABLE[kind]
    by_name = f"SELECT x.id FROM Type AS t CROSS JOIN {table} AS x ON x.type_id = t.id WHERE x.name"
    if (
        isinstance(node, Binary)
        and node.op == "="
        and _names(node.left, "name")
        and isinstance(node.right, Literal_)
        and node.right.type == "STRING"
    ):
        return f"{by_name} = ?", [node.right.value]
    if isinstance(node, InList) and not node.negated and _names(node.operand, "name"):
        values = [i.value for i in node.items if isinstance(i, Literal_) and i.type == "STRING"]
        if len(values) == len(node.items):
            return f"{by_name} IN ({', '.join('?' for _ in values)})", list(values)
    if (
        kind == "artifact"
        and isinstance(node, Binary)
        and node.op == "LIKE"
        and _names(node.left, "uri")
        and isinstance(node.right, Literal_)
        and node.right.type == "STRING"
    ):
        pattern = str(node.right.value)
        prefix = pattern[: min((pattern + "%").index("%"), (pattern + "_").index("_"))]
        if prefix and prefix.isascii():
            low, high = prefix.upper(), prefix.lower()[:-1] + chr(ord(prefix.lower()[-1]) + 1)
            return (
                f"SELECT x.id FROM {table} AS x WHERE x.uri >= ? AND x.uri < ? AND x.uri LIKE ?",
                [low, high, pattern],
            )
    return None


def _names(node: Node, attribute: str) -> bool:
    """Whether ``node`` is the node's own attribute ``attribute`` (ZetaSQL: any case)."""
    while isinstance(node, Paren):
        node = node.inner
    if not isinstance(node, Path) or len(node.parts) != 1:
        return False
    text = str(node.parts[0])
    return (text[1:-1] if node.parts[0].type == "QUOTED_NAME" else text).lower() == attribute


def _render(
    node: str, joins: list[_Join], members: list[_Sql], db: apsw.Connection | None
) -> tuple[str, list[object]]:
    """One group as SQL: plain, a lookup (``node.id IN (…)``) or a check (``EXISTS (…)``)."""
    if not joins:
        (member,) = members
        return member.text, list(member.params)
    from_sql = ", ".join(j.from_sql for j in joins)
    own = [j.filter_sql for j in joins if j.filter_sql]
    params = [p for j in joins for p in j.params] + [p for m in members for p in m.params]
    if db is not None and not any(m.on_node for m in members):
        head = joins[0].node_column
        where = [f"{j.node_column} = {head}" for j in joins[1:]] + own
        where += [m.text.replace(_GUARD, "") for m in members]
        lookup = f"SELECT {head} FROM {from_sql} WHERE {' AND '.join(where)}"
        found = db.execute(f"SELECT count(*) FROM ({lookup} LIMIT {LOOKUP_CAP})", params).get
        if isinstance(found, int) and found < LOOKUP_CAP:
            return f"{node}.id IN ({lookup})", params
    where = [f"{j.node_column} = {node}.id" for j in joins] + own
    where += [m.text.replace(_GUARD, "+") for m in members]
    return f"EXISTS (SELECT 1 FROM {from_sql} WHERE {' AND '.join(where)})", params
