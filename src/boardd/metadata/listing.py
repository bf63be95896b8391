"""List calls with ListOptions: order, limit, filter_query and page tokens, as MLMD pages them.

``list_page`` answers one page (at most ``max_result_size`` nodes, 100 at most) and the token
of the next one; the token is MLMD's own (a web-safe base64 ``ListOperationNextPageToken``:
the last row's ordering value and id, or for LAST_UPDATE_TIME the ids listed at that time), so
paging stays right while rows are added. ``list_nodes`` is the Python API's loop over pages,
with ``ListOptions`` (metadata_store re-exports it under ML Metadata's names).

The filter goes through ``boardd.metadata.filter_query.compile_filter`` (a boolean SQL
expression over the node alias ``n``, with ``?`` parameters).
"""

from __future__ import annotations

import base64
import binascii
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apsw

from boardd.metadata import errors, queries
from boardd.metadata.access import Access, find_nodes, ids_json, nodes_from_rows
from boardd.metadata.filter_query import compile_filter
from boardd.metadata.proto import metadata_store_pb2 as pb
from boardd.metadata.queries import IDS, NodeKind

#: The largest page, as MLMD (its GetDefaultMaxListOperationResultSize).
MAX_PAGE = 100

_Field = pb.ListOperationOptions.OrderByField
_COLUMNS = {
    _Field.CREATE_TIME: "create_time_since_epoch",
    _Field.LAST_UPDATE_TIME: "last_update_time_since_epoch",
    _Field.ID: "id",
}
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


@enum.unique
class OrderByField(enum.Enum):
    """The fields a list call can order by (ml_metadata's ``OrderByField``)."""

    CREATE_TIME = pb.ListOperationOptions.OrderByField.Field.CREATE_TIME
    UPDATE_TIME = pb.ListOperationOptions.OrderByField.Field.LAST_UPDATE_TIME
    ID = pb.ListOperationOptions.OrderByField.Field.ID


@dataclass
class ListOptions:
    """Options of ``get_artifacts`` / ``get_executions`` / ``get_contexts`` (MLMD's).

    ``limit``: at most this many results (all when None); ``order_by`` with ``is_asc``: the
    order (by id when not given); ``filter_query``: MLMD's filter language.
    """

    limit: int | None = None
    order_by: OrderByField | None = None
    is_asc: bool = True
    filter_query: str | None = None


def encode_token(token: pb.ListOperationNextPageToken) -> str:
    """A page token as MLMD writes it (web-safe base64, padded)."""
    return base64.urlsafe_b64encode(token.SerializeToString()).decode("ascii")


def decode_token(text: str) -> pb.ListOperationNextPageToken:
    """Parses a page token; InvalidArgumentError if it is not one."""
    token = pb.ListOperationNextPageToken()
    try:
        standard = text.replace("-", "+").replace("_", "/")
        raw = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
        token.ParseFromString(raw)
    except (binascii.Error, ValueError) as exc:
        raise errors.InvalidArgumentError("Failed to decode next page token string") from exc
    except Exception as exc:  # protobuf's DecodeError
        raise errors.InvalidArgumentError(
            "Failed to parse decoded next page token into ListOperationNextPageToken proto message"
        ) from exc
    return token


def list_page(
    db: apsw.Connection,
    kind: NodeKind,
    options: pb.ListOperationOptions,
    candidate_ids: list[int] | None = None,
) -> tuple[list[Any], str]:
    """One page of nodes and the next page's token ("" on the last page)."""
    size = options.max_result_size
    if size <= 0:
        raise errors.InvalidArgumentError(
            "max_result_size field value is required to be greater than 0 and less than or "
            f"equal to 100. Set value:{size}"
        )
    if candidate_ids is not None and not candidate_ids:
        return [], ""
    field = options.order_by_field.field
    column = _COLUMNS.get(field)
    if column is None:
        raise errors.InvalidArgumentError(
            f"Unsupported field: {_Field.Field.Name(field)} specified in ListOperationOptions"
        )
    asc = options.order_by_field.is_asc
    where: list[str] = []
    params: list[object] = []
    if options.filter_query:
        expression, filter_params = compile_filter(kind.name, options.filter_query, "n", db)
        where.append(f"({expression})")
        params.extend(filter_params)
    if candidate_ids is not None:
        where.append(f"n.id IN {IDS}")
        params.append(ids_json(candidate_ids))
    op = ">" if asc else "<"
    if field != _Field.ID:
        op += "="
    token: pb.ListOperationNextPageToken | None = None
    if options.next_page_token:
        token = decode_token(options.next_page_token)
        previous = token.set_options.order_by_field
        if previous.is_asc != asc or previous.field != field:
            raise errors.InvalidArgumentError("ListOperationOptions mismatch between calls")
        where.append(f"n.{column} {op} ?")
        params.append(token.field_offset)
        if field == _Field.CREATE_TIME:
            where.append(f"n.id {'>' if asc else '<'} ?")
            params.append(token.id_offset)
        elif field == _Field.LAST_UPDATE_TIME:
            if not token.listed_ids:
                raise errors.InvalidArgumentError(
                    "Invalid NextPageToken in List Operation. listed_ids field should not be empty."
                )
            where.append(f"n.id NOT IN {IDS}")
            params.append(ids_json(token.listed_ids))
    else:
        where.append(f"n.{column} {op} ?")
        params.append(0 if asc else _INT64_MAX)
    direction = "ASC" if asc else "DESC"
    order = f"n.{column} {direction}"
    if field != _Field.ID:
        order += f", n.id {direction}"
    limit = min(size, MAX_PAGE + 1) + 1
    ids = [
        row[0] for row in db.execute(queries.list_ids(kind, column, where, order, limit), params)
    ]
    if not ids:
        return [], ""
    found = {node.id: node for node in find_nodes(db, kind, ids)}
    nodes = [found[i] for i in ids if i in found]
    if len(nodes) <= size:
        return nodes, ""
    nodes = nodes[:size]
    return nodes, encode_token(_next_token(nodes, options, token))


def _next_token(
    nodes: list[Any],
    options: pb.ListOperationOptions,
    previous: pb.ListOperationNextPageToken | None,
) -> pb.ListOperationNextPageToken:
    last = nodes[-1]
    token = pb.ListOperationNextPageToken()
    field = options.order_by_field.field
    if field == _Field.CREATE_TIME:
        token.field_offset = last.create_time_since_epoch
        token.id_offset = last.id
    elif field == _Field.LAST_UPDATE_TIME:
        token.listed_ids.append(last.id)
        token.field_offset = last.last_update_time_since_epoch
        for node in reversed(nodes[:-1]):
            if node.last_update_time_since_epoch != last.last_update_time_since_epoch:
                break
            token.listed_ids.append(node.id)
        # Unlike MLMD, the ids listed at this time on earlier pages stay listed: with more
        # nodes than a page at one time (a batch written by one call shares its time here),
        # MLMD's token would list the page before again, and its loop would not end.
        if (
            previous is not None
            and previous.field_offset == token.field_offset
            and len(token.listed_ids) == len(nodes)
        ):
            token.listed_ids.extend(previous.listed_ids)
    else:
        token.field_offset = last.id
        token.id_offset = last.id
    token.set_options.CopyFrom(options)
    token.set_options.ClearField("next_page_token")
    return token


def options_from(list_options: ListOptions) -> pb.ListOperationOptions:
    """The first page's ListOperationOptions for the Python API's ListOptions."""
    options = pb.ListOperationOptions(max_result_size=MAX_PAGE)
    options.order_by_field.is_asc = list_options.is_asc
    if list_options.limit and list_options.limit < MAX_PAGE:
        options.max_result_size = list_options.limit
    if list_options.order_by:
        options.order_by_field.field = list_options.order_by.value
    if list_options.filter_query:
        options.filter_query = list_options.filter_query
    return options


def list_nodes(
    access: Access,
    kind: NodeKind,
    list_options: ListOptions | None,
    candidates: Callable[[Any], list[int]] | None,
) -> list[Any]:
    """All nodes (by id), or as ``list_options`` asks, in one transaction; ``candidates``
    (given the connection) narrows them to some ids (e.g. a context's artifacts)."""
    if list_options is not None and list_options.limit and list_options.limit < 1:
        raise errors.InvalidArgumentError(
            "Invalid list_options.limit value passed. list_options.limit is expected to be "
            "greater than 1"
        )
    with access.transaction() as db:
        candidate_ids = candidates(db) if candidates is not None else None
        if list_options is None:
            if candidate_ids is not None:
                return find_nodes(db, kind, candidate_ids)
            rows = db.execute(kind.select_where("1 ORDER BY n.id"))
            return nodes_from_rows(db, kind, rows)
        options = options_from(list_options)
        remaining = list_options.limit or None
        result: list[Any] = []
        while True:
            nodes, token = list_page(db, kind, options, candidate_ids)
            result.extend(nodes)
            if remaining is not None:
                remaining -= len(nodes)
                if remaining <= 0:
                    break
                options.max_result_size = min(MAX_PAGE, remaining)
            if not token:
                break
            options.next_page_token = token
        return result
