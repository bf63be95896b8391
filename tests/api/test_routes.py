"""The route table: each route declared once, bound to a handler, its parameters validated as
declared."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from boardd.api.app import HANDLERS
from boardd.api.errors import ApiError
from boardd.api.routes import BY_ID, ROUTES, RouteDef


def request(query: str) -> Request:
    return Request({"type": "http", "method": "GET", "query_string": query.encode(), "headers": []})


def test_each_route_once_and_bound() -> None:
    assert len({r.path for r in ROUTES}) == len(ROUTES)
    assert set(HANDLERS) | {"stream"} == set(BY_ID)
    for route in ROUTES:
        names = [p.name for p in route.params]
        assert len(names) == len(set(names)), route.path
        assert all(p.description for p in route.params), route.path


def read(route: RouteDef, query: str) -> dict[str, object]:
    return dict(route.parse(request(query)).values)


def test_parameters_parsed_as_declared() -> None:
    blobs = BY_ID["read_blob_sequences"]
    got = read(blobs, "plugin=images&run=b&run=a&run=b&latest=3&index_max=0")
    assert got["plugin"] == "images" and got["run"] == ("b", "a") and got["tag"] == ()
    assert (got["latest"], got["index_max"], got["step_min"], got["format"]) == (3, 0, None, None)
    for bad, words in [
        ("", "plugin= is required"),
        ("plugin=x&latest=0", "from 1 to"),
        ("plugin=x&step_min=1e3", "whole number"),
        ("plugin=x&format=csv", "csv/columns for scalars"),
        ("plugin=x&nope=1", "unknown parameter(s) nope; allowed: downsample, experiment"),
    ]:
        with pytest.raises(ApiError) as raised:
            read(blobs, bad)
        assert raised.value.status == 400 and words in raised.value.message, bad
